/*
** harness/modelcmd.h - the model commands beside `lenx score` (score.c):
** `lenx show model PATH` and `lenx export --hf DIR --model M`: what a model
** file or directory of any format lenx reads holds, and a lenx model written
** as a Hugging Face directory (docs/checkpoints.md#other-formats).
*/
#ifndef LX_MODELCMD_H
#define LX_MODELCMD_H

#include "harness/core/lx.h"

/* JSON: format, architecture, parameters on disk and in the engine, dtype on
** disk, native position stack (with rope_scaling as written), training length,
** tokenizer, hashes, load time. model is a path or a store name (db); its own
** stack is checked as score checks it (lx_stack_check_native). */
int lx_modelcmd_show(const char *model, const char *db, struct lx_buf *out, struct lx_error *err);

/* Load model (any format) with its tokenizer (tokenizer: --tokenizer, else
** the one found beside it; checked as score checks it) and write both to dir
** as a Hugging Face directory. */
int lx_modelcmd_export(const char *model, const char *db, const char *tokenizer, const char *dir,
                       struct lx_error *err);


#endif
