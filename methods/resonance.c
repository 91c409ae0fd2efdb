/*
** methods/resonance.c - Resonance RoPE: every rotary wavelength rounded to a
** whole number of positions.
**
** Wang et al. 2024, "Resonance RoPE: Improving Context Length Generalization
** of Large Language Models", Findings of ACL 2024, arXiv 2403.00071; the
** authors' ResonanceRotaryEmbedding (_register_buffers):
**
**     λ_k = 2π / θ_k  ->  round(λ_k),   θ_k -> 2π / round(λ_k)
**
** on the table as the stack has it so far: plain RoPE, or after a rescaling
** (their Resonance NTK and Resonance YaRN round the rescaled table:
** [rope, {yarn: ...}, resonance]). Each feature then repeats every round(λ_k)
** positions, so one whose wavelength is below the training length shows at any
** position only values it showed in training. Rounding is torch.round's, half
** to even. NoPE pairs (θ_k = 0, p-RoPE) stay. The paper trains and fine-tunes
** with it: `train: true`, `finetune:`. Golden values: docs/methods.md#resonance.
*/
#include <math.h>

#include "methods/method.h"

static int resonance_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec, struct lx_error *err)
{
    (void)params, (void)f;
    int rc = lx_spec_need_rotary(spec, "resonance", err);
    if (rc == LX_OK)
        rc = lx_spec_claim(&spec->wavelengths, "resonance", "the rotary wavelengths", err);
    if (rc < 0)
        return rc;
    const double two_pi = 2 * acos(-1.0);
    for (int k = 0; k < spec->rotary.n_pairs; k++) {
        double theta = spec->rotary.inv_freq[k];
        if (theta > 0)      /* nearbyint: half to even in the default rounding mode, as torch.round */
            spec->rotary.inv_freq[k] = two_pi / fmax(nearbyint(two_pi / theta), 1.0);
    }
    return LX_OK;
}

const struct lx_method lx_method_resonance = {
    .name = "resonance",
    .summary = "Resonance RoPE: rotary wavelengths rounded to whole positions, Wang et al. 2024 (arXiv 2403.00071)",
    .schema = LX_SCHEMA_NONE,
    .kind = LX_KIND_INFERENCE | LX_KIND_TRAINING,   /* the paper trains and fine-tunes with it: `train: true` */
    .needs = LX_CAP_MODEL,
    .apply = resonance_apply,
};
