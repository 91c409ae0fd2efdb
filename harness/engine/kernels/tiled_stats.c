/*
** harness/engine/kernels/tiled_stats.c - the row statistics the tiled forward
** sums as it goes (attention.h, "Row statistics from the tiles"): per row of a
** query block, sums in e = exp(l − m) rescaled when the running max moves, and
** each row's statistics from them after its last tile.
*/
#include "harness/engine/kernels/tiled_impl.h"

#include <math.h>
#include <string.h>

size_t lx_tile_acc_doubles(int bq)
{
    return (size_t)bq * (sizeof(struct rowacc) / sizeof(double));
}

/* The running max moves by dm = m − m' < 0 (α = e^dm): rescale the sums in e;
** l is the row's sum Σ e before the move. */
void lx_tile_acc_rescale(struct rowacc *A, const struct lx_tile_stats *st, double al, double dm, double l)
{
    int nr = st->ranges ? st->ranges->n : 0;
    A->u = al > 0.0 ? al * (A->u + dm * l) : 0.0;
    A->first *= al;
    if (st->buckets)
        for (int k = 0; k < LX_DIAG_BUCKETS; k++)
            A->bucket[k] *= al;
    for (int r = 0; r < nr; r++) {
        A->um[r] = al > 0.0 ? al * (A->um[r] + dm * A->mass[r]) : 0.0;
        A->mass[r] *= al;
    }
}

/* Σ e and Σ e (lg − m) over the tile columns in [c0, c1) whose key is at a
** distance in [lo, hi) from the row's (column d: key j0 + d is the query):
** two runs of columns, before and after d. */
static void dist_sums(const float *lg, const float *e, float m, long d, long c0, long c1, long lo, long hi,
                      double *se, double *su)
{
    double a = 0.0, u = 0.0;
    for (int side = 0; side < 2; side++) {
        long r0 = side ? d + (lo > 1 ? lo : 1) : d - hi + 1, r1 = side ? d + hi : d - lo + 1;
        r0 = r0 > c0 ? r0 : c0;
        r1 = r1 < c1 ? r1 : c1;
#pragma omp simd reduction(+ : a, u)
        for (long c = r0; c < r1; c++) {
            a += e[c];
            u += e[c] * ((double)lg[c] - m);
        }
    }
    *se += a;
    if (su)
        *su += u;
}

/* Add tile columns [c0, c1) of row i: lg the logits, e = exp(lg − m) (0 below
** the floor); buckets and ranges as runs of columns at their distances. */
void lx_tile_acc_add(struct rowacc *A, const struct lx_tile_stats *st, const float *lg, const float *e, float m,
                    long i, long j0, long c0, long c1)
{
    double su = 0.0, s1 = 0.0, s2 = 0.0;
#pragma omp simd reduction(+ : su, s1, s2)
    for (long c = c0; c < c1; c++) {
        double g = lg[c];
        s1 += g;
        s2 += g * g;
        su += (double)e[c] * (g - m);
    }
    A->sum += s1, A->sum2 += s2, A->u += su;
    if (j0 == 0 && c0 == 0 && c1 > 0)
        A->first += e[0];
    long d = i - j0, far = d - c0 > c1 - 1 - d ? d - c0 : c1 - 1 - d;     /* the farthest distance here */
    for (int k = 0; st->buckets && k < LX_DIAG_BUCKETS && lx_diag_bucket_start(k) <= far; k++) {
        long lo = lx_diag_bucket_start(k);
        dist_sums(lg, e, m, d, c0, c1, lo, k ? 2 * lo : 1, &A->bucket[k], NULL);
    }
    for (int r = 0; st->ranges && r < st->ranges->n; r++)
        dist_sums(lg, e, m, d, c0, c1, st->ranges->lo[r], st->ranges->hi[r], &A->mass[r], &A->um[r]);
}

/* Row i's statistics from its sums, Z = Σ e over all its n visible keys (and
** a zero sink, whose probability is ps). */
void lx_tile_acc_finish(struct lx_diag *d, const struct rowacc *A, const struct lx_tile_stats *st, double Z,
                       long n, long i, double ps)
{
    d->first += A->first / Z;
    d->zsink += ps;
    double mean = A->sum / (double)n, var = A->sum2 / (double)n - mean * mean;
    d->pmax += 1.0 / Z;
    d->entropy += log(Z) - A->u / Z;
    d->sigma += sqrt(var > 0.0 ? var : 0.0);
    d->rows += 1.0;
    if (st->buckets)
        for (int k = 0; k < LX_DIAG_BUCKETS; k++)
            d->bucket[k] += A->bucket[k] / Z;
    for (int r = 0; st->ranges && r < st->ranges->n; r++) {
        if (i < st->ranges->hi[r] - 1)
            continue;   /* as lx_diag_row: only rows the whole range fits in */
        double M = A->mass[r];
        d->range_mass[r] += M / Z;
        d->range_entropy[r] += M > 0.0 ? log(M) - A->um[r] / M : 0.0;
        d->range_rows[r] += 1.0;
    }
}
