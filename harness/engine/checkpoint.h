/*
** harness/engine/checkpoint.h - models as safetensors files
** (docs/checkpoints.md has the tensor names, shapes and metadata keys).
**
** The file holds every weight as F32 under its lx_arch_tensors() name and, in
** `__metadata__`, the resolved architecture (lenx_arch, JSON), the training
** configuration (lenx_train, JSON), the training-time method stack
** (lenx_stack, a YAML flow list such as [{rope: {base: 10000, layout: half}}]),
** the training length and the model key, so a checkpoint says how to run it,
** and the sha256 of its tensor data (lenx_weights_sha256), so a damaged file
** is refused on load.
*/
#ifndef LX_CHECKPOINT_H
#define LX_CHECKPOINT_H

#include "harness/engine/model.h"

struct lx_ckpt_info {
    char *model_key;        /* "" for checkpoints lenx did not train */
    char *stack;            /* training-time stack, YAML flow list ("[]" when none) */
    char *train_json;       /* training config, JSON ("{}" when unknown) */
    long train_len;         /* training length */
    char sha256[65];        /* of the file */
    char weights_sha256[65];/* of the data buffer (the tensors); embedded as lenx_weights_sha256 */
    int embedded_hash;      /* on load: the file carried lenx_weights_sha256 (older ones do not) */
    int threads;            /* OpenMP threads of the training run, lenx_threads (0 = unknown) */
};

/* Write m and its info (sha256 and weights_sha256 are filled in; threads is
** written as given). */
int lx_model_save(const struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err);

/* Read a checkpoint: the architecture from its metadata, then every tensor,
** checked by name and shape, and the data buffer checked against the embedded
** lenx_weights_sha256 (LX_EIO naming the file when it differs; a file without
** one loads, its hash computed). info (may be NULL) receives the rest; release
** it with lx_ckpt_info_release. */
int lx_model_load(struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err);
void lx_ckpt_info_release(struct lx_ckpt_info *info);

#endif
