#!/usr/bin/env python3
"""Golden T5 relative-position buckets and biased attention for the t5bias method
(methods/t5bias.c, docs/methods.md#t5bias).

Buckets: transformers' T5Attention._relative_position_bucket as its source computes it
(bidirectional=False, the decoder's table), written here in torch from that rule:
  relative_position = key - query; n = max(-relative_position, 0) (keys ahead: 0);
  max_exact = num_buckets // 2; small n is its own bucket; otherwise
  max_exact + (log(n.float() / max_exact) / math.log(max_distance / max_exact)
               * (num_buckets - max_exact)).to(long), clamped to num_buckets - 1.
in float32, as torch runs it. Over distances 0..99999 the bucket never decreases, so each
(num_buckets, max_distance) of five is written as the first distance of every bucket.

Attention: one causal head, T = 11 keys, D = 4, logits q.k/sqrt(D) + bias[bucket(i - j)]
(lenx keeps the 1/sqrt(d) that T5 folds into its initialisation), the inputs rounded to
float32 as lenx holds them, then float64 with autograd: the output and the gradient of sum(o * w) with respect to the bias table.
Inputs come from formulas that tests/test_relbias.c repeats.
Writes tests/ref/t5bias_ref.csv:
  first,num_buckets,max_distance,bucket,first distance
  out,row,channel,value
  dbias,bucket,-,value
Run: /usr/bin/python3 tests/ref/t5bias_ref.py
"""
import math

import torch

from head11 import D, T, attend, inputs, write

CASES = [(32, 128), (16, 64), (8, 12), (64, 1024), (6, 9)]


def buckets(num_buckets, max_distance, n_dist):
    ctx = torch.arange(n_dist, dtype=torch.long)[:, None]
    mem = torch.zeros(1, dtype=torch.long)[None, :]
    rel = mem - ctx                                  # key - query: key 0, queries 0..n-1
    n = torch.max(-rel, torch.zeros_like(rel))
    max_exact = num_buckets // 2
    is_small = n < max_exact
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return torch.where(is_small, n, large)[:, 0]


NB, MAXD = 8, 12


def attention():
    q, k, v, w = inputs()
    bias = torch.tensor([0.6 + 0.3 * math.sin(0.71 * b + 0.2) - 0.05 * b for b in range(NB)],
                        dtype=torch.float32).double().requires_grad_(True)
    bk = buckets(NB, MAXD, T)
    dist = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    o = attend(q, k, v, w, bias[bk[dist.clamp(min=0)]])
    return o, bias.grad


def main():
    lines = ["kind,a,b,c,value"]
    for nb, maxd in CASES:
        bs = buckets(nb, maxd, 100000).tolist()
        assert all(x <= y for x, y in zip(bs, bs[1:])) and bs[-1] == nb - 1
        for b in range(nb):
            lines.append(f"first,{nb},{maxd},{b},{bs.index(b)}")
    o, g = attention()
    for i in range(T):
        for c in range(D):
            lines.append(f"out,{i},{c},-,{o[i, c].item():.17g}")
    for b in range(NB):
        lines.append(f"dbias,{b},-,-,{g[b].item():.17g}")
    write("t5bias_ref.csv", lines)


if __name__ == "__main__":
    main()
