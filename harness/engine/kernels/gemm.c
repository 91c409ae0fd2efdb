/*
** harness/engine/kernels/gemm.c - the fixed-order sgemm of portable numerics
** (gemm.h says what is fixed).
**
** The usual shape of a fast GEMM, kept to what leaves each element's sum
** alone: C is cut into blocks of MC × NC; one thread computes a block (an
** OpenMP loop over blocks, so each element has exactly one owner). For each
** slice of KC values of k, in order, the block's rows of op(A) are packed
** into panels of MR rows and its columns of op(B) into panels of NR columns
** (zero-padded at the edges), and an MR × NR register tile runs its FMA
** chains over the slice, continuing from the running sums it stored after
** the previous slice (a float stored and reloaded is the same float). Each
** lane of the tile is one element's chain: the order over k never depends
** on where the element sits, how far the block reaches or which thread runs
** it. Padded lanes are computed and dropped. Last, C = alpha·sum + beta·C.
**
** The kernel is compiled for AVX2 + FMA (explicit _mm256_fmadd_ps, one
** rounding per step, as fmaf) beside a plain C one (fmaf: the same single
** rounding, in hardware or in libm's exact software fallback); the CPU picks
** at run time. This file is compiled with -ffp-contract=off (Makefile), so
** the compiler never fuses the epilogue's multiply and add either. Where the
** CPU has AVX-512, the packed product (two row panels at a time) and the
** tiled attention's products (lx_gemm_rows) run AVX-512 kernels: two tiles at
** once, one 16-lane chain per row. A lane is its own chain whatever the
** vector's width, so they give the AVX2 kernel's bits, only faster.
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/kernels/gemm.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/lx.h"

#define MR 6            /* register tile rows: 6 × 2 accumulators of 8 lanes */
#define NR 16           /* register tile columns */
#define MC 120          /* rows of C per block (a multiple of MR) */
#define NC 384          /* columns of C per block (a multiple of NR) */
#define KC 256          /* values of k per packed slice */
#define PAR_FLOPS 262144.0      /* below this many multiply-adds, one thread */

_Static_assert(MR == 6 && NR == 16, "tile_avx2 is written out for 6 x 16");
_Static_assert(MC % MR == 0 && NC % NR == 0, "blocks are whole tiles");

/* One call's operands. */
struct gemm {
    float *C;
    const float *A, *B;
    int ldc, lda, ldb, M, N, K, ta, tb;
    float alpha, beta;
    int avx2;           /* 1: the AVX2 + FMA kernel */
    int avx512;         /* 1: two row panels at a time on the AVX-512 kernel (the same bits) */
};

/* Per-thread scratch: packed A (MC × KC), packed B (KC × NC), and the block's
** running sums, MR × NR tiles in (column panel, row panel) order. */
struct scratch {
    float *ap, *bp, *acc;
};

static _Thread_local struct scratch tls;

static struct scratch *scratch_get(void)
{
    if (!tls.ap) {
        tls.ap = aligned_alloc(64, sizeof(float) * (MC * KC + 16));     /* + what tr8 spills */
        tls.bp = aligned_alloc(64, sizeof(float) * KC * NC);
        tls.acc = aligned_alloc(64, sizeof(float) * MC * NC);
        LX_ASSERT(tls.ap && tls.bp && tls.acc);
    }
    return &tls;
}

/* ---- the register tile: acc (MR × NR) += ap (kc × MR) · bp (kc × NR) ----- */

/* Where a tile's sums go after its last slice: C[i][j] = alpha·sum +
** beta·C[i][j] over the mr × nr corner of the tile that lies inside C. */
struct out {
    float *C;
    long ldc;
    int mr, nr;
    float alpha, beta;
};

/* The epilogue one element at a time (edge tiles, and the plain kernel). */
static void out_plain(const struct out *o, const float *acc)
{
    for (int r = 0; r < o->mr; r++)
        for (int c = 0; c < o->nr; c++) {
            float v = o->alpha * acc[r * NR + c], *dst = o->C + r * o->ldc + c;
            *dst = o->beta != 0.0f ? v + o->beta * *dst : v;
        }
}

/* One row r of the tile: two 8-lane chains, one FMA each per k. */
#define ROW_FMA(r)                                                              \
    do {                                                                        \
        __m256 a_ = _mm256_broadcast_ss(ap + (r));                              \
        c##r##0 = _mm256_fmadd_ps(a_, b0, c##r##0);                             \
        c##r##1 = _mm256_fmadd_ps(a_, b1, c##r##1);                             \
    } while (0)

/* Row r of a whole tile into C: the same multiply and add as out_plain. */
#define ROW_OUT(r)                                                              \
    do {                                                                        \
        float *d_ = o->C + (r) * o->ldc;                                        \
        __m256 v0_ = _mm256_mul_ps(al, c##r##0), v1_ = _mm256_mul_ps(al, c##r##1); \
        if (o->beta != 0.0f) {                                                  \
            v0_ = _mm256_add_ps(v0_, _mm256_mul_ps(be, _mm256_loadu_ps(d_)));   \
            v1_ = _mm256_add_ps(v1_, _mm256_mul_ps(be, _mm256_loadu_ps(d_ + 8))); \
        }                                                                       \
        _mm256_storeu_ps(d_, v0_);                                              \
        _mm256_storeu_ps(d_ + 8, v1_);                                          \
    } while (0)

/* After the FMAs (o: where the sums go, or NULL): a whole tile with o goes
** straight to C; else the twelve accumulators are stored to acc, and with o
** written out from there by out_plain. */
#define TILE_EPILOGUE(acc)                                                      \
    do {                                                                        \
        if (o && o->mr == MR && o->nr == NR) {                                  \
            __m256 al = _mm256_set1_ps(o->alpha), be = _mm256_set1_ps(o->beta); \
            ROW_OUT(0);                                                         \
            ROW_OUT(1);                                                         \
            ROW_OUT(2);                                                         \
            ROW_OUT(3);                                                         \
            ROW_OUT(4);                                                         \
            ROW_OUT(5);                                                         \
            return;                                                             \
        }                                                                       \
        _mm256_store_ps(acc, c00), _mm256_store_ps(acc + 8, c01), _mm256_store_ps(acc + 16, c10); \
        _mm256_store_ps(acc + 24, c11), _mm256_store_ps(acc + 32, c20), _mm256_store_ps(acc + 40, c21); \
        _mm256_store_ps(acc + 48, c30), _mm256_store_ps(acc + 56, c31), _mm256_store_ps(acc + 64, c40); \
        _mm256_store_ps(acc + 72, c41), _mm256_store_ps(acc + 80, c50), _mm256_store_ps(acc + 88, c51); \
        /* GCC 12 turns the call below into a tail jump without the vzeroupper it \
        ** puts before every return: the upper halves stayed dirty, and the SSE \
        ** code after the product (SwiGLU, expf) ran about 18 times slower */ \
        _mm256_zeroupper();                                                     \
        if (o)                                                                  \
            out_plain(o, acc);                                                  \
    } while (0)

/* Twelve named accumulators, written out so they stay in registers at -O2.
** first: the chains start at 0, else at acc; o: the last slice, written to
** C (NULL: the sums go back to acc for the next slice). */
__attribute__((target("avx2,fma"))) static void tile_avx2(float *acc, const float *ap, const float *bp, int kc,
                                                          int first, const struct out *o)
{
    __m256 z = _mm256_setzero_ps();
#define LD(r, h) (first ? z : _mm256_load_ps(acc + (r) * NR + 8 * (h)))
    __m256 c00 = LD(0, 0), c01 = LD(0, 1), c10 = LD(1, 0), c11 = LD(1, 1), c20 = LD(2, 0), c21 = LD(2, 1);
    __m256 c30 = LD(3, 0), c31 = LD(3, 1), c40 = LD(4, 0), c41 = LD(4, 1), c50 = LD(5, 0), c51 = LD(5, 1);
#undef LD
    for (int k = 0; k < kc; k++, ap += MR, bp += NR) {
        __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
        ROW_FMA(0);
        ROW_FMA(1);
        ROW_FMA(2);
        ROW_FMA(3);
        ROW_FMA(4);
        ROW_FMA(5);
    }
    TILE_EPILOGUE(acc);
}

/* After an AVX-512 kernel's FMAs: the twelve accumulators c of two MR × NR
** tiles to o[0] (rows 0 .. MR) and o[1] (the next MR), each straight from the
** registers when whole, else through acc and out_plain (the same multiply
** and add); o NULL: the sums go back to acc (two tiles) for the next slice. */
__attribute__((target("avx512f"))) static void epilogue512(const __m512 *c, float *acc, const struct out *o)
{
    for (int h = 0; h < 2; h++) {
        if (o && o[h].mr == MR && o[h].nr == NR) {
            __m512 al = _mm512_set1_ps(o[h].alpha), be = _mm512_set1_ps(o[h].beta);
            for (int r = 0; r < MR; r++) {
                float *d = o[h].C + r * o[h].ldc;
                __m512 v = _mm512_mul_ps(al, c[h * MR + r]);
                if (o[h].beta != 0.0f)
                    v = _mm512_add_ps(v, _mm512_mul_ps(be, _mm512_loadu_ps(d)));
                _mm512_storeu_ps(d, v);
            }
            continue;
        }
        for (int r = 0; r < MR; r++)
            _mm512_store_ps(acc + (h * MR + r) * NR, c[h * MR + r]);
        if (o && o[h].mr > 0)
            out_plain(&o[h], acc + h * MR * NR);
    }
    _mm256_zeroupper();     /* as TILE_EPILOGUE: the SSE code after must not pay for dirty upper halves */
}

/* Two MR × NR tiles (row panels ap and ap + MR·kc, sums at acc and acc + MR·NR,
** o[0] and o[1]) with AVX-512: one 16-lane chain per row, each lane the same
** fmaf chain as tile_avx2's, so the same bits; the same epilogue as out_plain. */
#define T512_FMA(r) c##r = _mm512_fmadd_ps(_mm512_set1_ps(ap[(r) < MR ? (r) : MR * kc + (r) - MR]), bv, c##r)
__attribute__((target("avx512f"))) static void tile_avx512(float *acc, const float *ap, const float *bp, int kc,
                                                           int first, const struct out *o)
{
#define LD(r) (first ? _mm512_setzero_ps() : _mm512_load_ps(acc + (r) * NR))
    __m512 c0 = LD(0), c1 = LD(1), c2 = LD(2), c3 = LD(3), c4 = LD(4), c5 = LD(5);
    __m512 c6 = LD(6), c7 = LD(7), c8 = LD(8), c9 = LD(9), c10 = LD(10), c11 = LD(11);
#undef LD
    for (int k = 0; k < kc; k++, ap += MR, bp += NR) {
        __m512 bv = _mm512_load_ps(bp);
        T512_FMA(0), T512_FMA(1), T512_FMA(2), T512_FMA(3), T512_FMA(4), T512_FMA(5);
        T512_FMA(6), T512_FMA(7), T512_FMA(8), T512_FMA(9), T512_FMA(10), T512_FMA(11);
    }
    __m512 cs[2 * MR] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
    epilogue512(cs, acc, o);
}
#undef T512_FMA

static void tile_plain(float *acc, const float *ap, const float *bp, int kc, int first, const struct out *o)
{
    if (first)
        memset(acc, 0, sizeof(float) * MR * NR);
    for (int k = 0; k < kc; k++, ap += MR, bp += NR)
        for (int r = 0; r < MR; r++)
            for (int c = 0; c < NR; c++)
                acc[r * NR + c] = fmaf(ap[r], bp[c], acc[r * NR + c]);
    if (o)
        out_plain(o, acc);
}

/* ---- packing ------------------------------------------------------------- */

/* Rows [i0, i0 + mb) × k [p0, p0 + kc) of op(A) into panels of MR rows, each
** kc × MR (row r of the panel at lane r), zeros past row mb. */
static int pack_rows_avx2(float *p, int w, const float *src, long ld, int kc);

static void pack_a(float *ap, const struct gemm *g, int i0, int mb, int p0, int kc)
{
    if (g->ta) {        /* op(A) = Aᵀ: row k of A holds the block's rows, read once along it */
        int full = mb / MR * MR;
        for (int k = 0; k < kc; k++) {
            const float *src = g->A + (long)(p0 + k) * g->lda + i0;
            for (int ir = 0; ir < full; ir += MR)
                memcpy(ap + (long)ir * kc + k * MR, src + ir, sizeof(float) * MR);
            for (int r = 0; r < MR && full < mb; r++)
                ap[(long)full * kc + k * MR + r] = full + r < mb ? src[full + r] : 0.0f;
        }
        return;
    }
    for (int ir = 0; ir < mb; ir += MR, ap += MR * kc) {
        int mr = mb - ir < MR ? mb - ir : MR;
        const float *src = g->A + (long)(i0 + ir) * g->lda + p0;
        if (mr < MR)
            memset(ap, 0, sizeof(float) * MR * (size_t)kc);
        int k0 = mr == MR && g->avx2 ? pack_rows_avx2(ap, MR, src, g->lda, kc) : 0;
        for (int r = 0; r < mr; r++)
            for (int k = k0; k < kc; k++)
                ap[k * MR + r] = src[(long)r * g->lda + k];
    }
}

/* Eight k of `rows` (at most 8) rows of a row-major matrix s (stride ld),
** transposed in registers: d[k·ds + r] = s[r·ld + k] for k < 8, r < rows,
** written as 8 floats a k in increasing k (with ds < 8 each store's tail
** is overwritten by the next; the last spills ds − 8 floats past d[7·ds +
** 7]). A copy: no value changes. */
__attribute__((target("avx2,fma"))) static void tr8(float *d, long ds, const float *s, long ld, int rows)
{
    __m256 r[8];
    for (int i = 0; i < 8; i++)
        r[i] = i < rows ? _mm256_loadu_ps(s + i * ld) : _mm256_setzero_ps();
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(d + ds, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(d + 2 * ds, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(d + 3 * ds, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(d + 4 * ds, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(d + 5 * ds, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(d + 6 * ds, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(d + 7 * ds, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* A whole panel of width w (MR of A, NR of Bᵀ) from rows of a row-major
** matrix, eight k at a time (tr8, in 8-row bands); returns how many k it
** packed. */
static int pack_rows_avx2(float *p, int w, const float *src, long ld, int kc)
{
    int k0 = 0;
    for (; k0 + 8 <= kc; k0 += 8)
        for (int band = 0; band < w; band += 8)
            tr8(p + (long)k0 * w + band, w, src + (long)band * ld + k0, ld, w - band < 8 ? w - band : 8);
    return k0;
}

/* k [p0, p0 + kc) × columns [j0, j0 + nb) of op(B) into panels of NR
** columns, each kc × NR, zeros past column nb. */
static void pack_b(float *bp, const struct gemm *g, int j0, int nb, int p0, int kc)
{
    for (int jr = 0; jr < nb; jr += NR, bp += NR * kc) {
        int nr = nb - jr < NR ? nb - jr : NR;
        if (!g->tb) {
            for (int k = 0; k < kc; k++) {
                const float *src = g->B + (long)(p0 + k) * g->ldb + j0 + jr;
                if (nr == NR) {
                    memcpy(bp + k * NR, src, sizeof(float) * NR);
                    continue;
                }
                for (int c = 0; c < NR; c++)
                    bp[k * NR + c] = c < nr ? src[c] : 0.0f;
            }
            continue;
        }
        const float *src = g->B + (long)(j0 + jr) * g->ldb + p0;
        int k0 = nr == NR && g->avx2 ? pack_rows_avx2(bp, NR, src, g->ldb, kc) : 0;
        for (int c = 0; c < NR; c++)
            for (int k = k0; k < kc; k++)
                bp[k * NR + c] = c < nr ? src[(long)c * g->ldb + k] : 0.0f;
    }
}

/* ---- one block of C --------------------------------------------------------- */

/* Rows [i0, i0 + mb) × columns [j0, j0 + nb) of C, slice after slice of k
** (one slice of none when K is 0: C = beta·C). */
static void block(const struct gemm *g, struct scratch *s, int i0, int mb, int j0, int nb)
{
    int nir = (mb + MR - 1) / MR, njr = (nb + NR - 1) / NR;
    for (int p0 = 0, first = 1; first || p0 < g->K; p0 += KC, first = 0) {
        int kc = g->K - p0 < KC ? g->K - p0 : KC, last = p0 + kc >= g->K;
        pack_a(s->ap, g, i0, mb, p0, kc);
        pack_b(s->bp, g, j0, nb, p0, kc);
        for (int jr = 0; jr < njr; jr++)
            for (int ir = 0; ir < nir;) {
                int two = g->avx512 && ir + 1 < nir;    /* two row panels at once (their sums are adjacent) */
                float *acc = s->acc + ((long)jr * nir + ir) * MR * NR;
                const float *ap = s->ap + (long)ir * MR * kc, *bp = s->bp + (long)jr * NR * kc;
                int nr = nb - jr * NR < NR ? nb - jr * NR : NR;
                struct out o[2];
                for (int h = 0; h < 1 + two; h++) {
                    int left = mb - (ir + h) * MR;
                    o[h] = (struct out){g->C + (long)(i0 + (ir + h) * MR) * g->ldc + j0 + jr * NR, g->ldc,
                                        left < MR ? left : MR, nr, g->alpha, g->beta};
                }
                if (two)
                    tile_avx512(acc, ap, bp, kc, first, last ? o : NULL);
                else if (g->avx2)
                    tile_avx2(acc, ap, bp, kc, first, last ? &o[0] : NULL);
                else
                    tile_plain(acc, ap, bp, kc, first, last ? &o[0] : NULL);
                ir += 1 + two;
            }
    }
}

static void run(struct gemm *g)
{
    if (g->M <= 0 || g->N <= 0)
        return;
    long nmb = (g->M + MC - 1) / MC, nnb = (g->N + NC - 1) / NC;
    int par = (double)g->M * g->N * g->K >= PAR_FLOPS && !omp_in_parallel();
#pragma omp parallel for schedule(dynamic, 1) if (par)
    for (long b = 0; b < nmb * nnb; b++) {
        int i0 = (int)(b / nnb) * MC, j0 = (int)(b % nnb) * NC;
        block(g, scratch_get(), i0, g->M - i0 < MC ? g->M - i0 : MC, j0, g->N - j0 < NC ? g->N - j0 : NC);
    }
}

/* ---- products for the tiled attention (gemm.h) ------------------------------ */

_Static_assert(LX_GEMM_NR == NR, "the panels are the register tile's columns");

/* One MR × NR tile of C over all K: rows of A from a[r] (the lanes past mr
** repeat row 0 and are dropped), B's rows at b + k·ldb; the same FMA chains
** and epilogue as tile_avx2 with first = 1 and the whole K in one slice. */
__attribute__((target("avx2,fma"))) static void rows_avx2(const float *const *a, long ak, const float *b, long ldb,
                                                          int K, const struct out *o)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
    for (long k = 0, ko = 0; k < K; k++, ko += ak, b += ldb) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8), t;
        t = _mm256_broadcast_ss(a0 + ko), c00 = _mm256_fmadd_ps(t, b0, c00), c01 = _mm256_fmadd_ps(t, b1, c01);
        t = _mm256_broadcast_ss(a1 + ko), c10 = _mm256_fmadd_ps(t, b0, c10), c11 = _mm256_fmadd_ps(t, b1, c11);
        t = _mm256_broadcast_ss(a2 + ko), c20 = _mm256_fmadd_ps(t, b0, c20), c21 = _mm256_fmadd_ps(t, b1, c21);
        t = _mm256_broadcast_ss(a3 + ko), c30 = _mm256_fmadd_ps(t, b0, c30), c31 = _mm256_fmadd_ps(t, b1, c31);
        t = _mm256_broadcast_ss(a4 + ko), c40 = _mm256_fmadd_ps(t, b0, c40), c41 = _mm256_fmadd_ps(t, b1, c41);
        t = _mm256_broadcast_ss(a5 + ko), c50 = _mm256_fmadd_ps(t, b0, c50), c51 = _mm256_fmadd_ps(t, b1, c51);
    }
    float acc[MR * NR] __attribute__((aligned(32)));
    TILE_EPILOGUE(acc);
}

static void rows_plain(const float *const *a, long ak, const float *b, long ldb, int K, const struct out *o)
{
    float acc[MR * NR] = {0};
    for (long k = 0; k < K; k++, b += ldb)
        for (int r = 0; r < MR; r++)
            for (int c = 0; c < NR; c++)
                acc[r * NR + c] = fmaf(a[r][k * ak], b[c], acc[r * NR + c]);
    out_plain(o, acc);
}

/* Two MR × NR tiles at once with AVX-512, one 16-lane chain per row: rows of
** A from a[0 .. 2·MR) (o[0] takes the first MR, o[1] the next), the element
** C[i][j] the same fmaf chain over k as rows_avx2 and rows_plain (every lane
** is its own chain whatever the vector's width), so the three give the same
** bits, and the same multiply and add after it as out_plain. */
#define R512_FMA(r) c##r = _mm512_fmadd_ps(_mm512_set1_ps(a[r][ko]), bv, c##r)
__attribute__((target("avx512f"))) static void rows_avx512(const float *const *a, long ak, const float *b, long ldb,
                                                           int K, const struct out *o)
{
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
    __m512 c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
    for (long k = 0, ko = 0; k < K; k++, ko += ak, b += ldb) {
        __m512 bv = _mm512_loadu_ps(b);
        R512_FMA(0), R512_FMA(1), R512_FMA(2), R512_FMA(3), R512_FMA(4), R512_FMA(5);
        R512_FMA(6), R512_FMA(7), R512_FMA(8), R512_FMA(9), R512_FMA(10), R512_FMA(11);
    }
    float acc[2 * MR * NR] __attribute__((aligned(64)));
    __m512 c[2 * MR] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
    epilogue512(c, acc, o);
}
#undef R512_FMA

/* rows_avx512 over two adjacent column panels (b and b + pstride) at once:
** 24 chains, each B row's two loads and each A value's broadcast shared by
** twice the FMAs (the same chains, so the same bits); o[0], o[1] the first
** panel's two tiles, o[2], o[3] the second's. Row r's k-th value is AV(r):
** a[r][ko] from the rows' pointers, or at[ko + r] when the 2·MR rows are
** adjacent columns of a transposed A (one pointer, the offsets immediate). */
#define R2_FMA(r)                                                               \
    do {                                                                        \
        __m512 a_ = _mm512_set1_ps(AV(r));                                      \
        c##r = _mm512_fmadd_ps(a_, bv, c##r);                                   \
        d##r = _mm512_fmadd_ps(a_, bw, d##r);                                   \
    } while (0)
#define R2_BODY                                                                 \
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0; \
    __m512 c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;             \
    __m512 d0 = c0, d1 = c0, d2 = c0, d3 = c0, d4 = c0, d5 = c0;               \
    __m512 d6 = c0, d7 = c0, d8 = c0, d9 = c0, d10 = c0, d11 = c0;             \
    for (long k = 0, ko = 0; k < K; k++, ko += ak, b += ldb) {                  \
        __m512 bv = _mm512_loadu_ps(b), bw = _mm512_loadu_ps(b + pstride);      \
        R2_FMA(0); R2_FMA(1); R2_FMA(2); R2_FMA(3); R2_FMA(4); R2_FMA(5);       \
        R2_FMA(6); R2_FMA(7); R2_FMA(8); R2_FMA(9); R2_FMA(10); R2_FMA(11);     \
    }                                                                           \
    float acc[2 * MR * NR] __attribute__((aligned(64)));                        \
    __m512 c[2 * MR] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};      \
    __m512 d[2 * MR] = {d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11};      \
    epilogue512(c, acc, o);                                                     \
    epilogue512(d, acc, o + 2);
__attribute__((target("avx512f"))) static void rows_avx512_2p(const float *const *a, long ak, const float *b,
                                                              long ldb, long pstride, int K, const struct out *o)
{
#define AV(r) a[r][ko]
    R2_BODY
#undef AV
}

__attribute__((target("avx512f"))) static void rows_avx512_2p_t(const float *at, long ak, const float *b, long ldb,
                                                                long pstride, int K, const struct out *o)
{
#define AV(r) at[ko + (r)]
    R2_BODY
#undef AV
}
#undef R2_BODY
#undef R2_FMA

static int cpu_avx2(void);
static int cpu_avx512(void);

/* Where the tiles of rows [i0, i0 + mr) × column panel p go (o[0] its first MR
** rows, o[1] the next); with two, the next panel's as well (o[2], o[3]).
** Returns 1 when that next panel exists (N reaches past panel p). */
static int panel_outs(struct out *o, float *C, int ldc, int i0, int p, int mr, int N, float alpha, float beta,
                      int two)
{
    int nr = N - p * NR < NR ? N - p * NR : NR;
    o[0] = (struct out){C + (long)i0 * ldc + p * NR, ldc, mr < MR ? mr : MR, nr, alpha, beta};
    o[1] = (struct out){C + (long)(i0 + MR) * ldc + p * NR, ldc, mr - MR, nr, alpha, beta};
    if (!two || N - p * NR <= NR)
        return 0;
    o[2] = o[0], o[3] = o[1];
    o[2].C += NR, o[3].C += NR;
    o[2].nr = o[3].nr = N - (p + 1) * NR < NR ? N - (p + 1) * NR : NR;
    return 1;
}

/* The kernels lx_gemm_rows may take: 0 plain, 1 AVX2, 2 AVX-512 where at
** least MR + 1 rows are left (AVX2 for the last MR). */
static void rows_run(float *C, int ldc, const float *A, long ar, long ak, const float *B, long ldb, long pstride, int M,
                     int N, int K, float alpha, float beta, int isa)
{
    for (int i0 = 0; i0 < M;) {
        int wide = isa == 2 && M - i0 > MR, rows = wide ? 2 * MR : MR;
        const float *a[2 * MR];
        int mr = M - i0 < rows ? M - i0 : rows;
        for (int r = 0; r < rows; r++)
            a[r] = A + (long)(i0 + (r < mr ? r : 0)) * ar;
        for (int p = 0; p * NR < N; p++) {
            struct out o[4];
            if (panel_outs(o, C, ldc, i0, p, mr, N, alpha, beta, wide)) {     /* two panels */
                if (ar == 1 && mr == 2 * MR)    /* a transposed A's 2·MR adjacent values */
                    rows_avx512_2p_t(a[0], ak, B + p * pstride, ldb, pstride, K, o);
                else
                    rows_avx512_2p(a, ak, B + p * pstride, ldb, pstride, K, o);
                p++;
            } else if (wide)
                rows_avx512(a, ak, B + p * pstride, ldb, K, o);
            else if (isa)
                rows_avx2(a, ak, B + p * pstride, ldb, K, &o[0]);
            else
                rows_plain(a, ak, B + p * pstride, ldb, K, &o[0]);
        }
        i0 += rows;
    }
}

void lx_gemm_rows(float *C, int ldc, const float *A, int lda, const float *B, long ldb, long pstride, int M, int N,
                  int K, float alpha, float beta)
{
    rows_run(C, ldc, A, lda, 1, B, ldb, pstride, M, N, K, alpha, beta, cpu_avx512() ? 2 : cpu_avx2());
}

void lx_gemm_rows_t(float *C, int ldc, const float *At, int lda, const float *B, long ldb, long pstride, int M, int N,
                    int K, float alpha, float beta)
{
    rows_run(C, ldc, At, 1, lda, B, ldb, pstride, M, N, K, alpha, beta, cpu_avx512() ? 2 : cpu_avx2());
}

void lx_gemm_rows_plain(float *C, int ldc, const float *A, int lda, const float *B, long ldb, long pstride, int M,
                        int N, int K, float alpha, float beta)
{
    rows_run(C, ldc, A, lda, 1, B, ldb, pstride, M, N, K, alpha, beta, 0);
}

void lx_gemm_rows_avx2(float *C, int ldc, const float *A, int lda, const float *B, long ldb, long pstride, int M,
                       int N, int K, float alpha, float beta)
{
    rows_run(C, ldc, A, lda, 1, B, ldb, pstride, M, N, K, alpha, beta, cpu_avx2());
}

/* ---- bf16 products for the tiled attention (gemm.h) ------------------------ */

/* The two bf16 values at x as one 32-bit word, x[0] in the low half. */
static inline uint32_t word_at(const uint16_t *x)
{
    uint32_t w;
    memcpy(&w, x, sizeof w);
    return w;
}

/* Row r's pair p of A (ap halves past pair p − 1) as the 32-bit word the
** kernels broadcast; with K odd the last pair's upper half (a value past the
** row) is 0. */
static inline uint32_t pair_at(const uint16_t *row, int p, long ap, int K)
{
    uint32_t w = word_at(row + p * ap);
    return 2 * p + 1 < K ? w : w & 0xffffu;
}

/* One MR × NR tile over K values, plain C: the chains gemm.h defines. */
static void rows_bf16_plain(const uint16_t *const *a, long ap, const uint16_t *b, int K, const struct out *o)
{
    float acc[MR * NR] = {0};
    for (int p = 0; 2 * p < K; p++, b += 2 * NR)
        for (int r = 0; r < MR; r++) {
            uint32_t w = pair_at(a[r], p, ap, K);
            for (int c = 0; c < NR; c++) {
                uint32_t bw = b[2 * c] | (uint32_t)(2 * p + 1 < K ? b[2 * c + 1] : 0) << 16;
                acc[r * NR + c] = lx_gemm_bf16_step(acc[r * NR + c], w, bw);
            }
        }
    out_plain(o, acc);
}

/* Two MR × NR tiles at once on AVX512-BF16, over one column panel (b) or two
** (b and b + pstride: o[2], o[3] the second's tiles): one vdpbf16ps per row,
** pair and panel, rows of A from a[0 .. 2·MR) as rows_avx512; the last pair
** of an odd K with B's upper halves masked to 0 (A's are, by pair_at). */
#define RBF_DP(r, w)                                                            \
    do {                                                                        \
        __m512bh a_ = (__m512bh)_mm512_set1_epi32((int)(w));                    \
        c##r = _mm512_dpbf16_ps(c##r, a_, bv);                                  \
        if (two)                                                                \
            d##r = _mm512_dpbf16_ps(d##r, a_, bw);                              \
    } while (0)
#define RBF_ROWS(W)                                                             \
    RBF_DP(0, W(0)); RBF_DP(1, W(1)); RBF_DP(2, W(2)); RBF_DP(3, W(3)); RBF_DP(4, W(4)); RBF_DP(5, W(5)); \
    RBF_DP(6, W(6)); RBF_DP(7, W(7)); RBF_DP(8, W(8)); RBF_DP(9, W(9)); RBF_DP(10, W(10)); RBF_DP(11, W(11))
__attribute__((target("avx512f,avx512bf16"), always_inline)) static inline void
rows_bf16_512_body(const uint16_t *const *a, long ap, const uint16_t *b, long pstride, int K, const struct out *o,
                   int two)
{
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
    __m512 c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
    __m512 d0 = c0, d1 = c0, d2 = c0, d3 = c0, d4 = c0, d5 = c0;
    __m512 d6 = c0, d7 = c0, d8 = c0, d9 = c0, d10 = c0, d11 = c0;
    int p = 0;
    for (long po = 0; 2 * p + 1 < K; p++, po += ap, b += 2 * NR) {    /* whole pairs: each row's word broadcast */
        __m512bh bv = (__m512bh)_mm512_loadu_si512(b), bw = two ? (__m512bh)_mm512_loadu_si512(b + pstride) : bv;
#define W_FULL(r) word_at(a[r] + po)
        RBF_ROWS(W_FULL);
#undef W_FULL
    }
    if (2 * p < K) {        /* odd K: (a[K−1], 0)·(b[K−1], 0) */
        __m512i lo = _mm512_set1_epi32(0xffff);
        __m512bh bv = (__m512bh)_mm512_and_si512(_mm512_loadu_si512(b), lo);
        __m512bh bw = two ? (__m512bh)_mm512_and_si512(_mm512_loadu_si512(b + pstride), lo) : bv;
#define W_LAST(r) pair_at(a[r], p, ap, K)
        RBF_ROWS(W_LAST);
#undef W_LAST
    }
    float acc[2 * MR * NR] __attribute__((aligned(64)));
    __m512 c[2 * MR] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
    epilogue512(c, acc, o);
    if (two) {
        __m512 d[2 * MR] = {d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11};
        epilogue512(d, acc, o + 2);
    }
}

__attribute__((target("avx512f,avx512bf16"))) static void rows_bf16_512(const uint16_t *const *a, long ap,
                                                                       const uint16_t *b, int K, const struct out *o)
{
    rows_bf16_512_body(a, ap, b, 0, K, o, 0);
}

__attribute__((target("avx512f,avx512bf16"))) static void rows_bf16_512_2p(const uint16_t *const *a, long ap,
                                                                          const uint16_t *b, long pstride, int K,
                                                                          const struct out *o)
{
    rows_bf16_512_body(a, ap, b, pstride, K, o, 1);
}
#undef RBF_ROWS
#undef RBF_DP

int lx_gemm_bf16_native(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
}

/* As rows_run, on the bf16 kernels: 2·MR rows at a time on AVX512-BF16 (rows
** past M repeat row 0 and are dropped), MR on the plain one. */
static void rows_bf16_run(float *C, int ldc, const uint16_t *A, long lda, long ap, const uint16_t *B, long pstride,
                          int M, int N, int K, float alpha, float beta, int native)
{
    int rows = native ? 2 * MR : MR;
    for (int i0 = 0; i0 < M; i0 += rows) {
        const uint16_t *a[2 * MR];
        int mr = M - i0 < rows ? M - i0 : rows;
        for (int r = 0; r < rows; r++)
            a[r] = A + (long)(i0 + (r < mr ? r : 0)) * lda;
        for (int q = 0; q * NR < N; q++) {
            struct out o[4];
            if (panel_outs(o, C, ldc, i0, q, mr, N, alpha, beta, native)) {   /* two panels */
                rows_bf16_512_2p(a, ap, B + q * pstride, pstride, K, o);
                q++;
            } else if (native)
                rows_bf16_512(a, ap, B + q * pstride, K, o);
            else
                rows_bf16_plain(a, ap, B + q * pstride, K, &o[0]);
        }
    }
}

void lx_gemm_rows_bf16(float *C, int ldc, const uint16_t *A, long lda, long apair, const uint16_t *B, long pstride,
                       int M, int N, int K, float alpha, float beta)
{
    int emu = lx_gemm_amx_emulated();
    if ((emu || lx_gemm_amx_native()) &&
        lx_gemm_rows_bf16_amx(C, ldc, A, lda, apair, B, pstride, M, N, K, alpha, beta, emu) == 0)
        return;
    lx_gemm_rows_bf16_avx512(C, ldc, A, lda, apair, B, pstride, M, N, K, alpha, beta);
}

void lx_gemm_rows_bf16_avx512(float *C, int ldc, const uint16_t *A, long lda, long apair, const uint16_t *B,
                              long pstride, int M, int N, int K, float alpha, float beta)
{
    rows_bf16_run(C, ldc, A, lda, apair, B, pstride, M, N, K, alpha, beta, lx_gemm_bf16_native());
}

void lx_gemm_rows_bf16_plain(float *C, int ldc, const uint16_t *A, long lda, long apair, const uint16_t *B,
                             long pstride, int M, int N, int K, float alpha, float beta)
{
    rows_bf16_run(C, ldc, A, lda, apair, B, pstride, M, N, K, alpha, beta, 0);
}

void lx_gemm_bf16_pack_bt(uint16_t *P, const float *B, int ldb, int N, int K)
{
    LX_ASSERT(K % 2 == 0);
    uint16_t row[512];
    for (int q = 0; q * NR < N; q++, P += (size_t)K * NR)
        for (int c = 0; c < NR; c++)
            for (int k0 = 0; k0 < K; k0 += 512) {    /* a row's pairs are adjacent in B: convert, then place each word */
                int n = K - k0 < 512 ? K - k0 : 512;
                if (q * NR + c < N)
                    lx_f32_to_bf16_n(row, B + (long)(q * NR + c) * ldb + k0, (size_t)n);
                else
                    memset(row, 0, sizeof(uint16_t) * (size_t)n);
                for (int p = 0; 2 * p < n; p++)
                    memcpy(P + (size_t)(k0 / 2 + p) * 2 * NR + 2 * c, row + 2 * p, 2 * sizeof(uint16_t));
            }
}

void lx_gemm_bf16_pack_b(uint16_t *P, const float *B, int ldb, int K, int N)
{
    LX_ASSERT(N % NR == 0);
    long Kp = (K + NR - 1) / NR * NR;
    for (int q = 0; q * NR < N; q++)
        for (int k = 0; k < Kp; k += 2) {   /* rows k and k + 1 interleaved: pair k / 2 of the panel */
            uint16_t *d = P + q * Kp * NR + (long)k * NR;
            if (k >= K)
                memset(d, 0, sizeof(uint16_t) * 2 * NR);
            else
                lx_f32_to_bf16_pairs(d, B + (long)k * ldb + q * NR, k + 1 < K ? B + (long)(k + 1) * ldb + q * NR : NULL,
                                     NR);
        }
}

size_t lx_gemm_bt_floats(int N, int K)
{
    return (size_t)((N + NR - 1) / NR) * NR * (size_t)K;
}

void lx_gemm_pack_bt(float *P, const float *B, int ldb, int N, int K)
{
    struct gemm g = {.B = B, .ldb = ldb, .K = K, .tb = 1, .avx2 = cpu_avx2()};
    pack_b(P, &g, 0, N, 0, K);
}

static int cpu_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* AVX-512 F (with AVX2 and FMA, which the other kernels need). */
static int cpu_avx512(void)
{
    __builtin_cpu_init();
    return cpu_avx2() && __builtin_cpu_supports("avx512f");
}

void lx_gemm_portable(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int N, int K,
                      int trans_a, int trans_b, float alpha, float beta)
{
    struct gemm g = {C, A, B, ldc, lda, ldb, M, N, K, trans_a, trans_b, alpha, beta, cpu_avx2(), cpu_avx512()};
    run(&g);
}

void lx_gemm_portable_avx2(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int N, int K,
                           int trans_a, int trans_b, float alpha, float beta)
{
    struct gemm g = {C, A, B, ldc, lda, ldb, M, N, K, trans_a, trans_b, alpha, beta, cpu_avx2(), 0};
    run(&g);
}

void lx_gemm_portable_plain(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int N,
                            int K, int trans_a, int trans_b, float alpha, float beta)
{
    struct gemm g = {C, A, B, ldc, lda, ldb, M, N, K, trans_a, trans_b, alpha, beta, 0, 0};
    run(&g);
}
