#!/usr/bin/env bash
# tests/ref/gguf/make_tok.sh - llama.cpp's own token ids for the vocabulary-only GGUF files lenx
# writes (`lenx tokenize --gguf`, docs/tokenizers.md#gguf) of five tokenizers: lenx's byte
# tokenizer, stories260K's llama2.c tok512.bin, and the Llama-2, Llama-3 and Qwen3 tokenizer.json
# files `make tokenizers` fetches. On text.txt and edge.txt, as llama-tokenize gives them (BOS as
# the file says, special tokens parsed: its defaults), into
#   tok_llamacpp.tsv   tokenizer, text, id count, SHA-256 of the ids as int32 little-endian;
#   tok_edge.ids       tokenizer, then every id of edge.txt.
# tests/test_gguf_tok.c compares lenx's ids with them. Not run by the test suite (which must not
# need llama.cpp): run by hand after `make lenx tokenizers`, with LLAMA_BIN naming the bin/
# directory of a llama.cpp build (commit 34af94cd9ab277632e27caeec2d41de2fd091b31 for the files
# committed here; see make.sh for how it was built).
# Usage: LLAMA_BIN=/path/to/llama.cpp/build/bin [LENX=./lenx] tests/ref/gguf/make_tok.sh
set -euo pipefail
cd "$(dirname "$0")"
bin=${LLAMA_BIN:?set LLAMA_BIN to the bin directory of a llama.cpp build}
lenx=${LENX:-../../../lenx}
fetched=../../../build/tokenizers
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$lenx" tokenize --gguf "$tmp/bytes.gguf"
"$lenx" tokenize --tokenizer ../../../../shared/models/stories260K/tok512.bin --gguf "$tmp/tok512.gguf"
for n in llama2 llama3 qwen3; do
    "$lenx" tokenize --tokenizer "$fetched/$n/models/tokenizer.json" --gguf "$tmp/$n.gguf"
done
: > tok_llamacpp.tsv
: > tok_edge.ids
for n in bytes tok512 llama2 llama3 qwen3; do
    for t in text edge; do
        # -f reads the file verbatim, --no-escape keeps any backslash as it is
        "$bin/llama-tokenize" -m "$tmp/$n.gguf" -f $t.txt --ids --no-escape --log-disable 2>/dev/null > "$tmp/ids"
        /usr/bin/python3 - "$n" "$t.txt" "$tmp/ids" >> tok_llamacpp.tsv <<'PY'
import hashlib, json, struct, sys
ids = json.load(open(sys.argv[3]))
digest = hashlib.sha256(struct.pack('<%di' % len(ids), *ids)).hexdigest()
print('%s\t%s\t%d\t%s' % (sys.argv[1], sys.argv[2], len(ids), digest))
PY
        if [ $t = edge ]; then
            printf '%s\t%s\n' $n "$(tr -d '[],\n' < "$tmp/ids")" >> tok_edge.ids
        fi
    done
done
