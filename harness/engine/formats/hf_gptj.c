/*
** harness/engine/formats/hf_gptj.c - GPT-J's config.json and tensor names (see hf_gptj.h).
**
** GPT-J's block (transformers' modeling_gptj) is lenx's parallel block under one LayerNorm with its
** shift, x + attn(ln_1(x)) + mlp(ln_1(x)) (arch parallel, shared_norm, norm_bias), no biases on the
** attention's products, biases on the MLP's (arch mlp_bias) and on the logits (head_bias), GELU's tanh
** form (gelu_new), and rope on the first rotary_dim channels of each head in neighbouring pairs
** (rotate_every_two: rope's layout interleaved with dims) at 10000:
**
**   transformer.wte.weight                              tok_emb.weight
**   transformer.h.N.ln_1.{weight,bias}                  layers.N.attn_norm.{weight,bias}
**   transformer.h.N.attn.{q,k,v}_proj.weight            layers.N.attn.w{q,k,v}.weight
**   transformer.h.N.attn.out_proj.weight                layers.N.attn.wo.weight
**   transformer.h.N.mlp.fc_in.*, mlp.fc_out.*           layers.N.mlp.w1.*, mlp.w2.*
**   transformer.ln_f.*                                  norm.*
**   lm_head.{weight,bias}                               lm_head.{weight,bias}
**
** Every tensor is used in place (the attention's causal-mask buffers some files hold are not read).
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/formats/hf_gptj.h"

#include <string.h>

#include "harness/core/lx.h"
#include "harness/engine/formats/format.h"
#include "harness/engine/formats/hf_cfg.h"
#include "harness/engine/model/arch.h"

int lx_hf_gptj_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_gptj *c,
                      struct lx_error *err)
{
    memset(c, 0, sizeof *c);
    c->s.theta = 10000;    /* GPT-J's rope base, not in its config; the rest GPTJConfig's defaults */
    int rc = lx_hf_cfg_int2(doc, root, "n_embd", "hidden_size", 4096, 8, 8192, &c->s.d_model, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int2(doc, root, "n_head", "num_attention_heads", 16, 1, 256, &c->s.heads, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int2(doc, root, "n_layer", "num_hidden_layers", 28, 1, LX_FMT_MAX_LAYERS, &c->s.layers, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int2(doc, root, "n_positions", "max_position_embeddings", 2048, 1, 1L << 30, &c->s.max_pos, err);
    if (rc == LX_OK)    /* n_inner: null is 4 x the width */
        rc = lx_hf_cfg_int(doc, root, "n_inner", 4 * c->s.d_model, 8, 65536, &c->s.d_mlp, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "vocab_size", 50400, 2, 1000000, &c->s.vocab, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_num(doc, root, "layer_norm_epsilon", 1e-5, &c->s.eps, err);
    if (rc == LX_OK && lx_json_member(root, "activation_function") == NULL)
        c->s.mlp = LX_MLP_GELU;       /* GPTJConfig's default is gelu_new, lx_hf_cfg_gelu's gelu */
    else if (rc == LX_OK)
        rc = lx_hf_cfg_gelu(doc, root, "activation_function", &c->s.mlp, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_bool(doc, root, "tie_word_embeddings", 0, &c->s.tied, err);
    if (rc != LX_OK)
        return rc;
    const char *const hk[] = {"n_head", "num_attention_heads"};
    long D = c->s.d_model / c->s.heads;
    if (c->s.d_model % c->s.heads || D % 2 || D > 512)
        return lx_json_member_err(err, doc, root, lx_hf_cfg_key(root, hk, 2), "%ld heads of a width of %ld: the head "
                                  "size must be whole, even and at most 512", c->s.heads, c->s.d_model);
    rc = lx_hf_cfg_int(doc, root, "rotary_dim", 64, 0, 512, &c->s.rot_dims, err);
    if (rc == LX_OK && !c->s.rot_dims)     /* null or 0: GPT-J's attention turns the whole head */
        c->s.rot_dims = D;
    if (rc == LX_OK && (c->s.rot_dims % 2 || c->s.rot_dims > D || c->s.rot_dims < 2))
        rc = lx_json_member_err(err, doc, root, "rotary_dim", "rotary_dim %ld of a head of %ld: rope turns pairs, so "
                                "an even number of at least 2, at most the head", c->s.rot_dims, D);
    return rc;
}

int lx_hf_gptj_tensor_name(const char *name, char *out, size_t n)
{
    static const char *const map[][2] = {
        {"attn_norm.", "ln_1."},           {"attn.wq.", "attn.q_proj."}, {"attn.wk.", "attn.k_proj."},
        {"attn.wv.", "attn.v_proj."},      {"attn.wo.", "attn.out_proj."}, {"mlp.w1.", "mlp.fc_in."},
        {"mlp.w2.", "mlp.fc_out."},
    };
    return lx_hf_names_table(name, out, n, "transformer.wte.weight", "transformer.ln_f.", "transformer.h.", map,
                             sizeof map / sizeof *map);
}
