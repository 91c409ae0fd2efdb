/*
** harness/engine/formats/hf_gptj.h - GPT-J's Hugging Face directories (model_type gptj: EleutherAI's
** GPT-J-6B, as transformers' GPTJForCausalLM reads them), for hf_config.c and hf_model.c
** (docs/checkpoints.md#gpt-j).
*/
#ifndef LX_HF_GPTJ_H
#define LX_HF_GPTJ_H

#include <stddef.h>

#include "harness/core/json.h"
#include "harness/engine/formats/hf_cfg.h"

/* What a GPT-J config.json says, with GPTJConfig's defaults. */
struct lx_hf_gptj {
    struct lx_hf_shape s;   /* rot_dims: rotary_dim, turned in neighbouring pairs; theta 10000; eps:
                            ** layer_norm_epsilon; untied unless tie_word_embeddings; mlp: LX_MLP_GELU
                            ** (activation_function gelu_new, its default) or LX_MLP_GELU_ERF (gelu) */
};

/* Read a GPT-J config (the document's root), the generic names too (hidden_size, num_attention_heads,
** num_hidden_layers, max_position_embeddings: GPTJConfig's attribute_map). Refuses, naming the field,
** what lenx's engine does not run: an activation other than GELU's, a rotary_dim that is no even count
** up to the head, heads that do not divide the width. */
int lx_hf_gptj_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_gptj *c,
                      struct lx_error *err);

/* GPT-J's name of lenx tensor `name` into out (transformer.h.N....), 0 when it has none. */
int lx_hf_gptj_tensor_name(const char *name, char *out, size_t n);

#endif
