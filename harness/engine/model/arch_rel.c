/*
** harness/engine/model/arch_rel.c - the learned relative-position bias an
** architecture holds (rows rel_buckets, kerple, kerple_kernel: T5's buckets or
** KERPLE's kernels, set by the stack's t5bias or kerple; see arch.h).
*/
#include "harness/engine/model/arch.h"

#include <math.h>

#include "harness/core/rng.h"
#include "harness/core/spec.h"

void lx_arch_learn_rel(struct lx_arch *a, const struct lx_relbias *r)
{
    int kind = r->method ? r->kind : LX_REL_NONE;
    a->rel_buckets = kind == LX_REL_T5 ? r->buckets : 0;
    a->kerple = kind == LX_REL_KERPLE_LOG || kind == LX_REL_KERPLE_POWER;
    a->kerple_kernel = kind == LX_REL_KERPLE_POWER ? LX_KERPLE_POWER : LX_KERPLE_LOG;
}

int lx_arch_rel_kind(const struct lx_arch *a)
{
    if (a->rel_buckets)
        return LX_REL_T5;
    if (a->kerple)
        return a->kerple_kernel == LX_KERPLE_POWER ? LX_REL_KERPLE_POWER : LX_REL_KERPLE_LOG;
    return LX_REL_NONE;
}

long lx_arch_rel_values(const struct lx_arch *a)
{
    return a->rel_buckets ? a->rel_buckets : a->kerple ? 2 : 0;
}

void lx_arch_rel_keep(const struct lx_arch *a, float *rel_bias)
{
    int kind = lx_arch_rel_kind(a);
    if (kind != LX_REL_KERPLE_LOG && kind != LX_REL_KERPLE_POWER)
        return;
    for (long h = 0; h < a->heads; h++) {
        float *pa = rel_bias + 2 * h;
        pa[0] = fmaxf(pa[0], (float)LX_KERPLE_EPS);
        pa[1] = fmaxf(pa[1], (float)LX_KERPLE_EPS);
        if (kind == LX_REL_KERPLE_POWER)
            pa[0] = fminf(pa[0], (float)LX_KERPLE_PMAX);
    }
}

/* p = 2·u and a = u with u ~ U(0, 1), floored at LX_KERPLE_EPS as the code's
** first forward would (2·u < 2, the power kernel's ceiling). */
void lx_arch_kerple_init(float *p, long cnt, uint64_t key, uint32_t stream)
{
    struct lx_rng r;
    lx_rng_init(&r, key, stream, LX_RNG_INIT);
    for (long j = 0; j < cnt; j++)
        p[j] = (float)fmax((j % 2 ? 1.0 : 2.0) * lx_rng_uniform(&r), LX_KERPLE_EPS);
}
