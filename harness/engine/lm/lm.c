/*
** harness/engine/lm/lm.c - the language-model interface (lm.h) and its local
** implementation: lenx's engine on one model and one compiled stack.
*/
#include "harness/engine/lm/lm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/ops.h"
#include "harness/engine/model/decoding.h"
#include "harness/engine/model/model.h"

/* ---- the engine ------------------------------------------------------------ */

/* Row t's k most likely next tokens (logits z, V of them) into id, lp;
** own = the window's next token, whose log-probability is -own_loss. */
static void top_tokens(const float *z, long V, int k, int own, float own_loss, int *id, float *lp)
{
    double mx = z[0], s = 0.0;
    for (long v = 1; v < V; v++)
        mx = z[v] > mx ? z[v] : mx;
    for (long v = 0; v < V; v++)
        s += exp((double)z[v] - mx);
    double lse = mx + log(s);
    int n = 0;
    for (long v = 0; v < V; v++) {      /* insertion into the k best so far: k <= 20 */
        if (n == k && !(z[v] > z[id[k - 1]]))
            continue;
        int j = n < k ? n++ : k - 1;
        while (j > 0 && z[v] > z[id[j - 1]]) {
            id[j] = id[j - 1];
            j--;
        }
        id[j] = (int)v;
    }
    for (int j = 0; j < n; j++)
        lp[j] = id[j] == own ? -own_loss : (float)((double)z[id[j]] - lse);
}

/* decoding.h's sampler for an lm request's sampling. */
static struct lx_sampler sampler_of(const struct lx_lm_sampling *s)
{
    return (struct lx_sampler){.temperature = s->temperature, .top_k = s->top_k, .seed = s->seed};
}

/* A window's pass as lm.c reads it: the window, the scratch of a draw after
** it, and that token's loss. */
struct scoring {
    struct lx_lm_score *w;
    double *p;              /* (V) lx_sample's scratch, with w->draw */
    float last_loss;        /* with w->draw: the drawn token's */
};

/* Each row's top tokens from a block of logits as the head leaves it, and
** with a draw the token after the window from its last row: lx_sample with
** key 0 (decoding.c's first token), its loss by the cross-entropy that gives
** every other row's, so both are the bits a continuation and a score of the
** window with the token give (in portable numerics). */
static void top_block(void *ctx, const struct lx_acts *a, long r0, long n, const float *logits)
{
    struct scoring *x = ctx;
    struct lx_lm_score *w = x->w;
    long V = a->arch.vocab, last = w->n - 1;
    int k = w->top_k < V ? w->top_k : (int)V;
    for (long t = r0; k > 0 && t < r0 + n && t < last; t++)
        top_tokens(logits + (t - r0) * V, V, k, w->tok[t + 1], a->loss[t], w->top_id + t * w->top_k,
                   w->top_lp + t * w->top_k);
    if (w->draw && last >= r0 && last < r0 + n) {
        const float *z = logits + (last - r0) * V;
        struct lx_sampler s = sampler_of(w->draw);
        w->drawn = lx_sample(z, V, &s, 0, x->p);
        lx_crossentropy_forward(&x->last_loss, NULL, z, &w->drawn, 1, (int)V);
        if (k > 0)
            top_tokens(z, V, k, w->drawn, x->last_loss, w->top_id + last * w->top_k, w->top_lp + last * w->top_k);
    }
}

/* One window on the engine: a pass of B = 1 over its n tokens, targets the
** next tokens, and the attention statistics of rows [attn_row0, n - 1). The
** pass reads losses only (LX_ACTS_EVAL_LOSS): the top tokens come from each
** block of logits in turn, so a window of n tokens holds LX_EVAL_ROWS rows
** of logits, not n (at Llama-3's vocabulary 0.5 MB a token). */
static int local_score_one(const struct lx_model *m, const struct lx_spec *spec, struct lx_lm_score *w,
                           struct lx_error *err)
{
    long L = m->arch.layers, H = m->arch.heads, n = w->n;
    struct lx_acts a;
    int rc = lx_acts_alloc(&a, &m->arch, 1, (int)n, LX_ACTS_EVAL_LOSS, err);
    if (rc < 0)
        return rc;
    int *tgt = lx_xmalloc(sizeof(int) * (size_t)n);
    for (long t = 0; t < n; t++)
        tgt[t] = t + 1 < n ? w->tok[t + 1] : -1;
    double *st = w->attn_row0 >= 0 ? lx_xcalloc((size_t)(L * H * LX_ATTN_NSTATS), sizeof(double)) : NULL;
    long row0 = w->attn_row0;
    struct scoring x = {.w = w, .p = w->draw ? lx_xmalloc(sizeof(double) * (size_t)m->arch.vocab) : NULL};
    a.stats = st;
    a.stats_row0 = st ? &row0 : NULL;
    a.stats_row1 = st ? n - 1 : 0;
    a.on_logits = w->top_k > 0 || w->draw ? top_block : NULL;
    a.on_logits_ctx = &x;
    lx_model_forward(m, spec, w->tok, tgt, &a);
    rc = lx_acts_check_finite(&a, m->arch.vocab, 1, tgt, err);
    if (rc == LX_OK) {
        memcpy(w->loss, a.loss, sizeof(float) * (size_t)n);
        w->loss[n - 1] = w->draw ? x.last_loss : 0.0f;
        w->attn_entropy = w->attn_rows = 0.0;
        for (long l = 0; st && l < L; l++)      /* layers, then heads: the order retrieval.c sums in */
            for (long h = 0; h < H; h++) {
                w->attn_entropy += st[(l * H + h) * LX_ATTN_NSTATS + LX_ST_ENTROPY];
                w->attn_rows += st[(l * H + h) * LX_ATTN_NSTATS + LX_ST_ROWS];
            }
    }
    free(x.p);
    free(tgt);
    free(st);
    lx_acts_release(&a);
    return rc;
}

static int local_score(struct lx_lm *lm, struct lx_lm_score *w, long n, struct lx_error *err)
{
    int rc = LX_OK;
    for (long i = 0; i < n && rc == LX_OK; i++)
        rc = w[i].n < 2 ? lx_err(err, LX_EINVAL, "a window to score needs at least 2 tokens, not %ld", w[i].n)
                        : local_score_one(lm->model, lm->spec, &w[i], err);
    return rc;
}

static int local_generate(struct lx_lm *lm, struct lx_lm_gen *g, long n, struct lx_error *err)
{
    int rc = LX_OK;
    for (long i = 0; i < n && rc == LX_OK; i++) {
        struct lx_sampler s = sampler_of(&g[i].smp);
        struct lx_gen_sink sink = g[i].sink ? *g[i].sink : (struct lx_gen_sink){0};
        sink.pilot = sink.pilot ? sink.pilot : &lm->pilot;
        rc = lx_generate_stream(lm->model, lm->spec, g[i].prompt, g[i].n_prompt, g[i].max_tokens, g[i].out,
                                LX_DECODE_CACHE, &s, &sink, &g[i].n_out, err);
    }
    return rc;
}

static const struct lx_lm_ops local_ops = {.score = local_score, .generate = local_generate};

void lx_lm_local(struct lx_lm *lm, const struct lx_model *m, const struct lx_spec *spec)
{
    memset(lm, 0, sizeof *lm);
    lm->ops = &local_ops;
    lm->caps = LX_LM_GENERATE | LX_LM_LOGPROBS | LX_LM_ATTN | LX_LM_ENGINE;
    snprintf(lm->what, sizeof lm->what, "lenx's engine");
    lm->model = m;
    lm->spec = spec;
    lx_pilot_start(&lm->pilot, m);
}

struct lx_lm *lx_lm_or_local(struct lx_lm *lm, struct lx_lm *tmp, const struct lx_model *m,
                             const struct lx_spec *spec)
{
    if (lm)
        return lm;
    lx_lm_local(tmp, m, spec);
    return tmp;
}

/* ---- what every backend shares --------------------------------------------- */

const char *lx_lm_cap_name(unsigned cap)
{
    switch (cap) {
    case LX_LM_GENERATE:
        return "continuations";
    case LX_LM_LOGPROBS:
        return "prompt log-probabilities (echo with logprobs)";
    case LX_LM_ATTN:
        return "attention statistics";
    default:
        return "lenx's engine (logits, attention rows, training)";
    }
}

int lx_lm_require(const struct lx_lm *lm, unsigned caps, const char *task, struct lx_error *err)
{
    for (unsigned c = 1; c <= LX_LM_ENGINE; c <<= 1)
        if ((caps & c) && !(lm->caps & c))
            return lx_err(err, LX_EINVAL, "%s needs %s, which %s cannot give\n  hint: %s", task, lx_lm_cap_name(c),
                          lm->what, c == LX_LM_LOGPROBS ? "use a server that returns prompt log-probabilities "
                          "(vLLM, lenx serve), or a generation task" : "run it on a model lenx loads itself "
                          "(checkpoint: or hf:)");
    return LX_OK;
}

int lx_lm_eval_windows(struct lx_lm *lm, long n_windows, int T, lx_eval_fill fill, lx_eval_score score, void *ctx,
                       struct lx_error *err)
{
    if (lm->caps & LX_LM_ENGINE)
        return lx_eval_windows(lm->model, lm->spec, n_windows, T, 0, fill, score, ctx, err);
    int rc = lx_lm_require(lm, LX_LM_LOGPROBS, "scoring a window", err);
    long G = n_windows < LX_LM_GROUP ? n_windows : LX_LM_GROUP;
    int *tok = lx_xmalloc(sizeof(int) * (size_t)(G * (T + 1))), *tgt = lx_xmalloc(sizeof(int) * (size_t)(G * T));
    float *loss = lx_xmalloc(sizeof(float) * (size_t)(G * (T + 1)));
    struct lx_lm_score *w = lx_xcalloc((size_t)G + 1, sizeof *w);
    for (long w0 = 0; w0 < n_windows && rc == LX_OK; w0 += G) {
        long ng = n_windows - w0 < G ? n_windows - w0 : G;
        for (long i = 0; i < ng && rc == LX_OK; i++) {
            int *tk = tok + i * (T + 1), *tg = tgt + i * T;
            fill(ctx, w0 + i, tk, tg);
            long n = T;
            for (long t = 0; t + 1 < T; t++)
                if (tg[t] >= 0 && tg[t] != tk[t + 1])
                    rc = lx_err(err, LX_EINVAL, "window %ld scores token %d at row %ld, not the window's next "
                                "token %d: %s scores only a window's own tokens", w0 + i, tg[t], t, tk[t + 1],
                                lm->what);
            if (tg[T - 1] >= 0)     /* the last row's target extends the window by one token */
                tk[n++] = tg[T - 1];
            w[i] = (struct lx_lm_score){.tok = tk, .n = n, .attn_row0 = -1, .loss = loss + i * (T + 1)};
        }
        if (rc == LX_OK)
            rc = lm->ops->score(lm, w, ng, err);
        for (long i = 0; i < ng && rc == LX_OK; i++) {
            float *l = loss + i * (T + 1);
            int *tg = tgt + i * T;
            for (long t = 0; t < T; t++)
                l[t] = tg[t] >= 0 ? l[t] : 0.0f;
            score(ctx, w0 + i, l, NULL, tg);
        }
    }
    free(tok), free(tgt), free(loss), free(w);
    return rc;
}

static int stop_token(void *arg, long k, int id)
{
    struct lx_lm_stop *s = arg;
    size_t len;
    const char *p = lx_tok_piece(s->tk, id, &len);
    (void)k;
    if (!p)
        return !s->past_specials;
    lx_buf_putn(&s->text, p, len);
    return s->cut && s->text.len > 0 && s->cut(s->arg, s->text.s, (long)s->text.len) < (long)s->text.len;
}

void lx_lm_stop_init(struct lx_lm_stop *s, const struct lx_tokenizer *tk,
                     long (*cut)(const void *arg, const char *text, long n), const void *arg)
{
    *s = (struct lx_lm_stop){.sink = {.token = stop_token, .arg = s}, .tk = tk, .cut = cut, .arg = arg};
}

void lx_lm_stop_free(struct lx_lm_stop *s)
{
    lx_buf_free(&s->text);
}

int lx_lm_generate(struct lx_lm *lm, const int *prompt, long n_prompt, long n, const struct lx_lm_sampling *s,
                   const struct lx_gen_sink *sink, int *out, long *n_out, struct lx_error *err)
{
    struct lx_lm_gen g = {.prompt = prompt, .n_prompt = n_prompt, .max_tokens = n, .smp = *s, .out = out,
                          .sink = sink};
    int rc = lx_lm_require(lm, LX_LM_GENERATE, "a continuation", err);
    if (rc == LX_OK)
        rc = lm->ops->generate(lm, &g, 1, err);
    *n_out = g.n_out;
    return rc;
}
