/*
** tests/bench_gemm.c - `make bench BENCH=gemm`: the portable sgemm
** (harness/engine/kernels/gemm.c) against OpenBLAS on the same operands, in
** the same run, as GFLOP/s and the ratio portable / OpenBLAS, at 1 thread and
** at all threads.
**
**   2048³       the square reference product
**   T×2752×512  the medium model's MLP up-projection w13 (SwiGLU, d_mlp 1376) at T = 4096
**   T×512×1376  its down-projection w2
**   T×512×512   the attention output projection wo
**   T×512×512 ᵀ the weight gradient dW = dyᵀ x of wo (K = T)
**   256×256×64  a tile of the tiled attention, S = Q Kᵀ
**
** Each side is timed by best of N (N by the product's size); the sides
** alternate, so a change of load hits both. The machine's load average is
** printed: under load the ratio is a hint, not a result.
*/
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness/engine/kernels/blas.h"
#include "harness/engine/kernels/gemm.h"

struct gshape {
    const char *name;
    int M, N, K, ta, tb;
};

static double secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds of one call of the OpenBLAS (which 0), the portable (1) or the
** portable product held to its AVX2 kernel (2). */
static double one(const struct gshape *s, int which, float *A, float *B, float *C)
{
    int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    double t0 = secs();
    if (which == 1)
        lx_gemm_portable(C, s->N, A, lda, B, ldb, s->M, s->N, s->K, s->ta, s->tb, 1.0f, 0.0f);
    else if (which == 2)
        lx_gemm_portable_avx2(C, s->N, A, lda, B, ldb, s->M, s->N, s->K, s->ta, s->tb, 1.0f, 0.0f);
    else
        lx_gemm(C, s->N, A, lda, B, ldb, s->M, s->N, s->K, s->ta, s->tb, 1.0f, 0.0f);
    return secs() - t0;
}

static void shape_row(const struct gshape *s, int threads)
{
    size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
    float *A = malloc(sizeof(float) * na), *B = malloc(sizeof(float) * nb), *C = malloc(sizeof(float) * nc);
    for (size_t i = 0; i < na; i++)
        A[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    for (size_t i = 0; i < nb; i++)
        B[i] = (float)((i * 40503u) % 1000) * 1e-3f - 0.5f;
    double flop = 2.0 * s->M * s->N * s->K, best[3] = {1e300, 1e300, 1e300};
    int reps = flop > 1e10 ? 3 : flop > 1e9 ? 5 : flop > 1e8 ? 10 : 200;
    omp_set_num_threads(threads);
    one(s, 0, A, B, C), one(s, 1, A, B, C);     /* warm-up: pages, packing buffers */
    for (int r = 0; r < reps; r++)
        for (int p = 0; p < 3; p++) {
            double t = one(s, p, A, B, C);
            best[p] = t < best[p] ? t : best[p];
        }
    printf("| %-12s | %5d x %5d x %5d | %d | %7.1f | %7.1f | %5.2f | %7.1f | %5.2f |\n", s->name, s->M, s->N, s->K,
           threads, flop / best[0] / 1e9, flop / best[1] / 1e9, best[0] / best[1], flop / best[2] / 1e9,
           best[2] / best[1]);
    free(A), free(B), free(C);
}

int lx_bench_gemm(void)
{
    static const struct gshape shapes[] = {
        {"square", 2048, 2048, 2048, 0, 1},   {"mlp w13", 4096, 2752, 512, 0, 1},
        {"mlp w2", 4096, 512, 1376, 0, 1},    {"attn wo", 4096, 512, 512, 0, 1},
        {"dW wo", 512, 512, 4096, 1, 0},      {"attn tile", 256, 256, 64, 0, 1},
    };
    int max_threads = omp_get_max_threads();
    char blas[128];
    lx_blas_describe(blas, sizeof blas);
    double la[3] = {0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3)
            la[0] = -1.0;
        fclose(f);
    }
    printf("\ngemm: portable sgemm vs OpenBLAS (%s), GFLOP/s best of N, load average %.2f\n\n", blas, la[0]);
    printf("| %-12s | %-21s | %s | %7s | %7s | %5s | %7s | %5s |\n", "shape", "M x N x K", "t", "OpenBLAS", "portable",
           "ratio", "AVX2 k.", "x AVX2");
    printf("|--------------|-----------------------|---|---------|---------|-------|---------|-------|\n");
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int t = 1; t <= max_threads; t = t == max_threads ? t + 1 : max_threads)
            shape_row(&shapes[i], t);
    printf("\nratio = portable / OpenBLAS GFLOP/s; AVX2 k. = the portable product held to its AVX2 kernel,\n"
           "x AVX2 = portable / that (the AVX-512 kernel's gain where the CPU has it; the same bits); this run\n");
    omp_set_num_threads(max_threads);
    return 0;
}
