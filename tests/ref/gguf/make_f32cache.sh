#!/usr/bin/env bash
# tests/ref/gguf/make_f32cache.sh - llamacpp-ppl-f32cache.tsv: llama.cpp's perplexity on text.txt,
# 128-token chunks, as make.sh's llamacpp-ppl.tsv but with an fp32 KV cache (-ctk f32 -ctv f32):
# its attention then runs in fp32 as lenx's does (no f16 keys, values, queries or probabilities),
# so what is left between the two is the weight products, where llama.cpp rounds the activations
# to 8-bit blocks (or f16/bf16): lenx's `activations: llamacpp` (tests/test_gguf.c).
# Made on 2026-12-03 with llama.cpp c392e5094 (ggerganov/llama.cpp, built with -DGGML_NATIVE=ON
# -DGGML_OPENMP=ON, target llama-perplexity) on an AMD EPYC (Zen 5, AVX-512 VNNI); not run by the tests.
# Usage: LLAMA_BIN=/path/to/llama.cpp/build/bin tests/ref/gguf/make_f32cache.sh
set -euo pipefail
cd "$(dirname "$0")"
bin=${LLAMA_BIN:?set LLAMA_BIN to the bin directory of a llama.cpp build}
: > llamacpp-ppl-f32cache.tsv
for f in stories260K-*.gguf random-*.gguf random256-*.gguf; do
    for try in 1 2 3; do    # its log lines interleave now and then: read the line again
        ppl=$("$bin/llama-perplexity" -m "$f" -f text.txt -c 128 -b 128 -t 1 -ctk f32 -ctv f32 2>&1 |
              sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p')
        [ -n "$ppl" ] && break
    done
    printf '%s\t%s\n' "$f" "$ppl" >> llamacpp-ppl-f32cache.tsv
done
