/*
** harness/commands/tokenize.c - `lenx tokenize` (tokenize.h, docs/tokenizers.md#lenx-tokenize).
*/
#include "harness/commands/tokenize.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli.h"
#include "harness/core/json.h"
#include "harness/engine/tokenizers/tokenizer.h"

static void info(const struct lx_tokenizer *t, struct lx_buf *out)
{
    lx_buf_puts(out, "{\"path\": ");
    lx_buf_json_str(out, t->path);
    lx_buf_printf(out, ", \"kind\": \"%s\", \"vocab_size\": %ld, \"bos\": %ld, \"eos\": %ld, \"add_bos\": %s, "
                  "\"add_eos\": %s, \"sha256\": \"%s\"}\n", t->ops->kind, t->n_vocab, (long)t->bos, (long)t->eos,
                  t->add_bos ? "true" : "false", t->add_eos ? "true" : "false", t->hash);
}

/* A JSON list of ids from text[0, n) into ids. */
static int read_ids(const char *text, long n, const char *name, struct lx_ids *ids, struct lx_error *err)
{
    struct lx_json *doc;
    int rc = lx_json_parse(&doc, text, (size_t)n, name, err);
    if (rc < 0)
        return rc;
    const struct lx_jv *list = lx_json_root(doc);
    if (lx_json_type(list) != LX_JSON_ARRAY)
        rc = lx_json_err(err, doc, list, "expected a list of token ids, found %s",
                         lx_json_type_name(lx_json_type(list)));
    for (long i = 0; rc == LX_OK && i < lx_json_len(list); i++) {
        int64_t id;
        rc = lx_json_int(doc, lx_json_at(list, i), &id, err);
        if (rc == LX_OK && (id < 0 || id > INT32_MAX))
            rc = lx_json_err(err, doc, lx_json_at(list, i), "%lld is not a token id", (long long)id);
        if (rc == LX_OK)
            lx_ids_push(ids, (int32_t)id);
    }
    lx_json_free(doc);
    return rc;
}

static int run(const struct lx_tokenize_opts *o, const struct lx_tokenizer *t, const char *text, long n,
               struct lx_buf *out, struct lx_error *err)
{
    const char *name = o->text ? o->text : "<stdin>";
    struct lx_ids ids = {0};
    int rc;
    if (o->decode) {    /* an id past the vocabulary named neither the input nor, like a negative one, a hint */
        if ((rc = read_ids(text, n, name, &ids, err)) == LX_OK &&
            (rc = lx_tokenizer_decode(t, ids.id, ids.n, out, err)) < 0)
            lx_err_prefix(err, rc, "%s: ", name);
        if (rc < 0 && !strstr(err->msg, "\n  hint: "))
            lx_err(err, rc, "%s\n  hint: --decode reads one JSON list of token ids, each in 0 .. %ld, e.g. [1, 2]",
                   err->msg, t->n_vocab - 1);
    } else {
        double t0 = omp_get_wtime();
        rc = lx_tokenizer_encode(t, text, (size_t)n, o->no_specials ? 0 : LX_ENC_SPECIALS, &ids, err);
        double dt = omp_get_wtime() - t0;
        if (rc < 0)
            rc = lx_err_prefix(err, rc, "%s: ", name);
        if (rc == LX_OK && o->stats)
            fprintf(stderr, "lenx tokenize: %ld bytes, encode %.4f s, %ld tokens, %.2f MB/s\n", n, dt, ids.n,
                    dt > 0 ? n / dt / 1e6 : 0.0);
        lx_buf_puts(out, "[");
        for (long i = 0; rc == LX_OK && i < ids.n; i++)
            lx_buf_printf(out, "%s%ld", i ? ", " : "", (long)ids.id[i]);
        lx_buf_puts(out, "]\n");
    }
    lx_ids_free(&ids);
    return rc;
}

/* The tokenizer the command line names: one that cannot be opened is bad input (exit 2), as a
** model's or a tokenizer's path is in score and generate. */
static int open_named(struct lx_tokenizer **t, const char *path, struct lx_error *err)
{
    struct lx_error sub;
    return lx_tokenizer_open(t, path, &sub) < 0 ? lx_err(err, LX_EINVAL, "--tokenizer: %s", sub.msg) : LX_OK;
}

int lx_tokenize(const struct lx_tokenize_opts *o, struct lx_buf *out, struct lx_error *err)
{
    struct lx_tokenizer *t;
    int rc = open_named(&t, o->tokenizer, err);
    if (rc < 0)
        return rc;
    if (o->info) {
        info(t, out);
        lx_tokenizer_free(t);
        return LX_OK;
    }
    unsigned char *text = NULL;
    long n = 0;
    rc = lx_read_file(o->text ? o->text : "/dev/stdin", &text, &n, 1L << 30, err);
    if (rc == LX_OK)
        rc = run(o, t, (const char *)text, n, out, err);
    free(text);
    lx_tokenizer_free(t);
    return rc;
}

/* ---- the command ---- */

static const struct lx_opt tok_opts[] = {
    {"tokenizer", 1, "llama2.c tokenizer.bin, tokenizer.json, a GGUF file (its vocabulary), or a directory holding "
                     "tokenizer.json"},
    {"text", 1, "input file (default: stdin)"},
    {"decode", 0, "the input is a JSON list of ids: print their text"},
    {"no-specials", 0, "do not add the BOS/EOS the tokenizer's post-processing adds"},
    {"info", 0, "print the tokenizer's kind, vocabulary size, BOS/EOS and SHA-256 as JSON"},
    {"stats", 0, "time the encoding; one line on stderr"},
    {"gguf", 1, "write the tokenizer (without --tokenizer: lenx's byte tokenizer) as a vocabulary-only GGUF file"},
};

static const char tok_usage[] = "usage: lenx tokenize --tokenizer PATH [--text FILE] [--decode] [--no-specials] "
                                "[--stats]\n"
                                "       lenx tokenize --tokenizer PATH --info\n"
                                "       lenx tokenize [--tokenizer PATH] --gguf OUT\n\n"
                                "Print the input's token ids as a JSON list, or the text of a JSON id list; or\n"
                                "write the tokenizer as a vocabulary-only GGUF file llama.cpp's llama-tokenize\n"
                                "reads (docs/tokenizers.md#gguf).";

/* --gguf OUT: the tokenizer (NULL: the byte tokenizer) as a vocabulary-only GGUF file. */
static int write_gguf(const char *tokenizer, const char *out, struct lx_error *err)
{
    struct lx_tokenizer *t = NULL;
    int rc = tokenizer ? open_named(&t, tokenizer, err) : LX_OK;
    if (rc == LX_OK)
        rc = lx_tokenizer_write_gguf(t, out, err);
    lx_tokenizer_free(t);
    return rc;
}

/* An option the chosen mode does not read (--gguf, --info, --decode, else encoding) was ignored: refused. */
static int unread_option(const struct lx_args *a, const char *gguf, const struct lx_tokenize_opts *o,
                         struct lx_error *err)
{
    static const char *const modes[] = {"--gguf", "--info", "--decode"};
    static const char *const unread[][5] = {     /* per mode: the options it does not read */
        {"text", "decode", "no-specials", "info", "stats"},
        {"text", "decode", "no-specials", "stats"},
        {"no-specials", "stats"},
    };
    int mode = gguf ? 0 : o->info ? 1 : o->decode ? 2 : -1;
    for (int k = 0; mode >= 0 && k < 5 && unread[mode][k]; k++)
        if (lx_args_value(a, unread[mode][k]))
            return lx_err(err, LX_EINVAL, "tokenize %s does not read --%s\n  hint: give one of --gguf, --info, "
                          "--decode (or none: encode); --no-specials and --stats go with encoding", modes[mode],
                          unread[mode][k]);
    return LX_OK;
}

int lx_cmd_tokenize(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, tok_opts, LX_N_OPTS(tok_opts), argc, argv, &help, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if (help)
        return lx_cli_usage(tok_usage, tok_opts, LX_N_OPTS(tok_opts)), 0;
#define TOK_OPT(name) lx_args_get(&a, tok_opts, LX_N_OPTS(tok_opts), name)
    struct lx_tokenize_opts o = {TOK_OPT("tokenizer"), TOK_OPT("text"), TOK_OPT("decode") != NULL,
                                 TOK_OPT("no-specials") != NULL, TOK_OPT("info") != NULL, TOK_OPT("stats") != NULL};
    const char *gguf = TOK_OPT("gguf");
#undef TOK_OPT
    if (a.n_pos)
        return lx_cli_misuse(&a, "tokenize", NULL);
    if ((rc = unread_option(&a, gguf, &o, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if (gguf)
        return (rc = write_gguf(o.tokenizer, gguf, &err)) < 0 ? lx_cli_fail(&err, rc) : 0;
    if (!o.tokenizer)
        return fprintf(stderr, "lenx: error: tokenize needs --tokenizer PATH\n  hint: %s\n", tok_usage), 2;
    struct lx_buf out = {0};
    if ((rc = lx_tokenize(&o, &out, &err)) == LX_OK)
        fwrite(out.s, 1, out.len, stdout);
    lx_buf_free(&out);
    return rc < 0 ? lx_cli_fail(&err, rc) : 0;
}
