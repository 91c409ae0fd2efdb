/*
** harness/engine/safetensors.c - reading and writing safetensors files (see
** safetensors.h for the layout).
**
** The header is parsed by a small strict JSON parser (objects, arrays,
** strings with escapes, integers; nothing else appears in a safetensors
** header) into a tree of struct jval, which read_header() then checks against
** the format and moves into a struct lx_st_file. Every rejection names the
** file and, where it has one, the byte offset in the header.
**
** The writer builds the header text in a struct lx_buf, pads it with spaces so
** the data buffer starts 8-byte aligned, and streams header and tensors into
** path + ".tmp", hashing the same bytes as it goes, then renames the temporary
** over path: a reader sees the old file or the new one, never half of one.
**
** Floats are stored little-endian and copied with memcpy; the host is asserted
** little-endian (every machine lenx targets is).
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/safetensors.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/core/hash.h"

#define ST_MAX_HEADER 100000000u    /* bytes; the reference implementation's limit */
#define ST_MAX_DEPTH 32             /* JSON nesting; a real header needs 3 */
#define ST_NO_OFFSET ((size_t)-1)   /* herr(): no header position to report */
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
** JSON: just enough for a safetensors header, and strict about it.
*/

enum { J_OBJ, J_ARR, J_STR, J_INT };

struct jval {
    int type;               /* J_OBJ, J_ARR, J_STR or J_INT */
    size_t off;             /* byte offset of the value in the header */
    char *str;              /* J_STR: NUL-terminated UTF-8 */
    int64_t num;            /* J_INT */
    int n;                  /* J_OBJ, J_ARR: members */
    char **keys;            /* J_OBJ: (n,) member names; NULL once moved out */
    struct jval *items;     /* J_OBJ, J_ARR: (n,) members */
};

struct jparse {
    const unsigned char *s; /* (n,) header text, not NUL-terminated */
    size_t n;               /* header length in bytes */
    size_t i;               /* cursor */
    const char *path;       /* the file, for messages */
    struct lx_error *err;   /* where messages go */
};

static void jval_free(struct jval *v)
{
    free(v->str);
    for (int k = 0; k < v->n; k++) {
        if (v->keys)
            free(v->keys[k]);
        jval_free(&v->items[k]);
    }
    free(v->keys);
    free(v->items);
    memset(v, 0, sizeof *v);
}

/* A syntax error at header byte off. */
static int jerr(struct jparse *p, size_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int jerr(struct jparse *p, size_t off, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return lx_err(p->err, LX_EINVAL,
                  "%s: malformed header at header byte %zu (file byte %zu): %s\n"
                  "  hint: " HINT_DAMAGED "; its header is the JSON object after the first 8 bytes",
                  p->path, off, off + 8, what);
}

/* A well-formed header that breaks the format's rules; off may be ST_NO_OFFSET. */
static int herr(struct jparse *p, size_t off, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int herr(struct jparse *p, size_t off, const char *hint, const char *fmt, ...)
{
    char what[768], where[64] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (off != ST_NO_OFFSET)
        snprintf(where, sizeof where, " (header byte %zu)", off);
    return lx_err(p->err, LX_EINVAL, "%s: %s%s\n  hint: %s", p->path, what, where, hint);
}

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

static void skip_ws(struct jparse *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* Four hex digits at header byte at, all before limit; -1 when not. */
static int hex4(const struct jparse *p, size_t at, size_t limit, unsigned *out)
{
    unsigned v = 0;
    if (at + 4 > limit)
        return -1;
    for (int k = 0; k < 4; k++) {
        unsigned char c = p->s[at + k];
        v <<= 4;
        if (is_digit(c))
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A \uXXXX escape (with its low surrogate when it is a high one) starting at
** header byte *i, the backslash, and ending before end. Appends UTF-8 to o. */
static int parse_u_escape(struct jparse *p, size_t *i, size_t end, char *o, size_t *k)
{
    size_t at = *i;
    unsigned cp, lo;
    if (hex4(p, at + 2, end, &cp))
        return jerr(p, at, "\\u must be followed by 4 hex digits");
    *i = at + 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return jerr(p, at, "lone low surrogate \\u%04X", cp);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (*i + 1 >= end || p->s[*i] != '\\' || p->s[*i + 1] != 'u' || hex4(p, *i + 2, end, &lo) ||
            lo < 0xDC00 || lo > 0xDFFF)
            return jerr(p, at, "high surrogate \\u%04X is not followed by a low surrogate \\uDC00..\\uDFFF", cp);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        *i += 6;
    }
    if (cp == 0)
        return jerr(p, at, "\\u0000 (NUL) inside a string is not supported");
    *k += put_utf8(o + *k, cp);
    return LX_OK;
}

/* A string at the cursor (on its opening quote) into a new NUL-terminated *out. */
static int parse_string(struct jparse *p, char **out)
{
    static const char esc_in[] = "\"\\/bfnrt", esc_out[] = "\"\\/\b\f\n\r\t";
    size_t start = p->i, end = start + 1;
    while (end < p->n && p->s[end] != '"')
        end += p->s[end] == '\\' ? 2 : 1;
    if (end >= p->n)
        return jerr(p, start, "unterminated string");
    char *o = lx_xmalloc(end - start);      /* decoding never lengthens the text */
    size_t i = start + 1, k = 0;
    while (i < end) {
        unsigned char c = p->s[i];
        const char *e;
        int rc = LX_OK;
        if (c < 0x20)
            rc = jerr(p, i, "raw control character 0x%02x in a string (it must be escaped)", c);
        else if (c != '\\')
            o[k++] = (char)c, i++;
        else if (p->s[i + 1] == 'u')
            rc = parse_u_escape(p, &i, end, o, &k);
        else if (p->s[i + 1] != '\0' && (e = strchr(esc_in, p->s[i + 1])) != NULL)
            o[k++] = esc_out[e - esc_in], i += 2;
        else
            rc = jerr(p, i, "unknown escape: backslash then byte 0x%02x", p->s[i + 1]);
        if (rc < 0) {
            free(o);
            return rc;
        }
    }
    o[k] = '\0';
    p->i = end + 1;
    *out = o;
    return LX_OK;
}

/* An integer at the cursor: -?(0|[1-9][0-9]*), within int64; no fractions or exponents. */
static int parse_int(struct jparse *p, struct jval *v)
{
    size_t at = p->i;
    int neg = p->s[p->i] == '-';
    uint64_t u = 0;
    p->i += neg;
    if (p->i >= p->n || !is_digit(p->s[p->i]))
        return jerr(p, at, "'-' is not followed by a digit");
    if (p->s[p->i] == '0' && p->i + 1 < p->n && is_digit(p->s[p->i + 1]))
        return jerr(p, at, "a number with a leading zero");
    for (; p->i < p->n && is_digit(p->s[p->i]); p->i++) {
        unsigned d = p->s[p->i] - '0';
        if (u > ((uint64_t)INT64_MAX - d) / 10)
            return jerr(p, at, "an integer out of the 64-bit range");
        u = u * 10 + d;
    }
    if (p->i < p->n && (p->s[p->i] == '.' || p->s[p->i] == 'e' || p->s[p->i] == 'E'))
        return jerr(p, at, "a fractional number (only integers appear in a safetensors header)");
    v->type = J_INT;
    v->num = neg ? -(int64_t)u : (int64_t)u;
    return LX_OK;
}

/* Sorts (key, offset) pairs by key, to find duplicates in n log n. */
struct keyref {
    const char *key;        /* a member name */
    size_t off;             /* its value's header offset */
};

static int keyref_cmp(const void *a, const void *b)
{
    const struct keyref *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->off > y->off) - (x->off < y->off);
}

static int check_dup_keys(struct jparse *p, const struct jval *v)
{
    struct keyref *r = lx_xmalloc((size_t)v->n * sizeof *r);
    int rc = LX_OK;
    for (int k = 0; k < v->n; k++)
        r[k] = (struct keyref){v->keys[k], v->items[k].off};
    qsort(r, (size_t)v->n, sizeof *r, keyref_cmp);
    for (int k = 1; k < v->n && rc == LX_OK; k++)
        if (strcmp(r[k - 1].key, r[k].key) == 0)
            rc = jerr(p, r[k].off, "duplicate key \"%s\" in an object", r[k].key);
    free(r);
    return rc;
}

static int parse_value(struct jparse *p, struct jval *v, int depth);

/* An object or array at the cursor; on error v holds what was parsed so far. */
static int parse_container(struct jparse *p, struct jval *v, int depth)
{
    int is_obj = p->s[p->i] == '{', cap = 0, rc;
    unsigned char close = is_obj ? '}' : ']';
    if (depth >= ST_MAX_DEPTH)
        return jerr(p, p->i, "nesting deeper than %d levels", ST_MAX_DEPTH);
    v->type = is_obj ? J_OBJ : J_ARR;
    p->i++;
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        return LX_OK;
    }
    for (;;) {
        char *key = NULL;
        struct jval item;
        skip_ws(p);
        if (is_obj) {
            if (p->i >= p->n || p->s[p->i] != '"')
                return jerr(p, p->i, "expected a string key in an object");
            if ((rc = parse_string(p, &key)) < 0)
                return rc;
            skip_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') {
                rc = jerr(p, p->i, "expected ':' after the key \"%s\"", key);
                free(key);
                return rc;
            }
            p->i++;
        }
        if ((rc = parse_value(p, &item, depth + 1)) < 0) {
            free(key);
            return rc;
        }
        if (v->n == cap) {
            cap = cap ? 2 * cap : 4;
            v->items = lx_xrealloc(v->items, (size_t)cap * sizeof *v->items);
            if (is_obj)
                v->keys = lx_xrealloc(v->keys, (size_t)cap * sizeof *v->keys);
        }
        if (is_obj)
            v->keys[v->n] = key;
        v->items[v->n++] = item;
        skip_ws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->i < p->n && p->s[p->i] == close) {
            p->i++;
            break;
        }
        return jerr(p, p->i, "expected ',' or '%c' in an %s", close, is_obj ? "object" : "array");
    }
    return is_obj ? check_dup_keys(p, v) : LX_OK;
}

/* Any value at the cursor (after whitespace); on error v is freed and zeroed. */
static int parse_value(struct jparse *p, struct jval *v, int depth)
{
    int rc;
    memset(v, 0, sizeof *v);
    skip_ws(p);
    v->off = p->i;
    if (p->i >= p->n)
        return jerr(p, p->i, "unexpected end of the header");
    unsigned char c = p->s[p->i];
    if (c == '{' || c == '[') {
        rc = parse_container(p, v, depth);
    } else if (c == '"') {
        v->type = J_STR;
        rc = parse_string(p, &v->str);
    } else if (c == '-' || is_digit(c)) {
        rc = parse_int(p, v);
    } else if (c == 't' || c == 'f' || c == 'n') {
        rc = jerr(p, p->i, "true, false and null do not appear in a safetensors header");
    } else if (c >= 0x20 && c < 0x7F) {
        rc = jerr(p, p->i, "unexpected character '%c'", c);
    } else {
        rc = jerr(p, p->i, "unexpected byte 0x%02x", c);
    }
    if (rc < 0)
        jval_free(v);
    return rc;
}

/* The whole header: one object, then nothing but whitespace (the padding). */
static int parse_header(struct jparse *p, struct jval *root)
{
    size_t bad;
    memset(root, 0, sizeof *root);
    if (!utf8_valid(p->s, p->n, &bad))
        return jerr(p, bad, "invalid UTF-8");
    if (p->n == 0 || p->s[0] != '{')
        return jerr(p, 0, "the header does not begin with '{'");
    int rc = parse_value(p, root, 0);
    if (rc < 0)
        return rc;
    skip_ws(p);
    if (p->i < p->n) {
        jval_free(root);
        return jerr(p, p->i, "more text after the header object");
    }
    return LX_OK;
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

/* binary16 bits to float: sign, 5-bit exponent (bias 15), 10-bit fraction;
** subnormals scaled by 2^-24, exponent 31 is Inf or NaN. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = h >> 10 & 0x1F, m = h & 0x3FF, bits;
    float f;
    if (e == 0) {
        f = ldexpf((float)m, -24);
        return sign ? -f : f;
    }
    bits = e == 31 ? sign | 0x7F800000u | m << 13 : sign | (e - 15 + 127) << 23 | m << 13;
    memcpy(&f, &bits, 4);
    return f;
}

void lx_st_to_f32(float *out, const void *src, int dtype, size_t n)
{
    const unsigned char *b = src;
    if (dtype == LX_ST_F32) {
        memcpy(out, src, 4 * n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint16_t h = (uint16_t)(b[2 * i] | b[2 * i + 1] << 8);
        if (dtype == LX_ST_F16) {
            out[i] = half_to_float(h);
        } else {
            uint32_t bits = (uint32_t)h << 16;
            memcpy(&out[i], &bits, 4);
        }
    }
}

/* ---------------------------------------------------------------------------
** From the JSON tree to a struct lx_st_file.
*/

/* "[2, 3]" into out (128 bytes holds LX_ST_MAX_DIMS longs). */
static const char *fmt_shape(char out[128], int ndim, const long *shape)
{
    size_t k = (size_t)snprintf(out, 128, "[");
    for (int d = 0; d < ndim; d++)
        k += (size_t)snprintf(out + k, 128 - k, "%s%ld", d ? ", " : "", shape[d]);
    snprintf(out + k, 128 - k, "]");
    return out;
}

/* The shape array of tensor name into e; *count = number of floats. */
static int read_shape(struct jparse *p, const char *name, const struct jval *v, struct lx_st_entry *e,
                      uint64_t *count)
{
    const uint64_t limit = UINT64_C(1) << 60;   /* floats; 4 * limit bytes still fits */
    int zero = 0;
    if (v->type != J_ARR)
        return herr(p, v->off, HINT_ENTRY, "tensor '%s': shape is not an array", name);
    if (v->n > LX_ST_MAX_DIMS)
        return herr(p, v->off, "lenx tensors have at most LX_ST_MAX_DIMS = 4 dimensions",
                    "tensor '%s' has %d dimensions, more than %d", name, v->n, LX_ST_MAX_DIMS);
    for (int d = 0; d < v->n; d++) {
        if (v->items[d].type != J_INT || v->items[d].num < 0)
            return herr(p, v->items[d].off, HINT_ENTRY, "tensor '%s': shape entry %d is not a non-negative integer",
                        name, d);
        e->shape[d] = (long)v->items[d].num;
        zero |= e->shape[d] == 0;
    }
    e->ndim = v->n;
    *count = 1;
    for (int d = 0; d < v->n && !zero; d++) {
        if ((uint64_t)e->shape[d] > limit / *count)
            return herr(p, v->off, HINT_DAMAGED, "tensor '%s': shape is too large", name);
        *count *= (uint64_t)e->shape[d];
    }
    if (zero)
        *count = 0;
    return LX_OK;
}

/* data_offsets of tensor name into e, checked against the buffer and the size of the shape at e->dtype. */
static int read_offsets(struct jparse *p, const char *name, const struct jval *v, struct lx_st_entry *e,
                        uint64_t count, size_t n_data)
{
    char sh[128];
    if (v->type != J_ARR || v->n != 2 || v->items[0].type != J_INT || v->items[1].type != J_INT)
        return herr(p, v->off, HINT_ENTRY, "tensor '%s': data_offsets is not [begin, end] (two integers)", name);
    int64_t b = v->items[0].num, en = v->items[1].num;
    if (b < 0 || en < b)
        return herr(p, v->off, HINT_DAMAGED, "tensor '%s': data_offsets [%" PRId64 ", %" PRId64 "] do not satisfy "
                    "0 <= begin <= end", name, b, en);
    if ((uint64_t)en > n_data)
        return herr(p, v->off, "the file is truncated, or its header is wrong",
                    "tensor '%s': data_offsets [%" PRId64 ", %" PRId64 "] run past the end of the %zu-byte data buffer",
                    name, b, en, n_data);
    uint64_t size = (uint64_t)lx_st_dtype_size(e->dtype);
    if ((uint64_t)(en - b) != size * count)
        return herr(p, v->off, HINT_DAMAGED, "tensor '%s': shape %s holds %" PRIu64 " %s values = %" PRIu64
                    " bytes, but data_offsets [%" PRId64 ", %" PRId64 "] span %" PRId64 " bytes",
                    name, fmt_shape(sh, e->ndim, e->shape), count, lx_st_dtype_name(e->dtype), size * count, b,
                    en, en - b);
    e->begin = (size_t)b;
    e->end = (size_t)en;
    return LX_OK;
}

/* One tensor entry {"dtype", "shape", "data_offsets"} into e (its name is set by the caller). */
static int read_entry(struct jparse *p, const char *name, const struct jval *v, size_t n_data,
                      struct lx_st_entry *e)
{
    const struct jval *dtype = NULL, *shape = NULL, *offs = NULL;
    uint64_t count = 0;
    int rc;
    if (v->type != J_OBJ)
        return herr(p, v->off, HINT_ENTRY, "tensor '%s' is not an object", name);
    for (int k = 0; k < v->n; k++) {
        if (strcmp(v->keys[k], "dtype") == 0)
            dtype = &v->items[k];
        else if (strcmp(v->keys[k], "shape") == 0)
            shape = &v->items[k];
        else if (strcmp(v->keys[k], "data_offsets") == 0)
            offs = &v->items[k];
        else
            return herr(p, v->items[k].off, HINT_ENTRY, "tensor '%s' has an unknown field \"%s\"", name, v->keys[k]);
    }
    if (!dtype || !shape || !offs)
        return herr(p, v->off, HINT_ENTRY, "tensor '%s' has no \"%s\"", name,
                    !dtype ? "dtype" : !shape ? "shape" : "data_offsets");
    if (dtype->type != J_STR)
        return herr(p, dtype->off, HINT_ENTRY, "tensor '%s': dtype is not a string", name);
    if ((e->dtype = lx_st_dtype_of(dtype->str)) < 0)
        return herr(p, dtype->off, "lenx reads F32, F16 and BF16; convert the checkpoint first, e.g. in PyTorch "
                    "save {k: v.float() for k, v in state_dict.items()}",
                    "tensor '%s' has dtype %s, which lenx does not read", name, dtype->str);
    if ((rc = read_shape(p, name, shape, e, &count)) < 0)
        return rc;
    return read_offsets(p, name, offs, e, count, n_data);
}

/* __metadata__: an object of strings, moved into f->meta. */
static int read_meta(struct jparse *p, struct jval *v, struct lx_st_file *f)
{
    if (v->type != J_OBJ)
        return herr(p, v->off, "__metadata__ maps strings to strings", "__metadata__ is not an object");
    for (int k = 0; k < v->n; k++)
        if (v->items[k].type != J_STR)
            return herr(p, v->items[k].off, "safetensors metadata maps strings to strings; encode other values "
                        "as JSON text inside a string", "__metadata__ value of \"%s\" is not a string", v->keys[k]);
    f->meta = lx_xcalloc(2 * (size_t)v->n, sizeof *f->meta);
    for (int k = 0; k < v->n; k++) {
        f->meta[2 * k] = v->keys[k];
        f->meta[2 * k + 1] = v->items[k].str;
        v->keys[k] = v->items[k].str = NULL;
    }
    f->n_meta = v->n;
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
static int check_overlap(struct jparse *p, struct lx_st_file *f)
{
    const struct lx_st_entry *reach = NULL;    /* the non-empty tensor ending furthest so far */
    qsort(f->entries, (size_t)f->n_entries, sizeof *f->entries, entry_cmp);
    for (int k = 0; k < f->n_entries; k++) {
        const struct lx_st_entry *e = &f->entries[k];
        if (e->begin == e->end)
            continue;
        if (reach && e->begin < reach->end)
            return herr(p, ST_NO_OFFSET, HINT_DAMAGED, "tensors '%s' (bytes %zu..%zu) and '%s' (bytes %zu..%zu) "
                        "overlap in the data buffer", reach->name, reach->begin, reach->end, e->name, e->begin,
                        e->end);
        if (!reach || e->end > reach->end)
            reach = e;
    }
    return LX_OK;
}

/* The parsed header object into f: entries and metadata. */
static int read_header(struct jparse *p, struct jval *root, struct lx_st_file *f)
{
    int rc = LX_OK;
    f->entries = lx_xcalloc((size_t)root->n, sizeof *f->entries);
    for (int k = 0; k < root->n && rc == LX_OK; k++) {
        if (strcmp(root->keys[k], "__metadata__") == 0) {
            rc = read_meta(p, &root->items[k], f);
        } else {
            struct lx_st_entry *e = &f->entries[f->n_entries];
            rc = read_entry(p, root->keys[k], &root->items[k], f->n_data, e);
            if (rc == LX_OK) {
                e->name = root->keys[k];
                root->keys[k] = NULL;
                f->n_entries++;
            }
        }
    }
    return rc < 0 ? rc : check_overlap(p, f);
}

/* ---------------------------------------------------------------------------
** Reading.
*/

static void sha256_hex(const void *data, size_t n, struct lx_sha256 *s, char out[65])
{
    uint8_t d[32];
    if (n)
        lx_sha256_update(s, data, n);
    lx_sha256_final(s, d);
    for (int k = 0; k < 32; k++)
        snprintf(out + 2 * k, 3, "%02x", d[k]);
}

/* The whole file mapped read-only at f->bytes (pages are read as tensors are
** converted, once). */
static int load_file(struct lx_st_file *f, const char *path, struct lx_error *err)
{
    int rc = lx_map_file(path, &f->bytes, &f->n_bytes, err);
    if (rc == LX_OK && f->n_bytes < 8)
        rc = lx_err(err, LX_EINVAL, "%s: the file is %zu bytes, too short for the 8-byte header length\n"
                    "  hint: the file is empty or truncated, or not a safetensors file", path, f->n_bytes);
    return rc;
}

/* Header length, header, data buffer of the loaded bytes. */
static int parse_file(struct lx_st_file *f, const char *path, struct lx_error *err)
{
    struct lx_sha256 s;
    struct jval root;
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
    lx_sha256_init(&s);
    sha256_hex(f->bytes, f->n_bytes, &s, f->sha256);
    f->data = f->bytes + 8 + n;
    f->n_data = f->n_bytes - 8 - (size_t)n;
    struct jparse p = {f->bytes + 8, (size_t)n, 0, path, err};
    int rc = parse_header(&p, &root);
    if (rc == LX_OK)
        rc = read_header(&p, &root, f);
    jval_free(&root);
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

int lx_st_read(const struct lx_st_file *f, const char *name, int ndim, const long *shape, float *out,
               struct lx_error *err)
{
    char want[128], have[128];
    LX_ASSERT(ndim >= 0 && ndim <= LX_ST_MAX_DIMS);
    const struct lx_st_entry *e = find_entry(f, name);
    if (!e)
        return no_such_tensor(f, name, err);
    int same = e->ndim == ndim;
    for (int d = 0; d < ndim && same; d++)
        same = e->shape[d] == shape[d];
    if (!same)
        return lx_err(err, LX_EINVAL, "tensor '%s' in %s has shape %s, expected %s\n"
                      "  hint: the checkpoint was written for a different model configuration",
                      name, f->path, fmt_shape(have, e->ndim, e->shape), fmt_shape(want, ndim, shape));
    if (e->end > e->begin)
        lx_st_to_f32(out, f->data + e->begin, e->dtype, (e->end - e->begin) / (size_t)lx_st_dtype_size(e->dtype));
    return LX_OK;
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

static int check_tensors(const char *path, const struct lx_st_tensor *t, int n, struct lx_error *err)
{
    for (int i = 0; i < n; i++) {
        int64_t count = tensor_count(&t[i]);
        if (!good_text(t[i].name) || !t[i].name[0] || strcmp(t[i].name, "__metadata__") == 0)
            return lx_err(err, LX_EINVAL, "%s: tensor %d has no usable name (NULL, empty, invalid UTF-8 or "
                          "\"__metadata__\")\n  hint: name tensors like 'blocks.0.attn.wq'", path, i);
        if (count < 0)
            return lx_err(err, LX_EINVAL, "%s: tensor '%s' has an invalid shape (ndim %d, at most %d, sizes >= 0)\n"
                          "  hint: this is a bug in the caller", path, t[i].name, t[i].ndim, LX_ST_MAX_DIMS);
        if (count > 0 && !t[i].data)
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

/* Header and data into tmp, then rename over path; tmp never survives a failure. */
static int write_file(const char *path, const char *tmp, const struct lx_buf *h, const struct lx_st_tensor *t,
                      int n, char *sha256_out, struct lx_error *err)
{
    struct lx_sha256 s;
    unsigned char len8[8];
    FILE *fp = fopen(tmp, "wb");
    if (!fp)
        return lx_err(err, LX_EIO, "%s: cannot create %s: %s\n  hint: does the directory exist, and is it "
                      "writable?", path, tmp, strerror(errno));
    lx_sha256_init(&s);
    for (int k = 0; k < 8; k++)
        len8[k] = (unsigned char)((uint64_t)h->len >> (8 * k));
    errno = 0;
    int ok = put(fp, &s, len8, 8) && put(fp, &s, h->s, h->len);
    for (int i = 0; i < n && ok; i++)
        ok = put(fp, &s, t[i].data, 4 * (size_t)tensor_count(&t[i]));
    int saved = errno;
    if (fclose(fp) != 0 && ok)
        ok = 0, saved = errno;
    if (!ok) {
        remove(tmp);
        return lx_err(err, LX_EIO, "%s: cannot write %s: %s\n  hint: is the disk full?", path, tmp,
                      saved ? strerror(saved) : "short write");
    }
    if (rename(tmp, path) != 0) {
        saved = errno;
        remove(tmp);
        return lx_err(err, LX_EIO, "%s: cannot rename %s to it: %s\n  hint: is path a directory, or on another "
                      "file system?", path, tmp, strerror(saved));
    }
    if (sha256_out)
        sha256_hex(NULL, 0, &s, sha256_out);
    return LX_OK;
}

int lx_st_write(const char *path, const struct lx_st_tensor *t, int n, const char *const *meta, int n_meta,
                char *sha256_hex_out, struct lx_error *err)
{
    LX_ASSERT(host_is_little_endian());
    LX_ASSERT(n >= 0 && n_meta >= 0 && (t || n == 0) && (meta || n_meta == 0));
    int rc = check_tensors(path, t, n, err);
    if (rc == LX_OK)
        rc = check_meta(path, meta, n_meta, err);
    if (rc < 0)
        return rc;
    struct lx_buf h = {0}, tmp = {0};
    build_header(&h, t, n, meta, n_meta);
    /* one temporary file per writer: processes saving the same path never share it */
    char host[256] = "unknown";
    if (gethostname(host, sizeof host - 1) != 0)
        strcpy(host, "unknown");
    host[sizeof host - 1] = '\0';
    lx_buf_printf(&tmp, "%s.tmp.%s.%ld", path, host, (long)getpid());
    rc = write_file(path, lx_buf_str(&tmp), &h, t, n, sha256_hex_out, err);
    lx_buf_free(&h);
    lx_buf_free(&tmp);
    return rc;
}
