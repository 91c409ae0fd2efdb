/*
** harness/commands/generate.c - `lenx generate`: a model continues a prompt, greedy
** through the KV cache by default, or sampled at a temperature from Philox
** draws keyed on --seed (harness/engine/model/decoding.h, lx_generate_with), and the
** prompt plus its continuation is printed as text (docs/checkpoints.md#generating-text).
**
** The prompt is read as llama2.c's run.c reads it, so that its outputs can be
** compared: BOS first, and for a SentencePiece tokenizer a space in front of
** non-empty text (its "dummy prefix"); the printed text drops that one leading
** space again. The text is written as it is generated, a token at a time,
** and generation stops at the first token without text (BOS, EOS, an
** unknown); run.c stops at BOS only. --ids prints after the whole run
** instead, all N tokens' ids first.
** --timings tells on stderr how long the load, the prompt's pass and the
** decode steps took.
*/
#include <omp.h>
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
    {"top-k", 1, "draw only among the K largest logits (ties kept; default 0: all); only with --temperature > 0"},
    {"ids", 0, "print the token ids (prompt, then all N generated) on a first line, then the text"},
    {"timings", 0, "print the load's, the prompt pass's and the decode steps' seconds and tokens/s on stderr"},
    {"db", 1, "store to look model names up in (default " LX_DEFAULT_DB ")"},
    LX_NUMERICS_OPTS,
};

static const char gen_usage[] =
    "usage: lenx generate --model M [--tokenizer FILE] [--prompt TEXT] [-n N] [--method STACK]\n"
    "                     [--temperature T [--seed S] [--top-k K]] [--ids] [--timings] [--db FILE]\n"
    "                     [--portable | --numerics fast|portable|bf16] [--kv-cache fp32|bf16|f16]\n"
    "                     [--activations fp32|llamacpp]\n\n"
    "Continue the prompt with a causal model and print the text (prompt included) as it is generated, up to\n"
    "the first special token (end of text). Greedy by default;\n"
    "with a temperature T > 0, token k is drawn from Philox(seed, k): the same seed gives the same text\n"
    "(--seed without a temperature is refused: greedy decoding draws nothing).";

struct gen_opts {
    const char *model, *tokenizer, *prompt, *method, *db;
    long n;                 /* tokens to generate */
    struct lx_sampler smp;
    int ids;                /* print ids too */
    int timings;            /* print seconds on stderr */
};

/* The text printed as it is generated (text = the prompt's and the tokens'
** pieces, as lx_tok_decode joins them), and the times of the tokens. */
struct stream {
    const struct lx_tokenizer *tok;
    int print;              /* write the pieces (not with --ids) */
    int lead;               /* spaces still to drop from the text's start (the decoder's dummy prefix) */
    int stop;               /* the special id generation stopped at, or -1 */
    double t0, t_first, t_half, t_last;     /* start of the prompt pass, token 0, the middle step, the last */
    long n_half, n;         /* token index of t_half, tokens chosen */
    long budget;
};

static void put_piece(struct stream *s, const char *p, size_t len)
{
    size_t skip = 0;
    for (; s->lead > 0 && skip < len && p[skip] == ' '; s->lead--)
        skip++;
    s->lead = len > skip ? 0 : s->lead;
    fwrite(p + skip, 1, len - skip, stdout);
}

static int stream_token(void *arg, long k, int id)
{
    struct stream *s = arg;
    double now = omp_get_wtime();
    s->n = k + 1;
    if (k == 0)
        s->t_first = now;
    if (k == s->budget / 2)
        s->t_half = now, s->n_half = k;
    s->t_last = now;
    if (!s->print)
        return 0;
    size_t len;
    const char *p = lx_tok_piece(s->tok, id, &len);
    if (!p) {
        s->stop = id;
        return 1;
    }
    put_piece(s, p, len);
    fflush(stdout);
    return 0;
}

/* ids[1, n) as text through s's printer: a special token inside (the text
** "</s>" a tokenizer.json reads as EOS) has no text and is passed over; the
** text after it was lost, and with --ids the continuation too. */
static void put_text(struct stream *s, const int *ids, long n)
{
    for (long i = 1; i < n; i++) {
        size_t len;
        const char *p = lx_tok_piece(s->tok, ids[i], &len);
        if (p)
            put_piece(s, p, len);
    }
}

/* With --ids: every id, then the text. */
static void print_ids(struct stream *s, const int *ids, long n)
{
    for (long i = 0; i < n; i++)
        printf("%s%d", i ? " " : "", ids[i]);
    putchar('\n');
    put_text(s, ids, n);
}

static void print_timings(const struct stream *s, const struct lx_pilot *pl, double t_load, long np)
{
    fprintf(stderr, "lenx: timings: load %.2f s; prompt of %ld token%s and the first token %.2f s (%.1f tokens/s)",
            t_load, np, np == 1 ? "" : "s", s->t_first - s->t0, (double)np / (s->t_first - s->t0));
    long steps = s->n - 1;
    if (steps > 0) {
        double dt = s->t_last - s->t_first;
        fprintf(stderr, "; %ld decode step%s %.2f s (%.2f tokens/s, %.1f ms a step", steps, steps == 1 ? "" : "s", dt,
                (double)steps / dt, 1e3 * dt / (double)steps);
        if (s->n_half > 0 && s->n - 1 > s->n_half)
            fprintf(stderr, "; steps 1-%ld %.1f ms, %ld-%ld %.1f ms", s->n_half,
                    1e3 * (s->t_half - s->t_first) / (double)s->n_half, s->n_half + 1, steps,
                    1e3 * (s->t_last - s->t_half) / (double)(steps - s->n_half));
        if (omp_get_max_threads() > 1)     /* the pilot's choices (pilot.h) */
            fprintf(stderr, "; %ld on %d threads, %ld on one, %ld probe%s, %ld switch%s", pl->steps[0],
                    omp_get_max_threads(), pl->steps[1], pl->probes, pl->probes == 1 ? "" : "s", pl->switches,
                    pl->switches == 1 ? "" : "es");
        fputc(')', stderr);
    }
    if (s->stop >= 0)
        fprintf(stderr, "; stopped at token %ld, %s (id %d)", s->n - 1, lx_tok_special_name(s->tok, s->stop),
                s->stop);
    fputc('\n', stderr);
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
    long np = 0, n_out = 0;
    double t_start = omp_get_wtime();
    int rc = lx_local_find(o->model, o->db, &path, err);
    if (rc == LX_OK)     /* the checks score makes: a 512-token model is not read in the 260 byte tokens */
        rc = lx_local_load(path, o->tokenizer, &m, &info, &tok, err);
    if (rc == LX_OK)
        rc = lx_local_check_finite(&m, &info, path, err);
    if (rc == LX_OK)
        rc = lx_local_stack(&st, info.stack, o->method ? o->method : info.eval_stack, &d1, &d2, err);
    if (rc == LX_OK && (np = lx_tok_prompt(lx_tok_or_byte(tok), o->prompt, strlen(o->prompt), &ids, err)) < 0)
        rc = (int)np, np = 0;
    struct lx_spec spec;
    if (rc == LX_OK)
        rc = lx_local_compile(&st, &m, &info, np + o->n, &spec, err);
    struct stream s = {.tok = lx_tok_or_byte(tok), .print = !o->ids, .stop = -1, .budget = o->n};
    s.lead = s.tok->strip_lead;
    struct lx_pilot pl;
    struct lx_gen_sink sink = {stream_token, &s, &pl};
    if (rc == LX_OK) {
        lx_pilot_start(&pl, &m);
        ids = lx_xrealloc(ids, sizeof(int) * (size_t)(np + o->n));
        if (s.print) {
            put_text(&s, ids, np);
            fflush(stdout);
        }
        s.t0 = omp_get_wtime();
        rc = lx_generate_stream(&m, &spec, ids, np, o->n, ids + np, LX_DECODE_CACHE, &o->smp, &sink, &n_out, err);
    }
    if (rc == LX_OK) {
        if (o->ids)
            print_ids(&s, ids, np + n_out);
        putchar('\n');
        if (o->timings && n_out > 0)
            print_timings(&s, &pl, s.t0 - t_start, np);
    }
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
    lx_args_short(argc, argv, args, gen_opts, N_OPTS(gen_opts), "-n", "--n");     /* llama2.c's spelling of --n */
    if ((rc = lx_args_parse(&a, gen_opts, N_OPTS(gen_opts), argc, args, &help, &err)) < 0)
        return lx_cli_fail(&err, rc);
#define GET(k) lx_args_get(&a, gen_opts, N_OPTS(gen_opts), k)
    struct gen_opts o = {.model = GET("model"), .tokenizer = GET("tokenizer"), .prompt = GET("prompt"),
                         .method = GET("method"), .db = GET("db"), .n = 256, .ids = GET("ids") != NULL,
                         .timings = GET("timings") != NULL};
    if (help)
        return lx_cli_usage(gen_usage, gen_opts, N_OPTS(gen_opts)), 0;
    if (!o.model || a.n_pos)    /* llama2.c's -t 0.8 is a stray argument here: named */
        return lx_cli_misuse(&a, "generate", "--model is required");
    o.db = o.db ? o.db : LX_DEFAULT_DB;
    o.prompt = o.prompt ? o.prompt : "";
    long seed = 0;
    const char *seed_arg = GET("seed"), *top_k_arg = GET("top-k");
    if ((GET("n") && (rc = lx_args_long(GET("n"), "n", 0, 1L << 20, &o.n, &err)) < 0) ||
        (GET("temperature") && (rc = lx_args_double(GET("temperature"), "temperature", &o.smp.temperature, &err)) < 0) ||
        (GET("seed") && (rc = lx_args_long(GET("seed"), "seed", 0, INT64_MAX, &seed, &err)) < 0) ||
        (top_k_arg && (rc = lx_args_long(top_k_arg, "top-k", 0, 1L << 30, &o.smp.top_k, &err)) < 0))
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
    if (top_k_arg && o.smp.temperature == 0.0) {
        fprintf(stderr, "lenx: error: --top-k %ld has no effect: decoding is greedy at --temperature 0 (the "
                "default)\n  hint: --top-k only affects sampling; add --temperature T > 0, or drop --top-k\n", o.smp.top_k);
        return 2;
    }
    o.smp.seed = (uint64_t)seed;
    rc = gen_run(&o, &err);
    return rc < 0 ? lx_cli_fail(&err, rc) : 0;
}
