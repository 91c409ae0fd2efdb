/*
** harness/engine/attention.h - the naive (materialised) attention path that
** reads the attention spec (harness/spec.h): for query i and key j,
**
**     S_ij = q_i · k_j / sqrt(D),   t = |i − j|,   n = keys row i sees
**     logit_ij = A(n, t) · S_ij + B(n, t)        (the spec's ops, in order)
**     p_i = softmax over visible j,  o_i = Σ_j p_ij v_j
**
** Causal rows see j ≤ i (n = i + 1); bidirectional rows see all T keys
** (n = T). This path stores the (H, T, T) probabilities and is meant for
** training lengths and tests; the tiled long-context kernel comes later and is
** tested against this one.
*/
#ifndef LX_ATTENTION_H
#define LX_ATTENTION_H

#include "harness/spec.h"
#include "harness/engine/blas.h"

/* o (T, H, D); att (H, T, T) probabilities saved for backward (0 where masked);
** q, k, v (T, H, D). */
void lx_attention_forward(float *o, float *att, const float *q, const float *k, const float *v,
                          const struct lx_spec *spec, int T, int H, int D, int causal);

/* dq, dk, dv (T, H, D) are accumulated (+=); do_ (T, H, D); att from forward. */
void lx_attention_backward(float *dq, float *dk, float *dv, const float *do_, const float *att,
                           const float *q, const float *k, const float *v, const struct lx_spec *spec,
                           int T, int H, int D, int causal);

/* The fast path: one head through BLAS, on strided views. q, k, v are (T, D)
** with row stride ld (3·H·D inside a qkv buffer), o (T, D) with stride ldo;
** P (T, T) receives the probabilities (0 where masked); tab is scratch of 2T
** doubles for the spec's row tables. Tested against the naive path above. */
void lx_attn_head_forward(float *o, int ldo, float *P, const float *q, const float *k, const float *v, int ld,
                          const struct lx_spec *spec, int head, int T, int D, int causal, double *tab);

/* Backward of one head: dq, dk, dv (stride ld) accumulate (+=); do_ (stride
** ldo); P from forward; dP is (T, T) scratch. */
void lx_attn_head_backward(float *dq, float *dk, float *dv, int ld, const float *do_, int ldo, const float *P,
                           float *dP, const float *q, const float *k, const float *v,
                           const struct lx_spec *spec, int head, int T, int D, int causal, double *tab);

#endif
