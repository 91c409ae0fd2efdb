/*
** tests/test_formats.c - the registries of model formats (formats/formats.def)
** and tokenizer kinds (tokenizers/kinds.def): their contract, and a format
** added without editing any dispatcher.
**
** The throwaway format "rawf32" is this file's own: a header of six
** little-endian int32 (layers, d_model, heads, d_head, d_mlp, vocab), then
** every weight as F32 in lx_arch_tensors() order. Adding it takes its loader
** and one registration call (lx_model_format_add); lx_model_load, the dispatcher,
** reads it unchanged.
*/
#define _DEFAULT_SOURCE     /* mkdtemp */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/tokenizers/kinds.h"

/* ---- the throwaway format ---- */

static int rawf32_sniff(const char *path)
{
    size_t n = strlen(path);
    return n > 7 && strcmp(path + n - 7, ".rawf32") == 0;
}

static int rawf32_load(struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return lx_err(err, LX_EIO, "%s: cannot open", path);
    int32_t h[6];
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    int rc = fread(h, sizeof h, 1, f) == 1 ? LX_OK : lx_err(err, LX_EINVAL, "%s: no header", path);
    if (rc == LX_OK) {
        a.layers = h[0], a.d_model = h[1], a.heads = h[2], a.d_head = h[3], a.d_mlp = h[4], a.vocab = h[5];
        rc = lx_arch_resolve(&a, err);
    }
    if (rc == LX_OK)
        rc = lx_model_alloc(m, &a, err);
    if (rc == LX_OK && fread(m->w, sizeof(float), m->n_params, f) != m->n_params) {
        lx_model_release(m);
        rc = lx_err(err, LX_EINVAL, "%s: fewer weights than the header's model has", path);
    }
    fclose(f);
    if (rc == LX_OK && info) {
        lx_ckpt_info_native(info, "rawf32", "F32");
        info->stack = lx_xstrdup("[]");
        lx_model_weights_hash(m, info->weights_sha256);
    }
    return rc;
}

static const struct lx_model_format lx_model_format_rawf32 = {
    .name = "rawf32",
    .summary = "a test's throwaway format: six int32 of arch, then F32 weights",
    .key = NULL,
    .dir = 0,
    .sniff = rawf32_sniff,
    .load = rawf32_load,
};

/* ---- tests ---- */

Test(formats, registry_contract)
{
    int n;
    const struct lx_model_format *const *f = lx_model_formats(&n);
    cr_assert_geq(n, 3);
    for (int i = 0; i < n; i++) {
        cr_expect(f[i]->name && f[i]->summary && f[i]->sniff && f[i]->load, "format %d lacks a field", i);
        for (int j = 0; j < i; j++)
            cr_expect_str_neq(f[i]->name, f[j]->name);
    }
    /* the catch-all lenx format is last, so every other format is reachable */
    cr_expect_str_eq(f[n - 1]->name, "lenx");
    cr_expect_eq(lx_model_format_for_key("hf"), f[0]);
    cr_expect_null(lx_model_format_for_key("checkpoint"));
}

Test(formats, tokenizer_kinds_contract)
{
    int n = 0;
    for (; lx_tok_kinds[n]; n++) {
        const struct lx_tok_kind *k = lx_tok_kinds[n];
        cr_expect(k->name && k->file && k->accept && k->open, "kind %d lacks a field", n);
        for (int j = 0; j < n; j++) {
            cr_expect_str_neq(k->name, lx_tok_kinds[j]->name);
            cr_expect_str_neq(k->file, lx_tok_kinds[j]->file);
        }
    }
    cr_expect_eq(n, 3);
    /* JSON goes to the tokenizer.json kind, a GGUF file to its own, anything else to the catch-all tokenizer.bin */
    cr_expect_str_eq(lx_tok_kind_of((const unsigned char *)" \n{\"model\": {}}", 15)->file, "tokenizer.json");
    cr_expect_str_eq(lx_tok_kind_of((const unsigned char *)"GGUF\3\0\0\0", 8)->file, "tokenizer.gguf");
    cr_expect_str_eq(lx_tok_kind_of((const unsigned char *)"\x10\0\0\0", 4)->file, "tokenizer.bin");
}

Test(formats, a_format_added_without_editing_a_dispatcher)
{
    struct lx_error err = {{0}};
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 16, a.heads = 2, a.d_head = 8, a.d_mlp = 32, a.vocab = 260;
    cr_assert_eq(lx_arch_resolve(&a, &err), LX_OK, "%s", err.msg);
    struct lx_model m;
    lx_model_init(&m, &a, 7);
    char dir[] = "/tmp/lenx-formats-XXXXXX", path[64], lenx_path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.rawf32", dir);
    snprintf(lenx_path, sizeof lenx_path, "%s/m.safetensors", dir);
    FILE *f = fopen(path, "wb");
    int32_t h[6] = {2, 16, 2, 8, 32, 260};
    cr_assert(f && fwrite(h, sizeof h, 1, f) == 1 && fwrite(m.w, sizeof(float), m.n_params, f) == m.n_params);
    fclose(f);

    /* before registering: the catch-all lenx format takes the file and refuses it */
    struct lx_model got;
    struct lx_ckpt_info info;
    cr_expect_lt(lx_model_load(&got, path, &info, &err), 0);

    cr_assert_eq(lx_model_format_add(&lx_model_format_rawf32, &err), LX_OK, "%s", err.msg);
    cr_expect_lt(lx_model_format_add(&lx_model_format_rawf32, &err), 0, "a second registration of one name is refused");
    cr_expect(strstr(err.msg, "already registered") != NULL, "%s", err.msg);

    cr_assert_eq(lx_model_load(&got, path, &info, &err), LX_OK, "%s", err.msg);
    cr_expect_str_eq(info.format, "rawf32");
    cr_assert_eq(got.n_params, m.n_params);
    cr_expect_eq(memcmp(got.w, m.w, sizeof(float) * m.n_params), 0, "the weights read back differ");
    char want[65];
    lx_model_weights_hash(&m, want);
    cr_expect_str_eq(info.weights_sha256, want);
    lx_ckpt_info_release(&info);
    lx_model_release(&got);

    /* the built-in formats still load: a lenx checkpoint after the added one */
    struct lx_ckpt_info save = {.train_len = 16, .stack = "[]", .model_key = "k", .train_json = "{}"};
    cr_assert_eq(lx_model_save(&m, lenx_path, &save, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_model_load(&got, lenx_path, &info, &err), LX_OK, "%s", err.msg);
    cr_expect_str_eq(info.format, "lenx");
    cr_expect_eq(memcmp(got.w, m.w, sizeof(float) * m.n_params), 0);
    lx_ckpt_info_release(&info);
    lx_model_release(&got);
    lx_model_release(&m);
    unlink(path);
    unlink(lenx_path);
    rmdir(dir);
}
