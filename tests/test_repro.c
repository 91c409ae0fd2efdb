/*
** tests/test_repro.c - the sweeps on stories260K, the pretrained llama2.c
** model beside the checkout (../shared/models/stories260K; skipped when
** absent): configs/repro/stories260K-extension.yaml,
** configs/models/stories260K-every-method.yaml (every cell of it runs in
** about 2 minutes on one core: docs/REPRODUCTIONS.md gives the command and its
** time) and configs/models/tok512-train.yaml (models trained on its
** tok512.bin and on bytes) plan, and a training-time method on the checkpoint
** is refused at plan time, naming the stack and the checkpoint's native one.
*/
#define _POSIX_C_SOURCE 200809L
#include "tests/shell.h"
#include "tests/tokfile.h"

static void setup(void)
{
    shell_setup("repro");
    cr_assert_not_null(getenv("LENX_ROOT"), "LENX_ROOT must name the checkout (make test sets it)");
}

/* Dry-runs CONFIG once (its plan kept in plan.txt), expects the header CELLS
** and that nothing was written; returns how many distinct models it plans. */
static int expect_plans(const char *config, const char *cells)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L run --dry-run --db x.db $R/%s > plan.txt 2>&1; rc=$?; head -c 2048 plan.txt; exit $rc",
                    config), 0, "%s", out);
    cr_expect(strstr(out, cells) != NULL, "expected '%s' in:\n%s", cells, out);
    cr_expect(!exists("x.db"), "a dry run writes nothing");
    cr_assert_eq(sh(out, sizeof out, "grep -o 'model=[a-z0-9]* \\[[0-9a-f]*\\]' plan.txt | sort -u | wc -l"), 0, "%s", out);
    return atoi(out);
}

Test(repro, stories260K_sweeps_plan, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    expect_plans("configs/repro/stories260K-extension.yaml", "sweep stories260K-extension: 80 cells");
    expect_plans("configs/models/stories260K-every-method.yaml", "sweep stories260K-every-method: 175 cells");
    expect_plans("configs/models/tok512-train.yaml", "sweep tok512-train: 24 cells");
}

/* configs/models/local-layers.yaml plans: 3 stacks x 3 models x 5 lengths x 3 seeds, one model per
** training stack (rope, nope; YaRN is rope's at evaluation), arch and seed: 2 x 3 x 3, the local
** layers' and Gemma's arch keys making each arch's models others than the rest. */
Test(repro, local_layers_plan, .init = setup, .fini = teardown, .timeout = 60)
{
    cr_expect_eq(expect_plans("configs/models/local-layers.yaml", "sweep local-layers: 135 cells"), 18);
}

/* The fine-tuning reproductions plan: continual pretraining of the needle
** model (5 stacks x 4 lengths x 3 seeds; no checkpoint needed), its
** fine-tunings for retrieval (5 stacks x 3 lengths x 3 seeds) and
** PI/NTK/YaRN/RoPE fine-tuned at 4x and 8x on stories260K and a byte model. */
Test(repro, finetune_sweeps_plan, .init = setup, .fini = teardown, .timeout = 60)
{
    expect_plans("configs/repro/continual-pretraining-length.yaml", "sweep continual-pretraining-length: 60 cells");
    expect_plans("configs/repro/finetune-retrieval.yaml", "sweep finetune-retrieval: 45 cells");
    /* 5 fine-tunings (plain, a fixed sink added, learned sinks added on z = 0, on z = 1 and on ten times the
    ** lr) of the vanilla model a seed */
    cr_expect_eq(expect_plans("configs/repro/sinks-finetuned.yaml", "sweep sinks-finetuned: 270 cells"), 15);
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    expect_plans("configs/repro/finetune-extension.yaml", "sweep finetune-extension: 280 cells");
}

/* The scaled reproductions plan: InfoScale/CosScale (3 families x {none,
** C.S.} x {none, I.S.} x 7 lengths x 3 seeds; one model per training-time
** stack and seed: 6 x 3) and scale-invariant attention (4 stacks x 2 tasks x
** 3 lengths x 3 seeds; dynamic NTK shares RoPE's model: 3 x 3) and the
** RoPE extensions (11 stacks x 2 tasks x 4 lengths x 3 seeds; a base model
** and four fine-tunings a seed: 5 x 3) and T5 alignment on NoPE and on a T5
** bias (6 stacks x 2 tasks x 4 lengths x 3 seeds; one model a seed) and
** position biases past the training length (13 stacks x 5 lengths x 3 seeds;
** a model a stack and seed, the windows at evaluation sharing their stacks')
** and KERPLE's two kernels on ten seeds (2 x 5 x 10; 20 models). */
Test(repro, scaled_sweeps_plan, .init = setup, .fini = teardown, .timeout = 60)
{
    static const struct {
        const char *config, *cells;
        int models;
    } want[] = {
        {"configs/repro/infoscale-scaled.yaml", "sweep infoscale-scaled: 252 cells", 18},
        {"configs/repro/scale-invariant-needles-scaled.yaml", "sweep scale-invariant-needles-scaled: 72 cells", 9},
        {"configs/repro/rope-extensions-scaled.yaml", "sweep rope-extensions-scaled: 264 cells", 15},
        {"configs/repro/t5-alignment-nope.yaml", "sweep t5-alignment-nope: 144 cells", 3},
        {"configs/repro/t5-alignment-t5bias.yaml", "sweep t5-alignment-t5bias: 144 cells", 3},
        {"configs/repro/relative-bias-extrapolation.yaml", "sweep relative-bias-extrapolation: 255 cells", 36},
        {"configs/repro/kerple-kernels.yaml", "sweep kerple-kernels: 100 cells", 20},
        {"configs/repro/string-needles.yaml", "sweep string-needles: 108 cells", 3},
        {"configs/repro/giraffe-finetune.yaml", "sweep giraffe-finetune: 72 cells", 12},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        int models = expect_plans(want[i].config, want[i].cells);
        cr_expect_eq(models, want[i].models, "%s: %d trained models", want[i].config, models);
    }
}

/* The cells of config's dry run, one line each (run key, cell, model key;
** the memory estimate dropped), sorted into NAME.keys for comm. */
static void plan_keys(const char *config, const char *name)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "$L run --dry-run --db x.db %s > %s.txt && grep -E '^  [0-9a-f]{16} ' %s.txt | "
                    "sed 's/memory=[^ ]* //' | sort > %s.keys", config, name, name, name), 0, "%s: %s", config, out);
}

/* KERPLE's ten seeds (2 stacks x 5 lengths x 10 seeds, a model a stack and
** seed) share seeds 1-3 with relative-bias-extrapolation: the same 30 cells
** by run key and model key (REPRODUCTIONS.md says their values are the same
** bits), and nothing else. */
Test(repro, kerple_seeds_extend_relative_bias, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    plan_keys("$R/configs/repro/kerple-kernels.yaml", "k");
    plan_keys("$R/configs/repro/relative-bias-extrapolation.yaml", "r");
    cr_assert_eq(sh(out, sizeof out, "echo $(wc -l < k.keys) $(comm -12 k.keys r.keys | wc -l) "
                    "$(comm -12 k.keys r.keys | grep -c ' seed=[123] ') $(grep -c ' seed=[123] ' k.keys)"),
                 0, "%s", out);
    cr_expect_str_eq(out, "100 30 30 30\n", "cells, shared with relative-bias, of those on seeds 1-3, kerple's on 1-3");
}

/* alibi-interpolation evaluates relative-bias-extrapolation's ALiBi and Sandwich models (6 stacks x 5 lengths x 3
** seeds, a model a bias and seed): its 15 ALiBi and 15 Sandwich cells are that sweep's by run key and model key
** (REPRODUCTIONS.md says their values are the same bits), PI's 30 run on the same six models, and ALiBi fine-tuned
** at 4x with and without PI are six models more. Its retrieval half trains three retrievers of its own and
** fine-tunes each twice (4 stacks x 4 lengths x 3 seeds). */
Test(repro, alibi_interpolation_shares_relative_bias_models, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    plan_keys("$R/configs/repro/alibi-interpolation.yaml", "a");
    plan_keys("$R/configs/repro/relative-bias-extrapolation.yaml", "r");
    cr_assert_eq(sh(out, sizeof out, "for k in a r; do grep -o 'model=lm \\[[0-9a-f]*\\]' $k.keys | sort -u > $k.models; done; "
                    "echo $(wc -l < a.keys) $(wc -l < a.models) $(comm -12 a.models r.models | wc -l) "
                    "$(comm -12 a.keys r.keys | wc -l) $(comm -12 a.keys r.keys | grep -c ' alibi  length=') "
                    "$(comm -12 a.keys r.keys | grep -c ' sandwich  length=')"), 0, "%s", out);
    cr_expect_str_eq(out, "90 12 6 30 15 15\n", "cells, models, models and cells shared with relative-bias, of "
                     "those ALiBi's and Sandwich's");
    cr_expect_eq(expect_plans("configs/repro/alibi-interpolation-passkey.yaml",
                              "sweep alibi-interpolation-passkey: 48 cells"), 9, "retrievers trained and fine-tuned");
}

/* The needle reproductions evaluate one set of base models (REPRODUCTIONS.md: string-needles' RoPE cells at 192
** are selfextend-needles' bits): string-needles and dca-needles plan selfextend-needles' three model keys, and
** string-needles' RoPE cells at 192 are selfextend-needles' by run key too. */
Test(repro, needle_sweeps_share_their_models, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    plan_keys("$R/configs/repro/selfextend-needles.yaml", "se");
    plan_keys("$R/configs/repro/string-needles.yaml", "st");
    plan_keys("$R/configs/repro/dca-needles.yaml", "dc");
    cr_assert_eq(sh(out, sizeof out, "for k in se st dc; do grep -o '\\[[0-9a-f]*\\]$' $k.keys | sort -u > $k.models; "
                    "done; echo $(wc -l < se.models) $(comm -12 se.models st.models | wc -l) "
                    "$(comm -12 se.models dc.models | wc -l) $(comm -12 se.keys st.keys | wc -l) "
                    "$(comm -12 se.keys st.keys | grep -c ' rope  length=192 ')"), 0, "%s", out);
    cr_expect_str_eq(out, "3 3 3 6 6\n", "models, shared with string and dca; cells shared, of those RoPE's at 192");
}

/* pose-passkey fine-tunes stories260K seven ways at 512 (REPRODUCTIONS.md): its control, RoPE fine-tuned with PI at
** evaluation, is stories260K-passkey's, the same three model keys and the same 24 cells by run key, and so are YaRN
** and NTK at evaluation on those models (24 more each); PI, YaRN and NTK fine-tuned in, with and without PoSE's
** positions, are eighteen models of its own. */
Test(repro, pose_passkey_shares_its_control, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    plan_keys("$R/configs/repro/pose-passkey.yaml", "po");
    plan_keys("$R/configs/repro/stories260K-passkey.yaml", "sp");
    cr_assert_eq(sh(out, sizeof out, "for k in po sp; do grep -o 'model=stories260K \\[[0-9a-f]*\\]' $k.keys | "
                    "sort -u > $k.models; done; echo $(wc -l < po.keys) $(wc -l < po.models) "
                    "$(comm -12 po.models sp.models | wc -l) $(comm -12 po.keys sp.keys | wc -l) "
                    "$(for m in pi yarn ntk; do comm -12 po.keys sp.keys | "
                    "grep -c \" rope(layout=interleaved)+$m(\\(mode=static,\\)\\?scale=[1248]) ft@512×2000\"; done)"),
                 0, "%s", out);
    cr_expect_str_eq(out, "216 21 3 72 24 24 24\n", "cells, models, models and cells shared with stories260K-passkey, "
                     "of those PI's, YaRN's and NTK's at evaluation");
}

/* string-skewed is string-needles with the mixture's instance lengths skewed short (length_power: 3), and
** string-task128 with no instance past 128 tokens (max_length: 128): each trains three models of its own; with
** length_power: 1 written out string-skewed plans string-needles' cells, run key and model key (docs/config.md:
** models without a power keep their keys). */
Test(repro, skewed_needles_train_their_own_models, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    plan_keys("$R/configs/repro/string-needles.yaml", "st");
    plan_keys("$R/configs/repro/string-skewed.yaml", "sk");
    cr_assert_eq(sh(out, sizeof out, "sed 's/length_power: 3/length_power: 1/; s/^name: .*/name: string-needles/; "
                    "s/skewed:/needler:/' $R/configs/repro/string-skewed.yaml > one.yaml"), 0, "%s", out);
    plan_keys("one.yaml", "one");
    plan_keys("$R/configs/repro/string-task128.yaml", "t");
    cr_assert_eq(sh(out, sizeof out, "for k in st sk t; do grep -o '\\[[0-9a-f]*\\]$' $k.keys | sort -u > $k.models; "
                    "done; sort -u st.models sk.models > stsk.models; echo $(wc -l < sk.keys) $(wc -l < sk.models) "
                    "$(comm -12 st.models sk.models | wc -l) $(comm -12 st.keys sk.keys | wc -l) "
                    "$(cmp -s st.keys one.keys && echo same) $(wc -l < t.keys) $(wc -l < t.models) "
                    "$(comm -12 stsk.models t.models | wc -l)"), 0, "%s", out);
    cr_expect_str_eq(out, "108 3 0 0 same 108 3 0\n", "cells, models, models and cells shared with string-needles; "
                     "with length_power 1; task128's cells, models, models shared with either");
}

/* giraffe-finetune's RoPE cells, base and fine-tuned at 768, are finetune-retrieval's (REPRODUCTIONS.md: the
** same bits): its 18 needle cells of those two stacks by run key and model key, and none of Giraffe's. */
Test(repro, giraffe_finetune_shares_finetune_retrieval_rope, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    plan_keys("$R/configs/repro/giraffe-finetune.yaml", "g");
    plan_keys("$R/configs/repro/finetune-retrieval.yaml", "f");
    cr_assert_eq(sh(out, sizeof out, "echo $(comm -12 g.keys f.keys | wc -l) $(comm -12 g.keys f.keys | grep -c giraffe) "
                    "$(grep -c '  needle(.*  rope  \\|  needle(.*  rope ft@' g.keys)"), 0, "%s", out);
    cr_expect_str_eq(out, "18 0 18\n", "cells shared, of those Giraffe's; RoPE's needle cells, base and fine-tuned");
}

/* finetune-rescaling's seeds 4-7 pool with finetune-retrieval's 1-3
** (REPRODUCTIONS.md, "Does the rescaling matter?"): put on seeds 1-3, each of
** its 18 cells is one of finetune-retrieval's by run key and model key, and
** its 24 cells on 4-7 are none of them. */
Test(repro, rescaling_seeds_extend_finetune_retrieval, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "sed 's/^seeds: .*/seeds: [1, 2, 3]/' "
                    "$R/configs/repro/finetune-rescaling.yaml > s.yaml"), 0, "%s", out);
    plan_keys("s.yaml", "s");
    plan_keys("$R/configs/repro/finetune-rescaling.yaml", "n");
    plan_keys("$R/configs/repro/finetune-retrieval.yaml", "r");
    cr_assert_eq(sh(out, sizeof out, "echo $(wc -l < s.keys) $(comm -12 s.keys r.keys | wc -l) $(wc -l < n.keys) "
                    "$(comm -12 n.keys r.keys | wc -l)"), 0, "%s", out);
    cr_expect_str_eq(out, "18 18 24 0\n", "cells on seeds 1-3, of those finetune-retrieval's; on 4-7, of those");
}

/* Each training-time method, put in place of PI in the every-method sweep
** (a method fine-tuned in is not refused: the checkpoint is its base model,
** tests/test_finetune.c). */
Test(repro, training_time_methods_refused_on_stories260K, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    static const char *const stacks[][2] = {
        {"cosscale", "rope(layout=interleaved)+cosscale(s=128)"},
        {"prope", "rope(layout=interleaved)+prope(p=0.75)"},
        {"pose", "rope(layout=interleaved)+pose(chunks=2,target=0)"},
        {"randpos", "rope(layout=interleaved)+randpos(target=0)"},
        {"{pi: {train: true}}", "rope(layout=interleaved)+pi(train=true"},
        {"{logn: {mode: ssmax, train: true}}", "+logn(train=true,mode=ssmax"},
        {"{scaleinv: {train: true}}", "+scaleinv(train=true"},
        {"alibi", "methods 'rope' and 'alibi' both set the position scheme"},
        {"t5bias", "methods 'rope' and 't5bias' both set the position scheme"},
        {"kerple", "methods 'rope' and 'kerple' both set the position scheme"},
    };
    for (size_t i = 0; i < sizeof stacks / sizeof *stacks; i++) {
        char out[8192];
        int rc = sh(out, sizeof out, "sed 's|^  - \\[{rope: {layout: interleaved}}, pi\\]$|  - [{rope: {layout: "
                    "interleaved}}, %s]|; s|\\.\\./\\.\\./\\.\\./shared|'$R'/../shared|' "
                    "$R/configs/models/stories260K-every-method.yaml > t.yaml && $L run --dry-run --db x.db t.yaml",
                    stacks[i][0]);
        cr_expect_eq(rc, 2, "%s:\n%s", stacks[i][0], out);
        cr_expect(strstr(out, "t.yaml:21:") != NULL, "the stack's line: %s", out);
        cr_expect(strstr(out, stacks[i][1]) != NULL, "expected '%s' in:\n%s", stacks[i][1], out);
        if (i < 7)
            cr_expect(strstr(out, "trains differently from checkpoint model 'stories260K', which was trained with "
                             "[{\"rope\":{\"base\":10000,\"layout\":\"interleaved\"}}]") != NULL, "%s", out);
        cr_expect(!exists("x.db"), "a refused sweep writes nothing");
    }
}

/* `native` in a stack is the checkpoint's training stack: a sweep with it
** plans the cells (keys included) of the same sweep with the stack spelled
** out as `lenx show model` prints it; without a checkpoint, with checkpoints
** trained differently, or beside a method of that stack it is refused at
** the entry, and nothing is written. */
Test(repro, native_is_the_checkpoints_training_stack, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char out[16384], spelled[2048];
    const char *head = "name: t\nmodels:\n  h: {hf: $R/tests/ref/hf-bf16-tiny, tokenizer: "
                       "$R/../shared/models/stories260K/tok512.bin}\n";
    const char *tail = "tasks: [{ppl: {windows: 1}}, {passkey: {samples: 1, depths: 1, template: short}}]\n"
                       "lengths: [128, 512]\n";     /* streaming reaches a key at 512 (no warning) */
    cr_assert_eq(sh(spelled, sizeof spelled, "$L show model $R/tests/ref/hf-bf16-tiny | "
                    "sed -n 's/^  \"native_stack\": \\(.*\\),$/\\1/p'"), 0, "%s", spelled);
    spelled[strcspn(spelled, "\n")] = '\0';
    cr_assert(strstr(spelled, "{\"llama3\":") != NULL, "the tiny model is trained with llama3 scaling: %s", spelled);
    char *inner = strdup(spelled + 1);      /* the list's items, to put a method after */
    inner[strlen(inner) - 1] = '\0';
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%smethods: [native, [native, streaming], [{logn: {mode: su}}, native]]\n%s", head, tail);
    snprintf(b, sizeof b, "%smethods: [%s, [%s, streaming], [{logn: {mode: su}}, %s]]\n%s", head, spelled, inner,
             inner, tail);
    write_file("a.yaml", a);
    write_file("b.yaml", b);
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|g\" a.yaml b.yaml && $L run --dry-run --db x.db a.yaml > a.txt "
                    "2>&1 && $L run --dry-run --db x.db b.yaml > b.txt 2>&1; rc=$?; cat a.txt b.txt; exit $rc"),
                 0, "%s", out);
    cr_expect(strstr(out, "sweep t: 12 cells") != NULL, "%s", out);
    cr_expect(strstr(out, "+llama3(train=true,scale=4,original=64)+streaming(") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "cmp a.txt b.txt"), 0, "native against the stack spelled out: %s", out);
    static const char *const bad[][3] = {
        {"models: {m: {arch: {layers: 1}}}\n", "[native]", "t.yaml:3:11: 'native' is the training stack of the "
         "sweep's checkpoint models, and this sweep has none"},
        {"models:\n  h: {hf: $R/tests/ref/hf-bf16-tiny, tokenizer: $R/../shared/models/stories260K/tok512.bin}\n"
         "  s: {checkpoint: $R/../shared/models/stories260K/stories260K.bin}\n", "[rope, native]",
         "t.yaml:5:17: 'native' is the training stack of the sweep's checkpoint models, and they differ: 'h' was "
         "trained with [{\"rope\":{\"base\":500000"},
        {"models:\n  h: {hf: $R/tests/ref/hf-bf16-tiny, tokenizer: $R/../shared/models/stories260K/tok512.bin}\n",
         "[[native, rope]]", "t.yaml:4:20: method 'rope' appears twice in one stack"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[1024];
        snprintf(text, sizeof text, "name: t\n%smethods: %s\ntasks: [ppl]\nlengths: [128]\n", bad[i][0], bad[i][1]);
        write_file("t.yaml", text);
        cr_expect_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|g\" t.yaml && $L run --dry-run --db y.db t.yaml"), 2,
                     "%s", out);
        cr_expect(strstr(out, bad[i][2]) != NULL, "expected '%s' in:\n%s", bad[i][2], out);
        cr_expect(!exists("y.db"), "a refused sweep writes nothing");
    }
    free(inner);
}

/* long/: the tiny bf16 model with a config that says it was trained at
** 131,072 tokens, as Llama 3.x. */
static void long_copy(void)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "mkdir long && cp $R/tests/ref/hf-bf16-tiny/model.safetensors long/ && "
                    "sed 's/\"max_position_embeddings\": *[0-9]*/\"max_position_embeddings\": 131072/' "
                    "$R/tests/ref/hf-bf16-tiny/config.json > long/config.json && grep -c 131072 long/config.json"),
                 0, "%s", out);
}

/* The attn task on a model trained at more than the 65,536 tokens it measures
** (Llama 3.x: 131,072) stores the cell's statistics without the training
** reference, which no corpus window or memory would hold; it failed the cell
** after its pass before ("no document of corpus 'austen' has 131072 ...
** tokens"). */
Test(repro, attn_on_a_model_trained_past_its_limit_skips_the_reference, .init = setup, .fini = teardown,
     .timeout = 120)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char out[16384];
    long_copy();
    write_file("t.yaml", "name: t\nmodels: {h: {hf: long, tokenizer: $R/../shared/models/stories260K/tok512.bin}}\n"
               "methods: [native]\ntasks: [{attn: {windows: 1}}]\nlengths: [128]\n");
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|g\" t.yaml && $L run t.yaml --db t.db --quiet --no-table"),
                 0, "%s", out);
    cr_expect_eq(sql_long("t.db", "select count(*) from runs where status = 'ok'"), 1, "%s", out);
    cr_expect_eq(sql_long("t.db", "select count(*) from metrics where name in ('entropy', 'pmax', 'rows')"), 3);
    cr_expect_eq(sql_long("t.db", "select count(*) from metrics where name like '%_train'"), 0);
}

/* A window or far-key map that reaches no key at any length of the grid is
** named at plan time, once per stack and model, and the sweep still plans.
** Lengths 128 and 512, on the tiny bf16 model (trained at 256) and on a copy
** that says it was trained at 131,072 (as Llama 3.x). On the copy, window's
** automatic size (131,072 keys), streaming's (4 sinks and a window of
** 131,072 − 4 = 131,068 keys; its map from 131,068 on) and rerope's
** (distances from 131,072 / 4 = 32,768 on) reach nothing at 512. A window of
** 64 keys does on both models, and on the model trained at 256 every
** automatic one does (256 < 512, rerope's 64 < 128). selfextend's automatic
** window (32,768) reaches nothing on the copy either, and with a window of 64
** its automatic group is 1 at every length up to 131,072: RoPE, named as
** such; on the model trained at 256 both act at 512. dca's automatic chunks
** (s = 98,304, w = 16,384: C = 81,920) remap nothing before query 98,305 on the
** copy; on the model trained at 256 (C = 160) they do from query 193. */
Test(repro, a_window_that_sees_every_key_is_named_at_plan_time, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char out[16384];
    long_copy();
    write_file("t.yaml", "name: t\nmodels:\n"
               "  t: {hf: $R/tests/ref/hf-bf16-tiny, tokenizer: $R/../shared/models/stories260K/tok512.bin}\n"
               "  l: {hf: long, tokenizer: $R/../shared/models/stories260K/tok512.bin}\n"
               "methods:\n  - [native, window]\n  - [native, {window: {size: 64}}]\n  - [native, streaming]\n"
               "  - [native, rerope]\n  - [native]\n  - [native, selfextend]\n  - [native, {selfextend: {window: 64}}]\n"
               "  - [native, dca]\n"
               "tasks: [{ppl: {windows: 1}}]\nlengths: [128, 512]\n");
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|g\" t.yaml && $L run --dry-run --db x.db t.yaml 2>err.txt "
                    "| head -1; cat err.txt"), 0, "%s", out);
    cr_expect(strstr(out, "sweep t: 32 cells") != NULL, "%s", out);
    static const char *const want[] = {
        "lenx: warning: t.yaml:6:5: on model 'l' the stack '",
        "+window(size=131072)' changes nothing at the grid's lengths (at most 512): window's window of 131072 keys sees every "
        "key\n  hint: give window a window shorter than the lengths (docs/methods.md#window); its automatic one "
        "comes from the model's training length, 131072 here",
        "lenx: warning: t.yaml:8:5: on model 'l' the stack '",
        "+streaming(sinks=4,recent=131067)' changes nothing at the grid's lengths (at most 512): streaming's window of 131068 "
        "keys and its sinks sees every key; streaming remaps distances of 131068 and more, and none is that long",
        "lenx: warning: t.yaml:9:5: on model 'l' the stack '",
        "+rerope(window=32768)' changes nothing at the grid's lengths (at most 512): rerope remaps distances of "
        "32768 and more, and none is that long\n  hint: give rerope a window",
        "lenx: warning: t.yaml:11:5: on model 'l' the stack '",
        "+selfextend(group=1,window=32768)' changes nothing at the grid's lengths (at most 512): selfextend remaps "
        "distances of 32768 and more, and none is that long",
        "lenx: warning: t.yaml:12:5: on model 'l' the stack '",
        "+selfextend(group=1,window=64)' changes nothing at the grid's lengths (at most 512): selfextend keeps every "
        "distance as it is (its group is 1)\n  hint: its automatic group is 1 up to the model's training length, "
        "131072 here: lengths past it, or a group above 1 (docs/methods.md#selfextend)",
        "lenx: warning: t.yaml:13:5: on model 'l' the stack '",
        "+dca(chunk=98304,local=16384)' changes nothing at the grid's lengths (at most 512): dca remaps keys only from "
        "the query at position 98305 on, and none is that far\n  hint: give dca a chunk shorter than the lengths "
        "(docs/methods.md#dca); its automatic one comes from the model's training length, 131072 here",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_expect(strstr(out, want[i]) != NULL, "expected '%s' in:\n%s", want[i], out);
    cr_expect_eq(sh(out, sizeof out, "grep -c 'warning:' err.txt"), 0, "%s", out);
    cr_expect_eq(atoi(out), 6, "one warning per inert stack and model:\n%s", out);
    cr_expect(!exists("x.db"), "a dry run writes nothing");
}

/* dir: a copy of stories260K's Hugging Face directory whose config.json has
** rope_scaling {"rope_type": TYPE, "factor": 2.0}. */
static void scaled_copy(const char *to, const char *type)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "mkdir %s && cp $R/tests/ref/stories260K-hf/* %s/ && sed -i 's/\"rope_scaling\": "
                    "null/\"rope_scaling\": {\"rope_type\": \"%s\", \"factor\": 2.0}/' %s/config.json && grep -c %s "
                    "%s/config.json", to, to, type, to, type, to), 0, "%s", out);
}

/* A checkpoint's own evaluation-time rule (a config's rope_scaling dynamic:
** {ntk: dynamic} in its eval_stack, which `lenx score` runs) is not part of
** `native`: a stack that leaves it out is named at plan time, once, with the
** stack that runs it; a stack that has it, and a model without one, are not. */
Test(repro, a_stack_without_the_models_own_evaluation_rule_is_named, .init = setup, .fini = teardown,
     .timeout = 60)
{
    char out[16384];
    scaled_copy("dyn", "dynamic");
    write_file("t.yaml", "name: t\nmodels:\n  d: {hf: dyn}\n  s: {hf: $R/tests/ref/stories260K-hf}\n"
               "methods:\n  - native\n  - [native, {ntk: {mode: dynamic, factor: 2}}]\n"
               "tasks: [{ppl: {windows: 1}}]\nlengths: [256, 1024]\n");
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|g\" t.yaml && $L run --dry-run --db x.db t.yaml 2>err.txt "
                    "| head -1; cat err.txt"), 0, "%s", out);
    cr_expect(strstr(out, "sweep t: 8 cells") != NULL, "%s", out);
    static const char want[] =
        "lenx: warning: t.yaml:6:5: on model 'd' the stack 'rope' leaves out the model's own evaluation-time "
        "methods [{\"ntk\":{\"mode\":\"dynamic\",\"factor\":2}}] (eval_stack in lenx show model; lenx score runs "
        "them): its cells run without them\n  hint: to run them: [native, {\"ntk\":{\"mode\":\"dynamic\","
        "\"factor\":2}}]\n";
    cr_expect(strstr(out, want) != NULL, "expected '%s' in:\n%s", want, out);
    cr_expect_eq(sh(out, sizeof out, "grep -c 'warning:' err.txt"), 0, "%s", out);
    cr_expect_eq(atoi(out), 1, "one warning, for the stack without it on the model that has one:\n%s", out);
}

/* A stack a checkpoint was not trained with is refused naming the method that
** differs and what the checkpoint has there: a PI scale other than the one a
** config's rope_scaling trains in (an evaluation-time pi, so the checkpoint's
** is missing), a training-time method the checkpoint never had, another base. */
Test(repro, a_stack_the_checkpoint_was_not_trained_with_names_the_method, .init = setup, .fini = teardown,
     .timeout = 60)
{
    char out[16384];
    scaled_copy("lin", "linear");
    const char *ckpt = "which was trained with [{\"rope\":{\"base\":10000,\"layout\":\"half\"}},{\"pi\":{\"scale\":2,"
                       "\"train\":true}}]: ";
    static const char *const cases[][3] = {
        {"[[rope, {pi: {scale: 4}}]]", "t.yaml:4:11: the stack 'rope+pi(scale=4)' trains differently from checkpoint "
         "model 'm', ", "its training-time method 'pi' is not in the stack (the stack's 'pi' is evaluation-time)"},
        {"[[native, cosscale]]", "t.yaml:4:11: the stack 'rope+pi(train=true,scale=2)+cosscale(s=128)' trains "
         "differently from checkpoint model 'm', ", "the stack's training-time method 'cosscale' is not in it"},
        {"[[{rope: {base: 500000}}, {pi: {scale: 2, train: true}}]]", "t.yaml:4:11: the stack 'rope(base=500000)+pi("
         "train=true,scale=2)' trains differently from checkpoint model 'm', ", "the stack's 'rope' is {\"base\":"
         "500000,\"layout\":\"half\"}, the checkpoint's {\"base\":10000,\"layout\":\"half\"}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[1024];
        snprintf(text, sizeof text, "name: t\nmodels: {m: {hf: lin}}\ntasks: [ppl]\nmethods: %s\nlengths: [128]\n",
                 cases[i][0]);
        write_file("t.yaml", text);
        cr_expect_eq(sh(out, sizeof out, "$L run --dry-run --db x.db t.yaml"), 2, "%s", out);
        char want[1024];
        snprintf(want, sizeof want, "%s%s%s", cases[i][1], ckpt, cases[i][2]);
        cr_expect(strstr(out, want) != NULL, "expected '%s' in:\n%s", want, out);
        cr_expect(strstr(out, "hint: ") != NULL, "%s", out);
    }
}

/* T5 alignment calibrates on held-out text in the model's own tokens: on
** stories260K (tok512) it runs, and its temperature is stored. */
Test(repro, t5align_calibrates_in_model_tokens, .init = setup, .fini = teardown, .timeout = 120)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char out[16384];
    write_file("t.yaml", "name: t\nmodels: {s: {checkpoint: \"$R/../shared/models/stories260K/stories260K.bin\"}}\n"
               "methods: [[{rope: {layout: interleaved}}, t5align]]\ntasks: [{ppl: {windows: 1}}]\n"
               "lengths: [1024]\n");
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|\" t.yaml && $L run t.yaml --db t.db --quiet --no-table"),
                 0, "%s", out);
    cr_expect_eq(sql_long("t.db", "select count(*) from runs where status = 'ok'"), 1);
    cr_expect_eq(sql_long("t.db", "select count(*) from metrics where name = 'tau' and value > 0"), 1,
                 "the calibrated temperature is stored");
}

/* scripts/repro_check.sh, the drift check of a reproduction: a snapshot
** written from a store (--update) is reproduced by a second call (the sweep
** resumes, nothing is recomputed), a snapshot whose ppl values were changed
** (a 9 put before their first digit) is caught with exit 1, naming the
** metric and both values, and a missing config or snapshot is a clear error
** (exit 2). The fixture sweep trains its tiny model in seconds. */
Test(repro, repro_check_catches_a_moved_value, .init = setup, .fini = teardown, .timeout = 300)
{
    static char out[1 << 16];
    const char *check = "LENX_BIN=$L bash $R/scripts/repro_check.sh";
    cr_assert_eq(sh(out, sizeof out, "%s $R/tests/report_sweep.yaml --snapshot s.csv --db r.db --update 2>&1", check), 0,
                 "%s", out);
    cr_expect(strstr(out, "report-fixture: snapshot s.csv written") != NULL, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s $R/tests/report_sweep.yaml --snapshot s.csv --db r.db 2>&1", check), 0, "%s",
                 out);
    cr_expect(strstr(out, "report-fixture reproduces s.csv (rtol 1e-5, atol 1e-6") != NULL, "%s", out);
    cr_expect(strstr(out, "18 already stored, 0 to run") != NULL, "the second call resumes: %s", out);
    cr_assert_eq(sh(out, sizeof out, "sed 's/\\(,ppl(windows=2),128,1,ppl,\\)\\([0-9]\\)/\\19\\2/' s.csv > m.csv && "
                    "grep -c ',ppl(windows=2),128,1,ppl,9' m.csv"), 0, "%s", out);
    cr_assert_eq(atoi(out), 2, "two ppl values changed (one per method): %s", out);
    cr_expect_eq(sh(out, sizeof out, "%s $R/tests/report_sweep.yaml --snapshot m.csv --db r.db 2>&1", check), 1, "%s",
                 out);
    cr_expect(strstr(out, "ppl") != NULL && strstr(out, "report-fixture moved from m.csv") != NULL, "%s", out);
    /* accuracies by depth beside the snapshot: written by --update once the file exists, checked exactly */
    cr_assert_eq(sh(out, sizeof out, "touch s.depths.csv && %s $R/tests/report_sweep.yaml --snapshot s.csv --db r.db "
                    "--update 2>&1 && $L table --db r.db --series acc_by_depth --format csv > d.csv && cmp s.depths.csv d.csv && "
                    "grep -c ',acc_by_depth,' s.depths.csv", check), 0, "%s", out);
    cr_expect(strstr(out, "s.depths.csv written (18 points)") && strstr(out, "\n18\n"),
              "2 methods x 3 lengths x 3 depths: %s", out);
    cr_assert_eq(sh(out, sizeof out, "%s $R/tests/report_sweep.yaml --snapshot s.csv --db r.db 2>&1", check), 0, "%s",
                 out);
    cr_assert_eq(sh(out, sizeof out, "sed -i '2s/,acc_by_depth,\\([0-9.]*\\),[0-9.]*,/,acc_by_depth,\\1,0.25,/' "
                    "s.depths.csv && %s $R/tests/report_sweep.yaml --snapshot s.csv --db r.db 2>&1", check), 1,
                 "%s", out);
    cr_expect(strstr(out, "report-fixture: the accuracies by depth moved from s.depths.csv") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s no-such-repro 2>&1", check), 2, "%s", out);
    cr_expect(strstr(out, "no reproduction config") && strstr(out, "hint: one of:") && strstr(out, "t5-alignment"),
              "%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s $R/tests/report_sweep.yaml --snapshot none.csv --db r.db 2>&1", check), 2,
                 "%s", out);
    cr_expect(strstr(out, "no snapshot none.csv") != NULL, "%s", out);
}

/* scripts/repro_intervals.py --seeds, a cell pooled over its seeds, on a
** fixture whose numbers are worked by hand: method a's acc 1, 0.5, 0 of 10
** instances on seeds 1-3 has mean 0.5, sd 0.5 and t interval 0.5 ± 4.30265 ·
** 0.5/√3 = [-0.7421, 1.742], which an accuracy keeps inside [0, 1] (as `lenx
** table` does); pooled 15/30, Wilson [0.3315, 0.6685]. Paired
** with b (acc 0.5 on each seed) the differences 0.5, 0, -0.5 give 0 [-1.242,
** 1.242], one of three > 0; metric x (1, 2, 3 against 0) gives 2 [-0.4841,
** 4.484], three of three. */
Test(repro, repro_intervals_pools_seeds, .init = setup, .fini = teardown, .timeout = 30)
{
    static char out[1 << 14];
    static const char head[] = "sweep,method,task,length,seed,metric,value,model_key,key\n";
    char text[4096], *p = text + snprintf(text, sizeof text, "%s", head);
    const double acc[3] = {1, 0.5, 0};
    for (int s = 1; s <= 3; s++)
        p += snprintf(p, sizeof text - (size_t)(p - text),
                      "f,a,t,64,%d,acc,%g,,k%d\nf,a,t,64,%d,n_samples,10,,k%d\nf,a,t,64,%d,x,%d,,k%d\n"
                      "f,b,t,64,%d,acc,0.5,,j%d\nf,b,t,64,%d,n_samples,10,,j%d\nf,b,t,64,%d,x,0,,j%d\n",
                      s, acc[s - 1], s, s, s, s, s, s, s, s, s, s, s, s);
    write_file("s.csv", text);
    cr_assert_eq(sh(out, sizeof out, "/usr/bin/python3 $R/scripts/repro_intervals.py s.csv --seeds --method a "
                    "--against b 2>&1"), 0, "%s", out);
    cr_expect(strstr(out, "seeds 1, 2, 3: mean over seeds") != NULL, "%s", out);
    cr_expect(strstr(out, "| a | t | 64 | acc | 0.5 | 1 / 0.5 / 0 | [0, 1] | 15/30 [0.3315, 0.6685] | "
                          "0 | 0.5 / 0 / -0.5 | [-1.242, 1.242] | 1 of 3 |") != NULL, "%s", out);
    cr_expect(strstr(out, "| a | t | 64 | x | 2 | 1 / 2 / 3 | [-0.4841, 4.484] |  | 2 | 1 / 2 / 3 | [-0.4841, 4.484] | "
                          "3 of 3 |") != NULL, "%s", out);
    /* the same seeds in two snapshots (seed 1 in one, 2 and 3 in the other,
    ** seed 2's b in both) pool to the same rows; a value two files give
    ** differently is refused, naming the file */
    cr_assert_eq(sh(out, sizeof out, "head -1 s.csv > s1.csv && grep ',1,' s.csv >> s1.csv && "
                    "head -1 s.csv > s23.csv && grep -v ',1,' s.csv | tail -n +2 >> s23.csv && "
                    "grep '^f,b,t,64,2,' s.csv >> s1.csv && /usr/bin/python3 $R/scripts/repro_intervals.py "
                    "s1.csv s23.csv --seeds --method a --against b 2>&1"), 0, "%s", out);
    cr_expect(strstr(out, "| a | t | 64 | acc | 0.5 | 1 / 0.5 / 0 | [0, 1] | 15/30 [0.3315, 0.6685] | "
                          "0 | 0.5 / 0 / -0.5 | [-1.242, 1.242] | 1 of 3 |") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "sed 's/^f,b,t,64,2,acc,0.5/f,b,t,64,2,acc,0.7/' s1.csv > c.csv && "
                    "/usr/bin/python3 $R/scripts/repro_intervals.py s23.csv c.csv --seeds 2>&1"), 2, "%s", out);
    cr_expect(strstr(out, "c.csv: acc of (b, t, 64, 2) is 0.7, s23.csv gives 0.5") != NULL, "%s", out);
}

/* --against names the method whose label is exactly it (a beside a+x and a+y); a metric that method lacks
** (tau, stored by a+x and a+y only) has no difference, where the script used to stop at the first such row
** (exit 2, "--against 'a' matches 2 methods"): docs/REPRODUCTIONS.md's t5-alignment-nope command. */
Test(repro, repro_intervals_against_a_method_without_the_metric, .init = setup, .fini = teardown, .timeout = 30)
{
    static char out[1 << 14];
    write_file("s.csv", "sweep,method,task,length,seed,metric,value,model_key,key\n"
               "f,a,t,64,1,x,1,,k1\nf,a+x,t,64,1,x,3,,j1\nf,a+x,t,64,1,tau,0.5,,j1\n"
               "f,a+y,t,64,1,x,4,,i1\nf,a+y,t,64,1,tau,0.25,,i1\n");
    cr_assert_eq(sh(out, sizeof out, "/usr/bin/python3 $R/scripts/repro_intervals.py s.csv --seeds --against a "
                    "2>&1"), 0, "%s", out);
    cr_expect(strstr(out, "| a+x | t | 64 | x | 3 | 3 | ") != NULL && strstr(out, "| 2 | 2 | ") != NULL, "%s", out);
    cr_expect(strstr(out, "| a+y | t | 64 | tau | 0.25 | 0.25 | ") != NULL, "%s", out);
}

/* --against a stack without ' @MODEL' pairs each cell with that stack on the cell's own model: 'a' beside
** two models matched both (exit 2), and a full label paired one model's cells with the other's. b minus a is
** 1 on m1 and 10 on m2. */
Test(repro, repro_intervals_against_a_stack_on_each_model, .init = setup, .fini = teardown, .timeout = 30)
{
    static char out[1 << 14];
    write_file("s.csv", "sweep,method,task,length,seed,metric,value,model_key,key\n"
               "f,a @m1,t,64,1,x,1,,k1\nf,b @m1,t,64,1,x,2,,k2\nf,a @m2,t,64,1,x,5,,k3\nf,b @m2,t,64,1,x,15,,k4\n");
    cr_assert_eq(sh(out, sizeof out, "/usr/bin/python3 $R/scripts/repro_intervals.py s.csv --seeds --against a "
                    "2>&1"), 0, "%s", out);
    cr_expect(strstr(out, "| b @m1 | t | 64 | x | 2 | 2 | — |  | 1 | 1 | — | 1 of 1 |") != NULL, "%s", out);
    cr_expect(strstr(out, "| b @m2 | t | 64 | x | 15 | 15 | — |  | 10 | 10 | — | 1 of 1 |") != NULL, "%s", out);
}

/* scripts/repro_depths.py on a store worked by hand: 2 samples at each of the depths 0, 0.5 and 1
** (n_samples 6). Method a right at them 2,1,0 / 2,2,2 / 0,0,1 on seeds 1-3, b 1,1,1 on every seed. Depth
** 0: a 2+2+0 = 4/6, b 3/6, differences 1, 1, -1: mean 1/3, sd 2/√3, t half-width 4.30265 · (2/√3)/√3 =
** 2.868 → [-2.5, +3.2], 2 up, 1 down. Depths 0.5 and 1: a 1+4+1 = 6/12, b 6/12, differences -1, 2, -1:
** mean 0, sd √3, half-width 4.30265 → [-4.3, +4.3], 1 up, 2 down. */
Test(repro, repro_depths_pairs_seeds, .init = setup, .fini = teardown, .timeout = 30)
{
    static char out[1 << 14];
    cr_assert_eq(sh(out, sizeof out, "sqlite3 d.db \"create table runs (id integer primary key, method text, task text,"
                    " length int, seed int); create table metrics (run_id int, name text, value real);"
                    " create table series (run_id int, series text, x real, y real);\" && for r in "
                    "'1 a 1 1 0.5 0' '2 a 2 1 1 1' '3 a 3 0 0 0.5' '4 b 1 .5 .5 .5' '5 b 2 .5 .5 .5' '6 b 3 .5 .5 .5'; "
                    "do set -- $r; sqlite3 d.db \"insert into runs values ($1, '$2', 'needle(samples=2,depths=3)', "
                    "192, $3); insert into metrics values ($1, 'n_samples', 6); insert into series values "
                    "($1, 'acc_by_depth', 0, $4), ($1, 'acc_by_depth', 0.5, $5), ($1, 'acc_by_depth', 1, $6);\"; "
                    "done && /usr/bin/python3 $R/scripts/repro_depths.py d.db --length 192 --groups 0/0.5,1 "
                    "--against b 2>&1"), 0, "%s", out);
    cr_expect(strstr(out, "| a | 0 | 2+2+0 | 4/6 [") && strstr(out, "| +0.3 [-2.5, +3.2]; 2 up, 1 down |"), "%s", out);
    cr_expect(strstr(out, "| a | 0.5,1 | 1+4+1 | 6/12 [") && strstr(out, "| +0.0 [-4.3, +4.3]; 1 up, 2 down |"),
              "%s", out);
    cr_expect(strstr(out, "| b | 0 | 1+1+1 | 3/6 [") != NULL, "%s", out);
    /* the same from a series snapshot and its metrics snapshot (as `lenx table --format csv` writes them) */
    cr_assert_eq(sh(out, sizeof out, "sqlite3 -header -csv d.db \"select 's' sweep, method || ' @m' method, task, length,"
                    " seed, series, x, y from series join runs on id = run_id\" > d.depths.csv && sqlite3 -header -csv "
                    "d.db \"select 's' sweep, method || ' @m' method, task, length, seed, name metric, value from metrics"
                    " join runs on id = run_id\" > d.csv && /usr/bin/python3 $R/scripts/repro_depths.py d.depths.csv "
                    "--length 192 --groups 0/0.5,1 --against b 2>&1"), 0, "%s", out);
    cr_expect(strstr(out, "| a @m | 0 | 2+2+0 | 4/6 [") && strstr(out, "| +0.3 [-2.5, +3.2]; 2 up, 1 down |"),
              "%s", out);
    cr_expect_eq(sh(out, sizeof out, "/usr/bin/python3 $R/scripts/repro_depths.py d.db --length 192 --groups 0.3 "
                    "2>&1"), 2, "%s", out);
    cr_expect(strstr(out, "--groups: depth 0.3 is not in the grid") != NULL, "%s", out);
    /* without --task, the one task with depths is read (a passkey file failed: the default was needle); two
    ** tasks with depths are named */
    cr_assert_eq(sh(out, sizeof out, "sqlite3 d.db \"update runs set task = 'passkey(depths=3)'\" && /usr/bin/python3 "
                    "$R/scripts/repro_depths.py d.db --length 192 --groups 0/0.5,1 2>&1"), 0, "%s", out);
    cr_expect(strstr(out, "| a | 0 | 2+2+0 | 4/6 [") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "sqlite3 d.db \"update runs set task = 'needle(depths=3)' where method = 'b'\" && "
                    "/usr/bin/python3 $R/scripts/repro_depths.py d.db --length 192 2>&1"), 2, "%s", out);
    cr_expect(strstr(out, "tasks needle, passkey have depths at length 192\n  hint: name one with --task") != NULL,
              "%s", out);
}

/* scripts/repro_intervals.py --against names a method that is a prefix of
** the others' labels (`nope` beside `nope+t5align(mode=pmax)`, as in
** t5-alignment-nope): the label that is exactly the name, with or without its
** " @model", is the one meant; a name that is only a part of several labels
** stays an error that lists them. The difference is worked by hand: 0.75 -
** 0.25 = 0.5, se sqrt(0.1^2 + 0.1^2) = 0.1414, 0.5 +- 1.96 se = [0.2228,
** 0.7772], z = 3.54. */
Test(repro, repro_intervals_against_exact_label, .init = setup, .fini = teardown, .timeout = 30)
{
    static char out[1 << 14];
    write_file("s.csv", "sweep,method,task,length,seed,metric,value,model_key,key\n"
                        "f,nope @m,t,64,1,x,0.25,,k1\nf,nope @m,t,64,1,x_se,0.1,,k1\n"
                        "f,nope+t5align(mode=pmax) @m,t,64,1,x,0.75,,k2\nf,nope+t5align(mode=pmax) @m,t,64,1,x_se,0.1,,k2\n"
                        "f,nope+logn @m,t,64,1,x,1,,k3\nf,nope+logn @m,t,64,1,x_se,0.1,,k3\n");
    cr_assert_eq(sh(out, sizeof out, "/usr/bin/python3 $R/scripts/repro_intervals.py s.csv --against nope 2>&1"), 0,
                 "%s", out);
    cr_expect(strstr(out, "| nope+t5align(mode=pmax) @m | t | 64 | 1 | x | 0.75 |") &&
                  strstr(out, "| 0.5 | [0.2228, 0.7772] | 3.54 |"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "/usr/bin/python3 $R/scripts/repro_intervals.py s.csv --against 'nope @m' 2>&1"),
                 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "/usr/bin/python3 $R/scripts/repro_intervals.py s.csv --against nope+ 2>&1"), 2,
                 "%s", out);
    cr_expect(strstr(out, "matches 2 methods") && strstr(out, "nope+logn @m"), "%s", out);
}

/* scripts/repro_correlation.py on a store worked by hand. Needle: one method,
** three depths a seed; failure 0, 0.5, 1 against entropy 1, 2, 3 on seeds 1
** and 2 (r = +1) and 3, 2, 1 on seed 3 (r = -1): across seeds 1/3, sd
** 1.1547, interval 1/3 ± 4.30265 · 1.1547/√3 = [-2.54, +3.20]; no log p
** series, so no r there. JS: x's attention mass {0: 1, 1: 0} against rope's
** {0: 1, 1: 1} is 0.5·(0.5 ln(0.5/0.75) + 0.5 ln(0.5/0.25)) + 0.5 ln(1/0.75)
** = 0.2158; x is stored first, and the reference is still rope (before, it
** was whichever method two processes happened to store first). */
Test(repro, repro_correlation_worked_by_hand, .init = setup, .fini = teardown, .timeout = 30)
{
    static char out[1 << 14];
    static const char sql[] =
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, key TEXT, sweep TEXT, method TEXT, task TEXT, length INT, "
        "seed INT, status TEXT);\n"
        "CREATE TABLE series (run_id INT, series TEXT, x REAL, y REAL);\n"
        "INSERT INTO runs VALUES (1, 'a1', 's', 'x', 'attn(windows=1)', 64, 1, 'ok'), "
        "(2, 'a2', 's', 'rope', 'attn(windows=1)', 64, 1, 'ok'), "
        "(3, 'n1', 's', 'rope', 'needle(samples=1)', 64, 1, 'ok'), "
        "(4, 'n2', 's', 'rope', 'needle(samples=1)', 64, 2, 'ok'), "
        "(5, 'n3', 's', 'rope', 'needle(samples=1)', 64, 3, 'ok');\n"
        "INSERT INTO series VALUES (1, 'mass_by_distance', 0, 1), (1, 'mass_by_distance', 1, 0), "
        "(2, 'mass_by_distance', 0, 1), (2, 'mass_by_distance', 1, 1);\n";
    write_file("fixture.sql", sql);
    char ins[2048], *p = ins;
    for (int run = 3; run <= 5; run++)
        for (int d = 0; d < 3; d++)
            p += snprintf(p, sizeof ins - (size_t)(p - ins),
                          "INSERT INTO series VALUES (%d, 'acc_by_depth', %g, %g), (%d, 'entropy_by_depth', %g, %d);\n",
                          run, d / 2.0, 1 - d / 2.0, run, d / 2.0, run == 5 ? 3 - d : 1 + d);
    write_file("points.sql", ins);
    cr_assert_eq(sh(out, sizeof out, "cat fixture.sql points.sql | sqlite3 s.db"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "/usr/bin/python3 $R/scripts/repro_correlation.py s.db s 2>&1"), 0, "%s", out);
    cr_expect(strstr(out, "seed 1: r(failure rate, answer entropy) = +1.000") != NULL, "%s", out);
    cr_expect(strstr(out, "seed 3: r(failure rate, answer entropy) = -1.000") != NULL, "%s", out);
    cr_expect(strstr(out, "all points: r(failure, entropy) +0.33 [-2.54, +3.20] (3 seeds); "
                          "r(log p, entropy) n/a (0 seeds with an r)") != NULL, "%s", out);
    cr_expect(strstr(out, "from rope at 64") != NULL, "%s", out);
    cr_expect(strstr(out, "| x | 0.2158 |") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "/usr/bin/python3 $R/scripts/repro_correlation.py s.db s --reference y 2>&1"), 2,
                 "%s", out);
    cr_expect(strstr(out, "--reference 'y' has no attn cell") && strstr(out, "hint: one of: x, rope"), "%s", out);
}

