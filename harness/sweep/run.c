/*
** harness/sweep/run.c - the sweep runner: claim each cell in the store, obtain its
** model (a checkpoint file, or trained once under a claim on its key), run
** it, store it, release the claim (see run.h, docs/results.md "Several
** processes on one store").
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/sweep/run.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/engine/data/corpus.h"
#include "harness/engine/lm/lm.h"
#include "harness/engine/lm/server.h"
#include "harness/core/mapguard.h"
#include "harness/engine/kernels/wprod.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/formats/checkpoint.h"
#include "harness/sweep/owner.h"
#include "harness/sweep/resume.h"
#include "harness/core/hash.h"
#include "harness/core/version.h"
#include "tasks/retrieval.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Prefix a model cell's failure with the model's name and key. */
static void name_model(struct lx_error *err, const struct lx_model_use *mu, const struct lx_cell *c)
{
    lx_err_prefix(err, LX_ERUN, "model '%s' [%s]: ", mu->name, c->model_key);
}

int lx_cell_run(const struct lx_plan *plan, const struct lx_cell *c, const struct lx_model *model,
                struct lx_calib_memo *memo, struct lx_result *res, struct lx_error *err)
{
    const struct lx_grid *g = plan->grid;
    const struct lx_task_use *tu = &g->tasks[c->task];
    const struct lx_model_use *mu = c->model >= 0 ? &g->models[c->model] : NULL;
    if (mu && mu->lm) {     /* a server runs its own stack: nothing to compile, only questions to ask */
        struct lx_spec none;
        memset(&none, 0, sizeof none);
        struct lx_task_ctx ctx = {
            .params = tu->params, .spec = &none, .length = c->length, .seed = c->seed, .data_key = c->data_key,
            .lm = mu->lm, .train_len = mu->train.length, .task = tu->task, .tok = lx_model_use_tokenizer(mu),
        };
        int rc = tu->task->run(&ctx, res, err);
        if (rc < 0)
            name_model(err, mu, c);
        return rc;
    }
    struct lx_facts f;
    if (c->model >= 0)
        lx_model_stack_facts(&g->models[c->model], &g->stacks[c->stack], tu->task->caps, c->length, &f);
    else
        tu->task->facts(tu->params, c->length, &f);
    struct lx_spec spec;
    int rc = lx_stack_compile(&g->stacks[c->stack], &f, &spec, err);
    if (rc == LX_OK && model)
        rc = lx_model_spec_check(model, &spec, err);
    if (rc < 0)
        return rc;
    struct lx_spec spec_train;      /* the attention the model was trained with, at its training length */
    if (model) {
        struct lx_facts ft = f;
        ft.length = f.train_len;
        if ((rc = lx_stack_compile_train(&g->stacks[c->stack], &ft, &spec_train, err)) < 0)
            return rc;
    }
    struct lx_lm lm;
    if (model)
        lx_lm_local(&lm, model, &spec);
    struct lx_task_ctx ctx = {
        .params = tu->params, .spec = &spec, .length = c->length, .seed = c->seed,
        .data_key = c->data_key, .model = model, .lm = model ? &lm : NULL, .train_len = f.train_len,
        .task = tu->task, .spec_train = model ? &spec_train : NULL,
        .tok = model ? lx_model_use_tokenizer(&g->models[c->model]) : NULL,
        .begin_text = model && g->models[c->model].train.begin == LX_BEGIN_TEXT,
    };
    LX_ASSERT((c->model >= 0) == (model != NULL));
    if (spec.calibrate && (rc = lx_sweep_calibrate(&g->stacks[c->stack], c->stack, tu, &f, &ctx,
                                                   model ? memo : NULL, &spec, err)) < 0)
        return rc;
    rc = tu->task->run(&ctx, res, err);
    if (rc < 0 && model)
        name_model(err, &g->models[c->model], c);
    if (rc == LX_OK && spec.calibrate)
        lx_result_metric(res, "tau", spec.temperature);     /* the calibrated temperature */
    return rc;
}

/* ---- models: load from the cache or train ----------------------------------
**
** The cache is the files: <models dir>/<key>.safetensors is used whichever
** store is open when its embedded model key and weights hash check out, and
** recorded in the open store. A model is trained under a claim on its key
** (LX_CLAIM_MODEL), so concurrent processes train it once; the others defer
** the cells that need it and load it when the claim is gone. */

/* What a run needs besides the plan: the store, the options, who we are. */
struct runner {
    const struct lx_plan *plan;
    struct lx_store *store;
    const struct lx_run_opts *o;
    struct lx_owner me;         /* our claims' owner; its host is also each record's host */
    struct lx_run_summary *sum;
    char blas[256];             /* the BLAS library and its threading, recorded with each cell */
    struct failed_base *failed; /* (n_failed) base models that failed to train in this run */
    int n_failed;
};

/* A base model that failed to train: each stack fine-tuned from it fails with this, not another training. */
struct failed_base {
    char key[17];
    int code;
    struct lx_error why;
};

struct model_slot {
    char key[17];               /* the loaded (or failed) key; "" = none */
    struct lx_model m;
    char weights[65];           /* sha256 of its tensor data */
    int ok;                     /* 1 loaded, 0 failed with msg */
    struct lx_error why;        /* the failure, when ok is 0 */
    struct lx_calib_memo calib; /* temperatures calibrated on m */
};

/* One model to obtain: its key, what the key hashes, its name in the sweep. */
struct model_id {
    const char *key, *key_json, *name;
};

struct train_progress {
    const char *name, *key;
    int mode;                   /* lx_run_opts.progress */
    double t0;
    long first;                 /* the step this process began at (a resumed run's is not 0) */
};

static void train_progress(void *ctx, long step, long steps, double loss, double val, double tok_per_s)
{
    struct train_progress *p = ctx;
    if (!p->mode)
        return;
    int is_val = val == val, tenth = step % (steps >= 10 ? steps / 10 : 1) == 0;
    if (p->mode == 1 && !is_val && !tenth)
        return;
    double left = tok_per_s > 0 && step > p->first ? (now() - p->t0) / (double)(step - p->first) *
                                                     (double)(steps - step) : 0.0;
    char eta[32];
    snprintf(eta, sizeof eta, "%ld:%02ld", (long)left / 60, (long)left % 60);
    /* our own "\r\033[K" (rewrite the line) goes out as is; the names, through lx_term_printf */
    if (p->mode == 2 || !is_val) {  /* the terminal's redrawn line; into a log, a tenth of the steps */
        fputs(p->mode == 2 ? "\r\033[K" : "", stderr);
        lx_term_printf(stderr, "train %s [%s] step %ld/%ld loss %.4f  %.0f tok/s  ETA %s%s", p->name, p->key, step,
                       steps, loss, tok_per_s, eta, p->mode == 1 || step == steps ? "\n" : "");
    }
    if (is_val && (p->mode == 1 || step == steps)) {
        fputs(p->mode == 2 && step != steps ? "\r\033[K" : "", stderr);
        lx_term_printf(stderr, "train %s [%s] step %ld/%ld loss %.4f val %.4f  %.0f tok/s  ETA %s\n", p->name, p->key,
                       step, steps, loss, val, tok_per_s, eta);
    }
    fflush(stderr);
}

static const char *models_dir(const struct lx_run_opts *o)
{
    return o->models_dir ? o->models_dir : "results/models";
}

static void model_path(char *out, size_t n, const struct lx_run_opts *o, const char *key)
{
    snprintf(out, n, "%s/%s.safetensors", models_dir(o), key);
}

/* The resumable state of model key's training beside its checkpoint (lx_train_snap_save). */
static void state_path(char *out, size_t n, const struct lx_run_opts *o, const char *key)
{
    snprintf(out, n, "%s/%s.state.safetensors", models_dir(o), key);
}

void lx_run_models_dir(const char *db, char *out, size_t n)
{
    const char *slash = strrchr(db, '/');
    snprintf(out, n, "%.*s%smodels", slash ? (int)(slash - db) : 0, db, slash ? "/" : "");
}

/* The cached checkpoint of id into m (weights: its tensor hash), recorded in
** the store; *found = 0 when there is none or it is damaged (reported on
** stderr when warn, to be retrained). Under --no-train a missing or damaged
** file is an error instead. */
static int cached_model(struct runner *r, const struct model_id *id, struct lx_model *m, char weights[65],
                        int *found, int warn, struct lx_error *err)
{
    char path[4096];
    struct stat sb;
    struct lx_ckpt_info info = {0};
    struct lx_error why = {{0}};
    model_path(path, sizeof path, r->o, id->key);
    *found = 0;
    int rc = stat(path, &sb) == 0 ? lx_model_load(m, path, &info, &why)
                                  : lx_err(&why, LX_EIO, "%s: no such checkpoint", path);
    if (rc == LX_OK && strcmp(info.model_key, id->key) != 0)
        rc = lx_err(&why, LX_EIO, "%s: it holds model key '%s', not '%s'", path, info.model_key, id->key);
    if (rc < 0) {
        lx_model_release(m);
        lx_ckpt_info_release(&info);
        if (r->o->no_train)
            return lx_err(err, LX_ERUN, "--no-train: no usable checkpoint: %s\n  hint: run without --no-train "
                          "to train it", why.msg);
        if (warn && (rc != LX_EIO || stat(path, &sb) == 0))
            fprintf(stderr, "lenx: warning: checkpoint %s cannot be used, retraining it: %s\n", path, why.msg);
        return LX_OK;
    }
    *found = 1;
    state_path(path, sizeof path, r->o, id->key);
    remove(path);   /* left by a run killed between saving the checkpoint and removing it */
    model_path(path, sizeof path, r->o, id->key);
    memcpy(weights, info.weights_sha256, 65);
    struct lx_model_record rec = {
        .key = id->key, .name = id->name, .config = id->key_json, .path = path, .sha256 = info.sha256,
        .train_loss = NAN, .val_loss = NAN, .commit = lx_build_commit(), .weights_sha256 = info.weights_sha256,
        .threads = info.threads, .from_file = 1,
    };
    lx_ckpt_info_release(&info);
    rc = lx_store_model_put(r->store, &rec, err);
    if (rc < 0)
        lx_model_release(m);
    return rc;
}

/* The folder of the checkpoints, made if missing: one that cannot hold them
** is an error before a model trains, not after its last step. */
static int models_dir_ready(const char *dir, struct lx_error *err)
{
    struct stat sb;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return lx_err(err, LX_EIO, "%s: cannot create the folder of the trained models: %s\n  hint: does its "
                      "parent exist, and is it writable?", dir, strerror(errno));
    const char *why = stat(dir, &sb) != 0                 ? strerror(errno)
                      : !S_ISDIR(sb.st_mode)                ? "not a directory"
                      : access(dir, W_OK | X_OK) != 0       ? strerror(errno)
                                                            : NULL;
    if (why)
        return lx_err(err, LX_EIO, "%s: %s, so no trained model can be saved there\n  hint: make it a writable "
                      "folder, or move the store (the models go in the folder 'models' beside it)", dir, why);
    return LX_OK;
}

/* One training stage of model `key` (its JSON key_json, its training-time
** stack `stack`): train m in place under spec and cfg, save the checkpoint
** and record it in the store. */
struct stage {
    const char *key, *key_json, *stack;
    const struct lx_spec *spec;
    const struct lx_train_cfg *cfg;
    const char *what;       /* "training" or "fine-tuning" */
    const char *base;       /* fine-tuning: the key of the model it starts from; NULL otherwise */
};

static int train_stage(struct runner *r, const struct lx_cell *c, const struct stage *st, struct lx_model *m,
                       char weights[65], struct lx_error *err)
{
    const struct lx_model_use *mu = &r->plan->grid->models[c->model];
    const struct lx_run_opts *o = r->o;
    const struct lx_tokenizer *tok = lx_model_use_tokenizer(mu);
    const struct lx_corpus_tokens *text;     /* the training split in the model's tokens */
    int rc = lx_corpus_tokens(&text, "train", tok, err);
    if (rc < 0)
        return rc;
    char path[4096];
    model_path(path, sizeof path, o, st->key);
    if ((rc = models_dir_ready(models_dir(o), err)) < 0)
        return rc;
    if (o->progress)
        fprintf(stderr, "lenx: %s model '%s' [%s]: %zu parameters, %ld steps of %ld x %ld tokens\n", st->what,
                mu->name, st->key, m->n_params, st->cfg->steps, st->cfg->batch, st->cfg->length);
    struct train_progress tp = {.name = mu->name, .key = st->key, .mode = o->progress, .t0 = now()};
    struct lx_train_report rep;
    char state[4096];
    state_path(state, sizeof state, o, st->key);
    lx_resume_clear_debris(state);
    lx_resume_clear_debris(path);
    const char *numerics = lx_numerics_name(lx_numerics_get());
    struct lx_train_snap from;
    int resumed = lx_resume_from(state, st->key, m, st->cfg, numerics, &from);
    tp.first = resumed ? from.step : 0;
    if (resumed && o->progress)
        fprintf(stderr, "lenx: resuming model '%s' [%s] at step %ld of %ld (%s)\n", mu->name, st->key, from.step,
                st->cfg->steps, state);
    struct lx_resume_ctx sc = {state, st->key, numerics};
    struct lx_train_resume res = {.from = resumed ? &from : NULL, .save = o->save_every >= 0 ? lx_resume_save : NULL,
                                  .ctx = &sc, .every_steps = o->save_every == 0, .every_seconds = o->save_every};
    rc = lx_train(m, st->spec, st->cfg, lx_hash64(st->key_json), text, tok, mu->mix, mu->n_mix, train_progress, &tp,
                  &res, &rep, err);
    if (resumed)
        lx_train_snap_free(&from);
    if (rc < 0)
        return rc;
    r->sum->n_trained++;
    r->sum->train_steps += rep.steps;
    /* portable numerics: the weights do not depend on the thread count, so
    ** the checkpoint's bytes must not either (lenx_threads 0) */
    int portable = lx_numerics_get() == LX_NUMERICS_PORTABLE;
    struct lx_buf lineage = {0};    /* where a fine-tuned model comes from (lenx show model) */
    if (st->base) {
        lx_buf_printf(&lineage, "{\"base\":\"%s\",\"length\":%ld,\"steps\":%ld,\"tokens\":%ld", st->base,
                      st->cfg->length, rep.steps, rep.tokens);
        if (mu->mix_json)   /* the tasks its windows held beside the corpus */
            lx_buf_printf(&lineage, ",\"mixture\":%s", mu->mix_json);
        lx_buf_puts(&lineage, "}");
    }
    struct lx_ckpt_info info = {.model_key = (char *)st->key, .stack = (char *)st->stack,
                                .train_json = mu->train_json, .train_len = mu->train.length,
                                .threads = portable ? 0 : omp_get_max_threads(),
                                .tokenizer = mu->tok ? mu->tok->path : NULL, .lineage = st->base ? lineage.s : NULL};
    snprintf(info.numerics, sizeof info.numerics, "%s", lx_numerics_name(lx_numerics_get()));
    if (mu->tok)    /* recorded, and copied beside the checkpoint (docs/checkpoints.md#tokenizers) */
        memcpy(info.tokenizer_sha256, mu->tok->hash, sizeof info.tokenizer_sha256);
    rc = lx_model_save(m, path, &info, err);
    lx_buf_free(&lineage);
    if (rc < 0)
        return rc;
    remove(state);  /* the checkpoint is saved: the run will not be resumed */
    memcpy(weights, info.weights_sha256, 65);
    struct lx_model_record rec = {
        .key = st->key, .name = mu->name, .config = st->key_json, .path = path, .sha256 = info.sha256,
        .steps = rep.steps, .tokens = rep.tokens, .seconds = rep.seconds, .train_loss = rep.train_loss,
        .val_loss = rep.val_loss, .commit = lx_build_commit(), .weights_sha256 = info.weights_sha256,
        .threads = omp_get_max_threads(),
    };
    if (o->progress && rep.switches > 0)    /* portable numerics' pilot (harness/engine/model/pilot.h) */
        fprintf(stderr, "lenx: model '%s' [%s]: %ld of %ld steps ran on one thread, timed faster than %d threads "
                "(another process is likely using a core)\n", mu->name, st->key, rep.solo_steps,
                rep.steps - rep.first, omp_get_max_threads());
    if (o->progress)
        fprintf(stderr, "lenx: model '%s' [%s]: %ld tokens in %.1f s (%.0f tok/s), val loss %.4f -> %s\n",
                mu->name, st->key, rep.tokens, rep.seconds, (double)rep.tokens / rep.seconds, rep.val_loss, path);
    return lx_store_model_put(r->store, &rec, err);
}

/* A model to train, for obtain(): into m, its tensor hash into weights;
** *busy = 1 when a model it builds on is being trained by another process. */
struct trainer {
    int (*train)(struct runner *r, const struct lx_cell *c, struct lx_model *m, char weights[65], int *busy,
                 struct lx_error *err);
    struct runner *r;
    const struct lx_cell *c;
};

/* id into m: from the cache, or trained by t under the claim on its key.
** *busy = 1 (and m empty) when another live process holds that claim. */
static int obtain(const struct trainer *t, const struct model_id *id, struct lx_model *m, char weights[65],
                  int *busy, struct lx_error *err)
{
    struct runner *r = t->r;
    enum lx_claim state;
    int found = 0, rc = cached_model(r, id, m, weights, &found, 1, err);
    if (rc < 0 || found)
        return rc;
    if ((rc = lx_store_claim(r->store, LX_CLAIM_MODEL, id->key, &r->me, 0, &state, err)) < 0)
        return rc;
    if (state == LX_CLAIM_BUSY) {
        *busy = 1;
        return LX_OK;
    }
    /* saved by another process since we looked? (the damage, if any, said once) */
    if ((rc = cached_model(r, id, m, weights, &found, 0, err)) == LX_OK && !found)
        rc = t->train(r, t->c, m, weights, busy, err);
    struct lx_error ignored;
    lx_store_unclaim(r->store, LX_CLAIM_MODEL, id->key, r->me.id, &ignored);
    return rc;
}

/* The cell's model and its facts at the training length. */
static const struct lx_model_use *train_facts(const struct runner *r, const struct lx_cell *c, struct lx_facts *f)
{
    const struct lx_grid *g = r->plan->grid;
    const struct lx_model_use *mu = &g->models[c->model];
    lx_model_stack_facts(mu, &g->stacks[c->stack], g->tasks[c->task].task->caps, mu->train.length, f);
    return mu;
}

/* arch with the tensors of what spec learns: SSMax's scale, zerosink's
** sinks, T5's or KERPLE's bias (a bias it has already kept). */
static void learned_arch(struct lx_arch *arch, const struct lx_spec *spec)
{
    arch->logit_scale |= spec->learn_scale;
    arch->sinks |= spec->zsink.learn;
    if (lx_arch_rel_kind(arch) == LX_REL_NONE)
        lx_arch_learn_rel(arch, &spec->rel);
}

/* A new model of mu's architecture with the tensors of what spec learns. */
static void init_trained(struct lx_model *m, const struct lx_model_use *mu, const struct lx_spec *spec,
                         const char *key_json)
{
    struct lx_arch arch = mu->arch;
    learned_arch(&arch, spec);
    lx_model_init(m, &arch, lx_hash64(key_json));
}

/* The base model given the tensors of what the fine-tuning adds (`add: true`,
** or a checkpoint's stack without them), each at its initial value. */
static void grow_base(struct lx_model *m, const struct lx_spec *spec, const char *key_json)
{
    struct lx_arch arch = m->arch;
    learned_arch(&arch, spec);
    if (memcmp(&arch, &m->arch, sizeof arch) != 0)
        lx_model_grow(m, &arch, lx_hash64(key_json));
}

/* The base of a fine-tuned stack, trained with its base part (a training-time
** method fine-tuned in is continual pretraining: the base has it too). */
static int train_base(struct runner *r, const struct lx_cell *c, struct lx_model *m, char weights[65], int *busy,
                      struct lx_error *err)
{
    const struct lx_stack *st = &r->plan->grid->stacks[c->stack];
    struct lx_facts f;
    const struct lx_model_use *mu = train_facts(r, c, &f);
    struct lx_spec spec;
    struct lx_buf part = {0};
    lx_stack_base_part(st, &part);
    struct stage base = {.key = c->base_key, .key_json = c->base_json, .stack = lx_buf_str(&part),
                         .spec = &spec, .cfg = &mu->train, .what = "training base"};
    int rc = lx_stack_compile_base(st, &f, &spec, err);
    if (rc == LX_OK) {
        init_trained(m, mu, &spec, c->base_json);
        rc = train_stage(r, c, &base, m, weights, err);
    }
    lx_buf_free(&part);
    /* the cell's error names its own (fine-tuned) model: say which one failed */
    return rc < 0 ? lx_err_prefix(err, rc, "training its base model [%s]: ", c->base_key) : rc;
}

/* The cell's model from a checkpoint: model: {checkpoint: FILE}. */
static int brought_model(struct model_slot *slot, const char *path, struct lx_error *err)
{
    struct lx_ckpt_info info = {0};
    int rc = lx_model_load(&slot->m, path, &info, err);
    if (rc == LX_OK)
        memcpy(slot->weights, info.weights_sha256, sizeof slot->weights);
    lx_ckpt_info_release(&info);
    return rc;
}

/* The base model of a fine-tuned cell into m, trained once per run: a base
** that failed fails the cells of every model fine-tuned from it at once. */
static int obtain_base(struct runner *r, const struct lx_cell *c, const struct model_id *id, struct lx_model *m,
                       char weights[65], int *busy, struct lx_error *err)
{
    for (int i = 0; i < r->n_failed; i++)
        if (strcmp(r->failed[i].key, id->key) == 0)
            return lx_err(err, r->failed[i].code, "%s", r->failed[i].why.msg);
    struct trainer t = {.train = train_base, .r = r, .c = c};
    int rc = obtain(&t, id, m, weights, busy, err);
    if (rc < 0) {
        r->failed = lx_xrealloc(r->failed, sizeof *r->failed * (size_t)(r->n_failed + 1));
        struct failed_base *f = &r->failed[r->n_failed++];
        snprintf(f->key, sizeof f->key, "%s", id->key);
        f->code = rc;
        f->why = *err;
    }
    return rc;
}

/* The base of a fine-tuned stack on a checkpoint model: the checkpoint. */
static int load_base(struct runner *r, const struct lx_cell *c, struct lx_model *m, char weights[65], int *busy,
                     struct lx_error *err)
{
    struct lx_ckpt_info info = {0};
    (void)busy;
    int rc = lx_model_load(m, r->plan->grid->models[c->model].checkpoint, &info, err);
    if (rc == LX_OK)
        memcpy(weights, info.weights_sha256, 65);
    lx_ckpt_info_release(&info);
    return rc;
}

/* Train the cell's model: from scratch with the training-time stack, or, when
** methods are fine-tuned in, from the base model (a lenx model cached under
** its own key and obtained first under its own claim, or the checkpoint) for
** the `finetune` steps with the whole stack, at its length, batch and lr. */
static int train_model(struct runner *r, const struct lx_cell *c, struct lx_model *m, char weights[65], int *busy,
                       struct lx_error *err)
{
    const struct lx_stack *st = &r->plan->grid->stacks[c->stack];
    struct lx_facts f;
    const struct lx_model_use *mu = train_facts(r, c, &f);
    struct lx_finetune ft;
    lx_stack_ft_resolve(st, &mu->train, &ft);
    struct lx_spec spec;
    int rc = LX_OK;
    if (ft.steps) {
        struct model_id base_id = {.key = c->base_key, .key_json = c->base_json, .name = mu->name};
        if (mu->checkpoint)
            rc = load_base(r, c, m, weights, busy, err);
        else if ((rc = obtain_base(r, c, &base_id, m, weights, busy, err)) < 0 || *busy)
            return rc;
        f.length = ft.length;
    } else if ((rc = lx_stack_compile_train(st, &f, &spec, err)) == LX_OK) {
        init_trained(m, mu, &spec, c->model_json);
    }
    struct lx_train_cfg cfg = mu->train;
    if (ft.steps)
        lx_finetune_cfg(&ft, &mu->train, &cfg);
    struct lx_buf part = {0};
    lx_stack_train_part(st, &ft, &mu->train, &part);
    struct stage full = {.key = c->model_key, .key_json = c->model_json, .stack = lx_buf_str(&part),
                         .spec = &spec, .cfg = &cfg, .what = ft.steps ? "fine-tuning" : "training",
                         .base = ft.steps ? c->base_key : NULL};
    if (rc == LX_OK && (rc = lx_stack_compile_train(st, &f, &spec, err)) == LX_OK) {
        if (ft.steps)
            grow_base(m, &spec, c->model_json);
        rc = train_stage(r, c, &full, m, weights, err);
    }
    lx_buf_free(&part);
    return rc;
}

/* Make slot hold the cell's model: the loaded one, a cached checkpoint, or a
** freshly trained one. *busy = 1 when another process is training it: nothing
** is remembered and the caller defers the cell. A failure is remembered so a
** model is not retried for every cell. */
static int ensure_model(struct model_slot *slot, struct runner *r, const struct lx_cell *c, int *busy,
                        struct lx_error *err)
{
    *busy = 0;
    if (strcmp(slot->key, c->model_key) == 0)
        return slot->ok ? LX_OK : lx_err(err, LX_ERUN, "%s", slot->why.msg);
    lx_model_release(&slot->m);
    lx_calib_memo_clear(&slot->calib);
    slot->key[0] = '\0';
    const struct lx_model_use *mu = &r->plan->grid->models[c->model];
    struct model_id id = {.key = c->model_key, .key_json = c->model_json, .name = mu->name};
    struct trainer t = {.train = train_model, .r = r, .c = c};
    struct lx_error sub = {{0}};
    int rc = mu->checkpoint && !c->base_key[0] ? brought_model(slot, mu->checkpoint, &sub)
                                               : obtain(&t, &id, &slot->m, slot->weights, busy, &sub);
    if (*busy && rc == LX_OK) {
        lx_model_release(&slot->m);
        return LX_OK;
    }
    if (rc == LX_OK)    /* loaded or trained: a NaN weight fails its cells, named */
        rc = lx_model_check_finite(&slot->m, slot->weights, &sub);
    memcpy(slot->key, c->model_key, sizeof slot->key);
    slot->ok = rc == LX_OK;
    if (rc < 0) {
        lx_model_release(&slot->m);
        lx_err(&slot->why, rc, "model '%s' [%s]: %s", mu->name, c->model_key, sub.msg);
        return lx_err(err, rc, "%s", slot->why.msg);
    }
    return LX_OK;
}

/* A cell to sort by model: cells of the same model run together, so each
** model is loaded once; in plan order within a model. */
struct by_model_rec {
    const char *model_key;      /* the cell's model key ("" without a model) */
    int index;                  /* the cell's index in the plan */
};

static int by_model(const void *a, const void *b)
{
    const struct by_model_rec *x = a, *y = b;
    int c = strcmp(x->model_key, y->model_key);
    return c ? c : x->index - y->index;
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
        fputs("\r\033[K", stderr);
        lx_term_printf(stderr, "[%d/%d] ETA %s  last: %s %s %s N=%ld (%.2fs)%s", done, total, eta, status,
                       g->tasks[c->task].task->name, c->method, c->length, cell_s, done == total ? "\n" : "");
    } else {
        lx_term_printf(stderr, "[%d/%d] %s %.2fs %s %s length=%ld seed=%ld  ETA %s\n", done, total, status, cell_s,
                       g->tasks[c->task].canon, c->method, c->length, c->seed, eta);
    }
    fflush(stderr);
}

static void fill_record(struct lx_run_record *r, const struct runner *run, const struct lx_cell *c)
{
    const struct lx_grid *g = run->plan->grid;
    memset(r, 0, sizeof *r);
    r->key = c->key;
    r->sweep = g->name;
    r->method = c->method;              /* resolved for the cell */
    r->method_json = c->method_json;
    r->model_key = c->model >= 0 ? c->model_key : NULL;
    r->model = c->model >= 0 ? g->models[c->model].name : NULL;
    r->train_len = c->model >= 0 ? g->models[c->model].train.length : 0;
    r->task = g->tasks[c->task].canon;
    r->task_json = g->tasks[c->task].json;
    r->key_json = c->key_json;
    r->length = c->length;
    r->seed = c->seed;
    r->commit = lx_build_commit();
    r->dirty = lx_build_dirty();
    r->version = LX_VERSION;
    r->threads = omp_get_max_threads();
    r->blas = run->blas;
    r->numerics = lx_numerics_name(g->numerics);
    r->host = run->me.host;
    r->config = g->file;
    r->config_text = g->doc.text;
}

/* ---- the sweep ------------------------------------------------------------- */

/* A server model: recorded in the store's models table once per pass, its
** identity (what the server said it is) as the model's config. */
static int server_model(struct runner *r, struct model_slot *slot, const struct lx_cell *c, struct lx_error *err)
{
    if (strcmp(slot->key, c->model_key) == 0)
        return LX_OK;
    lx_model_release(&slot->m);
    lx_calib_memo_clear(&slot->calib);
    const struct lx_model_use *mu = &r->plan->grid->models[c->model];
    struct lx_model_record rec = {
        .key = c->model_key, .name = mu->name, .config = c->model_json, .path = mu->lm->what, .sha256 = "",
        .train_loss = NAN, .val_loss = NAN, .commit = lx_build_commit(), .weights_sha256 = "", .from_file = 1,
    };
    int rc = lx_store_model_put(r->store, &rec, err);
    if (rc == LX_OK) {
        memcpy(slot->key, c->model_key, sizeof slot->key);
        slot->ok = 1;
    }
    return rc;
}

/* Run one cell if we can claim it: *state says DONE (stored by now, by anyone),
** BUSY (another process holds it or is training its model: try again later)
** or GOT (run and stored here). */
/* lenx run --keep-prompts: each output's prompt, regenerated from its
** (data key, sample, depth) in the model's tokens as the cell fitted it: the
** generator is pure, so it is the instance the answer was read from. Stored
** as the text of its tokens after BOS (docs/results.md). A protocol preset's
** case (an instance with no answer tokens: its answer is generated apart) is
** its prompt as the peer's file or generator wrote it, whatever the length. */
static int attach_prompts(const struct lx_plan *plan, const struct lx_cell *c, struct lx_result *res,
                          struct lx_error *err)
{
    const struct lx_task_use *tu = &plan->grid->tasks[c->task];
    if (!tu->task->generate || !res->n_outputs)
        return LX_OK;
    const struct lx_tokenizer *tk = lx_tok_or_byte(c->model >= 0 ? lx_model_use_tokenizer(&plan->grid->models[c->model])
                                                                  : NULL);
    long samples, depths;
    tu->task->trials(tu->params, &samples, &depths);
    int rc = LX_OK;
    for (int i = 0; i < res->n_outputs && rc == LX_OK; i++) {
        const struct lx_output *o = &res->outputs[i];
        struct lx_instance in = {0};
        long sample = samples > 0 ? o->sample % samples : o->sample;
        double depth = isnan(o->depth) ? 0 : o->depth;
        const struct lx_tokenizer *in_tk = &lx_byte_tokenizer;
        rc = tu->task->generate(tu->params, c->data_key, c->length, sample, depth, &in, err);
        if (rc == LX_OK && in.answer_off < in.n && tk != &lx_byte_tokenizer) {     /* fitted in tk's tokens */
            lx_instance_release(&in);
            in_tk = tk;
            rc = lx_retrieval_instance(tu->task, tu->params, tk, c->data_key, c->length, sample, depth, &in, err);
        }
        if (rc == LX_OK) {
            char *bytes = lx_xmalloc((size_t)lx_tok_decode_cap(in_tk, in.answer_off) + 1);
            int stop;
            long n = in.answer_off > 1 ? lx_tok_decode(in_tk, in.tok + 1, in.answer_off - 1, bytes, &stop) : 0;
            lx_result_output_prompt(res, i, bytes, n);
            free(bytes);
        }
        lx_instance_release(&in);
    }
    return rc;
}

static int run_cell(struct runner *r, struct model_slot *slot, const struct lx_cell *c, enum lx_claim *state,
                    double *secs, int *ok, struct lx_error *err)
{
    const struct lx_plan *plan = r->plan;
    const char *sweep = plan->grid->name;
    int rc = lx_store_claim(r->store, sweep, c->key, &r->me, !r->o->force, state, err);
    if (rc < 0 || *state != LX_CLAIM_GOT)
        return rc;
    struct lx_run_record rec;
    struct lx_result res = {0};
    struct lx_error cell_err = {{0}}, ignored;
    int busy = 0;
    fill_record(&rec, r, c);
    const struct lx_model_use *mu = c->model >= 0 ? &plan->grid->models[c->model] : NULL;
    char blas[sizeof r->blas];
    if (mu && mu->lm) {     /* provenance: the server that answered, not this process's kernels */
        snprintf(blas, sizeof blas, "%s", mu->lm->what);
        rec.blas = blas;
        rec.numerics = lx_lm_server_numerics(mu->lm);
        rc = server_model(r, slot, c, &cell_err);
    } else {
        rc = c->model >= 0 ? ensure_model(slot, r, c, &busy, &cell_err) : LX_OK;
    }
    if (busy) {
        *state = LX_CLAIM_BUSY;
        return lx_store_unclaim(r->store, sweep, c->key, r->me.id, err);
    }
    rec.weights_sha256 = c->model >= 0 && !mu->lm && rc == LX_OK ? slot->weights : NULL;
    rec.started = now();
    if (rc == LX_OK)
        rc = lx_cell_run(plan, c, c->model >= 0 ? &slot->m : NULL, &slot->calib, &res, &cell_err);
    if (rc == LX_OK && r->o->keep_prompts)
        rc = attach_prompts(plan, c, &res, &cell_err);
    if (rc == LX_OK)    /* weights read in place from a file that changed meanwhile: the cell fails, named */
        rc = lx_mapguard_check(&cell_err);
    rec.finished = now();
    rec.max_rss_kb = max_rss_kb();
    rec.ok = rc == LX_OK;
    rec.error = rec.ok ? NULL : cell_err.msg;
    rc = lx_store_put(r->store, &rec, &res, err);
    int kept = rc == LX_STORE_KEPT;
    lx_result_release(&res);
    if (rc >= 0)
        rc = lx_store_unclaim(r->store, sweep, c->key, r->me.id, err);
    else
        lx_store_unclaim(r->store, sweep, c->key, r->me.id, &ignored);
    if (rc < 0)
        return rc;
    *secs = rec.finished - rec.started;
    *ok = rec.ok;
    if (rec.ok)
        r->sum->n_ok++;
    else
        r->sum->n_failed++;
    if (!rec.ok && (r->o->progress || kept))
        lx_term_printf(stderr, "lenx: cell failed: %s%s\n", cell_err.msg,
                       kept ? "\n  (not stored: the ok row of this cell and commit is kept)" : "");
    return LX_OK;
}

/* --models-only: obtain the cell's model (from the cache, or trained under
** its claim) and run nothing; *state as run_cell's, DONE for a model already
** obtained by an earlier cell of this pass. */
static int model_only(struct runner *r, struct model_slot *slot, const struct lx_cell *c, enum lx_claim *state,
                      int *ok, struct lx_error *err)
{
    int busy = 0;
    struct lx_error why = {{0}};
    *state = LX_CLAIM_DONE;
    if (strcmp(slot->key, c->model_key) == 0)
        return LX_OK;
    *state = LX_CLAIM_GOT;
    *ok = ensure_model(slot, r, c, &busy, &why) == LX_OK;
    if (busy)
        *state = LX_CLAIM_BUSY;
    else if (*ok)
        r->sum->n_ok++;
    else
        r->sum->n_failed++;
    if (!busy && !*ok)
        lx_term_printf(stderr, "lenx: %s\n", why.msg);
    return LX_OK;
}

static void pause_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Cells to run: not yet stored ok (all of them under --force), grouped by model. */
static int plan_todo(const struct lx_plan *plan, struct lx_store *store, const struct lx_run_opts *o, int *todo,
                     int *n_todo, struct lx_run_summary *sum, struct lx_error *err)
{
    *n_todo = 0;
    sum->n_cells = 0;
    for (int i = 0; i < plan->n_cells; i++) {
        const struct lx_cell *c = &plan->cells[i];
        if (!lx_shard_has(o->shard, o->models_only ? lx_cell_root_model(c) : c->key) ||
            (o->models_only && (c->model < 0 || plan->grid->models[c->model].checkpoint || plan->grid->models[c->model].lm)))
            continue;
        sum->n_cells++;
        int done = 0;
        int rc = o->force ? LX_OK : lx_store_done(store, plan->grid->name, plan->cells[i].key, &done, err);
        if (rc < 0)
            return rc;
        if (done)
            sum->n_skipped++;
        else
            todo[(*n_todo)++] = i;
    }
    struct by_model_rec *rec = lx_xcalloc((size_t)*n_todo + 1, sizeof *rec);
    for (int k = 0; k < *n_todo; k++)
        rec[k] = (struct by_model_rec){.model_key = plan->cells[todo[k]].model_key, .index = todo[k]};
    qsort(rec, (size_t)*n_todo, sizeof *rec, by_model);
    for (int k = 0; k < *n_todo; k++)
        todo[k] = rec[k].index;
    free(rec);
    return LX_OK;
}

int lx_run_plan(const struct lx_plan *plan, struct lx_store *store, const struct lx_run_opts *o,
                struct lx_run_summary *sum, struct lx_error *err)
{
    memset(sum, 0, sizeof *sum);
    int *todo = lx_xcalloc((size_t)plan->n_cells + 1, sizeof *todo);
    int n_todo = 0, rc = plan_todo(plan, store, o, todo, &n_todo, sum, err);
    if (rc < 0) {
        free(todo);
        return rc;
    }
    if (o->progress)
        fprintf(stderr, "lenx: sweep '%s': %d cells%s, %d already stored, %d to run%s\n", plan->grid->name,
                sum->n_cells, o->shard ? " in this shard" : "", sum->n_skipped, n_todo,
                o->models_only ? " (their models only)" : "");
    struct runner r = {.plan = plan, .store = store, .o = o, .sum = sum};
    lx_numerics_set(plan->grid->numerics);     /* before any pass: the keys were made for this mode */
    lx_kv_set(plan->grid->kv);
    lx_acts_llamacpp_set(plan->grid->acts_llamacpp);
    lx_owner_init(&r.me);
    lx_products_describe(r.blas, sizeof r.blas);
    if ((rc = lx_store_reap(store, &r.me, err)) < 0) {
        free(todo);
        return rc;
    }
    struct lx_heartbeat hb;
    lx_heartbeat_start(&hb, lx_store_path(store), r.me.id);
    struct model_slot slot = {0};
    double spent = 0.0;
    int total = n_todo, n_done = 0, waiting = 0;
    /* Pass over the cells; those another process holds are tried again after
    ** a pause, until every cell is stored (here or there). */
    while (n_todo > 0 && rc == LX_OK) {
        int n_next = 0;
        for (int k = 0; k < n_todo && rc == LX_OK; k++) {
            const struct lx_cell *c = &plan->cells[todo[k]];
            enum lx_claim state;
            double secs = 0.0;
            int ok = 0;
            rc = o->models_only ? model_only(&r, &slot, c, &state, &ok, err)
                                : run_cell(&r, &slot, c, &state, &secs, &ok, err);
            if (rc < 0)
                break;
            if (state == LX_CLAIM_BUSY) {
                todo[n_next++] = todo[k];
                continue;
            }
            n_done++;
            if (state == LX_CLAIM_DONE) {
                sum->n_skipped++;
                continue;
            }
            spent += secs;
            if (!o->models_only)
                progress(o, plan, c, n_done, total, secs, spent / n_done, ok ? "ok" : "FAILED");
        }
        if (rc == LX_OK && n_next && o->progress && !waiting)
            fprintf(stderr, "lenx: %d cells held by other processes (running them, or training their "
                    "models); waiting for them\n", n_next);
        waiting |= n_next > 0;
        if (rc == LX_OK && n_next == n_todo)
            pause_s(0.2);
        n_todo = n_next;
    }
    struct lx_error ignored;
    lx_store_unclaim(store, NULL, NULL, r.me.id, &ignored);
    lx_heartbeat_stop(&hb);
    lx_model_release(&slot.m);
    lx_calib_memo_clear(&slot.calib);
    free(r.failed);
    free(todo);
    return rc;
}
