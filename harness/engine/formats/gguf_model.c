/*
** harness/engine/formats/gguf_model.c - llama.cpp's GGUF model files loaded into
** the one struct lx_model (docs/checkpoints.md#gguf): the container is read
** by gguf.c, the model here.
**
** Architectures `llama` (Llama, Mistral, TinyLlama, llama2.c conversions)
** and `qwen2`. Hyper-parameters come from the metadata ({arch}.block_count,
** embedding_length, feed_forward_length, attention.head_count[_kv],
** attention.layer_norm_rms_epsilon, rope.freq_base, context_length); tensors
** by llama.cpp's names, mapped onto lenx's:
**
**     token_embd.weight          tok_emb.weight        output_norm.weight   norm.weight
**     output.weight              lm_head.weight (absent: tied)
**     blk.N.attn_norm.weight     layers.N.attn_norm.weight
**     blk.N.attn_{q,k,v}.weight  layers.N.attn.w{q,k,v}.weight (.bias for qwen2)
**     blk.N.attn_output.weight   layers.N.attn.wo.weight
**     blk.N.ffn_norm.weight      layers.N.mlp_norm.weight
**     blk.N.ffn_{gate,up,down}.weight   layers.N.mlp.w{1,3,2}.weight
**
** A matrix of ne = {in, out} is laid out as PyTorch's (out, in), so F32, F16,
** BF16, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K weights are used in place from the
** file's mapping, in their own type (quantized rows are dequantized exactly,
** harness/core/half.c, as products read them). llama.cpp's converter permutes a `llama` model's q and k rows into
** interleaved rotary pairs (its "normal" rope), so such a file's native stack
** is rope with layout interleaved; `qwen2` keeps Hugging Face's halves
** (llama.cpp's "neox" rope): layout half.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/hashcache.h"
#include "harness/core/half.h"
#include "harness/core/mapguard.h"
#include "harness/engine/formats/format.h"
#include "harness/core/gguf.h"
#include "harness/engine/model/arch.h"

/* The arch from the metadata: LX_EINVAL naming the file and key. */
static int read_arch(const struct lx_gguf *g, const char *arch, struct lx_arch *a, long *train_len, double *base,
                     struct lx_error *err)
{
    char key[128];
    int64_t layers = 0, C = 0, F = 0, H = 0, KV = 0, rope_dims = 0, ctx = 0;
    double eps = 1e-5;
    *base = 10000.0;
#define KEY(s) (snprintf(key, sizeof key, "%s.%s", arch, s), key)
    int rc = lx_gguf_get_int(g, KEY("block_count"), 1, &layers, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_int(g, KEY("embedding_length"), 1, &C, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_int(g, KEY("feed_forward_length"), 1, &F, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_int(g, KEY("attention.head_count"), 1, &H, err);
    KV = H;
    if (rc == LX_OK)
        rc = lx_gguf_get_int(g, KEY("attention.head_count_kv"), 0, &KV, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_num(g, KEY("attention.layer_norm_rms_epsilon"), 0, &eps, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_num(g, KEY("rope.freq_base"), 0, base, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_int(g, KEY("context_length"), 1, &ctx, err);
    rope_dims = H > 0 ? C / H : 0;
    if (rc == LX_OK)
        rc = lx_gguf_get_int(g, KEY("rope.dimension_count"), 0, &rope_dims, err);
    char scaling[32];
    lx_gguf_get_str(g, KEY("rope.scaling.type"), scaling, sizeof scaling);
#undef KEY
    if (rc < 0)
        return rc;
    if (layers < 1 || layers > 1024 || C < 2 || C > 65536 || F < 1 || F > 1 << 20 || H < 1 || H > 1024 || KV < 1 ||
        H % KV || C % H || (C / H) % 2 || ctx < 1 || ctx > 1L << 24 || !(eps > 0 && eps < 1) || !(*base > 1))
        return lx_err(err, LX_EINVAL, "%s: the %s metadata (block_count %lld, embedding_length %lld, "
                      "feed_forward_length %lld, head_count %lld, head_count_kv %lld, context_length %lld, rms eps %g, "
                      "rope.freq_base %g) is not a model lenx can hold\n  hint: the file is damaged", g->name, arch,
                      (long long)layers, (long long)C, (long long)F, (long long)H, (long long)KV, (long long)ctx, eps,
                      *base);
    if (rope_dims != C / H)
        return lx_err(err, LX_EINVAL, "%s: %s.rope.dimension_count is %lld, not the head size %lld: partial rotary "
                      "embeddings are not supported", g->name, arch, (long long)rope_dims, (long long)(C / H));
    if (scaling[0] && strcmp(scaling, "none") != 0)
        return lx_err(err, LX_EINVAL, "%s: %s.rope.scaling.type is '%s'; lenx reads GGUF models without rope "
                      "scaling so far\n  hint: add the scaling as a method (--method pi, yarn, ...) on the unscaled "
                      "model", g->name, arch, scaling);
    lx_params_defaults(&lx_arch_schema, a);
    a->mode = LX_MODEL_CAUSAL, a->layers = layers, a->d_model = C, a->heads = H, a->d_head = C / H;
    a->d_mlp = F, a->mlp = LX_MLP_SWIGLU, a->norm_eps = eps, a->kv_heads = KV == H ? 0 : KV;
    a->qkv_bias = strcmp(arch, "qwen2") == 0;
    *train_len = (long)ctx;
    return LX_OK;
}

/* lenx's name of tensor i -> llama.cpp's. */
static void gguf_name(const char *lenx, char *out, size_t n)
{
    static const char *const map[][2] = {
        {"attn_norm.weight", "attn_norm.weight"}, {"attn.wq.weight", "attn_q.weight"},
        {"attn.wk.weight", "attn_k.weight"},      {"attn.wv.weight", "attn_v.weight"},
        {"attn.wq.bias", "attn_q.bias"},          {"attn.wk.bias", "attn_k.bias"},
        {"attn.wv.bias", "attn_v.bias"},          {"attn.wo.weight", "attn_output.weight"},
        {"mlp_norm.weight", "ffn_norm.weight"},   {"mlp.w1.weight", "ffn_gate.weight"},
        {"mlp.w3.weight", "ffn_up.weight"},       {"mlp.w2.weight", "ffn_down.weight"},
    };
    long l;
    int at = 0;
    if (strcmp(lenx, "tok_emb.weight") == 0 || strcmp(lenx, "norm.weight") == 0 || strcmp(lenx, "lm_head.weight") == 0) {
        snprintf(out, n, "%s", lenx[0] == 't' ? "token_embd.weight" : lenx[0] == 'n' ? "output_norm.weight"
                                                                                     : "output.weight");
        return;
    }
    if (sscanf(lenx, "layers.%ld.%n", &l, &at) == 1 && at > 0)
        for (size_t k = 0; k < sizeof map / sizeof *map; k++)
            if (strcmp(lenx + at, map[k][0]) == 0) {
                snprintf(out, n, "blk.%ld.%s", l, map[k][1]);
                return;
            }
    snprintf(out, n, "%s", lenx);
}

/* The engine's type of a GGUF tensor type, -1 for none. */
static int dtype_of(int ggml)
{
    static const int map[][2] = {
        {LX_GGML_F32, LX_DT_F32},   {LX_GGML_F16, LX_DT_F16},   {LX_GGML_BF16, LX_DT_BF16}, {LX_GGML_Q8_0, LX_DT_Q8_0},
        {LX_GGML_Q4_0, LX_DT_Q4_0}, {LX_GGML_Q4_K, LX_DT_Q4_K}, {LX_GGML_Q5_K, LX_DT_Q5_K}, {LX_GGML_Q6_K, LX_DT_Q6_K},
    };
    for (size_t k = 0; k < sizeof map / sizeof *map; k++)
        if (map[k][0] == ggml)
            return map[k][1];
    return -1;
}

/* Every tensor lenx's arch has, found, shaped and typed as it must be, used in place. */
static int hold(struct lx_model *m, const struct lx_arch *a, const struct lx_gguf *g, const char *path,
                const unsigned char *bytes, size_t n, char dtype[16], struct lx_error *err)
{
    int nt = lx_arch_tensors(a, NULL), rc = LX_OK, first = -1, mixed = 0;
    struct lx_tensor_info *ti = lx_xcalloc((size_t)nt, sizeof *ti);
    struct lx_held *held = lx_xcalloc(1, sizeof *held);
    lx_arch_tensors(a, ti);
    held->t = lx_xcalloc((size_t)nt, sizeof *held->t);
    for (int i = 0; i < nt && rc == LX_OK; i++) {
        char name[96];
        gguf_name(ti[i].name, name, sizeof name);
        const struct lx_gguf_tensor *t = lx_gguf_tensor(g, name);
        uint64_t rows = (uint64_t)ti[i].shape[0], cols = ti[i].ndim == 2 ? (uint64_t)ti[i].shape[1] : 1;
        if (!t) {
            rc = lx_err(err, LX_EINVAL, "%s: tensor '%s' is missing\n  hint: the file is not a %s model llama.cpp's "
                        "converters wrote", path, name, a->qkv_bias ? "qwen2" : "llama");
        } else if (t->n_elems != rows * cols || t->ne[0] != (ti[i].ndim == 2 ? cols : rows)) {
            rc = lx_err(err, LX_EINVAL, "%s: tensor '%s' has ne {%llu, %llu, %llu, %llu}; the metadata makes it "
                        "(%llu rows, %llu columns)\n  hint: the file is damaged", path, name,
                        (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                        (unsigned long long)t->ne[3], (unsigned long long)rows, (unsigned long long)cols);
        } else if (dtype_of(t->type) < 0) {
            rc = lx_err(err, LX_EINVAL, "%s: tensor '%s' is %s, which lenx does not multiply", path, name,
                        lx_gguf_ttype_name(t->type));
        } else {
            enum lx_dtype dt = (enum lx_dtype)dtype_of(t->type);
            held->t[i] = (struct lx_wmat){t->data, dt};
            lx_mapguard_add(t->data, (size_t)t->bytes, path, name);
            if (ti[i].ndim == 2)
                mixed |= first >= 0 && first != t->type, first = first < 0 ? t->type : first;
        }
    }
    free(ti);
    if (rc < 0) {
        free(held->t);
        free(held);
        return rc;
    }
    snprintf(dtype, 16, "%s", mixed ? "mixed" : lx_gguf_ttype_name(first));
    lx_model_hold_map(m, a, held, bytes, n);
    return LX_OK;
}

static int load_gguf(struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err)
{
    const unsigned char *bytes;
    size_t n;
    struct lx_gguf g;
    struct lx_arch a;
    long train_len = 0;
    double base = 10000.0;
    char arch[32], dtype[16] = "F32";
    memset(m, 0, sizeof *m);
    int rc = lx_map_file(path, &bytes, &n, err);
    if (rc < 0)
        return rc;
    if ((rc = lx_gguf_parse(&g, bytes, n, path, err)) < 0) {
        lx_unmap_file(bytes, n);
        return rc;
    }
    lx_gguf_get_str(&g, "general.architecture", arch, sizeof arch);
    if (strcmp(arch, "llama") != 0 && strcmp(arch, "qwen2") != 0)
        rc = lx_err(err, LX_EINVAL, "%s: general.architecture is '%s'; lenx reads llama and qwen2 GGUF models",
                    path, arch);
    if (rc == LX_OK)
        rc = read_arch(&g, arch, &a, &train_len, &base, err);
    const struct lx_gguf_tensor *emb = rc == LX_OK ? lx_gguf_tensor(&g, "token_embd.weight") : NULL;
    if (rc == LX_OK && (!emb || emb->n_dims != 2 || emb->ne[0] != (uint64_t)a.d_model || emb->ne[1] < 2 ||
                        emb->ne[1] > 1000000))
        rc = lx_err(err, LX_EINVAL, "%s: token_embd.weight is missing, or not (vocab, %ld)", path, a.d_model);
    if (rc == LX_OK) {
        a.vocab = (long)emb->ne[1];
        a.tie_head = lx_gguf_tensor(&g, "output.weight") == NULL;
        lx_params_finish(&lx_arch_schema, &a);
        rc = hold(m, &a, &g, path, bytes, n, dtype, err);
    }
    if (rc == LX_OK)
        bytes = NULL;   /* m's now */
    if (rc == LX_OK && info) {
        lx_ckpt_info_native(info, "gguf", dtype);
        char stack[160];
        snprintf(stack, sizeof stack, "[{\"rope\":{\"base\":%.17g,\"layout\":\"%s\"}}]", base,
                 a.qkv_bias ? "half" : "interleaved");
        info->stack = lx_xstrdup(stack);
        info->train_len = train_len;
        info->kv_heads = lx_arch_kv(&a);
        info->tied = a.tie_head;
        char tk[32];    /* its own tokenizer, read from the file itself (tokenizers/tok_gguf.c) */
        lx_gguf_get_str(&g, "tokenizer.ggml.model", tk, sizeof tk);
        info->tokenizer = strcmp(tk, "llama") == 0 ? lx_xstrdup(path) : NULL;
        if (lx_hashcache_file_sha256(path, n, info->sha256) < 0)
            rc = lx_err(err, LX_EIO, "%s: the file changed while it was loaded (it is no longer %zu bytes)\n"
                        "  hint: load it again once nothing writes it", path, n);
        if (rc == LX_OK)
            lx_model_weights_hash_of(m, "gguf", info->sha256, info->weights_sha256);
    }
    lx_gguf_release(&g);
    if (bytes)
        lx_unmap_file(bytes, n);
    if (rc < 0)
        lx_model_release(m);
    return rc;
}

/* 1 when the file begins with GGUF's magic. */
static int looks_gguf(const char *path)
{
    char b[4];
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return 0;
    size_t got = fread(b, 1, sizeof b, fp);
    fclose(fp);
    return got == 4 && memcmp(b, "GGUF", 4) == 0;
}

const struct lx_model_format lx_model_format_gguf = {
    .name = "gguf",
    .summary = "a llama.cpp GGUF file (llama, qwen2; F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K weights)",
    .key = NULL,
    .dir = 0,
    .sniff = looks_gguf,
    .load = load_gguf,
};
