/*
** harness/engine/kernels/wprod.h - products with a weight matrix of any type:
** y = x · Wᵀ for W (out × in) held as fp32, or as bf16 or f16 values used in
** place from a mapped checkpoint (docs/numerics.md#half-precision).
**
** In fast and portable numerics a half-precision W is converted exactly to
** fp32 a block of rows at a time and multiplied by the mode's sgemm (gemm.h:
** portable gives the bits of the same weights held as fp32); a quantized W
** (GGUF's blocks) is dequantized exactly the same way. A product of a few
** rows (decoding) reads the half values directly in fast numerics, reads
** quantized blocks directly too (qdot.h; with the fused dots off, for
** benches and tests, each row dequantized into cache first). In
** bf16 numerics x is rounded to bf16, W taken as bf16 (rounded a block at a
** time unless it is bf16 already) and the product runs on oneDNN (dnnl.h),
** fp32 sums. With `activations: llamacpp` (numerics.h) x is first rounded
** as llama.cpp rounds it for W's type (qdot8.h), 512 rows at a time, and a
** decoding step's products on quantized W run the integer dots on its 8-bit
** blocks. The naive reference beside it sums in double (on the rounded x).
*/
#ifndef LX_WPROD_H
#define LX_WPROD_H

#include <stddef.h>

#include "harness/core/half.h"

/* A weight matrix (rows = out, cols = in), row-major as held or, in bf16
** numerics, packed once into oneDNN's layout (lx_wmat_pack). */
struct lx_wmat {
    const void *p;
    int type;           /* LX_DT_F32, LX_DT_BF16 or LX_DT_F16 (quantized types: formats that hold them) */
    long packed_rows;   /* 0: row-major; else packed bf16 (dnnl.h) of this many rows */
    const void *pt;     /* training (train.h): W also packed as the backward's B (dx = dy · W), or NULL */
    long row0;          /* packed: this tensor's first row in the packed matrix (q|k|v and w1|w3
                        ** packed as one, lx_model_pack); only a whole matrix (0) is multiplied */
};

/* y (T, OC), row stride ldy, = x (T, C), row stride ldx, · Wᵀ + beta · y. */
void lx_wlinear(float *y, long ldy, const float *x, long ldx, struct lx_wmat W, long T, long C, long OC, float beta);
/* Fast numerics' products of a few rows on quantized weights
** read the blocks directly (qdot.h) when on (the default); off, each weight
** row is dequantized first (the general path, for benches and tests). */
void lx_wprod_qdot(int on);
/* Whether those products read type's blocks directly here: every quantized type but the IQ1-IQ3
** and TQ types in 16 lanes (qdot.c), all but TQ1_0 and TQ2_0 in 8. */
int lx_wprod_fused(int type);
/* Fast numerics' products of a few rows on fp32, bf16 and f16 weights read them in place, in 16
** lanes on an AVX-512 CPU, in 8 on one with AVX2 (FMA, F16C), else by sgemm. lanes 8 asks for the
** 8-lane kernel where both run (tests, benches), -1 sgemm (benches' baseline); 0 as the CPU has.
** Returns the lanes now used (0: sgemm). */
int lx_wprod_lanes(int lanes);
/* The reference: each value of y a double sum (operands rounded to bf16 first in bf16 numerics). */
void lx_wlinear_naive(float *y, long ldy, const float *x, long ldx, struct lx_wmat W, long T, long C, long OC,
                      float beta);

/* The backward of y = x · Wᵀ in bf16 numerics: dx (T, C) = dy · W and
** dW (OC, C) += dyᵀ · x, all dense, with bf16 operands (dy, x rounded; W
** rounded unless it is bf16 already, or its packed W.pt) and fp32 sums on oneDNN. */
void lx_linear_backward_bf16(float *dx, float *dW, const float *dy, const float *x, struct lx_wmat W, long T,
                             long C, long OC);
/* Packing, in bf16 numerics: the bytes of an OC × C weight packed, or 0
** when it cannot be (other numerics, or no layout of oneDNN's here); W
** (any type, row-major) rounded to bf16 and packed into dst (that many
** zeroed bytes), a block of rows at a time; returns dst's view. */
size_t lx_wmat_packed_bytes(long OC, long C);
struct lx_wmat lx_wmat_pack(void *dst, struct lx_wmat W, long OC, long C);
/* Rows a part must start at a multiple of in an OC × C packed matrix (0: none). */
long lx_wmat_pack_block(long OC, long C);
/* W's OC rows into rows row0 .. row0 + OC of an N × C packed matrix at dst
** (row0 a multiple of lx_wmat_pack_block(N, C)); returns W's view in it. */
struct lx_wmat lx_wmat_pack_part(void *dst, struct lx_wmat W, long row0, long OC, long N, long C);
/* n dense floats to bf16 (lx_f32_to_bf16_n), in parallel blocks; not from inside a parallel region. */
void lx_to_bf16_dense(uint16_t *dst, const float *src, size_t n);
/* Row r of W (C values) as floats. */
void lx_wmat_row(float *out, struct lx_wmat W, long r, long C);
/* Rows r0 .. r0 + n of W (C values each) as floats: for packed W one reorder
** of the block (rows through the layout one value at a time only where the
** block does not start on the layout's blocks); one thread, so callers run
** blocks of lx_wmat_rows_step(W, C) rows in parallel. */
void lx_wmat_rows(float *out, struct lx_wmat W, long r0, long n, long C);
long lx_wmat_rows_step(struct lx_wmat W, long C);

/* What runs the products, recorded with every cell: the BLAS (blas.h), and in
** bf16 numerics oneDNN's implementation ("... bf16=brg:avx512_core_bf16 onednn=2.6.3"). */
void lx_products_describe(char *out, size_t n);

/* Bytes of the conversion buffers the products keep for rows of up to width values. */
double lx_wprod_scratch_bytes(long width);

/* Rows of a half-precision W converted per block (a multiple of 16). */
#define LX_WPROD_BLOCK 1024

#endif
