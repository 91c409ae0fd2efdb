/*
** methods/rope.c - rotary position embedding (Su et al. 2021, RoFormer,
** arXiv 2104.09864).
**
** Pair k of every query and key vector at position p turns by p·θ_k with
** θ_k = base^(-2k/d) (RoFormer §3.2). Two memory layouts pair different
** channels (docs/methods.md#rope, with golden values): `half` pairs (x[k],
** x[k + d/2]) as GPT-NeoX and Hugging Face do; `interleaved` pairs (x[2k],
** x[2k + 1]) as RoFormer, GPT-J and Meta's LLaMA.
** The two are the same model up to a permutation of W_q and W_k rows, but a
** checkpoint only works with the layout it was trained with, so the layout is
** part of the model key. A training-time method: the model learns with it.
*/
#include <math.h>

#include "methods/method.h"

enum { ROPE_HALF, ROPE_INTERLEAVED };

struct rope_params {
    double base;    /* b in θ_k = b^(-2k/d) */
    int layout;     /* ROPE_HALF or ROPE_INTERLEAVED */
};

static const struct lx_param rope_rows[] = {
    LX_P_FLOAT(struct rope_params, base, "10000", 1, 1e12, LX_PF_MIN_OPEN,
               "rotary base b: pair k turns by p * b^(-2k/d)"),
    LX_P_ENUM(struct rope_params, layout, "half", "half|interleaved", 0,
              "half: pairs (x[k], x[k+d/2]) as Hugging Face; interleaved: (x[2k], x[2k+1]) as RoFormer"),
};

static int rope_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    (void)params;
    if (f->d_head % 2 || f->d_head / 2 > LX_SPEC_MAX_PAIRS)
        return lx_err(err, LX_EINVAL, "rope: the head dimension must be even and at most %d, got %d",
                      2 * LX_SPEC_MAX_PAIRS, f->d_head);
    return LX_OK;
}

static int rope_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                      struct lx_error *err)
{
    const struct rope_params *p = params;
    int rc = lx_spec_claim_positions(spec, "rope", err);
    if (rc < 0)
        return rc;
    struct lx_rotary *r = &spec->rotary;
    r->n_pairs = f->d_head / 2;
    r->layout = p->layout == ROPE_HALF ? LX_ROPE_HALF : LX_ROPE_INTERLEAVED;
    r->base = p->base;
    for (int k = 0; k < r->n_pairs; k++)
        r->inv_freq[k] = pow(p->base, -2.0 * k / f->d_head);
    return LX_OK;
}

const struct lx_method lx_method_rope = {
    .name = "rope",
    .summary = "rotary position embedding, Su et al. 2021 (RoFormer), half-split or interleaved pairs",
    .schema = LX_SCHEMA(rope_rows, struct rope_params, NULL),
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_MODEL,
    .check = rope_check,
    .apply = rope_apply,
};
