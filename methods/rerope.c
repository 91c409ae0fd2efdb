/*
** methods/rerope.c - ReRoPE and Leaky ReRoPE: rotary distances clipped (or
** compressed) beyond a window.
**
** Jianlin Su 2023, "Rectified Rotary Position Embeddings", kexue.fm/archives/9708;
** bojone/rerope (rerope_patch.py, leaky_rerope_patch.py). RoPE sees the
** distance Δ = i − j while Δ < w, and beyond it
**
**     ReRoPE        Δ' = w
**     Leaky ReRoPE  Δ' = w + (Δ − w)/k     (k = the patch's scaling_factor)
**
** Su computes the far branch with the query rotated to w (leaky: to
** (i + w(k − 1))/k, the key to j/k); in the spec that is a position map from
** distance w on with scale 0, shift w (leaky: scale 1/k, shift w(k − 1)/k), so
** δ(i, j) = −δ(j, i) in bidirectional rows. leak = 1 means plain ReRoPE, the
** k → ∞ limit (a leaky map with k = 1 would be plain RoPE). For n <= w ReRoPE
** is RoPE. w defaults to L/4 (L = the training length); the patches use
** w = 512 with L = 4096 and k = 16, the README also reports w = 1024.
**
** Not included: both of bojone's patches also scale the query at position p by
** max(1, ln(p + 1)/ln L) before RoPE; lenx expresses that by stacking
** `logn: {mode: qwen}` (the same formula, with n = p + 1). The InfoScale
** repo's re-implementation (model/my_gau_alpha_eval/layer.py) rotates the far
** query to w − 1 and so clamps at w − 1, one less than Su: its distances are
** this method's with window w − 1 (w = 4, query 9: 3 3 3 3 3 3 3 2 1 0).
** Training-free. Formula, parameters and golden values: docs/methods.md#rerope.
*/
#include <math.h>

#include "methods/method.h"

struct rerope_params {
    long window;    /* w: distances >= w are clipped; 0 = L/4 */
    double leak;    /* k: 1 = plain ReRoPE, > 1 = Leaky ReRoPE with slope 1/k */
};

static const struct lx_param rerope_rows[] = {
    LX_P_INT(struct rerope_params, window, "0", 0, 1e12, LX_PF_SHOW | LX_PF_AUTO,
             "w: distances >= w become w (leaky: w + (d-w)/leak); 0 = training length / 4, at least 1"),
    LX_P_FLOAT(struct rerope_params, leak, "1", 1, 1e12, 0,
               "k: 1 = plain ReRoPE; k > 1 = Leaky ReRoPE, far distances grow with slope 1/k"),
};

/* window auto: a quarter of the training length, at least 1. */
static int rerope_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct rerope_params *p = params;
    (void)err;
    if (p->window == 0)
        p->window = f->train_len / 4 > 1 ? f->train_len / 4 : 1;
    return LX_OK;
}

static int rerope_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                        struct lx_error *err)
{
    const struct rerope_params *p = params;
    int rc = lx_spec_need_rotary(spec, "rerope", err);
    if (rc == LX_OK)
        rc = lx_spec_claim_posmap(spec, "rerope", err);
    if (rc < 0)
        return rc;
    long w = p->window;
    LX_ASSERT(w >= 1);  /* resolved */
    double k = p->leak;
    spec->posmap = (struct lx_posmap){
        .method = "rerope", .from = w, .cap = INFINITY,
        .scale = k == 1 ? 0 : 1 / k, .shift = k == 1 ? (double)w : (double)w * (k - 1) / k,
    };
    return LX_OK;
}

const struct lx_method lx_method_rerope = {
    .name = "rerope",
    .summary = "ReRoPE / Leaky ReRoPE: rotary distance clipped at w, Su 2023 (kexue.fm/archives/9708)",
    .schema = LX_SCHEMA(rerope_rows, struct rerope_params, NULL),
    .kind = LX_KIND_INFERENCE,
    .needs = LX_CAP_MODEL,
    .resolve = rerope_resolve,
    .apply = rerope_apply,
};
