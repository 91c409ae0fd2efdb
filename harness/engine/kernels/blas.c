/*
** harness/engine/kernels/blas.c - OpenBLAS behind one seam, and the naive reference.
**
** In portable numerics (numerics.h) every product goes to lenx's own
** fixed-order sgemm (gemm.c) instead: OpenBLAS's per-element result depends
** on M, N, the thread count and the kernels the CPU gets.
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/kernels/blas.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    if (M == 1 && K > 0) {  /* a row: sgemv (0.3.21's sgemm runs its tile kernels on one padded row); sgemv
                             ** returns at once for K = 0 where sgemm scales C by beta */
        if (beta == 0.0f)   /* as sgemm: C's old values (NaN too) unread */
            memset(C, 0, sizeof(float) * (size_t)N);
        cblas_sgemv(CblasRowMajor, trans_b ? CblasNoTrans : CblasTrans, trans_b ? N : K, trans_b ? K : N, alpha, B,
                    ldb, A, trans_a ? lda : 1, beta, C, 1);
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

/* Kernel families by the widest vector unit they use: 3 AVX-512, 2 AVX2, 1 older. */
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

/* The widest vectors this CPU has, as a core level, and the core type of
** OpenBLAS 0.3.21's DYNAMIC_ARCH list that uses them all: Cooperlake (the
** SkylakeX kernels plus bf16 ones) where AVX512-BF16 is there, SkylakeX for
** AVX-512 F/BW/VL/DQ/CD, Haswell for AVX2 + FMA; NULL below that. */
static int cpu_level(const char **best)
{
    __builtin_cpu_init();
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512cd");
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    *best = avx512 ? (__builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX") : avx2 ? "Haswell" : NULL;
    return avx512 ? 3 : avx2 ? 2 : 1;
}

/* The kernels OpenBLAS picked, or what LENX_TEST_OPENBLAS_CORE pretends it
** picked: the one way a test can make lenx see a CPU that OpenBLAS does not
** know (docs/numerics.md#a-cpu-that-openblas-does-not-know). */
static const char *picked_core(void)
{
    const char *pretend = getenv("LENX_TEST_OPENBLAS_CORE");
    return pretend && *pretend ? pretend : openblas_get_corename();
}

/* What OpenBLAS picked before lenx re-ran itself with better kernels; empty
** when it did not (set from LENX_OPENBLAS_PICKED by lx_blas_choose_core). */
static char chosen_over[64];

int lx_blas_choose_core(void)
{
    const char *picked = getenv("LENX_OPENBLAS_PICKED");
    if (picked) {
        snprintf(chosen_over, sizeof chosen_over, "%s", picked);
        unsetenv("LENX_OPENBLAS_PICKED");   /* once: not again in a lenx this one starts */
        return 0;
    }
    const char *best;
    if (getenv("OPENBLAS_CORETYPE") || core_level(picked_core()) >= cpu_level(&best) || !best)
        return 0;
    setenv("LENX_OPENBLAS_PICKED", picked_core(), 1);
    setenv("OPENBLAS_CORETYPE", best, 1);
    return 1;
}

void lx_blas_choice_failed(void)
{
    unsetenv("LENX_OPENBLAS_PICKED");
    unsetenv("OPENBLAS_CORETYPE");
}

int lx_blas_unrunnable(char *msg, size_t n)
{
    const char *best, *core = openblas_get_corename();
    int cpu = cpu_level(&best);
    if (core_level(core) <= cpu)
        return 0;
    const char *forced = getenv("OPENBLAS_CORETYPE");
    snprintf(msg, n, "OpenBLAS runs its %s kernels%s%s%s, which use AVX-512, and this CPU has %s: its first "
             "product would stop on an illegal instruction\n  hint: unset OPENBLAS_CORETYPE (lenx picks the best "
             "kernels this CPU runs%s%s), or use numerics: portable, which runs no OpenBLAS product", core,
             forced ? " (OPENBLAS_CORETYPE=" : "", forced ? forced : "", forced ? ")" : "",
             cpu == 2 ? "AVX2 at most" : "no AVX2", best ? ": " : "", best ? best : "");
    return 1;
}

int lx_blas_notice(char *msg, size_t n)
{
    const char *best, *core = openblas_get_corename();
    int cpu = cpu_level(&best);
    const char *width = cpu == 3 ? "AVX-512" : "AVX2";
    if (chosen_over[0] && core_level(core) >= cpu) {
        snprintf(msg, n, "note: OpenBLAS picked its %s kernels on this CPU, which it does not know; lenx "
                 "ran itself again with OPENBLAS_CORETYPE=%s and runs its %s kernels (%s)\n"
                 "  hint: set OPENBLAS_CORETYPE yourself to choose other kernels", chosen_over,
                 getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "?", core, width);
        return 1;
    }
    if (core_level(core) >= cpu)
        return 0;
    const char *forced = getenv("OPENBLAS_CORETYPE");
    if (chosen_over[0])
        snprintf(msg, n, "warning: OpenBLAS runs its %s kernels on a CPU with %s although lenx asked for "
                 "OPENBLAS_CORETYPE=%s; matrix products are slower than they could be\n"
                 "  hint: this OpenBLAS build lacks those kernels; Debian's libopenblas0-openmp has them",
                 core, width, forced ? forced : "?");
    else if (forced)
        snprintf(msg, n, "warning: OpenBLAS runs its %s kernels on a CPU with %s (OPENBLAS_CORETYPE=%s); "
                 "matrix products are slower than they could be\n"
                 "  hint: unset OPENBLAS_CORETYPE to run the %s kernels (lenx sets them where OpenBLAS "
                 "would pick narrower ones)", core, width, forced, best);
    else
        snprintf(msg, n, "warning: OpenBLAS runs its %s kernels on a CPU with %s; matrix products are slower "
                 "than they could be\n  hint: set OPENBLAS_CORETYPE=%s", core, width, best);
    return 1;
}
