#!/usr/bin/env bash
# scripts/repro_smoke.sh - a CI-sized check that every reproduction's code
# path still gives the same bits (`make repro-smoke`;
# docs/REPRODUCTIONS.md#checking-a-reproduction).
#
# Each reproduction configs/repro/NAME.yaml has a slice,
# configs/repro/smoke/NAME.yaml: the same method and task definitions, fewer
# cells, `numerics: portable`; where the reproduction trains a model, the
# slice keeps its architecture and training settings with far fewer steps
# (its header says so: it checks the code path, not the reproduction's
# numbers). This script reruns each slice into a fresh store,
# build/repro-smoke/NAME.db (its models beside it, retrained every time), and
# compares it with the committed snapshot results/repro/smoke/NAME.csv at
# rtol 0 and atol 0 (`lenx compare`): portable numerics give the same bits on
# any AVX2 machine and thread count, so any difference is a change.
#
# Usage: scripts/repro_smoke.sh [--update] [NAME ...]
#   NAME      only these slices (default: every configs/repro/smoke/*.yaml)
#   --update  write the snapshots instead of checking them (after a deliberate
#             change of numbers: say so in the commit)
# Environment: LENX_BIN (default ./lenx), REPRO_SMOKE_OUT (the stores'
# directory), REPRO_SMOKE_SNAPSHOTS (the snapshots' directory: a copy with a
# planted change shows the check failing).
# Exit: 0 every slice gave its snapshot's values; 1 some slice moved (named
# with its values); 2 bad arguments, a failed run, or no snapshot.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lenx=${LENX_BIN:-$root/lenx}
slices=$root/configs/repro/smoke
snapshots=${REPRO_SMOKE_SNAPSHOTS:-$root/results/repro/smoke}   # a copy, to try a planted change
out=${REPRO_SMOKE_OUT:-$root/build/repro-smoke}   # where the fresh stores go
update=0 names=()
for a in "$@"; do
    case $a in
        --update) update=1 ;;
        -*) echo "repro_smoke: unknown argument '$a'"$'\n'"usage: scripts/repro_smoke.sh [--update] [NAME ...]" >&2
            exit 2 ;;
        *) names+=("$a") ;;
    esac
done
if [ ${#names[@]} -eq 0 ]; then
    for f in "$slices"/*.yaml; do names+=("$(basename "$f" .yaml)"); done
fi
mkdir -p "$out" "$snapshots"
moved=() failed=()
t_all=$(date +%s)
for name in "${names[@]}"; do
    config=$slices/$name.yaml snapshot=$snapshots/$name.csv db=$out/$name.db
    if [ ! -f "$config" ]; then
        echo "repro_smoke: no slice $config" >&2
        echo "  hint: one of: $(cd "$slices" && ls *.yaml | sed 's/\.yaml$//' | tr '\n' ' ')" >&2
        exit 2
    fi
    if [ "$update" -eq 0 ] && [ ! -f "$snapshot" ]; then
        echo "repro_smoke: $name: no snapshot $snapshot (hint: scripts/repro_smoke.sh --update $name)" >&2
        failed+=("$name")
        continue
    fi
    sweep=$(sed -n 's/^name:[[:space:]]*\([^[:space:]#]*\).*/\1/p' "$config" | head -1)
    # A fresh store every time: nothing resumed, every model retrained.
    rm -rf "$db" "$db"-* "$out/$name.models" "$out/models"
    t0=$(date +%s)
    if ! "$lenx" run "$config" --db "$db" --quiet --no-table; then
        echo "repro_smoke: $name: lenx run $config failed" >&2
        failed+=("$name")
        continue
    fi
    t1=$(date +%s)
    if [ "$update" -eq 1 ]; then
        "$lenx" table --db "$db" --sweep "$sweep" --format csv > "$snapshot.tmp" && mv "$snapshot.tmp" "$snapshot" ||
            { rm -f "$snapshot.tmp"; echo "repro_smoke: could not write $snapshot" >&2; exit 2; }
        echo "repro_smoke: $name: snapshot written ($(($(wc -l < "$snapshot") - 1)) values; $((t1 - t0)) s)"
        continue
    fi
    "$lenx" compare "$snapshot" "$sweep" --db "$db" --rtol 0 --atol 0 > "$out/$name.compare" 2>&1
    rc=$?
    case $rc in
        0) echo "repro_smoke: $name: same bits as $snapshot ($((t1 - t0)) s)" ;;
        1) cat "$out/$name.compare" >&2
           echo "repro_smoke: $name MOVED from $snapshot (the values above)" >&2
           moved+=("$name") ;;
        *) cat "$out/$name.compare" >&2
           echo "repro_smoke: $name: lenx compare could not match $snapshot (exit $rc)" >&2
           failed+=("$name") ;;
    esac
done
t_all=$(($(date +%s) - t_all))
if [ ${#failed[@]} -gt 0 ]; then
    echo "repro_smoke: FAILED to run or compare: ${failed[*]} (${t_all} s)" >&2
    exit 2
fi
if [ ${#moved[@]} -gt 0 ]; then
    echo "repro_smoke: MOVED: ${moved[*]} (${t_all} s); if the change is meant," \
         "rerun scripts/repro_smoke.sh --update ${moved[*]} and say so in the commit" >&2
    exit 1
fi
echo "repro_smoke: ${#names[@]} slices $([ "$update" -eq 1 ] && echo snapshotted || echo 'reproduce their snapshots at rtol 0') (${t_all} s)"
