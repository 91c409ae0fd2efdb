/*
** harness/commands/generate.c - `lenx generate`: a model continues a prompt, greedy
** through the KV cache by default, or sampled at a temperature from Philox
** draws keyed on --seed (harness/engine/model/decoding.h, lx_generate_with), and the
** prompt plus its continuation is printed as text (docs/checkpoints.md#generating-text).
**
** The prompt is read as llama2.c's run.c reads it, so that its outputs can be
** compared: BOS first, and for a SentencePiece tokenizer a space in front of
** non-empty text (its "dummy prefix"); the printed text drops that one leading
** space again. Printing stops at the first special token (BOS, EOS).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/backends/local.h"
#include "harness/cli.h"
#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/model/decoding.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/sweep/grid.h"
#include "harness/sweep/plan.h"
#include "harness/commands/score.h"
#include "results/store.h"

#define N_OPTS LX_N_OPTS

static const struct lx_opt gen_opts[] = {
    {"model", 1, "model: checkpoint, llama2.c .bin, Hugging Face directory, or a model name / key prefix in the store"},
    {"tokenizer", 1, "tokenizer.bin, tokenizer.json or a directory (default: the one beside the model, else bytes)"},
    {"prompt", 1, "text to continue (default empty: BOS alone)"},
    {"n", 1, "tokens to generate (default 256)"},
    {"method", 1, "evaluation-time stack to add, as YAML: ntk, [yarn, logn], {window: {size: 256}}"},
    {"temperature", 1, "0 = greedy (default); > 0 samples from softmax(logits / T)"},
    {"seed", 1, "key of the sampling draws (default 0); only with --temperature > 0"},
    {"ids", 0, "print the token ids (prompt, then generated) on a first line"},
    {"db", 1, "store to look model names up in (default " LX_DEFAULT_DB ")"},
    LX_NUMERICS_OPTS,
};

static const char gen_usage[] =
    "usage: lenx generate --model M [--tokenizer FILE] [--prompt TEXT] [-n N] [--method STACK]\n"
    "                     [--temperature T [--seed S]] [--ids] [--db FILE]\n"
    "                     [--portable | --numerics fast|portable|bf16] [--kv-cache fp32|bf16]\n\n"
    "Continue the prompt with a causal model and print the text (prompt included). Greedy by default;\n"
    "with a temperature T > 0, token k is drawn from Philox(seed, k): the same seed gives the same text\n"
    "(--seed without a temperature is refused: greedy decoding draws nothing).";

struct gen_opts {
    const char *model, *tokenizer, *prompt, *method, *db;
    long n;                 /* tokens to generate */
    struct lx_sampler smp;
    int ids;                /* print ids too */
};

static void gen_print(const struct lx_tokenizer *t, const int *ids, long n, int show_ids)
{
    if (show_ids) {
        for (long i = 0; i < n; i++)
            printf("%s%d", i ? " " : "", ids[i]);
        putchar('\n');
    }
    char *out = lx_xmalloc((size_t)lx_tok_decode_cap(t, n));
    int stop;
    long len = lx_tok_decode(t, ids + 1, n - 1, out, &stop);
    int skip = len > 0 && out[0] == ' ' && !t->is_byte;     /* the SentencePiece decoder's rule after BOS */
    fwrite(out + skip, 1, (size_t)(len - skip), stdout);
    putchar('\n');
    free(out);
}

static int gen_run(const struct gen_opts *o, struct lx_error *err)
{
    char *path = NULL;
    struct lx_model m = {0};
    struct lx_ckpt_info info = {0};
    struct lx_tokenizer *tok = NULL;
    struct lx_doc d1 = {0}, d2 = {0};
    struct lx_stack st = {0};
    int *ids = NULL;
    long np = 0;
    int rc = lx_local_find(o->model, o->db, &path, err);
    if (rc == LX_OK)     /* the checks score makes: a 512-token model is not read in the 260 byte tokens */
        rc = lx_local_load(path, o->tokenizer, &m, &info, &tok, err);
    if (rc == LX_OK)
        rc = lx_local_stack(&st, info.stack, o->method ? o->method : info.eval_stack, &d1, &d2, err);
    if (rc == LX_OK && (np = lx_tok_prompt(lx_tok_or_byte(tok), o->prompt, strlen(o->prompt), &ids, err)) < 0)
        rc = (int)np, np = 0;
    struct lx_facts f = {.d_head = (int)m.arch.d_head, .train_len = info.train_len, .n_heads = (int)m.arch.heads,
                         .length = np + o->n, .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
    f.ft_len = lx_stack_ft_length(&st, info.train_len);     /* a fine-tuned model's auto scales */
    struct lx_spec spec;
    if (rc == LX_OK)
        rc = lx_stack_compile(&st, &f, &spec, err);
    if (rc == LX_OK) {
        ids = lx_xrealloc(ids, sizeof(int) * (size_t)(np + o->n));
        rc = lx_generate_with(&m, &spec, ids, np, o->n, ids + np, LX_DECODE_CACHE, &o->smp, err);
    }
    if (rc == LX_OK)
        gen_print(lx_tok_or_byte(tok), ids, np + o->n, o->ids);
    free(ids);
    lx_stack_release(&st);
    lx_doc_release(&d1);
    lx_doc_release(&d2);
    lx_tokenizer_free(tok);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    free(path);
    return rc;
}

int lx_cmd_generate(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    char *args[argc > 0 ? argc : 1];
    for (int i = 0; i < argc; i++)      /* -n N is llama2.c's spelling: read it as --n N */
        args[i] = strcmp(argv[i], "-n") == 0 ? (char *)"--n" : argv[i];
    if ((rc = lx_args_parse(&a, gen_opts, N_OPTS(gen_opts), argc, args, &help, &err)) < 0)
        return lx_cli_fail(&err, rc);
#define GET(k) lx_args_get(&a, gen_opts, N_OPTS(gen_opts), k)
    struct gen_opts o = {.model = GET("model"), .tokenizer = GET("tokenizer"), .prompt = GET("prompt"),
                         .method = GET("method"), .db = GET("db"), .n = 256, .ids = GET("ids") != NULL};
    if (help || !o.model || a.n_pos)
        return lx_cli_usage(gen_usage, gen_opts, N_OPTS(gen_opts)), help ? 0 : 2;
    o.db = o.db ? o.db : LX_DEFAULT_DB;
    o.prompt = o.prompt ? o.prompt : "";
    long seed = 0;
    const char *seed_arg = GET("seed");
    if ((GET("n") && (rc = lx_args_long(GET("n"), "n", 0, 1L << 20, &o.n, &err)) < 0) ||
        (GET("temperature") && (rc = lx_args_double(GET("temperature"), "temperature", &o.smp.temperature, &err)) < 0) ||
        (GET("seed") && (rc = lx_args_long(GET("seed"), "seed", 0, INT64_MAX, &seed, &err)) < 0))
        return lx_cli_fail(&err, rc);
#undef GET
    if ((rc = lx_cli_numerics(&a, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if (!(o.smp.temperature >= 0.0 && o.smp.temperature <= 1e6)) {
        fprintf(stderr, "lenx: error: --temperature %g is not in [0, 1e6]\n  hint: 0 is greedy, 0.8 a usual "
                "sampling temperature\n", o.smp.temperature);
        return 2;
    }
    if (seed_arg && o.smp.temperature == 0.0) {
        fprintf(stderr, "lenx: error: --seed %ld has no effect: decoding is greedy at --temperature 0 (the "
                "default)\n  hint: --seed only affects sampling; add --temperature T > 0, or drop --seed\n", seed);
        return 2;
    }
    o.smp.seed = (uint64_t)seed;
    rc = gen_run(&o, &err);
    return rc < 0 ? lx_cli_fail(&err, rc) : 0;
}
