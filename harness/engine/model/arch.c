/*
** harness/engine/model/arch.c - the architecture's schema, the tensor list
** and the weight buffer laid out by it, initialisation (see arch.h).
*/
#define _DEFAULT_SOURCE     /* madvise */
#include "harness/engine/model/arch.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness/core/mapguard.h"
#include "harness/core/rng.h"
#include "harness/core/spec.h"
#include "harness/engine/kernels/numerics.h"

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
    LX_P_ENUM(struct lx_arch, mlp, "gelu", "gelu|swiglu|geglu|gelu_erf", 0,
              "MLP: GELU (tanh form), SwiGLU, GeGLU (GELU's tanh form gating; Gemma), or GELU's exact erf form (MPT)"),
    LX_P_ENUM(struct lx_arch, norm, "rms", "rms|layer", 0,
              "the blocks' and the final norm: RMSNorm, or LayerNorm (without a shift unless bias; MPT)"),
    LX_P_BOOL(struct lx_arch, bias, "false", 0,
              "a bias on every projection (q/k/v too) and a shift on every LayerNorm (GPT-NeoX); needs norm: layer"),
    LX_P_BOOL(struct lx_arch, norm_bias, "false", 0,
              "a shift on every LayerNorm, no bias on the projections (Falcon); needs norm: layer"),
    LX_P_BOOL(struct lx_arch, mlp_bias, "false", 0, "biases on the MLP's products only (GPT-J); not with bias"),
    LX_P_BOOL(struct lx_arch, shared_norm, "false", 0,
              "with parallel: one norm a block, x + attn(n(x)) + mlp(n(x)) (Falcon-7B)"),
    LX_P_BOOL(struct lx_arch, emb_norm, "false", 0,
              "a LayerNorm of the embedding rows before the first layer (BLOOM); needs norm: layer"),
    LX_P_BOOL(struct lx_arch, parallel, "false", 0,
              "x + attn(n1(x)) + mlp(n2(x)): the MLP reads the block's input, not x after attention (GPT-NeoX)"),
    LX_P_INT(struct lx_arch, vocab, "260", 2, 1000000, 0,
             "vocabulary: 260 = 256 bytes + BOS, EOS, PAD, MASK; with a tokenizer, its vocabulary"),
    LX_P_FLOAT(struct lx_arch, norm_eps, "1e-5", 0, 1, LX_PF_MIN_OPEN, "the norms' epsilon"),
    LX_P_FLOAT(struct lx_arch, init_std, "0.02", 0, 10, LX_PF_MIN_OPEN,
               "initial N(0, std) of matrices; wo and w2 use std/sqrt(2*layers)"),
    LX_P_BOOL(struct lx_arch, logit_scale, "false", 0,
              "a learned multiplier of the attention logits per layer and head (set by logn learn: true)"),
    LX_P_BOOL(struct lx_arch, sinks, "false", 0,
              "a learned zero-sink logit per layer and head, added to zerosink's z (set by zerosink learned: true)"),
    LX_P_BOOL(struct lx_arch, qkv_bias, "false", 0, "biases on the q, k and v projections (Qwen2)"),
    LX_P_BOOL(struct lx_arch, qk_norm, "false", 0,
              "an RMSNorm of each query and key head (learned gains of d_head) before the rotation (Qwen3)"),
    LX_P_BOOL(struct lx_arch, tie_head, "false", 0, "the output head is the token embedding (no lm_head.weight)"),
    LX_P_BOOL(struct lx_arch, head_bias, "false", 0, "a bias on the logits, lm_head.bias (Phi-2's)"),
    LX_P_INT(struct lx_arch, rel_buckets, "0", 0, 4096, 0,
             "T5's learned relative-position bias: buckets per head, shared by the layers (set by t5bias); 0 = none"),
    LX_P_BOOL(struct lx_arch, kerple, "false", 0,
              "KERPLE's learned kernel: (p, a) per head, shared by the layers (set by kerple)"),
    LX_P_ENUM(struct lx_arch, kerple_kernel, "log", "log|power", 0,
              "KERPLE's kernel: log -p*ln(1 + a*t) or power -a*t^p (set by kerple's kernel)"),
    LX_P_BOOL(struct lx_arch, post_norms, "false", 0,
              "RMSNorms of the attention's and the MLP's outputs before the residual sum (Gemma 2/3)"),
    LX_P_BOOL(struct lx_arch, emb_scale, "false", 0, "the embedding rows times sqrt(d_model) (Gemma)"),
    LX_P_INT(struct lx_arch, qk_dim, "0", 0, 65536, 0,
             "logits are q.k / sqrt(qk_dim) (Gemma's query_pre_attn_scalar); 0 = d_head"),
    LX_P_INT(struct lx_arch, local_every, "0", 0, 64, 0,
             "local layers: layer l is global when (l+1) % local_every == 0, the others run rope at local_base over "
             "a window of local_window keys, whatever the stack (Gemma 3's pattern); 0 = none"),
    LX_P_INT(struct lx_arch, local_window, "0", 0, 1L << 30, 0, "keys a local layer's query sees, itself included"),
    LX_P_FLOAT(struct lx_arch, local_base, "10000", 0, 1e12, LX_PF_MIN_OPEN, "the local layers' rope base"),
    LX_P_FLOAT(struct lx_arch, attn_softcap, "0", 0, 1e6, 0,
               "attention logits x become c*tanh(x/c) (Gemma 2's attn_logit_softcapping); 0 = none"),
    LX_P_FLOAT(struct lx_arch, logit_softcap, "0", 0, 1e6, 0,
               "output logits x become c*tanh(x/c) (Gemma 2's final_logit_softcapping); 0 = none"),
};

/* Rows added after the first checkpoints are stored only away from their
** defaults, so models without them keep their keys. */
static const struct lx_param_rule arch_rules[] = {
    {"logit_scale", "logit_scale=true"},
    {"sinks", "sinks=true"},
    {"kv_heads", "kv_heads!=0"},
    {"qkv_bias", "qkv_bias=true"},
    {"qk_norm", "qk_norm=true"},
    {"tie_head", "tie_head=true"},
    {"rel_buckets", "rel_buckets!=0"},
    {"kerple", "kerple=true"},
    {"kerple_kernel", "kerple_kernel=power"},
    {"post_norms", "post_norms=true"},
    {"emb_scale", "emb_scale=true"},
    {"qk_dim", "qk_dim!=0"},
    {"local_every", "local_every!=0"},
    {"local_window", "local_every!=0"},
    {"local_base", "local_every!=0"},
    {"attn_softcap", "attn_softcap!=0"},
    {"logit_softcap", "logit_softcap!=0"},
    {"norm", "norm=layer"},
    {"bias", "bias=true"},
    {"parallel", "parallel=true"},
    {"emb_norm", "emb_norm=true"},
    {"norm_bias", "norm_bias=true"},
    {"shared_norm", "shared_norm=true"},
    {"head_bias", "head_bias=true"},
    {"mlp_bias", "mlp_bias=true"},
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
    if (a->rel_buckets && a->kerple)
        return lx_err(err, LX_EINVAL, "rel_buckets (%ld) and kerple: two learned relative biases\n  hint: a "
                      "model has T5's (t5bias) or KERPLE's (kerple), set by its stack", a->rel_buckets);
    if (a->kerple_kernel != LX_KERPLE_LOG && !a->kerple)
        return lx_err(err, LX_EINVAL, "kerple_kernel: power without kerple: true\n  hint: both rows are set by "
                      "the stack's kerple method");
    if (a->bias && a->norm != LX_NORM_LAYER)
        return lx_err(err, LX_EINVAL, "bias: true with RMSNorms\n  hint: the norms' bias is LayerNorm's shift: "
                      "set norm: layer too (GPT-NeoX's block)");
    if (a->norm_bias && (a->bias || a->norm != LX_NORM_LAYER))
        return lx_err(err, LX_EINVAL, "norm_bias with %s\n  hint: norm_bias is LayerNorm's shift without the "
                      "projections' biases (Falcon's block): norm: layer, and bias: false (bias shifts the norms "
                      "too)", a->bias ? "bias: true" : "RMSNorms");
    if (a->mlp_bias && a->bias)
        return lx_err(err, LX_EINVAL, "mlp_bias with bias: true\n  hint: bias puts a bias on every product, the "
                      "MLP's too; mlp_bias is the MLP's alone (GPT-J's block)");
    if (a->shared_norm && !a->parallel)
        return lx_err(err, LX_EINVAL, "shared_norm without parallel\n  hint: one norm feeds both branches of "
                      "a parallel block (Falcon-7B's); set parallel: true too");
    if (a->emb_norm && (a->norm != LX_NORM_LAYER || a->emb_scale))
        return lx_err(err, LX_EINVAL, "emb_norm with %s\n  hint: BLOOM's embedding LayerNorm goes with norm: layer and "
                      "no emb_scale", a->emb_scale ? "emb_scale" : "RMSNorms");
    if (a->parallel && a->post_norms)
        return lx_err(err, LX_EINVAL, "parallel with post_norms: no model has both\n  hint: parallel is GPT-NeoX's "
                      "residual, post_norms Gemma's");
    a->qkv_bias |= a->bias;    /* canonical: bias says the q/k/v biases too */
    if (a->local_every && a->local_window < 1)
        return lx_err(err, LX_EINVAL, "local_every %ld without a local_window\n  hint: a local layer's query sees "
                      "local_window keys (Gemma 3's sliding_window)", a->local_every);
    return LX_OK;
}

const char *lx_arch_gemma_part(const struct lx_arch *a)
{
    return a->post_norms ? "post_norms" : a->emb_scale ? "emb_scale" : a->mlp == LX_MLP_GEGLU ? "mlp: geglu" :
           a->qk_dim ? "qk_dim" : a->local_every ? "local_every" : a->attn_softcap ? "attn_softcap" :
           a->logit_softcap ? "logit_softcap" : NULL;
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
        t->method = 0;
    }
    (*n)++;
    *off += (size_t)rows * (size_t)(cols ? cols : 1);
}

/* A vector an attention method learns (no decay). */
static void add_method(struct lx_tensor_info *out, int *n, size_t *off, const char *name, long rows)
{
    add(out, n, off, name, rows, 0, 0, 0);
    if (out)
        out[*n - 1].method = 1;
}

static int tensors(const struct lx_arch *a, struct lx_tensor_info *out, size_t *total)
{
    int n = 0;
    size_t off = 0;
    long C = a->d_model, HD = a->heads * a->d_head, KD = lx_arch_kv(a) * a->d_head, F = a->d_mlp;
    char name[64];
    add(out, &n, &off, "tok_emb.weight", a->vocab, C, 1, 0);
    if (a->emb_norm)
        add(out, &n, &off, "emb_norm.weight", C, 0, 0, 0);
    if (a->emb_norm && lx_arch_norm_shift(a))
        add(out, &n, &off, "emb_norm.bias", C, 0, 0, 0);
    for (long l = 0; l < a->layers; l++) {
#define NAME(s) (snprintf(name, sizeof name, "layers.%ld.%s", l, s), name)
        add(out, &n, &off, NAME("attn_norm.weight"), C, 0, 0, 0);
        if (lx_arch_norm_shift(a))
            add(out, &n, &off, NAME("attn_norm.bias"), C, 0, 0, 0);
        add(out, &n, &off, NAME("attn.wq.weight"), HD, C, 1, 0);
        add(out, &n, &off, NAME("attn.wk.weight"), KD, C, 1, 0);
        add(out, &n, &off, NAME("attn.wv.weight"), KD, C, 1, 0);
        if (a->qkv_bias) {      /* adjacent: one bias row for the fused q|k|v */
            add(out, &n, &off, NAME("attn.wq.bias"), HD, 0, 0, 0);
            add(out, &n, &off, NAME("attn.wk.bias"), KD, 0, 0, 0);
            add(out, &n, &off, NAME("attn.wv.bias"), KD, 0, 0, 0);
        }
        if (a->qk_norm) {       /* one gain per head dimension, shared by the heads */
            add(out, &n, &off, NAME("attn.q_norm.weight"), a->d_head, 0, 0, 0);
            add(out, &n, &off, NAME("attn.k_norm.weight"), a->d_head, 0, 0, 0);
        }
        add(out, &n, &off, NAME("attn.wo.weight"), C, HD, 1, 1);
        if (a->bias)
            add(out, &n, &off, NAME("attn.wo.bias"), C, 0, 0, 0);
        if (a->post_norms)
            add(out, &n, &off, NAME("attn.post_norm.weight"), C, 0, 0, 0);
        if (a->logit_scale)
            add_method(out, &n, &off, NAME("attn.logit_scale"), a->heads);
        if (a->sinks)
            add_method(out, &n, &off, NAME("attn.sink"), a->heads);
        if (!a->shared_norm)
            add(out, &n, &off, NAME("mlp_norm.weight"), C, 0, 0, 0);
        if (!a->shared_norm && lx_arch_norm_shift(a))
            add(out, &n, &off, NAME("mlp_norm.bias"), C, 0, 0, 0);
        add(out, &n, &off, NAME("mlp.w1.weight"), F, C, 1, 0);
        if (lx_arch_gated(a))
            add(out, &n, &off, NAME("mlp.w3.weight"), F, C, 1, 0);
        if (lx_arch_mlp_bias(a)) {  /* adjacent: one bias row for the fused w1|w3 */
            add(out, &n, &off, NAME("mlp.w1.bias"), F, 0, 0, 0);
            if (lx_arch_gated(a))
                add(out, &n, &off, NAME("mlp.w3.bias"), F, 0, 0, 0);
        }
        add(out, &n, &off, NAME("mlp.w2.weight"), C, F, 1, 1);
        if (lx_arch_mlp_bias(a))
            add(out, &n, &off, NAME("mlp.w2.bias"), C, 0, 0, 0);
        if (a->post_norms)
            add(out, &n, &off, NAME("mlp.post_norm.weight"), C, 0, 0, 0);
#undef NAME
    }
    add(out, &n, &off, "norm.weight", C, 0, 0, 0);
    if (lx_arch_norm_shift(a))
        add(out, &n, &off, "norm.bias", C, 0, 0, 0);
    if (!a->tie_head)
        add(out, &n, &off, "lm_head.weight", a->vocab, C, 1, 0);
    if (a->head_bias)
        add(out, &n, &off, "lm_head.bias", a->vocab, 0, 0, 0);
    if (a->rel_buckets)     /* one vector: a table of scalars, never a product's matrix */
        add_method(out, &n, &off, "rel_bias", a->heads * a->rel_buckets);
    if (a->kerple)          /* (p, a) of each head */
        add_method(out, &n, &off, "kerple", a->heads * 2);
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

/* The views of w from where each tensor is (t, in tensor order): fused
** (one buffer in tensor order) gives q|k|v and w1|w3 one part each and every
** float view; otherwise the matrices are their own parts and only the
** vectors (fp32 wherever they are) get float views. */
static void map_views(struct lx_weights *w, const struct lx_arch *a, const struct lx_wmat *t, int fused)
{
    int n = lx_arch_tensors(a, NULL), i = 0, swiglu = lx_arch_gated(a);
#define F(k) (fused ? (float *)t[k].p : NULL)
    w->layer = lx_xcalloc((size_t)a->layers, sizeof *w->layer);
    w->memb = t[i];
    w->tok_emb = F(i);
    i++;
    w->emb_norm = a->emb_norm ? (float *)t[i++].p : NULL;
    w->emb_norm_b = a->emb_norm && lx_arch_norm_shift(a) ? (float *)t[i++].p : NULL;
    for (long l = 0; l < a->layers; l++) {
        struct lx_layer_w *L = &w->layer[l];
        L->attn_norm = (float *)t[i++].p;
        L->attn_norm_b = lx_arch_norm_shift(a) ? (float *)t[i++].p : NULL;
        L->wqkv = F(i);
        L->n_qkv = fused ? 1 : 3;
        for (int k = 0; k < L->n_qkv; k++)
            L->mqkv[k] = t[i + k];
        i += 3;
        L->bqkv = a->qkv_bias ? (float *)t[i].p : NULL;
        i += a->qkv_bias ? 3 : 0;
        L->q_norm = a->qk_norm ? (float *)t[i].p : NULL;
        L->k_norm = a->qk_norm ? (float *)t[i + 1].p : NULL;
        i += a->qk_norm ? 2 : 0;
        L->mo = t[i];
        L->wo = F(i);
        i++;
        L->bo = a->bias ? (float *)t[i++].p : NULL;
        L->attn_post = a->post_norms ? (float *)t[i++].p : NULL;
        L->logit_scale = a->logit_scale ? (float *)t[i++].p : NULL;
        L->sink = a->sinks ? (float *)t[i++].p : NULL;
        L->mlp_norm = a->shared_norm ? L->attn_norm : (float *)t[i++].p;     /* shared: the gradient's views */
        L->mlp_norm_b = a->shared_norm ? L->attn_norm_b : lx_arch_norm_shift(a) ? (float *)t[i++].p : NULL;
        L->w13 = F(i);
        L->n_w13 = fused || !swiglu ? 1 : 2;
        for (int k = 0; k < L->n_w13; k++)
            L->mw13[k] = t[i + k];
        i += swiglu ? 2 : 1;
        L->b13 = lx_arch_mlp_bias(a) ? (float *)t[i].p : NULL;
        i += lx_arch_mlp_bias(a) ? (swiglu ? 2 : 1) : 0;
        L->mw2 = t[i];
        L->w2 = F(i);
        i++;
        L->b2 = lx_arch_mlp_bias(a) ? (float *)t[i++].p : NULL;
        L->mlp_post = a->post_norms ? (float *)t[i++].p : NULL;
    }
    w->norm = (float *)t[i++].p;
    w->norm_b = lx_arch_norm_shift(a) ? (float *)t[i++].p : NULL;
    w->mhead = a->tie_head ? w->memb : t[i];
    w->head = a->tie_head ? w->tok_emb : F(i);
    i += !a->tie_head;
    w->head_b = a->head_bias ? (float *)t[i++].p : NULL;
    w->rel_bias = lx_arch_rel_values(a) ? (float *)t[i++].p : NULL;
#undef F
    LX_ASSERT(i == n);
}

void lx_weights_map(struct lx_weights *w, const struct lx_arch *a, float *base)
{
    int n = lx_arch_tensors(a, NULL);
    struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
    struct lx_wmat *t = lx_xcalloc((size_t)n, sizeof *t);
    lx_arch_tensors(a, ti);
    for (int i = 0; i < n; i++)
        t[i] = (struct lx_wmat){base + ti[i].offset, LX_DT_F32, 0, NULL, 0};
    map_views(w, a, t, 1);
    free(t);
    free(ti);
}

/* p's place in w as a matrix view: into wb (bf16, laid out as w) or, without it, p itself. */
static struct lx_wmat matrix_at(const float *p, const float *w, const uint16_t *wb)
{
    return wb ? (struct lx_wmat){wb + (p - w), LX_DT_BF16, 0, NULL, 0} : (struct lx_wmat){p, LX_DT_F32, 0, NULL, 0};
}

void lx_weights_matrices_at(struct lx_weights *v, const struct lx_arch *a, const float *w, const uint16_t *wb)
{
    for (long l = 0; l < a->layers; l++) {
        struct lx_layer_w *L = &v->layer[l];
        LX_ASSERT(L->n_qkv == 1 && L->n_w13 == 1 && L->wqkv);
        L->mqkv[0] = matrix_at(L->wqkv, w, wb);
        L->mo = matrix_at(L->wo, w, wb);
        L->mw13[0] = matrix_at(L->w13, w, wb);
        L->mw2 = matrix_at(L->w2, w, wb);
    }
    v->mhead = matrix_at(v->head, w, wb);
}

static long count_of(const struct lx_tensor_info *t)
{
    return t->shape[0] * (t->ndim == 2 ? t->shape[1] : 1);
}

void lx_model_hold(struct lx_model *m, const struct lx_arch *a, struct lx_held *h)
{
    int n = lx_arch_tensors(a, NULL);
    struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
    lx_arch_tensors(a, ti);
    memset(m, 0, sizeof *m);
    m->arch = *a;
    m->n_params = lx_arch_n_params(a);
    h->n_small = 0;
    for (int i = 0; i < n; i++)
        h->n_small += ti[i].ndim == 1 ? (size_t)count_of(&ti[i]) : 0;
    h->small = lx_xmalloc(sizeof(float) * (h->n_small + 1));
    h->bytes = sizeof(float) * (double)h->n_small;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        size_t cnt = (size_t)count_of(&ti[i]);
        if (ti[i].ndim == 2) {
            h->bytes += (double)lx_dtype_bytes(h->t[i].type, cnt);
            continue;
        }
        lx_half_to_f32(h->small + off, h->t[i].p, h->t[i].type, cnt);
        h->t[i] = (struct lx_wmat){h->small + off, LX_DT_F32, 0, NULL, 0};
        off += cnt;
    }
    m->held = h;
    map_views(&m->v, a, h->t, 0);
    free(ti);
}

static void held_release(struct lx_held *h)
{
    for (int k = 0; k < h->n_maps; k++)
        if (h->owned[k])
            lx_big_free(h->maps[k], h->map_len[k]);
        else
            lx_mapguard_remove(h->maps[k], h->map_len[k]), munmap(h->maps[k], h->map_len[k]);
    free(h->maps);
    free(h->map_len);
    free(h->owned);
    free(h->small);
    free(h->t);
    free(h);
}

/* The whole pages inside [p, p + n) given back to the kernel (their values
** are not read again: the source of a conversion that replaces it), so that a
** conversion's peak is its destination and one tensor, not both copies. */
static void drop_pages(const void *p, size_t n)
{
    uintptr_t page = 4096, lo = ((uintptr_t)p + page - 1) & ~(page - 1), hi = ((uintptr_t)p + n) & ~(page - 1);
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Copy every tensor of m (in w or held) into a buffer laid out by tensor order,
** as type t; with drop, each matrix's source pages are given back once copied. */
static void convert_all(const struct lx_model *m, void *dst, int type, const struct lx_tensor_info *ti, int n,
                        int drop)
{
    for (int i = 0; i < n; i++) {
        struct lx_wmat src = m->held ? m->held->t[i] : (struct lx_wmat){m->w + ti[i].offset, LX_DT_F32, 0, NULL, 0};
        long rows = ti[i].shape[0], cols = ti[i].ndim == 2 ? ti[i].shape[1] : 1;
        char *d = (char *)dst + ti[i].offset * lx_dtype_size(type);
        if (src.packed_rows) {  /* packed bf16 (lx_model_pack): blocks of rows out of its layout, widened, exact */
            LX_ASSERT(type == LX_DT_F32);
            long step = lx_wmat_rows_step(src, cols);
#pragma omp parallel for schedule(dynamic)
            for (long r = 0; r < rows; r += step)
                lx_model_rows_f32(m, &ti[i], i, r, rows - r < step ? rows - r : step, (float *)d + r * cols);
            continue;
        }
#pragma omp parallel for schedule(static)
        for (long r = 0; r < rows; r++) {
            if (type == LX_DT_F32)
                lx_model_rows_f32(m, &ti[i], i, r, 1, (float *)d + r * cols);
            else
                lx_to_bf16((uint16_t *)d + r * cols, (const char *)src.p + lx_dtype_bytes(src.type, (size_t)(r * cols)),
                           src.type, (size_t)cols);
        }
        if (drop && ti[i].ndim == 2)
            drop_pages(src.p, lx_dtype_bytes(src.type, (size_t)(rows * cols)));
    }
}

void lx_model_rows_f32(const struct lx_model *m, const struct lx_tensor_info *t, int i, long r0, long n, float *out)
{
    long cols = t->ndim == 2 ? t->shape[1] : 1;
    struct lx_wmat src = m->held ? m->held->t[i] : (struct lx_wmat){m->w + t->offset, LX_DT_F32, 0, NULL, 0};
    if (src.packed_rows)
        lx_wmat_rows(out, src, r0, n, cols);
    else
        lx_half_to_f32(out, (const char *)src.p + lx_dtype_bytes(src.type, (size_t)(r0 * cols)), src.type,
                       (size_t)(n * cols));
}

float *lx_model_f32(const struct lx_model *m)
{
    if (!m->held)
        return m->w;
    int n = lx_arch_tensors(&m->arch, NULL);
    struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
    lx_arch_tensors(&m->arch, ti);
    float *w = lx_big_calloc(m->n_params * sizeof *w);
    LX_ASSERT(w);
    convert_all(m, w, LX_DT_F32, ti, n, 0);
    free(ti);
    return w;
}

void lx_model_f32_free(const struct lx_model *m, float *w)
{
    if (w != m->w)
        lx_big_free(w, m->n_params * sizeof *w);
}

void lx_model_own(struct lx_model *m)
{
    if (!m->held)
        return;
    float *w = lx_model_f32(m);
    lx_weights_unmap(&m->v);
    held_release(m->held);
    m->held = NULL;
    m->w = w;
    lx_weights_map(&m->v, &m->arch, w);
}

void lx_model_to_bf16(struct lx_model *m)
{
    int n = lx_arch_tensors(&m->arch, NULL), all_bf16 = m->held != NULL;
    struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
    lx_arch_tensors(&m->arch, ti);
    for (int i = 0; i < n && all_bf16; i++)     /* a file of mixed types converts its other matrices too */
        all_bf16 = ti[i].ndim == 1 || m->held->t[i].type == LX_DT_BF16;
    if (all_bf16) {
        free(ti);
        return;
    }
    size_t bytes = m->n_params * sizeof(uint16_t);
    uint16_t *b = lx_big_calloc(bytes);
    LX_ASSERT(b);
    convert_all(m, b, LX_DT_BF16, ti, n, 1);
    struct lx_held *h = lx_xcalloc(1, sizeof *h);
    h->t = lx_xcalloc((size_t)n, sizeof *h->t);
    for (int i = 0; i < n; i++)    /* the vectors go back to fp32 in lx_model_hold, from m's own values */
        h->t[i] = ti[i].ndim == 2 ? (struct lx_wmat){b + ti[i].offset, LX_DT_BF16, 0, NULL, 0}
                                  : (m->held ? m->held->t[i] : (struct lx_wmat){m->w + ti[i].offset, LX_DT_F32, 0, NULL, 0});
    h->maps = lx_xmalloc(sizeof *h->maps);
    h->map_len = lx_xmalloc(sizeof *h->map_len);
    h->owned = lx_xmalloc(sizeof *h->owned);
    h->maps[0] = b, h->map_len[0] = bytes, h->owned[0] = 1, h->n_maps = 1;
    struct lx_arch a = m->arch;
    struct lx_model old = *m;
    lx_model_hold(m, &a, h);    /* copies the vectors out of old before old is released */
    lx_weights_unmap(&old.v);
    if (old.held)
        held_release(old.held);
    else
        lx_big_free(old.w, old.n_params * sizeof *old.w);
    free(ti);
}

/* A buffer of the held model's, given back with it. */
static void held_add_map(struct lx_held *h, void *p, size_t len, int owned)
{
    h->maps = lx_xrealloc(h->maps, sizeof *h->maps * (size_t)(h->n_maps + 1));
    h->map_len = lx_xrealloc(h->map_len, sizeof *h->map_len * (size_t)(h->n_maps + 1));
    h->owned = lx_xrealloc(h->owned, sizeof *h->owned * (size_t)(h->n_maps + 1));
    h->maps[h->n_maps] = p, h->map_len[h->n_maps] = len, h->owned[h->n_maps] = owned;
    h->n_maps++;
}

/* n bytes rounded up to whole pages: each packed matrix starts on a page. */
static size_t whole_pages(size_t n)
{
    return (n + 4095) & ~(size_t)4095;
}

/* Whether tensor i of a is a matrix a product reads (all but an untied embedding). */
static int multiplied(const struct lx_arch *a, const struct lx_tensor_info *t, int i)
{
    return t->ndim == 2 && (i > 0 || a->tie_head);
}

double lx_arch_bf16_bytes(const struct lx_arch *a)
{
    int n = lx_arch_tensors(a, NULL);
    struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
    double bytes = 0, packed = 0;
    int all = 1;
    lx_arch_tensors(a, ti);
    for (int i = 0; i < n; i++) {
        size_t b = multiplied(a, &ti[i], i) ? lx_wmat_packed_bytes(ti[i].shape[0], ti[i].shape[1]) : 0;
        all = all && (b > 0 || !multiplied(a, &ti[i], i));
        bytes += (ti[i].ndim == 2 ? 2.0 : 4.0) * (double)count_of(&ti[i]);
        packed += b ? (double)b : (ti[i].ndim == 2 ? 2.0 : 4.0) * (double)count_of(&ti[i]);
    }
    free(ti);
    return all ? packed : bytes;
}

/* The tensors packed as one matrix with tensor i: q|k|v and w1|w3 (SwiGLU)
** held as parts, when each part starts on a block of the whole's layout; else
** i alone. Returns how many (their rows in *rows). */
static int pack_group(const struct lx_arch *a, const struct lx_tensor_info *ti, int i, long *rows)
{
    int k = strstr(ti[i].name, "attn.wq.weight") ? 3 : strstr(ti[i].name, "mlp.w1.weight") && lx_arch_gated(a) ? 2 : 1;
    long C = ti[i].shape[1], N = 0, blk;
    for (int j = 0; j < k; j++)
        N += ti[i + j].shape[0];
    if (k > 1 && (blk = lx_wmat_pack_block(N, C)) > 0) {
        long at = 0;
        for (int j = 0; j < k && k > 1; j++) {
            k = at % blk == 0 ? k : 1;
            at += ti[i + j].shape[0];
        }
    }
    k = k > 1 && lx_wmat_packed_bytes(N, C) > 0 ? k : 1;
    *rows = k > 1 ? N : ti[i].shape[0];
    return k;
}

void lx_model_pack(struct lx_model *m)
{
    struct lx_held *h = m->held;
    int n = lx_arch_tensors(&m->arch, NULL);
    struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
    size_t *at = lx_xcalloc((size_t)n, sizeof *at), total = 0;
    lx_arch_tensors(&m->arch, ti);
    for (int i = 0, k; h && i < n; i += k) {
        /* every matrix a product reads: all but an untied embedding (rows looked up only) */
        long N;
        k = multiplied(&m->arch, &ti[i], i) ? pack_group(&m->arch, ti, i, &N) : 1;
        size_t b = multiplied(&m->arch, &ti[i], i) ? lx_wmat_packed_bytes(N, ti[i].shape[1]) : 0;
        if (multiplied(&m->arch, &ti[i], i) && b == 0)
            h = NULL;   /* a shape oneDNN offers no layout for: nothing is packed */
        at[i] = total;
        total += whole_pages(b);
    }
    char *buf = h && total ? lx_big_calloc(total) : NULL;
    for (int i = 0, k = 1; buf && i < n; i += k) {
        long N, row0 = 0;
        k = 1;
        if (!multiplied(&m->arch, &ti[i], i))
            continue;
        k = pack_group(&m->arch, ti, i, &N);
        for (int j = i; j < i + k; row0 += ti[j].shape[0], j++) {
            struct lx_wmat src = h->t[j];
            size_t plain = lx_dtype_bytes(src.type, (size_t)count_of(&ti[j]));
            h->t[j] = lx_wmat_pack_part(buf + at[i], src, row0, ti[j].shape[0], N, ti[j].shape[1]);
            drop_pages(src.p, plain);  /* read again from the file if ever (a mapping), never (lenx's own copy) */
            h->bytes -= (double)plain;
        }
        h->bytes += (double)lx_wmat_packed_bytes(N, ti[i].shape[1]);
    }
    if (buf) {
        held_add_map(h, buf, total, 1);
        lx_weights_unmap(&m->v);
        map_views(&m->v, &m->arch, h->t, 0);
        for (long l = 0; l < m->arch.layers; l++) {     /* parts packed as one: one product */
            struct lx_layer_w *L = &m->v.layer[l];
            if (L->n_qkv > 1 && L->mqkv[1].row0 > 0)    /* mqkv[0] is the whole: its packed_rows */
                L->n_qkv = 1;
            if (L->n_w13 > 1 && L->mw13[1].row0 > 0)
                L->n_w13 = 1;
        }
    }
    free(at);
    free(ti);
}

/* ---- the matrices the products read, and training's packed copies of them ---- */

int lx_model_matrices(const struct lx_arch *a, struct lx_model *m, struct lx_matrix_at *out)
{
    long C = a->d_model, HD = a->heads * a->d_head, F = a->d_mlp * (lx_arch_gated(a) ? 2 : 1);
    int n = 0;
#define ADD(v_, w_, oc_, c_) (out ? (void)(out[n] = (struct lx_matrix_at){(v_), (w_), (oc_), (c_)}) : (void)0, n++)
    for (long l = 0; l < a->layers; l++) {
        struct lx_layer_w *L = m ? &m->v.layer[l] : NULL;
        ADD(L ? &L->mqkv[0] : NULL, L ? L->wqkv : NULL, lx_arch_qkv(a), C);
        ADD(L ? &L->mo : NULL, L ? L->wo : NULL, C, HD);
        ADD(L ? &L->mw13[0] : NULL, L ? L->w13 : NULL, F, C);
        ADD(L ? &L->mw2 : NULL, L ? L->w2 : NULL, C, a->d_mlp);
    }
    ADD(m ? &m->v.mhead : NULL, m ? m->v.head : NULL, a->vocab, C);
#undef ADD
    return n;
}

size_t lx_packed_both_bytes(long oc, long c, size_t *fwd)
{
    size_t f = lx_wmat_packed_bytes(oc, c), b = lx_wmat_packed_bytes(c, oc);
    *fwd = whole_pages(f);
    return f && b ? *fwd + whole_pages(b) : 0;
}

double lx_arch_train_packed_bytes(const struct lx_arch *a)
{
    int n = lx_model_matrices(a, NULL, NULL);
    struct lx_matrix_at *t = lx_xcalloc((size_t)n, sizeof *t);
    size_t total = 0, f;
    lx_model_matrices(a, NULL, t);
    for (int k = 0; k < n && total != SIZE_MAX; k++) {
        size_t b = lx_packed_both_bytes(t[k].oc, t[k].c, &f);
        total = b ? total + b : SIZE_MAX;
    }
    free(t);
    return total == SIZE_MAX ? 0 : (double)total;
}

void lx_model_fit_numerics(struct lx_model *m)
{
    if (lx_numerics_get() != LX_NUMERICS_BF16)
        return;
    lx_model_to_bf16(m);
    lx_model_pack(m);
}

double lx_model_held_bytes(const struct lx_model *m)
{
    return m->held ? m->held->bytes : sizeof(float) * (double)m->n_params;
}

int lx_model_dtype(const struct lx_model *m)
{
    return m->held ? m->v.memb.type : LX_DT_F32;
}

void lx_weights_unmap(struct lx_weights *w)
{
    free(w->layer);
    memset(w, 0, sizeof *w);
}

void lx_model_init(struct lx_model *m, const struct lx_arch *a, uint64_t key)
{
    memset(m, 0, sizeof *m);
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
        if (strcmp(t[i].name, "kerple") == 0) {
            lx_arch_kerple_init(p, cnt, key, (uint32_t)i);
            continue;
        }
        if (t[i].ndim == 1) {   /* norm gains and logit scales 1, biases (T5's too) and sink logits 0 */
            float one = strstr(t[i].name, "bias") || strstr(t[i].name, "attn.sink") ? 0.0f : 1.0f;
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

void lx_model_grow(struct lx_model *m, const struct lx_arch *a, uint64_t key)
{
    struct lx_model g;
    lx_model_init(&g, a, key);
    int n_old = lx_arch_tensors(&m->arch, NULL), n_new = lx_arch_tensors(a, NULL);
    struct lx_tensor_info *to = lx_xcalloc((size_t)n_old, sizeof *to), *tn = lx_xcalloc((size_t)n_new, sizeof *tn);
    lx_arch_tensors(&m->arch, to);
    lx_arch_tensors(a, tn);
    int kept = 0;
    for (int i = 0; i < n_new; i++)
        for (int j = 0; j < n_old; j++) {
            if (strcmp(tn[i].name, to[j].name) != 0)
                continue;
            LX_ASSERT(tn[i].ndim == to[j].ndim && tn[i].shape[0] == to[j].shape[0] &&
                      (tn[i].ndim == 1 || tn[i].shape[1] == to[j].shape[1]));
            lx_model_rows_f32(m, &to[j], j, 0, to[j].shape[0], g.w + tn[i].offset);
            kept++;
            break;
        }
    LX_ASSERT(kept == n_old);   /* a model only grows: every tensor it had is kept */
    free(to);
    free(tn);
    lx_model_release(m);
    *m = g;
}

void lx_model_release(struct lx_model *m)
{
    if (!m)
        return;
    lx_weights_unmap(&m->v);
    if (m->held)
        held_release(m->held);
    else
        lx_big_free(m->w, m->n_params * sizeof *m->w);
    memset(m, 0, sizeof *m);
}
