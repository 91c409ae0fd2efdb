/*
** harness/engine/kernels/decode.h - the KV cache's rows and the one-row
** attention: greedy generation at O(T) per new token instead of a full
** forward pass (docs/tasks.md#how-answers-are-read). The cache is sized for a
** model in model/kvcache.h, the token step and generation are
** model/decoding.h; this kernel includes core and kernels only.
**
** A forward pass run with a cache attached (struct lx_acts.kv) saves every
** layer's key and value rows, per key/value head, as attention read them:
** after rope, and unit length under CosScale's geometry. One more token at
** position i then costs one row through every block: embedding, norm,
** q|k|v, rope at i, attention of that one query over the cached keys
** [0, i) and itself, the MLP, the head (lx_decode_step). Rows cached from a
** teacher-forced pass are valid for every position before the first token
** that changes, because causal attention never looks ahead: the answer
** reader fills the cache from its teacher-forced pass and needs no prompt
** pass of its own.
**
** The one-row attention (lx_attn_row_forward) reads the whole spec, as the
** head path and the tiled forward do: rotary tables of any method, row
** scales at n = the keys the row sees, distance ops at t = |δ|, far keys of
** a posmap (ReRoPE, Leaky ReRoPE, LM-Infinite's global branch,
** StreamingLLM's re-indexed sinks), windows and sinks, CosScale's geometry,
** the temperature and learned logit scales. A far key's score is q turned to
** the posmap's query position times k turned to its key position, as in the
** tiled forward; the turned keys depend on the key alone, so the cache keeps
** them too (kfar), filled on the first decode of a window. Its naive
** reference is row i of lx_attention_forward (tests/test_decode.c).
**
** Every method of a causal model decodes incrementally. A bidirectional
** (mlm) model cannot: a new token changes every row's attention, so
** lx_generate refuses it. Memory: layers × T × kv_heads × d_head × 2 floats
** a window (× 3 with a rotary posmap), plus 2 × heads × T doubles of kept
** distance tables (lx_decode_dist_kept), lx_kvcache_bytes; a layer that
** reads only its sinks and the last W keys (Gemma 3's local layers; any
** layer under a window, StreamingLLM, LM-Infinite or bca) keeps the sinks
** and a ring of W plus the rows a cache may be rewound by (model/kvcache.h),
** not T.
*/
#ifndef LX_DECODE_H
#define LX_DECODE_H

#include <stdint.h>

#include "harness/core/spec.h"

struct lx_kvcache {
    int n_slots;        /* windows it holds (a batch's instances) */
    int L, T, KV, D;    /* layers, rows a window holds at most, key/value heads, head dimension */
    long *cap;          /* (L,) rows layer l keeps: T, or for a layer that reads only its sinks and a window
                        ** of keys (a model's local layers; a window, StreamingLLM, LM-Infinite or bca's
                        ** blocks) fewer: its keep[l] sinks at their rows, then a ring where row pos >= keep
                        ** sits at keep + (pos - keep) mod (cap - keep) */
    long *keep;         /* (L,) the sinks a ring keeps (0 without one) */
    long *off;          /* (L,) where layer l's rows start among a slot's */
    long slot_rows;     /* a slot's rows, Σ cap */
    float *k, *v;       /* (n_slots, slot_rows·KV, D) keys (rotated, unit under cosine) and values; NULL when
                        ** half */
    int half;           /* LX_DT_BF16 or LX_DT_F16: kh, vh hold them in that type (numerics.h, lx_kv_get at
                        ** allocation); 0 (LX_DT_F32): k, v */
    uint16_t *kh, *vh;  /* (n_slots, slot_rows·KV, D) the same as half, or NULL */
    int over_layer;     /* f16: 1 + the layer of the first value stored past f16's range (65504); 0: none */
    long over_pos;      /* and its row's position */
    float *wide;        /* half or a ring: (n_scr, 3, T, D) one key/value head's keys, values and far keys
                        ** gathered for a step at their positions' rows, per thread of the step */
    float *kfar;        /* (n_slots, slot_rows·KV, D) keys turned to the posmap's key position, or NULL
                        ** when the spec has no posmap on rotary positions */
    long *len;          /* (n_slots,) rows [0, len) hold the window's tokens */
    long *top;          /* (n_slots,) the highest row stored: a ring has overwritten rows up to top − cap */
    long *n_far;        /* (n_slots, L) rows [0, n_far) of kfar are filled */
    /* one step's scratch */
    float *x, *xn, *qkv, *ao, *xm, *h, *act;   /* (C), (C), (QKV), (H·D), (C), (F or 2F), (F) */
    float *rstd;        /* (1) */
    double *cs;         /* (n_pairs, 2) rope at the step's position; under xpos the keys' row at cs + D */
    float *s;           /* (n_scr, G, T) one key/value head's G query heads' scores, per thread */
    double *tab;        /* (n_scr, 2T) its logit tables A, B */
    int n_scr;          /* threads the step's attention may use: omp_get_max_threads() at allocation */
    /* distance tables kept across steps (lx_decode_dist_kept): per query head A_t at dtab + 2hT, B_t
    ** T further, for t < dtab_n, under temperature dtab_temp; NULL when the spec's tables change with n */
    double *dtab;
    long dtab_n;
    double dtab_temp;
    int *pos_ids;       /* (T) randpos at evaluation: the rows' positions, the draw for T (lx_kvcache_position) */
};

/* The first index of the largest of x[0, n). */
int lx_argmax(const float *x, long n);

/* 1 when the spec scores far keys from turned rows (a posmap on rotary positions). */
int lx_decode_far(const struct lx_spec *spec);

/* 1 when the cache keeps the spec's distance tables across steps: some op
** depends on the distance, none on the keys a row sees (no row scale) and
** none on the sign, so A_t and B_t of a head are the same in every row and
** each step adds one distance (lx_kvcache_dist) instead of all of them. */
int lx_decode_dist_kept(const struct lx_spec *spec);

/* Row pos of (slot, layer): its KV·D key and value values stored (rounded to the type of a half cache; in
** an f16 cache the first value that became infinite sets over_layer and over_pos). */
void lx_kvcache_store(struct lx_kvcache *c, int slot, int layer, long pos, const float *k, const float *v);
/* Rows [j0, j1) of key/value head g of (slot, layer) as floats, D apiece, each at its own row of kout
** (keys) and vout (values), row j at j·D (from a half cache widened, else copied). */
void lx_kvcache_head(const struct lx_kvcache *c, int slot, int layer, int g, long j0, long j1, float *kout,
                     float *vout);

/* Rows [j0, j1) of far keys (kfar) of key/value head g of (slot, layer), each at its own row of out (row j
** at j·D), as lx_kvcache_head gathers keys. */
void lx_kvcache_far_head(const struct lx_kvcache *c, int slot, int layer, int g, long j0, long j1, float *out);
/* 1 when (slot, layer) still holds row pos: a sink, or a row the ring has not written over. */
int lx_kvcache_holds(const struct lx_kvcache *c, int slot, int layer, long pos);

/* Where key/value head g's rows of (slot, layer) start in one of the cache's buffers (c->k, c->v, c->kfar; a
** half cache's c->kh, c->vh): each head's cap[layer] rows together, D values apiece, so a step reads a head's
** history as one stream (row pos of a layer that keeps all T at D·pos from it; a ring's rows as row_at). */
static inline long lx_kvcache_head_at(const struct lx_kvcache *c, int slot, int layer, int g)
{
    return (((long)slot * c->slot_rows + c->off[layer]) * c->KV + (long)g * c->cap[layer]) * c->D;
}

/* Save layer l's key and value rows of a forward pass: qkv (B, T, (H + 2·KV)·D)
** after rope; windows b < n_slots go to slot b, rows [0, T), and len = T. */
void lx_kvcache_put(struct lx_kvcache *c, int layer, const float *qkv, int B, int T, int H);

/* Fill kfar rows [n_far, upto) of (slot, layer) from the cached keys (rows
** before upto must be cached; those a ring no longer holds are skipped: no
** row reads them); lx_decode_step calls it for the far keys it reads. */
void lx_kvcache_far(struct lx_kvcache *c, const struct lx_spec *spec, int slot, int layer, long upto);

/* The kept distance tables of c (lx_decode_dist_kept) for t < need, every
** one of H query heads: the distances not yet tabulated, through
** lx_spec_row as a row's own tables; all again when the temperature moved. */
void lx_kvcache_dist(struct lx_kvcache *c, const struct lx_spec *spec, int H, long need);

/* One head of one query row against keys [0, i], the BLAS path's strided
** views: o (D) from q (D, rotated to position i) and k, v, kfar (rows of
** stride ld: the query head's key/value head; kfar as k turned by the
** posmap's key positions, NULL unless lx_decode_far); mult the head's
** learned multiplier of S (1 = none; 0 reads as 1); s (i + 1) and tab
** (2(i + 1)) scratch; kept NULL, or the head's kept tables {A, B} over
** t <= i (lx_kvcache_dist), read in place of tabulating the row's; half
** LX_DT_F16 or LX_DT_BF16: q (turned or not) and the probabilities,
** normalised, are rounded to that type before their products, as llama.cpp's
** products with a half KV cache round them (activations: llamacpp); 0: q as
** given, p·v of the unnormalised exponentials scaled by 1/Σ after. Causal. */
void lx_attn_row_forward(float *o, const float *q, const float *k, const float *v, const float *kfar, int ld,
                         const struct lx_spec *spec, int head, float mult, long i, int D, float *s, double *tab,
                         const double *const *kept, int half);
/* lx_attn_row_forward for the G query heads head0 … head0 + G − 1 of one key/value head (q and o: G
** rows of D; mult: every head's, or NULL; s: G rows of scores, stride lds ≥ i + 1; dtab: the cache's
** kept distance tables of stride dT, or NULL). In fast numerics, with the G heads' multipliers equal and
** G ≤ LX_ATTN_GROUP, the G rows' scores are one product with the keys and their outputs one with
** the values, each read once for all G (each row normalised before: fast numerics' order, not the
** row's); otherwise row by row, the bits of lx_attn_row_forward. k and v are kvtype's: F32, or
** in fast numerics and with no far keys a half cache's rows (F16, BF16) as stored, each widened
** as its product reads it. Fast numerics multiply the near keys and the values in stepdot.c's lanes
** (each cached row read once for a product's rows), portable numerics with lenx's own fixed-order
** kernel (gemm.c), bf16 numerics with OpenBLAS. */
#define LX_ATTN_GROUP 16
void lx_attn_rows_forward(float *o, const float *q, const void *k, const void *v, int kvtype, const float *kfar,
                          int ld, const struct lx_spec *spec, int head0, int G, const float *mult, long i, int D,
                          float *s, long lds, double *tab, const double *dtab, long dT, int half);

#endif
