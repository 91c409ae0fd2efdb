/*
** tests/test_util.c - the small pieces everything stands on: SHA-256, Philox,
** number formatting, name suggestions, the BLAS seam.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/blas.h"
#include "harness/core/hash.h"
#include "harness/core/lx.h"
#include "harness/core/rng.h"

Test(hash, sha256_vectors)
{
    /* FIPS 180-4 examples. */
    char hex[65];
    lx_sha256_hex("", hex);
    cr_expect_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    lx_sha256_hex("abc", hex);
    cr_expect_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    lx_sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", hex);
    cr_expect_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    cr_expect_eq(lx_hash64("abc"), 0xba7816bf8f01cfeaULL);
}

Test(rng, philox_known_answers)
{
    /* Random123 kat_vectors, philox4x32 10 rounds. */
    static const uint32_t v[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
         0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
         0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        lx_philox4x32(out, v[i], v[i] + 4);
        for (int k = 0; k < 4; k++)
            cr_expect_eq(out[k], v[i][6 + k], "vector %d word %d: %08x", i, k, out[k]);
    }
}

/* A uniform is never 0 or 1, even from the words at either end: all ones
** once gave exactly 1 (k + 0.5 rounds up at 2^53 - 1), so a passkey of
** `digits: 5` could draw 100000 and overrun its six-token span. */
Test(rng, uniforms_stay_inside_0_1)
{
    cr_expect_eq(lx_rng_unit(0xffffffffu, 0xffffffffu), 1.0 - 0x1p-53);
    cr_expect_eq(lx_rng_unit(0xffffffffu, 0xffffff80u), 1.0 - 0x1p-52, "k = 2^53 - 2 (even): its own bits");
    cr_expect_eq(lx_rng_unit(0, 0), 0x1p-54);
    cr_expect_eq(lx_rng_unit(0, 0x40u), 1.5 * 0x1p-53);
    cr_expect_eq(lx_rng_unit(0x80000000u, 0), 0.5 + 0x1p-54, "below 2^52: k + 0.5 exact");
    cr_expect_lt(99999.0 * lx_rng_unit(0xffffffffu, 0xffffffffu) + 1.0, 100000.0);
}

Test(rng, normals_have_unit_moments)
{
    struct lx_rng r;
    lx_rng_init(&r, 42, 7, LX_RNG_LOGITS);
    double s = 0, s2 = 0;
    int n = 200000;
    for (int i = 0; i < n; i += 2) {
        double a, b;
        lx_rng_normal2(&r, &a, &b);
        s += a + b;
        s2 += a * a + b * b;
    }
    /* Mean 0 (se 1/sqrt(n) = 0.0022), variance 1 (se sqrt(2/n) = 0.0032): 5 se bounds. */
    cr_expect(fabs(s / n) < 0.012, "mean %g", s / n);
    cr_expect(fabs(s2 / n - 1) < 0.016, "var %g", s2 / n);
}

Test(rng, streams_are_pure)
{
    struct lx_rng a, b;
    lx_rng_init(&a, 99, 3, LX_RNG_DATA);
    for (int i = 0; i < 10; i++)
        lx_rng_u32(&a);
    uint32_t x = lx_rng_u32(&a);
    lx_rng_init(&b, 99, 3, LX_RNG_DATA);
    for (int i = 0; i < 10; i++)
        lx_rng_u32(&b);
    cr_expect_eq(lx_rng_u32(&b), x);
    lx_rng_init(&b, 99, 4, LX_RNG_DATA);
    for (int i = 0; i < 10; i++)
        lx_rng_u32(&b);
    cr_expect_neq(lx_rng_u32(&b), x);
}

Test(util, number_format_round_trips)
{
    char out[32];
    static const struct { double v; const char *s; } g[] = {
        {0.4, "0.4"}, {10, "10"}, {512, "512"}, {1e-9, "1e-09"}, {0, "0"}, {-2.5, "-2.5"},
        {1.6487212707001282, "1.6487212707001282"}, {1e300, "1e+300"}, {123456789012.0, "123456789012"},
    };
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        lx_fmt_num(out, g[i].v);
        cr_expect_str_eq(out, g[i].s);
        cr_expect_eq(strtod(out, NULL), g[i].v);
    }
    lx_fmt_num(out, NAN);
    cr_expect_str_eq(out, "nan");
    struct lx_rng r;
    lx_rng_init(&r, 1, 1, LX_RNG_DATA);
    for (int i = 0; i < 1000; i++) {
        double v = lx_rng_normal(&r) * pow(10, (int)(lx_rng_u32(&r) % 40) - 20);
        lx_fmt_num(out, v);
        cr_expect_eq(strtod(out, NULL), v, "%s", out);
    }
}

Test(util, suggestions)
{
    cr_expect_eq(lx_edit_distance("tua", "tau"), 1);
    cr_expect_eq(lx_edit_distance("kitten", "sitting"), 3);
    cr_expect_eq(lx_edit_distance("", "abc"), 3);
    const char *names[] = {"none", "logn", "infoscale", "scaleinv"};
    cr_expect_str_eq(lx_closest("lgn", names, 4), "logn");
    cr_expect_str_eq(lx_closest("infoscal", names, 4), "infoscale");
    cr_expect_null(lx_closest("yarn", names, 4));
}

/* The terminal and JSON escapes byte by byte: what is sent is
** printable, what is UTF-8 and printable stays as it is. */
Test(util, terminal_and_json_escapes)
{
    static const struct {
        const char *in, *term, *json;
    } cases[] = {
        {"a\tb\nc", "a\tb\nc", "\"a\\tb\\nc\""},
        {"\x1b[31mred\r\a\x7f", "\\x1b[31mred\\x0d\\x07\\x7f", "\"\\u001b[31mred\\u000d\\u0007\x7f\""},
        {"\xc2\x9b" "2J \xc2\xa0", "\\u009b2J \xc2\xa0", "\"\xc2\x9b" "2J \xc2\xa0\""},     /* C1 CSI; NBSP kept */
        {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",     /* é € 😀 */
         "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""},
        {"\xff\xc0\xaf", "\\xff\\xc0\\xaf", "\"\\ufffd\\ufffd\\ufffd\""},                     /* not UTF-8, overlong */
        {"\xed\xa0\x80\xf4\x90\x80\x80", "\\xed\\xa0\\x80\\xf4\\x90\\x80\\x80",               /* surrogate, > U+10FFFF */
         "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\""},
        {"\xe2\x82", "\\xe2\\x82", "\"\\ufffd\\ufffd\""},                                     /* cut short */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct lx_buf t = {0}, j = {0};
        lx_esc_term(&t, cases[i].in);
        lx_buf_json_str(&j, cases[i].in);
        cr_expect_str_eq(lx_buf_str(&t), cases[i].term, "case %zu", i);
        cr_expect_str_eq(lx_buf_str(&j), cases[i].json, "case %zu", i);
        lx_buf_free(&t);
        lx_buf_free(&j);
    }
}

Test(blas, matmul_matches_naive)
{
    int M = 7, N = 5, K = 9;
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
    float *C1 = malloc(sizeof(float) * M * N), *C2 = malloc(sizeof(float) * M * N);
    struct lx_rng r;
    lx_rng_init(&r, 5, 0, LX_RNG_INIT);
    for (int i = 0; i < M * K; i++)
        A[i] = (float)lx_rng_normal(&r);
    for (int i = 0; i < K * N; i++)
        B[i] = (float)lx_rng_normal(&r);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            for (int i = 0; i < M * N; i++)
                C1[i] = C2[i] = (float)i;
            lx_matmul(C1, A, B, M, N, K, ta, tb, 0.5f, 2.0f);
            lx_matmul_naive(C2, A, B, M, N, K, ta, tb, 0.5f, 2.0f);
            for (int i = 0; i < M * N; i++)
                cr_expect(fabsf(C1[i] - C2[i]) < 1e-4f, "ta=%d tb=%d i=%d: %g vs %g", ta, tb, i, C1[i], C2[i]);
        }
    cr_expect(lx_blas_is_openmp(), "lenx must link the OpenMP build of OpenBLAS");
    free(A), free(B), free(C1), free(C2);
}

/* lx_err_prefix puts context in front of a message already in err (the old
** `lx_err(err, rc, "%s: %s", name, err->msg)` formatted err into itself and
** printed "trunc.txt: trunc.txt:  not UTF-8 at byte 4"). */
Test(error, prefix_goes_in_front_of_the_message_once)
{
    struct lx_error err;
    cr_expect_eq(lx_err(&err, LX_EINVAL, "not UTF-8 at byte %d", 4), LX_EINVAL);
    cr_expect_eq(lx_err_prefix(&err, LX_EIO, "%s: ", "trunc.txt"), LX_EIO);
    cr_expect_str_eq(err.msg, "trunc.txt: not UTF-8 at byte 4");
    cr_expect_eq(lx_err_prefix(&err, LX_EINVAL, "model '%s': ", "m"), LX_EINVAL);
    cr_expect_str_eq(err.msg, "model 'm': trunc.txt: not UTF-8 at byte 4");
    /* an empty message takes the prefix alone; NULL err only returns the code */
    err.msg[0] = '\0';
    lx_err_prefix(&err, LX_EINVAL, "x: ");
    cr_expect_str_eq(err.msg, "x: ");
    cr_expect_eq(lx_err_prefix(NULL, LX_ERUN, "x"), LX_ERUN);
}

/* A message near LX_ERR_MAX keeps its prefix whole and is cut at the end,
** NUL-terminated inside the buffer. */
Test(error, prefix_of_a_full_message_cuts_the_tail)
{
    struct lx_error err;
    memset(err.msg, 'm', sizeof err.msg - 1);
    err.msg[sizeof err.msg - 1] = '\0';
    lx_err_prefix(&err, LX_EINVAL, "%s: ", "file.txt");
    cr_expect_eq(strlen(err.msg), sizeof err.msg - 1);
    cr_expect_eq(strncmp(err.msg, "file.txt: mmm", 13), 0, "%.20s", err.msg);
    cr_expect_eq(err.msg[sizeof err.msg - 2], 'm');
    /* a prefix longer than the buffer fills it, cut */
    char big[LX_ERR_MAX + 100];
    memset(big, 'p', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    lx_err(&err, LX_EINVAL, "tail");
    lx_err_prefix(&err, LX_EINVAL, "%s", big);
    cr_expect_eq(strlen(err.msg), sizeof err.msg - 1);
    cr_expect_eq(err.msg[0], 'p');
}

/* lx_err formats apart and then copies, so err->msg as an argument reads the
** message it held (the overlapping vsnprintf it replaced is undefined). */
Test(error, err_may_format_its_own_message)
{
    struct lx_error err;
    lx_err(&err, LX_EINVAL, "not UTF-8 at byte %d", 4);
    cr_expect_eq(lx_err(&err, LX_EINVAL, "%s: %s", "trunc.txt", err.msg), LX_EINVAL);
    cr_expect_str_eq(err.msg, "trunc.txt: not UTF-8 at byte 4");
}
