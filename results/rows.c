/*
** results/rows.c - the tidy rows views read (struct lx_rows, results/store.h):
** building, tagging with their origin, releasing. No SQLite here.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "results/store.h"

void lx_rows_add(struct lx_rows *r, const char *sweep, const char *method, const char *task,
                 const char *key, const char *commit, long length, long seed, const char *metric,
                 double value, long run_id)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 256;
        r->rows = lx_xrealloc(r->rows, (size_t)r->cap * sizeof *r->rows);
    }
    struct lx_row *w = &r->rows[r->n++];
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

void lx_rows_release(struct lx_rows *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++) {
        struct lx_row *w = &r->rows[i];
        free(w->sweep), free(w->method), free(w->task), free(w->key), free(w->commit), free(w->metric);
        free(w->model_key), free(w->config), free(w->numerics), free(w->blas);
    }
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
