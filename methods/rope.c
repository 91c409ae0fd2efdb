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
** part of the model key. `dims` R < d turns only the first R channels of each
** head (partial rotary: GPT-NeoX's rotary_pct, Phi-4-mini's and transformers'
** partial_rotary_factor), θ_k = base^(-2k/R) for k < R/2, `half` pairing
** (x[k], x[k + R/2]); the other d − R channels carry no position. A
** training-time method: the model learns with it.
*/
#include <math.h>

#include "methods/method.h"

enum { ROPE_HALF, ROPE_INTERLEAVED };

struct rope_params {
    double base;    /* b in θ_k = b^(-2k/d) */
    int layout;     /* ROPE_HALF or ROPE_INTERLEAVED */
    long dims;      /* R: channels turned; 0 = the whole head */
};

static const struct lx_param rope_rows[] = {
    LX_P_FLOAT(struct rope_params, base, "10000", 1, 1e12, LX_PF_MIN_OPEN,
               "rotary base b: pair k turns by p * b^(-2k/d)"),
    LX_P_ENUM(struct rope_params, layout, "half", "half|interleaved", 0,
              "half: pairs (x[k], x[k+d/2]) as Hugging Face; interleaved: (x[2k], x[2k+1]) as RoFormer"),
    LX_P_INT(struct rope_params, dims, "0", 0, 2 * LX_SPEC_MAX_PAIRS, LX_PF_UNKEYED_DEFAULT,
             "R: only the first R channels of a head turn (partial rotary), with d = R above; 0 = all"),
};

static int rope_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    const struct rope_params *p = params;
    if (f->d_head % 2 || f->d_head / 2 > LX_SPEC_MAX_PAIRS)
        return lx_err(err, LX_EINVAL, "rope: the head dimension must be even and at most %d, got %d\n  hint: rotary "
                      "turns pairs of channels: choose d_model / heads (show method's --d-head) even, up to %d",
                      2 * LX_SPEC_MAX_PAIRS, f->d_head, 2 * LX_SPEC_MAX_PAIRS);
    if (p->dims && (p->dims % 2 || p->dims > f->d_head))
        return lx_err(err, LX_EINVAL, "rope: dims must be an even number of channels up to the head's %d, got %ld\n"
                      "  hint: dims = d_head x partial_rotary_factor, or 0 for the whole head", f->d_head, p->dims);
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
    long R = p->dims ? p->dims : f->d_head;
    r->n_pairs = (int)(R / 2);
    r->layout = p->layout == ROPE_HALF ? LX_ROPE_HALF : LX_ROPE_INTERLEAVED;
    r->base = p->base;
    for (int k = 0; k < r->n_pairs; k++)
        r->inv_freq[k] = pow(p->base, -2.0 * k / (double)R);
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
