/*
** tests/test_tiled_bwd.c - the tiled attention backward (harness/engine/kernels/tiled_bwd.c)
** against the materialised head path (lx_attn_head_forward/_backward, the
** reference training used before) on every feature a trainable stack can
** have: rotary frequencies of every trainable method, ALiBi, LogN / SSMax /
** InfoScale row scales (and SSMax's learned multipliers), scale-invariant
** a_t·S + m_t, CosScale's geometry, NoPE, two distance ops at once; causal and
** bidirectional, multi-head and grouped-query heads in the model's fused qkv
** rows, at sizes around the tile edges (T below one tile, T a multiple plus
** one, T past several tiles, unequal query and key tiles); dq, dk, dv
** against finite differences of the naive forward on a tiny case; every
** parameter's gradient of a whole model on both training paths; and 20
** training steps at length 256 on both (the loss of every step).
**
** Errors are normwise relative: max |tiled − ref| / max |ref| over each of
** dq, dk, dv.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/numerics.h"
#include "harness/core/rng.h"
#include "harness/engine/data/corpus.h"
#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/gemm.h"
#include "harness/engine/model/model.h"
#include "harness/engine/model/train.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "tests/model_stacks.h"     /* stacks[], rel_err(), unit_qk_rows() */
#include "tests/stack.h"

#define TOL 1e-5

/* Besides the stacks of tests/model_stacks.h training can run: two distance
** ops and a row scale without the streaming sinks they come with there, and
** CosScale with a distance op. */
static const char *const more_stacks[] = {
    "[alibi, {scaleinv: {tau: 2}}, infoscale]",
    "[rope, {cosscale: {s: 8}}, {scaleinv: {tau: 2}}]",
};

static void fill(float *x, long n, uint32_t stream, float scale)
{
    struct lx_rng r;
    lx_rng_init(&r, 919, stream, LX_RNG_INIT);
    for (long i = 0; i < n; i++)
        x[i] = scale * (float)lx_rng_normal(&r);
}

/* The error of one part (0 q, 1 k, 2 v) of fused gradient rows. */
/* The learned multipliers of a stack that has them, one per head (at most 8). */
static const float mults[8] = {0.5f, 1.7f, 1.1f, 0.9f, 2.0f, 0.3f, 1.0f, 1.3f};

static double part_err(const float *got, const float *ref, int T, int H, int KV, int D, int part)
{
    long ld = (long)(H + 2 * KV) * D, off = part == 0 ? 0 : part == 1 ? (long)H * D : (long)(H + KV) * D;
    long w = part == 0 ? (long)H * D : (long)KV * D;
    float *a = malloc(sizeof(float) * (size_t)(T * w)), *b = malloc(sizeof(float) * (size_t)(T * w));
    for (long t = 0; t < T; t++) {
        memcpy(a + t * w, got + t * ld + off, sizeof(float) * (size_t)w);
        memcpy(b + t * w, ref + t * ld + off, sizeof(float) * (size_t)w);
    }
    double e = rel_err(a, b, T * w);
    free(a), free(b);
    return e;
}

/* One window's tiled forward and backward of fused qkv rows (filled from streams 1 and 2, q
** and k rows made unit for a cosine stack; with round, qkv and dO rounded to bf16 first, as
** the model hands them over in numerics bf16), the backward's tiles multiplied as products and
** bf16_plain say: the gradients (T rows of (H + 2·KV)·D, to free) and, into the buffers given,
** its inputs qkv and dO and the forward's output o. */
static float *tiled_grads(const struct tstack *st, int T, int H, int KV, int D, int causal, int bq, int bk,
                          int products, int bf16_plain, int round, float *qkv_out, float *dO_out, float *o_out)
{
    long ld = (long)(H + 2 * KV) * D, HD = (long)H * D, KD = (long)KV * D, nqkv = T * ld;
    float *qkv = malloc(sizeof(float) * nqkv), *dO = malloc(sizeof(float) * T * HD), *o = malloc(sizeof(float) * T * HD);
    float *g = calloc((size_t)nqkv, sizeof(float)), *lse = malloc(sizeof(float) * (size_t)H * T);
    fill(qkv, nqkv, 1, 1.0f), fill(dO, T * HD, 2, 1.0f);
    if (st->spec.cosine)
        unit_qk_rows(qkv, T, H, KV, D);
    if (round)
        lx_round_bf16_n(qkv, (size_t)nqkv), lx_round_bf16_n(dO, (size_t)(T * HD));
    const float *mu = st->spec.learn_scale ? mults : NULL;
    struct lx_attn_shape sh = {.T = T, .H = H, .KV = KV, .D = D, .ld = (int)ld, .ldo = (int)HD, .causal = causal};
    int nthr = omp_get_max_threads();
    size_t ntab = (size_t)lx_tile_tab_rows(&st->spec) * H * T;
    struct lx_tile_ws fw = {.bq = bq, .bk = bk, .n_thr = nthr, .lse = lse, .bf16_plain = bf16_plain};
    fw.scratch = malloc(sizeof(float) * lx_tile_thread_floats(bq, bk, D) * (size_t)nthr);
    fw.tab = ntab ? malloc(sizeof(double) * ntab) : NULL;
    lx_attn_tiled_forward(o, qkv, qkv + HD, qkv + HD + KD, &st->spec, mu, &sh, &fw);
    struct lx_tile_bwd_ws bw = {.bq = bq, .bk = bk, .n_thr = nthr, .tab = fw.tab, .products = products,
                                .bf16_plain = bf16_plain};
    bw.scratch = malloc(sizeof(float) * lx_tile_bwd_thread_floats(bq, bk, D, T) * (size_t)nthr);
    bw.dkv = H > KV ? malloc(sizeof(float) * (size_t)H * T * 2 * D) : NULL;
    lx_attn_tiled_backward(g, g + HD, g + HD + KD, dO, o, lse, qkv, qkv + HD, qkv + HD + KD, &st->spec, mu, &sh, &bw);
    if (qkv_out)
        memcpy(qkv_out, qkv, sizeof(float) * nqkv);
    if (dO_out)
        memcpy(dO_out, dO, sizeof(float) * T * HD);
    if (o_out)
        memcpy(o_out, o, sizeof(float) * T * HD);
    free(qkv), free(dO), free(o), free(lse), free(fw.scratch), free(fw.tab), free(bw.scratch), free(bw.dkv);
    return g;
}

/* Tiled forward + backward (blocks bq × bk) against the materialised head
** path on one window of fused qkv rows, H query heads on KV key/value heads. */
static void compare(const char *stack, int T, int H, int KV, int D, int causal, int bq, int bk)
{
    struct lx_facts f = tfacts(D, 6, H, T);
    struct tstack st;
    tstack_make(&st, stack, &f);
    int G = H / KV;
    long ld = (long)(H + 2 * KV) * D, HD = (long)H * D, KD = (long)KV * D, nqkv = T * ld;
    float *qkv = malloc(sizeof(float) * nqkv), *dO = malloc(sizeof(float) * T * HD);
    float *o_ref = malloc(sizeof(float) * T * HD), *o_t = malloc(sizeof(float) * T * HD);
    float *g_ref = calloc((size_t)nqkv, sizeof(float));
    float *P = malloc(sizeof(float) * (size_t)H * T * T), *dP = malloc(sizeof(float) * (size_t)T * T);
    double *tab = malloc(sizeof(double) * 2 * (size_t)T);
    cr_assert_leq(H, 8);
    float *g_t = tiled_grads(&st, T, H, KV, D, causal, bq, bk, LX_BWD_PRODUCTS_AUTO, 0, 0, qkv, dO, o_t);
    const float *mu = st.spec.learn_scale ? mults : NULL;
    struct lx_attn_shape sh = {.T = T, .H = H, .KV = KV, .D = D, .ld = (int)ld, .ldo = (int)HD, .causal = causal};

    /* the materialised path, as training ran it: a group's heads in order */
    for (int h = 0; h < H; h++) {
        long kof = HD + (long)(h / G) * D;
        struct lx_attn_ws hw = {.tab = tab, .mult = mu ? mu[h] : 1.0f};
        lx_attn_head_forward(o_ref + h * D, P + (long)h * T * T, qkv + h * D, qkv + kof, qkv + kof + KD, &st.spec, h,
                             &sh, &hw);
        lx_attn_head_backward(g_ref + h * D, g_ref + kof, g_ref + kof + KD, dO + h * D, P + (long)h * T * T, dP,
                              qkv + h * D, qkv + kof, qkv + kof + KD, &st.spec, h, &sh, tab, mu ? mu[h] : 1.0f, NULL);
    }

    const char *name[3] = {"dq", "dk", "dv"};
    double eo = rel_err(o_t, o_ref, T * HD);
    cr_expect_leq(eo, TOL, "%s T=%d H=%d KV=%d %s blocks %dx%d: output %g", stack, T, H, KV,
                  causal ? "causal" : "bidirectional", bq, bk, eo);
    for (int part = 0; part < 3; part++) {
        double e = part_err(g_t, g_ref, T, H, KV, D, part);
        cr_expect_leq(e, TOL, "%s T=%d H=%d KV=%d %s blocks %dx%d: %s tiled vs materialised %g", stack, T, H, KV,
                      causal ? "causal" : "bidirectional", bq, bk, name[part], e);
    }
    free(qkv), free(dO), free(o_ref), free(o_t), free(g_ref), free(g_t), free(P), free(dP), free(tab);
    tstack_free(&st);
}

/* Stack s of stacks[] then more_stacks[] compiled into st; 0 (and nothing
** to free) past the end or when training could not hold it (sinks, far
** keys, a calibration; a window it holds). */
static int train_stack(size_t s, struct tstack *st, const char **name, int D, int H, int T)
{
    size_t n0 = sizeof stacks / sizeof *stacks;
    *name = s < n0 ? stacks[s] : more_stacks[s - n0];
    struct lx_facts f = tfacts(D, 6, H, T);
    tstack_make(st, *name, &f);
    const struct lx_spec *sp = &st->spec;
    if (sp->vis.sinks || sp->posmap.method || sp->calibrate) {
        tstack_free(st);
        return 0;
    }
    return 1;
}

#define N_ALL (sizeof stacks / sizeof *stacks + sizeof more_stacks / sizeof *more_stacks)

Test(tiled_bwd, every_trainable_feature_at_odd_sizes, .timeout = 240)
{
    static const int Ts[] = {1, 3, 4, 5, 13};      /* tiles of 4: below, at, +1, past three */
    int ran = 0;
    for (size_t s = 0; s < N_ALL; s++) {
        struct tstack st;
        const char *name;
        if (!train_stack(s, &st, &name, 8, 3, 13))
            continue;
        tstack_free(&st);
        ran++;
        for (size_t t = 0; t < sizeof Ts / sizeof *Ts; t++)
            for (int causal = 0; causal < 2; causal++)
                compare(name, Ts[t], 3, 3, 8, causal, 4, 4);
    }
    cr_expect_geq(ran, 20, "only %d trainable stacks", ran);
}

Test(tiled_bwd, grouped_query_heads_and_unequal_tiles, .timeout = 240)
{
    for (size_t s = 0; s < N_ALL; s++) {
        struct tstack st;
        const char *name;
        if (!train_stack(s, &st, &name, 16, 4, 37))
            continue;
        tstack_free(&st);
        for (int causal = 0; causal < 2; causal++) {
            compare(name, 37, 4, 2, 16, causal, 8, 5);      /* GQA */
            compare(name, 37, 4, 1, 8, causal, 3, 16);      /* multi-query */
        }
    }
}

Test(tiled_bwd, past_one_training_tile_with_threads, .timeout = 240)
{
    /* the training tiles themselves, T past one of them and not a multiple */
    omp_set_num_threads(2);
    static const char *const ms[] = {"rope", "[rope, {logn: {mode: ssmax, learn: true}}]",
                                     "[alibi, {scaleinv: {tau: 2}}, infoscale]", "[rope, {cosscale: {s: 8}}]"};
    for (size_t s = 0; s < sizeof ms / sizeof *ms; s++)
        for (int causal = 0; causal < 2; causal++) {
            compare(ms[s], LX_TILE_TRAIN_BQ + 37, 4, 2, 16, causal, LX_TILE_TRAIN_BQ, LX_TILE_TRAIN_BK);
            compare(ms[s], 2 * LX_TILE_TRAIN_BQ + 1, 2, 2, 32, causal, LX_TILE_TRAIN_BQ, LX_TILE_TRAIN_BK);
        }
    omp_set_num_threads(1);
}

/* ---- finite differences of the new code ------------------------------------------ */

enum { FT = 7, FH = 2, FD = 4, FN = FT * FH * FD };

struct fdc {
    float q[FN], k[FN], v[FN], w[FN];   /* (T, H, D) each; w weighs the output in the loss */
    struct lx_spec *spec;
    int causal;
};

/* Σ o ∘ w through the naive forward. */
static double fd_loss(const struct fdc *c)
{
    float o[FN], att[FH * FT * FT];
    lx_attention_forward(o, att, c->q, c->k, c->v, c->spec, FT, FH, FD, c->causal);
    double s = 0.0;
    for (int i = 0; i < FN; i++)
        s += (double)o[i] * c->w[i];
    return s;
}

Test(tiled_bwd, finite_differences)
{
    static const char *const ms[] = {"rope", "[alibi, {scaleinv: {tau: 2}}, infoscale]",
                                     "[rope, {logn: {mode: ssmax, s: 0.7}}]", "[rope, {yarn: {scale: 4}}]"};
    for (size_t s = 0; s < sizeof ms / sizeof *ms; s++)
        for (int causal = 0; causal < 2; causal++) {
            struct lx_facts f = tfacts(FD, 3, FH, FT);
            struct tstack st;
            tstack_make(&st, ms[s], &f);
            struct fdc c = {.spec = &st.spec, .causal = causal};
            fill(c.q, FN, 11, 1.0f), fill(c.k, FN, 12, 1.0f), fill(c.v, FN, 13, 1.0f), fill(c.w, FN, 14, 1.0f);
            /* the tiled pair on tiles of 3 queries × 2 keys */
            float o[FN], lse[FH * FT], g[3][FN] = {{0}};
            struct lx_attn_shape sh = {.T = FT, .H = FH, .KV = FH, .D = FD, .ld = FH * FD, .ldo = FH * FD,
                                       .causal = causal};
            size_t ntab = (size_t)lx_tile_tab_rows(&st.spec) * FH * FT;
            float fs[64 * 8], bs[64 * 8];
            double tab[4 * FH * FT];
            cr_assert_leq(ntab, sizeof tab / sizeof *tab);
            cr_assert_leq(lx_tile_thread_floats(3, 2, FD), 64);
            cr_assert_leq(lx_tile_bwd_thread_floats(3, 2, FD, FT), 64);
            struct lx_tile_ws fw = {.bq = 3, .bk = 2, .n_thr = 8, .scratch = fs, .tab = tab, .lse = lse};
            struct lx_tile_bwd_ws bw = {.bq = 3, .bk = 2, .n_thr = 8, .scratch = bs, .tab = tab};
            cr_assert_leq(omp_get_max_threads(), 8);
            lx_attn_tiled_forward(o, c.q, c.k, c.v, &st.spec, NULL, &sh, &fw);
            lx_attn_tiled_backward(g[0], g[1], g[2], c.w, o, lse, c.q, c.k, c.v, &st.spec, NULL, &sh, &bw);
            float *xs[3] = {c.q, c.k, c.v};
            const char *name[3] = {"dq", "dk", "dv"};
            for (int p = 0; p < 3; p++)
                for (int i = 0; i < FN; i++) {
                    float keep = xs[p][i], h = 1e-2f;
                    xs[p][i] = keep + h;
                    double up = fd_loss(&c);
                    xs[p][i] = keep - h;
                    double dn = fd_loss(&c);
                    xs[p][i] = keep;
                    double num = (up - dn) / (2.0 * h);
                    cr_expect(fabs(num - g[p][i]) <= 2e-3 + 3e-3 * fabs(num), "%s %s %s[%d]: tiled %g, numeric %g",
                              ms[s], causal ? "causal" : "bidirectional", name[p], i, g[p][i], num);
                }
            tstack_free(&st);
        }
}

/* ---- whole-model gradients: the tiled path against the materialised one ------------ */

enum { MT = 300, MB = 2, MV = 40 };    /* T past the forward's 256-row tile and two 128-row training tiles */

/* Every parameter's gradient of the mean loss over MB windows of MT tokens
** on the training path `path` (LX_ACTS_TRAIN_*); loss into *loss. */
static float *model_grads(const struct lx_model *m, const struct lx_spec *spec, const int *tok, const int *tgt,
                          const int *pos, int path, double *loss)
{
    struct lx_acts a;
    struct lx_error err = {""};
    cr_assert_eq(lx_acts_alloc(&a, &m->arch, MB, MT, path, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(a.tiled, path == LX_ACTS_TRAIN_TILED);
    cr_assert_eq(a.att == NULL && a.dp == NULL, path == LX_ACTS_TRAIN_TILED, "T x T buffers only when materialised");
    a.pos = pos;
    float *g = calloc(m->n_params, sizeof *g);
    struct lx_weights gv;
    lx_weights_map(&gv, &m->arch, g);
    *loss = lx_model_forward(m, spec, tok, tgt, &a);
    lx_model_backward(m, spec, tok, tgt, &a, &gv);
    lx_weights_unmap(&gv);
    lx_acts_release(&a);
    return g;
}

static void model_compare(const char *stack, int mode, long kv)
{
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.mode = mode, a.layers = 2, a.d_model = 16, a.heads = 4, a.kv_heads = kv, a.d_head = 4, a.d_mlp = 24;
    a.vocab = MV, a.init_std = 0.3;
    struct lx_error err = {""};
    cr_assert_eq(lx_arch_resolve(&a, &err), LX_OK, "%s", err.msg);
    struct lx_facts f = tfacts(4, 64, 4, MT);
    f.bidirectional = mode != LX_MODEL_CAUSAL;
    struct tstack st;
    struct lx_error why;
    if (tstack_try(&st, stack, &f, &why) < 0) {     /* a causal-only stack (xpos) on the masked LM */
        cr_expect(mode != LX_MODEL_CAUSAL, "%s: %s", stack, why.msg);
        tstack_free(&st);
        return;
    }
    a.logit_scale = st.spec.learn_scale;
    a.sinks = st.spec.zsink.learn;
    lx_arch_learn_rel(&a, &st.spec.rel);
    struct lx_model m;
    lx_model_init(&m, &a, 31);
    for (long l = 0; a.sinks && l < a.layers; l++)      /* each layer's and head's own */
        for (long h = 0; h < a.heads; h++)
            m.v.layer[l].sink[h] = (float)(0.8 * (double)h - 0.5 * (double)l - 1.0);
    for (long k = 0; k < a.heads * lx_arch_rel_values(&a); k++)    /* every value its own, away from 0 */
        m.v.rel_bias[k] = (float)(0.5 + 0.4 * sin(0.9 * (double)k + 0.3));
    for (long l = 0; a.logit_scale && l < a.layers; l++)   /* away from 1 */
        for (long h = 0; h < a.heads; h++)
            m.v.layer[l].logit_scale[h] = (float)(0.7 + 0.2 * (double)(h + l));
    int tok[MB * MT], tgt[MB * MT], pos[MB * MT];
    for (int i = 0; i < MB * MT; i++) {
        tok[i] = (i * 37 + 11) % 36;
        tgt[i] = mode == LX_MODEL_CAUSAL || i % 5 == 1 ? (i * 53 + 5) % 36 : -1;
        pos[i] = i % MT + (i % MT >= MT / 2 ? 700 : 0);     /* PoSE-like: two chunks with a skip */
    }
    double l_t, l_m;
    const int *p = st.spec.pose.method ? pos : NULL;
    float *gt = model_grads(&m, &st.spec, tok, tgt, p, LX_ACTS_TRAIN_TILED, &l_t);
    float *gm = model_grads(&m, &st.spec, tok, tgt, p, LX_ACTS_TRAIN_MATERIALISED, &l_m);
    cr_expect(fabs(l_t - l_m) <= 1e-6 * fabs(l_m), "%s: loss %.9g tiled vs %.9g materialised", stack, l_t, l_m);
    int n = lx_arch_tensors(&a, NULL);
    struct lx_tensor_info *ti = calloc((size_t)n, sizeof *ti);
    lx_arch_tensors(&a, ti);
    for (int t = 0; t < n; t++) {
        long cnt = ti[t].shape[0] * (ti[t].ndim == 2 ? ti[t].shape[1] : 1);
        /* T5's bias: a bucket's gradient sums P·(dP − D_i) over up to B·T·T/2 pairs whose terms cancel (each
        ** row's sum to 0, as Σ_j P_ij dP_ij = D_i); the two paths' float32 terms differ in their last bits, and
        ** that difference stays while the sum cancels: the relative error grows by Σ|terms| / |Σ terms|
        ** (1.0e-5 seen on the bidirectional case, 1e-6 causal), so 10x the other tensors' bound; KERPLE's
        ** learned parameters sum the same pairs (1.13e-5 seen, mlm, 2 threads) */
        double tol = strcmp(ti[t].name, "rel_bias") && strcmp(ti[t].name, "kerple") ? TOL : 10 * TOL;
        double e = rel_err(gt + ti[t].offset, gm + ti[t].offset, cnt);
        cr_expect_leq(e, tol, "%s %s kv %ld: gradient of %s, tiled vs materialised %g", stack,
                      mode == LX_MODEL_CAUSAL ? "causal" : "mlm", kv, ti[t].name, e);
    }
    free(ti), free(gt), free(gm);
    lx_model_release(&m);
    tstack_free(&st);
}

Test(tiled_bwd, model_gradients_equal_the_materialised_path, .timeout = 600)
{
    for (size_t s = 0; s < N_ALL; s++) {
        struct tstack st;
        const char *name;
        if (!train_stack(s, &st, &name, 4, 4, MT))
            continue;
        tstack_free(&st);
        for (int mode = 0; mode < 2; mode++) {
            model_compare(name, mode, 4);       /* multi-head */
            model_compare(name, mode, 2);       /* grouped-query */
        }
    }
}

/* ---- 20 training steps on both paths ---------------------------------------------- */

enum { TS = 20 };

static void record_loss(void *ctx, long step, long steps, double loss, double val, double tok_per_s)
{
    ((double *)ctx)[step - 1] = loss;
}

/* lx_train of m on the Austen training windows in bytes, under `stack`
** compiled as trained in at c's length (progress and ctx as lx_train's). */
static int train_austen(struct lx_model *m, const char *stack, const struct lx_train_cfg *c,
                        lx_train_progress progress, void *ctx, struct lx_train_report *rep, struct lx_error *err)
{
    struct lx_facts f = tfacts((int)m->arch.d_head, c->length, (int)m->arch.heads, c->length);
    f.training = 1;
    struct tstack st;
    tstack_make(&st, stack, &f);
    const struct lx_corpus_tokens *text;
    cr_assert_eq(lx_corpus_tokens(&text, "train", &lx_byte_tokenizer, err), LX_OK, "%s", err->msg);
    int rc = lx_train(m, &st.spec, c, 77, text, &lx_byte_tokenizer, NULL, 0, progress, ctx, NULL, rep, err);
    tstack_free(&st);
    return rc;
}

/* steps steps of a causal model (2 layers, width 32) at length 256 (two windows a
** step) on the Austen windows with stack `stack` into m (progress, ctx and rep as lx_train's). */
static void train_small(struct lx_model *m, const char *stack, long steps, lx_train_progress progress, void *ctx,
                        struct lx_train_report *rep)
{
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 32, a.heads = 2, a.d_head = 16, a.d_mlp = 64;
    lx_params_finish(&lx_arch_schema, &a);
    lx_model_init(m, &a, 5);
    struct lx_train_cfg c;
    lx_params_defaults(&lx_train_schema, &c);
    c.length = 256, c.batch = 2, c.steps = steps, c.warmup = 5, c.eval_every = steps, c.eval_windows = 2;
    lx_params_finish(&lx_train_schema, &c);
    struct lx_error err = {{0}};
    cr_assert_eq(train_austen(m, stack, &c, progress, ctx, rep, &err), LX_OK, "%s", err.msg);
}

/* TS steps of train_small's model on attention path `path`; the loss of each step into out. */
static void train_losses(const char *stack, enum lx_train_attn path, double *out)
{
    struct lx_model m;
    struct lx_train_report rep;
    lx_train_attn_set(path);
    train_small(&m, stack, TS, record_loss, out, &rep);
    lx_train_attn_set(LX_TRAIN_TILED);
    lx_model_release(&m);
}

/* In portable numerics: Adam turns a last-bit difference of a small gradient
** into a whole step, so in fast numerics the two paths' drift over 20 steps
** would depend on the kernel set; in portable numerics only the two attention
** paths' own summation orders differ, the same on every machine. */
Test(tiled_bwd, twenty_training_steps_match_the_materialised_path, .timeout = 300)
{
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    static const char *const ms[] = {"rope", "[alibi, {logn: {mode: ssmax, learn: true, train: true}}]"};
    for (size_t s = 0; s < sizeof ms / sizeof *ms; s++) {
        double lt[TS], lm[TS];
        train_losses(ms[s], LX_TRAIN_TILED, lt);
        train_losses(ms[s], LX_TRAIN_MATERIALISED, lm);
        cr_expect(lm[TS - 1] < lm[0] - 0.5, "%s: the loss falls (%.4f to %.4f)", ms[s], lm[0], lm[TS - 1]);
        for (int i = 0; i < TS; i++)
            cr_expect(fabs(lt[i] - lm[i]) <= 1e-4 * fabs(lm[i]), "%s step %d: loss %.8f tiled vs %.8f materialised",
                      ms[s], i + 1, lt[i], lm[i]);
    }
}

static void see_threads(void *ctx, long step, long steps, double loss, double val, double tok_per_s)
{
    ((int *)ctx)[step - 1] = omp_get_max_threads();
}

/* A portable step is the same bits on any thread count, so on two threads a
** pilot (harness/engine/model/pilot.h) runs each step on the team or on one
** thread as it times them, and the weights are one thread's run's: its first
** probe (steps 5-8) runs two steps in the mode it does not hold, so both
** modes run whatever the timings. In fast numerics the thread count moves
** bits and no pilot runs. */
Test(tiled_bwd, portable_training_under_the_pilot_is_one_threads_run, .timeout = 300)
{
    enum lx_numerics nm0 = lx_numerics_get();
    int n_thr = omp_get_max_threads();
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    struct lx_model m[2];
    struct lx_train_report rep[2];
    int thr[12];    /* each step's threads, as its progress call sees them */
    for (int t = 0; t < 2; t++) {
        omp_set_num_threads(t + 1);
        train_small(&m[t], "rope", 12, see_threads, thr, &rep[t]);
        cr_expect_eq(omp_get_max_threads(), t + 1, "the run leaves the thread count as it found it");
    }
    cr_expect_eq(rep[0].solo_steps, 0, "one thread has no pilot");
    cr_expect_geq(rep[1].solo_steps, 2, "%ld steps on one thread", rep[1].solo_steps);
    cr_expect_geq(12 - rep[1].solo_steps, 2, "%ld steps on one thread", rep[1].solo_steps);
    long ones = 0;
    for (int i = 0; i < 12; i++)
        ones += thr[i] == 1;
    cr_expect_eq(ones, rep[1].solo_steps, "the steps counted on one thread ran on one thread");
    cr_expect(memcmp(m[0].w, m[1].w, sizeof(float) * m[0].n_params) == 0, "the piloted run's weights differ");
    lx_numerics_set(LX_NUMERICS_FAST);
    lx_model_release(&m[1]);
    train_small(&m[1], "rope", 12, NULL, NULL, &rep[1]);
    cr_expect_eq(rep[1].solo_steps, 0, "fast numerics: every step on the team");
    lx_numerics_set(nm0);
    omp_set_num_threads(n_thr);
    lx_model_release(&m[0]), lx_model_release(&m[1]);
}

/* ---- the memory plan of training ------------------------------------------------------- */

/* The model of the long-context acceptance: 2 layers, d_model 128, 4 heads of 32. */
static struct lx_arch long_arch(void)
{
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 128, a.heads = 4, a.d_head = 32, a.d_mlp = 512;
    lx_params_finish(&lx_arch_schema, &a);
    return a;
}

Test(tiled_bwd, training_plan_is_linear_on_the_tiled_path)
{
    struct lx_arch a = long_arch();
    double nthr = omp_get_max_threads(), w = lx_model_bytes(&a, 1);
    for (int T = 4096; T <= 16384; T *= 2) {
        /* what doubling T adds doubles when T doubles: no T x T row */
        double r = (lx_run_bytes(&a, 1, 4 * T, LX_ACTS_TRAIN_TILED, 0) - lx_run_bytes(&a, 1, 2 * T, LX_ACTS_TRAIN_TILED, 0)) /
                   (lx_run_bytes(&a, 1, 2 * T, LX_ACTS_TRAIN_TILED, 0) - lx_run_bytes(&a, 1, T, LX_ACTS_TRAIN_TILED, 0));
        cr_expect(r > 1.9 && r < 2.1, "T %d -> %d: the tiled training plan grows %.3fx", T, 2 * T, r);
        /* the materialised path counts every layer's and head's probabilities and a thread's dP */
        double tt = (double)(a.layers * a.heads + nthr) * T * T * 4;
        cr_expect(lx_run_bytes(&a, 1, T, LX_ACTS_TRAIN_MATERIALISED, 0) - lx_run_bytes(&a, 1, T, LX_ACTS_TRAIN_TILED, 0) >= tt,
                  "T %d: the materialised T x T rows (%.0f bytes) are counted", T, tt);
        double rm = (lx_run_bytes(&a, 1, 2 * T, LX_ACTS_TRAIN_MATERIALISED, 0) - w) /
                    (lx_run_bytes(&a, 1, T, LX_ACTS_TRAIN_MATERIALISED, 0) - w);
        cr_expect(rm > 3.5, "T %d -> %d: the materialised plan grows %.3fx", T, 2 * T, rm);
    }
    /* the acceptance's budgets, as planned (the measured peaks are in docs/PERFORMANCE.md) */
    cr_expect_lt(lx_run_bytes(&a, 1, 8192, LX_ACTS_TRAIN_TILED, 0), 1024.0 * 1024 * 1024);
    cr_expect_lt(lx_run_bytes(&a, 1, 32768, LX_ACTS_TRAIN_TILED, 0), 2048.0 * 1024 * 1024);
    /* the process's path by default: tiled */
    cr_expect_eq(lx_run_bytes(&a, 1, 8192, LX_ACTS_TRAIN, 0), lx_run_bytes(&a, 1, 8192, LX_ACTS_TRAIN_TILED, 0));
    lx_train_attn_set(LX_TRAIN_MATERIALISED);
    cr_expect_eq(lx_run_bytes(&a, 1, 8192, LX_ACTS_TRAIN, 0), lx_run_bytes(&a, 1, 8192, LX_ACTS_TRAIN_MATERIALISED, 0));
    lx_train_attn_set(LX_TRAIN_TILED);
}

Test(tiled_bwd, training_that_cannot_fit_is_refused_before_allocating)
{
    struct lx_arch a = long_arch();
    struct lx_model m;
    lx_model_init(&m, &a, 1);
    struct lx_train_cfg c;
    lx_params_defaults(&lx_train_schema, &c);
    c.length = 65536, c.batch = 65536;      /* 2^32 rows: about 100 TB of activations */
    lx_params_finish(&lx_train_schema, &c);
    struct lx_error err = {{0}};
    struct lx_train_report rep;
    int rc = train_austen(&m, "rope", &c, NULL, NULL, &rep, &err);
    cr_expect_eq(rc, LX_ENOMEM, "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "training batch 65536 x length 65536 on"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "tiled attention); "), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "of memory are available"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "hint: use a shorter length, a smaller batch, fewer --threads"), "%s", err.msg);
    cr_expect_eq(rep.steps, 0);
    lx_model_release(&m);
}

Test(tiled_bwd, plan_refuses_a_training_length_that_cannot_fit)
{
    /* a wide model trained at 2^20 tokens: O(T·d) on the tiled path, but ~40 GB
    ** a layer of a 2048-wide model with a 16384-wide MLP */
    struct lx_grid g;
    struct lx_plan plan;
    struct lx_error err = {""};
    const char *text = "name: h\nmethods: [rope]\ntasks: [ppl]\nlengths: [64]\n"
                       "models: {m: {arch: {d_model: 2048, d_mlp: 16384}, train: {length: 1048576, batch: 1}}}\n";
    cr_assert_eq(lx_grid_load_text(&g, text, "h.yaml", &err), LX_OK, "%s", err.msg);
    cr_expect_eq(lx_plan_build(&plan, &g, &err), LX_EINVAL);
    cr_expect_not_null(strstr(err.msg, "model 'm' needs"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "to train"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "batch 1 x length 1048576"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "of memory are available"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "a smaller train batch or length, or fewer --threads"), "%s", err.msg);
    lx_grid_release(&g);
}

/* numerics bf16: every weight product of the forward and backward and the tiled attention's
** products read bf16 operands (fp32 sums, fp32 master weights). The whole model's gradients then
** stay within a few bf16 roundings of the fp32 ones: each operand is off by at most 2^-8
** relative (bf16 keeps 8 significant bits), so a product by 2^-7, and through two layers and the loss a few times that, more in
** small tensors whose gradients cancel: the bound is 8e-2 per tensor (measured at most 3.3e-2 on
** AVX512-BF16), the loss 1e-2. */
Test(tiled_bwd, bf16_gradients_follow_fp32, .timeout = 120)
{
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 32, a.heads = 4, a.kv_heads = 2, a.d_head = 8, a.d_mlp = 64, a.mlp = LX_MLP_SWIGLU;
    a.vocab = MV, a.init_std = 0.3;
    struct lx_error err = {""};
    cr_assert_eq(lx_arch_resolve(&a, &err), LX_OK, "%s", err.msg);
    struct lx_facts f = tfacts(8, 64, 4, MT);
    struct tstack st;
    tstack_make(&st, "rope", &f);
    struct lx_model m;
    lx_model_init(&m, &a, 37);
    int tok[MB * MT], tgt[MB * MT];
    for (int i = 0; i < MB * MT; i++)
        tok[i] = (i * 37 + 11) % 36, tgt[i] = (i * 53 + 5) % 36;
    double l32, l16;
    float *g32 = model_grads(&m, &st.spec, tok, tgt, NULL, LX_ACTS_TRAIN_TILED, &l32);
    lx_numerics_set(LX_NUMERICS_BF16);
    float *g16 = model_grads(&m, &st.spec, tok, tgt, NULL, LX_ACTS_TRAIN_TILED, &l16);
    lx_numerics_set(LX_NUMERICS_FAST);
    cr_expect_leq(fabs(l16 - l32), 1e-2 * l32, "loss %.6f bf16 vs %.6f fp32", l16, l32);
    int n = lx_arch_tensors(&a, NULL);
    struct lx_tensor_info *ti = calloc((size_t)n, sizeof *ti);
    lx_arch_tensors(&a, ti);
    double worst = 0, any_diff = 0;
    for (int t = 0; t < n; t++) {
        long cnt = ti[t].shape[0] * (ti[t].ndim == 2 ? ti[t].shape[1] : 1);
        double e = rel_err(g16 + ti[t].offset, g32 + ti[t].offset, cnt);
        worst = e > worst ? e : worst;
        cr_expect_leq(e, 8e-2, "gradient of %s: bf16 vs fp32 %g", ti[t].name, e);
    }
    for (size_t i = 0; i < m.n_params; i++)
        any_diff += g16[i] != g32[i];
    cr_expect_gt(any_diff, 0, "bf16 changed no gradient: the products did not run in bf16");
    cr_log_info("bf16 gradients: worst tensor %.3g relative", worst);
    free(ti), free(g16), free(g32);
    lx_model_release(&m);
    tstack_free(&st);
}

/* ---- the backward's tile kernels ------------------------------------------------- */

/* The shapes the kernel tests run: tile edges (T below, at and past a tile; tiles unequal,
** odd, not multiples of the kernels' 16 columns), grouped-query and multi-query heads, the
** training tiles with T past one block and not a multiple; D a multiple of LX_GEMM_NR (the
** kernels' condition). */
static const struct kshape {
    int T, H, KV, D, bq, bk;
} kshapes[] = {
    {1, 2, 2, 16, 4, 4}, {5, 2, 2, 16, 4, 4}, {37, 4, 2, 16, 8, 5}, {37, 4, 1, 32, 3, 16},
    {37, 2, 2, 16, 7, 17}, {LX_TILE_TRAIN_BQ + 37, 4, 2, 16, LX_TILE_TRAIN_BQ, LX_TILE_TRAIN_BK},
    {2 * LX_TILE_TRAIN_BQ + 1, 2, 2, 32, LX_TILE_TRAIN_BQ, LX_TILE_TRAIN_BK},
};
#define N_KSHAPES (sizeof kshapes / sizeof *kshapes)

/* Portable numerics: lenx's fp32 tile kernel (Kᵀ, Vᵀ packed per key tile, Pᵀ and dSᵀ read in
** place, causal rows above a tile skipped) gives the bits of the same backward through
** lx_gemm_portable, on every trainable stack and shape: the two run the same chains. */
Test(tiled_bwd, portable_tile_kernel_gives_the_bits_of_lx_gemm, .timeout = 300)
{
    omp_set_num_threads(2);
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    int ran = 0;
    for (size_t s = 0; s < N_ALL; s++) {
        struct tstack st;
        const char *name;
        if (!train_stack(s, &st, &name, 16, 4, 37))
            continue;
        tstack_free(&st);
        for (size_t k = 0; k < N_KSHAPES; k++)
            for (int causal = 0; causal < 2; causal++) {
                const struct kshape *z = &kshapes[k];
                struct lx_facts f = tfacts(z->D, 6, z->H, z->T);
                tstack_make(&st, name, &f);
                long n = (long)z->T * (z->H + 2 * z->KV) * z->D;
                float *a = tiled_grads(&st, z->T, z->H, z->KV, z->D, causal, z->bq, z->bk, LX_BWD_PRODUCTS_KERNELS, 0,
                                       0, NULL, NULL, NULL);
                float *b = tiled_grads(&st, z->T, z->H, z->KV, z->D, causal, z->bq, z->bk, LX_BWD_PRODUCTS_GEMM, 0,
                                       0, NULL, NULL, NULL);
                long diff = 0;
                for (long i = 0; i < n; i++)
                    diff += memcmp(&a[i], &b[i], sizeof(float)) != 0;
                cr_expect_eq(diff, 0, "%s T=%d H=%d KV=%d D=%d %s tiles %dx%d: %ld of %ld gradients differ", name,
                             z->T, z->H, z->KV, z->D, causal ? "causal" : "bidirectional", z->bq, z->bk, diff, n);
                free(a), free(b);
                tstack_free(&st);
                ran++;
            }
    }
    lx_numerics_set(LX_NUMERICS_FAST);
    omp_set_num_threads(1);
    cr_expect_geq(ran, 20 * 2 * (int)N_KSHAPES, "only %d cases", ran);
}

/* Numerics bf16 on the bf16 tile kernel: the AVX512-BF16 kernel and its plain C twin give the
** same bits (where the CPU has the former), and both stay within the roundings bf16 numerics
** allows of an fp32 reference on the same bf16 inputs. With q, k, v and dO bf16 already, the
** kernel's products are exact and its sums fp32, so what moves a gradient is P and dS rounded
** to bf16 (each by at most u = 2^-8 relative: bf16 keeps 8 significant bits) before the three
** products that read them:
**     |Δdv_j| ≤ u Σ_i P_ij |dO_i|,   |Δdk_j| ≤ u Σ_i |dS_ij| |q_i|,   |Δdq_i| ≤ u Σ_j |dS_ij| |k_j|
** elementwise, with P, dS from the materialised path (plain attention: A = 1, so dS = c·P(dP − D)),
** doubled for P's and dS's own fp32 differences and the sums' order; and D_i = dO_i · O_i reads
** the bf16 forward's output, within 2^-8 Σ_j P_ij |v_j| of fp32 per value (the forward's bound,
** test_tiled.c), so |ΔD_i| ≤ 2^-8 Σ_d |dO_id| Σ_j P_ij |v_jd|, which moves dS_ij by c·P_ij·|ΔD_i|
** (into dk and dq as above, not doubled); plus 1e-5 of the largest gradient. The fp32 reference is
** the materialised head path on the same rounded inputs. */
Test(tiled_bwd, bf16_tile_kernel_within_the_rounding_of_p_and_ds, .timeout = 300)
{
    omp_set_num_threads(2);
    const char *names[] = {"rope", "nope"};
    int native = lx_gemm_bf16_native();
    double worst = 0;
    for (size_t s = 0; s < 2; s++)
        for (size_t k = 0; k < N_KSHAPES; k++)
            for (int causal = 0; causal < 2; causal++) {
                const struct kshape *z = &kshapes[k];
                int T = z->T, H = z->H, KV = z->KV, D = z->D, G = H / KV;
                struct lx_facts f = tfacts(D, 6, H, T);
                struct tstack st;
                tstack_make(&st, names[s], &f);
                long ld = (long)(H + 2 * KV) * D, HD = (long)H * D, KD = (long)KV * D, n = T * ld;
                float *qkv = malloc(sizeof(float) * n), *dO = malloc(sizeof(float) * T * HD);
                lx_numerics_set(LX_NUMERICS_BF16);
                float *gp = tiled_grads(&st, T, H, KV, D, causal, z->bq, z->bk, LX_BWD_PRODUCTS_KERNELS, 1, 1, qkv, dO, NULL);
                if (native) {   /* AVX512-BF16's kernel (never AMX's): the plain twin's bits */
                    lx_gemm_amx_disable(1);
                    float *gn = tiled_grads(&st, T, H, KV, D, causal, z->bq, z->bk, LX_BWD_PRODUCTS_KERNELS, 0, 1,
                                            NULL, NULL, NULL);
                    lx_gemm_amx_disable(0);
                    cr_expect_eq(memcmp(gn, gp, sizeof(float) * n), 0,
                                 "%s T=%d %s: AVX512-BF16 kernel and plain twin differ", names[s], T,
                                 causal ? "causal" : "bidirectional");
                    free(gn);
                }
                if (native) {   /* AMX's path on emulated tiles, through the whole backward: the plain bits */
                    lx_gemm_amx_emulate(1);
                    float *ge = tiled_grads(&st, T, H, KV, D, causal, z->bq, z->bk, LX_BWD_PRODUCTS_KERNELS, 0, 1,
                                            NULL, NULL, NULL);
                    lx_gemm_amx_emulate(0);
                    cr_expect_eq(memcmp(ge, gp, sizeof(float) * n), 0, "%s T=%d %s: AMX's path (emulated) and plain differ",
                                 names[s], T, causal ? "causal" : "bidirectional");
                    free(ge);
                }
                /* AMX's tiles, where the CPU has them: held to the same bound */
                float *ga = lx_gemm_amx_native() ? tiled_grads(&st, T, H, KV, D, causal, z->bq, z->bk,
                                                               LX_BWD_PRODUCTS_KERNELS, 0, 1, NULL, NULL, NULL)
                                                 : NULL;
                lx_numerics_set(LX_NUMERICS_FAST);
                /* the fp32 reference and the bounds, head by head */
                float *g = calloc((size_t)n, sizeof(float)), *o = malloc(sizeof(float) * T * HD);
                float *P = malloc(sizeof(float) * (size_t)T * T), *dP = malloc(sizeof(float) * (size_t)T * T);
                double *tab = malloc(sizeof(double) * 2 * (size_t)T), *bound = calloc((size_t)n, sizeof(double));
                struct lx_attn_shape sh = {.T = T, .H = H, .KV = KV, .D = D, .ld = (int)ld, .ldo = (int)HD,
                                           .causal = causal};
                double c = lx_spec_qk_scale(&st.spec, D);
                for (int h = 0; h < H; h++) {
                    long qo = (long)h * D, ko = HD + (long)(h / G) * D, vo = ko + KD;
                    struct lx_attn_ws hw = {.tab = tab, .mult = 1.0f};
                    lx_attn_head_forward(o + qo, P, qkv + qo, qkv + ko, qkv + vo, &st.spec, h, &sh, &hw);
                    lx_attn_head_backward(g + qo, g + ko, g + vo, dO + qo, P, dP, qkv + qo, qkv + ko, qkv + vo,
                                          &st.spec, h, &sh, tab, 1.0f, NULL);
                    for (long i = 0; i < T; i++) {
                        double Di = 0, dD = 0;
                        for (long j = 0; j < T; j++) {
                            double dp = 0;
                            for (int d = 0; d < D; d++) {
                                dp += (double)dO[i * HD + qo + d] * qkv[j * ld + vo + d];
                                dD += fabs(dO[i * HD + qo + d]) * P[i * T + j] * fabs(qkv[j * ld + vo + d]);
                            }
                            Di += P[i * T + j] * dp;
                            dP[i * T + j] = (float)dp;
                        }
                        dD *= 0x1p-8;
                        for (long j = 0; j < T; j++) {
                            double p = P[i * T + j], ds = fabs(c * p * (dP[i * T + j] - Di)), dds = c * p * dD;
                            for (int d = 0; d < D; d++) {
                                bound[j * ld + vo + d] += 2 * 0x1p-8 * p * fabs(dO[i * HD + qo + d]);
                                bound[j * ld + ko + d] += (2 * 0x1p-8 * ds + dds) * fabs(qkv[i * ld + qo + d]);
                                bound[i * ld + qo + d] += (2 * 0x1p-8 * ds + dds) * fabs(qkv[j * ld + ko + d]);
                            }
                        }
                    }
                }
                double mx = 0;
                for (long i = 0; i < n; i++)
                    mx = fmax(mx, fabs(g[i]));
                long over = 0;
                double w = 0;
                for (long i = 0; i < n; i++) {
                    double e = fabs(gp[i] - g[i]), b = bound[i] + 1e-5 * mx;
                    if (ga)
                        e = fmax(e, fabs(ga[i] - g[i]));
                    over += !(e <= b);
                    w = fmax(w, e / b);
                }
                worst = fmax(worst, w);
                cr_expect_eq(over, 0, "%s T=%d H=%d KV=%d D=%d %s tiles %dx%d: %ld gradients past the bound (worst %.2f of it)",
                             names[s], T, H, KV, D, causal ? "causal" : "bidirectional", z->bq, z->bk, over, w);
                free(qkv), free(dO), free(gp), free(ga), free(g), free(o), free(P), free(dP), free(tab), free(bound);
                tstack_free(&st);
            }
    omp_set_num_threads(1);
    cr_log_info("bf16 tile kernel: worst gradient at %.3f of its bound", worst);
}
