/*
** harness/engine/model.c - weights, forward and backward of the transformer
** (see model.h). Matrix products go through the BLAS seam; attention runs one
** (window, head) pair per OpenMP iteration with per-thread scratch.
*/
#define _POSIX_C_SOURCE 200809L    /* sysconf */
#include "harness/engine/model/model.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/blas.h"
#include "harness/engine/kernels/decode.h"
#include "harness/engine/kernels/ops.h"
#include "harness/core/rng.h"

/* Tiles of the evaluation forward: queries × keys (see docs/PERFORMANCE.md,
** "Tiled attention"). */
#define LX_TILE_BQ 256
#define LX_TILE_BK 256

static const struct lx_param arch_rows[] = {
    LX_P_ENUM(struct lx_arch, mode, "causal", "causal|mlm", LX_PF_SHOW,
              "causal: next-token LM with causal attention; mlm: bidirectional masked LM"),
    LX_P_INT(struct lx_arch, layers, "2", 1, 64, 0, "transformer blocks"),
    LX_P_INT(struct lx_arch, d_model, "128", 8, 8192, 0, "residual width"),
    LX_P_INT(struct lx_arch, heads, "4", 1, 256, 0, "attention (query) heads"),
    LX_P_INT(struct lx_arch, kv_heads, "0", 0, 256, 0,
             "key/value heads, dividing heads (grouped-query attention); 0 = heads (multi-head)"),
    LX_P_INT(struct lx_arch, d_head, "32", 2, 512, 0, "head dimension (even for rope)"),
    LX_P_INT(struct lx_arch, d_mlp, "512", 8, 65536, 0, "MLP hidden width"),
    LX_P_ENUM(struct lx_arch, mlp, "gelu", "gelu|swiglu", 0, "MLP: GELU (tanh form) or SwiGLU"),
    LX_P_INT(struct lx_arch, vocab, "260", 2, 1000000, 0,
             "vocabulary: 260 = 256 bytes + BOS, EOS, PAD, MASK; with a tokenizer, its vocabulary"),
    LX_P_FLOAT(struct lx_arch, norm_eps, "1e-5", 0, 1, LX_PF_MIN_OPEN, "RMSNorm epsilon"),
    LX_P_FLOAT(struct lx_arch, init_std, "0.02", 0, 10, LX_PF_MIN_OPEN,
               "initial N(0, std) of matrices; wo and w2 use std/sqrt(2*layers)"),
    LX_P_BOOL(struct lx_arch, logit_scale, "false", 0,
              "a learned multiplier of the attention logits per layer and head (set by logn learn: true)"),
    LX_P_BOOL(struct lx_arch, qkv_bias, "false", 0, "biases on the q, k and v projections (Qwen2)"),
    LX_P_BOOL(struct lx_arch, tie_head, "false", 0, "the output head is the token embedding (no lm_head.weight)"),
};

/* Rows added after the first checkpoints are stored only away from their
** defaults, so models without them keep their keys. */
static const struct lx_param_rule arch_rules[] = {
    {"logit_scale", "logit_scale=true"},
    {"kv_heads", "kv_heads!=0"},
    {"qkv_bias", "qkv_bias=true"},
    {"tie_head", "tie_head=true"},
    {NULL, NULL},
};

const struct lx_schema lx_arch_schema = LX_SCHEMA(arch_rows, struct lx_arch, arch_rules);

long lx_arch_kv(const struct lx_arch *a)
{
    return a->kv_heads ? a->kv_heads : a->heads;
}

long lx_arch_qkv(const struct lx_arch *a)
{
    return (a->heads + 2 * lx_arch_kv(a)) * a->d_head;
}

int lx_arch_resolve(struct lx_arch *a, struct lx_error *err)
{
    if (a->kv_heads > a->heads)
        return lx_err(err, LX_EINVAL, "kv_heads (%ld) is more than heads (%ld)\n"
                      "  hint: query heads share key/value heads: kv_heads divides heads (1 = multi-query)",
                      a->kv_heads, a->heads);
    if (a->kv_heads && a->heads % a->kv_heads)
        return lx_err(err, LX_EINVAL, "kv_heads (%ld) does not divide heads (%ld)\n"
                      "  hint: each key/value head serves heads / kv_heads query heads; e.g. heads 8 takes "
                      "kv_heads 1, 2, 4 or 8", a->kv_heads, a->heads);
    if (a->kv_heads == a->heads)
        a->kv_heads = 0;        /* canonical: multi-head attention has one spelling (and one key) */
    return LX_OK;
}

/* ---- tensors -------------------------------------------------------------- */

static void add(struct lx_tensor_info *out, int *n, size_t *off, const char *name, long rows, long cols,
                int decay, int out_proj)
{
    if (out) {
        struct lx_tensor_info *t = &out[*n];
        snprintf(t->name, sizeof t->name, "%s", name);
        t->ndim = cols ? 2 : 1;
        t->shape[0] = rows;
        t->shape[1] = cols;
        t->offset = *off;
        t->decay = decay;
        t->out_proj = out_proj;
    }
    (*n)++;
    *off += (size_t)rows * (size_t)(cols ? cols : 1);
}

static int tensors(const struct lx_arch *a, struct lx_tensor_info *out, size_t *total)
{
    int n = 0;
    size_t off = 0;
    long C = a->d_model, HD = a->heads * a->d_head, KD = lx_arch_kv(a) * a->d_head, F = a->d_mlp;
    char name[64];
    add(out, &n, &off, "tok_emb.weight", a->vocab, C, 1, 0);
    for (long l = 0; l < a->layers; l++) {
#define NAME(s) (snprintf(name, sizeof name, "layers.%ld.%s", l, s), name)
        add(out, &n, &off, NAME("attn_norm.weight"), C, 0, 0, 0);
        add(out, &n, &off, NAME("attn.wq.weight"), HD, C, 1, 0);
        add(out, &n, &off, NAME("attn.wk.weight"), KD, C, 1, 0);
        add(out, &n, &off, NAME("attn.wv.weight"), KD, C, 1, 0);
        if (a->qkv_bias) {      /* adjacent: one bias row for the fused q|k|v */
            add(out, &n, &off, NAME("attn.wq.bias"), HD, 0, 0, 0);
            add(out, &n, &off, NAME("attn.wk.bias"), KD, 0, 0, 0);
            add(out, &n, &off, NAME("attn.wv.bias"), KD, 0, 0, 0);
        }
        add(out, &n, &off, NAME("attn.wo.weight"), C, HD, 1, 1);
        if (a->logit_scale)
            add(out, &n, &off, NAME("attn.logit_scale"), a->heads, 0, 0, 0);
        add(out, &n, &off, NAME("mlp_norm.weight"), C, 0, 0, 0);
        add(out, &n, &off, NAME("mlp.w1.weight"), F, C, 1, 0);
        if (a->mlp == LX_MLP_SWIGLU)
            add(out, &n, &off, NAME("mlp.w3.weight"), F, C, 1, 0);
        add(out, &n, &off, NAME("mlp.w2.weight"), C, F, 1, 1);
#undef NAME
    }
    add(out, &n, &off, "norm.weight", C, 0, 0, 0);
    if (!a->tie_head)
        add(out, &n, &off, "lm_head.weight", a->vocab, C, 1, 0);
    if (total)
        *total = off;
    return n;
}

int lx_arch_tensors(const struct lx_arch *a, struct lx_tensor_info *out)
{
    return tensors(a, out, NULL);
}

size_t lx_arch_n_params(const struct lx_arch *a)
{
    size_t total;
    tensors(a, NULL, &total);
    return total;
}

void lx_weights_map(struct lx_weights *w, const struct lx_arch *a, float *base)
{
    int n = lx_arch_tensors(a, NULL);
    struct lx_tensor_info *t = lx_xcalloc((size_t)n, sizeof *t);
    lx_arch_tensors(a, t);
    w->layer = lx_xcalloc((size_t)a->layers, sizeof *w->layer);
    int i = 0;
    w->tok_emb = base + t[i++].offset;
    for (long l = 0; l < a->layers; l++) {
        struct lx_layer_w *L = &w->layer[l];
        L->attn_norm = base + t[i++].offset;
        L->wqkv = base + t[i].offset;
        i += 3;
        L->bqkv = a->qkv_bias ? base + t[i].offset : NULL;
        i += a->qkv_bias ? 3 : 0;
        L->wo = base + t[i++].offset;
        L->logit_scale = a->logit_scale ? base + t[i++].offset : NULL;
        L->mlp_norm = base + t[i++].offset;
        L->w13 = base + t[i++].offset;
        if (a->mlp == LX_MLP_SWIGLU)
            i++;
        L->w2 = base + t[i++].offset;
    }
    w->norm = base + t[i++].offset;
    w->head = a->tie_head ? w->tok_emb : base + t[i++].offset;
    LX_ASSERT(i == n);
    free(t);
}

void lx_weights_unmap(struct lx_weights *w)
{
    free(w->layer);
    memset(w, 0, sizeof *w);
}

void lx_model_init(struct lx_model *m, const struct lx_arch *a, uint64_t key)
{
    m->arch = *a;
    m->n_params = lx_arch_n_params(a);
    m->w = lx_xcalloc(m->n_params, sizeof *m->w);
    lx_weights_map(&m->v, a, m->w);
    int n = lx_arch_tensors(a, NULL);
    struct lx_tensor_info *t = lx_xcalloc((size_t)n, sizeof *t);
    lx_arch_tensors(a, t);
    for (int i = 0; i < n; i++) {
        float *p = m->w + t[i].offset;
        long cnt = t[i].shape[0] * (t[i].ndim == 2 ? t[i].shape[1] : 1);
        if (t[i].ndim == 1) {   /* norm gains and logit scales 1, biases 0 */
            float one = strstr(t[i].name, ".bias") ? 0.0f : 1.0f;
            for (long j = 0; j < cnt; j++)
                p[j] = one;
            continue;
        }
        double std = a->init_std / (t[i].out_proj ? sqrt(2.0 * (double)a->layers) : 1.0);
        struct lx_rng r;
        lx_rng_init(&r, key, (uint32_t)i, LX_RNG_INIT);   /* one stream per tensor */
        for (long j = 0; j + 1 < cnt; j += 2) {
            double z0, z1;
            lx_rng_normal2(&r, &z0, &z1);
            p[j] = (float)(std * z0);
            p[j + 1] = (float)(std * z1);
        }
        if (cnt % 2)
            p[cnt - 1] = (float)(std * lx_rng_normal(&r));
    }
    free(t);
}

void lx_model_release(struct lx_model *m)
{
    if (!m)
        return;
    lx_weights_unmap(&m->v);
    free(m->w);
    memset(m, 0, sizeof *m);
}

/* ---- activations ------------------------------------------------------------ */

struct sizes {
    long N, C, HD, F, F2, V, T, H, L;
    long KV, QKV;       /* key/value heads; floats of a qkv row, (H + 2·KV)·D */
};

static struct sizes sizes_of(const struct lx_arch *a, int B, int T)
{
    struct sizes s;
    s.N = (long)B * T;
    s.C = a->d_model;
    s.HD = a->heads * a->d_head;
    s.F = a->d_mlp;
    s.F2 = a->mlp == LX_MLP_SWIGLU ? 2 * s.F : s.F;
    s.V = a->vocab;
    s.T = T;
    s.H = a->heads;
    s.L = a->layers;
    s.KV = lx_arch_kv(a);
    s.QKV = lx_arch_qkv(a);
    return s;
}

static int n_threads(void)
{
    return omp_get_max_threads();
}

/* Every buffer of lx_acts with its element count, counted in double (hostile
** sizes overflow long); `alloc` allocates them. Returns the bytes in all, or
** -1 when an allocation failed. */
static double acts_layout(struct lx_acts *a, const struct lx_arch *arch, int B, int T, int train, int alloc)
{
    double N = (double)B * T, C = (double)arch->d_model, HD = (double)arch->heads * arch->d_head,
           F = (double)arch->d_mlp, F2 = arch->mlp == LX_MLP_SWIGLU ? 2 * F : F, V = (double)arch->vocab,
           TT = (double)T * T, H = (double)arch->heads, nthr = n_threads(), LL = (double)arch->layers,
           QKV = (double)lx_arch_qkv(arch);
    double L = train ? LL : 1, tr = train ? 1 : 0;
    struct { void **p; double n; size_t el; } b[] = {
        {(void **)&a->x, (train ? LL + 1 : 2) * N * C, 4},
        {(void **)&a->rstd1, L * N, 4},
        {(void **)&a->xn1, L * N * C, 4},
        {(void **)&a->qkv, L * N * QKV, 4},
        {(void **)&a->att, train ? LL * B * H * TT : 0, 4},     /* eval: on first use (attention_all) */
        {(void **)&a->ao, L * N * HD, 4},
        {(void **)&a->xm, L * N * C, 4},
        {(void **)&a->rstd2, L * N, 4},
        {(void **)&a->xn2, L * N * C, 4},
        {(void **)&a->h, L * N * F2, 4},
        {(void **)&a->act, L * N * F, 4},
        {(void **)&a->sig, train && arch->mlp == LX_MLP_GELU ? L * N * F : 0, 4},
        {(void **)&a->rstdf, N, 4},
        {(void **)&a->xnf, N * C, 4},
        {(void **)&a->logits, N * V, 4},
        {(void **)&a->probs, N * V, 4},
        {(void **)&a->loss, N, 4},
        {(void **)&a->rope_cs, N * (double)arch->d_head, 8},
        {(void **)&a->tab, nthr * 2 * T, 8},
        {(void **)&a->tile, train ? 0 : nthr * (double)lx_tile_thread_floats(LX_TILE_BQ, LX_TILE_BK,
                                                                                   (int)arch->d_head), 4},
        {(void **)&a->dx, tr * N * C, 4},
        {(void **)&a->dxn, tr * N * C, 4},
        {(void **)&a->dqkv, tr * N * QKV, 4},
        {(void **)&a->dao, tr * N * HD, 4},
        {(void **)&a->dh, tr * N * F2, 4},
        {(void **)&a->dact, tr * N * F, 4},
        {(void **)&a->dlogits, tr * N * V, 4},
        {(void **)&a->dp, tr * nthr * TT, 4},
    };
    double total = 0.0;
    for (size_t i = 0; i < sizeof b / sizeof *b; i++) {
        total += b[i].n * (double)b[i].el;
        if (alloc && b[i].n > 0 && !(*b[i].p = malloc((size_t)b[i].n * b[i].el)))
            return -1.0;
    }
    if (alloc) {
        a->B = B;
        a->T = T;
        a->train = train;
        a->n_thr = (int)nthr;
    }
    return total;
}

double lx_acts_bytes(const struct lx_arch *arch, int B, int T, int train)
{
    struct lx_acts a = {0};
    return acts_layout(&a, arch, B, T, train, 0);
}

int lx_acts_alloc(struct lx_acts *a, const struct lx_arch *arch, int B, int T, int train, struct lx_error *err)
{
    memset(a, 0, sizeof *a);
    double need = lx_acts_bytes(arch, B, T, train), avail = lx_mem_available();
    if (need <= avail && acts_layout(a, arch, B, T, train, 1) >= 0.0)
        return LX_OK;
    lx_acts_release(a);
    char nb[32], ab[32];
    return lx_err(err, LX_ENOMEM, "activations for %d x %d tokens on %d threads need %s; %s of memory are "
                  "available\n  hint: use a shorter length, a smaller batch or fewer --threads",
                  B, T, n_threads(), lx_fmt_bytes(nb, need), lx_fmt_bytes(ab, avail));
}

/* ---- memory: what a model needs, checked before anything is allocated --------- */

double lx_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = -1.0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    if (kb >= 0.0)
        return kb * 1024.0;
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size : 1e18;   /* unknown: do not refuse */
}

char *lx_fmt_bytes(char out[32], double bytes)
{
    if (bytes < 1e9)
        snprintf(out, 32, "%.1f MB", bytes / 1e6);
    else
        snprintf(out, 32, "%.1f GB", bytes / 1e9);
    return out;
}

double lx_model_bytes(const struct lx_arch *a, int train)
{
    /* weights (float); training adds the gradient and AdamW's two moments
    ** (float each) and the weight-decay mask (a byte each) */
    return (double)lx_arch_n_params(a) * (train ? 4.0 * 4 + 1 : 4.0);
}

double lx_run_bytes(const struct lx_arch *a, int B, int T, int train, unsigned uses)
{
    int probs = (uses & LX_RUN_PROBS) != 0;
    double N = (double)B * T, nthr = n_threads();
    /* the head path (training, or an evaluation pass that asks for
    ** probabilities): per-thread posmap scratch and, in evaluation, the
    ** probabilities (n_thr, T, T), both allocated on first use; a tiled pass
    ** never allocates either, so its memory grows as O(T·d) */
    int head = train || probs;
    double far = head ? nthr * (double)lx_attn_far_floats(T, (int)a->d_head) * 4 : 0.0;
    double qkn = train ? (double)a->layers * N * 2 * (double)a->heads * 4 : 0.0;   /* cosine norms */
    double HT = (double)a->heads * T, P = !train && probs ? nthr * (double)T * T * 4 : 0.0;
    /* eval: the tiled forward's tables and far rows, and its row statistics' sums */
    double stat = nthr * (double)lx_tile_acc_doubles(LX_TILE_BQ) * 8 +
                  (double)a->heads * ((double)T / LX_TILE_BQ + 2) * sizeof(struct lx_diag);
    double tiled = train ? 0.0 : HT * (1 + LX_SPEC_MAX_OPS) * 8 + 4 * HT * (double)a->d_head * 4 + stat;
    double ints = 3 * N * 4;                                                 /* tokens, targets, positions */
    double kv = !train && (uses & LX_RUN_KVCACHE) ? lx_kvcache_bytes(a, B, T, (uses & LX_RUN_KVFAR) != 0) : 0.0;
    return lx_model_bytes(a, train) + lx_acts_bytes(a, B, T, train) + far + qkn + ints + P + tiled + kv;
}

int lx_model_alloc(struct lx_model *m, const struct lx_arch *a, struct lx_error *err)
{
    memset(m, 0, sizeof *m);
    double need = lx_model_bytes(a, 0), avail = lx_mem_available();
    size_t n = lx_arch_n_params(a);
    char nb[32], ab[32];
    if (need > avail || !(m->w = calloc(n, sizeof *m->w)))
        return lx_err(err, LX_ENOMEM, "the architecture has %zu parameters (%s); %s of memory are available\n"
                      "  hint: a smaller arch (layers, d_model, d_mlp, heads, vocab)", n, lx_fmt_bytes(nb, need),
                      lx_fmt_bytes(ab, avail));
    m->arch = *a;
    m->n_params = n;
    lx_weights_map(&m->v, a, m->w);
    return LX_OK;
}

void lx_acts_set_probe(struct lx_acts *a, lx_att_probe probe, void *ctx)
{
    a->probe = probe;
    a->probe_ctx = ctx;
}

void lx_acts_release(struct lx_acts *a)
{
    if (!a)
        return;
    void *p[] = {a->x, a->rstd1, a->xn1, a->qkv, a->att, a->ao, a->xm, a->rstd2, a->xn2, a->h, a->act, a->sig,
                 a->rstdf, a->xnf, a->logits, a->probs, a->loss, a->rope_cs, a->tab, a->far, a->tile,
                 a->tile_tab, a->tile_rot, a->tile_acc, a->tile_part, a->qkn, a->dx,
                 a->dxn, a->dqkv, a->dao, a->dh, a->dact, a->dlogits, a->dp};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        free(p[i]);
    memset(a, 0, sizeof *a);
}

/* ---- finiteness: a NaN or Inf must fail the cell, never be stored as a number ---- */

int lx_model_check_finite(const struct lx_model *m, struct lx_error *err)
{
    int n = lx_arch_tensors(&m->arch, NULL);
    struct lx_tensor_info *t = lx_xcalloc((size_t)n, sizeof *t);
    lx_arch_tensors(&m->arch, t);
    int rc = LX_OK;
    for (int i = 0; i < n && rc == LX_OK; i++) {
        const float *p = m->w + t[i].offset;
        long cnt = t[i].shape[0] * (t[i].ndim == 2 ? t[i].shape[1] : 1);
        for (long j = 0; j < cnt; j++)
            if (!isfinite(p[j])) {
                rc = lx_err(err, LX_ERUN, "tensor '%s' holds a non-finite value (%g) at index %ld\n"
                            "  hint: the checkpoint is damaged or training diverged (a lower lr, or clip); "
                            "retrain it", t[i].name, (double)p[j], j);
                break;
            }
    }
    free(t);
    return rc;
}

int lx_acts_check_finite(const struct lx_acts *a, long V, int nb, const int *targets, struct lx_error *err)
{
    long T = a->T;
    for (long i = 0; i < (long)nb * T; i++) {
        if (targets && targets[i] >= 0 && !isfinite(a->loss[i]))
            return lx_err(err, LX_ERUN, "a non-finite loss (%g) at window %ld, position %ld\n"
                          "  hint: the weights or the stack's parameters overflow; check the model's val loss",
                          (double)a->loss[i], i / T, i % T);
        for (long v = 0; v < V; v++)
            if (!isfinite(a->logits[i * V + v]))
                return lx_err(err, LX_ERUN, "a non-finite logit (%g) at window %ld, position %ld, token %ld\n"
                              "  hint: the weights or the stack's parameters overflow; check the model's val "
                              "loss", (double)a->logits[i * V + v], i / T, i % T, v);
    }
    return LX_OK;
}

/* ---- rope ------------------------------------------------------------------- */

void lx_rope_table(double *cs, const struct lx_rotary *r, int T)
{
    for (int t = 0; t < T; t++)
        for (int k = 0; k < r->n_pairs; k++) {
            double phi = (double)t * r->inv_freq[k];
            cs[((long)t * r->n_pairs + k) * 2] = cos(phi);
            cs[((long)t * r->n_pairs + k) * 2 + 1] = sin(phi);
        }
}

void lx_rope_table_pos(double *cs, const struct lx_rotary *r, const int *pos, long n)
{
    for (long t = 0; t < n; t++)
        for (int k = 0; k < r->n_pairs; k++) {
            double phi = (double)pos[t] * r->inv_freq[k];
            cs[(t * r->n_pairs + k) * 2] = cos(phi);
            cs[(t * r->n_pairs + k) * 2 + 1] = sin(phi);
        }
}

#define QK_EPS 1e-9     /* CosScale's q/(‖q‖ + 1e-9), as in the InfoScale code */

void lx_qk_normalize(float *qkv, float *qkn, long N, int H, int KV, int D)
{
    long HD = (long)H * D, QKV = (long)(H + 2 * KV) * D;
#pragma omp parallel for schedule(static)
    for (long row = 0; row < N; row++)
        for (int part = 0; part < 2; part++)
            for (int h = 0; h < (part ? KV : H); h++) {
                float *x = qkv + row * QKV + part * HD + (long)h * D;
                double r = 0.0;
                for (int d = 0; d < D; d++)
                    r += (double)x[d] * x[d];
                r = sqrt(r);
                float inv = (float)(1.0 / (r + QK_EPS));
                for (int d = 0; d < D; d++)
                    x[d] *= inv;
                if (qkn)
                    qkn[(row * 2 + part) * H + h] = (float)r;
            }
}

/* x̂ = x/(r + ε): dx = dx̂/(r + ε) − x̂ (x̂·dx̂)/r. */
void lx_qk_normalize_backward(float *dqkv, const float *qkv, const float *qkn, long N, int H, int KV, int D)
{
    long HD = (long)H * D, QKV = (long)(H + 2 * KV) * D;
#pragma omp parallel for schedule(static)
    for (long row = 0; row < N; row++)
        for (int part = 0; part < 2; part++)
            for (int h = 0; h < (part ? KV : H); h++) {
                const float *xh = qkv + row * QKV + part * HD + (long)h * D;
                float *g = dqkv + row * QKV + part * HD + (long)h * D;
                double r = qkn[(row * 2 + part) * H + h], dot = 0.0;
                for (int d = 0; d < D; d++)
                    dot += (double)xh[d] * g[d];
                double a = 1.0 / (r + QK_EPS), b = r > 0.0 ? dot / r : 0.0;
                for (int d = 0; d < D; d++)
                    g[d] = (float)(a * g[d] - b * xh[d]);
            }
}

void lx_rope_apply(float *qkv, const struct lx_rotary *r, const double *cs, int B, int T, int H, int KV, int D,
                   int sign)
{
    if (!r->n_pairs)
        return;
    long HD = (long)H * D, QKV = (long)(H + 2 * KV) * D, P = r->n_pairs;
    int half = r->layout == LX_ROPE_HALF;
#pragma omp parallel for schedule(static)
    for (long row = 0; row < (long)B * T; row++) {
        const double *c = cs + (row % T) * P * 2;
        for (int part = 0; part < 2; part++)            /* q (H heads), then k (KV heads) */
            for (int h = 0; h < (part ? KV : H); h++) {
                float *x = qkv + row * QKV + part * HD + (long)h * D;
                for (long k = 0; k < P; k++) {
                    long i0 = half ? k : 2 * k, i1 = half ? k + D / 2 : 2 * k + 1;
                    double co = c[2 * k], si = sign * c[2 * k + 1];
                    double a = x[i0], b = x[i1];
                    x[i0] = (float)(a * co - b * si);
                    x[i1] = (float)(a * si + b * co);
                }
            }
    }
}

/* ---- forward / backward ------------------------------------------------------ */

/* Layer-l slice of a per-layer buffer (eval mode keeps one slice). */
#define LAY(a, buf, l, per) ((a)->train ? (buf) + (long)(l) * (per) : (buf))
#define XIN(a, l, NC) ((a)->train ? (a)->x + (long)(l) * (NC) : (a)->x + (long)((l) % 2) * (NC))

/* Window b's per-head statistics sums (H,) into the pass's LX_ST rows (H,
** LX_ATTN_NSTATS) and diag (H,), either may be NULL. */
static void put_stats(double *stats, struct lx_diag *diag, const struct lx_diag *d, int H)
{
    for (int h = 0; h < H; h++) {
        if (stats) {
            double *st = stats + (long)h * LX_ATTN_NSTATS;
            st[LX_ST_PMAX] += d[h].pmax;
            st[LX_ST_ENTROPY] += d[h].entropy;
            st[LX_ST_SIGMA] += d[h].sigma;
            st[LX_ST_ROWS] += d[h].rows;
        }
        if (diag)
            lx_diag_add(&diag[h], &d[h]);
    }
}

/* Evaluation without a probe: every window through the tiled forward, on
** LX_TILE_BQ × LX_TILE_BK tiles (scratch and tables allocated on first use,
** like the head path's far scratch), row statistics summed from the tiles
** into stats (layers' slice: (B, H, LX_ATTN_NSTATS)) and diag ((B, H)). */
static void attention_tiled(struct lx_acts *a, const struct lx_spec *spec, const float *qkv, float *ao,
                            double *stats, struct lx_diag *diag, const float *mult, int B, int T, int H, int KV,
                            int D, int causal)
{
    long HD = (long)H * D, KD = (long)KV * D, QKV = HD + 2 * KD, nqb = (T + LX_TILE_BQ - 1) / LX_TILE_BQ;
    size_t nrot = lx_tile_rot_floats(spec, T, H, D);
    if (lx_tile_tab_rows(spec) && !a->tile_tab)
        a->tile_tab = lx_xmalloc(sizeof(double) * (size_t)H * (1 + LX_SPEC_MAX_OPS) * (size_t)T);
    if (nrot && !a->tile_rot)
        a->tile_rot = lx_xmalloc(sizeof(float) * nrot);
    int want = stats || diag;
    if (want && !a->tile_acc) {
        a->tile_acc = lx_xmalloc(sizeof(double) * lx_tile_acc_doubles(LX_TILE_BQ) * (size_t)a->n_thr);
        a->tile_part = lx_xmalloc(sizeof(struct lx_diag) * (size_t)(H * (nqb + 1)));
    }
    struct lx_tile_stats st = {.out = a->tile_part ? a->tile_part + H * nqb : NULL, .row1 = a->stats_row1,
                               .ranges = a->diag_ranges, .buckets = a->diag_buckets};
    struct lx_tile_ws ws = {.bq = LX_TILE_BQ, .bk = LX_TILE_BK, .n_thr = a->n_thr, .scratch = a->tile,
                            .tab = a->tile_tab, .rot = a->tile_rot, .stats = want ? &st : NULL,
                            .acc = a->tile_acc, .part = a->tile_part};
    for (int b = 0; b < B; b++) {
        const float *q = qkv + (long)b * T * QKV;
        if (want) {
            memset(st.out, 0, sizeof(struct lx_diag) * (size_t)H);
            st.row0 = a->stats_row0 ? a->stats_row0[b] : 0;
        }
        lx_attn_tiled_forward(ao + (long)b * T * HD, (int)HD, q, q + HD, q + HD + KD, (int)QKV, spec, mult, T,
                              H, KV, D, causal, &ws);
        if (want)
            put_stats(stats ? stats + (long)b * H * LX_ATTN_NSTATS : NULL, diag ? diag + (long)b * H : NULL, st.out,
                      H);
    }
}

/* Attention of every (window, head). Training keeps the materialised head
** path at every length: backward reads the probabilities it saved (layers ·
** B · H · T² floats, which bounds training to a few thousand tokens anyway),
** and at those lengths its two big GEMMs per head beat recomputing tiles.
** Evaluation runs tiled, row statistics included (the `attn` task, answer
** rows of retrieval tasks, t5align's calibration), unless the pass asks for
** whole probability rows (a probe) or for the head path (head_path: tests). */
static void attention_all(struct lx_acts *a, const struct lx_spec *spec, const float *qkv, float *ao,
                          float *att, double *stats, struct lx_diag *diag, const float *mult, int layer, int B,
                          int T, int H, int KV, int D, int causal)
{
    if (!a->train && !a->probe && !a->head_path) {
        attention_tiled(a, spec, qkv, ao, stats, diag, mult, B, T, H, KV, D, causal);
        return;
    }
    long HD = (long)H * D, KD = (long)KV * D, QKV = HD + 2 * KD;
    size_t nfar = lx_attn_far_floats(T, D);
    if (!att)
        att = a->att = lx_xmalloc(sizeof(float) * (size_t)T * (size_t)T * (size_t)a->n_thr);
    if (spec->posmap.method && !a->far)
        a->far = lx_xmalloc(sizeof(float) * nfar * (size_t)a->n_thr);
#pragma omp parallel for schedule(dynamic, 1)
    for (long bh = 0; bh < (long)B * H; bh++) {
        int b = (int)(bh / H), h = (int)(bh % H), thr = omp_get_thread_num();
        const float *q = qkv + (long)b * T * QKV + (long)h * D, *k = qkv + (long)b * T * QKV + HD + (long)(h / (H / KV)) * D;
        float *P = a->train ? att + bh * T * T : att + (long)thr * T * T;
        struct lx_attn_ws ws = {
            .tab = a->tab + (long)thr * 2 * T, .far = a->far ? a->far + nfar * (size_t)thr : NULL,
            .stats = stats ? stats + bh * LX_ATTN_NSTATS : NULL,
            .stats_row0 = a->stats_row0 ? a->stats_row0[b] : 0, .stats_row1 = a->stats_row1,
            .mult = mult ? mult[h] : 1.0f,
        };
        lx_attn_head_forward(ao + (long)b * T * HD + (long)h * D, (int)HD, P, q, k, k + KD, (int)QKV, spec, h, T,
                             D, causal, &ws);
        if (a->probe)
            a->probe(a->probe_ctx, layer, b, h, P, T);
    }
}

/* Positions into q and k: rotary by window position (or PoSE ids), then
** CosScale's normalisation; sign −1 is the backward of the rotation. */
static void rope_rows(struct lx_acts *a, const struct lx_spec *spec, float *qkv, int H, int KV, int D, int sign)
{
    if (a->pos)
        lx_rope_apply(qkv, &spec->rotary, a->rope_cs, 1, a->B * a->T, H, KV, D, sign);
    else
        lx_rope_apply(qkv, &spec->rotary, a->rope_cs, a->B, a->T, H, KV, D, sign);
}

double lx_model_forward(const struct lx_model *m, const struct lx_spec *spec, const int *tokens,
                        const int *targets, struct lx_acts *a)
{
    const struct lx_arch *ar = &m->arch;
    struct sizes s = sizes_of(ar, a->B, a->T);
    int causal = ar->mode == LX_MODEL_CAUSAL;
    float eps = (float)ar->norm_eps;
    if (a->pos)
        lx_rope_table_pos(a->rope_cs, &spec->rotary, a->pos, s.N);
    else
        lx_rope_table(a->rope_cs, &spec->rotary, a->T);
    if (spec->cosine && a->train && !a->qkn)
        a->qkn = lx_xmalloc(sizeof(float) * (size_t)(s.L * s.N * 2 * s.H));
    float *x = a->x;
    for (long i = 0; i < s.N; i++)
        memcpy(x + i * s.C, m->v.tok_emb + (long)tokens[i] * s.C, sizeof(float) * (size_t)s.C);
    for (long l = 0; l < s.L; l++) {
        const struct lx_layer_w *W = &m->v.layer[l];
        float *xin = XIN(a, l, s.N * s.C), *xout = XIN(a, l + 1, s.N * s.C);
        float *rstd1 = LAY(a, a->rstd1, l, s.N), *xn1 = LAY(a, a->xn1, l, s.N * s.C);
        float *qkv = LAY(a, a->qkv, l, s.N * s.QKV), *ao = LAY(a, a->ao, l, s.N * s.HD);
        float *att = LAY(a, a->att, l, (long)a->B * s.H * s.T * s.T);
        float *xm = LAY(a, a->xm, l, s.N * s.C);
        float *rstd2 = LAY(a, a->rstd2, l, s.N), *xn2 = LAY(a, a->xn2, l, s.N * s.C);
        float *h = LAY(a, a->h, l, s.N * s.F2), *act = LAY(a, a->act, l, s.N * s.F);

        lx_rmsnorm_forward(xn1, rstd1, xin, W->attn_norm, (int)s.N, (int)s.C, eps);
        lx_linear_forward(qkv, xn1, W->wqkv, W->bqkv, (int)s.N, (int)s.C, (int)s.QKV);
        rope_rows(a, spec, qkv, (int)s.H, (int)s.KV, (int)ar->d_head, +1);
        if (spec->cosine)
            lx_qk_normalize(qkv, a->train ? a->qkn + l * s.N * 2 * s.H : NULL, s.N, (int)s.H, (int)s.KV,
                            (int)ar->d_head);
        if (a->kv)
            lx_kvcache_put(a->kv, (int)l, qkv, a->B, a->T, (int)s.H);
        attention_all(a, spec, qkv, ao, att, a->stats ? a->stats + l * a->B * s.H * LX_ATTN_NSTATS : NULL,
                      a->diag ? a->diag + l * a->B * s.H : NULL, W->logit_scale, (int)l, a->B, a->T, (int)s.H,
                      (int)s.KV, (int)ar->d_head, causal);
        memcpy(xm, xin, sizeof(float) * (size_t)(s.N * s.C));
        lx_matmul(xm, ao, W->wo, (int)s.N, (int)s.C, (int)s.HD, 0, 1, 1.0f, 1.0f);

        lx_rmsnorm_forward(xn2, rstd2, xm, W->mlp_norm, (int)s.N, (int)s.C, eps);
        lx_matmul(h, xn2, W->w13, (int)s.N, (int)s.F2, (int)s.C, 0, 1, 1.0f, 0.0f);
        if (ar->mlp == LX_MLP_SWIGLU)
            lx_swiglu_forward(act, h, (int)s.N, (int)s.F);
        else
            lx_gelu_forward_s(act, a->sig ? a->sig + l * s.N * s.F : NULL, h, (int)(s.N * s.F));
        memcpy(xout, xm, sizeof(float) * (size_t)(s.N * s.C));
        lx_matmul(xout, act, W->w2, (int)s.N, (int)s.C, (int)s.F, 0, 1, 1.0f, 1.0f);
    }
    float *xl = XIN(a, s.L, s.N * s.C);
    lx_rmsnorm_forward(a->xnf, a->rstdf, xl, m->v.norm, (int)s.N, (int)s.C, eps);
    lx_matmul(a->logits, a->xnf, m->v.head, (int)s.N, (int)s.V, (int)s.C, 0, 1, 1.0f, 0.0f);
    if (!targets)
        return 0.0;
    lx_crossentropy_forward(a->loss, a->probs, a->logits, targets, (int)s.N, (int)s.V);
    double sum = 0.0;
    long n = 0;
    for (long i = 0; i < s.N; i++)
        if (targets[i] >= 0) {
            sum += a->loss[i];
            n++;
        }
    return n ? sum / (double)n : 0.0;
}

/* Backward of every (window, head) of one layer into a->dqkv from a->dao.
** Query heads of a group write the same dk, dv rows, so one iteration takes
** a (window, key/value head) and its H / KV query heads in order: no races,
** and the sums do not depend on the thread count. dmult (H,) += the learned
** multipliers' gradient when mult is given. */
static void attention_backward(struct lx_acts *a, const struct lx_spec *spec, const float *qkv, const float *att,
                               const float *mult, float *dmult, int H, int KV, int D, int causal)
{
    int B = a->B, T = a->T, G = H / KV;
    long HD = (long)H * D, KD = (long)KV * D, QKV = HD + 2 * KD;
    double *dm = mult ? lx_xcalloc((size_t)B * (size_t)H, sizeof *dm) : NULL;
#pragma omp parallel for schedule(dynamic, 1)
    for (long bg = 0; bg < (long)B * KV; bg++) {
        int b = (int)(bg / KV), g = (int)(bg % KV), thr = omp_get_thread_num();
        long row0 = (long)b * T * QKV, kof = HD + (long)g * D;
        for (int hh = g * G; hh < (g + 1) * G; hh++) {
            long bh = (long)b * H + hh;
            const float *q = qkv + row0 + (long)hh * D;
            float *dq = a->dqkv + row0 + (long)hh * D, *dk = a->dqkv + row0 + kof;
            float w = mult ? mult[hh] : 1.0f;
            lx_attn_head_backward(dq, dk, dk + KD, (int)QKV, a->dao + (long)b * T * HD + (long)hh * D, (int)HD,
                                  att + bh * T * T, a->dp + (long)thr * T * T, q, qkv + row0 + kof,
                                  qkv + row0 + kof + KD, spec, hh, T, D, causal, a->tab + (long)thr * 2 * T, w);
            if (dm)     /* S = c·w·(q·k) and dq = dL/d(q·k)·K, so dL/dw = Σ_i q_i·dq_i / w */
                for (int t = 0; t < T; t++)
                    for (int d = 0; d < D; d++)
                        dm[bh] += (double)q[(long)t * QKV + d] * dq[(long)t * QKV + d] / w;
        }
    }
    for (long bh = 0; dm && bh < (long)B * H; bh++)     /* in order: thread count free */
        dmult[bh % H] += (float)dm[bh];
    free(dm);
}

void lx_model_backward(const struct lx_model *m, const struct lx_spec *spec, const int *tokens,
                       const int *targets, struct lx_acts *a, struct lx_weights *g)
{
    LX_ASSERT(a->train);
    const struct lx_arch *ar = &m->arch;
    struct sizes s = sizes_of(ar, a->B, a->T);
    int causal = ar->mode == LX_MODEL_CAUSAL, H = (int)s.H, D = (int)ar->d_head, T = a->T;
    long n_scored = 0;
    for (long i = 0; i < s.N; i++)
        n_scored += targets[i] >= 0;
    if (!n_scored)
        return;
    lx_crossentropy_backward(a->dlogits, a->probs, targets, (int)s.N, (int)s.V, (float)(1.0 / (double)n_scored));
    /* head and final norm */
    memset(a->dxn, 0, sizeof(float) * (size_t)(s.N * s.C));
    lx_linear_backward(a->dxn, g->head, NULL, a->dlogits, a->xnf, m->v.head, (int)s.N, (int)s.C, (int)s.V);
    memset(a->dx, 0, sizeof(float) * (size_t)(s.N * s.C));
    lx_rmsnorm_backward(a->dx, g->norm, a->dxn, a->x + s.L * s.N * s.C, m->v.norm, a->rstdf, (int)s.N, (int)s.C);
    long HD = s.HD;
    for (long l = s.L - 1; l >= 0; l--) {
        const struct lx_layer_w *W = &m->v.layer[l];
        struct lx_layer_w *G = &g->layer[l];
        float *xin = a->x + l * s.N * s.C;
        float *rstd1 = a->rstd1 + l * s.N, *xn1 = a->xn1 + l * s.N * s.C;
        float *qkv = a->qkv + l * s.N * s.QKV, *ao = a->ao + l * s.N * HD;
        float *att = a->att + l * (long)a->B * H * T * T;
        float *xm = a->xm + l * s.N * s.C;
        float *rstd2 = a->rstd2 + l * s.N, *xn2 = a->xn2 + l * s.N * s.C;
        float *h = a->h + l * s.N * s.F2, *act = a->act + l * s.N * s.F;

        /* MLP: dx holds d(xout); the residual passes it to xm unchanged */
        memset(a->dact, 0, sizeof(float) * (size_t)(s.N * s.F));
        lx_linear_backward(a->dact, G->w2, NULL, a->dx, act, W->w2, (int)s.N, (int)s.F, (int)s.C);
        memset(a->dh, 0, sizeof(float) * (size_t)(s.N * s.F2));
        if (ar->mlp == LX_MLP_SWIGLU)
            lx_swiglu_backward(a->dh, a->dact, h, (int)s.N, (int)s.F);
        else
            lx_gelu_backward_s(a->dh, a->dact, h, a->sig + l * s.N * s.F, (int)(s.N * s.F));
        memset(a->dxn, 0, sizeof(float) * (size_t)(s.N * s.C));
        lx_linear_backward(a->dxn, G->w13, NULL, a->dh, xn2, W->w13, (int)s.N, (int)s.C, (int)s.F2);
        lx_rmsnorm_backward(a->dx, G->mlp_norm, a->dxn, xm, W->mlp_norm, rstd2, (int)s.N, (int)s.C);

        /* attention: dx now holds d(xm) */
        memset(a->dao, 0, sizeof(float) * (size_t)(s.N * HD));
        lx_linear_backward(a->dao, G->wo, NULL, a->dx, ao, W->wo, (int)s.N, (int)HD, (int)s.C);
        memset(a->dqkv, 0, sizeof(float) * (size_t)(s.N * s.QKV));
        attention_backward(a, spec, qkv, att, W->logit_scale, G->logit_scale, H, (int)s.KV, D, causal);
        if (spec->cosine)
            lx_qk_normalize_backward(a->dqkv, qkv, a->qkn + l * s.N * 2 * H, s.N, H, (int)s.KV, D);
        rope_rows(a, spec, a->dqkv, H, (int)s.KV, D, -1);
        memset(a->dxn, 0, sizeof(float) * (size_t)(s.N * s.C));
        lx_linear_backward(a->dxn, G->wqkv, G->bqkv, a->dqkv, xn1, W->wqkv, (int)s.N, (int)s.C, (int)s.QKV);
        lx_rmsnorm_backward(a->dx, G->attn_norm, a->dxn, xin, W->attn_norm, rstd1, (int)s.N, (int)s.C);
    }
    for (long i = 0; i < s.N; i++) {
        float *ge = g->tok_emb + (long)tokens[i] * s.C;
        for (long c = 0; c < s.C; c++)
            ge[c] += a->dx[i * s.C + c];
    }
}
