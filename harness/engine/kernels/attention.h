/*
** harness/engine/kernels/attention.h - the naive (materialised) attention path that
** reads the attention spec (harness/core/spec.h): for query i and key j,
**
**     S_ij = c · q_i · k_j,  c = 1/sqrt(D) (or CosScale's s; q, k then unit)
**     t = |δ_ij|, δ the effective rotary distance (i − j unless the spec's
**         posmap remaps far keys), n = keys row i sees
**     logit_ij = A(n, t) · S_ij + B(n, t)        (the spec's ops, in order, / τ)
**     p_i = softmax over visible j,  o_i = Σ_j p_ij v_j
**
** Visible keys: j ≤ i when causal, all otherwise, further limited by the
** spec's window and sinks. q and k arrive rotated by their window positions;
** for a far pair the score is taken at δ instead, by turning q_i through the
** extra angle (δ − (i − j))·θ_k (naive path) or by rotating whole rows of q
** and k to the posmap's positions and one more GEMM (fast path). Both paths
** store probabilities (0 where masked) and are meant for lengths up to a few
** thousand; the fast path is tested against the naive one.
**
** Backward supports what training uses (rotary, logit ops, cosine, a window
** trained in); the training-time part of a stack never has sinks, posmaps or
** temperatures.
** The head path's backward is training's materialised path, the reference
** of the tiled backward below (LENX_TRAIN_ATTENTION=materialised).
*/
#ifndef LX_ATTENTION_H
#define LX_ATTENTION_H

#include "harness/core/diag.h"
#include "harness/core/spec.h"
#include "harness/engine/kernels/blas.h"

/* o (T, H, D); att (H, T, T) probabilities saved for backward (0 where masked);
** q, k, v (T, H, D). */
void lx_attention_forward(float *o, float *att, const float *q, const float *k, const float *v,
                          const struct lx_spec *spec, int T, int H, int D, int causal);

/* dq, dk, dv (T, H, D) are accumulated (+=); do_ (T, H, D); att from forward. */
void lx_attention_backward(float *dq, float *dk, float *dv, const float *do_, const float *att,
                           const float *q, const float *k, const float *v, const struct lx_spec *spec,
                           int T, int H, int D, int causal);

/* The shapes of one attention call, in one place instead of a run of ints:
** T query (and key) rows; H query heads of D dimensions sharing KV key/value
** heads (query head h reads head h / (H / KV); KV = H is multi-head); the
** row strides of q, k, v (and dq, dk, dv) and of the output o (and do_);
** causal: key j is visible to query i only when j <= i. */
struct lx_attn_shape {
    int T, H, KV, D;
    int ld, ldo;
    int causal;
};

/* Scratch of one thread for the fast path. */
struct lx_attn_ws {
    double *tab;        /* (2·lx_spec_tab_len(spec, T),) the spec's row tables A, B */
    float *far;         /* (T·T + 2·T·D,) far scores and rotated q, k; needed only with a posmap */
    double *stats;      /* (LX_ATTN_NSTATS,) sums this head adds to, or NULL */
    long stats_row0;    /* only rows in [stats_row0, stats_row1) are summed; */
    long stats_row1;    /* stats_row1 = 0 means up to the last row */
    float mult;         /* the model's learned multiplier of S for this head (1 = none; 0 reads as 1) */
    float *lse;         /* (T,) each row's log-sum-exp (a zero sink's term included), or NULL */
    int phalf;          /* LX_DT_BF16 or LX_DT_F16: P, normalised, rounded to that type before P·V (a probe's
                        ** pass; lx_attn_half, as lx_tile_ws.phalf); 0: as computed */
};

/* Row statistics the fast path can sum (for calibration and diagnostics):
** max p, entropy −Σ p ln p, std of the visible logits, rows. */
enum { LX_ST_PMAX, LX_ST_ENTROPY, LX_ST_SIGMA, LX_ST_ROWS, LX_ATTN_NSTATS };

/* Floats of lx_attn_ws.far for T tokens of dimension D. */
size_t lx_attn_far_floats(int T, int D);

/* The fast path: one head through BLAS, on strided views. q, k, v are (T, D)
** with row stride sh->ld ((H + 2·KV)·D inside a qkv buffer), o (T, D) with
** stride sh->ldo; P (T, T) receives the probabilities (0 where masked); H and
** KV are not read. Tested against the naive path above. */
void lx_attn_head_forward(float *o, float *P, const float *q, const float *k, const float *v,
                          const struct lx_spec *spec, int head, const struct lx_attn_shape *sh,
                          const struct lx_attn_ws *ws);

/* Backward of one head: dq, dk, dv (stride sh->ld) accumulate (+=); do_
** (stride sh->ldo); P from forward; dP is (T, T) scratch; tab (2·lx_spec_tab_len)
** doubles; mult as in the forward's lx_attn_ws; dist_grad (lx_spec_tab_len, at
** lx_spec_tab_index), when given, += per distance the logits' gradient over τ
** (a learned relative bias's). */
void lx_attn_head_backward(float *dq, float *dk, float *dv, const float *do_, const float *P, float *dP,
                           const float *q, const float *k, const float *v, const struct lx_spec *spec, int head,
                           const struct lx_attn_shape *sh, double *tab, float mult,
                           double *dist_grad);

/* x (a head's channels) turned by pos·θ_k in every rotary pair of the table, in double precision. */
void lx_rotary_turn(double *x, const struct lx_rotary *r, double pos);
/* The same in two steps, for many rows turned by one pos: cs (2 · n_pairs) = cos and sin of pos·θ_k,
** then x turned by them (the same bits as lx_rotary_turn). */
void lx_rotary_angles(double *cs, const struct lx_rotary *r, double pos);
void lx_rotary_turn_by(double *x, const struct lx_rotary *r, const double *cs);

/* ---- the tiled forward (evaluation) ----------------------------------------
** FlashAttention's schedule (Dao et al. 2022, arXiv:2205.14135, Algorithm 1)
** on the same spec: a block of bq queries against a tile of bk keys at a
** time, two GEMMs per tile (S = c·Q Kᵀ, O += P V), a running max and sum per
** row, and no T × T buffer. Tiles that no query of the block sees are never
** visited: causal attention does about half the work, a window of W keys
** O(T·W), sinks and a window O(T·(S + W)). OpenMP runs over (head, query
** block); each thread has its own scratch. Tested against
** lx_attention_forward (tests/test_tiled.c). With ws->phalf (llama.cpp's
** rounding of P, normalised, for its half KV cache) a block keeps its rows'
** logits over all its tiles instead (ws->pnorm), normalises each whole row
** and rounds P, then takes P V tile by tile.
**
** Row statistics from the tiles. Every statistic a task or the calibration
** reads (harness/core/diag.h) is a sum over a row's keys of e_j = exp(l_j − m)
** or e_j·(l_j − m), with m the row's running max, plus sums of l and l²:
** with Z = Σ e_j at the end,
**
**     pmax = 1/Z,  entropy = ln Z − Σ e (l − m) / Z,  mass in R = Σ_R e / Z,
**     entropy inside R = ln Σ_R e − Σ_R e (l − m) / Σ_R e,
**
** and when m grows to m', every sum is rescaled like s and O:
** Σ e' = α Σ e, Σ e'(l − m') = α (Σ e (l − m) + (m − m') Σ e), α = e^(m − m').
** So they are summed in the one pass, per row of a block (lx_tile_acc_doubles),
** into per-(head, unit) partial sums added up per head in unit order: a unit is
** LX_TILE_STAT_ROWS rows whenever the query block holds whole units (else one
** block), so neither the thread count nor the query block size changes them. Passes that need whole probability
** rows (a probe) still use the head path above. */
struct lx_tile_stats {
    struct lx_diag *out;            /* (H,) per-head sums this call adds to: entropy, pmax, sigma, rows,
                                    ** and on request buckets and ranges */
    long row0, row1;                /* only query rows in [row0, row1) are summed; row1 = 0: to the last */
    const struct lx_ranges *ranges; /* distance ranges [a, b) of range_mass/range_entropy, or NULL */
    int buckets;                    /* 1: mass per distance bucket (lx_diag_bucket of |i − j|) */
};

struct lx_tile_ws {
    int bq, bk;         /* queries per block, keys per tile */
    int n_thr;          /* scratch slots; at least omp_get_max_threads() */
    float *scratch;     /* (n_thr, lx_tile_thread_floats(bq, bk, D)) */
    double *tab;        /* (H, lx_tile_tab_rows(spec), lx_spec_tab_len(spec, T)) distance tables; NULL
                        ** when that is 0 */
    float *rot;         /* (lx_tile_rot_floats(spec, T, H, KV, D, causal),) q and k rotated to the
                        ** posmap's positions; NULL when that is 0 */
    int sse2_only;      /* 1: the softmax loops' SSE2 build even on an AVX2 CPU (tests) */
    const struct lx_tile_stats *stats;  /* row statistics to sum, or NULL */
    double *acc;        /* with stats: (n_thr, lx_tile_acc_doubles(bq)) per-row sums */
    struct lx_diag *part;   /* with stats: (H · lx_tile_stat_units(bq, T),) per-(head, unit) sums */
    float *lse;         /* (H, T) each row's log-sum-exp m + ln s of its logits, for the tiled
                        ** backward (training), or NULL */
    float *kpack;       /* (lx_tile_kpack_floats(T, KV, D),) the keys packed once for the tiles'
                        ** products (gemm.h, lx_gemm_rows), or NULL: every tile through lx_gemm.
                        ** In numerics bf16 on a CPU with AVX512-BF16 it holds the keys and the
                        ** values in bf16 for lx_gemm_rows_bf16 instead (the same bytes) */
    int bf16_plain;     /* 1: numerics bf16 runs the tiles' bf16 products on the plain C kernel,
                        ** with or without AVX512-BF16 (tests) */
    int phalf;          /* LX_DT_BF16 or LX_DT_F16: each row's P normalised, then rounded to that type
                        ** before P·V, as llama.cpp's products with its half cache take it (lx_attn_half;
                        ** evaluation in fp32 or portable numerics); 0: the online softmax */
    float *pnorm;       /* with phalf: (n_thr, lx_tile_pnorm_floats(bq, T)) a block's rows of P */
};

/* Per-thread scratch floats: S and far tiles, the output accumulator, row max
** and sum, and the block's query rows in bf16 (numerics bf16). */
/* Tiles of the evaluation forward: queries × keys (see docs/PERFORMANCE.md,
** "Tiled attention"). */
#define LX_TILE_BQ 512
#define LX_TILE_BK 256
/* Rows whose statistics are summed together before the units are added in
** order (see "Row statistics from the tiles"): fixed, so the query block can
** grow without moving a stored value. */
#define LX_TILE_STAT_ROWS 256

size_t lx_tile_thread_floats(int bq, int bk, int D);
/* Per-thread floats of lx_tile_ws.pnorm for blocks of bq queries over T keys. */
size_t lx_tile_pnorm_floats(int bq, int T);
/* Rows of the distance tables a head needs (0 when no op depends on the distance). */
int lx_tile_tab_rows(const struct lx_spec *spec);
/* Floats of rotated q and k rows (0 without a posmap on rotary positions). */
size_t lx_tile_rot_floats(const struct lx_spec *spec, int T, int H, int KV, int D, int causal);
/* Doubles of one thread's per-row statistics sums for blocks of bq queries. */
size_t lx_tile_acc_doubles(int bq);
/* Floats of ws->kpack for T keys of KV heads of D: 0 when D is not whole
** panels of LX_GEMM_NR (the tiles then go through lx_gemm). */
size_t lx_tile_kpack_floats(int T, int KV, int D);
/* Rows of one statistics unit with blocks of bq queries (LX_TILE_STAT_ROWS when
** bq is a multiple of it, else bq), and the units of T rows per head. */
long lx_tile_stat_rows(int bq);
long lx_tile_stat_units(int bq, long T);

/* o (T, H·D view: row stride sh->ldo, head h at h·D) from q (row stride
** sh->ld, head h at h·D) and k, v (row stride sh->ld, KV heads: query head h
** reads head h / (H / KV) at (h / (H / KV))·D), all heads; mult (H,) learned
** multipliers of S or NULL. */
void lx_attn_tiled_forward(float *o, const float *q, const float *k, const float *v, const struct lx_spec *spec,
                           const float *mult, const struct lx_attn_shape *sh, const struct lx_tile_ws *ws);

/* Pieces of the tiled forward the backward shares (tiled.c): the per-head
** distance tables (tab (H, n_tab, lx_spec_tab_len), n_tab = lx_tile_tab_rows), a
** row's factors R(n) (returned) and R_k(n) (Rk, n_dist of them) by which
** logit = R·X(t)·S + Σ_k R_k·G_k(t), and e^(s − mx) in place over n floats
** (0 below e^−70; their sum returned) at a level of lx_tile_exp_level. */
void lx_tile_dist_tables(double *tab, const struct lx_spec *spec, int H, int T);
double lx_tile_row_factors(const struct lx_spec *spec, long n, double *Rk, int n_dist);
float lx_tile_exp_sum(float *s, long n, float mx, int level);
/* The softmax loops this CPU and the numerics run: 0 the SSE2 build, 1 the
** AVX2 + FMA one (the same bits), 2 the AVX-512 e^x (fast and bf16
** numerics on an AVX-512 CPU: other last bits), 3 the eight-lane FMA e^x
** (fast and bf16 numerics on AVX2 without AVX-512: other last bits);
** sse2_only: 0. */
int lx_tile_exp_level(int sse2_only);

/* ---- the tiled backward (training) ----------------------------------------
** FlashAttention-2's backward (Dao 2023, arXiv:2307.08691, Algorithm 2) on
** the same spec, in O(T·d) memory: the forward (lx_attn_tiled_forward with
** ws->lse) keeps each row's log-sum-exp L_i; backward recomputes the
** probabilities tile by tile from Q, K and L,
**
**     S = c·Q Kᵀ,  l = A(n_i, t)·S + B(n_i, t),  P = exp(l − L_i),  dP = dO Vᵀ,
**     D_i = dO_i · O_i,  dS = P ∘ (dP − D_i) ∘ A · c,
**     dV += Pᵀ dO,  dK += dSᵀ Q,  dQ += dS K,
**
** visiting only the query blocks that see a key tile (causal: the blocks at
** and below its diagonal). Each head is one OpenMP iteration, key tiles in
** order: its dq rows are its own, and with grouped-query heads (KV < H) each
** query head's dk, dv go to ws->dkv first and are added per group in head
** order, so no thread count changes a sum. What training's spec can hold:
** rotary positions (applied to q and k before attention), logit ops, the
** learned multipliers, cosine geometry (q, k arrive unit; c is its scale), a
** temperature, a window (rows beyond a key block's reach are skipped); no
** sinks or posmap. Tested against the materialised
** head path (lx_attn_head_backward) and finite differences
** (tests/test_tiled_bwd.c). */
#define LX_TILE_TRAIN_BQ 128
#define LX_TILE_TRAIN_BK 128

struct lx_tile_bwd_ws {
    int bq, bk;         /* queries per block, keys per tile */
    int n_thr;          /* scratch slots; at least omp_get_max_threads() */
    float *scratch;     /* (n_thr, lx_tile_bwd_thread_floats(bq, bk, D, T)) */
    double *tab;        /* (H, lx_tile_tab_rows(spec), lx_spec_tab_len(spec, T)) distance tables; NULL
                        ** when that is 0 */
    float *dkv;         /* with KV < H: (H, T, 2·D) each query head's dk | dv; else unused */
    int products;       /* LX_BWD_PRODUCTS_*: which code multiplies the tiles */
    int bf16_plain;     /* 1: numerics bf16 runs the bf16 tile products on the plain C kernel,
                        ** the reference of the AVX512-BF16 one (the same bits) */
    double *dist_grad;  /* (H, lx_spec_tab_len) += per head and distance (lx_spec_tab_index) the logits'
                        ** gradient over τ (a learned relative bias's, spec->rel), or NULL */
};

/* The tiles' products: AUTO picks by numerics and CPU (portable: lenx's fp32
** tile kernel, the bits of lx_gemm and faster; bf16 on AVX512-BF16: the bf16
** tile kernel; fast, and bf16 elsewhere: lx_gemm, whose OpenBLAS beat the
** fp32 tile kernel on these tiles where measured, docs/PERFORMANCE.md); GEMM
** every tile through lx_gemm; KERNELS lenx's tile kernels (D a multiple of
** LX_GEMM_NR; else lx_gemm). The tests and `make bench BENCH=train` compare them. */
enum { LX_BWD_PRODUCTS_AUTO, LX_BWD_PRODUCTS_GEMM, LX_BWD_PRODUCTS_KERNELS };

/* Per-thread scratch floats: the P and dS tiles, a row of slopes A and one of soft-cap slopes, D_i of T
** rows, and (D a multiple of LX_GEMM_NR) the tile kernels' packed operands. */
size_t lx_tile_bwd_thread_floats(int bq, int bk, int D, int T);

/* dq (row stride sh->ld, head h at h·D), dk, dv (row stride sh->ld, KV heads
** as in the forward) accumulate (+=) the gradients of one window; do_ and o
** (row stride sh->ldo) the output's gradient and the output; lse (H, T) from
** the forward; q, k, v and mult (H,) or NULL as the forward had them. */
void lx_attn_tiled_backward(float *dq, float *dk, float *dv, const float *do_, const float *o, const float *lse,
                            const float *q, const float *k, const float *v, const struct lx_spec *spec,
                            const float *mult, const struct lx_attn_shape *sh, const struct lx_tile_bwd_ws *ws);

#endif
