/*
** tests/test_gemma.c - Gemma 3's text models and Gemma's, as the Hugging Face loader reads them
** (docs/checkpoints.md#gemma-and-gemma-3), against torch's float64 forward of random tiny
** bf16 directories (tests/ref/gemma_ref.py): Gemma 3's local layers (their window and rope base),
** post-norms, q/k norms, query_pre_attn_scalar and GeGLU; decoding by the KV cache against the
** full forward; Gemma 2's soft-caps; the backward against torch's autograd (a Gemma model
** fine-tunes); and what is refused (irregular layer_types, writing the model in another format).
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/json.h"
#include "harness/engine/formats/gguf_model.h"
#include "harness/engine/formats/hf_model.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/model/decoding.h"
#include "harness/engine/model/kvcache.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "tests/loaders_fixture.h"
#include "tests/model_fixture.h"
#include "tests/stack.h"
#include "tests/hf_tiny.h"

TestSuite(gemma, .init = setup, .fini = teardown, .timeout = 120);

/* Gemma 3's shape (tests/ref/gemma_ref.py): six layers, every third global at rope_theta 1e6 with
** rope_scaling linear 4 (the native stack's pi, on the global layers alone), the others local (a
** window of 8 keys at base 10000), head_dim 16 on a width of 32, query_pre_attn_scalar 12, q/k norms,
** four norms a layer of gains 1 + w, embeddings times sqrt(32), GeGLU, tied, bf16: runs as torch's
** float64 forward of the upcast weights, at 32 and 48 tokens, within 1e-4 per token and per logit
** (fp32 sums against float64). With every layer global (local_every 0) the model is far off: the
** local layers are what the test sees. */
Test(gemma, gemma3_matches_torch)
{
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_json *doc = tiny("hf-gemma3-tiny", &m, &info);
    const struct lx_arch *a = &m.arch;
    cr_expect(a->local_every == 3 && a->local_window == 8 && a->local_base == 10000 && a->qk_dim == 12 &&
              a->post_norms && a->emb_scale && a->mlp == LX_MLP_GEGLU && a->qk_norm && a->tie_head &&
              a->d_head == 16 && lx_arch_kv(a) == 2, "arch as loaded");
    cr_expect(strstr(info.stack, "{\"rope\":{\"base\":1000000,\"layout\":\"half\"}}") &&
              strstr(info.stack, "{\"pi\":{\"scale\":4"), "%s", info.stack);
    cr_expect(!info.eval_stack, "the sliding window is the local layers', not an evaluation window: %s",
              info.eval_stack);
    windows_vs_torch(&m, info.stack, doc, "gemma3");
    m.arch.local_every = 0;
    double dnll, dlogit;
    torch_window(&m, info.stack, doc, 1, 48, &dnll, &dlogit);
    cr_expect_gt(dnll, 1e-2, "every layer global: max |dNLL| only %g", dnll);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    lx_json_free(doc);
}

/* A gemma3 directory (the multimodal model, as Gemma 3 4B-27B are published) holding the same text
** model, its fields in text_config (rope_theta, the local base, eps, the activation and tying left to
** Gemma3TextConfig's defaults), its tensors under language_model.model. beside a vision tensor: the
** same weights (weights_sha256), the same logits as torch's. */
Test(gemma, gemma3_multimodal_directory_reads_its_text_model)
{
    struct lx_json *doc = ref_of("tests/ref/hf-gemma3-tiny/ref.json");
    char path[512];
    struct lx_model m, t;
    struct lx_ckpt_info info, tinfo;
    in_repo(path, "tests/ref/hf-gemma3-tiny");
    load(&t, &tinfo, path);
    in_repo(path, "tests/ref/hf-gemma3-mm-tiny");
    load(&m, &info, path);
    cr_expect_str_eq(info.weights_sha256, tinfo.weights_sha256);
    cr_expect_str_eq(info.stack, tinfo.stack);
    cr_expect(m.arch.local_base == 10000 && m.arch.tie_head && m.arch.norm_eps == 1e-6, "defaults");
    windows_vs_torch(&m, info.stack, doc, "gemma3 (multimodal)");
    lx_ckpt_info_release(&info);
    lx_ckpt_info_release(&tinfo);
    lx_model_release(&m);
    lx_model_release(&t);
    lx_json_free(doc);
}

/* Gemma 2 (gemma_ref.py --gemma2): layers alternating local (a window of 8 at rope_theta) and global,
** post-norms, no q/k norms, query_pre_attn_scalar 12, and its soft-caps set low (1.5 on the attention
** logits, 3 on the output logits) so that tanh shapes every logit: torch's float64 forward within 1e-4.
** Without either cap the model is far off. */
Test(gemma, gemma2_soft_caps_match_torch)
{
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_json *doc = tiny("hf-gemma2-tiny", &m, &info);
    cr_expect(m.arch.attn_softcap == 1.5 && m.arch.logit_softcap == 3 && m.arch.local_every == 2 &&
              m.arch.local_base == 10000 && m.arch.post_norms && !m.arch.qk_norm && m.arch.qk_dim == 12, "arch");
    windows_vs_torch(&m, info.stack, doc, "gemma2");
    struct tstack st;       /* the head path (a probe's: whole probability rows) caps as the tiles do */
    struct lx_facts f = tfacts(16, 128, 4, 48);
    struct lx_acts t, hp;
    struct lx_error err = {{0}};
    int tok[48];
    for (int i = 0; i < 48; i++)
        tok[i] = 3 + (i * 53) % 93;
    tstack_make(&st, info.stack, &f);
    cr_assert_eq(lx_acts_alloc(&t, &m.arch, 1, 48, 0, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_acts_alloc(&hp, &m.arch, 1, 48, 0, &err), LX_OK, "%s", err.msg);
    hp.head_path = 1;
    lx_model_forward(&m, &st.spec, tok, NULL, &t);
    lx_model_forward(&m, &st.spec, tok, NULL, &hp);
    double worst = 0;
    for (long i = 0; i < 48 * m.arch.vocab; i++)
        worst = fmax(worst, fabs(t.logits[i] - hp.logits[i]));
    cr_expect_leq(worst, 1e-5, "head path against the tiles: max |dlogit| %g", worst);
    lx_acts_release(&t);
    lx_acts_release(&hp);
    tstack_free(&st);
    for (int k = 0; k < 2; k++) {
        double keep = k ? m.arch.logit_softcap : m.arch.attn_softcap, dnll, dlogit;
        *(k ? &m.arch.logit_softcap : &m.arch.attn_softcap) = 0;
        torch_window(&m, info.stack, doc, 1, 48, &dnll, &dlogit);
        cr_expect_gt(dnll, 1e-2, "without the %s cap: max |dNLL| only %g", k ? "output" : "attention", dnll);
        *(k ? &m.arch.logit_softcap : &m.arch.attn_softcap) = keep;
    }
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    lx_json_free(doc);
}

/* Gemma (1): no post-norms, q/k norms or local layers, multi-query (one key/value head), the
** scale 1/sqrt(head_dim); norms 1 + w, embeddings times sqrt(width), GeGLU, tied. */
Test(gemma, gemma1_matches_torch)
{
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_json *doc = tiny("hf-gemma-tiny", &m, &info);
    cr_expect(!m.arch.local_every && !m.arch.post_norms && !m.arch.qk_dim && m.arch.emb_scale &&
              m.arch.mlp == LX_MLP_GEGLU && lx_arch_kv(&m.arch) == 1, "arch as loaded");
    windows_vs_torch(&m, info.stack, doc, "gemma");
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    lx_json_free(doc);
}

Test(gemma, decoding_equals_the_full_forward)
{
    decoding_vs_full("tests/ref/hf-gemma3-tiny");
    decoding_vs_full("tests/ref/hf-gemma2-tiny");
}

/* llama.cpp's GGUF of a Gemma directory (tests/ref/gguf/NAME-tiny-hf.gguf, its converter's file of an
** F32 copy: the norms' 1 + w added by the converter, no query_pre_attn_scalar and, for Gemma 3, no
** pattern written) holds the weights lenx runs for the directory, bit for bit (weights_sha256), and runs
** as llama.cpp reads it: every `every`-th layer global (Gemma 3's 6 when the file names none), logits
** over sqrt(head size), which is the directory with that local_every and no qk_dim, to 1e-5 per logit
** (rms eps stored as a float); Gemma 2's soft-caps come from the file. */
static void gguf_as_llama_cpp(const char *name, long every)
{
    struct lx_model g, h;
    struct lx_ckpt_info gi, hi;
    gguf_and_directory(name, &g, &gi, &h, &hi);
    cr_expect_str_eq(gi.stack, hi.stack, "%s", name);
    cr_expect(g.arch.local_every == every && g.arch.local_window == 8 && g.arch.local_base == 10000 &&
              !g.arch.qk_dim && g.arch.post_norms && g.arch.emb_scale && g.arch.mlp == LX_MLP_GEGLU &&
              g.arch.qk_norm == h.arch.qk_norm && g.arch.attn_softcap == h.arch.attn_softcap &&
              g.arch.logit_softcap == h.arch.logit_softcap, "%s: arch as read", name);
    h.arch.local_every = every, h.arch.qk_dim = 0;
    gguf_logits_vs(&g, gi.stack, &h, name);
    lx_ckpt_info_release(&gi);
    lx_ckpt_info_release(&hi);
    lx_model_release(&g);
    lx_model_release(&h);
}

Test(gemma, gguf_runs_as_llama_cpp_reads_it)
{
    gguf_as_llama_cpp("gemma3", 6);
    gguf_as_llama_cpp("gemma2", 2);
}

/* What lenx does not run is refused naming the field: Gemma 2 (soft-capping), the multimodal
** gemma3 type, a soft-cap on Gemma 3, a layer pattern that is not every k-th layer global, an
** activation other than GELU's tanh form. */
Test(gemma, configs_refused)
{
    static const struct {
        const char *sed, *part1, *part2;
    } cases[] = {
        {"s/\"gemma3_text\"/\"gemma4\"/", "model_type 'gemma4'", "gemma3, mpt, gpt_neox, bloom, falcon, phi and gptj"},
        {"s/\"gemma3_text\"/\"gemma3\"/", "config.json", "model_type gemma3 without a text_config object"},
        {"s/\"final_logit_softcapping\": null/\"final_logit_softcapping\": -1/", "final_logit_softcapping",
         "must be a positive number"},
        {"s/\\[\"sliding_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\"/"
         "[\"sliding_attention\", \"full_attention\", \"full_attention\", \"sliding_attention\"/", "layer_types",
         "every k-th layer global"},
        {"s/\"gelu_pytorch_tanh\"/\"gelu\"/", "hidden_activation 'gelu'", "gelu_pytorch_tanh"},
        {"s/\"layer_types\": \\[.*\\]/\"layer_types\": {\"a\": 1}/", "config.json: layer_types",
         "must be a list of \"sliding_attention\" and \"full_attention\""},
    };
    char path[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tiny_copy("hf-gemma3-tiny", "g3", cases[i].sed, path);
        expect_error(path, cases[i].part1, cases[i].part2);
    }
}

/* lenx's tensor name of a Gemma directory's (the loader's mapping, docs/checkpoints.md#gemma-and-gemma-3):
** "layers.L." plus the part; into out (64). post_attention_layernorm is Gemma 1's mlp_norm. */
static int lenx_name(char out[64], const char *hf, int gemma1)
{
    static const char *const map[][2] = {
        {"input_layernorm", "attn_norm"}, {"self_attn.q_proj", "attn.wq"}, {"self_attn.k_proj", "attn.wk"},
        {"self_attn.v_proj", "attn.wv"}, {"self_attn.o_proj", "attn.wo"}, {"self_attn.q_norm", "attn.q_norm"},
        {"self_attn.k_norm", "attn.k_norm"}, {"post_attention_layernorm", "attn.post_norm"},
        {"pre_feedforward_layernorm", "mlp_norm"}, {"post_feedforward_layernorm", "mlp.post_norm"},
        {"mlp.gate_proj", "mlp.w1"}, {"mlp.up_proj", "mlp.w3"}, {"mlp.down_proj", "mlp.w2"},
    };
    int l, at;
    if (!strcmp(hf, "model.embed_tokens.weight") || !strcmp(hf, "model.norm.weight")) {
        snprintf(out, 64, "%s", hf[6] == 'e' ? "tok_emb.weight" : "norm.weight");
        return 1;
    }
    cr_assert_eq(sscanf(hf, "model.layers.%d.%n", &l, &at), 1, "%s", hf);
    for (size_t k = 0; k < sizeof map / sizeof *map; k++)
        if (!strncmp(hf + at, map[k][0], strlen(map[k][0]))) {
            const char *part = gemma1 && k == 7 ? "mlp_norm" : map[k][1];
            snprintf(out, 64, "layers.%d.%s.weight", l, part);
            return 1;
        }
    cr_assert_fail("no lenx name for %s", hf);
    return 0;
}

Test(gemma, gradients_match_torch)
{
    grads_vs_torch("hf-gemma3-tiny", lenx_name, NULL, 0, "gemma3");
    grads_vs_torch("hf-gemma2-tiny", lenx_name, NULL, 0, "gemma2");
    grads_vs_torch("hf-gemma-tiny", lenx_name, NULL, 1, "gemma1");
}

/* The arch a as the store keys it (lx_params_json) but for init_std (a file does not keep it) and
** norm_eps to float (GGUF's metadata holds an f32), into a string the caller frees. */
static char *arch_json(struct lx_arch a)
{
    struct lx_buf b = {0};
    a.init_std = 0.02, a.norm_eps = (float)a.norm_eps;
    lx_params_json(&lx_arch_schema, &a, &b);
    return b.s;
}

/* m (stack and training length from info) written to dir/name, as a Hugging Face directory (lenx
** export --hf) or an F32 GGUF file (--gguf), and read back into back and binfo: the same
** architecture (its stored arch JSON, init_std aside) and stack. */
static void export_back(const struct lx_model *m, const struct lx_ckpt_info *info, const char *name, int gguf,
                        struct lx_model *back, struct lx_ckpt_info *binfo)
{
    char out[600];
    struct lx_error err = {{0}};
    snprintf(out, sizeof out, "%s/%s", dir, name);
    int rc = gguf ? lx_gguf_export(m, info, &lx_byte_tokenizer, out, LX_DT_F32, NULL, &err)
                  : lx_hf_export(m, info, NULL, out, &err);
    cr_assert_eq(rc, LX_OK, "%s: %s", name, err.msg);
    load(back, binfo, out);
    char *want = arch_json(m->arch), *got = arch_json(back->arch);
    cr_expect_str_eq(got, want, "%s: the arch read back: %s, not %s", name, got, want);
    cr_expect_str_eq(binfo->stack, info->stack, "%s: the stack read back", name);
    free(want), free(got);
}

/* A Gemma block as a sweep's arch: makes it: 3 layers of width 32, 4 heads of 16 on 2 key/value
** heads, the byte vocabulary; kind 3 Gemma 3 (post-norms, q/k norms), 2 Gemma 2 (post-norms, every
** other layer local at base 10000, both soft-caps), 1 Gemma; the post-norms' gains away from 1. */
static void gemma_block(struct lx_model *m, int kind, struct lx_arch a)
{
    a.post_norms = kind >= 2, a.qk_norm = kind == 3, a.emb_scale = 1, a.kv_heads = 2;
    if (kind == 2)
        a.local_every = 2, a.local_window = 8, a.local_base = 10000, a.attn_softcap = 4, a.logit_softcap = 6;
    lx_model_init(m, &a, 5);
    for (long l = 0; kind >= 2 && l < a.layers; l++)
        for (long c = 0; c < a.d_model; c++)
            m->v.layer[l].attn_post[c] = 0.5f + 0.03f * (float)((c + l) % 17);
}

/* The logits of m and back on 40 bytes under stack: within 1e-5 (a gain written as g - 1 and read
** back as 1 + w may move by an ulp). */
static void same_logits(const struct lx_model *m, const struct lx_model *back, const char *stack, const char *who)
{
    int tok[40], tgt[40];
    for (int t = 0; t < 40; t++)
        tok[t] = (t * 37 + 11) % 256, tgt[t] = t + 1 < 40 ? (t * 37 + 48) % 256 : -1;
    struct tstack st;
    struct lx_facts f = tfacts((int)m->arch.d_head, 64, (int)m->arch.heads, 40);
    tstack_make(&st, stack, &f);
    struct lx_acts x, y;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_acts_alloc(&x, &m->arch, 1, 40, 0, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_acts_alloc(&y, &back->arch, 1, 40, 0, &err), LX_OK, "%s", err.msg);
    lx_model_forward(m, &st.spec, tok, tgt, &x);
    lx_model_forward(back, &st.spec, tok, tgt, &y);
    double d = max_diff(x.logits, y.logits, 40 * m->arch.vocab);
    cr_expect_leq(d, 1e-5, "%s: max |logit - exported's| %g", who, d);
    lx_acts_release(&x), lx_acts_release(&y);
    tstack_free(&st);
}

/* Each tiny directory exported (lenx export --hf: transformers' Gemma 3, Gemma 2 and Gemma, the
** gains written as w of 1 + w) reads back as the same model and runs as torch's float64 forward of
** the directory it came from, within windows_vs_torch's 1e-4. */
Test(gemma, export_hf_round_trip)
{
    static const char *const names[] = {"hf-gemma3-tiny", "hf-gemma2-tiny", "hf-gemma-tiny"};
    for (int i = 0; i < 3; i++) {
        struct lx_model m, back;
        struct lx_ckpt_info info, binfo;
        struct lx_json *doc = tiny(names[i], &m, &info);
        export_back(&m, &info, names[i], 0, &back, &binfo);
        windows_vs_torch(&back, binfo.stack, doc, names[i]);
        lx_json_free(doc);
        lx_ckpt_info_release(&binfo);
        lx_model_release(&back);
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
    }
}

/* A Gemma 3 block lenx trains from an arch: (untied, no local layers, soft-caps, PI on the rope)
** exported as a directory: every layer full_attention, the soft-caps and rope_scaling in
** config.json; read back, the same logits. */
Test(gemma, export_hf_of_a_lenx_gemma_block)
{
    struct lx_arch a = arch_of(LX_MODEL_CAUSAL, LX_MLP_GEGLU, 3, 32, 4, 16, 48, 260, 0.2);
    a.qk_dim = 12, a.attn_softcap = 4, a.logit_softcap = 6;
    struct lx_model m, back;
    gemma_block(&m, 3, a);
    char stack[] = "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}},{\"pi\":{\"scale\":2,\"train\":true}}]";
    struct lx_ckpt_info info = {.stack = stack, .train_len = 64}, binfo;
    export_back(&m, &info, "lenx-gemma", 0, &back, &binfo);
    char cfg[700];
    unsigned char *text;
    long n;
    struct lx_error err = {{0}};
    snprintf(cfg, sizeof cfg, "%s/lenx-gemma/config.json", dir);
    cr_assert_eq(lx_read_file(cfg, &text, &n, 1 << 20, &err), LX_OK, "%s", err.msg);
    cr_expect(strstr((char *)text, "\"model_type\": \"gemma3_text\"") &&
              strstr((char *)text, "[\"full_attention\", \"full_attention\", \"full_attention\"]") &&
              strstr((char *)text, "\"attn_logit_softcapping\": 4,") &&
              strstr((char *)text, "\"final_logit_softcapping\": 6,") &&
              strstr((char *)text, "\"tie_word_embeddings\": false") &&
              strstr((char *)text, "\"rope_type\": \"linear\""), "%s", (char *)text);
    free(text);
    same_logits(&m, &back, stack, "hf");
    lx_ckpt_info_release(&binfo);
    lx_model_release(&back);
    lx_model_release(&m);
}

/* Gemma 3 (local layers every third over 8 keys at base 500, a final soft-cap, PI on the global
** layers), Gemma 2 and Gemma blocks written as llama.cpp's gemma3, gemma2 and gemma GGUF files (the
** gains as they are: llama.cpp's converter stores 1 + w): read back, the same architecture, stack
** and logits. */
Test(gemma, export_gguf_round_trip)
{
    char scaled[] = "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}},{\"pi\":{\"scale\":2,\"train\":true}}]";
    char plain[] = "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}}]";
    for (int kind = 3; kind >= 1; kind--) {
        struct lx_arch a = arch_of(LX_MODEL_CAUSAL, LX_MLP_GEGLU, 3, 32, 4, 16, 48, 260, 0.2);
        if (kind == 3)
            a.local_every = 3, a.local_window = 8, a.local_base = 500, a.logit_softcap = 6;
        struct lx_model m, back;
        gemma_block(&m, kind, a);
        struct lx_ckpt_info info = {.stack = kind == 3 ? scaled : plain, .train_len = 64}, binfo;
        char name[32];
        snprintf(name, sizeof name, "gemma%d.gguf", kind);
        export_back(&m, &info, name, 1, &back, &binfo);
        same_logits(&m, &back, info.stack, name);
        lx_ckpt_info_release(&binfo);
        lx_model_release(&back);
        lx_model_release(&m);
    }
}

/* What no Gemma config holds is refused naming it; what llama.cpp would run otherwise (the tiny
** Gemma 3 directory's query_pre_attn_scalar of 12 on heads of 16) is refused by --gguf. */
Test(gemma, export_refused)
{
    char path[512], out[600];
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_error err = {{0}};
    in_repo(path, "tests/ref/hf-gemma3-tiny");
    load(&m, &info, path);
    snprintf(out, sizeof out, "%s/g3.gguf", dir);
    cr_expect_eq(lx_gguf_export(&m, &info, &lx_byte_tokenizer, out, LX_DT_F32, NULL, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "sqrt(qk_dim)") && strstr(err.msg, "gemma3"), "%s", err.msg);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    struct lx_arch a = arch_of(LX_MODEL_CAUSAL, LX_MLP_SWIGLU, 2, 32, 4, 16, 48, 260, 0.2);
    char stack[] = "[{\"rope\":{\"layout\":\"half\"}}]";
    struct lx_ckpt_info mine = {.stack = stack, .train_len = 64};
    struct { int post, qkn, emb, mlp, every; const char *why; } cases[] = {
        {1, 1, 1, LX_MLP_SWIGLU, 0, "an MLP other than GeGLU"},
        {1, 1, 0, LX_MLP_GEGLU, 0, "no embedding scale"},
        {1, 0, 1, LX_MLP_GEGLU, 3, "not Gemma 2's layers"},
        {0, 1, 1, LX_MLP_GEGLU, 0, "without their post-norms"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        a.post_norms = cases[i].post, a.qk_norm = cases[i].qkn, a.emb_scale = cases[i].emb;
        a.mlp = cases[i].mlp, a.local_every = cases[i].every, a.local_window = cases[i].every ? 8 : 0;
        lx_model_init(&m, &a, 1);
        snprintf(out, sizeof out, "%s/bad%zu", dir, i);
        cr_expect_eq(lx_hf_export(&m, &mine, NULL, out, &err), LX_EINVAL, "case %zu", i);
        cr_expect(strstr(err.msg, cases[i].why), "case %zu: %s", i, err.msg);
        lx_model_release(&m);
    }
    /* llama.cpp's gemma3 reads no soft-cap of the attention logits; its gemma2 turns the local layers
    ** with the global layers' rescaling */
    char plain[] = "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}}]";
    char scaled[] = "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}},{\"pi\":{\"scale\":2,\"train\":true}}]";
    struct lx_arch g = arch_of(LX_MODEL_CAUSAL, LX_MLP_GEGLU, 3, 32, 4, 16, 48, 260, 0.2);
    struct { int kind; double cap; char *stack; const char *why; } gg[] = {
        {3, 4, plain, "which llama.cpp's gemma3 does not read"},
        {2, 0, scaled, "applies to the local layers too"},
    };
    for (size_t i = 0; i < sizeof gg / sizeof *gg; i++) {
        g.attn_softcap = gg[i].cap;
        gemma_block(&m, gg[i].kind, g);
        mine.stack = gg[i].stack;
        snprintf(out, sizeof out, "%s/bad%zu.gguf", dir, i);
        cr_expect_eq(lx_gguf_export(&m, &mine, &lx_byte_tokenizer, out, LX_DT_F32, NULL, &err), LX_EINVAL,
                     "gguf %zu", i);
        cr_expect(strstr(err.msg, gg[i].why), "gguf case %zu: %s", i, err.msg);
        lx_model_release(&m);
    }
}
