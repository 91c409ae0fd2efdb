/*
** tests/test_cli.c - the lenx binary end to end, as a researcher drives it:
** exit statuses, nothing written on bad input, resume after kill -9, identical
** numbers across fresh databases and thread counts, compare and show.
** The binary is $LENX_BIN (set by `make test`).
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/cli.h"
#include "harness/engine/kernels/gemm.h"
#include "tests/shell.h"

static void setup(void)
{
    shell_setup("cli");
}

static long sql_count(const char *db, const char *sql)
{
    return sql_long(db, sql);
}

static const char *small =
    "name: small\nseed: 7\nmethods:\n  - none\n  - logn: {mode: ssmax, s: 0.4}\n"
    "  - [scaleinv: {tau: 10}, infoscale]\ntasks:\n  - gaussian: {samples: 200, ranges: [[10, 100]]}\n"
    "lengths: [100, 1000]\n";

Test(cli, bad_config_exits_2_and_writes_nothing, .init = setup, .fini = teardown)
{
    char out[4096];
    write_file("bad.yaml", "name: b\nmethods: [none, lgn]\ntasks: [gaussian]\nlengths: [10]\n");
    cr_expect_eq(sh(out, sizeof out, "$L run bad.yaml --db x.db"), 2, "%s", out);
    cr_expect(strstr(out, "bad.yaml:2:17: unknown method 'lgn'") != NULL, "%s", out);
    cr_expect(strstr(out, "did you mean 'logn'?") != NULL, "%s", out);
    cr_expect(!exists("x.db"), "a bad config must not create the database");
    cr_expect_eq(sh(out, sizeof out, "$L run nosuch.yaml --db x.db"), 3, "%s", out);
    cr_expect(!exists("x.db"));
    cr_expect_eq(sh(out, sizeof out, "$L run bad.yaml --bogus"), 2, "%s", out);
    cr_expect(strstr(out, "unknown option '--bogus'") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L rnu"), 2, "%s", out);
    cr_expect(strstr(out, "did you mean 'run'?") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L help rnu"), 2, "%s", out);   /* it printed the general usage, exit 0 */
    cr_expect(strstr(out, "unknown command 'rnu'\n  hint: did you mean 'run'?") != NULL, "%s", out);
    /* an option given twice with two values: the last one won (table --sweep a --sweep b showed b alone) */
    cr_expect_eq(sh(out, sizeof out, "$L table --db x.db --sweep a --sweep=b"), 2, "%s", out);
    cr_expect(strstr(out, "option '--sweep' is given twice ('a', then 'b')") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L generate --model m.bin --prompt Once --prompt Lily"), 2, "%s", out);
    cr_expect(strstr(out, "option '--prompt' is given twice ('Once', then 'Lily')") != NULL, "%s", out);
    cr_expect(!exists("x.db"));
    /* the same value twice says one thing: fine */
    cr_expect_eq(sh(out, sizeof out, "$L run bad.yaml --db x.db --db x.db"), 2, "%s", out);
    cr_expect(strstr(out, "unknown method 'lgn'") != NULL, "%s", out);
    /* --dry-run checks --save-every as a run does (it said the plan and exit 0) */
    write_file("good.yaml", small);
    cr_expect_eq(sh(out, sizeof out, "$L run good.yaml --db x.db --dry-run --save-every abc"), 2, "%s", out);
    cr_expect(strstr(out, "--save-every abc: give seconds (0: after every step) or off\n  hint: --save-every 600") !=
              NULL, "%s", out);
    cr_expect(!exists("x.db"));
}

Test(cli, bad_config_leaves_existing_store_untouched, .init = setup, .fini = teardown)
{
    char out[8192];
    write_file("small.yaml", small);
    cr_assert_eq(sh(out, sizeof out, "$L run small.yaml --db r.db --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db .dump > before.sql"), 0);
    write_file("bad.yaml", "name: small\nmethods: [none]\ntasks: [gaussian: {samples: -3}]\nlengths: [10]\n");
    cr_expect_eq(sh(out, sizeof out, "$L run bad.yaml --db r.db"), 2, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "sqlite3 r.db .dump | cmp - before.sql"), 0, "%s", out);
}

Test(cli, rerun_runs_nothing_and_adds_no_rows, .init = setup, .fini = teardown)
{
    char out[16384];
    write_file("small.yaml", small);
    cr_assert_eq(sh(out, sizeof out, "$L run small.yaml --db r.db"), 0, "%s", out);
    cr_expect(strstr(out, "6 run (6 ok, 0 failed), 0 already stored") != NULL, "%s", out);
    cr_expect(strstr(out, "| logn(mode=ssmax,s=0.4) |") != NULL, "the run prints its table:\n%s", out);
    long runs = sql_count("r.db", "select count(*) from runs");
    long metrics = sql_count("r.db", "select count(*) from metrics");
    cr_expect_eq(runs, 6);
    cr_assert_eq(sh(out, sizeof out, "$L run small.yaml --db r.db --no-table"), 0, "%s", out);
    cr_expect(strstr(out, "0 run (0 ok, 0 failed), 6 already stored") != NULL, "%s", out);
    cr_expect_eq(sql_count("r.db", "select count(*) from runs"), runs);
    cr_expect_eq(sql_count("r.db", "select count(*) from metrics"), metrics);
    /* Every row carries its provenance. */
    cr_expect_eq(sql_count("r.db", "select count(*) from runs where git_commit = '' or version = ''"
                                   " or threads < 1 or blas not like 'core=%' or wall_s < 0"), 0);
    cr_expect_eq(sh(out, sizeof out, "$L run small.yaml --db r.db --force --no-table"), 0, "%s", out);
    cr_expect(strstr(out, "6 run (6 ok, 0 failed)") != NULL, "%s", out);
    cr_expect_eq(sql_count("r.db", "select count(*) from runs"), runs, "same commit: replaced");
}

Test(cli, identical_numbers_across_databases_and_threads, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192];
    write_file("small.yaml", small);
    cr_assert_eq(sh(out, sizeof out, "OMP_NUM_THREADS=1 $L run small.yaml --db a.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "OMP_NUM_THREADS=2 $L run small.yaml --db b.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L run small.yaml --db c.db --threads 2 --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L table --db a.db --format csv > a.csv && $L table --db b.db --format csv > b.csv"
                    " && $L table --db c.db --format csv > c.csv"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "cmp a.csv b.csv && cmp a.csv c.csv"), 0, "bit-identical exports: %s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare a.csv b.csv --rtol 1e-9 --atol 0"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "head -1 a.csv"), 0);
    cr_expect_str_eq(out, "sweep,method,task,length,seed,metric,value,model_key,key\n");
}

Test(cli, compare_exit_codes, .init = setup, .fini = teardown)
{
    char out[8192];
    write_file("small.yaml", small);
    cr_assert_eq(sh(out, sizeof out, "$L run small.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --format csv > base.csv"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare base.csv small --db r.db"), 0, "%s", out);
    cr_expect(strstr(out, "0 moved") != NULL, "%s", out);
    /* Move one number: the entropy of none at length 100. */
    cr_assert_eq(sh(out, sizeof out, "awk -F, 'BEGIN{OFS=\",\"} /^small,none,\"[^\"]*\",100,7,entropy,/ {$(NF-2)=$(NF-2)+0.01} {print}'"
                    " base.csv > moved.csv"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare moved.csv small --db r.db"), 1, "%s", out);
    cr_expect(strstr(out, "| gaussian(samples=200,ranges=[[10,100]]) | none | 100 | 7 | entropy |") != NULL, "%s", out);
    cr_expect(strstr(out, "1 moved") != NULL, "%s", out);
    /* Within tolerance it is not a move. */
    cr_expect_eq(sh(out, sizeof out, "$L compare moved.csv small --db r.db --atol 0.02"), 0, "%s", out);
    /* Nothing in common, or an unknown side: bad input. */
    write_file("other.csv", "sweep,method,task,length,seed,metric,value\nx,none,gaussian,5,1,entropy,1\n");
    cr_expect_eq(sh(out, sizeof out, "$L compare other.csv small --db r.db"), 2, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare nosuchsweep small --db r.db"), 2, "%s", out);
    cr_expect(strstr(out, "'nosuchsweep' is not a file, a sweep") != NULL, "%s", out);
    /* --sweep narrows a commit side: with none it would be ignored, a name stored nowhere too */
    cr_expect_eq(sh(out, sizeof out, "$L compare base.csv small --db r.db --sweep nosuch"), 2, "%s", out);
    cr_expect(strstr(out, "--sweep nosuch narrows a commit") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare base.csv base.csv --sweep small"), 2, "%s", out);
    cr_expect(strstr(out, "--sweep small narrows a commit") != NULL, "%s", out);
    /* a CSV side that does not exist is named as such, not only the store it was then looked up in */
    cr_expect_eq(sh(out, sizeof out, "$L compare missing.csv base.csv --db none.db"), 3, "%s", out);
    cr_expect(strstr(out, "'missing.csv' is not a file") != NULL, "%s", out);
}

Test(cli, killed_sweep_resumes_with_every_cell_once, .init = setup, .fini = teardown, .timeout = 120)
{
    char out[8192];
    /* 16 cells of ~0.05-0.2 s each. */
    write_file("slow.yaml", "name: slow\nmethods: [none, logn, scaleinv, infoscale]\n"
                            "tasks: [{gaussian: {samples: 400}}]\nlengths: [5000, 10000, 15000, 20000]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run slow.yaml --db k.db --quiet --no-table --threads 1 &"
                    " pid=$!; i=0; while [ $i -lt 600 ]; do"
                    "   n=$(sqlite3 k.db 'select count(*) from runs' 2>/dev/null || echo 0);"
                    "   [ \"${n:-0}\" -ge 3 ] && break; sleep 0.02; i=$((i+1)); done;"
                    " kill -9 $pid; wait $pid; echo killed"), 0, "%s", out);
    long before = sql_count("k.db", "select count(*) from runs");
    cr_expect(before >= 3 && before < 16, "killed mid-run with %ld of 16 cells stored", before);
    cr_assert_eq(sh(out, sizeof out, "$L run slow.yaml --db k.db --no-table"), 0, "%s", out);
    char want[128];
    snprintf(want, sizeof want, "%ld run (%ld ok, 0 failed), %ld already stored", 16 - before, 16 - before, before);
    cr_expect(strstr(out, want) != NULL, "want '%s' in: %s", want, out);
    cr_expect_eq(sql_count("k.db", "select count(*) from runs"), 16);
    cr_expect_eq(sql_count("k.db", "select count(distinct key) from runs"), 16);
    cr_expect_eq(sql_count("k.db", "select count(*) from runs where status = 'ok'"), 16);
    cr_expect_eq(sql_count("k.db", "select count(*) from (select run_id from metrics group by run_id)"), 16);
}

/* The extrapolation methods' derived tables, checked against values worked by
** hand (docs/methods.md#streaming, docs/methods.md#alibi, docs/methods.md#pi,
** docs/methods.md#yarn). */
Test(cli, show_derived_tables, .init = setup, .fini = teardown)
{
    char out[16384];
    /* StreamingLLM S = 2, R = 3: query 11 keeps sinks 0, 1 at slots 0, 1 and
    ** keys 8..11; its own slot is S + R = 5, so the sinks sit at 5 and 4 */
    cr_expect_eq(sh(out, sizeof out, "$L show method streaming sinks=2 recent=3 --length 12"), 0, "%s", out);
    cr_expect(strstr(out, "\"stack\": \"rope+streaming(sinks=2,recent=3)\"") != NULL, "%s", out);
    cr_expect(strstr(out, "\"visible_keys\": [0, 1, 8, 9, 10, 11]") != NULL, "%s", out);
    cr_expect(strstr(out, "\"distance\": [5, 4, 3, 2, 1, 0]") != NULL, "%s", out);
    /* ALiBi, 3 heads: 2^-4, 2^-8, then 2^-2 (the non-power-of-two rule) */
    cr_expect_eq(sh(out, sizeof out, "$L show method alibi --heads 3 --length 3"), 0, "%s", out);
    cr_expect(strstr(out, "\"m[0]\": [0, -0.0625, -0.125]") && strstr(out, "\"m[1]\": [0, -0.00390625, -0.0078125]") &&
              strstr(out, "\"m[2]\": [0, -0.25, -0.5]"), "%s", out);
    /* PI s = 4 at d = 4: θ = (1, 0.01) / 4 */
    cr_expect_eq(sh(out, sizeof out, "$L show method pi scale=4 --d-head 4 --length 2"), 0, "%s", out);
    cr_expect(strstr(out, "\"inv_freq\": [0.25, 0.0025]") != NULL, "%s", out);
    /* PI on ALiBi (--on alibi), 2 heads, max_bias 4, s = 2: slopes 2^-2 and 2^-4 halved, by hand */
    cr_expect_eq(sh(out, sizeof out, "$L show method pi scale=2 alibi.max_bias=4 --on alibi --heads 2 --length 3"), 0,
                 "%s", out);
    cr_expect(strstr(out, "\"stack\": \"alibi(max_bias=4)+pi(scale=2)\"") &&
              strstr(out, "\"m[0]\": [0, -0.125, -0.25]") && strstr(out, "\"m[1]\": [0, -0.03125, -0.0625]"), "%s",
              out);
    /* two distance maps in one stack name theirs by method (both were "a" and "m", JSON keys twice):
    ** ALiBi's one head 2^-8 by hand, scale-invariant's a(0) = 1, m(0) = 0 */
    cr_expect_eq(sh(out, sizeof out, "$L show method scaleinv --on alibi --length 3"), 0, "%s", out);
    cr_expect(strstr(out, "\"alibi.a\": [1, 1, 1]") && strstr(out, "\"alibi.m\": [0, -0.00390625, -0.0078125]") &&
              strstr(out, "\"scaleinv.a\": [1, ") && strstr(out, "\"scaleinv.m\": [0, ") && !strstr(out, "\"a\":"),
              "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show method pi --on rerank"), 2, "%s", out);
    cr_expect(strstr(out, "--on rerank: no such method"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show method pi --on pi"), 2, "%s", out);
    cr_expect(strstr(out, "the method shown itself"), "%s", out);
    /* rope itself, no --on: shown alone (it was refused as '--on (null)'); θ_k = 10000^(-2k/4) at d = 4 */
    cr_expect_eq(sh(out, sizeof out, "$L show method rope --d-head 4 --length 2"), 0, "%s", out);
    cr_expect(strstr(out, "\"canonical\": \"rope\"") && strstr(out, "\"inv_freq\": [1, 0.01]"), "%s", out);
    /* YaRN s = 4: the logit multiplier (0.1 ln 4 + 1)^2 on every row */
    cr_expect_eq(sh(out, sizeof out, "$L show method yarn scale=4 --length 2"), 0, "%s", out);
    cr_expect(strstr(out, "\"row_scale\": [1.2964769927807063, 1.2964769927807063]") != NULL, "%s", out);
    /* a zero sink at z = 0 takes 1 / (1 + n) of a row of n equal logits: 1/2, 1/3 */
    cr_expect_eq(sh(out, sizeof out, "$L show method zerosink --length 2"), 0, "%s", out);
    cr_expect(strstr(out, "\"zero_sink_share_of_flat_row\": [0.5, 0.3333333333333333]") != NULL, "%s", out);
    /* CosScale and t5align say what they do */
    cr_expect_eq(sh(out, sizeof out, "$L show method cosscale s=16"), 0, "%s", out);
    cr_expect(strstr(out, "\"cosine_scale\": 16") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show method t5align"), 0, "%s", out);
    cr_expect(strstr(out, "calibrated per (model, length) by t5align") != NULL, "%s", out);
    /* a method's own error survives the retry on rope */
    cr_expect_eq(sh(out, sizeof out, "$L show method yarn beta_fast=1 beta_slow=2"), 2, "%s", out);
    cr_expect(strstr(out, "beta_fast") != NULL, "%s", out);
}

Test(cli, show_and_list, .init = setup, .fini = teardown)
{
    char out[8192];
    cr_expect_eq(sh(out, sizeof out, "$L show method scaleinv tau=10 --length 3"), 0, "%s", out);
    cr_expect(strstr(out, "\"params\": {\"tau\":10,\"alpha\":1.6487212707001282,\"beta\":1.6487212707001282}") != NULL, "%s", out);
    cr_expect(strstr(out, "\"a\": [1, 1.0911555157761197, 1.1681794012855686]") != NULL, "%s", out);
    cr_expect(strstr(out, "\"m\": [0, -0.19062035960864976, -0.36464311358790935]") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show method infoscale --length 4 --d-head 2 --train-len 4"), 0, "%s", out);
    /* by hand: kappa(n) = sqrt((1 - 1/n) / (3/4)) for d = 2, L = 4 */
    cr_expect(strstr(out, "\"row_scale\": [0, 0.816496580927726, 0.9428090415820634, 1]") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show method logn mode=qwen --length 4 --train-len 2"), 0, "%s", out);
    cr_expect(strstr(out, "\"row_scale\": [1, 1, 1.5849625007211563, 2]") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show method scaleinv tau=abc"), 2, "%s", out);
    cr_expect(strstr(out, "'tau' must be a number, got 'abc'") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show method scaleinv tua=1"), 2, "%s", out);
    cr_expect(strstr(out, "did you mean 'tau'?") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L list methods"), 0, "%s", out);
    cr_expect(strstr(out, "infoscale") && strstr(out, "logn") && strstr(out, "none") && strstr(out, "scaleinv"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L list tasks"), 0, "%s", out);
    cr_expect(strstr(out, "gaussian") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L --version"), 0, "%s", out);
    cr_expect(strncmp(out, "lenx 0.", 7) == 0, "%s", out);
    cr_expect(strstr(out, "\nnumerics bf16: products ") && strstr(out, "; attention tiles ") &&
                  strstr(out, lx_gemm_amx_status()),
              "the kernels bf16 runs on, and AMX's status (%s): %s", lx_gemm_amx_status(), out);
    const char *cmds[] = {"run", "table", "compare", "show", "list", "rm"};
    for (int i = 0; i < 6; i++) {
        cr_expect_eq(sh(out, sizeof out, "$L %s --help", cmds[i]), 0, "%s", out);
        cr_expect(strstr(out, "usage: lenx") != NULL, "%s --help: %s", cmds[i], out);
    }
    cr_expect_eq(sh(out, sizeof out, "$L table --db nosuch.db"), 3, "%s", out);
    cr_expect(!exists("nosuch.db"));
}

Test(cli, gaussian_sweep_matches_committed_baseline, .init = setup, .fini = teardown, .timeout = 120)
{
    /* results/baselines/gaussian.csv was made by `make baseline` in portable
    ** numerics; a change that moves any bit of the sweep fails here until the
    ** baseline is regenerated. */
    char out[16384];
    const char *root = getenv("LENX_ROOT");
    cr_assert_not_null(root, "LENX_ROOT must name the checkout (make test sets it)");
    cr_assert_eq(sh(out, sizeof out, "$L run '%s/configs/gaussian.yaml' --db q.db --quiet --no-table --portable", root), 0,
                 "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare '%s/results/baselines/gaussian.csv' gaussian --db q.db --rtol 0 --atol 0",
                    root), 0, "%s", out);
    cr_expect(strstr(out, " 0 moved") != NULL, "%s", out);
}

/* ---- stale cells, lenx rm, read-only stores, empty selections ---- */

/* A tiny causal model (trains in well under a second), and the same sweep
** after its training steps changed: a second model key under the same name. */
static const char *stale_v1 =
    "name: stale\nseed: 1\nmodels:\n  t:\n"
    "    arch: {mode: causal, layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64}\n"
    "    train: {length: 32, batch: 4, steps: 20, warmup: 5, eval_every: 10, eval_windows: 4}\n"
    "methods: [rope]\ntasks:\n  - ppl: {windows: 2}\nlengths: [32, 64]\n";

static void run_stale_scenario(char *out, size_t n)
{
    write_file("v1.yaml", stale_v1);
    char v2[1024];
    snprintf(v2, sizeof v2, "%s", stale_v1);
    char *p = strstr(v2, "steps: 20");
    cr_assert_not_null(p);
    p[7] = '3';     /* steps: 30 */
    write_file("v2.yaml", v2);
    cr_assert_eq(sh(out, n, "$L run v1.yaml --db r.db --quiet --no-table --threads 1"), 0, "%s", out);
    cr_assert_eq(sh(out, n, "$L run v2.yaml --db r.db --quiet --no-table --threads 1"), 0, "%s", out);
    cr_expect(strstr(out, "note: sweep 'stale' also holds 2 cells that v2.yaml no longer plans") != NULL, "%s", out);
    /* the store itself: 2 lengths x 2 model versions, one seed */
    cr_assert_eq(sql_count("r.db", "select count(distinct model_key) from runs"), 2);
    cr_assert_eq(sql_count("r.db", "select count(*) from runs where status = 'ok'"), 4);
}

Test(cli, stale_model_versions_are_shown_apart, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[32768], mk1[64], mk2[64];
    run_stale_scenario(out, sizeof out);
    sql_text(mk1, sizeof mk1, "r.db", "select substr(model_key, 1, 8) from runs order by id limit 1");
    sql_text(mk2, sizeof mk2, "r.db", "select substr(model_key, 1, 8) from runs order by id desc limit 1");
    /* md: one seed per model version, never pooled as if two seeds */
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --metric ppl"), 0, "%s", out);
    cr_expect(strstr(out, "n=2") == NULL, "two model versions pooled as seeds:\n%s", out);
    char want[128];
    snprintf(want, sizeof want, "| rope @t [%s] |", mk1);
    cr_expect(strstr(out, want) != NULL, "want '%s' in:\n%s", want, out);
    snprintf(want, sizeof want, "| rope @t [%s] |", mk2);
    cr_expect(strstr(out, want) != NULL, "want '%s' in:\n%s", want, out);
    /* csv: a model_key column, and rows unique per (sweep, method, task,
    ** length, seed, metric, model_key); one row per stored metric */
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --format csv > all.csv && head -1 all.csv"), 0, "%s", out);
    cr_expect_str_eq(out, "sweep,method,task,length,seed,metric,value,model_key,key\n");
    cr_expect_eq(sh(out, sizeof out, "tail -n +2 all.csv | cut -d, -f1-6,8 | sort | uniq -d | wc -l"), 0);
    cr_expect_eq(atol(out), 0, "duplicate cells in the csv: %s", out);
    cr_expect_eq(sh(out, sizeof out, "tail -n +2 all.csv | wc -l"), 0);
    cr_expect_eq(atol(out), sql_count("r.db", "select count(*) from metrics"));
    /* compare says what it compares: values and cells (4 runs) */
    long n_values = sql_count("r.db", "select count(*) from metrics");
    cr_expect_eq(sh(out, sizeof out, "$L compare stale all.csv --db r.db"), 0, "%s", out);
    snprintf(want, sizeof want, "%ld values in 4 cells compared, 0 moved", n_values);
    cr_expect(strstr(out, want) != NULL, "want '%s' in: %s", want, out);
    /* an old-format csv (no model_key) cannot tell the versions apart: refused, naming both */
    cr_assert_eq(sh(out, sizeof out, "cut -d, -f1-7 all.csv > old.csv"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare old.csv stale --db r.db"), 2, "%s", out);
    cr_expect(strstr(out, "two configurations") != NULL, "%s", out);
    /* provenance: the sweep list says the config changed ... */
    cr_expect_eq(sh(out, sizeof out, "$L list sweeps --db r.db"), 0, "%s", out);
    cr_expect(strstr(out, "from 2 YAML texts (lenx show sweep stale)") != NULL, "%s", out);
    /* ... and the two YAML texts the cells came from, newest first */
    cr_expect_eq(sh(out, sizeof out, "$L show sweep stale --db r.db"), 0, "%s", out);
    const char *v2 = strstr(out, "# sweep stale: 2 cells from v2.yaml"), *v1 = strstr(out, "2 cells from v1.yaml");
    cr_expect(v2 && v1 && v2 < v1, "%s", out);
    cr_expect(v2 && strstr(v2, "steps: 30") && strstr(v2, "steps: 30") < v1, "%s", out);
    cr_expect(v1 && strstr(v1, "steps: 20"), "%s", out);
}

/* Seeds train a model each (the seed is in the model key), yet they are one
** configuration: pooled as seeds, untagged. */
Test(cli, seeds_of_one_configuration_still_pool, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[16384], cfg[1024];
    snprintf(cfg, sizeof cfg, "name: stale\nseeds: [1, 2]\n%s", strstr(stale_v1, "models:"));
    write_file("s.yaml", cfg);
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db r.db --quiet --no-table --threads 1"), 0, "%s", out);
    cr_assert_eq(sql_count("r.db", "select count(distinct model_key) from runs"), 2);
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --metric ppl"), 0, "%s", out);
    cr_expect(strstr(out, "| rope @t | ") != NULL && strstr(out, "(n=2) | ") != NULL, "%s", out);
    cr_expect(strstr(out, "@t [") == NULL && strstr(out, "[config") == NULL, "seeds tagged as configurations:\n%s", out);
}

Test(cli, rm_not_in_config_removes_stale_cells, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[32768], mk2[64];
    run_stale_scenario(out, sizeof out);
    sql_text(mk2, sizeof mk2, "r.db", "select model_key from runs order by id desc limit 1");
    long metrics = sql_count("r.db", "select count(*) from metrics");
    long metrics_v1 = sql_count("r.db", "select count(*) from metrics m join runs r on r.id = m.run_id"
                                        " where r.model_key <> (select model_key from runs order by id desc limit 1)");
    cr_assert(metrics_v1 > 0);
    /* no filter: refused; without --yes: a listing, nothing deleted */
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --yes"), 2, "%s", out);
    cr_expect(strstr(out, "filter") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --not-in v2.yaml"), 0, "%s", out);
    cr_expect(strstr(out, "stale: 2 cells") != NULL, "%s", out);
    cr_expect(strstr(out, "--yes") != NULL, "%s", out);
    cr_expect_eq(sql_count("r.db", "select count(*) from runs"), 4);
    /* with --yes: the two cells of the old model go, with their metrics and series */
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --not-in v2.yaml --yes"), 0, "%s", out);
    cr_expect(strstr(out, "deleted 2 cells") != NULL, "%s", out);
    cr_expect_eq(sql_count("r.db", "select count(*) from runs"), 2);
    char q[256];
    snprintf(q, sizeof q, "select count(*) from runs where model_key <> '%s'", mk2);
    cr_expect_eq(sql_count("r.db", q), 0);
    cr_expect_eq(sql_count("r.db", "select count(*) from metrics"), metrics - metrics_v1);
    cr_expect_eq(sql_count("r.db", "select count(*) from metrics where run_id not in (select id from runs)"), 0);
    cr_expect_eq(sql_count("r.db", "select count(*) from series where run_id not in (select id from runs)"), 0);
    char ok[64];
    sql_text(ok, sizeof ok, "r.db", "pragma integrity_check");
    cr_expect_str_eq(ok, "ok");
    /* the table is one version again, without a tag */
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --metric ppl"), 0, "%s", out);
    cr_expect(strstr(out, "| rope @t |") != NULL, "%s", out);
    /* nothing left to remove: the rerun of v2 stores nothing new */
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --not-in v2.yaml --yes"), 0, "%s", out);
    cr_expect(strstr(out, "no stored cell matches") != NULL, "%s", out);
}

/* rm --yes deletes exactly the cells it lists, in one transaction: a cell
** stored while the listing is being printed (here: 3,000 cells' listing
** fills the pipe, whose reader stores one more cell before draining it) is
** neither deleted nor counted. Listing, then deleting apart, deleted it. */
Test(cli, rm_yes_deletes_what_it_lists, .init = setup, .fini = teardown, .timeout = 120)
{
    static char out[1 << 16];
    write_file("small.yaml", small);
    cr_assert_eq(sh(out, sizeof out, "$L run small.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "c=$(sqlite3 r.db \"select group_concat(name, ',') from pragma_table_info('runs') "
                    "where name not in ('id', 'key')\") && echo \"$c\" > cols && sqlite3 r.db \"insert into runs "
                    "($c, key) select $c, key || '-' || n from runs, (with recursive s(n) as (select 1 union all "
                    "select n + 1 from s where n < 499) select n from s); "
                    "create table spare as select * from runs limit 1\""), 0, "%s", out);
    long before = sql_count("r.db", "select count(*) from runs");
    cr_assert_eq(before, 3000);
    cr_assert_eq(sh(out, sizeof out, "$L rm --db r.db --sweep small --yes | { sleep 2; c=$(cat cols); "
                    "sqlite3 r.db \"insert into runs ($c, key) select $c, 'late' from spare\" 2>&1; cat; } "
                    "> o.txt; grep -c '^  small  ' o.txt; grep -o 'deleted [0-9]* cells' o.txt"), 0, "%s", out);
    long listed = -1, deleted = -2;
    cr_assert_eq(sscanf(out, "%ld\ndeleted %ld cells", &listed, &deleted), 2, "%s", out);
    cr_expect_eq(listed, deleted, "listed %ld cells, deleted %ld", listed, deleted);
    cr_expect_eq(listed + sql_count("r.db", "select count(*) from runs"), before + 1);
}

Test(cli, rm_filters, .init = setup, .fini = teardown)
{
    char out[16384];
    write_file("small.yaml", small);
    cr_assert_eq(sh(out, sizeof out, "$L run small.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "sed 's/name: small/name: other/' small.yaml > other.yaml &&"
                    " $L run other.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sql_count("r.db", "select count(*) from runs"), 12);
    /* method (canonical stack) and sweep: exactly the cells of that method in that sweep */
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --sweep other --method 'logn(mode=ssmax,s=0.4)' --yes"), 0, "%s", out);
    cr_expect(strstr(out, "deleted 2 cells") != NULL, "%s", out);
    cr_expect_eq(sql_count("r.db", "select count(*) from runs where sweep = 'other' and method like 'logn%'"), 0);
    cr_expect_eq(sql_count("r.db", "select count(*) from runs"), 10);
    /* task by name, commit by prefix */
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --task gaussian --sweep other --commit %s --yes", "0000"), 0, "%s", out);
    cr_expect(strstr(out, "no stored cell matches") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --task gaussian --sweep other --yes"), 0, "%s", out);
    cr_expect(strstr(out, "deleted 4 cells") != NULL, "%s", out);
    cr_expect_eq(sql_count("r.db", "select count(*) from runs"), 6);
    cr_expect_eq(sql_count("r.db", "select count(*) from metrics where run_id not in (select id from runs)"), 0);
    /* --failed touches only failed rows: none here */
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --failed --yes"), 0, "%s", out);
    cr_expect_eq(sql_count("r.db", "select count(*) from runs"), 6);
    /* a sweep that does not exist is bad input */
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --sweep smal --yes"), 2, "%s", out);
    cr_expect(strstr(out, "did you mean 'small'") != NULL, "%s", out);
    /* an empty filter would match everything: refused */
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --commit '' --yes"), 2, "%s", out);
    cr_expect(strstr(out, "rm --commit is empty") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --model '' --yes"), 2, "%s", out);
    cr_expect_eq(sql_count("r.db", "select count(*) from runs"), 6);
    /* a model name is a name: it matches another model's key prefix only when no cell's model has that name */
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"update runs set model = 'tiny', model_key = 'fa3b000000000000' "
                    "where id in (select id from runs order by id limit 4); update runs set model = 'fa', model_key = "
                    "'0123000000000000' where model is null\""), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --model fa"), 0, "%s", out);
    cr_expect(strstr(out, "2 cells would be deleted") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --model fa3b"), 0, "%s", out);
    cr_expect(strstr(out, "4 cells would be deleted") != NULL, "%s", out);
    /* a mistyped --db: no such database, even with --yes, and no file made */
    cr_expect_eq(sh(out, sizeof out, "$L rm --db typo.db --failed --yes"), 3, "%s", out);
    cr_expect(strstr(out, "typo.db: no such database") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "test -e typo.db"), 1, "rm --yes made typo.db");
}

Test(cli, table_of_nothing_is_an_error, .init = setup, .fini = teardown)
{
    char out[16384];
    write_file("small.yaml", small);
    cr_assert_eq(sh(out, sizeof out, "$L run small.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --metric nosuch"), 2, "%s", out);
    cr_expect(strstr(out, "no metric 'nosuch'") != NULL && strstr(out, "entropy") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --metric ''"), 2, "%s", out);    /* printed nothing, 0 */
    cr_expect(strstr(out, "no metric ''") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --metric entropi"), 2, "%s", out);
    cr_expect(strstr(out, "did you mean 'entropy'") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --metric entropy,nosuch"), 2, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --sweep nosuch"), 2, "%s", out);
    cr_expect(strstr(out, "no sweep 'nosuch'") != NULL && strstr(out, "small") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --sweep smal"), 2, "%s", out);
    cr_expect(strstr(out, "did you mean 'small'") != NULL, "%s", out);
    /* a commit naming nothing lists the stored ones (docs/results.md#tables), as read with sqlite3 */
    char commit[64];
    cr_assert_eq(sh(commit, sizeof commit, "sqlite3 r.db 'select distinct substr(git_commit, 1, 12) from runs'"), 0);
    commit[strcspn(commit, "\n")] = '\0';
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --commit 00000000"), 2, "%s", out);
    cr_expect(strstr(out, "stored commits") != NULL && strstr(out, commit) != NULL, "%s lists %s", out, commit);
    /* range_mass still selects range_mass:10-100 */
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --metric range_mass"), 0, "%s", out);
    cr_expect(strstr(out, "range_mass:10-100") != NULL, "%s", out);
    /* a compare side that names nothing */
    cr_expect_eq(sh(out, sizeof out, "$L compare smal small --db r.db"), 2, "%s", out);
    cr_expect(strstr(out, "did you mean 'small'") != NULL, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --format csv | head -1 > empty.csv"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare empty.csv small --db r.db"), 2, "%s", out);
    cr_expect(strstr(out, "empty.csv") != NULL && strstr(out, "no values") != NULL, "%s", out);
}

/* Views on a database nobody may write: a copy owned by root, file 444 in a
** 555 folder, read by the unprivileged user `nobody` (root ignores
** permissions). The -wal and -shm files are absent, so SQLite cannot create
** its shared-memory file. Nothing may be written: bytes and mtime unchanged. */
Test(cli, views_read_a_readonly_database, .init = setup, .fini = teardown)
{
    char out[16384];
    if (geteuid() != 0 || sh(out, sizeof out, "command -v setpriv") != 0)
        cr_skip_test("needs root and setpriv to read as another user");
    write_file("small.yaml", small);
    cr_assert_eq(sh(out, sizeof out, "$L run small.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db > want.md && $L table --db r.db --format csv > want.csv"),
                 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "mkdir ro && cp r.db ro/r.db && cp r.db pristine.db && touch -d '2020-01-01' ro/r.db"
                    " && chmod 444 ro/r.db && chmod 555 ro && chmod 755 \"$D\" && test ! -e ro/r.db-wal"), 0, "%s", out);
    const char *as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups";
    cr_expect_eq(sh(out, sizeof out, "%s $L table --db ro/r.db > got.md && cmp got.md want.md", as_nobody), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s $L table --db ro/r.db --format csv > got.csv && cmp got.csv want.csv", as_nobody),
                 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s $L compare want.csv small --db ro/r.db", as_nobody), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s $L list sweeps --db ro/r.db", as_nobody), 0, "%s", out);
    cr_expect(strstr(out, "small") != NULL, "%s", out);
    /* rm cannot write there: a store error, nothing changed */
    cr_expect_eq(sh(out, sizeof out, "%s $L rm --db ro/r.db --sweep small --yes", as_nobody), 3, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "cmp ro/r.db pristine.db && test ! -e ro/r.db-wal && test ! -e ro/r.db-shm"
                    " && [ \"$(stat -c %%Y ro/r.db)\" = \"$(date -d 2020-01-01 +%%s)\" ]"), 0, "%s", out);
    sh(out, sizeof out, "chmod 755 ro");
}

/* The caveat of the immutable fallback, shown rather than hidden: a change
** still in the -wal file (a writer that has not checkpointed) is not seen by
** a reader who may not create the -shm file, and lenx says so. The sqlite3
** CLI copies the files while its connection holds the change in the WAL. */
Test(cli, immutable_read_warns_about_a_wal_file, .init = setup, .fini = teardown)
{
    char out[16384];
    if (geteuid() != 0 || sh(out, sizeof out, "command -v setpriv") != 0)
        cr_skip_test("needs root and setpriv to read as another user");
    write_file("small.yaml", small);
    cr_assert_eq(sh(out, sizeof out, "$L run small.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "printf \"pragma wal_autocheckpoint=0;\\nupdate runs set sweep = 'moved';\\n"
                    ".shell mkdir ro && cp r.db r.db-wal ro/\\n\" | sqlite3 r.db && test -s ro/r.db-wal"
                    " && chmod 444 ro/* && chmod 555 ro && chmod 755 \"$D\""), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "setpriv --reuid=65534 --regid=65534 --clear-groups $L list sweeps --db ro/r.db"),
                 0, "%s", out);
    cr_expect(strstr(out, "small ") != NULL && strstr(out, "moved") == NULL, "%s", out);
    cr_expect(strstr(out, "warning: ro/r.db: read as an immutable file") != NULL, "%s", out);
    cr_expect(strstr(out, "not yet checkpointed are not shown") != NULL, "%s", out);
    /* a merge of it would leave the WAL's rows out: refused, nothing merged */
    cr_assert_eq(sh(out, sizeof out, "mkdir w && chmod 777 w"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "setpriv --reuid=65534 --regid=65534 --clear-groups $L merge ro/r.db --into w/m.db"),
                 3, "%s", out);
    cr_expect(strstr(out, "cannot merge all of ro/r.db: read as an immutable file") != NULL, "%s", out);
    sh(out, sizeof out, "chmod 755 ro");
}

/* ---- hostile input: each is refused with exit 2 or 3 and a message, never a
** signal; the run is bounded (timeout, 4 GB of memory) so that a regression fails
** the test instead of the machine, and nothing is written ---- */

/* Run `lenx run <file> --db x.db` bounded; expect `code` and `what` in the output. */
static void expect_refused(const char *file, int code, const char *what)
{
    char out[8192];
    /* 4 GB: of address space, or (an ASan build reserves terabytes of shadow) of RSS */
    int rc = sh(out, sizeof out, "if grep -q __asan_init \"$L\"; then export ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}"
                "hard_rss_limit_mb=4000\"; else ulimit -v 4000000; fi; timeout 30 $L run %s --db x.db --no-table", file);
    cr_expect_eq(rc, code, "%s: exit %d (124: timed out, >128: a signal), output:\n%s", file, rc, out);
    cr_expect(strstr(out, what) != NULL, "%s: expected '%s' in:\n%s", file, what, out);
    cr_expect(!exists("x.db"), "%s: a refused sweep must not create the database", file);
}

Test(cli, hostile_yaml_exits_2, .init = setup, .fini = teardown, .timeout = 120)
{
    /* "billion laughs": 9 lines, each 9 aliases of the line before: 9^9 scalars */
    char bomb[1024] = "a: &a [x,x,x,x,x,x,x,x,x]\n";
    for (int i = 1; i < 9; i++) {
        size_t k = strlen(bomb);
        snprintf(bomb + k, sizeof bomb - k, "%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n", 'a' + i, 'a' + i,
                 'a' + i - 1, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1,
                 'a' + i - 1, 'a' + i - 1);
    }
    write_file("bomb.yaml", bomb);
    expect_refused("bomb.yaml", 2, "bomb.yaml:5:4: aliases of the anchor 'e' expand the document past 100000 nodes");
    write_file("key.yaml", "name: k\nmethods: [none]\ntasks: [ppl]\nlengths: [64]\nmodels: {[m]: {arch: {}}}\n");
    expect_refused("key.yaml", 2, "key.yaml:5:10: a mapping key must be a plain word or a string, got a list");
    write_file("two.yaml", "name: t\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n---\nmethods: [bogus]\n");
    expect_refused("two.yaml", 2, "two.yaml:5:1: a second YAML document");
    write_file("huge.yaml", "name: h\nmethods: [none]\ntasks: [gaussian]\nlengths: [1e300]\n");
    expect_refused("huge.yaml", 2, "huge.yaml:4:11: 'lengths' value 1e300 is out of bounds [1, 1e12]");
    write_file("far.yaml", "name: f\nmethods: [rope]\ntasks: [passkey]\nlengths: [1000000000000]\n"
               "models: {m: {arch: {}, train: {length: 64}}}\n");
    expect_refused("far.yaml", 2, "far.yaml:4:11: passkey: length 1000000000000 is more than the 1048576 tokens");
    write_file("fat.yaml", "name: f\nmethods: [rope]\ntasks: [ppl]\nlengths: [64]\nmodels: {big: {arch: "
               "{layers: 64, d_model: 8192, d_mlp: 65536, vocab: 1000000}}}\n");
    expect_refused("fat.yaml", 2, "fat.yaml:5:10: model 'big' needs");
    /* passkey reads its answer rows' statistics from the tiles, O(T·d): a wide model at 2^20 tokens */
    write_file("long.yaml", "name: l\nmethods: [rope]\ntasks: [passkey]\nlengths: [1048576]\n"
               "models: {m: {arch: {d_model: 2048, d_mlp: 16384}, train: {length: 64}}}\n");
    expect_refused("long.yaml", 2, "long.yaml:4:11: model 'm' needs");
    /* 4 tasks x 256 stacks x 1024 lengths x 4096 seeds = 2^32 cells */
    char out[1024];
    cr_assert_eq(sh(out, sizeof out, "{ echo 'name: big';"
                    " echo \"methods: [$(seq -s, 1 256 | sed 's/[0-9][0-9]*/{window: {size: &}}/g')]\";"
                    " echo \"tasks: [$(seq -s, 100 103 | sed 's/[0-9][0-9]*/{gaussian: {samples: &}}/g')]\";"
                    " echo \"lengths: [$(seq -s, 10 1033)]\"; echo \"seeds: [$(seq -s, 0 4095)]\"; } > big.yaml"),
                 0, "%s", out);
    expect_refused("big.yaml", 2, "big.yaml: the sweep has 4294967296 cells (4 tasks x 256 method stacks x "
                   "1 models x 1024 lengths x 4096 seeds); at most 1000000 are allowed");
}

/* `lenx score --text` reads a pipe to its end (ftell said -1 and a 1-byte buffer
** was overrun) and refuses a directory (an assertion). */
Test(cli, score_text_from_a_pipe_or_a_directory, .init = setup, .fini = teardown, .timeout = 60)
{
    static char file[65536], pipe[65536], out[4096];
    cr_assert_eq(sh(out, sizeof out, "head -c 100 \"$R/data/corpus/austen/test/persuasion.txt\" > t.txt"), 0);
    const char *model = "--model \"$R/tests/ref/model_ckpt_causal_rope.safetensors\"";
    cr_assert_eq(sh(file, sizeof file, "$L score %s --text t.txt", model), 0, "%s", file);
    cr_expect(strstr(file, "\"n_tokens\": 100") != NULL, "%s", file);
    cr_expect_eq(sh(pipe, sizeof pipe, "cat t.txt | $L score %s --text /dev/stdin", model), 0, "%s", pipe);
    cr_expect_str_eq(pipe, file);
    cr_expect_eq(sh(pipe, sizeof pipe, "mkfifo f && { cat t.txt > f & } && $L score %s --text f", model), 0, "%s", pipe);
    cr_expect_str_eq(pipe, file);
    cr_expect_eq(sh(out, sizeof out, "mkdir d && $L score %s --text d", model), 3, "%s", out);
    cr_expect(strstr(out, "cannot read d: it is a directory") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L score %s --text /dev/null", model), 2, "%s", out);
    cr_expect(strstr(out, "--text /dev/null is empty") != NULL, "%s", out);
}

/* The "nll" list of a `lenx score` JSON, without brackets, into out. */
static void nll_list(const char *json, char *out, size_t n)
{
    const char *s = strstr(json, "\"nll\": [");
    cr_assert(s != NULL, "%s", json);
    s += strlen("\"nll\": [");
    size_t len = strcspn(s, "]");
    cr_assert_lt(len, n);
    memcpy(out, s, len);
    out[len] = '\0';
}

/* `lenx score` resolves automatic values once, from --length: the short last
** window uses the same YaRN scale as the others (it had its own, 36/16). The
** expected NLLs score the same text split by hand with the explicit scale
** 64/16 = 4: the first 64 bytes, then the last 36 as a window of their own. */
Test(cli, score_resolves_auto_scale_from_length_once, .init = setup, .fini = teardown, .timeout = 60)
{
    static char out[65536], a[32768], b[32768], whole[65536], want[65536];
    cr_assert_eq(sh(out, sizeof out, "head -c 100 \"$R/data/corpus/austen/test/persuasion.txt\" > t.txt"
                    " && head -c 64 t.txt > a.txt && tail -c 36 t.txt > b.txt"), 0);
    const char *model = "--model \"$R/tests/ref/model_ckpt_causal_rope.safetensors\" --length 64";
    cr_assert_eq(sh(out, sizeof out, "$L score %s --text t.txt --method yarn", model), 0, "%s", out);
    cr_expect(strstr(out, "\"methods\": \"rope+yarn(scale=4)\"") != NULL, "%s", out);
    nll_list(out, whole, sizeof whole);
    cr_assert_eq(sh(out, sizeof out, "$L score %s --text a.txt --method '{yarn: {scale: 4}}'", model), 0, "%s", out);
    nll_list(out, a, sizeof a);
    cr_assert_eq(sh(out, sizeof out, "$L score %s --text b.txt --method '{yarn: {scale: 4}}'", model), 0, "%s", out);
    nll_list(out, b, sizeof b);
    snprintf(want, sizeof want, "%s,%s", a, b);
    cr_expect_str_eq(whole, want);
    /* and the tail's own scale would have given other numbers */
    cr_assert_eq(sh(out, sizeof out, "$L score %s --text b.txt --method '{yarn: {scale: 2.25}}'", model), 0, "%s", out);
    nll_list(out, a, sizeof a);
    cr_expect(strcmp(a, b) != 0, "scale 2.25 and 4 give the same tail");
}

/* `show method` takes any method of the stack's parameters (rope.base) and
** prints the resolved scale: a Llama-3-style base under YaRN at 4x. The
** frequencies are YaRN's ramp recomputed here from the paper's formulas
** (arXiv 2309.00071 §3.2, the reference code's truncated form). */
Test(cli, show_method_sets_rope_base_under_yarn, .init = setup, .fini = teardown, .timeout = 60)
{
    static char out[2 << 20];
    cr_assert_eq(sh(out, sizeof out, "$L show method yarn rope.base=500000 --d-head 128 --length 32768"
                    " --train-len 8192"), 0, "%.2000s", out);
    cr_expect(strstr(out, "\"canonical\": \"yarn(scale=4)\"") != NULL, "%.2000s", out);
    cr_expect(strstr(out, "\"stack\": \"rope(base=500000)+yarn(scale=4)\"") != NULL, "%.2000s", out);
    cr_expect(strstr(out, "\"params\": {\"scale\":4,\"beta_fast\":32,\"beta_slow\":1,\"original\":8192,") != NULL,
              "%.2000s", out);
    const char *s = strstr(out, "\"inv_freq\": [");
    cr_assert(s != NULL, "%.2000s", out);
    s += strlen("\"inv_freq\": [");
    double b = 500000, d = 128, L = 8192, pi = acos(-1.0);
    double low = floor(d * log(L / (2 * pi * 32)) / (2 * log(b)));     /* 18 */
    double high = ceil(d * log(L / (2 * pi * 1)) / (2 * log(b)));      /* 35 */
    cr_expect_eq(low, 18.0);
    cr_expect_eq(high, 35.0);
    for (int k = 0; k < 64; k++) {
        char *end;
        double got = strtod(s, &end);
        cr_assert(end != s, "inv_freq %d missing", k);
        double theta = pow(b, -2.0 * k / d), ramp = fmin(fmax((k - low) / (high - low), 0), 1);
        double want = theta / 4 * ramp + theta * (1 - ramp);
        cr_expect(fabs(got - want) <= 1e-12 * want, "inv_freq[%d] %.17g, want %.17g", k, got, want);
        s = end + (*end == ',' ? 2 : 0);
    }
    /* an unknown method of the stack is named */
    cr_expect_eq(sh(out, sizeof out, "$L show method yarn rop.base=5"), 2, "%s", out);
    cr_expect(strstr(out, "'rop' is not a method of the stack rope+yarn") != NULL, "%s", out);
}

/* A parameter named twice on the command line is refused, as a sweep file's
** map refuses it (the last one won silently): plainly and as yarn.scale, a
** rope parameter, a task's, and a task's protocol= beside --protocol. */
Test(cli, show_refuses_a_parameter_given_twice, .init = setup, .fini = teardown, .timeout = 60)
{
    static char out[1 << 16];
    static const char *const twice[][2] = {
        {"method yarn scale=2 scale=4", "'yarn.scale' is given twice"},
        {"method yarn scale=2 yarn.scale=4", "'yarn.scale' is given twice"},
        {"method yarn rope.base=100 rope.base=1000", "'rope.base' is given twice"},
        {"task passkey digits=3 digits=5", "task 'passkey': parameter 'digits' is given twice"},
        {"task passkey protocol=landmark --protocol landmark", "parameter 'protocol' is given twice"},
    };
    char cmd[256];
    for (size_t i = 0; i < sizeof twice / sizeof twice[0]; i++) {
        snprintf(cmd, sizeof cmd, "$L show %s", twice[i][0]);
        cr_expect_eq(sh(out, sizeof out, cmd), 2, "%s: %s", cmd, out);
        cr_expect(strstr(out, twice[i][1]) != NULL, "%s: %s", cmd, out);
    }
    /* a parameter the mode makes moot was dropped (ntk(mode=dynamic) ran with its factor 1, plain RoPE) */
    static const char *const moot[][2] = {
        {"method ntk mode=dynamic scale=4", "method 'ntk': 'scale' applies only with mode=static"},
        {"method ntk factor=4", "method 'ntk': 'factor' applies only with mode=dynamic"},
        {"method logn mode=qwen base=64", "method 'logn': 'base' applies only with mode=su"},
    };
    for (size_t i = 0; i < sizeof moot / sizeof moot[0]; i++) {
        snprintf(cmd, sizeof cmd, "$L show %s", moot[i][0]);
        cr_expect_eq(sh(out, sizeof out, cmd), 2, "%s: %s", cmd, out);
        cr_expect(strstr(out, moot[i][1]) != NULL, "%s: %s", cmd, out);
    }
    cr_expect_eq(sh(out, sizeof out, "$L show method ntk mode=dynamic factor=4 --length 2"), 0, "%s", out);
    /* one of each stays fine: the method's and rope's own */
    cr_expect_eq(sh(out, sizeof out, "$L show method yarn scale=2 rope.base=1000 --length 2"), 0, "%s", out);
}

/* A method that needs rope, shown alone, fails for want of it and is shown on rope: when that fails too, its
** own complaint there is the one reported (it was "needs rotary positions", which the retry had answered). */
Test(cli, show_method_reports_the_error_on_rope, .init = setup, .fini = teardown, .timeout = 30)
{
    static char out[1 << 16];
    cr_expect_eq(sh(out, sizeof out, "$L show method longrope 'long_factor=[1,2]' --d-head 16 --train-len 32 "
                    "--length 40"), 2, "%s", out);
    cr_expect(strstr(out, "longrope: long_factor has 2 factors; a head of 16 has 8 rotary pairs") != NULL, "%s", out);
    cr_expect(strstr(out, "needs rotary positions") == NULL, "%s", out);
    /* a position scheme's own complaint stays its own, not a clash with the rope it was retried on */
    cr_expect_eq(sh(out, sizeof out, "$L show method t5bias buckets=32 max_distance=16 --length 4"), 2, "%s", out);
    cr_expect(strstr(out, "t5bias: max_distance 16 must exceed") != NULL, "%s", out);
}

/* The data directory (docs/data.md#the-data-directory): --data names it, a
** bad one is refused up front, an empty one fails naming the path and the
** fix, and a binary outside its checkout looks under <prefix>/share/lenx/data
** rather than reading the checkout. Nothing is trained: the plan fails first. */
Test(cli, data_directory_is_a_setting, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[16384];
    cr_expect_eq(sh(out, sizeof out, "$L --data ./nosuch run \"$R/configs/tiny.yaml\" --db r.db"), 2, "%s", out);
    cr_expect(strstr(out, "--data needs an existing directory") != NULL, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "mkdir -p empty pfx/bin && cp \"$L\" pfx/bin/lenx"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L --data empty run \"$R/configs/tiny.yaml\" --db r.db --quiet"), 3, "%s", out);
    cr_expect(strstr(out, "empty/manifest.tsv") != NULL && strstr(out, "LENX_DATA or --data") != NULL &&
              strstr(out, "make data") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "env -u LENX_DATA pfx/bin/lenx run \"$R/configs/tiny.yaml\" --db r.db --quiet"),
                 3, "%s", out);
    cr_expect(strstr(out, "pfx/bin/../share/lenx/data/manifest.tsv") != NULL &&
              strstr(out, "the install prefix") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "pfx/bin/lenx --data \"$R/data\" run \"$R/configs/tiny.yaml\" --db r.db "
                    "--dry-run"), 0, "%s", out);
}

/* `lenx tokenize` (docs/tokenizers.md#lenx-tokenize): llama2.c's ids for a
** reference string of stories260K (its expected/encode.json), the decode
** round trip through a pipe, and the exit statuses of bad input. */
Test(cli, tokenize, .init = setup, .fini = teardown)
{
    char out[4096];
    const char *tok = "/work/shared/models/stories260K/tok512.bin";
    struct stat sb;
    if (stat(tok, &sb) != 0)
        cr_skip_test("%s is absent (the shared stories260K test data)", tok);
    cr_expect_eq(sh(out, sizeof out, "printf 'Hello, world!' | $L tokenize --tokenizer %s", tok), 0, "%s", out);
    cr_expect_str_eq(out, "[1, 346, 306, 414, 432, 263, 304, 341, 443]\n");
    cr_expect_eq(sh(out, sizeof out, "printf 'caf\\303\\251 \\360\\237\\230\\200!' > t.txt && $L tokenize --tokenizer %s "
                    "--text t.txt | $L tokenize --tokenizer %s --decode | cmp - t.txt", tok, tok), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "printf 'ab' | $L tokenize --tokenizer %s --no-specials --stats", tok), 0, "%s", out);
    cr_expect(strstr(out, "2 bytes, encode") != NULL && out[strlen(out) - 2] == ']', "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L tokenize --tokenizer %s --info", tok), 0, "%s", out);
    cr_expect(strstr(out, "\"kind\": \"sentencepiece\", \"vocab_size\": 512, \"bos\": 1, \"eos\": 2") != NULL, "%s", out);
    /* a path the command line names that is not there is bad input, as in score and generate */
    cr_expect_eq(sh(out, sizeof out, "$L tokenize --tokenizer missing.json < /dev/null"), 2, "%s", out);
    cr_expect(strstr(out, "--tokenizer: missing.json: no such file") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L tokenize --tokenizer missing.json --gguf v.gguf"), 2, "%s", out);
    write_file("wp.json", "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}");
    cr_expect_eq(sh(out, sizeof out, "$L tokenize --tokenizer wp.json < /dev/null"), 2, "%s", out);
    cr_expect(strstr(out, "wp.json: model.type: unsupported model type \"Unigram\"") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "echo '[1, 9999]' | $L tokenize --tokenizer %s --decode", tok), 2, "%s", out);
    cr_expect(strstr(out, "id 9999 (at index 1) is outside") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "echo '[1, \"x\"]' | $L tokenize --tokenizer %s --decode", tok), 2, "%s", out);
    cr_expect(strstr(out, "<stdin>: [1]: expected an integer, found a string") != NULL, "%s", out);
}

/* The table of commands (harness/main.c): every command `lenx --help` lists
** answers `--help` with its own usage and exit 0, `lenx help CMD` prints the
** same text, and an unknown option is bad input (exit 2) named in the error.
** The names are read from `lenx --help`, so a new row is covered as it is. */
Test(cli, every_command_answers_help, .init = setup, .fini = teardown)
{
    char names[4096], usage[8192], again[8192], want[80];
    cr_assert_eq(sh(names, sizeof names, "$L --help | sed -n '/^commands:$/,/^$/p' | awk 'NF > 1 {print $1}'"), 0);
    int n = 0;
    for (char *name = strtok(names, "\n"); name; name = strtok(NULL, "\n"), n++) {
        cr_expect_eq(sh(usage, sizeof usage, "$L %s --help", name), 0, "%s --help: %s", name, usage);
        snprintf(want, sizeof want, "usage: lenx %s ", name);
        cr_expect(strncmp(usage, want, strlen(want)) == 0, "%s --help: %s", name, usage);
        cr_expect_eq(sh(again, sizeof again, "$L help %s", name), 0, "help %s: %s", name, again);
        cr_expect_str_eq(again, usage, "lenx help %s differs from lenx %s --help", name, name);
        cr_expect_eq(sh(again, sizeof again, "$L %s --no-such-option", name), 2, "%s: %s", name, again);
        cr_expect(strstr(again, "unknown option '--no-such-option'") != NULL, "%s: %s", name, again);
    }
    /* run, table, compare, score, tokenize, generate, report, export, show, list, rm, merge, slurm */
    cr_expect_geq(n, 13, "only %d commands read from lenx --help", n);
}

/* Number options: a tiny positive value (strtod's ERANGE underflow, a
** subnormal) is a value, not a negative one; overflow, nan, inf and trailing
** junk are refused, each for its own reason. */
Test(cli, number_options_read_tiny_values_and_name_bad_ones, .init = setup, .fini = teardown, .timeout = 30)
{
    struct lx_error err = {""};
    double v = -1;
    cr_expect_eq(lx_args_double("1e-320", "depth", &v, &err), LX_OK, "%s", err.msg);
    cr_expect(v > 0 && v < 1e-319, "1e-320 read as %g", v);
    cr_expect_eq(lx_args_double("1e-400", "depth", &v, &err), LX_OK, "%s", err.msg);
    cr_expect(v == 0.0, "1e-400 (below the smallest subnormal) read as %g", v);
    static const char *const bad[][2] = {
        {"-1e-320", "must be a non-negative number"}, {"-2", "must be a non-negative number"}, {"1e400", "too large"},
        {"nan", "must be a finite number"}, {"inf", "must be a finite number"}, {"0.5x", "must be a number"},
        {"", "must be a number"}, {" 0.5", "must be a number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = '\0';
        cr_expect_eq(lx_args_double(bad[i][0], "depth", &v, &err), LX_EINVAL, "'%s' accepted", bad[i][0]);
        cr_expect(strstr(err.msg, bad[i][1]) != NULL, "'%s': expected '%s' in: %s", bad[i][0], bad[i][1], err.msg);
        cr_expect(strstr(err.msg, "--depth") != NULL, "%s", err.msg);
    }
    long n;
    cr_expect_eq(lx_args_long("99999999999999999999", "n", 0, 100, &n, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "--n = 99999999999999999999 is out of bounds [0, 100]") != NULL, "%s", err.msg);
    char out[8192];
    cr_expect_eq(sh(out, sizeof out, "$L show task needle --length 200 --depth 1e-320"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task needle --length 200 --depth 1e400"), 2, "%s", out);
    cr_expect(strstr(out, "--depth") != NULL && strstr(out, "too large") != NULL, "%s", out);
}

/* `lenx show task` says where the gold first stands in the context and how far back that is from the answer:
** checked against the printed prompt itself (its `<bos>` is token 0, every other byte a token). */
Test(cli, show_task_places_the_gold)
{
    char out[8192];
    static const char *const cmds[] = {"needle template=short needles=1 --length 192 --depth 0",
                                       "needle --length 1021 --depth 0.25", "passkey --length 300 --depth 1"};
    for (int c = 0; c < 3; c++) {
        cr_assert_eq(sh(out, sizeof out, "$L show task %s", cmds[c]), 0, "%s", out);
        long off = -1, n = -1, at = -1, back = -1;
        char gold[32] = "";
        const char *a = strstr(out, "answer:    tokens ["), *g = strstr(out, "context:   gold first at token "),
                   *prompt = strstr(out, "--- prompt\n<bos>");
        cr_assert(a && g && prompt, "%s", out);
        cr_assert_eq(sscanf(a, "answer:    tokens [%ld, %ld), gold \"%31[0-9]\"", &off, &n, gold), 3, "%s", out);
        cr_assert_eq(sscanf(g, "context:   gold first at token %ld, %ld tokens before", &at, &back), 2, "%s", out);
        const char *text = prompt + strlen("--- prompt\n<bos>"), *hit = strstr(text, gold);
        cr_assert(hit != NULL, "%s: the gold is not in the prompt", cmds[c]);
        cr_expect_eq(at, 1 + (long)(hit - text), "%s", cmds[c]);
        cr_expect_eq(back, off - at, "%s", cmds[c]);
    }
}

/* Hostile tokenizer.json files and texts end in exit 2 naming
** what was wrong: the file's error named once ("trunc.txt: the text is not
** UTF-8", not "trunc.txt: trunc.txt: "), a regex past pcre2's match limit
** with its pattern and byte offset (never fewer, longer pieces), a
** normalizer that doubles the text 30 times at the step that passes the cap. */
Test(cli, tokenize_hostile_json, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    const char *model = "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"!\": 2, \"aa\": 3}, "
                        "\"merges\": [\"a a\"]}";
    char text[8192];    /* room for norm's 4096 and the rest: GCC at -O0 (make debug) checks the snprintf below */
    snprintf(text, sizeof text, "{%s, \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": "
             "\"(?:(a|aa)+b)|.\"}, \"behavior\": \"Isolated\"}}", model);
    write_file("split.json", text);
    cr_expect_eq(sh(out, sizeof out, "printf 'ab\\377' > trunc.txt && $L tokenize --tokenizer split.json "
                    "--text trunc.txt"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: trunc.txt: the text is not UTF-8 at byte 2 (0xff)") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!' | $L tokenize "
                    "--tokenizer split.json"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: <stdin>: split.json: pre_tokenizer (Split): regular expression "
                         "/(?:(a|aa)+b)|./ failed matching from byte 0: match limit exceeded") != NULL, "%s", out);
    char norm[4096] = "";
    for (int k = 0; k < 30; k++)
        strcat(norm, k ? ", {\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, \"content\": \"aa\"}"
                       : "{\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, \"content\": \"aa\"}");
    snprintf(text, sizeof text, "{%s, \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [%s]}}", model, norm);
    write_file("grow.json", text);
    cr_expect_eq(sh(out, sizeof out, "printf a | $L tokenize --tokenizer grow.json"), 2, "%s", out);
    cr_expect(strstr(out, "grow.json: normalizer.normalizers[10] (Replace)") != NULL, "%s", out);
    /* an id past int64 is an integer out of range, not "expected an integer, found 1e+20" */
    cr_expect_eq(sh(out, sizeof out, "echo '[0, 99999999999999999999]' | $L tokenize --tokenizer split.json --decode"),
                 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: <stdin>: [1]: the integer 1e+20 is out of range: read as a double") &&
              strstr(out, "\n  hint: give a smaller value"), "%s", out);
}

/* What cannot be written, or read as a store, is named with a hint that fits;
** nothing that was not a store is made into one, and commands of one sweep
** refuse a pooled name rather than match nothing. */
Test(cli, store_and_output_errors, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192];
    write_file("small.yaml", small);
    cr_assert_eq(sh(out, sizeof out, "$L run small.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    long runs = sql_count("r.db", "SELECT count(*) FROM runs");
    /* a table to a full disk is a file error, not a success */
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --format csv > /dev/full"), 3, "%s", out);
    cr_expect(strstr(out, "lenx: error: writing standard output"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L list sweeps --db r.db > /dev/full"), 3, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "mkdir d && $L run small.yaml --db d --quiet"), 3, "%s", out);
    cr_expect(strstr(out, "d: is a directory, not a store\n  hint: --db names the store's file, e.g. --db d/lenx.db"),
              "%s", out);
    /* another program's SQLite file stays as it was */
    cr_expect_eq(sh(out, sizeof out, "sqlite3 other.db 'CREATE TABLE x(a)' && $L run small.yaml --db other.db --quiet"),
                 3, "%s", out);
    cr_expect(strstr(out, "other.db: not a lenx database (it holds tables lenx did not make)"), "%s", out);
    cr_expect_eq(sql_count("other.db", "SELECT count(*) FROM sqlite_master"), 1);
    cr_expect_eq(sql_count("other.db", "SELECT count(*) FROM pragma_user_version WHERE user_version = 0"), 1);
    cr_expect_eq(sh(out, sizeof out, "echo hello > t.txt && $L table --db t.txt"), 3, "%s", out);
    cr_expect(strstr(out, "hint: the file is not an SQLite database"), "%s", out);
    /* md holds no _se rows: asking for only those is an error, not an empty table */
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --metric entropy_se"), 2, "%s", out);
    cr_expect(strstr(out, "--format csv or json lists the _se rows"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show sweep small+small --db r.db"), 2, "%s", out);
    cr_expect(strstr(out, "show sweep takes one sweep, not the pooled 'small+small'"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L rm --sweep small+small --db r.db --yes"), 2, "%s", out);
    cr_expect_eq(sql_count("r.db", "SELECT count(*) FROM runs"), runs);
    /* a CSV holding one cell twice with two values: which one is meant is not known */
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --format csv > a.csv && grep -m1 ',none,.*,entropy,' a.csv |"
                    " sed -E 's/,([^,]*),([^,]*),([^,]*)$/,1234,\\2,\\3/' >> a.csv &&"
                    " tail -1 a.csv | grep -q ',1234,'"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare a.csv small --db r.db"), 2, "%s", out);
    cr_expect(strstr(out, "a.csv holds one cell twice with two values (sweep small, run key ") &&
                  strstr(out, ", metric entropy): line 2 (") && strstr(out, "(1234)"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare small a.csv --db r.db --sigma 2"), 2, "%s", out);
}

/* LENX_AMX and LENX_PACK take 0 or 1; any other word (LENX_AMX=off) was taken for unset without a sign, AMX
** left on. Now every command refuses it with a hint, as it does a bad LENX_TEAM. */
Test(cli, switches_in_the_environment_take_0_or_1, .init = setup, .fini = teardown)
{
    char out[4096];
    static const char *const bad[] = {"LENX_AMX=off", "LENX_PACK=yes", "LENX_AMX=2"};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(sh(out, sizeof out, "%s $L list methods", bad[i]), 2, "%s: %s", bad[i], out);
        char want[128];
        snprintf(want, sizeof want, "lenx: error: %.*s is '%s', not 0 or 1\n  hint: ", (int)strcspn(bad[i], "="),
                 bad[i], strchr(bad[i], '=') + 1);
        cr_expect(strstr(out, want) != NULL, "%s: %s", bad[i], out);
    }
    cr_expect_eq(sh(out, sizeof out, "LENX_AMX=0 LENX_PACK=1 $L list methods"), 0, "%s", out);
}

/* An option a show subcommand does not read was ignored with exit 0 (show method rope --numerics xx printed
** rope's tables): it is refused, naming the option and what it is for. */
Test(cli, show_refuses_an_option_its_subcommand_does_not_read, .init = setup, .fini = teardown)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L show method rope --numerics xx"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: lenx show method does not take --numerics\n  hint: model: ") != NULL, "%s",
              out);
    cr_expect_eq(sh(out, sizeof out, "$L show task passkey --length 300 --d-head 8"), 2, "%s", out);
    cr_expect(strstr(out, "lenx show task does not take --d-head") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show method rope --length 4 --d-head 8 --train-len 4 --heads 2"), 0, "%s",
                 out);
}
