/*
** tests/test_run.c - the runner: stored cells are skipped, failed cells are
** stored as failed and the sweep goes on, --force recomputes in place.
*/
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/sweep/run.h"

static char db[64];

static void setup(void)
{
    snprintf(db, sizeof db, "/tmp/lenx-test-run-%d.db", (int)getpid());
    unlink(db);
}

static void teardown(void)
{
    char p[80];
    unlink(db);
    snprintf(p, sizeof p, "%s-wal", db);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", db);
    unlink(p);
}

/* A task with gaussian's parameters that fails at one length. */
static int failing_run(const struct lx_task_ctx *ctx, struct lx_result *out, struct lx_error *err)
{
    extern const struct lx_task lx_task_gaussian;
    if (ctx->length == 20)
        return lx_err(err, LX_ERUN, "synthetic failure at length %ld", ctx->length);
    return lx_task_gaussian.run(ctx, out, err);
}

static struct lx_task failing_task;

static const char *sweep =
    "name: r\nseed: 1\nmethods: [none, logn]\ntasks: [{gaussian: {samples: 50, ranges: [[1, 5]]}}]\n"
    "lengths: [10, 20, 30]\n";

static long count(struct lx_store *s, const char *table)
{
    long n;
    struct lx_error err;
    cr_assert_eq(lx_store_count(s, table, &n, &err), LX_OK, "%s", err.msg);
    return n;
}

Test(run, failed_cells_are_stored_and_the_sweep_goes_on, .init = setup, .fini = teardown)
{
    extern const struct lx_task lx_task_gaussian;
    failing_task = lx_task_gaussian;
    failing_task.run = failing_run;
    struct lx_grid g;
    struct lx_plan p;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_grid_load_text(&g, sweep, "r.yaml", &err), LX_OK, "%s", err.msg);
    g.tasks[0].task = &failing_task;
    cr_assert_eq(lx_plan_build(&p, &g, &err), LX_OK, "%s", err.msg);
    struct lx_store *s;
    cr_assert_eq(lx_store_open(&s, db, 0, &err), LX_OK, "%s", err.msg);
    struct lx_run_opts o = {0};
    struct lx_run_summary sum;
    cr_assert_eq(lx_run_plan(&p, s, &o, &sum, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(sum.n_cells, 6);
    cr_expect_eq(sum.n_ok, 4);
    cr_expect_eq(sum.n_failed, 2);
    cr_expect_eq(count(s, "runs"), 6);
    struct lx_rows rows = {0};
    cr_assert_eq(lx_store_select(s, NULL, &rows, &err), LX_OK);
    for (int i = 0; i < rows.n; i++)
        cr_expect_neq(rows.rows[i].length, 20, "failed cells have no metrics");
    lx_rows_release(&rows);

    /* A rerun skips the 4 ok cells and retries the 2 failed ones, replacing them. */
    cr_assert_eq(lx_run_plan(&p, s, &o, &sum, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(sum.n_skipped, 4);
    cr_expect_eq(sum.n_failed, 2);
    cr_expect_eq(count(s, "runs"), 6);

    /* Once fixed, the retry stores them ok; a further rerun runs nothing. */
    g.tasks[0].task = &lx_task_gaussian;
    cr_assert_eq(lx_run_plan(&p, s, &o, &sum, &err), LX_OK);
    cr_expect_eq(sum.n_ok, 2);
    long metrics = count(s, "metrics");
    cr_assert_eq(lx_run_plan(&p, s, &o, &sum, &err), LX_OK);
    cr_expect_eq(sum.n_skipped, 6);
    cr_expect_eq(sum.n_ok + sum.n_failed, 0);
    cr_expect_eq(count(s, "runs"), 6);
    cr_expect_eq(count(s, "metrics"), metrics);

    /* --force recomputes in place: same commit, so rows are replaced, not added. */
    o.force = 1;
    cr_assert_eq(lx_run_plan(&p, s, &o, &sum, &err), LX_OK);
    cr_expect_eq(sum.n_ok, 6);
    cr_expect_eq(count(s, "runs"), 6);
    cr_expect_eq(count(s, "metrics"), metrics);
    lx_store_close(s);
    lx_plan_release(&p);
    lx_grid_release(&g);
}

Test(run, cell_numbers_do_not_depend_on_order)
{
    /* The same cell inside two different sweeps (other lengths, other methods)
    ** gives the same numbers: draws key on the cell, not on its position. */
    const char *a = "name: a\nmethods: [none]\ntasks: [{gaussian: {samples: 40}}]\nlengths: [300]\n";
    const char *b = "name: b\nmethods: [logn, none]\ntasks: [{gaussian: {samples: 40}}]\nlengths: [100, 300]\n";
    struct lx_grid ga, gb;
    struct lx_plan pa, pb;
    struct lx_error err;
    cr_assert_eq(lx_grid_load_text(&ga, a, "a.yaml", &err), LX_OK);
    cr_assert_eq(lx_grid_load_text(&gb, b, "b.yaml", &err), LX_OK);
    cr_assert_eq(lx_plan_build(&pa, &ga, &err), LX_OK);
    cr_assert_eq(lx_plan_build(&pb, &gb, &err), LX_OK);
    const struct lx_cell *cb = &pb.cells[3];   /* none, length 300 */
    cr_assert_str_eq(gb.stacks[cb->stack].canon, "none");
    cr_assert_eq(cb->length, 300);
    cr_expect_str_eq(pa.cells[0].key, cb->key);
    struct lx_result ra = {0}, rb = {0};
    cr_assert_eq(lx_cell_run(&pb, &pb.cells[0], NULL, NULL, &rb, &err), LX_OK);   /* run another cell first */
    lx_result_release(&rb);
    cr_assert_eq(lx_cell_run(&pa, &pa.cells[0], NULL, NULL, &ra, &err), LX_OK);
    cr_assert_eq(lx_cell_run(&pb, cb, NULL, NULL, &rb, &err), LX_OK);
    cr_assert_eq(ra.n_metrics, rb.n_metrics);
    for (int i = 0; i < ra.n_metrics; i++)
        cr_expect_eq(memcmp(&ra.metrics[i].value, &rb.metrics[i].value, sizeof(double)), 0, "%s",
                     ra.metrics[i].name);
    lx_result_release(&ra);
    lx_result_release(&rb);
    lx_plan_release(&pa);
    lx_plan_release(&pb);
    lx_grid_release(&ga);
    lx_grid_release(&gb);
}

/* The calibration memo answers only the (stack, length, caps, split) it
** holds: another stack, length, task capability or text split calibrates
** anew; clearing it (a new model) forgets everything. */
Test(run, calibration_memo_keys_on_stack_length_caps_and_split)
{
    struct lx_calib_memo m = {0};
    double tau = -1;
    cr_expect_eq(lx_calib_memo_get(&m, 0, 768, 1u, "test", &tau), 0, "empty");
    cr_expect_eq(lx_calib_memo_get(NULL, 0, 768, 1u, "test", &tau), 0, "no memo");
    for (int i = 0; i < 20; i++)        /* past the first allocation */
        lx_calib_memo_put(&m, i, 768, 1u, "test", 0.5 + 0.01 * i);
    cr_expect_eq(lx_calib_memo_get(&m, 3, 768, 1u, "test", &tau), 1);
    cr_expect_eq(tau, 0.5 + 0.01 * 3);
    cr_expect_eq(lx_calib_memo_get(&m, 19, 768, 1u, "test", &tau), 1);
    cr_expect_eq(tau, 0.5 + 0.01 * 19);
    tau = -1;
    cr_expect_eq(lx_calib_memo_get(&m, 20, 768, 1u, "test", &tau), 0, "another stack");
    cr_expect_eq(lx_calib_memo_get(&m, 3, 1536, 1u, "test", &tau), 0, "another length");
    cr_expect_eq(lx_calib_memo_get(&m, 3, 768, 3u, "test", &tau), 0, "other capabilities");
    cr_expect_eq(lx_calib_memo_get(&m, 3, 768, 1u, "train", &tau), 0, "another split");
    cr_expect_eq(tau, -1, "a miss leaves tau alone");
    lx_calib_memo_clear(&m);
    cr_expect_eq(m.n, 0);
    cr_expect_eq(lx_calib_memo_get(&m, 3, 768, 1u, "test", &tau), 0, "cleared");
}
