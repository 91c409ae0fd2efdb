/*
** harness/core/half.c - bf16 and f16 conversions (half.h): scalar
** definitions, and AVX-512 loops that give the same values.
*/
#include "harness/core/half.h"
#include "harness/core/iquant.h"
#include "harness/core/qlanes.h"

#include <immintrin.h>
#include <math.h>

uint16_t lx_f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    u &= 0x7fffffffu;
    if (u > 0x7f800000u)
        return sign | 0x7e00;                   /* NaN */
    if (u >= 0x477ff000u)
        return sign | 0x7c00;                   /* 65520 and up round to infinity */
    if (u < 0x38800000u)                        /* below 2^-14: a multiple of 2^-24, rounded (exact in double) */
        return sign | (uint16_t)nearbyint((double)fabsf(f) * 16777216.0);
    u -= 112u << 23;                            /* exponent bias 127 -> 15 */
    u += 0xfffu + ((u >> 13) & 1);              /* to nearest, ties to even; a carry moves the exponent */
    return sign | (uint16_t)(u >> 13);
}

void lx_f32_to_q8_0(unsigned char *out, const float *src, size_t n)
{
    for (size_t b = 0; b < n / 32; b++, src += 32, out += LX_Q8_0_BYTES) {
        float amax = 0;
        for (int j = 0; j < 32; j++)
            amax = fabsf(src[j]) > amax ? fabsf(src[j]) : amax;
        float d = amax / 127, id = d != 0 ? 1.0f / d : 0.0f;
        uint16_t d16 = lx_f32_to_f16(d);
        memcpy(out, &d16, 2);
        for (int j = 0; j < 32; j++)
            out[2 + j] = (unsigned char)(int8_t)roundf(src[j] * id);
    }
}

void lx_f32_to_type(void *out, const float *src, int t, size_t n)
{
    if (t == LX_DT_F32)
        memcpy(out, src, 4 * n);
    else if (t == LX_DT_BF16)
        lx_f32_to_bf16_n(out, src, n);
    else if (t == LX_DT_Q8_0)
        lx_f32_to_q8_0(out, src, n);
    else
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)out)[i] = lx_f32_to_f16(src[i]);
}

static int has_avx512(void)
{
    static int v = -1;
    if (v < 0)
        v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    return v;
}

__attribute__((target("avx512f,avx512bw")))
static size_t bf16_to_f32_avx512(float *out, const uint16_t *s, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(s + i)));
        _mm512_storeu_ps(out + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
    }
    return i;
}

/* _mm512_cvtph_ps converts f16 exactly (subnormals too), as lx_f16_to_f32. */
__attribute__((target("avx512f,avx512bw")))
static size_t f16_to_f32_avx512(float *out, const uint16_t *s, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + i))));
    return i;
}

/* Q8_0 blocks to fp32, exactly as llama.cpp dequantizes them: each value its
** int8 times the block's f16 scale, one float product. */
static void q8_0_to_f32(float *out, const unsigned char *b, size_t n)
{
    for (size_t k = 0; k < n; k += LX_Q8_0_VALUES, b += LX_Q8_0_BYTES) {
        uint16_t dh;
        memcpy(&dh, b, 2);
        float d = lx_f16_to_f32(dh);
        const int8_t *q = (const int8_t *)(b + 2);
        for (size_t j = 0; j < LX_Q8_0_VALUES && k + j < n; j++)
            out[k + j] = (float)q[j] * d;
    }
}

static float f16_at(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return lx_f16_to_f32(h);
}

/* Q4_0 and IQ4_NL: an f16 scale d, 16 bytes of nibbles; value j is the low
** nibble of byte j, value 16 + j its high nibble, each read through a table
** of 16 levels and times d: Q4_0's levels are q - 8, IQ4_NL's a fixed
** non-linear set (the format's). */
static void q4_nl_to_f32(float *out, const unsigned char *b, size_t n, int t)
{
    const int8_t *lv = t == LX_DT_IQ4_NL ? lx_ql_iq4_levels : lx_ql_q4_0_levels;
    for (size_t k = 0; k < n; k += 32, b += 18, out += 32) {
        float d = f16_at(b);
        for (int j = 0; j < 16; j++) {
            out[j] = (float)lv[b[2 + j] & 0x0f] * d;
            out[16 + j] = (float)lv[b[2 + j] >> 4] * d;
        }
    }
}

/* The 6-bit scale of sub-block j (of 16) of a Q3_K super-block b, less 32:
** low nibbles from scale bytes 0-7, high pairs from bytes 8-11. */
static inline int q3_k_scale(const unsigned char *b, int j)
{
    int low = j < 8 ? b[96 + j] & 0x0f : b[96 + j - 8] >> 4;
    return (low | ((b[104 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
}

/* IQ4_XS super-blocks of 256: an f16 d, 16 high scale bits, 4 bytes of low
** scale nibbles, 128 bytes of nibbles; sub-block j of 32 has the 6-bit scale
** (nibble j of the low bytes) | (bits 2j, 2j + 1 of the high ones) << 4, and
** its values are (d·(scale − 32))·level, laid out as IQ4_NL's blocks. */
static void iq4_xs_to_f32(float *out, const unsigned char *b, size_t n)
{
    for (size_t k = 0; k < n; k += 256, b += 136) {
        float d = f16_at(b);
        const unsigned char *q = b + 8;
        for (int j = 0; j < 8; j++, q += 16, out += 32) {
            float dl = d * (float)(lx_ql_iq4xs_scale(b, j) - 32);
            for (int l = 0; l < 16; l++) {
                out[l] = dl * (float)lx_ql_iq4_levels[q[l] & 0x0f];
                out[16 + l] = dl * (float)lx_ql_iq4_levels[q[l] >> 4];
            }
        }
    }
}

/* Q4_1, Q5_0 and Q5_1: an f16 scale d, (Q4_1, Q5_1:) an f16 min m, (Q5_*:)
** 32 fifth bits, 16 bytes of nibbles; value j is the low nibble of byte j,
** value 16 + j its high nibble, with bit j (16 + j) of the fifth bits as 16;
** then d·(q − 16) for Q5_0, d·q + m for the others, a product and a sum
** (no fused multiply-add: half.c is built without FMA, as ggml-base). */
static void q_32_to_f32(float *out, const unsigned char *b, size_t n, int t)
{
    int five = t != LX_DT_Q4_1, min = t != LX_DT_Q5_0;
    size_t bytes = lx_dtype_block_bytes(t);
    for (size_t k = 0; k < n; k += 32, b += bytes, out += 32) {
        float d = f16_at(b), m = min ? f16_at(b + 2) : 0.0f;
        const unsigned char *q = b + (min ? 4 : 2) + (five ? 4 : 0);
        uint32_t h = 0;
        if (five)
            memcpy(&h, b + (min ? 4 : 2), 4);
        for (int j = 0; j < 16; j++) {
            int lo = (q[j] & 0x0f) | (int)((h >> j) & 1) << 4, hi = (q[j] >> 4) | (int)((h >> (16 + j)) & 1) << 4;
            out[j] = min ? (float)lo * d + m : (float)(lo - 16) * d;
            out[16 + j] = min ? (float)hi * d + m : (float)(hi - 16) * d;
        }
    }
}

/* Q2_K and Q3_K super-blocks of 256 in 16 sub-blocks of 16. The 2-bit q of
** value 128·h + 32·s + 16·g + l sits at bits 2s of byte 32·h + 16·g + l of
** the 64 quant bytes (h, s, g, l < 2, 4, 2, 16), sub-block 8·h + 2·s + g.
** Q2_K (16 scale bytes, 64 quant bytes, f16 d, f16 dmin): a scale byte is a
** 4-bit scale (low) and min (high), value = (d·sc)·q − dmin·m. Q3_K (32 bytes
** of high bits, 64 quant bytes, 12 bytes of 6-bit scales, f16 d): the high
** bit of value 128·h + 32·s + 16·g + l is bit 4h + s of byte 16·g + l, and
** q loses 4 where it is clear; value = (d·(sc − 32))·q. */
static void q_k_2_3_to_f32(float *out, const unsigned char *b, size_t n, int three)
{
    for (size_t k = 0; k < n; k += 256, b += three ? 110 : 84) {
        const unsigned char *q = b + (three ? 32 : 16), *hm = b;
        float d = f16_at(b + (three ? 108 : 80)), dmin = three ? 0.0f : f16_at(b + 82);
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 4; s++)
                for (int g = 0; g < 2; g++) {
                    int j = 8 * h + 2 * s + g;
                    const unsigned char *qq = q + 32 * h + 16 * g;
                    float dl = three ? d * (float)q3_k_scale(b, j) : d * (float)(b[j] & 0x0f);
                    float ml = three ? 0.0f : dmin * (float)(b[j] >> 4);
                    for (int l = 0; l < 16; l++) {
                        int v = (qq[l] >> (2 * s)) & 3;
                        if (three)
                            *out++ = dl * (float)(v - ((hm[16 * g + l] >> (4 * h + s)) & 1 ? 0 : 4));
                        else
                            *out++ = dl * (float)v - ml;
                    }
                }
    }
}

/* The 6-bit scale and min of sub-block j of a Q4_K/Q5_K super-block (12 bytes s). */
static inline void scale_min_k(int j, const unsigned char *s, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63, *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Q4_K and Q5_K super-blocks of 256: f16 d and dmin, 12 bytes of 6-bit
** scales and mins, (Q5_K: 32 bytes of fifth bits,) 128 bytes of nibbles; the
** 8 sub-blocks of 32 are d·scale·q - dmin·min. */
static void qk_4_5_to_f32(float *out, const unsigned char *b, size_t n, int five)
{
    for (size_t k = 0; k < n; k += 256, b += five ? 176 : 144) {
        float d = f16_at(b), dmin = f16_at(b + 2);
        const unsigned char *sc = b + 4, *qh = b + 16, *q = b + (five ? 48 : 16);
        for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
            int s1, m1, s2, m2;
            scale_min_k(is, sc, &s1, &m1);
            scale_min_k(is + 1, sc, &s2, &m2);
            float d1 = d * (float)s1, n1 = dmin * (float)m1, d2 = d * (float)s2, n2 = dmin * (float)m2;
            int u1 = 1 << is, u2 = 2 << is;
            for (int l = 0; l < 32; l++)
                *out++ = d1 * (float)((q[l] & 0x0f) + (five && (qh[l] & u1) ? 16 : 0)) - n1;
            for (int l = 0; l < 32; l++)
                *out++ = d2 * (float)((q[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0)) - n2;
        }
    }
}

/* Q6_K super-blocks of 256: 128 bytes of low nibbles, 64 of high 2-bit
** pairs, 16 int8 scales, an f16 d; value = d·scale·(6-bit q - 32). */
static void q6_k_to_f32(float *out, const unsigned char *b, size_t n)
{
    for (size_t k = 0; k < n; k += 256, b += 210) {
        const unsigned char *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        float d = f16_at(b + 208);
        for (int half = 0; half < 2; half++, out += 128, ql += 64, qh += 32, sc += 8)
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int q1 = ((ql[l] & 0x0f) | ((qh[l] & 3) << 4)) - 32;
                int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                out[l] = d * (float)sc[is] * (float)q1;
                out[l + 32] = d * (float)sc[is + 2] * (float)q2;
                out[l + 64] = d * (float)sc[is + 4] * (float)q3;
                out[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
    }
}

int lx_dtype_scale_at(int t, int which)
{
    static const short at[LX_DT_N][2] = {
        [LX_DT_F32] = {-1, -1}, [LX_DT_BF16] = {-1, -1}, [LX_DT_F16] = {-1, -1},
        [LX_DT_Q8_0] = {0, -1}, [LX_DT_Q4_0] = {0, -1}, [LX_DT_Q4_K] = {0, 2}, [LX_DT_Q5_K] = {0, 2},
        [LX_DT_Q6_K] = {208, -1}, [LX_DT_Q4_1] = {0, 2}, [LX_DT_Q5_0] = {0, -1}, [LX_DT_Q5_1] = {0, 2},
        [LX_DT_Q2_K] = {80, 82}, [LX_DT_Q3_K] = {108, -1}, [LX_DT_IQ4_NL] = {0, -1}, [LX_DT_IQ4_XS] = {0, -1},
        [LX_DT_IQ2_XXS] = {0, -1}, [LX_DT_IQ2_XS] = {0, -1}, [LX_DT_IQ2_S] = {0, -1}, [LX_DT_IQ3_XXS] = {0, -1},
        [LX_DT_IQ3_S] = {0, -1}, [LX_DT_IQ1_S] = {0, -1}, [LX_DT_IQ1_M] = {-1, -1}, [LX_DT_TQ1_0] = {52, -1},
        [LX_DT_TQ2_0] = {64, -1}};
    return at[t][which];
}

/* ---- the common quantized types in AVX-512 lanes ---- */
/* Each lane does the scalar loop's operations on its value in its order (an
** integer to float, then the same products and differences, no fused
** multiply-add: half.c is built with -ffp-contract=off), so the values are
** the scalar ones bit for bit (tests/test_half_products.c checks every type). */

/* (float)q · d for each lane, then minus m when m is not NULL. */
LX_QLANES void put16(float *out, __m512 q, float d, const float *m)
{
    __m512 v = _mm512_mul_ps(q, _mm512_set1_ps(d));
    _mm512_storeu_ps(out, m ? _mm512_sub_ps(v, _mm512_set1_ps(*m)) : v);
}

/* The types of 32-value blocks (lx_ql_w32), kind a constant at each call. */
__attribute__((target("avx512f,avx512bw,avx512vl,f16c"), always_inline)) static inline size_t w32_avx512(
    float *out, const unsigned char *b, size_t n, int kind)
{
    size_t bytes = lx_ql_w32_bytes(kind), k = 0;
    for (; k + 32 <= n; k += 32, b += bytes, out += 32) {
        __m512 w[2];
        lx_ql_w32(b, kind, w);
        _mm512_storeu_ps(out, w[0]), _mm512_storeu_ps(out + 16, w[1]);
    }
    return k;
}

/* Q4_K and Q5_K: (d·scale)·q − dmin·min per sub-block of 32, q a nibble
** (plus 16 where the value's fifth bit is set). */
__attribute__((target("avx512f,avx512bw,avx512vl,f16c"))) static size_t qk_4_5_avx512(float *out, const unsigned char *b,
                                                                                 size_t n, int five)
{
    size_t k = 0;
    for (; k + 256 <= n; k += 256, b += five ? 176 : 144) {
        const unsigned char *qh = b + 16, *q = b + (five ? 48 : 16);
        __m256 dsc, dm;
        float ds[8], ns[8];
        lx_ql_k_scales(b + 4, lx_ql_f16(b), lx_ql_f16(b + 2), &dsc, &dm);
        _mm256_storeu_ps(ds, dsc), _mm256_storeu_ps(ns, dm);
        for (int is = 0; is < 8; is += 2, q += 32) {
            for (int h = 0; h < 32; h += 16, out += 16) {
                __m128i lo, hi;
                lx_ql_q45(q + h, qh + h, is, five, &lo, &hi);
                put16(out, lx_ql_u8_ps(lo), ds[is], &ns[is]);
                put16(out + 32, lx_ql_u8_ps(hi), ds[is + 1], &ns[is + 1]);
            }
            out += 32;
        }
    }
    return k;
}

/* Q6_K: (d·scale)·(q − 32), q six bits from a nibble and a pair of high bits. */
__attribute__((target("avx512f,avx512bw,avx512vl,f16c"))) static size_t q6_k_avx512(float *out, const unsigned char *b,
                                                                               size_t n)
{
    size_t k = 0;
    for (; k + 256 <= n; k += 256, b += 210) {
        const unsigned char *ql = b, *qh = b + 128;
        float dsc[16];
        lx_ql_q6_scales(b, dsc);
        for (int half = 0; half < 2; half++, out += 128, ql += 64, qh += 32)
            for (int g = 0; g < 2; g++) {
                __m128i a = _mm_loadu_si128((const __m128i *)(ql + 16 * g)),
                        c = _mm_loadu_si128((const __m128i *)(ql + 32 + 16 * g)),
                        h = _mm_loadu_si128((const __m128i *)(qh + 16 * g));
                for (int j = 0; j < 4; j++)     /* value 32j + 16g + l, scale sc[g + 2j] */
                    put16(out + 32 * j + 16 * g, lx_ql_i8_ps(lx_ql_q6(a, c, h, j)), dsc[8 * half + g + 2 * j], NULL);
            }
    }
    return k;
}

/* IQ4_XS: (d·(scale − 32))·level per sub-block of 32 (lx_ql_iq4xs_w32). */
__attribute__((target("avx512f,avx512bw,avx512vl,f16c"))) static size_t iq4_xs_avx512(float *out, const unsigned char *b,
                                                                                      size_t n)
{
    size_t k = 0;
    for (; k + 256 <= n; k += 256, b += 136)
        for (int j = 0; j < 8; j++, out += 32) {
            __m512 w[2];
            lx_ql_iq4xs_w32(b, j, w);
            _mm512_storeu_ps(out, w[0]), _mm512_storeu_ps(out + 16, w[1]);
        }
    return k;
}

/* Q2_K and Q3_K (see q_k_2_3_to_f32): sixteen values of a sub-block at a time. */
__attribute__((target("avx512f,avx512bw,avx512vl,f16c"))) static size_t q_k_2_3_avx512(float *out, const unsigned char *b,
                                                                                       size_t n, int three)
{
    size_t k = 0;
    for (; k + 256 <= n; k += 256, b += three ? 110 : 84) {
        const unsigned char *q = b + (three ? 32 : 16);
        float ds[16], ms[16];
        lx_ql_k23_scales(b, three, ds, ms);
        __m128i hm[2] = {_mm_loadu_si128((const __m128i *)b), _mm_loadu_si128((const __m128i *)(b + 16))};
        for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
            for (int s = 0; s < 4; s++)
#pragma GCC unroll 2
                for (int g = 0; g < 2; g++, out += 16) {
                    int j = 8 * h + 2 * s + g;
                    __m128i v = lx_ql_q23(q, hm, h, s, g, three);
                    if (three)
                        put16(out, lx_ql_i8_ps(v), ds[j], NULL);
                    else
                        put16(out, lx_ql_u8_ps(v), ds[j], &ms[j]);
                }
    }
    return k;
}

/* ---- the common types in 8 lanes, for CPUs with AVX2 but not AVX-512 ---- */
/* As the 16 lanes above: each lane the scalar loop's operations on its value in its order, so the
** values are the scalar ones bit for bit (test_half_products.c's quantized_lanes_are_the_reference_bits). */

#define LX_LANES8 __attribute__((target("avx2,f16c"), always_inline)) static inline

/* (float)q · d for 8 int32 lanes q, then minus m when m is not NULL, into out. */
LX_LANES8 void put8(float *out, __m256i q, float d, const float *m)
{
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(d));
    _mm256_storeu_ps(out, m ? _mm256_sub_ps(v, _mm256_set1_ps(*m)) : v);
}

/* Q8_0, Q4_0 and IQ4_NL blocks of 32: the int8 (or the nibble's level) times the f16 scale. */
__attribute__((target("avx2,f16c"))) static size_t w32_avx2(float *out, const unsigned char *b, size_t n, int t)
{
    size_t k = 0;
    const int8_t *levels = t == LX_DT_IQ4_NL ? lx_ql_iq4_levels : lx_ql_q4_0_levels;
    for (; k + 32 <= n; k += 32, out += 32) {
        if (t == LX_DT_Q4_1 || t == LX_DT_Q5_0 || t == LX_DT_Q5_1) {  /* d and m read by the lanes */
            __m256 v[4];
            lx_ql_w32_min_avx2(v, b, t == LX_DT_Q4_1 ? LX_QL_Q4_1 : t == LX_DT_Q5_0 ? LX_QL_Q5_0 : LX_QL_Q5_1);
            for (int g = 0; g < 4; g++)
                _mm256_storeu_ps(out + 8 * g, v[g]);
            b += lx_dtype_block_bytes(t);
            continue;
        }
        float d = f16_at(b);
        if (t == LX_DT_Q8_0) {
            for (int g = 0; g < 4; g++)
                put8(out + 8 * g, _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + 2 + 8 * g))), d, NULL);
            b += LX_Q8_0_BYTES;
            continue;
        }
        __m256 v[4];
        lx_ql_levels32_avx2(v, b + 2, levels, d);
        for (int g = 0; g < 4; g++)
            _mm256_storeu_ps(out + 8 * g, v[g]);
        b += 18;
    }
    return k;
}

/* Q4_K and Q5_K: (d·scale)·q − dmin·min per sub-block of 32, q a nibble (Q5_K: and a fifth bit,
** bit is of the 32 high-bit bytes for sub-block is). */
__attribute__((target("avx2,f16c"))) static size_t qk_4_5_avx2(float *out, const unsigned char *b, size_t n, int five)
{
    size_t k = 0;
    const __m256i one = _mm256_set1_epi32(1);
    for (; k + 256 <= n; k += 256, b += five ? 176 : 144) {
        float d = f16_at(b), dmin = f16_at(b + 2);
        const unsigned char *q = b + (five ? 48 : 16), *qh = b + 16;
        for (int is = 0; is < 8; is += 2, q += 32, out += 64) {
            int s1, m1, s2, m2;
            scale_min_k(is, b + 4, &s1, &m1);
            scale_min_k(is + 1, b + 4, &s2, &m2);
            float d1 = d * (float)s1, n1 = dmin * (float)m1, d2 = d * (float)s2, n2 = dmin * (float)m2;
            for (int l = 0; l < 32; l += 8) {
                __m256i u = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + l))),
                        lo = _mm256_and_si256(u, _mm256_set1_epi32(0x0f)), hi = _mm256_srli_epi32(u, 4);
                if (five) {
                    __m256i h = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(qh + l)));
                    lo = _mm256_or_si256(lo, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, is), one), 4));
                    hi = _mm256_or_si256(hi, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, is + 1), one), 4));
                }
                put8(out + l, lo, d1, &n1);
                put8(out + 32 + l, hi, d2, &n2);
            }
        }
    }
    return k;
}

/* Q6_K: (d·scale)·(q − 32), q six bits from a nibble and a pair of high bits. */
__attribute__((target("avx2,f16c"))) static size_t q6_k_avx2(float *out, const unsigned char *b, size_t n)
{
    size_t k = 0;
    for (; k + 256 <= n; k += 256, b += 210) {
        const unsigned char *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        float d = f16_at(b + 208);
        const __m256i low = _mm256_set1_epi32(0x0f), two = _mm256_set1_epi32(3), mid = _mm256_set1_epi32(32);
        for (int half = 0; half < 2; half++, out += 128, ql += 64, qh += 32, sc += 8)
            for (int l = 0; l < 32; l += 8) {
                int is = l / 16;
                __m256i a = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(ql + l))),
                        c = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(ql + 32 + l))),
                        h = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(qh + l)));
                __m256i q[4] = {
                    _mm256_or_si256(_mm256_and_si256(a, low), _mm256_slli_epi32(_mm256_and_si256(h, two), 4)),
                    _mm256_or_si256(_mm256_and_si256(c, low),
                                    _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 2), two), 4)),
                    _mm256_or_si256(_mm256_srli_epi32(a, 4),
                                    _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 4), two), 4)),
                    _mm256_or_si256(_mm256_srli_epi32(c, 4), _mm256_slli_epi32(_mm256_srli_epi32(h, 6), 4))};
                for (int j = 0; j < 4; j++)     /* value 32j + l, scale sc[is + 2j] */
                    put8(out + 32 * j + l, _mm256_sub_epi32(q[j], mid), d * (float)sc[is + 2 * j], NULL);
            }
    }
    return k;
}

/* Q2_K and Q3_K: values 128h + 32s + l are bits 2s, 2s + 1 of quant byte 32h + l, sub-block
** 8h + 2s + l / 16; (d·scale)·q − dmin·min, or for Q3_K (d·scale)·(q − 4 where bit 4h + s of mask
** byte l is clear). */
__attribute__((target("avx2,f16c"))) static size_t q_k_2_3_avx2(float *out, const unsigned char *b, size_t n,
                                                                int three)
{
    size_t k = 0;
    for (; k + 256 <= n; k += 256, b += three ? 110 : 84) {
        const unsigned char *q = b + (three ? 32 : 16);
        float d = f16_at(b + (three ? 108 : 80)), dmin = three ? 0.0f : f16_at(b + 82);
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 4; s++)
                for (int l = 0; l < 32; l += 8, out += 8) {
                    int j = 8 * h + 2 * s + l / 16;
                    float dl = three ? d * (float)q3_k_scale(b, j) : d * (float)(b[j] & 0x0f),
                          ml = three ? 0.0f : dmin * (float)(b[j] >> 4);
                    __m256i v = _mm256_and_si256(_mm256_srli_epi32(_mm256_cvtepu8_epi32(
                                                                       _mm_loadl_epi64((const __m128i *)(q + 32 * h + l))),
                                                                   2 * s),
                                                 _mm256_set1_epi32(3));
                    if (three) {
                        __m256i hb = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(b + l)));
                        hb = _mm256_and_si256(_mm256_srli_epi32(hb, 4 * h + s), _mm256_set1_epi32(1));
                        v = _mm256_sub_epi32(_mm256_or_si256(v, _mm256_slli_epi32(hb, 2)), _mm256_set1_epi32(4));
                    }
                    put8(out, v, dl, three ? NULL : &ml);
                }
    }
    return k;
}

/* IQ4_XS: sub-block j of 32 as an IQ4_NL block, its levels times d·(scale − 32). */
__attribute__((target("avx2,f16c"))) static size_t iq4_xs_avx2(float *out, const unsigned char *b, size_t n)
{
    size_t k = 0;
    for (; k + 256 <= n; k += 256, b += 136)
        for (int j = 0; j < 8; j++, out += 32) {
            __m256 v[4];
            lx_ql_levels32_avx2(v, b + 8 + 16 * j, lx_ql_iq4_levels, f16_at(b) * (float)(lx_ql_iq4xs_scale(b, j) - 32));
            for (int g = 0; g < 4; g++)
                _mm256_storeu_ps(out + 8 * g, v[g]);
        }
    return k;
}

static int lanes8_forced;   /* lx_half_lanes(8): the 8 lanes on an AVX-512 CPU too */

static int has_avx2(void)
{
    static int v = -1;
    if (v < 0)
        v = __builtin_cpu_supports("avx2");     /* F16C: every AVX2 CPU (clang cannot ask) */
    return v;
}

int lx_half_lanes(int lanes)
{
    lanes8_forced = lanes == 8;
    return has_avx512() && !lanes8_forced ? 16 : has_avx2() ? 8 : 0;
}

/* The values of n done in 8 lanes (whole blocks of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K to
** Q6_K and IQ4_XS), 0 for the others; on a CPU with AVX2 and F16C only. */
__attribute__((target("avx2,f16c"))) static size_t quant_avx2(float *out, const void *src, int t, size_t n)
{
    switch (t) {
    case LX_DT_Q8_0: case LX_DT_Q4_0: case LX_DT_IQ4_NL: case LX_DT_Q4_1: case LX_DT_Q5_0: case LX_DT_Q5_1:
        return w32_avx2(out, src, n, t);
    case LX_DT_Q4_K: return qk_4_5_avx2(out, src, n, 0);
    case LX_DT_Q5_K: return qk_4_5_avx2(out, src, n, 1);
    case LX_DT_Q6_K: return q6_k_avx2(out, src, n);
    case LX_DT_Q2_K: return q_k_2_3_avx2(out, src, n, 0);
    case LX_DT_Q3_K: return q_k_2_3_avx2(out, src, n, 1);
    case LX_DT_IQ4_XS: return iq4_xs_avx2(out, src, n);
    default: return 0;
    }
}

/* The values of n done in lanes (whole blocks of the types above), 0 for the others. */
__attribute__((target("avx512f,avx512bw,avx512vl,f16c"))) static size_t quant_avx512(float *out, const void *src, int t,
                                                                                     size_t n)
{
    switch (t) {
    case LX_DT_Q8_0: return w32_avx512(out, src, n, LX_QL_Q8_0);
    case LX_DT_Q4_0: return w32_avx512(out, src, n, LX_QL_Q4_0);
    case LX_DT_IQ4_NL: return w32_avx512(out, src, n, LX_QL_IQ4_NL);
    case LX_DT_Q4_1: return w32_avx512(out, src, n, LX_QL_Q4_1);
    case LX_DT_Q5_0: return w32_avx512(out, src, n, LX_QL_Q5_0);
    case LX_DT_Q5_1: return w32_avx512(out, src, n, LX_QL_Q5_1);
    case LX_DT_Q4_K: return qk_4_5_avx512(out, src, n, 0);
    case LX_DT_Q5_K: return qk_4_5_avx512(out, src, n, 1);
    case LX_DT_Q6_K: return q6_k_avx512(out, src, n);
    case LX_DT_IQ4_XS: return iq4_xs_avx512(out, src, n);
    case LX_DT_Q2_K: return q_k_2_3_avx512(out, src, n, 0);
    case LX_DT_Q3_K: return q_k_2_3_avx512(out, src, n, 1);
    default: return 0;
    }
}

void lx_half_to_f32(float *out, const void *src, int t, size_t n)
{
    const int iq = t >= LX_DT_LANES_N;  /* the codebook and ternary types: 8 lanes at most */
    size_t done = t < LX_DT_Q8_0       ? 0
                  : iq && has_avx2()               ? lx_iq_to_f32_avx2(out, src, t - LX_DT_IQ2_XXS, n)
                  : iq                             ? 0
                  : has_avx512() && !lanes8_forced ? quant_avx512(out, src, t, n)
                  : has_avx2()                     ? quant_avx2(out, src, t, n)
                                                   : 0;
    lx_half_to_f32_scalar(out + done, (const char *)src + lx_dtype_bytes(t, done), t, n - done);
}

/* Eight half values at a time (exact both ways: bf16 a shift, f16 by F16C's vcvtph2ps); the rest
** left to the scalar loop. */
__attribute__((target("avx2,f16c"))) static size_t half_to_f32_avx2(float *out, const uint16_t *s, size_t n, int t)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, lx_ql_half8(s + i, t == LX_DT_BF16));
    return i;
}

void lx_half_to_f32_scalar(float *out, const void *src, int t, size_t n)
{
    const uint16_t *s = src;
    size_t i = 0;
    if (t == LX_DT_F32) {
        memcpy(out, src, 4 * n);
        return;
    }
    if (t >= LX_DT_Q8_0) {  /* blocks, dequantized as llama.cpp's formats define them */
        if (t >= LX_DT_LANES_N)
            lx_iq_to_f32(out, src, t - LX_DT_IQ2_XXS, n);
        else if (t == LX_DT_Q8_0)
            q8_0_to_f32(out, src, n);
        else if (t == LX_DT_Q4_0 || t == LX_DT_IQ4_NL)
            q4_nl_to_f32(out, src, n, t);
        else if (t == LX_DT_Q6_K)
            q6_k_to_f32(out, src, n);
        else if (t == LX_DT_Q4_1 || t == LX_DT_Q5_0 || t == LX_DT_Q5_1)
            q_32_to_f32(out, src, n, t);
        else if (t == LX_DT_IQ4_XS)
            iq4_xs_to_f32(out, src, n);
        else if (t == LX_DT_Q2_K || t == LX_DT_Q3_K)
            q_k_2_3_to_f32(out, src, n, t == LX_DT_Q3_K);
        else
            qk_4_5_to_f32(out, src, n, t == LX_DT_Q5_K);
        return;
    }
    if (has_avx512())
        i = t == LX_DT_BF16 ? bf16_to_f32_avx512(out, s, n) : f16_to_f32_avx512(out, s, n);
    else if (has_avx2())
        i = half_to_f32_avx2(out, s, n, t);
    for (; i < n; i++)
        out[i] = t == LX_DT_BF16 ? lx_bf16_to_f32(s[i]) : lx_f16_to_f32(s[i]);
}

/* Round to nearest even in integers, as lx_f32_to_bf16 (NaNs by the scalar loop's rule). */
__attribute__((target("avx512f,avx512bw"), always_inline)) static inline __m512i bf16_lanes(const float *x)
{
    const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x400000);
    __m512 f = _mm512_loadu_ps(x);
    __m512i u = _mm512_castps_si512(f);
    __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(bias, _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
    return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(u, quiet));
}

__attribute__((target("avx512f,avx512bw")))
static size_t f32_to_bf16_avx512(uint16_t *out, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(out + i), _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_lanes(x + i), 16)));
    return i;
}

__attribute__((target("avx512f,avx512bw")))
static size_t f32_to_bf16_pairs_avx512(uint16_t *out, const float *a, const float *b, size_t n)
{
    size_t i = 0;
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    for (; i + 16 <= n; i += 16) {
        __m512i lo = _mm512_srli_epi32(bf16_lanes(a + i), 16);
        __m512i w = b ? _mm512_or_si512(lo, _mm512_and_si512(bf16_lanes(b + i), hi)) : lo;
        _mm512_storeu_si512(out + 2 * i, w);
    }
    return i;
}

void lx_f32_to_bf16_pairs(uint16_t *out, const float *a, const float *b, size_t n)
{
    size_t i = has_avx512() ? f32_to_bf16_pairs_avx512(out, a, b, n) : 0;
    for (; i < n; i++) {
        out[2 * i] = lx_f32_to_bf16(a[i]);
        out[2 * i + 1] = b ? lx_f32_to_bf16(b[i]) : 0;
    }
}

void lx_f32_to_bf16_n(uint16_t *out, const float *src, size_t n)
{
    size_t i = has_avx512() ? f32_to_bf16_avx512(out, src, n) : 0;
    for (; i < n; i++)
        out[i] = lx_f32_to_bf16(src[i]);
}

void lx_to_bf16(uint16_t *out, const void *src, int t, size_t n)
{
    if (t == LX_DT_BF16) {
        memcpy(out, src, 2 * n);
    } else if (t == LX_DT_F32) {
        lx_f32_to_bf16_n(out, src, n);
    } else {
        float buf[256];
        for (size_t i = 0; i < n; i += 256) {
            size_t k = n - i < 256 ? n - i : 256;
            lx_half_to_f32(buf, (const char *)src + lx_dtype_bytes(t, i), t, k);
            lx_f32_to_bf16_n(out + i, buf, k);
        }
    }
}

__attribute__((target("avx512f,avx512bw"))) static size_t round_bf16_avx512(float *x, size_t n)
{
    size_t i = 0;
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_si512(x + i, _mm512_and_si512(bf16_lanes(x + i), hi));
    return i;
}

/* The same in 8 lanes: bf16_lanes' integers and NaN rule. */
__attribute__((target("avx2"))) static size_t round_bf16_avx2(float *x, size_t n)
{
    const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x400000),
                  hi = _mm256_set1_epi32((int)0xffff0000u);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 f = _mm256_loadu_ps(x + i);
        const __m256i u = _mm256_castps_si256(f), nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q)),
                      r = _mm256_add_epi32(u, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(u, 16), one))),
                      w = _mm256_blendv_epi8(r, _mm256_or_si256(u, quiet), nan);
        _mm256_storeu_ps(x + i, _mm256_castsi256_ps(_mm256_and_si256(w, hi)));
    }
    return i;
}

void lx_round_bf16_n(float *x, size_t n)
{
    size_t i = has_avx512() ? round_bf16_avx512(x, n) : has_avx2() ? round_bf16_avx2(x, n) : 0;
    for (; i < n; i++)
        x[i] = lx_round_bf16(x[i]);
}

/* f16 by F16C's vcvtps2ph, to nearest even as lx_f32_to_f16 (a NaN stays a NaN; its payload bits may differ). */
__attribute__((target("avx512f,avx512bw")))
static size_t round_f16_avx512(float *x, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(x + i, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
    return i;
}

size_t lx_f16_first_over(const float *x, size_t n)
{
    size_t i = 0;
    while (i < n && !(fabsf(x[i]) >= 65520.0f && isfinite(x[i])))
        i++;
    return i;
}

/* The same in 8 lanes (F16C): round_f16_avx512's rounding and NaNs. */
__attribute__((target("avx2,f16c"))) static size_t round_f16_avx2(float *x, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
    return i;
}

void lx_round_half_n(float *x, int t, size_t n)
{
    if (t == LX_DT_BF16) {
        lx_round_bf16_n(x, n);
    } else if (t == LX_DT_F16) {
        size_t i = has_avx512() ? round_f16_avx512(x, n) : has_avx2() ? round_f16_avx2(x, n) : 0;
        for (; i < n; i++)
            x[i] = lx_f16_to_f32(lx_f32_to_f16(x[i]));
    }
}

/* The first i >= 0 of 32 values at a time whose exponent bits (mask) are all set, or n rounded down. */
__attribute__((target("avx512f,avx512bw")))
static size_t scan_half_avx512(const uint16_t *h, size_t n, uint16_t mask)
{
    const __m512i m = _mm512_set1_epi16((short)mask);
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        if (_mm512_cmpeq_epi16_mask(_mm512_and_si512(_mm512_loadu_si512(h + i), m), m))
            break;
    return i;
}

long lx_half_first_nonfinite(const void *src, int t, size_t n)
{
    if (t >= LX_DT_Q8_0) {  /* the f16 scales (d, and the min's scale where there is one): the integers are finite */
        const unsigned char *b = src;
        size_t nb = lx_dtype_block_bytes(t), bv = lx_dtype_block(t);
        int at0 = lx_dtype_scale_at(t, 0), at1 = lx_dtype_scale_at(t, 1);
        for (size_t k = 0; k < n; k += bv, b += nb) {
            uint16_t d0 = t == LX_DT_IQ1_M ? lx_iq1m_d(b) : 0, d1 = 0;
            if (at0 >= 0)
                memcpy(&d0, b + at0, 2);
            if (at1 >= 0)
                memcpy(&d1, b + at1, 2);
            if ((d0 & 0x7c00) == 0x7c00 || (d1 & 0x7c00) == 0x7c00)
                return (long)k;
        }
        return -1;
    }
    const uint16_t *h = src;
    const uint32_t *f = src;
    size_t i0 = t != LX_DT_F32 && has_avx512() ? scan_half_avx512(h, n, t == LX_DT_BF16 ? 0x7f80 : 0x7c00) : 0;
    for (size_t i = i0; i < n; i++) {
        int bad = t == LX_DT_F32 ? (f[i] & 0x7f800000u) == 0x7f800000u
                                 : t == LX_DT_BF16 ? (h[i] & 0x7f80) == 0x7f80 : (h[i] & 0x7c00) == 0x7c00;
        if (bad)
            return (long)i;
    }
    return -1;
}
