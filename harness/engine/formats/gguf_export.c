/*
** harness/engine/formats/gguf_export.c - a lenx model written as a llama.cpp
** GGUF file (lenx export --gguf; docs/checkpoints.md#gguf): llama, qwen2,
** qwen3 or phi3, or Gemma's block as gemma, gemma2 or gemma3, the metadata as
** llama.cpp's loader reads it and the tensors read from the model a piece at
** a time. The reading half is gguf_model.c.
*/
#include "harness/engine/formats/gguf_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/gguf.h"
#include "harness/core/half.h"
#include "harness/engine/formats/gguf_impl.h"
#include "harness/engine/model/arch.h"
#include "harness/engine/tokenizers/tokenizer.h"

/* The family a lenx model is written as: gemma, gemma2 or gemma3 for Gemma's block (gemma: its
** lx_export_gemma_kind), phi3 for LongRoPE (llama.cpp runs it there only), else the one with its
** q/k/v biases and qk_norm (NULL: none has both). */
static const struct lx_gguf_family *family_of(const struct lx_arch *a, const struct lx_stack_rope *rope, int gemma)
{
    int longrope = strcmp(rope->scaling, "longrope") == 0;
    for (size_t k = 0; k < LX_GGUF_N_FAMILIES; k++) {
        const struct lx_gguf_family *f = &lx_gguf_families[k];
        if (gemma ? f->gemma == gemma : f->qkv_bias == a->qkv_bias && f->qk_norm == a->qk_norm &&
                                         f->fused == longrope && !f->gemma && !f->neox)
            return f;
    }
    return NULL;
}

/* What llama.cpp's gemma, gemma2 and gemma3 (src/models/gemma*.cpp) would run otherwise than lenx
** of a Gemma block, or LX_OK. They read no query_pre_attn_scalar: logits are over sqrt(head size),
** or sqrt(width / heads) at the 27B models' layer counts (gemma2's 46, gemma3's 62); gemma2 always
** applies its two soft-caps and turns its local layers with the global rescaling, gemma3 reads no
** soft-cap of the attention logits; their rope takes no per-pair factors (llama3, longrope). */
static int gemma_check(const struct lx_arch *a, const struct lx_stack_rope *rope, struct lx_error *err)
{
    int kind = lx_export_gemma_kind(a, rope, err);
    if (kind < 0)
        return kind;
    long big = kind == 3 ? 62 : kind == 2 ? 46 : -1, want = a->layers == big ? a->d_model / a->heads : a->d_head;
    int other = rope->scaling[0] && strcmp(rope->scaling, "linear") != 0;
    const char *why = (a->qk_dim ? a->qk_dim : a->d_head) != want ? "logits over sqrt(qk_dim) where llama.cpp divides "
                      "by sqrt(the head size) (or width / heads at the 27B models' layer count)"
                      : kind == 2 && !(a->attn_softcap != 0.0 && a->logit_softcap != 0.0) ? "gemma2 without both "
                      "soft-caps, which llama.cpp applies whatever the file says"
                      : kind == 2 && rope->scaling[0] ? "a rescaled rope, which llama.cpp's gemma2 applies to the "
                      "local layers too" : kind == 3 && a->attn_softcap != 0.0 ? "a soft-cap of the attention logits, "
                      "which llama.cpp's gemma3 does not read" : other ? "a rope rescaling other than linear (pi)" : NULL;
    if (!why)
        return LX_OK;
    return lx_err(err, LX_EINVAL, "the model's Gemma block has %s; llama.cpp's %s would run it otherwise\n  hint: "
                  "lenx export --hf writes it as transformers' Gemma", why, family_of(a, rope, kind)->name);
}

/* llama.cpp's general.file_type of a whole-model type (LLAMA_FTYPE_*). */
static uint32_t file_type(int dtype)
{
    return dtype == LX_DT_F32 ? 0 : dtype == LX_DT_F16 ? 1 : dtype == LX_DT_Q8_0 ? 7 : 32;
}

/* What lenx refuses to write: a model llama.cpp would run differently. */
static int export_check(const struct lx_model *m, const struct lx_ckpt_info *info, struct lx_stack_rope *rope,
                        struct lx_error *err)
{
    const struct lx_arch *a = &m->arch;
    int rc = lx_export_arch_check(a, "llama.cpp's llama", err);
    if (rc < 0)
        return rc;
    rc = lx_stack_rope_of(info->stack, LX_ROPE_SCALED | LX_ROPE_LONGROPE, "GGUF", rope, err);
    if (rc < 0)
        return rc;
    if (lx_arch_gemma_part(a))
        return gemma_check(a, rope, err);
    int lr = strcmp(rope->scaling, "longrope") == 0;
    if (lr && (a->qkv_bias || a->qk_norm || a->heads * a->d_head != a->d_model)) {
        char wide[96] = "";
        if (a->heads * a->d_head != a->d_model)
            snprintf(wide, sizeof wide, "%sheads x d_head = %ld on a width of %ld", a->qkv_bias || a->qk_norm ? ", " : "",
                     a->heads * a->d_head, a->d_model);
        return lx_err(err, LX_EINVAL, "llama.cpp runs LongRoPE in its phi3 architecture, which has no q/k/v biases or "
                      "qk_norm and heads x d_head = the width; this model has %s%s%s%s\n  hint: export longrope models "
                      "of Phi-3's shape", a->qkv_bias ? "q/k/v biases" : "",
                      a->qkv_bias && a->qk_norm ? ", " : "", a->qk_norm ? "qk_norm" : "", wide);
    }
    if (lr && fabs(rope->factor * (double)rope->original - (double)info->train_len) > 1e-9 * (double)info->train_len)
        return lx_err(err, LX_EINVAL, "a phi3 file's LongRoPE scale is its context_length over original_context_length; "
                      "the model's longrope has scale %g and original %ld, trained at %ld\n  hint: export longrope "
                      "models trained with scale = length / original", rope->factor, rope->original, info->train_len);
    const struct lx_gguf_family *fam = family_of(a, rope, 0);
    if (!fam)
        return lx_err(err, LX_EINVAL, "the model has both q/k/v biases (llama.cpp's qwen2) and qk_norm (its qwen3); "
                      "no llama.cpp architecture has both\n  hint: export models with at most one of them");
    if (rope->dims && rope->dims < a->d_head && (!fam->half || rope->interleaved))
        return lx_err(err, LX_EINVAL, "the model's rope turns %ld of each head's %ld channels%s; llama.cpp %s\n  hint: "
                      "export partial rotary models trained with layout half and q/k/v biases, qk_norm or LongRoPE "
                      "(llama.cpp's qwen2, qwen3 and phi3)", rope->dims, a->d_head, rope->interleaved ? " in interleaved "
                      "pairs" : "", fam->half ? "turns the first channels of a head in half pairs" : "'s llama turns "
                      "whole heads");
    if (rope->scaling[0] == 'y' && (rope->beta_fast != 32 || rope->beta_slow != 1 || !rope->truncate))
        rc = lx_err(err, LX_EINVAL, "the model's yarn has beta_fast %g, beta_slow %g%s; llama.cpp's llama and qwen2 "
                    "read no beta keys and run 32, 1 with a truncated ramp\n  hint: export yarn models trained with "
                    "the default betas", rope->beta_fast, rope->beta_slow, rope->truncate ? "" : ", truncate false");
    return rc;
}

static void export_meta(struct lx_gguf_out *o, const struct lx_model *m, const struct lx_ckpt_info *info,
                        const struct lx_stack_rope *rope, int dtype)
{
    const struct lx_arch *a = &m->arch;
    int gemma = lx_export_gemma_kind(a, rope, NULL);
    const char *arch = family_of(a, rope, gemma)->name;
    char key[128];
#define KEY(s) (snprintf(key, sizeof key, "%s.%s", arch, s), key)
    lx_gguf_put_str(o, "general.architecture", arch);
    lx_gguf_put_str(o, "general.name", info->model_key && info->model_key[0] ? info->model_key : "lenx model");
    lx_gguf_put_u32(o, "general.file_type", file_type(dtype));
    lx_gguf_put_u32(o, KEY("context_length"), (uint32_t)info->train_len);
    lx_gguf_put_u32(o, KEY("embedding_length"), (uint32_t)a->d_model);
    lx_gguf_put_u32(o, KEY("block_count"), (uint32_t)a->layers);
    lx_gguf_put_u32(o, KEY("feed_forward_length"), (uint32_t)a->d_mlp);
    lx_gguf_put_u32(o, KEY("attention.head_count"), (uint32_t)a->heads);
    lx_gguf_put_u32(o, KEY("attention.head_count_kv"), (uint32_t)lx_arch_kv(a));
    if (a->d_head * a->heads != a->d_model) {   /* llama.cpp's head size is embedding_length / head_count without them */
        lx_gguf_put_u32(o, KEY("attention.key_length"), (uint32_t)a->d_head);
        lx_gguf_put_u32(o, KEY("attention.value_length"), (uint32_t)a->d_head);
    }
    lx_gguf_put_f32(o, KEY("attention.layer_norm_rms_epsilon"), (float)a->norm_eps);
    lx_gguf_put_f32(o, KEY("rope.freq_base"), (float)rope->base);
    lx_gguf_put_u32(o, KEY("rope.dimension_count"), (uint32_t)(rope->dims ? rope->dims : a->d_head));
    int freqs = strcmp(rope->scaling, "llama3") == 0;  /* llama3 is rope_freqs.weight, the type left none */
    if (strcmp(rope->scaling, "longrope") == 0) {       /* the factors are tensors; s = context / original */
        lx_gguf_put_u32(o, KEY("rope.scaling.original_context_length"), (uint32_t)rope->original);
        lx_gguf_put_f32(o, KEY("rope.scaling.attn_factor"), (float)rope->attention);
    } else {
        lx_gguf_put_str(o, KEY("rope.scaling.type"), rope->scaling[0] && !freqs ? rope->scaling : "none");
    }
    if (rope->scaling[0] && !freqs && strcmp(rope->scaling, "longrope") != 0) {
        lx_gguf_put_f32(o, KEY("rope.scaling.factor"), (float)rope->factor);
        lx_gguf_put_bool(o, KEY("rope.scaling.finetuned"), 1);
    }
    if (rope->scaling[0] == 'y') {
        lx_gguf_put_u32(o, KEY("rope.scaling.original_context_length"), (uint32_t)rope->original);
        lx_gguf_put_f32(o, KEY("rope.scaling.attn_factor"), (float)rope->attn_factor);
    }
    if (gemma >= 2 && a->local_every) {     /* as gguf_model.c's gemma_arch reads them back */
        lx_gguf_put_u32(o, KEY("attention.sliding_window"), (uint32_t)a->local_window);
        lx_gguf_put_u32(o, KEY("attention.sliding_window_pattern"), (uint32_t)a->local_every);
        lx_gguf_put_f32(o, KEY("rope.freq_base_swa"), (float)a->local_base);
    }
    if (gemma == 2)
        lx_gguf_put_f32(o, KEY("attn_logit_softcapping"), (float)a->attn_softcap);
    if (gemma >= 2 && a->logit_softcap != 0.0)
        lx_gguf_put_f32(o, KEY("final_logit_softcapping"), (float)a->logit_softcap);
#undef KEY
    if (info->model_key && info->model_key[0])
        lx_gguf_put_str(o, "lenx.model_key", info->model_key);
    lx_gguf_put_str(o, "lenx.stack", info->stack ? info->stack : "[]");
    lx_gguf_put_str(o, "lenx.weights_sha256", info->weights_sha256);
}

/* The type tensor i is written as: norms F32; matrices dtype, F16 when their rows are not whole blocks. */
static int tensor_type(const struct lx_tensor_info *t, int dtype)
{
    if (t->ndim == 1)
        return LX_DT_F32;
    return t->shape[1] % (long)lx_dtype_block(dtype) ? LX_DT_F16 : dtype;
}

/* Tensor i as the file holds it: its own (name, reader), or, in a fused family, the fused tensor
** it begins (its parts' readers in *fr) or nothing (0: a later part of one). */
static int export_tensor(const struct lx_model *m, const struct lx_gguf_family *fam, const struct lx_tensor_info *ti,
                         int n, struct lx_tensor_reader *rd, int i, struct lx_fused_reader *fr, char *name, size_t len,
                         uint64_t ne[2])
{
    long layer, rows;
    int which;
    ne[0] = (uint64_t)(ti[i].ndim == 2 ? ti[i].shape[1] : ti[i].shape[0]), ne[1] = (uint64_t)ti[i].shape[0];
    lx_gguf_tensor_name(ti[i].name, name, len);
    int begins = fam->fused ? lx_fused_reader_of(&m->arch, ti, n, rd, i, fr, &layer, &which, &rows) : -1;
    if (begins < 0)
        return 1;
    if (begins == 0)
        return 0;
    snprintf(name, len, "blk.%ld.%s", layer, which ? "ffn_up.weight" : "attn_qkv.weight");
    ne[1] = (uint64_t)rows;
    return 2;
}

/* LongRoPE's lists as phi3's rope_factors_long/short tensors (one F32 per rotary pair; [] is all 1). */
static void put_longrope(struct lx_gguf_out *o, const struct lx_stack_rope *rope, long pairs, float *f,
                         int n_by_type[8])
{
    const struct lx_floats *l[2] = {&rope->lng, &rope->shrt};
    for (int k = 0; k < 2; k++) {
        for (long i = 0; i < pairs; i++)
            f[k * pairs + i] = l[k]->n ? (float)l[k]->v[i] : 1.0f;
        uint64_t ne[1] = {(uint64_t)pairs};
        lx_gguf_put_tensor(o, k ? "rope_factors_short.weight" : "rope_factors_long.weight", 1, ne, f + k * pairs,
                           LX_DT_F32);
        if (n_by_type)
            n_by_type[LX_DT_F32]++;
    }
}

int lx_gguf_export(const struct lx_model *m, const struct lx_ckpt_info *info, const struct lx_tokenizer *tok,
                   const char *path, int dtype, int n_by_type[8], struct lx_error *err)
{
    const struct lx_arch *a = &m->arch;
    struct lx_stack_rope rope;
    int rc = export_check(m, info, &rope, err);
    if (rc < 0)
        return rc;
    struct lx_gguf_out o;
    lx_gguf_out_init(&o);
    export_meta(&o, m, info, &rope, dtype);
    rc = lx_tokenizer_to_gguf(tok, &o, err);
    const struct lx_gguf_family *fam = family_of(a, &rope, lx_export_gemma_kind(a, &rope, NULL));
    int n = lx_arch_tensors(a, NULL), relayout = rope.interleaved == fam->half;
    struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
    struct lx_tensor_reader *rd = lx_xcalloc((size_t)n, sizeof *rd);
    struct lx_fused_reader *fr = lx_xcalloc((size_t)n, sizeof *fr);
    lx_arch_tensors(a, ti);
    for (int i = 0; i < n; i++)     /* q and k rows in the other layout when the family's differs */
        lx_tensor_reader_init(&rd[i], m, &ti[i], i, relayout && lx_tensor_is_qk(ti[i].name) ? fam->half : -1,
                              LX_GGUF_CHUNK);
    for (int i = 0; i < n && rc == LX_OK; i++) {
        char name[96];
        uint64_t ne[2];
        int how = export_tensor(m, fam, ti, n, rd, i, &fr[i], name, sizeof name, ne);
        if (!how)
            continue;
        if (ti[i].ndim == 1)
            ne[1] = 1;
        int t = tensor_type(&ti[i], dtype);
        if (how == 2)
            lx_gguf_put_tensor_fn(&o, name, 2, ne, lx_fused_read, &fr[i], t);
        else
            lx_gguf_put_tensor_fn(&o, name, ti[i].ndim, ne, lx_tensor_read, &rd[i], t);
        if (n_by_type)
            n_by_type[t]++;
    }
    long pairs = (rope.dims ? rope.dims : a->d_head) / 2;
    float *freqs = lx_xmalloc(sizeof(float) * (size_t)(2 * pairs));
    if (rc == LX_OK && strcmp(rope.scaling, "llama3") == 0) {   /* its factor per rotary pair, as llama.cpp's
                                                                ** converter writes them */
        for (long k = 0; k < pairs; k++)
            freqs[k] = (float)lx_llama3_factor(rope.factor, (double)rope.original, rope.low, rope.high,
                                               2 * acos(-1.0) * pow(rope.base, 2.0 * (double)k / (double)a->d_head));
        uint64_t ne[1] = {(uint64_t)pairs};
        lx_gguf_put_tensor(&o, "rope_freqs.weight", 1, ne, freqs, LX_DT_F32);
        if (n_by_type)
            n_by_type[LX_DT_F32]++;
    }
    if (rc == LX_OK && fam->fused)
        put_longrope(&o, &rope, pairs, freqs, n_by_type);
    if (rc == LX_OK)
        rc = lx_gguf_out_write(&o, path, err);
    free(freqs);
    for (int i = 0; i < n; i++)
        free(rd[i].rows);
    free(rd);
    free(fr);
    free(ti);
    lx_gguf_out_free(&o);
    return rc;
}
