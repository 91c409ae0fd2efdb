/*
** tests/test_seeds.c - verdicts over seeds (results/seeds.c, `lenx compare
** --sigma`): the t quantile against the t distribution's integral, Wilson
** bounds against their defining equation, a cell's interval by hand, pooled
** comparison by hand, and end to end: a 3-seed gaussian sweep against the
** same sweep with 3 other seeds flags nothing at --sigma 3; a baseline with
** one value moved by 10 standard errors flags that value alone.
*/
#define _POSIX_C_SOURCE 200809L
#include "tests/shell.h"

#include <math.h>

#include "results/views.h"

#define Z975 1.959963984540054

/* The t density with nu degrees of freedom. */
static double t_density(double x, double nu)
{
    return exp(lgamma((nu + 1) / 2) - lgamma(nu / 2) - 0.5 * log(nu * acos(-1.0)) - (nu + 1) / 2 * log1p(x * x / nu));
}

/* P(T <= t) for t >= 0: 1/2 plus Simpson's rule over [0, t]. */
static double t_cdf(double t, double nu)
{
    int n = 20000;
    double h = t / n, s = t_density(0, nu) + t_density(t, nu);
    for (int i = 1; i < n; i++)
        s += (i % 2 ? 4 : 2) * t_density(i * h, nu);
    return 0.5 + s * h / 3;
}

Test(seeds, t975_is_the_t_distributions_quantile)
{
    static const int df[] = {1, 2, 3, 4, 5, 7, 10, 15, 20, 29, 30, 31, 35, 40, 60, 100, 1000};
    for (size_t i = 0; i < sizeof df / sizeof *df; i++) {
        double t = lx_t975(df[i]), p = t_cdf(t, df[i]);
        cr_expect(fabs(p - 0.975) < 1e-5, "df %d: t %.6f has P %.7f", df[i], t, p);
    }
    cr_expect(isnan(lx_t975(0)));
}

/* Wilson's bounds are the roots p of (k/n - p)^2 = z^2 p (1 - p) / n. */
Test(seeds, wilson_bounds_solve_their_equation)
{
    static const double kn[][2] = {{19, 30}, {1, 10}, {500, 1000}, {3, 4}};
    for (size_t i = 0; i < sizeof kn / sizeof *kn; i++) {
        double k = kn[i][0], n = kn[i][1], lo, hi;
        lx_wilson95(k, n, &lo, &hi);
        cr_expect(lo < k / n && k / n < hi, "%g/%g: [%g, %g]", k, n, lo, hi);
        for (int b = 0; b < 2; b++) {
            double p = b ? hi : lo, lhs = (k / n - p) * (k / n - p), rhs = Z975 * Z975 * p * (1 - p) / n;
            cr_expect(fabs(lhs - rhs) < 1e-12, "%g/%g bound %g: %g vs %g", k, n, p, lhs, rhs);
        }
    }
    double lo, hi;
    lx_wilson95(30, 30, &lo, &hi);  /* all right: the lower root of (1 - p)^2 = z^2 p (1 - p) / n */
    cr_expect(fabs(lo - 30 / (30 + Z975 * Z975)) < 1e-12, "%g", lo);
    cr_expect_eq(hi, 1.0);
    lx_wilson95(0, 30, &lo, &hi);
    cr_expect_eq(lo, 0.0);
    cr_expect(fabs(hi - Z975 * Z975 / (30 + Z975 * Z975)) < 1e-12, "%g", hi);
    lx_wilson95(1, 0, &lo, &hi);
    cr_expect(isnan(lo) && isnan(hi));
}

static void add_acc(struct lx_rows *r, long seed, double acc, double count)
{
    char key[17];
    snprintf(key, sizeof key, "k%ld", seed);
    lx_rows_add(r, "s", "m", "passkey", key, NULL, 64, seed, "acc", acc, r->n + 1);
    if (count > 0)
        lx_rows_add(r, "s", "m", "passkey", key, NULL, 64, seed, "n_samples", count, r->n + 1);
}

static void stat_of(const struct lx_rows *r, struct lx_cell_stat *st)
{
    char **label = lx_xcalloc((size_t)r->n, sizeof *label);
    for (int i = 0; i < r->n; i++)
        label[i] = "m";
    lx_cell_stat(r, label, "s", "passkey", "m", 64, "acc", st);
    free(label);
}

Test(seeds, cell_interval_t_and_wilson)
{
    struct lx_rows r = {0};
    struct lx_cell_stat st;
    /* 0.5, 0.6, 0.7 of 10 each: mean 0.6, sd 0.1, t half-width 4.30265 * 0.1 /
    ** sqrt(3) = 0.248414; Wilson of 18/30 is narrower and inside it. */
    add_acc(&r, 1, 0.5, 10), add_acc(&r, 2, 0.6, 10), add_acc(&r, 3, 0.7, 10);
    stat_of(&r, &st);
    cr_expect_eq(st.n, 3);
    cr_expect_eq(st.n_instances, 30);
    cr_expect(fabs(st.lo - (0.6 - 0.248414)) < 1e-5 && fabs(st.hi - (0.6 + 0.248414)) < 1e-5, "[%g, %g]", st.lo,
              st.hi);
    lx_rows_release(&r);
    /* 30/30 on every seed: sd 0, the t interval is [1, 1]; Wilson's of 30/30
    ** widens it to [30 / (30 + z^2), 1] = [0.886487, 1]. */
    add_acc(&r, 1, 1, 10), add_acc(&r, 2, 1, 10), add_acc(&r, 3, 1, 10);
    stat_of(&r, &st);
    cr_expect(fabs(st.lo - 0.886487) < 1e-6 && st.hi == 1.0, "[%g, %g]", st.lo, st.hi);
    lx_rows_release(&r);
    /* a seed without its count: no pooled instances, the t interval alone */
    add_acc(&r, 1, 1, 10), add_acc(&r, 2, 1, 0);
    stat_of(&r, &st);
    cr_expect_eq(st.n_instances, 0);
    cr_expect(st.lo == 1.0 && st.hi == 1.0, "[%g, %g]", st.lo, st.hi);
    lx_rows_release(&r);
    /* 0, 0 and 5 of 10: mean 1/6, sd 0.288675, t half-width 4.30265 *
    ** 0.288675 / sqrt(3) = 0.717108 reaches below 0; an accuracy's interval
    ** stops at 0 (and at 1) */
    add_acc(&r, 1, 0, 10), add_acc(&r, 2, 0, 10), add_acc(&r, 3, 0.5, 10);
    stat_of(&r, &st);
    cr_expect(st.lo == 0.0 && fabs(st.hi - (1.0 / 6 + 0.717108)) < 1e-5, "[%g, %g]", st.lo, st.hi);
    lx_rows_release(&r);
    add_acc(&r, 1, 1, 10), add_acc(&r, 2, 1, 10), add_acc(&r, 3, 0.5, 10);
    stat_of(&r, &st);
    cr_expect(st.hi == 1.0 && fabs(st.lo - (5.0 / 6 - 0.717108)) < 1e-5, "[%g, %g]", st.lo, st.hi);
    lx_rows_release(&r);
    /* one seed: no interval */
    add_acc(&r, 1, 0.5, 10);
    stat_of(&r, &st);
    cr_expect(isnan(st.lo) && isnan(st.hi));
    lx_rows_release(&r);
}

/* The error bar a plot draws: the interval over seeds, else mean -/+ the
** stored se; an accuracy's stops at 0 and 1 (a report drew 0, 0 and 5 of 10
** with a bar down to -0.55), any other metric's does not. */
Test(seeds, error_bars_are_the_interval_and_an_accuracys_stays_in_0_1)
{
    struct lx_rows r = {0};
    struct lx_cell_stat st;
    add_acc(&r, 1, 0, 10), add_acc(&r, 2, 0, 10), add_acc(&r, 3, 0.5, 10);
    stat_of(&r, &st);
    cr_expect(st.bar_lo == 0.0 && st.bar_hi == st.hi, "[%g, %g] against [%g, %g]", st.bar_lo, st.bar_hi, st.lo, st.hi);
    lx_rows_release(&r);
    /* one seed, 0.95 with se 0.07: [0.88, 1], not 1.02 */
    add_acc(&r, 1, 0.95, 10);
    lx_rows_add(&r, "s", "m", "passkey", "k1", NULL, 64, 1, "acc_se", 0.07, r.n + 1);
    stat_of(&r, &st);
    cr_expect(fabs(st.bar_lo - 0.88) < 1e-12 && st.bar_hi == 1.0, "[%g, %g]", st.bar_lo, st.bar_hi);
    lx_rows_release(&r);
    /* one seed without a stored se: no bar */
    add_acc(&r, 1, 0.5, 10);
    stat_of(&r, &st);
    cr_expect(isnan(st.bar_lo) && isnan(st.bar_hi));
    lx_rows_release(&r);
    /* a log-probability is not a share: its bar goes where the se says */
    lx_rows_add(&r, "s", "m", "passkey", "k1", NULL, 64, 1, "answer_logprob", 0.5, 1);
    lx_rows_add(&r, "s", "m", "passkey", "k1", NULL, 64, 1, "answer_logprob_se", 0.7, 2);
    char *label[2] = {"m", "m"};
    lx_cell_stat(&r, label, "s", "passkey", "m", 64, "answer_logprob", &st);
    cr_expect(fabs(st.bar_lo + 0.2) < 1e-12 && fabs(st.bar_hi - 1.2) < 1e-12, "[%g, %g]", st.bar_lo, st.bar_hi);
    lx_rows_release(&r);
}

/* ---- lx_compare_pooled ---- */

static void add_x(struct lx_rows *r, long seed, const char *metric, double v)
{
    char key[17];
    snprintf(key, sizeof key, "k%ld", seed);
    lx_rows_add(r, "s", "m", "t", key, NULL, 100, seed, metric, v, r->n + 1);
}

static int pooled(const struct lx_rows *b, const struct lx_rows *h, double sigma, struct lx_compare_counts *c,
                  struct lx_buf *out)
{
    struct lx_compare_opts o = {.rtol = 1e-6, .atol = 1e-9, .sigma = sigma};
    struct lx_error err = {{0}};
    lx_buf_reset(out);
    return lx_compare(b, h, &o, out, c, &err);
}

Test(seeds, pooled_compare_by_hand)
{
    struct lx_rows b = {0}, h = {0};
    struct lx_compare_counts c;
    struct lx_buf out = {0};
    /* base seeds 1-3: 1, 2, 3 (mean 2, sd 1, se 1/sqrt 3); head seeds 4-6: 2,
    ** 3, 4 (mean 3, se 1/sqrt 3): diff 1, combined se sqrt(2/3) = 0.8165,
    ** 1.2247 standard errors */
    for (int s = 1; s <= 3; s++) {
        add_x(&b, s, "x", s), add_x(&b, s, "x_se", 0.1);
        add_x(&h, s + 3, "x", s + 1), add_x(&h, s + 3, "x_se", 0.1);
    }
    cr_assert_eq(pooled(&b, &h, 1.2, &c, &out), LX_OK);
    cr_expect_eq(c.n_values, 1, "x_se is an uncertainty, not a value");
    cr_expect_eq(c.n_cells, 1);
    cr_expect_eq(c.n_moved, 1, "%s", lx_buf_str(&out));
    cr_expect(strstr(lx_buf_str(&out), "| t | m | 100 | 3/3 | x | 2 | 3 | +1 | +1.22 |") != NULL, "%s",
              lx_buf_str(&out));
    cr_assert_eq(pooled(&b, &h, 1.25, &c, &out), LX_OK);
    cr_expect_eq(c.n_moved, 0, "%s", lx_buf_str(&out));
    lx_rows_release(&b);
    lx_rows_release(&h);
    /* the same with stored se 3 on every seed: the floor sqrt(mean se² / n) =
    ** sqrt(3) beats the spread's 1/sqrt 3; combined sqrt 6 = 2.449, 0.408 se */
    for (int s = 1; s <= 3; s++) {
        add_x(&b, s, "x", s), add_x(&b, s, "x_se", 3);
        add_x(&h, s + 3, "x", s + 1), add_x(&h, s + 3, "x_se", 3);
    }
    cr_assert_eq(pooled(&b, &h, 0.4, &c, &out), LX_OK);
    cr_expect_eq(c.n_moved, 1, "%s", lx_buf_str(&out));
    cr_assert_eq(pooled(&b, &h, 0.41, &c, &out), LX_OK);
    cr_expect_eq(c.n_moved, 0, "%s", lx_buf_str(&out));
    lx_rows_release(&b);
    lx_rows_release(&h);
    /* every se 0 (an accuracy of 1 on every seed): a last-bit difference is
    ** within --rtol, not infinitely many standard errors; 1 against 0.5 moves */
    for (int s = 1; s <= 3; s++) {
        add_x(&b, s, "x", 1), add_x(&b, s, "x_se", 0), add_x(&b, s, "y", 1), add_x(&b, s, "y_se", 0);
        add_x(&h, s + 3, "x", 1 - 0x1p-53), add_x(&h, s + 3, "x_se", 0);
        add_x(&h, s + 3, "y", 0.5), add_x(&h, s + 3, "y_se", 0);
    }
    cr_assert_eq(pooled(&b, &h, 3, &c, &out), LX_OK);
    cr_expect_eq(c.n_moved, 1, "%s", lx_buf_str(&out));
    cr_expect(strstr(lx_buf_str(&out), "| y |") != NULL && strstr(lx_buf_str(&out), "| x |") == NULL, "%s",
              lx_buf_str(&out));
    lx_rows_release(&b);
    lx_rows_release(&h);
    /* one seed a side: the stored se; 10 ± 1 against 13 ± 1: 3 / sqrt 2 = 2.1213 se.
    ** y has no se on either side: compared with the tolerances, and counted */
    add_x(&b, 1, "x", 10), add_x(&b, 1, "x_se", 1), add_x(&b, 1, "y", 1);
    add_x(&h, 2, "x", 13), add_x(&h, 2, "x_se", 1), add_x(&h, 2, "y", 1.5);
    cr_assert_eq(pooled(&b, &h, 2.12, &c, &out), LX_OK);
    cr_expect_eq(c.n_moved, 2, "x at 2.12, y beyond the tolerance: %s", lx_buf_str(&out));
    cr_expect_eq(c.n_no_se, 1);
    cr_assert_eq(pooled(&b, &h, 2.13, &c, &out), LX_OK);
    cr_expect_eq(c.n_moved, 1, "y only: %s", lx_buf_str(&out));
    cr_expect(strstr(lx_buf_str(&out), "| y | 1 | 1.5 | +0.5 | – |") != NULL, "%s", lx_buf_str(&out));
    /* one seed twice under two run keys: two configurations, refused */
    lx_rows_add(&h, "s", "m", "t", "other", NULL, 100, 2, "x", 12, h.n + 1);
    struct lx_compare_opts o = {.rtol = 1e-6, .atol = 1e-9, .sigma = 3, .head_name = "H"};
    struct lx_error err = {{0}};
    cr_expect_eq(lx_compare(&b, &h, &o, &out, &c, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "H holds two configurations of one cell") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, ", seed 2, metric x): run key k2 (13) and run key other (12)") != NULL, "%s", err.msg);
    lx_rows_release(&h);
    /* seeds 1 and 2 of two configurations (their hashes differ): the message names both seeds */
    add_x(&h, 1, "x", 11), add_x(&h, 2, "x", 12);
    lx_rows_set_origin(&h, 0, "", "c1c1c1c1c1c1c1c1");
    lx_rows_set_origin(&h, 1, "", "c2c2c2c2c2c2c2c2");
    cr_expect_eq(lx_compare(&b, &h, &o, &out, &c, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, ", seeds 1 and 2, metric x): run key k1 (11) and run key k2 (12)") != NULL, "%s",
              err.msg);
    lx_rows_release(&b);
    lx_rows_release(&h);
    lx_buf_free(&out);
}

/* ---- end to end ---- */

static void setup(void)
{
    shell_setup("seeds");
}

/* configs/gaussian.yaml (4 methods, lengths 100 to 10,000) as sweep `name`
** with the seeds `seeds`. */
static void write_sweep(const char *name, const char *seeds)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "sed 's/^name: gaussian$/name: %s/; s/^seed: 1$/seeds: [%s]/' "
                    "$R/configs/gaussian.yaml > %s.yaml && grep -c '^seeds: \\[%s\\]$' %s.yaml", name, seeds, name,
                    seeds, name), 0, "%s", out);
}

/* The CSV at path with every row of (method, length, metric) moved down by 10
** combined standard errors, written to out_name; the se computed here from
** the rows as docs/results.md defines it; out_name in the test's folder: the larger of sd/sqrt(k) and
** sqrt(mean(<metric>_se²)/k) over the k seeds, two equal sides combined
** (sqrt 2). */
static void shift_by_10_se(const char *path, const char *out_name, const char *method, long length,
                           const char *metric)
{
    struct lx_rows r = {0};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_csv_read(path, &r, &err), LX_OK, "%s", err.msg);
    char se_name[64];
    snprintf(se_name, sizeof se_name, "%s_se", metric);
    double sum = 0, ss = 0, se2 = 0;
    int k = 0, k_se = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < r.n; i++) {
            const struct lx_row *w = &r.rows[i];
            if (strcmp(w->method, method) || w->length != length)
                continue;
            if (pass == 0 && !strcmp(w->metric, metric))
                sum += w->value, k++;
            else if (pass == 0 && !strcmp(w->metric, se_name))
                se2 += w->value * w->value, k_se++;
            else if (pass == 1 && !strcmp(w->metric, metric))
                ss += (w->value - sum / k) * (w->value - sum / k);
        }
    cr_assert(k == 3 && k_se == 3, "%d seeds, %d se", k, k_se);
    double spread = sqrt(ss / (k - 1) / k), own = sqrt(se2 / k / k), shift = 10 * sqrt(2) * fmax(spread, own);
    cr_assert_gt(shift, 0);
    for (int i = 0; i < r.n; i++)
        if (!strcmp(r.rows[i].method, method) && r.rows[i].length == length && !strcmp(r.rows[i].metric, metric))
            r.rows[i].value -= shift;
    struct lx_buf csv = {0};
    lx_render(&r, LX_FMT_CSV, NULL, &csv);
    write_file(out_name, lx_buf_str(&csv));
    lx_buf_free(&csv);
    lx_rows_release(&r);
}

Test(seeds, three_seeds_against_three_others_flag_nothing_a_10_se_shift_is_flagged, .init = setup,
     .fini = teardown, .timeout = 180)
{
    char out[16384];
    write_sweep("a", "1, 2, 3");
    write_sweep("b", "10, 11, 12");
    cr_assert_eq(sh(out, sizeof out, "$L run a.yaml --db r.db --quiet --no-table && "
                    "$L run b.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert(exists("r.db"));
    cr_assert_eq(sql_long("r.db", "SELECT count(*) FROM runs WHERE status = 'ok'"), 2 * 4 * 3 * 3, "2 sweeps of 36 cells");
    cr_expect_eq(sh(out, sizeof out, "$L compare a b --db r.db --sigma 3"), 0, "%s", out);
    cr_expect(strstr(out, " in 12 cells compared, 0 moved beyond 3 combined standard errors; 0 values only in base, "
                     "0 only in head") != NULL && strstr(out, "without a standard error") == NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare a b --db r.db"), 2, "seeds differ: no cell in common: %s", out);
    /* the baseline: a's CSV with one value (none at 1000, entropy) 10 standard errors higher */
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --sweep a --format csv > a.csv"), 0, "%s", out);
    char a_csv[128];
    snprintf(a_csv, sizeof a_csv, "%s/a.csv", dir);
    shift_by_10_se(a_csv, "shifted.csv", "none", 1000, "entropy");
    cr_expect_eq(sh(out, sizeof out, "$L compare shifted.csv a --db r.db --sigma 3"), 1, "%s", out);
    cr_expect(strstr(out, " 1 moved beyond 3 combined standard errors") != NULL, "%s", out);
    cr_expect(strstr(out, "| none | 1000 | 3/3 | entropy |") != NULL, "%s", out);
    cr_expect(strstr(out, " | +10 |\n") != NULL, "10 standard errors up from the baseline: %s", out);
    /* the plain tolerance compare is still the default: a against its own CSV */
    cr_expect_eq(sh(out, sizeof out, "$L compare a.csv a --db r.db --rtol 0 --atol 0"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare a b --db r.db --sigma -1"), 2, "%s", out);
    cr_expect(strstr(out, "--sigma must be a non-negative number") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare a b --db r.db --sigma 0"), 2, "%s", out);
    cr_expect(strstr(out, "--sigma must be above 0, got '0'\n  hint:") != NULL, "%s", out);
}

/* Rows of the tidy CSV name in the test's folder. */
static void read_csv(const char *name, struct lx_rows *r)
{
    char path[256];
    struct lx_error err = {{0}};
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(lx_csv_read(path, r, &err), LX_OK, "%s", err.msg);
}

/* lenx table --sweep a+b pools two sweeps as one, a+b: b adds seed 3 to a's
** seeds 1 and 2 and repeats seed 2 (the same run keys), which counts once. The
** pooled mean is checked against the mean of the pooled CSV's three values. */
Test(seeds, table_pools_sweeps_a_cell_in_both_once, .init = setup, .fini = teardown, .timeout = 180)
{
    char out[16384];
    write_sweep("a", "1, 2");
    write_sweep("b", "2, 3");
    cr_assert_eq(sh(out, sizeof out, "$L run a.yaml --db r.db --quiet --no-table && "
                    "$L run b.yaml --db r.db --quiet --no-table && "
                    "$L table --db r.db --sweep a --format csv > a.csv && "
                    "$L table --db r.db --sweep b --format csv > b.csv && "
                    "$L table --db r.db --sweep a+b --format csv > ab.csv"), 0, "%s", out);
    struct lx_rows a = {0}, b = {0}, ab = {0};
    read_csv("a.csv", &a), read_csv("b.csv", &b), read_csv("ab.csv", &ab);
    int b2 = 0, seeds[4] = {0}, other = 0, same2 = 0, k = 0;
    double sum = 0;
    for (int i = 0; i < b.n; i++)
        b2 += b.rows[i].seed == 2;
    for (int i = 0; i < ab.n; i++) {
        const struct lx_row *w = &ab.rows[i];
        other += strcmp(w->sweep, "a+b") != 0;
        seeds[w->seed >= 1 && w->seed <= 3 ? w->seed : 0]++;
        for (int j = 0; w->seed == 2 && j < a.n; j++)    /* seed 2's values are a's */
            same2 += !strcmp(a.rows[j].key, w->key) && !strcmp(a.rows[j].metric, w->metric) &&
                     a.rows[j].value == w->value;
        if (!strcmp(w->method, "none") && w->length == 1000 && !strcmp(w->metric, "entropy"))
            sum += w->value, k++;
    }
    cr_expect(a.n > 0 && a.n == b.n && b2 == a.n / 2, "%d %d %d", a.n, b.n, b2);
    cr_expect_eq(ab.n, a.n + b.n - b2, "seed 2 once");
    cr_expect_eq(other, 0, "every row's sweep is a+b");
    cr_expect(seeds[0] == 0 && seeds[1] == b2 && seeds[2] == b2 && seeds[3] == b2, "%d %d %d %d", seeds[0], seeds[1],
              seeds[2], seeds[3]);
    cr_expect_eq(same2, b2);
    cr_assert_eq(k, 3);
    int n_a = a.n, n_ab = ab.n;
    lx_rows_release(&a), lx_rows_release(&b), lx_rows_release(&ab);
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --sweep a+b --metric entropy"), 0, "%s", out);
    cr_expect(strstr(out, "### a+b · ") != NULL && strstr(out, "(n=3)") && !strstr(out, "(n=2)") &&
                  !strstr(out, "(n=4)"), "%s", out);
    char cell[96];
    snprintf(cell, sizeof cell, "| %.4g [", sum / 3);     /* the second column: 1000 */
    const char *row = strstr(out, "| none | "), *at = row ? strstr(row, " (n=3) |") : NULL;
    cr_expect(at && !strncmp(at + 7, cell, strlen(cell)), "none at 1000: %s in %s", cell, out);
    /* the report pools them alike, each sweep's provenance under its name */
    cr_assert_eq(sh(out, sizeof out, "$L report --db r.db --sweep a+b -o r.html && grep -c 'n=3</small>' r.html && "
                    "grep -c 'n=[124]</small>' r.html; grep -o '<h[24]>sweep [^<]*' r.html"), 0, "%s", out);
    int n3 = 0, other_n = -1;
    cr_expect(sscanf(out, "%d %d", &n3, &other_n) == 2 && n3 > 0 && other_n == 0, "%s", out);
    cr_expect(strstr(out, "<h2>sweep a+b\n<h4>sweep a\n<h4>sweep b\n") != NULL, "%s", out);
    /* compare reads a pooled side as table writes it: every value of ab.csv; a's seeds 1 and 2 in it;
    ** with the commit as a side, --sweep a+b selects the same values as ab.csv */
    cr_assert_eq(sh(out, sizeof out, "$L compare ab.csv a+b --db r.db && $L compare a a+b --db r.db && "
                    "$L compare ab.csv \"$(sqlite3 r.db 'select git_commit from runs limit 1')\" "
                    "--sweep a+b --db r.db"),
                 0, "%s", out);
    int counts[3] = {0}, m = 0;
    for (const char *v = out; m < 3 && (v = strstr(v, " values in ")); v++) {
        const char *line = v;
        while (line > out && line[-1] != '\n')
            line--;
        cr_assert_eq(sscanf(line, "%d", &counts[m++]), 1, "%s", out);
    }
    cr_expect(m == 3 && counts[0] == n_ab && counts[1] == n_a && counts[2] == n_ab, "%d %d %d of %d, %d: %s",
              counts[0], counts[1], counts[2], n_ab, n_a, out);
    cr_expect_eq(sh(out, sizeof out, "$L compare ab.csv a+c --db r.db"), 2, "%s", out);
    cr_expect(strstr(out, "no sweep 'c' in r.db (its sweeps: a, b)") != NULL, "%s", out);
    /* a sweep not stored, an empty name */
    cr_expect_eq(sh(out, sizeof out, "$L report --db r.db --sweep a+c -o c.html"), 2, "%s", out);
    cr_expect(strstr(out, "no sweep 'c' in r.db (its sweeps: a, b)") != NULL && !exists("c.html"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --sweep a+c"), 2, "%s", out);
    cr_expect(strstr(out, "no sweep 'c' in r.db (its sweeps: a, b)") != NULL, "%s", out);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --sweep %s", (const char *[]){"a++b", "a+", "+a"}[i]), 2,
                     "%s", out);
        cr_expect(strstr(out, "an empty or overlong name\n  hint: --sweep A+B pools") != NULL, "%s", out);
    }
}

/* A cell whose numbers cannot change with the seed (ppl's fixed windows on a brought checkpoint that no
** stack fine-tunes) ran once per seed and stored the same numbers again, shown as a zero-width interval over
** "seeds" that were copies. It runs once, under the first seed, with its key as before (the key a one-seed
** sweep gives it), and the plan says so; passkey, whose instances the seed draws, and a fine-tuning, which
** the seed trains, still run once per seed. */
Test(seeds, a_cell_the_seed_cannot_change_runs_once, .init = setup, .fini = teardown, .timeout = 120)
{
    static char out[1 << 15];
    if (sh(out, sizeof out, "test -r $R/../shared/models/stories260K/stories260K.bin") != 0)
        cr_skip_test("stories260K is absent (the shared test data beside the checkout)");
    char body[2048], yaml[2200];
    snprintf(body, sizeof body, "models:\n  s: {checkpoint: %s/../shared/models/stories260K/stories260K.bin}\n"
             "methods:\n  - [{rope: {layout: interleaved}}]\n  - [{rope: {layout: interleaved, finetune: {steps: 1, "
             "batch: 1, length: 256}}}]\ntasks:\n  - ppl: {windows: 1}\n  - passkey: {template: short, samples: 1, "
             "depths: 1}\nlengths: [256]\n", getenv("LENX_ROOT"));
    snprintf(yaml, sizeof yaml, "name: k\nseeds: [1, 2]\n%s", body);
    write_file("k.yaml", yaml);
    snprintf(yaml, sizeof yaml, "name: k\nseed: 1\n%s", body);
    write_file("one.yaml", yaml);
    cr_assert_eq(sh(out, sizeof out, "$L run k.yaml --db k.db --dry-run 2> plan.err"), 0, "%s", out);
    cr_expect(strstr(out, "sweep k: 7 cells") != NULL, "ppl on the plain checkpoint once, the other 3 twice: %s", out);
    char ppl_key[64] = "";
    const char *line = strstr(out, "ppl(windows=1)  rope(layout=interleaved)  length=256 seed=1");
    cr_assert_not_null(line, "%s", out);
    while (line > out && line[-1] != '\n')
        line--;
    snprintf(ppl_key, sizeof ppl_key, "%.16s", line + 2);
    cr_expect(strstr(out, "ppl(windows=1)  rope(layout=interleaved)  length=256 seed=2") == NULL, "%s", out);
    cr_expect(strstr(out, "passkey(template=short,samples=1,depths=1)  rope(layout=interleaved)  length=256 "
                          "seed=2") != NULL, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "cat plan.err"), 0);
    cr_expect(strstr(out, "lenx: warning: k.yaml:9:5: task 'ppl(windows=1)' on model 's' draws nothing from the "
                          "seed") && strstr(out, "runs once, under seed 1, not once for each of the 2 seeds"), "%s",
              out);
    cr_assert_eq(sh(out, sizeof out, "$L run one.yaml --db one.db --dry-run 2>/dev/null | grep -c '%s  ppl'", ppl_key),
                 0, "the one-seed sweep plans the same key: %s", out);
}
