/*
** tests/test_anytok.c - the tasks on any tokenizer (docs/tasks.md#tokenizers),
** end to end through the lenx binary: a checkpoint whose vocabulary is not
** the byte tokenizer's is refused at plan time unless the model names its
** tokenizer (before this, a 512-token model scored the byte corpus as if its
** ids were bytes and gave a perplexity of 1e11 without a word), a tokenizer
** whose vocabulary outgrows the model's is refused, mlm refuses a tokenizer
** without a mask token, and the same checkpoint with its tokenizer runs ppl
** (bits per byte), attn and every retrieval task. $LENX_BIN and $LENX_ROOT are
** set by `make test`.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/checkpoint.h"
#include "tests/shell.h"
#include "tests/tokfile.h"

static void setup(void)
{
    shell_setup("anytok");
    cr_assert_not_null(getenv("LENX_ROOT"), "LENX_ROOT must name the checkout (make test sets it)");
}

/* The committed rope checkpoint's architecture with vocab V and fresh
** weights, written to the test dir as `file` (its metadata kept). */
static void vocab_ckpt(const char *file, long V)
{
    char src[4096], dst[256];
    snprintf(src, sizeof src, "%s/tests/ref/model_ckpt_causal_rope.safetensors", getenv("LENX_ROOT"));
    snprintf(dst, sizeof dst, "%s/%s", dir, file);
    struct lx_model m, big;
    struct lx_ckpt_info info = {0};
    struct lx_error err = {""};
    cr_assert_eq(lx_model_load(&m, src, &info, &err), LX_OK, "%s", err.msg);
    struct lx_arch a = m.arch;
    a.vocab = V;
    lx_model_init(&big, &a, 7);
    cr_assert_eq(lx_model_save(&big, dst, &info, &err), LX_OK, "%s", err.msg);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    lx_model_release(&big);
}

static void expect_refused(const char *yaml, const char *what)
{
    char out[4096];
    write_file("t.yaml", yaml);
    cr_expect_eq(sh(out, sizeof out, "$L run t.yaml --db x.db"), 2, "%s\n%s", yaml, out);
    cr_expect(strstr(out, what) != NULL, "expected '%s' in:\n%s", what, out);
    cr_expect(!exists("x.db"), "a refused sweep must not create the database");
}

/* The 1.7e11 case: a 512-token model on the byte corpus. */
Test(anytok, foreign_vocabulary_without_tokenizer_is_refused, .init = setup, .fini = teardown, .timeout = 60)
{
    vocab_ckpt("v512.safetensors", 512);
    expect_refused("name: t\nmodels: {v: {checkpoint: v512.safetensors}}\nmethods: [rope]\n"
                   "tasks: [{ppl: {windows: 2}}]\nlengths: [64]\n",
                   "t.yaml:2:10: model 'v' has a vocabulary of 512 and no tokenizer; the byte tokenizer has 260");
    (void)sql_long;     /* the shell helpers the later tests use */
    (void)sql_text;
}
