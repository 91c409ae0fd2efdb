/*
** harness/commands/stored.c - the commands on stored results: `lenx table`, `lenx
** compare`, `lenx report`, `lenx list`, `lenx rm` (list, then delete chosen
** cells) and `lenx show sweep` (the YAML a sweep's cells came from), over
** the views of results/; and the checks every view makes (a --sweep or
** --metric that names nothing is bad input, listed with the closest name).
** docs/results.md describes them.
*/
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/cli.h"
#include "harness/sweep/registry.h"
#include "harness/commands/stored.h"

/* Open the store read-only for a view; say so on stderr when the open has a
** caveat (an immutable read beside a -wal file). */
int lx_stored_open(struct lx_store **store, const char *db, struct lx_error *err)
{
    int rc = lx_store_open(store, db ? db : LX_DEFAULT_DB, 1, err);
    if (rc == LX_OK && lx_store_note(*store))
        lx_term_printf(stderr, "lenx: warning: %s\n", lx_store_note(*store));
    return rc;
}

/* "did you mean 'X'? " for the closest of names, or "". */
void lx_stored_closest(struct lx_buf *b, const char *s, const char *const *names, int n)
{
    const char *near = lx_closest(s, names, n);
    if (near)
        lx_buf_printf(b, "did you mean '%s'? ", near);
}

/* A --sweep that names no stored sweep is bad input: the error lists the
** sweeps, the closest first as a hint. NULL passes. "A+B" (sweeps pooled,
** lx_store_select_pooled): each name is checked. */
int lx_stored_check_sweep(struct lx_store *store, const char *db, const char *sweep, struct lx_error *err)
{
    struct lx_sweep_info *sw;
    int n, found = 0;
    if (!sweep)
        return LX_OK;
    if (strchr(sweep, '+')) {
        int rc = LX_OK;
        char one[256];
        for (const char *p = sweep; rc == LX_OK && *p;)
            rc = lx_sweep_next(&p, one, sizeof one) ? lx_stored_check_sweep(store, db, one, err)
                 : lx_err(err, LX_EINVAL, "--sweep '%s': an empty or overlong name\n  hint: --sweep A+B pools "
                          "sweeps A and B as one", sweep);
        return rc;
    }
    int rc = lx_store_sweeps(store, &sw, &n, err);
    if (rc < 0)
        return rc;
    const char **names = lx_xcalloc((size_t)n + 1, sizeof *names);
    struct lx_buf list = {0}, hint = {0};
    for (int i = 0; i < n; i++) {
        names[i] = sw[i].name;
        found |= strcmp(sw[i].name, sweep) == 0;
        lx_buf_printf(&list, "%s%s", i ? ", " : "", sw[i].name);
    }
    lx_stored_closest(&hint, sweep, names, n);
    if (!found)
        rc = lx_err(err, LX_EINVAL, "no sweep '%s' in %s (its sweeps: %s)\n  hint: %s`lenx list sweeps` lists them",
                    sweep, db ? db : LX_DEFAULT_DB, n ? lx_buf_str(&list) : "none", lx_buf_str(&hint));
    lx_buf_free(&list);
    lx_buf_free(&hint);
    free(names);
    lx_sweep_infos_free(sw, n);
    return rc;
}

/* Every word of a --metric list must name a metric of the rows (or its
** ranged forms): the error lists the metrics there, the closest as a hint. */
int lx_stored_check_metrics(const struct lx_rows *rows, const char *metrics, struct lx_error *err)
{
    const char **names = lx_xcalloc((size_t)rows->n + 1, sizeof *names);
    int n = 0, rc = LX_OK;
    for (int i = 0; i < rows->n; i++) {
        int seen = 0;
        for (int j = n - 1; j >= 0 && !seen; j--)
            seen = strcmp(names[j], rows->rows[i].metric) == 0;
        if (!seen)
            names[n++] = rows->rows[i].metric;
    }
    for (const char *p = metrics; rc == LX_OK && p;) {     /* every word, '' too (it printed an empty table) */
        size_t w = strcspn(p, ",");
        char word[256];
        snprintf(word, sizeof word, "%.*s", (int)w, p);
        int found = 0;
        for (int j = 0; j < n && !found; j++)
            found = lx_metric_matches(word, names[j]);
        if (!found) {
            struct lx_buf list = {0}, hint = {0};
            for (int j = 0; j < n; j++)
                lx_buf_printf(&list, "%s%s", j ? ", " : "", names[j]);
            lx_stored_closest(&hint, word, names, n);
            rc = lx_err(err, LX_EINVAL, "no metric '%s' in the results selected\n  hint: %s--metric takes a "
                        "comma-separated list of: %s", word, lx_buf_str(&hint), lx_buf_str(&list));
            lx_buf_free(&list);
            lx_buf_free(&hint);
        }
        p = p[w] == ',' ? p + w + 1 : NULL;
    }
    free(names);
    return rc;
}

/* lx_stored_check_sweep for a command of one sweep (show sweep, rm): "A+B",
** which pools sweeps only where results are read, is refused. */
static int check_one_sweep(struct lx_store *store, const char *db, const char *sweep, const char *cmd,
                           struct lx_error *err)
{
    if (sweep && strchr(sweep, '+'))
        return lx_err(err, LX_EINVAL, "%s takes one sweep, not the pooled '%s'\n  hint: name each sweep in its own "
                      "command; A+B pools sweeps in lenx table, compare and report", cmd, sweep);
    return lx_stored_check_sweep(store, db, sweep, err);
}

/* Provenance: the YAML texts a stored sweep's cells were made from. */
int lx_stored_show_sweep(const char *sweep, const char *db, struct lx_error *err)
{
    struct lx_store *store;
    int rc = lx_stored_open(&store, db, err);
    if (rc < 0)
        return rc;
    struct lx_sweep_config *v = NULL;
    int n = 0;
    rc = check_one_sweep(store, db, sweep, "show sweep", err);
    if (rc == LX_OK)
        rc = lx_store_sweep_configs(store, sweep, &v, &n, err);
    lx_store_close(store);
    for (int i = 0; rc == LX_OK && i < n; i++) {
        lx_term_printf(stdout, "%s# sweep %s: %d cells from %s%s, %s ... %s, newest at commit %.12s\n", i ? "\n" : "",
                       sweep, v[i].n_cells, v[i].path, i ? " (an older text)" : "", v[i].first, v[i].last,
                       v[i].commits[0].name);
        for (int k = 0; v[i].n_commits > 1 && k < v[i].n_commits; k++)
            lx_term_printf(stdout, "#   commit %.12s%s: %d cell%s\n", v[i].commits[k].name,
                           v[i].commits[k].dirty ? " (dirty)" : "", v[i].commits[k].n,
                           v[i].commits[k].n == 1 ? "" : "s");
        for (int k = 0; k < v[i].n_machines; k++)   /* where the arithmetic was done: it decides the last bits */
            lx_term_printf(stdout, "#   machine %s, %d threads, %s, numerics %s: %d cell%s\n", v[i].machines[k].name,
                           v[i].machines[k].threads, v[i].machines[k].blas, v[i].machines[k].numerics,
                           v[i].machines[k].n, v[i].machines[k].n == 1 ? "" : "s");
        if (v[i].text)
            lx_term_printf(stdout, "%s", v[i].text);
        else
            printf("# (stored before lenx kept the sweep's YAML text)\n");
        if (v[i].text && v[i].text[0] && v[i].text[strlen(v[i].text) - 1] != '\n')
            printf("\n");
    }
    lx_sweep_configs_free(v, n);
    return rc;
}

/* The run keys of a plan as a JSON array, with those of the same grid in
** the other numerics modes: the mode is a run setting (`lenx run --portable`),
** not a change of the config, so cells run in any of them are not stale. */
static char *plan_keys_json(const struct lx_plan *plan)
{
    struct lx_buf b = {0};
    lx_buf_puts(&b, "[");
    for (int i = 0; i < plan->n_cells; i++)
        lx_buf_printf(&b, "%s\"%s\"", i ? "," : "", plan->cells[i].key);
    for (int nm = 0; nm < LX_NUMERICS_N; nm++) {
        struct lx_grid other = *plan->grid;     /* shallow: only numerics differs, and the plan only reads it */
        struct lx_plan alt = {0};
        struct lx_error err;
        other.numerics = (enum lx_numerics)nm;
        if (nm == (int)plan->grid->numerics || lx_plan_build(&alt, &other, &err) < 0)
            continue;
        for (int i = 0; i < alt.n_cells; i++)
            lx_buf_printf(&b, ",\"%s\"", alt.cells[i].key);
        lx_plan_release(&alt);
    }
    lx_buf_puts(&b, "]");
    return b.s;
}

/* --not-in CONFIG: the config's sweep name and a JSON array of its planned run keys. */
static int planned_keys(const char *config, char **sweep, char **keys_json, struct lx_error *err)
{
    struct lx_grid grid;
    struct lx_plan plan = {0};
    int rc = lx_grid_load(&grid, config, err);
    if (rc < 0)
        return rc;
    rc = lx_plan_build(&plan, &grid, err);
    if (rc == LX_OK) {
        *keys_json = plan_keys_json(&plan);
        *sweep = lx_xstrdup(grid.name);
    }
    lx_plan_release(&plan);
    lx_grid_release(&grid);
    return rc;
}

/* Print the cells a filter selects, then their count per sweep. */
static void print_cells(const struct lx_cell_info *v, int n)
{
    for (int i = 0; i < n; i++) {
        lx_term_printf(stdout, "  %s  %s  %-6s  %s  %s  length=%ld seed=%ld", v[i].sweep, v[i].key, v[i].status,
                       v[i].method, v[i].task, v[i].length, v[i].seed);
        if (v[i].model[0])
            lx_term_printf(stdout, "  model=%s [%.8s]", v[i].model, v[i].model_key);
        printf("  commit %.10s\n", v[i].commit);
    }
    for (int i = 0; i < n; i++) {
        int first = 1, k = 0;
        for (int j = 0; j < i && first; j++)
            first = strcmp(v[j].sweep, v[i].sweep) != 0;
        for (int j = i; j < n && first; j++)
            k += strcmp(v[j].sweep, v[i].sweep) == 0;
        if (first)
            lx_term_printf(stdout, "%s: %d cells\n", v[i].sweep, k);
    }
}

/* Whether the method label `lenx table` shows names the stored stack m: m itself, or one of the stacks it
** merges (one configuration whose automatic values differ by length, "rope+pi(scale=2;4;8)": results/table.c's
** merged_label undone): m is the label around one place, cut at value boundaries, whose value is one of its. */
static int label_names(const char *label, const char *m)
{
    size_t nl = strlen(label), nm = strlen(m), p = 0, s = 0;
    while (p < nl && p < nm && label[p] == m[p])
        p++;
    while (s < nl - p && s < nm - p && label[nl - 1 - s] == m[nm - 1 - s])
        s++;
    while (p > 0 && (isalnum((unsigned char)m[p - 1]) || strchr(".-+", m[p - 1])))
        p--;
    while (s > 0 && (isalnum((unsigned char)m[nm - s]) || strchr(".-+", m[nm - s])))
        s--;
    for (const char *v = label + p, *end = label + nl - s; v <= end;) {
        const char *semi = memchr(v, ';', (size_t)(end - v));
        size_t len = (size_t)((semi ? semi : end) - v);
        if (len == nm - p - s && !strncmp(v, m + p, len))
            return 1;
        v = semi ? semi + 1 : end + 1;
    }
    return 0;
}

static void strv_free(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* The hint of a --method or --task (col) naming no stored cell, with the nearest stored one. */
static int no_stored(const char *col, const char *given, const char *near, struct lx_error *err)
{
    return lx_err(err, LX_EINVAL, "rm --%s '%s': no stored cell has it\n  hint: %s%s%sthe %s as `lenx table` "
                  "shows it%s", col, given, LX_DID_YOU_MEAN(near), col,
                  col[0] == 'm' ? " (its canonical stack, or its row's label)"
                                : " (its canonical string, or its name)");
}

/* rm --task naming nothing stored (its canonical string or its name): an error, as a --sweep's is, with the
** nearest stored one; a typo matched nothing and exited 0. */
static int check_stored_task(struct lx_store *store, const char *given, struct lx_error *err)
{
    char **v = NULL;
    int n = 0, found = 0;
    int rc = given ? lx_store_distinct(store, "task", &v, &n, err) : LX_OK;
    for (int i = 0; rc == LX_OK && i < n && !found; i++) {
        size_t name = strcspn(v[i], "(");   /* a task's name stands for it */
        found = !strcmp(v[i], given) || (strlen(given) == name && !strncmp(v[i], given, name));
    }
    const char *near = given && n ? lx_closest(given, (const char *const *)v, n) : NULL;
    if (rc == LX_OK && given && !found)
        rc = no_stored("task", given, near, err);
    strv_free(v, n);
    return rc;
}

/* rm --method: its canonical stack, or the row label `lenx table` shows (the stacks it merges, and " @MODEL":
** that model's cells), into f->methods (a JSON array in *json) and f->model; naming nothing stored is an error
** with the nearest stored stack. The table's label was refused, and its nearest stack picked one length. */
static int resolve_method(struct lx_store *store, struct lx_rm_filter *f, struct lx_buf *json, struct lx_error *err)
{
    char **v = NULL, **models = NULL;
    int n = 0, n_models = 0, exact = 0, k = 0;
    int rc = lx_store_distinct(store, "method", &v, &n, err);
    const char *at = NULL, *given = f->method;
    for (int i = 0; i < n; i++)
        exact |= !strcmp(v[i], given);
    for (const char *p = strstr(given, " @"); p && !exact; p = strstr(p + 1, " @"))
        at = p;
    struct lx_buf label = {0};
    lx_buf_printf(&label, "%.*s", (int)(at ? at - given : (ptrdiff_t)strlen(given)), given);
    if (rc == LX_OK && at && f->model && strcmp(f->model, at + 2) != 0)
        rc = lx_err(err, LX_EINVAL, "rm --method '%s' names model '%s', --model another ('%s')\n  hint: give "
                    "the model once", given, at + 2, f->model);
    if (rc == LX_OK && at)
        rc = lx_store_distinct(store, "model", &models, &n_models, err);
    for (int i = 0; rc == LX_OK && at && i <= n_models; i++)
        if (i == n_models)
            rc = no_stored("method", given, NULL, err);
        else if (!strcmp(models[i], at + 2))
            break;
    lx_buf_puts(json, "[");
    for (int i = 0; rc == LX_OK && i < n; i++)
        if (label_names(lx_buf_str(&label), v[i])) {
            lx_buf_puts(json, k++ ? "," : "");
            lx_buf_json_str(json, v[i]);
        }
    lx_buf_puts(json, "]");
    int pieces = 1;     /* a label names its stacks only if it names them all: rope+pi(scale=2;3) names none */
    for (const char *c = lx_buf_str(&label); *c; c++)
        pieces += *c == ';';
    const char *near = n ? lx_closest(lx_buf_str(&label), (const char *const *)v, n) : NULL;
    if (rc == LX_OK && (k == 0 || (!exact && k != pieces)))
        rc = no_stored("method", given, near, err);
    f->methods = lx_buf_str(json);
    f->model = at ? at + 2 : f->model;
    lx_buf_free(&label);
    strv_free(v, n);
    strv_free(models, n_models);
    return rc;
}

/* List, then (with --yes) delete, the cells f selects. */
static int rm_cells(const char *db, const struct lx_rm_filter *filter, int yes, struct lx_error *err)
{
    struct lx_rm_filter g = *filter, *f = &g;
    struct lx_buf methods = {0};
    struct lx_store *store;
    int rc = lx_stored_open(&store, db, err);     /* read-only first: a mistyped --db is an error, not a new file */
    if (rc == LX_OK && yes) {
        lx_store_close(store);
        rc = lx_store_open(&store, db, 0, err);
    }
    if (rc < 0)
        return rc;
    struct lx_cell_info *cells = NULL;
    int n = 0;
    rc = check_one_sweep(store, db, f->sweep, "rm --sweep", err);
    if (rc == LX_OK && f->method)
        rc = resolve_method(store, f, &methods, err);
    if (rc == LX_OK)
        rc = check_stored_task(store, f->task, err);
    if (rc == LX_OK)    /* with --yes, listed and deleted in one transaction, then printed */
        rc = lx_store_rm(store, f, yes, &cells, &n, err);
    if (rc == LX_OK && n == 0)
        printf("no stored cell matches\n");
    else if (rc == LX_OK)
        print_cells(cells, n);
    if (rc == LX_OK && n)
        printf(yes ? "deleted %d cells, with their metrics, series and outputs\n" : "%d cells would be deleted, "
               "with their metrics, series and outputs; run again with --yes to delete them\n", n);
    lx_cell_infos_free(cells, n);
    lx_store_close(store);
    lx_buf_free(&methods);
    return rc;
}

/* Everything `lenx rm` does after parsing: with `config`, the sweep and run
** keys of its plan restrict f (a --sweep that names another sweep is an
** error); then list, and with `yes` delete. */
int lx_stored_rm(const char *db, const struct lx_rm_filter *filter, const char *config, int yes,
                 struct lx_error *err)
{
    struct lx_rm_filter f = *filter;
    char *sweep = NULL, *keys = NULL;
    int rc = config ? planned_keys(config, &sweep, &keys, err) : LX_OK;
    if (rc == LX_OK && config && f.sweep && strcmp(f.sweep, sweep) != 0)
        rc = lx_err(err, LX_EINVAL, "--sweep %s and --not-in %s (sweep '%s') name different sweeps\n"
                    "  hint: drop --sweep; --not-in works on its config's sweep", f.sweep, config, sweep);
    if (config) {
        f.sweep = sweep;
        f.not_in = keys;
    }
    if (rc == LX_OK)
        rc = rm_cells(db, &f, yes, err);
    free(sweep);
    free(keys);
    return rc;
}

void lx_stored_note_stale(const char *db, const struct lx_plan *plan, const char *config)
{
    struct lx_store *store;
    struct lx_error err;
    if (lx_store_open(&store, db, 1, &err) < 0)
        return;
    char *keys = plan_keys_json(plan);
    struct lx_rm_filter f = {.sweep = plan->grid->name, .not_in = keys};
    struct lx_cell_info *cells = NULL;
    int n = 0;
    if (lx_store_rm(store, &f, 0, &cells, &n, &err) == LX_OK && n > 0)
        lx_term_printf(stderr,
                       "lenx: note: sweep '%s' also holds %d cells that %s no longer plans (an earlier "
                       "version of it); tables show them apart\n  hint: `lenx rm --not-in %s --db %s` lists them, "
                       "add --yes to delete them\n",
                       plan->grid->name, n, config, config, db);
    lx_cell_infos_free(cells, n);
    free(keys);
    lx_store_close(store);
}

/* ---------------------------------------------------------------- table */

#define LX_SERIES_HINT "the tasks store nll_by_pos (ppl), acc_by_depth, logprob_by_depth, entropy_by_depth " \
                       "(retrieval tasks), mass_by_distance and mass_by_distance_train (attn)"

static const struct lx_opt table_opts[] = {
    {"db", 1, "result database (default " LX_DEFAULT_DB ")"},
    {"sweep", 1, "only this sweep; A+B: sweeps A and B pooled as one (a cell stored in both counts once)"},
    {"commit", 1, "only rows made by this commit (prefix)"},
    {"metric", 1, "metrics to show, comma-separated (range_mass also matches range_mass:10-100)"},
    {"format", 1, "md (default), csv, latex or json"},
    {"series", 1, "print this stored series instead (nll_by_pos, acc_by_depth, ...): tidy csv or json"},
};

static const char table_usage[] =
    "usage: lenx table [options]\n\n"
    "Print stored results. md and latex pivot methods (rows) x lengths (columns), one\n"
    "table per sweep, task and metric; csv and json are tidy, one record per cell and\n"
    "metric (CSV header: sweep,method,task,length,seed,metric,value,model_key,key). The\n"
    "newest ok row of each cell is used. --series NAME prints a stored curve instead, one\n"
    "record per point (sweep,method,task,length,seed,series,x,y,model_key,key).";

/* No ok row to show: said on stderr, with the cells that failed and where to see them (it said nothing of
** them; the run printed each, but a table is read later). */
static void say_nothing_ok(struct lx_store *store, const char *sweep)
{
    long n = 0;
    struct lx_error err;
    if (lx_store_n_failures(store, sweep, &n, &err) < 0)
        n = 0;
    fprintf(stderr, "lenx: no ok results stored%s%s", sweep ? " in sweep " : "", sweep ? sweep : "");
    if (n)
        fprintf(stderr, "; %ld cell%s failed\n  hint: lenx report lists them with their errors; lenx run reruns "
                "them", n, n == 1 ? "" : "s");
    fputc('\n', stderr);
}

int lx_cmd_table(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int rc = lx_cli_args(&a, table_opts, LX_N_OPTS(table_opts), table_usage, argc, argv);
    if (rc >= 0)
        return rc;
    if (a.n_pos) {
        fprintf(stderr, "lenx: error: unexpected argument '%s'\n  hint: use --sweep NAME\n", a.pos[0]);
        return 2;
    }
    const char *fmt_s = lx_args_value(&a, "format");
    int fmt = fmt_s ? lx_format_parse(fmt_s) : LX_FMT_MD;
    if (fmt < 0) {
        fprintf(stderr, "lenx: error: unknown format '%s'\n  hint: md, csv, latex or json\n", fmt_s);
        return 2;
    }
    const char *db = lx_args_value(&a, "db");
    const char *metrics = lx_args_value(&a, "metric");
    const char *series = lx_args_value(&a, "series");
    if (series && (fmt == LX_FMT_MD || fmt == LX_FMT_LATEX || metrics)) {
        fprintf(stderr, "lenx: error: --series prints tidy records: it takes --format csv or json, and no --metric\n"
                "  hint: lenx table --series nll_by_pos --format csv\n");
        return 2;
    }
    struct lx_store *store;
    if ((rc = lx_stored_open(&store, db, &err)) < 0)
        return lx_cli_fail(&err, rc);
    struct lx_rows rows = {0};
    struct lx_filter f = {
        .sweep = lx_args_value(&a, "sweep"),
        .commit = lx_args_value(&a, "commit"),
        .series = series,
    };
    int has_commit = 1;
    rc = lx_stored_check_sweep(store, db, f.sweep, &err);
    if (rc == LX_OK && f.commit)
        rc = lx_store_has_commit(store, f.commit, &has_commit, &err);
    struct lx_buf commits = {0};
    if (rc == LX_OK && !has_commit && (rc = lx_store_commits_text(store, &commits, &err)) == LX_OK)
        rc = lx_err(&err, LX_EINVAL, "no stored row was made by a commit starting with '%s'\n%s%s"
                    "  hint: a prefix of one of them (a CSV export has no commits)", f.commit,
                    commits.len ? "stored commits, newest first:\n" : "no ok row is stored\n", lx_buf_str(&commits));
    lx_buf_free(&commits);
    if (rc == LX_OK)
        rc = lx_store_select_pooled(store, &f, &rows, &err);
    if (rc == LX_OK && rows.n == 0 && !series)
        say_nothing_ok(store, f.sweep);
    lx_store_close(store);
    if (rc == LX_OK && rows.n && metrics)
        rc = lx_stored_check_metrics(&rows, metrics, &err);
    if (rc < 0) {
        lx_rows_release(&rows);
        return lx_cli_fail(&err, rc);
    }
    if (rows.n == 0 && series) {
        fprintf(stderr, "lenx: error: no points of series '%s' stored%s%s\n  hint: %s\n", series,
                f.sweep ? " in sweep " : "", f.sweep ? f.sweep : "", LX_SERIES_HINT);
        lx_rows_release(&rows);
        return 2;
    }
    struct lx_buf out = {0};
    if (series)
        lx_render_series(&rows, (enum lx_format)fmt, &out);
    else
        lx_render(&rows, (enum lx_format)fmt, metrics, &out);
    int empty = metrics && rows.n && !out.len;  /* md and latex leave out _se rows: their tables show intervals */
    if (empty)
        fprintf(stderr, "lenx: error: --metric %s: a %s table shows each metric with its interval, not the "
                "stored standard errors\n  hint: --format csv or json lists the _se rows\n", metrics,
                fmt == LX_FMT_LATEX ? "latex" : "md");
    else
        fputs(lx_buf_str(&out), stdout);
    lx_buf_free(&out);
    lx_rows_release(&rows);
    return empty ? 2 : 0;
}

/* ---------------------------------------------------------------- compare */

static const struct lx_opt compare_opts[] = {
    {"db", 1, "result database (default " LX_DEFAULT_DB ")"},
    {"rtol", 1, "relative tolerance (default 1e-6)"},
    {"atol", 1, "absolute tolerance (default 1e-9)"},
    {"sweep", 1, "with a commit or store side: only this sweep (A+B: pooled); refused without one"},
    {"sigma", 1, "K > 0: pool each side's seeds per cell; flag a mean moved by more than K standard errors"},
};

static const char compare_usage[] =
    "usage: lenx compare BASE HEAD [options]\n\n"
    "BASE and HEAD are each a tidy CSV file (from `lenx table --format csv`), a store\n"
    "file (its rows: every sweep's, the newest row of a cell), a sweep name (A+B:\n"
    "sweeps A and B pooled, a cell in both once), or a git commit (prefix) of stored\n"
    "rows. Values are matched by cell (task, method stack, model key, length, seed)\n"
    "and metric; those that moved beyond atol + rtol*|base| are printed, then how\n"
    "many values in how many cells were compared. With --sigma K, each side's seeds\n"
    "are pooled per cell and a mean is flagged only when it moved by more than\n"
    "K·sqrt(se_base² + se_head²), a side's se that of its seed mean (one seed: its\n"
    "stored <metric>_se; neither: the tolerances). Exit status 1 if any moved, 0 if\n"
    "none, 2 if the two share no cell, a side holds nothing, a side holds two\n"
    "configurations of one cell, or --sweep is given without a commit or store side.";

/* Whether the file at path is an SQLite database (its 16-byte header), a store rather than a CSV. */
static int is_store_file(const char *path)
{
    char head[16] = {0};
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(head, 1, sizeof head, f) : 0;
    if (f)
        fclose(f);
    return n == sizeof head && memcmp(head, "SQLite format 3", sizeof head) == 0;
}

/* A compare side that is a store file (`lenx compare A.db B.db`): its rows, every sweep's or --sweep's (each
** name checked), newest per cell as a commit side's; --sweep narrows it. It was read as a CSV and refused. */
static int load_store_side(const char *path, const char *sweep, struct lx_rows *rows, int *narrowed,
                           struct lx_error *err)
{
    struct lx_store *store;
    int rc = lx_stored_open(&store, path, err);
    if (rc < 0)
        return rc;
    *narrowed = 1;
    rc = lx_stored_check_sweep(store, path, sweep, err);
    if (rc == LX_OK) {
        struct lx_filter f = {.sweep = sweep};
        rc = lx_store_select_pooled(store, &f, rows, err);
    }
    lx_store_close(store);
    return rc;
}

/* Resolve a compare side: store or CSV file, then sweep name, then commit prefix;
** *narrowed is set when it is a commit or a store, the sides --sweep narrows. */
static int load_side(const char *what, const char *db, const char *sweep, struct lx_rows *rows, int *narrowed,
                     struct lx_error *err)
{
    struct stat sb;
    int is_file = stat(what, &sb) == 0;
    if (is_file && S_ISREG(sb.st_mode) && !is_store_file(what))
        return lx_csv_read(what, rows, err);
    if (is_file && S_ISREG(sb.st_mode))
        return load_store_side(what, sweep, rows, narrowed, err);
    struct lx_store *store;
    int rc = lx_stored_open(&store, db, err);
    if (rc < 0)     /* the store's error alone would not say that the side was no file either */
        return is_file ? rc : lx_err_prefix(err, rc, "'%s' is not a file, and as a sweep or commit: ", what);
    struct lx_sweep_info *sw;
    int n_sw, is_sweep = 0, is_commit = 0;
    struct lx_buf hint = {0};
    rc = lx_store_sweeps(store, &sw, &n_sw, err);
    if (rc == LX_OK) {
        const char **names = lx_xcalloc((size_t)n_sw + 1, sizeof *names);
        for (int i = 0; i < n_sw; i++) {
            is_sweep |= strcmp(sw[i].name, what) == 0;
            names[i] = sw[i].name;
        }
        lx_stored_closest(&hint, what, names, n_sw);
        free(names);
        lx_sweep_infos_free(sw, n_sw);
    }
    if (rc == LX_OK && !is_sweep && strchr(what, '+'))     /* A+B: sweeps pooled, each name checked */
        is_sweep = (rc = lx_stored_check_sweep(store, db, what, err)) == LX_OK;
    if (rc == LX_OK && !is_sweep && strlen(what) >= 4)
        rc = lx_store_has_commit(store, what, &is_commit, err);
    if (rc == LX_OK && !is_sweep && !is_commit)
        rc = lx_err(err, LX_EINVAL, "'%s' is not a file, a sweep in %s, or a commit with stored rows\n"
                    "  hint: %s`lenx list sweeps` shows the sweeps; commit prefixes need 4+ characters",
                    what, db, lx_buf_str(&hint));
    lx_buf_free(&hint);
    if (rc == LX_OK) {
        struct lx_filter f = {.sweep = is_sweep ? what : sweep, .commit = is_sweep ? NULL : what};
        *narrowed |= !is_sweep;
        if (!is_sweep)
            rc = lx_stored_check_sweep(store, db, sweep, err);
        if (rc == LX_OK)
            rc = lx_store_select_pooled(store, &f, rows, err);
    }
    lx_store_close(store);
    return rc;
}

/* Load a compare side; one that holds no value names nothing to compare. */
static int load_nonempty_side(const char *what, const char *db, const char *sweep, struct lx_rows *rows,
                              int *narrowed, struct lx_error *err)
{
    int rc = load_side(what, db, sweep, rows, narrowed, err);
    if (rc == LX_OK && rows->n == 0)
        rc = lx_err(err, LX_EINVAL, "'%s' holds no values to compare%s%s\n  hint: a sweep or commit needs ok "
                    "cells (`lenx list sweeps`); a CSV needs rows under its header", what,
                    sweep ? " with --sweep " : "", sweep ? sweep : "");
    return rc;
}

/* Load both sides. --sweep narrows a commit or store side: with neither it
** would narrow nothing (and a name stored nowhere would pass), so it is refused. */
static int load_sides(const char *const *side, const char *db, const char *sweep, struct lx_rows *base,
                      struct lx_rows *head, struct lx_error *err)
{
    int narrowed = 0;
    int rc = load_nonempty_side(side[0], db, sweep, base, &narrowed, err);
    if (rc == LX_OK)
        rc = load_nonempty_side(side[1], db, sweep, head, &narrowed, err);
    if (rc == LX_OK && sweep && !narrowed)
        rc = lx_err(err, LX_EINVAL, "--sweep %s narrows a commit or store side, and neither '%s' nor '%s' is one\n"
                    "  hint: name the sweep as a side (`lenx compare %s %s`), or drop --sweep", sweep, side[0],
                    side[1], side[0], sweep);
    return rc;
}

int lx_cmd_compare(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int rc = lx_cli_args(&a, compare_opts, LX_N_OPTS(compare_opts), compare_usage, argc, argv);
    if (rc >= 0)
        return rc;
    if (a.n_pos != 2) {
        fprintf(stderr, "lenx: error: compare takes BASE and HEAD\n  hint: lenx compare baseline.csv quick\n");
        return 2;
    }
    struct lx_compare_opts o = {.rtol = 1e-6, .atol = 1e-9};
    const char *v;
    if ((v = lx_args_value(&a, "rtol")) &&
        (rc = lx_args_double(v, "rtol", &o.rtol, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if ((v = lx_args_value(&a, "atol")) &&
        (rc = lx_args_double(v, "atol", &o.atol, &err)) < 0)
        return lx_cli_fail(&err, rc);
    rc = LX_OK;
    if ((v = lx_args_value(&a, "sigma")) && (rc = lx_args_double(v, "sigma", &o.sigma, &err)) == LX_OK &&
        !(o.sigma > 0))
        rc = lx_err(&err, LX_EINVAL, "--sigma must be above 0, got '%s'\n  hint: --sigma 3 flags a mean only when "
                    "it moved by more than 3 combined standard errors", v);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    const char *db = lx_args_value(&a, "db");
    const char *sweep = lx_args_value(&a, "sweep");
    db = db ? db : LX_DEFAULT_DB;
    struct lx_rows base = {0}, head = {0};
    rc = load_sides(a.pos, db, sweep, &base, &head, &err);
    struct lx_buf out = {0}, warn = {0};
    struct lx_compare_counts c;
    o.base_name = a.pos[0];
    o.head_name = a.pos[1];
    o.warn = &warn;
    if (rc == LX_OK)
        rc = lx_compare(&base, &head, &o, &out, &c, &err);
    lx_rows_release(&base);
    lx_rows_release(&head);
    if (rc < 0) {
        lx_buf_free(&out);
        return lx_cli_fail(&err, rc);
    }
    lx_term_printf(stdout, "%s", lx_buf_str(&out));
    fflush(stdout);
    lx_term_printf(stderr, "%s", lx_buf_str(&warn));
    lx_buf_free(&out);
    lx_buf_free(&warn);
    if (c.n_values == 0) {
        fprintf(stderr, "lenx: error: '%s' and '%s' share no cell\n"
                "  hint: compare results of the same sweep config\n", a.pos[0], a.pos[1]);
        return 2;
    }
    return c.n_moved ? 1 : 0;
}

/* ---------------------------------------------------------------- report */

static const struct lx_opt report_opts[] = {
    {"db", 1, "result database (default " LX_DEFAULT_DB ")"},
    {"sweep", 1, "only these sweeps, comma-separated (default: every sweep); A+B: A and B pooled as one"},
    {"metric", 1, "metrics to plot and table, comma-separated (default: each task's headline metrics)"},
    {"threshold", 1, "effective length: fraction of the training-length score to keep (default 0.85)"},
    {"output", 1, "the HTML file to write (also -o FILE)"},
};

static const char report_usage[] =
    "usage: lenx report [--sweep S,...] [--db FILE] [--metric M,...] [--threshold T] -o report.html\n\n"
    "Write one self-contained HTML page (inline SVG plots drawn by gnuplot, no script,\n"
    "no network) of stored sweeps: per task and metric, value against length per method\n"
    "(log-2 axis, training length dashed, error bars: the 95 % interval over seeds, or\n"
    "one seed's stored se) beside its table with an effective-length column; NLL by\n"
    "position and attention mass by distance per length; depth x length heat maps of\n"
    "retrieval accuracy; each sweep's provenance (commit, dirty flag, machine, time,\n"
    "YAML) and its failed cells with their errors.";

/* The headline metrics of a stored task string ("ppl(windows=16)" -> ppl's). */
static const char *task_headline(const char *task)
{
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(task, "("), task);
    const struct lx_task *t = lx_task_find(name);
    return t ? t->headline : NULL;
}

/* Split "a,b" into names (pointers into buf). */
/* --sweep A,B,... into names (at most max): an empty name, one given twice or
** one too many is bad input (a repeated one printed its section twice). */
static int split_list(char *buf, const char *given, const char **names, int max, int *n, struct lx_error *err)
{
    *n = 0;
    if (!*buf)
        return LX_OK;
    for (char *p = buf, *next; p; p = next) {
        if ((next = strchr(p, ',')))
            *next++ = '\0';
        for (int i = 0; i < *n && *p; i++)
            if (strcmp(names[i], p) == 0)
                return lx_err(err, LX_EINVAL, "--sweep '%s' names '%s' twice\n  hint: name each sweep once", given, p);
        if (!*p || *n == max)
            return lx_err(err, LX_EINVAL, "--sweep '%s': %s\n  hint: --sweep A,B reports sweeps A and B, each in "
                          "its own section", given, *p ? "too many sweeps" : "an empty name");
        names[(*n)++] = p;
    }
    return LX_OK;
}

static int report_write(const char *db, const struct lx_report_opts *o, const char *path, struct lx_error *err)
{
    struct lx_store *store = NULL;
    int rc = lx_stored_open(&store, db, err);
    for (int i = 0; i < o->n_sweeps && rc == LX_OK; i++)
        rc = lx_stored_check_sweep(store, db, o->sweeps[i], err);
    struct lx_rows rows = {0};      /* --metric names metrics of the sweeps reported, as in `lenx table` */
    for (int i = 0; i < (o->n_sweeps ? o->n_sweeps : 1) && rc == LX_OK && o->metrics; i++)
        rc = lx_store_select_pooled(store, &(struct lx_filter){.sweep = o->n_sweeps ? o->sweeps[i] : NULL}, &rows,
                                    err);
    if (rc == LX_OK && o->metrics)
        rc = lx_stored_check_metrics(&rows, o->metrics, err);
    lx_rows_release(&rows);
    struct lx_buf out = {0};
    struct lx_report_tally tally = {0};
    if (rc == LX_OK)
        rc = lx_report(store, o, &out, &tally, err);
    if (store)
        lx_store_close(store);
    FILE *f = rc == LX_OK ? fopen(path, "w") : NULL;
    if (rc == LX_OK && (!f || fwrite(out.s, 1, out.len, f) != out.len))
        rc = lx_err(err, LX_EIO, "cannot write %s\n  hint: check that its folder exists and is writable", path);
    if (f && fclose(f) != 0 && rc == LX_OK)
        rc = lx_err(err, LX_EIO, "cannot write %s\n  hint: is the disk full?", path);
    if (rc == LX_OK && tally.n_rows == 0)   /* as `lenx table` says it; the page lists the failed cells */
        fprintf(stderr, "lenx: no ok results stored%s; %s lists %ld failed cell%s\n", o->n_sweeps ? " in the sweeps "
                "reported" : "", path, tally.n_failed, tally.n_failed == 1 ? "" : "s");
    lx_buf_free(&out);
    return rc;
}

int lx_cmd_report(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    char *args[argc > 0 ? argc : 1];   /* -o FILE is --output FILE, a missing value or a repeat said of --output */
    lx_args_short(argc, argv, args, report_opts, LX_N_OPTS(report_opts), "-o", "--output");
    int rc = lx_cli_args(&a, report_opts, LX_N_OPTS(report_opts), report_usage, argc, args);
    if (rc >= 0)
        return rc;
    const char *path = lx_args_value(&a, "output");
    if (a.n_pos) {
        fprintf(stderr, "lenx: error: unexpected argument '%s'\n  hint: lenx report -o report.html\n", a.pos[0]);
        return 2;
    }
    if (!path) {
        fprintf(stderr, "lenx: error: report needs an output file\n  hint: lenx report -o report.html\n");
        return 2;
    }
    struct lx_report_opts o = {.threshold = 0.85, .headline = task_headline, .metrics = lx_args_value(&a, "metric")};
    const char *v = lx_args_value(&a, "threshold");
    rc = v ? lx_args_double(v, "threshold", &o.threshold, &err) : LX_OK;
    if (rc == LX_OK && !(o.threshold > 0 && o.threshold <= 1))
        rc = lx_err(&err, LX_EINVAL, "--threshold %s is outside (0, 1]\n  hint: 0.85 keeps 85%% of the "
                    "training-length score", v);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    const char *db = lx_args_value(&a, "db"), *names[LX_MAX_POS];
    const char *given = lx_args_value(&a, "sweep") ? lx_args_value(&a, "sweep") : "";
    char *sweeps = lx_xstrdup(given);
    rc = split_list(sweeps, given, names, LX_MAX_POS, &o.n_sweeps, &err);
    o.sweeps = names;
    o.db = db ? db : LX_DEFAULT_DB;
    if (rc == LX_OK)
        rc = report_write(o.db, &o, path, &err);
    free(sweeps);
    return rc < 0 ? lx_cli_fail(&err, rc) : 0;
}

/* ---------------------------------------------------------------- list */

static const struct lx_opt list_opts[] = {
    {"db", 1, "result database for 'sweeps' and 'models' (default " LX_DEFAULT_DB ")"},
};

static const char list_usage[] = "usage: lenx list methods|tasks|sweeps|models [--db FILE]";

/* `lenx list models`: the store's models table, and whether each checkpoint file is there. */
static int list_models(const char *db, struct lx_error *err)
{
    struct lx_store *store;
    struct lx_model_info *m;
    int n, rc = lx_stored_open(&store, db, err);
    if (rc < 0)
        return rc;
    rc = lx_store_models(store, &m, &n, err);
    lx_store_close(store);
    if (rc < 0)
        return rc;
    if (n)
        printf("%-16s %-12s %-20s %-22s %6s %6s %11s %8s  %s\n", "key", "name", "architecture", "trained with",
               "length", "seed", "tokens", "time", "file");
    for (int i = 0; i < n; i++) {
        char t[32], seed[24] = "-";
        snprintf(t, sizeof t, m[i].steps ? "%.0f s" : "(file)", m[i].seconds);
        if (m[i].seed >= 0)
            snprintf(seed, sizeof seed, "%ld", m[i].seed);
        lx_term_printf(stdout, "%-16s %-12s %-20s %-22s %6ld %6s %11ld %8s  %s%s\n", m[i].key, m[i].name, m[i].arch,
                       m[i].stack, m[i].train_len, seed, m[i].tokens, t, m[i].path,
                       access(m[i].path, R_OK) == 0 ? "" : " (missing)");
    }
    if (n == 0)
        fprintf(stderr, "lenx: no models in %s\n", db ? db : LX_DEFAULT_DB);
    lx_model_infos_free(m, n);
    return LX_OK;
}

static const char *kind_text(unsigned kind)
{
    if (kind == (LX_KIND_INFERENCE | LX_KIND_TRAINING))
        return "inference or training";
    return kind == LX_KIND_TRAINING ? "training" : "inference";
}

int lx_cmd_list(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int rc = lx_cli_args(&a, list_opts, LX_N_OPTS(list_opts), list_usage, argc, argv);
    if (rc >= 0)
        return rc;
    if (a.n_pos > 1)    /* was "list what? ''" */
        return fprintf(stderr, "lenx: error: unexpected argument '%s'\n  hint: %s\n", a.pos[1], list_usage), 2;
    const char *what = a.n_pos == 1 ? a.pos[0] : "";
    if (strcmp(what, "methods") == 0) {
        for (int i = 0; i < lx_method_count(); i++)
            printf("%-10s %-22s %s\n", lx_method_at(i)->name, kind_text(lx_method_at(i)->kind),
                   lx_method_at(i)->summary);
        return 0;
    }
    if (strcmp(what, "tasks") == 0) {
        static const char *modes[] = {"no model", "causal LM", "masked LM"};
        for (int i = 0; i < lx_task_count(); i++)
            printf("%-10s %-10s %s\n", lx_task_at(i)->name, modes[lx_task_at(i)->mode], lx_task_at(i)->summary);
        return 0;
    }
    if (strcmp(what, "sweeps") == 0) {
        const char *db = lx_args_value(&a, "db");
        struct lx_store *store;
        if ((rc = lx_stored_open(&store, db, &err)) < 0)
            return lx_cli_fail(&err, rc);
        struct lx_sweep_info *sw;
        int n;
        rc = lx_store_sweeps(store, &sw, &n, &err);
        lx_store_close(store);
        if (rc < 0)
            return lx_cli_fail(&err, rc);
        for (int i = 0; i < n; i++) {
            lx_term_printf(stdout, "%-24s %5d ok %5d failed  last %s", sw[i].name, sw[i].n_ok, sw[i].n_failed,
                           sw[i].last);
            if (sw[i].n_texts > 1)      /* the config changed between runs: stale cells may be there */
                lx_term_printf(stdout, "  from %d YAML texts (lenx show sweep %s)", sw[i].n_texts, sw[i].name);
            printf("\n");
        }
        lx_sweep_infos_free(sw, n);
        return 0;
    }
    if (strcmp(what, "models") == 0) {
        rc = list_models(lx_args_value(&a, "db"), &err);
        return rc < 0 ? lx_cli_fail(&err, rc) : 0;
    }
    static const char *const words[] = {"methods", "tasks", "sweeps", "models"};
    const char *near = *what ? lx_closest(what, words, 4) : NULL;
    fprintf(stderr, "lenx: error: list what? '%s'\n  hint: %s%s%s%s\n", what, LX_DID_YOU_MEAN(near), list_usage);
    return 2;
}

/* ---------------------------------------------------------------- rm */

static const struct lx_opt rm_opts[] = {
    {"db", 1, "result database (default " LX_DEFAULT_DB ")"},
    {"sweep", 1, "cells of this sweep"},
    {"commit", 1, "cells made by this commit (prefix)"},
    {"model", 1, "cells that ran on this model (name; a model key prefix when no cell's model has that name)"},
    {"method", 1, "cells of this canonical stack, exactly as stored (e.g. 'logn(mode=qwen)')"},
    {"task", 1, "cells of this task (name, or canonical task string)"},
    {"failed", 0, "failed cells only"},
    {"not-in", 1, "cells of CONFIG's sweep whose run key CONFIG no longer plans (stale cells)"},
    {"yes", 0, "delete; without it, only list what would be deleted"},
};

static const char rm_usage[] =
    "usage: lenx rm FILTER... [--yes] [--db FILE]\n\n"
    "Delete stored cells (every row of them, ok or failed, at any commit) with their\n"
    "metrics, series and outputs. Every filter given must hold; at least one is\n"
    "required. Lists the cells and their count per sweep; deletes them only with\n"
    "--yes, listed and deleted in one transaction. `lenx rm --not-in CONFIG --yes` removes what a\n"
    "changed config no longer plans, e.g. cells of a model retrained under the same\n"
    "name. Trained models (the checkpoint cache) are kept.";

int lx_cmd_rm(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int rc = lx_cli_args(&a, rm_opts, LX_N_OPTS(rm_opts), rm_usage, argc, argv);
    if (rc >= 0)
        return rc;
    struct lx_rm_filter f = {
        .sweep = lx_args_value(&a, "sweep"),
        .commit = lx_args_value(&a, "commit"),
        .model = lx_args_value(&a, "model"),
        .method = lx_args_value(&a, "method"),
        .task = lx_args_value(&a, "task"),
        .failed = lx_args_value(&a, "failed") != NULL,
    };
    const char *config = lx_args_value(&a, "not-in");
    const char *const given[] = {f.sweep, f.commit, f.model, f.method, f.task, config};
    static const char *const names[] = {"sweep", "commit", "model", "method", "task", "not-in"};
    for (int i = 0; i < 6; i++)
        if (given[i] && !given[i][0]) {
            fprintf(stderr, "lenx: error: rm --%s is empty: it would match every cell\n  hint: give a value, or "
                    "leave the filter out\n", names[i]);
            return 2;
        }
    if (a.n_pos || !(f.sweep || f.commit || f.model || f.method || f.task || f.failed || config)) {
        fprintf(stderr, "lenx: error: rm needs at least one filter%s%s\n  hint: lenx rm --sweep NAME "
                "(lists the cells); add --yes to delete them\n", a.n_pos ? "; unexpected argument " : "",
                a.n_pos ? a.pos[0] : "");
        return 2;
    }
    const char *db = lx_args_value(&a, "db");
    int yes = lx_args_value(&a, "yes") != NULL;
    rc = lx_stored_rm(db ? db : LX_DEFAULT_DB, &f, config, yes, &err);
    return rc < 0 ? lx_cli_fail(&err, rc) : 0;
}
