/*
** tests/test_gqa.c - grouped-query attention and the architecture fields of
** pretrained models (kv_heads, qkv_bias, tie_head; harness/engine/model/model.c).
**
** Suite `gqa`: a GQA model equals the multi-head model whose wk and wv rows
** (and biases) are the GQA ones repeated for each query head of a group, on
** the head path and the tiled path; the memory plan counts the smaller qkv
** rows; bad kv_heads are refused with file:line:col; the defaults leave the
** stored arch (and so every model key) as it was; a sweep trains, saves,
** loads and evaluates a model with heads 8 on kv_heads 2 through `lenx run`;
** a checkpoint written from docs/checkpoints.md alone (the fuzz seed) loads,
** and one with a kv_heads that does not divide heads is refused.
** The gradients are checked in tests/test_model.c (finite differences, and
** PyTorch's autograd in model_ref/causal_gqa), the tiled kernel in
** tests/test_tiled.c.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/attention.h"
#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/data/corpus.h"
#include "harness/engine/model/model.h"
#include "harness/engine/formats/safetensors.h"
#include "harness/sweep/plan.h"
#include "tests/shell.h"
#include "tests/stack.h"

enum { GB = 2, GT = 24, GV = 64 };

static struct lx_arch arch(int mode, long heads, long kv, int bias, int tie)
{
    struct lx_arch a;
    struct lx_error err = {""};
    lx_params_defaults(&lx_arch_schema, &a);
    a.mode = mode, a.layers = 2, a.d_model = 32, a.heads = heads, a.kv_heads = kv, a.d_head = 8, a.d_mlp = 48;
    a.vocab = GV, a.init_std = 0.3, a.qkv_bias = bias, a.tie_head = tie;
    lx_params_finish(&lx_arch_schema, &a);
    cr_assert_eq(lx_arch_resolve(&a, &err), LX_OK, "%s", err.msg);
    return a;
}

/* The tensor of m named `name`, or NULL. */
static const struct lx_tensor_info *find(const struct lx_tensor_info *t, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return &t[i];
    return NULL;
}

/* mha := gqa with every key/value head repeated for the query heads it
** serves: row h·D + d of wk, wv (and their biases) is gqa's row (h / G)·D + d. */
static void expand(struct lx_model *mha, const struct lx_model *gqa)
{
    int nm = lx_arch_tensors(&mha->arch, NULL), ng = lx_arch_tensors(&gqa->arch, NULL);
    struct lx_tensor_info *tm = calloc((size_t)nm, sizeof *tm), *tg = calloc((size_t)ng, sizeof *tg);
    lx_arch_tensors(&mha->arch, tm);
    lx_arch_tensors(&gqa->arch, tg);
    cr_assert_eq(nm, ng, "the same tensors, other shapes");
    long D = gqa->arch.d_head, G = gqa->arch.heads / lx_arch_kv(&gqa->arch);
    for (int i = 0; i < nm; i++) {
        const struct lx_tensor_info *src = find(tg, ng, tm[i].name);
        cr_assert_not_null(src, "%s", tm[i].name);
        long cols = tm[i].ndim == 2 ? tm[i].shape[1] : 1;
        int kv = strstr(tm[i].name, "attn.wk.") || strstr(tm[i].name, "attn.wv.");
        for (long r = 0; r < tm[i].shape[0]; r++) {
            long from = kv ? (r / D / G) * D + r % D : r;
            memcpy(mha->w + tm[i].offset + r * cols, gqa->w + src->offset + from * cols, sizeof(float) * (size_t)cols);
        }
    }
    free(tm);
    free(tg);
}

/* Logits of one evaluation pass; head = 1 runs the head path (with row statistics). */
static float *logits_of(const struct lx_model *m, const struct lx_spec *spec, const int *tok, int head)
{
    struct lx_acts a;
    struct lx_error err = {""};
    double stats[2 * GB * 4 * LX_ATTN_NSTATS];
    cr_assert_eq(lx_acts_alloc(&a, &m->arch, GB, GT, 0, &err), LX_OK, "%s", err.msg);
    a.stats = head ? stats : NULL;
    a.head_path = head;
    memset(stats, 0, sizeof stats);
    lx_model_forward(m, spec, tok, NULL, &a);
    cr_assert_eq(a.att != NULL, head, "the pass took the path it was meant to");
    float *out = malloc(sizeof(float) * GB * GT * GV);
    memcpy(out, a.logits, sizeof(float) * GB * GT * GV);
    lx_acts_release(&a);
    return out;
}

/* Normwise relative: max |x − ref| / max |ref|. */
static double rel_diff(const float *x, const float *ref, long n)
{
    double d = 0.0, m = 0.0;
    for (long i = 0; i < n; i++) {
        d = fmax(d, fabs((double)x[i] - ref[i]));
        m = fmax(m, fabs((double)ref[i]));
    }
    return d / (m > 0.0 ? m : 1.0);
}

/* In portable numerics: the grouped and the expanded model multiply q, k, v
** by matrices of other widths, which OpenBLAS may block (and round) apart on
** some kernel set; the portable product sums each element in one fixed
** order, whatever the width, so 2e-6 bounds what is left (the attention's
** own paths) on every machine. */
Test(gqa, equals_multi_head_with_repeated_kv_rows, .timeout = 60)
{
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    static const char *const stacks[] = {"rope", "[rope, {cosscale: {s: 4}}]", "[rope, {rerope: {window: 5}}]",
                                         "[alibi, {window: {size: 7}}]"};
    int tok[GB * GT];
    for (int i = 0; i < GB * GT; i++)
        tok[i] = (i * 37 + 11) % GV;
    double worst = 0.0;
    for (size_t s = 0; s < sizeof stacks / sizeof *stacks; s++)
        for (int mode = 0; mode < 2; mode++)
            for (long kv = 1; kv <= 2; kv++) {
                struct lx_arch ag = arch(mode, 4, kv, 1, 1), am = arch(mode, 4, 0, 1, 1);
                struct lx_model g, m;
                lx_model_init(&g, &ag, 21);
                for (long l = 0; l < ag.layers; l++)     /* biases away from 0 */
                    for (long j = 0; j < lx_arch_qkv(&ag); j++)
                        g.v.layer[l].bqkv[j] = 0.05f * (float)((j * 7 + l) % 11) - 0.25f;
                lx_model_init(&m, &am, 22);
                expand(&m, &g);
                struct lx_facts f = tfacts(8, GT, 4, GT);
                struct tstack st;
                tstack_make(&st, stacks[s], &f);
                for (int head = 0; head < 2; head++) {
                    float *lg = logits_of(&g, &st.spec, tok, head), *lm = logits_of(&m, &st.spec, tok, head);
                    double d = rel_diff(lg, lm, GB * GT * GV);
                    worst = fmax(worst, d);
                    cr_expect_leq(d, 2e-6, "%s mode %d kv %ld %s path: GQA vs expanded MHA logits differ by %g",
                                  stacks[s], mode, kv, head ? "head" : "tiled", d);
                    free(lg);
                    free(lm);
                }
                float *lh = logits_of(&g, &st.spec, tok, 1), *lt = logits_of(&g, &st.spec, tok, 0);
                double d = rel_diff(lh, lt, GB * GT * GV);
                cr_expect_leq(d, 1e-5, "%s mode %d kv %ld: GQA tiled vs head path %g", stacks[s], mode, kv, d);
                free(lh);
                free(lt);
                tstack_free(&st);
                lx_model_release(&g);
                lx_model_release(&m);
            }
    cr_log_info("GQA vs expanded MHA: logits differ by %.3g of the largest", worst);
}

Test(gqa, memory_plan_counts_the_smaller_qkv_rows)
{
    /* heads 4 of d_head 8 on 1 key/value head: each qkv row is (4 + 2)·8
    ** floats instead of (4 + 8)·8, 48 fewer; training keeps qkv for each of
    ** the 2 layers and one dqkv */
    struct lx_arch g = arch(LX_MODEL_CAUSAL, 4, 1, 0, 0), m = arch(LX_MODEL_CAUSAL, 4, 0, 0, 0);
    double N = 3.0 * 40;
    cr_expect_eq(lx_acts_bytes(&m, 3, 40, 0) - lx_acts_bytes(&g, 3, 40, 0), N * 48 * 4);
    cr_expect_eq(lx_acts_bytes(&m, 3, 40, LX_ACTS_TRAIN_MATERIALISED) - lx_acts_bytes(&g, 3, 40, LX_ACTS_TRAIN_MATERIALISED),
                 (2 + 1) * N * 48 * 4);
    /* the tiled training path adds each query head's dk | dv of one window
    ** (4 × 40 × 2·8 floats) to sum them per group */
    cr_expect_eq(lx_acts_bytes(&m, 3, 40, LX_ACTS_TRAIN_TILED) - lx_acts_bytes(&g, 3, 40, LX_ACTS_TRAIN_TILED),
                 (2 + 1) * N * 48 * 4 - 4 * 40 * 2 * 8 * 4);
    /* weights: wk and wv lose 2·(4 − 1)·8 rows of 32 per layer; a tied head drops V·C; biases add (4 + 2)·8 */
    cr_expect_eq(lx_arch_n_params(&m) - lx_arch_n_params(&g), (size_t)(2 * 2 * 3 * 8 * 32));
    struct lx_arch gt = arch(LX_MODEL_CAUSAL, 4, 1, 1, 1);
    cr_expect_eq(lx_arch_n_params(&g) - lx_arch_n_params(&gt), (size_t)(GV * 32 - 2 * 6 * 8));
}

/* ---- the sweep file: errors and keys -------------------------------------- */

#define SWEEP(arch) "name: t\nmodels:\n  m: {arch: " arch ", train: {length: 32}}\n" \
                    "methods: [rope]\ntasks: [ppl]\nlengths: [32]\n"

static void expect_refused(const char *text, const char *where, const char *what)
{
    struct lx_grid g;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_grid_load_text(&g, text, "bad.yaml", &err), LX_EINVAL, "expected a rejection for:\n%s", text);
    cr_expect(strncmp(err.msg, where, strlen(where)) == 0, "location: expected '%s', got: %s", where, err.msg);
    cr_expect(strstr(err.msg, what) != NULL, "message: expected '%s' in: %s", what, err.msg);
    cr_expect(strstr(err.msg, "hint: ") != NULL, "a hint in: %s", err.msg);
    lx_grid_release(&g);
}

Test(gqa, bad_kv_heads_are_refused_where_they_are_written)
{
    /* columns counted by hand: the value after `kv_heads: ` */
    expect_refused(SWEEP("{heads: 4, kv_heads: 3}"), "bad.yaml:3:34",
                   "model 'm' arch: kv_heads (3) does not divide heads (4)");
    expect_refused(SWEEP("{heads: 4, kv_heads: 8}"), "bad.yaml:3:34",
                   "model 'm' arch: kv_heads (8) is more than heads (4)");
    expect_refused(SWEEP("{kv_heads: 0}"), "bad.yaml:3:24", "model 'm' arch: kv_heads must be at least 1 (got 0)");
    /* -2 said the bounds were [0, 256], 0 meaning heads, and 0 was then refused: one message for both */
    expect_refused(SWEEP("{kv_heads: -2}"), "bad.yaml:3:24", "model 'm' arch: kv_heads must be at least 1 (got -2)");
}

/* The arch JSON of model m in a sweep (what the model key hashes). */
static void arch_json(char *out, size_t n, const char *arch_text)
{
    char text[512];
    struct lx_grid g;
    struct lx_error err = {{0}};
    snprintf(text, sizeof text, SWEEP("%s"), arch_text);
    cr_assert_eq(lx_grid_load_text(&g, text, "k.yaml", &err), LX_OK, "%s", err.msg);
    snprintf(out, n, "%s", g.models[0].arch_json);
    lx_grid_release(&g);
}

Test(gqa, defaults_leave_the_stored_arch_as_it_was)
{
    char a[512], b[512];
    arch_json(a, sizeof a, "{heads: 4}");
    /* the JSON of every model trained before these fields existed */
    cr_expect_str_eq(a, "{\"mode\":\"causal\",\"layers\":2,\"d_model\":128,\"heads\":4,\"d_head\":32,\"d_mlp\":512,"
                        "\"mlp\":\"gelu\",\"vocab\":260,\"norm_eps\":1e-05,\"init_std\":0.02}");
    arch_json(b, sizeof b, "{heads: 4, kv_heads: 4, qkv_bias: false, tie_head: false}");
    cr_expect_str_eq(a, b, "kv_heads = heads is multi-head attention, spelled one way");
    arch_json(b, sizeof b, "{heads: 4, kv_heads: 2, qkv_bias: true, tie_head: true}");
    cr_expect(strstr(b, "\"kv_heads\":2") && strstr(b, "\"qkv_bias\":true") && strstr(b, "\"tie_head\":true"),
              "%s", b);
}

/* ---- a GQA model through `lenx run` ------------------------------------------ */

static void setup(void)
{
    shell_setup("gqa");
    cr_assert_not_null(getenv("LENX_ROOT"), "LENX_ROOT must name the checkout (make test sets it)");
}

#define GQA_MODEL                                                                                          \
    "  g: {arch: {layers: 1, d_model: 32, heads: 8, kv_heads: 2, d_head: 4, d_mlp: 64, qkv_bias: true,"   \
    " tie_head: true},\n      train: {length: 32, batch: 4, steps: 20, warmup: 5}}\n"

Test(gqa, sweep_trains_saves_loads_and_evaluates, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[16384], ckpt[512];
    write_file("g.yaml", "name: g\nseed: 1\nmodels:\n" GQA_MODEL
               "methods: [rope]\ntasks: [{ppl: {windows: 2}}]\nlengths: [32, 64]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run g.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_expect(strstr(out, "2 run (2 ok, 0 failed), 0 already stored; 1 models trained (20 steps)") != NULL, "%s", out);
    sql_text(ckpt, sizeof ckpt, "r.db", "select key from models");
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s.safetensors", dir, ckpt);
    /* the file: wk and wv are (kv_heads·D, C), biases present, no lm_head */
    struct lx_st_file f = {0};
    struct lx_error err = {""};
    cr_assert_eq(lx_st_open(&f, path, &err), LX_OK, "%s", err.msg);
    float wk[8 * 32], bk[8];
    const long swk[2] = {8, 32}, sbk[1] = {8}, swq[2] = {32, 32};
    static float wq[32 * 32];
    cr_expect_eq(lx_st_read(&f, "layers.0.attn.wk.weight", 2, swk, wk, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(lx_st_read(&f, "layers.0.attn.wv.weight", 2, swk, wk, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(lx_st_read(&f, "layers.0.attn.wq.weight", 2, swq, wq, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(lx_st_read(&f, "layers.0.attn.wk.bias", 1, sbk, bk, &err), LX_OK, "%s", err.msg);
    cr_expect_neq(lx_st_read(&f, "lm_head.weight", 2, swq, wq, &err), LX_OK, "a tied head has no lm_head.weight");
    lx_st_close(&f);
    cr_expect(!exists("models/none"), "(shell.h's helpers all in use)");
    /* loaded back: the same architecture */
    struct lx_model m;
    struct lx_ckpt_info info = {0};
    cr_assert_eq(lx_model_load(&m, path, &info, &err), LX_OK, "%s", err.msg);
    cr_expect(m.arch.heads == 8 && m.arch.kv_heads == 2 && m.arch.qkv_bias && m.arch.tie_head);
    cr_expect_eq(m.v.head, m.v.tok_emb, "the tied head reads the embedding");
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    /* brought as a checkpoint, it gives the trained model's numbers */
    cr_assert_eq(sh(out, sizeof out, "cp %s ckpt.safetensors", path), 0, "%s", out);
    write_file("c.yaml", "name: c\nmodels:\n  c: {checkpoint: ckpt.safetensors}\n"
               "methods: [rope]\ntasks: [{ppl: {windows: 2}}]\nlengths: [32, 64]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run c.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(sql_long("r.db", "select count(*) from runs a join metrics ma on ma.run_id = a.id join runs b"
                          " on b.sweep = 'g' and b.length = a.length join metrics mb on mb.run_id = b.id"
                          " and mb.name = ma.name where a.sweep = 'c' and ma.name = 'ppl' and ma.value = mb.value"), 2);
    double ppl = (double)sql_long("r.db", "select cast(m.value as int) from metrics m join runs r on r.id = m.run_id"
                                          " where r.sweep = 'g' and r.length = 64 and m.name = 'ppl'");
    cr_expect(ppl > 1 && ppl < 260, "a finite perplexity below the vocabulary: %g", ppl);
}

/* ---- checkpoints ----------------------------------------------------------- */

Test(gqa, checkpoint_written_from_the_docs_loads)
{
    /* tests/fuzz/make_seeds.py writes it from docs/checkpoints.md's tensor
    ** table alone: heads 4 on kv_heads 2 of d_head 2, biases, tied head */
    char path[4096];
    const char *root = getenv("LENX_ROOT");
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/safetensors/gqa.safetensors", root ? root : LX_SOURCE_DIR);
    struct lx_model m;
    struct lx_error err = {""};
    cr_assert_eq(lx_model_load(&m, path, NULL, &err), LX_OK, "%s", err.msg);
    cr_expect(m.arch.heads == 4 && m.arch.kv_heads == 2 && m.arch.qkv_bias && m.arch.tie_head);
    cr_expect_eq(lx_arch_qkv(&m.arch), (4 + 2 * 2) * 2);
    cr_expect_eq(m.v.head, m.v.tok_emb);
    /* the seed's values are ((i·7 + k·3) mod 11 − 5) / 8 for tensor i, entry k:
    ** wk.bias is tensor 6 (tok_emb, attn_norm, wq, wk, wv, wq.bias, wk.bias) */
    for (int k = 0; k < 4; k++)
        cr_expect_eq(m.v.layer[0].bqkv[8 + k], (float)(((6 * 7 + k * 3) % 11 - 5) / 8.0), "wk.bias[%d]", k);
    lx_model_release(&m);
}

Test(gqa, checkpoint_with_a_bad_kv_heads_is_refused, .init = setup, .fini = teardown)
{
    /* an arch no sweep could make (3 key/value heads for 4 query heads), saved anyway */
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 1, a.d_model = 8, a.heads = 4, a.kv_heads = 3, a.d_head = 2, a.d_mlp = 8;
    struct lx_model m;
    lx_model_init(&m, &a, 5);
    char path[128];
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    struct lx_ckpt_info info = {.stack = "[]", .train_len = 8};
    struct lx_error err = {""};
    cr_assert_eq(lx_model_save(&m, path, &info, &err), LX_OK, "%s", err.msg);
    lx_model_release(&m);
    cr_expect_eq(lx_model_load(&m, path, NULL, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "bad.safetensors: lenx_arch: kv_heads (3) does not divide heads (4)") != NULL, "%s",
              err.msg);
}
