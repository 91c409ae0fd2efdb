/*
** results/catalog.c - the store's listings (sweeps, a sweep's configuration
** texts, models, commits, a column's distinct values, failed cells), read through
** lx_store_query: SQL text, row copying and freeing only; results/store.c
** stays the one file that talks to SQLite. Also the rows of sweeps pooled as
** one (lx_store_select_pooled).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "results/store.h"

/* A column as text ("" for NULL; numbers formatted as SQLite would). */
static char *txt(const struct lx_value *v)
{
    char num[64];
    switch (v->type) {
    case LX_V_TEXT: return lx_xstrdup((const char *)v->p);
    case LX_V_INT: snprintf(num, sizeof num, "%lld", v->i); return lx_xstrdup(num);
    case LX_V_REAL: snprintf(num, sizeof num, "%.17g", v->d); return lx_xstrdup(num);
    default: return lx_xstrdup("");
    }
}

/* A column as a number (NULL: `null`; text read as a number, as SQLite casts). */
static double num(const struct lx_value *v, double null)
{
    switch (v->type) {
    case LX_V_INT: return (double)v->i;
    case LX_V_REAL: return v->d;
    case LX_V_TEXT: return strtod((const char *)v->p, NULL);
    default: return null;
    }
}

/* A growing array of rows of `size` bytes each. */
struct grow {
    void **v;
    int *n, cap;
    size_t size;
};

static void *grow_next(struct grow *g)
{
    if (*g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 16;
        *g->v = lx_xrealloc(*g->v, (size_t)g->cap * g->size);
    }
    void *w = (char *)*g->v + (size_t)(*g->n)++ * g->size;
    memset(w, 0, g->size);
    return w;
}

/* ---- freeing what the listings return ---------------------------------- */

void lx_sweep_infos_free(struct lx_sweep_info *v, int n)
{
    for (int i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].last);
    }
    free(v);
}

static void prov_counts_free(struct lx_prov_count *v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i].name), free(v[i].blas), free(v[i].numerics);
    free(v);
}

void lx_sweep_configs_free(struct lx_sweep_config *v, int n)
{
    for (int i = 0; i < n; i++) {
        free(v[i].text), free(v[i].path), free(v[i].last), free(v[i].first);
        prov_counts_free(v[i].commits, v[i].n_commits);
        prov_counts_free(v[i].machines, v[i].n_machines);
    }
    free(v);
}

void lx_model_infos_free(struct lx_model_info *v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i].key), free(v[i].name), free(v[i].arch), free(v[i].stack), free(v[i].path), free(v[i].created);
    free(v);
}

static int sweep_row(void *ctx, const struct lx_value *c, int n_cols)
{
    struct lx_sweep_info *w = grow_next(ctx);
    w->name = txt(&c[0]);
    w->n_ok = (int)num(&c[1], 0);
    w->n_failed = (int)num(&c[2], 0);
    w->last = txt(&c[3]);
    w->n_texts = (int)num(&c[4], 0);
    return 0;
}

int lx_store_sweeps(struct lx_store *s, struct lx_sweep_info **out, int *n, struct lx_error *err)
{
    static const char *sql =
        "SELECT sweep, sum(status = 'ok'), sum(status = 'failed'), max(finished), count(DISTINCT config_text)"
        " FROM runs GROUP BY sweep ORDER BY min(id)";
    *out = NULL;
    *n = 0;
    struct grow g = {(void **)out, n, 0, sizeof **out};
    return lx_store_query(s, sql, NULL, 0, sweep_row, &g, err);
}

struct commits {
    struct lx_buf *out;
    int n;                      /* commits seen */
};

static int commit_row(void *ctx, const struct lx_value *c, int n_cols)
{
    (void)n_cols;
    struct commits *w = ctx;
    if (w->n++ < 10)
        lx_buf_printf(w->out, "  %s%s (%lld cells, newest %s)\n", (const char *)c[0].p, c[1].i ? "-dirty" : "",
                      c[2].i, (const char *)c[3].p);
    return 0;
}

int lx_store_commits_text(struct lx_store *s, struct lx_buf *out, struct lx_error *err)
{
    static const char *sql =
        "SELECT substr(git_commit, 1, 12), git_dirty, count(*), max(finished) FROM runs WHERE status = 'ok'"
        " GROUP BY git_commit, git_dirty ORDER BY max(id) DESC";
    struct commits w = {out, 0};
    int rc = lx_store_query(s, sql, NULL, 0, commit_row, &w, err);
    if (rc == LX_OK && w.n > 10)
        lx_buf_printf(out, "  and %d more\n", w.n - 10);
    return rc;
}

static int name_row(void *ctx, const struct lx_value *c, int n_cols)
{
    (void)n_cols;
    *(char **)grow_next(ctx) = txt(&c[0]);
    return 0;
}

int lx_store_distinct(struct lx_store *s, const char *col, char ***out, int *n, struct lx_error *err)
{
    LX_ASSERT(!strcmp(col, "method") || !strcmp(col, "task") || !strcmp(col, "model"));   /* never user text */
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT DISTINCT %s FROM runs ORDER BY 1", col);
    *out = NULL;
    *n = 0;
    struct grow g = {(void **)out, n, 0, sizeof **out};
    return lx_store_query(s, sql, NULL, 0, name_row, &g, err);
}

static int failure_row(void *ctx, const struct lx_value *c, int n_cols)
{
    (void)n_cols;
    struct lx_cell_info *w = grow_next(ctx);
    char **text[] = {&w->sweep, &w->key, &w->status, &w->method, &w->task, &w->model, &w->model_key, &w->commit,
                     &w->error};
    for (int i = 0; i < 9; i++)
        *text[i] = txt(&c[i]);
    w->length = (long)num(&c[9], 0);
    w->seed = (long)num(&c[10], 0);
    return 0;
}

int lx_store_failures(struct lx_store *s, const char *sweep, struct lx_cell_info **out, int *n,
                      struct lx_error *err)
{
    static const char *sql =
        "SELECT sweep, key, status, method, task, model, model_key, git_commit, error, length, seed FROM runs r"
        " WHERE id IN (SELECT max(id) FROM runs WHERE sweep = ?1 AND status = 'failed' GROUP BY key)"
        " AND NOT EXISTS (SELECT 1 FROM runs o WHERE o.sweep = ?1 AND o.key = r.key AND o.status = 'ok')"
        " ORDER BY task, method, model, length, seed, id";
    *out = NULL;
    *n = 0;
    struct grow g = {(void **)out, n, 0, sizeof **out};
    struct lx_value arg = {.type = LX_V_TEXT, .p = sweep, .n = (int)strlen(sweep)};
    return lx_store_query(s, sql, &arg, 1, failure_row, &g, err);
}

static int long_row(void *ctx, const struct lx_value *c, int n_cols)
{
    *(long *)ctx = (long)num(&c[0], 0);
    return 0;
}

int lx_store_n_failures(struct lx_store *s, const char *sweep, long *n, struct lx_error *err)
{
    static const char *sql =
        "SELECT count(*) FROM (SELECT DISTINCT sweep, key FROM runs r WHERE status = 'failed'"
        " AND (?1 IS NULL OR sweep = ?1)"
        " AND NOT EXISTS (SELECT 1 FROM runs o WHERE o.sweep = r.sweep AND o.key = r.key AND o.status = 'ok'))";
    struct lx_value arg = sweep ? (struct lx_value){.type = LX_V_TEXT, .p = sweep, .n = (int)strlen(sweep)}
                                : (struct lx_value){.type = LX_V_NULL};
    *n = 0;
    return lx_store_query(s, sql, &arg, 1, long_row, n, err);
}

static int config_row(void *ctx, const struct lx_value *c, int n_cols)
{
    struct lx_sweep_config *w = grow_next(ctx);
    w->text = c[0].type == LX_V_NULL ? NULL : txt(&c[0]);
    w->path = txt(&c[1]);
    w->n_cells = (int)num(&c[2], 0);
    w->last = txt(&c[3]);
    w->first = txt(&c[4]);
    return 0;
}

static int count_row(void *ctx, const struct lx_value *c, int n_cols)
{
    struct lx_prov_count *w = grow_next(ctx);
    w->name = txt(&c[0]);
    w->dirty = (int)num(&c[1], 0);
    w->threads = (int)num(&c[2], 0);
    w->blas = txt(&c[3]);
    w->n = (int)num(&c[4], 0);
    w->numerics = txt(&c[5]);
    return 0;
}

int lx_store_sweep_configs(struct lx_store *s, const char *sweep, struct lx_sweep_config **out, int *n,
                           struct lx_error *err)
{
    /* the newest row of each text gives its path; the span and count are the
    ** group's (joined: SQLite's bare columns come from the max() row only when
    ** max() is the sole aggregate); commits and machines, newest first, follow */
    static const char *sql =
        "SELECT r.config_text, r.config, g.n, g.last, g.first FROM runs r JOIN (SELECT max(id) AS newest,"
        " count(*) AS n, min(started) AS first, max(finished) AS last FROM runs WHERE sweep = ?1"
        " GROUP BY config_text) g ON r.id = g.newest ORDER BY r.id DESC";
    char machines[400];     /* the KV cache a cell decoded through is in its key alone (`lenx run --kv-cache`) */
    snprintf(machines, sizeof machines, "SELECT host, 0, threads, blas, count(*), %s || coalesce(', kv_cache ' ||"
             " json_extract(key_json, '$.kv_cache'), '') AS num FROM runs"
             " WHERE sweep = ?1 AND config_text IS ?2 GROUP BY host, threads, blas, num ORDER BY max(id) DESC",
             lx_store_numerics_sql(s));
    const char *const count_sql[2] = {
        "SELECT git_commit, git_dirty, 0, '', count(*), '' FROM runs WHERE sweep = ?1 AND config_text IS ?2"
        " GROUP BY git_commit, git_dirty ORDER BY max(id) DESC",
        machines,
    };
    *out = NULL;
    *n = 0;
    struct grow g = {(void **)out, n, 0, sizeof **out};
    struct lx_value arg[2] = {{.type = LX_V_TEXT, .p = sweep, .n = (int)strlen(sweep)}};
    int rc = lx_store_query(s, sql, arg, 1, config_row, &g, err);
    for (int i = 0; rc == LX_OK && i < *n; i++) {
        struct lx_sweep_config *c = &(*out)[i];
        arg[1] = c->text ? (struct lx_value){.type = LX_V_TEXT, .p = c->text, .n = (int)strlen(c->text)}
                         : (struct lx_value){.type = LX_V_NULL};
        struct grow gc = {(void **)&c->commits, &c->n_commits, 0, sizeof *c->commits};
        struct grow gm = {(void **)&c->machines, &c->n_machines, 0, sizeof *c->machines};
        rc = lx_store_query(s, count_sql[0], arg, 2, count_row, &gc, err);
        if (rc == LX_OK)
            rc = lx_store_query(s, count_sql[1], arg, 2, count_row, &gm, err);
    }
    return rc;
}

static int model_row(void *ctx, const struct lx_value *c, int n_cols)
{
    struct lx_model_info *w = grow_next(ctx);
    w->key = txt(&c[0]);
    w->name = txt(&c[1]);
    w->arch = txt(&c[2]);
    w->stack = txt(&c[9]);
    w->train_len = (long)num(&c[10], 0);
    w->seed = (long)num(&c[11], -1);
    w->path = txt(&c[3]);
    w->created = txt(&c[4]);
    w->steps = (long)num(&c[5], 0);
    w->tokens = (long)num(&c[6], 0);
    w->seconds = num(&c[7], 0);
    w->val_loss = num(&c[8], NAN);
    return 0;
}

int lx_store_models(struct lx_store *s, struct lx_model_info **out, int *n, struct lx_error *err)
{
    /* the architecture and the training-time stack's names read in SQL: a fine-tuned model's (a checkpoint's
    ** under $.finetune) marks each method fine-tuned in, (ft), or added to the base model, (added) */
    static const char *sql =
        "SELECT key, name, json_extract(config, '$.arch.mode') || ' ' || json_extract(config, '$.arch.layers')"
        " || 'L d' || json_extract(config, '$.arch.d_model') || ' ' || json_extract(config, '$.arch.heads') || 'h',"
        " path, created, steps, tokens, seconds, val_loss, (SELECT group_concat(m.key || CASE"
        " WHEN json_type(m.value, '$.finetune') IS NULL THEN '' WHEN json_extract(m.value, '$.finetune.add')"
        " THEN '(added)' ELSE '(ft)' END, '+') FROM json_each(config, CASE WHEN json_type(config, '$.stack')"
        " IS NULL THEN '$.finetune.stack' ELSE '$.stack' END) e, json_each(e.value) m),"
        " json_extract(config, '$.train.length'),"
        " coalesce(json_extract(config, '$.seed'), json_extract(config, '$.finetune.seed')) FROM models ORDER BY rowid";
    *out = NULL;
    *n = 0;
    struct grow g = {(void **)out, n, 0, sizeof **out};
    return lx_store_query(s, sql, NULL, 0, model_row, &g, err);
}

/* Here, not in store.c, as a listing: a name several models share (one per method and seed of a sweep) lists
** each with its architecture, stack, length and seed, which tell them apart (they were listed as "KEY (NAME)"). */
int lx_store_model_find(struct lx_store *s, const char *name_or_key, char **path, char **key,
                        struct lx_error *err)
{
    *path = *key = NULL;
    struct lx_model_info *m;
    int n, found = 0, rc = lx_store_models(s, &m, &n, err);
    if (rc < 0)
        return rc;
    struct lx_buf seen = {0};
    for (int i = n - 1; i >= 0; i--) {     /* newest first; a key prefix in either case, as SQL's LIKE read it */
        if (strcmp(m[i].name, name_or_key) != 0 && strncasecmp(m[i].key, name_or_key, strlen(name_or_key)) != 0)
            continue;
        if (!found++)
            *path = lx_xstrdup(m[i].path), *key = lx_xstrdup(m[i].key);
        lx_buf_printf(&seen, "\n    %s (%s: %s, trained with %s at length %ld", m[i].key, m[i].name, m[i].arch,
                      m[i].stack ? m[i].stack : "no methods", m[i].train_len);
        lx_buf_printf(&seen, m[i].seed >= 0 ? ", seed %ld)" : ")", m[i].seed);
    }
    lx_model_infos_free(m, n);
    if (found == 0)
        rc = lx_err(err, LX_EINVAL, "no file '%s' and no model of that name or key in %s\n  hint: pass a "
                    "checkpoint path, or a model name or key (`lenx list models`)", name_or_key, lx_store_path(s));
    else if (found > 1)
        rc = lx_err(err, LX_EINVAL, "'%s' names %d models in %s:%s\n  hint: pass a key (prefix) or the "
                    "checkpoint path", name_or_key, found, lx_store_path(s), lx_buf_str(&seen));
    lx_buf_free(&seen);
    if (rc < 0) {
        free(*path);
        free(*key);
        *path = *key = NULL;
    }
    return rc;
}

int lx_sweep_next(const char **p, char *buf, size_t n)
{
    size_t w = strcspn(*p, "+");
    snprintf(buf, n, "%.*s", (int)w, *p);
    int ok = w > 0 && w < n && !((*p)[w] == '+' && !(*p)[w + 1]);
    *p += w + ((*p)[w] == '+');
    return ok;
}

int lx_store_select_pooled(struct lx_store *s, const struct lx_filter *f, struct lx_rows *out, struct lx_error *err)
{
    if (!f->sweep || !strchr(f->sweep, '+'))
        return lx_store_select(s, f, out, err);
    int rc = LX_OK;
    char sweep[256];
    for (const char *p = f->sweep; rc == LX_OK && *p;) {
        struct lx_filter one = *f;
        struct lx_rows part = {0};
        one.sweep = sweep;
        if (lx_sweep_next(&p, sweep, sizeof sweep))
            rc = lx_store_select(s, &one, &part, err);
        lx_rows_take(out, &part);
    }
    if (rc == LX_OK)
        lx_rows_pool(out, f->sweep);
    return rc;
}
