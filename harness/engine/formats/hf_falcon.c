/*
** harness/engine/formats/hf_falcon.c - Falcon's config.json and tensor names (see hf_falcon.h).
**
** Falcon's block (transformers' modeling_falcon) is lenx's with LayerNorms that shift (arch norm:
** layer, and norm_bias unless `bias` puts a bias on every product too), GELU's exact form, rope over
** the whole head in halves, and grouped-query attention. Falcon-7B (multi_query, parallel_attn) runs
** x + attn(ln(x)) + mlp(ln(x)) with one LayerNorm (arch parallel, shared_norm) and one key/value head;
** Falcon-40B/180B (new_decoder_architecture) the parallel block with ln_attn and ln_mlp and num_kv_heads:
**
**   transformer.word_embeddings.weight                 tok_emb.weight
**   transformer.h.N.input_layernorm.*  (or ln_attn.*)  layers.N.attn_norm.*
**   transformer.h.N.ln_mlp.*  (post_attention_layernorm.* of a sequential block)   layers.N.mlp_norm.*
**   transformer.h.N.self_attention.query_key_value.*   layers.N.attn.w{q,k,v}.*
**   transformer.h.N.self_attention.dense.*             layers.N.attn.wo.*
**   transformer.h.N.mlp.dense_h_to_4h.*, dense_4h_to_h.*   layers.N.mlp.w1.*, mlp.w2.*
**   transformer.ln_f.*                                 norm.*
**   lm_head.weight (when not tied)                     lm_head.weight
**
** query_key_value's rows are, key/value group by group, the group's query heads, then its key head and
** its value head (FalconAttention._split_heads; a multi-head model's groups are its heads, a multi-query
** model's one group). With one group q, k and v are row blocks used in place; otherwise they are
** gathered into buffers of their own at load, as GPT-NeoX's are. Falcon-RW (alibi true) runs ALiBi
** in place of rope: BLOOM's slopes, the bias added before the 1/sqrt(head_dim) scaling — ALiBi at
** max_bias 8 with every slope times 1/sqrt(head_dim) (alibi's scale; hf_model.c's native stack).
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/formats/hf_falcon.h"

#include <stdio.h>
#include <string.h>

#include "harness/core/lx.h"
#include "harness/engine/formats/format.h"
#include "harness/engine/formats/hf_cfg.h"

/* The shape: the width, heads, key/value heads as FalconAttention counts them, the MLP. */
static int shape(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_falcon *c, int mq, int new_arch,
                 struct lx_error *err)
{
    int rc = lx_hf_cfg_int2(doc, root, "hidden_size", "n_embed", 4544, 8, 8192, &c->s.d_model, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int2(doc, root, "num_attention_heads", "n_head", 71, 1, 256, &c->s.heads, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int2(doc, root, "num_hidden_layers", "n_layer", 32, 1, LX_FMT_MAX_LAYERS, &c->s.layers, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int2(doc, root, "num_kv_heads", "n_head_kv", c->s.heads, 1, 256, &c->s.kv_heads, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "ffn_hidden_size", 4 * c->s.d_model, 8, 65536, &c->s.d_mlp, err);
    if (rc != LX_OK)
        return rc;
    const char *const hk[] = {"num_attention_heads", "n_head"}, *const kk[] = {"num_kv_heads", "n_head_kv"};
    if (c->s.d_model % c->s.heads || (c->s.d_model / c->s.heads) % 2 || c->s.d_model / c->s.heads > 512)
        return lx_json_member_err(err, doc, root, lx_hf_cfg_key(root, hk, 2), "%ld heads of a width of %ld: the "
                                  "head size must be whole, even and at most 512", c->s.heads, c->s.d_model);
    if (!new_arch && mq)
        c->s.kv_heads = 1;        /* FalconAttention: num_kv_heads only with new_decoder_architecture or MHA */
    if (c->s.heads % c->s.kv_heads || (!new_arch && !mq && c->s.kv_heads != c->s.heads))
        return lx_json_member_err(err, doc, root, lx_hf_cfg_key(root, kk, 2), "%ld key/value heads for %ld heads%s",
                                  c->s.kv_heads, c->s.heads, new_arch ? ": they must divide them"
                                  : " of a multi-head model (multi_query false): they are the heads");
    return LX_OK;
}

/* The block: which residual, how many LayerNorms, biases. */
static int block(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_falcon *c, int new_arch,
                 struct lx_error *err)
{
    int par;
    long nln;
    int rc = lx_hf_cfg_bool(doc, root, "parallel_attn", 1, &par, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "num_ln_in_parallel_attn", new_arch ? 2 : 1, 1, 2, &nln, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_bool(doc, root, "bias", 0, &c->bias, err);
    if (rc == LX_OK && new_arch && nln == 1 && !par)
        rc = lx_json_member_err(err, doc, root, "parallel_attn", "parallel_attn: false with "
                                "new_decoder_architecture and num_ln_in_parallel_attn 1, which FalconDecoderLayer "
                                "does not run (its MLP would read no norm)");
    c->parallel = new_arch || par;
    c->two_norms = new_arch && nln == 2;
    c->shared_norm = c->parallel && !c->two_norms;
    return rc;
}

int lx_hf_falcon_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_falcon *c,
                        struct lx_error *err)
{
    int mq, new_arch;
    memset(c, 0, sizeof *c);
    int rc = lx_hf_cfg_bool(doc, root, "multi_query", 1, &mq, err);       /* FalconConfig's defaults */
    if (rc == LX_OK)
        rc = lx_hf_cfg_bool(doc, root, "new_decoder_architecture", 0, &new_arch, err);
    if (rc == LX_OK)
        rc = shape(doc, root, c, mq, new_arch, err);
    if (rc == LX_OK)
        rc = block(doc, root, c, new_arch, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "vocab_size", 65024, 2, 1000000, &c->s.vocab, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_int(doc, root, "max_position_embeddings", 2048, 1, 1L << 30, &c->s.max_pos, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_num(doc, root, "layer_norm_epsilon", 1e-5, &c->s.eps, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_rope(doc, root, "rope_theta", 10000, &c->s.theta, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_gelu(doc, root, "activation", &c->s.mlp, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_bool(doc, root, "tie_word_embeddings", 1, &c->s.tied, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_bool(doc, root, "alibi", 0, &c->alibi, err);
    if (rc == LX_OK)
        rc = lx_hf_cfg_refuse(doc, root, "apply_residual_connection_post_layernorm", "the residual would carry "
                              "the normed rows, which lenx's block does not run", err);
    return rc;
}

int lx_hf_falcon_tensor_name(const struct lx_hf_falcon *c, const char *name, char *out, size_t n, int *part)
{
    static const struct lx_hf_names falcon = {"transformer.", "word_embeddings.weight", NULL, "ln_f.",
                                              "lm_head.weight", "h.", "self_attention."};
    static const char *const two[][2] = {{"input_layernorm.", "ln_attn."}, {"post_attention_layernorm.",
                                                                             "ln_mlp."}};
    int named = lx_hf_names_of(&falcon, name, out, n, part);
    char *at;
    for (int k = 0; named && c->two_norms && k < 2; k++)
        if ((at = strstr(out, two[k][0])) != NULL) {
            char rest[64];
            snprintf(rest, sizeof rest, "%s", at + strlen(two[k][0]));
            snprintf(at, n - (size_t)(at - out), "%s%s", two[k][1], rest);
        }
    return named;
}
