# A copy of a GGUF file with tokenizer.ggml.model "none" and {arch}.vocab_size, so that llama.cpp loads a
# file written without a vocabulary (its converter's, run by convert_novocab.py) and runs it on token ids.
# Usage: python3 novocab_runnable.py LLAMA_CPP_SRC IN.gguf OUT.gguf
import sys
src, inp, out = sys.argv[1:4]
sys.path[:0] = [src + "/gguf-py"]
import gguf
from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

r = gguf.GGUFReader(inp)
arch = str(bytes(r.get_field("general.architecture").parts[-1]), "utf-8")
vocab = None
for t in r.tensors:
    if t.name == "token_embd.weight":
        vocab = int(t.shape[-1])
w = gguf.GGUFWriter(out, arch=arch, endianess=r.endianess)
copy_with_new_metadata(r, w, {"tokenizer.ggml.model": MetadataDetails(gguf.GGUFValueType.STRING, "none"),
                              f"{arch}.vocab_size": MetadataDetails(gguf.GGUFValueType.UINT32, vocab)}, [])
