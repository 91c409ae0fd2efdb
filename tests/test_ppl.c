/*
** tests/test_ppl.c - the ppl task's `data:` file and its peer protocols
** (tasks/ppl.c, docs/tasks.md#ppl-protocols), end to end through the lenx
** binary on stories260K (../shared/models/stories260K, skipped when absent):
**
**   ppl_data  a text file as the corpus: refused with its YAML position when
**             missing, empty or not UTF-8; its SHA-256 (as sha256sum prints
**             it) in the run key, so an edited file is a new cell; the key of
**             a cell without `data:` or `protocol:` as it was written before
**             either existed
**   ppl_ref   each protocol against tests/ref/ppl_ref.csv: the windows laid
**             out from the peer's own code and run in float64 by the PyTorch
**             model (tests/ref/ppl_ref.py); nll within 1e-4, the scored token
**             and window counts exactly
**
** $LENX_BIN and $LENX_ROOT are set by `make test`.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/shell.h"

#define STORIES "$R/../shared/models/stories260K/stories260K.bin"
#define DOC0 "$R/configs/heldout/stories260K/doc_0.txt"

static void setup(void)
{
    shell_setup("ppl");
    char path[4096];
    snprintf(path, sizeof path, "%s/../shared/models/stories260K/stories260K.bin", getenv("LENX_ROOT"));
    if (access(path, R_OK) != 0)
        cr_skip_test("stories260K is not beside the checkout");
}

/* s.yaml: stories260K with its own rope over the ppl task `params` (YAML
** flow mapping body) at one length; $R in params becomes the checkout. */
static void sweep_on(const char *model, const char *layout, const char *params, long length)
{
    char yaml[2048], out[4096];
    snprintf(yaml, sizeof yaml, "name: s\nmodels: {s: {checkpoint: \"%s\"}}\nmethods: [{rope: {layout: %s}}]\n"
             "tasks:\n  - {ppl: {%s}}\nlengths: [%ld]\n", model, layout, params, length);
    write_file("s.yaml", yaml);
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|\\$R|$R|g\" s.yaml"), 0, "%s", out);
}

static void sweep(const char *params, long length)
{
    sweep_on(STORIES, "interleaved", params, length);
}

static double metric(const char *db, const char *name)
{
    char sql[256], out[256];
    snprintf(sql, sizeof sql, "select value from metrics where name = '%s' and run_id = (select max(id) from runs)",
             name);
    sql_text(out, sizeof out, db, sql);
    return out[0] ? strtod(out, NULL) : NAN;
}

/* `lenx run` refuses the sweep with exit code `code`, naming `what`, and
** writes no database. */
static void expect_refused(const char *params, int code, const char *what)
{
    char out[4096];
    sweep(params, 128);
    cr_expect_eq(sh(out, sizeof out, "$L run s.yaml --db x.db"), code, "%s\n%s", params, out);
    cr_expect(strstr(out, what) != NULL, "expected '%s' in:\n%s", what, out);
    cr_expect(!exists("x.db"), "a refused sweep must not create the database");
}

Test(ppl_data, bad_files_are_refused_at_the_task, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[256];
    cr_assert_eq(sh(out, sizeof out, "printf 'ok\\nab\\377c\\n' > bad.txt && : > empty.txt && mkdir d"), 0, "%s", out);
    expect_refused("protocol: llamacpp, data: nope.txt", 3, "s.yaml:5:5: task 'ppl': data file: nope.txt: cannot open");
    expect_refused("data: empty.txt", 2, "s.yaml:5:5: task 'ppl': data file empty.txt is empty");
    expect_refused("data: bad.txt", 2, "data file bad.txt:2:3: not UTF-8 (byte 0xff at offset 5");
    expect_refused("data: d", 3, "data file: cannot read d: it is a directory");
    expect_refused("data: [a, b]", 2, "s.yaml:5:18: task 'ppl': 'data' must be a file path, got a list");
    expect_refused("protocol: hf_stride, stride: 129", 2, "ppl: stride 129 is longer than the length 128");
    expect_refused("protocol: llama", 2, "'protocol' must be one of lenx|llamacpp|hf_stride");
}

/* The keys: a default cell's task as before `data:` and `protocol:`; a file's
** bytes hashed by sha256sum; an edited file a new cell beside the old one. */
Test(ppl_data, file_hash_is_in_the_key, .init = setup, .fini = teardown, .timeout = 120)
{
    char out[4096], want[128], key[4096];
    sweep("windows: 2", 128);
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db k.db --quiet --no-table"), 0, "%s", out);
    sql_text(key, sizeof key, "k.db", "select key_json from runs");
    cr_expect(strstr(key, "{\"task\":{\"name\":\"ppl\",\"params\":{\"corpus\":\"austen\",\"windows\":2}},") == key,
              "a cell without data: or protocol: keeps its key: %s", key);

    cr_assert_eq(sh(out, sizeof out, "head -c 9000 $R/configs/heldout/stories260K/doc_1.txt > t.txt"), 0, "%s", out);
    sweep("protocol: llamacpp, data: t.txt", 128);
    for (int edit = 0; edit < 2; edit++) {
        cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db f.db --quiet --no-table"), 0, "%s", out);
        cr_assert_eq(sh(want, sizeof want, "sha256sum t.txt | cut -c1-64"), 0);
        want[strcspn(want, "\n")] = '\0';
        sql_text(key, sizeof key, "f.db", "select key_json from runs order by id desc limit 1");
        cr_expect(strstr(key, want) != NULL, "edit %d: the key holds the file's sha256 %s: %s", edit, want, key);
        cr_expect(strstr(key, "\"protocol\":\"llamacpp\",\"chunks\":0,") != NULL, "%s", key);
        cr_expect_eq(sql_long("f.db", "select count(*) from runs"), edit + 1);
        cr_assert_eq(sh(out, sizeof out, "echo 'One more line.' >> t.txt"), 0);
    }
    double first = strtod((sql_text(out, sizeof out, "f.db", "select value from metrics where name = 'n_tokens' and "
                                    "run_id = (select min(id) from runs)"), out), NULL);
    cr_expect(metric("f.db", "n_tokens") >= first, "the old cell's value stays beside the new one");
}

/* llama.cpp's --chunks N: the first N chunks, L - L/2 - 1 tokens scored in each. */
Test(ppl_data, llamacpp_chunks_score_half_windows, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    sweep("protocol: llamacpp, chunks: 3, data: " DOC0, 100);
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db c.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(metric("c.db", "n_windows"), 3.0);
    cr_expect_eq(metric("c.db", "n_tokens"), 3.0 * (100 - 50 - 1));
    /* 300 bytes are fewer than 2 × 128 tokens: llama.cpp refuses them, and so does the cell */
    cr_assert_eq(sh(out, sizeof out, "head -c 300 $R/configs/heldout/stories260K/doc_0.txt > short.txt"), 0);
    sweep("protocol: llamacpp, data: short.txt", 128);
    cr_expect_eq(sh(out, sizeof out, "$L run s.yaml --db d.db --no-table"), 1, "%s", out);
    cr_expect(strstr(out, "ppl: protocol llamacpp scores no token of the data file 'short.txt' at length 128") &&
              strstr(out, "it needs 256"), "%s", out);
}

/* llama.cpp scores the tokens after the first half of each chunk, n_ctx - n_ctx/2 - 1 of them: none at
** n_ctx = 2, where its mean is 0/0. The cell is refused at its place in the sweep file, not stored as a
** NaN; at 3 one token a chunk is scored. */
Test(ppl_data, llamacpp_refuses_a_length_that_scores_nothing, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    sweep("protocol: llamacpp, data: " DOC0, 2);
    cr_expect_eq(sh(out, sizeof out, "$L run s.yaml --db x.db"), 2, "%s", out);
    cr_expect(strstr(out, "s.yaml:6:") && strstr(out, "ppl: protocol llamacpp scores no token at length 2") &&
              strstr(out, "hint: use a length of at least 3"), "%s", out);
    cr_expect(!exists("x.db"), "a refused sweep must not create the database");
    sweep("protocol: llamacpp, chunks: 2, data: " DOC0, 3);
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db t.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(metric("t.db", "n_tokens"), 2.0 * (3 - 1 - 1));
    cr_expect(isfinite(metric("t.db", "nll")));
}

/* ---- against the PyTorch reference --------------------------------------------- */

Test(ppl_ref, protocols_match_the_reference, .init = setup, .fini = teardown, .timeout = 600)
{
    char path[4096], line[1024], out[4096];
    snprintf(path, sizeof path, "%s/tests/ref/ppl_ref.csv", getenv("LENX_ROOT"));
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    cr_assert_not_null(fgets(line, sizeof line, f));   /* header */
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        char protocol[32], source[256], params[512], se_text[64];
        long length, stride, n_tokens, n_windows;
        double nll;
        cr_assert_eq(sscanf(line, "%31[^,],%ld,%ld,%255[^,],%lf,%63[^,],%ld,%ld", protocol, &length, &stride, source,
                            &nll, se_text, &n_tokens, &n_windows), 8, "%s", line);
        /* llamacpp-nobos: a vocabulary whose add_bos is false, so llama.cpp puts no BOS anywhere:
        ** stories260K exported as a Hugging Face directory (fp32, half layout) with the tokenizer.json
        ** of tests/ref/stories260K-hf, the BOS taken out of its template */
        int nobos = strcmp(protocol, "llamacpp-nobos") == 0;
        if (nobos)
            cr_assert_eq(sh(out, sizeof out, "rm -rf nobos && $L export --hf nobos --model " STORIES " && rm -f "
                            "nobos/tokenizer.bin && cp $R/tests/ref/stories260K-hf/tokenizer*.json nobos/ && sed -i "
                            "'/\"single\": \\[/{n;N;N;N;N;N;d}' nobos/tokenizer.json && grep -c SpecialToken "
                            "nobos/tokenizer.json"), 0, "%s", out);
        int n = snprintf(params, sizeof params, "protocol: %s", nobos ? "llamacpp" : protocol);
        if (stride)
            n += snprintf(params + n, sizeof params - (size_t)n, ", stride: %ld", stride);
        if (strcmp(source, "stories") == 0)
            snprintf(params + n, sizeof params - (size_t)n, ", corpus: stories");
        else
            snprintf(params + n, sizeof params - (size_t)n, ", data: $R/%s", source);
        if (nobos)
            sweep_on("nobos", "half", params, length);
        else
            sweep(params, length);
        cr_assert_eq(sh(out, sizeof out, "rm -f r.db && $L run s.yaml --db r.db --quiet --no-table"), 0, "%s", out);
        double got = metric("r.db", "nll"), se = strtod(se_text, NULL);
        cr_expect(fabs(got - nll) < 1e-4, "%s at %ld: nll %.9f, the reference %.9f", protocol, length, got, nll);
        cr_expect_eq(metric("r.db", "n_tokens"), (double)n_tokens, "%s at %ld: tokens scored", protocol, length);
        cr_expect_eq(metric("r.db", "n_windows"), (double)n_windows, "%s at %ld: windows", protocol, length);
        if (!isnan(se))
            cr_expect(fabs(metric("r.db", "nll_se") - se) < 1e-4, "%s at %ld: nll_se %.9f, the reference %.9f",
                      protocol, length, metric("r.db", "nll_se"), se);
        rows++;
    }
    fclose(f);
    cr_expect_geq(rows, 7, "every protocol case of tests/ref/ppl_ref.py");
}
