/*
** harness/engine/kernels/ops.h - the transformer's building blocks, forward and
** backward, in llm.c's shape: X_forward(out, in, weights, sizes) and
** X_backward(d_in, d_weights, d_out, saved inputs, weights, sizes). Backward
** passes accumulate (+=) into parameter gradients and overwrite or accumulate
** into input gradients as each comment says. Shapes in comments; row-major.
**
** These are the naive, readable versions; every one is checked against finite
** differences in tests/test_ops.c.
*/
#ifndef LX_OPS_H
#define LX_OPS_H

#include "harness/engine/kernels/wprod.h"

/* y (T, OC) += b (OC) on every row. */
void lx_bias_add(float *y, const float *b, long T, long OC);
/* y = x W^T + b.  y (T, OC), x (T, C), W (OC, C), b (OC) or NULL. */
void lx_linear_forward(float *y, const float *x, const float *W, const float *b, int T, int C, int OC);
/* dx (T, C) = dy W; dW (OC, C) += dy^T x; db (OC) += sum_t dy (db may be NULL). W is
** fp32, or in bf16 numerics also bf16 (training's copy of the weights, train.h). */
void lx_linear_backward(float *dx, float *dW, float *db, const float *dy, const float *x, struct lx_wmat W,
                        int T, int C, int OC);

/* RMSNorm: y = x / sqrt(mean(x^2) + eps) * g.  y, x (T, C), g (C), rstd (T) saved for backward. */
void lx_rmsnorm_forward(float *y, float *rstd, const float *x, const float *g, int T, int C, float eps);
/* dx (T, C) += ...; dg (C) += ... */
void lx_rmsnorm_backward(float *dx, float *dg, const float *dy, const float *x, const float *g,
                         const float *rstd, int T, int C);

/* LayerNorm: y = (x - mean(x)) / sqrt(var(x) + eps) * g + b, var the mean of (x - mean(x))^2, b
** (C) or NULL (no shift: MPT's); y may be x. rstd (T) saved for backward, which recomputes the mean. */
void lx_layernorm_forward(float *y, float *rstd, const float *x, const float *g, const float *b, int T, int C,
                          float eps);
/* dx (T, C) += ...; dg (C) += ...; db (C) += sum_t dy, or NULL */
void lx_layernorm_backward(float *dx, float *dg, float *db, const float *dy, const float *x, const float *g,
                           const float *rstd, int T, int C);

/* GELU, tanh approximation (as GPT-2 and llm.c).  y, x (N). */
void lx_gelu_forward(float *y, const float *x, int N);
/* dx (N) += dy * gelu'(x) */
void lx_gelu_backward(float *dx, const float *dy, const float *x, int N);
/* The same, keeping s (N) = σ(2u) from forward so backward needs no exp (s may be NULL in forward). */
void lx_gelu_forward_s(float *y, float *s, const float *x, int N);
void lx_gelu_backward_s(float *dx, const float *dy, const float *x, const float *s, int N);
/* GELU's exact form x·Φ(x), Φ(x) = (1 + erf(x/√2))/2 (torch's approximate="none"; MPT's), keeping
** s = Φ(x) (s may be NULL in forward); backward dx (N) += dy·(Φ(x) + x·φ(x)), φ the normal density. */
void lx_gelu_erf_forward_s(float *y, float *s, const float *x, int N);
void lx_gelu_erf_backward_s(float *dx, const float *dy, const float *x, const float *s, int N);

/* SwiGLU: y = silu(a)·b for h = [a | b] per row.  y (N, F) with row stride
** ldy (F; or y = h, ldy 2F: each row's result over its own a), h (N, 2F). */
void lx_swiglu_forward(float *y, int ldy, const float *h, int N, int F);
/* GeGLU (Gemma's MLP): y = gelu(a)·b, GELU's tanh form (lx_gelu_forward), laid out as lx_swiglu_forward. */
void lx_geglu_forward(float *y, int ldy, const float *h, int N, int F);
/* dh (N, 2F) = ... (overwritten) */
void lx_swiglu_backward(float *dh, const float *dy, const float *h, int N, int F);
void lx_geglu_backward(float *dh, const float *dy, const float *h, int N, int F);

/* Softmax cross-entropy per row: loss (T) = logsumexp(logits) - logits[target];
** probs (T, V) saved for the backward, or NULL (evaluation: the losses alone,
** the same bits, half the exponentials). Targets < 0 are ignored (loss 0).
** Returns the first row holding a non-finite logit (T when none): −inf
** leaves a loss finite, so a caller that must refuse it reads this. */
int lx_crossentropy_forward(float *loss, float *probs, const float *logits, const int *targets, int T, int V);
/* dlogits (T, V) = scale * (probs - onehot(target)) for rows with a target, 0 otherwise. */
void lx_crossentropy_backward(float *dlogits, const float *probs, const int *targets, int T, int V, float scale);

#endif
