#!/usr/bin/env bash
# scripts/check_citations.sh - every citation in lenx points at something a
# reader of the repository can open (docs/development.md#style).
#
# Fails (exit 1), listing file:line, when
#   1. a file cites a design note kept outside the repository: shared/reference,
#      "methods.md §", "tasks.md §", corpora.md, DESIGN.md, STYLE.md or
#      style-anchors (cite the paper and a section of docs/ instead);
#   2. a citation docs/X.md#anchor names a file or a heading that does not
#      exist. Anchors follow GitHub's rule for the heading text: lowercase,
#      spaces to '-', punctuation other than '-' and '_' dropped (ASCII, and the
#      common non-ASCII dashes, quotes and signs such as — × ·), and a repeated
#      heading gets -1, -2, ... Headings inside ``` fences do not count.
#
# Checks the tracked files (or, outside git, every file) under the folders
# below; binary files are skipped. Usage: scripts/check_citations.sh [ROOT]
# (default: the checkout holding this script). Prints one "ok" line on success.
set -euo pipefail
export LC_ALL=C
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$root"
paths=(methods harness tasks results docs configs scripts tests README.md)
self=scripts/check_citations.sh

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files -- "${paths[@]}" | grep -vxF "$self")
else
    mapfile -t files < <(find "${paths[@]}" -type f 2>/dev/null | grep -vxF "$self")
fi
# Drop binary files (grep -I treats them as non-matching), and missing or
# empty ones; one grep for all (a process per file is slow on a busy machine).
mapfile -t files < <(grep -Il '' -- "${files[@]}" 2>/dev/null || true)

fail=0

# 1. Citations of documents outside the repository.
outside='shared/reference|methods\.md §|tasks\.md §|corpora\.md|DESIGN\.md|STYLE\.md|style-anchors'
if hits=$(grep -nE "$outside" -- "${files[@]}"); then
    printf '%s\n' "$hits" | sed 's/$/    <- cites a document outside the repository/'
    fail=1
fi

# The GitHub anchors of every heading of one Markdown file, one per line.
anchors() {
    awk '
        /^ *(```|~~~)/ { fence = !fence; next }
        fence { next }
        /^##?#?#?#?#?[ \t]/ {
            h = $0
            sub(/^#+[ \t]+/, "", h); sub(/[ \t]+#+[ \t]*$/, "", h); sub(/[ \t]+$/, "", h)
            print h
        }' "$1" |
        tr 'A-Z' 'a-z' |
        tr -d '!"#$%&'"'"'()*+,./:;<=>?@[\\]^`{|}~' |
        sed 's/\xe2\x80[\x90-\xbf]//g; s/\xc2[\xa0-\xbf]//g; s/\xc3[\x97\xb7]//g' |
        tr ' ' '-' |
        awk '{ if ($0 in seen) print $0 "-" seen[$0]++; else { print; seen[$0] = 1 } }'
}

# 2. Every docs/X.md#anchor must name a heading of docs/X.md (each page's
# anchors computed once, as "\n"-framed lines, and matched without a process).
n_cites=0
declare -A page_anchors
while IFS= read -r hit; do
    loc=${hit%%:docs/*}                 # file:line
    cite=${hit#"$loc":}                 # docs/X.md#anchor
    doc=${cite%%#*}
    anchor=${cite#*#}
    n_cites=$((n_cites + 1))
    if [ ! -f "$doc" ]; then
        echo "$loc: $cite    <- no such file"
        fail=1
    else
        [ -n "${page_anchors[$doc]+x}" ] || page_anchors[$doc]=$'\n'"$(anchors "$doc")"$'\n'
        if [[ ${page_anchors[$doc]} != *$'\n'"$anchor"$'\n'* ]]; then
            echo "$loc: $cite    <- no heading of $doc has this anchor"
            fail=1
        fi
    fi
done < <(grep -noE 'docs/[A-Za-z0-9_./-]+\.md#[A-Za-z0-9_-]+' -- "${files[@]}" || true)

if [ "$fail" -ne 0 ]; then
    echo "check_citations: FAILED (cite the paper and a docs/ section that exists)" >&2
    exit 1
fi
echo "check_citations: ok (${#files[@]} files, $n_cites docs/ anchors)"
