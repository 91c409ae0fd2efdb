/*
** tests/test_gptj.c - GPT-J's Hugging Face directories (docs/checkpoints.md#gpt-j), against torch's
** float64 forward of a random tiny bf16 directory in GPT-J-6B's layout (tests/ref/gptj_ref.py): the
** parallel block under one LayerNorm with its shift (arch parallel, shared_norm, norm_bias), no biases
** on the attention's products, biases on the MLP's and on the logits (arch mlp_bias, head_bias), rope on
** the first rotary_dim channels in neighbouring pairs (interleaved, dims), GELU's tanh form; decoding by
** the KV cache; the backward through all of it; what is refused.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/formats/hf_model.h"
#include "harness/engine/kernels/numerics.h"
#include "tests/loaders_fixture.h"
#include "tests/hf_tiny.h"

TestSuite(gptj, .init = setup, .fini = teardown, .timeout = 120);

/* The tiny directory (gptj_ref.py: two layers of 48, four heads of 12, MLP 192, rotary_dim 8): read as
** one LayerNorm a layer with shifts, the MLP's and the logits' biases and no others, GELU's tanh form,
** untied, rope interleaved at 10000 over 8 channels of each head; torch's float64 forward of the upcast
** weights, at 32 and 48 tokens, within 1e-4 per token and per logit, in fast and in portable numerics.
** Each part is what the test sees: rope in halves (rotate_half's pairing) or over whole heads, or no
** logits' bias, put the model far off. */
Test(gptj, gptj_matches_torch)
{
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_json *doc = tiny("hf-gptj-tiny", &m, &info);
    const struct lx_arch *a = &m.arch;
    cr_expect(a->norm == LX_NORM_LAYER && !a->bias && !a->qkv_bias && a->norm_bias && a->mlp_bias && a->head_bias &&
              a->parallel && a->shared_norm && a->mlp == LX_MLP_GELU && !a->tie_head && a->heads == 4 &&
              a->d_head == 12 && a->d_mlp == 192, "arch as loaded");
    cr_expect_str_eq(info.stack, "[{\"rope\":{\"base\":10000,\"layout\":\"interleaved\",\"dims\":8}}]");
    enum lx_numerics keep = lx_numerics_get();
    for (int k = 0; k < 2; k++) {
        lx_numerics_set(k ? LX_NUMERICS_PORTABLE : LX_NUMERICS_FAST);
        windows_vs_torch(&m, info.stack, doc, k ? "gpt-j, portable" : "gpt-j, fast");
    }
    lx_numerics_set(keep);
    double dnll, dlogit;
    torch_window(&m, "[{\"rope\":{\"base\":10000,\"layout\":\"half\",\"dims\":8}}]", doc, 1, 48, &dnll, &dlogit);
    cr_expect_gt(dnll, 1e-2, "rope in halves: max |dNLL| only %g", dnll);
    torch_window(&m, "[{\"rope\":{\"base\":10000,\"layout\":\"interleaved\"}}]", doc, 1, 48, &dnll, &dlogit);
    cr_expect_gt(dnll, 1e-2, "rope over whole heads: max |dNLL| only %g", dnll);
    m.v.head_b = NULL;
    torch_window(&m, info.stack, doc, 1, 48, &dnll, &dlogit);
    cr_expect_gt(dnll, 1e-2, "no logits' bias: max |dNLL| only %g", dnll);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    lx_json_free(doc);
}

Test(gptj, decoding_equals_the_full_forward)
{
    decoding_vs_full("tests/ref/hf-gptj-tiny");
}

/* lenx's tensor name of a GPT-J directory's (the loader's mapping): one each. */
static int gptj_name(char out[64], const char *hf, int flag)
{
    static const char *const map[][2] = {
        {"ln_1", "attn_norm"},       {"attn.q_proj", "attn.wq"}, {"attn.k_proj", "attn.wk"}, {"attn.v_proj", "attn.wv"},
        {"attn.out_proj", "attn.wo"}, {"mlp.fc_in", "mlp.w1"},    {"mlp.fc_out", "mlp.w2"},
    };
    (void)flag;
    return table_name(out, hf, "transformer.wte.weight", "transformer.ln_f.", "transformer.h.", map,
                      sizeof map / sizeof *map);
}

Test(gptj, gradients_match_torch)
{
    grads_vs_torch("hf-gptj-tiny", gptj_name, NULL, 0, "gpt-j");
}

/* What lenx's engine does not run is refused naming the field; the generic names read as GPT-J's. */
Test(gptj, configs_refused)
{
    static const struct {
        const char *sed, *part1, *part2;
    } cases[] = {
        {"s/\"activation_function\": \"gelu_new\"/\"activation_function\": \"relu\"/", "activation_function 'relu'",
         "gelu (exact)"},
        {"s/\"rotary_dim\": 8/\"rotary_dim\": 7/", "rotary_dim 7 of a head of 12", "an even number"},
        {"s/\"n_head\": 4/\"n_head\": 5/", "5 heads of a width of 48", "whole, even"},
    };
    char path[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tiny_copy("hf-gptj-tiny", "gptj", cases[i].sed, path);
        expect_error(path, cases[i].part1, cases[i].part2);
    }
    struct lx_model m;
    struct lx_ckpt_info info;
    tiny_copy("hf-gptj-tiny", "gptj", "s/\"n_embd\"/\"hidden_size\"/; s/\"n_layer\"/\"num_hidden_layers\"/", path);
    load(&m, &info, path);
    cr_expect(m.arch.d_model == 48 && m.arch.layers == 2, "the generic names read");
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}
