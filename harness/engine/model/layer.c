/*
** harness/engine/model/layer.c - the pieces of a block that every pass shares
** (the forward and backward of model.c, the decode step of decoding.c; see
** model.h): the weight products of q|k|v and w1|w3 over their parts, the
** blocks' norms (RMSNorm or LayerNorm), the per-head q/k RMSNorm and its backward, the embedding rows, a product's sum
** into the residual stream (through Gemma's post-norm), the MLP's activation.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/blas.h"
#include "harness/engine/kernels/ops.h"
#include "harness/engine/model/model.h"

/* y (n, Σ rows) = x · [parts]ᵀ + beta·y, each part's rows after the previous part's. */
static void linear_parts(float *y, long ldy, const float *x, long C, const struct lx_wmat *p, int np,
                         const long *rows, long n, float beta)
{
    for (int k = 0, o = 0; k < np; o += (int)rows[k], k++)
        lx_wlinear(y + o, ldy, x, C, p[k], n, C, rows[k], beta);
}

void lx_layer_qkv(float *qkv, const float *x, const struct lx_layer_w *W, const struct lx_arch *a, long n)
{
    long HD = a->heads * a->d_head, KD = lx_arch_kv(a) * a->d_head, QKV = HD + 2 * KD;
    long rows[3] = {HD, KD, KD}, all = QKV;
    linear_parts(qkv, QKV, x, a->d_model, W->mqkv, W->n_qkv, W->n_qkv == 1 ? &all : rows, n, 0.0f);
    if (W->bqkv)
        lx_bias_add(qkv, W->bqkv, n, QKV);
}

void lx_layer_qk_norm(float *qkv, float *raw, float *rstd, const struct lx_layer_w *W, const struct lx_arch *a,
                      long n)
{
    if (!W->q_norm)
        return;
    int H = (int)a->heads, KV = (int)lx_arch_kv(a), D = (int)a->d_head;
    long QKV = lx_arch_qkv(a), QK = (long)(H + KV) * D;
    float eps = (float)a->norm_eps, r[512];
#pragma omp parallel for schedule(static) private(r) if (n * QK > 65536)
    for (long row = 0; row < n; row++) {
        float *x = qkv + row * QKV, *rs = rstd ? rstd + row * (H + KV) : r;
        if (raw)
            memcpy(raw + row * QK, x, sizeof(float) * (size_t)QK);
        lx_rmsnorm_forward(x, rs, x, W->q_norm, H, D, eps);      /* in place: a row's sum is taken first */
        lx_rmsnorm_forward(x + (long)H * D, rs + H, x + (long)H * D, W->k_norm, KV, D, eps);
    }
}

#define QK_NORM_BLOCK 64    /* rows per partial gain gradient: fixed, so the sum order never depends on threads */

void lx_layer_qk_norm_backward(float *dqkv, float *dgq, float *dgk, const float *raw, const float *rstd,
                               const struct lx_layer_w *W, const struct lx_arch *a, long n)
{
    int H = (int)a->heads, KV = (int)lx_arch_kv(a), D = (int)a->d_head;
    long QKV = lx_arch_qkv(a), QK = (long)(H + KV) * D, nb = (n + QK_NORM_BLOCK - 1) / QK_NORM_BLOCK;
    double *part = lx_xcalloc((size_t)nb * 2 * (size_t)D, sizeof *part);
    /* per head, as lx_rmsnorm_backward: dx_d = r g_d dy_d − r³ x_d / D · Σ_k dy_k g_k x_k, dg_d += dy_d x_d r */
#pragma omp parallel for schedule(static) if (n * QK > 65536)
    for (long blk = 0; blk < nb; blk++)
        for (long row = blk * QK_NORM_BLOCK; row < n && row < (blk + 1) * QK_NORM_BLOCK; row++)
            for (int h = 0; h < H + KV; h++) {
                const float *x = raw + row * QK + (long)h * D, *g = h < H ? W->q_norm : W->k_norm;
                float *dy = dqkv + row * QKV + (long)h * D, r = rstd[row * (H + KV) + h];
                double dot = 0.0, *pg = part + (blk * 2 + (h >= H)) * D;
                for (int d = 0; d < D; d++) {
                    dot += (double)dy[d] * g[d] * x[d];
                    pg[d] += dy[d] * x[d] * r;
                }
                float k = (float)(dot * r * r * r / D);
                for (int d = 0; d < D; d++)
                    dy[d] = r * g[d] * dy[d] - k * x[d];
            }
    for (long blk = 0; blk < nb; blk++)
        for (int d = 0; d < D; d++)
            dgq[d] += (float)part[blk * 2 * D + d], dgk[d] += (float)part[(blk * 2 + 1) * D + d];
    free(part);
}

void lx_layer_w13(float *h, const float *x, const struct lx_layer_w *W, const struct lx_arch *a, long n)
{
    long F = a->d_mlp, F2 = lx_arch_gated(a) ? 2 * F : F, rows[2] = {F, F};
    linear_parts(h, F2, x, a->d_model, W->mw13, W->n_w13, W->n_w13 == 1 ? &F2 : rows, n, 0.0f);
    if (W->b13)
        lx_bias_add(h, W->b13, n, F2);
}

void lx_embed(float *x, float *raw, float *rstd, const struct lx_model *m, const int *tokens, long n)
{
    long C = m->arch.d_model;
    float es = (float)sqrt((double)C);      /* Gemma's scale, in fp32 as transformers' fp32 forward has it */
    for (long i = 0; i < n; i++) {
        lx_wmat_row(x + i * C, m->v.memb, tokens[i], C);
        for (long c = 0; m->arch.emb_scale && c < C; c++)
            x[i * C + c] *= es;
    }
    if (!m->arch.emb_norm)
        return;
    if (raw)
        memcpy(raw, x, sizeof(float) * (size_t)(n * C));
    lx_layernorm_forward(x, rstd, x, m->v.emb_norm, m->v.emb_norm_b, (int)n, (int)C, (float)m->arch.norm_eps);
}

void lx_layer_out(float *x, float *prod, float *normed, float *rstd, const float *in, long ld_in, struct lx_wmat w,
                  const float *b, const float *post, long n, long k, long C, float eps)
{
    if (!post) {
        lx_wlinear(x, C, in, ld_in, w, n, k, C, 1.0f);
        if (b)
            lx_bias_add(x, b, n, C);
        return;
    }
    lx_wlinear(prod, C, in, ld_in, w, n, k, C, 0.0f);
    if (b)
        lx_bias_add(prod, b, n, C);
    lx_rmsnorm_forward(normed, rstd, prod, post, (int)n, (int)C, eps);
    for (long i = 0; i < n * C; i++)
        x[i] += normed[i];
}

void lx_mlp_act(const struct lx_arch *a, float *act, int ldact, float *sig, const float *h, long n)
{
    int F = (int)a->d_mlp;
    if (a->mlp == LX_MLP_SWIGLU)
        lx_swiglu_forward(act, ldact, h, (int)n, F);
    else if (a->mlp == LX_MLP_GEGLU)
        lx_geglu_forward(act, ldact, h, (int)n, F);
    else if (a->mlp == LX_MLP_GELU_ERF)
        lx_gelu_erf_forward_s(act, sig, h, (int)(n * F));
    else
        lx_gelu_forward_s(act, sig, h, (int)(n * F));
}

void lx_norm_forward(const struct lx_arch *a, float *y, float *rstd, const float *x, const float *g, const float *b,
                     long n)
{
    if (a->norm == LX_NORM_LAYER)
        lx_layernorm_forward(y, rstd, x, g, b, (int)n, (int)a->d_model, (float)a->norm_eps);
    else
        lx_rmsnorm_forward(y, rstd, x, g, (int)n, (int)a->d_model, (float)a->norm_eps);
}

void lx_norm_backward(const struct lx_arch *a, float *dx, float *dg, float *db, const float *dy, const float *x,
                      const float *g, const float *rstd, long n)
{
    if (a->norm == LX_NORM_LAYER)
        lx_layernorm_backward(dx, dg, db, dy, x, g, rstd, (int)n, (int)a->d_model);
    else
        lx_rmsnorm_backward(dx, dg, dy, x, g, rstd, (int)n, (int)a->d_model);
}

void lx_head_logits(float *lg, const float *xn, const struct lx_model *m, long n)
{
    long C = m->arch.d_model, V = m->arch.vocab;
    lx_wlinear(lg, V, xn, C, m->v.mhead, n, C, V, 0.0f);
    if (m->v.head_b)
        lx_bias_add(lg, m->v.head_b, n, V);
    lx_softcap_row(lg, 0, n * V, m->arch.logit_softcap);
}
