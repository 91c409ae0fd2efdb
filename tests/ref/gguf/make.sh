#!/usr/bin/env bash
# tests/ref/gguf/make.sh - the GGUF files of stories260K under tests/ref/gguf/ and llama.cpp's
# perplexity on text.txt for each, made with llama.cpp's own tools. Not run by the test suite
# (which must not need llama.cpp): run by hand, with LLAMA_BIN naming the bin/ directory of a
# llama.cpp build made outside the repository from its source. The files committed here were
# made with llama.cpp commit 34af94cd9ab277632e27caeec2d41de2fd091b31 (ggml 0.20.1):
#   cmake -B build -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF && cmake --build build -j2
# except the seven files of the Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K and IQ4_XS types (random-q4_1,
# random-q{4,5,3}_k_m, random256-q3_k_m, random256-q2_k, random256-iq4_xs) and their rows in dequantized.tsv and
# llamacpp-ppl.tsv, made on 2026-11-30 by the same lines with llama.cpp c392e5094 (targets
# llama-quantize, llama-perplexity, llama-convert-llama2c-to-ggml). That build remade random-f32.gguf
# and random256-q4_k_m.gguf byte for byte, but its llama-perplexity prints other numbers for the
# older files (random-q4_0 809.4554, random256-q4_k_m 1838.1618): the rows above were kept.
# The Qwen3-shaped models (lenx-qwen3-*.safetensors) came on 2026-12-01: their rows in export.tsv and
# lenx-qwen3-rope-hf.gguf were made by the lines below with llama.cpp 34af94cd again (its source from a
# snapshot of a fork that holds that commit, unslothai/llama.cpp; targets llama-perplexity and
# llama-quantize; the converter also needs Debian's python3-tqdm), the other rows kept.
# The Phi-3-shaped LongRoPE models (lenx-phi3-longrope.safetensors from lenx-longrope.yaml, and
# lenx-phi3-partial-longrope.safetensors from lenx-partial.yaml, whose rope turns 12 of 16 channels) came
# on 2026-12-01 too, their rows by the same lines with llama.cpp 34af94cd (perplexity at -c 512, the long
# factors, and at -c 256, the short ones: rows NAME@256), the other rows kept.
# The Gemma-block models (lenx-gemma{3,2,1}-rope.safetensors from lenx-gemma.yaml, written as llama.cpp's
# gemma3, gemma2 and gemma) came on 2026-12-02, their rows by the same lines with llama.cpp d32676d77 (the
# unslothai/llama.cpp snapshot whose src/models/gemma*.cpp the reader and writer follow; targets
# llama-perplexity and llama-quantize, built with -DGGML_NATIVE=ON -DGGML_OPENMP=ON), the other rows kept.
# The IQ1-IQ3 and ternary file (random256-iq-mix.gguf) and its rows come from make_iq.sh, run after this
# script (which starts dequantized.tsv and the perplexity tables afresh).
# Usage: LLAMA_BIN=/path/to/llama.cpp/build/bin [LENX=./lenx] tests/ref/gguf/make.sh
set -euo pipefail
cd "$(dirname "$0")"
bin=${LLAMA_BIN:?set LLAMA_BIN to the bin directory of a llama.cpp build}
src=../../../../shared/models/stories260K
"$bin/llama-convert-llama2c-to-ggml" --copy-vocab-from-model "$src/tok512.bin" \
    --llama2c-model "$src/stories260K.bin" --llama2c-output-model stories260K-f32.gguf >/dev/null 2>&1
# F16 and BF16 only: stories260K's MLP rows of 172 are not whole 32-element blocks, so llama.cpp
# cannot quantize it (Q8_0, Q4_K ... need a model of other widths)
for t in F16 BF16; do
    "$bin/llama-quantize" stories260K-f32.gguf "stories260K-$(echo $t | tr A-Z a-z).gguf" $t >/dev/null 2>&1
done
# a random-weight model whose widths are whole blocks (random_l2c.py), in F32 and Q8_0
/usr/bin/python3 random_l2c.py random.bin 7
"$bin/llama-convert-llama2c-to-ggml" --copy-vocab-from-model "$src/tok512.bin" \
    --llama2c-model random.bin --llama2c-output-model random-f32.gguf >/dev/null 2>&1
"$bin/llama-quantize" random-f32.gguf random-q8_0.gguf Q8_0 >/dev/null 2>&1
"$bin/llama-quantize" random-f32.gguf random-q4_0.gguf Q4_0 >/dev/null 2>&1
"$bin/llama-quantize" random-f32.gguf random-q4_1.gguf Q4_1 >/dev/null 2>&1
# the K-quant mixes of a model whose rows are not whole super-blocks of 256: llama.cpp falls back to
# Q5_0 (Q4_K_M), Q5_1 (Q5_K_M) and IQ4_NL (Q3_K_M) for every matrix, as for any model of such widths
for t in q4_k_m q5_k_m q3_k_m; do
    "$bin/llama-quantize" random-f32.gguf random-$t.gguf "$(echo $t | tr a-z A-Z)" >/dev/null 2>&1
done
# and one whose widths are whole K-quant super-blocks of 256, as llama.cpp's Q4_K_M and Q5_K_M mix them
/usr/bin/python3 random_l2c.py random.bin 11 256 512
"$bin/llama-convert-llama2c-to-ggml" --copy-vocab-from-model "$src/tok512.bin" \
    --llama2c-model random.bin --llama2c-output-model random256-f32.gguf >/dev/null 2>&1
"$bin/llama-quantize" random256-f32.gguf random256-q4_k_m.gguf Q4_K_M >/dev/null 2>&1
"$bin/llama-quantize" random256-f32.gguf random256-q5_k_m.gguf Q5_K_M >/dev/null 2>&1
"$bin/llama-quantize" random256-f32.gguf random256-q3_k_m.gguf Q3_K_M >/dev/null 2>&1
"$bin/llama-quantize" random256-f32.gguf random256-q2_k.gguf Q2_K >/dev/null 2>&1
"$bin/llama-quantize" random256-f32.gguf random256-iq4_xs.gguf IQ4_XS >/dev/null 2>&1
rm -f random.bin random256-f32.gguf
# llama.cpp's own dequantization of every quantized file (llama-quantize --allow-requantize to F32),
# as the SHA-256 of its F32 weights in lenx's tensor order (lenx show model's weights_sha256, which
# for an F32 file is a copy of its bytes): lenx's dequantized weights must hash the same
lenx=${LENX:-../../../lenx}
: > dequantized.tsv
for f in random-q8_0 random-q4_0 random256-q4_k_m random256-q5_k_m random-q4_1 random-q4_k_m random-q5_k_m \
         random-q3_k_m random256-q3_k_m random256-q2_k random256-iq4_xs; do
    "$bin/llama-quantize" --allow-requantize $f.gguf deq.gguf F32 >/dev/null 2>&1
    printf '%s.gguf\t%s\n' $f "$("$lenx" show model deq.gguf | sed -n 's/.*"weights_sha256": "\([0-9a-f]*\)".*/\1/p')" >> dequantized.tsv
    rm -f deq.gguf
done
# llama.cpp's perplexity on text.txt, 128-token chunks (the converter writes context_length 128)
: > llamacpp-ppl.tsv
for f in stories260K-*.gguf random-*.gguf random256-*.gguf; do
    for try in 1 2 3; do    # its log lines interleave now and then: read the line again
        ppl=$("$bin/llama-perplexity" -m "$f" -f text.txt -c 128 -b 128 -t 1 2>&1 |
              sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p')
        [ -n "$ppl" ] && break
    done
    printf '%s\t%s\n' "$f" "$ppl" >> llamacpp-ppl.tsv
done
# llama.cpp's token ids of text.txt under the file's own tokenizer (BOS first, as llama-tokenize adds it)
"$bin/llama-tokenize" -m stories260K-f32.gguf -f text.txt --ids --log-disable 2>/dev/null > text.ids
sha256sum stories260K-*.gguf random-*.gguf random256-*.gguf > SHA256SUMS
# lenx's own models exported: lenx-models.yaml's six checkpoints (lenx-*.safetensors), each written by
# `lenx export --gguf` as F32, F16, BF16 and Q8_0. For each file, llama.cpp's perplexity on text.txt
# in 64-token chunks (the models' training length) and, for F16, BF16 and Q8_0, the weights_sha256 of
# llama-quantize's own conversion of the F32 export to that type: lenx's conversion must hash the same.
# The LongRoPE model at 512 and 256 (its training length and L: the long and the short factors).
: > export.tsv
for m in lenx-*.safetensors; do
    b=${m%.safetensors}
    lengths=64
    case $b in *longrope*) lengths="512 256" ;; esac
    for t in f32 f16 bf16 q8_0; do
        "$lenx" export --gguf "$b-$t.gguf" --type $t --model "$m" >/dev/null
        first=1
        for c in $lengths; do
            for try in 1 2 3; do
                ppl=$("$bin/llama-perplexity" -m "$b-$t.gguf" -f text.txt -c $c -b $c -t 1 2>&1 |
                      sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p')
                [ -n "$ppl" ] && break
            done
            sha=- name=$b-$t
            [ $first = 1 ] || name=$b-$t@$c
            if [ $t != f32 ] && [ $first = 1 ]; then
                "$bin/llama-quantize" "$b-f32.gguf" deq.gguf "$(echo $t | tr a-z A-Z)" >/dev/null 2>&1
                sha=$("$lenx" show model deq.gguf | sed -n 's/.*"weights_sha256": "\([0-9a-f]*\)".*/\1/p')
                rm -f deq.gguf
            fi
            printf '%s\t%s\t%s\n' "$name" "$ppl" "$sha" >> export.tsv
            first=0
        done
    done
done
rm -f lenx-*-f32.gguf lenx-*-f16.gguf lenx-*-bf16.gguf lenx-*-q8_0.gguf
# The same two rope models through llama.cpp's Hugging Face converter: `lenx export --hf`, then
# convert_hf_to_gguf.py (run by convert_novocab.py: its vocabulary step needs transformers, which Debian
# does not package; a byte-level model needs no vocabulary in the file) with LLAMA_SRC the llama.cpp
# source tree. llama.cpp's own q/k permutation of the llama model is then what lenx reads.
src=${LLAMA_SRC:-$bin/../..}
for a in llama qwen2 qwen3; do
    rm -rf hf.tmp
    "$lenx" export --hf hf.tmp --model "lenx-$a-rope.safetensors" >/dev/null
    /usr/bin/python3 convert_novocab.py "$src" hf.tmp --outfile "lenx-$a-rope-hf.gguf" --outtype f32 >/dev/null 2>&1
    rm -rf hf.tmp
done
# the tiny Phi-3 directory of tests/ref/phi3_ref.py through the same converter: q|k|v and gate|up fused,
# LongRoPE's lists as rope_factors_long/short tensors (made 2026-12-01 with llama.cpp 34af94cd); and its
# Phi-4-mini form (phi3_ref.py --partial: rope.dimension_count 12 of a head of 16, six factors a list)
/usr/bin/python3 convert_novocab.py "$src" ../hf-phi3-tiny --outfile phi3-tiny-hf.gguf --outtype f32 >/dev/null 2>&1
/usr/bin/python3 convert_novocab.py "$src" ../hf-phi4-tiny --outfile phi4-tiny-hf.gguf --outtype f32 >/dev/null 2>&1
# and the llama one with Llama 3.1's rope_scaling (factor 2, low/high_freq_factor 1/8, original 64) put in its
# config.json: llama.cpp's converter writes it as per-pair factors, the tensor rope_freqs.weight
rm -rf hf.tmp
"$lenx" export --hf hf.tmp --model lenx-llama-rope.safetensors >/dev/null
sed -i 's/"rope_scaling": null/"rope_scaling": {"rope_type": "llama3", "factor": 2.0, "low_freq_factor": 1.0, "high_freq_factor": 8.0, "original_max_position_embeddings": 64}/' hf.tmp/config.json
/usr/bin/python3 convert_novocab.py "$src" hf.tmp --outfile lenx-llama-llama3-hf.gguf --outtype f32 >/dev/null 2>&1
rm -rf hf.tmp
# the tiny Gemma 3 and Gemma 2 directories of tests/ref/gemma_ref.py through the same converter (made 2026-12-01 with the
# converter of llama.cpp's snapshot d32676d77 of unslothai/llama.cpp, which also needs Debian's python3-tqdm): an
# F32 copy of its bf16 weights, since the converter adds Gemma's 1 to each norm gain in the tensor's own type
# (F32 keeps the sum lenx makes at load), with a tokenizer.json of the model's 96 ids (the converter cuts
# token_embd to the tokenizer's size and writes no vocabulary here); and the tiny GPT-NeoX and BLOOM
# directories of tests/ref/neox_ref.py and bloom_ref.py (made 2026-12-05 with the same converter, which
# gathers their query_key_value's head-by-head rows into q|k|v itself), and the tiny MPT's (of
# expansion_ratio 4: the converter writes MPT's MLP as 4 x the width whatever the ratio); and the tiny
# Falcon-7B and Falcon-40B directories of tests/ref/falcon_ref.py (made 2026-12-05 with the same converter,
# which regroups query_key_value into q|k|v itself and writes the MLP as 4 x the width); and the tiny
# Phi-2 directory of tests/ref/phi_ref.py (made 2026-12-05 likewise: q, k and v as three tensors)
for g in gemma3 gemma2 neox bloom mpt falcon falcon-new phi2; do
rm -rf hf.tmp && mkdir hf.tmp && cp ../hf-$g-tiny/config.json hf.tmp/
G=$g /usr/bin/python3 - <<'PY'
import json, struct
import numpy as np
import os
b = open("../hf-" + os.environ["G"] + "-tiny/model.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h, out, off, data = json.loads(b[8:8 + n]), {}, 0, []
for name, e in h.items():
    if name != "__metadata__":
        raw = np.frombuffer(b[8 + n + e["data_offsets"][0]:8 + n + e["data_offsets"][1]], dtype="<u2")
        f = (raw.astype("<u4") << 16).view("<f4")
        out[name] = {"dtype": "F32", "shape": e["shape"], "data_offsets": [off, off + f.nbytes]}
        off += f.nbytes
        data.append(f.tobytes())
out["__metadata__"] = {"format": "pt"}
hb = json.dumps(out).encode()
hb += b" " * (-(8 + len(hb)) % 8)
open("hf.tmp/model.safetensors", "wb").write(struct.pack("<Q", len(hb)) + hb + b"".join(data))
json.dump({"model": {"type": "BPE", "vocab": {f"t{i}": i for i in range(96)}, "merges": []}, "added_tokens": []},
          open("hf.tmp/tokenizer.json", "w"))
PY
/usr/bin/python3 convert_novocab.py "$src" hf.tmp --outfile $g-tiny-hf.gguf --outtype f32 >/dev/null 2>&1
rm -rf hf.tmp
done
