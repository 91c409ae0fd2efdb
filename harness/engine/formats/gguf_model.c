/*
** harness/engine/formats/gguf_model.c - llama.cpp's GGUF model files loaded into
** the one struct lx_model (docs/checkpoints.md#gguf): the container is read
** by gguf.c, the model here.
**
** Architectures `llama` (Llama, Mistral, TinyLlama, llama2.c conversions),
** `qwen2`, `qwen3`, `phi3`, `gemma`, `gemma2` and `gemma3` (gemma_arch), `gptneox`, `bloom`, `mpt`,
** `falcon` and `phi2` (neox_arch, neox_name: LayerNorms, q|k|v in one attn_qkv or three). Hyper-parameters
** come from the metadata ({arch}.block_count,
** embedding_length, feed_forward_length, attention.head_count[_kv],
** attention.key_length (the head size; embedding_length / head_count when
** absent), attention.layer_norm_rms_epsilon, rope.freq_base, context_length);
** tensors by llama.cpp's names, mapped onto lenx's:
**
**     token_embd.weight          tok_emb.weight        output_norm.weight   norm.weight
**     output.weight              lm_head.weight (absent: tied)
**     blk.N.attn_norm.weight     layers.N.attn_norm.weight
**     blk.N.attn_{q,k,v}.weight  layers.N.attn.w{q,k,v}.weight (.bias for qwen2)
**     blk.N.attn_{q,k}_norm.weight      layers.N.attn.{q,k}_norm.weight (qwen3)
**     blk.N.attn_output.weight   layers.N.attn.wo.weight
**     blk.N.ffn_norm.weight      layers.N.mlp_norm.weight
**     blk.N.ffn_{gate,up,down}.weight   layers.N.mlp.w{1,3,2}.weight
**     blk.N.post_attention_norm.weight  layers.N.attn.post_norm.weight (gemma2, gemma3)
**     blk.N.post_ffw_norm.weight        layers.N.mlp.post_norm.weight (gemma2, gemma3)
**
** A matrix of ne = {in, out} is laid out as PyTorch's (out, in), so F32, F16,
** BF16 and quantized weights (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K … Q6_K, the IQ and TQ types) are used in place from the
** file's mapping, in their own type (quantized rows are dequantized exactly,
** harness/core/half.c, as products read them). llama.cpp's converter permutes a `llama` model's q and k rows into
** interleaved rotary pairs (its "normal" rope), so such a file's native stack
** is rope with layout interleaved; `qwen2` and `qwen3` keep Hugging Face's
** halves (llama.cpp's "neox" rope): layout half. Writing them is
** gguf_export.c.
*/
#include "harness/engine/formats/gguf_model.h"
#include "harness/engine/formats/gguf_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/gguf.h"
#include "harness/core/half.h"
#include "harness/core/hashcache.h"
#include "harness/core/mapguard.h"
#include "harness/engine/model/arch.h"
#include "harness/engine/tokenizers/tokenizer.h"

const struct lx_gguf_family lx_gguf_families[LX_GGUF_N_FAMILIES] = {
    {"llama", 0, 0, 0, 0, 0, 0}, {"qwen2", 1, 0, 1, 0, 0, 0}, {"qwen3", 0, 1, 1, 0, 0, 0},
    {"phi3", 0, 0, 1, 1, 0, 0}, {"gemma", 0, 0, 1, 0, 1, 0}, {"gemma2", 0, 0, 1, 0, 2, 0}, {"gemma3", 0, 1, 1, 0, 3, 0},
    {"gptneox", 1, 0, 1, 1, 0, 1}, {"bloom", 1, 0, 0, 1, 0, 2}, {"mpt", 0, 0, 0, 1, 0, 3},
    {"falcon", 0, 0, 1, 1, 0, 4}, {"phi2", 1, 0, 1, 1, 0, 5},
};

/* The family of general.architecture, or NULL. */
static const struct lx_gguf_family *family_named(const char *arch)
{
    for (size_t k = 0; k < sizeof lx_gguf_families / sizeof *lx_gguf_families; k++)
        if (strcmp(arch, lx_gguf_families[k].name) == 0)
            return &lx_gguf_families[k];
    return NULL;
}

/* Gemma's block as llama.cpp runs a gemma, gemma2 or gemma3 file (its src/models/gemma{2,3}.cpp):
** embeddings times sqrt(width), GeGLU, the norms' 1 + w already in the file (its converter adds the
** 1); gemma2's and gemma3's post-norms and local layers, every attention.sliding_window_pattern-th
** layer global (gemma3: 6 when the key is absent, and local layers only with attention.sliding_window;
** gemma2: every other, over 4096 keys when absent; an array of one bool a layer, true for local, must be
** such a pattern), the local ones at rope.freq_base_swa (gemma3: 10000, gemma2: rope.freq_base when
** absent); gemma3's q/k norms; gemma2's soft-caps (attn_logit_softcapping 50, final_logit_softcapping
** 30 when absent), gemma3's final_logit_softcapping (none when absent); logits over sqrt(width / heads) for the 27B models (gemma2's 46 layers, gemma3's
** 62), over the head size otherwise. */
static int gemma_arch(const struct lx_gguf *g, const char *arch, int gemma, double rope_base, struct lx_arch *a,
                      struct lx_error *err)
{
    char key[128];
    int64_t swa = gemma == 2 ? 4096 : 0, every = gemma == 2 ? 2 : 6;
    double base = gemma == 2 ? rope_base : 10000, cap[2] = {50, gemma == 2 ? 30 : 0};
    a->mlp = LX_MLP_GEGLU, a->emb_scale = 1, a->post_norms = gemma >= 2;
    if (gemma == 1)
        return LX_OK;
    if (a->layers == (gemma == 2 ? 46 : 62) && a->d_model / a->heads != a->d_head)
        a->qk_dim = a->d_model / a->heads;
#define KEY(s) (snprintf(key, sizeof key, "%s.%s", arch, s), key)
    int rc = lx_gguf_get_int(g, KEY("attention.sliding_window"), 0, &swa, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_num(g, KEY("rope.freq_base_swa"), 0, &base, err);
    if (rc == LX_OK && gemma == 2)
        rc = lx_gguf_get_num(g, KEY("attn_logit_softcapping"), 0, &cap[0], err);
    if (rc == LX_OK)     /* gemma3's too (0 when absent), as llama.cpp reads it */
        rc = lx_gguf_get_num(g, KEY("final_logit_softcapping"), 0, &cap[1], err);
    if (rc == LX_OK && gemma == 2 && !(cap[0] > 0 && cap[0] < 1e6 && cap[1] > 0 && cap[1] < 1e6))
        return lx_err(err, LX_EINVAL, "%s: gemma2's soft-caps (attn %g, final %g) must be positive\n  hint: the file "
                      "is damaged", g->name, cap[0], cap[1]);
    if (rc == LX_OK && gemma == 3 && !(cap[1] >= 0 && cap[1] < 1e6))
        return lx_err(err, LX_EINVAL, "%s: gemma3's final_logit_softcapping %g must be 0 (none) or positive\n  hint: "
                      "the file is damaged", g->name, cap[1]);
    a->attn_softcap = gemma == 2 ? cap[0] : 0.0, a->logit_softcap = cap[1];
    const struct lx_gguf_kv *p = lx_gguf_find(g, KEY("attention.sliding_window_pattern"));
#undef KEY
    if (rc < 0 || swa <= 0)
        return rc;
    if (p && p->type == LX_GGUF_ARRAY) {     /* one bool a layer, true for a local one */
        long n = p->arr_type == LX_GGUF_BOOL && p->arr_n == (uint64_t)a->layers ? a->layers : 0, at = -1;
        unsigned char global[LX_FMT_MAX_LAYERS];     /* read_arch holds block_count to it */
        for (long l = 0; l < n; l++)
            global[l] = !p->arr[l];
        every = n ? lx_local_pattern(global, n, &at) : 0;
        if (!every || at >= 0)
            return lx_err(err, LX_EINVAL, "%s: %s is not one bool a layer with every k-th layer global (false)\n  "
                          "hint: lenx runs Gemma 3's pattern of local layers, every k-th global", g->name, key);
    } else if (p && (rc = lx_gguf_get_int(g, key, 0, &every, err)) < 0) {
        return rc;
    }
    if (every < 1 || every > 64 || swa > (1L << 30) || !(base > 1))
        return lx_err(err, LX_EINVAL, "%s: %s's local layers (sliding_window %lld, pattern %lld, rope.freq_base_swa %g) "
                      "are not a model lenx can hold\n  hint: the file is damaged", g->name, arch, (long long)swa,
                      (long long)every, base);
    a->local_every = every, a->local_window = swa, a->local_base = base;
    return LX_OK;
}

/* GPT-NeoX's, BLOOM's, MPT's, Falcon's and Phi-2's blocks as llama.cpp runs a gptneox, bloom, mpt, falcon
** or phi2 file (src/models/gptneox.cpp, bloom.cpp, mpt.cpp, falcon.cpp, phi2.cpp): LayerNorms, GELU's tanh
** form (ggml_gelu; llama.cpp reads it through an fp16 table, lenx computes it), gptneox's and bloom's
** shifts and biases, gptneox's use_parallel_residual (true when absent), bloom's LayerNorm of the
** embedding rows (token_embd_norm), falcon's shifts without biases and its parallel block, under one
** norm unless the file has attn_norm_2 (Falcon-40B's), phi2's biases (the logits' too, output.bias) and
** parallel block under one norm; an mpt file with what llama.cpp adds to MPT's block (biases,
** clamp_kqv, position embeddings) refused. */
static int neox_arch(const struct lx_gguf *g, const char *arch, int kind, struct lx_arch *a, struct lx_error *err)
{
    char key[128];
    int64_t par = 1;
    double clamp = 0;
    snprintf(key, sizeof key, "%s.use_parallel_residual", arch);
    int rc = kind == 1 ? lx_gguf_get_int(g, key, 0, &par, err) : LX_OK;
    a->norm = LX_NORM_LAYER, a->mlp = LX_MLP_GELU;
    a->parallel = (kind == 1 && par) || kind >= 4, a->emb_norm = kind == 2;
    a->norm_bias = kind == 4, a->bias = a->qkv_bias = kind == 1 || kind == 2 || kind == 5, a->head_bias = kind == 5;
    a->shared_norm = kind == 5 || (kind == 4 && !lx_gguf_tensor(g, "blk.0.attn_norm_2.weight"));
    if (rc == LX_OK && kind == 3)
        rc = lx_gguf_get_num(g, "mpt.attention.clamp_kqv", 0, &clamp, err);
    const char *extra = kind != 3 ? NULL : clamp > 0 ? "mpt.attention.clamp_kqv" :
                        lx_gguf_tensor(g, "blk.0.attn_norm.bias") ? "blk.0.attn_norm.bias" :
                        lx_gguf_tensor(g, "position_embd.weight") ? "position_embd.weight" : NULL;
    if (rc == LX_OK && extra)
        rc = lx_err(err, LX_EINVAL, "%s: %s: an MPT with %s, which lenx's MPT block does not run\n  hint: MPT-7B and "
                    "MPT-30B have none", g->name, extra, clamp > 0 ? "q, k and v clipped" : "biases or learned "
                    "positions");
    return rc;
}

/* The arch from the metadata: LX_EINVAL naming the file and key. */
static int read_arch(const struct lx_gguf *g, const char *arch, struct lx_arch *a, long *train_len, double *base,
                     struct lx_error *err)
{
    char key[128];
    int64_t layers = 0, C = 0, F = 0, H = 0, KV = 0, D = 0, Dv = 0, rope_dims = 0, ctx = 0;
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
    if (rc == LX_OK)    /* gptneox's and bloom's LayerNorms */
        rc = lx_gguf_get_num(g, KEY("attention.layer_norm_epsilon"), 0, &eps, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_num(g, KEY("rope.freq_base"), 0, base, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_int(g, KEY("context_length"), 1, &ctx, err);
    D = H > 0 && C % H == 0 ? C / H : 0;
    if (rc == LX_OK)
        rc = lx_gguf_get_int(g, KEY("attention.key_length"), 0, &D, err);
    Dv = D;
    if (rc == LX_OK)
        rc = lx_gguf_get_int(g, KEY("attention.value_length"), 0, &Dv, err);
    rope_dims = D;
    if (rc == LX_OK)
        rc = lx_gguf_get_int(g, KEY("rope.dimension_count"), 0, &rope_dims, err);
#undef KEY
    if (rc < 0)
        return rc;
    if (layers < 1 || layers > LX_FMT_MAX_LAYERS || C < 2 || C > 65536 || F < 1 || F > 1 << 20 || H < 1 ||
        H > 1024 || KV < 1 || H % KV || D < 2 || D > 512 || D % 2 || ctx < 1 || ctx > 1L << 24 || !(eps > 0 && eps < 1) || !(*base > 1))
        return lx_err(err, LX_EINVAL, "%s: the %s metadata (block_count %lld, embedding_length %lld, "
                      "feed_forward_length %lld, head_count %lld, head_count_kv %lld, key_length %lld, context_length "
                      "%lld, rms eps %g, rope.freq_base %g) is not a model lenx can hold\n  hint: the file is damaged",
                      g->name, arch, (long long)layers, (long long)C, (long long)F, (long long)H, (long long)KV,
                      (long long)D, (long long)ctx, eps, *base);
    if (Dv != D)
        return lx_err(err, LX_EINVAL, "%s: %s.attention.value_length is %lld, not key_length %lld: lenx's heads have "
                      "one size for keys and values\n  hint: the file is damaged, or its model's value heads differ in size from its "
                      "key heads (DeepSeek's latent attention), which lenx does not run", g->name, arch, (long long)Dv,
                      (long long)D);
    const struct lx_gguf_family *fam = family_named(arch);
    if (rope_dims != D && (!fam->half || rope_dims < 2 || rope_dims > D || rope_dims % 2))
        return lx_err(err, LX_EINVAL, "%s: %s.rope.dimension_count is %lld, %s the head size %lld%s\n  hint: the file is "
                      "damaged", g->name, arch, (long long)rope_dims, fam->half ? "not an even count up to" : "not",
                      (long long)D, fam->half ? "" : " (llama.cpp's llama turns whole heads)");
    lx_params_defaults(&lx_arch_schema, a);
    a->mode = LX_MODEL_CAUSAL, a->layers = layers, a->d_model = C, a->heads = H, a->d_head = D;
    a->d_mlp = F, a->mlp = LX_MLP_SWIGLU, a->norm_eps = eps, a->kv_heads = KV == H ? 0 : KV;
    a->qkv_bias = fam->qkv_bias, a->qk_norm = fam->qk_norm;
    *train_len = (long)ctx;
    if (fam->neox)
        return neox_arch(g, arch, fam->neox, a, err);
    return fam->gemma ? gemma_arch(g, arch, fam->gemma, *base, a, err) : LX_OK;
}

/* The llama3 method whose frequencies rope_freqs.weight divides by (llama.cpp's converter
** writes Llama 3.1's rope_scaling so): its scale is the largest factor; the pairs strictly
** between 1 and it lie on llama3's ramp, sm = (1/f − 1/s)/(1 − 1/s) = L/λ/(hf − lf) − lf/(hf
** − lf), a line in 1/λ (ramp_line); L is orig (any L gives the same bands), and
** every factor recomputed must be the file's to 1e-5. *has = 0 when every factor is 1. */
struct llama3_fit {
    double scale, low, high;
    long original;
};

/* The ramp sm = a·x − b over x = 1/λ, from the sums over its m pairs (x, y = sm): with two or more,
** least squares; with one, a line through it steep enough to reach 1 before the longest kept
** wavelength lo_keep (0: none) and 0 after the shortest scaled one hi_scaled (1e300: none): every such
** line gives every pair its factor, so one pair does not fix the ramp, but any of them reads the file;
** with none, a step between the two. */
static void ramp_line(long m, double sx, double sy, double sxx, double sxy, double lo_keep, double hi_scaled,
                      double *a, double *b)
{
    if (m >= 2) {
        *a = (m * sxy - sx * sy) / (m * sxx - sx * sx), *b = (*a * sx - sy) / m;
    } else if (m == 1) {
        double x_keep = lo_keep > 0 ? 1 / lo_keep : INFINITY, x_scaled = 1 / hi_scaled;
        double to_one = (1 - sy) / (x_keep - sx), to_zero = sy / (sx - x_scaled);
        *a = 1.001 * (to_one > to_zero ? to_one : to_zero), *b = *a * sx - sy;
    } else {
        double w1 = lo_keep > 0 ? lo_keep * 1.0001 : hi_scaled * 0.5, w0 = hi_scaled * 0.9999;
        *a = 1 / (1 / w1 - 1 / w0), *b = *a / w0;
    }
}

static int fit_llama3(const struct lx_gguf *g, const struct lx_gguf_tensor *t, double base, long D, long orig,
                      struct llama3_fit *fit, int *has, struct lx_error *err)
{
    long n = D / 2, m = 0;
    *has = 0;
    if (t->type != LX_GGML_F32 || t->n_elems != (uint64_t)n)
        return lx_err(err, LX_EINVAL, "%s: tensor 'rope_freqs.weight' must be %ld F32 factors (one per rotary pair)",
                      g->name, n);
    double f[512], lam[512], s = 1, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (long k = 0; k < n && k < 512; k++) {
        float v;
        memcpy(&v, t->data + 4 * k, 4);
        f[k] = v, lam[k] = 2 * acos(-1.0) * pow(base, 2.0 * (double)k / (double)D), s = f[k] > s ? f[k] : s;
    }
    if (n > 512 || !(s < 1e6))
        return lx_err(err, LX_EINVAL, "%s: tensor 'rope_freqs.weight' is not a rescaling lenx reads", g->name);
    if (s <= 1 + 1e-6)
        return LX_OK;
    double lo_keep = 0, hi_scaled = 1e300;  /* the longest kept and the shortest fully scaled wavelength */
    for (long k = 0; k < n; k++) {
        if (f[k] <= 1 + 1e-6) {
            lo_keep = lam[k] > lo_keep ? lam[k] : lo_keep;
        } else if (f[k] >= s * (1 - 1e-6)) {
            hi_scaled = lam[k] < hi_scaled ? lam[k] : hi_scaled;
        } else {
            double x = 1 / lam[k], y = (1 / f[k] - 1 / s) / (1 - 1 / s);
            sx += x, sy += y, sxx += x * x, sxy += x * y, m++;
        }
    }
    double a, b;    /* sm = a/λ − b */
    ramp_line(m, sx, sy, sxx, sxy, lo_keep, hi_scaled, &a, &b);
    fit->scale = s, fit->original = orig;
    fit->low = b * (double)orig / a, fit->high = fit->low + (double)orig / a;
    int bad = 0;
    for (long k = 0; k < n && !bad; k++) {
        double want = lx_llama3_factor(s, (double)orig, fit->low, fit->high, lam[k]);
        bad = fabs(want - f[k]) > 1e-5 * f[k];
    }
    if (bad || !(a > 0) || !(fit->low > 0))
        return lx_err(err, LX_EINVAL, "%s: tensor 'rope_freqs.weight' holds per-pair factors that are not Llama 3's "
                      "rescaling (llama3: 1, a ramp, then the scale)\n  hint: lenx reads the factors llama.cpp's "
                      "converter writes for rope_type llama3", g->name);
    *has = 1;
    return LX_OK;
}

/* The native stack: rope at the file's base, in llama.cpp's layout for the
** architecture, then rope.scaling as the method it is (linear: pi, yarn:
** yarn, both trained in; llama.cpp reads a missing type as linear). */
/* The channels of a head rope turns: rope.dimension_count (read_arch checked it), else all of them. */
static long rot_dims(const struct lx_gguf *g, const char *arch, const struct lx_arch *a)
{
    char key[128];
    int64_t R = a->d_head;
    struct lx_error sub;
    snprintf(key, sizeof key, "%s.rope.dimension_count", arch);
    return lx_gguf_get_int(g, key, 0, &R, &sub) == LX_OK ? (long)R : a->d_head;
}

/* Phi-3's LongRoPE (llama.cpp's phi3: tensors rope_factors_long/short.weight, one F32 factor per
** rotary pair, and rope.scaling.attn_factor) as the longrope method trained in: s = context_length
** / original_context_length. 0 and nothing written when the file has no factors (Phi-3-mini-4k). */
static int longrope_of(const struct lx_gguf *g, const struct lx_arch *a, long train_len, int64_t orig, double attn,
                       struct lx_buf *stack, struct lx_error *err)
{
    static const char *const names[2] = {"rope_factors_long.weight", "rope_factors_short.weight"};
    const struct lx_gguf_tensor *t[2] = {lx_gguf_tensor(g, names[0]), lx_gguf_tensor(g, names[1])};
    long pairs = rot_dims(g, "phi3", a) / 2;     /* only phi3 files have the factors */
    if (!t[0] && !t[1])
        return LX_OK;
    if (orig < 1 || orig >= train_len)
        return lx_err(err, LX_EINVAL, "%s: rope.scaling.original_context_length %lld is not below context_length %ld, "
                      "as LongRoPE's factors need\n  hint: the file is damaged", g->name, (long long)orig, train_len);
    struct lx_floats l[2];
    for (int k = 0; k < 2; k++) {
        if (!t[k] || t[k]->type != LX_GGML_F32 || t[k]->n_elems != (uint64_t)pairs || pairs > LX_MAX_FLOATS)
            return lx_err(err, LX_EINVAL, "%s: tensor '%s' must be %ld F32 factors (one per rotary pair), as "
                          "LongRoPE's other list is\n  hint: the file is damaged", g->name, names[k], pairs);
        for (long i = 0; i < pairs; i++) {
            float v;
            memcpy(&v, t[k]->data + 4 * i, 4);
            if (!(v > 0 && v <= 1e12))
                return lx_err(err, LX_EINVAL, "%s: tensor '%s' holds %g at %ld: a factor must be in (0, 1e12]\n"
                              "  hint: the file is damaged", g->name, names[k], (double)v, i);
            l[k].v[i] = v;
        }
        l[k].n = (int)pairs;
    }
    lx_stack_put_longrope(stack, (double)train_len / (double)orig, (long)orig, &l[0], &l[1], attn);
    return LX_OK;
}

static int read_stack(const struct lx_gguf *g, const char *arch, const struct lx_gguf_family *fam, const struct lx_arch *a,
                      double base, long train_len, struct lx_buf *stack, struct lx_error *err)
{
    char key[128], type[32] = "";
    double factor = 1, attn = 1, fast = 32, slow = 1;
    int64_t orig = train_len, swa = 0;
#define KEY(s) (snprintf(key, sizeof key, "%s.%s", arch, s), key)
    lx_gguf_get_str(g, KEY("rope.scaling.type"), type, sizeof type);
    int rc = lx_gguf_get_num(g, KEY("rope.scaling.factor"), 0, &factor, err);
    if (rc == LX_OK && !lx_gguf_find(g, key))
        rc = lx_gguf_get_num(g, KEY("rope.scale_linear"), 0, &factor, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_int(g, KEY("rope.scaling.original_context_length"), 0, &orig, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_num(g, KEY("rope.scaling.attn_factor"), 0, &attn, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_num(g, KEY("rope.scaling.yarn_beta_fast"), 0, &fast, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_num(g, KEY("rope.scaling.yarn_beta_slow"), 0, &slow, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_int(g, KEY("attention.sliding_window"), 0, &swa, err);
    if (rc == LX_OK && swa > 0 && swa < train_len && !fam->gemma)     /* gemma3's: its local layers' */
        rc = lx_err(err, LX_EINVAL, "%s: %s is %lld, inside the model's %ld positions: a sliding window is not part of "
                    "lenx's native stacks\n  hint: evaluate such a model with the `window` method", g->name, key,
                    (long long)swa, train_len);
#undef KEY
    if (rc < 0)
        return rc;
    if (strcmp(type, "none") != 0 && strcmp(type, "linear") != 0 && strcmp(type, "yarn") != 0 && type[0])
        return lx_err(err, LX_EINVAL, "%s: %s.rope.scaling.type is '%s'; lenx reads none, linear (pi) and yarn\n"
                      "  hint: lenx reads LongRoPE from a phi3 file's rope_factors_long/short tensors", g->name, arch, type);
    if (strcmp(type, "none") != 0 && factor != 0 && factor != 1 && !(factor > 1 && factor < 1e6 && orig >= 1 &&
                                                                     attn > 0 && fast > 0 && slow > 0))
        return lx_err(err, LX_EINVAL, "%s: %s.rope.scaling (factor %g, original_context_length %lld, attn_factor %g) "
                      "is not a rescaling lenx can run\n  hint: the file is damaged", g->name, arch, factor,
                      (long long)orig, attn);
    const struct lx_gguf_tensor *freqs = lx_gguf_tensor(g, "rope_freqs.weight");
    struct llama3_fit fit;
    int l3 = 0;
    if (freqs && (rc = fit_llama3(g, freqs, base, a->d_head, (long)orig, &fit, &l3, err)) < 0)
        return rc;
    lx_buf_puts(stack, "[{\"rope\":{\"base\":");
    lx_buf_num(stack, base);
    lx_buf_printf(stack, ",\"layout\":\"%s\"", fam->half ? "half" : "interleaved");
    long R = rot_dims(g, arch, a);
    if (R < a->d_head)      /* a partial rotary (Phi-4-mini) */
        lx_buf_printf(stack, ",\"dims\":%ld", R);
    lx_buf_puts(stack, "}}");
    if (fam->fused && (rc = longrope_of(g, a, train_len, orig, attn, stack, err)) < 0)
        return rc;
    if (strcmp(type, "none") != 0 && factor > 1 && strcmp(type, "yarn") != 0) {
        lx_buf_puts(stack, ",{\"pi\":{\"scale\":");
        lx_buf_num(stack, factor);
        lx_buf_puts(stack, ",\"train\":true}}");
    } else if (strcmp(type, "yarn") == 0 && factor > 1) {
        lx_buf_puts(stack, ",{\"yarn\":{\"scale\":");
        lx_buf_num(stack, factor);
        lx_buf_printf(stack, ",\"original\":%lld,\"beta_fast\":", (long long)orig);
        lx_buf_num(stack, fast);
        lx_buf_puts(stack, ",\"beta_slow\":");
        lx_buf_num(stack, slow);
        lx_buf_puts(stack, ",\"attn_factor\":");
        lx_buf_num(stack, attn);
        lx_buf_puts(stack, ",\"train\":true}}");
    }
    if (l3) {
        lx_buf_puts(stack, ",{\"llama3\":{\"scale\":");
        lx_buf_num(stack, fit.scale);
        lx_buf_printf(stack, ",\"original\":%ld,\"low_freq_factor\":", fit.original);
        lx_buf_num(stack, fit.low);
        lx_buf_puts(stack, ",\"high_freq_factor\":");
        lx_buf_num(stack, fit.high);
        lx_buf_puts(stack, ",\"train\":true}}");
    }
    lx_buf_puts(stack, "]");
    return LX_OK;
}

void lx_gguf_tensor_name(const char *lenx, char *out, size_t n)
{
    static const char *const map[][2] = {
        {"attn_norm.weight", "attn_norm.weight"}, {"attn.wq.weight", "attn_q.weight"},
        {"attn.wk.weight", "attn_k.weight"},      {"attn.wv.weight", "attn_v.weight"},
        {"attn.wq.bias", "attn_q.bias"},          {"attn.wk.bias", "attn_k.bias"},
        {"attn.wv.bias", "attn_v.bias"},          {"attn.wo.weight", "attn_output.weight"},
        {"attn.q_norm.weight", "attn_q_norm.weight"}, {"attn.k_norm.weight", "attn_k_norm.weight"},
        {"mlp_norm.weight", "ffn_norm.weight"},   {"mlp.w1.weight", "ffn_gate.weight"},
        {"mlp.w3.weight", "ffn_up.weight"},       {"mlp.w2.weight", "ffn_down.weight"},
        {"attn.post_norm.weight", "post_attention_norm.weight"}, {"mlp.post_norm.weight", "post_ffw_norm.weight"},
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
        {LX_GGML_Q4_1, LX_DT_Q4_1}, {LX_GGML_Q5_0, LX_DT_Q5_0}, {LX_GGML_Q5_1, LX_DT_Q5_1}, {LX_GGML_Q2_K, LX_DT_Q2_K},
        {LX_GGML_Q3_K, LX_DT_Q3_K}, {LX_GGML_IQ4_NL, LX_DT_IQ4_NL}, {LX_GGML_IQ4_XS, LX_DT_IQ4_XS},
        {LX_GGML_IQ2_XXS, LX_DT_IQ2_XXS}, {LX_GGML_IQ2_XS, LX_DT_IQ2_XS}, {LX_GGML_IQ2_S, LX_DT_IQ2_S},
        {LX_GGML_IQ3_XXS, LX_DT_IQ3_XXS}, {LX_GGML_IQ3_S, LX_DT_IQ3_S}, {LX_GGML_IQ1_S, LX_DT_IQ1_S},
        {LX_GGML_IQ1_M, LX_DT_IQ1_M}, {LX_GGML_TQ1_0, LX_DT_TQ1_0}, {LX_GGML_TQ2_0, LX_DT_TQ2_0},
    };
    for (size_t k = 0; k < sizeof map / sizeof *map; k++)
        if (map[k][0] == ggml)
            return map[k][1];
    return -1;
}

/* gptneox's, bloom's, mpt's and falcon's name of lenx tensor `lenx` into out: q, k and v (weights and
** biases) are rows of attn_qkv (from *row0, of *all), w1 is ffn_up, and the biases', the embedding
** norm's names; Falcon-40B's attention reads attn_norm_2, its MLP attn_norm (llama.cpp's names of
** ln_attn and ln_mlp). */
static void neox_name(const struct lx_arch *a, int fused, const char *lenx, char *out, size_t n, long *row0,
                      long *all)
{
    static const char *const map[][2] = {
        {"attn_norm.bias", "attn_norm.bias"}, {"attn.wo.bias", "attn_output.bias"}, {"mlp_norm.bias", "ffn_norm.bias"},
        {"mlp.w1.weight", "ffn_up.weight"},   {"mlp.w1.bias", "ffn_up.bias"},       {"mlp.w2.bias", "ffn_down.bias"},
    };
    long l, HD = a->heads * a->d_head, KD = lx_arch_kv(a) * a->d_head;
    int at = 0;
    if (a->norm_bias && !a->shared_norm && sscanf(lenx, "layers.%ld.%n", &l, &at) == 1 && at) {   /* Falcon-40B */
        int attn = strncmp(lenx + at, "attn_norm.", 10) == 0, mlp = strncmp(lenx + at, "mlp_norm.", 9) == 0;
        if (attn || mlp) {
            snprintf(out, n, "blk.%ld.%s.%s", l, attn ? "attn_norm_2" : "attn_norm", lenx + at + (attn ? 10 : 9));
            return;
        }
    }
    if (strncmp(lenx, "emb_norm.", 9) == 0 || strcmp(lenx, "norm.bias") == 0) {
        snprintf(out, n, "%s", lenx[0] == 'e' ? (lenx[9] == 'w' ? "token_embd_norm.weight" : "token_embd_norm.bias")
                                              : "output_norm.bias");
        return;
    }
    if (strcmp(lenx, "lm_head.bias") == 0) {
        snprintf(out, n, "output.bias");
        return;
    }
    if (fused && sscanf(lenx, "layers.%ld.attn.w%n", &l, &at) == 1 && at && lenx[at] && strchr("qkv", lenx[at]) &&
        lenx[at + 1] == '.') {
        snprintf(out, n, "blk.%ld.attn_qkv.%s", l, lenx + at + 2);
        *row0 = lenx[at] == 'q' ? 0 : lenx[at] == 'k' ? HD : HD + KD, *all = lx_arch_qkv(a);
        return;
    }
    if (sscanf(lenx, "layers.%ld.%n", &l, &at) == 1 && at)
        for (size_t k = 0; k < sizeof map / sizeof *map; k++)
            if (strcmp(lenx + at, map[k][0]) == 0) {
                snprintf(out, n, "blk.%ld.%s", l, map[k][1]);
                return;
            }
    lx_gguf_tensor_name(lenx, out, n);
}

/* bloom's and mpt's native stack: ALiBi at llama.cpp's 8 (bloom) or mpt.attention.max_alibi_bias, which
** must be positive (llama.cpp runs a file without it with no positions at all). */
static int alibi_stack(const struct lx_gguf *g, int kind, struct lx_buf *stack, struct lx_error *err)
{
    double m = kind == 2 ? 8 : 0;
    int rc = kind == 3 ? lx_gguf_get_num(g, "mpt.attention.max_alibi_bias", 0, &m, err) : LX_OK;
    if (rc == LX_OK && !(m > 0 && m < 1e3))
        return lx_err(err, LX_EINVAL, "%s: mpt.attention.max_alibi_bias is %g: no ALiBi (llama.cpp would run the "
                      "model without positions)\n  hint: an MPT file from llama.cpp's converter of an ALiBi model "
                      "holds alibi_bias_max (8)", g->name, m);
    lx_buf_puts(stack, "[{\"alibi\":{\"max_bias\":");
    lx_buf_num(stack, m);
    lx_buf_puts(stack, "}}]");
    return rc;
}

/* Every tensor lenx's arch has, found, shaped and typed as it must be, used in place. */
static int hold(struct lx_model *m, const struct lx_arch *a, const struct lx_gguf_family *fam, const struct lx_gguf *g,
                const char *path, const unsigned char *bytes, size_t n, char dtype[16], struct lx_error *err)
{
    char past[32];      /* a block past block_count: the model the file holds is not the one its metadata says */
    snprintf(past, sizeof past, "blk.%ld.", a->layers);
    for (long k = 0; k < g->n_t; k++)
        if (strncmp(g->t[k].name, past, strlen(past)) == 0)
            return lx_err(err, LX_EINVAL, "%s: tensor '%s' is of block %ld, but the metadata's block_count is %ld\n"
                          "  hint: the file holds more blocks than its metadata says: the metadata was edited, or the "
                          "file is damaged", path, g->t[k].name, a->layers, a->layers);
    int nt = lx_arch_tensors(a, NULL), rc = LX_OK, first = -1, mixed = 0;
    struct lx_tensor_info *ti = lx_xcalloc((size_t)nt, sizeof *ti);
    struct lx_held *held = lx_xcalloc(1, sizeof *held);
    lx_arch_tensors(a, ti);
    held->t = lx_xcalloc((size_t)nt, sizeof *held->t);
    int fused_qkv = lx_gguf_tensor(g, "blk.0.attn_qkv.weight") != NULL;    /* q|k|v in one tensor, or three */
    for (int i = 0; i < nt && rc == LX_OK; i++) {
        char name[96];
        long l, row0 = 0, all = ti[i].shape[0];
        int which;
        if (fam->neox)
            neox_name(a, fused_qkv, ti[i].name, name, sizeof name, &row0, &all);
        else if (fam->fused && lx_fused_part(a, ti[i].name, &l, &which, &row0, &all))     /* a block of rows */
            snprintf(name, sizeof name, "blk.%ld.%s", l, which ? "ffn_up.weight" : "attn_qkv.weight");
        else
            lx_gguf_tensor_name(ti[i].name, name, sizeof name);
        const struct lx_gguf_tensor *t = lx_gguf_tensor(g, name);
        uint64_t rows = (uint64_t)all, cols = ti[i].ndim == 2 ? (uint64_t)ti[i].shape[1] : 1;
        if (!t) {
            rc = lx_err(err, LX_EINVAL, "%s: tensor '%s' is missing\n  hint: the file is not a %s model llama.cpp's "
                        "converters wrote", path, name, fam->name);
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
            size_t row = lx_dtype_bytes(dt, (size_t)cols);     /* a row is whole blocks (ne[0] = cols) */
            const unsigned char *p = t->data + (size_t)row0 * row;
            held->t[i] = (struct lx_wmat){p, dt, 0, NULL, 0};
            lx_mapguard_add(p, (size_t)ti[i].shape[0] * row, path, name);
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
    if (!family_named(arch))
        rc = lx_err(err, LX_EINVAL, "%s: general.architecture is '%s'; lenx reads llama, qwen2, qwen3, phi3, gemma, "
                    "gemma2, gemma3, gptneox, bloom, mpt, falcon and phi2 GGUF models", path, arch);
    if (rc == LX_OK)
        rc = read_arch(&g, arch, &a, &train_len, &base, err);
    const struct lx_gguf_tensor *emb = rc == LX_OK ? lx_gguf_tensor(&g, "token_embd.weight") : NULL;
    if (rc == LX_OK && (!emb || emb->n_dims != 2 || emb->ne[0] != (uint64_t)a.d_model || emb->ne[1] < 2 ||
                        emb->ne[1] > 1000000))
        rc = lx_err(err, LX_EINVAL, "%s: token_embd.weight is missing, or not (vocab, %ld)", path, a.d_model);
    struct lx_buf stack = {0};
    if (rc == LX_OK && (family_named(arch)->neox == 2 || family_named(arch)->neox == 3))     /* bloom's ALiBi at
                                                                        ** 8 (llama.cpp's), mpt's the file's */
        rc = alibi_stack(&g, family_named(arch)->neox, &stack, err);
    else if (rc == LX_OK)
        rc = read_stack(&g, arch, family_named(arch), &a, base, train_len, &stack, err);
    if (rc == LX_OK) {
        a.vocab = (long)emb->ne[1];
        a.tie_head = lx_gguf_tensor(&g, "output.weight") == NULL;
        lx_params_finish(&lx_arch_schema, &a);
        rc = hold(m, &a, family_named(arch), &g, path, bytes, n, dtype, err);
    }
    if (rc == LX_OK)
        bytes = NULL;   /* m's now */
    if (rc == LX_OK && info) {
        lx_ckpt_info_native(info, "gguf", dtype);
        info->stack = lx_xstrdup(lx_buf_str(&stack));
        info->train_len = train_len;
        info->kv_heads = lx_arch_kv(&a);
        info->tied = a.tie_head;
        char tk[32], lenx_tk[16];   /* its own tokenizer, read from the file itself (tokenizers/tok_gguf.c), */
        lx_gguf_get_str(&g, "tokenizer.ggml.model", tk, sizeof tk);     /* or lenx's byte tokenizer */
        lx_gguf_get_str(&g, "lenx.tokenizer", lenx_tk, sizeof lenx_tk);
        info->tokenizer = tk[0] && strcmp(lenx_tk, "bytes") != 0 ? lx_xstrdup(path) : NULL;
        if (lx_hashcache_file_sha256(path, n, info->sha256) < 0)
            rc = lx_err(err, LX_EIO, "%s: the file changed while it was loaded (it is no longer %zu bytes)\n"
                        "  hint: load it again once nothing writes it", path, n);
        if (rc == LX_OK)
            lx_model_weights_hash_of(m, "gguf", info->sha256, info->weights_sha256);
    }
    lx_gguf_release(&g);
    lx_buf_free(&stack);
    if (bytes)
        lx_unmap_file(bytes, n);
    if (rc < 0)
        lx_model_release(m);
    return rc;
}

const struct lx_model_format lx_model_format_gguf = {
    .name = "gguf",
    .summary = "a llama.cpp GGUF file (llama, qwen2, qwen3, phi3, gemma, gemma2, gemma3, gptneox, bloom, mpt, "
               "falcon, phi2; F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K-Q6_K, IQ1_S-IQ4_XS, TQ1_0, TQ2_0 "
               "weights)",
    .key = NULL,
    .dir = 0,
    .sniff = lx_gguf_file,
    .load = load_gguf,
};
