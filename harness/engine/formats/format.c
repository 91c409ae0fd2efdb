/*
** harness/engine/formats/format.c - the helpers every model loader shares
** (format.h).
*/
#include "harness/engine/formats/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/config.h"
#include "harness/core/hash.h"
#include "harness/core/hashcache.h"
#include "harness/core/version.h"
#include "harness/engine/model/arch.h"
#include "harness/engine/tokenizers/tokenizer.h"

void lx_ckpt_info_native(struct lx_ckpt_info *info, const char *format, const char *dtype)
{
    snprintf(info->format, sizeof info->format, "%s", format);
    snprintf(info->dtype, sizeof info->dtype, "%s", dtype);
    info->model_key = lx_xstrdup("");
    info->train_json = lx_xstrdup("{}");
}

void lx_model_weights_hash(const struct lx_model *m, char out[65])
{
    if (m->w) {
        lx_sha256_hex_bytes(m->w, sizeof(float) * m->n_params, out);
        return;
    }
    /* held: the same bytes, each tensor widened to F32 a piece at a time */
    int n = lx_arch_tensors(&m->arch, NULL);
    struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
    struct lx_sha256_long *h = lx_sha256_long_new();
    enum { PIECE = 1 << 20 };
    float *buf = lx_xmalloc(sizeof(float) * PIECE);
    lx_arch_tensors(&m->arch, ti);
    for (int i = 0; i < n; i++) {
        const struct lx_wmat t = m->held->t[i];
        size_t cnt = (size_t)(ti[i].shape[0] * (ti[i].ndim == 2 ? ti[i].shape[1] : 1));
        for (size_t k = 0; k < cnt; k += PIECE) {
            size_t len = cnt - k < PIECE ? cnt - k : PIECE;
            lx_half_to_f32(buf, (const char *)t.p + lx_dtype_bytes(t.type, k), t.type, len);
            lx_sha256_long_add(h, buf, sizeof(float) * len);
        }
    }
    lx_sha256_long_end(h, out);
    free(buf);
    free(ti);
}

void lx_model_weights_hash_of(const struct lx_model *m, const char *format, const char *content, char out[65])
{
    char key[256];     /* the conversion is this build's: another commit hashes again */
    snprintf(key, sizeof key, "lenx-hashcache 1\nweights:%s\n%s\n%s", format, lx_build_commit(), content);
    if (lx_hashcache_get(key, out))
        return;
    lx_model_weights_hash(m, out);
    lx_hashcache_put(key, out);
}

void lx_ckpt_info_release(struct lx_ckpt_info *info)
{
    free(info->model_key);
    free(info->stack);
    free(info->train_json);
    free(info->eval_stack);
    free(info->scaling);
    free(info->tokenizer);
    free(info->lineage);
    info->model_key = info->stack = info->train_json = info->eval_stack = info->scaling = info->tokenizer = NULL;
    info->lineage = NULL;
}

int lx_ckpt_tokenizer(const struct lx_ckpt_info *info, const char *path, struct lx_tokenizer **out,
                      struct lx_error *err)
{
    *out = NULL;
    const char *sha = info->tokenizer_sha256;
    if (!path && sha[0])
        return lx_err(err, LX_EIO, "the model was trained on a tokenizer (sha256 %.16s...) whose copy is not "
                      "beside it\n  hint: name the file it was trained with (--tokenizer, or tokenizer: in a "
                      "sweep), or restore the <model>.tokenizer directory", sha);
    if (!path)
        return LX_OK;
    int rc = lx_tokenizer_open(out, path, err);
    if (rc == LX_OK && sha[0] && strcmp((*out)->hash, sha) != 0) {
        rc = lx_err(err, LX_EINVAL, "%s is not the tokenizer the model was trained on: its sha256 is %.16s..., "
                    "the model's %.16s...\n  hint: give the tokenizer it was trained with, or leave it out to "
                    "use the copy beside the model", (*out)->path, (*out)->hash, sha);
        lx_tokenizer_free(*out);
        *out = NULL;
    }
    return rc;
}

int lx_ckpt_check_tokenizer(long vocab, const struct lx_tokenizer *tk, const char *who, const char *how,
                            int *at_tokenizer, struct lx_error *err)
{
    int dummy;
    at_tokenizer = at_tokenizer ? at_tokenizer : &dummy;
    *at_tokenizer = 0;
    if (!tk && vocab != LX_VOCAB)
        return lx_err(err, LX_EINVAL, "%s has a vocabulary of %ld and no tokenizer; the byte tokenizer has %d (256 "
                      "bytes + BOS, EOS, PAD, MASK), so its ids would be read as bytes\n  hint: name the tokenizer it "
                      "was trained with: %s (a llama2.c tokenizer.bin or a tokenizer.json)", who, vocab, LX_VOCAB, how);
    *at_tokenizer = 1;
    if (tk && tk->n_vocab > vocab)
        return lx_err(err, LX_EINVAL, "%s has a vocabulary of %ld, fewer than the %ld tokens of its tokenizer %s\n"
                      "  hint: is it the tokenizer the model was trained with?", who, vocab, tk->n_vocab, tk->path);
    struct lx_error sub;
    if (lx_tok_check_begin(lx_tok_or_byte(tk), &sub) < 0)
        return lx_err(err, LX_EINVAL, "%s: %s", who, sub.msg);
    return LX_OK;
}

void lx_model_hold_map(struct lx_model *m, const struct lx_arch *a, struct lx_held *held, const unsigned char *bytes,
                       size_t n)
{
    held->maps = lx_xmalloc(sizeof *held->maps);
    held->map_len = lx_xmalloc(sizeof *held->map_len);
    held->owned = lx_xcalloc(1, sizeof *held->owned);
    held->maps[0] = (void *)bytes, held->map_len[0] = n, held->n_maps = 1;
    lx_model_hold(m, a, held);
}

/* ---- for exporters ---- */

/* A number of a method's parameter map (absent: def). */
static double param_num(const struct lx_node *p, const char *key, double def)
{
    const struct lx_node *v = p && p->kind == LX_NODE_MAP ? lx_map_get(p, key) : NULL;
    return v && v->kind == LX_NODE_SCALAR ? strtod(v->text, NULL) : def;
}

/* Item i of the stack as (name, parameters or NULL); NULL name when it is neither a name nor a one-key map. */
static const char *stack_item(const struct lx_node *r, int i, const struct lx_node **params)
{
    const struct lx_node *one = r->items[i];
    *params = NULL;
    if (one->kind == LX_NODE_SCALAR)
        return one->text;
    if (one->kind != LX_NODE_MAP || one->n_items != 1)
        return NULL;
    *params = lx_map_value(one, 0);
    return lx_map_key(one, 0)->text;
}

/* A list of numbers of p (longrope's factors) into out; [] when absent. */
static void param_list(const struct lx_node *p, const char *key, struct lx_floats *out)
{
    const struct lx_node *v = p && p->kind == LX_NODE_MAP ? lx_map_get(p, key) : NULL;
    out->n = 0;
    for (int i = 0; v && v->kind == LX_NODE_SEQ && i < v->n_items && i < LX_MAX_FLOATS; i++)
        if (v->items[i]->kind == LX_NODE_SCALAR)
            out->v[out->n++] = strtod(v->items[i]->text, NULL);
}

/* The rescaling after rope (pi, yarn, llama3, longrope) into r: LX_EINVAL when it has no fixed scale. */
static int stack_scaling(const char *name, const struct lx_node *p, struct lx_stack_rope *r, struct lx_error *err)
{
    snprintf(r->scaling, sizeof r->scaling, "%s", strcmp(name, "pi") == 0 ? "linear" : name);
    r->factor = param_num(p, "scale", 0);
    r->original = (long)param_num(p, "original", 0);
    r->beta_fast = param_num(p, "beta_fast", 32), r->beta_slow = param_num(p, "beta_slow", 1);
    r->attn_factor = param_num(p, "attn_factor", 1);
    r->low = param_num(p, "low_freq_factor", 1), r->high = param_num(p, "high_freq_factor", 4);
    param_list(p, "long_factor", &r->lng), param_list(p, "short_factor", &r->shrt);
    r->attention = lx_longrope_attention(param_num(p, "attention_factor", 0), r->factor, (double)r->original);
    const struct lx_node *t = p && p->kind == LX_NODE_MAP ? lx_map_get(p, "truncate") : NULL;
    r->truncate = !(t && t->kind == LX_NODE_SCALAR && strcmp(t->text, "false") == 0);
    int needs_l = strcmp(r->scaling, "linear") != 0;    /* yarn, llama3 and longrope have an L */
    if (!(r->factor >= 1) || (needs_l && r->original < 1))
        return lx_err(err, LX_EINVAL, "the model's %s has %s; a file holds a fixed rescaling\n  hint: train it "
                      "with a fixed scale%s", name, !(r->factor >= 1) ? "no fixed scale (auto)" : "original auto",
                      needs_l ? " and original" : "");
    return LX_OK;
}

double lx_llama3_factor(double s, double L, double low, double high, double wavelength)
{
    if (wavelength < L / high)
        return 1;
    if (wavelength > L / low)
        return s;
    double sm = (L / wavelength - low) / (high - low);
    return 1 / ((1 - sm) / s + sm);
}

void lx_stack_put_longrope(struct lx_buf *b, double s, long L, const struct lx_floats *lng,
                           const struct lx_floats *shrt, double attention)
{
    const struct lx_floats *l[2] = {lng, shrt};
    lx_buf_puts(b, ",{\"longrope\":{\"scale\":");
    lx_buf_num(b, s);
    lx_buf_printf(b, ",\"original\":%ld", L);
    for (int k = 0; k < 2; k++) {
        lx_buf_printf(b, ",\"%s\":[", k ? "short_factor" : "long_factor");
        for (int i = 0; i < l[k]->n; i++) {
            lx_buf_puts(b, i ? "," : "");
            lx_buf_num(b, l[k]->v[i]);
        }
        lx_buf_puts(b, "]");
    }
    if (attention > 0) {
        lx_buf_puts(b, ",\"attention_factor\":");
        lx_buf_num(b, attention);
    }
    lx_buf_puts(b, ",\"train\":true}}");
}

int lx_stack_rope_of(const char *stack, int scaled, const char *target, struct lx_stack_rope *r,
                     struct lx_error *err)
{
    struct lx_doc d = {0};
    memset(r, 0, sizeof *r);
    r->base = 10000;
    int rc = lx_doc_load_text(&d, stack ? stack : "[]", "lenx_stack", err);
    const struct lx_node *root = d.root, *p = NULL, *q = NULL;
    int n = rc == LX_OK && root && root->kind == LX_NODE_SEQ ? root->n_items : 0;
    const char *first = n >= 1 ? stack_item(root, 0, &p) : NULL, *second = n == 2 ? stack_item(root, 1, &q) : NULL;
    int lr = (scaled & LX_ROPE_LONGROPE) != 0;
    int ok = first && strcmp(first, "rope") == 0 &&
             (n == 1 || (n == 2 && scaled && second && (strcmp(second, "pi") == 0 || strcmp(second, "yarn") == 0 ||
                                                          strcmp(second, "llama3") == 0 ||
                                                          (lr && strcmp(second, "longrope") == 0))));
    if (rc == LX_OK && !ok)
        rc = lx_err(err, LX_EINVAL, "the model was trained with the stack %s; %s holds rotary positions (rope, any "
                    "base and layout)%s only\n  hint: export models trained with [rope]%s", stack, target,
                    !scaled ? "" : lr ? " with a trained-in pi, yarn, llama3 or longrope rescaling"
                                      : " with a trained-in pi, yarn or llama3 rescaling",
                    !scaled ? "" : lr ? ", [rope, pi], [rope, yarn], [rope, llama3] or [rope, longrope]"
                                      : ", [rope, pi], [rope, yarn] or [rope, llama3]");
    if (rc == LX_OK) {
        r->base = param_num(p, "base", 10000);
        const struct lx_node *l = p && p->kind == LX_NODE_MAP ? lx_map_get(p, "layout") : NULL;
        r->interleaved = l && l->kind == LX_NODE_SCALAR && strcmp(l->text, "interleaved") == 0;
        r->dims = (long)param_num(p, "dims", 0);
        if (n == 2)
            rc = stack_scaling(second, q, r, err);
    }
    lx_doc_release(&d);
    return rc;
}

int lx_fused_part(const struct lx_arch *a, const char *name, long *layer, int *which, long *row0, long *rows)
{
    long HD = a->heads * a->d_head, KD = lx_arch_kv(a) * a->d_head, F = a->d_mlp;
    int at = 0;
    if (sscanf(name, "layers.%ld.%n", layer, &at) != 1 || !at)
        return 0;
    const char *t = name + at;
    int q = strcmp(t, "attn.wq.weight") == 0, k = strcmp(t, "attn.wk.weight") == 0;
    int v = strcmp(t, "attn.wv.weight") == 0, g = strcmp(t, "mlp.w1.weight") == 0, u = strcmp(t, "mlp.w3.weight") == 0;
    if (!(q || k || v || g || u))
        return 0;
    *which = !(q || k || v);
    *row0 = k ? HD : v ? HD + KD : u ? F : 0;
    *rows = *which ? 2 * F : HD + 2 * KD;
    return 1;
}

int lx_tensor_is_qk(const char *name)
{
    const char *a = strstr(name, ".attn.");
    return a && (strncmp(a + 6, "wq.", 3) == 0 || strncmp(a + 6, "wk.", 3) == 0 || strncmp(a + 6, "q_norm.", 7) == 0 ||
                 strncmp(a + 6, "k_norm.", 7) == 0);
}

void lx_tensor_reader_init(struct lx_tensor_reader *r, const struct lx_model *m, const struct lx_tensor_info *t,
                           int i, int to_half, long chunk)
{
    long cols = t->ndim == 2 ? t->shape[1] : 1;
    *r = (struct lx_tensor_reader){m, t, i, to_half, cols, m->arch.d_head, 0.0f,
                                   lx_xmalloc(sizeof(float) * (size_t)((chunk / cols + 2) * cols))};
}

/* The model's row behind row `row` of the written tensor. Half row k is interleaved row 2k, half row
** k + D/2 interleaved row 2k + 1: to_half 1 reads the interleaved row of half row q, to_half 0 the
** half row of interleaved row q. */
static long source_row(const struct lx_tensor_reader *r, long row)
{
    if (r->to_half < 0)
        return row;
    long h = row / r->D, q = row % r->D, half = r->D / 2;
    long j = r->to_half ? (q < half ? 2 * q : 2 * (q - half) + 1) : (q % 2 == 0 ? q / 2 : q / 2 + half);
    return h * r->D + j;
}

void lx_tensor_read(void *ctx, uint64_t at, size_t k, float *out)
{
    struct lx_tensor_reader *r = ctx;
    long first = (long)(at / (uint64_t)r->cols), last = (long)((at + k - 1) / (uint64_t)r->cols);
    if (r->to_half < 0)
        lx_model_rows_f32(r->m, r->t, r->i, first, last - first + 1, r->rows);
    else
        for (long row = first; row <= last; row++)
            lx_model_rows_f32(r->m, r->t, r->i, source_row(r, row), 1, r->rows + (row - first) * r->cols);
    memcpy(out, r->rows + (at - (uint64_t)first * (uint64_t)r->cols), sizeof(float) * k);
    for (size_t j = 0; r->add != 0.0f && j < k; j++)
        out[j] += r->add;
}

int lx_fused_reader_of(const struct lx_arch *a, const struct lx_tensor_info *ti, int n, struct lx_tensor_reader *rd,
                       int i, struct lx_fused_reader *fr, long *layer, int *which, long *rows)
{
    long row0;
    if (!lx_fused_part(a, ti[i].name, layer, which, &row0, rows))
        return -1;
    if (row0 != 0)
        return 0;
    static const char *const parts[2][3] = {{"attn.wq", "attn.wk", "attn.wv"}, {"mlp.w1", "mlp.w3", NULL}};
    fr->n = 0;
    for (int p = 0; p < 3 && parts[*which][p]; p++) {
        char want[64];
        snprintf(want, sizeof want, "layers.%ld.%s.weight", *layer, parts[*which][p]);
        for (int j = 0; j < n; j++)
            if (strcmp(ti[j].name, want) == 0)
                fr->part[fr->n++] = &rd[j];
    }
    LX_ASSERT(fr->n == (*which ? 2 : 3));
    return 1;
}

void lx_fused_read(void *ctx, uint64_t at, size_t k, float *out)
{
    struct lx_fused_reader *f = ctx;
    uint64_t start = 0;
    for (int p = 0; p < f->n && k > 0; p++) {
        uint64_t end = start + (uint64_t)f->part[p]->t->shape[0] * (uint64_t)f->part[p]->cols;
        if (at < end) {
            size_t take = (size_t)(end - at) < k ? (size_t)(end - at) : k;
            lx_tensor_read(f->part[p], at - start, take, out);
            at += take, out += take, k -= take;
        }
        start = end;
    }
}

int lx_export_arch_check(const struct lx_arch *a, const char *target, struct lx_error *err)
{
    if (lx_arch_rel_values(a))
        return lx_err(err, LX_EINVAL, "%s has no learned relative-position bias; this model has %s\n  hint: "
                      "export rope models", target, lx_relbias_describe(lx_arch_rel_kind(a)));
    /* GeGLU is Gemma's MLP: lx_export_gemma_kind checks the rest of the block */
    if (a->mode != LX_MODEL_CAUSAL || !lx_arch_gated(a) || a->norm != LX_NORM_RMS || a->logit_scale || a->sinks)
        return lx_err(err, LX_EINVAL, "%s is a causal SwiGLU model with RMSNorms, without learned logit scales or "
                      "sinks; this model is %s with a %s MLP%s%s%s\n  hint: export causal swiglu models", target,
                      a->mode == LX_MODEL_CAUSAL ? "causal" : "a masked LM", a->mlp == LX_MLP_SWIGLU ? "SwiGLU" :
                      a->mlp == LX_MLP_GEGLU ? "GeGLU" : a->mlp == LX_MLP_GELU_ERF ? "GELU (erf)" : "GELU",
                      a->norm == LX_NORM_LAYER ? " and LayerNorms" : "", a->logit_scale ? " and logit scales" : "",
                      a->sinks ? " and learned sinks" : "");
    return LX_OK;
}

int lx_export_gemma_kind(const struct lx_arch *a, const struct lx_stack_rope *rope, struct lx_error *err)
{
    if (!lx_arch_gemma_part(a))
        return 0;
    int kind = a->post_norms ? (a->qk_norm ? 3 : 2) : 1;
    const char *why = a->mlp != LX_MLP_GEGLU ? "an MLP other than GeGLU" : !a->emb_scale ? "no embedding scale"
                      : a->qkv_bias ? "q/k/v biases" : rope->interleaved ? "interleaved rotary pairs"
                      : rope->dims && rope->dims < a->d_head ? "a partial rotary" : NULL;
    if (!why && kind == 2 && (a->local_every != 2 || a->local_base != rope->base))
        why = "post-norms without q/k norms (Gemma 2's block) but not Gemma 2's layers (every other one local, "
              "at the global layers' rope base)";
    if (!why && kind == 1 && (a->qk_norm || a->local_every || a->qk_dim || a->attn_softcap || a->logit_softcap))
        why = "Gemma 2's or 3's parts without their post-norms";
    if (!why)
        return kind;
    return lx_err(err, LX_EINVAL, "the model has Gemma's %s with %s, which none of Gemma, Gemma 2 and Gemma 3 "
                  "has\n  hint: a Gemma 3 block is mlp geglu, post_norms, emb_scale and qk_norm on rope half "
                  "(docs/checkpoints.md#gemma-and-gemma-3)", lx_arch_gemma_part(a), why);
}

long lx_local_pattern(const unsigned char *global, long n, long *bad)
{
    long first = 0;
    while (first < n && !global[first])
        first++;
    *bad = -1;
    if (first == n)
        return 0;
    for (long l = 0; l < n && *bad < 0; l++)
        if ((global[l] != 0) != ((l + 1) % (first + 1) == 0))
            *bad = l;
    return first + 1;
}
