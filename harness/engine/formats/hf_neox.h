/*
** harness/engine/formats/hf_neox.h - GPT-NeoX's Hugging Face directories (model_type gpt_neox:
** EleutherAI's Pythia suite and GPT-NeoX-20B, as transformers' GPTNeoXForCausalLM reads them), for
** hf_model.c (docs/checkpoints.md#gpt-neox-and-pythia).
*/
#ifndef LX_HF_NEOX_H
#define LX_HF_NEOX_H

#include <stddef.h>

#include "harness/core/json.h"
#include "harness/engine/formats/hf_cfg.h"
#include "harness/engine/model/arch.h"

/* What a GPT-NeoX config.json says, with GPTNeoXConfig's defaults. */
struct lx_hf_neox {
    struct lx_hf_shape s;   /* rot_dims: head size x rotary_pct; eps: layer_norm_eps; theta: rotary_emb_base
                            ** (rope_theta); untied unless tie_word_embeddings; mlp: LX_MLP_GELU_ERF (hidden_act
                            ** gelu) or LX_MLP_GELU (its tanh forms) */
    int parallel;           /* use_parallel_residual (true unless false) */
};

/* Read a GPT-NeoX config (the document's root). Refuses, naming the field, what lenx's engine
** does not run: attention_bias false, an activation other than GELU's, a rotary_pct that turns
** no whole pair, heads that do not divide the width. */
int lx_hf_neox_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_neox *c,
                      struct lx_error *err);

/* GPT-NeoX's name of lenx tensor `name` into out (gpt_neox.layers.N....), 0 when it has none. *part is
** -1, or for q, k and v (weights and biases) 0, 1 or 2: their rows are the fused
** attention.query_key_value's, head by head (lx_hf_gather_heads). */
int lx_hf_neox_tensor_name(const char *name, char *out, size_t n, int *part);

#endif
