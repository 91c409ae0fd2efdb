/*
** tests/test_eval_memory.c - what an evaluation pass holds, beside the tiled
** attention it runs (tests/test_tiled.c): a pass that reads losses only holds
** one block of logits, a pass that reads the answers' logits keeps theirs
** alone, and the memory plan is O(T·d) where the tiled path runs (with
** llama.cpp's rounding of P too), T × T only where a pass reads whole rows
** of probabilities. The tests keep the `tiled` suite's names.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/attention.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/model/model.h"
#include "tasks/task.h"
#include "tests/stack.h"

/* ---- evaluation that reads losses only ------------------------------------------ */

/* A 2-layer model of vocabulary V (d_model 32) from seed, lm_head's row 5
** at value in its first cols columns. */
static const struct lx_arch *head_model(struct lx_model *m, int V, int seed, int cols, float value)
{
    struct lx_arch a = {.mode = LX_MODEL_CAUSAL, .layers = 2, .d_model = 32, .heads = 2, .d_head = 16,
                        .d_mlp = 64, .mlp = LX_MLP_GELU, .vocab = V, .norm_eps = 1e-5, .init_std = 0.3};
    lx_model_init(m, &a, seed);
    int n = lx_arch_tensors(&a, NULL);
    struct lx_tensor_info *ti = calloc((size_t)n, sizeof *ti);
    lx_arch_tensors(&a, ti);
    for (int i = 0; i < n; i++)
        for (long c = 0; !strcmp(ti[i].name, "lm_head.weight") && c < cols; c++)
            m->w[ti[i].offset + 5 * a.d_model + c] = value;
    free(ti);
    return &m->arch;
}

/* Per-token losses of a 2-layer model over 2 windows of 700 tokens (1,400
** rows: the head's logits in two blocks when held LX_EVAL_ROWS rows at a
** time), its acts laid out as `mode` (LX_ACTS_EVAL or LX_ACTS_EVAL_LOSS).
** With msg: token 5's head row at 3e38 (its logit overflows on every row)
** and no target scored, lx_acts_check_finite's error into msg. */
static float *eval_losses_at(int mode, int V, char *msg, int one);

static float *eval_losses(int mode, int V, char *msg)
{
    return eval_losses_at(mode, V, msg, 0);
}

/* As eval_losses; with msg, lm_head's row 5 is 3e38 in every column, or with one 1.7e38 in its
** first column alone (so that only the rows whose first normalised value passes about 2 overflow). */
static float *eval_losses_at(int mode, int V, char *msg, int one)
{
    enum { EB = 2, ET = 700 };
    struct lx_model m;
    const struct lx_arch *ap = head_model(&m, V, 7, !msg ? 0 : one ? 1 : 32, one ? 1.7e38f : 3e38f), a = *ap;
    struct lx_facts f = tfacts(16, 16, 2, ET);
    struct tstack st;
    tstack_make(&st, "rope", &f);
    struct lx_acts acts;
    struct lx_error err;
    cr_assert_eq(lx_acts_alloc(&acts, &a, EB, ET, mode, &err), LX_OK, "%s", err.msg);
    int *tok = malloc(sizeof(int) * EB * ET), *tgt = malloc(sizeof(int) * EB * ET);
    for (int i = 0; i < EB * ET; i++)
        tok[i] = (i * 37 + 11) % V, tgt[i] = msg ? -1 : (i * 53 + 5) % V;
    lx_model_forward(&m, &st.spec, tok, tgt, &acts);
    int rc = lx_acts_check_finite(&acts, V, EB, tgt, &err);
    if (msg)
        snprintf(msg, sizeof err.msg, "%s", rc < 0 ? err.msg : "no error");
    else
        cr_expect_eq(rc, LX_OK, "%s", err.msg);
    float *loss = malloc(sizeof(float) * EB * ET);
    memcpy(loss, acts.loss, sizeof(float) * EB * ET);
    free(tok), free(tgt);
    lx_acts_release(&acts);
    tstack_free(&st);
    lx_model_release(&m);
    return loss;
}

/* Losses only: the same losses (bits in portable numerics, whose products give
** a block of rows the bits of the whole; fast numerics within the fp32
** rounding of a 32-term logit), with (N − LX_EVAL_ROWS)·V fewer floats held. */
Test(tiled, losses_only_hold_one_block_of_logits, .timeout = 60)
{
    enum { V = 2048 };
    struct lx_arch a = {.mode = LX_MODEL_CAUSAL, .layers = 2, .d_model = 32, .heads = 2, .d_head = 16,
                        .d_mlp = 64, .mlp = LX_MLP_GELU, .vocab = V};
    for (int portable = 0; portable < 2; portable++) {
        lx_numerics_set(portable ? LX_NUMERICS_PORTABLE : LX_NUMERICS_FAST);
        double saved = lx_acts_bytes(&a, 2, 700, LX_ACTS_EVAL) - lx_acts_bytes(&a, 2, 700, LX_ACTS_EVAL_LOSS);
        cr_expect_eq(saved, (1400.0 - LX_EVAL_ROWS) * V * 4, "%s: %.0f bytes fewer", portable ? "portable" : "fast",
                     saved);
        saved = lx_eval_bytes(&a, NULL, 0, 0, 2, 700, 0) - lx_eval_bytes(&a, NULL, 0, 0, 2, 700, LX_RUN_LOSS);
        cr_expect_eq(saved, (1400.0 - LX_EVAL_ROWS) * V * 4, "%s: the plan %.0f bytes fewer",
                     portable ? "portable" : "fast", saved);
        float *whole = eval_losses(LX_ACTS_EVAL, V, NULL), *blocks = eval_losses(LX_ACTS_EVAL_LOSS, V, NULL);
        double worst = 0.0;
        for (int i = 0; i < 1400; i++)
            worst = fmax(worst, fabs((double)whole[i] - blocks[i]));
        if (portable)
            cr_expect(!memcmp(whole, blocks, sizeof(float) * 1400), "portable: losses differ by %g", worst);
        else
            cr_expect_leq(worst, 1e-5, "fast: losses differ by %g", worst);
        free(whole), free(blocks);
    }
    lx_numerics_set(LX_NUMERICS_FAST);
    /* the first non-finite logit is named as when every logit is held: row 0, token 5 */
    char m1[sizeof ((struct lx_error *)0)->msg], m2[sizeof m1];
    free(eval_losses(LX_ACTS_EVAL, V, m1)), free(eval_losses(LX_ACTS_EVAL_LOSS, V, m2));
    cr_expect(strstr(m1, "at window 0, position 0, token 5") != NULL, "%s", m1);
    cr_expect_str_eq(m2, m1);
    /* only some rows overflow: the first of them is named, whichever thread scans it */
    omp_set_num_threads(2);
    free(eval_losses_at(LX_ACTS_EVAL, V, m1, 1)), free(eval_losses_at(LX_ACTS_EVAL_LOSS, V, m2, 1));
    omp_set_num_threads(1);
    cr_expect(strstr(m1, "token 5") != NULL && strstr(m1, "position 0,") == NULL, "%s", m1);
    cr_expect_str_eq(m2, m1);
    cr_log_info("one overflowing column: %s", m1);
}

/* ---- evaluation that reads the answers' logits only ------------------------------ */

enum { AB = 2, AT = 700, AV = 8192 };

/* Window b's scored rows: an answer's, the last n_b before its end (7 and
** LX_ACTS_ANSWER_ROWS, the most a window may score). */
static int answer_scored(long i)
{
    long b = i / AT, t = i % AT, na = b ? LX_ACTS_ANSWER_ROWS : 7;
    return t >= AT - 1 - na && t < AT - 1;
}

/* A 2-layer model's forward over AB windows of AT tokens, acts as `mode`;
** the kept logits of the scored rows into lg (rows in order, AV each), the
** losses of every row into loss. poison: lm_head's row 5 at 3e38 (every
** logit of token 5 overflows); lx_acts_check_finite's message into msg.
** With stats: no targets (a pass for its attention statistics, summed into
** stats: layers × AB × heads × LX_ATTN_NSTATS), and an answer pass keeps no
** logits and no loss. */
static void answer_pass(int mode, float *lg, float *loss, int poison, char *msg, double *stats)
{
    struct lx_model m;
    const struct lx_arch *ap = head_model(&m, AV, 11, poison ? 32 : 0, 3e38f), a = *ap;
    struct lx_facts f = tfacts(16, 16, 2, AT);
    struct tstack st;
    tstack_make(&st, "rope", &f);
    struct lx_acts acts;
    struct lx_error err;
    cr_assert_eq(lx_acts_alloc(&acts, &a, AB, AT, mode, &err), LX_OK, "%s", err.msg);
    int *tok = malloc(sizeof(int) * AB * AT), *tgt = malloc(sizeof(int) * AB * AT);
    for (int i = 0; i < AB * AT; i++)
        tok[i] = (i * 37 + 11) % AV, tgt[i] = answer_scored(i) ? (i * 53 + 5) % AV : -1;
    acts.stats = stats;
    lx_model_forward(&m, &st.spec, tok, stats ? NULL : tgt, &acts);
    int rc = lx_acts_check_finite(&acts, AV, AB, stats ? NULL : tgt, &err);
    snprintf(msg, sizeof err.msg, "%s", rc < 0 ? err.msg : "no error");
    for (long i = 0; stats && mode == LX_ACTS_EVAL_ANSWER && i < AB * AT; i++)
        if (lx_acts_logits(&acts, i) || acts.loss[i] != 0.0f) {
            cr_expect(0, "row %ld: logits kept or a loss without targets", i);
            break;
        }
    for (long i = 0, k = 0; lg && i < AB * AT; i++) {
        const float *row = lx_acts_logits(&acts, i);
        if (mode == LX_ACTS_EVAL_ANSWER)
            cr_expect_eq(row == NULL, !answer_scored(i), "row %ld: logits %s", i, row ? "kept" : "not kept");
        if (answer_scored(i) && row)
            memcpy(lg + k++ * AV, row, sizeof(float) * AV);
    }
    if (loss)
        memcpy(loss, acts.loss, sizeof(float) * AB * AT);
    free(tok), free(tgt);
    lx_acts_release(&acts);
    tstack_free(&st);
    lx_model_release(&m);
}

static double bytes64(double n)
{
    return ceil(n / 64) * 64;
}

/* An answer pass keeps the scored rows' logits alone, and they are the whole
** pass's: the same bits in portable numerics (a product gives a row block the
** bits of the whole), within the fp32 rounding of a 32-term logit in fast;
** the same losses; (N − its rows)·V fewer floats held, in the plan too; a
** non-finite value on a row it computes is named. */
Test(tiled, answer_passes_keep_the_answers_logits_alone, .timeout = 60)
{
    struct lx_arch a = {.mode = LX_MODEL_CAUSAL, .layers = 2, .d_model = 32, .heads = 2, .d_head = 16,
                        .d_mlp = 64, .mlp = LX_MLP_GELU, .vocab = AV};
    long N = AB * AT, NA = 7 + LX_ACTS_ANSWER_ROWS, keep = AB * LX_ACTS_ANSWER_ROWS;
    float *l1 = malloc(sizeof(float) * NA * AV), *l2 = malloc(sizeof(float) * NA * AV);
    float *s1 = malloc(sizeof(float) * N), *s2 = malloc(sizeof(float) * N);
    char m1[sizeof ((struct lx_error *)0)->msg], m2[sizeof m1];
    for (int portable = 0; portable < 2; portable++) {
        const char *mode = portable ? "portable" : "fast";
        lx_numerics_set(portable ? LX_NUMERICS_PORTABLE : LX_NUMERICS_FAST);
        double nb = portable ? LX_EVAL_ROWS : N;    /* the final norm's rows held */
        double want = bytes64(nb * 32 * 4) + bytes64(N * AV * 4.0) - bytes64(keep * 32 * 4.0) -
                      bytes64(keep * AV * 4.0) - bytes64(N * 4.0);
        double saved = lx_acts_bytes(&a, AB, AT, LX_ACTS_EVAL) - lx_acts_bytes(&a, AB, AT, LX_ACTS_EVAL_ANSWER);
        cr_expect_eq(saved, want, "%s: %.0f bytes fewer, want %.0f", mode, saved, want);
        saved = lx_eval_bytes(&a, NULL, 0, 0, AB, AT, LX_RUN_KVCACHE) -
                lx_eval_bytes(&a, NULL, 0, 0, AB, AT, LX_RUN_KVCACHE | LX_RUN_ANSWER);
        cr_expect_eq(saved, want, "%s: the plan %.0f bytes fewer, want %.0f", mode, saved, want);
        answer_pass(LX_ACTS_EVAL, l1, s1, 0, m1, NULL);
        answer_pass(LX_ACTS_EVAL_ANSWER, l2, s2, 0, m2, NULL);
        cr_expect_str_eq(m2, "no error");
        double worst = 0.0, worst_loss = 0.0;
        for (long i = 0; i < NA * AV; i++)
            worst = fmax(worst, fabs((double)l1[i] - l2[i]));
        for (long i = 0; i < N; i++)
            worst_loss = fmax(worst_loss, fabs((double)s1[i] - s2[i]));
        if (portable) {
            cr_expect(!memcmp(l1, l2, sizeof(float) * NA * AV), "portable: logits differ by %g", worst);
            cr_expect(!memcmp(s1, s2, sizeof(float) * N), "portable: losses differ by %g", worst_loss);
        } else {
            cr_expect_leq(worst, 1e-5, "fast: logits differ by %g", worst);
            cr_expect_leq(worst_loss, 1e-5, "fast: losses differ by %g", worst_loss);
        }
    }
    lx_numerics_set(LX_NUMERICS_FAST);
    /* token 5 overflows on every row (to inf, -inf or NaN as the kernel's order
    ** sums it): the whole pass names row 0's logit, the answer pass the first
    ** row it computes, the first scored */
    answer_pass(LX_ACTS_EVAL, NULL, NULL, 1, m1, NULL);
    answer_pass(LX_ACTS_EVAL_ANSWER, NULL, NULL, 1, m2, NULL);
    cr_expect(strstr(m1, "non-finite logit (") && strstr(m1, ") at window 0, position 0, token 5\n"), "%s", m1);
    cr_expect(strstr(m2, "non-finite logit (") && strstr(m2, ") at window 0, position 692, token 5\n"), "%s", m2);
    /* without targets (a pass for attention statistics) no head runs: no logits kept, every loss 0, the
    ** statistics a whole pass sums */
    static double st[2][2 * AB * 2 * LX_ATTN_NSTATS];
    answer_pass(LX_ACTS_EVAL, NULL, NULL, 0, m1, st[0]);
    answer_pass(LX_ACTS_EVAL_ANSWER, NULL, NULL, 0, m2, st[1]);
    cr_expect(!memcmp(st[0], st[1], sizeof st[0]), "the attention statistics differ without a head");
    free(l1), free(l2), free(s1), free(s2);
}

/* ---- the memory plan: O(T·d) where the tiled path runs ------------------------ */

extern const struct lx_task lx_task_ppl, lx_task_attn, lx_task_passkey;

Test(tiled, evaluation_holds_one_layer_with_its_phases_overlaid)
{
    /* d_model 128, 4 heads of 32 (q|k|v 384 floats a row), GELU MLP 64,
    ** vocab 256: per row, attention holds xn1, qkv, ao and the tiles' packed
    ** keys (128 + 384 + 128 + 128 floats), the MLP xn2 and h (128 + F; the activation overwrites h), the
    ** head xnf and the logits (128 + V). The three overlay one region as
    ** large as the largest; the loss needs no softmax rows (no probs: only
    ** training's backward reads them); more layers add nothing */
    struct lx_arch a = {.mode = LX_MODEL_CAUSAL, .layers = 2, .d_model = 128, .heads = 4, .d_head = 32,
                        .d_mlp = 64, .mlp = LX_MLP_GELU, .vocab = 256, .norm_eps = 1e-5, .init_std = 0.02};
    struct lx_arch wide = a, big_v = a, deep = a;
    wide.d_mlp = 64 + 2048;     /* MLP phase 128 + 2112 floats a row, above attention's 768 */
    big_v.vocab = 256 + 1024;   /* head phase 128 + 1280 */
    deep.layers = 12;
    for (int T = 4096; T <= 16384; T *= 2) {
        double base = lx_acts_bytes(&a, 1, T, 0);
        cr_expect_eq(lx_acts_bytes(&wide, 1, T, 0) - base, (2240.0 - 768) * T * 4, "T %d: MLP phase", T);
        cr_expect_eq(lx_acts_bytes(&big_v, 1, T, 0) - base, (1408.0 - 768) * T * 4, "T %d: head phase", T);
        cr_expect_eq(lx_acts_bytes(&deep, 1, T, 0), base, "T %d: one layer at a time", T);
    }
}

Test(tiled, memory_plan_grows_linearly_without_probabilities, .timeout = 30)
{
    /* the `make run` model (configs/quick.yaml), one window per pass */
    struct lx_arch a = {.mode = LX_MODEL_CAUSAL, .layers = 2, .d_model = 128, .heads = 4, .d_head = 32,
                        .d_mlp = 512, .mlp = LX_MLP_GELU, .vocab = 260, .norm_eps = 1e-5, .init_std = 0.02};
    double w = lx_model_bytes(&a, 0), nthr = omp_get_max_threads();
    for (int T = 8192; T <= 32768; T *= 2) {
        /* a ppl-like pass: what doubling T adds doubles when T doubles (linear), never 4x */
        double r = (lx_run_bytes(&a, 1, 4 * T, 0, 0) - lx_run_bytes(&a, 1, 2 * T, 0, 0)) /
                   (lx_run_bytes(&a, 1, 2 * T, 0, 0) - lx_run_bytes(&a, 1, T, 0, 0));
        cr_expect(r > 1.9 && r < 2.1, "T %d -> %d: tiled plan grows %.3fx", T, 2 * T, r);
        cr_expect(lx_acts_bytes(&a, 1, T, 0) < 1e3 * (double)T * (a.d_model + a.vocab),
                  "T %d: evaluation activations are O(T·d)", T);
        /* a pass that reads probabilities still counts its T x T buffer per thread */
        double tt = nthr * (double)T * T * 4;
        cr_expect(lx_run_bytes(&a, 1, T, 0, 1) - lx_run_bytes(&a, 1, T, 0, 0) >= tt,
                  "T %d: the probabilities (%.0f bytes) are counted", T, tt);
        double rp = (lx_run_bytes(&a, 1, 2 * T, 0, 1) - w) / (lx_run_bytes(&a, 1, T, 0, 1) - w);
        cr_expect(rp > 3.5, "T %d -> %d: the head path's plan grows %.3fx", T, 2 * T, rp);
    }
    /* llama.cpp's rounding of P for its f16 cache (activations: llamacpp) runs tiled too: linear, and
    ** its blocks' rows of P counted ((LX_TILE_BQ + 1) × T floats a thread), not a T x T buffer */
    lx_acts_llamacpp_set(1);
    lx_kv_set(LX_DT_F16);
    for (int T = 8192; T <= 32768; T *= 2) {
        double r = (lx_run_bytes(&a, 1, 4 * T, 0, 0) - lx_run_bytes(&a, 1, 2 * T, 0, 0)) /
                   (lx_run_bytes(&a, 1, 2 * T, 0, 0) - lx_run_bytes(&a, 1, T, 0, 0));
        cr_expect(r > 1.9 && r < 2.1, "T %d -> %d: the rounded tiles' plan grows %.3fx", T, 2 * T, r);
        double pn = nthr * (double)(LX_TILE_BQ + 1) * T * 4, extra = lx_run_bytes(&a, 1, T, 0, 0);
        lx_kv_set(0);
        extra -= lx_run_bytes(&a, 1, T, 0, 0);
        lx_kv_set(LX_DT_F16);
        cr_expect(extra >= pn && extra < pn + 65536, "T %d: the blocks' rows of P (%.0f bytes) counted: %.0f", T,
                  pn, extra);
    }
    lx_kv_set(0);
    lx_acts_llamacpp_set(0);
    /* the plan at 65536 tokens (a ppl cell the old plan refused at 33 GB) */
    cr_expect(lx_run_bytes(&a, 1, 65536, 0, 0) < 1.0 * (1 << 30), "ppl at 65536: %.0f bytes",
              lx_run_bytes(&a, 1, 65536, 0, 0));
    /* evaluation activations never allocate the T x T buffer up front */
    struct lx_acts acts;
    struct lx_error err;
    cr_assert_eq(lx_acts_alloc(&acts, &a, 1, 4096, 0, &err), LX_OK, "%s", err.msg);
    cr_expect_null(acts.att);
    cr_expect_null(acts.far);
    lx_acts_release(&acts);
    /* which tasks read probabilities is declared by the task */
    cr_expect_eq(lx_task_ppl.needs_probs, 0);
    /* attention statistics come from the tiles: no task reads whole rows now */
    cr_expect_eq(lx_task_attn.needs_probs, 0);
    cr_expect_eq(lx_task_passkey.needs_probs, 0);
}

/* The plan's per-cell memory (what `lenx run --dry-run` prints and checks against the memory
** available) follows what the cell's pass holds: a ppl cell reads losses only, so its logits
** are one block of LX_EVAL_ROWS rows (LX_RUN_LOSS), not its whole batch's (8192 tokens × the
** vocabulary); a passkey cell decodes through a KV cache and keeps its answers' logits alone
** (LX_RUN_ANSWER: LX_ACTS_ANSWER_ROWS rows a window). */
Test(tiled, plan_counts_one_block_of_logits_for_a_ppl_cell)
{
    struct lx_grid g;
    struct lx_plan plan;
    struct lx_error err = {""};
    const char *text = "name: h\nmethods: [rope]\ntasks: [ppl, passkey, attn]\nlengths: [4096]\n"
                       "models: {m: {arch: {d_model: 64, heads: 2, d_head: 32, d_mlp: 128, vocab: 4096}}}\n";
    cr_assert_eq(lx_grid_load_text(&g, text, "h.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_plan_build(&plan, &g, &err), LX_OK, "%s", err.msg);
    const struct lx_arch *a = &g.models[0].arch;
    int B = 8192 / 4096, seen = 0;
    double loss = lx_run_bytes(a, B, 4096, 0, LX_RUN_LOSS), whole = lx_run_bytes(a, B, 4096, 0, 0);
    double answer = lx_run_bytes(a, B, 4096, 0, LX_RUN_KVCACHE | LX_RUN_ANSWER);
    cr_assert_gt(whole - loss, 4.0 * (B * 4096 - LX_EVAL_ROWS) * a->vocab * 0.99, "the logits are most of it");
    cr_assert_lt(answer, whole + lx_run_bytes(a, B, 4096, 0, LX_RUN_KVCACHE) - lx_run_bytes(a, B, 4096, 0, 0) -
                             4.0 * (B * 4096 - B * LX_ACTS_ANSWER_ROWS) * a->vocab * 0.9,
                 "an answer pass holds its answers' logits alone (the attention's phase is the largest then)");
    for (int i = 0; i < plan.n_cells; i++) {
        const struct lx_cell *c = &plan.cells[i];
        const char *task = g.tasks[c->task].task->name;
        if (!strcmp(task, "ppl"))
            cr_expect_eq(c->mem, loss, "ppl cell: %.0f bytes planned, a losses-only pass holds %.0f", c->mem, loss);
        else if (!strcmp(task, "attn"))     /* no targets: no head, at most an answer pass's rows held */
            cr_expect_eq(c->mem, lx_run_bytes(a, B, 4096, 0, LX_RUN_ANSWER), "attn cell: %.0f bytes planned", c->mem);
        else
            cr_expect_eq(c->mem, answer, "%s cell: %.0f bytes planned, an answer pass holds %.0f", task, c->mem,
                         answer);
        seen++;
    }
    cr_expect_eq(seen, 3);
    lx_plan_release(&plan);
    lx_grid_release(&g);
}
