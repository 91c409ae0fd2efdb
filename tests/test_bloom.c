/*
** tests/test_bloom.c - BLOOM's Hugging Face directories (docs/checkpoints.md#bloom), against torch's
** float64 forward of a random tiny bf16 directory in bloom-560m's layout (tests/ref/bloom_ref.py): the
** embedding LayerNorm, LayerNorms with shifts, a bias on every product, q, k and v gathered head by
** head from query_key_value, ALiBi with BLOOM's slopes for six heads, GELU's tanh form, the tied head;
** the same weights under "transformer."; decoding by the KV cache; the backward; what is refused.
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

TestSuite(bloom, .init = setup, .fini = teardown, .timeout = 120);

/* The tiny BLOOM (bloom_ref.py: two layers of 48, six heads of 8, MLP 192): read as the embedding
** LayerNorm, LayerNorms with shifts, biases, GELU's tanh form, tied, on its native stack of ALiBi at
** max_bias 8; torch's float64 forward within 1e-4 per token and per logit at 32 and 48 tokens, in fast and
** portable numerics. Each part is what the test sees: without the embedding LayerNorm, or with other
** slopes (max_bias 4), the model is far off. The same weights named under "transformer." (as
** BloomForCausalLM saves them) are the same model. */
Test(bloom, bloom_matches_torch)
{
    struct lx_model m, p;
    struct lx_ckpt_info info, pinfo;
    struct lx_json *doc = tiny("hf-bloom-tiny", &m, &info);
    const struct lx_arch *a = &m.arch;
    cr_expect(a->norm == LX_NORM_LAYER && a->bias && a->emb_norm && a->mlp == LX_MLP_GELU && a->tie_head &&
              !a->parallel && a->heads == 6 && a->d_head == 8 && a->d_mlp == 192, "arch as loaded");
    cr_expect_str_eq(info.stack, "[{\"alibi\":{\"max_bias\":8}}]");
    enum lx_numerics keep = lx_numerics_get();
    for (int k = 0; k < 2; k++) {
        lx_numerics_set(k ? LX_NUMERICS_PORTABLE : LX_NUMERICS_FAST);
        windows_vs_torch(&m, info.stack, doc, k ? "bloom, portable" : "bloom, fast");
    }
    lx_numerics_set(keep);
    char path[512];
    in_repo(path, "tests/ref/hf-bloom-prefixed-tiny");
    load(&p, &pinfo, path);
    cr_expect_str_eq(pinfo.weights_sha256, info.weights_sha256);
    windows_vs_torch(&p, pinfo.stack, doc, "bloom, transformer.");
    double dnll, dlogit;
    torch_window(&m, "[{\"alibi\":{\"max_bias\":4}}]", doc, 1, 48, &dnll, &dlogit);
    cr_expect_gt(dnll, 1e-2, "max_bias 4: max |dNLL| only %g", dnll);
    m.arch.emb_norm = 0;
    torch_window(&m, info.stack, doc, 1, 48, &dnll, &dlogit);
    cr_expect_gt(dnll, 1e-2, "no embedding LayerNorm: max |dNLL| only %g", dnll);
    m.arch.emb_norm = 1;
    lx_ckpt_info_release(&pinfo);
    lx_model_release(&p);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    lx_json_free(doc);
}

Test(bloom, decoding_equals_the_full_forward)
{
    decoding_vs_full("tests/ref/hf-bloom-tiny");
}

/* lenx's tensor name of a BLOOM directory's (the loader's mapping) and how many it is:
** query_key_value is wq, wk and wv (and their biases), adjacent in lenx's buffer. */
static int bloom_name(char out[64], const char *hf, int flag)
{
    int l, at;
    const char *kind = strstr(hf, ".bias") ? "bias" : "weight";
    (void)flag;
    if (!strcmp(hf, "word_embeddings.weight")) {
        snprintf(out, 64, "tok_emb.weight");
        return 1;
    }
    if (!strncmp(hf, "word_embeddings_layernorm.", 26) || !strncmp(hf, "ln_f.", 5)) {
        snprintf(out, 64, "%s.%s", hf[0] == 'w' ? "emb_norm" : "norm", kind);
        return 1;
    }
    cr_assert_eq(sscanf(hf, "h.%d.%n", &l, &at), 1, "%s", hf);
    return fused_layer_name(out, hf, hf + at, l, "self_attention.");
}

/* The backward through the embedding LayerNorm (its gain's and shift's gradients, and the tied
** embedding's from both uses) and every bias, against torch's autograd. */
Test(bloom, gradients_match_torch)
{
    grads_vs_torch("hf-bloom-tiny", bloom_name, fused_heads_index, 0, "bloom");
}

/* What lenx's engine does not run is refused naming the field. */
Test(bloom, configs_refused)
{
    static const struct {
        const char *sed, *part1, *part2;
    } cases[] = {
        {"s/\"apply_residual_connection_post_layernorm\": false/\"apply_residual_connection_post_layernorm\": true/",
         "apply_residual_connection_post_layernorm", "carries the normed rows"},
        {"s/\"n_head\": 6/\"n_head\": 5/", "5 heads of a width of 48", "whole"},
    };
    char path[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tiny_copy("hf-bloom-tiny", "bloom", cases[i].sed, path);
        expect_error(path, cases[i].part1, cases[i].part2);
    }
}

/* llama.cpp's converter's GGUF of the tiny directory, read as llama.cpp runs it (gguf_as_directory): the
** bloom file's ALiBi is llama.cpp's, max_bias 8. */
Test(bloom, gguf_runs_as_llama_cpp_reads_it)
{
    gguf_as_directory("bloom");
}
