/*
** tasks/retrieval.c - answers, scorers and the cell runner shared by the
** retrieval tasks (see retrieval.h).
*/
#include "tasks/retrieval.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/data/corpus.h"
#include "harness/engine/kernels/attention.h"
#include "harness/engine/model/decoding.h"
#include "harness/engine/model/model.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/core/rng.h"
#include "tasks/preset.h"
#include "tasks/task.h"

/* ---- scorers --------------------------------------------------------------- */

/* Is the run of digits at p (n of them) gold's integer? As the peers'
** int(...) == key reads it: leading zeros do not count ("048213" is 48213). */
static int digits_are(const char *p, long n, const char *gold)
{
    size_t g = strlen(gold);
    while (n > 1 && *p == '0')
        p++, n--;
    while (g > 1 && *gold == '0')
        gold++, g--;
    return (size_t)n == g && memcmp(p, gold, g) == 0;
}

static long digit_run(const char *p, long left)
{
    long n = 0;
    while (n < left && isdigit((unsigned char)p[n]))
        n++;
    return n;
}

int lx_answer_first_int(const char *output, long n, const char *gold)
{
    long i = 0;
    while (i < n && !isdigit((unsigned char)output[i]))
        i++;
    if (i == n)
        return -1;
    return digits_are(output + i, digit_run(output + i, n - i), gold);
}

int lx_answer_last_int(const char *output, long n, const char *gold)
{
    long last = -1, len = 0;
    for (long i = 0; i < n;) {
        if (!isdigit((unsigned char)output[i])) {
            i++;
            continue;
        }
        last = i;
        len = digit_run(output + i, n - i);
        i += len;
    }
    if (last < 0)
        return -1;
    return digits_are(output + last, len, gold);
}

/* The normal form of s[0, n) into out (n + 1 bytes): lowercase words of
** letters, digits and other non-punctuation bytes, the articles dropped,
** joined by single spaces (SQuAD's normalize_answer on ASCII). */
static size_t normalize(const char *s, size_t n, char *out)
{
    size_t k = 0, i = 0;
    while (i < n) {
        while (i < n && isspace((unsigned char)s[i]))
            i++;
        size_t w = k + (k > 0);     /* where this word starts in out */
        for (; i < n && !isspace((unsigned char)s[i]); i++)
            if (!ispunct((unsigned char)s[i]))
                out[w++] = (char)tolower((unsigned char)s[i]);
        size_t len = w - k - (k > 0);
        const char *word = out + w - len;
        int article = (len == 1 && word[0] == 'a') || (len == 2 && strncmp(word, "an", 2) == 0) ||
                      (len == 3 && strncmp(word, "the", 3) == 0);
        if (len > 0 && !article) {
            if (k > 0)
                out[k] = ' ';
            k = w;
        }
    }
    out[k] = '\0';
    return k;
}

int lx_answer_contains(const char *output, long n, const char *gold)
{
    long i = 0;
    while (i < n && isspace((unsigned char)output[i]))
        i++;
    const char *nl = memchr(output + i, '\n', (size_t)(n - i));
    size_t n_out = nl ? (size_t)(nl - output - i) : (size_t)(n - i), n_gold = strlen(gold);
    char *o = lx_xmalloc(n_out + 1), *g = lx_xmalloc(n_gold + 1);
    size_t ko = normalize(output + i, n_out, o), kg = normalize(gold, n_gold, g);
    int sc = ko == 0 ? -1 : 0;
    for (size_t j = 0; ko > 0 && j + kg <= ko && !sc; j++)     /* bytes: a 0 byte does not end o */
        sc = memcmp(o + j, g, kg) == 0;
    free(o);
    free(g);
    return sc;
}

int lx_answer_distractor(const struct lx_task *task, const void *params, const struct lx_instance *in,
                        const char *output, long n)
{
    if (in->n_alt <= 0)
        return -1;
    struct lx_instance as = *in;    /* the instance with a distractor as its gold */
    for (int j = 0; j < in->n_alt; j++) {
        memcpy(as.gold, in->alt[j], sizeof as.gold);
        if (task->score(params, &as, output, n) == 1)
            return j;
    }
    return -1;
}

/* ---- prose ------------------------------------------------------------------ */

int lx_prose_open(struct lx_prose *p, const char *split, double frac, struct lx_error *err)
{
    int rc = lx_corpus_get(&p->c, split, err);
    if (rc < 0)
        return rc;
    p->n = (long)(frac * (double)p->c->n_bytes);
    if (p->n < 1)
        return lx_err(err, LX_EINVAL, "corpus split '%s' has no text to draw prose from", split);
    return LX_OK;
}

void lx_prose_copy(const struct lx_prose *p, long off, long n, char *out)
{
    off = (off % p->n + p->n) % p->n;
    for (long k = 0; k < n;) {
        long o = off;
        int d = 0;
        while (o >= p->c->docs[d].n)    /* the document holding offset off */
            o -= p->c->docs[d++].n;
        long take = p->c->docs[d].n - o;
        take = take < p->n - off ? take : p->n - off;
        take = take < n - k ? take : n - k;
        memcpy(out + k, p->c->docs[d].bytes + o, (size_t)take);
        k += take;
        off = (off + take) % p->n;
    }
}

int lx_prose_boundary(const char *s, long i)
{
    if (i < 1 || isspace((unsigned char)s[i]) || islower((unsigned char)s[i]))
        return 0;
    if (s[i - 1] == '\n')
        return 1;
    if (s[i - 1] != ' ' || i < 2)
        return 0;
    char c = s[i - 2];
    if ((c == '"' || c == '\'') && i >= 3)
        c = s[i - 3];
    return c == '.' || c == '!' || c == '?';
}

long lx_prose_sentence(const struct lx_prose *p, long off)
{
    enum { W = 4096, BACK = 3 };    /* a window, and the bytes lx_prose_boundary looks back */
    char buf[W];
    for (long base = 0; base < p->n; base += W - BACK) {
        long at = off + base - BACK;
        lx_prose_copy(p, at, W, buf);
        for (long i = BACK; i < W; i++)
            if (lx_prose_boundary(buf, i))
                return ((at + i) % p->n + p->n) % p->n;
    }
    return (off % p->n + p->n) % p->n;
}

long lx_prose_nearest(const char *s, long n, double x)
{
    double target = x * (double)n;
    long best = 0;
    for (long i = 1; i <= n; i++)
        if ((i == n || lx_prose_boundary(s, i)) && fabs((double)i - target) < fabs((double)best - target))
            best = i;
    return best;
}

/* ---- answers ----------------------------------------------------------------- */

/* How the greedy tokens after a miss are produced, and the buffers for it. */
struct greedy {
    enum lx_decode mode;    /* LX_DECODE_CACHE unless asked for the reference, or no cache fits */
    struct lx_kvcache c;    /* cache: the teacher-forced pass's rows, one slot per window */
    float *lg;              /* cache: (V) one step's logits */
    struct lx_acts one;     /* full: a pass over one window, allocated on the first miss */
    int *buf;               /* full: (T) the instance with its greedy tokens so far */
    struct lx_pilot pilot;  /* cache: the team or one thread for the steps of every instance */
};

/* Greedy continuation of one instance from answer token k on, where the
** teacher-forced argmax first differed from the gold token, through the one
** decode loop (lx_decode_continue). The cache's slot b holds the
** teacher-forced pass's rows, and rows before answer_off + k are the greedy
** prefix's own, so each further token is one decode step. The reference
** writes the greedy token into a copy of the instance and runs a full pass
** for the next one (causal attention never looks ahead, so the rest of the
** buffer does not matter). */
static int continue_greedy(const struct lx_model *m, const struct lx_spec *spec, const struct lx_instance *in,
                           struct lx_answer *a, int k, struct greedy *g, int b, struct lx_error *err)
{
    int rc = g->mode == LX_DECODE_CACHE || g->one.B ? LX_OK : lx_acts_alloc(&g->one, &m->arch, 1, (int)in->n, 0, err);
    if (rc < 0)
        return rc;
    struct lx_decoder d = {.mode = g->mode, .c = &g->c, .slot = b, .one = &g->one, .buf = g->buf, .lg = g->lg,
                           .pilot = &g->pilot};
    if (g->mode == LX_DECODE_FULL)
        memcpy(g->buf, in->tok, sizeof(int) * (size_t)in->n);
    rc = lx_decode_continue(m, spec, &d, in->answer_off, a->out, k, in->n - in->answer_off, err);
    if (g->mode == LX_DECODE_CACHE)
        a->decoded += (int)d.steps;
    else
        a->forwards += (int)d.steps;
    return rc;
}

/* Window b of a teacher-forced pass (B windows, row statistics st): the
** answer's log p, teacher-forced argmaxes and answer-row entropy; returns the
** first answer token whose argmax is not the gold one, -1 when none. */
static int read_answer(const struct lx_model *m, const struct lx_acts *a, const double *st, int b,
                       const struct lx_instance *x, struct lx_answer *ans)
{
    long V = m->arch.vocab, L = m->arch.layers, H = m->arch.heads, T = a->T;
    memset(ans, 0, sizeof *ans);
    ans->forwards = 1;
    ans->n_out = (int)(x->n - x->answer_off);
    int first_miss = -1;
    for (int k = 0; k < ans->n_out; k++) {
        long pos = (long)b * T + x->answer_off - 1 + k;
        ans->logprob -= a->loss[pos];
        ans->out[k] = lx_argmax(lx_acts_logits(a, pos), V);
        if (ans->out[k] != x->tok[x->answer_off + k] && first_miss < 0)
            first_miss = k;
    }
    ans->correct_tf = first_miss < 0;
    double ent = 0.0, rows = 0.0;   /* layers, then heads: a fixed order */
    for (long l = 0; l < L; l++)
        for (long h = 0; h < H; h++) {
            const double *sl = st + ((l * a->B + b) * H + h) * LX_ATTN_NSTATS;
            ent += sl[LX_ST_ENTROPY];
            rows += sl[LX_ST_ROWS];
        }
    ans->entropy = rows > 0 ? ent / rows : NAN;
    return first_miss;
}

_Static_assert(LX_MAX_ANSWER <= LX_ACTS_ANSWER_ROWS, "an answer pass keeps every answer row's logits");

/* Batch rows: tokens, targets (the answer only) and each window's first answer row. */
static void fill_batch(const struct lx_instance *in, int nb, int B, int T, int *tok, int *tgt, long *row0)
{
    for (int b = 0; b < B; b++) {   /* a short last batch repeats its last instance, unread */
        const struct lx_instance *x = &in[b < nb ? b : nb - 1];
        LX_ASSERT(x->n == T && x->n - x->answer_off <= LX_MAX_ANSWER && x->answer_off >= 1);
        memcpy(tok + (long)b * T, x->tok, sizeof(int) * (size_t)T);
        row0[b] = x->answer_off - 1;    /* the rows that predict its answer: answers differ in length */
        for (long t = 0; t < T; t++)    /* position t predicts token t + 1: score the answer only */
            tgt[(long)b * T + t] = t + 1 >= x->answer_off && t + 1 < T ? x->tok[t + 1] : -1;
    }
}

int lx_answer_eval(const struct lx_model *m, const struct lx_spec *spec, const struct lx_instance *in, long n,
                   enum lx_decode mode, struct lx_answer *out, struct lx_error *err)
{
    LX_ASSERT(m->arch.mode == LX_MODEL_CAUSAL);
    if (n < 1)
        return LX_OK;
    int T = (int)in[0].n;
    long V = m->arch.vocab, per = 8192 / T > 1 ? 8192 / T : 1, L = m->arch.layers, H = m->arch.heads;
    int B = (int)(n < per ? n : per);
    struct lx_acts a;
    struct greedy g = {.mode = mode};
    lx_pilot_start(&g.pilot, m);
    int rc = lx_acts_alloc(&a, &m->arch, B, T, LX_ACTS_EVAL_ANSWER, err);
    if (rc < 0)
        return rc;
    struct lx_error sub;    /* a cache that does not fit: the full passes instead */
    if (g.mode == LX_DECODE_CACHE && lx_kvcache_alloc(&g.c, &m->arch, spec, B, T, &sub) < 0)
        g.mode = LX_DECODE_FULL;
    a.kv = g.mode == LX_DECODE_CACHE ? &g.c : NULL;
    g.lg = lx_xmalloc(sizeof(float) * (size_t)V);
    g.buf = lx_xmalloc(sizeof(int) * (size_t)T);
    int *tok = lx_xmalloc(sizeof(int) * (size_t)B * T), *tgt = lx_xmalloc(sizeof(int) * (size_t)B * T);
    long *row0 = lx_xmalloc(sizeof(long) * (size_t)B);     /* (B,) each window's first answer row */
    double *st = lx_xmalloc(sizeof(double) * (size_t)(L * B * H * LX_ATTN_NSTATS));
    a.stats = st;
    a.stats_row0 = row0;
    a.stats_row1 = T - 1;
    for (long i0 = 0; i0 < n && rc == LX_OK; i0 += B) {
        int nb = (int)(n - i0 < B ? n - i0 : B);
        fill_batch(in + i0, nb, B, T, tok, tgt, row0);
        memset(st, 0, sizeof(double) * (size_t)(L * B * H * LX_ATTN_NSTATS));
        lx_model_forward(m, spec, tok, tgt, &a);
        if ((rc = lx_acts_check_finite(&a, V, nb, tgt, err)) < 0)
            break;
        for (int b = 0; b < nb && rc == LX_OK; b++) {
            int miss = read_answer(m, &a, st, b, &in[i0 + b], &out[i0 + b]);
            if (miss >= 0)
                rc = continue_greedy(m, spec, &in[i0 + b], &out[i0 + b], miss, &g, b, err);
        }
    }
    free(tok), free(tgt), free(row0), free(st), free(g.lg), free(g.buf);
    lx_acts_release(&a);
    lx_acts_release(&g.one);
    lx_kvcache_release(&g.c);
    return rc;
}

/* One group of instances on a backend that is not the engine: a scored
** window and a continuation each. */
static int answers_group(struct lx_lm *lm, const struct lx_instance *in, long n, struct lx_answer *out,
                         struct lx_error *err)
{
    int scored = (lm->caps & LX_LM_LOGPROBS) != 0, attn = (lm->caps & LX_LM_ATTN) != 0;
    struct lx_lm_score *w = lx_xcalloc((size_t)n, sizeof *w);
    struct lx_lm_gen *g = lx_xcalloc((size_t)n, sizeof *g);
    long T = in[0].n;
    float *loss = lx_xmalloc(sizeof(float) * (size_t)(n * T));
    for (long i = 0; i < n; i++) {
        const struct lx_instance *x = &in[i];
        LX_ASSERT(x->n == T && x->n - x->answer_off <= LX_MAX_ANSWER && x->answer_off >= 1);
        memset(&out[i], 0, sizeof out[i]);
        w[i] = (struct lx_lm_score){.tok = x->tok, .n = T, .attn_row0 = attn ? x->answer_off - 1 : -1,
                                    .loss = loss + i * T};
        g[i] = (struct lx_lm_gen){.prompt = x->tok, .n_prompt = x->answer_off, .max_tokens = T - x->answer_off,
                                  .out = out[i].out};
    }
    int rc = scored ? lm->ops->score(lm, w, n, err) : LX_OK;
    if (rc == LX_OK)
        rc = lm->ops->generate(lm, g, n, err);
    for (long i = 0; i < n && rc == LX_OK; i++) {
        const struct lx_instance *x = &in[i];
        struct lx_answer *a = &out[i];
        a->n_out = (int)g[i].n_out;
        a->logprob = scored ? 0.0 : NAN;
        a->correct_tf = scored;
        for (long k = 0; scored && k < T - x->answer_off; k++) {
            a->logprob -= w[i].loss[x->answer_off - 1 + k];
            a->correct_tf &= k < a->n_out && a->out[k] == x->tok[x->answer_off + k];
        }
        a->entropy = attn && w[i].attn_rows > 0 ? w[i].attn_entropy / w[i].attn_rows : NAN;
    }
    free(w), free(g), free(loss);
    return rc;
}

int lx_answer_lm(struct lx_lm *lm, const struct lx_instance *in, long n, struct lx_answer *out,
                 struct lx_error *err)
{
    if (lm->caps & LX_LM_ENGINE)
        return lx_answer_eval(lm->model, lm->spec, in, n, LX_DECODE_CACHE, out, err);
    int rc = LX_OK;
    for (long i0 = 0; i0 < n && rc == LX_OK; i0 += LX_LM_GROUP)
        rc = answers_group(lm, in + i0, n - i0 < LX_LM_GROUP ? n - i0 : LX_LM_GROUP, out + i0, err);
    return rc;
}

/* ---- the cell runner ------------------------------------------------------------ */

/* What a model trained without a start token (ctx->begin_text) reads at an
** instance's first position in place of BOS: a newline, where a text
** stream's documents meet (context only, as a text window's first token);
** *id stays -1 for other models. */
static int text_first(const struct lx_task_ctx *ctx, const struct lx_tokenizer *tk, int *id, struct lx_error *err)
{
    *id = -1;
    if (!ctx->begin_text)
        return LX_OK;
    int32_t *ids = NULL;
    long n = lx_tok_encode(tk, "\n", 1, &ids, err);
    if (n > 0)
        *id = ids[0];
    free(ids);
    return n < 0 ? (int)n : n == 0 ? lx_err(err, LX_EINVAL, "%s: the tokenizer encodes no newline, the token a "
                                                "model trained with begin: text reads first", ctx->task->name)
                                   : LX_OK;
}

/* Instance tokens made at once: a cell of many long instances (samples x depths at 2^20 tokens) is made,
** answered and scored a chunk at a time, never held whole (docs/config.md#memory). */
static long chunk_tokens = 1L << 24;

void lx_retrieval_set_chunk_tokens(long tokens)
{
    chunk_tokens = tokens > 0 ? tokens : 1L << 24;
}

/* Sums over a cell's answers, and over the current depth's (d_*). */
struct tally {
    long ok, nulls, with_alt, confused;
    double lp, ent, d_ok, d_lp, d_ent;
};

/* Instances [i0, i1) of the cell: sample i % samples at depth i / samples (the same keys at each depth, so
** depths compare paired), or with no depth grid a depth drawn per sample. */
static int make_chunk(const struct lx_task_ctx *ctx, const struct lx_tokenizer *tk, long samples, long depths,
                      int first, long i0, long i1, struct lx_instance *in, struct lx_error *err)
{
    int rc = LX_OK;
    for (long i = i0; i < i1 && rc == LX_OK; i++) {
        double depth = depths == 1 ? 0.5 : depths == 0 ? 0.0 : (double)(i / samples) / (double)(depths - 1);
        if (depths == 0) {  /* Philox on a salted cell key, the sample as counter: paired across methods */
            struct lx_rng r;
            lx_rng_init(&r, ctx->data_key ^ 0x756e69666f726dULL, (uint32_t)i, LX_RNG_DATA);
            depth = lx_rng_uniform(&r);
        }
        struct lx_instance *x = &in[i - i0];
        rc = lx_retrieval_instance(ctx->task, ctx->params, tk, ctx->data_key, ctx->length, i % samples, depth, x,
                                   err);
        if (rc == LX_OK && first >= 0) {
            LX_ASSERT(x->tok[0] == lx_tok_begin(tk));
            x->tok[0] = first;
        }
    }
    return rc;
}

/* Instances [i0, i1)'s answers scored as text (the greedy tokens decoded) into out and the tally, with
** the per-depth points at the end of each depth's samples. */
static void score_chunk(const struct lx_task_ctx *ctx, const struct lx_tokenizer *tk, long samples, int uniform,
                        long i0, long i1, const struct lx_instance *in, const struct lx_answer *ans, char *text,
                        struct tally *t, struct lx_result *out)
{
    const struct lx_task *task = ctx->task;
    for (long i = i0; i < i1; i++) {
        const struct lx_instance *x = &in[i - i0];
        const struct lx_answer *a = &ans[i - i0];
        int stop;
        long n_text = lx_tok_decode(tk, a->out, a->n_out, text, &stop);
        int sc = task->score(ctx->params, x, text, n_text);
        lx_result_output(out, i, x->depth, x->gold, text, n_text, lx_tok_special_name(tk, stop), sc, a->logprob);
        t->ok += sc == 1;
        t->nulls += sc < 0;
        t->with_alt += x->n_alt > 0;
        t->confused += x->n_alt > 0 && sc != 1 && lx_answer_distractor(task, ctx->params, x, text, n_text) >= 0;
        t->lp += a->logprob, t->ent += a->entropy;
        t->d_ok += sc == 1, t->d_lp += a->logprob, t->d_ent += a->entropy;
        if (!uniform && (i + 1) % samples == 0) {   /* the end of one depth's samples */
            lx_result_point(out, "acc_by_depth", x->depth, t->d_ok / (double)samples);
            if (!isnan(t->d_lp))    /* a backend without prompt log-probs or attention: not stored */
                lx_result_point(out, "logprob_by_depth", x->depth, t->d_lp / (double)samples);
            if (!isnan(t->d_ent))
                lx_result_point(out, "entropy_by_depth", x->depth, t->d_ent / (double)samples);
            t->d_ok = t->d_lp = t->d_ent = 0.0;
        }
    }
}

/* The cell's metrics from the tally of its n answers. */
static void put_metrics(const struct tally *t, long n, struct lx_result *out)
{
    double acc = (double)t->ok / (double)n;
    lx_result_metric(out, "acc", acc);
    lx_result_metric(out, "acc_se", sqrt(acc * (1.0 - acc) / (double)n));
    lx_result_metric(out, "null_rate", (double)t->nulls / (double)n);
    if (t->with_alt > 0)
        lx_result_metric(out, "distractor_rate", (double)t->confused / (double)t->with_alt);
    if (!isnan(t->lp))
        lx_result_metric(out, "answer_logprob", t->lp / (double)n);
    if (!isnan(t->ent))
        lx_result_metric(out, "answer_entropy", t->ent / (double)n);
    lx_result_metric(out, "n_samples", (double)n);
}

long lx_retrieval_chunk(long n, long T)
{
    long per = 8192 / T > 1 ? 8192 / T : 1, k = chunk_tokens / T / per;     /* per: the engine's batch */
    long c = (k > 1 ? k : 1) * per;
    return n < c ? n : c;
}

int lx_retrieval_run(const struct lx_task_ctx *ctx, struct lx_result *out, struct lx_error *err)
{
    const struct lx_task *task = ctx->task;
    const struct lx_tokenizer *tk = lx_tok_or_byte(ctx->tok);
    LX_ASSERT(task->generate && task->trials && task->score);
    long samples, depths;
    task->trials(ctx->params, &samples, &depths);
    int uniform = depths == 0;      /* a depth drawn per sample instead of a grid */
    long n = uniform ? samples : samples * depths, C = lx_retrieval_chunk(n, ctx->length);
    struct lx_instance *in = lx_xcalloc((size_t)C, sizeof *in);
    struct lx_answer *ans = lx_xcalloc((size_t)C, sizeof *ans);
    char *text = lx_xmalloc((size_t)lx_tok_decode_cap(tk, LX_MAX_ANSWER));
    struct tally t = {0};
    struct lx_lm local, *lm = lx_lm_or_local(ctx->lm, &local, ctx->model, ctx->spec);
    int first, rc = text_first(ctx, tk, &first, err);
    for (long i0 = 0; i0 < n && rc == LX_OK; i0 += C) {
        long i1 = i0 + C < n ? i0 + C : n;
        rc = make_chunk(ctx, tk, samples, depths, first, i0, i1, in, err);
        if (rc == LX_OK)
            rc = lx_answer_lm(lm, in, i1 - i0, ans, err);
        if (rc == LX_OK)
            score_chunk(ctx, tk, samples, uniform, i0, i1, in, ans, text, &t, out);
        for (long i = 0; i < C; i++)
            lx_instance_release(&in[i]);
    }
    if (rc == LX_OK)
        put_metrics(&t, n, out);
    free(text);
    free(in);
    free(ans);
    return rc;
}

int lx_retrieval_check_length(const char *task, long length, struct lx_error *err)
{
    if (length <= LX_MAX_RETRIEVAL_LENGTH)
        return LX_OK;
    return lx_err(err, LX_EINVAL, "%s: length %ld is more than the %ld tokens a retrieval instance may have\n"
                  "  hint: use a length of at most %ld", task, length, LX_MAX_RETRIEVAL_LENGTH,
                  LX_MAX_RETRIEVAL_LENGTH);
}

/* ---- the skeleton ------------------------------------------------------------- */

long lx_put_bytes(int *tok, long pos, const char *s, long n)
{
    for (long i = 0; i < n; i++)
        tok[pos + i] = (unsigned char)s[i];
    return pos + n;
}

void lx_draw_distinct(struct lx_rng *r, int n, long k, int *out)
{
    int perm[64];
    LX_ASSERT(n <= 64 && k <= n);
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = 0; i < k; i++) {
        int j = i + (int)(lx_rng_uniform(r) * (n - i)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        out[i] = perm[i];
    }
}

long lx_put_text(int *tok, long pos, const char *s)
{
    return lx_put_bytes(tok, pos, s, (long)strlen(s));
}

static int one_depth(const struct lx_retrieval *r)
{
    return r->depths_at == LX_RETRIEVAL_ONE_DEPTH;
}

static long param_long(const void *params, size_t at)
{
    long v;
    memcpy(&v, (const char *)params + at, sizeof v);
    return v;
}

/* The instance at `at`: checks, then the tokens, then the task's make. */
static int make_instance(const struct lx_retrieval *r, const void *params, const struct lx_retrieval_at *at,
                         struct lx_instance *out, struct lx_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = r->check(params, at->length, err);
    if (rc < 0)
        return rc;
    if (one_depth(r) && at->sample < 0)
        return lx_err(err, LX_EINVAL, "%s: sample %ld must be >= 0", r->name, at->sample);
    if (!one_depth(r) && (!(at->depth >= 0.0 && at->depth <= 1.0) || at->sample < 0))
        return lx_err(err, LX_EINVAL, "%s: depth %g must lie in [0, 1] and sample %ld be >= 0", r->name, at->depth,
                      at->sample);
    out->tok = malloc((size_t)at->length * sizeof *out->tok);
    if (!out->tok)
        return lx_err(err, LX_ENOMEM, "%s: no memory for an instance of %ld tokens", r->name, at->length);
    out->n = at->length;
    if ((rc = r->make(params, at, out, err)) < 0) {
        lx_instance_release(out);
        memset(out, 0, sizeof *out);
        return rc;
    }
    out->depth = one_depth(r) ? 0.0 : at->depth;
    return LX_OK;
}

static long param_long(const void *params, size_t at);

/* The protocol rows of params, or NULL for a task without presets. */
static const struct lx_preset_params *preset_rows(const struct lx_retrieval *r, const void *params)
{
    return r->preset_at ? (const void *)((const char *)params + r->preset_at) : NULL;
}

/* The preset governing params (1, *p set), none (0), or an error. */
static int preset_of(const struct lx_retrieval *r, const void *params, const struct lx_protocol **p,
                     const char **data, struct lx_error *err)
{
    const struct lx_preset_params *pp = preset_rows(r, params);
    const char *name = pp ? r->protocols[pp->protocol] : "lenx";
    *data = pp ? pp->data : "";
    return lx_preset_check(r->name, name, *data, p, err);
}

int lx_retrieval_check_protocol(const struct lx_retrieval *r, const void *params, long length,
                                struct lx_error *err)
{
    const struct lx_protocol *p;
    const char *data;
    int rc = preset_of(r, params, &p, &data, err);
    if (rc > 0 && p->check && (rc = p->check(length, err)) == LX_OK)
        rc = 1;
    return rc;
}

int lx_retrieval_check_params(const struct lx_retrieval *r, const void *params, const char **row,
                              struct lx_error *err)
{
    const struct lx_protocol *p;
    const char *data;
    int rc = preset_of(r, params, &p, &data, err);
    *row = data[0] ? "data" : "protocol";
    return rc < 0 ? rc : LX_OK;
}

int lx_retrieval_run_with(const struct lx_retrieval *r, const struct lx_task_ctx *ctx, struct lx_result *out,
                          struct lx_error *err)
{
    const struct lx_protocol *p;
    const char *data;
    int rc = preset_of(r, ctx->params, &p, &data, err);
    if (rc > 0 && ctx->begin_text)
        return lx_err(err, LX_EINVAL, "%s: protocol %s lays its prompt out as its peer does, start token first, "
                      "and this model was trained without one (train: begin: text)\n  hint: protocol lenx reads "
                      "such a model's instances with a newline first", r->name, p->name);
    return rc < 0 ? rc : rc ? lx_preset_run(ctx, p, data, param_long(ctx->params, r->samples_at), out, err)
                        : lx_retrieval_run(ctx, out, err);
}

int lx_retrieval_generate(const struct lx_retrieval *r, const void *params, uint64_t key, long length, long sample,
                          double depth, struct lx_instance *out, struct lx_error *err)
{
    const struct lx_protocol *p;
    const char *data;
    int rc = preset_of(r, params, &p, &data, err);
    if (rc != 0)    /* a preset's test case, whatever the length */
        return rc < 0 ? rc : lx_preset_instance(p, data, key, length, param_long(params, r->samples_at), sample, out,
                                                err);
    struct lx_retrieval_at at = {.key = key, .length = length, .sample = sample, .depth = depth, .split = "test",
                                 .frac = 1.0};
    return make_instance(r, params, &at, out, err);
}

/* A training window: the same task at the training length, over the first
** train_frac of the training split, its depth uniform (Philox on the task's
** salted key, independent of the instance's own draws). */
int lx_retrieval_train_sample(const struct lx_retrieval *r, const void *params, uint64_t key, long length,
                              long sample, struct lx_instance *out, struct lx_error *err)
{
    struct lx_retrieval_at at = {.key = key, .length = length, .sample = sample, .split = "train",
                                 .frac = r->train_frac};
    if (r->train_salt) {
        struct lx_rng g;
        lx_rng_init(&g, key ^ r->train_salt ^ (uint64_t)((unsigned long)sample >> 32), (uint32_t)sample,
                    LX_RNG_DATA);
        at.depth = lx_rng_uniform(&g);
    }
    return make_instance(r, params, &at, out, err);
}

void lx_retrieval_trials(const struct lx_retrieval *r, const void *params, long *samples, long *depths)
{
    const struct lx_preset_params *pp = preset_rows(r, params);
    if (pp && pp->protocol) {
        *samples = 0, *depths = 1;      /* a preset's test cases: an output's sample is its case */
        return;
    }
    *samples = param_long(params, r->samples_at);
    *depths = one_depth(r) ? 1 : param_long(params, r->depths_at);
}

int lx_retrieval_score(const struct lx_retrieval *r, const void *params, const struct lx_instance *in,
                       const char *output, long n)
{
    return r->scorer ? r->scorer(output, n, in->gold) : r->score(params, in, output, n);
}

const char *lx_retrieval_split(const void *params)
{
    (void)params;
    return "test";
}

/* ---- instances in any tokenizer's tokens ----------------------------------------
** The task's generate hook at (key, sample, depth), fitted to the tokenizer
** by the engine (harness/engine/data/instance.c has how). */

struct gen_at {
    const struct lx_task *task;
    const void *params;
    uint64_t key;
    long sample;
    double depth;
};

static int gen_bytes(void *ctx, long B, struct lx_instance *out, struct lx_error *err)
{
    const struct gen_at *g = ctx;
    return g->task->generate(g->params, g->key, B, g->sample, g->depth, out, err);
}

int lx_retrieval_instance(const struct lx_task *task, const void *params, const struct lx_tokenizer *tk,
                          uint64_t key, long length, long sample, double depth, struct lx_instance *out,
                          struct lx_error *err)
{
    struct gen_at g = {.task = task, .params = params, .key = key, .sample = sample, .depth = depth};
    struct lx_instance_src src = {.name = task->name, .bytes = gen_bytes, .ctx = &g};
    return lx_instance_fit(&src, tk, length, out, err);
}
