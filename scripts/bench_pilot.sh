#!/bin/sh
# scripts/bench_pilot.sh - `make bench BENCH=pilot` (docs/PERFORMANCE.md, "A step's team, chosen
# by timing both"): decoding steps and portable training steps run on the team, on one thread,
# and as the pilot (harness/engine/model/pilot.h) chooses (LENX_TEAM=team, one, pilot), on a
# quiet machine and beside a process spinning on one core, in one run:
#   decode  `lenx generate --ids -n 65 --timings` on the random-weight bf16 Llama of
#           Llama-3.2-1B's shape (scripts/bench_model.sh 1b): a step's milliseconds
#   train   configs/quick.yaml's model (portable numerics) for 200 steps: the training's seconds
# Each on all the cores (OMP_NUM_THREADS unset); ROUNDS (default 3) rounds alternate the three
# modes; prints each one's median, the pilot's ratio to the other two and where the pilot ran
# its steps (decode: the steps after the prompt; train: the steps of the run), a round at a time.
# With --replay (`make bench BENCH=pilot-replay`, "A probe's yardstick" there) it runs ROUNDS
# (default 4) decodes of 128 steps each with LENX_TEAM=team and one, quiet and beside the
# spinner, each step's seconds written by LENX_PILOT_TRACE into
# OUT_DIR/pilot-traces/{quiet,spin}-{team,one}-N.txt, then replays the pilot's rule on every
# pairing of a team run with a one-thread run (`lenx-bench pilotreplay`, tests/bench_pilot.c).
# usage: [LENX_BIN=path/to/lenx] scripts/bench_pilot.sh [--replay] [ROUNDS] [OUT_DIR]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPLAY=
[ "${1:-}" != --replay ] || { REPLAY=1; shift; }
ROUNDS=${1:-${REPLAY:+4}}
ROUNDS=${ROUNDS:-3}
OUT=${2:-$ROOT/build/bench-bf16}
LENX=${LENX_BIN:-$ROOT/lenx}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
MODEL=$(sh "$ROOT/scripts/bench_model.sh" 1b "$OUT")
TEXT="$ROOT/data/corpus/austen/test/persuasion.txt"
[ -f "$TEXT" ] || make -C "$ROOT" -s data
unset OMP_NUM_THREADS
if [ -n "$REPLAY" ]; then
    DIR=$OUT/pilot-traces
    PROMPT=$(head -c 200 "$TEXT")
    rm -rf "$DIR"
    mkdir -p "$DIR"
    SPIN=
    trap '[ -z "$SPIN" ] || kill $SPIN' EXIT
    for load in quiet spin; do
        if [ $load = spin ]; then
            sh -c 'while :; do :; done' &
            SPIN=$!
        fi
        r=1
        while [ $r -le "$ROUNDS" ]; do
            for mode in team one; do
                LENX_TEAM=$mode LENX_PILOT_TRACE="$DIR/$load-$mode-$r.txt" "$LENX" generate --ids --model "$MODEL" \
                    --prompt "$PROMPT" -n 129 > /dev/null
            done
            r=$((r + 1))
        done
    done
    kill $SPIN
    SPIN=
    exec "$ROOT/build/lenx-bench" pilotreplay "$DIR"
fi
/usr/bin/python3 - "$LENX" "$MODEL" "$OUT" "$ROUNDS" "$TEXT" <<'PY'
import os, re, shutil, statistics, subprocess, sys
lenx, model, out, rounds, text = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
prompt = open(text, encoding="utf-8").read()[:200]
work = os.path.join(out, "pilot-train")
yaml = """name: pilotbench
seed: 1
numerics: portable
models:
  small:
    arch: {mode: causal, layers: 2, d_model: 128, heads: 4, d_head: 32, d_mlp: 512}
    train: {length: 128, batch: 16, steps: 200, lr: 3e-3, warmup: 50, eval_every: 100}
methods: [rope]
tasks: [{ppl: {windows: 1}}]
lengths: [128]
"""

def run(cmd, mode, cwd=None):
    env = dict(os.environ, LENX_TEAM=mode)
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)} (LENX_TEAM={mode}) failed:\n{p.stderr}")
    return p.stderr

def decode(mode):
    err = run([lenx, "generate", "--ids", "--model", model, "--prompt", prompt, "-n", "65", "--timings"], mode)
    m = re.search(r"(\d+) on \d+ threads, (\d+) on one, (\d+) probes?, (\d+) switch", err)
    split = f"{m.group(1)} team, {m.group(2)} one, {m.group(3)} probes, {m.group(4)} switches" if m else "?"
    return float(re.search(r"([0-9.]+) ms a step", err).group(1)), split

def train(mode):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    open(os.path.join(work, "b.yaml"), "w").write(yaml)
    err = run([lenx, "run", "b.yaml", "--db", "b.db", "--no-table"], mode, cwd=work)
    m = re.search(r"(\d+) of (\d+) steps ran on one thread", err)
    split = f"{m.group(1)} of {m.group(2)} steps on one" if m else "no switch: the team but for probes"
    return float(re.search(r"tokens in ([0-9.]+) s", err).group(1)), split

modes = ["team", "pilot", "one"]
for load in ("quiet", "beside a spinning process"):
    spin = subprocess.Popen(["sh", "-c", "while :; do :; done"]) if load != "quiet" else None
    try:
        for what, fn, unit in (("decode", decode, "ms a step"), ("train", train, "s")):
            got = {m: [] for m in modes}
            splits = []
            for r in range(rounds):
                for m in modes:
                    v, split = fn(m)
                    got[m].append(v)
                    if m == "pilot":
                        splits.append(split)
            med = {m: statistics.median(got[m]) for m in modes}
            print(f"{what}, {load}: " + ", ".join(f"{m} {med[m]:.1f} {unit}" for m in modes))
            for m in ("team", "one"):
                ratios = " ".join(f"{got[m][r] / got['pilot'][r]:.2f}" for r in range(rounds))
                print(f"    {m} / pilot, a round at a time: {ratios}")
            print("    the pilot's steps, a round at a time: " + "; ".join(splits))
    finally:
        if spin:
            spin.kill()
PY
