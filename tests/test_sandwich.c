/*
** tests/test_sandwich.c - Sandwich's fixed relative bias (methods/sandwich.c).
**
** The bias of every head at distances 0-40 and four far ones against NeMo's
** rule run in torch float64 (tests/ref/sandwich_ref.py, three (heads, d')),
** one value worked by hand, the head dimension as the default d', and the
** stacks refused. The attention paths run it through tests/model_stacks.h.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/stack.h"

/* m_h(t) as the spec evaluates it: the bias of the key t back in head h. */
static double bias_of(const struct lx_spec *spec, int h, double t)
{
    double A, B;
    lx_spec_affine(spec, h, 64, t, &A, &B);
    cr_assert_eq(A, 1.0, "sandwich scales no logit");
    return B;
}

/* A term cos(t·ω) − 1 is off by the argument's rounding, t·ω·ε at most a
** few ulps with ω <= 1, plus its own: summed over d'/2 terms and divided by
** the head's 8(h + 1)/H >= 8/H, the bound below (H <= 4 here). */
static double tolerance(double t, long dim)
{
    return 4.0 * DBL_EPSILON * (1.0 + t) * (double)dim;
}

Test(sandwich, every_head_matches_nemos_rule_in_torch)
{
    char path[512], line[256];
    snprintf(path, sizeof path, "%s/tests/ref/sandwich_ref.csv", getenv("LENX_ROOT"));
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "%s", path);
    struct tstack st = {0};
    int open_case = -1, n = 0;
    while (fgets(line, sizeof line, fp)) {
        int c, heads, h;
        long dim;
        double t, want;
        if (sscanf(line, "%d,%d,%ld,%d,%lf,%lf", &c, &heads, &dim, &h, &t, &want) != 6)
            continue;
        if (c != open_case) {
            if (open_case >= 0)
                tstack_free(&st);
            char yaml[64];
            snprintf(yaml, sizeof yaml, "{sandwich: {dim: %ld}}", dim);
            struct lx_facts f = tfacts(64, 64, heads, 64);
            tstack_make(&st, yaml, &f);
            open_case = c;
        }
        double got = bias_of(&st.spec, h, t);
        cr_expect(fabs(got - want) <= tolerance(t, dim), "case %d head %d t %g: %.17g, torch %.17g", c, h, t, got,
                  want);
        n++;
    }
    fclose(fp);
    tstack_free(&st);
    cr_expect_eq(n, 405, "rows read");
}

Test(sandwich, a_value_by_hand_and_the_head_dimension_by_default)
{
    /* d' = 2, one head: ω_1 = 10000^-1, m(100) = (cos(0.01) − 1)/8 */
    struct tstack st;
    struct lx_facts f = tfacts(2, 64, 1, 64);
    tstack_make(&st, "sandwich", &f);
    cr_expect(fabs(bias_of(&st.spec, 0, 100.0) - (-6.24994791684208e-06)) <= 1e-18, "%.17g",
              bias_of(&st.spec, 0, 100.0));
    cr_expect_eq(bias_of(&st.spec, 0, 0.0), 0.0, "the query's own key gets 0");
    tstack_free(&st);
    /* dim 0 is the head's: d_head 16 gives {sandwich: {dim: 16}}'s biases, head 2 of 3 a third of head 0's */
    struct tstack a, b;
    f = tfacts(16, 64, 3, 64);
    tstack_make(&a, "sandwich", &f);
    tstack_make(&b, "{sandwich: {dim: 16}}", &f);
    for (int t = 0; t < 50; t += 7) {
        cr_expect_eq(bias_of(&a.spec, 1, t), bias_of(&b.spec, 1, t), "t %d", t);
        cr_expect(fabs(3.0 * bias_of(&a.spec, 2, t) - bias_of(&a.spec, 0, t)) <= 1e-15, "t %d", t);
    }
    for (int t = 0; t < 9; t++)     /* every term falls while t·ω_1 < π: t < π·10000^(1/8) = 9.9 */
        cr_expect_lt(bias_of(&a.spec, 0, t + 1), bias_of(&a.spec, 0, t), "t %d", t);
    tstack_free(&a);
    tstack_free(&b);
}

Test(sandwich, stacks_refused_with_a_reason)
{
    struct lx_facts f = tfacts(16, 64, 4, 128);
    tstack_refused("[rope, sandwich]", f, "position scheme");
    tstack_refused("[sandwich, alibi]", f, "position scheme");
    tstack_refused("{sandwich: {dim: 7}}", f, "must be even");
    f = tfacts(16, 64, 0, 128);
    tstack_refused("sandwich", f, "at least one attention head");
}
