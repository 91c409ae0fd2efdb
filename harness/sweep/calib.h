/*
** harness/sweep/calib.h - a calibrating stack's temperature for a cell (t5align:
** docs/methods.md), found on the cell's model or through its task's probe, and
** remembered per loaded model.
*/
#ifndef LX_SWEEP_CALIB_H
#define LX_SWEEP_CALIB_H

#include "harness/sweep/plan.h"

/* The temperatures a calibrating stack (t5align) found on one loaded model.
** The calibration reads the model on a task's text split at the cell's
** length, so every task of a (stack, length) with the same split and
** capabilities gets the same temperature: the first cell calibrates, the
** others look it up. Holds entries of one model only; clear it when the
** model changes. */
struct lx_calib_memo {
    struct lx_calib_entry *e;
    int n, cap;
};

/* Look up (stack, length, caps, split): 1 and *tau when stored, else 0. */
int lx_calib_memo_get(const struct lx_calib_memo *m, int stack, long length, unsigned caps, const char *split,
                      double *tau);
void lx_calib_memo_put(struct lx_calib_memo *m, int stack, long length, unsigned caps, const char *split,
                       double tau);
void lx_calib_memo_clear(struct lx_calib_memo *m);

/* Set spec->temperature for a cell of a calibrating stack (st, index stack in
** the grid) on task tu at facts f: on ctx->model against the same stack at
** the training length (or from memo, when another task of this stack and
** length read the same split; memo may be NULL), else through the task's
** probe. An error when the task has neither a model nor a probe. */
int lx_sweep_calibrate(const struct lx_stack *st, int stack, const struct lx_task_use *tu, const struct lx_facts *f,
                       const struct lx_task_ctx *ctx, struct lx_calib_memo *memo, struct lx_spec *spec,
                       struct lx_error *err);

#endif
