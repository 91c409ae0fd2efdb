/*
** harness/commands/stored.h - the commands on stored results (harness/commands/stored.c;
** their lx_cmd_* in cli.h): the checks views share, `lenx show sweep` and
** `lenx rm`.
*/
#ifndef LX_STORED_H
#define LX_STORED_H

#include "harness/sweep/plan.h"
#include "results/views.h"

/* Open the store read-only for a view (db NULL: the default); say so on
** stderr when the open has a caveat (an immutable read beside a -wal file). */
int lx_stored_open(struct lx_store **store, const char *db, struct lx_error *err);

/* Append "did you mean 'X'? " for the closest of n names to s, or nothing. */
void lx_stored_closest(struct lx_buf *b, const char *s, const char *const *names, int n);

/* A sweep that names no stored sweep is an LX_EINVAL error listing the
** sweeps, the closest as a hint. NULL passes. */
int lx_stored_check_sweep(struct lx_store *store, const char *db, const char *sweep, struct lx_error *err);

/* Every word of a --metric list must name a metric of the rows (or its
** ranged forms); an LX_EINVAL error lists the metrics there otherwise. */
int lx_stored_check_metrics(const struct lx_rows *rows, const char *metrics, struct lx_error *err);

/* Print the YAML texts a stored sweep's cells were made from, newest first. */
int lx_stored_show_sweep(const char *sweep, const char *db, struct lx_error *err);

/* `lenx rm`: restrict the filter to what CONFIG (when not NULL) no longer
** plans, list the cells, and delete them when yes is set. */
int lx_stored_rm(const char *db, const struct lx_rm_filter *f, const char *config, int yes, struct lx_error *err);

/* After a run: say on stderr when the sweep also holds cells the plan no
** longer has (stale cells of an earlier version of its config). Quiet when
** there are none or the store cannot be read. */
void lx_stored_note_stale(const char *db, const struct lx_plan *plan, const char *config);

#endif
