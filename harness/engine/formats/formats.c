/*
** harness/engine/formats/formats.c - the registry of model formats (one entry
** per line of formats.def, the only place their symbols are named) and
** lx_model_load, which dispatches over it (formats.h).
*/
#include "harness/engine/formats/formats.h"

#include <string.h>

#define LX_FORMAT(name) extern const struct lx_model_format lx_model_format_##name;
#include "harness/engine/formats/formats.def"
#undef LX_FORMAT

static const struct lx_model_format *formats[LX_MODEL_FORMAT_EXTRA + 16] = {
#define LX_FORMAT(name) &lx_model_format_##name,
#include "harness/engine/formats/formats.def"
#undef LX_FORMAT
};

static int n_extra;     /* formats[0, n_extra) were added by lx_model_format_add */

static int n_formats(void)
{
    int n = 0;
    while (n < (int)(sizeof formats / sizeof *formats) && formats[n])
        n++;
    return n;
}

const struct lx_model_format *const *lx_model_formats(int *n)
{
    *n = n_formats();
    return formats;
}

int lx_model_format_add(const struct lx_model_format *f, struct lx_error *err)
{
    int n = n_formats();
    if (!f->name || !f->sniff || !f->load)
        return lx_err(err, LX_EINVAL, "format '%s': name, sniff and load are required", f->name ? f->name : "?");
    for (int i = 0; i < n; i++)
        if (strcmp(formats[i]->name, f->name) == 0)
            return lx_err(err, LX_EINVAL, "format '%s' is already registered", f->name);
    if (n_extra == LX_MODEL_FORMAT_EXTRA || n == (int)(sizeof formats / sizeof *formats))
        return lx_err(err, LX_EINVAL, "format '%s': no room for more than %d added formats", f->name,
                      LX_MODEL_FORMAT_EXTRA);
    memmove(formats + 1, formats, (size_t)n * sizeof *formats);
    formats[0] = f;
    n_extra++;
    return LX_OK;
}

const struct lx_model_format *lx_model_format_for_key(const char *key)
{
    for (int i = 0, n = n_formats(); i < n; i++)
        if (formats[i]->key && strcmp(formats[i]->key, key) == 0)
            return formats[i];
    return NULL;
}

int lx_model_load(struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err)
{
    if (info)
        memset(info, 0, sizeof *info);
    for (int i = 0, n = n_formats(); i < n; i++)
        if (formats[i]->sniff(path)) {
            int rc = formats[i]->load(m, path, info, err);
            if (rc == LX_OK)
                lx_model_fit_numerics(m);   /* the hashes above are of the file's weights */
            return rc;
        }
    return lx_err(err, LX_EINVAL, "%s: not a model in any format lenx reads", path);
}
