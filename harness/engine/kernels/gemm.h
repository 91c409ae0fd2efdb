/*
** harness/engine/kernels/gemm.h - lenx's own fixed-order sgemm, the matrix
** product of portable numerics (numerics.h; docs/numerics.md).
**
** Every element C[i][j] is one chain of fused multiply-adds over k = 0, 1,
** …, K − 1, started at 0 and rounded once per step (fmaf), then
** alpha·sum + beta·C[i][j] (a multiply and an add, each rounded). The chain
** depends on K alone: not on M, N, which rows or columns the call covers,
** the blocking, the thread count, or the CPU (the AVX2 + FMA kernel and the
** plain C one give the same bits). So a row block or a column block of a
** product is the same bits as the same rows or columns of the whole.
*/
#ifndef LX_GEMM_H
#define LX_GEMM_H

/* C (M, N) = alpha · op(A) · op(B) + beta · C, row-major with row strides
** lda, ldb, ldc, as lx_gemm (blas.h); beta 0 never reads C. */
void lx_gemm_portable(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int N, int K,
                      int trans_a, int trans_b, float alpha, float beta);

/* The same with the plain C kernel only (the fallback on a CPU without
** AVX2 + FMA; tests compare the two bit for bit). */
void lx_gemm_portable_plain(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int N,
                            int K, int trans_a, int trans_b, float alpha, float beta);

#endif
