/*
** tests/test_tiled.c - the tiled online-softmax forward (harness/engine/kernels/tiled.c)
** against the naive reference (lx_attention_forward) and the per-head BLAS
** path, on every method of methods/methods.def that runs on a model, at sizes
** chosen around the tile edges: T below one block, T = block ± 1, T not a
** multiple of the block, windows smaller and larger than a block, sinks,
** causal and bidirectional, several heads; grouped-query heads (KV < H key/value
** heads in the model's fused qkv rows) against the naive path on repeated
** keys and values; row statistics from the tiles (entropy, max p, std of the
** logits, mass per distance bucket, range mass and entropy) against the head
** path's sums and lx_diag_row on the naive probabilities, there and on a
** trained model at 16x its training length; a model's loss through the
** evaluation forward on both paths; P normalised and rounded as llama.cpp's
** half cache has it (against the head path); and the softmax's e^x loops.
** What an evaluation pass holds (logits, the memory plan) is in
** tests/test_eval_memory.c.
**
** Errors are normwise relative: max |tiled − ref| / max |ref| over the output.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/gemm.h"
#include "harness/core/half.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/data/corpus.h"
#include "harness/engine/model/model.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/engine/model/train.h"
#include "harness/core/rng.h"
#include "tests/model_stacks.h"     /* stacks[], rel_err() */
#include "tests/stack.h"

#define TOL 1e-5

static void fill(float *x, long n, uint32_t stream)
{
    struct lx_rng r;
    lx_rng_init(&r, 777, stream, LX_RNG_INIT);
    for (long i = 0; i < n; i++)
        x[i] = (float)lx_rng_normal(&r);
}

/* Within 1e-5 relative, or 1e-6 a row for sums near 0. */
static int near(double a, double b, double rows)
{
    return fabs(a - b) <= 1e-5 * fabs(b) + 1e-6 * rows;
}

/* Row statistics from the tiles (d, H heads) against the head path's sums
** (hst) and, when causal, lx_diag_row on the naive probabilities (ref). */
static void compare_stats(const char *stack, const struct lx_diag *d, const double (*hst)[LX_ATTN_NSTATS],
                          const struct lx_diag *ref, int H, int T, const struct lx_ranges *rg)
{
    for (int h = 0; h < H; h++) {
        const double *e = hst[h];
        double n = e[LX_ST_ROWS];
        cr_expect_eq(d[h].rows, n, "%s T=%d head %d: rows %g vs %g", stack, T, h, d[h].rows, n);
        cr_expect(near(d[h].pmax, e[LX_ST_PMAX], n), "%s T=%d head %d: pmax %.9g vs head path %.9g", stack, T, h,
                  d[h].pmax, e[LX_ST_PMAX]);
        cr_expect(near(d[h].entropy, e[LX_ST_ENTROPY], n), "%s T=%d head %d: entropy %.9g vs head path %.9g",
                  stack, T, h, d[h].entropy, e[LX_ST_ENTROPY]);
        cr_expect(near(d[h].sigma, e[LX_ST_SIGMA], n), "%s T=%d head %d: sigma %.9g vs head path %.9g", stack, T,
                  h, d[h].sigma, e[LX_ST_SIGMA]);
        if (!ref)
            continue;
        cr_expect(near(d[h].entropy, ref[h].entropy, n), "%s T=%d head %d: entropy %.9g vs naive %.9g", stack, T,
                  h, d[h].entropy, ref[h].entropy);
        cr_expect(near(d[h].first, ref[h].first, n), "%s T=%d head %d: mass of key 0 %.9g vs naive %.9g", stack, T,
                  h, d[h].first, ref[h].first);
        cr_expect(near(d[h].zsink, ref[h].zsink, n), "%s T=%d head %d: zero sink's mass %.9g vs naive %.9g", stack,
                  T, h, d[h].zsink, ref[h].zsink);
        for (int k = 0; k < LX_DIAG_BUCKETS; k++)
            cr_expect(near(d[h].bucket[k], ref[h].bucket[k], n), "%s T=%d head %d: bucket %d %.9g vs naive %.9g",
                      stack, T, h, k, d[h].bucket[k], ref[h].bucket[k]);
        for (int r = 0; r < rg->n; r++) {
            double nr = ref[h].range_rows[r];
            cr_expect_eq(d[h].range_rows[r], nr, "%s T=%d head %d: range %d rows", stack, T, h, r);
            cr_expect(near(d[h].range_mass[r], ref[h].range_mass[r], nr), "%s T=%d head %d: range_mass %d %.9g vs "
                      "naive %.9g", stack, T, h, r, d[h].range_mass[r], ref[h].range_mass[r]);
            cr_expect(near(d[h].range_entropy[r], ref[h].range_entropy[r], nr), "%s T=%d head %d: range_entropy "
                      "%d %.9g vs naive %.9g", stack, T, h, r, d[h].range_entropy[r], ref[h].range_entropy[r]);
        }
    }
}

/* Tiled (blocks bq × bk) vs naive and head path for one stack, (T, H, D)
** contiguous; row statistics of rows [T/3, T − 1) too. */
static int sse2_only;   /* run the softmax loops' SSE2 build (the CPU may pick AVX2) */

/* A zero sink's share of causal row i (p its keys' probabilities): what the keys leave; 0 without one. */
static double sink_share(const float *p, long i, int on)
{
    double ps = on ? 1.0 : 0.0;
    for (long j = 0; on && j <= i; j++)
        ps -= p[j];
    return ps;
}

static void compare(const char *stack, int T, int H, int D, int causal, int bq, int bk)
{
    struct lx_facts f = tfacts(D, 6, H, T);
    struct tstack st;
    tstack_make(&st, stack, &f);
    if (st.spec.calibrate)
        st.spec.temperature = 0.7;      /* as if calibrated */
    long N = (long)T * H * D;
    float *q = malloc(sizeof(float) * N), *k = malloc(sizeof(float) * N), *v = malloc(sizeof(float) * N);
    float *o_naive = malloc(sizeof(float) * N), *o_head = malloc(sizeof(float) * N);
    float *o_tile = malloc(sizeof(float) * N), *att = malloc(sizeof(float) * (size_t)H * T * T);
    fill(q, N, 1), fill(k, N, 2), fill(v, N, 3);
    if (st.spec.cosine)     /* as the model does: unit q and k */
        for (long r = 0; r < 2L * T * H; r++) {
            float *x = (r % 2 ? k : q) + (r / 2) * D;
            double nn = 0.0;
            for (int d = 0; d < D; d++)
                nn += (double)x[d] * x[d];
            for (int d = 0; d < D; d++)
                x[d] = (float)(x[d] / sqrt(nn));
        }
    lx_attention_forward(o_naive, att, q, k, v, &st.spec, T, H, D, causal);

    float *P = malloc(sizeof(float) * (size_t)T * T), *far = malloc(sizeof(float) * lx_attn_far_floats(T, D));
    double *tab = malloc(sizeof(double) * 2 * (size_t)T), hst[8][LX_ATTN_NSTATS] = {{0}};
    long row0 = T / 3, row1 = T > 3 ? T - 1 : 0;
    cr_assert_leq(H, 8);
    struct lx_attn_ws hw = {.tab = tab, .far = far, .stats_row0 = row0, .stats_row1 = row1};
    struct lx_attn_shape sh = {.T = T, .H = H, .KV = H, .D = D, .ld = H * D, .ldo = H * D, .causal = causal};
    for (int h = 0; h < H; h++) {
        hw.stats = hst[h];
        lx_attn_head_forward(o_head + h * D, P, q + h * D, k + h * D, v + h * D, &st.spec, h, &sh, &hw);
    }
    hw.stats = NULL;

    int nthr = omp_get_max_threads();
    struct lx_tile_ws tw = {.bq = bq, .bk = bk, .n_thr = nthr, .sse2_only = sse2_only};
    tw.scratch = malloc(sizeof(float) * lx_tile_thread_floats(bq, bk, D) * (size_t)nthr);
    size_t nrot = lx_tile_rot_floats(&st.spec, T, H, H, D, causal), ntab = (size_t)lx_tile_tab_rows(&st.spec) * H * T;
    tw.rot = nrot ? malloc(sizeof(float) * nrot) : NULL;
    tw.tab = ntab ? malloc(sizeof(double) * ntab) : NULL;
    tw.kpack = malloc(sizeof(float) * (lx_tile_kpack_floats(T, H, D) + 1));  /* used when D is whole panels */
    struct lx_diag td[8] = {{0}}, ref[8] = {{0}};
    struct lx_ranges rg = {.n = 3, .lo = {0, 1, 3}, .hi = {2, 5, 9}};
    struct lx_tile_stats ts = {.out = td, .row0 = row0, .row1 = row1, .ranges = causal ? &rg : NULL,
                               .buckets = causal};
    tw.stats = &ts;
    tw.acc = malloc(sizeof(double) * lx_tile_acc_doubles(bq) * (size_t)nthr);
    tw.part = malloc(sizeof(struct lx_diag) * (size_t)H * (size_t)lx_tile_stat_units(bq, T));
    lx_attn_tiled_forward(o_tile, q, k, v, &st.spec, NULL, &sh, &tw);
    tw.stats = NULL;
    for (int h = 0; causal && h < H; h++)   /* what the attn task summed from the head path's rows */
        for (long i = row0; i < (row1 ? row1 : T); i++)
            lx_diag_row(&ref[h], att + ((long)h * T + i) * T, i, &rg, sink_share(att + ((long)h * T + i) * T, i,
                                                                                  st.spec.zsink.method != NULL));
    compare_stats(stack, td, (const double (*)[LX_ATTN_NSTATS])hst, causal ? ref : NULL, H, T, &rg);

    double e_naive = rel_err(o_tile, o_naive, N), e_head = rel_err(o_tile, o_head, N);
    cr_expect_leq(e_naive, TOL, "%s T=%d H=%d %s blocks %dx%d: tiled vs naive %g", stack, T, H,
                  causal ? "causal" : "bidirectional", bq, bk, e_naive);
    cr_expect_leq(e_head, TOL, "%s T=%d H=%d %s blocks %dx%d: tiled vs head path %g", stack, T, H,
                  causal ? "causal" : "bidirectional", bq, bk, e_head);

    if (st.spec.learn_scale) {  /* learned multipliers: against the head path with the same */
        float mult[8] = {0.5f, 1.7f, 1.1f, 0.9f, 2.0f, 0.3f, 1.0f, 1.3f};
        for (int h = 0; h < H; h++) {
            hw.mult = mult[h % 8];
            lx_attn_head_forward(o_head + h * D, P, q + h * D, k + h * D, v + h * D, &st.spec, h, &sh, &hw);
        }
        lx_attn_tiled_forward(o_tile, q, k, v, &st.spec, mult, &sh, &tw);
        double e = rel_err(o_tile, o_head, N);
        cr_expect_leq(e, TOL, "%s learned scales: tiled vs head path %g", stack, e);
    }
    free(q), free(k), free(v), free(o_naive), free(o_head), free(o_tile), free(att), free(P), free(far), free(tab);
    free(tw.scratch), free(tw.rot), free(tw.tab), free(tw.acc), free(tw.part), free(tw.kpack);
    tstack_free(&st);
}

/* stacks[] (tests/model_stacks.h): every method that runs on a model, with
** windows smaller (2) and larger (6) than the 4-key blocks, sinks, and far keys. */
Test(tiled, every_method_at_odd_sizes, .timeout = 120)
{
    static const int Ts[] = {1, 3, 4, 5, 7, 13};       /* blocks of 4: below, at, ±1, not a multiple */
    for (size_t s = 0; s < sizeof stacks / sizeof *stacks; s++)
        for (size_t t = 0; t < sizeof Ts / sizeof *Ts; t++)
            for (int causal = 0; causal < 2; causal++)
                compare(stacks[s], Ts[t], 3, 8, causal, 4, 4);
}

Test(tiled, unequal_blocks_and_long_rows, .timeout = 120)
{
    for (size_t s = 0; s < sizeof stacks / sizeof *stacks; s++)
        for (int causal = 0; causal < 2; causal++) {
            compare(stacks[s], 37, 2, 16, causal, 8, 5);
            compare(stacks[s], 37, 2, 16, causal, 3, 16);
        }
}

Test(tiled, sse2_loops_agree_with_the_reference, .timeout = 60)
{
    sse2_only = 1;
    for (int causal = 0; causal < 2; causal++) {
        compare("rope", 37, 2, 16, causal, 8, 13);      /* rows of 8+ keys: the 8-lane loops and their tails */
        compare("[rope, {rerope: {window: 9, leak: 2}}, {logn: {mode: su}}]", 37, 2, 16, causal, 8, 13);
    }
    sse2_only = 0;
}

Test(tiled, threads_agree_with_the_reference, .timeout = 60)
{
    omp_set_num_threads(2);
    compare("[rope, {streaming: {sinks: 3, recent: 7}}]", 61, 4, 16, 1, 8, 8);
    compare("[rope, {rerope: {window: 9}}, infoscale]", 61, 4, 16, 0, 8, 8);
    omp_set_num_threads(1);
}

/* ---- the softmax's e^x loops ----------------------------------------------------- */

/* Every build of lx_tile_exp_sum this CPU runs (0 the SSE2 loop; 1 AVX2, the
** same bits; 2 sixteen AVX-512 lanes; 3 eight AVX2 + FMA lanes), on rows of
** every length to 40 (the vector loops' tails), values from 0 down past the
** floor (e^−70), and −∞ for fast numerics' loops (the portable ones keep
** e·0 below the floor, so that a NaN stays one): each e^(s − mx) within 2^-21 of expf's (the
** polynomial's 2e-7 and a few roundings), 0 at and below the floor, and the
** sum within n·2^-21 of the terms' sum in double. */
Test(tiled, exp_loops_are_expf_within_the_polynomials_error)
{
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    int avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    static float x[40], s[40];
    for (int level = 0; level < 4; level++) {
        if ((level && !avx2) || (level == 2 && !avx512))
            continue;
        for (int n = 0; n <= 40; n++) {
            fill(x, 40, (uint32_t)(100 + n));
            for (int c = 0; c < n; c++)
                x[c] = c % 7 == 3 ? -75.0f - (float)c : c % 11 == 5 && level >= 2 ? -INFINITY : 3.0f * x[c] - 4.0f;
            float mx = 0.5f;
            memcpy(s, x, sizeof x);
            float sum = lx_tile_exp_sum(s, n, mx, level);
            double want = 0.0;
            for (int c = 0; c < n; c++) {
                float e = x[c] - mx;
                double ref = e > -70.0f ? (double)expf(e) : 0.0;
                want += ref;
                cr_assert(fabs(s[c] - ref) <= 0x1p-21 * ref, "level %d n %d: e^%a = %a, expf %a", level, n,
                          (double)e, (double)s[c], ref);
            }
            cr_assert(fabs(sum - want) <= n * 0x1p-21 * want, "level %d n %d: sum %a, terms %a", level, n,
                      (double)sum, want);
        }
    }
}

/* ---- probabilities rounded as llama.cpp's half cache has them (ws->phalf) ---------- */

/* The tiled forward with P normalised and rounded to type dt (lx_attn_half) on
** one stack, (T, H, D) contiguous with one-hot values (v_j = e_j, D >= T), so
** that each output row is the row's rounded probabilities themselves in any
** summation order. Each is a number of the type, within its rounding of the
** unrounded head path's p (unit roundoff u, f16's subnormals an absolute
** 2^-25) plus the two paths' own difference (their e^x and sums: 2^-18 of p);
** the head path rounding the same way gives the same values but where the two
** unrounded p straddle a rounding boundary (a step of the type). Row
** statistics (of the unrounded P) match the head path's, and when causal
** lx_diag_row's on its unrounded rows (buckets, ranges). Returns how many
** probabilities the rounding moved, and adds to *n how many are not 0. */
static long compare_phalf(const char *stack, int T, int H, int causal, int bq, int bk, int dt, long *n)
{
    enum { D = 48 };
    struct lx_facts f = tfacts(D, 6, H, T);
    struct tstack st;
    tstack_make(&st, stack, &f);
    if (st.spec.calibrate)
        st.spec.temperature = 0.7;
    long N = (long)T * H * D, moved = 0;
    float *q = malloc(sizeof(float) * N), *k = malloc(sizeof(float) * N), *v = calloc((size_t)N, sizeof(float));
    float *o_ref = malloc(sizeof(float) * N), *o_half = malloc(sizeof(float) * N), *o_tile = malloc(sizeof(float) * N);
    float *P = malloc(sizeof(float) * (size_t)T * T), *far = malloc(sizeof(float) * lx_attn_far_floats(T, D));
    double *tab = malloc(sizeof(double) * 2 * (size_t)T), hst[8][LX_ATTN_NSTATS] = {{0}};
    fill(q, N, 11), fill(k, N, 12);
    cr_assert(T <= D && H <= 8);
    for (long i = 0; i < T; i++)
        for (int h = 0; h < H; h++)
            v[(i * H + h) * D + i] = 1.0f;
    struct lx_attn_ws hw = {.tab = tab, .far = far};
    struct lx_attn_shape sh = {.T = T, .H = H, .KV = H, .D = D, .ld = H * D, .ldo = H * D, .causal = causal};
    struct lx_diag td[8] = {{0}}, dref[8] = {{0}};
    struct lx_ranges rg = {.n = 3, .lo = {0, 1, 3}, .hi = {2, 5, 9}};
    for (int h = 0; h < H; h++) {
        hw.phalf = 0, hw.stats = NULL;
        lx_attn_head_forward(o_ref + h * D, P, q + h * D, k + h * D, v + h * D, &st.spec, h, &sh, &hw);
        for (long i = 0; causal && i < T; i++)     /* buckets and ranges of the unrounded rows */
            lx_diag_row(&dref[h], P + i * T, i, &rg, sink_share(P + i * T, i, st.spec.zsink.method != NULL));
        hw.phalf = dt, hw.stats = hst[h];
        lx_attn_head_forward(o_half + h * D, P, q + h * D, k + h * D, v + h * D, &st.spec, h, &sh, &hw);
    }
    int nthr = omp_get_max_threads();
    struct lx_tile_ws tw = {.bq = bq, .bk = bk, .n_thr = nthr, .phalf = dt};
    tw.scratch = malloc(sizeof(float) * lx_tile_thread_floats(bq, bk, D) * (size_t)nthr);
    tw.pnorm = malloc(sizeof(float) * lx_tile_pnorm_floats(bq, T) * (size_t)nthr);
    size_t nrot = lx_tile_rot_floats(&st.spec, T, H, H, D, causal), ntab = (size_t)lx_tile_tab_rows(&st.spec) * H * T;
    tw.rot = nrot ? malloc(sizeof(float) * nrot) : NULL;
    tw.tab = ntab ? malloc(sizeof(double) * ntab) : NULL;
    tw.kpack = malloc(sizeof(float) * (lx_tile_kpack_floats(T, H, D) + 1));
    struct lx_tile_stats ts = {.out = td, .ranges = causal ? &rg : NULL, .buckets = causal};
    tw.stats = &ts;
    tw.acc = malloc(sizeof(double) * lx_tile_acc_doubles(bq) * (size_t)nthr);
    tw.part = malloc(sizeof(struct lx_diag) * (size_t)H * (size_t)lx_tile_stat_units(bq, T));
    lx_attn_tiled_forward(o_tile, q, k, v, &st.spec, NULL, &sh, &tw);
    compare_stats(stack, td, (const double (*)[LX_ATTN_NSTATS])hst, causal ? dref : NULL, H, T, &rg);
    double u = dt == LX_DT_F16 ? 0x1p-11 : 0x1p-8, sub = dt == LX_DT_F16 ? 0x1p-25 : 0.0;
    for (long e = 0; e < N; e++) {
        float r = o_tile[e], ref = o_ref[e];
        lx_round_half_n(&r, dt, 1);
        cr_assert_eq(r, o_tile[e], "%s %s T=%d: o[%ld] = %a is a number of the type", stack, lx_kv_name(dt), T, e,
                     (double)o_tile[e]);
        double err = fabs((double)o_tile[e] - ref), bound = fmax((u + 0x1p-18) * fabs(ref), sub);
        cr_assert_leq(err, bound, "%s %s T=%d %s: o[%ld] %a against the unrounded %a", stack, lx_kv_name(dt), T,
                      causal ? "causal" : "bidirectional", e, (double)o_tile[e], (double)ref);
        double step = fmax(2 * u * fabs(ref), 2 * sub);
        cr_assert_leq(fabs((double)o_tile[e] - o_half[e]), step * (1 + 0x1p-18), "%s: o[%ld] %a, head path %a",
                      stack, e, (double)o_tile[e], (double)o_half[e]);
        moved += o_tile[e] != ref;
        *n += ref != 0.0f;
    }
    free(q), free(k), free(v), free(o_ref), free(o_half), free(o_tile), free(P), free(far), free(tab);
    free(tw.scratch), free(tw.pnorm), free(tw.rot), free(tw.tab), free(tw.kpack), free(tw.acc), free(tw.part);
    tstack_free(&st);
    return moved;
}

/* stacks[] with blocks and tiles around the sizes, both types, causal and
** bidirectional: every probability rounded as the head path rounds it, and
** the rounding moves most of them. */
Test(tiled, half_rounding_of_p_is_the_head_paths, .timeout = 300)
{
    static const int Ts[] = {1, 5, 13, 37}, dts[] = {LX_DT_F16, LX_DT_BF16};
    for (size_t s = 0; s < sizeof stacks / sizeof *stacks; s++)
        for (int t = 0; t < 2; t++)
            for (int causal = 0; causal < 2; causal++) {
                long moved = 0, n = 0;
                for (size_t i = 0; i < sizeof Ts / sizeof *Ts; i++) {
                    moved += compare_phalf(stacks[s], Ts[i], 2, causal, i % 2 ? 8 : 4, i % 2 ? 5 : 4, dts[t], &n);
                }
                cr_expect_gt(moved, n / 2, "%s %s: %ld of %ld probabilities rounded", stacks[s], lx_kv_name(dts[t]),
                             moved, n);
            }
}

/* Row statistics (entropy, pmax, sigma, buckets, ranges) of heads × T rows
** and the output o (T, H·D) of the tiled forward with blocks of bq queries,
** on 2 threads. */
static void stats_with_blocks(struct lx_diag *out, float *o, const char *stack, int T, int H, int D, int bq)
{
    struct lx_facts f = tfacts(D, 6, H, T);
    struct tstack st;
    tstack_make(&st, stack, &f);
    long N = (long)T * H * D;
    float *q = malloc(sizeof(float) * N), *k = malloc(sizeof(float) * N), *v = malloc(sizeof(float) * N);
    fill(q, N, 1), fill(k, N, 2), fill(v, N, 3);
    omp_set_num_threads(2);
    int nthr = omp_get_max_threads();
    struct lx_ranges rg = {.n = 2, .lo = {1, 16}, .hi = {16, 300}};
    struct lx_tile_stats ts = {.out = out, .row0 = 5, .ranges = &rg, .buckets = 1};
    struct lx_tile_ws tw = {.bq = bq, .bk = 256, .n_thr = nthr, .stats = &ts};
    tw.scratch = malloc(sizeof(float) * lx_tile_thread_floats(bq, 256, D) * (size_t)nthr);
    size_t ntab = (size_t)lx_tile_tab_rows(&st.spec) * H * T;
    tw.tab = ntab ? malloc(sizeof(double) * ntab) : NULL;
    tw.kpack = malloc(sizeof(float) * lx_tile_kpack_floats(T, H, D));
    tw.acc = malloc(sizeof(double) * lx_tile_acc_doubles(bq) * (size_t)nthr);
    tw.part = malloc(sizeof(struct lx_diag) * (size_t)H * (size_t)lx_tile_stat_units(bq, T));
    struct lx_attn_shape sh = {.T = T, .H = H, .KV = H, .D = D, .ld = H * D, .ldo = H * D, .causal = 1};
    memset(out, 0, sizeof *out * (size_t)H);
    lx_attn_tiled_forward(o, q, k, v, &st.spec, NULL, &sh, &tw);
    omp_set_num_threads(1);
    free(q), free(k), free(v), free(tw.scratch), free(tw.tab), free(tw.acc), free(tw.part), free(tw.kpack);
    tstack_free(&st);
}

/* The stored attention statistics are sums over rows in units of
** LX_TILE_STAT_ROWS: growing the query block (a speed setting) must not move
** them, nor the output, by a bit in portable numerics (whose products do not
** depend on the rows a call covers), at a length that is not a multiple of a
** unit. (In fast numerics OpenBLAS may round a row differently in a taller
** product; the sums' order is still the units'.) */
Test(tiled, statistics_do_not_depend_on_the_query_block, .timeout = 60)
{
    static const char *const stacks_[] = {"[rope, {logn: {mode: su}}]", "alibi", "[rope, {window: {size: 100}}]"};
    enum { T = 1100, H = 2, D = 16 };
    for (size_t s = 0; s < 3; s++) {
        struct lx_diag a[H], b[H], c[H];
        float *o[3];
        for (int i = 0; i < 3; i++)
            o[i] = malloc(sizeof(float) * T * H * D);
        lx_numerics_set(LX_NUMERICS_PORTABLE);
        stats_with_blocks(a, o[0], stacks_[s], T, H, D, 256);
        stats_with_blocks(b, o[1], stacks_[s], T, H, D, 512);
        stats_with_blocks(c, o[2], stacks_[s], T, H, D, 768);
        lx_numerics_set(LX_NUMERICS_FAST);
        cr_expect(memcmp(o[0], o[1], sizeof(float) * T * H * D) == 0 &&
                      memcmp(o[0], o[2], sizeof(float) * T * H * D) == 0,
                  "%s: outputs with blocks of 256, 512, 768 rows differ", stacks_[s]);
        for (int i = 0; i < 3; i++)
            free(o[i]);
        for (int h = 0; h < H; h++) {
            cr_expect(a[h].rows == T - 5, "%s head %d: %g rows", stacks_[s], h, a[h].rows);
            cr_expect(memcmp(&a[h], &b[h], sizeof a[h]) == 0 && memcmp(&a[h], &c[h], sizeof a[h]) == 0,
                      "%s head %d: statistics with blocks of 256, 512, 768 rows differ (entropy %.17g %.17g "
                      "%.17g)", stacks_[s], h, a[h].entropy, b[h].entropy, c[h].entropy);
        }
    }
}

/* ---- grouped-query attention ---------------------------------------------------- */

/* (T, H, D) copies q, k, v of a fused (T, (H + 2KV)·D) qkv buffer: key/value
** head h of the copies is the fused buffer's head h / (H / KV). */
static void split_qkv(float *q, float *k, float *v, const float *qkv, long T, int H, int KV, int D)
{
    long ld = (long)(H + 2 * KV) * D;
    for (long t = 0; t < T; t++)
        for (int h = 0; h < H; h++)
            for (int d = 0; d < D; d++) {
                long g = h / (H / KV);
                q[(t * H + h) * D + d] = qkv[t * ld + h * D + d];
                k[(t * H + h) * D + d] = qkv[t * ld + (H + g) * D + d];
                v[(t * H + h) * D + d] = qkv[t * ld + (H + KV + g) * D + d];
            }
}

/* Tiled with KV key/value heads in one fused (T, (H + 2KV)·D) qkv buffer, as
** the model lays it out, against the naive reference on (T, H, D) copies
** whose key/value head h is the fused buffer's head h / (H / KV). */
static void compare_gqa(const char *stack, int T, int H, int KV, int D, int causal)
{
    struct lx_facts f = tfacts(D, 6, H, T);
    struct tstack st;
    tstack_make(&st, stack, &f);
    if (st.spec.calibrate)
        st.spec.temperature = 0.7;
    long N = (long)T * H * D, ld = (long)(H + 2 * KV) * D;
    float *qkv = malloc(sizeof(float) * T * ld), *q = malloc(sizeof(float) * N), *k = malloc(sizeof(float) * N);
    float *v = malloc(sizeof(float) * N), *o_naive = malloc(sizeof(float) * N), *o_tile = malloc(sizeof(float) * N);
    float *att = malloc(sizeof(float) * (size_t)H * T * T);
    fill(qkv, T * ld, 4);
    if (st.spec.cosine)     /* unit q and k rows, as the model gives them */
        unit_qk_rows(qkv, T, H, KV, D);
    split_qkv(q, k, v, qkv, T, H, KV, D);
    lx_attention_forward(o_naive, att, q, k, v, &st.spec, T, H, D, causal);
    int nthr = omp_get_max_threads();
    struct lx_tile_ws tw = {.bq = 4, .bk = 4, .n_thr = nthr};
    tw.scratch = malloc(sizeof(float) * lx_tile_thread_floats(4, 4, D) * (size_t)nthr);
    size_t nrot = lx_tile_rot_floats(&st.spec, T, H, KV, D, causal), ntab = (size_t)lx_tile_tab_rows(&st.spec) * H * T;
    tw.rot = nrot ? malloc(sizeof(float) * nrot) : NULL;
    tw.tab = ntab ? malloc(sizeof(double) * ntab) : NULL;
    struct lx_attn_shape sh = {.T = T, .H = H, .KV = KV, .D = D, .ld = (int)ld, .ldo = H * D, .causal = causal};
    lx_attn_tiled_forward(o_tile, qkv, qkv + H * D, qkv + (H + KV) * D, &st.spec, NULL, &sh, &tw);
    double e = rel_err(o_tile, o_naive, N);
    cr_expect_leq(e, TOL, "%s T=%d H=%d KV=%d %s: tiled vs naive on repeated k, v %g", stack, T, H, KV,
                  causal ? "causal" : "bidirectional", e);
    free(qkv), free(q), free(k), free(v), free(o_naive), free(o_tile), free(att);
    free(tw.scratch), free(tw.rot), free(tw.tab);
    tstack_free(&st);
}

Test(tiled, grouped_query_heads_match_naive_on_repeated_kv, .timeout = 120)
{
    for (size_t s = 0; s < sizeof stacks / sizeof *stacks; s++)
        for (int causal = 0; causal < 2; causal++) {
            compare_gqa(stacks[s], 13, 4, 2, 8, causal);
            compare_gqa(stacks[s], 7, 4, 1, 8, causal);
        }
}

/* ---- numerics bf16: the tiles' products on the bf16 kernel ---------------------- */

/* The tiled forward of one stack in numerics bf16 (fused qkv rows rounded to
** bf16 as the model gives them, KV < H, blocks of bq × bk), on the kernel the
** CPU runs and on the plain C one: the same bits where the CPU has
** AVX512-BF16 (elsewhere the first runs the fp32 kernel on the bf16 values).
** Against the naive reference in double on the same values, per element:
** P is rounded to bf16 before P·V, each entry within 2^-8 of itself, so
** |o − o_ref| <= 2^-8 Σ_j p_j |v_j| plus the fp32 path's own error (TOL of
** max |o_ref|, twice over). Stacks with far keys (the posmap's rows are
** rotated, then rounded to bf16: their scores move by more) only the first
** check. Returns max |o − o_fp32| over the output (the tiled forward in fast
** numerics): 0 would mean nothing ran in bf16. */
static double compare_bf16(const char *stack, int T, int H, int KV, int D, int causal, int bq, int bk)
{
    struct lx_facts f = tfacts(D, 6, H, T);
    struct tstack st;
    tstack_make(&st, stack, &f);
    if (st.spec.calibrate)
        st.spec.temperature = 0.7;
    long N = (long)T * H * D, ld = (long)(H + 2 * KV) * D;
    float *qkv = malloc(sizeof(float) * T * ld), *q = malloc(sizeof(float) * N), *k = malloc(sizeof(float) * N);
    float *v = malloc(sizeof(float) * N), *o_naive = malloc(sizeof(float) * N);
    float *att = malloc(sizeof(float) * H * T * T), *o_cpu = malloc(sizeof(float) * N);
    float *o_plain = malloc(sizeof(float) * N), *o_32 = malloc(sizeof(float) * N);
    fill(qkv, T * ld, 5);
    if (st.spec.cosine)
        unit_qk_rows(qkv, T, H, KV, D);
    lx_round_bf16_n(qkv, (size_t)(T * ld));
    split_qkv(q, k, v, qkv, T, H, KV, D);
    lx_attention_forward(o_naive, att, q, k, v, &st.spec, T, H, D, causal);
    int nthr = omp_get_max_threads();
    struct lx_tile_ws tw = {.bq = bq, .bk = bk, .n_thr = nthr};
    tw.scratch = malloc(sizeof(float) * lx_tile_thread_floats(bq, bk, D) * (size_t)nthr);
    size_t nrot = lx_tile_rot_floats(&st.spec, T, H, KV, D, causal), ntab = (size_t)lx_tile_tab_rows(&st.spec) * H * T;
    tw.rot = nrot ? malloc(sizeof(float) * nrot) : NULL;
    tw.tab = ntab ? malloc(sizeof(double) * ntab) : NULL;
    tw.kpack = malloc(sizeof(float) * lx_tile_kpack_floats(T, KV, D));
    struct lx_attn_shape sh = {.T = T, .H = H, .KV = KV, .D = D, .ld = (int)ld, .ldo = H * D, .causal = causal};
    const float *Q = qkv, *K = qkv + H * D, *V = qkv + (H + KV) * D;
    lx_attn_tiled_forward(o_32, Q, K, V, &st.spec, NULL, &sh, &tw);
    /* row statistics ride along (on AVX512-BF16 tile_row then writes P in bf16 and keeps e for them) */
    struct lx_diag td[2][8] = {{{0}}};
    struct lx_ranges rg = {.n = 2, .lo = {0, 3}, .hi = {2, 9}};
    struct lx_tile_stats ts[2] = {{.out = td[0], .ranges = &rg, .buckets = 1},
                                  {.out = td[1], .ranges = &rg, .buckets = 1}};
    tw.acc = malloc(sizeof(double) * lx_tile_acc_doubles(bq) * (size_t)nthr);
    tw.part = malloc(sizeof(struct lx_diag) * (size_t)H * (size_t)lx_tile_stat_units(bq, T));
    cr_assert_leq(H, 8);
    lx_numerics_set(LX_NUMERICS_BF16);
    /* AMX's tiles (where the CPU has them) round inside a step as the hardware does: its output is
    ** held to the bound below, the AVX512-BF16 kernel's to the plain kernel's bits */
    float *o_amx = NULL;
    if (lx_gemm_amx_native()) {
        o_amx = malloc(sizeof(float) * N);
        lx_attn_tiled_forward(o_amx, Q, K, V, &st.spec, NULL, &sh, &tw);
    }
    lx_gemm_amx_disable(1);
    tw.stats = &ts[0];
    lx_attn_tiled_forward(o_cpu, Q, K, V, &st.spec, NULL, &sh, &tw);
    lx_gemm_amx_disable(0);
    tw.bf16_plain = 1, tw.stats = &ts[1];
    lx_attn_tiled_forward(o_plain, Q, K, V, &st.spec, NULL, &sh, &tw);
    /* AMX's path on emulated tiles, through the whole pass: the plain kernel's bits */
    float *o_emu = malloc(sizeof(float) * N);
    lx_gemm_amx_emulate(1);
    tw.bf16_plain = 0, tw.stats = NULL;
    lx_attn_tiled_forward(o_emu, Q, K, V, &st.spec, NULL, &sh, &tw);
    lx_gemm_amx_emulate(0);
    lx_numerics_set(LX_NUMERICS_FAST);
    const char *how = causal ? "causal" : "bidirectional";
    if (lx_gemm_bf16_native()) {
        cr_expect(!memcmp(o_cpu, o_plain, sizeof(float) * N), "%s T=%d %s: AVX512-BF16 and plain kernels differ",
                  stack, T, how);
        cr_expect(!memcmp(td[0], td[1], sizeof td[0]), "%s T=%d %s: statistics differ between the kernels", stack,
                  T, how);
        cr_expect(!memcmp(o_emu, o_plain, sizeof(float) * N), "%s T=%d %s: AMX's path (emulated) and plain differ",
                  stack, T, how);
    }
    free(o_emu);
    double top = 0.0, worst = 0.0, moved = 0.0;
    for (long i = 0; i < N; i++) {
        top = fmax(top, fabs(o_naive[i]));
        moved = fmax(moved, fabs((double)o_plain[i] - o_32[i]));
    }
    for (long t = 0; nrot == 0 && t < T; t++)
        for (int h = 0; h < H; h++)
            for (int d = 0; d < D; d++) {
                double pv = 0.0;
                const float *p = att + ((long)h * T + t) * T;
                for (long j = 0; j < T; j++)
                    pv += p[j] * fabs(v[(j * H + h) * D + d]);
                long i = (t * H + h) * D + d;
                double e = fabs((double)o_plain[i] - o_naive[i]) / (ldexp(pv, -8) + 2 * TOL * top);
                worst = fmax(worst, e);
                if (o_amx)
                    worst = fmax(worst, fabs((double)o_amx[i] - o_naive[i]) / (ldexp(pv, -8) + 2 * TOL * top));
            }
    cr_expect_leq(worst, 1.0, "%s T=%d %s: bf16 tiled vs naive at %.3g of the bound", stack, T, how, worst);
    free(o_amx);
    free(qkv), free(q), free(k), free(v), free(o_naive), free(att), free(o_cpu), free(o_plain), free(o_32);
    free(tw.scratch), free(tw.rot), free(tw.tab), free(tw.kpack), free(tw.acc), free(tw.part);
    tstack_free(&st);
    return moved;
}

/* Every method, at a length and blocks that leave partial tiles, odd key
** counts and windows whose first key is not on a panel (the spans then start
** on one), 2 threads. */
Test(tiled, bf16_numerics_run_bf16_products_within_the_rounding_of_p, .timeout = 300)
{
    omp_set_num_threads(2);
    double moved = 0.0;
    for (size_t s = 0; s < sizeof stacks / sizeof *stacks; s++)
        for (int causal = 0; causal < 2; causal++)
            moved = fmax(moved, compare_bf16(stacks[s], 75, 4, 2, 32, causal, 24, 32));
    moved = fmax(moved, compare_bf16("[rope, {streaming: {sinks: 3, recent: 40}}]", 203, 2, 1, 64, 1, 32, 48));
    omp_set_num_threads(1);
    cr_expect_gt(moved, 0.0, "numerics bf16 gave the fp32 values: the tiles did not round P");
}

/* ---- a model's loss through both evaluation paths ----------------------------- */

static double model_loss(const char *stack, int tiled)
{
    enum { MT = 70, MB = 2 };
    struct lx_arch a = {.mode = LX_MODEL_CAUSAL, .layers = 2, .d_model = 32, .heads = 2, .d_head = 16,
                        .d_mlp = 64, .mlp = LX_MLP_GELU, .vocab = 64, .norm_eps = 1e-5, .init_std = 0.3};
    struct lx_model m;
    lx_model_init(&m, &a, 99);
    struct lx_facts f = tfacts(16, 16, 2, MT);
    struct tstack st;
    tstack_make(&st, stack, &f);
    struct lx_acts acts;
    struct lx_error err;
    cr_assert_eq(lx_acts_alloc(&acts, &a, MB, MT, 0, &err), LX_OK, "%s", err.msg);
    int tok[MB * MT], tgt[MB * MT];
    for (int i = 0; i < MB * MT; i++)
        tok[i] = (i * 37 + 11) % 64, tgt[i] = (i * 53 + 5) % 64;
    acts.head_path = !tiled;
    double loss = lx_model_forward(&m, &st.spec, tok, tgt, &acts);
    cr_expect_eq(acts.att != NULL, !tiled, "%s: probabilities allocated only for the head path", stack);
    lx_acts_release(&acts);
    tstack_free(&st);
    lx_model_release(&m);
    return loss;
}

Test(tiled, model_loss_equals_the_head_path, .timeout = 60)
{
    static const char *const ms[] = {"rope", "[rope, {rerope: {window: 20}}, {logn: {mode: su}}]",
                                     "[rope, {streaming: {sinks: 4, recent: 16}}]", "[alibi, {window: {size: 9}}]"};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
        double lt = model_loss(ms[i], 1), lh = model_loss(ms[i], 0);
        cr_expect(fabs(lt - lh) <= 1e-5 * fabs(lh), "%s: loss tiled %.9g vs head path %.9g", ms[i], lt, lh);
    }
}

/* With llama.cpp's half-cache rounding (activations: llamacpp, kv_cache f16 or bf16: P normalised, then
** rounded) a model's loss through the tiled blocks (no T × T buffer) is the head path's within 1e-5, and
** within a quarter of what the rounding moves it (measured: under 1/40; the two round e^x's last bits,
** which differ, in their own way). */
Test(tiled, model_loss_rounding_p_as_llama_cpp_equals_the_head_path, .timeout = 60)
{
    static const char *const ms[] = {"rope", "[rope, {rerope: {window: 20}}, {logn: {mode: su}}]",
                                     "[rope, {streaming: {sinks: 4, recent: 16}}]", "[alibi, {window: {size: 9}}]"};
    static const int dts[] = {LX_DT_F16, LX_DT_BF16};
    lx_acts_llamacpp_set(1);
    for (int t = 0; t < 2; t++) {
        lx_kv_set(dts[t]);
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
            double lt = model_loss(ms[i], 1), lh = model_loss(ms[i], 0);
            lx_kv_set(0);
            double l0 = model_loss(ms[i], 1);
            lx_kv_set(dts[t]);
            cr_expect(fabs(lt - lh) <= 1e-5 * fabs(lh) && fabs(lt - lh) <= 0.25 * fabs(lh - l0),
                      "%s %s: loss tiled %.9g vs head path %.9g (unrounded %.9g)", lx_kv_name(dts[t]), ms[i], lt, lh,
                      l0);
        }
    }
    lx_kv_set(0);
    lx_acts_llamacpp_set(0);
}

/* ---- row statistics of a trained model at 16x its training length ------------- */

enum { ST_TRAIN = 16, ST_T = 256, ST_L = 2, ST_H = 2 };

/* The head path's rows as the attn task summed them before the tiles did. */
struct diag_sink {
    struct lx_diag d[ST_L][ST_H];
    const struct lx_ranges *rg;
    long row0;
    int zsink;      /* the stack has a zero sink */
};

static void diag_probe(void *ctx, int layer, int b, int h, const float *P, int T)
{
    struct diag_sink *s = ctx;
    for (long i = s->row0; i < T; i++)
        lx_diag_row(&s->d[layer][h], P + i * T, i, s->rg, sink_share(P + i * T, i, s->zsink));
}

/* A causal model trained 40 steps on the Austen windows of 16 tokens. */
static void trained_model(struct lx_model *m)
{
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = ST_L, a.d_model = 32, a.heads = ST_H, a.d_head = 16, a.d_mlp = 64;
    lx_params_finish(&lx_arch_schema, &a);
    lx_model_init(m, &a, 5);
    struct lx_train_cfg c;
    lx_params_defaults(&lx_train_schema, &c);
    c.length = ST_TRAIN, c.batch = 8, c.steps = 40, c.warmup = 5, c.eval_every = 40, c.eval_windows = 2;
    lx_params_finish(&lx_train_schema, &c);
    struct lx_facts f = tfacts(16, ST_TRAIN, ST_H, ST_TRAIN);
    struct tstack st;
    tstack_make(&st, "rope", &f);
    const struct lx_corpus_tokens *text;
    struct lx_error err = {{0}};
    struct lx_train_report rep;
    cr_assert_eq(lx_corpus_tokens(&text, "train", &lx_byte_tokenizer, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_train(m, &st.spec, &c, 77, text, &lx_byte_tokenizer, NULL, 0, NULL, NULL, NULL, &rep, &err), LX_OK,
                 "%s", err.msg);
    tstack_free(&st);
}

Test(tiled, model_statistics_equal_the_head_path_at_16x, .timeout = 300)
{
    struct lx_model m;
    trained_model(&m);
    const struct lx_corpus *text;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_corpus_get(&text, "test", &err), LX_OK, "%s", err.msg);
    int tok[ST_T];
    tok[0] = LX_TOK_BOS;
    for (int t = 1; t < ST_T; t++)
        tok[t] = text->docs[0].bytes[1000 + t];
    struct lx_ranges rg = {.n = 3, .lo = {1, 16, 64}, .hi = {16, 64, 256}};
    long row0 = ST_T / 4;
    struct lx_acts a;
    cr_assert_eq(lx_acts_alloc(&a, &m.arch, 1, ST_T, 0, &err), LX_OK, "%s", err.msg);
    a.stats_row0 = &row0;
    for (size_t s = 0; s < sizeof stacks / sizeof *stacks; s++) {
        struct lx_facts f = tfacts(16, ST_TRAIN, ST_H, ST_T);
        struct tstack st;
        tstack_make(&st, stacks[s], &f);
        if (st.spec.rel.method) {   /* a table the rope model did not learn (t5bias, kerple: tests/test_relbias.c) */
            tstack_free(&st);
            continue;
        }
        if (st.spec.calibrate)
            st.spec.temperature = 0.7;      /* as if calibrated */
        double hst[ST_L * ST_H][LX_ATTN_NSTATS] = {{0}}, tst[ST_L * ST_H][LX_ATTN_NSTATS] = {{0}};
        struct diag_sink ref = {.rg = &rg, .row0 = row0, .zsink = st.spec.zsink.method != NULL};
        struct lx_diag td[ST_L * ST_H] = {{0}};
        /* the head path, with the attn task's old probe */
        a.head_path = 1, a.stats = &hst[0][0], a.diag = NULL;
        lx_acts_set_probe(&a, diag_probe, &ref);
        lx_model_forward(&m, &st.spec, tok, NULL, &a);
        /* the tiles */
        lx_acts_set_probe(&a, NULL, NULL);
        a.head_path = 0, a.stats = &tst[0][0], a.diag = td, a.diag_ranges = &rg, a.diag_buckets = 1;
        lx_model_forward(&m, &st.spec, tok, NULL, &a);
        for (int l = 0; l < ST_L; l++) {
            compare_stats(stacks[s], td + l * ST_H, (const double (*)[LX_ATTN_NSTATS])hst[l * ST_H], ref.d[l], ST_H,
                          ST_T, &rg);
            for (int h = 0; h < ST_H; h++)      /* both outputs of the tiles agree */
                for (int k = 0; k < LX_ATTN_NSTATS; k++)
                    cr_expect(near(tst[l * ST_H + h][k], hst[l * ST_H + h][k], (double)ST_T), "%s: stat %d", stacks[s],
                              k);
        }
        tstack_free(&st);
    }
    lx_acts_release(&a);
    lx_model_release(&m);
}
