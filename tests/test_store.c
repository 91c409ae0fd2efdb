/*
** tests/test_store.c - the SQLite result store: round trips, resume
** semantics (done / replace / add), sweeps, read-only opens and the schema
** version guard. Each test uses its own database under /tmp.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "results/store.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define SCHEMA STR(LX_STORE_SCHEMA)     /* the version this lenx writes, as the sqlite3 CLI prints it */

/* Each test runs in its own process: one database path per test. */
static char reserve[64];        /* mkstemp's file, keeps the name unique */
static char db_path[80];        /* reserve + ".db": the database */
static char db_dir[64];         /* mkdtemp folder for the nested-path test */

static void unlink_db(const char *p)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    char buf[160];
    for (int i = 0; i < 4; i++) {
        snprintf(buf, sizeof buf, "%s%s", p, suffix[i]);
        unlink(buf);
    }
}

static void setup(void)
{
    strcpy(reserve, "/tmp/lenx-store-XXXXXX");
    int fd = mkstemp(reserve);
    cr_assert(fd >= 0, "mkstemp failed");
    close(fd);
    snprintf(db_path, sizeof db_path, "%s.db", reserve);
    db_dir[0] = '\0';
}

static void teardown(void)
{
    unlink_db(db_path);
    unlink(reserve);
    if (db_dir[0]) {
        char p[160];
        snprintf(p, sizeof p, "%s/a/b/x.db", db_dir);
        unlink_db(p);
        snprintf(p, sizeof p, "%s/a/b", db_dir);
        rmdir(p);
        snprintf(p, sizeof p, "%s/a", db_dir);
        rmdir(p);
        rmdir(db_dir);
    }
}

TestSuite(store, .init = setup, .fini = teardown);

static int exists(const char *p)
{
    return access(p, F_OK) == 0;
}

/* The first line the sqlite3 CLI prints for `sql` on `path` (sql goes inside
** shell double quotes: SQL strings take single quotes). */
static void sqlite_cli(const char *path, const char *sql, char *out, size_t n)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' \"%s\"", path, sql);
    FILE *f = popen(cmd, "r");
    cr_assert(f != NULL, "popen(%s)", cmd);
    out[0] = '\0';
    if (!fgets(out, (int)n, f))
        out[0] = '\0';
    pclose(f);
    out[strcspn(out, "\n")] = '\0';
}

static struct lx_store *open_rw(const char *path)
{
    struct lx_store *s = NULL;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_open(&s, path, 0, &err), LX_OK, "%s", err.msg);
    cr_assert(s != NULL);
    return s;
}

static long count(struct lx_store *s, const char *table)
{
    long n = -1;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_count(s, table, &n, &err), LX_OK, "%s", err.msg);
    return n;
}

static int done(struct lx_store *s, const char *sweep, const char *key)
{
    int d = -1;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_done(s, sweep, key, &d, &err), LX_OK, "%s", err.msg);
    return d;
}

static int has_commit(struct lx_store *s, const char *prefix)
{
    int found = -1;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_has_commit(s, prefix, &found, &err), LX_OK, "%s", err.msg);
    return found;
}

static void select_rows(struct lx_store *s, const char *sweep, const char *commit, struct lx_rows *out)
{
    struct lx_filter f = {.sweep = sweep, .commit = commit};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_select(s, &f, out, &err), LX_OK, "%s", err.msg);
}

/* A record with every field filled. */
static struct lx_run_record record(const char *sweep, const char *key, const char *commit, int ok)
{
    struct lx_run_record r = {
        .key = key,
        .sweep = sweep,
        .method = "logn(mode=ssmax,s=0.4)",
        .method_json = "[{\"name\":\"logn\",\"mode\":\"ssmax\",\"s\":0.4}]",
        .task = "gaussian(samples=2000)",
        .task_json = "{\"name\":\"gaussian\",\"samples\":2000}",
        .key_json = "{\"method\":\"logn\",\"task\":\"gaussian\"}",
        .length = 1000,
        .seed = 7,
        .model_key = "model-abc",
        .ok = ok,
        .error = ok ? NULL : "cell failed: boom",
        .commit = commit,
        .dirty = 0,
        .version = LX_VERSION,
        .threads = 4,
        .blas = "Haswell openmp",
        .host = "testhost",
        .config = "configs/test.yaml",
        .started = 1700000000.0,
        .finished = 1700000000.5,
        .train_len = 512,
    };
    return r;
}

static void put(struct lx_store *s, const struct lx_run_record *r, const struct lx_result *res)
{
    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_put(s, r, res, &err), LX_OK, "%s", err.msg);
}

/* A result with one metric `ppl` = v. */
static void put_ppl(struct lx_store *s, const struct lx_run_record *r, double v)
{
    struct lx_result res = {0};
    lx_result_metric(&res, "ppl", v);
    lx_result_point(&res, "loss_by_position", 1, v);
    put(s, r, &res);
    lx_result_release(&res);
}

Test(store, open_creates_file_and_schema)
{
    cr_assert(!exists(db_path));
    struct lx_store *s = open_rw(db_path);
    cr_expect(exists(db_path), "lx_store_open did not create %s", db_path);
    cr_expect_eq(count(s, "runs"), 0);
    cr_expect_eq(count(s, "metrics"), 0);
    cr_expect_eq(count(s, "series"), 0);
    cr_expect_eq(count(s, "models"), 0);
    cr_expect_eq(count(s, "outputs"), 0);
    lx_store_close(s);
    char v[64];
    sqlite_cli(db_path, "PRAGMA user_version", v, sizeof v);
    cr_expect_str_eq(v, SCHEMA);
    /* Reopening an existing store keeps it. */
    s = open_rw(db_path);
    cr_expect_eq(count(s, "runs"), 0);
    lx_store_close(s);
}

Test(store, open_creates_parent_folders)
{
    strcpy(db_dir, "/tmp/lenx-storedir-XXXXXX");
    cr_assert(mkdtemp(db_dir) != NULL);
    char p[160];
    snprintf(p, sizeof p, "%s/a/b/x.db", db_dir);
    struct lx_store *s = open_rw(p);
    cr_expect(exists(p));
    cr_expect_eq(count(s, "runs"), 0);
    lx_store_close(s);
}

Test(store, ok_record_round_trips)
{
    struct lx_store *s = open_rw(db_path);
    struct lx_run_record r = record("sw", "key-1", "abc123", 1);
    struct lx_result res = {0};
    /* Report order is not alphabetical: select must keep it. */
    lx_result_metric(&res, "ppl", 12.5);
    lx_result_metric(&res, "range_mass:10-100", NAN);
    lx_result_metric(&res, "ppl_se", 0.25);
    lx_result_metric(&res, "entropy", -3.0);
    lx_result_point(&res, "loss_by_position", 1, 2.0);
    lx_result_point(&res, "loss_by_position", 2, NAN);
    lx_result_point(&res, "loss_by_position", 3, 4.0);
    put(s, &r, &res);
    lx_result_release(&res);

    cr_expect_eq(count(s, "runs"), 1);
    cr_expect_eq(count(s, "metrics"), 4);
    cr_expect_eq(count(s, "series"), 3);

    struct lx_rows rows = {0};
    select_rows(s, NULL, NULL, &rows);
    cr_assert_eq(rows.n, 4);
    static const char *const names[] = {"ppl", "range_mass:10-100", "ppl_se", "entropy"};
    for (int i = 0; i < rows.n; i++) {
        const struct lx_row *w = &rows.rows[i];
        cr_expect_str_eq(w->metric, names[i]);
        cr_expect_str_eq(w->sweep, "sw");
        cr_expect_str_eq(w->method, "logn(mode=ssmax,s=0.4)");
        cr_expect_str_eq(w->task, "gaussian(samples=2000)");
        cr_expect_str_eq(w->key, "key-1");
        cr_expect_str_eq(w->commit, "abc123");
        cr_expect_eq(w->length, 1000);
        cr_expect_eq(w->seed, 7);
        cr_expect_eq(w->run_id, rows.rows[0].run_id);
        cr_expect_eq(w->train_len, 512, "no models row: the cell's own training length");
    }
    cr_expect(rows.rows[0].run_id > 0);
    cr_expect_eq(rows.rows[0].value, 12.5);
    cr_expect(isnan(rows.rows[1].value), "NaN came back as %g", rows.rows[1].value);
    cr_expect_eq(rows.rows[2].value, 0.25);
    cr_expect_eq(rows.rows[3].value, -3.0);
    lx_rows_release(&rows);

    /* The sweep filter. */
    select_rows(s, "sw", NULL, &rows);
    cr_expect_eq(rows.n, 4);
    lx_rows_release(&rows);
    select_rows(s, "other", NULL, &rows);
    cr_expect_eq(rows.n, 0);
    lx_rows_release(&rows);

    /* A NULL filter is every sweep and commit. */
    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_select(s, NULL, &rows, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(rows.n, 4);
    lx_rows_release(&rows);

    /* The series' NaN y is stored as NULL, not dropped. */
    lx_store_close(s);
    char v[256];
    sqlite_cli(db_path, "SELECT count(*) FROM series WHERE y IS NULL", v, sizeof v);
    cr_expect_str_eq(v, "1");
    sqlite_cli(db_path, "SELECT status || '|' || model_key || '|' || threads || '|' || host || '|' || "
               "started || '|' || finished || '|' || wall_s FROM runs", v, sizeof v);
    cr_expect_str_eq(v, "ok|model-abc|4|testhost|2023-11-14T22:13:20.000Z|2023-11-14T22:13:20.500Z|0.5");
}

Test(store, done_is_per_sweep_and_key)
{
    struct lx_store *s = open_rw(db_path);
    cr_expect_eq(done(s, "sw", "key-1"), 0);
    struct lx_run_record r = record("sw", "key-1", "abc123", 1);
    put_ppl(s, &r, 1.0);
    cr_expect_eq(done(s, "sw", "key-1"), 1);
    cr_expect_eq(done(s, "other", "key-1"), 0);
    cr_expect_eq(done(s, "sw", "key-2"), 0);
    lx_store_close(s);
}

Test(store, failed_record_is_stored_but_not_done)
{
    struct lx_store *s = open_rw(db_path);
    struct lx_run_record ok = record("sw", "key-1", "abc123", 1);
    put_ppl(s, &ok, 1.0);
    cr_expect_eq(count(s, "runs"), 1);
    cr_expect_eq(count(s, "metrics"), 1);

    /* A failure's partial result is not stored. */
    struct lx_run_record bad = record("sw", "key-2", "abc123", 0);
    put_ppl(s, &bad, 99.0);
    cr_expect_eq(count(s, "runs"), 2);
    cr_expect_eq(count(s, "metrics"), 1);
    cr_expect_eq(count(s, "series"), 1);
    cr_expect_eq(done(s, "sw", "key-2"), 0);
    cr_expect_eq(done(s, "sw", "key-1"), 1);

    struct lx_rows rows = {0};
    select_rows(s, NULL, NULL, &rows);
    cr_assert_eq(rows.n, 1);
    cr_expect_str_eq(rows.rows[0].key, "key-1");
    lx_rows_release(&rows);
    lx_store_close(s);

    char v[128];
    sqlite_cli(db_path, "SELECT status || '|' || error FROM runs WHERE key = 'key-2'", v, sizeof v);
    cr_expect_str_eq(v, "failed|cell failed: boom");

    /* Resuming: the retry at the same commit replaces the failure. */
    s = open_rw(db_path);
    struct lx_run_record retry = record("sw", "key-2", "abc123", 1);
    put_ppl(s, &retry, 2.0);
    cr_expect_eq(count(s, "runs"), 2);
    cr_expect_eq(count(s, "metrics"), 2);
    cr_expect_eq(done(s, "sw", "key-2"), 1);
    lx_store_close(s);
}

Test(store, same_commit_replaces_other_commit_adds)
{
    struct lx_store *s = open_rw(db_path);
    struct lx_run_record r = record("sw", "key-1", "abc123", 1);
    struct lx_result res = {0};
    lx_result_metric(&res, "ppl", 1.5);
    lx_result_metric(&res, "acc", 0.5);
    lx_result_point(&res, "curve", 1, 1);
    put(s, &r, &res);
    lx_result_release(&res);
    cr_expect_eq(count(s, "runs"), 1);
    cr_expect_eq(count(s, "metrics"), 2);
    cr_expect_eq(count(s, "series"), 1);

    /* Same (sweep, key, commit, dirty): replaced, old metrics and series gone. */
    lx_result_metric(&res, "ppl", 2.5);
    lx_result_metric(&res, "acc", 0.75);
    lx_result_point(&res, "curve", 1, 2);
    put(s, &r, &res);
    lx_result_release(&res);
    cr_expect_eq(count(s, "runs"), 1);
    cr_expect_eq(count(s, "metrics"), 2);
    cr_expect_eq(count(s, "series"), 1);

    struct lx_rows rows = {0};
    select_rows(s, NULL, NULL, &rows);
    cr_assert_eq(rows.n, 2);
    cr_expect_str_eq(rows.rows[0].metric, "ppl");
    cr_expect_eq(rows.rows[0].value, 2.5);
    cr_expect_str_eq(rows.rows[1].metric, "acc");
    cr_expect_eq(rows.rows[1].value, 0.75);
    lx_rows_release(&rows);

    /* Another commit: a new row; select shows the newest. */
    struct lx_run_record r2 = record("sw", "key-1", "def456", 1);
    put_ppl(s, &r2, 3.5);
    cr_expect_eq(count(s, "runs"), 2);
    cr_expect_eq(count(s, "metrics"), 3);
    select_rows(s, NULL, NULL, &rows);
    cr_assert_eq(rows.n, 1);
    cr_expect_str_eq(rows.rows[0].commit, "def456");
    cr_expect_eq(rows.rows[0].value, 3.5);
    lx_rows_release(&rows);

    /* A commit prefix picks the older one. */
    select_rows(s, NULL, "abc", &rows);
    cr_assert_eq(rows.n, 2);
    cr_expect_str_eq(rows.rows[0].commit, "abc123");
    cr_expect_eq(rows.rows[0].value, 2.5);
    lx_rows_release(&rows);
    select_rows(s, "sw", "def4", &rows);
    cr_assert_eq(rows.n, 1);
    cr_expect_eq(rows.rows[0].value, 3.5);
    lx_rows_release(&rows);
    select_rows(s, NULL, "abd", &rows);
    cr_expect_eq(rows.n, 0);
    lx_rows_release(&rows);

    /* The same commit built dirty is another row too. */
    struct lx_run_record r3 = record("sw", "key-1", "def456", 1);
    r3.dirty = 1;
    put_ppl(s, &r3, 4.5);
    cr_expect_eq(count(s, "runs"), 3);
    select_rows(s, NULL, NULL, &rows);
    cr_assert_eq(rows.n, 1);
    cr_expect_eq(rows.rows[0].value, 4.5);
    lx_rows_release(&rows);

    /* The same key in another sweep is a separate cell. */
    struct lx_run_record r4 = record("sw2", "key-1", "def456", 1);
    put_ppl(s, &r4, 5.5);
    cr_expect_eq(count(s, "runs"), 4);
    select_rows(s, NULL, NULL, &rows);
    cr_expect_eq(rows.n, 2);
    lx_rows_release(&rows);
    select_rows(s, "sw2", NULL, &rows);
    cr_assert_eq(rows.n, 1);
    cr_expect_eq(rows.rows[0].value, 5.5);
    lx_rows_release(&rows);
    lx_store_close(s);
}

Test(store, newest_ok_row_wins_over_a_newer_failure)
{
    struct lx_store *s = open_rw(db_path);
    struct lx_run_record ok = record("sw", "key-1", "abc123", 1);
    put_ppl(s, &ok, 1.0);
    struct lx_run_record bad = record("sw", "key-1", "def456", 0);
    put_ppl(s, &bad, 2.0);
    cr_expect_eq(count(s, "runs"), 2);
    cr_expect_eq(done(s, "sw", "key-1"), 1);
    struct lx_rows rows = {0};
    select_rows(s, NULL, NULL, &rows);
    cr_assert_eq(rows.n, 1);
    cr_expect_str_eq(rows.rows[0].commit, "abc123");
    cr_expect_eq(rows.rows[0].value, 1.0);
    lx_rows_release(&rows);
    lx_store_close(s);
}

Test(store, sweeps_list_names_and_counts)
{
    struct lx_store *s = open_rw(db_path);
    struct lx_run_record r = record("alpha", "k1", "abc123", 1);
    put_ppl(s, &r, 1);
    r = record("beta", "k1", "abc123", 1);
    r.finished = 1700000200.0;
    put_ppl(s, &r, 1);
    r = record("alpha", "k2", "abc123", 1);
    r.finished = 1700000100.25;
    put_ppl(s, &r, 1);
    r = record("alpha", "k3", "abc123", 0);
    r.finished = 1700000050.0;
    put_ppl(s, &r, 1);

    struct lx_sweep_info *sw = NULL;
    int n = -1;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_sweeps(s, &sw, &n, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(sw[0].name, "alpha");
    cr_expect_eq(sw[0].n_ok, 2);
    cr_expect_eq(sw[0].n_failed, 1);
    cr_expect_str_eq(sw[0].last, "2023-11-14T22:15:00.250Z");
    cr_expect_str_eq(sw[1].name, "beta");
    cr_expect_eq(sw[1].n_ok, 1);
    cr_expect_eq(sw[1].n_failed, 0);
    cr_expect_str_eq(sw[1].last, "2023-11-14T22:16:40.000Z");
    lx_sweep_infos_free(sw, n);
    lx_store_close(s);

    /* An empty store has no sweeps. */
    unlink_db(db_path);
    s = open_rw(db_path);
    cr_assert_eq(lx_store_sweeps(s, &sw, &n, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(n, 0);
    lx_sweep_infos_free(sw, n);
    lx_store_close(s);
}

Test(store, readonly_missing_file_fails_without_creating)
{
    struct lx_store *s = (struct lx_store *)1;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_store_open(&s, db_path, 1, &err), LX_EIO);
    cr_expect_null(s);
    cr_expect(strstr(err.msg, db_path) != NULL, "message does not name the file: %s", err.msg);
    cr_expect(!exists(db_path), "a read-only open created %s", db_path);
}

Test(store, readonly_open_reads)
{
    struct lx_store *s = open_rw(db_path);
    struct lx_run_record r = record("sw", "key-1", "abc123", 1);
    put_ppl(s, &r, 1.25);
    lx_store_close(s);

    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_open(&s, db_path, 1, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(count(s, "runs"), 1);
    cr_expect_eq(done(s, "sw", "key-1"), 1);
    struct lx_rows rows = {0};
    select_rows(s, NULL, NULL, &rows);
    cr_assert_eq(rows.n, 1);
    cr_expect_eq(rows.rows[0].value, 1.25);
    lx_rows_release(&rows);
    /* Writes fail on a read-only store, with an error rather than a crash. */
    struct lx_run_record r2 = record("sw", "key-2", "abc123", 1);
    struct lx_result res = {0};
    lx_result_metric(&res, "ppl", 1);
    cr_expect_eq(lx_store_put(s, &r2, &res, &err), LX_EIO);
    lx_result_release(&res);
    cr_expect_eq(count(s, "runs"), 1);
    lx_store_close(s);
}

/* Raw answers of retrieval tasks: bytes back as written (quotes, newlines,
** non-ASCII), NaN depth as NULL, none for a failed cell. */
Test(store, outputs_round_trip)
{
    struct lx_store *s = open_rw(db_path);
    struct lx_run_record r = record("sw", "k-out", "c1", 1);
    struct lx_result res = {0};
    lx_result_metric(&res, "acc", 0.5);
    lx_result_output(&res, 0, 0.25, "48213", " 48213", 6, NULL, 1, -0.5);
    lx_result_output(&res, 1, NAN, "7", "it's \"7\"\n\xC3\xA9\xFF", 12, NULL, 0, -2.25);
    put(s, &r, &res);
    struct lx_run_record f = record("sw", "k-failed", "c1", 0);
    put(s, &f, &res);       /* a failed cell keeps no values and no outputs */
    lx_result_release(&res);
    cr_expect_eq(count(s, "outputs"), 2);
    lx_store_close(s);
    char v[256];
    sqlite_cli(db_path, "SELECT group_concat(hex(text), ',') FROM (SELECT text FROM outputs ORDER BY sample)", v,
               sizeof v);
    /* " 48213" and `it's "7"\n` é \xFF, by hand */
    cr_expect_str_eq(v, "203438323133,6974277320223722" "0A" "C3A9FF");
    sqlite_cli(db_path, "SELECT group_concat(coalesce(depth, 'null') || '/' || gold || '/' || score || '/' || logprob, "
               "' ') FROM (SELECT * FROM outputs ORDER BY sample)", v, sizeof v);
    cr_expect_str_eq(v, "0.25/48213/1/-0.5 null/7/0/-2.25");
}

/* Outputs are exact bytes (a 0 byte in the middle kept, where it was stored as
** an empty text) and a special token that ended one is recorded beside it in
** outputs.stop, so an EOS differs from a model writing the bytes "<eos>". */
Test(store, outputs_keep_zero_bytes_and_the_stop_token)
{
    struct lx_store *s = open_rw(db_path);
    struct lx_run_record r = record("sw", "k-bytes", "c1", 1);
    struct lx_result res = {0};
    lx_result_output(&res, 0, 0.5, "12345", "12\0" "345", 6, "eos", 0, -1.0);
    lx_result_output(&res, 1, 0.5, "7", "<eos>", 5, NULL, -1, -1.0);
    put(s, &r, &res);
    lx_result_release(&res);
    lx_store_close(s);
    char v[256];
    sqlite_cli(db_path, "SELECT group_concat(hex(text) || '/' || length(CAST(text AS BLOB)) || '/' || "
               "coalesce(stop, 'null'), ' ') FROM (SELECT * FROM outputs ORDER BY sample)", v, sizeof v);
    /* "12" 0 "345" and "<eos>", by hand */
    cr_expect_str_eq(v, "313200333435/6/eos 3C656F733E/5/null");
}

/* A version-2 database (no outputs table, no config_text or weights_sha256
** columns) is migrated in place, keeping its rows. */
Test(store, migrates_version_2)
{
    struct lx_store *s = open_rw(db_path);
    struct lx_run_record r = record("sw", "k-old", "c0", 1);
    put_ppl(s, &r, 3.5);
    lx_store_close(s);
    char cmd[512], v[64];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'DROP TABLE outputs; ALTER TABLE runs DROP COLUMN config_text;"
             " ALTER TABLE runs DROP COLUMN weights_sha256; DROP TABLE claims; ALTER TABLE models DROP COLUMN"
             " weights_sha256; ALTER TABLE models DROP COLUMN threads; PRAGMA user_version = 2'", db_path);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    sqlite_cli(db_path, "SELECT count(*) FROM sqlite_master WHERE name = 'outputs'", v, sizeof v);
    cr_assert_str_eq(v, "0", "the test's v2 database has no outputs table");
    s = open_rw(db_path);
    cr_expect_eq(count(s, "runs"), 1);
    cr_expect_eq(count(s, "metrics"), 1);
    struct lx_run_record r2 = record("sw", "k-new", "c1", 1);
    struct lx_result res = {0};
    lx_result_output(&res, 0, 0.5, "1", "1", 1, NULL, 1, 0.0);
    put(s, &r2, &res);
    lx_result_release(&res);
    cr_expect_eq(count(s, "outputs"), 1);
    lx_store_close(s);
    sqlite_cli(db_path, "PRAGMA user_version", v, sizeof v);
    cr_expect_str_eq(v, SCHEMA);
}

/* Every ppl row of a store, read through lx_store_select, in the order
** stored: "key=numerics/blas,..." or, with train, "key=train_len,...". */
static void ppl_rows(struct lx_store *s, int train, char *out, size_t n)
{
    struct lx_rows rows = {0};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_select(s, NULL, &rows, &err), LX_OK, "%s", err.msg);
    out[0] = '\0';
    for (int i = 0; i < rows.n; i++) {
        const struct lx_row *w = &rows.rows[i];
        if (strcmp(w->metric, "ppl") != 0)
            continue;
        snprintf(out + strlen(out), n - strlen(out), "%s%s=", out[0] ? "," : "", w->key);
        if (train)
            snprintf(out + strlen(out), n - strlen(out), "%ld", w->train_len);
        else
            snprintf(out + strlen(out), n - strlen(out), "%s/%s", w->numerics ? w->numerics : "(null)",
                     w->blas ? w->blas : "(null)");
    }
    lx_rows_release(&rows);
}

/* The store back to schema `version` without runs' column `col`. */
static void drop_run_column(const char *col, int version)
{
    char cmd[512], v[64], sql[128];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'ALTER TABLE runs DROP COLUMN %s; PRAGMA user_version = %d'", db_path,
             col, version);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info('runs') WHERE name = '%s'", col);
    sqlite_cli(db_path, sql, v, sizeof v);
    cr_assert_str_eq(v, "0", "the test's v%d database has no %s column", version, col);
}

/* A version-6 store (no runs.numerics) is read as it is (read-only: its rows
** ran the fast default) and migrated in place when opened to write: the old
** row reads fast, a new portable row reads portable. */
Test(store, migrates_version_6_old_rows_read_fast)
{
    struct lx_store *s = open_rw(db_path);
    struct lx_run_record r = record("sw", "k-old", "c0", 1);
    r.numerics = "portable";    /* dropped with the column below: the old row's mode is unknown */
    put_ppl(s, &r, 3.5);
    lx_store_close(s);
    char v[256];
    drop_run_column("numerics", 6);
    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_open(&s, db_path, 1, &err), LX_OK, "%s", err.msg);
    ppl_rows(s, 0, v, sizeof v);
    cr_expect_str_eq(v, "k-old=fast/Haswell openmp", "read-only, not migrated");
    lx_store_close(s);
    sqlite_cli(db_path, "PRAGMA user_version", v, sizeof v);
    cr_expect_str_eq(v, "6", "a read-only open migrates nothing");
    s = open_rw(db_path);
    struct lx_run_record r2 = record("sw", "k-new", "c1", 1);
    r2.numerics = "portable";
    put_ppl(s, &r2, 3.25);
    ppl_rows(s, 0, v, sizeof v);
    cr_expect_str_eq(v, "k-old=fast/Haswell openmp,k-new=portable/Haswell openmp");
    lx_store_close(s);
    sqlite_cli(db_path, "SELECT group_concat(key || ':' || coalesce(numerics, 'NULL'), ' ') FROM runs", v, sizeof v);
    cr_expect_str_eq(v, "k-old:NULL k-new:portable", "the old row keeps NULL: it is not rewritten");
    sqlite_cli(db_path, "PRAGMA user_version", v, sizeof v);
    cr_expect_str_eq(v, SCHEMA);
}

/* A version-7 store (no runs.train_len) is read as it is (read-only: its
** rows' training lengths unknown, 0) and migrated in place when opened to
** write: the old row keeps NULL, a new row reads its own length; a row whose
** model the models table knows reads that model's training length. */
Test(store, migrates_version_7_old_rows_keep_no_training_length)
{
    struct lx_store *s = open_rw(db_path);
    struct lx_run_record r = record("sw", "k-old", "c0", 1);
    put_ppl(s, &r, 3.5);
    lx_store_close(s);
    char cmd[512], v[256];
    drop_run_column("train_len", 7);
    struct lx_error err = {{0}};
    cr_assert_eq(lx_store_open(&s, db_path, 1, &err), LX_OK, "%s", err.msg);
    ppl_rows(s, 1, v, sizeof v);
    cr_expect_str_eq(v, "k-old=0", "read-only, not migrated");
    lx_store_close(s);
    sqlite_cli(db_path, "PRAGMA user_version", v, sizeof v);
    cr_expect_str_eq(v, "7", "a read-only open migrates nothing");
    s = open_rw(db_path);
    struct lx_run_record r2 = record("sw", "k-new", "c1", 1), r3 = record("sw", "k-trained", "c1", 1);
    r2.train_len = 96;
    r3.model_key = "trained";
    put_ppl(s, &r2, 3.25);
    put_ppl(s, &r3, 3.0);
    lx_store_close(s);
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' \"INSERT INTO models (key, name, config, path, sha256, steps, tokens, "
             "seconds, git_commit, created) VALUES ('trained', 't', '{\\\"train\\\":{\\\"length\\\":64}}', "
             "'x', 'x', 0, 0, 0, 'c', 't')\"", db_path);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    s = open_rw(db_path);
    ppl_rows(s, 1, v, sizeof v);
    cr_expect_str_eq(v, "k-old=0,k-new=96,k-trained=64");
    lx_store_close(s);
    sqlite_cli(db_path, "SELECT group_concat(key || ':' || coalesce(train_len, 'NULL'), ' ') FROM runs", v, sizeof v);
    cr_expect_str_eq(v, "k-old:NULL k-new:96 k-trained:512", "the old row keeps NULL: it is not rewritten");
    sqlite_cli(db_path, "PRAGMA user_version", v, sizeof v);
    cr_expect_str_eq(v, SCHEMA);
}

/* The outputs table has the same columns in the same order whether the store
** is fresh (its CREATE) or older and migrated (the ALTERs): the columns as
** results/store.h's struct lx_output and docs/results.md list them. */
Test(store, outputs_columns_fresh_and_migrated)
{
    static const char want[] = "run_id INTEGER,sample INTEGER,depth REAL,gold TEXT,text TEXT,score INTEGER,"
                               "logprob REAL,stop TEXT,prompt BLOB";
    static const char cols[] = "SELECT group_concat(name || ' ' || type, ',') FROM pragma_table_info('outputs')";
    struct lx_store *s = open_rw(db_path);
    lx_store_close(s);
    char v[512], cmd[512];
    sqlite_cli(db_path, cols, v, sizeof v);
    cr_expect_str_eq(v, want, "a fresh store");
    /* a version-5 store whose outputs lack both columns (the ALTERs look at the columns, not the version) */
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'ALTER TABLE outputs DROP COLUMN prompt; ALTER TABLE outputs DROP COLUMN"
             " stop; PRAGMA user_version = 5'", db_path);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    sqlite_cli(db_path, cols, v, sizeof v);
    cr_assert_str_eq(v, "run_id INTEGER,sample INTEGER,depth REAL,gold TEXT,text TEXT,score INTEGER,logprob REAL");
    s = open_rw(db_path);
    lx_store_close(s);
    sqlite_cli(db_path, cols, v, sizeof v);
    cr_expect_str_eq(v, want, "an older store migrated");
    sqlite_cli(db_path, "PRAGMA user_version", v, sizeof v);
    cr_expect_str_eq(v, SCHEMA);
}

Test(store, newer_schema_is_refused)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'PRAGMA user_version=99'", db_path);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    cr_assert(exists(db_path));

    struct lx_store *s = NULL;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_store_open(&s, db_path, 0, &err), LX_EIO);
    cr_expect_null(s);
    cr_expect(strstr(err.msg, "schema version 99") != NULL, "message: %s", err.msg);
    err.msg[0] = '\0';
    cr_expect_eq(lx_store_open(&s, db_path, 1, &err), LX_EIO);
    cr_expect_null(s);
    cr_expect(strstr(err.msg, "schema version 99") != NULL, "message: %s", err.msg);

    /* Refused means untouched: no tables added, the version kept. */
    char v[64];
    sqlite_cli(db_path, "SELECT count(*) FROM sqlite_master", v, sizeof v);
    cr_expect_str_eq(v, "0");
    sqlite_cli(db_path, "PRAGMA user_version", v, sizeof v);
    cr_expect_str_eq(v, "99");
}

/* Reproduces a store of schema version -1 refused as "...: not an error":
** a version below 1 is named, with the versions this lenx reads. */
Test(store, negative_schema_is_refused_by_its_version)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'CREATE TABLE runs (id); PRAGMA user_version=-1'", db_path);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    for (int readonly = 0; readonly < 2; readonly++) {
        struct lx_store *s = NULL;
        struct lx_error err = {{0}};
        cr_expect_eq(lx_store_open(&s, db_path, readonly, &err), LX_EIO);
        cr_expect_null(s);
        cr_expect(strstr(err.msg, "schema version -1") != NULL, "message: %s", err.msg);
        cr_expect(strstr(err.msg, "not an error") == NULL, "message: %s", err.msg);
        char want[64];
        snprintf(want, sizeof want, "1 to %d", LX_STORE_SCHEMA);
        cr_expect(strstr(err.msg, want) != NULL, "message names the versions read: %s", err.msg);
    }
    char v[64];
    sqlite_cli(db_path, "PRAGMA user_version", v, sizeof v);
    cr_expect_str_eq(v, "-1", "refused means untouched");
}

Test(store, readonly_foreign_database_is_refused)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'CREATE TABLE other (a)'", db_path);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    struct lx_store *s = NULL;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_store_open(&s, db_path, 1, &err), LX_EIO);
    cr_expect_null(s);
    cr_expect(strstr(err.msg, "not a lenx database") != NULL, "message: %s", err.msg);
}

Test(store, garbage_file_is_refused)
{
    FILE *f = fopen(db_path, "w");
    cr_assert(f != NULL);
    for (int i = 0; i < 64; i++)
        fputs("this is not an SQLite database\n", f);
    fclose(f);
    struct lx_store *s = NULL;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_store_open(&s, db_path, 0, &err), LX_EIO);
    cr_expect_null(s);
    cr_expect(strstr(err.msg, db_path) != NULL, "message: %s", err.msg);
}

Test(store, has_commit_by_prefix)
{
    struct lx_store *s = open_rw(db_path);
    cr_expect_eq(has_commit(s, "abc"), 0);
    struct lx_run_record r = record("sw", "key-1", "abcdef0123", 1);
    put_ppl(s, &r, 1);
    r = record("sw", "key-2", "unknown", 0);
    put_ppl(s, &r, 1);
    cr_expect_eq(has_commit(s, "abcdef0123"), 1);
    cr_expect_eq(has_commit(s, "abc"), 1);
    cr_expect_eq(has_commit(s, "a"), 1);
    cr_expect_eq(has_commit(s, "abd"), 0);
    cr_expect_eq(has_commit(s, "abcdef01234"), 0);
    cr_expect_eq(has_commit(s, "bcdef"), 0);
    /* Failed rows carry a commit too. */
    cr_expect_eq(has_commit(s, "unkn"), 1);
    lx_store_close(s);
}

/* lenx rm: deletes the chosen cells with their metrics, series and outputs
** (foreign keys on: the cascade really happens), in one transaction; the
** filters combine; a failed row matches --failed only. */
Test(store, rm_cascades_to_metrics_series_and_outputs)
{
    struct lx_store *s = open_rw(db_path);
    struct lx_run_record a = record("sw", "ka", "c1", 1), b = record("sw", "kb", "c1", 1);
    struct lx_run_record c = record("other", "ka", "c2", 1), d = record("sw", "kd", "c1", 0);
    b.method = "none";
    struct lx_result res = {0};
    lx_result_metric(&res, "acc", 0.5);
    lx_result_point(&res, "acc_by_depth", 0, 0.5);
    lx_result_output(&res, 0, 0.25, "1", "1", 1, NULL, 1, -0.5);
    put(s, &a, &res);
    put(s, &b, &res);
    put(s, &c, &res);
    put(s, &d, &res);
    lx_result_release(&res);
    cr_assert_eq(count(s, "runs"), 4);
    char out[64];
    sqlite_cli(db_path, "PRAGMA foreign_keys", out, sizeof out);
    cr_expect_str_eq(out, "0", "the sqlite3 CLI leaves them off: the store must turn them on itself");
    struct lx_error err = {{0}};
    struct lx_rm_filter f = {.sweep = "sw", .methods = "[\"logn(mode=ssmax,s=0.4)\"]"};
    struct lx_cell_info *cells;
    int n;
    cr_assert_eq(lx_store_rm(s, &f, 0, &cells, &n, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(n, 2, "ka and the failed kd; kb is another method, the other ka another sweep");
    cr_expect(n == 2 && !strcmp(cells[0].key, "ka") && !strcmp(cells[1].key, "kd") &&
              !strcmp(cells[1].status, "failed"));
    lx_cell_infos_free(cells, n);
    f.failed = 1;
    cr_assert_eq(lx_store_rm(s, &f, 1, &cells, &n, &err), LX_OK, "%s", err.msg);
    cr_expect(n == 1 && !strcmp(cells[0].key, "kd"), "the failed kd is deleted, and said to be");
    lx_cell_infos_free(cells, n);
    cr_expect_eq(count(s, "runs"), 3);
    f.failed = 0;
    f.not_in = "[\"ka\"]";        /* keep what the plan holds: nothing to do for ka */
    cr_assert_eq(lx_store_rm(s, &f, 1, &cells, &n, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(n, 0);
    lx_cell_infos_free(cells, n);
    f.not_in = "[]";
    cr_assert_eq(lx_store_rm(s, &f, 1, &cells, &n, &err), LX_OK, "%s", err.msg);
    cr_expect(n == 1 && !strcmp(cells[0].key, "ka"));
    lx_cell_infos_free(cells, n);
    /* the two cells left own exactly the values they had: 1 metric, 1 point, 1 output each */
    cr_expect_eq(count(s, "runs"), 2);
    cr_expect_eq(count(s, "metrics"), 2);
    cr_expect_eq(count(s, "series"), 2);
    cr_expect_eq(count(s, "outputs"), 2);
    lx_store_close(s);
    sqlite_cli(db_path, "select count(*) from metrics where run_id not in (select id from runs)", out, sizeof out);
    cr_expect_str_eq(out, "0");
}

/* Processes that open one new store at the same moment all get it: a fresh
** file is switched to WAL by whichever comes first, and SQLite answers a
** second switch that would deadlock with SQLITE_BUSY at once, without its
** busy handler (seen in CI as "r.db: database is locked" from one of four
** `lenx run`s of conc::four_runs_of_one_sweep_compute_each_cell_once). Eight
** children wait on a pipe, then each opens and closes the store twice; 50
** fresh files (before the fix, 6 to 21 of 800 opens failed in each of five
** runs of 100). */
Test(store, processes_opening_a_new_store_at_once_all_get_it, .init = setup, .fini = teardown, .timeout = 120)
{
    enum { KIDS = 8, ROUNDS = 50, OPENS = 2 };
    int failed = 0;
    char why[LX_ERR_MAX] = "";
    for (int round = 0; round < ROUNDS; round++) {
        unlink_db(db_path);
        int go[2], said[2];
        cr_assert_eq(pipe(go), 0);
        cr_assert_eq(pipe(said), 0);
        pid_t kid[KIDS];
        for (int k = 0; k < KIDS; k++) {
            fflush(NULL);
            kid[k] = fork();
            cr_assert_geq(kid[k], 0);
            if (kid[k] == 0) {
                char c;
                close(go[1]);
                close(said[0]);
                if (read(go[0], &c, 1) != 0)    /* blocks until the parent closes its end */
                    _exit(2);
                for (int i = 0; i < OPENS; i++) {
                    struct lx_store *s;
                    struct lx_error err;
                    if (lx_store_open(&s, db_path, 0, &err) < 0) {
                        char line[LX_ERR_MAX + 1];
                        int len = snprintf(line, sizeof line, "%.*s\n", LX_ERR_MAX - 1, err.msg);
                        _exit(write(said[1], line, (size_t)len) > 0 ? 1 : 3);
                    }
                    lx_store_close(s);
                }
                _exit(0);
            }
        }
        close(go[0]);
        close(said[1]);
        close(go[1]);       /* every child's read returns now */
        for (int k = 0; k < KIDS; k++) {
            int st;
            cr_assert_eq(waitpid(kid[k], &st, 0), kid[k]);
            failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
        }
        char got[4096];
        ssize_t n = read(said[0], got, sizeof got - 1);
        if (n > 0 && why[0] == '\0') {     /* the first message */
            got[n] = '\0';
            snprintf(why, sizeof why, "%.*s", (int)strcspn(got, "\n"), got);
        }
        close(said[0]);
    }
    cr_expect_eq(failed, 0, "%d of %d opens failed; one said: %s", failed, KIDS * ROUNDS, why);
}
