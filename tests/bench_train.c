/*
** tests/bench_train.c - `make bench BENCH=train`: training attention, the
** tiled backward (harness/engine/kernels/tiled_bwd.c) against sgemm and
** against the materialised path it replaces, all timed in the same run
** (docs/PERFORMANCE.md, "Training attention").
**
**   backward  one causal layer (4 heads x 64, q|k|v fused as in the model) at
**             T = 2048 and 4096: the tiled backward's GFLOP/s, counting its
**             five products over the causal half (S, dP, dV, dK, dQ:
**             5·2·(T²/2)·D·H), next to sgemm 2048³ measured right before and
**             after (the better of the two); and against the materialised
**             backward (lx_attn_head_backward on the saved probabilities)
**             and on lenx's fp32 tile kernel (ws->products); in portable
**             numerics the tile kernel against lx_gemm_portable; and in
**             numerics bf16 the bf16 tile kernel against the same bf16
**             values through sgemm and against the fp32 backward
**   step      one whole training step (forward, backward, AdamW) of the
**             configs/quick.yaml model (2 layers, d_model 128, 4 heads x 32)
**             on one window of 1024 and of 4096 tokens, tiled vs
**             materialised, timed alternately
**   bf16      one training step of the 25M-parameter shape (8 layers, d_model
**             512, 8 heads x 64, SwiGLU 1376, byte vocabulary) on 8 windows of
**             256 tokens in numerics fast (fp32) and bf16 (bf16 weight and
**             backward products on oneDNN, fp32 master weights and AdamW),
**             timed alternately, with the implementation oneDNN runs; then
**             its AdamW update on the sixteen lanes against the element-by-
**             element reference
**
** Ratios only: on a shared machine the seconds say little (the load is
** printed).
*/
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/gemm.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/wprod.h"
#include "harness/engine/model/model.h"
#include "harness/engine/model/train.h"
#include "harness/core/rng.h"

double lx_bench_best(int reps, void (*fn)(void *), void *arg);    /* tests/bench.c */
double lx_bench_sgemm(void);
void lx_bench_cpu(char *out, size_t n);                             /* tests/bench_model.c */

static void load(char *out, size_t n)
{
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f || !fgets(out, (int)n, f))
        snprintf(out, n, "?");
    if (f)
        fclose(f);
    out[strcspn(out, " ")] = '\0';
}

/* ---- the attention backward of one layer ---- */

enum { BH = 4, BD = 64 };

struct bwd_arg {
    struct lx_spec spec;
    struct lx_attn_shape sh;
    float *qkv, *o, *dO, *dqkv, *lse, *P, *dP;
    double *tab;
    struct lx_tile_bwd_ws bw;
};

static void bwd_tiled(void *p)
{
    struct bwd_arg *a = p;
    long HD = (long)BH * BD;
    lx_attn_tiled_backward(a->dqkv, a->dqkv + HD, a->dqkv + 2 * HD, a->dO, a->o, a->lse, a->qkv, a->qkv + HD,
                           a->qkv + 2 * HD, &a->spec, NULL, &a->sh, &a->bw);
}

/* The materialised backward as training ran it: the heads in parallel, one
** T × T dP scratch a thread, reading the probabilities the forward saved. */
static void bwd_materialised(void *p)
{
    struct bwd_arg *a = p;
    long HD = (long)BH * BD, T = a->sh.T;
#pragma omp parallel for schedule(dynamic, 1)
    for (int h = 0; h < BH; h++) {
        int thr = omp_get_thread_num();
        float *dq = a->dqkv + h * BD;
        lx_attn_head_backward(dq, dq + HD, dq + 2 * HD, a->dO + h * BD, a->P + (long)h * T * T,
                              a->dP + (long)thr * T * T, a->qkv + h * BD, a->qkv + HD + h * BD,
                              a->qkv + 2 * HD + h * BD, &a->spec, h, &a->sh, a->tab + (long)thr * 2 * T, 1.0f, NULL);
    }
}

static void bwd_init(struct bwd_arg *a, int T)
{
    memset(a, 0, sizeof *a);
    struct lx_facts f = {.d_head = BD, .train_len = T, .n_heads = BH, .length = T,
                         .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL, .training = 1};
    lx_spec_init(&a->spec, &f);     /* positions arrive in q and k: the kernel sees plain dot products */
    long HD = (long)BH * BD, nthr = omp_get_max_threads();
    a->sh = (struct lx_attn_shape){.T = T, .H = BH, .KV = BH, .D = BD, .ld = (int)(3 * HD), .ldo = (int)HD,
                                   .causal = 1};
    a->qkv = malloc(sizeof(float) * (size_t)(T * 3 * HD)), a->dqkv = calloc((size_t)(T * 3 * HD), sizeof(float));
    a->o = malloc(sizeof(float) * (size_t)(T * HD)), a->dO = malloc(sizeof(float) * (size_t)(T * HD));
    a->lse = malloc(sizeof(float) * (size_t)(BH * T));
    struct lx_rng r;
    lx_rng_init(&r, 5, 0, LX_RNG_INIT);
    for (long i = 0; i < T * 3 * HD; i++)
        a->qkv[i] = (float)lx_rng_normal(&r);
    for (long i = 0; i < T * HD; i++)
        a->dO[i] = (float)lx_rng_normal(&r);
    struct lx_tile_ws fw = {.bq = LX_TILE_BQ, .bk = LX_TILE_BK, .n_thr = (int)nthr, .lse = a->lse};
    fw.scratch = malloc(sizeof(float) * lx_tile_thread_floats(LX_TILE_BQ, LX_TILE_BK, BD) * (size_t)nthr);
    lx_attn_tiled_forward(a->o, a->qkv, a->qkv + HD, a->qkv + 2 * HD, &a->spec, NULL, &a->sh, &fw);
    free(fw.scratch);
    a->bw = (struct lx_tile_bwd_ws){.bq = LX_TILE_TRAIN_BQ, .bk = LX_TILE_TRAIN_BK, .n_thr = (int)nthr};
    a->bw.scratch = malloc(sizeof(float) * lx_tile_bwd_thread_floats(LX_TILE_TRAIN_BQ, LX_TILE_TRAIN_BK, BD, T) *
                           (size_t)nthr);
    /* the materialised side: every head's probabilities, a dP a thread */
    a->P = malloc(sizeof(float) * (size_t)BH * T * T), a->dP = malloc(sizeof(float) * (size_t)nthr * T * T);
    a->tab = malloc(sizeof(double) * 2 * (size_t)T * (size_t)nthr);
    float *o = malloc(sizeof(float) * (size_t)(T * HD));
    for (int h = 0; h < BH; h++) {
        struct lx_attn_ws ws = {.tab = a->tab, .mult = 1.0f};
        lx_attn_head_forward(o + h * BD, a->P + (long)h * T * T, a->qkv + h * BD, a->qkv + HD + h * BD,
                             a->qkv + 2 * HD + h * BD, &a->spec, h, &a->sh, &ws);
    }
    free(o);
}

static void bwd_free(struct bwd_arg *a)
{
    free(a->qkv), free(a->dqkv), free(a->o), free(a->dO), free(a->lse), free(a->bw.scratch), free(a->P), free(a->dP);
    free(a->tab);
}

/* The tiled backward in numerics nm, its tiles multiplied as products says (LX_BWD_PRODUCTS_*). */
static double bwd_time(struct bwd_arg *a, enum lx_numerics nm, int products)
{
    lx_numerics_set(nm);
    a->bw.products = products;
    double t = lx_bench_best(5, bwd_tiled, a);
    a->bw.products = LX_BWD_PRODUCTS_AUTO;
    lx_numerics_set(LX_NUMERICS_FAST);
    return t;
}

static void bench_backward(void)
{
    printf("\n| T | tiled backward s | GFLOP/s | sgemm 2048^3 GFLOP/s | of sgemm | on the fp32 tile kernel s | "
           "kernel vs default | materialised backward s | tiled vs materialised |\n"
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    static const int Ts[] = {2048, 4096};
    double more[2][5];  /* portable on the kernel, portable through lx_gemm; bf16, bf16 through sgemm, fp32 */
    for (int i = 0; i < 2; i++) {
        struct bwd_arg a;
        bwd_init(&a, Ts[i]);
        double g0 = lx_bench_sgemm();
        double t = bwd_time(&a, LX_NUMERICS_FAST, LX_BWD_PRODUCTS_AUTO);
        double g1 = lx_bench_sgemm(), g = g0 > g1 ? g0 : g1;
        double tk = bwd_time(&a, LX_NUMERICS_FAST, LX_BWD_PRODUCTS_KERNELS);
        double tm = lx_bench_best(3, bwd_materialised, &a);
        double T = Ts[i], gf = 5.0 * 2.0 * (T * T / 2) * BD * BH / t / 1e9;
        printf("| %d | %.4f | %.1f | %.1f | %.0f%% | %.4f | %.2fx | %.4f | %.2fx |\n", Ts[i], t, gf, g,
               100.0 * gf / g, tk, t / tk, tm, tm / t);
        more[i][0] = bwd_time(&a, LX_NUMERICS_PORTABLE, LX_BWD_PRODUCTS_KERNELS);
        more[i][1] = bwd_time(&a, LX_NUMERICS_PORTABLE, LX_BWD_PRODUCTS_GEMM);
        more[i][2] = bwd_time(&a, LX_NUMERICS_BF16, LX_BWD_PRODUCTS_AUTO);
        more[i][3] = bwd_time(&a, LX_NUMERICS_BF16, LX_BWD_PRODUCTS_GEMM);
        double t2 = bwd_time(&a, LX_NUMERICS_FAST, LX_BWD_PRODUCTS_AUTO);
        more[i][4] = t < t2 ? t : t2;
        bwd_free(&a);
    }
    printf("\nportable numerics (the same bits both ways):\n\n| T | on the fp32 tile kernel s | through lx_gemm s | "
           "kernel vs lx_gemm |\n|---:|---:|---:|---:|\n");
    for (int i = 0; i < 2; i++)
        printf("| %d | %.4f | %.4f | %.2fx |\n", Ts[i], more[i][0], more[i][1], more[i][1] / more[i][0]);
    printf("\nnumerics bf16 (%s):\n\n| T | bf16 backward s | bf16 through sgemm s | fp32 backward s | "
           "bf16 vs fp32 | bf16 vs through sgemm |\n|---:|---:|---:|---:|---:|---:|\n",
           lx_gemm_amx_native()    ? "AMX's tiles"
           : lx_gemm_bf16_native() ? "the AVX512-BF16 tile kernel"
                                   : "no AVX512-BF16: bf16 values through sgemm");
    for (int i = 0; i < 2; i++)
        printf("| %d | %.4f | %.4f | %.4f | %.2fx | %.2fx |\n", Ts[i], more[i][2], more[i][3], more[i][4],
               more[i][4] / more[i][2], more[i][3] / more[i][2]);
}

/* ---- one whole training step ---- */

struct step_arg {
    struct lx_model *m;
    struct lx_spec *spec;
    struct lx_acts a;
    struct lx_optim *opt;
    struct lx_train_cfg *c;
    int *tok, *tgt;
};

static void step_run(void *p)
{
    struct step_arg *s = p;
    lx_optim_zero_grad(s->opt);
    lx_model_forward(s->m, s->spec, s->tok, s->tgt, &s->a);
    lx_model_backward(s->m, s->spec, s->tok, s->tgt, &s->a, &s->opt->g);
    lx_optim_step(s->opt, s->m, s->c, 0);
}

/* A model of shape ar (finished), its spec, optimizer and B x T synthetic
** tokens: what step_run needs but the activations. */
struct step_bench {
    struct lx_arch ar;
    struct lx_train_cfg c;
    struct lx_model m;
    struct lx_spec spec;
    struct lx_optim opt;
    int *tok, *tgt;
};

static void step_bench_init(struct step_bench *b, const struct lx_arch *ar, int B, int T)
{
    b->ar = *ar;
    lx_params_defaults(&lx_train_schema, &b->c);
    lx_params_finish(&lx_train_schema, &b->c);
    lx_model_init(&b->m, &b->ar, 9);
    struct lx_facts f = {.d_head = ar->d_head, .train_len = T, .n_heads = ar->heads, .length = T,
                         .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL, .training = 1};
    lx_spec_init(&b->spec, &f);
    lx_optim_init(&b->opt, &b->m);
    b->tok = malloc(sizeof(int) * (size_t)B * (size_t)T), b->tgt = malloc(sizeof(int) * (size_t)B * (size_t)T);
    for (long t = 0; t < (long)B * T; t++)
        b->tok[t] = (int)((t * 37 + 11) % 256), b->tgt[t] = (int)((t * 53 + 5) % 256);
}

/* step_run's argument over b, its activations allocated for B x T in mode. */
static int step_bench_arg(struct step_bench *b, int B, int T, int mode, struct step_arg *s)
{
    struct lx_error err;
    *s = (struct step_arg){.m = &b->m, .spec = &b->spec, .opt = &b->opt, .c = &b->c, .tok = b->tok, .tgt = b->tgt};
    if (lx_acts_alloc(&s->a, &b->ar, B, T, mode, &err) < 0)
        return fprintf(stderr, "bench: %s\n", err.msg), -1;
    return 0;
}

static void step_bench_release(struct step_bench *b)
{
    lx_optim_release(&b->opt);
    lx_model_release(&b->m);
    free(b->tok), free(b->tgt);
}

static int bench_steps(void)
{
    struct lx_arch ar;
    lx_params_defaults(&lx_arch_schema, &ar);
    ar.layers = 2, ar.d_model = 128, ar.heads = 4, ar.d_head = 32, ar.d_mlp = 512;
    lx_params_finish(&lx_arch_schema, &ar);
    printf("\n| tokens | tiled step s | materialised step s | tiled vs materialised |\n|---:|---:|---:|---:|\n");
    static const int Ts[] = {1024, 4096};
    for (int i = 0; i < 2; i++) {
        int T = Ts[i];
        struct step_bench b;
        step_bench_init(&b, &ar, 1, T);
        struct step_arg s[2];
        for (int k = 0; k < 2; k++)
            if (step_bench_arg(&b, 1, T, k ? LX_ACTS_TRAIN_MATERIALISED : LX_ACTS_TRAIN_TILED, &s[k]) < 0)
                return 1;
        double best[2] = {1e300, 1e300};
        for (int rep = 0; rep < 3; rep++)   /* alternately, so a busy spell hits both */
            for (int k = 0; k < 2; k++) {
                double t = lx_bench_best(1, step_run, &s[k]);
                best[k] = t < best[k] ? t : best[k];
            }
        printf("| %d | %.4f | %.4f | %.2fx |\n", T, best[0], best[1], best[1] / best[0]);
        lx_acts_release(&s[0].a), lx_acts_release(&s[1].a);
        step_bench_release(&b);
    }
    return 0;
}

/* The AdamW update of the 25M shape's parameter count, a block at a time as
** lx_optim_step takes it: the reference, element by element, against the
** sixteen lanes (the same bits), alternately, best of five each. */
struct adamw_arg {
    size_t n;
    float *w, *m, *v, *g;
    unsigned char *decay;
    int plain;
};

static void adamw_run(void *p)
{
    const struct adamw_arg *a = p;
    const struct lx_adamw k = {.gs = 1, .b1 = 0.9f, .b2 = 0.99f, .step = 1e-3f, .wdl = 1e-4f, .ibc2 = 10};
#pragma omp parallel for schedule(static)
    for (size_t i0 = 0; i0 < a->n; i0 += 4096) {
        size_t c = a->n - i0 < 4096 ? a->n - i0 : 4096;
        lx_adamw_update(a->w + i0, a->m + i0, a->v + i0, a->g + i0, a->decay + i0, c, &k, a->plain);
    }
}

static void bench_adamw(size_t n)
{
    struct adamw_arg a = {.n = n, .w = malloc(4 * n), .m = calloc(n, 4), .v = calloc(n, 4), .g = malloc(4 * n),
                          .decay = malloc(n)};
    for (size_t i = 0; i < n; i++)
        a.w[i] = 0.01f * (float)(i % 1000), a.g[i] = 1e-3f * (float)(i % 77) - 0.03f, a.decay[i] = i % 5 != 0;
    double best[2] = {1e300, 1e300};
    for (int rep = 0; rep < 5; rep++)
        for (a.plain = 0; a.plain < 2; a.plain++) {
            double t = lx_bench_best(1, adamw_run, &a);
            best[a.plain] = t < best[a.plain] ? t : best[a.plain];
        }
    printf("\nAdamW update, %zu parameters (lx_adamw_update):\n\n| reference ms | sixteen lanes ms | lanes vs "
           "reference |\n|---:|---:|---:|\n| %.1f | %.1f | %.2fx |\n", n, 1e3 * best[1], 1e3 * best[0],
           best[1] / best[0]);
    free(a.w), free(a.m), free(a.v), free(a.g), free(a.decay);
}

/* One step of the 25M shape in fast and bf16 numerics, alternately, best of five each. */
static int bench_bf16_step(void)
{
    struct lx_arch ar;
    lx_params_defaults(&lx_arch_schema, &ar);
    ar.layers = 8, ar.d_model = 512, ar.heads = 8, ar.d_head = 64, ar.d_mlp = 1376, ar.mlp = LX_MLP_SWIGLU;
    lx_params_finish(&lx_arch_schema, &ar);
    enum { B = 8, T = 256 };
    struct step_bench b;
    step_bench_init(&b, &ar, B, T);
    struct step_arg s;
    if (step_bench_arg(&b, B, T, LX_ACTS_TRAIN, &s) < 0)
        return 1;
    double best[2] = {1e300, 1e300};
    for (int rep = 0; rep < 5; rep++)
        for (int k = 0; k < 2; k++) {
            struct lx_error err;
            lx_numerics_set(k ? LX_NUMERICS_BF16 : LX_NUMERICS_FAST);
            if (k && lx_optim_shadow(&b.opt, &b.m, 1, &err) < 0)     /* as lx_train: products read the bf16 copy */
                return fprintf(stderr, "bench: %s\n", err.msg), 1;
            double t = lx_bench_best(1, step_run, &s);
            lx_optim_unshadow(&b.opt, &b.m);
            best[k] = t < best[k] ? t : best[k];
        }
    char what[256];
    lx_products_describe(what, sizeof what);    /* still in bf16: names oneDNN's implementation too */
    lx_numerics_set(LX_NUMERICS_FAST);
    printf("\ntraining step, %zu parameters, %d x %d tokens (%s)\n\n| fp32 step s | bf16 step s | bf16 vs fp32 |\n"
           "|---:|---:|---:|\n| %.3f | %.3f | %.2fx |\n", b.m.n_params, B, T, what, best[0], best[1], best[0] / best[1]);
    lx_acts_release(&s.a);
    bench_adamw(b.m.n_params);
    step_bench_release(&b);
    return 0;
}

int lx_bench_train_bf16(void)
{
    char cpu[128], l0[32], l1[32];
    lx_bench_cpu(cpu, sizeof cpu);
    load(l0, sizeof l0);
    printf("bf16 training step: %s, %d threads, load average %s at the start\n", cpu, omp_get_max_threads(), l0);
    int rc = bench_bf16_step();
    load(l1, sizeof l1);
    printf("\nload average %s at the end\n", l1);
    return rc;
}

int lx_bench_train(void)
{
    char cpu[128], l0[32], l1[32];
    lx_bench_cpu(cpu, sizeof cpu);
    load(l0, sizeof l0);
    printf("training attention: %s, %d threads, load average %s at the start\n", cpu, omp_get_max_threads(), l0);
    bench_backward();
    int rc = bench_steps();
    if (rc == 0)
        rc = bench_bf16_step();
    load(l1, sizeof l1);
    printf("\nload average %s at the end\n", l1);
    return rc;
}
