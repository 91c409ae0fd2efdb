/*
** harness/engine/kernels/stepdot.h - a decoding step's two products with one
** key/value head's cached rows, in fast numerics (decode.c's
** lx_attn_rows_forward): the scores of M query rows against keys [j0, j1) and
** the probabilities' sum of values over them, each cached row read once for
** the M rows. Rows are of type LX_DT_F32, or a half cache's LX_DT_F16 or
** LX_DT_BF16 read as stored (each widened exactly as it is read), ld elements
** apart; D at most LX_STEP_MAX_D. Sixteen AVX-512 lanes where the CPU has them
** and D is a multiple of 16, eight AVX2 lanes where D is a multiple of 8 (D at
** most 256 for either), else
** the reference, a row widened at a time; the sums' order differs between the
** three (fast numerics). Includes core only.
*/
#ifndef LX_STEPDOT_H
#define LX_STEPDOT_H

#define LX_STEP_MAX_D 1024

/* s[m·lds + j] = c · q_m · k_j for m < M (q: M rows of D) and j in [j0, j1). */
void lx_step_scores(float *s, long lds, const float *q, int M, const void *k, int type, int ld, long j0, long j1,
                    int D, float c);
/* o_m += Σ_j p[m·lds + j] · v_j over [j0, j1), m < M (o: M rows of D). */
void lx_step_values(float *o, const float *p, long lds, int M, const void *v, int type, int ld, long j0, long j1,
                    int D);
/* The lanes the two products run for D: 16, 8 or 0 (the reference). */
int lx_step_width(int D);
/* Tests and benches: at most that many lanes (0 the reference, 8 AVX2); -1 the CPU's choice. */
void lx_step_lanes(int lanes);

#endif
