/*
** harness/engine/formats/hf_model.c - Hugging Face model directories loaded into the one
** struct lx_model, and lenx models written as one (docs/checkpoints.md#hugging-face-directories).
**
** A directory holds config.json (transformers' LlamaConfig / Qwen2Config /
** Qwen3Config / MistralConfig / Phi3Config fields) and the weights in model.safetensors or in shards
** named by model.safetensors.index.json ({"weight_map": {tensor: file}}).
** Tensors are F32, F16 or BF16, used in place: the matrices are multiplied
** from the read-only mappings of the shards in their own type (no fp32 copy,
** kernels/wprod.h), the vectors copied as fp32 (lx_model_hold). HF names map
** onto lenx's tensors:
**
**   model.embed_tokens.weight                      tok_emb.weight
**   model.layers.N.input_layernorm.weight          layers.N.attn_norm.weight
**   model.layers.N.self_attn.{q,k,v,o}_proj.weight layers.N.attn.w{q,k,v,o}.weight
**   model.layers.N.self_attn.{q,k,v}_proj.bias     layers.N.attn.w{q,k,v}.bias (Qwen2)
**   model.layers.N.self_attn.{q,k}_norm.weight     layers.N.attn.{q,k}_norm.weight (Qwen3)
**   model.layers.N.self_attn.qkv_proj.weight       layers.N.attn.w{q,k,v}.weight by rows (Phi-3)
**   model.layers.N.mlp.gate_up_proj.weight         layers.N.mlp.w{1,3}.weight by rows (Phi-3)
**   model.layers.N.post_attention_layernorm.weight layers.N.mlp_norm.weight
**   model.layers.N.mlp.{gate,up,down}_proj.weight  layers.N.mlp.w{1,3,2}.weight
**   model.norm.weight                              norm.weight
**   lm_head.weight (absent when tied)              lm_head.weight (absent: tie_head)
**
** HF's rotary embedding pairs (x[k], x[k + D/2]) (rotate_half): lenx's `half`
** layout, so q and k rows are used as they are. Grouped-query attention
** (num_key_value_heads), tied embeddings, Qwen2's q/k/v biases and Qwen3's
** per-head q/k RMSNorm are the engine's own: kv_heads, tie_head, qkv_bias, qk_norm. The native
** position stack is rope(base = rope_theta, layout half) followed by rope_scaling's method
** (hf_rope.c). config.json is read by hf_config.c: MPT (model_type mpt) has its own config fields and
** names, read by hf_mpt.c, and ALiBi as its native stack; GPT-NeoX (gpt_neox) likewise, hf_neox.c, its
** q, k and v gathered out of query_key_value; BLOOM (bloom), hf_bloom.c; Falcon (falcon), hf_falcon.c;
** Phi (phi), hf_phi.c; GPT-J (gptj), hf_gptj.c.
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/formats/hf_model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>

#include "harness/core/config.h"
#include "harness/core/hash.h"
#include "harness/core/json.h"
#include "harness/core/mapguard.h"
#include "harness/engine/formats/hf_bloom.h"
#include "harness/engine/formats/hf_cfg.h"
#include "harness/engine/formats/hf_config.h"
#include "harness/engine/formats/hf_falcon.h"
#include "harness/engine/formats/hf_gptj.h"
#include "harness/engine/formats/hf_mpt.h"
#include "harness/engine/formats/hf_neox.h"
#include "harness/engine/formats/hf_phi.h"
#include "harness/engine/formats/hf_rope.h"
#include "harness/engine/formats/safetensors.h"
#include "harness/engine/tokenizers/tokenizer.h"

#define HF_MAX_SHARDS 64

/* The open weight files and where each tensor lives. */
struct hf_weights {
    struct lx_st_file shard[HF_MAX_SHARDS];
    int n_shard;
    char dtype[16];         /* "F32", ... or "mixed" */
};

/* ---- weights ---------------------------------------------------------------- */

static int open_shard(struct hf_weights *w, const char *dir, const char *file, struct lx_error *err)
{
    struct lx_buf p = {0};
    lx_buf_printf(&p, "%s/%s", dir, file);
    for (int k = 0; k < w->n_shard; k++)
        if (strcmp(w->shard[k].path, lx_buf_str(&p)) == 0) {
            lx_buf_free(&p);
            return LX_OK;
        }
    int rc = w->n_shard < HF_MAX_SHARDS ? lx_st_open(&w->shard[w->n_shard], lx_buf_str(&p), err)
                                        : lx_err(err, LX_EINVAL, "%s: more than %d shards", dir, HF_MAX_SHARDS);
    if (rc == LX_OK)
        w->n_shard++;
    lx_buf_free(&p);
    return rc;
}

/* model.safetensors, or every file model.safetensors.index.json's weight_map names. */
static int open_weights(struct hf_weights *w, const char *dir, struct lx_error *err)
{
    struct lx_buf p = {0};
    struct stat sb;
    lx_buf_printf(&p, "%s/model.safetensors.index.json", dir);
    if (stat(lx_buf_str(&p), &sb) != 0) {
        lx_buf_free(&p);
        return open_shard(w, dir, "model.safetensors", err);
    }
    struct lx_json *doc;
    const struct lx_jv *map;
    int rc = lx_json_load(&doc, lx_buf_str(&p), 1L << 26, err);
    lx_buf_free(&p);
    if (rc == LX_OK)
        rc = lx_json_need(doc, lx_json_root(doc), "weight_map", LX_JSON_OBJECT, &map, err);
    for (void *it = rc == LX_OK ? lx_json_iter(map) : NULL; it && rc == LX_OK; it = lx_json_iter_next(map, it)) {
        const char *file;
        const struct lx_jv *v = lx_json_iter_value(it);
        rc = lx_json_str(doc, v, &file, NULL, err);
        if (rc == LX_OK && (strchr(file, '/') || !file[0]))
            rc = lx_json_err(err, doc, v, "a shard must be a file name in the directory, not '%s'", file);
        if (rc == LX_OK && (rc = open_shard(w, dir, file, err)) < 0) {
            struct lx_error sub = *err;
            rc = lx_json_err(err, doc, v, "%s", sub.msg);
        }
    }
    if (rc == LX_OK && w->n_shard == 0)
        rc = lx_json_err(err, doc, map, "weight_map names no shard (it is empty)\n  hint: it maps each tensor name "
                         "to the .safetensors file holding it; without an index, lenx reads model.safetensors");
    lx_json_free(doc);
    return rc;
}

/* The shard that holds name, or NULL. */
static const struct lx_st_file *find_tensor(const struct hf_weights *w, const char *name)
{
    for (int k = 0; k < w->n_shard; k++)
        for (int i = 0; i < w->shard[k].n_entries; i++)
            if (strcmp(w->shard[k].entries[i].name, name) == 0)
                return &w->shard[k];
    return NULL;
}

static void note_dtype(struct hf_weights *w, const struct lx_st_file *f, const char *name)
{
    for (int i = 0; i < f->n_entries; i++)
        if (strcmp(f->entries[i].name, name) == 0) {
            const char *d = lx_st_dtype_name(f->entries[i].dtype);
            if (!w->dtype[0])
                snprintf(w->dtype, sizeof w->dtype, "%s", d);
            else if (strcmp(w->dtype, d) != 0)
                snprintf(w->dtype, sizeof w->dtype, "mixed");
        }
}

int lx_hf_tensor_name(const char *name, char *out, size_t n, int gemma)
{
    static const char *const gemma_map[][2] = {
        {"mlp_norm.weight", "pre_feedforward_layernorm.weight"},
        {"attn.post_norm.weight", "post_attention_layernorm.weight"},
        {"mlp.post_norm.weight", "post_feedforward_layernorm.weight"},
    };
    static const char *const map[][2] = {
        {"attn_norm.weight", "input_layernorm.weight"}, {"attn.wq.weight", "self_attn.q_proj.weight"},
        {"attn.wk.weight", "self_attn.k_proj.weight"}, {"attn.wv.weight", "self_attn.v_proj.weight"},
        {"attn.wq.bias", "self_attn.q_proj.bias"}, {"attn.wk.bias", "self_attn.k_proj.bias"},
        {"attn.wv.bias", "self_attn.v_proj.bias"}, {"attn.wo.weight", "self_attn.o_proj.weight"},
        {"attn.q_norm.weight", "self_attn.q_norm.weight"}, {"attn.k_norm.weight", "self_attn.k_norm.weight"},
        {"mlp_norm.weight", "post_attention_layernorm.weight"}, {"mlp.w1.weight", "mlp.gate_proj.weight"},
        {"mlp.w3.weight", "mlp.up_proj.weight"}, {"mlp.w2.weight", "mlp.down_proj.weight"},
    };
    long l;
    int at = 0;
    if (strcmp(name, "tok_emb.weight") == 0)
        return snprintf(out, n, "model.embed_tokens.weight"), 1;
    if (strcmp(name, "norm.weight") == 0)
        return snprintf(out, n, "model.norm.weight"), 1;
    if (strcmp(name, "lm_head.weight") == 0)
        return snprintf(out, n, "lm_head.weight"), 1;
    if (sscanf(name, "layers.%ld.%n", &l, &at) == 1 && at > 0 && gemma)
        for (size_t k = 0; k < sizeof gemma_map / sizeof *gemma_map; k++)
            if (strcmp(name + at, gemma_map[k][0]) == 0)
                return snprintf(out, n, "model.layers.%ld.%s", l, gemma_map[k][1]), 1;
    if (sscanf(name, "layers.%ld.%n", &l, &at) == 1 && at > 0)
        for (size_t k = 0; k < sizeof map / sizeof *map; k++)
            if (strcmp(name + at, map[k][0]) == 0)
                return snprintf(out, n, "model.layers.%ld.%s", l, map[k][1]), 1;
    return 0;
}

/* Where a gemma3 directory's text model is: language_model.model. (the checkpoints as published),
** else model.language_model. (transformers from 4.52 on). */
static int text_prefix(struct hf_config *c, const struct hf_weights *w, const char *dir, struct lx_error *err)
{
    static const char *const at[] = {"language_model.model.", "model.language_model."};
    char name[96];
    for (int k = 0; k < 2; k++) {
        snprintf(name, sizeof name, "%sembed_tokens.weight", at[k]);
        if (find_tensor(w, name))
            return snprintf(c->prefix, sizeof c->prefix, "%s", at[k]), LX_OK;
    }
    return lx_err(err, LX_EINVAL, "%s: a gemma3 directory with no language_model.model.embed_tokens.weight or "
                  "model.language_model.embed_tokens.weight in its weights\n  hint: the directory is incomplete, or "
                  "config.json describes another model", dir);
}

/* name (hf_name's) where a gemma3 directory's text model has it: model.X under the prefix, lm_head
** beside its model. */
static void put_prefix(const struct hf_config *c, char *name, size_t n)
{
    struct lx_buf t = {0};
    if (!c->prefix[0])
        return;
    if (strncmp(name, "model.", 6) == 0)
        lx_buf_printf(&t, "%s%s", c->prefix, name + 6);
    else
        lx_buf_printf(&t, "%s%s", strcmp(c->prefix, "model.language_model.") ? "language_model." : "", name);
    snprintf(name, n, "%s", lx_buf_str(&t));
    lx_buf_free(&t);
}

/* A tensor whose data is not aligned to its type (safetensors does not
** promise it) is copied into a buffer of its own, counted with the maps. */
static const void *aligned(struct lx_held *h, const unsigned char *p, size_t n, int type)
{
    if ((uintptr_t)p % lx_dtype_size(type) == 0)
        return p;
    void *c = lx_big_calloc(n);
    LX_ASSERT(c);
    memcpy(c, p, n);
    h->maps[h->n_maps] = c, h->map_len[h->n_maps] = n, h->owned[h->n_maps++] = 1;
    return c;
}

/* Phi-3's fused tensors' HF names (lx_fused_part): 1 with the name, the part's first row and the
** fused tensor's rows; 0 for any other tensor. */
static int fused_part(const struct lx_arch *a, const char *name, char *out, size_t n, long *row0, long *rows)
{
    long l;
    int which;
    if (!lx_fused_part(a, name, &l, &which, row0, rows))
        return 0;
    snprintf(out, n, "model.layers.%ld.%s", l, which ? "mlp.gate_up_proj.weight" : "self_attn.qkv_proj.weight");
    return 1;
}

/* The HF name of lenx tensor i (ti) into name, with the rows it is of the file's tensor: *rows (the
** file tensor's, else unchanged) from *row0, or GPT-NeoX's part *gather (0 q, 1 k, 2 v; −1 none) of its
** query_key_value. 0 when the family has no such tensor. */
static int hf_name(const struct lx_arch *a, const struct hf_config *c, const struct lx_tensor_info *ti, char *name,
                   size_t n, long *row0, long *rows, int *gather)
{
    long r = 0;
    int named;
    *gather = -1;
    if (c->fused && fused_part(a, ti->name, name, n, row0, rows))
        named = 1;
    else if (c->mpt)
        named = lx_hf_mpt_tensor_name(a, ti->name, name, n, row0, &r);
    else if (c->phi || c->gptj)
        named = c->phi ? lx_hf_phi_tensor_name(ti->name, name, n) : lx_hf_gptj_tensor_name(ti->name, name, n);
    else if (c->neox || c->bloom || c->falcon) {
        named = c->neox    ? lx_hf_neox_tensor_name(ti->name, name, n, gather)
                : c->bloom ? lx_hf_bloom_tensor_name(c->bprefix, ti->name, name, n, gather)
                           : lx_hf_falcon_tensor_name(&c->fal, ti->name, name, n, gather);
        r = named && *gather >= 0 ? lx_arch_qkv(a) : 0;
        if (r && lx_arch_kv(a) == 1)    /* one key/value group: q|k|v are row blocks, used in place */
            *row0 = *gather ? (a->heads + *gather - 1) * a->d_head : 0, *gather = -1;
    } else
        named = lx_hf_tensor_name(ti->name, name, n, c->gemma >= 2);
    *rows = r ? r : *rows;
    if (named)
        put_prefix(c, name, n);
    return named;
}

/* A tensor of its own holding part `part` of GPT-NeoX's query_key_value at p (rows (heads, 3, d_head)),
** counted with the maps as `aligned` counts its copies. */
static const void *gathered(struct lx_held *h, const unsigned char *p, const struct lx_arch *a, int part,
                            size_t row_bytes)
{
    long kv = lx_arch_kv(a);
    size_t n = (size_t)((part ? kv : a->heads) * a->d_head) * row_bytes;
    void *c = lx_big_calloc(n);
    LX_ASSERT(c);
    lx_hf_gather_heads(c, p, part, kv, a->heads / kv, a->d_head, row_bytes);
    h->maps[h->n_maps] = c, h->map_len[h->n_maps] = n, h->owned[h->n_maps++] = 1;
    return c;
}

/* Every lenx tensor from its HF name (see the top comment), used in place:
** m holds the shards' mappings, each tensor where its shard has it (a fused
** tensor's parts where their rows are). */
static int hold_all(struct lx_model *m, const struct lx_arch *a, const struct hf_config *c, struct hf_weights *w,
                    const char *dir, struct lx_error *err)
{
    int n = lx_arch_tensors(a, NULL), rc = LX_OK;
    struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
    struct lx_held *h = lx_xcalloc(1, sizeof *h);
    lx_arch_tensors(a, ti);
    h->t = lx_xcalloc((size_t)n, sizeof *h->t);
    h->maps = lx_xcalloc((size_t)(n + w->n_shard), sizeof *h->maps);
    h->map_len = lx_xcalloc((size_t)(n + w->n_shard), sizeof *h->map_len);
    h->owned = lx_xcalloc((size_t)(n + w->n_shard), sizeof *h->owned);
    char name[128];
    for (int i = 0; i < n && rc == LX_OK; i++) {
        long shape[2] = {ti[i].shape[0], ti[i].ndim > 1 ? ti[i].shape[1] : 0}, row0 = 0;
        int gather, named = hf_name(a, c, &ti[i], name, sizeof name, &row0, &shape[0], &gather);
        const struct lx_st_file *f = named ? find_tensor(w, name) : NULL;
        const struct lx_st_entry *e;
        if (!f) {
            rc = lx_err(err, LX_EINVAL, "%s: no tensor '%s' in its weights (%s%s)\n  hint: the directory is "
                        "incomplete, or config.json describes another model", dir, name, w->shard[0].path,
                        w->n_shard > 1 ? " and the other shards" : "");
        } else if ((e = lx_st_entry_of(f, name, ti[i].ndim, shape, err)) == NULL) {
            rc = LX_EINVAL;
        } else {
            int dt = lx_st_dt(e->dtype);
            size_t cols = (size_t)(ti[i].ndim > 1 ? ti[i].shape[1] : 1), bytes = (size_t)ti[i].shape[0] * cols *
                                                                                    lx_dtype_size(dt);
            const unsigned char *p = f->data + e->begin + (size_t)row0 * cols * lx_dtype_size(dt);
            note_dtype(w, f, name);
            if (gather <= 0)    /* a query_key_value gathered from: once, for its three parts */
                lx_mapguard_add(p, gather == 0 ? (size_t)lx_arch_qkv(a) * cols * lx_dtype_size(dt) : bytes, f->path,
                                name);
            h->t[i] = (struct lx_wmat){gather >= 0 ? gathered(h, p, a, gather, cols * lx_dtype_size(dt))
                                                   : aligned(h, p, bytes, dt), dt, 0, NULL, 0};
        }
    }
    if (rc == LX_OK) {
        for (int k = 0; k < w->n_shard; k++) {
            h->maps[h->n_maps] = lx_st_take_map(&w->shard[k], &h->map_len[h->n_maps]);
            h->owned[h->n_maps++] = 0;
        }
        lx_model_hold(m, a, h);
    } else {
        for (int k = 0; k < h->n_maps; k++)
            lx_big_free(h->maps[k], h->map_len[k]);
        for (int k = 0; k < w->n_shard; k++)
            lx_mapguard_remove(w->shard[k].bytes, w->shard[k].n_bytes);
        free(h->maps), free(h->map_len), free(h->owned), free(h->t), free(h);
    }
    free(ti);
    return rc;
}

/* A tensor of layer a->layers (one past config.json's count) in the weights: the
** directory holds more layers than config.json says, and scoring without them
** would score another model. Named as the family names it (hf_name). */
static int check_extra_layer(const struct lx_arch *a, const struct hf_config *c, const struct hf_weights *w,
                             const char *dir, struct lx_error *err)
{
    struct lx_arch b = *a;
    b.layers++;
    int n = lx_arch_tensors(&b, NULL), rc = LX_OK;
    struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
    lx_arch_tensors(&b, ti);
    char past[32], name[128];
    snprintf(past, sizeof past, "layers.%ld.", a->layers);
    for (int i = 0; i < n && rc == LX_OK; i++) {
        long row0 = 0, rows = ti[i].shape[0];
        int gather;
        if (strncmp(ti[i].name, past, strlen(past)) == 0 &&
            hf_name(&b, c, &ti[i], name, sizeof name, &row0, &rows, &gather) && find_tensor(w, name))
            rc = lx_err(err, LX_EINVAL, "%s: its weights hold '%s', of layer %ld, but config.json gives the model %ld "
                        "layers\n  hint: config.json's layer count is wrong, or the weights are another model's", dir,
                        name, a->layers, a->layers);
    }
    free(ti);
    return rc;
}

/* ---- loading ----------------------------------------------------------------- */

/* The identity of the directory: SHA-256 over config.json's and each shard's hashes. */
static void dir_hash(const struct lx_json *doc, const char *cfg_sha, const struct hf_weights *w, char out[65])
{
    struct lx_buf b = {0};
    (void)doc;
    lx_buf_puts(&b, cfg_sha);
    for (int k = 0; k < w->n_shard; k++)
        lx_buf_printf(&b, " %s", w->shard[k].sha256);
    lx_sha256_hex_bytes(lx_buf_str(&b), b.len, out);
    lx_buf_free(&b);
}

/* Gemma's RMSNorms scale by 1 + w (transformers' Gemma3RMSNorm, in fp32):
** every gain becomes 1 + w once at load, so the engine's RMSNorm runs them. */
static void gemma_gains(struct lx_model *m)
{
    const struct lx_arch *a = &m->arch;
    for (long l = 0; l <= a->layers; l++) {
        const struct lx_layer_w *W = l < a->layers ? &m->v.layer[l] : NULL;
        float *g[6] = {W ? W->attn_norm : m->v.norm, W ? W->mlp_norm : NULL, W ? W->attn_post : NULL,
                       W ? W->mlp_post : NULL, W ? W->q_norm : NULL, W ? W->k_norm : NULL};
        for (int k = 0; k < 6; k++)
            for (long i = 0; g[k] && i < (k < 4 ? a->d_model : a->d_head); i++)
                g[k][i] += 1.0f;
    }
}

static void fill_info(struct lx_ckpt_info *info, const char *dir, const struct hf_config *c, const char *dtype)
{
    lx_ckpt_info_native(info, "hf", dtype);
    info->train_len = c->max_pos;
    info->kv_heads = c->kv_heads;
    info->tied = c->tied;
    info->tokenizer = lx_tokenizer_in_dir(dir);     /* tokenizer.json, else tokenizer.bin */
}

int lx_hf_load(struct lx_model *m, const char *dir, struct lx_ckpt_info *info, struct lx_error *err)
{
    struct lx_json *doc = NULL;
    struct hf_weights *w = lx_xcalloc(1, sizeof *w);
    struct hf_config c = {0};
    struct lx_buf path = {0}, stack = {0};
    struct lx_arch a;
    char *eval = NULL, *raw = NULL, cfg_sha[65] = "";
    memset(m, 0, sizeof *m);
    lx_buf_printf(&path, "%s/config.json", dir);
    int rc = lx_json_load(&doc, lx_buf_str(&path), 1L << 22, err);
    if (rc == LX_OK) {
        unsigned char *bytes;
        long n;
        if (lx_read_file(lx_buf_str(&path), &bytes, &n, 1L << 22, err) == LX_OK) {
            lx_sha256_hex_bytes(bytes, (size_t)n, cfg_sha);
            free(bytes);
        }
        rc = lx_hf_config_read(doc, &c, err);
    }
    if (rc == LX_OK && c.alibi_max > 0) {   /* mpt, bloom, Falcon-RW (its slopes over sqrt(head_dim)) */
        lx_buf_printf(&stack, "[{\"alibi\":{\"max_bias\":%.17g", c.alibi_max);
        if (c.alibi_scale)
            lx_buf_printf(&stack, ",\"scale\":%.17g", c.alibi_scale);
        lx_buf_puts(&stack, "}}]");
    } else if (rc == LX_OK)
        rc = lx_hf_stacks(doc, &(struct hf_rope_facts){c.theta, c.max_pos, c.head_dim, c.rot_dims, c.window, c.root,
                                                       c.gptj}, &stack, &eval, &raw, err);
    if (rc == LX_OK)
        rc = open_weights(w, dir, err);
    if (rc == LX_OK && c.mm)
        rc = text_prefix(&c, w, dir, err);
    if (rc == LX_OK && c.bloom)     /* BloomForCausalLM's names, or BloomModel's (bloom-560m's) */
        c.bprefix = find_tensor(w, "transformer.word_embeddings.weight") ? "transformer." : "";
    if (rc == LX_OK) {
        lx_hf_config_arch(&c, &a);
        rc = check_extra_layer(&a, &c, w, dir, err);
    }
    if (rc == LX_OK)
        rc = hold_all(m, &a, &c, w, dir, err);
    if (rc == LX_OK && c.gemma)
        gemma_gains(m);
    if (rc == LX_OK && info) {
        fill_info(info, dir, &c, w->dtype);
        info->stack = lx_xstrdup(lx_buf_str(&stack));
        info->eval_stack = eval, info->scaling = raw;
        eval = raw = NULL;
        dir_hash(doc, cfg_sha, w, info->sha256);
        lx_model_weights_hash_of(m, "hf", info->sha256, info->weights_sha256);
    }
    for (int k = 0; k < w->n_shard; k++)
        lx_st_close(&w->shard[k]);
    free(w);
    free(eval);
    free(raw);
    lx_buf_free(&path);
    lx_buf_free(&stack);
    lx_json_free(doc);
    if (rc < 0)
        lx_model_release(m);
    return rc;
}

/* A Hugging Face model is a directory (config.json and its shards). */
static int hf_sniff(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

const struct lx_model_format lx_model_format_hf = {
    .name = "hf",
    .summary = "a Hugging Face directory: config.json (llama, mistral, qwen2, qwen3, phi3, gemma, gemma2, gemma3_text, "
               "gemma3, mpt, gpt_neox, bloom, falcon, phi, gptj) and safetensors shards",
    .key = "hf",
    .dir = 1,
    .sniff = hf_sniff,
    .load = lx_hf_load,
};
