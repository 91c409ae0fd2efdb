#!/usr/bin/env python3
"""Golden KERPLE attention, both kernels, for the kerple method (methods/kerple.c,
docs/methods.md#kerple).

chijames/KERPLE's ParallelKerpleLog and ParallelKerplePower (megatron/mpu/layers.py; the power kernel as
its released kerple_power_ap_ runs it, a bias and no weight kernel), written here in torch from their rules:
  log:   bias_p, bias_a clamped to min 1e-2 in place before the forward,
         bias = -bias_p * log(1 + bias_a * diff);
  power: bias_p clamped to [1e-2, 2], bias_a to min 1e-2,
         bias = -bias_a * diff.pow(bias_p);
  diff = i - j on and below the diagonal, the bias added to the scaled scores q.k/sqrt(D) (causal softmax).
One causal head per case, T = 11, D = 4; inputs from formulas tests/test_relbias.c repeats, rounded to
float32 as lenx holds them, then float64 with autograd: the output and the gradient of sum(o * w) with
respect to p and a. Cases 0, 1 are the log kernel, 2-4 the power kernel; cases 1, 3 and 4 start a value
outside a clamp (a = 0.001 and 0.004 below 0.01, p = 2.6 above 2, p = 0.003 below 0.01): the code's
forward uses the clamped value, and the gradient is taken there.
Writes tests/ref/kerple_ref.csv: case,kind,row,channel,value (kind out, dp or da).
Run: /usr/bin/python3 tests/ref/kerple_ref.py
"""
import torch

from head11 import D, T, attend, inputs, write

CASES = [("log", 1.3, 0.6), ("log", 0.7, 0.001), ("power", 1.3, 0.6), ("power", 2.6, 0.004),
         ("power", 0.003, 0.9)]


def case(kernel, p0, a0):
    q, k, v, w = inputs()
    pmax = 2.0 if kernel == "power" else None
    p = torch.tensor([p0], dtype=torch.float32).double().clamp(min=1e-2, max=pmax).requires_grad_(True)
    a = torch.tensor([a0], dtype=torch.float32).double().clamp(min=1e-2).requires_grad_(True)
    diff = torch.tril(torch.arange(T)[:, None] - torch.arange(T)[None, :]).double()
    bias = -a * diff.pow(p) if kernel == "power" else -p * torch.log(1 + a * diff)
    o = attend(q, k, v, w, bias)
    return o, p.grad.item(), a.grad.item()


def main():
    lines = ["case,kind,row,channel,value"]
    for c, (kernel, p0, a0) in enumerate(CASES):
        o, dp, da = case(kernel, p0, a0)
        for i in range(T):
            for d in range(D):
                lines.append(f"{c},out,{i},{d},{o[i, d].item():.17g}")
        lines.append(f"{c},dp,-,-,{dp:.17g}")
        lines.append(f"{c},da,-,-,{da:.17g}")
    write("kerple_ref.csv", lines)


if __name__ == "__main__":
    main()
