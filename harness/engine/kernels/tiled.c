/*
** harness/engine/kernels/tiled.c - the tiled, online-softmax attention forward for
** evaluation (see attention.h, "the tiled forward").
**
** For a block of query rows [i0, i1) and a tile of keys [j0, j1):
**
**     S = c · Q[i0:i1] K[j0:j1]ᵀ            (one GEMM; far pairs from rotated rows)
**     l_ij = A(n_i, t) · S_ij + B(n_i, t)    (the spec's ops; masked entries skipped)
**     m_i' = max(m_i, max_j l_ij),  α = exp(m_i − m_i')
**     P_ij = exp(l_ij − m_i'),  s_i = α s_i + Σ_j P_ij,  O_i = α O_i + P V[j0:j1]   (one GEMM)
**
** and o_i = O_i / s_i after the last tile. The keys a block can see are
** [0, ns) ∪ [lo, up) of its last and first rows (lx_spec_row_keys), so only
** tiles there are visited. The logit maps are the naive reference's
** (lx_spec_affine) written as A = R(n)·X(t), B = Σ_k R_k(n)·G_k(t): per-head
** tables of the distance ops over t, per-row products of the row scales.
**
** Row statistics (when ws->stats asks) ride along in the same pass: per row
** Σ e·(l − m), Σ l, Σ l², and Σ e and Σ e·(l − m) per distance bucket and
** range, rescaled with α like s_i and O_i; after the last tile they give the
** row's entropy, max p (1/s_i), logit std and masses (attention.h, "Row
** statistics from the tiles"). Only the rows asked for pay for it.
**
** The two GEMMs of a tile run on lenx's fixed-order kernel with nothing
** packed per tile (gemm.h, lx_gemm_rows): Q's and P's rows are read in place,
** V's rows are its own column panels, and the keys are packed into panels
** once per call (ws->kpack), so the packing that a general GEMM repeats for
** every tile is gone. The chains are the portable GEMM's, so in portable
** numerics the bits are those of lx_gemm, and fast numerics computes the
** tiles the same way (the same bits on every machine). A position map's far
** keys are packed likewise with their rows (tiled_far.c). Tiles the fast path
** cannot take (keys not starting on a panel, a head size not a multiple of
** LX_GEMM_NR, no ws->kpack) go through lx_gemm.
**
** In numerics bf16 on a CPU with AVX512-BF16 both products run on the bf16
** kernel (gemm.h, lx_gemm_rows_bf16): ws->kpack then holds the keys and the
** values packed in bf16 pairs, a block's query rows are converted once, P is
** written in bf16 by the softmax pass, and every span of tiles starts on a
** key panel (the keys before a row's window are masked like any other).
*/
#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/gemm.h"
#include "harness/core/half.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/tiled_impl.h"
#include "harness/engine/kernels/vexp.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

/* exp(x − max) below e^−70 is 0, as on the head path (attention.c says why). */
#define EXP_FLOOR (-70.0f)

size_t lx_tile_pnorm_floats(int bq, int T)
{
    return ((size_t)bq + 1) * (size_t)T;    /* bq rows of logits, then P; a row of logits for the statistics */
}

size_t lx_tile_thread_floats(int bq, int bk, int D)
{
    /* S, F (P in bf16 rows of bk + 2 on the bf16 kernel), O, m, l, Q's rows in bf16 */
    return 2 * (size_t)bq * (size_t)bk + (size_t)bq * (size_t)D + 2 * (size_t)bq + ((size_t)bq * (size_t)D + 1) / 2;
}

static int n_dist_ops(const struct lx_spec *spec)
{
    int n = 0;
    for (int k = 0; k < spec->n_ops; k++)
        n += spec->ops[k].kind == LX_OP_DIST_AFFINE;
    return n;
}

int lx_tile_tab_rows(const struct lx_spec *spec)
{
    return spec->has_dist ? 1 + n_dist_ops(spec) : 0;
}

/* ---- preparation: distance tables, once per call (far-key rows: tiled_far.c) --- */

/* Per head h and distance t: X(t) = Π_k x_k(t) and G_k(t) = m_k(t)·Π_{k' > k} x_k'(t)
** over the distance ops k in stack order; t = |δ| at t, or for a signed spec
** δ at δ + T − 1 (lx_spec_tab_index). */
void lx_tile_dist_tables(double *tab_all, const struct lx_spec *spec, int H, int T)
{
    int n_tab = lx_tile_tab_rows(spec);
    long L = lx_spec_tab_len(spec, T), o = L - T;
#pragma omp parallel for schedule(static)
    for (long ht = 0; ht < (long)H * L; ht++) {
        int h = (int)(ht / L);
        long t = ht % L;
        double *tab = tab_all + (long)h * n_tab * L, d = (double)(t - o);
        double post = 1.0;
        int row = n_tab - 1;
        for (int k = spec->n_ops - 1; k >= 0; k--) {
            const struct lx_logit_op *op = &spec->ops[k];
            if (op->kind != LX_OP_DIST_AFFINE)
                continue;
            double a, m;
            op->dist_affine(op->params, &spec->facts, h, lx_op_distance(op, d), &a, &m);
            tab[(long)row-- * L + t] = m * post;
            post *= a;
        }
        tab[t] = post;
    }
}

/* ---- the softmax's inner loops, written to vectorise ----------------------------- */

/* exp(x) for x <= 0, eight lanes at a time in GCC's vector extensions
** (glibc's expf is a call per element, and a scalar loop of the polynomial
** does not vectorise under -O2): x = n·ln 2 + r, |r| <= ln 2 / 2, Cephes'
** degree-6 polynomial for e^r (relative error about 2e-7), 2^n built in the
** exponent bits. Inputs below −87 are clamped (their e^x is flushed anyway).
** The loops using it are compiled twice (AVX2 + FMA, and the SSE2 baseline)
** and picked by the CPU at run time. */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

#define SELECTV(VI, mask, a, b) ((__typeof__(a))(((VI)(a) & (mask)) | ((VI)(b) & ~(mask))))

/* p = e^x for x <= 0, both VF lvalues of VI lanes (a macro: a function taking
** a 32-byte vector draws GCC's ABI note on an SSE2 build). */
#define EXPV_LE0(VF, VI, p, x)                                                  \
    do {                                                                        \
        VF x_ = (x), lo_ = x_ * 0.0f - 87.0f;                                   \
        x_ = SELECTV(VI, x_ < lo_, lo_, x_);                                    \
        VF n_ = (x_ * 1.44269504088896341f + 12582912.0f) - 12582912.0f;        \
        VF r_ = x_ - n_ * 0.693359375f + n_ * 2.12194440e-4f;                   \
        VF q_ = r_ * 1.9875691500e-4f + 1.3981999507e-3f;                       \
        q_ = q_ * r_ + 8.3334519073e-3f;                                        \
        q_ = q_ * r_ + 4.1665795894e-2f;                                        \
        q_ = q_ * r_ + 1.6666665459e-1f;                                        \
        q_ = q_ * r_ + 5.0000001201e-1f;                                        \
        q_ = q_ * r_ * r_ + r_ + 1.0f;                                          \
        VI two_n_ = (__builtin_convertvector(n_, VI) + 127) << 23;              \
        (p) = q_ * (VF)two_n_;                                                  \
    } while (0)

/* s[c] = exp(s[c] − mx) (0 below EXP_FLOOR) over [0, n), W lanes at a time,
** their sum left in `sum` (the function around it returns it). */
#define EXP_SUM_BODY(VF, VI, W)                                                 \
    VF acc = {0};                                                               \
    float sum = 0.0f;                                                           \
    long c = 0;                                                                 \
    for (; c + W <= n; c += W) {                                                \
        VF e;                                                                   \
        memcpy(&e, s + c, sizeof e);                                            \
        e -= mx;                                                                \
        VF p;                                                                   \
        EXPV_LE0(VF, VI, p, e);                                                 \
        p = SELECTV(VI, e > EXP_FLOOR, p, e * 0.0f);                            \
        memcpy(s + c, &p, sizeof p);                                            \
        acc += p;                                                               \
    }                                                                           \
    for (; c < n; c++) {                                                        \
        float e = s[c] - mx;                                                    \
        s[c] = e > EXP_FLOOR ? expf(e) : 0.0f;                                  \
        sum += s[c];                                                            \
    }                                                                           \
    for (int k = 0; k < W; k++)                                                 \
        sum += acc[k];

/* mx = max(mx, s[0..n)) (the function around it returns it). */
#define MAX_OF_BODY                                                             \
    _Pragma("omp simd reduction(max : mx)")                                     \
    for (long c = 0; c < n; c++)                                                \
        mx = s[c] > mx ? s[c] : mx;

/* The same code for AVX2 + FMA and for the SSE2 baseline the build targets,
** eight lanes (portable numerics: the same bits on both); the max also in
** sixteen lanes, and e^x in the AVX-512 loop below, in fast numerics on an
** AVX-512 CPU (another order of the sum; the max is exact, but which of +0
** and −0 it keeps depends on the order). lx_attn_tiled_forward picks one by
** the CPU (GCC's target_clones would pick "arch=haswell" by CPU model only,
** so never on AMD). */
__attribute__((target("avx2,fma"))) static float exp_sum_avx2(float *s, long n, float mx)
{
    EXP_SUM_BODY(v8f, v8i, 8) return sum;
}
static float exp_sum_sse2(float *s, long n, float mx)
{
    EXP_SUM_BODY(v8f, v8i, 8) return sum;
}

/* In fast numerics on AVX-512, sixteen lanes written with the instructions
** that do each step at once (vexp.h): the same reduction and polynomial as
** EXPV_LE0, about half the instructions of the vector-extension loop. With pb
** (numerics bf16 on AVX512-BF16) each e also goes to pb in bf16
** (vcvtneps2bf16: to nearest, ties to even, as lx_f32_to_bf16), and to s only
** when keep_s. */
#define EXP512_STEP(e, p, keep) LX_EXP512_LE0(e, p, keep, EXP_FLOOR)

/* The sixteen-lane loop and its scalar tail, STORE(p) and TAIL(c) writing
** each P (the function around it returns the sum). */
#define EXP512_SUM_BODY(STORE, TAIL)                                            \
    __m512 acc = _mm512_setzero_ps(), m = _mm512_set1_ps(mx), p;                \
    __mmask16 keep;                                                             \
    long c = 0;                                                                 \
    for (; c + 16 <= n; c += 16) {                                              \
        __m512 e = _mm512_sub_ps(_mm512_loadu_ps(s + c), m);                    \
        EXP512_STEP(e, p, keep);                                                \
        STORE(p);                                                               \
        acc = _mm512_add_ps(acc, p);                                            \
    }                                                                           \
    float sum = 0.0f;                                                           \
    for (; c < n; c++) {                                                        \
        float e = s[c] - mx;                                                    \
        s[c] = e > EXP_FLOOR ? expf(e) : 0.0f;                                  \
        TAIL(c);                                                                \
        sum += s[c];                                                            \
    }                                                                           \
    return sum + _mm512_reduce_add_ps(acc);

#define STORE_S(p) _mm512_storeu_ps(s + c, p)
#define STORE_S_PB(p)                                                           \
    do {                                                                        \
        if (keep_s)                                                             \
            STORE_S(p);                                                         \
        _mm256_storeu_si256((__m256i *)(pb + c), (__m256i)_mm512_cvtneps_pbh(p)); \
    } while (0)
#define TAIL_NONE(c) (void)0
#define TAIL_PB(c) (pb[c] = lx_f32_to_bf16(s[c]))

__attribute__((target("avx512f,avx512dq,fma"))) static float exp_sum_avx512(float *s, long n, float mx)
{
    EXP512_SUM_BODY(STORE_S, TAIL_NONE)
}

/* In fast numerics on a CPU with AVX2 and no AVX-512: eight lanes of the
** same steps (vexp.h), two accumulators (another order of the sum). */
__attribute__((target("avx2,fma"))) static float exp_sum_fma8(float *s, long n, float mx)
{
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), m = _mm256_set1_ps(mx), p0, p1;
    long c = 0;
    for (; c + 16 <= n; c += 16) {
        __m256 e0 = _mm256_sub_ps(_mm256_loadu_ps(s + c), m), e1 = _mm256_sub_ps(_mm256_loadu_ps(s + c + 8), m);
        LX_EXP256_LE0(e0, p0, EXP_FLOOR);
        LX_EXP256_LE0(e1, p1, EXP_FLOOR);
        _mm256_storeu_ps(s + c, p0);
        _mm256_storeu_ps(s + c + 8, p1);
        acc0 = _mm256_add_ps(acc0, p0), acc1 = _mm256_add_ps(acc1, p1);
    }
    for (; c + 8 <= n; c += 8) {
        __m256 e0 = _mm256_sub_ps(_mm256_loadu_ps(s + c), m);
        LX_EXP256_LE0(e0, p0, EXP_FLOOR);
        _mm256_storeu_ps(s + c, p0);
        acc0 = _mm256_add_ps(acc0, p0);
    }
    float sum = 0.0f, lane[8];
    for (; c < n; c++) {
        float e = s[c] - mx;
        s[c] = e > EXP_FLOOR ? expf(e) : 0.0f;
        sum += s[c];
    }
    _mm256_storeu_ps(lane, _mm256_add_ps(acc0, acc1));
    for (int k = 0; k < 8; k++)
        sum += lane[k];
    return sum;
}

__attribute__((target("avx512f,avx512dq,fma,avx512bf16"))) static float exp_sum_avx512_bf16(float *s, uint16_t *pb,
                                                                                          long n, float mx,
                                                                                          int keep_s)
{
    EXP512_SUM_BODY(STORE_S_PB, TAIL_PB)
}

__attribute__((target("avx2,fma"))) static float max_of_avx2(const float *s, long n, float mx) { MAX_OF_BODY return mx; }
/* Sixteen lanes, four chains of vmaxps (one chain waits on its own latency
** every step: a row's max took 40 % as long as its e^x), then the lanes. Each
** step keeps the running max when a value is NaN or equal to it, as
** MAX_OF_BODY does. */
__attribute__((target("avx512f,avx512dq,fma"))) static float max_of_avx512(const float *s, long n, float mx)
{
    __m512 a0 = _mm512_set1_ps(mx), a1 = a0, a2 = a0, a3 = a0;
    long c = 0;
    for (; c + 64 <= n; c += 64) {
        a0 = _mm512_max_ps(_mm512_loadu_ps(s + c), a0);
        a1 = _mm512_max_ps(_mm512_loadu_ps(s + c + 16), a1);
        a2 = _mm512_max_ps(_mm512_loadu_ps(s + c + 32), a2);
        a3 = _mm512_max_ps(_mm512_loadu_ps(s + c + 48), a3);
    }
    for (; c + 16 <= n; c += 16)
        a0 = _mm512_max_ps(_mm512_loadu_ps(s + c), a0);
    if (c < n) {
        __mmask16 k = (__mmask16)((1u << (n - c)) - 1);
        a1 = _mm512_mask_max_ps(a1, k, _mm512_maskz_loadu_ps(k, s + c), a1);
    }
    return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(a0, a1), _mm512_max_ps(a2, a3)));
}
static float max_of_sse2(const float *s, long n, float mx) { MAX_OF_BODY return mx; }

float lx_tile_exp_sum(float *s, long n, float mx, int level)
{
    return level == 3   ? exp_sum_fma8(s, n, mx)
           : level == 2 ? exp_sum_avx512(s, n, mx)
           : level      ? exp_sum_avx2(s, n, mx)
                        : exp_sum_sse2(s, n, mx);
}

int lx_tile_exp_level(int sse2_only)
{
    __builtin_cpu_init();
    if (sse2_only || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return 0;
    if (lx_numerics_get() == LX_NUMERICS_PORTABLE)
        return 1;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") ? 2 : 3;
}

size_t lx_tile_kpack_floats(int T, int KV, int D)
{
    return D % LX_GEMM_NR ? 0 : (size_t)KV * lx_gemm_bt_floats(T, D);
}

long lx_tile_stat_rows(int bq)
{
    return bq % LX_TILE_STAT_ROWS == 0 ? LX_TILE_STAT_ROWS : bq;
}

long lx_tile_stat_units(int bq, long T)
{
    long u = lx_tile_stat_rows(bq);
    return (T + u - 1) / u;
}

/* ---- one tile ------------------------------------------------------------------ */

/* S (nr, nc; stride bk) = c·q·k over the tile, far pairs at the posmap's
** distance: from rotated rows alone when the whole tile is far, else one more
** GEMM into F and a copy of the far entries. qb: on the bf16 kernel, row i0's
** query in bf16 (rows D apart). */
static void tile_scores(const struct tiled *x, float *S, float *F, const uint16_t *qb, int h, float c, long i0,
                        long i1, long j0, long j1)
{
    int bk = x->ws->bk, nr = (int)(i1 - i0), nc = (int)(j1 - j0), D = x->D;
    int far = x->far;
    const struct lx_posmap *pm = &x->spec->posmap;      /* near_lo and near_hi never decrease */
    int lower = far && j0 < lx_posmap_near_lo(pm, i1 - 1);
    int upper = far && !x->causal && j1 - 1 >= lx_posmap_near_hi(pm, i0);
    if (far && j1 - 1 < lx_posmap_near_lo(pm, i0)) {
        lx_tiled_far_product(x, S, 0, h, c, i0, j0, nr, nc);
        return;
    }
    if (far && !x->causal && j0 >= lx_posmap_near_hi(pm, i1 - 1)) {
        lx_tiled_far_product(x, S, 1, h, c, i0, j0, nr, nc);
        return;
    }
    if (x->bf16k) {
        LX_ASSERT(j0 % LX_GEMM_NR == 0);   /* block_forward starts every span on a panel */
        x->bf16prod(S, bk, qb, D, 2, x->kb + (size_t)(h / x->G) * x->kvb_head + (size_t)j0 * D,
                          (long)D * LX_GEMM_NR, nr, nc, D, c, 0.0f);
    } else if (x->kp && j0 % LX_GEMM_NR == 0)
        lx_gemm_rows(S, bk, x->q + i0 * x->ld + (long)h * D, x->ld,
                     x->kp + (size_t)(h / x->G) * x->kp_head + (size_t)j0 * D, LX_GEMM_NR, (long)D * LX_GEMM_NR, nr,
                     nc, D, c, 0.0f);
    else
        lx_gemm(S, bk, x->q + i0 * x->ld + (long)h * D, x->ld, x->k + j0 * x->ld + (long)(h / x->G) * D, x->ld,
                nr, nc, D, 0, 1, c, 0.0f);
    for (int part = 0; part < 2; part++) {
        if (!(part ? upper : lower))
            continue;
        lx_tiled_far_product(x, F, part, h, c, i0, j0, nr, nc);
        for (long i = i0; i < i1; i++) {
            long a = part ? lx_posmap_near_hi(pm, i) : j0, b = part ? j1 : lx_posmap_near_lo(pm, i);
            for (long j = a > j0 ? a : j0; j < (b < j1 ? b : j1); j++)
                S[(i - i0) * bk + (j - j0)] = F[(i - i0) * bk + (j - j0)];
        }
    }
}

/* R(n)·X(t)·S + Σ_k R_k(n)·G_k(t) for one visible entry; far pairs at their
** δ, through the tables when δ is a whole distance inside them. */
static float dist_logit(const struct tiled *x, const double *tab, const double *Rk, double R, int h, long n,
                        long i, long j, float s)
{
    long T = x->T, L = x->L;
    double t = (double)(i - j);
    if (lx_spec_far(x->spec, i, j)) {
        t = lx_spec_delta(x->spec, i, j);
        if (t != floor(t) || fabs(t) >= (double)T) {
            double A, B;
            lx_spec_affine(x->spec, h, n, t, &A, &B);
            return (float)(A * s + B);
        }
    }
    long ti = lx_spec_tab_delta(x->spec, (long)t, T);
    double B = 0.0;
    for (int r = 1; r < x->n_tab; r++)
        B += Rk[r - 1] * tab[(long)r * L + ti];
    return (float)(R * tab[ti] * s + B);
}

/* dist_logit over the tile columns [c0, c1) of row i: the near keys (no
** posmap applies) in a loop without calls, one distance op unrolled. */
static void dist_logits(const struct tiled *x, float *s, const double *tab, const double *Rk, double R, int h,
                        long n, long i, long j0, long c0, long c1)
{
    const struct lx_posmap *pm = &x->spec->posmap;
    long near0 = c0, near1 = c1;        /* columns of near keys */
    if (pm->method) {
        long a = lx_posmap_near_lo(pm, i) - j0, b = lx_posmap_near_hi(pm, i) - j0;
        near0 = a > c0 ? a : c0;
        near1 = b < c1 ? b : c1;
        near1 = near1 < near0 ? near0 : near1;
        for (long c = c0; c < c1; c++)
            if (c < near0 || c >= near1)
                s[c] = dist_logit(x, tab, Rk, R, h, n, i, j0 + c, s[c]);
    }
    const double *X = tab, *G = tab + x->L;
    if (x->n_tab == 2 && x->L > x->T) {       /* signed: δ at δ + T − 1 */
        double R1 = Rk[0];
        for (long c = near0; c < near1; c++) {
            long t = i - j0 - c + x->T - 1;
            s[c] = (float)(R * X[t] * s[c] + R1 * G[t]);
        }
    } else if (x->n_tab == 2) {
        double R1 = Rk[0];
        for (long c = near0; c < near1; c++) {
            long t = i - j0 - c;
            t = t < 0 ? -t : t;
            s[c] = (float)(R * X[t] * s[c] + R1 * G[t]);
        }
    } else {
        for (long c = near0; c < near1; c++)
            s[c] = dist_logit(x, tab, Rk, R, h, n, i, j0 + c, s[c]);
    }
}

/* R(n) = Π row scales / τ and R_k(n) = Π row scales after distance op k / τ. */
double lx_tile_row_factors(const struct lx_spec *spec, long n, double *Rk, int n_dist)
{
    double acc = 1.0 / spec->temperature;
    int k = n_dist - 1;
    for (int o = spec->n_ops - 1; o >= 0; o--) {
        const struct lx_logit_op *op = &spec->ops[o];
        if (op->kind == LX_OP_ROW_SCALE)
            acc *= op->row_scale(op->params, &spec->facts, n);
        else
            Rk[k--] = acc;
    }
    return acc;
}

/* Row i's visible keys, [a[0], b[0]) the sinks and [a[1], b[1]) the window (its
** upper sinks included); returns how many it sees (n of the logit ops). */
static long row_visible(const struct tiled *x, long i, long a[2], long b[2])
{
    const struct lx_spec *spec = x->spec;
    long lo, hi, n = lx_spec_row_keys(spec, i, x->T, x->causal, &lo, &hi);
    a[0] = 0, b[0] = spec->vis.sinks < lo ? spec->vis.sinks : lo;
    a[1] = lo, b[1] = lx_spec_upper_sinks(spec, x->T, x->causal, hi);
    return n;
}

/* Row i's logits in place of its scores s over the tile's nc columns (key j0 + c
** at column c): its visible keys are columns [c0[p], c1[p]), p = 0 the sinks, 1
** the window; every other column 0. Returns their max (−∞: none visible). */
static float tile_logits(const struct tiled *x, float *s, int h, long i, long j0, int nc, long c0[2], long c1[2])
{
    const struct lx_spec *spec = x->spec;
    long a[2], b[2], n = row_visible(x, i, a, b);
    for (int p = 0; p < 2; p++) {
        c0[p] = a[p] > j0 ? a[p] - j0 : 0, c1[p] = b[p] - j0;
        c0[p] = c0[p] > nc ? nc : c0[p];
        c1[p] = c1[p] > nc ? nc : c1[p] < c0[p] ? c0[p] : c1[p];
    }
    int plain = !spec->n_ops && spec->temperature == 1.0;
    double A0 = 1.0, B0 = 0.0, R = 1.0, Rk[LX_SPEC_MAX_OPS];
    const double *tab = spec->has_dist ? x->ws->tab + (long)h * x->n_tab * x->L : NULL;
    if (!plain && !spec->has_dist)
        lx_spec_affine(spec, h, n, 0.0, &A0, &B0);
    else if (!plain)
        R = lx_tile_row_factors(spec, n, Rk, x->n_tab - 1);
    float mt = -INFINITY, a0 = (float)A0, b0 = (float)B0;
    for (int p = 0; p < 2; p++) {
        if (tab)
            dist_logits(x, s, tab, Rk, R, h, n, i, j0, c0[p], c1[p]);
        else if (!plain)
            for (long c = c0[p]; c < c1[p]; c++)
                s[c] = a0 * s[c] + b0;
        lx_softcap_row(s, c0[p], c1[p], spec->softcap);
        mt = x->avx512 ? max_of_avx512(s + c0[p], c1[p] - c0[p], mt)
             : x->avx2 ? max_of_avx2(s + c0[p], c1[p] - c0[p], mt) : max_of_sse2(s + c0[p], c1[p] - c0[p], mt);
    }
    long z0[3] = {0, c1[0], c1[1]}, z1[3] = {c0[0], c0[1], nc};
    for (int p = 0; p < 3; p++)
        for (long c = z0[p]; c < z1[p]; c++)
            s[c] = 0.0f;
    return mt;
}

/* e^(s − mx) in place over n floats, their sum returned, in the loop the CPU and numerics take. */
static float exp_sum(const struct tiled *x, float *s, long n, float mx)
{
    return x->avx512 ? exp_sum_avx512(s, n, mx)
           : x->fma8 ? exp_sum_fma8(s, n, mx)
           : x->avx2 ? exp_sum_avx2(s, n, mx)
                     : exp_sum_sse2(s, n, mx);
}

/* Row i of the tile: its logits (tile_logits), the online-softmax update of m,
** s and the accumulator O, and P in place of S (0 elsewhere); with A, the
** row's statistics sums (keep: nc floats of scratch for its logits). With pb
** (x->pfused), P goes to pb in bf16 instead (to S as well only when A needs
** it), nc values and a 0. */
static void tile_row(const struct tiled *x, float *s, float *Orow, float *m, float *l, int h, long i, long j0,
                     int nc, struct rowacc *A, float *keep, uint16_t *pb)
{
    long c0[2], c1[2];
    float mt = tile_logits(x, s, h, i, j0, nc, c0, c1);
    if (pb) {
        long z0[3] = {0, c1[0], c1[1]}, z1[3] = {c0[0], c0[1], nc};
        for (int p = 0; p < 3; p++)
            memset(pb + z0[p], 0, sizeof *pb * (size_t)(z1[p] - z0[p]));
        pb[nc] = 0;
        if (mt == -INFINITY)
            memset(pb, 0, sizeof *pb * (size_t)nc);
    }
    if (mt == -INFINITY)
        return;     /* no key of this tile is visible to row i */
    float mn = mt > *m ? mt : *m;
    if (mn != *m) {
        float al = *m - mn > EXP_FLOOR ? expf(*m - mn) : 0.0f;
        if (A)
            lx_tile_acc_rescale(A, x->st, al, (double)*m - mn, *l);
        *l *= al;
#pragma omp simd
        for (int d = 0; d < x->D; d++)
            Orow[d] *= al;
        *m = mn;
    }
    for (int p = 0; A && p < 2; p++)
        memcpy(keep + c0[p], s + c0[p], sizeof(float) * (size_t)(c1[p] - c0[p]));
    for (int p = 0; p < 2; p++)
        *l += pb ? exp_sum_avx512_bf16(s + c0[p], pb + c0[p], c1[p] - c0[p], mn, A != NULL)
              : exp_sum(x, s + c0[p], c1[p] - c0[p], mn);
    for (int p = 0; A && p < 2; p++)
        lx_tile_acc_add(A, x->st, keep, s, mn, i, j0, c0[p], c1[p]);
}

/* ---- one query block ------------------------------------------------------- */

/* The block's rows [r0, r1) whose statistics are summed and zeroed sums for
** them; 0 when none. */
static int block_stats(const struct tiled *x, struct rowacc *acc, long i0, long i1, long *r0, long *r1)
{
    if (!x->st)
        return 0;
    *r0 = x->st->row0 > i0 ? x->st->row0 - i0 : 0;
    *r1 = (x->st_row1 < i1 ? x->st_row1 : i1) - i0;
    if (*r1 <= *r0)
        return 0;
    memset(acc, 0, sizeof *acc * (size_t)(i1 - i0));
    return 1;
}

/* The block's scale of q·k for head h (the learned multiplier, if any, in it). */
static float block_scale(const struct tiled *x, int h)
{
    return (float)lx_spec_qk_scale(x->spec, x->D) * (x->mult && x->mult[h] != 0.0f ? x->mult[h] : 1.0f);
}

/* The key spans rows [i0, i1) see, [s0[p], s1[p]): the sinks of the last row,
** then the window from the first row's lo (on a key panel for the bf16 kernel,
** whose tiles start on one; tile_logits masks the keys before lo). */
static void block_spans(const struct tiled *x, long i0, long i1, long s0[2], long s1[2])
{
    const struct lx_spec *spec = x->spec;
    long lo0, hi0, lo1, hi1;
    lx_spec_row_keys(spec, i0, x->T, x->causal, &lo0, &hi0);
    lx_spec_row_keys(spec, i1 - 1, x->T, x->causal, &lo1, &hi1);
    long ns = spec->vis.sinks < lo1 ? spec->vis.sinks : lo1, up = lx_spec_upper_sinks(spec, x->T, x->causal, hi1);
    if (x->bf16k)
        lo0 -= lo0 % LX_GEMM_NR;
    s0[0] = 0, s1[0] = ns >= lo0 ? 0 : ns;
    s0[1] = ns >= lo0 ? 0 : lo0, s1[1] = up;
}

/* Causal rows above a tile's first key j0 see none of it (sinks aside): on
** lenx's kernels, whose rows do not depend on each other, the block's first
** rows skip it (tile_row would only zero them, and P V would add 0). The rows
** skipped. */
static int tile_skip(const struct tiled *x, long i0, long j0)
{
    return (x->kp || x->bf16k) && x->causal && j0 > i0 && j0 >= x->spec->vis.sinks ? (int)(j0 - i0) : 0;
}

/* O[ra..nr) += P[ra..nr) V[j0, j1) in fp32 (P's rows ldp apart). */
static void tile_pv(const struct tiled *x, float *O, const float *P, long ldp, int ra, int nr, int h, long j0, long j1)
{
    int D = x->D;
    const float *vt = x->v + j0 * x->ld + (long)(h / x->G) * D;
    if (x->kp)      /* V's rows are its own panels (D is a multiple of LX_GEMM_NR) */
        lx_gemm_rows(O + (size_t)ra * D, D, P + (size_t)ra * ldp, ldp, vt, x->ld, LX_GEMM_NR, nr - ra, D,
                     (int)(j1 - j0), 1.0f, 1.0f);
    else
        lx_gemm(O, D, P, (int)ldp, vt, x->ld, nr, D, (int)(j1 - j0), 0, 0, 1.0f, 1.0f);
}

/* Query rows [i0, i1) of head h: every key tile some row sees, then o = O / s
** (and, with x->st, the rows' statistics into the block's partial sums). */
static void block_forward(const struct tiled *x, float *scr, struct rowacc *acc, int h, long i0, long i1)
{
    const struct lx_spec *spec = x->spec;
    int bq = x->bq, bk = x->ws->bk, D = x->D, nr = (int)(i1 - i0);
    float *S = scr, *F = S + (size_t)bq * bk, *O = F + (size_t)bq * bk, *m = O + (size_t)bq * D, *l = m + bq;
    uint16_t *qb = (uint16_t *)(l + bq), *pb = (uint16_t *)F;
    int pbs = bk + 2;   /* pb's row stride: nc values and the 0 an odd nc pairs with */
    /* with P written in bf16 by tile_row, its logits' scratch is one row for all, F's last (past pb's rows) */
    float *FK = F + (size_t)(bq - 1) * bk;
    float c = block_scale(x, h);
    memset(O, 0, sizeof(float) * (size_t)nr * D);
    for (int r = 0; r < nr; r++)
        lx_zsink_start(spec, h, m + r, l + r);     /* with a zero sink, its term opens the row */
    for (int r = 0; x->bf16k && r < nr; r++)
        lx_f32_to_bf16_n(qb + (size_t)r * D, x->q + (i0 + r) * x->ld + (long)h * D, (size_t)D);
    long s0[2], s1[2], r0 = 0, r1 = 0;
    block_spans(x, i0, i1, s0, s1);
    int stats = block_stats(x, acc, i0, i1, &r0, &r1);
    for (int span = 0; span < 2; span++)
        for (long j0 = s0[span]; j0 < s1[span]; j0 += bk) {
            long j1 = j0 + bk < s1[span] ? j0 + bk : s1[span];
            int ra = tile_skip(x, i0, j0);
            size_t off = (size_t)ra * bk;
            tile_scores(x, S + off, F + off, qb + (size_t)ra * D, h, c, i0 + ra, i1, j0, j1);
            for (int r = ra; r < nr; r++)
                tile_row(x, S + (size_t)r * bk, O + (size_t)r * D, m + r, l + r, h, i0 + r, j0, (int)(j1 - j0),
                         stats && r >= r0 && r < r1 ? acc + r : NULL, x->pfused ? FK : F + (size_t)r * bk,
                         x->pfused ? pb + (size_t)r * pbs : NULL);
            int nc = (int)(j1 - j0);
            if (x->bf16k) {     /* P in bf16 rows (unless tile_row wrote them), then P·V on the bf16 kernel */
                for (int r = ra; !x->pfused && r < nr; r++) {
                    lx_f32_to_bf16_n(pb + (size_t)r * pbs, S + (size_t)r * bk, (size_t)nc);
                    pb[(size_t)r * pbs + nc] = 0;
                }
                x->bf16prod(O + (size_t)ra * D, D, pb + (size_t)ra * pbs, pbs, 2,
                                  x->vb + (size_t)(h / x->G) * x->kvb_head + (size_t)j0 * LX_GEMM_NR, x->vb_ps,
                                  nr - ra, D, nc, 1.0f, 1.0f);
                continue;
            }
            for (int r = ra; x->bf16 && r < nr; r++)
                lx_round_bf16_n(S + (size_t)r * bk, (size_t)nc);
            tile_pv(x, O, S, bk, ra, nr, h, j0, j1);
        }
    for (int r = 0; r < nr; r++) {
        float *dst = x->o + (i0 + r) * x->ldo + (long)h * D, inv = 1.0f / l[r];
#pragma omp simd    /* one product per value: the same bits in any width */
        for (int d = 0; d < D; d++)
            dst[d] = O[(size_t)r * D + d] * inv;
        if (x->ws->lse)
            x->ws->lse[(long)h * x->T + i0 + r] = m[r] + logf(l[r]);
    }
    for (long r = r0; stats && r < r1; r++) {
        long lo, hi, n = lx_spec_row_keys(spec, i0 + r, x->T, x->causal, &lo, &hi);
        double ps = spec->zsink.method ? exp(lx_zsink_logit(spec, h) - (double)m[r]) / l[r] : 0.0;
        lx_tile_acc_finish(&x->ws->part[(long)h * x->nsu + (i0 + r) / x->su], acc + r, x->st, l[r], n, i0 + r, ps);
    }
}

/* Rows [i0, i1) of head h with each row's probabilities normalised before
** P·V and rounded to x->ws->phalf's type, as llama.cpp's products with its
** half KV cache take them (lx_attn_half): every tile's logits go to pn (bq
** rows of T floats, key j at column j), each whole row's max and sum give
** P = e/Σ, rounded, then P·V tile by tile. The online softmax cannot round P
** normalised; the head path can, with a T × T buffer and every product whole.
** Row statistics come from the unrounded P, as the head path's (keep: a row of
** T floats for its logits). */
static void block_normed(const struct tiled *x, float *scr, float *pn, struct rowacc *acc, int h, long i0, long i1)
{
    const struct lx_spec *spec = x->spec;
    int bq = x->bq, bk = x->ws->bk, D = x->D, nr = (int)(i1 - i0);
    long T = x->T, s0[2], s1[2], r0 = 0, r1 = 0;
    float *S = scr, *F = S + (size_t)bq * bk, *O = F + (size_t)bq * bk, *m = O + (size_t)bq * D;
    float *keep = pn + (size_t)bq * T, c = block_scale(x, h), m0, l0;
    lx_zsink_start(spec, h, &m0, &l0);     /* with a zero sink, its term opens the row */
    for (int r = 0; r < nr; r++)
        m[r] = m0;
    block_spans(x, i0, i1, s0, s1);
    for (int span = 0; span < 2; span++)
        for (long j0 = s0[span]; j0 < s1[span]; j0 += bk) {
            long j1 = j0 + bk < s1[span] ? j0 + bk : s1[span], c0[2], c1[2];
            int ra = tile_skip(x, i0, j0), nc = (int)(j1 - j0);
            tile_scores(x, S + (size_t)ra * bk, F + (size_t)ra * bk, NULL, h, c, i0 + ra, i1, j0, j1);
            for (int r = 0; r < nr; r++) {
                float *row = pn + (size_t)r * T + j0, mt;
                if (r < ra) {
                    memset(row, 0, sizeof(float) * (size_t)nc);
                    continue;
                }
                mt = tile_logits(x, S + (size_t)r * bk, h, i0 + r, j0, nc, c0, c1);
                memcpy(row, S + (size_t)r * bk, sizeof(float) * (size_t)nc);
                m[r] = mt > m[r] ? mt : m[r];
            }
        }
    int stats = block_stats(x, acc, i0, i1, &r0, &r1);
    for (int r = 0; r < nr; r++) {
        long i = i0 + r, a[2], b[2], n = row_visible(x, i, a, b);
        float *p = pn + (size_t)r * T;
        float zs = l0 > 0.0f && m0 - m[r] > EXP_FLOOR ? expf(m0 - m[r]) : 0.0f, z = zs;    /* the sink's share */
        int st = stats && r >= r0 && r < r1;
        for (int k = 0; st && k < 2; k++)
            memcpy(keep + a[k], p + a[k], sizeof(float) * (size_t)(b[k] - a[k]));
        for (int k = 0; k < 2; k++)
            z += exp_sum(x, p + a[k], b[k] - a[k], m[r]);
        for (int k = 0; st && k < 2; k++)
            lx_tile_acc_add(acc + r, x->st, keep, p, m[r], i, 0, a[k], b[k]);
        if (st && zs > 0.0f)     /* the sink's e·(l − m) in u (the online path's rescaling adds it) */
            acc[r].u += (double)zs * ((double)m0 - m[r]);
        float iz = 1.0f / z;
        for (int k = 0; k < 2; k++) {
            for (long j = a[k]; j < b[k]; j++)
                p[j] *= iz;
            lx_round_half_n(p + a[k], x->ws->phalf, (size_t)(b[k] - a[k]));
        }
        if (st)
            lx_tile_acc_finish(&x->ws->part[(long)h * x->nsu + i / x->su], acc + r, x->st, z, n, i, zs * iz);
    }
    memset(O, 0, sizeof(float) * (size_t)nr * D);
    for (int span = 0; span < 2; span++)
        for (long j0 = s0[span]; j0 < s1[span]; j0 += bk)
            tile_pv(x, O, pn + j0, T, tile_skip(x, i0, j0), nr, h, j0, j0 + bk < s1[span] ? j0 + bk : s1[span]);
    for (int r = 0; r < nr; r++)
        memcpy(x->o + (i0 + r) * x->ldo + (long)h * D, O + (size_t)r * D, sizeof(float) * (size_t)D);
}

void lx_attn_tiled_forward(float *o, const float *q, const float *k, const float *v, const struct lx_spec *spec,
                           const float *mult, const struct lx_attn_shape *sh, const struct lx_tile_ws *ws)
{
    int T = sh->T, H = sh->H, KV = sh->KV, D = sh->D, ld = sh->ld, ldo = sh->ldo, causal = sh->causal;
    LX_ASSERT(omp_get_max_threads() <= ws->n_thr && ws->bq > 0 && ws->bk > 0);
    LX_ASSERT(D <= 2 * LX_SPEC_MAX_PAIRS + 2 && KV >= 1 && H % KV == 0);
    struct tiled x = {.spec = spec, .q = q, .k = k, .v = v, .o = o, .ld = ld, .ldo = ldo, .T = T, .H = H, .KV = KV,
                      .D = D, .causal = causal, .G = H / KV, .n_tab = lx_tile_tab_rows(spec), .ws = ws, .mult = mult,
                      .L = lx_spec_tab_len(spec, T)};
    x.bf16 = lx_numerics_get() == LX_NUMERICS_BF16;
    x.far = lx_tile_rot_floats(spec, T, H, KV, D, causal) > 0;
    LX_ASSERT((!x.n_tab || ws->tab) && (!x.far || ws->rot));
    if (x.n_tab)
        lx_tile_dist_tables(ws->tab, spec, H, T);
    int level = lx_tile_exp_level(ws->sse2_only);
    x.avx2 = level >= 1, x.avx512 = level == 2, x.fma8 = level == 3;
    if (x.far)
        lx_tiled_far_rows(&x);
    x.bf16k = x.bf16 && ws->kpack && lx_tile_kpack_floats(T, KV, D) && ws->bk % LX_GEMM_NR == 0 &&
              (ws->bf16_plain || lx_gemm_bf16_native());
    x.bf16prod = ws->bf16_plain ? lx_gemm_rows_bf16_plain : lx_gemm_rows_bf16;
    x.pfused = x.bf16k && x.avx512 && !ws->bf16_plain;
    if (x.bf16k) {      /* keys then values, each KV heads of lx_gemm_bt_floats(T, D) bf16 values: ws->kpack's size */
        x.kvb_head = lx_gemm_bt_floats(T, D), x.vb_ps = (long)lx_gemm_bt_floats(T, LX_GEMM_NR);
        x.kb = (const uint16_t *)ws->kpack, x.vb = x.kb + (size_t)KV * x.kvb_head;
#pragma omp parallel for schedule(static)
        for (int g = 0; g < 2 * KV; g++)
            if (g < KV)
                lx_gemm_bf16_pack_bt((uint16_t *)x.kb + (size_t)g * x.kvb_head, k + (long)g * D, ld, T, D);
            else
                lx_gemm_bf16_pack_b((uint16_t *)x.vb + (size_t)(g - KV) * x.kvb_head, v + (long)(g - KV) * D, ld, T,
                                    D);
    } else if (ws->kpack && lx_tile_kpack_floats(T, KV, D)) {
        x.kp = ws->kpack, x.kp_head = lx_tile_kpack_floats(T, 1, D);
#pragma omp parallel for schedule(static)
        for (int g = 0; g < KV; g++)
            lx_gemm_pack_bt(ws->kpack + (size_t)g * x.kp_head, k + (long)g * D, ld, T, D);
    }
    LX_ASSERT(!ws->phalf || (ws->pnorm && !ws->lse && !x.bf16));   /* llama.cpp's rounding: evaluation, fp32 */
    x.st = ws->stats;
    x.st_row1 = x.st && x.st->row1 ? x.st->row1 : T;
    LX_ASSERT(!x.st || (ws->acc && ws->part && x.st->out && (!x.st->ranges || x.st->ranges->n <= LX_MAX_RANGES)));
    size_t per = lx_tile_thread_floats(ws->bq, ws->bk, D), per_acc = lx_tile_acc_doubles(ws->bq);
    /* With a window, a block's key tiles start at its first row's window, so
    ** the block size decides where each row's tiles begin, and with it the
    ** last bits of its online softmax: windowed stacks keep blocks of
    ** LX_TILE_STAT_ROWS (their values do not move when ws->bq grows; they
    ** visit few tiles, so a taller block would gain little anyway). */
    int bq = x.bq = spec->vis.window && ws->bq % LX_TILE_STAT_ROWS == 0 ? LX_TILE_STAT_ROWS : ws->bq;
    long nqb = (T + bq - 1) / bq;
    x.su = lx_tile_stat_rows(bq), x.nsu = lx_tile_stat_units(bq, T);
    if (x.st)
        memset(ws->part, 0, sizeof *ws->part * (size_t)H * (size_t)x.nsu);
    /* causal blocks cost more the later they are: hand out the costly ones first */
#pragma omp parallel for schedule(dynamic, 1)
    for (long it = 0; it < (long)H * nqb; it++) {
        int h = (int)(it % H), thr = omp_get_thread_num();
        long qb = causal ? nqb - 1 - it / H : it / H, i0 = qb * bq, i1 = i0 + bq < T ? i0 + bq : T;
        float *scr = ws->scratch + per * (size_t)thr;
        struct rowacc *acc = x.st ? (struct rowacc *)(ws->acc + per_acc * (size_t)thr) : NULL;
        if (ws->phalf)
            block_normed(&x, scr, ws->pnorm + lx_tile_pnorm_floats(ws->bq, T) * (size_t)thr, acc, h, i0, i1);
        else
            block_forward(&x, scr, acc, h, i0, i1);
    }
    for (int h = 0; x.st && h < H; h++)     /* unit order: neither threads nor blocks change the sums */
        for (long u = 0; u < x.nsu; u++)
            lx_diag_add(&x.st->out[h], &ws->part[(long)h * x.nsu + u]);
}
