/*
** tests/test_iquant.c - the IQ1, IQ2, IQ3 and ternary GGUF types
** (harness/core/iquant.c) by hand: blocks written byte by byte here, their
** values from the formats' layouts as docs/checkpoints.md#gguf states them.
** The codebooks' entries are checked against llama.cpp's own dequantization
** of a whole file in tests/test_gguf.c (quantized_weights_are_llama_cpps);
** here each format's scales, signs, deltas and index bits, which that file's
** weights meet only as a quantizer picked them.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/iquant.h"

static float y[256];

static void deq(const unsigned char *b, int t)
{
    lx_half_to_f32(y, b, t, 256);
}

/* Whether |v| / unit is one of the book's levels. */
static int on_levels(float v, float unit, const signed char *lv, int n)
{
    for (int l = 0; l < n; l++)
        if (fabsf(v) == unit * (float)lv[l])
            return 1;
    return 0;
}

/* TQ2_0: bytes of four 2-bit q (bits 0-1 the first run of 32 values, 2-3 the second ...), value (q − 1)·d. */
Test(iquant, tq2_0_by_hand)
{
    unsigned char b[66] = {0};
    memset(b, 0xe4, 64);            /* 11 10 01 00: q = 0, 1, 2, 3 for the four runs */
    b[64] = 0x00, b[65] = 0x38;     /* d = 0.5 */
    b[5] = 0x1b;                    /* 00 01 10 11: value 5 is q = 3, 37 q = 2, 69 q = 1, 101 q = 0 */
    deq(b, LX_DT_TQ2_0);
    for (int i = 0; i < 256; i++) {
        float want = 0.5f * (float)(i % 128 / 32 - 1);
        if (i == 5 || i == 37 || i == 69 || i == 101)
            want = 0.5f * (float)(2 - i / 32);
        cr_expect_eq(y[i], want, "value %d: %g, not %g", i, y[i], want);
    }
}

/* TQ1_0: five base-3 digits a byte, byte = ceil(Σ t_k·3^(4−k) · 256 / 243); value (t − 1)·d. Byte 171
** holds 2, 0, 0, 0, 0 and byte 0 five zeros; 48 bytes (a run of 32, then 16, each once per digit), 4 of
** four digits, d at 52. */
Test(iquant, tq1_0_by_hand)
{
    unsigned char b[54] = {0};
    memset(b, 171, 52);
    b[0] = 0;                       /* value 0 and its next digits 32, 64, 96, 128: t = 0 */
    b[52] = 0x00, b[53] = 0x40;     /* d = 2 */
    deq(b, LX_DT_TQ1_0);
    for (int i = 0; i < 256; i++) {
        int first = i < 32 || (i >= 160 && i < 176) || (i >= 240 && i < 244);   /* each run's first digit */
        float want = first ? 2.0f : -2.0f;
        if (i % 32 == 0 && i < 160)
            want = -2.0f;
        cr_expect_eq(y[i], want, "value %d: %g, not %g", i, y[i], want);
    }
}

/* IQ2_XXS: per sub-block 4 index bytes, then a word of four 7-bit sign indices and a 4-bit scale s:
** db = d·(1/2 + s)/4, the eighth sign the parity of the seven. */
Test(iquant, iq2_xxs_scales_and_signs)
{
    unsigned char b[66] = {0};
    b[0] = 0x00, b[1] = 0x3c;                   /* d = 1 */
    uint32_t w = 3u << 28 | 0x01 | 0x03 << 7;   /* s = 3; group 0: sign 0 and its parity (7); group 1: 0, 1 */
    memcpy(b + 2 + 4, &w, 4);
    b[2] = 17, b[3] = 200;
    deq(b, LX_DT_IQ2_XXS);
    for (int i = 0; i < 32; i++) {
        int neg = i == 0 || i == 7 || i == 8 || i == 9;
        cr_expect(on_levels(y[i], 0.875f, lx_iq2xxs_book_levels, 3) && (y[i] < 0) == neg, "value %d: %g", i, y[i]);
    }
    for (int i = 32; i < 256; i++)      /* the other sub-blocks: s = 0, db = 1/8, no signs */
        cr_expect(on_levels(y[i], 0.125f, lx_iq2xxs_book_levels, 3) && y[i] > 0, "value %d: %g", i, y[i]);
}

/* IQ2_S: a whole sign byte a group; two scale nibbles a sub-block (its first 16 values, then the next). */
Test(iquant, iq2_s_scales_and_signs)
{
    unsigned char b[82] = {0};
    b[0] = 0x00, b[1] = 0x40;   /* d = 2 */
    b[34] = 0x81;               /* group 0: values 0 and 7 negative */
    b[35] = 0x02;               /* group 1: value 9 */
    b[74] = 0x52;               /* sub-block 0: s = 2 (db = 2·2.5/4), then 5 (2·5.5/4) */
    deq(b, LX_DT_IQ2_S);
    for (int i = 0; i < 32; i++) {
        int neg = i == 0 || i == 7 || i == 9;
        cr_expect(on_levels(y[i], i < 16 ? 1.25f : 2.75f, lx_iq2s_book_levels, 3) && (y[i] < 0) == neg,
                  "value %d: %g", i, y[i]);
    }
}

/* IQ3_XXS: db = d·(1/2 + s)/2; IQ3_S: db = d·(1 + 2s), one nibble a sub-block, whole sign bytes. */
Test(iquant, iq3_scales_and_signs)
{
    unsigned char b[110] = {0};
    b[0] = 0x00, b[1] = 0x3c;
    uint32_t w = 5u << 28 | 0x7f;               /* s = 5; group 0: seven signs, parity 1: all eight */
    memcpy(b + 66 + 4, &w, 4);                  /* sub-block 1 */
    deq(b, LX_DT_IQ3_XXS);
    for (int i = 0; i < 64; i++)
        cr_expect(on_levels(y[i], i < 32 ? 0.25f : 2.75f, lx_iq3xxs_book_levels, 8) &&
                      (y[i] < 0) == (i >= 32 && i < 40),
                  "IQ3_XXS value %d: %g", i, y[i]);
    memset(b, 0, sizeof b);
    b[0] = 0x00, b[1] = 0x3c;
    b[106] = 0x30;              /* sub-block 0: s = 0 (db 1), sub-block 1: s = 3 (db 7) */
    b[74 + 4] = 0x10;           /* sub-block 1's first group: value 4 of it */
    deq(b, LX_DT_IQ3_S);
    for (int i = 0; i < 64; i++)
        cr_expect(on_levels(y[i], i < 32 ? 1.0f : 7.0f, lx_iq3s_book_levels, 8) && (y[i] < 0) == (i == 36),
                  "IQ3_S value %d: %g", i, y[i]);
}

/* IQ1_S: per sub-block a 16-bit word with a 3-bit scale (dl = d·(2s + 1)) and the delta's sign; a value
** is dl·(g + δ), g in −1, 0, 1, δ = ±1/8. IQ1_M: d in the top nibbles of its four scale words. */
Test(iquant, iq1_scales_and_deltas)
{
    unsigned char b[56] = {0};
    b[0] = 0x00, b[1] = 0x3c;
    uint16_t h = 0x8000 | 2 << 12;              /* sub-block 1: s = 2 (dl 5), δ = −1/8 */
    memcpy(b + 34 + 2, &h, 2);
    deq(b, LX_DT_IQ1_S);
    for (int i = 0; i < 64; i++) {
        float dl = i < 32 ? 1.0f : 5.0f, delta = i < 32 ? 0.125f : -0.125f, g = y[i] / dl - delta;
        cr_expect(g == -1.0f || g == 0.0f || g == 1.0f, "IQ1_S value %d: %g", i, y[i]);
    }
    memset(b, 0, sizeof b);
    b[55] = 0x40;                               /* word 3's top nibble 4: d = 0x4000 = 2 */
    b[48] = 0x03 | 0x05 << 3;                   /* sub-block 0: scales 3 (dl 14) and 5 (dl 22) */
    b[32] = 0x80;                               /* group 1: δ = −1/8 */
    deq(b, LX_DT_IQ1_M);
    for (int i = 0; i < 32; i++) {
        float dl = i < 16 ? 14.0f : 22.0f, delta = i >= 8 && i < 16 ? -0.125f : 0.125f, g = y[i] / dl - delta;
        cr_expect(g == -1.0f || g == 0.0f || g == 1.0f, "IQ1_M value %d: %g", i, y[i]);
    }
}

/* iquant.c's own block sizes are half.h's, type by type. */
Test(iquant, block_sizes_agree)
{
    for (int k = 0; k < LX_IQ_N; k++)
        cr_expect_eq(lx_iq_block_bytes(k), lx_dtype_block_bytes(LX_DT_IQ2_XXS + k), "%s",
                     lx_dtype_name(LX_DT_IQ2_XXS + k));
    cr_expect_eq(LX_DT_IQ2_XXS + LX_IQ_N, LX_DT_N);
}

/* A block whose f16 d is an infinity is found where it begins, IQ1_M's (assembled from nibbles) too. */
Test(iquant, a_non_finite_scale_is_found)
{
    static const struct {
        int t, at;
    } d[] = {{LX_DT_IQ2_XXS, 0}, {LX_DT_IQ3_S, 0}, {LX_DT_IQ1_S, 0}, {LX_DT_TQ1_0, 52}, {LX_DT_TQ2_0, 64}};
    unsigned char b[3 * 110];
    for (size_t k = 0; k < sizeof d / sizeof *d; k++) {
        size_t nb = lx_dtype_block_bytes(d[k].t);
        memset(b, 0, sizeof b);
        cr_expect_eq(lx_half_first_nonfinite(b, d[k].t, 768), -1, "%s", lx_dtype_name(d[k].t));
        b[2 * nb + d[k].at + 1] = 0x7c;
        cr_expect_eq(lx_half_first_nonfinite(b, d[k].t, 768), 512, "%s", lx_dtype_name(d[k].t));
    }
    memset(b, 0, sizeof b);
    b[56 + 53] = 0xc0, b[56 + 55] = 0x70;       /* block 1's d = 0x7c00 */
    cr_expect_eq(lx_half_first_nonfinite(b, LX_DT_IQ1_M, 768), 256);
    b[56 + 55] = 0x30;                          /* 0x3c00: finite */
    cr_expect_eq(lx_half_first_nonfinite(b, LX_DT_IQ1_M, 768), -1);
}
