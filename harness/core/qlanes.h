/*
** harness/core/qlanes.h - the integers of GGUF's quantized blocks in AVX-512
** lanes, shared by the dequantizing lanes (half.c) and the dots that read
** the blocks directly (harness/engine/kernels/qdot.c). Only integer steps and
** exact conversions: no rounding happens here.
*/
#ifndef LX_QLANES_H
#define LX_QLANES_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define LX_QLANES __attribute__((target("avx512f,avx512bw,avx512vl,f16c"), always_inline)) static inline

/* The f16 at p, exactly (as lx_f16_to_f32), by F16C. */
LX_QLANES float lx_ql_f16(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
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
** 12 bytes at s, as half.c's scale_min_k reads them) as floats, times d and dmin: d·sc_j and
** dmin·m_j in lane j, rounded once each as the scalar products are. Bytes
** 0-3 hold sc_0..3 (low 6 bits), 4-7 m_0..3, 8-11 the low 4 bits of
** sc_4..7 and m_4..7 (nibbles); the top 2 bits of bytes 0-3 and 4-7 are the
** high bits of sc_4..7 and m_4..7. */
LX_QLANES void lx_ql_k_scales(const unsigned char *s, float d, float dmin, __m256 *dsc, __m256 *dm)
{
    uint32_t w0, w1, w2;
    memcpy(&w0, s, 4), memcpy(&w1, s + 4, 4), memcpy(&w2, s + 8, 4);
    const uint64_t sc = (uint64_t)(w0 & 0x3f3f3f3fu) |
                        (uint64_t)((w2 & 0x0f0f0f0fu) | ((w0 >> 2) & 0x30303030u)) << 32,
                   m = (uint64_t)(w1 & 0x3f3f3f3fu) |
                       (uint64_t)(((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 2) & 0x30303030u)) << 32;
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
** super-block b in lanes, each rounded once as the scalar products are.
** Q2_K: byte j of the first 16 holds scale j (low nibble) and min j (high).
** Q3_K: the low nibbles of scales 0-7 and 8-15 are the low and high nibbles
** of bytes 96-103, their high two bits bits 2i, 2i + 1 of bytes 104-107 for
** scales 4i … 4i + 3; less 32. */
LX_QLANES void lx_ql_k23_scales(const unsigned char *b, int three, float *ds, float *ms)
{
    const __m128i nibble = _mm_set1_epi8(0x0f);
    if (three) {
        uint32_t lo[2], t, w[4];
        memcpy(lo, b + 96, 8), memcpy(&t, b + 104, 4);
        for (int i = 0; i < 4; i++)
            w[i] = ((i < 2 ? lo[i] : lo[i - 2] >> 4) & 0x0f0f0f0fu) | ((t >> 2 * i) & 0x03030303u) << 4;
        __m128i sc = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)w), _mm_set1_epi8(32));
        _mm512_storeu_ps(ds, _mm512_mul_ps(_mm512_set1_ps(lx_ql_f16(b + 108)), lx_ql_i8_ps(sc)));
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

#endif
