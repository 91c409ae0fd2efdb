/*
** harness/engine/model/acts.c - the activations of a forward pass, and the
** memory plan: what a model and one pass over (B, T) take, checked before
** anything is allocated (model.h).
*/
#include "harness/engine/model/model.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/attention.h"
#include "harness/engine/model/kvcache.h"

/* ---- activations ------------------------------------------------------------ */

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

