/*
** harness/core/diag.c - attention-row statistics (see diag.h).
*/
#include "harness/core/diag.h"

#include <math.h>
#include <string.h>

int lx_diag_bucket(long t)
{
    int k = 0;
    while (t > 0) {
        t >>= 1;
        k++;
    }
    return k;
}

long lx_diag_bucket_start(int k)
{
    return k == 0 ? 0 : 1L << (k - 1);
}

static double plogp(double p)
{
    return p > 0.0 ? p * log(p) : 0.0;
}

void lx_diag_row(struct lx_diag *d, const float *p, long i, const struct lx_ranges *rg, double ps)
{
    double h = -plogp(ps), mx = ps;
    for (long j = 0; j <= i; j++) {
        h -= plogp(p[j]);
        if (p[j] > mx)
            mx = p[j];
        d->bucket[lx_diag_bucket(i - j)] += p[j];
    }
    d->entropy += h;
    d->pmax += mx;
    d->rows += 1.0;
    d->first += p[0];
    d->zsink += ps;
    for (int r = 0; r < rg->n; r++) {
        if (i < rg->hi[r] - 1)
            continue;
        double m = 0.0, s = 0.0;
        for (long t = rg->lo[r]; t < rg->hi[r]; t++) {
            m += p[i - t];
            s += plogp(p[i - t]);
        }
        d->range_mass[r] += m;
        d->range_entropy[r] += m > 0.0 ? log(m) - s / m : 0.0;
        d->range_rows[r] += 1.0;
    }
}

void lx_diag_add(struct lx_diag *dst, const struct lx_diag *src)
{
    double *a = (double *)dst;
    const double *b = (const double *)src;
    for (size_t k = 0; k < sizeof *dst / sizeof(double); k++)
        a[k] += b[k];
}

double lx_js_divergence(const double *p, const double *q, int n)
{
    double sp = 0.0, sq = 0.0;
    for (int k = 0; k < n; k++) {
        sp += p[k];
        sq += q[k];
    }
    if (!(sp > 0.0) || !(sq > 0.0))
        return NAN;
    double js = 0.0;
    for (int k = 0; k < n; k++) {
        double a = p[k] / sp, b = q[k] / sq, m = 0.5 * (a + b);
        if (a > 0.0)
            js += 0.5 * a * log(a / m);
        if (b > 0.0)
            js += 0.5 * b * log(b / m);
    }
    return js;
}
