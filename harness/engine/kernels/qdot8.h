/*
** harness/engine/kernels/qdot8.h - activations rounded as llama.cpp's CPU
** backend rounds them before a weight product (`activations: llamacpp`,
** docs/numerics.md#activations-as-llamacpp-rounds-them), and the integer dot
** products of a decoding step on 8-bit activations and quantized weights.
**
** llama.cpp converts x, before each product with a weight matrix, to the
** weight type's partner: blocks of 32 int8 with an f16 scale (Q8_0; Q8_1
** holds the same values) for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL;
** blocks of 256 int8 with an fp32 scale (Q8_K) for the K-quants, IQ4_XS and
** the IQ1-IQ3 and TQ types;
** f16 for f16 weights, bf16 for bf16; fp32 weights take x as it is.
*/
#ifndef LX_QDOT8_H
#define LX_QDOT8_H

#include <stdint.h>

#include "harness/core/half.h"

enum lx_act_fmt { LX_ACT_FP32 = 0, LX_ACT_F16, LX_ACT_BF16, LX_ACT_Q8_0, LX_ACT_Q8_K };

/* The form x takes before a product with weights of type wtype. */
int lx_act_format(int wtype);
/* out (T, C, stride ldo) = x's values as fmt rounds them, as fp32 (Q8_0's
** f16 scale times q is exact; Q8_K's fp32 scale times q is rounded once). */
void lx_act_round(float *out, long ldo, const float *x, long ldx, long T, long C, int fmt);
/* One row of C values as fmt's blocks (Q8_0 or Q8_K): q[C] and a scale per
** block of 32 or 256 (Q8_0's as its f16 holds it). */
void lx_act_q8(int8_t *q, float *d, const float *x, long C, int fmt);

/* The lanes in which the integer dots take weights of type over rows of C
** values here (C a whole number of 256-value chunks), at most max: 16 (AVX-512
** with VNNI), 8 (AVX2 and FMA; the IQ1-IQ3 codebook types only 8, on either CPU),
** or 0 (none; the TQ types). Both give the same bits (qdot8.c). */
int lx_qdot8_lanes(int type, long C, int max);
/* Per row t of T (stride ldx), for weights of type: q (T·C int8), xl (T·C/4:
** each group of 4 values' block scale), xg (T·C/16: each 16 values' scale
** times the sum of their q) and q4 (T·C/4: each 4 values' sum of q), the
** forms lx_qdot8 reads. */
void lx_qdot8_prep(int8_t *q, float *xl, float *xg, int32_t *q4, const float *x, long ldx, long T, long C, int type);
/* Whether type's chunks hold integer scales: the quantized types whose x is Q8_K (one scale a
** chunk): the K-quants, IQ4_XS and the IQ1-IQ3 and TQ types. */
static inline int lx_qdot8_int_scales(int type)
{
    return type == LX_DT_Q4_K || type == LX_DT_Q5_K || type == LX_DT_Q6_K || type == LX_DT_Q2_K ||
           type == LX_DT_Q3_K || type == LX_DT_IQ4_XS || type >= LX_DT_LANES_N;
}
/* lx_qdot8's 8-lane dots of n = 1 or 2 rows (qdot8l.c). */
void lx_qdot8_rows8(float *out, const int8_t *q, const float *xl, const float *xg, const int32_t *q4, int n,
                    const void *w, int type, long C);
/* out[t] = x_t · w for n prepared rows and one row w of C values of type, in
** lanes (what lx_qdot8_lanes gave). */
void lx_qdot8(float *out, const int8_t *q, const float *xl, const float *xg, const int32_t *q4, int n, const void *w,
              int type, long C, int lanes);

#endif
