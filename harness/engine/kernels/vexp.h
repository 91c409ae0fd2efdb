/*
** harness/engine/kernels/vexp.h - e^x for x <= 0 in sixteen AVX-512 lanes, for
** fast numerics' loops (the tiled attention's softmax, SwiGLU's sigmoid, the
** cross-entropy's sum), and in eight AVX2 + FMA lanes for the softmax on a
** CPU without AVX-512.
** Include it in functions compiled with target("avx512f,avx512dq,fma")
** (LX_EXP256_LE0: target("avx2,fma")).
**
** x = n·ln 2 + r, |r| <= ln 2 / 2, with n rounded by vrndscaleps and ln 2
** split in two (Cody-Waite); Cephes' degree-6 polynomial for e^r (relative
** error about 2e-7); 2^n·q by vscalefps (exact, gradual underflow, so no
** clamp). Lanes not above `floor` are 0 (a zero-mask); keep names them. The
** steps are fused multiply-adds, one rounding each, so the last bits differ
** from the scalar and eight-lane versions of the same polynomial.
*/
#ifndef LX_VEXP_H
#define LX_VEXP_H

#include <immintrin.h>

/* q = e^r by the polynomial, r = e − n·ln 2 in two steps, in W-bit lanes (512 or 256: the
** intrinsics' prefix _mmW_): fused multiply-adds, one rounding each. */
#define LX_EXPV_POLY(W, e, n, q)                                                \
    do {                                                                        \
        __m##W r_ = _mm##W##_fnmadd_ps(n, _mm##W##_set1_ps(0.693359375f), e);   \
        r_ = _mm##W##_fmadd_ps(n, _mm##W##_set1_ps(2.12194440e-4f), r_);        \
        q = _mm##W##_fmadd_ps(r_, _mm##W##_set1_ps(1.9875691500e-4f), _mm##W##_set1_ps(1.3981999507e-3f)); \
        q = _mm##W##_fmadd_ps(q, r_, _mm##W##_set1_ps(8.3334519073e-3f));       \
        q = _mm##W##_fmadd_ps(q, r_, _mm##W##_set1_ps(4.1665795894e-2f));       \
        q = _mm##W##_fmadd_ps(q, r_, _mm##W##_set1_ps(1.6666665459e-1f));       \
        q = _mm##W##_fmadd_ps(q, r_, _mm##W##_set1_ps(5.0000001201e-1f));       \
        q = _mm##W##_add_ps(_mm##W##_fmadd_ps(q, _mm##W##_mul_ps(r_, r_), r_), _mm##W##_set1_ps(1.0f)); \
    } while (0)

#define LX_EXP512_LE0(e, p, keep, floor)                                        \
    do {                                                                        \
        keep = _mm512_cmp_ps_mask(e, _mm512_set1_ps(floor), _CMP_GT_OQ);       \
        __m512 n_ = _mm512_roundscale_ps(_mm512_mul_ps(e, _mm512_set1_ps(1.44269504088896341f)), \
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); \
        __m512 q_;                                                              \
        LX_EXPV_POLY(512, e, n_, q_);                                           \
        p = _mm512_maskz_scalef_ps(keep, q_, n_);                               \
    } while (0)

/* The same steps in eight lanes: n by vroundps, 2^n built in the exponent
** bits (n >= -101 where e > floor >= -70, so a normal number; no clamp),
** lanes not above floor (−∞ and NaN too) 0, as the sixteen-lane loop's. */
#define LX_EXP256_LE0(e, p, floor)                                              \
    do {                                                                        \
        __m256 keep_ = _mm256_cmp_ps(e, _mm256_set1_ps(floor), _CMP_GT_OQ);     \
        __m256 n_ = _mm256_round_ps(_mm256_mul_ps(e, _mm256_set1_ps(1.44269504088896341f)), \
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); \
        __m256 q_;                                                              \
        LX_EXPV_POLY(256, e, n_, q_);                                           \
        __m256i two_n_ = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n_), _mm256_set1_epi32(127)), 23); \
        p = _mm256_and_ps(_mm256_mul_ps(q_, _mm256_castsi256_ps(two_n_)), keep_); \
    } while (0)

#endif
