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

#endif
