/*
** harness/engine/formats/hf_cfg.h - config.json's members as the Hugging Face loaders
** (hf_model.c, hf_mpt.c) read them: with transformers' default when absent or null, the error
** naming the member.
*/
#ifndef LX_HF_CFG_H
#define LX_HF_CFG_H

#include <stddef.h>

#include "harness/core/json.h"

/* The shape every family's config.json gives, read by the family's reader (hf_mpt.c ... hf_falcon.c)
** with its own defaults and names, and copied into the loader's config in one place (hf_config.c). */
struct lx_hf_shape {
    long layers, d_model, heads, d_mlp, vocab;
    long kv_heads;          /* key/value heads; 0: one per query head */
    long max_pos;           /* the positions it was trained on (max_position_embeddings, max_seq_len, seq_length) */
    long rot_dims;          /* channels of a head rope turns; 0: the whole head (or no rope) */
    double eps, theta;      /* the norms' epsilon; rope's base (0: no rope) */
    int tied;               /* the output head is the embedding */
    int mlp;                /* the MLP's activation, an LX_MLP_* (0: the family's own) */
};

/* An integer member (def < 0: required) within [lo, hi]. */
int lx_hf_cfg_int(const struct lx_json *doc, const struct lx_jv *root, const char *key, long def, long lo, long hi,
                  long *out, struct lx_error *err);
/* A positive finite number (def when absent or null). */
int lx_hf_cfg_num(const struct lx_json *doc, const struct lx_jv *root, const char *key, double def, double *out,
                  struct lx_error *err);

/* transformers 5 moved rope_theta, partial_rotary_factor and rope_scaling's members into one object,
** rope_parameters ({rope_type, rope_theta, factor, ...}), or for a model of several layer types one such
** object per type ({"full_attention": {...}, "sliding_attention": {...}}). The object of layer_type
** ("full_attention" also names the single object), NULL when the config has none. */
const struct lx_jv *lx_hf_rope_params(const struct lx_jv *root, const char *layer_type);
/* The RoPE member key (rope_theta, partial_rotary_factor) at the top level (transformers 4) or in
** rope_parameters (5); NULL when in neither. Both present and not equal: LX_EINVAL naming both, *v NULL. */
int lx_hf_rope_member(const struct lx_json *doc, const struct lx_jv *root, const char *key, const struct lx_jv **v,
                      struct lx_error *err);
/* lx_hf_cfg_num of a RoPE member, read where lx_hf_rope_member finds it. */
int lx_hf_cfg_rope(const struct lx_json *doc, const struct lx_jv *root, const char *key, double def, double *out,
                   struct lx_error *err);

/* The first of keys (n of them) present and not null in root, else keys[0]: a field transformers renamed
** (rotary_pct, partial_rotary_factor). */
const char *lx_hf_cfg_key(const struct lx_jv *root, const char *const *keys, int n);
/* An integer member under key or, when only that is present, its other name (a renamed field: Falcon's
** n_head, GPT-J's n_embd beside the generic names), as lx_hf_cfg_int. */
int lx_hf_cfg_int2(const struct lx_json *doc, const struct lx_jv *root, const char *key, const char *other, long def,
                   long lo, long hi, long *out, struct lx_error *err);
/* A boolean member that must be false when present (features lenx lacks): refused naming key, with hint. */
int lx_hf_cfg_refuse(const struct lx_json *doc, const struct lx_jv *root, const char *key, const char *hint,
                     struct lx_error *err);
/* A boolean member, def when absent or null. */
int lx_hf_cfg_bool(const struct lx_json *doc, const struct lx_jv *root, const char *key, int def, int *out,
                   struct lx_error *err);

/* The names of a family whose layers are GPT-NeoX's shape (GPT-NeoX, BLOOM): every name is
** prefix + its part but head's. */
struct lx_hf_names {
    const char *prefix;     /* "gpt_neox.", "transformer." or "" */
    const char *emb, *emb_norm, *norm, *head;   /* the embedding, its LayerNorm (or NULL), the final norm (its
                                                ** ".weight"/".bias" appended), the output head */
    const char *layers;     /* "layers." or "h.": + N. + the layer's parts */
    const char *attn;       /* the attention's module, before query_key_value and dense: "attention." */
};
/* f's name of lenx tensor `name` into out, 0 when it has none. *part is -1, or for q, k and v (weights and
** biases) 0, 1 or 2: rows of the fused query_key_value, head by head (lx_hf_gather_heads). */
int lx_hf_names_of(const struct lx_hf_names *f, const char *name, char *out, size_t n, int *part);

/* A family's name of lenx tensor `name` into out, 0 when it has none, for families whose names map one
** to one: tok_emb.weight is emb; norm.X is norm + X; lm_head.X keeps its name; layers.N.P... is layers +
** "N." + the family's part for P (map: n_map rows of {lenx part, family part}, e.g. {"attn.wq.",
** "self_attn.q_proj."}) + the rest. */
int lx_hf_names_table(const char *name, char *out, size_t n, const char *emb, const char *norm, const char *layers,
                      const char *const (*map)[2], size_t n_map);

/* The rows of part (0 q, 1 k, 2 v) out of a query_key_value whose rows are (groups, q + 2, d_head): each
** key/value group's q query heads, then its key and its value head (Falcon's; GPT-NeoX's and BLOOM's with
** groups = heads, q = 1): into dst, the part's heads in order, d_head rows of row_bytes each. */
void lx_hf_gather_heads(void *dst, const void *fused, int part, long groups, long q, long d_head, size_t row_bytes);

/* GELU's form from member `key` (hidden_act, activation): *mlp LX_MLP_GELU_ERF for gelu (also when absent
** or null), LX_MLP_GELU for transformers' tanh forms (gelu_new, gelu_pytorch_tanh, gelu_fast); any other
** refused naming it. */
int lx_hf_cfg_gelu(const struct lx_json *doc, const struct lx_jv *root, const char *key, int *mlp,
                   struct lx_error *err);

#endif
