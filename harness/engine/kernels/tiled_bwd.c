/*
** harness/engine/kernels/tiled_bwd.c - the tiled attention backward for
** training (see attention.h, "the tiled backward").
**
** FlashAttention-2's backward (Dao 2023, arXiv:2307.08691, Algorithm 2). The
** forward kept each row's log-sum-exp L_i = m_i + ln s_i. For head h, key
** tile [j0, j1) and every query block [i0, i1) that sees it:
**
**     S = c·Q[i0:i1] K[j0:j1]ᵀ,  dP = dO[i0:i1] V[j0:j1]ᵀ          (two GEMMs)
**     l_ij = A_ij·S_ij + B_ij,  P_ij = exp(l_ij − L_i)              (the forward's logits, recomputed)
**     dS_ij = P_ij·(dP_ij − D_i)·A_ij·c,  D_i = dO_i · O_i = Σ_j P_ij dP_ij
**     dV[j0:j1] += Pᵀ dO,  dK[j0:j1] += dSᵀ Q,  dQ[i0:i1] += dS K   (three GEMMs)
**
** with A, B the spec's maps written as in the forward, A = R(n)·X(t),
** B = Σ_k R_k(n)·G_k(t) (tiled.c), and c the q·k scale times the head's
** learned multiplier. Under Gemma 2's soft-cap the logits are
** κ·tanh(l_ij/κ), recomputed the same way, and A_ij takes the cap's slope
** 1 − tanh²(l_ij/κ) as a factor (a learned bias's gradient too). S is
** overwritten by P and dP by dS, so a thread holds two tiles. Nothing T × T is stored: per head the rows' L and D (T floats
** each), and per thread the tiles.
**
** The five products run through lx_gemm or on lenx's tile kernels (gemm.h;
** D a multiple of LX_GEMM_NR), as ws->products says (attention.h). On the
** fp32 kernel a key tile's Kᵀ and Vᵀ are packed once for all the query
** blocks that see it, Q, dO and K are read in place as panels, and P and dS
** are read in place as Pᵀ and dSᵀ (lx_gemm_rows_t). Their chains are
** lx_gemm_portable's, so in portable numerics the two give the same bits
** (the tests compare them) and the kernel is the faster. Causal rows above a
** key tile's first key skip S and dP on the kernels (their P and dS are 0,
** as row_grad writes them), as in the forward.
**
** In numerics bf16 the products read bf16 values, as the forward's do: q, k,
** v come rounded from the forward and dO from the model (model.c), and P and
** dS are rounded before the three products that read them. On a CPU with
** AVX512-BF16 all five run on the bf16 tile kernel (lx_gemm_rows_bf16; its
** plain C twin with ws->bf16_plain): the key tile packed in bf16 pairs three
** ways (Kᵀ, Vᵀ, K), the query block's Q and dO as rows and as pairs, P and dS
** written in bf16 (Pᵀ, dSᵀ, dS). Elsewhere the fp32 tile kernel multiplies
** the same bf16 values with fp32 sums.
*/
#include "harness/engine/kernels/attention.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/engine/kernels/gemm.h"
#include "harness/engine/kernels/numerics.h"

/* Round n up to even: the row stride of a bf16 A operand (an odd K reads one value past). */
static long even(long n)
{
    return n + (n & 1);
}

/* bf16 values of the bf16 kernel's operands: Q and dO rows, the key tile
** packed three ways, Q and dO in pairs, Pᵀ and dSᵀ (pairs of query rows,
** 2·bk values each), dS (bq rows). */
static size_t bf16_values(int bq, int bk, int D)
{
    return 2 * (size_t)bq * D + 3 * lx_gemm_bt_floats(bk, D) + 2 * lx_gemm_bt_floats(bq, D) +
           2 * (size_t)even(bq) * bk + (size_t)bq * even(bk);
}

/* Floats of the fp32 kernel's operands: Kᵀ and Vᵀ panels. */
static size_t f32_floats(int bk, int D)
{
    return 2 * lx_gemm_bt_floats(bk, D);
}

size_t lx_tile_bwd_thread_floats(int bq, int bk, int D, int T)
{
    size_t base = 2 * (size_t)bq * (size_t)bk + 2 * (size_t)bk + (size_t)T;
    if (D % LX_GEMM_NR)
        return base;
    size_t f = f32_floats(bk, D), b = (bf16_values(bq, bk, D) + 1) / 2;
    return base + (f > b ? f : b);
}

/* What one call shares between its threads. */
struct tbwd {
    const struct lx_spec *spec;         /* the attention spec the forward read */
    const float *q, *k, *v;             /* (T, ld) views: query head h at h·D, its key/value head at (h / G)·D */
    const float *o, *do_;               /* (T, ldo) the forward's output and its gradient */
    const float *lse;                   /* (H, T) each row's log-sum-exp from the forward */
    float *dq, *dk, *dv;                /* (T, ld) views like q, k, v; accumulated */
    const float *mult;                  /* (H,) learned multipliers of S, or NULL */
    const struct lx_tile_bwd_ws *ws;    /* tiles, scratch, tables */
    int T, H, D, ld, ldo, causal;       /* as in struct lx_attn_shape */
    int G;                              /* query heads per key/value head, H / KV */
    int n_tab;                          /* rows of a head's distance tables (0: no distance op) */
    long L;                             /* their length, lx_spec_tab_len */
    int exp_level;                      /* the exp loop's build (lx_tile_exp_level) */
    int bf16;                           /* 1: numerics bf16, P and dS rounded to bf16 */
    int kern;                           /* the products: 0 lx_gemm, 1 the fp32 tile kernel, 2 the bf16 one */
    void (*bf16prod)(float *, int, const uint16_t *, long, long, const uint16_t *, long, int, int, int, float, float);
};

/* Row i's logits over tile columns [0, nv) in place, and their slopes in a
** (a[0] alone when they share one); n the keys the row sees. Returns 1 when
** every slope is a[0]. */
static int row_logits(const struct tbwd *x, float *s, float *a, int h, long i, long n, long j0, long nv)
{
    const struct lx_spec *spec = x->spec;
    if (!spec->n_ops && spec->temperature == 1.0) {
        a[0] = 1.0f;
        return 1;
    }
    if (!spec->has_dist) {
        double A, B;
        lx_spec_affine(spec, h, n, 0.0, &A, &B);
        float a0 = (float)A, b0 = (float)B;
        for (long c = 0; c < nv; c++)
            s[c] = a0 * s[c] + b0;
        a[0] = a0;
        return 1;
    }
    double Rk[LX_SPEC_MAX_OPS], R = lx_tile_row_factors(spec, n, Rk, x->n_tab - 1);
    const double *tab = x->ws->tab + (long)h * x->n_tab * x->L;
    for (long c = 0; c < nv; c++) {
        long t = lx_spec_tab_index(spec, i, j0 + c, x->T);
        double A = R * tab[t], B = 0.0;
        for (int r = 1; r < x->n_tab; r++)
            B += Rk[r - 1] * tab[(long)r * x->L + t];
        s[c] = (float)(A * s[c] + B);
        a[c] = (float)A;
    }
    return 0;
}

/* A learned relative bias (added last) gets the logits' gradient over τ,
** P·(dP − D_i)/τ, summed per distance in the head's row of ws->dist_grad. */
static void row_dist_grad(const struct tbwd *x, const float *s, const float *g, const float *cap, int h, long i,
                          long j0, long nv, float Di)
{
    double *dg = x->ws->dist_grad + (long)h * x->L, inv = 1.0 / x->spec->temperature;
    for (long col = 0; col < nv; col++)
        dg[lx_spec_tab_index(x->spec, i, j0 + col, x->T)] +=
            (double)(s[col] * (g[col] - Di) * (cap ? cap[col] : 1.0f)) * inv;
}

/* Gemma 2's soft-cap of the row's logits s[0, nv) in place, as the forward
** caps them, each one's slope into cap and into its slope a (from a[0] when
** `same`: the row's slopes then differ). */
static void row_softcap(float *s, float *a, float *cap, int same, long nv, double c)
{
    float a0 = a[0];
    lx_softcap_row(s, 0, nv, c);
    for (long col = 0; col < nv; col++) {
        cap[col] = lx_softcap_slope(s[col], c);
        a[col] = (same ? a0 : a[col]) * cap[col];
    }
}

/* Row i of the tile, which sees n keys: S becomes P, dP becomes dS over its
** visible columns [c0, nv) (0 <= c0 <= nv <= nc; 0 before and past them);
** a and cap: scratch of nc floats. */
static void row_grad(const struct tbwd *x, float *s, float *g, float *a, float *cap, int h, long i, long n, long j0,
                     long c0, long nv, long nc, float L, float Di, float c)
{
    for (long col = 0; col < c0; col++)     /* before the window's first key */
        s[col] = g[col] = 0.0f;
    s += c0, g += c0, j0 += c0, nv -= c0, nc -= c0;
    int same = row_logits(x, s, a, h, i, n, j0, nv);
    if (x->spec->softcap != 0.0) {
        row_softcap(s, a, cap, same, nv, x->spec->softcap);
        same = 0;
    }
    lx_tile_exp_sum(s, nv, L, x->exp_level);
    if (x->ws->dist_grad)
        row_dist_grad(x, s, g, x->spec->softcap != 0.0 ? cap : NULL, h, i, j0, nv, Di);
    if (same) {
        float ac = a[0] * c;
#pragma omp simd
        for (long col = 0; col < nv; col++)
            g[col] = s[col] * (g[col] - Di) * ac;
    } else {
#pragma omp simd
        for (long col = 0; col < nv; col++)
            g[col] = s[col] * (g[col] - Di) * a[col] * c;
    }
    for (long col = nv; col < nc; col++)
        s[col] = g[col] = 0.0f;
}

/* A head's view of one call: its rows of q, k, v, o, dO, L and gradients. */
struct hview {
    const float *q, *k, *v, *o, *do_, *L;
    float *dq, *dk, *dv;
    int ldk;                            /* row stride of dk, dv */
    float c;                            /* the q·k scale times the head's multiplier */
};

/* S (scaled by c) and dP of tile rows [ra, nr) through lx_gemm (rows before ra are 0). */
static void scores_gemm(const struct tbwd *x, const struct hview *v, float *P, float *dS, long i0, long j0, int ra,
                        int nr, int nc)
{
    int bk = x->ws->bk, D = x->D, ld = x->ld, ldo = x->ldo;
    i0 += ra, P += (size_t)ra * bk, dS += (size_t)ra * bk, nr -= ra;
    lx_gemm(P, bk, v->q + i0 * ld, ld, v->k + j0 * ld, ld, nr, nc, D, 0, 1, v->c, 0.0f);
    lx_gemm(dS, bk, v->do_ + i0 * ldo, ldo, v->v + j0 * ld, ld, nr, nc, D, 0, 1, 1.0f, 0.0f);
}

/* dV, dK, dQ of one tile through lx_gemm (P, dS rounded to bf16 first in numerics bf16). */
static void grads_gemm(const struct tbwd *x, const struct hview *v, float *P, float *dS, long i0, long j0, int nr,
                       int nc)
{
    int bk = x->ws->bk, D = x->D, ld = x->ld, ldo = x->ldo, ldk = v->ldk;
    for (int r = 0; x->bf16 && r < nr; r++) {
        lx_round_bf16_n(P + (size_t)r * bk, (size_t)nc);
        lx_round_bf16_n(dS + (size_t)r * bk, (size_t)nc);
    }
    lx_gemm(v->dv + j0 * ldk, ldk, P, bk, v->do_ + i0 * ldo, ldo, nc, D, nr, 1, 0, 1.0f, 1.0f);
    lx_gemm(v->dk + j0 * ldk, ldk, dS, bk, v->q + i0 * ld, ld, nc, D, nr, 1, 0, 1.0f, 1.0f);
    lx_gemm(v->dq + i0 * ld, ld, dS, bk, v->k + j0 * ld, ld, nr, D, nc, 0, 0, 1.0f, 1.0f);
}

/* ---- the fp32 tile kernel: Kᵀ, Vᵀ packed per key tile --------------------- */

struct f32ops {
    float *kt, *vt;             /* the key tile's Kᵀ and Vᵀ panels */
};

static void pack_f32(const struct tbwd *x, const struct hview *v, const struct f32ops *w, long j0, int nc)
{
    lx_gemm_pack_bt(w->kt, v->k + j0 * x->ld, x->ld, nc, x->D);
    lx_gemm_pack_bt(w->vt, v->v + j0 * x->ld, x->ld, nc, x->D);
}

static void scores_f32(const struct tbwd *x, const struct hview *v, const struct f32ops *w, float *P, float *dS,
                       long i0, int ra, int nr, int nc)
{
    int bk = x->ws->bk, D = x->D;
    long ps = (long)D * LX_GEMM_NR;
    i0 += ra, P += (size_t)ra * bk, dS += (size_t)ra * bk, nr -= ra;
    lx_gemm_rows(P, bk, v->q + i0 * x->ld, x->ld, w->kt, LX_GEMM_NR, ps, nr, nc, D, v->c, 0.0f);
    lx_gemm_rows(dS, bk, v->do_ + i0 * x->ldo, x->ldo, w->vt, LX_GEMM_NR, ps, nr, nc, D, 1.0f, 0.0f);
}

static void grads_f32(const struct tbwd *x, const struct hview *v, const struct f32ops *w, float *P, float *dS,
                      long i0, long j0, int nr, int nc)
{
    int bk = x->ws->bk, D = x->D, ld = x->ld, ldo = x->ldo, ldk = v->ldk;
    for (int r = 0; x->bf16 && r < nr; r++)
        lx_round_bf16_n(P + (size_t)r * bk, (size_t)nc), lx_round_bf16_n(dS + (size_t)r * bk, (size_t)nc);
    /* Pᵀ and dSᵀ read in place (lx_gemm_rows_t); Q's, dO's and K's rows are their own panels (D is a
    ** multiple of LX_GEMM_NR) */
    lx_gemm_rows_t(v->dv + j0 * ldk, ldk, P, bk, v->do_ + i0 * ldo, ldo, LX_GEMM_NR, nc, D, nr, 1.0f, 1.0f);
    lx_gemm_rows_t(v->dk + j0 * ldk, ldk, dS, bk, v->q + i0 * ld, ld, LX_GEMM_NR, nc, D, nr, 1.0f, 1.0f);
    lx_gemm_rows(v->dq + i0 * ld, ld, dS, bk, v->k + j0 * ld, ld, LX_GEMM_NR, nr, D, nc, 1.0f, 1.0f);
}

/* ---- the bf16 tile kernel ------------------------------------------------------ */

struct bf16ops {
    uint16_t *qb, *dob;         /* the block's Q and dO rows (D apart) */
    uint16_t *kt, *vt, *kb;     /* the key tile: Kᵀ, Vᵀ panels; K in pairs (as B) */
    uint16_t *qp, *dop;         /* the block's Q and dO in pairs (as B) */
    uint16_t *pt, *dst, *ds;    /* Pᵀ, dSᵀ (query rows in pairs, 2·bk values a pair), dS (rows even(bk) apart) */
};

static void pack_bf16(const struct tbwd *x, const struct hview *v, const struct bf16ops *w, long j0, int nc)
{
    lx_gemm_bf16_pack_bt(w->kt, v->k + j0 * x->ld, x->ld, nc, x->D);
    lx_gemm_bf16_pack_bt(w->vt, v->v + j0 * x->ld, x->ld, nc, x->D);
    lx_gemm_bf16_pack_b(w->kb, v->k + j0 * x->ld, x->ld, nc, x->D);
}

static void scores_bf16(const struct tbwd *x, const struct hview *v, const struct bf16ops *w, float *P, float *dS,
                        long i0, int ra, int nr, int nc)
{
    int bk = x->ws->bk, D = x->D;
    long ps = (long)D * LX_GEMM_NR;
    for (int r = 0; r < nr; r++) {
        lx_f32_to_bf16_n(w->qb + (size_t)r * D, v->q + (i0 + r) * x->ld, (size_t)D);
        lx_f32_to_bf16_n(w->dob + (size_t)r * D, v->do_ + (i0 + r) * x->ldo, (size_t)D);
    }
    lx_gemm_bf16_pack_b(w->qp, v->q + i0 * x->ld, x->ld, nr, D);
    lx_gemm_bf16_pack_b(w->dop, v->do_ + i0 * x->ldo, x->ldo, nr, D);
    size_t a = (size_t)ra * D, t = (size_t)ra * bk;
    x->bf16prod(P + t, bk, w->qb + a, D, 2, w->kt, ps, nr - ra, nc, D, v->c, 0.0f);
    x->bf16prod(dS + t, bk, w->dob + a, D, 2, w->vt, ps, nr - ra, nc, D, 1.0f, 0.0f);
}

static void grads_bf16(const struct tbwd *x, const struct hview *v, const struct bf16ops *w, const float *P,
                       const float *dS, long i0, long j0, int nr, int nc)
{
    int bk = x->ws->bk, D = x->D, ldk = v->ldk;
    long ls = even(bk), pw = 2 * (long)bk;     /* dS's row stride; Pᵀ's and dSᵀ's values per pair */
    for (int r = 0; r < nr; r++) {
        lx_f32_to_bf16_n(w->ds + r * ls, dS + (size_t)r * bk, (size_t)nc);
        if (nc & 1)
            w->ds[r * ls + nc] = 0;     /* what an odd nc pairs with (ls > nc then) */
    }
    /* Pᵀ and dSᵀ as pairs of query rows (gemm.h: lda 2, apair pw): rows 2p, 2p + 1 interleaved */
    for (int r = 0; r < nr; r += 2) {
        const float *p1 = r + 1 < nr ? P + (size_t)(r + 1) * bk : NULL, *g1 = r + 1 < nr ? dS + (size_t)(r + 1) * bk : NULL;
        lx_f32_to_bf16_pairs(w->pt + (r / 2) * pw, P + (size_t)r * bk, p1, (size_t)nc);
        lx_f32_to_bf16_pairs(w->dst + (r / 2) * pw, dS + (size_t)r * bk, g1, (size_t)nc);
    }
    long pq = (long)lx_gemm_bt_floats(nr, LX_GEMM_NR), pk = (long)lx_gemm_bt_floats(nc, LX_GEMM_NR);
    x->bf16prod(v->dv + j0 * ldk, ldk, w->pt, 2, pw, w->dop, pq, nc, D, nr, 1.0f, 1.0f);
    x->bf16prod(v->dk + j0 * ldk, ldk, w->dst, 2, pw, w->qp, pq, nc, D, nr, 1.0f, 1.0f);
    x->bf16prod(v->dq + i0 * x->ld, x->ld, w->ds, ls, 2, w->kb, pk, nr, D, nc, 1.0f, 1.0f);
}

/* Head h: every key tile in order, against the query blocks that see it. */
static void head_backward(const struct tbwd *x, float *scr, int h)
{
    const struct lx_tile_bwd_ws *ws = x->ws;
    int bq = ws->bq, bk = ws->bk, T = x->T, D = x->D;
    float *P = scr, *dS = P + (size_t)bq * bk, *a = dS + (size_t)bq * bk, *cap = a + bk, *Drow = cap + bk;
    float *ops = Drow + T;
    struct hview v = {.q = x->q + (long)h * D, .k = x->k + (long)(h / x->G) * D, .v = x->v + (long)(h / x->G) * D,
                      .o = x->o + (long)h * D, .do_ = x->do_ + (long)h * D, .L = x->lse + (long)h * T,
                      .dq = x->dq + (long)h * D, .ldk = x->ld,
                      .c = (float)lx_spec_qk_scale(x->spec, D) * (x->mult && x->mult[h] != 0.0f ? x->mult[h] : 1.0f)};
    if (x->G > 1) {     /* this query head's dk | dv, added per group afterwards */
        v.dk = ws->dkv + (long)h * T * 2 * D;
        v.dv = v.dk + D;
        v.ldk = 2 * D;
        memset(v.dk, 0, sizeof(float) * (size_t)T * 2 * (size_t)D);
    } else {
        v.dk = x->dk + (long)h * D;
        v.dv = x->dv + (long)h * D;
    }
    struct f32ops f = {.kt = ops, .vt = ops + lx_gemm_bt_floats(bk, D)};
    struct bf16ops b = {.qb = (uint16_t *)ops};
    b.dob = b.qb + (size_t)bq * D, b.kt = b.dob + (size_t)bq * D, b.vt = b.kt + lx_gemm_bt_floats(bk, D);
    b.kb = b.vt + lx_gemm_bt_floats(bk, D), b.qp = b.kb + lx_gemm_bt_floats(bk, D);
    b.dop = b.qp + lx_gemm_bt_floats(bq, D), b.pt = b.dop + lx_gemm_bt_floats(bq, D);
    b.dst = b.pt + (size_t)bk * even(bq), b.ds = b.dst + (size_t)bk * even(bq);     /* even(bq) / 2 pairs of 2·bk */
    for (long i = 0; i < T; i++) {
        double s = 0.0;
        for (int d = 0; d < D; d++)
            s += (double)v.do_[i * x->ldo + d] * v.o[i * x->ldo + d];
        Drow[i] = (float)s;
    }
    for (long j0 = 0; j0 < T; j0 += bk) {
        long j1 = j0 + bk < T ? j0 + bk : T;
        int nc = (int)(j1 - j0);
        if (x->kern == 1)
            pack_f32(x, &v, &f, j0, nc);
        else if (x->kern == 2)
            pack_bf16(x, &v, &b, j0, nc);
        long W = x->spec->vis.window, i_end = W && j1 + W - 1 < T ? j1 + W - 1 : T;    /* rows reaching the block */
        long i_start = x->causal ? j0 : W && j0 - W + 1 > 0 ? j0 - W + 1 : 0;
        for (long i0 = i_start / bq * bq; i0 < i_end; i0 += bq) {
            long i1 = i0 + bq < T ? i0 + bq : T;
            int nr = (int)(i1 - i0);
            /* causal rows above the tile's first key see none of it: no S, dP (row_grad zeroes them) */
            int ra = x->kern && x->causal && j0 > i0 ? (int)(j0 - i0) : 0;
            if (x->kern == 1)
                scores_f32(x, &v, &f, P, dS, i0, ra, nr, nc);
            else if (x->kern == 2)
                scores_bf16(x, &v, &b, P, dS, i0, ra, nr, nc);
            else
                scores_gemm(x, &v, P, dS, i0, j0, ra, nr, nc);
            for (int r = 0; r < nr; r++) {
                long i = i0 + r, lo, hi, n = lx_spec_row_keys(x->spec, i, T, x->causal, &lo, &hi);
                long c0 = lo > j0 ? lo - j0 : 0, nv = hi - j0 < nc ? hi - j0 : nc;    /* visible: [lo, hi) */
                nv = nv < 0 ? 0 : nv;
                c0 = c0 < nv ? c0 : nv;
                row_grad(x, P + (size_t)r * bk, dS + (size_t)r * bk, a, cap, h, i, n, j0, c0, nv, nc, v.L[i],
                         Drow[i], v.c);
            }
            if (x->kern == 1)
                grads_f32(x, &v, &f, P, dS, i0, j0, nr, nc);
            else if (x->kern == 2)
                grads_bf16(x, &v, &b, P, dS, i0, j0, nr, nc);
            else
                grads_gemm(x, &v, P, dS, i0, j0, nr, nc);
        }
    }
}

void lx_attn_tiled_backward(float *dq, float *dk, float *dv, const float *do_, const float *o, const float *lse,
                            const float *q, const float *k, const float *v, const struct lx_spec *spec,
                            const float *mult, const struct lx_attn_shape *sh, const struct lx_tile_bwd_ws *ws)
{
    int T = sh->T, H = sh->H, KV = sh->KV, D = sh->D;
    LX_ASSERT(omp_get_max_threads() <= ws->n_thr && ws->bq > 0 && ws->bk > 0 && KV >= 1 && H % KV == 0);
    LX_ASSERT(!spec->vis.sinks && !spec->posmap.method);
    struct tbwd x = {.spec = spec, .q = q, .k = k, .v = v, .o = o, .do_ = do_, .lse = lse, .dq = dq, .dk = dk,
                     .dv = dv, .mult = mult, .ws = ws, .T = T, .H = H, .D = D, .G = H / KV, .ld = sh->ld,
                     .ldo = sh->ldo, .causal = sh->causal, .n_tab = lx_tile_tab_rows(spec), .exp_level = lx_tile_exp_level(0),
                     .bf16 = lx_numerics_get() == LX_NUMERICS_BF16, .L = lx_spec_tab_len(spec, T),
                     .bf16prod = ws->bf16_plain ? lx_gemm_rows_bf16_plain : lx_gemm_rows_bf16};
    int bf16k = x.bf16 && (ws->bf16_plain || lx_gemm_bf16_native()), pr = ws->products;
    if (pr == LX_BWD_PRODUCTS_AUTO)
        pr = lx_numerics_get() == LX_NUMERICS_PORTABLE || bf16k ? LX_BWD_PRODUCTS_KERNELS : LX_BWD_PRODUCTS_GEMM;
    if (pr == LX_BWD_PRODUCTS_KERNELS && D % LX_GEMM_NR == 0)
        x.kern = bf16k ? 2 : 1;
    LX_ASSERT((!x.n_tab || ws->tab) && (x.G == 1 || ws->dkv));
    if (x.n_tab)
        lx_tile_dist_tables(ws->tab, spec, H, T);
    LX_ASSERT(!ws->dist_grad || spec->rel.method);
    size_t per = lx_tile_bwd_thread_floats(ws->bq, ws->bk, D, T);
#pragma omp parallel for schedule(dynamic, 1)
    for (int h = 0; h < H; h++)
        head_backward(&x, ws->scratch + per * (size_t)omp_get_thread_num(), h);
    if (x.G == 1)
        return;
    /* each group's dk, dv: its query heads' in head order */
#pragma omp parallel for schedule(static)
    for (long t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            const float *part = ws->dkv + ((long)h * T + t) * 2 * D;
            float *gk = dk + t * sh->ld + (long)(h / x.G) * D, *gv = dv + t * sh->ld + (long)(h / x.G) * D;
            for (int d = 0; d < D; d++) {
                gk[d] += part[d];
                gv[d] += part[D + d];
            }
        }
}
