/*
** harness/engine/formats/hf_rope.c - a Hugging Face config's positions as lenx's stacks, and back
** (see hf_rope.h; docs/checkpoints.md#native-stacks): rope_theta and rope_scaling (linear, yarn,
** llama3, longrope, dynamic) into the native and evaluation stacks, Dual Chunk Attention and the
** sliding window into the latter; a model's stack written as rope_scaling for lenx export --hf.
*/
#include "harness/engine/formats/hf_rope.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness/engine/formats/hf_cfg.h"

/* A number of rope_scaling, def when absent or not a number. */
static double scaling_num(const struct lx_json *doc, const struct lx_jv *rs, const char *key, double def)
{
    const struct lx_jv *v = lx_json_member(rs, key);
    struct lx_error sub;
    double x = def;
    if (v && lx_json_type(v) != LX_JSON_NULL && lx_json_num(doc, v, &x, &sub) < 0)
        x = def;
    return x;
}

/* rope_scaling's list `key` into out: one factor per rotary pair, each in (0, 1e12]. */
static int factor_list(const struct lx_json *doc, const struct hf_rope_facts *c, const struct lx_jv *rs, const char *key,
                       struct lx_floats *out, struct lx_error *err)
{
    const struct lx_jv *v = lx_json_member(rs, key);
    long pairs = c->rot_dims / 2;
    if (!v)
        return lx_json_err(err, doc, rs, "rope_scaling (longrope) has no %s\n  hint: LongRoPE models list a "
                           "short_factor and a long_factor, one per rotary pair", key);
    if (lx_json_type(v) != LX_JSON_ARRAY || lx_json_len(v) != pairs || pairs > LX_MAX_FLOATS)
        return lx_json_err(err, doc, v, "%s must be a list of %ld numbers, one per rotary pair of %ld channels%s", key,
                           pairs, c->rot_dims, pairs > LX_MAX_FLOATS ? " (lenx's longrope takes heads of up to 256)" : "");
    for (long k = 0; k < pairs; k++) {
        double x;
        if (lx_json_num(doc, lx_json_at(v, k), &x, err) < 0)
            return LX_EINVAL;
        if (!(x > 0 && x <= 1e12))
            return lx_json_err(err, doc, lx_json_at(v, k), "%s[%ld] is %g: a factor must be in (0, 1e12]", key, k, x);
        out->v[k] = x;
    }
    out->n = (int)pairs;
    return LX_OK;
}

/* rope_scaling's original_max_position_embeddings (def when absent): a whole number of positions in
** [1, 2^30], as max_position_embeddings is (hf_model.c). */
static int scaling_original(const struct lx_json *doc, const struct lx_jv *rs, long def, long *out,
                            struct lx_error *err)
{
    const struct lx_jv *v = lx_json_member(rs, "original_max_position_embeddings");
    double x = scaling_num(doc, rs, "original_max_position_embeddings", (double)def);
    if (!(x >= 1 && x <= (double)(1L << 30) && x == floor(x)))
        return lx_json_err(err, doc, v ? v : rs, "%g: not a whole number of positions in [1, %ld]\n  hint: the model's "
                           "training length before the rescaling, as its card gives it", x, 1L << 30);
    *out = (long)x;
    return LX_OK;
}

/* longrope, as transformers reads it: L is config's original_max_position_embeddings (Phi-3 puts it
** there; then s = max_position_embeddings / L), else rope_scaling's, else max_position_embeddings
** with s = rope_scaling's factor; attention_factor when given. */
static int longrope_stack(const struct lx_json *doc, const struct hf_rope_facts *c, const struct lx_jv *rs,
                          struct lx_buf *stack, double *scale, struct lx_error *err)
{
    double top = 0, orig = scaling_num(doc, rs, "original_max_position_embeddings", 0), s = scaling_num(doc, rs,
                                                                                                       "factor", 1);
    const struct lx_jv *o = lx_json_member(c->root ? c->root : lx_json_root(doc), "original_max_position_embeddings");
    if (o && lx_json_type(o) != LX_JSON_NULL && lx_json_num(doc, o, &top, err) < 0)
        return LX_EINVAL;
    if (top > 0)
        orig = top, s = (double)c->max_pos / top;
    else if (!(orig > 0))
        orig = (double)c->max_pos;
    if (!(orig >= 1 && orig < 1e12 && s > 0 && s <= 1e6))
        return lx_json_err(err, doc, rs, "rope_scaling (longrope): original_max_position_embeddings %g and factor %g "
                           "are not a rescaling lenx can run", orig, s);
    *scale = s < 1 ? 1 : s;
    struct lx_floats lng, shrt;
    int rc = factor_list(doc, c, rs, "long_factor", &lng, err);
    if (rc == LX_OK)
        rc = factor_list(doc, c, rs, "short_factor", &shrt, err);
    if (rc == LX_OK)
        lx_stack_put_longrope(stack, *scale, (long)orig, &lng, &shrt, scaling_num(doc, rs, "attention_factor", 0));
    return rc;
}

/* A rope_scaling member written as a string where transformers reads a number ("factor": "4" was read
** as absent): LX_EINVAL naming it. */
static int strings_refused(const struct lx_json *doc, const struct lx_jv *rs, struct lx_error *err)
{
    for (void *it = lx_json_iter(rs); it; it = lx_json_iter_next(rs, it)) {
        const char *key = lx_json_iter_key(it, NULL);
        if (lx_json_type(lx_json_iter_value(it)) == LX_JSON_STRING && strcmp(key, "type") && strcmp(key, "rope_type"))
            return lx_json_err(err, doc, lx_json_iter_value(it), "a string where transformers reads a number\n  hint: "
                               "write %s unquoted", key);
    }
    return LX_OK;
}

/* transformers' YaRN attention factor at scale f: attention_factor when given, else get_mscale(f, mscale)
** / get_mscale(f, mscale_all_dim) when both are set (DeepSeek's), else get_mscale(f) = 0.1 ln f + 1. */
static double yarn_attention(const struct lx_json *doc, const struct lx_jv *rs, double f)
{
    double m = scaling_num(doc, rs, "mscale", 0), all = scaling_num(doc, rs, "mscale_all_dim", 0);
    return scaling_num(doc, rs, "attention_factor", m && all ? (0.1 * m * log(f) + 1) / (0.1 * all * log(f) + 1)
                                                                : 0.1 * log(f) + 1);
}

/* `,{"method":{"scale":f,"original":orig,"k0":v0,"k1":v1` (the object left open), v the rope_scaling
** members key[0] and key[1], else d0 and d1: yarn's betas, llama3's frequency factors. */
static void put_rescaling(struct lx_buf *stack, const struct lx_json *doc, const struct lx_jv *rs, const char *method,
                          double f, long orig, const char *const key[2], double d0, double d1)
{
    lx_buf_printf(stack, ",{\"%s\":{\"scale\":", method);
    lx_buf_num(stack, f);
    lx_buf_printf(stack, ",\"original\":%ld,\"%s\":", orig, key[0]);
    lx_buf_num(stack, scaling_num(doc, rs, key[0], d0));
    lx_buf_printf(stack, ",\"%s\":", key[1]);
    lx_buf_num(stack, scaling_num(doc, rs, key[1], d1));
}

/* rope_scaling yarn at factor f as the yarn method trained in: L, the betas, HF's attention factor (lenx's
** attn_factor is it over 0.1 ln f + 1) and transformers' rope_scaling.get("truncate", True). */
static int yarn_stack(const struct lx_json *doc, const struct hf_rope_facts *c, const struct lx_jv *rs, double f,
                      struct lx_buf *stack, struct lx_error *err)
{
    long orig;
    int truncate = 1;   /* false (gpt-oss): low and high unrounded */
    const struct lx_jv *tr = lx_json_member(rs, "truncate");
    if (scaling_original(doc, rs, c->max_pos, &orig, err) < 0
        || (tr && lx_json_type(tr) != LX_JSON_NULL && lx_json_bool(doc, tr, &truncate, err) < 0))
        return LX_EINVAL;
    double mscale = 0.1 * log(f) + 1, att = yarn_attention(doc, rs, f);
    put_rescaling(stack, doc, rs, "yarn", f, orig, (const char *[]){"beta_fast", "beta_slow"}, 32, 1);
    lx_buf_puts(stack, ",\"attn_factor\":");
    lx_buf_num(stack, att / mscale);
    lx_buf_puts(stack, truncate ? ",\"train\":true}}" : ",\"truncate\":false,\"train\":true}}");
    return LX_OK;
}

/* rope_theta and rope_scaling: the native stack's JSON into stack; dynamic NTK is an
** evaluation-time method, so it goes to e (the evaluation stack's methods) instead. */
static int hf_rope(const struct lx_json *doc, const struct hf_rope_facts *c, struct lx_buf *stack, struct lx_buf *e,
                   char **raw, struct lx_error *err)
{
    const struct lx_jv *root = c->root ? c->root : lx_json_root(doc), *rs = lx_json_member(root, "rope_scaling"), *t;
    const char *type;
    if (!rs || lx_json_type(rs) == LX_JSON_NULL) {  /* transformers 5: the rescaling's members in rope_parameters */
        rs = lx_hf_rope_params(root, "full_attention");
        rs = lx_json_member(rs, "rope_type") || lx_json_member(rs, "type") ? rs : NULL;   /* default: none */
    }
    lx_buf_puts(stack, "[{\"rope\":{\"base\":");
    lx_buf_num(stack, c->theta);
    lx_buf_puts(stack, c->interleaved ? ",\"layout\":\"interleaved\"" : ",\"layout\":\"half\"");
    if (c->rot_dims < c->head_dim)      /* a partial rotary */
        lx_buf_printf(stack, ",\"dims\":%ld", c->rot_dims);
    lx_buf_puts(stack, "}}");
    if (!rs || lx_json_type(rs) == LX_JSON_NULL) {
        lx_buf_puts(stack, "]");
        return LX_OK;
    }
    if (lx_json_type(rs) != LX_JSON_OBJECT)
        return lx_json_err(err, doc, rs, "rope_scaling must be an object or null");
    if (!(t = lx_json_member(rs, "rope_type")) && !(t = lx_json_member(rs, "type")))
        return lx_json_err(err, doc, rs, "rope_scaling has no rope_type (or type)");
    if (lx_json_str(doc, t, &type, NULL, err) < 0)
        return LX_EINVAL;
    if (strings_refused(doc, rs, err) < 0)
        return LX_EINVAL;
    double f = scaling_num(doc, rs, "factor", 1);
    if (!(f >= 1) && strcmp(type, "default") != 0)
        return lx_json_err(err, doc, rs, "rope_scaling factor %g: lenx needs a number >= 1", f);
    if (strcmp(type, "linear") == 0) {
        lx_buf_puts(stack, ",{\"pi\":{\"scale\":");
        lx_buf_num(stack, f);
        lx_buf_puts(stack, ",\"train\":true}}");
    } else if (strcmp(type, "yarn") == 0) {
        if (yarn_stack(doc, c, rs, f, stack, err) < 0)
            return LX_EINVAL;
    } else if (strcmp(type, "llama3") == 0) {
        long orig;
        if (scaling_original(doc, rs, c->max_pos, &orig, err) < 0)
            return LX_EINVAL;
        put_rescaling(stack, doc, rs, "llama3", f, orig, (const char *[]){"low_freq_factor", "high_freq_factor"}, 1, 4);
        lx_buf_puts(stack, ",\"train\":true}}");
    } else if (strcmp(type, "longrope") == 0 || strcmp(type, "su") == 0) {    /* su: the early Phi-3 configs' name */
        int rc = longrope_stack(doc, c, rs, stack, &f, err);     /* f: the extension factor, as HF derives it */
        if (rc < 0)
            return rc;
    } else if (strcmp(type, "dynamic") == 0) {
        lx_buf_puts(e, "{\"ntk\":{\"mode\":\"dynamic\",\"factor\":");
        lx_buf_num(e, f);
        lx_buf_puts(e, "}}");
    } else if (strcmp(type, "default") != 0) {
        return lx_json_err(err, doc, t, "rope_scaling type '%s' has no lenx method\n  hint: lenx maps linear (pi), "
                           "dynamic (ntk mode dynamic), yarn (yarn), llama3 (llama3) and longrope (longrope)", type);
    }
    lx_buf_puts(stack, "]");
    struct lx_buf r = {0};
    lx_buf_printf(&r, "{\"type\":\"%s\",\"factor\":", type);
    lx_buf_num(&r, f);
    lx_buf_puts(&r, "}");
    *raw = lx_xstrdup(lx_buf_str(&r));
    lx_buf_free(&r);
    return LX_OK;
}

/* dual_chunk_attention_config (Qwen2.5-1M; vLLM runs it with DualChunkRotaryEmbedding, whose
** tables are ChunkLlama's without the mscale) as the evaluation stack's dca. */
static int hf_dca(const struct lx_json *doc, struct lx_buf *e, struct lx_error *err)
{
    const struct lx_jv *d = lx_json_member(lx_json_root(doc), "dual_chunk_attention_config");
    if (!d || lx_json_type(d) == LX_JSON_NULL)
        return LX_OK;
    if (lx_json_type(d) != LX_JSON_OBJECT)
        return lx_json_err(err, doc, d, "dual_chunk_attention_config must be an object or null");
    double s = scaling_num(doc, d, "chunk_size", 0), w = scaling_num(doc, d, "local_size", 0);
    if (!(s >= 2 && s <= 1e12 && s == floor(s) && w >= 1 && w < s && w == floor(w)))
        return lx_json_err(err, doc, d, "dual_chunk_attention_config needs whole numbers 1 <= local_size < chunk_size, "
                           "got chunk_size %g, local_size %g\n  hint: Qwen2.5-1M's are 262144 and 8192 "
                           "(docs/methods.md#dca)", s, w);
    lx_buf_printf(e, "%s{\"dca\":{\"chunk\":%ld,\"local\":%ld,\"mscale\":false}}", e->len ? "," : "", (long)s, (long)w);
    return LX_OK;
}

/* The native stack (stack) and the evaluation stack (*eval, NULL when empty: dynamic NTK, Dual Chunk
** Attention, then the sliding window) of the config. */
int lx_hf_stacks(const struct lx_json *doc, const struct hf_rope_facts *c, struct lx_buf *stack, char **eval,
                      char **raw, struct lx_error *err)
{
    struct lx_buf e = {0};
    int rc = hf_rope(doc, c, stack, &e, raw, err);
    if (rc == LX_OK)
        rc = hf_dca(doc, &e, err);
    if (rc == LX_OK && c->window)
        lx_buf_printf(&e, "%s{\"window\":{\"size\":%ld}}", e.len ? "," : "", c->window);
    if (rc == LX_OK && e.len) {
        struct lx_buf all = {0};
        lx_buf_printf(&all, "[%s]", lx_buf_str(&e));
        *eval = lx_xstrdup(lx_buf_str(&all));
        lx_buf_free(&all);
    }
    lx_buf_free(&e);
    return rc;
}

/* ---- export ------------------------------------------------------------------- */

/* rope_scaling as lx_hf_stacks reads it back: null, linear (pi), yarn or llama3, with the stack's numbers. */
void lx_hf_export_scaling(struct lx_buf *b, const struct lx_stack_rope *r, int pairs)
{
    if (!r->scaling[0]) {
        lx_buf_puts(b, "null");
        return;
    }
    lx_buf_printf(b, "{\"rope_type\": \"%s\", \"factor\": ", r->scaling);
    lx_buf_num(b, r->factor);
    if (strcmp(r->scaling, "linear") != 0)
        lx_buf_printf(b, ", \"original_max_position_embeddings\": %ld", r->original);
    if (strcmp(r->scaling, "yarn") == 0) {
        lx_buf_puts(b, ", \"beta_fast\": ");
        lx_buf_num(b, r->beta_fast);
        lx_buf_puts(b, ", \"beta_slow\": ");
        lx_buf_num(b, r->beta_slow);
        lx_buf_puts(b, ", \"attention_factor\": ");   /* HF's is the whole mscale: lenx's attn_factor times 0.1 ln s + 1 */
        lx_buf_num(b, r->attn_factor * (0.1 * log(r->factor) + 1));
    } else if (strcmp(r->scaling, "llama3") == 0) {
        lx_buf_puts(b, ", \"low_freq_factor\": ");
        lx_buf_num(b, r->low);
        lx_buf_puts(b, ", \"high_freq_factor\": ");
        lx_buf_num(b, r->high);
    } else if (strcmp(r->scaling, "longrope") == 0) {  /* the attention factor as used: whatever s the reader derives */
        const struct lx_floats *l[2] = {&r->lng, &r->shrt};
        for (int k = 0; k < 2; k++) {
            lx_buf_printf(b, ", \"%s\": [", k ? "short_factor" : "long_factor");
            for (int i = 0; i < pairs; i++) {
                lx_buf_puts(b, i ? ", " : "");
                lx_buf_num(b, l[k]->n ? l[k]->v[i] : 1);
            }
            lx_buf_puts(b, "]");
        }
        lx_buf_puts(b, ", \"attention_factor\": ");
        lx_buf_num(b, r->attention);
    }
    lx_buf_puts(b, "}");
}
