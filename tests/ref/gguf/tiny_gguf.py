#!/usr/bin/env python3
# tests/ref/gguf/tiny_gguf.py - the seed of the GGUF fuzz target (tests/fuzz/corpus/gguf/tiny.gguf):
# a valid GGUF v3 file of a few hundred bytes holding every value type (scalars, a string, arrays
# of scalars and of strings) and three tensors (F32, F16, BF16), written byte by byte from the
# format's definition. With --quant (tests/fuzz/corpus/gguf/tiny-quant.gguf): one block of each
# quantized type lenx reads instead, its bytes from a fixed linear congruential sequence (so the
# fuzz target's dequantization check meets every type from the start). Run:
# /usr/bin/python3 tests/ref/gguf/tiny_gguf.py OUT [--quant]
import struct, sys

def s(x):
    b = x.encode()
    return struct.pack('<Q', len(b)) + b

kvs = [
    (s('general.architecture') + struct.pack('<I', 8) + s('llama')),
    (s('general.alignment') + struct.pack('<I', 4) + struct.pack('<I', 32)),
    (s('llama.block_count') + struct.pack('<I', 4) + struct.pack('<I', 1)),
    (s('llama.rope.freq_base') + struct.pack('<I', 6) + struct.pack('<f', 10000.0)),
    (s('general.flag') + struct.pack('<I', 7) + b'\x01'),
    (s('general.big') + struct.pack('<I', 11) + struct.pack('<q', -5)),
    (s('general.f64') + struct.pack('<I', 12) + struct.pack('<d', 0.5)),
    (s('tokenizer.ggml.scores') + struct.pack('<I', 9) + struct.pack('<IQ', 6, 3) + struct.pack('<3f', 0, -1, -2)),
    (s('tokenizer.ggml.tokens') + struct.pack('<I', 9) + struct.pack('<IQ', 8, 3) + s('<s>') + s('</s>') + s('a')),
]
tensors = [('a.weight', [4, 2], 0, 32), ('b.weight', [8], 1, 16), ('c.weight', [8], 30, 16)]
if '--quant' in sys.argv:   # (ggml type, values, bytes) of one block
    blocks = [(2, 32, 18), (3, 32, 20), (6, 32, 22), (7, 32, 24), (8, 32, 34), (10, 256, 84), (11, 256, 110),
              (12, 256, 144), (13, 256, 176), (14, 256, 210), (16, 256, 66), (17, 256, 74), (18, 256, 98),
              (19, 256, 50), (20, 32, 18), (21, 256, 110), (22, 256, 82), (23, 256, 136), (29, 256, 56),
              (34, 256, 54), (35, 256, 66)]
    tensors = [('q%d.weight' % t, [v], t, n) for t, v, n in blocks]
infos, off = b'', 0
for name, ne, t, nbytes in tensors:
    infos += s(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', d) for d in ne)
    infos += struct.pack('<IQ', t, off)
    off += (nbytes + 31) // 32 * 32
head = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(kvs)) + b''.join(kvs) + infos
head += b'\0' * ((32 - len(head) % 32) % 32)
state = [12345]
def lcg(n):
    out = bytearray()
    for _ in range(n):
        state[0] = (state[0] * 1103515245 + 12345) % 2**31
        out.append(state[0] >> 16 & 255)
    return bytes(out)
pattern = lcg if '--quant' in sys.argv else (lambda n: bytes(range(n)))
data = b''.join(pattern(n) + b'\0' * ((n + 31) // 32 * 32 - n) for _, _, _, n in tensors)
open(sys.argv[1], 'wb').write(head + data)
