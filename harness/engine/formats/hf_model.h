/*
** harness/engine/formats/hf_model.h - Hugging Face model directories (config.json plus
** safetensors weights, one file or a sharded index) read into struct lx_model,
** and lenx models written as one (docs/checkpoints.md#hugging-face-directories).
*/
#ifndef LX_HF_H
#define LX_HF_H

#include "harness/engine/formats/format.h"

/* Read directory dir: model_type llama, mistral, qwen2 (q/k/v biases), qwen3
** (per-head q/k norms), phi3 (fused q|k|v and gate|up, used by rows), gemma,
** gemma2, gemma3_text or gemma3 (its text model; docs/checkpoints.md#gemma-and-gemma-3), mpt
** (LayerNorms, exact GELU, ALiBi; docs/checkpoints.md#mpt), gpt_neox (Pythia: biases, the
** parallel residual, q|k|v gathered head by head; docs/checkpoints.md#gpt-neox-and-pythia), bloom
** (GPT-NeoX's parts on ALiBi, the embedding LayerNorm; docs/checkpoints.md#bloom),
** F32/F16/BF16 tensors used in place. info gets format "hf", the dtype on
** disk, the native and evaluation stacks (hf_rope.h), train_len =
** max_position_embeddings, and the directory's tokenizer.json (else
** tokenizer.bin) when it has one. Errors name the file and the field or
** tensor. */
int lx_hf_load(struct lx_model *m, const char *dir, struct lx_ckpt_info *info, struct lx_error *err);

/* The Hugging Face name of lenx tensor `name` (lx_arch_tensors) into out:
** transformers' Llama names (gemma: Gemma 3's, whose
** post_attention_layernorm is the attention output's post-norm and
** pre_feedforward_layernorm the MLP's norm); 0 when HF has none (learned
** logit scales). */
int lx_hf_tensor_name(const char *name, char *out, size_t n, int gemma);

/* Write m as dir/config.json (LlamaForCausalLM; Qwen2ForCausalLM with q/k/v
** biases, Qwen3ForCausalLM with qk_norm) and dir/model.safetensors (F32, HF
** names; q and k rows permuted to half-split when the model was trained with
** interleaved pairs). Refuses models transformers cannot express: mlm mode,
** GELU MLP, learned logit scales, a stack other than rope with a trained-in
** pi, yarn, llama3 or longrope. The model's tokenizer tok (the one it was
** trained on or found beside it; NULL: the byte tokenizer) is copied into dir
** (lx_tokenizer_copy: tokenizer.json with its tokenizer_config.json, or a
** llama2.c tokenizer.bin as it is) and its BOS/EOS ids go into config.json;
** a byte-level model gets 256/257 and no file. */
int lx_hf_export(const struct lx_model *m, const struct lx_ckpt_info *info, const struct lx_tokenizer *tok,
                 const char *dir, struct lx_error *err);

/* The dynamic NTK factor lx_hf_export writes as rope_scaling dynamic, or 0: an evaluation stack of
** dynamic NTK alone (a Hugging Face model's rope_scaling dynamic) where no rescaling is trained in.
** Any other evaluation stack (DCA, a window) is not written (docs/checkpoints.md). */
double lx_hf_export_dynamic(const struct lx_ckpt_info *info);

#endif
