/*
** harness/models.c - parsing the models axis (see models.h).
*/
#include "harness/models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/checkpoint.h"

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

static int parse_checkpoint(struct lx_model_use *u, const struct lx_node *v, struct lx_error *err)
{
    if (v->kind != LX_NODE_SCALAR)
        return lx_node_err(err, v, "model '%s': 'checkpoint' must be a file path", u->name);
    u->checkpoint = resolve_path(v);
    struct lx_model m;
    struct lx_ckpt_info info = {0};
    struct lx_error sub;
    if (lx_model_load(&m, u->checkpoint, &info, &sub) < 0)
        return lx_node_err(err, v, "model '%s': %s", u->name, sub.msg);
    u->arch = m.arch;
    lx_params_defaults(&lx_train_schema, &u->train);
    u->train.length = info.train_len;
    struct lx_buf b = {0};
    lx_params_json(&lx_arch_schema, &u->arch, &b);
    u->arch_json = lx_xstrdup(lx_buf_str(&b));
    lx_buf_free(&b);
    u->train_json = lx_xstrdup(info.train_json);
    u->ckpt_stack = lx_xstrdup(info.stack);
    memcpy(u->ckpt_sha, info.sha256, sizeof u->ckpt_sha);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
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
    static const char *const keys[] = {"arch", "train", "checkpoint"};
    for (int i = 0; i < v->n_items; i++) {
        const char *k = lx_map_key(v, i)->text;
        if (strcmp(k, "arch") && strcmp(k, "train") && strcmp(k, "checkpoint")) {
            const char *near = lx_closest(k, keys, 3);
            return lx_node_err(err, lx_map_key(v, i), "model '%s': unknown key '%s'\n"
                               "  hint: %s%s%sa model has arch and train, or checkpoint", u->name, k,
                               near ? "did you mean '" : "", near ? near : "", near ? "'? " : "");
        }
    }
    const struct lx_node *ck = lx_map_get(v, "checkpoint");
    if (ck) {
        if (v->n_items > 1)
            return lx_node_err(err, v, "model '%s': a checkpoint brings its own arch and training; "
                               "give only 'checkpoint'", u->name);
        return parse_checkpoint(u, ck, err);
    }
    char what[160];
    snprintf(what, sizeof what, "model '%s' arch", u->name);
    int rc = resolve(&lx_arch_schema, &u->arch, lx_map_get(v, "arch"), what, &u->arch_json, err);
    if (rc < 0)
        return rc;
    snprintf(what, sizeof what, "model '%s' train", u->name);
    if ((rc = resolve(&lx_train_schema, &u->train, lx_map_get(v, "train"), what, &u->train_json, err)) < 0)
        return rc;
    if (u->train.warmup >= u->train.steps)
        return lx_node_err(err, lx_map_get(v, "train") ? lx_map_get(v, "train") : v,
                           "model '%s': warmup (%ld) must be below steps (%ld)", u->name, u->train.warmup,
                           u->train.steps);
    return LX_OK;
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
    }
    free(m);
}
