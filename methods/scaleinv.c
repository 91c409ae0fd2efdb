/*
** methods/scaleinv.c - scale-invariant attention.
**
** Anson, Wang, Aitchison, "Scale-invariant attention", arXiv 2505.17083
** (NeurIPS 2025), §3 (Defs. 3.1-3.4, Lemmas, eq. for a_t and m_t). The logit
** S_t of the key t positions back (t = 0 is the query itself) becomes
**
**     L_t = a_t·S_t + m_t
**     a_t = sqrt( 2·[ ln(t/τ + 1) − ln α + β/α ] ),   m_t = −a_t² + β/α
**
** with α = β = e^0.5 and τ = 10 by default, which gives a_0 = 1, m_0 = 0 and
** E[exp L_t] = α/(t/τ + 1) for standard Gaussian S_t. The paper trains with it.
** Formula, parameters and golden values: docs/methods.md#scaleinv.
*/
#include <math.h>

#include "methods/method.h"

struct scaleinv_params {
    double tau;     /* τ: the distance scale */
    double alpha;   /* α: E[exp L_t] = α/(t/τ + 1) */
    double beta;    /* β: E[exp(L_t)·L_t] = β/(t/τ + 1) */
};

#define SQRT_E "1.6487212707001282"

static const struct lx_param scaleinv_rows[] = {
    LX_P_FLOAT(struct scaleinv_params, tau, "10", 0, 1e300, LX_PF_MIN_OPEN | LX_PF_SHOW,
               "distance scale tau in ln(t/tau + 1)"),
    LX_P_FLOAT(struct scaleinv_params, alpha, SQRT_E, 0, 1e6, LX_PF_MIN_OPEN,
               "alpha: expected total attention scale (default e^0.5)"),
    LX_P_FLOAT(struct scaleinv_params, beta, SQRT_E, -1e6, 1e6, 0,
               "beta: expected unnormalised negentropy scale (default e^0.5)"),
};

static void scaleinv_dist_affine(const void *params, const struct lx_facts *f, int head, double t,
                                 double *a, double *m)
{
    const struct scaleinv_params *p = params;
    (void)f, (void)head;
    double a2 = 2.0 * (log1p(t / p->tau) - log(p->alpha) + p->beta / p->alpha);
    *a = sqrt(a2);
    *m = -a2 + p->beta / p->alpha;
}

static int scaleinv_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    const struct scaleinv_params *p = params;
    (void)f;
    if (p->beta / p->alpha < log(p->alpha))
        return lx_err(err, LX_EINVAL, "scaleinv: a_0 = sqrt(2(beta/alpha - ln alpha)) is undefined "
                      "for alpha = %g, beta = %g\n  hint: beta/alpha must be >= ln(alpha)",
                      p->alpha, p->beta);
    return LX_OK;
}

static int scaleinv_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                          struct lx_error *err)
{
    (void)f;
    struct lx_logit_op op = {
        .kind = LX_OP_DIST_AFFINE, .method = "scaleinv", .params = params,
        .dist_affine = scaleinv_dist_affine,
    };
    return lx_spec_push(spec, &op, err);
}

const struct lx_method lx_method_scaleinv = {
    .name = "scaleinv",
    .summary = "scale-invariant attention a_t*S + m_t, Anson, Wang, Aitchison 2025 (arXiv 2505.17083)",
    .schema = LX_SCHEMA(scaleinv_rows, struct scaleinv_params, NULL),
    .kind = LX_KIND_INFERENCE | LX_KIND_TRAINING,   /* the paper trains with it: `train: true` */
    .needs = LX_CAP_LOGITS,
    .check = scaleinv_check,
    .apply = scaleinv_apply,
};
