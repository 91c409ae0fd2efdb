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
    char format[16];        /* "lenx", "llama2c" (llama2c.h) or "hf" (hf.h) */
    char dtype[16];         /* of the weights on disk: "F32", "F16", "BF16" or "mixed" */
    char *model_key;        /* "" for checkpoints lenx did not train */
    char *stack;            /* training-time stack, YAML flow list ("[]" when none); for a model
                            ** made elsewhere its native position scheme (docs/checkpoints.md#native-stacks) */
    char *eval_stack;       /* evaluation-time part of a native scheme (HF rope_scaling dynamic), or NULL */
    char *scaling;          /* HF: rope_scaling as the config writes it (JSON), or NULL */
    char *tokenizer;        /* a tokenizer file found beside the model, or NULL; on save, the file of the
                            ** tokenizer the model was trained on (copied beside it), NULL for bytes */
    char tokenizer_sha256[65];  /* the hash of the tokenizer a lenx model was trained on
                                ** (lenx_tokenizer_sha256); "" for bytes and other formats */
    long kv_heads;          /* key/value heads on disk (= heads unless grouped-query) */
    int tied;               /* the file ties the output head to the embedding */
    char *train_json;       /* training config, JSON ("{}" when unknown) */
    long train_len;         /* training length */
    char sha256[65];        /* of the file */
    char weights_sha256[65];/* of the weights as F32 in lenx's tensor order: for a lenx file its data
                            ** buffer, embedded as lenx_weights_sha256 */
    int embedded_hash;      /* on load: the file carried lenx_weights_sha256 (older ones do not) */
    int threads;            /* OpenMP threads of the training run, lenx_threads (0 = unknown) */
};

/* Write m and its info (sha256 and weights_sha256 are filled in; threads is
** written as given). A model trained on a tokenizer (info->tokenizer and
** tokenizer_sha256 set) records its hash and the name of the copy made beside
** the file: <path without .safetensors>.tokenizer/, holding tokenizer.json
** (with its tokenizer_config.json) or tokenizer.bin. */
int lx_model_save(const struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err);

/* Read a model in any format lenx reads: a directory is a Hugging Face
** directory (hf.h), a file not named .safetensors and starting like a
** llama2.c header rather than a safetensors one (no '{' at byte 8) a llama2.c
** `.bin` (llama2c.h), else a lenx checkpoint:
** the architecture from its metadata, then every tensor,
** checked by name and shape, and the data buffer checked against the embedded
** lenx_weights_sha256 (LX_EIO naming the file when it differs; a file without
** one loads, its hash computed). info (may be NULL) receives the rest; release
** it with lx_ckpt_info_release. */
int lx_model_load(struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err);
void lx_ckpt_info_release(struct lx_ckpt_info *info);

/* The tokenizer a loaded model reads text with: the file `path` (a
** --tokenizer or `tokenizer:` given, else the one found beside the model;
** NULL: *out = NULL, the byte tokenizer). A model that records the tokenizer
** it was trained on (info->tokenizer_sha256) refuses one with another hash,
** and refuses bytes when its copy is not beside it. Errors name the file. */
struct lx_tokenizer;
int lx_ckpt_tokenizer(const struct lx_ckpt_info *info, const char *path, struct lx_tokenizer **out,
                      struct lx_error *err);

/* The one check of a model against the tokenizer it reads text with (tk;
** NULL = the byte tokenizer), shared by score, generate, export and the
** plan's checkpoint entries: without a tokenizer the vocabulary must be the
** byte tokenizer's (else ids 260 and up would be read as bytes, or printed as
** nothing), the tokenizer's ids must fit the vocabulary (it may be padded past
** them), and a window needs a first token (BOS, else EOS). who names the model
** in the message ("model 'v'", a path); how is the hint's way of naming a
** tokenizer ("--tokenizer PATH"). *at_tokenizer (may be NULL) is set when the
** tokenizer, not the model, is at fault. */
int lx_ckpt_check_tokenizer(long vocab, const struct lx_tokenizer *tk, const char *who, const char *how,
                            int *at_tokenizer, struct lx_error *err);

/* For loaders of other formats: info's format and dtype set, the strings lenx
** checkpoints carry made empty ("" key, "{}" training, no stack yet). */
void lx_ckpt_info_native(struct lx_ckpt_info *info, const char *format, const char *dtype);
/* SHA-256 of m's weights as F32 in tensor order (= a lenx file's data buffer). */
void lx_model_weights_hash(const struct lx_model *m, char out[65]);
void lx_sha256_hex_bytes(const void *data, size_t n, char out[65]);

#endif
