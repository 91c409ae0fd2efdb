/*
** methods/yarn.c - YaRN: NTK-by-parts frequencies plus an attention temperature
** (Peng, Quesnelle, Fan, Shippole 2023, arXiv 2309.00071, §3.2 and §3.4 Eq. 22),
** in the form of the authors' code (jquesnelle/yarn,
** LlamaYaRNScaledRotaryEmbedding), which Hugging Face and llama.cpp follow.
**
** Pairs that turn many times within the training length L keep θ_k, pairs that
** turn less than once get PI's θ_k/s, and a ramp linear in the pair index k
** blends the two between:
**
**     corr_dim(R) = d·ln(L/(2πR)) / (2 ln b)     the k at which pair k turns R times in L
**     low  = max(floor(corr_dim(beta_fast)), 0),  high = min(ceil(corr_dim(beta_slow)), d − 1)
**     w_k  = 1 − clamp((k − low)/(high − low), 0, 1)   (high += 0.001 when low == high)
**     θ'_k = (θ_k/s)·(1 − w_k) + θ_k·w_k
**
** `truncate: false` is HF's flag of that name: no floor and ceil. The paper's
** ramp (§3.2) is linear in r = L/λ rather than in k and differs from this one
** (docs/methods.md#yarn gives an example). q and k are both multiplied by
** mscale = (0.1 ln s + 1)·attn_factor (1 for s <= 1), so the logits are
** multiplied by mscale²: a row scale op. Training-free; the paper's best
** results fine-tune with it (`train: true`, which needs a fixed s). Formulas,
** parameters and golden values: docs/methods.md#yarn.
*/
#include <math.h>

#include "methods/method.h"

struct yarn_params {
    double scale;       /* s; 0 = auto: max(1, length / L), resolved per cell */
    double beta_fast;   /* pairs turning more than this often in L keep θ_k (paper β) */
    double beta_slow;   /* pairs turning less than this often in L get θ_k/s (paper α) */
    long original;      /* L, the original context; 0 = auto: the training length */
    double attn_factor; /* extra factor on mscale */
    int truncate;       /* 1: floor low and ceil high (reference code, HF default) */
};

static const struct lx_param yarn_rows[] = {
    LX_P_FLOAT(struct yarn_params, scale, "0", 0, 1e6, LX_PF_SHOW | LX_PF_AUTO,
               "s: context scale factor; 0 = max(1, length / L)"),
    LX_P_FLOAT(struct yarn_params, beta_fast, "32", 0, 1e6, LX_PF_MIN_OPEN,
               "pairs turning more than beta_fast times in L keep their frequency"),
    LX_P_FLOAT(struct yarn_params, beta_slow, "1", 0, 1e6, LX_PF_MIN_OPEN,
               "pairs turning fewer than beta_slow times in L are interpolated (theta/s)"),
    LX_P_INT(struct yarn_params, original, "0", 0, 1e12, LX_PF_AUTO,
             "L: original context length for the ramp and the auto scale; 0 = training length"),
    LX_P_FLOAT(struct yarn_params, attn_factor, "1", 0, 1e6, LX_PF_MIN_OPEN,
               "multiplies mscale = 0.1 ln s + 1 (the logits get mscale^2)"),
    LX_P_BOOL(struct yarn_params, truncate, "true", 0,
              "floor/ceil the correction range as the reference code; false = HF truncate=False"),
};

/* original auto: the training length; scale auto: the evaluation length over
** L, at least 1 (refused when trained in: training has no evaluation length). */
static int yarn_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct yarn_params *p = params;
    return lx_spec_resolve_scale("yarn", &p->scale, &p->original, f, err);
}

/* The fractional pair index at which pair k turns R times in L positions. */
static double yarn_corr_dim(double R, int d, double L, double b)
{
    return d * log(L / (2 * acos(-1.0) * R)) / (2 * log(b));
}

/* mscale, on cos and sin. */
static double yarn_mscale(const struct yarn_params *p)
{
    double s = p->scale;
    return (s <= 1 ? 1 : 0.1 * log(s) + 1) * p->attn_factor;
}

/* The logit multiplier mscale²; the same for every row. */
static double yarn_row_scale(const void *params, const struct lx_facts *f, long n)
{
    double m = yarn_mscale(params);
    (void)f, (void)n;
    return m * m;
}

static int yarn_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    const struct yarn_params *p = params;
    if (p->beta_fast <= p->beta_slow || p->original < 1)
        return lx_err(err, LX_EINVAL, "yarn: needs beta_fast > beta_slow and L >= 1, got %g, %g, L %ld\n"
                      "  hint: the ramp runs from the pair turning beta_fast times in L to the one turning "
                      "beta_slow times; the paper's are beta_fast: 32, beta_slow: 1",
                      p->beta_fast, p->beta_slow, p->original);
    return LX_OK;
}

static int yarn_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                      struct lx_error *err)
{
    const struct yarn_params *p = params;
    int rc = lx_spec_claim_frequencies(spec, "yarn", err);
    if (rc < 0)
        return rc;
    struct lx_rotary *r = &spec->rotary;
    int d = 2 * r->n_pairs;
    double s = p->scale, L = (double)p->original;
    LX_ASSERT(s > 0);   /* resolved */
    double low = yarn_corr_dim(p->beta_fast, d, L, r->base);
    double high = yarn_corr_dim(p->beta_slow, d, L, r->base);
    if (p->truncate) {
        low = floor(low);
        high = ceil(high);
    }
    low = fmax(low, 0);
    high = fmin(high, d - 1);
    if (low == high)
        high += 0.001;
    for (int k = 0; k < r->n_pairs; k++) {
        double w = 1 - fmin(fmax((k - low) / (high - low), 0), 1);
        r->inv_freq[k] = r->inv_freq[k] / s * (1 - w) + r->inv_freq[k] * w;
    }
    struct lx_logit_op op = {
        .kind = LX_OP_ROW_SCALE, .method = "yarn", .params = params, .row_scale = yarn_row_scale,
    };
    return lx_spec_rotary_gain(spec, &op, yarn_mscale(p), err);
}

const struct lx_method lx_method_yarn = {
    .name = "yarn",
    .summary = "YaRN: NTK-by-parts rotary frequencies and mscale^2 on logits, Peng et al. 2023 (arXiv 2309.00071)",
    .schema = LX_SCHEMA(yarn_rows, struct yarn_params, NULL),
    .kind = LX_KIND_INFERENCE | LX_KIND_TRAINING,   /* the paper fine-tunes with it: `train: true` */
    .needs = LX_CAP_MODEL,
    .resolve = yarn_resolve,
    .check = yarn_check,
    .apply = yarn_apply,
};
