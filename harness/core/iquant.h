/*
** harness/core/iquant.h - llama.cpp's lowest-bit GGUF types: IQ2_XXS, IQ2_XS,
** IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M (values from codebooks, iqbooks.c) and
** the ternary TQ1_0 and TQ2_0 (docs/checkpoints.md#gguf). Super-blocks of 256
** values, dequantized with the values and the order of roundings of the
** formats' definitions (scalar loops, and the IQ types in 8 AVX2 lanes too):
** the products dequantize them first.
*/
#ifndef LX_IQUANT_H
#define LX_IQUANT_H

#include <stddef.h>
#include <stdint.h>

#include "harness/core/iqlanes.h"

/* Each codebook entry packs its values as codes into the book's levels: value j
** of entry e is levels[(book[e] >> j·w) & (2^w − 1)], w = 2 for the eight
** values of IQ2's and IQ1's entries, 3 for the four of IQ3's. */
/* The kinds (enum lx_iq_kind) and their blocks' decoding: harness/core/iqlanes.h. */
extern const signed char lx_iq2xxs_book_levels[4], lx_iq2xs_book_levels[4], lx_iq2s_book_levels[4],
    lx_iq3xxs_book_levels[8], lx_iq3s_book_levels[8], lx_iq1s_book_levels[4];
extern const uint16_t lx_iq2xxs_book[256], lx_iq2xs_book[512], lx_iq2s_book[1024], lx_iq3xxs_book[256],
    lx_iq3s_book[512], lx_iq1s_book[2048];

/* Bytes of one block of 256 values of the kind. */
size_t lx_iq_block_bytes(int kind);

/* n values (a multiple of 256) of the kind at src into out. */
void lx_iq_to_f32(float *out, const void *src, int kind, size_t n);

/* The IQ kind's entries as floats for 8 lanes (entry e's values at [8e], IQ3's at
** [4e]) and the 256 sign bytes as rows of sign-bit masks (−0.0 where a bit is set, for an
** xor; harness/core/iqlanes.h); made once. */
void lx_iq_lane_tables(int kind, const float **book, const float (**signs)[8]);

/* The same entries as bytes for the integer dots (IQ1's levels times 8: lx_iq_unit), and the
** 256 sign bytes as 8 bytes each, −1 where a bit is set and 1 elsewhere; made once. */
void lx_iq_byte_tables(int kind, const int8_t **book, const uint64_t **signs);

/* The same values by AVX2 (a CPU that has it), the same bits: returns how many
** it did, 0 for the ternary kinds (scalar only). */
size_t lx_iq_to_f32_avx2(float *out, const void *src, int kind, size_t n);

#endif
