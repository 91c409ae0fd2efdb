/*
** harness/engine/kernels/blas.c - OpenBLAS behind one seam, and the naive reference.
**
** In portable numerics (numerics.h) every product goes to lenx's own
** fixed-order sgemm (gemm.c) instead: OpenBLAS's per-element result depends
** on M, N, the thread count and the kernels the CPU gets.
*/
#include "harness/engine/kernels/blas.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "harness/engine/kernels/gemm.h"
#include "harness/engine/kernels/numerics.h"

void lx_gemm(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int N, int K,
             int trans_a, int trans_b, float alpha, float beta)
{
    if (lx_numerics_get() == LX_NUMERICS_PORTABLE) {
        lx_gemm_portable(C, ldc, A, lda, B, ldb, M, N, K, trans_a, trans_b, alpha, beta);
        return;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void lx_gemm_naive(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int N,
                   int K, int trans_a, int trans_b, float alpha, float beta)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int k = 0; k < K; k++) {
                float a = trans_a ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                float b = trans_b ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                acc += (double)a * b;
            }
            float prev = beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j];
            C[(size_t)i * ldc + j] = alpha * (float)acc + prev;
        }
}

void lx_matmul(float *C, const float *A, const float *B, int M, int N, int K,
               int trans_a, int trans_b, float alpha, float beta)
{
    lx_gemm(C, N, A, trans_a ? M : K, B, trans_b ? K : N, M, N, K, trans_a, trans_b, alpha, beta);
}

void lx_matmul_naive(float *C, const float *A, const float *B, int M, int N, int K,
                     int trans_a, int trans_b, float alpha, float beta)
{
    lx_gemm_naive(C, N, A, trans_a ? M : K, B, trans_b ? K : N, M, N, K, trans_a, trans_b, alpha, beta);
}

int lx_blas_is_openmp(void)
{
    return openblas_get_parallel() == 2;
}

void lx_blas_describe(char *out, size_t n)
{
    static const char *par[] = {"sequential", "pthreads", "openmp"};
    int p = openblas_get_parallel();
    snprintf(out, n, "core=%s threading=%s", openblas_get_corename(), p >= 0 && p <= 2 ? par[p] : "?");
}

/* Kernel families by the widest vector unit they use. */
static int core_level(const char *core)
{
    static const char *const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids", "Zen4"};
    static const char *const avx2[] = {"Haswell", "Zen"};
    for (size_t i = 0; i < sizeof avx512 / sizeof *avx512; i++)
        if (strcasecmp(core, avx512[i]) == 0)
            return 3;
    for (size_t i = 0; i < sizeof avx2 / sizeof *avx2; i++)
        if (strcasecmp(core, avx2[i]) == 0)
            return 2;
    return 1;
}

int lx_blas_weaker_than_cpu(char *msg, size_t n)
{
    __builtin_cpu_init();
    int cpu = __builtin_cpu_supports("avx512f") ? 3 : __builtin_cpu_supports("avx2") ? 2 : 1;
    const char *core = openblas_get_corename();
    if (core_level(core) >= cpu)
        return 0;
    const char *forced = getenv("OPENBLAS_CORETYPE");
    snprintf(msg, n, "OpenBLAS runs its %s kernels on a CPU with %s%s%s%s; matrix products are slower "
             "than they could be\n  hint: %s", core, cpu == 3 ? "AVX-512" : "AVX2",
             forced ? " (OPENBLAS_CORETYPE=" : "", forced ? forced : "", forced ? ")" : "",
             forced ? "unset OPENBLAS_CORETYPE to let OpenBLAS pick" : "update OpenBLAS");
    return 1;
}
