/*
** harness/engine/model/evaluate.h - running a model over a list of windows in
** batches: the engine step between a task's generator and its scorer
** (the task contract is tasks/task.h).
**
** The task fills each window's input tokens and targets (fill), the engine
** runs the forward pass in evaluation mode (activations reused across layers,
** attention probabilities per thread), and the task scores each window from
** the per-token NLL and logits (score). Windows are scored in order, one at a
** time, so sums do not depend on the batch size or the thread count.
*/
#ifndef LX_EVALUATE_H
#define LX_EVALUATE_H

#include "harness/engine/model/model.h"

/* Fill window w: tok and tgt are (T,); tgt < 0 = not scored. */
typedef void (*lx_eval_fill)(void *ctx, long w, int *tok, int *tgt);
/* Score window w: loss (T,) per-token NLL (0 where not scored), logits (T, V)
** or NULL (lx_eval_windows without logits), tgt (T,). */
typedef void (*lx_eval_score)(void *ctx, long w, const float *loss, const float *logits, const int *tgt);

/* Run n_windows windows of T tokens. Batches hold up to max(1, 8192 / T)
** windows. logits 0: score reads the losses only, so the pass holds the head's
** logits a block of rows at a time (LX_ACTS_EVAL_LOSS) and passes NULL. */
int lx_eval_windows(const struct lx_model *m, const struct lx_spec *spec, long n_windows, int T, int logits,
                    lx_eval_fill fill, lx_eval_score score, void *ctx, struct lx_error *err);

#endif
