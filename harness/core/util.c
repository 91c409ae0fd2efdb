/*
** harness/core/util.c - errors, allocation, growable strings, number formatting and
** name suggestions shared by every module.
*/
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE     /* madvise */
#include "harness/core/lx.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int lx_err(struct lx_error *err, int code, const char *fmt, ...)
{
    if (err) {
        /* through a copy: an argument pointing into err->msg reads the old message */
        char msg[LX_ERR_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        memcpy(err->msg, msg, sizeof msg);
    }
    return code;
}

int lx_err_prefix(struct lx_error *err, int code, const char *fmt, ...)
{
    if (err) {
        char msg[LX_ERR_MAX];
        memcpy(msg, err->msg, sizeof msg);
        msg[sizeof msg - 1] = '\0';
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < sizeof err->msg)
            snprintf(err->msg + k, sizeof err->msg - (size_t)k, "%s", msg);
    }
    return code;
}

void lx_assert_fail(const char *cond, const char *file, int line)
{
    fprintf(stderr, "lenx: internal error at %s:%d: assertion '%s' failed\n", file, line, cond);
    abort();
}

void *lx_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    LX_ASSERT(p != NULL);
    return p;
}

void *lx_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    LX_ASSERT(p != NULL);
    return p;
}

void *lx_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    LX_ASSERT(q != NULL);
    return q;
}

char *lx_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(lx_xmalloc(n), s, n);
}

static void buf_reserve(struct lx_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->s = lx_xrealloc(b->s, cap);
    b->cap = cap;
}

void lx_buf_printf(struct lx_buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    LX_ASSERT(n >= 0);
    buf_reserve(b, (size_t)n);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
}

void lx_buf_puts(struct lx_buf *b, const char *s)
{
    size_t n = strlen(s);
    buf_reserve(b, n);
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void lx_buf_putn(struct lx_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = 2 * (b->len + n + 1);
        b->s = lx_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

int lx_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int lx_utf8_len(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned c = s[0];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || (size_t)len > n)
        return 0;
    for (int i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    /* overlong forms, surrogates, past U+10FFFF */
    if ((len == 2 && c < 0xc2) || (len == 3 && c == 0xe0 && s[1] < 0xa0) || (len == 3 && c == 0xed && s[1] >= 0xa0) ||
        (len == 4 && c == 0xf0 && s[1] < 0x90) || (len == 4 && (c > 0xf4 || (c == 0xf4 && s[1] >= 0x90))))
        return 0;
    return len;
}

/* A C1 control (U+0080-U+009F) in UTF-8 at p. */
static int utf8_c1(const unsigned char *p)
{
    return p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
}

void lx_buf_json_strn(struct lx_buf *b, const char *s, size_t len)
{
    lx_buf_puts(b, "\"");
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        int n = lx_utf8_len(p, (size_t)(end - p) < 4 ? (size_t)(end - p) : 4);
        if (*p == '"' || *p == '\\')
            lx_buf_printf(b, "\\%c", *p);
        else if (*p == '\n')
            lx_buf_puts(b, "\\n");
        else if (*p == '\t')
            lx_buf_puts(b, "\\t");
        else if (*p < 0x20)
            lx_buf_printf(b, "\\u%04x", *p);
        else if (n == 0)
            lx_buf_puts(b, "\\ufffd");     /* not UTF-8: JSON text is UTF-8 (RFC 8259); DEL and C1 may stay */
        else
            lx_buf_printf(b, "%.*s", n, (const char *)p);
        p += n ? n : 1;
    }
    lx_buf_puts(b, "\"");
}

void lx_buf_json_str(struct lx_buf *b, const char *s)
{
    if (s)
        lx_buf_json_strn(b, s, strlen(s));
    else
        lx_buf_puts(b, "null");
}

void lx_esc_term(struct lx_buf *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = lx_utf8_len(p, strnlen((const char *)p, 4));
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
            lx_buf_printf(b, "\\x%02x", *p);
        else if (utf8_c1(p))
            lx_buf_printf(b, "\\u%04x", p[1]);
        else if (n == 0)
            lx_buf_printf(b, "\\x%02x", *p);        /* not UTF-8: a byte a terminal may take for C1 */
        else
            lx_buf_printf(b, "%.*s", n, (const char *)p);
        p += n ? n : 1;
    }
}

void lx_term_printf(FILE *f, const char *fmt, ...)
{
    struct lx_buf raw = {0}, shown = {0};
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    LX_ASSERT(n >= 0);
    raw.s = lx_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(raw.s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    lx_esc_term(&shown, raw.s);
    fputs(lx_buf_str(&shown), f);
    free(raw.s);
    lx_buf_free(&shown);
}

void lx_fmt_num(char out[32], double v)
{
    if (isnan(v)) {
        strcpy(out, "nan");
        return;
    }
    if (isinf(v)) {
        strcpy(out, v > 0 ? "inf" : "-inf");
        return;
    }
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(out, 32, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            break;
    }
    /* Plain decimals where they are short, as people write them: "10", not "1e+01". */
    /* The decimal exponent of the rounded value, read from its %e text:
    ** floor(log10(v)) is one off just below a power of ten. */
    char e_txt[32];
    snprintf(e_txt, sizeof e_txt, "%.*e", prec - 1, v);
    int e = v == 0.0 ? 0 : atoi(strchr(e_txt, 'e') + 1);
    if (e >= -4 && e < 16)
        snprintf(out, 32, "%.*f", prec - 1 - e > 0 ? prec - 1 - e : 0, v);
    else
        snprintf(out, 32, "%.*g", prec, v);
    LX_ASSERT(strtod(out, NULL) == v);
}

void lx_buf_num(struct lx_buf *b, double v)
{
    char tmp[32];
    lx_fmt_num(tmp, v);
    if (!isfinite(v))       /* JSON has no inf/nan: store them as null */
        strcpy(tmp, "null");
    lx_buf_puts(b, tmp);
}

void lx_buf_reset(struct lx_buf *b)
{
    b->len = 0;
    if (b->s)
        b->s[0] = '\0';
}

void lx_buf_free(struct lx_buf *b)
{
    if (!b)
        return;
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

const char *lx_buf_str(const struct lx_buf *b)
{
    return b->s ? b->s : "";
}

int lx_edit_distance(const char *a, const char *b)
{
    /* Optimal string alignment: insertions, deletions, substitutions and
    ** transpositions of neighbours ("tua" -> "tau") each cost 1. */
    size_t n = strlen(a), m = strlen(b);
    int *d = lx_xmalloc((n + 1) * (m + 1) * sizeof *d);
#define D(i, j) d[(i) * (m + 1) + (j)]
    for (size_t i = 0; i <= n; i++)
        D(i, 0) = (int)i;
    for (size_t j = 0; j <= m; j++)
        D(0, j) = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int best = D(i - 1, j - 1) + (a[i - 1] != b[j - 1]);
            if (D(i - 1, j) + 1 < best)
                best = D(i - 1, j) + 1;
            if (D(i, j - 1) + 1 < best)
                best = D(i, j - 1) + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && D(i - 2, j - 2) + 1 < best)
                best = D(i - 2, j - 2) + 1;
            D(i, j) = best;
        }
    int r = D(n, m);
#undef D
    free(d);
    return r;
}

const char *lx_closest(const char *s, const char *const *names, int n)
{
    const char *best = NULL;
    int best_d = 1 << 30;
    for (int i = 0; i < n; i++) {
        int d = lx_edit_distance(s, names[i]);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    /* Suggest only plausible typos: at most a third of the word changed. */
    size_t len = strlen(s);
    int limit = len < 4 ? 1 : (int)(len / 3) + 1;
    return best_d <= limit ? best : NULL;
}

int lx_write_file(const char *path, const void *bytes, size_t n, struct lx_error *err)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return lx_err(err, LX_EIO, "%s: cannot create: %s", path, strerror(errno));
    int ok = fwrite(bytes, 1, n, fp) == n;
    if (fclose(fp) != 0 || !ok)
        return lx_err(err, LX_EIO, "%s: cannot write: %s", path, strerror(errno));
    return LX_OK;
}

/* body into path itself, which exists and is not a regular file (a device, a pipe): a rename would
** replace the node, so that /dev/stdout or /dev/null became a regular file. */
static int write_in_place(const char *path, int (*body)(FILE *fp, void *ctx), void *ctx, struct lx_error *err)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return lx_err(err, LX_EIO, "%s: cannot open it for writing: %s\n  hint: is it writable?", path,
                      strerror(errno));
    errno = 0;
    int ok = body(fp, ctx), saved = errno;
    if (fclose(fp) != 0 && ok)
        ok = 0, saved = errno;
    return ok ? LX_OK : lx_err(err, LX_EIO, "%s: cannot write: %s\n  hint: is the disk full, or the pipe it goes "
                               "to closed?", path, saved ? strerror(saved) : "short write");
}

int lx_write_atomic(const char *path, int (*body)(FILE *fp, void *ctx), void *ctx, struct lx_error *err)
{
    struct stat sb;
    int there = stat(path, &sb) == 0;
    if (there && S_ISDIR(sb.st_mode))
        return lx_err(err, LX_EIO, "%s: is a directory, not a file\n  hint: name the file to write, e.g. "
                      "%s/out", path, path);
    if (there && !S_ISREG(sb.st_mode))
        return write_in_place(path, body, ctx, err);
    char host[256] = "unknown";
    if (gethostname(host, sizeof host - 1) != 0)
        strcpy(host, "unknown");
    host[sizeof host - 1] = '\0';
    struct lx_buf tmp = {0};
    lx_buf_printf(&tmp, "%s.tmp.%s.%ld", path, host, (long)getpid());
    const char *t = lx_buf_str(&tmp);
    int rc = LX_OK;
    FILE *fp = fopen(t, "wb");
    if (!fp) {
        rc = lx_err(err, LX_EIO, "%s: cannot create %s: %s\n  hint: does the directory exist, and is it "
                    "writable?", path, t, strerror(errno));
        lx_buf_free(&tmp);
        return rc;
    }
    errno = 0;
    int ok = body(fp, ctx), saved = errno;
    if (fclose(fp) != 0 && ok)
        ok = 0, saved = errno;
    if (!ok)
        rc = lx_err(err, LX_EIO, "%s: cannot write %s: %s\n  hint: is the disk full?", path, t,
                    saved ? strerror(saved) : "short write");
    else if (rename(t, path) != 0)
        rc = lx_err(err, LX_EIO, "%s: cannot rename %s to it: %s\n  hint: is path a directory, or on another "
                    "file system?", path, t, strerror(errno));
    if (rc < 0)
        remove(t);
    lx_buf_free(&tmp);
    return rc;
}

int lx_read_file(const char *path, unsigned char **bytes, long *n, long max_bytes, struct lx_error *err)
{
    *bytes = NULL;
    *n = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return lx_err(err, LX_EIO, "%s: cannot open the file: %s\n  hint: check the path", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(fp), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fclose(fp);
        return lx_err(err, LX_EIO, "cannot read %s: it is a directory\n  hint: name a file", path);
    }
    /* Read in chunks to the end: a pipe or /dev/stdin has no size to ask for. */
    size_t cap = 1 << 16, len = 0;
    unsigned char *b = lx_xmalloc(cap + 1);
    for (;;) {
        if (len == cap) {
            cap *= 2;
            b = lx_xrealloc(b, cap + 1);
        }
        size_t got = fread(b + len, 1, cap - len, fp);
        len += got;
        if (max_bytes > 0 && len > (size_t)max_bytes) {
            free(b);
            fclose(fp);
            return lx_err(err, LX_EIO, "%s: larger than %ld bytes\n  hint: is this the right file?", path,
                          max_bytes);
        }
        if (got == 0)
            break;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (bad) {
        free(b);
        return lx_err(err, LX_EIO, "cannot read %s: read error", path);
    }
    b[len] = 0;
    *bytes = b;
    *n = (long)len;
    return LX_OK;
}

void lx_make_parent_dir(const char *path)
{
    char *dir = lx_xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        for (char *p = dir + 1; *p; p++)
            if (*p == '/') {
                *p = '\0';
                mkdir(dir, 0777);
                *p = '/';
            }
        mkdir(dir, 0777);
    }
    free(dir);
}

int lx_map_file(const char *path, const unsigned char **bytes, size_t *n, struct lx_error *err)
{
    struct stat st;
    int fd = open(path, O_RDONLY), rc = LX_OK;
    *bytes = NULL;
    *n = 0;
    if (fd < 0)
        return lx_err(err, LX_EIO, "%s: cannot open: %s\n  hint: check the path", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = lx_err(err, LX_EIO, "%s: cannot stat: %s\n  hint: check the path", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        rc = lx_err(err, LX_EIO, "%s: not a regular file\n  hint: give the path of a model file", path);
    } else if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
            rc = lx_err(err, LX_EIO, "%s: cannot map %lld bytes: %s\n  hint: free memory or use a smaller model",
                        path, (long long)st.st_size, strerror(errno));
        else
            *bytes = p, *n = (size_t)st.st_size;
    }
    close(fd);
    return rc;
}

size_t lx_pread_all(int fd, void *buf, size_t n, long long at)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(at + (long long)got));
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    return got;
}

void *lx_big_calloc(size_t bytes)
{
    if (bytes < LX_BIG_BYTES) {     /* 64-byte aligned, as a mapping is page-aligned */
        size_t whole = (bytes + 63) & ~(size_t)63;
        void *p = aligned_alloc(64, whole ? whole : 64);
        return p ? memset(p, 0, whole ? whole : 64) : NULL;
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    madvise(p, bytes, MADV_HUGEPAGE);   /* a hint: where huge pages are off, 4 KiB pages as before */
    return p;
}

void lx_big_free(void *p, size_t bytes)
{
    if (!p)
        return;
    if (bytes < LX_BIG_BYTES)
        free(p);
    else
        munmap(p, bytes);
}

void lx_unmap_file(const unsigned char *bytes, size_t n)
{
    if (bytes)
        munmap((void *)bytes, n);
}

/* ---- memory: what the machine has, for the plans that check before allocating ---- */

double lx_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = -1.0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    if (kb >= 0.0)
        return kb * 1024.0;
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size : 1e18;   /* unknown: do not refuse */
}

char *lx_fmt_bytes(char out[32], double bytes)
{
    if (bytes < 1e9)
        snprintf(out, 32, "%.1f MB", bytes / 1e6);
    else
        snprintf(out, 32, "%.1f GB", bytes / 1e9);
    return out;
}

void lx_iso_time(double t, char out[48])
{
    time_t sec = (time_t)t;
    struct tm tm;
    gmtime_r(&sec, &tm);
    int ms = (int)((t - (double)sec) * 1000.0);
    snprintf(out, 48, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms < 0 ? 0 : ms > 999 ? 999 : ms);
}

char *lx_file_uri(const char *path, const char *query)
{
    struct lx_buf b = {0};
    lx_buf_puts(&b, "file:");
    for (const char *p = path; *p; p++)
        if (*p == '%' || *p == '?' || *p == '#')
            lx_buf_printf(&b, "%%%02X", (unsigned char)*p);
        else
            lx_buf_printf(&b, "%c", *p);
    lx_buf_printf(&b, "?%s", query);
    return b.s;
}
