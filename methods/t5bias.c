/*
** methods/t5bias.c - T5's learned relative-position bias.
**
** Raffel et al., "Exploring the Limits of Transfer Learning with a Unified
** Text-to-Text Transformer", JMLR 2020, arXiv 1910.10683, §2.1; the bucket
** function is transformers' T5Attention._relative_position_bucket (ported
** from Mesh TensorFlow). No position embedding: the logit of the key t
** positions back gets a learned scalar per head and distance bucket,
**
**     L_t = S_t + b_h[bucket(t)]       (a = 1, m = b_h[bucket(t)])
**
** with buckets 0 .. nb/2 − 1 for the exact distances 0 .. nb/2 − 1, then
** logarithmically wider buckets up to max_distance, past which every distance
** shares the last bucket: the decoder's, unidirectional, table, on a causal
** model. On a masked LM (facts.bidirectional) the encoder's table: the same
** rule over nb/2 buckets for the keys up to the query, and nb/2 more for the
** keys after it, so the op sees the signed δ = i − j (signed_t) and the
** tables run over both signs. One table of nb biases per head is shared by all
** layers (T5 computes it in the first layer and reuses it); the model holds it
** as the tensor rel_bias (heads × buckets), initialised to 0, and training
** learns it with the rest. The bias is added to the final logit, so t5bias is
** the stack's last logit transform. Unlike T5, S keeps the 1/sqrt(d) of the
** other methods (T5 folds it into the initialisation of its projections).
** t is δ (|δ| on a causal model), the effective distance after any position
** map, floored toward 0.
** Buckets, golden values and the comparison with ALiBi: docs/methods.md#t5bias.
*/
#include "methods/method.h"

struct t5bias_params {
    long buckets;       /* nb: distance buckets per head */
    long max_distance;  /* distances from it on share the last bucket */
};

static const struct lx_param t5bias_rows[] = {
    LX_P_INT(struct t5bias_params, buckets, "32", 2, 4096, LX_PF_SHOW,
             "distance buckets per head: nb/2 exact distances, then log-spaced ones up to max_distance"),
    LX_P_INT(struct t5bias_params, max_distance, "128", 2, 1L << 30, 0,
             "distances from it on share the last bucket"),
};

static void t5bias_dist_affine(const void *params, const struct lx_facts *f, int head, double t, double *a,
                               double *m)
{
    const struct t5bias_params *p = params;
    struct lx_relbias r = {.buckets = (int)p->buckets, .max_distance = p->max_distance,
                           .bidirectional = f->bidirectional};
    *a = 1.0;
    *m = f->rel_bias ? (double)f->rel_bias[(long)head * p->buckets + lx_relbias_bucket(&r, t)] : 0.0;
}

/* Each bucket's gradient: the distances' that fall in it (both signs when
** bidirectional: g[t + n − 1] at t in (−n, n)). */
static void t5bias_pull(const struct lx_relbias *r, const float *theta, const double *g, long n, double *dtheta)
{
    (void)theta;
    long t0 = r->bidirectional ? -(n - 1) : 0;
    for (long t = t0; t < n; t++)
        dtheta[lx_relbias_bucket(r, (double)t)] += g[t - t0];
}

static int t5bias_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    const struct t5bias_params *p = params;
    if (f->bidirectional && p->buckets < 4)
        return lx_err(err, LX_EINVAL, "t5bias: a masked LM's buckets split in two halves, each with exact "
                      "distances; %ld buckets are too few\n  hint: use buckets >= 4 (T5: 32)", p->buckets);
    /* the exact distances: nb/2, or on a masked LM (nb/2)/2 of each side's nb/2 buckets (lx_relbias_bucket) */
    long exact = f->bidirectional ? p->buckets / 2 / 2 : p->buckets / 2;
    if (p->max_distance <= exact)
        return lx_err(err, LX_EINVAL, "t5bias: max_distance %ld must exceed %s = %ld, the exact distances%s\n"
                      "  hint: T5 uses buckets: 32, max_distance: 128", p->max_distance,
                      f->bidirectional ? "(buckets/2)/2" : "buckets/2", exact,
                      f->bidirectional ? " of each side's buckets/2 on a masked LM" : "");
    return LX_OK;
}

static int t5bias_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                        struct lx_error *err)
{
    const struct t5bias_params *p = params;
    int rc = lx_spec_claim_positions(spec, "t5bias", err);
    struct lx_logit_op op = {
        .kind = LX_OP_DIST_AFFINE, .method = "t5bias", .params = params,
        .dist_affine = t5bias_dist_affine, .signed_t = f->bidirectional,
    };
    if (rc == LX_OK && (rc = lx_spec_push(spec, &op, err)) == LX_OK)
        spec->rel = (struct lx_relbias){.method = "t5bias", .kind = LX_REL_T5, .values = (int)p->buckets,
                                        .buckets = (int)p->buckets, .max_distance = p->max_distance,
                                        .bidirectional = f->bidirectional, .pull = t5bias_pull};
    return rc;
}

const struct lx_method lx_method_t5bias = {
    .name = "t5bias",
    .summary = "learned bias per head and log-spaced distance bucket, Raffel et al. 2020 (T5, arXiv 1910.10683)",
    .schema = LX_SCHEMA(t5bias_rows, struct t5bias_params, NULL),
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_MODEL,
    .apply = t5bias_apply,
    .check = t5bias_check,
};
