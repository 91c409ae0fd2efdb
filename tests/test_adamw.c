/*
** tests/test_adamw.c - the AdamW update (lx_adamw_update,
** harness/engine/model/train.h): one step worked by hand, and the sixteen-lane
** path giving the element-by-element reference's bits, decay flags and
** ragged tails included (on a CPU without AVX-512 both calls take the
** reference, and the test says nothing more than that).
*/
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness/core/rng.h"
#include "harness/engine/model/train.h"

/* Step 0 of lr 0.1, betas 0.9 and 0.99, weight decay 0.1, no clipping, on w = 1,
** g = 0.5 and zero moments: m = 0.05, v = 0.0025; bias corrections 0.1 and 0.01,
** so step = 0.1 / 0.1 = 1 and v̂ = 0.25; decay takes w to 1 − 0.01 = 0.99; then
** w = 0.99 − 0.05 / (√0.25 + 1e-8) = 0.89 (0.9 without decay). */
Test(adamw, one_step_by_hand)
{
    enum { N = 37 };    /* two full sets of sixteen lanes and a tail */
    for (int plain = 0; plain < 2; plain++) {
        float w[N], m[N] = {0}, v[N] = {0}, g[N];
        unsigned char decay[N];
        for (int i = 0; i < N; i++)
            w[i] = 1.0f, g[i] = 0.5f, decay[i] = (unsigned char)(i % 3 == 0);
        const struct lx_adamw k = {.gs = 1.0f, .b1 = 0.9f, .b2 = 0.99f, .step = 1.0f, .wdl = 0.01f, .ibc2 = 100.0f};
        lx_adamw_update(w, m, v, g, decay, N, &k, plain);
        for (int i = 0; i < N; i++) {
            cr_expect(fabsf(m[i] - 0.05f) < 1e-7f, "m[%d] = %.9g", i, m[i]);
            /* 1 − 0.99f is 0.01 to 3e-8 (half an ulp of 0.99): v to 1e-8 */
            cr_expect(fabsf(v[i] - 0.0025f) < 1e-8f, "v[%d] = %.9g", i, v[i]);
            cr_expect(fabsf(w[i] - (decay[i] ? 0.89f : 0.9f)) < 1e-6f, "w[%d] = %.9g (plain %d)", i, w[i], plain);
        }
    }
}

static float draw(struct lx_rng *r, float lo, float hi)
{
    return lo + (hi - lo) * (float)lx_rng_uniform(r);
}

/* Five updates of 1,000 + 13 parameters, gradients of every sign and size
** and a clipped scale, the lanes against the reference: the same bits. */
Test(adamw, lanes_give_the_reference_bits)
{
    enum { N = 1013 };
    static float w[2][N], m[2][N], v[2][N], g[N];
    static unsigned char decay[N];
    struct lx_rng r;
    lx_rng_init(&r, 7, 0, LX_RNG_DATA);
    for (int i = 0; i < N; i++) {
        w[0][i] = w[1][i] = draw(&r, -2, 2);
        m[0][i] = m[1][i] = 0, v[0][i] = v[1][i] = 0;
        decay[i] = draw(&r, 0, 1) < 0.5f;
    }
    for (int s = 0; s < 5; s++) {
        for (int i = 0; i < N; i++)
            g[i] = draw(&r, -1, 1) * powf(10.0f, draw(&r, -6, 2));
        double bc1 = 1 - pow(0.9, s + 1), bc2 = 1 - pow(0.95, s + 1);
        const struct lx_adamw k = {.gs = 0.37f, .b1 = 0.9f, .b2 = 0.95f, .step = (float)(3e-3 / bc1),
                                   .wdl = 3e-4f, .ibc2 = (float)(1 / bc2)};
        for (int p = 0; p < 2; p++)
            lx_adamw_update(w[p], m[p], v[p], g, decay, N, &k, p);
    }
    cr_expect(!memcmp(w[0], w[1], sizeof w[0]), "weights differ between the lanes and the reference");
    cr_expect(!memcmp(m[0], m[1], sizeof m[0]), "first moments differ");
    cr_expect(!memcmp(v[0], v[1], sizeof v[0]), "second moments differ");
}

/* The schedule at its edges, by hand (docs/config.md: linear warmup, then a
** cosine from lr down to min_lr·lr over the steps after it): the first step
** after the warmup is the peak, the last min_lr·lr; with one step after the
** warmup (a 1-step fine-tune) that step is the peak, where it ran at min_lr·lr. */
Test(adamw, schedule_edges)
{
    struct lx_train_cfg c = {.lr = 1e-3, .min_lr = 0.1, .warmup = 4, .steps = 10};
    cr_expect_float_eq(lx_train_lr(&c, 0), 1e-3 * 1 / 4, 1e-18);
    cr_expect_float_eq(lx_train_lr(&c, 3), 1e-3, 1e-18);
    cr_expect_float_eq(lx_train_lr(&c, 4), 1e-3, 1e-18);
    cr_expect_float_eq(lx_train_lr(&c, 9), 1e-4, 1e-18);
    double mid = 1e-3 * (0.1 + 0.9 * 0.5 * (1 + cos(acos(-1.0) * 2.0 / 5.0)));   /* step 6: 2 of 5 */
    cr_expect_float_eq(lx_train_lr(&c, 6), mid, 1e-18);
    c = (struct lx_train_cfg){.lr = 3e-3, .min_lr = 0.1, .warmup = 0, .steps = 1};
    cr_expect_eq(lx_train_lr(&c, 0), 3e-3);
    c.warmup = 2, c.steps = 3;
    cr_expect_eq(lx_train_lr(&c, 2), 3e-3);
}
