/*
** harness/core/diag.h - statistics of real attention rows, for the `attn` task and
** anything else that looks at a model's attention probabilities.
**
** For a causal row i (query i sees keys 0 … i, p_j its probability of key j,
** t = i − j the distance):
**
**   entropy            −Σ_j p_j ln p_j                    (nats)
**   pmax               max_j p_j
**   range_mass  [a,b)  M = Σ_{a <= t < b} p_{i−t}          (Anson et al. 2025, §3)
**   range_entropy      entropy of p renormalised on the range:
**                      ln M − (Σ_{a<=t<b} p ln p) / M
**   distance buckets   mass at t = 0, t in [1, 2), [2, 4), … [2^(k−1), 2^k):
**                      the "attention distribution" compared across cells
**                      by Jensen–Shannon divergence (Zhong et al. 2024)
**
**   sigma              std of the row's visible logits (the engine's, from the tiles)
**
** T5's "dispersed attention" statistics (Chi et al. 2024) are the mean entropy
** and mean pmax. A range counts a row only when the whole range fits in it
** (i >= b − 1), so short rows do not dilute long ranges.
*/
#ifndef LX_DIAG_H
#define LX_DIAG_H

#include "harness/core/params.h"

#define LX_DIAG_BUCKETS 40      /* distance buckets: enough for 2^38 tokens */

/* Sums over rows; add rows with lx_diag_row, merge with lx_diag_add. */
struct lx_diag {
    double entropy, pmax, rows;
    double first;                       /* Σ rows of the probability of key 0, the window's first token
                                        ** (where an attention sink forms; 0 once a window drops it) */
    double zsink;                       /* Σ rows of the zero sink's probability (methods/zerosink.c) */
    double sigma;                       /* Σ rows of the std of their visible logits: filled by the
                                        ** engine (lx_diag_row sees probabilities only, so leaves it) */
    double range_mass[LX_MAX_RANGES], range_entropy[LX_MAX_RANGES], range_rows[LX_MAX_RANGES];
    double bucket[LX_DIAG_BUCKETS];     /* Σ rows of the mass in each distance bucket */
};

/* The bucket of distance t >= 0: 0 for t = 0, else floor(log2 t) + 1. */
int lx_diag_bucket(long t);
/* The smallest distance of bucket k (0, 1, 2, 4, 8, …). */
long lx_diag_bucket_start(int k);

/* Add causal row i: p (i + 1,) the probabilities of keys 0 … i, and ps the
** zero sink's (methods/zerosink.c; 0 without one), one more outcome of the
** row's distribution in its entropy and max p. */
void lx_diag_row(struct lx_diag *d, const float *p, long i, const struct lx_ranges *rg, double ps);
void lx_diag_add(struct lx_diag *dst, const struct lx_diag *src);

/* Jensen–Shannon divergence (nats, in [0, ln 2]) of two non-negative vectors
** of n entries, each normalised to sum 1 first; NaN when either sums to 0. */
double lx_js_divergence(const double *p, const double *q, int n);

#endif
