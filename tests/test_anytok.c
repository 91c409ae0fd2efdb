/*
** tests/test_anytok.c - the tasks on any tokenizer (docs/tasks.md#tokenizers),
** end to end through the lenx binary: a checkpoint whose vocabulary is not
** the byte tokenizer's is refused at plan time unless the model names its
** tokenizer (before this, a 512-token model scored the byte corpus as if its
** ids were bytes and gave a perplexity of 1e11 without a word), a tokenizer
** whose vocabulary outgrows the model's is refused, mlm refuses a tokenizer
** without a mask token, and the same checkpoint with its tokenizer runs ppl
** (bits per byte), attn and every retrieval task. Models lenx trains on a
** tokenizer (docs/config.md#models): tok512's, end to end from training to
** score and export; mixture windows in a tokenizer's tokens; a checkpoint's
** recorded tokenizer checked on load; vocab, mlm and BOS refusals.
** $LENX_BIN and $LENX_ROOT are set by `make test`.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "tests/shell.h"
#include "tests/tokfile.h"

static double sql_double(const char *db, const char *sql)
{
    char out[256];
    sql_text(out, sizeof out, db, sql);
    return strtod(out, NULL);
}

static double metric_at(const char *db, int len, const char *name);

static void setup(void)
{
    shell_setup("anytok");
    cr_assert_not_null(getenv("LENX_ROOT"), "LENX_ROOT must name the checkout (make test sets it)");
}

/* A committed checkpoint's (tests/ref/model_ckpt_<ref>.safetensors)
** architecture with vocab V and fresh weights, written to the test dir as
** `file` (its metadata kept). */
static void vocab_ckpt_of(const char *ref, const char *file, long V)
{
    char src[4096], dst[256];
    snprintf(src, sizeof src, "%s/tests/ref/model_ckpt_%s.safetensors", getenv("LENX_ROOT"), ref);
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

static void vocab_ckpt(const char *file, long V)
{
    vocab_ckpt_of("causal_rope", file, V);
}

static void expect_refused(const char *yaml, const char *what)
{
    char out[4096];
    write_file("t.yaml", yaml);
    cr_expect_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|\" t.yaml && $L run t.yaml --db x.db"), 2, "%s\n%s", yaml,
                 out);
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
}

/* The test tokenizer (418 tokens) written into the test dir as tok.bin. */
static void tok_in_dir(void)
{
    char path[256], cmd[600];
    tokfile_write(path, sizeof path);
    snprintf(cmd, sizeof cmd, "mv %s tok.bin", path);
    cr_assert_eq(sh(NULL, 0, "%s", cmd), 0);
}

Test(anytok, tokenizer_mismatches_are_refused, .init = setup, .fini = teardown, .timeout = 60)
{
    tok_in_dir();
    vocab_ckpt("v300.safetensors", 300);
    expect_refused("name: t\nmodels: {v: {checkpoint: v300.safetensors, tokenizer: tok.bin}}\nmethods: [rope]\n"
                   "tasks: [{ppl: {windows: 2}}]\nlengths: [64]\n",
                   "t.yaml:2:55: model 'v' has a vocabulary of 300, fewer than the 418 tokens of its tokenizer");
    /* a model lenx trains on a tokenizer takes its vocabulary; written, it must agree */
    expect_refused("name: t\nmodels: {v: {arch: {layers: 1, vocab: 300}, tokenizer: tok.bin}}\nmethods: [rope]\n"
                   "tasks: [ppl]\nlengths: [64]\n",
                   "t.yaml:2:39: model 'v' arch: vocab 300 disagrees with its tokenizer tok.bin, which has 418 tokens\n"
                   "  hint: leave vocab out");
    /* a window begins with BOS (else EOS): a tokenizer.json with neither is refused, not run */
    write_file("nobos.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": []}, "
               "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"post_processor\": null}");
    expect_refused("name: t\nmodels: {v: {arch: {layers: 1}, tokenizer: nobos.json}}\nmethods: [rope]\n"
                   "tasks: [ppl]\nlengths: [64]\n",
                   "t.yaml:2:44: model 'v': nobos.json has neither BOS nor EOS");
    /* mlm training needs a [MASK] id, which no tokenizer file has */
    expect_refused("name: t\nmodels: {v: {arch: {layers: 1, mode: mlm}, tokenizer: tok.bin}}\nmethods: [rope]\n"
                   "tasks: [mlm]\nlengths: [64]\n",
                   "t.yaml:2:38: model 'v': masked-LM training needs a [MASK] token, and its sentencepiece tokenizer "
                   "tok.bin has none\n  hint: train mlm models on bytes");
    expect_refused("name: t\nmodels: {v: {checkpoint: v300.safetensors, tokenizer: nosuch.bin}}\nmethods: [rope]\n"
                   "tasks: [ppl]\nlengths: [64]\n", "t.yaml:2:55: model 'v': tokenizer: ");
    vocab_ckpt_of("mlm_logn", "m512.safetensors", 512);
    expect_refused("name: t\nmodels: {m: {checkpoint: m512.safetensors, tokenizer: tok.bin}}\nmethods: [[rope, logn]]\n"
                   "tasks: [mlm]\nlengths: [64]\n",
                   "t.yaml:4:9: task 'mlm' needs a mask token, and model 'm''s sentencepiece tokenizer");
}

/* A checkpoint saved as trained on tok.bin (418 ids) records its hash and a
** copy beside it: loaded without `tokenizer:` it reads the copy; another
** tokenizer (the tiny tokenizer.json, whose 269 ids fit) is refused by hash,
** and so is a missing copy. */
Test(anytok, trained_tokenizer_is_checked_on_load, .init = setup, .fini = teardown, .timeout = 60)
{
    tok_in_dir();
    char src[4096], dst[256], tok[256];
    snprintf(src, sizeof src, "%s/tests/ref/model_ckpt_causal_rope.safetensors", getenv("LENX_ROOT"));
    snprintf(dst, sizeof dst, "%s/t418.safetensors", dir);
    snprintf(tok, sizeof tok, "%s/tok.bin", dir);
    struct lx_model m, big;
    struct lx_ckpt_info info = {0};
    struct lx_error err = {""};
    struct lx_tokenizer *tk;
    cr_assert_eq(lx_model_load(&m, src, &info, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_tokenizer_open(&tk, tok, &err), LX_OK, "%s", err.msg);
    struct lx_arch a = m.arch;
    a.vocab = 418;
    lx_model_init(&big, &a, 7);
    info.tokenizer = lx_xstrdup(tok);
    memcpy(info.tokenizer_sha256, tk->hash, 65);
    cr_assert_eq(lx_model_save(&big, dst, &info, &err), LX_OK, "%s", err.msg);
    lx_ckpt_info_release(&info);
    lx_tokenizer_free(tk);
    lx_model_release(&m);
    lx_model_release(&big);
    char out[8192];
    cr_expect_eq(sh(out, sizeof out, "cmp tok.bin t418.tokenizer/tokenizer.bin"), 0, "the copy: %s", out);
    write_file("ok.yaml", "name: t\nmodels: {v: {checkpoint: t418.safetensors}}\nmethods: [rope]\n"
               "tasks: [{ppl: {windows: 1}}]\nlengths: [32]\n");
    cr_expect_eq(sh(out, sizeof out, "$L run ok.yaml --db ok.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(sql_long("ok.db", "select count(*) from runs where status = 'ok' and key_json like '%_tokenizer_:_%'"),
                 1, "run on the copy's ids");
    expect_refused("name: t\nmodels: {v: {checkpoint: t418.safetensors, tokenizer: $R/tests/ref/tok_tiny.json}}\n"
                   "methods: [rope]\ntasks: [ppl]\nlengths: [64]\n",
                   "is not the tokenizer the model was trained on");
    cr_assert_eq(sh(out, sizeof out, "rm -r t418.tokenizer"), 0, "%s", out);
    expect_refused("name: t\nmodels: {v: {checkpoint: t418.safetensors}}\nmethods: [rope]\n"
                   "tasks: [ppl]\nlengths: [64]\n",
                   "t.yaml:2:26: model 'v': tokenizer: the model was trained on a tokenizer (sha256 ");
}

/* A tokenizer.json with neither BOS nor EOS (no post-processor, no
** tokenizer_config.json beside it) opens, but cannot begin a window: every
** window began with id -1, an embedding row before the model's table (ASan:
** a heap overflow in lx_model_forward under lenx score). Found while
** fuzzing the tokenizer readers; refused by a sweep, lenx score and generate. */
Test(anytok, tokenizer_without_bos_or_eos_is_refused, .init = setup, .fini = teardown, .timeout = 60)
{
    vocab_ckpt("v300.safetensors", 300);
    write_file("nobos.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": []}}");
    write_file("t.txt", "abba");
    expect_refused("name: t\nmodels: {v: {checkpoint: v300.safetensors, tokenizer: nobos.json}}\nmethods: [rope]\n"
                   "tasks: [{ppl: {windows: 2}}]\nlengths: [64]\n",
                   "t.yaml:2:55: model 'v': nobos.json has neither BOS nor EOS");
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L score --model v300.safetensors --tokenizer nobos.json --text t.txt"), 2,
                 "%s", out);
    cr_expect(strstr(out, "nobos.json has neither BOS nor EOS") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L generate --model v300.safetensors --tokenizer nobos.json --prompt ab -n 2"),
                 2, "%s", out);
    cr_expect(strstr(out, "nobos.json has neither BOS nor EOS") != NULL, "%s", out);
}

/* A 512-token checkpoint with the test tokenizer runs ppl, attn and retrieval:
** windows of exactly L of its tokens, bits per byte from the bytes those
** tokens hold, the tokenizer in the run key. */
Test(anytok, bpe_checkpoint_runs_every_causal_task, .init = setup, .fini = teardown, .timeout = 120)
{
    tok_in_dir();
    vocab_ckpt("v512.safetensors", 512);
    char out[16384];
    write_file("t.yaml", "name: t\nmodels: {v: {checkpoint: v512.safetensors, tokenizer: tok.bin}}\nmethods: [rope]\n"
               "tasks: [{ppl: {windows: 2}}, {attn: {windows: 1}}, {passkey: {samples: 2, depths: 2, template: short}},"
               " {needle: {samples: 1, depths: 2, template: short}}]\nlengths: [300]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run t.yaml --db t.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(sql_long("t.db", "select count(*) from runs where status = 'ok'"), 4, "every cell ok");
    cr_expect_eq(sql_long("t.db", "select count(*) from runs where key_json like '%,_tokenizer_:_%'"), 4,
                 "the tokenizer's hash in every run key");
    double nll = sql_double("t.db", "select printf('%.17g', value) from metrics where name = 'nll'"),
           bpb = sql_double("t.db", "select printf('%.17g', value) from metrics where name = 'bpb'"),
           nb = sql_double("t.db", "select value from metrics where name = 'n_bytes'");
    cr_expect_eq(sql_long("t.db", "select m.value from metrics m where m.name = 'n_tokens'"), 600, "2 windows x 300 tokens");
    cr_expect_gt(nb, 600 * 1.2, "BPE tokens hold more than a byte each: %g bytes", nb);
    cr_expect(fabs(bpb - nll * 600 / log(2.0) / nb) < 1e-9 * bpb, "bpb = NLL bits / bytes: %g vs %g", bpb,
              nll * 600 / log(2.0) / nb);
}

/* Hugging Face tokenizer.json files (byte-level BPE): `tokenizer:` takes one
** (the tiny test file of tests/ref, 269 ids) for a 300-token checkpoint, and a
** Hugging Face directory holding one is read under `hf:` and `checkpoint:`
** (stories260K-hf's config and weights with the tiny file as its
** tokenizer.json; the two spellings
** are one model, one key): ppl windows are exactly L of its tokens, passkey
** runs, the file's hash is in every run key.
** The vocabulary check applies: Qwen3's 151,669 ids do not fit 300. */
Test(anytok, tokenizer_json_models, .init = setup, .fini = teardown, .timeout = 120)
{
    vocab_ckpt("v300.safetensors", 300);
    char out[16384];
    cr_assert_eq(sh(out, sizeof out, "mkdir hfd && cp $R/tests/ref/stories260K-hf/config.json $R/tests/ref/stories260K-hf/model.safetensors hfd/ && "
                    "cp $R/tests/ref/tok_tiny.json hfd/tokenizer.json"), 0, "%s", out);
    write_file("t.yaml", "name: t\nmodels: {v: {checkpoint: v300.safetensors, tokenizer: \"$R/tests/ref/tok_tiny.json\"},"
               " h: {hf: hfd}, c: {checkpoint: hfd}}\nmethods: [rope]\n"
               "tasks: [{ppl: {windows: 2}}, {passkey: {samples: 1, depths: 2, template: short}}]\nlengths: [128]\n");
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|\" t.yaml && $L run t.yaml --db t.db --quiet --no-table"), 0,
                 "%s", out);
    cr_expect_eq(sql_long("t.db", "select count(*) from runs where status = 'ok'"), 4, "every cell ok");
    cr_expect_eq(sql_long("t.db", "select count(*) from runs where key_json like "
                          "'%,_tokenizer_:_cde6f24ed24728bde586ad6b89e6797b838c3323fc51512b92bd69138b33d8df_%'"), 4,
                 "the tokenizer.json's SHA-256 in every run key");
    cr_expect_eq(sql_long("t.db", "select count(*) from metrics where name = 'n_tokens' and value = 256"), 2,
                 "2 windows x 128 tokens for each model");
    cr_expect_eq(sql_long("t.db", "select count(*) from metrics m join metrics t on t.run_id = m.run_id "
                          "where m.name = 'n_bytes' and t.name = 'n_tokens' and m.value > t.value"), 2,
                 "the tokens hold more bytes than one each");
    const char *qwen = "build/tokenizers/qwen3/models/tokenizer.json";
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", getenv("LENX_ROOT"), qwen);
    if (access(path, R_OK) != 0)
        return;
    char yaml[8192];
    snprintf(yaml, sizeof yaml, "name: t\nmodels: {v: {checkpoint: v300.safetensors, tokenizer: %s}}\n"
             "methods: [rope]\ntasks: [ppl]\nlengths: [64]\n", path);
    expect_refused(yaml, "model 'v' has a vocabulary of 300, fewer than the 151669 tokens of its tokenizer");
}

/* ---- retrieval instances in SentencePiece tokens --------------------------- */

#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/sweep/registry.h"
#include "tasks/retrieval.h"
#include "tasks/task.h"

/* The smallest length the task's check takes, from 16 up. */
static long min_length(const struct lx_task *t, const void *p)
{
    struct lx_error err;
    long L = 16;
    while (t->check(p, L, &err) < 0)
        L++;
    return L;
}

/* Every instance of the task at lengths L0 … has exactly L tokens of tk,
** begins with BOS, its answer span decodes to text the task scores correct
** (the gold answer in context), and the whole decodes to the task's own byte
** instance of that many bytes: segment boundaries lose no text. */
static void exact_lengths(const struct lx_tokenizer *tk, const char *name)
{
    const struct lx_task *t = lx_task_find(name);
    cr_assert_not_null(t);
    void *p = calloc(1, t->schema.size);
    lx_params_defaults(&t->schema, p);
    lx_params_finish(&t->schema, p);
    long L0 = min_length(t, p), lengths[] = {L0, L0 + 1, L0 + 6, L0 + 37, 2 * L0 + 1, 3 * L0 + 2};
    char *text = malloc((size_t)lx_tok_decode_cap(tk, 4 * L0 + 8));
    for (size_t k = 0; k < sizeof lengths / sizeof *lengths; k++)
        for (long s = 0; s < 2; s++)
            for (int d = 0; d <= 2; d++) {
                struct lx_instance in, b;
                struct lx_error err = {""};
                long L = lengths[k];
                cr_assert_eq(lx_retrieval_instance(t, p, tk, 11, L, s, d / 2.0, &in, &err), LX_OK, "%s L=%ld: %s",
                             name, L, err.msg);
                cr_expect_eq(in.n, L, "%s: %ld tokens, asked %ld", name, in.n, L);
                cr_expect_eq(in.tok[0], lx_tok_begin(tk));
                int stop;
                long na = lx_tok_decode(tk, in.tok + in.answer_off, in.n - in.answer_off, text, &stop);
                cr_expect_eq(t->score(p, &in, text, na), 1, "%s L=%ld: the answer span '%s' scores the gold '%s'", name,
                             L, text, in.gold);
                long nb = lx_tok_decode(tk, in.tok + 1, in.n - 1, text, &stop);
                cr_expect_eq(stop, -1);
                cr_assert_eq(t->generate(p, 11, nb + 1, s, d / 2.0, &b, &err), LX_OK, "%s", err.msg);
                int same = b.n == nb + 1;
                for (long i = 1; same && i < b.n; i++)
                    same = b.tok[i] == (unsigned char)text[i - 1];
                cr_expect(same, "%s L=%ld: the tokens decode to the task's %ld-byte instance", name, L, nb + 1);
                cr_expect_str_eq(in.gold, b.gold);
                cr_expect_lt(L, nb + 1, "%s: fewer tokens than bytes (%ld vs %ld)", name, L, nb + 1);
                lx_instance_release(&b);
                lx_instance_release(&in);
            }
    free(text);
    free(p);
}

/* Depth lands where asked: the task places the needle at a fraction of its
** byte instance (its own tests check where), and re-encoding keeps it there:
** the token holding the gold's first digit sits at nearly the same fraction
** of the tokens as that digit of the bytes, and the needle moves on with the
** depth (template short: the filler or haystack is nearly all of it). */
/* A retrieval task's parameters with template: short, resolved (free them). */
static void *template_short(const struct lx_task *t)
{
    void *p = calloc(1, t->schema.size);
    struct lx_error err = {""};
    lx_params_defaults(&t->schema, p);
    struct lx_node v = {.kind = LX_NODE_SCALAR, .text = "short"};
    cr_assert_eq(lx_params_set(&t->schema, p, "template", &v, t->name, &err), LX_OK, "%s", err.msg);
    lx_params_finish(&t->schema, p);
    return p;
}

static void depth_lands(const struct lx_tokenizer *tk, const char *name, long L)
{
    const struct lx_task *t = lx_task_find(name);
    void *p = template_short(t);
    struct lx_error err = {""};
    char *text = malloc((size_t)lx_tok_decode_cap(tk, L));
    long last = 0;
    for (int d = 0; d <= 4; d++) {
        struct lx_instance in;
        cr_assert_eq(lx_retrieval_instance(t, p, tk, 5, L, 0, d / 4.0, &in, &err), LX_OK, "%s", err.msg);
        long pos = 1, bytes = 0;        /* the token holding the gold's first byte */
        int stop;
        long nb = lx_tok_decode(tk, in.tok + 1, in.n - 1, text, &stop) + 1;
        long at = (long)(strstr(text, in.gold) - text) + 1;
        while (bytes + lx_tok_bytes(tk, in.tok[pos]) < at)
            bytes += lx_tok_bytes(tk, in.tok[pos++]);
        double frac = (double)pos / (double)L, want = (double)at / (double)nb;
        cr_expect(fabs(frac - want) < 0.03, "%s depth %g: the needle at token %ld of %ld (%.3f), byte %ld of %ld (%.3f)",
                  name, d / 4.0, pos, L, frac, at, nb, want);
        cr_expect_gt(pos, last, "%s: a deeper needle sits further in", name);
        last = pos;
        lx_instance_release(&in);
    }
    free(text);
    free(p);
}

static struct lx_tokenizer *test_tokenizer(char *path, size_t n)
{
    tokfile_write(path, n);
    struct lx_tokenizer *tk;
    struct lx_error err;
    cr_assert_eq(lx_tokenizer_open(&tk, path, &err), LX_OK, "%s", err.msg);
    return tk;
}

Test(anytok, retrieval_instances_exact_in_bpe_tokens, .timeout = 120)
{
    char path[256];
    struct lx_tokenizer *tk = test_tokenizer(path, sizeof path);
    static const char *const tasks[] = {"passkey", "line", "topic", "mdqa", "needle"};
    for (size_t i = 0; i < sizeof tasks / sizeof *tasks; i++)
        exact_lengths(tk, tasks[i]);
    depth_lands(tk, "passkey", 600);
    depth_lands(tk, "needle", 600);
    lx_tokenizer_free(tk);
    remove(path);
}

Test(anytok, retrieval_instances_exact_in_tok512, .timeout = 120)
{
    const char *path = tokfile_stories();
    if (!path)
        cr_skip_test("stories260K's tok512.bin is not beside the checkout");
    struct lx_tokenizer *tk;
    struct lx_error err;
    cr_assert_eq(lx_tokenizer_open(&tk, path, &err), LX_OK, "%s", err.msg);
    static const char *const tasks[] = {"passkey", "line", "topic", "mdqa", "needle"};
    for (size_t i = 0; i < sizeof tasks / sizeof *tasks; i++)
        exact_lengths(tk, tasks[i]);
    depth_lands(tk, "needle", 1000);
    lx_tokenizer_free(tk);
}

/* Byte-level BPE from a tokenizer.json: the tiny test file (committed), and
** Qwen3's when scripts/tokenizers.sh has fetched it. */
static void bytelevel_exact(const char *rel, const char *what, int must)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", getenv("LENX_ROOT"), rel);
    if (!must && access(path, R_OK) != 0)
        cr_skip_test("%s is not fetched (make tokenizers)", what);
    struct lx_tokenizer *tk;
    struct lx_error err;
    cr_assert_eq(lx_tokenizer_open(&tk, path, &err), LX_OK, "%s", err.msg);
    cr_assert_str_eq(tk->ops->kind, "bytelevel");
    cr_assert(tk->bos < 0 && lx_tok_begin(tk) == tk->eos, "%s: no BOS, instances begin with EOS", what);
    static const char *const tasks[] = {"passkey", "line", "topic", "mdqa", "needle"};
    for (size_t i = 0; i < sizeof tasks / sizeof *tasks; i++)
        exact_lengths(tk, tasks[i]);
    depth_lands(tk, "needle", 1000);
    lx_tokenizer_free(tk);
}

Test(anytok, retrieval_instances_exact_in_tiny_bytelevel, .timeout = 120)
{
    bytelevel_exact("tests/ref/tok_tiny.json", "the tiny tokenizer.json", 1);
}

Test(anytok, retrieval_instances_exact_in_qwen3, .timeout = 300)
{
    bytelevel_exact("build/tokenizers/qwen3/models/tokenizer.json", "Qwen3's tokenizer.json", 0);
}

/* `lenx score` in a model's own tokens: stories260K.bin finds tok512.bin
** beside it and scores " Once upon a time" as llama2.c's run.c encodes it
** (403 407 261 378, after its BOS); the Hugging Face conversion finds its
** tokenizer.json (converted from tok512.bin) and scores the same ids; its
** config and weights alone are refused until --tokenizer names one, then
** score within the BF16 conversion's error of the .bin. */
#include "harness/commands/score.h"

static char *score_json(const char *model, const char *tok, const char *text, struct lx_error *err)
{
    struct lx_score_opts o = {.model = model, .db = "none.db", .text = text, .tokenizer = tok};
    struct lx_buf out = {0};
    if (lx_score(&o, &out, err) < 0) {
        lx_buf_free(&out);
        return NULL;
    }
    return out.s;
}

static double json_num(const char *json, const char *key)
{
    const char *p = strstr(json, key);
    cr_assert_not_null(p, "%s in %s", key, json);
    return strtod(p + strlen(key), NULL);
}

Test(anytok, score_in_the_models_tokens, .init = setup, .fini = teardown, .timeout = 60)
{
    const char *tok = tokfile_stories();
    if (!tok)
        cr_skip_test("stories260K is not beside the checkout");
    char bin[4096], hf[4096], whole[4096], text[256], out[4096];
    snprintf(bin, sizeof bin, "%s/../shared/models/stories260K/stories260K.bin", getenv("LENX_ROOT"));
    snprintf(whole, sizeof whole, "%s/tests/ref/stories260K-hf", getenv("LENX_ROOT"));
    snprintf(hf, sizeof hf, "%s/bare", dir);
    cr_assert_eq(sh(out, sizeof out, "mkdir bare && cp $R/tests/ref/stories260K-hf/config.json "
                    "$R/tests/ref/stories260K-hf/model.safetensors bare/"), 0, "%s", out);
    snprintf(text, sizeof text, "/tmp/lenx-score-%ld.txt", (long)getpid());
    FILE *f = fopen(text, "w");
    fputs(" Once upon a time", f);
    fclose(f);
    struct lx_error err = {""};
    char *a = score_json(bin, NULL, text, &err);
    cr_assert_not_null(a, "%s", err.msg);
    cr_expect(strstr(a, "\"tokens\": [403,407,261,378]") != NULL, "run.c's ids: %s", a);
    cr_expect(strstr(a, "\"tokenizer_sha256\": \"037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312\"")
              != NULL, "%s", a);
    char *w = score_json(whole, NULL, text, &err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_expect(strstr(w, "\"tokens\": [403,407,261,378]") != NULL, "run.c's ids from tokenizer.json: %s", w);
    cr_expect(strstr(w, "\"tokenizer_sha256\": \"5c4194b6711f41ca349c1604d2af1208b89d74e352cd0c732b21dedd5aa43d29\"")
              != NULL, "%s", w);
    free(w);
    cr_expect_null(score_json(hf, NULL, text, &err));
    cr_expect(strstr(err.msg, "vocabulary of 512 and no tokenizer") && strstr(err.msg, "--tokenizer"), "%s",
              err.msg);
    char *b = score_json(hf, tok, text, &err);
    cr_assert_not_null(b, "%s", err.msg);
    double na = json_num(a, "\"mean_nll\": "), nb = json_num(b, "\"mean_nll\": ");
    cr_expect(na > 0 && fabs(na - nb) < 0.05, "mean NLL %g (.bin) vs %g (BF16 HF)", na, nb);
    free(a);
    free(b);
    remove(text);
}

/* A metric of the cell at `len`, to the last bit. */
static double metric_at(const char *db, int len, const char *name)
{
    char q[256];
    snprintf(q, sizeof q, "select printf('%%.17g', m.value) from metrics m join runs r on r.id = m.run_id "
             "where r.length = %d and m.name = '%s'", len, name);
    return sql_double(db, q);
}

/* For the byte tokenizer a token is a byte: bpb = log2(ppl), n_bytes = n_tokens. */
Test(anytok, byte_bpb_is_log2_ppl, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[16384];
    write_file("t.yaml", "name: t\nmodels: {b: {checkpoint: \"$R/tests/ref/model_ckpt_causal_rope.safetensors\"}}\n"
               "methods: [rope]\ntasks: [{ppl: {windows: 3}}]\nlengths: [48, 97]\n");
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|\" t.yaml && $L run t.yaml --db t.db --quiet --no-table"), 0,
                 "%s", out);
    for (int len = 48; len <= 97; len += 49) {
        double ppl = metric_at("t.db", len, "ppl"), bpb = metric_at("t.db", len, "bpb");
        cr_expect(fabs(bpb - log2(ppl)) < 1e-12 * bpb, "length %d: bpb %.17g, log2(ppl) %.17g", len, bpb, log2(ppl));
        cr_expect_eq(metric_at("t.db", len, "n_tokens"), metric_at("t.db", len, "n_bytes"), "a byte per token");
        cr_expect_eq(metric_at("t.db", len, "n_tokens"), 3.0 * len, "3 windows of exactly %d tokens", len);
    }
}

/* Formats from the loaders: a llama2.c model finds tok512.bin beside it and
** runs ppl in its tokens (stories260K on Persuasion: a story model on a novel,
** a few bits per byte); `hf:` takes a Hugging Face directory, refused without
** a tokenizer (stories260K-hf's config and weights alone) since its
** vocabulary is not bytes, and refuses a file. */
Test(anytok, llama2c_and_hf_models, .init = setup, .fini = teardown, .timeout = 120)
{
    const char *tok = tokfile_stories();
    if (!tok)
        cr_skip_test("stories260K is not beside the checkout");
    char out[16384];
    write_file("s.yaml", "name: s\nmodels: {s: {checkpoint: \"$S/stories260K.bin\"}}\n"
               "methods: [{rope: {layout: interleaved}}]\ntasks: [{ppl: {windows: 2}}]\nlengths: [128]\n");
    cr_assert_eq(sh(out, sizeof out, "S=$R/../shared/models/stories260K && sed -i \"s|\\$S|$S|\" s.yaml && "
                    "$L run s.yaml --db s.db --quiet --no-table"), 0, "%s", out);
    double bpb = metric_at("s.db", 128, "bpb"), ppl = metric_at("s.db", 128, "ppl");
    cr_expect(bpb > 1.5 && bpb < 4.5, "stories260K on Persuasion: %g bits per byte (ppl %g per token)", bpb, ppl);
    cr_expect_eq(sql_long("s.db", "select count(*) from runs where key_json like '%,_tokenizer_:_%'"), 1);
    cr_assert_eq(sh(out, sizeof out, "mkdir bare && cp $R/tests/ref/stories260K-hf/config.json "
                    "$R/tests/ref/stories260K-hf/model.safetensors bare/"), 0, "%s", out);
    expect_refused("name: t\nmodels: {h: {hf: bare}}\nmethods: [rope]\n"
                   "tasks: [ppl]\nlengths: [64]\n", "model 'h' has a vocabulary of 512 and no tokenizer");
    expect_refused("name: t\nmodels: {h: {hf: s.yaml}}\nmethods: [rope]\ntasks: [ppl]\nlengths: [64]\n",
                   "t.yaml:2:18: model 'h': 'hf' names a Hugging Face directory");
    /* a rope_scaling lenx's method refuses: named by config.json at the entry, as score and show model name it */
    cr_assert_eq(sh(out, sizeof out, "mkdir y && cp $R/tests/ref/stories260K-hf/* y/ && sed -i 's/\"rope_scaling\": "
                    "*null/\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4, \"beta_fast\": -5}/' "
                    "y/config.json && grep -q beta_fast y/config.json"), 0, "%s", out);
    expect_refused("name: t\nmodels: {h: {hf: y}}\nmethods: [rope]\ntasks: [ppl]\nlengths: [64]\n",
                   "t.yaml:2:18: model 'h': y/config.json: rope_scaling (with rope_theta) gives the stack");
}

/* ---- models lenx trains on a tokenizer ---------------------------------------- */

#include "harness/core/hash.h"
#include "harness/engine/model/train.h"

/* A mixture window in a tokenizer's tokens (train.c lx_mix_window): the
** passkey instance fills the window's last len tokens, len = lo + ⌊v·(T −
** lo + 1)⌋ with lo the shortest length the task accepts (found here by a
** linear scan of its check), after an untouched, unscored corpus head; it
** begins with BOS, decodes to the task's own training instance of that many
** bytes, its answer decodes to the gold, and every next token is a target. */
Test(anytok, mixture_windows_are_train_length_tokens, .timeout = 60)
{
    char path[256];
    struct lx_tokenizer *tk = test_tokenizer(path, sizeof path);
    const struct lx_task *t = lx_task_find("passkey");
    void *p = calloc(1, t->schema.size);
    lx_params_defaults(&t->schema, p);
    lx_params_finish(&t->schema, p);
    struct lx_mix mix = {.name = "passkey", .weight = 0.5, .params = p, .sample = t->train_sample, .check = t->check,
                         .tok = tk};
    enum { T = 256 };
    long lo = 2;
    struct lx_error err = {""};
    while (t->check(p, lo, &err) < 0)
        lo++;
    int tok[T], tgt[T];
    char *text = malloc((size_t)lx_tok_decode_cap(tk, T));
    for (long k = 0; k < 12; k++) {
        double v = (double)k / 12.0;
        long len = lo + (long)(v * (double)(T - lo + 1)), off = T - (len > T ? T : len);
        for (int i = 0; i < T; i++)
            tok[i] = 7, tgt[i] = 7;
        cr_assert_eq(lx_mix_window(tok, tgt, T, &mix, 1, 0.25, v, 9, k, &err), LX_OK, "%s", err.msg);
        for (long i = 0; i < off; i++)
            cr_assert(tok[i] == 7 && tgt[i] == -1, "k=%ld: the corpus head [0, %ld) stays, unscored", k, off);
        cr_expect_eq(tok[off], tk->bos, "k=%ld: the instance of %ld tokens begins with BOS at %ld", k, T - off, off);
        for (long i = off; i + 1 < T; i++)
            cr_assert_eq(tgt[i], tok[i + 1], "k=%ld: position %ld predicts the next token", k, i);
        cr_expect_eq(tgt[T - 1], -1);
        int stop;
        long nb = lx_tok_decode(tk, tok + off + 1, T - off - 1, text, &stop);
        struct lx_instance b;
        cr_assert_eq(t->train_sample(p, 9 ^ lx_hash64("passkey"), nb + 1, k, &b, &err), LX_OK, "%s", err.msg);
        int same = b.n == nb + 1;
        for (long i = 1; same && i < b.n; i++)
            same = b.tok[i] == (unsigned char)text[i - 1];
        cr_expect(same, "k=%ld: the tokens decode to the task's %ld-byte training instance", k, nb + 1);
        long na = (long)strlen(b.gold);
        cr_expect(nb >= na && memcmp(text + nb - na, b.gold, (size_t)na) == 0, "k=%ld: ends with the gold %s", k,
                  b.gold);
        lx_instance_release(&b);
    }
    free(text);
    free(p);
    lx_tokenizer_free(tk);
    remove(path);
}

/* Every length a mixture draws gives a window in tok512's tokens, the
** shortest ones too: passkey's check accepts 82 tokens, but no prompt of
** exactly 82 (or 81, ...: fewer than the check's minimum) exists in tok512
** (112 bytes give 81, 113 give 84), so the instance is the nearest longer
** one that fits, still inside the window. Every drawn length from the
** shortest to 64 above it: an instance of at most T tokens at the window's
** end, beginning with BOS, and a gold that decodes as its own answer. */
Test(anytok, mixture_windows_fit_every_drawn_length_in_tok512, .timeout = 120)
{
    const char *path = tokfile_stories();
    if (!path)
        cr_skip_test("stories260K's tok512.bin is not beside the checkout");
    struct lx_tokenizer *tk;
    struct lx_error err = {""};
    cr_assert_eq(lx_tokenizer_open(&tk, path, &err), LX_OK, "%s", err.msg);
    const struct lx_task *t = lx_task_find("passkey");
    void *p = template_short(t);
    struct lx_mix mix = {.name = "passkey", .weight = 1, .params = p, .sample = t->train_sample, .check = t->check,
                         .tok = tk, .answer_only = 1};
    enum { T = 512 };
    long lo = 2;
    while (t->check(p, lo, &err) < 0)
        lo++;
    int tok[T], tgt[T];
    for (long len = lo; len <= lo + 64; len++) {
        double v = ((double)(len - lo) + 0.5) / (double)(T - lo + 1);   /* draws exactly len */
        for (int i = 0; i < T; i++)
            tok[i] = 7, tgt[i] = 7;
        cr_assert_eq(lx_mix_window(tok, tgt, T, &mix, 1, 0.5, v, 9, len, &err), LX_OK, "length %ld: %s", len,
                     err.msg);
        long off = 0;
        while (off < T && tgt[off] == -1 && tok[off] == 7)
            off++;
        cr_assert(off < T && tok[off] == tk->bos, "length %ld: the instance begins with BOS after the head", len);
        long scored = 0;
        for (long i = off; i < T; i++)
            scored += tgt[i] >= 0;
        cr_expect(scored > 0 && tgt[T - 1] == -1, "length %ld: its answer is scored, the last token is not", len);
    }
    /* capped at the shortest, 82, which this instance (the loop's first) cannot have: refused, saying why */
    mix.max_length = lo;
    cr_assert_eq(lx_mix_window(tok, tgt, T, &mix, 1, 0.5, 0.0, 9, lo, &err), LX_ERUN);
    cr_expect(strstr(err.msg, "training mixture: no instance of 82 tokens: passkey: no prompt of exactly 82 "
                     "sentencepiece tokens") != NULL && strstr(err.msg, "one more or less") == NULL &&
              strstr(err.msg, "hint: give the mixture room: its instances run from the task's shortest, 82 tokens")
              != NULL, "%s", err.msg);
    free(p);
    lx_tokenizer_free(tk);
}

/* The sweep of trained_on_tok512: b on bytes and s on tok512 alike but for
** the tokenizer, m on tok512 with a passkey mixture. */
#define TOK_MODEL(name, extra)                                                                                   \
    "  " name ": {arch: {layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64, mlp: swiglu},\n"               \
    "      train: {length: 96, batch: 4, steps: 12, warmup: 2, eval_every: 12, eval_windows: 4}" extra "}\n"

/* A model trained on tok512 (docs/config.md#models): its vocabulary is the
** tokenizer's and its model key is the byte model's but for that and the
** tokenizer's hash (taken here with sha256sum); every training window is
** 64 of its tokens; its checkpoint keeps a copy of the tokenizer, reloads as
** a `checkpoint:` model to the same ppl bits, scores text in tok512's ids
** (`lenx tokenize`'s) to the same NLL with the copy or the original, and
** exports with the tokenizer to an HF directory that scores alike. Another
** tokenizer, or none once the copy is gone, is refused. */
Test(anytok, trained_on_tok512, .init = setup, .fini = teardown, .timeout = 120)
{
    const char *tok = tokfile_stories();
    if (!tok)
        cr_skip_test("stories260K's tok512.bin is not beside the checkout");
    char out[16384], yaml[16384], sha[80], key[32], q[512];
    snprintf(yaml, sizeof yaml, "name: t\nseed: 1\nmodels:\n" TOK_MODEL("b", "") TOK_MODEL("s", ",\n      tokenizer: %s")
             TOK_MODEL("m", ",\n      tokenizer: %s, mixture: [{passkey: {template: short, weight: 0.5}}]")
             "methods: [rope]\ntasks: [{ppl: {windows: 2}}, {passkey: {samples: 2, template: short}}]\n"
             "lengths: [96, 192]\n", tok, tok);
    write_file("t.yaml", yaml);
    cr_assert_eq(sh(out, sizeof out, "$L run t.yaml --db t.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(sql_long("t.db", "select count(*) from runs where status = 'ok'"), 12, "2 tasks x 3 models x 2 lengths");
    cr_assert_eq(sh(sha, sizeof sha, "sha256sum %s | cut -c1-64 | tr -d '\\n'", tok), 0);
    snprintf(q, sizeof q, "select count(*) from models s, models b where s.name = 's' and b.name = 'b' and s.config = "
             "replace(substr(b.config, 1, length(b.config) - 1), 'vocab' || char(34) || ':260,', 'vocab' || "
             "char(34) || ':512,') || ',' || char(34) || 'tokenizer' || char(34) || ':' || char(34) || '%s' || "
             "char(34) || '}'", sha);   /* no '\"' inside sql_long's quotes */
    cr_expect_eq(sql_long("t.db", q), 1, "the key JSON of s is b's with vocab 512 and the tokenizer's hash");
    cr_expect_eq(sql_long("t.db", "select count(distinct key) from models"), 3);
    cr_expect_eq(sql_long("t.db", "select count(*) from models where tokens = 12 * 4 * 96"), 3,
                 "12 steps of 4 windows of 96 tokens, bytes or tok512's");
    cr_expect_eq(sql_long("t.db", "select count(*) from runs r join metrics m on m.run_id = r.id where r.length = 192 "
                                  "and m.name = 'n_tokens' and r.task like 'ppl%'"), 3);
    cr_expect_eq(sql_long("t.db", "select count(*) from runs r join metrics m on m.run_id = r.id join metrics n on "
                                  "n.run_id = r.id where r.model != 'b' and m.name = 'n_bytes' and n.name = 'n_tokens' "
                                  "and m.value > 1.5 * n.value"), 4, "tok512's tokens hold 1.8 bytes each");
    sql_text(key, sizeof key, "t.db", "select key from models where name = 's'");
    cr_expect_eq(sh(out, sizeof out, "cmp %s models/%s.tokenizer/tokenizer.bin", tok, key), 0, "the copy: %s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show model models/%s.safetensors | grep -c '\"tokenizer_sha256\": \"%s\"'", key,
                    sha), 0, "%s", out);
    /* reloaded as a checkpoint: the same ppl, to the last bit */
    snprintf(yaml, sizeof yaml, "name: c\nmodels: {s: {checkpoint: models/%s.safetensors}}\nmethods: [rope]\n"
             "tasks: [{ppl: {windows: 2}}]\nlengths: [96]\n", key);
    write_file("c.yaml", yaml);
    cr_assert_eq(sh(out, sizeof out, "$L run c.yaml --db t.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(sql_long("t.db", "select count(distinct m.value) from runs r join metrics m on m.run_id = r.id "
                                  "where r.model = 's' and r.length = 96 and m.name = 'nll'"), 1, "same nll");
    cr_expect_eq(sql_long("t.db", "select count(*) from runs where model = 's' and length = 96 and task like 'ppl%'"), 2);
    /* lenx score: the copy, the original, the HF export */
    /* score encodes the text as it is; tokenize puts llama2.c's dummy space first, and BOS */
    write_file("f.txt", " Once upon a time, there was a little girl named Lily. She loved to play outside.");
    write_file("g.txt", "Once upon a time, there was a little girl named Lily. She loved to play outside.");
    char ids[1024], a[16384];
    cr_assert_eq(sh(ids, sizeof ids, "$L tokenize --tokenizer %s --text g.txt | tr -d ' \\n'", tok), 0, "%s", ids);
    cr_assert(strncmp(ids, "[1,", 3) == 0, "%s", ids);
    cr_assert_eq(sh(a, sizeof a, "$L score --model models/%s.safetensors --text f.txt | grep -E 'mean_nll|\"tokens\"'",
                    key), 0, "%s", a);
    ids[0] = '[';
    ids[2] = '[';
    cr_expect(strstr(a, ids + 2) != NULL, "tok512's ids without BOS (%s) in %s", ids + 2, a);
    cr_assert_eq(sh(out, sizeof out, "$L score --model models/%s.safetensors --tokenizer %s --text f.txt | "
                    "grep -E 'mean_nll|\"tokens\"'", key, tok), 0, "%s", out);
    cr_expect_str_eq(out, a, "the copy and the original score alike");
    cr_assert_eq(sh(out, sizeof out, "$L export --hf hf --model models/%s.safetensors && cmp %s hf/tokenizer.bin && "
                    "grep -c '\"bos_token_id\": 1,' hf/config.json", key, tok), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L score --model hf --text f.txt | grep mean_nll"), 0, "%s", out);
    double na = strtod(strstr(a, "mean_nll\": ") + 11, NULL), nh = strtod(strstr(out, "mean_nll\": ") + 11, NULL);
    cr_expect(na > 0 && fabs(na - nh) < 1e-5, "mean NLL %g (lenx) vs %g (HF export)", na, nh);
    cr_expect_eq(sh(out, sizeof out, "$L score --model models/%s.safetensors --text f.txt --tokenizer "
                    "$R/tests/ref/tok_tiny.json", key), 2, "%s", out);
    cr_expect(strstr(out, "tok_tiny.json is not the tokenizer the model was trained on") != NULL, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "rm -r models/%s.tokenizer", key), 0);
    cr_expect_eq(sh(out, sizeof out, "$L score --model models/%s.safetensors --text f.txt", key), 2, "%s", out);
    cr_expect(strstr(out, "whose copy is not beside it") != NULL, "%s", out);
}

/* ---- a text the tokenizer cannot cut ------------------------------------------- */

/* tok_tiny.json with a Split in front whose pattern passes pcre2's match
** limit on any line of 40 characters or more ((.|..)+ has Fibonacci(n) ways
** to fail on n characters without a NUL): every command that encodes stops
** with the pattern's error and exit 2 (3 for a sweep's failed cells), and
** none goes on with a text cut another way. Short texts still encode. */
Test(anytok, encode_errors_reach_every_command, .init = setup, .fini = teardown, .timeout = 120)
{
    vocab_ckpt("v300.safetensors", 300);
    char out[16384];
    cr_assert_eq(sh(out, sizeof out, "sed 's/\"pretokenizers\": *\\[/\"pretokenizers\": [{\"type\": \"Split\", "
                    "\"pattern\": {\"Regex\": \"(?:(.|..)+\\\\\\\\x00)|.\"}, \"behavior\": \"Isolated\"}, /' "
                    "$R/tests/ref/tok_tiny.json > bad.json && grep -c 'x00' bad.json"), 0, "%s", out);
    write_file("f.txt", "Once upon a time, there was a little girl named Lily. She loved to play outside.");
    const char *why = "bad.json: pre_tokenizer.pretokenizers[0] (Split): regular expression /(?:(.|..)+\\x00)|./ "
                      "failed matching from byte 0: match limit exceeded";
    cr_expect_eq(sh(out, sizeof out, "printf 'Once upon a time' | $L tokenize --tokenizer bad.json"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L tokenize --tokenizer bad.json --text f.txt"), 2, "%s", out);
    cr_expect(strstr(out, why) != NULL, "tokenize: %s", out);
    cr_expect_eq(sh(out, sizeof out, "$L score --model v300.safetensors --tokenizer bad.json --text f.txt"), 2, "%s", out);
    cr_expect(strstr(out, why) != NULL, "score: %s", out);
    cr_expect_eq(sh(out, sizeof out, "$L generate --model v300.safetensors --tokenizer bad.json -n 2 --prompt \"$(cat "
                    "f.txt)\""), 2, "%s", out);
    cr_expect(strstr(out, why) != NULL, "generate: %s", out);
    write_file("t.yaml", "name: t\nmodels: {v: {checkpoint: v300.safetensors, tokenizer: bad.json}}\nmethods: [rope]\n"
               "tasks: [{ppl: {windows: 1}}, {passkey: {samples: 1, depths: 1, template: short}}]\nlengths: [128]\n");
    /* a sweep records the failure in each cell and exits 1 (docs/config.md) */
    cr_expect_eq(sh(out, sizeof out, "$L run t.yaml --db t.db --quiet --no-table"), 1, "%s", out);
    char q[1024];
    /* the offset is where the failing match began in the document or instance */
    snprintf(q, sizeof q, "select count(*) from runs where status = 'failed' and instr(error, '%.*s') > 0 and "
             "instr(error, 'match limit exceeded') > 0", (int)(strstr(why, "byte 0") - why), why);
    cr_expect_eq(sql_long("t.db", q), 2, "ppl and passkey fail with the pattern's error");
    cr_expect_eq(sql_long("t.db", "select count(*) from runs where status = 'ok'"), 0, "no cell ran on other pieces");
    write_file("m.yaml", "name: m\nmodels:\n  s: {arch: {layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64},\n"
               "      train: {length: 64, batch: 2, steps: 2, warmup: 1, eval_every: 2, eval_windows: 1},\n"
               "      tokenizer: bad.json}\nmethods: [rope]\ntasks: [{ppl: {windows: 1}}]\nlengths: [64]\n");
    cr_expect_eq(sh(out, sizeof out, "$L run m.yaml --db m.db --quiet --no-table"), 1, "%s", out);
    cr_expect_eq(sql_long("m.db", q), 1, "training's corpus windows fail with the pattern's error");
    cr_expect_eq(sh(out, sizeof out, "ls models/*.safetensors 2>/dev/null | wc -l"), 0);
    cr_expect_str_eq(out, "0\n", "no model trained on other pieces");
}

/* --keep-prompts in a model's own tokens: stories260K with tok512, passkey at
** 300 tokens. Each stored prompt is the instance the cell read its answer
** from, fitted to 300 tok512 tokens (before, the byte instance of 300 bytes
** was stored: about 250 tokens, a prompt the model never saw). */
#include "harness/sweep/plan.h"

/* A file of the test dir, whole (n its bytes). */
static char *dir_file(const char *name, long *n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)*n + 1);
    cr_assert_eq(fread(b, 1, (size_t)*n, f), (size_t)*n);
    fclose(f);
    b[*n] = '\0';
    return b;
}

Test(anytok, kept_prompts_are_in_the_models_tokens, .init = setup, .fini = teardown, .timeout = 120)
{
    const char *tokpath = tokfile_stories();
    if (!tokpath)
        cr_skip_test("stories260K is not beside the checkout");
    char out[16384], task_json[1024], sql[256];
    write_file("k.yaml", "name: k\nseed: 1\nmodels: {s: {checkpoint: \"$S/stories260K.bin\"}}\n"
               "methods: [{rope: {layout: interleaved}}]\ntasks: [{passkey: {samples: 2, depths: 2}}]\n"
               "lengths: [300]\n");
    cr_assert_eq(sh(out, sizeof out, "S=$R/../shared/models/stories260K && sed -i \"s|\\$S|$S|\" k.yaml && "
                    "$L run k.yaml --db k.db --quiet --no-table --keep-prompts"), 0, "%s", out);
    cr_assert_eq(sql_long("k.db", "select count(*) from outputs where prompt is not null"), 4);
    sql_text(task_json, sizeof task_json, "k.db", "select task_params from runs");
    const struct lx_task *t = lx_task_find("passkey");
    void *p = calloc(1, t->schema.size);
    lx_params_defaults(&t->schema, p);
    lx_params_finish(&t->schema, p);
    struct lx_tokenizer *tk;
    struct lx_error err = {""};
    cr_assert_eq(lx_tokenizer_open(&tk, tokpath, &err), LX_OK, "%s", err.msg);
    uint64_t key = lx_plan_data_key(task_json, 300, 1);
    char *want = malloc((size_t)lx_tok_decode_cap(tk, 300));
    for (int s = 0; s < 4; s++) {
        char depth[32];
        snprintf(sql, sizeof sql, "select depth from outputs where sample = %d", s);
        sql_text(depth, sizeof depth, "k.db", sql);
        snprintf(sql, sizeof sql, "select writefile('p%d.bin', prompt) from outputs where sample = %d", s, s);
        sql_text(out, sizeof out, "k.db", sql);
        snprintf(sql, sizeof sql, "p%d.bin", s);
        long n_kept;
        char *kept = dir_file(sql, &n_kept);
        struct lx_instance in, b;
        cr_assert_eq(lx_retrieval_instance(t, p, tk, key, 300, s % 2, atof(depth), &in, &err), LX_OK, "%s", err.msg);
        int stop;
        long n = lx_tok_decode(tk, in.tok + 1, in.answer_off - 1, want, &stop);
        cr_expect(n == n_kept && memcmp(kept, want, (size_t)n) == 0, "sample %d: stored %ld bytes '%.60s…', the cell's "
                  "instance %ld bytes '%.60s…'", s, n_kept, kept, n, want);
        cr_assert_eq(t->generate(p, key, 300, s % 2, atof(depth), &b, &err), LX_OK, "%s", err.msg);
        cr_expect_gt(n_kept, b.answer_off - 1, "sample %d: the 300-byte instance's prompt was stored", s);
        lx_instance_release(&b);
        lx_instance_release(&in);
        free(kept);
    }
    free(want);
    lx_tokenizer_free(tk);
    free(p);
}
