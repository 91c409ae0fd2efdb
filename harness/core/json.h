/*
** harness/core/json.h - JSON documents (tokenizer.json, config.json, safetensors
** headers) as a small read-only API whose errors name the file and the field.
**
** harness/core/json.c is the only file that includes <jansson.h> (Debian's
** libjansson: strict UTF-8, 64-bit integers, errors with line and column).
**
** A document owns every value in it; values are borrowed pointers that live
** until lx_json_free. A parse error reads "file:line:column: <what>"; an error
** on a value names its path from the root, e.g.
**   tokenizer.json: model.merges[3]: expected a string, found a number
** Objects iterate in file order. Strings may contain NUL (\u0000): take the
** length with the string; a key with NUL is refused at parse time (jansson
** cannot hold one).
*/
#ifndef LX_JSON_H
#define LX_JSON_H

#include <stdint.h>

#include "harness/core/lx.h"

struct lx_json;         /* a parsed document (opaque) */
struct lx_jv;           /* a value inside a document (opaque, borrowed) */

enum lx_json_type {
    LX_JSON_NULL,
    LX_JSON_BOOL,
    LX_JSON_INT,        /* a number written without fraction or exponent */
    LX_JSON_REAL,       /* any other number */
    LX_JSON_STRING,
    LX_JSON_ARRAY,
    LX_JSON_OBJECT,
};

/* 2^53: a double holds every integer strictly within +-LX_JSON_EXACT exactly. */
#define LX_JSON_EXACT 9007199254740992.0

/* Parse n bytes of text; name is the source for messages (a file name). Any
** JSON value may be the root. Duplicate keys in an object, invalid UTF-8 and
** reals outside double are errors with name:line:column. A document with an
** integer outside int64 (1e30 written out in full) is read with all its
** integers as doubles: lx_json_int takes those that are whole and within
** +-(2^53 - 1) (LX_JSON_EXACT) and refuses the rest naming the path, a whole
** one past that as an integer out of range. */
int lx_json_parse(struct lx_json **out, const char *text, size_t n, const char *name, struct lx_error *err);

/* As lx_json_parse, for line `line` (1-based) of a JSON Lines file `name`, text[0, n) being that line
** without its newline: an error reads "name:line: not JSON at column C: what" (or "not JSON: the line is
** empty") with a hint, where a file's line and column would misplace it. The document is named "line". */
int lx_json_parse_line(struct lx_json **out, const char *text, size_t n, const char *name, long line,
                       struct lx_error *err);

/* Read and parse a file (at most max_bytes, 0 = no limit). */
int lx_json_load(struct lx_json **out, const char *path, long max_bytes, struct lx_error *err);

void lx_json_free(struct lx_json *doc);             /* accepts NULL */

const char *lx_json_name(const struct lx_json *doc);
const struct lx_jv *lx_json_root(const struct lx_json *doc);

enum lx_json_type lx_json_type(const struct lx_jv *v);    /* LX_JSON_NULL for NULL too */
const char *lx_json_type_name(enum lx_json_type t);  /* "a string", "an object", ... */

/* ---- navigation: NULL when absent or v is not of the right kind ---- */

const struct lx_jv *lx_json_member(const struct lx_jv *obj, const char *key);
const struct lx_jv *lx_json_at(const struct lx_jv *arr, long i);
long lx_json_len(const struct lx_jv *v);            /* array items, object members, else -1 */

/* Object members in file order:
**   for (void *it = lx_json_iter(obj); it; it = lx_json_iter_next(obj, it))
**       key = lx_json_iter_key(it, &key_len), value = lx_json_iter_value(it); */
void *lx_json_iter(const struct lx_jv *obj);        /* NULL when empty or not an object */
void *lx_json_iter_next(const struct lx_jv *obj, void *it);
const char *lx_json_iter_key(void *it, size_t *len);   /* len may be NULL */
const struct lx_jv *lx_json_iter_value(void *it);

/* ---- typed reads: LX_EINVAL naming the path and what was expected ---- */

int lx_json_str(const struct lx_json *doc, const struct lx_jv *v, const char **s, size_t *len,
                struct lx_error *err);      /* len may be NULL */
int lx_json_int(const struct lx_json *doc, const struct lx_jv *v, int64_t *out, struct lx_error *err);
int lx_json_num(const struct lx_json *doc, const struct lx_jv *v, double *out, struct lx_error *err);
int lx_json_bool(const struct lx_json *doc, const struct lx_jv *v, int *out, struct lx_error *err);

/* A member of obj that must be there, of type t (LX_JSON_REAL and LX_JSON_INT
** accept any number: read it with lx_json_num / lx_json_int); obj itself must
** be an object. */
int lx_json_need(const struct lx_json *doc, const struct lx_jv *obj, const char *key, enum lx_json_type t,
                 const struct lx_jv **out, struct lx_error *err);

/* The path of v from the root ("model.merges[3]", "" for the root) into out
** (n bytes); keys that are not plain identifiers are quoted. */
void lx_json_path(const struct lx_json *doc, const struct lx_jv *v, char *out, size_t n);

/* v as canonical JSON (compact, keys sorted) appended to out; when v is an
** object, its member `skip` (may be NULL) left out. */
void lx_json_canon(const struct lx_json *doc, const struct lx_jv *v, const char *skip, struct lx_buf *out);
/* Fill err with "<name>: <path>: <message>" and return LX_EINVAL: for checks
** the caller makes on a value (an unsupported "type", a bad id). */
int lx_json_err(struct lx_error *err, const struct lx_json *doc, const struct lx_jv *v, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The same for the member key of object obj ("<path of obj>.key"). The path
** of a value is found by searching the document for it, and true, false and
** null are one shared value each: lx_json_err on the `true` of
** "invert": true names the first true in the file. Errors on a member's
** value, whatever its type, go through here. */
int lx_json_member_err(struct lx_error *err, const struct lx_json *doc, const struct lx_jv *obj, const char *key,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
