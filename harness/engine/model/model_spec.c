/*
** harness/engine/model/model_spec.c - the spec as the engine runs it on a
** model (see model.h): the check that a stack reads what the model learned
** (a relative bias, sinks), the model's own parts of the spec (its learned
** bias, qk_dim, soft-cap, Gemma 3's local layers) and a layer's (its learned
** sinks).
*/
#include "harness/engine/model/model.h"

#include <math.h>

int lx_model_spec_check(const struct lx_model *m, const struct lx_spec *spec, struct lx_error *err)
{
    if (m->arch.sinks && !spec->zsink.learn)
        return lx_err(err, LX_EINVAL, "the model learned a sink logit per layer and head (arch sinks) and the "
                      "stack reads none\n  hint: evaluate it with its training stack's {zerosink: {learned: "
                      "true}}");
    if (!m->arch.sinks && spec->zsink.learn)
        return lx_err(err, LX_EINVAL, "the stack's zerosink learned: true reads sink logits the model does not "
                      "have\n  hint: learned sinks are trained in; train a model with them");
    if (spec->learn_scale && !m->arch.logit_scale)      /* it would run as the unlearned scale, silently */
        return lx_err(err, LX_EINVAL, "the stack learns its logit scale (learn: true) and the model has no learned "
                      "scale (arch logit_scale)\n  hint: a learned scale is trained in; drop learn: true to run the "
                      "method's own");
    int have = lx_arch_rel_kind(&m->arch), want = spec->rel.method ? spec->rel.kind : LX_REL_NONE;
    long nh = lx_arch_rel_values(&m->arch), nw = want ? spec->rel.values : 0;
    const char *hs = lx_relbias_describe(have), *ws = lx_relbias_describe(want);
    if (nh == nw && have == want)
        return LX_OK;
    if (!want)
        return lx_err(err, LX_EINVAL, "the model learned a relative-position bias, %s, %ld values a head, and the "
                      "stack reads none\n  hint: evaluate it with its training stack, which ends in that method", hs,
                      nh);
    if (!have)
        return lx_err(err, LX_EINVAL, "the stack's %s reads a learned bias the model does not have\n  hint: a "
                      "learned bias is trained in; train a model with it", ws);
    return lx_err(err, LX_EINVAL, "the stack's %s reads %ld values a head and the model learned %s, %ld\n  hint: "
                  "a learned bias is trained in; evaluate with the model's own", ws, nw, hs, nh);
}

/* The spec of a's local layers (lx_arch_local): rope at local_base over every
** pair of a head, layout half, and a window of local_window keys; no method. */
static void local_spec(struct lx_spec *loc, const struct lx_arch *a, const struct lx_spec *global)
{
    lx_spec_init(loc, &global->facts);
    struct lx_rotary *r = &loc->rotary;
    r->n_pairs = (int)(a->d_head / 2);
    r->layout = LX_ROPE_HALF;
    r->base = a->local_base;
    for (int k = 0; k < r->n_pairs; k++)    /* as methods/rope.c builds its table */
        r->inv_freq[k] = pow(a->local_base, -2.0 * k / (double)a->d_head);
    loc->positions = "local layers";
    loc->vis = (struct lx_visibility){.method = "local layers", .window = a->local_window};
    loc->qk_dim = global->qk_dim;
    loc->softcap = global->softcap;
    loc->zsink = global->zsink;     /* a zero sink is the model's softmax, in every layer */
}

const struct lx_spec *lx_model_layer_spec(const struct lx_model *m, const struct lx_spec *spec, long l,
                                          struct lx_spec *own)
{
    const struct lx_spec *ls = lx_spec_layer(spec, l);
    const float *w = m->v.layer[l].sink;
    if (!w)
        return ls;
    LX_ASSERT(ls->zsink.learn);     /* lx_model_spec_check */
    *own = *ls;
    own->zsink.learned = w;
    return own;
}

const struct lx_spec *lx_model_spec(const struct lx_model *m, const struct lx_spec *spec, struct lx_spec local[2])
{
    const struct lx_arch *a = &m->arch;
    LX_ASSERT(lx_arch_rel_values(a) == (spec->rel.method ? spec->rel.values : 0));  /* lx_model_spec_check */
    if ((!m->v.rel_bias || spec->facts.rel_bias == m->v.rel_bias) && !a->qk_dim && !a->local_every &&
        !a->attn_softcap)
        return spec;
    local[0] = *spec;
    if (m->v.rel_bias)
        local[0].facts.rel_bias = m->v.rel_bias;
    local[0].qk_dim = (double)a->qk_dim;
    local[0].softcap = a->attn_softcap;
    if (a->local_every) {
        local_spec(&local[1], a, &local[0]);
        local[0].local = &local[1];
        local[0].local_every = a->local_every;
    }
    return &local[0];
}
