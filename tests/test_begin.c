/*
** tests/test_begin.c - models trained on windows without a start token
** (train: begin: text, StreamingLLM's vanilla pretraining; the default bos is
** its sink token): the ppl task reads them as they were trained, which is
** checked against the model's losses over windows laid out here by hand;
** retrieval tasks run them, a peer's protocol refuses them; the option leaves the keys of
** bos models as they were and travels with a checkpoint (which takes no
** mixture); bad uses are refused.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/engine/formats/formats.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/model/evaluate.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "tests/model_fixture.h"
#include "tests/shell.h"

static void setup(void)
{
    shell_setup("begin");
    (void)exists;
}

#define ARCH "arch: {mode: causal, layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64}"
#define TRAIN "length: 32, batch: 4, steps: 20, warmup: 5, eval_every: 10, eval_windows: 4"

/* 8 windows of 32 bytes: the corpus ppl reads with data: */
static const char text[] =
    "It was a bright cold day in April, and the clocks were striking thirteen. Winston Smith, his chin "
    "nuzzled into his breast in an effort to escape the vile wind, slipped quickly through the glass doors "
    "of Victory Mansions, though not quickly enough to stall.";

/* Both models on ppl of the data file at 32: plain trained with begin: text. */
static void run_pair(char *out, size_t n, const char *plain_train)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml, "name: pair\nnumerics: portable\nmodels:\n  tiny: {" ARCH ", train: {" TRAIN "}}\n"
             "  plain: {" ARCH ", train: {" TRAIN "%s}}\nmethods: [rope]\ntasks: [{ppl: {data: d.txt}}]\n"
             "lengths: [32]\n", plain_train);
    write_file("pair.yaml", yaml);
    cr_assert_eq(sh(out, n, "$L run pair.yaml --db r.db --quiet --no-table"), 0, "%s", out);
}

#define METRIC(model, name)                                                                                   \
    "select m.value from runs r join metrics m on m.run_id = r.id join models o on o.key = r.model_key where " \
    "o.name = '" model "' and r.sweep = 'pair' and m.name = '" name "'"

struct by_hand {
    const int32_t *ids;
    double sum;
    long n;
};

/* Window w of the text read without a start token: s[32w .. 32w+31], each
** predicting the next; the window's last has no target in it. */
static void hand_fill(void *ctx, long w, int *tok, int *tgt)
{
    const struct by_hand *h = ctx;
    for (int t = 0; t < 32; t++) {
        tok[t] = h->ids[32 * w + t];
        tgt[t] = t < 31 ? h->ids[32 * w + t + 1] : -1;
    }
}

static void hand_score(void *ctx, long w, const float *loss, const float *logits, const int *tgt)
{
    (void)w, (void)logits;
    struct by_hand *h = ctx;
    for (int t = 0; t < 32; t++)
        if (tgt[t] >= 0)
            h->sum += loss[t], h->n++;
}

Test(begin, text_models_are_read_as_they_were_trained, .init = setup, .fini = teardown, .timeout = 120)
{
    char out[16384];
    cr_assert_eq(strlen(text), 256);
    write_file("d.txt", text);
    run_pair(out, sizeof out, ", begin: text");
    cr_expect(strstr(out, "2 models trained") != NULL, "%s", out);
    /* a window of 32 scores 32 tokens after BOS, 31 without it */
    cr_expect_eq(sql_long("r.db", METRIC("tiny", "n_tokens")), 8 * 32);
    cr_expect_eq(sql_long("r.db", METRIC("plain", "n_tokens")), 8 * 31);
    /* plain's nll is its mean loss over the windows laid out here */
    char key[64], path[512], v[64];
    sql_text(key, sizeof key, "r.db", "select key from models where name = 'plain'");
    snprintf(path, sizeof path, "%s/models/%s.safetensors", dir, key);
    struct lx_model m;
    struct lx_ckpt_info info = {0};
    struct lx_error err = {""};
    cr_assert_eq(lx_model_load(&m, path, &info, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(info.begin_text, 1, "the checkpoint says how it was trained");
    int32_t *ids = NULL;
    cr_assert_eq(lx_tok_encode(&lx_byte_tokenizer, text, 256, &ids, &err), 256, "%s", err.msg);
    struct compiled c;
    compile(&c, "[rope]", 16, 32, 2, 32);
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    struct by_hand h = {.ids = ids};
    cr_assert_eq(lx_eval_windows(&m, &c.spec, 8, 32, 0, hand_fill, hand_score, &h, &err), LX_OK, "%s", err.msg);
    lx_numerics_set(LX_NUMERICS_FAST);
    sql_text(v, sizeof v, "r.db", METRIC("plain", "nll"));
    cr_expect_eq(h.n, 8 * 31);
    cr_expect(fabs(atof(v) - h.sum / (double)h.n) <= 1e-12, "stored %s, by hand %.17g", v, h.sum / (double)h.n);
    free(ids);
    compiled_release(&c);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    /* begin: bos written out is the default: plain is then tiny, the same model key and cell */
    run_pair(out, sizeof out, ", begin: bos");
    cr_expect(strstr(out, "0 run (0 ok, 0 failed), 2 already stored; 0 models trained") != NULL, "%s", out);
}

Test(begin, retrieval_runs_text_models_and_peers_refuse_them, .init = setup, .fini = teardown, .timeout = 120)
{
    char out[16384], key[64];
    write_file("d.txt", text);
    run_pair(out, sizeof out, ", begin: text");
    sql_text(key, sizeof key, "r.db", "select key from models where name = 'plain'");
    /* passkey on both: the text model reads each instance with a newline in BOS's place
    ** (tests/test_retrieval.c checks the prompts) */
    write_file("pk.yaml", "name: pk\nnumerics: portable\nmodels:\n  tiny: {" ARCH ", train: {" TRAIN "}}\n"
               "  plain: {" ARCH ", train: {" TRAIN ", begin: text}}\nmethods: [rope]\n"
               "tasks: [{ppl: {windows: 2}}, {passkey: {template: short, digits: 2, samples: 2}}]\nlengths: [128]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run pk.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_expect(strstr(out, "4 run (4 ok, 0 failed)") != NULL, "%s", out);
    cr_expect_eq(sql_long("r.db", "select count(*) from runs r join models o on o.key = r.model_key where "
                          "r.sweep = 'pk' and o.name = 'plain' and r.task like 'passkey%' and r.status = 'ok'"), 1);
    /* a peer's passkey lays its prompt out as the peer does, start token first: the cell fails, saying so */
    write_file("lm.yaml", "name: lm\nmodels:\n  plain: {" ARCH ", train: {" TRAIN ", begin: text}}\n"
               "methods: [rope]\ntasks: [{passkey: {protocol: landmark}}]\nlengths: [256]\n");
    cr_expect_neq(sh(out, sizeof out, "$L run lm.yaml --db r.db"), 0, "%s", out);
    cr_expect(strstr(out, "passkey: protocol landmark lays its prompt out as its peer does, start token first, and "
                     "this model was trained without one (train: begin: text)") != NULL, "%s", out);
    /* a peer's protocol puts its start token first: the cell fails, saying so */
    write_file("lc.yaml", "name: lc\nmodels:\n  plain: {" ARCH ", train: {" TRAIN ", begin: text}}\n"
               "methods: [rope]\ntasks: [{ppl: {protocol: llamacpp, data: d.txt}}]\nlengths: [32]\n");
    cr_expect_neq(sh(out, sizeof out, "$L run lc.yaml --db r.db"), 0, "%s", out);
    cr_expect(strstr(out, "ppl: protocol llamacpp puts the peer's start token before its windows, and this model "
                     "was trained without one (train: begin: text)") != NULL, "%s", out);
    /* as a brought checkpoint it is still a text model: the same ppl and passkey, score refuses it */
    cr_assert_eq(sh(out, sizeof out, "cp models/%s.safetensors ck.safetensors", key), 0, "%s", out);
    write_file("ck.yaml", "name: ckp\nnumerics: portable\nmodels:\n  ck: {checkpoint: ck.safetensors}\n"
               "methods: [rope]\ntasks: [{passkey: {template: short, digits: 2, samples: 2}}]\nlengths: [128]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run ck.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    char lp[2][64];     /* the same model, the same instances, read the same way: the same bits */
    for (int k = 0; k < 2; k++)
        sql_text(lp[k], sizeof lp[k], "r.db", k ? "select m.value from runs r join metrics m on m.run_id = r.id "
                 "where r.sweep = 'ckp' and m.name = 'answer_logprob'" : "select m.value from runs r join metrics m "
                 "on m.run_id = r.id join models o on o.key = r.model_key where r.sweep = 'pk' and o.name = 'plain' "
                 "and m.name = 'answer_logprob'");
    cr_expect(lp[0][0] && strcmp(lp[0], lp[1]) == 0, "passkey's answer log-prob: trained %s, checkpoint %s", lp[0],
              lp[1]);
    write_file("ck.yaml", "name: ck\nnumerics: portable\nmodels:\n  ck: {checkpoint: ck.safetensors}\n"
               "methods: [rope]\ntasks: [{ppl: {data: d.txt}}]\nlengths: [32]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run ck.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    char a[64], b[256];
    sql_text(a, sizeof a, "r.db", "select m.value from runs r join metrics m on m.run_id = r.id where r.sweep = 'ck'"
             " and m.name = 'nll'");
    snprintf(b, sizeof b, "select m.value from runs r join metrics m on m.run_id = r.id where r.sweep = 'pair' and "
             "r.model_key = '%s' and m.name = 'nll'", key);
    char c2[64];
    sql_text(c2, sizeof c2, "r.db", b);
    cr_expect(a[0] && strcmp(a, c2) == 0, "checkpoint nll %s vs trained %s", a, c2);
    cr_expect_neq(sh(out, sizeof out, "printf 'once upon a time' > t.txt && $L score --model ck.safetensors "
                     "--text t.txt"), 0, "%s", out);
    cr_expect(strstr(out, "ck.safetensors was trained on windows without a start token (begin: text), and score "
                     "puts one before every window") != NULL, "%s", out);
    /* nor can it be fine-tuned on a mixture, whose instances begin with one */
    write_file("mx.yaml", "name: mx\nmodels:\n  ck:\n    checkpoint: ck.safetensors\n    mixture: [{passkey: "
               "{weight: 0.5}}]\nmethods: [{rope: {finetune: 2}}]\ntasks: [ppl]\nlengths: [32]\n");
    cr_expect_eq(sh(out, sizeof out, "$L run mx.yaml --db r.db --dry-run"), 2, "%s", out);
    cr_expect(strstr(out, "mx.yaml:5:14: model 'ck': the checkpoint was trained on windows without a start token, "
                     "and a mixture's instances start with one") != NULL, "%s", out);
}

/* attn reads a text model's windows as ppl does; its sink_mass is key 0's
** probability, which rows a window has dropped it from do not see at all */
Test(begin, attn_measures_the_first_token_of_text_models, .init = setup, .fini = teardown, .timeout = 120)
{
    char out[16384];
    write_file("at.yaml", "name: at\nnumerics: portable\nmodels:\n  plain: {" ARCH ", train: {" TRAIN ", begin: text}}\n"
               "methods: [rope, [rope, {window: {size: 4}}], [rope, {zerosink: {logit: 1}}]]\n"
               "tasks: [{attn: {windows: 1, from: 0.5}}]\nlengths: [64]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run at.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_expect(strstr(out, "3 run (3 ok, 0 failed)") != NULL, "%s", out);
#define AT(method, name) "select m.value from runs r join metrics m on m.run_id = r.id where r.sweep = 'at' and " \
                         "r.method = '" method "' and m.name = '" name "'"
    char v[64];
    sql_text(v, sizeof v, "r.db", AT("rope+window(size=4)", "sink_mass"));
    cr_expect(v[0] && atof(v) == 0.0, "rows 32.. of a window of 4 never see key 0: %s", v);
    sql_text(v, sizeof v, "r.db", AT("rope", "sink_mass"));
    cr_expect(atof(v) > 0.0 && atof(v) < 1.0, "%s", v);
    sql_text(v, sizeof v, "r.db", AT("rope", "sink_mass:l0"));
    cr_expect(atof(v) > 0.0 && atof(v) < 1.0, "%s", v);
    cr_expect_eq(sql_long("r.db", "select count(*) from runs r join metrics m on m.run_id = r.id where "
                          "m.name = 'zerosink_mass'"), 1, "only the zero-sink stack stores its mass");
    sql_text(v, sizeof v, "r.db", AT("rope+zerosink(logit=1)", "zerosink_mass"));
    cr_expect(atof(v) > 0.0 && atof(v) < 1.0, "%s", v);
}

Test(begin, bad_uses_are_refused_where_they_are_written, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192];
    write_file("m.yaml", "name: m\nmodels:\n  m: {arch: {mode: mlm, layers: 1, d_model: 32, heads: 2, d_head: 16},\n"
               "      train: {length: 32, begin: text}}\nmethods: [rope]\ntasks: [mlm]\nlengths: [32]\n");
    cr_expect_eq(sh(out, sizeof out, "$L run m.yaml --db r.db"), 2, "%s", out);
    cr_expect(strstr(out, "m.yaml:4:34: model 'm': begin: text cuts causal windows; a masked LM reads no start "
                     "token") != NULL, "%s", out);
    write_file("x.yaml", "name: x\nmodels:\n  m: {train: {length: 32, begin: txt}}\nmethods: [rope]\n"
               "tasks: [ppl]\nlengths: [32]\n");
    cr_expect_eq(sh(out, sizeof out, "$L run x.yaml --db r.db"), 2, "%s", out);
    cr_expect(strstr(out, "x.yaml:3:") != NULL && strstr(out, "bos|text") != NULL, "%s", out);
}
