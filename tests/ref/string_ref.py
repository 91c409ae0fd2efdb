#!/usr/bin/env python3
"""Golden attention outputs for the string method (methods/string.c, docs/methods.md#string).

A transcription, in plain Python doubles, of STRING as HKUNLP/STRING's string_for_llama.py computes it
(An et al. 2025, arXiv 2410.18745), for one head, with shifted_offset S and small_local_value W:
  rotary tables (RotaryEmbedding): cos and sin times attention_factor = 0.1 ln 2 + 1 (the `factor`
    column below is 1 for that table, 0 for a plain one: lenx's attn_factor: 1);
  decode (forward with a cache, one query at a time over kv_seq_len = i + 1 keys): the last S keys
    with the query at i, the first i + 1 - S keys with the query at i - S + W, the two outputs merged
    by their log-sum-exp (here in doubles, so exactly the softmax over the union);
  prefill (string_flash_forward): flash attention with window (S, 0), which keeps keys i - S .. i, and
    the shifted branch over keys 0 .. i - S for rows i >= S: the key at distance exactly S is in both.
The decode step's outputs are written: one logit per key, as lenx computes. The largest gap between the
two is printed (docs/methods.md#string quotes it). RoPE pairs d and d + D/2 (transformers' rotate_half).
Inputs are float32 values of a fixed formula that tests/test_positions.c repeats.
Writes tests/ref/string_ref.csv: S, W, factor, row, channel, output (%.17g).
Run: /usr/bin/python3 tests/ref/string_ref.py
"""
import math
import os

from head13 import D, T, dot, inputs, rope

REF_FACTOR = 0.1 * math.log(2) + 1


def softmax_rows(parts, v):
    """parts: (logit, key index) pairs; the softmax over them applied to the values."""
    m = max(s for s, _ in parts)
    z = sum(math.exp(s - m) for s, _ in parts)
    return [sum(math.exp(s - m) / z * v[j][d] for s, j in parts) for d in range(D)]


def logit(q, k, i, qpos, j, g):
    return dot(rope(q[i], qpos, g), rope(k[j], j, g)) / math.sqrt(D)


def decode_row(q, k, v, i, S, W, g):
    split = i + 1 - S                   # shifted_size: keys below it take the shifted query
    near = [(logit(q, k, i, i, j, g), j) for j in range(max(split, 0), i + 1)]
    far = [(logit(q, k, i, i - S + W, j, g), j) for j in range(split)] if split > 0 else []
    return softmax_rows(near + far, v)


def prefill_row(q, k, v, i, S, W, g):
    near = [(logit(q, k, i, i, j, g), j) for j in range(max(i - S, 0), i + 1)]
    far = [(logit(q, k, i, i - S + W, j, g), j) for j in range(i - S + 1)] if i >= S else []
    return softmax_rows(near + far, v)


def main():
    q, k, v = inputs()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'string_ref.csv')
    gap = 0.0
    with open(path, 'w') as f:
        f.write('S,W,factor,row,channel,output\n')
        for S, W, factor in ((5, 1, 1), (4, 2, 1), (6, 3, 0), (3, 3, 1), (12, 2, 1), (7, 4, 1)):
            g = REF_FACTOR if factor else 1.0
            for i in range(T):
                o = decode_row(q, k, v, i, S, W, g)
                p = prefill_row(q, k, v, i, S, W, g)
                gap = max(gap, max(abs(a - b) for a, b in zip(o, p)))
                for d in range(D):
                    f.write('%d,%d,%d,%d,%d,%.17g\n' % (S, W, factor, i, d, o[d]))
    print(path)
    print('largest |decode - prefill| (the prefill counts the key at distance S twice): %.3g' % gap)


if __name__ == '__main__':
    main()
