/*
** methods/nope.c - no position encoding (NoPE; Haviv et al. 2022, "Transformer
** language models without positional encodings still learn positional
** information", arXiv 2203.16634; Kazemnejad et al. 2023, arXiv 2305.19466).
**
** A causal model can infer positions from the mask alone. The method claims the
** position scheme and adds nothing, so a stack cannot combine it with rope.
*/
#include "methods/method.h"

static int nope_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                      struct lx_error *err)
{
    (void)params, (void)f;
    return lx_spec_claim_positions(spec, "nope", err);
}

const struct lx_method lx_method_nope = {
    .name = "nope",
    .summary = "no position encoding (NoPE, Haviv et al. 2022; Kazemnejad et al. 2023)",
    .schema = LX_SCHEMA_NONE,
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_MODEL,
    .apply = nope_apply,
};
