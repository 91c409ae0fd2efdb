/*
** tests/test_rotary.c - the rotary-frequency methods (pi, ntk, yarn, llama3,
** prope, giraffe) against the golden numbers of docs/methods.md#pi, docs/methods.md#ntk,
** docs/methods.md#yarn, docs/methods.md#llama3 and docs/methods.md#prope, against values computed independently in plain Python (double
** precision; the one-liners stand beside the numbers), and their properties:
** PI and NTK with scale 1 are RoPE, YaRN keeps fast pairs and interpolates slow
** ones, auto scales follow length / train_len, and the stack errors.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness/core/json.h"
#include "harness/engine/formats/hf_rope.h"
#include "harness/engine/model/model.h"
#include "tests/stack.h"

/* The rotary table of `yaml` compiled for f. */
static struct lx_rotary table(const char *yaml, struct lx_facts f)
{
    struct tstack s;
    tstack_make(&s, yaml, &f);
    struct lx_rotary r = s.spec.rotary;
    tstack_free(&s);
    return r;
}

/* The logit multiplier of `yaml` for f: every op applied to S = 1 (t = 0, n = length). */
static double logit_scale(const char *yaml, struct lx_facts f)
{
    struct tstack s;
    tstack_make(&s, yaml, &f);
    double v = lx_spec_logit(&s.spec, 0, f.length, 0, 1.0);
    tstack_free(&s);
    return v;
}

static void expect_rel(double x, double ref, double rel, const char *what, int k)
{
    cr_expect(fabs(x - ref) <= rel * fabs(ref), "%s [%d]: %.10g vs %.10g (rel %g)", what, k, x, ref, rel);
}

/* Two tables are the same to the bit, layout included. */
static void expect_same(const struct lx_rotary *a, const struct lx_rotary *b, const char *what)
{
    cr_assert_eq(a->n_pairs, b->n_pairs, "%s", what);
    cr_expect_eq(a->layout, b->layout, "%s", what);
    for (int k = 0; k < a->n_pairs; k++)
        cr_expect_eq(a->inv_freq[k], b->inv_freq[k], "%s [%d]: %.17g vs %.17g", what, k, a->inv_freq[k],
                     b->inv_freq[k]);
}

/* tests/ref/NAME opened, past its header line. */
static FILE *ref_csv(const char *name)
{
    char path[512], line[256];
    snprintf(path, sizeof path, "%s/tests/ref/%s", getenv("LENX_ROOT"), name);
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "%s", path);
    cr_assert_not_null(fgets(line, sizeof line, fp));
    return fp;
}

/* Compiling `yaml` fails with a message containing both a and b. */
static void expect_fails(const char *yaml, struct lx_facts f, const char *a, const char *b)
{
    struct tstack s;
    struct lx_error err = {{0}};
    cr_expect_lt(tstack_try(&s, yaml, &f, &err), 0, "%s compiled", yaml);
    cr_expect(strstr(err.msg, a) && strstr(err.msg, b), "%s: %s", yaml, err.msg);
    tstack_free(&s);
}

/* The training-time part of `yaml` compiled for f (lx_stack_compile_train). */
static int train_compile(const char *yaml, struct lx_facts f, struct lx_spec *spec, struct lx_error *err)
{
    struct lx_doc doc;
    struct lx_stack st;
    cr_assert_eq(lx_doc_load_text(&doc, yaml, "t.yaml", err), LX_OK, "%s", err->msg);
    cr_assert_eq(lx_stack_parse(&st, doc.root, err), LX_OK, "%s", err->msg);
    int rc = lx_stack_compile_train(&st, &f, spec, err);
    lx_stack_release(&st);
    lx_doc_release(&doc);
    return rc;
}

/* The training-time part of `yaml` fails to compile with a message containing msg. */
static void expect_train_fails(const char *yaml, struct lx_facts f, const char *msg)
{
    struct lx_spec spec;
    struct lx_error err = {{0}};
    cr_expect_lt(train_compile(yaml, f, &spec, &err), 0, "%s compiled for training", yaml);
    cr_expect(strstr(err.msg, msg) != NULL, "%s: %s", yaml, err.msg);
}

/* ---- pi ---------------------------------------------------------------- */

Test(pi, golden)
{
    /* docs/methods.md#pi: s = 4, d = 64, b = 1e4:
    ** θ_0 = 1 -> 0.25, θ_31 = 1.333521e-4 -> 3.333804e-5. */
    struct lx_rotary rope = table("rope", tfacts(64, 64, 1, 64));
    struct lx_rotary r = table("[rope, {pi: {scale: 4}}]", tfacts(64, 64, 1, 64));
    expect_rel(r.inv_freq[0], 0.25, 1e-15, "pi theta_0", 0);
    expect_rel(r.inv_freq[31], 3.333804e-5, 1e-6, "pi theta_31", 31);
    for (int k = 0; k < 32; k++)
        expect_rel(r.inv_freq[k], rope.inv_freq[k] / 4, 1e-15, "pi theta/4", k);
    /* python3 -c "print(500000**(-126/128)/8, 500000**(-20/128)/8)" */
    r = table("[{rope: {base: 500000}}, {pi: {scale: 8}}]", tfacts(128, 4096, 1, 4096));
    expect_rel(r.inv_freq[63], 3.068925988914511e-07, 1e-12, "pi b=5e5 s=8", 63);
    expect_rel(r.inv_freq[10], 0.016085921679081315, 1e-12, "pi b=5e5 s=8", 10);
}

Test(pi, scale_one_is_rope)
{
    struct lx_facts f = tfacts(64, 64, 1, 4096);
    struct lx_rotary rope = table("rope", f), r = table("[rope, {pi: {scale: 1}}]", f);
    expect_same(&r, &rope, "pi scale 1");
    f = tfacts(128, 512, 4, 512);
    rope = table("{rope: {layout: interleaved}}", f);
    r = table("[{rope: {layout: interleaved}}, {pi: {scale: 1}}]", f);
    expect_same(&r, &rope, "pi scale 1, interleaved");
}

Test(pi, auto_scale)
{
    /* scale 0: s = length / train_len above the training length, 1 at or below it. */
    struct lx_rotary rope = table("rope", tfacts(64, 64, 1, 64));
    struct lx_rotary r = table("[rope, pi]", tfacts(64, 64, 1, 256));
    expect_rel(r.inv_freq[0], 0.25, 1e-15, "pi auto 256/64", 0);
    expect_rel(r.inv_freq[31], 3.333804e-5, 1e-6, "pi auto 256/64", 31);
    r = table("[rope, pi]", tfacts(64, 64, 1, 100));     /* python3 -c "print(100/64)": 1.5625 */
    for (int k = 0; k < 32; k++)
        expect_rel(r.inv_freq[k], rope.inv_freq[k] / 1.5625, 1e-15, "pi auto 100/64", k);
    r = table("[rope, pi]", tfacts(64, 64, 1, 64));
    expect_same(&r, &rope, "pi auto at L");
    r = table("[rope, pi]", tfacts(64, 64, 1, 32));
    expect_same(&r, &rope, "pi auto below L");
}

Test(pi, trained_in_needs_a_scale)
{
    struct lx_spec spec;
    struct lx_error err = {{0}};
    struct lx_facts f = tfacts(64, 64, 1, 256);
    expect_train_fails("[rope, {pi: {train: true}}]", f, "pi: trained in (train: true) it needs an explicit "
                       "scale\n  hint: e.g. pi: {scale: 4, train: true}");
    /* At evaluation the same stack resolves its scale from the length. */
    expect_rel(table("[rope, {pi: {train: true}}]", f).inv_freq[0], 0.25, 1e-15, "pi auto at evaluation", 0);
    cr_assert_eq(train_compile("[rope, {pi: {scale: 4, train: true}}]", f, &spec, &err), LX_OK, "%s", err.msg);
    cr_expect_str_eq(spec.frequencies, "pi");
    expect_rel(spec.rotary.inv_freq[0], 0.25, 1e-15, "pi trained", 0);
    /* Not trained in: the training part is rope alone. */
    cr_assert_eq(train_compile("[rope, pi]", f, &spec, &err), LX_OK, "%s", err.msg);
    cr_expect_null(spec.frequencies);
    cr_expect_eq(spec.rotary.inv_freq[0], 1.0);
}

/* ---- ntk --------------------------------------------------------------- */

Test(ntk, static_golden)
{
    /* docs/methods.md#ntk static, d = 64, b = 1e4, s = 4: b' = 41829.365929;
    ** θ_k(orig)/θ_k(new) at k = 0, 1, 16, 31. */
    static const struct { int k; double ratio; } g[] = {
        {0, 1.000000}, {1, 1.045734}, {16, 2.045223}, {31, 4.000000},
    };
    struct lx_facts f = tfacts(64, 64, 1, 64);
    struct lx_rotary rope = table("rope", f), r = table("[rope, {ntk: {scale: 4}}]", f);
    expect_rel(r.base, 41829.365929, 1e-10, "ntk b'", 0);
    for (size_t i = 0; i < sizeof g / sizeof *g; i++)
        expect_rel(rope.inv_freq[g[i].k] / r.inv_freq[g[i].k], g[i].ratio, 1e-6, "ntk ratio", g[i].k);
    /* Auto: length 256 over 64 is s = 4. */
    struct lx_rotary a = table("[rope, ntk]", tfacts(64, 64, 1, 256));
    expect_same(&a, &r, "ntk auto 256/64");
    /* python3 -c "print(500000*8**(128/126))" */
    r = table("[{rope: {base: 500000}}, {ntk: {scale: 8}}]", tfacts(128, 4096, 1, 4096));
    expect_rel(r.base, 4134231.132028111, 1e-12, "ntk b=5e5 s=8", 0);
}

Test(ntk, lowest_frequency_divided_by_s)
{
    /* b'^(−(d−2)/d) = b^(−(d−2)/d)/s for every d and s, and θ_0 stays 1. */
    static const struct { int d; double s; } c[] = {{16, 2}, {64, 4}, {128, 16}, {96, 3.5}};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char yaml[64];
        snprintf(yaml, sizeof yaml, "[rope, {ntk: {scale: %g}}]", c[i].s);
        struct lx_facts f = tfacts(c[i].d, 64, 1, 64);
        struct lx_rotary rope = table("rope", f), r = table(yaml, f);
        int last = c[i].d / 2 - 1;
        cr_expect_eq(r.inv_freq[0], 1.0);
        expect_rel(r.inv_freq[last], rope.inv_freq[last] / c[i].s, 1e-12, yaml, last);
    }
}

Test(ntk, scale_one_is_rope)
{
    struct lx_facts f = tfacts(64, 64, 1, 4096);
    struct lx_rotary rope = table("rope", f), r = table("[rope, {ntk: {scale: 1}}]", f);
    expect_same(&r, &rope, "ntk scale 1");
    r = table("[rope, ntk]", tfacts(64, 64, 1, 64));
    expect_same(&r, &rope, "ntk auto at L");
    r = table("[rope, ntk]", tfacts(64, 64, 1, 10));
    expect_same(&r, &rope, "ntk auto below L");
}

Test(ntk, dynamic_golden)
{
    /* docs/methods.md#ntk dynamic, HF formula, d = 64, L = 64. n = max(length, L). */
    static const struct { double factor; long n; double base; } g[] = {
        {1, 64, 10000}, {1, 128, 20452.229}, {1, 256, 41829.366}, {1, 32, 10000},
        {4, 64, 10000}, {4, 128, 52664.434}, {4, 256, 141213.757}, {4, 16, 10000},
    };
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        char yaml[80];
        snprintf(yaml, sizeof yaml, "[rope, {ntk: {mode: dynamic, factor: %g}}]", g[i].factor);
        struct lx_rotary r = table(yaml, tfacts(64, 64, 1, g[i].n));
        expect_rel(r.base, g[i].base, 1e-6, yaml, (int)g[i].n);
        expect_rel(r.inv_freq[31], pow(g[i].base, -62.0 / 64), 1e-6, yaml, 31);
    }
    /* python3 -c "print(10000*(3*250/100-2)**(32/30))": d = 32, L = 100, factor 3, n = 250. */
    struct lx_rotary r = table("[rope, {ntk: {mode: dynamic, factor: 3}}]", tfacts(32, 100, 1, 250));
    expect_rel(r.base, 61619.78832825955, 1e-12, "ntk dynamic d=32", 0);
}

Test(ntk, qwen_golden)
{
    /* docs/methods.md#ntk qwen, Qwen-1, L = 2048, d = 128: α = 1, 3, 7, 15 by doubling of n/L. */
    static const struct { long n; double base; } g[] = {
        {1000, 10000}, {2048, 10000}, {2049, 30527.737}, {4096, 30527.737}, {4097, 72195.860},
        {8192, 72195.860}, {8193, 156588.323}, {16384, 156588.323},
    };
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        struct lx_rotary r = table("[rope, {ntk: {mode: qwen}}]", tfacts(128, 2048, 1, g[i].n));
        expect_rel(r.base, g[i].base, 1e-6, "ntk qwen", (int)g[i].n);
    }
    /* python3 -c "print(10000*7**(64/62))": L = 1000, n = 2500, log2(2.5) + 1 = 2.32 -> α = 7. */
    struct lx_rotary r = table("[rope, {ntk: {mode: qwen}}]", tfacts(64, 1000, 1, 2500));
    expect_rel(r.base, 74534.83031811893, 1e-12, "ntk qwen d=64", 0);
}

/* ---- yarn -------------------------------------------------------------- */

Test(yarn, case_a)
{
    /* docs/methods.md#yarn, first case: d = 64, b = 1e4, s = 4, L = 64: low 0, high 9.
    ** θ'_k (code) and w_k to the printed digits; w_k recovered as (θ'_k·s/θ_k − 1)/(s − 1). */
    static const struct { int k; double theta, w; } g[] = {
        {0, 1.000000000, 1.000000}, {1, 0.6874030, 0.888889}, {2, 0.4686178, 0.777778},
        {3, 0.3162724, 0.666667},   {4, 0.2108185, 0.555556}, {5, 0.1383301, 0.444444},
        {6, 0.0889140, 0.333333},   {7, 0.0555634, 0.222222}, {8, 0.0333333, 0.111111},
        {9, 0.01874736, 0.000000},
    };
    struct lx_facts f = tfacts(64, 64, 1, 64);
    struct lx_rotary rope = table("rope", f), r = table("[rope, {yarn: {scale: 4}}]", f);
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        int k = g[i].k;
        cr_expect(fabs(r.inv_freq[k] - g[i].theta) < 5e-8, "yarn A [%d]: %.10f vs %.8f", k, r.inv_freq[k],
                  g[i].theta);
        double w = (r.inv_freq[k] * 4 / rope.inv_freq[k] - 1) / 3;
        cr_expect(fabs(w - g[i].w) < 5e-7, "yarn A w [%d]: %.8f vs %.6f", k, w, g[i].w);
    }
    for (int k = 10; k < 32; k++)
        expect_rel(r.inv_freq[k], rope.inv_freq[k] / 4, 1e-15, "yarn A theta/4", k);
    expect_rel(r.inv_freq[31], 3.333804e-5, 1e-6, "yarn A", 31);
    cr_expect(fabs(logit_scale("[rope, {yarn: {scale: 4}}]", f) - 1.296477) < 5e-7);
    /* `original` sets L for the ramp and the auto scale: L = 64 at length 256 is Case A again. */
    struct lx_rotary o = table("[rope, {yarn: {original: 64}}]", tfacts(64, 1024, 1, 256));
    expect_same(&o, &r, "yarn original 64, length 256");
}

Test(yarn, case_a_untruncated)
{
    /* docs/methods.md#yarn, truncate = false: high = 8.064001, w_k and θ'_k for k = 1..8. */
    static const double w[] = {0.875992, 0.751984, 0.627976, 0.503968, 0.379960, 0.255952, 0.131945, 0.007937};
    static const double th[] = {0.68014959, 0.45773916, 0.30403566, 0.19858352,
                                0.12686145, 0.07859361, 0.04653435, 0.02559525};
    struct lx_facts f = tfacts(64, 64, 1, 64);
    struct lx_rotary rope = table("rope", f), r = table("[rope, {yarn: {scale: 4, truncate: false}}]", f);
    cr_expect_eq(r.inv_freq[0], 1.0);
    for (int k = 1; k <= 8; k++) {
        cr_expect(fabs(r.inv_freq[k] - th[k - 1]) < 5e-9, "yarn untruncated [%d]: %.10f", k, r.inv_freq[k]);
        double wk = (r.inv_freq[k] * 4 / rope.inv_freq[k] - 1) / 3;
        cr_expect(fabs(wk - w[k - 1]) < 5e-7, "yarn untruncated w [%d]: %.8f", k, wk);
    }
    expect_rel(r.inv_freq[9], rope.inv_freq[9] / 4, 1e-15, "yarn untruncated", 9);
}

/* A Hugging Face config's rope_scaling `truncate: false` (transformers' _compute_yarn_parameters reads it,
** default true; gpt-oss writes false) reaches the yarn method: the table is case A untruncated, θ'_k for
** k = 1..8 as above (recomputed with Python's math from corr_dim and the ramp, no floor or ceil). */
Test(yarn, hf_config_untruncated)
{
    static const double th[] = {0.68014959, 0.45773916, 0.30403566, 0.19858352,
                                0.12686145, 0.07859361, 0.04653435, 0.02559525};
    static const char cfg[] = "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4, "
                              "\"original_max_position_embeddings\": 64, \"truncate\": false}}";
    struct lx_error err = {{0}};
    struct lx_json *doc = NULL;
    cr_assert_eq(lx_json_parse(&doc, cfg, strlen(cfg), "config.json", &err), LX_OK, "%s", err.msg);
    struct lx_buf stack = {0};
    char *eval = NULL, *raw = NULL;
    struct hf_rope_facts c = {.theta = 10000, .max_pos = 256, .head_dim = 64, .rot_dims = 64};
    cr_assert_eq(lx_hf_stacks(doc, &c, &stack, &eval, &raw, &err), LX_OK, "%s", err.msg);
    cr_expect(strstr(lx_buf_str(&stack), "\"truncate\":false"), "%s", lx_buf_str(&stack));
    struct lx_rotary r = table(lx_buf_str(&stack), tfacts(64, 64, 1, 64));
    for (int k = 1; k <= 8; k++)
        cr_expect(fabs(r.inv_freq[k] - th[k - 1]) < 5e-9, "HF yarn untruncated [%d]: %.10f", k, r.inv_freq[k]);
    free(eval);
    free(raw);
    lx_buf_free(&stack);
    lx_json_free(doc);
}

Test(yarn, case_b)
{
    /* docs/methods.md#yarn, Llama-2-like: d = 128, b = 1e4, L = 4096, s = 16: low 20, high 46. */
    static const struct { int k; double theta; } g[] = {
        {21, 4.694086e-2}, {33, 4.600435e-3}, {45, 1.517716e-4}, {47, 7.217387e-5},
    };
    struct lx_facts f = tfacts(128, 4096, 1, 4096);
    struct lx_rotary rope = table("rope", f), r = table("[rope, {yarn: {scale: 16}}]", f);
    for (size_t i = 0; i < sizeof g / sizeof *g; i++)
        expect_rel(r.inv_freq[g[i].k], g[i].theta, 1e-6, "yarn B", g[i].k);
    for (int k = 0; k <= 20; k++)
        cr_expect_eq(r.inv_freq[k], rope.inv_freq[k], "yarn B keeps [%d]", k);
    for (int k = 46; k < 64; k++)
        expect_rel(r.inv_freq[k], rope.inv_freq[k] / 16, 1e-15, "yarn B theta/16", k);
    cr_expect(fabs(logit_scale("[rope, {yarn: {scale: 16}}]", f) - 1.631390) < 5e-7);
}

Test(yarn, mscale)
{
    /* docs/methods.md#yarn mscale table: the logits are multiplied by mscale² = (0.1 ln s + 1)². */
    static const struct { double s, m2; } g[] = {
        {1, 1}, {2, 1.143434}, {4, 1.296477}, {8, 1.459129}, {16, 1.631390}, {32, 1.813260}, {0.5, 1},
    };
    struct lx_facts f = tfacts(64, 64, 1, 64);
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        char yaml[64];
        snprintf(yaml, sizeof yaml, "[rope, {yarn: {scale: %g}}]", g[i].s);
        double m2 = logit_scale(yaml, f);
        cr_expect(fabs(m2 - g[i].m2) < 5e-7, "%s: %.8f", yaml, m2);
    }
    /* attn_factor multiplies mscale: python3 -c "import math; print((0.1*math.log(3)+1)**2*0.81)" */
    double m2 = logit_scale("[rope, {yarn: {scale: 3, attn_factor: 0.9}}]", f);
    expect_rel(m2, 0.9977514773468159, 1e-12, "yarn attn_factor", 0);
    /* Auto: python3 -c "import math; print((0.1*math.log(100/64)+1)**2)" */
    expect_rel(logit_scale("[rope, yarn]", tfacts(64, 64, 1, 100)), 1.0912491423054087, 1e-12, "yarn auto", 0);
}

Test(yarn, python_d32)
{
    /* d = 32, b = 5e5, L = 128, s = 8: corr_dim(32) = -0.55, corr_dim(1) = 3.68 -> low 0, high 4.
    ** python3 -c "import math; d,b,L,s=32,5e5,128,8; cd=lambda R: d*math.log(L/(2*math.pi*R))/(2*math.log(b));
    **   lo=max(math.floor(cd(32)),0); hi=min(math.ceil(cd(1)),d-1);
    **   w=lambda k: 1-min(max((k-lo)/(hi-lo),0),1);
    **   [print(k, b**(-2*k/d)/s*(1-w(k)) + b**(-2*k/d)*w(k)) for k in range(16)]" */
    static const double g[] = {1.0, 0.34403640833732846, 0.10908154392113574, 0.029355253223231927,
                               0.004700753866357992, 0.002070055010124306, 0.0009115830921521387};
    struct lx_rotary r = table("[{rope: {base: 500000}}, {yarn: {scale: 8}}]", tfacts(32, 128, 1, 128));
    for (int k = 0; k < 7; k++)
        expect_rel(r.inv_freq[k], g[k], 1e-12, "yarn d=32", k);
    expect_rel(r.inv_freq[15], 5.677088100759837e-07, 1e-12, "yarn d=32", 15);
    expect_rel(logit_scale("[rope, {yarn: {scale: 8}}]", tfacts(32, 128, 1, 128)), 1.4591290795886054, 1e-12,
               "yarn mscale2 s=8", 0);
}

Test(yarn, low_equals_high)
{
    /* L = 6 < 2π: corr_dim(1) = 64·ln(6/2π)/(2 ln 1e4) = -0.16, ceil 0 = low, so high = 0.001:
    ** pair 0 keeps θ_0 = 1 and every other pair is interpolated. */
    struct lx_facts f = tfacts(64, 6, 1, 6);
    struct lx_rotary rope = table("rope", f), r = table("[rope, {yarn: {scale: 4}}]", f);
    cr_expect_eq(r.inv_freq[0], 1.0);
    for (int k = 1; k < 32; k++)
        expect_rel(r.inv_freq[k], rope.inv_freq[k] / 4, 1e-15, "yarn low == high", k);
}

Test(yarn, rope_for_fast_pairs_pi_for_slow)
{
    /* d = 128, L = 4096, s = 16: a pair whose wavelength 2π/θ_k is far below L (more than
    ** beta_fast = 32 turns in L, with a pair of margin for the floor) is RoPE's; one far
    ** above L (less than one turn) is PI's; between, θ'_k lies between the two. */
    struct lx_facts f = tfacts(128, 4096, 1, 4096);
    struct lx_rotary rope = table("rope", f), pi = table("[rope, {pi: {scale: 16}}]", f);
    struct lx_rotary r = table("[rope, {yarn: {scale: 16}}]", f);
    int n_rope = 0, n_pi = 0;
    for (int k = 0; k < 64; k++) {
        double lambda = 2 * acos(-1.0) / rope.inv_freq[k];
        if (lambda < 4096.0 / 64) {
            cr_expect_eq(r.inv_freq[k], rope.inv_freq[k], "yarn fast pair %d", k);
            n_rope++;
        } else if (lambda > 2 * 4096.0) {
            expect_rel(r.inv_freq[k], pi.inv_freq[k], 1e-15, "yarn slow pair", k);
            n_pi++;
        } else {
            cr_expect(r.inv_freq[k] >= pi.inv_freq[k] && r.inv_freq[k] <= rope.inv_freq[k], "pair %d", k);
        }
    }
    cr_expect_eq(n_rope, 17);   /* λ_k = 2π·1e4^(k/64) < 64 for k <= 16 */
    cr_expect_eq(n_pi, 14);     /* λ_k > 8192 for k >= 50 */
}

Test(yarn, auto_scale)
{
    /* At or below L the auto scale is 1: RoPE's table and no logit scale. */
    struct lx_rotary rope = table("rope", tfacts(64, 64, 1, 64));
    for (long n = 16; n <= 64; n *= 2) {
        struct lx_rotary r = table("[rope, yarn]", tfacts(64, 64, 1, n));
        expect_same(&r, &rope, "yarn auto at or below L");
        cr_expect_eq(logit_scale("[rope, yarn]", tfacts(64, 64, 1, n)), 1.0);
    }
    struct lx_rotary a = table("[rope, yarn]", tfacts(64, 64, 1, 256));
    struct lx_rotary r = table("[rope, {yarn: {scale: 4}}]", tfacts(64, 64, 1, 256));
    expect_same(&a, &r, "yarn auto 256/64");
}

/* The ramp runs from beta_fast's pair to beta_slow's: the other way round is refused, saying what to give. */
Test(yarn, beta_fast_above_beta_slow)
{
    expect_fails("[rope, {yarn: {scale: 4, beta_fast: 1, beta_slow: 32}}]", tfacts(64, 64, 1, 256),
                 "yarn: needs beta_fast > beta_slow", "hint: ");
    expect_fails("[rope, {yarn: {scale: 4, beta_fast: 8, beta_slow: 8}}]", tfacts(64, 64, 1, 256),
                 "got 8, 8", "hint: ");
}

Test(yarn, trained_in_needs_a_scale)
{
    struct lx_spec spec;
    struct lx_error err = {{0}};
    struct lx_facts f = tfacts(64, 64, 1, 256);
    expect_train_fails("[rope, {yarn: {train: true}}]", f,
                       "yarn: trained in (train: true) it needs an explicit scale");
    cr_assert_eq(train_compile("[rope, {yarn: {scale: 4, train: true}}]", f, &spec, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(spec.n_ops, 1);
    cr_expect(fabs(spec.rotary.inv_freq[1] - 0.6874030) < 5e-8);
}

/* ---- partial rotary (rope dims) ------------------------------------------ */

/* rope: {dims: R} turns the first R channels of each head as transformers' partial_rotary_factor does
** (Phi-4-mini, GPT-NeoX's rotary_pct): θ_k = b^(-2k/R), rotate_half within the first R channels (pairs
** k, k + R/2), the rest left as they are. lx_rope_apply, the model's path (its AVX-512 lanes take eight
** pairs at a time: R = 28 has one block and six pairs for the scalar loop), against that formula written
** here; and the rescalings on top count R's pairs (longrope's lists, the tables of yarn, ntk, llama3,
** pi and prope are those they make for a head of R). */
Test(rope, partial_turns_the_first_channels)
{
    static const double inv12[] = {1, 0.21544346900318834, 0.046415888336127795, 0.01, 0.0021544346900318843,
                                   0.00046415888336127773};    /* 10^(-4k/6) */
    struct lx_rotary r = table("{rope: {dims: 12}}", tfacts(16, 64, 1, 64));
    cr_expect_eq(r.n_pairs, 6);
    for (int k = 0; k < 6; k++)
        expect_rel(r.inv_freq[k], inv12[k], 1e-15, "rope dims 12", k);
    enum { D = 40, R = 28, T = 7, H = 2, KV = 1 };     /* 14 pairs: 8 in lanes, 6 in the scalar loop */
    static float x[T * (H + 2 * KV) * D], y[T * (H + 2 * KV) * D];
    static double cs[T * 2 * (R / 2)];
    for (long i = 0; i < T * (H + 2 * KV) * D; i++)
        x[i] = y[i] = (float)sin(0.7 * (double)i + 0.3);
    r = table("{rope: {dims: 28, base: 500}}", tfacts(D, 64, H, T));
    lx_rope_table(cs, NULL, &r, T);
    lx_rope_apply(y, &r, cs, NULL, 1, T, H, KV, D, 1);
    double worst = 0;
    for (int t = 0; t < T; t++)
        for (int v = 0; v < H + KV; v++) {     /* q heads, then the k head (v is not turned) */
            const float *a = x + ((long)t * (H + 2 * KV) + v) * D, *b = y + ((long)t * (H + 2 * KV) + v) * D;
            for (int c = 0; c < D; c++) {
                double want = a[c];
                if (c < R) {
                    int k = c % (R / 2);
                    double th = t * pow(500.0, -2.0 * k / R), rot = c < R / 2 ? -a[c + R / 2] : a[c - R / 2];
                    want = (double)(float)(a[c] * cos(th) + rot * sin(th));
                }
                worst = fmax(worst, fabs(b[c] - want));
            }
        }
    cr_expect_leq(worst, 1e-6, "partial rope against rotate_half on the first 28 of 40 channels: %g", worst);
    for (int c = R; c < D; c++)
        cr_expect_eq(y[(long)5 * (H + 2 * KV) * D + c], x[(long)5 * (H + 2 * KV) * D + c], "channel %d moved", c);
    /* the rescalings count the pairs rope made: longrope's lists have R/2 factors, yarn's d is R */
    struct lx_facts f = tfacts(16, 32, 1, 64);
    struct tstack s;
    struct lx_error err = {{0}};
    cr_expect_eq(tstack_try(&s, "[{rope: {dims: 12}}, {longrope: {long_factor: [1, 1, 1, 1, 1, 1, 1, 1]}}]", &f, &err),
                 LX_EINVAL);
    cr_expect(strstr(err.msg, "long_factor has 8 factors; a head of 16 has 6 rotary pairs"), "%s", err.msg);
    tstack_free(&s);
    struct lx_rotary lr = table("[{rope: {dims: 12}}, {longrope: {scale: 4, original: 32, "
                                "long_factor: [1, 2, 4, 8, 16, 32]}}]", f);
    for (int k = 0; k < 6; k++)
        expect_rel(lr.inv_freq[k], inv12[k] / (1 << k), 1e-15, "partial longrope long", k);
    /* on a head of 16 turning 12 channels, each rescaling's table is the one it makes for a head of 12
    ** (transformers computes them with dim = head_dim x partial_rotary_factor), to the bit */
    static const char *const on[] = {"{yarn: {scale: 4}}", "{ntk: {scale: 4}}", "{llama3: {scale: 4}}",
                                     "{pi: {scale: 4}}", "prope"};
    for (int m = 0; m < 5; m++) {
        char a[128], b[128];
        snprintf(a, sizeof a, "[{rope: {dims: 12}}, %s]", on[m]);
        snprintf(b, sizeof b, "[rope, %s]", on[m]);
        struct lx_rotary p12 = table(a, f), full = table(b, tfacts(12, 32, 1, 64));
        cr_expect_eq(p12.n_pairs, full.n_pairs, "%s", on[m]);
        for (int k = 0; k < 6; k++)
            cr_expect_eq(p12.inv_freq[k], full.inv_freq[k], "%s [%d]: %.17g vs %.17g", on[m], k, p12.inv_freq[k],
                         full.inv_freq[k]);
    }
    cr_expect_eq(tstack_try(&s, "{rope: {dims: 7}}", &f, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "dims must be an even number of channels up to the head's 16, got 7"), "%s", err.msg);
    tstack_free(&s);
}

/* ---- longrope ------------------------------------------------------------ */

Test(longrope, golden_short_and_long)
{
    /* docs/methods.md#longrope, d = 16, b = 1e4, L = 32, s = 4 (a context of 128): the short
    ** factors at length 32, the long ones from 33 on; a² = 1 + ln 4 / ln 32 = 1.4 at both.
    ** /usr/bin/python3 tests/ref/longrope_ref.py (transformers' and the paper's forms, which agree). */
    static const double shrt[] = {1, 0.31622776601683794, 0.10000000000000001, 0.030116930096841705,
                                  0.0090909090909090905, 0.0026352313834736496, 0.00076923076923076923,
                                  0.00021081851067789197};
    static const double lng[] = {1, 0.25298221281347033, 0.066666666666666666, 0.015811388300841896,
                                 0.0040000000000000001, 0.0010540925533894599, 0.00028571428571428574,
                                 7.9056941504209485e-05};
    const char *yaml = "[rope, {longrope: {scale: 4, original: 32, long_factor: [1, 1.25, 1.5, 2, 2.5, 3, 3.5, 4], "
                       "short_factor: [1, 1, 1, 1.05, 1.1, 1.2, 1.3, 1.5]}}]";
    for (int n = 32; n <= 33; n++) {
        struct lx_rotary r = table(yaml, tfacts(16, 32, 1, n));
        for (int k = 0; k < 8; k++)
            expect_rel(r.inv_freq[k], n > 32 ? lng[k] : shrt[k], 1e-15, n > 32 ? "longrope long" : "longrope short", k);
        expect_rel(logit_scale(yaml, tfacts(16, 32, 1, n)), 1.3999999999999999, 1e-15, "longrope a^2", n);
    }
    /* an attention factor given is used as it is; empty lists leave RoPE's table; s <= 1 gives a = 1 */
    expect_rel(logit_scale("[rope, {longrope: {scale: 4, original: 32, attention_factor: 1.5}}]", tfacts(16, 32, 1, 64)),
               2.25, 1e-15, "longrope a given", 0);
    struct lx_rotary rope = table("rope", tfacts(16, 32, 1, 64)), e = table("[rope, longrope]", tfacts(16, 32, 1, 64));
    for (int k = 0; k < 8; k++)
        cr_expect_eq(e.inv_freq[k], rope.inv_freq[k], "empty lists keep [%d]", k);
    cr_expect_eq(logit_scale("[rope, longrope]", tfacts(16, 32, 1, 32)), 1.0, "auto s = 1 at L: a = 1");
}

Test(longrope, errors)
{
    struct lx_facts f = tfacts(16, 32, 1, 64);
    struct tstack s;
    struct lx_error err = {{0}};
    cr_expect_eq(tstack_try(&s, "[rope, {longrope: {long_factor: [1, 2, 3]}}]", &f, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "long_factor has 3 factors; a head of 16 has 8 rotary pairs"), "%s", err.msg);
    cr_expect_eq(tstack_try(&s, "[rope, {longrope: {short_factor: [1, 1, 1, 0, 1, 1, 1, 1]}}]", &f, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "'short_factor' = 0 is out of bounds (0,"), "%s", err.msg);
    cr_expect_eq(tstack_try(&s, "[rope, {longrope: {short_factor: 2}}]", &f, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "'short_factor' must be a list of numbers"), "%s", err.msg);
    cr_expect_eq(tstack_try(&s, "[nope, longrope]", &f, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "longrope"), "%s", err.msg);
}

/* ---- llama3 ------------------------------------------------------------ */

Test(llama3, golden_small)
{
    /* docs/methods.md#llama3, d = 64, b = 1e4, s = 4, L = 64, low_freq_factor 1, high_freq_factor 4:
    ** wavelengths below 16 keep θ_k (k <= 3), above 64 get θ_k/4 (k >= 9), the ramp between.
    ** /usr/bin/python3 tests/ref/llama3_ref.py (transformers' and Meta's forms, which agree). */
    static const double ramp[] = {0.25464790894703254, 0.14319904257422564, 0.080526739367179273,
                                  0.045283513328997438, 0.025464790894703257};
    struct lx_facts f = tfacts(64, 64, 1, 64);
    struct lx_rotary rope = table("rope", f), r = table("[rope, {llama3: {scale: 4}}]", f);
    for (int k = 0; k <= 3; k++)
        cr_expect_eq(r.inv_freq[k], rope.inv_freq[k], "llama3 keeps [%d]", k);
    for (int k = 4; k <= 8; k++)
        expect_rel(r.inv_freq[k], ramp[k - 4], 1e-15, "llama3 ramp", k);
    for (int k = 9; k < 32; k++)
        expect_rel(r.inv_freq[k], rope.inv_freq[k] / 4, 1e-15, "llama3 theta/4", k);
    expect_rel(r.inv_freq[31], 3.3338035804083099e-05, 1e-15, "llama3", 31);
    cr_expect_eq(logit_scale("[rope, {llama3: {scale: 4}}]", f), 1.0, "llama3 has no temperature");
    /* `original` sets L: L = 64 at length 256 is the same table, with the auto scale 256/64. */
    struct lx_rotary o = table("[rope, {llama3: {original: 64}}]", tfacts(64, 1024, 1, 256));
    expect_same(&o, &r, "llama3 original 64, length 256");
}

Test(llama3, golden_llama31)
{
    /* Llama 3.1's own rope_scaling: d = 128, b = 5e5, s = 8, L = 8192, low 1, high 4:
    ** k <= 28 keep, the ramp is k = 29..34, k >= 35 get θ_k/8 (tests/ref/llama3_ref.py). */
    static const double ramp[] = {0.0021665707635033591, 0.0013718935677611381, 0.00085675141291963208,
                                  0.00052484616099295468, 0.00031269375038406517, 0.00017850781276799641};
    struct lx_facts f = tfacts(128, 8192, 1, 8192);
    const char *yaml = "[{rope: {base: 500000}}, {llama3: {scale: 8}}]";
    struct lx_rotary rope = table("{rope: {base: 500000}}", f), r = table(yaml, f);
    for (int k = 0; k <= 28; k++)
        cr_expect_eq(r.inv_freq[k], rope.inv_freq[k], "llama3.1 keeps [%d]", k);
    for (int k = 29; k <= 34; k++)
        expect_rel(r.inv_freq[k], ramp[k - 29], 1e-15, "llama3.1 ramp", k);
    for (int k = 35; k < 64; k++)
        expect_rel(r.inv_freq[k], rope.inv_freq[k] / 8, 1e-15, "llama3.1 theta/8", k);
}

Test(llama3, bands_meet_without_a_jump)
{
    /* As L grows past pair k's wavelength λ (= L/low_freq_factor) up to 4λ (= L/high_freq_factor),
    ** θ'_k climbs from θ_k/s to θ_k: it never leaves [θ_k/s, θ_k], never falls, and moves by at
    ** most dθ'/dL = θ_k(1 − 1/s)/((high − low)·λ) per unit of L, so the bands meet without a jump. */
    int k = 5;
    double theta = pow(10000, -2.0 * k / 64), wave = 2 * acos(-1.0) / theta, prev = theta / 4;
    for (long L = (long)(wave / 2); L <= (long)(wave * 5); L++) {
        char yaml[96];
        snprintf(yaml, sizeof yaml, "[rope, {llama3: {scale: 4, original: %ld}}]", L);
        double x = table(yaml, tfacts(64, L, 1, L)).inv_freq[k];
        cr_expect(x <= theta && x >= theta / 4 * (1 - 1e-15), "L %ld: %.17g outside [θ/4, θ]", L, x);
        cr_expect(x >= prev * (1 - 1e-15), "L %ld: θ' fell from %.17g to %.17g", L, prev, x);
        cr_expect(x - prev <= theta * 0.75 / (3 * wave) * 1.0001, "L %ld: a jump of %g", L, x - prev);
        if (L < wave)
            expect_rel(x, theta / 4, 1e-15, "llama3 below λ·low", (int)L);
        prev = x;
    }
    cr_expect_eq(prev, theta, "L = 5λ is past λ·high_freq_factor: the pair keeps θ");
}

Test(llama3, auto_scale_and_errors)
{
    /* At or below L the auto scale is 1: RoPE's frequencies, to the last bit or 1e-15. */
    struct lx_rotary rope = table("rope", tfacts(64, 64, 1, 64));
    for (long n = 16; n <= 64; n *= 2) {
        struct lx_rotary r = table("[rope, llama3]", tfacts(64, 64, 1, n));
        for (int k = 0; k < 32; k++)
            expect_rel(r.inv_freq[k], rope.inv_freq[k], 1e-15, "llama3 auto at or below L", k);
    }
    struct lx_rotary a = table("[rope, llama3]", tfacts(64, 64, 1, 256));
    struct lx_rotary r = table("[rope, {llama3: {scale: 4}}]", tfacts(64, 64, 1, 256));
    expect_same(&a, &r, "llama3 auto 256/64");
    struct lx_facts f = tfacts(64, 64, 1, 256);
    expect_fails("[rope, {llama3: {low_freq_factor: 4, high_freq_factor: 4}}]", f,
                 "high_freq_factor > low_freq_factor", "got 4, 4");
    expect_fails("llama3", f, "llama3", "rope");
    expect_fails("[rope, pi, llama3]", f, "llama3", "pi");
    expect_train_fails("[rope, {llama3: {train: true}}]", f,
                       "llama3: trained in (train: true) it needs an explicit scale");
}

/* ---- prope ------------------------------------------------------------- */

Test(prope, fraction_golden)
{
    /* docs/methods.md#prope, d = 16, b = 1e4, p = 0.75:
    ** 1, 0.3162, 0.1, 0.03162, 0.01, 0.003162, 0, 0 (4 digits). */
    static const double g[] = {1, 0.3162, 0.1, 0.03162, 0.01, 0.003162, 0, 0};
    struct lx_facts f = tfacts(16, 64, 1, 64);
    struct lx_rotary rope = table("rope", f), r = table("[rope, prope]", f);
    for (int k = 0; k < 8; k++) {
        cr_expect(fabs(r.inv_freq[k] - g[k]) <= 2e-4 * g[k], "prope [%d]: %.6g", k, r.inv_freq[k]);
        cr_expect_eq(r.inv_freq[k], k < 6 ? rope.inv_freq[k] : 0.0, "prope keeps rope's [%d]", k);
    }
    /* python3 -c "print(int(0.25*128/2), 1e4**(-30/128))": 16 pairs kept, θ_15 = 0.11547819846894582. */
    r = table("[rope, {prope: {p: 0.25}}]", tfacts(128, 64, 1, 64));
    expect_rel(r.inv_freq[15], 0.11547819846894582, 1e-12, "prope p=0.25", 15);
    for (int k = 16; k < 64; k++)
        cr_expect_eq(r.inv_freq[k], 0.0, "prope p=0.25 [%d]", k);
    /* python3 -c "print(int(0.3*64//2))": floor(9.6) = 9 pairs kept. */
    r = table("[rope, {prope: {p: 0.3}}]", tfacts(64, 64, 1, 64));
    cr_expect_neq(r.inv_freq[8], 0.0);
    cr_expect_eq(r.inv_freq[9], 0.0);
}

Test(prope, ends_are_rope_and_nope)
{
    struct lx_facts f = tfacts(64, 64, 1, 64);
    struct lx_rotary rope = table("rope", f), r = table("[rope, {prope: {p: 1}}]", f);
    expect_same(&r, &rope, "prope p = 1");
    r = table("[rope, {prope: {p: 0}}]", f);
    cr_expect_eq(r.n_pairs, 32);
    for (int k = 0; k < 32; k++)
        cr_expect_eq(r.inv_freq[k], 0.0, "prope p = 0 [%d]", k);
}

Test(prope, modded_golden)
{
    /* docs/methods.md#prope modded-nanogpt, d = 16:
    ** 1, 0.099213, 0.0098431, 0.00097656, then 4 zeros (5 digits). */
    static const double g[] = {1, 0.099213, 0.0098431, 0.00097656, 0, 0, 0, 0};
    struct lx_rotary r = table("[rope, {prope: {mode: modded}}]", tfacts(16, 64, 1, 64));
    for (int k = 0; k < 8; k++)
        cr_expect(fabs(r.inv_freq[k] - g[k]) <= 1e-5 * g[k], "modded [%d]: %.8g", k, r.inv_freq[k]);
    /* d = 128: 32 nonzero, ω_1 = 0.799638, ω_31 = 1/1024, independent of rope's base.
    ** python3 -c "print((1/1024)**(1/31))": 0.799638231116584 */
    r = table("[{rope: {base: 500000}}, {prope: {mode: modded}}]", tfacts(128, 64, 1, 64));
    expect_rel(r.inv_freq[1], 0.799638, 1e-6, "modded d=128", 1);
    expect_rel(r.inv_freq[1], 0.799638231116584, 1e-12, "modded d=128", 1);
    expect_rel(r.inv_freq[31], 1.0 / 1024, 1e-12, "modded d=128", 31);
    for (int k = 32; k < 64; k++)
        cr_expect_eq(r.inv_freq[k], 0.0, "modded d=128 [%d]", k);
    /* python3 -c "print([(1/4096)**(k/15) for k in (1,5,15)])": d = 64, effective_base 4096. */
    r = table("[rope, {prope: {mode: modded, effective_base: 4096}}]", tfacts(64, 64, 1, 64));
    expect_rel(r.inv_freq[1], 0.5743491774985175, 1e-12, "modded eb=4096", 1);
    expect_rel(r.inv_freq[5], 0.0625, 1e-12, "modded eb=4096", 5);
    expect_rel(r.inv_freq[15], 0.000244140625, 1e-12, "modded eb=4096", 15);
    cr_expect_eq(r.inv_freq[16], 0.0);
}

Test(prope, training_only)
{
    /* The training part of [rope, prope] already has the truncated table. */
    struct lx_spec spec;
    struct lx_error err = {{0}};
    cr_assert_eq(train_compile("[rope, prope]", tfacts(16, 64, 1, 64), &spec, &err), LX_OK, "%s", err.msg);
    cr_expect_str_eq(spec.frequencies, "prope");
    cr_expect_eq(spec.rotary.inv_freq[6], 0.0);
    cr_expect_neq(spec.rotary.inv_freq[5], 0.0);
    expect_fails("[rope, {prope: {train: false}}]", tfacts(16, 64, 1, 64), "'prope' is always part of training",
                 "train: false");
    expect_fails("[rope, {prope: {mode: modded}}]", tfacts(18, 64, 1, 64), "prope: mode modded", "18");
}

/* modded-nanogpt's form needs the rotary width R (rope's dims, else d) divisible by 4: R/4 frequencies, then R/4
** zeros. On a partial rope of 6 channels it made 1, 0, 0 (one frequency, two zeros); now refused, with a hint,
** as a head of 18 is. On 8 of 16 channels: 1, 1/1024, 0, 0. */
Test(prope, modded_needs_a_rotary_width_divisible_by_4)
{
    expect_fails("[{rope: {dims: 6}}, {prope: {mode: modded}}]", tfacts(16, 64, 1, 64), "prope: mode modded",
                 "rope turns 6");
    expect_fails("[{rope: {dims: 6}}, {prope: {mode: modded}}]", tfacts(16, 64, 1, 64), "prope: mode modded",
                 "hint: ");
    expect_fails("[rope, {prope: {mode: modded}}]", tfacts(18, 64, 1, 64), "prope: mode modded", "hint: ");
    struct lx_rotary r = table("[{rope: {dims: 8}}, {prope: {mode: modded}}]", tfacts(16, 64, 1, 64));
    cr_expect_eq(r.n_pairs, 4);
    expect_rel(r.inv_freq[0], 1.0, 1e-15, "modded dims=8", 0);
    expect_rel(r.inv_freq[1], 1.0 / 1024, 1e-15, "modded dims=8", 1);
    cr_expect(r.inv_freq[2] == 0.0 && r.inv_freq[3] == 0.0, "%g %g", r.inv_freq[2], r.inv_freq[3]);
}

/* ---- giraffe ----------------------------------------------------------- */

/* docs/methods.md#giraffe by hand, d = 64, b = 1e4, T = 64: θ_k = 1e4^(−k/32); the cutoff 2π/64 = 0.0982
** lies between θ_8 = 0.1 and θ_9 = 0.0750, and 2π/512 = 0.01227 between θ_15 = 0.01334 and θ_16 = 0.01:
** pairs 0-8 kept, 9-15 at ρ = 2π/1024, 16-31 zero. */
Test(giraffe, truncated_basis_by_hand)
{
    struct lx_facts f = tfacts(64, 64, 1, 64);
    struct lx_rotary rope = table("rope", f), r = table("[rope, {giraffe: {truncate: 64}}]", f);
    for (int k = 0; k < 32; k++) {
        double want = k <= 8 ? rope.inv_freq[k] : k <= 15 ? 2 * acos(-1.0) / 1024 : 0.0;
        cr_expect_eq(r.inv_freq[k], want, "[%d]: %.17g, want %.17g", k, r.inv_freq[k], want);
    }
    /* power 1 on d = 8: θ_k·(1 − k/4) = 1, 0.1·3/4, 0.01·1/2, 0.001·1/4 */
    r = table("[rope, {giraffe: {power: 1}}]", tfacts(8, 64, 1, 64));
    static const double pw[] = {1, 0.075, 0.005, 0.00025};
    for (int k = 0; k < 4; k++)
        expect_rel(r.inv_freq[k], pw[k], 1e-14, "giraffe power 1", k);
}

/* Rows of tests/ref/giraffe_ref.csv (a transcription of the code's table in doubles): d, base, scale, power,
** truncate, pair, θ. Each case's table, compiled from its YAML, equals the transcription to 1e-15. */
Test(giraffe, tables_match_the_code)
{
    char line[256], yaml[160];
    FILE *fp = ref_csv("giraffe_ref.csv");
    int rows = 0, cases = 0, d = 0, k = 0;
    struct lx_rotary r = {0};
    double base, scale, power, want;
    long truncate;
    while (fgets(line, sizeof line, fp)) {
        cr_assert_eq(sscanf(line, "%d,%lf,%lf,%lf,%ld,%d,%lf", &d, &base, &scale, &power, &truncate, &k, &want), 7,
                     "%s", line);
        if (k == 0) {
            snprintf(yaml, sizeof yaml, "[{rope: {base: %.17g}}, {giraffe: {scale: %.17g, power: %.17g, "
                     "truncate: %ld}}]", base, scale, power, truncate);
            r = table(yaml, tfacts(d, 64, 1, 64));
            cr_assert_eq(r.n_pairs, d / 2, "%s", yaml);
            cases++;
        }
        cr_expect(fabs(r.inv_freq[k] - want) <= 1e-15 * fabs(want), "%s [%d]: %.17g, want %.17g", yaml, k,
                  r.inv_freq[k], want);
        rows++;
    }
    fclose(fp);
    cr_expect_eq(cases, 8);
    cr_expect_eq(rows, 280);
}

Test(giraffe, defaults_are_rope_and_it_trains_in)
{
    struct lx_facts f = tfacts(64, 64, 1, 256);
    struct lx_rotary rope = table("rope", f), r = table("[rope, giraffe]", f);
    expect_same(&r, &rope, "giraffe with its defaults");
    struct lx_spec spec;
    struct lx_error err = {{0}};
    cr_assert_eq(train_compile("[rope, {giraffe: {truncate: 64, train: true}}]", f, &spec, &err), LX_OK, "%s",
                 err.msg);
    cr_expect_str_eq(spec.frequencies, "giraffe");
    cr_expect_eq(spec.rotary.inv_freq[20], 0.0);
    expect_fails("[rope, giraffe, yarn]", f, "'giraffe' and 'yarn' both set the rotary frequencies", "hint");
    expect_fails("[alibi, giraffe]", f, "'giraffe'", "rope");
    expect_fails("[rope, {giraffe: {scale: 0.5}}]", f, "scale", "0.5");
}

/* ---- errors shared by the four ------------------------------------------ */

Test(pi, needs_rope_first)
{
    static const char *stacks[][2] = {
        {"pi", "'pi'"}, {"ntk", "'ntk'"}, {"yarn", "'yarn'"}, {"prope", "'prope'"},
        {"[pi, rope]", "'pi'"}, {"[nope, yarn]", "'yarn'"},
    };
    for (size_t i = 0; i < sizeof stacks / sizeof *stacks; i++)
        expect_fails(stacks[i][0], tfacts(64, 64, 1, 256), stacks[i][1], "rope");
}

Test(pi, one_frequency_method_per_stack)
{
    struct lx_facts f = tfacts(64, 64, 1, 256);
    expect_fails("[rope, pi, ntk]", f, "methods 'pi' and 'ntk' both set the rotary frequencies", "hint");
    expect_fails("[rope, {yarn: {scale: 2}}, prope]", f, "'yarn' and 'prope'", "rotary frequencies");
    expect_fails("[rope, ntk, {pi: {scale: 2}}]", f, "'ntk' and 'pi'", "rotary frequencies");
}

/* ---- resonance ------------------------------------------------------------- */

Test(resonance, golden)
{
    /* docs/methods.md#resonance, d = 8, base 10000: λ_k = 2π·10000^(k/4) = 6.283, 62.83, 628.3, 6283.2
    ** round to 6, 63, 628, 6283 */
    static const double waves[] = {6, 63, 628, 6283};
    struct lx_rotary r = table("[rope, resonance]", tfacts(8, 64, 1, 64));
    for (int k = 0; k < 4; k++)
        cr_expect_eq(r.inv_freq[k], 2 * acos(-1.0) / waves[k], "[%d]: %.17g", k, r.inv_freq[k]);
    /* after p-RoPE: its NoPE pairs (θ = 0) stay 0 */
    r = table("[rope, {prope: {p: 0.5}}, resonance]", tfacts(8, 64, 1, 64));
    cr_expect(r.inv_freq[0] == 2 * acos(-1.0) / 6 && r.inv_freq[3] == 0.0, "%g %g", r.inv_freq[0], r.inv_freq[3]);
}

/* Against tests/ref/resonance_ref.py's transcription of the authors' tables (torch float32): plain
** RoPE at three shapes, Resonance NTK and Resonance YaRN (their betas 2 and 1, and YaRN's 32 and 1).
** The rounded wavelengths are the same integers; θ_k within float32's rounding. */
Test(resonance, matches_the_authors_tables)
{
    char kase[16];
    FILE *fp = ref_csv("resonance_ref.csv");
    int d, k, rows = 0;
    long L, wave;
    double base, scale, bf, bs, want;
    while (fscanf(fp, "%15[^,],%d,%lf,%lf,%ld,%lf,%lf,%d,%ld,%lf\n", kase, &d, &base, &scale, &L, &bf, &bs, &k, &wave,
                  &want) == 10) {
        char yaml[256];
        if (strcmp(kase, "plain") == 0)
            snprintf(yaml, sizeof yaml, "[{rope: {base: %.17g}}, resonance]", base);
        else if (strcmp(kase, "ntk") == 0)
            snprintf(yaml, sizeof yaml, "[{rope: {base: %.17g}}, {ntk: {scale: %g}}, resonance]", base, scale);
        else
            snprintf(yaml, sizeof yaml, "[{rope: {base: %.17g}}, {yarn: {scale: %g, original: %ld, beta_fast: %g, "
                     "beta_slow: %g}}, resonance]", base, scale, L, bf, bs);
        struct lx_rotary r = table(yaml, tfacts(d, L, 1, L));
        double got = r.inv_freq[k];
        cr_expect_eq(nearbyint(2 * acos(-1.0) / got), (double)wave, "%s [%d]: wavelength %.17g, want %ld", yaml, k,
                     2 * acos(-1.0) / got, wave);
        expect_rel(got, want, 1.2e-7, yaml, k);
        rows++;
    }
    fclose(fp);
    cr_expect_eq(rows, 232);
}

Test(resonance, after_the_rescaling_and_once)
{
    struct lx_facts f = tfacts(64, 64, 1, 256);
    expect_fails("[rope, resonance, {yarn: {scale: 4}}]", f, "'yarn' rescales the rotary frequencies after "
                 "'resonance'", "put yarn before resonance");
    expect_fails("[rope, resonance, resonance]", f, "'resonance'", "appears twice");
    expect_fails("resonance", f, "'resonance'", "rope");
    /* trained in: the table the model learns is the rounded one */
    struct lx_spec spec;
    struct lx_error err = {{0}};
    cr_assert_eq(train_compile("[rope, {resonance: {train: true}}]", tfacts(8, 64, 1, 64), &spec, &err), LX_OK, "%s",
                 err.msg);
    cr_expect_eq(spec.rotary.inv_freq[1], 2 * acos(-1.0) / 63);
}
