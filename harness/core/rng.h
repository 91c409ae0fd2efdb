/*
** harness/core/rng.h - the counter-based generator behind every random draw.
**
** Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
** SC 2011). A draw is a pure function of (key, counter): no hidden stream, so a
** number does not depend on which thread made it or in which order cells ran.
** Keys come from lx_hash64 of what the draw is for (task, length, seed);
** counters say which draw it is (sample, block, purpose).
*/
#ifndef LX_RNG_H
#define LX_RNG_H

#include <stdint.h>

/* One Philox4x32-10 block: out = bijection_key(ctr). */
void lx_philox4x32(uint32_t out[4], const uint32_t ctr[4], const uint32_t key[2]);

/* Purposes keep independent uses of the same key apart (counter word 3). */
enum lx_rng_purpose {
    LX_RNG_LOGITS = 1,      /* gaussian task: base logits */
    LX_RNG_DATA = 2,        /* data order, sampling of windows */
    LX_RNG_MASK = 3,        /* masked-LM positions */
    LX_RNG_INIT = 4,        /* weight initialisation */
    LX_RNG_SAMPLE = 5,      /* sampled decoding: one draw per generated token */
    LX_RNG_POSITIONS = 6,   /* randomized positions at evaluation (randpos) */
};

/* A cursor over one (key, stream, purpose): successive blocks of 4 words. */
struct lx_rng {
    uint32_t key[2];        /* from the 64-bit key */
    uint32_t ctr[4];        /* ctr[0..1] = block index, ctr[2] = stream, ctr[3] = purpose */
    uint32_t buf[4];        /* current block */
    int used;               /* words of buf already handed out (4 = refill) */
};

void lx_rng_init(struct lx_rng *r, uint64_t key, uint32_t stream, enum lx_rng_purpose purpose);
uint32_t lx_rng_u32(struct lx_rng *r);
double lx_rng_uniform(struct lx_rng *r);   /* in (0, 1), 53 random bits */
/* The uniform made of two words a, b (a's top 27 bits, then b's top 26), as lx_rng_uniform draws them. */
double lx_rng_unit(uint32_t a, uint32_t b);
double lx_rng_normal(struct lx_rng *r);    /* N(0, 1), Box-Muller; uses two uniforms */
/* Two independent N(0, 1) draws from the same two uniforms (both Box-Muller
** outputs): half the cost per draw when many are needed. */
void lx_rng_normal2(struct lx_rng *r, double *z0, double *z1);

#endif
