/*
** methods/pi.c - Position Interpolation (Chen, Wong, Chen, Tian 2023, arXiv
** 2306.15595, §2.3).
**
** Positions are compressed, m -> m/s with s = L'/L, so that the longest
** evaluation distance maps back into the trained range. For rotary positions
** that is the same as dividing every frequency, θ_k -> θ_k/s; for a stack
** whose positions are a fixed distance bias (ALiBi, Sandwich) the bias reads
** t/s, every ALiBi slope divided by s (Al-Khateeb, Dey, Soboleva, Hestness
** 2023, arXiv 2310.13017, "Position Interpolation Improves ALiBi
** Extrapolation"). All positions
** move, those below L too, and there is no temperature term. The paper
** fine-tunes for about 1000 steps; training-free PI works only for small s.
** Here `scale` 0 picks s = max(1, length/L) for each evaluation length; trained
** in (`train: true`) it needs a fixed s, since the model learns one table.
** Formula, parameters and golden values: docs/methods.md#pi.
*/
#include "methods/method.h"

struct pi_params {
    double scale;   /* s; 0 = max(1, length / train_len) */
};

static const struct lx_param pi_rows[] = {
    LX_P_FLOAT(struct pi_params, scale, "0", 0, 1e6, LX_PF_SHOW | LX_PF_AUTO,
               "s: every rotary frequency (or ALiBi's distance) is divided by s; 0 = max(1, length / training length)"),
};

/* scale auto: the evaluation length over the training length, at least 1. */
static int pi_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    return lx_spec_resolve_scale("pi", &((struct pi_params *)params)->scale, NULL, f, err);
}

static int pi_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                    struct lx_error *err)
{
    const struct pi_params *p = params;
    double s = p->scale;
    LX_ASSERT(s > 0);   /* resolved */
    if (spec->rotary.n_pairs == 0)
        return lx_spec_compress_distances(spec, "pi", s, err);
    int rc = lx_spec_claim_frequencies(spec, "pi", err);
    if (rc < 0)
        return rc;
    for (int k = 0; k < spec->rotary.n_pairs; k++)
        spec->rotary.inv_freq[k] /= s;
    return LX_OK;
}

const struct lx_method lx_method_pi = {
    .name = "pi",
    .summary = "position interpolation: every rotary frequency (or ALiBi's, Sandwich's distance) divided by s, "
               "Chen et al. 2023 (arXiv 2306.15595)",
    .schema = LX_SCHEMA(pi_rows, struct pi_params, NULL),
    .kind = LX_KIND_INFERENCE | LX_KIND_TRAINING,   /* the paper fine-tunes with it: `train: true` */
    .needs = LX_CAP_MODEL,
    .resolve = pi_resolve,
    .apply = pi_apply,
};
