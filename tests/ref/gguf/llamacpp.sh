#!/usr/bin/env bash
# tests/ref/gguf/llamacpp.sh - llama.cpp's own logits of the family fixtures (NAME-tiny-hf.gguf: the
# converter's files of the tiny gptneox, bloom, mpt, falcon, gemma2 and gemma3 directories, make.sh)
# into llamacpp/NAME.tsv, which tests/test_llamacpp.c holds lenx's logits of the same files to. Not
# run by the test suite (which must not need llama.cpp): run by hand with LLAMA_SRC a llama.cpp source
# tree (made 2026-12-05 from unslothai/llama.cpp d32676d77 on an AMD EPYC Zen 2, AVX2).
#
# 1. libllama, CPU only, the machine's own kernels, OpenMP:
#      cmake -S $LLAMA_SRC -B $LLAMA_SRC/build -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF
#        -DLLAMA_BUILD_{TESTS,TOOLS,EXAMPLES,SERVER,APP,COMMON}=OFF -DLLAMA_OPENSSL=OFF
#        -DGGML_NATIVE=ON -DGGML_OPENMP=ON && cmake --build $LLAMA_SRC/build --target llama
# 2. lllogits.c against it: llama.cpp's logits of given token ids, every position.
# 3. Each fixture copied with tokenizer.ggml.model "none" and {arch}.vocab_size (novocab_runnable.py,
#    llama.cpp's gguf-py): the converter wrote no vocabulary (convert_novocab.py), which llama.cpp needs
#    to load a file; "none" gives it dummy tokens and no tokenizer, which token ids do not need.
# 4. The 48 ids 3 + 41·t mod 93 (t = 0..47), as tests/hf_tiny.h feeds them.
set -euo pipefail
cd "$(dirname "$0")"
src=${LLAMA_SRC:?set LLAMA_SRC to a llama.cpp source tree}
b=$src/build
cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_COMMON=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=ON -DGGML_OPENMP=ON >/dev/null
cmake --build "$b" --target llama -j2 >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -O2 -x c lllogits.c -x none -I "$src/include" -I "$src/ggml/include" "$b/src/libllama.a" "$b/ggml/src/libggml.a" \
    "$b/ggml/src/libggml-cpu.a" "$b/ggml/src/libggml-base.a" -fopenmp -lpthread -lm -o "$tmp/lllogits"
ids=$(/usr/bin/python3 -c "print(' '.join(str(3 + t * 41 % 93) for t in range(48)))")
mkdir -p llamacpp
for g in neox bloom mpt falcon falcon-new gemma2 gemma3 phi2; do
    /usr/bin/python3 novocab_runnable.py "$src" "$g-tiny-hf.gguf" "$tmp/$g.gguf" >/dev/null 2>&1
    "$tmp/lllogits" "$tmp/$g.gguf" $ids > "llamacpp/$g.tsv" 2>/dev/null
done
