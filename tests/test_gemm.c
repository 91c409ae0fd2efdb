/*
** tests/test_gemm.c - the portable sgemm (harness/engine/kernels/gemm.c):
** each element is the fmaf chain over k the header promises, bit for bit, so
** row blocks, column blocks, thread counts and the two kernels agree; and it
** is a matrix product (against lx_gemm_naive within a tolerance).
*/
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/rng.h"
#include "harness/engine/kernels/blas.h"
#include "harness/engine/kernels/gemm.h"
#include "harness/engine/kernels/numerics.h"

/* One product's operands, stored with padded strides. */
struct prod {
    int M, N, K, ta, tb, lda, ldb, ldc;
    float alpha, beta;
    float *A, *B, *C0;  /* C0: C before the call (ldc stride) */
};

static float *randn(struct lx_rng *r, long n)
{
    float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (long i = 0; i < n; i++)
        x[i] = (float)lx_rng_normal(r);
    return x;
}

static void prod_init(struct prod *p, struct lx_rng *r, int M, int N, int K, int ta, int tb, float alpha, float beta)
{
    *p = (struct prod){M, N, K, ta, tb, 0, 0, 0, alpha, beta, NULL, NULL, NULL};
    p->lda = (ta ? M : K) + (int)(lx_rng_u32(r) % 3);
    p->ldb = (tb ? K : N) + (int)(lx_rng_u32(r) % 3);
    p->ldc = N + (int)(lx_rng_u32(r) % 3);
    p->A = randn(r, (long)(ta ? K : M) * p->lda);
    p->B = randn(r, (long)(tb ? N : K) * p->ldb);
    p->C0 = randn(r, (long)M * p->ldc);
}

static void prod_free(struct prod *p)
{
    free(p->A), free(p->B), free(p->C0);
}

static float *c_copy(const struct prod *p)
{
    float *c = malloc(sizeof(float) * (size_t)((long)p->M * p->ldc + 1));
    memcpy(c, p->C0, sizeof(float) * (size_t)((long)p->M * p->ldc));
    return c;
}

/* The contract, written independently: fmaf over k from 0, then
** alpha·sum + beta·C as two rounded operations. */
static float chain(const struct prod *p, int i, int j)
{
    float s = 0.0f;
    for (int k = 0; k < p->K; k++) {
        float a = p->ta ? p->A[(long)k * p->lda + i] : p->A[(long)i * p->lda + k];
        float b = p->tb ? p->B[(long)j * p->ldb + k] : p->B[(long)k * p->ldb + j];
        s = fmaf(a, b, s);
    }
    volatile float r = p->alpha * s;    /* volatile: no contraction with the add */
    return p->beta != 0.0f ? r + p->beta * p->C0[(long)i * p->ldc + j] : r;
}

/* Rows [i0, i0 + m) × columns [j0, j0 + n) of the product, computed on their
** own (A and B offset, C a view), into c. */
static void part(float *c, const struct prod *p, int i0, int m, int j0, int n,
                 void (*f)(float *, int, const float *, int, const float *, int, int, int, int, int, int, float,
                           float))
{
    const float *A = p->ta ? p->A + i0 : p->A + (long)i0 * p->lda;
    const float *B = p->tb ? p->B + (long)j0 * p->ldb : p->B + j0;
    f(c + (long)i0 * p->ldc + j0, p->ldc, A, p->lda, B, p->ldb, m, n, p->K, p->ta, p->tb, p->alpha, p->beta);
}

static int rnd(struct lx_rng *r, int lo, int hi)
{
    return lo + (int)(lx_rng_u32(r) % (uint32_t)(hi - lo + 1));
}

static int bits_eq(const float *x, const float *y, const struct prod *p, const char *what)
{
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->N; j++) {
            float a = x[(long)i * p->ldc + j], b = y[(long)i * p->ldc + j];
            if (memcmp(&a, &b, sizeof a)) {
                cr_log_error("%s: %dx%dx%d ta=%d tb=%d at (%d, %d): %.9g vs %.9g", what, p->M, p->N, p->K, p->ta,
                             p->tb, i, j, (double)a, (double)b);
                return 0;
            }
        }
    return 1;
}

/* Random shapes, odd sizes and past one block or one k slice, all four
** transpose pairs, padded strides, alpha and beta. */
static void each_shape(int n_cases, void (*check)(const struct prod *, struct lx_rng *))
{
    struct lx_rng r;
    lx_rng_init(&r, 25, 0, LX_RNG_INIT);
    static const float ab[][2] = {{1.0f, 0.0f}, {1.0f, 1.0f}, {0.37f, -1.5f}, {-2.0f, 0.0f}};
    for (int c = 0; c < n_cases; c++) {
        int big = c % 4 == 3;
        struct prod p;
        prod_init(&p, &r, rnd(&r, 1, big ? 300 : 40), rnd(&r, 1, big ? 450 : 40), rnd(&r, 0, big ? 600 : 70), c & 1,
                  (c >> 1) & 1, ab[c % 4][0], ab[c % 4][1]);
        check(&p, &r);
        prod_free(&p);
    }
}

static void check_chain(const struct prod *p, struct lx_rng *r)
{
    float *c = c_copy(p), *want = c_copy(p);
    lx_gemm_portable(c, p->ldc, p->A, p->lda, p->B, p->ldb, p->M, p->N, p->K, p->ta, p->tb, p->alpha, p->beta);
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->N; j++)
            want[(long)i * p->ldc + j] = chain(p, i, j);
    cr_expect(bits_eq(c, want, p, "fmaf chain"));
    free(c), free(want);
}

Test(gemm, every_element_is_the_fmaf_chain_over_k, .timeout = 60)
{
    each_shape(24, check_chain);
}

static void check_naive(const struct prod *p, struct lx_rng *r)
{
    float *c = c_copy(p), *want = c_copy(p);
    lx_gemm_portable(c, p->ldc, p->A, p->lda, p->B, p->ldb, p->M, p->N, p->K, p->ta, p->tb, p->alpha, p->beta);
    lx_gemm_naive(want, p->ldc, p->A, p->lda, p->B, p->ldb, p->M, p->N, p->K, p->ta, p->tb, p->alpha, p->beta);
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->N; j++) {
            float x = c[(long)i * p->ldc + j], y = want[(long)i * p->ldc + j];
            /* float sums of K terms of size ~1: error within ~K·2^-24·sqrt(K) */
            cr_expect(fabsf(x - y) <= 1e-5f * (float)(p->K + 1) + 1e-6f * fabsf(y), "(%d, %d) of %dx%dx%d: %g vs %g",
                      i, j, p->M, p->N, p->K, (double)x, (double)y);
        }
    /* C outside the M x N view (the stride's padding) is untouched */
    for (int i = 0; i < p->M; i++)
        for (int j = p->N; j < p->ldc; j++)
            cr_expect(c[(long)i * p->ldc + j] == p->C0[(long)i * p->ldc + j]);
    free(c), free(want);
}

Test(gemm, matches_the_naive_product, .timeout = 60)
{
    each_shape(32, check_naive);
}

/* Fast numerics' seam (OpenBLAS; one row by sgemv) is a matrix product too, a single row of A
** included, and with beta = 0 it does not read C: a NaN there stays out of the result. */
static void check_fast(const struct prod *p, struct lx_rng *r)
{
    float *c = c_copy(p), *want = c_copy(p);
    if (p->beta == 0.0f)
        for (long i = 0; i < (long)p->M * p->ldc; i++)
            c[i] = NAN;
    lx_gemm_naive(want, p->ldc, p->A, p->lda, p->B, p->ldb, p->M, p->N, p->K, p->ta, p->tb, p->alpha, p->beta);
    for (int i = 0; i < p->M; i++)  /* each row alone: M = 1 */
        lx_gemm(c + (long)i * p->ldc, p->ldc, p->ta ? p->A + i : p->A + (long)i * p->lda, p->lda, p->B, p->ldb, 1, p->N,
                p->K, p->ta, p->tb, p->alpha, p->beta);
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->N; j++) {
            float x = c[(long)i * p->ldc + j], y = want[(long)i * p->ldc + j];
            cr_expect(fabsf(x - y) <= 1e-5f * (float)(p->K + 1) + 1e-6f * fabsf(y), "row %d alone, (%d) of %dx%dx%d "
                      "(ta %d tb %d): %g vs %g", i, j, p->M, p->N, p->K, p->ta, p->tb, (double)x, (double)y);
        }
    free(c), free(want);
}

Test(gemm, fast_rows_alone_are_the_product, .timeout = 60)
{
    lx_numerics_set(LX_NUMERICS_FAST);
    each_shape(32, check_fast);
}

/* A row block, a column block and a single element, each computed on their
** own, are the bits of the whole product: in portable mode through the seam
** lx_gemm, the call every caller makes. */
static void check_blocks(const struct prod *p, struct lx_rng *r)
{
    float *whole = c_copy(p), *rows = c_copy(p), *cols = c_copy(p);
    part(whole, p, 0, p->M, 0, p->N, lx_gemm);
    for (int i0 = 0; i0 < p->M;) {
        int m = rnd(r, 1, p->M - i0);
        part(rows, p, i0, m, 0, p->N, lx_gemm);
        i0 += m;
    }
    for (int j0 = 0; j0 < p->N;) {
        int n = rnd(r, 1, p->N - j0);
        part(cols, p, 0, p->M, j0, n, lx_gemm);
        j0 += n;
    }
    cr_expect(bits_eq(rows, whole, p, "row blocks"));
    cr_expect(bits_eq(cols, whole, p, "column blocks"));
    free(whole), free(rows), free(cols);
}

Test(gemm, row_and_column_blocks_are_the_bits_of_the_whole, .timeout = 60)
{
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    each_shape(24, check_blocks);
}

static void check_threads(const struct prod *p, struct lx_rng *r)
{
    float *one = c_copy(p), *two = c_copy(p);
    omp_set_num_threads(1);
    part(one, p, 0, p->M, 0, p->N, lx_gemm);
    omp_set_num_threads(2);
    part(two, p, 0, p->M, 0, p->N, lx_gemm);
    cr_expect(bits_eq(one, two, p, "1 vs 2 threads"));
    free(one), free(two);
}

Test(gemm, one_and_two_threads_give_the_same_bits, .timeout = 60)
{
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    each_shape(16, check_threads);
}

static void check_plain(const struct prod *p, struct lx_rng *r)
{
    float *vec = c_copy(p), *plain = c_copy(p), *avx2 = c_copy(p);
    part(vec, p, 0, p->M, 0, p->N, lx_gemm_portable);
    part(plain, p, 0, p->M, 0, p->N, lx_gemm_portable_plain);
    part(avx2, p, 0, p->M, 0, p->N, lx_gemm_portable_avx2);
    cr_expect(bits_eq(vec, plain, p, "the CPU's widest kernel (AVX-512 where it has it) vs plain C"));
    cr_expect(bits_eq(avx2, plain, p, "AVX2 vs plain C"));
    free(vec), free(plain), free(avx2);
}

/* The plain, AVX2 and AVX-512 kernels (two row panels at a time, the last
** one alone when their count is odd) give the same bits. */
Test(gemm, the_plain_kernel_gives_the_bits_of_the_avx2_one, .timeout = 60)
{
    each_shape(12, check_plain);
    struct lx_rng r;
    lx_rng_init(&r, 28, 0, LX_RNG_INIT);
    for (int M = 1; M <= 26; M += 1)        /* 1 to 5 row panels, full and partial; K past one 256-value slice */
        for (int ta = 0; ta < 2; ta++) {
            struct prod p;
            prod_init(&p, &r, M, 1 + (M * 7) % 40, 1 + M % 5 * 130, ta, M % 2, M % 3 ? 1.0f : 0.5f,
                      M % 2 ? 0.0f : -0.75f);
            check_plain(&p, &r);
            prod_free(&p);
        }
}

/* lx_gemm_rows (the tiled attention's products): A read in place, B as
** panels, either Bᵀ packed by lx_gemm_pack_bt or a row-major B whose N is a
** whole number of panels; each element is the same fmaf chain as above, on the
** AVX2 kernel and the plain one, and with A given transposed (lx_gemm_rows_t,
** the backward's Pᵀ and dSᵀ). */
static void check_rows(const struct prod *p, struct lx_rng *r)
{
    float *c = c_copy(p), *plain = c_copy(p), *want = c_copy(p), *bt = NULL;
    const float *B = p->B;
    long ldb = p->ldb, ps = LX_GEMM_NR;
    if (p->tb) {
        bt = malloc(sizeof(float) * (lx_gemm_bt_floats(p->N, p->K) + 1));
        lx_gemm_pack_bt(bt, p->B, p->ldb, p->N, p->K);
        B = bt, ldb = LX_GEMM_NR, ps = (long)p->K * LX_GEMM_NR;
    }
    lx_gemm_rows(c, p->ldc, p->A, p->lda, B, ldb, ps, p->M, p->N, p->K, p->alpha, p->beta);
    lx_gemm_rows_plain(plain, p->ldc, p->A, p->lda, B, ldb, ps, p->M, p->N, p->K, p->alpha, p->beta);
    float *avx2 = c_copy(p), *tr = c_copy(p);
    lx_gemm_rows_avx2(avx2, p->ldc, p->A, p->lda, B, ldb, ps, p->M, p->N, p->K, p->alpha, p->beta);
    /* A given transposed (K × M, rows M + 3 apart), read in place by lx_gemm_rows_t */
    int ldt = p->M + 3;
    float *At = malloc(sizeof(float) * (size_t)(p->K > 0 ? p->K : 1) * ldt);
    for (int k = 0; k < p->K; k++)
        for (int i = 0; i < ldt; i++)
            At[(long)k * ldt + i] = i < p->M ? p->A[(long)i * p->lda + k] : NAN;     /* past M: never read */
    lx_gemm_rows_t(tr, p->ldc, At, ldt, B, ldb, ps, p->M, p->N, p->K, p->alpha, p->beta);
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->N; j++)
            want[(long)i * p->ldc + j] = chain(p, i, j);
    cr_expect(bits_eq(c, want, p, "rows (AVX-512 where the CPU has it): fmaf chain"));
    cr_expect(bits_eq(avx2, want, p, "rows, AVX2: fmaf chain"));
    cr_expect(bits_eq(plain, want, p, "rows, plain C: fmaf chain"));
    cr_expect(bits_eq(tr, want, p, "rows of a transposed A: fmaf chain"));
    free(c), free(plain), free(want), free(bt), free(avx2), free(tr), free(At);
}

Test(gemm, rows_and_panels_give_the_chain_over_k, .timeout = 60)
{
    struct lx_rng r;
    lx_rng_init(&r, 26, 0, LX_RNG_INIT);
    static const float ab[][2] = {{1.0f, 0.0f}, {1.0f, 1.0f}, {0.37f, -1.5f}, {0.125f, 0.0f}};
    for (int c = 0; c < 24; c++) {
        int tb = c & 1, big = c % 4 == 3;
        int N = tb ? rnd(&r, 1, big ? 300 : 40) : LX_GEMM_NR * rnd(&r, 1, big ? 18 : 3);
        struct prod p;
        prod_init(&p, &r, rnd(&r, 1, big ? 530 : 40), N, rnd(&r, 0, big ? 600 : 70), 0, tb, ab[c % 4][0],
                  ab[c % 4][1]);
        check_rows(&p, &r);
        prod_free(&p);
    }
}

/* Every row count from 1 to 26: the AVX-512 kernel takes 12 rows at a time
** while more than 6 are left (two tiles, the second partial from 7 to 11),
** the AVX2 one the last 6 or fewer; every partial column panel too. */
Test(gemm, rows_of_every_count_take_every_kernel_path)
{
    struct lx_rng r;
    lx_rng_init(&r, 27, 0, LX_RNG_INIT);
    for (int M = 1; M <= 26; M++)
        for (int tb = 0; tb < 2; tb++) {
            struct prod p;
            prod_init(&p, &r, M, tb ? 1 + M % 20 : LX_GEMM_NR * (1 + M % 2), 1 + M % 9 * 7, 0, tb,
                      M % 3 ? 1.0f : 0.5f, M % 2 ? 0.0f : -0.75f);
            check_rows(&p, &r);
            prod_free(&p);
        }
}

/* beta 0 never reads C: NaN there stays out of the result. */
Test(gemm, beta_zero_ignores_what_c_held)
{
    float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1}, C[4] = {NAN, NAN, NAN, NAN};
    lx_gemm_portable(C, 2, A, 3, B, 2, 2, 2, 3, 0, 0, 1.0f, 0.0f);
    /* [1 2 3; 4 5 6] · [1 0; 0 1; 1 1] = [4 5; 10 11] */
    cr_expect(C[0] == 4.0f && C[1] == 5.0f && C[2] == 10.0f && C[3] == 11.0f, "%g %g %g %g", (double)C[0],
              (double)C[1], (double)C[2], (double)C[3]);
}
