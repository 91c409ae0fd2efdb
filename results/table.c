/*
** results/table.c - tables (md, latex) and tidy exports (csv, json) of rows.
** Rows of one method name from different configurations are never pooled:
** their labels are tagged apart (docs/results.md, "Tables").
*/
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/views.h"

int lx_format_parse(const char *s)
{
    static const char *names[] = {"md", "csv", "latex", "json"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

int lx_metric_matches(const char *list, const char *name)
{
    if (!list)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t w = strcspn(p, ",");
        if ((w == n && strncmp(p, name, w) == 0) || (w < n && strncmp(p, name, w) == 0 && name[w] == ':'))
            return 1;
        p += w;
        if (*p == ',')
            p++;
    }
    return 0;
}

static int is_se(const char *m)
{
    size_t n = strlen(m);
    return n > 3 && strcmp(m + n - 3, "_se") == 0;
}

/* Distinct strings in first-appearance order. */
struct strset {
    const char **v;
    int n, cap;
};

static int strset_add(struct strset *s, const char *x)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i], x) == 0)
            return i;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->v = lx_xrealloc(s->v, (size_t)s->cap * sizeof *s->v);
    }
    s->v[s->n] = x;
    return s->n++;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* The value text of one pivot cell: one seed ± its stored se; several
** pooled, [95 % interval] and their count. `label` holds each row's row
** label (its method, tagged when it needs telling apart). */
static int cell_text(const struct lx_rows *rows, char *const *label, const char *sweep, const char *task,
                     const char *method, long length, const char *metric, int latex, struct lx_buf *out)
{
    struct lx_cell_stat st;
    lx_cell_stat(rows, label, sweep, task, method, length, metric, &st);
    if (st.n == 0) {
        lx_buf_puts(out, latex ? "--" : "–");
        return 0;
    }
    lx_buf_printf(out, "%.4g", st.mean);
    if (st.n > 1 && !isnan(st.lo))
        lx_buf_printf(out, " [%.4g, %.4g]", st.lo, st.hi);
    else if (st.n == 1 && !isnan(st.spread))
        lx_buf_printf(out, latex ? " $\\pm$ %.2g" : " ± %.2g", st.spread);
    if (st.n > 1)
        lx_buf_printf(out, latex ? " (%d)" : " (n=%d)", st.n);
    return st.n;
}

static void pivot(const struct lx_rows *rows, char *const *label, const char *sweep, const char *task,
                  const char *metric, int latex, struct lx_buf *out)
{
    struct strset methods = {0};
    long *lengths = lx_xmalloc((size_t)rows->n * sizeof *lengths);
    int n_len = 0;
    for (int i = 0; i < rows->n; i++) {
        const struct lx_row *r = &rows->rows[i];
        if (strcmp(r->sweep, sweep) || strcmp(r->task, task) || strcmp(r->metric, metric))
            continue;
        strset_add(&methods, label[i]);
        int seen = 0;
        for (int j = 0; j < n_len; j++)
            seen |= lengths[j] == r->length;
        if (!seen)
            lengths[n_len++] = r->length;
    }
    qsort(lengths, (size_t)n_len, sizeof *lengths, cmp_long);
    if (latex) {
        lx_buf_puts(out, "% sweep ");
        lx_esc_latex(out, sweep);
        lx_buf_puts(out, ", task ");
        lx_esc_latex(out, task);
        lx_buf_puts(out, ", metric ");
        lx_esc_latex(out, metric);
        lx_buf_puts(out, "\n");
        lx_buf_puts(out, "\\begin{tabular}{l");
        for (int j = 0; j < n_len; j++)
            lx_buf_puts(out, "r");
        lx_buf_puts(out, "}\n\\toprule\nMethod");
        for (int j = 0; j < n_len; j++)
            lx_buf_printf(out, " & %ld", lengths[j]);
        lx_buf_puts(out, " \\\\\n\\midrule\n");
    } else {
        lx_buf_puts(out, "### ");
        lx_esc_md(out, sweep);
        lx_buf_puts(out, " · ");
        lx_esc_md(out, task);
        lx_buf_puts(out, " · ");
        lx_esc_md(out, metric);
        lx_buf_puts(out, "\n\n| method |");
        for (int j = 0; j < n_len; j++)
            lx_buf_printf(out, " %ld |", lengths[j]);
        lx_buf_puts(out, "\n|---|");
        for (int j = 0; j < n_len; j++)
            lx_buf_puts(out, "---:|");
        lx_buf_puts(out, "\n");
    }
    int pooled = 0;
    for (int m = 0; m < methods.n; m++) {
        lx_buf_puts(out, latex ? "" : "| ");
        (latex ? lx_esc_latex : lx_esc_md)(out, methods.v[m]);
        lx_buf_puts(out, latex ? "" : " |");
        for (int j = 0; j < n_len; j++) {
            lx_buf_puts(out, latex ? " & " : " ");
            pooled |= cell_text(rows, label, sweep, task, methods.v[m], lengths[j], metric, latex, out) > 1;
            lx_buf_puts(out, latex ? "" : " |");
        }
        lx_buf_puts(out, latex ? " \\\\\n" : "\n");
    }
    lx_buf_puts(out, latex ? "\\bottomrule\n\\end{tabular}\n" : "");
    if (pooled)
        lx_buf_puts(out, latex ? "% [lo, hi] (k): the 95 % interval of the mean over k seeds\n"
                               : "\n[lo, hi] (n=k): the 95 % interval of the mean over k seeds\n");
    lx_buf_puts(out, "\n");
    free(methods.v);
    free(lengths);
}

/* Which configuration a row comes from: its config hash, else (rows read
** from CSV) its model key. */
static const char *variant(const struct lx_row *r)
{
    return r->config[0] || !r->model_key ? r->config : r->model_key;
}

static const struct lx_row *sort_rows;     /* qsort has no context argument */

/* Order row indices by (sweep, task, method, variant): rows of one label adjacent. */
static int cmp_label(const void *a, const void *b)
{
    const struct lx_row *x = &sort_rows[*(const int *)a], *y = &sort_rows[*(const int *)b];
    int c = strcmp(x->sweep, y->sweep);
    c = c ? c : strcmp(x->task, y->task);
    c = c ? c : strcmp(x->method, y->method);
    return c ? c : strcmp(variant(x), variant(y));
}

static int same_label(const struct lx_row *x, const struct lx_row *y)
{
    return !strcmp(x->sweep, y->sweep) && !strcmp(x->task, y->task) && !strcmp(x->method, y->method);
}

/* Does each variant of the group idx[lo, hi) (sorted by variant) have a
** model key of its own, one for all its rows and no other variant's? */
static int model_keys_tell_apart(const struct lx_rows *rows, const int *idx, int lo, int hi)
{
    for (int k = lo; k < hi; k++) {
        const struct lx_row *r = &rows->rows[idx[k]];
        if (!r->model_key || !r->model_key[0])
            return 0;
        for (int j = lo; j < k; j++) {
            const struct lx_row *q = &rows->rows[idx[j]];
            if ((strcmp(variant(q), variant(r)) == 0) != (strcmp(q->model_key, r->model_key) == 0))
                return 0;
        }
    }
    return 1;
}

/* Label the rows of one (sweep, task, method) group idx[lo, hi): the method
** alone when every row comes from one configuration; otherwise each variant
** tagged with its model key prefix when the model keys tell the variants
** apart (one model per variant: a single seed), else with "config" and its
** configuration hash prefix. */
static void label_group(const struct lx_rows *rows, const int *idx, int lo, int hi, char **label)
{
    int one = strcmp(variant(&rows->rows[idx[lo]]), variant(&rows->rows[idx[hi - 1]])) == 0;
    int by_model = !one && model_keys_tell_apart(rows, idx, lo, hi);
    for (int k = lo; k < hi; k++) {
        const struct lx_row *r = &rows->rows[idx[k]];
        struct lx_buf b = {0};
        if (one)
            lx_buf_puts(&b, r->method);
        else if (by_model)
            lx_buf_printf(&b, "%s [%.8s]", r->method, r->model_key);
        else
            lx_buf_printf(&b, "%s [config %.8s]", r->method, variant(r));
        label[idx[k]] = b.s;
    }
}

/* Order row indices by (sweep, task, configuration, length). */
static int cmp_config(const void *a, const void *b)
{
    const struct lx_row *x = &sort_rows[*(const int *)a], *y = &sort_rows[*(const int *)b];
    int c = strcmp(x->sweep, y->sweep);
    c = c ? c : strcmp(x->task, y->task);
    c = c ? c : strcmp(x->config, y->config);
    return c ? c : (x->length > y->length) - (x->length < y->length);
}

/* One label for the labels lab[0..n) (distinct, in length order): their
** common prefix and suffix (cut at value boundaries, so 1 and 12 stay whole)
** around the differing middles joined by ';'. */
static char *merged_label(const char *const *lab, int n)
{
    size_t pre = strlen(lab[0]), suf = pre;
    for (int k = 1; k < n; k++) {
        size_t len = strlen(lab[k]), p = 0, s = 0;
        while (p < pre && p < len && lab[k][p] == lab[0][p])
            p++;
        while (s < suf && s < len && lab[k][len - 1 - s] == lab[0][strlen(lab[0]) - 1 - s])
            s++;
        pre = p, suf = s;
    }
    size_t len0 = strlen(lab[0]);
    while (pre > 0 && (isalnum((unsigned char)lab[0][pre - 1]) || strchr(".-+", lab[0][pre - 1])))
        pre--;
    while (suf > 0 && (isalnum((unsigned char)lab[0][len0 - suf]) || strchr(".-+", lab[0][len0 - suf])))
        suf--;
    struct lx_buf b = {0};
    lx_buf_printf(&b, "%.*s", (int)pre, lab[0]);
    for (int k = 0; k < n; k++) {
        size_t len = strlen(lab[k]), s = suf < len - pre ? suf : len - pre;
        lx_buf_printf(&b, "%s%.*s", k ? ";" : "", (int)(len - pre - s), lab[k] + pre);
    }
    lx_buf_puts(&b, lab[0] + len0 - (suf < len0 - pre ? suf : len0 - pre));
    return b.s;
}

/* Cells of one configuration (same run key but length and seed) whose labels
** differ only by automatic values resolved per length — rope+yarn(scale=1)
** at the training length, rope+yarn(scale=64) at 64x — share one pivot row,
** "rope+yarn(scale=1;64)", the values in length order. The method strings
** are merged, then the configuration's tag (label_group's, which a method
** string shared with another configuration at some length gets) follows. */
static void merge_resolved(const struct lx_rows *rows, char **label)
{
    int *idx = lx_xmalloc((size_t)(rows->n ? rows->n : 1) * sizeof *idx);
    const char **lab = lx_xmalloc((size_t)(rows->n ? rows->n : 1) * sizeof *lab);
    for (int i = 0; i < rows->n; i++)
        idx[i] = i;
    sort_rows = rows->rows;
    qsort(idx, (size_t)rows->n, sizeof *idx, cmp_config);
    for (int lo = 0, hi; lo < rows->n; lo = hi) {
        const struct lx_row *r = &rows->rows[idx[lo]];
        for (hi = lo + 1; hi < rows->n && r->config[0] && !strcmp(rows->rows[idx[hi]].config, r->config) &&
             !strcmp(rows->rows[idx[hi]].task, r->task) && !strcmp(rows->rows[idx[hi]].sweep, r->sweep); hi++)
            ;
        int n = 0;
        const char *tag = "";
        for (int k = lo; k < hi; k++) {
            const char *method = rows->rows[idx[k]].method;
            int seen = 0;
            for (int j = 0; j < n && !seen; j++)
                seen = strcmp(lab[j], method) == 0;
            if (!seen)
                lab[n++] = method;
            if (strlen(label[idx[k]]) > strlen(method))
                tag = label[idx[k]] + strlen(method);     /* " [config …]" or " [<model key>]" */
        }
        if (n < 2)
            continue;
        char *m = merged_label(lab, n);
        struct lx_buf b = {0};
        lx_buf_printf(&b, "%s%s", m, tag);
        for (int k = lo; k < hi; k++) {
            free(label[idx[k]]);
            label[idx[k]] = lx_xstrdup(lx_buf_str(&b));
        }
        lx_buf_free(&b);
        free(m);
    }
    free(lab);
    free(idx);
}

/* Row labels of every row, before merge_resolved. */
static char **make_labels(const struct lx_rows *rows, int *tagged)
{
    int *idx = lx_xmalloc((size_t)(rows->n ? rows->n : 1) * sizeof *idx);
    char **label = lx_xcalloc((size_t)(rows->n ? rows->n : 1), sizeof *label);
    for (int i = 0; i < rows->n; i++)
        idx[i] = i;
    sort_rows = rows->rows;
    qsort(idx, (size_t)rows->n, sizeof *idx, cmp_label);
    *tagged = 0;
    for (int lo = 0, hi; lo < rows->n; lo = hi) {
        for (hi = lo + 1; hi < rows->n && same_label(&rows->rows[idx[lo]], &rows->rows[idx[hi]]); hi++)
            ;
        label_group(rows, idx, lo, hi, label);
        *tagged |= strcmp(label[idx[lo]], rows->rows[idx[lo]].method) != 0;
    }
    free(idx);
    return label;
}

char **lx_row_labels(const struct lx_rows *rows, int *tagged)
{
    char **label = make_labels(rows, tagged);
    merge_resolved(rows, label);
    return label;
}

void lx_row_labels_free(char **label, int n)
{
    for (int i = 0; label && i < n; i++)
        free(label[i]);
    free(label);
}

static void render_pivots(const struct lx_rows *rows, const char *metrics, int latex, struct lx_buf *out)
{
    int tagged;
    char **label = lx_row_labels(rows, &tagged);
    struct strset sweeps = {0};
    for (int i = 0; i < rows->n; i++)
        strset_add(&sweeps, rows->rows[i].sweep);
    for (int s = 0; s < sweeps.n; s++) {
        struct strset tasks = {0};
        for (int i = 0; i < rows->n; i++)
            if (strcmp(rows->rows[i].sweep, sweeps.v[s]) == 0)
                strset_add(&tasks, rows->rows[i].task);
        for (int t = 0; t < tasks.n; t++) {
            struct strset ms = {0};
            for (int i = 0; i < rows->n; i++) {
                const struct lx_row *r = &rows->rows[i];
                if (!strcmp(r->sweep, sweeps.v[s]) && !strcmp(r->task, tasks.v[t]) && !is_se(r->metric) &&
                    lx_metric_matches(metrics, r->metric))
                    strset_add(&ms, r->metric);
            }
            for (int m = 0; m < ms.n; m++)
                pivot(rows, label, sweeps.v[s], tasks.v[t], ms.v[m], latex, out);
            free(ms.v);
        }
        free(tasks.v);
    }
    free(sweeps.v);
    if (tagged && !latex)
        lx_buf_puts(out, "[…]: one method name, cells of several configurations (a model retrained under the "
                         "same name, or changed settings): the model key prefix, or a configuration hash. "
                         "`lenx rm --not-in CONFIG` removes cells a config no longer plans.\n");
    lx_row_labels_free(label, rows->n);
}

void lx_render(const struct lx_rows *rows, enum lx_format fmt, const char *metrics, struct lx_buf *out)
{
    if (fmt == LX_FMT_MD || fmt == LX_FMT_LATEX) {
        render_pivots(rows, metrics, fmt == LX_FMT_LATEX, out);
        return;
    }
    if (fmt == LX_FMT_CSV)
        lx_buf_puts(out, "sweep,method,task,length,seed,metric,value,model_key,key\n");
    else
        lx_buf_puts(out, "[");
    int first = 1;
    for (int i = 0; i < rows->n; i++) {
        const struct lx_row *r = &rows->rows[i];
        if (!lx_metric_matches(metrics, r->metric))
            continue;
        char v[32];
        lx_fmt_num(v, r->value);
        if (fmt == LX_FMT_CSV) {
            lx_esc_csv(out, r->sweep);
            lx_buf_puts(out, ",");
            lx_esc_csv(out, r->method);
            lx_buf_puts(out, ",");
            lx_esc_csv(out, r->task);
            lx_buf_printf(out, ",%ld,%ld,", r->length, r->seed);
            lx_esc_csv(out, r->metric);
            lx_buf_printf(out, ",%s,", v);
            lx_esc_csv(out, r->model_key ? r->model_key : "");
            lx_buf_puts(out, ",");
            lx_esc_csv(out, r->key);
            lx_buf_puts(out, "\n");
            continue;
        }
        lx_buf_puts(out, first ? "\n  {\"sweep\": " : ",\n  {\"sweep\": ");
        lx_buf_json_str(out, r->sweep);
        lx_buf_puts(out, ", \"method\": ");
        lx_buf_json_str(out, r->method);
        lx_buf_puts(out, ", \"task\": ");
        lx_buf_json_str(out, r->task);
        lx_buf_printf(out, ", \"length\": %ld, \"seed\": %ld, \"metric\": ", r->length, r->seed);
        lx_buf_json_str(out, r->metric);
        lx_buf_puts(out, ", \"value\": ");
        lx_buf_num(out, r->value);
        lx_buf_puts(out, ", \"model_key\": ");
        if (r->model_key && r->model_key[0])
            lx_buf_json_str(out, r->model_key);
        else
            lx_buf_puts(out, "null");
        lx_buf_puts(out, ", \"key\": ");
        if (r->key[0])
            lx_buf_json_str(out, r->key);
        else
            lx_buf_puts(out, "null");
        lx_buf_puts(out, "}");
        first = 0;
    }
    if (fmt == LX_FMT_JSON)
        lx_buf_puts(out, first ? "]\n" : "\n]\n");
}

void lx_render_series(const struct lx_rows *rows, enum lx_format fmt, struct lx_buf *out)
{
    int csv = fmt != LX_FMT_JSON;
    lx_buf_puts(out, csv ? "sweep,method,task,length,seed,series,x,y,model_key,key\n" : "[");
    for (int i = 0; i < rows->n; i++) {
        const struct lx_row *r = &rows->rows[i];
        const char *text[] = {r->sweep, r->method, r->task};
        static const char *const names[] = {"sweep", "method", "task"};
        for (int k = 0; k < 3; k++) {
            if (csv) {
                lx_esc_csv(out, text[k]);
                lx_buf_puts(out, ",");
            } else {
                lx_buf_printf(out, "%s\"%s\": ", k ? ", " : i ? ",\n  {" : "\n  {", names[k]);
                lx_buf_json_str(out, text[k]);
            }
        }
        lx_buf_printf(out, csv ? "%ld,%ld," : ", \"length\": %ld, \"seed\": %ld, \"series\": ", r->length, r->seed);
        if (csv)
            lx_esc_csv(out, r->metric);
        else
            lx_buf_json_str(out, r->metric);
        char x[32], y[32];
        lx_fmt_num(x, r->x);
        lx_fmt_num(y, r->value);
        if (csv)
            lx_buf_printf(out, ",%s,%s,", x, y);
        else {
            lx_buf_puts(out, ", \"x\": ");
            lx_buf_num(out, r->x);
            lx_buf_puts(out, ", \"y\": ");
            lx_buf_num(out, r->value);
        }
        lx_buf_puts(out, csv ? "" : ", \"model_key\": ");
        if (csv)
            lx_esc_csv(out, r->model_key ? r->model_key : "");
        else if (r->model_key && r->model_key[0])
            lx_buf_json_str(out, r->model_key);
        else
            lx_buf_puts(out, "null");
        lx_buf_puts(out, csv ? "," : ", \"key\": ");
        if (csv)
            lx_esc_csv(out, r->key);
        else
            lx_buf_json_str(out, r->key);
        lx_buf_puts(out, csv ? "\n" : "}");
    }
    if (!csv)
        lx_buf_puts(out, rows->n ? "\n]\n" : "]\n");
}
