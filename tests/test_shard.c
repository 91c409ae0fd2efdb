/*
** tests/test_shard.c - a sweep split into shards and merged back
** (docs/cluster.md), end to end through the binary, plus the shard
** arithmetic directly.
**
** tests/shard.yaml (24 cells, 4 model keys, metrics + series + outputs) is
** run unsplit into full.db, and as a models stage plus 3 shards (--shard K/3,
** --no-train) into their own stores, merged: the merged store equals the
** unsplit one value for value (SQL EXCEPT both ways, which compares REALs
** exactly, and `lenx compare --rtol 0 --atol 0`); each shard holds exactly
** the keys whose hex value is K mod 3; merging again, or into itself, changes
** no byte of the dump; a changed value is a conflict that writes nothing; an
** ok row replaces a failed one and never the reverse; old schemas and bad
** --shard values are refused; a Slurm array task's variables pick the shard;
** `lenx slurm` writes the array, models and merge jobs and a submit script
** that chains them (run against a stand-in sbatch).
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/scaleout/shard.h"
#include "tests/shell.h"

#define N_CELLS 24
#define MODELS_DBS "s/models-0.db s/models-1.db s/models-2.db"

static void setup(void)
{
    shell_setup("shard");
    cr_assert_not_null(getenv("LENX_ROOT"), "LENX_ROOT must name the checkout (make test sets it)");
}

/* The unsplit run (full.db), and the split one: models-K.db (3 parts), shard-K.db, merged into all.db. */
static void run_split(void)
{
    char out[8192];
    cr_assert_eq(sh(out, sizeof out, "$L run $R/tests/shard.yaml --db full.db --quiet --no-table --keep-prompts"), 0,
                 "%s", out);
    /* the models stage in 3 parts by root model key: each model trained once */
    long trained = 0;
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(sh(out, sizeof out, "$L run $R/tests/shard.yaml --models-only --shard %d/3 --db s/models-%d.db "
                        "--quiet", k, k), 0, "%s", out);
        const char *p = strstr(out, " trained now");
        cr_assert_not_null(p, "%s", out);
        while (p > out && p[-1] >= '0' && p[-1] <= '9')
            p--;
        trained += atol(p);
    }
    cr_expect_eq(trained, 4, "4 model keys, each trained once");
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(sh(out, sizeof out, "$L run $R/tests/shard.yaml --shard %d/3 --db s/shard-%d.db --no-train "
                        "--quiet --no-table --keep-prompts", k, k), 0, "%s", out);
        cr_expect(strstr(out, "0 models trained") != NULL, "shard %d trained a model: %s", k, out);
    }
    cr_assert_eq(sh(out, sizeof out, "$L merge " MODELS_DBS " s/shard-0.db s/shard-1.db s/shard-2.db --into s/all.db"),
                 0, "%s", out);
}

/* Rows of table t (columns cols) in one store and not the other, both ways. */
static long only_in_one(const char *t, const char *cols)
{
    char sql[1024];
    snprintf(sql, sizeof sql, "attach 'full.db' as f; select (select count(*) from (select r.key, %s from main.runs "
             "r join main.%s c on c.run_id = r.id except select r.key, %s from f.runs r join f.%s c on c.run_id = "
             "r.id)) + (select count(*) from (select r.key, %s from f.runs r join f.%s c on c.run_id = r.id except "
             "select r.key, %s from main.runs r join main.%s c on c.run_id = r.id))", cols, t, cols, t, cols, t, cols,
             t);
    return sql_long("s/all.db", sql);
}

/* sha256 of the store's SQL dump: every row, every value. */
static void dump_hash(const char *db, char out[80])
{
    cr_assert_eq(sh(out, 80, "sqlite3 %s .dump | sha256sum | cut -c1-64", db), 0, "%s", out);
    out[strcspn(out, "\n")] = '\0';
}

Test(shard, split_three_ways_and_merged_equals_the_unsplit_run, .init = setup, .fini = teardown, .timeout = 180)
{
    run_split();
    char out[8192];
    static const char *tables[] = {"runs", "metrics", "series", "outputs", "models"};
    for (int i = 0; i < 5; i++) {
        char sql[64];
        snprintf(sql, sizeof sql, "select count(*) from %s", tables[i]);
        long n = sql_long("full.db", sql);
        cr_expect_gt(n, 0, "%s is empty: the test would not see it", tables[i]);
        cr_expect_eq(sql_long("s/all.db", sql), n, "%s", tables[i]);
    }
    cr_expect_eq(only_in_one("metrics", "c.name, c.value, r.train_len"), 0);
    cr_expect_eq(sql_long("s/all.db", "select count(*) from runs where train_len = 32"), N_CELLS,
                 "each cell's training length is merged");
    cr_expect_eq(only_in_one("series", "c.series, c.x, c.y"), 0);
    cr_expect_eq(only_in_one("outputs", "c.sample, c.depth, c.gold, c.text, c.score, c.logprob, c.stop, c.prompt"), 0);
    cr_expect_gt(sql_long("s/all.db", "select count(prompt) from outputs"), 0, "the kept prompts are merged");
    cr_expect_eq(sql_long("s/all.db", "attach 'full.db' as f; select count(*) from (select key, weights_sha256, "
                          "steps, tokens, val_loss from models except select key, weights_sha256, steps, tokens, "
                          "val_loss from f.models)"), 0, "the trained models' rows are carried");
    cr_assert_eq(sh(out, sizeof out, "$L table --db full.db --format csv > full.csv && "
                    "$L compare full.csv shard --db s/all.db --rtol 0 --atol 0"), 0, "%s", out);
    cr_expect(strstr(out, "in 24 cells compared, 0 moved") != NULL, "%s", out);
    /* each shard holds the keys that are K mod 3 as hex numbers, and only those */
    long total = 0;
    for (int k = 0; k < 3; k++) {
        char db[32], keys[4096];
        snprintf(db, sizeof db, "s/shard-%d.db", k);
        cr_assert_eq(sh(keys, sizeof keys, "sqlite3 %s 'select key from runs'", db), 0);
        for (char *p = strtok(keys, "\n"); p; p = strtok(NULL, "\n"), total++)
            cr_expect_eq(strtoull(p, NULL, 16) % 3, (unsigned long long)k, "key %s in shard %d", p, k);
    }
    cr_expect_eq(total, N_CELLS);
}

Test(shard, merging_again_or_into_itself_changes_nothing, .init = setup, .fini = teardown, .timeout = 180)
{
    run_split();
    char before[80], after[80], in_before[80], in_after[80], out[8192];
    dump_hash("s/all.db", before);
    dump_hash("s/shard-1.db", in_before);
    cr_assert_eq(sh(out, sizeof out, "$L merge " MODELS_DBS " s/shard-0.db s/shard-1.db s/shard-2.db --into s/all.db"),
                 0, "%s", out);
    cr_expect(strstr(out, "0 cells added, 0 replaced a failed row, 24 already there; 0 models added") != NULL,
              "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L merge s/all.db s/shard-1.db --into s/all.db"), 0, "%s", out);
    dump_hash("s/all.db", after);
    cr_expect_str_eq(after, before, "the second merge changed the store");
    dump_hash("s/shard-1.db", in_after);
    cr_expect_str_eq(in_after, in_before, "an input was changed");
    /* the shards merged in another order give the same rows (ids aside) */
    cr_assert_eq(sh(out, sizeof out, "$L merge s/shard-2.db s/shard-0.db " MODELS_DBS " s/shard-1.db --into b.db"), 0);
    cr_expect_eq(sql_long("b.db", "attach 's/all.db' as a; select count(*) from (select key, name, value from "
                          "runs join metrics on run_id = id except select key, name, value from a.runs join "
                          "a.metrics on run_id = id)"), 0);
}

Test(shard, a_conflict_is_reported_and_nothing_is_written, .init = setup, .fini = teardown, .timeout = 180)
{
    run_split();
    char before[80], after[80], out[8192], key[64];
    sql_text(key, sizeof key, "s/shard-1.db", "select key from runs join metrics on run_id = id where name = 'ppl' "
             "order by id limit 1");
    cr_assert_eq(sh(out, sizeof out, "cp s/shard-1.db other.db && sqlite3 other.db \"update metrics set value = "
                    "value + 1e-12 where name = 'ppl' and run_id = (select id from runs where key = '%s')\"", key), 0);
    dump_hash("s/all.db", before);
    int rc = sh(out, sizeof out, "$L merge s/shard-0.db other.db --into s/all.db");
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "conflict: cell ") && strstr(out, key), "the cell is named: %s", out);
    cr_expect(strstr(out, "other.db: metric \"ppl\" ") && strstr(out, "s/all.db: metric \"ppl\" "),
              "both values are shown: %s", out);
    cr_expect(strstr(out, "1 conflicts") && strstr(out, "nothing was merged"), "%s", out);
    dump_hash("s/all.db", after);
    cr_expect_str_eq(after, before, "a refused merge wrote something");
    /* one model key with two weight hashes */
    cr_assert_eq(sh(out, sizeof out, "cp s/models-0.db m.db && sqlite3 m.db \"update models set weights_sha256 = "
                    "'00' || substr(weights_sha256, 3)\""), 0);
    cr_expect_eq(sh(out, sizeof out, "$L merge m.db --into s/all.db"), 1, "%s", out);
    cr_expect(strstr(out, "conflict: model ") && strstr(out, "m.db: weights_sha256 00"), "%s", out);
    dump_hash("s/all.db", after);
    cr_expect_str_eq(after, before, "a refused merge wrote something");
    /* two inputs into a new store: the other value is named where it came from (it named the output, which a
    ** refused merge never makes), and a row one side lacks is said to be one (it showed two unrelated rows) */
    cr_expect_eq(sh(out, sizeof out, "$L merge s/shard-1.db other.db --into new.db"), 1, "%s", out);
    cr_expect(strstr(out, "has other values in other.db than in s/shard-1.db:") &&
                  strstr(out, "s/shard-1.db: metric \"ppl\" "), "%s", out);
    cr_expect(!exists("new.db"));
    cr_assert_eq(sh(out, sizeof out, "cp s/shard-1.db lack.db && sqlite3 lack.db \"delete from metrics where name = "
                    "'nll' and run_id = (select id from runs where key = '%s')\"", key), 0);
    cr_expect_eq(sh(out, sizeof out, "$L merge lack.db --into s/all.db"), 1, "%s", out);
    cr_expect(strstr(out, "s/all.db: metric \"nll\" ") && strstr(out, " (a row the other side lacks)"), "%s", out);
    /* a number stored as text, in a cell the output holds already: refused as bad input, as a new cell's is
    ** (it was a conflict, exit 1) */
    cr_assert_eq(sh(out, sizeof out, "cp s/shard-1.db text.db && sqlite3 text.db \"update metrics set value = x'00' "
                    "where name = 'ppl' and run_id = (select id from runs where key = '%s')\"", key), 0);
    cr_expect_eq(sh(out, sizeof out, "$L merge text.db --into s/all.db"), 2, "%s", out);
    cr_expect(strstr(out, "where a number belongs; nothing was merged into s/all.db"), "%s", out);
    dump_hash("s/all.db", after);
    cr_expect_str_eq(after, before, "a refused merge wrote something");
}

Test(shard, an_ok_row_replaces_a_failed_one_and_never_the_reverse, .init = setup, .fini = teardown, .timeout = 180)
{
    run_split();
    char out[8192];
    /* failed.db: shard 0's cells, stored as failed (no metrics) */
    cr_assert_eq(sh(out, sizeof out, "cp s/shard-0.db failed.db && sqlite3 failed.db \"delete from metrics; delete "
                    "from series; delete from outputs; update runs set status = 'failed', error = 'boom'\""), 0);
    long n = sql_long("failed.db", "select count(*) from runs");
    cr_assert_eq(sh(out, sizeof out, "$L merge failed.db --into m.db && $L merge s/shard-0.db --into m.db"), 0, "%s",
                 out);
    cr_expect_eq(sql_long("m.db", "select count(*) from runs where status = 'ok'"), n);
    cr_expect_eq(sql_long("m.db", "select count(*) from runs"), n, "the failed rows were replaced, not kept");
    cr_assert_eq(sh(out, sizeof out, "$L merge failed.db --into m.db"), 0, "%s", out);
    cr_expect(strstr(out, "failed rows left out") != NULL, "%s", out);
    cr_expect_eq(sql_long("m.db", "select count(*) from runs where status = 'ok'"), n, "a failed row replaced ok");
    cr_expect_eq(sql_long("m.db", "select count(*) from metrics"), sql_long("s/shard-0.db",
                                                                             "select count(*) from metrics"));
}

Test(shard, merge_refuses_old_schemas_missing_files_and_no_into, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "$L run $R/tests/shard.yaml --shard 0/3 --db a.db --quiet --no-table"), 0);
    cr_assert_eq(sh(out, sizeof out, "cp a.db old.db && sqlite3 old.db 'DROP TABLE claims; ALTER TABLE models "
                    "DROP COLUMN weights_sha256; ALTER TABLE models DROP COLUMN threads; ALTER TABLE runs DROP COLUMN numerics; "
                    "PRAGMA user_version = 4'"), 0);
    cr_expect_eq(sh(out, sizeof out, "$L merge old.db --into m.db"), 2, "%s", out);
    cr_expect(strstr(out, "old.db: schema version 4 is older than this lenx's (8)") != NULL, "%s", out);
    cr_expect(strstr(out, "hint: upgrade it in place first with `lenx merge old.db --into old.db`") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "ls m.db*"), 2, "a refused merge left a new file behind: %s", out);
    cr_assert_eq(sh(out, sizeof out, "$L merge old.db --into old.db && $L merge old.db --into m.db"), 0, "%s", out);
    cr_expect_eq(sql_long("m.db", "select count(*) from runs"), sql_long("a.db", "select count(*) from runs"));
    cr_expect_eq(sh(out, sizeof out, "$L merge nothere.db --into m.db"), 3, "%s", out);
    cr_expect(strstr(out, "nothere.db: no such database") != NULL, "%s", out);
    cr_expect_eq(sql_long("m.db", "select count(*) from runs"), sql_long("a.db", "select count(*) from runs"),
                 "an existing output is kept");
    cr_expect_eq(sh(out, sizeof out, "$L merge a.db nothere.db --into new.db"), 3, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "ls new.db*"), 2, "a failed merge left a new file behind: %s", out);
    cr_expect_eq(sh(out, sizeof out, "$L merge a.db"), 2, "%s", out);
    cr_expect(strstr(out, "merge needs --into OUT.db") != NULL, "%s", out);
}

Test(shard, bad_shard_values_are_refused_before_anything_is_written, .init = setup, .fini = teardown)
{
    static const char *bad[][2] = {
        {"3/3", "the shard index counts from 0, so it must be below 3"},
        {"-1/3", "is not K/N with whole numbers 0 <= K < N"},
        {"1/0", "is not K/N"},
        {"1", "is not K/N"},
        {"a/b", "is not K/N"},
        {"1/3/4", "is not K/N"},
        {"1/100001", "is not K/N"},
    };
    char out[4096];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_expect_eq(sh(out, sizeof out, "$L run $R/tests/shard.yaml --shard '%s' --db x.db", bad[i][0]), 2,
                     "%s: %s", bad[i][0], out);
        cr_expect(strstr(out, bad[i][1]) != NULL, "%s: %s", bad[i][0], out);
        cr_expect(strstr(out, "hint: ") != NULL, "%s", out);
    }
    cr_expect(!exists("x.db"), "a refused run created its store");
}

/* The dry-run cell lines of a command (the plan's key lines), as one string. */
static void dry_keys(char *out, size_t n, const char *env_and_args)
{
    cr_assert_eq(sh(out, n, "%s $L run $R/tests/shard.yaml --dry-run 2>&1 | grep '^  [0-9a-f]' ", env_and_args), 0,
                 "%s", out);
}

Test(shard, slurm_array_variables_choose_the_shard, .init = setup, .fini = teardown)
{
    char want[8192], got[8192], all[8192], out[4096];
    dry_keys(all, sizeof all, "env -u SLURM_ARRAY_TASK_ID");
    sh(want, sizeof want, "env -u SLURM_ARRAY_TASK_ID $L run $R/tests/shard.yaml --dry-run --shard 1/3 | "
       "grep '^  [0-9a-f]'");
    cr_expect_neq(strlen(want), strlen(all), "the shard is a part of the sweep");
    dry_keys(got, sizeof got, "SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3");
    cr_expect_str_eq(got, want, "task 1 of 3 runs shard 1/3");
    dry_keys(got, sizeof got, "SLURM_ARRAY_TASK_ID=7 SLURM_ARRAY_TASK_MIN=5 SLURM_ARRAY_TASK_STEP=2 "
             "SLURM_ARRAY_TASK_COUNT=3");
    cr_expect_str_eq(got, want, "--array=5-9:2, task 7 is shard 1/3");
    sh(got, sizeof got, "SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=3 $L run $R/tests/shard.yaml --dry-run "
       "--shard 1/3 | grep '^  [0-9a-f]'");
    cr_expect_str_eq(got, want, "--shard wins over the environment");
    cr_expect_eq(sh(out, sizeof out, "SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3 $L run $R/tests/shard.yaml "
                    "--dry-run >/dev/null"), 0);
    cr_expect(strstr(out, "lenx: shard 1/3 from the Slurm array task (SLURM_ARRAY_TASK_ID=1, "
                          "SLURM_ARRAY_TASK_COUNT=3") != NULL, "said on stderr: %s", out);
    cr_expect_eq(sh(out, sizeof out, "SLURM_ARRAY_TASK_ID=1 $L run $R/tests/shard.yaml --dry-run"), 2, "%s", out);
    cr_expect(strstr(out, "SLURM_ARRAY_TASK_COUNT=(unset)") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "SLURM_ARRAY_TASK_ID=4 SLURM_ARRAY_TASK_MIN=5 SLURM_ARRAY_TASK_COUNT=3 "
                    "$L run $R/tests/shard.yaml --dry-run"), 2, "%s", out);
    cr_expect(strstr(out, "is not one of 3 evenly spaced tasks") != NULL, "%s", out);
}

Test(shard, the_shard_of_a_key_is_its_hex_value_mod_n)
{
    cr_expect_eq(lx_shard_of("000000000000000a", 3), 1);                  /* 10 mod 3 */
    cr_expect_eq(lx_shard_of("ffffffffffffffff", 7), 1);                  /* 2^64 = 2 (mod 7) */
    cr_expect_eq(lx_shard_of("8000000000000000", 1000), 808);             /* 2^63 = 9223372036854775808 */
    cr_expect_eq(lx_shard_of("1d38c76d0da03dcf", 1), 0);
    struct lx_shard s;
    struct lx_error err;
    cr_expect_eq(lx_shard_parse("2/5", &s, &err), LX_OK);
    cr_expect(s.k == 2 && s.n == 5);
    cr_expect_eq(lx_shard_parse("5/5", &s, &err), LX_EINVAL);
    /* over many keys, every shard gets about its share */
    long count[4] = {0};
    char key[17];
    for (uint64_t i = 0; i < 4000; i++) {
        snprintf(key, sizeof key, "%016" PRIx64, (uint64_t)(i * 0x9e3779b97f4a7c15ULL));
        count[lx_shard_of(key, 4)]++;
    }
    for (int k = 0; k < 4; k++)
        cr_expect(count[k] > 800 && count[k] < 1200, "shard %d has %ld of 4000", k, count[k]);
}

Test(shard, slurm_writes_the_jobs_and_a_submit_script_that_chains_them, .init = setup, .fini = teardown)
{
    char out[8192];
    cr_assert_eq(sh(out, sizeof out, "$L slurm $R/tests/shard.yaml --shards 3 --db out/x.db --partition p "
                    "--time 1:00:00 --cpus 2 --mem 1G"), 0, "%s", out);
    cr_expect(strstr(out, "submit with:\n  sh ") && strstr(out, "/out/shard.slurm/submit.sh"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "cd out/shard.slurm && grep -n '' cells.sbatch"), 0);
    cr_expect(strstr(out, "#SBATCH --array=0-2\n") && strstr(out, "#SBATCH --partition=p\n") &&
              strstr(out, "#SBATCH --time=1:00:00\n") && strstr(out, "#SBATCH --mem=1G\n") &&
              strstr(out, "#SBATCH --cpus-per-task=2\n"), "%s", out);
    cr_expect(strstr(out, ".shard-\"$SLURM_ARRAY_TASK_ID\".db --no-train --no-table --threads 2") != NULL, "%s", out);
    /* sbatch reads #SBATCH lines only before the first command */
    cr_expect_eq(sh(out, sizeof out, "cd out/shard.slurm && for f in *.sbatch; do awk '!/^#/ {c=1} /^#SBATCH/ && c "
                    "{exit 1}' $f || exit 1; done"), 0, "an #SBATCH line after a command");
    cr_assert_eq(sh(out, sizeof out, "cat out/shard.slurm/models.sbatch"), 0);
    cr_expect(strstr(out, "#SBATCH --array=0-2\n") && strstr(out, "--models-only --db '") &&
              strstr(out, "/out/shard'.models-\"$SLURM_ARRAY_TASK_ID\".db --threads 2"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L slurm $R/tests/shard.yaml --shards 2 --db out/x.db && "
                    "cat out/shard.slurm/models.sbatch"), 0);
    cr_expect(strstr(out, "#SBATCH --array=0-1\n") != NULL, "2 shards: 2 model tasks: %s", out);
    cr_assert_eq(sh(out, sizeof out, "$L slurm $R/tests/shard.yaml --shards 9 --db out/x.db && "
                    "cat out/shard.slurm/models.sbatch"), 0);
    cr_expect(strstr(out, "4 models to train first, in 4 tasks") && strstr(out, "#SBATCH --array=0-3\n"),
              "no more model tasks than models: %s", out);
    cr_assert_eq(sh(out, sizeof out, "$L slurm $R/tests/shard.yaml --shards 3 --db out/x.db --cpus 2 && "
                    "cat out/shard.slurm/merge.sbatch"), 0);
    cr_expect(strstr(out, "/out/shard'.models-0.db ") && strstr(out, "/out/shard'.models-2.db ") &&
              strstr(out, "/out/shard'.shard-0.db ") &&
              strstr(out, "/out/shard'.shard-2.db --into '") && !strstr(out, "shard-3.db"), "%s", out);
    /* the submit script against a stand-in sbatch that logs its arguments */
    write_file("sbatch", "#!/bin/sh\nn=$(($(cat n 2>/dev/null || echo 100) + 1)); echo $n > n\n"
               "echo \"$*\" >> calls; echo \"$n;cluster\"\n");
    cr_assert_eq(sh(out, sizeof out, "chmod +x sbatch && PATH=$D:$PATH sh out/shard.slurm/submit.sh "
                    "&& cat out/shard.slurm/calls"), 0, "%s", out);
    cr_expect(strstr(out, "JOBS 101 102 103") != NULL, "%s", out);
    cr_expect(strstr(out, "--parsable models.sbatch\n--parsable --dependency=afterok:101 cells.sbatch\n"
                          "--parsable --dependency=afterok:102 merge.sbatch\n") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L slurm $R/tests/shard.yaml --shards 0"), 2, "%s", out);
    cr_expect(strstr(out, "--shards = 0 is out of bounds") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L slurm $R/tests/shard.yaml"), 2, "%s", out);
    cr_expect(strstr(out, "slurm needs --shards N") != NULL, "%s", out);
}

Test(shard, a_models_only_shard_holds_the_models_whose_key_is_k_mod_n, .init = setup, .fini = teardown)
{
    char out[8192];
    int n_models = 0;
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(sh(out, sizeof out, "$L run $R/tests/shard.yaml --dry-run --models-only --shard %d/3 | "
                        "sed -n 's/.*model=tiny \\[\\([0-9a-f]*\\)\\]$/\\1/p' | sort -u", k), 0, "%s", out);
        for (char *p = strtok(out, "\n"); p; p = strtok(NULL, "\n"), n_models++)
            cr_expect_eq(strtoull(p, NULL, 16) % 3, (unsigned long long)k, "model %s in shard %d", p, k);
    }
    cr_expect_eq(n_models, 4, "every model in one shard");
}
