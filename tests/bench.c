/*
** tests/bench.c - `make bench`: each fast path timed against its baseline in
** the same run, reported as a ratio (never asserted: speed is for reading).
**
**   spec rows   lx_spec_row tables vs lx_spec_logit per element (the naive
**               reference), stack [scaleinv, infoscale], N = 1e5
**   gaussian    one gaussian cell (N = 1e4, 2000 rows) on all threads vs 1
**   matmul      lx_matmul (OpenBLAS) vs lx_matmul_naive, 256 × 256 × 256
**   attention   one head of the BLAS path vs the naive reference under
**               ReRoPE, StreamingLLM and a window (T = 512), and the cost of
**               the far-key GEMM: ReRoPE's head path vs plain RoPE's (T = 2048)
**   tiled       the tiled forward (causal RoPE, 4 × 64, T = 1k … 32k): its
**               GFLOP/s next to sgemm's (2048³, tile-shaped products, a
**               4096² Q Kᵀ) measured in the same run, block sizes at 16k,
**               method features vs plain at 4k, a 256-key window vs full
**               attention at 32k, P rounded to f16 as llama.cpp's half cache
**               has it at 4k (vs the online softmax, vs the head path that did
**               it before), the e^x loop of fast numerics vs portable
**               numerics', vs the head path (1k … 16k) and the naive
**               reference (1k), peak RSS
**   gemm        the portable sgemm vs OpenBLAS, 2048³ and the model's
**               shapes, 1 and all threads (tests/bench_gemm.c)
**   decode      greedy tokens through the KV cache vs full passes at 16k, and a
**               16x passkey cell end to end both ways (tests/bench_decode.c)
**   model       training and evaluation tokens/s vs PyTorch (tests/bench_model.c)
**   train       the tiled attention backward vs sgemm and vs the materialised
**               backward, a training step tiled vs materialised, and a bf16 step
**               of the 25M shape vs fp32 (tests/bench_train.c; `trainbf16`
**               the last alone)
**
**   glu         SwiGLU's, GeGLU's and GELU's forward and backward in AVX-512 lanes vs
**               the libm loops portable numerics run
**
** `lenx-bench micro` runs all but the model and train parts, `lenx-bench
** tiled`, `lenx-bench gemm`, `lenx-bench decode`, `lenx-bench model` and
** `lenx-bench train` one part each (`lenx-bench tiledstats` only the cost of
** row statistics from the tiles, `lenx-bench tilehalf` only the f16 rounding of P,
** `lenx-bench tileexp` only the softmax's e^x loops).
*/
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "harness/core/half.h"
#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/blas.h"
#include "harness/engine/kernels/gemm.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/ops.h"
#include "harness/engine/kernels/qdot.h"
#include "harness/engine/kernels/qdot8.h"
#include "harness/engine/kernels/wprod.h"
#include "harness/sweep/plan.h"
#include "harness/core/rng.h"
#include "harness/sweep/run.h"
#include "tests/qblocks.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best of `reps` timings of fn(arg). */
static double best_of(int reps, void (*fn)(void *), void *arg)
{
    double best = 1e300;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        fn(arg);
        double dt = now() - t0;
        best = dt < best ? dt : best;
    }
    return best;
}

static void report(const char *name, const char *what, const char *base, double t_fast, double t_base)
{
    printf("| %-10s | %-34s | %-22s | %9.4f | %9.4f | %7.2fx |\n", name, what, base, t_fast, t_base, t_base / t_fast);
}

/* ---- spec rows ---- */

struct rows_arg {
    struct lx_spec spec;
    long n;
    double *A, *B, sink;
};

static void rows_fast(void *p)
{
    struct rows_arg *a = p;
    lx_spec_row(&a->spec, 0, a->n, 0, a->n, a->A, a->B);
    a->sink += a->A[a->n - 1] * 0.5 + a->B[a->n - 1];
}

static void rows_naive(void *p)
{
    struct rows_arg *a = p;
    for (long t = 0; t < a->n; t++)
        a->A[t] = lx_spec_logit(&a->spec, 0, a->n, t, 0.5);
    a->sink += a->A[a->n - 1];
}

/* ---- gaussian cell ---- */

struct cell_arg {
    struct lx_plan *plan;
    int threads;
};

static void cell_run(void *p)
{
    struct cell_arg *a = p;
    omp_set_num_threads(a->threads);
    struct lx_result res = {0};
    struct lx_error err;
    if (lx_cell_run(a->plan, &a->plan->cells[0], NULL, NULL, &res, &err) < 0)
        fprintf(stderr, "bench: %s\n", err.msg);
    lx_result_release(&res);
}

/* ---- matmul ---- */

struct mm_arg {
    float *A, *B, *C;
    int n;
};

static void mm_fast(void *p)
{
    struct mm_arg *a = p;
    lx_matmul(a->C, a->A, a->B, a->n, a->n, a->n, 0, 1, 1.0f, 0.0f);
}

static void mm_naive(void *p)
{
    struct mm_arg *a = p;
    lx_matmul_naive(a->C, a->A, a->B, a->n, a->n, a->n, 0, 1, 1.0f, 0.0f);
}

/* ---- attention ---- */

struct att_arg {
    struct lx_spec spec;
    int T, D;
    float *q, *k, *v, *o, *P;
    struct lx_attn_ws ws;
};

static void att_fast(void *p)
{
    struct att_arg *a = p;
    struct lx_attn_shape sh = {.T = a->T, .H = 1, .KV = 1, .D = a->D, .ld = a->D, .ldo = a->D, .causal = 1};
    lx_attn_head_forward(a->o, a->P, a->q, a->k, a->v, &a->spec, 0, &sh, &a->ws);
}

static void att_naive(void *p)
{
    struct att_arg *a = p;
    lx_attention_forward(a->o, a->P, a->q, a->k, a->v, &a->spec, a->T, 1, a->D, 1);
}

/* One causal head of T tokens, D = 32, under a stack. */
static int att_init(struct att_arg *a, const char *stack, int T, struct lx_error *err)
{
    struct lx_doc doc;
    struct lx_stack st;
    int rc = lx_doc_load_text(&doc, stack, "bench", err);
    if (rc == LX_OK && (rc = lx_stack_parse(&st, doc.root, err)) == LX_OK) {
        struct lx_facts f = {.d_head = 32, .train_len = 64, .n_heads = 1, .length = T,
                             .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
        rc = lx_stack_compile(&st, &f, &a->spec, err);
        /* the spec points into st's params: keep st (a few bytes) for the process */
    }
    a->T = T;
    a->D = 32;
    size_t n = (size_t)T * 32;
    a->q = malloc(sizeof(float) * n), a->k = malloc(sizeof(float) * n), a->v = malloc(sizeof(float) * n);
    a->o = malloc(sizeof(float) * n), a->P = malloc(sizeof(float) * (size_t)T * T);
    a->ws.tab = malloc(sizeof(double) * 2 * (size_t)T);
    a->ws.far = malloc(sizeof(float) * lx_attn_far_floats(T, 32));
    struct lx_rng r;
    lx_rng_init(&r, 2, 0, LX_RNG_INIT);
    for (size_t i = 0; i < n; i++)
        a->q[i] = (float)lx_rng_normal(&r), a->k[i] = (float)lx_rng_normal(&r), a->v[i] = (float)lx_rng_normal(&r);
    return rc;
}

static void att_free(struct att_arg *a)
{
    free(a->q), free(a->k), free(a->v), free(a->o), free(a->P), free(a->ws.tab), free(a->ws.far);
}

static int bench_attention(void)
{
    static const char *const stacks[][2] = {
        {"[rope, {rerope: {window: 16}}]", "rope+rerope T=512"},
        {"[rope, {streaming: {sinks: 4}}]", "rope+streaming T=512"},
        {"[rope, {window: {size: 64}}, infoscale]", "rope+window+infoscale T=512"},
    };
    struct lx_error err;
    for (int i = 0; i < 3; i++) {
        struct att_arg a = {0};
        if (att_init(&a, stacks[i][0], 512, &err) < 0)
            return fprintf(stderr, "bench: %s\n", err.msg), 1;
        report("attention", stacks[i][1], "naive reference", best_of(10, att_fast, &a), best_of(2, att_naive, &a));
        att_free(&a);
    }
    struct att_arg far = {0}, plain = {0};
    if (att_init(&far, "[rope, {rerope: {window: 16}}]", 2048, &err) < 0 || att_init(&plain, "rope", 2048, &err) < 0)
        return fprintf(stderr, "bench: %s\n", err.msg), 1;
    report("far keys", "rerope head path T=2048", "plain rope head path", best_of(5, att_fast, &far),
           best_of(5, att_fast, &plain));
    att_free(&far), att_free(&plain);
    return 0;
}

/* ---- tiled attention ---- */

#define LX_BENCH_BQ LX_TILE_BQ     /* the model's blocks (harness/engine/kernels/attention.h) */
#define LX_BENCH_BK LX_TILE_BK

/* One causal layer of attention, H = 4 heads × D = 64, q|k|v in one (T, 3HD)
** buffer as in the model. */
struct tile_arg {
    struct lx_spec spec;
    int T, H, D, causal;
    float *qkv, *o;
    struct lx_tile_ws tw;
    float *P, *far;     /* head path: (n_thr, T, T) probabilities, far scratch */
    double *tab;        /* (n_thr, 2T) */
};

static int tile_init(struct tile_arg *a, const char *stack, int T, struct lx_error *err)
{
    struct lx_doc doc;
    struct lx_stack st;
    memset(a, 0, sizeof *a);
    a->T = T, a->H = 4, a->D = 64, a->causal = 1;
    int rc = lx_doc_load_text(&doc, stack, "bench", err);
    if (rc == LX_OK && (rc = lx_stack_parse(&st, doc.root, err)) == LX_OK) {
        struct lx_facts f = {.d_head = a->D, .train_len = 512, .n_heads = a->H, .length = T,
                             .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
        rc = lx_stack_compile(&st, &f, &a->spec, err);     /* st stays for the process, as above */
    }
    size_t n = (size_t)T * 3 * a->H * a->D, nthr = (size_t)omp_get_max_threads();
    a->qkv = malloc(sizeof(float) * n), a->o = malloc(sizeof(float) * (size_t)T * a->H * a->D);
    struct lx_rng r;
    lx_rng_init(&r, 3, 0, LX_RNG_INIT);
    for (size_t i = 0; i < n; i++)
        a->qkv[i] = (float)lx_rng_normal(&r);
    a->tw = (struct lx_tile_ws){.bq = LX_TILE_BQ, .bk = LX_TILE_BK, .n_thr = (int)nthr};
    a->tw.scratch = malloc(sizeof(float) * lx_tile_thread_floats(LX_TILE_BQ, LX_TILE_BK, a->D) * nthr);
    size_t ntab = (size_t)lx_tile_tab_rows(&a->spec) * a->H * T;
    size_t nrot = lx_tile_rot_floats(&a->spec, T, a->H, a->H, a->D, a->causal);
    a->tw.tab = ntab ? malloc(sizeof(double) * ntab) : NULL;
    a->tw.rot = nrot ? malloc(sizeof(float) * nrot) : NULL;
    a->tw.kpack = malloc(sizeof(float) * lx_tile_kpack_floats(T, a->H, a->D));     /* as the model */
    return rc;
}

static void tile_fast(void *p)
{
    struct tile_arg *a = p;
    int HD = a->H * a->D;
    struct lx_attn_shape sh = {.T = a->T, .H = a->H, .KV = a->H, .D = a->D, .ld = 3 * HD, .ldo = HD,
                               .causal = a->causal};
    lx_attn_tiled_forward(a->o, a->qkv, a->qkv + HD, a->qkv + 2 * HD, &a->spec, NULL, &sh, &a->tw);
}

/* Today's evaluation path before the tiled one: the heads in parallel, one
** T × T probability buffer per thread (allocated on first use). */
static void tile_head(void *p)
{
    struct tile_arg *a = p;
    int HD = a->H * a->D, T = a->T;
    size_t nthr = (size_t)omp_get_max_threads();
    if (!a->P) {
        a->P = malloc(sizeof(float) * (size_t)T * T * nthr);
        a->tab = malloc(sizeof(double) * 2 * (size_t)T * nthr);
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (int h = 0; h < a->H; h++) {
        int thr = omp_get_thread_num();
        struct lx_attn_ws ws = {.tab = a->tab + (size_t)thr * 2 * T, .far = a->far, .phalf = a->tw.phalf};
        const float *q = a->qkv + h * a->D;
        struct lx_attn_shape sh = {.T = T, .H = a->H, .KV = a->H, .D = a->D, .ld = 3 * HD, .ldo = HD,
                                   .causal = a->causal};
        lx_attn_head_forward(a->o + h * a->D, a->P + (size_t)thr * T * T, q, q + HD, q + 2 * HD, &a->spec, h, &sh,
                             &ws);
    }
}

static void tile_free(struct tile_arg *a)
{
    free(a->qkv), free(a->o), free(a->tw.scratch), free(a->tw.tab), free(a->tw.rot), free(a->P), free(a->far);
    free(a->tw.kpack), free(a->tw.pnorm);
    free(a->tab);
}

static double peak_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

/* Tile-shaped products as the tiled forward runs them: on every thread, a
** block of 256 queries against 256 keys (S = Q Kᵀ, 256 × 256 × 64) then
** O += P V (256 × 64 × 256), `n` times over. */
struct shape_arg {
    float *q, *k, *v, *s, *o;   /* per thread: (256, 64), (256, 64), (256, 64), (256, 256), (256, 64) */
    int n;
};

static void shape_run(void *p)
{
    struct shape_arg *a = p;
#pragma omp parallel for schedule(static)
    for (int it = 0; it < a->n; it++) {
        size_t t = (size_t)omp_get_thread_num();
        float *s = a->s + t * 256 * 256, *o = a->o + t * 256 * 64;
        lx_gemm(s, 256, a->q + t * 256 * 64, 64, a->k + t * 256 * 64, 64, 256, 256, 64, 0, 1, 0.125f, 0.0f);
        lx_gemm(o, 64, s, 256, a->v + t * 256 * 64, 64, 256, 64, 256, 0, 0, 1e-3f, 1.0f);
    }
}

/* One big attention-shaped product: S = Q Kᵀ for T = 4096, D = 64 (4096 × 4096 × 64). */
static void qk_run(void *p)
{
    struct mm_arg *a = p;
    lx_gemm(a->C, 4096, a->A, 64, a->B, 64, 4096, 4096, 64, 0, 1, 1.0f, 0.0f);
}

/* GFLOP/s of sgemm 2048³, of the tile-shaped products and of the 4096² Q Kᵀ. */
static void sgemm_rates(double gf[3])
{
    struct mm_arg ma = {.n = 2048};
    size_t nn = (size_t)ma.n * ma.n, nthr = (size_t)omp_get_max_threads();
    ma.A = malloc(sizeof(float) * nn), ma.B = malloc(sizeof(float) * nn), ma.C = malloc(sizeof(float) * 4096 * 4096);
    for (size_t i = 0; i < nn; i++)
        ma.A[i] = (float)(i % 7) * 0.1f, ma.B[i] = (float)(i % 5) * 0.1f;
    gf[0] = 2.0 * nn * ma.n / best_of(3, mm_fast, &ma) / 1e9;
    gf[2] = 2.0 * 4096.0 * 4096 * 64 / best_of(3, qk_run, &ma) / 1e9;
    struct shape_arg sa = {.n = 64 * (int)nthr};
    sa.q = ma.A, sa.k = ma.A + nthr * 256 * 64, sa.v = ma.B, sa.o = ma.B + nthr * 256 * 64, sa.s = ma.C;
    gf[1] = 4.0 * 256 * 256 * 64 * sa.n / best_of(3, shape_run, &sa) / 1e9;
    free(ma.A), free(ma.B), free(ma.C);
}

/* The tiled forward's two products on its own kernel (lx_gemm_rows), on every
** thread a 256-query × 256-key tile `n` times over: S = Q Kᵀ (256 × 256 × 64,
** Kᵀ packed once) then O += P V (256 × 64 × 256); the kernel the CPU's width
** picks (AVX-512 where it has it) or the AVX2 one (the same bits). */
struct width_arg {
    float *q, *kt, *v, *s, *o;  /* per thread: (256, 64), packed Kᵀ, (256, 64), (256, 256), (256, 64) */
    int n, avx2;
};

static void rows_shapes(void *p)
{
    struct width_arg *a = p;
    void (*rows)(float *, int, const float *, int, const float *, long, long, int, int, int, float, float) =
        a->avx2 ? lx_gemm_rows_avx2 : lx_gemm_rows;
    size_t ktf = lx_gemm_bt_floats(256, 64);
#pragma omp parallel for schedule(static)
    for (int it = 0; it < a->n; it++) {
        size_t t = (size_t)omp_get_thread_num();
        float *sm = a->s + t * 256 * 256, *o = a->o + t * 256 * 64;
        rows(sm, 256, a->q + t * 256 * 64, 64, a->kt + t * ktf, LX_GEMM_NR, 64L * LX_GEMM_NR, 256, 256, 64,
             0.125f, 0.0f);
        rows(o, 64, sm, 256, a->v + t * 256 * 64, 64, LX_GEMM_NR, 256, 64, 256, 1e-3f, 1.0f);
    }
}

/* The tile products at the CPU's width against the AVX2 kernel, one run. */
static void bench_rows_width(void)
{
    size_t nthr = (size_t)omp_get_max_threads(), ktf = lx_gemm_bt_floats(256, 64);
    struct width_arg a = {.n = 64 * (int)nthr};
    a.q = calloc(nthr * 256 * 64, sizeof(float)), a.v = calloc(nthr * 256 * 64, sizeof(float));
    a.kt = calloc(nthr * ktf, sizeof(float)), a.s = calloc(nthr * 256 * 256, sizeof(float));
    a.o = calloc(nthr * 256 * 64, sizeof(float));
    for (size_t i = 0; i < nthr * 256 * 64; i++)
        a.q[i] = (float)(i % 7) * 0.1f, a.v[i] = (float)(i % 5) * 0.1f;
    for (size_t t = 0; t < nthr; t++)
        lx_gemm_pack_bt(a.kt + t * ktf, a.v + t * 256 * 64, 64, 256, 64);
    __builtin_cpu_init();
    double t_wide = best_of(5, rows_shapes, &a);
    a.avx2 = 1;
    double t_avx2 = best_of(5, rows_shapes, &a);
    double gf = 4.0 * 256 * 256 * 64 * a.n / 1e9;
    char what[64];
    snprintf(what, sizeof what, "tile products %s, %.0f GFLOP/s",
             __builtin_cpu_supports("avx512f") ? "AVX-512" : "(no AVX-512)", gf / t_wide);
    report("tiled", what, "the AVX2 kernel", t_wide, t_avx2);
    free(a.q), free(a.v), free(a.kt), free(a.s), free(a.o);
}

/* Blocks of bq queries × bk keys for a's tiled runs. */
static void tile_blocks(struct tile_arg *a, int bq, int bk)
{
    free(a->tw.scratch);
    a->tw.bq = bq, a->tw.bk = bk;
    a->tw.scratch = malloc(sizeof(float) * lx_tile_thread_floats(bq, bk, a->D) * (size_t)a->tw.n_thr);
}

/* The naive reference on a's q, k, v (copied to (T, H, D) each). */
static void tile_naive(void *p)
{
    struct tile_arg *a = p;
    long T = a->T, HD = (long)a->H * a->D;
    float *q = malloc(sizeof(float) * (size_t)(3 * T * HD)), *att = malloc(sizeof(float) * (size_t)(a->H * T * T));
    for (long t = 0; t < T; t++)
        for (int part = 0; part < 3; part++)
            memcpy(q + part * T * HD + t * HD, a->qkv + t * 3 * HD + part * HD, sizeof(float) * (size_t)HD);
    lx_attention_forward(a->o, att, q, q + T * HD, q + 2 * T * HD, &a->spec, a->T, a->H, a->D, a->causal);
    free(q), free(att);
}

/* Seconds of the tiled forward for stack at T (best of reps), or < 0 on error. */
static double tiled_time(const char *stack, int T, int reps, int bq, int bk)
{
    struct lx_error err;
    struct tile_arg a;
    if (tile_init(&a, stack, T, &err) < 0)
        return fprintf(stderr, "bench: %s\n", err.msg), -1.0;
    tile_blocks(&a, bq, bk);
    double t = best_of(reps, tile_fast, &a);
    tile_free(&a);
    return t;
}

/* Causal attention GFLOP/s at T (4 heads × 64): the causal half, 2·2·(T²/2)·D·H. */
static double att_gflops(double T, double s)
{
    return 2.0 * 2.0 * (T * T / 2) * 64 * 4 / s / 1e9;
}

/* Tiled vs head path vs naive (T = 1k … 16k; naive at 1k only: it is O(T²·D)
** scalar double arithmetic and (H, T, T) floats). */
static int tiled_paths(const double *t_tile, const int *Ts, int n)
{
    struct lx_error err;
    for (int i = 0; i < n && Ts[i] <= 16384; i++) {
        struct tile_arg a;
        if (tile_init(&a, "rope", Ts[i], &err) < 0)
            return fprintf(stderr, "bench: %s\n", err.msg), 1;
        char what[64];
        snprintf(what, sizeof what, "tiled, causal rope, T=%d, 4x64", Ts[i]);
        report("tiled", what, "head path (T x T)", t_tile[i], best_of(Ts[i] > 4096 ? 1 : 3, tile_head, &a));
        if (Ts[i] == 1024)
            report("tiled", what, "naive reference", t_tile[i], best_of(1, tile_naive, &a));
        tile_free(&a);
    }
    return 0;
}

/* The cost of row statistics from the tiles at T = 4096: plain vs every row's
** entropy, max p and logit std (calibration), vs those plus 40 distance
** buckets and 3 ranges (the attn task), each timed next to plain. */
static int bench_tile_stats(void)
{
    struct lx_error err;
    struct tile_arg a;
    if (tile_init(&a, "rope", 4096, &err) < 0)
        return fprintf(stderr, "bench: %s\n", err.msg), 1;
    struct lx_diag out[4];
    struct lx_ranges rg = {.n = 3, .lo = {1, 16, 256}, .hi = {16, 256, 4096}};
    struct lx_tile_stats st[2] = {{.out = out}, {.out = out, .ranges = &rg, .buckets = 1}};
    a.tw.acc = malloc(sizeof(double) * lx_tile_acc_doubles(a.tw.bq) * (size_t)a.tw.n_thr);
    a.tw.part = malloc(sizeof(struct lx_diag) * 4 * (size_t)lx_tile_stat_units(a.tw.bq, 4096));
    static const char *const what[2] = {"stats: entropy, pmax, sigma T=4096", "+ buckets, 3 ranges T=4096"};
    for (int i = 0; i < 2; i++) {
        a.tw.stats = NULL;
        double t_plain = best_of(5, tile_fast, &a);
        a.tw.stats = &st[i];
        report("tiled", what[i], "no statistics", best_of(5, tile_fast, &a), t_plain);
    }
    free(a.tw.acc), free(a.tw.part);
    tile_free(&a);
    return 0;
}

/* The softmax's e^x loop of this CPU in fast numerics (lx_tile_exp_level:
** sixteen AVX-512 lanes, or eight AVX2 + FMA lanes) against portable
** numerics' eight-lane loop, on 4,096 rows of 256 logits (one thread). */
struct exp_arg {
    float *s, *x;
    int level;
};

static void exp_rows(void *p)
{
    struct exp_arg *a = p;
    memcpy(a->s, a->x, sizeof(float) * 4096 * 256);
    volatile float sum = 0.0f;
    for (int r = 0; r < 4096; r++)
        sum += lx_tile_exp_sum(a->s + (long)r * 256, 256, 0.0f, a->level);
}

static int bench_exp_loops(void)
{
    struct exp_arg a = {.s = malloc(sizeof(float) * 4096 * 256), .x = malloc(sizeof(float) * 4096 * 256)};
    struct lx_rng r;
    lx_rng_init(&r, 5, 0, LX_RNG_INIT);
    for (long i = 0; i < 4096L * 256; i++)
        a.x[i] = -(float)fabs(4.0 * lx_rng_normal(&r));
    enum lx_numerics nm = lx_numerics_get();
    lx_numerics_set(LX_NUMERICS_FAST);
    a.level = lx_tile_exp_level(0);
    double t_fast = best_of(20, exp_rows, &a);
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    a.level = lx_tile_exp_level(0);
    double t_port = best_of(20, exp_rows, &a);
    lx_numerics_set(nm);
    report("tiled", "e^x rows, fast numerics' loop", "portable numerics' loop", t_fast, t_port);
    free(a.s), free(a.x);
    return 0;
}

/* P rounded to f16 after its row is normalised, as llama.cpp's products with
** its f16 KV cache take it (activations: llamacpp, kv_cache: f16) at T =
** 4096: the tiles' blocks of whole rows against the head path that did it
** before, and against the online softmax without the rounding (its cost). */
static int bench_tile_half(void)
{
    struct lx_error err;
    struct tile_arg a;
    if (tile_init(&a, "rope", 4096, &err) < 0)
        return fprintf(stderr, "bench: %s\n", err.msg), 1;
    double t_plain = best_of(5, tile_fast, &a);
    a.tw.phalf = LX_DT_F16;
    a.tw.pnorm = malloc(sizeof(float) * lx_tile_pnorm_floats(a.tw.bq, 4096) * (size_t)a.tw.n_thr);
    double t_half = best_of(5, tile_fast, &a);
    report("tiled", "P rounded to f16, T=4096", "online, P unrounded", t_half, t_plain);
    report("tiled", "P rounded to f16, T=4096", "head path, P rounded", t_half, best_of(3, tile_head, &a));
    tile_free(&a);
    return 0;
}

/* Tiled attention (causal RoPE, 4 × 64) at 1k … 32k: GFLOP/s next to sgemm's
** measured right before and after each length (the better of the two, so
** that a busy spell on a shared machine does not flatter the attention);
** block sizes at 16k; method features vs plain at 4k and a window of 256 vs
** full at 32k, each timed next to its baseline; the head path and the naive
** reference. */
static int bench_tiled(void)
{
    const char *ct = getenv("OPENBLAS_CORETYPE");
    char blas[128];
    lx_blas_describe(blas, sizeof blas);
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    printf("\ntiled attention: OpenBLAS %s, OPENBLAS_CORETYPE=%s, softmax loops %s, %d threads\n", blas,
           ct ? ct : "(unset)",
           avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
               ? "AVX-512 exp sums and max (fast numerics)"
               : avx2 ? "AVX2+FMA" : "SSE2",
           omp_get_max_threads());
    static const int Ts[] = {1024, 4096, 16384, 32768};
    double t_tile[4], g[4][3];
    printf("\n| T | tiled s | attention GFLOP/s | sgemm 2048^3 | tile-shaped | Q K^T 4096^2x64 | of 2048^3 "
           "| of tile-shaped |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < 4; i++) {
        double g1[3];
        sgemm_rates(g[i]);
        if ((t_tile[i] = tiled_time("rope", Ts[i], Ts[i] > 4096 ? 2 : 8, LX_BENCH_BQ, LX_BENCH_BK)) < 0)
            return 1;
        sgemm_rates(g1);
        for (int k = 0; k < 3; k++)
            g[i][k] = g1[k] > g[i][k] ? g1[k] : g[i][k];
        double gf = att_gflops(Ts[i], t_tile[i]);
        printf("| %d | %.4f | %.1f | %.1f | %.1f | %.1f | %.0f%% | %.0f%% |\n", Ts[i], t_tile[i], gf, g[i][0], g[i][1],
               g[i][2], 100 * gf / g[i][0], 100 * gf / g[i][1]);
        fflush(stdout);
    }
    static const int blocks[][2] = {{128, 256}, {256, 256}, {512, 256}, {256, 512}, {512, 512}};
    printf("\n| blocks bq x bk, T=16384 | s | GFLOP/s |\n|---|---:|---:|\n");
    for (int i = 0; i < 5; i++) {
        double t = tiled_time("rope", 16384, 2, blocks[i][0], blocks[i][1]);
        printf("| %d x %d | %.4f | %.1f |\n", blocks[i][0], blocks[i][1], t, att_gflops(16384, t));
    }
    double rss_tiled = peak_mib();
    printf("\n| %-10s | %-34s | %-22s | %9s | %9s | %8s |\n", "bench", "fast path", "baseline", "fast s", "base s",
           "speedup");
    printf("|------------|------------------------------------|------------------------|-----------|-----------|----------|\n");
    bench_rows_width();
    double t_full = tiled_time("rope", 32768, 2, LX_BENCH_BQ, LX_BENCH_BK);
    double t_win = tiled_time("[rope, {window: {size: 256}}]", 32768, 3, LX_BENCH_BQ, LX_BENCH_BK);
    report("tiled", "window 256, T=32768", "full causal, T=32768", t_win, t_full);
    static const char *const feats[][2] = {
        {"[rope, infoscale]", "rope+infoscale (row scale)"},
        {"alibi", "alibi (distance affine)"},
        {"[rope, scaleinv]", "rope+scaleinv (affine a_t S + m_t)"},
        {"[rope, {rerope: {window: 512}}]", "rope+rerope(512) (far keys)"},
        {"[rope, {streaming: {sinks: 4, recent: 1024}}]", "rope+streaming(4, 1024)"},
        {"[rope, {selfextend: {group: 4, window: 1024}}]", "rope+selfextend(4,1024) (far keys)"},
        {"[rope, {dca: {chunk: 3072, local: 512}}]", "rope+dca(3072, 512) (chunked)"},
    };
    for (size_t i = 0; i < sizeof feats / sizeof *feats; i++) {   /* the ratio is plain / feature: < 1 = the feature costs */
        double t_plain = tiled_time("rope", 4096, 5, LX_BENCH_BQ, LX_BENCH_BK);
        double t_feat = tiled_time(feats[i][0], 4096, 5, LX_BENCH_BQ, LX_BENCH_BK);
        if (t_plain < 0 || t_feat < 0)
            return 1;
        report("tiled", feats[i][1], "plain rope T=4096", t_feat, t_plain);
        fflush(stdout);
    }
    if (bench_tile_stats() || bench_tile_half() || bench_exp_loops() || tiled_paths(t_tile, Ts, 4))
        return 1;
    printf("\npeak RSS after the tiled runs (32k: q|k|v %.0f MiB): %.0f MiB; after the head path: %.0f MiB\n",
           32768.0 * 3 * 256 * 4 / 1048576.0, rss_tiled, peak_mib());
    return 0;
}

/* For the other bench files: best_of, and sgemm 2048³ GFLOP/s. */
double lx_bench_best(int reps, void (*fn)(void *), void *arg)
{
    return best_of(reps, fn, arg);
}

double lx_bench_sgemm(void)
{
    double g[3];
    sgemm_rates(g);
    return g[0];
}

/* ---- dequantizing GGUF blocks: AVX-512 lanes against block by block ---- */

struct deq_arg {
    const unsigned char *b;
    float *out;
    int t;
    size_t n;
};

static void deq_lanes(void *p)
{
    struct deq_arg *a = p;
    lx_half_to_f32(a->out, a->b, a->t, a->n);
}

static void deq_blocks(void *p)
{
    struct deq_arg *a = p;
    lx_half_to_f32_scalar(a->out, a->b, a->t, a->n);
}

/* Every quantized type: 2^24 values (64 MB of fp32 out, in cache.s reach
** only partly, as a widened block of weight rows is) from random blocks with
** f16 scales in [2^-14, 2^-12), one thread. The IQ1-IQ3 types have 8 lanes
** only (AVX2, also on an AVX-512 CPU), TQ1_0 and TQ2_0 none (about 1x). */
static int bench_dequant(void)
{
    enum { N = 1 << 24 };
    struct lx_rng r;
    lx_rng_init(&r, 3, 0, LX_RNG_INIT);
    float *out = malloc(sizeof(float) * N);
    printf("| %-10s | %-34s | %-22s | %9s | %9s | %8s |\n", "bench", "fast path", "baseline", "fast s", "base s",
           "speedup");
    printf("|------------|------------------------------------|------------------------|-----------|-----------|----------|\n");
    for (int t = LX_DT_Q8_0; t < LX_DT_N; t++) {
        unsigned char *b = qblocks_random(t, N / lx_dtype_block(t), 1, 2, &r);
        struct deq_arg a = {b, out, t, N};
        char what[64];
        snprintf(what, sizeof what, "%s, 2^24 values, %d lanes", lx_dtype_name(t), lx_half_lanes(0));
        report("dequant", what, "block by block", best_of(10, deq_lanes, &a), best_of(5, deq_blocks, &a));
        free(b);
    }
    free(out);
    return 0;
}

/* ---- a decoding step's products on quantized weights: from the blocks against row by row ---- */

struct qdot_arg {
    float *y, *x;
    unsigned char *w;
    int type, fused, acts;
    long T, C, OC;
    int lanes;      /* half weights: lx_wprod_lanes (0 as the CPU has, -1 sgemm) */
};

static void qdot_run(void *p)
{
    struct qdot_arg *a = p;
    lx_wprod_qdot(a->fused);
    lx_wprod_lanes(a->lanes);
    lx_acts_llamacpp_set(a->acts);
    lx_wlinear(a->y, a->OC, a->x, a->C, (struct lx_wmat){a->w, a->type, 0, NULL, 0}, a->T, a->C, a->OC, 0.0f);
    lx_acts_llamacpp_set(0);
    lx_wprod_lanes(0);
    lx_wprod_qdot(1);
}

/* The same product on bf16 and f16 weights: read in place by the few-rows kernel (16 lanes, and 8
** where both run) against the blocks widened to fp32 for sgemm (what a CPU with neither runs). */
static void bench_halfdot(float *x, float *y, long C, long OC, struct lx_rng *r)
{
    uint16_t *w = malloc(sizeof(uint16_t) * (size_t)(OC * C));
    for (int type = LX_DT_BF16; type <= LX_DT_F16; type++) {
        for (long i = 0; i < OC * C; i++)
            w[i] = type == LX_DT_BF16 ? lx_f32_to_bf16((float)lx_rng_normal(r)) : lx_f32_to_f16((float)lx_rng_normal(r));
        for (int lanes = 16; lanes >= 8; lanes -= 8) {
            if (lx_wprod_lanes(lanes) != lanes)
                continue;
            struct qdot_arg a = {y, x, (unsigned char *)w, type, 1, 0, 1, C, OC, lanes}, b = a;
            b.lanes = -1;
            for (a.T = 1; a.T <= 4; a.T += 3) {
                char what[64];
                snprintf(what, sizeof what, "%s %ldx%ld, %ld row%s, %d lanes", lx_dtype_name(type), OC, C, a.T,
                         a.T > 1 ? "s" : "", lanes);
                b.T = a.T;
                report("halfdot", what, "blocks widened, sgemm", best_of(20, qdot_run, &a), best_of(20, qdot_run, &b));
            }
        }
        lx_wprod_lanes(0);
    }
    free(w);
}

/* The 1B shape's up projection (8,192 × 2,048) in bf16 and f16 (bench_halfdot), the K-quants, Q8_0,
** Q4_0 and IQ4_XS, times 1 row (a decoding step) and 4, all threads: the blocks
** read directly (qdot.c) against each row dequantized into cache first; and
** with `activations: llamacpp`, the integer dots on 8-bit x (qdot8.c)
** against the fp32 blocks' dots. */
static int bench_qdot(void)
{
    enum { C = 2048, OC = 8192 };
    static const int types[] = {LX_DT_Q4_K, LX_DT_Q5_K, LX_DT_Q6_K, LX_DT_Q8_0,   LX_DT_Q2_K, LX_DT_Q3_K,
                                LX_DT_Q4_0, LX_DT_IQ4_XS, LX_DT_Q4_1, LX_DT_Q5_0, LX_DT_IQ3_S, LX_DT_IQ2_XXS};
    struct lx_rng r;
    lx_rng_init(&r, 4, 0, LX_RNG_INIT);
    lx_numerics_set(LX_NUMERICS_FAST);
    float *x = malloc(sizeof(float) * 4 * C), *y = malloc(sizeof(float) * 4 * OC);
    for (long i = 0; i < 4 * C; i++)
        x[i] = (float)lx_rng_normal(&r);
    printf("lenx bench: %d threads\n\n", omp_get_max_threads());
    printf("| %-10s | %-34s | %-22s | %9s | %9s | %8s |\n", "bench", "fast path", "baseline", "fast s", "base s",
           "speedup");
    printf("|------------|------------------------------------|------------------------|-----------|-----------|----------|\n");
    bench_halfdot(x, y, C, OC, &r);
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        int fused = lx_wprod_fused(types[i]), acts = lx_qdot8_lanes(types[i], C, lx_wprod_lanes(0)) > 0;
        if (!fused)
            printf("qdot: %s: no fused kernel on this CPU (AVX-512 or AVX2; the IQ1-IQ3 types AVX2 only)\n",
                   lx_dtype_name(types[i]));
        if (!fused && !acts)
            continue;
        unsigned char *w = qblocks_random(types[i], (size_t)OC * C / lx_dtype_block(types[i]), 1, 2, &r);
        struct qdot_arg a = {y, x, w, types[i], 1, 0, 1, C, OC, 0}, b, c;
        for (a.T = 1; a.T <= 4; a.T += 3) {
            char what[64];
            snprintf(what, sizeof what, "%s 8192x2048, %ld row%s, blocks", lx_dtype_name(types[i]), a.T,
                     a.T > 1 ? "s" : "");
            b = a, b.fused = 0, c = a, c.acts = 1;
            if (fused)
                report("qdot", what, "rows dequantized first", best_of(20, qdot_run, &a), best_of(20, qdot_run, &b));
            if (acts)   /* 8-bit x's integer dots against fp32 x's best path */
                report("qdot8", what, "fp32 x", best_of(20, qdot_run, &c), best_of(20, qdot_run, fused ? &a : &b));
        }
        free(a.w);
    }
    free(x), free(y);
    return 0;
}

/* ---- SwiGLU and GeGLU ---- */

struct glu_arg {
    float *h, *y, *dy, *dh;
    int N, F, gelu, portable;  /* gelu: 0 SwiGLU, 1 GeGLU, 2 plain GELU */
};

/* The MLP activation's forward and backward over N rows, on the AVX-512 lanes (fast numerics) or
** the libm loops (portable numerics, the reference). */
static void glu_run(void *p)
{
    struct glu_arg *a = p;
    lx_numerics_set(a->portable ? LX_NUMERICS_PORTABLE : LX_NUMERICS_FAST);
    if (a->gelu == 2) { /* plain GELU (`mlp: gelu`) over the N × F values of y, its kept σ in dh's second half */
        int n = a->N * a->F;
        lx_gelu_forward_s(a->y, a->dh + n, a->h, n);
        lx_gelu_backward_s(a->dh, a->dy, a->h, a->dh + n, n);
    } else {
        (a->gelu ? lx_geglu_forward : lx_swiglu_forward)(a->y, a->F, a->h, a->N, a->F);
        (a->gelu ? lx_geglu_backward : lx_swiglu_backward)(a->dh, a->dy, a->h, a->N, a->F);
    }
    lx_numerics_set(LX_NUMERICS_FAST);
}

/* Gemma 3 1B's MLP (d_mlp 6912) over 1,024 rows: SwiGLU, GeGLU and plain GELU, lanes against the loops. */
static int bench_glu(void)
{
    struct glu_arg a = {.N = 1024, .F = 6912};
    size_t n = (size_t)a.N * a.F;
    a.h = malloc(sizeof(float) * 2 * n), a.dh = malloc(sizeof(float) * 2 * n);
    a.y = malloc(sizeof(float) * n), a.dy = malloc(sizeof(float) * n);
    struct lx_rng r;
    lx_rng_init(&r, 5, 0, LX_RNG_INIT);
    for (size_t i = 0; i < 2 * n; i++)
        a.h[i] = (float)(2 * lx_rng_normal(&r)), a.dy[i / 2] = (float)lx_rng_normal(&r);
    for (a.gelu = 0; a.gelu < 3; a.gelu++) {
        struct glu_arg base = a;
        base.portable = 1;
        report(a.gelu ? a.gelu == 2 ? "gelu" : "geglu" : "swiglu", "fwd+bwd 1024 x 6912, AVX-512 lanes",
               "libm loops (portable)",
               best_of(5, glu_run, &a), best_of(5, glu_run, &base));
    }
    free(a.h), free(a.dh), free(a.y), free(a.dy);
    return 0;
}

int lx_bench_model(void);   /* tests/bench_model.c */
int lx_bench_decode(void);  /* tests/bench_decode.c */
int lx_bench_decode_attn(void);
int lx_bench_train(void);   /* tests/bench_train.c */
int lx_bench_train_bf16(void);
int lx_bench_gemm(void);    /* tests/bench_gemm.c */
int lx_bench_bf16(void);    /* tests/bench_bf16.c */
int lx_bench_pilot_replay(const char *dir);     /* tests/bench_pilot.c */

static int rows_width(void)
{
    bench_rows_width();
    return 0;
}

/* The parts `make bench BENCH=NAME` runs alone. */
static const struct {
    const char *name;
    int (*run)(void);
} parts[] = {
    {"model", lx_bench_model},        {"tiledstats", bench_tile_stats}, {"tilehalf", bench_tile_half},
    {"tileexp", bench_exp_loops},     {"tilewidth", rows_width},        {"tiled", bench_tiled},
    {"decodeattn", lx_bench_decode_attn}, {"decode", lx_bench_decode},  {"train", lx_bench_train},
    {"trainbf16", lx_bench_train_bf16}, {"gemm", lx_bench_gemm},        {"bf16", lx_bench_bf16},
    {"dequant", bench_dequant},       {"qdot", bench_qdot},             {"glu", bench_glu},
};

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : "";
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (!strcmp(only, parts[i].name))
            return parts[i].run();
    if (!strcmp(only, "pilotreplay"))
        return lx_bench_pilot_replay(argc > 2 ? argv[2] : "build/pilot-traces");
    if (*only && strcmp(only, "micro")) {   /* a typo ran the whole bench, minutes of it, without a word */
        fprintf(stderr, "lenx-bench: unknown part '%s'\n  hint: one of micro, pilotreplay", only);
        for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
            fprintf(stderr, ", %s", parts[i].name);
        fprintf(stderr, " (make bench BENCH=NAME also takes eval, core, serve, pilot, pilot-replay, bf16-8b); "
                "none runs them all\n");
        return 2;
    }
    int max_threads = omp_get_max_threads();
    char blas[128];
    lx_blas_describe(blas, sizeof blas);
    printf("lenx bench: %d threads, %s; times are best-of-N seconds\n\n", max_threads, blas);
    printf("| %-10s | %-34s | %-22s | %9s | %9s | %8s |\n", "bench", "fast path", "baseline", "fast s", "base s", "speedup");
    printf("|------------|------------------------------------|------------------------|-----------|-----------|----------|\n");

    struct lx_grid g;
    struct lx_plan plan;
    struct lx_error err;
    const char *sweep = "name: bench\nmethods: [[scaleinv, infoscale]]\n"
                        "tasks: [{gaussian: {samples: 2000}}]\nlengths: [10000]\n";
    if (lx_grid_load_text(&g, sweep, "bench.yaml", &err) < 0 || lx_plan_build(&plan, &g, &err) < 0) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return 1;
    }
    struct rows_arg ra = {.n = 100000};
    struct lx_facts f = {.d_head = 64, .train_len = 64, .n_heads = 1, .length = ra.n, .caps = LX_CAP_LOGITS};
    if (lx_stack_compile(&g.stacks[0], &f, &ra.spec, &err) < 0)
        return fprintf(stderr, "bench: %s\n", err.msg), 1;
    ra.A = malloc(sizeof(double) * ra.n);
    ra.B = malloc(sizeof(double) * ra.n);
    report("spec rows", "lx_spec_row, N=1e5", "lx_spec_logit per t", best_of(20, rows_fast, &ra),
           best_of(5, rows_naive, &ra));

    struct cell_arg c1 = {&plan, 1}, cn = {&plan, max_threads};
    char what[64];
    snprintf(what, sizeof what, "gaussian N=1e4 x 2000, %d threads", max_threads);
    double t_n = best_of(3, cell_run, &cn), t_1 = best_of(3, cell_run, &c1);
    report("gaussian", what, "the same on 1 thread", t_n, t_1);
    omp_set_num_threads(max_threads);

    struct mm_arg ma = {.n = 256};
    ma.A = malloc(sizeof(float) * ma.n * ma.n);
    ma.B = malloc(sizeof(float) * ma.n * ma.n);
    ma.C = malloc(sizeof(float) * ma.n * ma.n);
    struct lx_rng r;
    lx_rng_init(&r, 1, 0, LX_RNG_INIT);
    for (int i = 0; i < ma.n * ma.n; i++) {
        ma.A[i] = (float)lx_rng_normal(&r);
        ma.B[i] = (float)lx_rng_normal(&r);
    }
    report("matmul", "lx_matmul (OpenBLAS) 256^3", "lx_matmul_naive", best_of(20, mm_fast, &ma),
           best_of(3, mm_naive, &ma));
    free(ma.A), free(ma.B), free(ma.C), free(ra.A), free(ra.B);
    if (bench_glu() || bench_attention() || bench_tiled() || lx_bench_gemm() || lx_bench_decode())
        return 1;
    lx_plan_release(&plan);
    lx_grid_release(&g);
    if (strcmp(only, "micro"))
        lx_bench_model();
    return ra.sink == 12345.0;   /* keep the work observable */
}
