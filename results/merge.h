/*
** results/merge.h - `lenx merge`: several stores (shard databases) into one
** (docs/cluster.md#merging-shard-databases).
*/
#ifndef LX_MERGE_H
#define LX_MERGE_H

#include "harness/core/lx.h"

/* What a merge did, summed over its inputs. */
struct lx_merge_counts {
    long runs_added;        /* cells new to the output */
    long runs_replaced;     /* an ok row of an input replaced a failed row */
    long runs_same;         /* already there with the same values (or both failed) */
    long runs_kept;         /* a failed row of an input, the output holding an ok one */
    long models_added;      /* model rows new to the output */
    long models_updated;    /* a trained model's row replaced a row found as a file */
    long conflicts;         /* cells (or models) with different values: nothing is written */
};

/* Merge the stores at inputs[0..n) into the store at out (created, or
** migrated to the current schema, as any store opened for writing), in one
** transaction on out; the inputs are opened read-only and must have the
** current schema. Runs are matched by (sweep, run key, commit, dirty) and
** copied with their metrics, series and outputs under new ids; models by key.
** A cell stored ok on both sides with different values, or a model key with
** two weight hashes, is a conflict: each is described in `report` (the cell,
** the first differing value on each side) and nothing is written (LX_ERUN).
** `log` gets one line per input. Merging the same inputs again changes
** nothing. */
int lx_merge(const char *const *inputs, int n, const char *out, struct lx_merge_counts *c, struct lx_buf *log,
             struct lx_buf *report, struct lx_error *err);

#endif
