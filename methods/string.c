/*
** methods/string.c - STRING: far distances shifted onto well-trained ones,
** training-free.
**
** An et al. 2025, "Why Does the Effective Context Length of LLMs Fall Short?",
** arXiv 2410.18745; HKUNLP/STRING (string_for_llama.py: `forward` and
** `string_flash_forward`). Pairs closer than the offset S keep RoPE's distance;
** from S on, the query is rotated to i − S + W, so
**
**     δ = i − j              if i − j < S
**     δ = i − j − S + W      otherwise
**
** the distances of S and more (the rarely trained ones) are dropped and the
** far keys reuse W, W + 1, ...; W keeps the nearest far key from looking
** adjacent. In lenx's spec: a position map from distance S with scale 1 and
** shift W − S (spec.h, struct lx_posmap); bidirectional rows get the mirror.
** W = S is RoPE. The code also multiplies cos and sin by 0.1 ln 2 + 1 (its
** `attention_factor`, "similar with Yarn"), so every logit gets its square:
** `attn_factor`, 1 for the paper's bare shift.
**
** The reference's decode step splits the cache into the last S keys (near) and
** the rest (shifted), as above. Its prefill runs flash attention with window
** (S, 0), whose keys reach distance S inclusive, and the shifted branch from
** distance S on: the key at distance exactly S enters both branches, once at
** S and once at W. lenx takes the decode step's split, one logit per key.
** Formula, parameters and golden values: docs/methods.md#string.
*/
#include <math.h>

#include "methods/method.h"

struct string_params {
    long offset;        /* S: distances >= S are shifted; 0 = ratio · n */
    double ratio;       /* S / n when offset is automatic */
    long local;         /* W: the distance the nearest far key takes; 0 = min(128, S/4) */
    double attn_factor; /* on cos and sin: the logits get its square */
};

static const struct lx_param string_rows[] = {
    LX_P_INT(struct string_params, offset, "0", 0, 1e12, LX_PF_SHOW | LX_PF_AUTO,
             "S: distances >= S become d - S + W; 0 = floor(ratio * n), n = the cell's length"),
    LX_P_FLOAT(struct string_params, ratio, "0.33", 0, 1, LX_PF_MIN_OPEN,
               "S / n when offset is 0 (the reference's shifted_ratio: 0.33 in its RULER script)"),
    LX_P_INT(struct string_params, local, "0", 0, 1e12, LX_PF_SHOW | LX_PF_AUTO,
             "W: the shifted distances start at W (at most S); 0 = min(128, S/4), at least 1"),
    LX_P_FLOAT(struct string_params, attn_factor, "1.0693147180559945", 0, 1e6, LX_PF_MIN_OPEN,
               "on cos and sin, the logits get its square; the reference's 0.1 ln 2 + 1, 1 = none"),
};

/* offset auto: ⌊ratio · n⌋, at least 1; local auto: the reference's 128, at
** most a quarter of S, at least 1. */
static int string_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct string_params *p = params;
    if (p->offset == 0) {
        if (f->length < 1)
            return lx_err(err, LX_EINVAL, "string: offset auto needs the cell's length, and there is none here\n"
                          "  hint: give offset");
        p->offset = (long)floor(p->ratio * (double)f->length);
        p->offset = p->offset > 1 ? p->offset : 1;
    }
    long quarter = p->offset / 4;
    if (p->local == 0)
        p->local = quarter > 128 ? 128 : quarter > 1 ? quarter : 1;
    return LX_OK;
}

static int string_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    const struct string_params *p = params;
    (void)f;
    if (p->local > p->offset)
        return lx_err(err, LX_EINVAL, "string: local W = %ld is above offset S = %ld: the far keys would move "
                      "further away, not nearer\n  hint: a local below the offset (0 = min(128, S/4)), or a "
                      "larger offset or ratio", p->local, p->offset);
    return LX_OK;
}

/* The logit multiplier attn_factor²; the same for every row. */
static double string_row_scale(const void *params, const struct lx_facts *f, long n)
{
    const struct string_params *p = params;
    (void)f, (void)n;
    return p->attn_factor * p->attn_factor;
}

static int string_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec, struct lx_error *err)
{
    const struct string_params *p = params;
    (void)f;
    int rc = lx_spec_need_rotary(spec, "string", err);
    if (rc == LX_OK)
        rc = lx_spec_claim_posmap(spec, "string", err);
    if (rc < 0)
        return rc;
    LX_ASSERT(p->offset >= 1 && p->local >= 1);     /* resolved */
    spec->posmap = (struct lx_posmap){
        .method = "string", .from = p->offset, .scale = 1, .shift = (double)(p->local - p->offset), .cap = INFINITY,
    };
    if (p->attn_factor == 1)
        return LX_OK;
    struct lx_logit_op op = {
        .kind = LX_OP_ROW_SCALE, .method = "string", .params = params, .row_scale = string_row_scale,
    };
    return lx_spec_rotary_gain(spec, &op, p->attn_factor, err);
}

const struct lx_method lx_method_string = {
    .name = "string",
    .summary = "STRING: distances from S on shifted to d - S + W, An et al. 2025 (arXiv 2410.18745)",
    .schema = LX_SCHEMA(string_rows, struct string_params, NULL),
    .kind = LX_KIND_INFERENCE,
    .needs = LX_CAP_MODEL,
    .resolve = string_resolve,
    .check = string_check,
    .apply = string_apply,
};
