#!/bin/sh
# scripts/bench_serve.sh - `make bench BENCH=serve` (docs/servers.md, "The
# memory bound"): what `lenx serve` holds and takes for one request at the
# size this field studies, against `lenx score` of the same tokens in the same
# run. The random-weight bf16 Llama of Llama-3.2-1B's shape
# (scripts/bench_model.sh 1b, vocabulary 128,256), --numerics bf16, one
# 4,096-token window of Austen text ([BOS] + the first 4,095 tokens `lenx
# score --length 4096` scores). Each request kind on a server of its own
# (its peak is the server's VmHWM after that one request):
#   score  echo, logprobs 5, max_tokens 0: every row's log-probability and top 5
#   gen    8 tokens after the window, temperature 0
#   ll     lm-eval's log-likelihood request: echo, logprobs 1, max_tokens 1,
#          temperature 0 (one pass on lenx's engine: docs/servers.md)
# Prints wall time and peak memory of each against `lenx score` (best of REPS,
# default 2), and the largest |Δ| between the server's log-probabilities and
# the score's NLLs (the same pass: 0 expected).
# usage: [LENX_BIN=path/to/lenx] scripts/bench_serve.sh [REPS] [OUT_DIR]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPS=${1:-2}
OUT=${2:-$ROOT/build/bench-bf16}
LENX=${LENX_BIN:-$ROOT/lenx}    # LENX_BIN: another build to measure (an older commit)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
MODEL=$(sh "$ROOT/scripts/bench_model.sh" 1b "$OUT")
TEXT="$ROOT/data/corpus/austen/test/persuasion.txt"
[ -f "$TEXT" ] || make -C "$ROOT" -s data
head -c 19069 "$TEXT" > "$OUT/text.txt"     # 4,095 Llama-3 tokens (lenx tokenize): with BOS one window of 4,096
: > "$OUT/score.runs"
r=0
while [ $r -lt "$REPS" ]; do
    /usr/bin/time -f "%e %M" -o "$OUT/score.t" "$LENX" score --model "$MODEL" --text "$OUT/text.txt" \
        --length 4096 --numerics bf16 > "$OUT/serve-score.json" 2> "$OUT/score.err" ||
        { cat "$OUT/score.err" >&2; exit 1; }
    cat "$OUT/score.t" >> "$OUT/score.runs"
    r=$((r + 1))
done
/usr/bin/python3 - "$LENX" "$MODEL" "$OUT" "$REPS" <<'PY'
import json, os, signal, subprocess, sys, time, urllib.request
lenx, model, out, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sc = json.load(open(f"{out}/serve-score.json"))
prompt = [128000] + sc["tokens"][:4095]
bodies = {"score": {"prompt": prompt, "echo": True, "logprobs": 5, "max_tokens": 0},
          "gen": {"prompt": prompt, "max_tokens": 8, "temperature": 0},
          "ll": {"prompt": prompt, "echo": True, "logprobs": 1, "max_tokens": 1, "temperature": 0}}

def request(kind):
    pf = f"{out}/serve.port"
    if os.path.exists(pf):
        os.remove(pf)
    srv = subprocess.Popen([lenx, "serve", "--model", model, "--numerics", "bf16", "--port", "0",
                            "--port-file", pf], stderr=open(f"{out}/serve.log", "w"))
    while not (os.path.exists(pf) and os.path.getsize(pf)):
        if srv.poll() is not None:
            sys.exit(open(f"{out}/serve.log").read())
        time.sleep(0.2)
    port = open(pf).read().strip()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", json.dumps(bodies[kind]).encode(),
                                 {"Content-Type": "application/json"})
    t0 = time.time()
    ans = json.load(urllib.request.urlopen(req, timeout=3600))
    wall = time.time() - t0
    hwm = [l for l in open(f"/proc/{srv.pid}/status") if l.startswith("VmHWM")][0].split()[1]
    srv.send_signal(signal.SIGTERM)
    srv.wait()
    return wall, int(hwm) * 1024, ans

runs = [tuple(map(float, l.split())) for l in open(f"{out}/score.runs") if l.strip()]
base_t, base_m = min(r[0] for r in runs), max(r[1] for r in runs) * 1024
print("lenx serve, random bf16 Llama of Llama-3.2-1B's shape, --numerics bf16, a 4,096-token prompt; best of "
      f"{reps}")
print("| request | wall s | peak RSS GiB | × lenx score's peak |")
print("|---|---:|---:|---:|")
print(f"| lenx score --length 4096 (the baseline) | {base_t:.2f} | {base_m/2**30:.2f} | 1.00 |")
for kind in ("score", "gen", "ll"):
    res = [request(kind) for _ in range(reps)]
    wall, peak = min(r[0] for r in res), max(r[1] for r in res)
    print(f"| {kind} | {wall:.2f} | {peak/2**30:.2f} | {peak/base_m:.2f} |")
    if kind in ("score", "ll"):
        lp = res[0][2]["choices"][0]["logprobs"]["token_logprobs"]
        d = max(abs(-lp[j] - sc["nll"][j - 1]) for j in range(1, len(prompt)))
        print(f"  max |server log-probability + score NLL| over {len(prompt) - 1} tokens: {d:.3g}")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
