#!/bin/sh
# scripts/bench_core.sh - which OpenBLAS kernels `lenx score` runs when
# OPENBLAS_CORETYPE is unset, and what they cost against the same kernels
# forced by hand, in one run (make bench BENCH=core; docs/PERFORMANCE.md,
# "A CPU that OpenBLAS does not know").
#
# Writes the random llama2.c model of scripts/memory_model.py (dim 512,
# 8 layers, 25M parameters; seed 26) and times `lenx score --length 4096` in
# fast numerics on one 4,096-token window of Austen text, alternating, REPS
# times a side (default 3):
#   unset     OPENBLAS_CORETYPE unset: OpenBLAS's pick, or lenx's where
#             OpenBLAS picked narrower kernels than the CPU has (it re-runs
#             itself with the variable set: docs/numerics.md)
#   by-hand   OPENBLAS_CORETYPE set to the kernels `unset` ran (from the
#             "blas" provenance field of its output)
#   reexec    unset, with LENX_TEST_OPENBLAS_CORE=Prescott: lenx takes
#             OpenBLAS's pick for Prescott and re-runs itself, as on a CPU
#             that OpenBLAS does not know (only where `unset` did not)
#   Prescott  OPENBLAS_CORETYPE=Prescott: the SSE3 kernels Debian's OpenBLAS
#             0.3.21 falls back to on such a CPU, had lenx done nothing
# Prints per side the kernels that ran, the best wall-clock tokens per second,
# the ratio to by-hand, and whether the per-token NLLs equal by-hand's bytes.
# Timings mean something only on a quiet machine.
# usage: scripts/bench_core.sh [REPS] [OUT_DIR]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPS=${1:-3}
OUT=${2:-$ROOT/build/bench-core}
mkdir -p "$OUT"
LENX="$ROOT/lenx"
[ -f "$OUT/model.bin" ] || /usr/bin/python3 "$ROOT/scripts/memory_model.py" "$OUT"
TEXT="$ROOT/data/corpus/austen/test/persuasion.txt"
[ -f "$TEXT" ] || make -C "$ROOT" -s data
head -c 7600 "$TEXT" > "$OUT/text.txt"    # one 4,096-token window and a short tail
field() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
lists() { /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['tokens'], d['nll'])" "$1"; }
score() {   # side, then the environment for it
    side=$1; shift
    env "$@" /usr/bin/time -f "%e" -o "$OUT/$side.t" "$LENX" score --model "$OUT/model.bin" \
        --text "$OUT/text.txt" --length 4096 > "$OUT/$side.json" 2> "$OUT/$side.err"
    cat "$OUT/$side.t" >> "$OUT/$side.runs"
}
score unset -u OPENBLAS_CORETYPE -u LENX_TEST_OPENBLAS_CORE      # once, to learn its kernels
core=$(field "$OUT/unset.json" blas | sed 's/^core=//; s/ .*//')
sides="unset by-hand Prescott"
grep -q "ran itself again" "$OUT/unset.err" || sides="unset by-hand reexec Prescott"
for side in $sides; do : > "$OUT/$side.runs"; done
r=0
while [ $r -lt "$REPS" ]; do
    for side in $sides; do
        case $side in
            unset) score unset -u OPENBLAS_CORETYPE -u LENX_TEST_OPENBLAS_CORE ;;
            by-hand) score by-hand OPENBLAS_CORETYPE="$core" ;;
            reexec) score reexec -u OPENBLAS_CORETYPE LENX_TEST_OPENBLAS_CORE=Prescott ;;
            Prescott) score Prescott OPENBLAS_CORETYPE=Prescott ;;
        esac
    done
    r=$((r + 1))
done
tokens=$(field "$OUT/by-hand.json" n_tokens)
echo "lenx score, 25M-parameter llama2.c model, $tokens tokens at --length 4096, fast numerics," \
     "$("$LENX" --version | sed 's/.*; \([0-9]* threads\))/\1/'), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
printf '%-9s %-34s %8s %10s %12s\n' side kernels tok/s vs_by-hand nll
best_hand=$(sort -n "$OUT/by-hand.runs" | head -1)
for side in $sides; do
    best=$(sort -n "$OUT/$side.runs" | head -1)
    same=$([ "$(lists "$OUT/$side.json")" = "$(lists "$OUT/by-hand.json")" ] && echo identical || echo differs)
    awk -v s="$side" -v k="$(field "$OUT/$side.json" blas)" -v t="$tokens" -v b="$best" -v h="$best_hand" -v n="$same" \
        'BEGIN {printf "%-9s %-34s %8.0f %10.3f %12s\n", s, k, t / b, h / b, n}'
done
sed -n 1p "$OUT/unset.err"
