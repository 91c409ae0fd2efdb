/*
** methods/randpos.c - randomized positional encodings (Ruoss, Delétang,
** Genewein, Grau-Moya, Csordás, Bennani, Legg & Veness, ACL 2023, arXiv
** 2305.16843, §3).
**
** A training window of T tokens takes as its position ids T distinct integers
** drawn uniformly from [0, L), L much larger than T, sorted increasingly: the
** model sees the positions (and, through RoPE, the distances up to L − 1) of
** sequences up to L tokens long while training on T. The trainer draws them
** from the counter-based generator keyed on the model key, step and window
** (harness/engine/model/positions.c, Floyd's sampling: every T-subset of [0, L)
** equally likely). As the paper's code, evaluation (and validation) draws too:
** a pass of n <= L tokens takes the sorted draw of n ids from [0, L) keyed on
** (n, L) (lx_randpos_eval; the KV cache's decode steps read the same draw),
** and a length past L is refused. Construction, parameters and tested
** properties: docs/methods.md#randpos.
*/
#include "methods/method.h"

struct randpos_params {
    long target;    /* L; 0 = 16 × the training length */
};

static const struct lx_param randpos_rows[] = {
    LX_P_INT(struct randpos_params, target, "0", 0, 1L << 30, LX_PF_SHOW | LX_PF_AUTO,
             "length L the positions are drawn from; 0 = 16 x the training length"),
};

/* target auto: 16 x the training length. */
static int randpos_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct randpos_params *p = params;
    (void)err;
    if (p->target == 0)
        p->target = 16 * f->train_len;
    return LX_OK;
}

static int randpos_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    const struct randpos_params *p = params;
    if (p->target < f->train_len)
        return lx_err(err, LX_EINVAL, "randpos: target %ld is shorter than the training length %ld\n"
                      "  hint: target is the length L the positions are drawn from, e.g. 16 x the training length",
                      p->target, f->train_len);
    if (lx_spec_check_train_target("randpos", p->target, f, err) < 0)
        return LX_EINVAL;
    if (p->target > (1L << 30))
        return lx_err(err, LX_EINVAL, "randpos: target %ld (16 x the training length %ld) is past 2^30 positions\n"
                      "  hint: give target explicitly, at most 1073741824", p->target, f->train_len);
    if (!f->training && f->length > p->target)
        return lx_err(err, LX_EINVAL, "randpos: length %ld is longer than L = %ld, the range its positions are "
                      "drawn from\n  hint: evaluate at most L tokens, or train with a larger target", f->length,
                      p->target);
    return LX_OK;
}

static int randpos_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec, struct lx_error *err)
{
    const struct randpos_params *p = params;
    (void)f;
    int rc = lx_spec_claim_train_positions(spec, "randpos", err);
    if (rc < 0)
        return rc;
    spec->pose.random = 1;
    spec->pose.target = p->target;
    return LX_OK;
}

const struct lx_method lx_method_randpos = {
    .name = "randpos",
    .summary = "randomized positions, a sorted draw from a longer range in training and at evaluation, Ruoss et al. "
               "2023 (arXiv 2305.16843)",
    .schema = LX_SCHEMA(randpos_rows, struct randpos_params, NULL),
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_MODEL,
    .resolve = randpos_resolve,
    .check = randpos_check,
    .apply = randpos_apply,
};
