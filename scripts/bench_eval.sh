#!/bin/sh
# scripts/bench_eval.sh - the evaluation forward before and after the one-layer
# pass, in the same run (make bench BENCH=eval; docs/PERFORMANCE.md,
# "Evaluation memory").
#
# Builds lenx at BASE (default: the commit before evaluation held one layer at
# a time) in a temporary worktree, writes the random llama2.c model of
# scripts/memory_model.py (seed 26), and runs `lenx score --length C` on one
# window of Austen text for C = 4,096, 16,384 and 32,768 with both binaries,
# alternating, REPS times each (default 3). Prints per C and side the best
# wall-clock tokens per second, the peak RSS (/usr/bin/time -v), the ratio
# after/before, and whether the per-token NLL printed by the two binaries is
# the same bytes. Timings mean something only on a quiet machine.
# usage: scripts/bench_eval.sh [BASE] [REPS] [OUT_DIR]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${1:-dabb73b}
REPS=${2:-3}
OUT=${3:-$ROOT/build/bench-eval}
mkdir -p "$OUT"
NEW="$ROOT/lenx"
OLD="$OUT/lenx-$BASE"
if [ ! -x "$OLD" ]; then
    WT=$(mktemp -d)
    git -C "$ROOT" worktree add -q --detach "$WT/src" "$BASE"
    make -C "$WT/src" -s -j2 lenx >/dev/null
    cp "$WT/src/lenx" "$OLD"
    git -C "$ROOT" worktree remove --force "$WT/src"
    rm -rf "$WT"
fi
[ -f "$OUT/model.bin" ] || /usr/bin/python3 "$ROOT/scripts/memory_model.py" "$OUT"
TEXT="$ROOT/data/corpus/austen/test/persuasion.txt"
[ -f "$TEXT" ] || make -C "$ROOT" -s data
printf '%-7s %-7s %10s %10s %12s\n' length side tok/s peak_MiB nll
for L in 4096 16384 32768; do
    # about 1.8 bytes per token: one full window and a short tail
    head -c $((L * 30000 / 16384)) "$TEXT" > "$OUT/text-$L.txt"
    for side in before after; do : > "$OUT/$side-$L.runs"; done
    r=0
    while [ $r -lt "$REPS" ]; do
        for side in before after; do
            bin=$NEW; [ $side = before ] && bin=$OLD
            /usr/bin/time -f "%e %M" -o "$OUT/$side-$L.t" "$bin" score --model "$OUT/model.bin" \
                --text "$OUT/text-$L.txt" --length $L > "$OUT/$side-$L.json"
            cat "$OUT/$side-$L.t" >> "$OUT/$side-$L.runs"
        done
        r=$((r + 1))
    done
    tokens=$(/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['n_tokens'])" \
             "$OUT/after-$L.json")
    same=$(cmp -s "$OUT/before-$L.json" "$OUT/after-$L.json" && echo identical || echo DIFFERENT)
    for side in before after; do
        sort -n "$OUT/$side-$L.runs" | head -1 | awk -v t="$tokens" -v L=$L -v s=$side -v n="$same" \
            '{printf "%-7s %-7s %10.0f %10.0f %12s\n", L, s, t / $1, $2 / 1024, n}'
    done | tee "$OUT/table-$L.txt"
    awk 'NR == 1 {b = $3} NR == 2 {printf "%-7s after/before tok/s %.3f\n", $1, $3 / b}' "$OUT/table-$L.txt"
done
