"""The one attention head tests/ref/selfextend_ref.py and tests/ref/dca_ref.py transcribe their
methods on: 13 tokens, D = 8, float32 values of a fixed formula that tests/test_positions.c
(ref_inputs) repeats, and RoPE in doubles on transformers' rotate_half pairs (d and d + D/2)."""
import math
import struct

T, D, BASE = 13, 8, 10000.0


def f32(x):
    return struct.unpack('f', struct.pack('f', x))[0]


def inputs():
    q = [[f32(math.sin(0.37 * t + 0.91 * d + 0.3)) for d in range(D)] for t in range(T)]
    k = [[f32(math.cos(0.53 * t - 0.71 * d + 0.1)) for d in range(D)] for t in range(T)]
    v = [[f32(math.sin(0.29 * t * d + 0.5 * d - 0.2)) for d in range(D)] for t in range(T)]
    return q, k, v


def rope(x, pos, gain=1.0):
    """x turned to position pos, its cos and sin times gain (a table's mscale)."""
    h = D // 2
    out = list(x)
    for i in range(h):
        a = pos * BASE ** (-2.0 * i / D)
        c, s = math.cos(a) * gain, math.sin(a) * gain
        out[i] = x[i] * c - x[i + h] * s
        out[i + h] = x[i + h] * c + x[i] * s
    return out


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))
