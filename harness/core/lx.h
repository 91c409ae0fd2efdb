/*
** harness/core/lx.h - what every lenx file needs: the error tiers, growable strings.
**
** Errors come in three tiers (docs/development.md#style):
**   1. a broken invariant: LX_ASSERT prints file:line and aborts, in every build;
**   2. a recoverable failure (bad YAML, unknown name, bound violated, SQLite busy):
**      return a negative LX_E... code and fill the caller's struct lx_error with
**      what failed, on which value, and a hint;
**   3. hot kernels return void; every check happens before them.
** Only main() exits.
*/
#ifndef LX_LX_H
#define LX_LX_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LX_VERSION "0.1.0"

enum {
    LX_OK = 0,
    LX_EINVAL = -1,   /* bad input: config, arguments, parameters */
    LX_EIO = -2,      /* a file or the store could not be read or written */
    LX_ENOMEM = -3,   /* an allocation failed */
    LX_ERUN = -4,     /* a cell failed while running */
};

#define LX_ERR_MAX 1024

struct lx_error {
    char msg[LX_ERR_MAX];   /* what failed, where, and a hint; "" when none */
};

/* Fill err (which may be NULL) and return code, so callers can write
** `return lx_err(err, LX_EINVAL, "...", ...);`. The message is formatted apart
** and then copied, so an argument may be err->msg itself (lx_err_prefix says
** that more plainly). */
int lx_err(struct lx_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Put formatted context in front of the message err already holds and return
** code: `return lx_err_prefix(err, rc, "%s: ", file);`. A message that no
** longer fits is cut at its end. */
int lx_err_prefix(struct lx_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define LX_ASSERT(cond)                                                         \
    do {                                                                        \
        if (!(cond))                                                            \
            lx_assert_fail(#cond, __FILE__, __LINE__);                          \
    } while (0)

void lx_assert_fail(const char *cond, const char *file, int line)
    __attribute__((noreturn));

/* Allocation that never returns NULL: out of memory is a broken invariant on
** the machines lenx targets, and checking every small allocation would hide
** the logic. Large, size-dependent buffers use malloc and report LX_ENOMEM. */
void *lx_xmalloc(size_t n);
void *lx_xcalloc(size_t n, size_t size);
void *lx_xrealloc(void *p, size_t n);
char *lx_xstrdup(const char *s);

/* A whole file's bytes: *bytes is malloc'd, *n bytes long, NUL-terminated
** one past the end. Reads pipes and other unseekable files to the end; a
** directory or a file over max_bytes (0 = no limit) is an LX_EIO error. */
int lx_read_file(const char *path, unsigned char **bytes, long *n, long max_bytes, struct lx_error *err);

/* Write n bytes as the whole file at path (created or truncated); LX_EIO
** naming the file and the system's reason. */
int lx_write_file(const char *path, const void *bytes, size_t n, struct lx_error *err);

/* Write the file at path all or nothing: body(fp, ctx) writes it into
** path.tmp.<host>.<pid> (one temporary per writer, so processes saving the
** same path never share one; lenx run clears a killed writer's by that
** name), which is then renamed over path. body returns 1 when every write
** succeeded, else 0 with errno set (or 0 for a short write). LX_EIO naming
** path, the temporary and the reason; the temporary never survives a failure.
** A path that is a directory is refused before body runs; one that exists
** and is not a regular file (a device such as /dev/stdout, a pipe) is
** written in place, never renamed over. */
int lx_write_atomic(const char *path, int (*body)(FILE *fp, void *ctx), void *ctx, struct lx_error *err);

/* Create the folders above path's last component, as far as they are
** missing (errors are left to whoever then opens the file). */
void lx_make_parent_dir(const char *path);
/* t (seconds since the epoch) as UTC "YYYY-MM-DDThh:mm:ss.mmmZ". */
void lx_iso_time(double t, char out[48]);
/* "file:PATH?QUERY", the path's URI-special characters (%, ?, #) escaped;
** malloc'd (an SQLite URI filename: results/store.c). */
char *lx_file_uri(const char *path, const char *query);
/* A regular file mapped read-only (model weights: pages are read once, as
** they are converted). An empty file maps to *bytes = NULL, *n = 0. Release
** with lx_unmap_file, which accepts NULL. */
int lx_map_file(const char *path, const unsigned char **bytes, size_t *n, struct lx_error *err);
void lx_unmap_file(const unsigned char *bytes, size_t n);

/* Up to n bytes of the file fd from offset at into buf, through pread until
** they are all read or the file ends or fails: the bytes read (n when whole). */
size_t lx_pread_all(int fd, void *buf, size_t n, long long at);

/* A zeroed block of bytes for a model's weights: from LX_BIG_BYTES on its own
** anonymous mapping asking for transparent huge pages (a 4 GB model faults
** in 2 MiB at a time, not 4 KiB: docs/checkpoints.md#what-a-load-costs),
** below that zeroed from aligned_alloc; either way 64-byte aligned (a cache
** line: activation rows are laid out from it). NULL when out of memory. lx_big_free takes the same
** byte count back and accepts NULL. */
#define LX_BIG_BYTES ((size_t)64 << 20)
void *lx_big_calloc(size_t bytes);
void lx_big_free(void *p, size_t bytes);

/* A growable NUL-terminated string. Zero-initialise, append, then free. */
struct lx_buf {
    char *s;        /* (cap,) NUL-terminated text, NULL until the first append */
    size_t len;     /* characters before the NUL */
    size_t cap;     /* bytes allocated */
};

void lx_buf_printf(struct lx_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void lx_buf_puts(struct lx_buf *b, const char *s);
void lx_buf_putn(struct lx_buf *b, const char *s, size_t n);   /* n bytes, NUL included */
/* quoted, escaped; always valid JSON (U+FFFD for bytes not UTF-8); NULL is null */
void lx_buf_json_str(struct lx_buf *b, const char *s);
void lx_buf_json_strn(struct lx_buf *b, const char *s, size_t n);  /* the same for n bytes (a NUL is \u0000) */
void lx_buf_num(struct lx_buf *b, double v);             /* shortest round-trip */
void lx_buf_reset(struct lx_buf *b);
void lx_buf_free(struct lx_buf *b);
const char *lx_buf_str(const struct lx_buf *b);          /* "" when empty */

/* The terminal (docs/results.md#escaping): append s with every control
** byte shown, not sent -- C0 but LF and tab, DEL, and bytes not UTF-8 as
** \xHH, C1 controls (U+0080-U+009F in UTF-8) as \u00HH -- so a stored string
** holds no escape sequence, hyperlink, clipboard write, CR or BEL by the time
** it is printed. lx_term_printf formats, then writes the text so to f. */
void lx_esc_term(struct lx_buf *b, const char *s);
void lx_term_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Length of the UTF-8 sequence starting at s[0] (1..4) when s[0, n) starts with
** a well-formed one (RFC 3629: no overlong form, no surrogate, nothing past
** U+10FFFF), else 0. */
int lx_utf8_len(const unsigned char *s, size_t n);
/* qsort's comparison of two char * elements by strcmp. */
int lx_cmp_str(const void *a, const void *b);

/* Shortest decimal text that reads back to exactly v ("0.4", "512", "1e-09");
** "nan", "inf", "-inf" for the non-finite. out must hold 32 bytes. */
void lx_fmt_num(char out[32], double v);

/* Levenshtein distance, for "did you mean" hints. */
int lx_edit_distance(const char *a, const char *b);

/* The closest of n names to s, or NULL when none is close enough to suggest. */
const char *lx_closest(const char *s, const char *const *names, int n);

/* The three arguments of a "%s%s%s" that reads "did you mean 'NEAR'? ", or nothing when near is NULL (a hint's
** opening, with lx_closest's answer). near is read three times: pass a variable. */
#define LX_DID_YOU_MEAN(near) (near) ? "did you mean '" : "", (near) ? (near) : "", (near) ? "'? " : ""

/* The bytes the machine has available (/proc/meminfo MemAvailable, else
** sysconf; 1e18 when unknown, so that nothing is refused): what the memory
** plans (model.h, kvcache.h) check against. */
double lx_mem_available(void);
/* "12.3 MB" or "341.5 GB" into out; returns out. */
char *lx_fmt_bytes(char out[32], double bytes);

#endif
