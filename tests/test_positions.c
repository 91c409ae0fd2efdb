/*
** tests/test_positions.c - the methods that change which keys a query sees and
** at what distance (alibi, window, streaming, lminfinite, rerope), checked
** against the golden values of docs/methods.md (sections alibi, window,
** streaming, lminfinite, rerope, selfextend, dca, string) and against 12-token
** examples worked by hand, through the spec's naive reference
** (lx_spec_visible, lx_spec_row_keys, lx_spec_delta, lx_spec_affine).
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness/engine/kernels/attention.h"
#include "tests/stack.h"

/* Compare causal row i of a length-T spec with a hand-written row, one char per
** key j: '.' future, 'x' masked, a digit: visible at δ = that digit, 'g':
** visible through the position map (lx_spec_far) at δ = g. The row must also
** count its visible keys through lx_spec_row_keys. */
static void expect_row(const struct lx_spec *spec, long T, long i, const char *row, double g)
{
    cr_assert_eq((long)strlen(row), T, "row %ld: '%s' is not %ld keys long", i, row, T);
    long n_vis = 0;
    for (long j = 0; j < T; j++) {
        char c = row[j];
        int want = c != '.' && c != 'x';
        cr_expect_eq(lx_spec_visible(spec, i, j, T, 1), want, "(%ld, %ld): want '%c'", i, j, c);
        if (!want)
            continue;
        n_vis++;
        double d = c == 'g' ? g : c - '0';
        cr_expect_eq(lx_spec_delta(spec, i, j), d, "(%ld, %ld): delta %g, want %g", i, j,
                     lx_spec_delta(spec, i, j), d);
        if (c == 'g')
            cr_expect(lx_spec_far(spec, i, j), "(%ld, %ld) should be a far key", i, j);
    }
    long lo, hi;
    cr_expect_eq(lx_spec_row_keys(spec, i, T, 1, &lo, &hi), n_vis, "row %ld: key count", i);
}

/* Every causal row 0..T-1 of `yaml` compiled at length T against rows[i]
** (expect_row, far keys at g). */
static void expect_rows(const char *yaml, long T, const char *const *rows, double g)
{
    struct lx_facts f = tfacts(64, 64, 1, T);
    struct tstack s;
    tstack_make(&s, yaml, &f);
    for (long i = 0; i < T; i++)
        expect_row(&s.spec, T, i, rows[i], g);
    tstack_free(&s);
}

/* Every pair of a length-T window is visible at δ = i − j, causal and not. */
static void expect_full(const struct lx_spec *spec, long T)
{
    for (long i = 0; i < T; i++) {
        long lo, hi;
        cr_expect_eq(lx_spec_row_keys(spec, i, T, 1, &lo, &hi), i + 1, "row %ld", i);
        cr_expect_eq(lx_spec_row_keys(spec, i, T, 0, &lo, &hi), T, "row %ld, bidirectional", i);
        for (long j = 0; j < T; j++) {
            cr_expect(lx_spec_visible(spec, i, j, T, 0), "(%ld, %ld)", i, j);
            cr_expect_eq(lx_spec_visible(spec, i, j, T, 1), j <= i, "(%ld, %ld)", i, j);
            cr_expect_eq(lx_spec_delta(spec, i, j), (double)(i - j), "(%ld, %ld)", i, j);
        }
    }
}

/* The stack fails to compile, and the message names each of `names`. */
static void expect_fails(const char *yaml, const struct lx_facts *f, const char *const *names, int n)
{
    struct tstack s;
    struct lx_error err = {{0}};
    cr_expect_lt(tstack_try(&s, yaml, f, &err), 0, "%s should fail", yaml);
    for (int k = 0; k < n; k++)
        cr_expect(strstr(err.msg, names[k]) != NULL, "%s: '%s' does not name %s", yaml, err.msg, names[k]);
    tstack_free(&s);
}

#define EXPECT_FAILS(yaml, f, ...) \
    expect_fails(yaml, f, (const char *const[]){__VA_ARGS__}, \
                 (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)))

Test(alibi, slopes_golden)
{
    /* docs/methods.md#alibi golden table, in head order (not monotone for 6, 12 and 3 heads). */
    static const double h8[] = {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625};
    static const double h6[] = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
    static const double h12[] = {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625,
                                 0.707107, 0.353553, 0.176777, 0.0883883};
    static const double h3[] = {0.0625, 0.00390625, 0.25};
    double h16[16];
    for (int k = 1; k <= 16; k++)
        h16[k - 1] = pow(2.0, -0.5 * k);
    static const struct { int n; const double *m; double tol; } g[] = {
        {8, h8, 1e-15}, {6, h6, 1e-15}, {12, h12, 5e-7}, {16, NULL, 1e-15}, {3, h3, 1e-15},
    };
    for (size_t k = 0; k < sizeof g / sizeof *g; k++) {
        struct lx_facts f = tfacts(64, 64, g[k].n, 16);
        struct tstack s;
        tstack_make(&s, "alibi", &f);
        cr_assert_str_eq(s.spec.positions, "alibi");
        cr_assert_eq(s.spec.n_ops, 1);
        const double *m = g[k].m ? g[k].m : h16;
        for (int h = 0; h < g[k].n; h++) {
            double A, B;
            lx_spec_affine(&s.spec, h, 1, 1.0, &A, &B);
            cr_expect_eq(A, 1.0);
            cr_expect(fabs(-B - m[h]) < g[k].tol, "%d heads, head %d: slope %.9g, want %.9g", g[k].n, h, -B, m[h]);
        }
        tstack_free(&s);
    }
}

Test(alibi, slopes_other_head_counts_and_max_bias)
{
    /* Computed outside lenx with the fairseq rule in plain Python:
    **   pow2(n) = [2**(-mb/n)**(i+1) for i in range(n)]
    **   p = 2**floor(log2 n); slopes = pow2(p) + pow2(2p)[0::2][:n-p] */
    static const struct { int n; double max_bias; double m[7]; } g[] = {
        {5, 8, {0.25, 0.0625, 0.015625, 0.00390625, 0.5}},
        {5, 4, {0.5, 0.25, 0.125, 0.0625, 0.7071067811865476}},
        {7, 8, {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125, 0.03125}},
    };
    for (size_t k = 0; k < sizeof g / sizeof *g; k++) {
        char yaml[64];
        snprintf(yaml, sizeof yaml, "{alibi: {max_bias: %g}}", g[k].max_bias);
        struct lx_facts f = tfacts(64, 64, g[k].n, 16);
        struct tstack s;
        tstack_make(&s, yaml, &f);
        for (int h = 0; h < g[k].n; h++) {
            double A, B;
            lx_spec_affine(&s.spec, h, 1, 3.0, &A, &B);
            cr_expect(fabs(-B / 3.0 - g[k].m[h]) < 1e-12, "%d heads, max_bias %g, head %d: %.12g, want %.12g", g[k].n,
                      g[k].max_bias, h, -B / 3.0, g[k].m[h]);
        }
        tstack_free(&s);
    }
}

/* scale multiplies every slope before the distance: at 0.125 (a power of two) each bias is the
** paper's over 8 bit for bit, for 6 heads at a fractional distance. */
Test(alibi, scale_multiplies_every_slope)
{
    struct lx_facts f = tfacts(64, 64, 6, 16);
    struct tstack a, b;
    tstack_make(&a, "alibi", &f);
    tstack_make(&b, "{alibi: {scale: 0.125}}", &f);
    for (int h = 0; h < 6; h++) {
        double A0, B0, A1, B1;
        lx_spec_affine(&a.spec, h, 1, 37.25, &A0, &B0);
        lx_spec_affine(&b.spec, h, 1, 37.25, &A1, &B1);
        cr_expect(A1 == A0 && B1 == B0 / 8, "head %d: %a, want %a", h, B1, B0 / 8);
    }
    tstack_free(&a);
    tstack_free(&b);
}

Test(alibi, bias_linear_in_distance)
{
    struct lx_facts f = tfacts(64, 64, 6, 16);
    struct tstack s;
    tstack_make(&s, "alibi", &f);
    const struct lx_logit_op *op = &s.spec.ops[0];
    cr_assert_eq(op->kind, LX_OP_DIST_AFFINE);
    for (int h = 0; h < 6; h++) {
        double a1, m1, a, m;
        op->dist_affine(op->params, &s.spec.facts, h, 1.0, &a1, &m1);
        for (double t = 0; t <= 40; t += 2.5) {
            op->dist_affine(op->params, &s.spec.facts, h, t, &a, &m);
            cr_expect_eq(a, 1.0);
            cr_expect(fabs(m - t * m1) < 1e-12, "head %d, t %g: m %g vs %g", h, t, m, t * m1);
        }
        cr_expect_eq(lx_spec_logit(&s.spec, h, 5, 3.0, 0.75), 0.75 + 3 * m1);
    }
    tstack_free(&s);
    /* max_bias 4, 4 heads: 2^(-(h+1)). */
    f.n_heads = 4;
    tstack_make(&s, "alibi: {max_bias: 4}", &f);
    double A, B;
    lx_spec_affine(&s.spec, 2, 1, 2.0, &A, &B);
    cr_expect_eq(B, -2 * 0.125);
    tstack_free(&s);
}

Test(alibi, one_position_scheme)
{
    struct lx_facts f = tfacts(64, 64, 8, 16);
    EXPECT_FAILS("[rope, alibi]", &f, "rope", "alibi", "position scheme");
    EXPECT_FAILS("[alibi, nope]", &f, "alibi", "nope");
    EXPECT_FAILS("[alibi, rerope]", &f, "rerope", "rotary");
    struct tstack s;   /* streaming re-indexes alibi distances too */
    tstack_make(&s, "[alibi, {streaming: {sinks: 2, recent: 3}}]", &f);
    cr_expect_eq(lx_spec_delta(&s.spec, 11, 0), 5.0);
    tstack_free(&s);
}

/* PI on ALiBi (Al-Khateeb et al. 2023, arXiv 2310.13017; docs/methods.md#pi): positions m -> m/s, so the key t
** back gets −m_h·t/s. 8 heads (slopes 2^−(h+1)), trained at 64: at 256 scale auto is 4 and the bias at t = 8 is
** exactly −2·m_h; at 64 (s = 1) ALiBi's own; an explicit s = 2.5 divides it. */
Test(alibi, position_interpolation_divides_the_distance)
{
    static const double h8[] = {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625};
    static const struct { const char *yaml; long length; double s; } g[] = {
        {"[alibi, pi]", 256, 4}, {"[alibi, pi]", 64, 1}, {"[alibi, pi]", 48, 1},
        {"[alibi, {pi: {scale: 2.5}}]", 256, 2.5},
    };
    for (size_t k = 0; k < sizeof g / sizeof *g; k++) {
        struct lx_facts f = tfacts(64, 64, 8, g[k].length);
        struct tstack s;
        tstack_make(&s, g[k].yaml, &f);
        cr_expect_str_eq(s.spec.frequencies, "pi");
        for (int h = 0; h < 8; h++)
            for (double t = 0; t <= 40; t += 8) {
                double A, B, want = -h8[h] * t / g[k].s;
                lx_spec_affine(&s.spec, h, 1, t, &A, &B);
                cr_expect_eq(A, 1.0);
                cr_expect(fabs(B - want) <= 1e-15 * fabs(want), "%s at %ld, head %d, t %g: %.17g, want %.17g",
                          g[k].yaml, g[k].length, h, t, B, want);
                cr_expect_eq(lx_spec_logit(&s.spec, h, 5, t, 0.75), 0.75 + B);
            }
        tstack_free(&s);
    }
    /* Only the position scheme's op reads t/s: scale-invariant attention's a_t, m_t stay at t. */
    struct lx_facts f = tfacts(64, 64, 8, 256);
    struct tstack s, plain;
    tstack_make(&s, "[alibi, scaleinv, pi]", &f);
    tstack_make(&plain, "[alibi, scaleinv]", &f);
    cr_assert_eq(s.spec.n_ops, 2);
    cr_expect_eq(s.spec.ops[0].compress, 4.0);
    cr_expect_eq(s.spec.ops[1].compress, 0.0);
    for (int h = 0; h < 8; h += 3) {
        double A, B, Ap, Bp, a, m;
        lx_spec_affine(&s.spec, h, 1, 12.0, &A, &B);
        lx_spec_affine(&plain.spec, h, 1, 12.0, &Ap, &Bp);
        const struct lx_logit_op *si = &plain.spec.ops[1];
        si->dist_affine(si->params, &plain.spec.facts, h, 12.0, &a, &m);
        cr_expect_eq(A, Ap);        /* a_t alone scales S */
        cr_expect(fabs(B - (a * -h8[h] * 3.0 + m)) < 1e-12, "head %d: %.17g", h, B);
    }
    tstack_free(&s);
    tstack_free(&plain);
    /* Sandwich: the bias at t under s = 2 is Sandwich's own at t/2. */
    tstack_make(&s, "[sandwich, {pi: {scale: 2}}]", &f);
    tstack_make(&plain, "sandwich", &f);
    for (double t = 0; t <= 30; t += 2) {
        double A, B, Ap, Bp;
        lx_spec_affine(&s.spec, 1, 1, t, &A, &B);
        lx_spec_affine(&plain.spec, 1, 1, t / 2, &Ap, &Bp);
        cr_expect_eq(A, Ap);
        cr_expect_eq(B, Bp, "t %g: %.17g vs %.17g", t, B, Bp);
    }
    tstack_free(&s);
    tstack_free(&plain);
}

/* PI needs rotary positions or a fixed distance bias before it: not a learned bias (whose gradient is summed at
** whole distances), not NoPE, not before the position scheme; the other rescalings still need rope. */
Test(alibi, position_interpolation_refusals)
{
    struct lx_facts f = tfacts(64, 64, 8, 256);
    EXPECT_FAILS("[t5bias, pi]", &f, "pi", "t5bias", "learned", "[alibi, pi]");
    EXPECT_FAILS("[kerple, pi]", &f, "pi", "kerple", "learned");
    EXPECT_FAILS("[nope, pi]", &f, "pi", "rotary", "not rope");
    EXPECT_FAILS("[pi, alibi]", &f, "pi", "rotary", "no rope comes before it");
    EXPECT_FAILS("[alibi, ntk]", &f, "ntk", "rotary");
    EXPECT_FAILS("[alibi, yarn]", &f, "yarn", "rotary");
}

/* One method sets the training positions, after rope, over at least the
** training length. */
Test(randpos, one_training_position_scheme)
{
    struct lx_facts f = tfacts(64, 64, 8, 16);
    EXPECT_FAILS("[rope, pose, randpos]", &f, "pose", "randpos", "training positions");
    EXPECT_FAILS("[rope, randpos, pose]", &f, "pose", "randpos", "training positions");
    EXPECT_FAILS("[alibi, randpos]", &f, "randpos", "rotary");
    EXPECT_FAILS("[rope, {randpos: {target: 32}}]", &f, "randpos", "shorter than the training length 64");
    struct lx_facts big = tfacts(64, 1L << 27, 8, 16);    /* 16 x 2^27 positions: past an int's */
    EXPECT_FAILS("[rope, randpos]", &big, "randpos", "2^30");
    f.length = 4096;                                        /* past L = 16 x 64 at evaluation */
    EXPECT_FAILS("[rope, randpos]", &f, "randpos", "length 4096 is longer than L = 1024");
}

/* PoSE's ids are ints (u + t <= target − 1): target is at most 2^30 as randpos's, refused at the value, and
** its automatic 16 x the training length too when that passes it. */
Test(pose, target_at_most_2_to_the_30)
{
    struct lx_facts f = tfacts(64, 64, 8, 16);
    EXPECT_FAILS("[rope, {pose: {target: 1073741825}}]", &f, "pose", "'target' = 1073741825 is out of bounds "
                 "[0, 1073741824]", "m.yaml:1:");
    EXPECT_FAILS("[rope, {pose: {target: 1099511627776}}]", &f, "pose", "out of bounds [0, 1073741824]");
    struct tstack s;
    tstack_make(&s, "[rope, {pose: {target: 1073741824}}]", &f);
    cr_expect_eq(s.spec.pose.target, 1073741824L);
    tstack_free(&s);
    struct lx_facts big = tfacts(64, 1L << 27, 8, 16);    /* 16 x 2^27 positions: past an int's */
    EXPECT_FAILS("[rope, pose]", &big, "pose", "past 2^30", "hint: give target explicitly");
}

/* A chunk holds at least one token: more chunks than the window has tokens are refused, with a hint. */
Test(pose, chunks_fit_the_window)
{
    struct lx_facts f = tfacts(64, 32, 8, 16);
    EXPECT_FAILS("[rope, {pose: {chunks: 40}}]", &f, "pose: 40 chunks do not fit in a window of 32 tokens", "hint: ");
    struct tstack s;
    tstack_make(&s, "[rope, {pose: {chunks: 32}}]", &f);
    cr_expect_eq(s.spec.pose.chunks, 32);
    tstack_free(&s);
}

/* docs/methods.md#bca: blocks of B = 4, causal: query 3 sees 0-3, query 4
** (block 1) 0-4, query 9 (block 2) 4-9, query 11 4-11; bidirectional, query 9
** sees blocks 1-3, keys 4-15 of 14 (4-13). lx_spec_visible and
** lx_spec_row_keys agree on every pair; the mask refuses a masked LM. */
Test(bca, golden)
{
    struct lx_facts f = tfacts(64, 8, 1, 14);
    struct tstack s;
    tstack_make(&s, "[rope, bca]", &f);
    cr_expect_eq(s.spec.vis.block, 4, "block auto: half the training length");
    static const long want[][3] = {{3, 0, 4}, {4, 0, 5}, {9, 4, 10}, {11, 4, 12}, {0, 0, 1}, {7, 0, 8}, {8, 4, 9}};
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        long lo, hi, n = lx_spec_row_keys(&s.spec, want[k][0], 14, 1, &lo, &hi);
        cr_expect(lo == want[k][1] && hi == want[k][2] && n == hi - lo, "query %ld: [%ld, %ld) n %ld", want[k][0],
                  lo, hi, n);
    }
    long lo, hi;
    lx_spec_row_keys(&s.spec, 9, 14, 0, &lo, &hi);
    cr_expect(lo == 4 && hi == 14, "bidirectional query 9: [%ld, %ld)", lo, hi);
    for (int causal = 0; causal < 2; causal++)
        for (long i = 0; i < 14; i++) {
            lx_spec_row_keys(&s.spec, i, 14, causal, &lo, &hi);
            for (long j = 0; j < 14; j++)
                cr_expect_eq(lx_spec_visible(&s.spec, i, j, 14, causal), j >= lo && j < hi, "%d (%ld, %ld)", causal,
                             i, j);
        }
    tstack_free(&s);
    f.bidirectional = 1;
    EXPECT_FAILS("[rope, bca]", &f, "bca", "causal models");
    f.bidirectional = 0;
    EXPECT_FAILS("[rope, {window: {size: 4}}, bca]", &f, "window", "bca", "visible keys");
}

Test(window, golden)
{
    /* docs/methods.md#window: W = 3, query 5 -> keys {3, 4, 5}. */
    struct lx_facts f = tfacts(64, 64, 1, 10);
    struct tstack s;
    tstack_make(&s, "[rope, {window: {size: 3}}]", &f);
    for (long j = 0; j < 10; j++)
        cr_expect_eq(lx_spec_visible(&s.spec, 5, j, 10, 1), j >= 3 && j <= 5, "key %ld", j);
    long lo, hi;
    cr_expect_eq(lx_spec_row_keys(&s.spec, 5, 10, 1, &lo, &hi), 3);
    cr_expect_eq(lo, 3);
    cr_expect_eq(hi, 6);
    /* Bidirectional: |i - j| <= W - 1. */
    for (long j = 0; j < 10; j++)
        cr_expect_eq(lx_spec_visible(&s.spec, 5, j, 10, 0), j >= 3 && j <= 7, "key %ld", j);
    cr_expect_eq(lx_spec_row_keys(&s.spec, 5, 10, 0, &lo, &hi), 5);
    tstack_free(&s);
}

Test(window, at_least_n_is_no_window)
{
    struct lx_facts f = tfacts(64, 64, 1, 10);
    struct tstack s;
    tstack_make(&s, "[rope, {window: {size: 10}}]", &f);
    expect_full(&s.spec, 10);
    tstack_free(&s);
    tstack_make(&s, "window", &f);   /* size 0 = the training length, 64 >= 10 */
    cr_expect_eq(s.spec.vis.window, 64);
    expect_full(&s.spec, 10);
    tstack_free(&s);
    f.train_len = 0;
    EXPECT_FAILS("window", &f, "window", "training length");
}

Test(streaming, golden)
{
    /* docs/methods.md#streaming, S = 4, R = 8: query 19 sees tokens 0..3 and 11..19 (13 keys) at slots
    ** 0..12; its own slot is 12, so token 0 is 12 back and the recent keys keep their distance. */
    struct lx_facts f = tfacts(64, 64, 1, 20);
    struct tstack s;
    tstack_make(&s, "[rope, {streaming: {sinks: 4, recent: 8}}]", &f);
    for (long j = 0; j < 20; j++)
        cr_expect_eq(lx_spec_visible(&s.spec, 19, j, 20, 1), j < 4 || j >= 11, "key %ld", j);
    long lo, hi;
    cr_expect_eq(lx_spec_row_keys(&s.spec, 19, 20, 1, &lo, &hi), 13);
    cr_expect_eq(lx_spec_delta(&s.spec, 19, 0), 12.0);
    for (long j = 1; j < 4; j++)
        cr_expect_eq(lx_spec_delta(&s.spec, 19, j), 12.0 - j);
    for (long j = 11; j < 20; j++)
        cr_expect_eq(lx_spec_delta(&s.spec, 19, j), (double)(19 - j));
    tstack_free(&s);
    /* Full attention while i <= S + R. */
    f.length = 13;
    tstack_make(&s, "[rope, {streaming: {sinks: 4, recent: 8}}]", &f);
    for (long i = 0; i < 13; i++)
        for (long j = 0; j <= i; j++) {
            cr_expect(lx_spec_visible(&s.spec, i, j, 13, 1), "(%ld, %ld)", i, j);
            cr_expect_eq(lx_spec_delta(&s.spec, i, j), (double)(i - j), "(%ld, %ld)", i, j);
        }
    tstack_free(&s);
}

Test(streaming, by_hand_12)
{
    /* S = 2, R = 3: window 4, sinks at slot distance min(i, 5) - j. */
    static const char *const rows[] = {
        "0...........", "10..........", "210.........", "3210........",
        "43210.......", "543210......", "54x3210.....", "54xx3210....",
        "54xxx3210...", "54xxxx3210..", "54xxxxx3210.", "54xxxxxx3210",
    };
    expect_rows("[rope, {streaming: {sinks: 2, recent: 3}}]", 12, rows, 0);
}

Test(streaming, more_sinks_than_recent)
{
    /* S = 5, R = 1 (S > R + 1, which StartRecentKVCache(start_size=5, recent_size=1) accepts): the cache
    ** holds tokens 0..4, the last token and the query, at slots 0..6. Query 7: sinks at slot distance
    ** 6 - j, token 5 evicted, token 6 one back. Until i = S + R = 6 nothing is evicted. */
    static const char *const rows[] = {
        "0.........", "10........", "210.......", "3210......", "43210.....",
        "543210....", "6543210...", "65432x10..", "65432xx10.", "65432xxx10",
    };
    expect_rows("[rope, {streaming: {sinks: 5, recent: 1}}]", 10, rows, 0);
}

Test(streaming, defaults_and_errors)
{
    /* recent 0 = L - S - 1: a query sees at most L keys. */
    struct lx_facts f = tfacts(64, 64, 1, 200);
    struct tstack s;
    tstack_make(&s, "[rope, streaming]", &f);
    cr_expect_eq(s.spec.vis.sinks, 4);
    cr_expect_eq(s.spec.vis.window, 60);
    cr_expect_eq(s.spec.posmap.cap, 63.0);
    long lo, hi;
    cr_expect_eq(lx_spec_row_keys(&s.spec, 199, 200, 1, &lo, &hi), 64);
    cr_expect_eq(lx_spec_delta(&s.spec, 199, 0), 63.0);
    tstack_free(&s);
    /* any scheme that carries distances, as the message and docs say: not only rope or alibi */
    EXPECT_FAILS("{streaming: {recent: 8}}", &f, "streaming", "rope, alibi, sandwich, t5bias or kerple", "hint:");
    static const char *const on[] = {"[alibi, {streaming: {recent: 8}}]", "[sandwich, {streaming: {recent: 8}}]",
                                     "[t5bias, {streaming: {recent: 8}}]", "[kerple, {streaming: {recent: 8}}]"};
    for (size_t i = 0; i < sizeof on / sizeof *on; i++) {
        tstack_make(&s, on[i], &f);
        cr_expect_str_eq(s.spec.posmap.method, "streaming", "%s", on[i]);
        tstack_free(&s);
    }
    EXPECT_FAILS("[nope, {streaming: {recent: 8}}]", &f, "streaming", "nope");
    EXPECT_FAILS("[rope, window, streaming]", &f, "window", "streaming", "visible keys");
    f.train_len = 5;
    EXPECT_FAILS("[rope, streaming]", &f, "streaming", "recent");
}

Test(lminfinite, golden)
{
    /* docs/methods.md#lminfinite: L_local = 4, n_global = 2, limit = 4, kv_len = 10, so D = 4. */
    static const char *const rows[] = {"3210......", "g3210.....", "gg3210....", "ggxxxx3210"};
    static const long queries[] = {3, 4, 5, 9};
    struct lx_facts f = tfacts(64, 64, 1, 10);
    struct tstack s;
    tstack_make(&s, "[rope, {lminfinite: {local: 4, n_global: 2, limit: 4}}]", &f);
    for (int k = 0; k < 4; k++)
        expect_row(&s.spec, 10, queries[k], rows[k], 4);
    tstack_free(&s);
    /* D = min(limit, kv_len - 1): a short window puts the global keys at kv_len - 1. */
    f.length = 3;
    tstack_make(&s, "[rope, {lminfinite: {local: 2, n_global: 1, limit: 4}}]", &f);
    cr_expect_eq(lx_spec_delta(&s.spec, 2, 0), 2.0);
    tstack_free(&s);
}

Test(lminfinite, by_hand_12)
{
    /* L_local = 3, n_global = 2, limit = 3, length 12: D = 3. */
    static const char *const rows[] = {
        "0...........", "10..........", "210.........", "g210........",
        "gg210.......", "ggx210......", "ggxx210.....", "ggxxx210....",
        "ggxxxx210...", "ggxxxxx210..", "ggxxxxxx210.", "ggxxxxxxx210",
    };
    expect_rows("[rope, {lminfinite: {local: 3, n_global: 2, limit: 3}}]", 12, rows, 3);
}

Test(lminfinite, defaults_and_errors)
{
    struct lx_facts f = tfacts(64, 64, 1, 1000);
    struct tstack s;
    tstack_make(&s, "[rope, lminfinite]", &f);   /* L_local = limit = L */
    cr_expect_eq(s.spec.vis.window, 64);
    cr_expect_eq(s.spec.vis.sinks, 10);
    cr_expect_eq(lx_spec_delta(&s.spec, 999, 3), 64.0);
    cr_expect_eq(lx_spec_delta(&s.spec, 999, 936), 63.0);
    tstack_free(&s);
    EXPECT_FAILS("lminfinite", &f, "lminfinite", "rope");
    EXPECT_FAILS("[rope, rerope, lminfinite]", &f, "rerope", "lminfinite", "far-key positions");
    EXPECT_FAILS("[rope, {window: {size: 8}}, lminfinite]", &f, "window", "lminfinite");
}

/* δ(9, j) for j = 0..9 of a rerope stack. */
static void expect_query9(const char *yaml, const double *want)
{
    struct lx_facts f = tfacts(64, 64, 1, 10);
    struct tstack s;
    tstack_make(&s, yaml, &f);
    for (long j = 0; j < 10; j++)
        cr_expect_eq(lx_spec_delta(&s.spec, 9, j), want[j], "%s: key %ld: %g, want %g", yaml, j,
                     lx_spec_delta(&s.spec, 9, j), want[j]);
    tstack_free(&s);
}

Test(rerope, golden)
{
    /* docs/methods.md#rerope. */
    static const double plain[] = {4, 4, 4, 4, 4, 4, 3, 2, 1, 0};
    static const double leaky[] = {6.5, 6, 5.5, 5, 4.5, 4, 3, 2, 1, 0};
    expect_query9("[rope, {rerope: {window: 4}}]", plain);
    expect_query9("[rope, {rerope: {window: 4, leak: 2}}]", leaky);
    struct lx_facts f = tfacts(64, 4096, 1, 16384);
    struct tstack s;
    tstack_make(&s, "[rope, {rerope: {window: 512, leak: 16}}]", &f);
    cr_expect_eq(lx_spec_delta(&s.spec, 4095, 0), 735.9375);
    cr_expect_eq(lx_spec_delta(&s.spec, 16383, 0), 1503.9375);
    cr_expect_eq(lx_spec_delta(&s.spec, 16383, 12288), 735.9375);
    cr_expect_eq(lx_spec_delta(&s.spec, 600, 89), 511.0);
    tstack_free(&s);
    tstack_make(&s, "[rope, rerope, {logn: {mode: qwen}}]", &f);   /* Su's patch: w = L/4 = 1024 */
    cr_expect_eq(s.spec.posmap.from, 1024);
    cr_expect_eq(lx_spec_delta(&s.spec, 9000, 0), 1024.0);
    tstack_free(&s);
}

Test(rerope, leaky_other_window_and_leak)
{
    /* w = 7, k = 3, computed outside lenx: d if d < w else w + (d - w)/k */
    static const struct { long d; double want; } g[] = {
        {6, 6}, {7, 7}, {8, 7.333333333333333}, {20, 11.333333333333332}, {100, 38},
    };
    struct lx_facts f = tfacts(64, 64, 1, 200);
    struct tstack s;
    tstack_make(&s, "[rope, {rerope: {window: 7, leak: 3}}]", &f);
    for (size_t k = 0; k < sizeof g / sizeof *g; k++) {
        cr_expect(fabs(lx_spec_delta(&s.spec, 150, 150 - g[k].d) - g[k].want) < 1e-12, "delta %ld: %.15g, want %.15g",
                  g[k].d, lx_spec_delta(&s.spec, 150, 150 - g[k].d), g[k].want);
        cr_expect(fabs(lx_spec_delta(&s.spec, 150 - g[k].d, 150) + g[k].want) < 1e-12, "mirror of %ld", g[k].d);
    }
    tstack_free(&s);
}

Test(rerope, bidirectional_symmetry)
{
    static const char *const stacks[] = {"[rope, {rerope: {window: 4}}]", "[rope, {rerope: {window: 3, leak: 2.5}}]"};
    struct lx_facts f = tfacts(64, 64, 1, 16);
    for (int k = 0; k < 2; k++) {
        struct tstack s;
        tstack_make(&s, stacks[k], &f);
        for (long i = 0; i < 16; i++)
            for (long j = 0; j < 16; j++)
                cr_expect_eq(lx_spec_delta(&s.spec, i, j), -lx_spec_delta(&s.spec, j, i), "%s (%ld, %ld)",
                             stacks[k], i, j);
        tstack_free(&s);
    }
}

Test(rerope, window_at_least_n_is_rope)
{
    static const char *const stacks[] = {"[rope, {rerope: {window: 10}}]", "[rope, {rerope: {window: 12, leak: 16}}]"};
    struct lx_facts f = tfacts(64, 64, 1, 10);
    for (int k = 0; k < 2; k++) {
        struct tstack s;
        tstack_make(&s, stacks[k], &f);
        expect_full(&s.spec, 10);
        tstack_free(&s);
    }
}

Test(rerope, errors)
{
    struct lx_facts f = tfacts(64, 64, 1, 16);
    EXPECT_FAILS("{rerope: {window: 4}}", &f, "rerope", "rope");
    EXPECT_FAILS("[nope, rerope]", &f, "rerope", "not rope");
    EXPECT_FAILS("[rope, {streaming: {recent: 8}}, rerope]", &f, "streaming", "rerope", "far-key positions");
    EXPECT_FAILS("[rope, {rerope: {leak: 0.5}}]", &f, "leak");
}

/* ---- selfextend ---------------------------------------------------------------- */

Test(selfextend, golden)
{
    /* docs/methods.md#selfextend, row 9 by hand: beyond w = 4 (keys 0..5), δ = ⌊9/G⌋ − ⌊j/G⌋ + w − w/G */
    static const double g2[] = {6, 6, 5, 5, 4, 4, 3, 2, 1, 0};
    const double s3 = 4 - 4.0 / 3;      /* G = 3 does not divide w: a shift of 8/3 */
    const double g3[] = {3 + s3, 3 + s3, 3 + s3, 2 + s3, 2 + s3, 2 + s3, 3, 2, 1, 0};
    expect_query9("[rope, {selfextend: {group: 2, window: 4}}]", g2);
    expect_query9("[rope, {selfextend: {group: 3, window: 4}}]", g3);
    expect_query9("[rope, {selfextend: {group: 1, window: 4}}]", (const double[]){9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
    /* group auto, L = 64, w = 16 (L/4) at 256 tokens: the largest distance ⌊255/G⌋ + 16 − 16/G is 63.8 at
    ** G = 5, 55.3 at G = 6 (the paper's (L − w)·G + w >= n would take 5) */
    struct lx_facts f = tfacts(64, 64, 1, 256);
    struct tstack s;
    tstack_make(&s, "[rope, selfextend]", &f);
    cr_expect_eq(s.spec.posmap.group, 6);
    cr_expect_eq(s.spec.posmap.from, 16);
    cr_expect_eq(lx_spec_delta(&s.spec, 255, 0), 42 + 16 - 16.0 / 6);
    tstack_free(&s);
    f = tfacts(64, 64, 1, 64);     /* within the training length: G = 1, RoPE */
    tstack_make(&s, "[rope, selfextend]", &f);
    cr_expect_eq(s.spec.posmap.group, 1);
    expect_full(&s.spec, 64);
    tstack_free(&s);
}

Test(selfextend, errors)
{
    struct lx_facts f = tfacts(64, 64, 1, 256);
    EXPECT_FAILS("{selfextend: {group: 2}}", &f, "selfextend", "rope");
    EXPECT_FAILS("[rope, rerope, selfextend]", &f, "rerope", "selfextend", "far-key positions");
    EXPECT_FAILS("[rope, {selfextend: {window: 64}}]", &f, "selfextend", "window below the training length 64");
}

/* ---- string ------------------------------------------------------------------- */

Test(string, golden)
{
    /* docs/methods.md#string, query 9 by hand: distances d >= S become d − S + W */
    expect_query9("[rope, {string: {offset: 4, local: 2}}]", (const double[]){7, 6, 5, 4, 3, 2, 3, 2, 1, 0});
    expect_query9("[rope, {string: {offset: 6, local: 1}}]", (const double[]){4, 3, 2, 1, 5, 4, 3, 2, 1, 0});
    expect_query9("[rope, {string: {offset: 4, local: 4}}]", (const double[]){9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
    /* the bidirectional mirror: key 9 seen from query 0 */
    struct lx_facts f = tfacts(64, 64, 1, 10);
    struct tstack s;
    tstack_make(&s, "[rope, {string: {offset: 4, local: 2}}]", &f);
    cr_expect_eq(lx_spec_delta(&s.spec, 0, 9), -7.0);
    cr_expect_eq(lx_spec_delta(&s.spec, 0, 3), -3.0);
    tstack_free(&s);
}

/* offset auto ⌊ratio·n⌋ (at least 1), local auto min(128, ⌊S/4⌋) (at least 1), and the reference's
** attention factor on cos and sin: logits × (0.1 ln 2 + 1)², 1.1434 */
Test(string, automatic_values)
{
    static const struct { long n; double ratio; long S, W; } g[] = {
        {1024, 0.33, 337, 84}, {16384, 0.33, 5406, 128}, {16, 0.33, 5, 1}, {2, 0.33, 1, 1}, {1000, 0.5, 500, 125},
    };
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        struct lx_facts f = tfacts(64, 64, 1, g[i].n);
        char yaml[96];
        snprintf(yaml, sizeof yaml, "[rope, {string: {ratio: %g}}]", g[i].ratio);
        struct tstack s;
        tstack_make(&s, yaml, &f);
        cr_expect_eq(s.spec.posmap.from, g[i].S, "n %ld: S %ld", g[i].n, s.spec.posmap.from);
        cr_expect_eq(s.spec.posmap.shift, (double)(g[i].W - g[i].S), "n %ld: shift %g", g[i].n, s.spec.posmap.shift);
        double a = 0.1 * log(2) + 1;
        cr_expect(fabs(lx_spec_logit(&s.spec, 0, 7, 3, 1.0) - a * a) < 1e-15, "n %ld: %.17g", g[i].n,
                  lx_spec_logit(&s.spec, 0, 7, 3, 1.0));
        tstack_free(&s);
    }
    struct lx_facts f = tfacts(64, 64, 1, 64);
    struct tstack s;
    tstack_make(&s, "[rope, {string: {offset: 8, attn_factor: 1}}]", &f);
    cr_expect_eq(s.spec.n_ops, 0, "attn_factor 1 pushes no op");
    cr_expect_eq(lx_spec_delta(&s.spec, 63, 0), 63.0 - 8 + 2);
    tstack_free(&s);
}

Test(string, errors)
{
    struct lx_facts f = tfacts(64, 64, 1, 256);
    EXPECT_FAILS("{string: {offset: 8}}", &f, "string", "rope");
    EXPECT_FAILS("[rope, rerope, string]", &f, "rerope", "string", "far-key positions");
    EXPECT_FAILS("[rope, {string: {offset: 8, local: 9}}]", &f, "string", "local W = 9 is above offset S = 8");
    EXPECT_FAILS("[rope, {string: {local: 128}}]", &f, "string", "local W = 128 is above offset S = 84");
    EXPECT_FAILS("[rope, {string: {ratio: 0}}]", &f, "ratio");
}

/* ---- the engine against a transcription of a method's code --------------------- */

/* One head of 13 tokens, D = 8: q, k and v as tests/ref/selfextend_ref.py and
** tests/ref/dca_ref.py make them (q and k rotated to their positions, as the
** model hands them to attention). */
enum { RT = 13, RD = 8 };

static void ref_inputs(const struct lx_spec *spec, float *q, float *k, float *v)
{
    for (int t = 0; t < RT; t++) {
        for (int d = 0; d < RD; d++)
            v[t * RD + d] = (float)sin(0.29 * t * d + 0.5 * d - 0.2);
        for (int x = 0; x < 2; x++) {
            double r[RD];
            for (int c = 0; c < RD; c++)
                r[c] = x ? cos(0.53 * t - 0.71 * c + 0.1) : sin(0.37 * t + 0.91 * c + 0.3);
            lx_rotary_turn(r, &spec->rotary, (double)t);
            for (int c = 0; c < RD; c++)
                (x ? k : q)[t * RD + c] = (float)r[c];
        }
    }
}

/* The causal attention of `yaml` (facts f), naive and fast, against want
** (RT × RD) within 1e-5 (float products against doubles); the worst gap. */
static double attention_vs_ref(const char *yaml, const struct lx_facts *f, const double *want)
{
    static float q[RT * RD], k[RT * RD], v[RT * RD], o[RT * RD], o2[RT * RD], att[RT * RT], P[RT * RT],
        far[RT * RT + 2 * RT * RD];
    struct tstack s;
    tstack_make(&s, yaml, f);
    ref_inputs(&s.spec, q, k, v);
    lx_attention_forward(o, att, q, k, v, &s.spec, RT, 1, RD, 1);
    double tab[2 * RT], stats[LX_ATTN_NSTATS] = {0};
    struct lx_attn_ws ws = {.tab = tab, .far = far, .stats = stats};
    struct lx_attn_shape sh = {.T = RT, .H = 1, .KV = 1, .D = RD, .ld = RD, .ldo = RD, .causal = 1};
    lx_attn_head_forward(o2, P, q, k, v, &s.spec, 0, &sh, &ws);
    double worst = 0;
    for (int x = 0; x < RT * RD; x++) {
        worst = fmax(worst, fmax(fabs(o[x] - want[x]), fabs(o2[x] - want[x])));
        cr_expect_leq(fabs(o[x] - want[x]), 1e-5, "%s: row %d, channel %d: naive %.9g, reference %.9g", yaml,
                      x / RD, x % RD, (double)o[x], want[x]);
        cr_expect_leq(fabs(o2[x] - want[x]), 1e-5, "%s: row %d, channel %d: fast %.9g, reference %.9g", yaml,
                      x / RD, x % RD, (double)o2[x], want[x]);
    }
    tstack_free(&s);
    return worst;
}

/* Rows of tests/ref/NAME: `keys` integers naming the case, then row, channel
** and the output. Calls check(keys, want) for each case of RT × RD values;
** the number of cases. */
static int ref_cases(const char *name, int keys, double (*check)(const long *key, const double *want),
                     double *worst)
{
    char path[512], line[256];
    snprintf(path, sizeof path, "%s/tests/ref/%s", getenv("LENX_ROOT"), name);
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "%s", path);
    cr_assert_not_null(fgets(line, sizeof line, fp));
    static double want[RT * RD];
    long key[8];
    int cases = 0, n = 0;
    *worst = 0;
    while (fgets(line, sizeof line, fp)) {
        char *p = line;
        for (int x = 0; x < keys + 2; x++)
            key[x] = strtol(p, &p, 10), p++;
        cr_assert_eq((long)key[keys], n / RD, "%s: rows out of order", name);
        want[n++] = strtod(p, NULL);
        if (n == RT * RD) {
            *worst = fmax(*worst, check(key, want));
            cases++, n = 0;
        }
    }
    fclose(fp);
    cr_expect_eq(n, 0, "%s: a case cut short", name);
    return cases;
}

static double selfextend_case(const long *key, const double *want)
{
    char yaml[128];
    struct lx_facts f = tfacts(RD, 64, 1, RT);
    snprintf(yaml, sizeof yaml, "[rope, {selfextend: {group: %ld, window: %ld}}]", key[0], key[1]);
    return attention_vs_ref(yaml, &f, want);
}

/* The engine's attention, naive and fast, against tests/ref/selfextend_ref.py's transcription of the
** patch's eager forward (tests/ref/selfextend_ref.csv): G and w of (2, 4), (3, 4), (4, 5) and (1, 3). */
Test(selfextend, attention_matches_the_patch)
{
    double worst;
    cr_expect_eq(ref_cases("selfextend_ref.csv", 2, selfextend_case, &worst), 4);
    cr_log_info("selfextend: max |lenx - patch| %.3g", worst);
}

static double string_case(const long *key, const double *want)
{
    char yaml[128];
    struct lx_facts f = tfacts(RD, 64, 1, RT);
    snprintf(yaml, sizeof yaml, "[rope, {string: {offset: %ld, local: %ld%s}}]", key[0], key[1],
             key[2] ? "" : ", attn_factor: 1");
    return attention_vs_ref(yaml, &f, want);
}

/* The engine's attention, naive and fast, against tests/ref/string_ref.py's transcription of the
** reference's decode step (the last S keys at RoPE's distance, the rest with the query at i − S + W, cos
** and sin times 0.1 ln 2 + 1 or not): (S, W) of (5, 1), (4, 2), (6, 3) without the factor, (3, 3), (12, 2)
** and (7, 4). */
Test(string, attention_matches_the_code)
{
    double worst;
    cr_expect_eq(ref_cases("string_ref.csv", 3, string_case, &worst), 6);
    cr_log_info("string: max |lenx - STRING| %.3g", worst);
}

/* ---- dca ------------------------------------------------------------------------ */

Test(dca, golden)
{
    /* docs/methods.md#dca, query 9 by hand. s = 6, w = 2: C = 4, cap 6; query 9 is place 1 of chunk
    ** 2 (8..11), 1 <= w: keys 4..7 keep i − j, keys 0..3 sit at 6 − j mod 4 */
    expect_query9("[rope, {dca: {chunk: 6, local: 2}}]", (const double[]){6, 5, 4, 3, 5, 4, 3, 2, 1, 0});
    /* s = 5, w = 1: C = 4, cap 5; place 1 <= w */
    expect_query9("[rope, {dca: {chunk: 5, local: 1}}]", (const double[]){5, 4, 3, 2, 5, 4, 3, 2, 1, 0});
    /* s = 7, w = 1: C = 6, cap 7; query 9 is place 3 of chunk 1 (6..11), 3 > w: keys 0..5 at 7 − j */
    expect_query9("[rope, {dca: {chunk: 7, local: 1}}]", (const double[]){7, 6, 5, 4, 3, 2, 3, 2, 1, 0});
    /* s = 6, w = 4: C = 2, cap min(2C − 1, s) = 3; keys 6, 7 keep i − j */
    expect_query9("[rope, {dca: {chunk: 6, local: 4}}]", (const double[]){3, 2, 3, 2, 3, 2, 3, 2, 1, 0});
    /* auto at L = 64: s = 48, w = 8, C = 40, cap 48; the first far key is query 49's (49 = 40 + 8 + 1) */
    struct lx_facts f = tfacts(64, 64, 1, 256);
    struct tstack s;
    tstack_make(&s, "[rope, dca]", &f);
    cr_expect_eq(s.spec.posmap.period, 40);
    cr_expect_eq(s.spec.posmap.cap, 48);
    cr_expect_eq(lx_posmap_first_far(&s.spec.posmap), 49);
    cr_expect(!lx_spec_far(&s.spec, 48, 0) && lx_spec_far(&s.spec, 49, 0));
    cr_expect_eq(lx_spec_delta(&s.spec, 255, 0), 48);
    cr_expect_eq(lx_spec_delta(&s.spec, 255, 161), 48 - 1);
    /* mscale: 0.05 ln(256/64) + 1 on q and k, a row scale of its square */
    double m = 0.05 * log(4.0) + 1;
    cr_assert_eq(s.spec.n_ops, 1);
    cr_expect_float_eq(s.spec.ops[0].row_scale(s.spec.ops[0].params, &s.spec.facts, 256), m * m, 1e-15);
    tstack_free(&s);
    tstack_make(&s, "[rope, {dca: {mscale: false}}]", &f);
    cr_expect_eq(s.spec.n_ops, 0);
    tstack_free(&s);
    f = tfacts(64, 64, 1, 48);      /* within s: RoPE */
    tstack_make(&s, "[rope, dca]", &f);
    expect_full(&s.spec, 48);
    tstack_free(&s);
}

/* Every pair of 60 positions against the chunk rule, written out: near when the
** chunks are equal or the key's is one back and the query's place r(i) <= w;
** far at cap − r(j); upper pairs the mirror. near_lo never decreases, and
** first_far is the first row with a far key. */
Test(dca, every_pair_by_the_rule)
{
    static const long cases[][2] = {{6, 2}, {5, 1}, {7, 1}, {6, 4}, {9, 4}, {5, 3}, {2, 1}, {4, 1}};
    struct lx_facts f = tfacts(64, 64, 1, 60);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char yaml[96];
        snprintf(yaml, sizeof yaml, "[rope, {dca: {chunk: %ld, local: %ld, mscale: false}}]", cases[c][0],
                 cases[c][1]);
        struct tstack s;
        tstack_make(&s, yaml, &f);
        long sz = cases[c][0], w = cases[c][1], C = sz - w, first = -1;
        double cap = fmin(2 * C - 1, sz);
        for (long i = 0; i < 60; i++) {
            cr_expect_leq(lx_posmap_near_lo(&s.spec.posmap, i), lx_posmap_near_lo(&s.spec.posmap, i + 1));
            for (long j = 0; j < 60; j++) {
                long a = i > j ? i : j, b = i > j ? j : i;     /* the later and earlier position */
                int near = a / C == b / C || (a / C == b / C + 1 && a % C <= w);
                double d = near ? (double)(a - b) : cap - (double)(b % C);
                cr_expect_eq(lx_spec_far(&s.spec, i, j), !near, "%s (%ld, %ld)", yaml, i, j);
                cr_expect_eq(lx_spec_delta(&s.spec, i, j), i >= j ? d : -d, "%s (%ld, %ld)", yaml, i, j);
                if (!near && i > j && first < 0)
                    first = i;
                cr_expect_leq(fabs(lx_spec_delta(&s.spec, i, j)), sz, "%s: never past s", yaml);
            }
        }
        cr_expect_eq(lx_posmap_first_far(&s.spec.posmap), first, "%s", yaml);
        tstack_free(&s);
    }
}

Test(dca, errors)
{
    struct lx_facts f = tfacts(64, 64, 1, 256);
    EXPECT_FAILS("{dca: {chunk: 48}}", &f, "dca", "rope");
    EXPECT_FAILS("[rope, rerope, dca]", &f, "rerope", "dca", "far-key positions");
    EXPECT_FAILS("[rope, {dca: {chunk: 8, local: 8}}]", &f, "dca", "local below chunk", "chunk 8, local 8");
}

static double dca_case(const long *key, const double *want)
{
    char yaml[128];
    struct lx_facts f = tfacts(RD, key[2], 1, RT);
    snprintf(yaml, sizeof yaml, "[rope, {dca: {chunk: %ld, local: %ld}}]", key[0], key[1]);
    return attention_vs_ref(yaml, &f, want);
}

/* The engine's attention, naive and fast, against tests/ref/dca_ref.py's transcription of ChunkLlama's
** forward (its prefill and its decode agree there): (s, w) of (6, 2), (9, 2), (9, 4), (5, 3) and (7, 1)
** within L = 64, and (6, 2) at L = 8, where the code's mscale applies. */
Test(dca, attention_matches_the_code)
{
    double worst;
    cr_expect_eq(ref_cases("dca_ref.csv", 3, dca_case, &worst), 6);
    cr_log_info("dca: max |lenx - ChunkLlama| %.3g", worst);
}
