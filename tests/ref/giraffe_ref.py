#!/usr/bin/env python3
"""Golden rotary tables for the giraffe method (methods/giraffe.c, docs/methods.md#giraffe).

A transcription, in plain Python doubles, of Giraffe's ScaledLlamaRotaryEmbedding.__init__ and
truncate_frequency (abacusai/Long-Context, python/models/interpolate.py; Pell et al. 2023, arXiv
2308.10882): freq = 1 / base^(2k/d) for k < d/2; divided by scale when scale > 1; times
(1 - k/(d/2))^scale_power when scale_power > 0; then, when truncate T > 0, with cutoff t = 2 pi / T,
frequencies below t become 2 pi / (16 T) and those below t / 8 become 0. The code runs this in
float32 torch; the transcription runs it in doubles, as lenx does.
Writes tests/ref/giraffe_ref.csv: d, base, scale, power, truncate, pair, inv_freq (%.17g).
Run: /usr/bin/python3 tests/ref/giraffe_ref.py
"""
import math
import os

CASES = (  # d, base, scale, power, truncate
    (64, 10000, 1, 0, 0),
    (64, 10000, 1, 0, 64),
    (64, 10000, 1, 0.25, 0),
    (64, 10000, 4, 0, 0),
    (128, 10000, 1, 0, 2048),
    (128, 500000, 1, 1, 4096),
    (32, 10000, 8, 0.5, 96),
    (16, 10000, 1, 0, 1),
)


def table(d, base, scale, power, truncate):
    n = d // 2
    freq = [1.0 / base ** (2 * k / d) for k in range(n)]
    if scale > 1:
        freq = [f / scale for f in freq]
    if power > 0:
        freq = [f * (1.0 - k / n) ** power for k, f in enumerate(freq)]
    if truncate > 0:
        t = 2 * math.pi / truncate
        low = 2 * math.pi / (truncate * 16)
        freq = [0.0 if f < t / 8 else (low if f < t else f) for f in freq]
    return freq


def main():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'giraffe_ref.csv')
    with open(path, 'w') as f:
        f.write('d,base,scale,power,truncate,pair,inv_freq\n')
        for d, base, scale, power, truncate in CASES:
            for k, v in enumerate(table(d, base, scale, power, truncate)):
                f.write('%d,%d,%g,%g,%d,%d,%.17g\n' % (d, base, scale, power, truncate, k, v))
    print(path)


if __name__ == '__main__':
    main()
