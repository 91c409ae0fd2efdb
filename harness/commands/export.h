/*
** harness/commands/export.h - `lenx export --hf` and `--gguf`: a model of any
** format lenx reads written as a Hugging Face directory or a llama.cpp GGUF
** file (docs/checkpoints.md#other-formats, #gguf).
*/
#ifndef LX_EXPORT_H
#define LX_EXPORT_H

#include <stdio.h>

#include "harness/core/lx.h"

/* Load model (a path in any format, or a store name in db) with its
** tokenizer (tokenizer: --tokenizer, else the one found beside it; checked as
** score checks it) and write both to dir as a Hugging Face directory. */
int lx_export_model(const char *model, const char *db, const char *tokenizer, const char *dir,
                    struct lx_error *err);

/* The same model written as the GGUF file path with weight matrices of type
** (a name: "f32", "f16", "bf16", "q8_0"); what was written per type goes to
** out (one line). */
int lx_export_gguf(const char *model, const char *db, const char *tokenizer, const char *path, const char *type,
                   FILE *out, struct lx_error *err);

#endif
