/*
** tests/test_gaussian.c - the gaussian task (tasks/gaussian.c) and the spec
** composition it relies on (harness/core/spec.c).
**
** The numbers are checked three ways: against an independent numpy
** implementation (tests/ref/gaussian_ref.py, its output committed as
** tests/ref/gaussian_ref.csv), against closed forms computed here from the
** paper's formulas, and against themselves (determinism, thread count, shared
** draws). Every test runs single-threaded unless it sets its own thread count.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/sweep/grid.h"
#include "harness/sweep/plan.h"
#include "harness/sweep/run.h"

/* The paper's formulas, written out here independently of the methods/ sources. */
#define TAU 10.0
#define S_SSMAX 0.4
#define D_HEAD 64.0
#define TRAIN_LEN 64.0

enum { M_NONE, M_LOGN, M_SCALEINV, M_SCALEINV_INFOSCALE };

static double kappa(double n)
{
    return sqrt((1.0 - pow(n, -2.0 / D_HEAD)) / (1.0 - pow(TRAIN_LEN, -2.0 / D_HEAD)));
}

/* L_t = A·S + B for method `m` at length N and distance t. */
static void formula_ab(int m, long N, long t, double *A, double *B)
{
    double l = log(1.0 + (double)t / TAU);
    switch (m) {
    case M_NONE:
        *A = 1.0, *B = 0.0;
        break;
    case M_LOGN:
        *A = S_SSMAX * log((double)N), *B = 0.0;
        break;
    case M_SCALEINV:
        *A = sqrt(1.0 + 2.0 * l), *B = -2.0 * l;
        break;
    default:
        *A = kappa((double)N) * sqrt(1.0 + 2.0 * l), *B = kappa((double)N) * -2.0 * l;
        break;
    }
}

/* E[Σ_{t1 <= t < t2} exp(A_t S + B_t)] for S ~ N(0, sigma²). */
static double closed_z(int m, long N, long t1, long t2, double sigma)
{
    double z = 0.0;
    for (long t = t1; t < t2; t++) {
        double A, B;
        formula_ab(m, N, t, &A, &B);
        z += exp(B + A * A * sigma * sigma / 2.0);
    }
    return z;
}

/* ---- helpers ---------------------------------------------------------- */

static void load(struct lx_grid *g, struct lx_plan *plan, const char *yaml)
{
    struct lx_error err = {{0}};
    int rc = lx_grid_load_text(g, yaml, "test.yaml", &err);
    cr_assert_eq(rc, LX_OK, "grid: %s", err.msg);
    rc = lx_plan_build(plan, g, &err);
    cr_assert_eq(rc, LX_OK, "plan: %s", err.msg);
}

static void run_cell(const struct lx_plan *plan, int i, struct lx_result *res)
{
    struct lx_error err = {{0}};
    memset(res, 0, sizeof *res);
    int rc = lx_cell_run(plan, &plan->cells[i], NULL, NULL, res, &err);
    cr_assert_eq(rc, LX_OK, "cell %d: %s", i, err.msg);
}

static double metric(const struct lx_result *res, const char *name)
{
    const struct lx_metric *m = lx_result_find(res, name);
    cr_assert_not_null(m, "metric '%s' missing", name);
    return m->value;
}

static double metric_se(const struct lx_result *res, const char *name)
{
    char se[128];
    snprintf(se, sizeof se, "%s_se", name);
    return metric(res, se);
}

static int method_of(const char *canon)
{
    if (strcmp(canon, "none") == 0)
        return M_NONE;
    if (strncmp(canon, "logn(", 5) == 0)
        return M_LOGN;
    if (strcmp(canon, "scaleinv(tau=10)") == 0)
        return M_SCALEINV;
    cr_assert_str_eq(canon, "scaleinv(tau=10)+infoscale");
    return M_SCALEINV_INFOSCALE;
}

/* ---- a. agreement with the numpy reference ---------------------------- */

/* Same samples, sigma and ranges as tests/ref/gaussian_ref.py. */
static const char *const REF_YAML =
    "name: t\nseed: 1\n"
    "methods: [none, {logn: {mode: ssmax, s: 0.4}}, {scaleinv: {tau: 10}}, "
    "[{scaleinv: {tau: 10}}, infoscale]]\n"
    "tasks:\n  - gaussian: {samples: 2000, sigma: 1, ranges: [[10, 100], [100, 1000]]}\n"
    "lengths: [100, 1000, 10000]\n";

struct ref_row {
    char method[64];
    long length;
    char metric[64];
    double mean, se;
};

/* Split one CSV line into at most `max` fields in place; a field may be
** double-quoted (no embedded quotes occur in the reference). */
static int split_csv(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        if (*p == '"') {
            f[n++] = ++p;
            p = strchr(p, '"');
            if (!p)
                return -1;
            *p++ = '\0';
        } else {
            f[n++] = p;
            p += strcspn(p, ",\r\n");
        }
        if (*p != ',') {
            *p = '\0';
            break;
        }
        *p++ = '\0';
    }
    return n;
}

static int read_ref(struct ref_row **rows_out)
{
    const char *root = getenv("LENX_ROOT");
    cr_assert_not_null(root, "LENX_ROOT is not set (make test sets it)");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/ref/gaussian_ref.csv", root);
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "cannot open %s", path);
    char line[512];
    cr_assert_not_null(fgets(line, sizeof line, fp));
    cr_assert_eq(strncmp(line, "method,length,metric,mean,se", 28), 0, "header: %s", line);
    int n = 0, cap = 0;
    struct ref_row *rows = NULL;
    while (fgets(line, sizeof line, fp)) {
        char *f[5];
        if (line[0] == '\n')
            continue;
        cr_assert_eq(split_csv(line, f, 5), 5, "bad reference line %d", n + 2);
        if (n == cap) {
            cap = cap ? 2 * cap : 128;
            rows = realloc(rows, (size_t)cap * sizeof *rows);
            cr_assert_not_null(rows);
        }
        struct ref_row *r = &rows[n++];
        snprintf(r->method, sizeof r->method, "%s", f[0]);
        r->length = strtol(f[1], NULL, 10);
        snprintf(r->metric, sizeof r->metric, "%s", f[2]);
        r->mean = strtod(f[3], NULL);
        r->se = strtod(f[4], NULL);
    }
    fclose(fp);
    *rows_out = rows;
    return n;
}

Test(gaussian, matches_numpy_reference, .timeout = 60)
{
    struct ref_row *rows;
    int n_rows = read_ref(&rows);
    cr_assert_eq(n_rows, 84, "reference has %d rows, expected 84", n_rows);
    int *used = calloc((size_t)n_rows, sizeof *used);
    cr_assert_not_null(used);

    struct lx_grid g;
    struct lx_plan plan;
    load(&g, &plan, REF_YAML);
    cr_assert_eq(plan.n_cells, 12);
    int checked = 0, skipped = 0;
    for (int i = 0; i < plan.n_cells; i++) {
        const struct lx_cell *c = &plan.cells[i];
        const char *canon = g.stacks[c->stack].canon;
        struct lx_result res;
        run_cell(&plan, i, &res);
        int n_here = 0;
        for (int k = 0; k < n_rows; k++) {
            struct ref_row *r = &rows[k];
            if (strcmp(r->method, canon) != 0 || r->length != c->length)
                continue;
            used[k] = 1;
            n_here++;
            /* LogN (SSMax) multiplies the logits by 0.4 ln N: 2.76 at N = 1000,
            ** 3.68 at N = 10000, so exp(L_t) is log-normal with log-sd 2.8-3.7.
            ** The skewness of the 2000-row mean of range_z is then 70-220 at
            ** N = 1000 and ~1e6 at N = 10000 (closed-form cumulants), its
            ** relative SE 3-210 %, and in 300 numpy replicates the mean sits
            ** more than 3 SE from the true mean 2-18 % of the time (0.27 % if
            ** normal): the SE does not measure the error, so a 3-SE check is
            ** empty. At N = 100 (log-sd 1.84, skewness of the mean 0.4) the row
            ** is kept. The C-vs-numpy statistic is self-normalised, so heavy
            ** tails cost it power, not false alarms: in the same replicates
            ** |z| > 3 occurred in at most 0.4 % of pairs for every range_z row.
            ** scaleinv+infoscale range_z at N >= 1000 is as heavy (log-sd
            ** 3.0-4.6) and is kept on that ground: weak, but harmless. */
            if (method_of(canon) == M_LOGN && c->length >= 1000
                && strncmp(r->metric, "range_z:", 8) == 0) {
                skipped++;
                continue;
            }
            double cm = metric(&res, r->metric), cs = metric_se(&res, r->metric);
            /* local_mass at N = 100 is exactly 1 with SE 0 (C) or ~1e-17 (numpy
            ** rounding): allow a few ulps. */
            double tol = 3.0 * sqrt(cs * cs + r->se * r->se) + 1e-12 * fabs(r->mean);
            cr_expect_leq(fabs(cm - r->mean), tol,
                          "%s N=%ld %s: lenx %.10g (se %.3g) vs numpy %.10g (se %.3g): "
                          "%.2f combined SE apart",
                          canon, c->length, r->metric, cm, cs, r->mean, r->se,
                          fabs(cm - r->mean) / sqrt(cs * cs + r->se * r->se));
            checked++;
        }
        /* Every lenx metric has a reference row and vice versa. */
        cr_expect_eq(2 * n_here, res.n_metrics, "%s N=%ld: %d reference rows, %d lenx metrics",
                     canon, c->length, n_here, res.n_metrics);
        lx_result_release(&res);
    }
    for (int k = 0; k < n_rows; k++)
        cr_expect(used[k], "reference row %s N=%ld %s matched no cell",
                  rows[k].method, rows[k].length, rows[k].metric);
    cr_expect_eq(skipped, 4);
    cr_expect_eq(checked, n_rows - skipped);
    free(used);
    free(rows);
    lx_plan_release(&plan);
    lx_grid_release(&g);
}

/* ---- b. closed forms -------------------------------------------------- */

/* E[range_z] = Σ exp(B_t + A_t² σ²/2) is only checkable where the 2000-row
** mean is near normal. For `none` at sigma = 1 (log-sd 1) it is: skewness of
** the mean < 0.015. For the other methods sigma = 1 is not: scaleinv has
** a_t² = 1 + 2 ln(1 + t/10), log-sd 2.4 on [10, 100) and 3.2 on [100, 1000),
** so the mean's skewness is 4 and ~1000; in 300 numpy replicates the sample
** mean fell more than 3 SE from the truth in 2-4 % of them on [100, 1000), and
** for scaleinv+infoscale (log-sd up to 4.6) in up to 21 %. At sigma = 0.5 and
** N <= 1000 every method has log-sd <= 2.0 and the mean's skewness is < 0.1,
** so the 3-SE check is sound there. LogN at N = 10000, sigma = 0.5 (skewness
** 0.4) is left out for the same reason. */
static void check_closed_z(const char *yaml, double sigma, int expect_cells)
{
    static const long ranges[2][2] = {{10, 100}, {100, 1000}};
    struct lx_grid g;
    struct lx_plan plan;
    load(&g, &plan, yaml);
    cr_assert_eq(plan.n_cells, expect_cells);
    for (int i = 0; i < plan.n_cells; i++) {
        const struct lx_cell *c = &plan.cells[i];
        const char *canon = g.stacks[c->stack].canon;
        int m = method_of(canon);
        struct lx_result res;
        run_cell(&plan, i, &res);
        for (int r = 0; r < 2; r++) {
            if (ranges[r][1] > c->length)
                continue;
            char name[64];
            snprintf(name, sizeof name, "range_z:%ld-%ld", ranges[r][0], ranges[r][1]);
            double mean = metric(&res, name), se = metric_se(&res, name);
            double want = closed_z(m, c->length, ranges[r][0], ranges[r][1], sigma);
            cr_expect_gt(se, 0.0);
            cr_expect_leq(fabs(mean - want), 3.0 * se,
                          "%s sigma=%g N=%ld %s: %.8g vs closed form %.8g (%.2f SE)", canon, sigma,
                          c->length, name, mean, want, fabs(mean - want) / se);
        }
        lx_result_release(&res);
    }
    lx_plan_release(&plan);
    lx_grid_release(&g);
}

Test(gaussian, range_z_closed_form_none_sigma1, .timeout = 60)
{
    check_closed_z("name: t\nseed: 3\nmethods: [none]\n"
                   "tasks:\n  - gaussian: {samples: 2000, sigma: 1, ranges: [[10, 100], [100, 1000]]}\n"
                   "lengths: [1000, 10000]\n", 1.0, 2);
}

Test(gaussian, range_z_closed_form_sigma_half, .timeout = 60)
{
    check_closed_z("name: t\nseed: 4\n"
                   "methods: [none, {logn: {mode: ssmax, s: 0.4}}, {scaleinv: {tau: 10}}, "
                   "[{scaleinv: {tau: 10}}, infoscale]]\n"
                   "tasks:\n  - gaussian: {samples: 2000, sigma: 0.5, ranges: [[10, 100], [100, 1000]]}\n"
                   "lengths: [100, 1000]\n", 0.5, 8);
}

/* IID logits, N large: log Z -> ln N + sigma²/2 and Σ p_t L_t -> E[S e^S]/E[e^S]
** = sigma², so H -> ln N - sigma²/2. The second-order delta method gives the
** finite-N bias: for sigma = 1, E[H] ≈ ln N - 1/2 + 1.86/N (+1.9e-4 at
** N = 10000; the numpy reference matches this at N = 100, 1000, 10000). The
** entropy SE at N = 10000 with 2000 rows is ~3e-4. A tolerance of 0.005 nats is
** thus > 15 SE + bias: loose, but still fails for a wrong sigma² term (0.5) or
** a misnormalised softmax. */
Test(gaussian, entropy_none_large_n, .timeout = 60)
{
    struct lx_grid g;
    struct lx_plan plan;
    load(&g, &plan, "name: t\nseed: 5\nmethods: [none]\n"
                    "tasks:\n  - gaussian: {samples: 2000, sigma: 1, ranges: []}\n"
                    "lengths: [10000]\n");
    struct lx_result res;
    run_cell(&plan, 0, &res);
    double h = metric(&res, "entropy");
    double want = log(10000.0) - 0.5;
    cr_expect_leq(fabs(h - want), 0.005, "entropy %.6f vs ln N - sigma^2/2 = %.6f", h, want);
    cr_expect_lt(metric(&res, "entropy_se"), 1e-3);
    lx_result_release(&res);
    lx_plan_release(&plan);
    lx_grid_release(&g);
}

/* ---- c. determinism --------------------------------------------------- */

static const char *const SMALL_YAML =
    "name: t\nseed: 1\n"
    "methods: [none, {logn: {mode: ssmax, s: 0.4}}, {scaleinv: {tau: 10}}, "
    "[{scaleinv: {tau: 10}}, infoscale]]\n"
    "tasks:\n  - gaussian: {samples: 301, ranges: [[10, 100], [100, 1000]]}\n"
    "lengths: [100, 1000, 2000]\n";

static void assert_same_result(const struct lx_result *a, const struct lx_result *b)
{
    cr_assert_eq(a->n_metrics, b->n_metrics);
    for (int k = 0; k < a->n_metrics; k++) {
        cr_assert_str_eq(a->metrics[k].name, b->metrics[k].name);
        cr_assert_eq(memcmp(&a->metrics[k].value, &b->metrics[k].value, sizeof(double)), 0,
                     "%s: %.17g vs %.17g", a->metrics[k].name, a->metrics[k].value,
                     b->metrics[k].value);
    }
}

Test(gaussian, same_cell_twice_is_bit_identical)
{
    omp_set_num_threads(1);
    struct lx_grid g;
    struct lx_plan plan;
    load(&g, &plan, SMALL_YAML);
    for (int i = 0; i < plan.n_cells; i++) {
        struct lx_result a, b;
        run_cell(&plan, i, &a);
        run_cell(&plan, i, &b);
        assert_same_result(&a, &b);
        lx_result_release(&a);
        lx_result_release(&b);
    }
    lx_plan_release(&plan);
    lx_grid_release(&g);
}

Test(gaussian, thread_count_does_not_change_numbers)
{
    struct lx_grid g;
    struct lx_plan plan;
    load(&g, &plan, SMALL_YAML);
    for (int i = 0; i < plan.n_cells; i++) {
        struct lx_result a, b, c;
        omp_set_num_threads(1);
        run_cell(&plan, i, &a);
        omp_set_num_threads(2);
        run_cell(&plan, i, &b);
        omp_set_num_threads(3);     /* 301 rows: uneven static chunks */
        run_cell(&plan, i, &c);
        assert_same_result(&a, &b);
        assert_same_result(&a, &c);
        lx_result_release(&a);
        lx_result_release(&b);
        lx_result_release(&c);
    }
    omp_set_num_threads(1);
    lx_plan_release(&plan);
    lx_grid_release(&g);
}

/* ---- d. every method sees the same draws ------------------------------ */

Test(gaussian, data_key_shared_across_methods)
{
    struct lx_grid g;
    struct lx_plan plan;
    load(&g, &plan, "name: t\nseeds: [1, 2]\n"
                    "methods: [none, {logn: {mode: ssmax, s: 0.4}}, {scaleinv: {tau: 10}}, "
                    "[{scaleinv: {tau: 10}}, infoscale]]\n"
                    "tasks:\n  - gaussian: {samples: 50, ranges: [[10, 100]]}\n"
                    "lengths: [100, 1000]\n");
    cr_assert_eq(plan.n_cells, 4 * 2 * 2);
    for (int i = 0; i < plan.n_cells; i++)
        for (int j = 0; j < plan.n_cells; j++) {
            const struct lx_cell *a = &plan.cells[i], *b = &plan.cells[j];
            int same_data = a->task == b->task && a->length == b->length && a->seed == b->seed;
            if (same_data)
                cr_expect_eq(a->data_key, b->data_key, "cells %d and %d differ only in method", i, j);
            else
                cr_expect_neq(a->data_key, b->data_key, "cells %d and %d draw different data", i, j);
            if (i != j)
                cr_expect_str_neq(a->key, b->key, "cells %d and %d share a run key", i, j);
        }
    lx_plan_release(&plan);
    lx_grid_release(&g);

    /* The draws really are shared: two different stacks whose transforms are
    ** exactly the identity at this length give bit-identical numbers. LogN su
    ** with base = N multiplies by ln N / ln N = 1; InfoScale at n = the
    ** training length (64) multiplies by kappa = 1. */
    load(&g, &plan, "name: t\nseed: 1\n"
                    "methods: [none, {logn: {mode: su, base: 64}}, {scaleinv: {tau: 10}}, "
                    "[{scaleinv: {tau: 10}}, infoscale]]\n"
                    "tasks:\n  - gaussian: {samples: 200, ranges: [[10, 64]]}\n"
                    "lengths: [64]\n");
    cr_assert_eq(plan.n_cells, 4);
    struct lx_result res[4];
    for (int i = 0; i < 4; i++)
        run_cell(&plan, i, &res[i]);
    assert_same_result(&res[0], &res[1]);
    assert_same_result(&res[2], &res[3]);
    /* and the transform did something: scaleinv differs from none */
    cr_expect_neq(metric(&res[0], "entropy"), metric(&res[2], "entropy"));
    for (int i = 0; i < 4; i++)
        lx_result_release(&res[i]);
    lx_plan_release(&plan);
    lx_grid_release(&g);
}

/* ---- e. which metrics are reported ------------------------------------ */

Test(gaussian, ranges_outside_n_are_skipped_and_every_metric_has_se)
{
    struct lx_grid g;
    struct lx_plan plan;
    load(&g, &plan, "name: t\nseed: 1\nmethods: [none]\n"
                    "tasks:\n  - gaussian: {samples: 20, ranges: [[10, 100], [100, 1000]]}\n"
                    "lengths: [100, 999, 1000]\n");
    cr_assert_eq(plan.n_cells, 3);
    static const int want_metrics[3] = {2 + 3, 2 + 3, 2 + 6};
    for (int i = 0; i < plan.n_cells; i++) {
        struct lx_result res;
        run_cell(&plan, i, &res);
        long N = plan.cells[i].length;
        cr_expect_eq(res.n_metrics, 2 * want_metrics[i], "N=%ld: %d metrics", N, res.n_metrics);
        int inside = N >= 1000;     /* [100, 1000) fits exactly when t2 <= N */
        static const char *const far[3] = {"range_entropy:100-1000", "range_mass:100-1000",
                                           "range_z:100-1000"};
        for (int k = 0; k < 3; k++) {
            if (inside)
                cr_expect_not_null(lx_result_find(&res, far[k]), "N=%ld: %s missing", N, far[k]);
            else
                cr_expect_null(lx_result_find(&res, far[k]), "N=%ld: %s reported", N, far[k]);
        }
        cr_expect_not_null(lx_result_find(&res, "range_mass:10-100"));
        for (int k = 0; k < res.n_metrics; k++) {
            const char *name = res.metrics[k].name;
            size_t len = strlen(name);
            int is_se = len > 3 && strcmp(name + len - 3, "_se") == 0;
            if (is_se) {
                char base[128];
                snprintf(base, sizeof base, "%.*s", (int)(len - 3), name);
                cr_expect_not_null(lx_result_find(&res, base), "%s has no base metric", name);
                cr_expect_geq(res.metrics[k].value, 0.0, "%s < 0", name);
            } else {
                char se[128];
                snprintf(se, sizeof se, "%s_se", name);
                cr_expect_not_null(lx_result_find(&res, se), "N=%ld: %s has no _se", N, name);
            }
        }
        lx_result_release(&res);
    }
    lx_plan_release(&plan);
    lx_grid_release(&g);
}

/* ---- f. lx_spec_row (fast) vs lx_spec_logit (naive), stack order ------ */

Test(gaussian, spec_row_matches_naive_and_order_matters)
{
    struct lx_grid g;
    struct lx_plan plan;
    load(&g, &plan, "name: t\nseed: 1\n"
                    "methods: [[{scaleinv: {tau: 10}}, infoscale], [infoscale, {scaleinv: {tau: 10}}],\n"
                    "          [{scaleinv: {tau: 3}}, {logn: {mode: ssmax}}]]\n"
                    "tasks:\n  - gaussian: {samples: 10, ranges: []}\n"
                    "lengths: [100]\n");
    /* Stacks 0 and 1 are checked against the formulas. A stack may not name
    ** a method twice, so spec 2 is stack 2 with stack 0's ops pushed after
    ** it: scaleinv(3), logn, scaleinv(10), infoscale. It chains two
    ** distance-affine ops, so a nonzero offset meets a slope (B -> a·B + m),
    ** and is checked fast against naive only. */
    cr_assert_eq(g.n_stacks, 3);
    cr_assert_str_eq(g.stacks[0].canon, "scaleinv(tau=10)+infoscale");
    static const long ns[] = {1, 2, 63, 64, 65, 100, 4096, 100000};
    static const long ts[] = {0, 1, 9, 10, 57, 999, 99999};
    static const double ss[] = {-2.5, 0.0, 0.3, 1.7};
    const struct lx_task_use *tu = &g.tasks[0];
    int n_differ = 0;
    for (size_t in = 0; in < sizeof ns / sizeof ns[0]; in++) {
        long n = ns[in];
        struct lx_facts f;
        tu->task->facts(tu->params, n, &f);
        struct lx_spec spec[3];
        struct lx_error err = {{0}};
        for (int st = 0; st < 3; st++)
            cr_assert_eq(lx_stack_compile(&g.stacks[st], &f, &spec[st], &err), LX_OK, "%s", err.msg);
        for (int k = 0; k < spec[0].n_ops; k++)
            cr_assert_eq(lx_spec_push(&spec[2], &spec[0].ops[k], &err), LX_OK, "%s", err.msg);
        cr_assert_eq(spec[2].n_ops, 4);
        /* One row call over all the distances, offset by t0 = 0, and one per
        ** distance with t0 = t, so the t0 offset is exercised too. */
        long t_max = ts[sizeof ts / sizeof ts[0] - 1];
        double *Arow[3], *Brow[3];
        for (int st = 0; st < 3; st++) {
            Arow[st] = malloc((size_t)(t_max + 1) * sizeof(double));
            Brow[st] = malloc((size_t)(t_max + 1) * sizeof(double));
            cr_assert(Arow[st] && Brow[st]);
            lx_spec_row(&spec[st], 0, n, 0, t_max + 1, Arow[st], Brow[st]);
        }
        for (size_t it = 0; it < sizeof ts / sizeof ts[0]; it++) {
            long t = ts[it];
            /* The formulas: [scaleinv, infoscale] = kappa·(a·S + m) and
            ** [infoscale, scaleinv] = a·(kappa·S) + m. kappa(1) = 0 (the
            ** numerator 1 - 1^(-2/d) vanishes). */
            double l = log(1.0 + (double)t / TAU), a = sqrt(1.0 + 2.0 * l), m = -2.0 * l;
            double k = n == 1 ? 0.0 : kappa((double)n);
            double wantA[2] = {k * a, a * k}, wantB[2] = {k * m, m};
            for (int st = 0; st < 3; st++) {
                double A1, B1;
                lx_spec_row(&spec[st], 0, n, t, 1, &A1, &B1);
                cr_expect_float_eq(A1, Arow[st][t], 1e-15 * fabs(A1) + 1e-300);
                cr_expect_float_eq(B1, Brow[st][t], 1e-15 * fabs(B1) + 1e-300);
                if (st < 2) {
                    cr_expect_float_eq(A1, wantA[st], 1e-12 * fabs(wantA[st]) + 1e-15,
                                       "%s n=%ld t=%ld: A %.17g vs formula %.17g",
                                       g.stacks[st].canon, n, t, A1, wantA[st]);
                    cr_expect_float_eq(B1, wantB[st], 1e-12 * fabs(wantB[st]) + 1e-15,
                                       "%s n=%ld t=%ld: B %.17g vs formula %.17g",
                                       g.stacks[st].canon, n, t, B1, wantB[st]);
                }
                for (size_t is = 0; is < sizeof ss / sizeof ss[0]; is++) {
                    double s = ss[is];
                    double fast = A1 * s + B1;
                    double naive = lx_spec_logit(&spec[st], 0, n, t, s);
                    cr_expect_float_eq(fast, naive, 1e-12 * (fabs(naive) + 1.0),
                                       "%s n=%ld t=%ld s=%g: row %.17g vs naive %.17g",
                                       g.stacks[st].canon, n, t, s, fast, naive);
                }
            }
            /* Order matters exactly when kappa != 1 and m != 0. */
            double d = lx_spec_logit(&spec[0], 0, n, t, 0.3) - lx_spec_logit(&spec[1], 0, n, t, 0.3);
            if (t > 0 && n != 64) {
                cr_expect_gt(fabs(d), 1e-6, "n=%ld t=%ld: the two orders agree", n, t);
                n_differ++;
            } else {
                cr_expect_float_eq(d, 0.0, 1e-12, "n=%ld t=%ld: orders should agree", n, t);
            }
        }
        for (int st = 0; st < 3; st++) {
            free(Arow[st]);
            free(Brow[st]);
        }
    }
    cr_expect_gt(n_differ, 20);
    lx_plan_release(&plan);
    lx_grid_release(&g);
}
