/*
** harness/modelcmd.c - the model commands: `lenx show model` (parsed in
** show.c), `lenx export --hf` (see modelcmd.h).
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/modelcmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness/cli.h"
#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/formats/hf_model.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/score.h"
#include "results/store.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void key_str(struct lx_buf *out, const char *key, const char *v)
{
    lx_buf_printf(out, ",\n  \"%s\": ", key);
    if (v)
        lx_buf_json_str(out, v);
    else
        lx_buf_puts(out, "null");
}

int lx_modelcmd_show(const char *model, const char *db, struct lx_buf *out, struct lx_error *err)
{
    char *path = NULL;
    struct lx_model m;
    struct lx_ckpt_info info;
    int rc = lx_find_model(model, db, &path, err);
    double t0 = now();
    if (rc == LX_OK && (rc = lx_score_load(path, NULL, &m, &info, NULL, err)) == LX_OK) {
        double secs = now() - t0;
        lx_buf_puts(out, "{\n  \"path\": ");
        lx_buf_json_str(out, path);
        key_str(out, "format", info.format);
        key_str(out, "dtype", info.dtype);
        lx_buf_puts(out, ",\n  \"arch\": ");
        lx_params_json(&lx_arch_schema, &m.arch, out);
        lx_buf_printf(out, ",\n  \"kv_heads\": %ld,\n  \"tied_head\": %s,\n  \"parameters\": %zu,\n"
                      "  \"train_len\": %ld,\n  \"native_stack\": %s",
                      info.kv_heads ? info.kv_heads : m.arch.heads, info.tied ? "true" : "false",
                      m.n_params, info.train_len, info.stack);
        lx_buf_printf(out, ",\n  \"eval_stack\": %s,\n  \"rope_scaling\": %s", info.eval_stack ? info.eval_stack : "[]",
                      info.scaling ? info.scaling : "null");
        key_str(out, "tokenizer", info.tokenizer ? info.tokenizer : m.arch.vocab == 260 ? "bytes" : NULL);
        key_str(out, "tokenizer_sha256", info.tokenizer_sha256[0] ? info.tokenizer_sha256 : NULL);
        key_str(out, "model_key", info.model_key[0] ? info.model_key : NULL);
        key_str(out, "numerics", info.numerics[0] ? info.numerics : NULL);     /* of its training; null: not lenx's */
        /* a fine-tuned model's base key, fine-tuning length, steps and tokens seen */
        lx_buf_printf(out, ",\n  \"lineage\": %s", info.lineage ? info.lineage : "null");
        key_str(out, "weights_sha256", info.weights_sha256);
        key_str(out, "sha256", info.sha256);
        lx_buf_puts(out, ",\n  \"load_seconds\": ");
        lx_buf_num(out, secs);
        lx_buf_puts(out, "\n}\n");
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
    }
    free(path);
    return rc;
}

int lx_modelcmd_export(const char *model, const char *db, const char *tokenizer, const char *dir,
                       struct lx_error *err)
{
    char *path = NULL;
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_tokenizer *tok = NULL;
    int rc = lx_find_model(model, db, &path, err);
    if (rc == LX_OK && (rc = lx_score_load(path, tokenizer, &m, &info, &tok, err)) == LX_OK) {
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

/* ---------------------------------------------------------------- export */

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
    rc = lx_modelcmd_export(model, db ? db : LX_DEFAULT_DB, lx_args_value(&a, "tokenizer"), dir, &err);
    return rc < 0 ? lx_cli_fail(&err, rc) : (printf("%s\n", dir), 0);
}
