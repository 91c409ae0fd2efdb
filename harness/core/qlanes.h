/*
** harness/core/qlanes.h - GGUF's quantized blocks in AVX-512 lanes, shared
** by the dequantizing lanes (half.c) and the dots that read the blocks
** directly (harness/engine/kernels/qdot.c): the integers' unpacking, and the
** scales and weights made by the block-by-block reference's products in its
** order (one rounding each; both files are built with -ffp-contract=off), so
** both give the reference's bits. Also eight half values widened in AVX2
** lanes (lx_ql_half8), and sixteen in AVX-512 (lx_ql_half16), for half.c and a
** decoding step's half-cache products.
*/
#ifndef LX_QLANES_H
#define LX_QLANES_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define LX_QLANES __attribute__((target("avx512f,avx512bw,avx512vl,f16c"), always_inline)) static inline

/* The f16 at p, exactly (as lx_f16_to_f32), by F16C (alone, so that the 8-lane code inlines it too). */
__attribute__((target("f16c"), always_inline)) static inline float lx_ql_f16(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

/* Eight half values at p (bf16 when bf16, else f16) as floats, exactly (bf16 a shift, f16 F16C's
** vcvtph2ps): half.c's widening and the decoding step's products on a half KV cache (decode.c). */
__attribute__((target("avx2,f16c"), always_inline)) static inline __m256 lx_ql_half8(const uint16_t *p, int bf16)
{
    const __m128i h = _mm_loadu_si128((const __m128i *)p);
    return bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
}

/* Sixteen half values at p as floats, exactly: lx_ql_half8 in AVX-512 lanes (a decoding step's products,
** stepdot.c). */
LX_QLANES __m512 lx_ql_half16(const uint16_t *p, int bf16)
{
    const __m256i h = _mm256_loadu_si256((const __m256i *)p);
    return bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h);
}

/* 16 bytes to 16 floats: unsigned, or signed. */
LX_QLANES __m512 lx_ql_u8_ps(__m128i b)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b));
}

LX_QLANES __m512 lx_ql_i8_ps(__m128i b)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
}

/* The 8 bytes of v (lowest first) to 8 floats. */
LX_QLANES __m256 lx_ql_u8x8_ps(uint64_t v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)v)));
}

/* Q4_K / Q5_K: the 6-bit scales and mins of a super-block's 8 sub-blocks (the
** 12 bytes at s, as half.c's scale_min_k reads them): as bytes (sc_j, m_j byte j,
** lx_ql_k_scales_u8), or as floats times d and dmin: d·sc_j and
** dmin·m_j in lane j, rounded once each as the scalar products are. Bytes
** 0-3 hold sc_0..3 (low 6 bits), 4-7 m_0..3, 8-11 the low 4 bits of
** sc_4..7 and m_4..7 (nibbles); the top 2 bits of bytes 0-3 and 4-7 are the
** high bits of sc_4..7 and m_4..7. */
static inline void lx_ql_k_scales_u8(const unsigned char *s, uint64_t *sc, uint64_t *m)
{
    uint32_t w0, w1, w2;
    memcpy(&w0, s, 4), memcpy(&w1, s + 4, 4), memcpy(&w2, s + 8, 4);
    *sc = (uint64_t)(w0 & 0x3f3f3f3fu) | (uint64_t)((w2 & 0x0f0f0f0fu) | ((w0 >> 2) & 0x30303030u)) << 32;
    *m = (uint64_t)(w1 & 0x3f3f3f3fu) | (uint64_t)(((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 2) & 0x30303030u)) << 32;
}

LX_QLANES void lx_ql_k_scales(const unsigned char *s, float d, float dmin, __m256 *dsc, __m256 *dm)
{
    uint64_t sc, m;
    lx_ql_k_scales_u8(s, &sc, &m);
    *dsc = _mm256_mul_ps(_mm256_set1_ps(d), lx_ql_u8x8_ps(sc));
    *dm = _mm256_mul_ps(_mm256_set1_ps(dmin), lx_ql_u8x8_ps(m));
}

/* Q4_K / Q5_K: the q of 16 values of sub-blocks is and is + 1 (is even) from
** the 16 nibble bytes at q (low nibbles: sub-block is; high: is + 1) and,
** for Q5_K, the fifth bits: bits is and is + 1 of the 16 bytes at qh. */
LX_QLANES void lx_ql_q45(const unsigned char *q, const unsigned char *qh, int is, int five, __m128i *lo, __m128i *hi)
{
    const __m128i low = _mm_set1_epi8(0x0f), one = _mm_set1_epi8(1);
    __m128i qb = _mm_loadu_si128((const __m128i *)q);
    *lo = _mm_and_si128(qb, low), *hi = _mm_and_si128(_mm_srli_epi16(qb, 4), low);
    if (five) {
        __m128i hb = _mm_loadu_si128((const __m128i *)qh);
        *lo = _mm_or_si128(*lo, _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hb, is), one), 4));
        *hi = _mm_or_si128(*hi, _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hb, is + 1), one), 4));
    }
}

/* Q6_K: the 16 d·sc of super-block b (int8 scales at 192, f16 d at 208), each rounded once as the
** scalar product is. */
LX_QLANES void lx_ql_q6_scales(const unsigned char *b, float *dsc)
{
    _mm512_storeu_ps(dsc, _mm512_mul_ps(_mm512_set1_ps(lx_ql_f16(b + 208)),
                                        lx_ql_i8_ps(_mm_loadu_si128((const __m128i *)(b + 192)))));
}

/* Q6_K: the signed q − 32 of values 32j + 16g + l (l < 16) of a half of
** 128, from a = the 16 bytes at the half's low nibbles + 16g and c = the 16
** after them + 32 (low nibbles for j < 2, high after; j odd: c) and h = the
** 16 at its high bits + 16g (bits 2j, 2j + 1). */
LX_QLANES __m128i lx_ql_q6(__m128i a, __m128i c, __m128i h, int j)
{
    const __m128i low = _mm_set1_epi8(0x0f), three = _mm_set1_epi8(3), bias = _mm_set1_epi8(32);
    __m128i v = j & 1 ? c : a;
    v = _mm_and_si128(j < 2 ? v : _mm_srli_epi16(v, 4), low);
    return _mm_sub_epi8(_mm_or_si128(v, _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(h, 2 * j), three), 4)), bias);
}

/* The 16 sub-blocks' d·scale (and Q2_K's dmin·min) of a Q2_K or Q3_K
** super-block b in lanes, each rounded once as the scalar products are
** (Q3_K's signed scales alone: lx_ql_q3_scales_i8).
** Q2_K: byte j of the first 16 holds scale j (low nibble) and min j (high).
** Q3_K: the low nibbles of scales 0-7 and 8-15 are the low and high nibbles
** of bytes 96-103, their high two bits bits 2i, 2i + 1 of bytes 104-107 for
** scales 4i … 4i + 3; less 32. */
/* (AVX2 alone, so that the 8-lane dots of qdot8.c take it too) */
__attribute__((target("avx2"), always_inline)) static inline __m128i lx_ql_q3_scales_i8(const unsigned char *b)
{
    /* 32-bit lane i: (i < 2 ? word i : word i − 2 >> 4) & 0x0f0f0f0f | (t >> 2i & 0x03030303) << 4 */
    uint32_t t;
    memcpy(&t, b + 104, 4);
    const __m128i lo = _mm_loadl_epi64((const __m128i *)(b + 96)),
                  nib = _mm_and_si128(_mm_unpacklo_epi64(lo, _mm_srli_epi32(lo, 4)), _mm_set1_epi32(0x0f0f0f0f)),
                  top = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32((int)t), _mm_setr_epi32(0, 2, 4, 6)),
                                      _mm_set1_epi32(0x03030303));
    return _mm_sub_epi8(_mm_or_si128(nib, _mm_slli_epi32(top, 4)), _mm_set1_epi8(32));
}

LX_QLANES void lx_ql_k23_scales(const unsigned char *b, int three, float *ds, float *ms)
{
    const __m128i nibble = _mm_set1_epi8(0x0f);
    if (three) {
        _mm512_storeu_ps(ds, _mm512_mul_ps(_mm512_set1_ps(lx_ql_f16(b + 108)), lx_ql_i8_ps(lx_ql_q3_scales_i8(b))));
        return;
    }
    __m128i sc = _mm_loadu_si128((const __m128i *)b);
    _mm512_storeu_ps(ds, _mm512_mul_ps(_mm512_set1_ps(lx_ql_f16(b + 80)), lx_ql_u8_ps(_mm_and_si128(sc, nibble))));
    _mm512_storeu_ps(ms, _mm512_mul_ps(_mm512_set1_ps(lx_ql_f16(b + 82)),
                                       lx_ql_u8_ps(_mm_and_si128(_mm_srli_epi16(sc, 4), nibble))));
}

/* Q2_K / Q3_K: the q of values 128h + 32s + 16g + l (l < 16) of super-block b:
** bits 2s, 2s + 1 of byte 32h + 16g + l of its quants (at b + 16, Q3_K's at
** b + 32); Q3_K's less 4 where bit 4h + s of byte 16g + l of its high-bit
** mask hm (b's first 32 bytes, loaded) is clear (signed then). */
LX_QLANES __m128i lx_ql_q23(const unsigned char *q, const __m128i *hm, int h, int s, int g, int three)
{
    __m128i v = _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128((const __m128i *)(q + 32 * h + 16 * g)), 2 * s),
                              _mm_set1_epi8(3));
    if (!three)
        return v;
    __m128i hb = _mm_and_si128(_mm_srli_epi16(hm[g], 4 * h + s), _mm_set1_epi8(1));
    return _mm_sub_epi8(_mm_or_si128(v, _mm_slli_epi16(hb, 2)), _mm_set1_epi8(4));
}

/* IQ4_NL's 16 levels (the format's non-linear set; IQ4_XS's too), and Q4_0's, q − 8. */
static const int8_t lx_ql_iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
static const int8_t lx_ql_q4_0_levels[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};

/* The 6-bit scale of sub-block j (of 8) of an IQ4_XS super-block b: nibble
** j of bytes 4-7, with bits 2j, 2j + 1 of the 16 high bits (bytes 2-3) above it. */
static inline int lx_ql_iq4xs_scale(const unsigned char *b, int j)
{
    unsigned hi = (unsigned)b[2] | (unsigned)b[3] << 8;
    return ((b[4 + j / 2] >> (4 * (j % 2))) & 0x0f) | (int)((hi >> (2 * j)) & 3) << 4;
}

/* AVX2: the 32 values of the 16 nibble bytes at q (low nibbles values 0-15, high ones 16-31), each
** (float)levels[nibble] · d, in v[0] … v[3]: the 8-lane dequantizing (half.c) and dots (wprod.c). */
__attribute__((target("avx2"), always_inline)) static inline void lx_ql_levels32_avx2(__m256 v[4], const unsigned char *q,
                                                                                    const int8_t *levels, float d)
{
    const __m128i table = _mm_loadu_si128((const __m128i *)levels), low = _mm_set1_epi8(0x0f),
                  qb = _mm_loadu_si128((const __m128i *)q),
                  lo = _mm_shuffle_epi8(table, _mm_and_si128(qb, low)),
                  hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(qb, 4), low));
    const __m128i parts[4] = {lo, _mm_unpackhi_epi64(lo, lo), hi, _mm_unpackhi_epi64(hi, hi)};
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++)
        v[g] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[g])), _mm256_set1_ps(d));
}

/* 16 bytes of nibbles at q: the low nibbles (values 0-15) and the high ones (16-31) in 32-bit lanes. */
LX_QLANES void lx_ql_nibbles(const unsigned char *q, __m512i *lo, __m512i *hi)
{
    const __m128i low = _mm_set1_epi8(0x0f), qb = _mm_loadu_si128((const __m128i *)q);
    *lo = _mm512_cvtepu8_epi32(_mm_and_si128(qb, low));
    *hi = _mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(qb, 4), low));
}

/* 16 int8 levels as 16 float lanes, read through by _mm512_permutexvar_ps. */
LX_QLANES __m512 lx_ql_levels_ps(const int8_t *levels)
{
    return lx_ql_i8_ps(_mm_loadu_si128((const __m128i *)levels));
}

/* The types of 32-value blocks (kinds of lx_ql_w32: half.h's types are not
** included here, half.c including this file) and their blocks' bytes. */
enum { LX_QL_Q8_0, LX_QL_Q4_0, LX_QL_IQ4_NL, LX_QL_Q4_1, LX_QL_Q5_0, LX_QL_Q5_1 };

static inline size_t lx_ql_w32_bytes(int kind)
{
    static const unsigned char bytes[] = {34, 18, 18, 20, 22, 24};
    return bytes[kind];
}

/* A block of Q4_1, Q5_0 or Q5_1 (kind LX_QL_Q4_1 …) in 8 lanes: values 8g … 8g + 7 in v[g] (the
** low nibbles, then the high ones; Q5's fifth bit of value i bit i of the 32-bit word), q·d + m,
** or (q − 16)·d for Q5_0: the scalar loop's operations (q_32_to_f32), lane by lane. */
__attribute__((target("avx2,f16c"), always_inline)) static inline void lx_ql_w32_min_avx2(__m256 v[4],
                                                                                        const unsigned char *b,
                                                                                        int kind)
{
    const int five = kind != LX_QL_Q4_1, min = kind != LX_QL_Q5_0;
    const __m256 d = _mm256_set1_ps(lx_ql_f16(b)), m = _mm256_set1_ps(min ? lx_ql_f16(b + 2) : 0.0f);
    const unsigned char *nib = b + (min ? 4 : 2) + (five ? 4 : 0);
    const __m128i low = _mm_set1_epi8(0x0f), qb = _mm_loadu_si128((const __m128i *)nib),
                  lo = _mm_and_si128(qb, low), hi = _mm_and_si128(_mm_srli_epi16(qb, 4), low);
    const __m128i parts[4] = {lo, _mm_unpackhi_epi64(lo, lo), hi, _mm_unpackhi_epi64(hi, hi)};
    uint32_t h = 0;
    if (five)
        memcpy(&h, b + (min ? 4 : 2), 4);
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), one = _mm256_set1_epi32(1),
                  hv = _mm256_set1_epi32((int)h), sixteen = _mm256_set1_epi32(16);
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
        __m256i q = _mm256_cvtepu8_epi32(parts[g]);
        if (five) {     /* bit 8g + l of h for lane l, shifted to bit 4 */
            __m256i bit = _mm256_srlv_epi32(hv, _mm256_add_epi32(iota, _mm256_set1_epi32(8 * g)));
            q = _mm256_or_si256(q, _mm256_slli_epi32(_mm256_and_si256(bit, one), 4));
        }
        v[g] = min ? _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), d), m)
                   : _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q, sixteen)), d);
    }
}

/* The 32 weights of the block at b of a kind of 32-value blocks (Q8_0,
** Q4_0, IQ4_NL, Q4_1, Q5_0, Q5_1), each made by the block-by-block
** reference's operations in its order (its bits): w[0] values 0-15, w[1]
** 16-31. Q8_0: (float)q · d; Q4_0 and IQ4_NL: level[nibble] · d; Q4_1 and
** Q5_1: (float)q · d + m; Q5_0: (float)(q − 16) · d, the fifth bit of value
** j bit j of the block's 32. */
LX_QLANES void lx_ql_w32(const unsigned char *b, int kind, __m512 w[2])
{
    const __m512 d = _mm512_set1_ps(lx_ql_f16(b));
    if (kind == LX_QL_Q8_0) {
        w[0] = _mm512_mul_ps(lx_ql_i8_ps(_mm_loadu_si128((const __m128i *)(b + 2))), d);
        w[1] = _mm512_mul_ps(lx_ql_i8_ps(_mm_loadu_si128((const __m128i *)(b + 18))), d);
        return;
    }
    __m512i q[2];
    if (kind == LX_QL_Q4_0 || kind == LX_QL_IQ4_NL) {
        const __m512 table = lx_ql_levels_ps(kind == LX_QL_Q4_0 ? lx_ql_q4_0_levels : lx_ql_iq4_levels);
        lx_ql_nibbles(b + 2, &q[0], &q[1]);
        w[0] = _mm512_mul_ps(_mm512_permutexvar_ps(q[0], table), d);
        w[1] = _mm512_mul_ps(_mm512_permutexvar_ps(q[1], table), d);
        return;
    }
    const int five = kind != LX_QL_Q4_1, min = kind != LX_QL_Q5_0;
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                  one = _mm512_set1_epi32(1), sixteen = _mm512_set1_epi32(16);
    lx_ql_nibbles(b + (min ? 4 : 2) + (five ? 4 : 0), &q[0], &q[1]);
    if (five) {
        uint32_t h;
        memcpy(&h, b + (min ? 4 : 2), 4);
        const __m512i hv = _mm512_set1_epi32((int)h);
        const __m512i b0 = _mm512_srlv_epi32(hv, iota), b1 = _mm512_srlv_epi32(hv, _mm512_add_epi32(iota, sixteen));
        q[0] = _mm512_or_si512(q[0], _mm512_slli_epi32(_mm512_and_si512(b0, one), 4));
        q[1] = _mm512_or_si512(q[1], _mm512_slli_epi32(_mm512_and_si512(b1, one), 4));
    }
    const __m512 m = _mm512_set1_ps(min ? lx_ql_f16(b + 2) : 0.0f);
    for (int i = 0; i < 2; i++)
        w[i] = min ? _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(q[i]), d), m)
                   : _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(q[i], sixteen)), d);
}

/* IQ4_XS: the 32 weights of sub-block j of super-block b, (d·(scale − 32))·level, laid out as IQ4_NL's. */
LX_QLANES void lx_ql_iq4xs_w32(const unsigned char *b, int j, __m512 w[2])
{
    const __m512 table = lx_ql_levels_ps(lx_ql_iq4_levels),
                 dl = _mm512_set1_ps(lx_ql_f16(b) * (float)(lx_ql_iq4xs_scale(b, j) - 32));
    __m512i q[2];
    lx_ql_nibbles(b + 8 + 16 * j, &q[0], &q[1]);
    w[0] = _mm512_mul_ps(_mm512_permutexvar_ps(q[0], table), dl);
    w[1] = _mm512_mul_ps(_mm512_permutexvar_ps(q[1], table), dl);
}

#endif
