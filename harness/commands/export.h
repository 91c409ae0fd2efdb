/*
** harness/commands/export.h - `lenx export --hf`: a model of any format lenx
** reads written as a Hugging Face directory (docs/checkpoints.md#other-formats).
*/
#ifndef LX_EXPORT_H
#define LX_EXPORT_H

#include "harness/core/lx.h"

/* Load model (a path in any format, or a store name in db) with its
** tokenizer (tokenizer: --tokenizer, else the one found beside it; checked as
** score checks it) and write both to dir as a Hugging Face directory. */
int lx_export_model(const char *model, const char *db, const char *tokenizer, const char *dir,
                    struct lx_error *err);

#endif
