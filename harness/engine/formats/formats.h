/*
** harness/engine/formats/formats.h - reading a model in any format: the
** registry of formats (formats.def) and the dispatcher over it, which names
** no format. Includes format.h only.
*/
#ifndef LX_FORMATS_H
#define LX_FORMATS_H

#include "harness/engine/formats/format.h"

/* Read a model in any format lenx reads: a directory is a Hugging Face
** directory, a file starting like a llama2.c header is a llama2.c .bin, any
** other file a lenx checkpoint (the first format of formats.def whose sniff
** takes the path; formats added by lx_model_format_add are tried first). m is
** allocated here; info (may be NULL) is zeroed, then filled. */
int lx_model_load(struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err);

/* The format a sweep file names with `key:` under a model ("hf"), or NULL. */
const struct lx_model_format *lx_model_format_for_key(const char *key);

/* The formats in the order lx_model_load tries them: *n of them. */
const struct lx_model_format *const *lx_model_formats(int *n);

/* Register one more format, tried before those of formats.def: how a test
** (or a program linking lenx as a library) adds a format without editing
** any dispatcher. At most LX_MODEL_FORMAT_EXTRA; not thread-safe (call it before
** anything loads). LX_EINVAL for a missing hook or a name already taken. */
enum { LX_MODEL_FORMAT_EXTRA = 4 };
int lx_model_format_add(const struct lx_model_format *f, struct lx_error *err);

#endif
