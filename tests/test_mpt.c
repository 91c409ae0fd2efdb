/*
** tests/test_mpt.c - MPT's Hugging Face directories (docs/checkpoints.md#mpt), against torch's
** float64 forward of a random tiny bf16 directory in MPT-7B's layout (tests/ref/mpt_ref.py):
** LayerNorms without a bias, exact GELU, ALiBi with MPT's slopes for six heads at alibi_bias_max 6,
** the tied head; position interpolation on its ALiBi (Al-Khateeb et al. 2023); decoding by the KV
** cache; the backward (an MPT model fine-tunes); what is refused. The engine's pieces on their own,
** LayerNorm and exact GELU, are checked by hand and against finite differences in tests/test_ops.c.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/engine/formats/gguf_model.h"
#include "harness/engine/formats/hf_model.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "tests/loaders_fixture.h"
#include "tests/hf_tiny.h"

TestSuite(mpt, .init = setup, .fini = teardown, .timeout = 120);

/* The tiny MPT (mpt_ref.py): two layers of 48, six heads of 8, MLP 192, read as LayerNorms, exact GELU,
** tied, on its native stack of ALiBi with max_bias 6 (alibi_bias_max): torch's float64 forward of the
** upcast weights, at 32 and 48 tokens, within 1e-4 per token and per logit (fp32 sums against float64),
** in fast and in portable numerics. Each of the parts is what the test sees: RMSNorms, GELU's tanh form
** or the default slopes (max_bias 8) put the model far off. */
Test(mpt, mpt_matches_torch)
{
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_json *doc = tiny("hf-mpt-tiny", &m, &info);
    const struct lx_arch *a = &m.arch;
    cr_expect(a->norm == LX_NORM_LAYER && a->mlp == LX_MLP_GELU_ERF && a->tie_head && a->heads == 6 &&
              a->d_head == 8 && a->d_mlp == 192 && !a->kv_heads && a->norm_eps == 1e-5, "arch as loaded");
    cr_expect_str_eq(info.stack, "[{\"alibi\":{\"max_bias\":6}}]");
    cr_expect(!info.eval_stack && info.train_len == 64, "train_len %ld", info.train_len);
    enum lx_numerics keep = lx_numerics_get();
    for (int k = 0; k < 2; k++) {
        lx_numerics_set(k ? LX_NUMERICS_PORTABLE : LX_NUMERICS_FAST);
        windows_vs_torch(&m, info.stack, doc, k ? "mpt, portable" : "mpt, fast");
    }
    lx_numerics_set(keep);
    double dnll, dlogit;
    m.arch.norm = LX_NORM_RMS;
    torch_window(&m, info.stack, doc, 1, 48, &dnll, &dlogit);
    cr_expect_gt(dnll, 1e-2, "RMSNorms: max |dNLL| only %g", dnll);
    m.arch.norm = LX_NORM_LAYER, m.arch.mlp = LX_MLP_GELU;
    torch_window(&m, info.stack, doc, 1, 48, &dnll, &dlogit);
    cr_expect_gt(dlogit, 1e-3, "GELU's tanh form: max |dlogit| only %g", dlogit);
    m.arch.mlp = LX_MLP_GELU_ERF;
    torch_window(&m, "[{\"alibi\":{\"max_bias\":8}}]", doc, 1, 48, &dnll, &dlogit);
    cr_expect_gt(dnll, 1e-2, "max_bias 8: max |dNLL| only %g", dnll);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    lx_json_free(doc);
}

/* PI on MPT's ALiBi at scale 2 (the evaluation stack [alibi, pi]) is torch's forward with every slope
** halved (ref.json's "pi": the 48-token window), within 1e-4; and far from the model without it. */
Test(mpt, position_interpolation_on_its_alibi_matches_torch)
{
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_json *doc = tiny("hf-mpt-tiny", &m, &info);
    const struct lx_jv *pi = lx_json_member(lx_json_root(doc), "pi");
    const struct lx_jv *nll = lx_json_member(pi, "nll"), *last = lx_json_member(pi, "last_logits");
    struct lx_error err = {{0}};
    int tok[64], tgt[64], T = torch_window_ids(doc, 1, tok, tgt), V = (int)m.arch.vocab;
    struct tstack s;
    struct lx_facts f = tfacts(8, 64, 6, T);
    tstack_make(&s, "[{\"alibi\":{\"max_bias\":6}},{\"pi\":{\"scale\":2}}]", &f);
    struct lx_acts a;
    cr_assert_eq(lx_acts_alloc(&a, &m.arch, 1, T, 0, &err), LX_OK, "%s", err.msg);
    lx_model_forward(&m, &s.spec, tok, tgt, &a);
    double dnll = 0, dlogit = 0, r;
    for (int t = 0; t < T - 1; t++) {
        cr_assert_eq(lx_json_num(doc, lx_json_at(nll, t), &r, &err), LX_OK);
        dnll = fmax(dnll, fabs(a.loss[t] - r));
    }
    for (int v = 0; v < V; v++) {
        cr_assert_eq(lx_json_num(doc, lx_json_at(last, v), &r, &err), LX_OK);
        dlogit = fmax(dlogit, fabs(a.logits[(long)(T - 1) * V + v] - r));
    }
    cr_log_info("mpt with pi 2: max |dNLL| %.3g, max |dlogit| %.3g", dnll, dlogit);
    cr_expect(dnll < 1e-4 && dlogit < 1e-4, "max |dNLL| %g, max |dlogit| %g", dnll, dlogit);
    double plain, plain_logit;
    torch_window(&m, info.stack, doc, 1, 48, &plain, &plain_logit);
    cr_expect_lt(plain, 1e-4, "the plain window still matches: %g", plain);
    for (int t = 0; t < T - 1; t++) {       /* the PI reference is not the plain one */
        double p;
        cr_assert_eq(lx_json_num(doc, lx_json_at(nll, t), &r, &err), LX_OK);
        cr_assert_eq(lx_json_num(doc, lx_json_at(lx_json_member(lx_json_at(lx_json_member(lx_json_root(doc),
                     "windows"), 1), "nll"), t), &p, &err), LX_OK);
        plain = t ? fmax(plain, fabs(p - r)) : fabs(p - r);
    }
    cr_expect_gt(plain, 1e-2, "PI changes the window by only %g", plain);
    lx_acts_release(&a);
    tstack_free(&s);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    lx_json_free(doc);
}

Test(mpt, decoding_equals_the_full_forward)
{
    decoding_vs_full("tests/ref/hf-mpt-tiny");
}

/* lenx's tensor name of an MPT directory's (the loader's mapping) and how many it is: Wqkv is wq, wk and
** wv, adjacent in lenx's buffer, so an index into Wqkv is one from wq's start. */
static int mpt_name(char out[64], const char *hf, int flag)
{
    static const char *const map[][2] = {
        {"norm_1", "attn_norm"}, {"attn.Wqkv", "attn.wq"}, {"attn.out_proj", "attn.wo"},
        {"norm_2", "mlp_norm"},  {"ffn.up_proj", "mlp.w1"}, {"ffn.down_proj", "mlp.w2"},
    };
    int l, at;
    (void)flag;
    if (!strcmp(hf, "transformer.wte.weight") || !strcmp(hf, "transformer.norm_f.weight")) {
        snprintf(out, 64, "%s", hf[12] == 'w' ? "tok_emb.weight" : "norm.weight");
        return 1;
    }
    cr_assert_eq(sscanf(hf, "transformer.blocks.%d.%n", &l, &at), 1, "%s", hf);
    for (size_t k = 0; k < sizeof map / sizeof *map; k++)
        if (!strncmp(hf + at, map[k][0], strlen(map[k][0]))) {
            snprintf(out, 64, "layers.%d.%s.weight", l, map[k][1]);
            return k == 1 ? 3 : 1;
        }
    cr_assert_fail("no lenx name for %s", hf);
    return 0;
}

Test(mpt, gradients_match_torch)
{
    grads_vs_torch("hf-mpt-tiny", mpt_name, NULL, 0, "mpt");
}

/* What transformers' MPT or lenx's engine does not run is refused naming the field. */
Test(mpt, configs_refused)
{
    static const struct {
        const char *sed, *part1, *part2;
    } cases[] = {
        {"s/\"alibi\": true/\"alibi\": false/", "alibi", "positions other than ALiBi"},
        {"s/\"no_bias\": true/\"no_bias\": false/", "no_bias", "biases on every projection"},
        {"s/\"clip_qkv\": null/\"clip_qkv\": 6/", "clip_qkv", "clipped"},
        {"s/\"qk_ln\": false/\"qk_ln\": true/", "qk_ln", "LayerNorms of q and k"},
        {"s/\"softmax_scale\": null/\"softmax_scale\": 0.5/", "softmax_scale", "1/sqrt(head dim)"},
        {"s/\"prefix_lm\": false/\"prefix_lm\": true/", "prefix_lm", "a prefix LM"},
        {"s/\"logit_scale\": null/\"logit_scale\": 0.25/", "logit_scale", "the output logits scaled"},
        {"s/\"multihead_attention\"/\"multiquery_attention\"/", "attn_type 'multiquery_attention'",
         "multihead_attention"},
        {"s/\"low_precision_layernorm\"/\"rmsnorm\"/", "norm_type 'rmsnorm'", "low_precision_layernorm"},
        {"s/\"expansion_ratio\": 4/\"expansion_ratio\": 2.01/", "expansion_ratio", "a whole number"},
        {"s/\"n_heads\": 6/\"n_heads\": 5/", "n_heads 5", "does not divide d_model 48"},
        {"s/\"attn_config\": {/\"ffn_config\": {\"ffn_type\": \"mptglu\"}, \"attn_config\": {/",
         "ffn_type 'mptglu'", "mptmlp"},
    };
    char path[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tiny_copy("hf-mpt-tiny", "mpt", cases[i].sed, path);
        expect_error(path, cases[i].part1, cases[i].part2);
    }
}

/* An MPT model is not written as a Llama-family directory or GGUF file: refused, naming its LayerNorms
** and exact GELU, before any file is written. */
Test(mpt, export_refused)
{
    char path[512], out[600];
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_error err = {{0}};
    in_repo(path, "tests/ref/hf-mpt-tiny");
    load(&m, &info, path);
    snprintf(out, sizeof out, "%s/mpt.gguf", dir);
    cr_expect_eq(lx_gguf_export(&m, &info, &lx_byte_tokenizer, out, LX_DT_F32, NULL, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "GELU (erf)") && strstr(err.msg, "LayerNorms"), "%s", err.msg);
    snprintf(out, sizeof out, "%s/mpt-hf", dir);
    cr_expect_eq(lx_hf_export(&m, &info, NULL, out, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "LayerNorms"), "%s", err.msg);
    struct stat sb;
    cr_expect_neq(stat(out, &sb), 0, "%s was written", out);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* llama.cpp's converter's GGUF of the tiny directory, read as llama.cpp runs it (gguf_as_directory): its
** LayerNorms without shifts, q|k|v in attn_qkv, GELU's tanh form, ALiBi at the file's max_alibi_bias (6). */
Test(mpt, gguf_runs_as_llama_cpp_reads_it)
{
    gguf_as_directory("mpt");
}
