#!/usr/bin/env python3
# tests/ref/gguf/random_l2c.py - a random-weight llama2.c .bin whose widths are whole quantization
# blocks (by default dim 64, hidden 128: Q8_0's and Q4_0's 32; with DIM 256 HIDDEN 512 the
# K-quants' 256), 2 layers, 4 heads, 2 key/value heads, 512 tokens of tok512.bin, seq_len 128,
# for make.sh to convert and quantize with llama.cpp's tools. Weights are N(0, 0.05) (the
# embedding N(0, 0.1)) from Python's random.Random(seed), norms 1, so the file is the same
# wherever it is made. Usage: /usr/bin/python3 random_l2c.py OUT.bin [SEED [DIM HIDDEN]]
import random, struct, sys
dim, hidden, layers, heads, kv, vocab, seq = 64, 128, 2, 4, 2, 512, 128
if len(sys.argv) > 4:
    dim, hidden = int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
hd = dim // heads
def mat(n, std=0.05):
    return struct.pack('<%df' % n, *(rng.gauss(0.0, std) for _ in range(n)))
def ones(n):
    return struct.pack('<%df' % n, *([1.0] * n))
out = struct.pack('<7i', dim, hidden, layers, heads, kv, vocab, seq)
out += mat(vocab * dim, 0.1)                      # token_embedding (tied head)
out += ones(layers * dim)                         # rms_att
out += mat(layers * dim * dim)                    # wq
out += mat(layers * kv * hd * dim)                # wk
out += mat(layers * kv * hd * dim)                # wv
out += mat(layers * dim * dim)                    # wo
out += ones(layers * dim)                         # rms_ffn
out += mat(layers * hidden * dim)                 # w1
out += mat(layers * dim * hidden)                 # w2
out += mat(layers * hidden * dim)                 # w3
out += ones(dim)                                  # rms_final
out += struct.pack('<%df' % (seq * hd), *([0.0] * (seq * hd)))   # freq_cis real + imag (unused)
open(sys.argv[1], 'wb').write(out)
