/*
** harness/engine/kernels/qdot.h - a few fp32 rows · one row of quantized
** weights (every GGUF type lenx reads), read from its blocks in AVX-512 lanes,
** for the products of a decoding step (wprod.c). How each type's sum is
** formed and how it differs from the dequantized row's dots: qdot.c.
*/
#ifndef LX_QDOT_H
#define LX_QDOT_H

#include "harness/core/half.h"

#define LX_QDOT_ROWS 8      /* rows of x per call, at most */

/* Is there a fused kernel for type on this CPU? */
int lx_qdot_has(int type);
/* Does type's kernel take the rows' sums per 32 values (lx_qdot_sums)? */
int lx_qdot_needs_sums(int type);
/* s[t·(C/32) + j] = Σ of x[t, 32j .. 32j + 31] for T rows x (stride ldx). */
void lx_qdot_sums(float *s, const float *x, long ldx, long T, long C);
/* out[t] = x_t · w for n rows x_t (stride ldx) and one row w of C values of
** type; xs the rows' sums (lx_qdot_sums) where the type needs them, else NULL. */
void lx_qdot(float *out, const float *x, long ldx, int n, const void *w, int type, long C, const float *xs);

#endif
