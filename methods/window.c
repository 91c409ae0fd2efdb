/*
** methods/window.c - plain sliding-window attention, as in Longformer's local
** band (Beltagy, Peters, Cohan 2020, arXiv 2004.05150, §3.1).
**
** Each query sees the W keys nearest to it, itself included: causal rows allow
** key j iff 0 <= i − j <= W − 1, bidirectional rows iff |i − j| <= W − 1. This
** is flash-attn's window_size = (W − 1, 0), not the InfoScale repo's
** bidirectional |i − j| <= extend_size; docs/methods.md#window lists both.
** Positions keep their original indices; with rope or alibi only distances
** enter, so re-indexing inside the window would give the same logits. A window
** of W >= n is full attention. W defaults to the training length. On a model
** that formed attention sinks perplexity blows up once the first tokens leave
** the window (StreamingLLM, Xiao et al., ICLR 2024, arXiv 2309.17453, Fig. 3;
** docs/REPRODUCTIONS.md#attention-sinks: lenx's small models form none).
** Applied at evaluation; with `train: true` (or `finetune:`) the model is
** trained with the window too, as Mistral's sliding-window attention is.
** Definition, parameters and golden values: docs/methods.md#window.
*/
#include "methods/method.h"

struct window_params {
    long size;      /* W: visible keys including the query; 0 = the training length */
};

static const struct lx_param window_rows[] = {
    LX_P_INT(struct window_params, size, "0", 0, 1e12, LX_PF_SHOW | LX_PF_AUTO,
             "W: keys a query sees, itself included (0 <= i-j <= W-1); 0 = the training length"),
};

/* size auto: the training length. */
static int window_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct window_params *p = params;
    if (p->size == 0)
        p->size = f->train_len;
    if (p->size < 1)
        return lx_err(err, LX_EINVAL, "window: size 0 means the training length, which is %ld here\n"
                      "  hint: give the size, e.g. window: {size: 64}", f->train_len);
    return LX_OK;
}

static int window_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                        struct lx_error *err)
{
    int rc = lx_spec_claim(&spec->vis.method, "window", "the visible keys", err);
    if (rc < 0)
        return rc;
    const struct window_params *p = params;
    LX_ASSERT(p->size >= 1);    /* resolved */
    spec->vis.window = p->size;
    return LX_OK;
}

const struct lx_method lx_method_window = {
    .name = "window",
    .summary = "sliding-window attention over the W nearest keys, query included (Beltagy et al. 2020, Longformer)",
    .schema = LX_SCHEMA(window_rows, struct window_params, NULL),
    .kind = LX_KIND_INFERENCE | LX_KIND_TRAINING,
    .needs = LX_CAP_MODEL,
    .resolve = window_resolve,
    .apply = window_apply,
};
