/*
** tests/test_json.c - the JSON reader (harness/core/json.h): values, file order,
** errors at a known line:column, type mismatches named by their path, huge
** numbers, NUL inside strings, invalid UTF-8.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/core/json.h"

static struct lx_json *parse_ok(const char *text)
{
    struct lx_json *doc = NULL;
    struct lx_error err = {{0}};
    int rc = lx_json_parse(&doc, text, strlen(text), "t.json", &err);
    cr_assert_eq(rc, LX_OK, "%s", err.msg);
    return doc;
}

/* Parsing must fail with exactly `where` as the message's prefix and `what` in it. */
static void parse_bad(const char *text, size_t n, const char *where, const char *what)
{
    struct lx_json *doc = NULL;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_json_parse(&doc, text, n, "bad.json", &err), LX_EINVAL, "accepted: %s", text);
    cr_expect_null(doc);
    cr_expect(strncmp(err.msg, where, strlen(where)) == 0, "location: expected '%s', got: %s", where, err.msg);
    cr_expect(strstr(err.msg, what) != NULL, "expected '%s' in: %s", what, err.msg);
}

Test(json, values_and_navigation)
{
    struct lx_json *doc = parse_ok("{\"a\": 1, \"b\": [true, null, 2.5, \"x\"], \"c\": {\"d\": -7}}");
    const struct lx_jv *r = lx_json_root(doc);
    cr_expect_eq(lx_json_type(r), LX_JSON_OBJECT);
    cr_expect_eq(lx_json_len(r), 3);
    int64_t i = 0;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_json_int(doc, lx_json_member(r, "a"), &i, &err), LX_OK);
    cr_expect_eq(i, 1);
    const struct lx_jv *b = lx_json_member(r, "b");
    cr_expect_eq(lx_json_len(b), 4);
    int t = 0;
    cr_expect_eq(lx_json_bool(doc, lx_json_at(b, 0), &t, &err), LX_OK);
    cr_expect_eq(t, 1);
    cr_expect_eq(lx_json_type(lx_json_at(b, 1)), LX_JSON_NULL);
    double d = 0;
    cr_expect_eq(lx_json_num(doc, lx_json_at(b, 2), &d, &err), LX_OK);
    cr_expect_eq(d, 2.5);
    cr_expect_null(lx_json_at(b, 4));
    cr_expect_null(lx_json_at(b, -1));
    cr_expect_null(lx_json_member(b, "a"));
    cr_expect_null(lx_json_member(r, "zz"));
    const struct lx_jv *c = NULL;
    cr_expect_eq(lx_json_need(doc, r, "c", LX_JSON_OBJECT, &c, &err), LX_OK);
    cr_expect_eq(lx_json_int(doc, lx_json_member(c, "d"), &i, &err), LX_OK);
    cr_expect_eq(i, -7);
    cr_expect_eq(lx_json_len(lx_json_member(r, "a")), -1);
    lx_json_free(doc);
    lx_json_free(NULL);
}

Test(json, objects_iterate_in_file_order)
{
    struct lx_json *doc = parse_ok("{\"zeta\": 0, \"alpha\": 1, \"mid\": 2, \"\\u00e9\": 3}");
    const char *want[] = {"zeta", "alpha", "mid", "\xc3\xa9"};
    size_t want_len[] = {4, 5, 3, 2};
    int k = 0;
    const struct lx_jv *r = lx_json_root(doc);
    for (void *it = lx_json_iter(r); it; it = lx_json_iter_next(r, it), k++) {
        size_t len;
        const char *key = lx_json_iter_key(it, &len);
        cr_assert_lt(k, 4);
        cr_expect_eq(len, want_len[k], "key %d length %zu", k, len);
        cr_expect_eq(memcmp(key, want[k], strlen(want[k])), 0, "key %d is %s", k, key);
        int64_t v;
        cr_expect_eq(lx_json_int(doc, lx_json_iter_value(it), &v, NULL), LX_OK);
        cr_expect_eq(v, k);
    }
    cr_expect_eq(k, 4);
    lx_json_free(doc);
    /* jansson cannot hold a key with NUL: refused where it is written. */
    const char *nul = "{\"a\\u0000b\": 3}";
    parse_bad(nul, strlen(nul), "bad.json:1:", "NUL byte in object key");
}

Test(json, strings_carry_their_length_and_nul)
{
    struct lx_json *doc = parse_ok("[\"a\\u0000b\", \"\\u00e9\\ud83d\\ude00\", \"\"]");
    const char *s;
    size_t n;
    const struct lx_jv *r = lx_json_root(doc);
    cr_assert_eq(lx_json_str(doc, lx_json_at(r, 0), &s, &n, NULL), LX_OK);
    cr_expect_eq(n, 3);
    cr_expect_eq(memcmp(s, "a\0b", 3), 0);
    cr_assert_eq(lx_json_str(doc, lx_json_at(r, 1), &s, &n, NULL), LX_OK);
    cr_expect_eq(n, 6);   /* U+00E9 (2 bytes) + U+1F600 (4 bytes) */
    cr_expect_eq(memcmp(s, "\xc3\xa9\xf0\x9f\x98\x80", 6), 0);
    cr_assert_eq(lx_json_str(doc, lx_json_at(r, 2), &s, &n, NULL), LX_OK);
    cr_expect_eq(n, 0);
    lx_json_free(doc);
}

Test(json, syntax_errors_name_line_and_column)
{
    /* Line 3, column 8: the unexpected '}' after a comma. */
    const char *t = "{\n  \"a\": 1,\n  \"b\": }\n";
    parse_bad(t, strlen(t), "bad.json:3:8:", "unexpected token");
    const char *u = "[1, 2,\n 3\n";
    parse_bad(u, strlen(u), "bad.json:3:0:", "']' expected");
    parse_bad("", 0, "bad.json:", "invalid JSON");
    const char *dup = "{\"a\": 1, \"a\": 2}";
    parse_bad(dup, strlen(dup), "bad.json:1:", "duplicate object key");
}

Test(json, huge_numbers)
{
    struct lx_json *doc = parse_ok("[9223372036854775807, -9223372036854775808, 1e308, 3.0, 1e300]");
    const struct lx_jv *r = lx_json_root(doc);
    int64_t i;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_json_int(doc, lx_json_at(r, 0), &i, &err), LX_OK);
    cr_expect_eq(i, INT64_MAX);
    cr_expect_eq(lx_json_int(doc, lx_json_at(r, 1), &i, &err), LX_OK);
    cr_expect_eq(i, INT64_MIN);
    double d;
    cr_expect_eq(lx_json_num(doc, lx_json_at(r, 2), &d, &err), LX_OK);
    cr_expect_eq(d, 1e308);
    cr_expect_eq(lx_json_int(doc, lx_json_at(r, 3), &i, &err), LX_OK);
    cr_expect_eq(i, 3);
    cr_expect_eq(lx_json_int(doc, lx_json_at(r, 4), &i, &err), LX_EINVAL);
    /* 1e300 is a whole number, past what lenx holds: out of range, not "expected an integer" */
    cr_expect(strstr(err.msg, "t.json: [4]: the integer 1.0000000000000001e+300 is out of range: read as a double")
              != NULL, "%s", err.msg);
    lx_json_free(doc);
    /* Past int64 the document's integers are read as doubles: the huge one is
    ** refused by its path, the small ones still read as integers. */
    doc = parse_ok("{\"n\": 9223372036854775808, \"m\": 1000000000000000019884624838656, \"k\": 42}");
    r = lx_json_root(doc);
    cr_expect_eq(lx_json_int(doc, lx_json_member(r, "n"), &i, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "t.json: n: the integer 9.2233720368547758e+18 is out of range: read as a double "
                     "(written with a point or an exponent, or in a document holding an integer past 2^63), an "
                     "integer is taken from -(2^53 - 1) to 2^53 - 1 = 9007199254740991") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "\n  hint: give a smaller value") != NULL, "%s", err.msg);
    cr_expect_eq(lx_json_num(doc, lx_json_member(r, "m"), &d, &err), LX_OK);
    cr_expect_eq(d, 1e30);
    const struct lx_jv *k = NULL;
    cr_expect_eq(lx_json_need(doc, r, "k", LX_JSON_INT, &k, &err), LX_OK);
    cr_expect_eq(lx_json_int(doc, k, &i, &err), LX_OK);
    cr_expect_eq(i, 42);
    lx_json_free(doc);
    /* In such a document 2^53 - 1 is the largest integer taken: 2^53 + 1 reads as the double 2^53 and was
    ** taken as 9007199254740992, one off; a fraction is still not an integer */
    doc = parse_ok("{\"big\": 99999999999999999999, \"a\": 9007199254740991, \"b\": 9007199254740993, "
                   "\"c\": -9007199254740992, \"d\": 2.5}");
    r = lx_json_root(doc);
    cr_expect_eq(lx_json_int(doc, lx_json_member(r, "a"), &i, &err), LX_OK);
    cr_expect_eq(i, 9007199254740991LL);
    cr_expect_eq(lx_json_int(doc, lx_json_member(r, "b"), &i, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "t.json: b: the integer 9007199254740992 is out of range") != NULL, "%s", err.msg);
    cr_expect_eq(lx_json_int(doc, lx_json_member(r, "c"), &i, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "t.json: c: the integer -9007199254740992 is out of range") != NULL, "%s", err.msg);
    cr_expect_eq(lx_json_int(doc, lx_json_member(r, "big"), &i, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "t.json: big: the integer 1e+20 is out of range") != NULL, "%s", err.msg);
    cr_expect_eq(lx_json_int(doc, lx_json_member(r, "d"), &i, &err), LX_EINVAL);
    cr_expect_str_eq(err.msg, "t.json: d: expected an integer, found 2.5");
    lx_json_free(doc);
    const char *inf = "[\n1e400]";
    parse_bad(inf, strlen(inf), "bad.json:2:", "overflow");
}

Test(json, type_mismatches_name_the_path)
{
    struct lx_json *doc = parse_ok("{\"model\": {\"type\": \"BPE\", \"merges\": [\"a b\", \"c d\", \"e f\", 7],"
                                   " \"odd key\": {\"x\": []}}}");
    struct lx_error err = {{0}};
    const struct lx_jv *model = lx_json_member(lx_json_root(doc), "model");
    const struct lx_jv *m3 = lx_json_at(lx_json_member(model, "merges"), 3);
    const char *s;
    cr_expect_eq(lx_json_str(doc, m3, &s, NULL, &err), LX_EINVAL);
    cr_expect_str_eq(err.msg, "t.json: model.merges[3]: expected a string, found an integer");
    const struct lx_jv *v;
    cr_expect_eq(lx_json_need(doc, model, "vocab", LX_JSON_OBJECT, &v, &err), LX_EINVAL);
    cr_expect_null(v);
    cr_expect_str_eq(err.msg, "t.json: model.vocab: missing (expected an object)");
    cr_expect_eq(lx_json_need(doc, model, "type", LX_JSON_ARRAY, &v, &err), LX_EINVAL);
    cr_expect_str_eq(err.msg, "t.json: model.type: expected an array, found a string");
    const struct lx_jv *x = lx_json_member(lx_json_member(model, "odd key"), "x");
    int b;
    cr_expect_eq(lx_json_bool(doc, x, &b, &err), LX_EINVAL);
    cr_expect_str_eq(err.msg, "t.json: model[\"odd key\"].x: expected a boolean, found an array");
    double d;
    cr_expect_eq(lx_json_num(doc, lx_json_root(doc), &d, &err), LX_EINVAL);
    cr_expect_str_eq(err.msg, "t.json: (the document): expected a number, found an object");
    cr_expect_eq(lx_json_err(&err, doc, model, "unsupported type %s", "BPE"), LX_EINVAL);
    cr_expect_str_eq(err.msg, "t.json: model: unsupported type BPE");
    lx_json_free(doc);
}

Test(json, invalid_utf8_is_rejected)
{
    const char bad[] = "{\"a\": \"ok\",\n \"b\": \"\xff\xfe\"}";
    parse_bad(bad, sizeof bad - 1, "bad.json:2:7:", "unable to decode byte 0xff");
    parse_bad(bad, sizeof bad - 1, "bad.json:2:7:", "hint: JSON text must be UTF-8");
    const char overlong[] = "[\"\xc0\xaf\"]";
    parse_bad(overlong, sizeof overlong - 1, "bad.json:1:2:", "unable to decode byte 0xc0");
    const char lone[] = "[\"\\ud800\"]";
    parse_bad(lone, sizeof lone - 1, "bad.json:1:9:", "invalid Unicode '\\uD800'");
}

Test(json, files)
{
    char path[] = "/tmp/lenx-json-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"vocab_size\": 32000}\n", f);
    fclose(f);
    struct lx_json *doc = NULL;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_json_load(&doc, path, 0, &err), LX_OK, "%s", err.msg);
    cr_expect_str_eq(lx_json_name(doc), path);
    int64_t n = 0;
    cr_expect_eq(lx_json_int(doc, lx_json_member(lx_json_root(doc), "vocab_size"), &n, &err), LX_OK);
    cr_expect_eq(n, 32000);
    lx_json_free(doc);
    unlink(path);
    cr_expect_eq(lx_json_load(&doc, path, 0, &err), LX_EIO);
    cr_expect(strstr(err.msg, path) != NULL, "%s", err.msg);
}
