/*
** methods/dca.c - Dual Chunk Attention (ChunkLlama): chunked query and key
** positions, training-free.
**
** An et al. 2024, "Training-Free Long-Context Scaling of Large Language
** Models", ICML 2024, arXiv 2402.17463; HKUNLP/ChunkLlama
** (chunkllama_attn_replace.py). Keys take their position within a chunk of
** C = s − w tokens (s the code's chunk_size, the largest query position; w its
** local_window), k ↦ k mod C. The query takes one of three positions, by the
** key's chunk:
**
**     same chunk (intra)           q mod C            δ = i − j
**     the chunk before (succ)      min(q mod C + C, s)
**     earlier chunks (inter)       min(2C − 1, s)
**
** so a key one chunk back keeps RoPE's distance while q mod C <= w, and every
** other far key sits at δ = cap − j mod C, cap = min(2C − 1, s), never past s.
** In lenx's spec this is a chunked position map (spec.h, struct lx_posmap).
** The code's rotary tables also carry mscale = 0.05 ln(n/L) + 1 on q and k
** once n passes the model's max_position_embeddings L (`mscale: true`, the
** default; the file had none until 2024-03-19, 0.1 ln(n/L) + 1 until
** 2024-04-24, and its comment says the paper's results ran without it).
** Formula, parameters and golden values: docs/methods.md#dca.
*/
#include <math.h>

#include "methods/method.h"

struct dca_params {
    long chunk;     /* s: the code's chunk_size; 0 = 3L/4 */
    long local;     /* w: the code's local_window; 0 = L/8 */
    int mscale;     /* the code's 0.05 ln(n/L) + 1 on q and k past L */
};

static const struct lx_param dca_rows[] = {
    LX_P_INT(struct dca_params, chunk, "0", 0, 1e12, LX_PF_SHOW | LX_PF_AUTO,
             "s: the largest query position (the code's chunk_size); chunks hold C = s - w tokens; "
             "0 = 3/4 of the training length"),
    LX_P_INT(struct dca_params, local, "0", 0, 1e12, LX_PF_SHOW | LX_PF_AUTO,
             "w: a key one chunk back keeps RoPE's distance while the query's place in its chunk is at most w "
             "(the code's local_window); 0 = 1/8 of the training length"),
    LX_P_BOOL(struct dca_params, mscale, "true", 0,
              "the official code's 0.05 ln(n/L) + 1 on q and k when the cell's n tokens pass the training "
              "length L (its logits times the square); false = the paper's formula without it"),
};

static int dca_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct dca_params *p = params;
    if (p->chunk == 0)
        p->chunk = f->train_len * 3 / 4;
    if (p->local == 0)
        p->local = f->train_len / 8;
    if (p->chunk - p->local < 1)
        return lx_err(err, LX_EINVAL, "dca: chunks of chunk - local tokens need local below chunk, got chunk %ld, "
                      "local %ld\n  hint: the defaults are 3/4 and 1/8 of the training length (%ld here)",
                      p->chunk, p->local, f->train_len);
    return LX_OK;
}

/* The code's mscale on cos and sin: 1 within the training length. */
static double dca_mscale(const struct dca_params *p, const struct lx_facts *f)
{
    double s = (double)f->length / (double)f->train_len;
    return p->mscale && s > 1 ? 0.05 * log(s) + 1 : 1.0;
}

/* The logit multiplier mscale²; the same for every row. */
static double dca_row_scale(const void *params, const struct lx_facts *f, long n)
{
    double m = dca_mscale(params, f);
    (void)n;
    return m * m;
}

static int dca_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec, struct lx_error *err)
{
    const struct dca_params *p = params;
    int rc = lx_spec_need_rotary(spec, "dca", err);
    if (rc == LX_OK)
        rc = lx_spec_claim_posmap(spec, "dca", err);
    if (rc < 0)
        return rc;
    long C = p->chunk - p->local;
    LX_ASSERT(C >= 1);      /* resolved */
    spec->posmap = (struct lx_posmap){
        .method = "dca", .period = C, .local = p->local, .cap = (double)(2 * C - 1 < p->chunk ? 2 * C - 1 : p->chunk),
    };
    double m = dca_mscale(p, f);
    if (m == 1.0)
        return LX_OK;
    struct lx_logit_op op = {
        .kind = LX_OP_ROW_SCALE, .method = "dca", .params = params, .row_scale = dca_row_scale,
    };
    return lx_spec_rotary_gain(spec, &op, m, err);
}

const struct lx_method lx_method_dca = {
    .name = "dca",
    .summary = "Dual Chunk Attention (ChunkLlama): chunked query and key positions, An et al. 2024 (arXiv 2402.17463)",
    .schema = LX_SCHEMA(dca_rows, struct dca_params, NULL),
    .kind = LX_KIND_INFERENCE,
    .needs = LX_CAP_MODEL,
    .resolve = dca_resolve,
    .apply = dca_apply,
};
