/*
** harness/engine/model/positions.c - PoSE's and randomized position ids (see
** positions.h).
*/
#include "harness/engine/model/positions.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness/core/hash.h"
#include "harness/core/lx.h"
#include "harness/core/rng.h"

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* A uniform integer in [0, n): 53 random bits scaled, clamped where the
** product rounds up to n. */
static long draw_below(struct lx_rng *r, long n)
{
    long t = (long)(lx_rng_uniform(r) * (double)n);
    return t < n ? t : n - 1;
}

/* The home slot of id t in a set of cap (a power of 2) slots. */
static long home_slot(long t, long cap)
{
    return (long)(((uint64_t)t * 0x9E3779B97F4A7C15ULL) >> 32) & (cap - 1);
}

/* Randomized positions: T distinct ids of [0, L) by Floyd's sampling (for j
** = L − T … L − 1 draw t in [0, j]; keep t, or j when t is kept already),
** which makes every T-subset equally likely, then in increasing order. The
** kept ids live in an open-addressed set of twice T slots. */
static void random_positions(int *pos, int T, long L, struct lx_rng *r)
{
    long cap = 1;
    while (cap < 2L * T)
        cap <<= 1;
    long *set = lx_xmalloc(sizeof(long) * (size_t)cap), *kept = lx_xmalloc(sizeof(long) * (size_t)T);
    for (long i = 0; i < cap; i++)
        set[i] = -1;
    for (long j = L - T, n = 0; j < L; j++, n++) {
        long t = draw_below(r, j + 1), h = home_slot(t, cap);
        while (set[h] >= 0 && set[h] != t)
            h = (h + 1) & (cap - 1);
        if (set[h] == t) {          /* t is kept: keep j, new (every id kept so far is below j) */
            t = j;
            for (h = home_slot(t, cap); set[h] >= 0; h = (h + 1) & (cap - 1))
                ;
        }
        set[h] = t;
        kept[n] = t;
    }
    qsort(kept, (size_t)T, sizeof *kept, cmp_long);
    for (int t = 0; t < T; t++)
        pos[t] = (int)kept[t];
    free(kept);
    free(set);
}

void lx_randpos_eval(int *pos, long T, long L)
{
    LX_ASSERT(T >= 1 && T <= L && L <= INT_MAX);
    struct lx_rng r;
    lx_rng_init(&r, lx_hash64("randpos evaluation") ^ (uint64_t)L, (uint32_t)T, LX_RNG_POSITIONS);
    random_positions(pos, (int)T, L, &r);
}

/* Training position ids: see positions.h. */
void lx_pose_positions(int *pos, int T, const struct lx_pose *p, struct lx_rng *r)
{
    if (p->random) {
        random_positions(pos, T, p->target, r);
        return;
    }
    long cut[65];
    int N = p->chunks;
    cut[0] = 0;
    cut[N] = T;
    for (int i = 1; i < N; i++)         /* N − 1 cut points in [1, T − 1] */
        cut[i] = 1 + draw_below(r, T - 1);
    for (int i = 2; i < N; i++)         /* insertion sort */
        for (int j = i; j > 1 && cut[j - 1] > cut[j]; j--) {
            long x = cut[j];
            cut[j] = cut[j - 1];
            cut[j - 1] = x;
        }
    long u = 0, room = p->target - T;
    for (int i = 0; i < N; i++) {
        if (i > 0)
            u += draw_below(r, room - u + 1);
        for (long t = cut[i]; t < cut[i + 1]; t++)
            pos[t] = (int)(u + t);
    }
}
