/*
** tasks/attn.c - attention diagnostics of a causal model on held-out text.
**
** What the source papers look at when extrapolation fails (docs/tasks.md#attn;
** docs/REPRODUCTIONS.md uses them), measured on the model's real attention
** rows (harness/core/diag.h has the definitions):
**
**   Chi, Fan & Rudnicky 2024 (T5 attention alignment, arXiv 2311.00684,
**     Table 1): "dispersed attention",
**     the mean row entropy and mean max probability at 1× vs k× the training
**     length: metrics entropy, pmax (at the cell's length) and entropy_train,
**     pmax_train (the model's training-time attention at its training length).
**   Anson et al. 2025 (scale-invariant attention, arXiv 2505.17083, §3):
**     entropy and attention mass
**     inside distance ranges [a, b): range_entropy:a-b, range_mass:a-b.
**   Zhong et al. 2024 (RoPE extensions from an attention perspective, arXiv
**     2406.13282): the
**     Jensen–Shannon divergence between mean attention distributions:
**     js_train compares the cell's mean distribution over log2 distance
**     buckets with the training-time one (same model, its training stack, at
**     its training length): how far a method moves attention from what the
**     model learnt. Both distributions are stored as series
**     (mass_by_distance, mass_by_distance_train; x = the bucket's first
**     distance) so any two cells can be compared afterwards.
**
**   Xiao et al. 2024 (StreamingLLM, arXiv 2309.17453, Figure 2): the
**     attention sink, the probability of the window's first token
**     (sink_mass), and with a zero sink (methods/zerosink.c) that key's
**     (zerosink_mass).
**
** Every statistic is a mean over rows i >= from·length of every window, head
** and layer; per-layer values are named ":l<k>" (entropy:l0, range_mass:l1:16-256).
** Windows are the held-out windows ppl reads (non-overlapping, exactly
** `length` of the model's tokens, [BOS, text …], or the text alone for a model
** trained without a start token); the reference pass reads windows of the
** training length from the same corpus.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/data/corpus.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/core/diag.h"
#include "harness/engine/model/model.h"
#include "tasks/task.h"

struct attn_params {
    int corpus;                 /* index into LX_CORPUS_CHOICES */
    long windows;               /* at most this many windows */
    long tokens;                /* token budget instead of windows (0 = use windows) */
    double from;                /* rows i >= from·length are measured */
    struct lx_ranges ranges;    /* distance ranges of range_* */
    int reference;              /* also measure the training-time attention at the training length */
};

static const struct lx_param attn_rows[] = {
    LX_P_ENUM(struct attn_params, corpus, "austen", LX_CORPUS_CHOICES, 0,
              "austen: Persuasion, held out from training; sotu: State of the Union addresses (out of domain)"),
    LX_P_INT(struct attn_params, windows, "4", 1, 1e9, 0, "at most this many windows of `length` tokens"),
    LX_P_INT(struct attn_params, tokens, "0", 0, 1e12, 0,
             "token budget instead of windows: max(1, tokens / length) windows at every length"),
    LX_P_FLOAT(struct attn_params, from, "0", 0, 1, 0,
               "measure query rows i >= from * length (0 = every row)"),
    LX_P_RANGES(struct attn_params, ranges, "[[1,16],[16,256],[256,4096]]", 0, 1e12, 0,
                "[a, b) distance ranges for range_entropy and range_mass (ranges longer than the length are skipped)"),
    LX_P_BOOL(struct attn_params, reference, "true", 0,
              "also measure the model's training-time attention at its training length (entropy_train, "
              "pmax_train, js_train)"),
};

/* `tokens` replaces `windows` when set. */
static const struct lx_param_rule attn_rules[] = {
    {"windows", "tokens=0"},
    {"tokens", "tokens!=0"},
    {NULL, NULL},
};

static const char *attn_split(const void *params)
{
    const struct attn_params *p = params;
    return lx_corpus_split(p->corpus);
}

static int measure(const struct lx_task_ctx *ctx, const struct lx_spec *spec, long L, long row0,
                   const struct lx_ranges *rg, struct lx_diag *slot, struct lx_error *err)
{
    const struct attn_params *p = ctx->params;
    const struct lx_corpus_tokens *c;     /* the split in the model's tokens */
    const struct lx_tokenizer *tk = lx_tok_or_byte(ctx->tok);
    int rc = lx_corpus_tokens(&c, attn_split(p), tk, err);
    if (rc < 0)
        return rc;
    long cap = lx_window_cap(p->windows, p->tokens, L), nw = lx_tokens_windows(c, L, cap, NULL);
    if (nw == 0)
        return lx_err(err, LX_ERUN, "attn: no document of corpus '%s' has %ld %s tokens\n  hint: %s",
                      lx_corpus_choice(p->corpus), L, tk->ops->kind,
                      lx_corpus_too_short_hint(lx_corpus_choice(p->corpus)));
    struct lx_window *win = lx_xcalloc((size_t)nw, sizeof *win);
    lx_tokens_windows(c, L, cap, win);
    struct lx_acts a;
    if ((rc = lx_acts_alloc(&a, &ctx->model->arch, 1, (int)L, LX_ACTS_EVAL_ANSWER, err)) < 0) {
        free(win);
        return rc;
    }
    /* one window per pass: each (layer, head) sums its rows into its slot, from the tiles */
    a.diag = slot;
    a.diag_ranges = rg;
    a.diag_buckets = 1;
    a.stats_row0 = &row0;
    int *tok = lx_xmalloc(sizeof(int) * (size_t)L);
    for (long w = 0; w < nw; w++) {
        const int *s = c->ids[win[w].doc] + win[w].off;
        lx_window_input(tok, s, L, ctx->begin_text ? -1 : lx_tok_begin(tk));     /* as the model was trained */
        lx_model_forward(ctx->model, spec, tok, NULL, &a);
    }
    free(tok);
    free(win);
    lx_acts_release(&a);
    return LX_OK;
}

static double ratio(double sum, double rows)
{
    return rows > 0 ? sum / rows : NAN;
}

static void metric_l(struct lx_result *out, const char *name, long layer, const char *range, double v)
{
    char buf[96];
    if (layer < 0)
        snprintf(buf, sizeof buf, "%s%s%s", name, range ? ":" : "", range ? range : "");
    else
        snprintf(buf, sizeof buf, "%s:l%ld%s%s", name, layer, range ? ":" : "", range ? range : "");
    lx_result_metric(out, buf, v);
}

/* Mean mass per distance bucket (each row's mass sums to 1 over the buckets). */
static void buckets(const struct lx_diag *d, double *m)
{
    for (int k = 0; k < LX_DIAG_BUCKETS; k++)
        m[k] = d->rows > 0 ? d->bucket[k] / d->rows : 0.0;
}

static void put_series(struct lx_result *out, const char *name, const double *m)
{
    for (int k = 0; k < LX_DIAG_BUCKETS; k++)
        if (m[k] > 0.0)
            lx_result_point(out, name, (double)lx_diag_bucket_start(k), m[k]);
}

/* The longest window measured: the distance ranges and buckets are checked up
** to it. A model trained at more (Llama 3.x: 131,072) has no training
** reference: its cells store no *_train metrics (docs/tasks.md#attn). */
#define MAX_LEN (1L << 16)

static int attn_run(const struct lx_task_ctx *ctx, struct lx_result *out, struct lx_error *err)
{
    const struct attn_params *p = ctx->params;
    long L = ctx->length, nl = ctx->model->arch.layers, H = ctx->model->arch.heads;
    struct lx_ranges rg = {0};      /* the ranges that fit inside L */
    for (int r = 0; r < p->ranges.n; r++)
        if (p->ranges.hi[r] <= L) {
            rg.lo[rg.n] = p->ranges.lo[r];
            rg.hi[rg.n++] = p->ranges.hi[r];
        }
    struct lx_diag *slot = lx_xcalloc((size_t)(nl * H), sizeof *slot);
    struct lx_diag *layer = lx_xcalloc((size_t)nl, sizeof *layer), all = {0}, ref = {0};
    long row0 = (long)ceil(p->from * (double)L);
    if (row0 >= L)
        row0 = L - 1;
    int rc = measure(ctx, ctx->spec, L, row0, &rg, slot, err);
    if (rc == LX_OK && p->reference && ctx->spec_train && ctx->train_len <= MAX_LEN) {
        long Lt = ctx->train_len, r0 = (long)ceil(p->from * (double)Lt);
        struct lx_ranges none = {0};
        struct lx_diag *rs = lx_xcalloc((size_t)(nl * H), sizeof *rs);
        rc = measure(ctx, ctx->spec_train, Lt, r0 < Lt ? r0 : Lt - 1, &none, rs, err);
        for (long k = 0; k < nl * H; k++)   /* a fixed order: layers, then heads */
            lx_diag_add(&ref, &rs[k]);
        free(rs);
    }
    if (rc == LX_OK) {
        for (long l = 0; l < nl; l++)
            for (long h = 0; h < H; h++)
                lx_diag_add(&layer[l], &slot[l * H + h]);
        for (long l = 0; l < nl; l++)
            lx_diag_add(&all, &layer[l]);
        char range[64];
        for (long l = -1; l < nl; l++) {    /* -1: every layer */
            const struct lx_diag *d = l < 0 ? &all : &layer[l];
            metric_l(out, "entropy", l, NULL, ratio(d->entropy, d->rows));
            metric_l(out, "pmax", l, NULL, ratio(d->pmax, d->rows));
            metric_l(out, "sink_mass", l, NULL, ratio(d->first, d->rows));
            if (ctx->spec->zsink.method)
                metric_l(out, "zerosink_mass", l, NULL, ratio(d->zsink, d->rows));
            for (int r = 0; r < rg.n; r++) {
                snprintf(range, sizeof range, "%ld-%ld", rg.lo[r], rg.hi[r]);
                metric_l(out, "range_entropy", l, range, ratio(d->range_entropy[r], d->range_rows[r]));
                metric_l(out, "range_mass", l, range, ratio(d->range_mass[r], d->range_rows[r]));
            }
        }
        double m[LX_DIAG_BUCKETS], mt[LX_DIAG_BUCKETS];
        buckets(&all, m);
        put_series(out, "mass_by_distance", m);
        if (ref.rows > 0) {
            buckets(&ref, mt);
            put_series(out, "mass_by_distance_train", mt);
            lx_result_metric(out, "entropy_train", ref.entropy / ref.rows);
            lx_result_metric(out, "pmax_train", ref.pmax / ref.rows);
            lx_result_metric(out, "js_train", lx_js_divergence(m, mt, LX_DIAG_BUCKETS));
        }
        lx_result_metric(out, "rows", all.rows);
    }
    free(slot);
    free(layer);
    return rc;
}

static int attn_check(const void *params, long length, struct lx_error *err)
{
    (void)params;
    if (length < 2 || length > MAX_LEN)
        return lx_err(err, LX_EINVAL, "attn: length %ld is outside [2, 65536]\n"
                      "  hint: the distance ranges and buckets are checked up to 65536 tokens", length);
    return LX_OK;
}

const struct lx_task lx_task_attn = {
    .name = "attn",
    .summary = "attention diagnostics on held-out text: entropy, max probability, range mass/entropy, "
               "JS divergence from the training-time attention (Chi et al. 2024; Anson et al. 2025; "
               "Zhong et al. 2024)",
    .schema = LX_SCHEMA(attn_rows, struct attn_params, attn_rules),
    .headline = "entropy,pmax,entropy_train,js_train",
    .mode = LX_MODE_CAUSAL, .unseeded = 1,  /* fixed windows */
    .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL,
    .needs_probs = 0,   /* its statistics are summed from the tiles (O(T·d)) */
    .answers_only = 1,  /* no logits: its passes have no targets, so no head runs */
    .split = attn_split,
    .check = attn_check,
    .run = attn_run,
};
