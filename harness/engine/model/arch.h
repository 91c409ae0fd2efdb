/*
** harness/engine/model/arch.h - the architecture (the `arch:` mapping of a
** model), its tensor list, the weight buffer and its views, struct lx_model
** (the layout model.h's header describes). Includes core only.
*/
#ifndef LX_ARCH_H
#define LX_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "harness/core/params.h"
#include "harness/engine/kernels/wprod.h"

enum { LX_MODEL_CAUSAL, LX_MODEL_MLM };     /* lx_arch.mode */
enum { LX_MLP_GELU, LX_MLP_SWIGLU, LX_MLP_GEGLU, LX_MLP_GELU_ERF };  /* lx_arch.mlp */
enum { LX_NORM_RMS, LX_NORM_LAYER };    /* lx_arch.norm */

/* The architecture: the `arch:` mapping of a model in a sweep file. */
struct lx_arch {
    int mode;           /* LX_MODEL_CAUSAL or LX_MODEL_MLM */
    long layers;        /* blocks */
    long d_model;       /* residual width C */
    long heads;         /* attention (query) heads H */
    long kv_heads;      /* key/value heads KV, dividing H; 0 = H (multi-head). Read it through
                        ** lx_arch_kv(); stored only when it differs from H */
    long d_head;        /* head dimension D */
    long d_mlp;         /* MLP hidden width F */
    int mlp;            /* LX_MLP_GELU, LX_MLP_SWIGLU, LX_MLP_GEGLU (GELU's tanh form gating, Gemma) or
                        ** LX_MLP_GELU_ERF (GELU's exact form, MPT) */
    int norm;           /* LX_NORM_RMS (RMSNorm) or LX_NORM_LAYER (LayerNorm, MPT): the blocks' and the final
                        ** norm (qk_norm's and post_norms' stay RMSNorms) */
    int bias;           /* 1: a bias on every projection (implies qkv_bias) and a shift on every LayerNorm
                        ** (GPT-NeoX): tensors layers.L.{attn_norm,attn.wo,mlp_norm,mlp.w1,mlp.w3,mlp.w2}.bias,
                        ** norm.bias */
    int parallel;       /* 1: x + attn(n1(x)) + mlp(n2(x)), both branches reading the block's input (GPT-NeoX's
                        ** parallel residual) */
    int norm_bias;      /* 1: a shift on every LayerNorm without the projections' biases (Falcon): the *norm.bias
                        ** tensors of bias alone. Read the shifts through lx_arch_norm_shift() */
    int mlp_bias;       /* 1: biases on the MLP's products only (GPT-J's): layers.L.mlp.{w1,w3,w2}.bias. Read
                        ** them through lx_arch_mlp_bias() */
    int shared_norm;    /* 1 (with parallel): one norm a block, x + attn(n(x)) + mlp(n(x)) (Falcon-7B): no
                        ** layers.L.mlp_norm tensors; the MLP's norm views are the attention's */
    int emb_norm;       /* 1: the embedding rows through a LayerNorm, emb_norm.weight (and .bias with bias), before
                        ** the first layer (BLOOM's word_embeddings_layernorm) */
    long vocab;         /* V: 260 = bytes + BOS/EOS/PAD/MASK */
    double norm_eps;    /* RMSNorm epsilon */
    double init_std;    /* N(0, init_std) for matrices; output projections / sqrt(2·layers) */
    int logit_scale;    /* 1: a learned multiplier of S per (layer, head), tensor layers.L.attn.logit_scale
                        ** (H,), initialised to 1 (SSMax's learned s: logn learn: true) */
    int sinks;          /* 1: a learned w per (layer, head) added to the zero sink's logit z, tensor
                        ** layers.L.attn.sink (H,), initialised to 0 (zerosink learned: true) */
    int qkv_bias;       /* 1: biases layers.L.attn.w{q,k,v}.bias added after the projections (Qwen2) */
    int qk_norm;        /* 1: each q and k head RMS-normalised with gains layers.L.attn.{q,k}_norm.weight
                        ** (d_head,) after the projections, before the rotation (Qwen3) */
    int tie_head;       /* 1: the output head is tok_emb (no lm_head.weight tensor) */
    int head_bias;      /* 1: a bias on the logits, tensor lm_head.bias (V,) (Phi-2's, GPT-J's) */
    long rel_buckets;   /* T5's learned relative bias: buckets per head of tensor rel_bias (heads × it),
                        ** shared by every layer, initialised to 0 (set by t5bias); 0 = none */
    int kerple;         /* 1: KERPLE's learned (p, a) per head, tensor kerple (heads × 2), shared by every
                        ** layer, drawn p ~ 2·U(0, 1), a ~ U(0, 1), kept in KERPLE's clamps (set by kerple) */
    int kerple_kernel;  /* LX_KERPLE_LOG or LX_KERPLE_POWER: the kernel the (p, a) are of */
    /* Gemma's block: loaded from Gemma's files, or a sweep's arch: (every part trains) */
    int post_norms;     /* 1: RMSNorms layers.L.{attn,mlp}.post_norm.weight of the attention's and the MLP's
                        ** outputs before each joins the residual stream */
    int emb_scale;      /* 1: the embedding rows times sqrt(d_model) */
    long qk_dim;        /* logits are q·k / sqrt(qk_dim) (Gemma's query_pre_attn_scalar); 0 = d_head */
    long local_every;   /* local layers: layer l is global when (l + 1) % local_every == 0, else it runs
                        ** rope at local_base over a window of local_window keys whatever the stack (Gemma 3's
                        ** sliding-window layers); 0 = every layer runs the stack */
    long local_window;  /* keys a local layer's query sees, itself included */
    double local_base;  /* the local layers' rope base (layout half, every pair of the head) */
    double attn_softcap;    /* Gemma 2: every attention logit x becomes c·tanh(x/c); 0 = none */
    double logit_softcap;   /* Gemma 2: every output logit likewise; 0 = none */
};

enum { LX_KERPLE_LOG, LX_KERPLE_POWER };    /* lx_arch.kerple_kernel */

/* The learned relative bias a stack's spec asks for (r->method NULL: none)
** becomes the architecture's (rows rel_buckets, kerple, kerple_kernel). */
struct lx_relbias;
void lx_arch_learn_rel(struct lx_arch *a, const struct lx_relbias *r);
/* The learned relative bias the architecture holds: an LX_REL_* (core/spec.h). */
int lx_arch_rel_kind(const struct lx_arch *a);
/* Keep a model's learned relative bias (H, values) within its kind's
** clamps (KERPLE's), as after every optimizer step. */
void lx_arch_rel_keep(const struct lx_arch *a, float *rel_bias);
/* Learned relative-bias numbers per head the architecture holds (0: none). */
long lx_arch_rel_values(const struct lx_arch *a);
/* KERPLE's (p, a) of each head (cnt numbers at p) as its reference code draws them for
** either kernel, from stream `stream` of the counter-based generator at key. */
void lx_arch_kerple_init(float *p, long cnt, uint64_t key, uint32_t stream);

extern const struct lx_schema lx_arch_schema;

/* 1 for a gated MLP (SwiGLU, GeGLU): w1 and w3, the hidden rows twice as wide. */
static inline int lx_arch_gated(const struct lx_arch *a)
{
    return a->mlp == LX_MLP_SWIGLU || a->mlp == LX_MLP_GEGLU;
}
/* Is layer l one of the local layers (local_every)? */
static inline int lx_arch_local(const struct lx_arch *a, long l)
{
    return a->local_every > 0 && (l + 1) % a->local_every != 0;
}
/* The first of a's parts from Gemma's block ("post_norms", "emb_scale",
** "mlp: geglu", "qk_dim", "local_every", the soft-caps), or NULL: what the
** exporters write only as a Gemma (lx_export_gemma_kind). */
const char *lx_arch_gemma_part(const struct lx_arch *a);

/* Key/value heads: kv_heads, or heads when 0. */
long lx_arch_kv(const struct lx_arch *a);
/* 1 when the LayerNorms have shifts (*norm.bias): bias or norm_bias. */
static inline int lx_arch_norm_shift(const struct lx_arch *a)
{
    return a->bias || a->norm_bias;
}
/* 1 when the MLP's products have biases: bias or mlp_bias. */
static inline int lx_arch_mlp_bias(const struct lx_arch *a)
{
    return a->bias || a->mlp_bias;
}
/* Floats of one qkv row: (heads + 2·kv_heads)·d_head. */
long lx_arch_qkv(const struct lx_arch *a);
/* The rule across fields the schema's bounds cannot say (kv_heads divides
** heads, so at most heads); makes kv_heads == heads canonical (0), so that
** writing it out does not change a model's key. LX_EINVAL with both numbers. */
int lx_arch_resolve(struct lx_arch *a, struct lx_error *err);

/* One named tensor of the weight buffer. */
struct lx_tensor_info {
    char name[64];      /* "layers.0.attn.wq.weight" */
    int ndim;           /* 1 or 2 */
    long shape[2];      /* (out, in) for matrices */
    size_t offset;      /* in floats, into the weight buffer */
    int decay;          /* 1 when AdamW applies weight decay (matrices) */
    int out_proj;       /* 1 for wo and w2 (scaled init) */
    int method;         /* 1 for an attention method's learned tensor: logit scales, sinks, T5's or KERPLE's
                        ** bias (train's lr_method) */
};

/* The tensor list; returns its length. out (may be NULL) holds that many. */
int lx_arch_tensors(const struct lx_arch *a, struct lx_tensor_info *out);
size_t lx_arch_n_params(const struct lx_arch *a);

/* Views of one buffer laid out as the tensor list: weights, gradients, moments. */
struct lx_layer_w {
    float *attn_norm;   /* (C) */
    float *wqkv;        /* ((H + 2·KV)·D, C): wq (H·D, C), wk (KV·D, C), wv (KV·D, C) stacked */
    float *bqkv;        /* ((H + 2·KV)·D) bq, bk, bv stacked, or NULL without qkv_bias */
    float *q_norm;      /* (D) gains of every query head's RMSNorm, or NULL without qk_norm */
    float *k_norm;      /* (D) of every key head's */
    float *wo;          /* (C, H·D) */
    float *logit_scale; /* (H) learned multipliers of S, or NULL */
    float *sink;        /* (H) learned w of the zero sink's logit z + w, or NULL */
    float *mlp_norm;    /* (C) */
    float *w13;         /* (F, C) gelu, (2F, C) swiglu and geglu: w1 then w3 */
    float *w2;          /* (C, F) */
    float *attn_post;   /* (C) post_norms: the attention output's RMSNorm gains, or NULL */
    float *attn_norm_b, *mlp_norm_b;    /* (C) arch bias: the LayerNorms' shifts, or NULL */
    float *bo, *b13, *b2;               /* (C), (F or 2F: b1 then b3), (C) arch bias: the products' biases */
    float *mlp_post;    /* (C) post_norms: the MLP output's */
    /* The matrices as the forward multiplies them (wprod.h): in a weight
    ** buffer q|k|v and w1|w3 are one part each (mqkv[0], mw13[0]); used in
    ** place from a checkpoint (lx_model_hold) they are the file's own tensors. */
    struct lx_wmat mqkv[3], mw13[2], mo, mw2;
    int n_qkv, n_w13;   /* parts: 1, or 3 and 2 (1 for a GELU MLP) */
};

struct lx_weights {
    float *tok_emb;             /* (V, C) */
    struct lx_layer_w *layer;   /* (layers,) owned */
    float *norm;                /* (C) */
    float *norm_b;              /* (C) arch bias: the final LayerNorm's shift, or NULL */
    float *emb_norm, *emb_norm_b;   /* (C) arch emb_norm: the embedding LayerNorm's gain and shift, or NULL */
    float *head;                /* (V, C); == tok_emb when tie_head */
    float *head_b;              /* (V) arch head_bias: added to the logits, or NULL */
    float *rel_bias;            /* (H, lx_arch_rel_values) T5's relative bias or KERPLE's (p, a), or NULL */
    struct lx_wmat memb, mhead; /* tok_emb and head as the forward reads them */
};

void lx_weights_map(struct lx_weights *w, const struct lx_arch *a, float *base);
void lx_weights_unmap(struct lx_weights *w);
/* Views w's (a buffer of lx_weights_map) give the products of the matrices
** (mqkv, mo, mw13, mw2, mhead): into wb, a bf16 copy of w laid out as w, or
** with wb NULL back into w. The embedding keeps reading w's fp32 rows. */
void lx_weights_matrices_at(struct lx_weights *v, const struct lx_arch *a, const float *w, const uint16_t *wb);

/* Weights used in place (docs/checkpoints.md#what-a-load-costs): the
** matrices where a mapped checkpoint holds them, in its type (or rounded to
** bf16 once, `numerics: bf16`), the vectors copied as fp32. */
struct lx_held {
    struct lx_wmat *t;          /* (n_tensors,) each tensor of lx_arch_tensors: where, which type */
    float *small;               /* (n_small,) the vectors (norms, biases, logit scales) as fp32 */
    size_t n_small;
    void **maps;                /* (n_maps,) what release gives back: mappings, or (owned[k]) buffers */
    size_t *map_len;
    int *owned;                 /* 1: a buffer of lx_big_calloc, 0: a mapping (munmap) */
    int n_maps;
    double bytes;               /* the weights as held: matrices in their type, plus small */
};

struct lx_model {
    struct lx_arch arch;
    float *w;                   /* (n_params,) the weights as fp32, or NULL when held */
    size_t n_params;
    struct lx_weights v;        /* views: into w, or (held) the vectors into small, the matrices' float views NULL */
    struct lx_held *held;       /* weights used in place, or NULL */
};

/* Make m a model of arch a whose tensors are where h->t says (a loader
** fills t, maps and map_len): the vectors are converted into h->small, the
** matrices used as they are. m takes h (and its mappings). */
void lx_model_hold(struct lx_model *m, const struct lx_arch *a, struct lx_held *h);
/* A held model's weights as fp32 in w (training and the writers need them):
** one copy, then the mappings are given back. Nothing for a model in w. */
void lx_model_own(struct lx_model *m);
/* m's weights as fp32 in tensor order: m->w, or for a held model a new
** buffer (the caller gives it back with lx_model_f32_free). */
float *lx_model_f32(const struct lx_model *m);
void lx_model_f32_free(const struct lx_model *m, float *w);
/* Rows r0 .. r0 + n of tensor i (t its entry of lx_arch_tensors) as fp32 in
** out, from wherever m holds it (its own floats, a mapping of any type,
** packed bf16): what a writer reads a piece at a time instead of a copy. */
void lx_model_rows_f32(const struct lx_model *m, const struct lx_tensor_info *t, int i, long r0, long n, float *out);
/* Every matrix rounded to bf16 once (numerics bf16 at load): into one
** buffer, the fp32 weights or the mappings given back. */
void lx_model_to_bf16(struct lx_model *m);
/* Numerics bf16, after lx_model_to_bf16: every matrix a product reads packed
** once into oneDNN's layout (dnnl.h), one buffer replacing the row-major
** pages (given back to the kernel: a mapping's are read again from the file
** if ever needed, lenx's own copy's never are). Nothing changes when oneDNN
** has no layout for one of them. */
void lx_model_pack(struct lx_model *m);
/* The bytes a model of a holds in numerics bf16 once packed: the matrices
** packed (padding included; 2 bytes a value where nothing can be packed or
** for an untied embedding), the vectors fp32. */
double lx_arch_bf16_bytes(const struct lx_arch *a);

/* The matrices the products read, in a fixed order (q|k|v, o, w1|w3, w2 a
** layer, then the head), out × in; with m (weights in m->w), their views
** and places. Returns how many (4 · layers + 1); out (may be NULL) holds them. */
struct lx_matrix_at {
    struct lx_wmat *view;
    const float *w;
    long oc, c;
};
int lx_model_matrices(const struct lx_arch *a, struct lx_model *m, struct lx_matrix_at *out);
/* Bytes of an oc × c matrix packed twice for oneDNN, as the forward's Wᵀ
** (*fwd of them) and the backward's W, each rounded up to 4 KiB; 0 when
** there is no layout for one (dnnl.h). */
size_t lx_packed_both_bytes(long oc, long c, size_t *fwd);
/* What training's packed copies take (train.h lx_optim_shadow): 0 when none. */
double lx_arch_train_packed_bytes(const struct lx_arch *a);
/* The weights as the process's numerics multiply them: in bf16 numerics every
** matrix rounded to bf16 once (lx_model_to_bf16); otherwise as loaded. */
void lx_model_fit_numerics(struct lx_model *m);
/* The bytes m's weights take as held (in w: 4 per parameter). */
double lx_model_held_bytes(const struct lx_model *m);
/* The type of m's matrices: LX_DT_F32 in w, else the held one (the first matrix's). */
int lx_model_dtype(const struct lx_model *m);

/* Allocate and initialise from the counter-based generator keyed on `key`:
** the same key gives the same weights on any machine and thread count. */
void lx_model_init(struct lx_model *m, const struct lx_arch *a, uint64_t key);
/* m made a model of a, which has every tensor of m's arch and more (what a
** stack fine-tuned in learns: sinks, logit scales, a relative bias): m's
** tensors kept, each new one initialised as lx_model_init(a, key) does. */
void lx_model_grow(struct lx_model *m, const struct lx_arch *a, uint64_t key);
void lx_model_release(struct lx_model *m);

#endif
