/*
** harness/retrieval.h - what the retrieval tasks (passkey, line, topic, mdqa,
** needle) share: instances of an exact length, the engine step that reads an
** answer off a causal model, named scorers, the generic cell runner, and
** prose: corpus text cut at sentence starts, for the tasks that hide facts in
** real text (needle, mdqa).
**
** An instance is a byte-token sequence of exactly `length` tokens, [BOS,
** prompt …, gold answer]: the answer is the last n − answer_off tokens, so the
** length includes the generation budget (tasks.md §14.2). A task's generator
** is a pure function of (params, key, length, sample, depth) drawing only from
** the counter-based generator (harness/rng.h).
**
** Reading an answer (lx_answer_eval) needs one forward pass when the model is
** right: under teacher forcing, the argmax at answer position k is the greedy
** token given the gold prefix, so greedy decoding equals the gold answer iff
** every teacher-forced argmax does. After the first mismatch the greedy token
** replaces the gold one and the pass is repeated (causal attention never looks
** ahead, so the rest of the buffer does not matter), at most once per answer
** token. The same pass gives the teacher-forced log-probability of the gold
** answer, which still moves when greedy accuracy is 0 everywhere.
*/
#ifndef LX_RETRIEVAL_H
#define LX_RETRIEVAL_H

#include <stdint.h>

#include "harness/lx.h"

#define LX_MAX_ANSWER 64    /* answer tokens at most */
#define LX_MAX_RETRIEVAL_LENGTH (1L << 20)  /* instance tokens at most, as ppl (docs/tasks.md) */
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

void lx_instance_release(struct lx_instance *in);

/* What the model answered for one instance. */
struct lx_answer {
    double logprob;         /* Σ log p(gold answer token | gold prefix), teacher-forced */
    int correct_tf;         /* 1 when every teacher-forced argmax is the gold token */
    int out[LX_MAX_ANSWER]; /* greedy tokens, as many as the answer has */
    int n_out;
    int forwards;           /* forward passes it took */
    double entropy;         /* mean attention entropy of the rows that produce the answer (every
                            ** layer and head, teacher-forced pass) */
};

struct lx_model;
struct lx_spec;

/* Greedy answers and teacher-forced log-probabilities of n instances on a
** causal model (batched: instances of one length). */
int lx_answer_eval(const struct lx_model *m, const struct lx_spec *spec, const struct lx_instance *in, long n,
                   struct lx_answer *out, struct lx_error *err);

/* Named scorers on the greedy output, n bytes (a 0 byte is an ordinary
** byte): 1 correct, 0 wrong, -1 unparsable (counted in null_rate). */
int lx_score_first_int(const char *output, long n, const char *gold);  /* first run of digits == gold */
int lx_score_exact(const char *output, long n, const char *gold);      /* starts with gold (after spaces) */
int lx_score_last_int(const char *output, long n, const char *gold);   /* last run of digits == gold */
/* Normalized containment (lost-in-the-middle's best_subspan_em, one gold): the
** output from its first non-space byte up to its first newline, and the gold,
** each lowercased, without ASCII punctuation or the words a/an/the, spaces
** collapsed; correct when the gold's form is a substring of the output's,
** unparsable when the output's form is empty. */
int lx_score_contains(const char *output, long n, const char *gold);
/* The first distractor (in->alt) the task's scorer accepts output for, as if
** it were the gold; -1 when none. */
struct lx_task;
int lx_score_distractor(const struct lx_task *task, const void *params, const struct lx_instance *in,
                        const char *output, long n);

/* Prose for haystacks and passages: a corpus split's documents end to end,
** the first `frac` of their bytes, read cyclically (the text wraps round). */
struct lx_corpus;
struct lx_prose {
    const struct lx_corpus *c;  /* the split */
    long n;                     /* bytes in use: the first frac of the split's */
};

int lx_prose_open(struct lx_prose *p, const char *split, double frac, struct lx_error *err);
/* out[0, n) = the prose's bytes from off on (offsets mod p->n). */
void lx_prose_copy(const struct lx_prose *p, long off, long n, char *out);
/* The first sentence start at or after off (mod p->n); off when there is none. */
long lx_prose_sentence(const struct lx_prose *p, long off);
/* Does a sentence start at s[i]? i >= 1, s[i] is neither white space nor a
** lowercase letter, and s[i − 1] is a newline, or a space after '.', '!' or
** '?' (a closing quote may come between). */
int lx_prose_boundary(const char *s, long i);
/* The split of s[0, n) nearest to x·n among 0, n and the sentence starts (the
** earlier one of a tie). */
long lx_prose_nearest(const char *s, long n, double x);

/* An output's bytes: the byte tokens of tok[0, n) up to the first special
** token, into out (n + 1 bytes; a 0 byte is a byte, a NUL follows for
** printing); returns how many. *stop = the special token that ended it, or
** -1 when every token was a byte. */
long lx_tokens_bytes(const int *tok, long n, char *out, int *stop);
/* "bos", "eos", "pad", "mask" for a special token ("unknown" past them), NULL for -1. */
const char *lx_token_name(int tok);

/* The run hook of a retrieval task (ctx->task has generate, trials, score):
** for every depth and sample, generate, answer (lx_answer_eval), score. Metrics:
**   acc, acc_se      greedy exact answers (unparsable count as wrong)
**   null_rate        unparsable outputs
**   distractor_rate  wrong outputs that answer a distractor (in->alt), over the
**                    instances that have distractors; only when some have
**   answer_logprob   mean teacher-forced log p(gold answer)
**   answer_entropy   mean attention entropy of the answer-producing rows
**   n_samples        instances
** series acc_by_depth, logprob_by_depth and entropy_by_depth (x = depth; none when
** trials gives 0 depths: then each sample draws its depth uniformly), and every raw output. */
struct lx_task_ctx;
struct lx_result;
/* LX_OK when `length` is at most LX_MAX_RETRIEVAL_LENGTH, else an error naming
** the task: every retrieval task's check calls it first. */
int lx_retrieval_check_length(const char *task, long length, struct lx_error *err);
int lx_retrieval_run(const struct lx_task_ctx *ctx, struct lx_result *out, struct lx_error *err);

#endif
