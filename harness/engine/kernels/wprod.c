/*
** harness/engine/kernels/wprod.c - products with weight matrices of any type
** (wprod.h). Called from the main thread (the products thread themselves):
** the conversion buffers are the process's, grown as needed and kept.
*/
#include "harness/engine/kernels/wprod.h"

#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/iqlanes.h"
#include "harness/core/iquant.h"
#include "harness/core/lx.h"
#include "harness/core/qlanes.h"
#include "harness/engine/kernels/blas.h"
#include "harness/engine/kernels/dnnl.h"
#include "harness/engine/kernels/gemm.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/qdot.h"
#include "harness/engine/kernels/qdot8.h"
#include "harness/engine/kernels/share.h"

#define XROWS 512       /* rows of x rounded to bf16 at a time in bf16 numerics */
#define GEMV_ROWS 32    /* products of at most this many rows read half weights directly (fast numerics) */
#define GEMV_GROUP 8    /* rows of x per pass over a weight row (two accumulators each) */
#define GEMV_GROUP8 2   /* the same in 8 lanes (four accumulators each in AVX2's 16 registers) */
#define GEMV_CHUNK_BYTES 32768     /* weight rows a thread takes at a time in a few rows' products (share.h) */

static void *scratch(int which, size_t bytes)
{
    static void *buf[6];
    static size_t cap[6];
    LX_ASSERT(!omp_in_parallel());
    if (bytes > cap[which]) {
        free(buf[which]);
        buf[which] = lx_xmalloc(bytes);
        cap[which] = bytes;
    }
    return buf[which];
}

static const char *row_of(struct lx_wmat W, long r, long C)
{
    return (const char *)W.p + lx_dtype_bytes(W.type, (size_t)r * (size_t)C);
}

void lx_wmat_row(float *out, struct lx_wmat W, long r, long C)
{
    if (W.packed_rows)
        lx_dnnl_packed_row(out, W.p, W.row0 + r, W.packed_rows, C);
    else
        lx_half_to_f32(out, row_of(W, r, C), W.type, (size_t)C);
}

long lx_wmat_rows_step(struct lx_wmat W, long C)
{
    long b = W.packed_rows ? lx_dnnl_pack_block(W.packed_rows, C) : 0;
    return b > 0 ? (256 + b - 1) / b * b : 256;
}

void lx_wmat_rows(float *out, struct lx_wmat W, long r0, long n, long C)
{
    if (W.packed_rows) {
        long b = lx_dnnl_pack_block(W.packed_rows, C), a0 = W.row0 + r0;
        uint16_t *h = b > 0 && a0 % b == 0 && (n % b == 0 || a0 + n == W.packed_rows)
                          ? malloc(sizeof(uint16_t) * (size_t)(n * C))
                          : NULL;
        int ok = h && lx_dnnl_unpack_rows(h, W.p, a0, n, W.packed_rows, C) == 0;
        if (ok)
            lx_half_to_f32(out, h, LX_DT_BF16, (size_t)(n * C));
        free(h);
        if (ok)
            return;
    }
    for (long r = 0; r < n; r++)
        lx_wmat_row(out + r * C, W, r0 + r, C);
}

/* ---- fast and portable numerics -------------------------------------------- */

/* Value c of a row of fp32, bf16 or f16 values w. */
static inline float value_at(const void *w, long c, int type)
{
    const uint16_t *h = w;
    LX_ASSERT(type <= LX_DT_F16);   /* Q8_0's rows (8 lanes) are whole blocks: no value alone */
    return type == LX_DT_F32 ? ((const float *)w)[c] : type == LX_DT_BF16 ? lx_bf16_to_f32(h[c]) : lx_f16_to_f32(h[c]);
}

/* Values c … c + 15 of such a row, widened exactly to fp32. */
__attribute__((target("avx512f"), always_inline)) static inline __m512 widen16(const void *w, long c, int type)
{
    if (type == LX_DT_F32)
        return _mm512_loadu_ps((const float *)w + c);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + c));
    return type == LX_DT_BF16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                              : _mm512_cvtph_ps(h);
}

/* out[t] = x_t · w for n (a constant in each instance, at most GEMV_GROUP)
** rows x_t (stride ldx): one pass over the weight row, widened 32 values at a
** time. Each row's sum is two chains of 16 lanes (values c ≡ 0–15 and 16–31
** mod 32, the last 16 of a row of C ≡ 16 mod 32 on the first), added and
** reduced, then the last C mod 16 values in order: the same order whatever
** n, so a row's bits do not depend on the rows beside it (a decoding step's
** one row and the same row in a short forward agree). Two chains, not one:
** a single chain of dependent multiply-adds, in memory when n was not a
** constant, held a decoding step to a few GB/s of weights. */
__attribute__((target("avx512f"), always_inline)) static inline void dots_n(float *out, const float *x, long ldx,
                                                                           const int n, const void *w, int type, long C)
{
    __m512 a0[GEMV_GROUP], a1[GEMV_GROUP];
    long c = 0;
#pragma GCC unroll 8
    for (int t = 0; t < n; t++)
        a0[t] = a1[t] = _mm512_setzero_ps();
    for (; c + 32 <= C; c += 32) {
        __m512 w0 = widen16(w, c, type), w1 = widen16(w, c + 16, type);
#pragma GCC unroll 8
        for (int t = 0; t < n; t++) {
            a0[t] = _mm512_fmadd_ps(_mm512_loadu_ps(x + t * ldx + c), w0, a0[t]);
            a1[t] = _mm512_fmadd_ps(_mm512_loadu_ps(x + t * ldx + c + 16), w1, a1[t]);
        }
    }
    if (c + 16 <= C) {
        __m512 w0 = widen16(w, c, type);
#pragma GCC unroll 8
        for (int t = 0; t < n; t++)
            a0[t] = _mm512_fmadd_ps(_mm512_loadu_ps(x + t * ldx + c), w0, a0[t]);
        c += 16;
    }
#pragma GCC unroll 8
    for (int t = 0; t < n; t++) {
        float s = _mm512_reduce_add_ps(_mm512_add_ps(a0[t], a1[t]));
        for (long k = c; k < C; k++)
            s += x[t * ldx + k] * value_at(w, k, type);
        out[t] = s;
    }
}

__attribute__((target("avx512f")))
static void dots_half_avx512(float *out, const float *x, long ldx, int n, const void *w, int type, long C)
{
    switch (n) {    /* n a constant in each: the sums stay in registers */
    case 1: dots_n(out, x, ldx, 1, w, type, C); break;
    case 2: dots_n(out, x, ldx, 2, w, type, C); break;
    case 3: dots_n(out, x, ldx, 3, w, type, C); break;
    case 4: dots_n(out, x, ldx, 4, w, type, C); break;
    case 5: dots_n(out, x, ldx, 5, w, type, C); break;
    case 6: dots_n(out, x, ldx, 6, w, type, C); break;
    case 7: dots_n(out, x, ldx, 7, w, type, C); break;
    default: dots_n(out, x, ldx, GEMV_GROUP, w, type, C); break;
    }
}

/* Values c … c + 7 of a row of fp32, bf16 or f16 values, widened exactly (AVX2 and F16C); or of
** Q8_0 blocks, each (float)q·d as lx_half_to_f32 dequantizes it (c a multiple of 8). */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline __m256 widen8(const void *w, long c, int type)
{
    if (type == LX_DT_F32)
        return _mm256_loadu_ps((const float *)w + c);
    if (type == LX_DT_Q8_0) {
        const unsigned char *b = (const unsigned char *)w + c / LX_Q8_0_VALUES * LX_Q8_0_BYTES;
        uint16_t dh;
        memcpy(&dh, b, 2);
        __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + 2 +
                                                                                       c % LX_Q8_0_VALUES))));
        return _mm256_mul_ps(q, _mm256_set1_ps(_cvtsh_ss(dh)));
    }
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + c));
    return type == LX_DT_BF16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
                              : _mm256_cvtph_ps(h);
}

#define W8 __attribute__((target("avx2,fma,f16c"), always_inline)) static inline

/* The 8 bytes at p as int32 lanes, shifted right and masked. */
W8 __m256i bits8(const unsigned char *p, int shift, int mask)
{
    return _mm256_and_si256(_mm256_srli_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)), shift),
                            _mm256_set1_epi32(mask));
}

/* Q4_1, Q5_0 and Q5_1: 32-value blocks with a min or a fifth bit (lx_ql_w32_min_avx2). */
static inline int min32(int type)
{
    return type == LX_DT_Q4_1 || type == LX_DT_Q5_0 || type == LX_DT_Q5_1;
}

/* The codebook types (IQ1-IQ3), whose 8-lane dots read their blocks through iqlanes.h. */
static inline int iq8(int type)
{
    return type >= LX_DT_IQ2_XXS && type <= LX_DT_IQ1_M;
}

/* Values c … c + 31 (c a multiple of 32) of a row of a codebook type, as iquant.c's lanes form
** them: sub-block c mod 256 / 32 of its block, whose d is d (t, sg: lx_iq_lane_tables). */
W8 void widen32_iq(__m256 v[4], const void *w, long c, int type, float d, const float *t, const float (*sg)[8])
{
    const int kind = type - LX_DT_IQ2_XXS;
    struct lx_iq_group g[4];
    lx_iq_decode(kind, g, (const unsigned char *)w + c / 256 * lx_dtype_block_bytes(type), d, (int)(c % 256 / 32));
    lx_iq_values8(v, t, sg, lx_iq_family(kind), g);
}

/* The types of 256-value super-blocks whose 8-lane dots read their blocks (widen32). */
static inline int kquant8(int type)
{
    return type == LX_DT_Q4_K || type == LX_DT_Q5_K || type == LX_DT_Q6_K || type == LX_DT_Q2_K || type == LX_DT_Q3_K ||
           type == LX_DT_IQ4_XS;
}

/* d times 8 integers, each product rounded once. */
W8 __m256 scaled8(float d, __m256i v)
{
    return _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(v));
}

/* The super-block at c of a Q4_K or Q5_K row (8 sub-blocks' d·scale to ds, dmin·min to ms), a Q2_K
** row (16 of each), a Q3_K or Q6_K row (16 d·scale) or an IQ4_XS row (8 d·(scale − 32)), each
** product rounded once as the scalar loops round it. */
W8 void kscales8(float *ds, float *ms, const void *w, long c, int type)
{
    const unsigned char *b = (const unsigned char *)w + c / 256 * lx_dtype_block_bytes(type);
    if (type == LX_DT_Q4_K || type == LX_DT_Q5_K) {
        uint64_t sc, mn;
        lx_ql_k_scales_u8(b + 4, &sc, &mn);
        _mm256_storeu_ps(ds, scaled8(lx_ql_f16(b), _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)sc))));
        _mm256_storeu_ps(ms, scaled8(lx_ql_f16(b + 2), _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)mn))));
    } else if (type == LX_DT_Q6_K) {
        const __m128i sc = _mm_loadu_si128((const __m128i *)(b + 192));
        _mm256_storeu_ps(ds, scaled8(lx_ql_f16(b + 208), _mm256_cvtepi8_epi32(sc)));
        _mm256_storeu_ps(ds + 8, scaled8(lx_ql_f16(b + 208), _mm256_cvtepi8_epi32(_mm_unpackhi_epi64(sc, sc))));
    } else if (type == LX_DT_IQ4_XS) {
        for (int j = 0; j < 8; j++)
            ds[j] = lx_ql_f16(b) * (float)(lx_ql_iq4xs_scale(b, j) - 32);
    } else if (type == LX_DT_Q3_K) {
        const __m128i sc = lx_ql_q3_scales_i8(b);
        _mm256_storeu_ps(ds, scaled8(lx_ql_f16(b + 108), _mm256_cvtepi8_epi32(sc)));
        _mm256_storeu_ps(ds + 8, scaled8(lx_ql_f16(b + 108), _mm256_cvtepi8_epi32(_mm_unpackhi_epi64(sc, sc))));
    } else {    /* Q2_K: byte j the scale (low nibble) and the min (high) of sub-block j */
        for (int h = 0; h < 2; h++) {
            _mm256_storeu_ps(ds + 8 * h, scaled8(lx_ql_f16(b + 80), bits8(b + 8 * h, 0, 15)));
            _mm256_storeu_ps(ms + 8 * h, scaled8(lx_ql_f16(b + 82), bits8(b + 8 * h, 4, 15)));
        }
    }
}

/* Values c … c + 31 (c a multiple of 32) of a row, each as lx_half_to_f32 dequantizes it: widen8's
** types; a block of Q4_0 or IQ4_NL or a sub-block of IQ4_XS (levels times the scale); a sub-block
** of Q4_K or Q5_K ((d·scale)·q − dmin·min, Q5_K's q with a fifth bit); a quarter of a half of Q6_K
** ((d·scale)·(q − 32), q a nibble and two high bits) or of Q2_K ((d·scale)·q − dmin·min) or Q3_K
** ((d·scale)·(q − 4 where the mask bit is clear)), q two bits. ds, ms: the super-block's kscales8. */
W8 void widen32(__m256 v[4], const void *w, long c, int type, const float *ds, const float *ms)
{
    if (type == LX_DT_Q4_0 || type == LX_DT_IQ4_NL) {   /* a block of 32: f16 d, 16 nibble bytes */
        const unsigned char *b = (const unsigned char *)w + c / 32 * lx_dtype_block_bytes(type);
        lx_ql_levels32_avx2(v, b + 2, type == LX_DT_Q4_0 ? lx_ql_q4_0_levels : lx_ql_iq4_levels, lx_ql_f16(b));
        return;
    }
    if (min32(type)) {  /* a block of 32: d (and m), the fifth bits, 16 nibble bytes */
        lx_ql_w32_min_avx2(v, (const unsigned char *)w + c / 32 * lx_dtype_block_bytes(type),
                           type == LX_DT_Q4_1 ? LX_QL_Q4_1 : type == LX_DT_Q5_0 ? LX_QL_Q5_0 : LX_QL_Q5_1);
        return;
    }
    if (!kquant8(type)) {
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++)
            v[g] = widen8(w, c + 8 * g, type);
        return;
    }
    const unsigned char *b = (const unsigned char *)w + c / 256 * lx_dtype_block_bytes(type);
    if (type == LX_DT_IQ4_XS) {     /* sub-block s: 16 nibble bytes, levels times d·(scale − 32) */
        const int s = (int)(c % 256 / 32);
        lx_ql_levels32_avx2(v, b + 8 + 16 * s, lx_ql_iq4_levels, ds[s]);
        return;
    }
    if (type == LX_DT_Q2_K || type == LX_DT_Q3_K) {    /* values 128h + 32s + l, sub-block 8h + 2s + l / 16 */
        const int h = (int)(c % 256 / 128), s = (int)(c % 128 / 32), three = type == LX_DT_Q3_K;
        const unsigned char *q = b + (three ? 32 : 16) + 32 * h;
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++) {
            const int j = 8 * h + 2 * s + g / 2;
            __m256i u = bits8(q + 8 * g, 2 * s, 3);
            if (three)
                u = _mm256_sub_epi32(_mm256_or_si256(u, _mm256_slli_epi32(bits8(b + 8 * g, 4 * h + s, 1), 2)),
                                     _mm256_set1_epi32(4));
            v[g] = _mm256_mul_ps(_mm256_set1_ps(ds[j]), _mm256_cvtepi32_ps(u));
            if (!three)
                v[g] = _mm256_sub_ps(v[g], _mm256_set1_ps(ms[j]));
        }
        return;
    }
    if (type != LX_DT_Q6_K) {
        const int s = (int)(c % 256 / 32), five = type == LX_DT_Q5_K;
        const __m256 d = _mm256_set1_ps(ds[s]), m = _mm256_set1_ps(ms[s]);
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++) {
            __m256i q = bits8(b + (five ? 48 : 16) + 32 * (s / 2) + 8 * g, 4 * (s % 2), 15);
            if (five)
                q = _mm256_or_si256(q, _mm256_slli_epi32(bits8(b + 16 + 8 * g, s, 1), 4));
            v[g] = _mm256_sub_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), d), m);
        }
        return;
    }
    const int h = (int)(c % 256 / 128), j = (int)(c % 128 / 32);
    const unsigned char *ql = b + 64 * h + 32 * (j % 2), *qh = b + 128 + 32 * h;
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
        __m256i q = _mm256_or_si256(bits8(ql + 8 * g, 4 * (j / 2), 15), _mm256_slli_epi32(bits8(qh + 8 * g, 2 * j, 3), 4));
        q = _mm256_sub_epi32(q, _mm256_set1_epi32(32));
        v[g] = _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(ds[8 * h + 2 * j + g / 2]));
    }
}

/* Each of n rows' four chains a[g][t] plus values c … c + 31 of x's row t times wv. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void fma32(__m256 a[4][GEMV_GROUP8],
                                                                               const float *x, long ldx, const int n,
                                                                               long c, const __m256 wv[4])
{
#pragma GCC unroll 2
    for (int t = 0; t < n; t++) {
        const float *xt = x + t * ldx + c;
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++)
            a[g][t] = _mm256_fmadd_ps(_mm256_loadu_ps(xt + 8 * g), wv[g], a[g][t]);
    }
}

/* dots_n in 8 lanes, for a CPU without AVX-512: each row's sum four chains of 8 lanes (values
** c ≡ 0–7, 8–15, 16–23 and 24–31 mod 32; a last 16 on the first two, a last 8 on the first), added
** in pairs and reduced, then the last C mod 8 values in order; at most GEMV_GROUP8 rows (their 4n
** sums and the four weight registers within AVX2's 16). Four chains, not two: a decoding step's one
** row is a chain of dependent multiply-adds each, and two of them held it to half the rate. The
** same order whatever n, as dots_n. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void dots8_n(float *out, const float *x,
                                                                                 long ldx, const int n, const void *w,
                                                                                 int type, long C)
{
    __m256 a[4][GEMV_GROUP8];
    float ds[16], ms[16], id = 0.0f;     /* id: a codebook type's block d */
    const float *it = NULL, (*isg)[8] = NULL;
    long c = 0;
    if (iq8(type))
        lx_iq_lane_tables(type - LX_DT_IQ2_XXS, &it, &isg);
#pragma GCC unroll 2
    for (int t = 0; t < n; t++)
        a[0][t] = a[1][t] = a[2][t] = a[3][t] = _mm256_setzero_ps();
    if (kquant8(type) || iq8(type))     /* super-blocks of 256: the sub-block a constant in each widen32 */
        for (long blk = 0; blk < C / 256; blk++, c += 256) {
            if (kquant8(type))
                kscales8(ds, ms, w, c, type);
            else
                id = lx_iq_block_d(type - LX_DT_IQ2_XXS, (const unsigned char *)w + blk * lx_dtype_block_bytes(type));
#pragma GCC unroll 8
            for (int s = 0; s < 8; s++) {
                __m256 wv[4];
                if (iq8(type))
                    widen32_iq(wv, w, 256 * blk + 32 * s, type, id, it, isg);
                else
                    widen32(wv, w, 256 * blk + 32 * s, type, ds, ms);
                fma32(a, x, ldx, n, c + 32 * s, wv);
            }
        }
    for (; c + 32 <= C; c += 32) {
        __m256 wv[4];
        widen32(wv, w, c, type, ds, ms);
        fma32(a, x, ldx, n, c, wv);
    }
    for (int k = 0; k < 2 && c + 8 <= C; k++, c += 8) {     /* a last 16 (k 0, 1) or 8 (k 0) */
        __m256 wk = widen8(w, c, type);
#pragma GCC unroll 2
        for (int t = 0; t < n; t++)
            a[k][t] = _mm256_fmadd_ps(_mm256_loadu_ps(x + t * ldx + c), wk, a[k][t]);
    }
#pragma GCC unroll 2
    for (int t = 0; t < n; t++) {
        __m256 v = _mm256_add_ps(_mm256_add_ps(a[0][t], a[1][t]), _mm256_add_ps(a[2][t], a[3][t]));
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        float s = _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
        for (long k = c; k < C; k++)
            s += x[t * ldx + k] * value_at(w, k, type);
        out[t] = s;
    }
}

__attribute__((target("avx2,fma,f16c")))
static void dots_half_avx2(float *out, const float *x, long ldx, int n, const void *w, int type, long C)
{
    for (int t0 = 0; t0 < n; t0 += GEMV_GROUP8) {
        const int one = n - t0 == 1;
        const float *xt = x + t0 * ldx;
        switch (type * 2 + one) {   /* the type and the rows constants in each: no branch in the loop */
#define DOTS8_CASE(T) \
    case 2 * T: dots8_n(out + t0, xt, ldx, GEMV_GROUP8, w, T, C); break; \
    case 2 * T + 1: dots8_n(out + t0, xt, ldx, 1, w, T, C); break;
        DOTS8_CASE(LX_DT_F32) DOTS8_CASE(LX_DT_BF16) DOTS8_CASE(LX_DT_F16) DOTS8_CASE(LX_DT_Q8_0)
        DOTS8_CASE(LX_DT_Q4_K) DOTS8_CASE(LX_DT_Q5_K) DOTS8_CASE(LX_DT_Q6_K) DOTS8_CASE(LX_DT_Q2_K)
        DOTS8_CASE(LX_DT_Q3_K) DOTS8_CASE(LX_DT_IQ4_XS) DOTS8_CASE(LX_DT_Q4_0) DOTS8_CASE(LX_DT_IQ4_NL)
        DOTS8_CASE(LX_DT_IQ2_XXS) DOTS8_CASE(LX_DT_IQ2_XS) DOTS8_CASE(LX_DT_IQ2_S) DOTS8_CASE(LX_DT_IQ3_XXS)
        DOTS8_CASE(LX_DT_IQ3_S) DOTS8_CASE(LX_DT_IQ1_S) DOTS8_CASE(LX_DT_IQ1_M) DOTS8_CASE(LX_DT_Q4_1)
        DOTS8_CASE(LX_DT_Q5_0) DOTS8_CASE(LX_DT_Q5_1)
#undef DOTS8_CASE
        default: LX_ASSERT(!"a type with 8-lane dots");
        }
    }
}

static int gemv_forced;     /* lx_wprod_lanes: 0, or the lanes asked for */

/* The lanes of the few-rows dot products on this CPU: 16 (AVX-512), 8 (AVX2, FMA and F16C, which
** every AVX2 CPU has: clang cannot ask for it) or 0 (none: a few rows go through sgemm as many do);
** lx_wprod_lanes can ask for 8 on an AVX-512 CPU. */
static int gemv_lanes(void)
{
    static int lanes = -1;
    if (lanes < 0)
        lanes = __builtin_cpu_supports("avx512f")                                        ? 16
                : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 8
                                                                                  : 0;
    return gemv_forced < 0 ? 0 : gemv_forced && gemv_forced <= lanes ? gemv_forced : lanes;
}

int lx_wprod_lanes(int lanes)
{
    gemv_forced = lanes == 8 || lanes == 16 || lanes < 0 ? lanes : 0;
    return gemv_lanes();
}

static int qdot_on = 1;

/* y[t0 + t, o] = s[t] + beta · y[t0 + t, o] for n rows' sums s. */
static void store_sums(float *y, long ldy, const float *s, long t0, int n, long o, float beta)
{
    for (int t = 0; t < n; t++) {
        float *yo = y + (t0 + t) * ldy + o;
        *yo = beta == 0.0f ? s[t] : s[t] + beta * *yo;
    }
}

void lx_wprod_qdot(int on)
{
    qdot_on = on;
}

int lx_wprod_fused(int type)
{
    return gemv_lanes() == 16 ? lx_qdot_has(type)     /* 8 lanes: widen32 */
                              : gemv_lanes() == 8 && (type == LX_DT_Q8_0 || type == LX_DT_Q4_0 ||
                                                      type == LX_DT_IQ4_NL || kquant8(type) || iq8(type) ||
                                                      min32(type));
}

/* y[., o] = x · w + beta · y[., o] for a few rows of x and one row w of W:
** fp32, bf16 or f16 by the half-weight dots, a quantized type by lx_qdot
** (xs the rows' sums where it needs them). */
static void gemv_row(float *y, long ldy, const float *x, long ldx, const void *w, int type, long o, long T, long C,
                     float beta, const float *xs)
{
    for (long t0 = 0; t0 < T; t0 += GEMV_GROUP) {
        float s[GEMV_GROUP];
        int n = (int)(T - t0 < GEMV_GROUP ? T - t0 : GEMV_GROUP);
        if (type >= LX_DT_Q8_0 && gemv_lanes() == 16)
            lx_qdot(s, x + t0 * ldx, ldx, n, w, type, C, xs ? xs + t0 * (C / 32) : NULL);
        else if (gemv_lanes() == 16)
            dots_half_avx512(s, x + t0 * ldx, ldx, n, w, type, C);
        else
            dots_half_avx2(s, x + t0 * ldx, ldx, n, w, type, C);
        store_sums(y, ldy, s, t0, n, o, beta);
    }
}

/* W's OC rows shared by the team (share.h), about GEMV_CHUNK_BYTES of weights a take. */
static void share_rows(struct lx_share *sh, struct lx_wmat W, long OC, long C)
{
    lx_share_init(sh, OC, lx_share_chunk((long)lx_dtype_bytes(W.type, (size_t)C), GEMV_CHUNK_BYTES),
                  omp_get_max_threads());
}

/* y = x · Wᵀ + beta · y for a few rows of x, W half-precision, read in place;
** or quantized: straight from its blocks (qdot.c), else (the fused dots off,
** or AVX-512 without BW/VL) each row dequantized into the thread's own fp32
** row (in cache) just before its dot products, instead of blocks of rows
** widened to memory for sgemm. */
static void gemv_half(float *y, long ldy, const float *x, long ldx, struct lx_wmat W, long T, long C, long OC,
                      float beta)
{
    /* Q5_K in 8 lanes: unpacking its fifth bits again for every pass of two rows costs more than
    ** one dequantized row past one pass (lenx-bench qdot: 0.85x at 4 rows); the same bits either way */
    int fused = qdot_on && lx_wprod_fused(W.type) && !(W.type == LX_DT_Q5_K && gemv_lanes() == 8 && T > GEMV_GROUP8);
    int quant = W.type >= LX_DT_Q8_0 && !fused;
    float *rows = quant ? scratch(0, sizeof(float) * (size_t)(C * omp_get_max_threads())) : NULL;
    float *xs = fused && lx_qdot_needs_sums(W.type) ? scratch(2, sizeof(float) * (size_t)(T * (C / 32))) : NULL;
    if (xs)
        lx_qdot_sums(xs, x, ldx, T, C);
    struct lx_share sh;
    share_rows(&sh, W, OC, C);
#pragma omp parallel
    {
        float *wr = quant ? rows + C * omp_get_thread_num() : NULL;
        long o0, o1;
        while (lx_share_next(&sh, omp_get_thread_num(), &o0, &o1))
            for (long o = o0; o < o1; o++) {
                if (quant)
                    lx_half_to_f32(wr, row_of(W, o, C), W.type, (size_t)C);
                gemv_row(y, ldy, x, ldx, quant ? (const void *)wr : row_of(W, o, C), quant ? LX_DT_F32 : W.type, o,
                         T, C, beta, xs);
            }
    }
}

/* A half-precision W to fp32 a block of rows at a time, each block one sgemm. */
static void linear_blocks(float *y, long ldy, const float *x, long ldx, struct lx_wmat W, long T, long C, long OC,
                          float beta)
{
    long nb = OC < LX_WPROD_BLOCK ? OC : LX_WPROD_BLOCK;
    float *w = scratch(0, sizeof(float) * (size_t)(nb * C));
    for (long o0 = 0; o0 < OC; o0 += nb) {
        long n = OC - o0 < nb ? OC - o0 : nb;
#pragma omp parallel for schedule(static)
        for (long r = 0; r < n; r++)
            lx_wmat_row(w + r * C, W, o0 + r, C);
        lx_gemm(y + o0, (int)ldy, x, (int)ldx, w, (int)C, (int)T, (int)n, (int)C, 0, 1, 1.0f, beta);
    }
}

/* ---- bf16 numerics ------------------------------------------------------------ */

static void dnnl_or_die(int rc)
{
    if (rc < 0) {   /* the shapes are the model's own: oneDNN refusing one is a bug or a broken install */
        fprintf(stderr, "lenx: %s\n  hint: numerics bf16 needs oneDNN (libdnnl2); numerics fast runs without it\n",
                lx_dnnl_error());
        exit(3);
    }
}

static void linear_bf16(float *y, long ldy, const float *x, long ldx, struct lx_wmat W, long T, long C, long OC,
                        float beta)
{
    long xr = T < XROWS ? T : XROWS, nb = OC < LX_WPROD_BLOCK ? OC : LX_WPROD_BLOCK;
    uint16_t *xb = scratch(1, sizeof(uint16_t) * (size_t)(xr * C));
    uint16_t *wb = W.type == LX_DT_BF16 ? NULL : scratch(0, sizeof(uint16_t) * (size_t)(nb * C));
    for (long t0 = 0; t0 < T; t0 += xr) {
        long m = T - t0 < xr ? T - t0 : xr;
#pragma omp parallel for schedule(static)
        for (long t = 0; t < m; t++)
            lx_f32_to_bf16_n(xb + t * C, x + (t0 + t) * ldx, (size_t)C);
        if (W.packed_rows) {
            LX_ASSERT(W.packed_rows == OC && W.row0 == 0);   /* a whole packed matrix, not a part */
            dnnl_or_die(lx_dnnl_gemm_bf16_packed(y + t0 * ldy, ldy, xb, C, W.p, m, OC, C, beta));
            continue;
        }
        if (!wb) {
            dnnl_or_die(lx_dnnl_gemm_bf16(y + t0 * ldy, ldy, xb, C, 0, W.p, C, 1, m, OC, C, beta));
            continue;
        }
        for (long o0 = 0; o0 < OC; o0 += nb) {
            long n = OC - o0 < nb ? OC - o0 : nb;
#pragma omp parallel for schedule(static)
            for (long r = 0; r < n; r++)
                lx_to_bf16(wb + r * C, row_of(W, o0 + r, C), W.type, (size_t)C);
            dnnl_or_die(lx_dnnl_gemm_bf16(y + t0 * ldy + o0, ldy, xb, C, 0, wb, C, 1, m, n, C, beta));
        }
    }
}

size_t lx_wmat_packed_bytes(long OC, long C)
{
    return lx_numerics_get() == LX_NUMERICS_BF16 ? lx_dnnl_packed_bytes(OC, C) : 0;
}

long lx_wmat_pack_block(long OC, long C)
{
    return lx_wmat_packed_bytes(OC, C) ? lx_dnnl_pack_block(OC, C) : 0;
}

struct lx_wmat lx_wmat_pack_part(void *dst, struct lx_wmat W, long row0, long OC, long N, long C)
{
    long blk = lx_dnnl_pack_block(N, C), nb = blk * ((LX_WPROD_BLOCK + blk - 1) / blk);
    LX_ASSERT(blk > 0 && !W.packed_rows && row0 % blk == 0 && row0 + OC <= N);
    uint16_t *wb = W.type == LX_DT_BF16 ? NULL : scratch(0, sizeof(uint16_t) * (size_t)(nb * C));
    for (long o0 = 0; o0 < OC; o0 += nb) {
        long n = OC - o0 < nb ? OC - o0 : nb;
        if (wb) {
#pragma omp parallel for schedule(static)
            for (long r = 0; r < n; r++)
                lx_to_bf16(wb + r * C, row_of(W, o0 + r, C), W.type, (size_t)C);
        }
        dnnl_or_die(lx_dnnl_pack_rows(dst, wb ? wb : (const uint16_t *)row_of(W, o0, C), row0 + o0, n, N, C));
    }
    return (struct lx_wmat){dst, LX_DT_BF16, N, NULL, row0};
}

struct lx_wmat lx_wmat_pack(void *dst, struct lx_wmat W, long OC, long C)
{
    return lx_wmat_pack_part(dst, W, 0, OC, OC, C);
}

void lx_to_bf16_dense(uint16_t *dst, const float *src, size_t n)
{
    enum { BLOCK = 16384 };
    long nb = (long)((n + BLOCK - 1) / BLOCK);
#pragma omp parallel for schedule(static) if (nb > 4)
    for (long b = 0; b < nb; b++) {
        size_t i = (size_t)b * BLOCK;
        lx_f32_to_bf16_n(dst + i, src + i, n - i < BLOCK ? n - i : BLOCK);
    }
}

void lx_linear_backward_bf16(float *dx, float *dW, const float *dy, const float *x, struct lx_wmat W, long T,
                             long C, long OC)
{
    /* dy is rounded once for both products (oneDNN reads it transposed for
    ** dW), W only when it is not bf16 already (training's copy, train.h) */
    uint16_t *dyb = scratch(2, sizeof(uint16_t) * (size_t)(T * OC)), *xb = scratch(3, sizeof(uint16_t) * (size_t)(T * C));
    const uint16_t *wb = W.p;
    LX_ASSERT(!W.packed_rows || W.pt);     /* packed for inference only (lx_model_pack): no backward */
    lx_to_bf16_dense(dyb, dy, (size_t)(T * OC));
    lx_to_bf16_dense(xb, x, (size_t)(T * C));
    if (W.pt) {
        dnnl_or_die(lx_dnnl_gemm_bf16_packed(dx, C, dyb, OC, W.pt, T, C, OC, 0.0f));
        dnnl_or_die(lx_dnnl_gemm_bf16(dW, C, dyb, OC, 1, xb, C, 0, OC, C, T, 1.0f));
        return;
    }
    if (W.type != LX_DT_BF16) {
        LX_ASSERT(W.type == LX_DT_F32);
        uint16_t *w = scratch(0, sizeof(uint16_t) * (size_t)(OC * C));
        lx_to_bf16_dense(w, W.p, (size_t)(OC * C));
        wb = w;
    }
    dnnl_or_die(lx_dnnl_gemm_bf16(dx, C, dyb, OC, 0, wb, C, 0, T, C, OC, 0.0f));     /* (T, OC) (OC, C) */
    dnnl_or_die(lx_dnnl_gemm_bf16(dW, C, dyb, OC, 1, xb, C, 0, OC, C, T, 1.0f));     /* (OC, T) (T, C) */
}

/* y = x · Wᵀ + beta · y for a few rows of x, 8-bit activations and
** quantized W: the integer dots (qdot8.h) on x prepared once. */
static void gemv_q8(float *y, long ldy, const float *x, long ldx, struct lx_wmat W, long T, long C, long OC,
                    float beta, int lanes)
{
    int8_t *q = scratch(4, (size_t)(T * C));
    float *xl = scratch(5, sizeof(float) * (size_t)(2 * T * C / 4 + T * C / 16)), *xg = xl + T * C / 4;
    int32_t *q4 = (int32_t *)(xg + T * C / 16);
    lx_qdot8_prep(q, xl, xg, q4, x, ldx, T, C, W.type);
    struct lx_share sh;
    share_rows(&sh, W, OC, C);
#pragma omp parallel
    {
        long o0, o1;
        while (lx_share_next(&sh, omp_get_thread_num(), &o0, &o1))
            for (long o = o0; o < o1; o++)
                for (long t0 = 0; t0 < T; t0 += GEMV_GROUP) {
                    float s[GEMV_GROUP];
                    int n = (int)(T - t0 < GEMV_GROUP ? T - t0 : GEMV_GROUP);
                    lx_qdot8(s, q + t0 * C, xl + t0 * C / 4, xg + t0 * C / 16, q4 + t0 * C / 4, n, row_of(W, o, C),
                             W.type, C, lanes);
                    store_sums(y, ldy, s, t0, n, o, beta);
                }
    }
}

static void wlinear_as(float *y, long ldy, const float *x, long ldx, struct lx_wmat W, long T, long C, long OC,
                       float beta)
{
    enum lx_numerics nm = lx_numerics_get();
    if (nm == LX_NUMERICS_BF16)
        linear_bf16(y, ldy, x, ldx, W, T, C, OC, beta);
    else if (W.type == LX_DT_F32)
        lx_gemm(y, (int)ldy, x, (int)ldx, W.p, (int)C, (int)T, (int)OC, (int)C, 0, 1, 1.0f, beta);
    else if (nm == LX_NUMERICS_FAST && T <= GEMV_ROWS && gemv_lanes())
        gemv_half(y, ldy, x, ldx, W, T, C, OC, beta);
    else
        linear_blocks(y, ldy, x, ldx, W, T, C, OC, beta);
}

void lx_wlinear(float *y, long ldy, const float *x, long ldx, struct lx_wmat W, long T, long C, long OC, float beta)
{
    enum lx_numerics nm = lx_numerics_get();
    int fmt = lx_acts_llamacpp_get() ? lx_act_format(W.type) : LX_ACT_FP32,
        qlanes = nm == LX_NUMERICS_FAST && T <= GEMV_ROWS && qdot_on ? lx_qdot8_lanes(W.type, C, gemv_lanes()) : 0;
    LX_ASSERT(!W.packed_rows || nm == LX_NUMERICS_BF16);   /* packed at load for bf16 numerics only */
    LX_ASSERT(fmt == LX_ACT_FP32 || nm != LX_NUMERICS_BF16);     /* refused where the modes are set */
    if (fmt == LX_ACT_FP32)
        wlinear_as(y, ldy, x, ldx, W, T, C, OC, beta);
    else if (qlanes)
        gemv_q8(y, ldy, x, ldx, W, T, C, OC, beta, qlanes);
    else    /* `activations: llamacpp`: x rounded as llama.cpp rounds it, XROWS rows at a time */
        for (long t0 = 0; t0 < T; t0 += XROWS) {
            long n = T - t0 < XROWS ? T - t0 : XROWS;
            float *r = scratch(4, sizeof(float) * (size_t)(n * C));
            lx_act_round(r, C, x + t0 * ldx, ldx, n, C, fmt);
            wlinear_as(y + t0 * ldy, ldy, r, C, W, n, C, OC, beta);
        }
}

double lx_wprod_scratch_bytes(long width)
{
    /* a block of widened rows (fast numerics', or the emulated bf16 product's on a CPU oneDNN has
    ** none for: dnnl.c); x's rows rounded (bf16 numerics; `activations: llamacpp`'s fp32 rows, or
    ** the emulation's widened x, take the float slot); a packed product's dense result (dnnl.c) */
    long block = LX_WPROD_BLOCK > LX_DNNL_EMU_BLOCK ? LX_WPROD_BLOCK : LX_DNNL_EMU_BLOCK;
    return (double)width * ((double)block * sizeof(float) + XROWS * (sizeof(uint16_t) + sizeof(float)));
}

void lx_products_describe(char *out, size_t n)
{
    char blas[128], dnnl[128];
    lx_blas_describe(blas, sizeof blas);
    if (lx_numerics_get() != LX_NUMERICS_BF16) {     /* the activations' rounding moves the bits too */
        snprintf(out, n, "%s%s", blas, lx_acts_llamacpp_get() ? " activations=llamacpp" : "");
        return;
    }
    lx_dnnl_describe(dnnl, sizeof dnnl);
    /* the attention's tile products too: AMX and AVX512-BF16 round inside a step differently */
    snprintf(out, n, "%s bf16=%s tiles=%s", blas, dnnl,
             lx_gemm_amx_native() ? "amx" : lx_gemm_bf16_native() ? "avx512bf16" : "fp32");
}

void lx_wlinear_naive(float *y, long ldy, const float *x, long ldx, struct lx_wmat W, long T, long C, long OC,
                      float beta)
{
    int bf = lx_numerics_get() == LX_NUMERICS_BF16;
    float *w = lx_xmalloc(sizeof(float) * (size_t)C), *xr = NULL;
    int fmt = lx_acts_llamacpp_get() ? lx_act_format(W.type) : LX_ACT_FP32;
    if (fmt != LX_ACT_FP32) {   /* x rounded as the mode rounds it, then multiplied exactly */
        xr = lx_xmalloc(sizeof(float) * (size_t)(T * C));
        lx_act_round(xr, C, x, ldx, T, C, fmt);
        x = xr, ldx = C;
    }
    for (long o = 0; o < OC; o++) {
        lx_wmat_row(w, W, o, C);
        for (long t = 0; t < T; t++) {
            double s = 0.0;
            for (long c = 0; c < C; c++)
                s += bf ? (double)lx_round_bf16(x[t * ldx + c]) * lx_round_bf16(w[c]) : (double)x[t * ldx + c] * w[c];
            y[t * ldy + o] = beta == 0.0f ? (float)s : (float)s + beta * y[t * ldy + o];
        }
    }
    free(w);
    free(xr);
}
