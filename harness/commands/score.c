/*
** harness/commands/score.c - scoring a text with a checkpoint (see score.h), and the
** command `lenx score`.
*/
#include "harness/commands/score.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/backends/local.h"
#include "harness/cli.h"
#include "harness/engine/data/corpus.h"
#include "harness/engine/formats/checkpoint.h"
#include "harness/core/mapguard.h"
#include "harness/engine/kernels/wprod.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/model/evaluate.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/sweep/grid.h"
#include "harness/sweep/plan.h"
#include "harness/sweep/run.h"
#include "results/store.h"

struct score_run {
    const int32_t *ids;     /* (n,) the text's tokens */
    long n, L;
    int begin;              /* the id each window starts with */
    float *nll;             /* (n,) */
};

static void score_fill(void *ctx, long w, int *tok, int *tgt)
{
    struct score_run *r = ctx;
    const int32_t *s = r->ids + w * r->L;
    tok[0] = r->begin;
    for (long t = 1; t < r->L; t++)
        tok[t] = s[t - 1];
    for (long t = 0; t < r->L; t++)
        tgt[t] = s[t];
}

static void score_score(void *ctx, long w, const float *loss, const float *logits, const int *tgt)
{
    (void)logits, (void)tgt;
    struct score_run *r = ctx;
    memcpy(r->nll + w * r->L, loss, sizeof(float) * (size_t)r->L);
}

/* The file's text in tk's tokens (bytes when tk is NULL) into *ids; the count,
** or a negative code. */
static long read_tokens(const char *file, const struct lx_tokenizer *tk, int32_t **ids, struct lx_error *err)
{
    unsigned char *text = NULL;
    long n = 0;
    int in = strcmp(file, "-") == 0;      /* '-': standard input, as tokenize and grade read it */
    int rc = lx_read_file(in ? "/dev/stdin" : file, &text, &n, 0, err);
    if (rc == LX_OK && n == 0)
        rc = lx_err(err, LX_EINVAL, "--text %s%s is empty\n  hint: score needs at least one byte of text", file,
                    in ? " (standard input)" : "");
    if (rc == LX_OK)
        n = lx_tok_encode(lx_tok_or_byte(tk), (const char *)text, n, ids, err);
    free(text);
    return rc < 0 ? rc : n;
}

/* Provenance, as a stored cell has it: the arithmetic, the KV cache's type (with llama.cpp's activations
** the passes round to it) and the kernels that ran. */
static void put_provenance(struct lx_buf *json)
{
    char blas[256];
    lx_products_describe(blas, sizeof blas);
    lx_buf_printf(json, ",\n  \"numerics\": \"%s\",\n  \"kv_cache\": \"%s\",\n  \"blas\": ",
                  lx_numerics_name(lx_numerics_get()), lx_kv_name(lx_kv_get()));
    lx_buf_json_str(json, blas);
}

/* The JSON's closing lists: "tokens" and "nll", n of each. */

static void put_lists(struct lx_buf *json, const int32_t *ids, const float *nll, long n)
{
    lx_buf_puts(json, ",\n  \"tokens\": [");
    for (long i = 0; i < n; i++)
        lx_buf_printf(json, "%s%d", i ? "," : "", (int)ids[i]);
    lx_buf_puts(json, "],\n  \"nll\": [");
    for (long i = 0; i < n; i++) {
        lx_buf_puts(json, i ? "," : "");
        lx_buf_num(json, nll[i]);
    }
    lx_buf_puts(json, "]\n}\n");
}

int lx_score(const struct lx_score_opts *o, struct lx_buf *json, struct lx_error *err)
{
    char *path = NULL;
    struct lx_model m = {0};
    struct lx_ckpt_info info = {0};
    struct lx_doc d1 = {0}, d2 = {0};
    struct lx_stack st = {0};
    struct lx_tokenizer *tk = NULL;
    int32_t *ids = NULL;
    float *nll = NULL;
    long n = 0;     /* below: weights read in place from a file changed meanwhile give no numbers */
    int rc = lx_local_find(o->model, o->db, &path, err);
    if (rc == LX_OK)
        rc = lx_local_load(path, o->tokenizer, &m, &info, &tk, err);
    if (rc == LX_OK)
        rc = lx_local_check_finite(&m, &info, path, err);
    if (rc == LX_OK && m.arch.mode != LX_MODEL_CAUSAL)
        rc = lx_err(err, LX_EINVAL, "%s is a masked-LM (mlm) model; score needs a causal one", path);
    if (rc == LX_OK && info.begin_text)
        rc = lx_err(err, LX_EINVAL, "%s was trained on windows without a start token (begin: text), and score puts "
                    "one before every window\n  hint: evaluate it with the ppl task in a config", path);
    if (rc == LX_OK)    /* a model's own evaluation-time scaling (HF dynamic NTK) unless --method replaces it */
        rc = lx_local_stack(&st, info.stack, o->method ? o->method : info.eval_stack, &d1, &d2, err);
    if (rc == LX_OK && (n = read_tokens(o->text, tk, &ids, err)) < 0)
        rc = (int)n;
    long L = o->length > 0 ? o->length : info.train_len;
    struct lx_spec spec;
    if (rc == LX_OK)
        rc = lx_local_compile(&st, &m, &info, L, &spec, err);
    if (rc == LX_OK) {
        nll = lx_xcalloc((size_t)n, sizeof *nll);
        int begin = lx_tok_begin(lx_tok_or_byte(tk));
        struct score_run r = {.ids = ids, .n = n, .L = L, .begin = begin, .nll = nll};
        long full = n / L;
        rc = lx_eval_windows(&m, &spec, full, (int)L, 0, score_fill, score_score, &r, err);
        if (rc == LX_OK && n % L) {     /* the tail: one shorter window, same spec (resolved for L) */
            struct score_run tail = {.ids = ids + full * L, .n = n % L, .L = n % L, .begin = begin,
                                     .nll = nll + full * L};
            rc = lx_eval_windows(&m, &spec, 1, (int)(n % L), 0, score_fill, score_score, &tail, err);
        }
        rc = rc == LX_OK ? lx_mapguard_check(err) : rc;
    }
    if (rc == LX_OK) {
        struct lx_buf canon = {0}, sjson = {0};
        lx_stack_resolved(&st, &spec, &canon, &sjson);
        double sum = 0.0;
        for (long i = 0; i < n; i++)
            sum += nll[i];
        lx_buf_puts(json, "{\n  \"model\": ");
        lx_buf_json_str(json, path);
        if (tk) {
            lx_buf_puts(json, ",\n  \"tokenizer\": ");
            lx_buf_json_str(json, tk->path);
            lx_buf_printf(json, ",\n  \"tokenizer_sha256\": \"%s\"", tk->hash);
        }
        lx_buf_puts(json, ",\n  \"model_key\": ");     /* null when the checkpoint has none, as show model says */
        lx_buf_json_str(json, info.model_key[0] ? info.model_key : NULL);
        lx_buf_puts(json, ",\n  \"methods\": ");
        lx_buf_json_str(json, lx_buf_str(&canon));
        lx_buf_free(&canon);
        lx_buf_free(&sjson);
        put_provenance(json);
        lx_buf_printf(json, ",\n  \"train_len\": %ld,\n  \"length\": %ld,\n  \"n_tokens\": %ld,\n  \"mean_nll\": ",
                      info.train_len, L, n);
        lx_buf_num(json, sum / (double)n);
        put_lists(json, ids, nll, n);
    }
    free(nll);
    free(ids);
    lx_tokenizer_free(tk);
    lx_stack_release(&st);
    lx_doc_release(&d1);
    lx_doc_release(&d2);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    free(path);
    return rc;
}

/* ---------------------------------------------------------------- the command */

static const struct lx_opt score_opts[] = {
    {"model", 1, "model: checkpoint, llama2.c .bin, Hugging Face directory, or a model name / key prefix in the store"},
    {"text", 1, "file whose text is scored ('-': standard input)"},
    {"tokenizer", 1, "tokenizer.bin, tokenizer.json or a directory (default: the one beside the model, else bytes)"},
    {"method", 1, "evaluation-time stack to add, as YAML: logn, [logn, infoscale], {logn: {mode: qwen}}"},
    {"length", 1, "window length (default: the model's training length)"},
    {"db", 1, "store to look model names up in (default " LX_DEFAULT_DB ")"},
    LX_NUMERICS_OPTS,
};

static const char score_usage[] =
    "usage: lenx score --model NAME_OR_PATH --text FILE [--tokenizer PATH] [--method STACK] [--length L] [--db FILE]\n"
    "                  [--portable | --numerics fast|portable|bf16] [--kv-cache fp32|bf16|f16]\n"
    "                  [--activations fp32|llamacpp]\n\n"
    "Print JSON with the per-token NLL (nats) of the file's tokens under a causal model, windows of\n"
    "`length` tokens each starting with BOS, as the ppl task scores them.";

int lx_cmd_score(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int rc = lx_cli_args(&a, score_opts, LX_N_OPTS(score_opts), score_usage, argc, argv);
    if (rc >= 0)
        return rc;
    struct lx_score_opts o = {
        .model = lx_args_value(&a, "model"),
        .text = lx_args_value(&a, "text"),
        .method = lx_args_value(&a, "method"),
        .db = lx_args_value(&a, "db"),
        .tokenizer = lx_args_value(&a, "tokenizer"),
    };
    o.db = o.db ? o.db : LX_DEFAULT_DB;
    if (a.n_pos)
        return lx_cli_misuse(&a, "score", NULL);
    if (!o.model || !o.text) {
        fprintf(stderr, "lenx: error: score needs --model and --text\n  hint: %s\n", score_usage);
        return 2;
    }
    const char *len = lx_args_value(&a, "length");
    if (len && (rc = lx_args_long(len, "length", 1, 1L << 20, &o.length, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if ((rc = lx_cli_numerics(&a, &err)) < 0)
        return lx_cli_fail(&err, rc);
    struct lx_buf out = {0};
    if ((rc = lx_score(&o, &out, &err)) < 0) {
        lx_buf_free(&out);
        return lx_cli_fail(&err, rc);
    }
    fputs(lx_buf_str(&out), stdout);
    lx_buf_free(&out);
    return 0;
}
