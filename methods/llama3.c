/*
** methods/llama3.c - Llama 3.1's rotary rescaling (Meta, "The Llama 3 Herd of
** Models", 2024, arXiv 2407.21783; the rope_scaling `rope_type: llama3` of
** Hugging Face transformers, _compute_llama3_parameters, and of Meta's
** reference code apply_scaling).
**
** NTK-by-parts with the ramp written in wavelengths: with λ_k = 2π/θ_k, the
** training length L and two factors,
**
**     λ_k < L/high_freq_factor     θ'_k = θ_k            (fast pairs keep)
**     λ_k > L/low_freq_factor      θ'_k = θ_k/s          (slow pairs: PI)
**     otherwise, sm = (L/λ_k − low_freq_factor)/(high_freq_factor − low_freq_factor),
**                                        θ'_k = (1 − sm)·θ_k/s + sm·θ_k
**
** The boundaries are strict (λ_k equal to either bound is in the middle band,
** where sm is exactly 0 or 1, so the bands meet without a jump). Unlike YaRN
** there is no attention temperature. Llama 3.1 was trained with it (s = 8,
** low_freq_factor 1, high_freq_factor 4, L = 8192, base 500000), so an HF
** checkpoint's rope_scaling maps to it trained in; lenx models can try it
** training-free. Formulas, parameters and golden values:
** docs/methods.md#llama3.
*/
#include <math.h>

#include "methods/method.h"

struct llama3_params {
    double scale;   /* s (HF factor); 0 = auto: max(1, length / L), resolved per cell */
    double low_freq_factor;   /* pairs with λ > L/low_freq_factor get θ/s */
    double high_freq_factor;  /* pairs with λ < L/high_freq_factor keep θ */
    long original;  /* L, original_max_position_embeddings; 0 = auto: the training length */
};

static const struct lx_param llama3_rows[] = {
    LX_P_FLOAT(struct llama3_params, scale, "0", 0, 1e6, LX_PF_SHOW | LX_PF_AUTO,
               "s (HF factor): slow pairs get theta/s; 0 = max(1, length / L)"),
    LX_P_FLOAT(struct llama3_params, low_freq_factor, "1", 0, 1e6, LX_PF_MIN_OPEN,
               "pairs with wavelength above L/low_freq_factor are interpolated (theta/s)"),
    LX_P_FLOAT(struct llama3_params, high_freq_factor, "4", 0, 1e6, LX_PF_MIN_OPEN,
               "pairs with wavelength below L/high_freq_factor keep their frequency"),
    LX_P_INT(struct llama3_params, original, "0", 0, 1e12, LX_PF_AUTO,
             "L (HF original_max_position_embeddings); 0 = training length"),
};

/* original auto: the training length; scale auto: the evaluation length over
** L, at least 1 (refused when trained in: training has no evaluation length). */
static int llama3_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct llama3_params *p = params;
    return lx_spec_resolve_scale("llama3", &p->scale, &p->original, f, err);
}

static int llama3_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    const struct llama3_params *p = params;
    if (p->high_freq_factor <= p->low_freq_factor || p->original < 1)
        return lx_err(err, LX_EINVAL, "llama3: needs high_freq_factor > low_freq_factor and L >= 1, got %g, %g, L %ld\n"
                      "  hint: Llama 3.1 uses low_freq_factor 1, high_freq_factor 4", p->high_freq_factor,
                      p->low_freq_factor, p->original);
    return LX_OK;
}

static int llama3_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                        struct lx_error *err)
{
    const struct llama3_params *p = params;
    int rc = lx_spec_claim_frequencies(spec, "llama3", err);
    if (rc < 0)
        return rc;
    double s = p->scale, L = (double)p->original;
    LX_ASSERT(s > 0);   /* resolved */
    double long_wave = L / p->low_freq_factor, short_wave = L / p->high_freq_factor;
    for (int k = 0; k < spec->rotary.n_pairs; k++) {
        double theta = spec->rotary.inv_freq[k], wave = 2 * acos(-1.0) / theta;
        if (wave < short_wave)
            continue;
        if (wave > long_wave) {
            spec->rotary.inv_freq[k] = theta / s;
        } else {
            double sm = (L / wave - p->low_freq_factor) / (p->high_freq_factor - p->low_freq_factor);
            spec->rotary.inv_freq[k] = (1 - sm) * theta / s + sm * theta;
        }
    }
    return LX_OK;
}

const struct lx_method lx_method_llama3 = {
    .name = "llama3",
    .summary = "Llama 3.1 rope scaling: NTK-by-parts ramp in wavelength, no temperature, Meta 2024 (arXiv 2407.21783)",
    .schema = LX_SCHEMA(llama3_rows, struct llama3_params, NULL),
    .kind = LX_KIND_INFERENCE | LX_KIND_TRAINING,   /* Llama 3.1 is trained with it: `train: true` */
    .needs = LX_CAP_MODEL,
    .resolve = llama3_resolve,
    .check = llama3_check,
    .apply = llama3_apply,
};
