/*
** harness/engine/formats/hf_config.c - config.json of a Hugging Face directory (hf_config.h):
** model_type, then the family's fields (Llama's and Gemma's here; MPT's, GPT-NeoX's, BLOOM's, Phi's,
** GPT-J's and Falcon's through their hf_FAMILY.c, each giving a struct lx_hf_shape), and the
** architecture they make.
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/formats/hf_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/lx.h"
#include "harness/engine/formats/format.h"
#include "harness/engine/formats/hf_bloom.h"
#include "harness/engine/formats/hf_cfg.h"
#include "harness/engine/formats/hf_gptj.h"
#include "harness/engine/formats/hf_mpt.h"
#include "harness/engine/formats/hf_neox.h"
#include "harness/engine/formats/hf_phi.h"

/* ---- config.json ----------------------------------------------------------- */

static int cfg_type(const struct lx_json *doc, const struct lx_jv *root, struct hf_config *c, struct lx_error *err)
{
    static const char *const types[] = {"llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma3_text",
                                        "gemma2"};
    const struct lx_jv *v;
    const char *s;
    int rc = lx_json_need(doc, root, "model_type", LX_JSON_STRING, &v, err);
    if (rc == LX_OK)
        rc = lx_json_str(doc, v, &s, NULL, err);
    if (rc < 0)
        return rc;
    if (strcmp(s, "gemma3") == 0)   /* the multimodal model: cfg_multimodal reads its text model */
        return c->mm = 1, LX_OK;
    static const char *const own[] = {"mpt", "gpt_neox", "bloom", "falcon", "phi", "gptj"};    /* own fields */
    int *flag[] = {&c->mpt, &c->neox, &c->bloom, &c->falcon, &c->phi, &c->gptj};
    for (int k = 0; k < 6; k++)
        if (strcmp(s, own[k]) == 0)
            return snprintf(c->type, sizeof c->type, "%s", s), *flag[k] = 1, LX_OK;
    for (int k = 0; k < 8; k++)
        if (strcmp(s, types[k]) == 0) {
            snprintf(c->type, sizeof c->type, "%s", s);
            c->bias = k == 2;       /* Qwen2 always has q/k/v biases (and none on o_proj) */
            c->qk_norm = k == 3 || k == 6;  /* Qwen3 and Gemma 3 normalise each q and k head */
            c->fused = k == 4;      /* Phi-3 stores q|k|v and gate|up fused, as lenx's own buffer does */
            c->gemma = k == 5 ? 1 : k == 6 ? 3 : k == 7 ? 2 : 0;
            return LX_OK;
        }
    return lx_json_err(err, doc, v, "model_type '%s' is not one lenx reads\n  hint: lenx reads llama, mistral, "
                       "qwen2, qwen3 and phi3 (Llama-architecture decoders), gemma, gemma2, gemma3_text, gemma3, "
                       "mpt, gpt_neox, bloom, falcon, phi and gptj", s);
}

/* hidden_act silu, no MLP or attention biases; *part: partial_rotary_factor, which only Phi-3's
** transformers model reads (Phi-4-mini: 0.75). */
static int cfg_features(const struct lx_json *doc, const struct lx_jv *root, const struct hf_config *c, double *part,
                        struct lx_error *err)
{
    /* Gemma's MLP is transformers' hidden_activation (gelu_pytorch_tanh when unset, whatever hidden_act says) */
    const struct lx_jv *v = lx_json_member(root, c->gemma ? "hidden_activation" : "hidden_act");
    const char *s = c->gemma ? "gelu_pytorch_tanh" : "silu";
    if (v && lx_json_type(v) != LX_JSON_NULL && lx_json_str(doc, v, &s, NULL, err) < 0)
        return LX_EINVAL;
    if (strcmp(s, c->gemma ? "gelu_pytorch_tanh" : "silu") != 0)
        return lx_json_err(err, doc, v, c->gemma ? "hidden_activation '%s': lenx's GeGLU uses gelu_pytorch_tanh" :
                           "hidden_act '%s': lenx's SwiGLU uses silu", s);
    int rc = lx_hf_cfg_refuse(doc, root, "attention_bias", "Llama's attention_bias adds an o_proj bias, which lenx's "
                        "attention does not have (Qwen2's q/k/v biases load)", err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_refuse(doc, root, "mlp_bias", "lenx's MLP has no biases", err);
    if (rc == LX_OK)
        rc = lx_hf_rope_member(doc, root, "partial_rotary_factor", &v, err);
    if (rc == LX_OK && v && (rc = lx_json_num(doc, v, part, err)) == LX_OK &&
        *part != 1 && (!c->fused || !(*part > 0 && *part < 1)))
        rc = lx_json_err(err, doc, v, "partial_rotary_factor %g: %s\n  hint: lenx reads a factor in (0, 1] of a phi3 "
                         "model (Phi-4-mini's 0.75)", *part, c->fused ? "not in (0, 1]" : "transformers' "
                         "Llama, Mistral and Qwen models turn every pair of a head");
    return rc;
}

/* The sliding window as transformers runs it: Mistral's and Phi-3's apply to every layer whenever
** set (c->window: the `window` method, in the evaluation stack); Llama's config has none (the key is
** ignored); Qwen2's and Qwen3's apply only with use_sliding_window true, and then only from layer
** max_window_layers on, which lenx's window (every layer alike) cannot say: refused. */
static int cfg_window(const struct lx_json *doc, const struct lx_jv *root, struct hf_config *c,
                      struct lx_error *err)
{
    const struct lx_jv *use = lx_json_member(root, "use_sliding_window"), *v = lx_json_member(root, "sliding_window");
    int used = 0, rc = LX_OK, qwen = strncmp(c->type, "qwen", 4) == 0;
    int64_t w = 0;
    if (strcmp(c->type, "llama") == 0 || c->gemma || !v || lx_json_type(v) == LX_JSON_NULL)
        return LX_OK;      /* Gemma 3's is its local layers' (cfg_gemma3) */
    if (qwen && use && lx_json_type(use) != LX_JSON_NULL)
        rc = lx_json_bool(doc, use, &used, err);
    if (rc == LX_OK && qwen && used)    /* named by its key: jansson's `true` is one shared value */
        return lx_json_member_err(err, doc, root, "use_sliding_window", "true: %s slides a window over the layers from "
                           "max_window_layers on only, which lenx's `window` (every layer alike) cannot run\n  hint: "
                           "set it to false to run the model without its window", c->type);
    if (rc == LX_OK && !qwen && (rc = lx_json_int(doc, v, &w, err)) == LX_OK && (w < 1 || w > (1L << 40)))
        rc = lx_json_err(err, doc, v, "sliding_window %lld: a window must hold at least one key", (long long)w);
    if (rc == LX_OK && !qwen)
        c->window = (long)w;
    return rc;
}

/* A soft-cap: def when absent, 0 when null, else a positive number. */
static int cfg_cap(const struct lx_json *doc, const struct lx_jv *root, const char *key, double def, double *out,
                   struct lx_error *err)
{
    const struct lx_jv *v = lx_json_member(root, key);
    *out = v && lx_json_type(v) == LX_JSON_NULL ? 0 : def;
    return v && lx_json_type(v) != LX_JSON_NULL ? lx_hf_cfg_num(doc, root, key, def, out, err) : LX_OK;
}

/* Gemma 2's and 3's layers (transformers' Gemma2Config, Gemma3TextConfig): local ones over a window
** of sliding_window keys (Gemma 3's at rope_local_base_freq, Gemma 2's at rope_theta), every
** sliding_window_pattern-th global (Gemma 2: every other; layer_types, when given, must say the same),
** logits over query_pre_attn_scalar, soft-caps (Gemma 2's: 50 and 30 unless null), causal. */
static int cfg_gemma_layers(const struct lx_json *doc, const struct lx_jv *root, struct hf_config *c,
                            struct lx_error *err)
{
    int g2 = c->gemma == 2;
    int rc = cfg_cap(doc, root, "attn_logit_softcapping", g2 ? 50 : 0, &c->attn_cap, err);
    if (rc == LX_OK)
        rc = cfg_cap(doc, root, "final_logit_softcapping", g2 ? 30 : 0, &c->logit_cap, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_refuse(doc, root, "use_bidirectional_attention", "lenx runs Gemma as the causal decoder", err);
    long qpas = 0;
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "query_pre_attn_scalar", 256, 1, 65536, &qpas, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "sliding_window", 4096, 1, 1L << 30, &c->local_window, err);
    c->local_every = 2, c->local_base = c->theta;
    if (rc == LX_OK && !g2)
        rc = lx_hf_cfg_int(doc, root, "sliding_window_pattern", 6, 1, 64, &c->local_every, err);
    const struct lx_jv *local = lx_hf_rope_params(root, "sliding_attention");     /* transformers 5's */
    if (rc == LX_OK && !g2)
        rc = local && !lx_json_member(root, "rope_local_base_freq") ? lx_hf_cfg_num(doc, local, "rope_theta", 10000,
                                                                                    &c->local_base, err)
                                                                    : lx_hf_cfg_num(doc, root, "rope_local_base_freq",
                                                                                    10000, &c->local_base, err);
    c->qk_dim = qpas == c->head_dim ? 0 : qpas;
    const struct lx_jv *types = lx_json_member(root, "layer_types"), *bad = NULL;
    if (rc < 0 || !types || lx_json_type(types) == LX_JSON_NULL)
        return rc;
    if (lx_json_type(types) != LX_JSON_ARRAY)
        return lx_json_err(err, doc, types, "must be a list of \"sliding_attention\" and \"full_attention\", one "
                           "entry a layer");
    long n = lx_json_len(types), at = -1;
    unsigned char *global = lx_xcalloc((size_t)n + 1, 1);
    for (long l = 0; l < n && !bad && rc == LX_OK; l++) {
        const char *t;
        if ((rc = lx_json_str(doc, lx_json_at(types, l), &t, NULL, err)) == LX_OK && strcmp(t, "full_attention") &&
            strcmp(t, "sliding_attention"))
            bad = lx_json_at(types, l);
        global[l] = rc == LX_OK && strcmp(t, "full_attention") == 0;
    }
    if (rc == LX_OK && !bad && (c->local_every = lx_local_pattern(global, n, &at)) && at >= 0)
        bad = lx_json_at(types, at);
    free(global);
    if (rc == LX_OK && (bad || !c->local_every || n != c->layers))
        rc = lx_json_err(err, doc, bad ? bad : types, "lenx runs a pattern of local layers with every "
                         "k-th layer global (full_attention), one entry a layer\n  hint: Gemma 3's pattern is 5 "
                         "sliding_attention layers, then 1 full_attention; Gemma 2's alternates");
    return rc;
}

/* A gemma3 directory (transformers' Gemma3ForConditionalGeneration, Gemma 3 4B to 27B): the text
** model's fields are text_config's (transformers' Gemma3TextConfig defaults for those it leaves out),
** its tensors under language_model.model. (or model.language_model., as newer transformers saves
** them); the vision tower's are not read. */
static int cfg_multimodal(const struct lx_json *doc, const struct lx_jv **root, struct hf_config *c,
                          struct lx_error *err)
{
    const struct lx_jv *tc = lx_json_member(*root, "text_config");
    if (!tc || lx_json_type(tc) != LX_JSON_OBJECT)
        return lx_json_err(err, doc, tc ? tc : *root, "model_type gemma3 without a text_config object\n  hint: a "
                           "gemma3 directory (Gemma 3 4B-27B) holds its text model's fields in text_config; a text "
                           "model alone is model_type gemma3_text");
    const struct lx_jv *t = lx_json_member(tc, "model_type");
    const char *s = "gemma3_text";
    if (t && lx_json_str(doc, t, &s, NULL, err) < 0)
        return LX_EINVAL;
    if (strcmp(s, "gemma3_text") != 0)
        return lx_json_err(err, doc, t, "model_type '%s': a gemma3 directory's text model is gemma3_text", s);
    snprintf(c->type, sizeof c->type, "gemma3_text");
    c->gemma = 3, c->qk_norm = 1, c->mm = 1;
    *root = tc;
    return LX_OK;
}

/* The shape a family's reader gave (hf_cfg.h), in the fields the loader reads. */
static void cfg_shape(struct hf_config *c, const struct lx_hf_shape *s)
{
    c->hidden = s->d_model, c->inter = s->d_mlp, c->layers = s->layers, c->heads = s->heads;
    c->kv_heads = s->kv_heads ? s->kv_heads : s->heads, c->head_dim = s->heads ? s->d_model / s->heads : 0;
    c->rot_dims = s->rot_dims ? s->rot_dims : c->head_dim, c->theta = s->theta;
    c->vocab = s->vocab, c->max_pos = s->max_pos, c->eps = s->eps, c->tied = s->tied, c->mlp = s->mlp;
}

/* The families with their own fields (hf_mpt.c ... hf_falcon.c): the shape, then what is theirs alone. */
static int cfg_own(const struct lx_json *doc, const struct lx_jv *root, struct hf_config *c, struct lx_error *err)
{
    union {
        struct lx_hf_mpt mpt;
        struct lx_hf_neox neox;
        struct lx_hf_bloom bloom;
        struct lx_hf_phi phi;
        struct lx_hf_gptj gptj;
    } t;
    int rc;
    if (c->mpt)
        rc = lx_hf_mpt_config(doc, root, &t.mpt, err), cfg_shape(c, &t.mpt.s), c->alibi_max = t.mpt.alibi_max;
    else if (c->neox)
        rc = lx_hf_neox_config(doc, root, &t.neox, err), cfg_shape(c, &t.neox.s), c->parallel = t.neox.parallel;
    else if (c->bloom)
        rc = lx_hf_bloom_config(doc, root, &t.bloom, err), cfg_shape(c, &t.bloom.s), c->alibi_max = 8;
    else if (c->phi)
        rc = lx_hf_phi_config(doc, root, &t.phi, err), cfg_shape(c, &t.phi.s);
    else if (c->gptj)
        rc = lx_hf_gptj_config(doc, root, &t.gptj, err), cfg_shape(c, &t.gptj.s);
    else {      /* Falcon's config stays: its tensor names follow it (hf_model.c) */
        rc = lx_hf_falcon_config(doc, root, &c->fal, err), cfg_shape(c, &c->fal.s);
        c->parallel = c->fal.parallel, c->alibi_max = c->fal.alibi ? 8 : 0;
        c->alibi_scale = c->fal.alibi ? 1.0 / sqrt((double)c->head_dim) : 0;
    }
    return rc;
}

int lx_hf_config_read(const struct lx_json *doc, struct hf_config *c, struct lx_error *err)
{
    const struct lx_jv *root = lx_json_root(doc);
    if (lx_json_type(root) != LX_JSON_OBJECT)
        return lx_err(err, LX_EINVAL, "%s: not a JSON object", lx_json_name(doc));
    double part = 1;
    int rc = cfg_type(doc, root, c, err);
    if (rc == LX_OK && c->mm)
        rc = cfg_multimodal(doc, &root, c, err);
    c->root = root;
    if (rc == LX_OK && (c->mpt || c->neox || c->bloom || c->falcon || c->phi || c->gptj))
        return cfg_own(doc, root, c, err);
    const struct lx_jv *tie = lx_json_member(root, "tie_word_embeddings");
    long g3 = c->gemma == 3;    /* Gemma3TextConfig's defaults (a gemma3 text_config leaves most out) */
    if (rc == LX_OK)
        rc = cfg_features(doc, root, c, &part, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "hidden_size", g3 ? 2304 : -1, 8, 8192, &c->hidden, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "intermediate_size", g3 ? 9216 : -1, 8, 65536, &c->inter, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "num_hidden_layers", g3 ? 26 : -1, 1, LX_FMT_MAX_LAYERS, &c->layers,
                               err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "num_attention_heads", g3 ? 8 : -1, 1, 256, &c->heads, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "num_key_value_heads", g3 ? 4 : c->heads, 1, c->heads, &c->kv_heads, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "head_dim", c->gemma ? 256 : c->hidden / c->heads, 2, 512, &c->head_dim, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "vocab_size", g3 ? 262208 : -1, 2, 1000000, &c->vocab, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "max_position_embeddings", c->gemma == 3 ? 131072 : c->gemma ? 8192 : 2048, 1,
                           1L << 30, &c->max_pos, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_num(doc, root, "rms_norm_eps", 1e-6, &c->eps, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_rope(doc, root, "rope_theta", c->gemma == 3 ? 1000000 : 10000, &c->theta, err);
    c->tied = c->gemma != 0;    /* transformers' Gemma configs tie by default */
    if (rc == LX_OK && c->gemma >= 2)
        rc = cfg_gemma_layers(doc, root, c, err);
    if (c->local_every == 1)    /* every layer global (full_attention): no local layers */
        c->local_every = 0;
    if (rc == LX_OK && tie && lx_json_type(tie) != LX_JSON_NULL)
        rc = lx_json_bool(doc, tie, &c->tied, err);
    if (rc == LX_OK)
        rc = cfg_window(doc, root, c, err);
    if (rc == LX_OK && (c->heads % c->kv_heads || c->head_dim % 2))
        rc = lx_err(err, LX_EINVAL, "%s: num_attention_heads %ld must be a multiple of num_key_value_heads %ld "
                    "and head_dim %ld even", lx_json_name(doc), c->heads, c->kv_heads, c->head_dim);
    c->rot_dims = (long)((double)c->head_dim * part);     /* transformers: int(head_dim * partial_rotary_factor) */
    if (rc == LX_OK && (c->rot_dims < 2 || c->rot_dims % 2))
        rc = lx_json_member_err(err, doc, root, "partial_rotary_factor", "%g of a head of %ld is %ld channels: rope "
                                "turns pairs, so an even number of at least 2", part, c->head_dim, c->rot_dims);
    return rc;
}

void lx_hf_config_arch(const struct hf_config *c, struct lx_arch *a)
{
    lx_params_defaults(&lx_arch_schema, a);
    a->mode = LX_MODEL_CAUSAL;
    a->layers = c->layers;
    a->d_model = c->hidden;
    a->heads = c->heads;
    a->d_head = c->head_dim;
    a->d_mlp = c->inter;
    a->mlp = LX_MLP_SWIGLU;
    a->vocab = c->vocab;
    a->norm_eps = c->eps;
    a->kv_heads = c->kv_heads == c->heads ? 0 : c->kv_heads;
    a->tie_head = c->tied;
    a->qkv_bias = c->bias;
    a->qk_norm = c->qk_norm;
    if (c->mpt)
        a->mlp = LX_MLP_GELU_ERF, a->norm = LX_NORM_LAYER;
    if (c->neox || c->bloom)
        a->norm = LX_NORM_LAYER, a->bias = a->qkv_bias = 1;
    if (c->neox)
        a->mlp = c->mlp, a->parallel = c->parallel;
    if (c->bloom)
        a->mlp = LX_MLP_GELU, a->emb_norm = 1;
    if (c->falcon) {
        a->norm = LX_NORM_LAYER, a->bias = a->qkv_bias = c->fal.bias, a->norm_bias = !c->fal.bias;
        a->mlp = c->mlp, a->parallel = c->parallel, a->shared_norm = c->fal.shared_norm;
    }
    if (c->phi) {
        a->norm = LX_NORM_LAYER, a->mlp = c->mlp;
        a->bias = a->qkv_bias = a->parallel = a->shared_norm = a->head_bias = 1;
    }
    if (c->gptj) {
        a->norm = LX_NORM_LAYER, a->mlp = c->mlp;
        a->norm_bias = a->mlp_bias = a->parallel = a->shared_norm = a->head_bias = 1;
    }
    if (c->gemma) {
        a->mlp = LX_MLP_GEGLU;
        a->emb_scale = 1;
        a->post_norms = c->gemma >= 2;
        a->attn_softcap = c->attn_cap, a->logit_softcap = c->logit_cap;
        a->qk_dim = c->qk_dim;
        a->local_every = c->local_every, a->local_window = c->local_window, a->local_base = c->local_base;
    }
    lx_params_finish(&lx_arch_schema, a);
}
