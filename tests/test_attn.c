/*
** tests/test_attn.c - attention diagnostics: the row statistics of
** harness/core/diag.c on hand-computed rows, the Jensen-Shannon divergence, the
** engine's probe hook against the engine's own row statistics, and the attn
** task end to end on a random model over the held-out corpus.
*/
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/data/corpus.h"
#include "harness/core/diag.h"
#include "harness/engine/kernels/attention.h"
#include "harness/engine/model/model.h"
#include "harness/core/params.h"
#include "harness/sweep/registry.h"
#include "tasks/task.h"
#include "stack.h"

Test(attn, buckets)
{
    static const long t[] = {0, 1, 2, 3, 4, 7, 8, 1023, 1024};
    static const int k[] = {0, 1, 2, 2, 3, 3, 4, 10, 11};
    for (int i = 0; i < 9; i++) {
        cr_assert_eq(lx_diag_bucket(t[i]), k[i], "distance %ld", t[i]);
        cr_assert(lx_diag_bucket_start(k[i]) <= t[i] && t[i] < 2 * lx_diag_bucket_start(k[i]) + (k[i] == 0));
    }
}

/* Row i = 2 with keys 0, 1, 2 at probabilities 0.5, 0.25, 0.25 (distances 2, 1, 0). */
Test(attn, row_by_hand)
{
    const float p[3] = {0.5f, 0.25f, 0.25f};
    struct lx_ranges rg = {.n = 2, .lo = {1, 1}, .hi = {3, 4}};
    struct lx_diag d = {0};
    lx_diag_row(&d, p, 2, &rg, 0.0);
    cr_assert_float_eq(d.entropy, -(0.5 * log(0.5) + 0.5 * log(0.25)), 1e-7);
    cr_assert_float_eq(d.pmax, 0.5, 1e-7);
    cr_assert_float_eq(d.rows, 1.0, 0);
    cr_assert_float_eq(d.bucket[0], 0.25, 1e-7);    /* distance 0: key 2 */
    cr_assert_float_eq(d.bucket[1], 0.25, 1e-7);    /* distance 1: key 1 */
    cr_assert_float_eq(d.bucket[2], 0.5, 1e-7);     /* distance 2: key 0 */
    /* [1, 3): keys 1 and 0, mass 0.75, renormalised (1/3, 2/3) */
    cr_assert_float_eq(d.range_mass[0], 0.75, 1e-7);
    cr_assert_float_eq(d.range_entropy[0], -(log(1.0 / 3) / 3 + 2 * log(2.0 / 3) / 3), 1e-7);
    cr_assert_float_eq(d.range_rows[0], 1.0, 0);
    /* [1, 4) needs a distance-3 key: row 2 does not count */
    cr_assert_float_eq(d.range_rows[1], 0.0, 0);
    struct lx_diag e = {0};
    lx_diag_add(&e, &d);
    lx_diag_add(&e, &d);
    cr_assert_float_eq(e.entropy, 2 * d.entropy, 1e-12);
    cr_assert_float_eq(e.bucket[2], 1.0, 1e-7);
    cr_assert_float_eq(d.first, 0.5, 1e-7);         /* key 0, the attention sink's place */
    cr_assert_float_eq(d.zsink, 0.0, 0);
    /* with a zero sink at 0.2 the keys hold 0.4, 0.2, 0.2: it is one more outcome */
    const float q[3] = {0.4f, 0.2f, 0.2f};
    struct lx_diag z = {0};
    lx_diag_row(&z, q, 2, &rg, 0.2);
    cr_assert_float_eq(z.entropy, -(0.4 * log(0.4) + 3 * 0.2 * log(0.2)), 1e-7);
    cr_assert_float_eq(z.pmax, 0.4, 1e-7);
    cr_assert_float_eq(z.first, 0.4, 1e-7);
    cr_assert_float_eq(z.zsink, 0.2, 1e-12);
}

Test(attn, js_divergence)
{
    const double a[2] = {1, 0}, b[2] = {0.5, 0.5}, c[2] = {0, 3}, z[2] = {0, 0};
    /* m = (0.75, 0.25): 0.5·ln(1/0.75) + 0.5·(0.5·ln(0.5/0.75) + 0.5·ln(0.5/0.25)) */
    double want = 0.5 * log(1 / 0.75) + 0.5 * (0.5 * log(0.5 / 0.75) + 0.5 * log(2.0));
    cr_assert_float_eq(lx_js_divergence(a, b, 2), want, 1e-12);
    cr_assert_float_eq(lx_js_divergence(b, a, 2), want, 1e-12, "not symmetric");
    cr_assert_float_eq(lx_js_divergence(a, c, 2), log(2.0), 1e-12, "disjoint supports give ln 2");
    cr_assert_float_eq(lx_js_divergence(b, b, 2), 0.0, 1e-15);
    const double b2[2] = {7, 7};
    cr_assert_float_eq(lx_js_divergence(b, b2, 2), 0.0, 1e-15, "not normalised first");
    cr_assert(isnan(lx_js_divergence(a, z, 2)));
}

static void tiny_model(struct lx_model *m, int layers)
{
    struct lx_arch ar;
    lx_params_defaults(&lx_arch_schema, &ar);
    ar.layers = layers, ar.d_model = 32, ar.heads = 2, ar.d_head = 16, ar.d_mlp = 64, ar.init_std = 0.3;
    lx_params_finish(&lx_arch_schema, &ar);
    lx_model_init(m, &ar, 11);
}

struct probe_sink {
    struct lx_diag d[2][2];    /* layer, head */
    struct lx_ranges rg;
};

static void sink(void *ctx, int layer, int b, int h, const float *P, int T)
{
    struct probe_sink *s = ctx;
    cr_assert_eq(b, 0);
    for (long i = 0; i < T; i++)
        lx_diag_row(&s->d[layer][h], P + i * T, i, &s->rg, 0.0);
}

/* The probe sees the probabilities the engine's own row statistics sum. */
Test(attn, probe_matches_engine_stats)
{
    enum { T = 48 };
    struct lx_model m;
    tiny_model(&m, 2);
    struct lx_facts f = tfacts(16, T, 2, T);
    struct tstack st;
    tstack_make(&st, "[rope, {window: {size: 20}}]", &f);
    int tok[T];
    tok[0] = LX_TOK_BOS;
    for (int t = 1; t < T; t++)
        tok[t] = 'a' + (t * 7) % 26;
    struct lx_acts a;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_acts_alloc(&a, &m.arch, 1, T, 0, &err), LX_OK, "%s", err.msg);
    double stats[2 * 2 * LX_ATTN_NSTATS] = {0};
    struct probe_sink s = {.rg = {.n = 1, .lo = {0}, .hi = {T}}};
    a.stats = stats;
    lx_acts_set_probe(&a, sink, &s);
    lx_model_forward(&m, &st.spec, tok, NULL, &a);
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < 2; h++) {
            const double *e = stats + (l * 2 + h) * LX_ATTN_NSTATS;
            const struct lx_diag *d = &s.d[l][h];
            cr_assert_float_eq(d->rows, e[LX_ST_ROWS], 0);
            cr_assert_float_eq(d->entropy, e[LX_ST_ENTROPY], 1e-4 * T, "layer %d head %d", l, h);
            cr_assert_float_eq(d->pmax, e[LX_ST_PMAX], 1e-5 * T);
            double total = 0.0;
            for (int k = 0; k < LX_DIAG_BUCKETS; k++)
                total += d->bucket[k];
            cr_assert_float_eq(total, (double)T, 1e-4, "rows do not sum to 1");
            /* a window of 20: no mass at distance >= 20, so bucket 6 ([32, 64)) is empty and
            ** bucket 5 ([16, 32)) holds only distances 16 … 19 */
            cr_assert_float_eq(d->bucket[6], 0.0, 0);
            cr_assert_float_eq(d->range_mass[0], (double)1, 1e-5, "only row T-1 has the whole range");
        }
    lx_acts_release(&a);
    tstack_free(&st);
    lx_model_release(&m);
}

/* The task's params with YAML overrides; malloc'd. */
static void *params(const char *yaml)
{
    const struct lx_task *t = lx_task_find("attn");
    void *p = calloc(1, t->schema.size);
    lx_params_defaults(&t->schema, p);
    struct lx_error err = {{0}};
    struct lx_doc doc;
    cr_assert_eq(lx_doc_load_text(&doc, yaml, "p.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_params_apply(&t->schema, p, doc.root, "task 'attn'", &err), LX_OK, "%s", err.msg);
    lx_doc_release(&doc);
    lx_params_finish(&t->schema, p);
    return p;
}

static double metric(const struct lx_result *r, const char *name)
{
    const struct lx_metric *m = lx_result_find(r, name);
    cr_assert_not_null(m, "no metric %s", name);
    return m->value;
}

/* Run the task at `length` on a model trained (nominally) at 32. */
static void run_task(const struct lx_model *m, const char *stack, long length, const char *yaml,
                     struct lx_result *r)
{
    const struct lx_task *t = lx_task_find("attn");
    cr_assert_not_null(t);
    struct lx_facts f = tfacts(16, 32, 2, length), ft = tfacts(16, 32, 2, 32);
    struct tstack st, st_train;
    tstack_make(&st, stack, &f);
    tstack_make(&st_train, "[rope]", &ft);
    void *p = params(yaml);
    struct lx_task_ctx ctx = {.params = p, .spec = &st.spec, .length = length, .model = m, .train_len = 32,
                              .task = t, .spec_train = &st_train.spec};
    struct lx_error err = {{0}};
    memset(r, 0, sizeof *r);
    cr_assert_eq(t->run(&ctx, r, &err), LX_OK, "%s", err.msg);
    free(p);
    tstack_free(&st);
    tstack_free(&st_train);
}

Test(attn, task_end_to_end)
{
    struct lx_model m;
    tiny_model(&m, 2);
    struct lx_result r;
    /* at the training length with the training stack: the reference is the same attention */
    run_task(&m, "[rope]", 32, "{windows: 3, ranges: [[1, 8], [8, 32], [32, 64]]}", &r);
    cr_assert_float_eq(metric(&r, "js_train"), 0.0, 1e-12);
    cr_assert_float_eq(metric(&r, "entropy"), metric(&r, "entropy_train"), 1e-9);
    cr_assert_float_eq(metric(&r, "pmax"), metric(&r, "pmax_train"), 1e-9);
    cr_assert_float_eq(metric(&r, "rows"), 3.0 * 32 * 2 * 2, 0, "windows x rows x layers x heads");
    cr_assert_null(lx_result_find(&r, "range_mass:32-64"), "a range longer than the window is reported");
    double e = 0.5 * (metric(&r, "entropy:l0") + metric(&r, "entropy:l1"));
    cr_assert_float_eq(metric(&r, "entropy"), e, 1e-9, "the mean over layers is not the layers' mean");
    double total = 0.0;
    for (int i = 0; i < r.n_points; i++)
        if (!strcmp(r.points[i].series, "mass_by_distance"))
            total += r.points[i].y;
    cr_assert_float_eq(total, 1.0, 1e-6);
    double mass = metric(&r, "range_mass:l1:8-32");
    cr_assert(mass >= 0.0 && mass <= 1.0, "range mass %g", mass);
    lx_result_release(&r);

    /* at 4x: rows grow, entropy grows (more keys), the distribution moves */
    run_task(&m, "[rope]", 128, "{windows: 2, from: 0.5}", &r);
    cr_assert_float_eq(metric(&r, "rows"), 2.0 * 64 * 2 * 2, 0, "from: 0.5 measures the last 64 rows");
    cr_assert_gt(metric(&r, "js_train"), 0.0);
    cr_assert_leq(metric(&r, "js_train"), log(2.0));
    cr_assert_gt(metric(&r, "entropy"), metric(&r, "entropy_train"));
    lx_result_release(&r);

    /* a window of 8 caps the entropy at ln 8 */
    run_task(&m, "[rope, {window: {size: 8}}]", 128, "{windows: 1, reference: false}", &r);
    cr_assert_leq(metric(&r, "entropy"), log(8.0) + 1e-9);
    cr_assert_null(lx_result_find(&r, "js_train"), "reference: false still measured the reference");
    lx_result_release(&r);
    lx_model_release(&m);
}

/* No document long enough: the corpus asked for is named (every corpus but austen was called
** 'sotu'), and sotu is suggested only where it is not the corpus already. */
Test(attn, a_corpus_too_short_is_named)
{
    struct lx_model m;
    tiny_model(&m, 2);
    const struct lx_task *t = lx_task_find("attn");
    const char *yaml[] = {"{windows: 1, corpus: stories}", "{windows: 1, corpus: sotu}"};
    const char *says[] = {"attn: no document of corpus 'stories' has 300000 bytes tokens\n"
                          "  hint: use a shorter length or the sotu corpus",
                          "attn: no document of corpus 'sotu' has 300000 bytes tokens\n"
                          "  hint: use a shorter length (no State of the Union address is that long)"};
    for (int i = 0; i < 2; i++) {
        struct lx_facts f = tfacts(16, 32, 2, 300000);
        struct tstack st;
        tstack_make(&st, "[rope]", &f);
        void *p = params(yaml[i]);
        struct lx_task_ctx ctx = {.params = p, .spec = &st.spec, .length = 300000, .model = &m, .train_len = 32,
                                  .task = t, .spec_train = &st.spec};
        struct lx_error err = {{0}};
        struct lx_result r = {0};
        cr_expect_eq(t->run(&ctx, &r, &err), LX_ERUN, "%s", yaml[i]);
        cr_expect_str_eq(err.msg, says[i]);
        lx_result_release(&r);
        free(p);
        tstack_free(&st);
    }
    lx_model_release(&m);
}
