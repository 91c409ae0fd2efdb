/*
** tasks/ppl.c - perplexity of a causal model at the evaluation length.
**
** Tokens are the model's (ctx->tok; docs/tasks.md#tokenizers): the corpus is
** encoded once per tokenizer and windowed in its tokens, so a window is
** exactly `length` model tokens; ppl, nll and n_tokens are per token, bpb per
** byte.
**
** Convention (docs/tasks.md#ppl; YaRN's evaluation, jquesnelle/yarn
** eval/perplexity.py --truncate, extended): non-overlapping windows of exactly
** `length` tokens from the held-out documents, each window its own sequence,
** the first window of a document at its start ("truncated prefix per
** document", extended to every full window of the document). The model's input
** is [BOS, s0 .. s_{L−2}] and every one of the L tokens s0 .. s_{L−1} is
** scored, so a window of length L scores exactly L tokens, the first of them
** with only BOS as context. NLLs are summed over tokens (never averages of
** averages):
**
**   nll        mean NLL per token (nats)          ppl = exp(nll)
**   nll_se     standard error of nll across windows
**   nll_in     mean NLL at positions < the training length
**   nll_out    mean NLL at positions >= the training length (absent when L <= it)
**   n_tokens   tokens scored
**   unigram_ppl  the same tokens under the training split's token unigram
**              (add-one smoothed): the no-context baseline
**   n_bytes    UTF-8 bytes of the scored tokens' text
**   bpb        bits per byte: total NLL in bits / n_bytes, which compares
**              models with different tokenizers; for the byte tokenizer a
**              token is a byte and bpb = log2(ppl)
**
** and the series `nll_by_pos`: mean NLL of the 1-based positions p in
** [2^k, 2^(k+1)), x = 2^k, where extrapolation failure shows.
**
** The windows depend on the length and the corpus only, so every method sees
** the same tokens.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/data/corpus.h"
#include "harness/engine/model/evaluate.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "tasks/task.h"


struct ppl_params {
    int corpus;     /* index into LX_CORPUS_CHOICES */
    long windows;   /* at most this many windows (0 = all) */
    long tokens;        /* token budget: windows = max(1, tokens / length); 0 = use windows */
};

static const struct lx_param ppl_rows[] = {
    LX_P_ENUM(struct ppl_params, corpus, "austen", LX_CORPUS_CHOICES, 0,
              "austen: Persuasion, held out from training; sotu: State of the Union addresses (out of domain); "
              "stories: stories sampled from stories260K, committed in configs/heldout"),
    LX_P_INT(struct ppl_params, windows, "16", 0, 1e9, 0,
             "at most this many windows of `length` tokens, spread over the corpus (0 = all)"),
    LX_P_INT(struct ppl_params, tokens, "0", 0, 1e12, 0,
             "token budget instead of windows: max(1, tokens / length) windows at every length"),
};

#define MAX_BUCKETS 40

struct ppl_run {
    const struct lx_corpus_tokens *c;   /* the split in the model's tokens */
    const struct lx_tokenizer *tk;      /* the model's tokenizer */
    const struct lx_window *win;
    long L, train_len;
    double sum, sum_in, sum_out, uni_sum;
    long n, n_in, n_out, n_bytes;       /* n_bytes: UTF-8 bytes of the scored tokens' text */
    double win_sum, win_sum2;       /* per-window mean NLL: Σ, Σ² */
    double bucket_sum[MAX_BUCKETS];
    long bucket_n[MAX_BUCKETS];
    double *unigram;                /* (K,) −log p(token), K = 256 for bytes, else the vocabulary */
};

/* `tokens` replaces `windows` when set; the unused one is reset and unstored. */
static const struct lx_param_rule ppl_rules[] = {
    {"windows", "tokens=0"},
    {"tokens", "tokens!=0"},
    {NULL, NULL},
};

static const char *ppl_split(const void *params)
{
    const struct ppl_params *p = params;
    return lx_corpus_split(p->corpus);
}

static void ppl_fill(void *ctx, long w, int *tok, int *tgt)
{
    struct ppl_run *r = ctx;
    const int *s = r->c->ids[r->win[w].doc] + r->win[w].off;
    tok[0] = lx_tok_begin(r->tk);
    for (long t = 1; t < r->L; t++)
        tok[t] = s[t - 1];
    for (long t = 0; t < r->L; t++)
        tgt[t] = s[t];
}

static void ppl_score(void *ctx, long w, const float *loss, const float *logits, const int *tgt)
{
    (void)w, (void)logits;
    struct ppl_run *r = ctx;
    double ws = 0.0;
    for (long t = 0; t < r->L; t++) {
        double l = loss[t];
        ws += l;
        r->uni_sum += r->unigram[tgt[t]];
        r->n_bytes += lx_tok_bytes(r->tk, tgt[t]);
        if (t < r->train_len) {
            r->sum_in += l;
            r->n_in++;
        } else {
            r->sum_out += l;
            r->n_out++;
        }
        int k = 0;
        while ((2L << k) <= t + 1)
            k++;
        r->bucket_sum[k] += l;
        r->bucket_n[k]++;
    }
    r->sum += ws;
    r->n += r->L;
    r->win_sum += ws / (double)r->L;
    r->win_sum2 += (ws / (double)r->L) * (ws / (double)r->L);
}

/* The training split's token unigram, add-one smoothed over the K text ids
** (the 256 bytes, or a tokenizer's whole vocabulary). */
static int unigram(struct ppl_run *r, struct lx_error *err)
{
    const struct lx_corpus_tokens *train;
    int rc = lx_corpus_tokens(&train, "train", r->tk, err);
    if (rc < 0)
        return rc;
    long K = r->tk->is_byte ? 256 : r->tk->n_vocab;
    double *cnt = lx_xmalloc(sizeof *cnt * (size_t)K);
    for (long i = 0; i < K; i++)
        cnt[i] = 1.0;
    for (int d = 0; d < train->c->n_docs; d++)
        for (long i = 0; i < train->n[d]; i++)
            cnt[train->ids[d][i]] += 1.0;
    double total = (double)train->n_tokens + (double)K;
    r->unigram = cnt;
    for (long i = 0; i < K; i++)
        r->unigram[i] = -log(cnt[i] / total);
    return LX_OK;
}

static int ppl_run(const struct lx_task_ctx *ctx, struct lx_result *out, struct lx_error *err)
{
    const struct ppl_params *p = ctx->params;
    struct ppl_run r = {.L = ctx->length, .train_len = ctx->train_len, .tk = lx_tok_or_byte(ctx->tok)};
    int rc = lx_corpus_tokens(&r.c, ppl_split(p), r.tk, err);
    if (rc == LX_OK)
        rc = unigram(&r, err);
    long nw = rc < 0 ? 0 : lx_tokens_windows(r.c, r.L, lx_window_cap(p->windows, p->tokens, r.L), NULL);
    if (rc == LX_OK && nw == 0)
        rc = lx_err(err, LX_ERUN, "ppl: no document of split '%s' has %ld %s tokens\n"
                    "  hint: use a shorter length or the sotu corpus", lx_corpus_split(p->corpus), r.L,
                    r.tk->ops->kind);
    struct lx_window *win = lx_xcalloc((size_t)(nw > 0 ? nw : 1), sizeof *win);
    if (nw > 0)
        lx_tokens_windows(r.c, r.L, lx_window_cap(p->windows, p->tokens, r.L), win);
    r.win = win;
    if (rc == LX_OK)
        rc = lx_eval_windows(ctx->model, ctx->spec, nw, (int)r.L, ppl_fill, ppl_score, &r, err);
    free(win);
    free(r.unigram);
    if (rc < 0)
        return rc;
    double nll = r.sum / (double)r.n;
    double wm = r.win_sum / (double)nw, var = nw > 1 ? (r.win_sum2 / (double)nw - wm * wm) * (double)nw / (double)(nw - 1) : NAN;
    lx_result_metric(out, "ppl", exp(nll));
    lx_result_metric(out, "nll", nll);
    lx_result_metric(out, "nll_se", var > 0 ? sqrt(var / (double)nw) : (nw > 1 ? 0.0 : NAN));
    lx_result_metric(out, "nll_in", r.n_in ? r.sum_in / (double)r.n_in : NAN);
    if (r.n_out)
        lx_result_metric(out, "nll_out", r.sum_out / (double)r.n_out);
    lx_result_metric(out, "n_tokens", (double)r.n);
    lx_result_metric(out, "unigram_ppl", exp(r.uni_sum / (double)r.n));
    lx_result_metric(out, "n_bytes", (double)r.n_bytes);
    lx_result_metric(out, "bpb", r.sum / log(2.0) / (double)r.n_bytes);
    for (int k = 0; k < MAX_BUCKETS; k++)
        if (r.bucket_n[k])
            lx_result_point(out, "nll_by_pos", (double)(1L << k), r.bucket_sum[k] / (double)r.bucket_n[k]);
    return LX_OK;
}

static int ppl_check(const void *params, long length, struct lx_error *err)
{
    (void)params;
    if (length < 2 || length > (1L << 20))
        return lx_err(err, LX_EINVAL, "ppl: length %ld is outside [2, %ld]", length, 1L << 20);
    return LX_OK;
}

const struct lx_task lx_task_ppl = {
    .name = "ppl",
    .summary = "causal-LM perplexity on non-overlapping held-out windows of exactly `length` tokens",
    .schema = LX_SCHEMA(ppl_rows, struct ppl_params, ppl_rules),
    .headline = "ppl,unigram_ppl",
    .mode = LX_MODE_CAUSAL,
    .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL,
    .split = ppl_split,
    .check = ppl_check,
    .run = ppl_run,
};
