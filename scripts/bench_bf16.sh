#!/bin/sh
# scripts/bench_bf16.sh - `make bench BENCH=bf16` (docs/PERFORMANCE.md,
# "bf16"): the weight products of Llama-3.2-1B's shape at 4,096 rows in fp32,
# from bf16 weights and in numerics bf16, and its tiled attention at 4k and
# 16k tokens in fp32 and bf16 (lenx-bench bf16), then whole
# `lenx score` runs of a random-weight bf16 Llama of that shape
# (scripts/bench_model.sh 1b: 1.24B parameters, 2.47 GB, written once into
# build/bench-bf16/) on one
# 4,096-token window of Austen text, alternating, REPS times a side
# (default 2):
#   fast   fp32 products on the bf16 weights used in place (lenx's fp32)
#   bf16   --numerics bf16 (oneDNN)
# and 4-token scores (the load; in numerics bf16 it packs the weights into
# oneDNN's layout, docs/numerics.md#packed-weights). Prints wall time, tokens per second, the
# ratio bf16 / fast, peak RSS against `lenx show model --length 4096`'s plan
# (file + activations), and whether both sides scored the same tokens.
# Timings mean something only on a quiet machine (the load average is printed).
# SHAPE 8b (`make bench BENCH=bf16-8b`: REPS 1, build/bench-8b) runs the whole
# scores alone on Llama-3.1-8B's shape instead (8.03B parameters, 16.1 GB in
# four shards, about 8 minutes to write; needs about 17 GB of memory and
# 33 GB of disk with its GGUF beside it, docs/PERFORMANCE.md "An 8B shape").
# usage: scripts/bench_bf16.sh [REPS] [OUT_DIR] [SHAPE]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHAPE=${3:-1b}
REPS=${1:-2}
OUT=${2:-$ROOT/build/bench-bf16}
LENX="$ROOT/lenx"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$SHAPE" = 1b ]; then
    "$ROOT/build/lenx-bench" bf16
    echo
fi
MODEL=$(sh "$ROOT/scripts/bench_model.sh" "$SHAPE" "$OUT")
TEXT="$ROOT/data/corpus/austen/test/persuasion.txt"
[ -f "$TEXT" ] || make -C "$ROOT" -s data
head -c 19069 "$TEXT" > "$OUT/text.txt"     # 4,095 Llama-3 tokens (lenx tokenize): with BOS one window of 4,096
head -c 20 "$TEXT" > "$OUT/four.txt"
field() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
score() {   # side, numerics, text
    /usr/bin/time -f "%e %M" -o "$OUT/$1.t" "$LENX" score --model "$MODEL" --text "$3" --length 4096 \
        --numerics "$2" > "$OUT/$1.json" 2> "$OUT/$1.err" || { cat "$OUT/$1.err" >&2; exit 1; }
    cat "$OUT/$1.t" >> "$OUT/$1.runs"
}
for side in load load16 fast bf16; do : > "$OUT/$side.runs"; done
score load fast "$OUT/four.txt"     # warms the page cache and the hash cache
r=0
while [ $r -lt "$REPS" ]; do
    score load fast "$OUT/four.txt"
    score load16 bf16 "$OUT/four.txt"
    score fast fast "$OUT/text.txt"
    score bf16 bf16 "$OUT/text.txt"
    r=$((r + 1))
done
n=$(field "$OUT/fast.json" n_tokens)
plan_of() { "$LENX" show model "$MODEL" --length 4096 --numerics "$1" |
    /usr/bin/python3 -c "import json,sys; m=json.load(sys.stdin)['memory']; print(m['score_bytes'])"; }
/usr/bin/python3 - "$OUT" "$n" "$(plan_of fast)" "$(plan_of bf16)" "$SHAPE" <<'PY'
import json, sys
out, n, plans, shape = sys.argv[1], int(sys.argv[2]), dict(fast=float(sys.argv[3]), bf16=float(sys.argv[4])), sys.argv[5]
def runs(side):
    return [tuple(map(float, l.split())) for l in open(f"{out}/{side}.runs") if l.strip()]
sides = ("load", "load16", "fast", "bf16")
best = {s: min(r[0] for r in runs(s)) for s in sides}
rss = {s: max(r[1] for r in runs(s)) * 1024 for s in sides}
f, b = (json.load(open(f"{out}/{s}.json")) for s in ("fast", "bf16"))
name = {"1b": "Llama-3.2-1B", "8b": "Llama-3.1-8B"}[shape]
print(f"lenx score, random bf16 Llama of {name}'s shape, {n} tokens, windows of 4,096; best of the runs")
print(f"  blas: {b['blas']}")
print("| side | wall s | tokens/s | peak RSS GiB | of plan | mean NLL |")
print("|---|---:|---:|---:|---:|---:|")
print(f"| load: 4 tokens | {best['load']:.2f} | | {rss['load']/2**30:.2f} | | |")
print(f"| load in bf16 (packing): 4 tokens | {best['load16']:.2f} | | {rss['load16']/2**30:.2f} | | |")
for s, d in (("fast", f), ("bf16", b)):
    print(f"| {s} | {best[s]:.2f} | {n/best[s]:.0f} | {rss[s]/2**30:.2f} | {rss[s]/plans[s]:.2f} | {d['mean_nll']:.4f} |")
print(f"bf16 / fast: {best['fast']/best['bf16']:.2f}x; plans (weights + activations, show model --length 4096 "
      f"--numerics fast|bf16): {plans['fast']/2**30:.2f} and {plans['bf16']/2**30:.2f} GiB; "
      f"same tokens: {f['tokens'] == b['tokens']}")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
