#!/usr/bin/python3
"""Write a large random-weight llama2.c model for load and memory benchmarks.

A Llama-architecture model in llama2.c's legacy .bin layout (a 7-int32
header, then the float32 tensors stacked over the layers; the layout is
harness/engine/formats/llama2c.c's top comment). Its values do not matter to a
load's cost, so one 16 MiB block of N(0, 0.02) draws (Python's
random.Random(SEED)) is written again and again; the RMSNorm weights are 1.
The default shape is the 0.97B-parameter one of docs/checkpoints.md ("What a
load costs"): dim 2048, hidden 5632, 22 layers, 32 heads / 4 key-value heads,
vocabulary 32000, seq_len 2048 (TinyLlama's shape), shared classifier.
stories260K's tok512.bin is not its tokenizer (vocabulary 32000): pass
--tokenizer to lenx, or score ids.

usage: scripts/big_model.py OUT.bin [DIM HIDDEN LAYERS HEADS KV_HEADS VOCAB SEQ_LEN] [--seed S]
"""
import array
import random
import struct
import sys


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--seed")]
    seed = 26
    for a in sys.argv[1:]:
        if a.startswith("--seed="):
            seed = int(a.split("=", 1)[1])
    if len(args) not in (1, 8):
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    out = args[0]
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = (
        [int(x) for x in args[1:]] if len(args) == 8 else [2048, 5632, 22, 32, 4, 32000, 2048])
    head = dim // heads
    kv_dim = kv_heads * head
    rng = random.Random(seed)
    block = array.array("f", (rng.gauss(0.0, 0.02) for _ in range(1 << 22))).tobytes()

    def randn(count, f):
        left = 4 * count
        while left > 0:
            k = min(left, len(block))
            f.write(block[:k])
            left -= k

    def ones(count, f):
        f.write(array.array("f", [1.0]) .tobytes() * count)

    with open(out, "wb") as f:
        f.write(struct.pack("7i", dim, hidden, layers, heads, kv_heads, vocab, seq_len))
        randn(vocab * dim, f)                       # token embedding
        ones(layers * dim, f)                       # rms_att
        randn(layers * dim * dim, f)                # wq
        randn(layers * kv_dim * dim, f)             # wk
        randn(layers * kv_dim * dim, f)             # wv
        randn(layers * dim * dim, f)                # wo
        ones(layers * dim, f)                       # rms_ffn
        randn(layers * hidden * dim, f)             # w1
        randn(layers * dim * hidden, f)             # w2
        randn(layers * hidden * dim, f)             # w3
        ones(dim, f)                                # rms_final
        f.write(bytes(4 * seq_len * head))          # freq_cis_real, freq_cis_imag (unused)


if __name__ == "__main__":
    main()
