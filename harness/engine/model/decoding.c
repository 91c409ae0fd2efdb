/*
** harness/engine/model/decoding.c - one token through the model against the
** KV cache, the sampler, and generation (see decoding.h).
*/
#include "harness/engine/model/decoding.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/rng.h"
#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/blas.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/ops.h"
#include "harness/engine/kernels/share.h"

/* Attention of the step's query row (c->qkv) over the cached rows [0, pos]
** of (slot, layer), every head, into c->ao (on the step's one thread). A
** half cache's rows of a key/value head are widened once for its G query
** heads (c->wide, row stride D), and a ring's gathered to their positions'
** rows: only the rows the row reads, the sinks and the window [lo, pos] (a
** local layer's 512 or 1,024 of Gemma 3's, StreamingLLM's S + R + 1, not all).
** The key/value heads are shared among the step's threads (share.h), each with its own
** scratch (c->n_scr of them); a head's rows are one thread's sums either way.
** A key/value head's G query heads read its keys and values once in fast
** numerics (lx_attn_rows_forward), a half cache's as stored. */
static void attend(struct lx_kvcache *c, const struct lx_spec *spec, int global, const float *mult, int slot, int layer,
                   long pos, int H)
{
    int KV = c->KV, D = c->D, G = H / KV;
    int far = c->kfar && global;
    const double *dtab = global ? c->dtab : NULL;   /* a local layer's spec has no distance op */
    int half = lx_attn_half() ? c->half : 0;    /* q and p rounded as llama.cpp's half cache has them */
    if (global)
        lx_kvcache_dist(c, spec, H, pos + 1);
    long lo, hi;
    lx_spec_row_keys(spec, pos, pos + 1, 1, &lo, &hi);
    long ns = spec->vis.sinks < lo ? spec->vis.sinks : lo;     /* as lx_attn_row_forward reads them */
    /* a ring still holds the sinks and the window: not rewound past what it kept (LX_KVCACHE_REWIND) */
    LX_ASSERT(c->cap[layer] == c->T || (ns <= c->keep[layer] && lx_kvcache_holds(c, slot, layer, lo)));
    /* fast numerics read a half cache's rows in place (no far keys, not a ring); else they are widened */
    int inplace = c->half && !far && c->cap[layer] == c->T && lx_numerics_get() == LX_NUMERICS_FAST;
    int nt = omp_get_max_threads() < c->n_scr ? omp_get_max_threads() : c->n_scr, team = nt < KV ? nt : KV;
    struct lx_share sh;     /* whole heads, a thread's own first (share.h) */
    lx_share_init(&sh, KV, 1, team);
#pragma omp parallel num_threads(team) if (nt > 1 && KV > 1)
    for (long g0, g1; lx_share_next(&sh, omp_get_thread_num(), &g0, &g1);) {
        int g = (int)g0;
        const void *k, *v;
        const float *f = NULL;
        int ldh = D, th = omp_get_thread_num(), kvtype = LX_DT_F32;
        float *s = c->s + (long)th * G * c->T;
        long at = lx_kvcache_head_at(c, slot, layer, g);
        if (inplace) {      /* a half cache's rows as stored */
            k = c->kh + at, v = c->vh + at, kvtype = c->half;
        } else if (c->half || c->cap[layer] < c->T) {
            float *wk = c->wide + 3L * th * c->T * D, *wv = wk + (long)c->T * D, *wf = wv + (long)c->T * D;
            lx_kvcache_head(c, slot, layer, g, 0, ns, wk, wv);
            lx_kvcache_head(c, slot, layer, g, lo, pos + 1, wk, wv);
            if (far) {
                lx_kvcache_far_head(c, slot, layer, g, 0, ns, wf);
                lx_kvcache_far_head(c, slot, layer, g, lo, pos + 1, wf);
            }
            k = wk, v = wv, f = far ? wf : NULL;
        } else {
            k = c->k + at, v = c->v + at, f = far ? c->kfar + at : NULL;
        }
        lx_attn_rows_forward(c->ao + (long)g * G * D, c->qkv + (long)g * G * D, k, v, kvtype, f, ldh, spec, g * G, G,
                             mult, pos, D, s, c->T, c->tab + 2L * th * c->T, dtab, c->T, half);
    }
}

/* Whether a step of m runs on one thread when no pilot says (lx_pilot_force, else by the weights' size). */
static int solo_default(const struct lx_model *m)
{
    int forced = lx_pilot_forced();
    return forced == 0 || (forced < 0 && lx_model_held_bytes(m) < LX_DECODE_TEAM_BYTES);
}

void lx_pilot_start(struct lx_pilot *p, const struct lx_model *m)
{
    lx_pilot_init(p, solo_default(m), lx_pilot_forced() < 0 && omp_get_max_threads() > 1);
}

void lx_decode_step(float *logits, const struct lx_model *m, const struct lx_spec *spec, struct lx_kvcache *c,
                    int slot, long pos, int token)
{
    lx_decode_step_on(logits, m, spec, c, slot, pos, token, solo_default(m));
}

void lx_decode_step_on(float *logits, const struct lx_model *m, const struct lx_spec *spec_in, struct lx_kvcache *c,
                       int slot, long pos, int token, int solo)
{
    struct lx_spec local[2];
    const struct lx_spec *spec = lx_model_spec(m, spec_in, local);
    const struct lx_arch *ar = &m->arch;
    int C = (int)ar->d_model, H = (int)ar->heads, KV = c->KV, D = c->D, HD = H * D;
    int F = (int)ar->d_mlp, V = (int)ar->vocab, ipos = lx_kvcache_position(c, spec, pos);
    long KD = (long)KV * D;
    float eps = (float)ar->norm_eps;
    LX_ASSERT(slot >= 0 && slot < c->n_slots && pos >= 0 && pos <= c->len[slot] && pos < c->T);
    LX_ASSERT(token >= 0 && token < V && c->L == ar->layers && KV == lx_arch_kv(ar) && D == ar->d_head);
    /* One row is a few MFLOP even at 16k keys (attention O(T·D) a head, the
    ** rest O(d²)): one thread, since handing such small pieces to the team
    ** costs more than it saves, and far more on a loaded machine, where a
    ** barrier waits for the other threads to be scheduled. Past
    ** LX_DECODE_TEAM_BYTES of weights a step is a read of all of them, which
    ** one core's share of the memory bandwidth limits: the team reads them
    ** (an output of a product is one thread's sum in lenx's kernels and in
    ** sgemm, so the team changes no bit there). A pilot (pilot.h) picks by
    ** timing both. */
    int n_thr = omp_get_max_threads();
    if (solo)
        omp_set_num_threads(1);
    lx_embed(c->x, NULL, c->rstd, m, &token, 1);
    lx_rope_table_pos(c->cs, c->cs + D, &spec->rotary, &ipos, 1);     /* keys' row after the queries' */
    if (spec->local)                                                    /* then the local layers' */
        lx_rope_table_pos(c->cs + 2 * D, NULL, &spec->local->rotary, &ipos, 1);
    c->len[slot] = pos + 1;
    for (int l = 0; l < c->L; l++) {
        const struct lx_layer_w *W = &m->v.layer[l];
        struct lx_spec own;
        const struct lx_spec *ls = lx_model_layer_spec(m, spec, l, &own);
        int global = lx_spec_layer(spec, l) == spec;
        lx_norm_forward(ar, c->xn, c->rstd, c->x, W->attn_norm, W->attn_norm_b, 1);
        lx_layer_qkv(c->qkv, c->xn, W, ar, 1);
        lx_layer_qk_norm(c->qkv, NULL, NULL, W, ar, 1);
        lx_rope_apply(c->qkv, &ls->rotary, global ? c->cs : c->cs + 2 * D, ls->rotary.decay_scale ? c->cs + D : NULL,
                      1, 1, H, KV, D, +1);
        if (ls->cosine)
            lx_qk_normalize(c->qkv, NULL, 1, H, KV, D);
        if (lx_numerics_get() == LX_NUMERICS_BF16)     /* as the forward's (model.c) */
            lx_round_bf16_n(c->qkv, (size_t)(HD + 2 * KD));
        lx_kvcache_store(c, slot, l, pos, c->qkv + HD, c->qkv + HD + KD);
        if (c->kfar && global) {
            long *nf = &c->n_far[(long)slot * c->L + l];
            *nf = *nf < pos ? *nf : pos;    /* rows from pos on were another token's */
            lx_kvcache_far(c, spec, slot, l, lx_posmap_near_lo(&spec->posmap, pos));
        }
        attend(c, ls, global, W->logit_scale, slot, l, pos, H);
        memcpy(c->xm, c->x, sizeof(float) * (size_t)C);     /* xn (read by q|k|v) holds a post-norm's product */
        lx_layer_out(c->xm, c->xn, c->xn, c->rstd, c->ao, HD, W->mo, W->bo, W->attn_post, 1, HD, C, eps);
        lx_norm_forward(ar, c->xn, c->rstd, ar->parallel ? c->x : c->xm, W->mlp_norm, W->mlp_norm_b, 1);
        lx_layer_w13(c->h, c->xn, W, ar, 1);
        lx_mlp_act(ar, c->act, F, NULL, c->h, 1);
        memcpy(c->x, c->xm, sizeof(float) * (size_t)C);
        lx_layer_out(c->x, c->xn, c->xn, c->rstd, c->act, F, W->mw2, W->b2, W->mlp_post, 1, F, C, eps);
    }
    lx_norm_forward(ar, c->xn, c->rstd, c->x, m->v.norm, m->v.norm_b, 1);
    lx_head_logits(logits, c->xn, m, 1);
    omp_set_num_threads(n_thr);
}

/* ---- generation ---------------------------------------------------------------- */

static int by_value_down(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* The k-th largest of logits (V), sorted in p (V) scratch; -inf when k is 0 or >= V. */
static double kth_largest(const float *logits, long V, long k, double *p)
{
    if (k <= 0 || k >= V)
        return -INFINITY;
    for (long j = 0; j < V; j++)
        p[j] = logits[j];
    qsort(p, (size_t)V, sizeof *p, by_value_down);
    return p[k - 1];
}

int lx_sample(const float *logits, long V, const struct lx_sampler *s, long k, double *p)
{
    if (!s || s->temperature <= 0.0)
        return lx_argmax(logits, V);
    int best = lx_argmax(logits, V);
    double sum = 0.0, least = kth_largest(logits, V, s->top_k, p);
    for (long j = 0; j < V; j++)
        sum += p[j] = logits[j] < least ? 0.0 : exp(((double)logits[j] - logits[best]) / s->temperature);
    struct lx_rng r;
    lx_rng_init(&r, s->seed, (uint32_t)k, LX_RNG_SAMPLE);
    double u = lx_rng_uniform(&r) * sum, acc = 0.0;
    for (long j = 0; j < V; j++)
        if ((acc += p[j]) > u && p[j] > 0.0)
            return (int)j;
    return best;    /* u within rounding of the total */
}

/* The prompt's pass with the cache attached, then one step per token. */
int lx_decode_continue(const struct lx_model *m, const struct lx_spec *spec, struct lx_decoder *d, long pos0,
                       int *out, long k, long n, struct lx_error *err)
{
    long V = m->arch.vocab;
    struct lx_pilot own;
    struct lx_pilot *pl = d->pilot ? d->pilot : &own;
    if (!d->pilot)
        lx_pilot_start(&own, m);
    for (; k + 1 < n; k++) {
        const float *lg = d->lg;
        if (d->mode == LX_DECODE_CACHE) {
            double t0 = omp_get_wtime();
            lx_decode_step_on(d->lg, m, spec, d->c, d->slot, pos0 + k, out[k], lx_pilot_solo(pl));
            lx_pilot_told(pl, omp_get_wtime() - t0);
            int rc = lx_kvcache_check_range(d->c, err);
            if (rc < 0)
                return rc;
        } else {
            d->buf[pos0 + k] = out[k];
            lx_model_forward(m, spec, d->buf, NULL, d->one);
            int rc = lx_acts_check_finite(d->one, V, 1, NULL, err);
            if (rc < 0)
                return rc;
            lg = d->one->logits + (pos0 + k) * V;
        }
        d->steps++;
        out[k + 1] = lx_sample(lg, V, d->smp, k + 1, d->p);
        if (d->sink && d->sink->token && d->sink->token(d->sink->arg, k + 1, out[k + 1]))
            break;
    }
    d->n_out = k + 1 < n ? k + 2 : n;
    return LX_OK;
}

/* The first token from a pass over the prompt (its last row), then the rest
** by lx_decode_continue: the cache holds the prompt's rows, or the buffer the
** prompt followed by the tokens so far (the positions after them hold token
** 0: a causal model never reads them). With the cache the pass is an answer
** pass (LX_ACTS_EVAL_ANSWER) whose one scored row is the prompt's last: the
** head runs on that row alone and the pass holds its logits, not the
** prompt's (n_prompt, V); its loss against token 0 is computed and unread. */
static int generate(const struct lx_model *m, const struct lx_spec *spec, const int *prompt, long n_prompt, long n,
                    int *out, enum lx_decode mode, const struct lx_sampler *smp, const struct lx_gen_sink *sink,
                    long *n_out, struct lx_error *err)
{
    int cached = mode == LX_DECODE_CACHE;
    long V = m->arch.vocab, T = cached ? n_prompt : n_prompt + n - 1;
    struct lx_acts a;
    struct lx_kvcache c = {0};
    struct lx_decoder d = {.mode = mode, .c = &c, .one = &a, .smp = smp, .sink = sink,
                           .pilot = sink ? sink->pilot : NULL};
    int *last = NULL, *pos = NULL;
    int rc = lx_acts_alloc(&a, &m->arch, 1, (int)T, cached ? LX_ACTS_EVAL_ANSWER : LX_ACTS_EVAL, err);
    if (rc == LX_OK && cached)
        rc = lx_kvcache_alloc(&c, &m->arch, spec, 1, (int)(n_prompt + n - 1), err);
    if (rc == LX_OK) {
        d.buf = lx_xcalloc((size_t)T, sizeof *d.buf);
        memcpy(d.buf, prompt, sizeof(int) * (size_t)n_prompt);
        d.lg = lx_xmalloc(sizeof(float) * (size_t)V);
        d.p = lx_xmalloc(sizeof(double) * (size_t)V);
        a.kv = cached ? &c : NULL;
        if (cached && spec->pose.random) {      /* the prompt at the first of the cache's positions */
            pos = lx_xmalloc(sizeof(int) * (size_t)T);
            for (long t = 0; t < T; t++)
                pos[t] = lx_kvcache_position(&c, spec, t);
            a.pos = pos;
        }
        if (cached) {
            last = lx_xmalloc(sizeof(int) * (size_t)T);
            for (long t = 0; t < T; t++)
                last[t] = t + 1 < T ? -1 : 0;
        }
        lx_model_forward(m, spec, d.buf, last, &a);
        rc = lx_acts_check_finite(&a, V, 1, last, err);
    }
    if (rc == LX_OK) {
        out[0] = lx_sample(lx_acts_logits(&a, n_prompt - 1), V, smp, 0, d.p);
        a.kv = NULL;
        a.pos = NULL;
        d.n_out = 1;
        if (!sink || !sink->token || !sink->token(sink->arg, 0, out[0]))
            rc = lx_decode_continue(m, spec, &d, n_prompt, out, 0, n, err);
        *n_out = rc == LX_OK ? d.n_out : 0;   /* nothing counts as generated on an error */
    }
    free(last);
    free(pos);
    free(d.p);
    free(d.lg);
    free(d.buf);
    lx_acts_release(&a);
    lx_kvcache_release(&c);
    return rc;
}

int lx_generate(const struct lx_model *m, const struct lx_spec *spec, const int *prompt, long n_prompt, long n,
                int *out, enum lx_decode mode, struct lx_error *err)
{
    return lx_generate_with(m, spec, prompt, n_prompt, n, out, mode, NULL, err);
}

int lx_generate_with(const struct lx_model *m, const struct lx_spec *spec, const int *prompt, long n_prompt, long n,
                     int *out, enum lx_decode mode, const struct lx_sampler *s, struct lx_error *err)
{
    long n_out;
    return lx_generate_stream(m, spec, prompt, n_prompt, n, out, mode, s, NULL, &n_out, err);
}

int lx_generate_stream(const struct lx_model *m, const struct lx_spec *spec, const int *prompt, long n_prompt, long n,
                       int *out, enum lx_decode mode, const struct lx_sampler *s, const struct lx_gen_sink *sink,
                       long *n_out, struct lx_error *err)
{
    *n_out = 0;
    if (s && !(s->temperature >= 0.0 && s->temperature <= 1e6))
        return lx_err(err, LX_EINVAL, "temperature %g is not in [0, 1e6]", s->temperature);
    if (m->arch.mode != LX_MODEL_CAUSAL)
        return lx_err(err, LX_EINVAL, "greedy generation needs a causal model; this one is a masked LM (mode mlm), "
                      "whose every row changes with a new token\n  hint: use a model with mode: causal");
    if (n_prompt < 1)
        return lx_err(err, LX_EINVAL, "greedy generation needs a prompt of at least one token (BOS)");
    if (n < 0 || n_prompt + n - 1 > (1L << 30))
        return lx_err(err, LX_EINVAL, "cannot generate %ld tokens after a prompt of %ld\n"
                      "  hint: prompt + tokens must stay within 2^30", n, n_prompt);
    for (long t = 0; t < n_prompt; t++)
        if (prompt[t] < 0 || prompt[t] >= m->arch.vocab)
            return lx_err(err, LX_EINVAL, "prompt token %ld is %d, outside the vocabulary [0, %ld)", t, prompt[t],
                          m->arch.vocab);
    if (n == 0)
        return LX_OK;
    if (spec->pose.random && n_prompt + n - 1 > spec->pose.target)
        return lx_err(err, LX_EINVAL, "randpos draws the positions of %ld tokens (a prompt of %ld and %ld more) from "
                      "L = %ld\n  hint: generate fewer tokens, or train with a larger randpos target",
                      n_prompt + n - 1, n_prompt, n, spec->pose.target);
    return generate(m, spec, prompt, n_prompt, n, out, mode, s, sink, n_out, err);
}
