#!/bin/sh
# scripts/memory_recipe.sh - rerun the lenx side of docs/PERFORMANCE.md's
# "Evaluation memory" table: writes the random llama2.c model
# (scripts/memory_model.py, seed 26), then measures peak RSS (/usr/bin/time -v,
# "Maximum resident set size") of
#   lenx score --length 16384 and --length 32768 on one window of Austen text
#     (the first 30,000 / 60,000 bytes of persuasion.txt: 16,663 / 33,365 tokens,
#     one full window and a short tail), and
#   a ppl, an attn and a passkey cell at 32,768 tokens, each a sweep of its own,
#     beside the memory the plan predicts for it (`lenx run --dry-run`).
# With --portable after OUT_DIR, everything runs in portable numerics (the
# MLP and the head over row blocks; docs/numerics.md), into OUT_DIR's own
# stores.
# usage: scripts/memory_recipe.sh [LENX] [OUT_DIR] [--portable]     (defaults: ./lenx, build/memory)
set -eu
LENX=${1:-./lenx}
OUT=${2:-build/memory}
MODE=${3:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
[ -f "$OUT/model.bin" ] || /usr/bin/python3 "$ROOT/scripts/memory_model.py" "$OUT"
TEXT="$ROOT/data/corpus/austen/test/persuasion.txt"
peak() { grep "Maximum resident set size" "$1" | awk '{printf "%.0f MiB", $NF / 1024}'; }
for L in 16384 32768; do
    head -c $((L / 16384 * 30000)) "$TEXT" > "$OUT/text-$L.txt"
    /usr/bin/time -v "$LENX" score --model "$OUT/model.bin" --text "$OUT/text-$L.txt" --length $L $MODE \
        > "$OUT/score-$L.json" 2> "$OUT/score-$L.time"
    echo "score --length $L: peak $(peak "$OUT/score-$L.time")"
done
for task in "ppl: {windows: 1}" "attn: {windows: 1}" "passkey: {samples: 1, depths: 1}"; do
    name=${task%%:*}
    cat > "$OUT/$name.yaml" <<YAML
name: memory_$name
models:
  m: {checkpoint: model.bin}
methods: [{rope: {layout: interleaved}}]
tasks: [{$task}]
lengths: [32768]
YAML
    plan=$("$LENX" run "$OUT/$name.yaml" --db "$OUT/$name.db" --dry-run $MODE | sed -n "s/.*memory=\(.* MB\|.* GB\)  model=.*/\1/p")
    /usr/bin/time -v "$LENX" run "$OUT/$name.yaml" --db "$OUT/$name.db" --force --quiet $MODE \
        > "$OUT/$name.out" 2> "$OUT/$name.time"
    echo "$name cell at 32768: plan $plan, peak $(peak "$OUT/$name.time")"
done
