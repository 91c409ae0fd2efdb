/*
** methods/zerosink.c - a zero sink: one more logit z in every softmax, of a key
** whose value is the zero vector.
**
** Xiao, Tian, Chen, Han, Lewis, "Efficient Streaming Language Models with
** Attention Sinks", ICLR 2024, arXiv 2309.17453, §3.3 and Table 3 ("Zero
** Sink"): SoftMax-off-by-One, p_j = e^{x_j} / (1 + Σ_k e^{x_k}), so a query may
** put attention nowhere instead of on the first token; the paper pretrains
** with it against a learnable sink token and the vanilla model. Here the extra
** logit is z (default 0: SoftMax-off-by-One): p_j = e^{x_j} / (e^z + Σ_k e^{x_k})
** over the row's final logits x (after every scale, bias and soft-cap), and
** o = Σ_j p_j v_j, so the row's weights sum to 1 − p_z. z is fixed, the same
** in every head and layer, and enters no gradient. Every attention path
** (materialised, tiled, decoding) starts a row's softmax with it; the backward
** passes need nothing more (the sink's value is 0, so Σ_j p_j dP_j is still the
** row's dot product, and the tiled backward's log-sum-exp carries it). Row
** statistics (attention entropy, max p) are of the keys and the sink as one
** distribution. Part of training, as the paper uses it. Definition and golden
** values: docs/methods.md#zerosink.
*/
#include "methods/method.h"

struct zerosink_params {
    double logit;   /* z: the sink's logit */
};

static const struct lx_param zerosink_rows[] = {
    LX_P_FLOAT(struct zerosink_params, logit, "0", -1e3, 1e3, 0,
               "z: the logit of the extra key, whose value is zero (0 = SoftMax-off-by-One)"),
};

static int zerosink_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                          struct lx_error *err)
{
    (void)f;
    const struct zerosink_params *p = params;
    int rc = lx_spec_claim(&spec->zsink.method, "zerosink", "the softmax's extra logit", err);
    if (rc == LX_OK)
        spec->zsink.logit = p->logit;
    return rc;
}

const struct lx_method lx_method_zerosink = {
    .name = "zerosink",
    .summary = "zero sink: softmax with one more logit z (0: SoftMax-off-by-One) of a zero-valued key, "
               "Xiao et al. 2024 (arXiv 2309.17453) §3.3",
    .schema = LX_SCHEMA(zerosink_rows, struct zerosink_params, NULL),
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_MODEL,
    .apply = zerosink_apply,
};
