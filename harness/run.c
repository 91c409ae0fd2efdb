/*
** harness/run.c - the sweep runner.
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/run.h"

#include <omp.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/engine/blas.h"
#include "harness/version.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int lx_cell_run(const struct lx_plan *plan, const struct lx_cell *c, struct lx_result *res,
                struct lx_error *err)
{
    const struct lx_grid *g = plan->grid;
    const struct lx_task_use *tu = &g->tasks[c->task];
    struct lx_facts f;
    tu->task->facts(tu->params, c->length, &f);
    struct lx_spec spec;
    int rc = lx_stack_compile(&g->stacks[c->stack], &f, &spec, err);
    if (rc < 0)
        return rc;
    struct lx_task_ctx ctx = {
        .params = tu->params, .spec = &spec, .length = c->length, .seed = c->seed,
        .data_key = c->data_key,
    };
    if (tu->task->mode != LX_MODE_LOGITS || !tu->task->run)
        return lx_err(err, LX_ERUN, "task '%s' needs a model, which this build cannot run yet",
                      tu->task->name);
    return tu->task->run(&ctx, res, err);
}

static void fmt_secs(char out[32], double s)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(out, 32, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(out, 32, "%ld:%02ld", t / 60, t % 60);
}

static void progress(const struct lx_run_opts *o, const struct lx_plan *plan, const struct lx_cell *c,
                     int done, int total, double cell_s, double avg_s, const char *status)
{
    const struct lx_grid *g = plan->grid;
    if (o->progress == 0)
        return;
    char eta[32];
    fmt_secs(eta, avg_s * (total - done));
    if (o->progress == 2) {
        fprintf(stderr, "\r\033[K[%d/%d] ETA %s  last: %s %s %s N=%ld (%.2fs)%s", done, total, eta,
                status, g->tasks[c->task].task->name, g->stacks[c->stack].canon, c->length, cell_s,
                done == total ? "\n" : "");
    } else {
        fprintf(stderr, "[%d/%d] %s %.2fs %s %s length=%ld seed=%ld  ETA %s\n", done, total, status, cell_s,
                g->tasks[c->task].canon, g->stacks[c->stack].canon, c->length, c->seed, eta);
    }
    fflush(stderr);
}

static void fill_record(struct lx_run_record *r, const struct lx_plan *plan, const struct lx_cell *c)
{
    const struct lx_grid *g = plan->grid;
    static char blas[128], host[256];
    if (!blas[0])
        lx_blas_describe(blas, sizeof blas);
    if (!host[0] && gethostname(host, sizeof host - 1) != 0)
        strcpy(host, "unknown");
    memset(r, 0, sizeof *r);
    r->key = c->key;
    r->sweep = g->name;
    r->method = g->stacks[c->stack].canon;
    r->method_json = g->stacks[c->stack].json;
    r->task = g->tasks[c->task].canon;
    r->task_json = g->tasks[c->task].json;
    r->key_json = c->key_json;
    r->length = c->length;
    r->seed = c->seed;
    r->commit = lx_build_commit();
    r->dirty = lx_build_dirty();
    r->version = LX_VERSION;
    r->threads = omp_get_max_threads();
    r->blas = blas;
    r->host = host;
    r->config = g->file;
}

int lx_run_plan(const struct lx_plan *plan, struct lx_store *store, const struct lx_run_opts *o,
                struct lx_run_summary *sum, struct lx_error *err)
{
    memset(sum, 0, sizeof *sum);
    sum->n_cells = plan->n_cells;
    int *todo = lx_xcalloc((size_t)plan->n_cells, sizeof *todo);
    int n_todo = 0;
    for (int i = 0; i < plan->n_cells; i++) {
        int done = 0;
        int rc = o->force ? LX_OK : lx_store_done(store, plan->grid->name, plan->cells[i].key, &done, err);
        if (rc < 0) {
            free(todo);
            return rc;
        }
        if (done)
            sum->n_skipped++;
        else
            todo[n_todo++] = i;
    }
    if (o->progress)
        fprintf(stderr, "lenx: sweep '%s': %d cells, %d already stored, %d to run\n", plan->grid->name,
                plan->n_cells, sum->n_skipped, n_todo);
    double spent = 0.0;
    for (int k = 0; k < n_todo; k++) {
        const struct lx_cell *c = &plan->cells[todo[k]];
        struct lx_run_record rec;
        struct lx_result res = {0};
        struct lx_error cell_err = {{0}};
        fill_record(&rec, plan, c);
        rec.started = now();
        int rc = lx_cell_run(plan, c, &res, &cell_err);
        rec.finished = now();
        rec.ok = rc == LX_OK;
        rec.error = rec.ok ? NULL : cell_err.msg;
        rc = lx_store_put(store, &rec, &res, err);
        lx_result_release(&res);
        if (rc < 0) {
            free(todo);
            return rc;
        }
        if (rec.ok)
            sum->n_ok++;
        else
            sum->n_failed++;
        spent += rec.finished - rec.started;
        progress(o, plan, c, k + 1, n_todo, rec.finished - rec.started, spent / (k + 1),
                 rec.ok ? "ok" : "FAILED");
        if (!rec.ok && o->progress)
            fprintf(stderr, "lenx: cell failed: %s\n", cell_err.msg);
    }
    free(todo);
    return LX_OK;
}
