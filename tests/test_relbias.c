/*
** tests/test_relbias.c - the learned relative-position biases: T5's buckets
** (methods/t5bias.c) and KERPLE's log and power kernels (methods/kerple.c).
**
** The buckets, the decoder's and the encoder's, against transformers'
** _relative_position_bucket run in torch (tests/ref/t5bias_ref.py writes the
** first distance of every bucket, of each side for the encoder's) and against
** values worked by hand; one biased head, causal and bidirectional (naive,
** head path and tiled forward) and the bias's gradient (tiled and
** materialised backward) against torch's float64 autograd of the same
** inputs; a whole model's rel_bias gradient, causal and masked LM, summed over
** layers and windows, against finite differences of its loss; the stacks
** refused; a model trained with it through `lenx run`, scored by `lenx
** score`, and a masked LM trained and scored. KERPLE's head and its (p, a) gradients, both kernels,
** against torch autograd of chijames/KERPLE's rules (tests/ref/kerple_ref.py),
** at p, a inside and outside the code's clamps; its draw, its clamps through an
** optimizer step; a model's gradient against finite differences; a model
** scored only with the kernel it learned.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/model/model.h"
#include "harness/engine/model/train.h"
#include "tests/shell.h"
#include "tests/stack.h"

/* ---- buckets ---------------------------------------------------------------------- */

static int bucket(int nb, long maxd, double t)
{
    struct lx_relbias r = {.method = "t5bias", .buckets = nb, .max_distance = maxd};
    return lx_relbias_bucket(&r, t);
}

/* The encoder's bucket of δ = i − j (negative: the key after the query). */
static int bbucket(int nb, long maxd, double t)
{
    struct lx_relbias r = {.method = "t5bias", .buckets = nb, .max_distance = maxd, .bidirectional = 1};
    return lx_relbias_bucket(&r, t);
}

Test(t5bias, buckets_by_hand)
{
    /* nb 32, max 128: 16 exact, then 16 + ⌊ln(t/16) / ln 8 · 16⌋ */
    cr_expect_eq(bucket(32, 128, 0), 0);
    cr_expect_eq(bucket(32, 128, 15), 15);
    cr_expect_eq(bucket(32, 128, 16), 16);      /* ln 1 = 0 */
    cr_expect_eq(bucket(32, 128, 20), 17);      /* 16·ln 1.25 / ln 8 = 1.72 */
    cr_expect_eq(bucket(32, 128, 64), 26);      /* 16·ln 4 / ln 8 = 10.67 */
    cr_expect_eq(bucket(32, 128, 113), 31);     /* 16·ln 7.0625 / ln 8 = 15.04 */
    cr_expect_eq(bucket(32, 128, 112), 30);     /* 16·ln 7 / ln 8 = 14.97 */
    cr_expect_eq(bucket(32, 128, 1e9), 31);     /* far past max_distance: the last bucket */
    /* nb 8, max 12: 4 exact, then 4 + ⌊ln(t/4) / ln 3 · 4⌋ */
    cr_expect_eq(bucket(8, 12, 5), 4);          /* 4·ln 1.25 / ln 3 = 0.81 */
    cr_expect_eq(bucket(8, 12, 6), 5);          /* 4·ln 1.5 / ln 3 = 1.48 */
    cr_expect_eq(bucket(8, 12, 9), 6);          /* 4·ln 2.25 / ln 3 = 2.95 */
    cr_expect_eq(bucket(8, 12, 10), 7);         /* 4·ln 2.5 / ln 3 = 3.34 */
    /* an effective distance after a position map may be fractional: floored, either sign */
    cr_expect_eq(bucket(32, 128, 16.9), 16);
    cr_expect_eq(bucket(32, 128, 18.9), 16);    /* 16·ln(18/16) / ln 8 = 0.91 */
    cr_expect_eq(bucket(32, 128, -20), 17);
    /* the encoder's (nb 32, max 128): 16 a side, 8 exact, then 8 + ⌊ln(t/8) / ln 16 · 8⌋, keys after
    ** the query 16 up; the reference sheet's golden table (docs/methods.md#t5bias) */
    static const int before[][2] = {{0, 0}, {1, 1}, {15, 9}, {16, 10}, {20, 10}, {24, 11}, {32, 12}, {48, 13},
                                    {64, 14}, {96, 15}, {127, 15}, {100000, 15}};
    static const int after[][2] = {{1, 17}, {15, 25}, {16, 26}, {20, 26}, {24, 27}, {32, 28}, {48, 29}, {64, 30},
                                   {96, 31}, {127, 31}, {100000, 31}};
    for (size_t i = 0; i < sizeof before / sizeof *before; i++)
        cr_expect_eq(bbucket(32, 128, before[i][0]), before[i][1], "before, distance %d", before[i][0]);
    for (size_t i = 0; i < sizeof after / sizeof *after; i++)
        cr_expect_eq(bbucket(32, 128, -after[i][0]), after[i][1], "after, distance %d", after[i][0]);
    cr_expect_eq(bbucket(32, 128, 64), 14, "64/8 = 8 = 16^(3/4): ln 8 / ln 16 · 8 = 6.0 exactly in float32");
}

/* The decoder's buckets (first lines) and the encoder's, both sides (bfirst). */
Test(t5bias, buckets_match_transformers_in_torch)
{
    char path[512], line[256];
    snprintf(path, sizeof path, "%s/tests/ref/t5bias_ref.csv", getenv("LENX_ROOT"));
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "%s", path);
    int n = 0, nbi = 0;
    while (fgets(line, sizeof line, fp)) {
        int nb, b, side;
        long maxd, first;
        if (sscanf(line, "first,%d,%ld,%d,%ld", &nb, &maxd, &b, &first) == 4) {
            cr_expect_eq(bucket(nb, maxd, (double)first), b, "nb %d max %ld: distance %ld", nb, maxd, first);
            if (first > 0)
                cr_expect_eq(bucket(nb, maxd, (double)first - 1), b - 1, "nb %d max %ld: distance %ld", nb, maxd,
                             first - 1);
            n++;
        } else if (sscanf(line, "bfirst,%d,%ld,%d,%d,%ld", &nb, &maxd, &side, &b, &first) == 5) {
            double sign = side ? -1.0 : 1.0;    /* after the query: δ = i − j < 0 */
            cr_expect_eq(bbucket(nb, maxd, sign * (double)first), b, "encoder nb %d max %ld side %d: distance %ld",
                         nb, maxd, side, first);
            if (first > side)
                cr_expect_lt(bbucket(nb, maxd, sign * (double)(first - 1)), b, "encoder nb %d max %ld side %d: "
                             "distance %ld", nb, maxd, side, first - 1);
            nbi++;
        }
    }
    fclose(fp);
    cr_expect_eq(n, 32 + 16 + 8 + 64 + 6, "buckets read");
    cr_expect_eq(nbi, 110, "encoder buckets read");
}

/* ---- one head against torch ------------------------------------------------------- */

enum { RT = 11, RD = 4, RNB = 8 };

/* The script's inputs, as float32. */
static void ref_inputs(float *q, float *k, float *v, float *w)
{
    for (int i = 0; i < RT; i++)
        for (int d = 0; d < RD; d++) {
            q[i * RD + d] = (float)sin(0.37 * i + 0.11 * d);
            k[i * RD + d] = (float)cos(0.23 * i - 0.19 * d);
            v[i * RD + d] = (float)sin(0.5 * i * d + 0.3);
            w[i * RD + d] = (float)cos(0.7 * i + 0.9 * d);
        }
}

/* The script's outputs: o (RT, RD) and the bias gradient (RNB), of the
** causal head or ("b" rows) the bidirectional one. */
static void ref_outputs(double *o, double *db, int bidirectional)
{
    char path[512], line[256], fo[32], fd[32];
    snprintf(path, sizeof path, "%s/tests/ref/t5bias_ref.csv", getenv("LENX_ROOT"));
    snprintf(fo, sizeof fo, "%sout,%%d,%%d,-,%%lf", bidirectional ? "b" : "");
    snprintf(fd, sizeof fd, "%sdbias,%%d,-,-,%%lf", bidirectional ? "b" : "");
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "%s", path);
    int no = 0, nd = 0, i, c;
    double x;
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, fo, &i, &c, &x) == 3)
            o[i * RD + c] = x, no++;
        else if (sscanf(line, fd, &i, &x) == 2)
            db[i] = x, nd++;
    fclose(fp);
    cr_assert_eq(no, RT * RD);
    cr_assert_eq(nd, RNB);
}

static double max_rel(const double *ref, const float *got32, const double *got64, int n)
{
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        num = fmax(num, fabs((got32 ? got32[i] : got64[i]) - ref[i]));
        den = fmax(den, fabs(ref[i]));
    }
    return num / den;
}

/* One head, causal or bidirectional (the encoder's buckets: the tables and
** the per-distance gradient then run over δ in (−T, T)), on every path. */
static void one_head(int bidirectional)
{
    struct lx_facts f = tfacts(RD, 6, 1, RT);
    f.bidirectional = bidirectional;
    struct tstack st;
    tstack_make(&st, "{t5bias: {buckets: 8, max_distance: 12}}", &f);   /* the test table's head 0 */
    cr_assert_eq(st.spec.signed_dist, bidirectional);
    float q[RT * RD], k[RT * RD], v[RT * RD], w[RT * RD], o[RT * RD], att[RT * RT];
    double want_o[RT * RD], want_db[RNB];
    ref_inputs(q, k, v, w);
    ref_outputs(want_o, want_db, bidirectional);
    lx_attention_forward(o, att, q, k, v, &st.spec, RT, 1, RD, !bidirectional);
    cr_expect_leq(max_rel(want_o, o, NULL, RT * RD), 1e-6, "naive forward");

    struct lx_attn_shape sh = {.T = RT, .H = 1, .KV = 1, .D = RD, .ld = RD, .ldo = RD, .causal = !bidirectional};
    /* the materialised head path, forward and backward */
    float P[RT * RT], dP[RT * RT], oh[RT * RD], g[3][RT * RD] = {{0}};
    double tab[4 * RT], dist[2 * RT] = {0}, db[RNB] = {0};
    cr_assert_leq(lx_spec_tab_len(&st.spec, RT), 2 * RT);
    struct lx_attn_ws hw = {.tab = tab, .mult = 1.0f};
    lx_attn_head_forward(oh, P, q, k, v, &st.spec, 0, &sh, &hw);
    cr_expect_leq(max_rel(want_o, oh, NULL, RT * RD), 1e-6, "head path forward");
    lx_attn_head_backward(g[0], g[1], g[2], w, P, dP, q, k, v, &st.spec, 0, &sh, tab, 1.0f, dist);
    st.spec.rel.pull(&st.spec.rel, st.spec.facts.rel_bias, dist, RT, db);     /* per distance -> per bucket */
    cr_expect_leq(max_rel(want_db, NULL, db, RNB), 1e-5, "materialised bias gradient");

    /* the tiled pair on tiles of 3 queries × 2 keys, on both threads */
    float ot[RT * RD], lse[RT], fs[64 * 8], bs[64 * 8], gt[3][RT * RD] = {{0}};
    double ttab[4 * RT], distt[2 * RT] = {0}, dbt[RNB] = {0};
    cr_assert_leq((size_t)lx_tile_tab_rows(&st.spec) * lx_spec_tab_len(&st.spec, RT), sizeof ttab / sizeof *ttab);
    struct lx_tile_ws fw = {.bq = 3, .bk = 2, .n_thr = 8, .scratch = fs, .tab = ttab, .lse = lse};
    struct lx_tile_bwd_ws bw = {.bq = 3, .bk = 2, .n_thr = 8, .scratch = bs, .tab = ttab, .dist_grad = distt};
    omp_set_num_threads(2);
    lx_attn_tiled_forward(ot, q, k, v, &st.spec, NULL, &sh, &fw);
    cr_expect_leq(max_rel(want_o, ot, NULL, RT * RD), 1e-6, "tiled forward");
    lx_attn_tiled_backward(gt[0], gt[1], gt[2], w, ot, lse, q, k, v, &st.spec, NULL, &sh, &bw);
    omp_set_num_threads(1);
    st.spec.rel.pull(&st.spec.rel, st.spec.facts.rel_bias, distt, RT, dbt);
    cr_expect_leq(max_rel(want_db, NULL, dbt, RNB), 1e-5, "tiled bias gradient");
    tstack_free(&st);
}

Test(t5bias, one_head_and_its_bias_gradient_match_torch)
{
    one_head(0);
}

Test(t5bias, encoder_head_and_its_bias_gradient_match_torch)
{
    one_head(1);
}

/* ---- a whole model: rel_bias's gradient over layers and windows ------------------- */

enum { MB = 2, MT = 40, MV = 30, MNB = 6 };

static double model_loss(const struct lx_model *m, const struct lx_spec *spec, const int *tok, const int *tgt,
                         struct lx_weights *g)
{
    struct lx_acts a;
    struct lx_error err = {""};
    cr_assert_eq(lx_acts_alloc(&a, &m->arch, MB, MT, LX_ACTS_TRAIN_TILED, &err), LX_OK, "%s", err.msg);
    double loss = lx_model_forward(m, spec, tok, tgt, &a);
    if (g)
        lx_model_backward(m, spec, tok, tgt, &a, g);
    lx_acts_release(&a);
    return loss;
}

/* The gradient of a model's learned bias (stack `yaml`, values set by
** value(k)) against central differences of its loss, every value; causal,
** or a masked LM's bidirectional attention (mlm). */
static void model_fd(const char *yaml, double (*value)(int k), int mlm)
{
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    struct lx_facts f = tfacts(4, MT, 3, MT);
    f.bidirectional = mlm;
    struct tstack st;
    tstack_make(&st, yaml, &f);
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 16, a.heads = 3, a.d_head = 4, a.d_mlp = 24, a.vocab = MV, a.init_std = 0.4;
    a.mode = mlm ? LX_MODEL_MLM : LX_MODEL_CAUSAL;
    lx_arch_learn_rel(&a, &st.spec.rel);
    int nv = (int)(3 * lx_arch_rel_values(&a));
    struct lx_model m;
    lx_model_init(&m, &a, 7);
    cr_assert_not_null(m.v.rel_bias);
    for (int k = 0; k < nv; k++)
        m.v.rel_bias[k] = (float)value(k);
    int tok[MB * MT], tgt[MB * MT];
    for (int i = 0; i < MB * MT; i++)
        tok[i] = (i * 7 + 3) % MV, tgt[i] = (i * 11 + 5) % MV;
    float *gb = calloc(m.n_params, sizeof *gb);
    struct lx_weights g;
    lx_weights_map(&g, &a, gb);
    model_loss(&m, &st.spec, tok, tgt, &g);
    for (int k = 0; k < nv; k++) {
        float keep = m.v.rel_bias[k], h = 2e-2f;
        m.v.rel_bias[k] = keep + h;
        double up = model_loss(&m, &st.spec, tok, tgt, NULL);
        m.v.rel_bias[k] = keep - h;
        double dn = model_loss(&m, &st.spec, tok, tgt, NULL);
        m.v.rel_bias[k] = keep;
        double num = (up - dn) / (2.0 * h);
        cr_expect(fabs(num - g.rel_bias[k]) <= 2e-4 + 2e-2 * fabs(num), "%s: value %d of head %d: backward %g, "
                  "numeric %g", yaml, k % (nv / 3), k / (nv / 3), g.rel_bias[k], num);
    }
    lx_weights_unmap(&g);
    free(gb);
    lx_model_release(&m);
    tstack_free(&st);
    lx_numerics_set(LX_NUMERICS_FAST);
}

static double t5_value(int k)
{
    return 0.5 * sin(0.9 * k + 0.4);    /* from 0 (the init) to a table with every bucket its own */
}

static double kerple_value(int k)
{
    return 0.3 + 0.25 * (k % 3) + (k % 2 ? 0.0 : 0.9);     /* p in [1.2, 1.7], a in [0.3, 0.8]: off the clamp */
}

Test(t5bias, model_gradient_matches_finite_differences, .timeout = 60)
{
    model_fd("{t5bias: {buckets: 6, max_distance: 9}}", t5_value, 0);
    model_fd("{t5bias: {buckets: 10, max_distance: 9}}", t5_value, 1);     /* the encoder's: 5 a side */
}

Test(kerple, model_gradient_matches_finite_differences, .timeout = 60)
{
    model_fd("kerple", kerple_value, 0);
    model_fd("{kerple: {kernel: power}}", kerple_value, 0);
    model_fd("kerple", kerple_value, 1);        /* one kernel of |δ| both ways */
}

/* ---- KERPLE: one head against torch, the draw and the clamp ----------------------- */

Test(kerple, one_head_and_its_gradients_match_torch)
{
    char path[512], line[256];
    snprintf(path, sizeof path, "%s/tests/ref/kerple_ref.csv", getenv("LENX_ROOT"));
    /* cases 0, 1 the log kernel, 2-4 the power kernel; 1, 3, 4 start a value outside a clamp */
    static const float pa[5][2] = {{1.3f, 0.6f}, {0.7f, 0.001f}, {1.3f, 0.6f}, {2.6f, 0.004f}, {0.003f, 0.9f}};
    for (int c = 0; c < 5; c++) {
        const char *yaml = c < 2 ? "kerple" : "{kerple: {kernel: power}}";
        double want_o[RT * RD], want_d[2] = {0}, x;
        int cc, i, d, n = 0;
        char kind[8];
        FILE *fp = fopen(path, "r");
        cr_assert_not_null(fp, "%s", path);
        while (fgets(line, sizeof line, fp))
            if (sscanf(line, "%d,out,%d,%d,%lf", &cc, &i, &d, &x) == 4 && cc == c)
                want_o[i * RD + d] = x, n++;
            else if (sscanf(line, "%d,%2s,-,-,%lf", &cc, kind, &x) == 3 && cc == c)
                want_d[kind[1] == 'a'] = x, n++;
        fclose(fp);
        cr_assert_eq(n, RT * RD + 2);
        struct lx_facts f = tfacts(RD, 6, 1, RT);
        f.rel_bias = pa[c];
        struct tstack st;
        tstack_make(&st, yaml, &f);
        float q[RT * RD], k[RT * RD], v[RT * RD], w[RT * RD], o[RT * RD], att[RT * RT], P[RT * RT], dP[RT * RT];
        float g[3][RT * RD] = {{0}}, lse[RT], fs[64 * 8], bs[64 * 8];
        double tab[4 * RT], dist[RT] = {0}, dt[RT] = {0}, dh[2] = {0}, dti[2] = {0};
        ref_inputs(q, k, v, w);
        lx_attention_forward(o, att, q, k, v, &st.spec, RT, 1, RD, 1);
        cr_expect_leq(max_rel(want_o, o, NULL, RT * RD), 1e-6, "case %d: naive forward", c);
        struct lx_attn_shape sh = {.T = RT, .H = 1, .KV = 1, .D = RD, .ld = RD, .ldo = RD, .causal = 1};
        struct lx_attn_ws hw = {.tab = tab, .mult = 1.0f};
        lx_attn_head_forward(o, P, q, k, v, &st.spec, 0, &sh, &hw);
        cr_expect_leq(max_rel(want_o, o, NULL, RT * RD), 1e-6, "case %d: head path forward", c);
        lx_attn_head_backward(g[0], g[1], g[2], w, P, dP, q, k, v, &st.spec, 0, &sh, tab, 1.0f, dist);
        st.spec.rel.pull(&st.spec.rel, pa[c], dist, RT, dh);
        cr_expect_leq(max_rel(want_d, NULL, dh, 2), 1e-5, "case %d: materialised dp, da %g %g", c, dh[0], dh[1]);
        struct lx_tile_ws fw = {.bq = 3, .bk = 2, .n_thr = 8, .scratch = fs, .tab = tab, .lse = lse};
        struct lx_tile_bwd_ws bw = {.bq = 3, .bk = 2, .n_thr = 8, .scratch = bs, .tab = tab, .dist_grad = dt};
        lx_attn_tiled_forward(o, q, k, v, &st.spec, NULL, &sh, &fw);
        cr_expect_leq(max_rel(want_o, o, NULL, RT * RD), 1e-6, "case %d: tiled forward", c);
        lx_attn_tiled_backward(g[0], g[1], g[2], w, o, lse, q, k, v, &st.spec, NULL, &sh, &bw);
        st.spec.rel.pull(&st.spec.rel, pa[c], dt, RT, dti);
        cr_expect_leq(max_rel(want_d, NULL, dti, 2), 1e-5, "case %d: tiled dp, da %g %g", c, dti[0], dti[1]);
        tstack_free(&st);
    }
}

/* A model's (p, a) drawn per head within the clamps; then one step whose
** gradient pushes every p by the sign of gp (and every a down) far past
** them leaves p at want_p and a at the floor. */
static void drawn_and_clamped(int kernel, float gp, float want_p)
{
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 1, a.d_model = 16, a.heads = 8, a.d_head = 4, a.d_mlp = 24, a.vocab = MV, a.kerple = 1;
    a.kerple_kernel = kernel;
    struct lx_model m;
    lx_model_init(&m, &a, 3);
    for (int h = 0; h < 8; h++) {     /* p = 2u, a = u: in (0, 2] and (0, 1], at least the clamp */
        cr_expect(m.v.rel_bias[2 * h] >= 0.01f && m.v.rel_bias[2 * h] <= 2.0f, "p %g", m.v.rel_bias[2 * h]);
        cr_expect(m.v.rel_bias[2 * h + 1] >= 0.01f && m.v.rel_bias[2 * h + 1] <= 1.0f, "a %g",
                  m.v.rel_bias[2 * h + 1]);
        cr_expect(h == 0 || m.v.rel_bias[2 * h] != m.v.rel_bias[0], "head %d drew head 0's p", h);
    }
    struct lx_optim o;
    lx_optim_init(&o, &m);
    lx_optim_zero_grad(&o);
    for (int k = 0; k < 16; k++)
        o.g.rel_bias[k] = k % 2 ? 1e3f : gp;
    struct lx_train_cfg c;
    lx_params_defaults(&lx_train_schema, &c);
    c.lr = 100.0, c.warmup = 0;
    lx_optim_step(&o, &m, &c, 0);
    for (int k = 0; k < 16; k++)    /* want_p 0: no ceiling, p went far past 2 */
        cr_expect(want_p == 0.0f && k % 2 == 0 ? m.v.rel_bias[k] > 50.0f
                                               : m.v.rel_bias[k] == (k % 2 ? 0.01f : want_p),
                  "kernel %d, value %d: %g", kernel, k, m.v.rel_bias[k]);
    lx_optim_release(&o);
    lx_model_release(&m);
}

Test(kerple, drawn_per_head_and_clamped_by_every_step)
{
    drawn_and_clamped(LX_KERPLE_LOG, 1e3f, 0.01f);
    drawn_and_clamped(LX_KERPLE_POWER, 1e3f, 0.01f);
    drawn_and_clamped(LX_KERPLE_POWER, -1e3f, 2.0f);   /* the power kernel's p at most 2 */
    drawn_and_clamped(LX_KERPLE_LOG, -1e3f, 0.0f);     /* the log kernel's p has no ceiling */
}

/* ---- what is refused -------------------------------------------------------------- */

Test(t5bias, stacks_refused_with_a_reason)
{
    struct lx_facts f = tfacts(16, 64, 4, 128);
    tstack_refused("[t5bias, {logn: {mode: su}}]", f, "must be the stack's last logit transform");
    tstack_refused("[rope, t5bias]", f, "position scheme");
    tstack_refused("[t5bias, alibi]", f, "position scheme");
    tstack_refused("{t5bias: {buckets: 32, max_distance: 16}}", f, "must exceed buckets/2");
    tstack_refused("[kerple, {logn: {mode: su}}]", f, "must be the stack's last logit transform");
    tstack_refused("[rope, kerple]", f, "position scheme");
    tstack_refused("[kerple, t5bias]", f, "position scheme");
}

/* On a masked LM each side has ⌊nb/2⌋ buckets, so the exact distances are ⌊⌊nb/2⌋/2⌋ (transformers halves
** num_buckets, then max_exact = num_buckets // 2): buckets 32 take max_distance 12 > 8, refused at 8, where
** ln(max_distance/8) would be 0. By hand, 8 + ⌊8·ln(t/8)/ln 1.5⌋: t = 9 → 8 + ⌊2.32⌋ = 10, t = 10 →
** 8 + ⌊4.40⌋ = 12 (28 for the key 10 after the query), t = 12 → 8 + 8, the last bucket 15. */
Test(t5bias, a_masked_lms_exact_distances_are_a_quarter_of_the_buckets)
{
    struct lx_facts f = tfacts(16, 64, 4, 128);
    f.bidirectional = 1;
    struct tstack st;
    tstack_make(&st, "{t5bias: {buckets: 32, max_distance: 12}}", &f);
    static const int want[][2] = {{7, 7}, {8, 8}, {9, 10}, {10, 12}, {11, 14}, {12, 15}, {-10, 28}, {-1, 17}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_expect_eq(lx_relbias_bucket(&st.spec.rel, want[i][0]), want[i][1], "delta %d", want[i][0]);
    tstack_free(&st);
    tstack_refused("{t5bias: {buckets: 32, max_distance: 8}}", f, "max_distance 8 must exceed (buckets/2)/2 = 8");
    tstack_refused("{t5bias: {buckets: 35, max_distance: 8}}", f, "max_distance 8 must exceed (buckets/2)/2 = 8");
    tstack_make(&st, "{t5bias: {buckets: 35, max_distance: 9}}", &f);
    tstack_free(&st);
}

/* A model scored with a stack whose learned bias is not the one it learned. */
static void mismatch(int kind, const char *yaml, const char *needle)
{
    struct lx_facts f = tfacts(4, MT, 2, MT);
    struct tstack st;
    tstack_make(&st, yaml, &f);
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 1, a.d_model = 8, a.heads = 2, a.d_head = 4, a.d_mlp = 8, a.vocab = MV;
    struct lx_relbias r = {.method = "x", .kind = kind, .values = kind == LX_REL_T5 ? 6 : 2, .buckets = 6};
    lx_arch_learn_rel(&a, &r);
    cr_assert_eq(lx_arch_rel_kind(&a), kind);
    struct lx_model m;
    lx_model_init(&m, &a, 1);
    struct lx_error err = {""};
    cr_expect_lt(lx_model_spec_check(&m, &st.spec, &err), 0, "%s on a model of kind %d", yaml, kind);
    cr_expect_not_null(strstr(err.msg, needle), "%s: '%s' lacks '%s'", yaml, err.msg, needle);
    lx_model_release(&m);
    tstack_free(&st);
}

Test(kerple, a_model_scored_only_with_its_own_kernel)
{
    mismatch(LX_REL_KERPLE_LOG, "{kerple: {kernel: power}}", "the model learned KERPLE's log kernel (kerple)");
    mismatch(LX_REL_KERPLE_POWER, "kerple", "the model learned KERPLE's power kernel");
    mismatch(LX_REL_T5, "kerple", "the model learned T5's bucket table (t5bias), 6");
    mismatch(LX_REL_KERPLE_POWER, "alibi", "and the stack reads none");
    mismatch(LX_REL_NONE, "{kerple: {kernel: power}}", "reads a learned bias the model does not have");
}

/* ---- through the binary ----------------------------------------------------------- */

static void setup(void)
{
    shell_setup("t5bias");
}

Test(t5bias, trained_by_run_scored_by_score_and_on_a_masked_lm, .init = setup, .fini = teardown, .timeout = 120)
{
    char out[16384];
    write_file("t5.yaml", "name: t5\nseed: 1\nmodels:\n"
               "  small:\n    arch: {mode: causal, layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64}\n"
               "    train: {length: 32, batch: 4, steps: 30, warmup: 5}\n"
               "methods:\n  - t5bias\ntasks:\n  - ppl: {windows: 2}\nlengths: [32, 128]\n");
    int rc = sh(out, sizeof out, "OMP_NUM_THREADS=1 \"$L\" run t5.yaml --db s.db");
    cr_assert_eq(rc, 0, "%s", out);
    /* the learned table is stored with the model and read back by score, at 4x the training length */
    rc = sh(out, sizeof out, "head -c 2000 \"$R/docs/methods.md\" > t.txt && m=$(ls models/*.safetensors) && "
            "\"$L\" score --model \"$m\" --text t.txt --length 128 > s.json && "
            "echo nll_rows=$(grep -c mean_nll s.json) && \"$L\" score --model \"$m\" --text t.txt --method logn");
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect_not_null(strstr(out, "nll_rows=1\n"), "%s", out);  /* anywhere: a kernel note may come first */
    cr_expect_not_null(strstr(out, "must be the stack's last logit transform"), "%s", out);
    /* neither llama.cpp nor transformers' Llama has the table: export refuses, naming it */
    rc = sh(out, sizeof out, "m=$(ls models/*.safetensors) && \"$L\" export --gguf x.gguf --model \"$m\"");
    cr_expect_neq(rc, 0, "%s", out);
    cr_expect_not_null(strstr(out, "this model has T5's bucket table (t5bias)"), "%s", out);
    cr_expect(!exists("x.gguf"));
    /* show model prints what the bias learnt: a row of 32 per head, moved from its initial 0 */
    rc = sh(out, sizeof out, "m=$(ls models/*.safetensors) && \"$L\" show model \"$m\" > show.json && "
            "sed -n '/\"rel_bias\"/,/^  \\]/p' show.json | grep -c '^    \\[' && "
            "grep -A1 '\"rel_bias\"' show.json | tail -1 | tr ',' '\\n' | grep -c . && "
            "grep -A1 '\"rel_bias\"' show.json | tail -1 | grep -c '[1-9]'");
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect_str_eq(out, "2\n32\n1\n");
    /* show prints the buckets (the biases are the model's): 16 + ⌊16·ln(t/16)/ln 8⌋ from t = 16 */
    cr_expect_eq(sh(out, sizeof out, "\"$L\" show method t5bias --length 24"), 0, "%s", out);
    cr_expect_not_null(strstr(out, "\"bucket\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 16, 16, "
                              "17, 17, 18, 18, 18]"), "%s", out);
    /* and a masked LM's, both sides: 8 exact, then 8 + ⌊8·ln(t/8)/ln 16⌋; the keys after from 17 */
    cr_expect_eq(sh(out, sizeof out, "\"$L\" show method t5bias --length 17 --mlm"), 0, "%s", out);
    cr_expect_not_null(strstr(out, "\"bucket\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8, 9, 9, 9, 9, 10]"), "%s", out);
    cr_expect_not_null(strstr(out, "\"bucket_after\": [0, 17, 18, 19, 20, 21, 22, 23, 24, 24, 24, 24, 25, 25, 25, 25, "
                              "26]"), "%s", out);
    cr_expect_eq(sql_long("s.db", "SELECT count(*) FROM runs WHERE status = 'ok'"), 2);
    /* a masked LM learns the encoder's table: its cells run at 1x and 4x, its table learns both halves */
    write_file("m.yaml", "name: t5m\nseed: 1\nmodels:\n"
               "  small:\n    arch: {mode: mlm, layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64}\n"
               "    train: {length: 32, batch: 4, steps: 30, warmup: 5}\n"
               "methods:\n  - t5bias\ntasks:\n  - mlm: {windows: 2}\nlengths: [32, 128]\n");
    rc = sh(out, sizeof out, "\"$L\" run m.yaml --db m.db");
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect_eq(sql_long("m.db", "SELECT count(*) FROM runs WHERE status = 'ok'"), 2);
    rc = sh(out, sizeof out, "m=$(ls -t models/*.safetensors | head -1) && \"$L\" show model \"$m\" > mshow.json && "
            "grep -A1 '\"rel_bias\"' mshow.json | tail -1 | tr -d '[] ' | tr ',' '\\n' > row0.txt && "
            "grep -c . row0.txt && sed -n '18,28p' row0.txt | grep -vc '^0$' && sed -n '17p;29,32p' row0.txt | "
            "grep -c '^0$'");
    cr_expect_eq(rc, 0, "%s", out);
    /* the keys after the query at distances 1-31 fall in buckets 17-27 (28 starts at 32), all learnt;
    ** 16 (distance 0 has no after) and 28-31 stay at their initial 0 */
    cr_expect_str_eq(out, "32\n11\n5\n", "32 buckets a head; the keys-after half learnt where training reached");
    /* the gaussian task's synthetic logits: no model, nothing learned */
    write_file("g.yaml", "name: g\nmethods: [t5bias]\ntasks: [gaussian]\nlengths: [10]\n");
    cr_expect_eq(sh(out, sizeof out, "\"$L\" run g.yaml --db g.db"), 2, "%s", out);
    cr_expect_not_null(strstr(out, "g.yaml:2:11: method 't5bias' cannot apply to task 'gaussian'"), "%s", out);
}

/* docs/methods.md#t5bias lists the first distance of each log bucket (nb/2 … nb − 1) per (buckets,
** max_distance): every row is what `lenx show method t5bias` prints. The row (8, 12) read 4, 6, 9, 10; by hand
** 4 + ⌊4·ln(t/4)/ln 3⌋ is 6 from t = 7 (4·ln 1.75/ln 3 = 2.04), so 4, 6, 7, 10. */
Test(t5bias, docs_first_distances_are_the_binarys_buckets, .init = setup, .fini = teardown, .timeout = 30)
{
    static char docs[1 << 20], out[1 << 16];
    char path[600];
    snprintf(path, sizeof path, "%s/docs/methods.md", getenv("LENX_ROOT"));
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "%s", path);
    docs[fread(docs, 1, sizeof docs - 1, fp)] = '\0';
    fclose(fp);
    const char *row = strstr(docs, "| buckets, max_distance | first distance of buckets nb/2");
    cr_assert_not_null(row, "docs/methods.md lost the t5bias table");
    int rows = 0;
    for (row = strchr(row, '\n') + 1; (row = strchr(row, '\n')) && strncmp(++row, "| ", 2) == 0; rows++) {
        int nb, used;
        long maxd;
        cr_assert_eq(sscanf(row, "| %d, %ld |%n", &nb, &maxd, &used), 2, "%.60s", row);
        cr_assert_eq(sh(out, sizeof out, "$L show method t5bias buckets=%d max_distance=%ld --length %ld", nb, maxd,
                        maxd + 2), 0, "%s", out);
        const char *b = strstr(out, "\"bucket\": [");
        cr_assert_not_null(b, "%s", out);
        b += strlen("\"bucket\": [");
        long first[4096], t = 0;
        for (int k = 0; k < nb; k++)
            first[k] = -1;
        for (char *end; t < maxd + 2; t++, b = end + 1) {
            long k = strtol(b, &end, 10);
            cr_assert(end != b && k >= 0 && k < nb, "bucket of %ld: %.40s", t, b);
            first[k] = first[k] < 0 ? t : first[k];
        }
        const char *d = row + used;
        for (int k = nb / 2; k < nb; k++) {
            char *end;
            long want = strtol(d, &end, 10);
            cr_assert(end != d, "(%d, %ld): the docs list no distance for bucket %d", nb, maxd, k);
            cr_expect_eq(first[k], want, "(%d, %ld): bucket %d starts at %ld, the docs say %ld", nb, maxd, k,
                         first[k], want);
            d = end + (*end == ',');
        }
        cr_expect_eq(strspn(d, " |"), strcspn(d, "\n"), "(%d, %ld): more distances than buckets: %.40s", nb, maxd, d);
    }
    cr_expect_eq(rows, 2, "the table's rows");
}
