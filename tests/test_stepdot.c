/*
** tests/test_stepdot.c - a decoding step's products with cached rows
** (harness/engine/kernels/stepdot.c) in sixteen lanes, in eight and in the
** reference, against sums in double of the same rows widened by the format's
** rule (lx_half_to_f32_scalar): every row count 1 … 9 (the kernels take four
** rows at a time, the rest padded), key ranges that do not start or end on a
** block of four, head dimensions the lanes take whole and ones they do not,
** rows further apart than D, and each cache type.
**
** Bound: a float sum of D products, each rounded, is within D·u·Σ|a·b| of the
** exact sum (u = 2^-24, any order); the widened half values are exact, so the
** same bound holds for half rows. The tests allow 2·D·u·Σ|a·b| + 1e-30.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/rng.h"
#include "harness/engine/kernels/stepdot.h"

enum { NT = 45, LD_PAD = 8 };

static float uniform(struct lx_rng *r)
{
    return (float)(lx_rng_u32(r) >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

/* n rows of D values at stride ld of type t (the floats in w are the values the row holds: rounded to t). */
static void *rows_of(float *w, int t, long n, int ld, struct lx_rng *r)
{
    size_t el = t == LX_DT_F32 ? 4 : 2;
    unsigned char *x = calloc((size_t)(n * ld), el);
    for (long i = 0; i < n * ld; i++)
        w[i] = uniform(r);
    if (t == LX_DT_F32)
        memcpy(x, w, sizeof(float) * (size_t)(n * ld));
    else {
        lx_f32_to_type(x, w, t, (size_t)(n * ld));
        lx_half_to_f32_scalar(w, x, t, (size_t)(n * ld));
    }
    return x;
}

static const int types[] = {LX_DT_F32, LX_DT_F16, LX_DT_BF16};
static const int lanes[] = {16, 8, 0};

/* Scores and values of M rows over keys [j0, j1) against double sums, at every width the CPU runs. */
static void check(int M, int D, int ld, long j0, long j1, int t)
{
    struct lx_rng r;
    lx_rng_init(&r, (uint64_t)(M * 1000 + D), (uint32_t)(t * 7 + ld), LX_RNG_INIT);
    float *kw = malloc(sizeof(float) * NT * ld), *vw = malloc(sizeof(float) * NT * ld);
    void *k = rows_of(kw, t, NT, ld, &r), *v = rows_of(vw, t, NT, ld, &r);
    float *q = malloc(sizeof(float) * M * D), *p = malloc(sizeof(float) * M * NT), *s = malloc(sizeof(float) * M * NT);
    float *o = malloc(sizeof(float) * M * D);
    for (int i = 0; i < M * D; i++)
        q[i] = uniform(&r);
    for (int i = 0; i < M * NT; i++)
        p[i] = 0.5f * (uniform(&r) + 1.0f);
    const float c = 0.125f;
    for (int w = 0; w < 3; w++) {
        lx_step_lanes(lanes[w]);
        int got = lx_step_width(D);
        cr_assert(lanes[w] ? got <= lanes[w] : got == 0, "width %d at most %d", got, lanes[w]);
        for (int i = 0; i < M * NT; i++)
            s[i] = NAN;     /* outside [j0, j1) must stay untouched */
        for (int i = 0; i < M * D; i++)
            o[i] = 1.0f;    /* the values' sums are added to o */
        lx_step_scores(s, NT, q, M, k, t, ld, j0, j1, D, c);
        lx_step_values(o, p, NT, M, v, t, ld, j0, j1, D);
        for (int m = 0; m < M; m++) {
            for (long j = 0; j < NT; j++) {
                if (j < j0 || j >= j1) {
                    cr_assert(isnan(s[m * NT + j]), "M %d D %d t %d lanes %d: score %d,%ld written", M, D, t, got, m,
                              j);
                    continue;
                }
                double e = 0.0, a = 0.0;
                for (int d = 0; d < D; d++)
                    e += (double)q[m * D + d] * kw[j * ld + d], a += fabs((double)q[m * D + d] * kw[j * ld + d]);
                double tol = c * (2.0 * D * 0x1p-24 * a) + 1e-30;
                cr_assert(fabs(s[m * NT + j] - c * e) <= tol, "M %d D %d ld %d t %d lanes %d j0 %ld: s[%d][%ld] = "
                          "%.9g, exact %.9g (tol %g)", M, D, ld, t, got, j0, m, j, s[m * NT + j], c * e, tol);
            }
            for (int d = 0; d < D; d++) {
                double e = 1.0, a = 1.0;
                for (long j = j0; j < j1; j++)
                    e += (double)p[m * NT + j] * vw[j * ld + d], a += fabs((double)p[m * NT + j] * vw[j * ld + d]);
                double tol = 2.0 * (double)(j1 - j0 + 1) * 0x1p-24 * a;
                cr_assert(fabs(o[m * D + d] - e) <= tol, "M %d D %d ld %d t %d lanes %d: o[%d][%d] = %.9g, exact %.9g",
                          M, D, ld, t, got, m, d, o[m * D + d], e);
            }
        }
    }
    lx_step_lanes(-1);
    free(kw), free(vw), free(k), free(v), free(q), free(p), free(s), free(o);
}

Test(stepdot, every_width_is_the_double_sum_within_its_rounding)
{
    static const int Ds[] = {8, 16, 24, 48, 64, 80, 128, 136, 256, 264};
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t di = 0; di < sizeof Ds / sizeof *Ds; di++)
            for (int M = 1; M <= 9; M++) {
                check(M, Ds[di], Ds[di], 0, NT, types[ti]);
                check(M, Ds[di], Ds[di] + LD_PAD, 3, NT - 2, types[ti]);    /* rows apart, ragged ends */
            }
}

Test(stepdot, widths_follow_the_cpu_and_the_dimension)
{
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
        avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    cr_expect_eq(lx_step_width(64), avx512 ? 16 : avx2 ? 8 : 0);
    cr_expect_eq(lx_step_width(24), avx2 ? 8 : 0, "24 is not a multiple of 16");
    cr_expect_eq(lx_step_width(12), 0, "nor of 8");
    cr_expect_eq(lx_step_width(264), 0, "past 256 the reference");
    lx_step_lanes(8);
    cr_expect_eq(lx_step_width(64), avx2 ? 8 : 0);
    lx_step_lanes(0);
    cr_expect_eq(lx_step_width(64), 0);
    lx_step_lanes(-1);
}
