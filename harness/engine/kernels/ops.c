/*
** harness/engine/kernels/ops.c - forward/backward of the engine's elementwise and
** row-wise ops; matrix products go through lx_matmul (the BLAS seam).
*/
#include "harness/engine/kernels/ops.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/lx.h"
#include "harness/engine/kernels/blas.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/vexp.h"
#include "harness/engine/kernels/wprod.h"

void lx_bias_add(float *y, const float *b, long T, long OC)
{
    for (long t = 0; t < T; t++)
        for (long o = 0; o < OC; o++)
            y[t * OC + o] += b[o];
}

void lx_linear_forward(float *y, const float *x, const float *W, const float *b, int T, int C, int OC)
{
    lx_matmul(y, x, W, T, OC, C, 0, 1, 1.0f, 0.0f);
    if (b)
        lx_bias_add(y, b, T, OC);
}

void lx_linear_backward(float *dx, float *dW, float *db, const float *dy, const float *x, struct lx_wmat W,
                        int T, int C, int OC)
{
    if (lx_numerics_get() == LX_NUMERICS_BF16) {        /* bf16 operands, fp32 sums (wprod.h) */
        lx_linear_backward_bf16(dx, dW, dy, x, W, T, C, OC);
    } else {
        LX_ASSERT(W.type == LX_DT_F32);
        lx_matmul(dx, dy, W.p, T, C, OC, 0, 0, 1.0f, 0.0f);    /* (T, OC) (OC, C) */
        lx_matmul(dW, dy, x, OC, C, T, 1, 0, 1.0f, 1.0f);      /* (OC, T) (T, C) */
    }
    if (db)
        for (int t = 0; t < T; t++)
            for (int o = 0; o < OC; o++)
                db[o] += dy[(long)t * OC + o];
}

void lx_rmsnorm_forward(float *y, float *rstd, const float *x, const float *g, int T, int C, float eps)
{
#pragma omp parallel for schedule(static) if ((long)T * C > 65536)
    for (int t = 0; t < T; t++) {
        const float *xt = x + (long)t * C;
        double ss = 0.0;
        for (int c = 0; c < C; c++)
            ss += (double)xt[c] * xt[c];
        float r = (float)(1.0 / sqrt(ss / C + eps));
        rstd[t] = r;
        for (int c = 0; c < C; c++)
            y[(long)t * C + c] = xt[c] * r * g[c];
    }
}

#define RMS_BLOCK 64    /* rows per partial dg: fixed, so the sum order never depends on threads */

/* One row of a norm's backward: dx (C) += ..., pg (C) += the row's share of dg. */
typedef void (*norm_row_bwd)(float *dx, float *pg, const float *dy, const float *x, const float *g, float r, int C);

/* A norm's backward over T rows: each row by `row`, the gain's gradient (and the shift's, dy's sum,
** when db is not NULL) summed per block of RMS_BLOCK rows, then the blocks in order into dg (db). */
static void norm_backward(norm_row_bwd row, float *dx, float *dg, float *db, const float *dy, const float *x,
                          const float *g, const float *rstd, int T, int C)
{
    int nb = (T + RMS_BLOCK - 1) / RMS_BLOCK, k = db ? 2 : 1;
    float *part = lx_xcalloc((size_t)nb * (size_t)k * (size_t)C, sizeof *part);
#pragma omp parallel for schedule(static) if ((long)T * C > 65536)
    for (int blk = 0; blk < nb; blk++)
        for (int t = blk * RMS_BLOCK; t < T && t < (blk + 1) * RMS_BLOCK; t++) {
            float *pg = part + (long)blk * k * C;
            row(dx + (long)t * C, pg, dy + (long)t * C, x + (long)t * C, g, rstd[t], C);
            for (int c = 0; db && c < C; c++)
                pg[C + c] += dy[(long)t * C + c];
        }
    for (int blk = 0; blk < nb; blk++)
        for (int c = 0; c < k * C; c++)
            (c < C ? dg : db)[c % C] += part[(long)blk * k * C + c];
    free(part);
}

/* y_c = x_c r g_c, r = (mean x^2 + eps)^(-1/2), dr/dx_c = -r^3 x_c / C:
** dx_c = r g_c dy_c - r^3 x_c / C * sum_k dy_k g_k x_k */
static void rms_row_bwd(float *dx, float *pg, const float *dy, const float *x, const float *g, float r, int C)
{
    double dot = 0.0;
    for (int c = 0; c < C; c++) {
        dot += (double)dy[c] * g[c] * x[c];
        pg[c] += dy[c] * x[c] * r;
    }
    float k = (float)(dot * r * r * r / C);
    for (int c = 0; c < C; c++)
        dx[c] += r * g[c] * dy[c] - k * x[c];
}

void lx_rmsnorm_backward(float *dx, float *dg, const float *dy, const float *x, const float *g,
                         const float *rstd, int T, int C)
{
    norm_backward(rms_row_bwd, dx, dg, NULL, dy, x, g, rstd, T, C);
}

/* A row's mean, in double in index order: forward and backward sum the same way. */
static double row_mean(const float *x, int C)
{
    double s = 0.0;
    for (int c = 0; c < C; c++)
        s += x[c];
    return s / C;
}

void lx_layernorm_forward(float *y, float *rstd, const float *x, const float *g, const float *b, int T, int C,
                          float eps)
{
#pragma omp parallel for schedule(static) if ((long)T * C > 65536)
    for (int t = 0; t < T; t++) {
        const float *xt = x + (long)t * C;
        double mu = row_mean(xt, C), ss = 0.0;
        for (int c = 0; c < C; c++)
            ss += ((double)xt[c] - mu) * ((double)xt[c] - mu);
        double r = 1.0 / sqrt(ss / C + eps);
        rstd[t] = (float)r;
        for (int c = 0; c < C; c++)     /* in place: the row's sums are taken first */
            y[(long)t * C + c] = (float)(((double)xt[c] - mu) * r) * g[c] + (b ? b[c] : 0.0f);
    }
}

/* n_c = (x_c - mu) r, y_c = n_c g_c, e_c = dy_c g_c:
** dx_c = r (e_c - mean(e) - n_c mean(e n)),  dg_c += dy_c n_c */
static void ln_row_bwd(float *dx, float *pg, const float *dy, const float *x, const float *g, float rf, int C)
{
    double mu = row_mean(x, C), r = rf, se = 0.0, sen = 0.0;
    for (int c = 0; c < C; c++) {
        double n = ((double)x[c] - mu) * r, e = (double)dy[c] * g[c];
        se += e, sen += e * n;
        pg[c] += (float)(dy[c] * n);
    }
    se /= C, sen /= C;
    for (int c = 0; c < C; c++)
        dx[c] += (float)(r * ((double)dy[c] * g[c] - se - ((double)x[c] - mu) * r * sen));
}

void lx_layernorm_backward(float *dx, float *dg, float *db, const float *dy, const float *x, const float *g,
                           const float *rstd, int T, int C)
{
    norm_backward(ln_row_bwd, dx, dg, db, dy, x, g, rstd, T, C);
}

#define GELU_K 0.7978845608028654f   /* sqrt(2/pi) */

/* The tanh form 0.5·x·(1 + tanh(u)), u = sqrt(2/π)(x + 0.044715x³), written
** with the identity 0.5(1 + tanh(u)) = σ(2u) so one expf does the work:
**   gelu(x) = x·s,  gelu'(x) = s + 2x·s(1 − s)·u',  s = σ(2u). */
static inline float gelu_sig(float v)
{
    float u = GELU_K * (v + 0.044715f * v * v * v);
    return 1.0f / (1.0f + expf(-2.0f * u));
}

static inline float gelu_grad(float v, float sg)
{
    float du = GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
    return sg + 2.0f * v * sg * (1.0f - sg) * du;
}

void lx_gelu_forward(float *y, const float *x, int N)
{
    lx_gelu_forward_s(y, NULL, x, N);
}

/* Fast or bf16 numerics on an AVX-512 CPU: the sixteen-lane loops of this file. */
static int wide_lanes(void)
{
    return lx_numerics_get() != LX_NUMERICS_PORTABLE && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512dq");
}

/* Σ_v e^(x_v − mx) of a row of logits in fast and bf16 numerics on AVX-512:
** sixteen lanes of vexp.h (relative error about 2e-7 a term, the argument
** rounded to float; terms below e^-87 dropped, under 2^-125 each), summed in
** double. Returns where the lanes stopped; the caller adds the rest. */
__attribute__((target("avx512f,avx512dq,fma"))) static int exp_sum_row_avx512(const float *x, int V, float mx,
                                                                              double *z)
{
    __m512d s0 = _mm512_setzero_pd(), s1 = s0;
    __m512 m = _mm512_set1_ps(mx), p;
    __mmask16 keep;
    int v = 0;
    for (; v + 16 <= V; v += 16) {
        __m512 e = _mm512_sub_ps(_mm512_loadu_ps(x + v), m);
        LX_EXP512_LE0(e, p, keep, -87.0f);
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(p)));
        s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(p, 1)));
    }
    (void)keep;
    *z = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
    return v;
}

/* The same in eight AVX2 + FMA lanes (vexp.h's LX_EXP256_LE0), on a CPU without AVX-512. */
__attribute__((target("avx2,fma"))) static int exp_sum_row_fma8(const float *x, int V, float mx, double *z)
{
    __m256d s0 = _mm256_setzero_pd(), s1 = s0;
    __m256 m = _mm256_set1_ps(mx), p;
    int v = 0;
    for (; v + 8 <= V; v += 8) {
        __m256 e = _mm256_sub_ps(_mm256_loadu_ps(x + v), m);
        LX_EXP256_LE0(e, p, -87.0f);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(p)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(p, 1)));
    }
    double lane[4];
    _mm256_storeu_pd(lane, _mm256_add_pd(s0, s1));
    *z = (lane[0] + lane[1]) + (lane[2] + lane[3]);
    return v;
}

/* Fast or bf16 numerics on an AVX2 + FMA CPU without AVX-512: the cross-entropy's eight-lane sum. */
static int fma8_lanes(void)
{
    return lx_numerics_get() != LX_NUMERICS_PORTABLE && !wide_lanes() && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma");
}

int lx_crossentropy_forward(float *loss, float *probs, const float *logits, const int *targets, int T, int V)
{
    int first = T, wide = wide_lanes(), fma8 = fma8_lanes();
#pragma omp parallel for schedule(static) reduction(min : first) if ((long)T * V > 65536)
    for (int t = 0; t < T; t++) {
        const float *lt = logits + (long)t * V;
        float *pt = probs ? probs + (long)t * V : NULL;
        /* the max in sixteen lanes (exact: any order gives it), and whether any value is
        ** non-finite (|x| <= FLT_MAX fails for infinities and NaNs) */
        float mx = lt[0];
        int bad = 0;
#pragma omp simd reduction(max : mx) reduction(| : bad)
        for (int v = 0; v < V; v++) {
            mx = lt[v] > mx ? lt[v] : mx;
            bad |= !(fabsf(lt[v]) <= FLT_MAX);
        }
        if (bad && t < first)
            first = t;
        /* the sum of e^x: vexp.h's lanes in fast and bf16 numerics (16 on AVX-512, 8 on AVX2 + FMA), summed in
        ** double; libm's in portable numerics (and for a row that is not finite) */
        double z = 0.0;
        int v0 = bad ? 0 : wide ? exp_sum_row_avx512(lt, V, mx, &z) : fma8 ? exp_sum_row_fma8(lt, V, mx, &z) : 0;
        for (int v = v0; v < V; v++)
            z += exp((double)lt[v] - mx);
        for (int v = 0; probs && v < V; v++)
            pt[v] = (float)(exp((double)lt[v] - mx) / z);
        loss[t] = targets[t] < 0 ? 0.0f : (float)(log(z) + mx - lt[targets[t]]);
    }
    return first;
}

void lx_crossentropy_backward(float *dlogits, const float *probs, const int *targets, int T, int V, float scale)
{
#pragma omp parallel for schedule(static) if ((long)T * V > 65536)
    for (int t = 0; t < T; t++) {
        float *dt = dlogits + (long)t * V;
        if (targets[t] < 0) {
            memset(dt, 0, sizeof(float) * (size_t)V);
            continue;
        }
        for (int v = 0; v < V; v++)
            dt[v] = scale * probs[(long)t * V + v];
        dt[targets[t]] -= scale;
    }
}

/* SwiGLU and GeGLU in fast and bf16 numerics on an AVX-512 CPU: sixteen lanes, the
** sigmoid from e = e^-|a| (vexp.h, never above 1): 1/(1 + e) for a >= 0,
** e/(1 + e) below. Within a few ulps of the loops below, which use libm's expf
** and stay the reference and portable numerics' code (tests/test_model_ops.c). */
__attribute__((target("avx512f,avx512dq,fma"), always_inline)) static inline __m512 sigmoid16(__m512 a)
{
    __m512 e, one = _mm512_set1_ps(1.0f);
    __mmask16 keep;
    __m512 na = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(a));
    LX_EXP512_LE0(na, e, keep, -87.0f);
    (void)keep;
    __m512 r = _mm512_div_ps(one, _mm512_add_ps(one, e));
    return _mm512_mask_mul_ps(r, _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_LT_OQ), r, e);
}

/* GELU's tanh form in sixteen lanes, as gelu_blocks asks: forward (dy NULL)
** s = σ(2u) with 2u = 2·K·(x + 0.044715·x³) in gelu_sig's float steps, y = x·s;
** backward from the kept s, dx += dy·(s + 2x·s(1 − s)·u'), u' = K(1 + 3·0.044715·x²).
** The tail is left to the caller: returns where the lanes stopped. */
__attribute__((target("avx512f,avx512dq,fma"))) static int gelu_lanes_avx512(float *y, float *s, const float *x,
                                                                             const float *dy, float *dx, int n)
{
    const __m512 one = _mm512_set1_ps(1.0f), k = _mm512_set1_ps(GELU_K), c = _mm512_set1_ps(0.044715f);
    const __m512 two = _mm512_set1_ps(2.0f), c3 = _mm512_set1_ps(3.0f * 0.044715f);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i), v2 = _mm512_mul_ps(v, v);
        if (dy) {
            __m512 sg = _mm512_loadu_ps(s + i), du = _mm512_mul_ps(k, _mm512_fmadd_ps(c3, v2, one));
            __m512 t = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(two, v), sg), _mm512_sub_ps(one, sg));
            __m512 g = _mm512_fmadd_ps(t, du, sg);
            _mm512_storeu_ps(dx + i, _mm512_fmadd_ps(_mm512_loadu_ps(dy + i), g, _mm512_loadu_ps(dx + i)));
            continue;
        }
        __m512 u = _mm512_mul_ps(k, _mm512_add_ps(v, _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(c, v), v), v)));
        __m512 sg = sigmoid16(_mm512_mul_ps(two, u));
        _mm512_storeu_ps(y + i, _mm512_mul_ps(v, sg));
        if (s)
            _mm512_storeu_ps(s + i, sg);
    }
    return i;
}

/* Values a task of the GELU loops takes: whole sixteen-lane runs, and enough
** to pay for a task. */
#define GELU_BLOCK 4096

/* GELU's forward (dy NULL: y = x·s, and s kept if asked) or backward from a
** kept s (dx += dy·gelu'(x)) over blocks of GELU_BLOCK values: in fast and
** bf16 numerics on AVX-512 sixteen lanes at a time (gelu_lanes_avx512), the
** rest, and portable numerics, through gelu_sig and gelu_grad (libm's expf). */
static void gelu_blocks(float *y, float *s, const float *x, const float *dy, float *dx, int N)
{
    int wide = wide_lanes();
    int nb = (N + GELU_BLOCK - 1) / GELU_BLOCK;
#pragma omp parallel for schedule(static) if (N > 65536)
    for (int b = 0; b < nb; b++) {
        int lo = b * GELU_BLOCK, n = N - lo < GELU_BLOCK ? N - lo : GELU_BLOCK;
        int i = wide ? gelu_lanes_avx512(y ? y + lo : NULL, s ? s + lo : NULL, x + lo, dy ? dy + lo : NULL,
                                         dx ? dx + lo : NULL, n)
                     : 0;
        for (i += lo; dy && i < lo + n; i++)
            dx[i] += dy[i] * gelu_grad(x[i], s[i]);
        for (; !dy && i < lo + n; i++) {
            float sg = gelu_sig(x[i]);
            y[i] = x[i] * sg;
            if (s)
                s[i] = sg;
        }
    }
}

void lx_gelu_forward_s(float *y, float *s, const float *x, int N)
{
    gelu_blocks(y, s, x, NULL, NULL, N);
}

void lx_gelu_backward(float *dx, const float *dy, const float *x, int N)
{
#pragma omp parallel for schedule(static) if (N > 65536)
    for (int i = 0; i < N; i++)
        dx[i] += dy[i] * gelu_grad(x[i], gelu_sig(x[i]));
}

void lx_gelu_backward_s(float *dx, const float *dy, const float *x, const float *s, int N)
{
    gelu_blocks(NULL, (float *)s, x, dy, dx, N);
}

/* GELU's exact form: libm's erff and expf in every numerics (the MLP's activation is a small
** part of a pass beside its products). */
void lx_gelu_erf_forward_s(float *y, float *s, const float *x, int N)
{
#pragma omp parallel for schedule(static) if (N > 65536)
    for (int i = 0; i < N; i++) {
        float p = 0.5f * (1.0f + erff(x[i] * 0.70710678118654752f));
        y[i] = x[i] * p;
        if (s)
            s[i] = p;
    }
}

void lx_gelu_erf_backward_s(float *dx, const float *dy, const float *x, const float *s, int N)
{
    const float k = 0.39894228040143268f;     /* 1/sqrt(2π) */
#pragma omp parallel for schedule(static) if (N > 65536)
    for (int i = 0; i < N; i++)
        dx[i] += dy[i] * (s[i] + x[i] * k * expf(-0.5f * x[i] * x[i]));
}

/* Row t of SwiGLU's or (gelu) GeGLU's forward (dy NULL) or backward, sixteen
** values at a time: y = a·s·b with s = σ(a), or σ(2u) of GELU's tanh form
** (gelu_sig), and da = g·b·s·(1 + a(1 − s)·v), v = 1, or 2·du/da (gelu_grad);
** the tail, if any, is left to the caller: returns where the lanes stopped. */
__attribute__((target("avx512f,avx512dq,fma"))) static int glu_row_avx512(float *y, const float *a, const float *b,
                                                                          const float *dy, float *da, float *db,
                                                                          int F, int gelu)
{
    const __m512 one = _mm512_set1_ps(1.0f), k = _mm512_set1_ps(GELU_K), c = _mm512_set1_ps(0.044715f);
    const __m512 two = _mm512_set1_ps(2.0f), c3 = _mm512_set1_ps(3.0f * 0.044715f);
    int i = 0;
    for (; i + 16 <= F; i += 16) {
        __m512 va = _mm512_loadu_ps(a + i), vb = _mm512_loadu_ps(b + i), a2 = _mm512_mul_ps(va, va), arg = va;
        if (gelu)   /* 2u = 2·K·(a + 0.044715·a³), as gelu_sig's float steps */
            arg = _mm512_mul_ps(two, _mm512_mul_ps(k, _mm512_add_ps(va, _mm512_mul_ps(_mm512_mul_ps(c, a2), va))));
        __m512 s = sigmoid16(arg);
        if (!dy) {
            _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_mul_ps(va, s), vb));
            continue;
        }
        __m512 g = _mm512_loadu_ps(dy + i), gs = _mm512_mul_ps(g, s), v = one;
        if (gelu)
            v = _mm512_mul_ps(two, _mm512_mul_ps(k, _mm512_fmadd_ps(c3, a2, one)));
        __m512 t = _mm512_fmadd_ps(_mm512_mul_ps(va, _mm512_sub_ps(one, s)), v, one);
        _mm512_storeu_ps(da + i, _mm512_mul_ps(_mm512_mul_ps(gs, vb), t));
        _mm512_storeu_ps(db + i, _mm512_mul_ps(gs, va));
    }
    return i;
}

/* silu(x) = x·σ(x); silu'(x) = σ(x)·(1 + x·(1 − σ(x))) */
void lx_swiglu_forward(float *y, int ldy, const float *h, int N, int F)
{
    int wide = wide_lanes();
#pragma omp parallel for schedule(static) if ((long)N * F > 65536)
    for (long t = 0; t < N; t++) {
        const float *a = h + t * 2 * F, *b = a + F;
        int i = wide ? glu_row_avx512(y + t * ldy, a, b, NULL, NULL, NULL, F, 0) : 0;
        for (; i < F; i++) {
            float s = 1.0f / (1.0f + expf(-a[i]));
            y[t * ldy + i] = a[i] * s * b[i];   /* y may be h (ldy 2F): a[i] is read before it is written */
        }
    }
}

void lx_geglu_forward(float *y, int ldy, const float *h, int N, int F)
{
    int wide = wide_lanes();
#pragma omp parallel for schedule(static) if ((long)N * F > 65536)
    for (long t = 0; t < N; t++) {
        const float *a = h + t * 2 * F, *b = a + F;
        for (int i = wide ? glu_row_avx512(y + t * ldy, a, b, NULL, NULL, NULL, F, 1) : 0; i < F; i++)
            y[t * ldy + i] = a[i] * gelu_sig(a[i]) * b[i];     /* y may be h, as in lx_swiglu_forward */
    }
}

/* gelu(a)·b: d/da = gelu'(a)·b, d/db = gelu(a), GELU's tanh form as lx_gelu_backward. */
void lx_geglu_backward(float *dh, const float *dy, const float *h, int N, int F)
{
    int wide = wide_lanes();
#pragma omp parallel for schedule(static) if ((long)N * F > 65536)
    for (long t = 0; t < N; t++) {
        const float *a = h + t * 2 * F, *b = a + F;
        float *da = dh + t * 2 * F, *db = da + F;
        for (int i = wide ? glu_row_avx512(NULL, a, b, dy + t * F, da, db, F, 1) : 0; i < F; i++) {
            float sg = gelu_sig(a[i]), g = dy[t * F + i];
            da[i] = g * b[i] * gelu_grad(a[i], sg);
            db[i] = g * a[i] * sg;
        }
    }
}

void lx_swiglu_backward(float *dh, const float *dy, const float *h, int N, int F)
{
    int wide = wide_lanes();
#pragma omp parallel for schedule(static) if ((long)N * F > 65536)
    for (long t = 0; t < N; t++) {
        const float *a = h + t * 2 * F, *b = a + F;
        float *da = dh + t * 2 * F, *db = da + F;
        int i = wide ? glu_row_avx512(NULL, a, b, dy + t * F, da, db, F, 0) : 0;
        for (; i < F; i++) {
            float s = 1.0f / (1.0f + expf(-a[i]));
            float g = dy[t * F + i];
            da[i] = g * b[i] * s * (1.0f + a[i] * (1.0f - s));
            db[i] = g * a[i] * s;
        }
    }
}
