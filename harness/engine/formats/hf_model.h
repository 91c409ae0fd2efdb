/*
** harness/engine/formats/hf_model.h - Hugging Face model directories (config.json plus
** safetensors weights, one file or a sharded index) read into struct lx_model,
** and lenx models written as one (docs/checkpoints.md#hugging-face-directories).
*/
#ifndef LX_HF_H
#define LX_HF_H

#include "harness/engine/formats/format.h"

/* Read directory dir: model_type llama or mistral (qwen2 is refused until the
** engine has q/k/v biases), F32/F16/BF16 tensors. info gets format "hf", the
** dtype on disk, the native stack (rope half-split at rope_theta, plus
** rope_scaling linear -> pi, yarn -> yarn, both trained in) and
** eval_stack (dynamic -> ntk mode dynamic), train_len =
** max_position_embeddings, and the directory's tokenizer.json (else
** tokenizer.bin) when it has one.
** Errors name the file and the field or tensor. */
int lx_hf_load(struct lx_model *m, const char *dir, struct lx_ckpt_info *info, struct lx_error *err);

/* Write m as dir/config.json (LlamaForCausalLM) and dir/model.safetensors
** (F32, HF names; q and k rows permuted to half-split when the model was
** trained with interleaved pairs). Refuses models transformers' Llama cannot
** express: mlm mode, GELU MLP, learned logit scales, a stack other than [rope].
** The model's tokenizer tok (the one it was trained on or found beside it;
** NULL: the byte tokenizer) is copied into dir (lx_tokenizer_copy:
** tokenizer.json with its tokenizer_config.json, or a llama2.c tokenizer.bin
** as it is) and its BOS/EOS ids go into config.json; a byte-level model gets
** 256/257 and no file. */
int lx_hf_export(const struct lx_model *m, const struct lx_ckpt_info *info, const struct lx_tokenizer *tok,
                 const char *dir, struct lx_error *err);

#endif
