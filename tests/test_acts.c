/*
** tests/test_acts.c - `activations: llamacpp` (harness/engine/kernels/qdot8.h):
** x's 8-bit blocks worked by hand, the rounding's error bound on random rows,
** the integer dots of every quantized type against the rounded rows'
** products summed in double and, in both widths, against their own
** operations done in scalar, and the many-row and half-weight products.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/iquant.h"
#include "harness/core/rng.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/qdot8.h"
#include "harness/engine/kernels/wprod.h"
#include "tests/qblocks.h"

static void restore(void)
{
    lx_acts_llamacpp_set(0);
    lx_numerics_set(LX_NUMERICS_FAST);
}

/* Q8_0: scale max|x| / 127 held as f16, q = x · 127 / max|x| to the nearest, ties to even. */
Test(acts, q8_0_blocks_by_hand)
{
    float x[96] = {0}, r[96], d[3];
    int8_t q[96];
    x[0] = 127.0f, x[1] = -3.5f, x[2] = 2.5f, x[3] = 0.49f, x[4] = -127.0f, x[5] = 1.5f;   /* scale 1 */
    x[32] = 63.5f, x[33] = 1.25f, x[34] = 1.75f, x[35] = -0.25f;                           /* scale 0.5 */
    x[64] = 1.0f, x[65] = -0.5f;     /* 1/127 = 2^-7 · 1.00787…: f16 keeps 1032/1024 · 2^-7 */
    lx_act_q8(q, d, x, 96, LX_ACT_Q8_0);
    static const int8_t want0[6] = {127, -4, 2, 0, -127, 2}, want1[4] = {127, 2, 4, 0};
    cr_assert_eq(d[0], 1.0f);
    cr_assert_eq(d[1], 0.5f);
    cr_assert_eq(d[2], 0.00787353515625f);
    cr_assert_eq(memcmp(q, want0, 6), 0);
    cr_assert_eq(memcmp(q + 32, want1, 4), 0);
    cr_assert_eq(q[64], 127);
    cr_assert_eq(q[65], -64);    /* -0.5 · 127 = -63.5: ties to even */
    for (int i = 6; i < 32; i++)
        cr_assert_eq(q[i], 0);
    lx_act_round(r, 96, x, 96, 1, 96, LX_ACT_Q8_0);
    cr_assert_eq(r[1], -4.0f);
    cr_assert_eq(r[33], 1.0f);
    cr_assert_eq(r[34], 2.0f);
    cr_assert_eq(r[64], 0.99993896484375f);     /* 127 · 1032/1024 · 2^-7, exact in fp32 */
}

/* Q8_K: the value of largest magnitude m (the first of equals) takes q = -127, scale 1 / (-127 / m). */
Test(acts, q8_k_blocks_by_hand)
{
    float x[512] = {0}, d[2], r[512];
    int8_t q[512];
    x[0] = 1.0f, x[1] = -2.0f, x[2] = 2.0f, x[3] = 0.5f;      /* m = -2: s = 63.5 */
    x[256] = 2.0f, x[257] = -2.0f;                            /* m = 2: s = -63.5 */
    lx_act_q8(q, d, x, 512, LX_ACT_Q8_K);
    cr_assert_eq(q[0], 64, "63.5 ties to even");
    cr_assert_eq(q[1], -127);
    cr_assert_eq(q[2], 127);
    cr_assert_eq(q[3], 32, "31.75");
    cr_assert_eq(d[0], 1.0f / 63.5f);
    cr_assert_eq(q[256], -127);
    cr_assert_eq(q[257], 127);
    cr_assert_eq(d[1], -1.0f / 63.5f);
    lx_act_round(r, 512, x, 512, 1, 512, LX_ACT_Q8_K);
    cr_assert_eq(r[0], (1.0f / 63.5f) * 64.0f);
    cr_assert_eq(r[300], 0.0f);
    memset(x, 0, sizeof x);
    x[7] = NAN;
    lx_act_q8(q, d, x, 512, LX_ACT_Q8_K);
    cr_assert(isnan(d[0]), "a NaN block's scale is NaN");
    cr_assert_eq(d[1], 0.0f, "an all-zero block's scale is 0");
    for (int i = 0; i < 512; i++)
        cr_assert_eq(q[i], 0);
    x[7] = INFINITY;
    lx_act_round(r, 512, x, 512, 1, 512, LX_ACT_Q8_0);
    cr_assert(isnan(r[0]) && r[40] == 0.0f, "an infinity's block is NaN, the next block exact");
}

/* |x' - x| ≤ max|x| / 254 + 127 · max(max|x| / 127 · 2^-11, 2^-25) for Q8_0
** (half a step, and the f16 scale's rounding, relative 2^-11 or, below f16's
** normal range, 2^-25 absolute, times |q| ≤ 127), and max|x| · (1/254 + 2^-22)
** for Q8_K (fp32 scale, x' rounded once); f16 and bf16 values half an ulp. */
Test(acts, rounding_within_half_a_step, .fini = restore)
{
    enum { C = 1024 };
    struct lx_rng g;
    lx_rng_init(&g, 31, 0, 0);
    float *x = lx_xmalloc(sizeof(float) * C), *r = lx_xmalloc(sizeof(float) * C);
    for (int trial = 0; trial < 40; trial++) {
        double scale = pow(10.0, (trial % 9) - 4);
        for (int c = 0; c < C; c++)
            x[c] = (float)(lx_rng_normal(&g) * scale * (c % 97 == 0 ? 30 : 1));
        for (int fmt = LX_ACT_F16; fmt <= LX_ACT_Q8_K; fmt++) {
            lx_act_round(r, C, x, C, 1, C, fmt);
            int bs = fmt == LX_ACT_Q8_K ? 256 : 32;
            for (int c0 = 0; c0 < C; c0 += bs) {
                double amax = 0.0;
                for (int c = c0; c < c0 + bs; c++)
                    amax = fmax(amax, fabs(x[c]));
                for (int c = c0; c < c0 + bs; c++) {
                    if (fmt == LX_ACT_F16 && fabs(x[c]) >= 65520.0) {   /* past f16's largest value */
                        cr_assert(isinf(r[c]), "%.9g in f16: %.9g", x[c], r[c]);
                        continue;
                    }
                    double e = fabs((double)r[c] - x[c]);
                    double tol = fmt == LX_ACT_Q8_0   ? amax / 254 + 127 * fmax(amax / 127 * 0x1p-11, 0x1p-25)
                                 : fmt == LX_ACT_Q8_K ? amax * (1.0 / 254 + 0x1p-22)
                                 : fmt == LX_ACT_F16  ? fmax(fabs(x[c]) * 0x1p-11, 0x1p-25)
                                                      : fabs(x[c]) * 0x1p-8;
                    cr_assert(e <= tol, "format %d, value %d: %.9g rounded to %.9g (tol %.3g)", fmt, c, x[c], r[c],
                              tol);
                }
            }
        }
    }
    free(x), free(r);
}

/* The bytes of a block that hold its integers, and the fill that makes
** every unsigned code u of the integer dots 0 (w = b then; IQ4's code 0 is
** level -127 against b = -128 d). */
static void zero_codes(unsigned char *blk, int t)
{
    static const struct {
        int type, from, to, fill;
    } q[] = {{LX_DT_Q8_0, 2, 34, 0x80}, {LX_DT_Q4_0, 2, 18, 0},    {LX_DT_IQ4_NL, 2, 18, 0}, {LX_DT_Q4_1, 4, 20, 0},
             {LX_DT_Q5_0, 2, 22, 0},    {LX_DT_Q5_1, 4, 24, 0},    {LX_DT_Q4_K, 16, 144, 0}, {LX_DT_Q5_K, 16, 176, 0},
             {LX_DT_Q6_K, 0, 192, 0},   {LX_DT_Q2_K, 16, 80, 0},   {LX_DT_Q3_K, 0, 96, 0},   {LX_DT_IQ4_XS, 8, 136, 0}};
    for (size_t i = 0; i < sizeof q / sizeof *q; i++)
        if (q[i].type == t)
            memset(blk + q[i].from, q[i].fill, (size_t)(q[i].to - q[i].from));
}

/* Every quantized type, the integer dots (a few rows: a decoding step)
** against the rounded rows times the dequantized weights summed in double.
** Bound: per group of 4 values the int32 sum is exact; it is rounded times
** x's scale, then in the multiply-add with a (the K-quants, IQ4_XS and IQ1-IQ3, a =
** d·sc: Σ sc·Σ u·q exact per chunk of 256, rounded to float, times d·x's
** scale, itself rounded: three roundings and the reference's a = fl(d·sc) one
** more, for a chain K/256 shorter, within the constant below for K ≥ 256),
** then on a chain of at most
** 3K/256 terms per lane (two registers and the offsets per chunk), the 16
** lanes' and two chains' sum (5 more); the offsets' dx·Σq once; the
** reference's weight two roundings, its x' one. Each relative to
** S = Σ |x'|·(|a·u| + |b|) ≤ Σ |x'|·(|w| + 2|b|), |b| ≤ (128/127)·|w at u = 0|:
** |error| ≤ (3K/256 + 12)·2^-24·S. */
Test(acts, integer_dots_against_the_rounded_rows, .fini = restore)
{
    enum { M = 11, K = 768, N = 13 };
    if (!lx_qdot8_lanes(LX_DT_Q8_0, K, 16))
        cr_skip_test("no AVX2 or AVX-512 VNNI: the rounded rows take the fp32 dots (tested below)");
    lx_numerics_set(LX_NUMERICS_FAST);
    lx_acts_llamacpp_set(1);
    struct lx_rng g;
    lx_rng_init(&g, 37, 0, 0);
    float *x = lx_xmalloc(sizeof(float) * M * K), *xr = lx_xmalloc(sizeof(float) * M * K), y[M * N], ref[M * N],
          one[N], w[K], w0[K];
    for (long i = 0; i < (long)M * K; i++)
        x[i] = (float)(lx_rng_normal(&g) * pow(10.0, (double)(i / K % 5) - 2));
    x[7 * K + 300] = NAN;
    for (int t = LX_DT_Q8_0; t < LX_DT_N; t++) {
        if (!lx_qdot8_lanes(t, K, 16))  /* no 8-lane dots: the rounded rows' fp32 dots (tested below) */
            continue;
        size_t nb = N * K / lx_dtype_block(t), bytes = lx_dtype_block_bytes(t);
        unsigned char *b = qblocks_random(t, nb, 2, 2, &g), *z = lx_xmalloc(nb * bytes);
        memcpy(z, b, nb * bytes);
        for (size_t k = 0; k < nb; k++)
            zero_codes(z + k * bytes, t);
        struct lx_wmat W = {b, t, 0, NULL, 0}, Z = {z, t, 0, NULL, 0};
        lx_wlinear(y, N, x, K, W, M, K, N, 0.0f);
        lx_wlinear_naive(ref, N, x, K, W, M, K, N, 0.0f);
        lx_act_round(xr, K, x, K, M, K, lx_act_format(t));
        for (long o = 0; o < N; o++) {
            lx_wmat_row(w, W, o, K);
            lx_wmat_row(w0, Z, o, K);
            for (long i = 0; i < M; i++) {
                /* the codebook types have no offset b */
                double mag = qblocks_mag(xr + i * K, w, w0, K, t >= LX_DT_IQ2_XXS ? 0.0 : 2 * 128.0 / 127);
                double tol = (3 * K / 256 + 12) * 0x1p-24 * mag, d = fabs((double)y[i * N + o] - ref[i * N + o]);
                if (i == 7)
                    cr_assert(isnan(y[i * N + o]), "%s: a NaN in x gives NaN, got %g", lx_dtype_name(t), y[i * N + o]);
                else
                    cr_assert(d <= tol, "%s [%ld,%ld]: %.9g vs %.9g (tol %.3g)", lx_dtype_name(t), i, o, y[i * N + o],
                              ref[i * N + o], tol);
            }
        }
        for (long i = 0; i < M; i++) {      /* a row's bits do not depend on the rows beside it */
            lx_wlinear(one, N, x + i * K, K, W, 1, K, N, 0.0f);
            cr_assert_eq(memcmp(one, y + i * N, sizeof one), 0, "%s row %ld alone differs", lx_dtype_name(t), i);
        }
        free(b), free(z);
    }
    free(x), free(xr);
}

/* Many rows (scoring: no integer dots) and half weights, in fast and
** portable numerics: the rounded rows' products, within sgemm's bound
** (K + 8)·2^-24·Σ|x'||w| of the double sums; fp32 weights see x untouched. */
Test(acts, many_rows_and_half_weights_multiply_the_rounded_rows, .fini = restore)
{
    enum { M = 40, K = 512, N = 24 };
    static const int types[] = {LX_DT_F32, LX_DT_F16, LX_DT_BF16, LX_DT_Q8_0, LX_DT_Q4_K, LX_DT_Q6_K, LX_DT_IQ4_XS};
    struct lx_rng g;
    lx_rng_init(&g, 41, 0, 0);
    float *x = lx_xmalloc(sizeof(float) * M * K), *xr = lx_xmalloc(sizeof(float) * M * K), *wf = NULL, y[M * N],
          y0[M * N], ref[M * N], w[K];
    for (long i = 0; i < (long)M * K; i++)
        x[i] = (float)lx_rng_normal(&g);
    for (int nm = 0; nm < 2; nm++)
        for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
            int t = types[ti];
            lx_numerics_set(nm ? LX_NUMERICS_PORTABLE : LX_NUMERICS_FAST);
            void *b;
            if (t >= LX_DT_Q8_0)
                b = qblocks_random(t, N * K / lx_dtype_block(t), 2, 2, &g);
            else {
                wf = lx_xmalloc(sizeof(float) * N * K);
                for (long i = 0; i < (long)N * K; i++)
                    wf[i] = (float)lx_rng_normal(&g);
                b = lx_xmalloc(lx_dtype_bytes(t, (size_t)N * K));
                lx_f32_to_type(b, wf, t, (size_t)N * K);
                free(wf);
            }
            struct lx_wmat W = {b, t, 0, NULL, 0};
            for (int T = 1; T <= M; T += M - 1) {     /* a decoding step (half weights) and a forward's rows */
                lx_acts_llamacpp_set(1);
                lx_wlinear(y, N, x, K, W, T, K, N, 0.0f);
                lx_wlinear_naive(ref, N, x, K, W, T, K, N, 0.0f);
                lx_act_round(xr, K, x, K, T, K, lx_act_format(t));
                lx_acts_llamacpp_set(0);
                lx_wlinear(y0, N, x, K, W, T, K, N, 0.0f);
                if (t == LX_DT_F32)
                    cr_assert_eq(memcmp(y, y0, sizeof(float) * (size_t)(T * N)), 0, "fp32 weights: x untouched");
                for (long o = 0; o < N; o++) {
                    lx_wmat_row(w, W, o, K);
                    for (long i = 0; i < T; i++) {
                        double mag = qblocks_mag(xr + i * K, w, w, K, 0.0);
                        double d = fabs((double)y[i * N + o] - ref[i * N + o]), tol = (K + 8) * 0x1p-24 * mag;
                        if (T > 1 || t < LX_DT_Q8_0 || !lx_qdot8_lanes(t, K, 16))   /* else the integer dots, above */
                            cr_assert(d <= tol, "%s numerics %d T %d [%ld,%ld]: %.9g vs %.9g", lx_dtype_name(t), nm,
                                      T, i, o, y[i * N + o], ref[i * N + o]);
                    }
                }
            }
            free(b);
        }
    free(x), free(xr);
}

/* ---- the dots' arithmetic, lane by lane ---------------------------------- */

/* One chunk of 256 weights as qdot8.c's dots see it, read from the formats'
** definitions (qdot8.c reads them in lanes): codes u with w = a·u + b, a per
** 4 values (float, or for the K-quants an integer sc times d), b per 16. */
struct chunk_model {
    int u[256], sc[64];
    float a[64], b[16], d;
};

static float f16_at(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return lx_f16_to_f32(h);
}

/* Value l of a 32-value block's 16 nibble bytes q (low nibbles first), with h's bit l above it if five. */
static int nibble_code(const unsigned char *q, int l, int five, uint32_t h)
{
    return (l < 16 ? q[l] & 15 : q[l - 16] >> 4) | (five ? (int)(h >> l & 1) << 4 : 0);
}

static void chunk_model_w32(struct chunk_model *m, const unsigned char *p, int t)
{
    static const int8_t iq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    const int min = t == LX_DT_Q4_1 || t == LX_DT_Q5_1, five = t == LX_DT_Q5_0 || t == LX_DT_Q5_1;
    const size_t bytes = lx_dtype_block_bytes(t);
    for (int j = 0; j < 8; j++) {
        const unsigned char *blk = p + j * bytes, *q = blk + 2 + 2 * min + 4 * five;
        const float d = f16_at(blk);
        uint32_t h = 0;
        if (five)
            memcpy(&h, blk + 2 + 2 * min, 4);
        for (int l = 0; l < 32; l++)
            m->u[32 * j + l] = t == LX_DT_Q8_0     ? (int8_t)blk[2 + l] + 128
                               : t == LX_DT_IQ4_NL ? iq4[nibble_code(q, l, 0, 0)] + 128
                                                   : nibble_code(q, l, five, h);
        for (int l = 0; l < 8; l++)
            m->a[8 * j + l] = d;
        const float z = t == LX_DT_Q4_0 ? 8.0f : t == LX_DT_Q5_0 ? 16.0f : 128.0f;
        m->b[2 * j] = m->b[2 * j + 1] = min ? f16_at(blk + 2) : -z * d;
    }
}

/* Q2_K, Q3_K (value 128h + 32j + l: bits 2j, 2j + 1 of quant byte 32h + l; Q3_K's u 4 more where
** bit 4h + j of mask byte l is set) and IQ4_XS (sub-block j: nibbles as IQ4_NL's, scale d·(sc − 32)). */
static void chunk_model_k23x(struct chunk_model *m, const unsigned char *p, int t)
{
    static const int8_t iq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    if (t == LX_DT_IQ4_XS) {
        m->d = f16_at(p);
        for (int j = 0; j < 8; j++) {
            const int sc = ((p[4 + j / 2] >> (4 * (j % 2)) & 15) | ((p[2] | p[3] << 8) >> (2 * j) & 3) << 4) - 32;
            for (int l = 0; l < 32; l++)
                m->u[32 * j + l] = iq4[nibble_code(p + 8 + 16 * j, l, 0, 0)] + 128;
            for (int l = 0; l < 8; l++)
                m->sc[8 * j + l] = sc;
            m->b[2 * j] = m->b[2 * j + 1] = -128.0f * (m->d * (float)sc);
        }
        return;
    }
    const int three = t == LX_DT_Q3_K;
    const unsigned char *q = p + (three ? 32 : 16);
    m->d = f16_at(p + (three ? 108 : 80));
    for (int v = 0; v < 256; v++) {
        const int h = v / 128, j = v % 128 / 32, l = v % 32;
        m->u[v] = (q[32 * h + l] >> (2 * j) & 3) + (three ? 4 * (p[l] >> (4 * h + j) & 1) : 0);
    }
    for (int g = 0; g < 16; g++) {     /* Q3_K: 4 low bits from bytes 96-103, 2 high from 104-107; less 32 */
        const int sc = three ? ((g < 8 ? p[96 + g] & 15 : p[88 + g] >> 4) | (p[104 + g % 4] >> (2 * (g / 4)) & 3) << 4) - 32
                             : p[g] & 15;
        for (int l = 0; l < 4; l++)
            m->sc[4 * g + l] = sc;
        m->b[g] = three ? -4.0f * (m->d * (float)sc) : -f16_at(p + 82) * (float)(p[g] >> 4);
    }
}

/* The codebook types: value 8k + l of group k of sub-block j is u·(d·unit)·is, u the entry's level
** (the books as iqbooks.c packs them) with its sign bit, or IQ1's 8·level ± 1 (iqlanes.h); the
** group's is must give its s, the dequantized values' scale (tested against llama.cpp's). */
static void chunk_model_iq(struct chunk_model *m, const unsigned char *p, int t)
{
    static const struct {
        const uint16_t *book;
        const signed char *levels;
    } bk[] = {{lx_iq2xxs_book, lx_iq2xxs_book_levels}, {lx_iq2xs_book, lx_iq2xs_book_levels},
              {lx_iq2s_book, lx_iq2s_book_levels},     {lx_iq3xxs_book, lx_iq3xxs_book_levels},
              {lx_iq3s_book, lx_iq3s_book_levels},     {lx_iq1s_book, lx_iq1s_book_levels},
              {lx_iq1s_book, lx_iq1s_book_levels}};
    const int kind = t - LX_DT_IQ2_XXS, fam = lx_iq_family(kind);
    const float d = lx_iq_block_d(kind, p);
    m->d = d * lx_iq_unit(kind);
    for (int j = 0; j < 8; j++) {
        struct lx_iq_group g[4];
        lx_iq_decode(kind, g, p, d, j);
        for (int k = 0; k < 4; k++) {
            const float s = fam == LX_IQ_DELTA8 ? d * (float)g[k].is : d * (float)g[k].is * lx_iq_unit(kind);
            cr_assert(memcmp(&s, &g[k].s, sizeof s) == 0 || (isnan(s) && isnan(g[k].s)), "%s: is %d gives %g, not %g",
                      lx_dtype_name(t), g[k].is, s, g[k].s);
            for (int l = 0; l < 8; l++) {
                const int e = fam == LX_IQ_SIGNED4X2 && l >= 4 ? g[k].b : g[k].a,
                          code = fam == LX_IQ_SIGNED4X2 ? bk[kind].book[e] >> 3 * (l % 4) & 7
                                                        : bk[kind].book[e] >> 2 * l & 3,
                          level = bk[kind].levels[code];
                m->u[32 * j + 8 * k + l] = fam == LX_IQ_DELTA8 ? 8 * level + (g[k].delta < 0.0f ? -1 : 1)
                                                               : (g[k].signs >> l & 1 ? -level : level);
            }
        }
        for (int l = 0; l < 8; l++)
            m->sc[8 * j + l] = g[l < 4 ? 0 : 2].is;
    }
    memset(m->b, 0, sizeof m->b);
}

static void chunk_model_k(struct chunk_model *m, const unsigned char *p, int t)
{
    if (t >= LX_DT_IQ2_XXS) {
        chunk_model_iq(m, p, t);
        return;
    }
    if (t == LX_DT_Q2_K || t == LX_DT_Q3_K || t == LX_DT_IQ4_XS) {
        chunk_model_k23x(m, p, t);
        return;
    }
    if (t == LX_DT_Q6_K) {  /* value 128h + 32k + l: ql[64h + 32(k % 2) + l], high nibble for k ≥ 2; qh[32h + l] >> 2k */
        m->d = f16_at(p + 208);
        for (int v = 0; v < 256; v++) {
            const int h = v / 128, k = v % 128 / 32, l = v % 32, ql = p[64 * h + 32 * (k % 2) + l];
            m->u[v] = (k >= 2 ? ql >> 4 : ql & 15) | (p[128 + 32 * h + l] >> (2 * k) & 3) << 4;
        }
        for (int g = 0; g < 16; g++) {
            m->b[g] = -32.0f * (m->d * (float)(int8_t)p[192 + g]);
            for (int l = 0; l < 4; l++)
                m->sc[4 * g + l] = (int8_t)p[192 + g];
        }
        return;
    }
    const int five = t == LX_DT_Q5_K;   /* Q4_K, Q5_K: sub-block s the low (s even) or high nibbles of pair s / 2 */
    const unsigned char *k = p + 4;     /* the 6-bit scales and mins, as the format packs them in 12 bytes */
    m->d = f16_at(p);
    for (int s = 0; s < 8; s++) {
        for (int l = 0; l < 32; l++) {
            const int q = p[(five ? 48 : 16) + 32 * (s / 2) + l];
            m->u[32 * s + l] = (s % 2 ? q >> 4 : q & 15) | (five ? (p[16 + l] >> s & 1) << 4 : 0);
        }
        const int sc = s < 4 ? k[s] & 63 : (k[s + 4] & 15) | (k[s - 4] >> 6) << 4,
                  mn = s < 4 ? k[s + 4] & 63 : (k[s + 4] >> 4) | (k[s] >> 6) << 4;
        for (int l = 0; l < 8; l++)
            m->sc[8 * s + l] = sc;
        m->b[2 * s] = m->b[2 * s + 1] = 0.0f - f16_at(p + 2) * (float)mn;
    }
}

/* dot8_n's operations for one row in scalar: per lane L of 16 (4 values of
** each of the chunk's four registers), two chains, then the 16 lanes summed as
** GCC's _mm512_reduce_add_ps sums them. */
static float dot_model(const int8_t *q, const float *xl, const float *xg, const unsigned char *w, int t, long C)
{
    const int ints = lx_act_format(t) == LX_ACT_Q8_K;
    float s0[16] = {0}, s1[16] = {0}, x[16], t3[8], t6[4];
    struct chunk_model m;
    for (long k = 0; k < C; k += 256, w += lx_dtype_block_bytes(t) * (256 / lx_dtype_block(t))) {
        (ints ? chunk_model_k : chunk_model_w32)(&m, w, t);
        for (int L = 0; L < 16; L++) {
            int acc = 0;
            for (int r = 0; r < 4; r++) {
                int i = 0;
                for (int j = 0; j < 4; j++)
                    i += m.u[64 * r + 4 * L + j] * q[k + 64 * r + 4 * L + j];
                if (ints) {
                    acc += i * m.sc[16 * r + L];
                    continue;
                }
                const float v = (float)i * xl[k / 4 + 16 * r + L];
                if (r % 2)
                    s1[L] = fmaf(v, m.a[16 * r + L], s1[L]);
                else
                    s0[L] = fmaf(v, m.a[16 * r + L], s0[L]);
            }
            if (ints)
                s0[L] = fmaf((float)acc, m.d * xl[k / 4], s0[L]);
            s1[L] = fmaf(m.b[L], xg[k / 16 + L], s1[L]);
        }
    }
    for (int L = 0; L < 16; L++)
        x[L] = s0[L] + s1[L];
    for (int i = 0; i < 8; i++)
        t3[i] = x[8 + i] + x[i];
    for (int i = 0; i < 4; i++)
        t6[i] = t3[4 + i] + t3[i];
    return (t6[0] + t6[2]) + (t6[1] + t6[3]);
}

/* The integer dots in either width (8 lanes forced on an AVX-512 CPU too)
** give the bits of their operations done one by one in scalar, on random
** blocks and on the extremes: codes of -128 and 127 (Q8_0) against q of ±127. */
Test(acts, integer_dots_are_their_operations_lane_by_lane, .fini = restore)
{
    static const int types[] = {LX_DT_Q8_0,   LX_DT_Q4_0,   LX_DT_IQ4_NL,  LX_DT_Q4_1,    LX_DT_Q5_0,  LX_DT_Q5_1,
                                LX_DT_Q4_K,   LX_DT_Q5_K,   LX_DT_Q6_K,    LX_DT_Q2_K,    LX_DT_Q3_K,  LX_DT_IQ4_XS,
                                LX_DT_IQ2_XXS, LX_DT_IQ2_XS, LX_DT_IQ2_S, LX_DT_IQ3_XXS, LX_DT_IQ3_S, LX_DT_IQ1_S,
                                LX_DT_IQ1_M};
    enum { M = 3, K = 512, N = 5 };
    struct lx_rng g;
    lx_rng_init(&g, 43, 0, 0);
    float x[M * K], y[M * N], xl[M * K / 4], xg[M * K / 16];
    int8_t q[M * K];
    int32_t q4[M * K / 4];
    for (long i = 0; i < (long)M * K; i++)
        x[i] = i < K ? (i % 3 ? 1.0f : -1.0f) : (float)lx_rng_normal(&g);    /* row 0: every q ±127 */
    lx_numerics_set(LX_NUMERICS_FAST);
    lx_acts_llamacpp_set(1);
    int tried = 0;
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        const int t = types[ti];
        const size_t row = K / lx_dtype_block(t) * lx_dtype_block_bytes(t);
        unsigned char *w = qblocks_random(t, N * K / lx_dtype_block(t), 2, 2, &g);
        for (size_t k = 0; t == LX_DT_Q8_0 && k < 2 * K / 32; k++)    /* rows 0 and 1: every code -128, then 127 */
            memset(w + k * 34 + 2, k < K / 32 ? 0x80 : 0x7f, 32);
        lx_qdot8_prep(q, xl, xg, q4, x, K, M, K, t);
        for (int lanes = 8; lanes <= 16; lanes += 8) {
            if (lx_wprod_lanes(lanes) != lanes || lx_qdot8_lanes(t, K, lanes) != lanes)
                continue;
            tried++;
            lx_wlinear(y, N, x, K, (struct lx_wmat){w, t, 0, NULL, 0}, M, K, N, 0.0f);
            for (long i = 0; i < M; i++)
                for (long o = 0; o < N; o++) {
                    float ref = dot_model(q + i * K, xl + i * K / 4, xg + i * K / 16, w + o * row, t, K);
                    cr_assert(memcmp(&ref, y + i * N + o, sizeof ref) == 0, "%s, %d lanes, [%ld,%ld]: %.9g, not %.9g",
                              lx_dtype_name(t), lanes, i, o, y[i * N + o], ref);
                }
        }
        free(w);
    }
    lx_wprod_lanes(0);
    if (!tried)
        cr_skip_test("no integer dots on this CPU (AVX2 or AVX-512 VNNI)");
}
