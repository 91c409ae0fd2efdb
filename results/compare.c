/*
** results/compare.c - regression checks: which cells moved between two sets
** of results (commits, sweeps or a committed CSV baseline).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "results/views.h"

struct keyed {
    char *id;                   /* task|method|length|seed|metric */
    const struct lx_row *row;
};

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    if (c)
        return c;
    return (x->row->run_id > y->row->run_id) - (x->row->run_id < y->row->run_id);
}

/* Sorted identities; of duplicates (one cell in several sweeps) the newest wins. */
static struct keyed *index_rows(const struct lx_rows *rows, int *n_out)
{
    struct keyed *k = lx_xcalloc((size_t)rows->n, sizeof *k);
    for (int i = 0; i < rows->n; i++) {
        const struct lx_row *r = &rows->rows[i];
        struct lx_buf b = {0};
        lx_buf_printf(&b, "%s|%s|%ld|%ld|%s", r->task, r->method, r->length, r->seed, r->metric);
        k[i].id = b.s ? b.s : lx_xstrdup("");
        k[i].row = r;
    }
    qsort(k, (size_t)rows->n, sizeof *k, cmp_keyed);
    int n = 0;
    for (int i = 0; i < rows->n; i++) {
        if (n > 0 && strcmp(k[n - 1].id, k[i].id) == 0) {
            free(k[n - 1].id);
            k[n - 1] = k[i];   /* sorted by run_id within an id: keep the newest */
        } else {
            k[n++] = k[i];
        }
    }
    *n_out = n;
    return k;
}

static int moved(double b, double h, const struct lx_compare_opts *o)
{
    if (isnan(b) || isnan(h))
        return isnan(b) != isnan(h);
    if (isinf(b) || isinf(h))
        return b != h;
    return fabs(h - b) > o->atol + o->rtol * fabs(b);
}

void lx_compare(const struct lx_rows *base, const struct lx_rows *head, const struct lx_compare_opts *o,
                struct lx_buf *out, int *n_moved, int *n_common)
{
    int nb, nh;
    struct keyed *kb = index_rows(base, &nb), *kh = index_rows(head, &nh);
    int i = 0, j = 0, only_b = 0, only_h = 0;
    *n_moved = *n_common = 0;
    while (i < nb || j < nh) {
        int c = i == nb ? 1 : j == nh ? -1 : strcmp(kb[i].id, kh[j].id);
        if (c < 0) {
            only_b++, i++;
            continue;
        }
        if (c > 0) {
            only_h++, j++;
            continue;
        }
        const struct lx_row *b = kb[i].row, *h = kh[j].row;
        (*n_common)++;
        if (moved(b->value, h->value, o)) {
            if (*n_moved == 0)
                lx_buf_puts(out, "| task | method | length | seed | metric | base | head | diff |\n"
                                 "|---|---|---:|---:|---|---:|---:|---:|\n");
            (*n_moved)++;
            char vb[32], vh[32];
            lx_fmt_num(vb, b->value);
            lx_fmt_num(vh, h->value);
            lx_buf_printf(out, "| %s | %s | %ld | %ld | %s | %s | %s | %+.3g |\n", b->task, b->method,
                          b->length, b->seed, b->metric, vb, vh, h->value - b->value);
        }
        i++, j++;
    }
    lx_buf_printf(out, "%s%d cells compared, %d moved beyond atol %g + rtol %g·|base|; "
                  "%d only in base, %d only in head\n", *n_moved ? "\n" : "", *n_common, *n_moved,
                  o->atol, o->rtol, only_b, only_h);
    for (int k = 0; k < nb; k++)
        free(kb[k].id);
    for (int k = 0; k < nh; k++)
        free(kh[k].id);
    free(kb);
    free(kh);
}
