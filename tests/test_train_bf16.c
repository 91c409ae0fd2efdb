/*
** tests/test_train_bf16.c - training in `numerics: bf16` (docs/numerics.md#training-in-bf16):
** bf16 weight and backward products with fp32 master weights and AdamW. A small model trained
** 300 steps in bf16 ends within 5 % of the loss of the same run in fp32 (measured 1.7 % for
** validation on this 2-layer shape at b63b4e2, 2.4384 against 2.4789; 1.3 % before; the issue's
** 2 % bound is for the 25M shape and is measured by `make bench BENCH=train` and
** docs/numerics.md), its checkpoint says it trained in bf16, and its model key differs from the
** fp32 one.
*/
#define _GNU_SOURCE     /* mkdtemp */
#include <math.h>

#include "harness/core/half.h"
#include "harness/engine/kernels/dnnl.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/wprod.h"
#include "harness/engine/model/model.h"
#include "harness/engine/model/train.h"
#include "tests/shell.h"

static const char config[] =
    "name: bf\nseed: 3\nmodels:\n  m:\n"
    "    arch: {mode: causal, layers: 2, d_model: 64, heads: 4, d_head: 16, d_mlp: 192, mlp: swiglu}\n"
    "    train: {length: 64, batch: 8, steps: 300, warmup: 20, eval_every: 100, eval_windows: 4}\n"
    "methods: [rope]\ntasks:\n  - ppl: {windows: 2}\nlengths: [64]\n";

Test(train_bf16, loss_follows_the_fp32_run, .fini = teardown, .timeout = 300)
{
    shell_setup("train-bf16");
    char out[4096], key[2][64], val[2][64], path[512];
    write_file("b.yaml", config);
    static const char *const mode[] = {"fast", "bf16"};
    for (int k = 0; k < 2; k++) {
        char db[32];
        snprintf(db, sizeof db, "%s.db", mode[k]);
        cr_assert_eq(sh(out, sizeof out, "$L run b.yaml --db %s --numerics %s --quiet --no-table", db, mode[k]), 0,
                     "%s", out);
        sql_text(key[k], sizeof key[k], db, "SELECT key FROM models");
        sql_text(val[k], sizeof val[k], db, "SELECT printf('%.9f', val_loss) FROM models");
        if (k == 1)
            sql_text(path, sizeof path, db, "SELECT path FROM models");
    }
    double f = atof(val[0]), b = atof(val[1]);
    cr_assert(isfinite(b) && b > 0.5, "bf16 val loss %s", val[1]);
    cr_expect_leq(fabs(b - f) / f, 0.05, "bf16 val loss %.4f, fp32 %.4f", b, f);
    cr_expect_str_neq(key[0], key[1], "fp32 and bf16 training share a model key");
    cr_assert_eq(sh(out, sizeof out, "$L show model %s", path), 0, "%s", out);
    cr_expect(strstr(out, "\"numerics\": \"bf16\""), "%s", out);
    (void)sql_long;
    (void)exists;
}

/* One model of the small shape above, its spec, optimizer, activations and tokens. */
struct run {
    struct lx_arch ar;
    struct lx_model m;
    struct lx_spec spec;
    struct lx_optim opt;
    struct lx_acts a;
    int tok[2 * 32], tgt[2 * 32];
};

static void run_init(struct run *r)
{
    struct lx_error err;
    lx_params_defaults(&lx_arch_schema, &r->ar);
    r->ar.layers = 2, r->ar.d_model = 64, r->ar.heads = 4, r->ar.d_head = 16, r->ar.d_mlp = 192;
    r->ar.mlp = LX_MLP_SWIGLU;
    lx_params_finish(&lx_arch_schema, &r->ar);
    lx_model_init(&r->m, &r->ar, 5);
    struct lx_facts f = {.d_head = 16, .train_len = 32, .n_heads = 4, .length = 32,
                         .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL, .training = 1};
    lx_spec_init(&r->spec, &f);
    lx_optim_init(&r->opt, &r->m);
    cr_assert_eq(lx_acts_alloc(&r->a, &r->ar, 2, 32, LX_ACTS_TRAIN, &err), 0, "%s", err.msg);
    for (int t = 0; t < 2 * 32; t++)
        r->tok[t] = (t * 37 + 11) % 256, r->tgt[t] = (t * 53 + 5) % 256;
}

static void run_step(struct run *r, const struct lx_train_cfg *c, long s)
{
    lx_optim_zero_grad(&r->opt);
    lx_model_forward(&r->m, &r->spec, r->tok, r->tgt, &r->a);
    lx_model_backward(&r->m, &r->spec, r->tok, r->tgt, &r->a, &r->opt.g);
    lx_optim_step(&r->opt, &r->m, c, s);
}

/* lx_optim_shadow: training's products read the weights rounded to bf16 once per update. After
** every update the copy is the rounding of the fp32 weights (so a missed refresh fails here),
** the products read it, and a step on it gives the bits of a step that rounds the weights in
** every product (the same oneDNN calls on the same values; shapes below one product block). */
Test(train_bf16, the_weight_copy_follows_every_update)
{
    struct lx_train_cfg c;
    struct lx_error err;
    lx_params_defaults(&lx_train_schema, &c);
    c.lr = 3e-2, c.warmup = 0;      /* large steps: every bf16 value moves */
    lx_params_finish(&lx_train_schema, &c);
    enum lx_numerics was = lx_numerics_get();
    lx_numerics_set(LX_NUMERICS_BF16);
    struct run r[2];
    for (int k = 0; k < 2; k++)
        run_init(&r[k]);
    cr_assert_eq(lx_optim_shadow(&r[1].opt, &r[1].m, 0, &err), 0, "%s", err.msg);     /* row-major only */
    const struct lx_layer_w *L = &r[1].m.v.layer[1];
    cr_assert(L->mw2.type == LX_DT_BF16 && (const uint16_t *)L->mw2.p == r[1].opt.wb + (L->w2 - r[1].m.w));
    cr_assert(r[1].m.v.memb.type == LX_DT_F32, "the embedding's rows are read as fp32");
    size_t moved = 0;
    for (long s = 0; s < 4; s++) {
        uint16_t before = r[1].opt.wb[r[1].opt.n / 2];
        for (int k = 0; k < 2; k++)
            run_step(&r[k], &c, s);
        moved += r[1].opt.wb[r[1].opt.n / 2] != before;
        for (size_t i = 0; i < r[1].opt.n; i++)
            cr_assert_eq(r[1].opt.wb[i], lx_f32_to_bf16(r[1].m.w[i]), "step %ld: copy of weight %zu stale", s, i);
        cr_assert_arr_eq(r[0].m.w, r[1].m.w, sizeof(float) * r[0].opt.n, "step %ld: weights differ", s);
    }
    cr_expect_gt(moved, 0, "the probed weight's bf16 value never moved: the test sees no update");
    lx_optim_unshadow(&r[1].opt, &r[1].m);
    cr_assert(L->mw2.type == LX_DT_F32 && L->mw2.p == L->w2 && r[1].m.v.mhead.p == r[1].m.v.head);
    lx_numerics_set(was);
    for (int k = 0; k < 2; k++) {
        lx_acts_release(&r[k].a);
        lx_optim_release(&r[k].opt);
        lx_model_release(&r[k].m);
    }
}

/* With pack, every update also packs each matrix of the copy both ways into oneDNN's layout
** (docs/numerics.md#packed-weights): after every update the forward's copy reads back as the
** bf16 copy's rows and the backward's unpacks to its transpose, bit for bit (a missed repack
** fails), and training on them follows training on the row-major copy (the same bf16 operands;
** only oneDNN's order of the fp32 sums may differ). Where oneDNN has no packed layout, nothing
** is packed. */
Test(train_bf16, packed_copies_follow_every_update)
{
    struct lx_train_cfg c;
    struct lx_error err;
    lx_params_defaults(&lx_train_schema, &c);
    c.lr = 3e-2, c.warmup = 0;
    lx_params_finish(&lx_train_schema, &c);
    lx_numerics_set(LX_NUMERICS_BF16);
    struct run r[2];
    for (int k = 0; k < 2; k++) {
        run_init(&r[k]);
        cr_assert_eq(lx_optim_shadow(&r[k].opt, &r[k].m, k, &err), 0, "%s", err.msg);
    }
    double pk = lx_arch_train_packed_bytes(&r[1].ar);
    cr_assert_eq(r[1].opt.pk != NULL, pk > 0);
    if (!r[1].opt.pk)
        cr_log_info("oneDNN offers no packed layout here: training reads the row-major copy");
    else    /* the plan counts them */
        cr_assert_eq(lx_model_bytes(&r[1].ar, 1), 19.0 * (double)r[1].opt.n + pk);
    const struct lx_layer_w *L = &r[1].m.v.layer[1];
    long C = r[1].ar.d_model, F2 = 2 * r[1].ar.d_mlp;
    float *row = malloc(sizeof(float) * (size_t)F2);
    uint16_t *wt = malloc(sizeof(uint16_t) * (size_t)(F2 * C));
    double worst = 0;
    for (long s = 0; s < 4; s++) {
        double loss[2];
        for (int k = 0; k < 2; k++) {
            run_step(&r[k], &c, s);
            loss[k] = lx_model_forward(&r[k].m, &r[k].spec, r[k].tok, r[k].tgt, &r[k].a);
        }
        worst = fmax(worst, fabs(loss[1] - loss[0]) / loss[0]);
        if (!r[1].opt.pk)
            continue;
        /* w1|w3 of layer 1 (2F × C): forward rows, backward transposed */
        const uint16_t *wb = r[1].opt.wb + (L->w13 - r[1].m.w);
        cr_assert(L->mw13[0].packed_rows == F2 && L->mw13[0].pt);
        for (long o = 0; o < F2; o++) {
            lx_wmat_row(row, L->mw13[0], o, C);
            for (long i = 0; i < C; i++)
                cr_assert_eq(row[i], lx_bf16_to_f32(wb[o * C + i]), "step %ld: forward copy [%ld,%ld] stale", s, o, i);
        }
        cr_assert_eq(lx_dnnl_unpack(wt, L->mw13[0].pt, C, F2), 0, "%s", lx_dnnl_error());
        for (long i = 0; i < C; i++)
            for (long o = 0; o < F2; o++)
                cr_assert_eq(wt[i * F2 + o], wb[o * C + i], "step %ld: backward copy [%ld,%ld] stale", s, o, i);
    }
    cr_log_info("packed training: loss within %.3g of the row-major run's; weights %s", worst,
                memcmp(r[0].m.w, r[1].m.w, sizeof(float) * r[0].opt.n) ? "differ" : "the same bits");
    /* oneDNN's fp32 sums in another order move a loss of ~5.5 by a few ulps of the sums, not 1e-4 */
    cr_assert_lt(worst, 1e-4);
    free(row), free(wt);
    for (int k = 0; k < 2; k++) {
        lx_optim_unshadow(&r[k].opt, &r[k].m);
        lx_acts_release(&r[k].a);
        lx_optim_release(&r[k].opt);
        lx_model_release(&r[k].m);
    }
    lx_numerics_set(LX_NUMERICS_FAST);
}
