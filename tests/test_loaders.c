/*
** tests/test_loaders.c - models made elsewhere: llama2.c's stories260K against
** the outputs of llama2.c's own run.c (logits at 512 teacher-forced positions,
** 200 greedy steps), the same model converted to a Hugging Face directory by
** tests/ref/llama2c_to_hf.py (BF16 one file; F16 in two shards), `lenx export
** --hf` read back, and every bad input the loaders name. The directories'
** tokenizer.json (converted from tok512.bin by the same script) encodes as
** tok512.bin does, and `lenx score` finds it beside the model.
**
** The model and run.c's outputs are read from ../shared/models/stories260K
** beside the checkout ($LENX_ROOT; $LENX_MODELS overrides the models folder);
** the tests that need them skip, saying so, when the folder is absent.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/formats/hf_model.h"
#include "harness/engine/formats/safetensors.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/core/json.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/wprod.h"
#include "harness/commands/export.h"
#include "harness/commands/show.h"
#include "harness/commands/score.h"
#include "tests/loaders_fixture.h"
#include "tests/stack.h"

#define N_POS 512       /* records in logits_story.bin */
#define V 512           /* stories260K's vocabulary */

TestSuite(loaders, .init = setup, .fini = teardown, .timeout = 120);

/* A file of the stories260K folder into out; 0 (after cr_skip) when absent. */
static void shared(char out[512], const char *file)
{
    const char *models = getenv("LENX_MODELS"), *root = getenv("LENX_ROOT");
    if (models)
        snprintf(out, 512, "%s/stories260K/%s", models, file);
    else
        snprintf(out, 512, "%s/../shared/models/stories260K/%s", root ? root : ".", file);
    struct stat sb;
    if (stat(out, &sb) != 0)
        cr_skip_test("%s is absent: the llama2.c reference model is not on this machine", out);
}

/* Logits (T, V) of tokens under the model's native stack. */
static float *logits_of(const struct lx_model *m, const char *stack, const int *tok, int T)
{
    struct tstack s;
    struct lx_facts f = tfacts((int)m->arch.d_head, 512, (int)m->arch.heads, T);
    tstack_make(&s, stack, &f);
    struct lx_acts a;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_acts_alloc(&a, &m->arch, 1, T, 0, &err), LX_OK, "%s", err.msg);
    lx_model_forward(m, &s.spec, tok, NULL, &a);
    float *out = lx_xmalloc(sizeof(float) * (size_t)T * V);
    memcpy(out, a.logits, sizeof(float) * (size_t)T * V);
    lx_acts_release(&a);
    tstack_free(&s);
    return out;
}

/* run.c's records (int32 token, int32 pos, float32[512]) of logits_story.bin. */
static float *reference(int *tok)
{
    char path[512];
    shared(path, "expected/logits_story.bin");
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp);
    float *want = lx_xmalloc(sizeof(float) * N_POS * V);
    for (int i = 0; i < N_POS; i++) {
        int32_t hdr[2];
        cr_assert_eq(fread(hdr, 4, 2, fp), 2u);
        cr_assert_eq(hdr[1], i, "record %d holds position %d", i, hdr[1]);
        tok[i] = hdr[0];
        cr_assert_eq(fread(want + (size_t)i * V, 4, V, fp), (size_t)V);
    }
    fclose(fp);
    return want;
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double d = 0;
    for (size_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

/* The .bin's logits at the 512 positions of run.c's teacher-forced story. */
static float *bin_logits(int *tok)
{
    char path[512];
    struct lx_model m;
    struct lx_ckpt_info info;
    shared(path, "stories260K.bin");
    load(&m, &info, path);
    float *got = logits_of(&m, info.stack, tok, N_POS);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    return got;
}

Test(loaders, llama2c_header)
{
    char path[512];
    struct lx_model m;
    struct lx_ckpt_info info;
    shared(path, "stories260K.bin");
    load(&m, &info, path);
    cr_expect_str_eq(info.format, "llama2c");
    cr_expect_eq(m.arch.layers, 5);
    cr_expect_eq(m.arch.d_model, 64);
    cr_expect_eq(m.arch.heads, 8);
    cr_expect_eq(m.arch.d_head, 8);
    cr_expect_eq(m.arch.d_mlp, 172);
    cr_expect_eq(m.arch.vocab, 512);
    cr_expect_eq(m.arch.mlp, LX_MLP_SWIGLU);
    cr_expect_eq(info.kv_heads, 4);
    cr_expect_eq(info.tied, 1);
    cr_expect_eq(info.train_len, 512);
    cr_expect_str_eq(info.stack, "[{\"rope\":{\"base\":10000,\"layout\":\"interleaved\"}}]");
    cr_expect_str_eq(info.sha256, "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696");
    cr_assert_not_null(info.tokenizer);
    cr_expect(strstr(info.tokenizer, "/tok512.bin") != NULL, "%s", info.tokenizer);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* Acceptance: within 1e-4 of run.c at every one of the 512 positions. */
Test(loaders, llama2c_logits_match_run_c)
{
    int tok[N_POS];
    float *want = reference(tok);
    float *got = bin_logits(tok);
    double worst = 0;
    for (int i = 0; i < N_POS; i++) {
        double d = max_diff(got + (size_t)i * V, want + (size_t)i * V, V);
        cr_expect_leq(d, 1e-4, "position %d: max |logit - run.c| = %g", i, d);
        worst = fmax(worst, d);
    }
    cr_log_info("stories260K.bin vs run.c: max |logit diff| %.3g over 512 positions", worst);
    free(got);
    free(want);
}

/* tok512.bin (int32 max_len, then per token: float score, int32 len, bytes)
** decodes like run.c's decode(): no space after BOS, <0xNN> is a byte, and
** safe_printf drops unprintable single bytes. */
static void decode_append(struct lx_buf *out, FILE *tokfile, int prev, int id)
{
    int32_t maxlen, len;
    float score;
    char piece[256];
    rewind(tokfile);
    cr_assert_eq(fread(&maxlen, 4, 1, tokfile), 1u);
    for (int i = 0; i <= id; i++) {
        cr_assert_eq(fread(&score, 4, 1, tokfile), 1u);
        cr_assert_eq(fread(&len, 4, 1, tokfile), 1u);
        cr_assert(len >= 0 && len < 256);
        cr_assert_eq(fread(piece, 1, (size_t)len, tokfile), (size_t)len);
        piece[len] = '\0';
    }
    const char *p = prev == 1 && piece[0] == ' ' ? piece + 1 : piece;
    unsigned byte;
    if (sscanf(p, "<0x%02X>", &byte) == 1 && strlen(p) == 6) {
        if (byte >= 0x20 ? byte < 0x7F : (byte == '\n' || byte == '\t' || byte == ' ' || byte == '\r'))
            lx_buf_printf(out, "%c", (char)byte);
        return;
    }
    lx_buf_puts(out, p);
}

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* Acceptance: run.c -t 0 -n 200 from BOS; its text decodes our ids. */
Test(loaders, llama2c_greedy_200_steps)
{
    char path[512], tokpath[512];
    struct lx_model m;
    struct lx_ckpt_info info;
    shared(path, "stories260K.bin");
    shared(tokpath, "tok512.bin");
    load(&m, &info, path);
    int tok[201] = {1};     /* BOS */
    struct lx_buf text = {0};
    FILE *tf = fopen(tokpath, "rb");
    cr_assert_not_null(tf);
    int T = 1;
    for (int step = 0; step < 200; step++) {
        float *lg = logits_of(&m, info.stack, tok, T);
        int next = argmax(lg + (size_t)(T - 1) * V, V);
        free(lg);
        if (next == 1)
            break;
        decode_append(&text, tf, tok[T - 1], next);
        tok[T++] = next;
    }
    fclose(tf);
    lx_buf_puts(&text, "\n");
    unsigned char *want;
    long n;
    struct lx_error err = {{0}};
    shared(path, "expected/greedy_empty_200.txt");
    cr_assert_eq(lx_read_file(path, &want, &n, 0, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(T, 201, "%d tokens before BOS", T - 1);
    cr_expect_str_eq(lx_buf_str(&text), (const char *)want);
    struct lx_tokenizer *tk;          /* the engine's llama2.c tokenizer decodes the ids to the same text */
    struct lx_buf dec = {0};
    cr_assert_eq(lx_tokenizer_open(&tk, tokpath, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_tokenizer_decode(tk, tok, T, &dec, &err), LX_OK, "%s", err.msg);
    lx_buf_puts(&dec, "\n");
    cr_expect_str_eq(lx_buf_str(&dec), (const char *)want);
    lx_buf_free(&dec);
    lx_tokenizer_free(tk);
    free(want);
    lx_buf_free(&text);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* The HF directories from tests/ref/llama2c_to_hf.py: same logits as the .bin
** within the rounding of their dtype. BF16 keeps 8 significant bits (each
** weight off by at most 2^-9 relative), F16 11 bits (2^-12): the logit error
** should scale by 2^3 between them, and does (measured max over 512 x 512
** logits: BF16 0.162, F16 0.0171). The bounds leave about 2x room: 0.3, 0.04.
** Both are also asserted non-zero: a loader that read F32 by mistake fails. */
static void hf_matches_bin(const char *rel, const char *dtype, double tol)
{
    int tok[N_POS];
    float *want = reference(tok);
    float *bin = bin_logits(tok);
    char path[512];
    struct lx_model m;
    struct lx_ckpt_info info;
    in_repo(path, rel);
    load(&m, &info, path);
    cr_expect_str_eq(info.format, "hf");
    cr_expect_str_eq(info.dtype, dtype);
    cr_expect_str_eq(info.stack, "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}}]");
    cr_expect_eq(info.kv_heads, 4);
    float *got = logits_of(&m, info.stack, tok, N_POS);
    double d = max_diff(got, bin, (size_t)N_POS * V);
    cr_expect_leq(d, tol, "%s: max |logit - .bin| = %g", rel, d);
    cr_expect_gt(d, 0, "%s: no rounding at all: is the dtype really %s?", rel, dtype);
    cr_log_info("%s (%s) vs stories260K.bin: max |logit diff| %.3g", rel, dtype, d);
    free(got);
    free(bin);
    free(want);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

Test(loaders, hf_bf16_matches_bin)
{
    hf_matches_bin("tests/ref/stories260K-hf", "BF16", 0.3);
}

Test(loaders, hf_f16_two_shards_match_bin)
{
    hf_matches_bin("tests/ref/stories260K-hf-f16-2shards", "F16", 0.04);
}

/* lenx export --hf of the .bin (interleaved rope: q/k rows permuted to
** half-split) reads back as the same model. */
Test(loaders, export_hf_round_trip)
{
    int tok[N_POS];
    float *want = reference(tok);
    float *bin = bin_logits(tok);
    char path[512], out[600];
    struct lx_model m, back;
    struct lx_ckpt_info info, binfo;
    struct lx_error err = {{0}};
    shared(path, "stories260K.bin");
    load(&m, &info, path);
    snprintf(out, sizeof out, "%s/exported", dir);
    cr_assert_eq(lx_hf_export(&m, &info, NULL, out, &err), LX_OK, "%s", err.msg);
    load(&back, &binfo, out);
    cr_expect_str_eq(binfo.dtype, "F32");
    cr_expect_str_eq(binfo.stack, "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}}]");
    float *got = logits_of(&back, binfo.stack, tok, N_POS);
    double d = max_diff(got, bin, (size_t)N_POS * V);
    cr_expect_leq(d, 1e-4, "exported: max |logit - .bin| = %g", d);
    cr_log_info("exported F32 directory vs stories260K.bin: max |logit diff| %.3g", d);
    free(got);
    free(bin);
    free(want);
    lx_ckpt_info_release(&binfo);
    lx_ckpt_info_release(&info);
    lx_model_release(&back);
    lx_model_release(&m);
}

/* A model deeper than the 64 blocks lenx trains (Llama 2 and 3 70B have 80):
** stories260K's five blocks repeated to 80 as a llama2.c file load, and its
** Hugging Face export loads back with the same logits (both readers capped
** files at 64 blocks, while GGUF's took 1,024). */
Test(loaders, eighty_layers_load_and_export)
{
    char path[512], out[600];
    shared(path, "stories260K.bin");
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp);
    static unsigned char in[1 << 21];
    size_t n_in = fread(in, 1, sizeof in, fp);
    fclose(fp);
    int32_t h[7];
    memcpy(h, in, sizeof h);
    size_t C = (size_t)h[0], F = (size_t)h[1], L = (size_t)h[2], kvd = C * (size_t)h[4] / (size_t)h[3], D = 80;
    const size_t per[9] = {C, C * C, C * kvd, C * kvd, C * C, C, F * C, C * F, F * C};  /* rms_att .. w3 */
    size_t n_out = n_in + 4 * (D - L) * (per[0] + per[1] + per[2] + per[3] + per[4] + per[5] + per[6] + per[7] +
                                         per[8]);
    unsigned char *o = lx_xmalloc(n_out), *w = o;
    const unsigned char *r = in + sizeof h + 4 * (size_t)abs(h[5]) * C;
    h[2] = (int32_t)D;
    memcpy(w, h, sizeof h), w += sizeof h;
    memcpy(w, in + sizeof h, (size_t)(r - in) - sizeof h), w += (size_t)(r - in) - sizeof h;   /* the embedding */
    for (int t = 0; t < 9; t++) {
        for (size_t l = 0; l < D; l++)
            memcpy(w, r + 4 * (l % L) * per[t], 4 * per[t]), w += 4 * per[t];
        r += 4 * L * per[t];
    }
    memcpy(w, r, n_in - (size_t)(r - in)), w += n_in - (size_t)(r - in);    /* the final norm and the rest */
    cr_assert_eq((size_t)(w - o), n_out);
    put_file("deep.bin", o, n_out);
    free(o);
    struct lx_model m, back;
    struct lx_ckpt_info info, binfo;
    struct lx_error err = {{0}};
    snprintf(path, sizeof path, "%s/deep.bin", dir);
    load(&m, &info, path);
    cr_expect_eq(m.arch.layers, 80);
    int tok[8] = {1, 385, 328, 432, 300, 301, 302, 303};
    float *a = logits_of(&m, info.stack, tok, 8);
    snprintf(out, sizeof out, "%s/deep-hf", dir);
    cr_assert_eq(lx_hf_export(&m, &info, NULL, out, &err), LX_OK, "%s", err.msg);
    load(&back, &binfo, out);
    cr_expect_eq(back.arch.layers, 80);
    float *b = logits_of(&back, binfo.stack, tok, 8);
    double d = max_diff(a, b, (size_t)8 * V), top = max_diff(a, (float[8 * V]){0}, (size_t)8 * V);
    cr_expect(isfinite(top) && d <= 1e-5 * top + 1e-5, "exported 80 blocks: max |logit diff| %g of %g", d, top);
    free(a);
    free(b);
    lx_ckpt_info_release(&binfo);
    lx_ckpt_info_release(&info);
    lx_model_release(&back);
    lx_model_release(&m);
}

/* ---- bad inputs: each error names the file and the field ---- */

Test(loaders, llama2c_impossible_header)
{
    int32_t h[8] = {64, 172, 5, 0, 4, 512, 512, 0};
    char path[600];
    put_file("zero.bin", h, sizeof h);
    snprintf(path, sizeof path, "%s/zero.bin", dir);
    expect_error(path, "zero.bin: llama2.c header field n_heads is 0", "outside [1, 256]");
    int32_t g[8] = {64, 172, 5, 8, 3, 512, 512, 0};     /* 8 heads cannot share 3 kv heads */
    put_file("gqa.bin", g, sizeof g);
    snprintf(path, sizeof path, "%s/gqa.bin", dir);
    expect_error(path, "gqa.bin: llama2.c header", "n_heads a multiple of n_kv_heads 3");
}

Test(loaders, llama2c_truncated)
{
    char path[512], out[600];
    unsigned char *b;
    long n;
    struct lx_error err = {{0}};
    shared(path, "stories260K.bin");
    cr_assert_eq(lx_read_file(path, &b, &n, 0, &err), LX_OK);
    put_file("short.bin", b, (size_t)n - 100);
    free(b);
    snprintf(out, sizeof out, "%s/short.bin", dir);
    expect_error(out, "short.bin: the file is 1056440 bytes, but its llama2.c header", "says 1056540");
}

/* stories260K's config.json with `layers` blocks, `tie` and extra fields. */
#define CFG(layers, tie, extra) "{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 172, " \
    "\"num_hidden_layers\": " #layers ", \"num_attention_heads\": 8, \"num_key_value_heads\": 4, " \
    "\"vocab_size\": 512, \"tie_word_embeddings\": " #tie extra "}"

Test(loaders, hf_bad_config)
{
    static const char *const cases[][3] = {
        {"{\"model_type\": \"gpt2\"}", "hf/config.json: model_type", "'gpt2' is not one lenx reads"},
        {CFG(5, true, ", \"hidden_act\": \"gelu\""), "config.json: hidden_act", "'gelu'"},
        {CFG(5, true, ", \"rope_scaling\": {\"type\": \"linear\", \"factor\": \"4\"}"),
         "config.json: rope_scaling.factor", "a string where transformers reads a number"},
        {CFG(5, true, ", \"rope_theta\": 10000, \"rope_parameters\": {\"rope_type\": \"default\", "
                      "\"rope_theta\": 5e5}"),
         "config.json: rope_parameters", "rope_parameters' rope_theta differs from the top-level rope_theta"},
        {CFG(5, true, ", \"rope_scaling\": {\"rope_type\": \"mrope\", \"factor\": 4}"),
         "config.json: rope_scaling.rope_type", "'mrope' has no lenx method"},
        {CFG(5, true, ", \"rope_scaling\": {\"rope_type\": \"longrope\", \"short_factor\": [1, 1, 1, 1]}"),
         "config.json: rope_scaling", "has no long_factor"},
        {CFG(0, true, ""), "config.json", "num_hidden_layers is 0"},
        /* named at its own key, not at the tie_word_embeddings: true before it (jansson shares one `true`) */
        {CFG(5, true, ", \"attention_bias\": true"), "config.json: attention_bias: attention_bias: true", "o_proj"},
        {CFG(5, true, ", \"dual_chunk_attention_config\": {\"chunk_size\": 64, \"local_size\": 64}"),
         "config.json: dual_chunk_attention_config", "1 <= local_size < chunk_size, got chunk_size 64, local_size 64"},
        {CFG(5, true, ", \"dual_chunk_attention_config\": [262144]"), "config.json: dual_chunk_attention_config",
         "must be an object or null"},
    };
    hf_cases(cases, (int)(sizeof cases / sizeof *cases));
}

Test(loaders, hf_shape_and_missing_tensor)
{
    static const char *const cases[][3] = {
        {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 100, \"num_hidden_layers\": 5,"
         "\"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"vocab_size\": 512, \"tie_word_embeddings\": true}",
         "tensor 'model.layers.0.mlp.gate_proj.weight' in", "has shape [172, 64], expected [100, 64]"},
        {CFG(6, true, ""), "no tensor 'model.layers.5.input_layernorm.weight'", "model.safetensors"},
        {CFG(5, false, ""), "hf: no tensor 'lm_head.weight'", "model.safetensors"},
        {CFG(4, true, ""), "its weights hold 'model.layers.4.input_layernorm.weight', of layer 4",
         "config.json gives the model 4 layers"},
    };
    hf_cases(cases, (int)(sizeof cases / sizeof *cases));
}

Test(loaders, hf_truncated_shard_missing_file_empty_index)
{
    char src[512], path[600], cmd[1400];
    in_repo(src, "tests/ref/stories260K-hf-f16-2shards");
    snprintf(cmd, sizeof cmd, "mkdir -p %s/sh && cp %s/* %s/sh/ && truncate -s 200000 "
             "%s/sh/model-00002-of-00002.safetensors", dir, src, dir, dir);
    cr_assert_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/sh", dir);
    expect_error(path, "model-00002-of-00002.safetensors: tensor", "run past the end");
    snprintf(cmd, sizeof cmd, "rm %s/sh/model-00002-of-00002.safetensors", dir);
    cr_assert_eq(system(cmd), 0);
    expect_error(path, "model.safetensors.index.json: weight_map", "model-00002-of-00002.safetensors: cannot open");
    /* an index naming no shard: the file and the field, not "no tensor ... ((null))" */
    snprintf(cmd, sizeof cmd, "echo '{\"weight_map\": {}}' > %s/sh/model.safetensors.index.json", dir);
    cr_assert_eq(system(cmd), 0);
    expect_error(path, "sh/model.safetensors.index.json", "weight_map names no shard");
    struct lx_model m;
    struct lx_error err = {{0}};
    cr_assert_lt(lx_model_load(&m, path, NULL, &err), 0);
    cr_expect(strstr(err.msg, "(null)") == NULL, "%s", err.msg);
}

/* A config.json whose rope_scaling lenx's method refuses (yarn beta_fast < 0)
** is refused by `show model` as by `score`, naming config.json and the
** field, not "checkpoint lenx_stack". */
Test(loaders, hf_bad_rope_scaling_named_by_show_and_score)
{
    char src[512], cmd[1600];
    in_repo(src, "tests/ref/stories260K-hf");
    snprintf(cmd, sizeof cmd, "mkdir -p %s/y && cp %s/* %s/y/ && sed -i 's/\"rope_scaling\": *null/"
             "\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4, \"beta_fast\": -5}/' %s/y/config.json && "
             "grep -q beta_fast %s/y/config.json", dir, src, dir, dir, dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    char path[600], want[700];
    snprintf(path, sizeof path, "%s/y", dir);
    snprintf(want, sizeof want, "%s/y/config.json: rope_scaling", dir);
    struct lx_buf out = {0};
    struct lx_error err = {{0}};
    cr_expect_eq(lx_show_model(path, "none.db", 0, &out, &err), LX_EINVAL, "show model accepted it:\n%s",
                 lx_buf_str(&out));
    cr_expect(strstr(err.msg, want) && strstr(err.msg, "beta_fast") && !strstr(err.msg, "lenx_stack"), "%s",
              err.msg);
    lx_buf_free(&out);
    char text[512];
    in_repo(text, "README.md");
    struct lx_score_opts o = {.model = path, .db = "none.db", .text = text, .length = 64};
    err.msg[0] = '\0';
    cr_expect_eq(lx_score(&o, &out, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, want) && strstr(err.msg, "beta_fast") && !strstr(err.msg, "lenx_stack"), "%s",
              err.msg);
    lx_buf_free(&out);
}

/* F16 and BF16 bit patterns widen to the values IEEE 754 defines. */
Test(loaders, dtype_conversion)
{
    const uint16_t h[] = {0x3C00, 0xC000, 0x0001, 0x7BFF, 0x7C00, 0x3555, 0x8000};
    const float hv[] = {1.0f, -2.0f, 5.9604644775390625e-08f, 65504.0f, INFINITY, 0.333251953125f, -0.0f};
    const uint16_t b[] = {0x3F80, 0x4049, 0xC2F7, 0x0000};
    const float bv[] = {1.0f, 3.140625f, -123.5f, 0.0f};
    float out[7];
    lx_st_to_f32(out, h, LX_ST_F16, 7);
    for (int i = 0; i < 7; i++)
        cr_expect_eq(out[i], hv[i], "F16 %04x -> %g, want %g", h[i], out[i], hv[i]);
    cr_expect(signbit(out[6]));
    lx_st_to_f32(out, b, LX_ST_BF16, 4);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(out[i], bv[i], "BF16 %04x -> %g, want %g", b[i], out[i], bv[i]);
}

/* Models transformers' Llama cannot express are refused, naming why. */
Test(loaders, export_refuses)
{
    static const char *const cases[][2] = {
        {"tests/ref/model_ckpt_causal_rope.safetensors", "this model is causal with a GELU MLP"},
        {"tests/ref/model_ckpt_mlm_logn.safetensors", "this model is a masked LM"},
    };
    for (int i = 0; i < 2; i++) {
        char path[512], out[600];
        struct lx_error err = {{0}};
        in_repo(path, cases[i][0]);
        snprintf(out, sizeof out, "%s/x", dir);
        cr_expect_lt(lx_export_model(path, "none.db", NULL, out, &err), 0);
        cr_expect(strstr(err.msg, cases[i][1]) != NULL, "%s: %s", cases[i][0], err.msg);
    }
}

static double mean_nll(const char *model, const char *text)
{
    struct lx_score_opts o = {.model = model, .db = "none.db", .text = text, .length = 32};
    struct lx_buf out = {0};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_score(&o, &out, &err), LX_OK, "%s: %s", model, err.msg);
    const char *p = strstr(lx_buf_str(&out), "\"mean_nll\": ");
    cr_assert_not_null(p);
    double v = strtod(p + 12, NULL);
    lx_buf_free(&out);
    return v;
}

/* Save m as a lenx checkpoint <name>.safetensors with interleaved rope,
** export it to <name>-hf, and expect `lenx score` to give the same mean NLL
** on both; the paths go to ck and hf. */
static void export_scores_the_same(const struct lx_model *m, const char *name, char ck[600], char hf[600])
{
    struct lx_error err = {{0}};
    char text[600];
    snprintf(ck, 600, "%s/%s.safetensors", dir, name);
    snprintf(hf, 600, "%s/%s-hf", dir, name);
    snprintf(text, sizeof text, "%s/t.txt", dir);
    struct lx_ckpt_info info = {.stack = "[{rope: {base: 500, layout: interleaved}}]", .train_len = 32};
    cr_assert_eq(lx_model_save(m, ck, &info, &err), LX_OK, "%s", err.msg);
    const char *words = "It is a truth universally acknowledged, that a single man in possession of a good fortune";
    put_file("t.txt", words, strlen(words));
    cr_assert_eq(lx_export_model(ck, "none.db", NULL, hf, &err), LX_OK, "%s", err.msg);
    double a1 = mean_nll(ck, text), a2 = mean_nll(hf, text);
    /* the export permutes q and k rows: each rotary dot product sums its 16
    ** terms in another order (16 · 6e-8 = 1e-6 of a logit at most), and the
    ** kernels round the products apart; 1e-5 relative bounds the mean NLL on
    ** any kernel set, while a wrong permutation moves it by whole nats */
    cr_expect(fabs(a1 - a2) < 1e-5 * fabs(a1), "checkpoint %.9g, export %.9g", a1, a2);
    cr_expect_gt(a1, 1.0);
}

/* A lenx SwiGLU model with interleaved rope: `lenx score` gives the same NLL
** on the checkpoint and on its export (q/k rows permuted to half-split). */
Test(loaders, export_lenx_model_scores_the_same)
{
    struct lx_arch a;
    struct lx_model m;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 32, a.heads = 4, a.d_head = 8, a.d_mlp = 48, a.mlp = LX_MLP_SWIGLU, a.init_std = 0.3;
    lx_model_init(&m, &a, 42);
    char ck[600], hf[600];
    export_scores_the_same(&m, "m", ck, hf);
    lx_model_release(&m);
}

/* Grouped-query heads, q/k/v biases and a tied head survive the export and
** the HF loader as the engine's own (kv_heads, qkv_bias, tie_head): the
** directory is a qwen2 one with 2 key/value heads, no lm_head, and scores
** the same; nonzero biases in rotated (interleaved) q/k rows included. */
Test(loaders, export_gqa_bias_tied_round_trip)
{
    struct lx_arch a;
    struct lx_model m;
    struct lx_error err = {{0}};
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 32, a.heads = 4, a.kv_heads = 2, a.d_head = 8, a.d_mlp = 48, a.mlp = LX_MLP_SWIGLU;
    a.init_std = 0.3, a.qkv_bias = 1, a.tie_head = 1;
    lx_model_init(&m, &a, 43);
    int n = lx_arch_tensors(&a, NULL), biases = 0;
    struct lx_tensor_info *ti = calloc((size_t)n, sizeof *ti);
    lx_arch_tensors(&a, ti);
    for (int i = 0; i < n; i++)
        if (strstr(ti[i].name, ".bias")) {
            for (long j = 0; j < ti[i].shape[0]; j++)
                m.w[ti[i].offset + (size_t)j] = 0.1f * (float)((j * 7 + i) % 11 - 5);
            biases++;
        }
    free(ti);
    cr_assert_eq(biases, 6);
    char ck[600], hf[600], cfg[700];
    export_scores_the_same(&m, "g", ck, hf);
    snprintf(cfg, sizeof cfg, "%s/config.json", hf);
    unsigned char *bytes;
    long len;
    cr_assert_eq(lx_read_file(cfg, &bytes, &len, 0, &err), LX_OK, "%s", err.msg);
    cr_expect(strstr((char *)bytes, "\"model_type\": \"qwen2\"") && strstr((char *)bytes, "\"num_key_value_heads\": 2")
              && strstr((char *)bytes, "\"tie_word_embeddings\": true"), "%s", bytes);
    free(bytes);
    struct lx_model back;
    struct lx_ckpt_info binfo;
    cr_assert_eq(lx_model_load(&back, hf, &binfo, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(back.n_params, m.n_params, "the engine holds the file's tensors as they are");
    cr_expect(back.arch.qkv_bias && back.arch.tie_head && lx_arch_kv(&back.arch) == 2);
    lx_ckpt_info_release(&binfo);
    lx_model_release(&back);
    lx_model_release(&m);
}

/* qk_norm survives the export: a model trained with interleaved rope, whose per-head gains (drawn
** away from 1, different per dimension) must be permuted with the q and k rows into Qwen3's half
** layout, scores the same as its export, a Qwen3ForCausalLM with head_dim 16 on a width of 32. A
** gain left in the interleaved order moves the NLL by far more than the bound. */
Test(loaders, export_qk_norm_round_trip)
{
    struct lx_arch a;
    struct lx_model m;
    struct lx_error err = {{0}};
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 32, a.heads = 4, a.kv_heads = 2, a.d_head = 16, a.d_mlp = 48, a.mlp = LX_MLP_SWIGLU;
    a.init_std = 0.3, a.qk_norm = 1;
    lx_model_init(&m, &a, 44);
    for (long l = 0; l < a.layers; l++)
        for (long d = 0; d < a.d_head; d++) {
            m.v.layer[l].q_norm[d] = 0.5f + 0.1f * (float)((d * 5 + l) % 13);
            m.v.layer[l].k_norm[d] = 1.5f - 0.07f * (float)((d * 3 + 2 * l) % 11);
        }
    char ck[600], hf[600], cfg[700];
    export_scores_the_same(&m, "q", ck, hf);
    snprintf(cfg, sizeof cfg, "%s/config.json", hf);
    unsigned char *bytes;
    long len;
    cr_assert_eq(lx_read_file(cfg, &bytes, &len, 0, &err), LX_OK, "%s", err.msg);
    cr_expect(strstr((char *)bytes, "\"Qwen3ForCausalLM\"") && strstr((char *)bytes, "\"head_dim\": 16"), "%s", bytes);
    free(bytes);
    lx_model_release(&m);
}

/* `lenx score` on the .bin: its tokenizer (tok512.bin beside it) encodes
** story.txt into run.c's input tokens, and the per-token NLL of the first
** window equals -log softmax of run.c's logits at the target. */
Test(loaders, score_llama2c_with_its_tokenizer)
{
    int tok[N_POS];
    float *want = reference(tok);
    char model[512], text[512];
    shared(model, "stories260K.bin");
    shared(text, "expected/story.txt");
    /* score encodes the file as a segment (no dummy prefix, as ppl windows do);
    ** run.c encodes with SentencePiece's dummy prefix space: give it explicitly */
    unsigned char *story;
    long n_story;
    struct lx_error rerr = {{0}};
    cr_assert_eq(lx_read_file(text, &story, &n_story, 0, &rerr), LX_OK, "%s", rerr.msg);
    char spaced[64];
    snprintf(spaced, sizeof spaced, "/tmp/lenx-story-%d.txt", (int)getpid());
    FILE *f = fopen(spaced, "wb");
    cr_assert(f && fputc(' ', f) == ' ' && fwrite(story, 1, (size_t)n_story, f) == (size_t)n_story && fclose(f) == 0);
    free(story);
    struct lx_score_opts o = {.model = model, .db = "none.db", .text = spaced, .length = 512};
    struct lx_buf out = {0};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_score(&o, &out, &err), LX_OK, "%s", err.msg);
    struct lx_json *doc;
    cr_assert_eq(lx_json_parse(&doc, out.s, out.len, "score", &err), LX_OK, "%s", err.msg);
    const struct lx_jv *ids = lx_json_member(lx_json_root(doc), "tokens");
    const struct lx_jv *nll = lx_json_member(lx_json_root(doc), "nll");
    cr_assert_geq(lx_json_len(ids), N_POS);
    double worst = 0;
    for (int i = 0; i + 1 < N_POS; i++) {
        int64_t id;
        double got;
        cr_assert_eq(lx_json_int(doc, lx_json_at(ids, i), &id, &err), LX_OK);
        cr_assert_eq(id, tok[i + 1], "token %d", i);
        cr_assert_eq(lx_json_num(doc, lx_json_at(nll, i), &got, &err), LX_OK);
        const float *z = want + (size_t)i * V;
        double mx = z[0], sum = 0;
        for (int k = 1; k < V; k++)
            mx = fmax(mx, z[k]);
        for (int k = 0; k < V; k++)
            sum += exp(z[k] - mx);
        worst = fmax(worst, fabs(got - (mx + log(sum) - z[tok[i + 1]])));
    }
    cr_expect_leq(worst, 1e-4, "max |nll - run.c's| = %g", worst);
    unlink(spaced);
    lx_json_free(doc);
    lx_buf_free(&out);
    free(want);
}

/* rope_scaling onto lenx's methods: linear -> pi, yarn -> yarn and llama3 ->
** llama3 trained in (the stack compiles, and its frequencies are the rescaled
** ones), dynamic -> ntk as the evaluation stack; dual_chunk_attention_config
** (Qwen2.5-1M) -> dca without mscale as the evaluation stack. */
Test(loaders, hf_rope_scaling_native_stack)
{
    static const char *const cases[][3] = {
        {CFG(5, true, ", \"rope_scaling\": {\"type\": \"linear\", \"factor\": 4.0}"),
         "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}},{\"pi\":{\"scale\":4,\"train\":true}}]", "[]"},
        {CFG(5, true, ", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
                      "\"original_max_position_embeddings\": 128}"),
         "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}},{\"yarn\":{\"scale\":4,\"original\":128,\"beta_fast\":32,"
         "\"beta_slow\":1,\"attn_factor\":1,\"train\":true}}]", "[]"},
        {CFG(5, true, ", \"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 2}"),
         "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}}]", "[{\"ntk\":{\"mode\":\"dynamic\",\"factor\":2}}]"},
        {CFG(5, true, ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
                      "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 32}"),
         "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}},{\"llama3\":{\"scale\":8,\"original\":32,"
         "\"low_freq_factor\":1,\"high_freq_factor\":4,\"train\":true}}]", "[]"},
        {CFG(5, true, ", \"dual_chunk_attention_config\": {\"chunk_size\": 96, \"local_size\": 16, "
                      "\"original_max_position_embeddings\": 128}"),
         "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}}]", "[{\"dca\":{\"chunk\":96,\"local\":16,\"mscale\":false}}]"},
        /* DeepSeek's yarn: mscale = mscale_all_dim, so transformers' attention factor is 1 (lenx's attn_factor
        ** 1 / (0.1 ln 4 + 1)); both were ignored and the default 0.1 ln 4 + 1 scaled every logit */
        {CFG(5, true, ", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, \"mscale\": 0.707, "
                      "\"mscale_all_dim\": 0.707, \"original_max_position_embeddings\": 128}"),
         "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}},{\"yarn\":{\"scale\":4,\"original\":128,\"beta_fast\":32,"
         "\"beta_slow\":1,\"attn_factor\":0.8782488562869419,\"train\":true}}]", "[]"},
        /* transformers 5 writes rope_theta and the rescaling into rope_parameters (they were read as absent:
        ** base 10000, no rescaling) */
        {CFG(5, true, ", \"rope_parameters\": {\"rope_type\": \"linear\", \"factor\": 4.0, \"rope_theta\": 500000.0}"),
         "[{\"rope\":{\"base\":500000,\"layout\":\"half\"}},{\"pi\":{\"scale\":4,\"train\":true}}]", "[]"},
        {CFG(5, true, ", \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 20000.0}"),
         "[{\"rope\":{\"base\":20000,\"layout\":\"half\"}}]", "[]"},
        {CFG(5, true, ", \"rope_theta\": 500000.0, \"rope_parameters\": {\"rope_type\": \"llama3\", \"factor\": 8.0, "
                      "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 32, "
                      "\"rope_theta\": 500000.0}"),
         "[{\"rope\":{\"base\":500000,\"layout\":\"half\"}},{\"llama3\":{\"scale\":8,\"original\":32,"
         "\"low_freq_factor\":1,\"high_freq_factor\":4,\"train\":true}}]", "[]"},
    };
    char path[600];
    snprintf(path, sizeof path, "%s/hf", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct lx_model m;
        struct lx_ckpt_info info;
        struct tstack s;
        hf_copy(cases[i][0]);
        load(&m, &info, path);
        cr_expect_str_eq(info.stack, cases[i][1]);
        cr_expect_str_eq(info.eval_stack ? info.eval_stack : "[]", cases[i][2]);
        struct lx_facts f = tfacts(8, info.train_len, 8, 4096);
        tstack_make(&s, info.stack, &f);
        if (i == 0)     /* PI: every frequency divided by 4 */
            cr_expect_float_eq(s.spec.rotary.inv_freq[1], pow(10000, -2.0 / 8) / 4, 1e-15);
        if (i == 4) {   /* dca: the evaluation stack on the native one, chunks of 96 − 16 = 80, no mscale */
            tstack_free(&s);
            char both[256];
            snprintf(both, sizeof both, "[{\"rope\":{\"base\":10000,\"layout\":\"half\"}},%s", cases[i][2] + 1);
            tstack_make(&s, both, &f);
            cr_expect_eq(s.spec.posmap.period, 80);
            cr_expect_eq(s.spec.posmap.cap, 96);
            cr_expect_eq(s.spec.n_ops, 0);
        }
        if (i == 3) {   /* llama3, D = 8, L = 32: λ_0 = 2π keeps (< 32/4), λ_1 = 2π·10 > 32 gets θ/8 */
            cr_expect_eq(s.spec.rotary.inv_freq[0], 1.0);
            cr_expect_float_eq(s.spec.rotary.inv_freq[1], pow(10000, -2.0 / 8) / 8, 1e-15);
        }
        tstack_free(&s);
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
    }
}

/* ---- the converted tokenizer (tests/ref/llama2c_to_hf.py's tokenizer.json) ---- */

/* ids of text under t (with the format's specials) into *ids, and the decode
** of those ids after BOS back to text (the Hugging Face library, and so lenx,
** decodes a tokenizer.json's BOS as "<s>"; llama2.c drops it). */
static void encode_decode(struct lx_tokenizer *t, const char *text, size_t n, struct lx_ids *ids)
{
    struct lx_error err = {{0}};
    cr_assert_eq(lx_tokenizer_encode(t, text, n, LX_ENC_SPECIALS, ids, &err), LX_OK, "%s", err.msg);
    cr_assert(ids->n > 0 && ids->id[0] == t->bos, "'%.40s' does not start with BOS", text);
    struct lx_buf out = {0};
    cr_assert_eq(lx_tokenizer_decode(t, ids->id + 1, ids->n - 1, &out, &err), LX_OK, "%s", err.msg);
    cr_expect(out.len == n && memcmp(out.s, text, n) == 0, "%s: round trip of '%.40s' gave '%.40s'", t->hash, text,
              lx_buf_str(&out));
    lx_buf_free(&out);
}

/* The same ids under both tokenizers; index of the first difference or -1. */
static long first_diff(const struct lx_ids *a, const struct lx_ids *b)
{
    for (long i = 0; i < a->n && i < b->n; i++)
        if (a->id[i] != b->id[i])
            return i;
    return a->n == b->n ? -1 : (a->n < b->n ? a->n : b->n);
}

static void expect_same_ids(struct lx_tokenizer *hf, struct lx_tokenizer *bin, const char *text, size_t n)
{
    struct lx_ids a = {0}, b = {0};
    encode_decode(hf, text, n, &a);
    encode_decode(bin, text, n, &b);
    long d = first_diff(&a, &b);
    cr_expect_eq(d, -1, "'%.40s': %ld vs %ld ids, first difference at %ld: %d vs %d", text, a.n, b.n, d,
                 d >= 0 && d < a.n ? a.id[d] : -1, d >= 0 && d < b.n ? b.id[d] : -1);
    lx_ids_free(&a);
    lx_ids_free(&b);
}

/* The directory's tokenizer.json (opened by directory, as `lenx tokenize
** --tokenizer DIR` does) encodes as llama2.c's tok512.bin: run.c's ids for
** the 10 strings of expected/encode.json, and the same ids on 16 KB of
** Persuasion; both decode back to the text. */
Test(loaders, hf_tokenizer_json_matches_tok512)
{
    char binpath[512], dirpath[512], ref[512];
    shared(binpath, "tok512.bin");
    shared(ref, "expected/encode.json");
    in_repo(dirpath, "tests/ref/stories260K-hf");
    struct lx_tokenizer *hf, *bin;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_tokenizer_open(&hf, dirpath, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_tokenizer_open(&bin, binpath, &err), LX_OK, "%s", err.msg);
    cr_expect_str_eq(hf->ops->kind, "sentencepiece");
    cr_expect_eq(hf->n_vocab, 512);
    cr_expect_eq(hf->bos, 1);
    cr_expect_eq(hf->eos, 2);
    struct lx_json *doc;
    cr_assert_eq(lx_json_load(&doc, ref, 0, &err), LX_OK, "%s", err.msg);
    const struct lx_jv *list = lx_json_root(doc);
    cr_assert_eq(lx_json_len(list), 10);
    for (long i = 0; i < lx_json_len(list); i++) {
        const struct lx_jv *e = lx_json_at(list, i), *want = lx_json_member(e, "ids");
        const char *text;
        size_t n;
        cr_assert_eq(lx_json_str(doc, lx_json_member(e, "text"), &text, &n, &err), LX_OK);
        struct lx_ids ids = {0};
        encode_decode(hf, text, n, &ids);
        cr_expect_eq(ids.n, lx_json_len(want), "'%s': %ld ids, run.c %ld", text, ids.n, lx_json_len(want));
        for (long k = 0; k < ids.n && k < lx_json_len(want); k++) {
            int64_t id;
            cr_assert_eq(lx_json_int(doc, lx_json_at(want, k), &id, &err), LX_OK);
            cr_expect_eq(ids.id[k], id, "'%s' id %ld: %d, run.c %lld", text, k, ids.id[k], (long long)id);
        }
        lx_ids_free(&ids);
    }
    lx_json_free(doc);
    char austen[512];
    in_repo(austen, "data/corpus/austen/test/persuasion.txt");
    unsigned char *text;
    long n;
    if (lx_read_file(austen, &text, &n, 0, &err) < 0) {
        cr_log_warn("%s: the Austen part is skipped (make data installs the corpus)", err.msg);
    } else {
        n = n < 16384 ? n : 16384;
        while (n > 0 && (text[n - 1] & 0xc0) == 0x80)   /* cut at a character boundary */
            n--;
        if (n > 0 && text[n - 1] >= 0xc0)
            n--;
        cr_expect_geq(n, 16000);
        expect_same_ids(hf, bin, (const char *)text, (size_t)n);
        free(text);
    }
    lx_tokenizer_free(hf);
    lx_tokenizer_free(bin);
}

/* `lenx score` on the HF directories finds their tokenizer.json without
** --tokenizer: the same tokens of story.txt as the .bin with tok512.bin beside
** it, and a mean NLL within the dtype's rounding of the .bin's (measured over
** 511 targets: BF16 5.7e-4, F16 6.8e-5, about 2^3 apart as the logits are;
** the bounds leave about 4x room). */
Test(loaders, score_hf_with_its_tokenizer)
{
    char bin[512], dirpath[512], text[512];
    shared(bin, "stories260K.bin");
    shared(text, "expected/story.txt");
    const char *rels[] = {"tests/ref/stories260K-hf", "tests/ref/stories260K-hf-f16-2shards"};
    struct lx_score_opts o = {.model = bin, .db = "none.db", .text = text, .length = 512};
    struct lx_buf out[2] = {{0}};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_score(&o, &out[0], &err), LX_OK, "%s", err.msg);
    for (int r = 0; r < 2; r++) {
        in_repo(dirpath, rels[r]);
        struct lx_model m;
        struct lx_ckpt_info info;
        load(&m, &info, dirpath);
        cr_assert_not_null(info.tokenizer, "%s: no tokenizer found", rels[r]);
        cr_expect(strstr(info.tokenizer, "/tokenizer.json") != NULL, "%s", info.tokenizer);
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
        o.model = dirpath;
        lx_buf_free(&out[1]);
        cr_assert_eq(lx_score(&o, &out[1], &err), LX_OK, "%s", err.msg);
        struct lx_json *doc[2];
        double nll[2];
        for (int k = 0; k < 2; k++) {
            cr_assert_eq(lx_json_parse(&doc[k], out[k].s, out[k].len, "score", &err), LX_OK, "%s", err.msg);
            cr_assert_eq(lx_json_num(doc[k], lx_json_member(lx_json_root(doc[k]), "mean_nll"), &nll[k], &err), LX_OK);
        }
        const struct lx_jv *a = lx_json_member(lx_json_root(doc[0]), "tokens");
        const struct lx_jv *b = lx_json_member(lx_json_root(doc[1]), "tokens");
        cr_assert_eq(lx_json_len(a), lx_json_len(b), "%s: token counts differ", rels[r]);
        cr_expect_gt(lx_json_len(a), 400);
        for (long i = 0; i < lx_json_len(a); i++) {
            int64_t x, y;
            cr_assert(lx_json_int(doc[0], lx_json_at(a, i), &x, &err) == LX_OK &&
                      lx_json_int(doc[1], lx_json_at(b, i), &y, &err) == LX_OK);
            cr_assert_eq(x, y, "%s: token %ld: %lld vs the .bin's %lld", rels[r], i, (long long)y, (long long)x);
        }
        cr_log_info("%s: mean NLL %.6f, .bin %.6f (diff %.2g)", rels[r], nll[1], nll[0], fabs(nll[1] - nll[0]));
        cr_expect_leq(fabs(nll[1] - nll[0]), r == 0 ? 0.0025 : 0.0003, "%s: mean NLL %g, .bin %g", rels[r], nll[1],
                      nll[0]);
        cr_expect_gt(fabs(nll[1] - nll[0]), 0, "%s: no rounding at all", rels[r]);
        lx_json_free(doc[0]);
        lx_json_free(doc[1]);
    }
    lx_buf_free(&out[0]);
    lx_buf_free(&out[1]);
}

/* `lenx show model`'s memory plan for stories260K (5 layers, 4 key/value
** heads of 8, 260,032 parameters): weights 4 bytes a parameter, a cached
** token its keys and values in every layer (5 · 2 · 4 · 8 · 4 = 1,280 bytes)
** and at most a few bytes of bookkeeping, and scoring a window more than the
** weights. */
Test(loaders, show_model_prints_the_memory_plan)
{
    char path[600];
    shared(path, "stories260K.bin");
    struct lx_buf out = {0};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_show_model(path, "none.db", 0, &out, &err), LX_OK, "%s", err.msg);
    const char *mem = strstr(lx_buf_str(&out), "\"memory\": {");
    cr_assert_not_null(mem, "%s", lx_buf_str(&out));
    double weights = 0, kv = 0, score = 0;
    long window = 0;
    cr_assert_eq(sscanf(mem, "\"memory\": {\"weights_dtype\": \"F32\", \"weights_held\": \"in place\", "
                        "\"dtypes\": {\"embedding\": \"F32\", \"attention\": \"F32\", \"mlp\": \"F32\", \"head\": "
                        "\"tied\", \"norms\": \"F32\"}, \"matrices\": {\"F32\": 36}, \"weights_bytes\": %lf, "
                        "\"kv_cache_bytes_per_token\": %lf, \"score_window\": %ld, \"score_bytes\": %lf}",
                        &weights, &kv, &window, &score), 4, "%s", mem);     /* 36: 5 layers of 7, the tied embedding */
    cr_expect_eq(weights, 4.0 * 260032);
    cr_expect(kv >= 1280 && kv < 1280 + 64, "%g bytes per cached token", kv);
    cr_expect_eq(window, 512);
    cr_expect_gt(score, weights);
    lx_buf_free(&out);
    /* in numerics bf16 (`--numerics bf16`) the fp32 matrices are held rounded to bf16 and packed into
    ** oneDNN's layout (2 bytes a value and the layout's padding: wk's 32 rows, w1's 172, w2's 172
    ** columns are not multiples of its blocks; docs/numerics.md#packed-weights), the norms (11 vectors
    ** of dim 64: two a layer and the final one) stay fp32 */
    lx_numerics_set(LX_NUMERICS_BF16);
    struct lx_buf o16 = {0};
    cr_assert_eq(lx_show_model(path, "none.db", 0, &o16, &err), LX_OK, "%s", err.msg);
    lx_numerics_set(LX_NUMERICS_FAST);
    const char *m16 = strstr(lx_buf_str(&o16), "\"weights_bytes\": ");
    double w16 = 0, s16 = 0;
    cr_assert(m16 && sscanf(m16, "\"weights_bytes\": %lf", &w16) == 1, "%s", lx_buf_str(&o16));
    cr_assert(sscanf(strstr(m16, "\"score_bytes\": "), "\"score_bytes\": %lf", &s16) == 1, "%s", m16);
    cr_expect(strstr(lx_buf_str(&o16), "\"weights_dtype\": \"BF16\"") != NULL, "%s", lx_buf_str(&o16));
    lx_numerics_set(LX_NUMERICS_BF16);
    cr_expect(strstr(lx_buf_str(&o16), lx_wmat_packed_bytes(64, 64) > 0 ? "\"weights_held\": \"packed at load\""
                                                                     : "\"weights_held\": \"in place\"") != NULL,
              "%s", lx_buf_str(&o16));
    double matrices = 0;     /* each matrix packed as lx_wmat_packed_bytes says, else 2 bytes a value */
    struct lx_model m;
    struct lx_ckpt_info info;
    cr_assert_eq(lx_model_load(&m, path, &info, &err), LX_OK, "%s", err.msg);
    int n = lx_arch_tensors(&m.arch, NULL);
    struct lx_tensor_info *ti = calloc((size_t)n, sizeof *ti);
    lx_arch_tensors(&m.arch, ti);
    for (int i = 0; i < n; i++)
        if (ti[i].ndim == 2) {
            size_t b = lx_wmat_packed_bytes(ti[i].shape[0], ti[i].shape[1]);
            matrices += b ? (double)b : 2.0 * (double)(ti[i].shape[0] * ti[i].shape[1]);
        }
    cr_expect_eq(lx_model_held_bytes(&m), w16, "held %.0f, shown %.0f", lx_model_held_bytes(&m), w16);
    cr_expect_eq(lx_eval_weight_bytes(&m.arch, 0, 1), w16, "planned before a load %.0f, held %.0f",
                 lx_eval_weight_bytes(&m.arch, 0, 1), w16);
    free(ti);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    lx_numerics_set(LX_NUMERICS_FAST);
    cr_expect_eq(w16, matrices + 4.0 * 11 * 64);
    cr_expect_geq(matrices, 2.0 * (260032 - 11 * 64));
    cr_expect_lt(s16, score, "bf16 plan %g, fp32 %g", s16, score);
    lx_buf_free(&o16);
}
