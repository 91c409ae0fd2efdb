#!/usr/bin/env bash
# scripts/heldout.sh - the held-out stories of stories260K, split `stories`
# (docs/data.md#held-out-stories).
#
# The text is committed: configs/heldout/stories260K/doc_<k>.txt, listed with
# bytes and SHA-256 in configs/heldout/manifest.tsv (split, path, bytes,
# sha256, as data/manifest.tsv). lenx reads that directory and refuses any
# other manifest for corpus: stories (harness/engine/data/corpus.c), so every
# machine evaluates the same bytes.
#
# scripts/heldout.sh [DIR]   (`make heldout`) checks every file of DIR
#   (default configs/heldout) against its manifest, and the manifest against
#   the hash lenx accepts (LX_HELDOUT_SHA256): exit 0 when all match, 1
#   naming each file that is missing or differs.
#
# scripts/heldout.sh --regenerate [--keep] [LENX] [MODEL]
#   redoes the recipe the committed text was made with and reports whether
#   this machine reproduces it byte for byte: story s is `lenx generate` from
#   BOS at temperature 1 with seed s (Philox draws keyed on the seed), up to
#   512 tokens, ending where the model emits BOS; 32 stories a document (one
#   per line), 8 documents, seeds 1 ... 256. It writes into a temporary
#   directory (kept with --keep, or when a document differs), with
#   OMP_NUM_THREADS as set (default 1) and OPENBLAS_CORETYPE as set. The
#   logits differ in their last bits between BLAS kernels and thread counts,
#   and now and then a sampled token flips: a machine need not reproduce the
#   text, which is why it is committed. Exit 0 all 8 documents equal, 1 some
#   differ (listed), 2 bad arguments, no model or a failed
#   `lenx generate`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shipped="$root/configs/heldout"
docs=8 per_doc=32

# check DIR: each manifest line's file, its size and hash; prints the misfits.
check() {
    local dir=$1 bad=0 split rel bytes sha got want
    [ -f "$dir/manifest.tsv" ] || { echo "heldout: no manifest $dir/manifest.tsv" >&2; return 1; }
    while IFS=$'\t' read -r split rel bytes sha; do
        [ "$split" = split ] && continue
        if [ ! -f "$dir/$rel" ]; then
            echo "heldout: $dir/$rel is missing (listed in $dir/manifest.tsv)" >&2
            bad=1
            continue
        fi
        got=$(sha256sum "$dir/$rel" | cut -d' ' -f1)
        if [ "$got" != "$sha" ] || [ "$(stat -c %s "$dir/$rel")" != "$bytes" ]; then
            echo "heldout: $dir/$rel differs from $dir/manifest.tsv: sha256 $got," \
                 "$(stat -c %s "$dir/$rel") bytes; the manifest says $sha, $bytes bytes" >&2
            bad=1
        fi
    done < "$dir/manifest.tsv"
    # the manifest itself: lenx accepts only the hash it was built with
    want=$(grep -rhoE 'define LX_HELDOUT_SHA256 "[0-9a-f]{64}"' "$root/harness" | grep -oE '[0-9a-f]{64}')
    got=$(tail -n +2 "$dir/manifest.tsv" | sha256sum | cut -c1-64)
    if [ "$got" != "$want" ]; then
        echo "heldout: $dir/manifest.tsv is not the committed manifest: its lines hash to $got," \
             "lenx accepts ${want:-?} (LX_HELDOUT_SHA256, harness/engine/data/corpus.h)" >&2
        bad=1
    fi
    return $bad
}

if [ "${1:-}" != --regenerate ]; then
    dir=${1:-$shipped}
    if ! check "$dir"; then
        echo "  hint: the held-out stories are committed text; \`git checkout -- configs/heldout\`" \
             "restores them (docs/data.md#held-out-stories)" >&2
        exit 1
    fi
    echo "heldout: $dir: $(($(wc -l < "$dir/manifest.tsv") - 1)) documents match manifest.tsv" >&2
    exit 0
fi

shift
keep=0
[ "${1:-}" = --keep ] && { keep=1; shift; }
lenx=${1:-"$root/lenx"}
model=${2:-"$root/../shared/models/stories260K/stories260K.bin"}
[ -f "$model" ] || { echo "heldout: no model at $model (the shared models folder beside the checkout)" >&2; exit 2; }
[ -x "$lenx" ] || { echo "heldout: no lenx binary at $lenx (run make)" >&2; exit 2; }
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
out=$(mktemp -d "${TMPDIR:-/tmp}/lenx-heldout.XXXXXX")
mkdir -p "$out/stories260K"
printf 'split\tpath\tbytes\tsha256\n' > "$out/manifest.tsv"
for ((k = 0; k < docs; k++)); do
    f="$out/stories260K/doc_$k.txt"
    : > "$f"
    for ((i = 1; i <= per_doc; i++)); do
        "$lenx" generate --model "$model" --temperature 1 --seed $((k * per_doc + i)) -n 512 >> "$f" ||
            { echo "heldout: lenx generate failed (seed $((k * per_doc + i))); partial text in $out" >&2; exit 2; }
    done
    printf 'stories\tstories260K/doc_%d.txt\t%d\t%s\n' "$k" "$(stat -c %s "$f")" \
        "$(sha256sum "$f" | cut -d' ' -f1)" >> "$out/manifest.tsv"
done
echo "heldout: regenerated with $("$lenx" version | sed 's/.*(//; s/)$//'), OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}" >&2
if cmp -s "$out/manifest.tsv" "$shipped/manifest.tsv"; then
    echo "heldout: reproduced: all $docs documents equal the committed text" >&2
    [ "$keep" -eq 1 ] && echo "heldout: kept in $out" >&2 || rm -rf "$out"
    exit 0
fi
for ((k = 0; k < docs; k++)); do
    rel=stories260K/doc_$k.txt
    cmp -s "$out/$rel" "$shipped/$rel" ||
        echo "heldout: $rel differs: $(cmp "$out/$rel" "$shipped/$rel" 2>&1 | sed 's/^[^ ]* [^ ]* //')" >&2
done
echo "heldout: NOT reproduced on this machine; the regenerated text is in $out" >&2
exit 1
