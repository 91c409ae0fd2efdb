/*
** harness/engine/formats/hf_bloom.c - BLOOM's config.json and tensor names (see hf_bloom.h).
**
** BLOOM's block (transformers' modeling_bloom) is GPT-NeoX's without rope and without the parallel
** residual: LayerNorms with shifts and a bias on every product (arch norm: layer, bias), ALiBi (its
** build_alibi_tensor's slopes are the ALiBi paper's set in its order at max_bias 8, and its bias,
** slope·j on key j, differs from −slope·(i − j) by a constant along each query's row), GELU's tanh
** form, and a LayerNorm of the embedding rows before the first layer (arch emb_norm):
**
**   word_embeddings.weight                        tok_emb.weight (and the tied head)
**   word_embeddings_layernorm.{weight,bias}       emb_norm.{weight,bias}
**   h.N.input_layernorm.*                         layers.N.attn_norm.*
**   h.N.self_attention.query_key_value.*          layers.N.attn.w{q,k,v}.* gathered head by head
**   h.N.self_attention.dense.*                    layers.N.attn.wo.*
**   h.N.post_attention_layernorm.*                layers.N.mlp_norm.*
**   h.N.mlp.dense_h_to_4h.*, dense_4h_to_h.*      layers.N.mlp.w1.*, mlp.w2.*
**   ln_f.*                                        norm.*
**
** each under "transformer." when BloomForCausalLM saved it, bare in BloomModel's checkpoints.
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/formats/hf_bloom.h"

#include <string.h>

#include "harness/core/lx.h"
#include "harness/engine/formats/format.h"

int lx_hf_bloom_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_bloom *c,
                       struct lx_error *err)
{
    static const char *const width[] = {"hidden_size", "n_embed"}, *const layers[] = {"n_layer",
                                                                                     "num_hidden_layers"};
    static const char *const heads[] = {"n_head", "num_attention_heads"};
    int post = 0;
    memset(c, 0, sizeof *c);
    /* BloomConfig's defaults */
    int rc = lx_hf_cfg_int(doc, root, lx_hf_cfg_key(root, width, 2), 64, 8, 8192, &c->s.d_model, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, lx_hf_cfg_key(root, layers, 2), 2, 1, LX_FMT_MAX_LAYERS, &c->s.layers, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, lx_hf_cfg_key(root, heads, 2), 8, 1, 256, &c->s.heads, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "vocab_size", 250880, 2, 1000000, &c->s.vocab, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "seq_length", 2048, 1, 1L << 30, &c->s.max_pos, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_num(doc, root, "layer_norm_epsilon", 1e-5, &c->s.eps, err);
    if (rc == LX_OK && (c->s.d_model % c->s.heads || c->s.d_model / c->s.heads > 512))
        rc = lx_json_member_err(err, doc, root, lx_hf_cfg_key(root, heads, 2), "%ld heads of a width of %ld: the "
                                "head size must be whole and at most 512", c->s.heads, c->s.d_model);
    c->s.d_mlp = 4 * c->s.d_model;     /* BLOOM's MLP */
    if (rc == LX_OK)
        rc = lx_hf_cfg_bool(doc, root, "tie_word_embeddings", 1, &c->s.tied, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_bool(doc, root, "apply_residual_connection_post_layernorm", 0, &post, err);
    if (rc == LX_OK && post)
        rc = lx_json_member_err(err, doc, root, "apply_residual_connection_post_layernorm", "true: the residual "
                                "stream carries the normed rows, which lenx's block does not run\n  hint: the "
                                "BLOOM models set it false");
    return rc;
}

int lx_hf_bloom_tensor_name(const char *prefix, const char *name, char *out, size_t n, int *part)
{
    const struct lx_hf_names bloom = {prefix, "word_embeddings.weight", "word_embeddings_layernorm.", "ln_f.",
                                      "lm_head.weight", "h.", "self_attention."};
    return lx_hf_names_of(&bloom, name, out, n, part);
}
