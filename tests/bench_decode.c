/*
** tests/bench_decode.c - `make bench BENCH=decode`: greedy decoding through the
** KV cache (harness/engine/kernels/decode.c) against a full forward pass per token,
** both timed in the same run (docs/PERFORMANCE.md, "Decoding with a KV cache").
**
**   answer   the 4 tokens after the first of a 5-token answer at T = 16384:
**            4 decode steps vs 4 full (tiled) passes, as lx_answer_eval's
**            continuation runs them; the prompt's pass with the cache attached
**            vs without (the cost of saving the rows)
**   passkey  a passkey cell at 16x a 1024-token training length (16384
**            tokens, 2 instances): lx_answer_eval with the cache vs the full
**            passes, end to end, and what the time is spent on: the
**            teacher-forced pass (tiled, its answer-row statistics summed from
**            the tiles) and the further tokens
**   tables   one decode step at 16k for stacks with distance ops (ALiBi,
**            Sandwich, scale-invariant attention): the tables the cache keeps
**            across steps against tabulating them in every step
**
** The model is configs/quick.yaml's (2 layers, d_model 128, 4 heads x 32, GELU
** 512, byte vocabulary), randomly initialised: it answers every instance
** wrongly from the first token on, the most decoding a cell can need. Times
** are single runs (a 16k pass takes seconds); the machine's load is printed.
*/
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/core/half.h"
#include "harness/core/rng.h"
#include "harness/engine/kernels/blas.h"
#include "harness/engine/kernels/decode.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/stepdot.h"
#include "harness/engine/model/decoding.h"
#include "harness/engine/model/model.h"
#include "harness/sweep/plan.h"
#include "harness/sweep/registry.h"
#include "tasks/retrieval.h"
#include "tasks/task.h"

void lx_bench_cpu(char *out, size_t n);    /* tests/bench_model.c */
double lx_bench_busy(double sec);

enum { BT = 16384, NA = 5, NI = 2 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of the whole process (every thread): what a run costs when
** other processes share the cores and wall time mostly measures waiting. */
static double cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void cpu_row(double c_fast, double c_base)
{
    printf("  CPU seconds (all threads): %.3f vs %.3f, %.1fx\n", c_fast, c_base, c_base / c_fast);
}

static void row(const char *what, const char *base, double t_fast, double t_base)
{
    printf("| %-44s | %-34s | %9.3f | %9.3f | %8.1fx |\n", what, base, t_fast, t_base, t_base / t_fast);
}

/* A stack compiled at 16x a training length of 1024 (its params live in
** doc and st, which outlive the spec). */
static int compile(const char *yaml, struct lx_doc *doc, struct lx_stack *st, struct lx_spec *spec,
                   struct lx_error *err)
{
    struct lx_facts f = {.d_head = 32, .train_len = 1024, .n_heads = 4, .length = BT,
                         .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
    int rc = lx_doc_load_text(doc, yaml, "bench", err);
    if (rc == LX_OK && (rc = lx_stack_parse(st, doc->root, err)) == LX_OK)
        rc = lx_stack_compile(st, &f, spec, err);
    return rc;
}

/* The model and its "rope" spec. */
static int setup(struct lx_model *m, struct lx_spec *spec, struct lx_error *err)
{
    static const struct lx_arch quick = {.mode = LX_MODEL_CAUSAL, .layers = 2, .d_model = 128, .heads = 4,
                                         .d_head = 32, .d_mlp = 512, .mlp = LX_MLP_GELU, .vocab = 260,
                                         .norm_eps = 1e-5, .init_std = 0.02};
    static struct lx_doc doc;
    static struct lx_stack st;
    lx_model_init(m, &quick, 1);
    return compile("rope", &doc, &st, spec, err);
}

/* Part 1: the continuation of a 5-token answer. */
static int bench_answer(const struct lx_model *m, const struct lx_spec *spec, double *t_tiled, struct lx_error *err)
{
    long V = m->arch.vocab;
    int *tok = lx_xmalloc(sizeof(int) * BT);
    for (int t = 0; t < BT; t++)
        tok[t] = t ? 'a' + (t * 7) % 26 : LX_TOK_BOS;
    struct lx_acts a;
    struct lx_kvcache c;
    int rc = lx_acts_alloc(&a, &m->arch, 1, BT, 0, err);
    if (rc == LX_OK && (rc = lx_kvcache_alloc(&c, &m->arch, spec, 1, BT, err)) < 0)
        lx_acts_release(&a);
    if (rc < 0)
        return free(tok), rc;
    double t0 = now();
    lx_model_forward(m, spec, tok, NULL, &a);      /* a plain tiled pass */
    double t_plain = now() - t0;
    a.kv = &c;
    t0 = now();
    lx_model_forward(m, spec, tok, NULL, &a);      /* the same, saving every layer's rows */
    double t_fill = now() - t0;
    a.kv = NULL;
    float *lg = lx_xmalloc(sizeof(float) * (size_t)V);
    long off = BT - NA;
    int next = lx_argmax(a.logits + (off - 1) * V, V);
    t0 = now();
    double c0 = cpu();
    for (int k = 0; k + 1 < NA; k++) {
        lx_decode_step(lg, m, spec, &c, 0, off + k, next);
        next = lx_argmax(lg, V);
    }
    double t_steps = now() - t0, c_steps = cpu() - c0;
    t0 = now();
    c0 = cpu();
    for (int k = 0; k + 1 < NA; k++)   /* as the reference continuation: a pass per token */
        lx_model_forward(m, spec, tok, NULL, &a);
    double t_full = now() - t0, c_full = cpu() - c0;
    row("4 answer tokens at T=16384: KV cache steps", "4 full passes (tiled)", t_steps, t_full);
    cpu_row(c_steps, c_full);
    row("prompt pass saving the rows into the cache", "the same pass without", t_fill, t_plain);
    printf("  one decode step: %.2f ms; one full pass: %.3f s\n", 1e3 * t_steps / (NA - 1), t_full / (NA - 1));
    *t_tiled = t_full / (NA - 1);
    free(lg), free(tok);
    lx_kvcache_release(&c);
    lx_acts_release(&a);
    return LX_OK;
}

/* Part 2: a passkey cell's answers, end to end, both ways. */
static int bench_cell(const struct lx_model *m, const struct lx_spec *spec, double t_tiled, struct lx_error *err)
{
    const struct lx_task *t = lx_task_find("passkey");
    void *p = calloc(1, t->schema.size);
    lx_params_defaults(&t->schema, p);
    lx_params_finish(&t->schema, p);
    struct lx_instance in[NI];
    struct lx_answer ans[NI], ref[NI];
    int rc = LX_OK;
    for (int i = 0; i < NI && rc == LX_OK; i++)
        rc = t->generate(p, 42, BT, i, 0.5, &in[i], err);
    double t_cache = 0.0, t_full = 0.0, c_cache = 0.0, c_full = 0.0;
    if (rc == LX_OK) {
        double t0 = now(), c0 = cpu();
        rc = lx_answer_eval(m, spec, in, NI, LX_DECODE_CACHE, ans, err);
        t_cache = now() - t0, c_cache = cpu() - c0;
    }
    if (rc == LX_OK) {
        double t0 = now(), c0 = cpu();
        rc = lx_answer_eval(m, spec, in, NI, LX_DECODE_FULL, ref, err);
        t_full = now() - t0, c_full = cpu() - c0;
    }
    if (rc == LX_OK) {
        int same = 1, decoded = 0;
        for (int i = 0; i < NI; i++) {
            same &= memcmp(ans[i].out, ref[i].out, sizeof(int) * (size_t)ans[i].n_out) == 0;
            decoded += ans[i].decoded;
        }
        char what[64];
        snprintf(what, sizeof what, "passkey 16x, %d instances: KV cache", NI);
        row(what, "full passes", t_cache, t_full);
        cpu_row(c_cache, c_full);
        printf("  %d tokens decoded; answers %s\n", decoded, same ? "identical" : "DIFFER");
        int na = ans[0].n_out;
        printf("  per instance: the teacher-forced pass (tiled, answer-row statistics from the tiles) ~%.2f s, "
               "then %d decode steps; the full passes add %d tiled passes of ~%.2f s each\n", t_cache / NI, na - 1,
               na - 1, t_tiled);
    }
    for (int i = 0; i < NI; i++)
        lx_instance_release(&in[i]);
    free(p);
    return rc;
}

/* Part 3: decode steps of stacks with distance ops, the cache keeping their
** tables across steps (one distance added a step; the first step after the
** prompt tabulates them all, untimed here) against tabulating every distance
** in every step, head and layer (the cache's dtab set aside: the path a spec
** whose tables change with n takes). The same steps both ways. */
static int bench_tables(const struct lx_model *m, struct lx_error *err)
{
    static const char *const stacks[] = {"alibi", "sandwich", "[rope, scaleinv]"};
    int rc = LX_OK;
    printf("\n| %-26s | %-14s | %-14s | %9s |\n", "stack: decode step at 16k", "kept tables ms", "per step ms",
           "speedup");
    printf("|----------------------------|----------------|----------------|-----------|\n");
    for (size_t i = 0; i < sizeof stacks / sizeof *stacks && rc == LX_OK; i++) {
        struct lx_doc doc;
        struct lx_stack st;
        struct lx_spec spec;
        struct lx_kvcache c;
        if ((rc = compile(stacks[i], &doc, &st, &spec, err)) < 0 ||
            (rc = lx_kvcache_alloc(&c, &m->arch, &spec, 1, BT, err)) < 0)
            break;
        float *lg = lx_xmalloc(sizeof(float) * (size_t)m->arch.vocab);
        int *tok = lx_xmalloc(sizeof(int) * BT);
        for (int t = 0; t < BT; t++)
            tok[t] = t ? 'a' + (t * 7) % 26 : LX_TOK_BOS;
        struct lx_acts a;
        if ((rc = lx_acts_alloc(&a, &m->arch, 1, BT, 0, err)) < 0) {
            free(lg), free(tok);
            lx_kvcache_release(&c);
            break;
        }
        a.kv = &c;
        lx_model_forward(m, &spec, tok, NULL, &a);     /* the prompt's pass saves the rows */
        lx_acts_release(&a);
        free(tok);
        lx_decode_step(lg, m, &spec, &c, 0, BT - 9, 'e');     /* the first step tabulates every distance */
        double t[2] = {0.0, 0.0}, *dtab = c.dtab;
        for (int rep = 0; rep < 4; rep++)       /* alternately, so a busy spell hits both */
            for (int way = 0; way < 2; way++) {
                c.dtab = way ? NULL : dtab;
                double t0 = now();
                lx_decode_step(lg, m, &spec, &c, 0, BT - 8 + rep, 'e');
                t[way] += now() - t0;
            }
        c.dtab = dtab;
        printf("| %-26s | %14.2f | %14.2f | %8.1fx |\n", stacks[i], 1e3 * t[0] / 4, 1e3 * t[1] / 4, t[1] / t[0]);
        free(lg);
        lx_kvcache_release(&c);
        lx_stack_release(&st);
        lx_doc_release(&doc);
    }
    return rc;
}

int lx_bench_decode(void)
{
    char cpu[128], blas[128];
    lx_bench_cpu(cpu, sizeof cpu);
    lx_blas_describe(blas, sizeof blas);
    const char *ct = getenv("OPENBLAS_CORETYPE");
    double busy = lx_bench_busy(1.0);
    printf("\ndecoding: %s, %d threads, OpenBLAS %s, OPENBLAS_CORETYPE=%s; CPU used by others: %.0f%%\n", cpu,
           omp_get_max_threads(), blas, ct ? ct : "(unset)", 100.0 * busy);
    printf("  model: 2 layers, d_model 128, 4 heads x 32, GELU 512, vocab 260 (configs/quick.yaml), rope\n\n");
    printf("| %-44s | %-34s | %9s | %9s | %9s |\n", "fast path", "baseline", "fast s", "base s", "speedup");
    printf("|----------------------------------------------|------------------------------------|-----------|"
           "-----------|-----------|\n");
    struct lx_model m;
    struct lx_spec spec;
    struct lx_error err;
    double t_tiled = 0.0;
    int rc = setup(&m, &spec, &err);
    if (rc == LX_OK)
        rc = bench_answer(&m, &spec, &t_tiled, &err);
    if (rc == LX_OK)
        rc = bench_cell(&m, &spec, t_tiled, &err);
    if (rc == LX_OK)
        rc = bench_tables(&m, &err);
    if (rc < 0)
        fprintf(stderr, "bench: %s\n", err.msg);
    lx_model_release(&m);
    return rc < 0;
}

/* `lenx-bench decodeattn`: one decoding step's attention on Llama-3.2-1B's shape (16 layers, 32 query
** heads over 8 key/value heads of 64) at 4,096 tokens of context, fast numerics, the key/value heads
** shared among the threads as a step shares them (decoding.c's attend): an fp32 cache (OpenBLAS), and
** f16 and bf16 caches read as stored, with q and p rounded as llama.cpp's half cache has them, against
** the row-at-a-time reference; the rate at which the cache's bytes are read. Each key/value head's rows
** together as the cache holds them, 64 MB of f16 keys and values in all, read from memory as a model's step
** reads them. */
enum { AL = 16, AKV = 8, AG = 4, AD = 64, AT = 4096 };

struct attn_arg {
    const struct lx_spec *spec;
    void *k[AL], *v[AL];
    float *q, *o, *s;
    double *tab;
    int type;
};

static double attn_step(const struct attn_arg *a)
{
    double t0 = now();
#pragma omp parallel for schedule(static)
    for (int lg = 0; lg < AL * AKV; lg++) {
        int l = lg / AKV, g = lg % AKV, th = omp_get_thread_num();
        size_t off = (size_t)g * AT * AD * (a->type == LX_DT_F32 ? 4 : 2);    /* the cache's rows, head by head */
        lx_attn_rows_forward(a->o + (long)lg * AG * AD, a->q + (long)lg * AG * AD, (char *)a->k[l] + off,
                             (char *)a->v[l] + off, a->type, NULL, AD, a->spec, g * AG, AG, NULL, AT - 1, AD,
                             a->s + (long)th * AG * AT, AT, a->tab + 2L * th * AT, NULL, 0,
                             a->type == LX_DT_F32 ? 0 : a->type);
    }
    return now() - t0;
}

static double attn_best(const struct attn_arg *a, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = attn_step(a);
        best = t < best ? t : best;
    }
    return best;
}

int lx_bench_decode_attn(void)
{
    static struct lx_doc doc;
    static struct lx_stack st;
    struct lx_spec spec;
    struct lx_error err;
    struct lx_facts f = {.d_head = AD, .train_len = AT, .n_heads = AKV * AG, .length = AT,
                         .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
    int rc = lx_doc_load_text(&doc, "rope", "bench", &err);
    if (rc == LX_OK && (rc = lx_stack_parse(&st, doc.root, &err)) == LX_OK)
        rc = lx_stack_compile(&st, &f, &spec, &err);
    if (rc < 0)
        return fprintf(stderr, "bench: %s\n", err.msg), 1;
    char cpu[128];
    lx_bench_cpu(cpu, sizeof cpu);
    int nt = omp_get_max_threads();
    printf("\ndecoding step's attention, 1B shape (16 layers, 32/8 heads of 64), 4,096 tokens: %s, %d threads, "
           "CPU used by others %.0f%%\n\n", cpu, nt, 100.0 * lx_bench_busy(1.0));
    printf("| cache | 16 lanes ms | GB/s of cache | 8 lanes ms | row-at-a-time ms | 8 / 16 | reference / 16 |\n"
           "|---|---:|---:|---:|---:|---:|---:|\n");
    lx_numerics_set(LX_NUMERICS_FAST);
    struct attn_arg a = {.spec = &spec};
    long nq = (long)AL * AKV * AG * AD, nkv = (long)AT * AKV * AD;
    a.q = lx_xmalloc(sizeof(float) * nq), a.o = lx_xmalloc(sizeof(float) * nq);
    a.s = lx_xmalloc(sizeof(float) * AG * AT * nt), a.tab = lx_xmalloc(sizeof(double) * 2 * AT * nt);
    struct lx_rng r;
    lx_rng_init(&r, 9, 0, LX_RNG_INIT);
    for (long i = 0; i < nq; i++)
        a.q[i] = (float)lx_rng_normal(&r);
    static const int types[] = {LX_DT_F32, LX_DT_F16, LX_DT_BF16};
    static const char *const names[] = {"fp32", "f16", "bf16"};
    for (int t_ = 0; t_ < 3; t_++) {
        size_t elt = types[t_] == LX_DT_F32 ? 4 : 2;
        float *w = lx_xmalloc(sizeof(float) * nkv);
        for (int l = 0; l < AL; l++)
            for (int kv = 0; kv < 2; kv++) {
                void *p = lx_big_calloc(elt * nkv);     /* 64-byte aligned, as the cache is */
                for (long i = 0; i < nkv; i++)     /* uniform on [-2, 2), cheaper than normal draws */
                    w[i] = (float)(lx_rng_u32(&r) >> 8) * (4.0f / 16777216.0f) - 2.0f;
                if (types[t_] == LX_DT_F32)
                    memcpy(p, w, sizeof(float) * nkv);
                else
                    lx_f32_to_type(p, w, types[t_], (size_t)nkv);
                *(kv ? &a.v[l] : &a.k[l]) = p;
            }
        free(w);
        a.type = types[t_];
        attn_step(&a);
        double t[3];
        static const int lanes[] = {16, 8, 0};
        for (int x = 0; x < 3; x++) {
            lx_step_lanes(lanes[x]);
            t[x] = attn_best(&a, lanes[x] ? 5 : 2);
        }
        lx_step_lanes(-1);
        printf("| %s | %.2f | %.1f | %.2f | %.2f | %.2fx | %.2fx |\n", names[t_], 1e3 * t[0],
               2.0 * AL * nkv * elt / t[0] / 1e9, 1e3 * t[1], 1e3 * t[2], t[1] / t[0], t[2] / t[0]);
        for (int l = 0; l < AL; l++)
            lx_big_free(a.k[l], elt * nkv), lx_big_free(a.v[l], elt * nkv);
    }
    free(a.q), free(a.o), free(a.s), free(a.tab);
    return 0;
}
