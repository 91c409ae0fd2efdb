/*
** harness/engine/tokenizer.h - one tokenizer interface over three kinds
** (docs/tokenizers.md):
**
**   kind           file                                     ids
**   bytes          none (lenx's own models)                 0..255 bytes, BOS/EOS/PAD/MASK 256..259
**   sentencepiece  llama2.c tokenizer.bin, or tokenizer.json  SentencePiece-style BPE with byte
**                  with a BPE model and byte_fallback         fallback (Llama-2, Mistral, TinyLlama)
**   bytelevel      tokenizer.json with a ByteLevel            byte-level BPE (GPT-2, SmolLM, Qwen2/3,
**                  pre-tokenizer or decoder                    Llama-3)
**
** lx_tokenizer_open reads a file (or a directory holding tokenizer.json) and
** picks the kind; every later call goes through the ops of that kind. To add a
** kind: a file harness/engine/tok_<kind>.c filling a struct lx_tokenizer with
** its own const ops, and a branch in lx_tokenizer_open.
*/
#ifndef LX_TOKENIZER_H
#define LX_TOKENIZER_H

#include <stdint.h>

#include "harness/core/lx.h"

/* A growable list of token ids. Zero-initialise, push, then free. */
struct lx_ids {
    int32_t *id;    /* (cap,) ids, the first n used */
    long n;         /* ids held */
    long cap;       /* ids allocated */
};

void lx_ids_push(struct lx_ids *v, int32_t id);
void lx_ids_free(struct lx_ids *v);

struct lx_tokenizer;

struct lx_tok_ops {
    const char *kind;   /* "bytes", "sentencepiece" or "bytelevel" */
    /* Append the ids of text[0, n) (without BOS/EOS) to out. */
    int (*encode)(const struct lx_tokenizer *t, const char *text, size_t n, struct lx_ids *out,
                  struct lx_error *err);
    /* Append the text of ids[0, n) to out; every id is already checked < n_vocab. */
    void (*decode)(const struct lx_tokenizer *t, const int32_t *ids, long n, struct lx_buf *out);
    void (*free)(void *impl);   /* releases impl; NULL when there is nothing to free */
};

struct lx_tokenizer {
    const struct lx_tok_ops *ops;   /* the kind's operations */
    void *impl;                     /* the kind's own tables */
    char *path;                     /* the file read ("" for bytes) */
    long n_vocab;                   /* ids are 0 .. n_vocab-1 (added tokens included) */
    int32_t bos, eos;               /* begin/end of sequence ids, -1 when the format has none */
    int add_bos, add_eos;           /* whether the format's post-processing adds them */
    char hash[65];                  /* SHA-256 of the file's bytes (of a fixed text for bytes) */
};

/* Encode flags. */
enum {
    LX_ENC_BOS = 1,         /* prepend bos (when the tokenizer has one) */
    LX_ENC_EOS = 2,         /* append eos (when the tokenizer has one) */
    LX_ENC_SPECIALS = 4,    /* add what the format's post-processing adds (add_bos, add_eos) */
};

/* Open a tokenizer: PATH is a llama2.c tokenizer.bin, a tokenizer.json, or a
** directory holding tokenizer.json. Errors name the file and, for JSON, the
** field (an unsupported "model.type" such as WordPiece or Unigram, say). */
int lx_tokenizer_open(struct lx_tokenizer **out, const char *path, struct lx_error *err);

/* The byte tokenizer of lenx's own models (ids as in corpus.h). */
struct lx_tokenizer *lx_tokenizer_bytes(void);

void lx_tokenizer_free(struct lx_tokenizer *t);     /* accepts NULL */

/* Append the ids of text[0, n) to out, with BOS/EOS as flags ask. Input a
** tokenizer.json tokenizer cannot take (invalid UTF-8) is LX_EINVAL naming
** the byte offset. */
int lx_tokenizer_encode(const struct lx_tokenizer *t, const char *text, size_t n, unsigned flags,
                        struct lx_ids *out, struct lx_error *err);

/* Append the text of ids to out (out->len counts its bytes, which may include
** NUL). An id outside the vocabulary is LX_EINVAL naming its index. */
int lx_tokenizer_decode(const struct lx_tokenizer *t, const int32_t *ids, long n, struct lx_buf *out,
                        struct lx_error *err);

/* ---- for the kinds (tok_*.c) ---- */

/* Append n bytes (NUL included) to a buffer. */
void lx_buf_putn(struct lx_buf *b, const char *s, size_t n);

/* Length of the UTF-8 sequence starting at s[0] (1..4) when s[0, n) starts with
** a valid one, else 0. */
int lx_utf8_len(const unsigned char *s, size_t n);

int lx_tok_llama2c_open(struct lx_tokenizer *t, const unsigned char *bytes, long n, struct lx_error *err);
int lx_tok_hf_open(struct lx_tokenizer *t, const unsigned char *bytes, long n, struct lx_error *err);

#endif
