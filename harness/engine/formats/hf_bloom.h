/*
** harness/engine/formats/hf_bloom.h - BLOOM's Hugging Face directories (model_type bloom: BigScience's
** BLOOM, 560M to 176B, and BLOOMZ, as transformers' BloomForCausalLM reads them), for hf_model.c
** (docs/checkpoints.md#bloom).
*/
#ifndef LX_HF_BLOOM_H
#define LX_HF_BLOOM_H

#include <stddef.h>

#include "harness/core/json.h"
#include "harness/engine/formats/hf_cfg.h"

/* What a BLOOM config.json says, with BloomConfig's defaults. */
struct lx_hf_bloom {
    struct lx_hf_shape s;   /* d_mlp 4 x the width; max_pos: seq_length; eps: layer_norm_epsilon; tied unless
                            ** tie_word_embeddings false; no rope */
};

/* Read a BLOOM config (the document's root). Refuses, naming the field, what lenx's engine does
** not run: apply_residual_connection_post_layernorm true, heads that do not divide the width. */
int lx_hf_bloom_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_bloom *c,
                       struct lx_error *err);

/* BLOOM's name of lenx tensor `name` into out (PREFIXh.N....), 0 when it has none; *part as
** lx_hf_neox_tensor_name's (q|k|v in query_key_value head by head). prefix "transformer."
** (BloomForCausalLM saved whole) or "" (BloomModel's checkpoints, bloom-560m's among them). */
int lx_hf_bloom_tensor_name(const char *prefix, const char *name, char *out, size_t n, int *part);

#endif
