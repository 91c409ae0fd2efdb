#!/usr/bin/env python3
"""Golden xPos scores for the xpos method (methods/xpos.c, docs/methods.md#xpos).

xPos (Sun et al. 2023, "A Length-Extrapolatable Transformer", arXiv 2212.10554, sec. 3.2), written here in
torch float64 in its relative form, not as any code factors it: q at position n and k at position m are
turned by RoPE (theta_k = base^(-2k/R)), then pair k's share of q.k is multiplied by
    zeta_k^((n - m) / scale_base),   zeta_k = (2k/R + g) / (1 + g),
and the shares summed. lenx instead scales q and k by factors about a centre; the logits must agree.
q and k are drawn from closed forms the C test repeats and rounded to float32 first, as lenx holds them:
    q[t][d] = sin(0.37 t + 1.3 d + 0.1),   k[t][d] = cos(0.23 t - 0.7 d + 0.5)   (t the row, not the position)
Writes tests/ref/xpos_ref.csv: case,i,j,score (%.17g) for every causal pair (j <= i) of four cases.
Run: /usr/bin/python3 tests/ref/xpos_ref.py (needs Debian's python3-torch).
"""
import os

import torch

# layout, head dim D, turned channels R, scale_base, g, rows T, position of row 0, rope base
CASES = (
    ("interleaved", 8, 8, 16.0, 0.4, 40, 0, 10000.0),
    ("half", 16, 16, 8.0, 0.4, 32, 0, 10000.0),
    ("half", 16, 8, 32.0, 1.0, 36, 0, 500.0),       # rope over the first 8 channels only
    ("half", 8, 8, 512.0, 0.4, 16, 3000, 10000.0),  # far positions: the factors about lenx's centre
)


def rows(T, D):
    t = torch.arange(T, dtype=torch.float64)[:, None]
    d = torch.arange(D, dtype=torch.float64)[None, :]
    q = torch.sin(0.37 * t + 1.3 * d + 0.1).float().double()
    k = torch.cos(0.23 * t - 0.7 * d + 0.5).float().double()
    return q, k


def pairs(layout, R):
    """Channel indices (a, b) of rotary pair k."""
    if layout == "half":
        return [(k, k + R // 2) for k in range(R // 2)]
    return [(2 * k, 2 * k + 1) for k in range(R // 2)]


def turn(x, pos, layout, R, base):
    y = x.clone()
    theta = base ** (-2.0 * torch.arange(R // 2, dtype=torch.float64) / R)
    for k, (a, b) in enumerate(pairs(layout, R)):
        phi = pos * theta[k]
        y[:, a] = x[:, a] * torch.cos(phi) - x[:, b] * torch.sin(phi)
        y[:, b] = x[:, a] * torch.sin(phi) + x[:, b] * torch.cos(phi)
    return y


def scores(layout, D, R, scale_base, g, T, p0, base):
    q, k = rows(T, D)
    pos = torch.arange(T, dtype=torch.float64) + p0
    qt, kt = turn(q, pos, layout, R, base), turn(k, pos, layout, R, base)
    zeta = (2.0 * torch.arange(R // 2, dtype=torch.float64) / R + g) / (1.0 + g)
    turned = {c for ab in pairs(layout, R) for c in ab}
    rest = [c for c in range(D) if c not in turned]
    s = qt[:, rest] @ kt[:, rest].T                      # channels the rope leaves alone: no decay
    delta = pos[:, None] - pos[None, :]
    for kk, (a, b) in enumerate(pairs(layout, R)):
        share = qt[:, a:a + 1] * kt[:, a][None, :] + qt[:, b:b + 1] * kt[:, b][None, :]
        s = s + share * zeta[kk] ** (delta / scale_base)
    return s


def main():
    lines = ["case,i,j,score"]
    for c, case in enumerate(CASES):
        s = scores(*case)
        T = case[5]
        for i in range(T):
            for j in range(i + 1):
                lines.append(f"{c},{i},{j},{s[i, j].item():.17g}")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "xpos_ref.csv")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
