/*
** harness/core/iqlanes.h - the IQ1-IQ3 codebook types' blocks decoded (iquant.c),
** and their values in 8 AVX2 lanes: shared by iquant.c's dequantizing lanes and
** the engine's 8-lane dots that read the blocks (harness/engine/kernels/wprod.c),
** so both form each value by the same operations (the scalar loops' bits).
*/
#ifndef LX_IQLANES_H
#define LX_IQLANES_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "harness/core/f16.h"

/* The types in the order of half.h's LX_DT_IQ2_XXS … LX_DT_TQ2_0 (kind = type − LX_DT_IQ2_XXS). */
enum lx_iq_kind {
    LX_IQ2_XXS, LX_IQ2_XS, LX_IQ2_S, LX_IQ3_XXS, LX_IQ3_S, LX_IQ1_S, LX_IQ1_M, LX_TQ1_0, LX_TQ2_0, LX_IQ_N
};

/* IQ1_M's f16 scale d: the top nibbles of the four 16-bit words at byte 48 of block b. */
static inline uint16_t lx_iq1m_d(const unsigned char *b)
{
    uint16_t sc[4];
    memcpy(sc, b + 48, 8);
    return (uint16_t)(sc[0] >> 12 | (sc[1] >> 8 & 0x00f0) | (sc[2] >> 4 & 0x0f00) | (sc[3] & 0xf000));
}

static inline uint32_t lx_iq_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint16_t lx_iq_u16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* The sign byte of a 7-bit sign index: its parity as bit 7. */
static inline unsigned lx_iq_signs7(uint32_t s)
{
    s &= 127;
    return s | (unsigned)(__builtin_popcount(s) & 1) << 7;
}

/* One group of 8 values, decoded from its block: the scale s (db or dl), IQ1's
** delta, the codebook index a (IQ3: a and b, four values each), the signs, and
** the scale as an integer is: s = fl(d·is)·unit (lx_iq_unit) for IQ2 and IQ3, fl(d·is) for IQ1. */
struct lx_iq_group {
    float s, delta;
    uint16_t a, b;
    unsigned signs;
    int is;
};

/* Each decoder gives the 4 groups of sub-block ib (32 values) of block b, whose d is d. */
#define LX_IQ_DECODER static inline __attribute__((always_inline)) void

/* IQ2_XXS (66 bytes): d, then per sub-block 4 index bytes and a 32-bit word of
** four 7-bit sign indices and a 4-bit scale s (db = d·(1/2 + s)/4). */
LX_IQ_DECODER lx_iq_dec_iq2xxs(struct lx_iq_group *g, const unsigned char *b, float d, int ib)
{
    const unsigned char *q = b + 2 + 8 * ib;
    uint32_t aux = lx_iq_u32(q + 4);
    float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
#pragma GCC unroll 4
    for (int l = 0; l < 4; l++)
        g[l] = (struct lx_iq_group){db, 0.0f, q[l], 0, lx_iq_signs7(aux >> 7 * l), 2 * (int)(aux >> 28) + 1};
}

/* IQ2_XS (74): d, 32 16-bit words (a 9-bit index, a 7-bit sign index), 8 bytes of
** two 4-bit scales (the first 16 values, then the next). */
LX_IQ_DECODER lx_iq_dec_iq2xs(struct lx_iq_group *g, const unsigned char *b, float d, int ib)
{
    unsigned sc = b[66 + ib];
    float db[2] = {d * (0.5f + (float)(sc & 0xf)) * 0.25f, d * (0.5f + (float)(sc >> 4)) * 0.25f};
#pragma GCC unroll 4
    for (int l = 0; l < 4; l++) {
        uint16_t w = lx_iq_u16(b + 2 + 2 * (4 * ib + l));
        g[l] = (struct lx_iq_group){db[l / 2], 0.0f, (uint16_t)(w & 511), 0, lx_iq_signs7(w >> 9),
                                    2 * (int)(sc >> 4 * (l / 2) & 0xf) + 1};
    }
}

/* IQ2_S (82): d, 32 index bytes, 32 sign bytes, 8 bytes of the indices' top two
** bits (2l of byte ib), 8 scale bytes as IQ2_XS's. */
LX_IQ_DECODER lx_iq_dec_iq2s(struct lx_iq_group *g, const unsigned char *b, float d, int ib)
{
    unsigned sc = b[74 + ib], qh = b[66 + ib];
    float db[2] = {d * (0.5f + (float)(sc & 0xf)) * 0.25f, d * (0.5f + (float)(sc >> 4)) * 0.25f};
#pragma GCC unroll 4
    for (int l = 0; l < 4; l++)
        g[l] = (struct lx_iq_group){db[l / 2], 0.0f, (uint16_t)(b[2 + 4 * ib + l] | (qh << (8 - 2 * l) & 0x300)), 0,
                                    b[34 + 4 * ib + l], 2 * (int)(sc >> 4 * (l / 2) & 0xf) + 1};
}

/* IQ3_XXS (98): d, 64 index bytes, then per sub-block a 32-bit word as
** IQ2_XXS's (db = d·(1/2 + s)/2). */
LX_IQ_DECODER lx_iq_dec_iq3xxs(struct lx_iq_group *g, const unsigned char *b, float d, int ib)
{
    const unsigned char *q = b + 2 + 8 * ib;
    uint32_t aux = lx_iq_u32(b + 66 + 4 * ib);
    float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
#pragma GCC unroll 4
    for (int l = 0; l < 4; l++)
        g[l] = (struct lx_iq_group){db, 0.0f, q[2 * l], q[2 * l + 1], lx_iq_signs7(aux >> 7 * l),
                                    2 * (int)(aux >> 28) + 1};
}

/* IQ3_S (110): d, 64 index bytes, 8 bytes of their ninth bits (bit j of byte ib),
** 32 sign bytes, 4 bytes of two 4-bit scales (db = d·(1 + 2s)). */
LX_IQ_DECODER lx_iq_dec_iq3s(struct lx_iq_group *g, const unsigned char *b, float d, int ib)
{
    const unsigned char *q = b + 2 + 8 * ib;
    unsigned qh = b[66 + ib], s = ib % 2 ? b[106 + ib / 2] >> 4 : b[106 + ib / 2] & 0xf;
    float db = d * (float)(1 + 2 * (int)s);
#pragma GCC unroll 4
    for (int l = 0; l < 4; l++)
        g[l] = (struct lx_iq_group){db, 0.0f, (uint16_t)(q[2 * l] | (qh << (8 - 2 * l) & 256)),
                                    (uint16_t)(q[2 * l + 1] | (qh << (7 - 2 * l) & 256)), b[74 + 4 * ib + l],
                                    1 + 2 * (int)s};
}

/* IQ1_S (50): d, 32 index bytes, 8 16-bit words: the indices' top three bits
** (3l), a 3-bit scale (bits 12-14; dl = d·(2s + 1)) and the delta's sign (15). */
LX_IQ_DECODER lx_iq_dec_iq1s(struct lx_iq_group *g, const unsigned char *b, float d, int ib)
{
    unsigned h = lx_iq_u16(b + 34 + 2 * ib);
    float dl = d * (float)(2 * (int)(h >> 12 & 7) + 1), delta = h & 0x8000 ? -0.125f : 0.125f;
#pragma GCC unroll 4
    for (int l = 0; l < 4; l++)
        g[l] = (struct lx_iq_group){dl, delta, (uint16_t)(b[2 + 4 * ib + l] | (h >> 3 * l & 7) << 8), 0, 0,
                                    2 * (int)(h >> 12 & 7) + 1};
}

/* IQ1_M (56): 32 index bytes, 16 bytes of two groups' top three bits and delta
** signs (a nibble each), 4 16-bit words of four 3-bit scales whose top nibbles
** make the f16 d (lx_iq1m_d). */
LX_IQ_DECODER lx_iq_dec_iq1m(struct lx_iq_group *g, const unsigned char *b, float d, int ib)
{
    unsigned sc = lx_iq_u16(b + 48 + 2 * (ib / 2)) >> 6 * (ib % 2);
    const unsigned char *q = b + 4 * ib, *qh = b + 32 + 2 * ib;
    float dl[2] = {d * (float)(2 * (int)(sc & 7) + 1), d * (float)(2 * (int)(sc >> 3 & 7) + 1)};
#pragma GCC unroll 4
    for (int l = 0; l < 4; l++) {
        unsigned nib = qh[l / 2] >> 4 * (l % 2);
        g[l] = (struct lx_iq_group){dl[l / 2], nib & 8 ? -0.125f : 0.125f, (uint16_t)(q[l] | (nib & 7) << 8), 0, 0,
                                    2 * (int)(sc >> 3 * (l / 2) & 7) + 1};
    }
}

/* Block b's d. */
static inline float lx_iq_block_d(int kind, const unsigned char *b)
{
    return lx_f16_to_f32(kind == LX_IQ1_M ? lx_iq1m_d(b) : lx_iq_u16(b));
}

/* The integer dots' unit: a group's values are (d·unit)·is·u before rounding, u = ±level (IQ2,
** IQ3) or 8·(level + delta) = 8·level ± 1 (IQ1): 1/8 (IQ2, IQ1), 1/4 (IQ3_XXS), 1 (IQ3_S). */
static inline float lx_iq_unit(int kind)
{
    return kind == LX_IQ3_XXS ? 0.25f : kind == LX_IQ3_S ? 1.0f : 0.125f;
}

/* How a kind's groups become values: ±(s · level) from one entry of 8 (IQ2) or
** two of 4 (IQ3), or s · (level + delta) (IQ1). */
enum lx_iq_family { LX_IQ_SIGNED8, LX_IQ_SIGNED4X2, LX_IQ_DELTA8 };

static inline int lx_iq_family(int kind)
{
    return kind <= LX_IQ2_S ? LX_IQ_SIGNED8 : kind <= LX_IQ3_S ? LX_IQ_SIGNED4X2 : LX_IQ_DELTA8;
}

/* The 4 groups of sub-block ib of block b (kind a constant where it is inlined). */
static inline __attribute__((always_inline)) void lx_iq_decode(int kind, struct lx_iq_group *g, const unsigned char *b,
                                                               float d, int ib)
{
    switch (kind) {
    case LX_IQ2_XXS: lx_iq_dec_iq2xxs(g, b, d, ib); break;
    case LX_IQ2_XS: lx_iq_dec_iq2xs(g, b, d, ib); break;
    case LX_IQ2_S: lx_iq_dec_iq2s(g, b, d, ib); break;
    case LX_IQ3_XXS: lx_iq_dec_iq3xxs(g, b, d, ib); break;
    case LX_IQ3_S: lx_iq_dec_iq3s(g, b, d, ib); break;
    case LX_IQ1_S: lx_iq_dec_iq1s(g, b, d, ib); break;
    default: lx_iq_dec_iq1m(g, b, d, ib); break;
    }
}

/* The 32 values of 4 groups into v, from the kind's table of entries t (lx_iq_lane_tables)
** and the sign rows sg. */
__attribute__((target("avx2"), always_inline)) static inline void lx_iq_values8(__m256 v[4], const float *t,
                                                                              const float (*sg)[8], int family,
                                                                              const struct lx_iq_group *g)
{
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        const struct lx_iq_group *G = &g[k];
        __m256 s = _mm256_set1_ps(G->s);
        if (family == LX_IQ_DELTA8)
            v[k] = _mm256_mul_ps(s, _mm256_add_ps(_mm256_loadu_ps(t + 8 * G->a), _mm256_set1_ps(G->delta)));
        else {
            __m256 e = family == LX_IQ_SIGNED8
                           ? _mm256_loadu_ps(t + 8 * G->a)
                           : _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(t + 4 * G->a)),
                                                  _mm_loadu_ps(t + 4 * G->b), 1);
            v[k] = _mm256_xor_ps(_mm256_mul_ps(s, e), _mm256_loadu_ps(sg[G->signs]));     /* the signs flipped */
        }
    }
}

#endif
