/*
** harness/engine/kernels/attention.c - attention forward and backward: the naive
** reference and the per-head BLAS path (see attention.h).
*/
#include "harness/engine/kernels/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/half.h"

#define IDX(t, h, d) (((long)(t) * H + (h)) * D + (d))

/* Channels of rotary pair k under the table's layout: half (k, k + P) with P
** the table's pairs (D/2, or fewer when rope turns only the first 2P channels
** of a head), interleaved (2k, 2k + 1). */
static void pair_of(const struct lx_rotary *r, int k, int *i0, int *i1)
{
    int half = r->layout == LX_ROPE_HALF;
    *i0 = half ? k : 2 * k;
    *i1 = half ? k + r->n_pairs : 2 * k + 1;
}

void lx_rotary_angles(double *cs, const struct lx_rotary *r, double pos)
{
    for (int k = 0; k < r->n_pairs; k++) {
        double phi = pos * r->inv_freq[k];
        cs[2 * k] = cos(phi), cs[2 * k + 1] = sin(phi);
    }
}

void lx_rotary_turn_by(double *x, const struct lx_rotary *r, const double *cs)
{
    for (int k = 0; k < r->n_pairs; k++) {
        int i0, i1;
        pair_of(r, k, &i0, &i1);
        double c = cs[2 * k], s = cs[2 * k + 1], a = x[i0], b = x[i1];
        x[i0] = a * c - b * s;
        x[i1] = a * s + b * c;
    }
}

void lx_rotary_turn(double *x, const struct lx_rotary *r, double pos)
{
    double cs[2 * LX_SPEC_MAX_PAIRS];
    lx_rotary_angles(cs, r, pos);
    lx_rotary_turn_by(x, r, cs);
}

/* ---- the naive reference ---------------------------------------------------- */

/* q_i · k_j at effective distance δ: q_i arrives turned by i, k_j by j, so q_i
** turns by the extra δ − (i − j) before the dot product. */
static double naive_score(const float *q, const float *k, int H, int D, int h, long i, long j,
                          const struct lx_spec *spec)
{
    double x[2 * LX_SPEC_MAX_PAIRS + 2];
    double extra = lx_spec_delta(spec, i, j) - (double)(i - j);
    for (int d = 0; d < D; d++)
        x[d] = q[IDX(i, h, d)];
    if (extra != 0.0 && spec->rotary.n_pairs)
        lx_rotary_turn(x, &spec->rotary, extra);
    double s = 0.0;
    for (int d = 0; d < D; d++)
        s += x[d] * k[IDX(j, h, d)];
    return s;
}

void lx_attention_forward(float *o, float *att, const float *q, const float *k, const float *v,
                          const struct lx_spec *spec, int T, int H, int D, int causal)
{
    LX_ASSERT(D <= 2 * LX_SPEC_MAX_PAIRS + 2);
    double c = lx_spec_qk_scale(spec, D);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < T; i++) {
            long n = 0;
            for (int j = 0; j < T; j++)
                n += lx_spec_visible(spec, i, j, T, causal);
            float *p = att + ((long)h * T + i) * T;
            double zs = spec->zsink.method ? lx_zsink_logit(spec, h) : -INFINITY, mx = zs;     /* the zero sink's logit */
            for (int j = 0; j < T; j++) {
                if (!lx_spec_visible(spec, i, j, T, causal)) {
                    p[j] = -INFINITY;
                    continue;
                }
                double A, B;
                lx_spec_affine(spec, h, n, lx_spec_delta(spec, i, j), &A, &B);     /* |δ| unless signed_t */
                double l = A * c * naive_score(q, k, H, D, h, i, j, spec) + B;
                p[j] = (float)l;
                mx = l > mx ? l : mx;
            }
            double z = spec->zsink.method ? exp(zs - mx) : 0.0;
            for (int j = 0; j < T; j++)
                z += p[j] == -INFINITY ? 0.0 : exp((double)p[j] - mx);
            for (int j = 0; j < T; j++)
                p[j] = p[j] == -INFINITY ? 0.0f : (float)(exp((double)p[j] - mx) / z);
            for (int d = 0; d < D; d++) {
                double acc = 0.0;
                for (int j = 0; j < T; j++)
                    acc += (double)p[j] * v[IDX(j, h, d)];
                o[IDX(i, h, d)] = (float)acc;
            }
        }
}

void lx_attention_backward(float *dq, float *dk, float *dv, const float *do_, const float *att,
                           const float *q, const float *k, const float *v, const struct lx_spec *spec,
                           int T, int H, int D, int causal)
{
    LX_ASSERT(!spec->vis.sinks && !spec->posmap.method);
    long L = lx_spec_tab_len(spec, T), o = L - T;     /* a signed spec's tables start at δ = −o */
    double *A = malloc(sizeof(double) * (size_t)L), *B = malloc(sizeof(double) * (size_t)L);
    double *dp = malloc(sizeof(double) * (size_t)T);
    LX_ASSERT(A && B && dp);
    double inv = lx_spec_qk_scale(spec, D);
    for (int h = 0; h < H; h++)
        for (long i = 0, last = -1; i < T; i++) {
            /* row i sees keys [lo, hi), n of them (a window's: every distance below n); its tables
            ** depend on (head, n), built again when n changes */
            long lo, hi, n_vis = lx_spec_row_keys(spec, i, T, causal, &lo, &hi);
            if (n_vis != last)
                lx_spec_row(spec, h, n_vis, -o, n_vis + o, A, B);
            last = n_vis;
            const float *p = att + ((long)h * T + i) * T;
            double dot = 0.0;
            for (long j = lo; j < hi; j++) {
                double g = 0.0;
                for (int d = 0; d < D; d++) {
                    g += (double)do_[IDX(i, h, d)] * v[IDX(j, h, d)];
                    dv[IDX(j, h, d)] += p[j] * do_[IDX(i, h, d)];
                }
                dp[j] = g;
                dot += p[j] * g;
            }
            for (long j = lo; j < hi; j++) {
                long t = lx_spec_tab_index(spec, i, j, T);
                /* dlogit = p (dp - Σ p dp); dS = A dlogit; S = c q·k */
                float ds = (float)(p[j] * (dp[j] - dot) * A[t] * inv);
                for (int d = 0; d < D; d++) {
                    dq[IDX(i, h, d)] += ds * k[IDX(j, h, d)];
                    dk[IDX(j, h, d)] += ds * q[IDX(i, h, d)];
                }
            }
        }
    free(A);
    free(B);
    free(dp);
}

/* ---- the BLAS path, one head at a time ---------------------------------- */

size_t lx_attn_far_floats(int T, int D)
{
    return (size_t)T * (size_t)T + 2 * (size_t)T * (size_t)D;
}

/* dst (T, D) = rows of src (stride ld) each turned by the extra angle of
** pos(row) − row, pos the posmap's (lx_posmap_pos). */
static void rotate_rows(float *dst, const float *src, int ld, int T, int D, const struct lx_rotary *r,
                        const struct lx_posmap *pm, int shifted)
{
    double x[2 * LX_SPEC_MAX_PAIRS + 2];
    for (int t = 0; t < T; t++) {
        double pos = lx_posmap_pos(pm, t, shifted);
        for (int d = 0; d < D; d++)
            x[d] = src[(long)t * ld + d];
        lx_rotary_turn(x, r, pos - t);
        for (int d = 0; d < D; d++)
            dst[(long)t * D + d] = (float)x[d];
    }
}

/* Replace the scores of far pairs by their scores at the posmap's distance:
** lower triangle q at its shifted position, k at its plain one; upper (when
** bidirectional) the mirror. One extra GEMM per triangle. */
static void far_scores(float *S, const float *q, const float *k, int ld, const struct lx_spec *spec, int T,
                       int D, int causal, float c, float *ws)
{
    const struct lx_posmap *pm = &spec->posmap;
    float *F = ws, *qr = ws + (long)T * T, *kr = qr + (long)T * D;
    for (int upper = 0; upper <= !causal; upper++) {
        rotate_rows(qr, q, ld, T, D, &spec->rotary, pm, !upper);
        rotate_rows(kr, k, ld, T, D, &spec->rotary, pm, upper);
        lx_gemm(F, T, qr, D, kr, D, T, T, D, 0, 1, c, 0.0f);
        for (long i = 0; i < T; i++) {      /* far: j < near_lo(i) <= i, or j >= near_hi(i) > i */
            long j0 = upper ? lx_posmap_near_hi(pm, i) : 0, j1 = upper ? T : lx_posmap_near_lo(pm, i);
            for (long j = j0; j < j1; j++)
                S[i * T + j] = F[i * T + j];
        }
    }
}

/* exp(x − max) below e^−70 is flushed to 0: the row's sum is >= 1, so such
** terms cannot change it in float, and their products would be denormal
** floats, which cost ~100x (CosScale's s = 128 spreads logits by ±128). */
#define EXP_FLOOR (-70.0f)

/* Per-row logit tables, cached while (n, reach) allow. */
struct rowtab {
    double *A, *B;      /* (lx_spec_tab_len,) each, at lx_spec_tab_index */
    long n, reach;      /* the n they were built for, and the distances covered */
    double A0, B0;      /* the constant map when no op depends on the distance */
};

/* A signed spec's tables cover every δ in (−T, T) at once. */
static void rowtab_get(struct rowtab *rt, const struct lx_spec *spec, int head, long n, long reach, long T)
{
    long o = lx_spec_tab_len(spec, T) - T;
    if (o)
        reach = T - 1;
    if (!spec->has_dist) {
        if (rt->n != n)
            lx_spec_affine(spec, head, n, 0.0, &rt->A0, &rt->B0);
    } else if (rt->n != n || reach > rt->reach) {
        lx_spec_row(spec, head, n, -o, reach + 1 + o, rt->A, rt->B);
        rt->reach = reach;
    }
    rt->n = n;
}

/* Add one row's statistics: max p, entropy, std of its n visible logits
** (from their sum and sum of squares); p is the row after softmax, 0 where masked. */
static void row_stats(double *stats, const float *p, int T, double sum, double sum2, long n, float ps)
{
    double pmax = ps, ent = ps > 0.0f ? -(double)ps * log((double)ps) : 0.0;   /* the zero sink's p, if any */
    double mean = sum / (double)n, var = sum2 / (double)n - mean * mean;
    for (long j = 0; j < T; j++)
        if (p[j] > 0.0f) {
            pmax = p[j] > pmax ? p[j] : pmax;
            ent -= (double)p[j] * log((double)p[j]);
        }
    stats[LX_ST_PMAX] += pmax;
    stats[LX_ST_ENTROPY] += ent;
    stats[LX_ST_SIGMA] += sqrt(var > 0.0 ? var : 0.0);
    stats[LX_ST_ROWS] += 1.0;
}

/* Turn scores S (T, T) into probabilities in place: logit = A·S + B by the
** spec's tables (at |δ| for far pairs), softmax over the visible keys
** [0, ns) ∪ [lo, hi) ∪ [hi, up), masked entries 0; optionally sum row statistics. */
static void scores_to_probs(float *S, const struct lx_spec *spec, int head, int T, int causal, double *tab,
                            double *stats, long stats_row0, long stats_row1, float *lse)
{
    struct rowtab rt = {.A = tab, .B = tab + lx_spec_tab_len(spec, T), .n = -1, .reach = -1};
    long row1 = stats_row1 ? stats_row1 : T;
    int plain = !spec->n_ops && spec->temperature == 1.0;
    for (long i = 0; i < T; i++) {
        long lo, hi, n = lx_spec_row_keys(spec, i, T, causal, &lo, &hi);
        long ns = spec->vis.sinks < lo ? spec->vis.sinks : lo;
        long up = lx_spec_upper_sinks(spec, T, causal, hi);     /* sinks past the window: [hi, up) */
        long reach = ns ? i : i - lo;
        if (up - 1 - i > reach)
            reach = up - 1 - i;
        if (!plain)
            rowtab_get(&rt, spec, head, n, reach, T);
        float *s = S + i * T;
        long r0[3] = {0, lo, hi}, r1[3] = {ns, hi, up};
        float mx, zs;
        lx_zsink_start(spec, head, &mx, &zs);
        float mx0 = mx;
        double sum = 0.0, sum2 = 0.0;
        for (int part = 0; part < 3; part++)
            for (long j = r0[part]; j < r1[part]; j++) {
                if (!plain) {
                    long t = lx_spec_tab_index(spec, i, j, T);
                    double A, B;
                    if (!spec->has_dist) {
                        A = rt.A0, B = rt.B0;
                    } else if (lx_spec_far(spec, i, j)) {
                        lx_spec_affine(spec, head, n, lx_spec_delta(spec, i, j), &A, &B);
                    } else {
                        A = rt.A[t], B = rt.B[t];
                    }
                    s[j] = (float)(A * s[j] + B);
                }
                lx_softcap_row(s, j, j + 1, spec->softcap);
                mx = s[j] > mx ? s[j] : mx;
                if (stats && i >= stats_row0 && i < row1) {
                    sum += s[j];
                    sum2 += (double)s[j] * s[j];
                }
            }
        float z = zs > 0.0f && mx0 - mx > EXP_FLOOR ? expf(mx0 - mx) : 0.0f;     /* the sink's share */
        zs = z;
        for (int part = 0; part < 3; part++)
            for (long j = r0[part]; j < r1[part]; j++) {
                float e = s[j] - mx;
                s[j] = e > EXP_FLOOR ? expf(e) : 0.0f;
                z += s[j];
            }
        float iz = 1.0f / z;
        if (lse)
            lse[i] = mx + logf(z);
        for (int part = 0; part < 3; part++)
            for (long j = r0[part]; j < r1[part]; j++)
                s[j] *= iz;
        for (long j = ns; j < lo; j++)
            s[j] = 0.0f;
        for (long j = up; j < T; j++)
            s[j] = 0.0f;
        if (stats && i >= stats_row0 && i < row1)
            row_stats(stats, s, T, sum, sum2, n, zs * iz);
    }
}

void lx_attn_head_forward(float *o, float *P, const float *q, const float *k, const float *v,
                          const struct lx_spec *spec, int head, const struct lx_attn_shape *sh,
                          const struct lx_attn_ws *ws)
{
    int T = sh->T, D = sh->D, ld = sh->ld, ldo = sh->ldo, causal = sh->causal;
    float c = (float)lx_spec_qk_scale(spec, D) * (ws->mult != 0.0f ? ws->mult : 1.0f);
    lx_gemm(P, T, q, ld, k, ld, T, T, D, 0, 1, c, 0.0f);
    if (spec->posmap.method && spec->rotary.n_pairs)
        far_scores(P, q, k, ld, spec, T, D, causal, c, ws->far);
    scores_to_probs(P, spec, head, T, causal, ws->tab, ws->stats, ws->stats_row0, ws->stats_row1, ws->lse);
    lx_round_half_n(P, ws->phalf, (size_t)T * (size_t)T);
    lx_gemm(o, ldo, P, T, v, ld, T, D, T, 0, 0, 1.0f, 0.0f);
}

/* The soft-cap's slope at one logit of the materialised backward, which
** keeps P, not the logits: S = A·(scale·q·k) + B recomputed (the forward's
** product as a plain sum: its last bits may differ, which moves the slope,
** not P), then capped as the forward caps it. */
static float capped_slope(const struct lx_spec *spec, const float *q, const float *k, int D, float scale, double A,
                          double B)
{
    float dot = 0.0f;
    for (int d = 0; d < D; d++)
        dot += q[d] * k[d];
    float s = (float)(A * (scale * dot) + B);
    lx_softcap_row(&s, 0, 1, spec->softcap);
    return lx_softcap_slope(s, spec->softcap);
}

void lx_attn_head_backward(float *dq, float *dk, float *dv, const float *do_, const float *P, float *dP,
                           const float *q, const float *k, const float *v, const struct lx_spec *spec, int head,
                           const struct lx_attn_shape *sh, double *tab, float mult, double *dist_grad)
{
    int T = sh->T, D = sh->D, ld = sh->ld, ldo = sh->ldo, causal = sh->causal;
    LX_ASSERT(!spec->vis.sinks && !spec->posmap.method);
    float scale = (float)lx_spec_qk_scale(spec, D) * mult;
    lx_gemm(dP, T, do_, ldo, v, ld, T, T, D, 0, 1, 1.0f, 0.0f);     /* dP = dO Vᵀ */
    lx_gemm(dv, ld, P, T, do_, ldo, T, D, T, 1, 0, 1.0f, 1.0f);     /* dV += Pᵀ dO */
    long L = lx_spec_tab_len(spec, T), o = L - T;     /* a signed spec's tables start at δ = −o */
    double *A = tab, *B = tab + L;
    int ops = spec->n_ops > 0 || spec->temperature != 1.0;
    for (long i = 0, last = -1; i < T; i++) {
        long lo, hi, n = lx_spec_row_keys(spec, i, T, causal, &lo, &hi);     /* keys [lo, hi) */
        if (ops && n != last)
            lx_spec_row(spec, head, n, -o, n + o, A, B);
        last = n;
        const float *p = P + (long)i * T;
        float *g = dP + (long)i * T;
        float dot = 0.0f;
        for (long j = lo; j < hi; j++)
            dot += p[j] * g[j];
        for (long j = 0; j < lo; j++)
            g[j] = 0.0f;
        for (long j = lo; j < hi; j++) {
            long t = lx_spec_tab_index(spec, i, j, T);
            float a = ops ? (float)A[t] : 1.0f, dl = p[j] * (g[j] - dot);
            if (spec->softcap != 0.0)
                dl *= capped_slope(spec, q + (long)i * ld, k + j * ld, D, scale, ops ? A[t] : 1.0, ops ? B[t] : 0.0);
            if (dist_grad)      /* a learned relative bias is added last: the logit's gradient over τ */
                dist_grad[t] += (double)dl / spec->temperature;
            g[j] = dl * a * scale;      /* dS = P ∘ (dP − Σ P dP) ∘ A · c */
        }
        for (long j = hi; j < T; j++)
            g[j] = 0.0f;
    }
    lx_gemm(dq, ld, dP, T, k, ld, T, D, T, 0, 0, 1.0f, 1.0f);       /* dQ += dS K */
    lx_gemm(dk, ld, dP, T, q, ld, T, D, T, 1, 0, 1.0f, 1.0f);       /* dK += dSᵀ Q */
}
