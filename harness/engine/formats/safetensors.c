/*
** harness/engine/formats/safetensors.c - reading and writing safetensors files (see
** safetensors.h for the layout).
**
** The header is parsed by harness/core/json.h (jansson: strict UTF-8,
** duplicate keys refused, errors with line and column), then read_header()
** checks it against the format, strictly (integers only where integers
** belong, no unknown fields, no NUL inside a name or value), into a struct
** lx_st_file. Every rejection names the file and the header field.
**
** The writer builds the header text in a struct lx_buf, pads it with spaces so
** the data buffer starts 8-byte aligned, and streams header and tensors into
** a temporary beside path, hashing the same bytes as it goes, then renames it
** over path (lx_write_atomic): a reader sees the old file or the new one,
** never half of one.
**
** Floats are stored little-endian and copied with memcpy; the host is asserted
** little-endian (every machine lenx targets is).
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/formats/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/core/hash.h"
#include "harness/core/hashcache.h"
#include "harness/core/json.h"

#define ST_MAX_HEADER 100000000u    /* bytes; the reference implementation's limit */
#define ST_MAX_LISTED 16            /* names listed in a "no tensor" message */

#define HINT_DAMAGED "the file is damaged or not a safetensors file"
#define HINT_ENTRY "a tensor entry is {\"dtype\": \"F32\", \"shape\": [...], \"data_offsets\": [begin, end]}"

static int host_is_little_endian(void)
{
    const uint32_t one = 1;
    unsigned char low;
    memcpy(&low, &one, 1);
    return low == 1;
}

/* ---------------------------------------------------------------------------
** UTF-8, for what the writer stores.
*/

/* 1 when s (n bytes) is valid UTF-8 (no overlongs, surrogates or code points past
** U+10FFFF); otherwise 0 and *bad is the offset of the first bad sequence. */
static int utf8_valid(const unsigned char *s, size_t n, size_t *bad)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i], cp, min;
        size_t len;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0)
            len = 2, cp = c & 0x1F, min = 0x80;
        else if ((c & 0xF0) == 0xE0)
            len = 3, cp = c & 0x0F, min = 0x800;
        else if ((c & 0xF8) == 0xF0)
            len = 4, cp = c & 0x07, min = 0x10000;
        else
            break;
        if (i + len > n)
            break;
        size_t k = 1;
        for (; k < len && (s[i + k] & 0xC0) == 0x80; k++)
            cp = cp << 6 | (s[i + k] & 0x3F);
        if (k < len || cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            break;
        i += len;
    }
    *bad = i;
    return i == n;
}

/* ---------------------------------------------------------------------------
** Dtypes: F32 as stored; F16 (IEEE binary16) and BF16 (the top half of an
** F32) widened exactly.
*/

static const char *const dtype_names[] = {"F32", "F16", "BF16"};

int lx_st_dtype_of(const char *s)
{
    for (int k = 0; k < 3; k++)
        if (strcmp(s, dtype_names[k]) == 0)
            return k;
    return -1;
}

const char *lx_st_dtype_name(int dtype)
{
    LX_ASSERT(dtype >= 0 && dtype < 3);
    return dtype_names[dtype];
}

int lx_st_dtype_size(int dtype)
{
    return dtype == LX_ST_F32 ? 4 : 2;
}

int lx_st_dt(int dtype)
{
    return dtype == LX_ST_BF16 ? LX_DT_BF16 : dtype == LX_ST_F16 ? LX_DT_F16 : LX_DT_F32;
}

void lx_st_to_f32(float *out, const void *src, int dtype, size_t n)
{
    lx_half_to_f32(out, src, lx_st_dt(dtype), n);
}

/* ---------------------------------------------------------------------------
** From the parsed header (harness/core/json.h) to a struct lx_st_file.
*/

struct hctx {
    const struct lx_json *doc;  /* the parsed header */
    const char *path;           /* the file, for messages */
    struct lx_error *err;       /* where messages go */
};

/* A well-formed header that breaks the format's rules at value v. */
static int herr(const struct hctx *h, const struct lx_jv *v, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int herr(const struct hctx *h, const struct lx_jv *v, const char *hint, const char *fmt, ...)
{
    char what[768], where[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    lx_json_path(h->doc, v, where, sizeof where);
    return lx_err(h->err, LX_EINVAL, "%s: %s (header field %s)\n  hint: %s", h->path, what,
                  where[0] ? where : "(the root)", hint);
}

/* "[2, 3]" into out (128 bytes holds LX_ST_MAX_DIMS longs). */
static const char *fmt_shape(char out[128], int ndim, const long *shape)
{
    size_t k = (size_t)snprintf(out, 128, "[");
    for (int d = 0; d < ndim; d++)
        k += (size_t)snprintf(out + k, 128 - k, "%s%ld", d ? ", " : "", shape[d]);
    snprintf(out + k, 128 - k, "]");
    return out;
}

/* A string without NUL characters (C strings end at the first), or NULL. */
static const char *plain_str(const struct hctx *h, const struct lx_jv *v)
{
    const char *s;
    size_t len;
    struct lx_error sub;
    if (lx_json_type(v) != LX_JSON_STRING || lx_json_str(h->doc, v, &s, &len, &sub) < 0 || strlen(s) != len)
        return NULL;
    return s;
}

/* A non-negative integer, or -1. */
static int64_t count_of(const struct hctx *h, const struct lx_jv *v)
{
    int64_t x;
    struct lx_error sub;
    enum lx_json_type t = lx_json_type(v);
    if ((t != LX_JSON_INT && t != LX_JSON_REAL) || lx_json_int(h->doc, v, &x, &sub) < 0 || x < 0)
        return -1;
    return x;
}

/* The shape array of tensor name into e; *count = number of values. */
static int read_shape(const struct hctx *h, const char *name, const struct lx_jv *v, struct lx_st_entry *e,
                      uint64_t *count)
{
    const uint64_t limit = UINT64_C(1) << 60;   /* values; 4 * limit bytes still fits */
    int zero = 0;
    long n = lx_json_len(v);
    if (lx_json_type(v) != LX_JSON_ARRAY)
        return herr(h, v, HINT_ENTRY, "tensor '%s': shape is not an array", name);
    if (n > LX_ST_MAX_DIMS)
        return herr(h, v, "lenx tensors have at most LX_ST_MAX_DIMS = 4 dimensions",
                    "tensor '%s' has %ld dimensions, more than %d", name, n, LX_ST_MAX_DIMS);
    for (long d = 0; d < n; d++) {
        int64_t x = count_of(h, lx_json_at(v, d));
        if (x < 0)
            return herr(h, lx_json_at(v, d), HINT_ENTRY, "tensor '%s': shape entry %ld is not a non-negative "
                        "integer", name, d);
        e->shape[d] = (long)x;
        zero |= x == 0;
    }
    e->ndim = (int)n;
    *count = 1;
    for (long d = 0; d < n && !zero; d++) {
        if ((uint64_t)e->shape[d] > limit / *count)
            return herr(h, v, HINT_DAMAGED, "tensor '%s': shape is too large", name);
        *count *= (uint64_t)e->shape[d];
    }
    if (zero)
        *count = 0;
    return LX_OK;
}

/* data_offsets of tensor name into e, checked against the buffer and the size of the shape at e->dtype. */
static int read_offsets(const struct hctx *h, const char *name, const struct lx_jv *v, struct lx_st_entry *e,
                        uint64_t count, size_t n_data)
{
    char sh[128];
    int64_t b = lx_json_len(v) == 2 ? count_of(h, lx_json_at(v, 0)) : -1;
    int64_t en = lx_json_len(v) == 2 ? count_of(h, lx_json_at(v, 1)) : -1;
    if (lx_json_type(v) != LX_JSON_ARRAY || b < 0 || en < 0)
        return herr(h, v, HINT_ENTRY, "tensor '%s': data_offsets is not [begin, end] (two integers >= 0)", name);
    if (en < b)
        return herr(h, v, HINT_DAMAGED, "tensor '%s': data_offsets [%" PRId64 ", %" PRId64 "] do not satisfy "
                    "0 <= begin <= end", name, b, en);
    if ((uint64_t)en > n_data)
        return herr(h, v, "the file is truncated, or its header is wrong",
                    "tensor '%s': data_offsets [%" PRId64 ", %" PRId64 "] run past the end of the %zu-byte data buffer",
                    name, b, en, n_data);
    uint64_t size = (uint64_t)lx_st_dtype_size(e->dtype);
    if ((uint64_t)(en - b) != size * count)
        return herr(h, v, HINT_DAMAGED, "tensor '%s': shape %s holds %" PRIu64 " %s values = %" PRIu64
                    " bytes, but data_offsets [%" PRId64 ", %" PRId64 "] span %" PRId64 " bytes",
                    name, fmt_shape(sh, e->ndim, e->shape), count, lx_st_dtype_name(e->dtype), size * count, b,
                    en, en - b);
    e->begin = (size_t)b;
    e->end = (size_t)en;
    return LX_OK;
}

/* One tensor entry {"dtype", "shape", "data_offsets"} into e (its name is set by the caller). */
static int read_entry(const struct hctx *h, const char *name, const struct lx_jv *v, size_t n_data,
                      struct lx_st_entry *e)
{
    const struct lx_jv *dtype, *shape, *offs;
    const char *ds;
    uint64_t count = 0;
    int rc;
    if (lx_json_type(v) != LX_JSON_OBJECT)
        return herr(h, v, HINT_ENTRY, "tensor '%s' is not an object", name);
    for (void *it = lx_json_iter(v); it; it = lx_json_iter_next(v, it)) {
        const char *k = lx_json_iter_key(it, NULL);
        if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets"))
            return herr(h, lx_json_iter_value(it), HINT_ENTRY, "tensor '%s' has an unknown field \"%s\"", name, k);
    }
    dtype = lx_json_member(v, "dtype"), shape = lx_json_member(v, "shape"), offs = lx_json_member(v, "data_offsets");
    if (!dtype || !shape || !offs)
        return herr(h, v, HINT_ENTRY, "tensor '%s' has no \"%s\"", name,
                    !dtype ? "dtype" : !shape ? "shape" : "data_offsets");
    if (!(ds = plain_str(h, dtype)))
        return herr(h, dtype, HINT_ENTRY, "tensor '%s': dtype is not a string", name);
    if ((e->dtype = lx_st_dtype_of(ds)) < 0)
        return herr(h, dtype, "lenx reads F32, F16 and BF16; convert the checkpoint first, e.g. in PyTorch "
                    "save {k: v.float() for k, v in state_dict.items()}",
                    "tensor '%s' has dtype %s, which lenx does not read", name, ds);
    if ((rc = read_shape(h, name, shape, e, &count)) < 0)
        return rc;
    return read_offsets(h, name, offs, e, count, n_data);
}

/* __metadata__: an object of strings, copied into f->meta. */
static int read_meta(const struct hctx *h, const struct lx_jv *v, struct lx_st_file *f)
{
    if (lx_json_type(v) != LX_JSON_OBJECT)
        return herr(h, v, "__metadata__ maps strings to strings", "__metadata__ is not an object");
    long n = lx_json_len(v);
    f->meta = lx_xcalloc(2 * (size_t)n + 1, sizeof *f->meta);
    for (void *it = lx_json_iter(v); it; it = lx_json_iter_next(v, it)) {
        const char *s = plain_str(h, lx_json_iter_value(it)), *k = lx_json_iter_key(it, NULL);
        if (!s)
            return herr(h, lx_json_iter_value(it), "safetensors metadata maps strings to strings; encode other "
                        "values as JSON text inside a string", "__metadata__ value of \"%s\" is not a string "
                        "(without NUL characters)", k);
        f->meta[2 * f->n_meta] = lx_xstrdup(k);
        f->meta[2 * f->n_meta + 1] = lx_xstrdup(s);
        f->n_meta++;
    }
    return LX_OK;
}

static int entry_cmp(const void *a, const void *b)
{
    const struct lx_st_entry *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Sort by data offset and reject two non-empty tensors sharing a byte. */
static int check_overlap(const struct hctx *h, struct lx_st_file *f)
{
    const struct lx_st_entry *reach = NULL;    /* the non-empty tensor ending furthest so far */
    qsort(f->entries, (size_t)f->n_entries, sizeof *f->entries, entry_cmp);
    for (int k = 0; k < f->n_entries; k++) {
        const struct lx_st_entry *e = &f->entries[k];
        if (e->begin == e->end)
            continue;
        if (reach && e->begin < reach->end)
            return lx_err(h->err, LX_EINVAL, "%s: tensors '%s' (bytes %zu..%zu) and '%s' (bytes %zu..%zu) overlap "
                          "in the data buffer\n  hint: " HINT_DAMAGED, h->path, reach->name, reach->begin,
                          reach->end, e->name, e->begin, e->end);
        if (!reach || e->end > reach->end)
            reach = e;
    }
    return LX_OK;
}

/* The parsed header object into f: entries and metadata. */
static int read_header(const struct hctx *h, struct lx_st_file *f)
{
    const struct lx_jv *root = lx_json_root(h->doc);
    int rc = LX_OK;
    if (lx_json_type(root) != LX_JSON_OBJECT)
        return herr(h, root, HINT_DAMAGED "; its header is the JSON object after the first 8 bytes",
                    "the header is %s, not an object", lx_json_type_name(lx_json_type(root)));
    f->entries = lx_xcalloc((size_t)lx_json_len(root) + 1, sizeof *f->entries);
    for (void *it = lx_json_iter(root); it && rc == LX_OK; it = lx_json_iter_next(root, it)) {
        const char *k = lx_json_iter_key(it, NULL);
        if (strcmp(k, "__metadata__") == 0) {
            rc = read_meta(h, lx_json_iter_value(it), f);
        } else {
            struct lx_st_entry *e = &f->entries[f->n_entries];
            rc = read_entry(h, k, lx_json_iter_value(it), f->n_data, e);
            if (rc == LX_OK) {
                e->name = lx_xstrdup(k);
                f->n_entries++;
            }
        }
    }
    return rc < 0 ? rc : check_overlap(h, f);
}

/* ---------------------------------------------------------------------------
** Reading.
*/

/* The whole file mapped read-only at f->bytes (its header is parsed there),
** and open for lx_st_read, which reads tensors with pread: from the page
** cache in bulk, none of it left resident beside the converted weights, and
** a file that shrank after it was opened is a short read, not a SIGBUS. */
static int load_file(struct lx_st_file *f, const char *path, struct lx_error *err)
{
    int rc = lx_map_file(path, &f->bytes, &f->n_bytes, err);
    if (rc == LX_OK && (f->fd = open(path, O_RDONLY)) >= 0)
        f->has_fd = 1;
    else if (rc == LX_OK)
        rc = lx_err(err, LX_EIO, "%s: cannot open: %s\n  hint: check the path", path, strerror(errno));
    if (rc == LX_OK && f->n_bytes < 8)
        rc = lx_err(err, LX_EINVAL, "%s: the file is %zu bytes, too short for the 8-byte header length\n"
                    "  hint: the file is empty or truncated, or not a safetensors file", path, f->n_bytes);
    return rc;
}

/* Header length, header, data buffer of the loaded bytes. */
static int parse_file(struct lx_st_file *f, const char *path, struct lx_error *err)
{
    uint64_t n = 0;
    for (int k = 0; k < 8; k++)
        n |= (uint64_t)f->bytes[k] << (8 * k);
    if (n > ST_MAX_HEADER)
        return lx_err(err, LX_EINVAL, "%s: header length %" PRIu64 " is over the limit of %u bytes\n"
                      "  hint: " HINT_DAMAGED " (it starts with the header length, a little-endian u64)",
                      path, n, ST_MAX_HEADER);
    if (n > f->n_bytes - 8)
        return lx_err(err, LX_EINVAL, "%s: header length %" PRIu64 " is larger than the %zu bytes after it\n"
                      "  hint: the file is truncated, or " HINT_DAMAGED, path, n, f->n_bytes - 8);
    if (lx_hashcache_file_sha256(path, f->n_bytes, f->sha256) < 0)     /* remembered: docs/checkpoints.md */
        return lx_err(err, LX_EIO, "%s: the file changed while it was read (it is no longer %zu bytes)\n"
                      "  hint: read it again once nothing writes it", path, f->n_bytes);
    f->data = f->bytes + 8 + n;
    f->n_data = f->n_bytes - 8 - (size_t)n;
    struct lx_buf name = {0};
    struct lx_json *doc;
    lx_buf_printf(&name, "%s: header", path);
    int rc = lx_json_parse(&doc, (const char *)f->bytes + 8, (size_t)n, lx_buf_str(&name), err);
    if (rc == LX_OK) {
        struct hctx h = {doc, path, err};
        rc = read_header(&h, f);
    }
    lx_json_free(doc);
    lx_buf_free(&name);
    return rc;
}

int lx_st_open(struct lx_st_file *f, const char *path, struct lx_error *err)
{
    LX_ASSERT(host_is_little_endian());
    memset(f, 0, sizeof *f);
    int rc = load_file(f, path, err);
    if (rc == LX_OK)
        rc = parse_file(f, path, err);
    if (rc < 0)
        lx_st_close(f);
    else
        f->path = lx_xstrdup(path);
    return rc;
}

static const struct lx_st_entry *find_entry(const struct lx_st_file *f, const char *name)
{
    for (int k = 0; k < f->n_entries; k++)
        if (strcmp(f->entries[k].name, name) == 0)
            return &f->entries[k];
    return NULL;
}

static int no_such_tensor(const struct lx_st_file *f, const char *name, struct lx_error *err)
{
    struct lx_buf names = {0};
    const char **all = lx_xcalloc((size_t)f->n_entries, sizeof *all);
    for (int k = 0; k < f->n_entries; k++) {
        all[k] = f->entries[k].name;
        if (k < ST_MAX_LISTED)
            lx_buf_printf(&names, "%s%s", k ? ", " : "", all[k]);
    }
    if (f->n_entries > ST_MAX_LISTED)
        lx_buf_printf(&names, ", ... (%d more)", f->n_entries - ST_MAX_LISTED);
    const char *near = lx_closest(name, all, f->n_entries);
    int rc = lx_err(err, LX_EINVAL, "no tensor '%s' in %s; it has: %s\n  hint: %s%s%s", name, f->path,
                    f->n_entries ? lx_buf_str(&names) : "(none)", near ? "did you mean '" : "",
                    near ? near : "the checkpoint is for a different model", near ? "'?" : "");
    free(all);
    lx_buf_free(&names);
    return rc;
}

/* The bytes of a tensor read and widened to F32 at a time. */
#define ST_READ_PIECE ((size_t)8 << 20)

/* Tensor e's data into out as F32, read from the file in pieces (F32 straight
** into out; F16/BF16 through a buffer, widened). A short read names the file
** and the tensor. */
static int read_tensor(const struct lx_st_file *f, const struct lx_st_entry *e, float *out, struct lx_error *err)
{
    size_t esize = (size_t)lx_st_dtype_size(e->dtype), n = (e->end - e->begin) / esize;
    off_t at = (off_t)((size_t)(f->data - f->bytes) + e->begin);
    size_t piece = ST_READ_PIECE / esize, done = 0;
    unsigned char *buf = esize == 4 || n == 0 ? NULL : lx_xmalloc((piece < n ? piece : n) * esize);
    int rc = LX_OK;
    while (done < n && rc == LX_OK) {
        size_t k = n - done < piece ? n - done : piece, want = k * esize;
        unsigned char *dst = buf ? buf : (unsigned char *)(out + done);
        size_t got = f->has_fd ? lx_pread_all(f->fd, dst, want, (long long)at + (long long)(done * esize)) : 0;
        if (got < want)
            rc = lx_err(err, LX_EIO, "tensor '%s' in %s: %zu of its %zu bytes could not be read (the file shrank "
                        "or failed after it was opened)\n  hint: load it again once nothing writes it",
                        e->name, f->path, done * esize + got, n * esize);
        else if (buf)
            lx_st_to_f32(out + done, buf, e->dtype, k);
        done += k;
    }
    free(buf);
    return rc;
}

const struct lx_st_entry *lx_st_entry_of(const struct lx_st_file *f, const char *name, int ndim, const long *shape,
                                         struct lx_error *err)
{
    char want[128], have[128];
    LX_ASSERT(ndim >= 0 && ndim <= LX_ST_MAX_DIMS);
    const struct lx_st_entry *e = find_entry(f, name);
    if (!e)
        return no_such_tensor(f, name, err), NULL;
    int same = e->ndim == ndim;
    for (int d = 0; d < ndim && same; d++)
        same = e->shape[d] == shape[d];
    if (!same)
        return lx_err(err, LX_EINVAL, "tensor '%s' in %s has shape %s, expected %s\n"
                      "  hint: the checkpoint was written for a different model configuration",
                      name, f->path, fmt_shape(have, e->ndim, e->shape), fmt_shape(want, ndim, shape)), NULL;
    return e;
}

int lx_st_read(const struct lx_st_file *f, const char *name, int ndim, const long *shape, float *out,
               struct lx_error *err)
{
    const struct lx_st_entry *e = lx_st_entry_of(f, name, ndim, shape, err);
    return e ? read_tensor(f, e, out, err) : LX_EINVAL;
}

void *lx_st_take_map(struct lx_st_file *f, size_t *n)
{
    void *p = (void *)f->bytes;
    *n = f->n_bytes;
    f->bytes = NULL;
    return p;
}

const char *lx_st_meta(const struct lx_st_file *f, const char *key)
{
    for (int k = 0; k < f->n_meta; k++)
        if (strcmp(f->meta[2 * k], key) == 0)
            return f->meta[2 * k + 1];
    return NULL;
}

void lx_st_close(struct lx_st_file *f)
{
    if (!f)
        return;
    for (int k = 0; k < f->n_entries; k++)
        free(f->entries[k].name);
    free(f->entries);
    for (int k = 0; k < 2 * f->n_meta; k++)
        free(f->meta[k]);
    free(f->meta);
    lx_unmap_file(f->bytes, f->n_bytes);
    if (f->has_fd)
        close(f->fd);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* ---------------------------------------------------------------------------
** Writing.
*/

/* Floats in tensor t, or -1 when its shape is invalid or too large. */
static int64_t tensor_count(const struct lx_st_tensor *t)
{
    const int64_t limit = INT64_C(1) << 60;
    int64_t count = 1;
    if (t->ndim < 0 || t->ndim > LX_ST_MAX_DIMS)
        return -1;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] < 0)
            return -1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0)
            return 0;
        if (t->shape[d] > limit / count)
            return -1;
        count *= t->shape[d];
    }
    return count;
}

/* A name or metadata string the writer can store: not NULL, valid UTF-8. */
static int good_text(const char *s)
{
    size_t bad;
    return s && utf8_valid((const unsigned char *)s, strlen(s), &bad);
}

static int check_tensors(const char *path, const struct lx_st_tensor *t, int n, int has_reader, struct lx_error *err)
{
    for (int i = 0; i < n; i++) {
        int64_t count = tensor_count(&t[i]);
        if (!good_text(t[i].name) || !t[i].name[0] || strcmp(t[i].name, "__metadata__") == 0)
            return lx_err(err, LX_EINVAL, "%s: tensor %d has no usable name (NULL, empty, invalid UTF-8 or "
                          "\"__metadata__\")\n  hint: name tensors like 'blocks.0.attn.wq'", path, i);
        if (count < 0)
            return lx_err(err, LX_EINVAL, "%s: tensor '%s' has an invalid shape (ndim %d, at most %d, sizes >= 0)\n"
                          "  hint: this is a bug in the caller", path, t[i].name, t[i].ndim, LX_ST_MAX_DIMS);
        if (count > 0 && !t[i].data && !has_reader)
            return lx_err(err, LX_EINVAL, "%s: tensor '%s' has no data\n  hint: this is a bug in the caller",
                          path, t[i].name);
        for (int j = 0; j < i; j++)
            if (strcmp(t[i].name, t[j].name) == 0)
                return lx_err(err, LX_EINVAL, "%s: two tensors are named '%s'\n  hint: names must be unique",
                              path, t[i].name);
    }
    return LX_OK;
}

static int check_meta(const char *path, const char *const *meta, int n_meta, struct lx_error *err)
{
    for (int i = 0; i < n_meta; i++) {
        if (!good_text(meta[2 * i]) || !good_text(meta[2 * i + 1]))
            return lx_err(err, LX_EINVAL, "%s: metadata pair %d has a NULL or non-UTF-8 key or value\n"
                          "  hint: metadata maps strings to strings", path, i);
        for (int j = 0; j < i; j++)
            if (strcmp(meta[2 * i], meta[2 * j]) == 0)
                return lx_err(err, LX_EINVAL, "%s: metadata key '%s' is given twice\n  hint: keys must be unique",
                              path, meta[2 * i]);
    }
    return LX_OK;
}

/* The header JSON, padded with spaces so that 8 + its length is a multiple of 8. */
static void build_header(struct lx_buf *h, const struct lx_st_tensor *t, int n, const char *const *meta,
                         int n_meta)
{
    size_t off = 0;
    lx_buf_puts(h, "{");
    if (n_meta > 0) {
        lx_buf_puts(h, "\"__metadata__\":{");
        for (int i = 0; i < n_meta; i++) {
            lx_buf_puts(h, i ? "," : "");
            lx_buf_json_str(h, meta[2 * i]);
            lx_buf_puts(h, ":");
            lx_buf_json_str(h, meta[2 * i + 1]);
        }
        lx_buf_puts(h, "}");
    }
    for (int i = 0; i < n; i++) {
        size_t bytes = 4 * (size_t)tensor_count(&t[i]);
        lx_buf_puts(h, i || n_meta > 0 ? "," : "");
        lx_buf_json_str(h, t[i].name);
        lx_buf_puts(h, ":{\"dtype\":\"F32\",\"shape\":[");
        for (int d = 0; d < t[i].ndim; d++)
            lx_buf_printf(h, "%s%ld", d ? "," : "", t[i].shape[d]);
        lx_buf_printf(h, "],\"data_offsets\":[%zu,%zu]}", off, off + bytes);
        off += bytes;
    }
    lx_buf_puts(h, "}");
    while ((8 + h->len) % 8 != 0)
        lx_buf_puts(h, " ");
}

/* fwrite that also hashes; 1 on success. */
static int put(FILE *fp, struct lx_sha256 *s, const void *data, size_t n)
{
    if (n == 0)
        return 1;
    lx_sha256_update(s, data, n);
    return fwrite(data, 1, n, fp) == n;
}

/* What write_body writes: the header, then each tensor's data, hashed as written. */
struct st_out {
    const struct lx_buf *h;
    const struct lx_st_tensor *t;
    const struct lx_st_reader *rd;  /* NULL: the tensors' data */
    int n;
    struct lx_sha256 s;
};

static int write_body(FILE *fp, void *ctx)
{
    struct st_out *o = ctx;
    unsigned char len8[8];
    for (int k = 0; k < 8; k++)
        len8[k] = (unsigned char)((uint64_t)o->h->len >> (8 * k));
    int ok = put(fp, &o->s, len8, 8) && put(fp, &o->s, o->h->s, o->h->len);
    float *vals = NULL;
    for (int i = 0; i < o->n && ok; i++) {
        size_t count = (size_t)tensor_count(&o->t[i]);
        if (!o->rd) {
            ok = put(fp, &o->s, o->t[i].data, 4 * count);
            continue;
        }
        if (!vals)
            vals = lx_xmalloc(sizeof(float) * LX_ST_CHUNK);
        for (size_t at = 0; at < count && ok; at += LX_ST_CHUNK) {
            size_t k = count - at < LX_ST_CHUNK ? count - at : LX_ST_CHUNK;
            o->rd[i].read(o->rd[i].ctx, at, k, vals);
            ok = put(fp, &o->s, vals, 4 * k);
        }
    }
    free(vals);
    return ok;
}

static int st_write(const char *path, const struct lx_st_tensor *t, const struct lx_st_reader *rd, int n,
                    const char *const *meta, int n_meta, char *sha256_hex_out, struct lx_error *err)
{
    LX_ASSERT(host_is_little_endian());
    LX_ASSERT(n >= 0 && n_meta >= 0 && (t || n == 0) && (meta || n_meta == 0));
    int rc = check_tensors(path, t, n, rd != NULL, err);
    if (rc == LX_OK)
        rc = check_meta(path, meta, n_meta, err);
    if (rc < 0)
        return rc;
    struct lx_buf h = {0};
    build_header(&h, t, n, meta, n_meta);
    struct st_out o = {.h = &h, .t = t, .rd = rd, .n = n};
    lx_sha256_init(&o.s);
    rc = lx_write_atomic(path, write_body, &o, err);
    if (rc == LX_OK && sha256_hex_out)
        lx_sha256_final_hex(&o.s, sha256_hex_out);
    lx_buf_free(&h);
    return rc;
}

int lx_st_write(const char *path, const struct lx_st_tensor *t, int n, const char *const *meta, int n_meta,
                char *sha256_hex_out, struct lx_error *err)
{
    return st_write(path, t, NULL, n, meta, n_meta, sha256_hex_out, err);
}

int lx_st_write_read(const char *path, const struct lx_st_tensor *t, const struct lx_st_reader *rd, int n,
                     const char *const *meta, int n_meta, struct lx_error *err)
{
    return st_write(path, t, rd, n, meta, n_meta, NULL, err);
}
