/*
** harness/core/spec.h - the attention spec: what a method stack compiles into.
**
** Methods never run attention; they edit this declarative description, and the
** kernels (the gaussian task's and the engine's, harness/engine/kernels/attention.c)
** read it (docs/methods.md lists what each method sets). The spec says how
** logits are transformed:
**
**     logit(head, n, t) = op_k( ... op_2( op_1( S ) ) )
**
** where S is the base logit of the key t positions back from the query
** (t = 0 is the query itself), n is the number of keys the query sees, and each
** op is either a per-row scale (x -> r(n)·x: InfoScale, LogN, ...) or a
** per-distance affine map (x -> a_t·x + m_t: scale-invariant attention, ALiBi).
** Ops apply in stack order, so "[scaleinv, infoscale]" means κ(n)·(a_t·S + m_t).
** Every composition of these maps is again affine in S per (n, t), which is what
** lx_spec_row() tabulates for the fast paths; lx_spec_logit() is the naive
** reference that applies the ops one by one.
**
** The spec also says how positions enter q and k: a rotary table (RoPE's
** inverse frequencies and pair layout) or none, and which method claimed the
** position scheme, so that two schemes in one stack are refused. Beyond that
** it says:
**
**   frequencies  which method rescaled the rotary table (PI, NTK, YaRN,
**                p-RoPE): at most one per stack.
**   wavelengths  which method rounded the table's wavelengths (Resonance
**                RoPE): after any rescaling, never before one.
**   visibility   a window of keys |i − j| < window plus `sinks` first keys
**                that stay visible (windowed attention, StreamingLLM,
**                LM-Infinite), or blocks (xPos's blockwise causal
**                attention). n, the keys a row sees, counts only these.
**   posmap       an effective rotary distance for far keys (ReRoPE, Leaky
**                ReRoPE, LM-Infinite's global branch, StreamingLLM's
**                re-indexed sinks), written as positions the query and key
**                are rotated to: δ = qpos(i) − kpos(j) (see struct lx_posmap).
**                Distance ops (ALiBi, scale-invariant) see |δ| as well.
**   decay        xPos's per-pair decay of q·k with the distance (struct
**                lx_rotary's decay_scale): on the rotary table, so no
**                position map and no CosScale beside it.
**   geometry     dot product q·k/sqrt(d), or CosScale's s·cos(q, k).
**   temperature  a calibrated 1/τ on every logit (T5 attention alignment).
**   relative     a learned bias per (head, distance): T5's buckets, KERPLE's
**                kernel; the stack's last logit op, its values the model's
**                (facts.rel_bias).
**   pose         training position ids: PoSE's skip-wise chunks, or a sorted
**                random draw (randomized positions; training only).
**
** lx_spec_visible(), lx_spec_delta() and lx_spec_logit() are the naive
** reference; the engine's fast path is tested against them.
*/
#ifndef LX_SPEC_H
#define LX_SPEC_H

#include <math.h>

#include "harness/core/lx.h"

/* What the place a method runs in offers (task or model). */
enum {
    LX_CAP_LOGITS = 1 << 0,     /* pre-softmax logits exist (always) */
    LX_CAP_ROTARY = 1 << 1,     /* q/k carry rotary positions */
    LX_CAP_MODEL = 1 << 2,      /* a trained model runs (q, k, v exist) */
};

/* Facts about the model (or, with no model, the task) a method may read.
** They are never method parameters. */
struct lx_facts {
    int d_head;         /* head dimension d */
    long train_len;     /* training context length L */
    int n_heads;        /* attention heads (1 for synthetic logits) */
    long length;        /* evaluation length of the cell */
    unsigned caps;      /* LX_CAP_* offered */
    int training;       /* 1 while compiling the training-time part of a stack */
    long ft_len;        /* the stack's fine-tuning length (0 = not fine-tuned); a method fine-tuned in
                        ** sees it, and its automatic scale is ft_len / train_len, in training and
                        ** at evaluation (docs/config.md#fine-tuning) */
    const float *rel_bias;  /* (n_heads, values) the model's learned relative-position bias (t5bias, kerple:
                        ** struct lx_relbias), set by the engine for the model it runs (lx_model_spec) */
    int bidirectional;  /* 1: the model attends to keys on both sides (an mlm model) */
};

enum lx_op_kind {
    LX_OP_ROW_SCALE,    /* x -> r(n)·x */
    LX_OP_DIST_AFFINE,  /* x -> a(head, t)·x + m(head, t) */
};

struct lx_logit_op {
    enum lx_op_kind kind;       /* which of the two shapes */
    const char *method;         /* name of the method that pushed it, for messages */
    const void *params;         /* that method's resolved params; outlives the spec */
    /* ROW_SCALE: the factor for a query that sees n >= 1 keys */
    double (*row_scale)(const void *params, const struct lx_facts *f, long n);
    /* DIST_AFFINE: slope *a and offset *m for distance t >= 0 in head `head`;
    ** with signed_t, t = δ = i − j, negative for a key after the query */
    void (*dist_affine)(const void *params, const struct lx_facts *f, int head, double t,
                        double *a, double *m);
    int signed_t;               /* DIST_AFFINE: 1 tells keys after the query from keys before */
    double compress;            /* DIST_AFFINE: t is divided by it, PI on a stack whose positions are this op's
                                ** fixed bias (lx_spec_compress_distances); 0 = none */
};

#define LX_SPEC_MAX_OPS 8
#define LX_SPEC_MAX_PAIRS 256
#define LX_SPEC_MAX_METHODS 8       /* methods of one stack */
#define LX_SPEC_PARAM_WORDS 264     /* 2,112 bytes: the largest method params struct (longrope's two factor lists) */

/* Which two channels of a head form rotary pair k (docs/methods.md#rope). */
enum lx_rope_layout {
    LX_ROPE_HALF,           /* (x[k], x[k + d/2]): GPT-NeoX, Hugging Face */
    LX_ROPE_INTERLEAVED,    /* (x[2k], x[2k + 1]): RoFormer, GPT-J, Meta LLaMA */
};

/* Rotary positions: pair k of the vector at position p turns by p·inv_freq[k]. */
struct lx_rotary {
    int n_pairs;                            /* pairs rotated; 0 = no rotary */
    enum lx_rope_layout layout;             /* channel pairing */
    double base;                            /* the base b the table was built from */
    double inv_freq[LX_SPEC_MAX_PAIRS];     /* (n_pairs,) θ_k; 0 = a NoPE channel pair */
    double gain;                            /* cos and sin times it (0 = 1): see lx_spec_rotary_gain */
    /* xPos's decay (Sun et al. 2023): pair k of a query at position p is scaled by ζ_k^((p − c)/γ) and of a
    ** key at p by ζ_k^(−(p − c)/γ), so pair k's share of q·k is ζ_k^(δ/γ) times RoPE's at δ = i − j. Any c
    ** gives the same logits; the middle of the positions in use keeps both factors inside float's range. */
    double decay_scale;                     /* γ (xPos's scale_base); 0 = no decay */
    double decay_center;                    /* c */
    double log_zeta[LX_SPEC_MAX_PAIRS];     /* (n_pairs,) ln ζ_k */
};

/* Keys a query sees besides the causal rule: j with |i − j| < window, and the
** first `sinks` keys (j < sinks) always. window 0 = every key. Or, with
** block B, blockwise causal attention (xPos's BCA): a query in block ⌊i/B⌋
** sees the keys of its own block and the one before (bidirectional, the one
** after too). */
struct lx_visibility {
    const char *method;     /* the method that set it, or NULL */
    long window;            /* W: visible keys around the query, itself included; 0 = all */
    long sinks;             /* S: the first S keys stay visible */
    long block;             /* B: blockwise visibility (bca); 0 = none */
};

/* The effective rotary distance of far keys. For a visible pair with
** |i − j| >= from, the query and key are rotated to
**     lower (j < i):  qpos = min(scale·g(i) + shift, cap),  kpos = scale·g(j)
**     upper (j > i):  qpos = scale·g(i),  kpos = min(scale·g(j) + shift, cap)
** with g(t) = ⌊t / group⌋ (t itself for group 0 or 1), so δ = qpos − kpos and
** δ(i, j) = −δ(j, i). Nearer pairs use δ = i − j.
**   ReRoPE(w)          from w, scale 0, shift w            → δ = w
**   Leaky ReRoPE(w,k)  from w, scale 1/k, shift w(k−1)/k   → δ = w + (Δ − w)/k
**   LM-Infinite        from L_local, scale 0, shift D      → δ = D (global keys)
**   StreamingLLM(S,R)  from R+1, scale 1, cap S+R          → δ = min(i, S+R) − j
**   Self-Extend(G,w)   from w, group G, scale 1, shift w − w/G
**                                              → δ = ⌊i/G⌋ − ⌊j/G⌋ + w − w/G
** A chunked map (period C > 0) decides by chunks, not by distance: with
** c(t) = ⌊t/C⌋, r(t) = t mod C, a lower pair is near when c(i) = c(j), or
** c(i) = c(j) + 1 and r(i) <= local; far pairs take qpos = cap, kpos = r(j)
** (upper pairs the mirror).
**   DCA(C, w)          period C, local w, cap min(2C − 1, C + w)
**                                              → δ = cap − j mod C
** Either way a pair (i, j) with j < i is far when j < lx_posmap_near_lo(i),
** one with j > i when j >= lx_posmap_near_hi(i); near_lo never decreases. */
struct lx_posmap {
    const char *method;     /* the method that set it, or NULL = none */
    long from;              /* distances >= from are remapped (period 0) */
    double scale, shift, cap;   /* see above; cap = INFINITY for none */
    long group;             /* G of g(t) = ⌊t / G⌋; 0 or 1 = none */
    long period, local;     /* C and w of a chunked map; period 0 = none */
};

/* The position a far pair's query (lower pair) or key (upper pair) is
** rotated to when shifted, else the other's: see struct lx_posmap. */
double lx_posmap_pos(const struct lx_posmap *p, long t, int shifted);

/* The first of row i's near keys below it (keys j < it are far), and the
** end of its near keys above it (keys j >= it are far). */
long lx_posmap_near_lo(const struct lx_posmap *p, long i);
long lx_posmap_near_hi(const struct lx_posmap *p, long i);

/* The first row with a far key below it: the smallest i with near_lo(i) > 0. */
long lx_posmap_first_far(const struct lx_posmap *p);

/* A relative-position bias the model learns (T5's buckets, KERPLE's
** kernel): the logit of the key t positions back gets m_h(t; θ_h), θ_h head
** h's `values` learned numbers (facts.rel_bias, (n_heads, values)). The op
** adding it is the stack's last, so ∂logit/∂m = 1/τ: the backward sums the
** logits' gradient over τ per head and distance, g_h(t), and the method's
** `pull` turns that into θ_h's gradient. */
enum lx_rel_kind {
    LX_REL_NONE,
    LX_REL_T5,              /* T5's table of buckets (tensor rel_bias) */
    LX_REL_KERPLE_LOG,      /* KERPLE's −p·ln(1 + a·t) (tensor kerple, (p, a) per head) */
    LX_REL_KERPLE_POWER,    /* KERPLE's −a·t^p (tensor kerple, (p, a) per head, p at most LX_KERPLE_PMAX) */
};

/* KERPLE's clamps, as its code applies them before every forward: p and a
** at least LX_KERPLE_EPS, the power kernel's p at most LX_KERPLE_PMAX. The
** method applies them where it reads (p, a), the optimizer after every step. */
#define LX_KERPLE_EPS 0.01
#define LX_KERPLE_PMAX 2.0

struct lx_relbias {
    const char *method;     /* the method that set it, or NULL = none */
    int kind;               /* LX_REL_*: which table or kernel the model's numbers are */
    int values;             /* learned numbers per head: T5's buckets, KERPLE's 2 */
    int buckets;            /* T5: nb, bucket(t) in [0, nb) */
    long max_distance;      /* T5: distances from it on share the last bucket */
    int bidirectional;      /* T5: the encoder's buckets, keys after the query in the upper half (signed t) */
    /* dtheta[k] += Σ_t g[t]·∂m(t)/∂θ[k] over t in [0, n), θ = theta (values); when the op is
    ** signed (lx_spec.signed_dist), g has 2n − 1 entries, g[t + n − 1] at t in (−n, n) */
    void (*pull)(const struct lx_relbias *r, const float *theta, const double *g, long n, double *dtheta);
};

/* T5's bucket of distance t (fractional t floored toward 0), as
** transformers' _relative_position_bucket in float32. Unidirectional (the
** decoder's): t itself below nb/2, then nb/2 + ⌊ln(t / (nb/2)) /
** ln(max_distance / (nb/2)) · nb/2⌋, at most nb − 1, for t = |δ|.
** Bidirectional (the encoder's, r->bidirectional): the same rule over
** nb' = ⌊nb/2⌋ buckets at |δ|, plus nb' for a key after the query (t < 0). */
int lx_relbias_bucket(const struct lx_relbias *r, double t);

/* What a kind of learned bias is, in words, with the stack that trains it:
** "KERPLE's log kernel (kerple)"; "none" for LX_REL_NONE. */
const char *lx_relbias_describe(int kind);

/* Attention statistics a calibrating method may ask for: means over the
** attention rows (every layer and head, or layer 0 only) of max p, the
** entropy −Σ p ln p, and the standard deviation of the row's logits. */
struct lx_probe_stats {
    double pmax, entropy, sigma;
    long rows;              /* rows averaged */
};

/* The cell's model (or synthetic logits) as seen by a calibration: stats at
** the training length (at_train = 1) or at the cell's length, with every
** logit divided by tau. */
struct lx_probe {
    void *ctx;
    int (*stats)(void *ctx, int at_train, double tau, int layer0, struct lx_probe_stats *out,
                 struct lx_error *err);
};

/* A calibration hook: choose τ for this (model, length). */
typedef int (*lx_calibrate_fn)(const void *params, const struct lx_facts *f, const struct lx_probe *probe,
                               double *tau, struct lx_error *err);

/* Training position ids (the trainer draws them): PoSE (Zhu et al. 2024)
** spreads a window of T tokens over `target` in `chunks` chunks with random
** skips, and evaluation uses 0..T−1; randomized positions (Ruoss et al.
** 2023) give it a sorted draw of T distinct ids from [0, target), and a pass
** at evaluation the draw for its length (lx_randpos_eval). */
struct lx_pose {
    const char *method;     /* method that set the training positions (pose, randpos), or NULL = off */
    int chunks;             /* PoSE: N chunks; 0 with random */
    int random;             /* 1: randomized positions */
    long target;            /* L_t, or L: the position range to cover */
};

struct lx_spec {
    struct lx_facts facts;                  /* copied in at init */
    int n_ops;                              /* ops used */
    struct lx_logit_op ops[LX_SPEC_MAX_OPS];/* (n_ops,) in stack order */
    int has_dist;                           /* 1 when some op depends on the distance */
    int signed_dist;                        /* 1 when some op tells the distance's sign (signed_t): its
                                            ** tables run over δ in (−T, T), lx_spec_tab_len */
    const char *positions;                  /* method that set the position scheme, or NULL */
    const char *frequencies;                /* method that rescaled the rotary table, or NULL */
    const char *wavelengths;                /* method that rounded its wavelengths (after any rescaling), or NULL */
    const char *decay;                      /* method that set the rotary decay (xpos), or NULL */
    struct lx_rotary rotary;                /* rotary table (n_pairs 0 when none) */
    struct lx_visibility vis;               /* window and sinks */
    struct lx_posmap posmap;                /* far-key distances */
    int learn_scale;                        /* 1: S is multiplied by the model's learned w per (layer, head) */
    int cosine;                             /* 1: S = cos_scale · cos(q, k) (CosScale) */
    double cos_scale;                       /* s of CosScale */
    const char *geometry;                   /* method that set cosine, or NULL */
    double temperature;                     /* τ: every logit is divided by it (1 = none) */
    lx_calibrate_fn calibrate;              /* sets τ before the cell runs (t5align), or NULL */
    const void *calib_params;               /* its params */
    const char *calib_method;               /* its name */
    struct lx_pose pose;                    /* training positions */
    struct lx_relbias rel;                  /* a learned relative bias (t5bias, kerple), method NULL when none */
    /* each method's params, copied in and resolved for the facts (automatic
    ** values made concrete); ops and the calibration point here, so the spec
    ** must outlive its copies' users (copies of the spec by value are fine
    ** while the original lives) */
    double params[LX_SPEC_MAX_METHODS][LX_SPEC_PARAM_WORDS];
    int n_methods;                          /* params used */
    /* set by the engine for the model it runs (lx_model_spec), never by a method */
    double qk_dim;                          /* dot-product logits are q·k / sqrt(qk_dim); 0 = d (Gemma's
                                            ** query_pre_attn_scalar) */
    const struct lx_spec *local;            /* the spec of the model's local layers (Gemma 3's sliding-window
                                            ** layers: their own rope and window, no method), or NULL */
    long local_every;                       /* layer l is global when (l + 1) % local_every == 0 */
    double softcap;                         /* every final logit x becomes c·tanh(x/c) before the softmax
                                            ** (Gemma 2's attn_logit_softcapping); 0 = none */
    struct {
        const char *method;                 /* zerosink, or NULL: none */
        double logit;                       /* z: every row's softmax has one more logit z, of a key whose
                                            ** value is zero (methods/zerosink.c) */
        int learn;                          /* 1: z + w_(layer, head), w the model's learned tensor
                                            ** layers.L.attn.sink (zerosink learned: true) */
        const float *learned;               /* set by the engine for the layer it runs (lx_model_layer_spec):
                                            ** that layer's w (H,), or NULL */
    } zsink;
};

/* The zero sink's logit in head h: z, plus the layer's learned w_h when the model has them. */
static inline double lx_zsink_logit(const struct lx_spec *s, int h)
{
    return s->zsink.logit + (s->zsink.learned ? (double)s->zsink.learned[h] : 0.0);
}

/* Where a row's softmax starts in head h: its running max and sum before any
** key, the zero sink's logit and e^0 = 1, or -inf and 0 without one. Every
** attention path starts its rows here. */
static inline void lx_zsink_start(const struct lx_spec *s, int h, float *m, float *l)
{
    *m = s->zsink.method ? (float)lx_zsink_logit(s, h) : -INFINITY;
    *l = s->zsink.method ? 1.0f : 0.0f;
}

/* c·tanh(x/c) over s[j0, j1) (Gemma 2's soft-capping, in float as transformers' fp32 forward); nothing
** when c is 0. Every attention path applies it to a row's final logits. */
static inline void lx_softcap_row(float *s, long j0, long j1, double c)
{
    float cf = (float)c;
    for (long j = j0; c != 0 && j < j1; j++)
        s[j] = cf * tanhf(s[j] / cf);
}

/* The slope of the soft-cap at the logit whose capped value is y: 1 − (y/c)² (d/dx of c·tanh(x/c)); 1 when
** c is 0. The backward passes take it of the capped value they hold or recompute as lx_softcap_row does. */
static inline float lx_softcap_slope(float y, double c)
{
    float u = c != 0 ? y / (float)c : 0.0f;
    return 1.0f - u * u;
}

/* The spec layer l runs: the local layers' (spec->local) or spec itself. */
static inline const struct lx_spec *lx_spec_layer(const struct lx_spec *spec, long l)
{
    return spec->local && (l + 1) % spec->local_every != 0 ? spec->local : spec;
}

void lx_spec_init(struct lx_spec *spec, const struct lx_facts *facts);

/* Append an op; fails when the stack is longer than LX_SPEC_MAX_OPS. */
int lx_spec_push(struct lx_spec *spec, const struct lx_logit_op *op, struct lx_error *err);

/* A rescaling's attention factor a on cos and sin (YaRN's mscale, LongRoPE's
** a), as transformers and llama.cpp apply it: on a rope over whole heads that
** is the base logit q·k times a², the row scale op `a2`, put first of the
** stack's ops whatever the method's place (so a bias before it is not
** scaled, as on part of a head); on a rope over part
** of each head (rope dims) only the turned channels' share of q·k gets a², so
** the rotary table's gain takes a instead. */
int lx_spec_rotary_gain(struct lx_spec *spec, const struct lx_logit_op *a2, double a, struct lx_error *err);

/* Claim the position scheme for `method`; fails, naming both, when another
** method of the stack already did (e.g. rope + nope). */
int lx_spec_claim_positions(struct lx_spec *spec, const char *method, struct lx_error *err);

/* Claim one of the single-owner parts (frequencies, visibility, posmap,
** geometry): *slot must be NULL; otherwise fail naming both methods and `what`. */
int lx_spec_claim(const char **slot, const char *method, const char *what, struct lx_error *err);

/* Claim the rotary frequencies (PI, NTK, YaRN, llama3, p-RoPE): the stack must have
** rotary positions already, and no other method may have rescaled them. */
int lx_spec_claim_frequencies(struct lx_spec *spec, const char *method, struct lx_error *err);

/* PI on a stack without rotary positions whose position scheme is a fixed distance bias (alibi, sandwich):
** positions m -> m/s, so every op that scheme pushed reads t/s (struct lx_logit_op's compress). Claims the
** frequencies' slot, as PI on rotary does; refused, naming `method`, on a stack with no position scheme or a
** learned one (t5bias, kerple: their gradient is summed at whole distances). */
int lx_spec_compress_distances(struct lx_spec *spec, const char *method, double s, struct lx_error *err);

/* LongRoPE's attention factor a (cos and sin are multiplied by it): the one
** given when above 0, else sqrt(1 + ln s / ln L) for an extension s > 1,
** else 1 (transformers' _compute_longrope_parameters). */
double lx_longrope_attention(double given, double s, double L);

/* The context scale of a frequency method (PI, YaRN, llama3), in its resolve
** hook: *original 0 becomes the training length (original NULL: L is always
** the training length), then *scale 0 becomes max(1, length / L), or, for a
** method fine-tuned in at f->ft_len, max(1, ft_len / L) at every length (the
** PI and YaRN recipe). Trained in from scratch (f->training without ft_len) a
** scale of 0 is refused: training has no evaluation length. */
int lx_spec_resolve_scale(const char *method, double *scale, long *original, const struct lx_facts *f,
                          struct lx_error *err);

/* Claim the position map (rerope, selfextend, dca, streaming, lminfinite):
** one per stack, and none beside a rotary decay, whose factors follow the
** positions the rows are turned to, not a far key's mapped distance. */
int lx_spec_claim_posmap(struct lx_spec *spec, const char *method, struct lx_error *err);

/* Claim the rotary decay (xpos): after rope, one per stack, no position map. */
int lx_spec_claim_decay(struct lx_spec *spec, const char *method, struct lx_error *err);

/* Claim the training position ids (pose, randpos): after rope, one per stack. */
int lx_spec_claim_train_positions(struct lx_spec *spec, const char *method, struct lx_error *err);

/* Training positions spread over `target` (pose, randpos): refused while compiling a training whose windows
** (f->length: the training or fine-tuning length) are longer than the target, where no draw fits. */
int lx_spec_check_train_target(const char *method, long target, const struct lx_facts *f, struct lx_error *err);

/* Fail unless the stack so far has rotary positions (rope before `method`). */
int lx_spec_need_rotary(const struct lx_spec *spec, const char *method, struct lx_error *err);

/* Run the spec's calibration (if any) through the probe and set its
** temperature to the chosen τ. */
int lx_spec_calibrate(struct lx_spec *spec, const struct lx_probe *probe, struct lx_error *err);

/* Naive reference: the final logit for base logit s at effective distance t
** (δ; an op that is not signed_t sees |δ|), for a query that sees n keys;
** includes the temperature. */
double lx_spec_logit(const struct lx_spec *spec, int head, long n, double t, double s);

/* Fast path: for t in [t0, t0 + n_t), logit = A[t - t0]·S + B[t - t0]
** (temperature included). A and B are (n_t,); t0 < 0 only for a signed spec. */
void lx_spec_row(const struct lx_spec *spec, int head, long n, long t0, long n_t,
                 double *A, double *B);

/* A and B at one (possibly fractional, and for a signed spec negative) distance t. */
void lx_spec_affine(const struct lx_spec *spec, int head, long n, double t, double *A, double *B);

/* Distance tables over a window of T keys: T entries at t = |i − j|, or for
** a signed spec 2T − 1 at t = i − j + T − 1. */
static inline long lx_spec_tab_len(const struct lx_spec *spec, long T)
{
    return spec->signed_dist ? 2 * T - 1 : T;
}

/* The entry of a whole distance δ, |δ| < T (a far key's mapped one too). */
static inline long lx_spec_tab_delta(const struct lx_spec *spec, long delta, long T)
{
    return spec->signed_dist ? delta + T - 1 : delta < 0 ? -delta : delta;
}

static inline long lx_spec_tab_index(const struct lx_spec *spec, long i, long j, long T)
{
    return lx_spec_tab_delta(spec, i - j, T);
}

/* The distance op's t for δ: δ itself when the op is signed_t, else |δ|; divided by the op's compress when PI
** set one. */
static inline double lx_op_distance(const struct lx_logit_op *op, double delta)
{
    double t = op->signed_t ? delta : fabs(delta);
    return op->compress > 0 ? t / op->compress : t;
}

/* Is key j visible to query i in a window of T tokens? */
int lx_spec_visible(const struct lx_spec *spec, long i, long j, long T, int causal);

/* The keys row i sees: [lo, hi) plus the sinks [0, min(sinks, lo)) and, in a
** bidirectional row whose window ends before the sinks do, the sinks
** [hi, lx_spec_upper_sinks()); returns n. */
long lx_spec_row_keys(const struct lx_spec *spec, long i, long T, int causal, long *lo, long *hi);

/* The end of the sinks after a row's window [lo, hi): min(sinks, T) when the
** row is bidirectional and they reach past hi, else hi (no such keys). */
long lx_spec_upper_sinks(const struct lx_spec *spec, long T, int causal, long hi);

/* Effective signed rotary distance δ between query i and key j (i − j when
** no posmap applies). */
double lx_spec_delta(const struct lx_spec *spec, long i, long j);

/* Does the posmap apply to the pair (i, j)? */
int lx_spec_far(const struct lx_spec *spec, long i, long j);

/* The logit scale on q·k: cos_scale with cosine geometry, else 1/sqrt(d)
** (1/sqrt(qk_dim) when the engine set one). */
double lx_spec_qk_scale(const struct lx_spec *spec, int d);

#endif
