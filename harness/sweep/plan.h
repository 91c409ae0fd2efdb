/*
** harness/sweep/plan.h - the grid expanded into cells, each with its stable run key,
** and every plan-time check done (compatibility of methods and tasks, method
** checks against the facts, task checks against the length).
*/
#ifndef LX_PLAN_H
#define LX_PLAN_H

#include <stdint.h>

#include "harness/sweep/grid.h"

struct lx_cell {
    int stack;              /* index into grid->stacks */
    int task;               /* index into grid->tasks */
    int model;              /* index into grid->models; -1 for logit tasks */
    char model_key[17];     /* model key (16 hex of SHA-256 of model_json); "" without a model */
    char *model_json;       /* what the model key hashes; NULL without a model */
    char base_key[17];      /* with methods fine-tuned in: the base model's key; "" otherwise */
    char *base_json;        /* what base_key hashes, or NULL */
    long length;            /* evaluation length */
    long seed;              /* the cell's seed */
    char key[17];           /* run key: 16 hex digits of SHA-256 of key_json */
    char *key_json;         /* canonical JSON of everything that can change the numbers */
    char *method;           /* the stack's canonical string with its automatic values resolved
                            ** for this cell ("rope+yarn(scale=4)"): stored and shown */
    char *method_json;      /* the stack's JSON, resolved likewise: stored (the key keeps auto as 0) */
    uint64_t data_key;      /* RNG key: task + params + length + seed, not the method */
    double mem;             /* bytes its evaluation pass is planned to hold (lx_run_bytes); 0 without a model */
};

/* A sweep plans at most this many cells (docs/config.md): a bigger one is
** several sweeps. */
#define LX_MAX_CELLS 1000000

struct lx_plan {
    const struct lx_grid *grid;     /* not owned */
    struct lx_cell *cells;          /* (n_cells,) */
    int n_cells;
    char **notes;                   /* (n_notes,) warnings that do not stop the sweep, each "file:line:col:
                                    ** what\n  hint: ..." (a window that sees every key at every length) */
    int n_notes;
};

int lx_plan_build(struct lx_plan *plan, const struct lx_grid *g, struct lx_error *err);
/* The plan's notes to stderr, each "lenx: warning: ...". */
void lx_plan_warn(const struct lx_plan *plan);

/* The key of the first model a cell's model is trained from: the base model
** of a fine-tuned stack, else the model itself ("" without a model). A
** `--models-only` shard trains the models of the root keys it holds, so a
** base shared by several fine-tuned models is trained in one place. */
const char *lx_cell_root_model(const struct lx_cell *c);
void lx_plan_release(struct lx_plan *plan);

/* Compile a stack for a set of facts: copy every method's params into the
** spec, resolve their automatic values for f (once), check, then apply. */
int lx_stack_compile(const struct lx_stack *st, const struct lx_facts *f, struct lx_spec *spec,
                     struct lx_error *err);

/* Compile only the training-time methods of a stack (what the model trains with). */
int lx_stack_compile_train(const struct lx_stack *st, const struct lx_facts *f, struct lx_spec *spec,
                           struct lx_error *err);

/* Compile the training-time methods without those fine-tuned in: what the
** base model of a fine-tuned stack is trained with. */
int lx_stack_compile_base(const struct lx_stack *st, const struct lx_facts *f, struct lx_spec *spec,
                          struct lx_error *err);

/* The facts a model offers a method stack at one evaluation length. */
void lx_model_facts(const struct lx_model_use *m, unsigned caps, long length, struct lx_facts *f);

/* The same with the stack's fine-tuning length (ft_len), resolved against
** the model's training settings: how every cell of a model compiles a stack. */
void lx_model_stack_facts(const struct lx_model_use *m, const struct lx_stack *st, unsigned caps, long length,
                          struct lx_facts *f);

/* Does a fine-tuned stack on a checkpoint model fine-tune it (the
** checkpoint's training stack is the stack's base part), rather than name
** the fine-tuned model the checkpoint already is? 0 for other models. */
int lx_plan_ckpt_finetunes(const struct lx_stack *st, const struct lx_model_use *m);

/* Does the task run on this model (causal tasks on causal models, mlm on mlm)? */
int lx_task_fits_model(const struct lx_task *t, const struct lx_model_use *m);

/* The key of every random draw of a cell (task JSON as lx_task_strings
** writes it, length, seed); the method is not part of it. */
uint64_t lx_plan_data_key(const char *task_json, long length, long seed);

/* Does the task offer what every method needs? Message names both. */
int lx_stack_fits_task(const struct lx_stack *st, const struct lx_task_use *t,
                       const struct lx_facts *f, struct lx_error *err);

#endif
