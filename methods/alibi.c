/*
** methods/alibi.c - attention with linear biases (ALiBi).
**
** Press, Smith, Lewis, "Train Short, Test Long: Attention with Linear Biases
** Enables Input Length Extrapolation", ICLR 2022, arXiv 2108.12409, §3. No
** position embedding: the logit of the key t positions back gets a bias
**
**     L_t = S_t − m_h·t       (a = 1, m = −m_h·t in the spec's terms)
**
** added after the 1/sqrt(d) scaling, with one slope m_h per head. For H heads
** (llama.cpp's form of the paper's get_slopes, the same set and order):
**
**     n = 2^floor(log2 H),  m0 = 2^(−max_bias/n),  m1 = 2^(−max_bias/(2n))
**     m_h = m0^(h+1)            for h < n
**     m_h = m1^(2(h − n) + 1)   for h >= n
**
** so a power of two H gives the geometric 2^(−8/H)^(h+1), and any other H gets
** every other slope of the 2n-head sequence after the first n: the order is not
** monotone (6 heads: 0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125). t is |δ|,
** the effective distance after any position map, and may be fractional.
** ALiBi replaces rope (it claims the position scheme) and must be trained in.
** `scale` multiplies every slope: Falcon-RW's ALiBi, which transformers' Falcon
** adds before the 1/sqrt(head_dim) scaling, is these slopes times 1/sqrt(head_dim).
** Slopes, parameters and golden values: docs/methods.md#alibi.
*/
#include <math.h>

#include "methods/method.h"

struct alibi_params {
    double max_bias;    /* the slopes are 2^(−max_bias·(h+1)/H) for H a power of two */
    double scale;       /* every slope times it */
};

static const struct lx_param alibi_rows[] = {
    LX_P_FLOAT(struct alibi_params, max_bias, "8", 0, 1e3, LX_PF_MIN_OPEN,
               "slope scale: head h of H (a power of two) has slope 2^(-max_bias*(h+1)/H)"),
    LX_P_FLOAT(struct alibi_params, scale, "1", 0, 1e3, LX_PF_MIN_OPEN,
               "every slope times this (Falcon-RW's 1/sqrt(head_dim)); 1 = the paper's"),
};

/* scale is named only away from 1, so the paper's ALiBi keeps its keys. */
static const struct lx_param_rule alibi_rules[] = {
    {"scale", "scale!=1"},
    {NULL, NULL},
};

/* The slope m_h of head h among n_heads: m0^(h+1) = 2^(−max_bias·(h+1)/n) and
** m1^(2(h−n)+1) = 2^(−max_bias·(2(h−n)+1)/(2n)), one exp2 each. */
static double alibi_slope(double max_bias, int n_heads, int h)
{
    int n = 1;
    while (2 * n <= n_heads)
        n *= 2;
    if (h < n)
        return exp2(-max_bias * (h + 1) / n);
    return exp2(-max_bias * (2 * (h - n) + 1) / (2.0 * n));
}

static void alibi_dist_affine(const void *params, const struct lx_facts *f, int head, double t,
                              double *a, double *m)
{
    const struct alibi_params *p = params;
    *a = 1.0;
    *m = t > 0 ? -(p->scale * alibi_slope(p->max_bias, f->n_heads, head)) * t : 0.0;   /* not −0 at t = 0 */
}

static int alibi_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    (void)params;
    if (f->n_heads < 1)
        return lx_err(err, LX_EINVAL, "alibi: needs at least one attention head, got %d", f->n_heads);
    return LX_OK;
}

static int alibi_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                       struct lx_error *err)
{
    (void)f;
    int rc = lx_spec_claim_positions(spec, "alibi", err);
    if (rc < 0)
        return rc;
    struct lx_logit_op op = {
        .kind = LX_OP_DIST_AFFINE, .method = "alibi", .params = params,
        .dist_affine = alibi_dist_affine,
    };
    return lx_spec_push(spec, &op, err);
}

const struct lx_method lx_method_alibi = {
    .name = "alibi",
    .summary = "linear distance biases -m_h*t per head, Press, Smith, Lewis 2022 (ALiBi, arXiv 2108.12409)",
    .schema = LX_SCHEMA(alibi_rows, struct alibi_params, alibi_rules),
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_LOGITS,
    .check = alibi_check,
    .apply = alibi_apply,
};
