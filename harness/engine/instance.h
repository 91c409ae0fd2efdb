/*
** harness/engine/instance.h - a token sequence whose answer span is known: what
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
};

/* Free the tokens and zero the instance; NULL is fine. */
void lx_instance_release(struct lx_instance *in);

#endif
