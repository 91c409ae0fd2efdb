#!/usr/bin/env python3
"""Independent safetensors file for tests/test_safetensors.c.

What it is: a safetensors file (https://github.com/huggingface/safetensors)
written from the format description with only the standard library (struct,
json), sharing no code with lenx's reader (harness/engine/formats/safetensors.c). The
output, tests/ref/safetensors_ref.safetensors, is committed; rerun this script
only to regenerate it:

    python3 tests/ref/make_safetensors_ref.py

Layout: u64 little-endian N, N bytes of JSON header, data buffer. Contents:

  "a"  F32 [2, 3]  values 0, 0.5, 1, 1.5, 2, 2.5  (bytes 0..24 of the buffer)
  "b"  F32 [4]     values -1, 2.5, 1e-3, 3e38      (bytes 24..40), rounded to
                   float32 by struct.pack('<f')
  __metadata__     {"format": "pt", "arch": "{\"x\":1}"}

It deliberately differs from what lenx writes, so the test proves the reader
accepts any valid file and not only its own: the header lists "b" before "a"
(key order differs from data order), __metadata__ comes last, there are spaces
between tokens, and the header is NOT padded: N is odd, so the data buffer is
not 8-byte aligned in the file.
"""
import json
import os
import struct

A = [0.5 * i for i in range(6)]
B = [-1.0, 2.5, 1e-3, 3e38]

data = struct.pack("<6f", *A) + struct.pack("<4f", *B)
header = {
    "b": {"dtype": "F32", "shape": [4], "data_offsets": [24, 40]},
    "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
    "__metadata__": {"format": "pt", "arch": json.dumps({"x": 1}, separators=(",", ":"))},
}
# json's default separators (", ", ": "): whitespace between tokens, and N = 183.
text = json.dumps(header).encode("utf-8")
assert len(text) % 2 == 1 and (8 + len(text)) % 8 != 0, "the header must stay unaligned"

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "safetensors_ref.safetensors")
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    f.write(data)
print(f"wrote {out}: header {len(text)} bytes, data {len(data)} bytes")
