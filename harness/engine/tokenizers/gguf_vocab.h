/*
** harness/engine/tokenizers/gguf_vocab.h - what the tokenizer.ggml.* keys of a
** llama.cpp GGUF file mean (docs/tokenizers.md#gguf), shared by the reader
** (tok_gguf.c) and the kinds that write themselves (their to_gguf op):
**
**   tokenizer.ggml.model        "gpt2" (byte-level BPE) or "llama" (SentencePiece)
**   tokenizer.ggml.pre          gpt2: the pre-tokenizer, by name (the table below)
**   tokenizer.ggml.tokens       each id's text: GPT-2's byte alphabet (gpt2), U+2581
**                               for a space (llama), added tokens as they are
**   tokenizer.ggml.scores       llama: the merge order, highest score first
**   tokenizer.ggml.token_type   enum lx_gguf_toktype per id
**   tokenizer.ggml.merges       gpt2: "left right" in rank order
**   tokenizer.ggml.*_token_id   bos, eos, unknown, padding, mask
**   tokenizer.ggml.add_bos_token, add_eos_token, add_space_prefix
**
** To name another pre-tokenizer: one row in lx_gguf_pres (gguf_vocab.c), with
** the regular expressions llama.cpp's src/llama-vocab.cpp runs for that name.
*/
#ifndef LX_GGUF_VOCAB_H
#define LX_GGUF_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "harness/core/gguf.h"

/* tokenizer.ggml.token_type values (llama.cpp's llama_token_type). */
enum lx_gguf_toktype {
    LX_TT_NORMAL = 1,       /* a model token, made by merges */
    LX_TT_UNKNOWN = 2,      /* <unk>: special, matched in text */
    LX_TT_CONTROL = 3,      /* BOS, EOS, <|im_end|>: special, matched in text */
    LX_TT_USER = 4,         /* user-defined: matched in text, not special */
    LX_TT_UNUSED = 5,       /* a gap in the ids ("[PAD7]") */
    LX_TT_BYTE = 6,         /* <0x41>: SentencePiece's byte fallback */
};

#define LX_GGUF_PRE_MAX 4   /* regular expressions of one pre-tokenizer at most */

/* A gpt2 pre-tokenizer llama.cpp knows by name. */
struct lx_gguf_pre {
    const char *name;               /* tokenizer.ggml.pre as lenx writes it */
    const char *alias[3];           /* other values that mean the same, NULL-terminated */
    const char *json;               /* the Split pattern of a tokenizer.json that is this one, or NULL */
    const char *re[LX_GGUF_PRE_MAX];    /* what llama.cpp runs, one step after the other, NULL-terminated */
    int ignore_merges;              /* a piece that is a token is taken whole (llama.cpp sets it) */
    int add_bos;                    /* llama.cpp's add_bos when the file does not say */
};

extern const struct lx_gguf_pre lx_gguf_pres[];
extern const int lx_gguf_n_pres;

/* The row whose name or alias is name, or NULL. */
const struct lx_gguf_pre *lx_gguf_pre_named(const char *name);

/* The row whose pre-tokenizer is the n regular expressions re[i] (re_len[i]
** bytes), applied one after the other: its tokenizer.json pattern (n = 1) or
** llama.cpp's list; NULL when none is. */
const struct lx_gguf_pre *lx_gguf_pre_of(int n, const char *const *re, const size_t *re_len);

/* "llama-bpe, qwen2, gpt-2, default": the names, for hints. */
const char *lx_gguf_pre_names(void);

/* A tokenizer as the keys above say it, filled by a kind's to_gguf and put by
** lx_gguf_vocab_put. Zero-initialise with lx_gguf_vocab_init. */
struct lx_gguf_vocab {
    const char *model;      /* "gpt2" or "llama" */
    const char *pre;        /* gpt2: tokenizer.ggml.pre */
    long n;                 /* tokens */
    char **tok;             /* (n,) each id's text (malloc'd), len[i] bytes */
    size_t *len;            /* (n,) */
    float *score;           /* (n,) llama only */
    int32_t *type;          /* (n,) enum lx_gguf_toktype */
    char **merge;           /* (n_merges,) gpt2: "left right" (malloc'd) */
    long n_merges;
    int32_t bos, eos, unk, pad, mask;   /* -1: not written */
    int add_bos, add_eos;               /* written as booleans */
    int add_space_prefix;               /* llama: written; -1 for gpt2 (not written) */
};

void lx_gguf_vocab_init(struct lx_gguf_vocab *v, const char *model, long n);
void lx_gguf_vocab_release(struct lx_gguf_vocab *v);
/* Token id's text: a copy of s[0, n). */
void lx_gguf_vocab_set(struct lx_gguf_vocab *v, long id, const char *s, size_t n, int type);
/* Ids no token holds get "[PAD<id>]", type UNUSED, as llama.cpp's converter
** writes them (set[id] 0 marks such an id). */
void lx_gguf_vocab_pad(struct lx_gguf_vocab *v, const unsigned char *set);

/* -1 when s[0, n) is UTF-8 without a NUL (a GGUF token's text), else the
** offset of the first byte that is not. */
long lx_gguf_text_bad(const char *s, size_t n);

/* The first of texts s[i] (len[i] bytes each, i < n) that an earlier one
** (*first) equals, or -1 when each is held once (llama.cpp needs that). */
long lx_gguf_twice(long n, const char *const *s, const size_t *len, long *first);

/* Check v as llama.cpp will load it (every text non-empty UTF-8 and held by
** one id, ids inside the vocabulary) and put its keys into o. Errors name
** what (the tokenizer's file) and the token. */
int lx_gguf_vocab_put(const struct lx_gguf_vocab *v, struct lx_gguf_out *o, const char *what, struct lx_error *err);

#endif
