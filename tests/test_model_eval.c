/*
** tests/test_model_eval.c - the evaluation pass against the training pass
** (harness/engine/model/model.c, acts.c), in both numerics.
**
** Suite `model` (shared with tests/test_model.c): eval mode (one layer at a
** time, the loss over row blocks; in portable numerics the MLP and the head
** too) equal to train mode bit for bit on the same attention path; portable
** passes the same bits on 1 and 2 threads; the portable layout's one block of
** MLP rows.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/data/corpus.h"
#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/model/model.h"
#include "tests/model_fixture.h"

/* ---- model: eval mode equals train mode ------------------------------------- */

/* Eval mode (one layer at a time, the residual updated in place, the loss
** over row blocks; in portable numerics the MLP and the head too) against
** train mode (every layer kept, every product over all B·T rows) on B
** windows of T tokens, three layers: on the same attention path the bits
** agree (eval's tiles and training's tiled path; eval's head path and
** training's materialised path), across paths within float rounding. */
static void eval_equals_train(int B, int T, enum lx_numerics numerics)
{
    lx_numerics_set(numerics);
    for (int mode = 0; mode < 2; mode++) {
        struct lx_error err = {""};
        struct lx_arch a = arch_of(mode, mode ? LX_MLP_SWIGLU : LX_MLP_GELU, 3, 32, 2, 16, 48, LX_VOCAB, 0.15);
        struct lx_model m;
        struct compiled sp;
        struct lx_acts tr[2], ev;
        long N = (long)B * T;
        int *tok = malloc(sizeof(int) * (size_t)N), *tgt = malloc(sizeof(int) * (size_t)N);
        lx_model_init(&m, &a, 55);
        compile(&sp, "[{rope: {layout: half}}, {logn: {mode: su}}]", 16, T, 2, T);
        make_windows(tok, tgt, B, T, mode == LX_MODEL_CAUSAL, 256, LX_TOK_BOS, LX_TOK_MASK);
        cr_assert_eq(lx_acts_alloc(&ev, &a, B, T, 0, &err), LX_OK, "%s", err.msg);
        cr_expect_eq(ev.rows, numerics == LX_NUMERICS_PORTABLE && N > LX_EVAL_ROWS ? LX_EVAL_ROWS : N);
        double l_tr[2];
        for (int mat = 0; mat < 2; mat++) {     /* the tiled path, then the materialised one */
            cr_assert_eq(lx_acts_alloc(&tr[mat], &a, B, T, mat ? LX_ACTS_TRAIN_MATERIALISED : LX_ACTS_TRAIN_TILED,
                                       &err), LX_OK, "%s", err.msg);
            l_tr[mat] = lx_model_forward(&m, &sp.spec, tok, tgt, &tr[mat]);
            ev.head_path = mat;
            double l_ev = lx_model_forward(&m, &sp.spec, tok, tgt, &ev);
            cr_expect_eq(memcmp(tr[mat].logits, ev.logits, sizeof(float) * (size_t)N * LX_VOCAB), 0,
                         "mode %d, %d x %d, %s: eval logits differ from train logits", mode, B, T,
                         mat ? "materialised" : "tiled");
            cr_expect_eq(memcmp(tr[mat].loss, ev.loss, sizeof(float) * (size_t)N), 0, "mode %d: per-token NLL", mode);
            cr_expect_eq(l_tr[mat], l_ev, "mode %d: loss %.9g (train) vs %.9g (eval)", mode, l_tr[mat], l_ev);
            /* no targets: logits only, the same again */
            lx_model_forward(&m, &sp.spec, tok, NULL, &ev);
            cr_expect_eq(memcmp(tr[mat].logits, ev.logits, sizeof(float) * (size_t)N * LX_VOCAB), 0);
        }
        cr_expect(fabs(l_tr[0] - l_tr[1]) <= 1e-5 * fabs(l_tr[1]), "mode %d: loss %.9g (tiled) vs %.9g "
                  "(materialised)", mode, l_tr[0], l_tr[1]);
        lx_acts_release(&tr[0]);
        lx_acts_release(&tr[1]);
        lx_acts_release(&ev);
        compiled_release(&sp);
        lx_model_release(&m);
        free(tok);
        free(tgt);
    }
}

Test(model, eval_forward_equals_train_forward)
{
    eval_equals_train(2, 16, LX_NUMERICS_FAST);   /* the reference windows' B, T */
}

Test(model, eval_forward_over_row_blocks_equals_train_forward, .timeout = 120)
{
    /* 2 x 700 rows: one whole block of LX_EVAL_ROWS and a partial one */
    cr_assert(2 * 700 > LX_EVAL_ROWS && 2 * 700 < 2 * LX_EVAL_ROWS);
    eval_equals_train(2, 700, LX_NUMERICS_FAST);
}

/* Portable numerics: the MLP and the head run over blocks of LX_EVAL_ROWS
** rows in evaluation, all rows in training, and still the same bits. */
Test(model, portable_eval_with_mlp_and_head_over_row_blocks_equals_train_forward, .timeout = 120)
{
    eval_equals_train(2, 700, LX_NUMERICS_PORTABLE);
}

/* One pass of each kind on `threads` threads: train forward + backward (the
** loss and every gradient into g), then a tiled evaluation with attention
** row statistics (its logits, NLL and stats into el, ell, est). */
struct passes {
    float *g, *el, *ell;
    double *est;
    double l_train, l_eval;
};

static void passes_on(struct passes *p, int threads, const struct lx_model *m, const struct lx_spec *spec,
                      const int *tok, const int *tgt, int B, int T)
{
    struct lx_error err = {""};
    struct lx_acts tr, ev;
    const struct lx_arch *a = &m->arch;
    long N = (long)B * T, ns = a->layers * B * a->heads * LX_ATTN_NSTATS;
    omp_set_num_threads(threads);
    p->g = calloc(m->n_params, sizeof *p->g);
    p->el = malloc(sizeof(float) * (size_t)(N * a->vocab));
    p->ell = malloc(sizeof(float) * (size_t)N);
    p->est = calloc((size_t)ns, sizeof *p->est);
    struct lx_weights gv;
    lx_weights_map(&gv, a, p->g);
    cr_assert_eq(lx_acts_alloc(&tr, a, B, T, 1, &err), LX_OK, "%s", err.msg);
    p->l_train = lx_model_forward(m, spec, tok, tgt, &tr);
    lx_model_backward(m, spec, tok, tgt, &tr, &gv);
    lx_acts_release(&tr);
    lx_weights_unmap(&gv);
    cr_assert_eq(lx_acts_alloc(&ev, a, B, T, 0, &err), LX_OK, "%s", err.msg);
    ev.stats = p->est;
    p->l_eval = lx_model_forward(m, spec, tok, tgt, &ev);
    memcpy(p->el, ev.logits, sizeof(float) * (size_t)(N * a->vocab));
    memcpy(p->ell, ev.loss, sizeof(float) * (size_t)N);
    lx_acts_release(&ev);
}

static void passes_free(struct passes *p)
{
    free(p->g), free(p->el), free(p->ell), free(p->est);
}

/* Portable numerics: training's loss and gradients, and evaluation's logits,
** NLL and attention statistics are the same bits on 1 thread and on 2 (GQA,
** SwiGLU, a LogN stack; 4 x 300 rows: the products split over threads, the
** evaluation's MLP over two row blocks). */
Test(model, portable_passes_are_the_same_bits_on_1_and_2_threads, .timeout = 120)
{
    enum { PB = 4, PT = 300 };
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    struct lx_arch a = with_gqa(arch_of(LX_MODEL_CAUSAL, LX_MLP_SWIGLU, 2, 64, 4, 16, 160, LX_VOCAB, 0.1), 2, 0, 0);
    struct lx_model m;
    struct compiled sp;
    lx_model_init(&m, &a, 91);
    compile(&sp, "[{rope: {layout: half}}, {logn: {mode: su}}]", 16, PT, 4, PT);
    static int tok[PB * PT], tgt[PB * PT];
    make_windows(tok, tgt, PB, PT, 1, 256, LX_TOK_BOS, LX_TOK_MASK);
    struct passes one, two;
    passes_on(&one, 1, &m, &sp.spec, tok, tgt, PB, PT);
    passes_on(&two, 2, &m, &sp.spec, tok, tgt, PB, PT);
    long N = (long)PB * PT, ns = a.layers * PB * a.heads * LX_ATTN_NSTATS;
    cr_expect_eq(memcmp(&one.l_train, &two.l_train, sizeof(double)), 0, "train loss %.17g vs %.17g", one.l_train,
                 two.l_train);
    cr_expect_eq(memcmp(one.g, two.g, sizeof(float) * m.n_params), 0, "gradients");
    cr_expect_eq(memcmp(one.el, two.el, sizeof(float) * (size_t)(N * LX_VOCAB)), 0, "eval logits");
    cr_expect_eq(memcmp(one.ell, two.ell, sizeof(float) * (size_t)N), 0, "eval NLL");
    cr_expect_eq(memcmp(one.est, two.est, sizeof(double) * (size_t)ns), 0, "attention statistics");
    cr_expect_eq(memcmp(&one.l_eval, &two.l_eval, sizeof(double)), 0, "eval loss");
    passes_free(&one), passes_free(&two);
    compiled_release(&sp);
    lx_model_release(&m);
    omp_set_num_threads(1);
}

/* What the portable layout saves: the MLP's and the final norm's scratch
** hold LX_EVAL_ROWS rows, not N. Medium-model widths (d_model 512, SwiGLU
** 2 x 1376, 8 heads / 4 KV heads of 64, vocab 512): attention phase
** 512 + 1024 + 512 = 2048 floats a row and the tiles' packed keys 4 · 64 =
** 256, MLP phase 512 + 2752 = 3264, head 512 + 512 = 1024. Fast: the overlay
** is the MLP's 3264 N; portable: the attention's 2304 N, with the MLP's 3264
** R and the head's 512 R + 512 N below it. */
Test(model, portable_eval_layout_holds_one_block_of_mlp_rows)
{
    struct lx_arch a = arch_of(LX_MODEL_CAUSAL, LX_MLP_SWIGLU, 8, 512, 8, 64, 1376, 512, 0.02);
    a.kv_heads = 4;
    for (int T = 4096; T <= 32768; T *= 2) {
        lx_numerics_set(LX_NUMERICS_FAST);
        double fast = lx_acts_bytes(&a, 1, T, 0), fast_train = lx_acts_bytes(&a, 1, 1024, 1);
        lx_numerics_set(LX_NUMERICS_PORTABLE);
        double port = lx_acts_bytes(&a, 1, T, 0);
        cr_expect_eq(fast - port, (3264.0 - 2304.0) * T * 4, "T %d: %.0f vs %.0f bytes", T, fast, port);
        cr_expect_eq(lx_acts_bytes(&a, 1, 1024, 1), fast_train, "training keeps every row in both modes");
    }
    lx_numerics_set(LX_NUMERICS_FAST);
}

