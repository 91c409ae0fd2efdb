/*
** harness/engine/model/positions.h - the position ids a pass can take in
** place of 0 … T−1: PoSE's skip-wise chunks (methods/pose.c) and randomized
** positions (methods/randpos.c), drawn in training by the trainer and, for
** randomized positions, at evaluation by the forward pass and the KV cache.
** Includes core only, so the trainer, the model and the cache share it.
*/
#ifndef LX_POSITIONS_H
#define LX_POSITIONS_H

#include "harness/core/spec.h"

struct lx_rng;

/* Training position ids for one window of T tokens; draws continue r.
** PoSE (methods/pose.c): N chunks cut at uniform points, chunk i shifted by
** a skip u_i drawn uniformly from {u_{i−1} … L_t − T}, u_0 = 0. Randomized
** (methods/randpos.c): T distinct ids drawn uniformly from [0, L) (every
** T-subset equally likely: Floyd's sampling), in increasing order. */
void lx_pose_positions(int *pos, int T, const struct lx_pose *p, struct lx_rng *r);

/* Randomized positions at evaluation: a pass of T <= L tokens under randpos
** takes the sorted draw of T ids from [0, L) keyed on (T, L) alone, so every
** pass of T tokens (a window, a teacher-forced answer, a full pass per
** token) and the decode steps after it (the cache draws for its own T)
** read the same positions. */
void lx_randpos_eval(int *pos, long T, long L);

#endif
