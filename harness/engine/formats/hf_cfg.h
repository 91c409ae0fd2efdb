/*
** harness/engine/formats/hf_cfg.h - config.json's members as the Hugging Face loaders
** (hf_model.c, hf_mpt.c) read them: with transformers' default when absent or null, the error
** naming the member.
*/
#ifndef LX_HF_CFG_H
#define LX_HF_CFG_H

#include "harness/core/json.h"

/* An integer member (def < 0: required) within [lo, hi]. */
int lx_hf_cfg_int(const struct lx_json *doc, const struct lx_jv *root, const char *key, long def, long lo, long hi,
                  long *out, struct lx_error *err);
/* A positive finite number (def when absent or null). */
int lx_hf_cfg_num(const struct lx_json *doc, const struct lx_jv *root, const char *key, double def, double *out,
                  struct lx_error *err);

#endif
