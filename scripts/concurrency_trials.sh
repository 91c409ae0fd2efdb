#!/usr/bin/env bash
# scripts/concurrency_trials.sh - the acceptance experiment for concurrent runs
# (docs/results.md, "Several processes on one store").
#
# Two scenarios, TRIALS times each (default 5), every trial in a fresh temp
# directory with a fresh store:
#   same      4 `lenx run` processes of one sweep (2 model keys, 6 cells)
#   disjoint  4 sweeps (d0..d3) sharing one model key, 4 cells each (16 cells)
# and for each trial one line of counts:
#   ok        cells stored ok (want: the planned count)
#   computed  cells computed, summed over the 4 processes' summaries (want: the planned count)
#   dup       rows beyond one per (sweep, key) (want 0)
#   failed    failed rows (want 0)
#   trained   models trained, summed over the 4 processes' summaries (want 2 / 1)
#   claims    claim rows left behind (want 0)
#   integrity PRAGMA integrity_check (want ok)
#   exits     the 4 exit statuses (want 0 0 0 0)
#
# Usage: scripts/concurrency_trials.sh [TRIALS]   (after `make`; uses ./lenx,
#        or the binary named by LENX_BIN, e.g. an older build to compare)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
lenx=${LENX_BIN:-$root/lenx}
trials=${1:-5}
[ -x "$lenx" ] || { echo "concurrency_trials: build ./lenx first (make)" >&2; exit 2; }
export LENX_DATA=${LENX_DATA:-$root/data}

model='models:
  tiny: {arch: {mode: causal, layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64},
         train: {length: 32, batch: 4, steps: 20, warmup: 5, eval_every: 10, eval_windows: 4}}'

write_configs() {   # write_configs SCENARIO: s0.yaml .. s3.yaml in the current dir
    for i in 0 1 2 3; do
        if [ "$1" = same ]; then
            printf 'name: shared\nseed: 1\n%s\nmethods: [rope, nope, [rope, {logn: {mode: qwen}}]]\n' "$model"
        else
            printf 'name: d%d\nseed: 1\n%s\nmethods: [rope, [rope, {logn: {mode: qwen}}]]\n' "$i" "$model"
        fi > s$i.yaml
        printf 'tasks: [{ppl: {windows: 2}}]\nlengths: [32, 64]\n' >> s$i.yaml
    done
}

trial() {   # trial SCENARIO N: one line of counts
    local dir pids=() exits=() db=r.db
    dir=$(mktemp -d /tmp/lenx-trials-XXXXXX)
    (
        cd "$dir"
        write_configs "$1"
        for i in 0 1 2 3; do
            "$lenx" run s$i.yaml --db $db --quiet --no-table > out$i.txt 2>&1 &
            pids+=($!)
        done
        for p in "${pids[@]}"; do
            if wait "$p"; then exits+=(0); else exits+=($?); fi
        done
        q() { sqlite3 $db "$1" 2>/dev/null || echo -; }
        trained=$(grep -ho '[0-9]* models trained' out*.txt | awk '{s += $1} END {print s + 0}')
        computed=$(grep -ho "': [0-9]* run (" out*.txt | awk '{s += $2} END {print s + 0}')
        printf '%-8s trial %d: ok %2s  computed %2d  dup %s  failed %s  trained %d  claims %s  integrity %s  exits %s\n' \
            "$1" "$2" "$(q "select count(*) from runs where status = 'ok'")" "$computed" \
            "$(q "select count(*) - count(distinct sweep || ' ' || key) from runs")" \
            "$(q "select count(*) from runs where status = 'failed'")" "$trained" \
            "$(q "select count(*) from claims")" "$(q 'pragma integrity_check')" "${exits[*]}"
    )
    rm -rf "$dir"
}

for scenario in same disjoint; do
    for t in $(seq 1 "$trials"); do
        trial $scenario "$t"
    done
done
