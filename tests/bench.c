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
**   model       training and evaluation tokens/s vs PyTorch (tests/bench_model.c)
**
** `lenx-bench micro` runs the first three only, `lenx-bench model` the last.
*/
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/engine/attention.h"
#include "harness/engine/blas.h"
#include "harness/plan.h"
#include "harness/core/rng.h"
#include "harness/run.h"

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
    if (lx_cell_run(a->plan, &a->plan->cells[0], NULL, &res, &err) < 0)
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
    lx_attn_head_forward(a->o, a->D, a->P, a->q, a->k, a->v, a->D, &a->spec, 0, a->T, a->D, 1, &a->ws);
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

int lx_bench_model(void);   /* tests/bench_model.c */

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : "";
    if (!strcmp(only, "model"))
        return lx_bench_model();
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
    if (bench_attention())
        return 1;
    lx_plan_release(&plan);
    lx_grid_release(&g);
    if (strcmp(only, "micro"))
        lx_bench_model();
    return ra.sink == 12345.0;   /* keep the work observable */
}
