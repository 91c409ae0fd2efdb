#!/usr/bin/env python3
"""Golden attention outputs for the selfextend method (methods/selfextend.c, docs/methods.md#selfextend).

A transcription, in plain Python doubles, of Self-Extend's eager attention (Jin et al. 2024,
arXiv 2401.01325; datamllab/LongLM, self_extend_patch/Llama.py, self_extend_forward, prefill):
two logit matrices for one head, both with RoPE (transformers' rotate_half pairing, d and d + D/2),
  neighbor: query at i, key at j;
  group:    query at i // G + w - w / G (the shift is 0 when every position is below w), key at j // G;
merged with the neighbor logit where i - j < w and the group logit where i - j >= w, causal softmax,
then the values. Inputs are float32 values of a fixed formula that tests/test_positions.c repeats.
Writes tests/ref/selfextend_ref.csv: G, w, row, channel, output (%.17g).
Run: /usr/bin/python3 tests/ref/selfextend_ref.py
"""
import math
import os

from head13 import D, T, dot, inputs, rope


def self_extend(q, k, v, G, w):
    shift = w - w / G if T - 1 >= w else 0
    out = []
    for i in range(T):
        logits = []
        for j in range(i + 1):
            if i - j < w:
                s = dot(rope(q[i], i), rope(k[j], j))
            else:
                s = dot(rope(q[i], i // G + shift), rope(k[j], j // G))
            logits.append(s / math.sqrt(D))
        m = max(logits)
        p = [math.exp(x - m) for x in logits]
        z = sum(p)
        out.append([sum(p[j] / z * v[j][d] for j in range(i + 1)) for d in range(D)])
    return out


def main():
    q, k, v = inputs()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'selfextend_ref.csv')
    with open(path, 'w') as f:
        f.write('G,w,row,channel,output\n')
        for G, w in ((2, 4), (3, 4), (4, 5), (1, 3)):
            o = self_extend(q, k, v, G, w)
            for i in range(T):
                for d in range(D):
                    f.write('%d,%d,%d,%d,%.17g\n' % (G, w, i, d, o[i][d]))
    print(path)


if __name__ == '__main__':
    main()
