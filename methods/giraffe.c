/*
** methods/giraffe.c - Giraffe's rotary rescalings: power scaling and the
** truncated basis (Pell, Tahmasebi, Abacus.AI 2023, "Giraffe: Adventures in
** Expanding Context Lengths in LLMs", arXiv 2308.10882; abacusai/Long-Context,
** python/models/interpolate.py, ScaledLlamaRotaryEmbedding and
** truncate_frequency).
**
** On the table rope built (θ_k, k = 0 .. n − 1 pairs, highest first), in the
** code's order:
**
**   scale s > 1   θ_k / s (linear interpolation, as `pi`)
**   power p > 0   θ_k · (1 − k/n)^p: the low frequencies shrink the most
**   truncate T    with b = 2π/T: θ_k kept when θ_k >= b, ρ = b/16 when
**                 b/8 <= θ_k < b, 0 (a position-free pair) when θ_k < b/8
**
** so with the truncated basis no pair's wavelength lies between T and 8T:
** the pairs that turn less than once in T positions either turn at one fixed
** slow rate (a wavelength of 16T) or not at all. s = 1, p = 0, T = 0 is RoPE.
** The paper fine-tunes with each (`train: true` or `finetune:`); at
** evaluation only they are lenx's extension. Not included: the code's
** `randomize` (random position increments in training; `randpos` is lenx's
** randomized positions). Formula, parameters and golden values:
** docs/methods.md#giraffe.
*/
#include <math.h>

#include "methods/method.h"

struct giraffe_params {
    double scale;   /* s: every frequency divided by s when s > 1 */
    double power;   /* p: θ_k · (1 − k/n)^p; 0 = none */
    long truncate;  /* T: the truncated basis at wavelength T; 0 = none */
};

static const struct lx_param giraffe_rows[] = {
    LX_P_FLOAT(struct giraffe_params, scale, "1", 1, 1e6, 0,
               "s: every rotary frequency divided by s first (the code's linear scaling; 1 = none)"),
    LX_P_FLOAT(struct giraffe_params, power, "0", 0, 1e3, 0,
               "p: pair k of n gets theta_k * (1 - k/n)^p (0 = none)"),
    LX_P_INT(struct giraffe_params, truncate, "0", 0, 1e12, 0,
             "T: frequencies below 2pi/T become 2pi/(16T), below 2pi/(8T) zero (0 = none)"),
};

static int giraffe_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                         struct lx_error *err)
{
    const struct giraffe_params *p = params;
    (void)f;
    int rc = lx_spec_claim_frequencies(spec, "giraffe", err);
    if (rc < 0)
        return rc;
    struct lx_rotary *r = &spec->rotary;
    double b = p->truncate > 0 ? 2 * acos(-1.0) / (double)p->truncate : 0;
    for (int k = 0; k < r->n_pairs; k++) {
        double th = r->inv_freq[k] / (p->scale > 1 ? p->scale : 1);
        if (p->power > 0)
            th *= pow(1.0 - (double)k / r->n_pairs, p->power);
        if (b > 0 && th < b)
            th = th < b / 8 ? 0 : b / 16;
        r->inv_freq[k] = th;
    }
    return LX_OK;
}

const struct lx_method lx_method_giraffe = {
    .name = "giraffe",
    .summary = "Giraffe's power scaling and truncated basis of the rotary frequencies, Pell et al. 2023 "
               "(arXiv 2308.10882)",
    .schema = LX_SCHEMA(giraffe_rows, struct giraffe_params, NULL),
    .kind = LX_KIND_INFERENCE | LX_KIND_TRAINING,   /* the paper fine-tunes with it: `train: true` */
    .needs = LX_CAP_MODEL,
    .apply = giraffe_apply,
};
