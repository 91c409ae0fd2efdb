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
** in every head and layer, and enters no gradient; with learned: true the
** logit of head h in layer l is z + w_(l,h), w a tensor of the model
** (layers.L.attn.sink, arch sinks) trained from 0 with dL/dw = −Σ_rows p_z·(dO·o)
** (lenx's own extension: a sink each head can tune). Every attention path
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
    int learned;    /* 1: z + w_(layer, head), w the model's, learned from 0 */
};

static const struct lx_param zerosink_rows[] = {
    LX_P_FLOAT(struct zerosink_params, logit, "0", -1e3, 1e3, 0,
               "z: the logit of the extra key, whose value is zero (0 = SoftMax-off-by-One)"),
    LX_P_BOOL(struct zerosink_params, learned, "false", 0,
              "learn a logit per layer and head: z + w, w trained from 0 (the model's tensor layers.L.attn.sink)"),
};

/* `learned` is stored only when on: zero sinks trained before it keep their keys. */
static const struct lx_param_rule zerosink_rules[] = {
    {"learned", "learned=true"},
    {NULL, NULL},
};

static int zerosink_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                          struct lx_error *err)
{
    (void)f;
    const struct zerosink_params *p = params;
    int rc = lx_spec_claim(&spec->zsink.method, "zerosink", "the softmax's extra logit", err);
    if (rc == LX_OK) {
        spec->zsink.logit = p->logit;
        spec->zsink.learn = p->learned;
    }
    return rc;
}

const struct lx_method lx_method_zerosink = {
    .name = "zerosink",
    .summary = "zero sink: softmax with one more logit z (0: SoftMax-off-by-One) of a zero-valued key, "
               "Xiao et al. 2024 (arXiv 2309.17453) §3.3",
    .schema = LX_SCHEMA(zerosink_rows, struct zerosink_params, zerosink_rules),
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_MODEL,     /* with learned: true, w is the model's */
    .apply = zerosink_apply,
};
