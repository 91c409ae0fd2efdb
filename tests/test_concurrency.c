/*
** tests/test_concurrency.c - several `lenx run` processes on one store, and
** the model cache as files, end to end through the binary: concurrent runs of
** one sweep and of disjoint sweeps compute each cell once and train each model
** once; kill -9 followed by a rerun loses and duplicates nothing; a failed
** --force rerun keeps the ok row; a fresh --db reuses the checkpoint files; a
** bit-flipped checkpoint is reported and retrained, refused under --no-train
** and refused by `lenx score`.
**
** The suite `claims` checks the store's side directly: claims taken, refused
** and taken over from dead owners; a failed cell never replaces an ok row;
** a schema-4 file migrates to 5.
**
** Each test runs in its own temp dir (tests/shell.h); the binary is $LENX_BIN,
** the checkout $LENX_ROOT. The models train 20 steps at length 32 (well under
** a second each), so four processes contend for them while the others wait.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "results/store.h"
#include "tests/shell.h"

static void setup(void)
{
    shell_setup("conc");
    cr_assert_not_null(getenv("LENX_ROOT"), "LENX_ROOT must name the checkout (make test sets it)");
}

/* Two model keys (rope and nope train differently; rope+logn shares rope's),
** 3 stacks x 2 lengths = 6 cells. */
#define MODEL_YAML                                                                                         \
    "models:\n  tiny: {arch: {mode: causal, layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64},\n"   \
    "         train: {length: 32, batch: 4, steps: 20, warmup: 5, eval_every: 10, eval_windows: 4}}\n"

static const char *shared =
    "name: shared\nseed: 1\n" MODEL_YAML
    "methods: [rope, nope, [rope, {logn: {mode: qwen}}]]\ntasks: [{ppl: {windows: 2}}]\nlengths: [32, 64]\n";

/* Start n `lenx run` processes at once (config i is cfg[i % n_cfg]), wait for
** them all, and return the sum of their "N models trained" counts. Each
** process's output is in out<i>.txt; every one must exit 0. */
static long run_concurrently(int n, const char *const *cfg, int n_cfg, const char *db)
{
    char cmd[4096] = "", out[8192];
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(cmd + len, sizeof cmd - len,
                                "$L run %s --db %s --quiet --no-table > out%d.txt 2>&1 & p%d=$!; ",
                                cfg[i % n_cfg], db, i, i);
    len += (size_t)snprintf(cmd + len, sizeof cmd - len, "s=0; ");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(cmd + len, sizeof cmd - len, "wait $p%d || { s=$?; echo \"process %d: exit $s\"; }; ", i, i);
    snprintf(cmd + len, sizeof cmd - len, "exit $s");
    int rc = sh(out, sizeof out, "%s", cmd);
    if (rc != 0) {  /* which process, and everything each one printed */
        char said[8192];
        sh(said, sizeof said, "for f in out*.txt; do echo \"== $f\"; cat $f; done");
        cr_expect_eq(rc, 0, "a process failed: %s\n%s", out, said);
    }
    cr_assert_eq(sh(out, sizeof out, "cat out*.txt"), 0);
    long trained = 0;
    for (const char *p = out; (p = strstr(p, " models trained")) != NULL; p++) {
        const char *q = p;
        while (q > out && q[-1] >= '0' && q[-1] <= '9')
            q--;
        trained += atol(q);
    }
    return trained;
}

/* Every planned cell once ok, no failed row, no duplicate, an intact file. */
static void expect_each_cell_once(const char *db, long n_cells)
{
    char out[256];
    cr_expect_eq(sql_long(db, "select count(*) from runs where status = 'ok'"), n_cells);
    cr_expect_eq(sql_long(db, "select count(*) from runs"), n_cells, "one row per cell");
    cr_expect_eq(sql_long(db, "select count(*) from (select distinct sweep, key from runs)"), n_cells);
    cr_expect_eq(sql_long(db, "select count(*) from runs where status = 'failed'"), 0);
    cr_expect_eq(sql_long(db, "select count(*) from (select run_id from metrics group by run_id)"), n_cells);
    sql_text(out, sizeof out, db, "pragma integrity_check");
    cr_expect_str_eq(out, "ok");
}

Test(conc, four_runs_of_one_sweep_compute_each_cell_once, .init = setup, .fini = teardown, .timeout = 120)
{
    write_file("s.yaml", shared);
    const char *cfg[] = {"s.yaml"};
    long trained = run_concurrently(4, cfg, 1, "r.db");
    cr_expect_eq(trained, 2, "two model keys, each trained by one process");
    /* each process's summary accounts for all 6 cells: run here or stored by another */
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "for i in 0 1 2 3; do sed -n \"s/.*'shared': \\([0-9]*\\) run .*, "
                    "\\([0-9]*\\) already stored.*/\\1 \\2/p\" out$i.txt | awk '{print $1 + $2}'; done"
                    " | tr '\\n' ' '"), 0, "%s", out);
    cr_expect_str_eq(out, "6 6 6 6 ");
    expect_each_cell_once("r.db", 6);
    cr_expect(exists("models"), "checkpoints go to <db dir>/models");
    cr_expect_eq(sql_long("r.db", "select count(*) from models"), 2);
    cr_expect_eq(sql_long("r.db", "select count(*) from claims"), 0, "every claim released");
    cr_expect_eq(sh(NULL, 0, "! ls models | grep -q tmp"), 0, "no temporary checkpoint left");
}

Test(conc, failed_force_rerun_keeps_the_ok_row, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192];
    write_file("s.yaml", shared);
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --format csv > before.csv"), 0, "%s", out);
    /* The rope checkpoint's path becomes a directory: it cannot be loaded,
    ** and the retrained model cannot be saved there, so the rope cells fail. */
    cr_assert_eq(sh(out, sizeof out, "k=$(sqlite3 r.db \"select distinct model_key from runs where method = 'rope'\");"
                    " rm models/$k.safetensors && mkdir models/$k.safetensors"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L run s.yaml --db r.db --no-table --force"), 1, "%s", out);
    cr_expect(strstr(out, "4 failed") != NULL, "rope and rope+logn at two lengths fail: %s", out);
    cr_expect_eq(sql_long("r.db", "select count(*) from runs where status = 'ok'"), 6, "the ok rows stay");
    cr_expect_eq(sql_long("r.db", "select count(*) from runs where status = 'failed'"), 0);
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --format csv > after.csv"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "cmp before.csv after.csv"), 0, "the table is unchanged: %s", out);
}

/* ---- the store's side: claims, failed rows, migration ----------------------- */

static struct lx_store *open_db(const char *name)
{
    char path[128];
    struct lx_store *s = NULL;
    struct lx_error err = {{0}};
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(lx_store_open(&s, path, 0, &err), LX_OK, "%s", err.msg);
    return s;
}

static enum lx_claim claim(struct lx_store *s, const char *key, const struct lx_owner *me, int check_done)
{
    enum lx_claim st;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_claim(s, "sw", key, me, check_done, &st, &err), LX_OK, "%s", err.msg);
    return st;
}

static struct lx_owner owner(const char *host, long pid, const char *tag)
{
    struct lx_owner o = {.pid = pid};
    snprintf(o.host, sizeof o.host, "%s", host);
    snprintf(o.id, sizeof o.id, "%s:%ld:%s", host, pid, tag);
    return o;
}

/* A pid that no process has: a child that has exited and been reaped. */
static long dead_pid(void)
{
    pid_t p = fork();
    cr_assert(p >= 0);
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    return (long)p;
}

static struct lx_run_record cell(const char *key, int ok)
{
    struct lx_run_record r = {
        .key = key, .sweep = "sw", .method = "none", .method_json = "{}", .task = "t", .task_json = "{}",
        .key_json = "{}", .length = 10, .seed = 1, .ok = ok, .error = ok ? NULL : "boom", .commit = "c1",
        .version = "v", .threads = 1, .started = 1.0, .finished = 2.0,
    };
    return r;
}

Test(claims, taken_refused_released_and_taken_over, .init = setup, .fini = teardown)
{
    struct lx_store *s = open_db("c.db");
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    struct lx_owner a = owner(host, (long)getpid(), "a"), b = owner(host, (long)getpid(), "b");
    cr_expect_eq(claim(s, "k1", &a, 1), LX_CLAIM_GOT);
    cr_expect_eq(claim(s, "k1", &a, 1), LX_CLAIM_GOT, "a claim is ours again");
    cr_expect_eq(claim(s, "k1", &b, 1), LX_CLAIM_BUSY, "a live owner (this process) holds it");
    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_unclaim(s, "sw", "k1", a.id, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(claim(s, "k1", &b, 1), LX_CLAIM_GOT, "released");
    /* same host, pid gone: taken over at once */
    struct lx_owner dead = owner(host, dead_pid(), "d");
    cr_expect_eq(claim(s, "k2", &dead, 1), LX_CLAIM_GOT);
    cr_expect_eq(claim(s, "k2", &a, 1), LX_CLAIM_GOT, "a dead pid's claim is taken over");
    /* another host: only a stale heartbeat counts (its pid means nothing here) */
    struct lx_owner far = owner("elsewhere", (long)getpid(), "f");
    cr_expect_eq(claim(s, "k3", &far, 1), LX_CLAIM_GOT);
    cr_expect_eq(claim(s, "k3", &a, 1), LX_CLAIM_BUSY);
    cr_assert_eq(sh(NULL, 0, "sqlite3 c.db \"update claims set heartbeat = heartbeat - %d where key = 'k3'\"",
                    (int)LX_CLAIM_STALE_S + 1), 0);
    cr_expect_eq(claim(s, "k3", &a, 1), LX_CLAIM_GOT, "a stale heartbeat's claim is taken over");
    /* a stored ok cell is DONE (unless the caller recomputes it) */
    struct lx_run_record r = cell("k4", 1);
    cr_assert_eq(lx_store_put(s, &r, NULL, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(claim(s, "k4", &b, 1), LX_CLAIM_DONE);
    cr_expect_eq(claim(s, "k4", &b, 0), LX_CLAIM_GOT);
    cr_assert_eq(lx_store_unclaim(s, NULL, NULL, a.id, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(sql_long("c.db", "select count(*) from claims where owner like '%:a'"), 0, "all of a's released");
    cr_expect_eq(sql_long("c.db", "select count(*) from claims where owner like '%:b'"), 2, "b's kept");
    lx_store_close(s);
}

Test(claims, failed_cell_never_replaces_an_ok_row, .init = setup, .fini = teardown)
{
    struct lx_store *s = open_db("f.db");
    struct lx_error err = {{0}};
    struct lx_run_record ok = cell("k", 1), bad = cell("k", 0);
    cr_assert_eq(lx_store_put(s, &ok, NULL, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(lx_store_put(s, &bad, NULL, &err), LX_STORE_KEPT);
    cr_expect_eq(sql_long("f.db", "select count(*) from runs where status = 'ok'"), 1);
    cr_expect_eq(sql_long("f.db", "select count(*) from runs"), 1);
    /* an ok row replaces an ok row; another commit adds its failure beside it */
    cr_expect_eq(lx_store_put(s, &ok, NULL, &err), LX_OK);
    bad.commit = "c2";
    cr_expect_eq(lx_store_put(s, &bad, NULL, &err), LX_OK);
    cr_expect_eq(sql_long("f.db", "select count(*) from runs"), 2);
    /* a failed row is replaced by a failed or an ok one */
    cr_expect_eq(lx_store_put(s, &bad, NULL, &err), LX_OK);
    struct lx_run_record ok2 = cell("k", 1);
    ok2.commit = "c2";
    cr_expect_eq(lx_store_put(s, &ok2, NULL, &err), LX_OK);
    cr_expect_eq(sql_long("f.db", "select count(*) from runs where status = 'ok'"), 2);
    cr_expect_eq(sql_long("f.db", "select count(*) from runs"), 2);
    lx_store_close(s);
}

Test(claims, schema_4_migrates_to_5, .init = setup, .fini = teardown)
{
    struct lx_store *s = open_db("m.db");
    struct lx_error err = {{0}};
    struct lx_run_record r = cell("k", 1);
    cr_assert_eq(lx_store_put(s, &r, NULL, &err), LX_OK, "%s", err.msg);
    lx_store_close(s);
    /* back to schema 4: no claims, no models.weights_sha256 or models.threads */
    cr_assert_eq(sh(NULL, 0, "sqlite3 m.db 'DROP TABLE claims; ALTER TABLE models DROP COLUMN weights_sha256;"
                    " ALTER TABLE models DROP COLUMN threads; ALTER TABLE runs DROP COLUMN numerics;"
                    " PRAGMA user_version = 4'"), 0);
    /* two processes open it at once: one migrates, neither fails */
    cr_expect_eq(sh(NULL, 0, "$L table --db m.db > /dev/null"), 0, "a reader leaves it at 4");
    s = open_db("m.db");
    lx_store_close(s);
    s = open_db("m.db");
    lx_store_close(s);
    cr_expect_eq(sql_long("m.db", "pragma user_version"), LX_STORE_SCHEMA);
    cr_expect_eq(sql_long("m.db", "select count(*) from runs"), 1, "rows kept");
    cr_expect_eq(sql_long("m.db", "select count(*) from pragma_table_info('models') where name in"
                          " ('weights_sha256', 'threads')"), 2);
    cr_expect_eq(sql_long("m.db", "select count(*) from claims"), 0);
}

/* ---- end to end: disjoint sweeps, kill -9, the cache as files --------------- */

/* Sweep `name` on the shared model's rope checkpoint: 2 stacks x 2 lengths. */
static void write_disjoint(const char *file, const char *name)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml, "name: %s\nseed: 1\n" MODEL_YAML "methods: [rope, [rope, {logn: {mode: qwen}}]]\n"
             "tasks: [{ppl: {windows: 2}}]\nlengths: [32, 64]\n", name);
    write_file(file, yaml);
}

Test(conc, four_disjoint_sweeps_train_their_shared_model_once, .init = setup, .fini = teardown, .timeout = 120)
{
    const char *cfg[] = {"d0.yaml", "d1.yaml", "d2.yaml", "d3.yaml"};
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "d%d", i);
        write_disjoint(cfg[i], name);
    }
    long trained = run_concurrently(4, cfg, 4, "r.db");
    cr_expect_eq(trained, 1, "one model key shared by four sweeps");
    expect_each_cell_once("r.db", 16);
    cr_expect_eq(sql_long("r.db", "select count(distinct sweep) from runs where status = 'ok'"), 4);
    cr_expect_eq(sql_long("r.db", "select count(*) from models"), 1);
    cr_expect_eq(sql_long("r.db", "select count(*) from claims"), 0);
}

/* 20 times: a sweep killed with SIGKILL at a random moment (training, a
** cell, a commit; a cached run takes ~0.6 s, cells 0.02-0.1 s; every other
** round waits for the first stored cell before its random delay), then rerun
** to the end: every cell once, none lost. Each
** round has its own store in the same directory, so the first trains the
** model (or is killed training it) and the later ones load its file. */
Test(conc, kill_9_then_rerun_20_times_loses_and_duplicates_nothing, .init = setup, .fini = teardown,
     .timeout = 300)
{
    char out[8192];
    write_file("k.yaml", "name: k\nseed: 1\n" MODEL_YAML "methods: [rope, nope, [rope, {logn: {mode: qwen}}]]\n"
                         "tasks: [{ppl: {windows: 8}}]\nlengths: [128, 256, 512]\n");
    srand(12);
    int partial = 0;    /* rounds killed with some but not all cells stored */
    for (int i = 0; i < 20; i++) {
        /* even rounds: a random moment from the start (training, opening);
        ** odd rounds: a random moment after the first cell is stored, so that
        ** slow builds (ASan) still see kills mid-sweep */
        int ms = i % 2 ? rand() % 150 : rand() % 700;
        char db[16], wait_first[256] = "";
        snprintf(db, sizeof db, "r%d.db", i);
        if (i % 2)
            snprintf(wait_first, sizeof wait_first, " until [ \"$(sqlite3 %s 'select count(*) from runs' 2>/dev/null)\""
                     " -gt 0 ] 2>/dev/null || ! kill -0 $p 2>/dev/null; do sleep 0.01; done;", db);
        cr_assert_eq(sh(out, sizeof out, "$L run k.yaml --db %s --quiet --no-table > /dev/null 2>&1 & p=$!;%s"
                        " sleep %d.%03d; kill -9 $p; wait $p; echo stored=$(sqlite3 %s 'select count(*) from runs' 2>/dev/null)",
                        db, wait_first, ms / 1000, ms % 1000, db), 0, "round %d: %s", i, out);
        const char *n = strstr(out, "stored=");
        partial += n && atol(n + 7) > 0 && atol(n + 7) < 9;
        cr_assert_eq(sh(out, sizeof out, "$L run k.yaml --db %s --quiet --no-table", db), 0, "round %d: %s", i, out);
        expect_each_cell_once(db, 9);
        cr_expect_eq(sql_long(db, "select count(*) from claims"), 0, "round %d: claims left", i);
    }
    fprintf(stderr, "conc: %d of 20 kills landed mid-sweep\n", partial);
    cr_expect_geq(partial, 3, "only %d of 20 kills landed mid-sweep", partial);
    /* every round computed the same numbers from the same two checkpoints */
    cr_expect_eq(sh(out, sizeof out, "for i in $(seq 0 19); do sqlite3 r$i.db \"select r.key, m.name, m.value"
                    " from runs r join metrics m on m.run_id = r.id order by 1, 2\" | sha256sum; done | sort -u"
                    " | wc -l"), 0, "%s", out);
    cr_expect_eq(atol(out), 1, "identical metrics in all 20 stores: %s", out);
    cr_expect_eq(sh(out, sizeof out, "ls models/*.safetensors | wc -l"), 0);
    cr_expect_eq(atol(out), 2, "%s", out);
}

/* sha256 of a safetensors file's data buffer (after the 8-byte length and
** the header), computed by Python: an independent reference. */
#define DATA_SHA "/usr/bin/python3 -c \"import hashlib,struct,sys; b=open(sys.argv[1],'rb').read();" \
                 " n=struct.unpack('<Q',b[:8])[0]; print(hashlib.sha256(b[8+n:]).hexdigest())\""

Test(conc, fresh_db_reuses_the_checkpoint_files, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192], want[128];
    write_file("s.yaml", shared);
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db a.db --quiet --no-table"), 0, "%s", out);
    cr_expect(strstr(out, "2 models trained") != NULL, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "sha256sum models/* > before.sha"), 0);
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db b.db --quiet --no-table"), 0, "%s", out);
    cr_expect(strstr(out, "6 run (6 ok, 0 failed), 0 already stored; 0 models trained (0 steps)") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "sha256sum models/* | cmp - before.sha"), 0, "files untouched: %s", out);
    /* b.db records both files, with the data hash Python computes */
    cr_expect_eq(sql_long("b.db", "select count(*) from models where steps = 0"), 2, "found, not trained");
    for (int i = 0; i < 2; i++) {
        char key[64], sql[512];
        snprintf(sql, sizeof sql, "select key from models order by key limit 1 offset %d", i);
        sql_text(key, sizeof key, "b.db", sql);
        cr_assert_eq(sh(want, sizeof want, DATA_SHA " models/%s.safetensors", key), 0, "%s", want);
        want[strcspn(want, "\n")] = '\0';
        snprintf(sql, sizeof sql, "select count(*) from runs where model_key = '%s' and weights_sha256 = '%s'", key,
                 want);
        long n_runs = i == 0 ? 4 : 2;   /* rope's key sorts first (rope, rope+logn); nope's 2 */
        cr_expect_eq(sql_long("b.db", sql), n_runs, "the runs on %s name its weights", key);
        cr_expect_eq(sql_long("a.db", sql), n_runs, "and so did the training store's");
        snprintf(sql, sizeof sql, "select count(*) from models where key = '%s' and weights_sha256 = '%s'", key, want);
        cr_expect_eq(sql_long("b.db", sql), 1);
    }
    /* the same numbers from either store */
    cr_assert_eq(sh(out, sizeof out, "$L table --db a.db --format csv > a.csv && $L table --db b.db --format csv"
                    " > b.csv && cmp a.csv b.csv"), 0, "%s", out);
    /* lenx score finds a model by name from any directory */
    write_file("t.txt", "It is a truth universally acknowledged, that a single man in possession of a good fortune");
    cr_assert_eq(sh(out, sizeof out, "mkdir -p sub/deeper && mv a.db sub/ && mkdir sub/models && cp models/* sub/models"
                    " && cd sub/deeper && $L score --db ../a.db --model $(sqlite3 ../a.db \"select key from models"
                    " order by key limit 1\") --text ../../t.txt > s.json && grep -c '\"mean_nll\"' s.json"), 0,
                 "%s", out);
}

/* Flip one bit of the rope checkpoint's weights. */
#define FLIP "k=$(sqlite3 r.db \"select distinct model_key from runs where method = 'rope'\");" \
             " /usr/bin/python3 -c \"import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read());" \
             " b[-5] ^= 4; open(p,'wb').write(b)\" models/$k.safetensors"

Test(conc, bit_flipped_checkpoint_is_reported_retrained_or_refused, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192];
    write_file("s.yaml", shared);
    write_file("t.txt", "It is a truth universally acknowledged, that a single man in possession of a good fortune");
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "sha256sum models/* > before.sha && " FLIP), 0, "%s", out);
    cr_expect_neq(sh(out, sizeof out, "sha256sum models/* | cmp -s - before.sha"), 0, "the file changed");
    /* lenx score refuses it, by path and by key */
    cr_expect_eq(sh(out, sizeof out, "k=$(sqlite3 r.db \"select distinct model_key from runs where method = 'rope'\");"
                    " $L score --model models/$k.safetensors --text t.txt"), 3, "%s", out);
    cr_expect(strstr(out, ".safetensors: the weights do not match the checkpoint's embedded hash") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "k=$(sqlite3 r.db \"select distinct model_key from runs where method = 'rope'\");"
                    " $L score --db r.db --model $k --text t.txt"), 3, "%s", out);
    cr_expect(strstr(out, "the file is damaged") != NULL, "%s", out);
    /* --no-train refuses it: the rope cells fail, their ok rows stay */
    cr_expect_eq(sh(out, sizeof out, "$L run s.yaml --db r.db --no-table --force --no-train"), 1, "%s", out);
    cr_expect(strstr(out, "--no-train: no usable checkpoint: ") != NULL, "%s", out);
    cr_expect(strstr(out, "(2 ok, 4 failed)") != NULL, "%s", out);
    cr_expect_eq(sql_long("r.db", "select count(*) from runs where status = 'ok'"), 6);
    cr_expect_eq(sql_long("r.db", "select count(*) from runs where status = 'failed'"), 0);
    /* a run reports it and retrains it, to the same bytes */
    cr_expect_eq(sh(out, sizeof out, "$L run s.yaml --db r.db --no-table --force"), 0, "%s", out);
    cr_expect(strstr(out, "lenx: warning: checkpoint models/") != NULL, "%s", out);
    const char *said = strstr(out, "cannot be used, retraining it: ");
    cr_expect(said != NULL && strstr(said + 1, "cannot be used, retraining it: ") == NULL, "said once: %s", out);
    cr_expect(strstr(out, "1 models trained") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "sha256sum models/* | cmp - before.sha"), 0, "%s", out);
}

/* A checkpoint from before the hash was embedded (the key renamed in place,
** same length, so the header stays valid) is used, its hash computed and
** recorded; the thread count of training is in the file and the models row. */
Test(conc, old_checkpoint_without_hash_loads_and_threads_are_recorded, .init = setup, .fini = teardown,
     .timeout = 60)
{
    char out[8192], want[128], sql[512];
    write_file("s.yaml", shared);
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db a.db --quiet --no-table --threads 2"), 0, "%s", out);
    cr_expect_eq(sql_long("a.db", "select count(*) from models where threads = 2"), 2);
    cr_expect_eq(sh(out, sizeof out, "grep -c '\"lenx_threads\":\"2\"' models/*.safetensors | grep -c ':1$'"), 0,
                 "%s", out);
    cr_expect_eq(atol(out), 2, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "for f in models/*.safetensors; do sed -i 's/\"lenx_weights_sha256\"/"
                    "\"xenx_weights_sha256\"/' $f; done; ! grep -l lenx_weights_sha256 models/*"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db b.db --quiet --no-table --no-train"), 0, "%s", out);
    cr_expect(strstr(out, "0 models trained") != NULL, "%s", out);
    char key[64];
    sql_text(key, sizeof key, "b.db", "select key from models order by key limit 1");
    cr_assert_eq(sh(want, sizeof want, DATA_SHA " models/%s.safetensors", key), 0, "%s", want);
    want[strcspn(want, "\n")] = '\0';
    snprintf(sql, sizeof sql, "select count(*) from runs where model_key = '%s' and weights_sha256 = '%s'", key, want);
    cr_expect_eq(sql_long("b.db", sql), 4, "the computed hash is recorded");
}
