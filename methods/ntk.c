/*
** methods/ntk.c - NTK-aware scaling of the rotary base, three published forms.
**
** All three replace the base b by a larger b' and rebuild θ_k = b'^(−2k/d), so
** the highest frequency θ_0 = 1 stays and the lowest is slowed the most
** (bloc97 2023, reddit r/LocalLLaMA "NTK-Aware Scaled RoPE",
** https://www.reddit.com/r/LocalLLaMA/comments/14lz7j5/; written up in
** Peng et al. 2023, YaRN, arXiv 2309.00071, §3.1 Def. 1, Eq. 14-16, and §3.3). With
** L the training length, d the head dimension and e = d/(d − 2):
**
**   static   b' = b·s^e: the lowest frequency is divided by exactly s.
**            s 0 = max(1, n/L).
**   dynamic  Hugging Face `_compute_dynamic_ntk_parameters`:
**            b' = b·(α·n/L − (α − 1))^e with n = max(length, L), α = `factor`.
**            Only for α = 1 is this static NTK with s = n/L.
**   qwen     Qwen-1 `modeling_qwen.py` (get_ntk_alpha):
**            α = max(1, 2^ceil(log2(n/L) + 1) − 1), b' = b·α^e, so α jumps
**            1 -> 3 at n = L + 1 and then 7, 15, ... at each doubling.
**
** n is the cell's evaluation length: the table is built once per length, as in
** one long forward pass where every token uses the base for the final length
** (HF's growth-only cache and Qwen's prefill-time α agree on that). log2 is
** exact at powers of two, where Qwen's math.log(x, 2) may be off by an ulp.
** Training-free, or fine-tuned in (`finetune:`, docs/config.md#fine-tuning),
** as the continual-pretraining experiments of Zhong et al. 2024 (arXiv
** 2406.13282, §4) do. Formulas, parameters and golden values: docs/methods.md#ntk.
*/
#include <math.h>

#include "methods/method.h"

enum { NTK_STATIC, NTK_DYNAMIC, NTK_QWEN };

struct ntk_params {
    int mode;       /* NTK_STATIC, NTK_DYNAMIC or NTK_QWEN */
    double scale;   /* static: s in b·s^(d/(d−2)); 0 = auto: max(1, length / train_len) */
    double factor;  /* dynamic: HF's factor α */
};

static const struct lx_param ntk_rows[] = {
    LX_P_ENUM(struct ntk_params, mode, "static", "static|dynamic|qwen", LX_PF_SHOW,
              "static: b*s^(d/(d-2)); dynamic: Hugging Face dynamic NTK; qwen: Qwen-1's alpha 1, 3, 7, 15, ..."),
    LX_P_FLOAT(struct ntk_params, scale, "0", 0, 1e6, LX_PF_SHOW | LX_PF_AUTO,
               "static mode: s; 0 = max(1, length / training length)"),
    LX_P_FLOAT(struct ntk_params, factor, "1", 0, 1e6, LX_PF_MIN_OPEN,
               "dynamic mode: HF's factor alpha in b*(alpha*n/L - (alpha-1))^(d/(d-2))"),
};

/* `scale` matters in static mode only, `factor` in dynamic mode only. */
static const struct lx_param_rule ntk_rules[] = {
    {"scale", "mode=static"},
    {"factor", "mode=dynamic"},
    {NULL, NULL},
};

/* Static mode's scale auto: max(1, length / L), or max(1, ft_len / L) at
** every length when fine-tuned in at ft_len (left 0 without a training
** length, which ntk_check refuses). */
static int ntk_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct ntk_params *p = params;
    if (f->training && !f->ft_len && p->mode == NTK_STATIC && p->scale == 0)
        return lx_err(err, LX_EINVAL, "ntk: trained in (train: true) it needs an explicit scale\n"
                      "  hint: e.g. ntk: {scale: 4, train: true}, or fine-tune it in at a length");
    if (p->mode == NTK_STATIC && p->scale == 0 && f->train_len >= 1) {
        double L = (double)f->train_len, n = (double)(f->ft_len ? f->ft_len : f->length);
        p->scale = n > L ? n / L : 1.0;
    }
    return LX_OK;
}

/* The new base b' for original base b and head dimension d. */
static double ntk_base(const struct ntk_params *p, const struct lx_facts *f, double b, int d)
{
    double e = (double)d / (d - 2), L = (double)f->train_len;
    double n = f->length > f->train_len ? (double)f->length : L;
    switch (p->mode) {
    case NTK_STATIC:
        LX_ASSERT(p->scale > 0);    /* resolved */
        return b * pow(p->scale, e);
    case NTK_DYNAMIC:
        return b * pow(p->factor * n / L - (p->factor - 1), e);
    default: {
        double alpha = exp2(ceil(log2((double)f->length / L) + 1)) - 1;
        return b * pow(alpha > 1 ? alpha : 1, e);
    }
    }
}

static int ntk_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    (void)params;
    if (f->d_head < 4 || f->train_len < 1)
        return lx_err(err, LX_EINVAL, "ntk: needs a head dimension >= 4 and a training length >= 1, "
                      "got d_head %d, train_len %ld", f->d_head, f->train_len);
    return LX_OK;
}

static int ntk_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                     struct lx_error *err)
{
    int rc = lx_spec_claim_frequencies(spec, "ntk", err);
    if (rc < 0)
        return rc;
    struct lx_rotary *r = &spec->rotary;
    int d = 2 * r->n_pairs;
    r->base = ntk_base(params, f, r->base, d);
    for (int k = 0; k < r->n_pairs; k++)
        r->inv_freq[k] = pow(r->base, -2.0 * k / d);
    return LX_OK;
}

const struct lx_method lx_method_ntk = {
    .name = "ntk",
    .summary = "NTK-aware rotary base b*s^(d/(d-2)): bloc97 2023, HF dynamic, Qwen-1 (YaRN arXiv 2309.00071 §3)",
    .schema = LX_SCHEMA(ntk_rows, struct ntk_params, ntk_rules),
    .kind = LX_KIND_INFERENCE | LX_KIND_TRAINING,   /* fine-tuned in: `finetune:` */
    .needs = LX_CAP_MODEL,
    .resolve = ntk_resolve,
    .check = ntk_check,
    .apply = ntk_apply,
};
