/*
** harness/backends/local.h - how a command reaches a model on the local
** engine: find it (a path, or a name in the store), load it with its
** tokenizer, parse its stack with evaluation-time methods added. `lenx
** score`, `generate`, `show model` and `export` go through here; the room's
** README says where a server backend goes beside it.
*/
#ifndef LX_LOCAL_H
#define LX_LOCAL_H

#include "harness/core/lx.h"

/* A model path as given (any format lx_model_load reads), else a name or key
** prefix in the store's models table: the checkpoint <db dir>/models/<key>.safetensors
** (where `lenx run --db` keeps it, whatever directory it ran in), else the path
** recorded. *path is malloc'd. */
int lx_local_find(const char *model, const char *db, char **path, struct lx_error *err);

/* What every command that reads text with a model does after finding it
** (lx_local_find): the model loaded into m and info, its own stacks checked
** (lx_stack_check_native), and, when tk is not NULL, its tokenizer opened into *tk
** (given: --tokenizer, else the one found beside the model; NULL = bytes) and
** checked against the vocabulary (lx_ckpt_check_tokenizer). On an error
** nothing is left to release. */
struct lx_ckpt_info;
struct lx_model;
struct lx_tokenizer;
int lx_local_load(const char *path, const char *given, struct lx_model *m, struct lx_ckpt_info *info,
                  struct lx_tokenizer **tk, struct lx_error *err);

/* A model whose weights hold a NaN or an infinity is refused (LX_ERUN, exit 1) as a sweep's cell refuses it:
** "model PATH: tensor 'NAME' holds a non-finite value (nan) at index I" (lx_model_check_finite). */
int lx_local_check_finite(const struct lx_model *m, const struct lx_ckpt_info *info, const char *path,
                          struct lx_error *err);

/* The checkpoint's stack ckpt_stack (YAML flow list) followed by the
** evaluation-time methods of method (YAML, may be NULL), parsed into st
** (d1, d2 hold the parsed YAML, released by the caller); a training-time
** method in `method` is refused, naming it. Shared with `lenx generate`. */
struct lx_stack;
struct lx_doc;
int lx_local_stack(struct lx_stack *st, const char *ckpt_stack, const char *method, struct lx_doc *d1,
                   struct lx_doc *d2, struct lx_error *err);

/* The stack compiled for model m (info: its checkpoint) at `length` tokens:
** the model's facts, a fine-tuned model's length, then checked against the
** model (lx_model_spec_check) and for a position scheme. Shared by score,
** generate and serve. */
struct lx_spec;
int lx_local_compile(const struct lx_stack *st, const struct lx_model *m, const struct lx_ckpt_info *info,
                     long length, struct lx_spec *spec, struct lx_error *err);

#endif
