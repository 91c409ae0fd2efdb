/*
** harness/engine/kernels/vexp.h - e^x for x <= 0 in sixteen AVX-512 lanes, for
** fast numerics' loops (the tiled attention's softmax, SwiGLU's sigmoid, the
** cross-entropy's sum).
** Include it in functions compiled with target("avx512f,avx512dq,fma").
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

#define LX_EXP512_LE0(e, p, keep, floor)                                        \
    do {                                                                        \
        keep = _mm512_cmp_ps_mask(e, _mm512_set1_ps(floor), _CMP_GT_OQ);       \
        __m512 n_ = _mm512_roundscale_ps(_mm512_mul_ps(e, _mm512_set1_ps(1.44269504088896341f)), \
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); \
        __m512 r_ = _mm512_fnmadd_ps(n_, _mm512_set1_ps(0.693359375f), e);     \
        r_ = _mm512_fmadd_ps(n_, _mm512_set1_ps(2.12194440e-4f), r_);           \
        __m512 q_ = _mm512_fmadd_ps(r_, _mm512_set1_ps(1.9875691500e-4f), _mm512_set1_ps(1.3981999507e-3f)); \
        q_ = _mm512_fmadd_ps(q_, r_, _mm512_set1_ps(8.3334519073e-3f));        \
        q_ = _mm512_fmadd_ps(q_, r_, _mm512_set1_ps(4.1665795894e-2f));        \
        q_ = _mm512_fmadd_ps(q_, r_, _mm512_set1_ps(1.6666665459e-1f));        \
        q_ = _mm512_fmadd_ps(q_, r_, _mm512_set1_ps(5.0000001201e-1f));        \
        q_ = _mm512_add_ps(_mm512_fmadd_ps(q_, _mm512_mul_ps(r_, r_), r_), _mm512_set1_ps(1.0f)); \
        p = _mm512_maskz_scalef_ps(keep, q_, n_);                               \
    } while (0)

#endif
