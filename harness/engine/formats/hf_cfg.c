/*
** harness/engine/formats/hf_cfg.c - config.json's members as the Hugging Face loaders read them
** (see hf_cfg.h).
*/
#include "harness/engine/formats/hf_cfg.h"

#include <math.h>
#include <stdint.h>

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

int lx_hf_cfg_num(const struct lx_json *doc, const struct lx_jv *root, const char *key, double def, double *out,
                  struct lx_error *err)
{
    const struct lx_jv *v = lx_json_member(root, key);
    *out = def;
    if (!v || lx_json_type(v) == LX_JSON_NULL)
        return LX_OK;
    if (lx_json_num(doc, v, out, err) < 0)
        return LX_EINVAL;
    if (!(*out > 0) || !isfinite(*out))
        return lx_json_err(err, doc, v, "%s must be a positive number", key);
    return LX_OK;
}
