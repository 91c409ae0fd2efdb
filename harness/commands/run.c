/*
** harness/commands/run.c - `lenx run CONFIG`: its options, the checks before a
** sweep (the config, the shard, OpenBLAS), `--dry-run`'s plan, and after the
** run its summary and table. The runner itself is run.c.
*/
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/cli.h"
#include "harness/engine/kernels/blas.h"
#include "harness/sweep/run.h"
#include "harness/commands/stored.h"

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
    {"save-every", 1, "seconds between saves of a training run's resumable state (default 300; 0: every step; "
                      "off: never); a killed run resumes from it"},
    LX_NUMERICS_OPTS,
};

static const char run_usage[] =
    "usage: lenx run CONFIG.yaml [options]\n\n"
    "Plan the sweep in CONFIG (methods x tasks x lengths x seeds), skip cells already\n"
    "stored, run the rest, store every cell, and print the sweep's table. The whole\n"
    "config is checked before anything runs; a bad config writes nothing. With --shard\n"
    "K/N (or inside a Slurm array job), only the cells whose run key falls in shard K\n"
    "run (docs/cluster.md). --portable (or --numerics portable) runs the sweep in portable\n"
    "numerics whatever its `numerics:` says (docs/config.md#numerics).";

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

/* --save-every into *out (300 unless given; off: -1): -1 with the error
** printed when it is neither seconds nor off. */
static int save_every_of(const struct lx_args *a, double *out)
{
    const char *every = lx_args_value(a, "save-every");
    char *end = NULL;
    *out = 300;
    if (every && strcmp(every, "off") == 0)
        *out = -1;
    else if (every && (*out = strtod(every, &end), end == every || *end || !(*out >= 0))) {
        fprintf(stderr, "lenx: error: --save-every %s: give seconds (0: after every step) or off\n"
                "  hint: --save-every 600 saves a training's state every ten minutes (the default is 300)\n", every);
        return -1;
    }
    return 0;
}

/* The store at db for --dry-run to read which cells it holds, or NULL: none there yet (a dry run makes no
** file), --force (a run would skip nothing), or one it cannot read (said, and the plan printed unmarked). */
static struct lx_store *plan_store(const char *db, int force)
{
    struct stat sb;
    struct lx_store *store = NULL;
    struct lx_error err;
    if (force || stat(db, &sb) != 0)
        return NULL;
    if (lx_stored_open(&store, db, &err) < 0)
        fprintf(stderr, "lenx: note: cannot read %s, so stored cells are not marked: %s\n", db, err.msg);
    return store;
}

/* `run --dry-run`: the plan's cells, one a line (a shard's; under --models-only, the cells whose models the
** shard trains), each stored ok in db marked "stored" (a run skips them), and the count of those. It listed
** every cell alike, so it could not say what a rerun would do. */
static void run_print_plan(const struct lx_grid *grid, const struct lx_plan *plan, const struct lx_shard *sh,
                           int models_only, const char *db, int force)
{
    struct lx_store *store = plan_store(db, force);
    int n = 0, n_stored = 0;
    printf("sweep %s: %d cells%s\n", grid->name, plan->n_cells,
           grid->numerics == LX_NUMERICS_PORTABLE ? ", portable numerics" : "");
    if (sh)
        printf("shard %ld/%ld%s:\n", sh->k, sh->n, models_only ? " of the models" : "");
    for (int i = 0; i < plan->n_cells; i++) {
        const struct lx_cell *c = &plan->cells[i];
        char mem[32];
        struct lx_error err;
        int done = 0;
        if ((models_only && c->model < 0) || !lx_shard_has(sh, models_only ? lx_cell_root_model(c) : c->key))
            continue;
        printf("  %s  %s  %s  length=%ld seed=%ld", c->key, grid->tasks[c->task].canon,
               c->method, c->length, c->seed);
        if (c->model >= 0)
            printf("  memory=%s  model=%s [%s]", lx_fmt_bytes(mem, c->mem), grid->models[c->model].name,
                   c->model_key);
        if (c->base_key[0])     /* fine-tuned: from which model (shared by the stacks that train it) */
            printf(" from [%s]", c->base_key);
        if (store && lx_store_done(store, grid->name, c->key, &done, &err) == LX_OK && done)
            printf("  stored");
        n++;
        n_stored += done;
        printf("\n");
    }
    if (store)
        printf("%d of the %d cells stored ok in %s (a run skips them; --force reruns them), %d to run\n", n_stored,
               n, db, n - n_stored);
    lx_store_close(store);
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
** 3 otherwise); the kernels lenx chose, or a CPU wider than them, is a note
** for a fast sweep only (a portable one runs no OpenBLAS product). */
static int run_check_blas(enum lx_numerics numerics)
{
    if (!lx_blas_is_openmp()) {
        char blas[128];
        lx_blas_describe(blas, sizeof blas);
        fprintf(stderr, "lenx: error: OpenBLAS is not the OpenMP build (%s)\n"
                "  hint: rebuild with `make`; it links the openblas-openmp library with an rpath\n", blas);
        return 3;
    }
    char msg[512];
    if (numerics != LX_NUMERICS_PORTABLE && lx_blas_unrunnable(msg, sizeof msg)) {
        fprintf(stderr, "lenx: error: %s\n", msg);
        return 2;
    }
    if (numerics == LX_NUMERICS_FAST)
        lx_cli_blas_notice();
    return 0;
}

/* Run the plan into the store at db, saving a training's state every
** save_every seconds (save_every_of), print the summary and (unless
** --no-table) the table; the exit status. */
static int run_sweep(const struct lx_args *a, const char *db, const struct lx_grid *grid, const struct lx_plan *plan,
                     const struct lx_shard *shard, double save_every)
{
    struct lx_error err;
    struct lx_store *store;
    int rc = lx_store_open(&store, db, 0, &err);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    char models_dir[4096];
    lx_run_models_dir(db, models_dir, sizeof models_dir);
    struct lx_run_opts o = {
        .force = lx_args_value(a, "force") != NULL,
        .progress = lx_args_value(a, "quiet") ? 0 : isatty(STDERR_FILENO) ? 2 : 1,
        .models_dir = models_dir,
        .no_train = lx_args_value(a, "no-train") != NULL,
        .keep_prompts = lx_args_value(a, "keep-prompts") != NULL,
        .shard = shard,
        .models_only = lx_args_value(a, "models-only") != NULL,
        .save_every = save_every,
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
    if (!lx_args_value(a, "no-table") && !o.models_only)
        status = run_print_table(db, grid);
    return sum.n_failed ? 1 : status;
}

int lx_cmd_run(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int rc = lx_cli_args(&a, run_opts, LX_N_OPTS(run_opts), run_usage, argc, argv);
    if (rc >= 0)
        return rc;
    if (a.n_pos != 1) {
        fprintf(stderr, "lenx: error: run takes one CONFIG file\n  hint: lenx run configs/quick.yaml\n");
        return 2;
    }
    const char *db = lx_args_value(&a, "db");
    const char *threads = lx_args_value(&a, "threads");
    db = db ? db : LX_DEFAULT_DB;
    if (threads) {
        long t;
        if ((rc = lx_args_long(threads, "threads", 1, 1024, &t, &err)) < 0)
            return lx_cli_fail(&err, rc);
        omp_set_num_threads((int)t);
    }
    struct lx_grid_over over = {.numerics = LX_NUMERICS_FAST};
    if ((rc = lx_args_numerics(&a, &over.numerics, &over.numerics_given, &err)) < 0 ||
        (rc = lx_args_kv_cache(&a, &over.kv, &over.kv_given, &err)) < 0 ||
        (rc = lx_args_activations(&a, &over.acts, &over.acts_given, &err)) < 0)
        return lx_cli_fail(&err, rc);
    double save_every;
    if (save_every_of(&a, &save_every) < 0)     /* before the plan: a --dry-run checks it too */
        return 2;
    struct lx_shard shard;
    struct lx_buf note = {0};
    int sharded = 0;
    rc = lx_shard_choose(lx_args_value(&a, "shard"), &shard, &sharded, &note, &err);
    if (note.len)
        fprintf(stderr, "lenx: %s\n", lx_buf_str(&note));
    lx_buf_free(&note);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    struct lx_grid grid;
    struct lx_plan plan = {0};
    rc = lx_grid_load_over(&grid, a.pos[0], &over, &err);  /* the command line beats the file */
    if (rc == LX_OK)
        rc = lx_plan_build(&plan, &grid, &err);
    if (rc < 0) {
        lx_grid_release(&grid);
        return lx_cli_fail(&err, rc);
    }
    lx_plan_warn(&plan);
    int status = 0;
    if (lx_args_value(&a, "dry-run"))
        run_print_plan(&grid, &plan, sharded ? &shard : NULL, lx_args_value(&a, "models-only") != NULL, db,
                       lx_args_value(&a, "force") != NULL);
    else if ((status = run_check_blas(grid.numerics)) == 0)
        status = run_sweep(&a, db, &grid, &plan, sharded ? &shard : NULL, save_every);
    lx_plan_release(&plan);
    lx_grid_release(&grid);
    return status;
}
