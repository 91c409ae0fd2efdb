/*
** results/store.c - SQLite behind one seam (the only includer of sqlite3.h).
**
** WAL mode, PRAGMA user_version for the schema version, prepared statements
** only, a busy timeout for concurrent writers, one transaction per cell.
*/
#define _POSIX_C_SOURCE 200809L
#include "results/store.h"
#include "harness/core/hash.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define SCHEMA_VERSION LX_STORE_SCHEMA  /* 2: models table, runs.model and runs.max_rss_kb; 3: outputs;
                                            ** 4: runs.config_text and runs.weights_sha256;
                                            ** 5: claims, models.weights_sha256 and models.threads,
                                            **    outputs.stop; 6: outputs.prompt; 7: runs.numerics;
                                            ** 8: runs.train_len */

struct lx_store {
    sqlite3 *db;        /* the connection */
    char *path;         /* the file, for messages */
    char *note;         /* a warning about the open (immutable beside a -wal file), or NULL */
    int has_numerics;   /* runs has its numerics column (schema 7; an older store opened read-only has not) */
    int has_train_len;  /* runs has its train_len column (schema 8; likewise) */
};

static const char *schema_sql =
    "CREATE TABLE IF NOT EXISTS runs ("
    "  id INTEGER PRIMARY KEY,"
    "  key TEXT NOT NULL,"              /* run key: hash of key_json */
    "  sweep TEXT NOT NULL,"
    "  method TEXT NOT NULL,"           /* canonical stack string */
    "  method_params TEXT NOT NULL,"    /* resolved stack, JSON */
    "  task TEXT NOT NULL,"             /* canonical task string */
    "  task_params TEXT NOT NULL,"      /* resolved task, JSON */
    "  key_json TEXT NOT NULL,"
    "  length INTEGER NOT NULL,"
    "  seed INTEGER NOT NULL,"
    "  model_key TEXT,"
    "  model TEXT,"                     /* the model's name in the sweep */
    "  status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),"
    "  error TEXT,"
    "  git_commit TEXT NOT NULL,"
    "  git_dirty INTEGER NOT NULL,"
    "  version TEXT NOT NULL,"
    "  threads INTEGER NOT NULL,"
    "  blas TEXT,"
    "  numerics TEXT,"                  /* 'fast' or 'portable'; NULL (rows before schema 7) reads as fast */
    "  host TEXT,"
    "  config TEXT,"
    "  started TEXT NOT NULL,"          /* ISO 8601, UTC */
    "  finished TEXT NOT NULL,"
    "  wall_s REAL NOT NULL,"
    "  max_rss_kb INTEGER,"             /* peak resident memory of the process so far */
    "  config_text TEXT,"               /* the sweep's YAML text (NULL before schema 4) */
    "  weights_sha256 TEXT,"            /* sha256 of the checkpoint the cell ran on */
    "  train_len INTEGER,"              /* the model's training length; NULL unknown (or before schema 8) */
    "  UNIQUE (sweep, key, git_commit, git_dirty));"
    "CREATE INDEX IF NOT EXISTS runs_by_key ON runs (key);"
    "CREATE TABLE IF NOT EXISTS metrics ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  name TEXT NOT NULL,"
    "  value REAL,"                     /* NULL for NaN */
    "  UNIQUE (run_id, name));"
    "CREATE TABLE IF NOT EXISTS series ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  series TEXT NOT NULL,"
    "  x REAL NOT NULL,"
    "  y REAL);"
    "CREATE INDEX IF NOT EXISTS series_by_run ON series (run_id);"
    "CREATE TABLE IF NOT EXISTS models ("
    "  key TEXT PRIMARY KEY,"           /* model key: hash of arch, train, stack, data, seed */
    "  name TEXT NOT NULL,"             /* the name in the sweep's models: */
    "  config TEXT NOT NULL,"           /* what the key hashes, JSON */
    "  path TEXT NOT NULL,"             /* the safetensors checkpoint */
    "  sha256 TEXT NOT NULL,"           /* of the checkpoint file */
    "  steps INTEGER NOT NULL,"
    "  tokens INTEGER NOT NULL,"        /* training tokens seen */
    "  seconds REAL NOT NULL,"          /* training wall time */
    "  train_loss REAL,"                /* mean loss of the last validation interval */
    "  val_loss REAL,"                  /* final validation loss */
    "  git_commit TEXT NOT NULL,"
    "  created TEXT NOT NULL,"
    "  weights_sha256 TEXT,"            /* of the tensor data, as embedded in the file (schema 5) */
    "  threads INTEGER);"               /* OpenMP threads of the training run (BLAS rounding follows it) */
    "CREATE TABLE IF NOT EXISTS claims ("     /* cells and model keys being worked on (schema 5) */
    "  sweep TEXT NOT NULL,"            /* the sweep, or '#model' for a model key */
    "  key TEXT NOT NULL,"              /* run key or model key */
    "  owner TEXT NOT NULL,"            /* host:pid:random */
    "  host TEXT NOT NULL,"
    "  pid INTEGER NOT NULL,"
    "  heartbeat REAL NOT NULL,"        /* Unix time of the owner's last sign of life */
    "  PRIMARY KEY (sweep, key));"
    "CREATE TABLE IF NOT EXISTS outputs ("    /* raw answers of retrieval tasks, for re-scoring */
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  sample INTEGER NOT NULL,"
    "  depth REAL,"                     /* NULL for NaN: no depth */
    "  gold TEXT NOT NULL,"
    "  text TEXT NOT NULL,"             /* the greedy output, as bytes */
    "  score INTEGER NOT NULL CHECK (score IN (-1, 0, 1)),"
    "  logprob REAL,"                   /* teacher-forced log p(gold) */
    "  stop TEXT,"                      /* the special token that ended the output, NULL when none did */
    "  prompt BLOB);"                   /* the prompt's bytes after BOS (lenx run --keep-prompts), or NULL */
    "CREATE INDEX IF NOT EXISTS outputs_by_run ON outputs (run_id);";

/* How long a connection waits for another's lock before it gives up. */
#define BUSY_TIMEOUT_MS 30000

/* The hint for a failed SQLite call, by its primary result code. */
static const char *db_hint(int code)
{
    switch (code & 0xff) {
    case SQLITE_NOTADB: return "the file is not an SQLite database: --db names a lenx store, or a new file to make one";
    case SQLITE_READONLY: return "this user may not write the store or its folder (SQLite writes FILE-wal and "
                                 "FILE-shm beside it); lenx table, compare and report still read it";
    case SQLITE_CANTOPEN: return "does its folder exist, and may this user create files in it?";
    case SQLITE_CORRUPT: return "the file is damaged (`sqlite3 FILE 'PRAGMA integrity_check'` says where): "
                                "restore a copy";
    case SQLITE_FULL: return "the disk is full: free space and run again (the cells stored so far are kept)";
    case SQLITE_BUSY: case SQLITE_LOCKED: return "another process held the database for 30 s: run again when it "
                                                 "is done";
    default: return "is another process holding the database, or is the disk full?";
    }
}

static int db_err(struct lx_store *s, struct lx_error *err, const char *doing)
{
    return lx_err(err, LX_EIO, "%s: %s: %s\n  hint: %s", s->path, doing, sqlite3_errmsg(s->db),
                  db_hint(sqlite3_extended_errcode(s->db)));
}

/* Start a write transaction now (BEGIN IMMEDIATE: waits for other writers
** up to the busy timeout); `doing` names it in the error. */
static int begin(struct lx_store *s, struct lx_error *err, const char *doing)
{
    return sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? LX_OK : db_err(s, err, doing);
}

/* End a write transaction: COMMIT when ok, else (or when COMMIT fails) an
** error saying what we were doing, and ROLLBACK. */
static int finish(struct lx_store *s, int ok, struct lx_error *err, const char *doing)
{
    if (ok && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
        return LX_OK;
    int code = db_err(s, err, doing);
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return code;
}

static int exec(struct lx_store *s, const char *sql, struct lx_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = lx_err(err, LX_EIO, "%s: %s", s->path, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return rc;
    }
    return LX_OK;
}

/* Does sql, with text parameters ?1 (and ?2 unless NULL), give a row? */
static int any_row(struct lx_store *s, const char *sql, const char *a1, const char *a2, int *found,
                   struct lx_error *err, const char *doing)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_err(s, err, doing);
    sqlite3_bind_text(st, 1, a1, -1, SQLITE_STATIC);
    if (a2)
        sqlite3_bind_text(st, 2, a2, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    *found = rc == SQLITE_ROW;
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? LX_OK : db_err(s, err, doing);
}

/* Does table have the column name? */
static int has_column(struct lx_store *s, const char *table, const char *name)
{
    int has = 0;
    any_row(s, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", table, name, &has, NULL, "");
    return has;
}

/* Columns older stores lack (outputs.stop, schema 5; outputs.prompt, 6;
** runs.numerics, 7; a fresh store's CREATE has them): each added by its own
** ALTER, guarded by the table's columns rather than the version, so they
** merge with other migrations; old rows keep NULL. */
static int add_column(struct lx_store *s, const char *table, const char *name, const char *type, struct lx_error *err)
{
    char sql[128];
    snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s %s", table, name, type);
    return has_column(s, table, name) ? LX_OK : exec(s, sql, err);
}

/* PRAGMA user_version into *v (a file may hold a negative one) and, read in
** the same statement (one snapshot: a store another process is making is
** made or empty), how many schema objects the file holds; -1 when unread. */
static int read_version(struct lx_store *s, int *v, int *objects)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT user_version, (SELECT count(*) FROM sqlite_master) FROM pragma_user_version",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    int got = sqlite3_step(st) == SQLITE_ROW;
    *v = got ? sqlite3_column_int(st, 0) : 0;
    *objects = got ? sqlite3_column_int(st, 1) : 0;
    sqlite3_finalize(st);
    return got ? 0 : -1;
}

/* Bring the schema to SCHEMA_VERSION in one immediate transaction, reading
** the version again inside it: processes that open an old file at once
** migrate it once. New columns here, new tables by CREATE ... IF NOT EXISTS. */
static int migrate(struct lx_store *s, struct lx_error *err)
{
    if (begin(s, err, "starting the schema migration") < 0)
        return LX_EIO;
    int v, objects, rc = read_version(s, &v, &objects) < 0 ? db_err(s, err, "reading the schema version") : LX_OK;
    if (rc == LX_OK && v == 1)
        rc = exec(s, "ALTER TABLE runs ADD COLUMN max_rss_kb INTEGER; ALTER TABLE runs ADD COLUMN model TEXT", err);
    if (rc == LX_OK && v >= 1 && v < 4)
        rc = exec(s, "ALTER TABLE runs ADD COLUMN config_text TEXT;"
                  " ALTER TABLE runs ADD COLUMN weights_sha256 TEXT", err);
    if (rc == LX_OK && v >= 2 && v < 5)
        rc = exec(s, "ALTER TABLE models ADD COLUMN weights_sha256 TEXT;"
                  " ALTER TABLE models ADD COLUMN threads INTEGER", err);
    if (rc == LX_OK && v >= 1 && v < 7)     /* old rows keep NULL: they ran the fast default */
        rc = add_column(s, "runs", "numerics", "TEXT", err);
    if (rc == LX_OK && v >= 1 && v < 8)     /* old rows keep NULL: their models' lengths were not recorded */
        rc = add_column(s, "runs", "train_len", "INTEGER", err);
    if (rc == LX_OK && v < SCHEMA_VERSION)
        rc = exec(s, schema_sql, err);
    if (rc == LX_OK && v < SCHEMA_VERSION)
        rc = add_column(s, "outputs", "stop", "TEXT", err);
    if (rc == LX_OK && v < SCHEMA_VERSION)
        rc = add_column(s, "outputs", "prompt", "BLOB", err);
    if (rc == LX_OK && v < SCHEMA_VERSION) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", SCHEMA_VERSION);
        rc = exec(s, sql, err);
    }
    if (rc == LX_OK)
        return finish(s, 1, err, "committing the schema migration");
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);     /* keep rc's own message */
    return rc;
}

/* PRAGMA journal_mode = WAL until SQLite says "wal". The switch takes an
** exclusive lock, and SQLite refuses a lock wait that could deadlock (two
** connections that read, each wanting to write) with SQLITE_BUSY at once,
** without the busy handler: processes opening one new store together meet it
** (tests/test_store.c). Tried again after 1, 2 ... 64 ms, up to the busy timeout. */
static int set_wal(struct lx_store *s, struct lx_error *err)
{
    for (long waited = 0, ms = 1;; waited += ms, ms = ms < 64 ? 2 * ms : ms) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL), wal = 0;
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
            wal = strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
        sqlite3_finalize(st);
        if (wal || ((rc & 0xff) != SQLITE_BUSY && rc != SQLITE_ROW) || waited >= BUSY_TIMEOUT_MS)
            return wal ? LX_OK : db_err(s, err, "switching to WAL mode");
        nanosleep(&(struct timespec){0, ms * 1000000L}, NULL);
    }
}

static int check_version(struct lx_store *s, int readonly, struct lx_error *err)
{
    int v, objects;
    if (read_version(s, &v, &objects) < 0)
        return db_err(s, err, "reading the schema version");
    if (v == 0 && (readonly || objects > 0))    /* empty or another program's: never made into a store */
        return lx_err(err, LX_EIO, "%s: not a lenx database%s\n  hint: --db names a lenx store, or a new file to "
                      "make one", s->path, objects > 0 ? " (it holds tables lenx did not make)" : "");
    if (v < 0)
        return lx_err(err, LX_EIO, "%s: schema version %d is not one lenx wrote (it reads 1 to %d)\n"
                      "  hint: the file was altered or made by another program; use --db another file",
                      s->path, v, SCHEMA_VERSION);
    if (v > SCHEMA_VERSION)
        return lx_err(err, LX_EIO, "%s: schema version %d is newer than this lenx (%d)\n"
                      "  hint: use a newer lenx, or --db another file", s->path, v, SCHEMA_VERSION);
    /* Only a database we accept is switched to WAL. */
    int rc = readonly ? LX_OK : set_wal(s, err);
    return rc == LX_OK && !readonly && v < SCHEMA_VERSION ? migrate(s, err) : rc;
}

static int db_connect(struct lx_store *s, const char *name, int flags, struct lx_error *err)
{
    if (sqlite3_open_v2(name, &s->db, flags, NULL) != SQLITE_OK)
        return db_err(s, err, "opening");
    sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
    return exec(s, "PRAGMA foreign_keys = ON", err);
}

/* Read-only: a plain read-only open first. Reading a WAL database needs its
** -shm file; when SQLite may not create it (another user's folder, a
** read-only mount) the first read fails with a read-only or cannot-open
** error, and the file is opened immutable instead: SQLite then takes no
** locks and ignores a -wal file, so rows not yet checkpointed into the main
** file are not seen (said in s->note when a -wal file is there). */
static int open_readonly(struct lx_store *s, struct lx_error *err)
{
    int rc = db_connect(s, s->path, SQLITE_OPEN_READONLY, err);
    if (rc == LX_OK)
        rc = check_version(s, 1, err);
    int code = s->db ? sqlite3_errcode(s->db) : SQLITE_OK;
    if (rc == LX_OK || (code != SQLITE_READONLY && code != SQLITE_CANTOPEN))
        return rc;
    sqlite3_close(s->db);
    s->db = NULL;
    char *uri = lx_file_uri(s->path, "immutable=1");
    rc = db_connect(s, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, err);
    free(uri);
    if (rc == LX_OK)
        rc = check_version(s, 1, err);
    struct lx_buf wal = {0};
    struct stat sb;
    lx_buf_printf(&wal, "%s-wal", s->path);
    if (rc == LX_OK && stat(lx_buf_str(&wal), &sb) == 0 && sb.st_size > 0) {
        struct lx_buf n = {0};
        lx_buf_printf(&n, "%s: read as an immutable file (SQLite may not create %s-shm here); rows in %s "
                      "that are not yet checkpointed are not shown\n  hint: ask the owner to open it "
                      "once (any lenx run or sqlite3 query checkpoints it), or copy the three files",
                      s->path, s->path, lx_buf_str(&wal));
        s->note = n.s;
    }
    lx_buf_free(&wal);
    return rc;
}

int lx_store_open(struct lx_store **out, const char *path, int readonly, struct lx_error *err)
{
    *out = NULL;
    struct stat sb;
    int there = stat(path, &sb) == 0;
    if (readonly && !there)
        return lx_err(err, LX_EIO, "%s: no such database\n  hint: run a sweep first "
                      "(`lenx run CONFIG`), or pass --db FILE", path);
    if (there && S_ISDIR(sb.st_mode))
        return lx_err(err, LX_EIO, "%s: is a directory, not a store\n  hint: --db names the store's file, e.g. "
                      "--db %s/lenx.db", path, path);
    if (!readonly)
        lx_make_parent_dir(path);
    struct lx_store *s = lx_xcalloc(1, sizeof *s);
    s->path = lx_xstrdup(path);
    int rc = readonly ? open_readonly(s, err)
                      : db_connect(s, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err);
    if (rc == LX_OK && !readonly)
        rc = check_version(s, 0, err);
    if (rc == LX_OK)
        s->has_numerics = has_column(s, "runs", "numerics"), s->has_train_len = has_column(s, "runs", "train_len");
    if (rc < 0) {
        lx_store_close(s);
        return rc;
    }
    *out = s;
    return LX_OK;
}

const char *lx_store_note(const struct lx_store *s)
{
    return s ? s->note : NULL;
}

void lx_store_close(struct lx_store *s)
{
    if (!s)
        return;
    sqlite3_close(s->db);
    free(s->path);
    free(s->note);
    free(s);
}

int lx_store_done(struct lx_store *s, const char *sweep, const char *key, int *done, struct lx_error *err)
{
    return any_row(s, "SELECT 1 FROM runs WHERE sweep = ?1 AND key = ?2 AND status = 'ok' LIMIT 1", sweep, key,
                   done, err, "looking up a cell");
}

static void bind_real(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

static int insert_run(struct lx_store *s, const struct lx_run_record *r, sqlite3_int64 *id)
{
    static const char *sql =
        "INSERT INTO runs (key, sweep, method, method_params, task, task_params, key_json, length,"
        " seed, model_key, status, error, git_commit, git_dirty, version, threads, blas, host,"
        " config, started, finished, wall_s, max_rss_kb, model, config_text, weights_sha256, numerics, train_len)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
        " ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28)";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return SQLITE_ERROR;
    char t0[48], t1[48];
    lx_iso_time(r->started, t0);
    lx_iso_time(r->finished, t1);
    const char *text[] = {  /* ?1 ... ?27's text, NULL where a number goes (or a NULL text) */
        r->key, r->sweep, r->method, r->method_json, r->task, r->task_json, r->key_json, NULL, NULL, r->model_key,
        r->ok ? "ok" : "failed", r->error, r->commit, NULL, r->version, NULL, r->blas, r->host, r->config, t0, t1,
        NULL, NULL, r->model, r->config_text, r->weights_sha256, r->numerics ? r->numerics : "fast"};
    for (int i = 0; i < 27; i++)
        sqlite3_bind_text(st, i + 1, text[i], -1, SQLITE_STATIC);   /* t0, t1 outlive the statement */
    sqlite3_bind_int64(st, 8, r->length);
    sqlite3_bind_int64(st, 9, r->seed);
    sqlite3_bind_int(st, 14, r->dirty);
    sqlite3_bind_int(st, 16, r->threads);
    sqlite3_bind_double(st, 22, r->finished - r->started);
    if (r->max_rss_kb > 0)
        sqlite3_bind_int64(st, 23, r->max_rss_kb);
    if (r->train_len > 0)
        sqlite3_bind_int64(st, 28, r->train_len);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    *id = sqlite3_last_insert_rowid(s->db);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int insert_values(struct lx_store *s, sqlite3_int64 id, const struct lx_result *res)
{
    sqlite3_stmt *m = NULL, *p = NULL;
    int rc = sqlite3_prepare_v2(s->db, "INSERT INTO metrics (run_id, name, value) VALUES (?1, ?2, ?3)",
                                -1, &m, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(s->db, "INSERT INTO series (run_id, series, x, y) VALUES (?1, ?2, ?3, ?4)",
                                -1, &p, NULL);
    for (int i = 0; res && i < res->n_metrics && rc == SQLITE_OK; i++) {
        sqlite3_reset(m);
        sqlite3_bind_int64(m, 1, id);
        sqlite3_bind_text(m, 2, res->metrics[i].name, -1, SQLITE_STATIC);
        bind_real(m, 3, res->metrics[i].value);
        rc = sqlite3_step(m) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    for (int i = 0; res && i < res->n_points && rc == SQLITE_OK; i++) {
        sqlite3_reset(p);
        sqlite3_bind_int64(p, 1, id);
        sqlite3_bind_text(p, 2, res->points[i].series, -1, SQLITE_STATIC);
        sqlite3_bind_double(p, 3, res->points[i].x);
        bind_real(p, 4, res->points[i].y);
        rc = sqlite3_step(p) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_stmt *o = NULL;
    if (rc == SQLITE_OK && res && res->n_outputs)
        rc = sqlite3_prepare_v2(s->db, "INSERT INTO outputs (run_id, sample, depth, gold, text, score, logprob, stop,"
                                " prompt) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", -1, &o, NULL);
    for (int i = 0; o && i < res->n_outputs && rc == SQLITE_OK; i++) {
        const struct lx_output *x = &res->outputs[i];
        sqlite3_reset(o);
        sqlite3_bind_int64(o, 1, id);
        sqlite3_bind_int64(o, 2, x->sample);
        bind_real(o, 3, x->depth);
        sqlite3_bind_text(o, 4, x->gold, -1, SQLITE_STATIC);
        sqlite3_bind_blob(o, 5, x->text, (int)x->n_text, SQLITE_STATIC);   /* exact bytes, 0 included */
        sqlite3_bind_int(o, 6, x->score);
        bind_real(o, 7, x->logprob);
        if (x->stop)
            sqlite3_bind_text(o, 8, x->stop, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(o, 8);
        if (x->prompt)      /* exact bytes, as the output's */
            sqlite3_bind_blob(o, 9, x->prompt, (int)x->n_prompt, SQLITE_STATIC);
        else
            sqlite3_bind_null(o, 9);
        rc = sqlite3_step(o) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(m);
    sqlite3_finalize(p);
    sqlite3_finalize(o);
    return rc;
}

/* Run sql (a statement on the cell's sweep ?1, key ?2, commit ?3, dirty ?4);
** *row = 1 when it returned a row. */
static int cell_stmt(struct lx_store *s, const char *sql, const struct lx_run_record *rec, int *row)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_text(st, 1, rec->sweep, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, rec->key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, rec->commit, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, rec->dirty);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (row)
        *row = rc == SQLITE_ROW;
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
}

int lx_store_put(struct lx_store *s, const struct lx_run_record *rec, const struct lx_result *res,
                 struct lx_error *err)
{
    if (begin(s, err, "starting a transaction") < 0)
        return LX_EIO;
    /* A failed cell never replaces an ok row of the same cell and commit. */
    int kept = 0, rc = rec->ok ? SQLITE_OK
                              : cell_stmt(s, "SELECT 1 FROM runs WHERE sweep = ?1 AND key = ?2 AND git_commit = ?3"
                                          " AND git_dirty = ?4 AND status = 'ok'", rec, &kept);
    if (rc == SQLITE_OK && kept) {
        if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
            return LX_STORE_KEPT;
        rc = SQLITE_ERROR;
    }
    if (rc == SQLITE_OK)
        rc = cell_stmt(s, "DELETE FROM runs WHERE sweep = ?1 AND key = ?2 AND git_commit = ?3 AND git_dirty = ?4",
                       rec, NULL);
    sqlite3_int64 id = 0;
    if (rc == SQLITE_OK)
        rc = insert_run(s, rec, &id);
    if (rc == SQLITE_OK)
        rc = insert_values(s, id, rec->ok ? res : NULL);
    return finish(s, rc == SQLITE_OK, err, "storing a cell");
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

/* The newest ok row of each (sweep, key) that matches, joined to its metrics
** or to the points of one series (?3): the first %s names the value columns
** (name, value, x). Column 12 is what a cell's configuration hash (its
** lx_sha256_key) is of: its key JSON without length and seed, the model key
** replaced by the model's configuration without its seed (a trained model's
** seed, or a fine-tuned checkpoint's finetune.seed; the model key itself when
** the models table does not know it). Cells that differ only in seed share it,
** so they pool as seeds. Column 13 is the model's training length: a trained
** model's, else the cell's own (a brought checkpoint's or a server's, schema
** 8), else 0; 14 the numerics. Then the table joined. */
static const char select_rows[] =
    "SELECT r.id, r.sweep, r.method || coalesce(' @' || r.model, ''), r.task, r.key, r.git_commit,"
    " r.length, r.seed, %s, coalesce(r.model_key, ''),"
    " json_remove(json_set(r.key_json, '$.model',"
    "   coalesce(json_remove(mo.config, '$.seed', '$.finetune.seed'), r.model_key)),"
    "   '$.length', '$.seed'), coalesce(json_extract(mo.config, '$.train.length'), %s, 0), %s,"
    " coalesce(r.blas, '')"
    " FROM runs r %s LEFT JOIN models mo ON mo.key = r.model_key"
    " WHERE r.id IN (SELECT max(id) FROM runs WHERE status = 'ok'"
    "   AND (?1 IS NULL OR sweep = ?1)"
    "   AND (?2 IS NULL OR substr(git_commit, 1, length(?2)) = ?2)"
    "   GROUP BY sweep, key)"
    " ORDER BY r.id, m.rowid";

int lx_store_select(struct lx_store *s, const struct lx_filter *f, struct lx_rows *out,
                    struct lx_error *err)
{
    /* a store older than schema 7 (8) opened read-only has no numerics (train_len) column: its rows ran fast
    ** (their models' training lengths were not recorded) */
    int series = f && f->series;
    char sql[sizeof select_rows + 256];
    snprintf(sql, sizeof sql, select_rows, series ? "m.series, m.y, m.x" : "m.name, m.value, NULL",
             s->has_train_len ? "r.train_len" : "NULL", s->has_numerics ? "coalesce(r.numerics, 'fast')" : "'fast'",
             series ? "JOIN series m ON m.run_id = r.id AND m.series = ?3" : "JOIN metrics m ON m.run_id = r.id");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_err(s, err, "reading results");
    sqlite3_bind_text(st, 1, f ? f->sweep : NULL, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, f ? f->commit : NULL, -1, SQLITE_STATIC);
    if (f && f->series)
        sqlite3_bind_text(st, 3, f->series, -1, SQLITE_STATIC);
    int rc;
    long last_id = -1;
    char config[17] = "";
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        long id = (long)sqlite3_column_int64(st, 0);
        if (id != last_id)      /* rows of one run are adjacent: hash once per run */
            lx_sha256_key(col_text(st, 12), config);
        last_id = id;
        int t9 = sqlite3_column_type(st, 9), t10 = sqlite3_column_type(st, 10);
        int bad = t9 == SQLITE_TEXT || t9 == SQLITE_BLOB ? 9 : t10 == SQLITE_TEXT || t10 == SQLITE_BLOB ? 10 : 0;
        if (bad) {      /* text or a blob, never read as 0: a foreign or edited file (lenx merge refuses one) */
            rc = lx_err(err, LX_EIO, "%s: run %ld (sweep '%s', %s, %s, length %lld): %s '%s' holds '%.40s' as its %s, "
                        "not a number\n  hint: the file was edited or written by another program; `lenx rm` the cell "
                        "and run it again", s->path, id, col_text(st, 1), col_text(st, 3), col_text(st, 2),
                        sqlite3_column_int64(st, 6), f && f->series ? "series" : "metric", col_text(st, 8),
                        col_text(st, bad), bad == 10 ? "x" : f && f->series ? "y" : "value");
            return sqlite3_finalize(st), rc;
        }
        double v = t9 == SQLITE_NULL ? NAN : sqlite3_column_double(st, 9);
        lx_rows_add(out, col_text(st, 1), col_text(st, 2), col_text(st, 3), col_text(st, 4),
                    col_text(st, 5), (long)sqlite3_column_int64(st, 6), (long)sqlite3_column_int64(st, 7),
                    col_text(st, 8), v, id);
        lx_rows_set_origin(out, out->n - 1, col_text(st, 11), config);
        if (t10 != SQLITE_NULL)
            out->rows[out->n - 1].x = sqlite3_column_double(st, 10);
        out->rows[out->n - 1].train_len = (long)sqlite3_column_int64(st, 13);
        lx_rows_set_kernels(out, out->n - 1, col_text(st, 14), col_text(st, 15));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? LX_OK : db_err(s, err, "reading results");
}

/* Room for one more element at the end of a growing array: the new element
** (*n counts it). */
static void *grow(void **v, int *n, int *cap, size_t size)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        *v = lx_xrealloc(*v, (size_t)*cap * size);
    }
    return (char *)*v + (size_t)(*n)++ * size;
}

int lx_store_count(struct lx_store *s, const char *table, long *n, struct lx_error *err)
{
    char sql[96];
    LX_ASSERT(!strcmp(table, "runs") || !strcmp(table, "metrics") || !strcmp(table, "series") ||
              !strcmp(table, "models") || !strcmp(table, "outputs"));
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_err(s, err, "counting rows");
    int rc = sqlite3_step(st);
    *n = rc == SQLITE_ROW ? (long)sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? LX_OK : db_err(s, err, "counting rows");
}

int lx_store_has_commit(struct lx_store *s, const char *prefix, int *found, struct lx_error *err)
{
    return any_row(s, "SELECT 1 FROM runs WHERE substr(git_commit, 1, length(?1)) = ?1 LIMIT 1", prefix, NULL, found,
                   err, "looking up a commit");
}

int lx_store_model_put(struct lx_store *s, const struct lx_model_record *r, struct lx_error *err)
{
    /* a trained model replaces its row; a file found in the cache keeps the
    ** row's training statistics and updates what names the file */
#define MODEL_ROW                                                                                                \
    " INTO models (key, name, config, path, sha256, steps, tokens, seconds, train_loss, val_loss, git_commit,"  \
    " created, weights_sha256, threads) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
    static const char *trained = "INSERT OR REPLACE" MODEL_ROW;
    static const char *from_file = "INSERT" MODEL_ROW " ON CONFLICT (key) DO UPDATE SET path = excluded.path,"
                                   " sha256 = excluded.sha256, weights_sha256 = excluded.weights_sha256";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, r->from_file ? from_file : trained, -1, &st, NULL) != SQLITE_OK)
        return db_err(s, err, "preparing to record a model");
    char now[48];
    lx_iso_time((double)time(NULL), now);
    const char *text[] = {r->key, r->name, r->config, r->path, r->sha256};
    for (int i = 0; i < 5; i++)
        sqlite3_bind_text(st, i + 1, text[i], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, r->steps);
    sqlite3_bind_int64(st, 7, r->tokens);
    sqlite3_bind_double(st, 8, r->seconds);
    bind_real(st, 9, r->train_loss);
    bind_real(st, 10, r->val_loss);
    sqlite3_bind_text(st, 11, r->commit, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 12, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 13, r->weights_sha256, -1, SQLITE_STATIC);
    if (r->threads > 0)
        sqlite3_bind_int(st, 14, r->threads);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? LX_OK : db_err(s, err, "recording a model");
}

/* ---- lenx rm: one WHERE clause for the listing and the delete ---- */

#define RM_WHERE                                                                       \
    " WHERE (?1 IS NULL OR sweep = ?1)"                                                \
    " AND (?2 IS NULL OR substr(git_commit, 1, length(?2)) = ?2)"                      \
    " AND (?3 IS NULL OR model = ?3 OR (substr(model_key, 1, length(?3)) = ?3"          \
    "   AND NOT EXISTS (SELECT 1 FROM runs n WHERE n.model = ?3)))"                    \
    " AND (?4 IS NULL OR method IN (SELECT value FROM json_each(?4)))"                 \
    " AND (?5 IS NULL OR task = ?5 OR substr(task, 1, length(?5) + 1) = ?5 || '(')"    \
    " AND (?6 = 0 OR status = 'failed')"                                               \
    " AND (?7 IS NULL OR key NOT IN (SELECT value FROM json_each(?7)))"

static void bind_rm(sqlite3_stmt *st, const struct lx_rm_filter *f)
{
    const char *text[] = {f->sweep, f->commit, f->model, f->methods, f->task};
    for (int i = 0; i < 5; i++)
        sqlite3_bind_text(st, i + 1, text[i], -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 6, f->failed);
    sqlite3_bind_text(st, 7, f->not_in, -1, SQLITE_STATIC);
}

void lx_cell_infos_free(struct lx_cell_info *v, int n)
{
    for (int i = 0; i < n; i++) {
        struct lx_cell_info *w = &v[i];
        free(w->sweep), free(w->key), free(w->status), free(w->method), free(w->task), free(w->model);
        free(w->model_key), free(w->commit), free(w->error);
    }
    free(v);
}

/* Is PRAGMA foreign_keys on for this connection? Without it, deleting a run
** would leave its metrics, series and outputs behind. */
static int foreign_keys_on(struct lx_store *s, int *on)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA foreign_keys", -1, &st, NULL) != SQLITE_OK)
        return SQLITE_ERROR;
    int rc = sqlite3_step(st);
    *on = rc == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? SQLITE_OK : SQLITE_ERROR;
}

/* The cells f selects into *out (*n of them): SQLITE_DONE, or an SQLite error code. */
static int list_cells(struct lx_store *s, const struct lx_rm_filter *f, struct lx_cell_info **out, int *n)
{
    static const char *sql = "SELECT sweep, key, status, method, task, model, model_key, git_commit, length, seed"
                             " FROM runs" RM_WHERE " ORDER BY id";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return SQLITE_ERROR;
    bind_rm(st, f);
    int rc, cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct lx_cell_info *w = grow((void **)out, n, &cap, sizeof **out);
        char **text[] = {&w->sweep, &w->key, &w->status, &w->method, &w->task, &w->model, &w->model_key, &w->commit};
        for (int i = 0; i < 8; i++)
            *text[i] = lx_xstrdup(col_text(st, i));
        w->length = (long)sqlite3_column_int64(st, 8);
        w->seed = (long)sqlite3_column_int64(st, 9);
        w->error = NULL;
    }
    sqlite3_finalize(st);
    return rc;
}

int lx_store_rm(struct lx_store *s, const struct lx_rm_filter *f, int del, struct lx_cell_info **cells, int *n,
                struct lx_error *err)
{
    *cells = NULL;
    *n = 0;
    int on = 0;
    if (del && foreign_keys_on(s, &on) != SQLITE_OK)
        return db_err(s, err, "reading PRAGMA foreign_keys");
    LX_ASSERT(!del || on);      /* every open turns them on */
    if (del && begin(s, err, "starting a transaction") < 0)
        return LX_EIO;
    int rc = list_cells(s, f, cells, n) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    sqlite3_stmt *st;
    if (del && rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(s->db, "DELETE FROM runs" RM_WHERE, -1, &st, NULL);
    if (del && rc == SQLITE_OK) {
        bind_rm(st, f);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
        sqlite3_finalize(st);
        LX_ASSERT(rc != SQLITE_OK || sqlite3_changes(s->db) == *n);    /* one transaction: what was listed */
    }
    rc = del ? finish(s, rc == SQLITE_OK, err, "deleting cells") : rc == SQLITE_OK ? LX_OK
                                                                  : db_err(s, err, "listing cells");
    if (rc < 0) {
        lx_cell_infos_free(*cells, *n);
        *cells = NULL, *n = 0;
    }
    return rc;
}

/* ---- claims: several processes on one store ---------------------------------
**
** A claim row says "owner is working on (sweep, key)". It is taken in an
** immediate transaction that also checks whether the cell is already stored,
** so two processes never both decide to run a cell. A claim whose owner is
** dead is taken over: on the same host when its pid no longer exists, on any
** host when its heartbeat is older than LX_CLAIM_STALE_S. */

const char *lx_store_path(const struct lx_store *s)
{
    return s->path;
}

const char *lx_store_numerics_sql(const struct lx_store *s)
{
    return s->has_numerics ? "coalesce(numerics, 'fast')" : "'fast'";
}

/* Is the holder of a claim gone? */
static int owner_dead(const struct lx_owner *me, const char *host, long pid, double heartbeat)
{
    if ((double)time(NULL) - heartbeat > LX_CLAIM_STALE_S)
        return 1;
    return strcmp(host, me->host) == 0 && pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Inside the claim transaction: the state of (sweep, key) for me. */
static int claim_state(struct lx_store *s, const char *sweep, const char *key, const struct lx_owner *me,
                       int check_done, enum lx_claim *out)
{
    sqlite3_stmt *st;
    int rc, done = 0;
    struct lx_error ignored;
    *out = LX_CLAIM_GOT;
    if (check_done && lx_store_done(s, sweep, key, &done, &ignored) < 0)
        return SQLITE_ERROR;
    if (done) {
        *out = LX_CLAIM_DONE;
        return SQLITE_OK;
    }
    if ((rc = sqlite3_prepare_v2(s->db, "SELECT owner, host, pid, heartbeat FROM claims WHERE sweep = ?1"
                                 " AND key = ?2", -1, &st, NULL)) != SQLITE_OK)
        return rc;
    sqlite3_bind_text(st, 1, sweep, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && strcmp(col_text(st, 0), me->id) != 0 &&
        !owner_dead(me, col_text(st, 1), (long)sqlite3_column_int64(st, 2), sqlite3_column_double(st, 3)))
        *out = LX_CLAIM_BUSY;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int lx_store_claim(struct lx_store *s, const char *sweep, const char *key, const struct lx_owner *me,
                   int check_done, enum lx_claim *out, struct lx_error *err)
{
    if (begin(s, err, "starting a transaction to claim a cell") < 0)
        return LX_EIO;
    int rc = claim_state(s, sweep, key, me, check_done, out);
    sqlite3_stmt *st = NULL;
    if (rc == SQLITE_OK && *out == LX_CLAIM_GOT)
        rc = sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO claims (sweep, key, owner, host, pid, heartbeat)"
                                " VALUES (?1, ?2, ?3, ?4, ?5, ?6)", -1, &st, NULL);
    if (st) {
        sqlite3_bind_text(st, 1, sweep, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, me->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, me->host, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, me->pid);
        sqlite3_bind_double(st, 6, (double)time(NULL));
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
        sqlite3_finalize(st);
    }
    return finish(s, rc == SQLITE_OK, err, "claiming a cell");
}

/* One statement on the claims of owner (?1), optionally of one (sweep ?2, key ?3). */
static int owner_stmt(struct lx_store *s, const char *sql, const char *owner, const char *sweep, const char *key,
                      struct lx_error *err, const char *doing)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_err(s, err, doing);
    sqlite3_bind_text(st, 1, owner, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, sweep, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, key, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, (double)time(NULL));
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? LX_OK : db_err(s, err, doing);
}

int lx_store_unclaim(struct lx_store *s, const char *sweep, const char *key, const char *owner, struct lx_error *err)
{
    return owner_stmt(s, "DELETE FROM claims WHERE owner = ?1 AND (?2 IS NULL OR (sweep = ?2 AND key = ?3))"
                      " AND ?4 IS NOT NULL", owner, sweep, key, err, "releasing a claim");
}

int lx_store_heartbeat(struct lx_store *s, const char *owner, struct lx_error *err)
{
    return owner_stmt(s, "UPDATE claims SET heartbeat = ?4 WHERE owner = ?1 AND ?2 IS NULL AND ?3 IS NULL",
                      owner, NULL, NULL, err, "refreshing claims");
}

int lx_store_reap(struct lx_store *s, const struct lx_owner *me, struct lx_error *err)
{
    if (begin(s, err, "starting a transaction to clear dead claims") < 0)
        return LX_EIO;
    sqlite3_stmt *st, *del = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT owner, host, pid, heartbeat, rowid FROM claims", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(s->db, "DELETE FROM claims WHERE rowid = ?1", -1, &del, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        if (strcmp(col_text(st, 0), me->id) == 0 ||
            !owner_dead(me, col_text(st, 1), (long)sqlite3_column_int64(st, 2), sqlite3_column_double(st, 3)))
            continue;
        sqlite3_reset(del);
        sqlite3_bind_int64(del, 1, sqlite3_column_int64(st, 4));
        rc = sqlite3_step(del) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    sqlite3_finalize(del);
    return finish(s, rc == SQLITE_DONE, err, "clearing dead claims");
}

/* ---- statements of the other results/ modules (merge.c) ------------------- */

int lx_store_begin(struct lx_store *s, const char *doing, struct lx_error *err)
{
    return begin(s, err, doing);
}

int lx_store_end(struct lx_store *s, int commit, const char *doing, struct lx_error *err)
{
    /* finish(s, 0, ...) would roll back too, but report an error */
    return commit ? finish(s, 1, err, doing) : (sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL), LX_OK);
}

static void bind_value(sqlite3_stmt *st, int i, const struct lx_value *v)
{
    switch (v->type) {
    case LX_V_NULL: sqlite3_bind_null(st, i); break;
    case LX_V_INT: sqlite3_bind_int64(st, i, v->i); break;
    case LX_V_REAL: sqlite3_bind_double(st, i, v->d); break;
    case LX_V_TEXT: sqlite3_bind_text(st, i, v->p, v->n, SQLITE_STATIC); break;
    case LX_V_BLOB: sqlite3_bind_blob(st, i, v->p, v->n, SQLITE_STATIC); break;
    }
}

static void column_value(sqlite3_stmt *st, int i, struct lx_value *v)
{
    memset(v, 0, sizeof *v);
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER: v->type = LX_V_INT; v->i = sqlite3_column_int64(st, i); break;
    case SQLITE_FLOAT: v->type = LX_V_REAL; v->d = sqlite3_column_double(st, i); break;
    case SQLITE_TEXT: v->type = LX_V_TEXT; v->p = sqlite3_column_text(st, i); break;
    case SQLITE_BLOB: v->type = LX_V_BLOB; v->p = sqlite3_column_blob(st, i); break;
    default: v->type = LX_V_NULL; return;
    }
    if (v->type == LX_V_TEXT || v->type == LX_V_BLOB)
        v->n = sqlite3_column_bytes(st, i);
}

int lx_store_query(struct lx_store *s, const char *sql, const struct lx_value *args, int n_args,
                   int (*row)(void *ctx, const struct lx_value *cols, int n_cols), void *ctx,
                   struct lx_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_err(s, err, "preparing a statement");
    for (int i = 0; i < n_args; i++)
        bind_value(st, i + 1, &args[i]);
    int n = sqlite3_column_count(st), rc, out = LX_OK;
    LX_ASSERT(n <= LX_STORE_MAX_COLS);
    struct lx_value cols[LX_STORE_MAX_COLS];
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && out == LX_OK) {
        for (int i = 0; i < n; i++)
            column_value(st, i, &cols[i]);
        out = row ? row(ctx, cols, n) : LX_OK;
    }
    if (out == LX_OK && rc != SQLITE_DONE)
        out = db_err(s, err, "running a statement");
    sqlite3_finalize(st);
    return out;
}
