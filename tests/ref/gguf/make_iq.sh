#!/usr/bin/env bash
# tests/ref/gguf/make_iq.sh - random256-iq-mix.gguf, a file of the IQ1, IQ2, IQ3 and ternary types, and
# its rows in dequantized.tsv, llamacpp-ppl.tsv and llamacpp-ppl-f32cache.tsv; also harness/core/iqbooks.c
# (the types' codebooks, read back from llama.cpp's dequantizer by iq_codebooks.c). Not run by the tests.
# Made on 2026-12-05 with llama.cpp d32676d77 (the unslothai/llama.cpp snapshot of make.sh; targets
# llama-quantize, llama-perplexity and llama-imatrix, built with -DGGML_NATIVE=ON -DGGML_OPENMP=ON) on an
# AMD EPYC Zen 2 (AVX2). That snapshot has no llama2.c converter, so the 256-wide random model of make.sh
# (random_l2c.py, seed 11) is written as F32 GGUF by `lenx export`. Its importance matrix (which
# llama.cpp's IQ1 and IQ2 quantizers require) comes from llama-imatrix on text.txt. The mix is Q8_0 but
# nine matrices, one for each type: blk.0's attn_q IQ2_XXS, attn_k IQ2_XS, attn_v IQ2_S, attn_output
# IQ3_XXS, ffn_gate IQ3_S, ffn_up IQ1_S and ffn_down IQ1_M; blk.1's attn_q TQ1_0 and attn_k TQ2_0.
# Usage: LLAMA_BIN=/path/to/llama.cpp/build/bin [LLAMA_SRC=/path/to/llama.cpp] [LENX=./lenx] tests/ref/gguf/make_iq.sh
set -euo pipefail
cd "$(dirname "$0")"
bin=${LLAMA_BIN:?set LLAMA_BIN to the bin directory of a llama.cpp build}
src=${LLAMA_SRC:-$bin/../..}
lenx=${LENX:-../../../lenx}
tok=../../../../shared/models/stories260K/tok512.bin
cc -O1 -I"$src/ggml/include" iq_codebooks.c -L"$bin" -lggml-base -Wl,-rpath,"$bin" -o iq_codebooks.tmp
./iq_codebooks.tmp > ../../../harness/core/iqbooks.c
rm -f iq_codebooks.tmp
/usr/bin/python3 random_l2c.py random.bin 11 256 512
"$lenx" export --gguf random256-f32.gguf --model random.bin --tokenizer "$tok" >/dev/null
"$bin/llama-imatrix" -m random256-f32.gguf -f text.txt -c 128 -t 1 -o imatrix.tmp.gguf >/dev/null 2>&1
"$bin/llama-quantize" --imatrix imatrix.tmp.gguf --tensor-type blk.0.attn_q=iq2_xxs --tensor-type blk.0.attn_k=iq2_xs \
    --tensor-type blk.0.attn_v=iq2_s --tensor-type blk.0.attn_output=iq3_xxs --tensor-type blk.0.ffn_gate=iq3_s \
    --tensor-type blk.0.ffn_up=iq1_s --tensor-type blk.0.ffn_down=iq1_m --tensor-type blk.1.attn_q=tq1_0 \
    --tensor-type blk.1.attn_k=tq2_0 random256-f32.gguf random256-iq-mix.gguf Q8_0 >/dev/null 2>&1
"$bin/llama-quantize" --allow-requantize random256-iq-mix.gguf deq.gguf F32 >/dev/null 2>&1
sha=$("$lenx" show model deq.gguf | sed -n 's/.*"weights_sha256": "\([0-9a-f]*\)".*/\1/p')
rm -f random.bin random256-f32.gguf imatrix.tmp.gguf deq.gguf
ppl() {     # llama.cpp's perplexity of random256-iq-mix.gguf on text.txt at 128, extra options "$@"
    for try in 1 2 3; do    # its log lines interleave now and then: read the line again
        p=$("$bin/llama-perplexity" -m random256-iq-mix.gguf -f text.txt -c 128 -b 128 -t 1 "$@" 2>&1 |
            sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p')
        [ -n "$p" ] && break
    done
    echo "$p"
}
for tsv in dequantized.tsv llamacpp-ppl.tsv llamacpp-ppl-f32cache.tsv SHA256SUMS; do
    grep -v 'random256-iq-mix' $tsv > $tsv.tmp || true
    mv $tsv.tmp $tsv
done
printf 'random256-iq-mix.gguf\t%s\n' "$sha" >> dequantized.tsv
printf 'random256-iq-mix.gguf\t%s\n' "$(ppl)" >> llamacpp-ppl.tsv
printf 'random256-iq-mix.gguf\t%s\n' "$(ppl -ctk f32 -ctv f32)" >> llamacpp-ppl-f32cache.tsv
sha256sum random256-iq-mix.gguf >> SHA256SUMS
