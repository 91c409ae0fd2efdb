/*
** tasks/task.h - the contract every evaluation task implements.
**
** To add a task: write tasks/<name>.c defining `const struct lx_task
** lx_task_<name>`, then add LX_TASK(<name>) to tasks/tasks.def.
**
** A task says which model mode it needs. Synthetic-logit tasks (mode
** LX_MODE_LOGITS, e.g. `gaussian`) need no model: their `run` hook draws base
** logits, applies the compiled spec and scores. Model tasks (LX_MODE_CAUSAL,
** LX_MODE_MLM: `ppl`, `mlm`) get the cell's trained model in ctx->model and
** the spec compiled for it; their `run` hook builds the windows, runs the
** engine and scores. Their `split` hook names the corpus split they read, whose
** content hash enters the run key. A model task reads text through ctx->tok,
** the model's tokenizer: the corpus tasks window its tokens of the corpus, the
** retrieval tasks fit their prompts to `length` of its tokens
** (docs/tasks.md#tokenizers).
** Every random draw keys on ctx->data_key, which depends on the task, its
** parameters, the length and the seed but not on the method, so every method
** of a sweep sees the same draws.
*/
#ifndef LX_TASK_H
#define LX_TASK_H

#include <stdint.h>

#include "harness/core/params.h"
#include "harness/core/result.h"
#include "harness/core/spec.h"

struct lx_model;
struct lx_lm;
struct lx_instance;
struct lx_tokenizer;

enum lx_mode {
    LX_MODE_LOGITS,     /* synthetic logits, no model */
    LX_MODE_CAUSAL,     /* next-token language model */
    LX_MODE_MLM,        /* bidirectional masked language model */
};

struct lx_task_ctx {
    const void *params;         /* the task's resolved params */
    const struct lx_spec *spec; /* the compiled method stack */
    long length;                /* N: the cell's evaluation length */
    long seed;                  /* the cell's seed */
    uint64_t data_key;          /* key for every random draw of this cell */
    const struct lx_model *model;   /* model tasks on lenx's engine: the cell's model; NULL otherwise */
    struct lx_lm *lm;           /* model tasks: the cell's model whoever runs it (harness/engine/lm/lm.h):
                                ** the engine (lm->model == model) or an inference server (model NULL) */
    long train_len;             /* model tasks: the model's training length */
    const struct lx_task *task; /* the task itself */
    const struct lx_spec *spec_train;   /* model tasks: the stack's training-time part compiled at the
                                        ** training length (the attention the model learnt); else NULL */
    const struct lx_tokenizer *tok;     /* model tasks: the model's tokenizer (lx_byte_tokenizer unless
                                        ** the model names one); lengths are in its tokens */
    int begin_text;             /* model tasks: 1 when the model was trained without a start token before its
                                ** windows (train: begin: text): every causal task reads such a model's
                                ** windows so (ppl, attn: the text alone; retrieval: a newline in BOS's place) */
};

struct lx_task {
    const char *name;           /* YAML name == file name == symbol suffix */
    const char *summary;        /* one line, citing the paper it follows */
    struct lx_schema schema;    /* its parameters */
    enum lx_mode mode;          /* the model it needs */
    const char *headline;       /* metrics `lenx run` prints ("ppl,unigram_ppl"); NULL = all */
    unsigned caps;              /* LX_CAP_* it offers methods */
    int needs_probs;            /* (model tasks) 1 when its passes read whole attention probability
                                ** rows (a probe): they run the head path, which holds a T x T buffer
                                ** per thread, and the plan's memory check counts it; 0 = every pass
                                ** runs tiled, row statistics included, in O(T·d) memory */
    unsigned lm_needs;          /* (model tasks) the LX_LM_* caps its run asks of ctx->lm
                                ** (harness/engine/lm/lm.h); 0 = lenx's engine itself (LX_LM_ENGINE):
                                ** a backend without them is refused at plan time */
    int decodes;                /* (model tasks) 1 when it decodes greedy tokens through a KV cache
                                ** (harness/engine/model/kvcache.h): the plan's memory check counts one a window */
    int losses_only;            /* (model tasks) 1 when its passes read each row's loss alone
                                ** (lx_eval_windows with logits 0): they hold one block of
                                ** LX_EVAL_ROWS rows of logits, and the plan's memory check counts that */
    int answers_only;           /* (model tasks) 1 when its passes read the logits of their scored rows
                                ** alone, or none (LX_ACTS_EVAL_ANSWER): they hold at most
                                ** LX_ACTS_ANSWER_ROWS rows of logits a window, and the plan counts that */
    int unseeded;               /* (model tasks) 1 when a cell draws nothing from its seed (fixed windows):
                                ** on a model no seed trains (a brought checkpoint no stack fine-tunes, a
                                ** server) the sweep's seeds are one cell, which runs once (lx_plan_build) */

    /* (logit tasks) facts for methods when there is no model */
    void (*facts)(const void *params, long length, struct lx_facts *f);
    /* (model tasks) the corpus split the task reads: "test", "ood", ... */
    const char *(*split)(const void *params);
    /* (optional) can this task run at this length with these params? */
    int (*check)(const void *params, long length, struct lx_error *err);
    /* (optional) can these params run at all, whatever the length (a preset's
    ** data)? On an error *row names the parameter at fault, for its position. */
    int (*check_params)(const void *params, const char **row, struct lx_error *err);
    /* (optional, logit tasks) attention statistics for a calibrating method
    ** (spec.h, struct lx_probe): at the training length or the cell's, with
    ** every logit divided by tau */
    int (*probe)(const struct lx_task_ctx *ctx, int at_train, double tau, struct lx_probe_stats *out,
                 struct lx_error *err);
    /* Retrieval tasks get generate, train_sample, trials, score, split and run
    ** from the skeleton in tasks/retrieval.h (struct lx_retrieval,
    ** LX_RETRIEVAL_HOOKS, LX_RETRIEVAL_OPS) and write only what differs. */
    /* (retrieval tasks, tasks/retrieval.h) the instance for (key, length,
    ** sample, depth): a pure function; out is filled and owns its tokens */
    int (*generate)(const void *params, uint64_t key, long length, long sample, double depth,
                    struct lx_instance *out, struct lx_error *err);
    /* (retrieval tasks) the same task as a training window of `length` tokens,
    ** for a model's training mixture (depth drawn inside) */
    int (*train_sample)(const void *params, uint64_t key, long length, long sample, struct lx_instance *out,
                        struct lx_error *err);
    /* (retrieval tasks) trials of a cell: samples per depth, evenly spaced
    ** depths 0 … 1 (1 = the single depth 0.5; 0 = a uniform depth per sample);
    ** samples 0 under a protocol preset, whose outputs' samples index its
    ** test cases directly */
    void (*trials)(const void *params, long *samples, long *depths);
    /* (retrieval tasks) score a greedy output, n bytes (a 0 byte is a byte
    ** like any other), against the instance's gold: 1 correct, 0 wrong,
    ** -1 unparsable */
    int (*score)(const void *params, const struct lx_instance *in, const char *output, long n);
    /* (required) run one cell and report metrics */
    int (*run)(const struct lx_task_ctx *ctx, struct lx_result *out, struct lx_error *err);
};

#endif
