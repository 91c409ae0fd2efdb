/*
** harness/engine/formats/hf_export.c - a lenx model written as a Hugging Face directory
** (lenx export --hf; docs/checkpoints.md#lenx-export---hf-dir---model-m---tokenizer-f):
** config.json as transformers' Llama, Qwen2, Qwen3, Phi-3, Gemma, Gemma 2 or Gemma 3 and
** model.safetensors read from the model a piece at a time. The reading half is hf_model.c.
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/formats/hf_model.h"
#include "harness/core/gguf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/engine/formats/hf_rope.h"
#include "harness/engine/formats/safetensors.h"
#include "harness/core/hash.h"
#include "harness/engine/tokenizers/kinds.h"
#include "harness/engine/tokenizers/tokenizer.h"

/* An id of config.json: the number, or null for -1 (a tokenizer without one). */
static void put_id(struct lx_buf *b, const char *key, int id)
{
    lx_buf_printf(b, ",\n  \"%s\": ", key);
    if (id >= 0)
        lx_buf_printf(b, "%d", id);
    else
        lx_buf_puts(b, "null");
}

/* A soft-cap as config.json holds it: the number, or null for none. */
static void put_cap(struct lx_buf *b, const char *key, double c)
{
    lx_buf_printf(b, ",\n  \"%s\": ", key);
    if (c != 0.0)
        lx_buf_num(b, c);
    else
        lx_buf_puts(b, "null");
}

/* The fields of Gemma 2's and 3's layers (transformers' Gemma2Config, Gemma3TextConfig), as
** hf_model.c's cfg_gemma_layers reads them: with no local layers every layer is full_attention. */
static void gemma_layers(struct lx_buf *b, const struct lx_arch *a, long train_len, int kind)
{
    long k = a->local_every ? a->local_every : 1;
    lx_buf_printf(b, ",\n  \"query_pre_attn_scalar\": %ld,\n  \"sliding_window\": %ld",
                  a->qk_dim ? a->qk_dim : a->d_head, a->local_every ? a->local_window : train_len);
    if (kind == 3) {
        lx_buf_printf(b, ",\n  \"sliding_window_pattern\": %ld,\n  \"rope_local_base_freq\": ", k);
        lx_buf_num(b, a->local_base);
    }
    lx_buf_puts(b, ",\n  \"layer_types\": [");
    for (long l = 0; l < a->layers; l++)
        lx_buf_printf(b, "%s\"%s\"", l ? ", " : "", (l + 1) % k == 0 ? "full_attention" : "sliding_attention");
    lx_buf_puts(b, "]");
    put_cap(b, "attn_logit_softcapping", a->attn_softcap);
    put_cap(b, "final_logit_softcapping", a->logit_softcap);
}

/* The factor of an evaluation stack that is dynamic NTK alone, as lx_hf_stacks reads rope_scaling
** dynamic into it, else 0. */
static double dynamic_alone(const char *eval)
{
    double f = 0;
    int end = 0;
    if (!eval || sscanf(eval, "[{\"ntk\":{\"mode\":\"dynamic\",\"factor\":%lf}}]%n", &f, &end) != 1 || eval[end])
        return 0;
    return f;
}

double lx_hf_export_dynamic(const struct lx_ckpt_info *info)
{
    struct lx_stack_rope rope;
    struct lx_error err;
    double f = dynamic_alone(info->eval_stack);
    return f > 0 && lx_stack_rope_of(info->stack, LX_ROPE_SCALED | LX_ROPE_LONGROPE, "", &rope, &err) == LX_OK &&
           !rope.scaling[0] ? f : 0;
}

/* config.json of the export: transformers' Llama, Qwen2 or Qwen3, its Phi-3 for a partial rotary
** (phi3: partial_rotary_factor dims / head_dim, the factor lists one per turned pair), or its Gemma
** (gemma: lx_export_gemma_kind). */
static void export_config(struct lx_buf *b, const struct lx_model *m, const struct lx_ckpt_info *info,
                          const struct lx_stack_rope *rope, const struct lx_tokenizer *tok, int phi3, int gemma)
{
    long train_len = info->train_len;
    double dynamic = lx_hf_export_dynamic(info);
    static const char *const gtype[] = {"gemma", "gemma2", "gemma3_text"};
    static const char *const garch[] = {"GemmaForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM"};
    const struct lx_arch *a = &m->arch;
    const char *type = gemma ? gtype[gemma - 1] : phi3 ? "phi3" : a->qk_norm ? "qwen3" : a->qkv_bias ? "qwen2"
                       : "llama";
    const char *arch = gemma ? garch[gemma - 1] : phi3 ? "Phi3ForCausalLM" : a->qk_norm ? "Qwen3ForCausalLM"
                       : a->qkv_bias ? "Qwen2ForCausalLM" : "LlamaForCausalLM";
    lx_buf_printf(b, "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"%s\",\n"
                  "  \"hidden_size\": %ld,\n  \"intermediate_size\": %ld,\n  \"num_hidden_layers\": %ld,\n"
                  "  \"num_attention_heads\": %ld,\n  \"num_key_value_heads\": %ld,\n  \"head_dim\": %ld,\n"
                  "  \"vocab_size\": %ld,\n  \"max_position_embeddings\": %ld,\n  \"%s\": \"%s\",\n"
                  "  \"rms_norm_eps\": ", arch, type, a->d_model, a->d_mlp, a->layers, a->heads, lx_arch_kv(a),
                  a->d_head, a->vocab, train_len, gemma ? "hidden_activation" : "hidden_act",
                  gemma ? "gelu_pytorch_tanh" : "silu");
    lx_buf_num(b, a->norm_eps);
    if (phi3) {
        lx_buf_puts(b, ",\n  \"partial_rotary_factor\": ");
        lx_buf_num(b, (double)rope->dims / (double)a->d_head);
    }
    lx_buf_puts(b, ",\n  \"rope_theta\": ");
    lx_buf_num(b, rope->base);
    lx_buf_puts(b, ",\n  \"rope_scaling\": ");
    if (dynamic > 0) {      /* the evaluation stack's dynamic NTK, where no rescaling is trained in */
        lx_buf_puts(b, "{\"rope_type\": \"dynamic\", \"factor\": ");
        lx_buf_num(b, dynamic);
        lx_buf_puts(b, "}");
    } else {
        lx_hf_export_scaling(b, rope, (int)((phi3 ? rope->dims : a->d_head) / 2));
    }
    if (strcmp(rope->scaling, "longrope") == 0)     /* where transformers reads L first */
        lx_buf_printf(b, ",\n  \"original_max_position_embeddings\": %ld", rope->original);
    if (gemma >= 2)
        gemma_layers(b, a, train_len, gemma);
    lx_buf_printf(b, ",\n  \"attention_bias\": false,\n  \"mlp_bias\": false,\n  \"tie_word_embeddings\": %s",
                  a->tie_head ? "true" : "false");
    put_id(b, "bos_token_id", tok->bos);
    put_id(b, "eos_token_id", tok->eos);
    lx_buf_puts(b, ",\n  \"torch_dtype\": \"float32\"\n}\n");
}

/* What transformers' Phi-3 needs of a partial rotary model: no q/k/v biases or qk_norm, heads x head_dim =
** the width, half pairs, and a partial_rotary_factor whose int(head_dim x factor) is the rope's dims. */
static int phi3_check(const struct lx_arch *a, const struct lx_stack_rope *rope, struct lx_error *err)
{
    double f = (double)rope->dims / (double)a->d_head;
    const char *why = a->qkv_bias ? "q/k/v biases" : a->qk_norm ? "qk_norm" : a->heads * a->d_head != a->d_model
                      ? "heads x d_head other than the width" : rope->interleaved ? "interleaved rotary pairs"
                      : (long)((double)a->d_head * f) != rope->dims
                      ? "a factor whose int(head_dim x factor) is not dims" : NULL;
    if (!why)
        return LX_OK;
    return lx_err(err, LX_EINVAL, "the model's rope turns %ld of each head's %ld channels, which transformers runs "
                  "in its Phi-3 (partial_rotary_factor); Phi-3 cannot take %s\n  hint: export partial rotary models "
                  "of Phi-3's shape (layout half, no biases or qk_norm), or use lenx export --gguf", rope->dims,
                  a->d_head, why);
}

/* The model's own tokenizer beside it, so that the ids read as they were
** trained: its file copied (lx_tokenizer_copy), or for one read from a GGUF
** model file a vocabulary-only GGUF of it, not the whole model again (a
** file past the tokenizer reader's 256 MB failed the export). */
static int export_tokenizer(const struct lx_tokenizer *tok, const char *dir, struct lx_error *err)
{
    if (!lx_gguf_file(tok->path))
        return lx_tokenizer_copy(tok->path, tok->hash, dir, err);
    struct lx_buf p = {0};
    lx_buf_printf(&p, "%s/tokenizer.gguf", dir);
    int rc = lx_tokenizer_write_gguf(tok, lx_buf_str(&p), err);
    lx_buf_free(&p);
    return rc;
}

/* Whether dir's tokenizer file `path` (named `file`) is the one the export writes: tok's own bytes, or for a
** tokenizer read from a GGUF model the tokenizer.gguf written anew. The byte tokenizer writes none. */
static int same_tokenizer(const char *path, const char *file, const struct lx_tokenizer *tok)
{
    if (!tok || tok->is_byte)
        return 0;
    if (lx_gguf_file(tok->path))
        return strcmp(file, "tokenizer.gguf") == 0;
    unsigned char *b = NULL;
    long n = 0;
    char hash[65] = "";
    struct lx_error sub;
    if (lx_read_file(path, &b, &n, 256L << 20, &sub) == LX_OK)  /* the tokenizer reader's bound */
        lx_sha256_hex_bytes(b, (size_t)n, hash);
    free(b);
    return strcmp(hash, tok->hash) == 0;
}

/* The file beside tok's that travels with its kind (a tokenizer.json's tokenizer_config.json: its BOS/EOS)
** when tok's own file has none: the export then writes none, and one already in the directory would be read
** with the tokenizer copied. NULL otherwise. */
static const char *unwritten_sidecar(const struct lx_tokenizer *tok)
{
    if (!tok || tok->is_byte || lx_gguf_file(tok->path))
        return NULL;
    unsigned char *b = NULL;
    long n = 0;
    struct lx_error sub;
    const struct lx_tok_kind *kind = NULL;
    if (lx_read_file(tok->path, &b, &n, 256L << 20, &sub) == LX_OK)  /* the tokenizer reader's bound */
        kind = lx_tok_kind_of(b, n);
    free(b);
    if (!kind || !kind->sidecar)
        return NULL;
    const char *slash = strrchr(tok->path, '/');
    struct lx_buf p = {0};
    struct stat sb;
    lx_buf_printf(&p, "%.*s%s", slash ? (int)(slash - tok->path + 1) : 0, tok->path, kind->sidecar);
    int has = stat(lx_buf_str(&p), &sb) == 0;
    lx_buf_free(&p);
    return has ? NULL : kind->sidecar;
}

/* Refuse, before anything is written, a dir that is not a directory, or that holds a file the export does
** not write but a loader reads: a weights index (read instead of model.safetensors), a tokenizer other
** than tok's (read instead of, or for a byte model beside, what the export writes) or a tokenizer's sidecar
** the export does not write over (unwritten_sidecar). Without the check the export exited 0 and the
** directory loaded the old weights or tokenizer. */
static int check_dest(const char *dir, const struct lx_tokenizer *tok, struct lx_error *err)
{
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return LX_OK;
    if (!S_ISDIR(sb.st_mode))
        return lx_err(err, LX_EIO, "--hf %s: exists and is not a directory\n  hint: name a new or empty directory",
                      dir);
    struct lx_buf p = {0};
    const char *name = NULL, *why = "a loader reads its weight_map instead of the model.safetensors written";
    lx_buf_printf(&p, "%s/model.safetensors.index.json", dir);
    if (stat(lx_buf_str(&p), &sb) == 0)
        name = "model.safetensors.index.json";
    for (int i = 0; !name && lx_tok_kinds[i]; i++) {
        lx_buf_reset(&p);
        lx_buf_printf(&p, "%s/%s", dir, lx_tok_kinds[i]->file);
        if (stat(lx_buf_str(&p), &sb) == 0 && !same_tokenizer(lx_buf_str(&p), lx_tok_kinds[i]->file, tok))
            name = lx_tok_kinds[i]->file, why = "a loader would read it as the model's tokenizer";
    }
    const char *sidecar = name ? NULL : unwritten_sidecar(tok);
    if (sidecar) {
        lx_buf_reset(&p);
        lx_buf_printf(&p, "%s/%s", dir, sidecar);
        if (stat(lx_buf_str(&p), &sb) == 0)
            name = sidecar, why = "the tokenizer written has none of its own, and a loader would read this one with it";
    }
    lx_buf_free(&p);
    if (!name)
        return LX_OK;
    return lx_err(err, LX_EINVAL, "--hf %s already holds %s, which this export does not write: %s\n  hint: export "
                  "into a new or empty directory, or remove %s/%s first", dir, name, why, dir, name);
}

int lx_hf_export(const struct lx_model *m, const struct lx_ckpt_info *info, const struct lx_tokenizer *tok,
                 const char *dir, struct lx_error *err)
{
    const struct lx_arch *a = &m->arch;
    struct lx_stack_rope rope;
    int rc;
    if ((rc = lx_export_arch_check(a, "transformers' Llama", err)) < 0)
        return rc;
    if (a->qkv_bias && a->qk_norm)
        return lx_err(err, LX_EINVAL, "the model has both q/k/v biases (transformers' Qwen2) and qk_norm (its Qwen3); "
                      "no transformers model has both\n  hint: export models with at most one of them");
    if ((rc = lx_stack_rope_of(info->stack, LX_ROPE_SCALED | LX_ROPE_LONGROPE, "transformers' Llama", &rope, err)) < 0)
        return rc;
    if (strcmp(rope.scaling, "yarn") == 0 && !rope.truncate)
        return lx_err(err, LX_EINVAL, "the model's yarn has truncate false; transformers' rope_scaling yarn rounds "
                      "the ramp's ends (truncate true)\n  hint: export yarn models trained with truncate true");
    int gemma = lx_export_gemma_kind(a, &rope, err);
    if (gemma < 0)
        return gemma;
    int phi3 = !gemma && rope.dims && rope.dims < a->d_head;    /* a partial rotary: transformers' Phi-3 runs it */
    if (phi3 && (rc = phi3_check(a, &rope, err)) < 0)
        return rc;
    if ((rc = check_dest(dir, tok, err)) < 0)
        return rc;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return lx_err(err, LX_EIO, "%s: cannot create the directory: %s", dir, strerror(errno));
    if (tok && (rc = export_tokenizer(tok, dir, err)) < 0)  /* first: a refusal leaves no weights behind */
        return rc;
    int n = lx_arch_tensors(a, NULL);
    struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
    struct lx_st_tensor *st = lx_xcalloc((size_t)n, sizeof *st);
    struct lx_tensor_reader *rd = lx_xcalloc((size_t)n, sizeof *rd);   /* read while written: no fp32 copy */
    struct lx_st_reader *sr = lx_xcalloc((size_t)n, sizeof *sr);
    struct lx_fused_reader *fr = lx_xcalloc((size_t)n, sizeof *fr);
    char (*names)[96] = lx_xcalloc((size_t)n, sizeof *names);
    lx_arch_tensors(a, ti);
    for (int i = 0; i < n; i++) {   /* q and k heads' rows in HF's order */
        int qk = rope.interleaved && lx_tensor_is_qk(ti[i].name), len = (int)strlen(ti[i].name);
        lx_tensor_reader_init(&rd[i], m, &ti[i], i, qk ? 1 : -1, LX_ST_CHUNK);
        if (gemma && len >= 11 && strcmp(ti[i].name + len - 11, "norm.weight") == 0)
            rd[i].add = -1.0f;      /* Gemma's RMSNorm scales by 1 + w: the gain less 1 */
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        long layer, rows = ti[i].shape[0];
        int which, fused = phi3 ? lx_fused_reader_of(a, ti, n, rd, i, &fr[k], &layer, &which, &rows) : -1;
        if (fused == 0)
            continue;   /* a later part of a fused tensor */
        if (fused > 0)
            snprintf(names[k], sizeof names[k], "model.layers.%ld.%s", layer,
                     which ? "mlp.gate_up_proj.weight" : "self_attn.qkv_proj.weight");
        else if (!lx_hf_tensor_name(ti[i].name, names[k], sizeof names[k], gemma >= 2))
            continue;   /* no HF tensor: only learned logit scales, refused above */
        st[k] = (struct lx_st_tensor){.name = names[k], .ndim = ti[i].ndim, .shape = {rows, ti[i].shape[1]}};
        sr[k] = fused > 0 ? (struct lx_st_reader){lx_fused_read, &fr[k]}
                          : (struct lx_st_reader){lx_tensor_read, &rd[i]};
        k++;
    }
    struct lx_buf path = {0}, cfg = {0};
    const char *meta[] = {"format", "pt"};
    lx_buf_printf(&path, "%s/model.safetensors", dir);
    rc = lx_st_write_read(lx_buf_str(&path), st, sr, k, meta, 1, err);
    export_config(&cfg, m, info, &rope, lx_tok_or_byte(tok), phi3, gemma);
    lx_buf_reset(&path);
    lx_buf_printf(&path, "%s/config.json", dir);
    if (rc == LX_OK)
        rc = lx_write_file(lx_buf_str(&path), cfg.s, cfg.len, err);
    lx_buf_free(&path);
    lx_buf_free(&cfg);
    for (int i = 0; i < n; i++)
        free(rd[i].rows);
    free(rd);
    free(fr);
    free(sr);
    free(names);
    free(st);
    free(ti);
    return rc;
}

