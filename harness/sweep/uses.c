/*
** harness/sweep/uses.c - one method stack and one task entry of a sweep file
** parsed and resolved (their parameters through the plugins' schemas), the
** strings a stack is shown, stored and hashed by, and a loaded model's own
** stack checked alone. Below grid.c (the whole sweep) and models.c (model
** entries), which both read stacks; it includes neither.
*/
#include "harness/sweep/uses.h"

#include "harness/engine/formats/checkpoint.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Split an entry into name and parameter node: "x" or {x: params}. */
static int entry_name(const struct lx_node *e, const char *what, const char **name,
                      const struct lx_node **params, struct lx_error *err)
{
    if (e->kind == LX_NODE_SCALAR && e->text[0]) {      /* "logn" in quotes is the name too, as a map key is */
        *name = e->text;
        *params = NULL;
        return LX_OK;
    }
    if (e->kind == LX_NODE_MAP && e->n_items == 1 && lx_map_key(e, 0)->kind == LX_NODE_SCALAR) {
        *name = lx_map_key(e, 0)->text;
        *params = lx_map_value(e, 0);
        return LX_OK;
    }
    return lx_node_err(err, e, "a %s entry must be a name or {name: {param: value}}, got %s\n"
                       "  hint: e.g. '- logn: {mode: ssmax}'", what,
                       e->kind == LX_NODE_MAP ? "a mapping with several keys" : lx_node_kind_name(e->kind));
}

/* The unknown-name message of the registry, at the entry's position. */
static int unknown_plugin(struct lx_error *err, const struct lx_node *e, const char *kind, const char *name)
{
    struct lx_error sub;
    lx_unknown_name(&sub, kind, name);
    return lx_node_err(err, e, "%s", sub.msg);
}

/* Allocate a plugin's params, fill defaults, apply the overrides, resolve. */
static int resolve_params(const struct lx_schema *s, void **params, const struct lx_node *pnode,
                          const char *kind, const char *name, struct lx_error *err)
{
    *params = lx_xcalloc(1, s->size);
    lx_params_defaults(s, *params);
    char what[96];
    snprintf(what, sizeof what, "%s '%s'", kind, name);
    int rc = lx_params_apply(s, *params, pnode, what, err);
    if (rc == LX_OK)
        lx_params_finish(s, *params);
    return rc;
}

/* The schema of `finetune:` as a map; a bare number is its steps. */
static const struct lx_param finetune_rows[] = {
    LX_P_INT(struct lx_finetune, steps, "0", 0, 100000000, 0, "optimizer steps (required, >= 1)"),
    LX_P_INT(struct lx_finetune, length, "0", 0, 1048576, LX_PF_AUTO,
             "window length; 0 = the base model's training length"),
    LX_P_INT(struct lx_finetune, batch, "0", 0, 1 << 16, LX_PF_AUTO, "windows per step; 0 = the base model's batch"),
    LX_P_FLOAT(struct lx_finetune, lr, "0", 0, 10, LX_PF_AUTO, "peak learning rate; 0 = the base model's lr"),
    LX_P_INT(struct lx_finetune, warmup, "-1", -1, 100000000, 0,
             "linear warmup steps; -1 = the base model's, at most steps / 10"),
    LX_P_FLOAT(struct lx_finetune, lr_method, "0", 0, 10, LX_PF_UNKEYED_DEFAULT,
               "peak learning rate of the attention methods' learned tensors (sinks, logit scales, a relative "
               "bias); 0 = the fine-tuning's lr"),
    LX_P_BOOL(struct lx_finetune, add, "false", 0,
              "a training-only method: leave it out of the base model and add it by the fine-tuning"),
};

/* `add` is written only when on: every fine-tuned stack before it keeps its keys. */
static const struct lx_param_rule finetune_rules[] = {
    {"add", "add=true"},
    {NULL, NULL},
};

const struct lx_schema lx_finetune_schema = LX_SCHEMA(finetune_rows, struct lx_finetune, finetune_rules);

/* `finetune: N` or `finetune: {steps: N, length: ..}` into ft. */
static int finetune_parse(struct lx_finetune *ft, const struct lx_node *fnode, const char *name, struct lx_error *err)
{
    char what[96];
    snprintf(what, sizeof what, "method '%s' finetune", name);
    lx_params_defaults(&lx_finetune_schema, ft);
    if (fnode->kind == LX_NODE_MAP) {
        int rc = lx_params_apply(&lx_finetune_schema, ft, fnode, what, err);
        if (rc < 0)
            return rc;
        if (ft->steps < 1)
            return lx_node_err(err, fnode, "method '%s': 'finetune' needs steps >= 1%s\n"
                               "  hint: e.g. finetune: {steps: 400, length: 1024}", name,
                               lx_map_get(fnode, "steps") ? "" : ", and none is given");
        if (ft->length == 1)    /* 0 is the base model's; a window predicts from its second token on */
            return lx_node_err(err, lx_map_get(fnode, "length"), "method '%s': finetune length 1 is too short: a "
                               "window needs 2 tokens or more\n  hint: leave length out for the base model's", name);
        if (ft->warmup >= ft->steps)
            return lx_node_err(err, lx_map_get(fnode, "warmup"), "method '%s': finetune warmup (%ld) must be below "
                               "its steps (%ld)\n  hint: a smaller warmup, or leave it out", name, ft->warmup,
                               ft->steps);
        return LX_OK;
    }
    struct lx_error sub;        /* N read as the map's steps are (1e1 is 10 in both) */
    int ok = fnode->kind == LX_NODE_SCALAR && lx_params_set(&lx_finetune_schema, ft, "steps", fnode, what, &sub) == 0;
    if (!ok || ft->steps < 1)
        return lx_node_err(err, fnode, "method '%s': 'finetune' must be a number of steps >= 1 or a map, got '%s'\n"
                           "  hint: e.g. finetune: 200, or finetune: {steps: 400, length: 1024}", name,
                           fnode->kind == LX_NODE_SCALAR ? fnode->text : lx_node_kind_name(fnode->kind));
    return LX_OK;
}

static int method_use_parse(struct lx_method_use *u, const struct lx_node *e, struct lx_error *err)
{
    const char *name;
    const struct lx_node *pnode;
    int rc = entry_name(e, "method", &name, &pnode, err);
    if (rc < 0)
        return rc;
    if (!(u->method = lx_method_find(name)))
        return unknown_plugin(err, e, "method", name);
    u->where = e;
    /* `train:` and `finetune:` are the stack's, not the method's: take them out of the map */
    const struct lx_node *tnode = pnode && pnode->kind == LX_NODE_MAP ? lx_map_get(pnode, "train") : NULL;
    const struct lx_node *fnode = pnode && pnode->kind == LX_NODE_MAP ? lx_map_get(pnode, "finetune") : NULL;
    struct lx_node rest;
    struct lx_node *items[2 * 64];
    unsigned kind = u->method->kind;
    if (tnode) {
        if (tnode->kind != LX_NODE_SCALAR || (strcmp(tnode->text, "true") && strcmp(tnode->text, "false")))
            return lx_node_err(err, tnode, "method '%s': 'train' must be true or false", name);
        u->train = strcmp(tnode->text, "true") == 0;
        if (u->train && !(kind & LX_KIND_TRAINING))
            return lx_node_err(err, tnode, "method '%s' acts at evaluation only and cannot be trained in\n"
                               "  hint: drop 'train: true'", name);
        if (!u->train && !(kind & LX_KIND_INFERENCE))
            return lx_node_err(err, tnode, "method '%s' is always part of training; 'train: false' "
                               "is not possible\n  hint: drop 'train: false'", name);
    }
    if (fnode) {
        if ((rc = finetune_parse(&u->ft, fnode, name, err)) < 0)
            return rc;
        if (!(kind & LX_KIND_TRAINING))
            return lx_node_err(err, fnode, "method '%s' acts at evaluation only and cannot be fine-tuned in\n"
                               "  hint: drop 'finetune'", name);
        if (u->train)
            return lx_node_err(err, fnode, "method '%s': 'train: true' trains it from scratch and 'finetune' "
                               "trains it into the base model; choose one", name);
        if (u->ft.add && kind != LX_KIND_TRAINING)
            return lx_node_err(err, lx_map_get(fnode, "add"), "method '%s': 'add' is for training-only methods; "
                               "'%s' fine-tuned in is left out of the base model already\n  hint: drop 'add'",
                               name, name);
    }
    if (!(kind & LX_KIND_INFERENCE))    /* trained in anyway: 'train: true' is the same stack, key and cell */
        u->train = 0;
    if (tnode || fnode) {
        const struct lx_node *skip[] = {tnode, fnode};
        if (!(pnode = lx_map_except(pnode, skip, 2, &rest, items, 64)))
            return lx_node_err(err, e, "method '%s': too many parameters", name);
    }
    return resolve_params(&u->method->schema, &u->params, pnode, "method", name, err);
}

int lx_method_use_trains(const struct lx_method_use *u)
{
    return u->method->kind == LX_KIND_TRAINING || u->train || u->ft.steps;
}

int lx_method_use_in_base(const struct lx_method_use *u)
{
    return (u->method->kind == LX_KIND_TRAINING && !u->ft.add) || u->train;
}

long lx_stack_finetune(const struct lx_stack *st)
{
    long steps = 0;
    for (int i = 0; i < st->n; i++)
        steps = st->items[i].ft.steps > steps ? st->items[i].ft.steps : steps;
    return steps;
}

/* The stack's fine-tuning as written: the fields its fine-tuned methods
** share (lx_stack_parse), with the largest steps; defaults without one. */
static void ft_given(const struct lx_stack *st, struct lx_finetune *out)
{
    lx_params_defaults(&lx_finetune_schema, out);
    for (int i = 0; i < st->n; i++)
        if (st->items[i].ft.steps) {
            *out = st->items[i].ft;
            out->steps = lx_stack_finetune(st);
            out->add = 0;       /* each method's own */
            return;
        }
}

/* Fill the unset fields of a fine-tuning from the base model's settings. */
static void ft_fill(struct lx_finetune *ft, const struct lx_train_cfg *base)
{
    ft->length = ft->length ? ft->length : base->length;
    ft->batch = ft->batch ? ft->batch : base->batch;
    ft->lr = ft->lr ? ft->lr : base->lr;
    if (ft->warmup < 0)
        ft->warmup = base->warmup < ft->steps / 10 ? base->warmup : ft->steps / 10;
}

void lx_stack_ft_resolve(const struct lx_stack *st, const struct lx_train_cfg *base, struct lx_finetune *out)
{
    ft_given(st, out);
    if (out->steps)
        ft_fill(out, base);
}

long lx_stack_ft_length(const struct lx_stack *st, long L)
{
    struct lx_finetune ft;
    lx_stack_ft_resolve(st, &(struct lx_train_cfg){.length = L}, &ft);
    return ft.length;
}

void lx_finetune_cfg(const struct lx_finetune *ft, const struct lx_train_cfg *base, struct lx_train_cfg *out)
{
    *out = *base;
    out->steps = ft->steps;
    out->length = ft->length;
    out->batch = ft->batch;
    out->lr = ft->lr;
    out->warmup = ft->warmup;
    out->lr_method = ft->lr_method;     /* never the base model's: its own lr's */
    out->eval_every = base->eval_every < ft->steps ? base->eval_every : ft->steps;
    /* validation on about as many tokens as the base model's: fewer windows when longer */
    long w = base->eval_windows * base->length / (ft->length > 0 ? ft->length : 1);
    out->eval_windows = ft->length > base->length ? (w > 1 ? w : 1) : base->eval_windows;
}

/* Is a resolved fine-tuning the one `finetune: N` always meant: the base
** model's length, batch and lr, its warmup shortened to steps / 10? */
static int ft_is_plain(const struct lx_finetune *ft, const struct lx_train_cfg *base)
{
    struct lx_finetune plain = {.steps = ft->steps, .warmup = -1};
    ft_fill(&plain, base);
    return memcmp(&plain, ft, sizeof plain) == 0;
}

/* The stack keys of a method use after its params: ,"train":true,
** ,"finetune":N or ,"finetune":{..} (ft: resolved, or NULL: as written). */
static void use_keys(const struct lx_method_use *u, const struct lx_finetune *ft, const struct lx_train_cfg *base,
                     struct lx_buf *out)
{
    if (u->train)
        lx_buf_puts(out, ",\"train\":true");
    if (!u->ft.steps)
        return;
    struct lx_finetune v = ft ? *ft : u->ft;
    v.add = u->ft.add;      /* the method's own */
    struct lx_finetune given = u->ft;
    given.steps = 0;        /* a map with steps alone is `finetune: N` */
    int plain = !v.add && (ft ? ft_is_plain(ft, base)
                              : !memcmp(&given, &(struct lx_finetune){.warmup = -1}, sizeof given));
    if (plain) {
        lx_buf_printf(out, ",\"finetune\":%ld", v.steps);
        return;
    }
    lx_buf_puts(out, ",\"finetune\":");
    lx_params_json(&lx_finetune_schema, &v, out);
}

/* The training-time methods: all (with_finetune) or the base model's; ft as in use_keys. */
static void train_part(const struct lx_stack *st, struct lx_buf *yaml, int with_finetune, const struct lx_finetune *ft,
                       const struct lx_train_cfg *base)
{
    lx_buf_puts(yaml, "[");
    int first = 1;
    for (int i = 0; i < st->n; i++) {
        const struct lx_method_use *u = &st->items[i];
        if (with_finetune ? !lx_method_use_trains(u) : !lx_method_use_in_base(u))
            continue;
        lx_buf_puts(yaml, first ? "{" : ",{");
        lx_buf_json_str(yaml, u->method->name);
        lx_buf_puts(yaml, ":");
        struct lx_buf p = {0}, keys = {0};
        lx_params_json(&u->method->schema, u->params, &p);
        if (with_finetune)
            use_keys(u, ft, base, &keys);
        else if (u->train)
            lx_buf_puts(&keys, ",\"train\":true");
        if (keys.len) {     /* {"a":1} -> {"a":1,"train":true}; {} -> {"train":true} */
            p.s[--p.len] = '\0';
            lx_buf_puts(&p, p.len > 1 ? lx_buf_str(&keys) : lx_buf_str(&keys) + 1);
            lx_buf_puts(&p, "}");
        }
        lx_buf_puts(yaml, lx_buf_str(&p));
        lx_buf_free(&p);
        lx_buf_free(&keys);
        lx_buf_puts(yaml, "}");
        first = 0;
    }
    lx_buf_puts(yaml, "]");
}

void lx_stack_train_part(const struct lx_stack *st, const struct lx_finetune *ft, const struct lx_train_cfg *base,
                         struct lx_buf *yaml)
{
    train_part(st, yaml, 1, ft, base);
}

void lx_stack_base_part(const struct lx_stack *st, struct lx_buf *yaml)
{
    train_part(st, yaml, 0, NULL, NULL);
}

/* The suffix of a fine-tuned stack's canonical string: " ft@1024×400", the
** length resolved (ft_len) or as written (0: left out, " ft×400"), then the
** other fields given, "[batch=4,lr=0.0002]". */
static void ft_suffix(const struct lx_stack *st, long ft_len, struct lx_buf *canon)
{
    long steps = lx_stack_finetune(st);
    if (!steps)
        return;
    struct lx_finetune given;
    ft_given(st, &given);
    ft_len = ft_len ? ft_len : given.length;
    lx_buf_puts(canon, " ft");
    if (ft_len)
        lx_buf_printf(canon, "@%ld", ft_len);
    lx_buf_printf(canon, "\xc3\x97%ld", steps);     /* the multiplication sign in UTF-8 */
    given.steps = 0;
    given.length = 0;
    struct lx_buf rest = {0};
    lx_params_text(&lx_finetune_schema, &given, &rest);
    if (rest.len)
        lx_buf_printf(canon, "[%s]", lx_buf_str(&rest));
    lx_buf_free(&rest);
}

/* The stack JSON's keys of a method use after its params: ,"train":true,
** ,"finetune":N in the run key (the model key holds the rest, resolved), and
** in the stored resolved JSON (ft_len > 0) the map as written, with the
** stack's steps and the resolved length. */
static void ft_json(const struct lx_method_use *u, long steps, long ft_len, struct lx_buf *json)
{
    if (u->train)
        lx_buf_puts(json, ",\"train\":true");
    if (!u->ft.steps)
        return;
    if (!ft_len) {
        lx_buf_printf(json, u->ft.add ? ",\"finetune\":{\"steps\":%ld,\"add\":true}" : ",\"finetune\":%ld",
                      u->ft.steps);
        return;
    }
    struct lx_finetune v = u->ft;
    v.steps = steps;
    v.length = ft_len;
    lx_buf_puts(json, ",\"finetune\":");
    lx_params_json(&lx_finetune_schema, &v, json);
}

/* canon and json of st with every method's values from values[i] (its own
** params, or the spec's resolved copy); the rows named follow st's params.
** A method fine-tuned in that could also act at evaluation only is marked
** `ft`, and the stack's fine-tuning follows the methods (ft_suffix). */
static void stack_strings(const struct lx_stack *st, const void *const *values, long ft_len, struct lx_buf *canon,
                          struct lx_buf *json)
{
    lx_buf_puts(json, "[");
    for (int i = 0; i < st->n; i++) {
        const struct lx_method *m = st->items[i].method;
        const struct lx_method_use *u = &st->items[i];
        struct lx_buf ptext = {0}, pre = {0};
        lx_params_text_resolved(&m->schema, u->params, values[i], &ptext);
        lx_buf_printf(canon, "%s%s", i ? "+" : "", m->name);
        if (u->train)
            lx_buf_puts(&pre, "train=true");
        if (u->ft.steps && !lx_method_use_in_base(u))
            lx_buf_puts(&pre, "ft");
        if (ptext.len || pre.len)
            lx_buf_printf(canon, "(%s%s%s)", lx_buf_str(&pre), pre.len && ptext.len ? "," : "",
                          lx_buf_str(&ptext));
        lx_buf_free(&ptext);
        lx_buf_free(&pre);
        lx_buf_puts(json, i ? ",{\"name\":" : "{\"name\":");
        lx_buf_json_str(json, m->name);
        lx_buf_puts(json, ",\"params\":");
        lx_params_json(&m->schema, values[i], json);
        ft_json(u, lx_stack_finetune(st), ft_len, json);
        lx_buf_puts(json, "}");
    }
    lx_buf_puts(json, "]");
    ft_suffix(st, ft_len, canon);
}

void lx_stack_resolved(const struct lx_stack *st, const struct lx_spec *spec, struct lx_buf *canon,
                       struct lx_buf *json)
{
    const void *values[LX_MAX_STACK];
    LX_ASSERT(spec->n_methods == st->n);
    for (int i = 0; i < st->n; i++)
        values[i] = spec->params[i];
    stack_strings(st, values, spec->facts.ft_len, canon, json);
}

void lx_stack_finish(struct lx_stack *st)
{
    struct lx_buf canon = {0}, json = {0};
    const void *values[LX_MAX_STACK];
    for (int i = 0; i < st->n; i++)
        values[i] = st->items[i].params;
    stack_strings(st, values, 0, &canon, &json);
    free(st->canon);
    free(st->json);
    st->canon = lx_xstrdup(lx_buf_str(&canon));
    st->json = lx_xstrdup(lx_buf_str(&json));
    lx_buf_free(&canon);
    lx_buf_free(&json);
}

int lx_stack_parse(struct lx_stack *st, const struct lx_node *node, struct lx_error *err)
{
    memset(st, 0, sizeof *st);
    st->where = node;
    int single = node->kind != LX_NODE_SEQ;
    int n = single ? 1 : node->n_items;
    if (n == 0)
        return lx_node_err(err, node, "an empty method stack\n  hint: use 'none' for plain attention");
    if (n > LX_MAX_STACK)
        return lx_node_err(err, node, "a stack of %d methods; at most %d are allowed", n, LX_MAX_STACK);
    for (int i = 0; i < n; i++) {
        const struct lx_node *e = single ? node : node->items[i];
        if (e->kind == LX_NODE_SEQ)
            return lx_node_err(err, e, "a method stack cannot contain a list\n"
                               "  hint: write a stack as one flat list, e.g. [scaleinv, infoscale]");
        int rc = method_use_parse(&st->items[i], e, err);
        st->n = i + 1;
        if (rc < 0)
            return rc;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (st->items[i].method == st->items[j].method)
                return lx_node_err(err, st->items[i].where, "method '%s' appears twice in one stack\n  hint: a "
                                   "stack applies each method once; give all its parameters in one entry, e.g. "
                                   "{%s: {...}}", st->items[i].method->name, st->items[i].method->name);
    const struct lx_method_use *first = NULL;   /* the stack is fine-tuned once: one length, batch, lr, warmup */
    for (int i = 0; i < n; i++) {
        struct lx_finetune a = st->items[i].ft, b;
        if (!a.steps)
            continue;
        if (!first) {
            first = &st->items[i];
            continue;
        }
        b = first->ft;
        a.steps = b.steps = 0;
        a.add = b.add = 0;      /* each method's own */
        if (memcmp(&a, &b, sizeof a) != 0)
            return lx_node_err(err, st->items[i].where, "methods '%s' and '%s' are fine-tuned in one stack with "
                               "different finetune settings; a stack is fine-tuned once\n  hint: give them the "
                               "same length, batch, lr and warmup (steps: the largest is used; add: each its own)",
                               first->method->name, st->items[i].method->name);
    }
    lx_stack_finish(st);
    return LX_OK;
}

void lx_stack_release(struct lx_stack *st)
{
    if (!st)
        return;
    for (int i = 0; i < st->n; i++)
        free(st->items[i].params);
    free(st->canon);
    free(st->json);
    memset(st, 0, sizeof *st);
}

void lx_task_strings(const struct lx_task *t, const void *params, struct lx_buf *canon, struct lx_buf *json)
{
    struct lx_buf ptext = {0};
    lx_params_text(&t->schema, params, &ptext);
    lx_buf_puts(canon, t->name);
    if (ptext.len)
        lx_buf_printf(canon, "(%s)", lx_buf_str(&ptext));
    lx_buf_puts(json, "{\"name\":");
    lx_buf_json_str(json, t->name);
    lx_buf_puts(json, ",\"params\":");
    lx_params_json(&t->schema, params, json);
    lx_buf_puts(json, "}");
    lx_buf_free(&ptext);
}

int lx_task_use_parse(struct lx_task_use *u, const struct lx_node *e, struct lx_error *err)
{
    const char *name;
    const struct lx_node *pnode;
    int rc = entry_name(e, "task", &name, &pnode, err);
    if (rc < 0)
        return rc;
    const struct lx_task *t = lx_task_find(name);
    if (!t)
        return unknown_plugin(err, e, "task", name);
    u->task = t;
    u->where = e;
    if ((rc = resolve_params(&t->schema, &u->params, pnode, "task", name, err)) < 0)
        return rc;
    const char *row = NULL;
    struct lx_error sub;
    if (t->check_params && t->check_params(u->params, &row, &sub) < 0) {    /* at its row, not at a length */
        const struct lx_node *at = row && pnode && pnode->kind == LX_NODE_MAP ? lx_map_get(pnode, row) : NULL;
        return lx_node_err(err, at ? at : e, "%s", sub.msg);
    }
    struct lx_buf canon = {0}, json = {0};
    lx_task_strings(t, u->params, &canon, &json);
    u->canon = lx_xstrdup(lx_buf_str(&canon));
    u->json = lx_xstrdup(lx_buf_str(&json));
    lx_buf_free(&canon);
    lx_buf_free(&json);
    return LX_OK;
}

/* Where a model's own stack came from, for messages. */
static void native_source(const char *path, const struct lx_ckpt_info *info, struct lx_buf *out)
{
    if (strcmp(info->format, "hf") == 0)
        lx_buf_printf(out, "%s/config.json: rope_scaling (with rope_theta)", path);
    else
        lx_buf_printf(out, "%s: its %s stack", path, strcmp(info->format, "lenx") == 0 ? "lenx_stack" : "native");
}

/* Each method of st resolved and checked as a score at the model's training
** length resolves and checks it (lx_stack_compile's first steps). */
static int check_methods(const struct lx_stack *st, const struct lx_ckpt_info *info, const struct lx_arch *a,
                         struct lx_error *err)
{
    struct lx_facts f = {.d_head = a->d_head, .train_len = info->train_len, .n_heads = a->heads,
                         .length = info->train_len, .bidirectional = a->mode == LX_MODEL_MLM};
    int rc = LX_OK;
    for (int i = 0; i < st->n && rc == LX_OK; i++) {
        const struct lx_method_use *u = &st->items[i];
        _Alignas(max_align_t) unsigned char p[sizeof ((struct lx_spec *)0)->params[0]];
        LX_ASSERT(u->method->schema.size <= sizeof p);
        memcpy(p, u->params, u->method->schema.size);
        rc = u->method->resolve ? u->method->resolve(p, &f, err) : LX_OK;
        if (rc == LX_OK && u->method->check)
            rc = u->method->check(p, &f, err);
    }
    return rc;
}

int lx_stack_check_native(const char *path, const struct lx_ckpt_info *info, const struct lx_arch *a,
                          struct lx_error *err)
{
    const char *text[2] = {info->stack, info->eval_stack};
    int rc = LX_OK;
    for (int i = 0; i < 2 && rc == LX_OK; i++) {
        struct lx_doc d = {0};
        struct lx_stack st = {0};
        struct lx_error sub;
        const char *label = "the model's stack";
        if (!text[i])
            continue;
        rc = lx_doc_load_text(&d, text[i], label, &sub);
        if (rc == LX_OK && d.root && !(d.root->kind == LX_NODE_SEQ && d.root->n_items == 0))
            rc = lx_stack_parse(&st, d.root, &sub);
        if (rc == LX_OK)
            rc = check_methods(&st, info, a, &sub);
        if (rc < 0) {   /* the position in text lenx wrote means nothing to the reader: dropped */
            const char *msg = sub.msg + (strncmp(sub.msg, label, strlen(label)) == 0 ? strlen(label) : 0);
            msg += strspn(msg, ":0123456789 ");
            struct lx_buf where = {0};
            native_source(path, info, &where);
            lx_err(err, rc, "%s gives the stack %s, which lenx refuses: %s", lx_buf_str(&where), text[i], msg);
            lx_buf_free(&where);
        }
        lx_stack_release(&st);
        lx_doc_release(&d);
    }
    return rc;
}
