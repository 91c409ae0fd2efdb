/*
** harness/engine/decode.c - the KV cache, the one-row attention and greedy
** decoding (see decode.h).
*/
#include "harness/engine/kernels/decode.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/rng.h"
#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/blas.h"
#include "harness/engine/model/model.h"
#include "harness/engine/kernels/ops.h"

/* exp(x − max) below e^−70 is 0, as on the other paths (attention.c says why). */
#define EXP_FLOOR (-70.0f)

int lx_decode_far(const struct lx_spec *spec)
{
    return spec->posmap.method && spec->rotary.n_pairs;
}

int lx_argmax(const float *x, long n)
{
    int best = 0;
    for (long i = 1; i < n; i++)
        if (x[i] > x[best])
            best = (int)i;
    return best;
}

/* ---- the cache -------------------------------------------------------------- */

/* Every buffer of a cache with its element count (in double: hostile sizes
** overflow long); `alloc` allocates them. Returns the bytes in all, or -1
** when an allocation failed. */
static double cache_layout(struct lx_kvcache *c, const struct lx_arch *a, int n_slots, int T, int far, int alloc)
{
    double KD = (double)lx_arch_kv(a) * a->d_head, rows = (double)n_slots * a->layers * T, C = a->d_model,
           F = a->d_mlp, F2 = a->mlp == LX_MLP_SWIGLU ? 2 * F : F;
    struct { void **p; double n; size_t el; } b[] = {
        {(void **)&c->k, rows * KD, 4},
        {(void **)&c->v, rows * KD, 4},
        {(void **)&c->kfar, far ? rows * KD : 0, 4},
        {(void **)&c->len, n_slots, sizeof(long)},
        {(void **)&c->n_far, (double)n_slots * a->layers, sizeof(long)},
        {(void **)&c->x, C, 4},
        {(void **)&c->xn, C, 4},
        {(void **)&c->qkv, (double)lx_arch_qkv(a), 4},
        {(void **)&c->ao, (double)a->heads * a->d_head, 4},
        {(void **)&c->xm, C, 4},
        {(void **)&c->h, F2, 4},
        {(void **)&c->act, F, 4},
        {(void **)&c->rstd, 1, 4},
        {(void **)&c->cs, (double)a->d_head + 2, 8},
        {(void **)&c->s, T, 4},
        {(void **)&c->tab, 2.0 * T, 8},
    };
    double total = 0.0;
    for (size_t i = 0; i < sizeof b / sizeof *b; i++) {
        total += b[i].n * (double)b[i].el;
        if (alloc && b[i].n > 0 && !(*b[i].p = calloc((size_t)b[i].n, b[i].el)))
            return -1.0;
    }
    if (alloc) {
        c->n_slots = n_slots;
        c->L = (int)a->layers, c->T = T, c->KV = (int)lx_arch_kv(a), c->D = (int)a->d_head;
    }
    return total;
}

double lx_kvcache_bytes(const struct lx_arch *a, int n_slots, int T, int far)
{
    struct lx_kvcache c = {0};
    return cache_layout(&c, a, n_slots, T, far, 0);
}

int lx_kvcache_alloc(struct lx_kvcache *c, const struct lx_arch *a, const struct lx_spec *spec, int n_slots, int T,
                     struct lx_error *err)
{
    memset(c, 0, sizeof *c);
    int far = lx_decode_far(spec);
    double need = lx_kvcache_bytes(a, n_slots, T, far), avail = lx_mem_available();
    if (n_slots >= 1 && T >= 1 && need <= avail && cache_layout(c, a, n_slots, T, far, 1) >= 0.0)
        return LX_OK;
    lx_kvcache_release(c);
    char nb[32], ab[32];
    return lx_err(err, LX_ENOMEM, "a KV cache for %d window(s) of %d tokens (%ld layers, %ld key/value heads of "
                  "%ld) needs %s; %s of memory are available\n  hint: use a shorter length or a smaller arch",
                  n_slots, T, a->layers, lx_arch_kv(a), a->d_head, lx_fmt_bytes(nb, need), lx_fmt_bytes(ab, avail));
}

void lx_kvcache_release(struct lx_kvcache *c)
{
    if (!c)
        return;
    void *p[] = {c->k, c->v, c->kfar, c->len, c->n_far, c->x, c->xn, c->qkv, c->ao, c->xm, c->h, c->act, c->rstd,
                 c->cs, c->s, c->tab};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        free(p[i]);
    memset(c, 0, sizeof *c);
}

/* Row 0 of (slot, layer) in one of the cache's (n_slots, L, T, KV·D) buffers. */
static float *rows_of(const struct lx_kvcache *c, float *buf, int slot, int layer)
{
    return buf + ((long)slot * c->L + layer) * c->T * c->KV * c->D;
}

void lx_kvcache_put(struct lx_kvcache *c, int layer, const float *qkv, int B, int T, int H)
{
    LX_ASSERT(T <= c->T && layer >= 0 && layer < c->L);
    long KD = (long)c->KV * c->D, QKV = (long)H * c->D + 2 * KD;
    int nb = B < c->n_slots ? B : c->n_slots;
    for (int b = 0; b < nb; b++) {
        float *k = rows_of(c, c->k, b, layer), *v = rows_of(c, c->v, b, layer);
        for (long t = 0; t < T; t++) {
            const float *src = qkv + ((long)b * T + t) * QKV + (long)H * c->D;
            memcpy(k + t * KD, src, sizeof(float) * (size_t)KD);
            memcpy(v + t * KD, src + KD, sizeof(float) * (size_t)KD);
        }
        c->len[b] = T;
        c->n_far[(long)b * c->L + layer] = 0;
    }
}

/* Each key turned from its position j to the posmap's key position scale·j:
** the tiled forward's far rows of a lower pair, which depend on the key alone. */
void lx_kvcache_far(struct lx_kvcache *c, const struct lx_spec *spec, int slot, int layer, long upto)
{
    long *nf = &c->n_far[(long)slot * c->L + layer], KD = (long)c->KV * c->D;
    const float *k = rows_of(c, c->k, slot, layer);
    float *kf = rows_of(c, c->kfar, slot, layer);
    double r[2 * LX_SPEC_MAX_PAIRS + 2];
    for (long j = *nf; j < upto; j++)
        for (int g = 0; g < c->KV; g++) {
            const float *src = k + j * KD + (long)g * c->D;
            float *dst = kf + j * KD + (long)g * c->D;
            for (int d = 0; d < c->D; d++)
                r[d] = src[d];
            lx_rotary_turn(r, &spec->rotary, c->D, spec->posmap.scale * (double)j - (double)j);
            for (int d = 0; d < c->D; d++)
                dst[d] = (float)r[d];
        }
    if (upto > *nf)
        *nf = upto;
}

/* ---- one query row ------------------------------------------------------------ */

/* Logits of keys [j0, j1) of row i in place of their scores: A·S + B at
** t = i − j, or at |δ| for far keys (A, B from lx_spec_row over t, or one
** constant map in A[0], B[0] when no op depends on the distance). */
static void row_logits(float *s, const struct lx_spec *spec, int head, long n, long i, long j0, long j1,
                       const double *A, const double *B)
{
    for (long j = j0; j < j1; j++) {
        double a = A[0], b = B[0];
        if (spec->has_dist && lx_spec_far(spec, i, j))
            lx_spec_affine(spec, head, n, fabs(lx_spec_delta(spec, i, j)), &a, &b);
        else if (spec->has_dist)
            a = A[i - j], b = B[i - j];
        s[j] = (float)(a * s[j] + b);
    }
}

void lx_attn_row_forward(float *o, const float *q, const float *k, const float *v, const float *kfar, int ld,
                         const struct lx_spec *spec, int head, float mult, long i, int D, float *s, double *tab)
{
    LX_ASSERT(D <= 2 * LX_SPEC_MAX_PAIRS + 2 && (kfar != NULL) == lx_decode_far(spec));
    float c = (float)lx_spec_qk_scale(spec, D) * (mult != 0.0f ? mult : 1.0f);
    long lo, hi, n = lx_spec_row_keys(spec, i, i + 1, 1, &lo, &hi);
    long ns = spec->vis.sinks < lo ? spec->vis.sinks : lo, j0s[2] = {0, lo}, j1s[2] = {ns, hi};
    long far1 = kfar ? i - spec->posmap.from + 1 : 0;     /* keys j < far1 score from kfar */
    float qf[2 * LX_SPEC_MAX_PAIRS + 2];
    if (kfar) {     /* the query turned to the posmap's position of a lower pair's query */
        const struct lx_posmap *pm = &spec->posmap;
        double r[2 * LX_SPEC_MAX_PAIRS + 2];
        for (int d = 0; d < D; d++)
            r[d] = q[d];
        lx_rotary_turn(r, &spec->rotary, D, fmin(pm->scale * (double)i + pm->shift, pm->cap) - (double)i);
        for (int d = 0; d < D; d++)
            qf[d] = (float)r[d];
    }
    int plain = !spec->n_ops && spec->temperature == 1.0;
    double *A = tab, *B = tab + i + 1;
    if (!plain && !spec->has_dist)
        lx_spec_affine(spec, head, n, 0.0, A, B);
    else if (!plain)
        lx_spec_row(spec, head, n, 0, i + 1 - (ns ? 0 : lo), A, B);
    float mx = -INFINITY;
    for (int p = 0; p < 2; p++) {
        long j0 = j0s[p], j1 = j1s[p], jf = far1 < j0 ? j0 : far1 > j1 ? j1 : far1;  /* [j0, jf) far */
        if (jf > j0)
            lx_gemm(s + j0, (int)(jf - j0), qf, D, kfar + j0 * ld, ld, 1, (int)(jf - j0), D, 0, 1, c, 0.0f);
        if (j1 > jf)
            lx_gemm(s + jf, (int)(j1 - jf), q, D, k + jf * ld, ld, 1, (int)(j1 - jf), D, 0, 1, c, 0.0f);
        if (!plain)
            row_logits(s, spec, head, n, i, j0, j1, A, B);
        for (long j = j0; j < j1; j++)
            mx = s[j] > mx ? s[j] : mx;
    }
    double z = 0.0;
    for (int p = 0; p < 2; p++)
        for (long j = j0s[p]; j < j1s[p]; j++) {
            float e = s[j] - mx;
            s[j] = e > EXP_FLOOR ? expf(e) : 0.0f;
            z += s[j];
        }
    float beta = 0.0f;
    for (int p = 0; p < 2; p++)
        if (j1s[p] > j0s[p]) {
            int nk = (int)(j1s[p] - j0s[p]);
            lx_gemm(o, D, s + j0s[p], nk, v + j0s[p] * ld, ld, 1, D, nk, 0, 0, (float)(1.0 / z), beta);
            beta = 1.0f;
        }
}

/* ---- one token through the model --------------------------------------------- */

/* Attention of the step's query row (c->qkv) over the cached rows [0, pos]
** of (slot, layer), every head, into c->ao (on the step's one thread). */
static void attend(struct lx_kvcache *c, const struct lx_spec *spec, const float *mult, int slot, int layer, long pos,
                   int H)
{
    int KV = c->KV, D = c->D, G = H / KV, ld = KV * D;
    const float *k = rows_of(c, c->k, slot, layer), *v = rows_of(c, c->v, slot, layer);
    const float *kf = c->kfar ? rows_of(c, c->kfar, slot, layer) : NULL;
    for (int h = 0; h < H; h++) {
        long g = h / G;
        lx_attn_row_forward(c->ao + (long)h * D, c->qkv + (long)h * D, k + g * D, v + g * D, kf ? kf + g * D : NULL,
                            ld, spec, h, mult ? mult[h] : 1.0f, pos, D, c->s, c->tab);
    }
}

void lx_decode_step(float *logits, const struct lx_model *m, const struct lx_spec *spec, struct lx_kvcache *c,
                    int slot, long pos, int token)
{
    const struct lx_arch *ar = &m->arch;
    int C = (int)ar->d_model, H = (int)ar->heads, KV = c->KV, D = c->D, HD = H * D, QKV = (int)lx_arch_qkv(ar);
    int F = (int)ar->d_mlp, F2 = ar->mlp == LX_MLP_SWIGLU ? 2 * F : F, V = (int)ar->vocab, ipos = (int)pos;
    long KD = (long)KV * D;
    float eps = (float)ar->norm_eps;
    LX_ASSERT(slot >= 0 && slot < c->n_slots && pos >= 0 && pos <= c->len[slot] && pos < c->T);
    LX_ASSERT(token >= 0 && token < V && c->L == ar->layers && KV == lx_arch_kv(ar) && D == ar->d_head);
    /* One row is a few MFLOP even at 16k keys (attention O(T·D) a head, the
    ** rest O(d²)): one thread, since handing such small pieces to the team
    ** costs more than it saves, and far more on a loaded machine, where a
    ** barrier waits for the other threads to be scheduled. */
    int n_thr = omp_get_max_threads();
    omp_set_num_threads(1);
    memcpy(c->x, m->v.tok_emb + (long)token * C, sizeof(float) * (size_t)C);
    lx_rope_table_pos(c->cs, &spec->rotary, &ipos, 1);
    c->len[slot] = pos + 1;
    for (int l = 0; l < c->L; l++) {
        const struct lx_layer_w *W = &m->v.layer[l];
        lx_rmsnorm_forward(c->xn, c->rstd, c->x, W->attn_norm, 1, C, eps);
        lx_linear_forward(c->qkv, c->xn, W->wqkv, W->bqkv, 1, C, QKV);
        lx_rope_apply(c->qkv, &spec->rotary, c->cs, 1, 1, H, KV, D, +1);
        if (spec->cosine)
            lx_qk_normalize(c->qkv, NULL, 1, H, KV, D);
        memcpy(rows_of(c, c->k, slot, l) + pos * KD, c->qkv + HD, sizeof(float) * (size_t)KD);
        memcpy(rows_of(c, c->v, slot, l) + pos * KD, c->qkv + HD + KD, sizeof(float) * (size_t)KD);
        if (c->kfar) {
            long *nf = &c->n_far[(long)slot * c->L + l];
            *nf = *nf < pos ? *nf : pos;    /* rows from pos on were another token's */
            lx_kvcache_far(c, spec, slot, l, pos - spec->posmap.from + 1);
        }
        attend(c, spec, W->logit_scale, slot, l, pos, H);
        memcpy(c->xm, c->x, sizeof(float) * (size_t)C);
        lx_matmul(c->xm, c->ao, W->wo, 1, C, HD, 0, 1, 1.0f, 1.0f);
        lx_rmsnorm_forward(c->xn, c->rstd, c->xm, W->mlp_norm, 1, C, eps);
        lx_matmul(c->h, c->xn, W->w13, 1, F2, C, 0, 1, 1.0f, 0.0f);
        if (ar->mlp == LX_MLP_SWIGLU)
            lx_swiglu_forward(c->act, c->h, 1, F);
        else
            lx_gelu_forward_s(c->act, NULL, c->h, F);
        memcpy(c->x, c->xm, sizeof(float) * (size_t)C);
        lx_matmul(c->x, c->act, W->w2, 1, C, F, 0, 1, 1.0f, 1.0f);
    }
    lx_rmsnorm_forward(c->xn, c->rstd, c->x, m->v.norm, 1, C, eps);
    lx_matmul(logits, c->xn, m->v.head, 1, V, C, 0, 1, 1.0f, 0.0f);
    omp_set_num_threads(n_thr);
}

/* ---- generation ---------------------------------------------------------------- */

int lx_sample(const float *logits, long V, const struct lx_sampler *s, long k, double *p)
{
    if (!s || s->temperature <= 0.0)
        return lx_argmax(logits, V);
    int best = lx_argmax(logits, V);
    double sum = 0.0;
    for (long j = 0; j < V; j++)
        sum += p[j] = exp(((double)logits[j] - logits[best]) / s->temperature);
    struct lx_rng r;
    lx_rng_init(&r, s->seed, (uint32_t)k, LX_RNG_SAMPLE);
    double u = lx_rng_uniform(&r) * sum, acc = 0.0;
    for (long j = 0; j < V; j++)
        if ((acc += p[j]) > u && p[j] > 0.0)
            return (int)j;
    return best;    /* u within rounding of the total */
}

/* The prompt's pass with the cache attached, then one step per token. */
static int generate_cached(const struct lx_model *m, const struct lx_spec *spec, const int *prompt, long n_prompt,
                           long n, int *out, const struct lx_sampler *smp, struct lx_error *err)
{
    long V = m->arch.vocab;
    struct lx_acts a;
    struct lx_kvcache c = {0};
    int rc = lx_acts_alloc(&a, &m->arch, 1, (int)n_prompt, 0, err);
    if (rc == LX_OK)
        rc = lx_kvcache_alloc(&c, &m->arch, spec, 1, (int)(n_prompt + n - 1), err);
    if (rc == LX_OK) {
        a.kv = &c;
        lx_model_forward(m, spec, prompt, NULL, &a);
        rc = lx_acts_check_finite(&a, V, 1, NULL, err);
    }
    if (rc == LX_OK) {
        float *lg = lx_xmalloc(sizeof(float) * (size_t)V);
        double *p = lx_xmalloc(sizeof(double) * (size_t)V);
        out[0] = lx_sample(a.logits + (n_prompt - 1) * V, V, smp, 0, p);
        for (long k = 1; k < n; k++) {
            lx_decode_step(lg, m, spec, &c, 0, n_prompt + k - 1, out[k - 1]);
            out[k] = lx_sample(lg, V, smp, k, p);
        }
        free(p);
        free(lg);
    }
    lx_acts_release(&a);
    lx_kvcache_release(&c);
    return rc;
}

/* The reference: a full forward pass over prompt + the tokens so far per
** token (the positions after them hold token 0: a causal model never reads
** them). */
static int generate_full(const struct lx_model *m, const struct lx_spec *spec, const int *prompt, long n_prompt,
                         long n, int *out, const struct lx_sampler *smp, struct lx_error *err)
{
    long V = m->arch.vocab, T = n_prompt + n - 1;
    struct lx_acts a;
    int rc = lx_acts_alloc(&a, &m->arch, 1, (int)T, 0, err);
    if (rc < 0)
        return rc;
    int *buf = lx_xcalloc((size_t)T, sizeof *buf);
    double *p = lx_xmalloc(sizeof(double) * (size_t)V);
    memcpy(buf, prompt, sizeof(int) * (size_t)n_prompt);
    for (long k = 0; k < n && rc == LX_OK; k++) {
        lx_model_forward(m, spec, buf, NULL, &a);
        if ((rc = lx_acts_check_finite(&a, V, 1, NULL, err)) < 0)
            break;
        out[k] = lx_sample(a.logits + (n_prompt - 1 + k) * V, V, smp, k, p);
        if (k + 1 < n)
            buf[n_prompt + k] = out[k];
    }
    free(p);
    free(buf);
    lx_acts_release(&a);
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
    return mode == LX_DECODE_FULL ? generate_full(m, spec, prompt, n_prompt, n, out, s, err)
                                  : generate_cached(m, spec, prompt, n_prompt, n, out, s, err);
}
