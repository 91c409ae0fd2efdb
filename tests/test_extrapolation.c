/*
** tests/test_extrapolation.c - the engine under every extrapolation method
** (docs/methods.md): the fast attention path against the naive reference with
** windows, sinks, far-key distances, cosine geometry and temperatures; the
** rotary property that scores depend only on the (effective) distance; the
** identities past the training length (a window of >= n keys, ReRoPE with
** w >= n, PI and NTK with scale 1, StreamingLLM with room for every key all
** equal plain RoPE on a model); PoSE positions; t5align's calibration.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/attention.h"
#include "harness/engine/model/model.h"
#include "harness/engine/model/train.h"
#include "harness/sweep/run.h"
#include "harness/core/rng.h"
#include "harness/engine/data/corpus.h"
#include "harness/engine/kernels/numerics.h"
#include "tests/stack.h"

static void fill(float *x, long n, uint32_t stream, float scale)
{
    struct lx_rng r;
    lx_rng_init(&r, 4242, stream, LX_RNG_INIT);
    for (long i = 0; i < n; i++)
        x[i] = scale * (float)lx_rng_normal(&r);
}

/* ---- fast path vs naive -------------------------------------------------- */

enum { XT = 13, XH = 2, XD = 8, XN = XT * XH * XD };

static double fast_vs_naive(const struct lx_spec *spec, const float *q, const float *k, const float *v,
                            int causal)
{
    static float o1[XN], o2[XN], att[XH * XT * XT], P[XT * XT];
    static float far[XT * XT + 2 * XT * XD];
    double tab[2 * XT], stats[LX_ATTN_NSTATS] = {0};
    struct lx_attn_ws ws = {.tab = tab, .far = far, .stats = stats};
    lx_attention_forward(o1, att, q, k, v, spec, XT, XH, XD, causal);
    double worst = 0.0;
    for (int h = 0; h < XH; h++) {
        long off = (long)h * XD;
        struct lx_attn_shape sh = {.T = XT, .H = XH, .KV = XH, .D = XD, .ld = XH * XD, .ldo = XH * XD,
                                   .causal = causal};
        lx_attn_head_forward(o2 + off, P, q + off, k + off, v + off, spec, h, &sh, &ws);
        for (long i = 0; i < (long)XT * XT; i++)
            worst = fmax(worst, fabs((double)P[i] - att[(long)h * XT * XT + i]));
    }
    for (long i = 0; i < XN; i++)
        worst = fmax(worst, fabs((double)o1[i] - o2[i]));
    cr_expect_eq(stats[LX_ST_ROWS], XH * XT, "one statistics row per query and head");
    /* the row statistics against the naive probabilities */
    double pmax = 0.0, ent = 0.0;
    for (long r = 0; r < (long)XH * XT; r++) {
        double mx = 0.0;
        for (long j = 0; j < XT; j++) {
            double p = att[r * XT + j];
            mx = fmax(mx, p);
            ent -= p > 0 ? p * log(p) : 0.0;
        }
        pmax += mx;
    }
    cr_expect_float_eq(stats[LX_ST_PMAX], pmax, 1e-4, "sum of max p %g vs %g", stats[LX_ST_PMAX], pmax);
    cr_expect_float_eq(stats[LX_ST_ENTROPY], ent, 1e-3, "sum of entropies %g vs %g", stats[LX_ST_ENTROPY], ent);
    return worst;
}

Test(extrap, fast_path_matches_naive_with_positions)
{
    static const char *stacks[] = {
        "[rope, {rerope: {window: 3}}]",
        "[rope, {rerope: {window: 3, leak: 2}}]",
        "[{rope: {layout: interleaved}}, {rerope: {window: 4, leak: 3}}, infoscale]",
        "[rope, {streaming: {sinks: 2, recent: 3}}]",
        "[rope, {lminfinite: {n_global: 2, local: 3, limit: 3}}]",
        "[rope, {window: {size: 4}}, {logn: {mode: su}}]",
        "[alibi, {streaming: {sinks: 2, recent: 4}}]",
        "[alibi, {pi: {scale: 2.5}}]",
        "[sandwich, pi]",
        "[rope, {streaming: {sinks: 5, recent: 1}}]",   /* sinks > recent + 1 */
        "[rope, {cosscale: {s: 8}}, {scaleinv: {tau: 2}}, {rerope: {window: 4}}]",
        "[rope, {yarn: {scale: 4}}, {lminfinite: {n_global: 1, local: 5}}]",
        "[rope, {window: {size: 5}}, t5align]",
        "[rope, {selfextend: {group: 3, window: 4}}]",
        "[{rope: {layout: interleaved}}, {selfextend: {group: 4, window: 5}}, infoscale]",
        "[rope, {dca: {chunk: 7, local: 2}}]",
        "[{rope: {layout: interleaved}}, {dca: {chunk: 5, local: 3}}, {logn: {mode: su}}]",
    };
    static float q[XN], k[XN], v[XN];
    fill(q, XN, 1, 1.0f), fill(k, XN, 2, 1.0f), fill(v, XN, 3, 1.0f);
    struct lx_facts f = tfacts(XD, 6, XH, XT);
    for (size_t s = 0; s < sizeof stacks / sizeof *stacks; s++)
        for (int causal = 0; causal < 2; causal++) {
            struct tstack st;
            tstack_make(&st, stacks[s], &f);
            if (st.spec.calibrate)
                st.spec.temperature = 0.7;     /* as if calibrated */
            double d = fast_vs_naive(&st.spec, q, k, v, causal);
            cr_expect_leq(d, 2e-5, "%s %s: max |fast − naive| %g", stacks[s], causal ? "causal" : "bidirectional", d);
            tstack_free(&st);
        }
}

/* ---- scores depend only on the effective distance ------------------------- */

/* Every query is the same vector u and every key the same w, each rotated by
** its position: then log p_ij − log p_ii = c·(u·R_δ w − u·w) is a function of
** the effective distance δ(i, j) alone, whichever method set the rotation. */
static void check_distance_only(const char *stack, int causal)
{
    enum { T = 24, D = 8 };
    struct lx_facts f = tfacts(D, 8, 1, T);
    struct tstack st;
    tstack_make(&st, stack, &f);
    static float q[T * D], k[T * D], v[T * D], o[T * D], att[T * T], qkv[T * 3 * D];
    float u[D], w[D];
    fill(u, D, 7, 1.0f), fill(w, D, 8, 1.0f), fill(v, T * D, 9, 1.0f);
    for (int t = 0; t < T; t++) {
        memcpy(qkv + t * 3 * D, u, sizeof u);
        memcpy(qkv + t * 3 * D + D, w, sizeof w);
    }
    double cs[T * D];
    lx_rope_table(cs, NULL, &st.spec.rotary, T);
    lx_rope_apply(qkv, &st.spec.rotary, cs, NULL, 1, T, 1, 1, D, +1);
    for (int t = 0; t < T; t++) {
        memcpy(q + t * D, qkv + t * 3 * D, sizeof u);
        memcpy(k + t * D, qkv + t * 3 * D + D, sizeof w);
    }
    lx_attention_forward(o, att, q, k, v, &st.spec, T, 1, D, causal);
    int pairs = 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++)
            for (int i2 = 0; i2 < T; i2++)
                for (int j2 = 0; j2 < T; j2++) {
                    if (att[i * T + j] <= 0 || att[i2 * T + j2] <= 0 || (i == i2 && j == j2))
                        continue;
                    double d1 = lx_spec_delta(&st.spec, i, j), d2 = lx_spec_delta(&st.spec, i2, j2);
                    if (fabs(d1 - d2) > 1e-12)
                        continue;
                    double f1 = log(att[i * T + j]) - log(att[i * T + i]);
                    double f2 = log(att[i2 * T + j2]) - log(att[i2 * T + i2]);
                    cr_expect_leq(fabs(f1 - f2), 1e-4, "%s: (%d,%d) and (%d,%d) share delta %g but differ: %g vs %g",
                                  stack, i, j, i2, j2, d1, f1, f2);
                    pairs++;
                }
    cr_expect_gt(pairs, 100, "%s: too few pairs with equal distances (%d)", stack, pairs);
    tstack_free(&st);
}

Test(extrap, rotary_scores_depend_only_on_effective_distance)
{
    static const char *stacks[] = {
        "rope", "[rope, {pi: {scale: 4}}]", "[rope, {ntk: {scale: 4}}]", "[rope, {yarn: {scale: 4}}]",
        "[rope, prope]", "[rope, {rerope: {window: 5}}]", "[rope, {rerope: {window: 4, leak: 2}}]",
        "[rope, {streaming: {sinks: 2, recent: 5}}]", "[rope, {lminfinite: {n_global: 2, local: 6}}]",
    };
    for (size_t s = 0; s < sizeof stacks / sizeof *stacks; s++)
        for (int causal = 0; causal < 2; causal++)
            check_distance_only(stacks[s], causal);
}

/* ---- identities on a model past the training length --------------------- */

enum { MT = 48, MB = 2, MTRAIN = 12 };

static struct lx_arch tiny_arch(int mode)
{
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.mode = mode;
    a.layers = 2;
    a.d_model = 32;
    a.heads = 2;
    a.d_head = 16;
    a.d_mlp = 64;
    a.init_std = 0.2;
    lx_params_finish(&lx_arch_schema, &a);
    return a;
}

/* Logits (MB·MT·V) of a random model of arch a under a stack, evaluated at MT = 4×MTRAIN. */
static float *arch_logits(struct lx_arch a, const char *stack)
{
    struct lx_error err = {{0}};
    struct lx_model m;
    lx_model_init(&m, &a, 31);
    struct lx_facts f = tfacts((int)a.d_head, MTRAIN, (int)a.heads, MT);
    struct tstack st;
    tstack_make(&st, stack, &f);
    int tok[MB * MT];
    for (int i = 0; i < MB * MT; i++)
        tok[i] = (i * 37 + 5) % 256;
    struct lx_acts acts;
    cr_assert_eq(lx_acts_alloc(&acts, &a, MB, MT, 0, &err), LX_OK, "%s", err.msg);
    lx_model_forward(&m, &st.spec, tok, NULL, &acts);
    size_t n = (size_t)MB * MT * (size_t)a.vocab;
    float *out = malloc(n * sizeof *out);
    memcpy(out, acts.logits, n * sizeof *out);
    lx_acts_release(&acts);
    tstack_free(&st);
    lx_model_release(&m);
    return out;
}

static float *model_logits(int mode, const char *stack)
{
    return arch_logits(tiny_arch(mode), stack);
}

/* PI on ALiBi through the whole model, against ALiBi's own slope parameter: with one head the slope is
** 2^−max_bias, so dividing the distances by 2 (PI, scale 2) is max_bias 9 in place of 8, and by 4 is 10; the
** logits are the same bits (t/2·2^−8 and t·2^−9 are one product of powers of two), in both modes. */
Test(extrap, alibi_with_pi_is_alibi_with_gentler_slopes)
{
    size_t V = 260, n = (size_t)MB * MT * V;
    for (int mode = 0; mode < 2; mode++)
        for (int k = 1; k <= 2; k++) {
            struct lx_arch a = tiny_arch(mode);
            a.heads = 1;
            a.d_head = 32;
            char pi[64], gentle[64];
            snprintf(pi, sizeof pi, "[alibi, {pi: {scale: %d}}]", 1 << k);
            snprintf(gentle, sizeof gentle, "{alibi: {max_bias: %d}}", 8 + k);
            float *x = arch_logits(a, pi), *y = arch_logits(a, gentle), *z = arch_logits(a, "alibi");
            cr_expect(memcmp(x, y, n * sizeof *x) == 0, "%s and %s (mode %d) differ", pi, gentle, mode);
            cr_expect(memcmp(x, z, n * sizeof *x) != 0, "%s (mode %d) is plain alibi", pi, mode);
            free(x), free(y), free(z);
        }
}

Test(extrap, identities_equal_rope_past_training_length)
{
    static const char *same[] = {
        "[rope, {window: {size: 48}}]",             /* a window of >= n keys */
        "[rope, {window: {size: 1000}}]",
        "[rope, {rerope: {window: 48}}]",           /* w >= n */
        "[rope, {rerope: {window: 60, leak: 4}}]",
        "[rope, {selfextend: {group: 1}}]",         /* G = 1 */
        "[rope, {selfextend: {group: 8, window: 48}}]",  /* w >= n */
        "[rope, {dca: {chunk: 60, local: 4, mscale: false}}]",  /* one chunk of 56 >= n */
        "[rope, {pi: {scale: 1}}]",
        "[rope, {ntk: {scale: 1}}]",
        "[rope, {ntk: {mode: dynamic}}]",           /* not the identity: checked below to differ */
        "[rope, {streaming: {sinks: 4, recent: 47}}]",   /* S + R + 1 >= n: nothing evicted */
        "[rope, {lminfinite: {local: 48}}]",        /* the local branch covers every key */
        "[rope, {yarn: {scale: 1}}]",
    };
    size_t V = 260, n = (size_t)MB * MT * V;
    for (int mode = 0; mode < 2; mode++) {
        float *ref = model_logits(mode, "rope");
        for (size_t s = 0; s < sizeof same / sizeof *same; s++) {
            float *x = model_logits(mode, same[s]);
            double d = 0;
            for (size_t i = 0; i < n; i++)
                d = fmax(d, fabs((double)x[i] - ref[i]));
            if (strstr(same[s], "dynamic"))
                cr_expect_gt(d, 1e-3, "%s: dynamic NTK at 4x should change the logits", same[s]);
            else
                cr_expect_leq(d, 1e-5, "%s (mode %d): max |diff| to rope %g", same[s], mode, d);
            free(x);
        }
        free(ref);
    }
}

Test(extrap, windowed_methods_change_the_far_logits_only)
{
    /* causal: the first W rows see all their keys under a window of W, so
    ** their logits equal rope's; later rows differ */
    size_t V = 260;
    float *ref = model_logits(0, "rope"), *x = model_logits(0, "[rope, {window: {size: 8}}]");
    for (int t = 0; t < MT; t++) {
        double d = 0;
        for (size_t c = 0; c < V; c++)
            d = fmax(d, fabs((double)x[t * V + c] - ref[t * V + c]));
        if (t < 8)
            cr_expect_leq(d, 1e-5, "row %d sees every key: %g", t, d);
        else if (t > 9)
            cr_expect_gt(d, 1e-6, "row %d lost keys and should differ", t);
    }
    free(ref);
    free(x);
}

/* ---- CosScale ---------------------------------------------------------------- */

Test(extrap, cosscale_logits_are_scaled_cosines)
{
    /* naive path with unit q, k: logit = s·cos; the row with two keys has
    ** p = softmax(s·[cos0, cos1]) */
    float q[2 * 4] = {1, 0, 0, 0, 0.6f, 0.8f, 0, 0}, k[2 * 4] = {1, 0, 0, 0, 0, 1, 0, 0}, v[8] = {0};
    float o[8], att[4];
    struct lx_facts f = tfacts(4, 2, 1, 2);
    struct tstack st;
    tstack_make(&st, "[nope, {cosscale: {s: 5}}]", &f);
    lx_attention_forward(o, att, q, k, v, &st.spec, 2, 1, 4, 1);
    double l0 = 5 * 0.6, l1 = 5 * 0.8, p0 = exp(l0) / (exp(l0) + exp(l1));
    cr_expect_float_eq(att[2], p0, 1e-6);
    tstack_free(&st);
}

Test(extrap, qk_normalize_and_its_backward)
{
    enum { N = 3, H = 2, D = 4 };
    float x[N * 3 * H * D], y[N * 3 * H * D], g[N * 3 * H * D], norms[N * 2 * H];
    fill(x, N * 3 * H * D, 11, 1.0f), fill(g, N * 3 * H * D, 12, 1.0f);
    memcpy(y, x, sizeof x);
    lx_qk_normalize(y, norms, N, H, H, D);
    for (int r = 0; r < N; r++)
        for (int part = 0; part < 3; part++)
            for (int h = 0; h < H; h++) {
                double s = 0;
                for (int d = 0; d < D; d++)
                    s += (double)y[r * 3 * H * D + part * H * D + h * D + d] * y[r * 3 * H * D + part * H * D + h * D + d];
                if (part < 2)
                    cr_expect_float_eq(s, 1.0, 1e-6, "q/k rows are unit vectors");
                else
                    cr_expect_eq(memcmp(y + r * 3 * H * D + 2 * H * D, x + r * 3 * H * D + 2 * H * D,
                                        sizeof(float) * H * D), 0, "v untouched");
            }
    /* backward of L = Σ g·normalize(x) against central differences */
    float dx[N * 3 * H * D];
    memcpy(dx, g, sizeof g);
    lx_qk_normalize_backward(dx, y, norms, N, H, H, D);
    for (int i = 0; i < N * 3 * H * D; i++) {
        if ((i / (H * D)) % 3 == 2)
            continue;   /* v */
        double hstep = 1e-3, lp = 0, lm = 0;
        float xp[N * 3 * H * D], xm[N * 3 * H * D];
        memcpy(xp, x, sizeof x), memcpy(xm, x, sizeof x);
        xp[i] += (float)hstep, xm[i] -= (float)hstep;
        lx_qk_normalize(xp, NULL, N, H, H, D), lx_qk_normalize(xm, NULL, N, H, H, D);
        for (int j = 0; j < N * 3 * H * D; j++)
            if ((j / (H * D)) % 3 != 2) {
                lp += (double)g[j] * xp[j];
                lm += (double)g[j] * xm[j];
            }
        cr_expect_float_eq(dx[i], (lp - lm) / (2 * hstep), 2e-3, "d/dx[%d]", i);
    }
}

/* ---- PoSE ---------------------------------------------------------------------- */

Test(extrap, pose_positions_cover_the_target)
{
    struct lx_pose p = {.chunks = 3, .target = 256};
    enum { T = 32 };
    int pos[T], again[T], maxpos = 0, gaps = 0;
    for (uint32_t w = 0; w < 200; w++) {
        struct lx_rng r, r2;
        lx_rng_init(&r, 99, w, LX_RNG_DATA);
        r2 = r;
        lx_pose_positions(pos, T, &p, &r);
        lx_pose_positions(again, T, &p, &r2);
        cr_assert_eq(memcmp(pos, again, sizeof pos), 0, "same generator state, same positions");
        cr_expect_eq(pos[0], 0, "u_0 = 0: the window starts at position 0");
        int jumps = 0;
        for (int t = 1; t < T; t++) {
            cr_expect_gt(pos[t], pos[t - 1], "positions increase");
            jumps += pos[t] != pos[t - 1] + 1;
        }
        cr_expect_leq(jumps, p.chunks - 1, "at most one skip between chunks");
        cr_expect_lt(pos[T - 1], p.target, "positions stay below the target length");
        maxpos = pos[T - 1] > maxpos ? pos[T - 1] : maxpos;
        gaps += jumps > 0;
    }
    cr_expect_gt(maxpos, 200, "distances near the target are drawn (max position %d)", maxpos);
    cr_expect_gt(gaps, 150, "most windows skip");
}

/* ---- randomized positions ------------------------------------------------------ */

/* Every T-subset of [0, L) equally likely: T = 3 of L = 6 has C(6, 3) = 20
** subsets; 20,000 draws put 1,000 expected in each, and Pearson's statistic
** over the 20 cells (19 degrees of freedom) stays below 43.82, the 0.999
** quantile, for a uniform draw (the generator is keyed, so the test is fixed:
** a sampler that favoured some subsets, e.g. by sorting independent draws with
** repeats removed, lands far above it). Each draw is increasing, in range and
** the same again from the same generator state. */
Test(extrap, randpos_draws_every_sorted_subset_alike)
{
    struct lx_pose p = {.random = 1, .target = 6};
    enum { T = 3, L = 6, DRAWS = 20000 };
    int count[1 << L] = {0}, pos[T], again[T];
    for (uint32_t w = 0; w < DRAWS; w++) {
        struct lx_rng r, r2;
        lx_rng_init(&r, 5, w, LX_RNG_DATA);
        r2 = r;
        lx_pose_positions(pos, T, &p, &r);
        lx_pose_positions(again, T, &p, &r2);
        cr_assert_eq(memcmp(pos, again, sizeof pos), 0, "same generator state, same positions");
        int mask = 0;
        for (int t = 0; t < T; t++) {
            cr_assert(pos[t] >= 0 && pos[t] < L, "position %d in [0, %d)", pos[t], L);
            cr_assert(t == 0 || pos[t] > pos[t - 1], "positions increase");
            mask |= 1 << pos[t];
        }
        count[mask]++;
    }
    double chi2 = 0.0;
    int cells = 0;
    for (int mask = 0; mask < 1 << L; mask++)
        if (__builtin_popcount((unsigned)mask) == T) {
            double d = count[mask] - DRAWS / 20.0;
            chi2 += d * d / (DRAWS / 20.0);
            cells++;
        }
    cr_expect_eq(cells, 20);
    cr_expect_lt(chi2, 43.82, "Pearson's statistic %.2f over the 20 subsets", chi2);
}

/* L = T leaves one sorted subset, 0 .. T−1; a long draw is increasing and
** spread over [0, L): its mean position near (L − 1)/2 (the standard deviation
** of the mean of T ids drawn without replacement is below L/sqrt(12 T), 5 of
** them allowed). */
Test(extrap, randpos_at_its_own_length_is_the_identity)
{
    enum { T = 512 };
    int pos[T];
    struct lx_rng r;
    lx_rng_init(&r, 7, 0, LX_RNG_DATA);
    lx_pose_positions(pos, T, &(struct lx_pose){.random = 1, .target = T}, &r);
    for (int t = 0; t < T; t++)
        cr_assert_eq(pos[t], t);
    long L = 1L << 30;
    lx_pose_positions(pos, T, &(struct lx_pose){.random = 1, .target = L}, &r);
    double mean = 0.0;
    for (int t = 0; t < T; t++) {
        cr_assert(pos[t] >= 0 && pos[t] < L && (t == 0 || pos[t] > pos[t - 1]));
        mean += pos[t] / (double)T;
    }
    cr_expect_lt(fabs(mean - (L - 1) / 2.0), 5.0 * L / sqrt(12.0 * T), "mean position %.0f", mean);
}

/* Evaluation draws too: the draw for (T, L) is sorted, in range, the same
** every time, the identity at T = L, and another for another T; a pass of a
** randpos stack is bit for bit the plain stack's pass at those positions
** (portable numerics), and not its pass at 0 .. T−1. */
Test(extrap, randpos_evaluates_at_one_draw_per_length)
{
    enum { T = 24, L = 96, V = 260 };
    int p[T], again[T], other[T - 1], id[T];
    lx_randpos_eval(p, T, L);
    lx_randpos_eval(again, T, L);
    lx_randpos_eval(other, T - 1, L);
    lx_randpos_eval(id, T, T);
    cr_expect_eq(memcmp(p, again, sizeof p), 0, "one draw per (T, L)");
    cr_expect_neq(memcmp(p, other, sizeof other), 0, "another length, another draw");
    for (int t = 0; t < T; t++) {
        cr_expect(p[t] >= 0 && p[t] < L && (t == 0 || p[t] > p[t - 1]), "sorted, in [0, L)");
        cr_expect_eq(id[t], t);
    }
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 1, a.d_model = 16, a.heads = 2, a.d_head = 8, a.d_mlp = 32;
    lx_params_finish(&lx_arch_schema, &a);
    struct lx_model m;
    lx_model_init(&m, &a, 5);
    struct lx_facts f = tfacts(8, 16, 2, T);
    struct tstack rp, plain;
    tstack_make(&rp, "[rope, {randpos: {target: 96}}]", &f);
    tstack_make(&plain, "rope", &f);
    int tok[2 * T], pos[2 * T];
    for (int t = 0; t < 2 * T; t++)
        tok[t] = (t * 37 + 11) % V, pos[t] = p[t % T];
    struct lx_acts x;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_acts_alloc(&x, &a, 2, T, 0, &err), LX_OK, "%s", err.msg);
    float *got = malloc(sizeof(float) * 2 * T * V), *want = malloc(sizeof(float) * 2 * T * V);
    lx_model_forward(&m, &rp.spec, tok, NULL, &x);
    cr_expect_null(x.pos, "the drawn positions are the pass's own");
    memcpy(got, x.logits, sizeof(float) * 2 * T * V);
    x.pos = pos;
    lx_model_forward(&m, &plain.spec, tok, NULL, &x);
    memcpy(want, x.logits, sizeof(float) * 2 * T * V);
    cr_expect_eq(memcmp(got, want, sizeof(float) * 2 * T * V), 0, "the draw, in both windows");
    x.pos = NULL;
    lx_model_forward(&m, &plain.spec, tok, NULL, &x);
    cr_expect_neq(memcmp(got, x.logits, sizeof(float) * 2 * T * V), 0, "not the plain positions");
    free(got), free(want);
    lx_acts_release(&x);
    lx_model_release(&m);
    tstack_free(&rp);
    tstack_free(&plain);
}

/* The trainer feeds the drawn ids to the model: trained with randpos or
** PoSE at target = T (the identity draw; PoSE's skips all 0) a model ends bit
** for bit where plain RoPE's does (portable numerics, same key); at 16 T it
** ends elsewhere. */
static int train_tiny_rc(const char *stack, long target, struct lx_model *m, struct lx_error *err)
{
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 1, a.d_model = 16, a.heads = 2, a.d_head = 8, a.d_mlp = 32;
    lx_params_finish(&lx_arch_schema, &a);
    lx_model_init(m, &a, 3);
    struct lx_train_cfg cfg;
    lx_params_defaults(&lx_train_schema, &cfg);
    cfg.length = 32, cfg.batch = 2, cfg.steps = 4, cfg.warmup = 1, cfg.eval_every = 4, cfg.eval_windows = 1;
    lx_params_finish(&lx_train_schema, &cfg);
    const struct lx_corpus_tokens *corpus;
    cr_assert_eq(lx_corpus_tokens(&corpus, "train", &lx_byte_tokenizer, err), LX_OK, "%s", err->msg);
    struct tstack st;
    struct lx_facts f = tfacts(8, 32, 2, 32);
    f.training = 1;
    tstack_make(&st, stack, &f);
    if (target)
        st.spec.pose.target = target;   /* past the plan's check */
    struct lx_train_report rep;
    int rc = lx_train(m, &st.spec, &cfg, 11, corpus, &lx_byte_tokenizer, NULL, 0, NULL, NULL, NULL, &rep, err);
    tstack_free(&st);
    return rc;
}

static float *train_tiny(const char *stack, struct lx_model *m)
{
    struct lx_error err = {{0}};
    cr_assert_eq(train_tiny_rc(stack, 0, m, &err), LX_OK, "%s", err.msg);
    return m->w;
}

Test(extrap, pose_and_randpos_ids_reach_the_trained_model, .timeout = 60)
{
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    struct lx_model plain;
    float *w0 = train_tiny("rope", &plain);
    const char *kind[2] = {"randpos", "pose"};
    for (int k = 0; k < 2; k++) {
        char s1[64], s2[64];
        snprintf(s1, sizeof s1, "[rope, {%s: {target: 32}}]", kind[k]);
        snprintf(s2, sizeof s2, "[rope, {%s: {target: 512}}]", kind[k]);
        struct lx_model same, spread;
        float *w1 = train_tiny(s1, &same), *w2 = train_tiny(s2, &spread);
        cr_expect_eq(memcmp(w0, w1, sizeof(float) * plain.n_params), 0, "%s, target = T: the plain positions",
                     kind[k]);
        cr_expect_neq(memcmp(w0, w2, sizeof(float) * plain.n_params), 0, "%s, target = 16 T: other positions",
                      kind[k]);
        lx_model_release(&same);
        lx_model_release(&spread);
    }
    lx_model_release(&plain);
}

/* A target below the window (which the plan refuses) is refused by the
** trainer too: no draw fits, and PoSE's skips would run backwards. */
Test(extrap, training_positions_need_a_target_past_the_window, .timeout = 60)
{
    const char *stack[2] = {"[rope, pose]", "[rope, randpos]"};
    for (int k = 0; k < 2; k++) {
        struct lx_model m;
        struct lx_error err = {{0}};
        cr_expect_eq(train_tiny_rc(stack[k], 31, &m, &err), LX_EINVAL, "%s", stack[k]);
        cr_expect(strstr(err.msg, "target 31 is shorter than the 32-token training windows") != NULL, "%s", err.msg);
        lx_model_release(&m);
    }
}

/* ---- t5align ---------------------------------------------------------------------- */

/* A probe with fixed statistics: (pmax, entropy, sigma) at the training
** length, and at the evaluation length as functions of τ. */
struct fake {
    struct lx_probe_stats tr;
    double sigma_ex, pmax_ex;
};

static int fake_stats(void *ctx, int at_train, double tau, int layer0, struct lx_probe_stats *out,
                      struct lx_error *err)
{
    const struct fake *fk = ctx;
    (void)layer0, (void)err;
    if (at_train) {
        *out = fk->tr;
    } else {    /* entropy falls and pmax rises as τ falls */
        out->entropy = 5.0 - 1.0 / (tau * tau);
        out->pmax = fk->pmax_ex / tau;
        out->sigma = fk->sigma_ex / tau;
    }
    return LX_OK;
}

static double calibrate_with(const char *stack, struct fake *fk, long L_tr, long L_ex)
{
    struct lx_facts f = tfacts(64, L_tr, 1, L_ex);
    struct tstack st;
    tstack_make(&st, stack, &f);
    struct lx_probe probe = {.ctx = fk, .stats = fake_stats};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_spec_calibrate(&st.spec, &probe, &err), LX_OK, "%s", err.msg);
    double tau = st.spec.temperature;
    tstack_free(&st);
    return tau;
}

Test(t5align, closed_forms_match_the_paper_goldens)
{
    /* docs/methods.md#t5align goldens: Prop. 2 with σ_tr = σ_ex = 1, L_tr = 512 */
    struct fake fk = {.tr = {.pmax = 0.3, .entropy = 4.0, .sigma = 1.0}, .sigma_ex = 1.0, .pmax_ex = 0.1};
    cr_expect_float_eq(calibrate_with("{t5align: {closed_form: prop2}}", &fk, 512, 2048), 0.514849, 1e-6);
    cr_expect_float_eq(calibrate_with("{t5align: {closed_form: prop2}}", &fk, 512, 8192), 0.390876, 1e-6);
    /* Prop. 1: L_tr = 512, L_ex = 4096, P_max^tr = 0.3, σ = 1 → 0.673637 */
    cr_expect_float_eq(calibrate_with("{t5align: {closed_form: prop1}}", &fk, 512, 4096), 0.673637, 1e-6);
    /* at or below the training length τ stays 1 */
    cr_expect_eq(calibrate_with("{t5align: {closed_form: prop2}}", &fk, 512, 512), 1.0);
    cr_expect_eq(calibrate_with("t5align", &fk, 512, 256), 1.0);
}

Test(t5align, grid_search_picks_the_closest_temperature)
{
    /* entropy at L_ex is 5 − 1/τ²; the training entropy 5 − 1/0.7² = 2.959 is
    ** met exactly at τ = 0.7, a grid point */
    struct fake fk = {.tr = {.entropy = 5.0 - 1.0 / 0.49, .pmax = 0.2}, .pmax_ex = 0.15};
    cr_expect_float_eq(calibrate_with("{t5align: {mode: entropy}}", &fk, 64, 1024), 0.7, 1e-9);
    /* pmax at L_ex is 0.15/τ: 0.2 is met at τ = 0.75 */
    cr_expect_float_eq(calibrate_with("{t5align: {mode: pmax}}", &fk, 64, 1024), 0.75, 1e-9);
    /* a target out of reach clamps to the grid's end */
    fk.tr.pmax = 0.9;
    cr_expect_float_eq(calibrate_with("{t5align: {mode: pmax}}", &fk, 64, 1024), 0.5, 1e-9);
    fk.tr.pmax = 0.9;
    cr_expect_float_eq(calibrate_with("{t5align: {mode: pmax, tau_min: 0.2, step: 0.1}}", &fk, 64, 1024), 0.2,
                       1e-9);
}

/* The grid's probes at L_ex, counted (each is a forward pass of the model at that length). */
static int probes_at_ex;

static int counting_stats(void *ctx, int at_train, double tau, int layer0, struct lx_probe_stats *out,
                          struct lx_error *err)
{
    probes_at_ex += !at_train;
    return fake_stats(ctx, at_train, tau, layer0, out, err);
}

/* Every grid point is a forward pass at L_ex: a step of 1e-17 meant 5·10^16 of them (the run hung), so step is
** at least 0.001, refused at the value with the YAML place and a hint; at 0.001 the grid from 1 down to
** tau_min 0.5 has ⌊0.5/0.001⌋ + 1 = 501 points, each probed once. */
Test(t5align, grid_step_is_bounded_below)
{
    struct lx_facts f = tfacts(64, 64, 1, 1024);
    struct tstack st;
    struct lx_error err = {""};
    cr_expect_lt(tstack_try(&st, "{t5align: {step: 1e-17}}", &f, &err), 0, "step 1e-17 compiled");
    cr_expect(strstr(err.msg, "m.yaml:1:") && strstr(err.msg, "'step' = 1e-17 is out of bounds [0.001, 1]") &&
              strstr(err.msg, "hint: "), "%s", err.msg);
    tstack_free(&st);
    tstack_refused("{t5align: {step: 0.0009}}", f, "out of bounds [0.001, 1]");
    struct fake fk = {.tr = {.entropy = 5.0 - 1.0 / 0.49, .pmax = 0.2}, .pmax_ex = 0.15};
    tstack_make(&st, "{t5align: {mode: entropy, step: 0.001}}", &f);
    struct lx_probe probe = {.ctx = &fk, .stats = counting_stats};
    probes_at_ex = 0;
    cr_assert_eq(lx_spec_calibrate(&st.spec, &probe, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(probes_at_ex, 501);
    cr_expect_float_eq(st.spec.temperature, 0.7, 1e-9, "5 - 1/tau^2 meets the training entropy at 0.7");
    tstack_free(&st);
}

/* On IID N(0, 1) logits, entropy alignment (Algorithm 1) should land near
** Proposition 2, τ = 1/sqrt(1 + 2 ln(L_ex/L_tr)) (σ = 1), and the measured
** closed form on it. */
Test(t5align, gaussian_algorithm1_lands_near_proposition2, .timeout = 60)
{
    const char *yaml = "name: t5g\nseed: 3\n"
                       "methods: [{t5align: {mode: entropy}}, {t5align: {closed_form: prop2}}]\n"
                       "tasks: [{gaussian: {samples: 400, train_len: 64}}]\nlengths: [128, 256]\n";
    struct lx_grid g;
    struct lx_plan plan;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_grid_load_text(&g, yaml, "t5g.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_plan_build(&plan, &g, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(plan.n_cells, 4);
    for (int i = 0; i < plan.n_cells; i++) {
        const struct lx_cell *c = &plan.cells[i];
        struct lx_result res = {0};
        cr_assert_eq(lx_cell_run(&plan, c, NULL, NULL, &res, &err), LX_OK, "%s", err.msg);
        const struct lx_metric *tau = lx_result_find(&res, "tau");
        cr_assert_not_null(tau, "the calibrated temperature is stored as 'tau'");
        double want = 1.0 / sqrt(1.0 + 2.0 * log((double)c->length / 64.0));
        double tol = c->stack == 0 ? 0.05 : 0.02;   /* one grid step; the measured closed form */
        cr_expect_leq(fabs(tau->value - want), tol, "%s at %ld: tau %.4f, Proposition 2 %.4f",
                      g.stacks[c->stack].canon, c->length, tau->value, want);
        cr_log_info("%s at %ld: tau %.4f (Prop. 2: %.4f)", g.stacks[c->stack].canon, c->length, tau->value, want);
        lx_result_release(&res);
    }
    lx_plan_release(&plan);
    lx_grid_release(&g);
}
