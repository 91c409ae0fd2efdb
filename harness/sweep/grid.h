/*
** harness/sweep/grid.h - a sweep file parsed and resolved: methods × tasks × lengths
** × seeds. Every default and cross-field rule is applied here, once; what
** leaves this module is the fully resolved grid (docs/development.md#style).
*/
#ifndef LX_GRID_H
#define LX_GRID_H

#include "harness/core/config.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/sweep/models.h"
#include "harness/sweep/uses.h"

struct lx_grid {
    char *name;                     /* sweep name */
    char *file;                     /* the sweep file, as given */
    long seed;                      /* base seed; the default for `seeds` */
    struct lx_stack *stacks;        /* (n_stacks,) */
    int n_stacks;
    struct lx_task_use *tasks;      /* (n_tasks,) */
    int n_tasks;
    long *lengths;                  /* (n_lengths,) */
    const struct lx_node **length_where;   /* (n_lengths,) for messages */
    int n_lengths;
    long *seeds;                    /* (n_seeds,) */
    int n_seeds;
    struct lx_model_use *models;    /* (n_models,) the `models:` axis */
    int n_models;
    enum lx_numerics numerics;      /* `numerics:` (default fast); `lenx run --portable` overrides it */
    int kv;                         /* `kv_cache:` fp32 (LX_DT_F32, the default), bf16 or f16 (numerics.h); `lenx run
                                    ** --kv-cache` overrides it */
    int acts_llamacpp;              /* `activations: llamacpp` (default fp32); `lenx run --activations` overrides it */
    struct lx_doc doc;              /* keeps the nodes alive */
    struct lx_doc native;           /* the checkpoints' training stack, when a stack names `native` */
    struct lx_node *spliced;        /* (n_stacks,) stacks with `native` replaced by it, kept for messages */
    struct lx_node **spliced_items; /* (n_stacks, 2·LX_MAX_STACK) their entries */
};

/* Load and resolve a sweep file. Errors carry file:line:column. */
int lx_grid_load(struct lx_grid *g, const char *path, struct lx_error *err);

/* A command line's arithmetic over the file's (lenx run --numerics, --kv-cache,
** --activations): a field whose _given is 0 keeps the file's value. */
struct lx_grid_over {
    int numerics_given, kv_given, acts_given;
    enum lx_numerics numerics;
    int kv, acts;
};

/* lx_grid_load with o (NULL = none) over the file's settings before they are
** checked together, so a command line may undo the file's conflict. */
int lx_grid_load_over(struct lx_grid *g, const char *path, const struct lx_grid_over *o, struct lx_error *err);
/* The same from YAML text (tests); `name` labels messages. */
int lx_grid_load_text(struct lx_grid *g, const char *text, const char *name, struct lx_error *err);
void lx_grid_release(struct lx_grid *g);

#endif
