/*
** harness/core/iquant.c - the IQ1, IQ2, IQ3 and ternary GGUF types dequantized
** (iquant.h). Each super-block of 256 values has an f16 scale d (IQ1_M's is
** spread over the top nibbles of its sub-block scales) and sub-blocks of 32 with
** a small integer scale; groups of 8 (IQ1, IQ2) or 4 (IQ3) values are one
** codebook entry (iqbooks.c) times the sub-block's scale, with signs from a
** byte of 8 or from 7 bits plus their parity (an even number of minus signs).
** Every value is formed by the same roundings in the same order as the formats'
** definitions (the sub-block scale first, then its product with the entry's
** value, then the sign as a product by ±1), so a file dequantizes to llama.cpp's
** values bit for bit (tests/test_gguf.c).
*/
#include <immintrin.h>
#include <pthread.h>
#include <string.h>

#include "harness/core/f16.h"
#include "harness/core/lx.h"
#include "harness/core/iquant.h"

static float f16_at(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return lx_f16_to_f32(h);
}

static uint32_t u32_at(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint16_t u16_at(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* The sign byte of a 7-bit sign index: its parity as bit 7. */
static unsigned signs7(uint32_t s)
{
    s &= 127;
    return s | (unsigned)(__builtin_popcount(s) & 1) << 7;
}

/* One group of 8 values, decoded from its block: the scale s (db or dl), IQ1's
** delta, the codebook index a (IQ3: a and b, four values each) and the signs. */
struct group {
    float s, delta;
    uint16_t a, b;
    unsigned signs;
};

/* IQ2_XXS (66 bytes): d, then per sub-block 4 index bytes and a 32-bit word of
** four 7-bit sign indices and a 4-bit scale s (db = d·(1/2 + s)/4). */
static void iq2xxs(struct group *g, const unsigned char *b)
{
    float d = f16_at(b);
    for (int ib = 0; ib < 8; ib++) {
        const unsigned char *q = b + 2 + 8 * ib;
        uint32_t aux = u32_at(q + 4);
        float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
        for (int l = 0; l < 4; l++)
            *g++ = (struct group){db, 0.0f, q[l], 0, signs7(aux >> 7 * l)};
    }
}

/* IQ2_XS (74): d, 32 16-bit words (a 9-bit index, a 7-bit sign index), 8 bytes of
** two 4-bit scales (the first 16 values, then the next). */
static void iq2xs(struct group *g, const unsigned char *b)
{
    float d = f16_at(b);
    for (int ib = 0; ib < 8; ib++) {
        unsigned sc = b[66 + ib];
        float db[2] = {d * (0.5f + (float)(sc & 0xf)) * 0.25f, d * (0.5f + (float)(sc >> 4)) * 0.25f};
        for (int l = 0; l < 4; l++) {
            uint16_t w = u16_at(b + 2 + 2 * (4 * ib + l));
            *g++ = (struct group){db[l / 2], 0.0f, (uint16_t)(w & 511), 0, signs7(w >> 9)};
        }
    }
}

/* IQ2_S (82): d, 32 index bytes, 32 sign bytes, 8 bytes of the indices' top two
** bits (2l of byte ib), 8 scale bytes as IQ2_XS's. */
static void iq2s(struct group *g, const unsigned char *b)
{
    float d = f16_at(b);
    for (int ib = 0; ib < 8; ib++) {
        unsigned sc = b[74 + ib], qh = b[66 + ib];
        float db[2] = {d * (0.5f + (float)(sc & 0xf)) * 0.25f, d * (0.5f + (float)(sc >> 4)) * 0.25f};
        for (int l = 0; l < 4; l++)
            *g++ = (struct group){db[l / 2], 0.0f, (uint16_t)(b[2 + 4 * ib + l] | (qh << (8 - 2 * l) & 0x300)), 0,
                                  b[34 + 4 * ib + l]};
    }
}

/* IQ3_XXS (98): d, 64 index bytes, then per sub-block a 32-bit word as
** IQ2_XXS's (db = d·(1/2 + s)/2). */
static void iq3xxs(struct group *g, const unsigned char *b)
{
    float d = f16_at(b);
    for (int ib = 0; ib < 8; ib++) {
        const unsigned char *q = b + 2 + 8 * ib;
        uint32_t aux = u32_at(b + 66 + 4 * ib);
        float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
        for (int l = 0; l < 4; l++)
            *g++ = (struct group){db, 0.0f, q[2 * l], q[2 * l + 1], signs7(aux >> 7 * l)};
    }
}

/* IQ3_S (110): d, 64 index bytes, 8 bytes of their ninth bits (bit j of byte ib),
** 32 sign bytes, 4 bytes of two 4-bit scales (db = d·(1 + 2s)). */
static void iq3s(struct group *g, const unsigned char *b)
{
    float d = f16_at(b);
    for (int ib = 0; ib < 8; ib++) {
        const unsigned char *q = b + 2 + 8 * ib;
        unsigned qh = b[66 + ib], s = ib % 2 ? b[106 + ib / 2] >> 4 : b[106 + ib / 2] & 0xf;
        float db = d * (float)(1 + 2 * (int)s);
        for (int l = 0; l < 4; l++)
            *g++ = (struct group){db, 0.0f, (uint16_t)(q[2 * l] | (qh << (8 - 2 * l) & 256)),
                                  (uint16_t)(q[2 * l + 1] | (qh << (7 - 2 * l) & 256)), b[74 + 4 * ib + l]};
    }
}

/* IQ1_S (50): d, 32 index bytes, 8 16-bit words: the indices' top three bits
** (3l), a 3-bit scale (bits 12-14; dl = d·(2s + 1)) and the delta's sign (15). */
static void iq1s(struct group *g, const unsigned char *b)
{
    float d = f16_at(b);
    for (int ib = 0; ib < 8; ib++) {
        unsigned h = u16_at(b + 34 + 2 * ib);
        float dl = d * (float)(2 * (int)(h >> 12 & 7) + 1), delta = h & 0x8000 ? -0.125f : 0.125f;
        for (int l = 0; l < 4; l++)
            *g++ = (struct group){dl, delta, (uint16_t)(b[2 + 4 * ib + l] | (h >> 3 * l & 7) << 8), 0, 0};
    }
}

/* IQ1_M (56): 32 index bytes, 16 bytes of two groups' top three bits and delta
** signs (a nibble each), 4 16-bit words of four 3-bit scales whose top nibbles
** make the f16 d. */
static void iq1m(struct group *g, const unsigned char *b)
{
    uint16_t sc[4];
    memcpy(sc, b + 48, 8);
    float d = lx_f16_to_f32(lx_iq1m_d(b));
    for (int ib = 0; ib < 8; ib++) {
        const unsigned char *q = b + 4 * ib, *qh = b + 32 + 2 * ib;
        float dl[2] = {d * (float)(2 * (sc[ib / 2] >> 6 * (ib % 2) & 7) + 1),
                       d * (float)(2 * (sc[ib / 2] >> (6 * (ib % 2) + 3) & 7) + 1)};
        for (int l = 0; l < 4; l++) {
            unsigned nib = qh[l / 2] >> 4 * (l % 2);
            *g++ = (struct group){dl[l / 2], nib & 8 ? -0.125f : 0.125f, (uint16_t)(q[l] | (nib & 7) << 8), 0, 0};
        }
    }
}

/* The codebook kinds' decoders, books and levels, and how their groups become values. */
enum family { SIGNED8, SIGNED4X2, DELTA8 };
static const struct {
    void (*decode)(struct group *, const unsigned char *);
    const uint16_t *book;
    const signed char *levels;
    int n, family;
} books[LX_TQ1_0] = {
    {iq2xxs, lx_iq2xxs_book, lx_iq2xxs_book_levels, 256, SIGNED8},
    {iq2xs, lx_iq2xs_book, lx_iq2xs_book_levels, 512, SIGNED8},
    {iq2s, lx_iq2s_book, lx_iq2s_book_levels, 1024, SIGNED8},
    {iq3xxs, lx_iq3xxs_book, lx_iq3xxs_book_levels, 256, SIGNED4X2},
    {iq3s, lx_iq3s_book, lx_iq3s_book_levels, 512, SIGNED4X2},
    {iq1s, lx_iq1s_book, lx_iq1s_book_levels, 2048, DELTA8},
    {iq1m, lx_iq1s_book, lx_iq1s_book_levels, 2048, DELTA8},
};

/* Bytes of a block of each kind. */
static const size_t kind_bytes[LX_IQ_N] = {66, 74, 82, 98, 110, 50, 56, 54, 66};

static float sign(unsigned signs, int j)
{
    return signs >> j & 1 ? -1.0f : 1.0f;
}

/* Value j of entry e of a book with codes of width w. */
static float level(int kind, unsigned e, int j, int w)
{
    return (float)books[kind].levels[books[kind].book[e] >> w * j & ((1 << w) - 1)];
}

/* A super-block's 32 groups into 256 values: (s · level) · ±1 (IQ2, IQ3: four
** values from each of entries a and b), or s · (level + delta) (IQ1). */
static void emit(float *y, int kind, const struct group *g)
{
    for (int k = 0; k < 32; k++, y += 8) {
        const struct group *G = &g[k];
        for (int j = 0; j < 8; j++)
            y[j] = books[kind].family == DELTA8  ? G->s * (level(kind, G->a, j, 2) + G->delta)
                   : books[kind].family == SIGNED8 ? G->s * level(kind, G->a, j, 2) * sign(G->signs, j)
                                                   : G->s * level(kind, j < 4 ? G->a : G->b, j % 4, 3) * sign(G->signs, j);
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
static float sign_rows[256][8];         /* a sign byte as ±1 */
static pthread_once_t lanes_once = PTHREAD_ONCE_INIT;

static void lanes_init(void)
{
    for (int kind = 0; kind < LX_TQ1_0; kind++) {
        int per = books[kind].family == SIGNED4X2 ? 4 : 8, w = per == 4 ? 3 : 2;
        float *t = lane_books[kind] = lx_xmalloc(sizeof(float) * (size_t)(books[kind].n * per));
        for (int e = 0; e < books[kind].n; e++)
            for (int j = 0; j < per; j++)
                t[e * per + j] = level(kind, (unsigned)e, j, w);
    }
    for (int s = 0; s < 256; s++)
        for (int j = 0; j < 8; j++)
            sign_rows[s][j] = sign((unsigned)s, j);
}

__attribute__((target("avx2"))) static void emit_avx2(float *y, int kind, const struct group *g)
{
    const float *t = lane_books[kind];
    for (int k = 0; k < 32; k++, y += 8) {
        const struct group *G = &g[k];
        __m256 s = _mm256_set1_ps(G->s), v;
        if (books[kind].family == DELTA8)
            v = _mm256_mul_ps(s, _mm256_add_ps(_mm256_loadu_ps(t + 8 * G->a), _mm256_set1_ps(G->delta)));
        else {
            __m256 e = books[kind].family == SIGNED8
                           ? _mm256_loadu_ps(t + 8 * G->a)
                           : _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(t + 4 * G->a)),
                                                  _mm_loadu_ps(t + 4 * G->b), 1);
            v = _mm256_mul_ps(_mm256_mul_ps(s, e), _mm256_loadu_ps(sign_rows[G->signs]));
        }
        _mm256_storeu_ps(y, v);
    }
}

size_t lx_iq_to_f32_avx2(float *out, const void *src, int kind, size_t n)
{
    if (kind >= LX_TQ1_0)
        return 0;
    pthread_once(&lanes_once, lanes_init);
    const unsigned char *b = src;
    struct group g[32];
    size_t k = 0;
    for (; k + 256 <= n; k += 256, b += kind_bytes[kind]) {
        books[kind].decode(g, b);
        emit_avx2(out + k, kind, g);
    }
    return k;
}

size_t lx_iq_block_bytes(int kind)
{
    return kind_bytes[kind];
}

void lx_iq_to_f32(float *out, const void *src, int kind, size_t n)
{
    const unsigned char *b = src;
    struct group g[32];
    for (size_t k = 0; k < n; k += 256, b += kind_bytes[kind])
        if (kind >= LX_TQ1_0)
            (kind == LX_TQ1_0 ? tq1 : tq2)(out + k, b);
        else {
            books[kind].decode(g, b);
            emit(out + k, kind, g);
        }
}
