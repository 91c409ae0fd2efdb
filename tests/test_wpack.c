/*
** tests/test_wpack.c - weights packed once into oneDNN's layout in numerics
** bf16 (harness/engine/kernels/dnnl.h, wprod.h lx_wmat_pack, arch.h
** lx_model_pack; docs/numerics.md#packed-weights). The layout is the CPU's
** (AMX tiles, AVX512-BF16 pairs), so nothing here assumes one: a packed matrix
** reads back, row by row and unpacked, as the bf16 rounding of its source
** bit for bit; its products are the matrix product within the bound of K
** rounded sums; a layout oneDNN refuses runs the unpacked product with its
** bits; a model packed at load scores as unpacked, names a non-finite weight
** at its row-major index, and counts what it holds. Where oneDNN offers no
** packed layout (no AVX512-BF16, say) the tests check that nothing is packed.
** The strided products, oneDNN's and the emulation a CPU without AVX-512 runs
** (dnnl.h, lx_dnnl_emulate), are the product of the bf16 operands within the
** bound of K rounded sums, every layout of A and B.
*/
#define _DEFAULT_SOURCE     /* mkdtemp, setenv */
#include <criterion/criterion.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/lx.h"
#include "harness/core/rng.h"
#include "harness/engine/formats/format.h"
#include "harness/engine/kernels/dnnl.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/wprod.h"
#include "harness/engine/model/model.h"

static void restore(void)
{
    lx_dnnl_refuse_packed(0);
    lx_dnnl_emulate(0);
    lx_dnnl_pack_policy(-1);
    lx_numerics_set(LX_NUMERICS_FAST);
}

/* Packing wherever oneDNN has a layout, AMX included (where a model is not packed by default). */
static void packing_on(void)
{
    restore();
    lx_dnnl_pack_policy(1);
}

TestSuite(wpack, .init = packing_on, .fini = restore, .timeout = 120);

/* By default a layout is offered where oneDNN has one, except on AMX; LENX_PACK=0/1 says otherwise. */
Test(wpack, packing_is_offered_off_AMX_or_as_LENX_PACK_says)
{
    lx_numerics_set(LX_NUMERICS_BF16);
    size_t any = lx_wmat_packed_bytes(2048, 2048);
    char d[256];
    lx_dnnl_describe(d, sizeof d);
    lx_dnnl_pack_policy(-1);
    unsetenv("LENX_PACK");
    cr_expect_eq(lx_wmat_packed_bytes(2048, 2048) > 0, any > 0 && !strstr(d, "amx"), "%s", d);
    setenv("LENX_PACK", "0", 1);
    cr_expect_eq(lx_wmat_packed_bytes(2048, 2048), 0);
    setenv("LENX_PACK", "1", 1);
    cr_expect_eq(lx_wmat_packed_bytes(2048, 2048), any);
    unsetenv("LENX_PACK");
}

/* N × K weights of type t (f32, bf16 or f16) from r; *ref the bf16 rounding of each, as floats. */
static void *weights(struct lx_rng *r, int t, long N, long K, float **ref)
{
    float *w = lx_xmalloc(sizeof(float) * (size_t)(N * K));
    uint16_t *h = lx_xmalloc(sizeof(uint16_t) * (size_t)(N * K));
    *ref = lx_xmalloc(sizeof(float) * (size_t)(N * K));
    for (long i = 0; i < N * K; i++) {
        w[i] = (float)(lx_rng_normal(r) * 0.3);
        h[i] = t == LX_DT_F16 ? lx_f32_to_f16(w[i]) : lx_f32_to_bf16(w[i]);
        if (t == LX_DT_F16)
            w[i] = lx_f16_to_f32(h[i]);
        (*ref)[i] = lx_round_bf16(w[i]);
    }
    if (t == LX_DT_F32)
        return free(h), w;
    return free(w), h;
}

/* The shapes: one block, rows past a block and a chunk (ending mid-block), K odd and not a multiple of 32. */
static const long shapes[][2] = {{64, 64}, {1000, 64}, {260, 48}, {2048 + 37, 96}, {300, 131}};

Test(wpack, packed_rows_read_back_as_the_rounded_source)
{
    lx_numerics_set(LX_NUMERICS_BF16);
    if (lx_wmat_packed_bytes(64, 64) == 0) {
        cr_log_info("oneDNN offers no packed bf16 layout on this CPU: nothing is packed");
        for (int s = 0; s < 5; s++)
            cr_assert_eq(lx_wmat_packed_bytes(shapes[s][0], shapes[s][1]), 0);
        return;
    }
    struct lx_rng r;
    for (int t = 0; t < 3; t++)
        for (int s = 0; s < 5; s++) {
            long N = shapes[s][0], K = shapes[s][1];
            float *ref, *row = lx_xmalloc(sizeof(float) * (size_t)K);
            lx_rng_init(&r, 7, (uint32_t)(s * 3 + t), 0);
            void *w = weights(&r, t, N, K, &ref);
            size_t bytes = lx_wmat_packed_bytes(N, K);
            cr_assert_geq(bytes, sizeof(uint16_t) * (size_t)(N * K), "(%ld, %ld): %zu bytes", N, K, bytes);
            void *pk = lx_xcalloc(1, bytes);
            struct lx_wmat P = lx_wmat_pack(pk, (struct lx_wmat){w, t, 0, NULL, 0}, N, K);
            cr_assert(P.p == pk && P.type == LX_DT_BF16 && P.packed_rows == N);
            for (long n = 0; n < N; n++) {
                lx_wmat_row(row, P, n, K);
                cr_assert_eq(memcmp(row, ref + n * K, sizeof(float) * (size_t)K), 0, "type %d (%ld, %ld) row %ld",
                             t, N, K, n);
            }
            uint16_t *plain = lx_xmalloc(sizeof(uint16_t) * (size_t)(N * K));
            cr_assert_eq(lx_dnnl_unpack(plain, pk, N, K), 0, "%s", lx_dnnl_error());
            for (long i = 0; i < N * K; i++)
                cr_assert_eq(lx_bf16_to_f32(plain[i]), ref[i], "type %d (%ld, %ld) unpacked [%ld]", t, N, K, i);
            free(plain), free(pk), free(w), free(ref), free(row);
        }
}

/* y = x · Wᵀ (+ 0.25 where beta is 1) through the packed W, and through the same
** bf16 W row-major, into rows of ldy = N + pad (the parts of q|k|v and w1|w3 write
** into a wider row). */
static void both_products(long M, long N, long K, long pad, float *yp, float *yr, float **naive)
{
    long ldy = N + pad;
    struct lx_rng r;
    float *ref;
    lx_rng_init(&r, 9, (uint32_t)(M * 7 + N), 0);
    uint16_t *w = weights(&r, LX_DT_BF16, N, K, &ref);
    float *x = lx_xmalloc(sizeof(float) * (size_t)(M * K));
    for (long i = 0; i < M * K; i++)
        x[i] = (float)lx_rng_normal(&r);
    void *pk = lx_xcalloc(1, lx_wmat_packed_bytes(N, K));
    struct lx_wmat P = lx_wmat_pack(pk, (struct lx_wmat){w, LX_DT_BF16, 0, NULL, 0}, N, K), W = {w, LX_DT_BF16, 0, NULL, 0};
    float beta = pad % 2 ? 0.0f : 1.0f;
    for (long i = 0; i < M * ldy; i++)
        yp[i] = yr[i] = 0.25f;
    lx_wlinear(yp, ldy, x, K, P, M, K, N, beta);
    lx_wlinear(yr, ldy, x, K, W, M, K, N, beta);
    for (long i = 0; i < M; i++)
        for (long j = N; j < ldy; j++)
            cr_assert(yp[i * ldy + j] == 0.25f && yr[i * ldy + j] == 0.25f, "written past the row's N values");
    if (naive) {
        *naive = lx_xmalloc(sizeof(float) * (size_t)(M * ldy));
        for (long i = 0; i < M * ldy; i++)
            (*naive)[i] = 0.25f;
        lx_wlinear_naive(*naive, ldy, x, K, W, M, K, N, beta);
        /* the bound: K rounded fp32 sums of exact products of bf16 values, on the sum of magnitudes */
        for (long i = 0; i < M; i++)
            for (long j = 0; j < N; j++) {
                double mag = beta * 0.25;
                for (long k = 0; k < K; k++)
                    mag += fabs((double)lx_round_bf16(x[i * K + k]) * ref[j * K + k]);
                double tol = (double)(K + 1) * 0x1p-24 * mag;
                cr_assert(fabs((double)yp[i * ldy + j] - (*naive)[i * ldy + j]) <= tol,
                          "(%ld x %ld x %ld, ldy %ld) [%ld,%ld]: %.9g vs %.9g (tol %.3g)", M, K, N, ldy, i, j,
                          yp[i * ldy + j], (*naive)[i * ldy + j], tol);
            }
    }
    free(w), free(ref), free(x), free(pk);
}

Test(wpack, packed_products_are_the_product)
{
    lx_numerics_set(LX_NUMERICS_BF16);
    if (lx_wmat_packed_bytes(64, 64) == 0)
        return;
    const long rows[] = {1, 7, 33, 512, 600};
    int same = 0;
    for (int s = 0; s < 5; s++)
        for (int m = 0; m < 5; m++)
            for (long pad = 0; pad < 3; pad++) {    /* dense rows; wider ones, beta 0 and 1 */
                long M = rows[m], N = shapes[s][0], K = shapes[s][1], n = M * (N + pad);
                float *yp = lx_xmalloc(sizeof(float) * (size_t)n), *yr = lx_xmalloc(sizeof(float) * (size_t)n);
                float *naive;
                both_products(M, N, K, pad, yp, yr, &naive);
                same += memcmp(yp, yr, sizeof(float) * (size_t)n) == 0;
                free(yp), free(yr), free(naive);
            }
    cr_log_info("packed and row-major products with the same bits: %d of 75 cases", same);
}

/* Where oneDNN would run its reference loops on the layout, the weights are
** unpacked for the call: the row-major product's bits. */
Test(wpack, a_refused_layout_runs_the_row_major_product)
{
    lx_numerics_set(LX_NUMERICS_BF16);
    if (lx_wmat_packed_bytes(64, 64) == 0)
        return;
    lx_dnnl_refuse_packed(1);
    for (int s = 0; s < 5; s++)
        for (long pad = 0; pad < 3; pad++) {
            long M = 40, N = shapes[s][0], K = shapes[s][1], n = M * (N + pad);
            float *yp = lx_xmalloc(sizeof(float) * (size_t)n), *yr = lx_xmalloc(sizeof(float) * (size_t)n);
            both_products(M, N, K, pad, yp, yr, NULL);
            cr_assert_eq(memcmp(yp, yr, sizeof(float) * (size_t)n), 0, "(%ld, %ld) pad %ld", N, K, pad);
            free(yp), free(yr);
        }
}

/* ---- a model packed at load ------------------------------------------------------ */

/* Untied: 4 key/value heads and d_mlp 128, so that q|k|v's and w1|w3's parts start on 64-row
** blocks; tied: 2 key/value heads (k's 32 rows) and d_mlp 96, parts that do not. */
static void small_model(struct lx_model *m, int tie)
{
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 64, a.heads = 4, a.d_head = 16, a.d_mlp = tie ? 96 : 128, a.vocab = 300;
    a.kv_heads = tie ? 2 : 0, a.tie_head = tie;
    a.mlp = LX_MLP_SWIGLU;
    lx_params_finish(&lx_arch_schema, &a);
    lx_model_init(m, &a, 21);
}

/* Mean NLL of one forward of 2 × 48 tokens under plain RoPE. */
static double forward(const struct lx_model *m, float *logits)
{
    struct lx_facts f = {.d_head = 16, .train_len = 48, .n_heads = 4, .length = 48,
                         .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
    struct lx_spec spec;
    struct lx_acts a;
    struct lx_error err = {{0}};
    int tok[96], tgt[96];
    for (int t = 0; t < 96; t++)
        tok[t] = (t * 37 + 11) % 300, tgt[t] = (t * 53 + 5) % 300;
    lx_spec_init(&spec, &f);
    cr_assert_eq(lx_acts_alloc(&a, &m->arch, 2, 48, 0, &err), LX_OK, "%s", err.msg);
    double nll = lx_model_forward(m, &spec, tok, tgt, &a);
    memcpy(logits, a.logits, sizeof(float) * 96 * 300);
    lx_acts_release(&a);
    return nll;
}

Test(wpack, a_model_packed_at_load_scores_as_unpacked)
{
    lx_numerics_set(LX_NUMERICS_BF16);
    int can = lx_wmat_packed_bytes(64, 64) > 0;
    for (int tie = 0; tie < 2; tie++) {
        struct lx_model a, b;
        small_model(&a, tie), small_model(&b, tie);
        lx_model_to_bf16(&a);           /* a: row-major bf16 */
        lx_model_fit_numerics(&b);      /* b: rounded and packed */
        int n = lx_arch_tensors(&b.arch, NULL), packed = 0;
        struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
        lx_arch_tensors(&b.arch, ti);
        double expect = 0;
        for (int i = 0; i < n; i++) {
            long cnt = ti[i].shape[0] * (ti[i].ndim == 2 ? ti[i].shape[1] : 1);
            int want = can && ti[i].ndim == 2 && (i > 0 || tie);
            cr_assert_eq(b.held->t[i].packed_rows != 0, want, "tie %d tensor %s", tie, ti[i].name);
            packed += want;
            expect += want ? (double)lx_wmat_packed_bytes(ti[i].shape[0], ti[i].shape[1])
                           : ti[i].ndim == 2 ? 2.0 * (double)cnt : 4.0 * (double)cnt;
        }
        cr_assert_eq(lx_model_held_bytes(&b), expect, "held %.0f, counted %.0f", lx_model_held_bytes(&b), expect);
        /* q|k|v and w1|w3 packed as one matrix (one product) where every part starts on a block
        ** of the whole's layout, else as parts */
        const struct lx_arch *ar = &b.arch;
        long HD = ar->heads * ar->d_head, KD = lx_arch_kv(ar) * ar->d_head, F = ar->d_mlp, C = ar->d_model;
        long bq = lx_wmat_pack_block(HD + 2 * KD, C), bw = lx_wmat_pack_block(2 * F, C);
        int fq = can && HD % bq == 0 && (HD + KD) % bq == 0, fw = can && F % bw == 0;
        for (long l = 0; l < ar->layers; l++) {
            const struct lx_layer_w *L = &b.v.layer[l];
            cr_assert_eq(L->n_qkv, fq ? 1 : 3, "tie %d layer %ld", tie, l);
            cr_assert_eq(L->n_w13, fw ? 1 : 2, "tie %d layer %ld", tie, l);
            if (fq)
                cr_assert_eq(L->mqkv[0].packed_rows, HD + 2 * KD);
        }
        cr_log_info("tie %d: q|k|v %s, w1|w3 %s", tie, fq ? "one matrix" : "parts", fw ? "one matrix" : "parts");
        static float la[96 * 300], lb[96 * 300];
        double na = forward(&a, la), nb = forward(&b, lb), worst = 0;
        for (int i = 0; i < 96 * 300; i++)
            worst = fmax(worst, fabs((double)la[i] - lb[i]));
        cr_log_info("tie %d: %d matrices packed; mean NLL %.9f row-major, %.9f packed; max |dlogit| %.3g", tie,
                    packed, na, nb, worst);
        /* the same bf16 operands summed in fp32 in oneDNN's order either way: logits of this
        ** size (|z| < 4 here) agree far inside one bf16 rounding of an activation (2^-9) */
        cr_assert_lt(worst, 1e-4, "tie %d", tie);
        cr_assert_lt(fabs(na - nb), 1e-5, "tie %d", tie);
        /* the embedding's rows (tied: through the packed head) and what training would copy out */
        float *wa = lx_model_f32(&a), *wb = lx_model_f32(&b);
        cr_assert_eq(memcmp(wa, wb, sizeof(float) * a.n_params), 0, "tie %d: the weights as fp32", tie);
        lx_model_f32_free(&a, wa), lx_model_f32_free(&b, wb);
        free(ti);
        lx_model_release(&a), lx_model_release(&b);
    }
}

/* A non-finite weight of a packed matrix is named at its row-major index: in a matrix packed
** alone (w2) and in a part packed with others (v, after q and k, where they are one matrix). */
static void non_finite_at(const char *tensor)
{
    lx_numerics_set(LX_NUMERICS_BF16);
    struct lx_model m;
    struct lx_error err = {{0}};
    small_model(&m, 0);
    int n = lx_arch_tensors(&m.arch, NULL);
    struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
    lx_arch_tensors(&m.arch, ti);
    int k = -1;
    for (int i = 0; i < n && k < 0; i++)
        if (strcmp(ti[i].name, tensor) == 0)
            k = i;
    cr_assert_geq(k, 0);
    long at = 17 * ti[k].shape[1] + 5;  /* row 17, column 5 */
    m.w[ti[k].offset + at] = -INFINITY;
    lx_model_fit_numerics(&m);
    cr_assert_eq(lx_model_check_finite(&m, NULL, &err), LX_ERUN);
    char want[256];
    snprintf(want, sizeof want, "tensor '%s' holds a non-finite value (-inf) at index %ld", ti[k].name, at);
    cr_assert(strstr(err.msg, want), "%s\nwanted: %s", err.msg, want);
    free(ti);
    lx_model_release(&m);
}

Test(wpack, a_non_finite_packed_weight_is_named_at_its_index)
{
    non_finite_at("layers.1.mlp.w2.weight");
    non_finite_at("layers.1.attn.wv.weight");
}

/* A pass of the finite check is remembered in the hash cache under the
** weights' hash and how each matrix is held: the same hash and holding are
** not scanned again (a value poisoned since is then not seen, which is how the
** test knows), while another hash, no hash, or the same weights packed in bf16
** (rounding can make an inf) are scanned; a failure is never remembered. */
Test(wpack, a_finite_check_is_remembered_under_the_weights_hash_and_holding)
{
    char dir[] = "/tmp/lenx-finite-XXXXXX", cmd[64];
    cr_assert_not_null(mkdtemp(dir));
    char *old = getenv("LENX_CACHE") ? lx_xstrdup(getenv("LENX_CACHE")) : NULL;
    setenv("LENX_CACHE", dir, 1);
    lx_numerics_set(LX_NUMERICS_FAST);
    struct lx_model m;
    struct lx_error err = {{0}};
    small_model(&m, 0);
    char h[65], other[65];
    lx_model_weights_hash(&m, h);
    memcpy(other, h, sizeof other);
    other[0] = other[0] == 'a' ? 'b' : 'a';
    cr_assert_eq(lx_model_check_finite(&m, h, &err), LX_OK, "%s", err.msg);
    m.w[m.v.layer[1].w2 - m.w + 3] = NAN;
    cr_expect_eq(lx_model_check_finite(&m, h, &err), LX_OK, "remembered: not scanned again");
    cr_expect_eq(lx_model_check_finite(&m, NULL, &err), LX_ERUN);
    cr_expect(strstr(err.msg, "tensor 'layers.1.mlp.w2.weight' holds a non-finite value (nan) at index 3"), "%s",
              err.msg);
    cr_expect_eq(lx_model_check_finite(&m, other, &err), LX_ERUN, "another hash is scanned");
    cr_expect_eq(lx_model_check_finite(&m, other, &err), LX_ERUN, "and its failure was not remembered");
    lx_numerics_set(LX_NUMERICS_BF16);
    lx_model_fit_numerics(&m);
    cr_assert_not_null(m.held, "rounded to bf16: held");
    cr_expect_eq(lx_model_check_finite(&m, h, &err), LX_ERUN, "held otherwise: scanned");
    lx_model_release(&m);
    small_model(&m, 0);     /* the same weights, finite, packed */
    lx_model_fit_numerics(&m);
    cr_expect_eq(lx_model_check_finite(&m, h, &err), LX_OK, "%s", err.msg);
    lx_model_release(&m);
    old ? setenv("LENX_CACHE", old, 1) : unsetenv("LENX_CACHE");
    free(old);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* lx_dnnl_gemm_bf16 (emulated with emu) of M × K by K × N on every layout (A and B as stored or
** transposed, row strides past the rows, C strided, beta 0 and 1): within (K + 1)·2^-24·(Σ|a_k b_k| +
** |beta·C|) of the product of the bf16 operands in double — each product of two bf16 values exact in
** fp32, K rounded fp32 sums; beta 0 never reads C (a NaN there stays out). */
static void check_products(long M, long N, long K, int emu)
{
    enum { PAD = 3 };
    struct lx_rng r;
    lx_rng_init(&r, 21, 0, 0);
    uint16_t *a = lx_xmalloc(sizeof *a * (size_t)((K + PAD) * (M + PAD)));
    uint16_t *b = lx_xmalloc(sizeof *b * (size_t)((K + PAD) * (N + PAD)));
    float *c = lx_xmalloc(sizeof *c * (size_t)(M * (N + PAD)));
    for (long i = 0; i < (K + PAD) * (M + PAD); i++)
        a[i] = lx_f32_to_bf16((float)lx_rng_normal(&r));
    for (long i = 0; i < (K + PAD) * (N + PAD); i++)
        b[i] = lx_f32_to_bf16((float)lx_rng_normal(&r));
    lx_dnnl_emulate(emu);
    for (int form = 0; form < 8; form++) {
        int ta = form & 1, tb = form >> 1 & 1;
        float beta = (float)(form >> 2);
        long lda = (ta ? M : K) + PAD, ldb = (tb ? K : N) + PAD, ldc = N + PAD;
        for (long i = 0; i < M * ldc; i++)
            c[i] = beta != 0.0f ? (float)(i % 5) - 2.0f : NAN;
        cr_assert_eq(lx_dnnl_gemm_bf16(c, ldc, a, lda, ta, b, ldb, tb, M, N, K, beta), 0, "%s", lx_dnnl_error());
        for (long i = 0; i < M; i++)
            for (long j = 0; j < N; j++) {
                double c0 = beta != 0.0f ? (double)((i * ldc + j) % 5) - 2.0 : 0.0, sum = beta * c0;
                double mag = fabs(beta * c0);
                for (long k = 0; k < K; k++) {
                    double p = (double)lx_bf16_to_f32(a[ta ? k * lda + i : i * lda + k]) *
                               lx_bf16_to_f32(b[tb ? j * ldb + k : k * ldb + j]);
                    sum += p, mag += fabs(p);
                }
                double tol = (double)(K + 1) * 0x1p-24 * mag;
                cr_assert(fabs(c[i * ldc + j] - sum) <= tol, "%s, %ld x %ld x %ld, trans %d %d, beta %g [%ld,%ld]: "
                          "%.9g vs %.9g", emu ? "emulated" : "as the CPU runs it", M, N, K, ta, tb, beta, i, j,
                          c[i * ldc + j], sum);
            }
    }
    free(a), free(b), free(c);
}

/* Both as the CPU runs it (oneDNN's, or the emulation where oneDNN has none) and emulated (A and B
** widened, then sgemm). */
Test(wpack, strided_products_oneDNN_and_emulated_are_the_product)
{
    for (int emu = 0; emu < 2; emu++)
        check_products(37, 29, 83, emu);
}

/* The emulation widens B (a weight: a 128,256-row head) LX_DNNL_EMU_BLOCK columns at a time, never
** whole: over N of two blocks and a part, the products hold and its fp32 scratch is at most A and one
** block. */
Test(wpack, emulated_products_widen_a_block_of_the_weight_at_a_time)
{
    enum { M = 5, K = 40, N = 2 * LX_DNNL_EMU_BLOCK + 37 };
    check_products(M, N, K, 1);
    size_t bound = sizeof(float) * (size_t)(M * K + LX_DNNL_EMU_BLOCK * K);
    cr_assert_leq(lx_dnnl_emulated_bytes(), bound, "the emulation holds %zu bytes of fp32, more than A and a block "
                  "of B (%zu)", lx_dnnl_emulated_bytes(), bound);
}
