/*
** tests/test_half_products.c - the typed weight product (harness/engine/kernels/wprod.h) on fp32,
** bf16, f16 and quantized weights against its naive reference in each numerics; the dequantizing
** lanes (harness/core/half.c) against the block-by-block reference; a few rows' products (decoding)
** in 16 and 8 lanes, each row's bits independent of the rows beside it; the dots on quantized blocks
** (harness/engine/kernels/qdot.c) against the rows dequantized first. Split from tests/test_half.c.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/rng.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/qdot.h"
#include "harness/engine/kernels/wprod.h"
#include "tests/qblocks.h"

static void restore(void)
{
    lx_numerics_set(LX_NUMERICS_FAST);
    lx_wprod_qdot(1);
    lx_wprod_lanes(0);
    lx_half_lanes(0);
}

TestSuite(half_products, .fini = restore, .timeout = 120);

/* ---- the typed product ---------------------------------------------------------- */

/* y = x·Wᵀ for W in fp32, bf16 and f16 against the double-sum reference: in
** fast numerics each value within K·2^-23·Σ|x·w| (fp32 sums of exact
** products: K roundings of at most 2^-24 relative each, doubled for the
** BLAS's blocked order), in bf16 the same bound on the bf16-rounded operands. */
static void product_case(enum lx_numerics nm, int type, long M, long K, long N)
{
    lx_numerics_set(nm);
    struct lx_rng r;
    lx_rng_init(&r, 11, (uint32_t)(M * 31 + type), 0);
    float *x = lx_xmalloc(sizeof(float) * (size_t)(M * K)), *w = lx_xmalloc(sizeof(float) * (size_t)(N * K));
    uint16_t *h = lx_xmalloc(sizeof(uint16_t) * (size_t)(N * K));
    float *y = lx_xcalloc((size_t)(M * N), sizeof(float)), *ref = lx_xcalloc((size_t)(M * N), sizeof(float));
    for (long i = 0; i < M * K; i++)
        x[i] = (float)(lx_rng_uniform(&r) * 2 - 1);
    for (long i = 0; i < N * K; i++) {
        w[i] = (float)(lx_rng_uniform(&r) - 0.5);
        h[i] = type == LX_DT_BF16 ? lx_f32_to_bf16(w[i]) : 0;
    }
    if (type == LX_DT_F16)
        for (long i = 0; i < N * K; i++)        /* f16 patterns of exponents 8..14 (|w| in [2^-7, 1)), any sign */
            h[i] = (uint16_t)((lx_rng_uniform(&r) < 0.5 ? 0x8000 : 0) | (8 + (int)(lx_rng_uniform(&r) * 7)) << 10 |
                              (int)(lx_rng_uniform(&r) * 1024));
    struct lx_wmat W = {type == LX_DT_F32 ? (const void *)w : h, type, 0, NULL, 0};
    for (long i = 0; i < M * N; i++)
        y[i] = ref[i] = 0.5f;
    lx_wlinear(y, N, x, K, W, M, K, N, 1.0f);
    lx_wlinear_naive(ref, N, x, K, W, M, K, N, 1.0f);
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) {
            double mag = 0.5;
            float wj[1];
            for (long k = 0; k < K; k++) {
                lx_wmat_row(wj, (struct lx_wmat){(const char *)W.p + (size_t)(j * K + k) * lx_dtype_size(type), type, 0, NULL, 0},
                            0, 1);
                mag += fabs((double)x[i * K + k] * wj[0]);
            }
            double tol = (double)K * 0x1p-22 * mag;
            cr_assert(fabs((double)y[i * N + j] - ref[i * N + j]) <= tol, "%s type %d (%ld x %ld x %ld) [%ld,%ld]: "
                      "%.9g vs %.9g (tol %.3g)", lx_numerics_name(nm), type, M, K, N, i, j, y[i * N + j],
                      ref[i * N + j], tol);
        }
    free(x), free(w), free(h), free(y), free(ref);
}

/* The few-rows kernels this CPU runs: 16 lanes (AVX-512) and 8 (AVX2), or none (sgemm); returns
** how many, their lanes in out. */
static int few_rows_kernels(int out[2])
{
    int n = 0;
    for (int lanes = 16; lanes >= 8; lanes -= 8)
        if (lx_wprod_lanes(lanes) == lanes)
            out[n++] = lanes;
    lx_wprod_lanes(0);
    return n;
}

Test(half_products, typed_products_match_the_reference)
{
    const long shapes[][3] = {{1, 48, 40}, {3, 64, 300}, {20, 70, 33}, {37, 96, 513}, {600, 40, 24}};
    const enum lx_numerics modes[] = {LX_NUMERICS_FAST, LX_NUMERICS_PORTABLE, LX_NUMERICS_BF16};
    int lanes[2], n = few_rows_kernels(lanes);
    for (int k = 0; k < (n ? n : 1); k++) {
        lx_wprod_lanes(n ? lanes[k] : 0);
        for (int m = 0; m < 3; m++)
            for (int t = 0; t < 3; t++)
                for (int s = 0; s < 5; s++)
                    product_case(modes[m], t, shapes[s][0], shapes[s][1], shapes[s][2]);
    }
}

/* Every quantized type dequantized in lanes (lx_half_to_f32) gives the block-by-block reference's
** values bit for bit: 9 blocks of random bytes, their f16 scales finite (at the offsets of each
** format, tests/qblocks.h), so every bit pattern of the integers is met. AVX-512's 16 lanes cover
** every type but the IQ1-IQ3 and TQ ones, AVX2's 8 every type but TQ1_0 and TQ2_0 (scalar); both where the CPU runs
** both. A run that does not start at the first block (the widening of a row in parts) lands on the
** same values. */
static void quantized_lanes_case(int lanes)
{
    struct lx_rng r;
    lx_rng_init(&r, 17, 0, 0);
    for (int t = LX_DT_Q8_0; t < LX_DT_N; t++) {
        size_t bv = lx_dtype_block(t), nb = lx_dtype_block_bytes(t), n = 9 * bv;
        unsigned char *b = qblocks_random(t, 9, 1, 29, &r);
        float *fast = lx_xmalloc(sizeof(float) * n), *ref = lx_xmalloc(sizeof(float) * n);
        lx_half_to_f32(fast, b, t, n);
        lx_half_to_f32_scalar(ref, b, t, n);
        cr_expect_eq(memcmp(fast, ref, sizeof(float) * n), 0, "%s: the %d lanes differ from the reference",
                     lx_dtype_name(t), lanes);
        lx_half_to_f32(fast, b + 2 * nb, t, n - 2 * bv);
        cr_expect_eq(memcmp(fast, ref + 2 * bv, sizeof(float) * (n - 2 * bv)), 0, "%s: from block 2 on",
                     lx_dtype_name(t));
        free(b), free(fast), free(ref);
    }
}

Test(half_products, quantized_lanes_are_the_reference_bits)
{
    for (int lanes = 16; lanes >= 8; lanes -= 8)
        if (lx_half_lanes(lanes) == lanes)
            quantized_lanes_case(lanes);
    lx_half_lanes(0);
}

/* Fast numerics reads a few rows' half weights directly (wprod.c, dots_half_avx512 and
** dots_half_avx2): each row's sum in the same order however many rows share the pass, so a
** decoding step's one row is the same bits as that row in a short forward. K = 4117 takes every
** part of a row: 128 steps of 32 values, one of 16, 5 values alone (in 16 lanes and in 8); both
** kernels where the CPU runs both. */
static void rows_alone_case(int lanes)
{
    enum { M = 20, K = 4117, N = 37 };
    cr_assert_eq(lx_wprod_lanes(lanes), lanes);
    lx_numerics_set(LX_NUMERICS_FAST);
    struct lx_rng r;
    lx_rng_init(&r, 5, 0, 0);
    float *x = lx_xmalloc(sizeof(float) * M * K), *all = lx_xmalloc(sizeof(float) * M * N), one[N];
    uint16_t *h = lx_xmalloc(sizeof(uint16_t) * N * K);
    for (long i = 0; i < (long)M * K; i++)
        x[i] = (float)(lx_rng_uniform(&r) * 2 - 1);
    for (int type = LX_DT_BF16; type <= LX_DT_F16; type++) {
        for (long i = 0; i < (long)N * K; i++)
            h[i] = type == LX_DT_BF16 ? lx_f32_to_bf16((float)(lx_rng_uniform(&r) - 0.5))
                                      : lx_f32_to_f16((float)(lx_rng_uniform(&r) - 0.5));
        struct lx_wmat W = {h, type, 0, NULL, 0};
        lx_wlinear(all, N, x, K, W, M, K, N, 0.0f);
        for (long t = 0; t < M; t++) {
            lx_wlinear(one, N, x + t * K, K, W, 1, K, N, 0.0f);
            cr_assert_eq(memcmp(one, all + t * N, sizeof one), 0, "%d lanes, type %d row %ld alone differs",
                         lanes, type, t);
        }
    }
    free(x), free(all), free(h);
}

Test(half_products, a_few_rows_products_do_not_depend_on_the_rows_beside_them)
{
    int lanes[2], n = few_rows_kernels(lanes);
    if (!n)
        cr_skip_test("neither AVX-512 nor AVX2: a few rows go through sgemm, whose bits may depend on the rows");
    for (int k = 0; k < n; k++)
        rows_alone_case(lanes[k]);
}

/* Fast numerics multiplies a few rows by quantized weights row by row (each row dequantized into
** cache, then the half-weight dot products on it): against the naive product on the dequantized
** weights within the fp32 bound used above, and a row alone the same bits as among 20 others.
** Every type, 37 rows of 512 values (two super-blocks; scales near 2^-12, so |w| is about 1e-2
** or below). */
Test(half_products, quantized_few_rows_products)
{
    enum { M = 20, K = 512, N = 37 };
    lx_numerics_set(LX_NUMERICS_FAST);
    struct lx_rng r;
    lx_rng_init(&r, 23, 0, 0);
    float *x = lx_xmalloc(sizeof(float) * M * K), *all = lx_xmalloc(sizeof(float) * M * N), one[N],
          *ref = lx_xmalloc(sizeof(float) * M * N), w[K];
    for (long i = 0; i < (long)M * K; i++)
        x[i] = (float)(lx_rng_uniform(&r) * 2 - 1);
    for (int t = LX_DT_Q8_0; t < LX_DT_N; t++) {
        unsigned char *b = qblocks_random(t, N * K / lx_dtype_block(t), 2, 2, &r);
        struct lx_wmat W = {b, t, 0, NULL, 0};
        lx_wlinear(all, N, x, K, W, M, K, N, 0.0f);
        lx_wlinear_naive(ref, N, x, K, W, M, K, N, 0.0f);
        for (long o = 0; o < N; o++) {
            lx_wmat_row(w, W, o, K);
            for (long i = 0; i < M; i++) {
                double mag = qblocks_mag(x + i * K, w, w, K, 0.0);
                cr_assert(fabs((double)all[i * N + o] - ref[i * N + o]) <= K * 0x1p-22 * mag, "%s [%ld,%ld]: %.9g "
                          "vs %.9g", lx_dtype_name(t), i, o, all[i * N + o], ref[i * N + o]);
            }
        }
        if (lx_wprod_lanes(0))     /* else sgemm, whose bits may depend on the rows */
            for (long i = 0; i < M; i++) {
                lx_wlinear(one, N, x + i * K, K, W, 1, K, N, 0.0f);
                cr_assert_eq(memcmp(one, all + i * N, sizeof one), 0, "%s row %ld alone differs", lx_dtype_name(t), i);
            }
        free(b);
    }
    free(x), free(all), free(ref);
}

/* In 8 lanes (a CPU without AVX-512, or lx_wprod_lanes(8)) a few rows' dots read the blocks of Q8_0,
** Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K to Q6_K, IQ4_XS and the IQ1-IQ3 types directly, each weight as the dequantized
** row holds it, in the chains of the half weights' kernel: the same bits as dequantizing each row
** first (lx_wprod_qdot(0)), and a row alone the same bits as among 20. Q8_0's K = 784: 24 blocks and
** a half-step (16 values) at the end; the others' 768 (three super-blocks of 256). */
Test(half_products, quantized_dots_in_8_lanes_are_the_dequantized_rows)
{
    static const int types[] = {LX_DT_Q8_0,    LX_DT_Q4_0,   LX_DT_IQ4_NL,  LX_DT_Q4_K,    LX_DT_Q5_K,
                                LX_DT_Q6_K,    LX_DT_Q2_K,   LX_DT_Q3_K,    LX_DT_IQ4_XS,  LX_DT_IQ2_XXS,
                                LX_DT_IQ2_XS,  LX_DT_IQ2_S,  LX_DT_IQ3_XXS, LX_DT_IQ3_S,   LX_DT_IQ1_S,
                                LX_DT_IQ1_M,   LX_DT_Q4_1,   LX_DT_Q5_0,    LX_DT_Q5_1};
    if (lx_wprod_lanes(8) != 8)
        cr_skip_test("no AVX2: a few rows go through sgemm");
    enum { M = 20, KMAX = 784, N = 21 };
    lx_numerics_set(LX_NUMERICS_FAST);
    struct lx_rng r;
    lx_rng_init(&r, 31, 0, 0);
    float *x = lx_xmalloc(sizeof(float) * M * KMAX), fused[M * N], rows[M * N], one[N];
    for (long i = 0; i < (long)M * KMAX; i++)
        x[i] = (float)(lx_rng_uniform(&r) * 2 - 1);
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        const int t = types[k];
        const long K = t == LX_DT_Q8_0 ? KMAX : 768;
        /* Q8_0's last row ends half-way into a block whose scale it reads: the blocks rounded up */
        unsigned char *b = qblocks_random(t, (size_t)((N * K + (long)lx_dtype_block(t) - 1) / (long)lx_dtype_block(t)),
                                          2, 2, &r);
        struct lx_wmat W = {b, t, 0, NULL, 0};
        lx_wlinear(fused, N, x, K, W, M, K, N, 0.0f);
        lx_wprod_qdot(0);
        lx_wlinear(rows, N, x, K, W, M, K, N, 0.0f);
        lx_wprod_qdot(1);
        cr_assert_eq(memcmp(fused, rows, sizeof fused), 0, "%s: the blocks read directly differ from the dequantized rows",
                     lx_dtype_name(t));
        for (long i = 0; i < M; i++) {
            lx_wlinear(one, N, x + i * K, K, W, 1, K, N, 0.0f);
            cr_assert_eq(memcmp(one, fused + i * N, sizeof one), 0, "%s: row %ld alone differs", lx_dtype_name(t), i);
        }
        free(b);
    }
    lx_wprod_lanes(0);
    free(x);
}

/* Fast numerics' products of a few rows on quantized weights read the blocks directly (qdot.c),
** checked against the path that dequantizes each row first (lx_wprod_qdot(0)), every type:
** * all but Q4_K and Q5_K use each dequantized weight in the same two chains: the same bits.
** * Q4_K and Q5_K sum d·sc·(Σ q·x) − dmin·m·(Σ x) per sub-block of 32. Against the naive double
**   sum on the dequantized weights the difference is bounded by
**   (K/16 + 42)·u·Σ|x|·(|d·sc·q| + |dmin·m|), u = 2^-24: each lane's chain adds K/16 scaled
**   sub-block sums (each of 2 products) and the 16 lanes reduce in 4 steps; the mins' side adds
**   K/32 terms, each a sum of 32 values of x; one subtraction; the reference's own rounding of
**   w = fl(fl(d·sc·q) − dmin·m) is within u·(|d·sc·q| + |w|) ≤ 2u·(…). |dmin·m| is read as the
**   dequantized weight of the block with its q bits zeroed (exactly −dmin·m), and
**   |d·sc·q| ≤ |w| + |dmin·m| (first order).
** And a row alone is the same bits as among 20. K = 768: three super-blocks. */
Test(half_products, fused_quantized_dots)
{
    if (!lx_qdot_has(LX_DT_Q4_K))
        cr_skip_test("no AVX-512: the rows are dequantized first, as before");
    enum { M = 20, K = 768, N = 21 };
    lx_numerics_set(LX_NUMERICS_FAST);
    struct lx_rng r;
    lx_rng_init(&r, 29, 0, 0);
    float *x = lx_xmalloc(sizeof(float) * M * K), fused[M * N], rows[M * N], ref[M * N], one[N], w[K], w0[K];
    for (long i = 0; i < (long)M * K; i++)
        x[i] = (float)(lx_rng_uniform(&r) * 2 - 1);
    for (int t = LX_DT_Q8_0; t < LX_DT_N; t++) {
        size_t nb = N * K / lx_dtype_block(t), bytes = lx_dtype_block_bytes(t);
        size_t q0 = t == LX_DT_Q4_K || t == LX_DT_Q5_K ? 16 : 0;
        unsigned char *b = qblocks_random(t, nb, 2, 2, &r), *z = lx_xmalloc(nb * bytes);
        memcpy(z, b, nb * bytes);
        for (size_t k = 0; q0 && k < nb; k++)     /* Q4_K's q bits are bytes 16-143 of a block; Q5_K's 16-175 */
            memset(z + k * bytes + q0, 0, bytes - q0);
        struct lx_wmat W = {b, t, 0, NULL, 0}, Z = {z, t, 0, NULL, 0};
        lx_wlinear(fused, N, x, K, W, M, K, N, 0.0f);
        lx_wprod_qdot(0);
        lx_wlinear(rows, N, x, K, W, M, K, N, 0.0f);
        lx_wprod_qdot(1);
        lx_wlinear_naive(ref, N, x, K, W, M, K, N, 0.0f);
        int factored = lx_qdot_needs_sums(t), same = 0;
        for (long o = 0; o < N; o++) {
            lx_wmat_row(w, W, o, K);
            lx_wmat_row(w0, Z, o, K);
            for (long i = 0; i < M; i++) {
                double mag = qblocks_mag(x + i * K, w, w0, K, 2.0);
                double tol = (K / 16 + 42) * 0x1p-24 * mag, d = fabs((double)fused[i * N + o] - ref[i * N + o]);
                if (factored)
                    cr_assert(d <= tol, "%s [%ld,%ld]: %.9g vs %.9g (tol %.3g)", lx_dtype_name(t), i, o,
                              fused[i * N + o], ref[i * N + o], tol);
                same += fused[i * N + o] == rows[i * N + o];
            }
        }
        if (!factored)
            cr_expect_eq(same, M * N, "%s: %d of %d values the dequantize-first bits", lx_dtype_name(t), same, M * N);
        for (long i = 0; i < M; i++) {
            lx_wlinear(one, N, x + i * K, K, W, 1, K, N, 0.0f);
            cr_assert_eq(memcmp(one, fused + i * N, sizeof one), 0, "%s row %ld alone differs", lx_dtype_name(t), i);
        }
        for (long m = 2; m <= 4; m++) {     /* 2, 3 and 4 rows at once (20 = 8 + 8 + 4 above) */
            lx_wlinear(rows, N, x + 5 * K, K, W, m, K, N, 0.0f);
            cr_assert_eq(memcmp(rows, fused + 5 * N, sizeof(float) * (size_t)(m * N)), 0, "%s: %ld rows differ",
                         lx_dtype_name(t), m);
        }
        free(b), free(z);
    }
    free(x);
}

/* Portable numerics on bf16 weights gives the bits of the same weights as fp32. */
Test(half_products, portable_half_product_is_the_fp32_bits)
{
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    enum { M = 9, K = 77, N = 600 };
    static float x[M * K], w[N * K], a[M * N], b[M * N];
    static uint16_t h[N * K];
    for (int i = 0; i < M * K; i++)
        x[i] = sinf((float)i);
    for (int i = 0; i < N * K; i++) {
        h[i] = lx_f32_to_bf16(cosf((float)i * 0.37f));
        w[i] = lx_bf16_to_f32(h[i]);
    }
    lx_wlinear(a, N, x, K, (struct lx_wmat){w, LX_DT_F32, 0, NULL, 0}, M, K, N, 0.0f);
    lx_wlinear(b, N, x, K, (struct lx_wmat){h, LX_DT_BF16, 0, NULL, 0}, M, K, N, 0.0f);
    cr_assert_eq(memcmp(a, b, sizeof a), 0);
}

