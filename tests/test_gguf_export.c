/*
** tests/test_gguf_export.c - `lenx export --gguf` (harness/engine/formats/gguf_export.c,
** harness/core/gguf_write.c): nine lenx-trained models (tests/ref/gguf/lenx-models.yaml:
** Llama-, Qwen2- and Qwen3-shaped, rope, PI and YaRN trained in) and two Phi-3-shaped ones with LongRoPE
** (tests/ref/gguf/lenx-longrope.yaml; lenx-partial.yaml, whose rope turns 12 of each head's 16 channels,
** as Phi-4-mini's: both written as llama.cpp's phi3) and three with Gemma's block
** (tests/ref/gguf/lenx-gemma.yaml: written as llama.cpp's gemma3 with local layers, gemma2, gemma)
** written as F32, F16, BF16 and Q8_0
** run in llama.cpp as in lenx — llama.cpp's perplexity (tests/ref/gguf/export.tsv, made by
** tests/ref/gguf/make.sh) against lenx's on the written file, and llama-quantize's own
** F16/BF16/Q8_0 conversion of the F32 export against lenx's, bit for bit; the F32 file scores
** as the checkpoint does; what llama.cpp cannot run the same is refused.
*/
#define _GNU_SOURCE     /* mkdtemp */
#include <math.h>

#include "tests/shell.h"

#include "harness/core/gguf.h"

static const char *const models[] = {"llama-rope", "llama-pi", "llama-yarn", "qwen2-rope", "qwen2-pi", "qwen2-yarn",
                                     "qwen3-rope", "qwen3-pi", "qwen3-yarn", "phi3-longrope", "phi3-partial-longrope",
                                     "gemma3-rope", "gemma2-rope", "gemma1-rope"};
static const char *const types[] = {"f32", "f16", "bf16", "q8_0"};

/* Field (1-based) of export.tsv's row for name. */
static void reference(char *out, size_t n, const char *name, int field)
{
    cr_assert_eq(sh(out, n, "awk -F'\\t' '$1 == \"%s\" {printf \"%%s\", $%d}' $R/tests/ref/gguf/export.tsv", name,
                    field), 0);
    cr_assert(out[0], "no reference for %s", name);
}

/* The tolerance of lenx's perplexity against llama.cpp's, derived in tests/test_gguf.c
** (perplexity_as_llama_cpp_prints_it): F32 and F16 1e-4; BF16 3e-4 (llama.cpp rounds the
** activations to bf16); Q8_0 5e-4 (llama.cpp quantizes the activations to Q8_0). Measured here at
** most 7.7e-6, 1.2e-5, 8.7e-5 and 1.7e-4 (docs/checkpoints.md#gguf). */
static double tolerance(const char *type)
{
    return strcmp(type, "bf16") == 0 ? 3e-4 : strcmp(type, "q8_0") == 0 ? 5e-4 : 1e-4;
}

/* The "nll" lists of two `lenx score` JSONs agree within tol, token by token; returns their length. */
static long nll_close(const char *a, const char *b, double tol, const char *what)
{
    const char *p = strstr(a, "\"nll\": ["), *q = strstr(b, "\"nll\": [");
    cr_assert(p && q, "%s", what);
    p += 8, q += 8;
    long n = 0;
    while (*p && *p != ']') {
        char *e1, *e2;
        double x = strtod(p, &e1), y = strtod(q, &e2);
        cr_assert(e1 != p && e2 != q, "%s: lists differ in length at %ld", what, n);
        cr_expect_leq(fabs(x - y), tol, "%s token %ld: %.9g vs %.9g", what, n, x, y);
        p = e1 + strspn(e1, ", \n"), q = e2 + strspn(e2, ", \n");
        n++;
    }
    cr_assert_eq(*q, ']', "%s: lists differ in length", what);
    return n;
}

/* lenx's llamacpp perplexity of file (its own native stack) on text.txt at length T. */
static double lenx_ppl(const char *file, int T)
{
    char stack[1024], yaml[2048], db[128], got[64], out[4096];
    cr_assert_eq(sh(stack, sizeof stack, "$L show model %s | sed -n 's/.*\"native_stack\": \\(.*\\),$/\\1/p'", file),
                 0);
    stack[strcspn(stack, "\n")] = 0;
    snprintf(yaml, sizeof yaml, "name: e\nnumerics: portable\nmodels:\n  s:\n    checkpoint: %s\nmethods:\n  - %s\n"
             "tasks:\n  - ppl: {protocol: llamacpp, data: %s/tests/ref/gguf/text.txt}\nlengths: [%d]\n", file, stack,
             getenv("LENX_ROOT"), T);
    write_file("e.yaml", yaml);
    snprintf(db, sizeof db, "%s-%d.db", file, T);
    cr_assert_eq(sh(out, sizeof out, "$L run e.yaml --db %s --quiet --no-table", db), 0, "%s", out);
    sql_text(got, sizeof got, db, "SELECT printf('%.9f', value) FROM metrics WHERE name = 'ppl'");
    return atof(got);
}

Test(gguf_export, llama_cpp_runs_lenx_models_as_lenx_does, .fini = teardown, .timeout = 600)
{
    shell_setup("gguf-export");
    for (size_t i = 0; i < sizeof models / sizeof *models; i++)
        for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
            char name[64], file[80], out[4096], want[80], ref[32];
            snprintf(name, sizeof name, "lenx-%s-%s", models[i], types[t]);
            snprintf(file, sizeof file, "%s.gguf", name);
            cr_assert_eq(sh(out, sizeof out, "$L export --gguf %s --type %s --model $R/tests/ref/gguf/lenx-%s."
                            "safetensors", file, types[t], models[i]), 0, "%s", out);
            if (t > 0) {    /* the same bytes as llama-quantize makes of the F32 file */
                reference(want, sizeof want, name, 3);
                cr_assert_eq(sh(out, sizeof out, "$L show model %s | grep -c '\"weights_sha256\": \"%s\"'", file, want),
                             0, "%s: weights differ from llama-quantize's %s", name, types[t]);
            }
            int lr = strstr(name, "longrope") != NULL;
            for (int k = 0; k < 1 + lr; k++) {  /* LongRoPE at 512 (the long factors) and at L = 256 (the short) */
                char row[80];
                int T = lr ? 512 >> k : 64;
                snprintf(row, sizeof row, k ? "%s@%d" : "%s", name, T);
                reference(ref, sizeof ref, row, 2);
                double want_ppl = atof(ref), ppl = lenx_ppl(file, T), rel = fabs(ppl - want_ppl) / want_ppl;
                double bound = tolerance(types[t]) + 5e-5 / want_ppl;   /* llama.cpp prints four decimals */
                cr_expect(rel <= bound, "%s: lenx %.7f, llama.cpp %s: %.2g relative, more than %.2g", row, ppl, ref,
                          rel, bound);
            }
        }
}

/* The F32 file is the checkpoint: in portable numerics the same per-token NLLs, bit for bit for the
** Qwen2-, Qwen3- and Gemma-shaped models, whose rows the file keeps as they are; the Llama-shaped ones' q and k rows are
** permuted to llama.cpp's interleaved pairs, so each q.k sums its 16 products in another order:
** within 1e-5 (measured 2.6e-6). The stack it reads back is the one the model was trained with, in the
** file's layout. */
Test(gguf_export, f32_file_scores_as_the_checkpoint, .fini = teardown)
{
    shell_setup("gguf-export-f32");
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        static char a[1 << 17], b[1 << 17];
        char out[4096];
        cr_assert_eq(sh(out, sizeof out, "$L export --gguf m.gguf --model $R/tests/ref/gguf/lenx-%s.safetensors",
                        models[i]), 0, "%s", out);
        cr_assert_eq(sh(a, sizeof a, "$L score --portable --model m.gguf --text $R/tests/ref/gguf/text.txt "
                        "--length 64"), 0, "%s", a);
        cr_assert_eq(sh(b, sizeof b, "$L score --portable --model $R/tests/ref/gguf/lenx-%s.safetensors --text "
                        "$R/tests/ref/gguf/text.txt --length 64", models[i]), 0, "%s", b);
        int gemma = models[i][0] == 'g';
        cr_assert_gt(nll_close(a, b, models[i][0] == 'q' || gemma ? 0 : 1e-5, models[i]), 2900, "%s", models[i]);
        (void)sql_long;
        cr_assert_eq(sh(out, sizeof out, "$L show model m.gguf"), 0, "%s", out);
        int qwen = models[i][0] == 'q', pi = strstr(models[i], "-pi") != NULL, yarn = strstr(models[i], "yarn") != NULL;
        int phi3 = models[i][0] == 'p', partial = strstr(models[i], "partial") != NULL;
        cr_expect(strstr(out, qwen || phi3 || gemma ? "\"layout\":\"half\"" : "\"layout\":\"interleaved\"") &&
                  (!phi3 || partial || strstr(out, "{\"longrope\":{\"scale\":2,\"original\":256,\"long_factor\":"
                                   "[1,1,1.2000000476837158,1.5,2,2.5,3,4],\"short_factor\":[1,1,1,1.100000023841858,"
                                   "1.2000000476837158,1.2999999523162842,1.5,2],\"attention_factor\":"
                                   "1.0606601238250732,\"train\":true}}")) &&
                  (!partial || strstr(out, "\"layout\":\"half\",\"dims\":12}},{\"longrope\":{\"scale\":2,"
                                      "\"original\":256,\"long_factor\":[1,1.2000000476837158,1.5,2,3,4],")) &&
                  (!pi || strstr(out, "{\"pi\":{\"scale\":2,\"train\":true}}")) &&
                  (!yarn || strstr(out, "{\"yarn\":{\"scale\":2,\"original\":32,\"beta_fast\":32,\"beta_slow\":1,"
                                   "\"attn_factor\":1,\"train\":true}}")) &&
                  strstr(out, "\"tokenizer\": \"bytes\"") && strstr(out, qwen || phi3 || gemma ? "\"kv_heads\": 1" : "\"kv_heads\": 2") &&
                  !strstr(out, "\"qk_norm\":true") == !(strstr(models[i], "qwen3") || strstr(models[i], "gemma3")) &&
                  (!gemma || strstr(out, "\"mlp\":\"geglu\"")),
                  "%s: %s", models[i], out);
    }
}

/* In file (in the test's dir), the first `old` (len bytes) replaced by `new`. */
static void patch_file(const char *file, const void *old, const void *new, size_t len)
{
    static unsigned char b[1 << 20];
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *fp = fopen(path, "r+b");
    cr_assert_not_null(fp, "%s", path);
    size_t n = fread(b, 1, sizeof b, fp);
    unsigned char *p = memmem(b, n, old, len);
    cr_assert_not_null(p, "%s: no such bytes", path);
    cr_assert_eq(fseek(fp, p - b, SEEK_SET), 0);
    cr_assert_eq(fwrite(new, 1, len, fp), len);
    fclose(fp);
}

/* A qwen3 file whose metadata or tensors lie is refused naming the file and the key or the tensor:
** a head size that is odd, values of another size than keys, a missing q_norm gain. */
Test(gguf_export, qwen3_files_that_lie_are_named, .fini = teardown)
{
    shell_setup("gguf-qwen3-lies");
    static const struct {
        const char *key;
        uint32_t value;
        const char *want;
    } cases[] = {
        {"qwen3.attention.key_length", 15, "key_length 15"},
        {"qwen3.attention.value_length", 8, "value_length is 8, not key_length 16"},
        {"qwen3.rope.dimension_count", 15, "rope.dimension_count is 15, not an even count up to the head size 16"},
    };
    char out[4096];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cr_assert_eq(sh(out, sizeof out, "$L export --gguf q.gguf --model $R/tests/ref/gguf/lenx-qwen3-rope.safetensors"),
                     0, "%s", out);
        unsigned char old[96], new[96];     /* the key, its value type (u32: 4) and its value 16, replaced */
        size_t k = strlen(cases[i].key);
        uint32_t type = 4, v = 16;
        memcpy(old, cases[i].key, k), memcpy(old + k, &type, 4), memcpy(old + k + 4, &v, 4);
        memcpy(new, old, k + 4), memcpy(new + k + 4, &cases[i].value, 4);
        patch_file("q.gguf", old, new, k + 8);
        cr_expect_eq(sh(out, sizeof out, "$L show model q.gguf"), 2, "%s", out);
        cr_expect(strstr(out, "q.gguf: ") && strstr(out, cases[i].want), "%s: %s", cases[i].key, out);
    }
    cr_assert_eq(sh(out, sizeof out, "$L export --gguf q.gguf --model $R/tests/ref/gguf/lenx-qwen3-rope.safetensors"), 0,
                 "%s", out);
    /* a llama file whose rope turns part of a head: llama.cpp's llama refuses it, and so does lenx */
    cr_assert_eq(sh(out, sizeof out, "$L export --gguf l.gguf --model $R/tests/ref/gguf/lenx-llama-rope.safetensors"), 0,
                 "%s", out);
    {
        const char *key = "llama.rope.dimension_count";
        unsigned char old[64], new[64];
        uint32_t type = 4, v = 16, w = 8;
        size_t k = strlen(key);
        memcpy(old, key, k), memcpy(old + k, &type, 4), memcpy(old + k + 4, &v, 4);
        memcpy(new, old, k + 4), memcpy(new + k + 4, &w, 4);
        patch_file("l.gguf", old, new, k + 8);
        cr_expect_eq(sh(out, sizeof out, "$L show model l.gguf"), 2, "%s", out);
        cr_expect(strstr(out, "l.gguf: llama.rope.dimension_count is 8, not the head size 16 (llama.cpp's llama turns "
                          "whole heads)"), "%s", out);
    }
    patch_file("q.gguf", "blk.0.attn_q_norm.weight", "blk.0.attn_q_xorm.weight", 24);
    cr_expect_eq(sh(out, sizeof out, "$L score --model q.gguf --text $R/tests/ref/gguf/text.txt --length 64"), 2, "%s",
                 out);
    cr_expect(strstr(out, "q.gguf: tensor 'blk.0.attn_q_norm.weight' is missing") && strstr(out, "qwen3"), "%s", out);
}

/* A phi3 file (llama.cpp's converter's, of tests/ref/hf-phi3-tiny) whose metadata or factors lie is
** refused naming the file and the key or tensor: a sliding window inside the model's positions, one
** of LongRoPE's two factor tensors missing, a factor of 0. */
Test(gguf_export, phi3_files_that_lie_are_named, .fini = teardown)
{
    shell_setup("gguf-phi3-lies");
    char out[4096];
    const char *key = "phi3.attention.sliding_window";
    unsigned char old[64], new[64];
    size_t k = strlen(key);
    uint32_t type = 4, v = 262144, w = 100;
    memcpy(old, key, k), memcpy(old + k, &type, 4), memcpy(old + k + 4, &v, 4);
    memcpy(new, old, k + 4), memcpy(new + k + 4, &w, 4);
    cr_assert_eq(sh(out, sizeof out, "cp $R/tests/ref/gguf/phi3-tiny-hf.gguf p.gguf"), 0, "%s", out);
    patch_file("p.gguf", old, new, k + 8);
    cr_expect_eq(sh(out, sizeof out, "$L show model p.gguf"), 2, "%s", out);
    cr_expect(strstr(out, "p.gguf: phi3.attention.sliding_window is 100, inside the model's 128 positions") &&
              strstr(out, "hint:"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "cp $R/tests/ref/gguf/phi3-tiny-hf.gguf p.gguf"), 0, "%s", out);
    patch_file("p.gguf", "rope_factors_short.weight", "rope_factors_shorx.weight", 25);
    cr_expect_eq(sh(out, sizeof out, "$L show model p.gguf"), 2, "%s", out);
    cr_expect(strstr(out, "p.gguf: tensor 'rope_factors_short.weight' must be 4 F32 factors"), "%s", out);
    float one = 1.0f, zero = 0.0f;      /* the long list begins 1, 1.5: its first 1 (the short one's is after it) */
    cr_assert_eq(sh(out, sizeof out, "cp $R/tests/ref/gguf/phi3-tiny-hf.gguf p.gguf"), 0, "%s", out);
    unsigned char a[8], b[8];
    float l1 = 1.5f;
    memcpy(a, &one, 4), memcpy(a + 4, &l1, 4), memcpy(b, &zero, 4), memcpy(b + 4, &l1, 4);
    patch_file("p.gguf", a, b, 8);
    cr_expect_eq(sh(out, sizeof out, "$L show model p.gguf"), 2, "%s", out);
    cr_expect(strstr(out, "p.gguf: tensor 'rope_factors_long.weight' holds 0 at 0"), "%s", out);
}

Test(gguf_export, refuses_what_llama_cpp_runs_otherwise, .fini = teardown)
{
    shell_setup("gguf-export-refuse");
    char out[4096];
    /* a GELU model: llama.cpp's llama is SwiGLU */
    cr_assert_neq(sh(out, sizeof out, "$L export --gguf g.gguf --model $R/tests/ref/model_ckpt_causal_rope.safetensors"),
                  0);
    cr_expect(strstr(out, "GELU MLP") && strstr(out, "hint:") && !exists("g.gguf"), "%s", out);
    /* a type lenx does not write */
    cr_assert_neq(sh(out, sizeof out, "$L export --gguf g.gguf --type q4_k --model "
                     "$R/tests/ref/gguf/lenx-llama-rope.safetensors"), 0);
    cr_expect(strstr(out, "--type q4_k") && strstr(out, "llama-quantize") && !exists("g.gguf"), "%s", out);
    /* a directory that is not there: nothing half-written left behind */
    cr_assert_neq(sh(out, sizeof out, "$L export --gguf no/such/g.gguf --model "
                     "$R/tests/ref/gguf/lenx-llama-rope.safetensors"), 0);
    cr_expect(strstr(out, "no/such/g.gguf") && strstr(out, "cannot create"), "%s", out);
    /* LongRoPE, which llama.cpp runs in its phi3 only: on a Qwen2-shaped model (q/k/v biases), and with
    ** a scale that is not the training length over L (a phi3 file has no other) */
    static const char *const lr[][3] = {
        {"qwen2", "", "has q/k/v biases"},
        {"llama", "\"factor\": 4, ", "longrope has scale 4 and original 32, trained at 64"},
    };
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(sh(out, sizeof out, "rm -rf hf && $L export --hf hf --model $R/tests/ref/gguf/lenx-%s-rope."
                        "safetensors && sed -i 's/\"rope_scaling\": null/\"rope_scaling\": {\"rope_type\": "
                        "\"longrope\", %s\"original_max_position_embeddings\": 32, \"long_factor\": [1,1,1,1,2,2,"
                        "2,2], \"short_factor\": [1,1,1,1,1,1,1,1]}/' hf/config.json", lr[k][0], lr[k][1]), 0,
                     "%s", out);
        cr_expect_eq(sh(out, sizeof out, "$L export --gguf g.gguf --model hf"), 2, "%s", out);
        cr_expect(strstr(out, lr[k][2]) && strstr(out, "phi3") && strstr(out, "hint:") && !exists("g.gguf"), "%s",
                  out);
    }
    /* --type without --gguf, and both outputs at once */
    cr_expect_eq(sh(out, sizeof out, "$L export --hf d --type f16 --model x"), 2, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L export --hf d --gguf g.gguf --model x"), 2, "%s", out);
}

/* llama.cpp's own Hugging Face converter (tests/ref/gguf/lenx-*-hf.gguf: `lenx export --hf`, then
** convert_hf_to_gguf.py) and lenx agree on a model read both ways: the GGUF llama.cpp wrote scores as the
** Hugging Face directory does, in portable numerics. Qwen2 and Qwen3 (its per-head q/k norms, heads of
** 16 on a residual of 32: head_dim written as key_length) keep their rows: bit for bit. Llama: the
** converter permutes q and k rows to interleaved pairs, which lenx reads as `layout: interleaved`; the
** q.k sums then run in another order (within 1e-5, measured 2.6e-6) - and a wrong reading of the
** permutation would move them by whole nats. The third file has Llama 3.1's rope_scaling in its
** config.json, which the converter writes as per-pair factors (rope_freqs.weight): lenx reads them
** back as the llama3 method (the unscaled model differs by up to 2.1 nats per token). */
Test(gguf_export, hf_converter_files_score_as_the_hf_directory, .fini = teardown)
{
    shell_setup("gguf-hfconv");
    static const struct {
        const char *model, *gguf, *layout, *config;
        double tol;
    } cases[] = {
        {"qwen2-rope", "qwen2-rope-hf", "\"layout\":\"half\"", NULL, 0},
        {"qwen3-rope", "qwen3-rope-hf", "\"qk_norm\":true", NULL, 0},
        {"llama-rope", "llama-rope-hf", "\"layout\":\"interleaved\"", NULL, 1e-5},
        {"llama-rope", "llama-llama3-hf", "{\"llama3\":{\"scale\":2,\"original\":64,",
         "{\"rope_type\": \"llama3\", \"factor\": 2.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 8.0, "
         "\"original_max_position_embeddings\": 64}", 1e-5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        static char a[1 << 17], b[1 << 17];
        char out[4096];
        cr_assert_eq(sh(out, sizeof out, "rm -rf hf && $L export --hf hf --model $R/tests/ref/gguf/lenx-%s."
                        "safetensors", cases[i].model), 0, "%s", out);
        if (cases[i].config)
            cr_assert_eq(sh(out, sizeof out, "sed -i 's/\"rope_scaling\": null/\"rope_scaling\": %s/' hf/config.json",
                            cases[i].config), 0, "%s", out);
        cr_assert_eq(sh(a, sizeof a, "$L score --portable --model $R/tests/ref/gguf/lenx-%s.gguf --text "
                        "$R/tests/ref/gguf/text.txt --length 64", cases[i].gguf), 0, "%s", a);
        cr_assert_eq(sh(b, sizeof b, "$L score --portable --model hf --text $R/tests/ref/gguf/text.txt --length 64"),
                     0, "%s", b);
        cr_assert_eq(sh(out, sizeof out, "$L show model $R/tests/ref/gguf/lenx-%s.gguf", cases[i].gguf), 0, "%s",
                     out);
        cr_expect(strstr(out, cases[i].layout), "%s", out);
        cr_expect_gt(nll_close(a, b, cases[i].tol, cases[i].gguf), 2900);
    }
}

/* The GGUF file at path read into buf (cap bytes), its length; *at the offset of its
** rope_freqs.weight (8 F32 factors) and, when type is given, its llama.rope.scaling.type. */
static size_t read_freqs(const char *path, unsigned char *buf, size_t cap, size_t *at, char *type, size_t tn)
{
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "%s", path);
    size_t n = fread(buf, 1, cap, fp);
    fclose(fp);
    struct lx_gguf g;
    struct lx_error err;
    cr_assert_eq(lx_gguf_parse(&g, buf, n, path, &err), LX_OK, "%s", err.msg);
    const struct lx_gguf_tensor *t = lx_gguf_tensor(&g, "rope_freqs.weight");
    cr_assert(t && t->n_elems == 8 && t->type == LX_GGML_F32, "%s: rope_freqs.weight", path);
    *at = (size_t)(t->data - buf);
    if (type)
        lx_gguf_get_str(&g, "llama.rope.scaling.type", type, tn);
    lx_gguf_release(&g);
    return n;
}

/* Per-pair factors that are not Llama 3's rescaling are refused naming the tensor, not read as
** something else. */
Test(gguf_export, rope_freqs_other_than_llama3_are_refused, .fini = teardown)
{
    shell_setup("gguf-freqs");
    char path[512], out[4096];
    snprintf(path, sizeof path, "%s/tests/ref/gguf/lenx-llama-llama3-hf.gguf", getenv("LENX_ROOT"));
    static unsigned char buf[1 << 18];
    size_t at, n = read_freqs(path, buf, sizeof buf, &at, NULL, 0);
    FILE *fp;
    const float bad[8] = {1, 3, 1.5f, 2, 2, 1, 2, 2};     /* not 1s, a ramp, then the scale */
    memcpy(buf + at, bad, sizeof bad);
    char bad_path[256];
    snprintf(bad_path, sizeof bad_path, "%s/bad.gguf", dir);
    fp = fopen(bad_path, "wb");
    cr_assert_eq(fwrite(buf, 1, n, fp), n);
    fclose(fp);
    cr_assert_neq(sh(out, sizeof out, "$L show model bad.gguf"), 0);
    cr_expect(strstr(out, "bad.gguf: tensor 'rope_freqs.weight'") && strstr(out, "not Llama 3's") &&
              strstr(out, "hint:"), "%s", out);
}

/* lenx-llama-rope exported to hf/ with Llama 3.1's rope_scaling (factor 2, original 64, the two
** frequency factors given), then to l3.gguf. */
static void export_llama3(const char *low, const char *high)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "$L export --hf hf --model $R/tests/ref/gguf/lenx-llama-rope.safetensors && "
                    "sed -i 's/\"rope_scaling\": null/\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 2.0, "
                    "\"low_freq_factor\": %s, \"high_freq_factor\": %s, \"original_max_position_embeddings\": 64}/' "
                    "hf/config.json && $L export --gguf l3.gguf --model hf", low, high), 0, "%s", out);
}

/* gguf scores the text as hf/ does, in portable numerics, within 1e-5 (q and k permuted). */
static void expect_scores_as_hf(const char *gguf)
{
    static char a[1 << 17], b[1 << 17];
    cr_assert_eq(sh(a, sizeof a, "$L score --portable --model %s --text $R/tests/ref/gguf/text.txt --length 64", gguf),
                 0, "%s", a);
    cr_assert_eq(sh(b, sizeof b, "$L score --portable --model hf --text $R/tests/ref/gguf/text.txt --length 64"), 0,
                 "%s", b);
    cr_expect_gt(nll_close(a, b, 1e-5, gguf), 2900);
}

/* Llama 3.1's rescaling written by lenx as llama.cpp's converter writes it: the HF directory with
** rope_scaling llama3 (factor 2, low/high_freq_factor 1/8, original 64, as make.sh gave the converter)
** exported to GGUF holds rope_freqs.weight with the type left none, and its factors are the
** converter's (tests/ref/gguf/lenx-llama-llama3-hf.gguf). The converter takes the frequencies in
** float32 (torch) where lenx takes them in double: a frequency's relative error up to 2^-22 moves the
** ramp's sm by at most (L/λ)·2^-22/(high − low) <= high·2^-22/(high − low), and a factor f = 1/((1 −
** sm)/s + sm) by f²(1 − 1/s)·|Δsm|, relative f·(1 − 1/s)·|Δsm| <= s·high/(high − low)·2^-22 = 5.5e-7
** here, plus float32's rounding (6e-8): 1e-6 relative. The file scores as the directory does
** (portable; q and k permuted to interleaved pairs, so within 1e-5 as above). */
Test(gguf_export, llama3_models_export_as_the_converter_writes_them, .fini = teardown)
{
    shell_setup("gguf-llama3");
    export_llama3("1.0", "8.0");
    char path[512];
    float mine[8], conv[8];
    for (int k = 0; k < 2; k++) {
        if (k == 0)
            snprintf(path, sizeof path, "%s/l3.gguf", dir);
        else
            snprintf(path, sizeof path, "%s/tests/ref/gguf/lenx-llama-llama3-hf.gguf", getenv("LENX_ROOT"));
        static unsigned char buf[1 << 18];
        char type[32] = "";
        size_t at;
        read_freqs(path, buf, sizeof buf, &at, type, sizeof type);
        memcpy(k == 0 ? mine : conv, buf + at, sizeof mine);
        cr_expect(k == 1 || strcmp(type, "none") == 0, "lenx wrote rope.scaling.type '%s'", type);
    }
    for (int k = 0; k < 8; k++)
        cr_expect_leq(fabsf(mine[k] - conv[k]), 1e-6f * conv[k], "pair %d: lenx %.9g, llama.cpp's converter %.9g", k,
                      (double)mine[k], (double)conv[k]);
    cr_expect(mine[0] == 1 && mine[7] == 2 && mine[1] > 1 && mine[1] < 2, "a ramp from 1 to 2");
    expect_scores_as_hf("l3.gguf");
}

/* A llama3 whose ramp holds one pair (low/high_freq_factor 2 and 4 at original 64: of the head's
** wavelengths 6.3, 19.9, 62.8, ..., only 19.9 lies between 64/4 and 64/2) exports to factors that
** one line through that pair does not fix; any ramp that gives its factor, keeps the shorter
** wavelengths and scales the longer ones reads them back. lenx refused its own file. It scores as the
** directory does (within 1e-5: q and k permuted, as above). */
Test(gguf_export, llama3_with_one_pair_on_its_ramp_reads_back, .fini = teardown)
{
    shell_setup("gguf-llama3-one");
    char out[4096];
    export_llama3("2.0", "4.0");
    static unsigned char buf[1 << 18];
    char path[512];
    size_t at;
    float f[8];
    snprintf(path, sizeof path, "%s/l3.gguf", dir);
    read_freqs(path, buf, sizeof buf, &at, NULL, 0);
    memcpy(f, buf + at, sizeof f);
    cr_assert(f[0] == 1 && f[1] > 1 && f[1] < 2 && f[2] == 2 && f[7] == 2, "one pair on the ramp: %g %g %g",
              (double)f[0], (double)f[1], (double)f[2]);
    cr_assert_eq(sh(out, sizeof out, "$L show model l3.gguf"), 0, "%s", out);
    cr_expect(strstr(out, "{\"llama3\":{\"scale\":2,\"original\":64,"), "%s", out);
    expect_scores_as_hf("l3.gguf");
}

/* `lenx export --hf` writes a trained-in pi, yarn or llama3 as the rope_scaling transformers reads
** (linear; yarn with HF's attention_factor, the whole mscale; llama3), and lenx reads the directory
** back to the model's own stack and NLLs, in portable numerics. */
Test(gguf_export, hf_export_writes_the_rescaling, .fini = teardown)
{
    shell_setup("hf-scaling");
    static const struct {
        const char *model, *scaling, *stack;
    } cases[] = {
        {"$R/tests/ref/gguf/lenx-llama-pi.safetensors", "{\"rope_type\": \"linear\", \"factor\": 2}",
         "{\"pi\":{\"scale\":2,\"train\":true}}"},
        {"$R/tests/ref/gguf/lenx-qwen2-yarn.safetensors", "{\"rope_type\": \"yarn\", \"factor\": 2, "
         "\"original_max_position_embeddings\": 32, \"beta_fast\": 32, \"beta_slow\": 1, \"attention_factor\": 1.06931",
         "{\"yarn\":{\"scale\":2,\"original\":32,\"beta_fast\":32,\"beta_slow\":1,\"attn_factor\":1,\"train\":true}}"},
        {"$R/tests/ref/gguf/lenx-llama-llama3-hf.gguf", "{\"rope_type\": \"llama3\", \"factor\": 2, "
         "\"original_max_position_embeddings\": 64, \"low_freq_factor\": 0.99999", "{\"llama3\":{\"scale\":2,"
         "\"original\":64,\"low_freq_factor\":0.99999"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        static char a[1 << 17], b[1 << 17], cfg[1 << 12];
        char out[4096];
        cr_assert_eq(sh(out, sizeof out, "rm -rf hf && $L export --hf hf --model %s", cases[i].model), 0, "%s", out);
        cr_assert_eq(sh(cfg, sizeof cfg, "cat hf/config.json"), 0);
        cr_expect(strstr(cfg, cases[i].scaling), "%s: %s", cases[i].model, cfg);
        cr_assert_eq(sh(out, sizeof out, "$L show model hf"), 0, "%s", out);
        cr_expect(strstr(out, cases[i].stack), "%s: %s", cases[i].model, out);
        cr_assert_eq(sh(a, sizeof a, "$L score --portable --model hf --text $R/tests/ref/gguf/text.txt --length 64"),
                     0, "%s", a);
        cr_assert_eq(sh(b, sizeof b, "$L score --portable --model %s --text $R/tests/ref/gguf/text.txt --length 64",
                        cases[i].model), 0, "%s", b);
        cr_expect_gt(nll_close(a, b, 1e-5, cases[i].model), 2900);
    }
}

/* `export --hf` of a GGUF model: its tokenizer goes beside the weights as a vocabulary-only GGUF, not
** the whole model file again, so a model past the tokenizer reader's 256 MB exports (it failed, leaving
** model.safetensors without config.json); the directory scores as the file (F32: the same weights). */
Test(gguf_export, hf_export_of_a_gguf_model_writes_its_vocabulary_only, .fini = teardown, .timeout = 120)
{
    shell_setup("gguf-export-hfvocab");
    char out[16384], a[16384];
    cr_assert_eq(sh(out, sizeof out, "cp $R/tests/ref/gguf/stories260K-f32.gguf big.gguf && truncate -s 300M big.gguf"
                    " && $L export --hf hf --model big.gguf 2>&1"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "test -f hf/config.json && test $(stat -c %%s hf/tokenizer.gguf) -lt 100000"), 0,
                 "the vocabulary alone, not 300 MB: %s", out);
    cr_assert_eq(sh(a, sizeof a, "$L score --portable --model big.gguf --text $R/tests/ref/gguf/text.txt --length 64 "
                    "2>/dev/null | grep -v model_path | grep -v sha256 | grep -v '\"model'"), 0, "%s", a);
    cr_assert_eq(sh(out, sizeof out, "$L score --portable --model hf --text $R/tests/ref/gguf/text.txt --length 64 "
                    "2>/dev/null | grep -v model_path | grep -v sha256 | grep -v '\"model'"), 0, "%s", out);
    const char *na = strstr(a, "\"mean_nll\""), *nb = strstr(out, "\"mean_nll\"");
    cr_assert(na && nb, "%s\n%s", a, out);
    cr_expect(fabs(atof(na + 11) - atof(nb + 11)) < 1e-5, "GGUF %s\ndirectory %s", na, nb);
}
