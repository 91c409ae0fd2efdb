/*
** tests/test_safetensors.c - the safetensors reader and writer: round trips,
** the exact header layout, a file written independently by
** tests/ref/make_safetensors_ref.py (committed as
** tests/ref/safetensors_ref.safetensors), and the error message of every way a
** file can be wrong. Each test writes under its own mkdtemp folder in /tmp.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <dirent.h>
#include <glob.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/formats/safetensors.h"
#include "harness/core/hash.h"
#include "harness/core/lx.h"

static char dir[64];            /* this test's mkdtemp folder */

static void setup(void)
{
    strcpy(dir, "/tmp/lenx-st-XXXXXX");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp failed");
}

static void teardown(void)
{
    char path[512];
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

TestSuite(safetensors, .init = setup, .fini = teardown);

static void in_dir(char out[256], const char *name)
{
    snprintf(out, 256, "%s/%s", dir, name);
}

/* How many temporaries of path's writers exist (path.tmp.<host>.<pid>). */
static size_t temporaries(const char *path)
{
    char pat[300];
    glob_t g;
    snprintf(pat, sizeof pat, "%s.tmp*", path);
    size_t n = glob(pat, 0, NULL, &g) == 0 ? g.gl_pathc : 0;
    if (n)
        globfree(&g);
    return n;
}

/* The whole file; *n its size. Caller frees. */
static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    *n = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *b = malloc(*n ? *n : 1);
    cr_assert_eq(fread(b, 1, *n, fp), *n);
    fclose(fp);
    return b;
}

/* SHA-256 of a file, computed here from its bytes. */
static void file_sha256(const char *path, char hex[65])
{
    size_t n;
    unsigned char *b = slurp(path, &n);
    struct lx_sha256 s;
    uint8_t d[32];
    lx_sha256_init(&s);
    lx_sha256_update(&s, b, n);
    lx_sha256_final(&s, d);
    for (int k = 0; k < 32; k++)
        sprintf(hex + 2 * k, "%02x", d[k]);
    free(b);
}

/* A hand-made file: u64 little-endian header length (n_header, or strlen(header) when
** n_header is 0), the header text, then n_data bytes 0, 1, 2, ... */
static void write_raw(const char *path, const char *header, uint64_t n_header, size_t n_data)
{
    FILE *fp = fopen(path, "wb");
    cr_assert_not_null(fp);
    uint64_t n = n_header ? n_header : strlen(header);
    for (int k = 0; k < 8; k++)
        fputc((int)((n >> (8 * k)) & 0xff), fp);
    fputs(header, fp);
    for (size_t i = 0; i < n_data; i++)
        fputc((int)(i & 0xff), fp);
    fclose(fp);
}

/* lx_st_open of a hand-made file fails with a message naming the file, containing want and a hint. */
static void expect_bad(const char *header, size_t n_data, const char *want)
{
    char path[256];
    struct lx_st_file f;
    struct lx_error err = {""};
    in_dir(path, "bad.safetensors");
    write_raw(path, header, 0, n_data);
    int rc = lx_st_open(&f, path, &err);
    cr_expect(rc < 0, "header %s: accepted", header);
    cr_expect_not_null(strstr(err.msg, want), "header %s:\n  want '%s' in:\n  %s", header, want, err.msg);
    cr_expect_not_null(strstr(err.msg, path), "no path in: %s", err.msg);
    cr_expect_not_null(strstr(err.msg, "hint: "), "no hint in: %s", err.msg);
    cr_expect(f.bytes == NULL && f.entries == NULL && f.meta == NULL && f.n_entries == 0, "f not zeroed");
    lx_st_close(&f);
}

Test(safetensors, round_trip)
{
    float a[5], b[3 * 4], c[2 * 3 * 2];
    for (int i = 0; i < 5; i++)
        a[i] = 0.1f * (float)i - 0.25f;
    for (int i = 0; i < 12; i++)
        b[i] = (float)(i * i) / 7.0f;
    for (int i = 0; i < 12; i++)
        c[i] = -(float)i * 1e-30f;
    b[0] = -0.0f;                 /* bit patterns that a value copy could lose */
    b[1] = NAN;
    b[2] = INFINITY;
    c[0] = 1e-45f;                /* a subnormal */
    const struct lx_st_tensor t[3] = {
        {"emb.weight", 1, {5}, a},
        {"blocks.0.w", 2, {3, 4}, b},
        {"blocks.0.k", 3, {2, 3, 2}, c},
    };
    const char *meta[4] = {"config", "{\"n_layer\": 2, \"note\": \"tab\\there\"}\n\x01", "step", "1000"};
    char path[256], hex[65], want_hex[65];
    struct lx_error err = {""};
    in_dir(path, "model.safetensors");
    cr_assert_eq(lx_st_write(path, t, 3, meta, 2, hex, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(temporaries(path), 0, "the temporary file was left behind");
    file_sha256(path, want_hex);
    cr_expect_str_eq(hex, want_hex);

    struct lx_st_file f;
    cr_assert_eq(lx_st_open(&f, path, &err), LX_OK, "%s", err.msg);
    cr_expect_str_eq(f.sha256, want_hex);
    cr_assert_eq(f.n_entries, 3);
    cr_expect_eq(f.n_data, sizeof a + sizeof b + sizeof c);
    float a2[5], b2[12], c2[12];
    cr_assert_eq(lx_st_read(&f, "emb.weight", 1, t[0].shape, a2, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_st_read(&f, "blocks.0.w", 2, t[1].shape, b2, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_st_read(&f, "blocks.0.k", 3, t[2].shape, c2, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(memcmp(a, a2, sizeof a), 0);
    cr_expect_eq(memcmp(b, b2, sizeof b), 0);
    cr_expect_eq(memcmp(c, c2, sizeof c), 0);
    cr_expect_eq(f.n_meta, 2);
    cr_expect_str_eq(lx_st_meta(&f, "config"), meta[1]);
    cr_expect_str_eq(lx_st_meta(&f, "step"), "1000");
    cr_expect_null(lx_st_meta(&f, "absent"));
    lx_st_close(&f);
    cr_expect(f.bytes == NULL && f.entries == NULL && f.path == NULL);
}

Test(safetensors, header_layout)
{
    const float x[2] = {1, 2}, y[3] = {3, 4, 5}, z[2 * 2] = {6, 7, 8, 9};
    const struct lx_st_tensor t[3] = {{"x", 1, {2}, x}, {"y", 2, {3, 1}, y}, {"z", 2, {2, 2}, z}};
    const char *meta[2] = {"k", "v"};
    /* By hand: x is bytes 0..8, y 8..20, z 20..36. */
    const char *want = "{\"__metadata__\":{\"k\":\"v\"},"
                       "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"y\":{\"dtype\":\"F32\",\"shape\":[3,1],\"data_offsets\":[8,20]},"
                       "\"z\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[20,36]}}";
    char path[256];
    struct lx_error err = {""};
    in_dir(path, "layout.safetensors");
    cr_assert_eq(lx_st_write(path, t, 3, meta, 1, NULL, &err), LX_OK, "%s", err.msg);
    size_t n_file;
    unsigned char *bytes = slurp(path, &n_file);
    uint64_t n = 0;
    for (int k = 0; k < 8; k++)
        n |= (uint64_t)bytes[k] << (8 * k);
    cr_expect_eq((8 + n) % 8, 0, "8 + N = %llu", (unsigned long long)(8 + n));
    cr_assert_eq(n_file, 8 + n + 36);
    size_t len = strlen(want);
    cr_assert_geq(n, len);
    cr_expect_lt(n - len, 8, "more padding than needed");
    cr_expect_eq(memcmp(bytes + 8, want, len), 0, "header: %.*s", (int)n, (const char *)bytes + 8);
    for (size_t i = len; i < n; i++)
        cr_expect_eq(bytes[8 + i], ' ', "padding byte %zu is 0x%02x", i, bytes[8 + i]);
    float y_back[3];
    memcpy(y_back, bytes + 8 + n + 8, sizeof y_back);
    cr_expect_eq(memcmp(y_back, y, sizeof y), 0, "y is not at data offset 8");
    free(bytes);
}

Test(safetensors, reference_file)
{
    const char *root = getenv("LENX_ROOT");
    char path[4096], want_hex[65];
    struct lx_error err = {""};
    struct lx_st_file f;
    snprintf(path, sizeof path, "%s/tests/ref/safetensors_ref.safetensors", root ? root : ".");
    cr_assert_eq(lx_st_open(&f, path, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(f.n_bytes - f.n_data - 8, 183, "header length (odd, unpadded)");
    cr_expect_eq(f.n_data, 40);
    cr_assert_eq(f.n_entries, 2);
    cr_expect_str_eq(f.entries[0].name, "a", "entries are in data order");
    cr_expect_str_eq(f.entries[1].name, "b");
    float a[6], b[4];
    const long sa[2] = {2, 3}, sb[1] = {4};
    cr_assert_eq(lx_st_read(&f, "a", 2, sa, a, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_st_read(&f, "b", 1, sb, b, &err), LX_OK, "%s", err.msg);
    for (int i = 0; i < 6; i++)
        cr_expect_eq(a[i], 0.5f * (float)i, "a[%d] = %g", i, a[i]);
    const float want_b[4] = {-1.0f, 2.5f, (float)1e-3, (float)3e38};
    for (int i = 0; i < 4; i++)
        cr_expect_eq(b[i], want_b[i], "b[%d] = %.9g", i, b[i]);
    cr_expect_eq(f.n_meta, 2);
    cr_expect_str_eq(lx_st_meta(&f, "format"), "pt");
    cr_expect_str_eq(lx_st_meta(&f, "arch"), "{\"x\":1}");
    file_sha256(path, want_hex);
    cr_expect_str_eq(f.sha256, want_hex);
    lx_st_close(&f);
}

Test(safetensors, missing_file)
{
    char path[256];
    struct lx_st_file f;
    struct lx_error err = {""};
    in_dir(path, "nothing.safetensors");
    cr_expect_eq(lx_st_open(&f, path, &err), LX_EIO);
    cr_expect_not_null(strstr(err.msg, path), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "cannot open: No such file or directory"), "%s", err.msg);
    lx_st_close(&f);
}

Test(safetensors, short_file)
{
    char path[256];
    struct lx_st_file f;
    struct lx_error err = {""};
    in_dir(path, "short.safetensors");
    FILE *fp = fopen(path, "wb");
    fwrite("\x05\0\0\0\0", 1, 5, fp);
    fclose(fp);
    cr_expect_lt(lx_st_open(&f, path, &err), 0);
    cr_expect_not_null(strstr(err.msg, "the file is 5 bytes, too short for the 8-byte header length"), "%s", err.msg);
}

Test(safetensors, header_length_beyond_file)
{
    char path[256];
    struct lx_st_file f;
    struct lx_error err = {""};
    in_dir(path, "long.safetensors");
    write_raw(path, "{}", 1000, 0);
    cr_expect_lt(lx_st_open(&f, path, &err), 0);
    cr_expect_not_null(strstr(err.msg, "header length 1000 is larger than the 2 bytes after it"), "%s", err.msg);
    write_raw(path, "{}", UINT64_C(1) << 40, 0);
    cr_expect_lt(lx_st_open(&f, path, &err), 0);
    cr_expect_not_null(strstr(err.msg, "is over the limit of 100000000 bytes"), "%s", err.msg);
}

Test(safetensors, garbage_header)
{
    expect_bad("hello, world", 0, ": header:1:5: invalid JSON: invalid token near 'hello'");
    expect_bad("{\"w\": garbage}", 0, ": header:1:13: invalid JSON: invalid token near 'garbage'");
}

Test(safetensors, dtype_unread)
{
    expect_bad("{\"w\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 4,
               "tensor 'w' has dtype I8, which lenx does not read");
    expect_bad("{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[0,2]}}", 4,
               "tensor 'w' has dtype F8_E4M3, which lenx does not read");
    expect_bad("{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
               "shape [2] holds 2 F16 values = 4 bytes, but data_offsets [0, 8] span 8 bytes");
}

Test(safetensors, offsets_beyond_buffer)
{
    expect_bad("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
               "tensor 'w': data_offsets [0, 8] run past the end of the 4-byte data buffer");
}

Test(safetensors, size_does_not_match_shape)
{
    expect_bad("{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 12,
               "tensor 'w': shape [3] holds 3 F32 values = 12 bytes, but data_offsets [0, 8] span 8 bytes");
}

Test(safetensors, overlapping_tensors)
{
    expect_bad("{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12,
               "tensors 'a' (bytes 0..8) and 'b' (bytes 4..12) overlap");
    expect_bad("{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16,
               "tensors 'a' (bytes 0..16) and 'b' (bytes 4..8) overlap");
}

/* Everything else the JSON parser (harness/core/json.h) and the format rules
** reject, with what the message says: syntax errors carry the header's line
** and column, format errors the header field. */
Test(safetensors, malformed_headers)
{
    static const char *const cases[][2] = {
        {"{\"w\": 01}", ": header:1:7: invalid JSON"},
        {"{\"w\": -}", "invalid JSON"},
        {"{\"w\": [1,]}", "invalid JSON"},
        {"{\"w\": 1,}", "invalid JSON"},
        {"{\"w\" 1}", "invalid JSON"},
        {"{\"w\": [1 2]}", "invalid JSON"},
        {"{\"w\": 1 \"v\": 2}", "invalid JSON"},
        {"{\"w\": \"abc", "invalid JSON"},
        {"{\"w\": \"a\tb\"}", "invalid JSON"},
        {"{\"w\": \"\\q\"}", "invalid JSON"},
        {"{\"w\": \"\\u12G4\"}", "invalid JSON"},
        {"{\"w\": \"\\ud800\"}", "invalid JSON"},
        {"{\"w\": \"\\udc00\"}", "invalid JSON"},
        {"{\"w\": \"\xff\"}", "JSON text must be UTF-8"},
        {"{\"w\": \"\xc0\xaf\"}", "JSON text must be UTF-8"},           /* overlong '/' */
        {"{\"w\": \"\xed\xa0\x80\"}", "JSON text must be UTF-8"},       /* an encoded surrogate */
        {"{\"w\": 1, \"w\": 2}", "invalid JSON: duplicate object key"},
        {"{} {}", "invalid JSON"},
        {"{", "invalid JSON"},
        {"{\"w\": ", "invalid JSON"},
        {"[]", "the header is an array, not an object (header field (the root))"},
        {"{\"w\": 1.5}", "tensor 'w' is not an object (header field w)"},
        {"{\"w\": true}", "tensor 'w' is not an object"},
        {"{\"w\": null}", "tensor 'w' is not an object"},
        {"{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}", "tensor 'a' is not an object"},
        {"{\"__metadata__\": {\"k\": 1}}", "__metadata__ value of \"k\" is not a string"},
        {"{\"__metadata__\": {\"k\": \"a\\u0000b\"}}", "without NUL characters"},
        {"{\"__metadata__\": [\"k\"]}", "__metadata__ is not an object"},
        {"{\"w\": 1}", "tensor 'w' is not an object"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1]}}", "tensor 'w' has no \"data_offsets\""},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4], \"x\": 1}}",
         "tensor 'w' has an unknown field \"x\" (header field w.x)"},
        {"{\"w\": {\"dtype\": 32, \"shape\": [1], \"data_offsets\": [0, 4]}}", "dtype is not a string"},
        {"{\"w\": {\"dtype\": \"F32\\u0000\", \"shape\": [1], \"data_offsets\": [0, 4]}}",
         "dtype is not a string"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 0]}}",
         "shape entry 0 is not a non-negative integer (header field w.shape[0])"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}",
         "shape entry 0 is not a non-negative integer"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1, 1, 1, 1, 1], \"data_offsets\": [0, 4]}}",
         "tensor 'w' has 5 dimensions, more than 4"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4]}}", "is not [begin, end]"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 0]}}", "0 <= begin <= end"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [0, 4]}}",
         "shape is too large"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_bad(cases[i][0], 64, cases[i][1]);
}

/* Every JSON escape, surrogate pairs and raw UTF-8 decode to the right bytes. */
Test(safetensors, json_escapes)
{
    char path[256];
    struct lx_st_file f;
    struct lx_error err = {""};
    in_dir(path, "escapes.safetensors");
    write_raw(path, "{\"__metadata__\" : {\"esc\":\"q\\\"b\\\\s\\/n\\nt\\tr\\rb\\bf\\f\", "
                    "\"uni\":\"\\u00e9\\u20AC\\ud83d\\ude00\", \"raw\":\"\xc3\xa9\xf0\x9f\x98\x80\"},\r\n"
                    "\t\"\\u0074\": {\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}   ", 0, 4);
    cr_assert_eq(lx_st_open(&f, path, &err), LX_OK, "%s", err.msg);
    cr_expect_str_eq(lx_st_meta(&f, "esc"), "q\"b\\s/n\nt\tr\rb\bf\f");
    cr_expect_str_eq(lx_st_meta(&f, "uni"), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    cr_expect_str_eq(lx_st_meta(&f, "raw"), "\xc3\xa9\xf0\x9f\x98\x80");
    cr_assert_eq(f.n_entries, 1);
    cr_expect_str_eq(f.entries[0].name, "t");
    cr_expect_eq(f.entries[0].ndim, 0);
    lx_st_close(&f);
}

/* A scalar and empty tensors round-trip; empty tensors overlap nothing. */
Test(safetensors, scalar_and_empty)
{
    const float s = 3.25f, v[2] = {1, 2};
    const struct lx_st_tensor t[4] = {
        {"scalar", 0, {0}, &s}, {"empty", 2, {0, 3}, NULL}, {"v", 1, {2}, v}, {"empty2", 1, {0}, NULL}};
    char path[256];
    struct lx_st_file f;
    struct lx_error err = {""};
    in_dir(path, "small.safetensors");
    cr_assert_eq(lx_st_write(path, t, 4, NULL, 0, NULL, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_st_open(&f, path, &err), LX_OK, "%s", err.msg);
    float s2 = 0, v2[2] = {0}, none[1] = {42};
    cr_assert_eq(lx_st_read(&f, "scalar", 0, NULL, &s2, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(s2, s);
    cr_assert_eq(lx_st_read(&f, "empty", 2, t[1].shape, none, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(none[0], 42, "an empty read wrote");
    cr_assert_eq(lx_st_read(&f, "v", 1, t[2].shape, v2, &err), LX_OK, "%s", err.msg);
    cr_expect(v2[0] == 1 && v2[1] == 2);
    cr_expect_eq(f.n_meta, 0);
    cr_expect_null(lx_st_meta(&f, "x"));
    lx_st_close(&f);
    /* Hand-made: an empty tensor whose offset sits inside another one is not an overlap. */
    write_raw(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}", 0, 8);
    cr_expect_eq(lx_st_open(&f, path, &err), LX_OK, "%s", err.msg);
    lx_st_close(&f);
}

static void open_two(struct lx_st_file *f, char path[256])
{
    static const float x[6] = {1, 2, 3, 4, 5, 6};
    const struct lx_st_tensor t[2] = {{"alpha", 2, {2, 3}, x}, {"beta", 1, {6}, x}};
    struct lx_error err = {""};
    in_dir(path, "two.safetensors");
    cr_assert_eq(lx_st_write(path, t, 2, NULL, 0, NULL, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_st_open(f, path, &err), LX_OK, "%s", err.msg);
}

Test(safetensors, read_missing_name)
{
    char path[256], want[512];
    struct lx_st_file f;
    struct lx_error err = {""};
    float out[6];
    const long shape[1] = {6};
    open_two(&f, path);
    cr_expect_eq(lx_st_read(&f, "gamma", 1, shape, out, &err), LX_EINVAL);
    snprintf(want, sizeof want, "no tensor 'gamma' in %s; it has: alpha, beta", path);
    cr_expect_not_null(strstr(err.msg, want), "%s", err.msg);
    cr_expect_eq(lx_st_read(&f, "alpah", 1, shape, out, &err), LX_EINVAL);
    cr_expect_not_null(strstr(err.msg, "did you mean 'alpha'?"), "%s", err.msg);
    lx_st_close(&f);
}

Test(safetensors, read_wrong_shape)
{
    char path[256], want[512];
    struct lx_st_file f;
    struct lx_error err = {""};
    float out[6];
    const long shape[2] = {3, 2};
    open_two(&f, path);
    cr_expect_eq(lx_st_read(&f, "alpha", 2, shape, out, &err), LX_EINVAL);
    snprintf(want, sizeof want, "tensor 'alpha' in %s has shape [2, 3], expected [3, 2]", path);
    cr_expect_not_null(strstr(err.msg, want), "%s", err.msg);
    cr_expect_eq(lx_st_read(&f, "beta", 2, shape, out, &err), LX_EINVAL);
    cr_expect_not_null(strstr(err.msg, "has shape [6], expected [3, 2]"), "%s", err.msg);
    lx_st_close(&f);
}

Test(safetensors, write_to_missing_directory)
{
    const float x[1] = {1};
    const struct lx_st_tensor t[1] = {{"x", 1, {1}, x}};
    char path[256];
    struct lx_error err = {""};
    char hex[65] = "untouched";
    in_dir(path, "no/such/dir/model.safetensors");
    cr_expect_eq(lx_st_write(path, t, 1, NULL, 0, hex, &err), LX_EIO);
    cr_expect_not_null(strstr(err.msg, path), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "No such file or directory"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "hint: "), "%s", err.msg);
    cr_expect_neq(access(path, F_OK), 0);
    cr_expect_eq(temporaries(path), 0);
    cr_expect_str_eq(hex, "untouched");
}

/* Caller mistakes are errors, and write nothing. */
Test(safetensors, write_rejects_bad_tensors)
{
    const float x[2] = {1, 2};
    const struct lx_st_tensor dup[2] = {{"x", 1, {2}, x}, {"x", 1, {2}, x}};
    const struct lx_st_tensor nodata[1] = {{"x", 1, {2}, NULL}};
    const struct lx_st_tensor deep[1] = {{"x", 5, {1, 1, 1, 1}, x}};
    const struct lx_st_tensor negative[1] = {{"x", 1, {-2}, x}};
    const struct lx_st_tensor reserved[1] = {{"__metadata__", 1, {2}, x}};
    const char *meta[4] = {"k", "v", "k", "w"};
    char path[256];
    struct lx_error err = {""};
    in_dir(path, "rejected.safetensors");
    cr_expect_eq(lx_st_write(path, dup, 2, NULL, 0, NULL, &err), LX_EINVAL);
    cr_expect_not_null(strstr(err.msg, "two tensors are named 'x'"), "%s", err.msg);
    cr_expect_eq(lx_st_write(path, nodata, 1, NULL, 0, NULL, &err), LX_EINVAL);
    cr_expect_not_null(strstr(err.msg, "has no data"), "%s", err.msg);
    cr_expect_eq(lx_st_write(path, deep, 1, NULL, 0, NULL, &err), LX_EINVAL);
    cr_expect_not_null(strstr(err.msg, "invalid shape"), "%s", err.msg);
    cr_expect_eq(lx_st_write(path, negative, 1, NULL, 0, NULL, &err), LX_EINVAL);
    cr_expect_not_null(strstr(err.msg, "invalid shape"), "%s", err.msg);
    cr_expect_eq(lx_st_write(path, reserved, 1, NULL, 0, NULL, &err), LX_EINVAL);
    cr_expect_not_null(strstr(err.msg, "no usable name"), "%s", err.msg);
    cr_expect_eq(lx_st_write(path, dup, 1, meta, 2, NULL, &err), LX_EINVAL);
    cr_expect_not_null(strstr(err.msg, "metadata key 'k' is given twice"), "%s", err.msg);
    cr_expect_neq(access(path, F_OK), 0);
}

/* A second write replaces the file whole. */
Test(safetensors, overwrite)
{
    const float x[2] = {1, 2}, y[3] = {3, 4, 5};
    const struct lx_st_tensor t1[1] = {{"x", 1, {2}, x}}, t2[1] = {{"y", 1, {3}, y}};
    char path[256];
    struct lx_st_file f;
    struct lx_error err = {""};
    in_dir(path, "over.safetensors");
    cr_assert_eq(lx_st_write(path, t1, 1, NULL, 0, NULL, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_st_write(path, t2, 1, NULL, 0, NULL, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_st_open(&f, path, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(f.n_entries, 1);
    cr_expect_str_eq(f.entries[0].name, "y");
    lx_st_close(&f);
}

Test(safetensors, close_is_safe)
{
    struct lx_st_file f;
    memset(&f, 0, sizeof f);
    lx_st_close(&f);
    lx_st_close(&f);
    lx_st_close(NULL);
}

/* A file truncated after it was opened (another process rewriting it): the
** tensors read before are whole, the one past the new end is an error naming
** file and tensor, and nothing touches the mapping's missing pages (a SIGBUS
** would kill the test). A tensor of several 8 MiB pieces reads whole (the
** F16/BF16 ones, widened piece by piece, are test_loaders.c's). */
Test(safetensors, a_file_that_shrinks_after_open_is_an_error_not_a_signal)
{
    static float big[3 << 20];      /* 12 MiB: read in more than one piece */
    for (size_t i = 0; i < sizeof big / sizeof *big; i++)
        big[i] = (float)(i % 1000) * 0.5f;
    static const float small[4] = {1, 2, 3, 4};
    const struct lx_st_tensor t[2] = {{"small", 1, {4}, small}, {"big", 1, {3 << 20}, big}};
    char path[256];
    struct lx_error err = {""};
    in_dir(path, "shrinks.safetensors");
    cr_assert_eq(lx_st_write(path, t, 2, NULL, 0, NULL, &err), LX_OK, "%s", err.msg);
    struct lx_st_file f;
    cr_assert_eq(lx_st_open(&f, path, &err), LX_OK, "%s", err.msg);
    static float back[3 << 20];
    cr_assert_eq(lx_st_read(&f, "big", 1, t[1].shape, back, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(memcmp(back, big, sizeof big), 0, "a tensor of several pieces reads whole");
    cr_assert_eq(truncate(path, (off_t)(f.n_bytes / 2)), 0);
    float s2[4];
    cr_expect_eq(lx_st_read(&f, "small", 1, t[0].shape, s2, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(memcmp(s2, small, sizeof small), 0);
    cr_expect_eq(lx_st_read(&f, "big", 1, t[1].shape, back, &err), LX_EIO);
    cr_expect(strstr(err.msg, "tensor 'big' in ") != NULL && strstr(err.msg, "could not be read") != NULL &&
              strstr(err.msg, path) != NULL, "%s", err.msg);
    lx_st_close(&f);
}
