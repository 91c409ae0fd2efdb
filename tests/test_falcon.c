/*
** tests/test_falcon.c - Falcon's Hugging Face directories (docs/checkpoints.md#falcon), against torch's
** float64 forward of random tiny bf16 directories in Falcon's layouts (tests/ref/falcon_ref.py):
** Falcon-7B's block (one key/value head, q|k|v row blocks of query_key_value used in place, the
** parallel block under one LayerNorm: arch shared_norm), Falcon-40B's (new_decoder_architecture: two key/value
** groups gathered from query_key_value, ln_attn and ln_mlp, an untied head) and a multi-head sequential
** block with biases; LayerNorms with shifts throughout (arch norm_bias without biases); decoding by the KV
** cache; the backward through all of it (one gain and shift serving both branches gets both gradients);
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
#include "harness/sweep/grid.h"
#include "harness/sweep/models.h"
#include "tests/loaders_fixture.h"
#include "tests/hf_tiny.h"

TestSuite(falcon, .init = setup, .fini = teardown, .timeout = 120);

static const char *const dirs[] = {"hf-falcon-tiny", "hf-falcon-new-tiny", "hf-falcon-seq-tiny", "hf-falcon-rw-tiny"};

/* The four tiny directories (falcon_ref.py: two layers of 48, six heads of 8, rope_theta 5000): read as
** LayerNorms with shifts, exact GELU, whole-head rope at 5000, and each its block (the 7B's: one key/value
** head, parallel under one norm, tied, MLP 192; the 40B's: two key/value heads, parallel under two norms,
** untied, MLP 192; the sequential one: six key/value heads, biases, MLP 96 from ffn_hidden_size;
** Falcon-RW's: that block under ALiBi, its slopes times 1/sqrt(8): alibi's scale); torch's float64
** forward of the upcast weights, at 32 and 48 tokens, within 1e-4 per token and per logit, in fast and in
** portable numerics. Falcon-RW's slopes are seen: ALiBi's own (no PI) puts the model far off. */
Test(falcon, falcon_matches_torch)
{
    static const struct {
        long kv, mlp;
        int parallel, shared, bias, tied;
    } want[] = {{1, 192, 1, 1, 0, 1}, {2, 192, 1, 0, 0, 0}, {6, 96, 0, 0, 1, 1}, {6, 96, 0, 0, 1, 1}};
    for (int k = 0; k < 4; k++) {
        struct lx_model m;
        struct lx_ckpt_info info;
        struct lx_json *doc = tiny(dirs[k], &m, &info);
        const struct lx_arch *a = &m.arch;
        cr_expect(a->norm == LX_NORM_LAYER && a->mlp == LX_MLP_GELU_ERF && a->heads == 6 && a->d_head == 8 &&
                  lx_arch_kv(a) == want[k].kv && a->d_mlp == want[k].mlp && a->parallel == want[k].parallel &&
                  a->shared_norm == want[k].shared && a->bias == want[k].bias && a->norm_bias == !want[k].bias &&
                  a->tie_head == want[k].tied, "%s: arch as loaded", dirs[k]);
        cr_expect_str_eq(info.stack, k < 3 ? "[{\"rope\":{\"base\":5000,\"layout\":\"half\"}}]"
                                           : "[{\"alibi\":{\"max_bias\":8,\"scale\":0.35355339059327373}}]", "%s",
                         dirs[k]);
        enum lx_numerics keep = lx_numerics_get();
        for (int p = 0; p < 2; p++) {
            char who[96];
            snprintf(who, sizeof who, "%s, %s", dirs[k], p ? "portable" : "fast");
            lx_numerics_set(p ? LX_NUMERICS_PORTABLE : LX_NUMERICS_FAST);
            windows_vs_torch(&m, info.stack, doc, who);
        }
        lx_numerics_set(keep);
        double dnll, dlogit;
        torch_window(&m, "[{\"alibi\":{\"max_bias\":8}}]", doc, 1, 48, &dnll, &dlogit);
        cr_expect(k < 3 || dnll > 1e-2, "Falcon-RW under ALiBi's own slopes: max |dNLL| only %g", dnll);
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
        lx_json_free(doc);
    }
}

/* The parts each block is seen to have: Falcon-7B's MLP reading a norm of its own (gains 1, no shift),
** Falcon-40B's ln_mlp replaced by its ln_attn, and (in either) no shifts on the attention's norm, each put
** the model far off. */
Test(falcon, each_part_is_seen)
{
    for (int k = 0; k < 4; k++) {     /* 7B, 40B: the MLP's other norm; then 7B, 40B: no shifts */
        struct lx_model m;
        struct lx_ckpt_info info;
        struct lx_json *doc = tiny(dirs[k % 2], &m, &info);
        lx_model_own(&m);
        long C = m.arch.d_model;
        float *one = malloc(sizeof(float) * (size_t)C), *zero = calloc((size_t)C, sizeof(float));
        for (long c = 0; c < C; c++)
            one[c] = 1.0f;
        for (long l = 0; l < m.arch.layers; l++) {
            struct lx_layer_w *W = &m.v.layer[l];
            if (k >= 2)
                memset(W->attn_norm_b, 0, sizeof(float) * (size_t)C);
            else
                W->mlp_norm = k ? W->attn_norm : one, W->mlp_norm_b = k ? W->attn_norm_b : zero;
        }
        double dnll, dlogit;
        torch_window(&m, info.stack, doc, 1, 48, &dnll, &dlogit);
        cr_expect_gt(dnll, 1e-2, "%s, %s: max |dNLL| only %g", dirs[k % 2], k < 2 ? "the MLP's other norm"
                     : "no shifts", dnll);
        free(one), free(zero);
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
        lx_json_free(doc);
    }
}

Test(falcon, decoding_equals_the_full_forward)
{
    for (int k = 0; k < 4; k++) {
        char rel[64];
        snprintf(rel, sizeof rel, "tests/ref/%s", dirs[k]);
        decoding_vs_full(rel);
    }
}

/* lenx's tensor name of a Falcon directory's (the loader's mapping) and how many it is: query_key_value
** is wq, wk and wv (and their biases), adjacent in lenx's buffer. */
static int falcon_name(char out[64], const char *hf, int flag)
{
    int l, at;
    (void)flag;
    if (!strcmp(hf, "transformer.word_embeddings.weight") || !strcmp(hf, "lm_head.weight")) {
        snprintf(out, 64, "%s", hf[0] == 't' ? "tok_emb.weight" : "lm_head.weight");
        return 1;
    }
    if (!strncmp(hf, "transformer.ln_f.", 17)) {
        snprintf(out, 64, "norm.%s", hf + 17);
        return 1;
    }
    cr_assert_eq(sscanf(hf, "transformer.h.%d.%n", &l, &at), 1, "%s", hf);
    return fused_layer_name(out, hf, hf + at, l, "self_attention.");
}

/* The backward against torch's autograd for the three blocks: the 7B's one LayerNorm gets the
** gradients of both branches. */
Test(falcon, gradients_match_torch)
{
    for (int k = 0; k < 4; k++)
        grads_vs_torch(dirs[k], falcon_name, fused_heads_index, 0, dirs[k]);
}

/* What lenx's engine or transformers' Falcon does not run is refused naming the field; a tanh-form
** activation loads as lenx's gelu. */
Test(falcon, configs_refused)
{
    static const struct {
        const char *sed, *part1, *part2;
    } cases[] = {
        {"s/\"activation\": \"gelu\"/\"activation\": \"relu\"/", "activation 'relu'", "gelu (exact)"},
        {"s/\"num_attention_heads\": 6/\"num_attention_heads\": 5/", "5 heads of a width of 48", "whole, even"},
        {"s/\"apply_residual_connection_post_layernorm\": false/\"apply_residual_connection_post_layernorm\": "
         "true/", "apply_residual_connection_post_layernorm", "normed rows"},
        {"s/\"new_decoder_architecture\": false/\"new_decoder_architecture\": true, \"num_kv_heads\": 4/",
         "4 key/value heads for 6 heads", "divide"},
        {"s/\"multi_query\": true/\"multi_query\": false, \"num_kv_heads\": 2/", "2 key/value heads for 6 heads",
         "multi-head"},
        {"s/\"new_decoder_architecture\": false/\"new_decoder_architecture\": true, \"num_kv_heads\": 2, "
         "\"num_ln_in_parallel_attn\": 1/; s/\"parallel_attn\": true/\"parallel_attn\": false/", "parallel_attn: false",
         "num_ln_in_parallel_attn 1"},
    };
    char path[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tiny_copy("hf-falcon-tiny", "falcon", cases[i].sed, path);
        expect_error(path, cases[i].part1, cases[i].part2);
    }
    struct lx_model m;
    struct lx_ckpt_info info;
    tiny_copy("hf-falcon-tiny", "falcon", "s/\"activation\": \"gelu\"/\"activation\": \"gelu_pytorch_tanh\"/", path);
    load(&m, &info, path);
    cr_expect_eq(m.arch.mlp, LX_MLP_GELU, "gelu_pytorch_tanh is GELU's tanh form");
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* The old field names (n_head, n_layer, n_embed; FalconConfig's attribute_map) read as the new ones. */
Test(falcon, old_field_names)
{
    char path[512];
    struct lx_model m;
    struct lx_ckpt_info info;
    tiny_copy("hf-falcon-tiny", "falcon", "s/\"hidden_size\"/\"n_embed\"/; s/\"num_attention_heads\"/\"n_head\"/; "
              "s/\"num_hidden_layers\"/\"n_layer\"/", path);
    load(&m, &info, path);
    cr_expect(m.arch.d_model == 48 && m.arch.heads == 6 && m.arch.layers == 2, "the old names read");
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* A sweep's arch: norm_bias and shared_norm (Falcon-7B's block, trained from scratch) hold the tensors
** they say: a shift on every LayerNorm, one LayerNorm a layer, no projection biases; and what no model
** runs is refused where it is written, with a hint. */
Test(falcon, arch_rows_in_a_sweep)
{
#define SWEEP(arch) "name: t\nmodels:\n  m: {arch: " arch ", train: {length: 32}}\n" \
                    "methods: [rope]\ntasks: [ppl]\nlengths: [32]\n"
    struct lx_grid g;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_grid_load_text(&g, SWEEP("{layers: 1, norm: layer, norm_bias: true, parallel: true, "
                                             "shared_norm: true}"), "ok.yaml", &err), LX_OK, "%s", err.msg);
    const struct lx_arch *a = &g.models[0].arch;
    int n = lx_arch_tensors(a, NULL);
    struct lx_tensor_info *ti = calloc((size_t)n, sizeof *ti);
    lx_arch_tensors(a, ti);
    char names[1024] = "";
    for (int i = 0; i < n; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s ", ti[i].name);
    cr_expect_str_eq(names, "tok_emb.weight layers.0.attn_norm.weight layers.0.attn_norm.bias layers.0.attn.wq.weight "
                     "layers.0.attn.wk.weight layers.0.attn.wv.weight layers.0.attn.wo.weight layers.0.mlp.w1.weight "
                     "layers.0.mlp.w2.weight norm.weight norm.bias lm_head.weight ");
    free(ti);
    lx_grid_release(&g);
    static const char *const bad[][2] = {
        {SWEEP("{norm: layer, bias: true, norm_bias: true}"), "norm_bias with bias: true"},
        {SWEEP("{norm_bias: true}"), "norm_bias with RMSNorms"},
        {SWEEP("{norm: layer, shared_norm: true}"), "shared_norm without parallel"},
        {SWEEP("{norm: layer, bias: true, mlp_bias: true}"), "mlp_bias with bias: true"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_expect_eq(lx_grid_load_text(&g, bad[i][0], "bad.yaml", &err), LX_EINVAL, "%s", bad[i][0]);
        cr_expect(strncmp(err.msg, "bad.yaml:3:", 11) == 0 && strstr(err.msg, bad[i][1]) && strstr(err.msg, "hint: "),
                  "expected bad.yaml:3:, '%s' and a hint in: %s", bad[i][1], err.msg);
        lx_grid_release(&g);
    }
#undef SWEEP
}

/* llama.cpp's converter's GGUF of the tiny Falcon-7B and Falcon-40B directories, read as llama.cpp runs
** them (gguf_as_directory): the converter regroups query_key_value into q|k|v blocks and writes ln_attn
** as attn_norm_2, ln_mlp as attn_norm; it writes no rope.freq_base, so llama.cpp turns at 10000, and so
** does lenx (the stack read). */
Test(falcon, gguf_runs_as_llama_cpp_reads_it)
{
    gguf_as_directory("falcon");
    gguf_as_directory("falcon-new");
}
