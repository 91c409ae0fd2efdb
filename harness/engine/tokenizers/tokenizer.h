/*
** harness/engine/tokenizer.h - one tokenizer interface over three kinds
** (docs/tokenizers.md), and what the tasks need of it (docs/tasks.md#tokenizers):
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
    /* Append the ids of text[0, n) (without BOS/EOS) to out; flags as for
    ** lx_tokenizer_encode (only LX_ENC_SEGMENT concerns a kind). */
    int (*encode)(const struct lx_tokenizer *t, const char *text, size_t n, unsigned flags, struct lx_ids *out,
                  struct lx_error *err);
    /* Append the text of ids[0, n) to out; every id is already checked < n_vocab. */
    void (*decode)(const struct lx_tokenizer *t, const int32_t *ids, long n, struct lx_buf *out);
    /* The bytes (*len of them) id < n_vocab stands for inside a text; NULL
    ** for an id with no text of its own (BOS, EOS, <unk>, a special added token). */
    const char *(*piece)(const struct lx_tokenizer *t, int32_t id, size_t *len);
    void (*free)(void *impl);   /* releases impl; NULL when there is nothing to free */
};

struct lx_tokenizer {
    const struct lx_tok_ops *ops;   /* the kind's operations */
    void *impl;                     /* the kind's own tables */
    char *path;                     /* the file read ("" for bytes) */
    long n_vocab;                   /* ids are 0 .. n_vocab-1 (added tokens included) */
    int32_t bos, eos;               /* begin/end of sequence ids, -1 when the format has none */
    int32_t pad, mask;              /* padding and [MASK] ids, -1 when the format has none */
    int add_bos, add_eos;           /* whether the format's post-processing adds them */
    int is_byte;                    /* 1 for bytes: a token is a byte, lengths are bytes */
    long max_piece;                 /* bytes of the longest piece (the piece op), for decode buffers */
    char hash[65];                  /* SHA-256 of the file's bytes (of a fixed text for bytes) */
};

/* Encode flags. */
enum {
    LX_ENC_BOS = 1,         /* prepend bos (when the tokenizer has one) */
    LX_ENC_EOS = 2,         /* append eos (when the tokenizer has one) */
    LX_ENC_SPECIALS = 4,    /* add what the format's post-processing adds (add_bos, add_eos) */
    LX_ENC_SEGMENT = 8,     /* the text as given: no dummy prefix (see the top of this file) */
};

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
** never released; lx_tokenizer_bytes() returns a copy to free. */
extern const struct lx_tokenizer lx_tokenizer_byte;
struct lx_tokenizer *lx_tokenizer_bytes(void);

void lx_tokenizer_free(struct lx_tokenizer *t);     /* accepts NULL and &lx_tokenizer_byte */

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
    return t ? t : &lx_tokenizer_byte;
}

/* The id every window and instance begins with: BOS, or EOS for a tokenizer
** without one (GPT-2's <|endoftext|> convention). */
static inline int lx_tok_begin(const struct lx_tokenizer *t)
{
    return t->bos >= 0 ? t->bos : t->eos;
}

/* LX_OK when t has an id to begin a window with (lx_tok_begin >= 0); else
** LX_EINVAL naming the file: a tokenizer.json with neither BOS nor EOS opens
** (lenx tokenize reads it) but cannot serve a model. */
int lx_tok_check_begin(const struct lx_tokenizer *t, struct lx_error *err);

/* Encode s[0, n) as a segment (LX_ENC_SEGMENT, no BOS/EOS) into a new array
** (*ids, malloc'd, NULL when empty); returns the count, or a negative code
** (text the tokenizer cannot take) with err filled. */
long lx_tok_encode(const struct lx_tokenizer *t, const char *s, long n, int32_t **ids, struct lx_error *err);
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

/* ---- for the kinds (tok_*.c) ---- */

/* Byte i is lx_tok_byte_table[i]: the piece of a byte token. */
extern const char lx_tok_byte_table[256];

/* Append n bytes (NUL included) to a buffer. */
void lx_buf_putn(struct lx_buf *b, const char *s, size_t n);

/* The byte a byte-fallback token's piece stands for ("<0x41>" -> 0x41), or -1. */
int lx_tok_byte_token(const char *s, size_t n);

/* Length of the UTF-8 sequence starting at s[0] (1..4) when s[0, n) starts with
** a valid one, else 0. */
int lx_utf8_len(const unsigned char *s, size_t n);

int lx_tok_llama2c_open(struct lx_tokenizer *t, const unsigned char *bytes, long n, struct lx_error *err);
int lx_tok_hf_open(struct lx_tokenizer *t, const unsigned char *bytes, long n, struct lx_error *err);

#endif
