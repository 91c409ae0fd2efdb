/*
** harness/core/half.h - half-precision numbers: bf16 and IEEE f16
** to and from fp32 (docs/numerics.md#half-precision).
**
** bf16 is fp32's upper 16 bits (8 exponent bits, 7 mantissa bits): to fp32
** exactly by a shift; from fp32 rounded to nearest, ties to even, a NaN kept
** a (quiet) NaN of its sign. f16 (5 exponent, 10 mantissa bits) converts to
** fp32 exactly, subnormals included. Values are little-endian uint16_t, as in
** safetensors and GGUF files. The vector loops use AVX-512 or F16C where the
** CPU has them and give the same values as the scalar ones.
*/
#ifndef LX_HALF_H
#define LX_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "harness/core/f16.h"

/* The number type of a tensor as held: weights used in place from a mapped
** file keep their file's type. LX_DT_Q8_0 and the types after it are
** llama.cpp's quantized blocks (a row holds whole blocks), dequantized by
** lx_half_to_f32 exactly as the formats define them: Q8_0 (32 values: an f16
** scale d, 32 int8 q; d·q), Q4_0 (32: d, nibbles; d·(q − 8)), Q4_1 (32: d, an
** f16 min m, nibbles; d·q + m), Q5_0 and Q5_1 (as Q4_0 and Q4_1 with a fifth
** bit per value: d·(q − 16), d·q + m), Q2_K (256: d, dmin, 4-bit scales and
** mins per 16, 2-bit q; d·sc·q − dmin·m), Q3_K (256: d, 6-bit scales per 16,
** 3-bit q; d·(sc − 32)·(q − 4)), Q4_K and Q5_K (256: d, dmin, 6-bit scales
** and mins per 32; d·sc·q − dmin·m), Q6_K (256: d, int8 scales per 16;
** d·sc·(q − 32)), IQ4_NL (32: d, nibbles indexing 16 fixed levels; d·level),
** IQ4_XS (256: d, 6-bit scales per 32, IQ4_NL's levels; d·(sc − 32)·level).
** The types from LX_DT_IQ2_XXS on (LX_DT_LANES_N) are super-blocks of 256 whose
** values come from codebooks or are ternary (harness/core/iquant.h): IQ2_XXS,
** IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, TQ1_0 and TQ2_0. They have no
** 16-lane code; the IQ types have 8 lanes (dequantizing, and dots on their
** blocks: harness/core/iqlanes.h), the TQ types scalar loops only. */
enum lx_dtype { LX_DT_F32 = 0, LX_DT_BF16 = 1, LX_DT_F16 = 2, LX_DT_Q8_0 = 3, LX_DT_Q4_0 = 4, LX_DT_Q4_K = 5,
                LX_DT_Q5_K = 6, LX_DT_Q6_K = 7, LX_DT_Q4_1 = 8, LX_DT_Q5_0 = 9, LX_DT_Q5_1 = 10, LX_DT_Q2_K = 11,
                LX_DT_Q3_K = 12, LX_DT_IQ4_NL = 13, LX_DT_IQ4_XS = 14, LX_DT_IQ2_XXS = 15, LX_DT_IQ2_XS = 16,
                LX_DT_IQ2_S = 17, LX_DT_IQ3_XXS = 18, LX_DT_IQ3_S = 19, LX_DT_IQ1_S = 20, LX_DT_IQ1_M = 21,
                LX_DT_TQ1_0 = 22, LX_DT_TQ2_0 = 23, LX_DT_N };

/* The types below this one have vector lanes and dots that read their blocks. */
#define LX_DT_LANES_N LX_DT_IQ2_XXS

#define LX_Q8_0_VALUES 32   /* values of a Q8_0 block */
#define LX_Q8_0_BYTES 34    /* its bytes: the f16 scale, then 32 int8 */

/* Values and bytes of one block of a quantized type (1 and the value's bytes
** for the float types): Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL hold 32
** values, the K-quants, IQ4_XS and the types after it 256. */
static inline size_t lx_dtype_block(int t)
{
    static const unsigned short values[LX_DT_N] = {1,  1,   1,   32,  32,  256, 256, 256, 32,  32,  32,  256,
                                                      256, 32, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256};
    return values[t];
}

static inline size_t lx_dtype_block_bytes(int t)
{
    static const unsigned char bytes[LX_DT_N] = {4,   2,  2,   34, 18, 144, 176, 210, 20, 22, 24, 84,
                                                     110, 18, 136, 66, 74, 82,  98,  110, 50, 56, 54, 66};
    return bytes[t];
}

/* Where in a block of quantized type t its f16 scales lie: which 0 the
** scale d, 1 the min's scale (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K); -1 for none
** (and for IQ1_M, whose d is the top nibbles of its four 16-bit words at 48). */
int lx_dtype_scale_at(int t, int which);

/* The type's name as llama.cpp spells it ("F32", "Q4_K", ...). */
static inline const char *lx_dtype_name(int t)
{
    static const char *const names[LX_DT_N] = {"F32",  "BF16", "F16",  "Q8_0", "Q4_0", "Q4_K", "Q5_K",
                                               "Q6_K", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "IQ4_NL", "IQ4_XS",
                                               "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M",
                                               "TQ1_0", "TQ2_0"};
    return t >= 0 && t < LX_DT_N ? names[t] : "?";
}

/* Bytes of one value of a float type (F32, BF16, F16). */
static inline size_t lx_dtype_size(int t)
{
    return t == LX_DT_F32 ? 4 : 2;
}

/* Bytes of n values of type t (n a multiple of its block): where value n begins. */
static inline size_t lx_dtype_bytes(int t, size_t n)
{
    return n / lx_dtype_block(t) * lx_dtype_block_bytes(t);
}

static inline float lx_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t lx_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);    /* NaN: quiet, sign kept */
    u += 0x7fffu + ((u >> 16) & 1);             /* to nearest, ties to even (overflow rounds to inf) */
    return (uint16_t)(u >> 16);
}

/* f in bf16's precision, as a float (rounded as lx_f32_to_bf16). */
static inline float lx_round_bf16(float f)
{
    return lx_bf16_to_f32(lx_f32_to_bf16(f));
}

/* f to IEEE f16, rounded to nearest, ties to even (as F16C's vcvtps2ph):
** past 65504 to infinity, below 2^-14 to a subnormal, a NaN to a quiet NaN. */
uint16_t lx_f32_to_f16(float f);
/* n floats (a multiple of 32) to Q8_0 blocks, as llama.cpp's reference
** quantizer makes them: per block d = max|x| / 127 (stored as f16), each
** value round(x / d) half away from zero. */
void lx_f32_to_q8_0(unsigned char *out, const float *src, size_t n);
/* n floats to type t (F32, F16, BF16 or Q8_0; n a multiple of its block). */
void lx_f32_to_type(void *out, const float *src, int t, size_t n);

/* n values of type t at src to floats (exact): quantized blocks in AVX-512
** lanes where the CPU has them, the same values as the block-by-block
** reference, lx_half_to_f32_scalar. */
void lx_half_to_f32(float *out, const void *src, int t, size_t n);
void lx_half_to_f32_scalar(float *out, const void *src, int t, size_t n);
/* The lanes lx_half_to_f32 dequantizes in: 16 on an AVX-512 CPU (every quantized type), 8 on one
** with AVX2 (Q8_0, Q4_0, IQ4_NL, Q4_K and Q6_K), else 0 (the scalar loops). lanes 8 asks for the 8
** lanes on an AVX-512 CPU (tests, benches), 0 as the CPU has. Returns the lanes now used. */
int lx_half_lanes(int lanes);
/* n floats to bf16, rounded to nearest even. */
void lx_f32_to_bf16_n(uint16_t *out, const float *src, size_t n);
/* Two rows of n floats to bf16 pairs, interleaved: out[2i] = a[i], out[2i + 1]
** = b[i] (0 when b is NULL), each rounded as lx_f32_to_bf16. */
void lx_f32_to_bf16_pairs(uint16_t *out, const float *a, const float *b, size_t n);
/* n values of type t at src to bf16: a copy for bf16, else rounded once. */
void lx_to_bf16(uint16_t *out, const void *src, int t, size_t n);
/* Every value of x (n floats) rounded to bf16's precision in place. */
void lx_round_bf16_n(float *x, size_t n);
/* Every value of x (n floats) rounded to type t's precision in place: BF16 as lx_round_bf16_n, F16 as
** lx_f32_to_f16 (past 65504 to infinity); any other t leaves x as it is. */
void lx_round_half_n(float *x, int t, size_t n);
/* The index of the first finite value of x (n floats) that f16 rounds to infinity (|x| >= 65520), or n. */
size_t lx_f16_first_over(const float *x, size_t n);

/* The index of the first non-finite value of n values of type t, or -1. */
long lx_half_first_nonfinite(const void *src, int t, size_t n);

#endif
