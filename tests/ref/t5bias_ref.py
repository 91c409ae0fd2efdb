#!/usr/bin/env python3
"""Golden T5 relative-position buckets and biased attention for the t5bias method
(methods/t5bias.c, docs/methods.md#t5bias).

Buckets: transformers' T5Attention._relative_position_bucket as its source computes it, written here
in torch from that rule. Unidirectional (bidirectional=False, the decoder's table):
  relative_position = key - query; n = max(-relative_position, 0) (keys ahead: 0);
  max_exact = num_buckets // 2; small n is its own bucket; otherwise
  max_exact + (log(n.float() / max_exact) / math.log(max_distance / max_exact)
               * (num_buckets - max_exact)).to(long), clamped to num_buckets - 1.
in float32, as torch runs it. Over distances 0..99999 the bucket never decreases, so each
(num_buckets, max_distance) of five is written as the first distance of every bucket.
Bidirectional (the encoder's table): num_buckets halved, num_buckets added when relative_position > 0
(the key after the query), n = |relative_position|, then the same rule; written as the first |distance|
of every bucket on each side (before: key - query <= 0; after: > 0) for four configurations.

Attention: one causal head, T = 11 keys, D = 4, logits q.k/sqrt(D) + bias[bucket(i - j)]
(lenx keeps the 1/sqrt(d) that T5 folds into its initialisation), the inputs rounded to
float32 as lenx holds them, then float64 with autograd: the output and the gradient of sum(o * w) with respect to the bias table.
Then the same head bidirectional (no mask) with the encoder's buckets (bout, bdbias).
Inputs come from formulas that tests/test_relbias.c repeats.
Writes tests/ref/t5bias_ref.csv:
  first,num_buckets,max_distance,bucket,first distance
  bfirst,num_buckets,max_distance,side (0 before, 1 after),bucket,first |distance|
  out,row,channel,value       bout likewise
  dbias,bucket,-,value        bdbias likewise
Run: /usr/bin/python3 tests/ref/t5bias_ref.py
"""
import math

import torch

from head11 import D, T, attend, inputs, write

CASES = [(32, 128), (16, 64), (8, 12), (64, 1024), (6, 9)]
BCASES = [(32, 128), (8, 12), (64, 1024), (10, 9)]


def bucket_of(rel, num_buckets, max_distance, bidirectional):
    """transformers' rule for relative positions rel = key - query (a long tensor)."""
    off = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        off = (rel > 0).to(torch.long) * num_buckets
        n = torch.abs(rel)
    else:
        n = torch.max(-rel, torch.zeros_like(rel))
    max_exact = num_buckets // 2
    is_small = n < max_exact
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return off + torch.where(is_small, n, large)


def buckets(num_buckets, max_distance, n_dist):
    rel = -torch.arange(n_dist, dtype=torch.long)   # key - query: key 0, queries 0..n-1
    return bucket_of(rel, num_buckets, max_distance, False)


NB, MAXD = 8, 12


def attention(bidirectional):
    q, k, v, w = inputs()
    bias = torch.tensor([0.6 + 0.3 * math.sin(0.71 * b + 0.2) - 0.05 * b for b in range(NB)],
                        dtype=torch.float32).double().requires_grad_(True)
    rel = torch.arange(T)[None, :] - torch.arange(T)[:, None]     # key - query
    o = attend(q, k, v, w, bias[bucket_of(rel, NB, MAXD, bidirectional)], causal=not bidirectional)
    return o, bias.grad


def main():
    lines = ["kind,a,b,c,value"]
    for nb, maxd in CASES:
        bs = buckets(nb, maxd, 100000).tolist()
        assert all(x <= y for x, y in zip(bs, bs[1:])) and bs[-1] == nb - 1
        for b in range(nb):
            lines.append(f"first,{nb},{maxd},{b},{bs.index(b)}")
    for nb, maxd in BCASES:
        for side in (0, 1):
            n = torch.arange(100000, dtype=torch.long)
            bs = bucket_of(n if side else -n, nb, maxd, True).tolist()
            if side:        # distance 0 is the query itself: a key before (or at) it
                bs = bs[1:]
            assert all(x <= y for x, y in zip(bs, bs[1:]))
            for b in sorted(set(bs)):
                lines.append(f"bfirst,{nb},{maxd},{side},{b},{bs.index(b) + side}")
    for prefix, bidirectional in (("", False), ("b", True)):
        o, g = attention(bidirectional)
        for i in range(T):
            for c in range(D):
                lines.append(f"{prefix}out,{i},{c},-,{o[i, c].item():.17g}")
        for b in range(NB):
            lines.append(f"{prefix}dbias,{b},-,-,{g[b].item():.17g}")
    write("t5bias_ref.csv", lines)


if __name__ == "__main__":
    main()
