/*
** harness/engine/tokenizers/tokenizer.h - one tokenizer interface over three kinds
** (docs/tokenizers.md), and what the tasks need of it (docs/tasks.md#tokenizers):
**
**   kind           file                                     ids
**   bytes          none (lenx's own models)                 0..255 bytes, BOS/EOS/PAD/MASK 256..259
**   sentencepiece  llama2.c tokenizer.bin, or tokenizer.json  SentencePiece-style BPE with byte
**                  with a BPE model and byte_fallback         fallback (Llama-2, Mistral, TinyLlama)
**   bytelevel      tokenizer.json with a ByteLevel            byte-level BPE (GPT-2, SmolLM, Qwen2/3,
**                  pre-tokenizer or decoder                    Llama-3)
** and a GGUF file's tokenizer.ggml.* keys: "llama" is sentencepiece, "gpt2"
** bytelevel, a file lenx wrote for its own models bytes (docs/tokenizers.md#gguf).
**
** lx_tokenizer_open reads a file (or a directory holding tokenizer.json) and
** picks the kind from the table of tokenizers/kinds.def; every later call goes
** through the ops of that kind. To add a kind: a file
** harness/engine/tokenizers/tok_<kind>.c exporting one
** `const struct lx_tok_kind lx_tok_kind_<kind>` (tok_common.h) that fills a
** struct lx_tokenizer with its own const ops, and one line in kinds.def.
**
** Segments. The tasks build a prompt from pieces of text (tasks/retrieval.h)
** and need its ids to decode to the pieces' concatenation exactly, so they
** encode with LX_ENC_SEGMENT: the text as given, without the dummy prefix a
** format adds in front of a whole text (llama2.c's leading space, a
** tokenizer.json's Prepend normalizer or ByteLevel add_prefix_space). The
** lx_tok_* helpers at the end encode that way, and read text back one id at a
** time through the kind's `piece` op (the bytes an id stands for inside a text,
** before any decoder strips a leading space).
*/
#ifndef LX_TOKENIZER_H
#define LX_TOKENIZER_H

#include <stdint.h>

#include "harness/engine/tokenizers/tok_common.h"

/* Open a tokenizer: PATH is a llama2.c tokenizer.bin, a tokenizer.json, or a
** directory holding tokenizer.json (else tokenizer.bin). Errors name the file and, for JSON, the
** field (an unsupported "model.type" such as WordPiece or Unigram, say). */
int lx_tokenizer_open(struct lx_tokenizer **out, const char *path, struct lx_error *err);

/* The tokenizer file in directory dir: dir/tokenizer.json, else
** dir/tokenizer.bin (malloc'd), or NULL when it holds neither. */
char *lx_tokenizer_in_dir(const char *dir);

/* Copy a tokenizer file (a tokenizer's path) into directory dir (created
** when missing) as tokenizer.json or tokenizer.bin, by its content, with a
** tokenizer_config.json that lies beside a tokenizer.json; the bytes copied
** must still hash to sha256 (the tokenizer's hash). What a checkpoint trained
** on a tokenizer and `lenx export --hf` keep with the model. */
int lx_tokenizer_copy(const char *file, const char *sha256, const char *dir, struct lx_error *err);

/* The byte tokenizer of lenx's own models (ids as in corpus.h): a constant,
** never released; lx_tokenizer_bytes_new() returns a copy to free. */
extern const struct lx_tokenizer lx_byte_tokenizer;
struct lx_tokenizer *lx_tokenizer_bytes_new(void);

void lx_tokenizer_free(struct lx_tokenizer *t);     /* accepts NULL and &lx_byte_tokenizer */

/* Put the tokenizer.ggml.* keys of t (NULL: the byte tokenizer) into o, such
** that llama.cpp's llama-tokenize on the file encodes as
** lx_tokenizer_encode(LX_ENC_SPECIALS) does, and lx_tokenizer_open reads it
** back to the same ids (docs/tokenizers.md#gguf): a byte-level tokenizer.json
** as "gpt2", a SentencePiece one (tokenizer.bin, tokenizer.json, GGUF) as
** "llama", the byte tokenizer as "gpt2" with lenx.tokenizer = "bytes".
** LX_EINVAL naming the file and what a GGUF vocabulary cannot say (a
** pre-tokenizer llama.cpp has no name for, say). */
int lx_tokenizer_to_gguf(const struct lx_tokenizer *t, struct lx_gguf_out *o, struct lx_error *err);

/* A vocabulary-only GGUF file at path (general.architecture "llama" with the
** few hyper-parameters llama.cpp reads when it opens one vocab-only, no
** tensor), as llama.cpp's models/ggml-vocab-*.gguf: what `lenx tokenize
** --gguf` writes for llama-tokenize. */
int lx_tokenizer_write_gguf(const struct lx_tokenizer *t, const char *path, struct lx_error *err);

/* Append the ids of text[0, n) to out, with BOS/EOS as flags ask. Input a
** tokenizer.json tokenizer cannot take (invalid UTF-8) is LX_EINVAL naming
** the byte offset. */
int lx_tokenizer_encode(const struct lx_tokenizer *t, const char *text, size_t n, unsigned flags,
                        struct lx_ids *out, struct lx_error *err);

/* Append the text of ids to out (out->len counts its bytes, which may include
** NUL), through the format's decoder. An id outside the vocabulary is
** LX_EINVAL naming its index. */
int lx_tokenizer_decode(const struct lx_tokenizer *t, const int32_t *ids, long n, struct lx_buf *out,
                        struct lx_error *err);

/* ---- what the tasks use (segments, one id at a time) ---- */

/* t, or the byte tokenizer when t is NULL (a task context built without one). */
static inline const struct lx_tokenizer *lx_tok_or_byte(const struct lx_tokenizer *t)
{
    return t ? t : &lx_byte_tokenizer;
}

/* The id every window and instance begins with: BOS, or EOS for a tokenizer
** without one (GPT-2's <|endoftext|> convention). */
static inline int lx_tok_begin(const struct lx_tokenizer *t)
{
    return t->bos >= 0 ? t->bos : t->eos;
}

/* A causal window's T inputs from the text s: [begin, s0 .. s_{T-2}], or
** s0 .. s_{T-1} for a model trained without a start token (begin < 0). */
static inline void lx_window_input(int *tok, const int *s, long T, int begin)
{
    int shift = begin >= 0;
    if (shift)
        tok[0] = begin;
    for (long t = shift; t < T; t++)
        tok[t] = s[t - shift];
}

/* 1 when llama.cpp puts BOS before a text in t's vocabulary (its add_bos, as
** lenx writes it to a GGUF file or reads it from one): the byte tokenizer's
** files say so; a Hugging Face tokenizer adds it when its template does
** (GPT-2-style ones, Qwen's, a Llama 3 tokenizer.json without the template,
** do not). */
static inline int lx_tok_llamacpp_bos(const struct lx_tokenizer *t)
{
    return t->is_byte || t->add_bos;
}

/* LX_OK when t has an id to begin a window with (lx_tok_begin >= 0); else
** LX_EINVAL naming the file: a tokenizer.json with neither BOS nor EOS opens
** (lenx tokenize reads it) but cannot serve a model. */
int lx_tok_check_begin(const struct lx_tokenizer *t, struct lx_error *err);

/* Encode s[0, n) as a segment (LX_ENC_SEGMENT, no BOS/EOS) into a new array
** (*ids, malloc'd, NULL when empty); returns the count, or a negative code
** (text the tokenizer cannot take) with err filled. */
long lx_tok_encode(const struct lx_tokenizer *t, const char *s, long n, int32_t **ids, struct lx_error *err);
/* [begin] + the ids of text[0, n) read as a prompt, the way llama2.c's run.c
** and Hugging Face tokenizers read one (a SentencePiece tokenizer's dummy
** prefix included) into a new array (*ids, malloc'd); returns the count, or a
** negative code (text the tokenizer cannot take, *ids NULL). */
long lx_tok_prompt(const struct lx_tokenizer *t, const char *text, size_t n, int **ids, struct lx_error *err);
/* The bytes id stands for inside a text (*len of them); NULL, *len = 0, for
** an id without text of its own or outside the vocabulary. */
const char *lx_tok_piece(const struct lx_tokenizer *t, int32_t id, size_t *len);
/* The text of ids[0, n) into out (lx_tok_decode_cap bytes, NUL-terminated):
** the pieces concatenated, up to the first id without text (or outside the
** vocabulary); returns the bytes written. *stop = that id, or -1 when none. */
long lx_tok_decode(const struct lx_tokenizer *t, const int32_t *ids, long n, char *out, int *stop);
long lx_tok_decode_cap(const struct lx_tokenizer *t, long n);
/* Bytes of text id stands for (0 for an id without text). */
long lx_tok_bytes(const struct lx_tokenizer *t, int32_t id);
/* "bos", "eos", "pad", "mask" for a special id of t, "unknown" for other ids
** without text, NULL for -1. */
const char *lx_tok_special_name(const struct lx_tokenizer *t, int id);

#endif
