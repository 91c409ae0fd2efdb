/*
** methods/none.c - standard attention logits, q·k/sqrt(d), untouched.
**
** The baseline every sweep compares against: it pushes no op, so the spec is
** the identity on the base logits.
*/
#include "methods/method.h"

static int none_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                      struct lx_error *err)
{
    (void)params, (void)f, (void)spec, (void)err;
    return LX_OK;
}

const struct lx_method lx_method_none = {
    .name = "none",
    .summary = "standard attention logits q·k/sqrt(d), no extrapolation method",
    .schema = LX_SCHEMA_NONE,
    .kind = LX_KIND_INFERENCE,
    .needs = LX_CAP_LOGITS,
    .apply = none_apply,
};
