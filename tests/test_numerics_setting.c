/*
** tests/test_numerics_setting.c - the numerics mode as a run setting
** (docs/config.md#numerics): the command line beats the sweep file, fast keys
** are those the committed reproduction snapshots hold, portable keys differ,
** every stored row and a trained checkpoint record the mode, and `lenx
** compare` warns (without failing) when the sides ran different arithmetic.
*/
#define _POSIX_C_SOURCE 200809L
#include "tests/shell.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness/engine/formats/checkpoint.h"

static void setup(void)
{
    shell_setup("numerics");
}

static const char *gauss = "name: %s\nseed: 1\n%smethods: [none, logn]\ntasks: [{gaussian: {samples: 200}}]\n"
                           "lengths: [100, 1000]\n";

/* A small gaussian sweep named name, with the line extra (a numerics: line, or ""). */
static void write_gauss(const char *file, const char *name, const char *extra)
{
    char text[512];
    snprintf(text, sizeof text, gauss, name, extra);
    write_file(file, text);
}

/* Fast keys are those of every lenx before the mode; portable keys differ.
** The literals are keys the t5-alignment reproduction's snapshot held when
** it ran in fast numerics (seed 1, before the mode existed): its retriever
** model and three cells (passkey with RoPE at 192, topic with log-n at 3072,
** attn with entropy alignment at 768). Its config now says `numerics:
** portable`; `--numerics fast` on the command line plans those keys again. */
Test(numerics, fast_keys_are_those_before_the_mode_portable_keys_are_not, .init = setup, .fini = teardown,
     .timeout = 120)
{
    static const char *const old[] = {"[cbe3d9d92bfc9510]", "ef098860c4cb9678", "21c85f25979e38db",
                                      "40c91df344c6de20"};
    char out[8192];
    cr_assert_eq(sh(out, sizeof out, "$L run --dry-run --db x.db --numerics fast $R/configs/repro/t5-alignment.yaml"
                    " > fast"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L run --dry-run --db x.db $R/configs/repro/t5-alignment.yaml > portable"), 0,
                 "%s", out);
    sh(out, sizeof out, "head -1 portable");
    cr_expect(strstr(out, "cells, portable numerics") != NULL, "the file's numerics: %s", out);
    cr_expect_eq(sh(out, sizeof out, "$L run --dry-run --db x.db --portable $R/configs/repro/t5-alignment.yaml | "
                    "cmp - portable"), 0, "--portable is the file's mode: %s", out);
    /* seed 1's 64 cells run on the old model key; its 3 old cell keys are planned again */
    cr_expect_eq(sh(out, sizeof out, "grep -cF '%s' fast", old[0]), 0, "%s", out);
    cr_expect_str_eq(out, "64\n");
    for (int i = 1; i < 4; i++) {
        cr_expect_eq(sh(out, sizeof out, "grep -c '^  %s ' fast", old[i]), 0, "%s: %s", old[i], out);
        cr_expect_str_eq(out, "1\n", "%s", old[i]);
    }
    /* none of them in portable numerics, and no cell key in common */
    for (int i = 0; i < 4; i++) {
        sh(out, sizeof out, "grep -cF '%s' portable", old[i]);
        cr_expect_str_eq(out, "0\n", "%s planned in portable numerics", old[i]);
    }
    cr_assert_eq(sh(out, sizeof out, "tail -n +2 fast | awk '{print $1}' | sort > kf && tail -n +2 portable | "
                    "awk '{print $1}' | sort > kp && wc -l < kf && wc -l < kp && comm -12 kf kp | wc -l"), 0,
                 "%s", out);
    cr_expect_str_eq(out, "192\n192\n0\n");
}

Test(numerics, command_line_beats_the_file_and_every_row_records_it, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192];
    write_gauss("p.yaml", "g", "numerics: portable\n");
    write_gauss("f.yaml", "g", "");
    cr_assert_eq(sh(out, sizeof out, "$L run p.yaml --db p.db --quiet --no-table --numerics fast"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L run f.yaml --db f.db --quiet --no-table"), 0, "%s", out);
    char a[512], b[512];
    sql_text(a, sizeof a, "p.db", "SELECT group_concat(key || numerics, ' ') FROM (SELECT * FROM runs ORDER BY key)");
    sql_text(b, sizeof b, "f.db", "SELECT group_concat(key || numerics, ' ') FROM (SELECT * FROM runs ORDER BY key)");
    cr_expect_str_eq(a, b, "--numerics fast on a portable file runs the fast cells");
    cr_expect(strstr(b, "fast") != NULL && strstr(b, "portable") == NULL, "%s", b);
    cr_assert_eq(sh(out, sizeof out, "$L run f.yaml --db f.db --quiet --no-table --portable"), 0, "%s", out);
    cr_expect_eq(sql_long("f.db", "SELECT count(*) FROM runs WHERE numerics = 'portable'"), 4,
                 "--portable on a fast file: 4 new cells (other keys)");
    cr_expect_eq(sql_long("f.db", "SELECT count(*) FROM runs WHERE numerics = 'portable' AND key_json LIKE "
                          "'%numerics%:%portable%}'"), 4, "the key JSON names the mode");
    cr_expect_eq(sql_long("f.db", "SELECT count(*) FROM runs WHERE numerics IS NULL"), 0);
    cr_expect_eq(sh(out, sizeof out, "$L show sweep g --db f.db | grep -c '^#   machine .*numerics portable: 4 cells'"),
                 0, "%s", out);
    /* bad values: exit 2, nothing written */
    cr_expect_eq(sh(out, sizeof out, "$L run f.yaml --db n.db --numerics exact"), 2, "%s", out);
    cr_expect(strstr(out, "--numerics must be fast, portable or bf16, got 'exact'\n  hint:") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L run p.yaml --db n.db --portable --numerics fast"), 2, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L score --model nothing --text f.yaml --numerics 1"), 2, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L generate --model nothing --numerics fastest"), 2, "%s", out);
    cr_expect(!exists("n.db"), "a refused run writes nothing");
}

/* The mode is a run setting, not a change of the config: cells run with
** --portable on a fast file are not stale, nor are the fast ones. */
Test(numerics, cells_of_either_mode_are_not_stale, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192];
    write_gauss("f.yaml", "g", "");
    cr_assert_eq(sh(out, sizeof out, "$L run f.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L run f.yaml --db r.db --quiet --no-table --portable"), 0, "%s", out);
    cr_expect(strstr(out, "no longer plans") == NULL, "%s", out);
    cr_expect_eq(sql_long("r.db", "SELECT count(*) FROM runs"), 8);
    cr_expect_eq(sh(out, sizeof out, "$L rm --not-in f.yaml --db r.db --yes"), 0, "%s", out);
    cr_expect(strstr(out, "no stored cell matches") != NULL, "%s", out);
    cr_expect_eq(sql_long("r.db", "SELECT count(*) FROM runs"), 8, "nothing removed");
    /* a changed config still leaves stale cells, in either mode */
    write_gauss("f.yaml", "g", "");
    cr_assert_eq(sh(out, sizeof out, "sed -i 's/\\[none, logn\\]/[none]/' f.yaml && "
                    "$L run f.yaml --db r.db --quiet --no-table --portable"), 0, "%s", out);
    cr_expect(strstr(out, "also holds 4 cells that f.yaml no longer plans") != NULL, "%s", out);
}

/* Lines of text that hold word. */
static int count_lines(const char *text, const char *word)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, word)); p += strlen(word))
        n++;
    return n;
}

Test(numerics, compare_warns_when_the_arithmetic_differs, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192];
    write_gauss("f1.yaml", "f1", "");
    write_gauss("f2.yaml", "f2", "");
    write_gauss("p1.yaml", "p1", "numerics: portable\n");
    write_gauss("p2.yaml", "p2", "numerics: portable\n");
    cr_assert_eq(sh(out, sizeof out, "for s in f1 f2 p1 p2; do $L run $s.yaml --db r.db --quiet --no-table || exit 1; "
                    "done"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare f1 f2 --db r.db 2>&1 >/dev/null"), 0, "%s", out);
    cr_expect_str_eq(out, "", "same numerics, same BLAS: no warning");
    cr_expect_eq(sh(out, sizeof out, "$L compare f1 p1 --db r.db --rtol 1 2>&1 >/dev/null"), 0, "a warning is no error");
    cr_expect_eq(count_lines(out, "lenx: warning: "), 1, "one line for the one pair: %s", out);
    cr_expect(strstr(out, "4 cells ran in fast numerics (BLAS core=") != NULL && strstr(out, ") in f1 but portable "
              "numerics (BLAS core=") != NULL && strstr(out, ") in p1: their last digits may differ\n") != NULL, "%s", out);
    /* fast with other BLAS kernels on 2 of the cells of f2: one line for them */
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"UPDATE runs SET blas = 'core=Other threading=openmp' WHERE sweep"
                    " IN ('f2', 'p2') AND length = 100\""), 0, "%s", out);
    sh(out, sizeof out, "$L compare f1 f2 --db r.db --rtol 1 2>&1 >/dev/null");
    cr_expect_eq(count_lines(out, "lenx: warning: "), 1, "%s", out);
    cr_expect(strstr(out, "2 cells ran in fast numerics (BLAS core=") != NULL &&
              strstr(out, "but fast numerics (BLAS core=Other threading=openmp) in f2") != NULL, "%s", out);
    /* both portable: the BLAS does not decide the bits */
    cr_expect_eq(sh(out, sizeof out, "$L compare p1 p2 --db r.db 2>&1 >/dev/null"), 0, "%s", out);
    cr_expect_str_eq(out, "");
    /* f2 against p2: two pairs (other BLAS on 2 cells, the machine's on 2), a line each */
    sh(out, sizeof out, "$L compare f2 p2 --db r.db --rtol 1 2>&1 >/dev/null");
    cr_expect_eq(count_lines(out, "lenx: warning: "), 2, "%s", out);
    /* a CSV side knows no arithmetic: no warning */
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --sweep p1 --format csv > p1.csv"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare p1.csv f1 --db r.db --rtol 1 2>&1 >/dev/null"), 0, "%s", out);
    cr_expect_str_eq(out, "");
}

/* A checkpoint trained in portable numerics says so (lenx_numerics, shown by
** `lenx show model`); one trained fast is the file it always was. */
Test(numerics, checkpoint_records_portable_numerics, .init = setup, .fini = teardown, .timeout = 60)
{
    struct lx_error err = {{0}};
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 1, a.d_model = 16, a.heads = 2, a.d_head = 8, a.d_mlp = 32, a.vocab = 260;
    cr_assert_eq(lx_arch_resolve(&a, &err), LX_OK, "%s", err.msg);
    struct lx_model m;
    lx_model_init(&m, &a, 3);
    static const char *const modes[] = {"", "fast", "portable"};
    for (int i = 0; i < 3; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/m%d.safetensors", dir, i);
        struct lx_ckpt_info save = {.train_len = 16, .stack = "[]", .model_key = "k", .train_json = "{}"};
        snprintf(save.numerics, sizeof save.numerics, "%s", modes[i]);
        cr_assert_eq(lx_model_save(&m, path, &save, &err), LX_OK, "%s", err.msg);
        struct lx_model got;
        struct lx_ckpt_info info = {0};
        cr_assert_eq(lx_model_load(&got, path, &info, &err), LX_OK, "%s", err.msg);
        cr_expect_str_eq(info.numerics, i == 2 ? "portable" : "fast", "saved as '%s'", modes[i]);
        lx_ckpt_info_release(&info);
        lx_model_release(&got);
    }
    lx_model_release(&m);
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "cmp m0.safetensors m1.safetensors && grep -c lenx_numerics m1.safetensors"), 1,
                 "fast writes no lenx_numerics: %s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show model m2.safetensors --db x.db | grep '\"numerics\"'"), 0, "%s", out);
    cr_expect_str_eq(out, "  \"numerics\": \"portable\",\n");
    cr_expect_eq(sh(out, sizeof out, "$L show model m1.safetensors --db x.db | grep '\"numerics\"'"), 0, "%s", out);
    cr_expect_str_eq(out, "  \"numerics\": \"fast\",\n");
}

/* The plan lays a cell out for the sweep's numerics: in portable numerics
** the evaluation pass runs the MLP and the head over 1,024-row blocks, so at
** 8,192 tokens the largest phase is the attention's, not the MLP's. By hand
** (float rows, 2 layers, d_model 64, 2 heads of 32, GELU d_mlp 1024, 260
** tokens): fast, the MLP phase is 8192 · (64 + 1024) · 4 = 35,651,584 bytes;
** portable, the attention phase is 8192 · (64 + 192 + 64 + 64) · 4 =
** 12,582,912 (xn1, qkv, ao and the tiles' packed keys, 2 heads of 32; the
** MLP's 1024 · 1088 · 4 and the head's 1024 · 64 · 4 + 8192 · 260 · 4 are
** smaller): 23,068,672 bytes = 23.1 MB less. */
Test(numerics, plan_counts_the_portable_layout, .init = setup, .fini = teardown, .timeout = 60)
{
    write_file("m.yaml", "name: m\n"
               "models:\n"
               "  m: {arch: {layers: 2, d_model: 64, heads: 2, d_head: 32, d_mlp: 1024},\n"
               "      train: {length: 64, steps: 2, batch: 1, warmup: 1}}\n"
               "methods: [rope]\n"
               "tasks: [{ppl: {windows: 1}}]\n"
               "lengths: [8192]\n");
    char fast[8192], port[8192];
    cr_assert_eq(sh(fast, sizeof fast, "$L run m.yaml --db m.db --dry-run | sed -n 's/.*memory=\\([0-9.]*\\) MB.*/\\1/p'"),
                 0, "%s", fast);
    cr_assert_eq(sh(port, sizeof port, "$L run m.yaml --db m.db --dry-run --portable | "
                    "sed -n 's/.*memory=\\([0-9.]*\\) MB.*/\\1/p'"), 0, "%s", port);
    double f = atof(fast), p = atof(port);
    cr_expect(f > 0 && fabs((f - p) - 23.068672) < 0.11, "fast %s MB, portable %s MB: the difference is not 23.1 MB",
              fast, port);
}

/* The KV cache's type and llama.cpp's activations are evaluation settings:
** they enter the run keys, not the key of a model lenx trains (training keeps
** no cache and its weights are fp32). With them in the model key, --kv-cache
** f16 trained a second model from another seed, and its cells compared two
** models, not two caches. */
Test(numerics, cache_and_activations_do_not_key_the_trained_model, .init = setup, .fini = teardown, .timeout = 120)
{
    char out[8192];
    write_file("t.yaml", "name: t\nseed: 1\nnumerics: portable\nmodels:\n  m:\n"
               "    arch: {mode: causal, layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64}\n"
               "    train: {length: 32, batch: 4, steps: 6, warmup: 2, eval_every: 3, eval_windows: 2}\n"
               "methods: [rope]\ntasks: [{ppl: {windows: 2}}]\nlengths: [32]\n");
    cr_assert_eq(sh(out, sizeof out, "LENX_CACHE=$D/cache $L run t.yaml --db t.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "LENX_CACHE=$D/cache $L run t.yaml --db t.db --no-table --kv-cache f16"), 0,
                 "%s", out);
    cr_expect(strstr(out, "0 models trained") != NULL, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "LENX_CACHE=$D/cache $L run t.yaml --db t.db --no-table --activations llamacpp"),
                 0, "%s", out);
    cr_expect(strstr(out, "0 models trained") != NULL, "%s", out);
    cr_expect_eq(sql_long("t.db", "SELECT count(DISTINCT key) FROM runs"), 3, "three run keys");
    cr_expect_eq(sql_long("t.db", "SELECT count(DISTINCT model_key) FROM runs"), 1, "one model");
    cr_expect_eq(sql_long("t.db", "SELECT count(*) FROM runs WHERE key_json LIKE '%kv_cache%f16%'"), 1);
    /* ppl never reads the cache: the f16 cell's numbers are the fp32 cell's */
    cr_expect_eq(sql_long("t.db", "SELECT count(DISTINCT m.value) FROM metrics m JOIN runs r ON r.id = m.run_id "
                          "WHERE m.name = 'nll' AND r.key_json NOT LIKE '%activations%'"), 1);
    /* score's JSON says which cache it ran with, as a stored cell does (with llamacpp it moves the numbers) */
    cr_assert_eq(sh(out, sizeof out, "$L score --model $R/../shared/models/stories260K/stories260K.bin --text "
                    "$R/README.md --length 64 --kv-cache bf16 2>/dev/null | grep '\"kv_cache\"'"), 0, "%s", out);
    cr_expect_str_eq(out, "  \"kv_cache\": \"bf16\",\n");
    /* training's attention path does change the weights (other sums): LENX_TRAIN_ATTENTION=materialised
    ** trains another model (it reused the tiled one's checkpoint, and its resume state) */
    char a[512], b[512];
    cr_assert_eq(sh(a, sizeof a, "$L run t.yaml --db t.db --dry-run | grep -o 'model=m \\[.*\\]'"), 0, "%s", a);
    cr_assert_eq(sh(b, sizeof b, "LENX_TRAIN_ATTENTION=materialised $L run t.yaml --db t.db --dry-run | "
                    "grep -o 'model=m \\[.*\\]'"), 0, "%s", b);
    cr_expect_str_neq(a, b);
}

/* A file with numerics: bf16 and activations: llamacpp (which do not go together) is refused at activations;
** the command line beats the file, so --numerics fast or portable, or --activations fp32, makes it a sweep
** that runs (the check ran on the file's values before the overrides); the command line's own conflict is
** refused without a file position. */
Test(numerics, the_command_line_undoes_the_files_conflict, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192];
    write_file("b.yaml", "name: b\nnumerics: bf16\nactivations: llamacpp\nmethods: [rope]\ntasks: [ppl]\n"
               "lengths: [32]\nmodels:\n  m:\n    arch: {mode: causal, layers: 1, d_model: 32, heads: 2, d_head: 16, "
               "d_mlp: 64}\n    train: {length: 32, batch: 4, steps: 4, warmup: 1}\n");
    cr_expect_eq(sh(out, sizeof out, "$L run b.yaml --db b.db --dry-run"), 2, "%s", out);
    cr_expect(strstr(out, "b.yaml:3:14: activations: llamacpp does not go with numerics: bf16") != NULL, "%s", out);
    static const char *const undo[] = {"--numerics fast", "--numerics portable", "--portable", "--activations fp32"};
    for (int i = 0; i < 4; i++)
        cr_expect_eq(sh(out, sizeof out, "$L run b.yaml --db b.db --dry-run %s", undo[i]), 0, "%s: %s", undo[i], out);
    write_file("f.yaml", "name: f\nmethods: [rope]\ntasks: [ppl]\nlengths: [32]\nmodels:\n  m:\n    arch: {mode: "
               "causal, layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64}\n    train: {length: 32, batch: 4, "
               "steps: 4, warmup: 1}\n");
    cr_expect_eq(sh(out, sizeof out, "$L run f.yaml --db b.db --dry-run --numerics bf16 --activations llamacpp"), 2,
                 "%s", out);
    cr_expect(strstr(out, "lenx: error: activations: llamacpp does not go with numerics: bf16") != NULL, "%s", out);
}

/* A cache type given on the command line alone (--kv-cache f16) is in the cells' keys and nowhere else:
** `lenx show sweep` did not show it, as it shows --numerics and --activations. Its machine line names it. */
Test(numerics, show_sweep_names_a_command_lines_kv_cache, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192];
    write_gauss("f.yaml", "g", "");
    cr_assert_eq(sh(out, sizeof out, "$L run f.yaml --db k.db --quiet --no-table --kv-cache f16"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L show sweep g --db k.db"), 0, "%s", out);
    cr_expect(strstr(out, ", numerics fast, kv_cache f16: 4 cells\n") != NULL, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L run f.yaml --db f.db --quiet --no-table && $L show sweep g --db f.db"), 0,
                 "%s", out);
    cr_expect(strstr(out, ", numerics fast: 4 cells\n") != NULL && strstr(out, "kv_cache") == NULL, "%s", out);
}
