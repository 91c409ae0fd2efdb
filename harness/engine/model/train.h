/*
** harness/engine/model/train.h - training a model on the corpus (docs/config.md#models).
**
** AdamW (decoupled weight decay on matrices only), linear warmup then cosine
** decay to min_lr·lr, clipping of the global gradient norm, batch × length
** windows drawn from the training stream in an order fixed by the model key
** (which includes the seed), validation loss every eval_every steps on fixed
** windows from the held-out tail of the stream.
**
** The training stream is the `train` split's documents joined by EOS; its last
** 5% (by tokens) is the validation tail and is never trained on.
**
** Windows:  causal  input [BOS, s[o] .. s[o+T−2]], targets s[o] .. s[o+T−1]
**           mlm     input s[o .. o+T−1] with BERT 80/10/10 corruption of
**                   Bernoulli(mask_prob) positions, targets at those positions
** The same window shapes are what the `ppl` and `mlm` tasks evaluate.
*/
#ifndef LX_TRAIN_H
#define LX_TRAIN_H

#include <stdint.h>

#include "harness/engine/data/corpus.h"
#include "harness/engine/model/model.h"
#include "harness/engine/model/positions.h"     /* the training position ids */

struct lx_tokenizer;

/* The `train:` mapping of a model in a sweep file. */
struct lx_train_cfg {
    long length;            /* training window T: the model's training length */
    long batch;             /* windows per step */
    long steps;             /* optimizer steps */
    double lr;              /* peak learning rate */
    double min_lr;          /* final lr as a fraction of lr */
    long warmup;            /* linear warmup steps */
    double weight_decay;    /* AdamW decoupled decay (matrices only) */
    double beta1, beta2;    /* AdamW moments */
    double clip;            /* max global gradient norm; 0 = no clipping */
    long eval_every;        /* validation every K steps (and at the end) */
    long eval_windows;      /* validation windows */
    double mask_prob;       /* mlm: fraction of positions masked */
    int begin;              /* causal: LX_BEGIN_BOS (a start token before every window) or LX_BEGIN_TEXT */
    double lr_method;       /* peak lr of the attention methods' learned tensors (lx_tensor_info.method); 0 = lr */
};

enum { LX_BEGIN_BOS, LX_BEGIN_TEXT };

extern const struct lx_schema lx_train_schema;

/* Do windows of T tokens (and their next token) fit both the training part
** of the text (in the model's tokens, documents joined by EOS) and its
** validation tail? The error says how long a window may be. The plan asks
** it before anything trains; training asks it again. */
struct lx_corpus_tokens;
int lx_train_fits(const struct lx_corpus_tokens *text, long T, struct lx_error *err);

struct lx_train_report {
    long steps;             /* optimizer steps taken */
    long tokens;            /* training tokens seen (steps · batch · length) */
    double train_loss;      /* mean loss of the last eval_every steps */
    double val_loss;        /* validation loss at the end */
    double seconds;         /* wall time */
    long first;             /* the step this run started from (> 0 when resumed) */
    long solo_steps;        /* of steps first .. steps, those a pilot ran on one thread of several
                            ** (portable numerics, pilot.h) */
    long switches;          /* the pilot's changes of mode */
};

/* AdamW state for one model: gradient buffer (with views), moments, and which
** parameters decay (matrices). lx_train uses it; so does the benchmark. */
struct lx_optim {
    size_t n;                   /* parameters */
    float *grad, *m, *v;        /* (n,) gradient, first and second moments */
    unsigned char *decay;       /* (n,) 1 where weight decay applies */
    size_t (*meth)[2];          /* (n_meth,) [offset, count) of each method tensor (lr_method), in order */
    int n_meth;
    struct lx_weights g;        /* views of grad shaped like the weights */
    uint16_t *wb;               /* (n,) the weights rounded to bf16 by every update, which the
                                ** products read (lx_optim_shadow), or NULL */
    void *pk;                   /* the matrices of wb packed for oneDNN both ways, or NULL */
    size_t pk_bytes;
};

void lx_optim_init(struct lx_optim *o, const struct lx_model *model);
/* The same, with LX_ENOMEM when the buffers do not fit (lx_train uses it). */
int lx_optim_alloc(struct lx_optim *o, const struct lx_model *model, struct lx_error *err);
void lx_optim_release(struct lx_optim *o);
/* The gradient set to zero (in parallel: it is as large as the weights). */
void lx_optim_zero_grad(struct lx_optim *o);
/* bf16 numerics: the forward's and backward's weight products read the
** weights rounded to bf16 once per update (into o->wb, by lx_optim_step) instead
** of rounding them in every product (docs/numerics.md#training-in-bf16). It
** rounds model->w as it is now, so it comes after the last write to the
** weights that is not an update (a resumed state). LX_ENOMEM when the copy, 2
** bytes a parameter, does not fit. With pack (where oneDNN has layouts for
** them) every update also packs each matrix of the copy twice into oneDNN's
** layout, as the forward's Wᵀ and the backward's W (docs/numerics.md#packed-weights;
** lx_arch_train_packed_bytes more), and the products read those.
** lx_optim_unshadow points the products back at the fp32 weights and frees
** the copies; it comes before lx_optim_release. */
int lx_optim_shadow(struct lx_optim *o, struct lx_model *model, int pack, struct lx_error *err);
void lx_optim_unshadow(struct lx_optim *o, struct lx_model *model);
/* One AdamW update's constants: the gradient's scale (clipping), the betas,
** lr over the first moment's bias correction, lr × weight decay, and the
** inverse of the second moment's bias correction. */
struct lx_adamw {
    float gs, b1, b2, step, wdl, ibc2;
};
/* AdamW on n parameters (weights, moments, gradient, decay flags), in the
** same bits whichever path runs: sixteen lanes on an AVX-512 CPU, or with
** plain (the reference) one element at a time. */
void lx_adamw_update(float *w, float *m, float *v, const float *grad, const unsigned char *decay, size_t n,
                     const struct lx_adamw *k, int plain);
/* Clip the global gradient norm to c->clip, then one AdamW update at 0-based
** step s of the schedule (lx_train_lr). */
void lx_optim_step(struct lx_optim *o, struct lx_model *model, const struct lx_train_cfg *c, long s);

/* A source of training windows besides the corpus: a task's training
** generator (a model's `mixture:`, harness/sweep/models.h). Each window is drawn
** from it with probability `weight`. The instance's length l is drawn from
** the task's shortest length lo (by bisection on its check) to hi, the
** window's T or max_length if shorter (the task trained at short distances
** only, the corpus windows at every one), as lo + ⌊v^p·(hi − lo + 1)⌋ for a
** uniform v in [0, 1) and p = length_power (an integer: v multiplied p times,
** so every CPU draws the same; 1, or 0 unset, a uniform draw; p > 1 skewed
** toward short instances, the far distances rarely trained, as in
** pretraining on short documents). The instance fills the window's last l
** tokens, after T − l tokens of the corpus window it replaces, which stay as
** context but are not scored: the model meets the task at every distance up
** to hi, short instances first teaching it what to look for, and the
** window's loss is the task's alone (scored prose would outweigh the few
** answer tokens: with it, a passkey + line model learnt neither in 3000
** steps). Targets: every next token of the instance, or with answer_only
** the answer's tokens alone. In a tokenizer's tokens an instance of exactly l
** tokens may not exist (a merge jumps past it): then the longest of the
** next seven below l is used and the corpus head grows by the difference. */
struct lx_instance;
struct lx_mix {
    const char *name;                   /* the task, for messages */
    double weight;                      /* fraction of training windows */
    const void *params;                 /* the task's resolved params */
    int (*sample)(const void *params, uint64_t key, long length, long sample, struct lx_instance *out,
                  struct lx_error *err);
    int (*check)(const void *params, long length, struct lx_error *err);   /* the task's, or NULL */
    int answer_only;                    /* score the answer tokens only (needle: not the haystack prose) */
    int length_power;                   /* p of the length draw, 1 to 8; 0 or 1 = uniform */
    long max_length;                    /* the longest instance; 0 (unset) or more than T = T */
    const struct lx_tokenizer *tok;     /* the model's tokenizer: instances are re-encoded in its tokens
                                        ** (lx_instance_fit); NULL = bytes */
};

/* Window b of a training batch: tok, tgt (T,) hold a corpus window; when the
** draw u falls in a task's share, the tail becomes an instance of that task
** whose length v picks (see struct lx_mix). Returns LX_OK or the task's error. */
int lx_mix_window(int *tok, int *tgt, int T, const struct lx_mix *mix, int n_mix, double u, double v,
                  uint64_t key, long sample, struct lx_error *err);

/* A training run's state after `step` steps (docs/config.md#resuming): with
** the model key and the config, what the rest of the run depends on. The
** windows of a step are a function of (key, step) alone, so weights, AdamW
** moments and these sums are all there is to save. */
struct lx_train_snap {
    long step;                  /* optimizer steps taken */
    size_t n;                   /* parameters */
    float *w, *m, *v;           /* (n,) weights and AdamW moments */
    double run_loss;            /* sum of the training losses since the last validation */
    long run_n;                 /* how many */
    double train_loss, val_loss;    /* the last validation's report */
    double seconds;             /* wall time so far */
};

/* Saving and resuming (NULL: neither). lx_train copies `from` in and goes on
** at from->step; after a step it calls save with the live state (its
** pointers valid during the call) every `every_steps` steps and whenever
** `every_seconds` of wall time have passed since the last save (0: that
** clock is off), never after the last step. A save that fails ends the run
** with its error: the callback decides what is fatal. */
struct lx_train_resume {
    const struct lx_train_snap *from;
    int (*save)(void *ctx, const struct lx_train_snap *s, struct lx_error *err);
    void *ctx;
    long every_steps;
    double every_seconds;
};

/* Progress callback: called after every step; `val` is NaN except on
** validation steps. */
typedef void (*lx_train_progress)(void *ctx, long step, long steps, double loss, double val,
                                  double tok_per_s);

/* Train m (already initialised) in place on the `train` split in the
** tokens of tok (text: lx_corpus_tokens of that split under tok; the byte
** tokenizer for lenx's byte-level models). Windows begin with tok's BOS
** (EOS without one), documents are joined by its EOS, and mlm masks with its
** MASK id (refused when it has none); the model's vocabulary must hold
** tok's ids. res (may be NULL) resumes from and saves snapshots; a resumed
** run ends with the weights an uninterrupted one has (bit for bit in
** portable numerics). */
int lx_train(struct lx_model *m, const struct lx_spec *spec, const struct lx_train_cfg *c, uint64_t key,
             const struct lx_corpus_tokens *text, const struct lx_tokenizer *tok, const struct lx_mix *mix,
             int n_mix, lx_train_progress progress, void *pctx, const struct lx_train_resume *res,
             struct lx_train_report *rep, struct lx_error *err);

/* The learning rate at step s (0-based) of the schedule. */
double lx_train_lr(const struct lx_train_cfg *c, long s);

/* BERT corruption of n positions: position i decides from the Philox block at
** counter ctr0 + i under key, so a (key, offset) pair always gets the same fate.
** Bernoulli(p) picks a position; it is scored (tgt = src) and its input is
** `mask` with probability 0.8, a random id below n_random 0.1 (a byte: 256
** for the byte tokenizer), itself 0.1 (all_mask: always `mask`). Unpicked
** positions keep their token and tgt = -1. Returns the count. */
long lx_mlm_corrupt(int *tok, int *tgt, const int *src, long n, uint64_t key, uint64_t ctr0, double p,
                    int all_mask, int mask, int n_random);

#endif
