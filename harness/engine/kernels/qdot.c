/*
** harness/engine/kernels/qdot.c - dot products of a few fp32 rows with one
** row of quantized weights, straight from its blocks (qdot.h).
**
** The general path of a decoding step (wprod.c, gemv_half) dequantizes a
** weight row into the thread's fp32 row, then runs the half-weight dots on
** it: every value is unpacked, scaled, stored and loaded again. Here the
** blocks are read once and nothing is stored:
**
** * Q4_K and Q5_K are sums over sub-blocks of 32 of (d·sc)·q − (dmin·m), so
**   x · w = Σ_sub (d·sc)·(Σ q·x) − (dmin·m)·(Σ x): the integers q widen to
**   fp32 and meet x in one multiply-add each, the sub-block's scale once per
**   32 values, and Σ x of each sub-block comes from lx_qdot_sums (once per
**   step, shared by every weight row). llama.cpp's own dot products split
**   these blocks the same way. The sum is not the dequantized weights'
**   (d·sc·q − dmin·m is rounded once per value there): each term's rounding
**   moves, within a bound of Σ|x|·(|d·sc·q| + |dmin·m|) and the sum's length
**   (tests/test_half_products.c derives it).
** * Every other type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q2_K,
**   Q3_K, Q6_K): each weight is the dequantized value exactly, made by the
**   same code as half.c's lanes (core/qlanes.h: lx_ql_w32, lx_ql_iq4xs_w32,
**   the K-quants' unpacking), and meets x in the two chains of the
**   half-weight dots (wprod.c, dots_n), so these dots are the general path's
**   bits; only the store and reload go. Built with -ffp-contract=off, so no
**   multiply and addition fuse.
**
** In every kind a row's sum runs in an order fixed by C alone, whatever n:
** a decoding step's one row is the same bits as that row among others.
*/
#include "harness/engine/kernels/qdot.h"

#include "harness/core/lx.h"
#include "harness/core/qlanes.h"

#define QDOT_TARGET "avx512f,avx512bw,avx512vl,f16c,fma"
#define QDOT __attribute__((target(QDOT_TARGET), always_inline)) static inline

int lx_qdot_has(int type)
{
    static int avx512 = -1;
    if (avx512 < 0)
        avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&   /* F16C: every AVX-512 */
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");          /* CPU (clang cannot ask) */
    return avx512 && type >= LX_DT_Q8_0 && type < LX_DT_LANES_N;
}

int lx_qdot_needs_sums(int type)
{
    return type == LX_DT_Q4_K || type == LX_DT_Q5_K;
}

void lx_qdot_sums(float *s, const float *x, long ldx, long T, long C)
{
    for (long t = 0; t < T; t++)
        for (long j = 0; j < C / 32; j++) {
            float a = 0.0f;
            for (int l = 0; l < 32; l++)
                a += x[t * ldx + 32 * j + l];
            s[t * (C / 32) + j] = a;
        }
}

/* Q4_K / Q5_K: per pair of sub-blocks (is, is + 1), the values
** k + 32·is + h + l (low nibbles) and k + 32·is + 32 + h + l (high), h in
** {0, 16}, l < 16; their Σ q·x in two chains per row, then scaled into the
** row's chain. The mins' terms, dmin·m_j · Σx_j for a super-block's 8
** sub-blocks, go to an 8-lane chain per row, taken off at the end. */
QDOT void q45_n(float *out, const float *x, long ldx, const int n, const unsigned char *b, long C, const float *xs,
                int five)
{
    __m512 acc[LX_QDOT_ROWS];
    __m256 mins[LX_QDOT_ROWS];
#pragma GCC unroll 8
    for (int t = 0; t < n; t++)
        acc[t] = _mm512_setzero_ps(), mins[t] = _mm256_setzero_ps();
    for (long k = 0; k < C; k += 256, b += five ? 176 : 144) {
        const unsigned char *sc = b + 4, *qh = b + 16, *q = b + (five ? 48 : 16);
        __m256 dsc, nm;
        lx_ql_k_scales(sc, lx_ql_f16(b), lx_ql_f16(b + 2), &dsc, &nm);
        float ds[8];
        _mm256_storeu_ps(ds, dsc);
#pragma GCC unroll 8
        for (int t = 0; t < n; t++)
            mins[t] = _mm256_fmadd_ps(nm, _mm256_loadu_ps(xs + t * (C / 32) + k / 32), mins[t]);
        for (int is = 0; is < 8; is += 2, q += 32) {
            __m512 lo_sum[LX_QDOT_ROWS], hi_sum[LX_QDOT_ROWS];
#pragma GCC unroll 8
            for (int t = 0; t < n; t++)
                lo_sum[t] = hi_sum[t] = _mm512_setzero_ps();
#pragma GCC unroll 2
            for (int h = 0; h < 32; h += 16) {
                __m128i lo, hi;
                lx_ql_q45(q + h, qh + h, is, five, &lo, &hi);
                const __m512 ql = lx_ql_u8_ps(lo), qv = lx_ql_u8_ps(hi);
                const float *xv = x + k + 32 * is + h;
#pragma GCC unroll 8
                for (int t = 0; t < n; t++) {
                    lo_sum[t] = _mm512_fmadd_ps(_mm512_loadu_ps(xv + t * ldx), ql, lo_sum[t]);
                    hi_sum[t] = _mm512_fmadd_ps(_mm512_loadu_ps(xv + t * ldx + 32), qv, hi_sum[t]);
                }
            }
#pragma GCC unroll 8
            for (int t = 0; t < n; t++) {
                acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(ds[is]), lo_sum[t], acc[t]);
                acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(ds[is + 1]), hi_sum[t], acc[t]);
            }
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < n; t++) {
        const __m256 mn = mins[t];
        __m128 m4 = _mm_add_ps(_mm256_castps256_ps128(mn), _mm256_extractf128_ps(mn, 1));
        m4 = _mm_add_ps(m4, _mm_movehl_ps(m4, m4));
        out[t] = _mm512_reduce_add_ps(acc[t]) - _mm_cvtss_f32(_mm_add_ss(m4, _mm_movehdup_ps(m4)));
    }
}

/* The two chains of the half-weight dots (values ≡ 0–15 and 16–31 mod 32), fed dequantized weights. */
QDOT void chains_fma(__m512 *a, const float *x, long ldx, const int n, __m512 w, long c)
{
#pragma GCC unroll 8
    for (int t = 0; t < n; t++)
        a[t] = _mm512_fmadd_ps(_mm512_loadu_ps(x + t * ldx + c), w, a[t]);
}

QDOT void chains_out(float *out, const int n, const __m512 *a0, const __m512 *a1)
{
#pragma GCC unroll 8
    for (int t = 0; t < n; t++)
        out[t] = _mm512_reduce_add_ps(_mm512_add_ps(a0[t], a1[t]));
}

/* The types of 32-value blocks (lx_ql_w32; kind a constant in each instance): values 0-15 of each block
** on the first chain, 16-31 on the second. */
QDOT void q32_n(float *out, const float *x, long ldx, const int n, const unsigned char *b, long C, const int kind)
{
    const size_t bytes = lx_ql_w32_bytes(kind);
    __m512 a0[LX_QDOT_ROWS], a1[LX_QDOT_ROWS];
#pragma GCC unroll 8
    for (int i = 0; i < n; i++)
        a0[i] = a1[i] = _mm512_setzero_ps();
    for (long c = 0; c < C; c += 32, b += bytes) {
        __m512 w[2];
        lx_ql_w32(b, kind, w);
        chains_fma(a0, x, ldx, n, w[0], c);
        chains_fma(a1, x, ldx, n, w[1], c + 16);
    }
    chains_out(out, n, a0, a1);
}

/* IQ4_XS (lx_ql_iq4xs_w32): each sub-block of 32 as a block above. */
QDOT void iq4xs_n(float *out, const float *x, long ldx, const int n, const unsigned char *b, long C)
{
    __m512 a0[LX_QDOT_ROWS], a1[LX_QDOT_ROWS];
#pragma GCC unroll 8
    for (int i = 0; i < n; i++)
        a0[i] = a1[i] = _mm512_setzero_ps();
    for (long k = 0; k < C; k += 256, b += 136)
        for (int j = 0; j < 8; j++) {
            __m512 w[2];
            lx_ql_iq4xs_w32(b, j, w);
            chains_fma(a0, x, ldx, n, w[0], k + 32 * j);
            chains_fma(a1, x, ldx, n, w[1], k + 32 * j + 16);
        }
    chains_out(out, n, a0, a1);
}

/* Q6_K (half.c's q6_k_avx512): value 32j + 16g + l of each half of 128 is
** (d·sc[g + 2j])·(q − 32), q from the bytes ql[32(j & 1) + 16g + l] (low
** nibble for j < 2, high after) and bits 2j, 2j + 1 of qh[16g + l]; its chain
** is g's, each chain's values in rising order. */
QDOT void q6_group(__m512 *a, const float *x, long ldx, const int n, const unsigned char *ql, const unsigned char *qh,
                   const float *dsc, long c)
{
    const __m128i lo = _mm_loadu_si128((const __m128i *)ql), hi = _mm_loadu_si128((const __m128i *)(ql + 32)),
                  h = _mm_loadu_si128((const __m128i *)qh);
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        chains_fma(a, x, ldx, n,
                   _mm512_mul_ps(lx_ql_i8_ps(lx_ql_q6(lo, hi, h, j)), _mm512_set1_ps(dsc[2 * j])), c + 32 * j);
}

QDOT void q6_n(float *out, const float *x, long ldx, const int n, const unsigned char *b, long C)
{
    __m512 a0[LX_QDOT_ROWS], a1[LX_QDOT_ROWS];
#pragma GCC unroll 8
    for (int t = 0; t < n; t++)
        a0[t] = a1[t] = _mm512_setzero_ps();
    for (long k = 0; k < C; k += 256, b += 210) {
        float dsc[16];
        lx_ql_q6_scales(b, dsc);
        for (int half = 0; half < 2; half++) {
            q6_group(a0, x, ldx, n, b + 64 * half, b + 128 + 32 * half, dsc + 8 * half, k + 128 * half);
            q6_group(a1, x, ldx, n, b + 64 * half + 16, b + 128 + 32 * half + 16, dsc + 8 * half + 1,
                     k + 128 * half + 16);
        }
    }
    chains_out(out, n, a0, a1);
}

/* Q2_K / Q3_K (half.c's q_k_2_3_avx512): values 128h + 32s + 16g + l take
** sub-block 8h + 2s + g's d·scale (Q2_K: times q, less its dmin·min), the
** weight as the row would hold it, on chain g: each chain's values in rising
** order. */
QDOT void q23_n(float *out, const float *x, long ldx, const int n, const unsigned char *b, long C, int three)
{
    __m512 a0[LX_QDOT_ROWS], a1[LX_QDOT_ROWS];
#pragma GCC unroll 8
    for (int t = 0; t < n; t++)
        a0[t] = a1[t] = _mm512_setzero_ps();
    for (long k = 0; k < C; k += 256, b += three ? 110 : 84) {
        const unsigned char *q = b + (three ? 32 : 16);
        float ds[16], ms[16];
        lx_ql_k23_scales(b, three, ds, ms);
        const __m128i hm[2] = {_mm_loadu_si128((const __m128i *)b), _mm_loadu_si128((const __m128i *)(b + 16))};
        for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
            for (int s = 0; s < 4; s++)
#pragma GCC unroll 2
                for (int g = 0; g < 2; g++) {
                    const int j = 8 * h + 2 * s + g;
                    const __m128i v = lx_ql_q23(q, hm, h, s, g, three);
                    const __m512 w = three ? _mm512_mul_ps(lx_ql_i8_ps(v), _mm512_set1_ps(ds[j]))
                                           : _mm512_sub_ps(_mm512_mul_ps(lx_ql_u8_ps(v), _mm512_set1_ps(ds[j])),
                                                           _mm512_set1_ps(ms[j]));
                    chains_fma(g ? a1 : a0, x, ldx, n, w, k + 128 * h + 32 * s + 16 * g);
                }
    }
    chains_out(out, n, a0, a1);
}

QDOT void qdot_n(float *out, const float *x, long ldx, const int n, const void *w, int type, long C, const float *xs)
{
    switch (type) {
    case LX_DT_Q4_K: q45_n(out, x, ldx, n, w, C, xs, 0); break;
    case LX_DT_Q5_K: q45_n(out, x, ldx, n, w, C, xs, 1); break;
    case LX_DT_Q6_K: q6_n(out, x, ldx, n, w, C); break;
    case LX_DT_Q2_K: q23_n(out, x, ldx, n, w, C, 0); break;
    case LX_DT_Q3_K: q23_n(out, x, ldx, n, w, C, 1); break;
    case LX_DT_Q8_0: q32_n(out, x, ldx, n, w, C, LX_QL_Q8_0); break;
    case LX_DT_Q4_0: q32_n(out, x, ldx, n, w, C, LX_QL_Q4_0); break;
    case LX_DT_IQ4_NL: q32_n(out, x, ldx, n, w, C, LX_QL_IQ4_NL); break;
    case LX_DT_Q4_1: q32_n(out, x, ldx, n, w, C, LX_QL_Q4_1); break;
    case LX_DT_Q5_0: q32_n(out, x, ldx, n, w, C, LX_QL_Q5_0); break;
    case LX_DT_Q5_1: q32_n(out, x, ldx, n, w, C, LX_QL_Q5_1); break;
    case LX_DT_IQ4_XS: default: iq4xs_n(out, x, ldx, n, w, C); break;
    }
}

__attribute__((target(QDOT_TARGET)))
void lx_qdot(float *out, const float *x, long ldx, int n, const void *w, int type, long C, const float *xs)
{
    LX_ASSERT(lx_qdot_has(type) && n >= 1 && n <= LX_QDOT_ROWS && C % (long)lx_dtype_block(type) == 0);
    switch (n) {    /* n a constant in each: the sums stay in registers */
    case 1: qdot_n(out, x, ldx, 1, w, type, C, xs); break;
    case 2: qdot_n(out, x, ldx, 2, w, type, C, xs); break;
    case 3: qdot_n(out, x, ldx, 3, w, type, C, xs); break;
    case 4: qdot_n(out, x, ldx, 4, w, type, C, xs); break;
    default:
        for (int t = 0; t < n; t += 4)
            lx_qdot(out + t, x + t * ldx, ldx, n - t < 4 ? n - t : 4, w, type, C, xs ? xs + t * (C / 32) : NULL);
        break;
    }
}
