/*
** methods/longrope.c - LongRoPE's per-pair rotary rescaling (Ding et al.,
** "LongRoPE: Extending LLM Context Window Beyond 2 Million Tokens", 2024,
** arXiv 2402.13753; the rope_scaling `rope_type: longrope` of Hugging Face
** transformers, _compute_longrope_parameters, as Phi-3 and Phi-3.5 ship it).
**
** The search of the paper finds one rescale factor λ_k per rotary pair; the
** model then carries two lists, `short_factor` for windows up to the original
** length L and `long_factor` past it. Pair k turns at
**
**     θ'_k = θ_k / λ_k,   λ = long_factor if the length n > L, else short_factor
**
** (n: the cell's evaluation length, or its fine-tuning length), and cos and
** sin are multiplied by the attention factor
**
**     a = sqrt(1 + ln s / ln L)   (s = the extension factor; a = 1 for s <= 1)
**
** unless one is given, so the logits get a²: a row scale op, as YaRN's
** mscale². An empty list is all ones. Phi-3's checkpoints map to it trained
** in; lenx models can try hand-made factors training-free. Formulas and
** golden values: docs/methods.md#longrope.
*/

#include "methods/method.h"

struct longrope_params {
    double scale;               /* s: max_position_embeddings / L; 0 = auto, max(1, length / L) */
    long original;              /* L, original_max_position_embeddings; 0 = auto: the training length */
    struct lx_floats long_factor;   /* λ_k past L, one per rotary pair; [] = all 1 */
    struct lx_floats short_factor;  /* λ_k up to L; [] = all 1 */
    double attention_factor;    /* a on cos and sin (a² on the logits); 0 = sqrt(1 + ln s / ln L) */
};

static const struct lx_param longrope_rows[] = {
    LX_P_FLOAT(struct longrope_params, scale, "0", 0, 1e6, LX_PF_SHOW | LX_PF_AUTO,
               "s, the extension factor (HF max_position_embeddings / L): sets the automatic attention factor; "
               "0 = max(1, length / L)"),
    LX_P_INT(struct longrope_params, original, "0", 0, 1e12, LX_PF_AUTO,
             "L (HF original_max_position_embeddings): long_factor past it; 0 = training length"),
    LX_P_FLOATS(struct longrope_params, long_factor, "[]", 0, 1e12, LX_PF_MIN_OPEN,
                "lambda_k, pair k turns at theta_k / lambda_k for lengths past L; one per rotary pair, [] = all 1"),
    LX_P_FLOATS(struct longrope_params, short_factor, "[]", 0, 1e12, LX_PF_MIN_OPEN,
                "lambda_k for lengths up to L; one per rotary pair, [] = all 1"),
    LX_P_FLOAT(struct longrope_params, attention_factor, "0", 0, 1e6, 0,
               "a: cos and sin times a, the logits times a^2; 0 = sqrt(1 + ln s / ln L), 1 for s <= 1"),
};

/* original auto: the training length; scale auto: the evaluation length over
** L, at least 1 (refused when trained in: training has no evaluation length). */
static int longrope_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct longrope_params *p = params;
    return lx_spec_resolve_scale("longrope", &p->scale, &p->original, f, err);
}

static int longrope_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    const struct longrope_params *p = params;
    (void)f;
    if (p->original < 1)
        return lx_err(err, LX_EINVAL, "longrope: needs L >= 1, got %ld", p->original);
    return LX_OK;
}

/* One factor per rotary pair of the table rope made (a partial rope has fewer than d/2). */
static int check_lists(const struct longrope_params *p, const struct lx_facts *f, int pairs, struct lx_error *err)
{
    const struct lx_floats *lists[2] = {&p->long_factor, &p->short_factor};
    for (int i = 0; i < 2; i++)
        if (lists[i]->n && lists[i]->n != pairs)
            return lx_err(err, LX_EINVAL, "longrope: %s has %d factors; a head of %d has %d rotary pairs\n"
                          "  hint: one factor per pair, as the model's config.json lists them", i ? "short_factor"
                          : "long_factor", lists[i]->n, f->d_head, pairs);
    return LX_OK;
}

/* a²: the same for every row. */
static double longrope_row_scale(const void *params, const struct lx_facts *f, long n)
{
    const struct longrope_params *p = params;
    double a = lx_longrope_attention(p->attention_factor, p->scale, (double)p->original);
    (void)f, (void)n;
    return a * a;
}

static int longrope_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                          struct lx_error *err)
{
    const struct longrope_params *p = params;
    int rc = lx_spec_claim_frequencies(spec, "longrope", err);
    if (rc == LX_OK)
        rc = check_lists(p, f, spec->rotary.n_pairs, err);
    if (rc < 0)
        return rc;
    long n = f->ft_len ? f->ft_len : f->length;
    const struct lx_floats *lam = n > p->original ? &p->long_factor : &p->short_factor;
    for (int k = 0; lam->n && k < spec->rotary.n_pairs; k++)
        spec->rotary.inv_freq[k] /= lam->v[k];
    struct lx_logit_op op = {
        .kind = LX_OP_ROW_SCALE, .method = "longrope", .params = params, .row_scale = longrope_row_scale,
    };
    return lx_spec_rotary_gain(spec, &op, lx_longrope_attention(p->attention_factor, p->scale, (double)p->original), err);
}

const struct lx_method lx_method_longrope = {
    .name = "longrope",
    .summary = "LongRoPE: per-pair rotary factors (short up to L, long past it) and an attention factor, "
               "Ding et al. 2024 (arXiv 2402.13753)",
    .schema = LX_SCHEMA(longrope_rows, struct longrope_params, NULL),
    .kind = LX_KIND_INFERENCE | LX_KIND_TRAINING,   /* Phi-3 is fine-tuned with it: `train: true` */
    .needs = LX_CAP_MODEL,
    .resolve = longrope_resolve,
    .check = longrope_check,
    .apply = longrope_apply,
};
