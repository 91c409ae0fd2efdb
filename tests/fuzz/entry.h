/*
** tests/fuzz/entry.h - the entry points the fuzz targets and their regression
** test share: one untrusted input in, a clean return out.
**
** Each takes raw bytes, runs them through the same path a user's file takes
** (nothing is run or written beyond a scratch file of the input's own), and
** returns LX_OK or a negative LX_E* code with err->msg filled. A signal, an
** assertion or a sanitizer report on any input is a bug: libFuzzer reports it
** as a crash (`make fuzz`), and the input goes to tests/fuzz/regress/<target>/,
** which tests/test_fuzz_regress.c replays through the same function.
*/
#ifndef LX_FUZZ_ENTRY_H
#define LX_FUZZ_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "harness/core/lx.h"

/* YAML text -> lx_grid_load_text -> lx_plan_build: every plan-time check,
** nothing trained, evaluated or stored. */
int lx_fuzz_feed_config(const uint8_t *data, size_t n, struct lx_error *err);

/* Bytes as a .safetensors file -> lx_st_open (every tensor read back, the
** metadata looked up), then lx_model_load (the lenx checkpoint header: arch,
** training length, every tensor by name and shape), then a sweep planned on
** it as a `checkpoint:` model with its own training stack as the method. */
int lx_fuzz_feed_safetensors(const uint8_t *data, size_t n, struct lx_error *err);

/* Bytes as a llama2.c tokenizer.bin -> lx_tokenizer_open (which sniffs the
** kind: bytes starting with '{' are read as a tokenizer.json). When it opens,
** fixed texts are encoded and decoded and what every tokenizer promises is
** asserted (ids in the vocabulary, decoding its own ids succeeds); for a
** tokenizer.bin also decode(encode(s)) == s for any bytes, and a segment's
** pieces concatenate to s (docs/tokenizers.md#llama2c). */
int lx_fuzz_feed_tokenizer_bin(const uint8_t *data, size_t n, struct lx_error *err);

/* Bytes up to the first NUL as a tokenizer.json, the bytes after it (if
** any) as the tokenizer_config.json beside it -> lx_tokenizer_open, then the
** same texts and promises; text that is not UTF-8 is refused with a message,
** a text past the file's limits (a pattern past pcre2's match limit, growth
** past the cap: docs/tokenizers.md#limits) may be, and any other text encodes
** and the round trips hold where the file's tables guarantee them (a
** byte-level file with every byte a token and nothing lossy in its pipeline). */
int lx_fuzz_feed_tokenizer_json(const uint8_t *data, size_t n, struct lx_error *err);

/* data[0] picks a fixed real tokenizer (0: llama2.c's tok512.bin from
** ../shared/models/stories260K, skipped when absent; 1: its tokenizer.json
** twin tests/ref/stories260K-hf; 2: the byte-level tests/ref/tok_tiny.json),
** the rest is the text. The promises above, plus the round trips each
** guarantees (tok512.bin: any bytes; the twin: UTF-8 without U+2581 or its
** added tokens, with tok512.bin's ids; tok_tiny: segments of UTF-8 without
** its added tokens). */
int lx_fuzz_feed_encode(const uint8_t *data, size_t n, struct lx_error *err);

/* Bytes as a job of `lenx slurm` -> lx_slurm_scripts (harness/scaleout/slurm.h):
** data[0] flags (1 LENX_DATA, 2 --partition, 4 --time, 8 --mem given; 0x10:
** paths as they are, else each with a leading '/'), data[1] shards, data[2]
** cpus / 5, data[3] model tasks; then NUL-separated: sweep name, lenx,
** config, current folder, store, <db dir>/<sweep>, LENX_DATA, partition,
** time, mem. Either a refusal with a message, or scripts where sbatch reads
** exactly one option per #SBATCH line, with the values given, and the shell
** reads what it reads with plain values (tests/slurm_check.h): no value
** leaves its quotes. */
int lx_fuzz_feed_slurm(const uint8_t *data, size_t n, struct lx_error *err);

/* Up to six strings (separated by NUL bytes), as a store may hold them,
** through lx_esc_html, lx_esc_md, lx_esc_latex, lx_esc_csv and gnuplot's
** script (lx_plot_script); each output is checked against its context's
** grammar (tests/fuzz/fuzz_report.c says how) and LX_ASSERT aborts on a
** string that escapes it. Always LX_OK otherwise. */
int lx_fuzz_feed_report(const uint8_t *data, size_t n, struct lx_error *err);

/* data[0] picks a RULER maker reading a user's file (tasks/peer.h; 0: the
** SQuAD QA, 1: HotpotQA QA, 2: cwe's word list, 3: niah_multikey_1's essays
** as RULER's PaulGrahamEssays.json), the rest is that file -> the maker for
** cases 0 and 1 at a short length in byte tokens (1,500; cwe 3,000). Either a refusal with a
** message, or a prompt that fits the length with at least one gold. */
int lx_fuzz_feed_ruler(const uint8_t *data, size_t n, struct lx_error *err);

/* Bytes as a GGUF file -> lx_gguf_parse (every tensor's first and last byte
** read, every key looked up), then lx_model_load from a scratch file: the
** container's checks and the model's. */
int lx_fuzz_feed_gguf(const uint8_t *data, size_t n, struct lx_error *err);

/* Bytes as a Hugging Face config.json beside fixed weights (tests/ref/hf-phi3-tiny's
** model.safetensors: a config of its shapes as any type lenx reads finds its tensors, or names the
** one it misses) -> lx_model_load of the directory: every field's check, rope_scaling and the
** sliding window into the native and evaluation stacks, the tensors found and shaped; a model that
** loads has both stacks compiled as `lenx score` compiles them, at one token and past its length. */
int lx_fuzz_feed_hf_config(const uint8_t *data, size_t n, struct lx_error *err);

/* Bytes as a request to `lenx serve` -> the request parsers
** (harness/backends/openai.c), then the whole answer (lx_serve_handle) on a
** tiny random byte-level model: the first byte picks the endpoint, the
** method and the body's declared type, the rest is the body. Every answer must be JSON with a status it may have; a
** streamed one, events of JSON ending with [DONE]. */
int lx_fuzz_feed_serve(const uint8_t *data, size_t n, struct lx_error *err);

#endif
