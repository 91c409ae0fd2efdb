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
** learned multiplier. S is overwritten by P and dP by dS, so a thread holds
** two tiles. Nothing T × T is stored: per head the rows' L and D (T floats
** each), and per thread the tiles.
**
** In numerics bf16 the products read bf16 values, as the forward's do: q, k,
** v come rounded from the forward and dO from the model (model.c), and P and
** dS are rounded before the three products that read them; the fp32 tile
** kernel then multiplies exact bf16 values with fp32 sums (the arithmetic of
** a bf16 kernel, without its speed).
*/
#include "harness/engine/kernels/attention.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/engine/kernels/numerics.h"

size_t lx_tile_bwd_thread_floats(int bq, int bk, int T)
{
    return 2 * (size_t)bq * (size_t)bk + (size_t)bk + (size_t)T;
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
    int avx2;                           /* 1: the AVX2 + FMA build of the exp loop */
    int bf16;                           /* 1: numerics bf16, P and dS rounded to bf16 */
};

/* Row i's logits over tile columns [0, nv) in place, and their slopes in a
** (a[0] alone when they share one); returns 1 when every slope is a[0]. */
static int row_logits(const struct tbwd *x, float *s, float *a, int h, long i, long j0, long nv)
{
    const struct lx_spec *spec = x->spec;
    long n = x->causal ? i + 1 : x->T;
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
    const double *tab = x->ws->tab + (long)h * x->n_tab * x->T;
    for (long c = 0; c < nv; c++) {
        long t = i - j0 - c;
        t = t < 0 ? -t : t;
        double A = R * tab[t], B = 0.0;
        for (int r = 1; r < x->n_tab; r++)
            B += Rk[r - 1] * tab[(long)r * x->T + t];
        s[c] = (float)(A * s[c] + B);
        a[c] = (float)A;
    }
    return 0;
}

/* Row i of the tile: S becomes P, dP becomes dS over the nv visible columns
** (0 past them, up to nc). */
static void row_grad(const struct tbwd *x, float *s, float *g, float *a, int h, long i, long j0, long nv, long nc,
                     float L, float Di, float c)
{
    int same = row_logits(x, s, a, h, i, j0, nv);
    lx_tile_exp_sum(s, nv, L, x->avx2);
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

/* Head h: every key tile in order, against the query blocks that see it. */
static void head_backward(const struct tbwd *x, float *scr, int h)
{
    const struct lx_tile_bwd_ws *ws = x->ws;
    int bq = ws->bq, bk = ws->bk, T = x->T, D = x->D, ld = x->ld, ldo = x->ldo;
    float *P = scr, *dS = P + (size_t)bq * bk, *a = dS + (size_t)bq * bk, *Drow = a + bk;
    float c = (float)lx_spec_qk_scale(x->spec, D) * (x->mult && x->mult[h] != 0.0f ? x->mult[h] : 1.0f);
    const float *q = x->q + (long)h * D, *k = x->k + (long)(h / x->G) * D, *v = x->v + (long)(h / x->G) * D;
    const float *o = x->o + (long)h * D, *do_ = x->do_ + (long)h * D, *L = x->lse + (long)h * T;
    float *dq = x->dq + (long)h * D, *dk, *dv;
    int ldk = ld;
    if (x->G > 1) {     /* this query head's dk | dv, added per group afterwards */
        dk = ws->dkv + (long)h * T * 2 * D;
        dv = dk + D;
        ldk = 2 * D;
        memset(dk, 0, sizeof(float) * (size_t)T * 2 * (size_t)D);
    } else {
        dk = x->dk + (long)h * D;
        dv = x->dv + (long)h * D;
    }
    for (long i = 0; i < T; i++) {
        double s = 0.0;
        for (int d = 0; d < D; d++)
            s += (double)do_[i * ldo + d] * o[i * ldo + d];
        Drow[i] = (float)s;
    }
    for (long j0 = 0; j0 < T; j0 += bk) {
        long j1 = j0 + bk < T ? j0 + bk : T;
        int nc = (int)(j1 - j0);
        for (long i0 = x->causal ? j0 / bq * bq : 0; i0 < T; i0 += bq) {
            long i1 = i0 + bq < T ? i0 + bq : T;
            int nr = (int)(i1 - i0);
            lx_gemm(P, bk, q + i0 * ld, ld, k + j0 * ld, ld, nr, nc, D, 0, 1, c, 0.0f);
            lx_gemm(dS, bk, do_ + i0 * ldo, ldo, v + j0 * ld, ld, nr, nc, D, 0, 1, 1.0f, 0.0f);
            for (int r = 0; r < nr; r++) {
                long i = i0 + r, nv = x->causal ? (i - j0 + 1 < nc ? i - j0 + 1 : nc) : nc;
                nv = nv < 0 ? 0 : nv;
                row_grad(x, P + (size_t)r * bk, dS + (size_t)r * bk, a, h, i, j0, nv, nc, L[i], Drow[i], c);
                if (x->bf16) {
                    lx_round_bf16_n(P + (size_t)r * bk, (size_t)nc);
                    lx_round_bf16_n(dS + (size_t)r * bk, (size_t)nc);
                }
            }
            lx_gemm(dv + j0 * ldk, ldk, P, bk, do_ + i0 * ldo, ldo, nc, D, nr, 1, 0, 1.0f, 1.0f);
            lx_gemm(dk + j0 * ldk, ldk, dS, bk, q + i0 * ld, ld, nc, D, nr, 1, 0, 1.0f, 1.0f);
            lx_gemm(dq + i0 * ld, ld, dS, bk, k + j0 * ld, ld, nr, D, nc, 0, 0, 1.0f, 1.0f);
        }
    }
}

void lx_attn_tiled_backward(float *dq, float *dk, float *dv, const float *do_, const float *o, const float *lse,
                            const float *q, const float *k, const float *v, const struct lx_spec *spec,
                            const float *mult, const struct lx_attn_shape *sh, const struct lx_tile_bwd_ws *ws)
{
    int T = sh->T, H = sh->H, KV = sh->KV, D = sh->D;
    LX_ASSERT(omp_get_max_threads() <= ws->n_thr && ws->bq > 0 && ws->bk > 0 && KV >= 1 && H % KV == 0);
    LX_ASSERT(!spec->vis.window && !spec->vis.sinks && !spec->posmap.method);
    struct tbwd x = {.spec = spec, .q = q, .k = k, .v = v, .o = o, .do_ = do_, .lse = lse, .dq = dq, .dk = dk,
                     .dv = dv, .mult = mult, .ws = ws, .T = T, .H = H, .D = D, .G = H / KV, .ld = sh->ld,
                     .ldo = sh->ldo, .causal = sh->causal, .n_tab = lx_tile_tab_rows(spec), .avx2 = lx_tile_avx2(),
                     .bf16 = lx_numerics_get() == LX_NUMERICS_BF16};
    LX_ASSERT((!x.n_tab || ws->tab) && (x.G == 1 || ws->dkv));
    if (x.n_tab)
        lx_tile_dist_tables(ws->tab, spec, H, T);
    size_t per = lx_tile_bwd_thread_floats(ws->bq, ws->bk, T);
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
