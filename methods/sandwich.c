/*
** methods/sandwich.c - Sandwich: the inner product of sinusoidal position
** embeddings as a fixed relative bias.
**
** Chi, Fan, Rudnicky, Ramadge, "Dissecting Transformer Length Extrapolation
** via the Lens of Receptive Field Analysis", ACL 2023, arXiv 2212.10356, §5;
** the code is NVIDIA NeMo's SandwichRelativePositionEmbedding
** (nemo/collections/nlp/modules/common/megatron/position_embedding/
** sandwich_relative_position_embedding.py). No position embedding: the logit
** of the key t positions back gets
**
**     L_t = S_t + (Σ_{k=1}^{d'/2} cos(t·ω_k) − d'/2) / (8·(h + 1)/H)
**     ω_k = 10000^(−2k/d')                        (k from 1, as the code)
**
** (a = 1 and m the bias in the spec's terms), the inner product of two
** sinusoidal embeddings of d' values at distance t, less its value at t = 0 so
** that the key at the query's own position gets 0, divided per head as the
** code divides it: head h of H by 8·(h + 1)/H. d' is the code's hidden size,
** the head's dimension unless given. cos is even, so t = |δ| serves both
** directions (the code's bidirectional form is the same bias). Added after
** the 1/sqrt(d) scaling, as ALiBi; it claims the position scheme and must be
** trained in. Table and golden values: docs/methods.md#sandwich.
*/
#include <math.h>

#include "methods/method.h"

struct sandwich_params {
    long dim;           /* d': the sinusoid's dimension; 0 = the head's */
};

static const struct lx_param sandwich_rows[] = {
    LX_P_INT(struct sandwich_params, dim, "0", 0, 65536, 0,
             "d', the dimension of the sinusoidal embeddings (even); 0 = the head dimension, as the code"),
};

static long sandwich_dim(const struct sandwich_params *p, const struct lx_facts *f)
{
    return p->dim ? p->dim : f->d_head;
}

static void sandwich_dist_affine(const void *params, const struct lx_facts *f, int head, double t, double *a,
                                 double *m)
{
    long d = sandwich_dim(params, f);
    double sum = 0.0;
    for (long k = 1; t > 0 && k <= d / 2; k++)
        sum += cos(t * pow(10000.0, -2.0 * (double)k / (double)d)) - 1.0;     /* each term <= 0 */
    *a = 1.0;
    *m = sum / (8.0 * (head + 1) / f->n_heads);
}

static int sandwich_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    long d = sandwich_dim(params, f);
    if (f->n_heads < 1)
        return lx_err(err, LX_EINVAL, "sandwich: needs at least one attention head, got %d", f->n_heads);
    if (d < 2 || d % 2)
        return lx_err(err, LX_EINVAL, "sandwich: the sinusoid's dimension d' = %ld must be even and at least 2\n"
                      "  hint: dim: 0 takes the head dimension", d);
    return LX_OK;
}

static int sandwich_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                          struct lx_error *err)
{
    (void)f;
    int rc = lx_spec_claim_positions(spec, "sandwich", err);
    if (rc < 0)
        return rc;
    struct lx_logit_op op = {
        .kind = LX_OP_DIST_AFFINE, .method = "sandwich", .params = params,
        .dist_affine = sandwich_dist_affine,
    };
    return lx_spec_push(spec, &op, err);
}

const struct lx_method lx_method_sandwich = {
    .name = "sandwich",
    .summary = "sinusoidal inner product sum_k cos(t*w_k) - d'/2 per head, Chi et al. 2023 (Sandwich, arXiv "
               "2212.10356)",
    .schema = LX_SCHEMA(sandwich_rows, struct sandwich_params, NULL),
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_LOGITS,
    .check = sandwich_check,
    .apply = sandwich_apply,
};
