/*
** tests/test_hf_families.c - the model families whose layout goes beyond Llama's, as the
** loaders read them: sliding windows as transformers runs each type (Mistral's and Phi-3's
** in the evaluation stack, Qwen's per-layer ones refused), and Phi-3 (fused q|k|v and
** gate|up, LongRoPE) against torch's float64 forward of a random tiny model
** (tests/ref/phi3_ref.py), as a directory, as llama.cpp's GGUF of it and exported.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/backends/local.h"
#include "harness/commands/score.h"
#include "harness/core/json.h"
#include "harness/engine/formats/gguf_model.h"
#include "harness/engine/formats/hf_model.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "tests/loaders_fixture.h"
#include "tests/hf_tiny.h"
#include "tests/torch_window.h"
#include "tests/stack.h"

TestSuite(hf_families, .init = setup, .fini = teardown, .timeout = 120);

/* stories260K's config.json as model_type `type`, with extra fields. */
#define CFG_T(type, extra) "{\"model_type\": \"" type "\", \"hidden_size\": 64, \"intermediate_size\": 172, " \
    "\"num_hidden_layers\": 5, \"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"vocab_size\": 512, " \
    "\"tie_word_embeddings\": true" extra "}"

/* The sliding window as transformers runs each model type: Mistral's (and Phi-3's) applies to every
** layer whenever set, so it loads as the `window` method in the evaluation stack (the one `lenx score`
** runs by default), with the same W keys a query sees, itself included; Llama's config has no window
** (the key is ignored); Qwen2's and Qwen3's apply only with use_sliding_window true (Qwen2.5-0.5B
** names 32768 with false: no window) and then from layer max_window_layers on, which lenx cannot say:
** refused naming the field. */
Test(hf_families, hf_sliding_window_as_transformers_runs_it)
{
    char path[600];
    snprintf(path, sizeof path, "%s/hf", dir);
    static const struct {
        const char *config, *eval;
    } loads[] = {
        {CFG_T("mistral", ", \"sliding_window\": 4096, \"max_position_embeddings\": 32768"),
         "[{\"window\":{\"size\":4096}}]"},
        {CFG_T("mistral", ", \"sliding_window\": null"), NULL},
        {CFG_T("llama", ", \"sliding_window\": 4096"), NULL},
        {CFG_T("mistral", ", \"sliding_window\": 16, \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2}"),
         "[{\"ntk\":{\"mode\":\"dynamic\",\"factor\":2}},{\"window\":{\"size\":16}}]"},
    };
    for (size_t i = 0; i < sizeof loads / sizeof *loads; i++) {
        hf_copy(loads[i].config);
        struct lx_model m;
        struct lx_ckpt_info info;
        struct lx_error err = {{0}};
        cr_assert_eq(lx_model_load(&m, path, &info, &err), LX_OK, "case %zu: %s", i, err.msg);
        if (loads[i].eval)
            cr_expect(info.eval_stack && strcmp(info.eval_stack, loads[i].eval) == 0, "case %zu: eval_stack %s", i,
                      info.eval_stack ? info.eval_stack : "(none)");
        else
            cr_expect(info.eval_stack == NULL, "case %zu: eval_stack %s", i, info.eval_stack);
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
    }
    /* Qwen2 with use_sliding_window false gets past its config (its missing biases are what stop it) */
    static const char *const cases[][3] = {
        {CFG_T("qwen2", ", \"sliding_window\": 32768, \"use_sliding_window\": false"), "no tensor",
         "self_attn.q_proj.bias"},
        {CFG_T("qwen2", ", \"sliding_window\": 4096, \"use_sliding_window\": true"),
         "config.json: use_sliding_window: true: qwen2 slides", "from max_window_layers on only"},
        {CFG_T("qwen2", ", \"sliding_window\": 4096, \"use_sliding_window\": 3"), "config.json: use_sliding_window",
         "boolean"},
        {CFG_T("mistral", ", \"sliding_window\": 0"), "config.json: sliding_window", "at least one key"},
    };
    hf_cases(cases, (int)(sizeof cases / sizeof *cases));
}

/* A sliding window in the evaluation stack runs as the `window` method does: `lenx score` of the
** Mistral-typed stories260K with sliding_window 16 equals its score with `--method` window of 16, bit
** for bit, and differs from the same model without the key. */
Test(hf_families, hf_sliding_window_scores_as_the_window_method)
{
    char path[600], text[512];
    snprintf(path, sizeof path, "%s/hf", dir);
    in_repo(text, "README.md");
    double nll[3];
    const char *configs[3] = {CFG_T("mistral", ", \"sliding_window\": 16"), CFG_T("mistral", ""), CFG_T("mistral", "")};
    const char *methods[3] = {NULL, "{window: {size: 16}}", NULL};
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    for (int i = 0; i < 3; i++) {
        hf_copy(configs[i]);
        struct lx_score_opts o = {.model = path, .db = "none.db", .text = text, .length = 64, .method = methods[i]};
        struct lx_buf out = {0};
        struct lx_error err = {{0}};
        cr_assert_eq(lx_score(&o, &out, &err), LX_OK, "%s", err.msg);
        const char *p = strstr(lx_buf_str(&out), "\"mean_nll\": ");
        cr_assert_not_null(p, "%s", lx_buf_str(&out));
        nll[i] = atof(p + 12);
        lx_buf_free(&out);
    }
    cr_expect_eq(nll[0], nll[1], "sliding_window 16: %.9f, --method window 16: %.9f", nll[0], nll[1]);
    cr_expect(fabs(nll[0] - nll[2]) > 1e-3, "the window changes nothing: %.9f vs %.9f", nll[0], nll[2]);
}

/* ---- Phi-3: fused q|k|v and gate|up, LongRoPE ---- */

/* A Phi-3 directory (q|k|v in qkv_proj, gate|up in gate_up_proj, used in place by rows; LongRoPE's
** rope_scaling as the longrope method trained in; a sliding window longer than its positions) runs as
** torch's float64 forward of it does: the short factors at 32 tokens, the long ones at 48, within 1e-4
** per token (fp32 sums against float64). So does llama.cpp's GGUF of it (tests/ref/gguf/phi3-tiny-hf.gguf,
** its converter's file: attn_qkv and ffn_up fused, the factors as rope_factors_long/short tensors and
** the attention factor as a key, all float32). The 48-token window with the short factors is off by far
** more: the test sees which list was used. */
Test(hf_families, phi3_longrope_matches_torch)
{
    static const char *const files[] = {"tests/ref/hf-phi3-tiny", "tests/ref/gguf/phi3-tiny-hf.gguf"};
    static const char *const stacks[] = {
        "{\"longrope\":{\"scale\":4,\"original\":32,\"long_factor\":[1,1.5,3,6],\"short_factor\":[1,1.1,1.2,1.5],"
        "\"train\":true}}",
        "{\"longrope\":{\"scale\":4,\"original\":32,\"long_factor\":[1,1.5,3,6],\"short_factor\":[1,1.100000023841858,"
        "1.2000000476837158,1.5],\"attention_factor\":1.1832159757614136,\"train\":true}}"};
    char path[512];
    struct lx_json *doc;
    struct lx_error err = {{0}};
    in_repo(path, "tests/ref/hf-phi3-tiny/ref.json");
    cr_assert_eq(lx_json_load(&doc, path, 1 << 20, &err), LX_OK, "%s", err.msg);
    for (int f = 0; f < 2; f++) {
        struct lx_model m;
        struct lx_ckpt_info info;
        in_repo(path, files[f]);
        load(&m, &info, path);
        cr_expect(strstr(info.stack, stacks[f]), "%s: %s", files[f], info.stack);
        double dnll, dlogit;
        for (int w = 0; w < 2; w++) {
            long T = w ? 48 : 32;
            torch_window(&m, info.stack, doc, w, T, &dnll, &dlogit);
            cr_log_info("%s, %ld tokens: max |dNLL| %.3g, max |dlogit| %.3g", files[f], T, dnll, dlogit);
            cr_expect(dnll < 1e-4 && dlogit < 1e-4, "%s, %ld tokens: max |dNLL| %g, max |dlogit| %g", files[f], T, dnll,
                      dlogit);
        }
        torch_window(&m, info.stack, doc, 1, 32, &dnll, &dlogit);
        cr_expect_gt(dnll, 1e-2, "%s: 48 tokens with the short factors: max |dNLL| only %g", files[f], dnll);
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
    }
    lx_json_free(doc);
}

/* A Phi-4-mini-shaped directory (tests/ref/phi3_ref.py --partial: partial_rotary_factor 0.75, rope over
** the first 12 of each head's 16 channels, LongRoPE's lists one factor per those 6 pairs, its attention
** factor on the turned channels alone as transformers applies it, tied embeddings) runs as torch's
** float64 forward of it, short and long factors, within 1e-4 per token; so does llama.cpp's converter's
** GGUF of it (rope.dimension_count 12) and lenx's own GGUF export. The 48-token window with the short
** factors is off by far more. */
Test(hf_families, phi4_partial_rotary_matches_torch)
{
    char path[600], gguf[600];
    struct lx_json *doc;
    struct lx_error err = {{0}};
    in_repo(path, "tests/ref/hf-phi4-tiny/ref.json");
    cr_assert_eq(lx_json_load(&doc, path, 1 << 20, &err), LX_OK, "%s", err.msg);
    struct lx_model m;
    struct lx_ckpt_info info;
    in_repo(path, "tests/ref/hf-phi4-tiny");
    load(&m, &info, path);
    snprintf(gguf, sizeof gguf, "%s/p4.gguf", dir);
    cr_assert_eq(lx_gguf_export(&m, &info, &lx_byte_tokenizer, gguf, LX_DT_F32, NULL, &err), LX_OK, "%s", err.msg);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    const char *files[3] = {"tests/ref/hf-phi4-tiny", "tests/ref/gguf/phi4-tiny-hf.gguf", NULL};
    for (int f = 0; f < 3; f++) {
        if (f < 2)
            in_repo(path, files[f]);
        else
            snprintf(path, sizeof path, "%s", gguf);
        load(&m, &info, path);
        cr_expect(strstr(info.stack, "{\"rope\":{\"base\":10000,\"layout\":\"half\",\"dims\":12}}") && m.arch.tie_head,
                  "%s: %s", path, info.stack);
        double dnll, dlogit;
        for (int w = 0; w < 2; w++) {
            long T = w ? 48 : 32;
            torch_window(&m, info.stack, doc, w, T, &dnll, &dlogit);
            cr_log_info("%s, %ld tokens: max |dNLL| %.3g, max |dlogit| %.3g", path, T, dnll, dlogit);
            cr_expect(dnll < 1e-4 && dlogit < 1e-4, "%s, %ld tokens: max |dNLL| %g, max |dlogit| %g", path, T, dnll,
                      dlogit);
        }
        torch_window(&m, info.stack, doc, 1, 32, &dnll, &dlogit);
        cr_expect_gt(dnll, 1e-2, "%s: 48 tokens with the short factors: max |dNLL| only %g", path, dnll);
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
    }
    lx_json_free(doc);
}

/* tests/ref/SRC loaded into m and info and exported (lenx export --hf) to dir/NAME (out): its
** config.json's text (the caller frees it). */
static char *export_hf(const char *src, const char *name, struct lx_model *m, struct lx_ckpt_info *info, char *out,
                       size_t len)
{
    char path[512], cfg[700], rel[128];
    struct lx_error err = {{0}};
    snprintf(rel, sizeof rel, "tests/ref/%s", src);
    in_repo(path, rel);
    load(m, info, path);
    snprintf(out, len, "%s/%s", dir, name);
    cr_assert_eq(lx_hf_export(m, info, NULL, out, &err), LX_OK, "%s", err.msg);
    unsigned char *text;
    long n;
    snprintf(cfg, sizeof cfg, "%s/config.json", out);
    cr_assert_eq(lx_read_file(cfg, &text, &n, 1 << 20, &err), LX_OK, "%s", err.msg);
    return (char *)text;
}

/* A LongRoPE model exported (lenx export --hf) is a LlamaForCausalLM with rope_scaling longrope, both
** lists, L at the top level (where transformers reads it first) and the attention factor as used: read
** back, it runs as torch's forward of the Phi-3 directory it came from, both lists. */
Test(hf_families, export_hf_longrope_round_trip)
{
    char path[512], out[600];
    struct lx_model m, back;
    struct lx_ckpt_info info, binfo;
    struct lx_json *doc;
    struct lx_error err = {{0}};
    char *text = export_hf("hf-phi3-tiny", "lr", &m, &info, out, sizeof out);
    cr_expect(strstr((char *)text, "\"rope_scaling\": {\"rope_type\": \"longrope\", \"factor\": 4, "
                     "\"original_max_position_embeddings\": 32, \"long_factor\": [1, 1.5, 3, 6], \"short_factor\": "
                     "[1, 1.1, 1.2, 1.5], \"attention_factor\": 1.1832159566199232}") &&
              strstr((char *)text, "\"original_max_position_embeddings\": 32,\n") &&
              strstr((char *)text, "\"max_position_embeddings\": 128"), "%s", text);
    free(text);
    load(&back, &binfo, out);
    in_repo(path, "tests/ref/hf-phi3-tiny/ref.json");
    cr_assert_eq(lx_json_load(&doc, path, 1 << 20, &err), LX_OK, "%s", err.msg);
    for (int w = 0; w < 2; w++) {
        double dnll, dlogit;
        torch_window(&back, binfo.stack, doc, w, w ? 48 : 32, &dnll, &dlogit);
        cr_expect(dnll < 1e-4 && dlogit < 1e-4, "window %d: max |dNLL| %g, max |dlogit| %g", w, dnll, dlogit);
    }
    lx_json_free(doc);
    lx_ckpt_info_release(&binfo);
    lx_ckpt_info_release(&info);
    lx_model_release(&back);
    lx_model_release(&m);
}

/* A partial rotary model exported (lenx export --hf) is transformers' Phi-3: partial_rotary_factor
** dims / head_dim, q|k|v and gate|up fused in qkv_proj and gate_up_proj, the LongRoPE lists one factor
** per turned pair: Phi-4-mini's shape (tests/ref/hf-phi4-tiny) read back runs as torch's forward of
** the directory it came from, both lists. Interleaved pairs (which Phi-3's rotate_half cannot turn
** within part of a head) are refused. */
Test(hf_families, export_hf_partial_rotary_as_phi3)
{
    char path[512], out[600], cfg[700];
    struct lx_model m, back;
    struct lx_ckpt_info info, binfo;
    struct lx_json *doc;
    struct lx_error err = {{0}};
    char *text = export_hf("hf-phi4-tiny", "p4", &m, &info, out, sizeof out);
    cr_expect(strstr((char *)text, "\"architectures\": [\"Phi3ForCausalLM\"],\n  \"model_type\": \"phi3\"") &&
              strstr((char *)text, "\"partial_rotary_factor\": 0.75,") &&
              strstr((char *)text, "\"long_factor\": [1, 1.25, 1.5, 3, 6, 12], "
                                   "\"short_factor\": [1, 1, 1.1, 1.2, 1.5, 2]") &&
              strstr((char *)text, "\"tie_word_embeddings\": true"), "%s", text);
    free(text);
    snprintf(cfg, sizeof cfg, "grep -c 'qkv_proj.weight\\|gate_up_proj.weight' %s/model.safetensors", out);
    cr_expect_eq(system(cfg), 0, "no fused tensors in the export");
    load(&back, &binfo, out);
    cr_expect(strstr(binfo.stack, "\"dims\":12"), "%s", binfo.stack);
    in_repo(path, "tests/ref/hf-phi4-tiny/ref.json");
    cr_assert_eq(lx_json_load(&doc, path, 1 << 20, &err), LX_OK, "%s", err.msg);
    for (int w = 0; w < 2; w++) {
        double dnll, dlogit;
        torch_window(&back, binfo.stack, doc, w, w ? 48 : 32, &dnll, &dlogit);
        cr_log_info("export, window %d: max |dNLL| %.3g, max |dlogit| %.3g", w, dnll, dlogit);
        cr_expect(dnll < 1e-4 && dlogit < 1e-4, "window %d: max |dNLL| %g, max |dlogit| %g", w, dnll, dlogit);
    }
    lx_json_free(doc);
    const char *half = strstr(info.stack, "\"layout\":\"half\"");      /* the stack made interleaved */
    cr_assert_not_null(half, "%s", info.stack);
    char stack[1024];
    snprintf(stack, sizeof stack, "%.*s\"layout\":\"interleaved\"%s", (int)(half - info.stack), info.stack,
             half + strlen("\"layout\":\"half\""));
    free(info.stack);
    info.stack = lx_xstrdup(stack);
    snprintf(out, sizeof out, "%s/p4i", dir);
    cr_expect_eq(lx_hf_export(&m, &info, NULL, out, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "turns 12 of each head's 16 channels") && strstr(err.msg, "interleaved rotary pairs") &&
              strstr(err.msg, "hint:"), "%s", err.msg);
    lx_ckpt_info_release(&binfo);
    lx_ckpt_info_release(&info);
    lx_model_release(&back);
    lx_model_release(&m);
}

/* Phi-3's configs lenx cannot run as written are named: rotary over part of each head (Phi-4-mini's
** 0.75), factor lists of the wrong length or with a factor of 0. */
Test(hf_families, phi3_configs_refused)
{
    char src[512], cmd[1600], path[600];
    in_repo(src, "tests/ref/hf-phi3-tiny");
    static const struct {
        const char *sed, *part1, *part2;
    } cases[] = {
        {"s/\"rms_norm_eps\"/\"partial_rotary_factor\": 0.7, \"rms_norm_eps\"/", "config.json: partial_rotary_factor",
         "0.7 of a head of 8 is 5 channels: rope turns pairs"},
        {"s/\"rms_norm_eps\"/\"partial_rotary_factor\": 1.5, \"rms_norm_eps\"/", "config.json: partial_rotary_factor",
         "1.5: not in (0, 1]"},
        {"s/\"rms_norm_eps\"/\"partial_rotary_factor\": 0.5, \"rms_norm_eps\"/", "config.json: rope_scaling.long_factor",
         "a list of 2 numbers, one per rotary pair of 4 channels"},
        {"s/\"long_factor\": \\[/\"long_factor\": [2.0, /", "config.json: rope_scaling.long_factor",
         "a list of 4 numbers"},
        {"s/\"short_factor\": \\[1.0/\"short_factor\": [0.0/", "config.json: rope_scaling.short_factor", "[0] is 0"},
        /* yarn's and llama3's original length: a whole number of positions lenx can hold (fuzz_hf_config
        ** found 3.4e45 turned into a long) */
        {"s/\"type\": \"longrope\", \"long_factor\": \\[[^]]*\\]/\"rope_type\": \"llama3\", \"factor\": 4, "
         "\"original_max_position_embeddings\": 3.4e45/", "config.json: rope_scaling.original_max_position_embeddings",
         "3.4e+45: not a whole number of positions in [1, 1073741824]"},
        {"s/\"type\": \"longrope\", \"long_factor\": \\[[^]]*\\]/\"rope_type\": \"yarn\", \"factor\": 4, "
         "\"original_max_position_embeddings\": 0/", "config.json: rope_scaling.original_max_position_embeddings",
         "0: not a whole number of positions in [1, 1073741824]"},
        {"s/\"type\": \"longrope\", \"long_factor\": \\[[^]]*\\]/\"rope_type\": \"yarn\", \"factor\": 4, "
         "\"original_max_position_embeddings\": 31.5/", "config.json: rope_scaling.original_max_position_embeddings",
         "31.5: not a whole number"},
    };
    snprintf(path, sizeof path, "%s/p3", dir);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(cmd, sizeof cmd, "rm -rf %s/p3 && mkdir -p %s/p3 && cp %s/* %s/p3/ && sed -i '%s' %s/p3/config.json && "
                 "! cmp -s %s/config.json %s/p3/config.json", dir, dir, src, dir, cases[i].sed, dir, src, dir);
        cr_assert_eq(system(cmd), 0, "%s", cmd);
        expect_error(path, cases[i].part1, cases[i].part2);
    }
    /* a Llama config with a partial rotary: transformers' Llama turns whole heads */
    in_repo(src, "tests/ref/stories260K-hf");
    snprintf(cmd, sizeof cmd, "rm -rf %s/p3 && mkdir -p %s/p3 && cp %s/* %s/p3/ && sed -i 's/\"rms_norm_eps\"/"
             "\"partial_rotary_factor\": 0.5, \"rms_norm_eps\"/' %s/p3/config.json && grep -q partial %s/p3/config.json",
             dir, dir, src, dir, dir, dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    expect_error(path, "config.json: partial_rotary_factor", "Llama, Mistral and Qwen models turn every pair");
    in_repo(src, "tests/ref/hf-phi3-tiny");
    /* the early Phi-3 configs' name of the type, su, is longrope (as llama.cpp's converter reads it) */
    snprintf(cmd, sizeof cmd, "rm -rf %s/p3 && mkdir -p %s/p3 && cp %s/* %s/p3/ && sed -i 's/\"longrope\"/\"su\"/' "
             "%s/p3/config.json && grep -q '\"su\"' %s/p3/config.json", dir, dir, src, dir, dir, dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    struct lx_model m;
    struct lx_ckpt_info info;
    load(&m, &info, path);
    cr_expect(strstr(info.stack, "{\"longrope\":{\"scale\":4,\"original\":32,"), "%s", info.stack);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* A directory whose weights hold one layer more than config.json says: read as config.json says, the
** last layer left out silently, it scored as another model (NLL 2.497 for stories260K's 1.864 in the
** audit of 2026-12-07). Refused in every family's names, a multimodal one's text tower included
** (its vision tower's own layers are not the text model's). */
Test(hf_families, weights_with_a_layer_config_json_lacks_are_refused)
{
    static const char *const cases[][3] = {
        {"hf-bf16-tiny", "s/\"num_hidden_layers\": 2/\"num_hidden_layers\": 1/", "'model.layers.1.input_layernorm"},
        {"hf-neox-tiny", "s/\"num_hidden_layers\": 2/\"num_hidden_layers\": 1/", "'gpt_neox.layers.1."},
        {"hf-falcon-tiny", "s/\"num_hidden_layers\": 2/\"num_hidden_layers\": 1/", "'transformer.h.1."},
        {"hf-mpt-tiny", "s/\"n_layers\": 2/\"n_layers\": 1/", "'transformer.blocks.1."},
        {"hf-gemma3-mm-tiny", "s/\"num_hidden_layers\": 6/\"num_hidden_layers\": 5/", ".layers.5."},
    };
    char path[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tiny_copy(cases[i][0], "fewer", cases[i][1], path);
        expect_error(path, cases[i][2], "of layer ");
        expect_error(path, "but config.json gives the model ", " layers\n  hint: config.json's layer count is wrong");
    }
}

/* A rope_scaling lenx reads but whose method then refuses it (llama3's factors the wrong way round): refused
** where score and show model load a model (lx_local_load), naming config.json (show model accepted it, and
** score named "checkpoint lenx_stack"). */
Test(hf_families, hf_rope_scaling_its_method_refuses)
{
    hf_copy(CFG_T("llama", ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 4, "
                           "\"high_freq_factor\": 1, \"original_max_position_embeddings\": 128}"));
    char path[600];
    snprintf(path, sizeof path, "%s/hf", dir);
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_error err = {{0}};
    cr_assert_lt(lx_local_load(path, NULL, &m, &info, NULL, &err), 0, "loaded");
    cr_expect(strstr(err.msg, "hf/config.json: rope_scaling (with rope_theta) gives the stack ") &&
                  strstr(err.msg, "which lenx refuses: llama3: needs high_freq_factor > low_freq_factor"),
              "%s", err.msg);
}
