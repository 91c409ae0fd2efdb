/*
** tests/test_report.c - what people see of a store: `lenx report` (panels
** counted against the store, no script, no network), effective length,
** `lenx table --series`, `lenx list models` and `lenx show task --length`
** (docs/results.md#the-html-report). The browser half, a screenshot in
** headless Chromium, is tests/browser_report.sh (`make test-report`).
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "results/plot.h"
#include "results/views.h"
#include "tests/shell.h"

static void setup(void)
{
    shell_setup("report");
}

/* ---- effective length: the rules of docs/results.md#effective-length ---- */

Test(report, effective_length_stays_above_the_threshold_from_the_training_length)
{
    const long len[] = {64, 128, 256, 512};
    int all;
    /* acc: 0.8/0.9 = 0.89 passes, 0.7/0.9 = 0.78 fails; 512 passes again but the score did not stay */
    const double acc[] = {0.9, 0.8, 0.7, 0.9};
    cr_expect_eq(lx_effective_length(len, acc, 4, 64, +1, 0.85, &all, NULL), 128);
    cr_expect_eq(all, 0);
    cr_expect_eq(lx_effective_length(len, acc, 4, 64, +1, 0.75, &all, NULL), 512);
    cr_expect_eq(all, 1, "every length passes: the effective length may be longer");
    /* ppl, lower is better: 10/11 = 0.91 passes, 10/12 = 0.83 fails */
    const double ppl[] = {10, 11, 12, 30};
    cr_expect_eq(lx_effective_length(len, ppl, 4, 64, -1, 0.85, &all, NULL), 128);
    /* the reference is the training length's score, not the shortest length's */
    const double acc2[] = {0.2, 1.0, 0.9, 0.8};
    cr_expect_eq(lx_effective_length(len, acc2, 4, 128, +1, 0.85, &all, NULL), 256);
    /* a training length that is not stored: the shortest length is the reference */
    cr_expect_eq(lx_effective_length(len, acc, 4, 100, +1, 0.85, &all, NULL), 128);
    /* undefined: no direction, or no positive reference score */
    cr_expect_eq(lx_effective_length(len, acc, 4, 64, 0, 0.85, &all, NULL), 0);
    const double zero[] = {0, 0, 0, 0};
    cr_expect_eq(lx_effective_length(len, zero, 4, 64, +1, 0.85, &all, NULL), 0);
    const double gap[] = {0.9, NAN, 0.9, 0.9};
    cr_expect_eq(lx_effective_length(len, gap, 4, 64, +1, 0.85, &all, NULL), 64, "a missing length ends it");
}

Test(report, metric_directions)
{
    cr_expect_eq(lx_metric_direction("ppl"), -1);
    cr_expect_eq(lx_metric_direction("nll"), -1);
    cr_expect_eq(lx_metric_direction("unigram_ppl"), -1);
    cr_expect_eq(lx_metric_direction("acc"), 1);
    cr_expect_eq(lx_metric_direction("acc_se"), 0);
    cr_expect_eq(lx_metric_direction("answer_logprob"), 0, "negative scores have no ratio");
    cr_expect_eq(lx_metric_direction("entropy"), 0);
}

/* ---- the report of a sweep with every kind of panel ---- */

/* The figures of the page: for each, its kind, task prefix, metric, its
** data-series, how many gnuplot plot groups and value labels it holds. */
struct fig {
    char kind[16], task[64], metric[64];
    int series, groups, labels;
};

static int count_in(const char *s, const char *end, const char *pat)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, pat)) && p < end; p++)
        n++;
    return n;
}

/* Value labels of a heat map: "d.dd" as the text of a tspan. */
static int count_labels(const char *s, const char *end)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, "</tspan>")) && p < end; p++)
        if (p - s >= 5 && p[-5] == '>' && isdigit((unsigned char)p[-4]) && p[-3] == '.' &&
            isdigit((unsigned char)p[-2]) && isdigit((unsigned char)p[-1]))
            n++;
    return n;
}

static int figures(const char *html, struct fig *f, int max)
{
    int n = 0;
    for (const char *p = html; (p = strstr(p, "<figure ")) && n < max; n++) {
        const char *end = strstr(p, "</figure>");
        cr_assert_not_null(end);
        cr_assert_eq(sscanf(p, "<figure class=\"panel\" data-kind=\"%15[a-z]\" data-task=\"%63[a-z]", f[n].kind,
                            f[n].task), 2, "%.200s", p);
        const char *m = strstr(p, "data-metric=\""), *s = strstr(p, "data-series=\"");
        cr_assert(m && s && m < end && s < end);
        sscanf(m + 13, "%63[^\"]", f[n].metric);
        f[n].series = atoi(s + 13);
        f[n].groups = count_in(p, end, "-gnuplot_plot_");
        f[n].labels = count_labels(p, end);
        p = end;
    }
    return n;
}

static char *read_all(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unsigned char *b = NULL;
    long n;
    cr_assert_eq(lx_read_file(path, &b, &n, 0, NULL), LX_OK, "%s", path);
    return (char *)b;
}

/* Cells a heat map's SVG fills: gnuplot polygons of at least 20 x 20 pixels
** (the colour box beside it is drawn as thin strips). */
static int filled_cells(const char *svg)
{
    int n = 0;
    for (const char *p = svg; (p = strstr(p, "<polygon fill = 'rgb(")); p++) {
        const char *pts = strstr(p, "points = '");
        double x[4], y[4];
        if (pts && sscanf(pts + 10, "%lf,%lf %lf,%lf %lf,%lf %lf,%lf", &x[0], &y[0], &x[1], &y[1], &x[2], &y[2],
                          &x[3], &y[3]) == 8 && fabs(x[1] - x[0]) >= 20 && fabs(y[2] - y[1]) >= 20)
            n++;
    }
    return n;
}

/* A heat map fills every stored cell whatever its shape: a task with one depth
** (topic) gives one row, a sweep at one length one column. Reproduces a
** report whose one-row heat maps were blank (gnuplot's `with image` needs a
** grid of at least 2 x 2 and drew nothing, with only a warning). */
Test(report, heat_maps_of_one_row_or_one_column_fill_every_cell)
{
    static const char *const xt[] = {"192", "768", "1536", "3072"}, *const yt[] = {"0", "0.5", "1"};
    static const double z[] = {1, 0, 0.5, 0};
    struct lx_plot p[3] = {
        {.kind = LX_PLOT_HEAT, .title = "row", .nx = 4, .ny = 1, .xtics = xt, .ytics = yt, .z = z, .zmax = 1},
        {.kind = LX_PLOT_HEAT, .title = "column", .nx = 1, .ny = 3, .xtics = xt, .ytics = yt, .z = z, .zmax = 1},
        {.kind = LX_PLOT_HEAT, .title = "grid", .nx = 2, .ny = 2, .xtics = xt, .ytics = yt, .z = z, .zmax = 1},
    };
    char *svg[3] = {0};
    struct lx_error err;
    cr_assert_eq(lx_plot_svg(p, 3, svg, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(filled_cells(svg[0]), 4, "one row of 4: %d cells filled", filled_cells(svg[0]));
    cr_expect_eq(filled_cells(svg[1]), 3, "one column of 3: %d cells filled", filled_cells(svg[1]));
    cr_expect_eq(filled_cells(svg[2]), 4, "2 x 2: %d cells filled", filled_cells(svg[2]));
    for (int i = 0; i < 3; i++)
        free(svg[i]);
}

Test(report, panels_match_the_store, .init = setup, .fini = teardown, .timeout = 600)
{
    static char out[1 << 16];
    cr_assert_eq(sh(out, sizeof out, "$L run \"$R/tests/report_sweep.yaml\" --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L report --db r.db -o page.html"), 0, "%s", out);
    long methods = sql_long("r.db", "select count(distinct method) from runs where status = 'ok'");
    long lengths = sql_long("r.db", "select count(distinct length) from runs where status = 'ok'");
    long depths = sql_long("r.db", "select count(distinct x) from series where series = 'acc_by_depth'");
    cr_assert_eq(methods, 2);
    char *html = read_all("page.html");
    cr_expect_null(strstr(html, "<script"), "no script");
    cr_expect_null(strstr(html, "src=\"http"), "no network");
    cr_expect_null(strstr(html, "href=\"http"), "no network");
    cr_expect_null(strstr(html, "href='http"), "no network");
    struct fig f[64];
    int n = figures(html, f, 64), n_metric_ppl = 0, n_curve = 0, n_heat = 0, n_mass = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(f[i].kind, "heat")) {
            n_heat++;
            cr_expect_eq(f[i].labels, depths * lengths, "heat map %d: %d cells drawn, the store has %ld x %ld",
                         i, f[i].labels, depths, lengths);
            continue;
        }
        cr_expect_eq(f[i].groups, methods, "figure %d (%s %s %s): %d lines, %ld methods in the store", i, f[i].kind,
                     f[i].task, f[i].metric, f[i].groups, methods);
        cr_expect_eq(f[i].series, f[i].groups);
        n_metric_ppl += !strcmp(f[i].kind, "metric") && !strcmp(f[i].task, "ppl");
        n_curve += !strcmp(f[i].kind, "curve") && !strcmp(f[i].metric, "nll_by_pos");
        n_mass += !strcmp(f[i].kind, "curve") && !strcmp(f[i].metric, "mass_by_distance");
    }
    cr_expect_eq(n_metric_ppl, 2, "ppl's headline metrics: ppl and unigram_ppl");
    cr_expect_eq(n_curve, lengths, "NLL by position: a panel per length");
    cr_expect_eq(n_mass, lengths, "mass by distance: a panel per length");
    cr_expect_eq(n_heat, methods, "a depth x length heat map per method");
    cr_expect_not_null(strstr(html, "eff. length (0.85)"));
    cr_expect_not_null(strstr(html, "report-fixture"));
    char commit[64];
    sql_text(commit, sizeof commit, "r.db", "select git_commit from runs limit 1");
    cr_expect_not_null(strstr(html, commit), "provenance: the commit");
    cr_expect_not_null(strstr(html, "eval_windows: 2"), "provenance: the config text");
    free(html);

    /* the same page again, byte for byte */
    cr_assert_eq(sh(out, sizeof out, "$L report --db r.db -o again.html && cmp page.html again.html"), 0, "%s", out);
    /* --threshold and --metric */
    cr_assert_eq(sh(out, sizeof out, "$L report --db r.db --sweep report-fixture --metric ppl --threshold 0.5 "
                    "--output t.html && grep -c 'data-kind=\"metric\"' t.html"), 0, "%s", out);
    cr_expect_eq(atoi(out), 1, "--metric ppl: one metric panel (%s)", out);

    /* table --series: one tidy record per stored point */
    long points = sql_long("r.db", "select count(*) from series where series = 'nll_by_pos'");
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --series nll_by_pos --format csv | tail -n +2 | wc -l"), 0);
    cr_expect_eq(atol(out), points);
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --series nll_by_pos --format csv | head -1"), 0);
    cr_expect_str_eq(out, "sweep,method,task,length,seed,series,x,y,model_key,key\n");
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --series acc_by_depth --format json | grep -c '\"x\": 0.5'"),
                 0, "%s", out);
    cr_expect_eq(atol(out), methods * lengths);

    /* list models: the one model, its file present */
    char key[64];
    sql_text(key, sizeof key, "r.db", "select key from models");
    cr_assert_eq(sh(out, sizeof out, "$L list models --db r.db"), 0, "%s", out);
    cr_expect_not_null(strstr(out, key), "%s", out);
    cr_expect_not_null(strstr(out, "causal 1L d32 2h"), "%s", out);
    cr_expect_null(strstr(out, "(missing)"), "%s", out);
}

/* --keep-prompts stored each needle prompt: the one `show task` renders for
** the same cell, sample and depth (one generator, the same data key). */
Test(report, kept_prompts_are_the_instances_show_task_renders, .init = setup, .fini = teardown, .timeout = 600)
{
    static char out[1 << 16];
    cr_assert_eq(sh(out, sizeof out, "$L run \"$R/tests/report_sweep.yaml\" --db r.db --quiet --no-table --keep-prompts"),
                 0, "%s", out);
    cr_expect_eq(sql_long("r.db", "select count(*) from outputs where prompt is null"), 0);
    cr_expect_eq(sql_long("r.db", "select count(*) from outputs o join runs r on r.id = o.run_id"
                          " where length(o.prompt) != r.length - 9"), 0, "BOS and the 8-byte answer are not in it");
    /* sample 5 of a cell = sample 1 (samples: 2) at its depth */
    char depth[32];
    sql_text(depth, sizeof depth, "r.db", "select o.depth from outputs o join runs r on r.id = o.run_id"
             " where r.length = 256 and o.sample = 5 limit 1");
    sql_text(out, sizeof out, "r.db", "select writefile('p.bin', o.prompt) from outputs o join runs r on r.id = o.run_id"
             " where r.length = 256 and o.sample = 5 limit 1");
    cr_assert_eq(sh(out, sizeof out, "$L show task needle template=short samples=2 depths=3 --length 256 --sample 1"
                    " --depth %s > s.txt", depth), 0, "%s", out);
    char *kept = read_all("p.bin"), *shown = read_all("s.txt");
    char *p = strstr(shown, "--- prompt\n<bos>"), *a = strstr(shown, "\n--- answer\n");
    cr_assert(p && a);
    p += strlen("--- prompt\n<bos>");
    cr_expect_eq((long)(a - p), 256 - 9);
    cr_expect_eq(memcmp(kept, p, (size_t)(a - p)), 0, "stored: %.80s\nshown: %.80s", kept, p);
    free(kept);
    free(shown);
}

static const char *gauss = "name: g\nseed: 1\nmethods: [none]\ntasks:\n  - gaussian: {samples: 20}\nlengths: [16, 32]\n";

/* The text after the first `after` at the first `eff">` cell: that row's effective length. */
static void eff_after(const char *html, const char *after, char *out, size_t n)
{
    const char *p = strstr(html, after), *e = p ? strstr(p, "class=\"eff\">") : NULL;
    snprintf(out, n, "%s", e ? e + strlen("class=\"eff\">") : "(none)");
    out[strcspn(out, "<")] = '\0';
}

/* Two methods on two models trained at 16 and 32: each effective length is
** measured from its own model's training length (the report took the first
** row's, 16, for both). By hand, threshold 0.85: none @a 1, 0.9, 0.5 from 16
** gives 32; logn @b 0.5, 1, 0.6 from 32 gives 32 (from 16 it read >= 64). */
Test(report, effective_length_from_each_models_training_length, .init = setup, .fini = teardown, .timeout = 60)
{
    static char out[1 << 16];
    write_file("e.yaml", "name: e\nseed: 1\nmethods: [none, logn]\ntasks:\n  - gaussian: {samples: 20}\n"
               "lengths: [16, 32, 64]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run e.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"insert into models (key, name, config, path, sha256, steps, "
                    "tokens, seconds, git_commit, created) values ('aaaaaaaaaaaaaaaa', 'a', '{\\\"train\\\":"
                    "{\\\"length\\\":16}}', 'x', 'x', 0, 0, 0, 'c', 't'), ('bbbbbbbbbbbbbbbb', 'b', "
                    "'{\\\"train\\\":{\\\"length\\\":32}}', 'x', 'x', 0, 0, 0, 'c', 't'); "
                    "update runs set model_key = 'aaaaaaaaaaaaaaaa', model = 'a' where method = 'none'; "
                    "update runs set model_key = 'bbbbbbbbbbbbbbbb', model = 'b' where method like 'logn%%'; "
                    "delete from metrics where name != 'entropy'; delete from series; "
                    "update metrics set name = 'acc', value = (select case when r.method = 'none' then "
                    "(case r.length when 16 then 1 when 32 then 0.9 else 0.5 end) else (case r.length when 16 then "
                    "0.5 when 32 then 1 else 0.6 end) end from runs r where r.id = run_id)\""), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L report --db r.db -o e.html"), 0, "%s", out);
    char *html = read_all("e.html"), eff[64];
    eff_after(html, " @a</td>", eff, sizeof eff);
    cr_expect_str_eq(eff, "32");
    eff_after(html, " @b</td>", eff, sizeof eff);
    cr_expect_str_eq(eff, "32");
    free(html);
    /* b's training length unknown to the store (as a foreign server's is): from the shortest stored
    ** length, 16 (0.5, 1, 0.6 passes to 64), said in the cell's title and marked */
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"delete from models where name = 'b'\" && "
                    "$L report --db r.db -o e.html"), 0, "%s", out);
    html = read_all("e.html");
    const char *b = strstr(html, " @b</td>"), *cell = b ? strstr(b, "<td class=\"eff\"") : NULL;
    cr_assert_not_null(cell, "%s", html);
    cr_expect(strstr(cell, "<td class=\"eff\" title=\"measured from 16, the shortest length stored: the store does "
                      "not know this model's training length (a server that does not say it, or a cell stored "
                      "before lenx recorded it)\">") == cell,
              "%.300s", cell);
    cr_expect(strstr(cell, ">≥ 64 *</td>") != NULL, "%.300s", cell);
    eff_after(html, " @a</td>", eff, sizeof eff);
    cr_expect_str_eq(eff, "32");
    free(html);
}

/* A brought checkpoint's training length is the one its file says (stories260K's llama2.c header: seq_len
** 512, its README), stored with each cell, so its effective length is measured from 512 and not marked; it
** was measured from the shortest stored length, marked `*` "the store does not know". By hand, ppl 1, 2,
** 2.2 at 256, 512, 1024: from 512, 2 / 2.2 = 0.91 passes (>= 1024); from 256, 1 / 2 fails at once (256 *). */
Test(report, a_brought_checkpoints_training_length_is_stored, .init = setup, .fini = teardown, .timeout = 60)
{
    static char out[1 << 16];
    write_file("s.yaml", "name: s\nseed: 1\nnumerics: portable\nmodels:\n  st:\n    checkpoint: STORIES\n"
               "methods: [[{rope: {layout: interleaved}}]]\ntasks:\n  - ppl: {corpus: stories, windows: 1}\n"
               "lengths: [256, 512, 1024]\n");
    cr_assert_eq(sh(out, sizeof out, "sed -i -e \"s|STORIES|$R/../shared/models/stories260K/stories260K.bin|\" s.yaml "
                    "&& $L run s.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"select group_concat(length || ':' || coalesce(train_len, 'NULL'), "
                    "' ') from (select * from runs order by length)\""), 0, "%s", out);
    cr_expect_str_eq(out, "256:512 512:512 1024:512\n");
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"delete from metrics where name != 'ppl'; update metrics set "
                    "value = (select case r.length when 256 then 1 when 512 then 2 else 2.2 end "
                    "from runs r where r.id = run_id)\" && $L report --db r.db -o e.html"), 0, "%s", out);
    char *html = read_all("e.html"), eff[64];
    eff_after(html, " @st</td>", eff, sizeof eff);
    cr_expect_str_eq(eff, "≥ 1024");
    free(html);
}

Test(report, bad_input_and_a_missing_gnuplot_are_clear_errors, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    write_file("g.yaml", gauss);
    cr_assert_eq(sh(out, sizeof out, "$L run g.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L report --db r.db"), 2, "%s", out);
    cr_expect_not_null(strstr(out, "needs an output file"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L report --db r.db --threshold 1.5 -o x.html"), 2, "%s", out);
    cr_expect_not_null(strstr(out, "outside (0, 1]"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L report --db r.db --sweep gg -o x.html"), 2, "%s", out);
    cr_expect_not_null(strstr(out, "did you mean 'g'"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "LENX_GNUPLOT=/nonexistent/gnuplot $L report --db r.db -o x.html"), 3, "%s", out);
    cr_expect_not_null(strstr(out, "apt-get install gnuplot-nox"), "%s", out);
    cr_expect(!exists("x.html"), "nothing written");
    /* --metric naming no stored metric: refused as `table --metric` does, not an empty page */
    cr_expect_eq(sh(out, sizeof out, "$L report --db r.db --metric NOSUCH -o x.html"), 2, "%s", out);
    cr_expect_not_null(strstr(out, "no metric 'NOSUCH'"), "%s", out);
    cr_expect_not_null(strstr(out, "entropy"), "the stored metrics are listed: %s", out);
    cr_expect(!exists("x.html"), "nothing written");
    cr_expect_eq(sh(out, sizeof out, "$L report --db r.db --sweep g --metric entropy,NOSUCH -o x.html"), 2, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L report --db r.db --metric entropy -o x.html && grep -c 'data-kind=\"metric\"' "
                    "x.html"), 0, "%s", out);
    cr_expect_eq(atoi(out), 1, "one metric panel: %s", out);
    cr_expect_eq(sh(out, sizeof out, "$L report --db r.db -o x.html"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --series nll_by_pos --format md"), 2, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L table --db r.db --series nosuch --format csv"), 2, "%s", out);
    cr_expect_not_null(strstr(out, "nll_by_pos (ppl)"), "%s", out);
}

/* A failed cell without an ok row was missing from the page without a word, and a store of failed cells
** alone gave an empty page and exit 0: the page lists such cells with their stored errors (escaped), a cell
** whose other commit's row is ok is not listed, the command says when nothing ok is stored (as `lenx table`
** does), and a store holding no sweep is refused (exit 2) with nothing written. */
Test(report, failed_cells_are_listed_and_a_store_without_sweeps_is_refused, .init = setup, .fini = teardown,
     .timeout = 60)
{
    static char out[1 << 14];
    write_file("g.yaml", gauss);
    cr_assert_eq(sh(out, sizeof out, "$L run g.yaml --db r.db --quiet --no-table && sqlite3 r.db \"update runs set "
                    "status = 'failed', error = 'lenx: error: boom <b>' || char(10) || '  hint: x' where length = 32; "
                    "create temp table t as select * from runs where length = 16; update t set id = id + 100, "
                    "git_commit = 'other', status = 'failed', error = 'old'; insert into runs select * from t\""), 0,
                 "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L report --db r.db -o e.html"), 0, "%s", out);
    cr_expect_eq(out[0], '\0', "nothing said while an ok cell is stored: %s", out);
    char *html = read_all("e.html");
    cr_assert_not_null(html);
    cr_expect_not_null(strstr(html, "<h3>Failed cells</h3>\n<p class=\"note\">1 cell failed and has no ok row"),
                       "%s", html);
    cr_expect_not_null(strstr(html, "<td>32</td><td>1</td>"), "length and seed of the failed cell");
    cr_expect_not_null(strstr(html, "<pre>lenx: error: boom &lt;b&gt;\n  hint: x</pre>"), "its error, escaped");
    cr_expect_null(strstr(html, "<pre>old</pre>"), "the cell at 16 has an ok row: not listed");
    free(html);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"update runs set status = 'failed' where status = 'ok'\" && "
                    "$L report --db r.db -o e.html"), 0, "%s", out);
    cr_expect_str_eq(out, "lenx: no ok results stored; e.html lists 2 failed cells\n");
    /* lenx table said only "no ok results stored", nothing of the failures */
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db 2>&1 >/dev/null"), 0, "%s", out);
    cr_expect_str_eq(out, "lenx: no ok results stored; 2 cells failed\n  hint: lenx report lists them with their "
                     "errors; lenx run reruns them\n");
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --sweep nosuch 2>&1 >/dev/null"), 2, "%s", out);
    html = read_all("e.html");
    cr_assert_not_null(html);
    cr_expect_not_null(strstr(html, "2 cells failed and have no ok row"), "%s", html);
    cr_expect_not_null(strstr(html, "<pre>old</pre>"), "the newest failed row of the cell at 16");
    cr_expect_not_null(strstr(html, "No ok cell is stored in this sweep."), "%s", html);
    free(html);
    cr_expect_eq(sh(out, sizeof out, "sqlite3 r.db \"delete from runs\" && $L report --db r.db -o x.html"), 2, "%s",
                 out);
    cr_expect_not_null(strstr(out, "r.db holds no sweep: nothing to report\n  hint: `lenx run CONFIG --db r.db`"),
                       "%s", out);
    cr_expect(!exists("x.html"), "nothing written");
}

/* Provenance covers every cell made from a config text: the oldest start to
** the newest finish, and each commit and machine that made some of them (a
** sweep resumed after a commit, shards merged from several nodes), with its
** count. Reproduces a report that printed one cell's start and finish as the
** sweep's time and the commit of an arbitrary row. */
Test(report, provenance_spans_every_cell_commit_and_machine, .init = setup, .fini = teardown, .timeout = 60)
{
    char out[4096];
    write_file("g.yaml", "name: g\nseed: 1\nmethods: [none]\ntasks:\n  - gaussian: {samples: 20}\n"
                         "lengths: [16, 32, 64]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run g.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    char commit[64];
    sql_text(commit, sizeof commit, "r.db", "select git_commit from runs limit 1");
    long dirty = sql_long("r.db", "select git_dirty from runs limit 1");   /* this build's own tree */
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"update runs set started = '2026-01-02T00:00:00.000Z', "
                    "finished = '2026-01-02T00:00:01.000Z';"
                    "update runs set started = '2026-01-01T00:00:00.000Z', git_commit = 'aaaaaaaaaaaa', git_dirty = 1,"
                    " host = 'node7' where id = (select min(id) from runs);"
                    "update runs set finished = '2026-01-03T00:00:00.000Z' where id = (select min(id) + 1 from runs)\""),
                 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L report --db r.db -o p.html"), 0, "%s", out);
    char *html = read_all("p.html");
    cr_expect_not_null(strstr(html, "2026-01-01T00:00:00.000Z … 2026-01-03T00:00:00.000Z"), "the whole span");
    char want[160];
    snprintf(want, sizeof want, "<code>%s</code>%s (2 cells)", commit,
             dirty ? " <b>(dirty: uncommitted changes)</b>" : "");
    cr_expect_not_null(strstr(html, want), "the newest commit with its count: %s", want);
    cr_expect_not_null(strstr(html, "<code>aaaaaaaaaaaa</code> <b>(dirty: uncommitted changes)</b> (1 cell)"),
                       "the older commit, dirty, with its count");
    cr_expect_not_null(strstr(html, "node7"), "the other machine");
    free(html);
    /* show sweep names the newest finish and every commit */
    cr_assert_eq(sh(out, sizeof out, "$L show sweep g --db r.db | grep '^#'"), 0, "%s", out);
    cr_expect_not_null(strstr(out, "3 cells"), "%s", out);
    cr_expect_not_null(strstr(out, "2026-01-03T00:00:00.000Z"), "%s", out);
    cr_expect_not_null(strstr(out, "#   commit aaaaaaaaaaaa (dirty): 1 cell\n"), "%s", out);
    snprintf(want, sizeof want, "#   commit %.12s%s: 2 cells\n", commit, dirty ? " (dirty)" : "");
    cr_expect_not_null(strstr(out, want), "%s", out);
}

/* ---- show task: one rendered instance ---- */

/* Run `lenx show task needle ...`; the prompt (BOS as one character) and the answer. */
static void needle_instance(const char *args, char *prompt, char *answer, size_t n)
{
    static char out[1 << 17];
    cr_assert_eq(sh(out, sizeof out, "$L show task needle %s", args), 0, "%s", out);
    char *p = strstr(out, "--- prompt\n<bos>"), *a = strstr(out, "\n--- answer\n");
    cr_assert(p && a, "%s", out);
    p += strlen("--- prompt\n<bos>");
    snprintf(prompt, n, "^%.*s", (int)(a - p), p);      /* '^' stands for the BOS token */
    snprintf(answer, n, "%s", a + strlen("\n--- answer\n"));
    answer[strcspn(answer, "\n")] = '\0';
}

/* Where the needle sentence starts, as a fraction of the haystack (the
** prompt without BOS, needle and question). */
static double needle_at(const char *prompt)
{
    const char *s = strstr(prompt, "The special magic "), *q = strstr(prompt, "\nWhat is the special magic");
    cr_assert(s && q);
    const char *dot = strchr(s, '.');
    long needle = (long)(dot - s) + 2, hay = (long)(q - prompt) - 1 - needle;
    return (double)(s - prompt - 1) / (double)hay;
}

Test(show_task, needle_has_the_exact_length_and_the_requested_depth, .init = setup, .fini = teardown, .timeout = 60)
{
    static char prompt[1 << 17], answer[1 << 17];
    needle_instance("--length 1021", prompt, answer, sizeof prompt);
    cr_expect_eq(strlen(prompt) + strlen(answer), 1021, "1021 tokens: %zu + %zu", strlen(prompt), strlen(answer));
    cr_expect_eq(strlen(answer), 8, "' ' and 7 digits: '%s'", answer);
    cr_expect_not_null(strstr(prompt, answer + 1), "the needle holds the gold number");

    needle_instance("--length 1021 --depth 0", prompt, answer, sizeof prompt);
    cr_expect_eq(strncmp(prompt, "^The special magic ", 19), 0, "depth 0: the needle first: %.60s", prompt);
    needle_instance("--length 1021 --depth 1", prompt, answer, sizeof prompt);
    const char *q = strstr(prompt, "\nWhat is");
    cr_assert_not_null(q);
    cr_expect_eq(strncmp(q - 8, answer + 1, 7), 0, "depth 1: the needle right before the question: %.40s", q - 40);
    /* in a long haystack the sentence starts are close: the needle sits near depth·H */
    for (int k = 1; k <= 3; k++) {
        char args[64];
        snprintf(args, sizeof args, "--length 20000 --depth %g --sample 3", 0.25 * k);
        needle_instance(args, prompt, answer, sizeof prompt);
        cr_expect_eq(strlen(prompt) + strlen(answer), 20000);
        cr_expect(fabs(needle_at(prompt) - 0.25 * k) < 0.03, "depth %g: the needle at %.3f", 0.25 * k,
                  needle_at(prompt));
    }
}

Test(show_task, refuses_what_it_cannot_render, .init = setup, .fini = teardown)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L show task ppl --length 100"), 2, "%s", out);
    cr_expect_not_null(strstr(out, "only retrieval tasks"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task needle --length 50"), 2, "%s", out);
    cr_expect_not_null(strstr(out, "minimum"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task needle --length 500 --depth 1.5"), 2, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task needle template=short --length 200"), 0, "%s", out);
    cr_expect_not_null(strstr(out, "needle(template=short)"), "%s", out);
}

/* ---- hostile stored strings: escaped for every context they land in ---- */

/* The payload planted in every stored text column (after a column tag): an
** HTML tag and attribute, a quote breaking out of an attribute, an entity
** that must not be decoded, the end of an SVG and a CDATA section, a
** gnuplot backquote (runs a shell command in a double-quoted string), a
** newline then a gnuplot/LaTeX command, a macro, Markdown's cell bar, and
** the report's own plot placeholder (bytes 1). */
#define HOSTILE_SQL                                                                                         \
    "'<pwn-tag pwnattr=1>\"pwnattr2=\"1'' &lt;pwn-amp </svg></figure>]]><![CDATA[ `touch pwned-bq` | '" \
    " || char(10) || 'system(\"touch pwned-nl\") \\input{pwn-tex} @pwn % $ # _ ^ ~ {'"                     \
    " || char(1) || '999' || char(1) || char(13) || char(10) || char(10) || 'pwn-line'"

/* The SQL that plants payload P (an SQL expression) in every stored text
** column of a store made by `lenx run` (after a column tag) and adds series. */
#define HOSTILE_STORE(P)                                                                                          \
    "update runs set sweep = 'S' || " P ", method = 'M' || " P ", task = 'T' || " P ", method_params = 'P' || " P \
    ", task_params = 'Q' || " P ", model_key = 'K' || " P ", model = 'N' || " P ", git_commit = 'C' || " P         \
    ", version = 'V' || " P ", blas = 'B' || " P ", host = 'H' || " P ", config = 'F' || " P                      \
    ", config_text = 'Y' || " P ", started = 'A' || " P ", finished = 'Z' || " P ", error = 'E' || " P            \
    ", key = key || " P ";\n"                                                                                      \
    "update metrics set name = 'X' || " P " || name;\n"                                                           \
    "insert into series (run_id, series, x, y) select id, 'nll_by_pos', 1, 2.5 from runs;\n"                     \
    "insert into series (run_id, series, x, y) select id, 'nll_by_pos', 2, 2.0 from runs;\n"                     \
    "insert into series (run_id, series, x, y) select id, 'acc_by_depth', 0.5, 1 from runs;\n"

static const char *hostile_sql = HOSTILE_STORE(HOSTILE_SQL);

/* Walk a page as an HTML parser would (tags with quoted or bare attribute
** values, comments, CDATA sections of SVG, the raw text of <style>) and fail
** on any tag or attribute the payload would have made; count the tags. */
static int scan_markup(const char *page)
{
    int tags = 0;
    for (const char *p = page; (p = strchr(p, '<'));) {
        if (!strncmp(p, "<!--", 4) || !strncmp(p, "<![CDATA[", 9)) {
            const char *end = strstr(p, p[2] == '-' ? "-->" : "]]>");
            cr_assert_not_null(end, "unterminated comment or CDATA: %.80s", p);
            p = end + 3;
            continue;
        }
        const char *q = p + 1 + (p[1] == '/' || p[1] == '!');
        if (!isalpha((unsigned char)*q)) {
            p++;
            continue;       /* "<" then no letter: text (the parser's rule) */
        }
        size_t n = strcspn(q, " \t\n\r\f/>");
        cr_assert(strncmp(q, "pwn", 3) && strncasecmp(q, "script", 6), "an injected tag: %.80s", p);
        int style = n == 5 && !strncmp(q, "style", 5) && p[1] != '/';
        q += n;
        tags++;
        for (;;) {
            q += strspn(q, " \t\n\r\f/");
            if (!*q || *q == '>')
                break;
            size_t an = strcspn(q, " \t\n\r\f/>=");
            cr_assert(strncmp(q, "pwn", 3) && strncasecmp(q, "on", 2), "an injected attribute: %.80s", q);
            q += an;
            q += strspn(q, " \t\n\r\f");
            if (*q != '=')
                continue;
            q += 1 + strspn(q + 1, " \t\n\r\f");
            if (*q == '"' || *q == '\'') {
                const char *end = strchr(q + 1, *q);
                cr_assert_not_null(end, "unterminated attribute value: %.80s", q);
                q = end + 1;
            } else {
                q += strcspn(q, " \t\n\r\f>");
            }
        }
        cr_assert_eq(*q, '>', "unterminated tag: %.80s", p);
        p = q + 1;
        if (style) {
            p = strstr(p, "</style>");
            cr_assert_not_null(p);
        }
    }
    return tags;
}

/* Occurrences of pat in s. */
static int count_all(const char *s, const char *pat)
{
    return count_in(s, s + strlen(s), pat);
}

/* Reproduces a metric name that broke out of data-metric, and
** the rest of its class: every stored string is escaped for its context in
** the report (HTML text and attributes, gnuplot strings, the SVG gnuplot
** writes) and in the md, latex and csv tables. */
Test(report, hostile_stored_strings_stay_in_their_context, .init = setup, .fini = teardown, .timeout = 120)
{
    static char out[1 << 16];
    write_file("g.yaml", gauss);
    cr_assert_eq(sh(out, sizeof out, "$L run g.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    write_file("hostile.sql", hostile_sql);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db < hostile.sql"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L report --db r.db -o page.html"), 0, "%s", out);
    cr_expect(!exists("pwned-bq") && !exists("pwned-nl"), "a stored name ran a shell command through gnuplot");
    char *html = read_all("page.html");
    cr_expect_gt(scan_markup(html), 100);
    cr_expect_null(strchr(html, '\1'), "a control byte reached the page");
    cr_expect_eq(count_all(html, "lt;pwn-amp"), count_all(html, "&amp;lt;pwn-amp"), "an entity of a name decoded");
    cr_expect_eq(count_all(html, "<svg"), count_all(html, "</svg>"));
    /* each displayed column is there, escaped */
    static const char *const shown[] = {"S", "M", "T", "X", "C", "H", "B", "F", "Y", "A", "Z"};
    for (size_t i = 0; i < sizeof shown / sizeof *shown; i++) {
        char want[32];
        snprintf(want, sizeof want, "%s&lt;pwn-tag", shown[i]);
        cr_expect_not_null(strstr(html, want), "column %s not shown escaped", shown[i]);
    }
    char fig[64];
    cr_expect_gt(count_all(html, "data-kind=\"curve\""), 0, "the series panels are drawn");
    snprintf(fig, sizeof fig, "data-metric=\"X");
    cr_expect_not_null(strstr(html, fig), "the metric panel is drawn");
    free(html);
    /* a failed cell's stored error is shown too, escaped (a cell without an ok row is listed with it) */
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"update runs set status = 'failed' where length = 32\" && "
                    "$L report --db r.db -o failed.html"), 0, "%s", out);
    html = read_all("failed.html");
    cr_expect_gt(scan_markup(html), 100);
    cr_expect_not_null(strstr(html, "<pre>E&lt;pwn-tag"), "the error column not shown escaped");
    free(html);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"update runs set status = 'ok'\""), 0, "%s", out);

    /* LaTeX: no payload command or line survives; braces balance */
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --format latex"), 0, "%s", out);
    cr_expect_null(strstr(out, "\\input"), "%s", out);
    cr_expect_null(strstr(out, "\nsystem("), "%s", out);
    cr_expect_null(strstr(out, "\npwn-line"), "%s", out);
    cr_expect_null(strstr(out, "\n\n\\"), "a blank line inside a tabular: %s", out);
    int depth = 0;
    for (const char *p = out; *p; p++)
        if (*p == '\\' && p[1])
            p++;
        else
            depth += (*p == '{') - (*p == '}');
    cr_expect_eq(depth, 0, "unbalanced braces: %s", out);
    /* Markdown: rows keep their cells, no HTML, no line of the payload */
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --format md"), 0, "%s", out);
    cr_expect_null(strstr(out, "<pwn"), "%s", out);
    cr_expect_null(strstr(out, "\nsystem("), "%s", out);
    cr_expect_null(strstr(out, "\npwn-line"), "%s", out);
    for (const char *line = out; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != 0))
        if (*line == '|') {
            int bars = 0;
            for (const char *p = line; *p && *p != '\n'; p++)
                bars += *p == '|' && (p == line || p[-1] != '\\');
            cr_expect_eq(bars, 4, "a table row of 1 method and 2 lengths has 4 bars: %.*s",
                         (int)strcspn(line, "\n"), line);
        }
    /* CSV: read back, the row label (method @model) is the stored one */
    cr_assert_eq(sh(out, sizeof out, "$L table --db r.db --format csv > t.csv"), 0, "%s", out);
    char path[256], method[4096];
    snprintf(path, sizeof path, "%s/t.csv", dir);
    struct lx_rows rows = {0};
    struct lx_error err;
    cr_assert_eq(lx_csv_read(path, &rows, &err), LX_OK, "%s", err.msg);
    sql_text(method, sizeof method, "r.db", "select hex(method || ' @' || model) from runs limit 1");
    cr_assert_gt(rows.n, 0);
    struct lx_buf hex = {0};
    for (const unsigned char *p = (const unsigned char *)rows.rows[0].method; *p; p++)
        lx_buf_printf(&hex, "%02X", *p);
    cr_expect_eq(strncmp(lx_buf_str(&hex), method, strlen(lx_buf_str(&hex))), 0, "%s\n%s", lx_buf_str(&hex), method);
    cr_expect_eq(strlen(method), hex.len, "%s\n%s", lx_buf_str(&hex), method);
    lx_buf_free(&hex);
    lx_rows_release(&rows);
}

/* Terminal control sequences planted after HOSTILE_SQL: a colour (CSI), an
** OSC 8 hyperlink, an OSC 52 clipboard write, a carriage return that
** overwrites the line, BEL, DEL, C1 CSI (U+009B, in UTF-8) and two bytes that
** are not UTF-8 (a stray 0xFF, an overlong '/'). */
#define TERMINAL_SQL                                                                                          \
    HOSTILE_SQL " || char(27) || '[31mpwn-red' || char(27) || ']8;;http://pwn/' || char(7) || 'pwn-link'"   \
    " || char(27) || ']8;;' || char(27) || '\\' || char(27) || ']52;c;cHdu' || char(7) || char(13)"         \
    " || 'pwn-cr' || char(127) || char(155) || '2J' || cast(x'ff' as text) || cast(x'c0af' as text)"

static const char *terminal_sql =
    HOSTILE_STORE(TERMINAL_SQL)
    "insert into models (key, name, config, path, sha256, steps, tokens, seconds, git_commit, created) values"
    " ('0123456789abcdef' || " TERMINAL_SQL ", 'n' || " TERMINAL_SQL ", json_object('arch', json_object('mode',"
    " 'm' || " TERMINAL_SQL ", 'layers', 1, 'd_model', 8, 'heads', 1), 'stack', json_array(json_object('s' || "
    TERMINAL_SQL ", json_object())), 'train', json_object('length', 16)), 'p' || " TERMINAL_SQL ", 'h', 1, 16,"
    " 1.0, 'c' || " TERMINAL_SQL ", 'd' || " TERMINAL_SQL ");\n";

/* The first raw control byte (C0 but LF and tab, DEL, C1 in UTF-8) of s, or NULL. */
static const char *raw_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return (const char *)p;
    return NULL;
}

/* Every stored string that reaches the terminal (views, dry runs,
** errors quoting it) shows its control bytes, never sends them: no colour,
** hyperlink, clipboard write or overwritten line from a store merged from
** elsewhere. */
Test(report, stored_strings_send_no_control_sequence_to_the_terminal, .init = setup, .fini = teardown,
     .timeout = 120)
{
    static char out[1 << 16];
    write_file("g.yaml", gauss);
    cr_assert_eq(sh(out, sizeof out, "$L run g.yaml --db r.db --quiet --no-table && $L table --db r.db --format csv"
                    " --sweep g > base.csv"), 0, "%s", out);
    write_file("terminal.sql", terminal_sql);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db < terminal.sql && cp r.db moved.db && sqlite3 moved.db"
                    " 'update metrics set value = value + 1'"), 0, "%s", out);
    static const char *const cmds[] = {
        "$L list sweeps --db r.db",
        "$L list models --db r.db",
        "$L show sweep \"$(sqlite3 r.db 'select sweep from runs limit 1')\" --db r.db",
        "$L show model 0123456789ab --db r.db",
        "$L show sweep \"$(sqlite3 r.db 'select sweep from runs limit 1')x\" --db r.db",
        "$L rm --db r.db --sweep \"$(sqlite3 r.db 'select sweep from runs limit 1')\"",
        "$L table --db r.db --sweep nosuch",
        "$L table --db r.db --format csv > t.csv && $L compare t.csv \"$(sqlite3 r.db 'select sweep from runs limit"
        " 1')\" --db moved.db",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        sh(out, sizeof out, "%s", cmds[i]);
        cr_expect(strstr(out, "pwn"), "%s: no stored string shown: %s", cmds[i], out);
        const char *c = raw_control(out);
        cr_expect_null(c, "%s: a raw control byte 0x%02x at %td of: %s", cmds[i], c ? (unsigned char)*c : 0,
                       c ? c - out : 0, out);
    }
}

/* `table --format json` is valid JSON (RFC 8259: UTF-8, no raw
** control byte in a string) whatever bytes the store holds, as checked by
** Python's strict parser; records and series alike. */
Test(report, json_export_is_valid_json_for_any_stored_bytes, .init = setup, .fini = teardown, .timeout = 120)
{
    static char out[1 << 16];
    write_file("g.yaml", gauss);
    write_file("terminal.sql", terminal_sql);
    cr_assert_eq(sh(out, sizeof out, "$L run g.yaml --db r.db --quiet --no-table && sqlite3 r.db < terminal.sql"), 0,
                 "%s", out);
    static const char *const cmds[] = {"$L table --db r.db --format json",
                                       "$L table --db r.db --format json --series nll_by_pos"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        cr_expect_eq(sh(out, sizeof out, "%s > t.json && /usr/bin/python3 -c 'import json, sys;"
                        " r = json.loads(sys.stdin.buffer.read().decode(\"utf-8\"));"
                        " assert len(r) > 0 and \"pwn-red\" in json.dumps(r)' < t.json", cmds[i]), 0, "%s: %s",
                     cmds[i], out);
    }
}

/* ---- a value that is not a number ---- */

/* Reproduces a TEXT value in metrics.value (a hand-edited or foreign shard)
** that `lenx merge` carried as it was and the tables showed as 0: the merge
** refuses the input naming it, the run and the metric, and writes nothing; a
** store that already holds one is refused when read, never shown as 0. */
Test(merge, a_value_that_is_not_a_number_is_refused, .init = setup, .fini = teardown, .timeout = 60)
{
    static char out[1 << 14];
    write_file("g.yaml", gauss);
    cr_assert_eq(sh(out, sizeof out, "$L run g.yaml --db a.db --quiet --no-table && cp a.db bad.db"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 bad.db \"update runs set sweep = 'h';"
                    " update metrics set value = 'abc' where name = 'entropy' and run_id = (select min(id) from runs);"
                    " update series set y = 'zz' where rowid = (select min(rowid) from series)\""), 0, "%s", out);
    cr_assert_eq(sql_long("bad.db", "select count(*) from metrics where typeof(value) = 'text'"), 1);
    char before[1 << 12], after[1 << 12];
    sql_text(before, sizeof before, "a.db", "select group_concat(sweep || key || coalesce(m.value, 'null'), ';')"
             " from runs join metrics m on m.run_id = runs.id");
    cr_expect_eq(sh(out, sizeof out, "$L merge bad.db --into a.db"), 2, "%s", out);
    cr_expect_not_null(strstr(out, "bad.db"), "%s", out);
    cr_expect_not_null(strstr(out, "metric \"entropy\""), "names the metric: %s", out);
    cr_expect_not_null(strstr(out, "abc"), "shows the value: %s", out);
    sql_text(after, sizeof after, "a.db", "select group_concat(sweep || key || coalesce(m.value, 'null'), ';')"
             " from runs join metrics m on m.run_id = runs.id");
    cr_expect_str_eq(after, before, "a refused merge wrote something");
    cr_expect_eq(sql_long("a.db", "select count(*) from runs where sweep = 'h'"), 0);
    /* read in place: refused, not 0 */
    cr_expect_eq(sh(out, sizeof out, "$L table --db bad.db --format csv"), 3, "%s", out);
    cr_expect_not_null(strstr(out, "'entropy'") && strstr(out, "abc"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L report --db bad.db -o p.html"), 3, "%s", out);
    cr_expect(!exists("p.html"));
}

/* A line's error bar is drawn from its two ends (x y lo hi rows, gnuplot's
** yerrorlines with 4 columns), so an interval need not be symmetric; a point
** without ends gets a bar of zero height. */
Test(report, error_bars_are_drawn_from_their_two_ends)
{
    static const double x[] = {192, 768}, y[] = {0.25, 0}, lo[] = {0, NAN}, hi[] = {0.75, NAN};
    struct lx_plot_line line = {.label = "m", .n = 2, .x = x, .y = y, .lo = lo, .hi = hi};
    struct lx_plot p = {.kind = LX_PLOT_LINES, .title = "t", .lines = &line, .n_lines = 1};
    struct lx_buf b = {0};
    lx_plot_script(&p, 1, &b);
    const char *s = lx_buf_str(&b);
    cr_expect(strstr(s, "\n192 0.25 0 0.75\n768 0 0 0\n") != NULL, "%s", s);
    cr_expect(strstr(s, "using 1:2:3:4 with yerrorlines") != NULL, "%s", s);
    lx_buf_free(&b);
}

/* Distance 0 on a log-2 axis (mass_by_distance's first bucket) is drawn at
** half the first positive x and named 0 (gnuplot dropped it, and the 0.4 of
** self-attention with it). Every y undefined (a NaN metric, stored as NULL):
** an empty panel with fixed ranges, which gnuplot draws (it stopped on "all
** points y value undefined" and the whole report failed). Both rendered. */
Test(report, a_zero_distance_and_an_all_nan_line_are_drawn)
{
    static const double x[] = {0, 1, 2, 4}, y[] = {0.4, 0.3, 0.2, 0.1}, none[] = {NAN, NAN, NAN, NAN};
    struct lx_plot_line line = {.label = "m", .n = 4, .x = x, .y = y}, nan_line = {.label = "m", .n = 4, .x = x,
                                                                                    .y = none};
    struct lx_plot p = {.kind = LX_PLOT_LINES, .title = "t", .lines = &line, .n_lines = 1, .log2x = 1};
    struct lx_buf b = {0};
    lx_plot_script(&p, 1, &b);
    cr_expect(strstr(lx_buf_str(&b), "\n0.5 0.4 0.4 0.4\n1 0.3") != NULL, "%s", lx_buf_str(&b));
    cr_expect(strstr(lx_buf_str(&b), "set xtics add (\"0\" 0.5)") != NULL, "%s", lx_buf_str(&b));
    char *svg[2] = {NULL, NULL};
    struct lx_error err = {{0}};
    struct lx_plot both[2] = {p, p};
    both[1].lines = &nan_line;
    if (lx_plot_svg(both, 2, svg, &err) == LX_EIO && strstr(err.msg, "gnuplot-nox"))
        cr_skip_test("gnuplot is not installed");
    cr_assert(svg[0] && svg[1], "%s", err.msg);
    cr_expect(strstr(svg[1], "no finite value") != NULL, "the empty panel says why");
    cr_expect(strstr(svg[0], "no finite value") == NULL);
    free(svg[0]);
    free(svg[1]);
    lx_buf_free(&b);
}

/* A panel title longer than the old 512-byte buffer, of two-byte characters:
** the page stays UTF-8 (the title was cut inside a character). */
static int valid_utf8(const unsigned char *s)
{
    while (*s) {
        int n = *s < 0x80 ? 0 : (*s & 0xE0) == 0xC0 ? 1 : (*s & 0xF0) == 0xE0 ? 2 : (*s & 0xF8) == 0xF0 ? 3 : -1;
        if (n < 0)
            return 0;
        for (int i = 1; i <= n; i++)
            if ((s[i] & 0xC0) != 0x80)
                return 0;
        s += n + 1;
    }
    return 1;
}

Test(report, long_titles_stay_utf8, .init = setup, .fini = teardown, .timeout = 60)
{
    static char out[1 << 16];
    write_file("g.yaml", gauss);
    cr_assert_eq(sh(out, sizeof out, "$L run g.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"update metrics set name = 'range_mass:a' || "
                    "replace(printf('%%.300c', 'x'), 'x', 'é') where name = 'entropy'\""), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L report --db r.db -o u.html"), 0, "%s", out);
    char *html = read_all("u.html");
    cr_expect(strstr(html, "éééé against length") != NULL, "the whole title is drawn");
    cr_expect(valid_utf8((const unsigned char *)html), "the page is not UTF-8");
    free(html);
}
