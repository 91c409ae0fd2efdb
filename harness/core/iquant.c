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
#include <string.h>

#include "harness/core/f16.h"
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

static float sign(unsigned signs, int j)
{
    return signs >> j & 1 ? -1.0f : 1.0f;
}

/* Eight values of a 2-bit-coded entry (IQ2): (db · level) · ±1. */
static void put8(float *y, float db, uint16_t code, const signed char *lv, unsigned signs)
{
    for (int j = 0; j < 8; j++)
        y[j] = db * (float)lv[code >> 2 * j & 3] * sign(signs, j);
}

/* Two 3-bit-coded entries (IQ3) of four values each, one sign byte. */
static void put4x2(float *y, float db, uint16_t c1, uint16_t c2, const signed char *lv, unsigned signs)
{
    for (int j = 0; j < 4; j++) {
        y[j] = db * (float)lv[c1 >> 3 * j & 7] * sign(signs, j);
        y[j + 4] = db * (float)lv[c2 >> 3 * j & 7] * sign(signs, j + 4);
    }
}

/* Eight values of an IQ1 entry: dl · (value + delta). */
static void put1(float *y, float dl, uint16_t code, float delta)
{
    for (int j = 0; j < 8; j++)
        y[j] = dl * ((float)lx_iq1s_book_levels[code >> 2 * j & 3] + delta);
}

/* IQ2_XXS (66 bytes): d, then per sub-block 4 index bytes and a 32-bit word of
** four 7-bit sign indices and a 4-bit scale s (db = d·(1/2 + s)/4). */
static void iq2xxs(float *y, const unsigned char *b)
{
    float d = f16_at(b);
    for (int ib = 0; ib < 8; ib++) {
        const unsigned char *q = b + 2 + 8 * ib;
        uint32_t aux = u32_at(q + 4);
        float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
        for (int l = 0; l < 4; l++, y += 8)
            put8(y, db, lx_iq2xxs_book[q[l]], lx_iq2xxs_book_levels, signs7(aux >> 7 * l));
    }
}

/* IQ2_XS (74): d, 32 16-bit words (a 9-bit index, a 7-bit sign index), 8 bytes of
** two 4-bit scales (the first 16 values, then the next). */
static void iq2xs(float *y, const unsigned char *b)
{
    float d = f16_at(b);
    for (int ib = 0; ib < 8; ib++) {
        unsigned sc = b[66 + ib];
        float db[2] = {d * (0.5f + (float)(sc & 0xf)) * 0.25f, d * (0.5f + (float)(sc >> 4)) * 0.25f};
        for (int l = 0; l < 4; l++, y += 8) {
            uint16_t w = u16_at(b + 2 + 2 * (4 * ib + l));
            put8(y, db[l / 2], lx_iq2xs_book[w & 511], lx_iq2xs_book_levels, signs7(w >> 9));
        }
    }
}

/* IQ2_S (82): d, 32 index bytes, 32 sign bytes, 8 bytes of the indices' top two
** bits (2l of byte ib), 8 scale bytes as IQ2_XS's. */
static void iq2s(float *y, const unsigned char *b)
{
    float d = f16_at(b);
    for (int ib = 0; ib < 8; ib++) {
        unsigned sc = b[74 + ib], qh = b[66 + ib];
        float db[2] = {d * (0.5f + (float)(sc & 0xf)) * 0.25f, d * (0.5f + (float)(sc >> 4)) * 0.25f};
        for (int l = 0; l < 4; l++, y += 8) {
            unsigned idx = b[2 + 4 * ib + l] | (qh << (8 - 2 * l) & 0x300);
            put8(y, db[l / 2], lx_iq2s_book[idx], lx_iq2s_book_levels, b[34 + 4 * ib + l]);
        }
    }
}

/* IQ3_XXS (98): d, 64 index bytes, then per sub-block a 32-bit word as
** IQ2_XXS's (db = d·(1/2 + s)/2). */
static void iq3xxs(float *y, const unsigned char *b)
{
    float d = f16_at(b);
    for (int ib = 0; ib < 8; ib++) {
        const unsigned char *q = b + 2 + 8 * ib;
        uint32_t aux = u32_at(b + 66 + 4 * ib);
        float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
        for (int l = 0; l < 4; l++, y += 8)
            put4x2(y, db, lx_iq3xxs_book[q[2 * l]], lx_iq3xxs_book[q[2 * l + 1]], lx_iq3xxs_book_levels,
                   signs7(aux >> 7 * l));
    }
}

/* IQ3_S (110): d, 64 index bytes, 8 bytes of their ninth bits (bit j of byte ib),
** 32 sign bytes, 4 bytes of two 4-bit scales (db = d·(1 + 2s)). */
static void iq3s(float *y, const unsigned char *b)
{
    float d = f16_at(b);
    for (int ib = 0; ib < 8; ib++) {
        const unsigned char *q = b + 2 + 8 * ib;
        unsigned qh = b[66 + ib], s = ib % 2 ? b[106 + ib / 2] >> 4 : b[106 + ib / 2] & 0xf;
        float db = d * (float)(1 + 2 * (int)s);
        for (int l = 0; l < 4; l++, y += 8)
            put4x2(y, db, lx_iq3s_book[q[2 * l] | (qh << (8 - 2 * l) & 256)],
                   lx_iq3s_book[q[2 * l + 1] | (qh << (7 - 2 * l) & 256)], lx_iq3s_book_levels, b[74 + 4 * ib + l]);
    }
}

/* IQ1_S (50): d, 32 index bytes, 8 16-bit words: the indices' top three bits
** (3l), a 3-bit scale (bits 12-14; dl = d·(2s + 1)) and the delta's sign (15). */
static void iq1s(float *y, const unsigned char *b)
{
    float d = f16_at(b);
    for (int ib = 0; ib < 8; ib++) {
        unsigned h = u16_at(b + 34 + 2 * ib);
        float dl = d * (float)(2 * (int)(h >> 12 & 7) + 1), delta = h & 0x8000 ? -0.125f : 0.125f;
        for (int l = 0; l < 4; l++, y += 8)
            put1(y, dl, lx_iq1s_book[b[2 + 4 * ib + l] | (h >> 3 * l & 7) << 8], delta);
    }
}

/* IQ1_M (56): 32 index bytes, 16 bytes of two groups' top three bits and delta
** signs (a nibble each), 4 16-bit words of four 3-bit scales whose top nibbles
** make the f16 d. */
static void iq1m(float *y, const unsigned char *b)
{
    uint16_t sc[4];
    memcpy(sc, b + 48, 8);
    float d = lx_f16_to_f32(lx_iq1m_d(b));
    for (int ib = 0; ib < 8; ib++) {
        const unsigned char *q = b + 4 * ib, *qh = b + 32 + 2 * ib;
        float dl[2] = {d * (float)(2 * (sc[ib / 2] >> 6 * (ib % 2) & 7) + 1),
                       d * (float)(2 * (sc[ib / 2] >> (6 * (ib % 2) + 3) & 7) + 1)};
        for (int l = 0; l < 4; l++, y += 8) {
            unsigned nib = qh[l / 2] >> 4 * (l % 2);
            put1(y, dl[l / 2], lx_iq1s_book[q[l] | (nib & 7) << 8], nib & 8 ? -0.125f : 0.125f);
        }
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

static const struct {
    void (*block)(float *, const unsigned char *);
    size_t bytes;
} kinds[LX_IQ_N] = {{iq2xxs, 66}, {iq2xs, 74}, {iq2s, 82}, {iq3xxs, 98}, {iq3s, 110},
                    {iq1s, 50},   {iq1m, 56},  {tq1, 54},  {tq2, 66}};

size_t lx_iq_block_bytes(int kind)
{
    return kinds[kind].bytes;
}

void lx_iq_to_f32(float *out, const void *src, int kind, size_t n)
{
    const unsigned char *b = src;
    for (size_t k = 0; k < n; k += 256, b += kinds[kind].bytes)
        kinds[kind].block(out + k, b);
}
