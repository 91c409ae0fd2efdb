/*
** tests/test_model_ops.c - suite `model` (shared with tests/test_model.c): the
** rotary positions (goldens, inverse and relative properties, the half
** layout's wide lanes against the interleaved pairs) and SwiGLU (its wide
** lanes against the libm loops, its gradients and values).
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/core/config.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/data/corpus.h"
#include "harness/engine/kernels/attention.h"
#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/model/model.h"
#include "harness/engine/kernels/ops.h"
#include "harness/engine/formats/safetensors.h"
#include "harness/sweep/grid.h"
#include "harness/sweep/plan.h"
#include "harness/core/rng.h"
#include "tests/model_fixture.h"

/* ---- model: rope ------------------------------------------------------------ */

/* docs/methods.md#rope golden: d = 4, base 10000, position 1, x = (1, 2, 3, 4). */
static void rope_golden(const char *stack, const double want[4])
{
    struct compiled sp;
    compile(&sp, stack, 4, 2, 1, 2);
    float qkv[2 * 12] = {0};       /* B = 1, T = 2, H = 1, D = 4: rows of q|k|v */
    double cs[2 * 2 * 2];
    for (int r = 0; r < 2; r++)
        for (int d = 0; d < 4; d++)
            qkv[r * 12 + d] = qkv[r * 12 + 4 + d] = qkv[r * 12 + 8 + d] = (float)(d + 1);
    lx_rope_table(cs, NULL, &sp.spec.rotary, 2);
    lx_rope_apply(qkv, &sp.spec.rotary, cs, NULL, 1, 2, 1, 1, 4, +1);
    for (int d = 0; d < 4; d++) {
        cr_expect(fabs(qkv[12 + d] - want[d]) <= 1e-6, "%s: q[%d] = %.7f, want %.6f", stack, d, qkv[12 + d], want[d]);
        cr_expect_eq(qkv[12 + 4 + d], qkv[12 + d], "k turns like q");
        cr_expect_eq(qkv[12 + 8 + d], (float)(d + 1), "v does not turn");
        cr_expect_eq(qkv[d], (float)(d + 1), "position 0 does not turn");
    }
    compiled_release(&sp);
}

Test(model, rope_golden_values)
{
    static const double inter[4] = {-1.142640, 1.922076, 2.959851, 4.029800};
    static const double half[4] = {-1.984111, 1.959901, 2.462378, 4.019800};
    rope_golden("{rope: {layout: interleaved}}", inter);
    rope_golden("{rope: {layout: half}}", half);
}

Test(model, rope_inverse_and_relative)
{
    enum { B = 2, T = 16, H = 2, D = 16, HD = H * D, N = B * T * 3 * HD };
    static const char *stacks[] = {"{rope: {layout: half}}", "{rope: {layout: interleaved, base: 100}}"};
    for (int s = 0; s < 2; s++) {
        struct compiled sp;
        compile(&sp, stacks[s], D, T, H, T);
        static float x[N], y[N];
        double cs[T * D];
        fill(x, N, 11, 1);
        memcpy(y, x, sizeof x);
        lx_rope_table(cs, NULL, &sp.spec.rotary, T);
        lx_rope_apply(y, &sp.spec.rotary, cs, NULL, B, T, H, H, D, +1);
        cr_expect_gt(max_diff(x, y, N), 0.5, "%s: the rotation changed nothing", stacks[s]);
        lx_rope_apply(y, &sp.spec.rotary, cs, NULL, B, T, H, H, D, -1);
        double d = max_diff(x, y, N);
        cr_expect_leq(d, 1e-6, "%s: +1 then -1 is off by %g", stacks[s], d);
        /* the same q and k at every position: q_i·k_j depends on i − j only */
        for (int t = 0; t < T; t++)
            for (int c = 0; c < 2 * HD; c++)
                y[(long)t * 3 * HD + c] = x[c];
        lx_rope_apply(y, &sp.spec.rotary, cs, NULL, 1, T, H, H, D, +1);
        double s52 = 0, s1310 = 0;
        for (int c = 0; c < D; c++) {
            s52 += (double)y[5 * 3 * HD + c] * y[2 * 3 * HD + HD + c];
            s1310 += (double)y[13 * 3 * HD + c] * y[10 * 3 * HD + HD + c];
        }
        cr_expect(fabs(s52 - s1310) <= 1e-5, "%s: q5.k2 = %.7f, q13.k10 = %.7f", stacks[s], s52, s1310);
        compiled_release(&sp);
    }
}

/* ---- model: SwiGLU ----------------------------------------------------------- */

enum { SN = 3, SF = 5 };

struct swi { float h[SN * 2 * SF], w[SN * SF]; };

static double swiglu_f(struct swi *a)
{
    float y[SN * SF];
    lx_swiglu_forward(y, SF, a->h, SN, SF);
    double s = 0;
    for (int i = 0; i < SN * SF; i++)
        s += (double)y[i] * a->w[i];
    return s;
}

/* SwiGLU's and GeGLU's sixteen-lane path (fast and bf16 numerics on an AVX-512 CPU) against the
** libm loops portable numerics run. Its sigmoid is within about 7e-7 relative (e^x's polynomial
** 2e-7, the reduction's and both versions' roundings), so y and db within r = 2e-6 of |y| and
** |db|, and da = g·b·s·(1 + a(1 − s)·v) (v = 1, or GeGLU's 2·du/da = 2K(1 + 3·0.044715·a²)), whose
** last factor can cancel, within r·|g·b·s|·(1 + 2|a|·v). GeGLU's argument 2u = 2K(a + 0.044715a³)
** is rounded in float on both sides in different orders, a few ulps of |2u| apart, which moves
** e^-|2u| by as many times |2u| relative: r = 2e-6 + 3e-7·|2u| (4e-6 seen at 2u = −27). Rows of
** 53 values: three full lanes and a scalar tail; planted a: 0, ±1e-3, ±30, ±90 (e^-|a|
** flushed), and near −1.2785 and −0.7518, where SwiGLU's and GeGLU's last factor crosses 0. On a
** CPU without AVX-512 both sides are the libm loops and agree exactly. */
static void glu_wide_lanes(int gelu)
{
    enum { N = 7, F = 53 };
    static float h[N * 2 * F], dy[N * F], y[2][N * F], dh[2][N * 2 * F];
    fill(h, N * 2 * F, 31, 4), fill(dy, N * F, 32, 1);
    const float planted[] = {0.0f, 1e-3f, -1e-3f, 30.0f, -30.0f, 90.0f, -90.0f, -1.2785f, -1.2784f, -0.7518f,
                             -0.7517f};
    for (int k = 0; k < 11; k++)
        h[(k % N) * 2 * F + 3 * k] = planted[k];
    enum lx_numerics was = lx_numerics_get();
    for (int k = 0; k < 2; k++) {
        lx_numerics_set(k ? LX_NUMERICS_FAST : LX_NUMERICS_PORTABLE);
        (gelu ? lx_geglu_forward : lx_swiglu_forward)(y[k], F, h, N, F);
        (gelu ? lx_geglu_backward : lx_swiglu_backward)(dh[k], dy, h, N, F);
    }
    lx_numerics_set(was);
    double worst = 0.0, K = sqrt(2.0 / 3.14159265358979323846);
    for (int t = 0; t < N; t++)
        for (int i = 0; i < F; i++) {
            double a = h[t * 2 * F + i], b = h[t * 2 * F + F + i], g = dy[t * F + i];
            double s = gelu ? 1.0 / (1.0 + exp(-2 * K * (a + 0.044715 * a * a * a))) : 1.0 / (1.0 + exp(-a));
            double v = gelu ? 2 * K * (1 + 3 * 0.044715 * a * a) : 1.0;
            double r = 2e-6 + (gelu ? 3e-7 * 2 * K * fabs(a + 0.044715 * a * a * a) : 0.0);
            double bound[3] = {r * fabs(y[0][t * F + i]), r * fabs(g * b * s) * (1 + 2 * fabs(a) * v),
                               r * fabs(dh[0][t * 2 * F + F + i])};
            double got[3] = {y[1][t * F + i], dh[1][t * 2 * F + i], dh[1][t * 2 * F + F + i]};
            double want[3] = {y[0][t * F + i], dh[0][t * 2 * F + i], dh[0][t * 2 * F + F + i]};
            for (int q = 0; q < 3; q++) {
                double d = fabs(got[q] - want[q]);
                cr_assert_leq(d, bound[q] + 1e-37, "%s[%d,%d] (a %g): %.9g vs %.9g", q ? q == 1 ? "da" : "db" : "y",
                              t, i, a, got[q], want[q]);
                worst = fmax(worst, d / (bound[q] + 1e-37));
            }
        }
    cr_log_info("%s wide lanes: worst difference at %.2f of its bound", gelu ? "geglu" : "swiglu", worst);
}

Test(model, swiglu_wide_lanes_near_the_libm_loops)
{
    glu_wide_lanes(0);
}

Test(model, geglu_wide_lanes_near_the_libm_loops)
{
    glu_wide_lanes(1);
}

/* GELU's sixteen-lane path (fast and bf16 numerics on AVX-512, the MLP of `mlp: gelu`) against
** the libm loops of portable numerics: s = σ(2u) and y = x·s within r = 2e-6 + 3e-7·|2u| relative
** (as GeGLU's above); dx += dy·g, g = s + 2x·s(1 − s)·u', from each side's kept s: g moves by
** |∂g/∂s| = |1 + 2x·u'(1 − 2s)| ≤ 1 + 2|x|u' times s's difference, plus a few roundings of its
** terms (2.4e-7 of their size) and the last add's (1.2e-7 of |dx|). 371 values: 23 full lanes
** and a tail of 3 (two blocks of the loop when N passes 4096, below); planted x as GeGLU's, where
** gelu' crosses 0 near −0.7518. On a CPU without AVX-512 both sides are the libm loops. */
static void gelu_wide_lanes(int N)
{
    float *x = malloc(sizeof(float) * N * 8);
    cr_assert_not_null(x);
    float *dy = x + N, *y[2] = {x + 2 * N, x + 3 * N}, *sg[2] = {x + 4 * N, x + 5 * N}, *dx[2] = {x + 6 * N, x + 7 * N};
    fill(x, N, 41, 4), fill(dy, N, 42, 1), fill(dx[0], N, 43, 1);
    memcpy(dx[1], dx[0], sizeof(float) * N);
    const float planted[] = {0.0f, 1e-3f, -1e-3f, 30.0f, -30.0f, 90.0f, -90.0f, -0.7518f, -0.7517f, -1e-30f};
    for (int k = 0; k < 10; k++)
        x[7 * k + 1] = planted[k];
    enum lx_numerics was = lx_numerics_get();
    for (int k = 0; k < 2; k++) {
        lx_numerics_set(k ? LX_NUMERICS_FAST : LX_NUMERICS_PORTABLE);
        lx_gelu_forward_s(y[k], sg[k], x, N);
        lx_gelu_backward_s(dx[k], dy, x, sg[k], N);
    }
    lx_numerics_set(was);
    double worst = 0.0, K = sqrt(2.0 / 3.14159265358979323846);
    for (int i = 0; i < N; i++) {
        double v = x[i], u2 = 2 * K * (v + 0.044715 * v * v * v), s = 1.0 / (1.0 + exp(-u2));
        double du = K * (1 + 3 * 0.044715 * v * v), r = 2e-6 + 3e-7 * fabs(u2);
        double terms = s + 2 * fabs(v) * s * (1 - s) * du;
        double bound[3] = {r * fabs(sg[0][i]), r * fabs(y[0][i]),
                           fabs(dy[i]) * (r * s * (1 + 2 * fabs(v) * du) + 2.4e-7 * terms) + 1.2e-7 * fabs(dx[0][i])};
        double d[3] = {fabs(sg[1][i] - sg[0][i]), fabs(y[1][i] - y[0][i]), fabs(dx[1][i] - dx[0][i])};
        for (int q = 0; q < 3; q++) {
            cr_assert_leq(d[q], bound[q] + 1e-37, "%s[%d] (x %g): %.9g vs %.9g", q ? q == 1 ? "y" : "dx" : "s", i, v,
                          q ? q == 1 ? y[1][i] : dx[1][i] : sg[1][i], q ? q == 1 ? y[0][i] : dx[0][i] : sg[0][i]);
            worst = fmax(worst, d[q] / (bound[q] + 1e-37));
        }
    }
    cr_log_info("gelu wide lanes, %d values: worst difference at %.2f of its bound", N, worst);
    free(x);
}

Test(model, gelu_wide_lanes_near_the_libm_loops)
{
    gelu_wide_lanes(371);
    gelu_wide_lanes(4096 + 371);
}

Test(model, swiglu_gradients_and_values)
{
    struct swi a;
    fill(a.h, SN * 2 * SF, 21, 2), fill(a.w, SN * SF, 22, 1);
    float dh[SN * 2 * SF];
    for (int i = 0; i < SN * 2 * SF; i++)
        dh[i] = NAN;    /* overwritten, not accumulated into */
    lx_swiglu_backward(dh, a.w, a.h, SN, SF);
    /* h = 1e-2 on O(1) inputs: truncation ~h²·|f'''|/6 ≈ 1e-5, float noise
    ** ~1e-7/h ≈ 1e-5; 2e-3 + 2e-3·|num| as in tests/test_ops.c. */
    for (int i = 0; i < SN * 2 * SF; i++) {
        float keep = a.h[i], e = 1e-2f;
        a.h[i] = keep + e;
        double up = swiglu_f(&a);
        a.h[i] = keep - e;
        double dn = swiglu_f(&a);
        a.h[i] = keep;
        double num = (up - dn) / (2 * e);
        cr_expect(fabs(num - dh[i]) <= 2e-3 + 2e-3 * fabs(num), "swiglu dh[%d]: analytic %g, numeric %g", i, dh[i],
                  num);
    }
    /* silu(1)·2 = 2/(1 + e^-1) = 1.4621172; silu(0)·5 = 0; a = −2, b = 1: −2σ(−2) = −0.2384058 */
    float h2[6] = {1, 0, -2, 2, 5, 1}, y2[3];
    lx_swiglu_forward(y2, 3, h2, 1, 3);
    cr_expect(fabsf(y2[0] - 1.4621172f) < 1e-6f && y2[1] == 0.0f && fabsf(y2[2] + 0.2384058f) < 1e-6f,
              "%.7f %.7f %.7f", y2[0], y2[1], y2[2]);
}

/* The rotary in the half layout (on an AVX-512 CPU eight pairs at a time in
** double) against the interleaved layout (element by element) on the same
** pairs laid out the other way: the same bits, forward and back, with
** partial rotary (P pairs not a multiple of eight, fewer than D/2: half
** pairs (k, k + P), interleaved (2k, 2k + 1), channels from 2P on unturned)
** and grouped heads. */
Test(model, rope_half_lanes_match_the_interleaved_pairs)
{
    enum { T = 5, H = 3, KV = 1, D = 64, W = (H + 2 * KV) * D };
    static const int pairs[] = {32, 29, 8, 3};
    for (int pi = 0; pi < 4; pi++)
        for (int sign = -1; sign <= 1; sign += 2) {
            struct lx_rotary r = {.n_pairs = pairs[pi], .layout = LX_ROPE_HALF, .base = 10000};
            for (int k = 0; k < r.n_pairs; k++)
                r.inv_freq[k] = pow(10000.0, -2.0 * k / D);
            double cs[T * 32 * 2];
            lx_rope_table(cs, NULL, &r, T);
            static float half[T * W], il[T * W], in[T * W];
            struct lx_rng g;
            lx_rng_init(&g, 11, (uint32_t)pi, LX_RNG_DATA);
            for (int i = 0; i < T * W; i++)
                in[i] = half[i] = (float)(lx_rng_uniform(&g) * 4 - 2);
            /* channels (k, k + P) of half at (2k, 2k + 1) of il: pair k of each layout; from 2P on, in place */
            int P = r.n_pairs;
            for (int row = 0; row < T; row++)
                for (int h = 0; h < H + 2 * KV; h++) {
                    const float *x = half + row * W + h * D;
                    for (int k = 0; k < P; k++)
                        il[row * W + h * D + 2 * k] = x[k], il[row * W + h * D + 2 * k + 1] = x[k + P];
                    for (int c = 2 * P; c < D; c++)
                        il[row * W + h * D + c] = x[c];
                }
            lx_rope_apply(half, &r, cs, NULL, 1, T, H, KV, D, sign);
            r.layout = LX_ROPE_INTERLEAVED;
            lx_rope_apply(il, &r, cs, NULL, 1, T, H, KV, D, sign);
            int moved = 0;
            for (int row = 0; row < T; row++)
                for (int h = 0; h < H + 2 * KV; h++) {
                    const float *x = half + row * W + h * D, *y = il + row * W + h * D, *x0 = in + row * W + h * D;
                    for (int k = 0; k < P; k++) {
                        cr_assert(!memcmp(&x[k], &y[2 * k], 4) && !memcmp(&x[k + P], &y[2 * k + 1], 4),
                                  "pairs %d sign %d row %d head %d pair %d: %.9g %.9g against %.9g %.9g", pairs[pi],
                                  sign, row, h, k, x[k], x[k + P], y[2 * k], y[2 * k + 1]);
                        moved += x[k] != x0[k];
                        cr_assert(h < H + KV || x[k] == x0[k], "v moved");   /* v is not turned */
                    }
                    for (int c = 2 * P; c < D; c++)
                        cr_assert(x[c] == x0[c] && y[c] == x0[c], "pairs %d: channel %d past the turned ones moved",
                                  pairs[pi], c);
                }
            cr_expect(moved > (T - 1) * (H + KV) * r.n_pairs / 2, "pairs %d: only %d values turned", pairs[pi], moved);
        }
}
