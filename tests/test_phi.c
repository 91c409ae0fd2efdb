/*
** tests/test_phi.c - Phi's Hugging Face directories (Phi-2's block; docs/checkpoints.md#phi-2), against
** torch's float64 forward of a random tiny bf16 directory in Phi-2's layout (tests/ref/phi_ref.py):
** the parallel block under one LayerNorm with its shift (arch parallel, shared_norm), a bias on every
** product and on the logits (arch bias, head_bias), rope in halves on the first half of each head at
** rope_theta 5000, GELU's tanh form; decoding by the KV cache; the backward through all of it (the one
** norm getting both branches' gradients, the logits' bias its own); what is refused.
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

TestSuite(phi, .init = setup, .fini = teardown, .timeout = 120);

/* The tiny directory (phi_ref.py: two layers of 48, four heads of 12, MLP 192, partial_rotary_factor
** 0.5): read as one LayerNorm a layer with shifts, every bias and the logits' bias, GELU's tanh form,
** untied, rope half at 5000 over 6 channels of each head; torch's float64 forward of the upcast weights,
** at 32 and 48 tokens, within 1e-4 per token and per logit, in fast and in portable numerics. Each part is
** what the test sees: no logits' bias, the MLP under a norm of its own (gains 1, no shift), or rope over
** whole heads put the model far off. */
Test(phi, phi2_matches_torch)
{
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_json *doc = tiny("hf-phi2-tiny", &m, &info);
    const struct lx_arch *a = &m.arch;
    cr_expect(a->norm == LX_NORM_LAYER && a->bias && a->qkv_bias && a->head_bias && a->parallel && a->shared_norm &&
              a->mlp == LX_MLP_GELU && !a->tie_head && a->heads == 4 && a->d_head == 12 && a->d_mlp == 192,
              "arch as loaded");
    cr_expect_str_eq(info.stack, "[{\"rope\":{\"base\":5000,\"layout\":\"half\",\"dims\":6}}]");
    enum lx_numerics keep = lx_numerics_get();
    for (int k = 0; k < 2; k++) {
        lx_numerics_set(k ? LX_NUMERICS_PORTABLE : LX_NUMERICS_FAST);
        windows_vs_torch(&m, info.stack, doc, k ? "phi-2, portable" : "phi-2, fast");
    }
    lx_numerics_set(keep);
    double dnll, dlogit;
    torch_window(&m, "[{\"rope\":{\"base\":5000,\"layout\":\"half\"}}]", doc, 1, 48, &dnll, &dlogit);
    cr_expect_gt(dnll, 1e-2, "rope over whole heads: max |dNLL| only %g", dnll);
    lx_model_own(&m);
    long C = m.arch.d_model;
    float *one = malloc(sizeof(float) * (size_t)C), *zero = calloc((size_t)C, sizeof(float)), *b = m.v.head_b;
    for (long c = 0; c < C; c++)
        one[c] = 1.0f;
    m.v.head_b = NULL;
    torch_window(&m, info.stack, doc, 1, 48, &dnll, &dlogit);
    cr_expect_gt(dnll, 1e-2, "no logits' bias: max |dNLL| only %g", dnll);
    m.v.head_b = b;
    for (long l = 0; l < m.arch.layers; l++)
        m.v.layer[l].mlp_norm = one, m.v.layer[l].mlp_norm_b = zero;
    torch_window(&m, info.stack, doc, 1, 48, &dnll, &dlogit);
    cr_expect_gt(dnll, 1e-2, "the MLP under a norm of its own: max |dNLL| only %g", dnll);
    free(one), free(zero);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    lx_json_free(doc);
}

Test(phi, decoding_equals_the_full_forward)
{
    decoding_vs_full("tests/ref/hf-phi2-tiny");
}

/* lenx's tensor name of a Phi directory's (the loader's mapping): one each. */
static int phi_name(char out[64], const char *hf, int flag)
{
    static const char *const map[][2] = {
        {"input_layernorm", "attn_norm"}, {"self_attn.q_proj", "attn.wq"}, {"self_attn.k_proj", "attn.wk"},
        {"self_attn.v_proj", "attn.wv"},  {"self_attn.dense", "attn.wo"},  {"mlp.fc1", "mlp.w1"},
        {"mlp.fc2", "mlp.w2"},
    };
    (void)flag;
    return table_name(out, hf, "model.embed_tokens.weight", "model.final_layernorm.", "model.layers.", map,
                      sizeof map / sizeof *map);
}

/* The backward against torch's autograd: the one norm gets both branches' gradients, lm_head.bias the
** sum of the logits' gradients. */
Test(phi, gradients_match_torch)
{
    grads_vs_torch("hf-phi2-tiny", phi_name, NULL, 0, "phi-2");
}

/* What lenx's engine does not run is refused naming the field; gelu (exact) loads as gelu_erf. */
Test(phi, configs_refused)
{
    static const struct {
        const char *sed, *part1, *part2;
    } cases[] = {
        {"s/\"qk_layernorm\": false/\"qk_layernorm\": true/", "qk_layernorm: true", "does not run"},
        {"s/\"hidden_act\": \"gelu_new\"/\"hidden_act\": \"relu\"/", "hidden_act 'relu'", "gelu (exact)"},
        {"s/\"partial_rotary_factor\": 0.5/\"partial_rotary_factor\": 0.1/", "partial_rotary_factor 0.1 of a head "
         "of 12 is 1 channels", "an even number"},
        {"s/\"num_attention_heads\": 4/\"num_attention_heads\": 5/", "num_attention_heads 5 of hidden_size 48",
         "whole, even"},
        {"s/\"use_cache\": true/\"use_cache\": true, \"num_key_value_heads\": 3/", "num_key_value_heads 3",
         "does not divide"},
    };
    char path[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tiny_copy("hf-phi2-tiny", "phi", cases[i].sed, path);
        expect_error(path, cases[i].part1, cases[i].part2);
    }
    struct lx_model m;
    struct lx_ckpt_info info;
    tiny_copy("hf-phi2-tiny", "phi", "s/\"hidden_act\": \"gelu_new\"/\"hidden_act\": \"gelu\"/", path);
    load(&m, &info, path);
    cr_expect_eq(m.arch.mlp, LX_MLP_GELU_ERF, "gelu is GELU's exact form");
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* llama.cpp's converter's GGUF of the tiny directory (phi2: q, k and v as three tensors with their
** biases, output.bias the logits' bias), read as llama.cpp runs it (gguf_as_directory): the same weights
** bit for bit; the converter writes no rope.freq_base, so llama.cpp turns at 10000, and so does lenx. */
Test(phi, gguf_runs_as_llama_cpp_reads_it)
{
    gguf_as_directory("phi2");
}
