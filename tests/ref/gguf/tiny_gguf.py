#!/usr/bin/env python3
# tests/ref/gguf/tiny_gguf.py - the seed of the GGUF fuzz target (tests/fuzz/corpus/gguf/tiny.gguf):
# a valid GGUF v3 file of a few hundred bytes holding every value type (scalars, a string, arrays
# of scalars and of strings) and three tensors (F32, F16, BF16), written byte by byte from the
# format's definition. Run: /usr/bin/python3 tests/ref/gguf/tiny_gguf.py OUT
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
infos, off = b'', 0
for name, ne, t, nbytes in tensors:
    infos += s(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', d) for d in ne)
    infos += struct.pack('<IQ', t, off)
    off += (nbytes + 31) // 32 * 32
head = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(kvs)) + b''.join(kvs) + infos
head += b'\0' * ((32 - len(head) % 32) % 32)
data = b''.join(bytes(range(n)) + b'\0' * ((n + 31) // 32 * 32 - n) for _, _, _, n in tensors)
open(sys.argv[1], 'wb').write(head + data)
