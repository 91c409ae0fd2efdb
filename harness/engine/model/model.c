/*
** harness/engine/model/model.c - forward and backward of the transformer
** (see model.h): rope, the attention paths, the blocks. Matrix products go
** through the BLAS seam; attention runs one (window, head) pair per OpenMP
** iteration with per-thread scratch. The weights are laid out in arch.c, the
** activations and the memory plan in acts.c, the spec a model and each of
** its layers run in model_spec.c.
*/
#include "harness/engine/model/model.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/blas.h"
#include "harness/engine/model/kvcache.h"
#include "harness/engine/model/positions.h"
#include "harness/engine/kernels/ops.h"

struct sizes {
    long N, C, HD, F, F2, V, T, H, L;
    long KV, QKV;       /* key/value heads; floats of a qkv row, (H + 2·KV)·D */
};

static struct sizes sizes_of(const struct lx_arch *a, int B, int T)
{
    struct sizes s;
    s.N = (long)B * T;
    s.C = a->d_model;
    s.HD = a->heads * a->d_head;
    s.F = a->d_mlp;
    s.F2 = lx_arch_gated(a) ? 2 * s.F : s.F;
    s.V = a->vocab;
    s.T = T;
    s.H = a->heads;
    s.L = a->layers;
    s.KV = lx_arch_kv(a);
    s.QKV = lx_arch_qkv(a);
    return s;
}

/* The shapes of every attention call over windows of T rows of a qkv buffer. */
static struct lx_attn_shape shape_of(const struct lx_arch *a, int T)
{
    return (struct lx_attn_shape){.T = T, .H = (int)a->heads, .KV = (int)lx_arch_kv(a), .D = (int)a->d_head,
                                  .ld = (int)lx_arch_qkv(a), .ldo = (int)(a->heads * a->d_head),
                                  .causal = a->mode == LX_MODEL_CAUSAL};
}

/* ---- rope ------------------------------------------------------------------- */

/* Row cs (2 · n_pairs) of the table at position pos: cos and sin (lx_rotary_angles) times the gain; under
** a decay, the queries' row takes ζ_k^((pos − c)/γ) more and the keys' row csk ζ_k^(−(pos − c)/γ). */
static void rope_row(double *cs, double *csk, const struct lx_rotary *r, double pos)
{
    lx_rotary_angles(cs, r, pos);
    if (r->gain != 0 && r->gain != 1)
        for (int k = 0; k < 2 * r->n_pairs; k++)
            cs[k] *= r->gain;
    if (!r->decay_scale)
        return;
    double u = (pos - r->decay_center) / r->decay_scale;
    for (int k = 0; k < r->n_pairs; k++) {
        double g = exp(u * r->log_zeta[k]), gk = exp(-u * r->log_zeta[k]);
        csk[2 * k] = cs[2 * k] * gk, csk[2 * k + 1] = cs[2 * k + 1] * gk;
        cs[2 * k] *= g, cs[2 * k + 1] *= g;
    }
}

/* Rows for positions pos[0..n), or 0..n−1 when pos is NULL. */
static void rope_rows_at(double *cs, double *csk, const struct lx_rotary *r, const int *pos, long n)
{
    for (long t = 0; t < n; t++) {
        long at = t * r->n_pairs * 2;
        rope_row(cs + at, csk ? csk + at : NULL, r, pos ? (double)pos[t] : (double)t);
    }
}

void lx_rope_table(double *cs, double *csk, const struct lx_rotary *r, int T)
{
    rope_rows_at(cs, csk, r, NULL, T);
}

void lx_rope_table_pos(double *cs, double *csk, const struct lx_rotary *r, const int *pos, long n)
{
    rope_rows_at(cs, csk, r, pos, n);
}

#define QK_EPS 1e-9     /* CosScale's q/(‖q‖ + 1e-9), as in the InfoScale code */

void lx_qk_normalize(float *qkv, float *qkn, long N, int H, int KV, int D)
{
    long HD = (long)H * D, QKV = (long)(H + 2 * KV) * D;
#pragma omp parallel for schedule(static)
    for (long row = 0; row < N; row++)
        for (int part = 0; part < 2; part++)
            for (int h = 0; h < (part ? KV : H); h++) {
                float *x = qkv + row * QKV + part * HD + (long)h * D;
                double r = 0.0;
                for (int d = 0; d < D; d++)
                    r += (double)x[d] * x[d];
                r = sqrt(r);
                float inv = (float)(1.0 / (r + QK_EPS));
                for (int d = 0; d < D; d++)
                    x[d] *= inv;
                if (qkn)
                    qkn[(row * 2 + part) * H + h] = (float)r;
            }
}

/* x̂ = x/(r + ε): dx = dx̂/(r + ε) − x̂ (x̂·dx̂)/r. */
void lx_qk_normalize_backward(float *dqkv, const float *qkv, const float *qkn, long N, int H, int KV, int D)
{
    long HD = (long)H * D, QKV = (long)(H + 2 * KV) * D;
#pragma omp parallel for schedule(static)
    for (long row = 0; row < N; row++)
        for (int part = 0; part < 2; part++)
            for (int h = 0; h < (part ? KV : H); h++) {
                const float *xh = qkv + row * QKV + part * HD + (long)h * D;
                float *g = dqkv + row * QKV + part * HD + (long)h * D;
                double r = qkn[(row * 2 + part) * H + h], dot = 0.0;
                for (int d = 0; d < D; d++)
                    dot += (double)xh[d] * g[d];
                double a = 1.0 / (r + QK_EPS), b = r > 0.0 ? dot / r : 0.0;
                for (int d = 0; d < D; d++)
                    g[d] = (float)(a * g[d] - b * xh[d]);
            }
}

/* Pairs k0.. of one head in the half layout (k, k + P), eight at a time in double: each
** product, sum and rounding to float the scalar loop's own (no fused
** multiply-add: this file is compiled with -ffp-contract=off), so the same
** bits in every numerics. c is the row's (cos, sin) table. Returns where the
** lanes stopped. */
__attribute__((target("avx512f"))) static long rope_half_avx512(float *x, const double *c, long P, double sign)
{
    const __m512i ev = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), od = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    const __m512d sg = _mm512_set1_pd(sign);
    long k = 0;
    for (; k + 8 <= P; k += 8) {
        __m512d lo = _mm512_loadu_pd(c + 2 * k), hi = _mm512_loadu_pd(c + 2 * k + 8);
        __m512d co = _mm512_permutex2var_pd(lo, ev, hi), si = _mm512_mul_pd(sg, _mm512_permutex2var_pd(lo, od, hi));
        __m512d a = _mm512_cvtps_pd(_mm256_loadu_ps(x + k)), b = _mm512_cvtps_pd(_mm256_loadu_ps(x + k + P));
        _mm256_storeu_ps(x + k, _mm512_cvtpd_ps(_mm512_sub_pd(_mm512_mul_pd(a, co), _mm512_mul_pd(b, si))));
        _mm256_storeu_ps(x + k + P, _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(a, si), _mm512_mul_pd(b, co))));
    }
    return k;
}

void lx_rope_apply(float *qkv, const struct lx_rotary *r, const double *cs, const double *csk, int B, int T, int H,
                   int KV, int D, int sign)
{
    if (!r->n_pairs)
        return;
    long HD = (long)H * D, QKV = (long)(H + 2 * KV) * D, P = r->n_pairs;
    int half = r->layout == LX_ROPE_HALF, lanes = half && __builtin_cpu_supports("avx512f");
#pragma omp parallel for schedule(static)
    for (long row = 0; row < (long)B * T; row++) {
        for (int part = 0; part < 2; part++)            /* q (H heads), then k (KV heads) */
            for (int h = 0; h < (part ? KV : H); h++) {
                const double *c = (part && csk ? csk : cs) + (row % T) * P * 2;
                float *x = qkv + row * QKV + part * HD + (long)h * D;
                for (long k = lanes ? rope_half_avx512(x, c, P, sign) : 0; k < P; k++) {
                    long i0 = half ? k : 2 * k, i1 = half ? k + P : 2 * k + 1;
                    double co = c[2 * k], si = sign * c[2 * k + 1];
                    double a = x[i0], b = x[i1];
                    x[i0] = (float)(a * co - b * si);
                    x[i1] = (float)(a * si + b * co);
                }
            }
    }
}

/* ---- forward / backward ------------------------------------------------------ */

/* Layer-l slice of a per-layer buffer (eval mode keeps one slice). */
#define LAY(a, buf, l, per) ((a)->train ? (buf) + (long)(l) * (per) : (buf))

/* Window b's per-head statistics sums (H,) into the pass's LX_ST rows (H,
** LX_ATTN_NSTATS) and diag (H,), either may be NULL. */
static void put_stats(double *stats, struct lx_diag *diag, const struct lx_diag *d, int H)
{
    for (int h = 0; h < H; h++) {
        if (stats) {
            double *st = stats + (long)h * LX_ATTN_NSTATS;
            st[LX_ST_PMAX] += d[h].pmax;
            st[LX_ST_ENTROPY] += d[h].entropy;
            st[LX_ST_SIGMA] += d[h].sigma;
            st[LX_ST_ROWS] += d[h].rows;
        }
        if (diag)
            lx_diag_add(&diag[h], &d[h]);
    }
}

/* Evaluation without a probe: every window through the tiled forward, on
** LX_TILE_BQ × LX_TILE_BK tiles (the far-key rows of a posmap allocated on
** first use, like the head path's far scratch), row statistics summed from the tiles
** into stats (layers' slice: (B, H, LX_ATTN_NSTATS)) and diag ((B, H)). */
static void attention_tiled(struct lx_acts *a, const struct lx_spec *spec, const float *qkv, float *ao,
                            double *stats, struct lx_diag *diag, const float *mult, float *lse,
                            const struct lx_attn_shape *sh)
{
    int B = a->B, T = sh->T, H = sh->H, KV = sh->KV, D = sh->D;
    long HD = (long)H * D, KD = (long)KV * D, QKV = HD + 2 * KD, nsu = lx_tile_stat_units(LX_TILE_BQ, T);
    if (lx_tile_rot_floats(spec, T, H, KV, D, sh->causal))
        lx_acts_lazy(a, &a->tile_rot);
    int want = stats || diag;
    struct lx_tile_stats st = {.out = a->tile_part + H * nsu, .row1 = a->stats_row1,
                               .ranges = a->diag_ranges, .buckets = a->diag_buckets};
    int phalf = a->train ? 0 : lx_attn_half();
    struct lx_tile_ws ws = {.bq = LX_TILE_BQ, .bk = LX_TILE_BK, .n_thr = a->n_thr, .scratch = a->tile,
                            .tab = a->tile_tab, .rot = a->tile_rot, .stats = want ? &st : NULL,
                            .acc = a->tile_acc, .part = a->tile_part, .kpack = a->tile_kpack, .phalf = phalf,
                            .pnorm = phalf ? lx_acts_lazy(a, &a->tile_pn) : NULL};
    for (int b = 0; b < B; b++) {
        const float *q = qkv + (long)b * T * QKV;
        if (want) {
            memset(st.out, 0, sizeof(struct lx_diag) * (size_t)H);
            st.row0 = a->stats_row0 ? a->stats_row0[b] : 0;
        }
        ws.lse = lse ? lse + (long)b * H * T : NULL;
        lx_attn_tiled_forward(ao + (long)b * T * HD, q, q + HD, q + HD + KD, spec, mult, sh, &ws);
        if (want)
            put_stats(stats ? stats + (long)b * H * LX_ATTN_NSTATS : NULL, diag ? diag + (long)b * H : NULL, st.out,
                      H);
    }
}

/* Attention of every (window, head). Training runs tiled (a->tiled), the
** forward keeping each row's log-sum-exp in lse for the tiled backward;
** forced materialised (LENX_TRAIN_ATTENTION=materialised) it runs the head
** path and keeps every head's probabilities (layers · B · H · T² floats).
** Evaluation runs tiled, row statistics included (the `attn` task, answer
** rows of retrieval tasks, t5align's calibration), its probabilities rounded
** as llama.cpp's where they are (lx_attn_half: normalised, a block's rows at
** a time), unless the pass asks for whole probability rows (a probe) or for
** the head path (head_path: tests). */
static void attention_all(struct lx_acts *a, const struct lx_spec *spec, const float *qkv, float *ao,
                          float *att, float *lse, double *stats, struct lx_diag *diag, const float *mult, int layer,
                          const struct lx_attn_shape *sh)
{
    int phalf = a->train ? 0 : lx_attn_half();
    if (a->train ? a->tiled : !a->probe && !a->head_path) {
        attention_tiled(a, spec, qkv, ao, stats, diag, mult, lse, sh);
        return;
    }
    int B = a->B, T = sh->T, H = sh->H, KV = sh->KV, D = sh->D;
    long HD = (long)H * D, KD = (long)KV * D, QKV = HD + 2 * KD;
    size_t nfar = lx_attn_far_floats(T, D);
    if (!att)
        att = lx_acts_lazy(a, &a->att);
    if (spec->posmap.method)
        lx_acts_lazy(a, &a->far);
#pragma omp parallel for schedule(dynamic, 1)
    for (long bh = 0; bh < (long)B * H; bh++) {
        int b = (int)(bh / H), h = (int)(bh % H), thr = omp_get_thread_num();
        const float *q = qkv + (long)b * T * QKV + (long)h * D, *k = qkv + (long)b * T * QKV + HD + (long)(h / (H / KV)) * D;
        float *P = a->train ? att + bh * T * T : att + (long)thr * T * T;
        struct lx_attn_ws ws = {
            .tab = a->tab + (long)thr * 2 * lx_spec_tab_len(spec, T),
            .far = a->far ? a->far + nfar * (size_t)thr : NULL,
            .stats = stats ? stats + bh * LX_ATTN_NSTATS : NULL,
            .stats_row0 = a->stats_row0 ? a->stats_row0[b] : 0, .stats_row1 = a->stats_row1,
            .mult = mult ? mult[h] : 1.0f, .lse = a->train && lse ? lse + bh * T : NULL, .phalf = phalf,
        };
        lx_attn_head_forward(ao + (long)b * T * HD + (long)h * D, P, q, k, k + KD, spec, h, sh, &ws);
        if (a->probe)
            a->probe(a->probe_ctx, layer, b, h, P, T);
    }
}

/* Positions into q and k: rotary by window position (or PoSE ids), then
** CosScale's normalisation; sign −1 is the backward of the rotation. */
static void rope_rows(struct lx_acts *a, const struct lx_spec *spec, const double *cs, float *qkv, int H, int KV,
                      int D, int sign)
{
    const double *csk = spec->rotary.decay_scale ? a->rope_csk : NULL;    /* a local layer has no decay */
    if (a->pos)
        lx_rope_apply(qkv, &spec->rotary, cs, csk, 1, a->B * a->T, H, KV, D, sign);
    else
        lx_rope_apply(qkv, &spec->rotary, cs, csk, a->B, a->T, H, KV, D, sign);
}

/* Norm, q|k|v, positions and attention of layer l: xin (N, C) to ao (N, HD),
** the layer's activations in the slices LAY gives (one slice in evaluation). */
static void attention_layer(const struct lx_model *m, const struct lx_spec *global, struct lx_acts *a, long l,
                            const float *xin, const struct sizes *s)
{
    struct lx_spec own;
    const struct lx_spec *spec = lx_model_layer_spec(m, global, l, &own);
    int glob = lx_spec_layer(global, l) == global;
    const struct lx_arch *ar = &m->arch;
    const struct lx_layer_w *W = &m->v.layer[l];
    float *rstd1 = LAY(a, a->rstd1, l, s->N), *xn1 = LAY(a, a->xn1, l, s->N * s->C);
    float *qkv = LAY(a, a->qkv, l, s->N * s->QKV), *ao = LAY(a, a->ao, l, s->N * s->HD);
    float *att = a->train && !a->tiled ? a->att + l * (long)a->B * s->H * s->T * s->T : a->att;
    float *lse = a->train && (a->tiled || ar->sinks) ? a->lse + l * (long)a->B * s->H * s->T : NULL;
    lx_norm_forward(ar, xn1, rstd1, xin, W->attn_norm, W->attn_norm_b, s->N);
    lx_layer_qkv(qkv, xn1, W, ar, s->N);
    lx_layer_qk_norm(qkv, a->train ? LAY(a, a->qkraw, l, s->N * (s->H + s->KV) * ar->d_head) : NULL,
                     a->train ? LAY(a, a->qkr, l, s->N * (s->H + s->KV)) : NULL, W, ar, s->N);
    rope_rows(a, spec, glob ? a->rope_cs : a->rope_local, qkv, (int)s->H, (int)s->KV, (int)ar->d_head, +1);
    if (spec->cosine)
        lx_qk_normalize(qkv, a->train ? a->qkn + l * s->N * 2 * s->H : NULL, s->N, (int)s->H, (int)s->KV,
                        (int)ar->d_head);
    if (lx_numerics_get() == LX_NUMERICS_BF16)     /* the attention's products read bf16 q, k, v */
        lx_round_bf16_n(qkv, (size_t)(s->N * s->QKV));
    else if (!a->train) {   /* as llama.cpp's from its half cache, q for q·K too (lx_attn_half; 0: none) */
        size_t n = (size_t)(s->N * s->QKV), i;
        if (lx_attn_half() == LX_DT_F16 && !a->half_over_layer && (i = lx_f16_first_over(qkv, n)) < n)
            a->half_over_layer = (int)l + 1, a->half_over_row = (long)(i / (size_t)s->QKV);
        lx_round_half_n(qkv, lx_attn_half(), n);
    }
    if (a->kv)
        lx_kvcache_put(a->kv, (int)l, qkv, a->B, a->T, (int)s->H);
    struct lx_attn_shape sh = shape_of(ar, a->T);
    attention_all(a, spec, qkv, ao, att, lse, a->stats ? a->stats + l * a->B * s->H * LX_ATTN_NSTATS : NULL,
                  a->diag ? a->diag + l * a->B * s->H : NULL, W->logit_scale, (int)l, &sh);
}

/* The MLP's activation act(W1·n2(xm) [, W3·n2(xm)]) of n rows (its sum into
** the residual stream is the caller's); act (row stride ldact) may be h
** (ldact F2: the activation over each row's first F values); sig (or NULL)
** keeps GELU's σ. */
static void mlp_act(const struct lx_arch *ar, const struct lx_layer_w *W, const float *xm, float *xn2, float *rstd2,
                    float *h, float *act, int ldact, float *sig, long n, const struct sizes *s)
{
    lx_norm_forward(ar, xn2, rstd2, xm, W->mlp_norm, W->mlp_norm_b, n);
    lx_layer_w13(h, xn2, W, ar, n);
    lx_mlp_act(ar, act, ldact, sig, h, n);
}

/* The first non-finite value of n logit rows starting at row r0 (the
** cross-entropy names the row), into a->bad_logit unless one is there already. */
static void note_nonfinite(struct lx_acts *a, const float *logits, long r0, long n, long V)
{
    for (long i = 0; a->bad_logit < 0 && i < n * V; i++)
        if (!isfinite(logits[i]))
            a->bad_logit = r0 * V + i, a->bad_value = logits[i];
}

/* The final norm and the head's logits of all N rows, a->rows at a time
** (xnf holds one block); with targets, the per-token NLL over blocks of
** ce_rows rows (and their softmax into probs, one block, unless NULL). loss_only: the logits of a block of
** at most LX_EVAL_ROWS rows at a time, in place of the last, each checked, and handed to a->on_logits. */
static void head(const struct lx_model *m, struct lx_acts *a, const float *x, float *probs, long ce_rows,
                 const int *targets, const struct sizes *s)
{
    long rows = a->rows > 0 ? a->rows : s->N;
    LX_ASSERT(!a->loss_only || targets);
    if (a->loss_only) {
        rows = rows < LX_EVAL_ROWS ? rows : LX_EVAL_ROWS;
        a->bad_logit = -1;
    }
    for (long r0 = 0; r0 < s->N; r0 += rows) {
        long n = s->N - r0 < rows ? s->N - r0 : rows;
        float *blk = a->loss_only ? a->logits : a->logits + r0 * s->V;     /* row r0's logits */
        lx_norm_forward(&m->arch, a->xnf, a->rstdf + r0, x + r0 * s->C, m->v.norm, m->v.norm_b, n);
        lx_head_logits(blk, a->xnf, m, n);
        for (long c0 = r0; targets && c0 < r0 + n; c0 += ce_rows) {
            int nc = (int)(r0 + n - c0 < ce_rows ? r0 + n - c0 : ce_rows);
            const float *lg = blk + (c0 - r0) * s->V;
            int bad = lx_crossentropy_forward(a->loss + c0, probs, lg, targets + c0, nc, (int)s->V);
            if (a->loss_only && bad < nc)   /* the cross-entropy saw the block's first bad row */
                note_nonfinite(a, lg + (long)bad * s->V, c0 + bad, nc - bad, s->V);
        }
        if (a->loss_only && a->on_logits)
            a->on_logits(a->on_logits_ctx, a, r0, n, blk);
    }
}

/* The head of an answer pass (LX_ACTS_EVAL_ANSWER): the final norm, the
** logits and their loss of the scored rows only, gathered in row order up to
** a block at a time (xnf's rows), the logits kept in that order (a->hrow says
** where); without targets none (a pass for its attention statistics). Each
** step is row by row, as in head: in portable numerics a product gives a
** row the bits of the whole, so the kept rows are the bits an (N, V) pass
** gives them (tested). */
static void head_answer(const struct lx_model *m, struct lx_acts *a, const float *x, const int *targets,
                        const struct sizes *s)
{
    if (!targets) {
        for (long r = 0; r < s->N; r++)
            a->loss[r] = 0.0f, a->hrow[r] = -1;
        return;
    }
    long cap = a->rows < (long)a->B * LX_ACTS_ANSWER_ROWS ? a->rows : (long)a->B * LX_ACTS_ANSWER_ROWS, k = 0;
    long *src = lx_xmalloc(sizeof(long) * (size_t)cap);
    int *tg = lx_xmalloc(sizeof(int) * (size_t)cap);
    float *ls = lx_xmalloc(sizeof(float) * (size_t)cap), *rs = lx_xmalloc(sizeof(float) * (size_t)cap);
    for (long r = 0; r < s->N;) {
        long n = 0;
        for (; r < s->N && n < cap; r++) {
            a->loss[r] = 0.0f;
            a->hrow[r] = targets[r] < 0 ? -1 : (int)(k + n);
            if (targets[r] >= 0) {
                LX_ASSERT(k + n < (long)a->B * LX_ACTS_ANSWER_ROWS);
                memcpy(a->xnf + n * s->C, x + r * s->C, sizeof(float) * (size_t)s->C);
                src[n] = r, tg[n++] = targets[r];
            }
        }
        if (!n)
            break;
        float *lg = a->logits + k * s->V;
        lx_norm_forward(&m->arch, a->xnf, rs, a->xnf, m->v.norm, m->v.norm_b, n);
        lx_head_logits(lg, a->xnf, m, n);
        lx_crossentropy_forward(ls, NULL, lg, tg, (int)n, (int)s->V);
        for (long i = 0; i < n; i++)
            a->loss[src[i]] = ls[i], a->rstdf[src[i]] = rs[i];
        k += n;
    }
    free(src), free(tg), free(ls), free(rs);
}

/* Training: every layer's activations kept for backward (dx, the
** backward's, is the post-norms' scratch). */
static void forward_train(const struct lx_model *m, const struct lx_spec *spec, const int *targets,
                          struct lx_acts *a, const struct sizes *s)
{
    long NC = s->N * s->C;
    float eps = (float)m->arch.norm_eps;
    for (long l = 0; l < s->L; l++) {
        const struct lx_layer_w *W = &m->v.layer[l];
        float *xin = a->x + l * NC, *xm = a->xm + l * NC, *ao = a->ao + l * s->N * s->HD;
        float *act = a->act + l * s->N * s->F, *pp = a->post ? a->post + l * 2 * NC : NULL;
        float *pr = a->post ? a->post_rstd + l * 2 * s->N : NULL;
        attention_layer(m, spec, a, l, xin, s);
        memcpy(xm, xin, sizeof(float) * (size_t)NC);
        lx_layer_out(xm, pp, a->dx, pr, ao, s->HD, W->mo, W->bo, W->attn_post, s->N, s->HD, s->C, eps);
        mlp_act(&m->arch, W, m->arch.parallel ? xin : xm, a->xn2 + l * NC, a->rstd2 + l * s->N,
                a->h + l * s->N * s->F2, act, (int)s->F, a->sig ? a->sig + l * s->N * s->F : NULL, s->N, s);
        memcpy(xin + NC, xm, sizeof(float) * (size_t)NC);
        lx_layer_out(xin + NC, pp ? pp + NC : NULL, a->dx, pr ? pr + s->N : NULL, act, s->F, W->mw2, W->b2,
                     W->mlp_post, s->N, s->F, s->C, eps);
    }
    head(m, a, a->x + s->L * s->N * s->C, a->probs, s->N, targets, s);
}

/* Evaluation: one layer's activations at a time, the residual stream x
** updated in place, the MLP's activation over its pre-activation, and the
** attention, MLP and head phases' buffers overlaid (acts.c). The MLP and the
** head run over a->rows rows at a time: all N in fast numerics, where a
** row-blocked GEMM would change which OpenBLAS kernel path a row takes and
** with it the bits (docs/PERFORMANCE.md, "Evaluation memory"); LX_EVAL_ROWS
** in portable numerics, whose products give a row block the bits of the
** whole, so the scratch is O(LX_EVAL_ROWS × width). */
static void forward_eval(const struct lx_model *m, const struct lx_spec *spec, const int *targets,
                         struct lx_acts *a, const struct sizes *s)
{
    long rows = a->rows > 0 ? a->rows : s->N;
    for (long l = 0; l < s->L; l++) {
        const struct lx_layer_w *W = &m->v.layer[l];
        attention_layer(m, spec, a, l, a->x, s);
        if (a->par)     /* the MLP reads the layer's input (arch parallel) */
            memcpy(a->par, a->x, sizeof(float) * (size_t)(s->N * s->C));
        /* xn1 (read by q|k|v) holds a post-norm's product */
        lx_layer_out(a->x, a->xn1, a->xn1, a->rstd1, a->ao, s->HD, W->mo, W->bo, W->attn_post, s->N, s->HD, s->C,
                     (float)m->arch.norm_eps);
        for (long r0 = 0; r0 < s->N; r0 += rows) {
            float *x = a->x + r0 * s->C;
            long n = s->N - r0 < rows ? s->N - r0 : rows;
            mlp_act(&m->arch, W, a->par ? a->par + r0 * s->C : x, a->xn2, a->rstd1 + r0, a->h, a->h, (int)s->F2, NULL,
                    n, s);
            /* xn2 (read by w1|w3) holds a post-norm's product */
            lx_layer_out(x, a->xn2, a->xn2, a->rstd1 + r0, a->h, s->F2, W->mw2, W->b2, W->mlp_post, n, s->F, s->C,
                         (float)m->arch.norm_eps);
        }
    }
    if (a->answer)
        head_answer(m, a, a->x, targets, s);
    else
        head(m, a, a->x, NULL, LX_EVAL_ROWS, targets, s);     /* losses only: no softmax rows (no backward) */
}

double lx_model_forward(const struct lx_model *m, const struct lx_spec *spec_in, const int *tokens,
                        const int *targets, struct lx_acts *a)
{
    struct lx_spec local[2];
    const struct lx_spec *spec = lx_model_spec(m, spec_in, local);
    struct sizes s = sizes_of(&m->arch, a->B, a->T);
    int *drawn = NULL;      /* randpos at evaluation: every window at the draw for its length (positions.h) */
    if (!a->pos && spec->pose.random) {
        drawn = lx_xmalloc(sizeof(int) * (size_t)s.N);
        lx_randpos_eval(drawn, a->T, spec->pose.target);
        for (int b = 1; b < a->B; b++)
            memcpy(drawn + (long)b * a->T, drawn, sizeof(int) * (size_t)a->T);
        a->pos = drawn;
    }
    double *csk = spec->rotary.decay_scale ? lx_acts_lazy(a, &a->rope_csk) : NULL;
    for (int k = 0; k < (spec->local ? 2 : 1); k++) {     /* the local layers' table beside (arch local_every) */
        const struct lx_rotary *r = k ? &spec->local->rotary : &spec->rotary;
        double *cs = k ? a->rope_local : a->rope_cs;
        if (a->pos)
            lx_rope_table_pos(cs, k ? NULL : csk, r, a->pos, s.N);
        else
            lx_rope_table(cs, k ? NULL : csk, r, a->T);
    }
    if (spec->cosine && a->train)
        lx_acts_lazy(a, &a->qkn);
    a->half_over_layer = 0;
    lx_embed(a->x, a->embraw, a->embrstd ? a->embrstd : a->rstd1, m, tokens, s.N);     /* eval: rstd1's row */
    if (a->train)
        forward_train(m, spec, targets, a, &s);
    else
        forward_eval(m, spec, targets, a, &s);
    if (drawn) {
        a->pos = NULL;
        free(drawn);
    }
    if (!targets)
        return 0.0;
    double sum = 0.0;
    long n = 0;
    for (long i = 0; i < s.N; i++)
        if (targets[i] >= 0) {
            sum += a->loss[i];
            n++;
        }
    return n ? sum / (double)n : 0.0;
}

/* dL/dw of a head's learned multiplier from its q rows and their gradient
** dq (T rows of stride ld): S = c·w·(q·k) and dq = dL/d(q·k)·K, so
** dL/dw = Σ_i q_i·dq_i / w. */
static double dmult_of(const float *q, const float *dq, long ld, int T, int D, float w)
{
    double s = 0.0;
    for (int t = 0; t < T; t++)
        for (int d = 0; d < D; d++)
            s += (double)q[(long)t * ld + d] * dq[(long)t * ld + d] / w;
    return s;
}

/* The materialised backward of every (window, head) of one layer into
** a->dqkv from a->dao. Query heads of a group write the same dk, dv rows, so
** one iteration takes a (window, key/value head) and its H / KV query heads
** in order: no races, and the sums do not depend on the thread count. dm
** (B·H) gets the learned multipliers' gradients when mult is given. */
static void attention_backward_materialised(struct lx_acts *a, const struct lx_spec *spec, const float *qkv,
                                            const float *att, const float *mult, double *dm, double *drel,
                                            const struct lx_attn_shape *sh)
{
    int B = a->B, T = a->T, H = sh->H, KV = sh->KV, D = sh->D, G = H / KV;
    long HD = (long)H * D, KD = (long)KV * D, QKV = HD + 2 * KD, L = lx_spec_tab_len(spec, T);
#pragma omp parallel for schedule(dynamic, 1)
    for (long bg = 0; bg < (long)B * KV; bg++) {
        int b = (int)(bg / KV), g = (int)(bg % KV), thr = omp_get_thread_num();
        long row0 = (long)b * T * QKV, kof = HD + (long)g * D;
        for (int hh = g * G; hh < (g + 1) * G; hh++) {
            long bh = (long)b * H + hh;
            const float *q = qkv + row0 + (long)hh * D;
            float *dq = a->dqkv + row0 + (long)hh * D, *dk = a->dqkv + row0 + kof;
            float w = mult ? mult[hh] : 1.0f;
            lx_attn_head_backward(dq, dk, dk + KD, a->dao + (long)b * T * HD + (long)hh * D, att + bh * T * T,
                                  a->dp + (long)thr * T * T, q, qkv + row0 + kof, qkv + row0 + kof + KD, spec, hh,
                                  sh, a->tab + (long)thr * 2 * L, w, drel ? drel + bh * L : NULL);
            if (dm)
                dm[bh] = dmult_of(q, dq, QKV, T, D, w);
        }
    }
}

/* The tiled backward of one layer, a window at a time (its heads in
** parallel): ao and lse are the layer's outputs and log-sum-exps. */
static void attention_backward_tiled(struct lx_acts *a, const struct lx_spec *spec, const float *qkv,
                                     const float *ao, const float *lse, const float *mult, double *dm, double *drel,
                                     const struct lx_attn_shape *sh)
{
    int B = a->B, T = a->T, H = sh->H, KV = sh->KV, D = sh->D;
    long HD = (long)H * D, KD = (long)KV * D, QKV = HD + 2 * KD;
    struct lx_tile_bwd_ws ws = {.bq = LX_TILE_TRAIN_BQ, .bk = LX_TILE_TRAIN_BK, .n_thr = a->n_thr,
                                .scratch = a->tile_bwd, .tab = a->tile_tab, .dkv = a->dkv};
    for (int b = 0; b < B; b++) {
        const float *q = qkv + (long)b * T * QKV;
        float *dq = a->dqkv + (long)b * T * QKV;
        ws.dist_grad = drel ? drel + (long)b * H * lx_spec_tab_len(spec, T) : NULL;
        lx_attn_tiled_backward(dq, dq + HD, dq + HD + KD, a->dao + (long)b * T * HD, ao + (long)b * T * HD,
                               lse + (long)b * H * T, q, q + HD, q + HD + KD, spec, mult, sh, &ws);
        for (int h = 0; dm && h < H; h++)
            dm[(long)b * H + h] = dmult_of(q + (long)h * D, dq + (long)h * D, QKV, T, D, mult[h]);
    }
}

/* A learned relative bias's gradient (H, values) += what the kernels summed
** per (window, head) and distance (B, H, lx_spec_tab_len), pulled back
** through the method's m_h(t; θ_h) in window and head order. */
static void relbias_pull(float *drel, const double *dist, const struct lx_spec *spec, int B, int H, int T)
{
    const struct lx_relbias *r = &spec->rel;
    long L = lx_spec_tab_len(spec, T);
    double *dt = lx_xcalloc((size_t)H * (size_t)r->values, sizeof *dt);
    for (long bh = 0; bh < (long)B * H; bh++) {
        long h = bh % H;
        r->pull(r, spec->facts.rel_bias + h * r->values, dist + bh * L, T, dt + h * r->values);
    }
    for (long k = 0; k < (long)H * r->values; k++)
        drel[k] += (float)dt[k];
    free(dt);
}

/* A layer's learned parts and their gradients' buffers (NULL: none). */
struct lx_learned_grads {
    const float *mult;      /* (H,) the multipliers of S */
    float *dmult, *dsink;   /* (H,) */
    float *drel;            /* (H, values) a relative bias's, in global layers */
};

/* The learned sink logits' gradient: a zero sink of logit z_h takes p_s of
** a row and gives it nothing, so dL/dz_h = −Σ_rows p_s·(dO·O) (the softmax's
** Σ_j p_j·dP_j is dO·O, the sink's dP 0), p_s = e^{z_h − lse} from the row's
** log-sum-exp either forward kept. Summed in window, row order: thread count
** free. */
static void sink_backward(const struct lx_acts *a, const struct lx_spec *spec, const float *ao, const float *lse,
                          float *dsink, const struct lx_attn_shape *sh)
{
    int B = a->B, T = sh->T, H = sh->H, D = sh->D;
    for (int h = 0; h < H; h++) {
        double z = lx_zsink_logit(spec, h), g = 0.0;
        for (long bt = 0; bt < (long)B * T; bt++) {
            long b = bt / T, t = bt % T, bht = (b * H + h) * T + t;
            const float *o = ao + bt * sh->ldo + (long)h * D, *d = a->dao + bt * sh->ldo + (long)h * D;
            double dot = 0.0;
            for (int c = 0; c < D; c++)
                dot += (double)o[c] * d[c];
            g -= exp(z - (double)lse[bht]) * dot;
        }
        dsink[h] += (float)g;
    }
}

/* Backward of every (window, head) of one layer into a->dqkv from a->dao, on
** the path the forward took; the learned parts' gradients (lg) += theirs,
** each summed over windows in order (thread count free): dmult (H,) the
** multipliers' when mult is given, dsink (H,) the sink logits' when the spec
** has them, drel (H, values) a relative bias's when given. */
static void attention_backward(struct lx_acts *a, const struct lx_spec *spec, const float *qkv, const float *ao,
                               const float *att, const float *lse, const struct lx_learned_grads *lg,
                               const struct lx_attn_shape *sh)
{
    int B = a->B, H = sh->H;
    const float *mult = lg->mult;
    float *dmult = lg->dmult, *drel = lg->drel;
    double *dm = mult ? lx_xcalloc((size_t)B * (size_t)H, sizeof *dm) : NULL;
    double *dr = drel ? lx_xcalloc((size_t)B * (size_t)H * (size_t)lx_spec_tab_len(spec, sh->T), sizeof *dr) : NULL;
    if (a->tiled && lx_numerics_get() == LX_NUMERICS_BF16)     /* the tiled products read bf16 dO (tiled_bwd.c) */
        lx_round_bf16_n(a->dao, (size_t)((long)B * sh->T * sh->H * sh->D));
    if (a->tiled)
        attention_backward_tiled(a, spec, qkv, ao, lse, mult, dm, dr, sh);
    else
        attention_backward_materialised(a, spec, qkv, att, mult, dm, dr, sh);
    if (lg->dsink)
        sink_backward(a, spec, ao, lse, lg->dsink, sh);
    for (long bh = 0; dm && bh < (long)B * H; bh++)
        dmult[bh % H] += (float)dm[bh];
    if (dr)
        relbias_pull(drel, dr, spec, B, H, sh->T);
    free(dm);
    free(dr);
}

/* The gradient of a block's product (N, C) from a->dx, the residual
** stream's: through the post-norm of gain post (Gemma) into a->dxn, its
** gain's into dpost, when there is one; else a->dx itself. */
static const float *post_backward(struct lx_acts *a, float *dpost, const float *post, const float *prod,
                                  const float *rstd, const struct sizes *s)
{
    if (!post)
        return a->dx;
    memset(a->dxn, 0, sizeof(float) * (size_t)(s->N * s->C));
    lx_rmsnorm_backward(a->dxn, dpost, a->dx, prod, post, rstd, (int)s->N, (int)s->C);
    return a->dxn;
}

/* Layer l's MLP backward: a->dx holds d(xout) and gets d(xm) added (the
** residual passes d(xout) to xm unchanged). */
static void mlp_backward(const struct lx_model *m, struct lx_acts *a, struct lx_layer_w *G, long l,
                         const struct sizes *s)
{
    const struct lx_layer_w *W = &m->v.layer[l];
    long NC = s->N * s->C;
    const float *xm = a->xm + l * NC, *xn2 = a->xn2 + l * NC, *rstd2 = a->rstd2 + l * s->N;
    const float *h = a->h + l * s->N * s->F2, *act = a->act + l * s->N * s->F;
    const float *dout = post_backward(a, G->mlp_post, W->mlp_post, a->post ? a->post + (2 * l + 1) * NC : NULL,
                                      a->post ? a->post_rstd + (2 * l + 1) * s->N : NULL, s);
    lx_linear_backward(a->dact, G->w2, G->b2, dout, act, W->mw2, (int)s->N, (int)s->F, (int)s->C);
    if (m->arch.mlp == LX_MLP_SWIGLU) {
        lx_swiglu_backward(a->dh, a->dact, h, (int)s->N, (int)s->F);
    } else if (m->arch.mlp == LX_MLP_GEGLU) {
        lx_geglu_backward(a->dh, a->dact, h, (int)s->N, (int)s->F);
    } else {
        memset(a->dh, 0, sizeof(float) * (size_t)(s->N * s->F2));
        (m->arch.mlp == LX_MLP_GELU_ERF ? lx_gelu_erf_backward_s : lx_gelu_backward_s)(
            a->dh, a->dact, h, a->sig + l * s->N * s->F, (int)(s->N * s->F));
    }
    lx_linear_backward(a->dxn, G->w13, G->b13, a->dh, xn2, W->mw13[0], (int)s->N, (int)s->C, (int)s->F2);
    if (a->par) {   /* arch parallel: the MLP read the layer's input; its gradient joins after the attention's */
        memset(a->par, 0, sizeof(float) * (size_t)(s->N * s->C));
        lx_norm_backward(&m->arch, a->par, G->mlp_norm, G->mlp_norm_b, a->dxn, a->x + l * s->N * s->C, W->mlp_norm,
                         rstd2, s->N);
    } else {
        lx_norm_backward(&m->arch, a->dx, G->mlp_norm, G->mlp_norm_b, a->dxn, xm, W->mlp_norm, rstd2, s->N);
    }
}

/* The head's backward: d(logits) from the cross-entropy over n_scored rows
** (through Gemma 2's soft-cap of the logits), the head's product and the
** final norm; a->dx = d(x) of the last layer's output. */
static void head_backward(const struct lx_model *m, struct lx_acts *a, struct lx_weights *g, const int *targets,
                          long n_scored, const struct sizes *s)
{
    lx_crossentropy_backward(a->dlogits, a->probs, targets, (int)s->N, (int)s->V, (float)(1.0 / (double)n_scored));
    for (long i = 0; m->arch.logit_softcap != 0.0 && i < s->N * s->V; i++)     /* a->logits: the capped ones */
        a->dlogits[i] *= lx_softcap_slope(a->logits[i], m->arch.logit_softcap);
    lx_linear_backward(a->dxn, g->head, g->head_b, a->dlogits, a->xnf, m->v.mhead, (int)s->N, (int)s->C, (int)s->V);
    memset(a->dx, 0, sizeof(float) * (size_t)(s->N * s->C));
    lx_norm_backward(&m->arch, a->dx, g->norm, g->norm_b, a->dxn, a->x + s->L * s->N * s->C, m->v.norm, a->rstdf,
                     s->N);
}

void lx_model_backward(const struct lx_model *m, const struct lx_spec *spec_in, const int *tokens,
                       const int *targets, struct lx_acts *a, struct lx_weights *g)
{
    LX_ASSERT(a->train);
    struct lx_spec local[2];
    const struct lx_spec *spec = lx_model_spec(m, spec_in, local);
    const struct lx_arch *ar = &m->arch;
    struct sizes s = sizes_of(ar, a->B, a->T);
    int H = (int)s.H, D = (int)ar->d_head, T = a->T;
    struct lx_attn_shape sh = shape_of(ar, T);
    long n_scored = 0;
    for (long i = 0; i < s.N; i++)
        n_scored += targets[i] >= 0;
    if (!n_scored)
        return;
    head_backward(m, a, g, targets, n_scored, &s);
    long HD = s.HD;
    for (long l = s.L - 1; l >= 0; l--) {
        const struct lx_layer_w *W = &m->v.layer[l];
        struct lx_layer_w *G = &g->layer[l];
        LX_ASSERT(W->n_qkv == 1 && W->n_w13 == 1);     /* a model that trains is in its weight buffer */
        float *xin = a->x + l * s.N * s.C;
        float *rstd1 = a->rstd1 + l * s.N, *xn1 = a->xn1 + l * s.N * s.C;
        float *qkv = a->qkv + l * s.N * s.QKV, *ao = a->ao + l * s.N * HD;
        float *att = a->tiled ? NULL : a->att + l * (long)a->B * H * T * T;
        float *lse = a->tiled || ar->sinks ? a->lse + l * (long)a->B * H * T : NULL;
        mlp_backward(m, a, G, l, &s);
        /* attention: dx now holds d(xm) */
        const float *dout = post_backward(a, G->attn_post, W->attn_post, a->post ? a->post + 2 * l * s.N * s.C : NULL,
                                          a->post ? a->post_rstd + 2 * l * s.N : NULL, &s);
        lx_linear_backward(a->dao, G->wo, G->bo, dout, ao, W->mo, (int)s.N, (int)HD, (int)s.C);
        memset(a->dqkv, 0, sizeof(float) * (size_t)(s.N * s.QKV));
        struct lx_spec own;
        const struct lx_spec *ls = lx_model_layer_spec(m, spec, l, &own);   /* a local layer's own (local_every) */
        int glob = lx_spec_layer(spec, l) == spec;
        struct lx_learned_grads lg = {.mult = W->logit_scale, .dmult = G->logit_scale, .dsink = G->sink,
                                      .drel = glob ? g->rel_bias : NULL};
        attention_backward(a, ls, qkv, ao, att, lse, &lg, &sh);
        if (ls->cosine)
            lx_qk_normalize_backward(a->dqkv, qkv, a->qkn + l * s.N * 2 * H, s.N, H, (int)s.KV, D);
        rope_rows(a, ls, glob ? a->rope_cs : a->rope_local, a->dqkv, H, (int)s.KV, D, -1);
        if (W->q_norm)
            lx_layer_qk_norm_backward(a->dqkv, G->q_norm, G->k_norm, a->qkraw + l * s.N * (H + s.KV) * D,
                                      a->qkr + l * s.N * (H + s.KV), W, ar, s.N);
        lx_linear_backward(a->dxn, G->wqkv, G->bqkv, a->dqkv, xn1, W->mqkv[0], (int)s.N, (int)s.C, (int)s.QKV);
        lx_norm_backward(ar, a->dx, G->attn_norm, G->attn_norm_b, a->dxn, xin, W->attn_norm, rstd1, s.N);
        for (long i = 0; a->par && i < s.N * s.C; i++)
            a->dx[i] += a->par[i];
    }
    float es = ar->emb_scale ? (float)sqrt((double)s.C) : 1.0f;     /* lx_embed's */
    const float *de = a->dx;
    if (ar->emb_norm) {     /* through the embedding LayerNorm (BLOOM's) */
        memset(a->dxn, 0, sizeof(float) * (size_t)(s.N * s.C));
        lx_layernorm_backward(a->dxn, g->emb_norm, g->emb_norm_b, a->dx, a->embraw, m->v.emb_norm, a->embrstd,
                              (int)s.N, (int)s.C);
        de = a->dxn;
    }
    for (long i = 0; i < s.N; i++) {
        float *ge = g->tok_emb + (long)tokens[i] * s.C;
        for (long c = 0; c < s.C; c++)
            ge[c] += de[i * s.C + c] * es;
    }
}

