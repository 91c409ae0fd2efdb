#!/usr/bin/env python3
"""Golden values for the longrope method (methods/longrope.c, docs/methods.md#longrope).

Two independent transcriptions in plain Python doubles, which must agree:
  hf()    - transformers' _compute_longrope_parameters: the extension factor s = max_pos / L,
            the attention factor sqrt(1 + ln s / ln L) (1 for s <= 1), and
            inv_freq = 1 / (ext_factors * base ** (arange(0, d, 2) / d)) with ext_factors the
            long list when the sequence is longer than L, else the short one;
  paper() - LongRoPE's rescaled rotary angle theta_k / lambda_k, theta_k = base^(-2k/d),
            the logits then scaled by the attention factor squared (cos and sin both times a).
Prints the cases tests/test_rotary.c asserts (inv_freq to 1e-15 relative, a^2 to 1e-15).
Run: /usr/bin/python3 tests/ref/longrope_ref.py
"""
import math


def hf(d, base, L, max_pos, long_f, short_f, n):
    s = max_pos / L
    a = math.sqrt(1 + math.log(s) / math.log(L)) if s > 1 else 1.0
    ext = long_f if n > L else short_f
    return [1.0 / (ext[i] * base ** (2 * i / d)) for i in range(d // 2)], a


def paper(d, base, L, s, long_f, short_f, n):
    lam = long_f if n > L else short_f
    a = 1.0 if s <= 1 else (1 + math.log(s) / math.log(L)) ** 0.5
    return [base ** (-2.0 * k / d) / lam[k] for k in range(d // 2)], a


# d 16, base 10000, L 32, extended to 128 (s 4); factors growing with k, as LongRoPE's search finds
D, BASE, L, MAXPOS = 16, 10000.0, 32, 128
LONG = [1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]
SHORT = [1.0, 1.0, 1.0, 1.05, 1.1, 1.2, 1.3, 1.5]

for n in (32, 33):
    a_inv, a_att = hf(D, BASE, L, MAXPOS, LONG, SHORT, n)
    b_inv, b_att = paper(D, BASE, L, MAXPOS / L, LONG, SHORT, n)
    assert all(abs(x - y) <= 1e-15 * abs(y) for x, y in zip(a_inv, b_inv)), n
    assert abs(a_att - b_att) <= 1e-15 * b_att
    print(f"# length {n} ({'long' if n > L else 'short'} factors): a^2 = {a_att * a_att:.17g}")
    print(", ".join(f"{x:.17g}" for x in b_inv))
