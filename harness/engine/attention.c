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
