/*
** harness/main.c - the lenx command line.
**
** To add a command: write a `static int cmd_<name>(int argc, char **argv)` with
** its option table and usage text, and add one row to `commands[]` below.
**
** Exit status: 0 success; 1 some cells failed (run), some cells moved
** (compare) or conflicted (merge); 2 bad input (config, arguments) with nothing written; 3 the store
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
#include "harness/show.h"
#include "harness/stored.h"
#include "harness/core/version.h"
#include "results/views.h"

#define N_OPTS(t) ((int)(sizeof t / sizeof *t))

/* ---------------------------------------------------------------- run */

static const struct lx_opt run_opts[] = {
    {"db", 1, "result database (default " LX_DEFAULT_DB ")"},
    {"force", 0, "recompute cells that are already stored (an ok row stays until the new one succeeds)"},
    {"no-train", 0, "never train: a cell whose model has no usable checkpoint fails"},
    {"dry-run", 0, "check the config and print the plan; run and write nothing"},
    {"threads", 1, "OpenMP threads (default: OMP_NUM_THREADS or all cores)"},
    {"no-table", 0, "do not print the sweep's table at the end"},
    {"quiet", 0, "no progress on stderr"},
    {"keep-prompts", 0, "store every retrieval prompt with its output (bytes; about length bytes per instance)"},
    {"shard", 1, "K/N: run only shard K of N (0-based; default in a Slurm array job: from its task id)"},
    {"models-only", 0, "train (or find) the models the cells need and run no cell (a cluster's first stage)"},
};

static const char run_usage[] =
    "usage: lenx run CONFIG.yaml [options]\n\n"
    "Plan the sweep in CONFIG (methods x tasks x lengths x seeds), skip cells already\n"
    "stored, run the rest, store every cell, and print the sweep's table. The whole\n"
    "config is checked before anything runs; a bad config writes nothing. With --shard\n"
    "K/N (or inside a Slurm array job), only the cells whose run key falls in shard K\n"
    "run (docs/cluster.md).";

static int print_table(const char *db, const char *sweep, const char *metrics, enum lx_format fmt)
{
    struct lx_store *store;
    struct lx_error err;
    int rc = lx_stored_open(&store, db, &err);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    struct lx_rows rows = {0};
    struct lx_filter f = {.sweep = sweep};
    rc = lx_store_select(store, &f, &rows, &err);
    lx_store_close(store);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    struct lx_buf out = {0};
    lx_render(&rows, fmt, metrics, &out);
    fputs(lx_buf_str(&out), stdout);
    lx_buf_free(&out);
    lx_rows_release(&rows);
    return 0;
}

/* `run --dry-run`: the plan's cells, one a line (a shard's; under
** --models-only, the cells whose models the shard trains). */
static void run_print_plan(const struct lx_grid *grid, const struct lx_plan *plan, const struct lx_shard *sh,
                           int models_only)
{
    printf("sweep %s: %d cells\n", grid->name, plan->n_cells);
    if (sh)
        printf("shard %ld/%ld%s:\n", sh->k, sh->n, models_only ? " of the models" : "");
    for (int i = 0; i < plan->n_cells; i++) {
        const struct lx_cell *c = &plan->cells[i];
        if ((models_only && c->model < 0) || !lx_shard_has(sh, models_only ? lx_cell_root_model(c) : c->key))
            continue;
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
static int run_sweep(const struct lx_args *a, const char *db, const struct lx_grid *grid, const struct lx_plan *plan,
                     const struct lx_shard *shard)
{
    struct lx_error err;
    struct lx_store *store;
    int rc = lx_store_open(&store, db, 0, &err);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    char models_dir[4096];
    lx_run_models_dir(db, models_dir, sizeof models_dir);
    struct lx_run_opts o = {
        .force = lx_args_get(a, run_opts, N_OPTS(run_opts), "force") != NULL,
        .progress = lx_args_get(a, run_opts, N_OPTS(run_opts), "quiet") ? 0 : isatty(STDERR_FILENO) ? 2 : 1,
        .models_dir = models_dir,
        .no_train = lx_args_get(a, run_opts, N_OPTS(run_opts), "no-train") != NULL,
        .keep_prompts = lx_args_get(a, run_opts, N_OPTS(run_opts), "keep-prompts") != NULL,
        .shard = shard,
        .models_only = lx_args_get(a, run_opts, N_OPTS(run_opts), "models-only") != NULL,
    };
    struct lx_run_summary sum;
    rc = lx_run_plan(plan, store, &o, &sum, &err);
    lx_store_close(store);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    if (o.models_only)
        fprintf(stderr, "lenx: sweep '%s': %d models ready, %d failed; %d trained now (%ld steps)\n", grid->name,
                sum.n_ok, sum.n_failed, sum.n_trained, sum.train_steps);
    else
        fprintf(stderr, "lenx: sweep '%s': %d run (%d ok, %d failed), %d already stored; "
                "%d models trained (%ld steps)\n", grid->name, sum.n_ok + sum.n_failed, sum.n_ok,
                sum.n_failed, sum.n_skipped, sum.n_trained, sum.train_steps);
    lx_stored_note_stale(db, plan, a->pos[0]);
    int status = 0;
    if (!lx_args_get(a, run_opts, N_OPTS(run_opts), "no-table") && !o.models_only)
        status = run_print_table(db, grid);
    return sum.n_failed ? 1 : status;
}

static int cmd_run(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, run_opts, N_OPTS(run_opts), argc, argv, &help, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if (help)
        return lx_cli_usage(run_usage, run_opts, N_OPTS(run_opts)), 0;
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
            return lx_cli_fail(&err, rc);
        omp_set_num_threads((int)t);
    }
    struct lx_shard shard;
    struct lx_buf note = {0};
    int sharded = 0;
    rc = lx_shard_choose(lx_args_get(&a, run_opts, N_OPTS(run_opts), "shard"), &shard, &sharded, &note, &err);
    if (note.len)
        fprintf(stderr, "lenx: %s\n", lx_buf_str(&note));
    lx_buf_free(&note);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    struct lx_grid grid;
    struct lx_plan plan = {0};
    rc = lx_grid_load(&grid, a.pos[0], &err);
    if (rc == LX_OK)
        rc = lx_plan_build(&plan, &grid, &err);
    if (rc < 0) {
        lx_grid_release(&grid);
        return lx_cli_fail(&err, rc);
    }
    int status = 0;
    if (lx_args_get(&a, run_opts, N_OPTS(run_opts), "dry-run"))
        run_print_plan(&grid, &plan, sharded ? &shard : NULL,
                       lx_args_get(&a, run_opts, N_OPTS(run_opts), "models-only") != NULL);
    else if ((status = run_check_blas()) == 0)
        status = run_sweep(&a, db, &grid, &plan, sharded ? &shard : NULL);
    lx_plan_release(&plan);
    lx_grid_release(&grid);
    return status;
}

/* ---------------------------------------------------------------- table */

#define LX_SERIES_HINT "the tasks store nll_by_pos (ppl), acc_by_depth, logprob_by_depth, entropy_by_depth " \
                       "(retrieval tasks), mass_by_distance and mass_by_distance_train (attn)"

static const struct lx_opt table_opts[] = {
    {"db", 1, "result database (default " LX_DEFAULT_DB ")"},
    {"sweep", 1, "only this sweep"},
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

static int cmd_table(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, table_opts, N_OPTS(table_opts), argc, argv, &help, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if (help)
        return lx_cli_usage(table_usage, table_opts, N_OPTS(table_opts)), 0;
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
    const char *series = lx_args_get(&a, table_opts, N_OPTS(table_opts), "series");
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
        .sweep = lx_args_get(&a, table_opts, N_OPTS(table_opts), "sweep"),
        .commit = lx_args_get(&a, table_opts, N_OPTS(table_opts), "commit"),
        .series = series,
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
        return lx_cli_fail(&err, rc);
    }
    if (rows.n == 0 && series) {
        fprintf(stderr, "lenx: error: no points of series '%s' stored%s%s\n  hint: %s\n", series,
                f.sweep ? " in sweep " : "", f.sweep ? f.sweep : "", LX_SERIES_HINT);
        lx_rows_release(&rows);
        return 2;
    }
    if (rows.n == 0)
        fprintf(stderr, "lenx: no ok results stored%s%s\n", f.sweep ? " in sweep " : "", f.sweep ? f.sweep : "");
    struct lx_buf out = {0};
    if (series)
        lx_render_series(&rows, (enum lx_format)fmt, &out);
    else
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
        return lx_cli_fail(&err, rc);
    if (help)
        return lx_cli_usage(compare_usage, compare_opts, N_OPTS(compare_opts)), 0;
    if (a.n_pos != 2) {
        fprintf(stderr, "lenx: error: compare takes BASE and HEAD\n  hint: lenx compare baseline.csv quick\n");
        return 2;
    }
    struct lx_compare_opts o = {.rtol = 1e-6, .atol = 1e-9};
    const char *v;
    if ((v = lx_args_get(&a, compare_opts, N_OPTS(compare_opts), "rtol")) &&
        (rc = lx_args_double(v, "rtol", &o.rtol, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if ((v = lx_args_get(&a, compare_opts, N_OPTS(compare_opts), "atol")) &&
        (rc = lx_args_double(v, "atol", &o.atol, &err)) < 0)
        return lx_cli_fail(&err, rc);
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
        return lx_cli_fail(&err, rc);
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

/* ---------------------------------------------------------------- report */

static const struct lx_opt report_opts[] = {
    {"db", 1, "result database (default " LX_DEFAULT_DB ")"},
    {"sweep", 1, "only these sweeps, comma-separated (default: every sweep)"},
    {"metric", 1, "metrics to plot and table, comma-separated (default: each task's headline metrics)"},
    {"threshold", 1, "effective length: fraction of the training-length score to keep (default 0.85)"},
    {"output", 1, "the HTML file to write (also -o FILE)"},
};

static const char report_usage[] =
    "usage: lenx report [--sweep S,...] [--db FILE] [--metric M,...] [--threshold T] -o report.html\n\n"
    "Write one self-contained HTML page (inline SVG plots drawn by gnuplot, no script,\n"
    "no network) of stored sweeps: per task and metric, value against length per method\n"
    "(log-2 axis, training length dashed, error bars from the stored standard errors)\n"
    "beside its table with an effective-length column; NLL by position and attention\n"
    "mass by distance per length; depth x length heat maps of retrieval accuracy; and\n"
    "each sweep's provenance (commit, dirty flag, machine, time, YAML).";

/* The headline metrics of a stored task string ("ppl(windows=16)" -> ppl's). */
static const char *task_headline(const char *task)
{
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(task, "("), task);
    const struct lx_task *t = lx_task_find(name);
    return t ? t->headline : NULL;
}

/* Split "a,b" into names (pointers into buf). */
static int split_list(char *buf, const char **names, int max)
{
    int n = 0;
    for (char *p = strtok(buf, ","); p && n < max; p = strtok(NULL, ","))
        names[n++] = p;
    return n;
}

static int report_write(const char *db, const struct lx_report_opts *o, const char *path, struct lx_error *err)
{
    struct lx_store *store = NULL;
    int rc = lx_stored_open(&store, db, err);
    for (int i = 0; i < o->n_sweeps && rc == LX_OK; i++)
        rc = lx_stored_check_sweep(store, db, o->sweeps[i], err);
    struct lx_buf out = {0};
    if (rc == LX_OK)
        rc = lx_report(store, o, &out, err);
    if (store)
        lx_store_close(store);
    FILE *f = rc == LX_OK ? fopen(path, "w") : NULL;
    if (rc == LX_OK && (!f || fwrite(out.s, 1, out.len, f) != out.len))
        rc = lx_err(err, LX_EIO, "cannot write %s\n  hint: check that its folder exists and is writable", path);
    if (f && fclose(f) != 0 && rc == LX_OK)
        rc = lx_err(err, LX_EIO, "cannot write %s\n  hint: is the disk full?", path);
    lx_buf_free(&out);
    return rc;
}

static int cmd_report(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, report_opts, N_OPTS(report_opts), argc, argv, &help, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if (help)
        return lx_cli_usage(report_usage, report_opts, N_OPTS(report_opts)), 0;
    const char *path = lx_args_get(&a, report_opts, N_OPTS(report_opts), "output");
    if (a.n_pos == 2 && strcmp(a.pos[0], "-o") == 0 && !path)
        path = a.pos[1];
    else if (a.n_pos) {
        fprintf(stderr, "lenx: error: unexpected argument '%s'\n  hint: lenx report -o report.html\n", a.pos[0]);
        return 2;
    }
    if (!path) {
        fprintf(stderr, "lenx: error: report needs an output file\n  hint: lenx report -o report.html\n");
        return 2;
    }
    struct lx_report_opts o = {.threshold = 0.85, .headline = task_headline,
                               .metrics = lx_args_get(&a, report_opts, N_OPTS(report_opts), "metric")};
    const char *v = lx_args_get(&a, report_opts, N_OPTS(report_opts), "threshold");
    if (v && (rc = lx_args_double(v, "threshold", &o.threshold, &err)) == LX_OK && !(o.threshold > 0 && o.threshold <= 1))
        rc = lx_err(&err, LX_EINVAL, "--threshold %s is outside (0, 1]\n  hint: 0.85 keeps 85%% of the "
                    "training-length score", v);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    const char *db = lx_args_get(&a, report_opts, N_OPTS(report_opts), "db"), *names[LX_MAX_POS];
    char *sweeps = lx_xstrdup(lx_args_get(&a, report_opts, N_OPTS(report_opts), "sweep") ?
                              lx_args_get(&a, report_opts, N_OPTS(report_opts), "sweep") : "");
    o.n_sweeps = split_list(sweeps, names, LX_MAX_POS);
    o.sweeps = names;
    o.db = db ? db : LX_DEFAULT_DB;
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
        printf("%-16s %-12s %-20s %-16s %6s %11s %8s  %s\n", "key", "name", "architecture", "trained with", "length",
               "tokens", "time", "file");
    for (int i = 0; i < n; i++) {
        char t[32];
        snprintf(t, sizeof t, m[i].steps ? "%.0f s" : "(file)", m[i].seconds);
        printf("%-16s %-12s %-20s %-16s %6ld %11ld %8s  %s%s\n", m[i].key, m[i].name, m[i].arch, m[i].stack,
               m[i].train_len, m[i].tokens, t, m[i].path, access(m[i].path, R_OK) == 0 ? "" : " (missing)");
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

static int cmd_list(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, list_opts, N_OPTS(list_opts), argc, argv, &help, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if (help)
        return lx_cli_usage(list_usage, list_opts, N_OPTS(list_opts)), 0;
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
            return lx_cli_fail(&err, rc);
        struct lx_sweep_info *sw;
        int n;
        rc = lx_store_sweeps(store, &sw, &n, &err);
        lx_store_close(store);
        if (rc < 0)
            return lx_cli_fail(&err, rc);
        for (int i = 0; i < n; i++) {
            printf("%-24s %5d ok %5d failed  last %s", sw[i].name, sw[i].n_ok, sw[i].n_failed, sw[i].last);
            if (sw[i].n_texts > 1)      /* the config changed between runs: stale cells may be there */
                printf("  from %d YAML texts (lenx show sweep %s)", sw[i].n_texts, sw[i].name);
            printf("\n");
        }
        lx_sweep_infos_free(sw, n);
        return 0;
    }
    if (strcmp(what, "models") == 0) {
        rc = list_models(lx_args_get(&a, list_opts, N_OPTS(list_opts), "db"), &err);
        return rc < 0 ? lx_cli_fail(&err, rc) : 0;
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
        return lx_cli_fail(&err, rc);
    if (help)
        return lx_cli_usage(rm_usage, rm_opts, N_OPTS(rm_opts)), 0;
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
    return rc < 0 ? lx_cli_fail(&err, rc) : 0;
}

/* ---------------------------------------------------------------- dispatch */

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

/* ---------------------------------------------------------------- score */

static const struct lx_opt score_opts[] = {
    {"model", 1, "model: checkpoint, llama2.c .bin, Hugging Face directory, or a model name / key prefix in the store"},
    {"text", 1, "file whose text is scored"},
    {"tokenizer", 1, "tokenizer.bin, tokenizer.json or a directory (default: the one beside the model, else bytes)"},
    {"method", 1, "evaluation-time stack to add, as YAML: logn, [logn, infoscale], {logn: {mode: qwen}}"},
    {"length", 1, "window length (default: the model's training length)"},
    {"db", 1, "store to look model names up in (default " LX_DEFAULT_DB ")"},
};

static const char score_usage[] =
    "usage: lenx score --model NAME_OR_PATH --text FILE [--tokenizer PATH] [--method STACK] [--length L] [--db FILE]\n\n"
    "Print JSON with the per-token NLL (nats) of the file's tokens under a causal model, windows of\n"
    "`length` tokens each starting with BOS, as the ppl task scores them.";

static int cmd_score(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, score_opts, N_OPTS(score_opts), argc, argv, &help, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if (help)
        return lx_cli_usage(score_usage, score_opts, N_OPTS(score_opts)), 0;
    struct lx_score_opts o = {
        .model = lx_args_get(&a, score_opts, N_OPTS(score_opts), "model"),
        .text = lx_args_get(&a, score_opts, N_OPTS(score_opts), "text"),
        .method = lx_args_get(&a, score_opts, N_OPTS(score_opts), "method"),
        .db = lx_args_get(&a, score_opts, N_OPTS(score_opts), "db"),
        .tokenizer = lx_args_get(&a, score_opts, N_OPTS(score_opts), "tokenizer"),
    };
    o.db = o.db ? o.db : LX_DEFAULT_DB;
    if (!o.model || !o.text || a.n_pos) {
        fprintf(stderr, "lenx: error: score needs --model and --text\n  hint: %s\n", score_usage);
        return 2;
    }
    const char *len = lx_args_get(&a, score_opts, N_OPTS(score_opts), "length");
    if (len && (rc = lx_args_long(len, "length", 1, 1L << 20, &o.length, &err)) < 0)
        return lx_cli_fail(&err, rc);
    struct lx_buf out = {0};
    if ((rc = lx_score(&o, &out, &err)) < 0) {
        lx_buf_free(&out);
        return lx_cli_fail(&err, rc);
    }
    fputs(lx_buf_str(&out), stdout);
    lx_buf_free(&out);
    return 0;
}

/* ---------------------------------------------------------------- export */

static const struct lx_opt export_opts[] = {
    {"hf", 1, "directory to write (config.json, model.safetensors)"},
    {"model", 1, "model: a path in any format lenx reads, or a model name / key prefix in the store"},
    {"tokenizer", 1, "the model's tokenizer, copied into DIR (default: the one beside the model, else bytes)"},
    {"db", 1, "store to look model names up in (default " LX_DEFAULT_DB ")"},
};

static int cmd_export(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    static const char use[] = "usage: lenx export --hf DIR --model M [--tokenizer FILE] [--db FILE]\n\nWrite a causal "
                              "SwiGLU rope model and its tokenizer as a Hugging Face Llama directory "
                              "(docs/checkpoints.md).";
    if ((rc = lx_args_parse(&a, export_opts, N_OPTS(export_opts), argc, argv, &help, &err)) < 0)
        return lx_cli_fail(&err, rc);
    const char *dir = lx_args_get(&a, export_opts, N_OPTS(export_opts), "hf"), *db = lx_args_get(&a, export_opts,
                                                                                      N_OPTS(export_opts), "db");
    const char *model = lx_args_get(&a, export_opts, N_OPTS(export_opts), "model");
    if (help || !dir || !model || a.n_pos)
        return lx_cli_usage(use, export_opts, N_OPTS(export_opts)), help ? 0 : 2;
    rc = lx_modelcmd_export(model, db ? db : LX_DEFAULT_DB, lx_args_get(&a, export_opts, N_OPTS(export_opts),
                            "tokenizer"), dir, &err);
    return rc < 0 ? lx_cli_fail(&err, rc) : (printf("%s\n", dir), 0);
}

static const struct command commands[] = {
    {"run", cmd_run, "plan a sweep, run the cells not yet stored, store and print them"},
    {"table", cmd_table, "print stored results as md, csv, latex or json"},
    {"compare", cmd_compare, "show cells that moved between commits, sweeps or a CSV baseline"},
    {"score", cmd_score, "per-token NLL of a text under a checkpoint, as JSON"},
    {"tokenize", lx_cmd_tokenize, "a text's token ids under a tokenizer file as JSON, or --decode ids to text"},
    {"generate", lx_cmd_generate, "continue a prompt with a model: greedy (KV cache) or sampled with a seed"},
    {"report", cmd_report, "write an HTML page of stored sweeps: plots, tables, effective length, provenance"},
    {"export", cmd_export, "write a model as a Hugging Face directory"},
    {"show", lx_cmd_show, "print a method's derived tables, a task's parameters or one instance, a sweep's YAML, what a model holds"},
    {"list", cmd_list, "list methods, tasks, stored sweeps or stored models"},
    {"rm", cmd_rm, "delete chosen stored cells (by sweep, commit, model, method, task, failed, not in a config)"},
    {"merge", lx_cmd_merge, "merge stores (shard databases) into one: lenx merge A.db B.db ... --into OUT.db"},
    {"slurm", lx_cmd_slurm, "write a Slurm array job (models, N shards, merge) for a sweep, and its submit script"},
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
            "\nexit status: 0 ok, 1 cells failed, moved or conflicted, 2 bad input, 3 store or file error\n");
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
        return lx_cli_fail(&err, rc);
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
