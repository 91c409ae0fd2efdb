/*
** tests/ref/gguf/iq_codebooks.c - writes harness/core/iqbooks.c, the codebooks of llama.cpp's
** IQ1_S/IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S types, read back from llama.cpp's own
** dequantizer. Not built by the Makefile and not run by the tests: run by hand against a llama.cpp
** build made outside the repository (make.sh says which commit):
**
**   cc -O1 -I$LLAMA/ggml/include tests/ref/gguf/iq_codebooks.c -L$LLAMA/build/bin -lggml-base \
**      -Wl,-rpath,$LLAMA/build/bin -o /tmp/iq_codebooks && /tmp/iq_codebooks > harness/core/iqbooks.c
**
** Each type's blocks index every codebook entry in turn, with d = 1, every sub-block scale 0 and no
** sign bit set, so the dequantized values are the entries times a power of two (IQ1's plus its
** delta of 1/8). The program then writes each codebook in lenx's own packing: an entry's 8 (IQ2,
** IQ1) or 4 (IQ3) values as 2- or 3-bit codes into the codebook's levels, value j at bits
** j·width. It stops with an error when an entry's values are not among a few levels, or when the
** sign patterns are not the 7-bit index plus its parity as the eighth bit (which lenx computes
** rather than stores).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"

enum { QK = 256 };

static void fail(const char *what)
{
    fprintf(stderr, "iq_codebooks: %s\n", what);
    exit(1);
}

/* Dequantize n_blocks blocks of type t built by fill(block, k) for k = 0 … n_blocks − 1. */
static float *dequant(enum ggml_type t, int n_blocks, void (*fill)(unsigned char *, int))
{
    const struct ggml_type_traits *tr = ggml_get_type_traits(t);
    if ((int)tr->blck_size != QK)
        fail("unexpected block size");
    unsigned char *b = calloc((size_t)n_blocks, tr->type_size);
    float *y = malloc(sizeof(float) * QK * (size_t)n_blocks);
    for (int k = 0; k < n_blocks; k++) {
        b[k * tr->type_size] = 0x00, b[k * tr->type_size + 1] = 0x3c;  /* d = 1.0 (f16) */
        fill(b + k * tr->type_size, k);
    }
    tr->to_float(b, y, (int64_t)QK * n_blocks);
    free(b);
    return y;
}

/* Block k of IQ2_XXS: 32 indices 32k + i (bytes 2 + 8·ib … + 3), every scale and sign word 0. */
static void fill_iq2xxs(unsigned char *b, int k)
{
    for (int i = 0; i < 32; i++)
        b[2 + 8 * (i / 4) + i % 4] = (unsigned char)(32 * k + i);
}

/* IQ2_XS: 32 16-bit words, index in the low 9 bits. */
static void fill_iq2xs(unsigned char *b, int k)
{
    for (int i = 0; i < 32; i++) {
        uint16_t v = (uint16_t)(32 * k + i);
        memcpy(b + 2 + 2 * i, &v, 2);
    }
}

/* IQ2_S: low 8 bits in qs[0..31], the top 2 of index 4·ib + l at bits 2l of qh[ib] (byte 66 + ib). */
static void fill_iq2s(unsigned char *b, int k)
{
    for (int i = 0; i < 32; i++) {
        int idx = 32 * k + i;
        b[2 + i] = (unsigned char)(idx & 255);
        b[66 + i / 4] |= (unsigned char)((idx >> 8) << (2 * (i % 4)));
    }
}

/* IQ3_XXS: 64 byte indices (qs[0..63]), the scale-and-sign words after them 0. */
static void fill_iq3xxs(unsigned char *b, int k)
{
    for (int i = 0; i < 64; i++)
        b[2 + i] = (unsigned char)(64 * k + i);
}

/* IQ3_S: index 8·ib + j = qs[8·ib + j] | bit j of qh[ib] << 8 (qh at byte 66). */
static void fill_iq3s(unsigned char *b, int k)
{
    for (int i = 0; i < 64; i++) {
        int idx = 64 * k + i;
        b[2 + i] = (unsigned char)(idx & 255);
        b[66 + i / 8] |= (unsigned char)((idx >> 8) << (i % 8));
    }
}

/* IQ1_S: index 4·ib + l = qs[4·ib + l] | bits 3l … 3l + 2 of the 16-bit qh[ib] << 8 (qh at byte 34). */
static void fill_iq1s(unsigned char *b, int k)
{
    for (int i = 0; i < 32; i++) {
        int idx = 32 * k + i;
        uint16_t h;
        b[2 + i] = (unsigned char)(idx & 255);
        memcpy(&h, b + 34 + 2 * (i / 4), 2);
        h = (uint16_t)(h | (idx >> 8) << (3 * (i % 4)));
        memcpy(b + 34 + 2 * (i / 4), &h, 2);
    }
}

/* IQ2_XXS's first sign word set to s: the signs of the first 8 values. */
static int sign_s;
static void fill_signs(unsigned char *b, int k)
{
    (void)k;
    uint32_t w = (uint32_t)sign_s;
    memcpy(b + 2 + 4, &w, 4);
}

/* The 128 sign patterns must be s with its parity as bit 7 (an even number of minus signs). */
static void check_signs(void)
{
    for (sign_s = 0; sign_s < 128; sign_s++) {
        float *y = dequant(GGML_TYPE_IQ2_XXS, 1, fill_signs);
        int want = sign_s | (__builtin_popcount((unsigned)sign_s) & 1) << 7;
        for (int j = 0; j < 8; j++)
            if ((y[j] < 0) != ((want >> j) & 1))
                fail("a sign pattern is not the index plus its parity");
        free(y);
    }
}

/* Write the n entries of `per` values (y[e·per + j] / unit − shift) as codes into their sorted levels. */
static void book(const char *name, const char *comment, const float *y, int n, int per, float unit, float shift,
                 int width)
{
    int levels[8], nl = 0;
    for (int i = 0; i < n * per; i++) {
        float v = y[i] / unit - shift;
        int iv = (int)v, at = 0;
        if ((float)iv != v)
            fail("an entry's value is not an integer");
        while (at < nl && levels[at] < iv)
            at++;
        if (at < nl && levels[at] == iv)
            continue;
        if (nl == (1 << width))
            fail("more levels than the codes hold");
        memmove(levels + at + 1, levels + at, sizeof(int) * (size_t)(nl - at));
        levels[at] = iv, nl++;
    }
    printf("\n/* %s */\nconst signed char %s_levels[%d] = {", comment, name, 1 << width);
    for (int l = 0; l < 1 << width; l++)
        printf("%s%d", l ? ", " : "", l < nl ? levels[l] : 0);
    printf("};\nconst uint16_t %s[%d] = {", name, n);
    for (int e = 0; e < n; e++) {
        unsigned code = 0;
        for (int j = 0; j < per; j++) {
            int iv = (int)(y[e * per + j] / unit - shift), l = 0;
            while (levels[l] != iv)
                l++;
            code |= (unsigned)l << (j * width);
        }
        printf("%s0x%04x", e % 10 ? ", " : e ? ",\n    " : "\n    ", code);
    }
    printf("};\n");
}

int main(void)
{
    check_signs();
    printf("/*\n** harness/core/iqbooks.c - the codebooks of llama.cpp's IQ1_S/IQ1_M, IQ2_XXS, IQ2_XS,\n"
           "** IQ2_S, IQ3_XXS and IQ3_S types (docs/checkpoints.md#gguf). Generated by\n"
           "** tests/ref/gguf/iq_codebooks.c, which reads them back from llama.cpp's dequantizer; do\n"
           "** not edit. Entry e of a codebook is uint16_t code e: value j is LEVELS[(code >> j·w) &\n"
           "** (2^w − 1)], w = 2 for the 8 values of the IQ2 and IQ1 entries, 3 for IQ3's 4.\n*/\n"
           "#include \"harness/core/iquant.h\"\n");
    static const struct {
        enum ggml_type type;
        int blocks;
        void (*fill)(unsigned char *, int);
        const char *name, *comment;
        int n, per;
        float unit, shift;
        int width;
    } books[] = {
        {GGML_TYPE_IQ2_XXS, 8, fill_iq2xxs, "lx_iq2xxs_book", "IQ2_XXS: 256 entries of 8 magnitudes", 256, 8, 0.125f, 0, 2},
        {GGML_TYPE_IQ2_XS, 16, fill_iq2xs, "lx_iq2xs_book", "IQ2_XS: 512 entries of 8 magnitudes", 512, 8, 0.125f, 0, 2},
        {GGML_TYPE_IQ2_S, 32, fill_iq2s, "lx_iq2s_book", "IQ2_S: 1,024 entries of 8 magnitudes", 1024, 8, 0.125f, 0, 2},
        {GGML_TYPE_IQ3_XXS, 4, fill_iq3xxs, "lx_iq3xxs_book", "IQ3_XXS: 256 entries of 4 magnitudes", 256, 4, 0.25f, 0, 3},
        {GGML_TYPE_IQ3_S, 8, fill_iq3s, "lx_iq3s_book", "IQ3_S: 512 entries of 4 magnitudes", 512, 4, 1.0f, 0, 3},
        {GGML_TYPE_IQ1_S, 64, fill_iq1s, "lx_iq1s_book",
         "IQ1_S and IQ1_M: 2,048 entries of 8 values in −1, 0, 1 (before the delta of ±1/8)", 2048, 8, 1.0f, 0.125f, 2},
    };
    for (size_t k = 0; k < sizeof books / sizeof *books; k++) {
        float *y = dequant(books[k].type, books[k].blocks, books[k].fill);
        book(books[k].name, books[k].comment, y, books[k].n, books[k].per, books[k].unit, books[k].shift, books[k].width);
        free(y);
    }
    return 0;
}
