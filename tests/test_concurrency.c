/*
** tests/test_concurrency.c - several `lenx run` processes on one store, and
** the model cache as files, end to end through the binary: concurrent runs of
** one sweep and of disjoint sweeps compute each cell once and train each model
** once; kill -9 followed by a rerun loses and duplicates nothing; a failed
** --force rerun keeps the ok row; a fresh --db reuses the checkpoint files; a
** bit-flipped checkpoint is reported and retrained, refused under --no-train
** and refused by `lenx score`.
**
** Each test runs in its own temp dir (tests/shell.h); the binary is $LENX_BIN,
** the checkout $LENX_ROOT. The models train 20 steps at length 32 (well under
** a second each), so four processes contend for them while the others wait.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/shell.h"

static void setup(void)
{
    shell_setup("conc");
    cr_assert_not_null(getenv("LENX_ROOT"), "LENX_ROOT must name the checkout (make test sets it)");
}

/* Two model keys (rope and nope train differently; rope+logn shares rope's),
** 3 stacks x 2 lengths = 6 cells. */
#define MODEL_YAML                                                                                         \
    "models:\n  tiny: {arch: {mode: causal, layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64},\n"   \
    "         train: {length: 32, batch: 4, steps: 20, warmup: 5, eval_every: 10, eval_windows: 4}}\n"

static const char *shared =
    "name: shared\nseed: 1\n" MODEL_YAML
    "methods: [rope, nope, [rope, {logn: {mode: qwen}}]]\ntasks: [{ppl: {windows: 2}}]\nlengths: [32, 64]\n";

/* Start n `lenx run` processes at once (config i is cfg[i % n_cfg]), wait for
** them all, and return the sum of their "N models trained" counts. Each
** process's output is in out<i>.txt; every one must exit 0. */
static long run_concurrently(int n, const char *const *cfg, int n_cfg, const char *db)
{
    char cmd[4096] = "", out[8192];
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(cmd + len, sizeof cmd - len,
                                "$L run %s --db %s --quiet --no-table > out%d.txt 2>&1 & p%d=$!; ",
                                cfg[i % n_cfg], db, i, i);
    len += (size_t)snprintf(cmd + len, sizeof cmd - len, "s=0; ");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(cmd + len, sizeof cmd - len, "wait $p%d || s=$?; ", i);
    snprintf(cmd + len, sizeof cmd - len, "exit $s");
    int rc = sh(out, sizeof out, "%s", cmd);
    cr_expect_eq(rc, 0, "a process failed: %s", out);
    cr_assert_eq(sh(out, sizeof out, "cat out*.txt"), 0);
    long trained = 0;
    for (const char *p = out; (p = strstr(p, " models trained")) != NULL; p++) {
        const char *q = p;
        while (q > out && q[-1] >= '0' && q[-1] <= '9')
            q--;
        trained += atol(q);
    }
    return trained;
}

/* Every planned cell once ok, no failed row, no duplicate, an intact file. */
static void expect_each_cell_once(const char *db, long n_cells)
{
    char out[256];
    cr_expect_eq(sql_long(db, "select count(*) from runs where status = 'ok'"), n_cells);
    cr_expect_eq(sql_long(db, "select count(*) from runs"), n_cells, "one row per cell");
    cr_expect_eq(sql_long(db, "select count(*) from (select distinct sweep, key from runs)"), n_cells);
    cr_expect_eq(sql_long(db, "select count(*) from runs where status = 'failed'"), 0);
    cr_expect_eq(sql_long(db, "select count(*) from (select run_id from metrics group by run_id)"), n_cells);
    sql_text(out, sizeof out, db, "pragma integrity_check");
    cr_expect_str_eq(out, "ok");
}

Test(conc, four_runs_of_one_sweep_compute_each_cell_once, .init = setup, .fini = teardown, .timeout = 120)
{
    write_file("s.yaml", shared);
    const char *cfg[] = {"s.yaml"};
    long trained = run_concurrently(4, cfg, 1, "r.db");
    cr_expect_eq(trained, 2, "two model keys, each trained by one process");
    expect_each_cell_once("r.db", 6);
    cr_expect(exists("models"), "checkpoints go to <db dir>/models");
    cr_expect_eq(sql_long("r.db", "select count(*) from models"), 2);
    cr_expect_eq(sql_long("r.db", "select count(*) from claims"), 0, "every claim released");
    cr_expect_eq(sh(NULL, 0, "! ls models | grep -q tmp"), 0, "no temporary checkpoint left");
}

Test(conc, failed_force_rerun_keeps_the_ok_row, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192];
    write_file("s.yaml", shared);
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --format csv > before.csv"), 0, "%s", out);
    /* The rope checkpoint's path becomes a directory: it cannot be loaded,
    ** and the retrained model cannot be saved there, so the rope cells fail. */
    cr_assert_eq(sh(out, sizeof out, "k=$(sqlite3 r.db \"select distinct model_key from runs where method = 'rope'\");"
                    " rm models/$k.safetensors && mkdir models/$k.safetensors"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L run s.yaml --db r.db --no-table --force"), 1, "%s", out);
    cr_expect(strstr(out, "4 failed") != NULL, "rope and rope+logn at two lengths fail: %s", out);
    cr_expect_eq(sql_long("r.db", "select count(*) from runs where status = 'ok'"), 6, "the ok rows stay");
    cr_expect_eq(sql_long("r.db", "select count(*) from runs where status = 'failed'"), 0);
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --format csv > after.csv"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "cmp before.csv after.csv"), 0, "the table is unchanged: %s", out);
}
