/*
** harness/engine/formats/llama2c.h - llama2.c legacy `.bin` checkpoints (Karpathy's
** llama2.c, run.c) loaded into struct lx_model; the format and its mapping are
** in llama2c.c and docs/checkpoints.md#llama2c-bin.
*/
#ifndef LX_LLAMA2C_H
#define LX_LLAMA2C_H

#include "harness/engine/formats/format.h"

/* Read path into m (allocated here) and info (format "llama2c", the native
** stack [rope interleaved base 10000], train_len = seq_len). Errors name the
** file and the header field: sizes lenx cannot hold, a file shorter or longer
** than its header says. */
int lx_llama2c_load(struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err);

#endif
