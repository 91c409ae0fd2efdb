/*
** methods/bca.c - blockwise causal attention, the inference-time mask of the
** Length-Extrapolatable Transformer (Sun, Dong, Patra, Ma, Huang, Benhaim,
** Chaudhary, Song, Wei, ACL 2023, arXiv 2212.10554, §3.3).
**
** "If the pre-training length is l, we divide the query as blocks with l/2
** length, and each query interacts with its own block and the last block":
** query i, in block ⌊i/B⌋, sees keys j <= i with ⌊j/B⌋ >= ⌊i/B⌋ − 1, so
** between B and 2B − 1 of them (fewer in the first block), every distance
** below 2B = l. The paper trains with plain causal attention and applies the
** blocks at inference only, reusing the overlapped key and value vectors;
** lenx computes the same mask over the whole window (struct lx_visibility's
** block). Causal models only. Definition, parameters and golden values:
** docs/methods.md#bca.
*/
#include "methods/method.h"

struct bca_params {
    long block;     /* B: block length; 0 = half the training length */
};

static const struct lx_param bca_rows[] = {
    LX_P_INT(struct bca_params, block, "0", 0, 1e12, LX_PF_SHOW | LX_PF_AUTO,
             "B: block length; a query sees its block and the one before; 0 = half the training length"),
};

/* block auto: half the training length (at least 1). */
static int bca_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct bca_params *p = params;
    (void)err;
    if (p->block == 0)
        p->block = f->train_len / 2 > 0 ? f->train_len / 2 : 1;
    return LX_OK;
}

static int bca_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    (void)params;
    if (f->bidirectional)
        return lx_err(err, LX_EINVAL, "bca: blockwise causal attention is for causal models; this one attends "
                      "both ways\n  hint: on a masked LM use window: {size: W}");
    return LX_OK;
}

static int bca_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec, struct lx_error *err)
{
    const struct bca_params *p = params;
    (void)f;
    int rc = lx_spec_claim(&spec->vis.method, "bca", "the visible keys", err);
    if (rc < 0)
        return rc;
    LX_ASSERT(p->block >= 1);   /* resolved */
    spec->vis.block = p->block;
    return LX_OK;
}

const struct lx_method lx_method_bca = {
    .name = "bca",
    .summary = "blockwise causal attention: a query sees its block and the one before (xPos's inference mask, "
               "Sun et al. 2023)",
    .schema = LX_SCHEMA(bca_rows, struct bca_params, NULL),
    .kind = LX_KIND_INFERENCE,
    .needs = LX_CAP_MODEL,
    .resolve = bca_resolve,
    .check = bca_check,
    .apply = bca_apply,
};
