#!/usr/bin/env bash
# scripts/check_sizes.sh - the size limits of docs/development.md#size-limits:
# small pieces a reader can take in at once.
#
# Fails (exit 1), listing each offender, when under harness/ methods/ tasks/
# results/
#   1. a function is longer than 80 lines (from the first line of its
#      signature to its closing brace);
#   2. a .c file is longer than 1,000 lines (800 under harness/engine/, whose
#      rooms split a file at its seams before it grows past that);
#   3. a method or task plugin (a file named in methods/methods.def or
#      tasks/tasks.def) is longer than 300 lines.
# Functions are found by the house layout: a signature starting in column 0,
# the body's `{` alone at the start of a line and its `}` at depth 0; braces
# inside strings, character constants and comments do not count. Functions a
# macro defines (inside #define) are not seen.
#
# Usage: scripts/check_sizes.sh [ROOT] (default: the checkout holding this
# script). Prints one "ok" line on success.
set -euo pipefail
export LC_ALL=C
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$root"
max_fn=80 max_file=1000 max_engine=800 max_plugin=300

mapfile -t files < <(find harness methods tasks results -name '*.c' -type f 2>/dev/null | sort)
bad=0

# 1. functions
if ((${#files[@]})); then
    if ! awk -v max="$max_fn" '
        FNR == 1 { depth = 0; in_comment = 0; sig = 0; fn = 0 }
        {
            line = $0
            # strip comments (tracking /* ... */ across lines), strings and char constants
            out = ""
            while (length(line) > 0) {
                if (in_comment) {
                    e = index(line, "*/")
                    if (e == 0) { line = ""; break }
                    line = substr(line, e + 2); in_comment = 0; continue
                }
                if (match(line, /\/\*|\/\/|"|\047/) == 0) { out = out line; break }
                out = out substr(line, 1, RSTART - 1)
                tok = substr(line, RSTART, RLENGTH); line = substr(line, RSTART + RLENGTH)
                if (tok == "/*") { in_comment = 1; continue }
                if (tok == "//") { line = ""; break }
                q = tok  # skip to the closing quote, honouring backslashes
                while (length(line) > 0) {
                    c = substr(line, 1, 1)
                    if (c == "\\") { line = substr(line, 3); continue }
                    line = substr(line, 2)
                    if (c == q) break
                }
            }
            if (depth == 0 && !fn) {
                if ($0 ~ /^[A-Za-z_]/ && $0 !~ /^#/ && out ~ /\(/ && out !~ /[;=][ \t]*$/) {
                    sig = FNR
                    name = out; sub(/\(.*/, "", name); n = split(name, w, /[ \t*]+/); name = w[n]
                } else if ($0 ~ /^\{/ && sig) {
                    fn = 1
                } else if ($0 ~ /^[ \t]*$/ || out ~ /;[ \t]*$/) {
                    sig = 0
                }
            }
            t = out; opens = gsub(/\{/, "", t); t = out; closes = gsub(/\}/, "", t)
            depth += opens - closes
            if (fn && depth == 0) {
                len = FNR - sig + 1
                if (len > max) {
                    printf "%s:%d: function %s is %d lines (at most %d)\n", FILENAME, sig, name, len, max
                    status = 1
                }
                fn = 0; sig = 0
            }
        }
        END { exit status }' "${files[@]}"; then
        bad=1
    fi
fi

# 2. files
for f in "${files[@]}"; do
    n=$(wc -l < "$f")
    if [[ $f == harness/engine/* ]] && ((n > max_engine)); then
        echo "$f: $n lines (an engine file has at most $max_engine)"
        bad=1
    elif ((n > max_file)); then
        echo "$f: $n lines (a file has at most $max_file)"
        bad=1
    fi
done

# 3. plugins
for kind in methods/methods.def:LX_METHOD tasks/tasks.def:LX_TASK; do
    def=${kind%%:*} macro=${kind##*:}
    [[ -f $def ]] || continue
    for name in $(sed -n "s/^$macro(\([A-Za-z0-9_]*\)).*/\1/p" "$def"); do
        f=$(dirname "$def")/$name.c
        [[ -f $f ]] || continue
        n=$(wc -l < "$f")
        if ((n > max_plugin)); then
            echo "$f: $n lines (a method or task file has at most $max_plugin)"
            bad=1
        fi
    done
done

if ((bad)); then
    echo "check_sizes: some pieces are too large (docs/development.md#size-limits)" >&2
    exit 1
fi
echo "ok: functions <= $max_fn lines, files <= $max_file (engine $max_engine), method/task files <= $max_plugin"
