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
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/calibrate.h"
#include "harness/engine/blas.h"
#include "harness/engine/checkpoint.h"
#include "harness/hash.h"
#include "harness/version.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A logit task's probe, seen through struct lx_probe. */
struct task_probe {
    const struct lx_task *task;
    const struct lx_task_ctx *ctx;
};

static int task_stats(void *ctx, int at_train, double tau, int layer0, struct lx_probe_stats *out,
                      struct lx_error *err)
{
    const struct task_probe *tp = ctx;
    (void)layer0;   /* synthetic logits have one layer */
    return tp->task->probe(tp->ctx, at_train, tau, out, err);
}

/* Set the temperature of a calibrating stack (t5align) for this cell: on the
** model, against the same stack at the training length, or through the
** task's probe. */
static int calibrate(const struct lx_stack *st, const struct lx_task_use *tu, const struct lx_facts *f,
                     const struct lx_task_ctx *ctx, struct lx_spec *spec, struct lx_error *err)
{
    if (ctx->model) {
        struct lx_facts ft = *f;
        ft.length = f->train_len;
        struct lx_spec spec_train;
        const struct lx_corpus *text;
        int rc = lx_stack_compile(st, &ft, &spec_train, err);
        if (rc == LX_OK)
            rc = lx_corpus_get(&text, tu->task->split(tu->params), err);
        return rc < 0 ? rc : lx_calibrate_model(spec, &spec_train, ctx->model, text, err);
    }
    if (!tu->task->probe)
        return lx_err(err, LX_EINVAL, "method '%s' calibrates on a model or a task with a probe, and task '%s' "
                      "has neither\n  hint: run it on a model task or on gaussian", spec->calib_method,
                      tu->task->name);
    struct task_probe tp = {.task = tu->task, .ctx = ctx};
    struct lx_probe probe = {.ctx = &tp, .stats = task_stats};
    return lx_spec_calibrate(spec, &probe, err);
}

/* Prefix a model cell's failure with the model's name and key. */
static void name_model(struct lx_error *err, const struct lx_model_use *mu, const struct lx_cell *c)
{
    char msg[LX_ERR_MAX];
    snprintf(msg, sizeof msg, "%s", err->msg);
    lx_err(err, LX_ERUN, "model '%s' [%s]: %s", mu->name, c->model_key, msg);
}

int lx_cell_run(const struct lx_plan *plan, const struct lx_cell *c, const struct lx_model *model,
                struct lx_result *res, struct lx_error *err)
{
    const struct lx_grid *g = plan->grid;
    const struct lx_task_use *tu = &g->tasks[c->task];
    struct lx_facts f;
    if (c->model >= 0)
        lx_model_facts(&g->models[c->model], tu->task->caps, c->length, &f);
    else
        tu->task->facts(tu->params, c->length, &f);
    struct lx_spec spec;
    int rc = lx_stack_compile(&g->stacks[c->stack], &f, &spec, err);
    if (rc < 0)
        return rc;
    struct lx_spec spec_train;      /* the attention the model was trained with, at its training length */
    if (model) {
        struct lx_facts ft = f;
        ft.length = f.train_len;
        if ((rc = lx_stack_compile_train(&g->stacks[c->stack], &ft, &spec_train, err)) < 0)
            return rc;
    }
    struct lx_task_ctx ctx = {
        .params = tu->params, .spec = &spec, .length = c->length, .seed = c->seed,
        .data_key = c->data_key, .model = model, .train_len = f.train_len, .task = tu->task,
        .spec_train = model ? &spec_train : NULL,
    };
    LX_ASSERT((c->model >= 0) == (model != NULL));
    if (spec.calibrate && (rc = calibrate(&g->stacks[c->stack], tu, &f, &ctx, &spec, err)) < 0)
        return rc;
    rc = tu->task->run(&ctx, res, err);
    if (rc < 0 && model)
        name_model(err, &g->models[c->model], c);
    if (rc == LX_OK && spec.calibrate)
        lx_result_metric(res, "tau", spec.temperature);     /* the calibrated temperature */
    return rc;
}

/* ---- models: load from the cache or train ---------------------------------- */

struct model_slot {
    char key[17];               /* the loaded (or failed) key; "" = none */
    struct lx_model m;
    int ok;                     /* 1 loaded, 0 failed with msg */
    struct lx_error why;        /* the failure, when ok is 0 */
};

struct train_progress {
    const char *name, *key;
    int mode;                   /* lx_run_opts.progress */
    double t0;
};

static void train_progress(void *ctx, long step, long steps, double loss, double val, double tok_per_s)
{
    struct train_progress *p = ctx;
    if (!p->mode)
        return;
    int is_val = val == val;
    if (p->mode == 1 && !is_val)
        return;
    double left = tok_per_s > 0 ? (now() - p->t0) / (double)step * (double)(steps - step) : 0.0;
    char eta[32];
    snprintf(eta, sizeof eta, "%ld:%02ld", (long)left / 60, (long)left % 60);
    if (p->mode == 2)
        fprintf(stderr, "\r\033[Ktrain %s [%s] step %ld/%ld loss %.4f%s  %.0f tok/s  ETA %s%s", p->name,
                p->key, step, steps, loss, "", tok_per_s, eta, step == steps ? "\n" : "");
    if (is_val && (p->mode == 1 || step == steps))
        fprintf(stderr, "%strain %s [%s] step %ld/%ld loss %.4f val %.4f  %.0f tok/s  ETA %s\n",
                p->mode == 2 && step != steps ? "\r\033[K" : "", p->name, p->key, step, steps, loss, val,
                tok_per_s, eta);
    fflush(stderr);
}

static void model_path(char *out, size_t n, const struct lx_run_opts *o, const char *key)
{
    snprintf(out, n, "%s/%s.safetensors", o->models_dir ? o->models_dir : "results/models", key);
}

/* The cached checkpoint of `key`: the file at <models dir>/<key>.safetensors
** whose hash the store recorded (its stored path is for people), so the same
** store works from any working directory. *found = 0 when there is none. */
static int cached_model(struct lx_store *store, const struct lx_run_opts *o, const char *key, struct lx_model *m,
                        int *found, struct lx_error *err)
{
    char path[4096], sha[65] = "";
    model_path(path, sizeof path, o, key);
    int rc = lx_store_model_sha(store, key, sha, found, err);
    struct lx_ckpt_info info = {0};
    struct lx_error sub;
    if (rc == LX_OK && *found)
        *found = lx_model_load(m, path, &info, &sub) == LX_OK && strcmp(info.sha256, sha) == 0;
    if (rc == LX_OK && !*found)
        lx_model_release(m);
    lx_ckpt_info_release(&info);
    return rc;
}

/* One training stage of model `key` (its JSON key_json, its training-time
** stack `stack`): train m in place under spec and cfg, save the checkpoint
** and record it in the store. */
struct stage {
    const char *key, *key_json, *stack;
    const struct lx_spec *spec;
    const struct lx_train_cfg *cfg;
    const char *what;       /* "training" or "fine-tuning" */
};

static int train_stage(const struct lx_plan *plan, const struct lx_cell *c, struct lx_store *store,
                       const struct lx_run_opts *o, const struct stage *st, struct lx_model *m,
                       struct lx_run_summary *sum, struct lx_error *err)
{
    const struct lx_model_use *mu = &plan->grid->models[c->model];
    const struct lx_corpus *corpus;
    int rc = lx_corpus_get(&corpus, "train", err);
    if (rc < 0)
        return rc;
    char path[4096];
    model_path(path, sizeof path, o, st->key);
    mkdir(o->models_dir ? o->models_dir : "results/models", 0777);
    if (o->progress)
        fprintf(stderr, "lenx: %s model '%s' [%s]: %zu parameters, %ld steps of %ld x %ld tokens\n", st->what,
                mu->name, st->key, m->n_params, st->cfg->steps, st->cfg->batch, st->cfg->length);
    struct train_progress tp = {.name = mu->name, .key = st->key, .mode = o->progress, .t0 = now()};
    struct lx_train_report rep;
    if ((rc = lx_train(m, st->spec, st->cfg, lx_hash64(st->key_json), corpus, mu->mix, mu->n_mix, train_progress, &tp,
                       &rep, err)) < 0)
        return rc;
    sum->n_trained++;
    sum->train_steps += rep.steps;
    struct lx_ckpt_info info = {.model_key = (char *)st->key, .stack = (char *)st->stack,
                                .train_json = mu->train_json, .train_len = mu->train.length};
    if ((rc = lx_model_save(m, path, &info, err)) < 0)
        return rc;
    struct lx_model_record r = {
        .key = st->key, .name = mu->name, .config = st->key_json, .path = path, .sha256 = info.sha256,
        .steps = rep.steps, .tokens = rep.tokens, .seconds = rep.seconds, .train_loss = rep.train_loss,
        .val_loss = rep.val_loss, .commit = lx_build_commit(),
    };
    if (o->progress)
        fprintf(stderr, "lenx: model '%s' [%s]: %ld tokens in %.1f s (%.0f tok/s), val loss %.4f -> %s\n",
                mu->name, st->key, rep.tokens, rep.seconds, (double)rep.tokens / rep.seconds, rep.val_loss, path);
    return lx_store_model_put(store, &r, err);
}

/* Train the cell's model: from scratch with the training-time stack, or, when
** methods are fine-tuned in, from the base model (cached under its own key,
** trained first if missing) for the `finetune` steps with the whole stack. */
static int train_model(const struct lx_plan *plan, const struct lx_cell *c, struct lx_store *store,
                       const struct lx_run_opts *o, struct lx_model *m, struct lx_run_summary *sum,
                       struct lx_error *err)
{
    const struct lx_grid *g = plan->grid;
    const struct lx_model_use *mu = &g->models[c->model];
    const struct lx_stack *st = &g->stacks[c->stack];
    long ft = lx_stack_finetune(st);
    struct lx_facts f;
    lx_model_facts(mu, g->tasks[c->task].task->caps, mu->train.length, &f);
    struct lx_spec spec;
    struct lx_buf part = {0};
    struct lx_arch arch = mu->arch;
    int rc = LX_OK, found = 0;
    if (ft && (rc = cached_model(store, o, c->base_key, m, &found, err)) == LX_OK && !found) {
        lx_stack_base_part(st, &part);
        struct stage base = {.key = c->base_key, .key_json = c->base_json, .stack = lx_buf_str(&part),
                             .spec = &spec, .cfg = &mu->train, .what = "training base"};
        if ((rc = lx_stack_compile_base(st, &f, &spec, err)) == LX_OK) {
            lx_model_init(m, &arch, lx_hash64(c->base_json));
            rc = train_stage(plan, c, store, o, &base, m, sum, err);
        }
    } else if (!ft && (rc = lx_stack_compile_train(st, &f, &spec, err)) == LX_OK) {
        arch.logit_scale |= spec.learn_scale;     /* SSMax's learned s: a tensor of its own */
        lx_model_init(m, &arch, lx_hash64(c->model_json));
    }
    struct lx_train_cfg cfg = mu->train;
    if (ft) {   /* the same schedule, compressed to the fine-tuning steps */
        cfg.steps = ft;
        cfg.warmup = cfg.warmup < ft / 10 ? cfg.warmup : ft / 10;
        cfg.eval_every = cfg.eval_every < ft ? cfg.eval_every : ft;
    }
    lx_buf_reset(&part);
    lx_stack_train_part(st, &part);
    struct stage full = {.key = c->model_key, .key_json = c->model_json, .stack = lx_buf_str(&part),
                         .spec = &spec, .cfg = &cfg, .what = ft ? "fine-tuning" : "training"};
    if (rc == LX_OK && (rc = lx_stack_compile_train(st, &f, &spec, err)) == LX_OK)
        rc = train_stage(plan, c, store, o, &full, m, sum, err);
    lx_buf_free(&part);
    return rc;
}

/* Make slot hold the cell's model: the loaded one, a cached checkpoint, or a
** freshly trained one. A failure is remembered so a model is not retried for
** every cell. */
static int ensure_model(struct model_slot *slot, const struct lx_plan *plan, const struct lx_cell *c,
                        struct lx_store *store, const struct lx_run_opts *o, struct lx_run_summary *sum,
                        struct lx_error *err)
{
    if (strcmp(slot->key, c->model_key) == 0)
        return slot->ok ? LX_OK : lx_err(err, LX_ERUN, "%s", slot->why.msg);
    lx_model_release(&slot->m);
    memcpy(slot->key, c->model_key, sizeof slot->key);
    slot->ok = 0;
    const struct lx_model_use *mu = &plan->grid->models[c->model];
    struct lx_error sub = {{0}};
    int rc, found = 0;
    if (mu->checkpoint)
        rc = lx_model_load(&slot->m, mu->checkpoint, NULL, &sub);
    else if ((rc = cached_model(store, o, c->model_key, &slot->m, &found, &sub)) == LX_OK && !found)
        rc = train_model(plan, c, store, o, &slot->m, sum, &sub);
    if (rc == LX_OK)    /* loaded or trained: a NaN weight fails its cells, named */
        rc = lx_model_check_finite(&slot->m, &sub);
    if (rc < 0) {
        lx_model_release(&slot->m);
        lx_err(&slot->why, rc, "model '%s' [%s]: %s", mu->name, c->model_key, sub.msg);
        return lx_err(err, rc, "%s", slot->why.msg);
    }
    slot->ok = 1;
    return LX_OK;
}

/* Cells of the same model run together, so each model is loaded once. */
static const struct lx_plan *sort_plan;

static int by_model(const void *a, const void *b)
{
    const struct lx_cell *x = &sort_plan->cells[*(const int *)a], *y = &sort_plan->cells[*(const int *)b];
    int c = strcmp(x->model_key, y->model_key);
    return c ? c : *(const int *)a - *(const int *)b;
}

static long max_rss_kb(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
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
    r->model_key = c->model >= 0 ? c->model_key : NULL;
    r->model = c->model >= 0 ? g->models[c->model].name : NULL;
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
    r->config_text = g->doc.text;
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
    sort_plan = plan;
    qsort(todo, (size_t)n_todo, sizeof *todo, by_model);
    struct model_slot slot = {0};
    double spent = 0.0;
    for (int k = 0; k < n_todo; k++) {
        const struct lx_cell *c = &plan->cells[todo[k]];
        struct lx_run_record rec;
        struct lx_result res = {0};
        struct lx_error cell_err = {{0}};
        fill_record(&rec, plan, c);
        int rc = c->model >= 0 ? ensure_model(&slot, plan, c, store, o, sum, &cell_err) : LX_OK;
        rec.started = now();
        if (rc == LX_OK)
            rc = lx_cell_run(plan, c, c->model >= 0 ? &slot.m : NULL, &res, &cell_err);
        rec.finished = now();
        rec.max_rss_kb = max_rss_kb();
        rec.ok = rc == LX_OK;
        rec.error = rec.ok ? NULL : cell_err.msg;
        rc = lx_store_put(store, &rec, &res, err);
        lx_result_release(&res);
        if (rc < 0) {
            lx_model_release(&slot.m);
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
    lx_model_release(&slot.m);
    free(todo);
    return LX_OK;
}
