/*
** tests/test_ops.c - every backward op against central finite differences of
** its forward op, on a scalar loss L = sum(w ⊙ y) with random weights w.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <omp.h>
#include <string.h>

#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/ops.h"
#include "harness/core/rng.h"

static void fill(float *x, int n, uint32_t stream, float scale)
{
    struct lx_rng r;
    lx_rng_init(&r, 777, stream, LX_RNG_INIT);
    for (int i = 0; i < n; i++)
        x[i] = scale * (float)lx_rng_normal(&r);
}

static double dotw(const float *y, const float *w, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (double)y[i] * w[i];
    return s;
}

/* Compare an analytic gradient g (n) of f at x (n) with central differences. */
static void check_grad(const char *what, double (*f)(void *), void *ctx, float *x, const float *g, int n)
{
    const float h = 1e-2f;
    for (int i = 0; i < n; i++) {
        float keep = x[i];
        x[i] = keep + h;
        double up = f(ctx);
        x[i] = keep - h;
        double dn = f(ctx);
        x[i] = keep;
        double num = (up - dn) / (2 * h);
        cr_expect(fabs(num - g[i]) <= 2e-3 + 2e-3 * fabs(num), "%s[%d]: analytic %g, numeric %g", what, i, g[i], num);
    }
}

enum { T = 3, C = 5, OC = 4, V = 6 };

struct lin { float x[T * C], W[OC * C], b[OC], w[T * OC]; };

static double lin_f(void *p)
{
    struct lin *a = p;
    float y[T * OC];
    lx_linear_forward(y, a->x, a->W, a->b, T, C, OC);
    return dotw(y, a->w, T * OC);
}

Test(ops, linear_gradients)
{
    struct lin a;
    fill(a.x, T * C, 1, 1), fill(a.W, OC * C, 2, 1), fill(a.b, OC, 3, 1), fill(a.w, T * OC, 4, 1);
    float dx[T * C], dW[OC * C] = {0}, db[OC] = {0};
    for (int i = 0; i < T * C; i++)
        dx[i] = NAN;    /* overwritten, not accumulated into */
    lx_linear_backward(dx, dW, db, a.w, a.x, (struct lx_wmat){a.W, LX_DT_F32, 0, NULL, 0}, T, C, OC);
    check_grad("linear dx", lin_f, &a, a.x, dx, T * C);
    check_grad("linear dW", lin_f, &a, a.W, dW, OC * C);
    check_grad("linear db", lin_f, &a, a.b, db, OC);
}

struct rms { float x[T * C], g[C], w[T * C]; };

static double rms_f(void *p)
{
    struct rms *a = p;
    float y[T * C], r[T];
    lx_rmsnorm_forward(y, r, a->x, a->g, T, C, 1e-5f);
    return dotw(y, a->w, T * C);
}

Test(ops, rmsnorm_gradients_and_values)
{
    struct rms a;
    fill(a.x, T * C, 5, 1), fill(a.g, C, 6, 1), fill(a.w, T * C, 7, 1);
    float y[T * C], r[T], dx[T * C] = {0}, dg[C] = {0};
    lx_rmsnorm_forward(y, r, a.x, a.g, T, C, 1e-5f);
    lx_rmsnorm_backward(dx, dg, a.w, a.x, a.g, r, T, C);
    check_grad("rmsnorm dx", rms_f, &a, a.x, dx, T * C);
    check_grad("rmsnorm dg", rms_f, &a, a.g, dg, C);
    /* By hand: x = (3, 4), g = 1: rms = sqrt(12.5), y = (3, 4)/3.5355 */
    float x2[2] = {3, 4}, g2[2] = {1, 1}, y2[2], r2[1];
    lx_rmsnorm_forward(y2, r2, x2, g2, 1, 2, 0.0f);
    cr_expect(fabsf(y2[0] - 3.0f / sqrtf(12.5f)) < 1e-6f && fabsf(y2[1] - 4.0f / sqrtf(12.5f)) < 1e-6f);
}

static double ln_f(void *p)
{
    struct rms *a = p;
    float y[T * C], r[T];
    lx_layernorm_forward(y, r, a->x, a->g, NULL, T, C, 1e-5f);
    return dotw(y, a->w, T * C);
}

/* LayerNorm without a bias (MPT's): its backward against finite differences (dx accumulated into),
** and by hand: x = (1, 2, 3, 6), g = (1, 2, 1, 1): mean 3, variance (4 + 1 + 0 + 9)/4 = 3.5, so y =
** (-2, -2, 0, 3)/sqrt(3.5); in place (y = x) the same. */
Test(ops, layernorm_gradients_and_values)
{
    struct rms a;
    fill(a.x, T * C, 15, 1), fill(a.g, C, 16, 1), fill(a.w, T * C, 17, 1);
    for (int i = 0; i < T * C; i++)
        a.x[i] += 2.0f;     /* a mean away from 0: the backward's mean terms matter */
    float y[T * C], r[T], dx[T * C], dg[C] = {0};
    for (int i = 0; i < T * C; i++)
        dx[i] = 1.0f;
    lx_layernorm_forward(y, r, a.x, a.g, NULL, T, C, 1e-5f);
    lx_layernorm_backward(dx, dg, NULL, a.w, a.x, a.g, r, T, C);
    for (int i = 0; i < T * C; i++)
        dx[i] -= 1.0f;
    check_grad("layernorm dx", ln_f, &a, a.x, dx, T * C);
    check_grad("layernorm dg", ln_f, &a, a.g, dg, C);
    float x2[4] = {1, 2, 3, 6}, g2[4] = {1, 2, 1, 1}, y2[4], r2[1], want[4] = {-2, -2, 0, 3};
    lx_layernorm_forward(y2, r2, x2, g2, NULL, 1, 4, 0.0f);
    cr_expect(fabsf(r2[0] - 1.0f / sqrtf(3.5f)) < 1e-7f, "rstd %.9g", r2[0]);
    for (int i = 0; i < 4; i++)
        cr_expect(fabsf(y2[i] - want[i] / sqrtf(3.5f)) < 1e-6f, "y[%d] %.9g", i, y2[i]);
    lx_layernorm_forward(x2, r2, x2, g2, NULL, 1, 4, 0.0f);
    cr_expect(memcmp(x2, y2, sizeof y2) == 0, "in place differs");
}

struct lnb { float x[T * C], g[C], b[C], w[T * C]; };

static double lnb_f(void *p)
{
    struct lnb *a = p;
    float y[T * C], r[T];
    lx_layernorm_forward(y, r, a->x, a->g, a->b, T, C, 1e-5f);
    return dotw(y, a->w, T * C);
}

/* LayerNorm with its shift (GPT-NeoX's): every gradient, the shift's (dy summed over rows) included,
** against finite differences; the shift adds to every row. */
Test(ops, layernorm_shift_gradients_and_values)
{
    struct lnb a;
    fill(a.x, T * C, 20, 1), fill(a.g, C, 21, 1), fill(a.b, C, 22, 1), fill(a.w, T * C, 23, 1);
    float y[T * C], y0[T * C], r[T], dx[T * C] = {0}, dg[C] = {0}, db[C] = {0};
    lx_layernorm_forward(y, r, a.x, a.g, a.b, T, C, 1e-5f);
    lx_layernorm_backward(dx, dg, db, a.w, a.x, a.g, r, T, C);
    check_grad("layernorm+b dx", lnb_f, &a, a.x, dx, T * C);
    check_grad("layernorm+b dg", lnb_f, &a, a.g, dg, C);
    check_grad("layernorm+b db", lnb_f, &a, a.b, db, C);
    lx_layernorm_forward(y0, r, a.x, a.g, NULL, T, C, 1e-5f);
    for (int i = 0; i < T * C; i++)
        cr_expect_eq(y[i], y0[i] + a.b[i % C], "y[%d]", i);
}

struct gel { float x[T * C], w[T * C]; };

static double gelu_f(void *p)
{
    struct gel *a = p;
    float y[T * C];
    lx_gelu_forward(y, a->x, T * C);
    return dotw(y, a->w, T * C);
}

Test(ops, gelu_gradients_and_values)
{
    struct gel a;
    fill(a.x, T * C, 8, 2), fill(a.w, T * C, 9, 1);
    float dx[T * C] = {0};
    lx_gelu_backward(dx, a.w, a.x, T * C);
    check_grad("gelu dx", gelu_f, &a, a.x, dx, T * C);
    /* gelu(0) = 0; gelu(1) = 0.5 (1 + tanh(sqrt(2/pi) 1.044715)) = 0.841192 (tanh form) */
    float x2[2] = {0, 1}, y2[2];
    lx_gelu_forward(y2, x2, 2);
    cr_expect_eq(y2[0], 0.0f);
    cr_expect(fabsf(y2[1] - 0.8411920f) < 1e-6f, "%.7f", y2[1]);
}

static double gelu_erf_f(void *p)
{
    struct gel *a = p;
    float y[T * C];
    lx_gelu_erf_forward_s(y, NULL, a->x, T * C);
    return dotw(y, a->w, T * C);
}

/* GELU's exact form x·Φ(x): its backward from the kept Φ against finite differences, and values of
** the normal CDF: Φ(1) = 0.8413447461, Φ(-1) = 0.1586552539, Φ(2) = 0.9772498681, so gelu(1) =
** 0.8413447, gelu(-1) = -0.1586553, gelu(2) = 1.9544997 (the tanh form gives 0.8411920 at 1). */
Test(ops, gelu_erf_gradients_and_values)
{
    struct gel a;
    fill(a.x, T * C, 18, 2), fill(a.w, T * C, 19, 1);
    float dx[T * C] = {0}, y[T * C], phi[T * C];
    lx_gelu_erf_forward_s(y, phi, a.x, T * C);
    lx_gelu_erf_backward_s(dx, a.w, a.x, phi, T * C);
    check_grad("gelu_erf dx", gelu_erf_f, &a, a.x, dx, T * C);
    float x2[4] = {0, 1, -1, 2}, y2[4], want[4] = {0, 0.8413447461f, -0.1586552539f, 1.9544997361f};
    lx_gelu_erf_forward_s(y2, NULL, x2, 4);
    for (int i = 0; i < 4; i++)
        cr_expect(fabsf(y2[i] - want[i]) < 2e-7f, "gelu(%g) = %.9g", x2[i], y2[i]);
}

struct ce { float logits[T * V]; int targets[T]; };

static double ce_f(void *p)
{
    struct ce *a = p;
    float loss[T], probs[T * V];
    lx_crossentropy_forward(loss, probs, a->logits, a->targets, T, V);
    return (double)loss[0] + loss[1] + loss[2];
}

Test(ops, crossentropy_gradients_and_values)
{
    struct ce a = {.targets = {2, -1, 5}};
    fill(a.logits, T * V, 10, 1);
    float loss[T], probs[T * V], d[T * V];
    lx_crossentropy_forward(loss, probs, a.logits, a.targets, T, V);
    lx_crossentropy_backward(d, probs, a.targets, T, V, 1.0f);
    check_grad("crossentropy dlogits", ce_f, &a, a.logits, d, T * V);
    cr_expect_eq(loss[1], 0.0f);
    /* Uniform logits: loss = ln V. */
    float u[V] = {0}, l1[1], p1[V];
    int tg[1] = {3};
    lx_crossentropy_forward(l1, p1, u, tg, 1, V);
    cr_expect(fabsf(l1[0] - logf((float)V)) < 1e-6f);
    /* Without probs (evaluation reads losses only): the same losses, bit for bit. */
    float l2[T];
    cr_expect_eq(lx_crossentropy_forward(l2, NULL, a.logits, a.targets, T, V), T, "no row is non-finite");
    cr_expect_eq(memcmp(l2, loss, sizeof loss), 0, "losses without probs differ");
}

/* The cross-entropy names the first row holding a non-finite logit (the evaluation's check reads
** it instead of scanning the logits again): −inf (which leaves the loss finite), +inf, NaN. */
Test(ops, crossentropy_returns_the_first_row_with_a_non_finite_logit)
{
    enum { R = 40, W = 300 };   /* past the parallel threshold: 12,000 values */
    static float lg[R * W], l[R];
    static int tg[R];
    fill(lg, R * W, 11, 1);
    const float bad[3] = {-INFINITY, INFINITY, NAN};
    for (int k = 0; k < 3; k++) {
        fill(lg, R * W, 11, 1);
        lg[17 * W + 123] = bad[k], lg[33 * W + 5] = NAN;
        omp_set_num_threads(2);
        cr_expect_eq(lx_crossentropy_forward(l, NULL, lg, tg, R, W), 17, "%g", (double)bad[k]);
        omp_set_num_threads(1);
        cr_expect_eq(lx_crossentropy_forward(l, NULL, lg, tg, R, W), 17, "%g, one thread", (double)bad[k]);
    }
}

/* A vocabulary-wide row (Llama-3's 128,256): fast numerics (sixteen lanes of e^x on AVX-512, eight on AVX2,
** summed in double) within 1e-6 of the loss in long double — each term within about 2e-7
** relative, and the float argument x − max moves e^x by under 2^-24·|x − max| relative, so the
** sum and its log by a few 1e-7 — and portable numerics giving libm's double sum bit for bit. */
Test(ops, crossentropy_of_a_vocabulary_wide_row)
{
    enum { W = 128256 };
    static float lg[2 * W], l[2];
    int tg[2] = {77, 120000};
    fill(lg, 2 * W, 12, 3.0f);     /* logits of spread 3: e^x over about 30 octaves */
    for (int mode = 0; mode < 2; mode++) {
        lx_numerics_set(mode ? LX_NUMERICS_PORTABLE : LX_NUMERICS_FAST);
        cr_assert_eq(lx_crossentropy_forward(l, NULL, lg, tg, 2, W), 2);
        for (int t = 0; t < 2; t++) {
            const float *x = lg + (long)t * W;
            float mx = x[0];
            for (int v = 0; v < W; v++)
                mx = x[v] > mx ? x[v] : mx;
            long double zl = 0;
            double zd = 0;
            for (int v = 0; v < W; v++) {
                zl += expl((long double)x[v] - mx);
                zd += exp((double)x[v] - mx);
            }
            double want = (double)(logl(zl) + mx - x[tg[t]]);
            if (mode) {
                float lib = (float)(log(zd) + mx - x[tg[t]]);
                cr_expect(!memcmp(&l[t], &lib, sizeof lib), "portable row %d: %.9g, libm %.9g", t, (double)l[t],
                          (double)lib);
            }
            cr_expect(fabs(l[t] - want) < 1e-6, "%s row %d: %.9g, want %.9g", mode ? "portable" : "fast", t,
                      (double)l[t], want);
        }
    }
    lx_numerics_set(LX_NUMERICS_FAST);
}
