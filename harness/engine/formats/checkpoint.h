/*
** harness/engine/formats/checkpoint.h - lenx's own checkpoints: models as safetensors files
** (docs/checkpoints.md has the tensor names, shapes and metadata keys).
**
** The file holds every weight as F32 under its lx_arch_tensors() name and, in
** `__metadata__`, the resolved architecture (lenx_arch, JSON), the training
** configuration (lenx_train, JSON), the training-time method stack
** (lenx_stack, a YAML flow list such as [{rope: {base: 10000, layout: half}}]),
** the training length and the model key, so a checkpoint says how to run it,
** and the sha256 of its tensor data (lenx_weights_sha256), so a damaged file
** is refused on load. The format registers as `lenx` (formats.def), the one
** that takes any file no other format sniffs; lx_model_load (formats.h) reads
** every format.
*/
#ifndef LX_CHECKPOINT_H
#define LX_CHECKPOINT_H

#include "harness/engine/formats/formats.h"
#include "harness/engine/model/train.h"

/* Write m and its info (sha256 and weights_sha256 are filled in; threads is
** written as given). A model trained on a tokenizer (info->tokenizer and
** tokenizer_sha256 set) records its hash and the name of the copy made beside
** the file: <path without .safetensors>.tokenizer/, holding tokenizer.json
** (with its tokenizer_config.json) or tokenizer.bin. */
int lx_model_save(const struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err);

/* ---- a training run's resumable state (docs/config.md#resuming) ---- */

/* Write s as a safetensors file (weights, adam_m, adam_v; the step, the loss
** sums as exact hexadecimal floats, model_key and numerics in the metadata),
** atomically: a kill leaves the previous state or this one, never half. */
int lx_train_snap_save(const char *path, const struct lx_train_snap *s, const char *model_key, const char *numerics,
                       struct lx_error *err);
/* Read the state of model_key (n parameters, trained in numerics) from path
** into s (w, m, v allocated; lx_train_snap_free). An error names the file and
** what does not match (another model, size, numerics, a damaged file). */
int lx_train_snap_load(const char *path, const char *model_key, size_t n, const char *numerics,
                       struct lx_train_snap *s, struct lx_error *err);
void lx_train_snap_free(struct lx_train_snap *s);

#endif
