/*
** results/store.h - the SQLite result store (docs/results.md#the-store).
**
** results/store.c is the only file that includes <sqlite3.h>. Tables:
**   runs     one row per finished cell (ok or failed) with its provenance
**   metrics  (run, name, value)
**   series   (run, series, x, y)
**   models   trained or cached checkpoints
**   claims   cells and model keys that running processes are working on
** A cell is written in one transaction; a cell is "done" in a sweep when an ok
** row with its run key exists there. Rows are unique per (sweep, key, commit,
** dirty): recomputing at the same commit replaces (except that a failed row
** never replaces an ok one), at another commit adds. Claims let several
** processes share a store: see lx_store_claim.
*/
#ifndef LX_STORE_H
#define LX_STORE_H

#include "harness/core/lx.h"
#include "harness/core/result.h"

struct lx_store;

#define LX_DEFAULT_DB "results/lenx.db"
#define LX_STORE_SCHEMA 8       /* PRAGMA user_version of the stores this lenx writes */

/* Open (creating the file, its folder and the schema when absent). With
** readonly set, a missing file is an error and nothing is created or written;
** when SQLite cannot create the shared-memory file of a WAL database (a
** folder or mount the user may not write), the file is opened immutable
** (docs/results.md, "Read-only stores"). */
int lx_store_open(struct lx_store **out, const char *path, int readonly, struct lx_error *err);
void lx_store_close(struct lx_store *s);

/* A warning about how the store was opened (immutable with a -wal file
** beside it, whose rows are not seen), or NULL. */
const char *lx_store_note(const struct lx_store *s);

/* Is there an ok row for this run key in this sweep? */
int lx_store_done(struct lx_store *s, const char *sweep, const char *key, int *done,
                  struct lx_error *err);

/* Everything stored about one finished cell. */
struct lx_run_record {
    const char *key;            /* run key */
    const char *sweep;          /* sweep name */
    const char *method;         /* canonical stack string */
    const char *method_json;    /* resolved stack as JSON */
    const char *task;           /* canonical task string */
    const char *task_json;      /* resolved task as JSON */
    const char *key_json;       /* what the run key hashes */
    long length, seed;
    const char *model_key;      /* NULL when no model */
    const char *model;          /* the model's name in the sweep, NULL when no model */
    int ok;                     /* 1 ok, 0 failed */
    const char *error;          /* failure message, NULL when ok */
    const char *commit;         /* git commit of the build, "unknown" outside git */
    int dirty;                  /* the build had uncommitted changes */
    const char *version;        /* lenx version */
    int threads;                /* OpenMP threads */
    const char *blas;           /* BLAS core and threading */
    const char *numerics;       /* "fast" or "portable" (harness/engine/kernels/numerics.h); NULL reads as fast */
    const char *host;           /* host name */
    const char *config;         /* the sweep file */
    const char *config_text;    /* the sweep's YAML text, NULL when unknown */
    const char *weights_sha256; /* sha256 of the checkpoint the cell ran on, NULL without a model */
    double started, finished;   /* Unix time, seconds */
    long max_rss_kb;            /* peak resident memory so far (0 = unknown) */
    long train_len;             /* the model's training length, as its trainer or file says (0 = unknown) */
};

/* Write a cell (one transaction): replaces a row with the same (sweep, key,
** commit, dirty), adds otherwise; but a failed cell never replaces an ok row
** of the same commit: then nothing is written and LX_STORE_KEPT returned. */
#define LX_STORE_KEPT 1
int lx_store_put(struct lx_store *s, const struct lx_run_record *rec, const struct lx_result *res,
                 struct lx_error *err);

/* A trained (or loaded) model, in the `models` table. */
struct lx_model_record {
    const char *key, *name;     /* model key, name in the sweep */
    const char *config;         /* what the key hashes (JSON) */
    const char *path, *sha256;  /* the checkpoint */
    long steps, tokens;         /* training steps and tokens (0 when loaded from a file) */
    double seconds;             /* training wall time */
    double train_loss, val_loss;
    const char *commit;         /* git commit of the build that trained it */
    const char *weights_sha256; /* of the tensor data, as embedded in the checkpoint */
    int threads;                /* OpenMP threads it was trained with (0 = unknown) */
    int from_file;              /* found in the models dir, not trained now: keep the row's statistics */
};

/* Record a model: a trained one replaces its row, one found as a file adds
** its row or updates the path and hashes of the existing one. */
int lx_store_model_put(struct lx_store *s, const struct lx_model_record *r, struct lx_error *err);

/* The checkpoint of the one model whose name is, or whose key starts with,
** name_or_key: its recorded path and its key (both to free); an error lists
** the candidates when there are several. */
int lx_store_model_find(struct lx_store *s, const char *name_or_key, char **path, char **key,
                        struct lx_error *err);

/* ---- claims: several `lenx run` processes on one store (docs/results.md) ---- */

#define LX_CLAIM_STALE_S 120.0      /* a claim whose heartbeat is older than this is taken over */
#define LX_CLAIM_MODEL "#model"     /* the sweep name of a claim on a model key (training lock) */

struct lx_owner {                   /* one process working on the store */
    char id[320];                   /* host:pid:random */
    char host[256];                 /* gethostname() */
    long pid;
};

enum lx_claim {
    LX_CLAIM_GOT,                   /* the claim is ours now */
    LX_CLAIM_BUSY,                  /* a live owner holds it */
    LX_CLAIM_DONE,                  /* the cell is stored ok already (only with check_done) */
};

/* Claim (sweep, key) for me in one immediate transaction: DONE when
** check_done and an ok row exists, BUSY when a live owner holds it, else GOT
** (a dead owner's claim is taken over). */
int lx_store_claim(struct lx_store *s, const char *sweep, const char *key, const struct lx_owner *me,
                   int check_done, enum lx_claim *out, struct lx_error *err);
/* Release one claim of owner, or all of them when sweep is NULL. */
int lx_store_unclaim(struct lx_store *s, const char *sweep, const char *key, const char *owner, struct lx_error *err);
/* Delete the claims of dead owners (left by processes that were killed). */
int lx_store_reap(struct lx_store *s, const struct lx_owner *me, struct lx_error *err);
/* Mark every claim of owner alive now. */
int lx_store_heartbeat(struct lx_store *s, const char *owner, struct lx_error *err);
/* The file, as opened. */
const char *lx_store_path(const struct lx_store *s);
/* An SQL expression for a runs row's numerics mode ("fast" or "portable"):
** the column, or 'fast' for a store older than schema 7 opened read-only. */
const char *lx_store_numerics_sql(const struct lx_store *s);

/* One tidy record: a metric of a cell. `method` is the canonical stack, with
** " @model" appended for cells that ran on a model ("rope @small"). Two rows
** with the same names can still come from different configurations (a model
** retrained with other settings under the same name, a changed default):
** model_key and config tell them apart. */
struct lx_row {
    char *sweep, *method, *task, *key, *commit, *metric;
    char *model_key;            /* "" without a model; NULL when unknown (a CSV of the old format) */
    char *config;               /* 16 hex: hash of what the run key hashes but length and seed;
                                ** "" when unknown (rows read from CSV) */
    long length, seed;
    double value;               /* the metric's value; a series row: y */
    double x;                   /* a series row: its abscissa (position, depth, distance); NAN for a metric */
    long train_len;             /* the model's training length (0 without a model or when unknown) */
    long run_id;                /* order of insertion: later rows are newer */
    char *numerics;             /* "fast" or "portable"; NULL when unknown (rows read from CSV) */
    char *blas;                 /* the BLAS kernels as lx_blas_describe wrote them; NULL when unknown */
};

struct lx_rows {
    struct lx_row *rows;        /* (n,) */
    int n, cap;
};

void lx_rows_add(struct lx_rows *r, const char *sweep, const char *method, const char *task,
                 const char *key, const char *commit, long length, long seed, const char *metric,
                 double value, long run_id);
void lx_rows_release(struct lx_rows *r);
/* lx_rows_add gives a row no model ("") and no configuration hash (""); this
** sets row i's model key (NULL = unknown) and configuration hash (NULL = ""). */
void lx_rows_set_origin(struct lx_rows *r, int i, const char *model_key, const char *config);
/* Row i's arithmetic: numerics mode and BLAS kernels (NULL = unknown). */
void lx_rows_set_kernels(struct lx_rows *r, int i, const char *numerics, const char *blas);
/* Move every row of src to the end of dst (src left empty). */
void lx_rows_take(struct lx_rows *dst, struct lx_rows *src);
/* Pool the rows of several sweeps as one sweep, name: each row's sweep
** becomes name, and a cell stored in more than one of them (the same run key,
** metric and, for a series point, x) keeps only its newest row (the highest
** run_id); the rest keep their order. */
void lx_rows_pool(struct lx_rows *r, const char *name);

/* Which rows: the newest ok row per (sweep, key) among those that match. */
struct lx_filter {
    const char *sweep;          /* NULL = every sweep */
    const char *commit;         /* commit prefix, NULL = any */
    const char *series;         /* NULL: metric rows; else the points of this series (a row per
                                ** point: metric = the series name, x, value = y) */
};

int lx_store_select(struct lx_store *s, const struct lx_filter *f, struct lx_rows *out,
                    struct lx_error *err);
/* The next name of a pooled sweep list "A+B" at *p into buf (n bytes); *p
** moves past it and its '+'. 0 when the name is empty or overlong or the list
** ends in '+' (bad input), else 1. */
int lx_sweep_next(const char **p, char *buf, size_t n);
/* lx_store_select, where f->sweep may name several sweeps, "A+B" (a sweep's
** name has no '+'): each one's rows, pooled as the one sweep "A+B"
** (lx_rows_pool). The names are not checked: a sweep not stored adds nothing. */
int lx_store_select_pooled(struct lx_store *s, const struct lx_filter *f, struct lx_rows *out, struct lx_error *err);

/* Sweeps in the store: name, cells ok, cells failed, newest finish time. */
struct lx_sweep_info {
    char *name;
    int n_ok, n_failed;
    int n_texts;                /* distinct YAML texts its rows came from (0 before schema 4) */
    char *last;                 /* ISO time of the newest row */
};
int lx_store_sweeps(struct lx_store *s, struct lx_sweep_info **out, int *n, struct lx_error *err);
void lx_sweep_infos_free(struct lx_sweep_info *v, int n);

/* The commits that made ok rows, newest first, one per line into out ("  <12 hex> (N cells, newest TIME)";
** "-dirty" after a commit whose build had uncommitted changes); at most 10, and how many more. */
int lx_store_commits_text(struct lx_store *s, struct lx_buf *out, struct lx_error *err);

/* The distinct values of runs' column `col` ("method", "task" or "model"), sorted, each and the array to free. */
int lx_store_distinct(struct lx_store *s, const char *col, char ***out, int *n, struct lx_error *err);

/* One commit (name, dirty) or one machine (name = host, threads, blas,
** numerics) that made some of a config text's rows, and how many. */
struct lx_prov_count {
    char *name;
    int dirty;
    int threads;
    char *blas;
    char *numerics;             /* "fast" or "portable" ("" for a commit) */
    int n;
};

/* The YAML texts a sweep's rows were made from, newest first: one entry per
** distinct text (NULL for rows stored before schema 4 kept it). A sweep
** resumed after a commit, or shards merged from several nodes, have rows of
** several commits and machines: all are listed, newest first. */
struct lx_sweep_config {
    char *text;                 /* the sweep's YAML, NULL when not stored */
    char *path;                 /* the sweep file as it was named by the newest row's command line */
    int n_cells;                /* rows made from this text */
    char *last;                 /* ISO time the last of them finished */
    char *first;                /* ISO time the first of them started */
    struct lx_prov_count *commits, *machines;   /* every (commit, dirty) and (host, threads, blas), the
                                                ** newest row's first; n_commits, n_machines >= 1 */
    int n_commits, n_machines;
};
int lx_store_sweep_configs(struct lx_store *s, const char *sweep, struct lx_sweep_config **out, int *n,
                           struct lx_error *err);
void lx_sweep_configs_free(struct lx_sweep_config *v, int n);

/* Which cells `lenx rm` deletes: every condition that is set must hold; at
** least one must be set. */
struct lx_rm_filter {
    const char *sweep;          /* sweep name */
    const char *commit;         /* git commit prefix */
    const char *model;          /* model name, or model key prefix when no cell's model has that name */
    const char *method;         /* --method as given (a canonical stack or a table's row label): the CLI
                                 resolves it into `methods`; the store does not read it */
    const char *methods;        /* JSON array of canonical stacks, exactly: cells of any of them */
    const char *task;           /* task name, or canonical task string */
    int failed;                 /* only failed rows */
    const char *not_in;         /* JSON array of run keys: only rows whose key is not among them */
};

/* One stored cell, as `lenx rm` lists it (error: NULL) or lx_store_failures does. */
struct lx_cell_info {
    char *sweep, *key, *status, *method, *task, *model, *model_key, *commit;
    long length, seed;
    char *error;                /* a failed row's stored error */
};

void lx_cell_infos_free(struct lx_cell_info *v, int n);

/* The cells a filter selects, oldest first, into *cells (*n of them,
** lx_cell_infos_free); with del, deleted too, with their metrics, series and
** outputs (foreign keys cascade), listed and deleted in one transaction, so
** *cells are exactly the cells deleted. */
int lx_store_rm(struct lx_store *s, const struct lx_rm_filter *f, int del, struct lx_cell_info **cells, int *n,
                struct lx_error *err);

/* The cells of a sweep (one name, no A+B) that failed and have no ok row, at any commit: the newest failed
** row of each, ordered by task, method, model, length and seed, with its stored error. */
int lx_store_failures(struct lx_store *s, const char *sweep, struct lx_cell_info **out, int *n,
                      struct lx_error *err);

/* How many cells failed and have no ok row, in sweep (one name) or, NULL, in every sweep. */
int lx_store_n_failures(struct lx_store *s, const char *sweep, long *n, struct lx_error *err);

/* A model in the `models` table, as `lenx list models` shows it. */
struct lx_model_info {
    char *key, *name;           /* model key, name in the sweep that trained it */
    char *arch;                 /* "causal 2L d128 4h" */
    char *stack;                /* training-time methods, "rope+logn" */
    long train_len;             /* training length */
    long seed;                  /* the seed it was trained (or fine-tuned) with; -1 for a checkpoint without one */
    char *path, *created;       /* checkpoint file; ISO time recorded */
    long steps, tokens;         /* training steps and tokens (0 for a checkpoint found as a file) */
    double seconds;             /* training wall time */
    double val_loss;            /* final validation loss (NaN when none) */
};
/* Every model, oldest first. */
int lx_store_models(struct lx_store *s, struct lx_model_info **out, int *n, struct lx_error *err);
void lx_model_infos_free(struct lx_model_info *v, int n);

/* Count rows of a table ("runs", "metrics", "series"): for tests and reports. */
int lx_store_count(struct lx_store *s, const char *table, long *n, struct lx_error *err);

/* Does any row carry a commit starting with this prefix? */
int lx_store_has_commit(struct lx_store *s, const char *prefix, int *found, struct lx_error *err);

/* ---- statements of the other results/ modules ------------------------------
** results/merge.c writes its SQL and runs it through these, so store.c stays
** the only file that includes sqlite3.h. Values keep their type and bits: a
** REAL is the same double, TEXT and BLOB the same bytes. */

enum lx_vtype { LX_V_NULL, LX_V_INT, LX_V_REAL, LX_V_TEXT, LX_V_BLOB };

struct lx_value {
    enum lx_vtype type;
    long long i;                /* LX_V_INT */
    double d;                   /* LX_V_REAL */
    const void *p;              /* LX_V_TEXT (0-terminated) or LX_V_BLOB: n bytes */
    int n;
};

#define LX_STORE_MAX_COLS 64    /* columns of a row lx_store_query hands over */

/* Run sql with args bound to ?1..?n_args; call row for each result row (its
** values live until row returns). A row returning < 0 stops the statement and
** is returned (row fills err). row may be NULL (a statement without rows). */
int lx_store_query(struct lx_store *s, const char *sql, const struct lx_value *args, int n_args,
                   int (*row)(void *ctx, const struct lx_value *cols, int n_cols), void *ctx,
                   struct lx_error *err);

/* A write transaction (BEGIN IMMEDIATE; `doing` names it in an error), ended
** by COMMIT (commit = 1) or ROLLBACK (commit = 0: err untouched, LX_OK). */
int lx_store_begin(struct lx_store *s, const char *doing, struct lx_error *err);
int lx_store_end(struct lx_store *s, int commit, const char *doing, struct lx_error *err);

#endif
