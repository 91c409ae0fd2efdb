/*
** harness/plan.c - cells, run keys and plan-time checks.
**
** The run key hashes the canonical JSON of the task (name + resolved params),
** the method stack (names + resolved params), the length and the seed. Model
** and data hashes join it when the engine arrives. The code version is stored
** with every row but is not part of the key, so two commits produce cells that
** `lenx compare` can match.
*/
#include "harness/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/hash.h"

static const char *cap_name(unsigned cap)
{
    switch (cap) {
    case LX_CAP_LOGITS: return "attention logits";
    case LX_CAP_ROTARY: return "rotary positions";
    case LX_CAP_MODEL: return "a trained model";
    }
    return "?";
}

int lx_stack_fits_task(const struct lx_stack *st, const struct lx_task_use *t,
                       const struct lx_facts *f, struct lx_error *err)
{
    for (int i = 0; i < st->n; i++) {
        const struct lx_method *m = st->items[i].method;
        unsigned missing = m->needs & ~f->caps;
        if (!missing)
            continue;
        unsigned cap = missing & (~missing + 1u);   /* lowest missing capability */
        return lx_node_err(err, st->items[i].where, "method '%s' cannot apply to task '%s': "
                           "the method needs %s, which the task does not offer\n"
                           "  hint: drop one of them from this sweep or give them separate sweeps",
                           m->name, t->task->name, cap_name(cap));
    }
    return LX_OK;
}

int lx_stack_compile(const struct lx_stack *st, const struct lx_facts *f, struct lx_spec *spec,
                     struct lx_error *err)
{
    lx_spec_init(spec, f);
    for (int i = 0; i < st->n; i++) {
        const struct lx_method_use *u = &st->items[i];
        struct lx_error sub;
        int rc = u->method->check ? u->method->check(u->params, f, &sub) : LX_OK;
        if (rc == LX_OK)
            rc = u->method->apply(u->params, f, spec, &sub);
        if (rc < 0)
            return u->where ? lx_node_err(err, u->where, "%s", sub.msg) : lx_err(err, rc, "%s", sub.msg);
    }
    return LX_OK;
}

static void cell_keys(struct lx_cell *c, const struct lx_grid *g)
{
    const struct lx_task_use *t = &g->tasks[c->task];
    struct lx_buf b = {0};
    lx_buf_printf(&b, "{\"task\":%s,\"length\":%ld,\"seed\":%ld}", t->json, c->length, c->seed);
    c->data_key = lx_hash64(lx_buf_str(&b));
    lx_buf_reset(&b);
    lx_buf_printf(&b, "{\"task\":%s,\"methods\":%s,\"length\":%ld,\"seed\":%ld,\"model\":null}",
                  t->json, g->stacks[c->stack].json, c->length, c->seed);
    char hex[65];
    lx_sha256_hex(lx_buf_str(&b), hex);
    memcpy(c->key, hex, 16);
    c->key[16] = '\0';
    c->key_json = lx_xstrdup(lx_buf_str(&b));
    lx_buf_free(&b);
}

/* Plan-time checks of one (stack, task, length): everything a cell could fail
** on before it runs, reported at the YAML position that caused it. */
static int check_combo(const struct lx_grid *g, int s, int t, int l, struct lx_error *err)
{
    const struct lx_task_use *tu = &g->tasks[t];
    struct lx_facts f;
    tu->task->facts(tu->params, g->lengths[l], &f);
    struct lx_error sub;
    if (tu->task->check && tu->task->check(tu->params, g->lengths[l], &sub) < 0)
        return lx_node_err(err, g->length_where[l], "%s", sub.msg);
    int rc = lx_stack_fits_task(&g->stacks[s], tu, &f, err);
    if (rc < 0)
        return rc;
    struct lx_spec spec;
    return lx_stack_compile(&g->stacks[s], &f, &spec, err);
}

int lx_plan_build(struct lx_plan *plan, const struct lx_grid *g, struct lx_error *err)
{
    memset(plan, 0, sizeof *plan);
    plan->grid = g;
    int n = g->n_tasks * g->n_stacks * g->n_lengths * g->n_seeds;
    plan->cells = lx_xcalloc((size_t)n, sizeof *plan->cells);
    for (int t = 0; t < g->n_tasks; t++)
        for (int s = 0; s < g->n_stacks; s++)
            for (int l = 0; l < g->n_lengths; l++) {
                int rc = check_combo(g, s, t, l, err);
                if (rc < 0) {
                    lx_plan_release(plan);
                    return rc;
                }
                for (int k = 0; k < g->n_seeds; k++) {
                    struct lx_cell *c = &plan->cells[plan->n_cells++];
                    c->stack = s;
                    c->task = t;
                    c->length = g->lengths[l];
                    c->seed = g->seeds[k];
                    cell_keys(c, g);
                }
            }
    return LX_OK;
}

void lx_plan_release(struct lx_plan *plan)
{
    if (!plan)
        return;
    for (int i = 0; i < plan->n_cells; i++)
        free(plan->cells[i].key_json);
    free(plan->cells);
    memset(plan, 0, sizeof *plan);
}
