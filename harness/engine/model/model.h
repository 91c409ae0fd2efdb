/*
** harness/engine/model/model.h - the transformer lenx trains and evaluates
** (docs/checkpoints.md#the-forward-pass).
**
**   tokens -> tok_emb -> [ x += Wo·attn(rope(Wq·n1(x) [+ bq]), rope(Wk·n1(x) [+ bk]), Wv·n1(x) [+ bv])
**                          x += W2·act(W1·n2(x) [, W3·n2(x)]) ] × layers
**          -> norm -> head (or tok_emb when tied) -> logits
**
** Pre-norm blocks with RMSNorm, a GELU (tanh) or SwiGLU MLP, grouped-query
** attention (H query heads share KV key/value heads: query head h reads
** key/value head h / (H / KV); KV = H is multi-head attention), optional q/k/v
** biases (qkv_bias) and an optionally tied output head (tie_head: logits =
** norm(x)·tok_embᵀ, no lm_head tensor). Two modes: `causal` (next-token LM: causal attention)
** and `mlm` (bidirectional encoder; inputs carry LX_TOK_MASK). Positions and
** logit transforms come from the attention spec (harness/core/spec.h): the rotary
** table rotates q and k by their position in the window, the logit ops act on
** q·k/sqrt(d).
**
** All weights live in one float buffer in the order of lx_arch_tensors(),
** which is also the checkpoint's tensor list (docs/checkpoints.md). W_q, W_k,
** W_v are adjacent, so one GEMM computes q|k|v (and b_q, b_k, b_v are adjacent,
** so one bias row adds to it); likewise W1|W3 for SwiGLU. A qkv row of the
** activations is (H + 2·KV)·D floats: q (H, D), then k (KV, D), then v (KV, D),
** each (head, dim) row-major.
*/
#ifndef LX_MODEL_H
#define LX_MODEL_H

#include <stddef.h>

#include "harness/core/diag.h"
#include "harness/core/spec.h"
#include "harness/engine/kernels/numerics.h"    /* the attention path of training passes */
#include "harness/engine/model/arch.h"

/* A look at one head's attention probabilities P (T, T) (row i = query i, 0
** where masked) of window b in layer l, right after the head is computed.
** Called from the threads of the head loop, once per (l, b, h): a probe that
** writes only to its own (l, b, h) slot needs no lock. */
typedef void (*lx_att_probe)(void *ctx, int layer, int b, int h, const float *P, int T);
struct lx_acts;
/* A loss-only pass's block of n logit rows from row r0 (n, V), after the
** head has computed their losses (a->loss[r0 .. r0 + n)); read in place. */
typedef void (*lx_logits_hook)(void *ctx, const struct lx_acts *a, long r0, long n, const float *logits);

/* Activations of one forward pass over B windows of T tokens (N = B·T rows),
** laid out by one table (acts.c) that both the allocation and the memory plan
** read. With `train` every layer keeps what backward needs; without, the pass
** holds one layer's activations at a time (the residual stream x updated in
** place, the MLP's activation over its pre-activation h, the attention, MLP
** and head phases overlaid), the loss's probabilities over blocks of
** LX_EVAL_ROWS rows (in portable numerics the MLP and the head too, so their
** scratch is O(LX_EVAL_ROWS × width)), and runs attention tiled
** (harness/engine/kernels/tiled.c), so memory grows as O(T·d), row statistics
** (stats, diag) summed from the tiles; a pass with a probe (or head_path)
** runs the head path instead and allocates one T × T probability buffer per
** thread. */
#define LX_EVAL_ROWS 1024
struct lx_kvcache;

/* The attention path of training passes: lx_train_attn_get, with the
** process's other settings in harness/engine/kernels/numerics.h. */

struct lx_acts {
    int B, T, train;
    int loss_only;              /* eval: laid out as LX_ACTS_EVAL_LOSS, logits (LX_EVAL_ROWS, V) */
    int answer;                 /* eval: laid out as LX_ACTS_EVAL_ANSWER, logits of the scored rows only */
    long bad_logit;             /* loss_only: row·V + token of the first non-finite logit, or −1 */
    float bad_value;            /* ... and its value */
    int half_over_layer;        /* eval with an f16 attention (lx_attn_half): 1 + the layer of the first q, k
                                ** or v past f16's range in this pass, 0: none */
    long half_over_row;         /* ... and its row (window · T + position) */
    int n_thr;                  /* attention scratch slots */
    int portable;               /* 1: laid out in portable numerics (lx_numerics_get() at allocation) */
    long rows;                  /* rows the MLP and the head run over at a time: N, or in a portable
                                ** evaluation LX_EVAL_ROWS (xn2, h and xnf hold that many) */
    struct lx_arch arch;        /* what the table was laid out for */
    void *block;                /* every non-lazy buffer below, carved from this one allocation (lx_big_calloc:
                                ** huge pages where the kernel gives them, so a window's first touch of
                                ** hundreds of MB is hundreds of faults, not a hundred thousand) */
    size_t block_bytes;
    float *x;                   /* train: (layers+1, N, C) residual stream; eval: (N, C), in place */
    float *rstd1, *xn1;         /* (·, N), (·, N, C) */
    float *qkv;                 /* (·, N, (H + 2KV)·D) after rope */
    int tiled;                  /* train: 1 runs attention tiled (lx_train_attn_get at allocation) */
    float *att;                 /* materialised train: (layers, B, H, T, T) probs; eval: (n_thr, T, T),
                                ** allocated by the first pass that needs probabilities (a probe, or
                                ** head_path); tiled train: NULL */
    float *lse;                 /* tiled train: (layers, B, H, T) each row's log-sum-exp */
    float *tile_bwd;            /* tiled train: (n_thr, lx_tile_bwd_thread_floats) backward scratch */
    float *dkv;                 /* tiled train with kv_heads < heads: (H, T, 2·D) per-head dk | dv */
    float *ao;                  /* (·, N, HD) attention output */
    float *xm;                  /* train: (layers, N, C) residual after attention */
    float *rstd2, *xn2;         /* train: (layers, N), (·, N, C); eval: xn2 (rows, C) */
    float *h;                   /* (·, N, F or 2F) MLP pre-activation; eval: (rows, F or 2F), the activation
                                ** over each row's first F */
    float *act;                 /* train: (layers, N, F) MLP activation */
    float *post, *post_rstd;    /* train with post_norms: (layers, 2, N, C) the attention's and the MLP's
                                ** products before their post-norm, (layers, 2, N) its 1/rms */
    float *sig;                 /* train: (layers, N, F) GELU's σ(2u), kept for backward */
    float *embraw, *embrstd;    /* train with arch emb_norm: (N, C) the embedding rows before their LayerNorm,
                                ** (N) its 1/std */
    float *par;                 /* arch parallel: (N, C) eval: a layer's input, which its MLP reads; train: the
                                ** gradient of a layer's input through its MLP */
    float *rstdf, *xnf;         /* (N), (rows, C) final norm */
    float *logits;              /* (N, V); loss_only: (LX_EVAL_ROWS, V), one block of rows; answer: the
                                ** scored rows', in row order (lx_acts_logits finds a row's) */
    int *hrow;                  /* answer: (N) each row's place in logits, or −1 (not scored) */
    float *probs;               /* train: (N, V) softmax, when targets were given; eval: NULL (losses only) */
    float *loss;                /* (N) per-token NLL (0 where no target) */
    double *rope_cs;            /* (N, n_pairs, 2) cos, sin: per window position, or per row with pos */
    double *rope_csk;           /* the keys' table beside it under a rotary decay (xpos), on first use */
    double *rope_local;         /* the local layers' table (arch local_every), as rope_cs */
    double *tab;                /* (n_thr, 2T) spec row tables A, B */
    float *far;                 /* (n_thr, lx_attn_far_floats) posmap scratch, allocated on first use */
    float *tile;                /* eval, tiled train: (n_thr, lx_tile_thread_floats) tiled-forward scratch */
    double *tile_tab;           /* eval, tiled train: (H, 1 + LX_SPEC_MAX_OPS, T) its distance tables */
    float *tile_rot;            /* eval with a posmap: its far-key rows (lx_tile_rot_floats), on first use */
    double *tile_acc;           /* eval: (n_thr, lx_tile_acc_doubles) per-row sums of the statistics */
    float *tile_pn;             /* eval rounding P as llama.cpp's half cache (lx_attn_half): (n_thr,
                                ** lx_tile_pnorm_floats) a block's rows of P, on first use */
    struct lx_diag *tile_part;  /* eval: (H·(lx_tile_stat_units + 1)) per-(head, unit) and per-head sums */
    float *tile_kpack;          /* eval, tiled train: (lx_tile_kpack_floats) keys packed for the tiles */
    float *qkraw, *qkr;         /* train with qk_norm: (layers, N, H + KV, D) q and k heads before their
                                ** RMSNorm, (layers, N, H + KV) its 1/rms */
    float *qkn;                 /* train with cosine: (layers, N, 2, H) norms of q, k before normalising
                                ** (k uses the first KV of its H slots) */
    const int *pos;             /* (B, T) position ids (PoSE training), or NULL = 0..T−1; not owned */
    double *stats;              /* (layers, B, H, LX_ATTN_NSTATS) attention row sums, or NULL; not owned */
    struct lx_diag *diag;       /* (layers, B, H) every row statistic of harness/core/diag.h, or NULL;
                                ** summed from the tiles (not by the head path); not owned */
    const struct lx_ranges *diag_ranges;    /* distance ranges of diag's range_*, or NULL; not owned */
    int diag_buckets;           /* 1: diag's mass per distance bucket */
    const long *stats_row0;     /* (B,) per window, only rows in [stats_row0[b], stats_row1) are summed
                                ** into stats and diag (NULL: from row 0); not owned */
    long stats_row1;            /* 0 = to the last row */
    struct lx_kvcache *kv;      /* eval: every layer's key and value rows are saved here (decode.h), or
                                ** NULL; not owned */
    int head_path;              /* eval: 1 runs the T × T head path even without a probe (tests and
                                ** benchmarks compare it with the tiles) */
    lx_att_probe probe;         /* called with every head's probabilities, or NULL; not owned */
    void *probe_ctx;
    lx_logits_hook on_logits;   /* loss_only: called with each block of logits before the next overwrites
                                ** it (what a caller reads of every row, a top-k), or NULL; not owned */
    void *on_logits_ctx;
    /* backward scratch (train only) */
    float *dx, *dxn, *dqkv, *dao, *dh, *dact, *dlogits, *dp;   /* dp: materialised (n_thr, T, T) */
};

/* `train` of lx_acts_alloc, lx_acts_bytes and lx_run_bytes: evaluation (0),
** training on the process's attention path (1, lx_train_attn_get), or
** training on the path named (tests and the benchmark compare the two). */
enum { LX_ACTS_EVAL = 0, LX_ACTS_TRAIN = 1, LX_ACTS_TRAIN_TILED = 2, LX_ACTS_TRAIN_MATERIALISED = 3 };
/* Evaluation whose caller reads the per-token losses only (a score, ppl): the
** head's logits are held LX_EVAL_ROWS rows at a time, not (N, V) — at 32k
** tokens and Llama-3's 128,256-token vocabulary 16.8 GB fewer. The pass
** still checks every logit (lx_acts_check_finite names the first non-finite). */
#define LX_ACTS_EVAL_LOSS 4
/* Evaluation whose caller reads the logits of the scored rows only (targets
** >= 0), at most LX_ACTS_ANSWER_ROWS of each window: a retrieval pass reads
** an answer's few rows of (B·T, V) logits, and the head (final norm, product,
** cross-entropy) runs over those rows alone. At Llama-3's vocabulary a pass
** of 8,192 rows held 4.2 GB of logits and spent a fifth of a 1B model's
** products on rows nobody reads. lx_acts_logits gives a row's logits. The
** pass checks the logits it computes. A pass without targets runs no head:
** what the attn task and the calibrations read are attention statistics. */
#define LX_ACTS_EVAL_ANSWER 5
#define LX_ACTS_ANSWER_ROWS 64

/* Allocate activations (one block); returns LX_ENOMEM (with sizes) when they do not fit. */
int lx_acts_alloc(struct lx_acts *a, const struct lx_arch *arch, int B, int T, int train,
                  struct lx_error *err);
void lx_acts_release(struct lx_acts *a);
/* Watch every head's attention probabilities in the forward passes that use
** a (NULL removes the probe): how tasks look at attention without touching
** the activations' fields. */
void lx_acts_set_probe(struct lx_acts *a, lx_att_probe probe, void *ctx);
/* Bytes lx_acts_alloc would take (a double: hostile sizes overflow size_t). */
double lx_acts_bytes(const struct lx_arch *arch, int B, int T, int train);
/* The buffer of a lazy row (field: &a->far, &a->att, ...), allocated on
** first use with the size acts.c's table gives it. */
void *lx_acts_lazy(struct lx_acts *a, void *field);

/* Memory, checked before allocating (docs/config.md, "Memory"): the bytes the
** machine has available (/proc/meminfo MemAvailable, else sysconf); a model's
** weights, plus for training its gradient, AdamW moments and decay mask; and
** everything one pass over (B, T) takes on the current thread count: model,
** activations, per-thread attention scratch, token buffers. An evaluation
** pass counts the T x T probabilities (and the head path's posmap scratch)
** only when `uses` has LX_RUN_PROBS: a probe, which runs the head path;
** every other evaluation (row statistics and calibrations included) runs
** tiled, in O(T·d). LX_RUN_KVCACHE counts a KV cache for the B windows
** (greedy answers, harness/engine/kernels/decode.h), LX_RUN_KVFAR its far keys too
** (a posmap on rotary positions), LX_RUN_KVDIST its kept distance tables. */
enum {
    LX_RUN_PROBS = 1 << 0,      /* the pass reads whole attention probability rows (a probe) */
    LX_RUN_KVCACHE = 1 << 1,    /* a KV cache of every window follows the pass */
    LX_RUN_KVFAR = 1 << 2,      /* ... with its far keys (lx_decode_far) */
    LX_RUN_POSMAP = 1 << 3,     /* the spec maps far positions (lx_run_uses): far-key rows */
    LX_RUN_LOSS = 1 << 4,       /* lx_eval_bytes: the pass's caller reads losses only (LX_ACTS_EVAL_LOSS) */
    LX_RUN_ANSWER = 1 << 5,     /* ... the scored rows' logits only (LX_ACTS_EVAL_ANSWER) */
    LX_RUN_DECAY = 1 << 6,      /* the spec decays q.k by the distance (xpos): the keys' own rotary table */
    LX_RUN_KVDIST = 1 << 7,     /* the KV cache keeps distance tables across steps (lx_decode_dist_kept) */
    LX_RUN_PNORM = 1 << 8,      /* an evaluation rounds P as llama.cpp's half cache (lx_attn_half): rows of P */
};
/* The LX_RUN_* flags a spec adds to a pass's memory. */
unsigned lx_run_uses(const struct lx_spec *spec);
/* The weights as fp32; with train, also the gradient, AdamW's moments, the
** decay mask and (bf16 numerics) the weights' bf16 copy: 4, 17 or 19 bytes a parameter. */
double lx_model_bytes(const struct lx_arch *a, int train);
/* A pass's bytes (model, activations, tables, tokens; with LX_RUN_KVCACHE a
** cache whose layers keep all T rows, a model's local layers their rings:
** an upper bound, where lx_eval_bytes sizes a spec's rings too). */
double lx_run_bytes(const struct lx_arch *a, int B, int T, int train, unsigned uses);
/* The weights' bytes in an evaluation: under bf16 the matrices rounded and
** packed at load (lx_arch_bf16_bytes), else `held` bytes as held
** (lx_model_held_bytes; 0: fp32 in lenx's own buffer). */
double lx_eval_weight_bytes(const struct lx_arch *a, double held, int bf16);
/* An evaluation pass's bytes with those weights under spec: lx_run_bytes for
** fp32 in lenx's own buffer, its KV cache the spec's (its visibility's rings,
** kvcache.h; NULL: all T rows); otherwise with the weight products'
** conversion buffers. */
double lx_eval_bytes(const struct lx_arch *a, const struct lx_spec *spec, double held, int bf16, int B, int T,
                     unsigned uses);
/* Zeroed weights for arch a, mapped; LX_ENOMEM with the sizes when they do not fit. */
int lx_model_alloc(struct lx_model *m, const struct lx_arch *a, struct lx_error *err);

/* LX_OK when every weight is finite, else LX_ERUN naming the first
** non-finite tensor and index (checked after loading and training). With
** weights_sha256 (the weights' hash as loaded, or NULL) a pass is remembered
** in the hash cache under that hash, how each matrix is held (its type, packed
** or not) and the build, and a remembered pass is not scanned again
** (docs/checkpoints.md#what-a-load-costs). */
int lx_model_check_finite(const struct lx_model *m, const char *weights_sha256, struct lx_error *err);
/* LX_OK when the last forward's logits (V a row; those it computed) and its
** loss at scored targets (>= 0; targets may be NULL) are finite in the first
** nb windows; else LX_ERUN naming the first row, a kept row's logit before
** its loss. */
int lx_acts_check_finite(const struct lx_acts *a, long V, int nb, const int *targets, struct lx_error *err);
/* Row r's logits (V) after the last forward, or NULL where the pass did not
** keep them (an answer pass's unscored rows, a losses-only pass). */
const float *lx_acts_logits(const struct lx_acts *a, long r);

/* LX_OK when the spec's learned parts are the model's: a stack with t5bias
** or kerple needs the model's learned bias of that kind (T5's table of as
** many buckets, KERPLE's kernel), and zerosink learned: true the model's
** learned sinks (arch sinks, which need it), LX_EINVAL naming both. */
int lx_model_spec_check(const struct lx_model *m, const struct lx_spec *spec, struct lx_error *err);
/* The spec as the engine runs it on m: spec itself (m has no learned
** relative bias, or spec->facts.rel_bias is already m's, as
** lx_local_compile sets it, and none of Gemma's qk_dim and local layers),
** or local[0], a copy with facts.rel_bias m's, qk_dim m's and, for a model
** with local layers, local[1] their spec (rope at local_base, a window of
** local_window keys) as its `local` (lx_spec_layer picks a layer's). */
const struct lx_spec *lx_model_spec(const struct lx_model *m, const struct lx_spec *spec, struct lx_spec local[2]);
/* The spec layer l of m runs: lx_spec_layer's, or, when m learned sink
** logits (arch sinks), a copy of it in own with zsink.learned the layer's. */
const struct lx_spec *lx_model_layer_spec(const struct lx_model *m, const struct lx_spec *spec, long l,
                                          struct lx_spec *own);

/* Forward over tokens (B, T). With targets (B, T; < 0 = not scored) fills
** probs and loss and returns the mean NLL over scored tokens (0 when none). */
double lx_model_forward(const struct lx_model *m, const struct lx_spec *spec, const int *tokens,
                        const int *targets, struct lx_acts *a);

/* Backward of the mean NLL of the last forward (which had targets); gradients
** accumulate (+=) into g (views of a buffer shaped like the weights). */
void lx_model_backward(const struct lx_model *m, const struct lx_spec *spec, const int *tokens,
                       const int *targets, struct lx_acts *a, struct lx_weights *g);

/* The weight products a forward shares with decoding (docs/numerics.md#half-precision):
** q|k|v (+ biases) of n rows of x (n, C) into qkv (n, (H + 2·KV)·D); the
** MLP's pre-activation w1|w3 (or w1) into h (n, F2); n tokens' embeddings
** into x (n, C). */
void lx_layer_qkv(float *qkv, const float *x, const struct lx_layer_w *W, const struct lx_arch *a, long n);
/* qk_norm (Qwen3): each q and k head of n qkv rows RMS-normalised in place
** with the layer's gains (nothing without them); raw (n, H + KV, D) and rstd
** (n, H + KV), when given, keep the heads before it and their 1/rms. The
** backward turns dqkv's q and k parts from the normalised heads' gradient
** into the projections', adding the gains' into dgq, dgk (D). */
void lx_layer_qk_norm(float *qkv, float *raw, float *rstd, const struct lx_layer_w *W, const struct lx_arch *a,
                      long n);
void lx_layer_qk_norm_backward(float *dqkv, float *dgq, float *dgk, const float *raw, const float *rstd,
                               const struct lx_layer_w *W, const struct lx_arch *a, long n);
void lx_layer_w13(float *h, const float *x, const struct lx_layer_w *W, const struct lx_arch *a, long n);
/* n rows of logits (row stride V) from the final norm's rows xn (n, C): the head's product, its bias
** (arch head_bias), Gemma 2's soft-cap. */
void lx_head_logits(float *lg, const float *xn, const struct lx_model *m, long n);
/* The embedding rows of tokens (times sqrt(d_model) with arch emb_scale; through the embedding
** LayerNorm with arch emb_norm, keeping the rows before it in raw unless NULL and its 1/std in rstd (n)). */
void lx_embed(float *x, float *raw, float *rstd, const struct lx_model *m, const int *tokens, long n);
/* x (n, C) += w·in + b (in: n rows of k, stride ld_in; b (C) or NULL); with post (arch
** post_norms) the product goes to prod (n, C) and its RMSNorm with gains
** post (1/rms into rstd, n) to normed (n, C; may be prod) first, as Gemma's
** block adds it: training keeps prod and rstd for the norm's backward. */
void lx_layer_out(float *x, float *prod, float *normed, float *rstd, const float *in, long ld_in, struct lx_wmat w,
                  const float *b, const float *post, long n, long k, long C, float eps);
/* The MLP's activation of its pre-activation h (n rows of F, or 2F gated)
** into act (row stride ldact; may be h): GELU (keeping σ(2u) in sig unless
** NULL), GELU's exact form (keeping Φ), SwiGLU or GeGLU. */
void lx_mlp_act(const struct lx_arch *a, float *act, int ldact, float *sig, const float *h, long n);
/* The blocks' and the final norm of n rows of d_model (arch norm: RMSNorm or
** LayerNorm, shifted by b when not NULL), y may be x, rstd (n) kept for the
** backward (dx, dg, db +=; db NULL without a shift). */
void lx_norm_forward(const struct lx_arch *a, float *y, float *rstd, const float *x, const float *g, const float *b,
                     long n);
void lx_norm_backward(const struct lx_arch *a, float *dx, float *dg, float *db, const float *dy, const float *x,
                      const float *g, const float *rstd, long n);

/* Rotate the q (H heads) and k (KV heads) parts of qkv rows (N = B·T, row
** stride (H + 2KV)·D) by their window position (sign +1), or back (sign −1,
** the backward of the rotation: cos and sin carry the same factors, so the
** transpose is the sign of sin). Keys take csk's rows, or cs's when NULL. */
void lx_rope_apply(float *qkv, const struct lx_rotary *r, const double *cs, const double *csk, int B, int T, int H,
                   int KV, int D, int sign);
/* cs (T, n_pairs, 2) for positions 0..T−1, or (n, n_pairs, 2) for pos[0..n);
** under a rotary decay (r->decay_scale) the queries' rows, and csk, of the
** same shape, the keys' (csk is not touched without a decay). */
void lx_rope_table(double *cs, double *csk, const struct lx_rotary *r, int T);
void lx_rope_table_pos(double *cs, double *csk, const struct lx_rotary *r, const int *pos, long n);

/* CosScale: q (H heads) and k (KV heads) of every row to unit length (norms r
** kept in qkn, (N, 2, H)), and the backward through it (dqkv in place, from
** the normalised qkv). Rows are (H + 2KV)·D floats. */
void lx_qk_normalize(float *qkv, float *qkn, long N, int H, int KV, int D);
void lx_qk_normalize_backward(float *dqkv, const float *qkv, const float *qkn, long N, int H, int KV, int D);

#endif
