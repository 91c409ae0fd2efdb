/*
** methods/prope.c - p-RoPE: rotate only the highest frequencies, leave the rest
** as position-free "semantic" channels (Barbero, Vitvitskyi, Perivolaropoulos,
** Pascanu, Veličković 2024, "Round and Round We Go! What makes Rotary
** Positional Encodings useful?", arXiv 2410.06205, §6.1 and its apply_p_rope).
**
**   fraction  keep the R = floor(p·d/2) highest frequencies θ_k = b^(−2k/d),
**             k < R, as rope built them (full d in the exponent), and set the
**             other d/2 − R to 0. p = 1 is RoPE, p = 0 is NoPE; the paper's
**             best is p = 0.75.
**   modded    modded-nanogpt's "half-truncate RoPE" (KellerJordan/modded-nanogpt,
**             Rotary): ω_k = (1/effective_base)^(k/(d/4 − 1)) for k < d/4, then
**             d/4 zeros: p = 1/2 with its own band from 1 down to
**             1/effective_base, independent of rope's base. p is ignored.
**
** Not GPT-NeoX `rotary_pct` / HF `partial_rotary_factor`, which re-spread all
** frequencies, the low ones included, over fewer channels. The model must be
** trained with it. Formulas, parameters and golden values: docs/methods.md#prope.
*/
#include <math.h>

#include "methods/method.h"

enum { PROPE_FRACTION, PROPE_MODDED };

struct prope_params {
    double p;               /* fraction: share of pairs, highest frequencies first, that rotate */
    int mode;               /* PROPE_FRACTION or PROPE_MODDED */
    double effective_base;  /* modded: the lowest kept frequency is 1/effective_base */
};

static const struct lx_param prope_rows[] = {
    LX_P_FLOAT(struct prope_params, p, "0.75", 0, 1, LX_PF_SHOW,
               "fraction mode: the floor(p*d/2) highest frequencies rotate, the rest are 0 (1 = rope, 0 = nope)"),
    LX_P_ENUM(struct prope_params, mode, "fraction", "fraction|modded", 0,
              "fraction: Barbero et al. p-RoPE; modded: modded-nanogpt's half-truncate RoPE"),
    LX_P_FLOAT(struct prope_params, effective_base, "1024", 1, 1e12, 0,
               "modded mode: d/4 frequencies (1/effective_base)^(k/(d/4-1)), then d/4 zeros"),
};

/* Each mode's own parameter. */
static const struct lx_param_rule prope_rules[] = {
    {"p", "mode=fraction"},
    {"effective_base", "mode=modded"},
    {NULL, NULL},
};

static int prope_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    const struct prope_params *p = params;
    if (p->mode == PROPE_MODDED && f->d_head % 4)
        return lx_err(err, LX_EINVAL, "prope: mode modded needs a head dimension divisible by 4, got %d\n"
                      "  hint: it keeps d/4 frequencies and zeroes d/4; use mode fraction, or a head of %d",
                      f->d_head, f->d_head / 4 * 4 + 4);
    return LX_OK;
}

static int prope_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                       struct lx_error *err)
{
    const struct prope_params *p = params;
    (void)f;
    int rc = lx_spec_claim_frequencies(spec, "prope", err);
    if (rc < 0)
        return rc;
    struct lx_rotary *r = &spec->rotary;
    int d = 2 * r->n_pairs;
    if (p->mode == PROPE_FRACTION) {
        for (int k = (int)floor(p->p * d / 2); k < r->n_pairs; k++)
            r->inv_freq[k] = 0;
        return LX_OK;
    }
    if (d % 4)          /* a partial rope (rope's dims) turns fewer channels than the head has */
        return lx_err(err, LX_EINVAL, "prope: mode modded needs a rotary width divisible by 4, and rope turns %d "
                      "channels\n  hint: it keeps a quarter of them and zeroes a quarter; give rope dims a multiple "
                      "of 4 (e.g. %d), or use mode fraction", d, d / 4 * 4 > 0 ? d / 4 * 4 : 4);
    int m = d / 4;      /* modded-nanogpt: linspace(0, 1, d/4) includes both ends */
    for (int k = 0; k < r->n_pairs; k++)
        r->inv_freq[k] = k < m ? pow(p->effective_base, m > 1 ? -(double)k / (m - 1) : 0) : 0;
    return LX_OK;
}

const struct lx_method lx_method_prope = {
    .name = "prope",
    .summary = "p-RoPE: only the highest rotary frequencies rotate, Barbero et al. 2024 (arXiv 2410.06205)",
    .schema = LX_SCHEMA(prope_rows, struct prope_params, prope_rules),
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_MODEL,
    .check = prope_check,
    .apply = prope_apply,
};
