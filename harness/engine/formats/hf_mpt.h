/*
** harness/engine/formats/hf_mpt.h - MPT's Hugging Face directories (model_type mpt: MosaicML's
** MPT-7B and MPT-30B and their fine-tunes, as transformers' MptForCausalLM and llm-foundry's
** MPTForCausalLM read them), for hf_model.c (docs/checkpoints.md#mpt).
*/
#ifndef LX_HF_MPT_H
#define LX_HF_MPT_H

#include <stddef.h>

#include "harness/core/json.h"
#include "harness/engine/formats/hf_cfg.h"
#include "harness/engine/model/arch.h"

/* What an MPT config.json says, with MptConfig's defaults. */
struct lx_hf_mpt {
    struct lx_hf_shape s;   /* max_seq_len, layer_norm_epsilon; tied unless tie_word_embeddings false; no rope */
    double alibi_max;       /* attn_config.alibi_bias_max: the ALiBi slopes' max_bias */
};

/* Read an MPT config (the document's root): sizes, ALiBi's alibi_bias_max,
** tying. Refuses, naming the field, what transformers' MPT does not run or
** lenx's engine does not: biases (no_bias false), positions other than ALiBi,
** clip_qkv, qk_ln, a softmax_scale, an output logit_scale, a prefix LM, key
** and value heads other than the query heads, a norm other than LayerNorm,
** an MLP other than exact GELU's. */
int lx_hf_mpt_config(const struct lx_json *doc, const struct lx_jv *root, struct lx_hf_mpt *c, struct lx_error *err);

/* MPT's name of lenx tensor `name` into out (transformer.blocks.N....), 0
** when MPT has none; q, k and v are rows of the fused Wqkv: *row0 is the
** part's first row and *rows the fused tensor's (else 0 and the tensor's). */
int lx_hf_mpt_tensor_name(const struct lx_arch *a, const char *name, char *out, size_t n, long *row0, long *rows);

#endif
