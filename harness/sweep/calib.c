/*
** harness/sweep/calib.c - a calibrating stack's temperature for a cell, and the
** memo of the temperatures found on one loaded model (see calib.h).
*/
#include "harness/sweep/calib.h"

#include <stdlib.h>
#include <string.h>

#include "harness/engine/model/calibrate.h"

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

struct lx_calib_entry {
    int stack;          /* the stack's index in the grid */
    long length;        /* the cell's length */
    unsigned caps;      /* the LX_CAP_* the task offers methods */
    char *split;        /* the text split the calibration read (owned) */
    double tau;         /* the temperature found */
};

int lx_calib_memo_get(const struct lx_calib_memo *m, int stack, long length, unsigned caps, const char *split,
                      double *tau)
{
    for (int i = 0; m && i < m->n; i++) {
        const struct lx_calib_entry *e = &m->e[i];
        if (e->stack == stack && e->length == length && e->caps == caps && strcmp(e->split, split) == 0) {
            *tau = e->tau;
            return 1;
        }
    }
    return 0;
}

void lx_calib_memo_put(struct lx_calib_memo *m, int stack, long length, unsigned caps, const char *split,
                       double tau)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 8;
        m->e = lx_xrealloc(m->e, sizeof *m->e * (size_t)m->cap);
    }
    m->e[m->n++] = (struct lx_calib_entry){.stack = stack, .length = length, .caps = caps,
                                           .split = lx_xstrdup(split), .tau = tau};
}

void lx_calib_memo_clear(struct lx_calib_memo *m)
{
    for (int i = 0; i < m->n; i++)
        free(m->e[i].split);
    free(m->e);
    *m = (struct lx_calib_memo){0};
}

int lx_sweep_calibrate(const struct lx_stack *st, int stack, const struct lx_task_use *tu, const struct lx_facts *f,
                       const struct lx_task_ctx *ctx, struct lx_calib_memo *memo, struct lx_spec *spec,
                       struct lx_error *err)
{
    if (ctx->model) {
        const char *split = tu->task->split(tu->params);
        unsigned caps = tu->task->caps;
        if (lx_calib_memo_get(memo, stack, f->length, caps, split, &spec->temperature))
            return LX_OK;
        struct lx_facts ft = *f;
        ft.length = f->train_len;
        struct lx_spec spec_train;
        const struct lx_corpus_tokens *text;     /* in the model's tokens */
        const struct lx_tokenizer *tok = lx_tok_or_byte(ctx->tok);
        int rc = lx_stack_compile(st, &ft, &spec_train, err);
        if (rc == LX_OK)
            rc = lx_corpus_tokens(&text, split, tok, err);
        if (rc == LX_OK)
            rc = lx_calibrate_model(spec, &spec_train, ctx->model, text, ctx->begin_text ? -1 : lx_tok_begin(tok),
                                    err);   /* windows as the model reads them: no BOS after begin: text */
        if (rc == LX_OK && memo)
            lx_calib_memo_put(memo, stack, f->length, caps, split, spec->temperature);
        return rc;
    }
    if (!tu->task->probe)
        return lx_err(err, LX_EINVAL, "method '%s' calibrates on a model or a task with a probe, and task '%s' "
                      "has neither\n  hint: run it on a model task or on gaussian", spec->calib_method,
                      tu->task->name);
    struct task_probe tp = {.task = tu->task, .ctx = ctx};
    struct lx_probe probe = {.ctx = &tp, .stats = task_stats};
    return lx_spec_calibrate(spec, &probe, err);
}
