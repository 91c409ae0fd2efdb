/*
** harness/engine/kernels/dnnl.h - the one seam to oneDNN (Debian's
** libdnnl-dev): bf16 × bf16 → fp32 matrix products for `numerics: bf16`
** (docs/numerics.md#half-precision). oneDNN picks its implementation for the CPU: AMX
** tiles where the CPU has them, AVX512-BF16's dot products where it has only
** those, a slower emulation on plain AVX-512; on a CPU without AVX-512 it has
** none, and the products are emulated here (lx_dnnl_emulate);
** lx_dnnl_describe names the one that runs.
*/
#ifndef LX_DNNL_H
#define LX_DNNL_H

#include <stddef.h>
#include <stdint.h>

/* C (M, N) = op(A) · op(B) + beta · C, fp32 C with row stride ldc, bf16
** A and B as lx_gemm (blas.h) takes them: A (M, K) with row stride lda, or
** (K, M) with trans_a; B (K, N) with row stride ldb, or (N, K) with trans_b
** (a weight matrix as stored, out × in). oneDNN reads the transposed layouts
** through their strides, with no copy. Each product of two bf16 values is
** exact, the sums in fp32 in oneDNN's order. beta 0 never reads C. Returns 0,
** or -1 when oneDNN refuses (the message in lx_dnnl_error). Call from one
** thread at a time. */
int lx_dnnl_gemm_bf16(float *C, long ldc, const uint16_t *A, long lda, int trans_a, const uint16_t *B, long ldb,
                      int trans_b, long M, long N, long K, float beta);

/* ---- weights packed once in oneDNN's layout ------------------------------------
** A weight W (N rows of K, used as B = Wᵀ) held in the blocked layout
** oneDNN's matmul picks for it (format_tag_any, asked for products of 512
** rows), so that a product does not copy W into that layout on every call
** (docs/numerics.md#packed-weights). The layout depends on the CPU (AMX tiles
** or AVX512-BF16 pairs) and on (N, K) only. */

/* Bytes of W packed (padding included), or 0 when oneDNN offers no packed
** layout for it here (no blocked layout, or only its reference loops) or
** packing does not pay here (lx_dnnl_pack_policy). */
size_t lx_dnnl_packed_bytes(long N, long K);
/* Rows of W a packed block is made of: lx_dnnl_pack_rows takes n0 a multiple. */
long lx_dnnl_pack_block(long N, long K);
/* Rows n0 .. n0 + n of W (row-major, n × K) into their place in Wp (zeroed
** before the first call: the padding stays 0); n a multiple of the block
** unless the rows end W. Returns 0 or -1 (lx_dnnl_error). */
int lx_dnnl_pack_rows(void *Wp, const uint16_t *rows, long n0, long n, long N, long K);
/* B (K × N) held with row stride ldb, or transposed (N rows of K) with
** trans_b, packed whole into Bp as the layout of (N, K): training packs its
** weights' bf16 copy this way after every update, W as Wᵀ for the forward and
** as W for the backward's dx = dy · W. */
int lx_dnnl_pack_b(void *Bp, const uint16_t *B, long ldb, int trans_b, long N, long K);
/* W (N × K, row-major) from its packed form. */
int lx_dnnl_unpack(uint16_t *W, const void *Wp, long N, long K);
/* Rows n0 .. n0 + n of a packed W (N × K) into rows (n rows of K, bf16), one
** reorder: the inverse of lx_dnnl_pack_rows, on the same conditions (n0 a
** multiple of lx_dnnl_pack_block, n too unless the rows end W). Returns 0 or
** -1 (lx_dnnl_error). */
int lx_dnnl_unpack_rows(uint16_t *rows, const void *Wp, long n0, long n, long N, long K);
/* Row r of a packed W (K values, widened exactly), read through the layout's blocking. */
void lx_dnnl_packed_row(float *out, const void *Wp, long r, long N, long K);
/* C (M, N) = A (M, K), row stride lda, · Wᵀ + beta · C, W packed. Where
** oneDNN would multiply this layout only with its reference loops (a CPU or
** a row count the layout was not asked for), W is unpacked for the call and
** the strided product runs instead: the same values, slower. */
int lx_dnnl_gemm_bf16_packed(float *C, long ldc, const uint16_t *A, long lda, const void *Wp, long M, long N, long K,
                             float beta);
/* Whether lx_dnnl_packed_bytes offers a layout: 1 wherever oneDNN has one, 0 never, -1 (the
** default) as LENX_PACK says (0 or 1), else wherever it has one and does not run on AMX. */
void lx_dnnl_pack_policy(int policy);
/* Tests: with on, every packed product takes the unpacking path. */
void lx_dnnl_refuse_packed(int on);
/* Tests: with on, every strided product runs as it does on a CPU for which oneDNN has no bf16
** matmul (an AVX2-only CPU: oneDNN 2.6 needs AVX-512): A and B widened exactly to fp32 and summed
** by sgemm (blas.h), the same arithmetic in OpenBLAS's order. Off: as the CPU decides. */
void lx_dnnl_emulate(int on);
/* Columns of B (rows of a weight) the emulation widens at a time: its fp32 scratch is A and one
** such block (lx_wprod_scratch_bytes counts it), never a whole weight matrix. */
#define LX_DNNL_EMU_BLOCK 1024
/* Bytes of fp32 scratch the emulation holds now (tests). */
size_t lx_dnnl_emulated_bytes(void);

/* The implementation oneDNN runs a bf16 product with ("brg:avx512_core_amx_bf16"),
** and the library's version, into out (size n). */
void lx_dnnl_describe(char *out, size_t n);
const char *lx_dnnl_error(void);

#endif
