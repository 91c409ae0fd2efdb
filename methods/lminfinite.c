/*
** methods/lminfinite.c - LM-Infinite's Λ-shaped attention.
**
** Han, Wang, Peng, Xiong, Chen, Ji, Wang, "LM-Infinite: Zero-Shot Extreme
** Length Generalization for Large Language Models", NAACL 2024, arXiv
** 2308.16137; Glaciohound/LM-Infinite (models/llama.py,
** limited_distance_forward). For query i and key j:
**
**   local branch   0 <= i − j <= L_local − 1: RoPE at the true distance
**   global branch  j < n_global and i − j >= L_local: the query is rotated to
**                  D and the key not at all, so the distance is the constant
**                  D = min(limit, kv_len − 1)
**   otherwise      masked
**
** In the spec: visibility window L_local with n_global sinks, and a position
** map from distance L_local on with scale 0, shift D, no cap. kv_len is the
** evaluation window (facts.length), so while a window is short the global
** distance is kv_len − 1. L_local and limit default to the training length L,
** as convert_llama_model(model, L, n_global) sets them; the ceiling L is one
** beyond the largest distance seen in pretraining (L − 1), as in the reference.
** n_global is 10 in the README (the evaluation scripts use 100). Needs rope.
** Training-free. Formula, parameters and golden values: docs/methods.md#lminfinite.
*/
#include <math.h>

#include "methods/method.h"

struct lminfinite_params {
    long n_global;  /* keys 0..n_global−1 stay visible (the global branch) */
    long local;     /* L_local: the local window, query included; 0 = L */
    long limit;     /* the distance ceiling; 0 = L */
};

static const struct lx_param lminfinite_rows[] = {
    LX_P_INT(struct lminfinite_params, n_global, "10", 0, 1e12, LX_PF_SHOW,
             "starting tokens every query sees (the global branch)"),
    LX_P_INT(struct lminfinite_params, local, "0", 0, 1e12, LX_PF_AUTO,
             "L_local: keys 0..L_local-1 back use their true distance; 0 = the training length"),
    LX_P_INT(struct lminfinite_params, limit, "0", 0, 1e12, LX_PF_AUTO,
             "global keys sit at distance min(limit, length - 1); 0 = the training length"),
};

/* local and limit auto: the training length. */
static int lminfinite_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct lminfinite_params *p = params;
    if (p->local == 0)
        p->local = f->train_len;
    if (p->limit == 0)
        p->limit = f->train_len;
    if (p->local < 1 || p->limit < 1)
        return lx_err(err, LX_EINVAL, "lminfinite: local or limit 0 means the training length, which is %ld "
                      "here\n  hint: give both, e.g. lminfinite: {local: 64, limit: 64}", f->train_len);
    return LX_OK;
}

static int lminfinite_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                            struct lx_error *err)
{
    const struct lminfinite_params *p = params;
    int rc = lx_spec_need_rotary(spec, "lminfinite", err);
    if (rc == LX_OK)
        rc = lx_spec_claim(&spec->vis.method, "lminfinite", "the visible keys", err);
    if (rc == LX_OK)
        rc = lx_spec_claim_posmap(spec, "lminfinite", err);
    if (rc < 0)
        return rc;
    long local = p->local, limit = p->limit;
    LX_ASSERT(local >= 1 && limit >= 1);    /* resolved */
    long D = limit < f->length - 1 ? limit : f->length - 1;
    spec->vis.window = local;
    spec->vis.sinks = p->n_global;
    spec->posmap = (struct lx_posmap){
        .method = "lminfinite", .from = local, .scale = 0, .shift = (double)(D > 0 ? D : 0), .cap = INFINITY,
    };
    return LX_OK;
}

const struct lx_method lx_method_lminfinite = {
    .name = "lminfinite",
    .summary = "LM-Infinite Lambda-shaped attention, global keys at distance D, Han et al. 2024 (arXiv 2308.16137)",
    .schema = LX_SCHEMA(lminfinite_rows, struct lminfinite_params, NULL),
    .kind = LX_KIND_INFERENCE,
    .needs = LX_CAP_MODEL,
    .resolve = lminfinite_resolve,
    .apply = lminfinite_apply,
};
