/*
** results/compare.c - regression checks: which values moved between two sets
** of results (commits, sweeps or a committed CSV baseline).
**
** A value is matched by its cell (task, method, model key, length, seed) and
** its metric; the model key only when both sides know it (CSV exports of
** older lenx do not). One side holding two different configurations of one
** cell (a model retrained under the same name, matched without model keys;
** a changed default behind the same canonical string) is refused rather
** than averaged or picked from.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/views.h"

struct keyed {
    char *cell;                 /* task|method|model key|length|seed, each name's \ and | escaped */
    const struct lx_row *row;
};

/* A name in a cell string, its \ and | escaped: a store's names may hold any
** byte, and "x|y" + "z" must not read as "x" + "y|z". */
static void put_name(struct lx_buf *b, const char *s)
{
    for (size_t k; *s; s += k) {
        k = strcspn(s, "\\|");
        lx_buf_putn(b, s, k);
        if (s[k])
            lx_buf_printf(b, "\\%c", s[k++]);
    }
}

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    int c = strcmp(x->cell, y->cell);
    c = c ? c : strcmp(x->row->metric, y->row->metric);
    if (c)
        return c;
    return (x->row->run_id > y->row->run_id) - (x->row->run_id < y->row->run_id);
}

static int same_value_id(const struct keyed *x, const struct keyed *y)
{
    return strcmp(x->cell, y->cell) == 0 && strcmp(x->row->metric, y->row->metric) == 0;
}

/* Does every row carry its model key? */
static int knows_model_keys(const struct lx_rows *rows)
{
    for (int i = 0; i < rows->n; i++)
        if (!rows->rows[i].model_key)
            return 0;
    return 1;
}

/* How a message names a row: its run key, else its line in the CSV. */
static void describe_row(struct lx_buf *b, const struct lx_row *r)
{
    char v[32];
    lx_fmt_num(v, r->value);
    if (r->key[0])
        lx_buf_printf(b, "run key %s%s%s (%s)", r->key, r->model_key && r->model_key[0] ? ", model key " : "",
                      r->model_key ? r->model_key : "", v);
    else
        lx_buf_printf(b, "line %ld (%s)", r->run_id, v);
}

static int two_configurations(const char *side, const struct lx_row *a, const struct lx_row *b,
                              struct lx_error *err)
{
    struct lx_buf x = {0}, y = {0};
    describe_row(&x, a);
    describe_row(&y, b);
    char seeds[64];     /* two seeds of two configurations, or one seed stored twice */
    snprintf(seeds, sizeof seeds, a->seed == b->seed ? "seed %ld" : "seeds %ld and %ld", a->seed, b->seed);
    int rc = lx_err(err, LX_EINVAL, "%s holds two configurations of one cell (task %s, method %s, length %ld, "
                    "%s, metric %s): %s and %s\n  hint: export it again with `lenx table --format csv` "
                    "(its model_key column tells model versions apart), or remove the stale cells with "
                    "`lenx rm --not-in CONFIG`", side, a->task, a->method, a->length, seeds, a->metric,
                    lx_buf_str(&x), lx_buf_str(&y));
    lx_buf_free(&x);
    lx_buf_free(&y);
    return rc;
}

/* Rows of one run key, sweep and metric in a CSV (a store holds one, and so
** does lenx table's CSV of it) with two values: which one is meant is not known. */
static int csv_twice(const char *side, const struct lx_row *a, const struct lx_row *b, struct lx_error *err)
{
    if (a->commit[0] || b->commit[0] || strcmp(a->sweep, b->sweep) != 0 || a->value == b->value ||
        (isnan(a->value) && isnan(b->value)))
        return LX_OK;
    char x[32], y[32];
    lx_fmt_num(x, a->value);
    lx_fmt_num(y, b->value);
    return lx_err(err, LX_EINVAL, "%s holds one cell twice with two values (sweep %s, run key %s, metric %s): line "
                  "%ld (%s) and line %ld (%s)\n  hint: `lenx table --format csv` writes each cell once; keep the "
                  "line you mean", side, a->sweep, a->key, a->metric, a->run_id, x, b->run_id, y);
}

/* Sorted identities. Of duplicates with the same run key (one cell stored in
** several sweeps) the newest wins; duplicates without one common run key are
** two configurations: an error. */
static int index_rows(const struct lx_rows *rows, int by_model, const char *side, struct keyed **out,
                      int *n_out, struct lx_error *err)
{
    struct keyed *k = lx_xcalloc((size_t)(rows->n ? rows->n : 1), sizeof *k);
    for (int i = 0; i < rows->n; i++) {
        const struct lx_row *r = &rows->rows[i];
        struct lx_buf b = {0};
        put_name(&b, r->task);
        lx_buf_puts(&b, "|");
        put_name(&b, r->method);
        lx_buf_puts(&b, "|");
        put_name(&b, by_model ? r->model_key : "");
        lx_buf_printf(&b, "|%ld|%ld", r->length, r->seed);
        k[i].cell = b.s;
        k[i].row = r;
    }
    qsort(k, (size_t)rows->n, sizeof *k, cmp_keyed);
    int n = 0, rc = LX_OK;
    for (int i = 0; i < rows->n; i++) {
        if (n > 0 && same_value_id(&k[n - 1], &k[i])) {
            const struct lx_row *a = k[n - 1].row, *b = k[i].row;
            if (rc == LX_OK && (!a->key[0] || strcmp(a->key, b->key) != 0))
                rc = two_configurations(side, a, b, err);
            else if (rc == LX_OK)
                rc = csv_twice(side, a, b, err);
            free(k[n - 1].cell);
            k[n - 1] = k[i];   /* sorted by run_id within an id: keep the newest */
        } else {
            k[n++] = k[i];
        }
    }
    *out = k;
    *n_out = n;
    return rc;
}

static void free_index(struct keyed *k, int n)
{
    for (int i = 0; i < n; i++)
        free(k[i].cell);
    free(k);
}

static int moved(double b, double h, const struct lx_compare_opts *o)
{
    if (isnan(b) || isnan(h))
        return isnan(b) != isnan(h);
    if (isinf(b) || isinf(h))
        return b != h;
    return fabs(h - b) > o->atol + o->rtol * fabs(b);
}

/* ---- the arithmetic of the two sides ------------------------------------
** A value's last bits depend on the numerics mode and, in fast numerics, on
** the BLAS kernels (docs/config.md#numerics). Each distinct pair of
** (numerics, BLAS) the matched cells ran on that differs is one warning line:
** not an error, since a tolerance can cover it; a reason when rtol 0 fails. */

struct arith_pair {
    const struct lx_row *b, *h;     /* the first cell of the pair, on each side */
    int n_cells;
};

static int same_str(const char *x, const char *y)
{
    return strcmp(x ? x : "", y ? y : "") == 0;
}

/* Do two rows' arithmetics differ? Unknown (a CSV) never differs; in portable
** numerics on both sides the BLAS does not decide the bits. */
static int arith_differs(const struct lx_row *b, const struct lx_row *h)
{
    if (!b->numerics || !h->numerics)
        return 0;
    if (strcmp(b->numerics, h->numerics) != 0)
        return 1;
    return strcmp(b->numerics, "portable") != 0 && b->blas && h->blas && strcmp(b->blas, h->blas) != 0;
}

/* Count the cell (b, h) under its pair of arithmetics, when they differ. */
static void note_arith(struct arith_pair **v, int *n, const struct lx_row *b, const struct lx_row *h)
{
    if (!arith_differs(b, h))
        return;
    for (int i = 0; i < *n; i++)
        if (same_str((*v)[i].b->numerics, b->numerics) && same_str((*v)[i].b->blas, b->blas) &&
            same_str((*v)[i].h->numerics, h->numerics) && same_str((*v)[i].h->blas, h->blas)) {
            (*v)[i].n_cells++;
            return;
        }
    *v = lx_xrealloc(*v, (size_t)(*n + 1) * sizeof **v);
    (*v)[(*n)++] = (struct arith_pair){b, h, 1};
}

static void warn_arith(struct lx_buf *w, const struct arith_pair *v, int n, const char *bn, const char *hn)
{
    for (int i = 0; w && i < n; i++)
        lx_buf_printf(w, "lenx: warning: %d cell%s ran in %s numerics (BLAS %s) in %s but %s numerics (BLAS %s) in %s: "
                      "their last digits may differ\n", v[i].n_cells, v[i].n_cells == 1 ? "" : "s", v[i].b->numerics,
                      v[i].b->blas, bn, v[i].h->numerics, v[i].h->blas, hn);
}

/* "| task | method" of a moved cell's row: the names as Markdown cells (lx_esc_md), so a name holding a
** bar, a dollar or markup keeps the table whole when it is pasted into GitHub. */
static void md_names(struct lx_buf *out, const struct lx_row *r)
{
    lx_buf_puts(out, "| ");
    lx_esc_md(out, r->task);
    lx_buf_puts(out, " | ");
    lx_esc_md(out, r->method);
}

static void print_moved(struct lx_buf *out, const struct lx_row *b, const struct lx_row *h, int first)
{
    if (first)
        lx_buf_puts(out, "| task | method | length | seed | metric | base | head | diff |\n"
                         "|---|---|---:|---:|---|---:|---:|---:|\n");
    char vb[32], vh[32], tag[16];
    lx_fmt_num(vb, b->value);
    lx_fmt_num(vh, h->value);
    md_names(out, b);
    if (b->model_key && h->model_key && b->model_key[0]) {
        snprintf(tag, sizeof tag, "%.8s", b->model_key);
        lx_buf_puts(out, " [");
        lx_esc_md(out, tag);
        lx_buf_puts(out, "]");
    }
    lx_buf_printf(out, " | %ld | %ld | ", b->length, b->seed);
    lx_esc_md(out, b->metric);
    lx_buf_printf(out, " | %s | %s | %+.3g |\n", vb, vh, h->value - b->value);
}

int lx_compare(const struct lx_rows *base, const struct lx_rows *head, const struct lx_compare_opts *o,
               struct lx_buf *out, struct lx_compare_counts *c, struct lx_error *err)
{
    if (o->sigma > 0)
        return lx_compare_pooled(base, head, o, out, c, err);
    const char *bn = o->base_name ? o->base_name : "base", *hn = o->head_name ? o->head_name : "head";
    int by_model = knows_model_keys(base) && knows_model_keys(head);
    int nb = 0, nh = 0;
    struct keyed *kb = NULL, *kh = NULL;
    memset(c, 0, sizeof *c);
    int rc = index_rows(base, by_model, bn, &kb, &nb, err);
    if (rc == LX_OK)
        rc = index_rows(head, by_model, hn, &kh, &nh, err);
    const char *last_cell = "";
    struct arith_pair *arith = NULL;
    int n_arith = 0;
    for (int i = 0, j = 0; rc == LX_OK && (i < nb || j < nh);) {
        int d = i == nb ? 1 : j == nh ? -1 : cmp_keyed(&kb[i], &kh[j]);
        if (i < nb && j < nh && same_value_id(&kb[i], &kh[j]))
            d = 0;
        if (d != 0) {
            d < 0 ? (c->only_base++, i++) : (c->only_head++, j++);
            continue;
        }
        c->n_values++;
        if (strcmp(last_cell, kb[i].cell) != 0) {
            c->n_cells++;
            note_arith(&arith, &n_arith, kb[i].row, kh[j].row);
        }
        last_cell = kb[i].cell;
        if (moved(kb[i].row->value, kh[j].row->value, o))
            print_moved(out, kb[i].row, kh[j].row, c->n_moved++ == 0);
        i++, j++;
    }
    if (rc == LX_OK) {
        lx_buf_printf(out, "%s%d values in %d cells compared, %d moved beyond atol %g + rtol %g·|base|; "
                      "%d values only in base, %d only in head\n", c->n_moved ? "\n" : "", c->n_values,
                      c->n_cells, c->n_moved, o->atol, o->rtol, c->only_base, c->only_head);
        if (!by_model)
            lx_buf_printf(out, "(model keys unknown in %s, a CSV from an older lenx: cells matched without them)\n",
                          knows_model_keys(base) ? hn : bn);
        warn_arith(o->warn, arith, n_arith, bn, hn);
    }
    free(arith);
    free_index(kb, nb);
    free_index(kh, nh);
    return rc;
}

/* ---- --sigma: each side's seeds pooled per cell ---------------------------- */

/* One value of a side with its seeds pooled: (task, method, length, metric). */
struct pool {
    const struct lx_row *row;   /* its first row: names, arithmetic */
    int n;                      /* seeds */
    double mean, se;            /* se: sd/sqrt(n) over seeds, or one seed's stored <metric>_se; NaN: none */
};

/* Order by (task, method, length, metric, seed, run_id). */
static int cmp_seeded(const void *a, const void *b)
{
    const struct lx_row *x = *(const struct lx_row *const *)a, *y = *(const struct lx_row *const *)b;
    int c = strcmp(x->task, y->task);
    c = c ? c : strcmp(x->method, y->method);
    c = c ? c : (x->length > y->length) - (x->length < y->length);
    c = c ? c : strcmp(x->metric, y->metric);
    c = c ? c : (x->seed > y->seed) - (x->seed < y->seed);
    return c ? c : (x->run_id > y->run_id) - (x->run_id < y->run_id);
}

/* Same (task, method, length, metric): one pooled value. */
static int same_pool(const struct lx_row *x, const struct lx_row *y)
{
    return x->length == y->length && !strcmp(x->task, y->task) && !strcmp(x->method, y->method) &&
           !strcmp(x->metric, y->metric);
}

static int is_se_metric(const char *m)
{
    size_t n = strlen(m);
    return n > 3 && strcmp(m + n - 3, "_se") == 0;
}

/* The stored <metric>_se of r's cell and seed among the sorted rows, or NaN. */
static double stored_se(const struct lx_row *const *v, int n, const struct lx_row *r)
{
    struct lx_buf name = {0};
    lx_buf_printf(&name, "%s_se", r->metric);
    struct lx_row probe = *r;
    probe.metric = name.s;
    probe.run_id = -1;  /* before every row of that seed: the first at or after it is the one */
    const struct lx_row *p = &probe;
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cmp_seeded(&v[mid], &p) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    double se = lo < n && same_pool(v[lo], p) && v[lo]->seed == r->seed ? v[lo]->value : NAN;
    lx_buf_free(&name);
    return se;
}

/* Pool one side: one entry per (task, method, length, metric) but _se, in
** cmp_seeded order. Of rows of one seed the newest counts when they share a
** run key (one cell in several sweeps); rows of one value from two
** configurations are refused, as lx_compare refuses them. */
static int pool_side(const struct lx_rows *rows, const char *side, struct pool **out, int *n_out,
                     struct lx_error *err)
{
    const struct lx_row **v = lx_xmalloc((size_t)(rows->n ? rows->n : 1) * sizeof *v);
    for (int i = 0; i < rows->n; i++)
        v[i] = &rows->rows[i];
    qsort(v, (size_t)rows->n, sizeof *v, cmp_seeded);
    struct pool *p = lx_xcalloc((size_t)(rows->n ? rows->n : 1), sizeof *p);
    int n = 0, rc = LX_OK;
    double *x = lx_xmalloc((size_t)(rows->n ? rows->n : 1) * sizeof *x);
    for (int lo = 0, hi; lo < rows->n && rc == LX_OK; lo = hi) {
        for (hi = lo + 1; hi < rows->n && same_pool(v[lo], v[hi]); hi++)
            ;
        if (is_se_metric(v[lo]->metric))
            continue;
        int k = 0;
        double se2 = 0;     /* the sum of the stored se² of the seeds, for the floor below */
        int n_se = 0;
        for (int i = lo; i < hi && rc == LX_OK; i++) {
            const struct lx_row *a = v[i], *last = k ? v[i - 1] : NULL;
            if (last && last->seed == a->seed && (!a->key[0] || strcmp(a->key, last->key) != 0))
                rc = two_configurations(side, last, a, err);
            else if (last && last->seed == a->seed)
                rc = csv_twice(side, last, a, err);
            else if (a->config[0] && v[lo]->config[0] && strcmp(a->config, v[lo]->config) != 0)
                rc = two_configurations(side, v[lo], a, err);
            if (last && last->seed == a->seed)
                x[k - 1] = a->value;    /* the newer row of one seed */
            else
                x[k++] = a->value;
            double se = last && last->seed == a->seed ? NAN : stored_se(v, rows->n, a);
            if (!isnan(se))
                se2 += se * se, n_se++;
        }
        double sum = 0, ss = 0;
        for (int i = 0; i < k; i++)
            sum += x[i];
        for (int i = 0; i < k; i++)
            ss += (x[i] - sum / k) * (x[i] - sum / k);
        /* the se of the mean: the seeds' spread, sd/sqrt(k), but never below what the seeds' own stored
        ** se say (sqrt(mean se²/k)): the spread of 2 or 3 seeds alone is too rough an estimate */
        double spread = k > 1 ? sqrt(ss / (k - 1) / k) : NAN, own = n_se == k ? sqrt(se2 / k / k) : NAN;
        p[n++] = (struct pool){.row = v[lo], .n = k, .mean = sum / k,
                               .se = isnan(spread) ? own : isnan(own) ? spread : fmax(spread, own)};
    }
    free(x);
    free(v);
    *out = p;
    *n_out = n;
    return rc;
}

static int cmp_pool(const struct pool *a, const struct pool *b)
{
    const struct lx_row *x = a->row, *y = b->row;
    int c = strcmp(x->task, y->task);
    c = c ? c : strcmp(x->method, y->method);
    c = c ? c : (x->length > y->length) - (x->length < y->length);
    return c ? c : strcmp(x->metric, y->metric);
}

static void print_pooled(struct lx_buf *out, const struct pool *b, const struct pool *h, double se, int first)
{
    if (first)
        lx_buf_puts(out, "| task | method | length | seeds | metric | base | head | diff | diff / se |\n"
                         "|---|---|---:|---:|---|---:|---:|---:|---:|\n");
    char vb[32], vh[32];
    lx_fmt_num(vb, b->mean);
    lx_fmt_num(vh, h->mean);
    md_names(out, b->row);
    lx_buf_printf(out, " | %ld | %d/%d | ", b->row->length, b->n, h->n);
    lx_esc_md(out, b->row->metric);
    lx_buf_printf(out, " | %s | %s | %+.3g | ", vb, vh, h->mean - b->mean);
    lx_buf_printf(out, isnan(se) ? "– |\n" : "%+.3g |\n", (h->mean - b->mean) / se);
}

int lx_compare_pooled(const struct lx_rows *base, const struct lx_rows *head, const struct lx_compare_opts *o,
                      struct lx_buf *out, struct lx_compare_counts *c, struct lx_error *err)
{
    const char *bn = o->base_name ? o->base_name : "base", *hn = o->head_name ? o->head_name : "head";
    struct pool *pb = NULL, *ph = NULL;
    int nb = 0, nh = 0;
    memset(c, 0, sizeof *c);
    int rc = pool_side(base, bn, &pb, &nb, err);
    if (rc == LX_OK)
        rc = pool_side(head, hn, &ph, &nh, err);
    struct arith_pair *arith = NULL;
    int n_arith = 0;
    const struct lx_row *last = NULL;
    for (int i = 0, j = 0; rc == LX_OK && (i < nb || j < nh);) {
        int d = i == nb ? 1 : j == nh ? -1 : cmp_pool(&pb[i], &ph[j]);
        if (d != 0) {
            d < 0 ? (c->only_base++, i++) : (c->only_head++, j++);
            continue;
        }
        const struct lx_row *r = pb[i].row;
        c->n_values++;
        if (!last || last->length != r->length || strcmp(last->task, r->task) || strcmp(last->method, r->method)) {
            c->n_cells++;
            note_arith(&arith, &n_arith, r, ph[j].row);
        }
        last = r;
        double se = sqrt(pb[i].se * pb[i].se + ph[j].se * ph[j].se);
        int m;
        if (isnan(se) || isnan(pb[i].mean) || isnan(ph[j].mean))
            c->n_no_se += !isnan(pb[i].mean) && !isnan(ph[j].mean), m = moved(pb[i].mean, ph[j].mean, o);
        else    /* beyond K se and beyond the tolerances: with every se 0 a last bit is not a move */
            m = fabs(ph[j].mean - pb[i].mean) > o->sigma * se && moved(pb[i].mean, ph[j].mean, o);
        if (m)
            print_pooled(out, &pb[i], &ph[j], se, c->n_moved++ == 0);
        i++, j++;
    }
    if (rc == LX_OK) {
        lx_buf_printf(out, "%s%d values (seeds pooled) in %d cells compared, %d moved beyond %g combined standard "
                      "errors", c->n_moved ? "\n" : "", c->n_values, c->n_cells, c->n_moved, o->sigma);
        if (c->n_no_se)
            lx_buf_printf(out, " (%d without a standard error on either side: beyond atol %g + rtol %g·|base|)",
                          c->n_no_se, o->atol, o->rtol);
        lx_buf_printf(out, "; %d values only in base, %d only in head\n", c->only_base, c->only_head);
        warn_arith(o->warn, arith, n_arith, bn, hn);
    }
    free(arith);
    free(pb);
    free(ph);
    return rc;
}
