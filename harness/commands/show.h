/*
** harness/commands/show.h - `lenx show model PATH`: what a model file or
** directory of any format lenx reads holds (docs/checkpoints.md#other-formats).
*/
#ifndef LX_SHOW_H
#define LX_SHOW_H

#include "harness/core/lx.h"

/* JSON: format, architecture, parameters on disk and in the engine, dtype on
** disk, native position stack (with rope_scaling as written), training length,
** tokenizer, hashes, load time. model is a path or a store name (db); its own
** stack is checked as score checks it (lx_stack_check_native). */
int lx_show_model(const char *model, const char *db, long window, struct lx_buf *out, struct lx_error *err);

#endif
