/*
** harness/engine/formats/hf_config.h - a Hugging Face directory's config.json as the loader
** (hf_model.c) reads it: every family's fields resolved with transformers' defaults into one
** struct, and the architecture it makes. Internal to the formats room.
*/
#ifndef LX_HF_CONFIG_H
#define LX_HF_CONFIG_H

#include "harness/core/json.h"
#include "harness/engine/formats/hf_falcon.h"
#include "harness/engine/model/arch.h"

/* What config.json says, resolved with transformers' defaults. */
struct hf_config {
    char type[16];          /* model_type: llama, mistral, qwen2, qwen3, phi3, gemma or gemma3_text */
    int bias;               /* q/k/v projection biases (qwen2) */
    int qk_norm;            /* per-head q/k RMSNorm (qwen3) */
    int fused;              /* q|k|v in one qkv_proj, gate|up in one gate_up_proj (phi3) */
    long window;            /* sliding_window in use (mistral, phi3): W keys a query sees; 0 = none */
    long hidden, inter, layers, heads, kv_heads, head_dim, vocab, max_pos;
    long rot_dims;          /* channels of a head rope turns: head_dim x partial_rotary_factor (phi3) */
    double eps, theta;      /* rms_norm_eps, rope_theta */
    int tied;               /* tie_word_embeddings */
    int gemma;              /* 1 gemma, 3 gemma3_text: norms x (1 + w), embeddings x sqrt(hidden), GeGLU */
    int mm;                 /* a gemma3 directory: the multimodal model, whose text model lenx reads */
    long qk_dim;            /* query_pre_attn_scalar when it is not head_dim (gemma3), else 0 */
    long local_every, local_window;     /* gemma3: sliding_window_pattern (or layer_types), sliding_window */
    double local_base;      /* gemma3: rope_local_base_freq; gemma2: rope_theta */
    double attn_cap, logit_cap;     /* gemma2: attn_ and final_logit_softcapping (0: none) */
    const struct lx_jv *root;   /* the text model's fields: the document, or a gemma3 directory's text_config */
    char prefix[32];        /* where the text model's tensors are: "model." or a gemma3 directory's */
    int mpt;                /* model_type mpt (hf_mpt.c): LayerNorms, exact GELU, ALiBi */
    int neox;               /* model_type gpt_neox (hf_neox.c): LayerNorms and biases, the parallel residual */
    int parallel, mlp;      /* gpt_neox: use_parallel_residual; LX_MLP_GELU_ERF or LX_MLP_GELU */
    int bloom;              /* model_type bloom (hf_bloom.c): gpt_neox's parts, ALiBi, the embedding LayerNorm */
    const char *bprefix;    /* bloom: where its tensors are, "transformer." or "" (bloom_prefix) */
    double alibi_max;       /* the ALiBi of mpt (attn_config.alibi_bias_max), bloom and Falcon-RW (8); 0: none */
    double alibi_scale;     /* Falcon-RW: 1/sqrt(head_dim), its slopes' factor (alibi's scale); 0: none */
    int falcon;             /* model_type falcon (hf_falcon.c): LayerNorms, the parallel block, grouped q|k|v */
    struct lx_hf_falcon fal;    /* falcon: its config */
    int phi;                /* model_type phi (hf_phi.c): the parallel block under one LayerNorm, every bias */
    int gptj;               /* model_type gptj (hf_gptj.c): phi's block with the MLP's biases only, rope interleaved */
};

/* config.json (doc) into c: model_type and every field the family reads, refused naming the field
** where lenx does not run what it says. */
int lx_hf_config_read(const struct lx_json *doc, struct hf_config *c, struct lx_error *err);
/* The architecture c makes (finished: lx_params_finish). */
void lx_hf_config_arch(const struct hf_config *c, struct lx_arch *a);

#endif
