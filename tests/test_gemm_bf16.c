/*
** tests/test_gemm_bf16.c - the bf16 products of the tiled attention
** (lx_gemm_rows_bf16, harness/engine/kernels/gemm.h): each element is the
** chain of fused multiply-adds over pairs the header defines (the arithmetic
** of AVX512-BF16's vdpbf16ps), written here again from the operands as
** floats, bit for bit on the kernel the CPU runs and on the plain one, through
** both packers, odd K and every row count; and it is a matrix product, within
** the bound of K rounded sums of exact products.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/rng.h"
#include "harness/engine/kernels/gemm.h"

/* One product: A (M × K) and op(B) (K × N) as bf16-exact floats, B stored as
** N rows of K (bt: the keys of Q·Kᵀ) or K rows of N (the values of P·V). */
struct prod {
    int M, N, K, bt, lda, ldc;
    float alpha, beta;
    float *A, *B, *C0;
    uint16_t *Ah, *Bp;      /* A as bf16 rows (lda), B packed */
    long pstride;
};

static float bf16_normal(struct lx_rng *r, double scale)
{
    return lx_round_bf16((float)(scale * lx_rng_normal(r)));
}

static float b_at(const struct prod *p, int k, int j)
{
    return p->bt ? p->B[(long)j * p->K + k] : p->B[(long)k * p->N + j];
}

static void prod_init(struct prod *p, struct lx_rng *r, int M, int N, int K, int bt, float alpha, float beta)
{
    *p = (struct prod){.M = M, .N = N, .K = K, .bt = bt, .alpha = alpha, .beta = beta};
    p->lda = K + 1 + (K + 1) % 2 + 2 * (int)(lx_rng_u32(r) % 2);     /* even, past K: an odd K reads A[K] */
    p->ldc = N + (int)(lx_rng_u32(r) % 3);
    p->A = malloc(sizeof(float) * (size_t)M * p->lda);
    p->Ah = malloc(sizeof(uint16_t) * (size_t)M * p->lda);
    for (long i = 0; i < (long)M * p->lda; i++) {
        p->A[i] = bf16_normal(r, 1.0);
        p->Ah[i] = i % p->lda < K ? lx_f32_to_bf16(p->A[i]) : 0x7fc0;   /* NaN past K: the kernels must ignore it */
    }
    p->B = malloc(sizeof(float) * (size_t)N * K + 1);
    for (long i = 0; i < (long)N * K; i++)
        p->B[i] = bf16_normal(r, 0.5);
    p->C0 = malloc(sizeof(float) * (size_t)M * p->ldc);
    for (long i = 0; i < (long)M * p->ldc; i++)
        p->C0[i] = (float)lx_rng_normal(r);
    if (bt) {
        p->Bp = malloc(sizeof(uint16_t) * lx_gemm_bt_floats(N, K));
        lx_gemm_bf16_pack_bt(p->Bp, p->B, K, N, K);
        p->pstride = (long)K * LX_GEMM_NR;
    } else {
        p->Bp = malloc(sizeof(uint16_t) * lx_gemm_bt_floats(K, N));
        lx_gemm_bf16_pack_b(p->Bp, p->B, N, K, N);
        p->pstride = (long)lx_gemm_bt_floats(K, LX_GEMM_NR);
    }
}

static void prod_free(struct prod *p)
{
    free(p->A), free(p->Ah), free(p->B), free(p->C0), free(p->Bp);
}

static float *c_copy(const struct prod *p)
{
    float *c = malloc(sizeof(float) * (size_t)p->M * p->ldc);
    memcpy(c, p->C0, sizeof(float) * (size_t)p->M * p->ldc);
    return c;
}

/* The definition, from the floats: per pair the odd product first, each step
** one fmaf (the inputs here are normal and so are the sums, so no flush). */
static float chain(const struct prod *p, int i, int j)
{
    float s = 0.0f;
    for (int k = 0; k < p->K; k += 2) {
        if (k + 1 < p->K)
            s = fmaf(p->A[(long)i * p->lda + k + 1], b_at(p, k + 1, j), s);
        else
            s = fmaf(0.0f, 0.0f, s);
        s = fmaf(p->A[(long)i * p->lda + k], b_at(p, k, j), s);
    }
    volatile float v = p->alpha * s;
    return p->beta != 0.0f ? v + p->beta * p->C0[(long)i * p->ldc + j] : v;
}

static int bits_eq(const float *x, const float *want, const struct prod *p, const char *what)
{
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->N; j++) {
            float a = x[(long)i * p->ldc + j], b = want[(long)i * p->ldc + j];
            if (memcmp(&a, &b, sizeof a)) {
                cr_log_error("%s: %dx%dx%d bt=%d at (%d, %d): %.9g, want %.9g", what, p->M, p->N, p->K, p->bt, i, j,
                             (double)a, (double)b);
                return 0;
            }
        }
    return 1;
}

/* On AMX the hardware rounds inside a step as it does: both it and the chain
** are within γ_K·Σ|a_k b_k| of the exact sum (γ_K = K·u/(1 − K·u), u =
** 2^-24, the products exact), so they differ by at most twice that times
** |alpha|, plus the epilogue's roundings of values that large (u each of
** alpha·sum and of the result), plus what flushing subnormal sums can move
** (under 2^-126 a step). */
static int within_amx_bound(const float *x, const float *want, const struct prod *p, const char *what)
{
    double u = ldexp(1.0, -24), g = p->K * u / (1 - p->K * u);
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->N; j++) {
            double a = 0.0;
            for (int k = 0; k < p->K; k++)
                a += fabs((double)p->A[(long)i * p->lda + k] * b_at(p, k, j));
            double bc = p->beta != 0.0f ? fabs((double)p->beta * p->C0[(long)i * p->ldc + j]) : 0.0;
            double al = fabs((double)p->alpha), tol = 2 * g * al * a + 4 * u * (al * a + bc) + al * p->K * 0x1p-125;
            double d = fabs((double)x[(long)i * p->ldc + j] - want[(long)i * p->ldc + j]);
            if (!(d <= tol)) {
                cr_log_error("%s: %dx%dx%d bt=%d at (%d, %d): %.9g, want %.9g within %.3g", what, p->M, p->N, p->K,
                             p->bt, i, j, (double)x[(long)i * p->ldc + j], (double)want[(long)i * p->ldc + j], tol);
                return 0;
            }
        }
    return 1;
}

/* x (the kernel the CPU runs, or AMX's) against the chains: bit for bit,
** except on AMX's hardware, within its bound. */
static int kernel_eq(const float *x, const float *want, const struct prod *p, int amx, const char *what)
{
    return amx ? within_amx_bound(x, want, p, what) : bits_eq(x, want, p, what);
}

/* AMX's path on emulated tiles gives the chains' bits on every CPU; on a CPU
** with AMX the hardware is within the bound. A (apair) as check gives it. */
static void check_amx(const struct prod *p, const float *want, const uint16_t *A, long lda, long apair,
                      const char *what)
{
    char msg[96];
    float *e = c_copy(p), *h = c_copy(p);
    cr_expect_eq(lx_gemm_rows_bf16_amx(e, p->ldc, A, lda, apair, p->Bp, p->pstride, p->M, p->N, p->K, p->alpha,
                                       p->beta, 1),
                 0);
    snprintf(msg, sizeof msg, "AMX emulated, %s", what);
    cr_expect(bits_eq(e, want, p, msg));
    int rc = lx_gemm_rows_bf16_amx(h, p->ldc, A, lda, apair, p->Bp, p->pstride, p->M, p->N, p->K, p->alpha, p->beta,
                                   0);
    snprintf(msg, sizeof msg, "AMX, %s", what);
    if (lx_gemm_amx_native()) {
        cr_expect_eq(rc, 0);
        cr_expect(within_amx_bound(h, want, p, msg));
    } else {    /* no AMX: refused, C untouched */
        cr_expect_eq(rc, -1);
        cr_expect(!memcmp(h, p->C0, sizeof(float) * (size_t)p->M * p->ldc), "%s written without AMX", msg);
    }
    free(e), free(h);
}

static void check(const struct prod *p)
{
    int amx = lx_gemm_amx_native();
    const char *cpu = amx ? "AMX" : lx_gemm_bf16_native() ? "AVX512-BF16" : "plain C (no AVX512-BF16 here)";
    float *c = c_copy(p), *plain = c_copy(p), *want = c_copy(p), *dp = c_copy(p);
    lx_gemm_rows_bf16(c, p->ldc, p->Ah, p->lda, 2, p->Bp, p->pstride, p->M, p->N, p->K, p->alpha, p->beta);
    lx_gemm_rows_bf16_plain(plain, p->ldc, p->Ah, p->lda, 2, p->Bp, p->pstride, p->M, p->N, p->K, p->alpha, p->beta);
    lx_gemm_rows_bf16_avx512(dp, p->ldc, p->Ah, p->lda, 2, p->Bp, p->pstride, p->M, p->N, p->K, p->alpha, p->beta);
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->N; j++)
            want[(long)i * p->ldc + j] = chain(p, i, j);
    cr_expect(bits_eq(plain, want, p, "plain C"));
    cr_expect(kernel_eq(c, want, p, amx, cpu));
    cr_expect(bits_eq(dp, want, p, lx_gemm_bf16_native() ? "AVX512-BF16" : "plain C (no AVX512-BF16 here)"));
    check_amx(p, want, p->Ah, p->lda, 2, "rows");
    /* the same A as pairs of columns (the backward's Pᵀ, dSᵀ): word (r, p) at 2r + p·apair; with K
    ** odd the last pair's upper half is a NaN that must be ignored */
    long np = (p->K + 1) / 2, apair = 2 * (long)(p->M + 1);
    uint16_t *Ap = malloc(sizeof(uint16_t) * (size_t)(np > 0 ? np : 1) * apair);
    for (long q = 0; q < np; q++)
        for (int r = 0; r <= p->M; r++) {
            uint16_t *w = Ap + q * apair + 2 * r;
            w[0] = r < p->M ? p->Ah[(long)r * p->lda + 2 * q] : 0x7fc0;
            w[1] = r < p->M && 2 * q + 1 < p->K ? p->Ah[(long)r * p->lda + 2 * q + 1] : 0x7fc0;
        }
    float *pc = c_copy(p), *pp = c_copy(p);
    lx_gemm_rows_bf16(pc, p->ldc, Ap, 2, apair, p->Bp, p->pstride, p->M, p->N, p->K, p->alpha, p->beta);
    lx_gemm_rows_bf16_plain(pp, p->ldc, Ap, 2, apair, p->Bp, p->pstride, p->M, p->N, p->K, p->alpha, p->beta);
    cr_expect(bits_eq(pp, want, p, "plain C, A in column pairs"));
    cr_expect(kernel_eq(pc, want, p, amx, "A in column pairs"));
    check_amx(p, want, Ap, 2, apair, "A in column pairs");
    free(c), free(plain), free(want), free(Ap), free(pc), free(pp), free(dp);
}

static int rnd(struct lx_rng *r, int lo, int hi)
{
    return lo + (int)(lx_rng_u32(r) % (uint32_t)(hi - lo + 1));
}

Test(gemm_bf16, every_element_is_the_chain_over_pairs, .timeout = 60)
{
    struct lx_rng r;
    lx_rng_init(&r, 41, 0, LX_RNG_INIT);
    static const float ab[][2] = {{1.0f, 0.0f}, {1.0f, 1.0f}, {0.37f, -1.5f}, {0.125f, 0.0f}};
    for (int c = 0; c < 24; c++) {
        int bt = c & 1, big = c % 4 == 3;
        int N = bt ? rnd(&r, 1, big ? 300 : 40) : LX_GEMM_NR * rnd(&r, 1, big ? 8 : 3);
        int K = bt ? 2 * rnd(&r, 0, big ? 128 : 40) : rnd(&r, 0, big ? 600 : 70);
        struct prod p;
        prod_init(&p, &r, rnd(&r, 1, big ? 300 : 40), N, K, bt, ab[c % 4][0], ab[c % 4][1]);
        check(&p);
        prod_free(&p);
    }
}

/* Every row count from 1 to 26 (12 rows a call on AVX512-BF16, the second
** tile partial from 7 to 11), odd and even K, partial column panels. */
Test(gemm_bf16, rows_of_every_count_and_odd_k)
{
    struct lx_rng r;
    lx_rng_init(&r, 42, 0, LX_RNG_INIT);
    for (int M = 1; M <= 26; M++)
        for (int bt = 0; bt < 2; bt++) {
            struct prod p;
            int K = bt ? 2 * (1 + M % 9) : 1 + M % 11 * 3;
            prod_init(&p, &r, M, bt ? 1 + M % 20 : LX_GEMM_NR * (1 + M % 2), K, bt, M % 3 ? 1.0f : 0.5f,
                      M % 2 ? 0.0f : -0.75f);
            check(&p);
            prod_free(&p);
        }
}

/* The shapes where AMX's path loads A and B where they lie: whole blocks of
** 32 rows, K a multiple of 32 (the tiled attention's Q·Kᵀ and P·V at its
** block sizes, a lone last panel, the backward's 128-row blocks), and their
** neighbours that take the copies. */
Test(gemm_bf16, tile_layout_shapes_of_the_attention, .timeout = 120)
{
    struct lx_rng r;
    lx_rng_init(&r, 44, 0, LX_RNG_INIT);
    static const int shapes[][4] = {
        {512, 256, 64, 1}, {512, 64, 256, 0}, {128, 128, 128, 1}, {128, 64, 128, 0}, {64, 48, 64, 1},
        {96, 80, 32, 0},   {32, 16, 32, 1},   {31, 32, 64, 1},    {33, 48, 96, 0},   {64, 32, 62, 1},
        {64, 32, 65, 0},   {32, 16, 1, 0},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        struct prod p;
        prod_init(&p, &r, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], i % 2 ? 0.125f : 1.0f,
                  i % 3 ? 0.0f : 1.0f);
        check(&p);
        prod_free(&p);
    }
}

/* A matrix product: within K·u·Σ|a||b| (u = 2^-24; the products are exact,
** each of the K sums rounds once, |error| <= γ_K Σ|a_k b_k|) of the product in
** double, on the kernel the CPU runs. */
Test(gemm_bf16, is_the_product_within_the_summation_bound)
{
    struct lx_rng r;
    lx_rng_init(&r, 43, 0, LX_RNG_INIT);
    struct prod p;
    prod_init(&p, &r, 37, 48, 257, 0, 1.0f, 0.0f);
    float *c = c_copy(&p);
    lx_gemm_rows_bf16(c, p.ldc, p.Ah, p.lda, 2, p.Bp, p.pstride, p.M, p.N, p.K, 1.0f, 0.0f);
    double u = ldexp(1.0, -24), g = p.K * u / (1 - p.K * u), worst = 0.0;
    for (int i = 0; i < p.M; i++)
        for (int j = 0; j < p.N; j++) {
            double s = 0.0, a = 0.0;
            for (int k = 0; k < p.K; k++) {
                s += (double)p.A[(long)i * p.lda + k] * b_at(&p, k, j);
                a += fabs((double)p.A[(long)i * p.lda + k] * b_at(&p, k, j));
            }
            double e = fabs(c[(long)i * p.ldc + j] - s) / (g * a);
            worst = e > worst ? e : worst;
        }
    cr_expect(worst <= 1.0, "error %.3g of the bound", worst);
    cr_expect(worst > 0.0, "no rounding at all: the test did not exercise the sums");
    free(c);
    prod_free(&p);
}

/* bf16 subnormal operands read as 0 (vdpbf16ps's DAZ) and a sum that lands
** in fp32's subnormal range is flushed to 0, on both kernels. */
Test(gemm_bf16, subnormal_operands_read_as_zero_and_sums_flush)
{
    uint16_t A[2 * 16] = {0}, B[2 * LX_GEMM_NR] = {0};
    float C[2 * LX_GEMM_NR], P[2 * LX_GEMM_NR];
    /* row 0: (1, subnormal) · (1, 1) = 1 (the subnormal is 0);
    ** row 1: (2^-70, 0) · (2^-70, 0): 2^-140 is an fp32 subnormal, flushed */
    A[0] = lx_f32_to_bf16(1.0f), A[1] = 0x0001;
    A[16] = lx_f32_to_bf16(ldexpf(1.0f, -70));
    for (int c = 0; c < LX_GEMM_NR; c++)
        B[2 * c] = c == 1 ? lx_f32_to_bf16(ldexpf(1.0f, -70)) : lx_f32_to_bf16(1.0f), B[2 * c + 1] = 0x3f80;
    lx_gemm_rows_bf16(C, LX_GEMM_NR, A, 16, 2, B, 2 * LX_GEMM_NR, 2, LX_GEMM_NR, 2, 1.0f, 0.0f);
    lx_gemm_rows_bf16_plain(P, LX_GEMM_NR, A, 16, 2, B, 2 * LX_GEMM_NR, 2, LX_GEMM_NR, 2, 1.0f, 0.0f);
    float E[2 * LX_GEMM_NR];    /* AMX's path, emulated tiles */
    cr_assert_eq(lx_gemm_rows_bf16_amx(E, LX_GEMM_NR, A, 16, 2, B, 2 * LX_GEMM_NR, 2, LX_GEMM_NR, 2, 1.0f, 0.0f, 1), 0);
    cr_expect(!memcmp(E, P, sizeof E), "emulated AMX tiles differ from the plain kernel");
    for (int k = 0; k < 2; k++) {
        const float *X = k ? P : C;
        cr_expect(X[0] == 1.0f, "%s: row 0 = %g, want 1", k ? "plain" : "kernel", (double)X[0]);
        cr_expect(X[LX_GEMM_NR + 1] == 0.0f && !signbit(X[LX_GEMM_NR + 1]), "%s: 2^-140 kept as %g",
                  k ? "plain" : "kernel", (double)X[LX_GEMM_NR + 1]);
        cr_expect(X[LX_GEMM_NR] == ldexpf(1.0f, -70), "%s: row 1, col 0 = %g", k ? "plain" : "kernel",
                  (double)X[LX_GEMM_NR]);
    }
}

/* Where the CPU has AMX, its tile products passed the self-check they run on
** first use (exact sums: the emulation's bits); elsewhere the status says why
** AMX is off. */
Test(gemm_bf16, amx_is_on_or_says_why_not)
{
    const char *s = lx_gemm_amx_status();
    cr_log_info("AMX: %s", s);
    cr_expect(strcmp(s, "off: failed its self-check"), "AMX's products disagree with their definition on this CPU");
    cr_expect_eq(lx_gemm_amx_native(), !strcmp(s, "on"));
    if (lx_gemm_amx_native()) {
        lx_gemm_amx_disable(1);
        cr_expect(!lx_gemm_amx_native() && !strcmp(lx_gemm_amx_status(), "off (turned off)"));
        lx_gemm_amx_disable(0);
    }
}

/* LENX_AMX=0 turns AMX off before it is probed (the AVX512-BF16 kernel runs). */
Test(gemm_bf16, lenx_amx_0_turns_it_off)
{
    setenv("LENX_AMX", "0", 1);
    cr_expect_str_eq(lx_gemm_amx_status(), "off (LENX_AMX=0)");
    cr_expect(!lx_gemm_amx_native());
}
