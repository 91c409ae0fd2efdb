/*
** methods/kerple.c - KERPLE's learned kernels, a learned relative bias.
**
** Chi, Fan, Ramadge, Rudnicky, "KERPLE: Kernelized Relative Positional
** Embedding for Length Extrapolation", NeurIPS 2022, arXiv 2205.09921, §4;
** the code is chijames/KERPLE's ParallelKerpleLog and ParallelKerplePower
** (megatron/mpu/layers.py; the power kernel as its released kerple_power_ap_
** runs it, bias only). No position embedding: the logit of the key t
** positions back gets
**
**     log:    L_t = S_t − p_h·ln(1 + a_h·t)      (a = 1, m = −p_h·ln(1 + a_h·t))
**     power:  L_t = S_t − a_h·t^p_h              (a = 1, m = −a_h·t^p_h)
**
** with p_h, a_h > 0 learned per head and shared by every layer (the model's
** tensor kerple, (p, a) per head), drawn p ~ 2·U(0, 1), a ~ U(0, 1) for either
** kernel and kept at or above 0.01, the power kernel's p at most 2 (the code
** clamps before every forward; lenx clamps after every optimizer step and at
** the draw, the same values at every forward: LX_KERPLE_EPS, LX_KERPLE_PMAX).
** Like ALiBi it is added after the 1/sqrt(d) scaling; like T5's bias (t5bias)
** it is the stack's last logit transform, so its gradient is the logit's. t
** is |δ|, the effective distance after any position map.
** Formula, gradient and the comparison: docs/methods.md#kerple.
*/
#include <math.h>

#include "methods/method.h"

enum { KERPLE_LOG, KERPLE_POWER };

struct kerple_params {
    int kernel;         /* KERPLE_LOG or KERPLE_POWER */
};

static const struct lx_param kerple_rows[] = {
    LX_P_ENUM(struct kerple_params, kernel, "log", "log|power", 0,
              "log: -p*ln(1 + a*t) (ParallelKerpleLog); power: -a*t^p, p <= 2 (ParallelKerplePower)"),
};

/* The kernel is named only away from its default, so the log
** kernel's cells keep their keys. */
static const struct lx_param_rule kerple_rules[] = {
    {"kernel", "kernel=power"},
    {NULL, NULL},
};

/* Head h's p and a, clamped as the code clamps them. */
static void kerple_pa(int kernel, const float *theta, double *p, double *a)
{
    *p = fmax((double)theta[0], LX_KERPLE_EPS);
    *a = fmax((double)theta[1], LX_KERPLE_EPS);
    if (kernel == KERPLE_POWER)
        *p = fmin(*p, LX_KERPLE_PMAX);
}

static void kerple_dist_affine(const void *params, const struct lx_facts *f, int head, double t, double *a,
                               double *m)
{
    const struct kerple_params *k = params;
    double p, s;
    *a = 1.0;
    *m = 0.0;
    if (!f->rel_bias || t <= 0)
        return;
    kerple_pa(k->kernel, f->rel_bias + 2L * head, &p, &s);
    *m = k->kernel == KERPLE_POWER ? -s * pow(t, p) : -p * log1p(s * t);
}

/* log: ∂m/∂p = −ln(1 + a·t), ∂m/∂a = −p·t / (1 + a·t); power: ∂m/∂p =
** −a·t^p·ln t, ∂m/∂a = −t^p; summed against g(t). t = 0 adds nothing (m is
** 0 there for every p and a). The clamps pass the gradient through, as
** the code's in-place clamp of the parameter's data does. */
static void kerple_pull(const struct lx_relbias *r, const float *theta, const double *g, long n, double *dtheta)
{
    int kernel = r->kind == LX_REL_KERPLE_POWER ? KERPLE_POWER : KERPLE_LOG;
    double p, a, dp = 0.0, da = 0.0;
    kerple_pa(kernel, theta, &p, &a);
    for (long t = 1; t < n; t++) {
        double x = (double)t;
        if (kernel == KERPLE_POWER) {
            double tp = pow(x, p);
            dp -= g[t] * a * tp * log(x);
            da -= g[t] * tp;
        } else {
            dp -= g[t] * log1p(a * x);
            da -= g[t] * p * x / (1.0 + a * x);
        }
    }
    dtheta[0] += dp;
    dtheta[1] += da;
}

static int kerple_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec, struct lx_error *err)
{
    (void)f;
    const struct kerple_params *k = params;
    int rc = lx_spec_claim_positions(spec, "kerple", err);
    struct lx_logit_op op = {
        .kind = LX_OP_DIST_AFFINE, .method = "kerple", .params = params,
        .dist_affine = kerple_dist_affine,
    };
    if (rc == LX_OK && (rc = lx_spec_push(spec, &op, err)) == LX_OK)
        spec->rel = (struct lx_relbias){
            .method = "kerple", .values = 2, .pull = kerple_pull,
            .kind = k->kernel == KERPLE_POWER ? LX_REL_KERPLE_POWER : LX_REL_KERPLE_LOG,
        };
    return rc;
}

const struct lx_method lx_method_kerple = {
    .name = "kerple",
    .summary = "learned kernel per head, -p_h*ln(1 + a_h*t) or -a_h*t^p_h, Chi et al. 2022 (KERPLE, arXiv "
               "2205.09921)",
    .schema = LX_SCHEMA(kerple_rows, struct kerple_params, kerple_rules),
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_MODEL,     /* p and a are the model's */
    .apply = kerple_apply,
};
