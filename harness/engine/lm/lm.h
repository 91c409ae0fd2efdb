/*
** harness/engine/lm/lm.h - what a task may ask of a language model, whoever
** runs it: the log-probabilities of a window of tokens (with, where the model
** can, the attention entropy of its rows) and the continuation of a prompt.
** Two implementations: lenx's own engine (lx_lm_local, this room's lm.c) and
** an inference server that speaks the OpenAI completions API (server.c).
**
** Tokens are the model's own ids: a task tokenizes with the cell's tokenizer,
** so lengths stay exact in the model's tokens whoever runs it. A backend says
** what it can give in `caps`; a task that needs more is refused at plan time
** (lx_lm_require names the backend and what it lacks), never answered with 0.
*/
#ifndef LX_LM_H
#define LX_LM_H

#include <stdint.h>

#include "harness/core/lx.h"
#include "harness/engine/model/decoding.h"
#include "harness/engine/model/evaluate.h"
#include "harness/engine/tokenizers/tokenizer.h"

struct lx_model;
struct lx_spec;

/* What a backend can give. */
enum {
    LX_LM_GENERATE = 1,     /* continuations of a prompt */
    LX_LM_LOGPROBS = 2,     /* the log-probability of every token of a given window (prompt log-probs) */
    LX_LM_ATTN = 4,         /* the attention entropy of a window's rows */
    LX_LM_ENGINE = 8,       /* lenx's engine itself: logits, attention rows, probes, training */
};

/* How a continuation's tokens are drawn (decoding.h's struct lx_sampler). */
struct lx_lm_sampling {
    double temperature;     /* 0 = greedy */
    long top_k;             /* > 0: among the top_k logits only */
    uint64_t seed;          /* the draws' key */
};

/* One window to score. */
struct lx_lm_score {
    const int *tok;         /* in: (n) tokens */
    long n;
    long attn_row0;         /* in: sum the attention entropy of rows [attn_row0, n - 1); -1 = none */
    float *loss;            /* out: (n) loss[t] = -log p(tok[t + 1] | tok[0..t]) for t < n - 1; loss[n - 1] = 0 */
    double attn_entropy;    /* out (attn_row0 >= 0): the entropy summed over layers, heads and rows */
    double attn_rows;       /* out: the rows summed (layers x heads x rows) */
    int top_k;              /* in (lenx's engine only): > 0 asks for each row's top_k next tokens */
    int *top_id;            /* out: (n - 1, top_k) their ids, most likely first (ties: the lower id) */
    float *top_lp;          /* out: (n - 1, top_k) their log-probabilities; the window's own next token,
                            ** when among them, has exactly -loss[t] */
    const struct lx_lm_sampling *draw;  /* in (lenx's engine only): non-NULL also draws the token after the
                            ** window from its last row as a continuation draws its first (lx_lm_generate),
                            ** into drawn; loss[n - 1] and row n - 1's top tokens (top_id, top_lp then hold
                            ** n rows) are that token's: one pass where a continuation of one token and the
                            ** score of the window with it took two */
    int drawn;              /* out (with draw) */
};

/* One continuation. */
struct lx_lm_gen {
    const int *prompt;      /* in: (n_prompt) */
    long n_prompt;
    long max_tokens;        /* in: the budget */
    struct lx_lm_sampling smp;
    int *out;               /* out: (max_tokens) the tokens; a model that stopped at its end of text
                            ** before the budget has the tokenizer's end id after them */
    long n_out;             /* out: tokens in out */
    const struct lx_gen_sink *sink; /* in (lenx's engine only), NULL or told of each token as it is chosen:
                            ** generation ends where it says (a server stops at its own end of text) */
};

/* A sink that ends a continuation where its text ends: after the first
** special id of tk (no piece) unless past_specials, or after the first token
** with which cut(arg, text, n) < n for the pieces so far (a stop string or a
** newline found). The tokens before the end are those of a continuation run to the
** budget, so what is kept of it does not change; only the steps after it
** are saved. */
struct lx_lm_stop {
    struct lx_gen_sink sink;
    const struct lx_tokenizer *tk;
    long (*cut)(const void *arg, const char *text, long n);     /* NULL: special ids only */
    const void *arg;
    int past_specials;      /* 1: a special id does not end it (a server's ignore_eos); set after init */
    struct lx_buf text;
};
void lx_lm_stop_init(struct lx_lm_stop *s, const struct lx_tokenizer *tk,
                     long (*cut)(const void *arg, const char *text, long n), const void *arg);
void lx_lm_stop_free(struct lx_lm_stop *s);

struct lx_lm;
struct lx_lm_ops {
    /* Score n windows (in any order; each is independent). */
    int (*score)(struct lx_lm *lm, struct lx_lm_score *w, long n, struct lx_error *err);
    /* Continue n prompts. */
    int (*generate)(struct lx_lm *lm, struct lx_lm_gen *g, long n, struct lx_error *err);
};

struct lx_lm {
    const struct lx_lm_ops *ops;
    unsigned caps;                  /* LX_LM_* */
    char what[256];                 /* "lenx's engine", "server 'NAME' (URL)": for messages */
    long train_len;                 /* the model's training length where the backend knows it, else 0 */
    const struct lx_model *model;   /* LX_LM_ENGINE: the model and the compiled stack */
    const struct lx_spec *spec;
    struct lx_pilot pilot;          /* LX_LM_ENGINE: the team or one thread for the decoding steps of every
                                    ** generation (a sink's own pilot, when it has one, instead) */
    void *impl;                     /* the backend's own state */
};

/* The engine as a backend: model m under spec (both outlive lm). */
void lx_lm_local(struct lx_lm *lm, const struct lx_model *m, const struct lx_spec *spec);

/* lm when it is set, else *tmp made the engine on (m, spec): for callers
** (tests, tools) that hand a task its model alone. */
struct lx_lm *lx_lm_or_local(struct lx_lm *lm, struct lx_lm *tmp, const struct lx_model *m,
                             const struct lx_spec *spec);

/* LX_OK when lm gives every cap of caps; else LX_EINVAL: "<task> needs <what>,
** which <lm->what> cannot give" with a hint. */
int lx_lm_require(const struct lx_lm *lm, unsigned caps, const char *task, struct lx_error *err);
/* Names of the caps in caps ("prompt log-probabilities", ...), for messages. */
const char *lx_lm_cap_name(unsigned cap);

/* Windows or prompts a backend other than the engine is given at a time:
** enough to keep a server's concurrent requests busy, few enough to hold. */
#define LX_LM_GROUP 64

/* lx_eval_windows through any backend, losses only (score's logits are
** NULL): on the engine, the batched pass holding the head's logits a block of
** rows at a time; elsewhere, windows scored through ops->score in groups. A
** target tgt[t] >= 0 must then be the window's next token tok[t + 1], or, at
** the last row, a token the window is extended by. */
int lx_lm_eval_windows(struct lx_lm *lm, long n_windows, int T, lx_eval_fill fill, lx_eval_score score, void *ctx,
                       struct lx_error *err);

/* One continuation of n tokens (see struct lx_lm_gen): on the engine n
** tokens through the KV cache (lx_generate_stream), fewer where sink (NULL:
** none) ends it; *n_out gets how many. */
int lx_lm_generate(struct lx_lm *lm, const int *prompt, long n_prompt, long n, const struct lx_lm_sampling *s,
                   const struct lx_gen_sink *sink, int *out, long *n_out, struct lx_error *err);

#endif
