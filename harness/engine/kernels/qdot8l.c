/*
** harness/engine/kernels/qdot8l.c - qdot8.c's integer dots in 8 lanes (AVX2, FMA,
** F16C), for a CPU without AVX-512 VNNI, and the IQ1-IQ3 codebook types' on any.
** Each of qdot8.c's 16-lane registers is two 8-lane halves here, every lane given the
** same operations in the same order, and the 16 lanes summed in GCC's
** _mm512_reduce_add_ps tree: the bits of the AVX-512 dots. vpdpbusd's exact
** sums of 4 products u·q are vpmaddubsw's pairs then vpmaddwd's: exact while
** u ≤ 127 (|q| ≤ 127, a pair at most 32,258). Q8_0's and the IQ4s' codes reach
** 255: their chunks hold w = u − 128 instead, and Σ u·q = Σ w·q + 128 Σ q
** (|w| ≤ 128, a pair at most 32,512; Σ q per 4 values from lx_qdot8_prep),
** each exact. Every quantized type but TQ1_0 and TQ2_0 has its 8-lane dots,
** the codebook types with signed u (chunk8_iq).
*/
#include "harness/engine/kernels/qdot8.h"

#include <immintrin.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/iquant.h"
#include "harness/core/lx.h"
#include "harness/core/qlanes.h"

#define QD8L __attribute__((target("avx2,fma,f16c"), always_inline)) static inline

/* u[j] the codes of values 32j … 32j + 31 of a chunk (Q8_0's and IQ4_NL's
** less 128; IQ4_XS's too), ae[j] a per 4 of them (or ie[j] the integer scale
** in each 16-bit half of the 8 lanes), bv[h] b per 16 values 128h …: the
** halves of qdot8.c's struct chunk's registers. */
struct chunk8 {
    __m256i u[8], ie[8], sg[8];     /* sg: the codebook types' signs of u (their u the magnitudes) */
    __m256 ae[8], bv[2];
    float d;
};

/* The 32 nibbles of the 16 bytes at p: the low ones (values 0-15), then the high ones. */
QD8L __m256i nibbles8(const unsigned char *p)
{
    const __m128i b = _mm_loadu_si128((const __m128i *)p), low = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), low), _mm_and_si128(b, low));
}

/* Byte j: −1 (all bits) where bit j of h is set, else 0. */
QD8L __m256i bits_set8(uint32_t h)
{
    const __m256i byte_of = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3,
                                             3, 3, 3, 3, 3, 3, 3),
                  bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    return _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)h), byte_of), bit), bit);
}

/* Byte j: 16 where bit j of h is set, else 0. */
QD8L __m256i fifth_bits8(uint32_t h)
{
    return _mm256_and_si256(bits_set8(h), _mm256_set1_epi8(16));
}

/* The 8 lanes (4 values each) of values 32j … 32j + 31 from a scale per 16 values, in both 16-bit
** halves of each lane: sc[2j] in lanes 0-3, then sc[2j + 1]. */
QD8L __m256i per16_lanes8(const int8_t *sc, int j)
{
    return _mm256_set_m128i(_mm_set1_epi16(sc[2 * j + 1]), _mm_set1_epi16(sc[2 * j]));
}

/* Eight 32-value blocks (lx_ql_w32's kinds): block j is u[j], its d ae[j]. */
QD8L void chunk8_w32(struct chunk8 *k, const unsigned char *p, int kind)
{
    static const float zs[] = {128.0f, 8.0f, 128.0f, 0.0f, 16.0f, 0.0f};   /* as chunk_w32's */
    const size_t bytes = lx_ql_w32_bytes(kind);
    const int min = kind == LX_QL_Q4_1 || kind == LX_QL_Q5_1, five = kind == LX_QL_Q5_0 || kind == LX_QL_Q5_1;
    const size_t at = 2 + 2 * (size_t)min + 4 * (size_t)five;
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)lx_ql_iq4_levels));
    float bs[16];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        const unsigned char *b = p + (size_t)j * bytes;
        const float d = lx_ql_f16(b);
        __m256i v;
        if (kind == LX_QL_Q8_0) {
            v = _mm256_loadu_si256((const __m256i *)(b + 2));
        } else {
            v = nibbles8(b + at);
            if (kind == LX_QL_IQ4_NL)
                v = _mm256_shuffle_epi8(levels, v);
            if (five) {
                uint32_t h;
                memcpy(&h, b + 2 + 2 * min, 4);
                v = _mm256_or_si256(v, fifth_bits8(h));
            }
        }
        k->u[j] = v;
        k->ae[j] = _mm256_set1_ps(d);
        bs[2 * j] = bs[2 * j + 1] = min ? lx_ql_f16(b + 2) : -zs[kind] * d;
    }
    k->bv[0] = _mm256_loadu_ps(bs), k->bv[1] = _mm256_loadu_ps(bs + 8);
}

/* Q4_K / Q5_K: sub-block s is the low (s even) or high nibbles of the 32
** bytes of pair s / 2, Q5_K's fifth bit bit s of the 32 high-bit bytes. */
QD8L void chunk8_q45(struct chunk8 *k, const unsigned char *p, int five)
{
    const unsigned char *q = p + (five ? 48 : 16);
    const __m256i low = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1),
                  hb = _mm256_loadu_si256((const __m256i *)(p + 16));
    uint64_t sc, mn;
    lx_ql_k_scales_u8(p + 4, &sc, &mn);
#pragma GCC unroll 8
    for (int s = 0; s < 8; s++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(q + 32 * (s / 2)));
        v = _mm256_and_si256(s & 1 ? _mm256_srli_epi16(v, 4) : v, low);
        if (five)
            v = _mm256_or_si256(v, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, s), one), 4));
        k->u[s] = v;
        k->ie[s] = _mm256_set1_epi16((short)(sc >> (8 * s) & 0xff));
    }
    k->d = lx_ql_f16(p);
    const __m256 dm = _mm256_mul_ps(_mm256_set1_ps(lx_ql_f16(p + 2)),
                                    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)mn)))),
                 nb = _mm256_sub_ps(_mm256_setzero_ps(), dm);
    k->bv[0] = _mm256_permutevar8x32_ps(nb, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    k->bv[1] = _mm256_permutevar8x32_ps(nb, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7));
}

/* Q6_K: values 128h + 64m + 32e + l are the low (m = 0) or high nibbles of
** byte 64h + 32e + l of the low bits, with bits 4m + 2e, 4m + 2e + 1 of
** byte 32h + l of the high bits above them; a scale per 16 values. */
QD8L void chunk8_q6(struct chunk8 *k, const unsigned char *p)
{
    const __m256i low = _mm256_set1_epi8(0x0f), three = _mm256_set1_epi8(3);
    const int8_t *sc = (const int8_t *)(p + 192);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        const int h = j / 4, m = j / 2 % 2, e = j % 2;
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + 64 * h + 32 * e)),
                hi = _mm256_loadu_si256((const __m256i *)(p + 128 + 32 * h));
        v = _mm256_and_si256(m ? _mm256_srli_epi16(v, 4) : v, low);
        hi = _mm256_and_si256(_mm256_srli_epi16(hi, 4 * m + 2 * e), three);
        k->u[j] = _mm256_or_si256(v, _mm256_slli_epi16(hi, 4));
        k->ie[j] = per16_lanes8(sc, j);
    }
    k->d = lx_ql_f16(p + 208);
    for (int h = 0; h < 2; h++)
        k->bv[h] = _mm256_mul_ps(_mm256_set1_ps(-32.0f),
                                 _mm256_mul_ps(_mm256_set1_ps(k->d), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                                                         _mm_loadl_epi64((const __m128i *)(sc + 8 * h))))));
}

/* Q2_K / Q3_K: values 32j + l (j = 4h + s) are bits 2s, 2s + 1 of byte 32h + l of the quants and,
** for Q3_K, bit 4h + s of high-mask byte l above them (u = q + 4 where set); a scale per 16 values. */
QD8L void chunk8_q23(struct chunk8 *k, const unsigned char *p, int three)
{
    const unsigned char *q = p + (three ? 32 : 16);
    const __m256i hm = _mm256_loadu_si256((const __m256i *)p);
    int8_t sc[16];
    if (three)
        _mm_storeu_si128((__m128i *)sc, lx_ql_q3_scales_i8(p));
    else
        for (int g = 0; g < 16; g++)
            sc[g] = (int8_t)(p[g] & 0x0f);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        const int h = j / 4, s = j % 4;
        __m256i v = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)(q + 32 * h)), 2 * s),
                                     _mm256_set1_epi8(3));
        if (three)
            v = _mm256_or_si256(v, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + s),
                                                                      _mm256_set1_epi8(1)), 2));
        k->u[j] = v;
        k->ie[j] = per16_lanes8(sc, j);
    }
    k->d = lx_ql_f16(p + (three ? 108 : 80));
    for (int h = 0; h < 2; h++) {
        const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(sc + 8 * h))));
        if (three)
            k->bv[h] = _mm256_mul_ps(_mm256_set1_ps(-4.0f), _mm256_mul_ps(_mm256_set1_ps(k->d), v));
        else    /* the mins: the high nibbles */
            k->bv[h] = _mm256_mul_ps(_mm256_set1_ps(-lx_ql_f16(p + 82)),
                                     _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_epi16(
                                         _mm_and_si128(_mm_loadl_epi64((const __m128i *)(p + 8 * h)),
                                                       _mm_set1_epi8((char)0xf0)), 4))));
    }
}

/* IQ4_XS: sub-block j as an IQ4_NL block (its levels, less 128 as wide codes are), its integer
** scale sc − 32 (times d), b = −128·(d·(sc − 32)). */
QD8L void chunk8_iq4xs(struct chunk8 *k, const unsigned char *p)
{
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)lx_ql_iq4_levels));
    float bs[16];
    k->d = lx_ql_f16(p);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        const int sc = lx_ql_iq4xs_scale(p, j) - 32;
        k->u[j] = _mm256_shuffle_epi8(levels, nibbles8(p + 8 + 16 * j));
        k->ie[j] = _mm256_set1_epi16((short)sc);
        bs[2 * j] = bs[2 * j + 1] = -128.0f * (k->d * (float)sc);
    }
    k->bv[0] = _mm256_loadu_ps(bs), k->bv[1] = _mm256_loadu_ps(bs + 8);
}

/* The codebook types (IQ1-IQ3): value 32j + 8k + l of sub-block j's group k is (d·unit)·is·u
** (iqlanes.h), u's magnitude from the entry's bytes, its sign from the sign bytes (IQ1: from
** 8·level ± 1 itself); is per 16 values; no offset. */
QD8L void chunk8_iq(struct chunk8 *k, const unsigned char *p, int kind)
{
    const int8_t *book;
    const uint64_t *sb;
    lx_iq_byte_tables(kind, &book, &sb);
    const int family = lx_iq_family(kind);
    k->d = lx_iq_block_d(kind, p) * lx_iq_unit(kind);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        struct lx_iq_group g[4];
        lx_iq_decode(kind, g, p, 0.0f, j);
        uint64_t e[4], sg[4];
#pragma GCC unroll 4
        for (int l = 0; l < 4; l++) {
            if (family == LX_IQ_SIGNED4X2) {
                uint32_t a, b;
                memcpy(&a, book + 4 * g[l].a, 4), memcpy(&b, book + 4 * g[l].b, 4);
                e[l] = a | (uint64_t)b << 32;
            } else
                memcpy(&e[l], book + 8 * g[l].a, 8);
            sg[l] = family == LX_IQ_DELTA8 ? (g[l].delta < 0.0f ? ~0ULL : 0x0101010101010101ULL)   /* IQ1: the delta */
                                           : sb[g[l].signs];
        }
        __m256i u = _mm256_setr_epi64x((long long)e[0], (long long)e[1], (long long)e[2], (long long)e[3]), v;
        if (kind == LX_IQ3_S || kind == LX_IQ2_S)    /* the 4 sign bytes as they are stored: −1 or 1 */
            v = _mm256_or_si256(bits_set8(lx_iq_u32(p + (kind == LX_IQ3_S ? 74 : 34) + 4 * j)), _mm256_set1_epi8(1));
        else
            v = _mm256_setr_epi64x((long long)sg[0], (long long)sg[1], (long long)sg[2], (long long)sg[3]);
        if (family == LX_IQ_DELTA8)     /* 8·level ± 1: never 0 */
            u = _mm256_add_epi8(u, v), v = u, u = _mm256_abs_epi8(u);
        k->u[j] = u, k->sg[j] = v;
        k->ie[j] = _mm256_set_m128i(_mm_set1_epi16((short)g[2].is), _mm_set1_epi16((short)g[0].is));
    }
    k->bv[0] = k->bv[1] = _mm256_setzero_ps();
}

QD8L void chunk8_of(struct chunk8 *k, const unsigned char *w, int type)
{
    if (type >= LX_DT_IQ2_XXS) {
        chunk8_iq(k, w, type - LX_DT_IQ2_XXS);
        return;
    }
    switch (type) {
    case LX_DT_Q2_K: chunk8_q23(k, w, 0); break;
    case LX_DT_Q3_K: chunk8_q23(k, w, 1); break;
    case LX_DT_IQ4_XS: chunk8_iq4xs(k, w); break;
    case LX_DT_Q4_K: chunk8_q45(k, w, 0); break;
    case LX_DT_Q5_K: chunk8_q45(k, w, 1); break;
    case LX_DT_Q6_K: chunk8_q6(k, w); break;
    case LX_DT_Q8_0: chunk8_w32(k, w, LX_QL_Q8_0); break;
    case LX_DT_Q4_0: chunk8_w32(k, w, LX_QL_Q4_0); break;
    case LX_DT_IQ4_NL: chunk8_w32(k, w, LX_QL_IQ4_NL); break;
    case LX_DT_Q4_1: chunk8_w32(k, w, LX_QL_Q4_1); break;
    case LX_DT_Q5_0: chunk8_w32(k, w, LX_QL_Q5_0); break;
    default: chunk8_w32(k, w, LX_QL_Q5_1); break;
    }
}

/* Per 4 values, Σ u·q of 32 codes u and 32 q, exact; wide: u holds w = u − 128, q4 the Σ q. */
QD8L __m256i sums4(__m256i u, const int8_t *q, const int32_t *q4, int wide)
{
    const __m256i ones = _mm256_set1_epi16(1), qv = _mm256_loadu_si256((const __m256i *)q);
    if (!wide)
        return _mm256_madd_epi16(_mm256_maddubs_epi16(u, qv), ones);
    return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(u), _mm256_sign_epi8(qv, u)), ones),
                            _mm256_slli_epi32(_mm256_loadu_si256((const __m256i *)q4), 7));
}

/* sums4 times the integer scale in both halves of each lane of ie: vpmaddwd with the scale in
** place of ones multiplies each exact pair sum as it adds them (the same integers as
** vpmulld after sums4, at one instruction fewer). The wide codes' 128·Σq has no 16-bit form.
** sg: the codebook types' signs (|u·q| ≤ 62·127, a pair within 16 bits). */
QD8L __m256i sums4_scaled(__m256i u, const int8_t *q, const int32_t *q4, int wide, __m256i ie, const __m256i *sg)
{
    const __m256i qv = _mm256_loadu_si256((const __m256i *)q);
    if (sg)
        return _mm256_madd_epi16(_mm256_maddubs_epi16(u, _mm256_sign_epi8(qv, *sg)), ie);
    if (!wide)
        return _mm256_madd_epi16(_mm256_maddubs_epi16(u, qv), ie);
    return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(u), _mm256_sign_epi8(qv, u)), ie),
                            _mm256_mullo_epi32(_mm256_slli_epi32(_mm256_loadu_si256((const __m256i *)q4), 7),
                                               _mm256_srai_epi32(ie, 16)));
}

/* dot8_n's sums in 8 lanes: half e of each register; s0, s1 the chains. */
QD8L void dot8l_chunk(__m256 s0[2], __m256 s1[2], const struct chunk8 *ch, const int8_t *qt, const float *lt,
                      const float *gt, const int32_t *st, const int type)
{
    const int wide = type == LX_DT_Q8_0 || type == LX_DT_IQ4_NL || type == LX_DT_IQ4_XS;
#pragma GCC unroll 2
    for (int e = 0; e < 2; e++) {
        if (lx_qdot8_int_scales(type)) {
            __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++)
                acc = _mm256_add_epi32(acc, sums4_scaled(ch->u[2 * r + e], qt + 64 * r + 32 * e, st + 16 * r + 8 * e,
                                                         wide, ch->ie[2 * r + e],
                                                         type >= LX_DT_IQ2_XXS ? &ch->sg[2 * r + e] : NULL));
            s0[e] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(ch->d * lt[0]), s0[e]);
        } else {
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(sums4(ch->u[2 * r + e], qt + 64 * r + 32 * e, st + 16 * r + 8 * e, wide)),
                                               _mm256_loadu_ps(lt + 16 * r + 8 * e));
                if (r & 1)
                    s1[e] = _mm256_fmadd_ps(v, ch->ae[2 * r + e], s1[e]);
                else
                    s0[e] = _mm256_fmadd_ps(v, ch->ae[2 * r + e], s0[e]);
            }
        }
        s1[e] = _mm256_fmadd_ps(ch->bv[e], _mm256_loadu_ps(gt + 8 * e), s1[e]);
    }
}

/* The 16 lanes (lo, hi) summed as _mm512_reduce_add_ps sums them. */
QD8L float reduce16(__m256 lo, __m256 hi)
{
    const __m256 t3 = _mm256_add_ps(hi, lo);
    const __m128 t6 = _mm_add_ps(_mm256_extractf128_ps(t3, 1), _mm256_castps256_ps128(t3)),
                 t8 = _mm_add_ps(t6, _mm_shuffle_ps(t6, t6, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtss_f32(t8) + _mm_cvtss_f32(_mm_shuffle_ps(t8, t8, 1));
}

/* Each type's chunk sets the fields its dots read (ae, or ie and d; sg for the codebook types); GCC
** cannot follow that through the type, a constant in each of lx_qdot8_rows8's cases, and warns. */
#ifndef __clang__
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
QD8L void dot8l_n(float *out, const int8_t *q, const float *xl, const float *xg, const int32_t *q4, const int n,
                  const unsigned char *w, const int type, long C)
{
    const size_t chunk_bytes = lx_dtype_block_bytes(type) * (256 / lx_dtype_block(type));
    __m256 s0[2][2], s1[2][2];
#pragma GCC unroll 2
    for (int t = 0; t < n; t++)
        s0[t][0] = s0[t][1] = s1[t][0] = s1[t][1] = _mm256_setzero_ps();
    for (long k = 0; k < C; k += 256, w += chunk_bytes) {
        struct chunk8 ch;
        chunk8_of(&ch, w, type);
#pragma GCC unroll 2
        for (int t = 0; t < n; t++)
            dot8l_chunk(s0[t], s1[t], &ch, q + t * C + k, xl + t * (C / 4) + k / 4, xg + t * (C / 16) + k / 16,
                        q4 + t * (C / 4) + k / 4, type);
    }
#pragma GCC unroll 2
    for (int t = 0; t < n; t++)
        out[t] = reduce16(_mm256_add_ps(s0[t][0], s1[t][0]), _mm256_add_ps(s0[t][1], s1[t][1]));
}

__attribute__((target("avx2,fma,f16c"))) void lx_qdot8_rows8(float *out, const int8_t *q, const float *xl,
                                                              const float *xg, const int32_t *q4, int n, const void *w,
                                                              int type, long C)
{
    switch (type * 2 + (n == 2)) {
#define QD8L_CASE(T) \
    case 2 * T: dot8l_n(out, q, xl, xg, q4, 1, w, T, C); break; \
    case 2 * T + 1: dot8l_n(out, q, xl, xg, q4, 2, w, T, C); break;
    QD8L_CASE(LX_DT_Q4_K) QD8L_CASE(LX_DT_Q5_K) QD8L_CASE(LX_DT_Q6_K) QD8L_CASE(LX_DT_Q8_0) QD8L_CASE(LX_DT_Q4_0)
    QD8L_CASE(LX_DT_IQ4_NL) QD8L_CASE(LX_DT_Q4_1) QD8L_CASE(LX_DT_Q5_0) QD8L_CASE(LX_DT_Q5_1)
    QD8L_CASE(LX_DT_Q2_K) QD8L_CASE(LX_DT_Q3_K) QD8L_CASE(LX_DT_IQ4_XS)
    QD8L_CASE(LX_DT_IQ2_XXS) QD8L_CASE(LX_DT_IQ2_XS) QD8L_CASE(LX_DT_IQ2_S) QD8L_CASE(LX_DT_IQ3_XXS)
    QD8L_CASE(LX_DT_IQ3_S) QD8L_CASE(LX_DT_IQ1_S) QD8L_CASE(LX_DT_IQ1_M)
#undef QD8L_CASE
    default: LX_ASSERT(!"a type with 8-lane integer dots");
    }
}

#ifndef __clang__
#pragma GCC diagnostic pop
#endif
