/*
** tasks/retrieval.h - what the retrieval tasks (passkey, line, topic, mdqa,
** needle) share: instances of an exact length, the engine step that reads an
** answer off a causal model, named scorers, the generic cell runner, and
** prose: corpus text cut at sentence starts, for the tasks that hide facts in
** real text (needle, mdqa).
**
** An instance is a sequence of exactly `length` tokens, [BOS, prompt …,
** gold answer]: tasks write it in byte tokens, and lx_retrieval_instance
** re-encodes it in any other tokenizer's tokens at exactly `length` of them: the answer is the last n − answer_off tokens, so the
** length includes the generation budget (as RULER's max_seq_length includes
** tokens_to_generate; docs/tasks.md#passkey). A task's generator
** is a pure function of (params, key, length, sample, depth) drawing only from
** the counter-based generator (harness/core/rng.h).
**
** Reading an answer (lx_answer_eval) needs one forward pass when the model is
** right: under teacher forcing, the argmax at answer position k is the greedy
** token given the gold prefix, so greedy decoding equals the gold answer iff
** every teacher-forced argmax does. After the first mismatch the greedy token
** replaces the gold one and each further token is one decode step through
** a KV cache (harness/engine/model/decoding.h): the teacher-forced pass saved every
** layer's keys and values, and its rows before the mismatch are the greedy
** prefix's own, because causal attention never looks ahead. A step costs
** O(T) against a full pass's O(T²) attention. LX_DECODE_FULL keeps the
** reference, one full forward pass per further token; both give the same
** tokens (tests/test_decode.c). The same pass gives the teacher-forced
** log-probability of the gold answer, which still moves when greedy
** accuracy is 0 everywhere.
*/
#ifndef LX_RETRIEVAL_H
#define LX_RETRIEVAL_H

#include <stdint.h>

#include "harness/core/lx.h"
#include "harness/core/params.h"
#include "harness/engine/data/corpus.h"   /* the byte vocabulary: LX_TOK_BOS … */
#include "harness/engine/model/decoding.h"   /* enum lx_decode */
#include "harness/engine/data/instance.h"
#include "harness/engine/lm/lm.h"

#define LX_MAX_RETRIEVAL_LENGTH (1L << 20)  /* instance tokens at most, as ppl (docs/tasks.md) */

/* What the model answered for one instance. */
struct lx_answer {
    double logprob;         /* Σ log p(gold answer token | gold prefix), teacher-forced */
    int correct_tf;         /* 1 when every teacher-forced argmax is the gold token */
    int out[LX_MAX_ANSWER]; /* greedy tokens, as many as the answer has */
    int n_out;
    int forwards;           /* full forward passes it took: 1, plus one per further token (LX_DECODE_FULL) */
    int decoded;            /* tokens decoded one row at a time through the KV cache (LX_DECODE_CACHE) */
    double entropy;         /* mean attention entropy of the rows that produce the answer (every
                            ** layer and head, teacher-forced pass) */
};

struct lx_model;
struct lx_spec;

/* Greedy answers and teacher-forced log-probabilities of n instances on a
** causal model (batched: instances of one length). mode: the tokens after a
** miss by the KV cache (LX_DECODE_CACHE; full passes when no cache fits) or
** by full passes (LX_DECODE_FULL, the reference). */
int lx_answer_eval(const struct lx_model *m, const struct lx_spec *spec, const struct lx_instance *in, long n,
                   enum lx_decode mode, struct lx_answer *out, struct lx_error *err);

/* The same through any backend (harness/engine/lm/lm.h): on lenx's engine
** lx_answer_eval; elsewhere each answer is a continuation of its prompt
** (greedy, as many tokens as the gold), and, where the backend gives prompt
** log-probabilities, the whole instance is scored for the gold's log p
** (NAN otherwise) and, where it gives attention statistics, their entropy
** (NAN otherwise). */
int lx_answer_lm(struct lx_lm *lm, const struct lx_instance *in, long n, struct lx_answer *out,
                 struct lx_error *err);

/* Named scorers on the greedy output, n bytes (a 0 byte is an ordinary
** byte): 1 correct, 0 wrong, -1 unparsable (counted in null_rate). */
int lx_answer_first_int(const char *output, long n, const char *gold);  /* first run of digits == gold, as integers */
int lx_answer_last_int(const char *output, long n, const char *gold);   /* last run of digits == gold, as integers */
/* Normalized containment (lost-in-the-middle's best_subspan_em, one gold): the
** output from its first non-space byte up to its first newline, and the gold,
** each lowercased, without ASCII punctuation or the words a/an/the, spaces
** collapsed; correct when the gold's form is a substring of the output's,
** unparsable when the output's form is empty. */
int lx_answer_contains(const char *output, long n, const char *gold);
/* The first distractor (in->alt) the task's scorer accepts output for, as if
** it were the gold; -1 when none. */
struct lx_task;
int lx_answer_distractor(const struct lx_task *task, const void *params, const struct lx_instance *in,
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
/* The instances lx_retrieval_run makes, answers and scores at once of a cell's n instances of T tokens: all
** n when they hold at most 2^24 tokens, else a multiple of the engine's batch (max(1, 8192 / T)) within
** them (at least one batch). The results do not depend on it. */
long lx_retrieval_chunk(long n, long T);
/* For tests: the tokens a chunk may hold in place of 2^24 (<= 0: back to 2^24). */
void lx_retrieval_set_chunk_tokens(long tokens);

/* The instance of (key, length, sample, depth) in tk's tokens: exactly
** `length` tokens, [BOS] + the prompt + the answer, the answer's tokens
** (answer_off on) the answer's text encoded on its own. For the byte
** tokenizer the task's generate hook itself; for any other, the task's byte
** instance re-encoded at the byte length that gives `length` tokens
** (docs/tasks.md#tokenizers). */
struct lx_tokenizer;
int lx_retrieval_instance(const struct lx_task *task, const void *params, const struct lx_tokenizer *tk,
                          uint64_t key, long length, long sample, double depth, struct lx_instance *out,
                          struct lx_error *err);

/* ---- the skeleton every retrieval task fills --------------------------------
** A retrieval task writes its generator (`make`), its length check, its
** scorer and what its parameters hold; the hooks of struct lx_task that are
** alike in every retrieval task (generate, train_sample, trials, score, split,
** run) live once, here and in retrieval.c. The task file then reads:
**
**   static const struct lx_retrieval passkey_r = {.name = "passkey", ...};
**   LX_RETRIEVAL_HOOKS(passkey, passkey_r)
**   const struct lx_task lx_task_passkey = { ..., LX_RETRIEVAL_OPS(passkey) };
*/

/* The `protocol` and `data` rows a task with presets adds to its params
** (LX_RETRIEVAL_PRESET_ROWS): both left out of the run key at their defaults
** (lenx, and an unset path), so today's cells keep their keys; data is read
** relative to the sweep file's directory, as a checkpoint is. A preset reads
** no other row but `samples` (those that make as many cases as asked): the
** task lists the rest as its schema's refusals (LX_SCHEMA_REFUSING), so a
** row given with a preset is an error, not ignored, and the preset cells'
** keys stay as they were. */
struct lx_preset_params {
    int protocol;               /* index into the task's protocols; 0 = lenx */
    char data[LX_PATH_CAP];     /* the peer's test-case file; "" = none */
};

#define LX_RETRIEVAL_PRESET_ROWS(S, choices)                                                                  \
    {"protocol", LX_PT_ENUM, offsetof(S, preset.protocol), "lenx", 0, 0, choices, LX_PF_UNKEYED_DEFAULT,      \
     "lenx: today's instances; a peer's preset: its test cases, budget, stops, scorer "                      \
     "(docs/tasks.md#protocol-presets)"},                                                                    \
    {"data", LX_PT_PATH, offsetof(S, preset.data), "\"\"", 0, 0, NULL, 0,                                      \
     "with a preset: the peer's test-case file (JSON Lines), or kamradt's haystack directory of .txt "          \
     "files, read as the peer's code reads it"}

/* What one instance is asked for. */
struct lx_retrieval_at {
    uint64_t key;       /* the cell's data key */
    long length;        /* tokens of the instance, answer included */
    long sample;        /* sample index, >= 0 */
    double depth;       /* in [0, 1]; 0 for tasks with one depth */
    const char *split;  /* the corpus split prose is read from: "test" for cells, "train" for training */
    double frac;        /* the first frac of that split's bytes */
};

#define LX_RETRIEVAL_ONE_DEPTH ((size_t)-1)    /* `depths_at` of a task without depths */

struct lx_retrieval {
    const char *name;       /* the task's name, for messages */
    size_t samples_at;      /* offsetof the params' `samples` (long) */
    size_t depths_at;       /* offsetof the params' `depths` (long), or LX_RETRIEVAL_ONE_DEPTH: one
                            ** depth per cell, every instance recorded at depth 0 */
    int (*check)(const void *params, long length, struct lx_error *err);    /* the task's check hook */
    /* fill out->tok[0, at->length) (allocated, out->n set), answer_off, gold and
    ** any distractors; the skeleton has checked the length, depth and sample */
    int (*make)(const void *params, const struct lx_retrieval_at *at, struct lx_instance *out,
                struct lx_error *err);
    /* the named scorer (lx_score_*); or NULL and `score` chooses by params */
    int (*scorer)(const char *output, long n, const char *gold);
    int (*score)(const void *params, const struct lx_instance *in, const char *output, long n);
    /* (optional) protocol presets: offsetof the params' struct lx_preset_params
    ** (0 = none: a task's params never start with it) and the names of its
    ** `protocol` choices by index, "lenx" first. A preset that reads peer data
    ** replaces the generator, the length check and the cell runner
    ** (tasks/preset.h). */
    size_t preset_at;
    const char *const *protocols;
    uint64_t train_salt;    /* salt of a training window's uniform depth; 0 = depth 0, none drawn */
    double train_frac;      /* training windows read the first train_frac of "train"; 0 = no prose */
};

/* The shared hooks, each taking the task's descriptor. */
int lx_retrieval_generate(const struct lx_retrieval *r, const void *params, uint64_t key, long length, long sample,
                          double depth, struct lx_instance *out, struct lx_error *err);
int lx_retrieval_train_sample(const struct lx_retrieval *r, const void *params, uint64_t key, long length,
                              long sample, struct lx_instance *out, struct lx_error *err);
void lx_retrieval_trials(const struct lx_retrieval *r, const void *params, long *samples, long *depths);
int lx_retrieval_score(const struct lx_retrieval *r, const void *params, const struct lx_instance *in,
                       const char *output, long n);
/* Every retrieval task names the held-out split, even those that read no
** corpus text, so the run key carries the held-out hash as every model
** task's does. */
const char *lx_retrieval_split(const void *params);
/* The run hook: lx_retrieval_run, or lx_preset_run when a preset governs. */
int lx_retrieval_run_with(const struct lx_retrieval *r, const struct lx_task_ctx *ctx, struct lx_result *out,
                          struct lx_error *err);
/* The task's check under its protocol at a cell's length: 1 when a preset
** governs (its length checked only where the preset has a check, the rest
** being counted in the model's tokens or fixed by its data), 0 for today's
** instances, < 0 on an error. */
int lx_retrieval_check_protocol(const struct lx_retrieval *r, const void *params, long length,
                                struct lx_error *err);
/* The same as the task's check_params hook: *row is "data" when data is
** given (it is what a preset cannot read, or what lenx's own task does not
** take), else "protocol" (a preset that needs data, or none here). */
int lx_retrieval_check_params(const struct lx_retrieval *r, const void *params, const char **row,
                              struct lx_error *err);

/* tok[pos, pos + n) = the bytes s[0, n); returns pos + n. */
long lx_put_bytes(int *tok, long pos, const char *s, long n);
/* out[0, k) = k distinct values of [0, n), n <= 64: the first k steps of a
** Fisher-Yates shuffle of 0 … n − 1, one draw of r per step. */
struct lx_rng;
void lx_draw_distinct(struct lx_rng *r, int n, long k, int *out);
/* The same for the NUL-terminated s. */
long lx_put_text(int *tok, long pos, const char *s);

/* The task's hooks, bound to its descriptor (the lx_task hooks take no task). */
#define LX_RETRIEVAL_HOOKS(name, desc)                                                                       \
    static int name##_generate(const void *p, uint64_t key, long length, long sample, double depth,          \
                               struct lx_instance *out, struct lx_error *err)                                \
    {                                                                                                        \
        return lx_retrieval_generate(&desc, p, key, length, sample, depth, out, err);                        \
    }                                                                                                        \
    static int name##_train_sample(const void *p, uint64_t key, long length, long sample,                    \
                                   struct lx_instance *out, struct lx_error *err)                            \
    {                                                                                                        \
        return lx_retrieval_train_sample(&desc, p, key, length, sample, out, err);                           \
    }                                                                                                        \
    static void name##_trials(const void *p, long *samples, long *depths)                                    \
    {                                                                                                        \
        lx_retrieval_trials(&desc, p, samples, depths);                                                      \
    }                                                                                                        \
    static int name##_score(const void *p, const struct lx_instance *in, const char *output, long n)         \
    {                                                                                                        \
        return lx_retrieval_score(&desc, p, in, output, n);                                                  \
    }                                                                                                        \
    static int name##_run(const struct lx_task_ctx *ctx, struct lx_result *out, struct lx_error *err)         \
    {                                                                                                        \
        return lx_retrieval_run_with(&desc, ctx, out, err);                                                  \
    }                                                                                                        \
    static int name##_check_params(const void *p, const char **row, struct lx_error *err)                    \
    {                                                                                                        \
        return lx_retrieval_check_params(&desc, p, row, err);                                                \
    }                                                                                                        \
    static int name##_check_all(const void *p, long length, struct lx_error *err)                            \
    {                                                                                                        \
        int rc = lx_retrieval_check_protocol(&desc, p, length, err);                                         \
        return rc < 0 ? rc : rc ? LX_OK : desc.check(p, length, err);                                        \
    }

/* The lx_task fields every retrieval task shares (its check is <name>_check,
** run after the protocol's). */
#define LX_RETRIEVAL_OPS(name)                                                                               \
    .mode = LX_MODE_CAUSAL, .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL, .check = name##_check_all,\
    .check_params = name##_check_params,                                                                     \
    .needs_probs = 0, /* answer-row statistics come from the tiles */                                      \
    .decodes = 1,     /* greedy answers after the first miss */                                              \
    .answers_only = 1, /* the answer's rows' logits */                                                       \
    .lm_needs = LX_LM_GENERATE, /* answer log-probs and entropy too where the backend gives them */        \
    .split = lx_retrieval_split, .generate = name##_generate, .train_sample = name##_train_sample,           \
    .trials = name##_trials, .score = name##_score, .run = name##_run

#endif
