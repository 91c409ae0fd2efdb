/*
** harness/engine/formats/hf_phi.h - Phi's Hugging Face directories (model_type phi: Microsoft's
** Phi-1, Phi-1.5 and Phi-2, as transformers' PhiForCausalLM reads them), for hf_config.c and
** hf_model.c (docs/checkpoints.md#phi-2).
*/
#ifndef LX_HF_PHI_H
#define LX_HF_PHI_H

#include <stddef.h>

#include "harness/core/json.h"
#include "harness/engine/formats/hf_cfg.h"

/* What a Phi config.json says, with PhiConfig's defaults. */
struct lx_hf_phi {
    struct lx_hf_shape s;   /* rot_dims: head size x partial_rotary_factor; eps: layer_norm_eps; untied unless
                            ** tie_word_embeddings; mlp: LX_MLP_GELU (hidden_act gelu_new, its default) or
                            ** LX_MLP_GELU_ERF (gelu) */
};

/* Read a Phi config (the document's root). Refuses, naming the field, what lenx's engine does not
** run: qk_layernorm (LayerNorms of q and k), an activation other than GELU's, a partial_rotary_factor
** that turns no whole pair, heads that do not divide the width, key/value heads that do not divide
** the heads. */
int lx_hf_phi_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_phi *c, struct lx_error *err);

/* Phi's name of lenx tensor `name` into out (model.layers.N....), 0 when it has none. */
int lx_hf_phi_tensor_name(const char *name, char *out, size_t n);

#endif
