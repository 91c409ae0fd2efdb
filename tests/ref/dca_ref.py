#!/usr/bin/env python3
"""Golden attention outputs for the dca method (methods/dca.c, docs/methods.md#dca).

A transcription, in plain Python doubles, of Dual Chunk Attention as HKUNLP/ChunkLlama's
chunkllama_attn_replace.py computes it (An et al. 2024, arXiv 2402.17463), for one head:
  rotary tables (ChunkLlamaRotaryEmbedding): with chunk_len C = chunk_size - local_window,
    q_t = arange(C), qc_t = (arange(C) + C).clamp(max=chunk_size), k_t = arange(n) % C,
    each cos and sin times mscale = 0.05 ln(n / L) + 1 when n passes L (else 1);
  prefill (forward, no cache): the first C queries attend causally to the first C keys (q at q_t);
    each later chunk's queries attend causally to their own chunk (q_t), to the whole previous chunk
    (qc_t at the query's place) and to every earlier key (qc_t[C - 1]); the parts merged by their
    log-sum-exp, as merge_attn_outputs does (here in doubles, so exactly the softmax over the union);
  decode (forward with a cache): one query at a time over the cached keys, the three parts'
    logits concatenated and one softmax.
The two are checked to agree, and the prefill's output is written. RoPE pairs d and d + D/2
(transformers' rotate_half). Inputs are float32 values of a fixed formula that tests/test_positions.c
repeats. Writes tests/ref/dca_ref.csv: chunk_size, local_window, L, row, channel, output (%.17g).
Run: /usr/bin/python3 tests/ref/dca_ref.py
"""
import math
import os

from head13 import D, T, dot, inputs, rope


class Tables:
    def __init__(self, chunk_size, local_window, L):
        self.C = chunk_size - local_window
        self.q_t = list(range(self.C))
        self.qc_t = [min(t + self.C, chunk_size) for t in range(self.C)]
        scale = T / L
        self.mscale = 0.05 * math.log(scale) + 1.0 if scale > 1 else 1.0

    def k_at(self, j):
        return j % self.C


def softmax_parts(parts):
    """parts: lists of (logit, value row); the softmax over their union, as one list of outputs."""
    flat = [x for p in parts for x in p]
    m = max(s for s, _ in flat)
    z = sum(math.exp(s - m) for s, _ in flat)
    return [sum(math.exp(s - m) / z * v[d] for s, v in flat) for d in range(D)]


def logits(qrow, qpos, keys, k, v, tb):
    g = tb.mscale
    qr = rope(qrow, qpos, g)
    return [(dot(qr, rope(k[j], tb.k_at(j), g)) / math.sqrt(D), v[j]) for j in keys]


def prefill(q, k, v, tb):
    C, out = tb.C, []
    for i in range(T):
        begin = i // C * C      # the query's chunk
        r = i - begin
        parts = [logits(q[i], tb.q_t[r], range(begin, i + 1), k, v, tb)]     # intra, causal
        if begin >= C:
            parts.append(logits(q[i], tb.qc_t[r], range(begin - C, begin), k, v, tb))   # succ, whole chunk
        if begin - C > 0:
            parts.append(logits(q[i], tb.qc_t[C - 1], range(0, begin - C), k, v, tb))  # inter
        out.append(softmax_parts(parts))
    return out


def decode(q, k, v, tb):
    C, out = tb.C, []
    for i in range(T):
        n = i + 1                   # kv_seq_len with the query's own key cached
        cur = (n - 1) // C          # chunk_num_curr
        r = i % C                   # position_ids % chunk_len
        parts = [logits(q[i], tb.q_t[r], range(C * cur, n), k, v, tb)]
        if cur >= 1:
            parts.append(logits(q[i], tb.qc_t[r], range(C * (cur - 1), C * cur), k, v, tb))
        if cur >= 2:
            parts.append(logits(q[i], tb.qc_t[C - 1], range(0, C * (cur - 1)), k, v, tb))
        out.append(softmax_parts(parts))
    return out


CASES = ((6, 2, 64), (9, 2, 64), (9, 4, 64), (5, 3, 64), (7, 1, 64), (6, 2, 8))


def main():
    q, k, v = inputs()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'dca_ref.csv')
    with open(path, 'w') as f:
        f.write('chunk_size,local_window,L,row,channel,output\n')
        for s, w, L in CASES:
            tb = Tables(s, w, L)
            o, o2 = prefill(q, k, v, tb), decode(q, k, v, tb)
            gap = max(abs(a - b) for ra, rb in zip(o, o2) for a, b in zip(ra, rb))
            assert gap < 1e-12, (s, w, L, gap)
            for i in range(T):
                for d in range(D):
                    f.write('%d,%d,%d,%d,%d,%.17g\n' % (s, w, L, i, d, o[i][d]))
    print(path)


if __name__ == '__main__':
    main()
