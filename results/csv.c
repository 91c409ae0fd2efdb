/*
** results/csv.c - reading the tidy CSV that `lenx table --format csv` writes
** (RFC 4180 quoting), so a committed baseline can be compared with the store.
** Two headers are read: the current one (with model_key and key) and the
** 7-column one of older exports, whose rows have no model key.
*/
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
** Returns the field count, or -1 on an unterminated quote. */
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

static int parse_num(const char *s, double *v)
{
    if (strcmp(s, "nan") == 0)
        return *v = NAN, 1;
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return *s && !*end;
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
        double len, seed, v;
        if (!parse_num(lx_buf_str(&f[3]), &len) || !parse_num(lx_buf_str(&f[4]), &seed) ||
            !parse_num(lx_buf_str(&f[6]), &v) || len != floor(len) || seed != floor(seed)) {
            rc = lx_err(err, LX_EINVAL, "%s:%d: length and seed must be integers and value a number", path, line);
            break;
        }
        lx_rows_add(out, lx_buf_str(&f[0]), lx_buf_str(&f[1]), lx_buf_str(&f[2]),
                    n_cols == N_COLS ? lx_buf_str(&f[8]) : NULL, NULL, (long)len, (long)seed,
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
