/*
** harness/engine/formats/hf_phi.c - Phi's config.json and tensor names (see hf_phi.h).
**
** Phi's block (transformers' modeling_phi) is lenx's parallel block under one LayerNorm with its
** shift, x + attn(ln(x)) + mlp(ln(x)) (arch parallel, shared_norm), a bias on every product and on
** the logits (arch bias, head_bias), GELU's tanh form (gelu_new), and rope in halves over the first
** partial_rotary_factor of each head (rope's dims):
**
**   model.embed_tokens.weight                            tok_emb.weight
**   model.layers.N.input_layernorm.{weight,bias}         layers.N.attn_norm.{weight,bias}
**   model.layers.N.self_attn.{q,k,v}_proj.*              layers.N.attn.w{q,k,v}.*
**   model.layers.N.self_attn.dense.*                     layers.N.attn.wo.*
**   model.layers.N.mlp.fc1.*, mlp.fc2.*                  layers.N.mlp.w1.*, mlp.w2.*
**   model.final_layernorm.*                              norm.*
**   lm_head.{weight,bias}                                lm_head.{weight,bias}
**
** Every tensor is used in place.
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/formats/hf_phi.h"

#include <string.h>

#include "harness/core/lx.h"
#include "harness/engine/formats/format.h"
#include "harness/engine/formats/hf_cfg.h"
#include "harness/engine/model/arch.h"

/* The shape: width, heads, key/value heads, MLP, and the channels rope turns. */
static int shape(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_phi *c, struct lx_error *err)
{
    double part;
    int rc = lx_hf_cfg_int(doc, root, "hidden_size", 2048, 8, 8192, &c->s.d_model, err);      /* PhiConfig's */
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "num_attention_heads", 32, 1, 256, &c->s.heads, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "num_key_value_heads", c->s.heads, 1, 256, &c->s.kv_heads, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "num_hidden_layers", 24, 1, LX_FMT_MAX_LAYERS, &c->s.layers, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "intermediate_size", 8192, 8, 65536, &c->s.d_mlp, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_num(doc, root, "partial_rotary_factor", 0.5, &part, err);
    if (rc != LX_OK)
        return rc;
    long D = c->s.d_model / c->s.heads;
    if (c->s.d_model % c->s.heads || D % 2 || D > 512)
        return lx_json_member_err(err, doc, root, "num_attention_heads", "num_attention_heads %ld of hidden_size "
                                  "%ld: the head size must be whole, even and at most 512", c->s.heads, c->s.d_model);
    if (c->s.heads % c->s.kv_heads)
        return lx_json_member_err(err, doc, root, "num_key_value_heads", "num_key_value_heads %ld does not divide "
                                  "num_attention_heads %ld", c->s.kv_heads, c->s.heads);
    c->s.rot_dims = (long)((double)D * part);     /* PhiAttention: int(head_dim * partial_rotary_factor) */
    if (part > 1 || c->s.rot_dims < 2 || c->s.rot_dims % 2)
        return lx_json_member_err(err, doc, root, "partial_rotary_factor", "partial_rotary_factor %g of a head of "
                                  "%ld is %ld channels: rope turns pairs, so an even number of at least 2, at most "
                                  "the head", part, D, c->s.rot_dims);
    return LX_OK;
}

int lx_hf_phi_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_phi *c, struct lx_error *err)
{
    int qk_ln;
    memset(c, 0, sizeof *c);
    int rc = shape(doc, root, c, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "vocab_size", 51200, 2, 1000000, &c->s.vocab, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "max_position_embeddings", 2048, 1, 1L << 30, &c->s.max_pos, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_num(doc, root, "layer_norm_eps", 1e-5, &c->s.eps, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_rope(doc, root, "rope_theta", 10000, &c->s.theta, err);
    if (rc == LX_OK && lx_json_member(root, "hidden_act") == NULL)
        c->s.mlp = LX_MLP_GELU;       /* PhiConfig's default is gelu_new, lx_hf_cfg_gelu's gelu */
    else if (rc == LX_OK)
        rc = lx_hf_cfg_gelu(doc, root, "hidden_act", &c->s.mlp, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_bool(doc, root, "tie_word_embeddings", 0, &c->s.tied, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_bool(doc, root, "qk_layernorm", 0, &qk_ln, err);
    if (rc == LX_OK && qk_ln)
        rc = lx_json_member_err(err, doc, root, "qk_layernorm", "qk_layernorm: true (LayerNorms of q and k), which "
                                "lenx's engine does not run\n  hint: Phi-1, Phi-1.5 and Phi-2 have none");
    return rc;
}

int lx_hf_phi_tensor_name(const char *name, char *out, size_t n)
{
    static const char *const map[][2] = {
        {"attn_norm.", "input_layernorm."}, {"attn.wq.", "self_attn.q_proj."}, {"attn.wk.", "self_attn.k_proj."},
        {"attn.wv.", "self_attn.v_proj."},  {"attn.wo.", "self_attn.dense."},  {"mlp.w1.", "mlp.fc1."},
        {"mlp.w2.", "mlp.fc2."},
    };
    return lx_hf_names_table(name, out, n, "model.embed_tokens.weight", "model.final_layernorm.", "model.layers.", map,
                             sizeof map / sizeof *map);
}
