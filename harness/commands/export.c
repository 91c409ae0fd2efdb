/*
** harness/commands/export.c - `lenx export --hf DIR --model M`: a model of
** any format lenx reads, with its tokenizer, written as a Hugging Face Llama
** directory (docs/checkpoints.md#other-formats).
*/
#include "harness/commands/export.h"

#include <stdio.h>
#include <stdlib.h>

#include "harness/backends/local.h"
#include "harness/cli.h"
#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/formats/hf_model.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "results/store.h"

int lx_export_model(const char *model, const char *db, const char *tokenizer, const char *dir,
                    struct lx_error *err)
{
    char *path = NULL;
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_tokenizer *tok = NULL;
    int rc = lx_local_find(model, db, &path, err);
    if (rc == LX_OK && (rc = lx_local_load(path, tokenizer, &m, &info, &tok, err)) == LX_OK) {
        struct lx_error sub;
        if ((rc = lx_hf_export(&m, &info, tok, dir, &sub)) < 0)
            lx_err(err, rc, "export %s: %s", path, sub.msg);
        lx_tokenizer_free(tok);
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
    }
    free(path);
    return rc;
}

static const struct lx_opt export_opts[] = {
    {"hf", 1, "directory to write (config.json, model.safetensors)"},
    {"model", 1, "model: a path in any format lenx reads, or a model name / key prefix in the store"},
    {"tokenizer", 1, "the model's tokenizer, copied into DIR (default: the one beside the model, else bytes)"},
    {"db", 1, "store to look model names up in (default " LX_DEFAULT_DB ")"},
};

int lx_cmd_export(int argc, char **argv)
{
    static const char use[] = "usage: lenx export --hf DIR --model M [--tokenizer FILE] [--db FILE]\n\nWrite a causal "
                              "SwiGLU rope model and its tokenizer as a Hugging Face Llama directory "
                              "(docs/checkpoints.md).";
    struct lx_args a;
    struct lx_error err;
    int rc = lx_cli_args(&a, export_opts, LX_N_OPTS(export_opts), use, argc, argv);
    if (rc >= 0)
        return rc;
    const char *dir = lx_args_value(&a, "hf"), *db = lx_args_value(&a, "db"), *model = lx_args_value(&a, "model");
    if (!dir || !model || a.n_pos)
        return lx_cli_usage(use, export_opts, LX_N_OPTS(export_opts)), 2;
    rc = lx_export_model(model, db ? db : LX_DEFAULT_DB, lx_args_value(&a, "tokenizer"), dir, &err);
    return rc < 0 ? lx_cli_fail(&err, rc) : (printf("%s\n", dir), 0);
}
