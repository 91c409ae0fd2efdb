/*
** harness/engine/attention.c - naive attention forward and backward (see .h).
*/
#include "harness/engine/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define IDX(t, h, d) (((long)(t) * H + (h)) * D + (d))

void lx_attention_forward(float *o, float *att, const float *q, const float *k, const float *v,
                          const struct lx_spec *spec, int T, int H, int D, int causal)
{
    double *A = malloc(sizeof(double) * (size_t)T), *B = malloc(sizeof(double) * (size_t)T);
    LX_ASSERT(A && B);
    double inv = 1.0 / sqrt((double)D);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < T; i++) {
            /* A row's tables depend on (head, n): per row when causal, per head otherwise. */
            int n_vis = causal ? i + 1 : T;
            if (causal || i == 0)
                lx_spec_row(spec, h, n_vis, 0, n_vis, A, B);
            float *p = att + ((long)h * T + i) * T;
            double mx = -INFINITY;
            for (int j = 0; j < T; j++) {
                if (j >= n_vis && causal) {
                    p[j] = 0.0f;
                    continue;
                }
                double s = 0.0;
                for (int d = 0; d < D; d++)
                    s += (double)q[IDX(i, h, d)] * k[IDX(j, h, d)];
                int t = i > j ? i - j : j - i;
                double l = A[t] * s * inv + B[t];
                p[j] = (float)l;
                mx = l > mx ? l : mx;
            }
            double z = 0.0;
            for (int j = 0; j < n_vis; j++)
                z += exp((double)p[j] - mx);
            for (int j = 0; j < n_vis; j++)
                p[j] = (float)(exp((double)p[j] - mx) / z);
            for (int d = 0; d < D; d++) {
                double acc = 0.0;
                for (int j = 0; j < n_vis; j++)
                    acc += (double)p[j] * v[IDX(j, h, d)];
                o[IDX(i, h, d)] = (float)acc;
            }
        }
    free(A);
    free(B);
}

void lx_attention_backward(float *dq, float *dk, float *dv, const float *do_, const float *att,
                           const float *q, const float *k, const float *v, const struct lx_spec *spec,
                           int T, int H, int D, int causal)
{
    double *A = malloc(sizeof(double) * (size_t)T), *B = malloc(sizeof(double) * (size_t)T);
    double *dp = malloc(sizeof(double) * (size_t)T);
    LX_ASSERT(A && B && dp);
    double inv = 1.0 / sqrt((double)D);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < T; i++) {
            /* A row's tables depend on (head, n): per row when causal, per head otherwise. */
            int n_vis = causal ? i + 1 : T;
            if (causal || i == 0)
                lx_spec_row(spec, h, n_vis, 0, n_vis, A, B);
            const float *p = att + ((long)h * T + i) * T;
            double dot = 0.0;
            for (int j = 0; j < n_vis; j++) {
                double g = 0.0;
                for (int d = 0; d < D; d++) {
                    g += (double)do_[IDX(i, h, d)] * v[IDX(j, h, d)];
                    dv[IDX(j, h, d)] += p[j] * do_[IDX(i, h, d)];
                }
                dp[j] = g;
                dot += p[j] * g;
            }
            for (int j = 0; j < n_vis; j++) {
                int t = i > j ? i - j : j - i;
                /* dlogit = p (dp - Σ p dp); dS = A dlogit; S = q·k / sqrt(D) */
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

/* Turn scores S (T, T) into probabilities in place: logit = A·S + B by the
** spec's row tables, masked entries 0. tab holds 2T doubles. */
static void scores_to_probs(float *S, const struct lx_spec *spec, int head, int T, int causal, double *tab)
{
    double *A = tab, *B = tab + T;
    int ops = spec->n_ops > 0;
    for (int i = 0; i < T; i++) {
        int n = causal ? i + 1 : T;
        if (ops && (causal || i == 0))
            lx_spec_row(spec, head, n, 0, n, A, B);
        float *s = S + (long)i * T;
        float mx = -INFINITY;
        for (int j = 0; j < n; j++) {
            if (ops) {
                int t = i > j ? i - j : j - i;
                s[j] = (float)(A[t] * s[j] + B[t]);
            }
            mx = s[j] > mx ? s[j] : mx;
        }
        float z = 0.0f;
        for (int j = 0; j < n; j++) {
            s[j] = expf(s[j] - mx);
            z += s[j];
        }
        float iz = 1.0f / z;
        for (int j = 0; j < n; j++)
            s[j] *= iz;
        for (int j = n; j < T; j++)
            s[j] = 0.0f;
    }
}

void lx_attn_head_forward(float *o, int ldo, float *P, const float *q, const float *k, const float *v, int ld,
                          const struct lx_spec *spec, int head, int T, int D, int causal, double *tab)
{
    lx_gemm(P, T, q, ld, k, ld, T, T, D, 0, 1, (float)(1.0 / sqrt((double)D)), 0.0f);
    scores_to_probs(P, spec, head, T, causal, tab);
    lx_gemm(o, ldo, P, T, v, ld, T, D, T, 0, 0, 1.0f, 0.0f);
}

void lx_attn_head_backward(float *dq, float *dk, float *dv, int ld, const float *do_, int ldo, const float *P,
                           float *dP, const float *q, const float *k, const float *v,
                           const struct lx_spec *spec, int head, int T, int D, int causal, double *tab)
{
    float scale = (float)(1.0 / sqrt((double)D));
    lx_gemm(dP, T, do_, ldo, v, ld, T, T, D, 0, 1, 1.0f, 0.0f);     /* dP = dO Vᵀ */
    lx_gemm(dv, ld, P, T, do_, ldo, T, D, T, 1, 0, 1.0f, 1.0f);     /* dV += Pᵀ dO */
    double *A = tab, *B = tab + T;
    int ops = spec->n_ops > 0;
    for (int i = 0; i < T; i++) {
        int n = causal ? i + 1 : T;
        if (ops && (causal || i == 0))
            lx_spec_row(spec, head, n, 0, n, A, B);
        const float *p = P + (long)i * T;
        float *g = dP + (long)i * T;
        float dot = 0.0f;
        for (int j = 0; j < n; j++)
            dot += p[j] * g[j];
        for (int j = 0; j < n; j++) {
            float a = ops ? (float)A[i > j ? i - j : j - i] : 1.0f;
            g[j] = p[j] * (g[j] - dot) * a * scale;     /* dS = P ∘ (dP − Σ P dP) ∘ A / sqrt(D) */
        }
        for (int j = n; j < T; j++)
            g[j] = 0.0f;
    }
    lx_gemm(dq, ld, dP, T, k, ld, T, D, T, 0, 0, 1.0f, 1.0f);       /* dQ += dS K */
    lx_gemm(dk, ld, dP, T, q, ld, T, D, T, 1, 0, 1.0f, 1.0f);       /* dK += dSᵀ Q */
}
