/*
** harness/engine/kernels/numerics.c - the process's settings (numerics.h): the
** numerics mode and the attention path of training passes.
*/
#include "harness/engine/kernels/numerics.h"

#include <string.h>

#include "harness/core/half.h"

static enum lx_numerics mode = LX_NUMERICS_FAST;

void lx_numerics_set(enum lx_numerics n)
{
    mode = n;
}

enum lx_numerics lx_numerics_get(void)
{
    return mode;
}

const char *lx_numerics_name(enum lx_numerics n)
{
    return n == LX_NUMERICS_PORTABLE ? "portable" : n == LX_NUMERICS_BF16 ? "bf16" : "fast";
}

int lx_numerics_parse(const char *s, enum lx_numerics *out)
{
    if (s && !strcmp(s, "fast"))
        *out = LX_NUMERICS_FAST;
    else if (s && !strcmp(s, "portable"))
        *out = LX_NUMERICS_PORTABLE;
    else if (s && !strcmp(s, "bf16"))
        *out = LX_NUMERICS_BF16;
    else
        return -1;
    return 0;
}

/* 0 and *on (1 for the second word) on either of two words, -1 on anything else. */
static int two_words(const char *s, const char *off, const char *on_word, int *on)
{
    if (!s || (strcmp(s, off) && strcmp(s, on_word)))
        return -1;
    *on = !strcmp(s, on_word);
    return 0;
}

static int kv_dt = LX_DT_F32;

void lx_kv_set(int dt)
{
    kv_dt = dt;
}

int lx_kv_get(void)
{
    return kv_dt;
}

const char *lx_kv_name(int dt)
{
    return dt == LX_DT_BF16 ? "bf16" : dt == LX_DT_F16 ? "f16" : "fp32";
}

int lx_kv_parse(const char *s, int *dt)
{
    static const int types[] = {LX_DT_F32, LX_DT_BF16, LX_DT_F16};
    for (size_t i = 0; s && i < sizeof types / sizeof *types; i++)
        if (!strcmp(s, lx_kv_name(types[i]))) {
            *dt = types[i];
            return 0;
        }
    return -1;
}

static int acts_llamacpp;

void lx_acts_llamacpp_set(int on)
{
    acts_llamacpp = on;
}

int lx_acts_llamacpp_get(void)
{
    return acts_llamacpp;
}

int lx_acts_parse(const char *s, int *on)
{
    return two_words(s, "fp32", "llamacpp", on);
}

int lx_attn_half(void)
{
    return acts_llamacpp ? kv_dt : 0;
}

const char *lx_acts_conflict(enum lx_numerics n, int llamacpp)
{
    return llamacpp && n == LX_NUMERICS_BF16
               ? "activations: llamacpp does not go with numerics: bf16 (x is rounded to bf16 there already)\n"
                 "  hint: use numerics fast (or portable) with activations llamacpp"
               : NULL;
}

static enum lx_train_attn train_attn = LX_TRAIN_TILED;

void lx_train_attn_set(enum lx_train_attn m)
{
    train_attn = m;
}

enum lx_train_attn lx_train_attn_get(void)
{
    return train_attn;
}

int lx_train_attn_parse(const char *s, enum lx_train_attn *out)
{
    if (s && !strcmp(s, "tiled"))
        *out = LX_TRAIN_TILED;
    else if (s && (!strcmp(s, "materialised") || !strcmp(s, "materialized")))
        *out = LX_TRAIN_MATERIALISED;
    else
        return -1;
    return 0;
}
