/*
** tests/test_gguf.c - llama.cpp's GGUF files (harness/core/gguf.c,
** gguf_model.c): stories260K converted by llama.cpp's own tools
** (tests/ref/gguf/make.sh) gives the llama2.c file's NLLs bit for bit in F32
** and llama.cpp's perplexity in F32, F16 and BF16; hostile containers are
** refused naming the file and the field.
*/
#define _GNU_SOURCE     /* memmem */
#include <math.h>

#include "tests/shell.h"

#include "harness/core/gguf.h"
#include "harness/core/half.h"

/* ---- the real files ------------------------------------------------------------- */

/* The "nll" list of a `lenx score` JSON (from its opening bracket). */
static const char *nll_list(const char *json)
{
    const char *p = strstr(json, "\"nll\": [");
    cr_assert_not_null(p, "%s", json);
    return p;
}

Test(gguf, f32_is_the_llama2c_file, .fini = teardown)
{
    shell_setup("gguf");
    static char a[1 << 16], b[1 << 16];
    const char *text = "$R/tests/ref/gguf/text.txt", *tok = "$R/../shared/models/stories260K/tok512.bin";
    cr_assert_eq(sh(a, sizeof a, "$L score --model $R/tests/ref/gguf/stories260K-f32.gguf --tokenizer %s --text %s "
                    "--length 128 --portable", tok, text), 0, "%s", a);
    cr_assert_eq(sh(b, sizeof b, "$L score --model $R/../shared/models/stories260K/stories260K.bin --text %s "
                    "--length 128 --portable", text), 0, "%s", b);
    /* the same weights in the same order of products: the same bits (the acceptance asks 1e-6) */
    cr_expect_str_eq(nll_list(a), nll_list(b));
    char out[8192];
    cr_assert_eq(sh(out, sizeof out, "$L show model $R/tests/ref/gguf/stories260K-bf16.gguf"), 0, "%s", out);
    cr_expect(strstr(out, "\"format\": \"gguf\"") && strstr(out, "\"dtype\": \"BF16\"") &&
              strstr(out, "\"layout\":\"interleaved\"") && strstr(out, "\"kv_heads\": 4"), "%s", out);
}

/* llama.cpp's own perplexity (llama-perplexity -c 128, tests/ref/gguf/llamacpp-ppl.tsv, printed to four
** decimals: +-5e-5) against the llamacpp protocol of ppl on the same text. F32 and F16: 1e-4 relative plus
** that rounding. BF16: 3e-4, because llama.cpp rounds the activations to bf16 for its BF16 products
** (ggml's BF16 dot product takes two bf16 vectors) while lenx multiplies the bf16 weights with fp32
** activations; measured 1.9e-4. The quantized types: llama.cpp quantizes the activations too (Q8_0 and
** Q4_0 products take them as Q8_0, 8 bits per block of 32; the K-quants' as Q8_K, 8 bits per block of 256,
** an error of up to 1/254 of the block's largest value) while lenx dequantizes the weights exactly
** (quantized_weights_are_llama_cpps below) and keeps fp32 activations: 5e-4 for the types of 32-value
** blocks, whose products take the activations as Q8_0 or Q8_1 (measured: Q8_0 7.1e-5, Q4_0 5.2e-5, Q4_1
** 1.3e-4, Q5_0 1.1e-4, Q5_1 4.4e-4, IQ4_NL 1.4e-6; the last three are llama.cpp's fallbacks in the Q4_K_M,
** Q5_K_M and Q3_K_M of a model whose rows are not whole super-blocks), 5e-3 for the K-quant mixes,
** IQ4_XS and the IQ1-IQ3/TQ mix (measured: Q4_K_M 1.8e-3, Q5_K_M 3.3e-3, Q3_K_M 7.2e-4, Q2_K 3.9e-3,
** IQ4_XS 2.7e-4, the mix 1.2e-3 on a random model, whose near-uniform predictions move most), and the random model's F32 file 1e-4 (measured 1.0e-6). lenx runs
** in portable numerics here, so its side is the same bits on every machine. */
/* llama.cpp's perplexity of tests/ref/gguf/FILE.gguf in tsv (its second column). */
static double llama_ppl(const char *file, const char *tsv)
{
    char want[64];
    cr_assert_eq(sh(want, sizeof want, "awk -F'\\t' '$1 == \"%s.gguf\" {print $2}' $R/tests/ref/gguf/%s", file, tsv),
                 0);
    double ref = atof(want);
    cr_assert_gt(ref, 1.0, "no reference for %s in %s", file, tsv);
    return ref;
}

/* The llamacpp protocol's perplexity of FILE.gguf on text.txt, portable numerics, activations acts, KV
** cache kv; its sweep in db (FILE-acts-kv.db). */
static double lenx_ppl(const char *file, const char *acts, const char *kv, char *db, size_t n)
{
    char yaml[1024], name[96], out[8192], got[64];
    snprintf(yaml, sizeof yaml, "name: g\nnumerics: portable\nactivations: %s\nkv_cache: %s\nmodels:\n  s:\n"
             "    checkpoint: %s/tests/ref/gguf/%s.gguf\n    tokenizer: %s/../shared/models/stories260K/tok512.bin\n"
             "methods:\n  - [{rope: {layout: interleaved}}]\ntasks:\n  - ppl: {protocol: llamacpp, data: "
             "%s/tests/ref/gguf/text.txt}\nlengths: [128]\n", acts, kv, getenv("LENX_ROOT"), file, getenv("LENX_ROOT"),
             getenv("LENX_ROOT"));
    snprintf(name, sizeof name, "%s-%s-%s.yaml", file, acts, kv);
    snprintf(db, n, "%s-%s-%s.db", file, acts, kv);
    write_file(name, yaml);
    cr_assert_eq(sh(out, sizeof out, "$L run %s --db %s --quiet --no-table", name, db), 0, "%s", out);
    cr_expect_eq(sql_long(db, "SELECT count(*) FROM runs WHERE status = 'ok'"), 1);
    sql_text(got, sizeof got, db, "SELECT printf('%.9f', value) FROM metrics WHERE name = 'ppl'");
    return atof(got);
}

Test(gguf, perplexity_as_llama_cpp_prints_it, .fini = teardown)
{
    shell_setup("gguf-ppl");
    static const struct {
        const char *type;
        double tol;
    } files[] = {{"stories260K-f32", 1e-4}, {"stories260K-f16", 1e-4}, {"stories260K-bf16", 3e-4},
                 {"random-f32", 1e-4},      {"random-q8_0", 5e-4},     {"random-q4_0", 5e-4},
                 {"random-q4_1", 5e-4},     {"random-q4_k_m", 5e-4},   {"random-q5_k_m", 5e-4},
                 {"random-q3_k_m", 5e-4},   {"random256-q4_k_m", 5e-3}, {"random256-q5_k_m", 5e-3},
                 {"random256-q3_k_m", 5e-3}, {"random256-q2_k", 5e-3}, {"random256-iq4_xs", 5e-3},
                 {"random256-iq-mix", 5e-3}};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char db[96];
        double ref = llama_ppl(files[i].type, "llamacpp-ppl.tsv"),
               ppl = lenx_ppl(files[i].type, "fp32", "fp32", db, sizeof db);
        double rel = fabs(ppl - ref) / ref, bound = files[i].tol + 5e-5 / ref;
        cr_expect(rel <= bound, "%s: lenx %.7f, llama.cpp %.4f: %.2g relative, more than %.2g", files[i].type, ppl, ref,
                  rel, bound);
    }
}

/* `activations: llamacpp` takes x to each weight product as llama.cpp does (8-bit blocks for these
** files' K-quants). Against llama.cpp with an fp32 KV cache (llamacpp-ppl-f32cache.tsv: its attention
** then fp32 as lenx's), on the two files where the activations' rounding moves the perplexity most:
** within 1e-3 (measured 3.3e-4 and 5.0e-4), where fp32 activations are 2.6e-3 and 2.9e-3 away. The
** other files (docs/numerics.md#activations-as-llamacpp-rounds-them) move less than llama.cpp's own
** batched and one-token paths differ (4.3e-4 on the 256-wide Q4_K_M). The mode is in the run key and
** the stored provenance. */
Test(gguf, activations_as_llama_cpp_rounds_them, .fini = teardown)
{
    shell_setup("gguf-acts");
    static const char *const files[] = {"random256-q4_k_m", "random256-q2_k"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char db[96], db0[96], key[64], key0[64], blas[256];
        double ref = llama_ppl(files[i], "llamacpp-ppl-f32cache.tsv");
        double ppl = lenx_ppl(files[i], "llamacpp", "fp32", db, sizeof db),
               ppl0 = lenx_ppl(files[i], "fp32", "fp32", db0, sizeof db0);
        cr_expect(fabs(ppl - ref) / ref <= 1e-3 + 5e-5 / ref, "%s: lenx %.7f (fp32 activations %.7f), llama.cpp %.4f",
                  files[i], ppl, ppl0, ref);
        sql_text(key, sizeof key, db, "SELECT key FROM runs");
        sql_text(key0, sizeof key0, db0, "SELECT key FROM runs");
        cr_expect_str_neq(key, key0);
        sql_text(blas, sizeof blas, db, "SELECT blas FROM runs");
        cr_expect(strstr(blas, "activations=llamacpp") != NULL, "%s", blas);
    }
}

/* llama.cpp's default run keeps its KV cache in f16, so its attention reads f16 keys and values and
** rounds queries and probabilities to f16 (llamacpp-ppl.tsv). `activations: llamacpp` with `kv_cache: f16`
** rounds them too, in a pass's attention as in a decoding step's: on stories260K's F32 and F16 files (a
** trained model, whose predictions are not near-uniform) lenx comes within 3e-5 of llama.cpp's default
** (plus the printed digits' 5e-5), measured 3.5e-5 and 1.7e-5, where its fp32 attention is 7.3e-5 and
** 6.0e-5 away. The BF16 file, which is farther either way, and the random files, whose near-uniform
** predictions move by the size of llama.cpp's own differences of order, are in docs/numerics.md. */
Test(gguf, attention_as_llama_cpps_f16_cache_rounds_it, .fini = teardown)
{
    shell_setup("gguf-attn");
    static const char *const files[] = {"stories260K-f32", "stories260K-f16"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char db[96], db0[96], key[64], key0[64];
        double ref = llama_ppl(files[i], "llamacpp-ppl.tsv");
        double ppl = lenx_ppl(files[i], "llamacpp", "f16", db, sizeof db),
               ppl0 = lenx_ppl(files[i], "llamacpp", "fp32", db0, sizeof db0);
        double rel = fabs(ppl - ref) / ref, rel0 = fabs(ppl0 - ref) / ref, bound = 3e-5 + 5e-5 / ref;
        cr_expect(rel <= bound && rel0 > bound, "%s: lenx %.7f (%.2g), with an fp32 cache %.7f (%.2g), llama.cpp "
                  "%.4f", files[i], ppl, rel, ppl0, rel0, ref);
        sql_text(key, sizeof key, db, "SELECT key FROM runs");
        sql_text(key0, sizeof key0, db0, "SELECT key FROM runs");
        cr_expect_str_neq(key, key0);
    }
}

/* The command line's --activations: a bad value, and llamacpp with numerics bf16, exit 2 naming the option. */
Test(gguf, activations_option_errors, .fini = teardown)
{
    shell_setup("gguf-acts-cli");
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "$L score --model $R/tests/ref/gguf/random-q8_0.gguf --text $R/tests/ref/gguf/"
                    "text.txt --activations int8"), 2, "%s", out);
    cr_expect(strstr(out, "--activations must be fp32 or llamacpp, got 'int8'") != NULL, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L generate --model $R/tests/ref/gguf/random-q8_0.gguf -n 2 --numerics bf16 "
                    "--activations llamacpp"), 2, "%s", out);
    cr_expect(strstr(out, "activations: llamacpp does not go with numerics: bf16") != NULL, "%s", out);
}

/* Every quantized file's weights, dequantized by lenx, hash as llama.cpp's own dequantization of the
** same file does (tests/ref/gguf/dequantized.tsv: llama-quantize --allow-requantize to F32, hashed as
** F32): Q8_0, Q4_0, Q4_1, the Q5_0, Q5_1 and IQ4_NL of llama.cpp's fallbacks, and the Q2_K, Q3_K, Q4_K,
** Q5_K and Q6_K of the K-quant mixes and IQ4_XS, and one matrix each of IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
** IQ3_S, IQ1_S, IQ1_M, TQ1_0 and TQ2_0 (random256-iq-mix, tests/ref/gguf/make_iq.sh), bit for bit. */
Test(gguf, quantized_weights_are_llama_cpps, .fini = teardown)
{
    shell_setup("gguf-deq");
    static const char *const files[] = {"random-q8_0",      "random-q4_0",      "random-q4_1",      "random-q4_k_m",
                                        "random-q5_k_m",    "random-q3_k_m",    "random256-q4_k_m", "random256-q5_k_m",
                                        "random256-q3_k_m", "random256-q2_k",   "random256-iq4_xs", "random256-iq-mix"};
    static const char *const mlp[] = {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL", "Q4_K", "Q5_K", "Q3_K", "Q2_K",
                                      "IQ4_XS", "IQ3_S"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char want[128], got[8192], type[64];
        cr_assert_eq(sh(want, sizeof want, "awk -F'\\t' '$1 == \"%s.gguf\" {printf \"%%s\", $2}' "
                        "$R/tests/ref/gguf/dequantized.tsv", files[i]), 0);
        cr_assert_eq(strlen(want), 64, "no reference for %s: '%s'", files[i], want);
        cr_assert_eq(sh(got, sizeof got, "$L show model $R/tests/ref/gguf/%s.gguf", files[i]), 0, "%s", got);
        cr_expect(strstr(got, want), "%s: lenx's weights do not hash %s:\n%s", files[i], want, got);
        snprintf(type, sizeof type, "\"mlp\": \"%s\"", mlp[i]);     /* the type the file is there to check */
        cr_expect(strstr(got, type), "%s: its MLP is not %s:\n%s", files[i], mlp[i], got);
    }
}

/* `lenx show model`'s "matrices" counts each type among the model's weight matrices as the
** container lists the file's 2-D tensors (read here with the GGUF reader, not the loader): the
** Q4_K_M mix, and the fallback mix of a model whose rows are not whole super-blocks; such a
** mix's weights_dtype is "mixed". */
Test(gguf, show_model_counts_the_matrix_types, .fini = teardown)
{
    shell_setup("gguf-types");
    static const char *const files[] = {"random256-q4_k_m", "random-q3_k_m", "random256-q2_k"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[4096], got[8192], want[512] = "\"matrices\": {";
        snprintf(path, sizeof path, "%s/tests/ref/gguf/%s.gguf", getenv("LENX_ROOT"), files[i]);
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f, "%s", path);
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        unsigned char *bytes = lx_xmalloc((size_t)n);
        rewind(f);
        cr_assert_eq(fread(bytes, 1, (size_t)n, f), (size_t)n);
        fclose(f);
        struct lx_gguf g;
        struct lx_error err = {""};
        cr_assert_eq(lx_gguf_parse(&g, bytes, (size_t)n, path, &err), LX_OK, "%s", err.msg);
        long count[64] = {0};
        for (long k = 0; k < g.n_t; k++)
            if (g.t[k].n_dims == 2)
                count[g.t[k].type]++;
        /* in lenx's type order (half.h), as show prints them */
        static const int order[] = {LX_GGML_F32,  LX_GGML_BF16, LX_GGML_F16,  LX_GGML_Q8_0, LX_GGML_Q4_0,
                                    LX_GGML_Q4_K, LX_GGML_Q5_K, LX_GGML_Q6_K, LX_GGML_Q4_1, LX_GGML_Q5_0,
                                    LX_GGML_Q5_1, LX_GGML_Q2_K, LX_GGML_Q3_K, LX_GGML_IQ4_NL, LX_GGML_IQ4_XS};
        int first = 1;
        for (size_t t = 0; t < sizeof order / sizeof *order; t++)
            if (count[order[t]]) {
                snprintf(want + strlen(want), sizeof want - strlen(want), "%s\"%s\": %ld", first ? "" : ", ",
                         lx_gguf_ttype_name(order[t]), count[order[t]]);
                first = 0;
            }
        strcat(want, "}");
        lx_gguf_release(&g);
        free(bytes);
        cr_assert_eq(sh(got, sizeof got, "$L show model %s", path), 0, "%s", got);
        cr_expect(strstr(got, want), "%s: want %s in\n%s", files[i], want, got);
        /* more than one type among the matrices: the weights' type is "mixed", not the embedding's */
        cr_expect(strstr(got, "\"weights_dtype\": \"mixed\""), "%s: weights_dtype in\n%s", files[i], got);
    }
}

/* Q8_0 as llama.cpp defines it: each value the block's f16 scale times its int8, one float product. */
Test(gguf, q8_0_dequantizes_exactly)
{
    unsigned char blk[2 * LX_Q8_0_BYTES];
    uint16_t d0 = 0x3800, d1 = 0x2e66;  /* 0.5 and 0.0999755859375 in f16 */
    memcpy(blk, &d0, 2), memcpy(blk + LX_Q8_0_BYTES, &d1, 2);
    for (int j = 0; j < 32; j++)
        blk[2 + j] = (unsigned char)(int8_t)(j * 8 - 128), blk[LX_Q8_0_BYTES + 2 + j] = (unsigned char)(int8_t)(127 - j);
    float out[64];
    lx_half_to_f32(out, blk, LX_DT_Q8_0, 64);
    for (int j = 0; j < 32; j++) {
        cr_expect_eq(out[j], (float)(j * 8 - 128) * 0.5f, "value %d", j);
        cr_expect_eq(out[32 + j], (float)(127 - j) * 0.0999755859375f, "value %d", 32 + j);
    }
    cr_expect_eq(lx_dtype_bytes(LX_DT_Q8_0, 64), 68);
    cr_expect_eq(lx_half_first_nonfinite(blk, LX_DT_Q8_0, 64), -1);
    uint16_t inf = 0x7c00;
    memcpy(blk + LX_Q8_0_BYTES, &inf, 2);
    cr_expect_eq(lx_half_first_nonfinite(blk, LX_DT_Q8_0, 64), 32, "a non-finite scale names its block");
}

/* ---- hostile containers ---------------------------------------------------------- */

static unsigned char *tiny(size_t *n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/gguf/tiny.gguf", getenv("LENX_ROOT"));
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    static unsigned char buf[4096];
    *n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    unsigned char *copy = malloc(*n);
    memcpy(copy, buf, *n);
    return copy;
}

/* Parse b (n bytes): must fail with a message naming the file and saying `says`. */
static void refused(const unsigned char *b, size_t n, const char *says)
{
    struct lx_gguf g;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_gguf_parse(&g, b, n, "hostile.gguf", &err), LX_EINVAL, "accepted (%s)", says);
    cr_expect(strstr(err.msg, "hostile.gguf") && strstr(err.msg, says), "'%s' does not say '%s'", err.msg, says);
}

/* Where the bytes `what` begin in b. */
static size_t at(const unsigned char *b, size_t n, const char *what)
{
    const unsigned char *p = memmem(b, n, what, strlen(what));
    cr_assert_not_null(p, "%s", what);
    return (size_t)(p - b);
}

Test(gguf, hostile_containers)
{
    size_t n;
    unsigned char *b = tiny(&n);
    struct lx_gguf g;
    struct lx_error err;
    cr_assert_eq(lx_gguf_parse(&g, b, n, "tiny.gguf", &err), LX_OK, "%s", err.msg);
    cr_expect_eq(g.n_t, 3);
    cr_expect_eq(g.n_kv, 9);
    int64_t i = 0;
    cr_expect(lx_gguf_get_int(&g, "general.big", 1, &i, &err) == LX_OK && i == -5);
    double f = 0;
    cr_expect(lx_gguf_get_num(&g, "llama.rope.freq_base", 1, &f, &err) == LX_OK && f == 10000.0);
    cr_expect_eq(lx_gguf_tensor(&g, "b.weight")->type, LX_GGML_F16);
    cr_expect_eq(lx_gguf_get_int(&g, "llama.nothing", 1, &i, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "'llama.nothing' is missing"), "%s", err.msg);
    size_t end = (size_t)(g.t[2].data - b) + g.t[2].bytes;     /* the last tensor's last byte: padding may go */
    uint64_t a_off, b_off;     /* a.weight's and b.weight's data offsets (from the data section's start) */
    memcpy(&a_off, b + at(b, n, "a.weight") + 8 + 4 + 16 + 4, 8);
    b_off = (uint64_t)(g.t[1].data - g.t[0].data) + a_off;
    cr_assert(g.t[0].bytes > 0 && g.t[1].bytes > 0 && !strcmp(g.t[1].name, "b.weight"));
    lx_gguf_release(&g);
    /* every truncation refused, none read past the end (the fuzz target runs this under ASan) */
    for (size_t k = 0; k < end; k += 7)
        refused(b, k, k < 4 ? "the magic" : "");
    unsigned char *c = malloc(n);
#define PATCH(off, val, sz) (memcpy(c, b, n), memcpy(c + (off), &(val), (sz)))
    uint32_t one = 1;
    PATCH(4, one, 4);
    refused(c, n, "GGUF version 1");
    size_t a = at(b, n, "a.weight") + 8;    /* n_dims, ne[0], ne[1], type, offset */
    uint32_t t99 = 99;
    PATCH(a + 4 + 16, t99, 4);
    refused(c, n, "type 99, which lenx does not read");
    uint64_t huge = 1ULL << 41;
    PATCH(a + 4, huge, 8);
    refused(c, n, "dimension 0 is 2199023255552");
    uint64_t far = 1ULL << 40;
    PATCH(a + 4 + 16 + 4, far, 8);
    refused(c, n, "ends past the end of the file");
    uint64_t odd = 3;
    PATCH(a + 4 + 16 + 4, odd, 8);
    refused(c, n, "not a multiple of the alignment");
    size_t key = at(b, n, "general.architecture") - 8;
    PATCH(key, huge, 8);
    refused(c, n, "longer than the");
    size_t arr = at(b, n, "tokenizer.ggml.scores") + strlen("tokenizer.ggml.scores") + 4;
    uint32_t nested = LX_GGUF_ARRAY;
    PATCH(arr, nested, 4);
    refused(c, n, "an array of arrays");
    uint64_t many = 1ULL << 60;
    PATCH(arr + 4, many, 8);
    refused(c, n, "claims 1152921504606846976 elements");
    uint32_t vt = 77;
    PATCH(at(b, n, "general.flag") + 12, vt, 4);
    refused(c, n, "value type 77");
    memcpy(c, b, n);
    memcpy(c + at(b, n, "c.weight"), "a.weight", 8);
    refused(c, n, "tensor 'a.weight' is in the file twice");
    memcpy(c, b, n);    /* general.f64 renamed general.big: two values of one key (llama.cpp refuses it too) */
    memcpy(c + at(b, n, "general.f64"), "general.big", 11);
    refused(c, n, "metadata key 'general.big' is in the file twice");
    PATCH(a + 4 + 16 + 4, b_off, 8);    /* a.weight read from b.weight's bytes */
    refused(c, n, "overlap");
#undef PATCH
    free(c);
    free(b);
}

Test(gguf, a_truncated_model_names_the_tensor, .fini = teardown)
{
    shell_setup("gguf-cut");
    char out[8192];
    cr_assert_eq(sh(out, sizeof out, "head -c 900000 $R/tests/ref/gguf/stories260K-f32.gguf > cut.gguf && "
                    "$L show model cut.gguf"), 2, "%s", out);
    cr_expect(exists("cut.gguf"));
    cr_expect(strstr(out, "cut.gguf: tensor 'blk.") && strstr(out, "ends past the end of the file"), "%s", out);
}

/* A file holding a block more than its block_count: read as the metadata says, the last block left out
** silently, it scored as another model. Refused, naming the first tensor of the block. */
Test(gguf, a_block_past_block_count_is_refused, .fini = teardown)
{
    shell_setup("gguf-blocks");
    char path[512], out[8192];
    snprintf(path, sizeof path, "%s/tests/ref/gguf/stories260K-f32.gguf", getenv("LENX_ROOT"));
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    unsigned char *b = malloc(n);
    rewind(f);
    cr_assert_eq(fread(b, 1, n, f), n);
    fclose(f);
    size_t at_key = at(b, n, "llama.block_count") + strlen("llama.block_count");
    uint32_t type, count;
    memcpy(&type, b + at_key, 4);
    memcpy(&count, b + at_key + 4, 4);
    cr_assert(type == LX_GGUF_U32 && count == 5, "type %u, count %u", type, count);
    count = 4;
    memcpy(b + at_key + 4, &count, 4);
    snprintf(path, sizeof path, "%s/fewer.gguf", dir);
    f = fopen(path, "wb");
    cr_assert(f && fwrite(b, 1, n, f) == n && fclose(f) == 0);
    free(b);
    cr_expect_eq(sh(out, sizeof out, "$L show model fewer.gguf"), 2, "%s", out);
    cr_expect(strstr(out, "fewer.gguf: tensor 'blk.4.") && strstr(out, "' is of block 4, but the metadata's "
              "block_count is 4"), "%s", out);
}

/* The tokenizer inside the file (tokenizers/tok_gguf.c): llama.cpp's llama-tokenize ids of text.txt
** (tests/ref/gguf/text.ids), and what `score` finds without --tokenizer. */
Test(gguf, its_own_tokenizer, .fini = teardown)
{
    shell_setup("gguf-tok");
    static char out[1 << 16], ref[1 << 16];
    cr_assert_eq(sh(out, sizeof out, "$L tokenize --tokenizer $R/tests/ref/gguf/stories260K-f16.gguf --text "
                    "$R/tests/ref/gguf/text.txt | tr -d ' \n'"), 0, "%s", out);
    cr_assert_eq(sh(ref, sizeof ref, "tr -d ' \n' < $R/tests/ref/gguf/text.ids"), 0);
    cr_expect_gt(strlen(ref), 1000);
    cr_expect_str_eq(out, ref);
    static char a[1 << 16], b[1 << 16];
    cr_assert_eq(sh(a, sizeof a, "$L score --model $R/tests/ref/gguf/stories260K-f32.gguf --text "
                    "$R/tests/ref/gguf/text.txt --length 128 --portable"), 0, "%s", a);
    cr_assert_eq(sh(b, sizeof b, "$L score --model $R/../shared/models/stories260K/stories260K.bin --text "
                    "$R/tests/ref/gguf/text.txt --length 128 --portable"), 0, "%s", b);
    cr_expect_str_eq(nll_list(a), nll_list(b));
    cr_expect(strstr(a, "\"tokenizer\": \"") && strstr(a, "stories260K-f32.gguf\",\n  \"tokenizer_sha256\""), "%s", a);
}
