#!/usr/bin/env python3
"""Golden KERPLE (logarithmic kernel) attention for the kerple method
(methods/kerple.c, docs/methods.md#kerple).

chijames/KERPLE's ParallelKerpleLog (megatron/mpu/layers.py), written here in torch from its rule:
  bias_p, bias_a clamped to min 1e-2 in place before the forward,
  bias = -bias_p * log(1 + bias_a * diff), diff = i - j on and below the diagonal,
  added to the scaled scores q.k/sqrt(D) (causal softmax).
One causal head per case, T = 11, D = 4; inputs from formulas tests/test_relbias.c repeats, rounded to
float32 as lenx holds them, then float64 with autograd: the output and the gradient of sum(o * w) with
respect to p and a. Case 2 starts a below the clamp (0.001): the code's forward uses 0.01, and the
gradient is taken there.
Writes tests/ref/kerple_ref.csv: case,kind,row,channel,value (kind out, dp or da).
Run: /usr/bin/python3 tests/ref/kerple_ref.py
"""
import torch

from head11 import D, T, attend, inputs, write

CASES = [(1.3, 0.6), (0.7, 0.001)]


def case(p0, a0):
    q, k, v, w = inputs()
    p = torch.tensor([p0], dtype=torch.float32).double().clamp(min=1e-2).requires_grad_(True)
    a = torch.tensor([a0], dtype=torch.float32).double().clamp(min=1e-2).requires_grad_(True)
    diff = torch.tril(torch.arange(T)[:, None] - torch.arange(T)[None, :]).double()
    o = attend(q, k, v, w, -p * torch.log(1 + a * diff))
    return o, p.grad.item(), a.grad.item()


def main():
    lines = ["case,kind,row,channel,value"]
    for c, (p0, a0) in enumerate(CASES):
        o, dp, da = case(p0, a0)
        for i in range(T):
            for d in range(D):
                lines.append(f"{c},out,{i},{d},{o[i, d].item():.17g}")
        lines.append(f"{c},dp,-,-,{dp:.17g}")
        lines.append(f"{c},da,-,-,{da:.17g}")
    write("kerple_ref.csv", lines)


if __name__ == "__main__":
    main()
