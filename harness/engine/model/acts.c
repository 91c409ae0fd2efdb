/*
** harness/engine/model/acts.c - the activations of a forward pass, and the
** memory plan: what a model and one pass over (B, T) take, checked before
** anything is allocated (model.h).
**
** One table (acts_table) lists every buffer of struct lx_acts with its size
** as a function of the architecture, (B, T) and the mode. lx_acts_alloc
** carves the rows every pass uses from one block: rows of phase 0 each have
** their own place; the rows of phases 1, 2, 3 (evaluation's attention, MLP
** and head, never live at once) overlay one region, as large as the largest
** phase. The rows a spec or a task may need (a probe's probabilities, the
** posmap's far rows, CosScale's norms) are allocated on first use
** (lx_acts_lazy), with the size the same row gives. lx_acts_bytes and
** lx_run_bytes add the same rows up, so a new buffer is one row.
*/
#include "harness/engine/model/model.h"

#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/hashcache.h"
#include "harness/core/version.h"
#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/wprod.h"
#include "harness/engine/model/kvcache.h"

/* ---- activations ------------------------------------------------------------ */

static int n_threads(void)
{
    return omp_get_max_threads();
}

#define ALIGN 64            /* bytes: every row of the block starts on a cache line */
#define MAX_ROWS 48
#define N_PHASES 4

/* One buffer: the field of struct lx_acts that points at it, its element
** count (a double: hostile sizes overflow long) and size, its phase (0: a
** place of its own), and whether it is allocated on first use (lazy),
** counted by the plan when every flag of `when` (LX_RUN_*) is in its uses. */
struct acts_row {
    size_t field;
    double n;
    size_t el;
    int phase;
    int lazy;
    unsigned when;
};

#define ROW(f, count, size) {offsetof(struct lx_acts, f), (count), (size), 0, 0, 0}
#define PHASE(k, f, count) {offsetof(struct lx_acts, f), (count), 4, (k), 0, 0}
#define LAZY(f, count, size, w) {offsetof(struct lx_acts, f), (count), (size), 0, 1, (w)}

/* Rows the evaluation pass runs its MLP and head over at a time: all of
** them in fast numerics (a row block would change OpenBLAS's bits),
** LX_EVAL_ROWS in portable numerics, where a block is the same bits as the
** whole (harness/engine/kernels/gemm.h). */
static double eval_block(double N, int portable)
{
    return portable && N > LX_EVAL_ROWS ? LX_EVAL_ROWS : N;
}

/* Every buffer of a pass over (B, T). Training keeps every layer's
** activations for backward; evaluation holds one layer's (the residual
** stream updated in place, the MLP's activation over its pre-activation),
** its attention, MLP and head phases overlaid, the MLP's and the final
** norm's scratch for one block of eval_block rows, and the probabilities of
** the loss for one block of LX_EVAL_ROWS rows. portable: the numerics the
** pass runs in. Returns the number of rows. */
static int acts_table(struct acts_row *r, const struct lx_arch *arch, int B, int T, int train, int portable)
{
    LX_ASSERT(train == LX_ACTS_EVAL || train == LX_ACTS_EVAL_LOSS || train == LX_ACTS_EVAL_ANSWER ||
              train == LX_ACTS_TRAIN_TILED || train == LX_ACTS_TRAIN_MATERIALISED);
    int loss_only = train == LX_ACTS_EVAL_LOSS, answer = train == LX_ACTS_EVAL_ANSWER;
    train = loss_only || answer ? LX_ACTS_EVAL : train;
    double N = (double)B * T, C = (double)arch->d_model, HD = (double)arch->heads * arch->d_head,
           F = (double)arch->d_mlp, F2 = lx_arch_gated(arch) ? 2 * F : F, V = (double)arch->vocab,
           TT = (double)T * T, H = (double)arch->heads, nthr = n_threads(), LL = (double)arch->layers,
           QKV = (double)lx_arch_qkv(arch), D = (double)arch->d_head, nsu = (double)lx_tile_stat_units(LX_TILE_BQ, T);
    double KVp = (double)lx_tile_kpack_floats(T, lx_arch_kv(arch), arch->d_head);  /* the tiles' packed keys */
    double R = N < LX_EVAL_ROWS ? N : LX_EVAL_ROWS, far = nthr * (double)lx_attn_far_floats(T, (int)D);
    int n = 0, mat = train == LX_ACTS_TRAIN_MATERIALISED, gqa = lx_arch_kv(arch) < arch->heads;
    double KVh = (double)lx_arch_kv(arch);
    double TL = arch->mode == LX_MODEL_CAUSAL ? T : 2.0 * T;    /* distance tables: both signs on an mlm model */
    double NB = eval_block(N, portable);
    double NA = (double)B * LX_ACTS_ANSWER_ROWS < N ? (double)B * LX_ACTS_ANSWER_ROWS : N;   /* answer rows */
    if (train) {
        /* the materialised path keeps every head's T x T probabilities (att) and a
        ** thread's T x T backward scratch (dp); the tiled path a log-sum-exp per row
        ** (lse), the tiles' scratch, and with grouped-query heads each head's dk, dv */
        struct acts_row t[] = {
            ROW(x, (LL + 1) * N * C, 4), ROW(rstd1, LL * N, 4), ROW(xn1, LL * N * C, 4),
            ROW(qkv, LL * N * QKV, 4), ROW(att, mat ? LL * B * H * TT : 0, 4), ROW(ao, LL * N * HD, 4),
            ROW(xm, LL * N * C, 4), ROW(rstd2, LL * N, 4), ROW(xn2, LL * N * C, 4), ROW(h, LL * N * F2, 4),
            ROW(act, LL * N * F, 4), ROW(sig, !lx_arch_gated(arch) ? LL * N * F : 0, 4),
            ROW(post, arch->post_norms ? LL * 2 * N * C : 0, 4), ROW(post_rstd, arch->post_norms ? LL * 2 * N : 0, 4),
            ROW(par, arch->parallel ? N * C : 0, 4), ROW(embraw, arch->emb_norm ? N * C : 0, 4),
            ROW(embrstd, arch->emb_norm ? N : 0, 4),
            ROW(rstdf, N, 4), ROW(xnf, N * C, 4), ROW(logits, N * V, 4), ROW(probs, N * V, 4), ROW(loss, N, 4),
            ROW(rope_cs, N * D, 8), ROW(rope_local, arch->local_every ? N * D : 0, 8),
            ROW(tab, mat ? nthr * 2 * TL : 0, 8),
            ROW(dx, N * C, 4), ROW(dxn, N * C, 4), ROW(dqkv, N * QKV, 4), ROW(dao, N * HD, 4),
            ROW(dh, N * F2, 4), ROW(dact, N * F, 4), ROW(dlogits, N * V, 4), ROW(dp, mat ? nthr * TT : 0, 4),
            ROW(lse, mat && !arch->sinks ? 0 : LL * N * H, 4),     /* learned sinks' gradient reads it */
            ROW(qkraw, arch->qk_norm ? LL * N * (H + KVh) * D : 0, 4), ROW(qkr, arch->qk_norm ? LL * N * (H + KVh) : 0, 4),
            ROW(tile, mat ? 0 : nthr * (double)lx_tile_thread_floats(LX_TILE_BQ, LX_TILE_BK, (int)D), 4),
            ROW(tile_tab, mat ? 0 : H * (1 + LX_SPEC_MAX_OPS) * TL, 8),
            ROW(tile_kpack, mat ? 0 : KVp, 4),
            ROW(tile_bwd, mat ? 0 : nthr * (double)lx_tile_bwd_thread_floats(LX_TILE_TRAIN_BQ, LX_TILE_TRAIN_BK, (int)D, T), 4),
            ROW(dkv, mat || !gqa ? 0 : H * T * 2 * D, 4),
            LAZY(far, mat ? far : 0, 4, 0), LAZY(qkn, LL * N * 2 * H, 4, 0),   /* posmap, CosScale: counted always */
            LAZY(rope_csk, N * D, 8, LX_RUN_DECAY),
        };
        memcpy(r, t, sizeof t);
        n = (int)(sizeof t / sizeof *t);
    } else {
        struct acts_row e[] = {
            ROW(x, N * C, 4), ROW(rstd1, N, 4), ROW(rstdf, N, 4), ROW(loss, N, 4),     /* no probs: no backward */
            ROW(par, arch->parallel ? N * C : 0, 4),
            PHASE(1, xn1, N * C), PHASE(1, qkv, N * QKV), PHASE(1, ao, N * HD),         /* attention */
            PHASE(1, tile_kpack, KVp),
            PHASE(2, xn2, NB * C), PHASE(2, h, NB * F2),                                /* MLP */
            PHASE(3, xnf, (answer && NA < NB ? NA : NB) * C),                          /* head */
            PHASE(3, logits, (loss_only ? R : answer ? NA : N) * V), ROW(hrow, answer ? N : 0, 4),
            ROW(rope_cs, N * D, 8), ROW(rope_local, arch->local_every ? N * D : 0, 8), ROW(tab, nthr * 2 * TL, 8),
            ROW(tile, nthr * (double)lx_tile_thread_floats(LX_TILE_BQ, LX_TILE_BK, (int)D), 4),
            ROW(tile_tab, H * (1 + LX_SPEC_MAX_OPS) * TL, 8),
            ROW(tile_acc, nthr * (double)lx_tile_acc_doubles(LX_TILE_BQ), 8),
            ROW(tile_part, H * (nsu + 1), sizeof(struct lx_diag)),
            LAZY(tile_rot, (arch->mode == LX_MODEL_CAUSAL ? 1 : 2) * ((H + KVh) * T * D + KVp), 4,
                 LX_RUN_POSMAP),                                            /* far-key rows, their keys packed */
            LAZY(att, nthr * TT, 4, LX_RUN_PROBS),                          /* the head path (a probe) */
            LAZY(tile_pn, nthr * (double)lx_tile_pnorm_floats(LX_TILE_BQ, T), 4, LX_RUN_PNORM),
            LAZY(far, far, 4, LX_RUN_PROBS | LX_RUN_POSMAP),
            LAZY(rope_csk, N * D, 8, LX_RUN_DECAY),                         /* the keys' rotary table (xpos) */
        };
        memcpy(r, e, sizeof e);
        n = (int)(sizeof e / sizeof *e);
    }
    LX_ASSERT(n <= MAX_ROWS);
    return n;
}

/* `train` with LX_ACTS_TRAIN resolved to the process's attention path. */
static int acts_mode(int train)
{
    if (train != LX_ACTS_TRAIN)
        return train;
    return lx_train_attn_get() == LX_TRAIN_MATERIALISED ? LX_ACTS_TRAIN_MATERIALISED : LX_ACTS_TRAIN_TILED;
}

/* The mode an allocation was laid out in. */
static int mode_of(const struct lx_acts *a)
{
    return a->loss_only ? LX_ACTS_EVAL_LOSS : a->answer ? LX_ACTS_EVAL_ANSWER : !a->train ? LX_ACTS_EVAL
           : a->tiled ? LX_ACTS_TRAIN_TILED : LX_ACTS_TRAIN_MATERIALISED;
}

static double row_bytes(const struct acts_row *r)
{
    return ceil(r->n * (double)r->el / ALIGN) * ALIGN;
}

static void **row_ptr(struct lx_acts *a, const struct acts_row *r)
{
    return (void **)((char *)a + r->field);
}

/* The block's layout: each row's offset (lazy rows: -1), and its size. */
static double block_layout(const struct acts_row *r, int n, double *off)
{
    double phase[N_PHASES] = {0}, region = 0.0;
    for (int i = 0; i < n; i++)
        if (!r[i].lazy) {
            off[i] = phase[r[i].phase];
            phase[r[i].phase] += row_bytes(&r[i]);
        } else
            off[i] = -1.0;
    for (int k = 1; k < N_PHASES; k++)
        region = phase[k] > region ? phase[k] : region;
    for (int i = 0; i < n; i++)
        if (!r[i].lazy && r[i].phase)
            off[i] += phase[0];
    return phase[0] + region;
}

/* Bytes of the block (lazy 0) or of the lazy rows `uses` counts (lazy 1). */
static double table_bytes(const struct lx_arch *arch, int B, int T, int train, int lazy, unsigned uses)
{
    struct acts_row r[MAX_ROWS];
    double off[MAX_ROWS];
    int n = acts_table(r, arch, B, T, acts_mode(train), lx_numerics_get() == LX_NUMERICS_PORTABLE);
    if (!lazy)
        return block_layout(r, n, off);
    double total = 0.0;
    for (int i = 0; i < n; i++)
        if (r[i].lazy && (r[i].when & uses) == r[i].when)
            total += row_bytes(&r[i]);
    return total;
}

double lx_acts_bytes(const struct lx_arch *arch, int B, int T, int train)
{
    return table_bytes(arch, B, T, train, 0, 0);
}

int lx_acts_alloc(struct lx_acts *a, const struct lx_arch *arch, int B, int T, int train, struct lx_error *err)
{
    memset(a, 0, sizeof *a);
    train = acts_mode(train);
    double need = lx_acts_bytes(arch, B, T, train), avail = lx_mem_available();
    if (need <= avail && need < (double)SIZE_MAX && (a->block = lx_big_calloc((size_t)need))) {
        a->block_bytes = (size_t)need;
        struct acts_row r[MAX_ROWS];
        double off[MAX_ROWS];
        int portable = lx_numerics_get() == LX_NUMERICS_PORTABLE;
        int n = acts_table(r, arch, B, T, train, portable);
        block_layout(r, n, off);
        for (int i = 0; i < n; i++)
            if (!r[i].lazy && r[i].n > 0)
                *row_ptr(a, &r[i]) = (char *)a->block + (size_t)off[i];
        a->arch = *arch;
        a->B = B;
        a->T = T;
        a->train = train != LX_ACTS_EVAL && train != LX_ACTS_EVAL_LOSS && train != LX_ACTS_EVAL_ANSWER;
        a->loss_only = train == LX_ACTS_EVAL_LOSS;
        a->answer = train == LX_ACTS_EVAL_ANSWER;
        a->bad_logit = -1;
        a->tiled = train == LX_ACTS_TRAIN_TILED;
        a->portable = portable;
        a->rows = a->train ? (long)B * T : (long)eval_block((double)B * T, portable);
        a->n_thr = n_threads();
        return LX_OK;
    }
    char nb[32], ab[32];
    return lx_err(err, LX_ENOMEM, "activations for %d x %d tokens on %d threads need %s; %s of memory are "
                  "available\n  hint: use a shorter length, a smaller batch or fewer --threads",
                  B, T, n_threads(), lx_fmt_bytes(nb, need), lx_fmt_bytes(ab, avail));
}

void *lx_acts_lazy(struct lx_acts *a, void *field)
{
    void **f = field;
    if (*f)
        return *f;
    struct acts_row r[MAX_ROWS];
    int n = acts_table(r, &a->arch, a->B, a->T, mode_of(a), a->portable);
    for (int i = 0; i < n; i++)
        if (r[i].lazy && row_ptr(a, &r[i]) == f)
            return *f = lx_xmalloc((size_t)row_bytes(&r[i]));
    LX_ASSERT(!"a lazy row of acts_table");
    return NULL;
}

/* ---- memory: what a model needs, checked before anything is allocated --------- */

double lx_model_bytes(const struct lx_arch *a, int train)
{
    /* weights (float); training adds the gradient and AdamW's two moments
    ** (float each) and the weight-decay mask (a byte each), and in bf16
    ** numerics the weights' bf16 copy and its matrices packed both ways,
    ** which the products read (train.h) */
    int bf16 = train && lx_numerics_get() == LX_NUMERICS_BF16;
    double n = (double)lx_arch_n_params(a);
    return n * (train ? 4.0 * 4 + 1 + (bf16 ? 2.0 : 0.0) : 4.0) + (bf16 ? lx_arch_train_packed_bytes(a) : 0.0);
}

unsigned lx_run_uses(const struct lx_spec *spec)
{
    return (spec->posmap.method ? LX_RUN_POSMAP : 0u) | (spec->rotary.decay_scale ? LX_RUN_DECAY : 0u);
}

/* lx_run_bytes with the KV cache a spec's visibility sizes (NULL: every key's rows). */
static double run_bytes(const struct lx_arch *a, const struct lx_spec *spec, int B, int T, int train, unsigned uses)
{
    double ints = 3 * (double)B * T * 4;                                    /* tokens, targets, positions */
    if (!train && lx_attn_half())
        uses |= LX_RUN_PNORM;       /* P rounded normalised, a block's rows (model.c, attention_tiled) */
    double kv = !train && (uses & LX_RUN_KVCACHE) ? lx_kvcache_bytes(a, spec, B, T, (uses & LX_RUN_KVFAR) != 0,
                                                                     (uses & LX_RUN_KVDIST) != 0) : 0.0;
    int acts = train                  ? train
               : uses & LX_RUN_LOSS   ? LX_ACTS_EVAL_LOSS
               : uses & LX_RUN_ANSWER ? LX_ACTS_EVAL_ANSWER
                                      : LX_ACTS_EVAL;
    return lx_model_bytes(a, train) + lx_acts_bytes(a, B, T, acts) + table_bytes(a, B, T, acts, 1, uses) + ints + kv;
}

double lx_eval_weight_bytes(const struct lx_arch *a, double held, int bf16)
{
    return bf16 ? lx_arch_bf16_bytes(a) : held > 0 ? held : lx_model_bytes(a, 0);
}

double lx_run_bytes(const struct lx_arch *a, int B, int T, int train, unsigned uses)
{
    return run_bytes(a, NULL, B, T, train, uses);
}

double lx_eval_bytes(const struct lx_arch *a, const struct lx_spec *spec, double held, int bf16, int B, int T,
                     unsigned uses)
{
    double run = run_bytes(a, spec, B, T, 0, uses);
    if (held <= 0 && !bf16)
        return run;     /* fp32 in lenx's own buffer: products straight from it */
    long width = a->d_model > a->d_mlp ? a->d_model : a->d_mlp;
    if (width < a->heads * a->d_head)
        width = a->heads * a->d_head;
    return run - lx_model_bytes(a, 0) + lx_eval_weight_bytes(a, held, bf16) + lx_wprod_scratch_bytes(width);
}

int lx_model_alloc(struct lx_model *m, const struct lx_arch *a, struct lx_error *err)
{
    memset(m, 0, sizeof *m);
    double need = lx_model_bytes(a, 0), avail = lx_mem_available();
    size_t n = lx_arch_n_params(a);
    char nb[32], ab[32];
    if (need > avail || !(m->w = lx_big_calloc(n * sizeof *m->w)))
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
    if (a->block) {
        struct acts_row r[MAX_ROWS];
        int n = acts_table(r, &a->arch, a->B, a->T, mode_of(a), a->portable);
        for (int i = 0; i < n; i++)
            if (r[i].lazy)
                free(*row_ptr(a, &r[i]));
    }
    lx_big_free(a->block, a->block_bytes);
    memset(a, 0, sizeof *a);
}

/* ---- finiteness: a NaN or Inf must fail the cell, never be stored as a number ---- */

/* A non-finite float by name: "inf", "-inf" or "nan". Whether a sum of huge
** products of both signs ends as inf or NaN, and a NaN's sign, depend on the
** order the BLAS kernel sums in; an error names the kind, never the sign of a
** NaN (which "%g" would print as "-nan" on one machine and "nan" on another). */
static const char *nonfinite_name(float x)
{
    return isnan(x) ? "nan" : x > 0 ? "inf" : "-inf";
}

/* The first non-finite value of n values of type t at p, or -1: chunks in parallel. */
static long first_nonfinite(const void *p, int t, long n)
{
    enum { CHUNK = 1 << 18 };
    long first = n;
#pragma omp parallel for schedule(dynamic, 1) reduction(min : first)
    for (long c = 0; c < n; c += CHUNK) {
        long k = lx_half_first_nonfinite((const char *)p + lx_dtype_bytes(t, (size_t)c), t,
                                         (size_t)(n - c < CHUNK ? n - c : CHUNK));
        if (k >= 0 && c + k < first)
            first = c + k;
    }
    return first < n ? first : -1;
}

/* The first non-finite value of a packed matrix in row-major order (*x its value), or -1. */
static long packed_first_nonfinite(struct lx_wmat w, long rows, long cols, float *x)
{
    float *row = lx_xmalloc(sizeof(float) * (size_t)cols);
    for (long r = 0; r < rows; r++) {
        lx_wmat_row(row, w, r, cols);
        for (long c = 0; c < cols; c++)
            if (!isfinite(row[c])) {
                *x = row[c];
                free(row);
                return r * cols + c;
            }
    }
    free(row);
    return -1;
}

/* The hash-cache key of a finite check: the weights' hash, how each matrix
** is held (rounding fp32 to bf16 can make an inf of a finite value) and the build. */
static void finite_key(const struct lx_model *m, const char *weights_sha256, const struct lx_tensor_info *t, int n,
                       struct lx_buf *key)
{
    lx_buf_printf(key, "lenx-hashcache 1\nfinite\n%s\n%s\n", lx_build_commit(), weights_sha256);
    for (int i = 0; i < n; i++) {
        const struct lx_wmat *w = m->held ? &m->held->t[i] : NULL;
        lx_buf_printf(key, "%d%c", w ? w->type : LX_DT_F32, w && w->packed_rows ? 'p' : '.');
    }
}

/* The first non-finite value of tensor i (*x its value), or -1. */
static long tensor_first_nonfinite(const struct lx_model *m, const struct lx_tensor_info *t, int i, float *x)
{
    struct lx_wmat w = m->held ? m->held->t[i] : (struct lx_wmat){m->w + t->offset, LX_DT_F32, 0, NULL, 0};
    long cnt = t->shape[0] * (t->ndim == 2 ? t->shape[1] : 1), j;
    float blk[256];
    if (w.packed_rows)  /* packed: its padding is 0; a hit is then found row by row */
        return first_nonfinite(w.p, w.type, (long)(lx_wmat_packed_bytes(w.packed_rows, t->shape[1]) / 2)) < 0
               ? -1 : packed_first_nonfinite(w, t->shape[0], t->shape[1], x);
    if ((j = first_nonfinite(w.p, w.type, cnt)) >= 0) {
        /* the value: a quantized one is its block's first (j is where the block begins) */
        lx_half_to_f32(blk, (const char *)w.p + lx_dtype_bytes(w.type, (size_t)j), w.type, lx_dtype_block(w.type));
        *x = blk[0];
    }
    return j;
}

int lx_model_check_finite(const struct lx_model *m, const char *weights_sha256, struct lx_error *err)
{
    int n = lx_arch_tensors(&m->arch, NULL);
    struct lx_tensor_info *t = lx_xcalloc((size_t)n, sizeof *t);
    lx_arch_tensors(&m->arch, t);
    struct lx_buf key = {0};
    char got[65];
    int keyed = weights_sha256 && strlen(weights_sha256) == 64, rc = LX_OK;
    if (keyed)
        finite_key(m, weights_sha256, t, n, &key);
    int known = keyed && lx_hashcache_get(lx_buf_str(&key), got) && strcmp(got, weights_sha256) == 0;
    for (int i = 0; !known && i < n && rc == LX_OK; i++) {
        float x = 0.0f;
        long j = tensor_first_nonfinite(m, &t[i], i, &x);
        if (j >= 0)
            rc = lx_err(err, LX_ERUN, "tensor '%s' holds a non-finite value (%s) at index %ld\n"
                        "  hint: the checkpoint is damaged or training diverged (a lower lr, or clip); "
                        "retrain it", t[i].name, nonfinite_name(x), j);
    }
    if (keyed && !known && rc == LX_OK)
        lx_hashcache_put(lx_buf_str(&key), weights_sha256);
    lx_buf_free(&key);
    free(t);
    return rc;
}

int lx_acts_check_finite(const struct lx_acts *a, long V, int nb, const int *targets, struct lx_error *err)
{
    long T = a->T;
    if (a->half_over_layer)     /* the cause of what follows: infinite keys, NaN probabilities */
        return lx_err(err, LX_ERUN, "kv_cache f16: a query, key or value of layer %d at window %ld, position %ld "
                      "is past f16's range (|x| > 65504) and became infinite, as in llama.cpp's f16 cache\n"
                      "  hint: use kv_cache bf16 (fp32's range in the same bytes) or fp32",
                      a->half_over_layer - 1, a->half_over_row / T, a->half_over_row % T);
    for (long i = 0; i < (long)nb * T; i++) {
        /* a row's kept logits first: their error names the token */
        const float *lg = lx_acts_logits(a, i);
        long bad = -1;
        float x = 0.0f;
        for (long v = 0; lg && bad < 0 && v < V; v++)
            if (!isfinite(lg[v]))
                bad = v, x = lg[v];
        if (bad < 0 && targets && targets[i] >= 0 && !isfinite(a->loss[i]))
            return lx_err(err, LX_ERUN, "a non-finite loss (%s) at window %ld, position %ld\n"
                          "  hint: the weights or the stack's parameters overflow; check the model's val loss",
                          nonfinite_name(a->loss[i]), i / T, i % T);
        if (a->loss_only && a->bad_logit >= 0 && a->bad_logit / V == i)
            bad = a->bad_logit % V, x = a->bad_value;
        if (bad >= 0)
            return lx_err(err, LX_ERUN, "a non-finite logit (%s) at window %ld, position %ld, token %ld\n"
                          "  hint: the weights or the stack's parameters overflow; check the model's val "
                          "loss", nonfinite_name(x), i / T, i % T, bad);
    }
    return LX_OK;
}

const float *lx_acts_logits(const struct lx_acts *a, long r)
{
    LX_ASSERT(r >= 0 && r < (long)a->B * a->T);
    if (a->loss_only)
        return NULL;
    long k = a->answer ? a->hrow[r] : r;
    return k < 0 ? NULL : a->logits + k * a->arch.vocab;
}
