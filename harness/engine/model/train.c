/*
** harness/engine/model/train.c - the training loop (see train.h).
*/
#include "harness/engine/model/train.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/hash.h"
#include "harness/core/rng.h"
#include "harness/engine/data/instance.h"
#include "harness/engine/kernels/dnnl.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/wprod.h"
#include "harness/engine/model/pilot.h"
#include "harness/engine/tokenizers/tokenizer.h"

static const struct lx_param train_rows[] = {
    LX_P_INT(struct lx_train_cfg, length, "128", 2, 1 << 20, LX_PF_SHOW, "training window: the training length L"),
    LX_P_INT(struct lx_train_cfg, batch, "16", 1, 1 << 16, 0, "windows per step"),
    LX_P_INT(struct lx_train_cfg, steps, "1000", 1, 100000000, 0, "optimizer steps"),
    LX_P_FLOAT(struct lx_train_cfg, lr, "3e-3", 0, 10, LX_PF_MIN_OPEN, "peak learning rate"),
    LX_P_FLOAT(struct lx_train_cfg, min_lr, "0.1", 0, 1, 0, "final learning rate, as a fraction of lr"),
    LX_P_INT(struct lx_train_cfg, warmup, "100", 0, 100000000, 0, "linear warmup steps"),
    LX_P_FLOAT(struct lx_train_cfg, weight_decay, "0.1", 0, 10, 0, "AdamW decoupled weight decay (matrices)"),
    LX_P_FLOAT(struct lx_train_cfg, beta1, "0.9", 0, 1, LX_PF_MAX_OPEN, "AdamW beta1 (1 divides by 1 - 1^t)"),
    LX_P_FLOAT(struct lx_train_cfg, beta2, "0.99", 0, 1, LX_PF_MAX_OPEN, "AdamW beta2 (1 divides by 1 - 1^t)"),
    LX_P_FLOAT(struct lx_train_cfg, clip, "1", 0, 1e6, 0, "max global gradient norm (0 = off)"),
    LX_P_INT(struct lx_train_cfg, eval_every, "200", 1, 100000000, 0, "validation every K steps"),
    LX_P_INT(struct lx_train_cfg, eval_windows, "32", 1, 1 << 20, 0, "validation windows"),
    LX_P_FLOAT(struct lx_train_cfg, mask_prob, "0.15", 0, 1, LX_PF_MIN_OPEN, "mlm: fraction of positions masked"),
    LX_P_ENUM(struct lx_train_cfg, begin, "bos", "bos|text", LX_PF_UNKEYED_DEFAULT,
              "causal: what a window starts with: bos (a start token before every window, StreamingLLM's "
              "sink token) or text (windows cut anywhere in the stream, its vanilla pretraining)"),
    LX_P_FLOAT(struct lx_train_cfg, lr_method, "0", 0, 10, LX_PF_UNKEYED_DEFAULT,
               "peak learning rate of the attention methods' learned tensors (sinks, logit scales, T5's or "
               "KERPLE's bias), on lr's schedule; 0 = lr"),
};

const struct lx_schema lx_train_schema = LX_SCHEMA(train_rows, struct lx_train_cfg, NULL);

#define ADAM_EPS 1e-8
#define OPT_BLOCK 4096  /* parameters an update takes at a time (then their bf16 copy) */
#define VAL_FRAC 0.05

double lx_train_lr(const struct lx_train_cfg *c, long s)
{
    if (s < c->warmup)
        return c->lr * (double)(s + 1) / (double)c->warmup;
    long span = c->steps - c->warmup;   /* one step after the warmup (a 1-step fine-tune) runs at the peak */
    double prog = span > 1 ? (double)(s - c->warmup) / (double)(span - 1) : 0.0;
    double cosv = 0.5 * (1.0 + cos(3.14159265358979323846 * prog));
    return c->lr * (c->min_lr + (1.0 - c->min_lr) * cosv);
}

long lx_mlm_corrupt(int *tok, int *tgt, const int *src, long n, uint64_t key, uint64_t ctr0, double p,
                    int all_mask, int mask, int n_random)
{
    const uint32_t k[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
    long picked = 0;
    for (long i = 0; i < n; i++) {
        uint64_t c = ctr0 + (uint64_t)i;
        const uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, LX_RNG_MASK};
        uint32_t r[4];
        lx_philox4x32(r, ctr, k);
        double u = (r[0] + 0.5) / 4294967296.0, w = (r[1] + 0.5) / 4294967296.0;
        tok[i] = src[i];
        tgt[i] = -1;
        if (u >= p)
            continue;
        picked++;
        tgt[i] = src[i];
        if (all_mask || w < 0.8)
            tok[i] = mask;
        else if (w < 0.9)
            tok[i] = (int)(r[2] % (uint32_t)n_random);
    }
    return picked;
}

/* The training stream: the documents' tokens joined by EOS (the tokenizer's;
** BOS when it has none). */
static int *build_stream(const struct lx_corpus_tokens *c, const struct lx_tokenizer *tk, long *n)
{
    int n_docs = c->c->n_docs, sep = tk->eos >= 0 ? tk->eos : lx_tok_begin(tk);
    int *s = lx_xmalloc(sizeof(int) * (size_t)(c->n_tokens + n_docs));
    long k = 0;
    for (int d = 0; d < n_docs; d++) {
        for (long i = 0; i < c->n[d]; i++)
            s[k++] = c->ids[d][i];
        s[k++] = sep;
    }
    *n = k;
    return s;
}

/* How windows are made in the model's tokens. */
struct window_ids {
    int begin;          /* first input of a causal window: BOS (or EOS without one); -1: the text itself */
    int mask;           /* mlm: the [MASK] id */
    int n_random;       /* mlm: a 10% replacement is drawn from ids 0 .. n_random-1 */
};

/* Fill window b of a batch from stream offset o. */
static void fill_window(int *tok, int *tgt, const int *s, long o, int T, int mlm, double p, uint64_t mkey,
                        uint64_t mctr, const struct window_ids *ids)
{
    if (mlm) {
        lx_mlm_corrupt(tok, tgt, s + o, T, mkey, mctr, p, 0, ids->mask, ids->n_random);
        return;
    }
    int shift = ids->begin >= 0;    /* begin: text reads s[o .. o+T] (o + T < n: the offsets leave T + 1) */
    lx_window_input(tok, s + o, T, ids->begin);
    for (int t = 0; t < T; t++)
        tgt[t] = s[o + t + 1 - shift];
}

static double val_loss(const struct lx_model *m, const struct lx_spec *spec, const struct lx_train_cfg *c,
                       struct lx_acts *a, int *tok, int *tgt, const int *s, long v0, long v1, uint64_t key,
                       const struct window_ids *ids)
{
    int B = (int)c->batch, T = (int)c->length, mlm = m->arch.mode == LX_MODEL_MLM;
    long nw = c->eval_windows, span = v1 - v0 - T - 1;
    double sum = 0.0;
    long cnt = 0;
    for (long w0 = 0; w0 < nw; w0 += B) {
        for (int b = 0; b < B; b++) {
            long w = w0 + b < nw ? w0 + b : nw - 1;     /* a short last batch repeats, uncounted */
            long o = v0 + (nw > 1 ? span * w / (nw - 1) : 0);
            fill_window(tok + (long)b * T, tgt + (long)b * T, s, o, T, mlm, c->mask_prob, key ^ 0x7661u, (uint64_t)o,
                        ids);
        }
        lx_model_forward(m, spec, tok, tgt, a);
        for (int b = 0; b < B && w0 + b < nw; b++)
            for (int t = 0; t < T; t++)
                if (tgt[(long)b * T + t] >= 0) {
                    sum += a->loss[(long)b * T + t];
                    cnt++;
                }
    }
    return cnt ? sum / (double)cnt : NAN;
}

/* Σ g² in fixed blocks summed in order: the same bits for any thread count. */
#define NORM_BLOCK 65536

static double grad_norm2(const float *g, size_t n)
{
    size_t nb = (n + NORM_BLOCK - 1) / NORM_BLOCK;
    double *part = lx_xcalloc(nb, sizeof *part), total = 0.0;
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < nb; b++) {
        double acc = 0.0;
        for (size_t i = b * NORM_BLOCK; i < n && i < (b + 1) * NORM_BLOCK; i++)
            acc += (double)g[i] * g[i];
        part[b] = acc;
    }
    for (size_t b = 0; b < nb; b++)
        total += part[b];
    free(part);
    return total;
}

int lx_optim_alloc(struct lx_optim *o, const struct lx_model *model, struct lx_error *err)
{
    memset(o, 0, sizeof *o);
    o->n = model->n_params;
    o->grad = calloc(o->n, sizeof *o->grad);
    o->m = calloc(o->n, sizeof *o->m);
    o->v = calloc(o->n, sizeof *o->v);
    o->decay = calloc(o->n, 1);
    if (!o->grad || !o->m || !o->v || !o->decay) {
        lx_optim_release(o);
        return lx_err(err, LX_ENOMEM, "the gradient and AdamW moments of %zu parameters (%.1f GB) do not fit in "
                      "memory\n  hint: a smaller arch", model->n_params, 13.0 * (double)model->n_params / 1e9);
    }
    int nt = lx_arch_tensors(&model->arch, NULL);
    struct lx_tensor_info *ti = lx_xcalloc((size_t)nt, sizeof *ti);
    lx_arch_tensors(&model->arch, ti);
    for (int i = 0; i < nt; i++) {
        if (ti[i].decay)
            memset(o->decay + ti[i].offset, 1, (size_t)(ti[i].shape[0] * ti[i].shape[1]));
        if (ti[i].method) {
            o->meth = lx_xrealloc(o->meth, sizeof *o->meth * (size_t)(o->n_meth + 1));
            o->meth[o->n_meth][0] = ti[i].offset;
            o->meth[o->n_meth++][1] = (size_t)ti[i].shape[0];
        }
    }
    free(ti);
    lx_weights_map(&o->g, &model->arch, o->grad);
    return LX_OK;
}

void lx_optim_init(struct lx_optim *o, const struct lx_model *model)
{
    struct lx_error err;
    LX_ASSERT(lx_optim_alloc(o, model, &err) == LX_OK);
}

void lx_optim_release(struct lx_optim *o)
{
    LX_ASSERT(!o->wb);      /* the model's products still read it: lx_optim_unshadow first */
    lx_weights_unmap(&o->g);
    free(o->grad);
    free(o->m);
    free(o->v);
    free(o->decay);
    free(o->meth);
    memset(o, 0, sizeof *o);
}

void lx_optim_zero_grad(struct lx_optim *o)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < o->n; i += OPT_BLOCK)
        memset(o->grad + i, 0, sizeof(float) * (o->n - i < OPT_BLOCK ? o->n - i : OPT_BLOCK));
}

/* ---- the weights' bf16 copy, row-major and packed ------------------------------ */

/* Every matrix of the bf16 copy packed both ways into o->pk, and the views at them. */
static void repack(struct lx_optim *o, struct lx_model *model)
{
    int n = lx_model_matrices(&model->arch, model, NULL);
    struct lx_matrix_at *t = lx_xcalloc((size_t)n, sizeof *t);
    size_t at = 0, f;
    lx_model_matrices(&model->arch, model, t);
    for (int k = 0; k < n; k++) {
        const struct lx_matrix_at *x = &t[k];
        const uint16_t *src = o->wb + (x->w - model->w);
        size_t pair = lx_packed_both_bytes(x->oc, x->c, &f);
        char *fwd = (char *)o->pk + at, *bwd = fwd + f;
        if (lx_dnnl_pack_b(fwd, src, x->c, 1, x->oc, x->c) < 0 || lx_dnnl_pack_b(bwd, src, x->c, 0, x->c, x->oc) < 0) {
            fprintf(stderr, "lenx: %s\n", lx_dnnl_error());   /* layouts it offered at lx_optim_shadow */
            exit(3);
        }
        *x->view = (struct lx_wmat){fwd, LX_DT_BF16, x->oc, bwd, 0};
        at += pair;
    }
    free(t);
}

int lx_optim_shadow(struct lx_optim *o, struct lx_model *model, int pack, struct lx_error *err)
{
    LX_ASSERT(!o->wb && model->w && o->n == model->n_params);
    double pk = pack ? lx_arch_train_packed_bytes(&model->arch) : 0;
    if (!(o->wb = malloc(sizeof *o->wb * o->n)) || (pk > 0 && !(o->pk = lx_big_calloc((size_t)pk)))) {
        free(o->wb);
        o->wb = NULL;
        return lx_err(err, LX_ENOMEM, "the bf16 copies of %zu weights (%.1f GB) do not fit in memory\n"
                      "  hint: numerics fast trains without them", o->n, (2.0 * (double)o->n + pk) / 1e9);
    }
    o->pk_bytes = (size_t)pk;
    lx_to_bf16_dense(o->wb, model->w, o->n);
    lx_weights_matrices_at(&model->v, &model->arch, model->w, o->wb);
    if (o->pk)
        repack(o, model);
    return LX_OK;
}

void lx_optim_unshadow(struct lx_optim *o, struct lx_model *model)
{
    if (!o->wb)
        return;
    lx_weights_matrices_at(&model->v, &model->arch, model->w, NULL);
    free(o->wb);
    lx_big_free(o->pk, o->pk_bytes);
    o->wb = NULL, o->pk = NULL, o->pk_bytes = 0;
}

/* One AdamW update of n parameters, element by element: the reference. */
static void adamw_plain(float *w, float *mo, float *ve, const float *grad, const unsigned char *decay, size_t n,
                        const struct lx_adamw *k)
{
    for (size_t i = 0; i < n; i++) {
        float gi = grad[i] * k->gs;
        mo[i] = k->b1 * mo[i] + (1.0f - k->b1) * gi;
        ve[i] = k->b2 * ve[i] + (1.0f - k->b2) * gi * gi;
        float wi = w[i];
        if (decay[i])
            wi -= k->wdl * wi;
        w[i] = wi - k->step * mo[i] / (sqrtf(ve[i] * k->ibc2) + (float)ADAM_EPS);
    }
}

/* The same roundings in the same order, sixteen lanes at a time: every one an
** IEEE operation of its own (no fused multiply-add: this file is compiled with
** -ffp-contract=off), so the bits are adamw_plain's on every CPU and in every
** numerics. Returns where the lanes stopped. */
__attribute__((target("avx512f"))) static size_t adamw_avx512(float *w, float *mo, float *ve, const float *grad,
                                                              const unsigned char *decay, size_t n,
                                                              const struct lx_adamw *k)
{
    const __m512 gs = _mm512_set1_ps(k->gs), b1 = _mm512_set1_ps(k->b1), c1 = _mm512_set1_ps(1.0f - k->b1);
    const __m512 b2 = _mm512_set1_ps(k->b2), c2 = _mm512_set1_ps(1.0f - k->b2), wdl = _mm512_set1_ps(k->wdl);
    const __m512 step = _mm512_set1_ps(k->step), ibc2 = _mm512_set1_ps(k->ibc2), eps = _mm512_set1_ps((float)ADAM_EPS);
    const __m512i one = _mm512_set1_epi32(1);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 g = _mm512_mul_ps(_mm512_loadu_ps(grad + i), gs);
        __m512 m = _mm512_add_ps(_mm512_mul_ps(b1, _mm512_loadu_ps(mo + i)), _mm512_mul_ps(c1, g));
        __m512 v = _mm512_add_ps(_mm512_mul_ps(b2, _mm512_loadu_ps(ve + i)), _mm512_mul_ps(_mm512_mul_ps(c2, g), g));
        __m512 x = _mm512_loadu_ps(w + i);
        __mmask16 d = _mm512_test_epi32_mask(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(decay + i))), one);
        x = _mm512_mask_sub_ps(x, d, x, _mm512_mul_ps(wdl, x));
        __m512 den = _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(v, ibc2)), eps);
        _mm512_storeu_ps(w + i, _mm512_sub_ps(x, _mm512_div_ps(_mm512_mul_ps(step, m), den)));
        _mm512_storeu_ps(mo + i, m);
        _mm512_storeu_ps(ve + i, v);
    }
    return i;
}

void lx_adamw_update(float *w, float *m, float *v, const float *grad, const unsigned char *decay, size_t n,
                     const struct lx_adamw *k, int plain)
{
    size_t i = !plain && __builtin_cpu_supports("avx512f") ? adamw_avx512(w, m, v, grad, decay, n, k) : 0;
    adamw_plain(w + i, m + i, v + i, grad + i, decay + i, n - i, k);
}

/* AdamW over [i0, i0 + n): k, and km over the method tensors' parts of it
** (NULL: k everywhere). The update goes element by element, so where the
** span is cut changes no bit. */
static void update_span(struct lx_optim *o, struct lx_model *model, size_t i0, size_t n, const struct lx_adamw *k,
                        const struct lx_adamw *km)
{
    size_t at = i0, end = i0 + n;
    for (int r = 0; km && r < o->n_meth && at < end; r++) {
        size_t a = o->meth[r][0], b = a + o->meth[r][1];
        if (b <= at || a >= end)
            continue;
        a = a > at ? a : at, b = b < end ? b : end;
        lx_adamw_update(model->w + at, o->m + at, o->v + at, o->grad + at, o->decay + at, a - at, k, 0);
        lx_adamw_update(model->w + a, o->m + a, o->v + a, o->grad + a, o->decay + a, b - a, km, 0);
        at = b;
    }
    lx_adamw_update(model->w + at, o->m + at, o->v + at, o->grad + at, o->decay + at, end - at, k, 0);
}

void lx_optim_step(struct lx_optim *o, struct lx_model *model, const struct lx_train_cfg *c, long s)
{
    double norm = sqrt(grad_norm2(o->grad, o->n)), gs = c->clip > 0 && norm > c->clip ? c->clip / norm : 1.0;
    struct lx_train_cfg cm = *c;
    cm.lr = c->lr_method;
    double lr = lx_train_lr(c, s), lrm = lx_train_lr(&cm, s);
    double bc1 = 1.0 - pow(c->beta1, (double)(s + 1)), bc2 = 1.0 - pow(c->beta2, (double)(s + 1));
    const struct lx_adamw k = {.gs = (float)gs, .b1 = (float)c->beta1, .b2 = (float)c->beta2,
                               .step = (float)(lr / bc1), .wdl = (float)(lr * c->weight_decay),
                               .ibc2 = (float)(1.0 / bc2)};
    struct lx_adamw km = k;     /* the method tensors on lr_method's schedule (no decay: vectors) */
    km.step = (float)(lrm / bc1);
    const struct lx_adamw *kmp = c->lr_method > 0 && o->n_meth ? &km : NULL;
    /* a block at a time, so the bf16 copy is rounded from values still in cache */
#pragma omp parallel for schedule(static)
    for (size_t i0 = 0; i0 < o->n; i0 += OPT_BLOCK) {
        size_t n = o->n - i0 < OPT_BLOCK ? o->n - i0 : OPT_BLOCK;
        update_span(o, model, i0, n, &k, kmp);
        if (o->wb)
            lx_f32_to_bf16_n(o->wb + i0, model->w + i0, n);
    }
    if (model->v.rel_bias)
        lx_arch_rel_keep(&model->arch, model->v.rel_bias);     /* KERPLE's clamps */
    if (o->pk)
        repack(o, model);
}

/* The shortest length a mixture task accepts, at most T: bisection on its
** check, which is monotone in the length. */
static long mix_min_length(const struct lx_mix *x, long T)
{
    if (!x->check)
        return 2;
    long lo = 2, hi = T;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        struct lx_error e;
        if (x->check(x->params, mid, &e) == LX_OK)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* A mixture task's training sample as a byte source for lx_instance_fit. */
struct mix_at {
    const struct lx_mix *x;
    uint64_t key;
    long sample;
};

static int mix_bytes(void *ctx, long B, struct lx_instance *out, struct lx_error *err)
{
    const struct mix_at *a = ctx;
    return a->x->sample(a->x->params, a->key, B, a->sample, out, err);
}

/* The instance of about len tokens: exactly len when the tokenizer allows it;
** else the longest of the next few below that it fits, down to lo; else (len
** near lo, where the task's check accepts a length no prompt has) the
** shortest of the next few above, up to hi. The window's corpus head takes
** what is left. */
static int mix_instance(const struct lx_mix *x, long len, long lo, long hi, uint64_t key, long sample,
                        struct lx_instance *in, struct lx_error *err)
{
    struct mix_at a = {.x = x, .key = key ^ lx_hash64(x->name), .sample = sample};
    struct lx_instance_src src = {.name = x->name, .bytes = mix_bytes, .ctx = &a};
    int rc = LX_ERUN;
    for (long l = len; rc == LX_ERUN && l >= lo && l > len - 8; l--)
        rc = lx_instance_fit(&src, lx_tok_or_byte(x->tok), l, in, err);
    for (long l = len + 1; rc == LX_ERUN && l <= hi && l < len + 8; l++)
        rc = lx_instance_fit(&src, lx_tok_or_byte(x->tok), l, in, err);
    if (rc == LX_ERUN && err) {     /* the instance's hint is an evaluation's: the lengths are the mixture's */
        char *hint = strstr(err->msg, "\n  hint:");
        if (hint)
            *hint = '\0';
        long first = len - 7 > lo ? len - 7 : lo, last = len + 7 < hi ? len + 7 : hi;
        char range[48];
        snprintf(range, sizeof range, first < last ? "%ld to %ld" : "%ld", first, last);
        lx_err_prefix(err, rc, "training mixture: no instance of %s tokens: ", range);
        snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg), "\n  hint: give the mixture "
                 "room: its instances run from the task's shortest, %ld tokens, to max_length or the window", lo);
    }
    return rc;
}

int lx_mix_window(int *tok, int *tgt, int T, const struct lx_mix *mix, int n_mix, double u, double v,
                  uint64_t key, long sample, struct lx_error *err)
{
    for (int j = 0; j < n_mix; j++) {
        if (u >= mix[j].weight) {
            u -= mix[j].weight;
            continue;
        }
        double q = v;       /* v^p, a rounding a product: the same on every CPU; p = 1 keeps v's bits */
        for (int k = 1; k < mix[j].length_power; k++)
            q *= v;
        long hi = mix[j].max_length > 0 && mix[j].max_length < T ? mix[j].max_length : T;
        long lo = mix_min_length(&mix[j], hi), len = lo + (long)(q * (double)(hi - lo + 1));
        len = len > hi ? hi : len;
        struct lx_instance in = {0};
        int rc = mix_instance(&mix[j], len, lo, hi, key, sample, &in, err);
        if (rc == LX_OK) {
            LX_ASSERT(in.n <= hi && in.n > len - 8 && in.n < len + 8);
            long off = T - in.n, n = in.n;  /* the corpus head stays as context, unscored: the window trains the task */
            for (long t = 0; t < off; t++)
                tgt[t] = -1;
            memcpy(tok + off, in.tok, sizeof(int) * (size_t)n);
            for (long t = 0; t < n; t++)
                tgt[off + t] = t + 1 < n && (!mix[j].answer_only || t + 1 >= in.answer_off) ? in.tok[t + 1] : -1;
        }
        lx_instance_release(&in);
        return rc;
    }
    return LX_OK;   /* corpus text */
}

/* One training run's corpus stream and batch buffers. */
struct train_state {
    int *s;             /* (n,) the corpus as one token stream */
    long n, n_train;    /* its tokens; the first n_train are for training, the rest validation */
    int B, T, mlm;      /* batch, length, masked-LM objective */
    int *tok, *tgt;     /* (B, T) inputs and targets */
    int *pos;           /* (B, T) PoSE positions, or NULL */
    struct window_ids ids;  /* the tokenizer's ids windows use */
    /* In portable numerics a step is the same bits on any thread count, so a
    ** pilot (pilot.h) may run each on the team or one thread, whichever it
    ** times faster: on a core another process holds, the team waits for it. */
    struct lx_pilot pl;
    int n_thr;          /* the team's threads */
};

/* The batch of `step`: window b drawn from a Philox block (step, b) keyed on
** key, then its PoSE positions and, with a mixture, its replacement. */
static int train_batch(const struct train_state *t, const struct lx_spec *spec, const struct lx_train_cfg *c,
                       uint64_t key, long step, const struct lx_mix *mix, int n_mix, struct lx_error *err)
{
    int B = t->B, T = t->T;
    for (int b = 0; b < B; b++) {
        struct lx_rng r;
        lx_rng_init(&r, key, (uint32_t)b, LX_RNG_DATA);
        r.ctr[1] = (uint32_t)step;                     /* block (step, b): order fixed by the key */
        long o = (long)(lx_rng_uniform(&r) * (double)(t->n_train - T - 1));
        fill_window(t->tok + (long)b * T, t->tgt + (long)b * T, t->s, o, T, t->mlm, c->mask_prob,
                    key ^ ((uint64_t)step << 20), (uint64_t)b * (uint64_t)T, &t->ids);
        if (t->pos)
            lx_pose_positions(t->pos + (long)b * T, T, &spec->pose, &r);
        if (n_mix) {    /* drawn after the corpus offset: without a mixture nothing moves */
            double u = lx_rng_uniform(&r), v = lx_rng_uniform(&r);
            int rc = lx_mix_window(t->tok + (long)b * T, t->tgt + (long)b * T, T, mix, n_mix, u, v, key,
                                   step * B + b, err);
            if (rc < 0)
                return rc;
        }
    }
    return LX_OK;
}

int lx_train_fits(const struct lx_corpus_tokens *text, long T, struct lx_error *err)
{
    long n = text->n_tokens + text->c->n_docs, n_train = (long)((double)n * (1.0 - VAL_FRAC));  /* build_stream */
    if (n_train - T - 1 >= 1 && n - n_train - T - 1 >= 1)
        return LX_OK;
    return lx_err(err, LX_EINVAL, "training length %ld is too long for a corpus of %ld tokens: its last %.0f %% "
                  "(%ld tokens) are held out for validation, and each part needs a window of %ld and its next token"
                  "\n  hint: at most %ld here", T, n, 100.0 * VAL_FRAC, n - n_train, T,
                  (n - n_train - 2 < n_train - 2 ? n - n_train - 2 : n_train - 2));
}

/* The stream and buffers of a run, or an error when the corpus is too short
** for the length. */
static int train_state_init(struct train_state *t, const struct lx_model *m, const struct lx_spec *spec,
                            const struct lx_train_cfg *c, const struct lx_corpus_tokens *text,
                            const struct lx_tokenizer *tk, struct lx_error *err)
{
    t->B = (int)c->batch;
    t->T = (int)c->length;
    t->mlm = m->arch.mode == LX_MODEL_MLM;
    t->ids = (struct window_ids){.begin = c->begin == LX_BEGIN_TEXT ? -1 : lx_tok_begin(tk), .mask = tk->mask,
                                 .n_random = tk->is_byte ? 256 : (int)tk->n_vocab};
    if (spec->pose.method && spec->pose.target < t->T)     /* the plan refuses it (lx_spec_check_train_target) */
        return lx_err(err, LX_EINVAL, "%s: target %ld is shorter than the %d-token training windows",
                      spec->pose.method, spec->pose.target, t->T);
    int rc = lx_train_fits(text, t->T, err);
    if (rc < 0)
        return rc;
    t->s = build_stream(text, tk, &t->n);
    t->n_train = (long)((double)t->n * (1.0 - VAL_FRAC));
    size_t bt = sizeof(int) * (size_t)t->B * (size_t)t->T;
    t->tok = lx_xmalloc(bt);
    t->tgt = lx_xmalloc(bt);
    t->pos = spec->pose.method ? lx_xmalloc(bt) : NULL;
    return LX_OK;
}

static void train_state_release(struct train_state *t)
{
    free(t->tok);
    free(t->tgt);
    free(t->pos);
    free(t->s);
}

/* Before anything is allocated: what a step holds besides the weights m
** already has (gradient, AdamW moments, activations of the attention path
** the process trains on, token buffers; lx_run_bytes) must fit in the
** memory available now. */
static int check_memory(const struct lx_model *m, const struct lx_spec *spec, const struct lx_train_cfg *c,
                        struct lx_error *err)
{
    const struct lx_arch *a = &m->arch;
    double need = lx_run_bytes(a, (int)c->batch, (int)c->length, LX_ACTS_TRAIN, lx_run_uses(spec)) -
                  lx_model_bytes(a, 0), avail = lx_mem_available();
    if (need <= avail)
        return LX_OK;
    char nb[32], ob[32], ab[32], vb[32];
    return lx_err(err, LX_ENOMEM, "training batch %ld x length %ld on %d thread(s) needs %s (gradients and AdamW "
                  "moments %s, activations %s, %s attention); %s of memory are available\n  hint: use a shorter "
                  "length, a smaller batch, fewer --threads or a smaller arch", c->batch, c->length,
                  omp_get_max_threads(), lx_fmt_bytes(nb, need), lx_fmt_bytes(ob, lx_model_bytes(a, 1) -
                  lx_model_bytes(a, 0)), lx_fmt_bytes(vb, lx_acts_bytes(a, (int)c->batch, (int)c->length,
                  LX_ACTS_TRAIN)), lx_train_attn_get() == LX_TRAIN_TILED ? "tiled" : "materialised",
                  lx_fmt_bytes(ab, avail));
}

/* Before the first step: the checks, then the stream, activations and optimizer. */
static int train_setup(struct lx_model *m, const struct lx_spec *spec, const struct lx_train_cfg *c,
                       const struct lx_corpus_tokens *text, const struct lx_tokenizer *tok, struct train_state *t,
                       struct lx_acts *a, struct lx_optim *opt, struct lx_error *err)
{
    lx_model_own(m);    /* weights used in place become fp32 master weights (bf16 numerics rounds them per product) */
    if (m->arch.vocab < tok->n_vocab)
        return lx_err(err, LX_EINVAL, "training on the corpus needs a vocabulary of %ld (the %s tokenizer's); "
                      "the model has %ld", tok->n_vocab, tok->ops->kind, m->arch.vocab);
    if (c->begin == LX_BEGIN_BOS && lx_tok_check_begin(tok, err) < 0)
        return LX_EINVAL;
    if (m->arch.mode == LX_MODEL_MLM && tok->mask < 0)
        return lx_err(err, LX_EINVAL, "masked-LM training needs a [MASK] id and the %s tokenizer %s has none",
                      tok->ops->kind, tok->path);
    int rc = check_memory(m, spec, c, err);
    if (rc == LX_OK)
        rc = train_state_init(t, m, spec, c, text, tok, err);
    t->n_thr = omp_get_max_threads();
    int forced = lx_numerics_get() == LX_NUMERICS_PORTABLE ? lx_pilot_forced() : 1;   /* else the team */
    lx_pilot_init(&t->pl, forced == 0, forced < 0 && t->n_thr > 1);
    if (rc < 0)
        return rc;
    if ((rc = lx_acts_alloc(a, &m->arch, t->B, t->T, 1, err)) < 0) {
        train_state_release(t);
        return rc;
    }
    if ((rc = lx_optim_alloc(opt, m, err)) < 0) {
        lx_acts_release(a);
        train_state_release(t);
    }
    return rc;
}

/* The snapshot of the run after `step` steps, pointing at the live buffers. */
static struct lx_train_snap snap_of(const struct lx_model *m, const struct lx_optim *opt, long step,
                                    double run_loss, long run_n, const struct lx_train_report *rep)
{
    return (struct lx_train_snap){.step = step, .n = opt->n, .w = m->w, .m = opt->m, .v = opt->v,
                                  .run_loss = run_loss, .run_n = run_n, .train_loss = rep->train_loss,
                                  .val_loss = rep->val_loss, .seconds = rep->seconds};
}

/* Whether to save after `done` steps: by the step count or by the clock. */
static int save_due(const struct lx_train_resume *res, long done, long steps, double since)
{
    if (!res || !res->save || done >= steps)
        return 0;
    return (res->every_steps > 0 && done % res->every_steps == 0) ||
           (res->every_seconds > 0 && since >= res->every_seconds);
}

int lx_train(struct lx_model *m, const struct lx_spec *spec, const struct lx_train_cfg *c, uint64_t key,
             const struct lx_corpus_tokens *text, const struct lx_tokenizer *tok, const struct lx_mix *mix,
             int n_mix, lx_train_progress progress, void *pctx, const struct lx_train_resume *res,
             struct lx_train_report *rep, struct lx_error *err)
{
    memset(rep, 0, sizeof *rep);
    struct train_state t = {0};
    struct lx_acts a;
    struct lx_optim opt;
    int rc = train_setup(m, spec, c, text, tok, &t, &a, &opt, err);
    if (rc < 0)
        return rc;
    double run_loss = 0.0, before = 0.0;
    long run_n = 0, first = 0;
    const struct lx_train_snap *from = res ? res->from : NULL;
    if (from) {
        LX_ASSERT(from->n == opt.n && from->step >= 0 && from->step <= c->steps);
        memcpy(m->w, from->w, sizeof(float) * opt.n);
        memcpy(opt.m, from->m, sizeof(float) * opt.n);
        memcpy(opt.v, from->v, sizeof(float) * opt.n);
        first = rep->first = rep->steps = from->step, run_loss = from->run_loss, run_n = from->run_n;
        rep->train_loss = from->train_loss, rep->val_loss = from->val_loss, before = from->seconds;
        rep->tokens = rep->steps * t.B * t.T;
    }
    if (lx_numerics_get() == LX_NUMERICS_BF16)
        rc = lx_optim_shadow(&opt, m, 1, err);
    double t0 = omp_get_wtime(), saved = t0;
    for (long step = first; rc >= 0 && step < c->steps; step++) {
        omp_set_num_threads(lx_pilot_solo(&t.pl) ? 1 : t.n_thr);
        double ts = omp_get_wtime();
        if ((rc = train_batch(&t, spec, c, key, step, mix, n_mix, err)) < 0)
            break;
        a.pos = t.pos;
        lx_optim_zero_grad(&opt);
        double loss = lx_model_forward(m, spec, t.tok, t.tgt, &a);
        lx_model_backward(m, spec, t.tok, t.tgt, &a, &opt.g);
        lx_optim_step(&opt, m, c, step);
        lx_pilot_told(&t.pl, omp_get_wtime() - ts);
        run_loss += loss;
        run_n++;
        double val = NAN;
        if ((step + 1) % c->eval_every == 0 || step + 1 == c->steps) {
            a.pos = NULL;       /* validation at the plain positions 0 … T−1 */
            val = val_loss(m, spec, c, &a, t.tok, t.tgt, t.s, t.n_train, t.n, key, &t.ids);
            rep->val_loss = val;
            rep->train_loss = run_loss / (double)run_n;
            run_loss = 0.0;
            run_n = 0;
        }
        rep->steps = step + 1;
        rep->tokens = rep->steps * t.B * t.T;
        double now = omp_get_wtime();
        rep->seconds = before + (now - t0);
        if (progress)
            progress(pctx, step + 1, c->steps, loss, val, (double)(rep->steps - first) * t.B * t.T / (now - t0));
        if (!isfinite(loss)) {
            rc = lx_err(err, LX_ERUN, "training diverged at step %ld (loss %g)\n"
                        "  hint: lower lr or raise warmup", step + 1, loss);
            break;
        }
        if (save_due(res, step + 1, c->steps, now - saved)) {
            struct lx_train_snap s = snap_of(m, &opt, step + 1, run_loss, run_n, rep);
            if ((rc = res->save(res->ctx, &s, err)) < 0)
                break;
            saved = omp_get_wtime();
        }
    }
    omp_set_num_threads(t.n_thr);
    rep->solo_steps = t.n_thr > 1 ? t.pl.steps[1] : 0;
    rep->switches = t.pl.switches;
    lx_optim_unshadow(&opt, m);
    lx_optim_release(&opt);
    lx_acts_release(&a);
    train_state_release(&t);
    return rc;
}
