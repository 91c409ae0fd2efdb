/*
** harness/engine/data/instance.h - a token sequence whose answer span is known: what
** a retrieval task generates and what training mixtures and answer reading
** consume. It lives in the engine so the training loop can take instances
** from a task's generator without including anything above the engine.
*/
#ifndef LX_INSTANCE_H
#define LX_INSTANCE_H

#include "harness/core/lx.h"

#define LX_MAX_ANSWER 64    /* answer tokens at most */
#define LX_MAX_ALT 32       /* other answers an instance holds at most (mdqa: documents − 1) */

struct lx_instance {
    int *tok;               /* (n,) owned: tok[0] = BOS, the answer is tok[answer_off .. n) */
    long n;                 /* tokens: the cell's length */
    long answer_off;        /* first answer token; n − answer_off <= LX_MAX_ANSWER */
    char gold[LX_MAX_ANSWER + 1];   /* the gold answer as the scorer reads it ("48213") */
    double depth;           /* where the needle sits, 0 (start) … 1 (end) */
    /* Distractors: the answers to the other questions the context could answer
    ** (the other needles' numbers, the other documents' values). A wrong output
    ** the scorer accepts for one of them counts in distractor_rate. */
    char alt[LX_MAX_ALT][LX_MAX_ANSWER + 1];    /* (n_alt,) as gold */
    double alt_depth[LX_MAX_ALT];               /* (n_alt,) where each sits, 0 … 1 */
    int n_alt;              /* 0: the task has no distractors */
    char *golds;            /* owned, or NULL: every gold a preset's case asks for, joined by ", " (shown) */
};

/* Free the tokens and zero the instance; NULL is fine. */
void lx_instance_release(struct lx_instance *in);

/* A task's instances in bytes: bytes(ctx, B, out, err) fills out with the
** instance of B byte tokens ([BOS] + prompt + answer) for fixed draws, so
** that only its filler grows with B (a retrieval task's generate or
** train_sample hook bound to its key, sample and depth). */
struct lx_instance_src {
    const char *name;       /* the task, for messages */
    int (*bytes)(void *ctx, long B, struct lx_instance *out, struct lx_error *err);
    void *ctx;              /* what bytes reads */
};

/* The instance of exactly `length` tokens of tk (instance.c has how): for
** the byte tokenizer src's own; for any other the byte instance re-encoded
** as [begin] + enc(prompt) + enc(answer) at the byte length that gives
** `length` tokens. LX_ERUN (err says so) when no byte length gives exactly
** `length`; the task's own errors as they are. */
struct lx_tokenizer;
int lx_instance_fit(const struct lx_instance_src *src, const struct lx_tokenizer *tk, long length,
                    struct lx_instance *out, struct lx_error *err);

#endif
