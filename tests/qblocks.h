/*
** tests/qblocks.h - random blocks of a quantized GGUF type, for the tests
** and benches of the lanes and dots that read them (test_half.c, bench.c):
** every byte random, then the block's f16 scales (at the format's offsets,
** lx_dtype_scale_at; IQ1_M's spread over four nibbles) made finite: a random sign, exponent lo … lo + span − 1,
** any mantissa, so every bit pattern of the integers is met.
*/
#ifndef LX_TEST_QBLOCKS_H
#define LX_TEST_QBLOCKS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/lx.h"
#include "harness/core/rng.h"

static inline unsigned char *qblocks_random(int t, size_t n_blocks, int lo, int span, struct lx_rng *r)
{
    size_t nb = lx_dtype_block_bytes(t);
    unsigned char *b = lx_xmalloc(n_blocks * nb);
    for (size_t i = 0; i < n_blocks * nb; i++)
        b[i] = (unsigned char)(lx_rng_uniform(r) * 256);
    for (size_t k = 0; k < n_blocks; k++)
        for (int j = 0; j < 2; j++)
            if (lx_dtype_scale_at(t, j) >= 0 || (t == LX_DT_IQ1_M && j == 0)) {
                uint16_t h = (uint16_t)((lx_rng_uniform(r) < 0.5 ? 0x8000 : 0) |
                                        (lo + (int)(lx_rng_uniform(r) * span)) << 10 | (int)(lx_rng_uniform(r) * 1024));
                if (t == LX_DT_IQ1_M)   /* its d: nibble i of h is the top nibble of the 16-bit word i at 48 */
                    for (int i = 0; i < 4; i++)
                        b[k * nb + 49 + 2 * i] = (unsigned char)((b[k * nb + 49 + 2 * i] & 0x0f) | (h >> 4 * i & 15) << 4);
                else
                    memcpy(b + k * nb + (size_t)lx_dtype_scale_at(t, j), &h, 2);
            }
    return b;
}

/* Σ_k |x_k|·(|w_k| + c·|w0_k|): the magnitude the quantized dots' bounds scale (test_half.c, test_acts.c). */
static inline double qblocks_mag(const float *x, const float *w, const float *w0, long K, double c)
{
    double mag = 0.0;
    for (long k = 0; k < K; k++)
        mag += fabs((double)x[k]) * (fabs((double)w[k]) + c * fabs((double)w0[k]));
    return mag;
}

#endif
