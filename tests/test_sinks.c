/*
** tests/test_sinks.c - learned sinks ({zerosink: {learned: true}}: a logit
** z + w_(layer, head) per head, w the model's tensor layers.L.attn.sink)
** through the program: a grid trains them, the checkpoint carries them and
** `lenx show model` prints them, the attn task measures them, the exporters
** refuse them (no Llama has the extra logit); a stack must
** read a model's learned parts and a model must have the ones its stack
** reads. Continual pretraining (finetune: on a training-time method) of a
** method with learned parameters trains its base model with them; with
** `add: true` the base model is trained without them (shared with the stack
** that never has them, or a checkpoint) and grown by their tensors, each at
** its initial value, before the fine-tuning. The
** gradients are checked by finite differences in tests/test_model.c, every
** attention path against the naive one in tests/test_tiled.c.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/params.h"
#include "harness/engine/model/model.h"
#include "harness/engine/model/train.h"
#include "tests/shell.h"
#include "tests/stack.h"
#include "tests/tokfile.h"

static void setup(void)
{
    shell_setup("sinks");
    (void)exists;
}

#define ARCH "arch: {mode: causal, layers: 2, d_model: 32, heads: 2, d_head: 16, d_mlp: 64}"
#define TRAIN "length: 32, batch: 4, steps: 30, warmup: 5, eval_every: 30, eval_windows: 4"

/* The w of every layer's heads as `lenx show model` prints them: rows of [a, b]. */
static int read_sinks(const char *out, double w[2][2])
{
    const char *p = strstr(out, "\"sinks\": [");
    p = p ? strchr(p, '[') : NULL;      /* the outer list's */
    int n = 0;
    for (int l = 0; p && l < 2; l++) {
        p = strchr(p + 1, '[');
        n += p ? sscanf(p, "[%lf, %lf]", &w[l][0], &w[l][1]) : 0;
    }
    return n;
}

Test(sinks, trained_shown_and_measured, .init = setup, .fini = teardown, .timeout = 180)
{
    char out[16384];
    write_file("s.yaml", "name: s\nnumerics: portable\nmodels:\n  m: {" ARCH ", train: {" TRAIN "}}\n"
               "methods: [[rope, {zerosink: {logit: 1, learned: true}}]]\n"
               "tasks: [{attn: {windows: 1, from: 0.5}}]\nlengths: [64]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L show model m --db r.db"), 0, "%s", out);
    cr_expect(strstr(out, "\"sinks\":true") != NULL, "the architecture says so: %s", out);
    cr_expect(strstr(out, "{\"zerosink\":{\"logit\":1,\"learned\":true}}") != NULL, "%s", out);
    double w[2][2];
    cr_assert_eq(read_sinks(out, w), 4, "a row of two heads per layer: %s", out);
    for (int l = 0; l < 2; l++)     /* 30 AdamW steps at lr 1e-3 move every w off its start, 0 */
        for (int h = 0; h < 2; h++)
            cr_expect(w[l][h] != 0.0 && fabs(w[l][h]) < 0.1, "layer %d head %d: w %g", l, h, w[l][h]);
    char v[64];
    sql_text(v, sizeof v, "r.db", "select m.value from metrics m where m.name = 'zerosink_mass'");
    cr_expect(atof(v) > 0.0 && atof(v) < 1.0, "the sinks' share of the attention: %s", v);
    /* neither transformers' Llama nor llama.cpp has the extra logit */
    for (int gguf = 0; gguf < 2; gguf++) {
        cr_expect_eq(sh(out, sizeof out, gguf ? "$L export --gguf m.gguf --model m --db r.db"
                                              : "$L export --hf hf --model m --db r.db"), 2, "%s", out);
        cr_expect(strstr(out, "with a GELU MLP and learned sinks") != NULL, "%s", out);
    }
}

/* Continual pretraining (finetune: on a method training already runs) trains
** the base model with the method, learned parameters included: before, the
** base of T5's bias, KERPLE's kernel, SSMax's learned scale or a learned sink
** was made without their tensors, and training stopped on an internal error. */
Test(sinks, continual_pretraining_keeps_learned_parameters, .init = setup, .fini = teardown, .timeout = 240)
{
    char out[16384];
    write_file("c.yaml", "name: c\nnumerics: portable\nmodels:\n  m: {" ARCH ", train: {" TRAIN "}}\n"
               "methods: [[{t5bias: {finetune: {steps: 5, length: 64}}}], [{kerple: {finetune: 5}}],\n"
               "  [rope, {zerosink: {learned: true, finetune: {steps: 5, length: 64}}}]]\n"
               "tasks: [ppl]\nlengths: [64]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run c.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_expect(strstr(out, "3 run (3 ok, 0 failed)") != NULL, "%s", out);
    cr_expect_eq(sql_long("r.db", "select count(*) from runs r join metrics m on m.run_id = r.id where "
                          "m.name = 'ppl' and m.value > 1 and m.value < 300"), 3, "%s", out);
}

Test(sinks, a_stack_reads_what_the_model_learned, .init = setup, .fini = teardown, .timeout = 120)
{
    char out[16384];
    write_file("s.yaml", "name: s\nnumerics: portable\nmodels:\n  m: {" ARCH ", train: {" TRAIN "}}\n"
               "methods: [[rope, {zerosink: {learned: true}}]]\ntasks: [ppl]\nlengths: [64]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    write_file("c.yaml", "name: c\nmodels:\n  ck: {checkpoint: ck.safetensors}\n"
               "methods: [[rope, zerosink]]\ntasks: [ppl]\nlengths: [64]\n");
    cr_assert_eq(sh(out, sizeof out, "cp models/*.safetensors ck.safetensors"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L run c.yaml --db r.db"), 2, "%s", out);
    cr_expect(strstr(out, "c.yaml:4:11: the stack 'rope+zerosink' trains differently from checkpoint model 'ck'") !=
              NULL, "%s", out);

    /* the engine's own check, whatever path a model takes to it */
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 1, a.d_model = 8, a.heads = 2, a.d_head = 4, a.d_mlp = 8, a.vocab = 16, a.sinks = 1;
    lx_params_finish(&lx_arch_schema, &a);
    struct lx_model m;
    lx_model_init(&m, &a, 1);
    cr_expect_eq(m.v.layer[0].sink[0], 0.0f, "w starts at 0: the sink's logit is z");
    struct lx_facts f = tfacts(4, 16, 2, 16);
    struct tstack plain, learned;
    tstack_make(&plain, "[rope, zerosink]", &f);
    tstack_make(&learned, "[rope, {zerosink: {learned: true}}]", &f);
    struct lx_error err = {""};
    cr_expect_eq(lx_model_spec_check(&m, &plain.spec, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "the model learned a sink logit per layer and head (arch sinks) and the stack reads "
                     "none") != NULL, "%s", err.msg);
    cr_expect_eq(lx_model_spec_check(&m, &learned.spec, &err), LX_OK, "%s", err.msg);
    lx_model_release(&m);
    a.sinks = 0;
    lx_model_init(&m, &a, 1);
    cr_expect_eq(lx_model_spec_check(&m, &learned.spec, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "reads sink logits the model does not have") != NULL, "%s", err.msg);
    lx_model_release(&m);
    tstack_free(&plain);
    tstack_free(&learned);
}

/* `add: true` leaves a training-only method out of the base model: the sinks
** fine-tuned into the plain RoPE model (its key the lineage's base: trained
** once for both stacks), beside continual pretraining, whose base learns them
** from the start (one more model); a method fine-tuned in anyway refuses it. */
Test(sinks, added_by_finetuning, .init = setup, .fini = teardown, .timeout = 240)
{
    char out[16384];
    write_file("a.yaml", "name: a\nnumerics: portable\nmodels:\n  m: {" ARCH ", train: {" TRAIN "}}\n"
               "methods: [rope, [rope, {zerosink: {learned: true, finetune: {steps: 5, add: true}}}],\n"
               "  [rope, {zerosink: {learned: true, finetune: 5}}], [{t5bias: {finetune: {steps: 5, add: true}}}]]\n"
               "tasks: [ppl]\nlengths: [64]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run a.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_expect(strstr(out, "4 run (4 ok, 0 failed)") != NULL, "%s", out);
    cr_expect_eq(sql_long("r.db", "select count(*) from models"), 6, "rope, two fine-tunings of it, the continual "
                 "pretraining's base and its fine-tuning, T5's bias fine-tuned into a model without positions");
    char rope[64], key[64];
    sql_text(rope, sizeof rope, "r.db",
             "select key from models where config like '%stack_:[{_rope_:{_base_:10000,_layout_:_half_}}],%'");
    sql_text(key, sizeof key, "r.db", "select key from models where config like '%zerosink%add%'");
    cr_assert(rope[0] && key[0], "the plain model '%s', the one with sinks added '%s'", rope, key);
    char cmd[256], want[128];
    snprintf(cmd, sizeof cmd, "$L show model %.16s --db r.db", key);
    cr_assert_eq(sh(out, sizeof out, cmd), 0, "%s", out);
    snprintf(want, sizeof want, "\"lineage\": {\"base\":\"%.16s\"", rope);
    cr_expect(strstr(out, want) != NULL, "fine-tuned from the plain model (%s): %s", want, out);
    cr_expect(strstr(out, "\"sinks\":true") != NULL, "%s", out);
    double w[2][2];
    cr_assert_eq(read_sinks(out, w), 4, "%s", out);
    char plan[16384];
    cr_assert_eq(sh(plan, sizeof plan, "$L run a.yaml --db r.db --dry-run"), 0, "%s", plan);
    snprintf(want, sizeof want, "model=m [%.16s] from [%.16s]", key, rope);
    cr_expect(strstr(plan, want) != NULL, "the plan names the base model: '%s' in\n%s", want, plan);
    cr_assert_eq(sh(plan, sizeof plan, "$L list models --db r.db"), 0, "%s", plan);
    cr_expect(strstr(plan, "rope+zerosink(added) ") && strstr(plan, "rope+zerosink(ft) ") &&
              strstr(plan, "t5bias(added) "), "which method each fine-tuning added or continued:\n%s", plan);
    for (int l = 0; l < 2; l++)     /* 5 steps from 0 */
        for (int h = 0; h < 2; h++)
            cr_expect(w[l][h] != 0.0 && fabs(w[l][h]) < 0.05, "layer %d head %d: w %g", l, h, w[l][h]);
    /* the method string says which: `ft` marks a method the base model has not */
    cr_expect_eq(sql_long("r.db", "select count(*) from runs where method like 'rope+zerosink(ft,learned=true) ft@%'"),
                 1);
    cr_expect_eq(sql_long("r.db", "select count(*) from runs where method like 'rope+zerosink(learned=true) ft@%'"), 1);
    write_file("b.yaml", "name: b\nmodels:\n  m: {" ARCH ", train: {" TRAIN "}}\n"
               "methods: [[rope, {pi: {scale: 2, finetune: {steps: 5, add: true}}}]]\ntasks: [ppl]\nlengths: [64]\n");
    cr_expect_eq(sh(out, sizeof out, "$L run b.yaml --db x.db"), 2, "%s", out);
    cr_expect(strstr(out, "b.yaml:4:60: method 'pi': 'add' is for training-only methods") != NULL, "%s", out);
}

/* A model grown by the tensors a fine-tuning adds keeps every tensor it had,
** bit for bit; the new sinks start at 0, so the grown model reading them
** computes what the model did with the fixed zero sink, and KERPLE's kernel
** starts where a new model's does. */
Test(sinks, a_grown_model_keeps_its_tensors, .timeout = 60)
{
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 16, a.heads = 2, a.d_head = 8, a.d_mlp = 32, a.vocab = 32;
    lx_params_finish(&lx_arch_schema, &a);
    struct lx_model m, g, fresh;
    lx_model_init(&m, &a, 7);
    lx_model_init(&g, &a, 7);
    struct lx_arch b = a;
    b.sinks = 1;
    b.kerple = 1;
    lx_model_grow(&g, &b, 11);
    lx_model_init(&fresh, &b, 11);
    int na = lx_arch_tensors(&a, NULL), nb = lx_arch_tensors(&b, NULL), kept = 0, added = 0;
    struct lx_tensor_info *ta = calloc((size_t)na, sizeof *ta), *tb = calloc((size_t)nb, sizeof *tb);
    lx_arch_tensors(&a, ta);
    lx_arch_tensors(&b, tb);
    cr_assert_gt(nb, na);
    for (int i = 0; i < nb; i++) {
        long cnt = tb[i].shape[0] * (tb[i].ndim == 2 ? tb[i].shape[1] : 1);
        int j = 0;
        while (j < na && strcmp(ta[j].name, tb[i].name) != 0)
            j++;
        const float *want = j < na ? m.w + ta[j].offset : fresh.w + tb[i].offset;
        cr_expect_eq(memcmp(g.w + tb[i].offset, want, sizeof(float) * (size_t)cnt), 0, "%s", tb[i].name);
        kept += j < na;
        added += j == na;
        if (strstr(tb[i].name, "attn.sink"))
            for (long k = 0; k < cnt; k++)
                cr_expect_eq(g.w[tb[i].offset + k], 0.0f, "%s[%ld]", tb[i].name, k);
    }
    cr_expect_eq(kept, na);
    cr_expect_eq(added, nb - na);
    /* sinks alone: the grown model's forward with learned sinks is the fixed zero sink's */
    struct lx_model s;
    lx_model_init(&s, &a, 7);
    struct lx_arch c = a;
    c.sinks = 1;
    lx_model_grow(&s, &c, 11);
    struct lx_facts f = tfacts(8, 16, 2, 16);
    struct tstack fixed, learned;
    tstack_make(&fixed, "[rope, {zerosink: {logit: 0.5}}]", &f);
    tstack_make(&learned, "[rope, {zerosink: {logit: 0.5, learned: true}}]", &f);
    int tok[2 * 16], tgt[2 * 16];
    for (int i = 0; i < 2 * 16; i++)
        tok[i] = (i * 7 + 3) % 32, tgt[i] = (i * 5 + 1) % 32;
    struct lx_acts x, y;
    struct lx_error err = {""};
    cr_assert_eq(lx_acts_alloc(&x, &a, 2, 16, 1, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_acts_alloc(&y, &c, 2, 16, 1, &err), LX_OK, "%s", err.msg);
    double l0 = lx_model_forward(&m, &fixed.spec, tok, tgt, &x), l1 = lx_model_forward(&s, &learned.spec, tok, tgt, &y);
    cr_expect(l0 == l1 && isfinite(l0), "fixed %.17g, grown %.17g", l0, l1);
    lx_acts_release(&x);
    lx_acts_release(&y);
    tstack_free(&fixed);
    tstack_free(&learned);
    free(ta);
    free(tb);
    lx_model_release(&m);
    lx_model_release(&g);
    lx_model_release(&fresh);
    lx_model_release(&s);
}

/* Learned sinks fine-tuned into stories260K (llama2.c's, trained without
** them: a checkpoint is its own base model); brought back with that stack,
** the fine-tuned checkpoint is that model: nothing is trained and its ppl is
** the sweep's to the last digit sqlite prints. */
Test(sinks, added_to_a_checkpoint, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char out[16384], yaml[1024], key[32], ppl[64], again[64];
    const char *stack = "[[{rope: {layout: interleaved}}, {zerosink: {learned: true, finetune: {steps: 2, length: 128, "
                        "batch: 2, lr: 5e-4, add: true}}}]]";
    snprintf(yaml, sizeof yaml,
             "name: s\nmodels: {s: {checkpoint: \"$R/../shared/models/stories260K/stories260K.bin\"}}"
             "\nmethods: %s\ntasks: [{ppl: {windows: 2, corpus: stories}}]\nlengths: [128]\n", stack);
    write_file("s.yaml", yaml);
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|\" s.yaml && $L run s.yaml --db s.db --quiet --no-table"), 0,
                 "%s", out);
    sql_text(key, sizeof key, "s.db", "select key from models where steps = 2");
    sql_text(ppl, sizeof ppl, "s.db", "select value from metrics where name = 'ppl'");
    cr_assert(key[0] && atof(ppl) > 1.0, "key '%s', ppl '%s'", key, ppl);
    cr_assert_eq(sh(out, sizeof out, "$L show model %s --db s.db", key), 0, "%s", out);
    cr_expect(strstr(out, "\"sinks\":true") != NULL, "%s", out);
    snprintf(yaml, sizeof yaml, "name: b\nmodels: {f: {checkpoint: models/%s.safetensors}}\nmethods: %s\n"
             "tasks: [{ppl: {windows: 2, corpus: stories}}]\nlengths: [128]\n", key, stack);
    write_file("b.yaml", yaml);
    cr_assert_eq(sh(out, sizeof out, "$L run b.yaml --db b.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(sql_long("b.db", "select count(*) from models where steps > 0"), 0, "nothing trained");
    sql_text(again, sizeof again, "b.db", "select value from metrics where name = 'ppl'");
    cr_expect_str_eq(again, ppl);
}

/* train's lr_method: the method tensors (here the sinks and a logit scale) on their own peak lr.
** Three steps of one model from the same gradients: lr_method = lr is the default update bit for
** bit (cutting the update at the method tensors changes nothing); lr_method = lr / 1e6 leaves every
** other weight where the default put it and moves the method tensors a millionth as far; a step
** of AdamW moves a weight by lr at most (|m| / sqrt(v) <= 1 from the first step on). */
Test(sinks, method_tensors_take_their_own_lr, .timeout = 60)
{
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.layers = 2, a.d_model = 16, a.heads = 2, a.d_head = 8, a.d_mlp = 32, a.vocab = 32, a.sinks = 1;
    a.logit_scale = 1;
    lx_params_finish(&lx_arch_schema, &a);
    struct lx_train_cfg c[3];
    for (int v = 0; v < 3; v++) {
        lx_params_defaults(&lx_train_schema, &c[v]);
        c[v].warmup = 0, c[v].steps = 3;
    }
    c[1].lr_method = c[1].lr;
    c[2].lr_method = c[2].lr * 1e-6;
    struct lx_model m[3];
    int nt = lx_arch_tensors(&a, NULL), n_meth = 0;
    struct lx_tensor_info *ti = calloc((size_t)nt, sizeof *ti);
    lx_arch_tensors(&a, ti);
    for (int v = 0; v < 3; v++) {
        lx_model_init(&m[v], &a, 5);
        struct lx_optim o;
        lx_optim_init(&o, &m[v]);
        for (long s = 0; s < 3; s++) {
            for (size_t i = 0; i < o.n; i++)     /* the same gradients every time, of either sign */
                o.grad[i] = (float)sin(0.37 * (double)i + (double)s);
            lx_optim_step(&o, &m[v], &c[v], s);
        }
        lx_optim_release(&o);
    }
    cr_expect_eq(memcmp(m[0].w, m[1].w, sizeof(float) * m[0].n_params), 0, "lr_method = lr is the default update");
    struct lx_model start;
    lx_model_init(&start, &a, 5);
    for (int i = 0; i < nt; i++) {
        long cnt = ti[i].shape[0] * (ti[i].ndim == 2 ? ti[i].shape[1] : 1);
        const float *w0 = start.w + ti[i].offset, *wd = m[0].w + ti[i].offset, *ws = m[2].w + ti[i].offset;
        n_meth += ti[i].method;
        cr_expect_eq(ti[i].method, strstr(ti[i].name, "attn.sink") || strstr(ti[i].name, "logit_scale"), "%s",
                     ti[i].name);
        for (long k = 0; k < cnt; k++) {
            if (!ti[i].method) {
                cr_expect_eq(ws[k], wd[k], "%s[%ld] moved as by default", ti[i].name, k);
                continue;
            }
            cr_expect(fabsf(wd[k] - w0[k]) > 1e-4f, "%s[%ld]: the default moves it", ti[i].name, k);
            cr_expect(fabsf(ws[k] - w0[k]) <= 3.0f * c[2].lr_method * 1.001f, "%s[%ld]: %g from %g", ti[i].name, k,
                      ws[k], w0[k]);
        }
    }
    cr_expect_eq(n_meth, 4, "a sink and a logit-scale vector a layer");
    free(ti);
    lx_model_release(&start);
    for (int v = 0; v < 3; v++)
        lx_model_release(&m[v]);
}
