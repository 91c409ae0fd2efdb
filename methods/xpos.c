/*
** methods/xpos.c - xPos: rotary positions with a per-pair exponential decay
** of q·k over the distance.
**
** Sun, Dong, Patra, Ma, Huang, Benhaim, Chaudhary, Song, Wei, "A
** Length-Extrapolatable Transformer", ACL 2023, arXiv 2212.10554, §3.2; the code
** is microsoft/torchscale's XPOS (torchscale/component/xpos_relative_position.py).
** On top of RoPE, pair k of the query at position n is scaled by ζ_k^(n/γ) and
** of the key at m by ζ_k^(−m/γ), so pair k's share of q·k is RoPE's times
**
**     ζ_k^((n − m)/γ),   ζ_k = (2k/R + g)/(1 + g),   k = 0 .. R/2 − 1
**
** with R the channels the rope turns (the head dimension unless rope's dims
** says fewer), g = 0.4 and γ = scale_base = 512 as the code. The highest
** frequency (k = 0, ζ = g/(1 + g)) decays fastest, the lowest hardly at all:
** distant keys are seen through the slow pairs only. The code scales by
** position less the middle of the sequence, which leaves the logits as they
** are and keeps both factors inside float's range; lenx does the same with the
** middle of the positions in use (the evaluation, training or fine-tuning
** length, or the target PoSE's and randomized positions spread their ids
** over, wherever they stand in the stack: the finish hook), and refuses
** positions whose factors would still leave it. A training-time method after rope (`[rope, xpos]`); it sets the logit
** geometry, so no CosScale beside it, and its decay follows the positions the
** rows are turned by, so no position map (rerope, streaming, ...) either.
** Causal models only: for a key after the query the factor would grow.
** The paper's blockwise causal attention at inference is methods/bca.c:
** `[rope, xpos, bca]`.
** Golden values: docs/methods.md#xpos.
*/
#include <math.h>

#include "methods/method.h"

#define XPOS_MAX_EXPONENT 60.0      /* |ln| of the largest factor allowed: e^60 ≈ 1.1e26, far from float's 3.4e38 */

struct xpos_params {
    double scale_base;  /* γ: the decay's distance scale */
    double gamma;       /* g: ζ_k = (2k/R + g)/(1 + g) */
};

static const struct lx_param xpos_rows[] = {
    LX_P_FLOAT(struct xpos_params, scale_base, "512", 0, 1e9, LX_PF_MIN_OPEN,
               "gamma: pair k's share of q.k decays as zeta_k^(distance / scale_base)"),
    LX_P_FLOAT(struct xpos_params, gamma, "0.4", 0, 1e6, LX_PF_MIN_OPEN,
               "g in zeta_k = (2k/R + g) / (1 + g): the fastest pair's zeta is g / (1 + g)"),
};

/* Positions 0 .. n − 1 the stack can turn rows to: the longest run it serves (the cell's length, the training
** or the fine-tuning length), or the target that PoSE's skips and randomized positions spread their ids over
** (up to target − 1, in training; randpos at evaluation too). *by names the source, for messages. */
static long xpos_positions(const struct lx_facts *f, const struct lx_spec *spec, const char **by)
{
    long n = f->length > f->train_len ? f->length : f->train_len;
    n = f->ft_len > n ? f->ft_len : n;
    *by = "the longest run the stack serves";
    if (spec->pose.method && spec->pose.target > n) {
        n = spec->pose.target;
        *by = spec->pose.random ? "randpos's target" : "pose's target";
    }
    return n;
}

static int xpos_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    (void)params;
    if (f->bidirectional)
        return lx_err(err, LX_EINVAL, "xpos: a masked LM attends to keys after the query, whose factor "
                      "zeta^((i - j)/scale_base) would grow with the distance\n  hint: xPos is for causal models");
    return LX_OK;
}

static int xpos_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec, struct lx_error *err)
{
    const struct xpos_params *p = params;
    (void)f;
    int rc = lx_spec_claim_decay(spec, "xpos", err);
    if (rc == LX_OK)
        rc = lx_spec_claim(&spec->geometry, "xpos", "the logit geometry", err);
    if (rc < 0)
        return rc;
    struct lx_rotary *r = &spec->rotary;
    double R = 2.0 * r->n_pairs;
    r->decay_scale = p->scale_base;
    for (int k = 0; k < r->n_pairs; k++)
        r->log_zeta[k] = log((2.0 * k / R + p->gamma) / (1.0 + p->gamma));
    return LX_OK;
}

/* Once the whole stack applied (pose or randpos may come after xpos): the centre c is the middle of the
** positions in use, and positions whose factors would pass e^XPOS_MAX_EXPONENT are refused. */
static int xpos_finish(const void *params, const struct lx_facts *f, struct lx_spec *spec, struct lx_error *err)
{
    const struct xpos_params *p = params;
    const char *by;
    long n = xpos_positions(f, spec, &by);
    double lz0 = fabs(log(p->gamma / (1.0 + p->gamma)));    /* pair 0 decays fastest */
    double reach = 0.5 * (double)n * lz0 / p->scale_base;
    long most = (long)(2.0 * XPOS_MAX_EXPONENT * p->scale_base / lz0);
    if (reach > XPOS_MAX_EXPONENT)
        return lx_err(err, LX_EINVAL, "xpos: at %ld positions (%s) the scale factors reach exp(%.0f), beyond what "
                      "float holds with room to spare (exp(%.0f))\n  hint: at most %ld positions with scale_base "
                      "%g: %s, or raise scale_base (a model trained with it keeps it; a new one may take a larger)",
                      n, by, reach, XPOS_MAX_EXPONENT, most, p->scale_base,
                      spec->pose.method && n == spec->pose.target ? "give the training positions a smaller target"
                                                                   : "evaluate shorter");
    spec->rotary.decay_center = (double)(n / 2);
    return LX_OK;
}

const struct lx_method lx_method_xpos = {
    .name = "xpos",
    .summary = "xPos, Sun et al. 2023 (LEX): RoPE with a per-pair exponential decay over the distance",
    .schema = LX_SCHEMA(xpos_rows, struct xpos_params, NULL),
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_MODEL,
    .check = xpos_check,
    .apply = xpos_apply,
    .finish = xpos_finish,
};
