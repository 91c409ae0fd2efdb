/*
** results/csv.c - reading the tidy CSV that `lenx table --format csv` writes
** (RFC 4180 quoting), so a committed baseline can be compared with the store.
** Two headers are read: the current one (with model_key and key) and the
** 7-column one of older exports, whose rows have no model key.
*/
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/views.h"

#define N_COLS 9       /* the current header; the old one is its first N_OLD columns */
#define N_OLD 7
static const char *const header[N_COLS] = {"sweep", "method", "task", "length", "seed", "metric", "value",
                                           "model_key", "key"};

/* Split one record starting at *p into fields; advances *p past the record.
** Returns the field count, -1 on an unterminated quote, or -2 - i when
** field i (0-based) has text after its closing quote (*p then unchanged). */
static int split_record(const char **p, struct lx_buf fields[N_COLS + 1])
{
    int n = 0;
    const char *s = *p;
    for (int i = 0; i <= N_COLS; i++)
        lx_buf_reset(&fields[i]);
    for (;;) {
        struct lx_buf *f = &fields[n < N_COLS ? n : N_COLS];
        lx_buf_puts(f, "");
        if (*s == '"') {
            for (s++;; s++) {
                if (!*s)
                    return -1;
                if (*s == '"' && s[1] == '"')
                    lx_buf_puts(f, "\""), s++;
                else if (*s == '"')
                    break;
                else
                    lx_buf_printf(f, "%c", *s);
            }
            s++;
            if (*s && *s != ',' && *s != '\n' && *s != '\r')
                return -2 - n;
        } else {
            while (*s && *s != ',' && *s != '\n' && *s != '\r')
                lx_buf_printf(f, "%c", *s++);
        }
        n++;
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s == '\r')
            s++;
        if (*s == '\n')
            s++;
        *p = s;
        return n;
    }
}

/* A value as `lenx table --format csv` writes it: a number, inf, -inf or nan.
** A leading blank (strtod skips it) and a number past a double's range (strtod
** reads 1e999 as inf) are refused; an underflow is the nearest double. */
static int parse_num(const char *s, double *v)
{
    if (strcmp(s, "nan") == 0)
        return *v = NAN, 1;
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return *s && !*end && !isspace((unsigned char)*s) && !(isinf(*v) && errno == ERANGE);
}

/* A length or seed: an integer in [lo, 10^12], the bounds of a sweep's
** lengths and seeds (docs/config.md#limits), so the conversion to long is
** defined. */
static int parse_int(const char *s, double lo, long *out)
{
    double v;
    if (!parse_num(s, &v) || !(v >= lo && v <= 1e12) || v != floor(v))
        return 0;
    *out = (long)v;
    return 1;
}

/* The file's text; *nul is set to the 1-based line of a NUL byte, which would
** end the text there and leave the rest unread (0: none). */
static char *slurp(const char *path, int *nul)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct lx_buf b = {0};
    char chunk[4096];
    size_t n;
    int line = 1;
    *nul = 0;
    while (!*nul && (n = fread(chunk, 1, sizeof chunk - 1, f)) > 0) {
        chunk[n] = '\0';
        for (size_t i = 0; i < n && !*nul; i++) {
            line += chunk[i] == '\n';
            *nul = chunk[i] == '\0' ? line : 0;
        }
        lx_buf_puts(&b, chunk);
    }
    fclose(f);
    return b.s ? b.s : lx_xstrdup("");
}

int lx_csv_read(const char *path, struct lx_rows *out, struct lx_error *err)
{
    int nul;
    char *text = slurp(path, &nul);
    if (!text)
        return lx_err(err, LX_EIO, "%s: cannot read the file", path);
    if (nul) {
        free(text);
        return lx_err(err, LX_EINVAL, "%s:%d: a NUL byte; a results CSV is text\n"
                      "  hint: write it with `lenx table --format csv`", path, nul);
    }
    struct lx_buf f[N_COLS + 1] = {{0}};
    const char *p = text, *at = text;
    int rc = LX_OK, seen_header = 0, n_cols = N_COLS, line = 1;
    while (*p && rc == LX_OK) {
        for (; at < p; at++)    /* the record's first line: a quoted field may hold line breaks */
            line += *at == '\n';
        int n = split_record(&p, f);
        if (n == 1 && !f[0].len)
            continue;   /* a blank line */
        int is_header = !seen_header;
        seen_header = 1;
        if (is_header && n == N_OLD)
            n_cols = N_OLD;
        if (n <= -2) {
            rc = lx_err(err, LX_EINVAL, "%s:%d: field %d: text after its closing quote\n  hint: a quote inside "
                        "a quoted field is written twice (\"\"), as `lenx table --format csv` writes it",
                        path, line, -n - 1);
            break;
        }
        if (is_header && n == N_COLS + 1 && !strcmp(lx_buf_str(&f[5]), "series")) {
            rc = lx_err(err, LX_EINVAL, "%s:1: a series export (`lenx table --series`); compare reads a metric "
                        "export\n  hint: write one with `lenx table --format csv` (no --series)", path);
            break;
        }
        if (n != n_cols) {
            rc = lx_err(err, LX_EINVAL, "%s:%d: expected %d fields, found %d%s", path, line, n_cols,
                        n < 0 ? 0 : n, n < 0 ? " (unterminated quote)" : "");
            break;
        }
        if (is_header) {
            for (int i = 0; i < n_cols && rc == LX_OK; i++)
                if (strcmp(lx_buf_str(&f[i]), header[i]) != 0)
                    rc = lx_err(err, LX_EINVAL, "%s:%d: the header must be exactly "
                                "sweep,method,task,length,seed,metric,value,model_key,key (or, from older "
                                "lenx, its first 7 columns)\n"
                                "  hint: write it with `lenx table --format csv`", path, line);
            continue;
        }
        static const char *const field[] = {"length", "seed", "value"};
        static const char *const want[] = {"an integer in [1, 10^12]", "an integer in [0, 10^12]",
                                           "a number in a double's range, inf, -inf or nan"};
        static const int col[] = {3, 4, 6};
        long len, seed;
        double v;
        int bad = !parse_int(lx_buf_str(&f[3]), 1, &len) ? 0 : !parse_int(lx_buf_str(&f[4]), 0, &seed) ? 1
                  : !parse_num(lx_buf_str(&f[6]), &v) ? 2 : -1;
        if (bad >= 0) {
            rc = lx_err(err, LX_EINVAL, "%s:%d: %s '%s' is not %s\n  hint: write it with `lenx table --format csv`",
                        path, line, field[bad], lx_buf_str(&f[col[bad]]), want[bad]);
            break;
        }
        lx_rows_add(out, lx_buf_str(&f[0]), lx_buf_str(&f[1]), lx_buf_str(&f[2]),
                    n_cols == N_COLS ? lx_buf_str(&f[8]) : NULL, NULL, len, seed,
                    lx_buf_str(&f[5]), v, line);
        lx_rows_set_origin(out, out->n - 1, n_cols == N_COLS ? lx_buf_str(&f[7]) : NULL, NULL);
    }
    if (rc == LX_OK && !seen_header)
        rc = lx_err(err, LX_EINVAL, "%s: empty file; expected the header "
                    "sweep,method,task,length,seed,metric,value,model_key,key", path);
    for (int i = 0; i <= N_COLS; i++)
        lx_buf_free(&f[i]);
    free(text);
    return rc;
}
