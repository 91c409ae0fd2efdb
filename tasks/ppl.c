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
**
** A model trained without a start token (train: begin: text) reads the window
** itself, s0 .. s_{L−1}, and s1 .. s_{L−1} are scored, as it was trained.
**
** `protocol:` lays the windows out as a peer's evaluation does instead
** (llamacpp, hf_stride, yarn_truncate, longlora: tasks/ppl_windows.h,
** docs/tasks.md#ppl-protocols), and nll aggregates as the peer does; `data:`
** reads a UTF-8 text file as the corpus instead (one document).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/data/corpus.h"
#include "harness/engine/lm/lm.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "tasks/ppl_windows.h"
#include "tasks/task.h"


#define PPL_PROTOCOLS "lenx|llamacpp|hf_stride|yarn_truncate|longlora"
enum { PPL_LENX, PPL_LLAMACPP, PPL_HF_STRIDE, PPL_YARN_TRUNCATE, PPL_LONGLORA };
static const char *const protocol_names[] = {"lenx", "llamacpp", "hf_stride", "yarn_truncate", "longlora"};

struct ppl_params {
    int corpus;     /* index into LX_CORPUS_CHOICES */
    long windows;   /* at most this many windows (0 = all) */
    long tokens;        /* token budget: windows = max(1, tokens / length); 0 = use windows */
    int protocol;       /* index into PPL_PROTOCOLS */
    long chunks;        /* (peer protocols) at most this many windows, the first ones (0 = all) */
    long stride;        /* (hf_stride) tokens a window moves by; 0 = length / 2 */
    char data[LX_PATH_CAP];     /* a UTF-8 text file as the corpus instead ("" = the corpus row) */
};

static const struct lx_param ppl_rows[] = {
    LX_P_ENUM(struct ppl_params, corpus, "austen", LX_CORPUS_CHOICES, 0,
              "austen: Persuasion, held out from training; sotu: State of the Union addresses (out of domain); "
              "stories: stories sampled from stories260K, committed in configs/heldout"),
    LX_P_INT(struct ppl_params, windows, "16", 0, 1e9, 0,
             "at most this many windows of `length` tokens, spread over the corpus (0 = all)"),
    LX_P_INT(struct ppl_params, tokens, "0", 0, 1e12, 0,
             "token budget instead of windows: max(1, tokens / length) windows at every length"),
    LX_P_ENUM(struct ppl_params, protocol, "lenx", PPL_PROTOCOLS, 0,
              "whose windows: lenx (disjoint per document, BOS prepended, all scored), llamacpp, hf_stride, "
              "yarn_truncate, longlora (docs/tasks.md#ppl-protocols)"),
    LX_P_INT(struct ppl_params, chunks, "0", 0, 1e9, 0,
             "(peer protocols) at most this many windows, the first ones, as llama.cpp's --chunks or YaRN's "
             "--samples (0 = all)"),
    LX_P_INT(struct ppl_params, stride, "0", 0, 1e9, 0,
             "(hf_stride) tokens the window moves by, at most the length (0 = length / 2)"),
    LX_P_PATH(struct ppl_params, data, 0,
              "a UTF-8 text file scored instead of the corpus, as one document, in the model's tokens; its "
              "SHA-256 enters the run key"),
};

#define MAX_BUCKETS 40

struct ppl_run {
    const struct lx_corpus_tokens *c;   /* the split in the model's tokens */
    const struct lx_tokenizer *tk;      /* the model's tokenizer */
    const struct lx_ppl_win *win;
    long L, train_len;
    int shift;              /* 1: position t predicts src[t] (BOS prepended); 0: src[t+1] */
    int bos_first;          /* the input's first token is BOS (prepended, or overwriting src[0]) */
    int by_window;          /* nll = Σ weight·window mean / Σ weight, not Σ NLL / tokens */
    double sum, sum2, sum_in, sum_out, uni_sum;     /* sum2: Σ NLL² over tokens */
    long n, n_in, n_out, n_bytes;       /* n_bytes: UTF-8 bytes of the scored tokens' text */
    double win_sum, win_sum2;       /* per-window mean NLL: Σ, Σ² */
    double wsum, wtot;              /* Σ weight·window mean, Σ weight */
    double bucket_sum[MAX_BUCKETS];
    long bucket_n[MAX_BUCKETS];
    double *unigram;                /* (K,) −log p(token), K = 256 for bytes, else the vocabulary */
};

/* `tokens` replaces `windows` when set; the unused one is reset and unstored.
** The peer protocols take `chunks` instead, hf_stride its `stride`. */
static const struct lx_param_rule ppl_rules[] = {
    {"windows", "tokens=0&protocol=lenx"},
    {"tokens", "tokens!=0&protocol=lenx"},
    {"protocol", "protocol!=lenx"},
    {"chunks", "protocol!=lenx"},
    {"stride", "protocol=hf_stride"},
    {NULL, NULL},
};

static const char *ppl_split(const void *params)
{
    const struct ppl_params *p = params;
    return p->data[0] ? lx_corpus_file_split(p->data) : lx_corpus_split(p->corpus);
}

static void ppl_fill(void *ctx, long w, int *tok, int *tgt)
{
    struct ppl_run *r = ctx;
    const struct lx_ppl_win *v = &r->win[w];
    int bos = lx_tok_begin(r->tk);
    for (long t = 0; t < r->L; t++) {
        tok[t] = t - r->shift >= v->n || (t == 0 && r->bos_first) ? bos : v->src[t - r->shift];
        tgt[t] = t >= v->lo && t < v->hi ? v->src[t + 1 - r->shift] : -1;
    }
}

static void ppl_score(void *ctx, long w, const float *loss, const float *logits, const int *tgt)
{
    (void)logits;
    struct ppl_run *r = ctx;
    const struct lx_ppl_win *v = &r->win[w];
    double ws = 0.0;
    for (long t = v->lo; t < v->hi; t++) {
        double l = loss[t];
        ws += l;
        r->sum2 += l * l;
        r->uni_sum += r->unigram[tgt[t]];
        r->n_bytes += lx_tok_bytes(r->tk, tgt[t]);
        if (t < r->train_len)
            r->sum_in += l, r->n_in++;
        else
            r->sum_out += l, r->n_out++;
        int k = 0;
        while ((2L << k) <= t + 1)
            k++;
        r->bucket_sum[k] += l;
        r->bucket_n[k]++;
    }
    long n = v->hi - v->lo;
    r->sum += ws;
    r->n += n;
    r->win_sum += ws / (double)n;
    r->win_sum2 += (ws / (double)n) * (ws / (double)n);
    r->wsum += v->weight * (ws / (double)n);
    r->wtot += v->weight;
}

/* The protocol's windows and input convention into r and pl; *stream (freed
** by the caller) holds the concatenated tokens when the protocol reads one. */
static int plan_windows(struct ppl_run *r, struct lx_ppl_plan *pl, const struct ppl_params *p, int begin_text,
                        int **stream, struct lx_error *err)
{
    if (begin_text && p->protocol != PPL_LENX)
        return lx_err(err, LX_EINVAL, "ppl: protocol %s puts the peer's start token before its windows, and this "
                      "model was trained without one (train: begin: text)\n  hint: use protocol lenx, which "
                      "reads such a model's windows as it was trained", protocol_names[p->protocol]);
    long L = r->L, ns = 0;
    int bos = lx_tok_begin(r->tk);
    const char *what = p->data[0] ? "the data file" : "split", *name = p->data[0] ? p->data : ppl_split(p);
    pl->max = p->protocol == PPL_LENX ? 0 : p->chunks;
    /* llamacpp: BOS as add_bos says; a text model (lenx only, above) reads its window itself */
    r->shift = !begin_text && (p->protocol == PPL_LENX || p->protocol == PPL_YARN_TRUNCATE);
    r->bos_first = r->shift || (p->protocol == PPL_LLAMACPP && lx_tok_llamacpp_bos(r->tk));
    r->by_window = p->protocol != PPL_LENX && p->protocol != PPL_LLAMACPP;
    if (p->protocol == PPL_LLAMACPP || p->protocol == PPL_HF_STRIDE || p->protocol == PPL_LONGLORA)
        *stream = lx_ppl_stream(r->c, p->protocol == PPL_LLAMACPP && r->bos_first ? bos : -1, &ns);
    switch (p->protocol) {
    case PPL_LENX:
        lx_ppl_lenx(pl, r->c, lx_window_cap(p->windows, p->tokens, L), L);
        for (long w = 0; begin_text && w < pl->n; w++)     /* src[t] predicts src[t + 1]: L − 1 targets */
            pl->win[w].hi = L - 1;
        break;
    case PPL_LLAMACPP:
        lx_ppl_llamacpp(pl, *stream, ns, L);
        break;
    case PPL_HF_STRIDE:
        lx_ppl_hf_stride(pl, *stream, ns, L, p->stride ? p->stride : L / 2);
        break;
    case PPL_YARN_TRUNCATE:
        lx_ppl_yarn_truncate(pl, r->c, L);
        break;
    case PPL_LONGLORA:
        lx_ppl_longlora(pl, *stream, ns, L);
        break;
    }
    if (pl->n > 0)
        return LX_OK;
    if (p->protocol == PPL_LENX)
        return lx_err(err, LX_ERUN, "ppl: no document of %s '%s' has %ld %s tokens\n  hint: %s", what, name, L,
                      r->tk->ops->kind, lx_corpus_too_short_hint(p->data[0] ? "" : lx_corpus_choice(p->corpus)));
    /* llama.cpp refuses fewer than 2 n_ctx tokens; LongLoRA needs two starts below N - L, one dropped */
    long need = p->protocol == PPL_LLAMACPP ? 2 * L : p->protocol == PPL_LONGLORA ? L + LX_LONGLORA_STEP + 1 : 0;
    return lx_err(err, LX_ERUN, "ppl: protocol %s scores no token of %s '%s' at length %ld (%ld %s tokens%s%ld)\n"
                  "  hint: use a shorter length or a longer text", protocol_names[p->protocol], what,
                  name, L, r->c->n_tokens, r->tk->ops->kind, need ? "; it needs " : "", need);
}

static int ppl_run(const struct lx_task_ctx *ctx, struct lx_result *out, struct lx_error *err)
{
    const struct ppl_params *p = ctx->params;
    struct ppl_run r = {.L = ctx->length, .train_len = ctx->train_len, .tk = lx_tok_or_byte(ctx->tok)};
    struct lx_ppl_plan pl = {0};
    struct lx_lm local;
    /* lenx windows segments of the text; a peer's tokenizer reads each document whole */
    int *stream = NULL, rc = lx_corpus_tokens_as(&r.c, ppl_split(p), r.tk, p->protocol == PPL_LENX ? LX_ENC_SEGMENT : 0, err);
    if (rc == LX_OK)
        rc = lx_corpus_unigram(&r.unigram, r.tk, err);
    if (rc == LX_OK)
        rc = plan_windows(&r, &pl, p, ctx->begin_text, &stream, err);
    long nw = pl.n;
    r.win = pl.win;
    if (rc == LX_OK)
        rc = lx_lm_eval_windows(lx_lm_or_local(ctx->lm, &local, ctx->model, ctx->spec), nw, (int)r.L, ppl_fill, ppl_score, &r, err);
    free(pl.win);
    free(stream);
    free(r.unigram);
    if (rc < 0)
        return rc;
    double nll = r.by_window ? r.wsum / r.wtot : r.sum / (double)r.n;
    double wm = r.win_sum / (double)nw, var = nw > 1 ? (r.win_sum2 / (double)nw - wm * wm) * (double)nw / (double)(nw - 1) : NAN;
    double se = var > 0 ? sqrt(var / (double)nw) : (nw > 1 ? 0.0 : NAN);
    if (p->protocol == PPL_LLAMACPP) {     /* per token, as llama.cpp prints PPL ± its error */
        double m = r.sum / (double)r.n, v = r.sum2 / (double)r.n - m * m;
        se = v > 0 && r.n > 1 ? sqrt(v / (double)(r.n - 1)) : NAN;
    }
    lx_result_metric(out, "ppl", exp(nll));
    lx_result_metric(out, "nll", nll);
    lx_result_metric(out, "nll_se", se);
    lx_result_metric(out, "nll_in", r.n_in ? r.sum_in / (double)r.n_in : NAN);
    if (r.n_out)
        lx_result_metric(out, "nll_out", r.sum_out / (double)r.n_out);
    lx_result_metric(out, "n_tokens", (double)r.n);
    if (p->protocol != PPL_LENX)
        lx_result_metric(out, "n_windows", (double)nw);
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
    const struct ppl_params *p = params;
    if (length < 2 || length > (1L << 20))
        return lx_err(err, LX_EINVAL, "ppl: length %ld is outside [2, %ld]\n  hint: use a length in that range",
                      length, 1L << 20);
    if (p->protocol == PPL_LLAMACPP && length - length / 2 - 1 < 1)     /* llama.cpp's n_ctx - first - 1 */
        return lx_err(err, LX_EINVAL, "ppl: protocol llamacpp scores no token at length %ld (the tokens after "
                      "the first half of each chunk, length - length/2 - 1 of them)\n  hint: use a length of at "
                      "least 3", length);
    if (p->protocol == PPL_HF_STRIDE && p->stride > length)
        return lx_err(err, LX_EINVAL, "ppl: stride %ld is longer than the length %ld, so tokens between windows "
                      "would go unscored\n  hint: use a stride of at most the length (0 = length / 2)", p->stride,
                      length);
    return LX_OK;
}

const struct lx_task lx_task_ppl = {
    .name = "ppl",
    .summary = "causal-LM perplexity on non-overlapping held-out windows of exactly `length` tokens, or a "
               "peer's windows (llama.cpp, Hugging Face strided, YaRN --truncate, LongLoRA)",
    .schema = LX_SCHEMA(ppl_rows, struct ppl_params, ppl_rules),
    .headline = "ppl,unigram_ppl",
    .mode = LX_MODE_CAUSAL, .lm_needs = LX_LM_LOGPROBS, .losses_only = 1,  /* lx_lm_eval_windows */
    .unseeded = 1,  /* fixed windows */
    .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL,
    .split = ppl_split,
    .check = ppl_check,
    .run = ppl_run,
};
