/*
** harness/sweep/models.c - parsing the models axis (see models.h).
*/
#include "harness/sweep/models.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/engine/formats/checkpoint.h"
#include "harness/sweep/registry.h"
#include "harness/sweep/uses.h"
#include "tasks/task.h"

static int resolve(const struct lx_schema *s, void *dst, const struct lx_node *map, const char *what,
                   char **json, struct lx_error *err)
{
    lx_params_defaults(s, dst);
    int rc = lx_params_apply(s, dst, map, what, err);
    if (rc < 0)
        return rc;
    lx_params_finish(s, dst);
    struct lx_buf b = {0};
    lx_params_json(s, dst, &b);
    *json = lx_xstrdup(lx_buf_str(&b));
    lx_buf_free(&b);
    return LX_OK;
}

/* The arch's rules across fields (kv_heads divides heads), reported at the
** key that breaks them; the stored JSON is rewritten in the canonical form. */
/* The arch keys a method stack sets when it trains its tensors: written by hand they would give a model
** tensors no stack reads or writes. */
static const char *const stack_set[][2] = {
    {"sinks", "{zerosink: {learned: true}}"}, {"rel_buckets", "t5bias"}, {"kerple", "kerple"},
    {"kerple_kernel", "kerple's kernel"}, {"logit_scale", "{logn: {learn: true}}"},
};

/* kv_heads below 1, before the schema's bounds (whose 0 is the default, heads): one message for 0 and -1. */
static int kv_floor(const struct lx_model_use *u, const struct lx_node *arch, struct lx_error *err)
{
    const struct lx_node *kv = arch && arch->kind == LX_NODE_MAP ? lx_map_get(arch, "kv_heads") : NULL;
    char *end = NULL;
    long k = kv && kv->kind == LX_NODE_SCALAR && !kv->quoted ? strtol(kv->text, &end, 10) : 1;
    if (!end || *end || k >= 1)
        return LX_OK;
    return lx_node_err(err, kv, "model '%s' arch: kv_heads must be at least 1 (got %s)\n  hint: leave it out for "
                       "multi-head attention (kv_heads = heads)", u->name, kv->text);
}

static int resolve_arch(struct lx_model_use *u, const struct lx_node *arch, struct lx_error *err)
{
    const struct lx_node *kv = arch ? lx_map_get(arch, "kv_heads") : NULL;
    struct lx_error sub;
    for (size_t i = 0; arch && i < sizeof stack_set / sizeof *stack_set; i++) {
        const struct lx_node *at = lx_map_get(arch, stack_set[i][0]);
        if (at)
            return lx_node_err(err, at, "model '%s' arch: '%s' is set by the method stack (%s), not written by "
                               "hand\n  hint: drop it and put %s in the stack's training-time methods", u->name,
                               stack_set[i][0], stack_set[i][1], stack_set[i][1]);
    }
    if (lx_arch_resolve(&u->arch, &sub) < 0)
        return lx_node_err(err, kv ? kv : arch, "model '%s' arch: %s", u->name, sub.msg);
    struct lx_buf b = {0};
    lx_params_json(&lx_arch_schema, &u->arch, &b);
    free(u->arch_json);
    u->arch_json = lx_xstrdup(lx_buf_str(&b));
    lx_buf_free(&b);
    return LX_OK;
}

/* A checkpoint path relative to the sweep file's directory. */
static char *resolve_path(const struct lx_node *v)
{
    if (v->text[0] == '/' || !v->file || !strchr(v->file, '/'))
        return lx_xstrdup(v->text);
    const char *slash = strrchr(v->file, '/');
    struct lx_buf b = {0};
    lx_buf_printf(&b, "%.*s/%s", (int)(slash - v->file), v->file, v->text);
    char *out = lx_xstrdup(lx_buf_str(&b));
    lx_buf_free(&b);
    return out;
}

/* The model's tokenizer, read now so a bad file is refused at its YAML
** position: the one `tokenizer:` names (tk: a llama2.c tokenizer.bin, a
** tokenizer.json or a directory holding one), else the one the loader found
** beside a checkpoint (info: a llama2.c tokenizer.bin or tok<V>.bin, a Hugging
** Face directory's tokenizer.json, the copy beside a lenx model trained on a
** tokenizer), else none (bytes). A checkpoint that records the tokenizer it
** was trained on refuses any other (lx_ckpt_tokenizer); at is where a
** missing one is reported. */
static int open_tokenizer(struct lx_model_use *u, const struct lx_node *tk, const struct lx_node *at,
                          const struct lx_ckpt_info *info, struct lx_error *err)
{
    if (tk && tk->kind != LX_NODE_SCALAR)
        return lx_node_err(err, tk, "model '%s': 'tokenizer' must be a file path\n  hint: tokenizer: "
                           "path/to/tokenizer.json (or a llama2.c tokenizer.bin, or a directory holding one)", u->name);
    struct lx_ckpt_info none = {0};
    char *path = tk ? resolve_path(tk) : info && info->tokenizer ? lx_xstrdup(info->tokenizer) : NULL;
    struct lx_error sub;
    if (lx_ckpt_tokenizer(info ? info : &none, path, &u->tok, &sub) < 0) {
        free(path);
        return lx_node_err(err, tk ? tk : at, "model '%s': tokenizer: %s%s", u->name, sub.msg,
                           strstr(sub.msg, "hint:") ? "" : "\n  hint: 'tokenizer' names a llama2.c tokenizer.bin, "
                           "a tokenizer.json or a directory holding one");
    }
    u->tokenizer = path;
    u->tokenizer_where = path ? (tk ? tk : at) : NULL;
    return LX_OK;
}

/* A model read from a file or directory: `checkpoint:` (any format), or the
** key of a format of formats.def (`hf:`, fmt). */
static int parse_checkpoint(struct lx_model_use *u, const struct lx_node *v, const struct lx_model_format *fmt,
                            const struct lx_node *tk, struct lx_error *err)
{
    int dir = fmt && fmt->dir;
    if (v->kind != LX_NODE_SCALAR)
        return lx_node_err(err, v, "model '%s': '%s' must be a %s path", u->name, fmt ? fmt->key : "checkpoint",
                           dir ? "directory" : "file");
    u->checkpoint = resolve_path(v);
    struct stat st;
    if (dir && (stat(u->checkpoint, &st) != 0 || !S_ISDIR(st.st_mode)))
        return lx_node_err(err, v, "model '%s': '%s' names %s; %s is not a directory\n  hint: a single file goes "
                           "under 'checkpoint'", u->name, fmt->key, fmt->summary, u->checkpoint);
    struct lx_model m;
    struct lx_ckpt_info info = {0};
    struct lx_error sub;
    if (lx_model_load(&m, u->checkpoint, &info, &sub) < 0)
        return lx_node_err(err, v, "model '%s': %s", u->name, sub.msg);
    if (lx_stack_check_native(u->checkpoint, &info, &m.arch, &sub) < 0) {     /* as score and show model check it */
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
        return lx_node_err(err, v, "model '%s': %s", u->name, sub.msg);
    }
    u->arch = m.arch;
    lx_params_defaults(&lx_train_schema, &u->train);
    u->train.length = info.train_len;
    u->train.begin = info.begin_text ? LX_BEGIN_TEXT : LX_BEGIN_BOS;
    struct lx_buf b = {0};
    lx_params_json(&lx_arch_schema, &u->arch, &b);
    u->arch_json = lx_xstrdup(lx_buf_str(&b));
    lx_buf_free(&b);
    u->train_json = lx_xstrdup(info.train_json);
    u->ckpt_stack = lx_xstrdup(info.stack);
    u->ckpt_eval = info.eval_stack && strcmp(info.eval_stack, "[]") ? lx_xstrdup(info.eval_stack) : NULL;
    memcpy(u->ckpt_sha, info.sha256, sizeof u->ckpt_sha);
    u->ckpt_bytes = lx_model_held_bytes(&m);
    int rc = open_tokenizer(u, tk, v, &info, err);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    return rc;
}

/* A model lenx trains on a tokenizer (docs/config.md#models): the arch's
** vocab is the tokenizer's (derived when not written; written, it must
** agree), and mlm needs a [MASK] id. Reported at the key that disagrees. */
static int train_tokenizer(struct lx_model_use *u, const struct lx_node *v, const struct lx_node *tk,
                           struct lx_error *err)
{
    int rc = open_tokenizer(u, tk, tk, NULL, err);
    if (rc < 0)
        return rc;
    const struct lx_node *arch = lx_map_get(v, "arch"), *vocab = arch ? lx_map_get(arch, "vocab") : NULL,
                         *mode = arch ? lx_map_get(arch, "mode") : NULL;
    if (vocab && u->arch.vocab != u->tok->n_vocab)
        return lx_node_err(err, vocab, "model '%s' arch: vocab %ld disagrees with its tokenizer %s, which has %ld "
                           "tokens\n  hint: leave vocab out: a model trained on a tokenizer takes its vocabulary",
                           u->name, u->arch.vocab, u->tokenizer, u->tok->n_vocab);
    if (u->arch.mode == LX_MODEL_MLM && u->tok->mask < 0)
        return lx_node_err(err, mode ? mode : tk, "model '%s': masked-LM training needs a [MASK] token, and its %s "
                           "tokenizer %s has none\n  hint: train mlm models on bytes (drop 'tokenizer'), or use "
                           "mode: causal", u->name, u->tok->ops->kind, u->tokenizer);
    u->arch.vocab = u->tok->n_vocab;
    struct lx_buf b = {0};
    lx_params_json(&lx_arch_schema, &u->arch, &b);
    free(u->arch_json);
    u->arch_json = lx_xstrdup(lx_buf_str(&b));
    lx_buf_free(&b);
    return LX_OK;
}

const struct lx_tokenizer *lx_model_use_tokenizer(const struct lx_model_use *u)
{
    return u->tok ? u->tok : &lx_byte_tokenizer;
}

/* A number of a server entry in [lo, hi] (default def), written in decimal;
** a whole number where whole says (concurrency, retries): 1.5 is refused,
** not cut to 1, and so is 0x10. */
static int server_num(const struct lx_model_use *u, const struct lx_node *v, const char *key, double lo, double hi,
                      int whole, double def, double *out, struct lx_error *err)
{
    const struct lx_node *x = lx_map_get(v, key);
    char *end = NULL;
    *out = def;
    if (!x)
        return LX_OK;
    int ok = x->kind == LX_NODE_SCALAR && x->text[0] && !x->text[strspn(x->text, whole ? "0123456789" :
                                                                         "0123456789.eE+-")];
    *out = ok ? strtod(x->text, &end) : NAN;
    if (!end || *end || !(*out >= lo && *out <= hi))
        return lx_node_err(err, x, "model '%s' server: '%s' must be a %snumber in [%g, %g]\n  hint: %s: %g is the "
                           "default", u->name, key, whole ? "whole " : "", lo, hi, key, def);
    return LX_OK;
}

/* Past a method's parameters in a canonical stack string, to the '+' before the next method or the end. */
static const char *past_params(const char *p)
{
    for (int d = 0; *p && (d || *p != '+'); p++)
        d += *p == '(' ? 1 : *p == ')' ? -1 : 0;
    return p;
}

/* Do two canonical stack strings ("rope(layout=interleaved)+yarn(scale=2)") name the same methods in the
** same order, whatever their parameters? */
static int same_method_names(const char *a, const char *b)
{
    for (;;) {
        size_t na = strcspn(a, "(+"), nb = strcspn(b, "(+");
        if (na != nb || strncmp(a, b, na) != 0)
            return 0;
        a = past_params(a + na), b = past_params(b + nb);
        if (!*a || !*b)
            return !*a && !*b;
        a++, b++;
    }
}

/* served: against the stack lenx serve says it runs (other servers are taken on trust). */
static int check_served(const struct lx_model_use *u, const struct lx_node *sv, struct lx_error *err)
{
    const char *runs = lx_lm_server_methods(u->lm);
    if (!runs || same_method_names(u->served_canon, runs))
        return LX_OK;
    return lx_node_err(err, sv, "model '%s' server: served: is %s, and the server (lenx serve) runs %s: its "
                       "cells would be stored under a stack it does not run\n  hint: served: as the server was "
                       "started (its /v1/models lenx.methods)", u->name, u->served_canon, runs);
}

/* server: {url, model, tokenizer, served, concurrency, timeout, retries, api_key_env}: the
** server is asked who it is and what it can give now, so that the model key
** holds its identity and a task it cannot run is refused at plan time. */
static int parse_server(struct lx_model_use *u, const struct lx_node *v, struct lx_error *err)
{
    static const char *keys[] = {"url", "model", "tokenizer", "served", "concurrency", "timeout", "retries",
                                 "api_key_env"};
    if (v->kind != LX_NODE_MAP)
        return lx_node_err(err, v, "model '%s': 'server' is a mapping\n  hint: server: {url: "
                           "http://127.0.0.1:8000/v1, model: NAME, tokenizer: PATH}", u->name);
    for (int i = 0; i < v->n_items; i++) {
        const char *k = lx_map_key(v, i)->text;
        int known = 0;
        for (int j = 0; j < 8; j++)
            known |= strcmp(k, keys[j]) == 0;
        if (!known) {
            const char *near = lx_closest(k, keys, 8);
            return lx_node_err(err, lx_map_key(v, i), "model '%s' server: unknown key '%s'\n  hint: %s%s%sa server "
                               "has url, model, tokenizer, served, concurrency, timeout, retries and api_key_env",
                               u->name, k, LX_DID_YOU_MEAN(near));
        }
    }
    char what[160];
    snprintf(what, sizeof what, "model '%s' server: ", u->name);
    if (lx_map_unique(v, what, err) < 0)
        return LX_EINVAL;
    const struct lx_node *url = lx_map_get(v, "url"), *model = lx_map_get(v, "model"), *sv = lx_map_get(v, "served");
    if (!url || url->kind != LX_NODE_SCALAR || (strncmp(url->text, "http://", 7) && strncmp(url->text, "https://", 8)))
        return lx_node_err(err, url ? url : v, "model '%s' server: 'url' is the API's base, http://HOST:PORT/v1",
                           u->name);
    if (model && model->kind != LX_NODE_SCALAR)
        return lx_node_err(err, model, "model '%s' server: 'model' is the model id the server lists", u->name);
    double conc, timeout, retries;
    int rc = server_num(u, v, "concurrency", 1, 256, 1, 4, &conc, err);
    if (rc == LX_OK)
        rc = server_num(u, v, "timeout", 1, 86400, 0, 600, &timeout, err);
    if (rc == LX_OK)
        rc = server_num(u, v, "retries", 0, 20, 1, 3, &retries, err);
    if (rc == LX_OK)
        rc = open_tokenizer(u, lx_map_get(v, "tokenizer"), v, NULL, err);
    struct lx_stack st = {0};
    struct lx_doc plain = {0};  /* without served: the model as it is, the stack 'none' a sweep names */
    if (rc == LX_OK && !sv && (rc = lx_doc_load_text(&plain, "none", "served", err)) == LX_OK)
        rc = lx_stack_parse(&st, plain.root, err);
    if (rc == LX_OK && sv && (rc = lx_stack_parse(&st, sv, err)) == LX_OK)
        u->served_where = sv;
    lx_doc_release(&plain);
    if (rc < 0)
        return rc;
    u->served_json = lx_xstrdup(st.json);
    u->served_canon = lx_xstrdup(st.canon);
    lx_stack_release(&st);
    const struct lx_tokenizer *tk = lx_model_use_tokenizer(u);
    /* the API key's variable: its name may be in the file, the key itself never (nor in the store) */
    const struct lx_node *ke = lx_map_get(v, "api_key_env");
    const char *key = ke && ke->kind == LX_NODE_SCALAR && ke->text[0] ? getenv(ke->text) : NULL;
    if (ke && (!key || !key[0] || strpbrk(key, "\r\n")))
        return lx_node_err(err, ke, "model '%s' server: api_key_env names %s\n  hint: export the key first "
                           "(export %s=...), and name the variable, not the key", u->name,
                           !key || !key[0] ? "no variable set in this environment" : "a value with a line break",
                           ke->kind == LX_NODE_SCALAR && ke->text[0] ? ke->text : "NAME");
    struct lx_server_cfg cfg = {.url = url->text, .model = model ? model->text : NULL, .concurrency = (int)conc,
                                .timeout = timeout, .retries = (int)retries, .api_key = key};
    u->lm = lx_xcalloc(1, sizeof *u->lm);
    struct lx_error sub;
    if (lx_lm_server_open(u->lm, &cfg, tk, u->name, &sub) < 0) {
        free(u->lm);
        u->lm = NULL;
        return lx_node_err(err, url, "model '%s': %s", u->name, sub.msg);
    }
    if (sv && (rc = check_served(u, sv, err)) < 0)
        return rc;
    lx_params_defaults(&lx_arch_schema, &u->arch);      /* what the plan reads of a model: its mode, vocab */
    u->arch.mode = LX_MODEL_CAUSAL;
    u->arch.vocab = tk->is_byte ? LX_VOCAB : tk->n_vocab;
    lx_params_defaults(&lx_train_schema, &u->train);
    u->train.length = u->lm->train_len;
    u->arch_json = lx_xstrdup("{}");
    u->train_json = lx_xstrdup("{}");
    return LX_OK;
}

/* A mixture entry's integer key (length_power, max_length) in [lo, hi]. */
static int mix_long(const struct lx_node *v, long lo, long hi, long *out)
{
    char *end = NULL;
    *out = v->kind == LX_NODE_SCALAR && *v->text ? strtol(v->text, &end, 10) : 0;
    return end && !*end && *out >= lo && *out <= hi;
}

/* A mixture entry's own keys, beside the task's parameters. */
struct mix_keys {
    const struct lx_node *w, *sc, *lp, *ml;     /* weight, score, length_power, max_length (NULL: absent) */
    double weight;
    int answer_only;
    long power, max_len;                        /* 1 and 0 when absent */
};

static int mix_keys_parse(const struct lx_model_use *u, const char *task, const struct lx_node *k,
                          const struct lx_node *pnode, struct mix_keys *m, struct lx_error *err)
{
    char what[160];
    snprintf(what, sizeof what, "model '%s' mixture '%s': ", u->name, task);
    int rc = lx_map_unique(pnode, what, err);     /* a second weight would reach the task as unknown */
    if (rc < 0)
        return rc;
    *m = (struct mix_keys){.w = lx_map_get(pnode, "weight"), .sc = lx_map_get(pnode, "score"),
                           .lp = lx_map_get(pnode, "length_power"), .ml = lx_map_get(pnode, "max_length"),
                           .power = 1};
    const struct lx_node *w = m->w, *sc = m->sc, *nums[] = {m->w, m->lp, m->ml};
    static const char *const num_names[] = {"weight", "length_power", "max_length"};
    for (int i = 0; i < 3; i++)     /* as elsewhere in a sweep: a quoted "0.5" is a string, 0x1p-1 no decimal */
        if (nums[i] && nums[i]->kind == LX_NODE_SCALAR && *nums[i]->text &&
            (nums[i]->quoted || strstr(nums[i]->text, "0x") || strstr(nums[i]->text, "0X")))
            return lx_node_err(err, nums[i], "model '%s' mixture '%s': '%s' must be a decimal number, got %s%s%s\n"
                               "  hint: write it unquoted, e.g. 0.5", u->name, task, num_names[i],
                               nums[i]->quoted ? "the string \"" : "'", nums[i]->text, nums[i]->quoted ? "\"" : "'");
    m->answer_only = sc && sc->kind == LX_NODE_SCALAR && !strcmp(sc->text, "answer");
    if (sc && !m->answer_only && !(sc->kind == LX_NODE_SCALAR && !strcmp(sc->text, "all")))
        return lx_node_err(err, sc, "model '%s' mixture '%s': 'score' is all or answer\n"
                           "  hint: answer trains on the answer tokens only (e.g. not needle's haystack prose)",
                           u->name, task);
    char *end = NULL;
    m->weight = w && w->kind == LX_NODE_SCALAR ? strtod(w->text, &end) : 0.0;
    if (!w || !end || *end || !(m->weight > 0.0 && m->weight <= 1.0))
        return lx_node_err(err, w ? w : k, "model '%s' mixture '%s': 'weight' must be a fraction in (0, 1]\n"
                           "  hint: the fraction of training windows drawn from the task", u->name, task);
    if (m->ml && !mix_long(m->ml, 2, 1L << 20, &m->max_len))
        return lx_node_err(err, m->ml, "model '%s' mixture '%s': 'max_length' must be an integer from 2 to %ld\n"
                           "  hint: the longest instance in tokens; the corpus windows keep the training length",
                           u->name, task, 1L << 20);
    if (m->lp && !mix_long(m->lp, 1, 8, &m->power))
        return lx_node_err(err, m->lp, "model '%s' mixture '%s': 'length_power' must be an integer from 1 to 8\n"
                           "  hint: 1 draws instance lengths uniformly; p > 1 draws them as v^p of the range, "
                           "skewed toward short ones", u->name, task);
    return LX_OK;
}

/* A protocol preset in a mixture entry: training draws lenx's own instances, so it would be ignored
** (the plan passed and training failed at a length nobody wrote). */
static int mix_preset_refused(const struct lx_model_use *u, const struct lx_task *t, const void *p,
                              const struct lx_node *pnode, const struct lx_node *k, struct lx_error *err)
{
    const struct lx_param *proto = lx_param_find(&t->schema, "protocol");
    struct lx_buf pv = {0};
    if (proto)
        lx_param_value_text(proto, p, &pv);
    int rc = LX_OK;
    if (proto && strcmp(lx_buf_str(&pv), "lenx") != 0) {
        const struct lx_node *at = lx_map_get(pnode, "protocol");
        rc = lx_node_err(err, at ? at : k, "model '%s' mixture '%s': protocol %s makes test cases, not training "
                         "instances\n  hint: drop it; a mixture trains on lenx's own instances of the task", u->name,
                         t->name, lx_buf_str(&pv));
    }
    lx_buf_free(&pv);
    return rc;
}

/* One mixture entry: {task: {params…, weight: w, score: s, length_power: p, max_length: n}}. */
static int parse_mix(struct lx_model_use *u, const struct lx_node *e, struct lx_buf *json, struct lx_error *err)
{
    if (e->kind != LX_NODE_MAP || e->n_items != 1)
        return lx_node_err(err, e, "model '%s': a mixture entry is {task: {params, weight: w}}\n"
                           "  hint: e.g. mixture: [{passkey: {template: short, weight: 0.5}}]", u->name);
    const struct lx_node *k = lx_map_key(e, 0), *pnode = lx_map_value(e, 0);
    const struct lx_task *t = lx_task_find(k->text);
    if (!t) {
        struct lx_error sub;
        lx_unknown_name(&sub, "task", k->text);
        return lx_node_err(err, k, "model '%s' mixture: %s", u->name, sub.msg);
    }
    if (!t->train_sample || t->mode != LX_MODE_CAUSAL || u->arch.mode != LX_MODEL_CAUSAL)
        return lx_node_err(err, k, "model '%s': task '%s' cannot be mixed into %s training\n"
                           "  hint: mixtures take retrieval tasks (passkey, ...) on causal models", u->name,
                           t->name, u->arch.mode == LX_MODEL_CAUSAL ? "this model's" : "masked-LM");
    struct mix_keys mk;
    int rc = mix_keys_parse(u, t->name, k, pnode, &mk, err);
    if (rc < 0)
        return rc;
    struct lx_node rest;
    const struct lx_node *skip[] = {mk.w, mk.sc, mk.lp, mk.ml}, *params, *items[2 * 64];
    if (!(params = lx_map_except(pnode, skip, 4, &rest, (struct lx_node **)items, 64)))
        return lx_node_err(err, pnode, "model '%s' mixture '%s': too many parameters", u->name, t->name);
    struct lx_mix *x = &u->mix[u->n_mix];
    void *p = lx_xcalloc(1, t->schema.size);
    lx_params_defaults(&t->schema, p);
    char what[160];
    snprintf(what, sizeof what, "model '%s' mixture task '%s'", u->name, t->name);
    rc = lx_params_apply(&t->schema, p, params, what, err);
    if (rc < 0) {
        free(p);
        if (err && strstr(err->msg, ": unknown parameter '"))     /* the hint lists the task's; add the entry's */
            strncat(err->msg, "; the entry's own: weight, score, length_power, max_length",
                    sizeof err->msg - strlen(err->msg) - 1);
        return rc;
    }
    lx_params_finish(&t->schema, p);
    if ((rc = mix_preset_refused(u, t, p, pnode, k, err)) < 0) {
        free(p);
        return rc;
    }
    struct lx_error sub;
    if (t->check && t->check(p, u->train.length, &sub) < 0) {   /* no instance fits the training window */
        free(p);
        return lx_node_err(err, k, "model '%s' mixture: the training length %ld is too short: %s", u->name,
                           u->train.length, sub.msg);
    }
    if (mk.ml && t->check && t->check(p, mk.max_len, &sub) < 0) {
        free(p);
        return lx_node_err(err, mk.ml, "model '%s' mixture '%s': max_length %ld is too short: %s", u->name, t->name,
                           mk.max_len, sub.msg);
    }
    *x = (struct lx_mix){.name = t->name, .weight = mk.weight, .params = p, .sample = t->train_sample,
                         .check = t->check, .answer_only = mk.answer_only, .length_power = (int)mk.power,
                         .max_length = mk.max_len, .tok = u->tok};
    u->n_mix++;
    lx_buf_printf(json, "%s{\"name\":", u->n_mix > 1 ? "," : "");
    lx_buf_json_str(json, t->name);
    lx_buf_puts(json, ",\"params\":");
    lx_params_json_training(&t->schema, p, json);   /* how many test cases, where, how graded: not training's */
    lx_buf_puts(json, ",\"weight\":");
    lx_buf_num(json, mk.weight);
    if (mk.power == 1)         /* how lx_mix_window draws and places it; models without a power keep their keys */
        lx_buf_puts(json, ",\"length\":\"uniform-tail-unscored-head\"");
    else
        lx_buf_printf(json, ",\"length\":\"power-%ld-tail-unscored-head\"", mk.power);
    if (mk.max_len)
        lx_buf_printf(json, ",\"max_length\":%ld", mk.max_len);
    if (mk.answer_only)        /* only when set: models without it keep their keys */
        lx_buf_puts(json, ",\"score\":\"answer\"");
    lx_buf_puts(json, "}");
    return LX_OK;
}

static int parse_mixture(struct lx_model_use *u, const struct lx_node *v, struct lx_error *err)
{
    if (v->kind != LX_NODE_SEQ || v->n_items < 1 || v->n_items > LX_MAX_MIX)
        return lx_node_err(err, v, "model '%s': 'mixture' must be a list of 1 to %d tasks\n"
                           "  hint: mixture: [{passkey: {weight: 0.5}}]", u->name, LX_MAX_MIX);
    struct lx_buf json = {0};
    double total = 0.0;
    int rc = LX_OK;
    u->mix_where = v;
    lx_buf_puts(&json, "[");
    for (int i = 0; i < v->n_items && rc == LX_OK; i++) {
        rc = parse_mix(u, v->items[i], &json, err);
        total += rc == LX_OK ? u->mix[u->n_mix - 1].weight : 0.0;
    }
    if (rc == LX_OK && total > 1.0 + 1e-12)
        rc = lx_node_err(err, v, "model '%s': the mixture's weights add up to %g, more than 1\n  hint: "
                         "lower them; the windows they leave (1 minus their sum) are corpus text", u->name, total);
    lx_buf_puts(&json, "]");
    u->mix_json = rc == LX_OK ? lx_xstrdup(lx_buf_str(&json)) : NULL;
    lx_buf_free(&json);
    return rc;
}

/* A trained model's train settings that its mode or mixture cannot use, at the value. */
static int check_train(struct lx_model_use *u, const struct lx_node *v, int mix, struct lx_error *err)
{
    const struct lx_node *tn = lx_map_get(v, "train"), *bn = tn ? lx_map_get(tn, "begin") : NULL;
    u->length_where = tn ? lx_map_get(tn, "length") : NULL;
    const struct lx_node *mp = tn ? lx_map_get(tn, "mask_prob") : NULL;
    if (u->train.begin == LX_BEGIN_TEXT && u->arch.mode != LX_MODEL_CAUSAL)
        return lx_node_err(err, bn, "model '%s': begin: text cuts causal windows; a masked LM reads no start "
                           "token\n  hint: drop begin", u->name);
    if (u->train.begin == LX_BEGIN_TEXT && mix)
        return lx_node_err(err, bn, "model '%s': begin: text trains on windows without a start token, and a "
                           "mixture's instances start with one\n  hint: drop begin or the mixture", u->name);
    if (mp && u->arch.mode == LX_MODEL_CAUSAL)
        return lx_node_err(err, mp, "model '%s': mask_prob is the masked LM's; a causal model masks nothing\n"
                           "  hint: drop it, or train an mlm model (arch: {mode: mlm})", u->name);
    const struct lx_node *wn = tn ? lx_map_get(tn, "warmup") : NULL, *sn = tn ? lx_map_get(tn, "steps") : NULL;
    if (u->train.warmup >= u->train.steps)      /* at the warmup given, else at the steps given */
        return lx_node_err(err, wn ? wn : sn ? sn : tn ? tn : v, "model '%s': warmup (%ld) must be below steps "
                           "(%ld)\n  hint: a smaller warmup (the default is 100), or more steps", u->name,
                           u->train.warmup, u->train.steps);
    return LX_OK;
}

static int parse_one(struct lx_model_use *u, const struct lx_node *key, const struct lx_node *v,
                     struct lx_error *err)
{
    u->name = lx_xstrdup(key->text);
    u->where = key;
    if (v->kind != LX_NODE_MAP)
        return lx_node_err(err, v, "model '%s' must be a mapping with arch and train, or checkpoint\n"
                           "  hint: e.g. %s: {arch: {layers: 2}, train: {length: 128, steps: 1000}}",
                           u->name, u->name);
    /* a model's own keys, then the keys of the formats that have one (formats.def) */
    const char *keys[32] = {"arch", "train", "checkpoint", "mixture", "tokenizer", "server"};
    int n_keys = 6, n_formats;
    const struct lx_model_format *const *formats = lx_model_formats(&n_formats);
    for (int j = 0; j < n_formats && n_keys < (int)(sizeof keys / sizeof *keys); j++)
        if (formats[j]->key)
            keys[n_keys++] = formats[j]->key;
    const struct lx_model_format *fmt = NULL;
    for (int i = 0; i < v->n_items; i++) {
        const char *k = lx_map_key(v, i)->text;
        int known = 0;
        for (int j = 0; j < n_keys; j++)
            known |= strcmp(k, keys[j]) == 0;
        if (!fmt)
            fmt = lx_model_format_for_key(k);
        if (!known) {
            const char *near = lx_closest(k, keys, n_keys);
            return lx_node_err(err, lx_map_key(v, i), "model '%s': unknown key '%s'\n"
                               "  hint: %s%s%sa model has arch, train, mixture and tokenizer, or checkpoint (or "
                               "hf), tokenizer and mixture", u->name, k,
                               LX_DID_YOU_MEAN(near));
        }
    }
    char what[160];
    snprintf(what, sizeof what, "model '%s': ", u->name);
    int rc = lx_map_unique(v, what, err);
    if (rc < 0)
        return rc;
    const struct lx_node *server = lx_map_get(v, "server");
    if (server && v->n_items > 1)
        return lx_node_err(err, v, "model '%s': a server model has only 'server' (with its url, model, tokenizer "
                           "and served stack inside)", u->name);
    if (server)
        return parse_server(u, server, err);
    const struct lx_node *ck = lx_map_get(v, "checkpoint"), *fk = fmt ? lx_map_get(v, fmt->key) : NULL;
    const struct lx_node *tk = lx_map_get(v, "tokenizer");
    const struct lx_node *mix = lx_map_get(v, "mixture");
    if (ck || fk) {     /* its mixture is what a fine-tuning of it trains on (lx_plan_build checks one does) */
        if (v->n_items > 1 + (tk != NULL) + (mix != NULL))
            return lx_node_err(err, v, "model '%s': a checkpoint brings its own arch and training; "
                               "give only 'checkpoint' or '%s' (and 'tokenizer', 'mixture')", u->name,
                               fmt ? fmt->key : "hf");
        rc = parse_checkpoint(u, ck ? ck : fk, ck ? NULL : fmt, tk, err);
        if (rc == LX_OK && mix && u->train.begin == LX_BEGIN_TEXT)
            return lx_node_err(err, mix, "model '%s': the checkpoint was trained on windows without a start "
                               "token, and a mixture's instances start with one\n  hint: drop the mixture",
                               u->name);
        return rc == LX_OK && mix ? parse_mixture(u, mix, err) : rc;
    }
    snprintf(what, sizeof what, "model '%s' arch", u->name);
    if ((rc = kv_floor(u, lx_map_get(v, "arch"), err)) < 0)
        return rc;
    rc = resolve(&lx_arch_schema, &u->arch, lx_map_get(v, "arch"), what, &u->arch_json, err);
    if (rc < 0 || (rc = resolve_arch(u, lx_map_get(v, "arch"), err)) < 0)
        return rc;
    snprintf(what, sizeof what, "model '%s' train", u->name);
    if ((rc = resolve(&lx_train_schema, &u->train, lx_map_get(v, "train"), what, &u->train_json, err)) < 0)
        return rc;
    if (tk && (rc = train_tokenizer(u, v, tk, err)) < 0)
        return rc;
    if ((rc = check_train(u, v, mix != NULL, err)) < 0)
        return rc;
    return mix ? parse_mixture(u, mix, err) : LX_OK;
}

int lx_models_parse(struct lx_model_use **out, int *n, const struct lx_node *map, struct lx_error *err)
{
    *out = NULL;
    *n = 0;
    if (map->kind != LX_NODE_MAP || map->n_items == 0)
        return lx_node_err(err, map, "'models' must be a mapping of names to models\n"
                           "  hint: models: {small: {arch: {layers: 2}, train: {length: 128}}}");
    *out = lx_xcalloc((size_t)map->n_items, sizeof **out);
    for (int i = 0; i < map->n_items; i++) {
        const struct lx_node *k = lx_map_key(map, i);
        *n = i + 1;
        for (int j = 0; j < i; j++)
            if (strcmp(lx_map_key(map, j)->text, k->text) == 0)
                return lx_node_err(err, k, "model '%s' is defined twice", k->text);
        int rc = parse_one(&(*out)[i], k, lx_map_value(map, i), err);
        if (rc < 0)
            return rc;
    }
    return LX_OK;
}

void lx_models_release(struct lx_model_use *m, int n)
{
    for (int i = 0; i < n; i++) {
        free(m[i].name);
        free(m[i].arch_json);
        free(m[i].train_json);
        free(m[i].checkpoint);
        free(m[i].ckpt_stack);
        free(m[i].ckpt_eval);
        free(m[i].mix_json);
        free(m[i].tokenizer);
        lx_tokenizer_free(m[i].tok);
        if (m[i].lm)
            lx_lm_server_close(m[i].lm);
        free(m[i].lm);
        free(m[i].served_json);
        free(m[i].served_canon);
        for (int j = 0; j < m[i].n_mix; j++)
            free((void *)m[i].mix[j].params);
    }
    free(m);
}
