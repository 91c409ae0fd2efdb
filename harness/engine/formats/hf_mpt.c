/*
** harness/engine/formats/hf_mpt.c - MPT's config.json and tensor names (see hf_mpt.h).
**
** MPT's block (transformers' modeling_mpt, llm-foundry's MPTBlock) is a pre-norm block of
** LayerNorms without biases, a fused q|k|v projection, ALiBi, and an MLP of exact GELU,
** with no bias anywhere and the output head tied to the embedding:
**
**   transformer.wte.weight                         tok_emb.weight
**   transformer.blocks.N.norm_1.weight             layers.N.attn_norm.weight
**   transformer.blocks.N.attn.Wqkv.weight          layers.N.attn.w{q,k,v}.weight by rows
**   transformer.blocks.N.attn.out_proj.weight      layers.N.attn.wo.weight
**   transformer.blocks.N.norm_2.weight             layers.N.mlp_norm.weight
**   transformer.blocks.N.ffn.{up,down}_proj.weight layers.N.mlp.w{1,2}.weight
**   transformer.norm_f.weight                      norm.weight
**   lm_head.weight (tie_word_embeddings false)     lm_head.weight
**
** MPT's slopes (gen_slopes: 2^(−k·alibi_bias_max/n) for k = 1..n, n the power of two at or
** above the heads, the even k first, then the odd) are the ALiBi paper's set in its order,
** which the alibi method computes with max_bias = alibi_bias_max; MPT adds −m·(T−1−j) to key
** j, the paper −m·(i−j): the two differ by a constant along each query's row, which softmax
** drops.
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/formats/hf_mpt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness/core/lx.h"
#include "harness/engine/formats/format.h"
#include "harness/engine/formats/hf_cfg.h"

/* A member that must be null or absent (a feature lenx does not run). */
static int must_be_null(const struct lx_json *doc, const struct lx_jv *obj, const char *key, const char *what,
                        struct lx_error *err)
{
    const struct lx_jv *v = lx_json_member(obj, key);
    if (!v || lx_json_type(v) == LX_JSON_NULL)
        return LX_OK;
    return lx_json_err(err, doc, v, "%s: %s, which lenx's engine does not run\n  hint: MPT-7B and MPT-30B set it "
                       "null", key, what);
}

/* A boolean member that must be `want` when present. */
static int must_be(const struct lx_json *doc, const struct lx_jv *obj, const char *key, int want, const char *what,
                   struct lx_error *err)
{
    const struct lx_jv *v = lx_json_member(obj, key);
    int on = want;
    if (!v || lx_json_type(v) == LX_JSON_NULL)
        return LX_OK;
    if (lx_json_bool(doc, v, &on, err) < 0)
        return LX_EINVAL;
    if (on == want)
        return LX_OK;
    /* named by its key: jansson's `true` is one value shared by every true of the document */
    return lx_json_member_err(err, doc, obj, key, "%s: %s, which lenx's engine does not run\n  hint: MPT-7B and "
                              "MPT-30B set it %s", key, what, want ? "true" : "false");
}

/* A string member that must be one of `ok` (NULL-ended) when present. */
static int must_say(const struct lx_json *doc, const struct lx_jv *obj, const char *key, const char *const *ok,
                    const char *what, struct lx_error *err)
{
    const struct lx_jv *v = lx_json_member(obj, key);
    const char *s;
    if (!v || lx_json_type(v) == LX_JSON_NULL)
        return LX_OK;
    if (lx_json_str(doc, v, &s, NULL, err) < 0)
        return LX_EINVAL;
    for (int k = 0; ok[k]; k++)
        if (strcmp(s, ok[k]) == 0)
            return LX_OK;
    return lx_json_err(err, doc, v, "%s '%s': lenx runs %s '%s'", key, s, what, ok[0]);
}

/* attn_config: ALiBi with its alibi_bias_max, multi-head, nothing else. */
static int attn_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_mpt *c, struct lx_error *err)
{
    static const char *const mha[] = {"multihead_attention", NULL};
    const struct lx_jv *a = lx_json_member(root, "attn_config");
    c->alibi_max = 8;
    if (!a || lx_json_type(a) == LX_JSON_NULL)
        return LX_OK;
    if (lx_json_type(a) != LX_JSON_OBJECT)
        return lx_json_err(err, doc, a, "attn_config must be an object");
    int rc = must_be(doc, a, "alibi", 1, "positions other than ALiBi (learned position embeddings)", err);
    if (rc == LX_OK)
        rc = must_be(doc, a, "rope", 0, "rotary positions in an MPT block", err);
    if (rc == LX_OK)
        rc = must_be(doc, a, "qk_ln", 0, "LayerNorms of q and k", err);
    if (rc == LX_OK)
        rc = must_be(doc, a, "prefix_lm", 0, "a prefix LM (bidirectional attention over a prefix)", err);
    if (rc == LX_OK)
        rc = must_be_null(doc, a, "clip_qkv", "q, k and v clipped to a range", err);
    if (rc == LX_OK)
        rc = must_be_null(doc, a, "softmax_scale", "logits scaled other than by 1/sqrt(head dim)", err);
    if (rc == LX_OK)
        rc = must_say(doc, a, "attn_type", mha, "every head with its own keys and values:", err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_num(doc, a, "alibi_bias_max", 8, &c->alibi_max, err);
    return rc;
}

/* ffn_config (llm-foundry's): the MLP up_proj, exact GELU, down_proj, of ffn_hidden_size when given. */
static int ffn_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_mpt *c, struct lx_error *err)
{
    static const char *const mlp[] = {"mptmlp", NULL}, *const gelu[] = {"gelu", NULL}, *const none[] = {"none", NULL};
    const struct lx_jv *f = lx_json_member(root, "ffn_config"), *act;
    if (!f || lx_json_type(f) == LX_JSON_NULL)
        return LX_OK;
    if (lx_json_type(f) != LX_JSON_OBJECT)
        return lx_json_err(err, doc, f, "ffn_config must be an object");
    int rc = must_say(doc, f, "ffn_type", mlp, "MPT's MLP,", err);
    if (rc == LX_OK && (act = lx_json_member(f, "ffn_act_fn")) && lx_json_type(act) == LX_JSON_OBJECT &&
        (rc = must_say(doc, act, "name", gelu, "the activation", err)) == LX_OK)
        rc = must_say(doc, act, "approximate", none, "GELU's exact form, approximate", err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, f, "ffn_hidden_size", c->s.d_mlp, 8, 65536, &c->s.d_mlp, err);
    return rc;
}

/* expansion_ratio (a number: MPT's MLP is ratio × d_model wide). */
static int expansion(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_mpt *c, struct lx_error *err)
{
    double r;
    int rc = lx_hf_cfg_num(doc, root, "expansion_ratio", 4, &r, err);
    double w = r * (double)c->s.d_model;
    if (rc == LX_OK && (w != floor(w) || w < 8 || w > 65536))
        rc = lx_json_member_err(err, doc, root, "expansion_ratio", "expansion_ratio %g of d_model %ld is %g: the "
                                "MLP's width must be a whole number in [8, 65536]", r, c->s.d_model, w);
    c->s.d_mlp = (long)w;
    return rc;
}

int lx_hf_mpt_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_mpt *c, struct lx_error *err)
{
    static const char *const ln[] = {"low_precision_layernorm", "layernorm", NULL};
    const struct lx_jv *tie = lx_json_member(root, "tie_word_embeddings");
    memset(c, 0, sizeof *c);
    c->s.tied = 1;
    int rc = lx_hf_cfg_int(doc, root, "d_model", 2048, 8, 8192, &c->s.d_model, err);    /* MptConfig's defaults */
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "n_heads", 16, 1, 256, &c->s.heads, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "n_layers", 24, 1, LX_FMT_MAX_LAYERS, &c->s.layers, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "vocab_size", 50368, 2, 1000000, &c->s.vocab, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "max_seq_len", 2048, 1, 1L << 30, &c->s.max_pos, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_num(doc, root, "layer_norm_epsilon", 1e-5, &c->s.eps, err);
    if (rc == LX_OK && c->s.d_model % c->s.heads)
        rc = lx_json_member_err(err, doc, root, "n_heads", "n_heads %ld does not divide d_model %ld", c->s.heads,
                                c->s.d_model);
    if (rc == LX_OK)
        rc = expansion(doc, root, c, err);
    if (rc == LX_OK)
        rc = must_be(doc, root, "no_bias", 1, "biases on every projection and norm", err);
    if (rc == LX_OK)
        rc = must_be_null(doc, root, "logit_scale", "the output logits scaled", err);
    if (rc == LX_OK)
        rc = must_say(doc, root, "norm_type", ln, "MPT's LayerNorm without a bias, norm_type", err);
    if (rc == LX_OK)
        rc = attn_config(doc, root, c, err);
    if (rc == LX_OK)
        rc = ffn_config(doc, root, c, err);
    if (rc == LX_OK && tie && lx_json_type(tie) != LX_JSON_NULL)
        rc = lx_json_bool(doc, tie, &c->s.tied, err);
    return rc;
}

int lx_hf_mpt_tensor_name(const struct lx_arch *a, const char *name, char *out, size_t n, long *row0, long *rows)
{
    static const char *const map[][2] = {
        {"attn_norm.weight", "norm_1.weight"}, {"attn.wo.weight", "attn.out_proj.weight"},
        {"mlp_norm.weight", "norm_2.weight"},  {"mlp.w1.weight", "ffn.up_proj.weight"},
        {"mlp.w2.weight", "ffn.down_proj.weight"},
    };
    long l;
    int at = 0, which;
    *row0 = 0, *rows = 0;
    if (strcmp(name, "tok_emb.weight") == 0)
        return snprintf(out, n, "transformer.wte.weight"), 1;
    if (strcmp(name, "norm.weight") == 0)
        return snprintf(out, n, "transformer.norm_f.weight"), 1;
    if (strcmp(name, "lm_head.weight") == 0)
        return snprintf(out, n, "lm_head.weight"), 1;
    if (sscanf(name, "layers.%ld.%n", &l, &at) != 1 || !at)
        return 0;
    if (lx_fused_part(a, name, &l, &which, row0, rows) && !which)
        return snprintf(out, n, "transformer.blocks.%ld.attn.Wqkv.weight", l), 1;
    *row0 = *rows = 0;
    for (size_t k = 0; k < sizeof map / sizeof *map; k++)
        if (strcmp(name + at, map[k][0]) == 0)
            return snprintf(out, n, "transformer.blocks.%ld.%s", l, map[k][1]), 1;
    return 0;
}
