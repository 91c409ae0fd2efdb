/*
** tests/test_config.c - sweep files: the documented syntax parses to the
** expected grid, and bad inputs are rejected with what, where and a hint.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/core/hash.h"
#include "harness/sweep/plan.h"

/* Parse and plan `text`; expect failure at `where` with `what` in the message. */
static void expect_error(const char *text, const char *where, const char *what)
{
    struct lx_grid g;
    struct lx_plan plan = {0};
    struct lx_error err = {{0}};
    int rc = lx_grid_load_text(&g, text, "bad.yaml", &err);
    if (rc == LX_OK)
        rc = lx_plan_build(&plan, &g, &err);
    cr_expect_eq(rc, LX_EINVAL, "expected a rejection for:\n%s", text);
    cr_expect(strncmp(err.msg, where, strlen(where)) == 0 && err.msg[strlen(where)] == ':',
              "location: expected '%s', got: %s", where, err.msg);
    cr_expect(strstr(err.msg, what) != NULL, "message: expected '%s' in: %s", what, err.msg);
    lx_plan_release(&plan);
    lx_grid_release(&g);
}

#define HEAD "name: t\nseed: 1\n"

Test(config, issue_example_parses)
{
    const char *text =
        "name: gauss-demo\n"
        "seed: 1\n"
        "methods:\n"
        "  - none\n"
        "  - logn: {mode: ssmax, s: 0.4}\n"
        "  - [scaleinv: {tau: 10}, infoscale]      # a stack: applied in order\n"
        "tasks:\n"
        "  - gaussian: {samples: 2000, ranges: [[10, 100], [100, 1000]]}\n"
        "lengths: [1000, 10000]\n";
    struct lx_grid g;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_grid_load_text(&g, text, "demo.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(g.n_stacks, 3);
    cr_expect_str_eq(g.stacks[0].canon, "none");
    cr_expect_str_eq(g.stacks[1].canon, "logn(mode=ssmax,s=0.4)");
    cr_expect_str_eq(g.stacks[2].canon, "scaleinv(tau=10)+infoscale");
    cr_expect_eq(g.stacks[2].n, 2);
    cr_expect_str_eq(g.tasks[0].canon, "gaussian(ranges=[[10,100],[100,1000]])");
    cr_expect_eq(g.n_lengths, 2);
    cr_expect_eq(g.n_seeds, 1);
    cr_expect_eq(g.seeds[0], 1);
    struct lx_plan plan;
    cr_assert_eq(lx_plan_build(&plan, &g, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(plan.n_cells, 6);
    for (int i = 0; i < plan.n_cells; i++)
        for (int j = 0; j < i; j++)
            cr_expect_str_neq(plan.cells[i].key, plan.cells[j].key);
    lx_plan_release(&plan);
    lx_grid_release(&g);
}

Test(config, equivalent_spellings_share_keys)
{
    /* Defaults written out or left implicit resolve to the same cell. */
    const char *a = HEAD "methods: [logn]\ntasks: [gaussian]\nlengths: [100]\n";
    const char *b = HEAD "methods: [{logn: {mode: su, base: 512}}]\n"
                    "tasks: [{gaussian: {samples: 2000, sigma: 1.0}}]\nlengths: [100]\n";
    struct lx_grid ga, gb;
    struct lx_plan pa, pb;
    struct lx_error err;
    cr_assert_eq(lx_grid_load_text(&ga, a, "a.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_grid_load_text(&gb, b, "b.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_plan_build(&pa, &ga, &err), LX_OK);
    cr_assert_eq(lx_plan_build(&pb, &gb, &err), LX_OK);
    cr_expect_str_eq(pa.cells[0].key, pb.cells[0].key);
    cr_expect_str_eq(ga.stacks[0].canon, "logn(mode=su,base=512)");
    /* A parameter its mode makes moot (s in mode su) is refused: it was taken and dropped, so the cell ran
    ** without the value it names (it did not change the key either). */
    lx_plan_release(&pb);
    lx_grid_release(&gb);
    const char *c = HEAD "methods: [{logn: {mode: su, s: 0.9}}]\ntasks: [gaussian]\nlengths: [100]\n";
    cr_expect_eq(lx_grid_load_text(&gb, c, "c.yaml", &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "method 'logn': 's' applies only with mode=ssmax") != NULL, "%s", err.msg);
    lx_plan_release(&pa);
    lx_grid_release(&ga);
    lx_grid_release(&gb);
}

Test(config, seeds_axis)
{
    const char *t = HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [10, 20]\nseeds: [3, 4, 5]\n";
    struct lx_grid g;
    struct lx_plan p;
    struct lx_error err;
    cr_assert_eq(lx_grid_load_text(&g, t, "s.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_plan_build(&p, &g, &err), LX_OK);
    cr_expect_eq(p.n_cells, 6);
    cr_expect_eq(p.cells[0].seed, 3);
    cr_expect_eq(p.cells[2].seed, 5);
    cr_expect_neq(p.cells[0].data_key, p.cells[1].data_key);
    lx_plan_release(&p);
    lx_grid_release(&g);
}

/* ---- bad inputs: each names the place and says what failed ---- */

Test(config, unknown_top_key)
{
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlenghts: [10]\n", "bad.yaml:5:1",
                 "unknown key 'lenghts'");
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlenghts: [10]\n", "bad.yaml:5:1",
                 "did you mean 'lengths'?");
}

Test(config, unknown_method)
{
    expect_error(HEAD "methods:\n  - none\n  - lgn: {mode: su}\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:5:5", "unknown method 'lgn'");
    expect_error(HEAD "methods: [none, lgn]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:17",
                 "did you mean 'logn'?");
}

Test(config, unknown_task)
{
    expect_error(HEAD "methods: [none]\ntasks: [gausian]\nlengths: [10]\n", "bad.yaml:4:9",
                 "unknown task 'gausian'\n  hint: did you mean 'gaussian'?");
}

Test(config, unknown_parameter)
{
    expect_error(HEAD "methods:\n  - scaleinv: {tua: 10}\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:4:16", "method 'scaleinv': unknown parameter 'tua'\n  hint: did you mean 'tau'?");
    expect_error(HEAD "methods: [none]\ntasks:\n  - gaussian: {sample: 10}\nlengths: [10]\n",
                 "bad.yaml:5:16", "did you mean 'samples'?");
}

Test(config, wrong_types)
{
    expect_error(HEAD "methods:\n  - scaleinv: {tau: abc}\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:4:21", "'tau' must be a number, got 'abc'");
    expect_error(HEAD "methods: [none]\ntasks:\n  - gaussian: {samples: \"2000\"}\nlengths: [10]\n",
                 "bad.yaml:5:25", "'samples' must be an integer, got the string \"2000\"");
    expect_error(HEAD "methods: [none]\ntasks:\n  - gaussian: {samples: 2.5}\nlengths: [10]\n",
                 "bad.yaml:5:25", "'samples' must be an integer, got '2.5'");
    expect_error(HEAD "methods:\n  - scaleinv: 10\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:4:15", "parameters must be a mapping");
}

Test(config, out_of_bounds)
{
    expect_error(HEAD "methods:\n  - scaleinv: {tau: -1}\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:4:21", "'tau' = -1 is out of bounds (0, ");
    expect_error(HEAD "methods:\n  - scaleinv: {tau: 0}\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:4:21", "out of bounds (0");
    expect_error(HEAD "methods: [none]\ntasks:\n  - gaussian: {samples: 1}\nlengths: [10]\n",
                 "bad.yaml:5:25", "'samples' = 1 is out of bounds [2, ");
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [0]\n", "bad.yaml:5:11",
                 "'lengths' value 0 is out of bounds [1, 1e12]\n  hint: a length counts tokens");
}

/* A value strtod underflows (ERANGE: a subnormal such as 1e-320) is the
** nearest double, bounds-checked like any other: tiny and positive is in
** (0, ...], tiny and negative out of it; an overflow is refused as too large,
** not as "not a number". */
Test(config, tiny_and_huge_numbers)
{
    struct lx_grid g;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_grid_load_text(&g, HEAD "methods:\n  - scaleinv: {tau: 1e-320}\ntasks: [gaussian]\nlengths: [10]\n",
                                   "ok.yaml", &err), LX_OK, "%s", err.msg);
    lx_grid_release(&g);
    expect_error(HEAD "methods:\n  - scaleinv: {tau: -1e-320}\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:4:21", "'tau' = -1e-320 is out of bounds (0, ");
    expect_error(HEAD "methods:\n  - scaleinv: {tau: 1e400}\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:4:21", "'tau' = 1e400 is too large for a double");
    expect_error(HEAD "methods: [none]\ntasks:\n  - gaussian: {samples: 1e400}\nlengths: [10]\n",
                 "bad.yaml:5:25", "'samples' = 1e400 is too large for a double");
}

Test(config, bad_enum)
{
    expect_error(HEAD "methods:\n  - logn: {mode: ssmx}\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:4:18", "'mode' must be one of su|qwen|ssmax, got 'ssmx'\n  hint: did you mean 'ssmax'?");
}

Test(config, bad_lists)
{
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlengths: 1000\n", "bad.yaml:5:10",
                 "'lengths' must be a list, got a scalar");
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [100, 1.5]\n", "bad.yaml:5:16",
                 "'lengths' entries must be integers, got '1.5'");
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [100, 100]\n", "bad.yaml:5:16",
                 "'lengths' lists 100 twice");
    expect_error(HEAD "methods: []\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:10", "'methods' is empty");
    expect_error(HEAD "methods: [[]]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:11",
                 "an empty method stack");
    expect_error(HEAD "methods: [[none, [logn]]]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:18",
                 "a method stack cannot contain a list");
    expect_error(HEAD "methods: [[logn, logn]]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:18",
                 "method 'logn' appears twice in one stack");
    expect_error(HEAD "methods: [none, none]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:17",
                 "method stack 'none' is listed twice");
    /* rope is trained in anyway: 'train: true' spells the same stack (it made another model key) */
    expect_error(HEAD "methods: [rope, {rope: {train: true}}]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:17",
                 "method stack 'rope' is listed twice");
}

Test(config, bad_ranges)
{
    expect_error(HEAD "methods: [none]\ntasks:\n  - gaussian: {ranges: [[100, 10]]}\nlengths: [10]\n",
                 "bad.yaml:5:25", "entry [100, 10] is empty");
    expect_error(HEAD "methods: [none]\ntasks:\n  - gaussian: {ranges: [[1, 2, 3]]}\nlengths: [10]\n",
                 "bad.yaml:5:25", "entry 1 must be a pair");
    expect_error(HEAD "methods: [none]\ntasks:\n  - gaussian: {ranges: 5}\nlengths: [10]\n",
                 "bad.yaml:5:24", "'ranges' must be a list of [start, end) pairs");
    /* a range given twice would report its metrics twice (it aborted the run) */
    expect_error(HEAD "methods: [none]\ntasks:\n  - gaussian: {ranges: [[10, 20], [30, 40], [10, 20]]}\n"
                 "lengths: [100]\n", "bad.yaml:5:45", "'ranges' lists [10, 20] twice (entries 1 and 3)");
}

/* One model under two names (a YAML alias): its cells run and are stored once, so the second name's rows
** would vanish unsaid; the plan says so (a warning: two spellings of one checkpoint are one model on purpose). */
Test(config, one_model_under_two_names)
{
    struct lx_grid g;
    struct lx_plan plan = {0};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_grid_load_text(&g, HEAD "models:\n  a: &m\n"
                                   "    arch: {mode: causal, layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64}\n"
                                   "    train: {length: 32, batch: 4, steps: 20, warmup: 5}\n  b: *m\nmethods: [rope]\n"
                                   "tasks: [ppl]\nlengths: [32]\n", "two.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_plan_build(&plan, &g, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(plan.n_cells, 2);
    cr_expect(plan.n_cells == 2 && strcmp(plan.cells[0].key, plan.cells[1].key) == 0);
    cr_assert_eq(plan.n_notes, 1);
    cr_expect(strncmp(plan.notes[0], "two.yaml:7:3: models 'a' and 'b' are one model (key ", 52) == 0, "%s",
              plan.notes[0]);
    lx_plan_release(&plan);
    lx_grid_release(&g);
}

Test(config, missing_and_misc)
{
    expect_error(HEAD "methods: [none]\nlengths: [10]\n", "bad.yaml:1:1", "the sweep file has no 'tasks'");
    expect_error("name: my sweep\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:1:7",
                 "sweep name 'my sweep' has the character ' '");
    expect_error("name: t\nseed: [1, 2]\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:2:7", "'seed' must be one integer\n  hint: use 'seeds' for a list");
    expect_error(HEAD "name: u\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:1",
                 "key 'name' is given twice");
    expect_error(HEAD "methods: [{logn: {mode: su, mode: qwen}}]\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:3:29", "parameter 'mode' is given twice");
    expect_error(HEAD "methods: [{logn: {}, none: {}}]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:11",
                 "a method entry must be a name or {name: {param: value}}");
    /* gaussian runs no model: a stack that trains, fine-tunes or learns into one is refused (it was ignored) */
    expect_error(HEAD "methods: [[{logn: {mode: ssmax, train: true}}]]\ntasks: [gaussian]\nlengths: [100]\n",
                 "bad.yaml:3:12", "method 'logn' is trained in (train: true), and task 'gaussian' runs on no model");
    expect_error(HEAD "methods: [[{logn: {mode: ssmax, finetune: 10}}]]\ntasks: [gaussian]\nlengths: [100]\n",
                 "bad.yaml:3:12", "is fine-tuned in (finetune:)");
    expect_error(HEAD "methods: [[{logn: {mode: ssmax, learn: true}}]]\ntasks: [gaussian]\nlengths: [100]\n",
                 "bad.yaml:3:11", "learns its logit scale (learn: true), and task 'gaussian' runs on no model");
    /* inside a model entry and its server map too (the first one used to win, silently) */
    expect_error(HEAD "models:\n  t: {arch: {layers: 1}, arch: {layers: 4}, train: {length: 32}}\nmethods: [rope]\n"
                 "tasks: [ppl]\nlengths: [32]\n", "bad.yaml:4:26", "model 't': key 'arch' is given twice");
    expect_error(HEAD "models:\n  s: {server: {url: \"http://127.0.0.1:1/v1\", url: \"ftp://x\"}}\nmethods: [none]\n"
                 "tasks: [ppl]\nlengths: [32]\n", "bad.yaml:4:46", "model 's' server: key 'url' is given twice");
}

Test(config, yaml_syntax_error)
{
    expect_error(HEAD "methods: [none, logn\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:4:6",
                 "YAML syntax error");
    /* bytes that are not UTF-8 (at the octet that breaks the sequence) and a control character: at their own
    ** line and column, not 1:1 */
    expect_error(HEAD "description: caf\xe9\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:18",
                 "invalid trailing UTF-8 octet");
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [10]\ndescription: a\x01b\n", "bad.yaml:6:15",
                 "control characters");
    /* a one-line text without its line break (a --method value): the end of the text is 1:7, not 2:1, a line
    ** the value does not have */
    struct lx_doc doc;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_doc_load_text(&doc, "[ntk, ", "--method", &err), LX_EINVAL);
    cr_expect(strncmp(err.msg, "--method:1:7: YAML syntax error", 31) == 0, "%s", err.msg);
}

/* A NUL byte ends a C string: the rest of the file would go unread (a
** duplicate seed and an unknown key after it were accepted). Refused at it. */
Test(config, a_nul_byte_is_refused_where_it_is)
{
    static const char text[] = HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [100]\n\0seeds: [1, 1]\nbogus: 1\n";
    char path[] = "/tmp/lenx-nul-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    struct lx_grid g;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_grid_load(&g, path, &err), LX_EINVAL);
    char want[128];
    snprintf(want, sizeof want, "%s:6:1: a NUL byte", path);
    cr_expect(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
    lx_grid_release(&g);
    remove(path);
}

Test(config, missing_file)
{
    struct lx_grid g;
    struct lx_error err;
    cr_expect_eq(lx_grid_load(&g, "/nonexistent/sweep.yaml", &err), LX_EIO);
    cr_expect(strstr(err.msg, "/nonexistent/sweep.yaml: cannot open the file") != NULL, "%s", err.msg);
    lx_grid_release(&g);
}

/* ---- plan-time checks: a method that cannot apply to a task ---- */

static int rotary_apply(const void *p, const struct lx_facts *f, struct lx_spec *s, struct lx_error *e)
{
    (void)p, (void)f, (void)s, (void)e;
    return LX_OK;
}

static const struct lx_method fake_rotary = {
    .name = "fakerope",
    .summary = "a test method that needs rotary positions",
    .schema = LX_SCHEMA_NONE,
    .kind = LX_KIND_INFERENCE,
    .needs = LX_CAP_LOGITS | LX_CAP_ROTARY,
    .apply = rotary_apply,
};

Test(config, plan_rejects_incompatible_method)
{
    struct lx_grid g;
    struct lx_plan p = {0};
    struct lx_error err;
    const char *t = HEAD "methods: [none, logn]\ntasks: [gaussian]\nlengths: [10]\n";
    cr_assert_eq(lx_grid_load_text(&g, t, "bad.yaml", &err), LX_OK, "%s", err.msg);
    g.stacks[1].items[0].method = &fake_rotary;   /* params of logn are never read by it */
    cr_expect_eq(lx_plan_build(&p, &g, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "bad.yaml:3:17: method 'fakerope' cannot apply to task 'gaussian'") == err.msg,
              "%s", err.msg);
    cr_expect(strstr(err.msg, "needs rotary positions") != NULL, "%s", err.msg);
    lx_plan_release(&p);
    lx_grid_release(&g);
}

Test(config, plan_runs_method_checks)
{
    /* InfoScale's denominator needs train_len > e^eps: e^5 = 148 > 64. */
    expect_error(HEAD "methods:\n  - infoscale: {eps: 5}\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:4:5", "infoscale: the training length 64 must exceed e^eps");
    expect_error(HEAD "methods:\n  - scaleinv: {alpha: 10, beta: 1}\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:4:5", "beta/alpha must be >= ln(alpha)");
    expect_error(HEAD "methods:\n  - logn: {mode: qwen}\ntasks:\n  - gaussian: {train_len: 1}\nlengths: [10]\n",
                 "bad.yaml:4:5", "mode qwen needs a training length >= 2");
}

/* ---- hostile YAML: non-scalar keys, alias bombs, extra documents ---- */

#define BODY "methods: [none]\ntasks: [ppl]\nlengths: [64]\n"

Test(config, mapping_keys_must_be_scalars)
{
    const char *what = "a mapping key must be a plain word or a string, got a list";
    /* columns counted by hand: the '[' of each key */
    expect_error(HEAD BODY "models: {[m]: {arch: {}}}\n", "bad.yaml:6:10", what);
    expect_error(HEAD BODY "models: {m: {[a]: 1}}\n", "bad.yaml:6:14", what);
    expect_error(HEAD BODY "models: {m: {mixture: [{[passkey]: {weight: 0.5}}]}}\n", "bad.yaml:6:25", what);
    expect_error(HEAD BODY "models: {m: {arch: {[layers]: 2}}}\n", "bad.yaml:6:21", what);
    expect_error(HEAD "[a]: 1\n" BODY, "bad.yaml:3:1", what);
    expect_error(HEAD "methods: [{logn: {[mode]: su}}]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:19", what);
    expect_error(HEAD "methods: [{[logn]: {}}]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:12", what);
    expect_error(HEAD BODY "models: {{m: 1}: {arch: {}}}\n", "bad.yaml:6:10",
                 "a mapping key must be a plain word or a string, got a mapping");
}

/* A "billion laughs" of `levels` lines, each a list of ten aliases of the line before. */
static char *alias_bomb(int levels)
{
    static char text[4096];
    int k = snprintf(text, sizeof text, "a: &a [x,x,x,x,x,x,x,x,x,x]\n");
    for (int i = 1; i < levels; i++) {
        char p = (char)('a' + i - 1), c = (char)('a' + i);
        k += snprintf(text + k, sizeof text - (size_t)k, "%c: &%c [", c, c);
        for (int j = 0; j < 10; j++)
            k += snprintf(text + k, sizeof text - (size_t)k, "%s*%c", j ? "," : "", p);
        k += snprintf(text + k, sizeof text - (size_t)k, "]\n");
    }
    return text;
}

Test(config, alias_bomb_is_refused)
{
    /* 6 levels: 10^5 scalars under e alone, plus the 1.2e4 of a..d: past the documented
    ** budget of 1e5 extra nodes while expanding e's aliases of d (line 4) */
    expect_error(alias_bomb(6), "bad.yaml:4:4", "aliases of the anchor 'd' expand the document past 100000 nodes");
    /* 4 levels (about 1.1e4 nodes) stay within it: the load succeeds, the sweep then
    ** fails on its first unknown key 'a' */
    expect_error(alias_bomb(4), "bad.yaml:1:1", "unknown key 'a' in the sweep file");
}

Test(config, aliases_still_work)
{
    struct lx_grid g;
    struct lx_error err = {{0}};
    const char *text = HEAD "methods: [none]\ntasks: [&t gaussian]\nlengths: &l [10, 20]\nseeds: *l\n";
    cr_assert_eq(lx_grid_load_text(&g, text, "ok.yaml", &err), LX_OK, "%s", err.msg);
    cr_expect_eq(g.n_seeds, 2);
    cr_expect_eq(g.seeds[1], 20);
    lx_grid_release(&g);
}

Test(config, one_document_per_file)
{
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [10]\n---\nmethods: [bogus]\n", "bad.yaml:6:1",
                 "a second YAML document; a sweep file holds one");
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [10]\n---\n- [x\n", "bad.yaml:8:1", "YAML syntax error");
    /* an explicit start marker and an end marker alone are one document */
    struct lx_grid g;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_grid_load_text(&g, "---\n" HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [10]\n...\n",
                                   "ok.yaml", &err), LX_OK, "%s", err.msg);
    lx_grid_release(&g);
}

/* ---- grids too big to plan, numbers too big to convert ---- */

/* A sweep file with the given axis sizes: distinct tasks, stacks, lengths, seeds. */
static char *big_grid(int tasks, int stacks, int lengths, int seeds)
{
    size_t cap = 64 + (size_t)tasks * 40 + (size_t)stacks * 30 + ((size_t)lengths + seeds) * 12;
    char *t = malloc(cap);
    size_t k = (size_t)snprintf(t, cap, "name: big\nmethods:");
    for (int i = 0; i < stacks; i++)
        k += (size_t)snprintf(t + k, cap - k, "%s{window: {size: %d}}", i ? ", " : " [", i + 1);
    k += (size_t)snprintf(t + k, cap - k, "]\ntasks:");
    for (int i = 0; i < tasks; i++)
        k += (size_t)snprintf(t + k, cap - k, "%s{gaussian: {samples: %d}}", i ? ", " : " [", 100 + i);
    k += (size_t)snprintf(t + k, cap - k, "]\nlengths:");
    for (int i = 0; i < lengths; i++)
        k += (size_t)snprintf(t + k, cap - k, "%s%d", i ? ", " : " [", 10 + i);
    k += (size_t)snprintf(t + k, cap - k, "]\nseeds:");
    for (int i = 0; i < seeds; i++)
        k += (size_t)snprintf(t + k, cap - k, "%s%d", i ? ", " : " [", i);
    snprintf(t + k, cap - k, "]\n");
    return t;
}

Test(config, grid_past_int_cells_is_refused, .timeout = 60)
{
    /* 4 x 256 x 1024 x 4096 = 2^32 cells: int overflowed to 0 and the plan wrote past it */
    char *text = big_grid(4, 256, 1024, 4096);
    expect_error(text, "bad.yaml", "the sweep has 4294967296 cells (4 tasks x 256 method stacks x 1 models x "
                 "1024 lengths x 4096 seeds); at most 1000000 are allowed\n  hint: split the sweep");
    free(text);
    /* one past the documented maximum: 1000 x 1001 */
    text = big_grid(1, 1, 1000, 1001);
    expect_error(text, "bad.yaml", "the sweep has 1001000 cells");
    free(text);
}

Test(config, huge_and_long_integer_lists)
{
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [1e300]\n", "bad.yaml:5:11",
                 "'lengths' value 1e300 is out of bounds [1, 1e12]");
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [-1e300]\n", "bad.yaml:5:11",
                 "out of bounds");
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [10]\nseeds: [1e19]\n", "bad.yaml:6:9",
                 "'seeds' value 1e19 is out of bounds [0, 1e12]\n  hint: a seed is a whole number from 0");
    expect_error("name: t\nseed: 9.3e18\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:2:7",
                 "'seed' value 9.3e18 is out of bounds");
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [.nan]\n", "bad.yaml:5:11",
                 "'lengths' entries must be integers");
    /* 10001 lengths: one past the documented cap */
    char *text = big_grid(1, 1, 10001, 1);
    expect_error(text, "bad.yaml:4:10", "'lengths' has 10001 entries; at most 10000 are allowed");
    free(text);
    /* the repeat is found wherever it is, and reported at its second occurrence */
    expect_error(HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [30, 10, 20, 10, 30]\n", "bad.yaml:5:23",
                 "'lengths' lists 10 twice");
}

Test(config, ten_thousand_lengths_parse_quickly, .timeout = 20)
{
    char *text = big_grid(1, 1, 10000, 1);
    struct lx_grid g;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_grid_load_text(&g, text, "ok.yaml", &err), LX_OK, "%s", err.msg);
    cr_expect_eq(g.n_lengths, 10000);
    cr_expect_eq(g.lengths[9999], 10 + 9999);
    lx_grid_release(&g);
    free(text);
}

Test(config, retrieval_lengths_past_the_maximum)
{
    /* 2^20 + 1 tokens: one past LX_MAX_RETRIEVAL_LENGTH; 1e12 was accepted at plan time */
    static const char *const tasks[] = {"passkey", "line", "topic", "mdqa", "needle"};
    for (int i = 0; i < 5; i++) {
        char text[512], what[160];
        for (int k = 0; k < 2; k++) {
            snprintf(text, sizeof text, HEAD "methods: [rope]\ntasks: [%s]\nlengths: [%s]\n"
                     "models: {m: {arch: {}, train: {length: 64}}}\n", tasks[i], k ? "1000000000000" : "1048577");
            snprintf(what, sizeof what, "%s: length %s is more than the 1048576 tokens a retrieval instance may have",
                     tasks[i], k ? "1000000000000" : "1048577");
            expect_error(text, "bad.yaml:5:11", what);
        }
    }
}

Test(config, too_many_values_refused_before_loading)
{
    /* the root mapping, name, t, lengths, [ are values 1-5; the scalar j (0-based) is value
    ** 6 + j, at column 11 + 2j: value 200001 (one past the documented cap) is j = 199995,
    ** column 400001 */
    size_t n = 250000, cap = 32 + 2 * n;
    char *text = malloc(cap);
    size_t k = (size_t)snprintf(text, cap, "name: t\nlengths: [");
    for (size_t j = 0; j < n; j++)
        k += (size_t)snprintf(text + k, cap - k, "1,");
    snprintf(text + k - 1, cap - k + 1, "]\n");
    expect_error(text, "bad.yaml:2:400001", "the file holds more than 200000 values");
    free(text);
}

/* Automatic values: `auto` and 0 are one spelling of the rule, which the run key
** keeps; each cell stores and shows the value resolved for its length. */
Test(config, auto_values_resolved_per_cell_keys_keep_the_rule)
{
    const char *model = "models: {m: {arch: {layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64},"
                        " train: {length: 64}}}\ntasks: [{ppl: {windows: 1}}]\nlengths: [64, 256]\n";
    char a[512], b[512];
    snprintf(a, sizeof a, HEAD "methods: [[rope, {yarn: {scale: auto}}, {window: {size: auto}}]]\n%s", model);
    snprintf(b, sizeof b, HEAD "methods: [[rope, {yarn: {scale: 0}}, window]]\n%s", model);
    struct lx_grid ga, gb;
    struct lx_plan pa, pb;
    struct lx_error err;
    cr_assert_eq(lx_grid_load_text(&ga, a, "a.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_grid_load_text(&gb, b, "b.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_plan_build(&pa, &ga, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_plan_build(&pb, &gb, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(pa.n_cells, 2);
    cr_expect_str_eq(ga.stacks[0].canon, "rope+yarn(scale=0)+window(size=0)");
    for (int i = 0; i < 2; i++) {
        cr_expect_str_eq(pa.cells[i].key, pb.cells[i].key);
        cr_expect(strstr(pa.cells[i].key_json, "{\"name\":\"yarn\",\"params\":{\"scale\":0,") != NULL,
                  "%s", pa.cells[i].key_json);
    }
    cr_expect_str_neq(pa.cells[0].key, pa.cells[1].key);
    /* 64 / 64 = 1 and 256 / 64 = 4; the window is the training length */
    cr_expect_str_eq(pa.cells[0].method, "rope+yarn(scale=1)+window(size=64)");
    cr_expect_str_eq(pa.cells[1].method, "rope+yarn(scale=4)+window(size=64)");
    cr_expect(strstr(pa.cells[1].method_json, "{\"name\":\"yarn\",\"params\":{\"scale\":4,\"beta_fast\":32,"
                     "\"beta_slow\":1,\"original\":64,") != NULL, "%s", pa.cells[1].method_json);
    lx_plan_release(&pa);
    lx_plan_release(&pb);
    lx_grid_release(&ga);
    lx_grid_release(&gb);
    /* `auto` only where a rule exists */
    expect_error(HEAD "methods: [{rope: {base: auto}}]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:25",
                 "'base' must be a number");
    /* trained in, no evaluation length exists to resolve a scale from */
    snprintf(a, sizeof a, HEAD "methods: [[rope, {pi: {scale: auto, train: true}}]]\n%s", model);
    expect_error(a, "bad.yaml:3:18", "explicit scale");
}

/* ---- numerics: the arithmetic, a top-level setting ---- */

Test(config, numerics_parses_and_defaults_to_fast)
{
    struct lx_grid g;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_grid_load_text(&g, HEAD "methods: [none]\ntasks: [gaussian]\nlengths: [10]\n", "f.yaml", &err),
                 LX_OK, "%s", err.msg);
    cr_expect_eq(g.numerics, LX_NUMERICS_FAST, "absent: fast");
    lx_grid_release(&g);
    static const char *const spelled[] = {"fast", "portable"};
    for (int i = 0; i < 2; i++) {
        char text[256];
        snprintf(text, sizeof text, HEAD "numerics: %s\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n",
                 spelled[i]);
        cr_assert_eq(lx_grid_load_text(&g, text, "n.yaml", &err), LX_OK, "%s", err.msg);
        cr_expect_eq(g.numerics, i ? LX_NUMERICS_PORTABLE : LX_NUMERICS_FAST, "%s", spelled[i]);
        lx_grid_release(&g);
    }
}

Test(config, numerics_bad_values)
{
    expect_error(HEAD "numerics: slow\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:11",
                 "'numerics' must be fast, portable or bf16, got 'slow'\n  hint: ");
    expect_error(HEAD "numerics: [portable]\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:11",
                 "'numerics' must be fast, portable or bf16, got a list");
    expect_error(HEAD "numerics: Portable\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:11",
                 "got 'Portable'");
    expect_error(HEAD "numeric: portable\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:1",
                 "did you mean 'numerics'?");
}

/* Fast keys hash what every lenx before the mode hashed (no "numerics"
** field); a portable key is the SHA-256 of that JSON with
** ,"numerics":"portable" before its closing brace, recomputed here. */
Test(config, numerics_enters_the_run_key_only_when_portable)
{
    const char *body = "methods: [none, logn]\ntasks: [gaussian]\nlengths: [10, 100]\nseeds: [1, 2]\n";
    char fast[256], portable[256];
    snprintf(fast, sizeof fast, HEAD "%s", body);
    snprintf(portable, sizeof portable, HEAD "numerics: portable\n%s", body);
    struct lx_grid gf, gp;
    struct lx_plan pf, pp;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_grid_load_text(&gf, fast, "f.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_grid_load_text(&gp, portable, "p.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_plan_build(&pf, &gf, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_plan_build(&pp, &gp, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(pf.n_cells, 8);
    cr_assert_eq(pp.n_cells, pf.n_cells);
    for (int i = 0; i < pf.n_cells; i++) {
        const char *kj = pf.cells[i].key_json;
        cr_expect_null(strstr(kj, "numerics"), "a fast key names no numerics: %s", kj);
        char hex[65], want[1024];
        lx_sha256_hex(kj, hex);
        cr_expect(strncmp(pf.cells[i].key, hex, 16) == 0, "the fast key hashes its JSON");
        snprintf(want, sizeof want, "%.*s,\"numerics\":\"portable\"}", (int)strlen(kj) - 1, kj);
        cr_expect_str_eq(pp.cells[i].key_json, want);
        lx_sha256_hex(want, hex);
        cr_expect(strncmp(pp.cells[i].key, hex, 16) == 0, "cell %d: portable key %s, sha256 %.16s", i,
                  pp.cells[i].key, hex);
        cr_expect_str_neq(pp.cells[i].key, pf.cells[i].key);
        cr_expect_eq(pp.cells[i].data_key, pf.cells[i].data_key, "the same instances either way");
    }
    lx_plan_release(&pf);
    lx_plan_release(&pp);
    lx_grid_release(&gf);
    lx_grid_release(&gp);
}

/* Whether the run key of a one-cell grid with setting line holds frag. */
static int key_holds(const char *line, const char *frag, struct lx_grid *g)
{
    struct lx_plan p = {0};
    struct lx_error err = {{0}};
    char text[256];
    snprintf(text, sizeof text, HEAD "%s\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n", line);
    cr_assert_eq(lx_grid_load_text(g, text, "k.yaml", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_plan_build(&p, g, &err), LX_OK, "%s", err.msg);
    int holds = strstr(p.cells[0].key_json, frag) != NULL;
    lx_plan_release(&p);
    return holds;
}

/* kv_cache: fp32 (the default, no key field), bf16 or f16, and activations:
** fp32 (the default) or llamacpp: each but the default enters the run keys as
** frag. */
static void setting_case(const char *line, int acts, int want, const char *frag)
{
    struct lx_grid g;
    cr_assert_eq(key_holds(line, frag, &g), want != 0, "%s: %s", line, frag);
    cr_assert_eq(acts ? g.acts_llamacpp : g.kv, want);
    lx_grid_release(&g);
}

Test(config, kv_cache_setting)
{
    expect_error(HEAD "kv_cache: half\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:11",
                 "'kv_cache' must be fp32, bf16 or f16");
    setting_case("kv_cache: fp32", 0, 0, "\"kv_cache\":");
    setting_case("kv_cache: bf16", 0, LX_DT_BF16, "\"kv_cache\":\"bf16\"");
    setting_case("kv_cache: f16", 0, LX_DT_F16, "\"kv_cache\":\"f16\"");
}

Test(config, activations_setting)
{
    expect_error(HEAD "activations: int8\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n", "bad.yaml:3:14",
                 "'activations' must be fp32 or llamacpp");
    expect_error(HEAD "numerics: bf16\nactivations: llamacpp\nmethods: [none]\ntasks: [gaussian]\nlengths: [10]\n",
                 "bad.yaml:4:14", "does not go with numerics: bf16");
    setting_case("activations: fp32", 1, 0, "activations");
    setting_case("activations: llamacpp", 1, 1, "\"activations\":\"llamacpp\"");
    setting_case("numerics: portable\nactivations: llamacpp", 1, 1, "\"activations\":\"llamacpp\"");
}

/* With both a half cache and activations: llamacpp the attention itself
** rounds (q, k, v and the probabilities, docs/config.md#numerics): its own
** key field, so a row stored before it did is not taken for one that does;
** either setting alone leaves the attention in fp32 and adds no such field. */
Test(config, half_attention_enters_the_key)
{
    static const struct {
        const char *line;
        int holds;
    } cases[] = {{"kv_cache: bf16\nactivations: llamacpp", 1}, {"kv_cache: f16\nactivations: llamacpp", 1},
                 {"kv_cache: f16", 0}, {"kv_cache: bf16", 0}, {"activations: llamacpp", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct lx_grid g;
        char frag[32];
        snprintf(frag, sizeof frag, "\"attention\":\"%s\"", strstr(cases[i].line, "bf16") ? "bf16" : "f16");
        cr_expect_eq(key_holds(cases[i].line, "\"attention\":", &g), cases[i].holds, "%s", cases[i].line);
        lx_grid_release(&g);
        if (cases[i].holds) {
            cr_expect(key_holds(cases[i].line, frag, &g), "%s: %s", cases[i].line, frag);
            lx_grid_release(&g);
        }
    }
}

/* A preset's data that cannot be read, or that a task does not take, is the task's setting, whatever the
** length: the error points at the setting (columns counted by hand: the value of data, or of protocol when
** the preset needs data and none is given), not at the first entry of lengths. */
Test(config, a_presets_data_errors_point_at_the_setting)
{
#define TASK_AT(task) HEAD "methods: [rope]\nmodels: {m: {arch: {layers: 1}}}\ntasks:\n  - " task "\nlengths: [256]\n"
    expect_error(TASK_AT("{passkey: {protocol: landmark, data: x.jsonl}}"), "bad.yaml:6:42",
                 "passkey: protocol landmark makes its test cases from its peer's template; it reads no data");
    expect_error(TASK_AT("{passkey: {data: x.jsonl}}"), "bad.yaml:6:22",
                 "passkey: data 'x.jsonl' is read only by a protocol preset; protocol is lenx");
    expect_error(TASK_AT("{needle: {protocol: kamradt}}"), "bad.yaml:6:25",
                 "needle: protocol kamradt reads its haystack from a file or directory: name it with data: PATH");
    expect_error(TASK_AT("{needle: {protocol: kamradt, data: nowhere}}"), "bad.yaml:6:40",
                 "haystack directory 'nowhere'");
#undef TASK_AT
}
