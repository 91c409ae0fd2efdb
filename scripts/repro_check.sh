#!/usr/bin/env bash
# scripts/repro_check.sh - does a reproduction still give the numbers that
# docs/REPRODUCTIONS.md quotes? (`make repro-check REPRO=NAME`;
# docs/REPRODUCTIONS.md#checking-a-reproduction)
#
# Each reproduction's stored values are committed as a tidy CSV snapshot,
# results/repro/NAME.csv (`lenx table --format csv` of the store the section
# was written from). This script runs configs/repro/NAME.yaml into its own
# store (build/repro/NAME.db: a second call resumes, and trained models are
# cached beside it), then compares the snapshot with the store by cell and
# metric (`lenx compare`): every value must lie within atol + rtol·|snapshot|.
# The default tolerance admits the last-bit differences of another CPU's BLAS
# kernels, not a changed result.
#
# Usage: scripts/repro_check.sh NAME|CONFIG.yaml [--snapshot CSV] [--db FILE]
#            [--rtol R] [--atol A] [--update]
#   --update  write the snapshot from the store instead of checking it (after
#             a deliberate change of numbers: say so in the commit and update
#             the section of docs/REPRODUCTIONS.md)
# Exit: 0 every snapshot value reproduced; 1 some moved (listed); 2 bad
# arguments, a failed run, or no shared cell.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lenx=${LENX_BIN:-$root/lenx}
usage="usage: scripts/repro_check.sh NAME|CONFIG.yaml [--snapshot CSV] [--db FILE] [--rtol R] [--atol A] [--update]"
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
what=$1
shift
snapshot="" db="" rtol=1e-5 atol=1e-6 update=0
while [ $# -gt 0 ]; do
    case $1 in
        --snapshot) snapshot=$2; shift 2 ;;
        --db) db=$2; shift 2 ;;
        --rtol) rtol=$2; shift 2 ;;
        --atol) atol=$2; shift 2 ;;
        --update) update=1; shift ;;
        *) echo "repro_check: unknown argument '$1'"$'\n'"$usage" >&2; exit 2 ;;
    esac
done
case $what in
    *.yaml) config=$what ;;
    *) config=$root/configs/repro/$what.yaml ;;
esac
if [ ! -f "$config" ]; then
    echo "repro_check: no reproduction config $config" >&2
    echo "  hint: one of: $(cd "$root/configs/repro" && ls *.yaml | sed 's/\.yaml$//' | tr '\n' ' ')" >&2
    exit 2
fi
# The sweep's name, as the store keys it: the config's top-level `name:`.
sweep=$(sed -n 's/^name:[[:space:]]*\([^[:space:]#]*\).*/\1/p' "$config" | head -1)
[ -n "$sweep" ] || { echo "repro_check: $config has no top-level 'name:'" >&2; exit 2; }
snapshot=${snapshot:-$root/results/repro/$sweep.csv}
db=${db:-$root/build/repro/$sweep.db}
if [ "$update" -eq 0 ] && [ ! -f "$snapshot" ]; then
    echo "repro_check: no snapshot $snapshot to check against" >&2
    echo "  hint: run once with --update on a store whose numbers docs/REPRODUCTIONS.md quotes" >&2
    exit 2
fi
mkdir -p "$(dirname "$db")"
# Accuracies by needle depth, kept beside the snapshot where a section quotes
# them (NAME.depths.csv; scripts/repro_depths.py): written by --update when the
# file exists, and then checked as well.
depths=${snapshot%.csv}.depths.csv
depths_csv() { "$lenx" table --db "$db" --sweep "$sweep" --series acc_by_depth --format csv; }
t0=$(date +%s)
"$lenx" run "$config" --db "$db" --no-table || { echo "repro_check: lenx run $config failed" >&2; exit 2; }
t1=$(date +%s)
if [ "$update" -eq 1 ]; then
    mkdir -p "$(dirname "$snapshot")"
    "$lenx" table --db "$db" --sweep "$sweep" --format csv > "$snapshot.tmp" && mv "$snapshot.tmp" "$snapshot" ||
        { rm -f "$snapshot.tmp"; echo "repro_check: could not write $snapshot" >&2; exit 2; }
    echo "repro_check: $sweep: snapshot $snapshot written ($(($(wc -l < "$snapshot") - 1)) values; run $((t1 - t0)) s)"
    if [ -f "$depths" ]; then
        depths_csv > "$depths.tmp" && mv "$depths.tmp" "$depths" ||
            { rm -f "$depths.tmp"; echo "repro_check: could not write $depths" >&2; exit 2; }
        echo "repro_check: $sweep: $depths written ($(($(wc -l < "$depths") - 1)) points)"
    fi
    exit 0
fi
"$lenx" compare "$snapshot" "$sweep" --db "$db" --rtol "$rtol" --atol "$atol"
rc=$?
if [ -f "$depths" ] && [ "$rc" -eq 0 ]; then
    # accuracies by depth are counts over samples: the same in portable numerics on every CPU, so compared exactly
    if ! depths_csv | cmp -s - "$depths"; then
        echo "repro_check: $sweep: the accuracies by depth moved from $depths:" >&2
        depths_csv | diff "$depths" - | head -20 >&2
        rc=1
    fi
fi
case $rc in
    0) echo "repro_check: $sweep reproduces $snapshot (rtol $rtol, atol $atol; run $((t1 - t0)) s)" ;;
    1) echo "repro_check: $sweep moved from $snapshot (the values above); if the change is meant," \
            "rerun with --update and update docs/REPRODUCTIONS.md" >&2 ;;
    *) echo "repro_check: $sweep: lenx compare could not match $snapshot against $db (exit $rc)" >&2 ;;
esac
exit "$rc"
