/*
** tests/test_decode.c - the KV cache and one-token decoding
** (harness/engine/kernels/decode.c):
**
**   - the one-row attention against row i of the naive reference
**     (lx_attention_forward) for every method that runs on a model, with
**     multi-head, grouped-query and multi-query key/value heads;
**   - a decode step's logits against the same row of a full forward pass
**     (random models: GELU and SwiGLU, GQA, q/k/v biases, a tied head,
**     learned logit scales), within 1e-5 normwise relative;
**   - greedy generation through the cache against one full pass per token;
**   - a trained passkey model read at 8x and 16x its training length: the
**     greedy answers through the cache are the full passes' tokens, every one;
**   - the memory plan's count of the cache, and bad input refused.
**
** Errors are normwise relative: max |got − ref| / max |ref|.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/rng.h"
#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/stepdot.h"
#include "harness/engine/model/decoding.h"
#include "harness/engine/model/model.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/engine/model/train.h"
#include "harness/sweep/registry.h"
#include "tasks/retrieval.h"
#include "tasks/task.h"
#include "tests/model_stacks.h"     /* stacks[]: every method that runs on a model; rel_err() */
#include "tests/stack.h"

#define TOL 1e-5
/* Where key/value head g's rows of layer 0 start in the cache c (rows D apart). */
#define HG(g) lx_kvcache_head_at(&c, 0, 0, (g))

static void fill(float *x, long n, uint64_t key, uint32_t stream)
{
    struct lx_rng r;
    lx_rng_init(&r, key, stream, LX_RNG_INIT);
    for (long i = 0; i < n; i++)
        x[i] = (float)lx_rng_normal(&r);
}

static void unit_rows(float *x, long rows, int D)
{
    for (long r = 0; r < rows; r++) {
        double nn = 0.0;
        for (int d = 0; d < D; d++)
            nn += (double)x[r * D + d] * x[r * D + d];
        for (int d = 0; d < D; d++)
            x[r * D + d] = (float)(x[r * D + d] / sqrt(nn));
    }
}


/* ---- one row against the naive reference -------------------------------------- */

/* Rows 0 … T−1 of a (T, H, D) attention, each by the one-row kernel over a
** cache of T rows, against lx_attention_forward on k, v expanded to H heads. */
static void row_vs_naive(const char *stack, int T, int H, int KV, int D)
{
    struct lx_facts f = tfacts(D, 6, H, T);
    struct tstack st;
    tstack_make(&st, stack, &f);
    if (st.spec.calibrate)
        st.spec.temperature = 0.7;      /* as if calibrated */
    int G = H / KV, QKV = (H + 2 * KV) * D;
    long NH = (long)T * H * D, NK = (long)T * KV * D;
    float *q = malloc(sizeof(float) * NH), *k = malloc(sizeof(float) * NK), *v = malloc(sizeof(float) * NK);
    float *kx = malloc(sizeof(float) * NH), *vx = malloc(sizeof(float) * NH), *qm = malloc(sizeof(float) * NH);
    float *o_naive = malloc(sizeof(float) * NH), *o_row = malloc(sizeof(float) * NH);
    float *att = malloc(sizeof(float) * (size_t)H * T * T), *qkv = malloc(sizeof(float) * (size_t)T * QKV);
    fill(q, NH, 31, 1), fill(k, NK, 31, 2), fill(v, NK, 31, 3);
    if (st.spec.cosine)
        unit_rows(q, (long)T * H, D), unit_rows(k, (long)T * KV, D);
    float mult[8] = {0.5f, 1.7f, 1.1f, 0.9f, 2.0f, 0.3f, 1.0f, 1.3f};
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++)
            for (int d = 0; d < D; d++) {
                long at = ((long)t * H + h) * D + d, kat = ((long)t * KV + h / G) * D + d;
                kx[at] = k[kat], vx[at] = v[kat];
                /* learned multipliers of S: the reference scales q instead */
                qm[at] = st.spec.learn_scale ? q[at] * mult[h % 8] : q[at];
            }
    lx_attention_forward(o_naive, att, qm, kx, vx, &st.spec, T, H, D, 1);

    struct lx_arch a = {.mode = LX_MODEL_CAUSAL, .layers = 1, .d_model = 8, .heads = H, .kv_heads = KV,
                        .d_head = D, .d_mlp = 8, .vocab = 4, .norm_eps = 1e-5, .init_std = 0.02};
    struct lx_kvcache c;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_kvcache_alloc(&c, &a, &st.spec, 1, T, &err), LX_OK, "%s", err.msg);
    for (int t = 0; t < T; t++) {   /* q | k | v rows, as a forward pass holds them */
        memcpy(qkv + (long)t * QKV, q + (long)t * H * D, sizeof(float) * (size_t)H * D);
        memcpy(qkv + (long)t * QKV + H * D, k + (long)t * KV * D, sizeof(float) * (size_t)KV * D);
        memcpy(qkv + (long)t * QKV + (H + KV) * D, v + (long)t * KV * D, sizeof(float) * (size_t)KV * D);
    }
    lx_kvcache_put(&c, 0, qkv, 1, T, H);
    cr_expect_eq(c.len[0], T);
    if (c.kfar)
        lx_kvcache_far(&c, &st.spec, 0, 0, T);
    float *s = malloc(sizeof(float) * (size_t)(G * T)), *o_kept = malloc(sizeof(float) * NH);
    float *o_grp = malloc(sizeof(float) * NH), *o_grp_p = malloc(sizeof(float) * NH),
          *o_row_p = malloc(sizeof(float) * NH), mults[8];
    double *tab = malloc(sizeof(double) * 2 * (size_t)T);
    enum lx_numerics nm0 = lx_numerics_get();
    for (int h = 0; h < H; h++)
        mults[h] = st.spec.learn_scale ? mult[h % 8] : 1.0f;
    cr_expect_eq(c.dtab != NULL, lx_decode_dist_kept(&st.spec), "%s: the cache keeps tables when they hold", stack);
    for (int i = 0; i < T; i++) {
        lx_kvcache_dist(&c, &st.spec, H, i + 1);    /* one distance more a row, as the decode steps go */
        for (int h = 0; h < H; h++) {
            int g = h / G;
            long at = ((long)i * H + h) * D;
            const double *kept[2] = {NULL, NULL};
            if (c.dtab)
                kept[0] = c.dtab + 2L * h * T, kept[1] = kept[0] + T;
            lx_attn_row_forward(o_row + at, q + at, c.k + HG(g), c.v + HG(g), c.kfar ? c.kfar + HG(g) : NULL, D,
                                &st.spec, h, st.spec.learn_scale ? mult[h % 8] : 1.0f, i, D, s, tab, NULL, 0);
            lx_attn_row_forward(o_kept + at, q + at, c.k + HG(g), c.v + HG(g), c.kfar ? c.kfar + HG(g) : NULL, D,
                                &st.spec, h, st.spec.learn_scale ? mult[h % 8] : 1.0f, i, D, s, tab,
                                c.dtab ? kept : NULL, 0);
        }
        /* a key/value head's G rows at once (fast numerics: one product each with its keys and values, but
        ** where the multipliers differ) and, in portable numerics, row by row: the one-row kernel's bits */
        for (int pass = 0; pass < 2; pass++) {
            lx_numerics_set(pass ? LX_NUMERICS_PORTABLE : LX_NUMERICS_FAST);
            for (int g = 0; g < KV; g++) {
                long at = ((long)i * H + g * G) * D;
                lx_attn_rows_forward((pass ? o_grp_p : o_grp) + at, q + at, c.k + HG(g), c.v + HG(g), LX_DT_F32,
                                     c.kfar ? c.kfar + HG(g) : NULL, D, &st.spec, g * G, G, mults, i, D, s, T,
                                     tab, c.dtab, T, 0);
            }
        }
        for (int h = 0; h < H; h++) {
            int g = h / G;
            long at = ((long)i * H + h) * D;
            lx_attn_row_forward(o_row_p + at, q + at, c.k + HG(g), c.v + HG(g), c.kfar ? c.kfar + HG(g) : NULL, D,
                                &st.spec, h, mults[h], i, D, s, tab, NULL, 0);
        }
        lx_numerics_set(nm0);
    }
    if (!c.kfar) {      /* a half cache's rows read as stored, in 16 lanes where the CPU has them, in 8 and by the
                        ** reference, against the same values widened first (fast numerics; far keys are widened) */
        static const int types[] = {LX_DT_F16, LX_DT_BF16};
        uint16_t *kh = malloc(sizeof(uint16_t) * NK), *vh = malloc(sizeof(uint16_t) * NK);
        float *kw = malloc(sizeof(float) * NK), *vw = malloc(sizeof(float) * NK), *ow = malloc(sizeof(float) * NH),
              *oh = malloc(sizeof(float) * NH);
        lx_numerics_set(LX_NUMERICS_FAST);
        for (int ti = 0; ti < 2; ti++)
            for (int lanes = 0; lanes < 3; lanes++) {
                lx_f32_to_type(kh, k, types[ti], (size_t)NK), lx_f32_to_type(vh, v, types[ti], (size_t)NK);
                lx_half_to_f32(kw, kh, types[ti], (size_t)NK), lx_half_to_f32(vw, vh, types[ti], (size_t)NK);
                lx_step_lanes(lanes == 2 ? -1 : 8 * lanes);
                for (int i = 0; i < T; i++)
                    for (int g = 0; g < KV; g++) {
                        long at = ((long)i * H + g * G) * D;
                        lx_attn_rows_forward(ow + at, q + at, kw + g * D, vw + g * D, LX_DT_F32, NULL, KV * D,
                                             &st.spec, g * G, G, mults, i, D, s, T, tab, NULL, T, 0);
                        lx_attn_rows_forward(oh + at, q + at, kh + g * D, vh + g * D, types[ti], NULL, KV * D,
                                             &st.spec, g * G, G, mults, i, D, s, T, tab, NULL, T, 0);
                    }
                double eh = rel_err(oh, ow, NH);
                cr_expect_leq(eh, TOL, "%s T=%d H=%d KV=%d: a %s cache in place (%s) vs widened %g", stack, T, H, KV,
                              ti ? "bf16" : "f16", lanes == 2 ? "the CPU's lanes" : lanes ? "AVX2" : "reference", eh);
            }
        lx_step_lanes(-1);
        lx_numerics_set(nm0);
        free(kh), free(vh), free(kw), free(vw), free(ow), free(oh);
    }
    double eg = rel_err(o_grp, o_naive, NH);
    cr_expect_leq(eg, TOL, "%s T=%d H=%d KV=%d: a key/value head's rows at once vs naive %g", stack, T, H, KV, eg);
    cr_expect_eq(memcmp(o_grp_p, o_row_p, sizeof(float) * NH), 0, "%s: portable numerics go row by row", stack);
    double e = rel_err(o_row, o_naive, NH);
    cr_expect_leq(e, TOL, "%s T=%d H=%d KV=%d: one row vs naive %g", stack, T, H, KV, e);
    cr_expect_eq(memcmp(o_kept, o_row, sizeof(float) * NH), 0, "%s: kept tables give the row's own bits", stack);
    if (c.dtab) {   /* a new temperature (t5align calibrates it) tabulates every distance again */
        double t0 = st.spec.temperature, A, B;
        st.spec.temperature = 2.0 * t0;
        lx_kvcache_dist(&c, &st.spec, H, T);
        lx_spec_affine(&st.spec, H - 1, 1, T - 1, &A, &B);
        cr_expect(c.dtab[2L * (H - 1) * T + T - 1] == A && c.dtab[(2L * H - 1) * T + T - 1] == B,
                  "%s: the tables follow the temperature", stack);
        st.spec.temperature = t0;
    }
    free(o_kept), free(o_grp), free(o_grp_p), free(o_row_p);
    free(q), free(k), free(v), free(kx), free(vx), free(qm), free(o_naive), free(o_row), free(att), free(qkv);
    free(s), free(tab);
    lx_kvcache_release(&c);
    tstack_free(&st);
}

Test(decode, one_row_matches_naive_every_method, .timeout = 120)
{
    for (size_t i = 0; i < N_STACKS; i++) {
        row_vs_naive(stacks[i], 13, 4, 4, 8);       /* multi-head */
        row_vs_naive(stacks[i], 37, 4, 2, 16);      /* grouped-query */
        row_vs_naive(stacks[i], 13, 3, 1, 8);       /* multi-query */
    }
}

/* ---- a model: decode steps against full forward passes --------------------------- */

/* A random causal model; `kind` 0: GELU, multi-head; 1: SwiGLU, one key/value
** head of two, q/k/v biases (drawn, not 0), a tied head; 2: Qwen3's shape, as
** 1 without biases, with qk_norm (gains drawn around 1) and two heads of 16 on
** a residual of 48; 3: as 1 with Gemma 3's local layers (layer 0 of 2 over a
** window of 5 keys at rope base 500, whatever the stack) and logits over
** sqrt(12); with sp, what its stack learns: logit scales drawn around 1, T5's
** bias table drawn, sink logits per layer and head. */
static void random_model(struct lx_model *m, int kind, const struct lx_spec *sp, uint64_t key)
{
    int learn = sp && sp->learn_scale;
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 32, a.heads = 2, a.d_head = 16, a.d_mlp = 48, a.vocab = 64, a.init_std = 0.3;
    a.kv_heads = kind ? 1 : 0, a.qkv_bias = kind == 1, a.tie_head = kind > 0, a.logit_scale = learn;
    a.qk_norm = kind == 2, a.d_model = kind == 2 ? 48 : 32;
    a.mlp = kind ? LX_MLP_SWIGLU : LX_MLP_GELU;
    if (kind == 3)
        a.local_every = 2, a.local_window = 5, a.local_base = 500, a.qk_dim = 12;
    if (sp)
        lx_arch_learn_rel(&a, &sp->rel);
    a.sinks = sp && sp->zsink.learn;
    lx_params_finish(&lx_arch_schema, &a);
    lx_model_init(m, &a, key);
    for (long k = 0; m->v.rel_bias && k < a.heads * lx_arch_rel_values(&a); k++)     /* > 0: KERPLE's too */
        m->v.rel_bias[k] = (float)(0.5 + 0.4 * sin(0.9 * (double)k + 0.3 * (double)key));
    for (long l = 0; l < a.layers; l++) {
        const struct lx_layer_w *W = &m->v.layer[l];
        if (W->bqkv)
            fill(W->bqkv, lx_arch_qkv(&a), key, (uint32_t)(100 + l));
        for (long h = 0; learn && h < a.heads; h++)
            W->logit_scale[h] = 0.6f + 0.5f * (float)h;
        for (long h = 0; W->sink && h < a.heads; h++)
            W->sink[h] = 1.1f * (float)h - 0.7f * (float)l;
        for (int k = 0; W->q_norm && k < 2; k++) {
            float *g = k ? W->k_norm : W->q_norm;
            fill(g, a.d_head, key, (uint32_t)(200 + 2 * l + k));
            for (long d = 0; d < a.d_head; d++)
                g[d] = 1.0f + 0.3f * g[d];
        }
    }
}

/* The head path of a pass (lx_attn_head_forward, ws.phalf = dt) with TT query rows over the keys k and
** one-hot values v (TT × D, D >= TT): every row's output is its probabilities, each a number of type dt
** within its rounding (u, sub) of the unrounded path's. */
static void head_path_rounds_p(const struct lx_spec *spec, const float *k, const float *v, int dt, double u,
                               double sub)
{
    enum { TT = 24, D = 32 };
    static float qs[TT * D], P[TT * TT], o[TT * D], ref[TT * TT], oref[TT * D];
    static double tab[4 * TT];
    fill(qs, TT * D, 6, 1);
    struct lx_attn_shape sh = {.T = TT, .H = 1, .KV = 1, .D = D, .ld = D, .ldo = D, .causal = 1};
    struct lx_attn_ws ws = {.tab = tab, .mult = 1.0f, .phalf = dt};
    lx_attn_head_forward(o, P, qs, k, v, spec, 0, &sh, &ws);
    ws.phalf = 0;
    lx_attn_head_forward(oref, ref, qs, k, v, spec, 0, &sh, &ws);
    for (int i = 0; i < TT; i++)
        for (int j = 0; j <= i; j++) {
            float r = o[i * D + j];
            lx_round_half_n(&r, dt, 1);
            cr_assert_eq(r, o[i * D + j], "%s: P[%d][%d] is a number of the type", lx_kv_name(dt), i, j);
            double e = fabs((double)o[i * D + j] - oref[i * D + j]);
            cr_assert_leq(e, fmax((u + 0x1p-24) * fabs(oref[i * D + j]), sub), "%s: P[%d][%d] %a against %a",
                          lx_kv_name(dt), i, j, (double)o[i * D + j], (double)oref[i * D + j]);
        }
}

/* llama.cpp's products with a half KV cache round q and the normalised
** probabilities to the cache's type (activations: llamacpp, half = that
** type). With one-hot values (v_j = e_j, D >= T) the output is the row's
** probabilities themselves, exact in any summation order: each is a number
** of the type, within its rounding (unit roundoff u, 2^-11 for f16, 2^-8 for
** bf16; f16's subnormals an absolute 2^-25) of the unrounded kernel's on the
** rounded q, and some move (the rounding is there); and q rounded before the
** call gives the same bits (the kernel rounds q itself). A pass's head path
** rounds its probabilities the same way (model.c rounds its q, k, v). */
Test(decode, half_products_round_q_and_p)
{
    enum { TT = 24, D = 32 };
    struct lx_facts f = tfacts(D, 6, 1, TT);
    struct tstack st;
    tstack_make(&st, "[rope]", &f);
    static float q[D], qr[D], k[TT * D], v[TT * D], s[TT], o[D], oq[D], ref[D];
    static double tab[2 * TT];
    fill(q, D, 5, 1), fill(k, TT * D, 5, 2);
    for (int j = 0; j < TT; j++)
        v[j * D + j] = 1.0f;
    const int types[2] = {LX_DT_F16, LX_DT_BF16};
    for (int t = 0; t < 2; t++) {
        int dt = types[t];
        double u = dt == LX_DT_F16 ? 0x1p-11 : 0x1p-8, sub = dt == LX_DT_F16 ? 0x1p-25 : 0.0;
        memcpy(qr, q, sizeof q);
        lx_round_half_n(qr, dt, D);
        long i = TT - 1;
        lx_attn_row_forward(o, q, k, v, NULL, D, &st.spec, 0, 1.0f, i, D, s, tab, NULL, dt);
        lx_attn_row_forward(oq, qr, k, v, NULL, D, &st.spec, 0, 1.0f, i, D, s, tab, NULL, dt);
        lx_attn_row_forward(ref, qr, k, v, NULL, D, &st.spec, 0, 1.0f, i, D, s, tab, NULL, 0);
        cr_assert_eq(memcmp(o, oq, sizeof o), 0, "%s: q is rounded by the kernel", lx_kv_name(dt));
        int moved = 0;
        for (int j = 0; j <= i; j++) {
            float r = o[j];
            lx_round_half_n(&r, dt, 1);
            cr_assert_eq(r, o[j], "%s: p[%d] = %a is a number of the type", lx_kv_name(dt), j, (double)o[j]);
            double err = fabs((double)o[j] - ref[j]), bound = fmax((u + 0x1p-24) * fabs(ref[j]), sub);
            cr_assert_leq(err, bound, "%s: p[%d] %a against %a", lx_kv_name(dt), j, (double)o[j], (double)ref[j]);
            moved += o[j] != ref[j];
        }
        cr_assert_gt(moved, TT / 2, "%s: %d of %d probabilities rounded", lx_kv_name(dt), moved, TT);
        head_path_rounds_p(&st.spec, k, v, dt, u, sub);
    }
    tstack_free(&st);
    /* far keys (ReRoPE past its window): the query is rounded, then turned for them, so a query
    ** rounded before the call still gives the same bits (turning the unrounded one does not) */
    tstack_make(&st, "[rope, {rerope: {window: 3}}]", &f);
    cr_assert(lx_decode_far(&st.spec));
    for (int t = 0; t < 2; t++) {
        memcpy(qr, q, sizeof q);
        lx_round_half_n(qr, types[t], D);
        lx_attn_row_forward(o, q, k, v, v, D, &st.spec, 0, 1.0f, TT - 1, D, s, tab, NULL, types[t]);
        lx_attn_row_forward(oq, qr, k, v, v, D, &st.spec, 0, 1.0f, TT - 1, D, s, tab, NULL, types[t]);
        cr_expect_eq(memcmp(o, oq, sizeof o), 0, "%s: far keys' query is the rounded one turned", lx_kv_name(types[t]));
    }
    tstack_free(&st);
}

/* With activations: llamacpp and kv_cache: f16 a pass rounds q, k and v to f16 (model.c), which turns
** |x| >= 65520 into infinity: the pass's check names the cache type, the first layer and the row instead
** of the non-finite logits that follow. Layer 1's q|k|v weights times 1e5 put its values near
** 0.3·√32·1e5 ≈ 1.7e5 (x normalised); layer 0 stays in range. A bf16 cache (fp32's range) and an f16
** cache without the mode (the pass's attention in fp32) give no such error. */
Test(decode, f16_attention_past_its_range_is_named)
{
    enum { T = 12 };
    struct lx_model m;
    random_model(&m, 0, NULL, 21);
    long nq = lx_arch_qkv(&m.arch) * m.arch.d_model;
    for (long i = 0; i < nq; i++)
        m.v.layer[1].wqkv[i] *= 1e5f;
    struct lx_facts f = tfacts((int)m.arch.d_head, 256, (int)m.arch.heads, T);
    struct tstack st;
    tstack_make(&st, "[rope]", &f);
    int tok[T], tgt[T];
    for (int t = 0; t < T; t++)
        tok[t] = (7 * t + 3) % (int)m.arch.vocab, tgt[t] = (5 * t + 1) % (int)m.arch.vocab;
    static const struct {
        int kv, acts, named;
    } cases[] = {{LX_DT_F16, 1, 1}, {LX_DT_BF16, 1, 0}, {LX_DT_F16, 0, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        struct lx_error err = {{0}};
        struct lx_acts a;
        lx_kv_set(cases[c].kv);
        lx_acts_llamacpp_set(cases[c].acts);
        cr_assert_eq(lx_acts_alloc(&a, &m.arch, 1, T, LX_ACTS_EVAL, &err), LX_OK, "%s", err.msg);
        lx_model_forward(&m, &st.spec, tok, tgt, &a);
        int rc = lx_acts_check_finite(&a, m.arch.vocab, 1, tgt, &err);
        int named = rc == LX_ERUN && strstr(err.msg, "kv_cache f16") != NULL;
        cr_expect_eq(named, cases[c].named, "kv %s, llamacpp %d: rc %d, %s", lx_kv_name(cases[c].kv),
                     cases[c].acts, rc, err.msg);
        if (named)
            cr_expect(strstr(err.msg, "layer 1 at window 0, position 0") && strstr(err.msg, "hint: use kv_cache bf16"),
                      "%s", err.msg);
        lx_acts_release(&a);
    }
    lx_kv_set(0);
    lx_acts_llamacpp_set(0);
    tstack_free(&st);
    lx_model_release(&m);
}

/* Tokens tok[0, n) of a random model: full forward logits of every row, then
** decode from a prefix of p0 rows: each step's logits against the full row. */
static void steps_vs_full_at(const char *stack, int kind, int T, double tol)
{
    enum { P0 = 9 };
    struct lx_model m;
    struct tstack st;
    struct lx_facts f = tfacts(16, 8, 2, T);
    tstack_make(&st, stack, &f);
    if (st.spec.calibrate)
        st.spec.temperature = 0.8;
    random_model(&m, kind, &st.spec, 7 + (uint64_t)kind);
    long V = m.arch.vocab;
    int *tok = malloc(sizeof(int) * (size_t)T);
    for (int t = 0; t < T; t++)
        tok[t] = (t * 29 + 3) % (int)V;
    struct lx_acts full, pre;
    struct lx_kvcache c;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_acts_alloc(&full, &m.arch, 1, T, 0, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_acts_alloc(&pre, &m.arch, 1, P0, 0, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_kvcache_alloc(&c, &m.arch, &st.spec, 1, T, &err), LX_OK, "%s", err.msg);
    lx_model_forward(&m, &st.spec, tok, NULL, &full);
    pre.kv = &c;
    lx_model_forward(&m, &st.spec, tok, NULL, &pre);
    double e = rel_err(pre.logits + (P0 - 1) * V, full.logits + (P0 - 1) * V, V), worst = e;
    float *lg = malloc(sizeof(float) * (size_t)V);
    for (int p = P0; p < T; p++) {
        lx_decode_step(lg, &m, &st.spec, &c, 0, p, tok[p]);
        e = rel_err(lg, full.logits + (long)p * V, V);
        worst = e > worst ? e : worst;
    }
    cr_expect_leq(worst, tol, "%s (model %d, T %d): decode step vs full forward row, worst %g", stack, kind, T, worst);
    cr_log_info("%s (model %d, T %d): worst %g", stack, kind, T, worst);
    cr_expect_eq(c.len[0], T);
    free(lg);
    free(tok);
    lx_kvcache_release(&c);
    lx_acts_release(&full);
    lx_acts_release(&pre);
    lx_model_release(&m);
    tstack_free(&st);
}

static void steps_vs_full(const char *stack, int kind)
{
    steps_vs_full_at(stack, kind, 40, TOL);
}

Test(decode, step_logits_match_the_full_forward, .timeout = 120)
{
    for (size_t i = 0; i < N_STACKS; i++)
        for (int kind = 0; kind < 4; kind++)
            steps_vs_full(stacks[i], kind);
}

/* A step on the team (the key/value heads shared among 2 threads, each with its scratch, and the
** products' rows) gives the bits of a step on one thread: model 0 (two key/value heads) and model 3
** (local layers), an fp32 and a bf16 cache (gathered per thread), under stacks with a ring, far keys,
** windows and distance tables. */
Test(decode, steps_on_the_team_are_the_bits_of_one_thread, .timeout = 120)
{
    enum { T = 80 };    /* past the streaming stack's ring of 3 + 7 + LX_KVCACHE_REWIND rows */
    static const char *const stacks_t[] = {"rope", "[alibi, {window: {size: 7}}]", "[rope, logn]",
                                           "[rope, {streaming: {sinks: 3, recent: 6}}]",
                                           "[rope, {lminfinite: {n_global: 4, local: 8}}]"};
    for (size_t i = 0; i < sizeof stacks_t / sizeof *stacks_t; i++)
        for (int kind = 0; kind <= 3; kind += 3)
            for (int bf16 = 0; bf16 < 2; bf16++) {
                struct lx_model m;
                struct tstack st;
                struct lx_facts f = tfacts(16, 8, 2, T);
                tstack_make(&st, stacks_t[i], &f);
                random_model(&m, kind, &st.spec, 11);
                lx_kv_set(bf16);
                long V = m.arch.vocab;
                float *lg[2] = {malloc(sizeof(float) * (size_t)V * T), malloc(sizeof(float) * (size_t)V * T)};
                for (int team = 0; team < 2; team++) {
                    struct lx_kvcache c;
                    struct lx_error err = {{0}};
                    omp_set_num_threads(2);
                    lx_pilot_force(team);
                    cr_assert_eq(lx_kvcache_alloc(&c, &m.arch, &st.spec, 1, T, &err), LX_OK, "%s", err.msg);
                    for (int p = 0; p < T; p++)
                        lx_decode_step(lg[team] + (long)p * V, &m, &st.spec, &c, 0, p, (p * 29 + 3) % (int)V);
                    lx_kvcache_release(&c);
                }
                lx_pilot_force(-1);
                lx_kv_set(0);
                cr_expect(memcmp(lg[0], lg[1], sizeof(float) * (size_t)V * T) == 0,
                          "%s, model %d, %s cache: the team's steps differ from one thread's", stacks_t[i], kind,
                          bf16 ? "bf16" : "fp32");
                free(lg[0]), free(lg[1]);
                lx_model_release(&m);
                tstack_free(&st);
            }
}

/* As above on a model wide enough that OpenBLAS runs a one-row product on
** both threads (a product of m x n above its 9,216 threshold: 256 x 768 for
** q|k|v, 256 x 2,048 for the head): each output is still one thread's sum,
** so the pilot (pilot.h) may pick either mode at any step without moving a
** bit. */
Test(decode, steps_of_a_wide_model_on_the_team_are_the_bits_of_one_thread, .timeout = 120)
{
    enum { T = 24 };
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 256, a.heads = 4, a.d_head = 64, a.d_mlp = 688, a.vocab = 2048, a.init_std = 0.05;
    a.mlp = LX_MLP_SWIGLU;
    lx_params_finish(&lx_arch_schema, &a);
    struct lx_model m;
    lx_model_init(&m, &a, 17);
    struct tstack st;
    struct lx_facts f = tfacts(64, 16, 4, T);
    tstack_make(&st, "rope", &f);
    float *lg[2] = {malloc(sizeof(float) * 2048 * T), malloc(sizeof(float) * 2048 * T)};
    int n_thr = omp_get_max_threads();
    enum lx_numerics nm0 = lx_numerics_get();
    const enum lx_numerics nms[] = {LX_NUMERICS_FAST, LX_NUMERICS_BF16, LX_NUMERICS_PORTABLE};
    for (int i = 0; i < 3; i++) {
        lx_numerics_set(nms[i]);
        for (int team = 0; team < 2; team++) {
            struct lx_kvcache c;
            struct lx_error err = {{0}};
            omp_set_num_threads(2);
            cr_assert_eq(lx_kvcache_alloc(&c, &m.arch, &st.spec, 1, T, &err), LX_OK, "%s", err.msg);
            for (int p = 0; p < T; p++)
                lx_decode_step_on(lg[team] + (long)p * 2048, &m, &st.spec, &c, 0, p, (p * 131 + 5) % 2048, !team);
            lx_kvcache_release(&c);
        }
        cr_expect(memcmp(lg[0], lg[1], sizeof(float) * 2048 * T) == 0, "numerics %d: the team's steps differ from "
                  "one thread's", (int)nms[i]);
    }
    lx_numerics_set(nm0);
    omp_set_num_threads(n_thr);
    free(lg[0]), free(lg[1]);
    lx_model_release(&m);
    tstack_free(&st);
}

/* Generation through a pilot on two threads gives the tokens of every step on
** one thread and of every step on the team (the modes' bits are the same),
** and the pilot counts every decode step once; a pilot is off where a mode
** is forced or there is one thread. */
Test(decode, generation_under_a_pilot_gives_the_tokens_of_either_mode, .timeout = 120)
{
    enum { T = 48, N = 40 };
    struct lx_model m;
    struct tstack st;
    struct lx_facts f = tfacts(16, 8, 2, T);
    tstack_make(&st, "rope", &f);
    random_model(&m, 0, &st.spec, 5);
    int prompt[3] = {1, 7, 9}, want[2][N], got[N];
    struct lx_error err = {{0}};
    int n_thr = omp_get_max_threads();
    omp_set_num_threads(2);
    for (int team = 0; team < 2; team++) {
        lx_pilot_force(team);
        struct lx_pilot p;
        lx_pilot_start(&p, &m);
        cr_expect_not(p.on, "a forced mode is not piloted");
        cr_assert_eq(lx_generate(&m, &st.spec, prompt, 3, N, want[team], LX_DECODE_CACHE, &err), LX_OK, "%s", err.msg);
    }
    lx_pilot_force(-1);
    cr_expect_eq(memcmp(want[0], want[1], sizeof want[0]), 0);
    struct lx_pilot p;
    lx_pilot_start(&p, &m);
    cr_expect(p.on);
    struct lx_gen_sink sink = {NULL, NULL, &p};
    long n_out = 0;
    cr_assert_eq(lx_generate_stream(&m, &st.spec, prompt, 3, N, got, LX_DECODE_CACHE, NULL, &sink, &n_out, &err), LX_OK,
                 "%s", err.msg);
    cr_expect_eq(n_out, N);
    cr_expect_eq(memcmp(got, want[0], sizeof got), 0, "the piloted tokens are either mode's");
    cr_expect_eq(p.steps[0] + p.steps[1], N - 1, "%ld + %ld steps told", p.steps[0], p.steps[1]);
    cr_expect_geq(p.probes, 1);
    omp_set_num_threads(1);
    lx_pilot_start(&p, &m);
    cr_expect_not(p.on, "one thread has nothing to choose");
    omp_set_num_threads(n_thr);
    lx_model_release(&m);
    tstack_free(&st);
}

/* Local layers keep a ring: model 3's window of 5 keys in 5 + LX_KVCACHE_REWIND = 69 rows of a
** cache for 160, its global layer all 160; every step past row 69 reads rows the ring has wrapped
** over, in an fp32 cache and a bf16 one (whose rounding of keys and values moves the logits by
** up to 2.2e-2 of their largest here; one key read from the wrong row moved them by 1.9 to 2.1). */
Test(decode, local_layers_keep_a_ring, .timeout = 120)
{
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.local_every = 2, a.local_window = 5;
    lx_params_finish(&lx_arch_schema, &a);
    cr_assert_eq(lx_kvcache_layer_rows(&a, NULL, 0, 160, NULL), 5 + LX_KVCACHE_REWIND);
    cr_assert_eq(lx_kvcache_layer_rows(&a, NULL, 1, 160, NULL), 160, "the global layer");
    cr_assert_eq(lx_kvcache_layer_rows(&a, NULL, 0, 60, NULL), 60, "no ring where it would not be smaller");
    /* the bytes: 26 layers, 4 global (local_every 6), one key/value head of 256, a window of 512, 32,768
    ** tokens: 22 layers keep 576 rows of 2 x 256 floats in place of 32,768, and the cache gathers a
    ** ring's rows into 3 x T x 256 floats and keeps the local layers' rotary row (256 doubles) */
    struct lx_arch g = a, whole;
    g.layers = 26, g.heads = 4, g.kv_heads = 1, g.d_head = 256, g.local_every = 6, g.local_window = 512;
    whole = g;
    whole.local_every = 0;
    double T = 32768, ring = lx_kvcache_bytes(&g, NULL, 1, (int)T, 0, 0),
           all = lx_kvcache_bytes(&whole, NULL, 1, (int)T, 0, 0);
    cr_expect_eq(all - ring, 22 * (T - 576) * 2 * 256 * 4 - omp_get_max_threads() * 3 * T * 256 * 4 - 256 * 8,
                 "%.0f - %.0f (a gathering buffer per thread)", all, ring);
    static const char *const ms[] = {"rope", "[rope, {zerosink: {learned: true}}]", "[alibi, {window: {size: 7}}]"};
    for (int bf16 = 0; bf16 < 2; bf16++) {
        lx_kv_set(bf16);
        for (size_t s = 0; s < sizeof ms / sizeof *ms; s++)
            steps_vs_full_at(ms[s], 3, 160, bf16 ? 5e-2 : TOL);
    }
    lx_kv_set(0);
}

/* Any layer under a window keeps its sinks and a ring: on model 0 (no local layers) at 160 tokens,
** StreamingLLM's 3 sinks and 6 recent keys in 3 + 7 + LX_KVCACHE_REWIND = 74 rows (its far keys,
** the re-indexed sinks, kept beside them), the window's 9 in 73, LM-Infinite's 4 global keys and
** local band of 8 in 76, bca's two blocks of 6 in 76, ALiBi's bias under a streaming cache, and the
** zero sink's logit, log-n's row scale (tabulated anew each step); every step past the ring's
** size reads rows it has wrapped over, in an fp32
** cache and a bf16 one (tolerances as for the local layers' rings). Without a window nothing
** changes (cap T). The plan counts the ring: T - 74 rows fewer a layer, less the gathering rows. */
Test(decode, windows_keep_their_sinks_and_a_ring, .timeout = 120)
{
    static const struct { const char *stack; long cap, keep; } ms[] = {
        {"[rope, {streaming: {sinks: 3, recent: 6}}]", 3 + 7 + LX_KVCACHE_REWIND, 3},
        {"[rope, {window: {size: 9}}]", 9 + LX_KVCACHE_REWIND, 0},
        {"[rope, {lminfinite: {n_global: 4, local: 8}}]", 4 + 8 + LX_KVCACHE_REWIND, 4},
        {"[rope, {bca: {block: 6}}]", 12 + LX_KVCACHE_REWIND, 0},
        {"[alibi, {streaming: {sinks: 2, recent: 5}}]", 2 + 6 + LX_KVCACHE_REWIND, 2},
        {"[rope, zerosink, {streaming: {sinks: 1, recent: 4}}]", 1 + 5 + LX_KVCACHE_REWIND, 1},
        {"[rope, logn, {streaming: {sinks: 3, recent: 6}}]", 3 + 7 + LX_KVCACHE_REWIND, 3},
        {"[alibi, logn, {streaming: {sinks: 2, recent: 5}}]", 2 + 6 + LX_KVCACHE_REWIND, 2},
        {"rope", 160, 0},
    };
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.heads = 2, a.d_head = 16;
    lx_params_finish(&lx_arch_schema, &a);
    for (size_t s = 0; s < sizeof ms / sizeof *ms; s++) {
        struct tstack st;
        struct lx_facts f = tfacts(16, 8, 2, 160);
        tstack_make(&st, ms[s].stack, &f);
        long keep = -1;
        cr_expect_eq(lx_kvcache_layer_rows(&a, &st.spec, 1, 160, &keep), ms[s].cap, "%s", ms[s].stack);
        cr_expect_eq(keep, ms[s].keep, "%s", ms[s].stack);
        int far = lx_decode_far(&st.spec);
        double whole = lx_kvcache_bytes(&a, NULL, 1, 160, far, 0),
               ring = lx_kvcache_bytes(&a, &st.spec, 1, 160, far, 0);
        double rows = 2.0 * (160 - ms[s].cap) * 2 * a.heads * a.d_head * 4 * (far ? 1.5 : 1.0);
        cr_expect_eq(whole - ring, ms[s].cap < 160 ? rows - omp_get_max_threads() * 3.0 * 160 * a.d_head * 4 : 0.0,
                     "%s: %.0f - %.0f",
                     ms[s].stack, whole, ring);
        unsigned uses = LX_RUN_KVCACHE | LX_RUN_ANSWER | (far ? LX_RUN_KVFAR : 0);     /* what the plan asks */
        cr_expect_eq(lx_eval_bytes(&a, NULL, 0, 0, 1, 160, uses) - lx_eval_bytes(&a, &st.spec, 0, 0, 1, 160, uses),
                     whole - ring, "%s: the plan counts the ring", ms[s].stack);
        tstack_free(&st);
    }
    for (int bf16 = 0; bf16 < 2; bf16++) {
        lx_kv_set(bf16);
        for (size_t s = 0; s + 1 < sizeof ms / sizeof *ms; s++)
            steps_vs_full_at(ms[s].stack, s % 3, 160, bf16 ? 5e-2 : TOL);
    }
    lx_kv_set(0);
}

/* Passkey instances of 300 tokens answered with the cache and with full passes under stack on
** model kind, in portable numerics (the same logits either way), token for token. */
static void rewinds_as_full_passes(const char *stack, int kind)
{
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    enum { NS = 4, LEN = 300 };
    struct lx_model m;
    struct tstack st;
    struct lx_facts f = tfacts(16, 8, 2, LEN);
    tstack_make(&st, stack, &f);
    random_model(&m, kind, &st.spec, 41);
    const struct lx_task *t = lx_task_find("passkey");
    cr_assert_not_null(t);
    void *p = calloc(1, t->schema.size);
    lx_params_defaults(&t->schema, p);
    lx_params_finish(&t->schema, p);
    struct lx_instance in[NS];
    struct lx_answer fast[NS], ref[NS];
    struct lx_error err = {{0}};
    for (int i = 0; i < NS; i++) {
        cr_assert_eq(t->generate(p, 5, LEN, i, (i + 0.5) / NS, &in[i], &err), LX_OK, "%s", err.msg);
        for (long j = 0; j < in[i].n; j++)     /* bytes into the model's 64 ids */
            in[i].tok[j] %= (int)m.arch.vocab;
    }
    cr_assert_eq(lx_answer_eval(&m, &st.spec, in, NS, LX_DECODE_CACHE, fast, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_answer_eval(&m, &st.spec, in, NS, LX_DECODE_FULL, ref, &err), LX_OK, "%s", err.msg);
    long decoded = 0;
    for (int i = 0; i < NS; i++) {
        cr_expect_eq(fast[i].n_out, ref[i].n_out);
        cr_expect_eq(memcmp(fast[i].out, ref[i].out, sizeof(int) * (size_t)ref[i].n_out), 0,
                     "%s: instance %d: the cache's greedy answer differs from the full passes'", stack, i);
        decoded += fast[i].decoded;
        lx_instance_release(&in[i]);
    }
    cr_expect_gt(decoded, 0, "%s: some answers are decoded after a miss", stack);
    free(p);
    lx_model_release(&m);
    tstack_free(&st);
}

/* The answer reader rewinds the cache to an answer's first miss, up to LX_MAX_ANSWER rows before
** the end of the rows its pass cached: a ring keeps those too, a local layer's (model 3, rings of
** 69 rows) and StreamingLLM's (4 sinks and a ring of 21 + 64 rows on model 0). */
Test(decode, answers_rewind_within_a_ring, .timeout = 120)
{
    rewinds_as_full_passes("rope", 3);
    rewinds_as_full_passes("[rope, {streaming: {sinks: 4, recent: 20}}]", 0);
}

/* A step that rewrites a row: decoding after a different token at position p
** replaces the cached row, and far keys are turned again from the new one. */
Test(decode, a_rewritten_row_is_read_afresh)
{
    enum { T = 24 };
    static const char *const ms[] = {"rope", "[rope, {rerope: {window: 3, leak: 2}}]"};
    for (int s = 0; s < 2; s++) {
        struct lx_model m;
        struct tstack st;
        struct lx_facts f = tfacts(16, 8, 2, T);
        tstack_make(&st, ms[s], &f);
        random_model(&m, 1, NULL, 11);
        long V = m.arch.vocab;
        int tok[T], alt[T];
        for (int t = 0; t < T; t++)
            tok[t] = alt[t] = (t * 13 + 5) % (int)V;
        for (int t = 12; t < T; t++)
            alt[t] = (t * 7 + 1) % (int)V;      /* the same up to 12, then another text */
        struct lx_acts full, a;
        struct lx_kvcache c;
        struct lx_error err = {{0}};
        cr_assert_eq(lx_acts_alloc(&full, &m.arch, 1, T, 0, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(lx_acts_alloc(&a, &m.arch, 1, T, 0, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(lx_kvcache_alloc(&c, &m.arch, &st.spec, 1, T, &err), LX_OK, "%s", err.msg);
        a.kv = &c;
        lx_model_forward(&m, &st.spec, tok, NULL, &a);     /* the cache holds tok's 24 rows */
        float *lg = malloc(sizeof(float) * (size_t)V);
        for (int p = 20; p < T; p++)    /* far keys of rows < 20 turned from tok's rows */
            lx_decode_step(lg, &m, &st.spec, &c, 0, p, tok[p]);
        lx_model_forward(&m, &st.spec, alt, NULL, &full);
        double worst = 0.0;
        for (int p = 12; p < T; p++) {  /* now alt from 12 on: rows 12.. are rewritten */
            lx_decode_step(lg, &m, &st.spec, &c, 0, p, alt[p]);
            double e = rel_err(lg, full.logits + (long)p * V, V);
            worst = e > worst ? e : worst;
        }
        cr_expect_leq(worst, TOL, "%s: rewritten rows, worst %g", ms[s], worst);
        free(lg);
        lx_kvcache_release(&c);
        lx_acts_release(&a);
        lx_acts_release(&full);
        lx_model_release(&m);
        tstack_free(&st);
    }
}

Test(decode, generate_by_the_cache_equals_full_passes, .timeout = 60)
{
    static const char *const ms[] = {"rope", "alibi", "[alibi, pi]", "[rope, {rerope: {window: 6, leak: 2}}]",
                                     "[rope, {streaming: {sinks: 2, recent: 8}}]", "[rope, {cosscale: {s: 8}}]",
                                     "[rope, {lminfinite: {n_global: 2, local: 6, limit: 6}}, infoscale]",
                                     "[{t5bias: {buckets: 8, max_distance: 20}}, {streaming: {sinks: 2, recent: 8}}]",
                                     "[rope, {randpos: {target: 64}}]"};    /* 40 positions drawn from 64 */
    enum { NP = 17, NG = 24 };
    for (size_t s = 0; s < sizeof ms / sizeof *ms; s++)
        for (int kind = 0; kind < 3; kind++) {
            struct lx_model m;
            struct tstack st;
            struct lx_facts f = tfacts(16, 8, 2, NP + NG);
            tstack_make(&st, ms[s], &f);
            random_model(&m, kind, &st.spec, 21 + (uint64_t)s);
            int prompt[NP], got[NG], want[NG];
            for (int t = 0; t < NP; t++)
                prompt[t] = (t * 11 + (int)s) % (int)m.arch.vocab;
            struct lx_error err = {{0}};
            cr_assert_eq(lx_generate(&m, &st.spec, prompt, NP, NG, got, LX_DECODE_CACHE, &err), LX_OK, "%s", err.msg);
            cr_assert_eq(lx_generate(&m, &st.spec, prompt, NP, NG, want, LX_DECODE_FULL, &err), LX_OK, "%s", err.msg);
            int same = 0;
            while (same < NG && got[same] == want[same])
                same++;
            cr_expect_eq(same, NG, "%s (model %d): tokens differ from %d on", ms[s], kind, same);
            lx_model_release(&m);
            tstack_free(&st);
        }
}

Test(decode, bad_input_is_refused)
{
    struct lx_model m;
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 1, a.d_model = 16, a.heads = 2, a.d_head = 8, a.d_mlp = 16, a.vocab = 32;
    a.mode = LX_MODEL_MLM;
    lx_params_finish(&lx_arch_schema, &a);
    lx_model_init(&m, &a, 1);
    struct tstack st;
    struct lx_facts f = tfacts(8, 8, 2, 16);
    tstack_make(&st, "rope", &f);
    int prompt[4] = {1, 2, 3, 4}, out[4];
    struct lx_error err = {{0}};
    cr_expect_eq(lx_generate(&m, &st.spec, prompt, 4, 4, out, LX_DECODE_CACHE, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "causal") != NULL, "%s", err.msg);
    m.arch.mode = LX_MODEL_CAUSAL;
    cr_expect_eq(lx_generate(&m, &st.spec, prompt, 0, 4, out, LX_DECODE_CACHE, &err), LX_EINVAL);
    prompt[2] = 32;
    cr_expect_eq(lx_generate(&m, &st.spec, prompt, 4, 4, out, LX_DECODE_CACHE, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "vocabulary") != NULL, "%s", err.msg);
    tstack_free(&st);
    f.length = 8;
    tstack_make(&st, "[rope, {randpos: {target: 8}}]", &f);      /* 4 + 8 − 1 positions, drawn from 8 */
    prompt[2] = 3;
    int more[8];
    cr_expect_eq(lx_generate(&m, &st.spec, prompt, 4, 8, more, LX_DECODE_CACHE, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "randpos") && strstr(err.msg, "L = 8"), "%s", err.msg);
    cr_expect_eq(lx_generate(&m, &st.spec, prompt, 4, 5, more, LX_DECODE_CACHE, &err), LX_OK, "%s", err.msg);
    lx_model_release(&m);
    tstack_free(&st);
}

/* ---- memory ------------------------------------------------------------------------ */

extern const struct lx_task lx_task_ppl, lx_task_passkey;

Test(decode, the_memory_plan_counts_the_cache)
{
    struct lx_arch a = {.mode = LX_MODEL_CAUSAL, .layers = 3, .d_model = 64, .heads = 4, .kv_heads = 2,
                        .d_head = 16, .d_mlp = 128, .mlp = LX_MLP_GELU, .vocab = 260, .norm_eps = 1e-5,
                        .init_std = 0.02};
    for (int T = 1024; T <= 16384; T *= 4) {
        double kv = 3.0 * T * 2 * 16 * 2 * 4;   /* layers · T · kv_heads · d_head · (k, v) · 4 bytes */
        double plain = lx_run_bytes(&a, 1, T, 0, LX_RUN_PROBS);
        double with = lx_run_bytes(&a, 1, T, 0, LX_RUN_PROBS | LX_RUN_KVCACHE);
        double far = lx_run_bytes(&a, 1, T, 0, LX_RUN_PROBS | LX_RUN_KVCACHE | LX_RUN_KVFAR);
        /* the cache, plus one step's scratch: O(T) scores and tables a thread, O(d) rows */
        cr_expect(with - plain >= kv && with - plain <= kv + 64.0 * T + 1e5,
                  "T %d: cache counted as %.0f bytes, want %.0f + scratch", T, with - plain, kv);
        cr_expect(fabs(far - with - kv / 2) < 1.0, "T %d: far keys add %.0f bytes, want %.0f", T, far - with, kv / 2);
        cr_expect_eq(lx_run_bytes(&a, 2, T, 0, LX_RUN_KVCACHE) - lx_run_bytes(&a, 2, T, 0, 0),
                     lx_kvcache_bytes(&a, NULL, 2, T, 0, 0));
    }
    cr_expect_eq(lx_task_passkey.decodes, 1);
    cr_expect_eq(lx_task_ppl.decodes, 0);
}

/* ---- a trained model, read far past its training length ---------------------------- */

/* A passkey model (short template, 3-digit keys, grouped-query attention)
** trained for 150 steps at 128 tokens: it has learnt the filler and the
** answer's shape (peaked logits, unlike a random model's) but not yet the
** key, so its answers are wrong from the first digit on and decoded. */
static void *trained_passkey(struct lx_model *m, const struct lx_task **task)
{
    const struct lx_task *t = lx_task_find("passkey");
    cr_assert_not_null(t);
    void *p = calloc(1, t->schema.size);
    lx_params_defaults(&t->schema, p);
    struct lx_doc doc;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_doc_load_text(&doc, "{template: short, digits: 3}", "p.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_params_apply(&t->schema, p, doc.root, "passkey", &err), LX_OK, "%s", err.msg);
    lx_doc_release(&doc);
    lx_params_finish(&t->schema, p);
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 32, a.heads = 4, a.kv_heads = 2, a.d_head = 8, a.d_mlp = 64;
    lx_params_finish(&lx_arch_schema, &a);
    lx_model_init(m, &a, 3);
    struct lx_train_cfg cfg;
    lx_params_defaults(&lx_train_schema, &cfg);
    cfg.length = 128, cfg.batch = 8, cfg.steps = 150, cfg.warmup = 20, cfg.eval_every = 150, cfg.eval_windows = 2;
    lx_params_finish(&lx_train_schema, &cfg);
    const struct lx_corpus_tokens *corpus;
    cr_assert_eq(lx_corpus_tokens(&corpus, "train", &lx_byte_tokenizer, &err), LX_OK, "%s", err.msg);
    struct lx_mix mix = {.name = "passkey", .weight = 1.0, .params = p, .sample = t->train_sample, .check = t->check};
    struct tstack st;
    struct lx_facts f = tfacts(8, 128, 4, 128);
    f.training = 1;
    tstack_make(&st, "rope", &f);
    struct lx_train_report rep;
    cr_assert_eq(lx_train(m, &st.spec, &cfg, 77, corpus, &lx_byte_tokenizer, &mix, 1, NULL, NULL, NULL, &rep, &err), LX_OK,
                 "%s", err.msg);
    cr_log_info("trained in %.2f s, loss %.3f", rep.seconds, rep.train_loss);
    tstack_free(&st);
    *task = t;
    return p;
}

/* In portable numerics: a model trained on passkey is unsure of its digits, and
** the cache's one-row products and the full passes' whole-window ones sum in
** different orders, so in fast numerics a near tie between two digits could
** go either way on another kernel set. In portable numerics every product is
** one fixed-order chain per element, whatever its shape: the two paths give
** the same logits, and the answers must be equal token for token. */
Test(decode, trained_answers_by_the_cache_equal_full_passes, .timeout = 300)
{
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    struct lx_model m;
    const struct lx_task *t;
    void *p = trained_passkey(&m, &t);
    static const char *const ms[] = {
        "rope", "[rope, {yarn: {scale: 16}}]", "[rope, {rerope: {window: 64}}]",
        "[rope, {rerope: {window: 64, leak: 16}}]", "[rope, {streaming: {sinks: 4, recent: 124}}]",
        "[rope, lminfinite]", "[rope, {window: {size: 128}}, {logn: {mode: su}}]",
        "[rope, {randpos: {target: 1024}}]",    /* a pass and the steps after it at one draw */
    };
    enum { NS = 4 };
    long n_wrong = 0, n_right = 0, n_decoded = 0;
    for (long len = 128; len <= 1024; len *= 8)     /* 1x, 8x */
        for (size_t s = 0; s < sizeof ms / sizeof *ms; s++) {
            struct tstack st;
            struct lx_facts f = tfacts(8, 128, 4, len);
            tstack_make(&st, ms[s], &f);
            struct lx_instance in[NS];
            struct lx_answer fast[NS], ref[NS];
            struct lx_error err = {{0}};
            for (int i = 0; i < NS; i++)
                cr_assert_eq(t->generate(p, 99, len, i, (i + 0.5) / NS, &in[i], &err), LX_OK, "%s", err.msg);
            cr_assert_eq(lx_answer_eval(&m, &st.spec, in, NS, LX_DECODE_CACHE, fast, &err), LX_OK, "%s", err.msg);
            cr_assert_eq(lx_answer_eval(&m, &st.spec, in, NS, LX_DECODE_FULL, ref, &err), LX_OK, "%s", err.msg);
            for (int i = 0; i < NS; i++) {
                cr_expect_eq(fast[i].n_out, ref[i].n_out);
                cr_expect_eq(memcmp(fast[i].out, ref[i].out, sizeof(int) * (size_t)ref[i].n_out), 0,
                             "%s at %ld, instance %d: the cache's greedy answer differs from the full passes'",
                             ms[s], len, i);
                cr_expect_eq(fast[i].logprob, ref[i].logprob, "the same teacher-forced pass");
                cr_expect_eq(fast[i].decoded, ref[i].forwards - 1, "%s at %ld: a step for each further pass",
                             ms[s], len);
                n_right += fast[i].correct_tf;
                n_wrong += !fast[i].correct_tf;
                n_decoded += fast[i].decoded;
                lx_instance_release(&in[i]);
            }
            tstack_free(&st);
        }
    cr_expect_gt(n_decoded, 20, "too few wrong answers to compare decoding (%ld wrong, %ld decoded)", n_wrong,
                 n_decoded);
    cr_log_info("trained passkey: %ld right, %ld wrong, %ld tokens decoded", n_right, n_wrong, n_decoded);
    free(p);
    lx_model_release(&m);
}
