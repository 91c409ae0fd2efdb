/*
** harness/engine/formats/hf_falcon.h - Falcon's Hugging Face directories (model_type falcon:
** tiiuae's Falcon-7B, -40B and -180B, as transformers' FalconForCausalLM reads them), for
** hf_model.c (docs/checkpoints.md#falcon).
*/
#ifndef LX_HF_FALCON_H
#define LX_HF_FALCON_H

#include <stddef.h>

#include "harness/core/json.h"
#include "harness/engine/formats/hf_cfg.h"
#include "harness/engine/model/arch.h"

/* What a Falcon config.json says, with FalconConfig's defaults, as FalconForCausalLM runs it. */
struct lx_hf_falcon {
    struct lx_hf_shape s;   /* eps: layer_norm_epsilon; tied unless tie_word_embeddings false; mlp:
                            ** LX_MLP_GELU_ERF (activation gelu) or LX_MLP_GELU (its tanh forms) */
    int bias;               /* bias: biases on every product (the LayerNorms shift either way) */
    int parallel;           /* the attention and the MLP both read the block's input (parallel_attn, or
                            ** new_decoder_architecture) */
    int shared_norm;        /* parallel with one LayerNorm (input_layernorm) feeding both */
    int two_norms;          /* new_decoder_architecture with num_ln_in_parallel_attn 2: ln_attn and ln_mlp */
    int alibi;              /* Falcon-RW's ALiBi in place of rope: BLOOM's slopes, added before the
                            ** 1/sqrt(head_dim) scaling (so ALiBi's slopes over sqrt(head_dim)) */
};

/* Read a Falcon config (the document's root), the old field names (n_head, n_layer, n_head_kv,
** n_embed) too. Refuses, naming the field, what lenx's engine does not run:
** apply_residual_connection_post_layernorm, an activation other than GELU's, heads that do not divide
** the width or key/value heads that do not divide the heads. */
int lx_hf_falcon_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_falcon *c,
                        struct lx_error *err);

/* Falcon's name of lenx tensor `name` into out (transformer.h.N....), 0 when it has none. For q, k and
** v (weights and biases) *part is 0, 1 or 2 (else -1): rows of query_key_value, whose rows are
** (kv_heads, heads / kv_heads + 2, head_dim) (lx_hf_gather_heads). */
int lx_hf_falcon_tensor_name(const struct lx_hf_falcon *c, const char *name, char *out, size_t n, int *part);

#endif
