/*
** tests/hf_tiny.h - the tiny random Hugging Face directories of the torch reference scripts
** (tests/ref/gemma_ref.py, mpt_ref.py: DIR/{config.json, model.safetensors, ref.json}) through lenx:
** both windows of ref.json against torch's float64 forward, decoding by the KV cache against the
** full forward, the backward against torch's autograd. Header-only; include after
** loaders_fixture.h (in_repo, load, the scratch dir).
*/
#ifndef LX_HF_TINY_H
#define LX_HF_TINY_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/json.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/model/decoding.h"
#include "harness/engine/model/kvcache.h"
#include "tests/stack.h"
#include "tests/torch_window.h"

/* Both windows of a reference script's ref.json (32 tokens, then 48) through m: within 1e-4 of
** torch's float64 forward per token and per logit (fp32 sums against float64). */
static inline void windows_vs_torch(const struct lx_model *m, const char *stack, const struct lx_json *doc,
                                    const char *who)
{
    for (int w = 0; w < 2; w++) {
        double dnll, dlogit;
        torch_window(m, stack, doc, w, w ? 48 : 32, &dnll, &dlogit);
        cr_log_info("%s, window %d: max |dNLL| %.3g, max |dlogit| %.3g", who, w, dnll, dlogit);
        cr_expect(dnll < 1e-4 && dlogit < 1e-4, "%s, window %d: max |dNLL| %g, max |dlogit| %g", who, w, dnll,
                  dlogit);
    }
}

static inline struct lx_json *ref_of(const char *rel)
{
    char path[512];
    struct lx_json *doc;
    struct lx_error err = {{0}};
    in_repo(path, rel);
    cr_assert_eq(lx_json_load(&doc, path, 1 << 20, &err), LX_OK, "%s", err.msg);
    return doc;
}

/* The tiny directory tests/ref/NAME (gemma_ref.py) loaded into m and info; its ref.json, which the
** caller frees. */
static inline struct lx_json *tiny(const char *name, struct lx_model *m, struct lx_ckpt_info *info)
{
    char rel[128], path[512];
    snprintf(rel, sizeof rel, "tests/ref/%s", name);
    in_repo(path, rel);
    load(m, info, path);
    snprintf(rel, sizeof rel, "tests/ref/%s/ref.json", name);
    return ref_of(rel);
}

/* A copy of the tiny directory tests/ref/NAME as the scratch dir's SUB (its path into out, 512 bytes) with
** sed program `sed` run on its config.json, which it must change. */
static inline void tiny_copy(const char *name, const char *sub, const char *sed, char *out)
{
    char rel[128], src[512], cmd[4096];
    snprintf(rel, sizeof rel, "tests/ref/%s", name);
    in_repo(src, rel);
    snprintf(out, 512, "%s/%s", dir, sub);
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s && cp %s/* %s/ && sed -i '%s' %s/config.json && ! cmp -s "
             "%s/config.json %s/config.json", out, out, src, out, sed, out, src, out);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* Decoding the tiny directory src by the KV cache (Gemma 3 and 2: each layer at its own rope row and
** window, Gemma 2's soft-caps on the step's row; MPT: ALiBi's distances, LayerNorms) gives each step the
** logits of the full forward's row: an fp32 cache to 1e-4 (fp32 sums in another order; measured 6.8e-6),
** a bf16 one within its rounding of k and v (2^-9 relative each, as tests/test_half.c's
** bf16_kv_cache_decodes_within_its_rounding derives; measured 0.032 through Gemma 3's six layers, 0.017
** through Gemma 2's four, where its two layers gave 0.019): the bound is 0.1, three times the larger,
** since the rounding is of the same values on any machine. */
static inline void decoding_vs_full(const char *src)
{
    enum { T = 40, P0 = 5 };
    char path[512];
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_error err = {{0}};
    in_repo(path, src);
    load(&m, &info, path);
    struct tstack s;
    struct lx_facts f = tfacts((int)m.arch.d_head, 128, (int)m.arch.heads, T);
    tstack_make(&s, info.stack, &f);
    long V = m.arch.vocab;
    int tok[T];
    for (int t = 0; t < T; t++)
        tok[t] = 3 + (t * 37) % (int)(V - 3);
    for (int bf16 = 0; bf16 < 2; bf16++) {
        struct lx_acts full, pre;
        struct lx_kvcache c;
        lx_kv_set(bf16);
        cr_assert_eq(lx_acts_alloc(&full, &m.arch, 1, T, 0, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(lx_acts_alloc(&pre, &m.arch, 1, P0, 0, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(lx_kvcache_alloc(&c, &m.arch, &s.spec, 1, T, &err), LX_OK, "%s", err.msg);
        lx_model_forward(&m, &s.spec, tok, NULL, &full);
        pre.kv = &c;
        lx_model_forward(&m, &s.spec, tok, NULL, &pre);
        float *lg = malloc(sizeof(float) * (size_t)V);
        double worst = 0;
        for (int p = P0; p < T; p++) {
            lx_decode_step(lg, &m, &s.spec, &c, 0, p, tok[p]);
            for (long v = 0; v < V; v++)
                worst = fmax(worst, fabs(lg[v] - full.logits[(long)p * V + v]));
        }
        cr_log_info("%s decode, bf16 cache %d: max |dlogit| %.3g", src, bf16, worst);
        cr_expect_leq(worst, bf16 ? 0.1 : 1e-4, "%s, bf16 cache %d: max |dlogit| %g", src, bf16, worst);
        free(lg);
        lx_kvcache_release(&c);
        lx_acts_release(&full);
        lx_acts_release(&pre);
    }
    lx_kv_set(0);
    tstack_free(&s);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* The gradient of the first window's mean NLL, lenx's backward (training mode, after lx_model_own
** made the bf16 weights lenx's fp32 own, as fine-tuning does) against torch's float64 autograd in
** transformers' conventions (ref.json's "grad": gemma_ref.py, mpt_ref.py; lenx_name(out, hf, flag)
** names lenx's tensor of each, the first when it is several adjacent ones, and returns how many;
** lenx_index, unless NULL, maps an index of the HF tensor to one from that lenx tensor's start): at
** the 24 picked entries of every tensor, |Δ| at most 1e-6 + 1e-4 |g| (fp32 sums against float64: seen
** at most 0.11 of that on the AMD EPYC; a missing factor or term is off by the gradient's own size, up
** to 0.36 here). Gemma's gains are stored as w of 1 + w, the same gradient. */
static inline void grads_vs_torch(const char *dirname, int (*lenx_name)(char out[64], const char *hf, int flag),
                                  long (*lenx_index)(const char *hf, long i, const struct lx_arch *a), int flag,
                                  const char *who)
{
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_error err = {{0}};
    struct lx_json *doc = tiny(dirname, &m, &info);
    lx_model_own(&m);
    int tok[64], tgt[64], T = torch_window_ids(doc, 0, tok, tgt);
    struct tstack st;
    struct lx_facts f = tfacts((int)m.arch.d_head, 128, (int)m.arch.heads, T);
    f.training = 1;
    tstack_make(&st, info.stack, &f);
    struct lx_acts a;
    cr_assert_eq(lx_acts_alloc(&a, &m.arch, 1, T, LX_ACTS_TRAIN, &err), LX_OK, "%s", err.msg);
    float *g = calloc(m.n_params, sizeof *g);
    struct lx_weights gv;
    lx_weights_map(&gv, &m.arch, g);
    lx_model_forward(&m, &st.spec, tok, tgt, &a);
    lx_model_backward(&m, &st.spec, tok, tgt, &a, &gv);
    int n = lx_arch_tensors(&m.arch, NULL), seen = 0;
    struct lx_tensor_info *ti = calloc((size_t)n, sizeof *ti);
    lx_arch_tensors(&m.arch, ti);
    const struct lx_jv *grad = lx_json_member(lx_json_root(doc), "grad");
    double worst = 0.0;
    for (void *it = lx_json_iter(grad); it; it = lx_json_iter_next(grad, it)) {
        char name[64];
        const char *hf = lx_json_iter_key(it, NULL);
        seen += lenx_name(name, hf, flag);
        int t = 0;
        while (t < n && strcmp(ti[t].name, name))
            t++;
        cr_assert_lt(t, n, "%s: %s (%s) is not a lenx tensor", who, name, hf);
        const struct lx_jv *pick = lx_json_iter_value(it), *idx = lx_json_member(pick, "idx");
        const struct lx_jv *val = lx_json_member(pick, "val");
        for (long k = 0; k < (long)lx_json_len(idx); k++) {
            int64_t i;
            double r;
            cr_assert_eq(lx_json_int(doc, lx_json_at(idx, k), &i, &err), LX_OK);
            cr_assert_eq(lx_json_num(doc, lx_json_at(val, k), &r, &err), LX_OK);
            long at = (long)ti[t].offset + (lenx_index ? lenx_index(hf, (long)i, &m.arch) : (long)i);
            double d = fabs(g[at] - r);
            worst = fmax(worst, d / (1e-6 + 1e-4 * fabs(r)));
            cr_expect_leq(d, 1e-6 + 1e-4 * fabs(r), "%s %s[%ld]: lenx %.7g, torch %.7g", who, name, (long)i, g[at], r);
        }
    }
    cr_expect_eq(seen, n, "%s: torch's gradient covers %d tensors, lenx has %d", who, seen, n);
    cr_log_info("%s: gradients within %.3g of the tolerance", who, worst);
    free(ti), free(g);
    lx_weights_unmap(&gv);
    lx_acts_release(&a);
    tstack_free(&st);
    lx_json_free(doc);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* lenx's name of a directory's tensor hf (into out) for a family whose names map one to one (emb: its
** embedding's name; norm, layers: the final norm's and the layers' prefixes; map: n_map rows of {the
** family's part, lenx's}, e.g. {"self_attn.q_proj", "attn.wq"}): how many lenx tensors it is, 1. */
static inline int table_name(char out[64], const char *hf, const char *emb, const char *norm, const char *layers,
                             const char *const (*map)[2], size_t n_map)
{
    const char *kind = strstr(hf, ".bias") ? "bias" : "weight";
    size_t nl = strlen(layers);
    int l, at = 0;
    if (!strcmp(hf, emb))
        return snprintf(out, 64, "tok_emb.weight"), 1;
    if (!strncmp(hf, "lm_head.", 8))
        return snprintf(out, 64, "%s", hf), 1;
    if (!strncmp(hf, norm, strlen(norm)))
        return snprintf(out, 64, "norm.%s", kind), 1;
    cr_assert(!strncmp(hf, layers, nl) && sscanf(hf + nl, "%d.%n", &l, &at) == 1 && at, "%s", hf);
    for (size_t k = 0; k < n_map; k++)
        if (!strncmp(hf + nl + at, map[k][0], strlen(map[k][0]))) {
            snprintf(out, 64, "layers.%d.%s.%s", l, map[k][1], kind);
            return 1;
        }
    cr_assert_fail("no lenx name for %s", hf);
    return 0;
}

/* An index of query_key_value (rows group by group: a key/value group's query heads, then its key and its
** value head; GPT-NeoX's and BLOOM's groups are their heads: q, k, v of head 0, then of head 1, ...) as one
** from lenx's wq start (every head's q rows, then k's, then v's); any other tensor's as it is. */
static inline long fused_heads_index(const char *hf, long i, const struct lx_arch *a)
{
    if (!strstr(hf, "query_key_value"))
        return i;
    long cols = strstr(hf, ".bias") ? 1 : a->d_model, D = a->d_head, KV = lx_arch_kv(a), q = a->heads / KV;
    long row = i / cols, g = row / ((q + 2) * D), slot = row / D % (q + 2), d = row % D;
    long lenx_row = slot < q ? (g * q + slot) * D + d : a->heads * D + (slot - q) * KV * D + g * D + d;
    return lenx_row * cols + i % cols;
}

/* lenx's name of layer l's part `rest` of a GPT-NeoX, BLOOM or Falcon directory (attn: its attention module,
** "attention." or "self_attention."; hf: the whole name, for the bias/weight kind) into out, and how many
** lenx tensors it is (query_key_value: wq, wk and wv, adjacent in lenx's buffer). */
static inline int fused_layer_name(char out[64], const char *hf, const char *rest, int l, const char *attn)
{
    static const char *const map[][2] = {
        {"input_layernorm", "attn_norm"}, {"*query_key_value", "attn.wq"}, {"*dense", "attn.wo"},
        {"post_attention_layernorm", "mlp_norm"}, {"mlp.dense_h_to_4h", "mlp.w1"}, {"mlp.dense_4h_to_h", "mlp.w2"},
        {"ln_attn", "attn_norm"}, {"ln_mlp", "mlp_norm"},
    };
    size_t na = strlen(attn);
    for (size_t k = 0; k < sizeof map / sizeof *map; k++) {
        const char *want = map[k][0][0] == '*' ? map[k][0] + 1 : map[k][0], *at = rest;
        if (map[k][0][0] == '*' && strncmp(at, attn, na) == 0)
            at += na;
        else if (map[k][0][0] == '*')
            continue;
        if (!strncmp(at, want, strlen(want))) {
            snprintf(out, 64, "layers.%d.%s.%s", l, map[k][1], strstr(hf, ".bias") ? "bias" : "weight");
            return k == 1 ? 3 : 1;
        }
    }
    cr_assert_fail("no lenx name for %s", hf);
    return 0;
}

/* The logits of g (a GGUF file's model) and h (its directory's, as the caller set its arch) on stack over
** 48 tokens: within 1e-5 of each other. */
static inline void gguf_logits_vs(const struct lx_model *g, const char *stack, const struct lx_model *h,
                                  const char *name)
{
    enum { T = 48 };
    struct lx_error err = {{0}};
    struct tstack s;
    struct lx_facts f = tfacts((int)g->arch.d_head, 128, (int)g->arch.heads, T);
    tstack_make(&s, stack, &f);
    int tok[T];
    for (int t = 0; t < T; t++)
        tok[t] = 3 + (t * 41) % 93;
    struct lx_acts a, b;
    cr_assert_eq(lx_acts_alloc(&a, &g->arch, 1, T, 0, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_acts_alloc(&b, &h->arch, 1, T, 0, &err), LX_OK, "%s", err.msg);
    lx_model_forward(g, &s.spec, tok, NULL, &a);
    lx_model_forward(h, &s.spec, tok, NULL, &b);
    double worst = 0;
    for (long i = 0; i < (long)T * g->arch.vocab; i++)
        worst = fmax(worst, fabs(a.logits[i] - b.logits[i]));
    cr_expect_leq(worst, 1e-5, "%s: GGUF against the directory as llama.cpp reads it: max |dlogit| %g", name, worst);
    lx_acts_release(&a);
    lx_acts_release(&b);
    tstack_free(&s);
}

/* The largest |lenx − llama.cpp| over every logit of tests/ref/gguf/NAME-tiny-hf.gguf on the 48 tokens
** gguf_logits_vs feeds (3 + 41·t mod 93): lenx's forward of the file on the stack it reads (or on
** `stack` when not NULL), against llama.cpp's own logits (tests/ref/gguf/llamacpp/NAME.tsv, llama.cpp's
** graph run on the file by tests/ref/gguf/llamacpp.sh). Also the largest |logit|, the scale the
** difference is of. */
static inline double gguf_vs_llama_cpp(const char *name, const char *stack, double *scale)
{
    enum { T = 48 };
    char path[512], rel[128];
    struct lx_model g;
    struct lx_ckpt_info gi;
    struct lx_error err = {{0}};
    snprintf(rel, sizeof rel, "tests/ref/gguf/%s-tiny-hf.gguf", name);
    in_repo(path, rel);
    load(&g, &gi, path);
    struct tstack s;
    struct lx_facts f = tfacts((int)g.arch.d_head, 128, (int)g.arch.heads, T);
    tstack_make(&s, stack ? stack : gi.stack, &f);
    int tok[T];
    for (int t = 0; t < T; t++)
        tok[t] = 3 + (t * 41) % 93;
    struct lx_acts a;
    cr_assert_eq(lx_acts_alloc(&a, &g.arch, 1, T, 0, &err), LX_OK, "%s", err.msg);
    lx_model_forward(&g, &s.spec, tok, NULL, &a);
    snprintf(rel, sizeof rel, "tests/ref/gguf/llamacpp/%s.tsv", name);
    in_repo(path, rel);
    FILE *fp = fopen(path, "r");
    cr_assert(fp, "%s", path);
    double worst = 0, big = 0;
    for (long i = 0; i < (long)T * g.arch.vocab; i++) {
        double want;
        cr_assert_eq(fscanf(fp, "%lf", &want), 1, "%s: value %ld", path, i);
        worst = fmax(worst, fabs(a.logits[i] - want)), big = fmax(big, fabs(want));
    }
    double extra;
    cr_expect_eq(fscanf(fp, "%lf", &extra), EOF, "%s: more values than %d x %ld", path, T, g.arch.vocab);
    fclose(fp);
    cr_log_info("%s%s%s: lenx against llama.cpp's own logits: max |dlogit| %.3g (max |logit| %.3g)", name,
                stack ? " on " : "", stack ? stack : "", worst, big);
    *scale = big;
    lx_acts_release(&a);
    tstack_free(&s);
    lx_ckpt_info_release(&gi);
    lx_model_release(&g);
    return worst;
}

/* tests/ref/gguf/NAME-tiny-hf.gguf into g (gi) and the directory tests/ref/hf-NAME-tiny it was converted
** from into h (hi): the same weights, bit for bit (weights_sha256). */
static inline void gguf_and_directory(const char *name, struct lx_model *g, struct lx_ckpt_info *gi,
                                      struct lx_model *h, struct lx_ckpt_info *hi)
{
    char path[512], rel[128];
    snprintf(rel, sizeof rel, "tests/ref/gguf/%s-tiny-hf.gguf", name);
    in_repo(path, rel);
    load(g, gi, path);
    snprintf(rel, sizeof rel, "tests/ref/hf-%s-tiny", name);
    in_repo(path, rel);
    load(h, hi, path);
    cr_expect_str_eq(gi->weights_sha256, hi->weights_sha256, "%s", name);
}

/* llama.cpp's GGUF of a tiny directory (tests/ref/gguf/NAME-tiny-hf.gguf, its converter's file of an F32
** copy, tests/ref/gguf/make.sh) holds the weights lenx runs for the directory, bit for bit
** (weights_sha256), and runs as llama.cpp reads it: the directory with GELU's tanh form (ggml_gelu) and
** the file's stack (what llama.cpp's graph runs), to 1e-5 per logit over 48 tokens. */
static inline void gguf_as_directory(const char *name)
{
    struct lx_model g, h;
    struct lx_ckpt_info gi, hi;
    gguf_and_directory(name, &g, &gi, &h, &hi);
    cr_expect(g.arch.mlp == LX_MLP_GELU && g.arch.norm == h.arch.norm && g.arch.bias == h.arch.bias &&
              g.arch.parallel == h.arch.parallel && g.arch.emb_norm == h.arch.emb_norm &&
              g.arch.norm_bias == h.arch.norm_bias && g.arch.shared_norm == h.arch.shared_norm &&
              lx_arch_kv(&g.arch) == lx_arch_kv(&h.arch) && g.arch.tie_head == h.arch.tie_head, "%s: arch as read",
              name);
    h.arch.mlp = LX_MLP_GELU;
    gguf_logits_vs(&g, gi.stack, &h, name);
    lx_ckpt_info_release(&gi);
    lx_ckpt_info_release(&hi);
    lx_model_release(&g);
    lx_model_release(&h);
}

#endif
