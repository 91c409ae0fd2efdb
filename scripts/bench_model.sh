#!/bin/sh
# scripts/bench_model.sh - the random-weight bf16 Llama the bf16 and serve
# benchmarks run (tests/ref/hf_bf16_ref.py SHAPE: 1b, Llama-3.2-1B's shape,
# 1.24B parameters, 2.47 GB; 8b, Llama-3.1-8B's, 16.1 GB in four shards),
# with a real Llama-3 tokenizer, written once into OUT/llama-SHAPE; Debian's
# python3-torch installed if missing. Prints the model's directory.
# usage: scripts/bench_model.sh SHAPE OUT_DIR
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHAPE=$1
MODEL="$2/llama-$SHAPE"
mkdir -p "$2"
if [ ! -f "$MODEL/model.safetensors" ] && [ ! -f "$MODEL/model.safetensors.index.json" ]; then
    /usr/bin/python3 -c "import torch" 2>/dev/null || {
        sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
        $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends python3-torch >&2; }
    tok=$(bash "$ROOT/scripts/tokenizers.sh" | awk '$1 == "llama3" {print $2}')
    /usr/bin/python3 "$ROOT/tests/ref/hf_bf16_ref.py" "$SHAPE" "$MODEL" "$ROOT/$tok" >&2
fi
echo "$MODEL"
