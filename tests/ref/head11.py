"""One causal head of 11 keys of dimension 4, shared by the learned-bias references
(t5bias_ref.py, kerple_ref.py): inputs from formulas that tests/test_relbias.c repeats, rounded to
float32 as lenx holds them and returned as float64 tensors, and the CSV writer."""
import math
import os

import torch

T, D = 11, 4


def inputs():
    """q, k, v and w (the weights of the loss sum(o * w)), each (T, D)."""
    q = [[math.sin(0.37 * i + 0.11 * d) for d in range(D)] for i in range(T)]
    k = [[math.cos(0.23 * i - 0.19 * d) for d in range(D)] for i in range(T)]
    v = [[math.sin(0.5 * i * d + 0.3) for d in range(D)] for i in range(T)]
    w = [[math.cos(0.7 * i + 0.9 * d) for d in range(D)] for i in range(T)]
    return (torch.tensor(x, dtype=torch.float32).double() for x in (q, k, v, w))


def attend(q, k, v, w, bias, causal=True):
    """Softmax of q.k/sqrt(D) + bias (T, T), causal unless told, its output, and the loss's gradients
    (backward)."""
    logits = q @ k.T / math.sqrt(D) + bias
    if causal:
        logits = logits.masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
    o = torch.softmax(logits, dim=-1) @ v
    (o * w).sum().backward()
    return o.detach()


def write(name, lines):
    """lines into tests/ref/<name>, one a row."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
