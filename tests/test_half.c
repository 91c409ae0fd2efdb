/*
** tests/test_half.c - half-precision weights used in place and `numerics:
** bf16` (docs/numerics.md#half-precision): bf16/f16 conversions against their
** definitions on every 16-bit pattern (the typed weight product and its lanes:
** tests/test_half_products.c), the random-weight bf16 Llama of
** tests/ref/hf-bf16-tiny (made by tests/ref/hf_bf16_ref.py) against torch's
** fp32 and bf16 forwards; hostile files (truncated, lying offsets, shrunk
** while mapped).
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/core/json.h"
#include "harness/core/mapguard.h"
#include "harness/core/rng.h"

#include <immintrin.h>
#include "harness/engine/formats/formats.h"
#include "harness/core/half.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/wprod.h"
#include "harness/engine/model/decoding.h"
#include "harness/engine/model/kvcache.h"
#include "tests/stack.h"

#define TINY "tests/ref/hf-bf16-tiny"
#define V 512
#define T 64

static void restore(void)
{
    lx_numerics_set(LX_NUMERICS_FAST);
    lx_kv_set(0);
}

TestSuite(half, .fini = restore, .timeout = 120);

static void repo(char out[512], const char *rel)
{
    const char *root = getenv("LENX_ROOT");
    snprintf(out, 512, "%s/%s", root ? root : ".", rel);
}

/* ---- conversions ---------------------------------------------------------- */

/* bf16 to fp32 is the upper half; f16 by its definition: (-1)^s · 2^(e-15) · (1 + m/1024), subnormals m · 2^-24. */
Test(half, every_16_bit_pattern_converts_by_definition)
{
    static uint16_t all[65536];
    static float got[65536];
    for (int i = 0; i < 65536; i++)
        all[i] = (uint16_t)i;
    lx_half_to_f32(got, all, LX_DT_F16, 65536);
    for (int i = 0; i < 65536; i++) {
        int s = i >> 15, e = (i >> 10) & 31, m = i & 1023;
        double want = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
        want = s ? -want : want;
        if (isnan(want))
            cr_assert(isnan(got[i]), "f16 %04x", i);
        else
            cr_assert_eq((double)got[i], want, "f16 %04x: %g, want %g", i, got[i], want);
    }
    lx_half_to_f32(got, all, LX_DT_BF16, 65536);
    for (int i = 0; i < 65536; i++) {
        uint32_t u = (uint32_t)i << 16, back;
        memcpy(&back, &got[i], 4);
        cr_assert_eq(back, u, "bf16 %04x", i);
    }
}

/* Round to nearest, ties to even, checked against the two bf16 neighbours in double. */
Test(half, f32_to_bf16_rounds_to_nearest_even)
{
    struct lx_rng r;
    lx_rng_init(&r, 7, 0, 0);
    enum { N = 100003 };
    static float x[N];
    static uint16_t fast[N];
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)(lx_rng_uniform(&r) * 4294967296.0);
        if (i % 7 == 0)
            u = (u & 0xffff0000u) | 0x8000u;    /* exact ties */
        memcpy(&x[i], &u, 4);
    }
    x[0] = INFINITY, x[1] = -INFINITY, x[2] = NAN, x[3] = 3.3895314e38f;  /* rounds up to inf */
    lx_f32_to_bf16_n(fast, x, N);
    static float y[N];
    memcpy(y, x, sizeof x);
    lx_round_bf16_n(y, N);      /* in place, as floats: the same rounding */
    for (int i = 0; i < N; i++) {
        uint16_t h = lx_f32_to_bf16(x[i]);
        cr_assert_eq(fast[i], h, "vector and scalar differ at %d (%a)", i, x[i]);
        float back = lx_bf16_to_f32(h);
        cr_assert_eq(memcmp(&y[i], &back, 4), 0, "lx_round_bf16_n differs at %d (%a)", i, x[i]);
        if (isnan(x[i])) {
            cr_assert(isnan(lx_bf16_to_f32(h)));
            continue;
        }
        uint32_t u;
        memcpy(&u, &x[i], 4);
        double lo = lx_bf16_to_f32((uint16_t)(u >> 16)), got = lx_bf16_to_f32(h);
        double hi = isinf(lo) ? lo : lx_bf16_to_f32((uint16_t)((u >> 16) + 1));
        /* past the largest bf16, infinity stands where 2^128 would be */
        double d_lo = fabs((double)x[i] - lo), d_hi = fabs((isinf(hi) && !isinf(lo) ? copysign(0x1p128, hi) : hi) - x[i]);
        double want = d_lo < d_hi ? lo : d_hi < d_lo ? hi : (((u >> 16) & 1) ? hi : lo);
        cr_assert(got == want || (isnan(got) && isnan(want)), "%a rounded to %a, want %a", x[i], got, want);
    }
}

/* lx_round_half_n to f16 in place (F16C's lanes where the CPU has them) is the scalar lx_f32_to_f16 and
** back, value for value, on random finite floats of f16's range and past it, subnormals and exact ties;
** a NaN stays a NaN (its payload may differ). */
Test(half, f32_to_f16_in_place_is_the_scalar_rounding)
{
    struct lx_rng r;
    lx_rng_init(&r, 11, 0, 0);
    enum { N = 100003 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++) {
        double e = -30.0 + 48.0 * lx_rng_uniform(&r);   /* 2^-30 (below f16's subnormals) … 2^18 (past 65504) */
        x[i] = (float)((lx_rng_uniform(&r) < 0.5 ? -1.0 : 1.0) * ldexp(1.0 + lx_rng_uniform(&r), (int)e));
        if (i % 7 == 0) {   /* an exact tie between two f16 neighbours of normal range */
            uint32_t u;
            memcpy(&u, &x[i], 4);
            u = (u & 0xffffe000u) | 0x1000u;
            memcpy(&x[i], &u, 4);
        }
    }
    x[0] = INFINITY, x[1] = -INFINITY, x[2] = NAN, x[3] = 65519.0f, x[4] = 65520.0f, x[5] = -0.0f;
    memcpy(y, x, sizeof x);
    lx_round_half_n(y, LX_DT_F16, N);
    for (int i = 0; i < N; i++) {
        float want = lx_f16_to_f32(lx_f32_to_f16(x[i]));
        if (isnan(want))
            cr_assert(isnan(y[i]), "%d (%a)", i, x[i]);
        else
            cr_assert_eq(memcmp(&y[i], &want, 4), 0, "lx_round_half_n differs at %d (%a): %a, want %a", i, x[i], y[i],
                         want);
    }
}

/* Two rows to interleaved bf16 pairs: each value as lx_f32_to_bf16 rounds it (ties, NaN,
** overflow), the second row 0 when absent, on the vector loop and its scalar tail. */
Test(half, f32_to_bf16_pairs_interleave_two_rounded_rows)
{
    struct lx_rng r;
    lx_rng_init(&r, 8, 0, 0);
    enum { N = 1003 };
    static float a[N], b[N];
    static uint16_t out[2 * N], none[2 * N];
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)(lx_rng_uniform(&r) * 4294967296.0), v = u * 2654435761u;
        if (i % 5 == 0)
            u = (u & 0xffff0000u) | 0x8000u;
        memcpy(&a[i], &u, 4), memcpy(&b[i], &v, 4);
    }
    a[0] = NAN, b[1] = -INFINITY, a[2] = 3.3895314e38f, b[3] = -0.0f;
    lx_f32_to_bf16_pairs(out, a, b, N);
    lx_f32_to_bf16_pairs(none, a, NULL, N);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(out[2 * i], lx_f32_to_bf16(a[i]), "a[%d] = %a", i, a[i]);
        cr_assert_eq(out[2 * i + 1], lx_f32_to_bf16(b[i]), "b[%d] = %a", i, b[i]);
        cr_assert_eq(none[2 * i], out[2 * i], "a[%d] without b", i);
        cr_assert_eq(none[2 * i + 1], 0, "the missing row at %d", i);
    }
}

/* ---- the bf16 Llama against torch ------------------------------------------------ */

struct ref {
    int ids[2][T];
    double nll[2][2][T - 1];      /* [fp32, bf16][window][position] */
    double last[2][2][V];
};

static void read_ref(struct ref *r)
{
    char path[512];
    struct lx_json *doc;
    struct lx_error err = {{0}};
    repo(path, TINY "/ref.json");
    cr_assert_eq(lx_json_load(&doc, path, 1 << 24, &err), LX_OK, "%s", err.msg);
    const struct lx_jv *root = lx_json_root(doc), *ids = lx_json_member(root, "ids");
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < T; t++) {
            int64_t v;
            cr_assert_eq(lx_json_int(doc, lx_json_at(lx_json_at(ids, b), t), &v, &err), LX_OK);
            r->ids[b][t] = (int)v;
        }
    const char *names[2] = {"fp32", "bf16"};
    for (int k = 0; k < 2; k++) {
        const struct lx_jv *o = lx_json_member(root, names[k]);
        for (int b = 0; b < 2; b++) {
            for (int t = 0; t < T - 1; t++)
                cr_assert_eq(lx_json_num(doc, lx_json_at(lx_json_at(lx_json_member(o, "nll"), b), t),
                                         &r->nll[k][b][t], &err), LX_OK);
            for (int v = 0; v < V; v++)
                cr_assert_eq(lx_json_num(doc, lx_json_at(lx_json_at(lx_json_member(o, "last_logits"), b), v),
                                         &r->last[k][b][v], &err), LX_OK);
        }
    }
    lx_json_free(doc);
}

struct got {
    double mean_nll, ref_mean, max_dlogit, max_dnll;
};

/* lenx's forward of both windows under the model's native stack, against reference k. */
static struct got run_tiny(const struct lx_model *m, const char *stack, const struct ref *r, int k, float *logits)
{
    struct tstack s;
    struct lx_facts f = tfacts((int)m->arch.d_head, 256, (int)m->arch.heads, T);
    tstack_make(&s, stack, &f);
    struct lx_acts a;
    struct lx_error err = {{0}};
    int tok[2 * T], tgt[2 * T];
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < T; t++) {
            tok[b * T + t] = r->ids[b][t];
            tgt[b * T + t] = t + 1 < T ? r->ids[b][t + 1] : -1;
        }
    cr_assert_eq(lx_acts_alloc(&a, &m->arch, 2, T, 0, &err), LX_OK, "%s", err.msg);
    struct got g = {0};
    g.mean_nll = lx_model_forward(m, &s.spec, tok, tgt, &a);
    for (int b = 0; b < 2; b++) {
        for (int t = 0; t < T - 1; t++) {
            g.ref_mean += r->nll[k][b][t] / (2.0 * (T - 1));
            g.max_dnll = fmax(g.max_dnll, fabs(a.loss[b * T + t] - r->nll[k][b][t]));
        }
        for (int v = 0; v < V; v++)
            g.max_dlogit = fmax(g.max_dlogit, fabs(a.logits[((long)b * T + T - 1) * V + v] - r->last[k][b][v]));
    }
    if (logits)
        memcpy(logits, a.logits, sizeof(float) * 2 * T * V);
    lx_acts_release(&a);
    tstack_free(&s);
    return g;
}

static void load_tiny(struct lx_model *m, struct lx_ckpt_info *info)
{
    char path[512];
    struct lx_error err = {{0}};
    repo(path, TINY);
    cr_assert_eq(lx_model_load(m, path, info, &err), LX_OK, "%s", err.msg);
}

/* Fast numerics on the bf16 weights, used in place, against torch's fp32
** forward on the upcast weights: 1e-5 in mean NLL (both sum fp32 products of
** the same values, in different orders: far below that). */
Test(half, fast_numerics_on_bf16_weights_match_torch_fp32)
{
    struct ref r;
    struct lx_model m;
    struct lx_ckpt_info info;
    read_ref(&r);
    load_tiny(&m, &info);
    cr_assert_not_null(m.held, "the bf16 matrices are used in place");
    cr_assert_eq(lx_model_dtype(&m), LX_DT_BF16);
    cr_assert_null(m.w, "no fp32 copy of the weights");
    struct got g = run_tiny(&m, info.stack, &r, 0, NULL);
    cr_log_info("fast vs torch fp32: mean NLL %.9f vs %.9f, max |dlogit| %.3g, max |dnll| %.3g", g.mean_nll,
                g.ref_mean, g.max_dlogit, g.max_dnll);
    cr_assert(fabs(g.mean_nll - g.ref_mean) < 1e-5, "mean NLL %.9f vs torch %.9f", g.mean_nll, g.ref_mean);
    cr_assert(g.max_dlogit < 1e-4, "max |dlogit| %g", g.max_dlogit);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* Portable numerics: the held bf16 model and its own fp32 copy give the same bits. */
Test(half, portable_held_model_is_the_fp32_bits)
{
    struct ref r;
    struct lx_model m;
    struct lx_ckpt_info info;
    static float a[2 * T * V], b[2 * T * V];
    read_ref(&r);
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    load_tiny(&m, &info);
    struct got g1 = run_tiny(&m, info.stack, &r, 0, a);
    lx_model_own(&m);
    cr_assert_null(m.held);
    struct got g2 = run_tiny(&m, info.stack, &r, 0, b);
    cr_assert_eq(memcmp(a, b, sizeof a), 0, "held and owned logits differ");
    cr_assert_eq(g1.mean_nll, g2.mean_nll);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* numerics bf16 against torch's bf16 forward. The two round different things:
** lenx rounds only the products' operands (weights are bf16 already;
** activations and attention's q, k, p and v) and keeps the residual stream,
** norms and softmax in fp32; torch rounds every activation tensor to bf16
** (8 significant bits: 2^-9 relative), each residual add and norm output
** included. The bounds (docs/numerics.md#half-precision): the mean NLL
** within 1e-3, about three times the sum of the two runs' own distances from
** the fp32 forward (measured 2.0e-4 and 9.4e-5); the logits within three
** times what torch's own bf16 rounding moves them (computed here from
** ref.json). */
Test(half, bf16_numerics_match_torch_bf16_within_its_own_rounding)
{
    struct ref r;
    struct lx_model m;
    struct lx_ckpt_info info;
    read_ref(&r);
    lx_numerics_set(LX_NUMERICS_BF16);
    load_tiny(&m, &info);
    struct got g = run_tiny(&m, info.stack, &r, 1, NULL), f = run_tiny(&m, info.stack, &r, 0, NULL);
    double torch_dmean = 0, torch_dlogit = 0;
    for (int b = 0; b < 2; b++) {
        for (int t = 0; t < T - 1; t++)
            torch_dmean += (r.nll[1][b][t] - r.nll[0][b][t]) / (2.0 * (T - 1));
        for (int v = 0; v < V; v++)
            torch_dlogit = fmax(torch_dlogit, fabs(r.last[1][b][v] - r.last[0][b][v]));
    }
    cr_log_info("bf16 vs torch bf16: mean NLL %.7f vs %.7f (torch bf16-fp32 %.3g), max |dlogit| %.4f (torch's own "
                "bf16-fp32 %.4f); vs torch fp32: d mean %.3g, max |dlogit| %.4f", g.mean_nll, g.ref_mean,
                torch_dmean, g.max_dlogit, torch_dlogit, f.mean_nll - f.ref_mean, f.max_dlogit);
    cr_assert(fabs(g.mean_nll - g.ref_mean) < 1e-3, "mean NLL %.7f vs torch bf16 %.7f", g.mean_nll, g.ref_mean);
    cr_assert(g.max_dlogit < 3 * torch_dlogit, "max |dlogit| %.4f against torch bf16, whose own rounding moves "
              "logits by %.4f", g.max_dlogit, torch_dlogit);
    cr_assert(f.max_dlogit > 0, "bf16 numerics must round something");
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* ---- hostile files ------------------------------------------------------------- */

/* A copy of the tiny model in a fresh folder (dir, 64 bytes). */
static void copy_tiny(char dir[64])
{
    char src[512], cmd[1400];
    strcpy(dir, "/tmp/lenx-half-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    repo(src, TINY);
    snprintf(cmd, sizeof cmd, "cp '%s/config.json' '%s/model.safetensors' '%s'", src, src, dir);
    cr_assert_eq(system(cmd), 0);
}

static void remove_dir(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static void load_fails(const char *dir, const char *part1, const char *part2)
{
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_model_load(&m, dir, &info, &err), LX_EINVAL, "loaded: %s", dir);
    cr_assert(strstr(err.msg, part1) && strstr(err.msg, part2), "%s", err.msg);
}

/* Truncated: the shard's tensors no longer fit its data buffer. */
Test(half, truncated_bf16_checkpoint_is_named)
{
    char dir[64], f[128];
    copy_tiny(dir);
    snprintf(f, sizeof f, "%s/model.safetensors", dir);
    struct stat sb;
    cr_assert_eq(stat(f, &sb), 0);
    cr_assert_eq(truncate(f, sb.st_size - 4096), 0);
    load_fails(dir, f, "tensor 'model.layers.1.mlp.down_proj.weight': data_offsets");
    remove_dir(dir);
}

/* A header whose offsets lie: one tensor's range made longer than its shape. */
Test(half, lying_offsets_are_named)
{
    char dir[64], f[128];
    copy_tiny(dir);
    snprintf(f, sizeof f, "%s/model.safetensors", dir);
    FILE *fp = fopen(f, "r+b");
    cr_assert_not_null(fp);
    uint64_t n;
    cr_assert_eq(fread(&n, 8, 1, fp), 1u);
    char *h = lx_xmalloc(n + 1);
    cr_assert_eq(fread(h, 1, n, fp), n);
    h[n] = 0;
    /* the norm's [a, b] becomes [a, b + 2]: the same length of text, digits permitting */
    char *at = strstr(h, "\"model.norm.weight\"");
    cr_assert_not_null(at);
    char *end = strstr(strstr(at, "data_offsets"), "]"), *comma = end;
    while (*comma != ',' && *comma != ' ')
        comma--;
    long b = strtol(comma + 1, NULL, 10);
    char num[32];
    snprintf(num, sizeof num, "%ld", b + 2);
    cr_assert_eq((long)strlen(num), (long)(end - comma - 1), "the test needs a same-width number");
    memcpy(comma + 1, num, strlen(num));
    cr_assert_eq(fseek(fp, 8, SEEK_SET), 0);
    cr_assert_eq(fwrite(h, 1, n, fp), n);
    fclose(fp);
    free(h);
    load_fails(dir, f, "model.norm.weight");
    remove_dir(dir);
}

/* Shrunk while its weights are used in place: the forward's read of a lost
** page is SIGBUS, which lenx's handler turns into an error naming the file
** and the tensor, exit status 3 (in a child, so the suite survives it). */
Test(half, shrunk_while_mapped_is_an_error_not_a_signal)
{
    char dir[64], f[128];
    int fds[2];
    copy_tiny(dir);
    snprintf(f, sizeof f, "%s/model.safetensors", dir);
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        struct ref r;
        struct lx_model m;
        struct lx_ckpt_info info;
        struct lx_error err = {{0}};
        dup2(fds[1], 2);
        read_ref(&r);
        if (lx_model_load(&m, dir, &info, &err) != LX_OK)
            _exit(10);
        if (truncate(f, 4096) != 0)     /* the header stays; every tensor's pages go */
            _exit(11);
        run_tiny(&m, info.stack, &r, 0, NULL);
        _exit(12);                      /* read lost pages without a fault: the test fails */
    }
    close(fds[1]);
    char out[4096] = "";
    size_t got = 0;
    ssize_t k;
    while (got + 1 < sizeof out && (k = read(fds[0], out + got, sizeof out - 1 - got)) > 0)
        got += (size_t)k;
    out[got] = 0;
    close(fds[0]);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %d (signal %d): %s", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
              WIFSIGNALED(st) ? WTERMSIG(st) : 0, out);
    cr_assert(strstr(out, f) && strstr(out, "tensor 'model.embed_tokens.weight'"), "%s", out);
    remove_dir(dir);
}

/* Rewritten at the same size while mapped: no fault, but the identity check
** before anything is stored or printed refuses it, naming the file. */
Test(half, rewritten_while_mapped_is_refused_before_storing)
{
    char dir[64], f[128];
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_error err = {{0}};
    copy_tiny(dir);
    snprintf(f, sizeof f, "%s/model.safetensors", dir);
    cr_assert_eq(lx_model_load(&m, dir, &info, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_mapguard_check(&err), LX_OK, "%s", err.msg);
    nanosleep(&(struct timespec){0, 20000000}, NULL);   /* past the file system's timestamp granularity */
    FILE *fp = fopen(f, "r+b");
    cr_assert_not_null(fp);
    cr_assert_eq(fseek(fp, -2, SEEK_END), 0);
    cr_assert_eq(fwrite("\x00\x00", 1, 2, fp), 2u);
    fclose(fp);
    cr_assert_eq(lx_mapguard_check(&err), LX_EIO);
    cr_assert(strstr(err.msg, f) && strstr(err.msg, "changed"), "%s", err.msg);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    cr_assert_eq(lx_mapguard_check(&err), LX_OK, "released: no longer guarded: %s", err.msg);
    remove_dir(dir);
}

/* ---- the half KV caches ------------------------------------------------------------ */

/* What the KV cache tests decode: the reference windows, the tiny model and
** its stack with `more` methods after it (NULL: none), compiled for windows
** of T at a training length of 256. */
struct kvfix {
    struct ref r;
    struct lx_model m;
    struct lx_ckpt_info info;
    struct tstack st;
};

static void kv_setup(struct kvfix *x, const char *more)
{
    memset(x, 0, sizeof *x);
    read_ref(&x->r);
    load_tiny(&x->m, &x->info);
    struct lx_facts f = tfacts((int)x->m.arch.d_head, 256, (int)x->m.arch.heads, T);
    char stack[512];
    snprintf(stack, sizeof stack, "[%.*s%s%s]", (int)strlen(x->info.stack) - 2, x->info.stack + 1, more ? ", " : "",
             more ? more : "");
    tstack_make(&x->st, stack, &f);
}

static void kv_teardown(struct kvfix *x)
{
    tstack_free(&x->st);
    lx_ckpt_info_release(&x->info);
    lx_model_release(&x->m);
}

/* Decoding from a half cache (type dt): the prefix's keys and values rounded
** (unit roundoff u: 2^-8 for bf16, 2^-11 for f16), each step's logits against
** the full forward's row; returns max |dlogit|. A key's rounding moves a
** score q·k/sqrt(D) by at most u |q||k|/sqrt(D) and a value's the output by
** u of its size; through two layers the logits move by the same order as
** under bf16 numerics, which round those and more (max 0.027 from the fp32
** forward, test above). The cache's keys and values take half the bytes. */
static double half_cache_dlogit(int dt)
{
    enum { P0 = 16 };
    static struct kvfix x;
    kv_setup(&x, NULL);
    struct lx_model *const m = &x.m;
    struct lx_error err = {{0}};
    double fp32 = lx_kvcache_bytes(&m->arch, NULL, 1, T, 0, 0);
    lx_kv_set(dt);
    double half = lx_kvcache_bytes(&m->arch, NULL, 1, T, 0, 0),
           kv = 2.0 * m->arch.layers * T * lx_arch_kv(&m->arch) * m->arch.d_head;
    double wide = omp_get_max_threads() * 3.0 * T * m->arch.d_head * 4;  /* a head's rows widened, per thread */
    cr_assert_eq(fp32 - (half - wide), kv * 2, "the %s cache saves 2 of every 4 bytes of its keys and values "
                 "(%g, %g)", lx_kv_name(dt), fp32, half - wide);
    struct lx_acts full, pre;
    struct lx_kvcache c;
    cr_assert_eq(lx_acts_alloc(&full, &m->arch, 1, T, 0, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_acts_alloc(&pre, &m->arch, 1, P0, 0, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_kvcache_alloc(&c, &m->arch, &x.st.spec, 1, T, &err), LX_OK, "%s", err.msg);
    cr_assert(c.half == dt && c.kh && !c.k);
    lx_model_forward(m, &x.st.spec, x.r.ids[0], NULL, &full);
    pre.kv = &c;
    lx_model_forward(m, &x.st.spec, x.r.ids[0], NULL, &pre);
    static float lg[V];
    double worst = 0;
    for (int p = P0; p < T; p++) {
        lx_decode_step(lg, m, &x.st.spec, &c, 0, p, x.r.ids[0][p]);
        for (int v = 0; v < V; v++)
            worst = fmax(worst, fabs(lg[v] - full.logits[(long)p * V + v]));
    }
    cr_log_info("%s KV cache: max |dlogit| %.5f over %d steps", lx_kv_name(dt), worst, T - P0);
    cr_assert_eq(lx_kvcache_check_range(&c, &err), LX_OK, "%s", err.msg);
    lx_kv_set(0);
    lx_kvcache_release(&c);
    lx_acts_release(&full);
    lx_acts_release(&pre);
    kv_teardown(&x);
    return worst;
}

/* bf16: measured max 0.019 over 48 steps; the bound is 0.05, about twice it and the bf16 numerics' 0.027. */
Test(half, bf16_kv_cache_decodes_within_its_rounding)
{
    double worst = half_cache_dlogit(LX_DT_BF16);
    cr_assert(worst > 0 && worst < 0.05, "max |dlogit| %g", worst);
}

/* f16 rounds with an eighth of bf16's unit roundoff, so its bound is an eighth of bf16's (0.05 / 8);
** measured 0.0025. */
Test(half, f16_kv_cache_decodes_within_its_rounding)
{
    double worst = half_cache_dlogit(LX_DT_F16);
    cr_assert(worst > 0 && worst < 0.05 / 8, "max |dlogit| %g", worst);
}

/* A key or value past f16's range (65504; 65520 and up round to infinity) becomes infinite in an f16
** cache: the decode loop stops at the next step with a run error naming the layer and the position; 65504
** itself, and a value already infinite, are no overflow. */
Test(half, f16_kv_cache_out_of_range_is_a_run_error)
{
    enum { P0 = 16 };
    static struct kvfix x;
    kv_setup(&x, NULL);
    struct lx_model *const m = &x.m;
    struct lx_error err = {{0}};
    lx_kv_set(LX_DT_F16);
    struct lx_acts pre;
    struct lx_kvcache c;
    cr_assert_eq(lx_acts_alloc(&pre, &m->arch, 1, P0, 0, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_kvcache_alloc(&c, &m->arch, &x.st.spec, 1, T, &err), LX_OK, "%s", err.msg);
    pre.kv = &c;
    lx_model_forward(m, &x.st.spec, x.r.ids[0], NULL, &pre);
    long KD = (long)lx_arch_kv(&m->arch) * m->arch.d_head;
    float *k = calloc((size_t)KD, sizeof(float)), *v = calloc((size_t)KD, sizeof(float));
    k[0] = 65504.0f, v[1] = -65519.0f, k[2] = INFINITY;
    lx_kvcache_store(&c, 0, 1, 3, k, v);
    cr_assert_eq(lx_kvcache_check_range(&c, &err), LX_OK, "%s", err.msg);
    v[KD - 1] = -65520.0f;
    lx_kvcache_store(&c, 0, 1, 5, k, v);
    cr_assert_eq(lx_kvcache_check_range(&c, &err), LX_ERUN);
    cr_assert(strstr(err.msg, "layer 1 at position 5") && strstr(err.msg, "hint: use kv_cache bf16"), "%s", err.msg);
    int out[P0 + 4];
    memcpy(out, x.r.ids[0], sizeof(int) * P0);
    out[P0] = x.r.ids[0][P0];
    static float lg[V];
    struct lx_decoder d = {.mode = LX_DECODE_CACHE, .c = &c, .lg = lg};
    err = (struct lx_error){{0}};
    cr_assert_eq(lx_decode_continue(m, &x.st.spec, &d, 0, out, P0, P0 + 4, &err), LX_ERUN);
    cr_assert(strstr(err.msg, "kv_cache f16") && strstr(err.msg, "position 5"), "%s", err.msg);
    cr_assert_eq(d.steps, 0, "stopped at the first step");
    free(k), free(v);
    lx_kvcache_release(&c);
    lx_acts_release(&pre);
    kv_teardown(&x);
}

/* The steps of a windowed stack with sinks (StreamingLLM: 2 sinks and 6 recent keys) from a bf16
** cache against the same steps from an fp32 one: the bf16 step widens only the rows the row reads
** (the sinks and the window), and a row it failed to widen would read another layer's or step's
** keys, off by far more than the rounding's 0.05 (the bound above). */
Test(half, bf16_kv_cache_widens_the_sinks_and_the_window)
{
    enum { P0 = 12 };
    static struct kvfix x;
    kv_setup(&x, "{streaming: {sinks: 2, recent: 6}}");
    struct lx_model *const m = &x.m;
    struct lx_error err = {{0}};
    static float lg[2][V];
    struct lx_kvcache c[2];
    for (int b = 0; b < 2; b++) {
        struct lx_acts pre;
        lx_kv_set(b);
        cr_assert_eq(lx_acts_alloc(&pre, &m->arch, 1, P0, 0, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(lx_kvcache_alloc(&c[b], &m->arch, &x.st.spec, 1, T, &err), LX_OK, "%s", err.msg);
        pre.kv = &c[b];
        lx_model_forward(m, &x.st.spec, x.r.ids[0], NULL, &pre);
        lx_acts_release(&pre);
    }
    lx_kv_set(0);
    double worst = 0;
    for (int p = P0; p < T; p++) {
        for (int b = 0; b < 2; b++)
            lx_decode_step(lg[b], m, &x.st.spec, &c[b], 0, p, x.r.ids[0][p]);
        for (int v = 0; v < V; v++)
            worst = fmax(worst, fabs(lg[1][v] - lg[0][v]));
    }
    cr_log_info("bf16 KV cache, sinks and window: max |dlogit| %.5f over %d steps", worst, T - P0);
    cr_assert(worst > 0 && worst < 0.05, "max |dlogit| %g", worst);
    lx_kvcache_release(&c[0]), lx_kvcache_release(&c[1]);
    kv_teardown(&x);
}

/* lx_f32_to_f16 against two independent references: the CPU's own F16C conversion
** (vcvtps2ph, round to nearest even) on random bit patterns and exact ties, and its
** definition: the nearest f16 by value (lx_f16_to_f32 of the two neighbours), ties to the even one. */
__attribute__((target("f16c"))) static uint16_t f16c(float f)
{
    return (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0);
}

Test(half, f32_to_f16_rounds_to_nearest_even)
{
    cr_assert(__builtin_cpu_supports("f16c"), "every x86-64 machine lenx runs on has F16C");
    struct lx_rng r;
    lx_rng_init(&r, 11, 0, 0);
    for (int i = 0; i < 2000003; i++) {
        uint32_t u = (uint32_t)(lx_rng_uniform(&r) * 4294967296.0);
        if (i % 5 == 0)     /* an exact tie between two f16 normals, or near the subnormal and overflow edges */
            u = (u & 0xffffe000u) | 0x1000u;
        if (i % 11 == 0)
            u = (u & 0x8000ffffu) | (uint32_t)(0x33 + i % 0x15) << 23;
        float f;
        memcpy(&f, &u, 4);
        uint16_t h = lx_f32_to_f16(f);
        if (isnan(f)) {
            cr_assert(isnan(lx_f16_to_f32(h)));
            continue;
        }
        cr_assert_eq(h, f16c(f), "%a: lenx %04x, F16C %04x", f, h, f16c(f));
    }
    for (uint32_t h = 0; h < 0x7c00; h++) {     /* every finite positive f16 and the midpoint above it */
        float v = lx_f16_to_f32((uint16_t)h), up = lx_f16_to_f32((uint16_t)(h + 1));
        cr_assert_eq(lx_f32_to_f16(v), h);
        float mid = (float)(((double)v + (double)up) / 2);   /* exact: f16 has 11 bits, f32 24 */
        if (h + 1 < 0x7c00)
            cr_assert_eq(lx_f32_to_f16(mid), h % 2 ? h + 1 : h, "tie above %04x", h);
    }
}

/* Q8_0 blocks as the format defines them (gguf.h's reader dequantizes them): each value within
** half a step d of its float, d = max|x|/127 rounded to f16, the largest value +-127, and a
** block of zeros all zero. Bit agreement with llama-quantize is checked on whole models
** (tests/test_gguf_export.c). */
Test(half, f32_to_q8_0_is_the_format)
{
    struct lx_rng r;
    lx_rng_init(&r, 12, 0, 0);
    enum { N = 32 * 64 };
    static float x[N], back[N];
    static unsigned char q[N / 32 * LX_Q8_0_BYTES];
    for (int i = 0; i < N; i++)
        x[i] = (float)((lx_rng_uniform(&r) - 0.5) * pow(10, (i / 32) % 9 - 4));
    for (int i = 0; i < 32; i++)
        x[N - 32 + i] = 0;
    lx_f32_to_q8_0(q, x, N);
    lx_half_to_f32(back, q, LX_DT_Q8_0, N);
    for (int b = 0; b < N / 32; b++) {
        uint16_t d16;
        memcpy(&d16, q + b * LX_Q8_0_BYTES, 2);
        double d = lx_f16_to_f32(d16), amax = 0;
        int top = 0;
        for (int j = 0; j < 32; j++)
            amax = fmax(amax, fabs(x[32 * b + j]));
        double exact = (float)amax / 127.0f, slack = 0.5 * exact + 127 * fabs(d - exact);   /* rounding, and d's f16 */
        for (int j = 0; j < 32; j++) {
            int8_t v = (int8_t)q[b * LX_Q8_0_BYTES + 2 + j];
            top |= v == 127 || v == -127;
            cr_assert_leq(fabs(back[32 * b + j] - x[32 * b + j]), slack * (1 + 1e-6) + 1e-30, "block %d value %d", b, j);
        }
        cr_assert_eq(top || amax == 0, 1, "block %d: no value at +-127", b);
        cr_assert_eq(d16, lx_f32_to_f16((float)exact), "block %d", b);
    }
}

/* A double sum of n terms a[i·sa]·b[i·sb] rounded to bf16 first, plus c; *mag the sum of |terms|. */
static double bf16_dot(const float *a, long sa, const float *b, long sb, long n, double c, double *mag)
{
    double sum = c;
    *mag = fabs(c);
    for (long k = 0; k < n; k++) {
        double t = (double)lx_round_bf16(a[k * sa]) * lx_round_bf16(b[k * sb]);
        sum += t, *mag += fabs(t);
    }
    return sum;
}

/* The backward's bf16 products (lx_linear_backward_bf16: dx = dy·W, dW += dyᵀ·x) against a
** double sum of the same bf16-rounded operands: each product of two bf16 values is exact in
** fp32, so only the fp32 sums differ, by at most n·2^-23 of the sum of |terms| over n terms
** (with room). W given as fp32 and as its bf16 rounding (training's copy) gives the same bits. */
Test(half, bf16_backward_products_match_the_reference)
{
    struct lx_rng r;
    lx_rng_init(&r, 21, 0, 0);
    const long shapes[][3] = {{1, 7, 5}, {33, 65, 17}, {128, 40, 300}, {5, 260, 64}};   /* rows, in, out */
    for (int s = 0; s < 4; s++) {
        long R = shapes[s][0], K = shapes[s][1], O = shapes[s][2];
        float *dy = malloc(sizeof(float) * R * O), *x = malloc(sizeof(float) * R * K), *W = malloc(sizeof(float) * O * K);
        float *dx[2], *dW[2];
        uint16_t *Wb = malloc(sizeof(uint16_t) * O * K);
        for (long i = 0; i < R * O; i++)
            dy[i] = (float)(lx_rng_uniform(&r) - 0.5);
        for (long i = 0; i < R * K; i++)
            x[i] = (float)(lx_rng_uniform(&r) - 0.5) * 3;
        for (long i = 0; i < O * K; i++)
            W[i] = (float)(lx_rng_uniform(&r) - 0.5) * 2, Wb[i] = lx_f32_to_bf16(W[i]);
        for (int k = 0; k < 2; k++) {
            dx[k] = malloc(sizeof(float) * R * K), dW[k] = malloc(sizeof(float) * O * K);
            for (long i = 0; i < R * K; i++)
                dx[k][i] = NAN;     /* overwritten */
            for (long i = 0; i < O * K; i++)
                dW[k][i] = -0.5f;
            lx_linear_backward_bf16(dx[k], dW[k], dy, x, k ? (struct lx_wmat){Wb, LX_DT_BF16, 0, NULL, 0} : (struct lx_wmat){W, LX_DT_F32, 0, NULL, 0},
                                    R, K, O);
        }
        double mag;
        for (long t = 0; t < R; t++)
            for (long c = 0; c < K; c++) {
                double want = bf16_dot(dy + t * O, 1, W + c, K, O, 0.0, &mag);
                cr_assert_leq(fabs(dx[0][t * K + c] - want), (double)(O + 1) * 0x1p-22 * mag + 1e-30,
                              "dx (%ld, %ld, %ld) [%ld,%ld]: %.9g vs %.9g", R, K, O, t, c, dx[0][t * K + c], want);
            }
        for (long o = 0; o < O; o++)
            for (long c = 0; c < K; c++) {
                double want = bf16_dot(dy + o, O, x + c, K, R, -0.5, &mag);
                cr_assert_leq(fabs(dW[0][o * K + c] - want), (double)(R + 1) * 0x1p-22 * mag + 1e-30,
                              "dW (%ld, %ld, %ld) [%ld,%ld]: %.9g vs %.9g", R, K, O, o, c, dW[0][o * K + c], want);
            }
        cr_assert_arr_eq(dx[0], dx[1], sizeof(float) * R * K, "dx with W as bf16 (%ld, %ld, %ld)", R, K, O);
        cr_assert_arr_eq(dW[0], dW[1], sizeof(float) * O * K, "dW with W as bf16 (%ld, %ld, %ld)", R, K, O);
        for (int k = 0; k < 2; k++)
            free(dx[k]), free(dW[k]);
        free(dy), free(x), free(W), free(Wb);
    }
}
