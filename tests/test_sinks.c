/*
** tests/test_sinks.c - learned sinks ({zerosink: {learned: true}}: a logit
** z + w_(layer, head) per head, w the model's tensor layers.L.attn.sink)
** through the program: a grid trains them, the checkpoint carries them and
** `lenx show model` prints them, the attn task measures them, the exporters
** refuse them (no Llama has the extra logit); a stack must
** read a model's learned parts and a model must have the ones its stack
** reads. Continual pretraining (finetune: on a training-time method) of a
** method with learned parameters trains its base model with them. The
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
#include "tests/shell.h"
#include "tests/stack.h"

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
