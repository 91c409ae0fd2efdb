/*
** harness/sweep/run.h - running a plan: skip what is stored, claim and run the
** rest, store every cell (ok or failed) in its own transaction, report
** progress; models come from the checkpoint files or are trained once.
*/
#ifndef LX_RUN_H
#define LX_RUN_H

#include "harness/sweep/calib.h"
#include "harness/sweep/plan.h"
#include "harness/scaleout/shard.h"
#include "results/store.h"

struct lx_run_opts {
    int force;              /* recompute cells that are already stored */
    int progress;           /* 0 silent, 1 one line per cell, 2 a live line (terminal) */
    const char *models_dir; /* where trained checkpoints are cached (<db dir>/models) */
    int no_train;           /* never train: a cell whose model has no usable checkpoint fails */
    int keep_prompts;       /* store each retrieval output's prompt with it (outputs.prompt) */
    const struct lx_shard *shard;   /* run only the cells of this shard (NULL = all; docs/cluster.md) */
    int models_only;        /* obtain (train) the models of the cells to run, and run no cell; the
                            ** shard then selects root model keys (lx_cell_root_model) */
    double save_every;      /* a model in training saves its resumable state every so many seconds
                            ** (0: after every step; < 0: never); docs/config.md#resuming */
};

struct lx_run_summary {
    int n_cells;            /* cells in the plan (in the shard, with one) */
    int n_skipped;          /* already stored (before or, by another process, during the run), not run here */
    int n_ok, n_failed;     /* run now (under models_only: models obtained, or failed) */
    int n_trained;          /* models trained now */
    long train_steps;       /* optimizer steps taken now (0 when every model was cached) */
};

/* Run one cell into res (no store): what `lenx run` does per cell, and what
** tests call directly. model is the cell's model (NULL for logit tasks);
** memo (may be NULL) holds the calibrated temperatures of that model. */
int lx_cell_run(const struct lx_plan *plan, const struct lx_cell *c, const struct lx_model *model,
                struct lx_calib_memo *memo, struct lx_result *res, struct lx_error *err);

/* Run the plan. Cells that fail are stored as failed and the run goes on
** (a failed cell never replaces an ok row of the same commit); a store
** failure stops it (returns < 0). Each cell is claimed in the store before it
** runs and each model trained under a claim on its key, so any number of
** processes can run plans on one store: cells held by others are retried
** until they are stored, and the summary counts them as already stored. */
int lx_run_plan(const struct lx_plan *plan, struct lx_store *store, const struct lx_run_opts *o,
                struct lx_run_summary *sum, struct lx_error *err);

/* The models dir of a store: <db dir>/models ("models" for a bare file name). */
void lx_run_models_dir(const char *db, char *out, size_t n);

#endif
