/*
** harness/engine/formats/hf_cfg.c - config.json's members as the Hugging Face loaders read them
** (see hf_cfg.h).
*/
#include "harness/engine/formats/hf_cfg.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness/engine/model/arch.h"

int lx_hf_cfg_int(const struct lx_json *doc, const struct lx_jv *root, const char *key, long def, long lo, long hi,
                  long *out, struct lx_error *err)
{
    const struct lx_jv *v = lx_json_member(root, key);
    int64_t x = def;
    if (!v || lx_json_type(v) == LX_JSON_NULL) {
        if (def < 0)
            return lx_err(err, LX_EINVAL, "%s: no '%s'\n  hint: config.json of a transformers model names every "
                          "architecture field", lx_json_name(doc), key);
    } else if (lx_json_int(doc, v, &x, err) < 0) {
        return LX_EINVAL;
    }
    if (x < lo || x > hi)
        return lx_json_err(err, doc, v ? v : root, "%s is %lld, outside [%ld, %ld] (what lenx can hold)", key,
                           (long long)x, lo, hi);
    *out = (long)x;
    return LX_OK;
}

/* v (member key) as a positive finite number, def when absent or null. */
static int positive(const struct lx_json *doc, const struct lx_jv *v, const char *key, double def, double *out,
                    struct lx_error *err)
{
    *out = def;
    if (!v || lx_json_type(v) == LX_JSON_NULL)
        return LX_OK;
    if (lx_json_num(doc, v, out, err) < 0)
        return LX_EINVAL;
    if (!(*out > 0) || !isfinite(*out))
        return lx_json_err(err, doc, v, "%s must be a positive number", key);
    return LX_OK;
}

int lx_hf_cfg_num(const struct lx_json *doc, const struct lx_jv *root, const char *key, double def, double *out,
                  struct lx_error *err)
{
    return positive(doc, lx_json_member(root, key), key, def, out, err);
}

const struct lx_jv *lx_hf_rope_params(const struct lx_jv *root, const char *layer_type)
{
    const struct lx_jv *p = lx_json_member(root, "rope_parameters"), *t = lx_json_member(p, layer_type);
    if (lx_json_type(p) != LX_JSON_OBJECT)
        return NULL;
    if (lx_json_type(t) == LX_JSON_OBJECT)
        return t;
    int typed = lx_json_type(lx_json_member(p, "full_attention")) == LX_JSON_OBJECT ||
                lx_json_type(lx_json_member(p, "sliding_attention")) == LX_JSON_OBJECT;
    return !typed && strcmp(layer_type, "full_attention") == 0 ? p : NULL;
}

int lx_hf_rope_member(const struct lx_json *doc, const struct lx_jv *root, const char *key, const struct lx_jv **v,
                      struct lx_error *err)
{
    const struct lx_jv *top = lx_json_member(root, key), *in = lx_json_member(lx_hf_rope_params(root,
                                                                                  "full_attention"), key);
    top = lx_json_type(top) == LX_JSON_NULL ? NULL : top;
    in = lx_json_type(in) == LX_JSON_NULL ? NULL : in;
    double a, b;
    struct lx_error sub;
    *v = top ? top : in;
    if (top && in && !(lx_json_num(doc, top, &a, &sub) == LX_OK && lx_json_num(doc, in, &b, &sub) == LX_OK &&
                       a == b)) {
        *v = NULL;
        return lx_json_err(err, doc, in, "rope_parameters' %s differs from the top-level %s\n  hint: transformers "
                           "5 reads rope_parameters; give it once", key, key);
    }
    return LX_OK;
}

int lx_hf_cfg_rope(const struct lx_json *doc, const struct lx_jv *root, const char *key, double def, double *out,
                   struct lx_error *err)
{
    const struct lx_jv *v;
    *out = def;
    return lx_hf_rope_member(doc, root, key, &v, err) < 0 ? LX_EINVAL : positive(doc, v, key, def, out, err);
}

/* The first of keys present (transformers renamed some: rotary_pct, rotary_emb_base), else keys[0]. */
const char *lx_hf_cfg_key(const struct lx_jv *root, const char *const *keys, int n)
{
    for (int k = 0; k < n; k++) {
        const struct lx_jv *v = lx_json_member(root, keys[k]);
        if (v && lx_json_type(v) != LX_JSON_NULL)
            return keys[k];
    }
    return keys[0];
}

/* A boolean member, def when absent or null. */
int lx_hf_cfg_bool(const struct lx_json *doc, const struct lx_jv *root, const char *key, int def, int *out,
                   struct lx_error *err)
{
    const struct lx_jv *v = lx_json_member(root, key);
    *out = def;
    return v && lx_json_type(v) != LX_JSON_NULL ? lx_json_bool(doc, v, out, err) : LX_OK;
}

int lx_hf_cfg_int2(const struct lx_json *doc, const struct lx_jv *root, const char *key, const char *other, long def,
                   long lo, long hi, long *out, struct lx_error *err)
{
    const char *const keys[] = {key, other};
    return lx_hf_cfg_int(doc, root, lx_hf_cfg_key(root, keys, 2), def, lo, hi, out, err);
}

int lx_hf_cfg_refuse(const struct lx_json *doc, const struct lx_jv *root, const char *key, const char *hint,
                     struct lx_error *err)
{
    int on;
    int rc = lx_hf_cfg_bool(doc, root, key, 0, &on, err);
    /* named by its key: jansson's `true` is one value shared by every true of the document */
    return rc == LX_OK && on ? lx_json_member_err(err, doc, root, key, "%s: true is not supported by lenx's engine\n"
                                                  "  hint: %s", key, hint) : rc;
}

int lx_hf_names_of(const struct lx_hf_names *f, const char *name, char *out, size_t n, int *part)
{
    static const char *const map[][2] = {
        {"attn_norm.", "input_layernorm."}, {"attn.wq.", "query_key_value."}, {"attn.wk.", "query_key_value."},
        {"attn.wv.", "query_key_value."},   {"attn.wo.", "dense."},
        {"mlp_norm.", "post_attention_layernorm."},
        {"mlp.w1.", "mlp.dense_h_to_4h."},  {"mlp.w2.", "mlp.dense_4h_to_h."},
    };
    long l;
    int at = 0;
    *part = -1;
    if (strcmp(name, "tok_emb.weight") == 0)
        return snprintf(out, n, "%s%s", f->prefix, f->emb), 1;
    if (strncmp(name, "emb_norm.", 9) == 0 && f->emb_norm)
        return snprintf(out, n, "%s%s%s", f->prefix, f->emb_norm, name + 9), 1;
    if (strncmp(name, "norm.", 5) == 0)
        return snprintf(out, n, "%s%s%s", f->prefix, f->norm, name + 5), 1;
    if (strcmp(name, "lm_head.weight") == 0)
        return snprintf(out, n, "%s", f->head), 1;
    if (sscanf(name, "layers.%ld.%n", &l, &at) != 1 || !at)
        return 0;
    for (int k = 0; k < (int)(sizeof map / sizeof *map); k++) {
        size_t len = strlen(map[k][0]);
        if (strncmp(name + at, map[k][0], len) == 0) {
            *part = k >= 1 && k <= 3 ? k - 1 : -1;
            return snprintf(out, n, "%s%s%ld.%s%s%s", f->prefix, f->layers, l, k >= 1 && k <= 4 ? f->attn : "",
                            map[k][1], name + at + len), 1;
        }
    }
    return 0;
}

int lx_hf_names_table(const char *name, char *out, size_t n, const char *emb, const char *norm, const char *layers,
                      const char *const (*map)[2], size_t n_map)
{
    long l;
    int at = 0;
    if (strcmp(name, "tok_emb.weight") == 0)
        return snprintf(out, n, "%s", emb), 1;
    if (strncmp(name, "norm.", 5) == 0)
        return snprintf(out, n, "%s%s", norm, name + 5), 1;
    if (strncmp(name, "lm_head.", 8) == 0)
        return snprintf(out, n, "%s", name), 1;
    if (sscanf(name, "layers.%ld.%n", &l, &at) != 1 || !at)
        return 0;
    for (size_t k = 0; k < n_map; k++) {
        size_t len = strlen(map[k][0]);
        if (strncmp(name + at, map[k][0], len) == 0)
            return snprintf(out, n, "%s%ld.%s%s", layers, l, map[k][1], name + at + len), 1;
    }
    return 0;
}

void lx_hf_gather_heads(void *dst, const void *fused, int part, long groups, long q, long d_head, size_t row_bytes)
{
    size_t block = (size_t)d_head * row_bytes;
    long per = part ? 1 : q, at = part ? q + part - 1 : 0;      /* blocks of the part in a group, its first */
    for (long g = 0; g < groups; g++)
        memcpy((char *)dst + (size_t)(g * per) * block, (const char *)fused + (size_t)(g * (q + 2) + at) * block,
               (size_t)per * block);
}

int lx_hf_cfg_gelu(const struct lx_json *doc, const struct lx_jv *root, const char *key, int *mlp,
                   struct lx_error *err)
{
    static const char *const tanh_forms[] = {"gelu_new", "gelu_pytorch_tanh", "gelu_fast"};
    const struct lx_jv *v = lx_json_member(root, key);
    const char *s = "gelu";
    *mlp = LX_MLP_GELU_ERF;
    if (v && lx_json_type(v) != LX_JSON_NULL && lx_json_str(doc, v, &s, NULL, err) < 0)
        return LX_EINVAL;
    if (strcmp(s, "gelu") == 0)
        return LX_OK;
    for (size_t k = 0; k < sizeof tanh_forms / sizeof *tanh_forms; k++)
        if (strcmp(s, tanh_forms[k]) == 0)
            return *mlp = LX_MLP_GELU, LX_OK;
    return lx_json_err(err, doc, v, "%s '%s': lenx runs gelu (exact) and its tanh forms gelu_new, "
                       "gelu_pytorch_tanh and gelu_fast", key, s);
}
