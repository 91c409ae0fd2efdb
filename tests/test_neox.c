/*
** tests/test_neox.c - GPT-NeoX's (Pythia's) Hugging Face directories (docs/checkpoints.md#gpt-neox-and-pythia),
** against torch's float64 forward of random tiny bf16 directories in Pythia's layout
** (tests/ref/neox_ref.py): LayerNorms with their shifts, a bias on every product, q, k and v gathered
** head by head from query_key_value, rope on the first half of each head at rotary_emb_base 5000,
** exact GELU, the parallel residual (and, in hf-neox-seq-tiny, the sequential one), the untied
** embed_out; decoding by the KV cache; the backward through all of it (a Pythia model fine-tunes);
** what is refused.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/formats/gguf_model.h"
#include "harness/engine/formats/hf_model.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "tests/loaders_fixture.h"
#include "tests/hf_tiny.h"

TestSuite(neox, .init = setup, .fini = teardown, .timeout = 120);

/* Both tiny directories (neox_ref.py: two layers of 48, four heads of 12, MLP 96, rotary_pct 0.5): read
** as LayerNorms with shifts, biases, exact GELU, the parallel residual or not, untied, on rope half at
** 5000 over 6 channels of each head; torch's float64 forward of the upcast weights, at 32 and 48 tokens,
** within 1e-4 per token and per logit, in fast and in portable numerics. Each part is what the test
** sees: the other residual, no shifts (the norm biases zeroed) or rope over whole heads put the model
** far off. */
Test(neox, neox_matches_torch)
{
    for (int seq = 0; seq < 2; seq++) {
        struct lx_model m;
        struct lx_ckpt_info info;
        struct lx_json *doc = tiny(seq ? "hf-neox-seq-tiny" : "hf-neox-tiny", &m, &info);
        const struct lx_arch *a = &m.arch;
        cr_expect(a->norm == LX_NORM_LAYER && a->bias && a->qkv_bias && a->mlp == LX_MLP_GELU_ERF && !a->tie_head &&
                  a->parallel == !seq && a->heads == 4 && a->d_head == 12 && a->d_mlp == 96, "arch as loaded");
        cr_expect_str_eq(info.stack, "[{\"rope\":{\"base\":5000,\"layout\":\"half\",\"dims\":6}}]");
        enum lx_numerics keep = lx_numerics_get();
        for (int k = 0; k < 2; k++) {
            lx_numerics_set(k ? LX_NUMERICS_PORTABLE : LX_NUMERICS_FAST);
            windows_vs_torch(&m, info.stack, doc, seq ? (k ? "sequential, portable" : "sequential, fast")
                                                      : (k ? "parallel, portable" : "parallel, fast"));
        }
        lx_numerics_set(keep);
        double dnll, dlogit;
        m.arch.parallel = seq;
        torch_window(&m, info.stack, doc, 1, 48, &dnll, &dlogit);
        cr_expect_gt(dnll, 1e-2, "the other residual: max |dNLL| only %g", dnll);
        m.arch.parallel = !seq;
        torch_window(&m, "[{\"rope\":{\"base\":5000,\"layout\":\"half\"}}]", doc, 1, 48, &dnll, &dlogit);
        cr_expect_gt(dnll, 1e-2, "rope over whole heads: max |dNLL| only %g", dnll);
        for (long l = 0; l < a->layers; l++)
            memset(m.v.layer[l].attn_norm_b, 0, sizeof(float) * (size_t)a->d_model);
        torch_window(&m, info.stack, doc, 1, 48, &dnll, &dlogit);
        cr_expect_gt(dnll, 1e-2, "no shifts: max |dNLL| only %g", dnll);
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
        lx_json_free(doc);
    }
}

Test(neox, decoding_equals_the_full_forward)
{
    decoding_vs_full("tests/ref/hf-neox-tiny");
    decoding_vs_full("tests/ref/hf-neox-seq-tiny");
}

/* lenx's tensor name of a GPT-NeoX directory's (the loader's mapping) and how many it is:
** query_key_value is wq, wk and wv (and their biases), adjacent in lenx's buffer. */
static int neox_name(char out[64], const char *hf, int flag)
{
    int l, at;
    const char *kind = strstr(hf, ".bias") ? "bias" : "weight";
    (void)flag;
    if (!strcmp(hf, "gpt_neox.embed_in.weight") || !strcmp(hf, "embed_out.weight")) {
        snprintf(out, 64, "%s", hf[0] == 'g' ? "tok_emb.weight" : "lm_head.weight");
        return 1;
    }
    if (!strncmp(hf, "gpt_neox.final_layer_norm.", 26)) {
        snprintf(out, 64, "norm.%s", kind);
        return 1;
    }
    cr_assert_eq(sscanf(hf, "gpt_neox.layers.%d.%n", &l, &at), 1, "%s", hf);
    return fused_layer_name(out, hf, hf + at, l, "attention.");
}

Test(neox, gradients_match_torch)
{
    grads_vs_torch("hf-neox-tiny", neox_name, fused_heads_index, 0, "neox parallel");
    grads_vs_torch("hf-neox-seq-tiny", neox_name, fused_heads_index, 0, "neox sequential");
}

/* What lenx's engine does not run is refused naming the field; a tanh-form activation loads as lenx's
** gelu. */
Test(neox, configs_refused)
{
    static const struct {
        const char *sed, *part1, *part2;
    } cases[] = {
        {"s/\"hidden_act\": \"gelu\"/\"hidden_act\": \"relu\"/", "hidden_act 'relu'", "gelu (exact)"},
        {"s/\"rotary_pct\": 0.5/\"rotary_pct\": 0.1/", "rotary_pct 0.1 of a head of 12 is 1 channels",
         "an even number"},
        {"s/\"num_attention_heads\": 4/\"num_attention_heads\": 5/", "num_attention_heads 5 of hidden_size 48",
         "whole, even"},
        {"s/\"use_cache\": true/\"use_cache\": true, \"attention_bias\": false/", "attention_bias",
         "does not run"},
    };
    char path[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tiny_copy("hf-neox-tiny", "neox", cases[i].sed, path);
        expect_error(path, cases[i].part1, cases[i].part2);
    }
    struct lx_model m;
    struct lx_ckpt_info info;
    tiny_copy("hf-neox-tiny", "neox", "s/\"hidden_act\": \"gelu\"/\"hidden_act\": \"gelu_new\"/", path);
    load(&m, &info, path);
    cr_expect_eq(m.arch.mlp, LX_MLP_GELU, "gelu_new is GELU's tanh form");
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* A GPT-NeoX model is not written by the exporters (Llama's and Gemma's families): refused, naming its
** LayerNorms. */
Test(neox, export_refused)
{
    char path[512], out[600];
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_error err = {{0}};
    in_repo(path, "tests/ref/hf-neox-tiny");
    load(&m, &info, path);
    snprintf(out, sizeof out, "%s/neox.gguf", dir);
    cr_expect_eq(lx_gguf_export(&m, &info, &lx_byte_tokenizer, out, LX_DT_F32, NULL, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "LayerNorms"), "%s", err.msg);
    snprintf(out, sizeof out, "%s/neox-hf", dir);
    cr_expect_eq(lx_hf_export(&m, &info, NULL, out, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "LayerNorms"), "%s", err.msg);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* llama.cpp's converter's GGUF of the tiny directory, read as llama.cpp runs it (gguf_as_directory): the
** gptneox file holds no rope.freq_base here (its converter writes none for GPT-NeoX), so llama.cpp
** turns it at 10000, and so does lenx (the stack read: base 10000 over the file's 6 channels). */
Test(neox, gguf_runs_as_llama_cpp_reads_it)
{
    gguf_as_directory("neox");
}
