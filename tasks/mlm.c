/*
** tasks/mlm.c - masked-token accuracy of a bidirectional (mlm) model.
**
** Windows of exactly `length` tokens from the held-out documents (the same
** windows as `ppl`). Each position is picked with probability mask_prob and
** its fate decided by a counter-based draw keyed on (seed, document) with the
** absolute offset in the document as counter (docs/tasks.md#mlm),
** so the same positions are masked for every method, and a position keeps its
** fate across lengths. Picked positions become [MASK] (or, with replace: bert,
** 80% [MASK] / 10% a random byte / 10% unchanged, as in training; BERT,
** Devlin et al. 2019, arXiv 1810.04805, §3.1) and are
** scored:
**
**   acc        argmax == original over picked positions
**   acc_se     binomial standard error of acc
**   acc_in     acc at positions < the training length
**   acc_out    acc at positions >= the training length (absent when L <= it)
**   nll, ppl   mean cross-entropy over picked positions and its exp ("MLM PPL",
**              a pseudo-perplexity, not comparable to causal PPL)
**   n_masked   picked positions
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/data/corpus.h"
#include "harness/engine/model/evaluate.h"
#include "harness/engine/model/train.h"
#include "harness/core/hash.h"
#include "tasks/task.h"

enum { REPLACE_ALL_MASK, REPLACE_BERT };

struct mlm_params {
    int corpus;         /* index into LX_CORPUS_CHOICES */
    long windows;       /* at most this many windows (0 = all) */
    long tokens;        /* token budget: windows = max(1, tokens / length); 0 = use windows */
    double mask_prob;   /* fraction of positions picked */
    int replace;        /* REPLACE_ALL_MASK or REPLACE_BERT */
};

static const struct lx_param mlm_rows[] = {
    LX_P_ENUM(struct mlm_params, corpus, "austen", LX_CORPUS_CHOICES, 0,
              "austen: Persuasion, held out from training; sotu: State of the Union addresses"),
    LX_P_INT(struct mlm_params, windows, "16", 0, 1e9, 0,
             "at most this many windows of `length` tokens, spread over the corpus (0 = all)"),
    LX_P_INT(struct mlm_params, tokens, "0", 0, 1e12, 0,
             "token budget instead of windows: max(1, tokens / length) windows at every length"),
    LX_P_FLOAT(struct mlm_params, mask_prob, "0.15", 0, 1, LX_PF_MIN_OPEN, "fraction of positions masked and scored"),
    LX_P_ENUM(struct mlm_params, replace, "all_mask", "all_mask|bert", 0,
              "all_mask: every picked position becomes [MASK]; bert: 80/10/10 as in training"),
};

struct mlm_run {
    const struct mlm_params *p;
    const struct lx_corpus *c;
    const struct lx_window *win;
    long L, train_len, seed, V;
    long n, n_in, n_out, ok, ok_in, ok_out;
    double nll;
    int *src;               /* (L,) scratch: the window's bytes as ints */
};

/* `tokens` replaces `windows` when set; the unused one is reset and unstored. */
static const struct lx_param_rule mlm_rules[] = {
    {"windows", "tokens=0"},
    {"tokens", "tokens!=0"},
    {NULL, NULL},
};

static const char *mlm_split(const void *params)
{
    const struct mlm_params *p = params;
    return lx_corpus_split(p->corpus);
}

static void mlm_fill(void *ctx, long w, int *tok, int *tgt)
{
    struct mlm_run *r = ctx;
    const struct lx_corpus_doc *d = &r->c->docs[r->win[w].doc];
    for (long t = 0; t < r->L; t++)
        r->src[t] = d->bytes[r->win[w].off + t];
    struct lx_buf b = {0};
    lx_buf_printf(&b, "mlm|%ld|%s", r->seed, d->path);
    uint64_t key = lx_hash64(lx_buf_str(&b));
    lx_buf_free(&b);
    lx_mlm_corrupt(tok, tgt, r->src, r->L, key, (uint64_t)r->win[w].off, r->p->mask_prob,
                   r->p->replace == REPLACE_ALL_MASK, LX_TOK_MASK, 256);
}

static void mlm_score(void *ctx, long w, const float *loss, const float *logits, const int *tgt)
{
    (void)w;
    struct mlm_run *r = ctx;
    for (long t = 0; t < r->L; t++) {
        if (tgt[t] < 0)
            continue;
        const float *l = logits + t * r->V;
        long best = 0;
        for (long v = 1; v < r->V; v++)
            best = l[v] > l[best] ? v : best;
        int hit = best == tgt[t];
        r->n++;
        r->ok += hit;
        r->nll += loss[t];
        if (t < r->train_len) {
            r->n_in++;
            r->ok_in += hit;
        } else {
            r->n_out++;
            r->ok_out += hit;
        }
    }
}

static int mlm_run(const struct lx_task_ctx *ctx, struct lx_result *out, struct lx_error *err)
{
    const struct mlm_params *p = ctx->params;
    struct mlm_run r = {.p = p, .L = ctx->length, .train_len = ctx->train_len, .seed = ctx->seed,
                        .V = ctx->model->arch.vocab};
    int rc = lx_corpus_get(&r.c, mlm_split(p), err);
    if (rc < 0)
        return rc;
    long nw = lx_corpus_windows(r.c, r.L, lx_window_cap(p->windows, p->tokens, r.L), NULL);
    if (nw == 0)
        return lx_err(err, LX_ERUN, "mlm: no document of the corpus has %ld tokens\n"
                      "  hint: use a shorter length", r.L);
    struct lx_window *win = lx_xcalloc((size_t)nw, sizeof *win);
    lx_corpus_windows(r.c, r.L, lx_window_cap(p->windows, p->tokens, r.L), win);
    r.win = win;
    r.src = lx_xmalloc(sizeof(int) * (size_t)r.L);
    rc = lx_eval_windows(ctx->model, ctx->spec, nw, (int)r.L, 1, mlm_fill, mlm_score, &r, err);
    free(win);
    free(r.src);
    if (rc < 0)
        return rc;
    if (!r.n)
        return lx_err(err, LX_ERUN, "mlm: no position was masked at length %ld\n"
                      "  hint: raise windows or mask_prob", r.L);
    double acc = (double)r.ok / (double)r.n;
    lx_result_metric(out, "acc", acc);
    lx_result_metric(out, "acc_se", sqrt(acc * (1.0 - acc) / (double)r.n));
    lx_result_metric(out, "acc_in", r.n_in ? (double)r.ok_in / (double)r.n_in : NAN);
    if (r.n_out)
        lx_result_metric(out, "acc_out", (double)r.ok_out / (double)r.n_out);
    lx_result_metric(out, "nll", r.nll / (double)r.n);
    lx_result_metric(out, "ppl", exp(r.nll / (double)r.n));
    lx_result_metric(out, "n_masked", (double)r.n);
    return LX_OK;
}

static int mlm_check(const void *params, long length, struct lx_error *err)
{
    (void)params;
    if (length < 2 || length > (1L << 20))
        return lx_err(err, LX_EINVAL, "mlm: length %ld is outside [2, %ld]", length, 1L << 20);
    return LX_OK;
}

const struct lx_task lx_task_mlm = {
    .name = "mlm",
    .summary = "masked-token accuracy of a bidirectional model, same masked positions for every method",
    .schema = LX_SCHEMA(mlm_rows, struct mlm_params, mlm_rules),
    .headline = "acc,acc_in,acc_out",
    .mode = LX_MODE_MLM,
    .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL,
    .split = mlm_split,
    .check = mlm_check,
    .run = mlm_run,
};
