/*
** tests/bench_bf16.c - `lenx-bench bf16`, the products part of `make bench
** BENCH=bf16` (scripts/bench_bf16.sh runs it, then whole scores): the weight
** products of Llama-3.2-1B's shape (hidden 2048, intermediate 8192, 32/8
** heads of 64) at 4,096 rows, three ways in the same run, alternating:
**
**   fp32        lx_wlinear on fp32 weights in fast numerics (OpenBLAS sgemm)
**   bf16 W fast the same weights held as bf16 (a checkpoint used in place),
**               fast numerics: widened 256 rows at a time, then sgemm
**   bf16        numerics bf16: bf16 × bf16 → fp32 on oneDNN, W row-major
**               (copied into oneDNN's layout inside every call)
**   packed      the same with W packed once into that layout, as a model
**               loaded in numerics bf16 holds it (lx_model_pack)
**
** as GFLOP/s (best of REPS) and bf16 / fp32; then the tiled attention of the
** same shape (32 query heads, 8 key/value heads of 64, causal RoPE) at 4k and
** 16k tokens, fp32 (fast numerics) against numerics bf16 (the tiles' products
** on AMX's tiles where the CPU has them, and then also on AVX512-BF16's
** kernel beside them; on AVX512-BF16's kernel where it has only that; else
** the fp32 kernel on bf16 values), alternating; then the tile products
** alone, one thread, at the forward's block sizes, on each kernel the CPU
** has. The load average is printed: under load a ratio is a hint, not a
** result.
*/
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness/core/diag.h"
#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/blas.h"
#include "harness/engine/kernels/gemm.h"
#include "harness/engine/kernels/dnnl.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/wprod.h"

double lx_bench_best(int reps, void (*fn)(void *), void *arg);

struct prod {
    const char *name;
    long N, K;          /* out, in */
    float *x, *y, *w;
    uint16_t *h;
    void *pk;           /* h packed, or NULL where oneDNN has no layout for it */
    int side;
};

enum { SIDES = 4 };

#define M 4096

static void run(void *arg)
{
    struct prod *p = arg;
    lx_numerics_set(p->side >= 2 ? LX_NUMERICS_BF16 : LX_NUMERICS_FAST);
    struct lx_wmat W = p->side == 0 ? (struct lx_wmat){p->w, LX_DT_F32, 0, NULL, 0}
                     : p->side == 3 && p->pk ? (struct lx_wmat){p->pk, LX_DT_BF16, p->N, NULL, 0}
                                             : (struct lx_wmat){p->h, LX_DT_BF16, 0, NULL, 0};
    lx_wlinear(p->y, p->N, p->x, p->K, W, M, p->K, p->N, 0.0f);
}

/* ---- the tiled attention of the 1B shape ---- */

enum { AH = 32, AKV = 8, AD = 64 };

struct att {
    int T, bf16;
    float *qkv, *o;
    struct lx_spec spec;
    struct lx_tile_ws tw;
};

static void att_run(void *arg)
{
    struct att *a = arg;
    lx_numerics_set(a->bf16 ? LX_NUMERICS_BF16 : LX_NUMERICS_FAST);
    lx_gemm_amx_disable(a->bf16 == 2);      /* side 2: AVX512-BF16's tiles where AMX would run */
    int ld = (AH + 2 * AKV) * AD;
    struct lx_attn_shape sh = {.T = a->T, .H = AH, .KV = AKV, .D = AD, .ld = ld, .ldo = AH * AD, .causal = 1};
    lx_attn_tiled_forward(a->o, a->qkv, a->qkv + AH * AD, a->qkv + (AH + AKV) * AD, &a->spec, NULL, &sh, &a->tw);
}

/* Seconds (best of reps, the sides alternating) of one layer's attention at
** T in fp32 and in bf16 into t[0], t[1], and with AMX on, in bf16 on the
** AVX512-BF16 tiles into t[2]. q|k|v are bf16 values (as the model gives them
** in numerics bf16; rotated already, so the spec is plain). */
static void att_times(int T, int reps, int sides, double *t)
{
    struct att a = {.T = T};
    long ld = (AH + 2 * AKV) * AD, n = (long)T * ld;
    int nthr = omp_get_max_threads();
    a.qkv = malloc(sizeof(float) * (size_t)n), a.o = malloc(sizeof(float) * (size_t)T * AH * AD);
    for (long i = 0; i < n; i++)
        a.qkv[i] = lx_round_bf16((float)((i * 2654435761u) % 2001) * 1e-3f - 1.0f);
    struct lx_facts f = {.d_head = AD, .n_heads = AH, .length = T};
    lx_spec_init(&a.spec, &f);
    a.tw = (struct lx_tile_ws){.bq = LX_TILE_BQ, .bk = LX_TILE_BK, .n_thr = nthr};
    a.tw.scratch = malloc(sizeof(float) * lx_tile_thread_floats(LX_TILE_BQ, LX_TILE_BK, AD) * (size_t)nthr);
    a.tw.kpack = malloc(sizeof(float) * lx_tile_kpack_floats(T, AKV, AD));
    t[0] = t[1] = t[2] = 1e30;
    for (int r = 0; r < reps; r++)
        for (a.bf16 = 0; a.bf16 < sides; a.bf16++) {
            double s = lx_bench_best(1, att_run, &a);
            t[a.bf16] = s < t[a.bf16] ? s : t[a.bf16];
        }
    free(a.qkv), free(a.o), free(a.tw.scratch), free(a.tw.kpack);
    lx_gemm_amx_disable(0);
}

static void bench_attention(void)
{
    int amx = lx_gemm_amx_native(), sides = amx ? 3 : 2;
    printf("\ntiled attention, 32/8 heads of 64, causal, blocks %d x %d; tile products in bf16: %s; AMX: %s\n\n",
           LX_TILE_BQ, LX_TILE_BK,
           amx ? "AMX tiles" : lx_gemm_bf16_native() ? "AVX512-BF16 kernel"
                                                     : "fp32 kernel on bf16 values (no AVX512-BF16)",
           lx_gemm_amx_status());
    printf("| T | fp32 s | fp32 GFLOP/s | bf16 s | bf16 GFLOP/s | bf16 / fp32 |%s\n|---:|---:|---:|---:|---:|---:|%s\n",
           amx ? " bf16 on AVX512-BF16 s | AMX / AVX512-BF16 |" : "", amx ? "---:|---:|" : "");
    static const int Ts[] = {4096, 16384};
    for (int i = 0; i < 2; i++) {
        double t[3], flop = 2.0 * 2.0 * ((double)Ts[i] * Ts[i] / 2) * AD * AH;
        att_times(Ts[i], Ts[i] > 4096 ? 2 : 3, sides, t);
        printf("| %d | %.3f | %.0f | %.3f | %.0f | %.2fx |", Ts[i], t[0], flop / t[0] * 1e-9, t[1],
               flop / t[1] * 1e-9, t[0] / t[1]);
        if (amx)
            printf(" %.3f | %.2fx |", t[2], t[2] / t[1]);
        printf("\n");
    }
    lx_numerics_set(LX_NUMERICS_FAST);
}

/* ---- the attention's tile products alone ---- */

struct tprod {
    int m, n, k, bt, kernel;    /* kernel: 0 fp32 tiles, 1 AVX512-BF16, 2 AMX */
    float *A, *B, *Bp, *C;
    uint16_t *Ah, *Bh;
    long pstride, ldb32, ps32;  /* the bf16 panels' stride; the fp32 kernel's B row stride and panel stride */
};

static void tprod_run(void *arg)
{
    struct tprod *t = arg;
    for (int rep = 0; rep < 20; rep++)
        if (t->kernel == 0)
            lx_gemm_rows(t->C, t->n, t->A, t->k, t->Bp, t->ldb32, t->ps32, t->m, t->n, t->k, 1.0f, 1.0f);
        else if (t->kernel == 1)
            lx_gemm_rows_bf16_avx512(t->C, t->n, t->Ah, t->k, 2, t->Bh, t->pstride, t->m, t->n, t->k, 1.0f, 1.0f);
        else
            lx_gemm_rows_bf16_amx(t->C, t->n, t->Ah, t->k, 2, t->Bh, t->pstride, t->m, t->n, t->k, 1.0f, 1.0f, 0);
}

/* One thread's tile products at the forward's block sizes (the tiled
** attention runs one per thread): Q·Kᵀ (512 queries × 256 keys × 64) and
** P·V (512 × 64 × 256), 20 calls each, on the fp32 tile kernel, the
** AVX512-BF16 one and, where the CPU has it, AMX's. */
static void bench_tile_products(void)
{
    int amx = lx_gemm_amx_native(), bf = lx_gemm_bf16_native();
    printf("\ntile products, one thread, GFLOP/s (best of 3 x 20 calls); last column: the bf16 kernels' largest "
           "distance from the fp32 kernel's product, over its largest value\n\n| product | fp32 tiles | AVX512-BF16 "
           "|%s max dist |\n|---|---:|---:|%s---:|\n",
           amx ? " AMX | AMX / AVX512-BF16 |" : "", amx ? "---:|---:|" : "");
    static const int shapes[2][4] = {{LX_TILE_BQ, LX_TILE_BK, AD, 1}, {LX_TILE_BQ, AD, LX_TILE_BK, 0}};
    for (int i = 0; i < 2; i++) {
        struct tprod t = {.m = shapes[i][0], .n = shapes[i][1], .k = shapes[i][2], .bt = shapes[i][3]};
        size_t na = (size_t)t.m * t.k, nb = (size_t)t.n * t.k;
        t.A = malloc(sizeof(float) * na), t.B = malloc(sizeof(float) * nb), t.C = calloc((size_t)t.m * t.n, 4);
        t.Ah = malloc(2 * na), t.Bh = malloc(2 * lx_gemm_bt_floats(t.bt ? t.n : t.k, t.bt ? t.k : t.n));
        t.Bp = malloc(sizeof(float) * lx_gemm_bt_floats(t.n, t.k));
        for (size_t e = 0; e < na; e++)
            t.A[e] = lx_round_bf16((float)((e * 2654435761u) % 2001) * 1e-3f - 1.0f);
        for (size_t e = 0; e < nb; e++)
            t.B[e] = lx_round_bf16((float)((e * 40503u) % 997) * 1e-3f - 0.5f);
        lx_f32_to_bf16_n(t.Ah, t.A, na);
        if (t.bt) {     /* B: the keys (N rows of K) */
            lx_gemm_pack_bt(t.Bp, t.B, t.k, t.n, t.k);
            lx_gemm_bf16_pack_bt(t.Bh, t.B, t.k, t.n, t.k);
            t.pstride = t.ps32 = (long)t.k * LX_GEMM_NR, t.ldb32 = LX_GEMM_NR;
        } else {        /* B: the values (K rows of N, their own fp32 panels) */
            free(t.Bp), t.Bp = t.B, t.B = NULL;
            lx_gemm_bf16_pack_b(t.Bh, t.Bp, t.n, t.k, t.n);
            t.pstride = (long)lx_gemm_bt_floats(t.k, LX_GEMM_NR), t.ldb32 = t.n, t.ps32 = LX_GEMM_NR;
        }
        /* first, one call of each into its own C (beta 0): the same product, up to the sums' rounding */
        size_t nc = (size_t)t.m * t.n;
        float *ref = malloc(sizeof(float) * nc), *got = malloc(sizeof(float) * nc);
        double dev[3] = {0}, top = 0;
        lx_gemm_rows(ref, t.n, t.A, t.k, t.Bp, t.ldb32, t.ps32, t.m, t.n, t.k, 1.0f, 0.0f);
        for (size_t e = 0; e < nc; e++)
            top = fmax(top, fabs(ref[e]));
        for (int kn = 1; kn < (amx ? 3 : 2); kn++) {
            if (kn == 1)
                lx_gemm_rows_bf16_avx512(got, t.n, t.Ah, t.k, 2, t.Bh, t.pstride, t.m, t.n, t.k, 1.0f, 0.0f);
            else
                lx_gemm_rows_bf16_amx(got, t.n, t.Ah, t.k, 2, t.Bh, t.pstride, t.m, t.n, t.k, 1.0f, 0.0f, 0);
            for (size_t e = 0; e < nc; e++)
                dev[kn] = fmax(dev[kn], fabs((double)got[e] - ref[e]) / top);
        }
        free(ref), free(got);
        double flop = 20 * 2.0 * t.m * t.n * t.k, g[3] = {0};
        for (int r = 0; r < 3; r++)
            for (t.kernel = 0; t.kernel < (amx ? 3 : 2); t.kernel++) {
                double sec = lx_bench_best(1, tprod_run, &t), v = flop / sec * 1e-9;
                g[t.kernel] = v > g[t.kernel] ? v : g[t.kernel];
            }
        printf("| %s %dx%dx%d | %.0f | %.0f%s |", t.bt ? "Q.K^T" : "P.V", t.m, t.n, t.k, g[0], g[1],
               bf ? "" : " (plain C: no AVX512-BF16)");
        if (amx)
            printf(" %.0f | %.2fx |", g[2], g[2] / g[1]);
        printf(" %.1e |", amx ? fmax(dev[1], dev[2]) : dev[1]);
        printf("\n");
        free(t.A), free(t.B), free(t.Bp), free(t.C), free(t.Ah), free(t.Bh);
    }
}

int lx_bench_bf16(void)
{
    struct prod shapes[] = {
        {.name = "q (and o) 2048x2048", .N = 2048, .K = 2048}, {.name = "k, v 512x2048", .N = 512, .K = 2048},
        {.name = "gate, up 8192x2048", .N = 8192, .K = 2048},  {.name = "down 2048x8192", .N = 2048, .K = 8192},
    };
    char blas[256], dnnl[128];
    double load[3] = {0};
    FILE *la = fopen("/proc/loadavg", "r");
    if (la && fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
        load[0] = -1;
    if (la)
        fclose(la);
    lx_blas_describe(blas, sizeof blas);
    lx_dnnl_describe(dnnl, sizeof dnnl);
    printf("lenx bench bf16: %d threads, %s, oneDNN %s, load %.2f; %d rows, GFLOP/s best of 3\n\n",
           omp_get_max_threads(), blas, dnnl, load[0], M);
    printf("| product | fp32 | bf16 W, fast | bf16 numerics | packed | bf16 / fp32 | packed / fp32 |\n"
           "|---|---:|---:|---:|---:|---:|---:|\n");
    double tot[SIDES] = {0};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        struct prod *p = &shapes[s];
        size_t nx = (size_t)M * p->K, nw = (size_t)p->N * p->K;
        p->x = malloc(sizeof(float) * nx), p->y = malloc(sizeof(float) * (size_t)M * p->N);
        p->w = malloc(sizeof(float) * nw), p->h = malloc(sizeof(uint16_t) * nw);
        for (size_t i = 0; i < nx; i++)
            p->x[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
        for (size_t i = 0; i < nw; i++)
            p->w[i] = lx_round_bf16((float)((i * 40503u) % 997) * 1e-4f - 0.05f);
        lx_f32_to_bf16_n(p->h, p->w, nw);
        lx_numerics_set(LX_NUMERICS_BF16);
        size_t pb = lx_wmat_packed_bytes(p->N, p->K);
        p->pk = pb ? calloc(1, pb) : NULL;
        if (p->pk)
            lx_wmat_pack(p->pk, (struct lx_wmat){p->h, LX_DT_BF16, 0, NULL, 0}, p->N, p->K);
        double flop = 2.0 * M * p->N * p->K, g[SIDES];
        for (int side = 0; side < SIDES; side++) {
            p->side = side;
            run(p);     /* warm: page faults, oneDNN's primitive */
        }
        double best[SIDES] = {1e30, 1e30, 1e30, 1e30};
        for (int r = 0; r < 3; r++)
            for (int side = 0; side < SIDES; side++) {
                p->side = side;
                double t = lx_bench_best(1, run, p);
                best[side] = t < best[side] ? t : best[side];
            }
        for (int side = 0; side < SIDES; side++) {
            g[side] = flop / best[side] * 1e-9;
            tot[side] += best[side];
        }
        printf("| %s | %.0f | %.0f | %.0f | %.0f%s | %.2fx | %.2fx |\n", p->name, g[0], g[1], g[2], g[3],
               p->pk ? "" : " (row-major: no layout)", g[2] / g[0], g[3] / g[0]);
        free(p->x), free(p->y), free(p->w), free(p->h), free(p->pk);
    }
    printf("| all four (time) | %.3f s | %.3f s | %.3f s | %.3f s | %.2fx | %.2fx |\n", tot[0], tot[1], tot[2], tot[3],
           tot[0] / tot[2], tot[0] / tot[3]);
    lx_numerics_set(LX_NUMERICS_FAST);
    bench_attention();
    bench_tile_products();
    return 0;
}
