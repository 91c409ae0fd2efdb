/*
** harness/engine/kernels/dnnl.h - the one seam to oneDNN (Debian's
** libdnnl-dev): bf16 × bf16 → fp32 matrix products for `numerics: bf16`
** (docs/numerics.md#half-precision). oneDNN picks its implementation for the CPU: AMX
** tiles where the CPU has them, AVX512-BF16's dot products where it has only
** those, a slower emulation on plain AVX-512, and its reference loops
** elsewhere; lx_dnnl_describe names the one it runs.
*/
#ifndef LX_DNNL_H
#define LX_DNNL_H

#include <stddef.h>
#include <stdint.h>

/* C (M, N) = op(A) · op(B) + beta · C, fp32 C with row stride ldc, bf16
** A and B as lx_gemm (blas.h) takes them: A (M, K) with row stride lda, or
** (K, M) with trans_a; B (K, N) with row stride ldb, or (N, K) with trans_b
** (a weight matrix as stored, out × in). oneDNN reads the transposed layouts
** through their strides, with no copy. Each product of two bf16 values is
** exact, the sums in fp32 in oneDNN's order. beta 0 never reads C. Returns 0,
** or -1 when oneDNN refuses (the message in lx_dnnl_error). Call from one
** thread at a time. */
int lx_dnnl_gemm_bf16(float *C, long ldc, const uint16_t *A, long lda, int trans_a, const uint16_t *B, long ldb,
                      int trans_b, long M, long N, long K, float beta);

/* The implementation oneDNN runs a bf16 product with ("brg:avx512_core_amx_bf16"),
** and the library's version, into out (size n). */
void lx_dnnl_describe(char *out, size_t n);
const char *lx_dnnl_error(void);

#endif
