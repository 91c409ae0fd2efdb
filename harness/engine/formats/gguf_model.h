/*
** harness/engine/formats/gguf_model.h - lenx models written as llama.cpp GGUF
** files (docs/checkpoints.md#gguf); reading them is the gguf format's load
** (formats.def).
*/
#ifndef LX_GGUF_MODEL_H
#define LX_GGUF_MODEL_H

#include "harness/engine/formats/format.h"

/* Write m as the GGUF file path: architecture llama (qwen2 when it has q/k/v
** biases, qwen3 with qk_norm, phi3 with LongRoPE, gemma, gemma2 or gemma3 for
** Gemma's block: gguf_export.c), its weight matrices as dtype (LX_DT_F32, F16, BF16 or Q8_0; a
** matrix whose rows are not whole Q8_0 blocks is written F16, norms always
** F32), q and k rows in the rotary layout llama.cpp's architecture expects,
** rope base and a trained-in pi or yarn rescaling as rope.scaling metadata,
** and the tokenizer tok (NULL: the byte tokenizer) as tokenizer.ggml.*. The
** counts of tensors written per type go to n_by_type (indexed by enum
** lx_dtype; may be NULL). Refuses what llama.cpp cannot run the same:
** mlm mode, GELU MLP, learned logit scales, any other position scheme, a
** Gemma block llama.cpp reads otherwise. */
int lx_gguf_export(const struct lx_model *m, const struct lx_ckpt_info *info, const struct lx_tokenizer *tok,
                   const char *path, int dtype, int n_by_type[8], struct lx_error *err);

#endif
