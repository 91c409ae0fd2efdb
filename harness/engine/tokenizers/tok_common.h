/*
** harness/engine/tokenizers/tok_common.h - what the dispatcher (tokenizer.c)
** and every tokenizer kind (tok_*.c) share, below both: the tokenizer struct
** and its ops, the id list, the byte vocabulary's ids, the descriptor a kind
** registers with (kinds.def), and small helpers for the kinds. Includes core
** only.
*/
#ifndef LX_TOK_COMMON_H
#define LX_TOK_COMMON_H

#include <stdint.h>

#include "harness/core/lx.h"

/* The byte vocabulary of lenx's own models (the byte tokenizer, tokenizer.h). */
enum {
    LX_TOK_BOS = 256,       /* begins every causal window */
    LX_TOK_EOS = 257,       /* separates documents in the training stream */
    LX_TOK_PAD = 258,       /* unused padding */
    LX_TOK_MASK = 259,      /* masked-LM [MASK] */
    LX_VOCAB = 260,         /* 256 bytes + 4 specials */
};

/* A growable list of token ids. Zero-initialise, push, then free. */
struct lx_ids {
    int32_t *id;    /* (cap,) ids, the first n used */
    long n;         /* ids held */
    long cap;       /* ids allocated */
};

void lx_ids_push(struct lx_ids *v, int32_t id);
/* Room for `more` ids after the n held (a long encoding fills it without a check per id). */
void lx_ids_reserve(struct lx_ids *v, long more);
void lx_ids_free(struct lx_ids *v);

struct lx_tokenizer;
struct lx_gguf_out;

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
    /* Optional: put the tokenizer.ggml.* keys that make llama.cpp encode as t
    ** does into o (gguf_vocab.h, docs/tokenizers.md#gguf); an error names t's
    ** file and what a GGUF vocabulary cannot say. NULL: the kind cannot. */
    int (*to_gguf)(const struct lx_tokenizer *t, struct lx_gguf_out *o, struct lx_error *err);
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
    int strip_lead;                 /* spaces the decoder drops from a text's start: 1 for a SentencePiece
                                    ** dummy prefix (llama2.c's, a tokenizer.json's Strip decoder), else 0 */
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

/* A tokenizer kind that opens from a file: one `const struct lx_tok_kind
** lx_tok_kind_<name>` per tok_<name>.c, one line LX_TOK_KIND(<name>) in
** kinds.def. lx_tokenizer_open tries the kinds in the .def's order and opens
** the file with the first that accepts its bytes. */
struct lx_tok_kind {
    const char *name;       /* "hf", "llama2c": the symbol's suffix */
    const char *file;       /* its file's name in a directory ("tokenizer.json") */
    const char *sidecar;    /* a file beside it that travels with it ("tokenizer_config.json"), or NULL */
    /* 1 when bytes[0, n) look like this kind's file (cheap: a sniff, not a parse) */
    int (*accept)(const unsigned char *bytes, long n);
    /* Fill t (zeroed but for path and bos = eos = pad = mask = -1) from the
    ** file's bytes; an error names the file (t->path) and what is wrong. */
    int (*open)(struct lx_tokenizer *t, const unsigned char *bytes, long n, struct lx_error *err);
};

/* ---- for the kinds (tok_*.c) ---- */

/* Byte i is lx_tok_byte_table[i]: the piece of a byte token. */
extern const char lx_tok_byte_table[256];

/* The byte a byte-fallback token's piece stands for ("<0x41>" -> 0x41), or -1. */
int lx_tok_byte_token(const char *s, size_t n);

/* GPT-2's pre-tokenizer pattern (a ByteLevel pre-tokenizer with "use_regex"). */
extern const char lx_tok_gpt2_pattern[];

/* GPT-2's byte-to-unicode alphabet, in which byte-level BPE tokens are
** written (tokenizer.json, GGUF): the printable Latin-1 bytes stand for
** themselves, the other 68 for U+0100 onwards in byte order.
** lx_tok_to_alphabet appends the text of bytes s[0, n) to out;
** lx_tok_from_alphabet writes the bytes text s[0, n) stands for into out (n
** bytes at most) and returns their count, or -1 at a character outside it. */
void lx_tok_to_alphabet(const char *s, size_t n, struct lx_buf *out);
long lx_tok_from_alphabet(const char *s, size_t n, char *out);

#endif
