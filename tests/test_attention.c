/*
** tests/test_attention.c - naive attention: gradients against finite
** differences (plain, causal and bidirectional, with the spec's logit ops),
** and hand-checkable values.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/config.h"
#include "harness/engine/kernels/attention.h"
#include "harness/sweep/grid.h"
#include "harness/sweep/plan.h"
#include "harness/core/rng.h"

enum { T = 5, H = 2, D = 4, N = T * H * D };

struct ctx {
    float q[N], k[N], v[N], w[N];
    struct lx_spec spec;
    int causal;
};

static void fill(float *x, int n, uint32_t stream)
{
    struct lx_rng r;
    lx_rng_init(&r, 4242, stream, LX_RNG_INIT);
    for (int i = 0; i < n; i++)
        x[i] = (float)lx_rng_normal(&r);
}

static double loss(void *p)
{
    struct ctx *c = p;
    float o[N], att[H * T * T];
    lx_attention_forward(o, att, c->q, c->k, c->v, &c->spec, T, H, D, c->causal);
    double s = 0;
    for (int i = 0; i < N; i++)
        s += (double)o[i] * c->w[i];
    return s;
}

static void check(struct ctx *c, const char *what)
{
    float o[N], att[H * T * T], dq[N] = {0}, dk[N] = {0}, dv[N] = {0};
    lx_attention_forward(o, att, c->q, c->k, c->v, &c->spec, T, H, D, c->causal);
    lx_attention_backward(dq, dk, dv, c->w, att, c->q, c->k, c->v, &c->spec, T, H, D, c->causal);
    float *xs[3] = {c->q, c->k, c->v}, *gs[3] = {dq, dk, dv};
    const char *names[3] = {"dq", "dk", "dv"};
    for (int a = 0; a < 3; a++)
        for (int i = 0; i < N; i++) {
            float keep = xs[a][i], h = 1e-2f;
            xs[a][i] = keep + h;
            double up = loss(c);
            xs[a][i] = keep - h;
            double dn = loss(c);
            xs[a][i] = keep;
            double num = (up - dn) / (2 * h);
            cr_expect(fabs(num - gs[a][i]) <= 2e-3 + 3e-3 * fabs(num), "%s %s[%d]: analytic %g, numeric %g",
                      what, names[a], i, gs[a][i], num);
        }
}

static void with_stack(struct ctx *c, const char *yaml, struct lx_doc *doc, struct lx_stack *st)
{
    struct lx_error err = {{0}};
    struct lx_facts f = {.d_head = D, .train_len = 3, .n_heads = H, .length = T, .caps = LX_CAP_LOGITS};
    cr_assert_eq(lx_doc_load_text(doc, yaml, "a.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_stack_parse(st, doc->root, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_stack_compile(st, &f, &c->spec, &err), LX_OK, "%s", err.msg);
}

Test(attention, gradients)
{
    /* the window's: rows of 5 keys see 2 (causal) or 3 (both sides), n and the tables per row */
    static const char *stacks[] = {"none", "[scaleinv: {tau: 2}, infoscale]", "logn: {mode: ssmax, s: 0.7}",
                                   "[{window: {size: 2}}, {scaleinv: {tau: 2}}, infoscale]"};
    for (int s = 0; s < 4; s++)
        for (int causal = 0; causal < 2; causal++) {
            struct ctx c = {.causal = causal};
            fill(c.q, N, 1), fill(c.k, N, 2), fill(c.v, N, 3), fill(c.w, N, 4);
            struct lx_doc doc;
            struct lx_stack st;
            with_stack(&c, stacks[s], &doc, &st);
            char what[96];
            snprintf(what, sizeof what, "%s %s", stacks[s], causal ? "causal" : "bidirectional");
            check(&c, what);
            c.spec.zsink.method = "zerosink", c.spec.zsink.logit = 0.5 * s - 0.5;  /* and with a zero sink */
            snprintf(what, sizeof what, "%s %s, zero sink %g", stacks[s], causal ? "causal" : "bidirectional",
                     c.spec.zsink.logit);
            check(&c, what);
            lx_stack_release(&st);
            lx_doc_release(&doc);
        }
}

Test(attention, values_by_hand)
{
    /* Causal, one head, D = 1: row 0 sees only itself (o_0 = v_0); with q = 0
    ** every visible logit is 0, so o_i is the mean of v_0..v_i. */
    float q[3] = {0, 0, 0}, k[3] = {1, 2, 3}, v[3] = {3, 6, 9}, o[3], att[9];
    struct lx_spec spec;
    struct lx_facts f = {.d_head = 1, .train_len = 3, .n_heads = 1, .length = 3, .caps = LX_CAP_LOGITS};
    lx_spec_init(&spec, &f);
    lx_attention_forward(o, att, q, k, v, &spec, 3, 1, 1, 1);
    cr_expect(fabsf(o[0] - 3) < 1e-6f && fabsf(o[1] - 4.5f) < 1e-6f && fabsf(o[2] - 6) < 1e-6f);
    cr_expect_eq(att[1], 0.0f);
    /* q_2 = 1, k = (0, 0, ln 2·1): logits (0, 0, ln 2) -> p = (1/4, 1/4, 1/2). */
    float q2[3] = {0, 0, 1}, k2[3] = {0, 0, (float)log(2.0)};
    lx_attention_forward(o, att, q2, k2, v, &spec, 3, 1, 1, 1);
    cr_expect(fabsf(att[6] - 0.25f) < 1e-6f && fabsf(att[8] - 0.5f) < 1e-6f);
    cr_expect(fabsf(o[2] - (0.25f * 3 + 0.25f * 6 + 0.5f * 9)) < 1e-5f);
}

Test(attention, zero_sink_values_by_hand)
{
    /* q = 0: every key's logit is 0, so with a sink of logit z row i gives
    ** weight 1 / (e^z + i + 1) to each of its i + 1 keys. v = (3, 6, 9): at
    ** z = 0, o = (3/2, 9/3, 18/4); at z = ln 2, o = (3/3, 9/4, 18/5). */
    float q[3] = {0, 0, 0}, k[3] = {1, 2, 3}, v[3] = {3, 6, 9}, o[3], att[9];
    struct lx_spec spec;
    struct lx_facts f = {.d_head = 1, .train_len = 3, .n_heads = 1, .length = 3, .caps = LX_CAP_LOGITS};
    lx_spec_init(&spec, &f);
    spec.zsink.method = "zerosink";
    const double want[2][3] = {{1.5, 3.0, 4.5}, {1.0, 2.25, 3.6}};
    for (int c = 0; c < 2; c++) {
        spec.zsink.logit = c ? log(2.0) : 0.0;
        lx_attention_forward(o, att, q, k, v, &spec, 3, 1, 1, 1);
        for (int i = 0; i < 3; i++)
            cr_expect(fabs(o[i] - want[c][i]) < 1e-6, "z %g row %d: %g, want %g", spec.zsink.logit, i, o[i],
                      want[c][i]);
        cr_expect(fabsf(att[0] - (c ? 1.0f / 3 : 0.5f)) < 1e-7f, "p of key 0 in row 0: %g", att[0]);
    }
}

/* Learned sinks: head h's logit is z + w_h. Two heads of the rows above (q = 0, v = (3, 6, 9) in
** both), w = (0, ln 2) at z = 0 and w = (−ln 2, 0) at z = ln 2: either way head 0 gives the z = 0
** outputs (3/2, 9/3, 18/4) and head 1 the z = ln 2 ones (3/3, 9/4, 18/5). */
Test(attention, learned_sinks_by_hand)
{
    float q[6] = {0}, k[6] = {1, 1, 2, 2, 3, 3}, v[6] = {3, 3, 6, 6, 9, 9}, o[6], att[18];
    struct lx_spec spec;
    struct lx_facts f = {.d_head = 1, .train_len = 3, .n_heads = 2, .length = 3, .caps = LX_CAP_LOGITS};
    lx_spec_init(&spec, &f);
    spec.zsink.method = "zerosink";
    spec.zsink.learn = 1;
    const float w[2][2] = {{0.0f, (float)log(2.0)}, {-(float)log(2.0), 0.0f}};
    const double want[2][3] = {{1.5, 3.0, 4.5}, {1.0, 2.25, 3.6}};
    for (int c = 0; c < 2; c++) {
        spec.zsink.logit = c ? log(2.0) : 0.0;
        spec.zsink.learned = w[c];
        lx_attention_forward(o, att, q, k, v, &spec, 3, 2, 1, 1);
        for (int i = 0; i < 3; i++)
            for (int h = 0; h < 2; h++)
                cr_expect(fabs(o[i * 2 + h] - want[h][i]) < 1e-6, "z %g head %d row %d: %g, want %g",
                          spec.zsink.logit, h, i, o[i * 2 + h], want[h][i]);
    }
}
