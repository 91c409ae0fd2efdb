#!/usr/bin/env python3
"""Golden values for the llama3 method (methods/llama3.c, docs/methods.md#llama3).

Two independent transcriptions in plain Python doubles, which must agree:
  hf()   - transformers' _compute_llama3_parameters, in its torch.where order:
           first theta/s for long wavelengths, then the smoothed value, then
           the medium band selected by two negated strict comparisons;
  meta() - Meta's reference apply_scaling loop (llama-models), one branch per
           pair.
Prints the cases tests/test_rotary.c asserts to 1e-15 (relative).
Run: /usr/bin/python3 tests/ref/llama3_ref.py
"""
import math


def rope(d, base):
    return [base ** (-2.0 * k / d) for k in range(d // 2)]


def hf(inv, factor, low, high, L):
    lw, hw = L / low, L / high
    out = []
    for t in inv:
        wave = 2 * math.pi / t
        llama = t / factor if wave > lw else t
        smooth = (L / wave - low) / (high - low)
        smoothed = (1 - smooth) * llama / factor + smooth * llama
        medium = (not wave < hw) and (not wave > lw)
        out.append(smoothed if medium else llama)
    return out


def meta(inv, factor, low, high, L):
    lw, hw = L / low, L / high
    out = []
    for t in inv:
        wave = 2 * math.pi / t
        if wave < hw:
            out.append(t)
        elif wave > lw:
            out.append(t / factor)
        else:
            sm = (L / wave - low) / (high - low)
            out.append((1 - sm) * t / factor + sm * t)
    return out


CASES = [
    ("small", 64, 10000.0, 4.0, 1.0, 4.0, 64),
    ("llama3.1", 128, 500000.0, 8.0, 1.0, 4.0, 8192),
]

for name, d, base, s, low, high, L in CASES:
    inv = rope(d, base)
    a, b = hf(inv, s, low, high, L), meta(inv, s, low, high, L)
    assert all(abs(x - y) <= 1e-15 * abs(y) for x, y in zip(a, b)), name
    print(f"# {name}: d {d}, base {base:g}, s {s:g}, low {low:g}, high {high:g}, L {L}")
    for k, (t, x) in enumerate(zip(inv, a)):
        band = "keep" if x == t else ("theta/s" if x == t / s else "ramp")
        print(f"{k:3d} theta {t:.17g} wave {2 * math.pi / t:.9g} -> {x:.17g} {band}")
