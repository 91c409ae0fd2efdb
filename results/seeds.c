/*
** results/seeds.c - a cell pooled over its seeds, with a 95 % interval
** (docs/results.md#intervals-over-seeds): Student's t interval of the mean
** across training seeds, and for an accuracy whose run stores its instance
** count, the Wilson score interval of the instances pooled over the seeds
** (Wilson 1927, "Probable inference, the law of succession, and statistical
** inference", JASA 22:209). No SQLite here: rows in, numbers out.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "results/views.h"

#define Z975 1.959963984540054      /* the standard normal's 0.975 quantile */

double lx_t975(int df)
{
    /* Student's t 0.975 quantiles for 1..30 degrees of freedom (any table of
    ** the t distribution); past 30 the Cornish-Fisher series in 1/df, whose
    ** error there is below 1e-4 (tests/test_views.c checks both against the
    ** t distribution's integral). */
    static const double t[31] = {NAN,    12.7062, 4.30265, 3.18245, 2.77645, 2.57058, 2.44691, 2.36462,
                                 2.30600, 2.26216, 2.22814, 2.20099, 2.17881, 2.16037, 2.14479, 2.13145,
                                 2.11991, 2.10982, 2.10092, 2.09302, 2.08596, 2.07961, 2.07387, 2.06866,
                                 2.06390, 2.05954, 2.05553, 2.05183, 2.04841, 2.04523, 2.04227};
    if (df < 1)
        return NAN;
    if (df <= 30)
        return t[df];
    double z = Z975, z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z, n = (double)df;
    return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n) +
           (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * n * n * n);
}

void lx_wilson95(double k, double n, double *lo, double *hi)
{
    if (!(n > 0) || k < 0 || k > n) {
        *lo = *hi = NAN;
        return;
    }
    double p = k / n, z2 = Z975 * Z975, d = 1 + z2 / n;
    double centre = (p + z2 / (2 * n)) / d, half = Z975 / d * sqrt(p * (1 - p) / n + z2 / (4 * n * n));
    *lo = k == 0 ? 0.0 : fmax(0.0, centre - half);     /* 0 and 1 are exact roots there; rounding misses them */
    *hi = k == n ? 1.0 : fmin(1.0, centre + half);
}

const char *lx_metric_count(const char *metric, const char *name)
{
    /* accuracies and the metric that counts their instances, as the tasks store them */
    static const char *const pairs[][2] = {{"acc", "n_samples"}, {"acc", "n_masked"}};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
        if (strcmp(metric, pairs[i][0]) == 0 && (!name || strcmp(name, pairs[i][1]) == 0))
            return pairs[i][1];
    return NULL;
}

/* Do rows x and y belong to one stored cell (one run: same sweep, key,
** method, task, length and seed)? */
static int same_run(const struct lx_row *x, const struct lx_row *y)
{
    return x->length == y->length && x->seed == y->seed && !strcmp(x->key, y->key) && !strcmp(x->sweep, y->sweep) &&
           !strcmp(x->task, y->task) && !strcmp(x->method, y->method);
}

/* The instance count stored with metric row i (its run's n_samples or
** n_masked), or NaN. A run's rows are adjacent (the store's order, and a
** CSV export's), so the search stays beside i. */
static double count_of(const struct lx_rows *rows, int i)
{
    for (int dir = -1; dir <= 1; dir += 2)
        for (int j = i + dir; j >= 0 && j < rows->n && same_run(&rows->rows[i], &rows->rows[j]); j += dir)
            if (lx_metric_count(rows->rows[i].metric, rows->rows[j].metric))
                return rows->rows[j].value;
    return NAN;
}

/* [lo, hi] kept inside [0, 1]; a NaN end stays NaN. */
static void clip01(double *lo, double *hi)
{
    if (!isnan(*lo))
        *lo = fmax(0.0, *lo);
    if (!isnan(*hi))
        *hi = fmin(1.0, *hi);
}

void lx_cell_stat(const struct lx_rows *rows, char *const *label, const char *sweep, const char *task,
                  const char *method, long length, const char *metric, struct lx_cell_stat *st)
{
    char se_name[256];
    snprintf(se_name, sizeof se_name, "%s_se", metric);
    double sum = 0, ss = 0, se = NAN, hits = 0, total = 0;
    int n = 0, counted = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < rows->n; i++) {
            const struct lx_row *r = &rows->rows[i];
            if (r->length != length || strcmp(r->sweep, sweep) || strcmp(r->task, task) ||
                strcmp(label[i], method))
                continue;
            if (pass == 0 && strcmp(r->metric, metric) == 0) {
                sum += r->value;
                n++;
                double c = lx_metric_count(metric, NULL) ? count_of(rows, i) : NAN;
                if (c > 0 && r->value >= 0 && r->value <= 1) {
                    hits += nearbyint(r->value * c);
                    total += c;
                    counted++;
                }
            } else if (pass == 0 && strcmp(r->metric, se_name) == 0) {
                se = r->value;
            } else if (pass == 1 && strcmp(r->metric, metric) == 0) {
                ss += (r->value - sum / n) * (r->value - sum / n);
            }
        }
    st->n = n;
    st->mean = n ? sum / n : NAN;
    st->spread = n > 1 ? sqrt(ss / (n - 1)) : n ? se : NAN;
    st->lo = st->hi = NAN;
    st->n_instances = counted == n ? (long)total : 0;
    int share = lx_metric_count(metric, NULL) != NULL;    /* a share of instances: stays inside [0, 1] */
    if (n < 2) {                    /* mean -/+ the stored standard error (NaN when there is none) */
        st->bar_lo = st->mean - st->spread, st->bar_hi = st->mean + st->spread;
        if (share)
            clip01(&st->bar_lo, &st->bar_hi);
        return;
    }
    double half = lx_t975(n - 1) * st->spread / sqrt((double)n);
    st->lo = st->mean - half;
    st->hi = st->mean + half;
    if (st->n_instances > 0) {      /* widened to hold the pooled instances' Wilson interval */
        double wlo, whi;
        lx_wilson95(hits, total, &wlo, &whi);
        st->lo = fmin(st->lo, wlo);
        st->hi = fmax(st->hi, whi);
    }
    if (share)                      /* the t interval may reach past 0 or 1 */
        clip01(&st->lo, &st->hi);
    st->bar_lo = st->lo, st->bar_hi = st->hi;
}
