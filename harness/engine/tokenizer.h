/*
** harness/engine/tokenizer.h - what the tasks need of a model's tokenizer:
** text -> ids, ids -> text, the special ids, the vocabulary size and a stable
** hash (docs/tasks.md#tokenizers).
**
** Two implementations live here: the byte tokenizer (the default of every
** lenx-trained model: 256 bytes + BOS, EOS, PAD, MASK, see corpus.h) and
** SentencePiece BPE as llama2.c writes it (`tokenizer.bin`: a max piece length,
** then per token a float score, an int length and the piece, "▁" already
** written as a space; byte fallback pieces "<0x00>" … "<0xFF>"). This is the
** thin seam the `tok` branch's tokenizer layer maps onto: a new kind fills a
** struct lx_tokenizer with its own `encode` and `piece` hooks.
**
** Segments. Text is encoded as it is given: no SentencePiece dummy prefix is
** added, so the ids of a concatenation of separately encoded segments decode to
** the concatenated text exactly. Retrieval prompts are built from segments
** (tasks/retrieval.h) and corpora are encoded a line at a time, which keeps
** the merge cost of long documents linear.
*/
#ifndef LX_TOKENIZER_H
#define LX_TOKENIZER_H

#include "harness/core/lx.h"

struct lx_tokenizer {
    const char *name;       /* "byte", "sentencepiece" */
    char *path;             /* the file it was read from; NULL for the byte tokenizer */
    char hash[65];          /* SHA-256 of the file ("byte" for the byte tokenizer) */
    long n_vocab;           /* ids are 0 … n_vocab − 1 */
    int bos, eos, pad, mask;    /* special ids; −1 when the tokenizer has none */
    int is_byte;            /* 1 for the byte tokenizer: a token is a byte, lengths are bytes */
    long max_piece;         /* bytes of the longest piece */
    /* append the ids of s[0, n) to out[*pos …] (grown as needed; *cap its capacity) */
    void (*encode)(const struct lx_tokenizer *t, const char *s, long n, int **out, long *cap, long *pos);
    /* the bytes id stands for (*len of them); NULL, *len = 0 for a special id */
    const char *(*piece)(const struct lx_tokenizer *t, int id, long *len);
    void *impl;             /* the implementation's tables, owned */
};

/* The byte tokenizer: a constant, never released. */
extern const struct lx_tokenizer lx_tokenizer_byte;

/* t, or the byte tokenizer when t is NULL (a task context built without one). */
static inline const struct lx_tokenizer *lx_tok_or_byte(const struct lx_tokenizer *t)
{
    return t ? t : &lx_tokenizer_byte;
}

/* Read a llama2.c tokenizer.bin (SentencePiece BPE); *out is allocated and
** owned by the caller (lx_tokenizer_free). Errors name the file and the byte
** offset. */
int lx_tokenizer_load(struct lx_tokenizer **out, const char *path, struct lx_error *err);
void lx_tokenizer_free(struct lx_tokenizer *t);   /* NULL and lx_tokenizer_byte are fine */

/* The id every window and instance begins with: BOS, or EOS for a tokenizer
** without one (GPT-2's <|endoftext|> convention). */
static inline int lx_tok_begin(const struct lx_tokenizer *t)
{
    return t->bos >= 0 ? t->bos : t->eos;
}

/* Encode s[0, n) into a new array (*ids, malloc'd); returns the count. */
long lx_tok_encode(const struct lx_tokenizer *t, const char *s, long n, int **ids);
/* The text of ids[0, n) into out (lx_tok_decode_cap bytes, NUL-terminated):
** the pieces concatenated, up to the first special id (or an id outside the
** vocabulary); returns the bytes written. *stop = that id, or −1 when none. */
long lx_tok_decode(const struct lx_tokenizer *t, const int *ids, long n, char *out, int *stop);
long lx_tok_decode_cap(const struct lx_tokenizer *t, long n);
/* Bytes of text id stands for (0 for a special id). */
long lx_tok_bytes(const struct lx_tokenizer *t, int id);
/* "bos", "eos", "pad", "mask" for a special id of t, "unknown" for other non-text ids, NULL for −1. */
const char *lx_tok_special_name(const struct lx_tokenizer *t, int id);

#endif
