/*
** results/merge.c - `lenx merge` (docs/cluster.md#merging-shard-databases).
**
** Each input is read through its own read-only connection and its rows are
** written into the output inside one transaction, with the statements below
** run through lx_store_query (store.c stays the only SQLite user). Values are
** carried as they are stored, so a merged REAL is the same double.
**
** A cell's identity is the store's unique key: (sweep, run key, commit,
** dirty). For each input row, the output's row of that identity decides:
**   none            the row is added with its metrics, series and outputs;
**   ok, input ok    same values: nothing to do; different values: a conflict;
**   failed, ok      the ok row replaces the failed one (the store's rule);
**   either, failed  the output's row stays.
** "Values" are the cell's metrics, series and outputs, compared exactly
** (doubles printed in the shortest form that reads back to the same bits).
*/
#include "results/merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "results/store.h"

/* The runs columns but the id, in the order both sides use. */
#define RUN_COLS                                                                                   \
    "key, sweep, method, method_params, task, task_params, key_json, length, seed, model_key,"    \
    " model, status, error, git_commit, git_dirty, version, threads, blas, host, config, started," \
    " finished, wall_s, max_rss_kb, config_text, weights_sha256, numerics, train_len"
#define N_RUN_COLS 28
enum { R_KEY, R_SWEEP, R_METHOD, R_TASK = 4, R_LENGTH = 7, R_SEED, R_MODEL_KEY, R_MODEL, R_STATUS,
       R_COMMIT = 13, R_DIRTY };

#define MODEL_COLS                                                                                 \
    "key, name, config, path, sha256, steps, tokens, seconds, train_loss, val_loss, git_commit,"  \
    " created, weights_sha256, threads"
#define N_MODEL_COLS 14
enum { M_KEY, M_STEPS = 5, M_WEIGHTS = 12 };

/* The tables that hang off a run, with the columns to carry (run_id aside)
** and a label for the values when two rows are compared. */
static const struct child {
    const char *table;          /* the child table */
    const char *cols;           /* its columns but run_id, as SQL */
    const char *label;          /* the first word of its lines in a conflict report */
    int n_cols;                 /* columns in cols */
    unsigned numeric;           /* bit k: column k holds a number or NULL, never text or a blob */
} children[] = {
    {"metrics", "name, value", "metric", 2, 1u << 1},
    {"series", "series, x, y", "series", 3, 1u << 1 | 1u << 2},
    {"outputs", "sample, depth, gold, text, score, logprob, stop, prompt", "output", 8,
     1u << 0 | 1u << 1 | 1u << 4 | 1u << 5},
};
#define N_CHILDREN ((int)(sizeof children / sizeof *children))

struct merge {
    struct lx_store *in, *out;      /* the input being read (read-only) and the output (in its transaction) */
    const char *in_path, *out_path; /* their names, for the log and the report */
    const char *const *inputs;      /* every input, in order, and the index of the one being read */
    int cur;
    long long *upto;                /* (cur + 1,) the output's largest run id before any input, then after each */
    struct lx_merge_counts *c;      /* what happened so far */
    struct lx_buf *report;          /* the conflicts, described */
    struct lx_error *err;           /* the first error */
};

static struct lx_value int_value(long long i)
{
    return (struct lx_value){.type = LX_V_INT, .i = i};
}

static const char *as_text(const struct lx_value *v)
{
    return v->type == LX_V_TEXT ? v->p : "";
}

/* One value as text: exact (a REAL in the shortest form that reads back to
** the same double), NULL as null. */
static void put_value(struct lx_buf *b, const struct lx_value *v)
{
    switch (v->type) {
    case LX_V_NULL: lx_buf_puts(b, "null"); break;
    case LX_V_INT: lx_buf_printf(b, "%lld", v->i); break;
    case LX_V_REAL: lx_buf_num(b, v->d); break;
    case LX_V_TEXT: lx_buf_json_str(b, v->p); break;
    case LX_V_BLOB:
        lx_buf_puts(b, "x'");
        for (int i = 0; i < v->n; i++)
            lx_buf_printf(b, "%02x", ((const unsigned char *)v->p)[i]);
        lx_buf_puts(b, "'");
        break;
    }
}

/* ---- a run's values as lines of text, to compare two rows ---------------- */

struct lines {
    struct lx_buf *b;               /* the lines so far */
    const char *label;              /* the table's label, first on each line */
};

static int add_line(void *ctx, const struct lx_value *cols, int n)
{
    struct lines *l = ctx;
    lx_buf_puts(l->b, l->label);
    for (int i = 0; i < n; i++) {
        lx_buf_puts(l->b, " ");
        put_value(l->b, &cols[i]);
    }
    lx_buf_puts(l->b, "\n");
    return LX_OK;
}

/* Every metric, series point and output of run id in s, one a line, sorted. */
static int run_lines(struct lx_store *s, long long id, struct lx_buf *out, struct lx_error *err)
{
    struct lx_value arg = int_value(id);
    int rc = LX_OK;
    for (int t = 0; t < N_CHILDREN && rc == LX_OK; t++) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT %s FROM %s WHERE run_id = ?1 ORDER BY %s", children[t].cols,
                 children[t].table, children[t].cols);
        struct lines l = {.b = out, .label = children[t].label};
        rc = lx_store_query(s, sql, &arg, 1, add_line, &l, err);
    }
    return rc;
}

/* The bytes of line l (n long) before its value, its last word: the row's name. */
static size_t name_len(const char *l, size_t n)
{
    size_t k = n;
    while (k > 0 && l[k - 1] != ' ')
        k--;
    return k ? k - 1 : n;
}

/* A line of run_lines for the report, "(none)" past the end; a row the
** other side lacks (the lines sort by the row's name, its value last) is
** said to be one. */
static void put_line(struct lx_buf *b, const char *l, const char *other)
{
    size_t n = strcspn(l, "\n"), name = name_len(l, n), oname = name_len(other, strcspn(other, "\n"));
    if (!*l) {
        lx_buf_puts(b, "(none)");
        return;
    }
    lx_buf_printf(b, "%.*s", (int)n, l);
    int cmp = memcmp(l, other, name < oname ? name : oname);
    if (!*other || cmp < 0 || (cmp == 0 && name < oname))   /* this row sorts first: the other side has none */
        lx_buf_puts(b, " (a row the other side lacks)");
}

/* The first line where a and b differ, each side's. */
static void first_difference(const char *a, const char *b, struct lx_buf *in, struct lx_buf *out)
{
    while (*a && *b) {
        size_t na = strcspn(a, "\n"), nb = strcspn(b, "\n");
        if (na != nb || memcmp(a, b, na) != 0)
            break;
        a += na + (a[na] != 0);
        b += nb + (b[nb] != 0);
    }
    put_line(in, a, b);
    put_line(out, b, a);
}

/* Where the output's run out_id came from: the output as it was, or the
** earlier input of this merge that added it. */
static const char *source_of(const struct merge *m, long long out_id)
{
    for (int j = 0; j < m->cur; j++)
        if (out_id > m->upto[j] && out_id <= m->upto[j + 1])
            return m->inputs[j];
    return m->out_path;
}

/* Compare the input's run in_id with the output's out_id: a conflict is
** described in the report. */
static int compare_runs(struct merge *m, const struct lx_value *cols, long long in_id, long long out_id)
{
    struct lx_buf a = {0}, b = {0}, da = {0}, db = {0};
    int rc = run_lines(m->in, in_id, &a, m->err);
    if (rc == LX_OK)
        rc = run_lines(m->out, out_id, &b, m->err);
    if (rc == LX_OK && strcmp(lx_buf_str(&a), lx_buf_str(&b)) == 0) {
        m->c->runs_same++;
    } else if (rc == LX_OK) {
        m->c->conflicts++;
        const char *there = source_of(m, out_id);
        first_difference(lx_buf_str(&a), lx_buf_str(&b), &da, &db);
        lx_buf_printf(m->report, "conflict: cell %s of sweep '%s' (%s, %s, length %lld, seed %lld%s%s) at commit "
                      "%.12s%s has other values in %s than in %s:\n    %s: %s\n    %s: %s\n",
                      as_text(&cols[R_KEY]), as_text(&cols[R_SWEEP]), as_text(&cols[R_TASK]),
                      as_text(&cols[R_METHOD]), cols[R_LENGTH].i, cols[R_SEED].i,
                      cols[R_MODEL].type == LX_V_TEXT ? ", model " : "", as_text(&cols[R_MODEL]),
                      as_text(&cols[R_COMMIT]), cols[R_DIRTY].i ? " (dirty)" : "", m->in_path, there,
                      m->in_path, lx_buf_str(&da), there, lx_buf_str(&db));
    }
    lx_buf_free(&a), lx_buf_free(&b), lx_buf_free(&da), lx_buf_free(&db);
    return rc;
}

/* ---- copying rows ------------------------------------------------------- */

/* The k-th name of a column list "a, b, c" (up to its comma). */
static const char *column_name(const char *cols, int k)
{
    for (; k > 0; k--)
        cols = strchr(cols, ',') + 2;
    return cols;
}

static int take_id(void *ctx, const struct lx_value *cols, int n)
{
    *(long long *)ctx = n > 0 && cols[0].type == LX_V_INT ? cols[0].i : -1;
    return LX_OK;
}

/* The output's row of an input run's identity. */
struct found {
    long long id;               /* its id, -1 when there is none */
    int ok;                     /* its status is ok */
};

static int take_found(void *ctx, const struct lx_value *cols, int n)
{
    struct found *f = ctx;
    LX_ASSERT(n >= 2);
    f->id = cols[0].i;
    f->ok = cols[1].type == LX_V_INT && cols[1].i != 0;
    return LX_OK;
}

/* A child row of the input, into the output under the new run id. */
struct child_copy {
    struct merge *m;
    const struct child *child;  /* its table */
    const struct lx_value *run; /* the input's run (RUN_COLS) */
    long long in_id;            /* its id in the input */
    const char *insert;         /* INSERT ... VALUES (?1 = run id, ?2 ...) */
    long long id;               /* the run's id in the output */
};

/* A number column holding text or a blob (SQLite keeps what it is given in a
** REAL column when it does not read as a number): refused, never carried on
** to be read as 0. */
static int check_numbers(const struct child_copy *cc, const struct lx_value *cols, int n)
{
    for (int k = 0; k < n; k++) {
        if (!(cc->child->numeric >> k & 1u) || cols[k].type == LX_V_NULL || cols[k].type == LX_V_INT ||
            cols[k].type == LX_V_REAL)
            continue;
        struct lx_buf name = {0}, v = {0};
        put_value(&name, &cols[0]);
        put_value(&v, &cols[k]);
        const struct lx_value *r = cc->run;
        int rc = lx_err(cc->m->err, LX_EINVAL, "%s: run %lld (sweep '%s', %s, %s, length %lld): %s %s holds %s in "
                        "%s.%.*s, where a number belongs; nothing was merged into %s\n  hint: the file was edited "
                        "or written by another program; fix or delete that row (`lenx rm` on the input) and merge "
                        "again", cc->m->in_path, cc->in_id, as_text(&r[R_SWEEP]), as_text(&r[R_TASK]),
                        as_text(&r[R_METHOD]), r[R_LENGTH].i, cc->child->label, lx_buf_str(&name), lx_buf_str(&v),
                        cc->child->table, (int)strcspn(column_name(cc->child->cols, k), ","),
                        column_name(cc->child->cols, k), cc->m->out_path);
        lx_buf_free(&name);
        lx_buf_free(&v);
        return rc;
    }
    return LX_OK;
}

static int copy_child(void *ctx, const struct lx_value *cols, int n)
{
    struct child_copy *cc = ctx;
    int rc = check_numbers(cc, cols, n);
    if (rc < 0)
        return rc;
    struct lx_value args[LX_STORE_MAX_COLS];
    args[0] = int_value(cc->id);
    memcpy(args + 1, cols, (size_t)n * sizeof *cols);
    return lx_store_query(cc->m->out, cc->insert, args, n + 1, NULL, NULL, cc->m->err);
}

/* The input's rows of child table t of a run (?1), in their order. */
static void child_select(char *sql, size_t n, int t)
{
    snprintf(sql, n, "SELECT %s FROM %s WHERE run_id = ?1 ORDER BY rowid", children[t].cols, children[t].table);
}

static int check_child(void *ctx, const struct lx_value *cols, int n)
{
    return check_numbers(ctx, cols, n);
}

/* Every child row of the input's run in_id (cols) checked as copy_child
** checks it, for a run the output already holds: compared, a text value
** was a conflict (exit 1) where a copy refuses it (exit 2). */
static int check_run(struct merge *m, const struct lx_value *cols, long long in_id)
{
    struct lx_value arg = int_value(in_id);
    int rc = LX_OK;
    for (int t = 0; t < N_CHILDREN && rc == LX_OK; t++) {
        char select[256];
        child_select(select, sizeof select, t);
        struct child_copy cc = {.m = m, .child = &children[t], .run = cols, .in_id = in_id};
        rc = lx_store_query(m->in, select, &arg, 1, check_child, &cc, m->err);
    }
    return rc;
}

/* Insert the input's run (cols, its id in_id) with its children. */
static int add_run(struct merge *m, const struct lx_value *cols, long long in_id)
{
    static const char *insert = "INSERT INTO runs (" RUN_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
                                "?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, "
                                "?26, ?27, ?28) RETURNING id";
    long long id = -1;
    int rc = lx_store_query(m->out, insert, cols, N_RUN_COLS, take_id, &id, m->err);
    struct lx_value arg = int_value(in_id);
    for (int t = 0; t < N_CHILDREN && rc == LX_OK; t++) {
        char select[256], ins[256], marks[64] = "?1";
        for (int k = 0; k < children[t].n_cols; k++)
            snprintf(marks + strlen(marks), sizeof marks - strlen(marks), ", ?%d", k + 2);
        child_select(select, sizeof select, t);
        snprintf(ins, sizeof ins, "INSERT INTO %s (run_id, %s) VALUES (%s)", children[t].table, children[t].cols,
                 marks);
        struct child_copy cc = {.m = m, .child = &children[t], .run = cols, .in_id = in_id, .insert = ins, .id = id};
        rc = lx_store_query(m->in, select, &arg, 1, copy_child, &cc, m->err);
    }
    return rc;
}

/* One run row of the input: cols[0] its id, then RUN_COLS. */
static int merge_run(void *ctx, const struct lx_value *row, int n)
{
    struct merge *m = ctx;
    const struct lx_value *cols = row + 1;
    LX_ASSERT(n == N_RUN_COLS + 1);
    struct lx_value who[4] = {cols[R_SWEEP], cols[R_KEY], cols[R_COMMIT], cols[R_DIRTY]};
    struct found there = {-1, 0};
    int rc = lx_store_query(m->out, "SELECT id, status = 'ok' FROM runs WHERE sweep = ?1 AND key = ?2 AND "
                            "git_commit = ?3 AND git_dirty = ?4", who, 4, take_found, &there, m->err);
    if (rc < 0)
        return rc;
    int ok = strcmp(as_text(&cols[R_STATUS]), "ok") == 0;
    if (there.id < 0) {
        m->c->runs_added++;
        return add_run(m, cols, row[0].i);
    }
    if (!ok) {
        *(there.ok ? &m->c->runs_kept : &m->c->runs_same) += 1;
        return LX_OK;
    }
    if (there.ok)
        return (rc = check_run(m, cols, row[0].i)) < 0 ? rc : compare_runs(m, cols, row[0].i, there.id);
    m->c->runs_replaced++;
    struct lx_value id = int_value(there.id);
    rc = lx_store_query(m->out, "DELETE FROM runs WHERE id = ?1", &id, 1, NULL, NULL, m->err);
    return rc < 0 ? rc : add_run(m, cols, row[0].i);
}

/* ---- models ------------------------------------------------------------- */

/* The output's row of a model key. */
struct model_there {
    int found;                  /* the output has a row of the key */
    int has_weights;            /* with a weights_sha256 */
    char weights[80];           /* weights_sha256 */
    long long steps;            /* 0: recorded from a file, without training statistics */
};

static int take_model(void *ctx, const struct lx_value *cols, int n)
{
    struct model_there *t = ctx;
    LX_ASSERT(n == 2);
    t->found = 1;
    t->has_weights = cols[0].type == LX_V_TEXT;
    snprintf(t->weights, sizeof t->weights, "%s", as_text(&cols[0]));
    t->steps = cols[1].type == LX_V_INT ? cols[1].i : 0;
    return LX_OK;
}

/* One models row of the input (MODEL_COLS): added when new; replacing a row
** that has no training statistics (found as a file) or no weights hash; a
** conflict when both have weights hashes and they differ. */
static int merge_model(void *ctx, const struct lx_value *cols, int n)
{
    struct merge *m = ctx;
    struct model_there t = {0};
    LX_ASSERT(n == N_MODEL_COLS);
    int rc = lx_store_query(m->out, "SELECT weights_sha256, steps FROM models WHERE key = ?1", &cols[M_KEY], 1,
                            take_model, &t, m->err);
    if (rc < 0)
        return rc;
    int has = cols[M_WEIGHTS].type == LX_V_TEXT;
    long long steps = cols[M_STEPS].type == LX_V_INT ? cols[M_STEPS].i : 0;
    if (t.found && has && t.has_weights && strcmp(t.weights, as_text(&cols[M_WEIGHTS])) != 0) {
        m->c->conflicts++;
        lx_buf_printf(m->report, "conflict: model %s has other weights in %s than in %s:\n"
                      "    %s: weights_sha256 %s\n    %s: weights_sha256 %s\n", as_text(&cols[M_KEY]),
                      m->in_path, m->out_path, m->in_path, as_text(&cols[M_WEIGHTS]), m->out_path, t.weights);
        return LX_OK;
    }
    int better = !t.found || (steps > 0 && t.steps == 0) || (has && !t.has_weights && (steps > 0 || t.steps == 0));
    if (!better)
        return LX_OK;
    *(t.found ? &m->c->models_updated : &m->c->models_added) += 1;
    return lx_store_query(m->out, "INSERT OR REPLACE INTO models (" MODEL_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                          "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)", cols, N_MODEL_COLS, NULL, NULL, m->err);
}

/* ---- the merge ---------------------------------------------------------- */

static int take_int(void *ctx, const struct lx_value *cols, int n)
{
    *(int *)ctx = n > 0 && cols[0].type == LX_V_INT ? (int)cols[0].i : -1;
    return LX_OK;
}

/* An input, opened read-only, with the current schema and every row: one
** read as an immutable file beside a -wal that holds rows is refused (a
** merge would leave those rows out). */
static int open_input(struct lx_store **s, const char *path, const char *out, struct lx_error *err)
{
    int v = -1, rc = lx_store_open(s, path, 1, err);
    if (rc == LX_OK && lx_store_note(*s))
        rc = lx_err(err, LX_EIO, "cannot merge all of %s", lx_store_note(*s));
    if (rc == LX_OK)
        rc = lx_store_query(*s, "PRAGMA user_version", NULL, 0, take_int, &v, err);
    if (rc == LX_OK && v < LX_STORE_SCHEMA)
        rc = lx_err(err, LX_EINVAL, "%s: schema version %d is older than this lenx's (%d); a merge reads its "
                    "inputs read-only and does not migrate them\n  hint: upgrade it in place first with `lenx merge "
                    "%s --into %s` (a merge into itself migrates the file and changes no row), then merge it "
                    "into %s", path, v, LX_STORE_SCHEMA, path, path, out);
    if (rc < 0) {
        lx_store_close(*s);
        *s = NULL;
    }
    return rc;
}

/* Merge one input into the open transaction; a line for the log. */
static int merge_input(struct merge *m, struct lx_buf *log)
{
    struct lx_merge_counts was = *m->c, *c = m->c;
    int rc = open_input(&m->in, m->in_path, m->out_path, m->err);
    if (rc == LX_OK)
        rc = lx_store_query(m->in, "SELECT id, " RUN_COLS " FROM runs ORDER BY id", NULL, 0, merge_run, m, m->err);
    if (rc == LX_OK)
        rc = lx_store_query(m->in, "SELECT " MODEL_COLS " FROM models ORDER BY rowid", NULL, 0, merge_model, m,
                            m->err);
    lx_store_close(m->in);
    m->in = NULL;
    if (rc == LX_OK)
        lx_buf_printf(log, "%s: %ld cells added, %ld replaced a failed row, %ld already there, %ld failed rows "
                      "left out (an ok row is there); %ld models added, %ld updated; %ld conflicts\n", m->in_path,
                      c->runs_added - was.runs_added, c->runs_replaced - was.runs_replaced,
                      c->runs_same - was.runs_same, c->runs_kept - was.runs_kept, c->models_added - was.models_added,
                      c->models_updated - was.models_updated, c->conflicts - was.conflicts);
    return rc;
}

int lx_merge(const char *const *inputs, int n, const char *out, struct lx_merge_counts *c, struct lx_buf *log,
             struct lx_buf *report, struct lx_error *err)
{
    memset(c, 0, sizeof *c);
    long long *upto = lx_xcalloc((size_t)n + 1, sizeof *upto);
    struct merge m = {.out_path = out, .c = c, .report = report, .err = err, .inputs = inputs, .upto = upto};
    /* An output that exists is opened first (a merge into itself migrates it);
    ** a new one after the inputs, and a failed merge leaves it not behind. */
    struct stat sb;
    int created = stat(out, &sb) != 0;
    int rc = created ? LX_OK : lx_store_open(&m.out, out, 0, err);
    for (int i = 0; i < n && rc == LX_OK; i++) {    /* every input readable, before anything is written */
        rc = open_input(&m.in, inputs[i], out, err);
        lx_store_close(m.in);
        m.in = NULL;
    }
    if (rc == LX_OK && created)
        rc = lx_store_open(&m.out, out, 0, err);
    int began = rc == LX_OK && (rc = lx_store_begin(m.out, "starting the merge", err)) == LX_OK;
    static const char *largest = "SELECT coalesce(max(id), 0) FROM runs";
    if (rc == LX_OK)
        rc = lx_store_query(m.out, largest, NULL, 0, take_id, &upto[0], err);
    for (int i = 0; i < n && rc == LX_OK; i++) {
        m.in_path = inputs[i], m.cur = i;
        if ((rc = merge_input(&m, log)) == LX_OK)
            rc = lx_store_query(m.out, largest, NULL, 0, take_id, &upto[i + 1], err);
    }
    free(upto);
    if (rc == LX_OK && c->conflicts)
        rc = lx_err(err, LX_ERUN, "%ld conflicts: the same cell (or model) at the same commit with different values; "
                    "nothing was merged into %s\n  hint: the values differ by thread count or CPU (BLAS kernels)? "
                    "remove one side (`lenx rm`) or merge them into separate files", c->conflicts, out);
    if (began) {
        int end = lx_store_end(m.out, rc == LX_OK, "committing the merge", err);
        rc = rc == LX_OK ? end : rc;
    }
    lx_store_close(m.out);
    if (rc < 0 && created) {
        static const char *const ext[] = {"", "-wal", "-shm", "-journal"};
        for (int i = 0; i < 4; i++) {
            struct lx_buf f = {0};
            lx_buf_printf(&f, "%s%s", out, ext[i]);
            remove(lx_buf_str(&f));
            lx_buf_free(&f);
        }
    }
    return rc;
}
