/*
** methods/t5align.c - attention alignment by temperature (Chi, Fan, Rudnicky,
** "Attention Alignment and Flexible Positional Embeddings Improve Transformer
** Length Extrapolation", NAACL Findings 2024, arXiv 2311.00684: §4
** Algorithm 1, §6 Propositions 1-2).
**
** At an evaluation length L_ex > L_tr every logit is divided by a temperature
** τ ≤ 1 (sharper attention), chosen per (model, length) so that an attention
** statistic matches its value at the training length:
**
**   Algorithm 1   S_tr = FindS(τ = 1) on L_tr tokens; over the grid
**                 τ = 1.0, 0.95, …, 0.5 pick the τ whose FindS(τ) on L_ex
**                 tokens is closest to S_tr. FindS is the mean over every
**                 attention row (layers × heads × queries) of max p (mode
**                 pmax) or of the entropy −Σ p ln p (mode entropy).
**   Prop. 1       (pmax, Gaussian logits) the larger root of
**                 A τ² − B τ + C = 0, A = ln L_ex + ln P_tr,
**                 B = ln L_tr + ln P_tr + σ_tr²/2, C = σ_ex²/2.
**   Prop. 2       (entropy) τ = σ_ex / sqrt(σ_tr² + 2 ln(L_ex/L_tr)).
**
** σ and P are measured on layer 0 for the closed forms (the paper's
** analysis), as the mean per-row standard deviation of the logits and mean
** max probability. The method only marks the spec for calibration; the
** runner measures through a probe (the cell's model on corpus text, or the
** gaussian task's IID logits), sets the spec's temperature, and stores the
** chosen τ as the cell's metric `t5align_tau`. At L_ex ≤ L_tr, τ = 1.
** Procedure, closed forms, parameters and golden values: docs/methods.md#t5align.
*/
#include <math.h>

#include "methods/method.h"

enum { T5_PMAX, T5_ENTROPY };
enum { T5_GRID, T5_PROP1, T5_PROP2 };

struct t5align_params {
    int mode;           /* T5_PMAX or T5_ENTROPY: the statistic Algorithm 1 aligns */
    int closed_form;    /* T5_GRID (Algorithm 1), T5_PROP1 or T5_PROP2 */
    double tau_min;     /* the grid's lowest temperature */
    double step;        /* the grid's step down from 1; at least 0.001, so at most 1000 probes */
};

static const struct lx_param t5align_rows[] = {
    LX_P_ENUM(struct t5align_params, mode, "pmax", "pmax|entropy", LX_PF_SHOW,
              "statistic aligned by Algorithm 1: mean max probability or mean entropy"),
    LX_P_ENUM(struct t5align_params, closed_form, "none", "none|prop1|prop2", 0,
              "none: Algorithm 1's grid search; prop1/prop2: the paper's closed forms"),
    LX_P_FLOAT(struct t5align_params, tau_min, "0.5", 0, 1, LX_PF_MIN_OPEN, "lowest temperature of the grid"),
    LX_P_FLOAT(struct t5align_params, step, "0.05", 0.001, 1, 0,
               "grid step from 1.0 down, at least 0.001: every grid point is a forward pass at the length"),
};

/* The grid's parameters (and the statistic it aligns) matter only without a closed form. */
static const struct lx_param_rule t5align_rules[] = {
    {"mode", "closed_form=none"},
    {"tau_min", "closed_form=none"},
    {"step", "closed_form=none"},
    {NULL, NULL},
};

static double stat_of(const struct t5align_params *p, const struct lx_probe_stats *s)
{
    return p->mode == T5_PMAX ? s->pmax : s->entropy;
}

static int grid_search(const struct t5align_params *p, const struct lx_probe *probe, double *tau,
                       struct lx_error *err)
{
    struct lx_probe_stats tr, ex;
    int rc = probe->stats(probe->ctx, 1, 1.0, 0, &tr, err);
    double best = INFINITY;
    for (int k = 0; rc == LX_OK; k++) {
        double t = 1.0 - k * p->step;
        if (t < p->tau_min - 1e-9)
            break;
        if ((rc = probe->stats(probe->ctx, 0, t, 0, &ex, err)) < 0)
            break;
        double d = fabs(stat_of(p, &ex) - stat_of(p, &tr));
        if (d < best) {     /* ties keep the larger τ */
            best = d;
            *tau = t;
        }
    }
    return rc;
}

static int closed_form(const struct t5align_params *p, const struct lx_facts *f, const struct lx_probe *probe,
                       double *tau, struct lx_error *err)
{
    struct lx_probe_stats tr, ex;
    int rc = probe->stats(probe->ctx, 1, 1.0, 1, &tr, err);
    if (rc == LX_OK)
        rc = probe->stats(probe->ctx, 0, 1.0, 1, &ex, err);
    if (rc < 0)
        return rc;
    double l_tr = log((double)f->train_len), l_ex = log((double)f->length);
    if (p->closed_form == T5_PROP2) {
        *tau = ex.sigma / sqrt(tr.sigma * tr.sigma + 2.0 * (l_ex - l_tr));
        return LX_OK;
    }
    double A = l_ex + log(tr.pmax), B = l_tr + log(tr.pmax) + tr.sigma * tr.sigma / 2.0;
    double C = ex.sigma * ex.sigma / 2.0, disc = B * B - 4.0 * A * C;
    if (A <= 0.0 || disc < 0.0)
        return lx_err(err, LX_ERUN, "t5align: Proposition 1 has no real root here (A = %g, B = %g, C = %g)\n"
                      "  hint: use closed_form: prop2 or the grid search", A, B, C);
    *tau = (B + sqrt(disc)) / (2.0 * A);
    return LX_OK;
}

static int t5align_calibrate(const void *params, const struct lx_facts *f, const struct lx_probe *probe,
                             double *tau, struct lx_error *err)
{
    const struct t5align_params *p = params;
    *tau = 1.0;
    if (f->length <= f->train_len)
        return LX_OK;
    return p->closed_form == T5_GRID ? grid_search(p, probe, tau, err) : closed_form(p, f, probe, tau, err);
}

static int t5align_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                         struct lx_error *err)
{
    (void)f;
    int rc = lx_spec_claim(&spec->calib_method, "t5align", "the temperature", err);
    if (rc < 0)
        return rc;
    spec->calibrate = t5align_calibrate;
    spec->calib_params = params;
    return LX_OK;
}

const struct lx_method lx_method_t5align = {
    .name = "t5align",
    .summary = "attention alignment: temperature calibrated per length, Chi et al. 2024 (arXiv 2311.00684)",
    .schema = LX_SCHEMA(t5align_rows, struct t5align_params, t5align_rules),
    .kind = LX_KIND_INFERENCE,
    .needs = LX_CAP_LOGITS,
    .apply = t5align_apply,
};
