/*
** tests/test_finetune.c - fine-tuning at a chosen length (docs/config.md#fine-tuning),
** end to end through the lenx binary: `finetune:` as a step count or a map,
** its errors at file:line:column, the keys (a step count's keys as before the
** map existed; spellings of the same settings one key; length, steps and data
** in the fine-tuned model's key), automatic scales that follow the
** fine-tuning length and keep it at evaluation, a real fine-tuning that
** lowers perplexity past the base model's training length, the lineage
** `lenx show model` prints, and fine-tunings of stories260K, a model lenx
** did not train, with and without a mixture of its own (skipped when it is
** not beside the checkout).
*/
#define _POSIX_C_SOURCE 200809L
#include "tests/shell.h"
#include "tests/tokfile.h"

static void setup(void)
{
    shell_setup("finetune");
    cr_assert_not_null(getenv("LENX_ROOT"), "LENX_ROOT must name the checkout (make test sets it)");
}

/* A causal model trained at length 128 (never trained here: dry runs only). */
#define MODEL_128                                                                                      \
    "models:\n  m: {arch: {layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64},"                 \
    " train: {length: 128, batch: 16, steps: 20, warmup: 5}}\n"

/* The same at length 32, for the refusals. */
#define MODEL_32                                                                                       \
    "models:\n  m: {arch: {layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64},"                 \
    " train: {length: 32, batch: 4, steps: 20, warmup: 5}}\n"

/* How many times `what` occurs in s. */
static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* `lenx run --dry-run` of one stack on MODEL_128 at 128 and 4096 into out. */
static void dry_run(char *out, size_t n, const char *stack)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml, "name: f\n" MODEL_128 "methods: [%s]\ntasks: [ppl]\nlengths: [128, 4096]\n", stack);
    write_file("f.yaml", yaml);
    cr_assert_eq(sh(out, n, "$L run f.yaml --db x.db --dry-run"), 0, "%s\n%s", stack, out);
}

/* A step count's keys are those lenx gave before `finetune:` took a map (run
** and model keys printed by the commit before it, 9d11bb6, on this sweep),
** and a map with steps alone or with the base model's own settings is the
** same fine-tuning: the same run keys and model key. */
Test(finetune, a_step_count_keeps_its_keys_and_equal_maps_share_them, .init = setup, .fini = teardown,
     .timeout = 30)
{
    static const char *const spellings[] = {
        "5", "{steps: 5}", "{steps: 5, length: 128, batch: 16, lr: 0.003, warmup: 0}",
    };
    char out[8192], stack[256];
    for (size_t i = 0; i < sizeof spellings / sizeof *spellings; i++) {
        snprintf(stack, sizeof stack, "[rope, {pi: {scale: 4, finetune: %s}}]", spellings[i]);
        dry_run(out, sizeof out, stack);
        cr_expect(strstr(out, "e9f8304209be5513  ppl  rope+pi(ft,scale=4) ft@128\xc3\x97" "5") != NULL, "%s:\n%s",
                  stack, out);
        cr_expect(strstr(out, "8354772b87c10ee3  ppl  rope+pi(ft,scale=4) ft@128\xc3\x97" "5") != NULL, "%s:\n%s",
                  stack, out);
        cr_expect_eq(count(out, "model=m [dfdb4c0342c4062f]"), 2, "%s:\n%s", stack, out);
    }
    /* another length is another model */
    dry_run(out, sizeof out, "[rope, {pi: {scale: 4, finetune: {steps: 5, length: 256}}}]");
    cr_expect(strstr(out, "dfdb4c0342c4062f") == NULL && strstr(out, "e9f8304209be5513") == NULL, "%s", out);
    cr_expect_eq(count(out, "rope+pi(ft,scale=4) ft@256\xc3\x97" "5"), 2, "%s", out);
}

/* scale: auto of a method fine-tuned at 1024 into a model trained at 128 is
** 1024 / 128 = 8, in training and at every evaluation length (128 and 4096
** alike), for each of the three frequency methods; plain RoPE and NoPE are
** fine-tuned too (continual pretraining at the longer length). */
Test(finetune, automatic_scales_follow_the_finetuning_length, .init = setup, .fini = teardown, .timeout = 30)
{
    static const char *const cases[][2] = {
        {"[rope, {yarn: {finetune: {steps: 400, length: 1024}}}]", "rope+yarn(ft,scale=8) ft@1024\xc3\x97" "400"},
        {"[rope, {pi: {scale: auto, finetune: {steps: 400, length: 1024}}}]",
         "rope+pi(ft,scale=8) ft@1024\xc3\x97" "400"},
        {"[rope, {ntk: {finetune: {steps: 400, length: 1024}}}]",
         "rope+ntk(ft,mode=static,scale=8) ft@1024\xc3\x97" "400"},
        {"[{rope: {finetune: {steps: 400, length: 1024}}}]", "rope ft@1024\xc3\x97" "400"},
        {"[{nope: {finetune: {steps: 400, length: 1024}}}]", "nope ft@1024\xc3\x97" "400"},
        /* at half the training length the auto scale stays 1 */
        {"[rope, {yarn: {finetune: {steps: 10, length: 64}}}]", "rope+yarn(ft,scale=1) ft@64\xc3\x97" "10"},
    };
    char out[8192];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dry_run(out, sizeof out, cases[i][0]);
        cr_expect_eq(count(out, cases[i][1]), 2, "%s: expected '%s' at both lengths in:\n%s", cases[i][0],
                     cases[i][1], out);
    }
    /* evaluation-only YaRN on the same model resolves per length, as before */
    dry_run(out, sizeof out, "[rope, yarn]");
    cr_expect(strstr(out, "rope+yarn(scale=1)  length=128") && strstr(out, "rope+yarn(scale=32)  length=4096"), "%s",
              out);
}

/* `lenx run file` exits 2 with "where: what" in its output and creates no database. */
static char out_of_last[4096];   /* the output of the last expect_refused */

static void expect_refused(const char *stack, const char *where, const char *what)
{
    char *out = out_of_last, yaml[1024], want[512];
    snprintf(yaml, sizeof yaml, "name: b\n" MODEL_32 "methods: [%s]\ntasks: [ppl]\nlengths: [32]\n", stack);
    write_file("b.yaml", yaml);
    cr_expect_eq(sh(out, sizeof out_of_last, "$L run b.yaml --db x.db"), 2, "%s\n%s", yaml, out);
    snprintf(want, sizeof want, "lenx: error: b.yaml:%s: %s", where, what);
    cr_expect(strstr(out, want) != NULL, "expected '%s' in:\n%s", want, out);
    cr_expect(!exists("x.db"), "a refused sweep must not create the database");
}

Test(finetune, bad_maps_are_refused_at_their_place, .init = setup, .fini = teardown, .timeout = 30)
{
    expect_refused("[rope, {ntk: {finetune: {steps: 10, lenght: 64}}}]", "4:47",
                   "method 'ntk' finetune: unknown parameter 'lenght'\n  hint: did you mean 'length'? known "
                   "parameters: steps, length, batch, lr, warmup, lr_method, add");
    expect_refused("[rope, {ntk: {finetune: {steps: 10, length: -3}}}]", "4:55",
                   "method 'ntk' finetune: 'length' = -3 is out of bounds [0, 1048576]");
    /* a window of one token predicts nothing (it ran "3 steps of 4 x 1 tokens") */
    expect_refused("[rope, {ntk: {finetune: {steps: 10, length: 1}}}]", "4:55",
                   "method 'ntk': finetune length 1 is too short: a window needs 2 tokens or more");
    expect_refused("[rope, {ntk: {finetune: {steps: 10, batch: 2.5}}}]", "4:54",
                   "method 'ntk' finetune: 'batch' must be an integer, got '2.5'");
    expect_refused("[rope, {ntk: {finetune: {length: 64}}}]", "4:35",
                   "method 'ntk': 'finetune' needs steps >= 1, and none is given");
    expect_refused("[rope, {ntk: {finetune: {steps: 10, warmup: 10}}}]", "4:55",
                   "method 'ntk': finetune warmup (10) must be below its steps (10)");
    expect_refused("[rope, {ntk: {finetune: [10]}}]", "4:35",
                   "method 'ntk': 'finetune' must be a number of steps >= 1 or a map, got 'a list'");
    expect_refused("[{rope: {finetune: {steps: 5, length: 64}}}, {ntk: {finetune: {steps: 10, length: 128}}}]", "4:56",
                   "methods 'rope' and 'ntk' are fine-tuned in one stack with different finetune settings");
    expect_refused("[rope, {ntk: {train: true}}]", "4:18", "ntk: trained in (train: true) it needs an explicit scale");
    expect_refused("[rope, {infoscale: {finetune: {steps: 10, length: 64}}}]", "4:41",
                   "method 'infoscale' acts at evaluation only and cannot be fine-tuned in");
    /* training positions drawn over a target shorter than the fine-tuning's windows: PoSE's skips would run
    ** backwards, randpos could not draw the window's ids (it aborted in validation); added, or kept from the base */
    expect_refused("[rope, {pose: {target: 64, finetune: {steps: 6, length: 128, add: true}}}]", "4:18",
                   "pose: target 64 is shorter than the 128-token windows it trains (the fine-tuning length)\n"
                   "  hint: target is the length the positions spread over: at least the window, e.g. 16 x it");
    expect_refused("[rope, {randpos: {target: 64}}, {pi: {scale: 4, finetune: {steps: 6, length: 128}}}]", "4:18",
                   "randpos: target 64 is shorter than the 128-token windows it trains (the fine-tuning length)");
    /* the plan counts the fine-tuning's batch x length like a training: 100,000 windows of 2^20 tokens
    ** hold 1e11 tokens' activations, far beyond any machine's memory */
    expect_refused("[{rope: {finetune: {steps: 2, length: 1048576, batch: 65536}}}]", "4:11", "model 'm' needs ");
    cr_expect(strstr(out_of_last, "to fine-tune (weights") != NULL, "%s", out_of_last);
    /* the batch's bound is the training's, 2^16 (it was 100,000) */
    expect_refused("[{rope: {finetune: {steps: 2, batch: 65537}}}]", "4:48",
                   "method 'rope' finetune: 'batch' = 65537 is out of bounds [0, 65536]");
    /* a mixture's instances are made at the fine-tuning length: a needle (at least 97 bytes) needs room */
    char out[4096];
    write_file("m.yaml", "name: m\nmodels:\n  r:\n    arch: {layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64}\n"
               "    train: {length: 192, batch: 4, steps: 10, warmup: 2}\n"
               "    mixture: [{needle: {template: short, weight: 0.9, score: answer}}]\n"
               "methods:\n  - [{rope: {finetune: {steps: 3, length: 16}}}]\ntasks: [ppl]\nlengths: [192]\n");
    cr_expect_eq(sh(out, sizeof out, "$L run m.yaml --db x.db"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: m.yaml:8:5: the stack 'rope ft@16\xc3\x97" "3' fine-tunes model 'r' at length "
                     "16, too short for its mixture task 'needle': needle: length 16 is too short") != NULL, "%s", out);
}

/* A base model with a needle mixture, trained at 192, continued at 384: the
** mixture's instances are made at 384 (lx_mix_window draws their lengths
** up to the window), and the model sees 3 x 4 x 384 = 4608 tokens. */
Test(finetune, a_mixture_is_made_at_the_finetuning_length, .init = setup, .fini = teardown, .timeout = 120)
{
    char out[8192];
    write_file("m.yaml", "name: m\nmodels:\n  r:\n    arch: {layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64}\n"
               "    train: {length: 192, batch: 4, steps: 10, warmup: 2}\n"
               "    mixture: [{needle: {template: short, weight: 0.9, score: answer}}]\n"
               "methods:\n  - [{rope: {finetune: {steps: 3, length: 384}}}]\ntasks: [{ppl: {windows: 1}}]\n"
               "lengths: [384]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run m.yaml --db m.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(sql_long("m.db", "select count(*) from models where steps = 3 and tokens = 4608 and config like "
                                  "'%_mixture_:[{_name_:_needle_%'"), 1);
    cr_expect_eq(sql_long("m.db", "select count(*) from runs where status = 'ok'"), 1);
}

/* A model trained at 32 tokens, fine-tuned with NTK (scale auto: 128 / 32 =
** 4) at 128 for 30 steps, has a lower perplexity at 128 than the same base
** model without fine-tuning, with RoPE alone or with NTK at evaluation
** only. Its key holds the length, the steps and the data; its base is the
** rope model, trained once; `lenx show model` prints the lineage, with
** 30 x 4 x 128 = 15360 tokens seen. About 2 s on one core. */
Test(finetune, ntk_finetuned_at_4x_lowers_ppl_at_4x, .init = setup, .fini = teardown, .timeout = 120)
{
    char out[16384];
    write_file("t.yaml", "name: t\nseed: 1\nmodels:\n  m:\n    arch: {layers: 2, d_model: 32, heads: 2, d_head: 16, "
               "d_mlp: 64}\n    train: {length: 32, batch: 8, steps: 150, warmup: 10, eval_every: 150, "
               "eval_windows: 4}\nmethods:\n  - rope\n  - [rope, ntk]\n  - [rope, {ntk: {finetune: {steps: 30, "
               "length: 128, batch: 4}}}]\ntasks: [{ppl: {windows: 8}}]\nlengths: [32, 128]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run t.yaml --db t.db --quiet --no-table"), 0, "%s", out);
    char ft[64], base[64], plain[64];
    sql_text(ft, sizeof ft, "t.db", "select value from runs r join metrics m on m.run_id = r.id where m.name = 'ppl' "
             "and r.length = 128 and r.method like 'rope+ntk(ft,mode=static,scale=4) ft@128%'");
    sql_text(base, sizeof base, "t.db", "select value from runs r join metrics m on m.run_id = r.id where "
             "m.name = 'ppl' and r.length = 128 and r.method = 'rope'");
    sql_text(plain, sizeof plain, "t.db", "select value from runs r join metrics m on m.run_id = r.id where "
             "m.name = 'ppl' and r.length = 128 and r.method = 'rope+ntk(mode=static,scale=4)'");
    cr_assert(*ft && *base && *plain, "ppl at 128: fine-tuned '%s', rope '%s', rope+ntk '%s'", ft, base, plain);
    cr_expect_lt(atof(ft), atof(base), "fine-tuned NTK %s against RoPE %s at 4x", ft, base);
    cr_expect_lt(atof(ft), atof(plain), "fine-tuned NTK %s against evaluation-only NTK %s at 4x", ft, plain);
    /* two models: the base (shared with rope) and the fine-tuned one */
    cr_expect_eq(sql_long("t.db", "select count(*) from models"), 2);
    cr_expect_eq(sql_long("t.db", "select count(*) from models where steps = 30 and tokens = 15360 and config like "
                                  "'%_finetune_:{_steps_:30,_length_:128,_batch_:4,%' and config like '%_data_:_%'"),
                 1, "the fine-tuned model's key holds length, steps and data");
    char key[32], base_key[32];
    sql_text(key, sizeof key, "t.db", "select key from models where steps = 30");
    sql_text(base_key, sizeof base_key, "t.db", "select model_key from runs where method = 'rope' limit 1");
    cr_assert_eq(sh(out, sizeof out, "$L show model %s --db t.db", key), 0, "%s", out);
    char want[256];
    snprintf(want, sizeof want, "\"lineage\": {\"base\":\"%s\",\"length\":128,\"steps\":30,\"tokens\":15360}",
             base_key);
    cr_expect(strstr(out, want) != NULL, "expected '%s' in:\n%s", want, out);
    cr_assert_eq(sh(out, sizeof out, "$L show model %s --db t.db", base_key), 0, "%s", out);
    cr_expect(strstr(out, "\"lineage\": null") != NULL, "a model trained from scratch has no lineage:\n%s", out);
    /* lenx score reads the fine-tuning length from the stored stack: at 64 tokens its NTK scale is still 4 */
    cr_assert_eq(sh(out, sizeof out, "$L score --model %s --db t.db --text $R/README.md --length 64 | head -12", key),
                 0, "%s", out);
    cr_expect(strstr(out, "\"methods\": \"rope+ntk(ft,mode=static,scale=4) ft@128\xc3\x97" "30[batch=4,") != NULL,
              "%s", out);
    /* brought back as a checkpoint with the stack it was fine-tuned with, it is that model: nothing is
    ** trained, and ppl at 128 is the sweep's to the last digit sqlite prints */
    char yaml[512], again[64];
    snprintf(yaml, sizeof yaml, "name: b\nmodels: {f: {checkpoint: models/%s.safetensors}}\nmethods: [[rope, {ntk: "
             "{finetune: {steps: 30, length: 128, batch: 4}}}]]\ntasks: [{ppl: {windows: 8}}]\nlengths: [128]\n", key);
    write_file("b.yaml", yaml);
    cr_assert_eq(sh(out, sizeof out, "$L run b.yaml --db b.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(sql_long("b.db", "select count(*) from models where steps > 0"), 0, "nothing trained");
    sql_text(again, sizeof again, "b.db", "select value from metrics where name = 'ppl'");
    cr_expect_str_eq(again, ft);
    /* fine-tuning it once more is refused: the checkpoint is not that stack's base model */
    write_file("c.yaml", "name: c\nmodels: {f: {checkpoint: b.safetensors}}\nmethods: [[rope, {ntk: {finetune: "
               "{steps: 5, length: 256}}}]]\ntasks: [ppl]\nlengths: [128]\n");
    snprintf(yaml, sizeof yaml, "cp models/%s.safetensors b.safetensors && $L run c.yaml --db c.db --dry-run", key);
    cr_expect_eq(sh(out, sizeof out, "%s", yaml), 2, "%s", out);
    cr_expect(strstr(out, "c.yaml:3:11: the stack 'rope+ntk(ft,mode=static,scale=0) ft@256\xc3\x97" "5' starts "
                     "fine-tuning from a model trained differently from checkpoint model 'f'") != NULL, "%s", out);
}

/* PoSE added by a fine-tuning (`add: true`, the paper's recipe beside PI fine-tuned in): the base model is trained
** once without it, shared with PI fine-tuned alone, and each fine-tuned model's key holds PoSE's target with the
** fine-tuning's map (that the drawn positions reach the trained weights: extrap/pose_and_randpos_ids_reach_the_
** trained_model). Two targets and PI alone: three fine-tunings, three models, each evaluated. */
Test(finetune, pose_added_by_a_finetuning_keys_its_target, .init = setup, .fini = teardown, .timeout = 120)
{
    char out[8192];
    write_file("p.yaml", "name: p\nseed: 1\nmodels:\n  m:\n    arch: {layers: 1, d_model: 32, heads: 2, d_head: 16, "
               "d_mlp: 64}\n    train: {length: 32, batch: 4, steps: 20, warmup: 2}\nmethods:\n"
               "  - [rope, {pi: {scale: 4, finetune: 6}}]\n"
               "  - [rope, {pose: {target: 64, finetune: {steps: 6, add: true}}}, {pi: {scale: 4, finetune: 6}}]\n"
               "  - [rope, {pose: {target: 256, finetune: {steps: 6, add: true}}}, {pi: {scale: 4, finetune: 6}}]\n"
               "tasks: [{ppl: {windows: 2}}]\nlengths: [128]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run p.yaml --db p.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(sql_long("p.db", "select count(*) from runs where status = 'ok'"), 3);
    cr_expect_eq(sql_long("p.db", "select count(distinct model_key) from runs"), 3);
    cr_expect_eq(sql_long("p.db", "select count(*) from models where steps = 20 and config like "
                                  "'%_stack_:[{_rope_:{_base_:10000,_layout_:_half_}}],%'"), 1, "one base, rope alone");
    for (int target = 64; target <= 256; target *= 4) {
        char sql[256];
        snprintf(sql, sizeof sql, "select count(*) from models where steps = 6 and config like '%%{_pose_:{_chunks_:2,"
                 "_target_:%d,_finetune_:{_steps_:6,_length_:32,%%_add_:true}}},{_pi_:{_scale_:4,_finetune_:6}}]%%'",
                 target);
        cr_expect_eq(sql_long("p.db", sql), 1, "PoSE to %d in its fine-tuned model's key", target);
    }
}

/* stories260K (llama2.c, trained at 512 of its tok512 tokens) fine-tuned
** for 2 steps at 1024 with YaRN (scale auto: 2) and evaluated at 1024: end
** to end, keyed by the checkpoint's hash and what was trained on it, saved
** with its tokenizer (tok512.bin's SHA-256 begins 037cb335abb25d1f). */
Test(finetune, stories260K_finetunes_at_2x, .init = setup, .fini = teardown, .timeout = 300)
{
    const char *stories = tokfile_stories();
    if (!stories)
        cr_skip_test("stories260K is not beside the checkout");
    char out[16384];
    write_file("s.yaml", "name: s\nmodels: {s: {checkpoint: \"$R/../shared/models/stories260K/stories260K.bin\"}}\n"
               "methods:\n  - [{rope: {layout: interleaved}}, {yarn: {finetune: {steps: 2, length: 1024, batch: 1, "
               "lr: 5e-4}}}]\ntasks: [{ppl: {windows: 1, corpus: stories}}]\nlengths: [1024]\n");
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|\" s.yaml && $L run s.yaml --db s.db --quiet --no-table"), 0,
                 "%s", out);
    cr_expect_eq(sql_long("s.db", "select count(*) from runs where status = 'ok' and method like "
                                  "'rope(layout=interleaved)+yarn(ft,scale=2) ft@1024%'"), 1);
    cr_expect_eq(sql_long("s.db", "select count(*) from models where steps = 2 and tokens = 2048 and config like "
                                  "'{_checkpoint_:_%_,_tokenizer_:_%_,_finetune_:{_stack_:%'"), 1);
    char key[32];
    sql_text(key, sizeof key, "s.db", "select key from models where config like '%yarn%'");
    cr_assert_eq(sh(out, sizeof out, "$L show model %s --db s.db", key), 0, "%s", out);
    cr_expect(strstr(out, "\"length\":1024,\"steps\":2,\"tokens\":2048}") != NULL, "%s", out);
    cr_expect(strstr(out, "\"tokenizer_sha256\": \"037cb335abb25d1f") != NULL, "its tok512.bin, by hash:\n%s", out);
}

/* stories260K with a passkey mixture, fine-tuned 2 steps of one 512-token
** window: the mixture enters the fine-tuned model's key (the checkpoint's
** own key is unchanged: it is the base), and the windows hold its instances,
** so the weights differ from the same fine-tuning without it. A mixture on a
** checkpoint that no stack fine-tunes is refused at the mixture. */
Test(finetune, a_checkpoint_is_finetuned_on_its_mixture, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char out[16384], yaml[1024];
    static const char *const mixes[] = {"", "\n    mixture: [{passkey: {template: short, weight: 1, score: answer}}]"};
    for (int i = 0; i < 2; i++) {
        snprintf(yaml, sizeof yaml, "name: s\nmodels:\n  s:\n    checkpoint: \"$R/../shared/models/stories260K/"
                 "stories260K.bin\"%s\nmethods:\n  - [{rope: {layout: interleaved, finetune: {steps: 2, batch: 1, "
                 "lr: 1e-3}}}]\ntasks: [{ppl: {windows: 1, corpus: stories}}]\nlengths: [512]\n", mixes[i]);
        write_file("s.yaml", yaml);
        cr_assert_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|\" s.yaml && $L run s.yaml --db s.db --quiet "
                        "--no-table"), 0, "%s", out);
    }
    cr_expect_eq(sql_long("s.db", "select count(*) from models where steps = 2 and tokens = 1024"), 2);
    cr_expect_eq(sql_long("s.db", "select count(*) from models where config like '{_checkpoint_:%_finetune_:{%"
                                  "_seed_:0,_mixture_:[{_name_:_passkey_,%_weight_:1,%_score_:_answer_}]}}'"), 1);
    cr_expect_eq(sql_long("s.db", "select count(distinct weights_sha256) from models where steps = 2"), 2,
                 "the mixture changed nothing");
    cr_expect_eq(sql_long("s.db", "select count(distinct model_key) from runs"), 2);
    char key[32];    /* its lineage names the mixture; the other's has none */
    sql_text(key, sizeof key, "s.db", "select key from models where config like '%_mixture_%'");
    cr_assert_eq(sh(out, sizeof out, "$L show model %s --db s.db", key), 0, "%s", out);
    cr_expect(strstr(out, "\"steps\":2,\"tokens\":1024,\"mixture\":[{\"name\":\"passkey\",") != NULL, "%s", out);
    sql_text(key, sizeof key, "s.db", "select key from models where steps = 2 and config not like '%_mixture_%'");
    cr_assert_eq(sh(out, sizeof out, "$L show model %s --db s.db", key), 0, "%s", out);
    cr_expect(strstr(out, "\"steps\":2,\"tokens\":1024}") != NULL, "%s", out);
    /* the same without a fine-tuning stack */
    cr_assert_eq(sh(out, sizeof out, "sed -i 's/, finetune: {steps: 2, batch: 1, lr: 1e-3}//' s.yaml && "
                    "$L run s.yaml --db s.db --dry-run"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: s.yaml:5:14: model 's': a checkpoint's mixture is what fine-tuning it "
                     "trains on, and no method stack fine-tunes it\n  hint: add finetune:") != NULL, "%s", out);
}

/* Seeds of a checkpoint fine-tuned: each seed fine-tunes a model of its own
** (the seed is in the fine-tuning's part of the key: finetune.seed), yet they
** are one configuration, pooled as seeds and compared with --sigma as such,
** as the seeds of a trained model are (cli/seeds_of_one_configuration_still_pool). */
Test(finetune, seeds_of_a_finetuned_checkpoint_pool, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char out[16384];
    write_file("s.yaml", "name: s\nseeds: [1, 2]\nmodels: {s: {checkpoint: \"$R/../shared/models/stories260K/"
               "stories260K.bin\"}}\nmethods:\n  - [{rope: {layout: interleaved}}, {yarn: {finetune: {steps: 1, "
               "length: 256, batch: 1, lr: 5e-4}}}]\ntasks: [{ppl: {windows: 1, corpus: stories}}]\nlengths: [256]\n");
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|\" s.yaml && $L run s.yaml --db s.db --quiet --no-table"), 0,
                 "%s", out);
    cr_assert_eq(sql_long("s.db", "select count(distinct model_key) from runs where status = 'ok'"), 2);
    cr_expect_eq(sh(out, sizeof out, "$L table --db s.db --metric ppl"), 0, "%s", out);
    cr_expect(strstr(out, "(n=2) |") != NULL, "the two seeds not pooled:\n%s", out);
    cr_expect(strstr(out, "[config") == NULL && strstr(out, "@s [") == NULL, "seeds tagged as configurations:\n%s",
              out);
    cr_expect_eq(sh(out, sizeof out, "$L compare s s --db s.db --sigma 3"), 0, "%s", out);
    cr_expect(strstr(out, "seeds pooled") != NULL, "%s", out);
}

/* A base model whose training diverges (lr 10, no clip) fails the cells of
** both stacks fine-tuned from it with an error that names the base model's
** key, the one that diverged (it named only the fine-tuned model's key, which
** never trained), and is trained once: each fine-tuned model trained it again. */
Test(finetune, a_diverged_base_model_is_named_and_trained_once, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192], err[1024];
    write_file("d.yaml", "name: d\nmodels:\n  m: {arch: {layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64},"
               " train: {length: 32, batch: 4, steps: 50, warmup: 0, lr: 10, clip: 0, beta2: 0}}\n"
               "methods: [[rope, {pi: {finetune: 5}}], [rope, {ntk: {finetune: 5}}]]\ntasks: [{ppl: {windows: 1}}]\n"
               "lengths: [32]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run d.yaml --db d.db --dry-run"), 0, "%s", out);
    const char *from = strstr(out, "from [");
    cr_assert_not_null(from, "%s", out);
    char base[17];
    memcpy(base, from + 6, 16);
    base[16] = '\0';
    cr_assert_eq(sh(out, sizeof out, "$L run d.yaml --db d.db --no-table 2>&1"), 1, "%s", out);
    cr_expect_eq(count(out, "training base model"), 1, "%s", out);
    char want[64];
    snprintf(want, sizeof want, "base model [%s]", base);
    for (int i = 0; i < 2; i++) {
        char sql[80];
        snprintf(sql, sizeof sql, "SELECT error FROM runs ORDER BY id LIMIT 1 OFFSET %d", i);
        sql_text(err, sizeof err, "d.db", sql);
        cr_expect(strstr(err, "training diverged") != NULL, "%s", err);
        cr_expect(strstr(err, want) != NULL, "the error does not name the base model %s: %s", base, err);
    }
}
