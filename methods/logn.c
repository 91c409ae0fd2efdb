/*
** methods/logn.c - log-n logit scaling, three published forms.
**
**   su     Su 2021, "entropy invariance" (kexue.fm/archives/8823): multiply the
**          logits by log(n)/log(base), base 512, no floor (n = 64 gives 0.667).
**   qwen   Qwen-1 (modeling_qwen.py, QWenAttention): log_L(n) clamped below at
**          1, L = the training length; applied at inference.
**   ssmax  Scalable-Softmax, Nakanishi 2025 (arXiv 2501.19399): s·ln(n), s = 0.4
**          in the scale-invariant paper's Gaussian experiments (Anson et al.
**          2025, arXiv 2505.17083, §3.2). With `learn: true` (and train:
**          true) s is learned per layer and head as in the paper: the model
**          carries a multiplier w_(layer, head) of the logit, initialised to 1,
**          so the learned scale is s·w (tensor layers.L.attn.logit_scale).
**
** n is the number of keys the query sees (a causal row i sees n = i + 1).
** Formulas, parameters and golden values: docs/methods.md#logn.
*/
#include <math.h>

#include "methods/method.h"

enum { LOGN_SU, LOGN_QWEN, LOGN_SSMAX };

struct logn_params {
    int mode;       /* LOGN_SU, LOGN_QWEN or LOGN_SSMAX */
    double base;    /* su: the log base (512 in Su's post) */
    double s;       /* ssmax: the factor in s·ln(n) */
    int learn;      /* ssmax: s is learned per (layer, head), starting from s */
};

static const struct lx_param logn_rows[] = {
    LX_P_ENUM(struct logn_params, mode, "su", "su|qwen|ssmax", LX_PF_SHOW,
              "su: log(n)/log(base); qwen: max(1, log_L(n)), L = training length; ssmax: s*ln(n)"),
    LX_P_FLOAT(struct logn_params, base, "512", 1, 1e12, LX_PF_MIN_OPEN | LX_PF_SHOW,
               "su mode: logarithm base; the factor is 1 at n = base"),
    LX_P_FLOAT(struct logn_params, s, "0.4", 0, 1e3, LX_PF_MIN_OPEN | LX_PF_SHOW,
               "ssmax mode: scale s in s*ln(n)"),
    LX_P_BOOL(struct logn_params, learn, "false", 0,
              "ssmax mode: learn s per layer and head, starting from s (needs train: true)"),
};

/* Each mode's own parameters; `learn` is stored only when on. That rule names learn itself, so it never
** refuses learn (learn: false is moot, not wrong): the refusal below does, outside mode ssmax, as base's
** rule does outside su. */
static const struct lx_param_rule logn_rules[] = {
    {"base", "mode=su"},
    {"s", "mode=ssmax"},
    {"learn", "mode=ssmax&learn=true"},
    {NULL, NULL},
};

static const struct lx_param_rule logn_refusals[] = {
    {"learn", "mode=ssmax"},
    {NULL, NULL},
};

static double logn_row_scale(const void *params, const struct lx_facts *f, long n)
{
    const struct logn_params *p = params;
    double ln_n = log((double)n);
    switch (p->mode) {
    case LOGN_SU:
        return ln_n / log(p->base);
    case LOGN_QWEN: {
        double r = ln_n / log((double)f->train_len);
        return r > 1.0 ? r : 1.0;
    }
    default:
        return p->s * ln_n;
    }
}

static int logn_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    const struct logn_params *p = params;
    if (p->mode == LOGN_QWEN && f->train_len < 2)
        return lx_err(err, LX_EINVAL, "logn: mode qwen needs a training length >= 2, got %ld", f->train_len);
    return LX_OK;
}

static int logn_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                      struct lx_error *err)
{
    const struct logn_params *p = params;
    (void)f;
    struct lx_logit_op op = {
        .kind = LX_OP_ROW_SCALE, .method = "logn", .params = params, .row_scale = logn_row_scale,
    };
    if (p->learn)
        spec->learn_scale = 1;     /* the model multiplies S by its learned w_(layer, head), s·w in all */
    return lx_spec_push(spec, &op, err);
}

const struct lx_method lx_method_logn = {
    .name = "logn",
    .summary = "log-n logit scaling: Su 2021 (su), Qwen-1 (qwen), SSMax Nakanishi 2025 (ssmax)",
    .schema = LX_SCHEMA_REFUSING(logn_rows, struct logn_params, logn_rules, logn_refusals),
    .kind = LX_KIND_INFERENCE | LX_KIND_TRAINING,
    .needs = LX_CAP_LOGITS,
    .check = logn_check,
    .apply = logn_apply,
};
