/*
** harness/engine/kernels/blas.h - the one seam to OpenBLAS (docs/development.md#style).
**
** lx_matmul is the only caller of cblas_sgemm; lx_matmul_naive is the
** reference beside it that the tests compare against.
*/
#ifndef LX_BLAS_H
#define LX_BLAS_H

#include <stddef.h>

/* C (M, N) = alpha · op(A) · op(B) + beta · C, row-major; op(X) = X or Xᵀ.
** A is (M, K) or (K, M) when trans_a, B is (K, N) or (N, K) when trans_b. */
void lx_matmul(float *C, const float *A, const float *B, int M, int N, int K,
               int trans_a, int trans_b, float alpha, float beta);
void lx_matmul_naive(float *C, const float *A, const float *B, int M, int N, int K,
                     int trans_a, int trans_b, float alpha, float beta);

/* The same with leading dimensions, for strided views such as one head of a
** (T, H, D) tensor: lda, ldb, ldc are the row strides of A, B, C as stored. */
void lx_gemm(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int N, int K,
             int trans_a, int trans_b, float alpha, float beta);
void lx_gemm_naive(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int N,
                   int K, int trans_a, int trans_b, float alpha, float beta);

/* "core=Haswell threading=openmp" into out (size n), recorded with every run. */
void lx_blas_describe(char *out, size_t n);

/* OpenBLAS reads OPENBLAS_CORETYPE once, when it is loaded, and Debian 12's
** 0.3.21 falls back to its SSE3 (Prescott) kernels on a CPU it does not know.
** Called first thing in main(): when OpenBLAS picked kernels narrower than
** the CPU's widest vectors and the user did not set OPENBLAS_CORETYPE, sets it
** to the best core type for the CPU (and LENX_OPENBLAS_PICKED to what
** OpenBLAS picked) and returns 1: the caller then re-executes the program.
** In the re-executed process it takes that note (for lx_blas_notice, once)
** and returns 0. The user's own OPENBLAS_CORETYPE is always kept. */
int lx_blas_choose_core(void);
/* The re-execution failed: undo lx_blas_choose_core's variables. */
void lx_blas_choice_failed(void);

/* 1 and an error with a hint in msg (size n) when the kernels OpenBLAS runs
** need wider vectors than the CPU has (OPENBLAS_CORETYPE=SkylakeX on an AVX2
** machine): its first product would die on SIGILL. 0 when they run. */
int lx_blas_unrunnable(char *msg, size_t n);

/* 1 and a "note: ..." or "warning: ..." line with a hint in msg (size n) when
** the kernels deserve a word on stderr: lenx chose them (lx_blas_choose_core),
** or they are narrower than the CPU's, e.g. OPENBLAS_CORETYPE=Haswell on an
** AVX-512 machine. */
int lx_blas_notice(char *msg, size_t n);

/* 1 when OpenBLAS runs on OpenMP threads (the build lenx must link). */
int lx_blas_is_openmp(void);

#endif
