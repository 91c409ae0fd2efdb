/*
** harness/sweep/grid.c - from a YAML tree to a resolved grid.
**
**   name: gauss-demo              # required: [A-Za-z0-9_.-]+
**   seed: 1                       # optional, default 0
**   methods:                      # required: each entry is one method stack
**     - none                      #   a name
**     - logn: {mode: ssmax}       #   a name with parameters
**     - [scaleinv, infoscale]     #   a list: a stack applied in order
**   tasks:                        # required: a name or {name: params}
**     - gaussian: {samples: 500}
**   lengths: [1000, 10000]        # required
**   seeds: [1, 2]                 # optional, default [seed]
**   description: free text        # optional
**   numerics: portable            # optional: fast (default) or portable (docs/config.md#numerics)
**   models:                       # needed by model tasks (ppl, mlm); see models.c
**     small: {arch: {layers: 2}, train: {length: 128, steps: 1000}}
**
** `native` in a stack (- native, - [native, streaming]) stands for the
** training stack of the sweep's checkpoint models, which must share one: a
** Llama-3 checkpoint's rope with its llama3 scaling, say, without spelling
** them out. It is replaced before the stack is parsed, so the stack is the
** one spelled out, key and all.
**
** A method that can be trained in (kind LX_KIND_TRAINING | LX_KIND_INFERENCE)
** takes `train: true` beside its parameters: - logn: {mode: su, train: true}.
*/
#include "harness/sweep/grid.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const top_keys[] = {"name", "description", "seed", "seeds", "methods", "tasks", "lengths",
                                       "models", "numerics", "kv_cache", "activations"};
#define N_TOP_KEYS ((int)(sizeof top_keys / sizeof *top_keys))

static int need_seq(const struct lx_node *v, const char *key, const char *example, struct lx_error *err)
{
    if (v->kind != LX_NODE_SEQ)
        return lx_node_err(err, v, "'%s' must be a list, got %s\n  hint: e.g. %s: %s",
                           key, lx_node_kind_name(v->kind), key, example);
    if (v->n_items == 0)
        return lx_node_err(err, v, "'%s' is empty\n  hint: e.g. %s: %s", key, key, example);
    return LX_OK;
}

/* A `lengths:` or `seeds:` list holds at most this many entries; a sweep past
** it is several sweeps (docs/config.md). */
#define LX_MAX_LIST 10000

/* Integer list entries: whole numbers in [lo, 1e12]. The bounds are checked
** on the double before it is converted (converting 1e300 is undefined). */
static int parse_long_entry(const struct lx_node *e, const char *key, long lo, long *out, struct lx_error *err)
{
    char *end = NULL;
    double d = e->kind == LX_NODE_SCALAR && !e->quoted ? strtod(e->text, &end) : 0;
    if (!end || end == e->text || *end || d != floor(d))
        return lx_node_err(err, e, "'%s' entries must be integers, got %s%s%s", key,
                           e->kind == LX_NODE_SCALAR ? "'" : "",
                           e->kind == LX_NODE_SCALAR ? e->text : lx_node_kind_name(e->kind),
                           e->kind == LX_NODE_SCALAR ? "'" : "");
    if (!(d >= (double)lo && d <= 1e12))
        return lx_node_err(err, e, "'%s' value %s is out of bounds [%ld, 1e12]\n  hint: %s", key, e->text, lo,
                           lo ? "a length counts tokens: a whole number from 1" : "a seed is a whole number from 0");
    *out = (long)d;
    return LX_OK;
}

struct indexed { long v; int i; };

static int indexed_cmp(const void *a, const void *b)
{
    const struct indexed *x = a, *y = b;
    return x->v != y->v ? (x->v < y->v ? -1 : 1) : (x->i > y->i) - (x->i < y->i);
}

/* The first entry (in list order) that repeats an earlier one, or -1: a sort,
** O(n log n), where comparing every pair took hours on a long list. */
static int first_repeat(const long *v, int n)
{
    struct indexed *s = lx_xcalloc((size_t)n, sizeof *s);
    for (int i = 0; i < n; i++)
        s[i] = (struct indexed){v[i], i};
    qsort(s, (size_t)n, sizeof *s, indexed_cmp);
    int first = -1;
    for (int i = 1; i < n; i++)
        if (s[i].v == s[i - 1].v && (first < 0 || s[i].i < first))
            first = s[i].i;
    free(s);
    return first;
}

/* An integer list (lengths, seeds) with bounds, at most LX_MAX_LIST entries
** and no repeats. */
static int parse_longs(const struct lx_node *v, const char *key, long lo, long *out,
                       const struct lx_node **where, struct lx_error *err)
{
    if (v->n_items > LX_MAX_LIST)
        return lx_node_err(err, v, "'%s' has %d entries; at most %d are allowed\n"
                           "  hint: split the sweep into several files (they can share a database)",
                           key, v->n_items, LX_MAX_LIST);
    for (int i = 0; i < v->n_items; i++) {
        int rc = parse_long_entry(v->items[i], key, lo, &out[i], err);
        if (rc < 0)
            return rc;
        if (where)
            where[i] = v->items[i];
    }
    int r = first_repeat(out, v->n_items);
    if (r >= 0)
        return lx_node_err(err, v->items[r], "'%s' lists %ld twice\n  hint: give each once", key, out[r]);
    return LX_OK;
}

static int parse_name(struct lx_grid *g, const struct lx_node *v, struct lx_error *err)
{
    if (v->kind != LX_NODE_SCALAR || !v->text[0])
        return lx_node_err(err, v, "'name' must be a word naming the sweep");
    for (const char *p = v->text; *p; p++)
        if (!(*p == '-' || *p == '_' || *p == '.' || (*p >= '0' && *p <= '9') ||
              (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
            return lx_node_err(err, v, "sweep name '%s' has the character '%c'\n"
                               "  hint: use letters, digits, '-', '_' and '.'", v->text, *p);
    g->name = lx_xstrdup(v->text);
    return LX_OK;
}

/* `numerics: fast | portable | bf16`: the arithmetic every cell and model of the
** sweep uses (harness/engine/kernels/numerics.h). */
static int parse_numerics(struct lx_grid *g, const struct lx_node *v, struct lx_error *err)
{
    if (v->kind != LX_NODE_SCALAR || lx_numerics_parse(v->text, &g->numerics) < 0)
        return lx_node_err(err, v, "'numerics' must be fast, portable or bf16, got %s%s%s\n"
                           "  hint: numerics: portable gives the same bits on any x86-64 machine with AVX2 "
                           "(docs/config.md#numerics)", v->kind == LX_NODE_SCALAR ? "'" : "",
                           v->kind == LX_NODE_SCALAR ? v->text : lx_node_kind_name(v->kind),
                           v->kind == LX_NODE_SCALAR ? "'" : "");
    return LX_OK;
}

static int parse_top(struct lx_grid *g, const struct lx_node *root, struct lx_error *err)
{
    if (!root || root->kind != LX_NODE_MAP)
        return root ? lx_node_err(err, root, "a sweep file must be a mapping with name, methods, "
                                  "tasks and lengths")
                    : lx_err(err, LX_EINVAL, "%s: the sweep file is empty\n  hint: see configs/quick.yaml",
                             g->file);
    for (int i = 0; i < root->n_items; i++) {
        const struct lx_node *k = lx_map_key(root, i);
        int known = 0;
        for (int j = 0; j < N_TOP_KEYS; j++)
            known |= k->kind == LX_NODE_SCALAR && strcmp(k->text, top_keys[j]) == 0;
        if (!known) {
            const char *near = k->kind == LX_NODE_SCALAR ? lx_closest(k->text, top_keys, N_TOP_KEYS) : NULL;
            return lx_node_err(err, k, "unknown key '%s' in the sweep file\n  hint: %s%s%s"
                               "known keys are name, description, seed, seeds, methods, tasks, lengths, models, numerics, "
                               "kv_cache, activations",
                               k->kind == LX_NODE_SCALAR ? k->text : "?", LX_DID_YOU_MEAN(near));
        }
    }
    int rc = lx_map_unique(root, "", err);
    if (rc < 0)
        return rc;
    static const char *const required[] = {"name", "methods", "tasks", "lengths"};
    for (int j = 0; j < 4; j++)
        if (!lx_map_get(root, required[j]))
            return lx_node_err(err, root, "the sweep file has no '%s'\n  hint: a sweep needs name, "
                               "methods, tasks and lengths; see configs/quick.yaml", required[j]);
    return LX_OK;
}

/* A scalar `native`. */
static int is_native(const struct lx_node *n)
{
    return n->kind == LX_NODE_SCALAR && !strcmp(n->text, "native");
}

/* The training stack the sweep's checkpoint models share, parsed once into
** g->native; an error at `at` when there is no checkpoint or they differ. */
static int native_stack(struct lx_grid *g, const struct lx_node *at, struct lx_error *err)
{
    if (g->native.file)
        return LX_OK;
    const struct lx_model_use *first = NULL;
    for (int m = 0; m < g->n_models; m++) {
        const struct lx_model_use *mu = &g->models[m];
        if (!mu->checkpoint)
            continue;
        if (first && strcmp(first->ckpt_stack, mu->ckpt_stack))
            return lx_node_err(err, at, "'native' is the training stack of the sweep's checkpoint models, and they "
                               "differ: '%s' was trained with %s, '%s' with %s\n  hint: write each model's stack "
                               "out, or put the models in separate sweeps", first->name, first->ckpt_stack, mu->name,
                               mu->ckpt_stack);
        first = first ? first : mu;
    }
    if (!first)
        return lx_node_err(err, at, "'native' is the training stack of the sweep's checkpoint models, and this sweep "
                           "has none\n  hint: name the methods, e.g. - rope; models: {m: {hf: DIR}} brings a "
                           "checkpoint");
    char label[256];
    snprintf(label, sizeof label, "model '%s' training stack", first->name);
    return lx_doc_load_text(&g->native, first->ckpt_stack, label, err);
}

/* Stack entry i with every `native` replaced by the checkpoints' training
** stack: *entry becomes a list kept in the grid, placed where the entry was
** written (messages about the stack point there). Untouched without `native`. */
static int splice_native(struct lx_grid *g, int i, const struct lx_node **entry, struct lx_error *err)
{
    const struct lx_node *e = *entry;
    int seq = e->kind == LX_NODE_SEQ, n = seq ? e->n_items : 1, found = 0;
    for (int k = 0; k < n; k++)
        found |= is_native(seq ? e->items[k] : e);
    if (!found)
        return LX_OK;
    int rc = native_stack(g, e, err);
    if (rc < 0)
        return rc;
    struct lx_node *out = &g->spliced[i], **items = g->spliced_items + (size_t)i * 2 * LX_MAX_STACK;
    *out = (struct lx_node){.kind = LX_NODE_SEQ, .file = e->file, .line = e->line, .col = e->col, .items = items};
    const struct lx_node *nat = g->native.root;
    for (int k = 0; k < n; k++) {
        const struct lx_node *x = seq ? e->items[k] : e;
        int native = is_native(x), m = !native ? 1 : !nat ? 0 : nat->kind == LX_NODE_SEQ ? nat->n_items : 1;
        for (int j = 0; j < m; j++) {
            if (out->n_items == 2 * LX_MAX_STACK)
                return lx_node_err(err, e, "a stack of more than %d methods once 'native' is spelled out",
                                   LX_MAX_STACK);
            items[out->n_items++] = (struct lx_node *)(!native ? x : nat->kind == LX_NODE_SEQ ? nat->items[j] : nat);
        }
    }
    *entry = out;
    return LX_OK;
}

/* numerics, kv_cache and activations: the file's, then the command line's over them, then their conflict
** (at the file's key when the file alone makes it). */
static int parse_arithmetic(struct lx_grid *g, const struct lx_grid_over *o, struct lx_error *err)
{
    const struct lx_node *root = g->doc.root, *v, *num = lx_map_get(root, "numerics");
    int rc;
    if (num && (rc = parse_numerics(g, num, err)) < 0)
        return rc;
    if ((v = lx_map_get(root, "kv_cache")) && (v->kind != LX_NODE_SCALAR || lx_kv_parse(v->text, &g->kv) < 0))
        return lx_node_err(err, v, "'kv_cache' must be fp32, bf16 or f16\n  hint: kv_cache: bf16 or f16 halves the KV "
                           "cache of the tasks that decode (docs/config.md#numerics)");
    if ((v = lx_map_get(root, "activations")) &&
        (v->kind != LX_NODE_SCALAR || lx_acts_parse(v->text, &g->acts_llamacpp) < 0))
        return lx_node_err(err, v, "'activations' must be fp32 or llamacpp\n  hint: activations: llamacpp rounds x "
                           "before each weight product as llama.cpp does (docs/config.md#numerics)");
    if (o && o->numerics_given)    /* the command line beats the file; resolved once, before the keys */
        g->numerics = o->numerics;
    if (o && o->kv_given)
        g->kv = o->kv;
    if (o && o->acts_given)
        g->acts_llamacpp = o->acts;
    const char *conflict = lx_acts_conflict(g->numerics, g->acts_llamacpp);
    if (!conflict)
        return LX_OK;
    if (o && (o->numerics_given || o->acts_given))
        return lx_err(err, LX_EINVAL, "%s", conflict);
    return lx_node_err(err, v ? v : num, "%s", conflict);
}

static int parse_grid(struct lx_grid *g, const struct lx_grid_over *o, struct lx_error *err)
{
    const struct lx_node *root = g->doc.root;
    int rc = parse_top(g, root, err);
    if (rc < 0 || (rc = parse_name(g, lx_map_get(root, "name"), err)) < 0)
        return rc;
    if ((rc = parse_arithmetic(g, o, err)) < 0)
        return rc;
    const struct lx_node *v;
    if ((v = lx_map_get(root, "seed"))) {
        if (v->kind != LX_NODE_SCALAR)
            return lx_node_err(err, v, "'seed' must be one integer\n  hint: use 'seeds' for a list");
        struct lx_node one = {.kind = LX_NODE_SEQ, .items = (struct lx_node **)&v, .n_items = 1};
        if ((rc = parse_longs(&one, "seed", 0, &g->seed, NULL, err)) < 0)
            return rc;
    }
    if ((v = lx_map_get(root, "models")) && (rc = lx_models_parse(&g->models, &g->n_models, v, err)) < 0)
        return rc;
    v = lx_map_get(root, "methods");
    if ((rc = need_seq(v, "methods", "[none, logn]", err)) < 0)
        return rc;
    g->stacks = lx_xcalloc((size_t)v->n_items, sizeof *g->stacks);
    g->spliced = lx_xcalloc((size_t)v->n_items, sizeof *g->spliced);
    g->spliced_items = lx_xcalloc((size_t)v->n_items * 2 * LX_MAX_STACK, sizeof *g->spliced_items);
    for (int i = 0; i < v->n_items; i++) {
        g->n_stacks = i + 1;
        const struct lx_node *entry = v->items[i];
        if ((rc = splice_native(g, i, &entry, err)) < 0 || (rc = lx_stack_parse(&g->stacks[i], entry, err)) < 0)
            return rc;
        for (int j = 0; j < i; j++)
            if (strcmp(g->stacks[j].canon, g->stacks[i].canon) == 0)
                return lx_node_err(err, v->items[i], "method stack '%s' is listed twice (entries %d and %d, as lenx "
                                   "spells them)\n  hint: list it once: two spellings of one stack are one cell",
                                   g->stacks[i].canon, j + 1, i + 1);
    }
    v = lx_map_get(root, "tasks");
    if ((rc = need_seq(v, "tasks", "[gaussian]", err)) < 0)
        return rc;
    g->tasks = lx_xcalloc((size_t)v->n_items, sizeof *g->tasks);
    for (int i = 0; i < v->n_items; i++) {
        g->n_tasks = i + 1;
        if ((rc = lx_task_use_parse(&g->tasks[i], v->items[i], err)) < 0)
            return rc;
        for (int j = 0; j < i; j++)
            if (strcmp(g->tasks[j].canon, g->tasks[i].canon) == 0)
                return lx_node_err(err, v->items[i], "task '%s' is listed twice (entries %d and %d)\n  hint: list it "
                                   "once: two spellings of one task are one cell", g->tasks[i].canon, j + 1, i + 1);
    }
    v = lx_map_get(root, "lengths");
    if ((rc = need_seq(v, "lengths", "[1000, 10000]", err)) < 0)
        return rc;
    g->lengths = lx_xcalloc((size_t)v->n_items, sizeof *g->lengths);
    g->length_where = lx_xcalloc((size_t)v->n_items, sizeof *g->length_where);
    g->n_lengths = v->n_items;
    if ((rc = parse_longs(v, "lengths", 1, g->lengths, g->length_where, err)) < 0)
        return rc;
    if ((v = lx_map_get(root, "seeds"))) {
        if ((rc = need_seq(v, "seeds", "[1, 2, 3]", err)) < 0)
            return rc;
        g->seeds = lx_xcalloc((size_t)v->n_items, sizeof *g->seeds);
        g->n_seeds = v->n_items;
        return parse_longs(v, "seeds", 0, g->seeds, NULL, err);
    }
    g->seeds = lx_xcalloc(1, sizeof *g->seeds);
    g->seeds[0] = g->seed;
    g->n_seeds = 1;
    return LX_OK;
}

static int finish_load(struct lx_grid *g, const char *name, int rc, const struct lx_grid_over *o,
                       struct lx_error *err)
{
    g->file = lx_xstrdup(name);
    if (rc == LX_OK)
        rc = parse_grid(g, o, err);
    return rc;
}

int lx_grid_load_over(struct lx_grid *g, const char *path, const struct lx_grid_over *o, struct lx_error *err)
{
    memset(g, 0, sizeof *g);
    return finish_load(g, path, lx_doc_load_file(&g->doc, path, err), o, err);
}

int lx_grid_load(struct lx_grid *g, const char *path, struct lx_error *err)
{
    return lx_grid_load_over(g, path, NULL, err);
}

int lx_grid_load_text(struct lx_grid *g, const char *text, const char *name, struct lx_error *err)
{
    memset(g, 0, sizeof *g);
    return finish_load(g, name, lx_doc_load_text(&g->doc, text, name, err), NULL, err);
}

void lx_grid_release(struct lx_grid *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n_stacks; i++)
        lx_stack_release(&g->stacks[i]);
    for (int i = 0; i < g->n_tasks; i++) {
        free(g->tasks[i].params);
        free(g->tasks[i].canon);
        free(g->tasks[i].json);
    }
    lx_models_release(g->models, g->n_models);
    free(g->stacks);
    free(g->tasks);
    free(g->lengths);
    free(g->length_where);
    free(g->seeds);
    free(g->name);
    free(g->file);
    lx_doc_release(&g->doc);
    lx_doc_release(&g->native);
    free(g->spliced);
    free(g->spliced_items);
    memset(g, 0, sizeof *g);
}
