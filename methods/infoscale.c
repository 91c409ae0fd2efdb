/*
** methods/infoscale.c - InfoScale: entropy-invariant logit scaling.
**
** Li et al., "Information Entropy Invariance: Enhancing Length Extrapolation in
** Attention Mechanisms", ICML 2025, arXiv 2501.08570; authors' code
** HT-NEKO/Information-Entropy-Invariance (model/my_gau_alpha_eval/layer.py).
** The logits are multiplied by
**
**     κ(n) = sqrt( (1 − e^(2ε/d)·n^(−2/d)) / (1 − e^(2ε/d)·L^(−2/d)) )
**
** with d the head dimension, L the training length and n the keys the query
** sees; the authors' code uses ε = 0. No clamp: κ < 1 below the training
** length. Where the numerator is not positive (n <= e^ε) κ is taken as 0, the
** limit of the formula, which gives uniform attention.
** Formula, parameters and golden values: docs/methods.md#infoscale.
*/
#include <math.h>

#include "methods/method.h"

struct infoscale_params {
    double eps;     /* ε of the paper's general form; 0 in the authors' code */
};

static const struct lx_param infoscale_rows[] = {
    LX_P_FLOAT(struct infoscale_params, eps, "0", 0, 50, 0,
               "epsilon of the paper's kappa(n); 0 as in the authors' code"),
};

/* 1 − e^(2ε/d)·x^(−2/d), accurate near 0. */
static double one_minus(double eps, double d, double x)
{
    return -expm1((2.0 * eps - 2.0 * log(x)) / d);
}

static double infoscale_row_scale(const void *params, const struct lx_facts *f, long n)
{
    const struct infoscale_params *p = params;
    double num = one_minus(p->eps, f->d_head, (double)n);
    if (num <= 0.0)
        return 0.0;
    return sqrt(num / one_minus(p->eps, f->d_head, (double)f->train_len));
}

static int infoscale_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    const struct infoscale_params *p = params;
    if (one_minus(p->eps, f->d_head, (double)f->train_len) <= 0.0)
        return lx_err(err, LX_EINVAL, "infoscale: the training length %ld must exceed e^eps = %g\n"
                      "  hint: lower 'eps' or train longer", f->train_len, exp(p->eps));
    return LX_OK;
}

static int infoscale_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                           struct lx_error *err)
{
    (void)f;
    struct lx_logit_op op = {
        .kind = LX_OP_ROW_SCALE, .method = "infoscale", .params = params,
        .row_scale = infoscale_row_scale,
    };
    return lx_spec_push(spec, &op, err);
}

const struct lx_method lx_method_infoscale = {
    .name = "infoscale",
    .summary = "InfoScale kappa(n) logit scaling, Li et al. ICML 2025",
    .schema = LX_SCHEMA(infoscale_rows, struct infoscale_params, NULL),
    .kind = LX_KIND_INFERENCE,
    .needs = LX_CAP_LOGITS,
    .check = infoscale_check,
    .apply = infoscale_apply,
};
