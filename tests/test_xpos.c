/*
** tests/test_xpos.c - xPos's decaying rotary positions (methods/xpos.c).
**
** The rotary tables as the model applies them (lx_rope_table, lx_rope_apply)
** against xPos's relative form run in torch float64 (tests/ref/xpos_ref.py:
** both layouts, a rope over part of the head, far positions), the decay at
** one distance worked by hand, and the stacks refused. The model's attention
** paths, decoding and gradients run it through tests/model_stacks.h and
** tests/test_model.c.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/model/model.h"
#include "tests/stack.h"

enum { MAX_T = 64, MAX_D = 16 };

/* The cases of tests/ref/xpos_ref.py: the stack, head dimension, rows, the
** position of row 0 and the cell's length (which sets lenx's centre). */
static const struct xcase {
    const char *stack;
    int D, T;
    long p0, length;
} cases[] = {
    {"[{rope: {layout: interleaved}}, {xpos: {scale_base: 16}}]", 8, 40, 0, 40},
    {"[rope, {xpos: {scale_base: 8}}]", 16, 32, 0, 32},
    {"[{rope: {base: 500, dims: 8}}, {xpos: {scale_base: 32, gamma: 1}}]", 16, 36, 0, 36},
    {"[rope, xpos]", 8, 16, 3000, 8192},
};

/* q and k rows turned as the model turns them (H = KV = 1: rows q | k | v),
** from the closed forms the reference draws them by. */
static void turned_rows(const struct xcase *c, const struct lx_spec *spec, float *qkv)
{
    int D = c->D, T = c->T, pos[MAX_T];
    for (int t = 0; t < T; t++) {
        pos[t] = (int)(c->p0 + t);
        for (int d = 0; d < D; d++) {
            qkv[(long)t * 3 * D + d] = (float)sin(0.37 * t + 1.3 * d + 0.1);
            qkv[(long)t * 3 * D + D + d] = (float)cos(0.23 * t - 0.7 * d + 0.5);
            qkv[(long)t * 3 * D + 2 * D + d] = 0.0f;
        }
    }
    static double cs[MAX_T * MAX_D], csk[MAX_T * MAX_D];
    cr_assert(spec->rotary.decay_scale > 0, "%s sets a decay", c->stack);
    if (c->p0)
        lx_rope_table_pos(cs, csk, &spec->rotary, pos, T);
    else
        lx_rope_table(cs, csk, &spec->rotary, T);
    lx_rope_apply(qkv, &spec->rotary, cs, csk, 1, T, 1, 1, D, +1);
}

/* Each turned channel is one rounding to float off its exact value, so a
** score is off by at most 2ε·Σ_d |q_d k_d| (ε = FLT_EPSILON/2 each side),
** the double sums adding far less. */
Test(xpos, scores_match_the_relative_form_in_torch)
{
    char path[512], line[128];
    snprintf(path, sizeof path, "%s/tests/ref/xpos_ref.csv", getenv("LENX_ROOT"));
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "%s", path);
    struct tstack st = {0};
    static float qkv[MAX_T * 3 * MAX_D];
    int open_case = -1, n = 0;
    double worst = 0.0;
    while (fgets(line, sizeof line, fp)) {
        int c, i, j;
        double want;
        if (sscanf(line, "%d,%d,%d,%lf", &c, &i, &j, &want) != 4)
            continue;
        const struct xcase *x = &cases[c];
        if (c != open_case) {
            if (open_case >= 0)
                tstack_free(&st);
            struct lx_facts f = tfacts(x->D, x->T, 1, x->length);
            tstack_make(&st, x->stack, &f);
            turned_rows(x, &st.spec, qkv);
            open_case = c;
        }
        const float *q = qkv + (long)i * 3 * x->D, *k = qkv + (long)j * 3 * x->D + x->D;
        double got = 0.0, mag = 0.0;
        for (int d = 0; d < x->D; d++) {
            got += (double)q[d] * k[d];
            mag += fabs((double)q[d] * k[d]);
        }
        double tol = FLT_EPSILON * mag + 1e-15;
        cr_expect(fabs(got - want) <= tol, "case %d (%s) q%d.k%d: %.9g, torch %.9g (tolerance %.3g)", c, x->stack,
                  i, j, got, want, tol);
        worst = fmax(worst, fabs(got - want) / tol);
        n++;
    }
    fclose(fp);
    if (open_case >= 0)
        tstack_free(&st);
    cr_expect_eq(n, 40 * 41 / 2 + 32 * 33 / 2 + 36 * 37 / 2 + 16 * 17 / 2, "pairs read: %d", n);
    cr_log_info("xpos: worst |lenx - torch| is %.3g of the tolerance", worst);
}

/* At δ = scale_base a pair's share is RoPE's times ζ_k itself: q and k the
** unit vector of pair 0's first channel (half layout, θ_0 = 1), the query 512
** positions after the key: cos(512)·0.4/1.4, and pair 3 (channel 3, θ_3 =
** 10000^(−6/8)): cos(512·10^−3)·(6/8 + 0.4)/1.4. */
Test(xpos, the_decay_at_scale_base_by_hand)
{
    struct tstack st;
    struct lx_facts f = tfacts(8, 1024, 1, 1024);
    tstack_make(&st, "[rope, xpos]", &f);
    for (int pair = 0; pair < 4; pair += 3) {
        float qkv[2][24] = {{0}};
        qkv[1][pair] = 1.0f;        /* q at position 512 */
        qkv[0][8 + pair] = 1.0f;    /* k at position 0 */
        int pos[2] = {0, 512};
        double cs[2 * 8], csk[2 * 8];
        lx_rope_table_pos(cs, csk, &st.spec.rotary, pos, 2);
        lx_rope_apply(&qkv[0][0], &st.spec.rotary, cs, csk, 1, 2, 1, 1, 8, +1);
        double s = 0.0;
        for (int d = 0; d < 8; d++)
            s += (double)qkv[1][d] * qkv[0][8 + d];
        double want = pair == 0 ? cos(512.0) * 0.4 / 1.4 : cos(512.0 * 1e-3) * 1.15 / 1.4;
        cr_expect(fabs(s - want) <= 1e-6, "pair %d: %.9g, want %.9g", pair, s, want);
    }
    tstack_free(&st);
}

Test(xpos, stacks_refused_with_a_reason)
{
    struct lx_facts f = tfacts(16, 64, 2, 256);
    tstack_refused("xpos", f, "needs rotary positions");
    tstack_refused("[alibi, xpos]", f, "needs rotary positions");
    tstack_refused("[rope, xpos, {cosscale: {s: 8}}]", f, "both set the logit geometry");
    tstack_refused("[rope, xpos, {rerope: {window: 8}}]", f, "maps far keys to other positions");
    tstack_refused("[rope, {streaming: {sinks: 2, recent: 8}}, xpos]", f, "maps far keys to other positions");
    tstack_refused("[rope, {cosscale: {s: 8}}, xpos]", f, "both set the logit geometry");
    tstack_refused("[rope, {xpos: {scale_base: 0}}]", f, "scale_base");
    struct lx_facts mlm = f;
    mlm.bidirectional = 1;
    tstack_refused("[rope, xpos]", mlm, "xPos is for causal models");
    /* exp(60) at the centre: 2·60·512/ln(1.4/0.4) = 49,043 positions */
    struct lx_facts lng = tfacts(16, 64, 2, 49044);
    tstack_refused("[rope, xpos]", lng, "at most 49043 positions with scale_base 512");
    lng.length = 49043;
    struct tstack st;
    tstack_make(&st, "[rope, xpos]", &lng);
    cr_expect_eq(st.spec.rotary.decay_center, 24521.0);
    tstack_free(&st);
    lng.length = 98086;
    tstack_make(&st, "[rope, {xpos: {scale_base: 1024}}]", &lng);
    tstack_free(&st);
}

/* PoSE and randomized positions feed ids up to target − 1 whatever the lengths, so the centre and the e^60
** guard follow them: target 80,000 on a model trained at 128 is refused (2·60·512/ln 3.5 = 49,043 positions
** at most), in training and at evaluation, before or after xpos in the stack; target 40,000 is centred at
** 20,000, its factors at most e^(20000·ln 3.5/512) = e^48.9 in float, and pair 0's share at δ = 39,999 is
** still ζ_0^(δ/γ)·cos δ. Before, c was 64 from the lengths alone: factors of e^97.7, inf in float, and the
** training diverged at its first step. */
Test(xpos, training_positions_set_the_centre_and_the_guard)
{
    static const char *const far[] = {
        "[rope, xpos, {pose: {target: 80000}}]", "[rope, xpos, {randpos: {target: 80000}}]",
        "[rope, {pose: {target: 80000}}, xpos]", "[rope, {randpos: {target: 80000}}, xpos]",
    };
    static const char *const near[] = {"[rope, xpos, {pose: {target: 40000}}]", "[rope, xpos, {randpos: {target: "
                                       "40000}}]", "[rope, {pose: {target: 40000}}, xpos]"};
    for (int training = 0; training < 2; training++) {
        struct lx_facts f = tfacts(16, 128, 2, 128);
        f.training = training;
        for (size_t i = 0; i < sizeof far / sizeof *far; i++)
            tstack_refused(far[i], f, "at most 49043 positions with scale_base 512");
        for (size_t i = 0; i < sizeof near / sizeof *near; i++) {
            struct tstack st;
            tstack_make(&st, near[i], &f);
            cr_expect_eq(st.spec.rotary.decay_center, 20000.0, "%s: c = %g", near[i], st.spec.rotary.decay_center);
            int pos[2] = {0, 39999};
            double cs[2 * 16], csk[2 * 16];
            lx_rope_table_pos(cs, csk, &st.spec.rotary, pos, 2);
            for (int k = 0; k < 2 * 16; k++)
                cr_expect(isfinite((float)cs[k]) && isfinite((float)csk[k]), "%s: entry %d: %g, %g", near[i], k,
                          cs[k], csk[k]);
            double share = cs[16] * csk[0] + cs[17] * csk[1];   /* pair 0 (θ_0 = 1) of q at 39999 and k at 0 */
            double decay = exp(39999.0 / 512.0 * log(0.4 / 1.4)), want = decay * cos(39999.0);
            cr_expect(fabs(share - want) <= 1e-9 * decay, "%s: %.9g, want %.9g", near[i], share, want);
            tstack_free(&st);
        }
    }
}
