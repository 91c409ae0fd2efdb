/*
** tests/test_generate.c - `lenx generate` and the decode API's sampler
** (harness/commands/generate.c, harness/engine/model/decoding.h), and the held-out stories
** split (configs/heldout, scripts/heldout.sh, harness/engine/data/corpus.h).
**
** Greedy text is checked against llama2.c's run.c on stories260K (its
** expected/ outputs, read from ../shared/models/stories260K beside the
** checkout and skipped when absent); greedy ids against a full forward pass
** per token; the sampler against the probabilities of softmax(logits / T)
** computed here, and for determinism per seed. The engine's scoring
** (harness/engine/lm/lm.c) against a full pass's losses and logits.
*/
#define _GNU_SOURCE     /* qsort_r */
#include <math.h>

#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/data/corpus.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/lm/lm.h"
#include "harness/engine/model/decoding.h"
#include "harness/engine/model/model.h"
#include "tests/shell.h"
#include "tests/stack.h"
#include "tests/tokfile.h"

static void setup(void)
{
    (void)sql_long;     /* shell.h's; this suite reads no store */
    shell_setup("generate");
    cr_assert_not_null(getenv("LENX_ROOT"), "LENX_ROOT must name the checkout (make test sets it)");
}

/* 1 when stories260K lies beside the checkout. */
static int have_stories(void)
{
    return tokfile_stories() != NULL;
}

/* stories260K loaded into m, its native stack compiled into s for length T. */
static void load_stories(struct lx_model *m, struct lx_ckpt_info *info, struct tstack *s, long T)
{
    char path[4096];
    struct lx_error err = {""};
    snprintf(path, sizeof path, "%s/../shared/models/stories260K/stories260K.bin", getenv("LENX_ROOT"));
    cr_assert_eq(lx_model_load(m, path, info, &err), LX_OK, "%s", err.msg);
    struct lx_facts f = tfacts((int)m->arch.d_head, 512, (int)m->arch.heads, T);
    tstack_make(s, info->stack, &f);
}

/* `lenx generate` output equals the file run.c wrote. */
static void expect_same_as(const char *args, const char *expected)
{
    char out[8192], want[8192];
    cr_assert_eq(sh(out, sizeof out, "S=$R/../shared/models/stories260K && $L generate --model $S/stories260K.bin %s "
                    "2>gen.err || { cat gen.err; exit 1; }", args), 0, "%s", out);
    cr_assert_eq(sh(want, sizeof want, "cat $R/../shared/models/stories260K/expected/%s", expected), 0);
    cr_expect_str_eq(out, want, "lenx generate %s", args);
}

Test(generate, greedy_is_llama2c_text, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!have_stories())
        cr_skip_test("stories260K is not beside the checkout");
    expect_same_as("-n 200", "greedy_empty_200.txt");
    /* the prompt read with run.c's dummy prefix; the model ends the story with BOS after 346 positions */
    expect_same_as("--prompt 'Once upon a time' -n 400", "greedy_once.txt");
}

/* The ids `--ids` prints: BOS, then the greedy tokens of one full forward
** pass per token (lx_generate's reference path). */
Test(generate, greedy_ids_are_the_full_pass_argmax, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!have_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char out[8192];
    cr_assert_eq(sh(out, sizeof out, "$L generate --model $R/../shared/models/stories260K/stories260K.bin -n 200 "
                    "--ids 2>/dev/null | head -1"), 0, "%s", out);
    struct lx_model m;
    struct lx_ckpt_info info = {0};
    struct lx_error err = {""};
    struct tstack s;
    load_stories(&m, &info, &s, 201);
    int prompt[1] = {1}, ids[200];
    cr_assert_eq(lx_generate(&m, &s.spec, prompt, 1, 200, ids, LX_DECODE_FULL, &err), LX_OK, "%s", err.msg);
    char *p = out, *end;
    cr_expect_eq(strtol(p, &end, 10), 1, "BOS first");
    for (int k = 0; k < 200; k++) {
        p = end;
        cr_expect_eq(strtol(p, &end, 10), ids[k], "generated token %d", k);
    }
    tstack_free(&s);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* Logits ln 1, ln 2, ln 3, ln 6 at T = 1 give p = 1/12, 2/12, 3/12, 6/12; at
** T = 2, p ∝ √1, √2, √3, √6. 40,000 draws (keys k = 0 … 39,999) land within
** 4.5 binomial standard errors of each. T = 0 is the argmax. */
Test(generate, sampler_follows_softmax_of_logits_over_t)
{
    const float lg[4] = {0.0f, logf(2.0f), logf(3.0f), logf(6.0f)};
    double p[4];
    struct lx_sampler greedy = {.temperature = 0.0, .seed = 9};
    cr_expect_eq(lx_sample(lg, 4, &greedy, 0, p), 3);
    cr_expect_eq(lx_sample(lg, 4, NULL, 0, p), 3);
    const double want[2][4] = {{1 / 12.0, 2 / 12.0, 3 / 12.0, 6 / 12.0},
                               {1.0, sqrt(2.0), sqrt(3.0), sqrt(6.0)}};
    const double z2 = 1.0 + sqrt(2.0) + sqrt(3.0) + sqrt(6.0);
    for (int t = 0; t < 2; t++) {
        struct lx_sampler s = {.temperature = t ? 2.0 : 1.0, .seed = 42};
        long cnt[4] = {0}, n = 40000;
        for (long k = 0; k < n; k++)
            cnt[lx_sample(lg, 4, &s, k, p)]++;
        for (int j = 0; j < 4; j++) {
            double q = t ? want[t][j] / z2 : want[t][j], se = sqrt(q * (1 - q) / (double)n);
            cr_expect(fabs((double)cnt[j] / (double)n - q) < 4.5 * se, "T %g token %d: %ld of %ld, p %g",
                      s.temperature, j, cnt[j], n, q);
        }
    }
}

/* Top-k (Hugging Face's TopKLogitsWarper: logits below the k-th largest
** removed, ties kept): with logits ln 1, ln 2, ln 3, ln 6 and k = 2 only tokens
** 2 and 3 are drawn, in the ratio 3 : 6; k = 1 is the argmax; k = 3 with a tie
** for third keeps both tied tokens; k = 0 or k >= V is no cut (the same draws
** as without); temperature 0 stays the argmax whatever k. */
Test(generate, sampler_top_k_keeps_the_k_largest)
{
    const float lg[4] = {0.0f, logf(2.0f), logf(3.0f), logf(6.0f)}, tie[4] = {1.0f, 1.0f, 2.0f, 3.0f};
    double p[4];
    struct lx_sampler s = {.temperature = 1.0, .seed = 5, .top_k = 2}, all = {.temperature = 1.0, .seed = 5};
    long cnt[4] = {0}, n = 30000, tied[4] = {0};
    for (long k = 0; k < n; k++)
        cnt[lx_sample(lg, 4, &s, k, p)]++;
    double q = 3.0 / 9.0, se = sqrt(q * (1 - q) / (double)n);
    cr_expect(cnt[0] == 0 && cnt[1] == 0, "%ld %ld drawn outside the top 2", cnt[0], cnt[1]);
    cr_expect(fabs((double)cnt[2] / (double)n - q) < 4.5 * se, "token 2: %ld of %ld", cnt[2], n);
    s.top_k = 3;
    for (long k = 0; k < n; k++)
        tied[lx_sample(tie, 4, &s, k, p)]++;
    cr_expect(tied[0] > 0 && tied[1] > 0, "both tokens tied for third are kept: %ld %ld", tied[0], tied[1]);
    s.top_k = 1;
    for (long k = 0; k < 200; k++)
        cr_expect_eq(lx_sample(lg, 4, &s, k, p), 3);
    for (long top = 0; top <= 5; top += 4) {
        s.top_k = top;
        for (long k = 0; k < 200; k++)
            cr_expect_eq(lx_sample(lg, 4, &s, k, p), lx_sample(lg, 4, &all, k, p), "top_k %ld, draw %ld", top, k);
    }
    struct lx_sampler greedy = {.temperature = 0.0, .seed = 5, .top_k = 2};
    cr_expect_eq(lx_sample(lg, 4, &greedy, 0, p), 3);
}

/* Sampling is a pure function of the seed: the same text twice, another seed
** another text, the same tokens through the cache as through full passes. */
Test(generate, sampling_is_deterministic_per_seed, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!have_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char a[8192], b[8192], c[8192];
    const char *cmd = "$L generate --model $R/../shared/models/stories260K/stories260K.bin -n 150 --temperature 1 "
                      "--seed %d --ids";
    cr_assert_eq(sh(a, sizeof a, cmd, 3), 0, "%s", a);
    cr_assert_eq(sh(b, sizeof b, cmd, 3), 0, "%s", b);
    cr_assert_eq(sh(c, sizeof c, cmd, 4), 0, "%s", c);
    cr_expect_str_eq(a, b, "seed 3 twice");
    cr_expect_str_neq(a, c, "seeds 3 and 4");
    struct lx_model m;
    struct lx_ckpt_info info = {0};
    struct lx_error err = {""};
    struct tstack s;
    load_stories(&m, &info, &s, 101);
    struct lx_sampler smp = {.temperature = 0.8, .seed = 11};
    int prompt[1] = {1}, cached[100], full[100];
    cr_assert_eq(lx_generate_with(&m, &s.spec, prompt, 1, 100, cached, LX_DECODE_CACHE, &smp, &err), LX_OK);
    cr_assert_eq(lx_generate_with(&m, &s.spec, prompt, 1, 100, full, LX_DECODE_FULL, &smp, &err), LX_OK);
    for (int k = 0; k < 100; k++)
        cr_expect_eq(cached[k], full[k], "sampled token %d", k);
    smp.temperature = -1.0;
    cr_expect_eq(lx_generate_with(&m, &s.spec, prompt, 1, 10, full, LX_DECODE_CACHE, &smp, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "temperature -1") != NULL, "%s", err.msg);
    tstack_free(&s);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* What a sink sees: each token as it is chosen, in order. */
struct seen {
    long k[64];
    int id[64];
    long n, stop_at;        /* stop after token stop_at (-1: never) */
};

static int see(void *arg, long k, int id)
{
    struct seen *s = arg;
    cr_assert_lt(s->n, 64);
    s->k[s->n] = k, s->id[s->n] = id, s->n++;
    return k == s->stop_at;
}

/* A sink is told of every token in order, with the ids the run returns, and
** a stop after token 7 leaves the first 8 of a run to the budget, through the
** cache and through full passes. */
Test(generate, a_sink_sees_each_token_and_can_stop, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!have_stories())
        cr_skip_test("stories260K is not beside the checkout");
    struct lx_model m;
    struct lx_ckpt_info info = {0};
    struct lx_error err = {""};
    struct tstack s;
    load_stories(&m, &info, &s, 41);
    int prompt[1] = {1}, want[40], got[40];
    struct lx_sampler smp = {.temperature = 0.9, .seed = 21};
    cr_assert_eq(lx_generate_with(&m, &s.spec, prompt, 1, 40, want, LX_DECODE_CACHE, &smp, &err), LX_OK, "%s", err.msg);
    const enum lx_decode modes[] = {LX_DECODE_CACHE, LX_DECODE_FULL};
    for (int i = 0; i < 2; i++) {
        struct seen all = {.stop_at = -1}, some = {.stop_at = 7};
        struct lx_gen_sink sa = {see, &all, NULL}, ss = {see, &some, NULL};
        long n_out = -1;
        cr_assert_eq(lx_generate_stream(&m, &s.spec, prompt, 1, 40, got, modes[i], &smp, &sa, &n_out, &err), LX_OK);
        cr_expect_eq(n_out, 40);
        cr_expect_eq(all.n, 40, "mode %d: %ld tokens told", i, all.n);
        for (long k = 0; k < all.n; k++) {
            cr_expect_eq(all.k[k], k, "mode %d: the tokens are told in order", i);
            cr_expect_eq(all.id[k], want[k], "mode %d: token %ld told %d, generated %d", i, k, all.id[k], want[k]);
            cr_expect_eq(got[k], want[k]);
        }
        memset(got, -1, sizeof got);
        cr_assert_eq(lx_generate_stream(&m, &s.spec, prompt, 1, 40, got, modes[i], &smp, &ss, &n_out, &err), LX_OK);
        cr_expect_eq(n_out, 8, "mode %d: stopped after token 7, %ld out", i, n_out);
        cr_expect_eq(some.n, 8);
        for (int k = 0; k < 8; k++)
            cr_expect_eq(got[k], want[k], "mode %d: token %d", i, k);
        cr_expect_eq(got[8], -1, "mode %d: nothing is written past the stop", i);
    }
    struct seen first = {.stop_at = 0};
    struct lx_gen_sink sf = {see, &first, NULL};
    long n_out = -1;
    cr_assert_eq(lx_generate_stream(&m, &s.spec, prompt, 1, 40, got, LX_DECODE_CACHE, &smp, &sf, &n_out, &err), LX_OK);
    cr_expect_eq(n_out, 1, "a stop at the prompt pass's token runs no decode step");
    tstack_free(&s);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

static long cut_at_full_stop(const void *arg, const char *text, long n)
{
    (void)arg;
    const char *dot = memchr(text, '.', (size_t)n);
    return dot ? dot - text : n;
}

/* The engine's continuation ends at the token whose piece completes a stop
** (the first '.' here, found from the pieces of a run to the budget), and
** the tokens before are that run's; without a cut it runs to its budget
** unless a special id comes first. */
Test(generate, a_continuation_ends_where_its_text_is_cut, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!have_stories())
        cr_skip_test("stories260K is not beside the checkout");
    enum { N = 120 };
    struct lx_model m;
    struct lx_ckpt_info info = {0};
    struct lx_error err = {""};
    struct tstack s;
    struct lx_tokenizer *tk = NULL;
    load_stories(&m, &info, &s, N + 1);
    cr_assert_eq(lx_tokenizer_open(&tk, tokfile_stories(), &err), LX_OK, "%s", err.msg);
    struct lx_lm lm;
    lx_lm_local(&lm, &m, &s.spec);
    int prompt[1] = {1}, all[N], cut[N];
    const struct lx_lm_sampling greedy = {0.0, 0, 0};
    long n_all = 0, n_cut = 0, dot = -1, chars = 0;
    cr_assert_eq(lx_lm_generate(&lm, prompt, 1, N, &greedy, NULL, all, &n_all, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(n_all, N);
    for (long k = 0; k < N && dot < 0; k++) {
        size_t len;
        const char *p = lx_tok_piece(tk, all[k], &len);
        cr_assert_not_null(p, "no special id before the first full stop");
        dot = memchr(p, '.', len) ? k : -1;
        chars += (long)len;
    }
    cr_assert_gt(dot, 0, "the greedy story has a full stop within %d tokens", N);
    struct lx_lm_stop stop;
    lx_lm_stop_init(&stop, tk, cut_at_full_stop, NULL);
    cr_assert_eq(lx_lm_generate(&lm, prompt, 1, N, &greedy, &stop.sink, cut, &n_cut, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(n_cut, dot + 1, "ended after token %ld, the first with a '.', not %ld", dot, n_cut - 1);
    cr_expect_eq((long)stop.text.len, chars, "the sink's text is the pieces so far");
    cr_expect_eq(memcmp(cut, all, sizeof(int) * (size_t)(dot + 1)), 0, "the tokens before the stop are the same");
    lx_lm_stop_free(&stop);
    lx_lm_stop_init(&stop, tk, NULL, NULL);
    cr_assert_eq(lx_lm_generate(&lm, prompt, 1, N, &greedy, &stop.sink, cut, &n_cut, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(n_cut, N, "with special ids only, the story runs to its budget");
    lx_lm_stop_free(&stop);
    lx_tokenizer_free(tk);
    tstack_free(&s);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* --timings: the decode steps it counts and the token it stopped at are
** those of the ids --ids prints (the first special id after the prompt). */
Test(generate, timings_count_the_tokens_and_the_stop, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!have_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char ids[16384], err[4096], want[256];
    const char *cmd = "$L generate --model $R/../shared/models/stories260K/stories260K.bin --prompt 'Once upon a time' "
                      "-n 400 ";
    cr_assert_eq(sh(ids, sizeof ids, "%s --ids 2>/dev/null | head -1", cmd), 0, "%s", ids);
    cr_assert_eq(sh(err, sizeof err, "OMP_NUM_THREADS=1 %s --timings 2>&1 >/dev/null | grep 'lenx: timings'", cmd), 0,
                 "%s", err);
    long n = 0, at = -1;
    char *p = ids, *end;
    for (long v = strtol(p, &end, 10); end != p; p = end, v = strtol(p, &end, 10), n++)
        if (n >= 5 && at < 0 && (v == 1 || v == 2))     /* BOS or EOS of tok512, after BOS and the prompt's 4 */
            at = n - 5;
    cr_assert_eq(n, 405, "BOS, the prompt's 4 tokens, 400 generated: %ld", n);
    cr_assert_gt(at, 0, "the story ends before the budget");
    snprintf(want, sizeof want, "prompt of 5 tokens");
    cr_expect(strstr(err, want) != NULL, "'%s' in %s", want, err);
    snprintf(want, sizeof want, "; %ld decode steps ", at);
    cr_expect(strstr(err, want) != NULL, "'%s' in %s", want, err);
    snprintf(want, sizeof want, "stopped at token %ld, bos (id 1)", at);
    cr_expect(strstr(err, want) != NULL, "'%s' in %s", want, err);
    cr_expect(strstr(err, " threads, ") == NULL, "one thread has no pilot to tell of: %s", err);
    /* on two threads the line tells where the pilot ran the steps (pilot.h): every step once */
    cr_assert_eq(sh(err, sizeof err, "OMP_NUM_THREADS=2 %s --timings 2>&1 >/dev/null | grep 'lenx: timings'", cmd), 0,
                 "%s", err);
    const char *q = strstr(err, " on 2 threads, ");
    cr_assert(q != NULL, "%s", err);
    while (q > err && q[-1] != ' ')
        q--;
    long team = -1, one = -1, probes = -1;
    cr_assert_eq(sscanf(q, "%ld on 2 threads, %ld on one, %ld probe", &team, &one, &probes), 3, "%s", err);
    cr_expect_eq(team + one, at, "%ld + %ld steps, %ld decoded: %s", team, one, at, err);
    cr_expect_geq(probes, at >= 8, "a probe from the fifth step: %s", err);
}

/* llama2.c's -n N is read as --n N, but not where it is an option's value: --prompt -n is the prompt
** "-n", as --prompt=-n is (the value was rewritten to "--n", and the continuation was of that). */
Test(generate, a_prompt_of_dash_n_is_kept, .init = setup, .fini = teardown, .timeout = 30)
{
    char a[4096], b[4096];
    const char *m = "$L generate --model $R/../shared/models/stories260K/stories260K.bin";
    cr_assert_eq(sh(a, sizeof a, "%s --prompt -n -n 4 2>/dev/null", m), 0, "%s", a);   /* the text alone: no notes */
    cr_assert_eq(sh(b, sizeof b, "%s --prompt=-n --n 4 2>/dev/null", m), 0, "%s", b);
    cr_expect_str_eq(a, b);
    cr_expect(strncmp(a, "-n", 2) == 0 && strncmp(a, "--n", 3) != 0, "%s", a);
}

Test(generate, bad_input_is_refused, .init = setup, .fini = teardown, .timeout = 30)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L generate --prompt hi"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: --model is required\n  hint: lenx generate --help") != NULL, "%s", out);
    /* a stray argument is named on stderr, not answered with the usage on stdout (llama2.c's -t 0.8, a glob) */
    cr_expect_eq(sh(out, sizeof out, "$L generate --model m.bin -t 0.8 2>/dev/null"), 2, "%s", out);
    cr_expect_str_eq(out, "");
    cr_expect_eq(sh(out, sizeof out, "$L generate --model m.bin -t 0.8"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: unexpected argument '-t'") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L grade --scorer first_int --predictions a.jsonl b.jsonl"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: unexpected argument 'b.jsonl'") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L export --model m.bin"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: give one of --hf DIR and --gguf FILE") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L generate --model $R/tests/ref/model_ckpt_causal_rope.safetensors "
                    "--temperature -2"), 2, "%s", out);
    cr_expect(strstr(out, "--temperature must be a non-negative number, got '-2'") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L generate --model nowhere.bin"), 2, "%s", out);
    cr_expect(strstr(out, "nowhere.bin") != NULL, "%s", out);
    /* a byte model: its text is bytes, and the stack is its own */
    cr_expect_eq(sh(out, sizeof out, "$L generate --model $R/tests/ref/model_ckpt_causal_rope.safetensors -n 5 "
                    "--method '[{window: {size: 4}}]' > /dev/null"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L generate --model $R/tests/ref/model_ckpt_causal_rope.safetensors -n 5 "
                    "--method alibi"), 2, "%s", out);
    cr_expect(strstr(out, "'alibi' is a training-time method") != NULL, "%s", out);
    /* a stack these commands would run other than it says (they ran as plain RoPE, silently): t5align's
    ** temperature is calibrated in a sweep only, a learned scale needs a model that learned one */
    const char *const unrunnable[][2] = {
        {"generate --model $M -n 5 --method t5align", "method 't5align' calibrates its temperature"},
        {"score --model $M --text $R/README.md --length 64 --method '{t5align: {closed_form: prop2}}'",
         "method 't5align' calibrates its temperature"},
        {"score --model $M --text $R/README.md --length 64 --method '{logn: {mode: ssmax, learn: true}}'",
         "the stack learns its logit scale (learn: true) and the model has no learned scale"},
    };
    for (int i = 0; i < 3; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "M=$R/../shared/models/stories260K/stories260K.bin; $L %s", unrunnable[i][0]);
        cr_expect_eq(sh(out, sizeof out, cmd), 2, "%s: %s", cmd, out);
        cr_expect(strstr(out, unrunnable[i][1]) != NULL, "%s: %s", cmd, out);
    }
    /* the benches' way to force where steps run, checked when lenx starts */
    cr_expect_eq(sh(out, sizeof out, "LENX_TEAM=both $L generate --model "
                    "$R/tests/ref/model_ckpt_causal_rope.safetensors -n 5"), 2, "%s", out);
    cr_expect(strstr(out, "LENX_TEAM is 'both', not a way to run steps") != NULL, "%s", out);
    cr_expect(strstr(out, "hint: pilot (the default), team or one") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "LENX_TEAM=one OMP_NUM_THREADS=2 $L generate --model "
                    "$R/tests/ref/model_ckpt_causal_rope.safetensors -n 12 --ids --timings 2>&1 >/dev/null"), 0, "%s",
                 out);
    cr_expect(strstr(out, "; 0 on 2 threads, 11 on one, 0 probes, 0 switches") != NULL, "%s", out);
}

/* LENX_PILOT_TRACE=FILE: a line a decoding step, "T seconds" or "S seconds" as
** the pilot ran it (the counts of the timings line), appended run after run;
** a path that cannot be opened is refused when lenx starts. */
Test(generate, a_pilot_trace_has_a_line_a_step, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    const char *cmd = "OMP_NUM_THREADS=2 LENX_PILOT_TRACE=tr.txt $L generate --model "
                      "$R/tests/ref/model_ckpt_causal_rope.safetensors -n 40 --ids --timings 2>&1 >/dev/null";
    for (int run = 1; run <= 2; run++) {
        cr_assert_eq(sh(out, sizeof out, "%s", cmd), 0, "%s", out);
        const char *q = strstr(out, " on 2 threads, ");
        long team = -1, one = -1;
        cr_assert(q != NULL, "%s", out);
        while (q > out && q[-1] != ' ')
            q--;
        cr_assert_eq(sscanf(q, "%ld on 2 threads, %ld on one", &team, &one), 2, "%s", out);
        cr_assert_eq(team + one, 39, "%s", out);
        cr_assert_eq(sh(out, sizeof out, "grep -c '^T [0-9]*\\.[0-9]\\{6\\}$' tr.txt; "
                        "grep -c '^S [0-9]*\\.[0-9]\\{6\\}$' tr.txt; wc -l < tr.txt"), 0, "%s", out);
        long t = -1, s = -1, lines = -1;
        cr_assert_eq(sscanf(out, "%ld %ld %ld", &t, &s, &lines), 3, "%s", out);
        cr_expect_eq(t, run * team, "a T line a step on the team: %s", out);
        cr_expect_eq(s, run * one, "an S line a step on one thread: %s", out);
        cr_expect_eq(lines, run * 39L, "nothing else, appended run after run: %s", out);
    }
    cr_expect_neq(sh(out, sizeof out, "LENX_PILOT_TRACE=nowhere/tr.txt $L generate --model "
                     "$R/tests/ref/model_ckpt_causal_rope.safetensors -n 5"), 0, "%s", out);
    cr_expect(strstr(out, "LENX_PILOT_TRACE is 'nowhere/tr.txt', which cannot be opened for appending: "
                          "No such file or directory") != NULL, "%s", out);
}

/* cmd exits 2 with want in its output. */
static void expect_refused(const char *cmd, const char *want)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "%s", cmd), 2, "%s\n%s", cmd, out);
    cr_expect(strstr(out, want) != NULL, "expected '%s' from %s:\n%s", want, cmd, out);
}

/* --seed keys the sampling draws only: at temperature 0 (greedy, the default)
** it would change nothing, so it is refused rather than ignored. */
Test(generate, seed_without_sampling_is_refused, .init = setup, .fini = teardown, .timeout = 30)
{
    char out[4096];
    const char *m = "$L generate --model $R/tests/ref/model_ckpt_causal_rope.safetensors -n 3";
    snprintf(out, sizeof out, "%s --seed 5", m);
    expect_refused(out, "hint: --seed only affects sampling; add --temperature T > 0");
    snprintf(out, sizeof out, "%s --seed 5 --temperature 0", m);
    expect_refused(out, "--seed only affects sampling");
    cr_expect_eq(sh(out, sizeof out, "%s --seed 5 --temperature 0.5 > /dev/null", m), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s --temperature 0 > /dev/null", m), 0, "%s", out);
    snprintf(out, sizeof out, "%s --top-k 40", m);    /* the same for --top-k */
    expect_refused(out, "hint: --top-k only affects sampling; add --temperature T > 0");
    snprintf(out, sizeof out, "%s --temperature 1 --top-k -1", m);
    expect_refused(out, "--top-k = -1 is out of bounds");
}

/* --top-k 1 draws among the one largest logit: at any temperature and seed, the greedy text. */
Test(generate, top_k_1_is_greedy, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!have_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char a[8192], b[8192], c[8192];
    const char *m = "$L generate --model $R/../shared/models/stories260K/stories260K.bin -n 150 --ids";
    cr_assert_eq(sh(a, sizeof a, "%s 2>/dev/null", m), 0, "%s", a);
    cr_assert_eq(sh(b, sizeof b, "%s --temperature 1.5 --top-k 1 --seed 9 2>/dev/null", m), 0, "%s", b);
    cr_assert_eq(sh(c, sizeof c, "%s --temperature 1.5 --seed 9 2>/dev/null", m), 0, "%s", c);
    cr_expect_str_eq(a, b, "top-1 sampling is the greedy text");
    cr_expect_str_neq(a, c, "sampling at 1.5 without top-k is not (the check can tell them apart)");
}

/* A 512-token model with no tokenizer beside it is refused, as score refuses
** it, instead of reading its ids as the 260 byte tokens (which printed nothing
** for ids 260-511). */
Test(generate, foreign_vocabulary_without_tokenizer_is_refused, .init = setup, .fini = teardown, .timeout = 30)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "mkdir bare && cp $R/tests/ref/stories260K-hf/config.json "
                    "$R/tests/ref/stories260K-hf/model.safetensors bare/"), 0, "%s", out);
    expect_refused("$L generate --model bare -n 20", "bare has a vocabulary of 512 and no tokenizer");
    expect_refused("$L generate --model bare -n 20", "hint: name the tokenizer it was trained with: --tokenizer PATH");
    expect_refused("$L score --model bare --text $R/README.md", "bare has a vocabulary of 512 and no tokenizer");
    expect_refused("$L export --hf out --model bare", "bare has a vocabulary of 512 and no tokenizer");
    /* given, it reads: the tokenizer.json of the same directory */
    cr_expect_eq(sh(out, sizeof out, "$L generate --model bare -n 5 --tokenizer "
                    "$R/tests/ref/stories260K-hf/tokenizer.json > /dev/null"), 0, "%s", out);
}

/* llama2.c's own folder holds its 32,000-token tokenizer.bin beside
** stories260K.bin and tok512.bin: the model's tok<V>.bin is its tokenizer
** (tokenizer.bin was read first, and the model refused). */
Test(generate, tok_of_the_vocabulary_before_tokenizer_bin, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192];
    cr_expect_eq(sh(out, sizeof out, "mkdir l2 && S=$R/../shared/models/stories260K && ln -s $S/stories260K.bin "
                    "$S/tok512.bin l2/ && printf 'another vocabulary' > l2/tokenizer.bin && "
                    "$L generate --model l2/stories260K.bin -n 8 2>/dev/null"), 0, "%s", out);
    cr_expect(strncmp(out, "Once upon a time", 16) == 0, "%s", out);
}

/* export --hf of stories260K.bin carries its tokenizer (tok512.bin beside
** it) into the directory, with the ids its README gives (BOS 1, EOS 2) in
** config.json, so the directory generates what the .bin does: greedy, the
** start of llama2.c's own 200-step text; sampled, the same draws. */
Test(generate, exported_directory_generates_as_the_bin, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!have_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char out[8192], bin[8192], want[8192];
    cr_assert_eq(sh(out, sizeof out, "$L export --hf D --model $R/../shared/models/stories260K/stories260K.bin"),
                 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "cmp D/tokenizer.bin $R/../shared/models/stories260K/tok512.bin"), 0, "%s",
                 out);
    cr_assert_eq(sh(out, sizeof out, "tr -d ' \n' < D/config.json"), 0);
    cr_expect(strstr(out, "\"bos_token_id\":1,") != NULL, "%s", out);
    cr_expect(strstr(out, "\"eos_token_id\":2,") != NULL, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L generate --model D -n 20 --temperature 0 2>gen.err"), 0, "%s", out);
    cr_assert_eq(sh(bin, sizeof bin, "$L generate --model $R/../shared/models/stories260K/stories260K.bin -n 20 2>gen.err"),
                 0, "%s", bin);
    cr_expect_str_eq(out, bin);
    cr_assert_eq(sh(want, sizeof want, "cat $R/../shared/models/stories260K/expected/greedy_empty_200.txt"), 0);
    size_t n = strlen(out) - 1;     /* without the final newline */
    cr_expect(n > 40 && strncmp(out, want, n) == 0, "20 greedy tokens are not the start of run.c's text:\n%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L generate --model D -n 30 --temperature 1 --seed 1 --ids 2>gen.err"), 0, "%s", out);
    cr_assert_eq(sh(bin, sizeof bin, "$L generate --model $R/../shared/models/stories260K/stories260K.bin -n 30 "
                    "--temperature 1 --seed 1 --ids 2>gen.err"), 0, "%s", bin);
    cr_expect_str_eq(out, bin);
}

/* export --hf into a directory holding what a loader reads before or instead of what the export writes
** is refused before anything is written (it exited 0, and the directory then loaded the old weights through
** the index, or failed on the old tokenizer.json); exporting again over the export's own files is fine. */
Test(generate, export_refuses_a_directory_with_stale_files, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!have_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char out[8192];
    const char *bin = "$R/../shared/models/stories260K/stories260K.bin";
    cr_assert_eq(sh(out, sizeof out, "$L export --hf D --model %s >/dev/null && $L export --hf D --model %s", bin, bin),
                 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "mkdir I && mv D/model.safetensors I/old.safetensors && printf '{\"weight_map\": "
                    "{\"model.embed_tokens.weight\": \"old.safetensors\"}}' > I/model.safetensors.index.json && "
                    "$L export --hf I --model %s", bin), 2, "%s", out);
    cr_expect(strstr(out, "--hf I already holds model.safetensors.index.json, which this export does not write")
              && strstr(out, "hint: export into a new or empty directory"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "mkdir T && echo '{}' > T/tokenizer.json && $L export --hf T --model %s", bin),
                 2, "%s", out);
    cr_expect(strstr(out, "--hf T already holds tokenizer.json"), "%s", out);
    cr_expect(!exists("T/model.safetensors") && !exists("T/tokenizer.bin") && !exists("I/model.safetensors"));
    cr_expect_eq(sh(out, sizeof out, "touch F && $L export --hf F --model %s", bin), 3, "%s", out);
    cr_expect(strstr(out, "--hf F: exists and is not a directory"), "%s", out);
}

/* A tokenizer.json exported without a tokenizer_config.json of its own (its BOS/EOS from its template) into a
** directory holding another's: export exited 0, and the loader read the stale file with the copied tokenizer
** (here a broken one: the directory could not be loaded). Refused now, naming it; with the source's own
** tokenizer_config.json beside it, the export writes that over the old one and succeeds. */
Test(generate, export_refuses_a_stale_tokenizer_config, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[8192];
    cr_assert_eq(sh(out, sizeof out, "cp -r $R/tests/ref/stories260K-hf S && rm S/tokenizer_config.json && "
                    "mkdir D && echo '{' > D/tokenizer_config.json && $L export --hf D --model S"), 2, "%s", out);
    cr_expect(strstr(out, "--hf D already holds tokenizer_config.json, which this export does not write")
              && strstr(out, "hint: export into a new or empty directory"), "%s", out);
    cr_expect(!exists("D/model.safetensors") && !exists("D/tokenizer.json"));
    cr_expect_eq(sh(out, sizeof out, "cp $R/tests/ref/stories260K-hf/tokenizer_config.json S/ && "
                    "$L export --hf D --model S > /dev/null && $L show model D > /dev/null && "
                    "cmp D/tokenizer_config.json S/tokenizer_config.json"), 0, "%s", out);
}

/* A checkpoint holding a NaN was exported (exit 0) into a directory and a GGUF file that every loader then
** read as a model; score, generate and run refuse it. export now refuses it too, naming the tensor and the
** index (a NaN written at byte 48 of stories260K.bin: the 28-byte header, then tok_emb.weight's 6th float),
** and writes nothing. */
Test(generate, export_refuses_a_non_finite_weight, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!have_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char out[8192];
    cr_assert_eq(sh(out, sizeof out, "cp $R/../shared/models/stories260K/stories260K.bin nan.bin && "
                    "printf '\\000\\000\\300\\177' | dd of=nan.bin bs=1 seek=48 conv=notrunc 2>/dev/null"), 0,
                 "%s", out);
    static const char *const to[] = {"--hf H", "--gguf G.gguf"};
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(sh(out, sizeof out, "$L export %s --model nan.bin --tokenizer "
                        "$R/../shared/models/stories260K/tok512.bin", to[i]), 1, "%s: %s", to[i], out);
        cr_expect(strstr(out, "model nan.bin: tensor 'tok_emb.weight' holds a non-finite value (nan) at index 5\n"
                          "  hint: "), "%s: %s", to[i], out);
    }
    cr_expect(!exists("H") && !exists("G.gguf"), "nothing written");
    /* generate refuses it at load too, naming the tensor (it printed the prompt, then a NaN logit) */
    cr_expect_eq(sh(out, sizeof out, "$L generate --model nan.bin --tokenizer "
                    "$R/../shared/models/stories260K/tok512.bin --prompt Once"), 1, "%s", out);
    cr_expect(strstr(out, "lenx: error: model nan.bin: tensor 'tok_emb.weight' holds a non-finite value (nan)"),
              "%s", out);
    cr_expect_null(strstr(out, "Once"), "the prompt is not printed first: %s", out);   /* a warning may come first */
}

/* A model whose config gives an evaluation stack: dynamic NTK alone goes back into a Hugging Face
** directory's rope_scaling (read back to the same stack), not into a GGUF file, and a sliding window
** into neither; what is left out is said on stderr, naming the stack and the --method that gives it
** back. */
Test(generate, export_names_the_evaluation_stack_it_drops, .init = setup, .fini = teardown, .timeout = 60)
{
    if (!have_stories())
        cr_skip_test("stories260K is not beside the checkout");
    char out[8192];
    static const char dyn[] = "[{\"ntk\":{\"mode\":\"dynamic\",\"factor\":2}}]";
    cr_assert_eq(sh(out, sizeof out, "$L export --hf D --model $R/../shared/models/stories260K/stories260K.bin && "
                    "cp -r D W && sed -i 's/\"rope_scaling\": null/\"rope_scaling\": {\"type\": \"dynamic\", "
                    "\"factor\": 2.0}/' D/config.json && sed -i 's/\"model_type\": \"llama\"/\"model_type\": "
                    "\"mistral\", \"sliding_window\": 64/' W/config.json && $L show model D | grep eval_stack && "
                    "$L show model W | grep eval_stack"), 0, "%s", out);
    cr_expect(strstr(out, dyn) && strstr(out, "[{\"window\":{\"size\":64}}]"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L export --hf E --model D 2>&1 >/dev/null && $L show model E | grep eval_stack"),
                 0, "%s", out);
    cr_expect(!strstr(out, "evaluation stack") && strstr(out, dyn), "dynamic NTK goes into rope_scaling: %s", out);
    static const char *const to[][2] = {{"--gguf g.gguf", "D"}, {"--hf F", "W"}, {"--gguf h.gguf", "W"}};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(sh(out, sizeof out, "$L export %s --model %s 2>&1 >/dev/null", to[i][0], to[i][1]), 0, "%s", out);
        const char *stack = to[i][1][0] == 'D' ? dyn : "[{\"window\":{\"size\":64}}]";
        char want[256];
        snprintf(want, sizeof want, "the model's evaluation stack %s is not written", stack);
        cr_expect(strstr(out, want), "%s: %s", to[i][0], out);
        snprintf(want, sizeof want, "--method '%s'", stack);
        cr_expect(strstr(out, want), "%s: %s", to[i][0], out);
    }
    cr_assert_eq(sh(out, sizeof out, "$L export --hf G --model $R/../shared/models/stories260K/stories260K.bin "
                    "2>&1 >/dev/null"), 0, "%s", out);
    cr_expect(!strstr(out, "evaluation stack"), "a model without one exports without a note: %s", out);
}

/* The committed held-out stories (configs/heldout, the CI check that the
** corpus is the committed one): each file's size and SHA-256 as coreutils
** compute them equal the manifest's, and the manifest's lines hash to the
** LX_HELDOUT_SHA256 lenx accepts. */
Test(generate, heldout_text_is_the_committed_one, .init = setup, .fini = teardown)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "cd $R/configs/heldout && tail -n +2 manifest.tsv | awk -F'\\t' "
                    "'{ print $4 \"  \" $2 }' | sha256sum -c --quiet && tail -n +2 manifest.tsv | cut -f2,3 | "
                    "while read p b; do [ $(stat -c %%s $p) = $b ] || echo size $p; done"), 0,
                 "%s", out);
    cr_expect_str_eq(out, "", "a committed held-out file differs from configs/heldout/manifest.tsv");
    cr_assert_eq(sh(out, sizeof out, "tail -n +2 $R/configs/heldout/manifest.tsv | sha256sum | cut -c1-64"), 0);
    cr_expect_str_eq(out, LX_HELDOUT_SHA256 "\n", "LX_HELDOUT_SHA256 is not the committed manifest's");
    cr_assert_eq(sh(out, sizeof out, "tail -n +2 $R/configs/heldout/manifest.tsv | grep -c '^stories\tstories260K/'"), 0);
    cr_expect_str_eq(out, "8\n");
}

/* The stories split reads the manifest in $LENX_HELDOUT (else the checkout's
** configs/heldout) and takes only the committed text: without a manifest the
** error says what to run, another text is refused naming its manifest. */
Test(generate, heldout_split_reads_only_the_committed_manifest, .init = setup, .fini = teardown)
{
    char out[4096];
    write_file("a.txt", "Once upon a time there was a cat.\n");
    cr_assert_eq(sh(out, sizeof out, "printf 'split\\tpath\\tbytes\\tsha256\\nstories\\ta.txt\\t%%s\\t%%s\\n' "
                    "$(stat -c %%s a.txt) $(sha256sum a.txt | cut -d' ' -f1) > manifest.tsv"), 0, "%s", out);
    const struct lx_corpus *c;
    struct lx_error err = {""};
    setenv("LENX_HELDOUT", "/nonexistent-heldout", 1);
    cr_expect_eq(lx_corpus_get(&c, "stories", &err), LX_EIO);
    cr_expect(strstr(err.msg, "make heldout") != NULL, "%s", err.msg);
    setenv("LENX_HELDOUT", dir, 1);
    cr_expect_eq(lx_corpus_get(&c, "stories", &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "manifest.tsv is not the committed held-out stories manifest") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "make heldout") != NULL, "%s", err.msg);
    unsetenv("LENX_HELDOUT");       /* the test binary lies in the build tree: configs/heldout */
    cr_assert_eq(lx_corpus_get(&c, "stories", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(sh(out, sizeof out, "tail -n +2 $R/configs/heldout/manifest.tsv | awk '{ n += $3 } END { print n }'"),
                 0);
    cr_expect_eq(c->n_docs, 8);
    cr_expect_eq(c->n_bytes, atol(out));
    cr_expect_str_eq(c->hash, LX_HELDOUT_SHA256);
    cr_expect_str_eq(lx_corpus_split(2), "stories");
}

/* `lenx run` plans a stories cell on a copy of the committed text and
** refuses (exit 2, naming the file, saying to run `make heldout`) a copy with
** one byte changed, whether the manifest still lists the old hash (the
** document is named) or was rewritten to match (the manifest is named);
** `make heldout`'s check (scripts/heldout.sh DIR) fails on both likewise. */
Test(generate, heldout_run_refuses_a_changed_text, .init = setup, .fini = teardown, .timeout = 30)
{
    char out[4096];
    const char *plan = "LENX_HELDOUT=$D/h $L run --dry-run --db x.db t.yaml";
    write_file("t.yaml", "name: t\nmodels: {b: {checkpoint: \"$R/tests/ref/model_ckpt_causal_rope.safetensors\"}}\n"
               "methods: [rope]\ntasks: [{ppl: {corpus: stories}}]\nlengths: [16]\n");
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|\" t.yaml && cp -r $R/configs/heldout h"), 0, "%s", out);
    cr_assert(exists("h/manifest.tsv"));
    cr_assert_eq(sh(out, sizeof out, "%s | grep -c 'ppl(corpus=stories)'", plan), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "bash $R/scripts/heldout.sh h"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "sed -i '3s/a/e/' h/stories260K/doc_3.txt"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s", plan), 2, "%s", out);
    cr_expect(strstr(out, "h/stories260K/doc_3.txt is not the committed held-out text") != NULL, "%s", out);
    cr_expect(strstr(out, "make heldout") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "bash $R/scripts/heldout.sh h"), 1, "%s", out);
    cr_expect(strstr(out, "h/stories260K/doc_3.txt differs") != NULL, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "f=h/stories260K/doc_3.txt && awk -F'\\t' -v OFS='\\t' -v b=$(stat -c %%s $f) "
                    "-v s=$(sha256sum $f | cut -c1-64) '$2 ~ /doc_3/ { $3 = b; $4 = s } 1' h/manifest.tsv > m && "
                    "mv m h/manifest.tsv"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s", plan), 2, "%s", out);
    cr_expect(strstr(out, "h/manifest.tsv is not the committed held-out stories manifest") != NULL, "%s", out);
    cr_expect(strstr(out, "make heldout") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "bash $R/scripts/heldout.sh h"), 1, "%s", out);
    cr_expect(strstr(out, "h/manifest.tsv is not the committed manifest") != NULL, "%s", out);
}

/* ---- the engine's scoring (harness/engine/lm/lm.c) -------------------------------- */

/* n tokens: BOS (1), then ids in [0, V) from a 64-bit LCG keyed on seed. */
static void random_tokens(int *tok, int n, long V, uint64_t seed)
{
    for (int t = 0; t < n; t++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        tok[t] = t ? (int)((seed >> 33) % (uint64_t)V) : 1;
    }
}

/* A window scored on the engine (what `lenx serve` answers an echo with
** logprobs from) reads losses only and takes each row's top tokens from
** every block of logits in turn. On 2,500 tokens of stories260K (three
** blocks of LX_EVAL_ROWS rows) in portable numerics: each loss has the bits
** of a full (n, V) pass's; each row's 5 top ids are the full pass's 5
** largest logits, found here by sorting (ties: the lower id); their
** log-probabilities are logit − logsumexp within 1e-6, the window's own next
** token's exactly −loss. The last row has no next token: loss 0. */
static int by_logit_then_id(const void *x, const void *y, void *z)
{
    const float *lg = z;
    int a = *(const int *)x, b = *(const int *)y;
    return lg[a] != lg[b] ? (lg[a] < lg[b]) - (lg[a] > lg[b]) : (a > b) - (a < b);
}

Test(generate, engine_scores_rows_and_top_tokens_block_by_block, .init = setup, .fini = teardown, .timeout = 120)
{
    if (!have_stories())
        cr_skip_test("stories260K is not beside the checkout");
    enum { N = 2500, K = 5 };
    cr_assert_gt(N, 2 * LX_EVAL_ROWS);
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    struct lx_model m;
    struct lx_ckpt_info info = {0};
    struct lx_error err = {""};
    struct tstack s;
    load_stories(&m, &info, &s, N);
    long V = m.arch.vocab;
    static int tok[N], tgt[N], id[N * K], order[512];
    static float loss[N], lp[N * K];
    random_tokens(tok, N, V, 12345);
    for (int t = 0; t < N; t++)
        tgt[t] = t + 1 < N ? tok[t + 1] : -1;
    struct lx_lm lm;
    lx_lm_local(&lm, &m, &s.spec);
    struct lx_lm_score w = {.tok = tok, .n = N, .attn_row0 = -1, .loss = loss, .top_k = K, .top_id = id,
                            .top_lp = lp};
    cr_assert_eq(lm.ops->score(&lm, &w, 1, &err), LX_OK, "%s", err.msg);
    struct lx_acts a;
    cr_assert_eq(lx_acts_alloc(&a, &m.arch, 1, N, LX_ACTS_EVAL, &err), LX_OK, "%s", err.msg);
    lx_model_forward(&m, &s.spec, tok, tgt, &a);
    cr_assert_leq(V, 512);
    int bad = 0;
    for (long t = 0; t < N && bad < 5; t++) {
        if (memcmp(&loss[t], t + 1 < N ? &a.loss[t] : &(float){0.0f}, sizeof(float))) {
            bad++;
            cr_expect_fail("row %ld: loss %.9g, the full pass's %.9g", t, loss[t], a.loss[t]);
        }
        if (t + 1 == N)
            break;
        const float *lg = a.logits + t * V;
        double mx = lg[0], sum = 0.0;
        for (long v = 0; v < V; v++)
            order[v] = (int)v, mx = lg[v] > mx ? lg[v] : mx;
        for (long v = 0; v < V; v++)
            sum += exp((double)lg[v] - mx);
        qsort_r(order, (size_t)V, sizeof *order, by_logit_then_id, (void *)lg);
        for (int j = 0; j < K; j++) {
            double want = (double)lg[order[j]] - mx - log(sum);
            if (id[t * K + j] != order[j] || fabs(lp[t * K + j] - want) > 1e-6 ||
                (order[j] == tok[t + 1] && lp[t * K + j] != -loss[t])) {
                bad++;
                cr_expect_fail("row %ld, top %d: id %d lp %.9g; the full pass's id %d lp %.9g (own token %d, loss "
                               "%.9g)", t, j, id[t * K + j], lp[t * K + j], order[j], want, tok[t + 1], loss[t]);
            }
        }
    }
    lx_acts_release(&a);
    tstack_free(&s);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* A score that also draws the token after its window (lm.h's draw: what
** `lenx serve` answers lm-eval's log-likelihood request with) gives, in
** portable numerics, the token a one-token continuation draws and every row's
** loss, top ids and log-probabilities that scoring the window with that token
** gives: greedy, and sampled with and without a top-k cut. */
Test(generate, a_score_that_draws_the_next_token_is_continuation_then_score, .init = setup, .fini = teardown,
     .timeout = 120)
{
    if (!have_stories())
        cr_skip_test("stories260K is not beside the checkout");
    enum { N = 300, K = 4 };
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    struct lx_model m;
    struct lx_ckpt_info info = {0};
    struct lx_error err = {""};
    struct tstack s;
    load_stories(&m, &info, &s, N + 1);
    struct lx_lm lm;
    lx_lm_local(&lm, &m, &s.spec);
    static int tok[N + 1], id1[(N + 1) * K], id2[(N + 1) * K];
    static float loss1[N + 1], loss2[N + 1], lp1[(N + 1) * K], lp2[(N + 1) * K];
    random_tokens(tok, N, m.arch.vocab, 777);
    const struct lx_lm_sampling draws[] = {{0.0, 0, 0}, {0.8, 0, 7}, {1.3, 40, 123}};
    for (size_t d = 0; d < sizeof draws / sizeof *draws; d++) {
        long n_out = 0;
        cr_assert_eq(lx_lm_generate(&lm, tok, N, 1, &draws[d], NULL, tok + N, &n_out, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(n_out, 1);
        struct lx_lm_score one = {.tok = tok, .n = N, .attn_row0 = -1, .loss = loss1, .top_k = K, .top_id = id1,
                                  .top_lp = lp1, .draw = &draws[d]},
                           two = {.tok = tok, .n = N + 1, .attn_row0 = -1, .loss = loss2, .top_k = K, .top_id = id2,
                                  .top_lp = lp2};
        cr_assert_eq(lm.ops->score(&lm, &one, 1, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(lm.ops->score(&lm, &two, 1, &err), LX_OK, "%s", err.msg);
        cr_expect_eq(one.drawn, tok[N], "draw %zu: the score drew %d, the continuation %d", d, one.drawn, tok[N]);
        cr_expect_eq(memcmp(loss1, loss2, sizeof(float) * N), 0, "draw %zu: losses (last: %.9g against %.9g)", d,
                     loss1[N - 1], loss2[N - 1]);
        cr_expect_eq(memcmp(id1, id2, sizeof(int) * N * K), 0, "draw %zu: top ids", d);
        cr_expect_eq(memcmp(lp1, lp2, sizeof(float) * N * K), 0, "draw %zu: top log-probabilities", d);
        cr_expect_gt(loss1[N - 1], 0.0f, "draw %zu: the drawn token's loss is there", d);
    }
    tstack_free(&s);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
}

/* A prompt holding a special token's text ("</s>", which a tokenizer.json reads as EOS): the text
** after it is printed, and with --ids the continuation too (both stopped at the special id), the same
** continuation either way. */
Test(generate, a_special_token_inside_the_prompt_is_passed_over, .init = setup, .fini = teardown, .timeout = 60)
{
    char a[4096], b[4096];
    cr_assert_eq(sh(a, sizeof a, "$L generate --model $R/tests/ref/stories260K-hf --prompt 'Tim said </s> and Sam' "
                    "-n 5 2>/dev/null"), 0, "%s", a);
    cr_expect(strncmp(a, "Tim said ", 9) == 0 && strstr(a, " and Sam") != NULL, "%s", a);
    cr_assert_eq(sh(b, sizeof b, "$L generate --model $R/tests/ref/stories260K-hf --prompt 'Tim said </s> and Sam' "
                    "-n 5 --ids 2>/dev/null"), 0, "%s", b);
    const char *text = strchr(b, '\n');
    cr_assert_not_null(text, "%s", b);
    cr_expect_str_eq(text + 1, a, "the text after --ids' ids");
    cr_expect(strstr(b, " 2 ") != NULL, "EOS (id 2) is among the prompt's ids: %s", b);
}
