#!/bin/sh
# tests/ref/model_ref.sh - regenerate the model reference data of tests/test_model.c.
#
#   1. lenx writes five tiny checkpoints, tests/ref/model_ckpt_<case>.safetensors
#      (lx_model_init with fixed keys + lx_model_save; suite model_ref, test write);
#   2. tests/ref/model_ref.py loads each with the independent PyTorch model
#      tests/ref/lenx_torch.py and writes tests/ref/model_ref_<case>.safetensors
#      (float64 logits, loss and every weight gradient);
#   3. the model_ref suite runs against the new files.
#
# Run from anywhere: sh tests/ref/model_ref.sh [CASE ...] (only those cases'
# references are rewritten by step 2; the checkpoints of step 1 are
# deterministic, so rewriting them changes no byte). Needs PyTorch and numpy
# (Debian python3-torch, python3-numpy); PYTHON picks the interpreter, else the
# first of python3, /usr/bin/python3 that imports torch. Commit the .safetensors
# files it writes; the test suite never runs Python.
set -eu
cd "$(dirname "$0")/../.."

if [ -z "${PYTHON:-}" ]; then
    for p in python3 /usr/bin/python3; do
        if "$p" -c 'import torch, numpy' 2>/dev/null; then
            PYTHON=$p
            break
        fi
    done
fi
if [ -z "${PYTHON:-}" ]; then
    echo "model_ref.sh: no python3 with torch and numpy (apt-get install python3-torch python3-numpy)" >&2
    exit 1
fi

make build/lenx-tests
LENX_WRITE_REF=1 LENX_ROOT="$PWD" OMP_NUM_THREADS=1 ./build/lenx-tests --filter 'model_ref/*'
"$PYTHON" tests/ref/model_ref.py "$@"
if ! out=$(LENX_ROOT="$PWD" OMP_NUM_THREADS=1 ./build/lenx-tests --filter 'model_ref/*' --verbose 2>&1); then
    echo "$out" | grep -v -e 'Test is disabled' -e '^\[====\] Running'
    exit 1
fi
echo "$out" | grep -v -e 'Test is disabled' -e '^\[====\] Running'
