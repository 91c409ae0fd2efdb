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
#include "harness/engine/kernels/ops.h"

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

/* The offset of row pos of (slot, layer) in the cache's (n_slots, slot_rows, KV·D) buffers: the
** layer's rows from off[layer], a sink (pos < keep) at pos, any other row at keep + (pos − keep)
** mod (cap − keep) (a ring; pos itself when the layer keeps T). */
static long row_at(const struct lx_kvcache *c, int slot, int layer, long pos)
{
    long keep = c->keep[layer], r = pos < keep ? pos : keep + (pos - keep) % (c->cap[layer] - keep);
    return ((long)slot * c->slot_rows + c->off[layer] + r) * c->KV * c->D;
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
    long KD = (long)c->KV * c->D, at = row_at(c, slot, layer, pos);
    c->top[slot] = pos > c->top[slot] ? pos : c->top[slot];
    if (c->half) {
        lx_f32_to_type(c->kh + at, k, c->half, (size_t)KD);
        lx_f32_to_type(c->vh + at, v, c->half, (size_t)KD);
        if (c->half == LX_DT_F16 && !c->over_layer && (over_f16(c->kh + at, k, KD) || over_f16(c->vh + at, v, KD)))
            c->over_layer = layer + 1, c->over_pos = pos;
    } else {
        memcpy(c->k + at, k, sizeof(float) * (size_t)KD);
        memcpy(c->v + at, v, sizeof(float) * (size_t)KD);
    }
}

void lx_kvcache_head(const struct lx_kvcache *c, int slot, int layer, int g, long j0, long j1, float *kout,
                     float *vout)
{
    for (long j = j0; j < j1; j++) {
        long at = row_at(c, slot, layer, j) + (long)g * c->D;
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
        memcpy(out + j * c->D, c->kfar + row_at(c, slot, layer, j) + (long)g * c->D, sizeof(float) * (size_t)c->D);
}

/* Each key turned from its position j to the posmap's key position (unshifted):
** the tiled forward's far rows of a lower pair, which depend on the key alone. */
void lx_kvcache_far(struct lx_kvcache *c, const struct lx_spec *spec, int slot, int layer, long upto)
{
    long *nf = &c->n_far[(long)slot * c->L + layer];
    double r[2 * LX_SPEC_MAX_PAIRS + 2];
    for (long j = *nf; j < upto; j++)
        for (int g = 0; g < c->KV && lx_kvcache_holds(c, slot, layer, j); g++) {
            long at = row_at(c, slot, layer, j) + (long)g * c->D;
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

void lx_attn_row_forward(float *o, const float *q, const float *k, const float *v, const float *kfar, int ld,
                         const struct lx_spec *spec, int head, float mult, long i, int D, float *s, double *tab,
                         const double *const *kept, int half)
{
    LX_ASSERT(D <= 2 * LX_SPEC_MAX_PAIRS + 2 && (kfar != NULL) == lx_decode_far(spec));
    float c = (float)lx_spec_qk_scale(spec, D) * (mult != 0.0f ? mult : 1.0f);
    long lo, hi, n = lx_spec_row_keys(spec, i, i + 1, 1, &lo, &hi);
    long ns = spec->vis.sinks < lo ? spec->vis.sinks : lo, j0s[2] = {0, lo}, j1s[2] = {ns, hi};
    long far1 = kfar ? lx_posmap_near_lo(&spec->posmap, i) : 0;     /* keys j < far1 score from kfar */
    float qf[2 * LX_SPEC_MAX_PAIRS + 2], qh[2 * LX_SPEC_MAX_PAIRS + 2];
    if (half) {     /* llama.cpp's product with a half K cache rounds the query to the cache's type */
        memcpy(qh, q, sizeof(float) * (size_t)D);
        lx_round_half_n(qh, half, (size_t)D);
        q = qh;
    }
    if (kfar) {     /* the query turned to the posmap's position of a lower pair's query */
        double r[2 * LX_SPEC_MAX_PAIRS + 2];
        for (int d = 0; d < D; d++)
            r[d] = q[d];
        lx_rotary_turn(r, &spec->rotary, lx_posmap_pos(&spec->posmap, i, 1) - (double)i);
        for (int d = 0; d < D; d++)
            qf[d] = (float)r[d];
        lx_round_half_n(qf, half, (size_t)D);
    }
    int plain = !spec->n_ops && spec->temperature == 1.0;
    double *A = tab, *B = tab + i + 1;
    if (!plain && !spec->has_dist)
        lx_spec_affine(spec, head, n, 0.0, A, B);
    else if (!plain && !kept)
        lx_spec_row(spec, head, n, 0, i + 1 - (ns ? 0 : lo), A, B);
    const double *At = kept ? kept[0] : A, *Bt = kept ? kept[1] : B;
    float mx, zs;
    lx_zsink_start(spec, head, &mx, &zs);
    float mx0 = mx;
    for (int p = 0; p < 2; p++) {
        long j0 = j0s[p], j1 = j1s[p], jf = far1 < j0 ? j0 : far1 > j1 ? j1 : far1;  /* [j0, jf) far */
        if (jf > j0)
            lx_gemm(s + j0, (int)(jf - j0), qf, D, kfar + j0 * ld, ld, 1, (int)(jf - j0), D, 0, 1, c, 0.0f);
        if (j1 > jf)
            lx_gemm(s + jf, (int)(j1 - jf), q, D, k + jf * ld, ld, 1, (int)(j1 - jf), D, 0, 1, c, 0.0f);
        if (!plain)
            row_logits(s, spec, head, n, i, j0, j1, At, Bt);
        lx_softcap_row(s, j0, j1, spec->softcap);
        for (long j = j0; j < j1; j++)
            mx = s[j] > mx ? s[j] : mx;
    }
    double z = zs > 0.0f && mx0 - mx > EXP_FLOOR ? expf(mx0 - mx) : 0.0f;     /* the zero sink's share */
    for (int p = 0; p < 2; p++)
        for (long j = j0s[p]; j < j1s[p]; j++) {
            float e = s[j] - mx;
            s[j] = e > EXP_FLOOR ? expf(e) : 0.0f;
            z += s[j];
        }
    float beta = 0.0f, alpha = (float)(1.0 / z);
    for (int p = 0; half && p < 2; p++) {     /* and its product with a half V cache the probabilities */
        for (long j = j0s[p]; j < j1s[p]; j++)
            s[j] *= alpha;
        lx_round_half_n(s + j0s[p], half, (size_t)(j1s[p] - j0s[p]));
    }
    if (half)
        alpha = 1.0f;
    for (int p = 0; p < 2; p++)
        if (j1s[p] > j0s[p]) {
            int nk = (int)(j1s[p] - j0s[p]);
            lx_gemm(o, D, s + j0s[p], nk, v + j0s[p] * ld, ld, 1, D, nk, 0, 0, alpha, beta);
            beta = 1.0f;
        }
}

/* ---- one token through the model --------------------------------------------- */

/* Attention of the step's query row (c->qkv) over the cached rows [0, pos]
** of (slot, layer), every head, into c->ao (on the step's one thread). */
