/*
** methods/kerple.c - KERPLE's logarithmic kernel, a learned relative bias.
**
** Chi, Fan, Ramadge, Rudnicky, "KERPLE: Kernelized Relative Positional
** Embedding for Length Extrapolation", NeurIPS 2022, arXiv 2205.09921, §4
** (the logarithmic variant); the code is chijames/KERPLE's ParallelKerpleLog
** (megatron/mpu/layers.py). No position embedding: the logit of the key t
** positions back gets
**
**     L_t = S_t − p_h·ln(1 + a_h·t)        (a = 1, m = −p_h·ln(1 + a_h·t))
**
** with p_h, a_h > 0 learned per head and shared by every layer (the model's
** tensor kerple, (p, a) per head), drawn p ~ 2·U(0, 1), a ~ U(0, 1) and kept
** at or above 0.01 (the code clamps both before every forward; lenx clamps
** after every optimizer step and at the draw, the same values at every
** forward). Like ALiBi it is added after the 1/sqrt(d) scaling; like T5's
** bias (t5bias) it is the stack's last logit transform, so its gradient is
** the logit's. t is |δ|, the effective distance after any position map.
** Formula, gradient and the comparison: docs/methods.md#kerple.
*/
#include <math.h>

#include "methods/method.h"

#define KERPLE_EPS 0.01     /* the code's clamp: LX_KERPLE_EPS, which training keeps */

/* Head h's p and a, floored as the code floors them. */
static void kerple_pa(const float *theta, double *p, double *a)
{
    *p = fmax((double)theta[0], KERPLE_EPS);
    *a = fmax((double)theta[1], KERPLE_EPS);
}

static void kerple_dist_affine(const void *params, const struct lx_facts *f, int head, double t, double *a,
                               double *m)
{
    (void)params;
    double p, s;
    *a = 1.0;
    *m = 0.0;
    if (!f->rel_bias || t <= 0)
        return;
    kerple_pa(f->rel_bias + 2L * head, &p, &s);
    *m = -p * log1p(s * t);
}

/* ∂m/∂p = −ln(1 + a·t), ∂m/∂a = −p·t / (1 + a·t), summed against g(t). */
static void kerple_pull(const struct lx_relbias *r, const float *theta, const double *g, long n, double *dtheta)
{
    (void)r;
    double p, a, dp = 0.0, da = 0.0;
    kerple_pa(theta, &p, &a);
    for (long t = 1; t < n; t++) {
        dp -= g[t] * log1p(a * (double)t);
        da -= g[t] * p * (double)t / (1.0 + a * (double)t);
    }
    dtheta[0] += dp;
    dtheta[1] += da;
}

static int kerple_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec, struct lx_error *err)
{
    (void)f;
    int rc = lx_spec_claim_positions(spec, "kerple", err);
    struct lx_logit_op op = {
        .kind = LX_OP_DIST_AFFINE, .method = "kerple", .params = params,
        .dist_affine = kerple_dist_affine,
    };
    if (rc == LX_OK && (rc = lx_spec_push(spec, &op, err)) == LX_OK)
        spec->rel = (struct lx_relbias){.method = "kerple", .values = 2, .pull = kerple_pull};
    return rc;
}

const struct lx_method lx_method_kerple = {
    .name = "kerple",
    .summary = "learned log kernel -p_h*ln(1 + a_h*t) per head, Chi et al. 2022 (KERPLE, arXiv 2205.09921)",
    .schema = LX_SCHEMA_NONE,     /* no parameters: p and a are the model's */
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_MODEL,
    .apply = kerple_apply,
};
