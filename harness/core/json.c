/*
** harness/core/json.c - JSON over jansson, the only file that includes <jansson.h>
** (the API and its error messages: json.h).
**
** A value handle (struct lx_jv *) is jansson's json_t * under another name, so
** navigation costs nothing. jansson keeps no parent links, so the path of a
** value in an error message is found by searching the tree from the root: an
** error is rare, and the search is linear in the document.
*/
#include "harness/core/json.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lx_json {
    json_t *root;   /* the document, owned */
    char *name;     /* source name for messages, owned */
};

#define J(v) ((json_t *)(v))
#define V(j) ((const struct lx_jv *)(j))

/* After a read with every integer as a double: the whole ones within 2^53
** become integers again, so one integer past int64 does not turn every
** other integer of the document into a number (only a whole number written
** with a point, 5.0, reads as an integer too in such a document). */
static int whole(double d)
{
    /* range first: casting a double past int64 to an integer is undefined; 2^53 itself is out, as it may be
    ** 2^53 + 1 rounded */
    return d > -LX_JSON_EXACT && d < LX_JSON_EXACT && d == (double)(int64_t)d;
}

static void ints_back(json_t *v)
{
    if (json_is_object(v)) {
        for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
            json_t *x = json_object_iter_value(it);
            if (json_is_real(x) && whole(json_real_value(x)))
                json_object_iter_set_new(v, it, json_integer((json_int_t)json_real_value(x)));
            else
                ints_back(x);
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *x = json_array_get(v, i);
            if (json_is_real(x) && whole(json_real_value(x)))
                json_array_set_new(v, i, json_integer((json_int_t)json_real_value(x)));
            else
                ints_back(x);
        }
    }
}

/* The value text[0, n) holds, or NULL with je filled. */
static json_t *load(const char *text, size_t n, json_error_t *je)
{
    size_t flags = JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL;
    json_t *root = json_loadb(text, n, flags, je);
    /* An integer past int64 (config files write 1e30 as 1000...000) is legal
    ** JSON: read the document's integers as doubles then, and turn those
    ** within 2^53 back into integers (ints_back). */
    if (!root && strstr(je->text, "too big integer") &&
        (root = json_loadb(text, n, flags | JSON_DECODE_INT_AS_REAL, je)) != NULL)
        ints_back(root);
    return root;
}

static struct lx_json *doc_new(json_t *root, const char *name)
{
    struct lx_json *doc = lx_xmalloc(sizeof *doc);
    doc->root = root;
    doc->name = lx_xstrdup(name);
    return doc;
}

int lx_json_parse(struct lx_json **out, const char *text, size_t n, const char *name, struct lx_error *err)
{
    json_error_t je;
    json_t *root = load(text, n, &je);
    *out = root ? doc_new(root, name) : NULL;
    if (!root)
        return lx_err(err, LX_EINVAL, "%s:%d:%d: invalid JSON: %s\n  hint: %s", name, je.line, je.column, je.text,
                      strstr(je.text, "decode byte") ? "JSON text must be UTF-8" : "is this a JSON file?");
    return LX_OK;
}

int lx_json_parse_line(struct lx_json **out, const char *text, size_t n, const char *name, long line,
                       struct lx_error *err)
{
    json_error_t je;
    json_t *root = load(text, n, &je);
    *out = root ? doc_new(root, "line") : NULL;    /* what its values' errors are named after */
    if (root)
        return LX_OK;
    const char *hint = strstr(je.text, "decode byte") ? "JSON text must be UTF-8"
                                                      : "a JSON Lines file holds one whole JSON value a line";
    size_t k = 0;
    while (k < n && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r'))
        k++;
    if (k == n)
        return lx_err(err, LX_EINVAL, "%s:%ld: not JSON: the line is empty\n  hint: %s", name, line, hint);
    return lx_err(err, LX_EINVAL, "%s:%ld: not JSON at column %d: %s\n  hint: %s", name, line, je.column, je.text,
                  hint);
}

int lx_json_load(struct lx_json **out, const char *path, long max_bytes, struct lx_error *err)
{
    unsigned char *bytes;
    long n;
    *out = NULL;
    int rc = lx_read_file(path, &bytes, &n, max_bytes, err);
    if (rc < 0)
        return rc;
    rc = lx_json_parse(out, (const char *)bytes, (size_t)n, path, err);
    free(bytes);
    return rc;
}

void lx_json_free(struct lx_json *doc)
{
    if (!doc)
        return;
    json_decref(doc->root);
    free(doc->name);
    free(doc);
}

const char *lx_json_name(const struct lx_json *doc) { return doc->name; }

const struct lx_jv *lx_json_root(const struct lx_json *doc) { return V(doc->root); }

enum lx_json_type lx_json_type(const struct lx_jv *v)
{
    if (!v)
        return LX_JSON_NULL;
    switch (json_typeof(J(v))) {
    case JSON_OBJECT: return LX_JSON_OBJECT;
    case JSON_ARRAY: return LX_JSON_ARRAY;
    case JSON_STRING: return LX_JSON_STRING;
    case JSON_INTEGER: return LX_JSON_INT;
    case JSON_REAL: return LX_JSON_REAL;
    case JSON_TRUE:
    case JSON_FALSE: return LX_JSON_BOOL;
    case JSON_NULL: break;
    }
    return LX_JSON_NULL;
}

const char *lx_json_type_name(enum lx_json_type t)
{
    static const char *const names[] = {
        [LX_JSON_NULL] = "null",         [LX_JSON_BOOL] = "a boolean", [LX_JSON_INT] = "an integer",
        [LX_JSON_REAL] = "a number",     [LX_JSON_STRING] = "a string", [LX_JSON_ARRAY] = "an array",
        [LX_JSON_OBJECT] = "an object",
    };
    return names[t];
}

/* ---- navigation ---- */

const struct lx_jv *lx_json_member(const struct lx_jv *obj, const char *key)
{
    return obj && json_is_object(J(obj)) ? V(json_object_get(J(obj), key)) : NULL;
}

const struct lx_jv *lx_json_at(const struct lx_jv *arr, long i)
{
    return arr && json_is_array(J(arr)) && i >= 0 ? V(json_array_get(J(arr), (size_t)i)) : NULL;
}

long lx_json_len(const struct lx_jv *v)
{
    if (v && json_is_array(J(v)))
        return (long)json_array_size(J(v));
    if (v && json_is_object(J(v)))
        return (long)json_object_size(J(v));
    return -1;
}

void *lx_json_iter(const struct lx_jv *obj)
{
    return obj && json_is_object(J(obj)) ? json_object_iter(J(obj)) : NULL;
}

void *lx_json_iter_next(const struct lx_jv *obj, void *it) { return json_object_iter_next(J(obj), it); }

const char *lx_json_iter_key(void *it, size_t *len)
{
    if (len)
        *len = json_object_iter_key_len(it);
    return json_object_iter_key(it);
}

const struct lx_jv *lx_json_iter_value(void *it) { return V(json_object_iter_value(it)); }

/* ---- paths and errors ---- */

/* Append one step to the path: .key, ["odd key"] or [i]. */
static void path_step(char *out, size_t n, const char *key, size_t key_len, long index)
{
    size_t at = strlen(out);
    if (at >= n - 1)
        return;
    if (!key) {
        snprintf(out + at, n - at, "[%ld]", index);
        return;
    }
    int plain = key_len > 0 && (isalpha((unsigned char)key[0]) || key[0] == '_');
    for (size_t i = 0; plain && i < key_len; i++)
        plain = isalnum((unsigned char)key[i]) || key[i] == '_' || key[i] == '-';
    if (plain)
        snprintf(out + at, n - at, "%s%.*s", at ? "." : "", (int)key_len, key);
    else
        snprintf(out + at, n - at, "[\"%.*s\"]", (int)(key_len > 40 ? 40 : key_len), key);
}

/* Depth-first search for target below node; on success out holds its path. */
static int path_find(json_t *node, json_t *target, char *out, size_t n)
{
    if (node == target)
        return 1;
    size_t at = strlen(out);
    if (json_is_array(node)) {
        for (size_t i = 0; i < json_array_size(node); i++) {
            path_step(out, n, NULL, 0, (long)i);
            if (path_find(json_array_get(node, i), target, out, n))
                return 1;
            out[at] = '\0';
        }
    } else if (json_is_object(node)) {
        for (void *it = json_object_iter(node); it; it = json_object_iter_next(node, it)) {
            path_step(out, n, json_object_iter_key(it), json_object_iter_key_len(it), 0);
            if (path_find(json_object_iter_value(it), target, out, n))
                return 1;
            out[at] = '\0';
        }
    }
    return 0;
}

void lx_json_path(const struct lx_json *doc, const struct lx_jv *v, char *out, size_t n)
{
    LX_ASSERT(n > 0);
    out[0] = '\0';
    if (!path_find(doc->root, J(v), out, n))
        snprintf(out, n, "?");
}

int lx_json_err(struct lx_error *err, const struct lx_json *doc, const struct lx_jv *v, const char *fmt, ...)
{
    if (!err)
        return LX_EINVAL;
    char path[256], msg[LX_ERR_MAX];
    lx_json_path(doc, v, path, sizeof path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lx_err(err, LX_EINVAL, "%s: %s: %s", doc->name, path[0] ? path : "(the document)", msg);
}

int lx_json_member_err(struct lx_error *err, const struct lx_json *doc, const struct lx_jv *obj, const char *key,
                       const char *fmt, ...)
{
    if (!err)
        return LX_EINVAL;
    char path[256], msg[LX_ERR_MAX];
    lx_json_path(doc, obj, path, sizeof path);
    path_step(path, sizeof path, key, strlen(key), 0);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lx_err(err, LX_EINVAL, "%s: %s: %s", doc->name, path, msg);
}

static int type_err(struct lx_error *err, const struct lx_json *doc, const struct lx_jv *v, enum lx_json_type want)
{
    return lx_json_err(err, doc, v, "expected %s, found %s", lx_json_type_name(want),
                       lx_json_type_name(lx_json_type(v)));
}

/* ---- typed reads ---- */

int lx_json_str(const struct lx_json *doc, const struct lx_jv *v, const char **s, size_t *len, struct lx_error *err)
{
    if (!json_is_string(J(v)))
        return type_err(err, doc, v, LX_JSON_STRING);
    *s = json_string_value(J(v));
    if (len)
        *len = json_string_length(J(v));
    return LX_OK;
}

int lx_json_int(const struct lx_json *doc, const struct lx_jv *v, int64_t *out, struct lx_error *err)
{
    if (json_is_integer(J(v))) {
        *out = (int64_t)json_integer_value(J(v));
        return LX_OK;
    }
    /* 512.0 is an integer too, where a double holds it exactly. */
    if (json_is_real(J(v))) {
        double d = json_real_value(J(v));
        if (whole(d)) {
            *out = (int64_t)d;
            return LX_OK;
        }
        if (d == floor(d))      /* every double past 2^52 is a whole number, and 1e20 was written as one */
            return lx_json_err(err, doc, v, "the integer %.17g is out of range: read as a double (written with a "
                               "point or an exponent, or in a document holding an integer past 2^63), an integer "
                               "is taken from -(2^53 - 1) to 2^53 - 1 = 9007199254740991, where a double is exact; "
                               "written as plain digits otherwise, from -2^63 to 2^63 - 1\n  hint: give a smaller "
                               "value", d);
        return lx_json_err(err, doc, v, "expected an integer, found %.17g", d);
    }
    return type_err(err, doc, v, LX_JSON_INT);
}

int lx_json_num(const struct lx_json *doc, const struct lx_jv *v, double *out, struct lx_error *err)
{
    if (!json_is_number(J(v)))
        return type_err(err, doc, v, LX_JSON_REAL);
    *out = json_number_value(J(v));
    return LX_OK;
}

int lx_json_bool(const struct lx_json *doc, const struct lx_jv *v, int *out, struct lx_error *err)
{
    if (!json_is_boolean(J(v)))
        return type_err(err, doc, v, LX_JSON_BOOL);
    *out = json_is_true(J(v));
    return LX_OK;
}

int lx_json_need(const struct lx_json *doc, const struct lx_jv *obj, const char *key, enum lx_json_type t,
                 const struct lx_jv **out, struct lx_error *err)
{
    *out = NULL;
    if (!json_is_object(J(obj)))
        return type_err(err, doc, obj, LX_JSON_OBJECT);
    const struct lx_jv *v = lx_json_member(obj, key);
    if (!v)
        return lx_json_member_err(err, doc, obj, key, "missing (expected %s)", lx_json_type_name(t));
    enum lx_json_type vt = lx_json_type(v);
    int number = (t == LX_JSON_REAL || t == LX_JSON_INT) && (vt == LX_JSON_REAL || vt == LX_JSON_INT);
    if (vt != t && !number)
        return lx_json_member_err(err, doc, obj, key, "expected %s, found %s", lx_json_type_name(t),
                                  lx_json_type_name(vt));
    *out = v;
    return LX_OK;
}

void lx_json_canon(const struct lx_json *doc, const struct lx_jv *v, const char *skip, struct lx_buf *out)
{
    (void)doc;
    json_t *c = json_deep_copy(J(v));
    if (c && skip && json_is_object(c))
        json_object_del(c, skip);
    char *s = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    lx_buf_puts(out, s ? s : "null");
    free(s);
    json_decref(c);
}
