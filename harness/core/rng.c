/*
** harness/core/rng.c - Philox4x32-10 and the draws built on it.
** Constants from Salmon et al. 2011, §4.1 (multipliers) and the Weyl key bumps.
*/
#include "harness/core/rng.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void lx_philox4x32(uint32_t out[4], const uint32_t ctr[4], const uint32_t key[2])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

void lx_rng_init(struct lx_rng *r, uint64_t key, uint32_t stream, enum lx_rng_purpose purpose)
{
    r->key[0] = (uint32_t)key;
    r->key[1] = (uint32_t)(key >> 32);
    r->ctr[0] = 0;
    r->ctr[1] = 0;
    r->ctr[2] = stream;
    r->ctr[3] = (uint32_t)purpose;
    r->used = 4;
}

uint32_t lx_rng_u32(struct lx_rng *r)
{
    if (r->used == 4) {
        lx_philox4x32(r->buf, r->ctr, r->key);
        if (++r->ctr[0] == 0)
            r->ctr[1]++;
        r->used = 0;
    }
    return r->buf[r->used++];
}

double lx_rng_unit(uint32_t a, uint32_t b)
{
    uint64_t k = (uint64_t)(a >> 5) << 26 | b >> 6;     /* 27 + 26 bits */
    /* (k + 0.5) / 2^53, never 0. From k = 2^52 on, k + 0.5 rounds to an
    ** integer (ties to even), and for the last k to 2^53 itself: that one
    ** draw is 1 - 2^-53 instead of 1, every other keeps its bits. */
    double u = ((double)k + 0.5) * (1.0 / 9007199254740992.0);
    return u < 1.0 ? u : 1.0 - 1.0 / 9007199254740992.0;
}

double lx_rng_uniform(struct lx_rng *r)
{
    uint32_t a = lx_rng_u32(r);
    return lx_rng_unit(a, lx_rng_u32(r));
}

double lx_rng_normal(struct lx_rng *r)
{
    double u1 = lx_rng_uniform(r);
    double u2 = lx_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void lx_rng_normal2(struct lx_rng *r, double *z0, double *z1)
{
    double u1 = lx_rng_uniform(r);
    double u2 = lx_rng_uniform(r);
    double rad = sqrt(-2.0 * log(u1));
    *z0 = rad * cos(6.283185307179586 * u2);
    *z1 = rad * sin(6.283185307179586 * u2);
}
