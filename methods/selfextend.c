/*
** methods/selfextend.c - Self-Extend: grouped attention beyond a neighbor
** window, training-free.
**
** Jin et al. 2024, "LLM Maybe LongLM: Self-Extend LLM Context Window Without
** Tuning", arXiv 2401.01325; datamllab/LongLM (self_extend_patch/Llama.py,
** self_extend_forward). Pairs closer than the neighbor window w keep RoPE's
** distance i − j; beyond it the query and the key take grouped positions
**
**     query ⌊i/G⌋ + w − w/G,   key ⌊j/G⌋
**
** so δ = ⌊i/G⌋ − ⌊j/G⌋ + w − w/G: continuous at i − j = w for G dividing w,
** and the largest distance of n tokens is ⌊(n − 1)/G⌋ + w − w/G, which group
** auto keeps below the training length L (the smallest such G). The patch's
** eager forward (and its prefill) shifts by w − w/G in real numbers, its
** flash decode step by w − ⌊w/G⌋; the paper's configurations take G dividing
** w, where the two agree; lenx takes the eager one. In lenx's spec this is a
** position map from w on with group G, scale 1, shift w − w/G (spec.h,
** struct lx_posmap). G = 1 is RoPE.
**
** Not included: the patch's optional log-scaled query (scale_base), which
** `logn` expresses when stacked. Formula, parameters and golden values:
** docs/methods.md#selfextend.
*/
#include <math.h>

#include "methods/method.h"

struct selfextend_params {
    long group;     /* G: positions beyond w are grouped by G; 0 = auto */
    long window;    /* w: the neighbor window; 0 = L/4 */
};

static const struct lx_param selfextend_rows[] = {
    LX_P_INT(struct selfextend_params, group, "0", 0, 1e9, LX_PF_SHOW | LX_PF_AUTO,
             "G: beyond w, query and key positions are floor(p / G) (the query's shifted by w - w/G); 0 = the "
             "smallest G that keeps every distance of the cell below the training length"),
    LX_P_INT(struct selfextend_params, window, "0", 0, 1e12, LX_PF_SHOW | LX_PF_AUTO,
             "w: distances below w keep RoPE's; 0 = training length / 4, at least 1"),
};

/* The largest distance of n tokens under (G, w). */
static double reach(long n, long G, long w)
{
    return (double)((n - 1) / G) + (double)w - (double)w / (double)G;
}

/* window auto: a quarter of the training length; group auto: the smallest G
** whose largest distance at the cell's length is below L (1 when n <= L). */
static int selfextend_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct selfextend_params *p = params;
    if (p->window == 0)
        p->window = f->train_len / 4 > 1 ? f->train_len / 4 : 1;
    if (p->group != 0)
        return LX_OK;
    if (f->length <= f->train_len) {
        p->group = 1;
        return LX_OK;
    }
    if (p->window >= f->train_len)
        return lx_err(err, LX_EINVAL, "selfextend: group auto needs a window below the training length %ld, not %ld: "
                      "beyond it no group keeps %ld tokens' distances below %ld\n  hint: a smaller window, or a "
                      "given group", f->train_len, p->window, f->length, f->train_len);
    long G = 1;
    while (reach(f->length, G, p->window) > (double)(f->train_len - 1))
        G++;
    p->group = G;
    return LX_OK;
}

static int selfextend_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                            struct lx_error *err)
{
    const struct selfextend_params *p = params;
    (void)f;
    int rc = lx_spec_need_rotary(spec, "selfextend", err);
    if (rc == LX_OK)
        rc = lx_spec_claim_posmap(spec, "selfextend", err);
    if (rc < 0)
        return rc;
    long G = p->group, w = p->window;
    LX_ASSERT(G >= 1 && w >= 1);    /* resolved */
    spec->posmap = (struct lx_posmap){
        .method = "selfextend", .from = w, .group = G, .scale = 1, .shift = (double)w - (double)w / (double)G,
        .cap = INFINITY,
    };
    return LX_OK;
}

const struct lx_method lx_method_selfextend = {
    .name = "selfextend",
    .summary = "Self-Extend grouped attention beyond a neighbor window, Jin et al. 2024 (arXiv 2401.01325)",
    .schema = LX_SCHEMA(selfextend_rows, struct selfextend_params, NULL),
    .kind = LX_KIND_INFERENCE,
    .needs = LX_CAP_MODEL,
    .resolve = selfextend_resolve,
    .apply = selfextend_apply,
};
