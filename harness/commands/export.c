/*
** harness/commands/export.c - `lenx export --hf DIR --model M` and `lenx
** export --gguf FILE --model M`: a model of any format lenx reads, with its
** tokenizer, written as a Hugging Face Llama directory
** (docs/checkpoints.md#other-formats) or a llama.cpp GGUF file
** (docs/checkpoints.md#gguf).
*/
#include "harness/commands/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/backends/local.h"
#include "harness/cli.h"
#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/formats/gguf_model.h"
#include "harness/engine/formats/hf_model.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "results/store.h"

/* Load model with its tokenizer, then write it: to a directory (hf), or to a GGUF file of dtype. */
static int export_any(const char *model, const char *db, const char *tokenizer, const char *dest, int gguf, int dtype,
                      int n_by_type[8], struct lx_error *err)
{
    char *path = NULL;
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_tokenizer *tok = NULL;
    int rc = lx_local_find(model, db, &path, err);
    if (rc == LX_OK && (rc = lx_local_load(path, tokenizer, &m, &info, &tok, err)) == LX_OK) {
        struct lx_error sub;    /* a non-finite weight is refused as score and run refuse it, before writing */
        if ((rc = lx_local_check_finite(&m, &info, path, err)) == LX_OK &&
            (rc = gguf ? lx_gguf_export(&m, &info, tok, dest, dtype, n_by_type, &sub)
                       : lx_hf_export(&m, &info, tok, dest, &sub)) < 0)
            lx_err(err, rc, "export %s: %s", path, sub.msg);
        else if (rc == LX_OK && info.eval_stack && (gguf || lx_hf_export_dynamic(&info) == 0))  /* DCA, a window */
            fprintf(stderr, "lenx: note: the model's evaluation stack %s is not written to %s, which loads "
                    "without it\n  hint: run it on the export with --method '%s' "
                    "(docs/checkpoints.md#evaluation-stacks-in-an-export)\n", info.eval_stack, dest, info.eval_stack);
        lx_tokenizer_free(tok);
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
    }
    free(path);
    return rc;
}

int lx_export_model(const char *model, const char *db, const char *tokenizer, const char *dir,
                    struct lx_error *err)
{
    return export_any(model, db, tokenizer, dir, 0, 0, NULL, err);
}

int lx_export_gguf(const char *model, const char *db, const char *tokenizer, const char *path, const char *type,
                   FILE *out, struct lx_error *err)
{
    static const char *const names[] = {"f32", "bf16", "f16", "q8_0"};  /* enum lx_dtype 0 .. 3 */
    int dtype = -1, n_by_type[8] = {0};
    for (int k = 0; k < 4; k++)
        if (strcmp(type, names[k]) == 0)
            dtype = k;
    if (dtype < 0)
        return lx_err(err, LX_EINVAL, "--type %s: lenx writes GGUF weights as f32, f16, bf16 or q8_0\n  hint: "
                      "quantize further with llama.cpp's llama-quantize", type);
    int rc = export_any(model, db, tokenizer, path, 1, dtype, n_by_type, err);
    if (rc == LX_OK) {
        fprintf(out, "%s:", path);
        for (int k = 0; k < 4; k++)
            if (n_by_type[k])
                fprintf(out, " %d tensors %s", n_by_type[k], names[k]);
        fprintf(out, "%s\n", n_by_type[LX_DT_F16] && dtype == LX_DT_Q8_0 ? " (f16: rows not whole 32-value blocks)" : "");
    }
    return rc;
}

static const struct lx_opt export_opts[] = {
    {"hf", 1, "directory to write (config.json, model.safetensors)"},
    {"gguf", 1, "GGUF file to write (llama.cpp, ollama, LM Studio)"},
    {"type", 1, "GGUF weight type: f32 (default), f16, bf16 or q8_0"},
    {"model", 1, "model: a path in any format lenx reads, or a model name / key prefix in the store"},
    {"tokenizer", 1, "the model's tokenizer, copied into DIR (default: the one beside the model, else bytes)"},
    {"db", 1, "store to look model names up in (default " LX_DEFAULT_DB ")"},
};

int lx_cmd_export(int argc, char **argv)
{
    static const char use[] = "usage: lenx export (--hf DIR | --gguf FILE [--type T]) --model M [--tokenizer FILE] "
                              "[--db FILE]\n\nWrite a causal SwiGLU rope model and its tokenizer as a Hugging Face "
                              "Llama directory or a llama.cpp GGUF file, or a model with Gemma's block as a "
                              "Hugging Face Gemma directory (docs/checkpoints.md).";
    struct lx_args a;
    struct lx_error err;
    int rc = lx_cli_args(&a, export_opts, LX_N_OPTS(export_opts), use, argc, argv);
    if (rc >= 0)
        return rc;
    const char *dir = lx_args_value(&a, "hf"), *db = lx_args_value(&a, "db"), *model = lx_args_value(&a, "model");
    const char *gguf = lx_args_value(&a, "gguf"), *type = lx_args_value(&a, "type");
    if (!dir == !gguf || !model || a.n_pos || (type && !gguf))
        return lx_cli_misuse(&a, "export", !dir == !gguf ? "give one of --hf DIR and --gguf FILE"
                             : !model ? "--model is required" : "--type goes with --gguf");
    db = db ? db : LX_DEFAULT_DB;
    if (gguf)
        rc = lx_export_gguf(model, db, lx_args_value(&a, "tokenizer"), gguf, type ? type : "f32", stdout, &err);
    else if ((rc = lx_export_model(model, db, lx_args_value(&a, "tokenizer"), dir, &err)) == LX_OK)
        printf("%s\n", dir);
    return rc < 0 ? lx_cli_fail(&err, rc) : 0;
}
