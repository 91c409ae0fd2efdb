#!/usr/bin/env python3
"""Golden rotary tables for the resonance method (methods/resonance.c, docs/methods.md#resonance).

A transcription of the Resonance RoPE authors' tables (Wang et al. 2024, arXiv 2403.00071; their
ResonanceRotaryEmbedding, ResonanceNTKScaledRotaryEmbedding and ResonanceYaRNScaledRotaryEmbedding,
_register_buffers), in torch float32 as theirs run:
  plain: inv_freq = 1 / base^(arange(0, d, 2) / d);
  ntk:   the same with base * scale^(d / (d - 2));
  yarn:  inv_freq = interpolation (1 / (scale * base^(2k/d))) * (1 - mask) + extrapolation * mask,
         mask = 1 - clamp((k - low) / (high - low), 0, 1), low = floor and high = ceil of the pair
         index where a pair turns beta_fast and beta_slow times in L positions, clamped to [0, d - 1];
then r_wavelength = torch.round(2 pi / inv_freq) and r_inv_freq = 2 pi / r_wavelength.
Writes tests/ref/resonance_ref.csv: case, d, base, scale, L, beta_fast, beta_slow, k, r_wavelength,
r_inv_freq (%.9g). Run: /usr/bin/python3 tests/ref/resonance_ref.py (needs Debian's python3-torch).
"""
import math
import os

import torch

CASES = (("plain", 64, 10000.0, 1.0, 2048, 0, 0), ("plain", 128, 500000.0, 1.0, 8192, 0, 0),
         ("plain", 16, 10000.0, 1.0, 64, 0, 0), ("ntk", 64, 10000.0, 4.0, 2048, 0, 0),
         ("yarn", 64, 10000.0, 4.0, 2048, 2.0, 1.0), ("yarn", 128, 10000.0, 8.0, 4096, 32.0, 1.0))


def correction_dim(rot, d, base, L):
    return (d * math.log(L / (rot * 2 * math.pi))) / (2 * math.log(base))


def table(case, d, base, scale, L, bf, bs):
    if case == "ntk":
        base = base * scale ** (d / (d - 2))
    pos = base ** (torch.arange(0, d, 2).float() / d)
    inv = 1.0 / pos
    if case == "yarn":
        low = max(math.floor(correction_dim(bf, d, base, L)), 0)
        high = min(math.ceil(correction_dim(bs, d, base, L)), d - 1)
        if low == high:
            high += 0.001
        ramp = torch.clamp((torch.arange(d // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
        mask = 1 - ramp
        inv = (1.0 / (scale * pos)) * (1 - mask) + inv * mask
    r_wave = torch.round(2 * math.pi / inv)
    return r_wave, 2 * math.pi / r_wave


def main():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "resonance_ref.csv")
    with open(path, "w") as f:
        f.write("case,d,base,scale,L,beta_fast,beta_slow,k,r_wavelength,r_inv_freq\n")
        for c in CASES:
            w, r = table(*c)
            for k in range(c[1] // 2):
                f.write("%s,%d,%.17g,%.17g,%d,%.17g,%.17g,%d,%d,%.9g\n" % (c + (k, int(w[k]), float(r[k]))))
    print(path)


if __name__ == "__main__":
    main()
