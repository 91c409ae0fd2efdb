/*
** results/report.c - `lenx report`: one self-contained HTML page of stored
** sweeps (docs/results.md#the-html-report).
**
** Per sweep: its provenance; per task, one panel per metric (value against
** length on a log-2 axis, the training length dashed, ± the stored
** <metric>_se or the sd over seeds as error bars) beside its table with an
** effective-length column; curves stored as series per length (NLL by
** position, attention mass by distance), one panel per length; and depth x
** length heat maps of retrieval accuracy, one per method. Plots are inline
** SVG drawn by results/plot.c; the page needs no network and no script.
** Each figure says what it holds (data-kind, data-task, data-series: the
** lines or cells drawn), so a test can count them against the store.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/plot.h"
#include "results/views.h"

/* Series drawn as curves per length (x on a log-2 axis), and as heat maps. */
static const char *const curve_series[][3] = {
    {"nll_by_pos", "position (tokens)", "mean NLL (nats)"},
    {"mass_by_distance", "distance (tokens)", "attention mass"},
};
static const char *const heat_series[][2] = {
    {"acc_by_depth", "accuracy"},
};

/* What a page is made of while it is built: HTML with a placeholder per plot,
** the plots, and the arrays they point into (freed at the end). */
struct page {
    struct lx_buf html;
    struct lx_plot *plots;      /* (n_plots,) */
    int n_plots, cap_plots;
    void **owned;               /* (n_owned,) */
    int n_owned, cap_owned;
    struct lx_report_tally tally;
};

static void *own(struct page *pg, void *p)
{
    if (pg->n_owned == pg->cap_owned) {
        pg->cap_owned = pg->cap_owned ? 2 * pg->cap_owned : 64;
        pg->owned = lx_xrealloc(pg->owned, (size_t)pg->cap_owned * sizeof *pg->owned);
    }
    return pg->owned[pg->n_owned++] = p;
}

static char *own_str(struct page *pg, const char *s)
{
    return own(pg, lx_xstrdup(s));
}

/* Append plot p; its SVG goes where "\1<index>\1" stands in the HTML. */
static void add_plot(struct page *pg, const struct lx_plot *p)
{
    if (pg->n_plots == pg->cap_plots) {
        pg->cap_plots = pg->cap_plots ? 2 * pg->cap_plots : 16;
        pg->plots = lx_xrealloc(pg->plots, (size_t)pg->cap_plots * sizeof *pg->plots);
    }
    pg->plots[pg->n_plots] = *p;
    lx_buf_printf(&pg->html, "\1%d\1", pg->n_plots++);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Distinct values of the selected rows' length (what = 0) or x (what = 1),
** sorted; returns how many. out holds rows->n. */
static int distinct(const struct lx_rows *rows, const char *sweep, const char *task, const char *metric,
                    int what, double *out)
{
    int n = 0;
    for (int i = 0; i < rows->n; i++) {
        const struct lx_row *r = &rows->rows[i];
        if (strcmp(r->sweep, sweep) || strcmp(r->task, task) || (metric && strcmp(r->metric, metric)))
            continue;
        double v = what ? r->x : (double)r->length;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = out[k] == v;
        if (!seen)
            out[n++] = v;
    }
    qsort(out, (size_t)n, sizeof *out, cmp_double);
    return n;
}

/* Distinct labels of rows of (sweep, task[, metric]) in first-seen order. */
static int labels_of(const struct lx_rows *rows, char *const *label, const char *sweep, const char *task,
                     const char *metric, const char **out)
{
    int n = 0;
    for (int i = 0; i < rows->n; i++) {
        const struct lx_row *r = &rows->rows[i];
        if (strcmp(r->sweep, sweep) || strcmp(r->task, task) || (metric && strcmp(r->metric, metric)))
            continue;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = strcmp(out[k], label[i]) == 0;
        if (!seen)
            out[n++] = label[i];
    }
    return n;
}

/* The training length of method's model (its row label) in (sweep, task);
** method NULL: the one every method's model shares, 0 when they differ. */
static long train_len_of(const struct lx_rows *rows, char *const *label, const char *sweep, const char *task,
                         const char *method)
{
    long t = 0;
    for (int i = 0; i < rows->n; i++) {
        const struct lx_row *r = &rows->rows[i];
        if (r->train_len <= 0 || strcmp(r->sweep, sweep) || strcmp(r->task, task) ||
            (method && strcmp(label[i], method)))
            continue;
        if (t && t != r->train_len)
            return 0;
        t = r->train_len;
    }
    return t;
}

/* The table beside a metric panel: methods x lengths, then effective length. */
static void metric_table(struct page *pg, const struct lx_rows *rows, char *const *label, const char *sweep,
                         const char *task, const char *metric, const char **methods, int n_m, const double *len,
                         int n_len, double threshold)
{
    struct lx_buf *h = &pg->html;
    long *lens = lx_xmalloc((size_t)n_len * sizeof *lens);
    double *v = lx_xmalloc((size_t)n_len * sizeof *v);
    int dir = lx_metric_direction(metric);
    lx_buf_puts(h, "<table><thead><tr><th>method</th>");
    for (int j = 0; j < n_len; j++)
        lx_buf_printf(h, "<th>%ld</th>", lens[j] = (long)len[j]);
    lx_buf_printf(h, "<th title=\"longest length whose score stays at least %g of the score at the training "
                  "length\">eff. length (%g)</th></tr></thead><tbody>\n", threshold, threshold);
    for (int m = 0; m < n_m; m++) {
        lx_buf_puts(h, "<tr><td>");
        lx_esc_html(h, methods[m]);
        lx_buf_puts(h, "</td>");
        for (int j = 0; j < n_len; j++) {
            struct lx_cell_stat st;
            lx_cell_stat(rows, label, sweep, task, methods[m], lens[j], metric, &st);
            v[j] = st.mean;
            if (st.n == 0)
                lx_buf_puts(h, "<td>–</td>");
            else if (st.n > 1 && !isnan(st.lo))     /* several seeds: their 95 % interval */
                lx_buf_printf(h, "<td>%.4g <small title=\"95 %% interval over %d seeds\">[%.4g, %.4g] n=%d</small></td>",
                              st.mean, st.n, st.lo, st.hi, st.n);
            else if (isnan(st.spread))
                lx_buf_printf(h, "<td>%.4g</td>", st.mean);
            else
                lx_buf_printf(h, "<td>%.4g <small>± %.2g</small></td>", st.mean, st.spread);
        }
        int all = 0;    /* measured against the training length of this method's own model */
        long tl = train_len_of(rows, label, sweep, task, methods[m]), ref;
        long eff = lx_effective_length(lens, v, n_len, tl, dir, threshold, &all, &ref);
        if (eff && ref != tl)   /* from the shortest stored length: said, and marked */
            lx_buf_printf(h, "<td class=\"eff\" title=\"measured from %ld, the shortest length stored: %s\">%s%ld *"
                          "</td></tr>\n", ref, tl ? "no cell at the model's training length"
                          : "the store does not know this model's training length (a server that does not say it, or a "
                          "cell stored before lenx recorded it)",
                          all ? "≥ " : "", eff);
        else if (eff)
            lx_buf_printf(h, "<td class=\"eff\">%s%ld</td></tr>\n", all ? "≥ " : "", eff);
        else
            lx_buf_puts(h, "<td class=\"eff\">–</td></tr>\n");
    }
    lx_buf_puts(h, "</tbody></table>\n");
    free(lens);
    free(v);
}

/* One panel per metric of a task: the plot, and its table beside it. */
static void metric_panel(struct page *pg, const struct lx_rows *rows, char *const *label, const char *sweep,
                         const char *task, const char *metric, double threshold)
{
    const char **methods = lx_xmalloc((size_t)rows->n * sizeof *methods);
    double *len = lx_xmalloc((size_t)rows->n * sizeof *len);
    int n_m = labels_of(rows, label, sweep, task, metric, methods), n_len = distinct(rows, sweep, task, metric, 0, len);
    struct lx_plot_line *lines = own(pg, lx_xcalloc((size_t)n_m, sizeof *lines));
    for (int m = 0; m < n_m; m++) {
        size_t bytes = (size_t)n_len * sizeof(double);
        double *y = own(pg, lx_xmalloc(bytes)), *lo = own(pg, lx_xmalloc(bytes)), *hi = own(pg, lx_xmalloc(bytes));
        for (int j = 0; j < n_len; j++) {
            struct lx_cell_stat st;
            lx_cell_stat(rows, label, sweep, task, methods[m], (long)len[j], metric, &st);
            y[j] = st.mean, lo[j] = st.bar_lo, hi[j] = st.bar_hi;
        }
        lines[m] = (struct lx_plot_line){.label = own_str(pg, methods[m]), .n = n_len, .x = len, .y = y, .lo = lo,
                                         .hi = hi};
    }
    own(pg, len);
    long train = train_len_of(rows, label, sweep, task, NULL);   /* the mark, when the models share one */
    struct lx_buf title = {0};     /* whole: a cut could split a UTF-8 character */
    lx_buf_printf(&title, "%s against length", metric);
    lx_buf_puts(&pg->html, "<div class=\"row\"><figure class=\"panel\" data-kind=\"metric\" data-task=\"");
    lx_esc_html(&pg->html, task);
    lx_buf_puts(&pg->html, "\" data-metric=\"");
    lx_esc_html(&pg->html, metric);
    lx_buf_printf(&pg->html, "\" data-series=\"%d\">", n_m);
    add_plot(pg, &(struct lx_plot){.kind = LX_PLOT_LINES, .title = own(pg, title.s), .xlabel = "length (tokens)",
                                   .ylabel = own_str(pg, metric), .log2x = 1, .mark_x = (double)train,
                                   .mark_label = "train", .lines = lines, .n_lines = n_m, .xtics_at = len,
                                   .n_xtics = n_len});
    lx_buf_puts(&pg->html, "</figure>\n");
    metric_table(pg, rows, label, sweep, task, metric, methods, n_m, len, n_len, threshold);
    lx_buf_puts(&pg->html, "</div>\n");
    free(methods);
}

/* Mean y of the points of (label, length) at each of the xs. */
static void mean_at(const struct lx_rows *pts, char *const *plabel, const char *sweep, const char *task,
                    const char *method, long length, const double *xs, int nx, double *y)
{
    for (int k = 0; k < nx; k++) {
        double sum = 0;
        int n = 0;
        for (int i = 0; i < pts->n; i++) {
            const struct lx_row *r = &pts->rows[i];
            if (r->x == xs[k] && r->length == length && !strcmp(plabel[i], method) && !strcmp(r->sweep, sweep) &&
                !strcmp(r->task, task) && !isnan(r->value))
                sum += r->value, n++;
        }
        y[k] = n ? sum / n : NAN;
    }
}

/* What a series of a task spans: its lengths, x values and methods. */
struct axes {
    double *len, *xs;           /* (n_len,), (nx,) sorted; owned by the page */
    const char **methods;       /* (n_m,) labels in first-seen order; freed by the caller */
    int n_len, nx, n_m;
};

static void series_axes(struct page *pg, const struct lx_rows *pts, char *const *plabel, const char *sweep,
                        const char *task, struct axes *ax)
{
    ax->len = own(pg, lx_xmalloc((size_t)pts->n * sizeof *ax->len + 1));
    ax->xs = own(pg, lx_xmalloc((size_t)pts->n * sizeof *ax->xs + 1));
    ax->methods = lx_xmalloc((size_t)pts->n * sizeof *ax->methods + 1);
    ax->n_len = distinct(pts, sweep, task, NULL, 0, ax->len);
    ax->nx = distinct(pts, sweep, task, NULL, 1, ax->xs);
    ax->n_m = labels_of(pts, plabel, sweep, task, NULL, ax->methods);
}

/* A curve series of a task: one panel per length, a line per method. */
static void curve_panels(struct page *pg, const struct lx_rows *pts, char *const *plabel, const char *sweep,
                         const char *task, const char *const *what)
{
    struct axes ax;
    series_axes(pg, pts, plabel, sweep, task, &ax);
    const double *len = ax.len, *xs = ax.xs;
    const char **methods = ax.methods;
    int n_len = ax.n_len, nx = ax.nx, n_m = ax.n_m;
    long train = train_len_of(pts, plabel, sweep, task, NULL);
    if (n_len)
        lx_buf_printf(&pg->html, "<h4>%s</h4>\n<div class=\"row\">", what[0]);
    for (int j = 0; j < n_len; j++) {
        struct lx_plot_line *lines = own(pg, lx_xcalloc((size_t)n_m, sizeof *lines));
        for (int m = 0; m < n_m; m++) {
            double *y = own(pg, lx_xmalloc((size_t)nx * sizeof *y));
            mean_at(pts, plabel, sweep, task, methods[m], (long)len[j], xs, nx, y);
            lines[m] = (struct lx_plot_line){.label = own_str(pg, methods[m]), .n = nx, .x = xs, .y = y};
        }
        struct lx_buf title = {0};
        lx_buf_printf(&title, "%s at length %ld", what[0], (long)len[j]);
        lx_buf_puts(&pg->html, "<figure class=\"panel\" data-kind=\"curve\" data-task=\"");
        lx_esc_html(&pg->html, task);
        lx_buf_printf(&pg->html, "\" data-metric=\"%s\" data-series=\"%d\">", what[0], n_m);
        add_plot(pg, &(struct lx_plot){.kind = LX_PLOT_LINES, .title = own(pg, title.s), .xlabel = what[1],
                                       .ylabel = what[2], .log2x = 1, .mark_x = (double)train,
                                       .mark_label = "train", .lines = lines, .n_lines = n_m, .width = 440,
                                       .height = 340});
        lx_buf_puts(&pg->html, "</figure>");
    }
    if (n_len)
        lx_buf_puts(&pg->html, "</div>\n");
    free(methods);
}

/* A depth series of a task: one depth x length heat map per method. */
static void heat_panels(struct page *pg, const struct lx_rows *pts, char *const *plabel, const char *sweep,
                        const char *task, const char *const *what)
{
    struct axes ax;
    series_axes(pg, pts, plabel, sweep, task, &ax);
    const double *len = ax.len, *xs = ax.xs;
    const char **methods = ax.methods;
    int n_len = ax.n_len, nd = ax.nx, n_m = ax.n_m;
    char **xt = own(pg, lx_xcalloc((size_t)n_len + 1, sizeof *xt)), **yt = own(pg, lx_xcalloc((size_t)nd + 1, sizeof *yt));
    for (int j = 0; j < n_len; j++)
        xt[j] = own(pg, lx_xmalloc(24)), snprintf(xt[j], 24, "%ld", (long)len[j]);
    for (int d = 0; d < nd; d++)
        yt[d] = own(pg, lx_xmalloc(24)), snprintf(yt[d], 24, "%.3g", xs[d]);
    if (n_m)
        lx_buf_printf(&pg->html, "<h4>%s: depth × length</h4>\n<div class=\"row\">", what[0]);
    for (int m = 0; m < n_m; m++) {
        double *z = own(pg, lx_xmalloc((size_t)(nd * n_len + 1) * sizeof *z)), *col = lx_xmalloc((size_t)nd * sizeof *col);
        for (int j = 0; j < n_len; j++) {
            mean_at(pts, plabel, sweep, task, methods[m], (long)len[j], xs, nd, col);
            for (int d = 0; d < nd; d++)
                z[(size_t)d * (size_t)n_len + (size_t)j] = col[d];
        }
        free(col);
        lx_buf_puts(&pg->html, "<figure class=\"panel\" data-kind=\"heat\" data-task=\"");
        lx_esc_html(&pg->html, task);
        lx_buf_printf(&pg->html, "\" data-metric=\"%s\" data-series=\"%d\">", what[0], nd * n_len);
        add_plot(pg, &(struct lx_plot){.kind = LX_PLOT_HEAT, .title = own_str(pg, methods[m]),
                                       .xlabel = "length (tokens)", .ylabel = "needle depth", .nx = n_len, .ny = nd,
                                       .xtics = (const char *const *)xt, .ytics = (const char *const *)yt, .z = z,
                                       .zmin = 0, .zmax = 1, .width = 440, .height = 300});
        lx_buf_puts(&pg->html, "</figure>");
    }
    if (n_m)
        lx_buf_puts(&pg->html, "</div>\n");
    free(methods);
}

int lx_metric_direction(const char *m)
{
    size_t n = strlen(m);
    if (strcmp(m, "ppl") == 0 || strncmp(m, "nll", 3) == 0 || strstr(m, "loss") || (n > 4 && !strcmp(m + n - 4, "_ppl")))
        return -1;
    if (strcmp(m, "acc") == 0 || strncmp(m, "acc_", 4) == 0 || strstr(m, "accuracy") || (n > 4 && !strcmp(m + n - 4, "_acc")))
        return strcmp(m, "acc_se") ? 1 : 0;
    return 0;
}

long lx_effective_length(const long *lengths, const double *values, int n, long train_len, int dir,
                         double threshold, int *all, long *from)
{
    *all = 0;
    int ref = -1;
    for (int j = 0; j < n && ref < 0; j++)
        if (lengths[j] == train_len && !isnan(values[j]))
            ref = j;
    for (int j = 0; j < n && ref < 0; j++)
        if (!isnan(values[j]))
            ref = j;
    if (from)
        *from = ref < 0 ? 0 : lengths[ref];
    if (dir == 0 || ref < 0 || !(values[ref] > 0))
        return 0;
    int last = ref;
    for (int j = ref + 1; j < n; j++) {
        double score = dir > 0 ? values[j] / values[ref] : values[ref] / values[j];
        if (isnan(score) || !(values[j] > 0) || score < threshold)
            break;
        last = j;
    }
    *all = last == n - 1;
    return lengths[last];
}

/* Each series row's label: that of a metric row of the same cell. */
static char **point_labels(const struct lx_rows *rows, char *const *label, const struct lx_rows *pts)
{
    char **pl = lx_xcalloc((size_t)pts->n + 1, sizeof *pl);
    for (int i = 0, k = 0; i < pts->n; i++) {
        const struct lx_row *p = &pts->rows[i];
        for (int tries = 0; tries < rows->n && !pl[i]; tries++, k = (k + 1) % rows->n)
            if (rows->rows[k].run_id == p->run_id)
                pl[i] = lx_xstrdup(label[k]);
        if (!pl[i])
            pl[i] = lx_xstrdup(p->method);
    }
    return pl;
}

/* " (N cells)" after each commit or machine when the cells came from several. */
static void cell_count(struct lx_buf *h, int n, int several)
{
    if (several)
        lx_buf_printf(h, " (%d cell%s)", n, n == 1 ? "" : "s");
}

static void provenance(struct page *pg, struct lx_store *s, const char *sweep, struct lx_error *err)
{
    struct lx_sweep_config *c;
    int n;
    struct lx_buf *h = &pg->html;
    if (strchr(sweep, '+')) {       /* sweeps pooled (lx_store_select_pooled): each one's, under its name */
        char one[256];
        for (const char *p = sweep; *p;)
            if (lx_sweep_next(&p, one, sizeof one)) {
                lx_buf_puts(h, "<h4>sweep ");
                lx_esc_html(h, one);
                lx_buf_puts(h, "</h4>\n");
                provenance(pg, s, one, err);
            }
        return;
    }
    if (lx_store_sweep_configs(s, sweep, &c, &n, err) < 0)
        return;
    for (int i = 0; i < n; i++) {
        int nc = c[i].n_commits, nm = c[i].n_machines;
        lx_buf_printf(h, "<table class=\"prov\"><tr><th>commit%s</th><td>", nc > 1 ? "s" : "");
        for (int k = 0; k < nc; k++) {
            lx_buf_printf(h, "%s<code>", k ? "<br>" : "");
            lx_esc_html(h, c[i].commits[k].name);
            lx_buf_printf(h, "</code>%s", c[i].commits[k].dirty ? " <b>(dirty: uncommitted changes)</b>" : "");
            cell_count(h, c[i].commits[k].n, nc > 1);
        }
        lx_buf_printf(h, "</td></tr>\n<tr><th>machine%s</th><td>", nm > 1 ? "s" : "");
        for (int k = 0; k < nm; k++) {
            lx_buf_puts(h, k ? "<br>" : "");
            lx_esc_html(h, c[i].machines[k].name);
            lx_buf_printf(h, ", %d threads, ", c[i].machines[k].threads);
            lx_esc_html(h, c[i].machines[k].blas);
            lx_buf_puts(h, ", numerics ");
            lx_esc_html(h, c[i].machines[k].numerics);
            cell_count(h, c[i].machines[k].n, nm > 1);
        }
        lx_buf_puts(h, "</td></tr>\n<tr><th>time</th><td>");
        lx_esc_html(h, c[i].first);
        lx_buf_puts(h, " … ");
        lx_esc_html(h, c[i].last);
        lx_buf_printf(h, " (UTC)</td></tr>\n<tr><th>cells</th><td>%d, from ", c[i].n_cells);
        lx_esc_html(h, c[i].path);
        lx_buf_puts(h, "</td></tr></table>\n<details><summary>config</summary><pre>");
        lx_esc_html(h, c[i].text ? c[i].text : "(not stored: made before schema 4)");
        lx_buf_puts(h, "</pre></details>\n");
    }
    lx_sweep_configs_free(c, n);
}

/* Panels of a series of every task of a sweep. */
static int series_panels(struct page *pg, struct lx_store *s, const struct lx_rows *rows, char *const *label,
                         const char *sweep, const char *task, const char *const *what, int heat, struct lx_error *err)
{
    struct lx_rows pts = {0};
    struct lx_filter f = {.sweep = sweep, .series = what[0]};
    int rc = lx_store_select_pooled(s, &f, &pts, err);
    char **pl = rc == LX_OK ? point_labels(rows, label, &pts) : NULL;
    if (rc == LX_OK && heat)
        heat_panels(pg, &pts, pl, sweep, task, what);
    else if (rc == LX_OK)
        curve_panels(pg, &pts, pl, sweep, task, what);
    lx_row_labels_free(pl, pts.n);
    lx_rows_release(&pts);
    return rc;
}

#define MAX_FAILURES 50     /* failed cells listed per sweep; the rest counted */

/* A sweep's failed cells without an ok row (each sweep of A+B under its name): missing from its tables and
** plots, so listed with their stored errors. */
static int failures(struct page *pg, struct lx_store *s, const char *sweep, struct lx_error *err)
{
    char one[256];
    int rc = LX_OK;
    for (const char *p = sweep; *p && rc == LX_OK;) {
        struct lx_cell_info *c = NULL;
        int n = 0;
        if (lx_sweep_next(&p, one, sizeof one))
            rc = lx_store_failures(s, one, &c, &n, err);
        if (n) {
            lx_buf_printf(&pg->html, "<h3>Failed cells%s", strchr(sweep, '+') ? " of sweep " : "");
            lx_esc_html(&pg->html, strchr(sweep, '+') ? one : "");
            lx_buf_printf(&pg->html, "</h3>\n<p class=\"note\">%d cell%s failed and %s no ok row: missing from "
                          "the tables and plots below. Rerunning the sweep retries %s.</p>\n<table class=\"fail\">"
                          "<tr><th>task</th><th>method</th><th>model</th><th>length</th><th>seed</th><th>commit</th>"
                          "<th>error</th></tr>\n", n, n > 1 ? "s" : "", n > 1 ? "have" : "has", n > 1 ? "them" : "it");
        }
        for (int i = 0; i < n && i < MAX_FAILURES; i++) {
            const char *text[] = {c[i].task, c[i].method, c[i].model};
            lx_buf_puts(&pg->html, "<tr>");
            for (int k = 0; k < 3; k++) {
                lx_buf_puts(&pg->html, "<td>");
                lx_esc_html(&pg->html, text[k]);
                lx_buf_puts(&pg->html, "</td>");
            }
            char commit[13];        /* its first 12 bytes, not cutting a UTF-8 sequence */
            size_t k = strlen(c[i].commit) > 12 ? 12 : strlen(c[i].commit);
            while (k > 0 && ((unsigned char)c[i].commit[k] & 0xC0) == 0x80)
                k--;
            snprintf(commit, sizeof commit, "%.*s", (int)k, c[i].commit);
            lx_buf_printf(&pg->html, "<td>%ld</td><td>%ld</td><td><code>", c[i].length, c[i].seed);
            lx_esc_html(&pg->html, commit);
            lx_buf_puts(&pg->html, "</code></td><td><pre>");
            lx_esc_html(&pg->html, c[i].error);
            lx_buf_puts(&pg->html, "</pre></td></tr>\n");
        }
        if (n)
            lx_buf_puts(&pg->html, "</table>\n");
        if (n > MAX_FAILURES)
            lx_buf_printf(&pg->html, "<p class=\"note\">… and %d more (`lenx rm --failed --sweep NAME` lists "
                          "every failed row).</p>\n", n - MAX_FAILURES);
        pg->tally.n_failed += n;
        lx_cell_infos_free(c, n);
    }
    return rc;
}

/* Which metrics of a task get a panel. */
static int wanted(const struct lx_report_opts *o, const char *task, const char *metric)
{
    size_t n = strlen(metric);
    if (n > 3 && strcmp(metric + n - 3, "_se") == 0)
        return 0;
    const char *list = o->metrics ? o->metrics : o->headline ? o->headline(task) : NULL;
    return lx_metric_matches(list, metric);
}

static int sweep_section(struct page *pg, struct lx_store *s, const char *sweep, const struct lx_report_opts *o,
                         struct lx_error *err)
{
    struct lx_rows rows = {0};
    struct lx_filter f = {.sweep = sweep};
    int rc = lx_store_select_pooled(s, &f, &rows, err), tagged = 0;
    char **label = rc == LX_OK ? lx_row_labels(&rows, &tagged) : NULL;
    lx_buf_puts(&pg->html, "<section class=\"sweep\"><h2>sweep ");
    lx_esc_html(&pg->html, sweep);
    lx_buf_puts(&pg->html, "</h2>\n");
    provenance(pg, s, sweep, err);
    if (rc == LX_OK)
        rc = failures(pg, s, sweep, err);
    if (rc == LX_OK && rows.n == 0)
        lx_buf_puts(&pg->html, "<p class=\"note\">No ok cell is stored in this sweep.</p>\n");
    pg->tally.n_rows += rows.n;
    const char **tasks = lx_xmalloc((size_t)rows.n * sizeof *tasks + 1), **ms = lx_xmalloc((size_t)rows.n * sizeof *ms + 1);
    int n_t = 0;
    for (int i = 0; i < rows.n; i++) {
        int seen = 0;
        for (int k = 0; k < n_t && !seen; k++)
            seen = strcmp(tasks[k], rows.rows[i].task) == 0;
        if (!seen)
            tasks[n_t++] = rows.rows[i].task;
    }
    for (int t = 0; t < n_t && rc == LX_OK; t++) {
        lx_buf_puts(&pg->html, "<h3>");
        lx_esc_html(&pg->html, tasks[t]);
        lx_buf_puts(&pg->html, "</h3>\n");
        int n_ms = 0;
        for (int i = 0; i < rows.n; i++) {
            const struct lx_row *r = &rows.rows[i];
            int seen = strcmp(r->task, tasks[t]) != 0 || !wanted(o, tasks[t], r->metric);
            for (int k = 0; k < n_ms && !seen; k++)
                seen = strcmp(ms[k], r->metric) == 0;
            if (!seen)
                ms[n_ms++] = r->metric;
        }
        for (int m = 0; m < n_ms; m++)
            metric_panel(pg, &rows, label, sweep, tasks[t], ms[m], o->threshold);
        for (size_t k = 0; k < sizeof curve_series / sizeof *curve_series && rc == LX_OK; k++)
            rc = series_panels(pg, s, &rows, label, sweep, tasks[t], curve_series[k], 0, err);
        for (size_t k = 0; k < sizeof heat_series / sizeof *heat_series && rc == LX_OK; k++)
            rc = series_panels(pg, s, &rows, label, sweep, tasks[t], heat_series[k], 1, err);
    }
    if (tagged)
        lx_buf_puts(&pg->html, "<p class=\"note\">[…]: one method name, cells of several configurations "
                               "(docs/results.md, \"One name, several configurations\").</p>\n");
    lx_buf_puts(&pg->html, "</section>\n");
    free(tasks);
    free(ms);
    lx_row_labels_free(label, rows.n);
    lx_rows_release(&rows);
    return rc;
}

static const char style[] =
    "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1500px}"
    "h2{border-bottom:2px solid #888;margin-top:2em}h3{margin-top:1.5em}"
    ".row{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}"
    "figure{margin:0}figure svg{display:block}"
    "table{border-collapse:collapse;font-size:13px;margin:0.5em 0}"
    "th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}"
    "td:first-child,.prov th{text-align:left}td.eff{font-weight:bold}"
    ".fail td{text-align:left;vertical-align:top}.fail pre{margin:0;padding:0.2em;white-space:pre-wrap}"
    "pre{background:#f4f4f4;padding:0.6em;font-size:12px;overflow:auto}";

/* Put each plot's SVG where its placeholder stands (stored strings reach the
** HTML through lx_esc_html, which writes no control byte: every \1 is ours). */
static void splice(const struct lx_buf *html, char **svg, int n, struct lx_buf *out)
{
    const char *p = lx_buf_str(html);
    for (const char *q; (q = strchr(p, '\1'));) {
        lx_buf_printf(out, "%.*s", (int)(q - p), p);
        int i = atoi(q + 1);
        LX_ASSERT(i >= 0 && i < n && strchr(q + 1, '\1'));
        lx_buf_puts(out, svg[i]);
        p = strchr(q + 1, '\1') + 1;
    }
    lx_buf_puts(out, p);
}

int lx_report(struct lx_store *s, const struct lx_report_opts *o, struct lx_buf *out, struct lx_report_tally *tally,
              struct lx_error *err)
{
    struct page pg = {0};
    struct lx_sweep_info *sw = NULL;
    int n_sw = 0, rc = LX_OK;
    if (o->n_sweeps == 0)
        rc = lx_store_sweeps(s, &sw, &n_sw, err);
    if (rc == LX_OK && o->n_sweeps == 0 && n_sw == 0)
        rc = lx_err(err, LX_EINVAL, "%s holds no sweep: nothing to report\n  hint: `lenx run CONFIG --db %s` stores "
                    "one; `lenx list sweeps --db FILE` shows what a store holds", o->db ? o->db : "the store",
                    o->db ? o->db : "FILE");
    lx_buf_printf(&pg.html, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<title>lenx report</title><style>%s</style></head><body>\n<h1>lenx report</h1>\n"
                  "<p>Store <code>", style);
    lx_esc_html(&pg.html, o->db ? o->db : "");
    lx_buf_printf(&pg.html, "</code>. Error bars: the 95 %% interval over seeds, or ± the stored standard error "
                  "with one seed (an accuracy's inside [0, 1]). Effective length: the longest length whose score "
                  "stays ≥ %g of the score at the training length (lower-is-better metrics: the ratio inverted; "
                  "docs/results.md#effective-length).</p>\n", o->threshold);
    int n = o->n_sweeps ? o->n_sweeps : n_sw;
    for (int i = 0; i < n && rc == LX_OK; i++)
        rc = sweep_section(&pg, s, o->n_sweeps ? o->sweeps[i] : sw[i].name, o, err);
    lx_buf_puts(&pg.html, "</body></html>\n");
    char **svg = lx_xcalloc((size_t)pg.n_plots + 1, sizeof *svg);
    if (rc == LX_OK)
        rc = lx_plot_svg(pg.plots, pg.n_plots, svg, err);
    if (rc == LX_OK)
        splice(&pg.html, svg, pg.n_plots, out);
    for (int i = 0; i < pg.n_plots; i++)
        free(svg[i]);
    for (int i = 0; i < pg.n_owned; i++)
        free(pg.owned[i]);
    free(svg);
    free(pg.owned);
    free(pg.plots);
    lx_buf_free(&pg.html);
    lx_sweep_infos_free(sw, n_sw);
    if (tally)
        *tally = pg.tally;
    return rc;
}
