/*
** harness/engine/formats/hf_neox.c - GPT-NeoX's config.json and tensor names (see hf_neox.h).
**
** GPT-NeoX's block (transformers' modeling_gpt_neox) is lenx's with LayerNorms that shift (arch
** norm: layer, bias), a bias on every product, GELU's exact form (hidden_act gelu), the first
** rotary_pct of each head turned by rope in halves (Phi-4-mini's partial rotary: rope's dims), and by
** default the parallel residual x + attn(ln1(x)) + mlp(ln2(x)) (arch parallel):
**
**   gpt_neox.embed_in.weight                             tok_emb.weight
**   gpt_neox.layers.N.input_layernorm.{weight,bias}      layers.N.attn_norm.{weight,bias}
**   gpt_neox.layers.N.attention.query_key_value.*        layers.N.attn.w{q,k,v}.* gathered head by head
**   gpt_neox.layers.N.attention.dense.*                  layers.N.attn.wo.*
**   gpt_neox.layers.N.post_attention_layernorm.*         layers.N.mlp_norm.*
**   gpt_neox.layers.N.mlp.dense_h_to_4h.*, dense_4h_to_h.*   layers.N.mlp.w1.*, mlp.w2.*
**   gpt_neox.final_layer_norm.*                          norm.*
**   embed_out.weight                                     lm_head.weight
**
** query_key_value's rows are, head by head, that head's q, k and v rows; lenx's q rows are every
** head's in a row, so q, k and v are gathered into buffers of their own at load (a quarter of a
** layer's weights, the only ones not used in place).
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/formats/hf_neox.h"

#include <string.h>

#include "harness/core/lx.h"
#include "harness/engine/formats/format.h"
#include "harness/engine/formats/hf_cfg.h"

/* rotary_pct (partial_rotary_factor) of the head size: an even number of channels, at least 2. */
static int rotary(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_neox *c, struct lx_error *err)
{
    /* the later names first: absent at the top level, they are read from transformers 5's rope_parameters */
    static const char *const pct[] = {"partial_rotary_factor", "rotary_pct"}, *const base[] = {"rope_theta",
                                                                                              "rotary_emb_base"};
    const char *k = lx_hf_cfg_key(root, pct, 2);
    double p;
    int rc = lx_hf_cfg_rope(doc, root, k, 0.25, &p, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_rope(doc, root, lx_hf_cfg_key(root, base, 2), 10000, &c->s.theta, err);
    long D = c->s.d_model / c->s.heads;
    c->s.rot_dims = (long)((double)D * p);    /* transformers: int(head_size * rotary_pct) */
    if (rc == LX_OK && (p > 1 || c->s.rot_dims < 2 || c->s.rot_dims % 2))
        rc = lx_json_member_err(err, doc, root, k, "%s %g of a head of %ld is %ld channels: rope turns pairs, so an "
                                "even number of at least 2, at most the head", k, p, D, c->s.rot_dims);
    return rc;
}

int lx_hf_neox_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_neox *c,
                      struct lx_error *err)
{
    int attn_bias = 1;
    memset(c, 0, sizeof *c);
    int rc = lx_hf_cfg_int(doc, root, "hidden_size", 6144, 8, 8192, &c->s.d_model, err);    /* GPTNeoXConfig's */
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "num_attention_heads", 64, 1, 256, &c->s.heads, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "num_hidden_layers", 44, 1, LX_FMT_MAX_LAYERS, &c->s.layers, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "intermediate_size", 24576, 8, 65536, &c->s.d_mlp, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "vocab_size", 50432, 2, 1000000, &c->s.vocab, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "max_position_embeddings", 2048, 1, 1L << 30, &c->s.max_pos, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_num(doc, root, "layer_norm_eps", 1e-5, &c->s.eps, err);
    long D = c->s.heads ? c->s.d_model / c->s.heads : 0;
    if (rc == LX_OK && (c->s.d_model % c->s.heads || D % 2 || D > 512))
        rc = lx_json_member_err(err, doc, root, "num_attention_heads", "num_attention_heads %ld of hidden_size %ld: "
                                "the head size must be whole, even and at most 512", c->s.heads, c->s.d_model);
    if (rc == LX_OK)
        rc = rotary(doc, root, c, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_gelu(doc, root, "hidden_act", &c->s.mlp, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_bool(doc, root, "use_parallel_residual", 1, &c->parallel, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_bool(doc, root, "tie_word_embeddings", 0, &c->s.tied, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_bool(doc, root, "attention_bias", 1, &attn_bias, err);
    if (rc == LX_OK && !attn_bias)
        rc = lx_json_member_err(err, doc, root, "attention_bias", "attention_bias: false (no bias on "
                                "query_key_value and dense), which lenx's GPT-NeoX block does not run\n  hint: "
                                "Pythia and GPT-NeoX-20B have them");
    return rc;
}

int lx_hf_neox_tensor_name(const char *name, char *out, size_t n, int *part)
{
    static const struct lx_hf_names neox = {"gpt_neox.", "embed_in.weight", NULL, "final_layer_norm.",
                                            "embed_out.weight", "layers.", "attention."};
    return lx_hf_names_of(&neox, name, out, n, part);
}
