#!/usr/bin/env python3
"""Golden Sandwich biases for the sandwich method (methods/sandwich.c, docs/methods.md#sandwich).

NVIDIA NeMo's SandwichRelativePositionEmbedding (Chi et al. 2023, arXiv 2212.10356), written here in torch
float64 from its rule, not its code:
  inv_freq_k = 1 / 10000^(2k / d) for k = 1 .. d/2 (from 1, as the code);
  bias_h(t) = (sum_k cos(t * inv_freq_k) - d/2) / ((h + 1) * 8 / H)   for head h of H, distance t.
Writes tests/ref/sandwich_ref.csv: case,heads,dim,head,t,value (%.17g) for three (H, d) and distances
0..40 and four far ones. Run: /usr/bin/python3 tests/ref/sandwich_ref.py (needs Debian's python3-torch).
"""
import os

import torch

CASES = ((4, 8), (3, 16), (2, 32))
DISTANCES = list(range(41)) + [127, 1000, 4097, 65535]


def biases(heads, dim):
    t = torch.tensor(DISTANCES, dtype=torch.float64)
    k = torch.arange(1, dim // 2 + 1, dtype=torch.float64)
    inv_freq = 1.0 / (10000.0 ** (2.0 * k / dim))
    inner = torch.cos(t[:, None] * inv_freq[None, :]).sum(dim=1)
    scale = torch.arange(1, heads + 1, dtype=torch.float64) * 8.0 / heads
    return (inner[None, :] - dim / 2) / scale[:, None]


def main():
    lines = ["case,heads,dim,head,t,value"]
    for c, (heads, dim) in enumerate(CASES):
        b = biases(heads, dim)
        for h in range(heads):
            for i, t in enumerate(DISTANCES):
                lines.append(f"{c},{heads},{dim},{h},{t},{b[h, i].item():.17g}")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sandwich_ref.csv")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
