/*
** harness/engine/model/arch.c - the architecture's schema, the tensor list
** and the weight buffer laid out by it, initialisation (see arch.h).
*/
#include "harness/engine/model/arch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/rng.h"

static const struct lx_param arch_rows[] = {
    LX_P_ENUM(struct lx_arch, mode, "causal", "causal|mlm", LX_PF_SHOW,
              "causal: next-token LM with causal attention; mlm: bidirectional masked LM"),
    LX_P_INT(struct lx_arch, layers, "2", 1, 64, 0, "transformer blocks"),
    LX_P_INT(struct lx_arch, d_model, "128", 8, 8192, 0, "residual width"),
    LX_P_INT(struct lx_arch, heads, "4", 1, 256, 0, "attention (query) heads"),
    LX_P_INT(struct lx_arch, kv_heads, "0", 0, 256, 0,
             "key/value heads, dividing heads (grouped-query attention); 0 = heads (multi-head)"),
    LX_P_INT(struct lx_arch, d_head, "32", 2, 512, 0, "head dimension (even for rope)"),
    LX_P_INT(struct lx_arch, d_mlp, "512", 8, 65536, 0, "MLP hidden width"),
    LX_P_ENUM(struct lx_arch, mlp, "gelu", "gelu|swiglu", 0, "MLP: GELU (tanh form) or SwiGLU"),
    LX_P_INT(struct lx_arch, vocab, "260", 2, 1000000, 0,
             "vocabulary: 260 = 256 bytes + BOS, EOS, PAD, MASK; with a tokenizer, its vocabulary"),
    LX_P_FLOAT(struct lx_arch, norm_eps, "1e-5", 0, 1, LX_PF_MIN_OPEN, "RMSNorm epsilon"),
    LX_P_FLOAT(struct lx_arch, init_std, "0.02", 0, 10, LX_PF_MIN_OPEN,
               "initial N(0, std) of matrices; wo and w2 use std/sqrt(2*layers)"),
    LX_P_BOOL(struct lx_arch, logit_scale, "false", 0,
              "a learned multiplier of the attention logits per layer and head (set by logn learn: true)"),
    LX_P_BOOL(struct lx_arch, qkv_bias, "false", 0, "biases on the q, k and v projections (Qwen2)"),
    LX_P_BOOL(struct lx_arch, tie_head, "false", 0, "the output head is the token embedding (no lm_head.weight)"),
};

/* Rows added after the first checkpoints are stored only away from their
** defaults, so models without them keep their keys. */
static const struct lx_param_rule arch_rules[] = {
    {"logit_scale", "logit_scale=true"},
    {"kv_heads", "kv_heads!=0"},
    {"qkv_bias", "qkv_bias=true"},
    {"tie_head", "tie_head=true"},
    {NULL, NULL},
};

const struct lx_schema lx_arch_schema = LX_SCHEMA(arch_rows, struct lx_arch, arch_rules);

long lx_arch_kv(const struct lx_arch *a)
{
    return a->kv_heads ? a->kv_heads : a->heads;
}

long lx_arch_qkv(const struct lx_arch *a)
{
    return (a->heads + 2 * lx_arch_kv(a)) * a->d_head;
}

int lx_arch_resolve(struct lx_arch *a, struct lx_error *err)
{
    if (a->kv_heads > a->heads)
        return lx_err(err, LX_EINVAL, "kv_heads (%ld) is more than heads (%ld)\n"
                      "  hint: query heads share key/value heads: kv_heads divides heads (1 = multi-query)",
                      a->kv_heads, a->heads);
    if (a->kv_heads && a->heads % a->kv_heads)
        return lx_err(err, LX_EINVAL, "kv_heads (%ld) does not divide heads (%ld)\n"
                      "  hint: each key/value head serves heads / kv_heads query heads; e.g. heads 8 takes "
                      "kv_heads 1, 2, 4 or 8", a->kv_heads, a->heads);
    if (a->kv_heads == a->heads)
        a->kv_heads = 0;        /* canonical: multi-head attention has one spelling (and one key) */
    return LX_OK;
}

/* ---- tensors -------------------------------------------------------------- */

static void add(struct lx_tensor_info *out, int *n, size_t *off, const char *name, long rows, long cols,
                int decay, int out_proj)
{
    if (out) {
        struct lx_tensor_info *t = &out[*n];
        snprintf(t->name, sizeof t->name, "%s", name);
        t->ndim = cols ? 2 : 1;
        t->shape[0] = rows;
        t->shape[1] = cols;
        t->offset = *off;
        t->decay = decay;
        t->out_proj = out_proj;
    }
    (*n)++;
    *off += (size_t)rows * (size_t)(cols ? cols : 1);
}

static int tensors(const struct lx_arch *a, struct lx_tensor_info *out, size_t *total)
{
    int n = 0;
    size_t off = 0;
    long C = a->d_model, HD = a->heads * a->d_head, KD = lx_arch_kv(a) * a->d_head, F = a->d_mlp;
    char name[64];
    add(out, &n, &off, "tok_emb.weight", a->vocab, C, 1, 0);
    for (long l = 0; l < a->layers; l++) {
#define NAME(s) (snprintf(name, sizeof name, "layers.%ld.%s", l, s), name)
        add(out, &n, &off, NAME("attn_norm.weight"), C, 0, 0, 0);
        add(out, &n, &off, NAME("attn.wq.weight"), HD, C, 1, 0);
        add(out, &n, &off, NAME("attn.wk.weight"), KD, C, 1, 0);
        add(out, &n, &off, NAME("attn.wv.weight"), KD, C, 1, 0);
        if (a->qkv_bias) {      /* adjacent: one bias row for the fused q|k|v */
            add(out, &n, &off, NAME("attn.wq.bias"), HD, 0, 0, 0);
            add(out, &n, &off, NAME("attn.wk.bias"), KD, 0, 0, 0);
            add(out, &n, &off, NAME("attn.wv.bias"), KD, 0, 0, 0);
        }
        add(out, &n, &off, NAME("attn.wo.weight"), C, HD, 1, 1);
        if (a->logit_scale)
            add(out, &n, &off, NAME("attn.logit_scale"), a->heads, 0, 0, 0);
        add(out, &n, &off, NAME("mlp_norm.weight"), C, 0, 0, 0);
        add(out, &n, &off, NAME("mlp.w1.weight"), F, C, 1, 0);
        if (a->mlp == LX_MLP_SWIGLU)
            add(out, &n, &off, NAME("mlp.w3.weight"), F, C, 1, 0);
        add(out, &n, &off, NAME("mlp.w2.weight"), C, F, 1, 1);
#undef NAME
    }
    add(out, &n, &off, "norm.weight", C, 0, 0, 0);
    if (!a->tie_head)
        add(out, &n, &off, "lm_head.weight", a->vocab, C, 1, 0);
    if (total)
        *total = off;
    return n;
}

int lx_arch_tensors(const struct lx_arch *a, struct lx_tensor_info *out)
{
    return tensors(a, out, NULL);
}

size_t lx_arch_n_params(const struct lx_arch *a)
{
    size_t total;
    tensors(a, NULL, &total);
    return total;
}

void lx_weights_map(struct lx_weights *w, const struct lx_arch *a, float *base)
{
    int n = lx_arch_tensors(a, NULL);
    struct lx_tensor_info *t = lx_xcalloc((size_t)n, sizeof *t);
    lx_arch_tensors(a, t);
    w->layer = lx_xcalloc((size_t)a->layers, sizeof *w->layer);
    int i = 0;
    w->tok_emb = base + t[i++].offset;
    for (long l = 0; l < a->layers; l++) {
        struct lx_layer_w *L = &w->layer[l];
        L->attn_norm = base + t[i++].offset;
        L->wqkv = base + t[i].offset;
        i += 3;
        L->bqkv = a->qkv_bias ? base + t[i].offset : NULL;
        i += a->qkv_bias ? 3 : 0;
        L->wo = base + t[i++].offset;
        L->logit_scale = a->logit_scale ? base + t[i++].offset : NULL;
        L->mlp_norm = base + t[i++].offset;
        L->w13 = base + t[i++].offset;
        if (a->mlp == LX_MLP_SWIGLU)
            i++;
        L->w2 = base + t[i++].offset;
    }
    w->norm = base + t[i++].offset;
    w->head = a->tie_head ? w->tok_emb : base + t[i++].offset;
    LX_ASSERT(i == n);
    free(t);
}

void lx_weights_unmap(struct lx_weights *w)
{
    free(w->layer);
    memset(w, 0, sizeof *w);
}

void lx_model_init(struct lx_model *m, const struct lx_arch *a, uint64_t key)
{
    m->arch = *a;
    m->n_params = lx_arch_n_params(a);
    m->w = lx_big_calloc(m->n_params * sizeof *m->w);
    LX_ASSERT(m->w);
    lx_weights_map(&m->v, a, m->w);
    int n = lx_arch_tensors(a, NULL);
    struct lx_tensor_info *t = lx_xcalloc((size_t)n, sizeof *t);
    lx_arch_tensors(a, t);
    for (int i = 0; i < n; i++) {
        float *p = m->w + t[i].offset;
        long cnt = t[i].shape[0] * (t[i].ndim == 2 ? t[i].shape[1] : 1);
        if (t[i].ndim == 1) {   /* norm gains and logit scales 1, biases 0 */
            float one = strstr(t[i].name, ".bias") ? 0.0f : 1.0f;
            for (long j = 0; j < cnt; j++)
                p[j] = one;
            continue;
        }
        double std = a->init_std / (t[i].out_proj ? sqrt(2.0 * (double)a->layers) : 1.0);
        struct lx_rng r;
        lx_rng_init(&r, key, (uint32_t)i, LX_RNG_INIT);   /* one stream per tensor */
        for (long j = 0; j + 1 < cnt; j += 2) {
            double z0, z1;
            lx_rng_normal2(&r, &z0, &z1);
            p[j] = (float)(std * z0);
            p[j + 1] = (float)(std * z1);
        }
        if (cnt % 2)
            p[cnt - 1] = (float)(std * lx_rng_normal(&r));
    }
    free(t);
}

void lx_model_release(struct lx_model *m)
{
    if (!m)
        return;
    lx_weights_unmap(&m->v);
    lx_big_free(m->w, m->n_params * sizeof *m->w);
    memset(m, 0, sizeof *m);
}
