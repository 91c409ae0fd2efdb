#!/usr/bin/python3
"""Write the evaluation-memory test model (docs/PERFORMANCE.md) in llama2.c's legacy .bin format.

A Llama-architecture model with random weights: dim 512, hidden 1376, 8 layers,
8 heads / 4 key-value heads, vocabulary 512 (stories260K's tok512.bin, copied
beside the model so lenx finds it), seq_len 32768. Every matrix is drawn from
N(0, 0.02) with Python's random.Random(SEED); the RMSNorm weights are 1. The
layout (a 7-int32 header, then the float32 tensors stacked over the layers) is
harness/engine/formats/llama2c.c's top comment.

usage: scripts/memory_model.py OUT_DIR [SEED]     (writes OUT_DIR/model.bin, OUT_DIR/tok512.bin)
"""
import array
import os
import random
import shutil
import struct
import sys

DIM, HIDDEN, LAYERS, HEADS, KV_HEADS, VOCAB, SEQ_LEN = 512, 1376, 8, 8, 4, 512, 32768
TOKENIZER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "models",
                         "stories260K", "tok512.bin")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    out, seed = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 26
    rng = random.Random(seed)
    head = DIM // HEADS
    kv_dim = KV_HEADS * head

    def normal(n):
        return array.array("f", (rng.gauss(0.0, 0.02) for _ in range(n)))

    def ones(n):
        return array.array("f", [1.0]) * n

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "model.bin"), "wb") as f:
        f.write(struct.pack("<7i", DIM, HIDDEN, LAYERS, HEADS, KV_HEADS, VOCAB, SEQ_LEN))  # vocab > 0: tied head
        parts = [normal(VOCAB * DIM), ones(LAYERS * DIM),                                 # tok_emb, rms_att
                 normal(LAYERS * DIM * DIM), normal(LAYERS * kv_dim * DIM),               # wq, wk
                 normal(LAYERS * kv_dim * DIM), normal(LAYERS * DIM * DIM),               # wv, wo
                 ones(LAYERS * DIM), normal(LAYERS * HIDDEN * DIM),                       # rms_ffn, w1
                 normal(LAYERS * DIM * HIDDEN), normal(LAYERS * HIDDEN * DIM),            # w2, w3
                 ones(DIM), array.array("f", [0.0]) * (SEQ_LEN * head)]                   # rms_final, freq_cis
        for p in parts:
            if sys.byteorder != "little":
                p.byteswap()
            p.tofile(f)
    shutil.copyfile(TOKENIZER, os.path.join(out, "tok512.bin"))


if __name__ == "__main__":
    main()
