/*
** harness/engine/kernels/gemm.h - lenx's own fixed-order sgemm, the matrix
** product of portable numerics (numerics.h; docs/numerics.md).
**
** Every element C[i][j] is one chain of fused multiply-adds over k = 0, 1,
** …, K − 1, started at 0 and rounded once per step (fmaf), then
** alpha·sum + beta·C[i][j] (a multiply and an add, each rounded). The chain
** depends on K alone: not on M, N, which rows or columns the call covers,
** the blocking, the thread count, or the CPU (the AVX2 + FMA kernel and the
** plain C one give the same bits). So a row block or a column block of a
** product is the same bits as the same rows or columns of the whole.
*/
#ifndef LX_GEMM_H
#define LX_GEMM_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/core/half.h"

/* C (M, N) = alpha · op(A) · op(B) + beta · C, row-major with row strides
** lda, ldb, ldc, as lx_gemm (blas.h); beta 0 never reads C. */
void lx_gemm_portable(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int N, int K,
                      int trans_a, int trans_b, float alpha, float beta);

/* The same with the plain C kernel only (the fallback on a CPU without
** AVX2 + FMA; tests compare the two bit for bit). */
void lx_gemm_portable_plain(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int N,
                            int K, int trans_a, int trans_b, float alpha, float beta);
/* The same on the AVX2 kernel only, never the AVX-512 one that lx_gemm_portable
** takes where the CPU has it (two row panels at a time): the same bits, the
** benchmark's baseline. */
void lx_gemm_portable_avx2(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int N, int K,
                           int trans_a, int trans_b, float alpha, float beta);

/* ---- products for the tiled attention ---------------------------------------
** C (M, N) = alpha · A · B + beta · C with the same chains as lx_gemm_portable,
** so the same bits, but nothing packed per call: A row-major (M × K, row
** stride lda) is read in place, and B is given as column panels of
** LX_GEMM_NR columns, panel p's row k (LX_GEMM_NR floats) at B + p·pstride +
** k·ldb. A row-major B is its own panels (pstride LX_GEMM_NR, ldb its row
** stride) when N is a multiple of LX_GEMM_NR; lx_gemm_pack_bt packs Bᵀ's. The
** last panel is read whole (LX_GEMM_NR columns; those past N are dropped).
** One thread (the caller's): these are the tiles of an OpenMP loop. */
#define LX_GEMM_NR 16

void lx_gemm_rows(float *C, int ldc, const float *A, int lda, const float *B, long ldb, long pstride, int M, int N,
                  int K, float alpha, float beta);
/* The same with A given transposed: At row-major (K × M, row stride lda),
** A[i][k] = At[k·lda + i] (the same chains, so the same bits as lx_gemm_rows
** on the transpose written out). */
void lx_gemm_rows_t(float *C, int ldc, const float *At, int lda, const float *B, long ldb, long pstride, int M, int N,
                    int K, float alpha, float beta);
/* The same with the plain C kernel only (tests compare the two bit for bit). */
void lx_gemm_rows_plain(float *C, int ldc, const float *A, int lda, const float *B, long ldb, long pstride, int M,
                        int N, int K, float alpha, float beta);
/* The same with the AVX2 kernel only (never the AVX-512 one): the same bits,
** the benchmark's baseline for the wider kernel. */
void lx_gemm_rows_avx2(float *C, int ldc, const float *A, int lda, const float *B, long ldb, long pstride, int M,
                       int N, int K, float alpha, float beta);

/* Floats of lx_gemm_pack_bt's panels for N columns of K values. */
size_t lx_gemm_bt_floats(int N, int K);
/* The panels of op(B) = Bᵀ (K × N) from B (N × K, row stride ldb): panel p
** (K × LX_GEMM_NR, pstride K·LX_GEMM_NR, ldb LX_GEMM_NR) holds
** p[k·LX_GEMM_NR + c] = B[(LX_GEMM_NR·p + c)·ldb + k], zeros past column N. */
void lx_gemm_pack_bt(float *P, const float *B, int ldb, int N, int K);

/* ---- bf16 products for the tiled attention (numerics bf16) ------------------
** C (M, N) = alpha · A · B + beta · C with bf16 operands and fp32 sums, the
** arithmetic of AVX512-BF16's dot product of pairs (vdpbf16ps): each element
** is one chain over the pairs k = (2p, 2p + 1), p = 0, 1, …, taking
** sum += a[2p+1]·b[2p+1], then sum += a[2p]·b[2p], each step one fused
** multiply-add rounded to nearest (a product of two bf16 values is exact in
** fp32), bf16 subnormal inputs read as 0 and subnormal sums flushed to 0;
** with K odd the last pair is (a[K−1], 0)·(b[K−1], 0). Then alpha·sum +
** beta·C as lx_gemm_rows.
**
** A is bf16, read in place: row r's pair p is one 32-bit word at A + r·lda +
** p·apair (in bf16 values; with K odd its upper half is read and ignored).
** Row-major A (M × K, row stride lda, even) has apair 2; the transpose of a
** row-major X (K × M) in pairs, word (r, p) = (X[2p][r], X[2p + 1][r]) as
** lx_f32_to_bf16_pairs writes rows 2p and 2p + 1 of X, has lda 2 and apair
** twice the words between pairs. B is given in column panels of LX_GEMM_NR
** columns, pairs interleaved: panel q's pair p is LX_GEMM_NR words at B +
** q·pstride + 2·NR·p, word c holding (b[2p][c], b[2p+1][c]) low half first.
** The two packers below write them: the keys of Q·Kᵀ from K's rows, the
** values of P·V from V's rows. One thread (the caller's).
** lx_gemm_rows_bf16 runs the AVX512-BF16 kernel where the CPU has it and the
** plain C one elsewhere; the plain one is the reference the tests compare it
** with bit for bit. */
void lx_gemm_rows_bf16(float *C, int ldc, const uint16_t *A, long lda, long apair, const uint16_t *B, long pstride,
                       int M, int N, int K, float alpha, float beta);
void lx_gemm_rows_bf16_plain(float *C, int ldc, const uint16_t *A, long lda, long apair, const uint16_t *B,
                             long pstride, int M, int N, int K, float alpha, float beta);
/* One step of those chains: sum + a1·b1, then + a0·b0, for the pairs a =
** (a0, a1) and b = (b0, b1) as 32-bit words, low half first (the plain
** kernel's arithmetic, and the emulated AMX tiles', amx.c; inline here so
** that neither object needs the other's). A bf16 subnormal reads as 0 of
** its sign, as vdpbf16ps reads it; a subnormal sum is flushed to 0. */
static inline float lx_gemm_bf16_daz(uint16_t h)
{
    return h & 0x7f80u ? lx_bf16_to_f32(h) : lx_bf16_to_f32(h & 0x8000u);
}

static inline float lx_gemm_bf16_ftz(float s)
{
    return fpclassify(s) == FP_SUBNORMAL ? copysignf(0.0f, s) : s;
}

static inline float lx_gemm_bf16_step(float sum, uint32_t a, uint32_t b)
{
    float s = lx_gemm_bf16_ftz(
        fmaf(lx_gemm_bf16_daz((uint16_t)(a >> 16)), lx_gemm_bf16_daz((uint16_t)(b >> 16)), sum));
    return lx_gemm_bf16_ftz(fmaf(lx_gemm_bf16_daz((uint16_t)a), lx_gemm_bf16_daz((uint16_t)b), s));
}
/* 1: the CPU has AVX512-BF16 (lx_gemm_rows_bf16 runs its kernel). */
int lx_gemm_bf16_native(void);
/* The same on the AVX512-BF16 kernel only, never AMX's (the plain one on a
** CPU without AVX512-BF16): the benchmark's baseline for the tiles. */
void lx_gemm_rows_bf16_avx512(float *C, int ldc, const uint16_t *A, long lda, long apair, const uint16_t *B,
                              long pstride, int M, int N, int K, float alpha, float beta);

/* ---- the same on AMX (amx.c) ------------------------------------------------
** Where the CPU has AMX-BF16 and Linux grants the process its tile state,
** lx_gemm_rows_bf16 runs on AMX's tile registers: the same chains over the
** pairs, in 32 × 32 blocks of C, the rounding inside each step the
** hardware's own (docs/numerics.md). lx_gemm_rows_bf16_amx runs it, or with
** emulate on emulated tiles on any CPU: the instructions' definitions, each
** step rounded as lx_gemm_rows_bf16_plain, so the same bits as the plain
** kernel (what the tests check everywhere). It returns 0, or −1 (nothing
** written) when AMX is not there or its buffers cannot be had. */
int lx_gemm_rows_bf16_amx(float *C, int ldc, const uint16_t *A, long lda, long apair, const uint16_t *B,
                          long pstride, int M, int N, int K, float alpha, float beta, int emulate);
/* 1: lx_gemm_rows_bf16 runs on AMX (the CPU has it, Linux grants it, and it
** is not turned off by LENX_AMX=0 in the environment or by the call below). */
int lx_gemm_amx_native(void);
/* What lx_gemm_amx_native says, in words: "on", or why not ("not on this
** CPU", "not granted by the OS", "off (LENX_AMX=0)", "off: failed its
** self-check" — on first use the hardware's products of small integers, exact
** in any order, must give the emulation's bits, else AMX stays off with a
** warning on stderr). */
const char *lx_gemm_amx_status(void);
/* Turn AMX off (1) or on again (0) for lx_gemm_rows_bf16, process-wide: the
** benchmark's comparison. */
void lx_gemm_amx_disable(int off);
/* Tests: with on, lx_gemm_rows_bf16 runs AMX's path on emulated tiles on any
** CPU (the plain kernel's bits, slowly), so whole tiled passes can be checked
** through it; lx_gemm_amx_emulated says whether it does. */
void lx_gemm_amx_emulate(int on);
int lx_gemm_amx_emulated(void);

/* bf16 values of the panels of op(B) = Bᵀ (K × N, K even) from the N rows of
** B (row stride ldb, K floats each, rounded to bf16): lx_gemm_bt_floats(N, K)
** values, panel q at P + q·K·LX_GEMM_NR, zeros past row N. */
void lx_gemm_bf16_pack_bt(uint16_t *P, const float *B, int ldb, int N, int K);
/* bf16 values of the panels of B (K × N, N a multiple of LX_GEMM_NR; row
** stride ldb, rounded) with K rounded up to whole panels: pstride
** lx_gemm_bt_floats(K, LX_GEMM_NR), lx_gemm_bt_floats(K, N) values, zeros
** past row K. */
void lx_gemm_bf16_pack_b(uint16_t *P, const float *B, int ldb, int K, int N);

#endif
