/*
** methods/cosscale.c - CosScale: cosine attention with a scale (Li et al.,
** "Information Entropy Invariance: Enhancing Length Extrapolation in Attention
** Mechanisms", ICML 2025, arXiv 2501.08570, §3.3, Theorem 3.4; code HT-NEKO/
** Information-Entropy-Invariance, model/my_gau_alpha_eval/layer.py).
**
** q and k are normalised per head, q/(‖q‖ + 1e−9), so the base logit becomes
**
**     S = s · cos(R_i q, R_j k)
**
** (RoPE preserves norms, so normalising before or after the rotation is the
** same up to the epsilon). Logit ops of the stack (InfoScale's κ(n), ...)
** multiply S. The paper uses s = 128, and 16 for windowed attention. The
** logit geometry changes, so the model must be trained with it.
** Theorem 3.4: the dominant cosine η₁* = (−(d−3) + sqrt((d−3)² + 4s²))/(2s)
** tends to 1 as s grows. Formula, parameters and golden values:
** docs/methods.md#cosscale.
*/
#include "methods/method.h"

struct cosscale_params {
    double s;       /* the scale on cos(q, k) */
};

static const struct lx_param cosscale_rows[] = {
    LX_P_FLOAT(struct cosscale_params, s, "128", 0, 1e6, LX_PF_MIN_OPEN | LX_PF_SHOW,
               "logit = s * cos(q, k); 128 in the paper, 16 for windowed attention"),
};

static int cosscale_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                          struct lx_error *err)
{
    const struct cosscale_params *p = params;
    (void)f;
    int rc = lx_spec_claim(&spec->geometry, "cosscale", "the logit geometry", err);
    if (rc < 0)
        return rc;
    spec->cosine = 1;
    spec->cos_scale = p->s;
    return LX_OK;
}

const struct lx_method lx_method_cosscale = {
    .name = "cosscale",
    .summary = "cosine attention s*cos(q, k), Li et al. 2025 (InfoScale paper, ICML), trained in",
    .schema = LX_SCHEMA(cosscale_rows, struct cosscale_params, NULL),
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_MODEL,
    .apply = cosscale_apply,
};
