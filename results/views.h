/*
** results/views.h - what the store becomes for people: tables (md, latex),
** tidy exports (csv, json), tidy CSV read back, and regression comparison.
** Views read rows only; they never touch the store directly.
*/
#ifndef LX_VIEWS_H
#define LX_VIEWS_H

#include "results/store.h"

enum lx_format { LX_FMT_MD, LX_FMT_CSV, LX_FMT_LATEX, LX_FMT_JSON };

/* "md", "csv", "latex", "json" -> format; -1 when unknown. */
int lx_format_parse(const char *s);

/* Does metric name `name` match the filter list ("ppl,range_mass")? A filter
** word matches itself and its ranged forms ("range_mass" matches
** "range_mass:10-100"). A NULL list matches everything. */
int lx_metric_matches(const char *list, const char *name);

/* Render rows (already filtered by sweep/commit) in a format. md and latex
** pivot methods (rows) × lengths (columns), one table per sweep, task and
** metric; a metric's "<name>_se" companion is shown as ± and not tabled on
** its own; several seeds show mean ± standard deviation. csv and json are tidy,
** one record per cell and metric. */
void lx_render(const struct lx_rows *rows, enum lx_format fmt, const char *metrics, struct lx_buf *out);

/* Read a tidy CSV (header exactly sweep,method,task,length,seed,metric,value). */
int lx_csv_read(const char *path, struct lx_rows *out, struct lx_error *err);

/* Compare base and head on the cells they share, matched by (task, method,
** length, seed, metric): the canonical strings name every resolved parameter
** that differs from its default, so this is the run key in readable form.
** Prints moved cells to out; *n_moved counts them, *n_common the matched ones. */
struct lx_compare_opts {
    double rtol, atol;      /* moved when |head - base| > atol + rtol·|base| */
};

void lx_compare(const struct lx_rows *base, const struct lx_rows *head, const struct lx_compare_opts *o,
                struct lx_buf *out, int *n_moved, int *n_common);

#endif
