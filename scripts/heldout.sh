#!/usr/bin/env bash
# scripts/heldout.sh - `make heldout`: held-out in-distribution text for
# stories260K, sampled from the model itself (docs/data.md#held-out-stories).
#
# No TinyStories corpus can be installed here, so the "stories" split is the
# model's own samples: story s is `lenx generate` from BOS at temperature 1
# with seed s (Philox draws keyed on the seed: the same text on every machine
# that computes the same logits), up to 512 tokens, ending where the model
# emits BOS. Documents of 32 stories each (one per line) make windows of up to
# 4096 tokens possible; 8 documents, seeds 1 ... 256. Output:
#   build/heldout/stories260K/doc_<k>.txt and build/heldout/manifest.tsv
#   (split, path, bytes, sha256, as data/manifest.tsv), whose hash enters the
#   run key of every cell that reads corpus: stories.
# Usage: scripts/heldout.sh [LENX] [MODEL] [OUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
lenx=${1:-"$root/lenx"}
model=${2:-"$root/../shared/models/stories260K/stories260K.bin"}
out=${3:-"$root/build/heldout"}
docs=8 per_doc=32
[ -f "$model" ] || { echo "heldout: no model at $model (the shared models folder beside the checkout)" >&2; exit 2; }
mkdir -p "$out/stories260K"
tmp="$out/manifest.tsv.tmp"
printf 'split\tpath\tbytes\tsha256\n' > "$tmp"
for ((k = 0; k < docs; k++)); do
    f="$out/stories260K/doc_$k.txt"
    : > "$f"
    for ((i = 1; i <= per_doc; i++)); do
        seed=$((k * per_doc + i))
        OMP_NUM_THREADS=1 "$lenx" generate --model "$model" --temperature 1 --seed "$seed" -n 512 >> "$f"
    done
    printf 'stories\tstories260K/doc_%d.txt\t%d\t%s\n' "$k" "$(stat -c %s "$f")" \
        "$(sha256sum "$f" | cut -d' ' -f1)" >> "$tmp"
done
mv "$tmp" "$out/manifest.tsv"
echo "heldout: $docs documents of $per_doc stories in $out" >&2
