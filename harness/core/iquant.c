/*
** harness/core/iquant.c - the IQ1, IQ2, IQ3 and ternary GGUF types dequantized
** (iquant.h). Each super-block of 256 values has an f16 scale d (IQ1_M's is
** spread over the top nibbles of its sub-block scales) and sub-blocks of 32 with
** a small integer scale; groups of 8 (IQ1, IQ2) or 4 (IQ3) values are one
** codebook entry (iqbooks.c) times the sub-block's scale, with signs from a
** byte of 8 or from 7 bits plus their parity (an even number of minus signs).
** Every value is formed by the same roundings in the same order as the formats'
** definitions (the sub-block scale first, then its product with the entry's
** value, then the sign), so a file dequantizes to llama.cpp's values bit for bit
** (tests/test_gguf.c). The sign is a negation (the sign bit flipped), in the
** lanes too: llama.cpp's product by −1 is the same for every number but a NaN,
** whose sign the compiler may or may not flip.
*/
#include <immintrin.h>
#include <pthread.h>
#include <string.h>

#include "harness/core/f16.h"
#include "harness/core/lx.h"
#include "harness/core/iqlanes.h"
#include "harness/core/iquant.h"

static float f16_at(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return lx_f16_to_f32(h);
}

/* The codebook kinds' books and levels. */
static const struct {
    const uint16_t *book;
    const signed char *levels;
    int n;
} books[LX_TQ1_0] = {
    {lx_iq2xxs_book, lx_iq2xxs_book_levels, 256}, {lx_iq2xs_book, lx_iq2xs_book_levels, 512},
    {lx_iq2s_book, lx_iq2s_book_levels, 1024},    {lx_iq3xxs_book, lx_iq3xxs_book_levels, 256},
    {lx_iq3s_book, lx_iq3s_book_levels, 512},     {lx_iq1s_book, lx_iq1s_book_levels, 2048},
    {lx_iq1s_book, lx_iq1s_book_levels, 2048},
};

/* Bytes of a block of each kind. */
static const size_t kind_bytes[LX_IQ_N] = {66, 74, 82, 98, 110, 50, 56, 54, 66};

/* v with its sign flipped where bit j of the sign byte is set: a negation, which flips the
** sign bit of a NaN too (a product by −1 need not: the lanes then could differ). */
static float flip(float v, unsigned signs, int j)
{
    return signs >> j & 1 ? -v : v;
}

/* Value j of entry e of a book with codes of width w. */
static float level(int kind, unsigned e, int j, int w)
{
    return (float)books[kind].levels[books[kind].book[e] >> w * j & ((1 << w) - 1)];
}

/* A sub-block's 4 groups into 32 values: ±(s · level) (IQ2, IQ3: four
** values from each of entries a and b), or s · (level + delta) (IQ1). */
static void emit(float *y, int kind, const struct lx_iq_group *g)
{
    for (int k = 0; k < 4; k++, y += 8) {
        const struct lx_iq_group *G = &g[k];
        const int family = lx_iq_family(kind);
        for (int j = 0; j < 8; j++)
            y[j] = family == LX_IQ_DELTA8    ? G->s * (level(kind, G->a, j, 2) + G->delta)
                   : family == LX_IQ_SIGNED8 ? flip(G->s * level(kind, G->a, j, 2), G->signs, j)
                                             : flip(G->s * level(kind, j < 4 ? G->a : G->b, j % 4, 3), G->signs, j);
    }
}

/* A base-3 digit of q (the top one after multiplying by 3^n, in 8 bits), less one, times d. */
static float trit(unsigned q, unsigned pow3, float d)
{
    unsigned char r = (unsigned char)(q * pow3);
    return (float)((int)((unsigned)r * 3 >> 8) - 1) * d;
}

/* TQ1_0 (54): 48 bytes of five trits each (32 bytes, then 16, each run of bytes
** once per trit), 4 bytes of four, the f16 d last. */
static void tq1(float *y, const unsigned char *b)
{
    static const unsigned pow3[5] = {1, 3, 9, 27, 81};
    float d = f16_at(b + 52);
    for (int run = 0; run < 2; run++) {
        int at = run ? 32 : 0, len = run ? 16 : 32;
        for (int n = 0; n < 5; n++)
            for (int m = 0; m < len; m++)
                *y++ = trit(b[at + m], pow3[n], d);
    }
    for (int n = 0; n < 4; n++)
        for (int j = 0; j < 4; j++)
            *y++ = trit(b[48 + j], pow3[n], d);
}

/* TQ2_0 (66): 64 bytes of four 2-bit values (q − 1), a run of 32 bytes once per
** pair of bits, the f16 d last. */
static void tq2(float *y, const unsigned char *b)
{
    float d = f16_at(b + 64);
    for (int j = 0; j < 64; j += 32)
        for (int l = 0; l < 4; l++)
            for (int m = 0; m < 32; m++)
                *y++ = (float)((b[j + m] >> 2 * l & 3) - 1) * d;
}

/* ---- in 8 lanes (AVX2): the same products, each entry's values from a table of floats ---- */

static float *lane_books[LX_TQ1_0];     /* entry e's values at [e·8] (IQ3: [e·4]) */
static float sign_rows[256][8];         /* a sign byte as sign-bit masks (−0.0 where set) */
static int8_t *byte_books[LX_TQ1_0];    /* lane_books as bytes; IQ1's levels times 8 */
static uint64_t sign_bytes[256];        /* a sign byte as 8 bytes: −1 where the bit is set, else 1 */
static pthread_once_t lanes_once = PTHREAD_ONCE_INIT;

static void lanes_init(void)
{
    for (int kind = 0; kind < LX_TQ1_0; kind++) {
        int per = lx_iq_family(kind) == LX_IQ_SIGNED4X2 ? 4 : 8, w = per == 4 ? 3 : 2;
        float *t = lane_books[kind] = lx_xmalloc(sizeof(float) * (size_t)(books[kind].n * per));
        int8_t *u = byte_books[kind] = lx_xmalloc((size_t)(books[kind].n * per));
        for (int e = 0; e < books[kind].n; e++)
            for (int j = 0; j < per; j++) {
                t[e * per + j] = level(kind, (unsigned)e, j, w);
                u[e * per + j] = (int8_t)(t[e * per + j] * (lx_iq_family(kind) == LX_IQ_DELTA8 ? 8.0f : 1.0f));
            }
    }
    for (int s = 0; s < 256; s++)
        for (int j = 0; j < 8; j++) {
            sign_rows[s][j] = flip(0.0f, (unsigned)s, j);
            sign_bytes[s] |= (uint64_t)(s >> j & 1 ? 0xff : 0x01) << 8 * j;
        }
}

void lx_iq_lane_tables(int kind, const float **book, const float (**signs)[8])
{
    pthread_once(&lanes_once, lanes_init);
    *book = lane_books[kind];
    *signs = (const float(*)[8])sign_rows;
}

void lx_iq_byte_tables(int kind, const int8_t **book, const uint64_t **signs)
{
    pthread_once(&lanes_once, lanes_init);
    *book = byte_books[kind];
    *signs = sign_bytes;
}

/* The whole blocks of n values of one kind (a constant at each call). */
__attribute__((target("avx2"), always_inline)) static inline size_t lanes_of(float *out, const unsigned char *b,
                                                                             size_t n, int kind)
{
    const float *t, (*sg)[8];
    lx_iq_lane_tables(kind, &t, &sg);
    struct lx_iq_group g[4];
    __m256 v[4];
    size_t k = 0;
    for (; k + 256 <= n; k += 256, b += kind_bytes[kind]) {
        float d = lx_iq_block_d(kind, b);
        for (int ib = 0; ib < 8; ib++) {
            lx_iq_decode(kind, g, b, d, ib);
            lx_iq_values8(v, t, sg, lx_iq_family(kind), g);
            for (int q = 0; q < 4; q++)
                _mm256_storeu_ps(out + k + 32 * ib + 8 * q, v[q]);
        }
    }
    return k;
}

__attribute__((target("avx2"))) size_t lx_iq_to_f32_avx2(float *out, const void *src, int kind, size_t n)
{
    switch (kind) {
    case LX_IQ2_XXS: return lanes_of(out, src, n, LX_IQ2_XXS);
    case LX_IQ2_XS: return lanes_of(out, src, n, LX_IQ2_XS);
    case LX_IQ2_S: return lanes_of(out, src, n, LX_IQ2_S);
    case LX_IQ3_XXS: return lanes_of(out, src, n, LX_IQ3_XXS);
    case LX_IQ3_S: return lanes_of(out, src, n, LX_IQ3_S);
    case LX_IQ1_S: return lanes_of(out, src, n, LX_IQ1_S);
    case LX_IQ1_M: return lanes_of(out, src, n, LX_IQ1_M);
    default: return 0;  /* TQ1_0, TQ2_0: scalar */
    }
}

size_t lx_iq_block_bytes(int kind)
{
    return kind_bytes[kind];
}

void lx_iq_to_f32(float *out, const void *src, int kind, size_t n)
{
    const unsigned char *b = src;
    struct lx_iq_group g[4];
    for (size_t k = 0; k < n; k += 256, b += kind_bytes[kind]) {
        if (kind >= LX_TQ1_0) {
            (kind == LX_TQ1_0 ? tq1 : tq2)(out + k, b);
            continue;
        }
        float d = lx_iq_block_d(kind, b);
        for (int ib = 0; ib < 8; ib++) {
            lx_iq_decode(kind, g, b, d, ib);
            emit(out + k + 32 * ib, kind, g);
        }
    }
}
