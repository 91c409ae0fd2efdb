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

/* Escaping, one function per context (results/escape.c,
** docs/results.md#escaping); each appends s to b so that it cannot end the
** context it is written into:
**   html   element text and double-quoted attribute values: & < > " ' as
**          entities, control bytes (but tab and newline) as U+FFFD;
**   md     a Markdown table cell or heading: & < > as entities, \ | ` * and
**          a "(" after "]" backslash-escaped, control bytes as spaces;
**   latex  LaTeX's specials as commands, control bytes as spaces;
**   csv    an RFC 4180 field, quoted when it holds , " CR or LF (read back
**          exactly by lx_csv_read). */
void lx_esc_html(struct lx_buf *b, const char *s);
void lx_esc_md(struct lx_buf *b, const char *s);
void lx_esc_latex(struct lx_buf *b, const char *s);
void lx_esc_csv(struct lx_buf *b, const char *s);

/* Render rows (already filtered by sweep/commit) in a format. md and latex
** pivot methods (rows) × lengths (columns), one table per sweep, task and
** metric; a metric's "<name>_se" companion is shown as ± and not tabled on
** its own; several seeds show the mean and its 95 % interval
** ("2.33 [-1.46, 6.13] (n=3)", results/seeds.c). Rows of one method
** name from different configurations (model key, resolved parameters) are
** never pooled: their labels get a tag ("rope @t [1d38c76d]"). csv and json
** are tidy, one record per cell and metric, with the cell's model key and
** run key. */
void lx_render(const struct lx_rows *rows, enum lx_format fmt, const char *metrics, struct lx_buf *out);

/* Series rows (lx_store_select with a series) as tidy csv or json, one record
** per point: sweep,method,task,length,seed,series,x,y,model_key,key. */
void lx_render_series(const struct lx_rows *rows, enum lx_format fmt, struct lx_buf *out);

/* The row label of every row, as the tables show them: the method, tagged
** apart when one name holds cells of several configurations, automatic
** values resolved per length merged ("rope+yarn(scale=1;64)"). Free with
** lx_row_labels_free(label, rows->n); *tagged says whether any needed a tag. */
char **lx_row_labels(const struct lx_rows *rows, int *tagged);
void lx_row_labels_free(char **label, int n);

/* One table cell: the metric of the rows labelled `method` at `length`,
** pooled over seeds, with a 95 % interval when it has two seeds or more
** (results/seeds.c, docs/results.md#intervals-over-seeds). */
struct lx_cell_stat {
    double mean;                /* NaN when no row */
    double spread;              /* sd over seeds (n > 1), else the stored <metric>_se, else NaN */
    int n;                      /* rows (seeds) pooled */
    double lo, hi;              /* n >= 2: the 95 % t interval of the mean over seeds, widened for an accuracy
                                ** with stored counts to hold the Wilson interval of its pooled instances,
                                ** and a share of instances (acc) kept inside [0, 1]; NaN when n < 2 */
    long n_instances;           /* the pooled instance count of such an accuracy (every seed's), else 0 */
    double bar_lo, bar_hi;      /* the error bar a plot draws: [lo, hi] when n >= 2, else mean -/+ the stored
                                ** <metric>_se; a share of instances kept inside [0, 1]; NaN when neither */
};
void lx_cell_stat(const struct lx_rows *rows, char *const *label, const char *sweep, const char *task,
                  const char *method, long length, const char *metric, struct lx_cell_stat *st);

/* Student's t distribution's 0.975 quantile with df degrees of freedom (NaN
** for df < 1): the half-width of a 95 % interval of a mean of df + 1 values
** is lx_t975(df) * sd / sqrt(df + 1). */
double lx_t975(int df);

/* The 95 % Wilson score interval of a proportion of k successes in n trials
** (NaN, NaN unless 0 <= k <= n and n > 0). */
void lx_wilson95(double k, double n, double *lo, double *hi);

/* Is metric an accuracy whose run stores its instance count, and under which
** name: with name NULL, the first such count's name (or NULL: not one); with
** a name, that name when it counts metric's instances, else NULL. "acc" is
** counted by n_samples (retrieval tasks) or n_masked (mlm). */
const char *lx_metric_count(const char *metric, const char *name);

/* Effective length (docs/results.md#effective-length): the longest stored
** length L, from the reference length on, such that the score stays at least
** `threshold` of the reference score at every stored length up to L. The
** reference is the training length when a value is stored there, else the
** shortest length. Higher-is-better metrics (dir +1) score value; lower-is-
** better ones (dir -1: ppl, nll) score ref/value. Returns 0 when it is not
** defined (no direction, no positive reference); *all is set when every
** stored length passes (the true effective length may be longer); *from
** (unless NULL) the length it was measured from (0: none). */
int lx_metric_direction(const char *metric);
long lx_effective_length(const long *lengths, const double *values, int n, long train_len, int dir,
                         double threshold, int *all, long *from);

/* `lenx report`: one self-contained HTML page (inline SVG, no script) of the
** sweeps' tables and plots, read from the store (results/report.c). */
struct lx_report_opts {
    const char *const *sweeps;  /* (n_sweeps,) names; n_sweeps 0: every sweep */
    int n_sweeps;
    const char *metrics;        /* metrics to plot and table (NULL: each task's headline, else all) */
    double threshold;           /* effective length's fraction of the reference score (0.85) */
    const char *db;             /* the store's file, for the page's header */
    /* a task's headline metrics ("ppl,acc") from its canonical string, or NULL: the application's */
    const char *(*headline)(const char *task);
};
/* What a page shows, for the command's last word: ok rows and failed cells without an ok row. */
struct lx_report_tally {
    long n_rows, n_failed;
};
/* A store holding no sweep at all is an LX_EINVAL error (an empty page would say nothing). */
int lx_report(struct lx_store *s, const struct lx_report_opts *o, struct lx_buf *out, struct lx_report_tally *tally,
              struct lx_error *err);

/* Read a tidy CSV: header sweep,method,task,length,seed,metric,value,model_key,key,
** or the first 7 of those columns (older exports; model keys unknown). */
int lx_csv_read(const char *path, struct lx_rows *out, struct lx_error *err);

/* Compare base and head on the values they share, matched by cell (task,
** method, model key, length, seed) and metric: the canonical strings name
** every resolved parameter that differs from its default, so with the model
** key this is the run key in readable form. The model key counts only when
** both sides know it (an older CSV does not). Prints moved values and a
** summary (values, cells) to out. A side holding two configurations of one
** cell (two rows with the same identity and no common run key) is an
** LX_EINVAL error naming both. */
struct lx_compare_opts {
    double rtol, atol;          /* moved when |head - base| > atol + rtol·|base| */
    double sigma;               /* > 0: pool each side's seeds per cell and flag a mean only when it moved by more
                                ** than sigma combined standard errors (lx_compare_pooled); 0: value by value */
    const char *base_name;      /* the sides as messages name them; NULL: "base", "head" */
    const char *head_name;
    struct lx_buf *warn;        /* NULL, or where a line per pair of differing arithmetic goes: cells the
                                ** two sides ran in different numerics, or fast with different BLAS kernels */
};

struct lx_compare_counts {
    int n_values;               /* values on both sides, compared */
    int n_cells;                /* the cells those values belong to */
    int n_moved;                /* values moved beyond the tolerance */
    int only_base, only_head;   /* values on one side only */
    int n_no_se;                /* --sigma: values with no standard error on either side (tolerances used) */
};

int lx_compare(const struct lx_rows *base, const struct lx_rows *head, const struct lx_compare_opts *o,
               struct lx_buf *out, struct lx_compare_counts *c, struct lx_error *err);

/* `lenx compare --sigma K` (lx_compare calls it when o->sigma > 0): each
** side's seeds pooled per cell (task, method, model configuration, length)
** and metric; a side's standard error is that of its seed mean, sd/sqrt(n),
** or with one seed the stored <metric>_se; a mean moved when |head - base| >
** K·sqrt(se_base² + se_head²). A value neither side gives a standard error
** for is compared with the tolerances. <metric>_se rows are uncertainties,
** not values: not compared. Counts as lx_compare's, per pooled value. */
int lx_compare_pooled(const struct lx_rows *base, const struct lx_rows *head, const struct lx_compare_opts *o,
                      struct lx_buf *out, struct lx_compare_counts *c, struct lx_error *err);

#endif
