/*
** harness/engine/kernels/decode.c - the KV cache's rows and the one-row
** attention over them (see decode.h).
*/
#include "harness/engine/kernels/decode.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/blas.h"
#include "harness/core/half.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/ops.h"
#include "harness/engine/kernels/stepdot.h"

/* exp(x − max) below e^−70 is 0, as on the other paths (attention.c says why). */
#define EXP_FLOOR (-70.0f)

int lx_decode_far(const struct lx_spec *spec)
{
    return spec->posmap.method && spec->rotary.n_pairs;
}

int lx_decode_dist_kept(const struct lx_spec *spec)
{
    int rows = 0;
    for (int k = 0; k < spec->n_ops; k++)
        rows |= spec->ops[k].kind == LX_OP_ROW_SCALE;
    return spec->has_dist && !spec->signed_dist && !rows;
}

void lx_kvcache_dist(struct lx_kvcache *c, const struct lx_spec *spec, int H, long need)
{
    if (!c->dtab)
        return;
    LX_ASSERT(need <= c->T);
    if (c->dtab_temp != spec->temperature)
        c->dtab_n = 0, c->dtab_temp = spec->temperature;
    if (need <= c->dtab_n)
        return;
    for (int h = 0; h < H; h++) {
        double *A = c->dtab + 2L * h * c->T, *B = A + c->T;
        lx_spec_row(spec, h, 1, c->dtab_n, need - c->dtab_n, A + c->dtab_n, B + c->dtab_n);
    }
    c->dtab_n = need;
}

int lx_argmax(const float *x, long n)
{
    int best = 0;
    for (long i = 1; i < n; i++)
        if (x[i] > x[best])
            best = (int)i;
    return best;
}

/* ---- the cache -------------------------------------------------------------- */

/* The offset of head g's row pos of (slot, layer) in the cache's buffers (lx_kvcache_head_at): a sink
** (pos < keep) at pos, any other row at keep + (pos − keep) mod (cap − keep) (a ring; pos itself when
** the layer keeps T). */
static long row_at(const struct lx_kvcache *c, int slot, int layer, int g, long pos)
{
    long keep = c->keep[layer], r = pos < keep ? pos : keep + (pos - keep) % (c->cap[layer] - keep);
    return lx_kvcache_head_at(c, slot, layer, g) + r * c->D;
}

int lx_kvcache_holds(const struct lx_kvcache *c, int slot, int layer, long pos)
{
    return pos < c->keep[layer] || pos > c->top[slot] - (c->cap[layer] - c->keep[layer]);
}

/* 1 when a finite value of x (n) became infinite as f16 h. */
static int over_f16(const uint16_t *h, const float *x, long n)
{
    for (long i = 0; i < n; i++)
        if ((h[i] & 0x7fff) == 0x7c00 && isfinite(x[i]))
            return 1;
    return 0;
}

void lx_kvcache_store(struct lx_kvcache *c, int slot, int layer, long pos, const float *k, const float *v)
{
    long D = c->D;
    c->top[slot] = pos > c->top[slot] ? pos : c->top[slot];
    for (int g = 0; g < c->KV; g++) {
        long at = row_at(c, slot, layer, g, pos);
        const float *kg = k + g * D, *vg = v + g * D;
        if (c->half) {
            lx_f32_to_type(c->kh + at, kg, c->half, (size_t)D);
            lx_f32_to_type(c->vh + at, vg, c->half, (size_t)D);
            if (c->half == LX_DT_F16 && !c->over_layer && (over_f16(c->kh + at, kg, D) || over_f16(c->vh + at, vg, D)))
                c->over_layer = layer + 1, c->over_pos = pos;
        } else {
            memcpy(c->k + at, kg, sizeof(float) * (size_t)D);
            memcpy(c->v + at, vg, sizeof(float) * (size_t)D);
        }
    }
}

void lx_kvcache_head(const struct lx_kvcache *c, int slot, int layer, int g, long j0, long j1, float *kout,
                     float *vout)
{
    for (long j = j0; j < j1; j++) {
        long at = row_at(c, slot, layer, g, j);
        if (c->half) {
            lx_half_to_f32(kout + j * c->D, c->kh + at, c->half, (size_t)c->D);
            lx_half_to_f32(vout + j * c->D, c->vh + at, c->half, (size_t)c->D);
        } else {
            memcpy(kout + j * c->D, c->k + at, sizeof(float) * (size_t)c->D);
            memcpy(vout + j * c->D, c->v + at, sizeof(float) * (size_t)c->D);
        }
    }
}

void lx_kvcache_put(struct lx_kvcache *c, int layer, const float *qkv, int B, int T, int H)
{
    LX_ASSERT(T <= c->T && layer >= 0 && layer < c->L);
    long KD = (long)c->KV * c->D, QKV = (long)H * c->D + 2 * KD;
    int nb = B < c->n_slots ? B : c->n_slots;
    for (int b = 0; b < nb; b++) {
        for (long t = 0; t < T; t++) {
            const float *src = qkv + ((long)b * T + t) * QKV + (long)H * c->D;
            lx_kvcache_store(c, b, layer, t, src, src + KD);
        }
        c->len[b] = T;
        c->top[b] = T - 1;
        c->n_far[(long)b * c->L + layer] = 0;
    }
}

void lx_kvcache_far_head(const struct lx_kvcache *c, int slot, int layer, int g, long j0, long j1, float *out)
{
    for (long j = j0; j < j1; j++)
        memcpy(out + j * c->D, c->kfar + row_at(c, slot, layer, g, j), sizeof(float) * (size_t)c->D);
}

/* Each key turned from its position j to the posmap's key position (unshifted):
** the tiled forward's far rows of a lower pair, which depend on the key alone. */
void lx_kvcache_far(struct lx_kvcache *c, const struct lx_spec *spec, int slot, int layer, long upto)
{
    long *nf = &c->n_far[(long)slot * c->L + layer];
    double r[2 * LX_SPEC_MAX_PAIRS + 2];
    for (long j = *nf; j < upto; j++)
        for (int g = 0; g < c->KV && lx_kvcache_holds(c, slot, layer, j); g++) {
            long at = row_at(c, slot, layer, g, j);
            float *dst = c->kfar + at;
            const float *src = c->half ? dst : c->k + at;     /* a half cache's row widened in place first */
            if (c->half)
                lx_half_to_f32(dst, c->kh + at, c->half, (size_t)c->D);
            for (int d = 0; d < c->D; d++)
                r[d] = src[d];
            lx_rotary_turn(r, &spec->rotary, lx_posmap_pos(&spec->posmap, j, 0) - (double)j);
            for (int d = 0; d < c->D; d++)
                dst[d] = (float)r[d];
        }
    if (upto > *nf)
        *nf = upto;
}

/* ---- one query row ------------------------------------------------------------ */

/* Logits of keys [j0, j1) of row i in place of their scores: A·S + B at
** t = i − j, or at |δ| for far keys (A, B from lx_spec_row over t, or one
** constant map in A[0], B[0] when no op depends on the distance). */
static void row_logits(float *s, const struct lx_spec *spec, int head, long n, long i, long j0, long j1,
                       const double *A, const double *B)
{
    for (long j = j0; j < j1; j++) {
        double a = A[0], b = B[0];
        if (spec->has_dist && lx_spec_far(spec, i, j))
            lx_spec_affine(spec, head, n, fabs(lx_spec_delta(spec, i, j)), &a, &b);
        else if (spec->has_dist)
            a = A[i - j], b = B[i - j];
        s[j] = (float)(a * s[j] + b);
    }
}

/* What a row i sees: its keys' scale c, the pieces [j0s[p], j1s[p]) (the sinks, then the window),
** far1 (keys below it score from kfar) and whether its logits are its scores times c. */
struct row_keys {
    float c;
    long n, lo, j0s[2], j1s[2], far1;
    int plain;
};

static void row_keys_of(struct row_keys *r, const struct lx_spec *spec, long i, float mult, int D, int far)
{
    long hi;
    r->c = (float)lx_spec_qk_scale(spec, D) * (mult != 0.0f ? mult : 1.0f);
    r->n = lx_spec_row_keys(spec, i, i + 1, 1, &r->lo, &hi);
    long ns = spec->vis.sinks < r->lo ? spec->vis.sinks : r->lo;
    r->j0s[0] = 0, r->j1s[0] = ns, r->j0s[1] = r->lo, r->j1s[1] = hi;
    r->far1 = far ? lx_posmap_near_lo(&spec->posmap, i) : 0;
    r->plain = !spec->n_ops && spec->temperature == 1.0;
}

/* The query rows q (M rows of D) as the products read them: qh rounded to a half cache's type
** (llama.cpp's product with a half K cache rounds the query so), qf turned to the posmap's position
** of a lower pair's query (far keys); *qp the near keys' rows (q or qh). */
static void row_queries(float *qh, float *qf, const float **qp, const float *q, int M, const struct lx_spec *spec,
                        long i, int D, int half, int far)
{
    *qp = q;
    if (half) {
        memcpy(qh, q, sizeof(float) * (size_t)(M * D));
        lx_round_half_n(qh, half, (size_t)(M * D));
        *qp = qh;
    }
    for (int m = 0; far && m < M; m++) {
        double r[2 * LX_SPEC_MAX_PAIRS + 2];
        for (int d = 0; d < D; d++)
            r[d] = (*qp)[m * D + d];     /* the query as rounded, as the near keys read it */
        lx_rotary_turn(r, &spec->rotary, lx_posmap_pos(&spec->posmap, i, 1) - (double)i);
        for (int d = 0; d < D; d++)
            qf[m * D + d] = (float)r[d];
        lx_round_half_n(qf + m * D, half, (size_t)D);
    }
}

/* 1 when a row's products run on stepdot.c's lanes: fast numerics, or a half cache's rows as stored. */
static int step_lanes(int kvtype)
{
    return kvtype != LX_DT_F32 || lx_numerics_get() == LX_NUMERICS_FAST;
}

/* Scores of M query rows q against keys [j0, j1) of k (kvtype, row stride ld), times c. */
static void piece_scores(float *s, long lds, const float *q, int M, const void *k, int kvtype, int ld, long j0,
                         long j1, int D, float c)
{
    if (j1 > j0 && step_lanes(kvtype))
        lx_step_scores(s, lds, q, M, k, kvtype, ld, j0, j1, D, c);
    else if (j1 > j0)
        lx_gemm(s + j0, (int)lds, q, D, (const float *)k + j0 * ld, ld, M, (int)(j1 - j0), D, 0, 1, c, 0.0f);
}

/* Scores (M rows of stride lds) of M query rows against the row's keys, times c: keys of kvtype
** (F32, or a half cache's rows as stored: no far keys), far keys [j0, far1) from kfar with qf. */
static void row_scores(float *s, long lds, const float *q, const float *qf, int M, const void *k, int kvtype,
                       const float *kfar, int ld, int D, const struct row_keys *r)
{
    for (int p = 0; p < 2; p++) {
        long j0 = r->j0s[p], j1 = r->j1s[p], jf = r->far1 < j0 ? j0 : r->far1 > j1 ? j1 : r->far1;  /* [j0, jf) far */
        piece_scores(s, lds, qf, M, kfar, LX_DT_F32, ld, j0, jf, D, r->c);
        piece_scores(s, lds, q, M, k, kvtype, ld, jf, j1, D, r->c);
    }
}

/* One row's scores s to its exponentials, less the max, in place; the factor 1/Σ returned (with a
** half cache: the probabilities rounded to its type in s, and 1). Fast numerics take e^x in the tiled
** forward's vector loops (lx_tile_exp_sum: 8 or 16 lanes, Σ in float lanes); portable and bf16
** numerics in glibc's expf, one key at a time, Σ in double. */
static float row_softmax(float *s, const struct lx_spec *spec, int head, long i, const struct row_keys *r,
                         double *tab, const double *const *kept, int half)
{
    double *A = tab, *B = tab + i + 1;
    if (!r->plain && !spec->has_dist)
        lx_spec_affine(spec, head, r->n, 0.0, A, B);
    else if (!r->plain && !kept)
        lx_spec_row(spec, head, r->n, 0, i + 1 - (r->j1s[0] ? 0 : r->lo), A, B);
    const double *At = kept ? kept[0] : A, *Bt = kept ? kept[1] : B;
    float mx, zs;
    lx_zsink_start(spec, head, &mx, &zs);
    float mx0 = mx;
    for (int p = 0; p < 2; p++) {
        if (!r->plain)
            row_logits(s, spec, head, r->n, i, r->j0s[p], r->j1s[p], At, Bt);
        lx_softcap_row(s, r->j0s[p], r->j1s[p], spec->softcap);
        for (long j = r->j0s[p]; j < r->j1s[p]; j++)
            mx = s[j] > mx ? s[j] : mx;
    }
    double z = zs > 0.0f && mx0 - mx > EXP_FLOOR ? expf(mx0 - mx) : 0.0f;     /* the zero sink's share */
    int lanes = lx_numerics_get() == LX_NUMERICS_FAST ? lx_tile_exp_level(0) : -1;
    for (int p = 0; lanes >= 0 && p < 2; p++)
        z += lx_tile_exp_sum(s + r->j0s[p], r->j1s[p] - r->j0s[p], mx, lanes);
    for (int p = 0; lanes < 0 && p < 2; p++)
        for (long j = r->j0s[p]; j < r->j1s[p]; j++) {
            float e = s[j] - mx;
            s[j] = e > EXP_FLOOR ? expf(e) : 0.0f;
            z += s[j];
        }
    float alpha = (float)(1.0 / z);
    if (!half)
        return alpha;
    for (int p = 0; p < 2; p++) {     /* its product with a half V cache rounds the probabilities */
        for (long j = r->j0s[p]; j < r->j1s[p]; j++)
            s[j] *= alpha;
        lx_round_half_n(s + r->j0s[p], half, (size_t)(r->j1s[p] - r->j0s[p]));
    }
    return 1.0f;
}

/* o (M rows of D) = alpha · p·v of M rows of probabilities s (stride lds), piece by piece; values
** of kvtype (a half cache's: alpha 1). */
static void row_values(float *o, const float *s, long lds, int M, const void *v, int kvtype, int ld, int D,
                       float alpha, const struct row_keys *r)
{
    float beta = 0.0f;
    if (step_lanes(kvtype)) {
        memset(o, 0, sizeof(float) * (size_t)(M * D));
        for (int p = 0; p < 2; p++)
            lx_step_values(o, s, lds, M, v, kvtype, ld, r->j0s[p], r->j1s[p], D);
        for (int m = 0; alpha != 1.0f && m < M * D; m++)
            o[m] *= alpha;
        return;
    }
    for (int p = 0; p < 2; p++)
        if (r->j1s[p] > r->j0s[p]) {
            int nk = (int)(r->j1s[p] - r->j0s[p]);
            lx_gemm(o, D, s + r->j0s[p], (int)lds, (const float *)v + r->j0s[p] * ld, ld, M, D, nk, 0, 0, alpha, beta);
            beta = 1.0f;
        }
}

void lx_attn_row_forward(float *o, const float *q, const float *k, const float *v, const float *kfar, int ld,
                         const struct lx_spec *spec, int head, float mult, long i, int D, float *s, double *tab,
                         const double *const *kept, int half)
{
    LX_ASSERT(D <= 2 * LX_SPEC_MAX_PAIRS + 2 && (kfar != NULL) == lx_decode_far(spec));
    struct row_keys r;
    float qh[2 * LX_SPEC_MAX_PAIRS + 2], qf[2 * LX_SPEC_MAX_PAIRS + 2];
    const float *qn;
    row_keys_of(&r, spec, i, mult, D, kfar != NULL);
    row_queries(qh, qf, &qn, q, 1, spec, i, D, half, kfar != NULL);
    row_scores(s, r.n, qn, qf, 1, k, LX_DT_F32, kfar, ld, D, &r);
    float alpha = row_softmax(s, spec, head, i, &r, tab, kept, half);
    row_values(o, s, r.n, 1, v, LX_DT_F32, ld, D, alpha, &r);
}

/* Head h's kept distance tables A, B in kept (dtab: 2 per head of dT), or NULL without them. */
static const double *const *head_kept(const double *kept[2], const double *dtab, long dT, int h)
{
    if (!dtab)
        return NULL;
    kept[0] = dtab + 2L * h * dT, kept[1] = dtab + (2L * h + 1) * dT;
    return kept;
}

void lx_attn_rows_forward(float *o, const float *q, const void *k, const void *v, int kvtype, const float *kfar,
                          int ld, const struct lx_spec *spec, int head0, int G, const float *mult, long i, int D,
                          float *s, long lds, double *tab, const double *dtab, long dT, int half)
{
    int same = 1, fast = lx_numerics_get() == LX_NUMERICS_FAST;
    for (int h = 1; mult && h < G; h++)
        same &= mult[head0 + h] == mult[head0];
    int step = G <= LX_ATTN_GROUP && same && fast ? G : 1;
    LX_ASSERT(D <= 2 * LX_SPEC_MAX_PAIRS + 2 && (kfar != NULL) == lx_decode_far(spec) && lds >= i + 1);
    LX_ASSERT(kvtype == LX_DT_F32 || (fast && !kfar));     /* a half cache read in place: attend() */
    if (step == 1 && kvtype == LX_DT_F32) {
        for (int h = head0; h < head0 + G; h++) {   /* one row at a time: the bits of lx_attn_row_forward */
            const double *kept[2];
            lx_attn_row_forward(o + (long)(h - head0) * D, q + (long)(h - head0) * D, k, v, kfar, ld, spec, h,
                                mult ? mult[h] : 1.0f, i, D, s, tab, head_kept(kept, dtab, dT, h), half);
        }
        return;
    }
    for (int h0 = head0; h0 < head0 + G; h0 += step) {     /* step rows at once: keys and values read once */
        struct row_keys r;
        float qh[LX_ATTN_GROUP * (2 * LX_SPEC_MAX_PAIRS + 2)], qf[LX_ATTN_GROUP * (2 * LX_SPEC_MAX_PAIRS + 2)];
        const float *qn, *qs = q + (long)(h0 - head0) * D;
        row_keys_of(&r, spec, i, mult ? mult[h0] : 1.0f, D, kfar != NULL);
        row_queries(qh, qf, &qn, qs, step, spec, i, D, half, kfar != NULL);
        row_scores(s, lds, qn, qf, step, k, kvtype, kfar, ld, D, &r);
        for (int h = h0; h < h0 + step; h++) {
            const double *kept[2];
            float *sh = s + (h - h0) * lds, alpha = row_softmax(sh, spec, h, i, &r, tab, head_kept(kept, dtab, dT, h),
                                                               half);
            for (int p = 0; alpha != 1.0f && p < 2; p++)    /* each row's own 1/Σ, before the shared product */
                for (long j = r.j0s[p]; j < r.j1s[p]; j++)
                    sh[j] *= alpha;
        }
        row_values(o + (long)(h0 - head0) * D, s, lds, step, v, kvtype, ld, D, 1.0f, &r);
    }
}

/* ---- one token through the model --------------------------------------------- */

/* Attention of the step's query row (c->qkv) over the cached rows [0, pos]
** of (slot, layer), every head, into c->ao (on the step's one thread). */
