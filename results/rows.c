/*
** results/rows.c - the tidy rows views read (struct lx_rows, results/store.h):
** building, tagging with their origin, releasing, pooling several sweeps'.
** No SQLite and no store here (the layer test: the store builds rows).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "results/store.h"

/* A new row at the end of r, its fields unset. */
static struct lx_row *row_new(struct lx_rows *r)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 256;
        r->rows = lx_xrealloc(r->rows, (size_t)r->cap * sizeof *r->rows);
    }
    return &r->rows[r->n++];
}

void lx_rows_add(struct lx_rows *r, const char *sweep, const char *method, const char *task,
                 const char *key, const char *commit, long length, long seed, const char *metric,
                 double value, long run_id)
{
    struct lx_row *w = row_new(r);
    w->sweep = lx_xstrdup(sweep ? sweep : "");
    w->method = lx_xstrdup(method);
    w->task = lx_xstrdup(task);
    w->key = lx_xstrdup(key ? key : "");
    w->commit = lx_xstrdup(commit ? commit : "");
    w->metric = lx_xstrdup(metric);
    w->model_key = lx_xstrdup("");
    w->config = lx_xstrdup("");
    w->length = length;
    w->seed = seed;
    w->value = value;
    w->x = NAN;
    w->run_id = run_id;
    w->numerics = w->blas = NULL;
}

static void row_free(struct lx_row *w)
{
    free(w->sweep), free(w->method), free(w->task), free(w->key), free(w->commit), free(w->metric);
    free(w->model_key), free(w->config), free(w->numerics), free(w->blas);
}

void lx_rows_release(struct lx_rows *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++)
        row_free(&r->rows[i]);
    free(r->rows);
    memset(r, 0, sizeof *r);
}

void lx_rows_set_origin(struct lx_rows *r, int i, const char *model_key, const char *config)
{
    LX_ASSERT(i >= 0 && i < r->n);
    struct lx_row *w = &r->rows[i];
    free(w->model_key);
    free(w->config);
    w->model_key = model_key ? lx_xstrdup(model_key) : NULL;
    w->config = lx_xstrdup(config ? config : "");
}

void lx_rows_set_kernels(struct lx_rows *r, int i, const char *numerics, const char *blas)
{
    LX_ASSERT(i >= 0 && i < r->n);
    struct lx_row *w = &r->rows[i];
    free(w->numerics);
    free(w->blas);
    w->numerics = numerics ? lx_xstrdup(numerics) : NULL;
    w->blas = blas ? lx_xstrdup(blas) : NULL;
}

void lx_rows_take(struct lx_rows *dst, struct lx_rows *src)
{
    for (int i = 0; i < src->n; i++)
        *row_new(dst) = src->rows[i];
    free(src->rows);
    memset(src, 0, sizeof *src);
}

/* Row order for lx_rows_pool: one cell's rows adjacent, newest first. */
static const struct lx_row *pool_rows;     /* qsort has no context argument */

static int pool_cmp(const void *a, const void *b)
{
    const struct lx_row *x = &pool_rows[*(const int *)a], *y = &pool_rows[*(const int *)b];
    int c = strcmp(x->key, y->key);
    if (!c)
        c = strcmp(x->metric, y->metric);
    int nx = !!isnan(x->x), ny = !!isnan(y->x);     /* a metric's NAN x first, equal to another NAN */
    if (!c)
        c = nx || ny ? ny - nx : (x->x > y->x) - (x->x < y->x);
    if (!c)
        c = (x->run_id < y->run_id) - (x->run_id > y->run_id);
    return c;
}

static int same_point(const struct lx_row *x, const struct lx_row *y)
{
    return !strcmp(x->key, y->key) && !strcmp(x->metric, y->metric) &&
           (x->x == y->x || (isnan(x->x) && isnan(y->x)));
}

void lx_rows_pool(struct lx_rows *r, const char *name)
{
    int *idx = lx_xcalloc((size_t)r->n + 1, sizeof *idx);
    char *drop = lx_xcalloc((size_t)r->n + 1, 1);
    for (int i = 0; i < r->n; i++)
        idx[i] = i;
    pool_rows = r->rows;
    qsort(idx, (size_t)r->n, sizeof *idx, pool_cmp);
    for (int i = 1; i < r->n; i++)
        drop[idx[i]] = same_point(&r->rows[idx[i]], &r->rows[idx[i - 1]]);
    int n = 0;
    for (int i = 0; i < r->n; i++) {
        struct lx_row *w = &r->rows[i];
        if (drop[i]) {
            row_free(w);
            continue;
        }
        free(w->sweep);
        w->sweep = lx_xstrdup(name);
        r->rows[n++] = *w;
    }
    r->n = n;
    free(idx);
    free(drop);
}
