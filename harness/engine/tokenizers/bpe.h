/*
** harness/engine/tokenizers/bpe.h - the byte-pair-encoding model both BPE kinds share
** (docs/tokenizers.md#bpe): a vocabulary (id <-> bytes), a table of pair merges
** with priorities, and the merge loop.
**
** A word is cut into initial symbols, then the adjacent pair of lowest
** priority is merged, leftmost first among equals, until no pair merges:
**   llama2.c         priority = -score of the merged token (best score first)
**   tokenizer.json   priority = rank, the merge's index in model.merges
** The loop keeps the candidate pairs in a heap (stale entries are skipped when
** popped), so a word of n symbols costs O(n log n), not llama2.c's O(n^2);
** the order of merges is the same. No pair reaches across a symbol that is in
** no pair (a byte-fallback token such as <0x0A>), so the runs between such
** symbols are merged one after the other, each with a small heap: the same
** result, and a SentencePiece text of a megabyte (one word: it has no
** pre-tokenizer) stays in cache.
*/
#ifndef LX_BPE_H
#define LX_BPE_H

#include <stdint.h>

#include "harness/engine/tokenizers/tok_common.h"

struct lx_bpe_pair {
    uint64_t key;           /* (left id << 32 | right id) + 1; 0 = empty slot */
    double prio;            /* lower merges first */
    int32_t id;             /* the merged token */
};

struct lx_bpe {
    long n_vocab;           /* ids 0 .. n_vocab-1 */
    uint32_t *off, *len;    /* (n_vocab,) each token's bytes: arena[off, off+len) */
    char *arena;            /* every token's bytes, back to back */
    size_t n_arena, cap_arena;
    int32_t *slot;          /* (mask+1,) bytes -> id open-addressing table, -1 = empty */
    uint64_t mask;
    struct lx_bpe_pair *pair;   /* (pair_mask+1,) merges */
    uint64_t pair_mask;
    long n_pairs;
    uint8_t *operand;       /* (n_vocab,) 1 when the token is part of some pair; a symbol that is
                            ** not never merges, so a word is cut there and each run merged alone */
    int32_t first_text;     /* lx_bpe_find never returns a lower id: llama2.c's <unk>, BOS, EOS and
                            ** byte tokens stand for no text, so text never becomes them (0 for tokenizer.json) */
    int32_t byte_id[256];   /* byte fallback token of each byte, -1 when none */
    int32_t unk;            /* the unknown token, -1 when none */
    int fuse_unk;           /* consecutive unknown symbols become one */
    int ignore_merges;      /* a word that is a token is taken whole */
    int by_bytes;           /* initial symbols are single bytes, not UTF-8 characters */
};

/* Scratch space for lx_bpe_word, reused across words of one call. */
struct lx_bpe_work {
    struct lx_bpe_sym *sym; /* (cap_sym,) the word's symbols */
    long cap_sym;
    struct lx_bpe_cand *heap;   /* (cap_heap,) candidate merges */
    long n_heap, cap_heap;
};

void lx_bpe_init(struct lx_bpe *b, long n_vocab);
void lx_bpe_release(struct lx_bpe *b);

/* Token id's bytes (before lx_bpe_index). */
void lx_bpe_set(struct lx_bpe *b, int32_t id, const char *s, size_t n);

/* Build the bytes -> id table once every token is set (and first_text); a
** string held by two ids maps to the lower id. */
void lx_bpe_index(struct lx_bpe *b);

/* The id (>= first_text) of bytes s[0, n), or -1. */
int32_t lx_bpe_find(const struct lx_bpe *b, const char *s, size_t n);

/* Every cut of s[0, n) into two tokens: left[k] + right[k] (both arrays of
** n entries), k < the count returned. O(n) hashing (a string looked up per
** cut would cost n^2 for a piece of n bytes). */
long lx_bpe_splits(const struct lx_bpe *b, const char *s, size_t n, int32_t *left, int32_t *right);

/* A token's bytes. */
static inline const char *lx_bpe_str(const struct lx_bpe *b, int32_t id, size_t *n)
{
    *n = b->len[id];
    return b->arena + b->off[id];
}

/* Declare that left+right merge into id with priority prio; a pair declared
** twice keeps the lower priority, or with last the later declaration (as Hugging
** Face's tokenizers read a tokenizer.json's merges, each rank overwriting the
** one before; llama.cpp keeps a GGUF's first). */
void lx_bpe_add_pair(struct lx_bpe *b, int32_t left, int32_t right, double prio, int32_t id, int last);

/* The merge of left and right, or NULL. */
const struct lx_bpe_pair *lx_bpe_pair_find(const struct lx_bpe *b, int32_t left, int32_t right);

/* SentencePiece's merges: every cut of a token id >= first_text into two
** tokens merges into it with priority -score[id] (best score first); a text
** held by two ids merges into the lower one, with its score. */
void lx_bpe_add_score_merges(struct lx_bpe *b, const float *score);

/* Append the ids of one word w[0, n) to out; lead >= 0 is a symbol put before
** the word's own (llama2.c's dummy prefix, which is never part of the first
** character). */
void lx_bpe_word(const struct lx_bpe *b, int32_t lead, const char *w, size_t n, struct lx_ids *out,
                 struct lx_bpe_work *work);

void lx_bpe_work_free(struct lx_bpe_work *work);

#endif
