/*
** harness/stored.c - commands on stored results beside the tables: the
** checks every view makes (a --sweep or --metric that names nothing is bad
** input, listed with the closest name), `lenx show sweep` (the YAML a
** sweep's cells came from) and `lenx rm` (list, then delete chosen cells).
** docs/results.md describes them.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/stored.h"

/* Open the store read-only for a view; say so on stderr when the open has a
** caveat (an immutable read beside a -wal file). */
int lx_stored_open(struct lx_store **store, const char *db, struct lx_error *err)
{
    int rc = lx_store_open(store, db ? db : LX_DEFAULT_DB, 1, err);
    if (rc == LX_OK && lx_store_note(*store))
        fprintf(stderr, "lenx: warning: %s\n", lx_store_note(*store));
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
** sweeps, the closest first as a hint. NULL passes. */
int lx_stored_check_sweep(struct lx_store *store, const char *db, const char *sweep, struct lx_error *err)
{
    struct lx_sweep_info *sw;
    int n, found = 0;
    if (!sweep)
        return LX_OK;
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
    for (const char *p = metrics; rc == LX_OK && p && *p;) {
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
        p += w + (p[w] == ',');
    }
    free(names);
    return rc;
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
    rc = lx_stored_check_sweep(store, db, sweep, err);
    if (rc == LX_OK)
        rc = lx_store_sweep_configs(store, sweep, &v, &n, err);
    lx_store_close(store);
    for (int i = 0; rc == LX_OK && i < n; i++) {
        printf("%s# sweep %s: %d cells from %s%s, %s ... %s, newest at commit %.12s\n", i ? "\n" : "", sweep,
               v[i].n_cells, v[i].path, i ? " (an older text)" : "", v[i].first, v[i].last, v[i].commits[0].name);
        for (int k = 0; v[i].n_commits > 1 && k < v[i].n_commits; k++)
            printf("#   commit %.12s%s: %d cell%s\n", v[i].commits[k].name, v[i].commits[k].dirty ? " (dirty)" : "",
                   v[i].commits[k].n, v[i].commits[k].n == 1 ? "" : "s");
        if (v[i].text)
            fputs(v[i].text, stdout);
        else
            printf("# (stored before lenx kept the sweep's YAML text)\n");
        if (v[i].text && v[i].text[0] && v[i].text[strlen(v[i].text) - 1] != '\n')
            printf("\n");
    }
    lx_sweep_configs_free(v, n);
    return rc;
}

/* --not-in CONFIG: the config's sweep name and a JSON array of its planned run keys. */
/* The run keys of a plan as a JSON array. */
static char *plan_keys_json(const struct lx_plan *plan)
{
    struct lx_buf b = {0};
    lx_buf_puts(&b, "[");
    for (int i = 0; i < plan->n_cells; i++)
        lx_buf_printf(&b, "%s\"%s\"", i ? "," : "", plan->cells[i].key);
    lx_buf_puts(&b, "]");
    return b.s;
}

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
        printf("  %s  %s  %-6s  %s  %s  length=%ld seed=%ld", v[i].sweep, v[i].key, v[i].status, v[i].method,
               v[i].task, v[i].length, v[i].seed);
        if (v[i].model[0])
            printf("  model=%s [%.8s]", v[i].model, v[i].model_key);
        printf("  commit %.10s\n", v[i].commit);
    }
    for (int i = 0; i < n; i++) {
        int first = 1, k = 0;
        for (int j = 0; j < i && first; j++)
            first = strcmp(v[j].sweep, v[i].sweep) != 0;
        for (int j = i; j < n && first; j++)
            k += strcmp(v[j].sweep, v[i].sweep) == 0;
        if (first)
            printf("%s: %d cells\n", v[i].sweep, k);
    }
}

/* List, then (with --yes) delete, the cells f selects. */
static int rm_cells(const char *db, const struct lx_rm_filter *f, int yes, struct lx_error *err)
{
    struct lx_store *store;
    int rc = yes ? lx_store_open(&store, db, 0, err) : lx_stored_open(&store, db, err);
    if (rc < 0)
        return rc;
    struct lx_cell_info *cells = NULL;
    int n = 0;
    long n_deleted = 0;
    rc = lx_stored_check_sweep(store, db, f->sweep, err);
    if (rc == LX_OK)
        rc = lx_store_rm_list(store, f, &cells, &n, err);
    if (rc == LX_OK && n == 0)
        printf("no stored cell matches\n");
    else if (rc == LX_OK)
        print_cells(cells, n);
    if (rc == LX_OK && n && !yes)
        printf("%d cells would be deleted, with their metrics, series and outputs; run again with --yes to "
               "delete them\n", n);
    if (rc == LX_OK && n && yes)
        rc = lx_store_rm(store, f, &n_deleted, err);
    if (rc == LX_OK && n && yes)
        printf("deleted %ld cells, with their metrics, series and outputs\n", n_deleted);
    lx_cell_infos_free(cells, n);
    lx_store_close(store);
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
    if (lx_store_rm_list(store, &f, &cells, &n, &err) == LX_OK && n > 0)
        fprintf(stderr, "lenx: note: sweep '%s' also holds %d cells that %s no longer plans (an earlier "
                "version of it); tables show them apart\n  hint: `lenx rm --not-in %s --db %s` lists them, "
                "add --yes to delete them\n", plan->grid->name, n, config, config, db);
    lx_cell_infos_free(cells, n);
    free(keys);
    lx_store_close(store);
}
