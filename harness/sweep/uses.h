/*
** harness/sweep/uses.h - a method stack and a task entry of a sweep file, parsed
** and resolved (harness/sweep/uses.c). grid.h (the whole sweep) and models.h's
** users read stacks through it; it includes neither of them.
*/
#ifndef LX_USES_H
#define LX_USES_H

#include "harness/core/config.h"
#include "harness/sweep/registry.h"
#include "harness/engine/model/train.h"

#define LX_MAX_STACK 8

/* `finetune:` of a method, a step count or a map (docs/config.md#fine-tuning):
** the base model trained `steps` more steps with the whole stack. Unset
** fields (0, warmup -1) take the base model's `train` settings. */
struct lx_finetune {
    long steps;         /* optimizer steps; 0 = not fine-tuned */
    long length;        /* window length; 0 = the base model's training length */
    long batch;         /* windows per step; 0 = the base model's batch */
    double lr;          /* peak lr; 0 = the base model's */
    long warmup;        /* warmup steps; -1 = the base model's, at most steps / 10 */
    double lr_method;   /* peak lr of the methods' learned tensors; 0 = the fine-tuning's lr */
    int add;            /* a training-only method left out of the base model: the fine-tuning adds it
                        ** (the method's own, not the stack's shared fine-tuning) */
};

extern const struct lx_schema lx_finetune_schema;

/* One method with its resolved parameters. */
struct lx_method_use {
    const struct lx_method *method;     /* registry entry */
    void *params;                       /* (method->schema.size) resolved, owned */
    const struct lx_node *where;        /* where it was written, for messages */
    int train;                          /* `train: true`: used while training the model too */
    struct lx_finetune ft;              /* `finetune:`: trained into the base model (ft.steps 0 = not) */
};

/* A method stack: applied in order. */
struct lx_stack {
    int n;                                      /* methods in the stack */
    struct lx_method_use items[LX_MAX_STACK];   /* (n,) */
    char *canon;        /* "scaleinv(tau=10)+infoscale": the display and identity string */
    char *json;         /* [{"name":..,"params":{..}},..]: stored and hashed */
    const struct lx_node *where;
};

struct lx_task_use {
    const struct lx_task *task;     /* registry entry */
    void *params;                   /* (task->schema.size) resolved, owned */
    char *canon;                    /* "gaussian(samples=500)" */
    char *json;                     /* {"name":..,"params":{..}} */
    const struct lx_node *where;
};

/* A task's canonical string ("needle(template=short)") and JSON
** ({"name":..,"params":{..}}) from its resolved params, appended to the buffers. */
void lx_task_strings(const struct lx_task *t, const void *params, struct lx_buf *canon, struct lx_buf *json);

/* Parse one stack entry (a name, {name: params} or a list of those). */
int lx_stack_parse(struct lx_stack *st, const struct lx_node *node, struct lx_error *err);
/* Build canon and json of a stack whose items are filled in. */
void lx_stack_finish(struct lx_stack *st);
void lx_stack_release(struct lx_stack *st);

/* The canonical string and JSON of a stack with the values its compiled spec
** resolved ("rope+yarn(scale=4)"): what a cell stores and shows. The rows
** named are those of st->canon; the run key keeps st->json (auto as 0). */
void lx_stack_resolved(const struct lx_stack *st, const struct lx_spec *spec, struct lx_buf *canon,
                       struct lx_buf *json);


/* Is this method part of training (a training-only method, `train: true`, or
** `finetune:`)? */
int lx_method_use_trains(const struct lx_method_use *u);
/* Is it part of the base model's training: trained, and not only fine-tuned
** in (a training-only method with `finetune:` is in both)? */
int lx_method_use_in_base(const struct lx_method_use *u);
/* The fine-tuning steps of a stack: the largest `finetune:` (0 = none). */
long lx_stack_finetune(const struct lx_stack *st);
/* The stack's fine-tuning resolved against the base model's training
** settings: every field set (steps 0 when the stack fine-tunes nothing). */
void lx_stack_ft_resolve(const struct lx_stack *st, const struct lx_train_cfg *base, struct lx_finetune *out);
/* The length a stack is fine-tuned at, for a model of training length L
** (a stored stack's map gives it, `finetune: N` means L); 0 when the stack
** fine-tunes nothing. What lx_facts.ft_len holds. */
long lx_stack_ft_length(const struct lx_stack *st, long L);
/* The training settings of that fine-tuning: the base's, with steps, length,
** batch, lr and warmup from ft, eval_every at most steps, and, at a longer
** length, eval_windows cut so validation reads about as many tokens. */
void lx_finetune_cfg(const struct lx_finetune *ft, const struct lx_train_cfg *base, struct lx_train_cfg *out);
/* The training-time part of a stack as a YAML flow list, e.g.
** [{"rope":{"base":10000,"layout":"half"}},{"logn":{"mode":"su","base":512,"train":true}}]:
** hashed into the model key, stored in checkpoints, parsed back by
** lx_stack_parse. A fine-tuned method carries "finetune":N when `ft` (the
** stack's resolved fine-tuning, or NULL: as written) is the base model's
** length, batch, lr and warmup, as keys made before the map existed, else
** the map of its resolved fields. */
void lx_stack_train_part(const struct lx_stack *st, const struct lx_finetune *ft, const struct lx_train_cfg *base,
                         struct lx_buf *yaml);
/* The same without the fine-tuned methods: what the base model is trained with. */
void lx_stack_base_part(const struct lx_stack *st, struct lx_buf *yaml);

/* Parse one task entry (a name or {name: params}) into u, resolved. */
int lx_task_use_parse(struct lx_task_use *u, const struct lx_node *e, struct lx_error *err);

/* A loaded model's own stacks (info->stack and info->eval_stack) parsed
** alone, so that one lenx refuses is reported against the file it came from
** (a Hugging Face config.json's rope_theta and rope_scaling, a lenx file's
** lenx_stack) rather than as a method's error in text the user never wrote.
** Each method is also resolved and checked for the model a (its d_head and
** heads) at its training length, as a score there checks it. */
struct lx_ckpt_info;
int lx_stack_check_native(const char *path, const struct lx_ckpt_info *info, const struct lx_arch *a,
                          struct lx_error *err);

#endif
