/*
** harness/main.c - the lenx command line.
**
** To add a command: write a `static int cmd_<name>(int argc, char **argv)` with
** its option table and usage text, and add one row to `commands[]` below.
**
** Exit status: 0 success; 1 some cells failed (run) or some cells moved
** (compare); 2 bad input (config, arguments) with nothing written; 3 the store
** or a file could not be read or written.
*/
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/cli.h"
#include "harness/engine/blas.h"
#include "harness/plan.h"
#include "harness/run.h"
#include "harness/modelcmd.h"
#include "harness/score.h"
#include "harness/tokenize.h"
#include "harness/stored.h"
#include "harness/core/version.h"
#include "results/views.h"

#define N_OPTS LX_N_OPTS
#define fail lx_cli_fail        /* harness/cli.h: shared with the commands in modelcmd.c */
#define usage lx_cli_usage

/* ---------------------------------------------------------------- run */

static const struct lx_opt run_opts[] = {
    {"db", 1, "result database (default " LX_DEFAULT_DB ")"},
    {"force", 0, "recompute cells that are already stored (an ok row stays until the new one succeeds)"},
    {"no-train", 0, "never train: a cell whose model has no usable checkpoint fails"},
    {"dry-run", 0, "check the config and print the plan; run and write nothing"},
    {"threads", 1, "OpenMP threads (default: OMP_NUM_THREADS or all cores)"},
    {"no-table", 0, "do not print the sweep's table at the end"},
    {"quiet", 0, "no progress on stderr"},
};

static const char run_usage[] =
    "usage: lenx run CONFIG.yaml [options]\n\n"
    "Plan the sweep in CONFIG (methods x tasks x lengths x seeds), skip cells already\n"
    "stored, run the rest, store every cell, and print the sweep's table. The whole\n"
    "config is checked before anything runs; a bad config writes nothing.";

static int print_table(const char *db, const char *sweep, const char *metrics, enum lx_format fmt)
{
    struct lx_store *store;
    struct lx_error err;
    int rc = lx_stored_open(&store, db, &err);
    if (rc < 0)
        return fail(&err, rc);
    struct lx_rows rows = {0};
    struct lx_filter f = {.sweep = sweep};
    rc = lx_store_select(store, &f, &rows, &err);
    lx_store_close(store);
    if (rc < 0)
        return fail(&err, rc);
    struct lx_buf out = {0};
    lx_render(&rows, fmt, metrics, &out);
    fputs(lx_buf_str(&out), stdout);
    lx_buf_free(&out);
    lx_rows_release(&rows);
    return 0;
}

/* `run --dry-run`: the plan's cells, one a line. */
static void run_print_plan(const struct lx_grid *grid, const struct lx_plan *plan)
{
    printf("sweep %s: %d cells\n", grid->name, plan->n_cells);
    for (int i = 0; i < plan->n_cells; i++) {
        const struct lx_cell *c = &plan->cells[i];
        printf("  %s  %s  %s  length=%ld seed=%ld", c->key, grid->tasks[c->task].canon,
               c->method, c->length, c->seed);
        if (c->model >= 0)
            printf("  model=%s [%s]", grid->models[c->model].name, c->model_key);
        printf("\n");
    }
}

/* After a run: the table of each task's headline metrics (every metric when
** a task has none); returns print_table's status. */
static int run_print_table(const char *db, const struct lx_grid *grid)
{
    struct lx_buf hl = {0};
    int all = 0;
    for (int i = 0; i < grid->n_tasks; i++) {
        const char *h = grid->tasks[i].task->headline;
        all |= h == NULL;
        lx_buf_printf(&hl, "%s%s", hl.len ? "," : "", h ? h : "");
    }
    int status = print_table(db, grid->name, all ? NULL : lx_buf_str(&hl), LX_FMT_MD);
    fflush(stdout);
    if (!all)
        fprintf(stderr, "lenx: every metric: lenx table --db %s --sweep %s\n", db, grid->name);
    lx_buf_free(&hl);
    return status;
}

/* The checks before a sweep: OpenBLAS must be the OpenMP build (exit status
** 3 otherwise); a CPU wider than BLAS's kernels is only a warning. */
static int run_check_blas(void)
{
    if (!lx_blas_is_openmp()) {
        char blas[128];
        lx_blas_describe(blas, sizeof blas);
        fprintf(stderr, "lenx: error: OpenBLAS is not the OpenMP build (%s)\n"
                "  hint: rebuild with `make`; it links the openblas-openmp library with an rpath\n", blas);
        return 3;
    }
    char weak[512];
    if (lx_blas_weaker_than_cpu(weak, sizeof weak))
        fprintf(stderr, "lenx: warning: %s\n", weak);
    return 0;
}

/* Run the plan into the store at db, print the summary and (unless
** --no-table) the table; the exit status. */
static int run_sweep(const struct lx_args *a, const char *db, const struct lx_grid *grid, const struct lx_plan *plan)
{
    struct lx_error err;
    struct lx_store *store;
    int rc = lx_store_open(&store, db, 0, &err);
    if (rc < 0)
        return fail(&err, rc);
    char models_dir[4096];
    lx_run_models_dir(db, models_dir, sizeof models_dir);
    struct lx_run_opts o = {
        .force = lx_args_get(a, run_opts, N_OPTS(run_opts), "force") != NULL,
        .progress = lx_args_get(a, run_opts, N_OPTS(run_opts), "quiet") ? 0 : isatty(STDERR_FILENO) ? 2 : 1,
        .models_dir = models_dir,
        .no_train = lx_args_get(a, run_opts, N_OPTS(run_opts), "no-train") != NULL,
    };
    struct lx_run_summary sum;
    rc = lx_run_plan(plan, store, &o, &sum, &err);
    lx_store_close(store);
    if (rc < 0)
        return fail(&err, rc);
    fprintf(stderr, "lenx: sweep '%s': %d run (%d ok, %d failed), %d already stored; "
            "%d models trained (%ld steps)\n", grid->name, sum.n_ok + sum.n_failed, sum.n_ok,
            sum.n_failed, sum.n_skipped, sum.n_trained, sum.train_steps);
    lx_stored_note_stale(db, plan, a->pos[0]);
    int status = 0;
    if (!lx_args_get(a, run_opts, N_OPTS(run_opts), "no-table"))
        status = run_print_table(db, grid);
    return sum.n_failed ? 1 : status;
}

static int cmd_run(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, run_opts, N_OPTS(run_opts), argc, argv, &help, &err)) < 0)
        return fail(&err, rc);
    if (help)
        return usage(run_usage, run_opts, N_OPTS(run_opts)), 0;
    if (a.n_pos != 1) {
        fprintf(stderr, "lenx: error: run takes one CONFIG file\n  hint: lenx run configs/quick.yaml\n");
        return 2;
    }
    const char *db = lx_args_get(&a, run_opts, N_OPTS(run_opts), "db");
    const char *threads = lx_args_get(&a, run_opts, N_OPTS(run_opts), "threads");
    db = db ? db : LX_DEFAULT_DB;
    if (threads) {
        long t;
        if ((rc = lx_args_long(threads, "threads", 1, 1024, &t, &err)) < 0)
            return fail(&err, rc);
        omp_set_num_threads((int)t);
    }
    struct lx_grid grid;
    struct lx_plan plan = {0};
    rc = lx_grid_load(&grid, a.pos[0], &err);
    if (rc == LX_OK)
        rc = lx_plan_build(&plan, &grid, &err);
    if (rc < 0) {
        lx_grid_release(&grid);
        return fail(&err, rc);
    }
    int status = 0;
    if (lx_args_get(&a, run_opts, N_OPTS(run_opts), "dry-run"))
        run_print_plan(&grid, &plan);
    else if ((status = run_check_blas()) == 0)
        status = run_sweep(&a, db, &grid, &plan);
    lx_plan_release(&plan);
    lx_grid_release(&grid);
    return status;
}

/* ---------------------------------------------------------------- table */

static const struct lx_opt table_opts[] = {
    {"db", 1, "result database (default " LX_DEFAULT_DB ")"},
    {"sweep", 1, "only this sweep"},
    {"commit", 1, "only rows made by this commit (prefix)"},
    {"metric", 1, "metrics to show, comma-separated (range_mass also matches range_mass:10-100)"},
    {"format", 1, "md (default), csv, latex or json"},
};

static const char table_usage[] =
    "usage: lenx table [options]\n\n"
    "Print stored results. md and latex pivot methods (rows) x lengths (columns), one\n"
    "table per sweep, task and metric; csv and json are tidy, one record per cell and\n"
    "metric (CSV header: sweep,method,task,length,seed,metric,value). The newest ok row\n"
    "of each cell is used.";

static int cmd_table(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, table_opts, N_OPTS(table_opts), argc, argv, &help, &err)) < 0)
        return fail(&err, rc);
    if (help)
        return usage(table_usage, table_opts, N_OPTS(table_opts)), 0;
    if (a.n_pos) {
        fprintf(stderr, "lenx: error: unexpected argument '%s'\n  hint: use --sweep NAME\n", a.pos[0]);
        return 2;
    }
    const char *fmt_s = lx_args_get(&a, table_opts, N_OPTS(table_opts), "format");
    int fmt = fmt_s ? lx_format_parse(fmt_s) : LX_FMT_MD;
    if (fmt < 0) {
        fprintf(stderr, "lenx: error: unknown format '%s'\n  hint: md, csv, latex or json\n", fmt_s);
        return 2;
    }
    const char *db = lx_args_get(&a, table_opts, N_OPTS(table_opts), "db");
    const char *metrics = lx_args_get(&a, table_opts, N_OPTS(table_opts), "metric");
    struct lx_store *store;
    if ((rc = lx_stored_open(&store, db, &err)) < 0)
        return fail(&err, rc);
    struct lx_rows rows = {0};
    struct lx_filter f = {
        .sweep = lx_args_get(&a, table_opts, N_OPTS(table_opts), "sweep"),
        .commit = lx_args_get(&a, table_opts, N_OPTS(table_opts), "commit"),
    };
    int has_commit = 1;
    rc = lx_stored_check_sweep(store, db, f.sweep, &err);
    if (rc == LX_OK && f.commit)
        rc = lx_store_has_commit(store, f.commit, &has_commit, &err);
    if (rc == LX_OK && !has_commit)
        rc = lx_err(&err, LX_EINVAL, "no stored row was made by a commit starting with '%s'\n"
                    "  hint: `lenx table --format csv` has no commits; `sqlite3 DB 'select distinct git_commit "
                    "from runs'` lists them", f.commit);
    if (rc == LX_OK)
        rc = lx_store_select(store, &f, &rows, &err);
    lx_store_close(store);
    if (rc == LX_OK && rows.n && metrics)
        rc = lx_stored_check_metrics(&rows, metrics, &err);
    if (rc < 0) {
        lx_rows_release(&rows);
        return fail(&err, rc);
    }
    if (rows.n == 0)
        fprintf(stderr, "lenx: no ok results stored%s%s\n", f.sweep ? " in sweep " : "", f.sweep ? f.sweep : "");
    struct lx_buf out = {0};
    lx_render(&rows, (enum lx_format)fmt, metrics, &out);
    fputs(lx_buf_str(&out), stdout);
    lx_buf_free(&out);
    lx_rows_release(&rows);
    return 0;
}

/* ---------------------------------------------------------------- compare */

static const struct lx_opt compare_opts[] = {
    {"db", 1, "result database (default " LX_DEFAULT_DB ")"},
    {"rtol", 1, "relative tolerance (default 1e-6)"},
    {"atol", 1, "absolute tolerance (default 1e-9)"},
    {"sweep", 1, "with commits: only this sweep"},
};

static const char compare_usage[] =
    "usage: lenx compare BASE HEAD [options]\n\n"
    "BASE and HEAD are each a tidy CSV file (from `lenx table --format csv`), a sweep\n"
    "name, or a git commit (prefix) of stored rows. Values are matched by cell (task,\n"
    "method stack, model key, length, seed) and metric; those that moved beyond\n"
    "atol + rtol*|base| are printed, then how many values in how many cells were\n"
    "compared. Exit status 1 if any moved, 0 if none, 2 if the two share no cell,\n"
    "a side holds nothing, or a side holds two configurations of one cell.";

/* Resolve a compare side: CSV file, then sweep name, then commit prefix. */
static int load_side(const char *what, const char *db, const char *sweep, struct lx_rows *rows,
                     struct lx_error *err)
{
    struct stat sb;
    if (stat(what, &sb) == 0 && S_ISREG(sb.st_mode))
        return lx_csv_read(what, rows, err);
    struct lx_store *store;
    int rc = lx_stored_open(&store, db, err);
    if (rc < 0)
        return rc;
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
    if (rc == LX_OK && !is_sweep && strlen(what) >= 4)
        rc = lx_store_has_commit(store, what, &is_commit, err);
    if (rc == LX_OK && !is_sweep && !is_commit)
        rc = lx_err(err, LX_EINVAL, "'%s' is not a file, a sweep in %s, or a commit with stored rows\n"
                    "  hint: %s`lenx list sweeps` shows the sweeps; commit prefixes need 4+ characters",
                    what, db, lx_buf_str(&hint));
    lx_buf_free(&hint);
    if (rc == LX_OK) {
        struct lx_filter f = {.sweep = is_sweep ? what : sweep, .commit = is_sweep ? NULL : what};
        rc = lx_store_select(store, &f, rows, err);
    }
    lx_store_close(store);
    return rc;
}

/* Load a compare side; one that holds no value names nothing to compare. */
static int load_nonempty_side(const char *what, const char *db, const char *sweep, struct lx_rows *rows,
                              struct lx_error *err)
{
    int rc = load_side(what, db, sweep, rows, err);
    if (rc == LX_OK && rows->n == 0)
        rc = lx_err(err, LX_EINVAL, "'%s' holds no values to compare%s%s\n  hint: a sweep or commit needs ok "
                    "cells (`lenx list sweeps`); a CSV needs rows under its header", what,
                    sweep ? " with --sweep " : "", sweep ? sweep : "");
    return rc;
}

static int cmd_compare(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, compare_opts, N_OPTS(compare_opts), argc, argv, &help, &err)) < 0)
        return fail(&err, rc);
    if (help)
        return usage(compare_usage, compare_opts, N_OPTS(compare_opts)), 0;
    if (a.n_pos != 2) {
        fprintf(stderr, "lenx: error: compare takes BASE and HEAD\n  hint: lenx compare baseline.csv quick\n");
        return 2;
    }
    struct lx_compare_opts o = {.rtol = 1e-6, .atol = 1e-9};
    const char *v;
    if ((v = lx_args_get(&a, compare_opts, N_OPTS(compare_opts), "rtol")) &&
        (rc = lx_args_double(v, "rtol", &o.rtol, &err)) < 0)
        return fail(&err, rc);
    if ((v = lx_args_get(&a, compare_opts, N_OPTS(compare_opts), "atol")) &&
        (rc = lx_args_double(v, "atol", &o.atol, &err)) < 0)
        return fail(&err, rc);
    const char *db = lx_args_get(&a, compare_opts, N_OPTS(compare_opts), "db");
    const char *sweep = lx_args_get(&a, compare_opts, N_OPTS(compare_opts), "sweep");
    db = db ? db : LX_DEFAULT_DB;
    struct lx_rows base = {0}, head = {0};
    rc = load_nonempty_side(a.pos[0], db, sweep, &base, &err);
    if (rc == LX_OK)
        rc = load_nonempty_side(a.pos[1], db, sweep, &head, &err);
    struct lx_buf out = {0};
    struct lx_compare_counts c;
    o.base_name = a.pos[0];
    o.head_name = a.pos[1];
    if (rc == LX_OK)
        rc = lx_compare(&base, &head, &o, &out, &c, &err);
    lx_rows_release(&base);
    lx_rows_release(&head);
    if (rc < 0) {
        lx_buf_free(&out);
        return fail(&err, rc);
    }
    fputs(lx_buf_str(&out), stdout);
    lx_buf_free(&out);
    if (c.n_values == 0) {
        fprintf(stderr, "lenx: error: '%s' and '%s' share no cell\n"
                "  hint: compare results of the same sweep config\n", a.pos[0], a.pos[1]);
        return 2;
    }
    return c.n_moved ? 1 : 0;
}

/* ---------------------------------------------------------------- show */

static const struct lx_opt show_opts[] = {
    {"length", 1, "tables for N = 1..length, the sample row is query N-1 (default 16)"},
    {"d-head", 1, "head dimension d (default 64)"},
    {"train-len", 1, "training length L (default 64)"},
    {"heads", 1, "attention heads H: per-head tables for ALiBi-like methods (default 1)"},
    {"db", 1, "result database for 'sweep' and model names (default " LX_DEFAULT_DB ")"},
};

static const char show_usage[] =
    "usage: lenx show method NAME [k=v ...] [options]\n"
    "       lenx show task NAME [k=v ...]\n"
    "       lenx show sweep NAME [--db FILE]\n"
    "       lenx show model PATH [--db FILE]   (lenx checkpoint, llama2.c .bin, Hugging Face directory)\n\n"
    "Print a method's resolved parameters and derived tables as JSON: row_scale for\n"
    "n = 1..N (per-row logit scales), a and m for t = 0..N-1 (per-distance affine\n"
    "maps, t = 0 is the query itself; a[h], m[h] per head when they differ),\n"
    "inv_freq (rotary frequencies), and for windows and position maps the keys the\n"
    "last query of a causal window of N sees with their effective distances.\n"
    "A method that needs rotary positions is shown on top of rope (\"stack\" says\n"
    "so). Model facts come from the flags. For a task, print its resolved\n"
    "parameters. Run with --help after NAME to list the parameters. For a stored\n"
    "sweep, print the YAML its cells were made from, newest first (one text per\n"
    "version of the file, with its cell count and newest commit).";

/* Apply k=v arguments to a schema'd params struct. */
/* Set one parameter from "k=v" (the value parsed as YAML). */
static int set_kv(const struct lx_schema *s, void *params, const char *what, const char *kv, struct lx_error *err)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return lx_err(err, LX_EINVAL, "argument '%s' is not k=v\n  hint: e.g. tau=10", kv);
    char key[64], name[160];
    snprintf(key, sizeof key, "%.*s", (int)(eq - kv < 63 ? eq - kv : 63), kv);
    snprintf(name, sizeof name, "argument '%s'", kv);
    struct lx_doc doc;
    int rc = lx_doc_load_text(&doc, eq + 1, name, err);
    if (rc == LX_OK && !doc.root)
        rc = lx_err(err, LX_EINVAL, "%s: empty value", name);
    if (rc == LX_OK)
        rc = lx_params_set(s, params, key, doc.root, what, err);
    lx_doc_release(&doc);
    return rc;
}

static int apply_kv(const struct lx_schema *s, void *params, const char *what, int n, const char *const *kv,
                    struct lx_error *err)
{
    for (int i = 0; i < n; i++) {
        int rc = set_kv(s, params, what, kv[i], err);
        if (rc < 0)
            return rc;
    }
    lx_params_finish(s, params);
    return LX_OK;
}

static void json_table(struct lx_buf *out, const char *name, const double *v, long n, int *first)
{
    lx_buf_printf(out, "%s\n    ", *first ? "" : ",");
    lx_buf_json_str(out, name);
    lx_buf_puts(out, ": [");
    for (long i = 0; i < n; i++) {
        lx_buf_puts(out, i ? ", " : "");
        lx_buf_num(out, v[i]);
    }
    lx_buf_puts(out, "]");
    *first = 0;
}

/* The logit-op tables: row scales over n, distance maps over t (per head
** when the heads differ). */
static void show_ops(struct lx_buf *out, const struct lx_spec *spec, long length, int *first)
{
    double *x = lx_xcalloc((size_t)length, sizeof *x), *y = lx_xcalloc((size_t)length, sizeof *y);
    for (int k = 0; k < spec->n_ops; k++) {
        const struct lx_logit_op *op = &spec->ops[k];
        if (op->kind == LX_OP_ROW_SCALE) {
            for (long n = 1; n <= length; n++)
                x[n - 1] = op->row_scale(op->params, &spec->facts, n);
            json_table(out, "row_scale", x, length, first);
            continue;
        }
        for (int h = 0; h < spec->facts.n_heads; h++) {
            char an[32] = "a", mn[32] = "m";
            if (spec->facts.n_heads > 1)
                snprintf(an, sizeof an, "a[%d]", h), snprintf(mn, sizeof mn, "m[%d]", h);
            for (long t = 0; t < length; t++)
                op->dist_affine(op->params, &spec->facts, h, (double)t, &x[t], &y[t]);
            json_table(out, an, x, length, first);
            json_table(out, mn, y, length, first);
        }
    }
    free(x);
    free(y);
}

/* Everything else the spec says: rotary table, geometry, visibility and
** effective distances of a sample row, PoSE, calibration. */
static void show_spec(struct lx_buf *out, const struct lx_spec *spec, long length, int *first)
{
    if (spec->rotary.n_pairs) {
        json_table(out, "inv_freq", spec->rotary.inv_freq, spec->rotary.n_pairs, first);
        lx_buf_printf(out, ",\n    \"layout\": \"%s\"", spec->rotary.layout == LX_ROPE_HALF ? "half" : "interleaved");
    }
    if (spec->cosine) {
        lx_buf_printf(out, "%s\n    \"cosine_scale\": ", *first ? "" : ",");
        lx_buf_num(out, spec->cos_scale);
        *first = 0;
    }
    if (spec->vis.method || spec->posmap.method) {
        long i = length - 1, n = 0;
        double *keys = lx_xcalloc((size_t)length, sizeof *keys), *delta = lx_xcalloc((size_t)length, sizeof *delta);
        for (long j = 0; j <= i; j++)
            if (lx_spec_visible(spec, i, j, length, 1)) {
                keys[n] = (double)j;
                delta[n++] = lx_spec_delta(spec, i, j);
            }
        lx_buf_printf(out, "%s\n    \"query\": %ld", *first ? "" : ",", i);
        *first = 0;
        json_table(out, "visible_keys", keys, n, first);
        json_table(out, "distance", delta, n, first);
        free(keys);
        free(delta);
    }
    if (spec->pose.chunks) {
        lx_buf_printf(out, "%s\n    \"pose\": {\"chunks\": %d, \"target\": %ld}", *first ? "" : ",", spec->pose.chunks,
                      spec->pose.target);
        *first = 0;
    }
    if (spec->calibrate) {
        lx_buf_printf(out, "%s\n    \"temperature\": \"calibrated per (model, length) by %s\"", *first ? "" : ",",
                      spec->calib_method);
        *first = 0;
    }
}

/* The facts of `show method`: the flags, or a small default model. */
static int show_facts(const struct lx_args *a, struct lx_facts *f, struct lx_error *err)
{
    static const char *const names[] = {"length", "d-head", "train-len", "heads"};
    static const long max[] = {10000000, 65536, 1000000000000L, 256};
    long v[] = {16, 64, 64, 1};
    const char *arg;
    for (int i = 0; i < 4; i++) {
        int rc = LX_OK;
        if ((arg = lx_args_get(a, show_opts, N_OPTS(show_opts), names[i])))
            rc = lx_args_long(arg, names[i], 1, max[i], &v[i], err);
        if (rc < 0)
            return rc;
    }
    *f = (struct lx_facts){.length = v[0], .d_head = (int)v[1], .train_len = v[2], .n_heads = (int)v[3],
                           .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
    return LX_OK;
}

/* One k=v argument of `show method M` on the stack [rope, M]: `k` sets M's
** parameter, `rope.k` (or `M.k`) that method's; a `rope.` key puts M on rope. */
static int show_arg(struct lx_stack *st, const char *kv, int *on_rope, struct lx_error *err)
{
    const char *eq = strchr(kv, '='), *dot = strchr(kv, '.');
    if (!eq || eq == kv)
        return lx_err(err, LX_EINVAL, "argument '%s' is not k=v\n  hint: e.g. tau=10", kv);
    int item = 1;
    if (dot && dot < eq) {
        size_t n = (size_t)(dot - kv);
        while (item >= 0 && !(strlen(st->items[item].method->name) == n &&
                              strncmp(st->items[item].method->name, kv, n) == 0))
            item--;
        if (item < 0)
            return lx_err(err, LX_EINVAL, "argument '%s': '%.*s' is not a method of the stack %s+%s\n"
                          "  hint: name the shown method's parameters plainly (e.g. scale=4) and rope's as "
                          "rope.base=500000", kv, (int)n, kv, st->items[0].method->name,
                          st->items[1].method->name);
        *on_rope |= item == 0;
        kv = dot + 1;
    }
    const struct lx_method *m = st->items[item].method;
    char what[96];
    snprintf(what, sizeof what, "method '%s'", m->name);
    return set_kv(&m->schema, st->items[item].params, what, kv, err);
}

/* "name(k=v,...)" of one method with its resolved values. */
static void resolved_canon(const struct lx_method_use *u, const void *resolved, struct lx_buf *out)
{
    struct lx_buf t = {0};
    lx_params_text_resolved(&u->method->schema, u->params, resolved, &t);
    lx_buf_puts(out, u->method->name);
    if (t.len)
        lx_buf_printf(out, "(%s)", lx_buf_str(&t));
    lx_buf_free(&t);
}

/* Compile M alone, or on rope when it needs rotary positions (or a rope.
** parameter was given); *on_rope says which. M's own complaint is reported. */
static int show_compile(const struct lx_stack *st, const struct lx_facts *f, struct lx_spec *spec, int *on_rope,
                        struct lx_error *err)
{
    struct lx_stack alone = {.n = 1, .items = {st->items[1]}};
    struct lx_error first_err = {{0}};
    if (!*on_rope && lx_stack_compile(&alone, f, spec, &first_err) == LX_OK)
        return LX_OK;
    int rc = *on_rope ? LX_EINVAL : LX_OK;
    *on_rope = st->items[1].method != st->items[0].method;
    if (*on_rope && lx_stack_compile(st, f, spec, err) == LX_OK)
        return LX_OK;
    return rc == LX_EINVAL ? rc : lx_err(err, LX_EINVAL, "%s", first_err.msg);
}

static void show_print(const struct lx_stack *st, const struct lx_spec *spec, const struct lx_facts *f, int on_rope)
{
    const struct lx_method_use *u = &st->items[1];
    const void *resolved = spec->params[on_rope ? 1 : 0];
    struct lx_buf out = {0};
    lx_buf_puts(&out, "{\n  \"method\": ");
    lx_buf_json_str(&out, u->method->name);
    lx_buf_puts(&out, ",\n  \"canonical\": \"");
    resolved_canon(u, resolved, &out);
    if (on_rope) {
        lx_buf_puts(&out, "\",\n  \"stack\": \"");
        resolved_canon(&st->items[0], spec->params[0], &out);
        lx_buf_puts(&out, "+");
        resolved_canon(u, resolved, &out);
    }
    lx_buf_printf(&out, "\",\n  \"facts\": {\"d_head\": %d, \"train_len\": %ld, \"length\": %ld, \"heads\": %d},"
                  "\n  \"params\": ", f->d_head, f->train_len, f->length, f->n_heads);
    lx_params_json(&u->method->schema, resolved, &out);
    lx_buf_puts(&out, ",\n  \"tables\": {");
    int first = 1;
    show_ops(&out, spec, f->length, &first);
    show_spec(&out, spec, f->length, &first);
    lx_buf_puts(&out, first ? "}\n}\n" : "\n  }\n}\n");
    fputs(lx_buf_str(&out), stdout);
    lx_buf_free(&out);
}

/* `lenx show method M [k=v | rope.k=v ...]`: M's resolved parameters and
** tables, alone or on top of rope. */
static int show_method(const struct lx_method *m, const struct lx_args *a, struct lx_error *err)
{
    struct lx_facts f;
    int rc = show_facts(a, &f, err), on_rope = 0;
    struct lx_stack st = {.n = 2};
    st.items[0].method = lx_method_find("rope");
    st.items[1].method = m;
    for (int i = 0; i < 2; i++) {
        st.items[i].params = lx_xcalloc(1, st.items[i].method->schema.size);
        lx_params_defaults(&st.items[i].method->schema, st.items[i].params);
    }
    for (int i = 2; i < a->n_pos && rc == LX_OK; i++)
        rc = show_arg(&st, a->pos[i], &on_rope, err);
    for (int i = 0; i < 2; i++)
        lx_params_finish(&st.items[i].method->schema, st.items[i].params);
    struct lx_spec spec;
    if (rc == LX_OK && (rc = show_compile(&st, &f, &spec, &on_rope, err)) == LX_OK)
        show_print(&st, &spec, &f, on_rope);
    lx_stack_release(&st);
    return rc;
}

static int show_task(const struct lx_task *t, const struct lx_args *a, struct lx_error *err)
{
    void *params = lx_xcalloc(1, t->schema.size);
    lx_params_defaults(&t->schema, params);
    char what[96];
    snprintf(what, sizeof what, "task '%s'", t->name);
    int rc = apply_kv(&t->schema, params, what, a->n_pos - 2, a->pos + 2, err);
    if (rc == LX_OK) {
        struct lx_buf out = {0};
        lx_buf_puts(&out, "{\n  \"task\": ");
        lx_buf_json_str(&out, t->name);
        lx_buf_puts(&out, ",\n  \"params\": ");
        lx_params_json(&t->schema, params, &out);
        lx_buf_puts(&out, "\n}\n");
        fputs(lx_buf_str(&out), stdout);
        lx_buf_free(&out);
    }
    free(params);
    return rc;
}

static void describe(const char *kind, const char *name, const char *summary, const struct lx_schema *s)
{
    struct lx_buf b = {0};
    lx_schema_describe(s, &b, "  ");
    printf("%s %s: %s\n\nparameters:\n%s", kind, name, summary, b.len ? lx_buf_str(&b) : "  (none)\n");
    lx_buf_free(&b);
}

static int cmd_show(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, show_opts, N_OPTS(show_opts), argc, argv, &help, &err)) < 0)
        return fail(&err, rc);
    if (a.n_pos < 2 || (strcmp(a.pos[0], "method") && strcmp(a.pos[0], "task") && strcmp(a.pos[0], "sweep") &&
                        strcmp(a.pos[0], "model"))) {
        if (help)
            return usage(show_usage, show_opts, N_OPTS(show_opts)), 0;
        fprintf(stderr, "lenx: error: show takes 'method NAME', 'task NAME', 'sweep NAME' or 'model PATH'\n"
                "  hint: lenx show method scaleinv tau=10 --length 8\n");
        return 2;
    }
    const char *db = lx_args_get(&a, show_opts, N_OPTS(show_opts), "db");
    if (strcmp(a.pos[0], "sweep") == 0 || strcmp(a.pos[0], "model") == 0) {
        if (help)
            return usage(show_usage, show_opts, N_OPTS(show_opts)), 0;
        struct lx_buf out = {0};
        rc = a.pos[0][1] == 'w' ? lx_stored_show_sweep(a.pos[1], db, &err)
                                : lx_modelcmd_show(a.pos[1], db ? db : LX_DEFAULT_DB, &out, &err);
        fputs(lx_buf_str(&out), stdout);
        lx_buf_free(&out);
        return rc < 0 ? fail(&err, rc) : 0;
    }
    if (strcmp(a.pos[0], "method") == 0) {
        const struct lx_method *m = lx_method_find(a.pos[1]);
        if (!m)
            return fail(&err, lx_unknown_name(&err, "method", a.pos[1]));
        if (help)
            return describe("method", m->name, m->summary, &m->schema), 0;
        rc = show_method(m, &a, &err);
    } else {
        const struct lx_task *t = lx_task_find(a.pos[1]);
        if (!t)
            return fail(&err, lx_unknown_name(&err, "task", a.pos[1]));
        if (help)
            return describe("task", t->name, t->summary, &t->schema), 0;
        rc = show_task(t, &a, &err);
    }
    return rc < 0 ? fail(&err, rc) : 0;
}

/* ---------------------------------------------------------------- list */

static const struct lx_opt list_opts[] = {
    {"db", 1, "result database for 'sweeps' (default " LX_DEFAULT_DB ")"},
};

static const char list_usage[] = "usage: lenx list methods|tasks|sweeps [--db FILE]";

static const char *kind_text(unsigned kind)
{
    if (kind == (LX_KIND_INFERENCE | LX_KIND_TRAINING))
        return "inference or training";
    return kind == LX_KIND_TRAINING ? "training" : "inference";
}

static int cmd_list(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, list_opts, N_OPTS(list_opts), argc, argv, &help, &err)) < 0)
        return fail(&err, rc);
    if (help)
        return usage(list_usage, list_opts, N_OPTS(list_opts)), 0;
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
        const char *db = lx_args_get(&a, list_opts, N_OPTS(list_opts), "db");
        struct lx_store *store;
        if ((rc = lx_stored_open(&store, db, &err)) < 0)
            return fail(&err, rc);
        struct lx_sweep_info *sw;
        int n;
        rc = lx_store_sweeps(store, &sw, &n, &err);
        lx_store_close(store);
        if (rc < 0)
            return fail(&err, rc);
        for (int i = 0; i < n; i++) {
            printf("%-24s %5d ok %5d failed  last %s", sw[i].name, sw[i].n_ok, sw[i].n_failed, sw[i].last);
            if (sw[i].n_texts > 1)      /* the config changed between runs: stale cells may be there */
                printf("  from %d YAML texts (lenx show sweep %s)", sw[i].n_texts, sw[i].name);
            printf("\n");
        }
        lx_sweep_infos_free(sw, n);
        return 0;
    }
    fprintf(stderr, "lenx: error: list what? '%s'\n  hint: %s\n", what, list_usage);
    return 2;
}

/* ---------------------------------------------------------------- rm */

static const struct lx_opt rm_opts[] = {
    {"db", 1, "result database (default " LX_DEFAULT_DB ")"},
    {"sweep", 1, "cells of this sweep"},
    {"commit", 1, "cells made by this commit (prefix)"},
    {"model", 1, "cells that ran on this model (name, or model key prefix)"},
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
    "required. Lists the cells and their count per sweep; deletes them, in one\n"
    "transaction, only with --yes. `lenx rm --not-in CONFIG --yes` removes what a\n"
    "changed config no longer plans, e.g. cells of a model retrained under the same\n"
    "name. Trained models (the checkpoint cache) are kept.";

static int cmd_rm(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, rm_opts, N_OPTS(rm_opts), argc, argv, &help, &err)) < 0)
        return fail(&err, rc);
    if (help)
        return usage(rm_usage, rm_opts, N_OPTS(rm_opts)), 0;
    struct lx_rm_filter f = {
        .sweep = lx_args_get(&a, rm_opts, N_OPTS(rm_opts), "sweep"),
        .commit = lx_args_get(&a, rm_opts, N_OPTS(rm_opts), "commit"),
        .model = lx_args_get(&a, rm_opts, N_OPTS(rm_opts), "model"),
        .method = lx_args_get(&a, rm_opts, N_OPTS(rm_opts), "method"),
        .task = lx_args_get(&a, rm_opts, N_OPTS(rm_opts), "task"),
        .failed = lx_args_get(&a, rm_opts, N_OPTS(rm_opts), "failed") != NULL,
    };
    const char *config = lx_args_get(&a, rm_opts, N_OPTS(rm_opts), "not-in");
    if (a.n_pos || !(f.sweep || f.commit || f.model || f.method || f.task || f.failed || config)) {
        fprintf(stderr, "lenx: error: rm needs at least one filter%s%s\n  hint: lenx rm --sweep NAME "
                "(lists the cells); add --yes to delete them\n", a.n_pos ? "; unexpected argument " : "",
                a.n_pos ? a.pos[0] : "");
        return 2;
    }
    const char *db = lx_args_get(&a, rm_opts, N_OPTS(rm_opts), "db");
    int yes = lx_args_get(&a, rm_opts, N_OPTS(rm_opts), "yes") != NULL;
    rc = lx_stored_rm(db ? db : LX_DEFAULT_DB, &f, config, yes, &err);
    return rc < 0 ? fail(&err, rc) : 0;
}

/* ---------------------------------------------------------------- dispatch */

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

/* ---------------------------------------------------------------- tokenize */

static const struct lx_opt tok_opts[] = {
    {"tokenizer", 1, "llama2.c tokenizer.bin, tokenizer.json, or a directory holding tokenizer.json"},
    {"text", 1, "input file (default: stdin)"},
    {"decode", 0, "the input is a JSON list of ids: print their text"},
    {"no-specials", 0, "do not add the BOS/EOS the tokenizer's post-processing adds"},
    {"info", 0, "print the tokenizer's kind, vocabulary size, BOS/EOS and SHA-256 as JSON"},
    {"stats", 0, "time the encoding; one line on stderr"},
};

static const char tok_usage[] = "usage: lenx tokenize --tokenizer PATH [--text FILE] [--decode] [--no-specials]\n\n"
                                "Print the input's token ids as a JSON list, or the text of a JSON id list.";

static int cmd_tokenize(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, tok_opts, N_OPTS(tok_opts), argc, argv, &help, &err)) < 0)
        return fail(&err, rc);
    if (help)
        return usage(tok_usage, tok_opts, N_OPTS(tok_opts)), 0;
#define TOK_OPT(name) lx_args_get(&a, tok_opts, N_OPTS(tok_opts), name)
    struct lx_tokenize_opts o = {TOK_OPT("tokenizer"), TOK_OPT("text"), TOK_OPT("decode") != NULL,
                                 TOK_OPT("no-specials") != NULL, TOK_OPT("info") != NULL, TOK_OPT("stats") != NULL};
#undef TOK_OPT
    if (!o.tokenizer || a.n_pos)
        return fprintf(stderr, "lenx: error: tokenize needs --tokenizer PATH\n  hint: %s\n", tok_usage), 2;
    struct lx_buf out = {0};
    if ((rc = lx_tokenize(&o, &out, &err)) == LX_OK)
        fwrite(out.s, 1, out.len, stdout);
    lx_buf_free(&out);
    return rc < 0 ? fail(&err, rc) : 0;
}

static const struct command commands[] = {
    {"run", cmd_run, "plan a sweep, run the cells not yet stored, store and print them"},
    {"table", cmd_table, "print stored results as md, csv, latex or json"},
    {"compare", cmd_compare, "show cells that moved between commits, sweeps or a CSV baseline"},
    {"score", lx_cmd_score, "per-token NLL of a text under a checkpoint, as JSON"},
    {"export", lx_cmd_export, "write a model as a Hugging Face directory"},
    {"tokenize", cmd_tokenize, "a text's token ids under a tokenizer file as JSON, or --decode ids to text"},
    {"show", cmd_show, "print a method's resolved parameters and derived tables, or what a model holds"},
    {"list", cmd_list, "list methods, tasks or stored sweeps"},
    {"rm", cmd_rm, "delete chosen stored cells (by sweep, commit, model, method, task, failed, not in a config)"},
};

#define N_COMMANDS ((int)(sizeof commands / sizeof *commands))

static void main_usage(FILE *f)
{
    fprintf(f, "lenx %s - length-extrapolation experiments on transformer attention\n\n"
            "usage: lenx [--data DIR] COMMAND [options]   (lenx COMMAND --help for details)\n\ncommands:\n",
            LX_VERSION);
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nglobal options:\n"
            "  --data DIR   the corpus data directory (docs/data.md); default $LENX_DATA, else the\n"
            "               checkout's data/ (build tree) or <prefix>/share/lenx/data (installed)\n"
            "\nexit status: 0 ok, 1 cells failed or moved, 2 bad input, 3 store or file error\n");
}

int main(int argc, char **argv)
{
    struct lx_error err;
    if (lx_registry_check(&err) < 0) {
        fprintf(stderr, "lenx: internal error: %s\n", err.msg);
        return 70;
    }
    int rc = lx_args_global(&argc, &argv, &err);
    if (rc < 0)
        return fail(&err, rc);
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        if (argc >= 3 && strcmp(argv[1], "help") == 0)
            for (int i = 0; i < N_COMMANDS; i++)
                if (strcmp(commands[i].name, argv[2]) == 0) {
                    char *h[] = {"--help"};
                    return commands[i].fn(1, h);
                }
        main_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        char blas[128];
        lx_blas_describe(blas, sizeof blas);
        printf("lenx %s (commit %.12s%s; %s; %d threads)\n", LX_VERSION, lx_build_commit(),
               lx_build_dirty() ? ", dirty" : "", blas, omp_get_max_threads());
        return 0;
    }
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, argv[1]) == 0)
            return commands[i].fn(argc - 2, argv + 2);
    const char *names[N_COMMANDS];
    for (int i = 0; i < N_COMMANDS; i++)
        names[i] = commands[i].name;
    const char *near = lx_closest(argv[1], names, N_COMMANDS);
    fprintf(stderr, "lenx: error: unknown command '%s'\n  hint: %s%s%slenx --help lists the commands\n",
            argv[1], near ? "did you mean '" : "", near ? near : "", near ? "'? " : "");
    return 2;
}
