/*
** tasks/preset.c - retrieval cells run by a protocol preset on its peer's
** test cases (preset.h).
*/
#include "tasks/preset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/result.h"
#include "harness/core/rng.h"
#include "harness/engine/lm/lm.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "tasks/scorers.h"
#include "tasks/task.h"

int lx_preset_check(const char *task, const char *protocol, const char *data, const struct lx_protocol **out,
                    struct lx_error *err)
{
    if (strcmp(protocol, "lenx") == 0) {
        if (data[0])
            return lx_err(err, LX_EINVAL, "%s: data '%s' is read only by a protocol preset; protocol is lenx\n"
                          "  hint: add protocol: NAME (docs/tasks.md#protocol-presets), or drop data", task, data);
        return 0;
    }
    const struct lx_protocol *p = lx_protocol_find(task, protocol);
    if (!p || (!p->read && !p->make))
        return lx_err(err, LX_EINVAL, "%s: protocol '%s' has no reader of peer data here", task, protocol);
    *out = p;
    if (p->make && !p->haystack && data[0])
        return lx_err(err, LX_EINVAL, "%s: protocol %s makes its test cases from its peer's template; it reads no "
                      "data ('%s')\n  hint: drop data", task, protocol, data);
    if (p->make && !p->haystack)
        return 1;
    if (!data[0] && p->haystack)
        return lx_err(err, LX_EINVAL, "%s: protocol %s reads its haystack from a file or directory: name it with "
                      "data: PATH\n  hint: %s", task, protocol, p->data_hint);
    if (p->haystack) {
        int rc = p->haystack(data, err);
        return rc < 0 ? lx_err_prefix(err, rc, "%s (protocol %s): ", task, protocol) : 1;
    }
    if (!data[0])
        return lx_err(err, LX_EINVAL, "%s: protocol %s reads its peer's test cases: name the file with data: PATH\n"
                      "  hint: %s (docs/tasks.md#protocol-presets)", task, protocol, p->follows);
    struct lx_peer_set s;
    int rc = lx_peer_load(p->read, data, &s, err);
    lx_peer_release(&s);
    if (rc < 0)
        return lx_err_prefix(err, rc, "%s (protocol %s): ", task, protocol);
    return 1;
}

/* c's gold as a cell's outputs store it: the first, or every gold joined by
** ", " when the scorer asks for all of them (RULER's multi-value needles). */
static void case_gold(const struct lx_protocol *p, const struct lx_peer_case *c, struct lx_buf *out)
{
    const struct lx_scorer *sc = lx_scorer_find(p->scorer);
    long n = sc && sc->gold == LX_GOLD_ALL ? c->n_golds : 1;
    lx_buf_reset(out);
    for (long i = 0; i < n; i++)
        lx_buf_printf(out, "%s%s", i ? ", " : "", lx_peer_gold(c, i));
}

/* The cell's test cases: the data file's, or p->samples made for (key, length). */
/* A maker's case i of the cell (made when it is run: a cell's cases at 2^20 tokens are not held at once). */
static int make_case(const struct lx_protocol *p, const char *data, uint64_t key, long at, long i,
                     const struct lx_tokenizer *tk, struct lx_peer_case *c, struct lx_error *err)
{
    *c = (struct lx_peer_case){.peer_length = -1, .depth = NAN};
    return p->make(data, at, key, i, tk, c, err);
}

static void case_release(struct lx_peer_case *c)
{
    lx_buf_free(&c->prompt);
    lx_buf_free(&c->golds);
}

/* A maker's cell: its case count and what its cases are made at (the fit's length, once a cell); its last
** case is made and dropped first, so that a cell with more samples than its data holds (RULER's answerable
** questions) is refused before any case runs. */
static int preset_cell(const struct lx_protocol *p, const char *data, uint64_t key, long length, long samples,
                       const struct lx_tokenizer *tk, long *n, long *at, struct lx_error *err)
{
    *at = p->fit ? p->fit(length, key, tk, err) : length;
    *n = p->samples ? p->samples : samples;
    if (*at < 0)
        return (int)*at;
    struct lx_peer_case last;
    int rc = *n > 0 ? make_case(p, data, key, *at, *n - 1, tk, &last, err) : LX_OK;
    if (*n > 0)
        case_release(&last);
    return rc;
}

int lx_preset_instance(const struct lx_protocol *p, const char *data, uint64_t key, long length, long samples,
                       long sample, struct lx_instance *out, struct lx_error *err)
{
    struct lx_peer_set s = {0};
    struct lx_peer_case one = {0}, *c = &one;
    long n = 0, at = 0;
    memset(out, 0, sizeof *out);
    int rc = p->read ? lx_peer_load(p->read, data, &s, err)
                     : preset_cell(p, data, key, length, samples, NULL, &n, &at, err);
    n = p->read ? s.n : n;
    if (rc == LX_OK && (sample < 0 || sample >= n))
        rc = lx_err(err, LX_EINVAL, "%s holds test cases 0 to %ld; there is no instance %ld",
                    p->read ? data : "the cell", n - 1, sample);
    if (rc == LX_OK && p->read)
        c = &s.cases[sample];
    else if (rc == LX_OK)
        rc = make_case(p, data, key, at, sample, NULL, &one, err);
    if (rc == LX_OK) {
        out->n = (long)c->prompt.len + 1;
        out->tok = lx_xmalloc(sizeof(int) * (size_t)out->n);
        out->tok[0] = LX_TOK_BOS;
        for (size_t i = 0; i < c->prompt.len; i++)
            out->tok[i + 1] = (unsigned char)c->prompt.s[i];
        out->answer_off = out->n;
        struct lx_buf g = {0};
        case_gold(p, c, &g);
        snprintf(out->gold, sizeof out->gold, "%s", lx_peer_gold(c, 0));
        out->golds = lx_xstrdup(lx_buf_str(&g));
        lx_buf_free(&g);
        out->depth = isnan(c->depth) ? 0.0 : c->depth;
    }
    case_release(&one);
    lx_peer_release(&s);
    return rc;
}

long lx_preset_cut(const struct lx_protocol *p, const char *text, long n)
{
    const char *nl = p->stop_newline ? memchr(text, '\n', (size_t)n) : NULL;
    if (nl)
        n = nl - text;
    size_t k = p->stop_text ? strlen(p->stop_text) : 0;
    for (long i = 0; k > 0 && i + (long)k <= n; i++)
        if (memcmp(text + i, p->stop_text, k) == 0)
            return i;
    return n;
}

static long preset_cut(const void *p, const char *text, long n)
{
    return lx_preset_cut(p, text, n);
}

/* The budget of case c: the preset's, or (budget_gold) the first gold's
** tokens, *gold (malloc'd) = tk's prompt ids of it with the begin dropped,
** as LongLoRA's tokenizer(answer).input_ids[:, 1:]. */
static long case_budget(const struct lx_tokenizer *tk, const struct lx_protocol *p, const struct lx_peer_case *c,
                        int **gold, struct lx_error *err)
{
    *gold = NULL;
    if (!p->budget_gold)
        return p->max_new_tokens;
    const char *g = lx_peer_gold(c, 0);
    long n = lx_tok_prompt(tk, g, strlen(g), gold, err);
    if (n >= 0 && n < 2)
        n = lx_err(err, LX_EINVAL, "the gold '%s' encodes to no token: there is no budget to generate", g);
    if (n < 0)
        return n;
    memmove(*gold, *gold + 1, sizeof(int) * (size_t)(n - 1));
    return n - 1;
}

/* Case i: generate, stop, score; returns its score, *null, the prompt's
** tokens and the budget. With gold ids, the score is their equality with the
** generated ids. */
static int run_case(const struct lx_task_ctx *ctx, const struct lx_protocol *p, const struct lx_scorer *sc,
                    const struct lx_peer_case *c, long i, struct lx_result *out, double *score, int *null,
                    long *n_prompt, long *n_new, struct lx_error *err)
{
    const struct lx_tokenizer *tk = lx_tok_or_byte(ctx->tok);
    int *ids = NULL, *gold = NULL;
    long np = lx_tok_prompt(tk, c->prompt.s ? c->prompt.s : "", c->prompt.len, &ids, err),
         budget = np < 0 ? np : case_budget(tk, p, c, &gold, err);
    if (np < 0 || budget < 0) {
        free(ids);
        return (int)(np < 0 ? np : budget);
    }
    *n_prompt = np, *n_new = budget;
    int32_t *gen = lx_xmalloc(sizeof(int32_t) * (size_t)budget);
    int *gi = lx_xmalloc(sizeof(int) * (size_t)budget);
    struct lx_lm_sampling smp = {.temperature = p->temperature, .top_k = p->top_k, .seed = ctx->data_key ^ (uint64_t)i};
    long n_gen = 0;
    struct lx_lm local;
    struct lx_lm_stop end;      /* the engine stops where the text is cut (below), not at the budget; with gold
                                ** ids, which the score compares, only at a special id (no gold id is one) */
    lx_lm_stop_init(&end, tk, gold ? NULL : preset_cut, p);
    int rc = lx_lm_generate(lx_lm_or_local(ctx->lm, &local, ctx->model, ctx->spec), ids, np, budget, &smp, &end.sink,
                            gi, &n_gen, err);
    lx_lm_stop_free(&end);
    if (rc == LX_OK) {
        int same = n_gen == budget || !gold;
        for (long k = 0; k < n_gen; k++)
            gen[k] = gi[k], same &= !gold || gi[k] == gold[k];
        char *text = lx_xmalloc((size_t)lx_tok_decode_cap(tk, budget));
        int stop;
        long n = lx_tok_decode(tk, gen, n_gen, text, &stop), cut = lx_preset_cut(p, text, n);
        const char *why = cut < n ? "stop" : lx_tok_special_name(tk, stop);
        struct lx_golds g = {.n = c->n_golds};
        const char **gs = lx_xmalloc(sizeof(char *) * (size_t)c->n_golds);
        size_t *gl = lx_xmalloc(sizeof(size_t) * (size_t)c->n_golds);
        for (long j = 0; j < c->n_golds; j++)
            gs[j] = lx_peer_gold(c, j), gl[j] = strlen(gs[j]);
        g.s = gs, g.len = gl;
        *score = sc->score(text, (size_t)cut, &g, null);
        if (gold)
            *score = same;
        struct lx_buf stored = {0};
        case_gold(p, c, &stored);
        lx_result_output(out, i, c->depth, lx_buf_str(&stored), text, cut, why, *score == 1.0 ? 1 : *null ? -1 : 0,
                         NAN);
        free(gs), free(gl), free(text);
        lx_buf_free(&stored);
    }
    free(ids), free(gold), free(gen), free(gi);
    return rc;
}

int lx_preset_run(const struct lx_task_ctx *ctx, const struct lx_protocol *p, const char *data, long samples,
                  struct lx_result *out, struct lx_error *err)
{
    const struct lx_scorer *sc = lx_scorer_find(p->scorer);
    LX_ASSERT(sc && (p->read || p->make) && (p->max_new_tokens > 0 || p->budget_gold));
    struct lx_peer_set s = {0};
    long n_cases = 0, at = 0;
    int rc = p->read ? lx_peer_load(p->read, data, &s, err)
                     : preset_cell(p, data, ctx->data_key, ctx->length, samples, ctx->tok, &n_cases, &at, err);
    n_cases = p->read ? s.n : n_cases;
    double sum = 0.0, sumsq = 0.0, tokens = 0.0, budgets = 0.0;
    long nulls = 0, most = 0, least = 0;
    for (long i = 0; i < n_cases && rc == LX_OK; i++) {
        double score = 0.0;
        int null = 0;
        long np = 0, nn = 0;
        struct lx_peer_case one = {0};
        if (!p->read)
            rc = make_case(p, data, ctx->data_key, at, i, ctx->tok, &one, err);
        if (rc == LX_OK)
            rc = run_case(ctx, p, sc, p->read ? &s.cases[i] : &one, i, out, &score, &null, &np, &nn, err);
        case_release(&one);
        sum += score, sumsq += score * score, nulls += null, tokens += (double)np, budgets += (double)nn;
        most = np > most ? np : most;
        least = i == 0 || np < least ? np : least;
    }
    if (rc == LX_OK) {
        double n = (double)n_cases, acc = sum / n;
        lx_result_metric(out, "acc", acc);
        lx_result_metric(out, "acc_se", lx_scores_se(sum, sumsq, n));     /* not binomial: RULER's are shares */
        lx_result_metric(out, "null_rate", (double)nulls / n);
        lx_result_metric(out, "n_samples", n);
        lx_result_metric(out, "prompt_tokens", tokens / n);
        lx_result_metric(out, "prompt_tokens_min", (double)least);
        lx_result_metric(out, "prompt_tokens_max", (double)most);
        lx_result_metric(out, "max_new_tokens", budgets / n);    /* the mean, where the gold sets it */
    }
    lx_peer_release(&s);
    return rc;
}
