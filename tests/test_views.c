/*
** tests/test_views.c - what rows become: md and latex pivots, tidy csv and
** json, csv read back, metric filters, and regression comparison. Expected
** texts are written out by hand from the documented formats.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "results/views.h"

/* Each test runs in its own process: one temp file per test. */
static char tmp_path[64];

static void setup(void)
{
    strcpy(tmp_path, "/tmp/lenx-views-XXXXXX");
    int fd = mkstemp(tmp_path);
    cr_assert(fd >= 0, "mkstemp failed");
    close(fd);
}

static void teardown(void)
{
    unlink(tmp_path);
}

TestSuite(views, .init = setup, .fini = teardown);
TestSuite(compare);

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* Shorthand: a row of sweep "s", task "t", no key or commit. */
static void add(struct lx_rows *r, const char *method, long length, long seed, const char *metric, double v)
{
    lx_rows_add(r, "s", method, "t", NULL, NULL, length, seed, metric, v, r->n + 1);
}

static void expect_render(const struct lx_rows *rows, enum lx_format fmt, const char *metrics,
                          const char *want)
{
    struct lx_buf out = {0};
    lx_render(rows, fmt, metrics, &out);
    cr_expect_str_eq(lx_buf_str(&out), want, "metrics filter %s", metrics ? metrics : "(none)");
    lx_buf_free(&out);
}

/* ---- md ---------------------------------------------------------------- */

/* Two methods, lengths out of order, se companions, a missing cell, a second
** metric and an _se metric with no base. */
static void pivot_rows(struct lx_rows *r)
{
    add(r, "none", 1000, 1, "ppl", 2.5);
    add(r, "none", 1000, 1, "ppl_se", 0.25);
    add(r, "none", 100, 1, "ppl", 1.5);
    add(r, "none", 100, 1, "ppl_se", 0.1);
    add(r, "logn(s=0.4)", 100, 1, "ppl", 1.25);
    add(r, "none", 100, 1, "acc", 0.5);
    add(r, "none", 100, 1, "lonely_se", 3);
}

#define PPL_TABLE                                                               \
    "### s · t · ppl\n"                                                         \
    "\n"                                                                        \
    "| method | 100 | 1000 |\n"                                                 \
    "|---|---:|---:|\n"                                                         \
    "| none | 1.5 ± 0.1 | 2.5 ± 0.25 |\n"                                       \
    "| logn(s=0.4) | 1.25 | – |\n"                                              \
    "\n"

#define ACC_TABLE                                                               \
    "### s · t · acc\n"                                                         \
    "\n"                                                                        \
    "| method | 100 |\n"                                                        \
    "|---|---:|\n"                                                              \
    "| none | 0.5 |\n"                                                          \
    "\n"

Test(views, md_pivot)
{
    struct lx_rows r = {0};
    pivot_rows(&r);
    expect_render(&r, LX_FMT_MD, NULL, PPL_TABLE ACC_TABLE);
    lx_rows_release(&r);
}

Test(views, md_metric_filter)
{
    struct lx_rows r = {0};
    pivot_rows(&r);
    /* The _se companion still shows as ± when only its base is asked for. */
    expect_render(&r, LX_FMT_MD, "ppl", PPL_TABLE);
    expect_render(&r, LX_FMT_MD, "acc,nothing", ACC_TABLE);
    expect_render(&r, LX_FMT_MD, "acc,ppl", PPL_TABLE ACC_TABLE);
    /* _se metrics are never tabled on their own. */
    expect_render(&r, LX_FMT_MD, "lonely_se", "");
    expect_render(&r, LX_FMT_MD, "ppl_se", "");
    lx_rows_release(&r);
}

#define INTERVALS "[lo, hi] (n=k): the 95 % interval of the mean over k seeds\n\n"

Test(views, md_seeds_show_mean_interval_n)
{
    struct lx_rows r = {0};
    /* Seeds 1, 2, 4: mean 7/3 = 2.333; deviations -4/3, -1/3, 5/3; squares sum
    ** to 42/9 = 14/3; / (n-1) = 7/3; sd = sqrt(7/3) = 1.5275; the 95 % t
    ** interval's half-width t(0.975; 2) sd / sqrt(3) = 4.30265 * 0.88192 = 3.7946
    ** (t from a table): [-1.461, 6.128]. The se of one seed is not used once
    ** there are several. */
    add(&r, "m", 10, 1, "x", 1);
    add(&r, "m", 10, 1, "x_se", 0.01);
    add(&r, "m", 10, 2, "x", 2);
    add(&r, "m", 10, 3, "x", 4);
    /* One seed: its se. */
    add(&r, "m", 20, 1, "x", 7);
    add(&r, "m", 20, 1, "x_se", 0.5);
    /* Equal seeds: sd 0. */
    add(&r, "m", 30, 1, "x", 5);
    add(&r, "m", 30, 2, "x", 5);
    expect_render(&r, LX_FMT_MD, NULL,
                  "### s · t · x\n"
                  "\n"
                  "| method | 10 | 20 | 30 |\n"
                  "|---|---:|---:|---:|\n"
                  "| m | 2.333 [-1.461, 6.128] (n=3) | 7 ± 0.5 | 5 [5, 5] (n=2) |\n"
                  "\n"
                  "[lo, hi] (n=k): the 95 % interval of the mean over k seeds\n"
                  "\n");
    lx_rows_release(&r);
}

Test(views, md_one_table_per_sweep_task_metric)
{
    struct lx_rows r = {0};
    lx_rows_add(&r, "a", "m", "t1", NULL, NULL, 10, 1, "x", 1, 1);
    lx_rows_add(&r, "b", "m", "t1", NULL, NULL, 10, 1, "x", 3, 2);
    lx_rows_add(&r, "a", "m", "t2", NULL, NULL, 10, 1, "x", 2, 3);
    expect_render(&r, LX_FMT_MD, NULL,
                  "### a · t1 · x\n\n| method | 10 |\n|---|---:|\n| m | 1 |\n\n"
                  "### a · t2 · x\n\n| method | 10 |\n|---|---:|\n| m | 2 |\n\n"
                  "### b · t1 · x\n\n| method | 10 |\n|---|---:|\n| m | 3 |\n\n");
    lx_rows_release(&r);
}

/* A label from a user's YAML (a method's, a task's) reaches a Markdown table's rows and heading: its
** dollars are escaped there too, the pipe as before. */
Test(views, md_escapes_dollars_in_labels_and_headings)
{
    struct lx_rows r = {0};
    lx_rows_add(&r, "s", "$a$|b", "$t$", NULL, NULL, 10, 1, "x", 1, 1);
    expect_render(&r, LX_FMT_MD, NULL,
                  "### s · \\$t\\$ · x\n\n| method | 10 |\n|---|---:|\n| \\$a\\$\\|b | 1 |\n\n");
    lx_rows_release(&r);
}

Test(views, md_empty)
{
    struct lx_rows r = {0};
    expect_render(&r, LX_FMT_MD, NULL, "");
    expect_render(&r, LX_FMT_LATEX, NULL, "");
}

/* ---- latex ------------------------------------------------------------- */

Test(views, latex_pivot_escapes)
{
    struct lx_rows r = {0};
    add(&r, "logn_x(p=5%)", 100, 1, "acc", 0.5);
    add(&r, "logn_x(p=5%)", 100, 1, "acc_se", 0.1);
    /* Seeds 0.75 and 0.25: mean 0.5, sd sqrt(2 * 0.0625) = 0.3536, the t
    ** interval's half-width 12.706 * 0.3536 / sqrt(2) = 3.1766: [-2.677, 3.677],
    ** kept inside [0, 1] for an accuracy. */
    add(&r, "none", 200, 1, "acc", 0.75);
    add(&r, "none", 200, 2, "acc", 0.25);
    add(&r, "a&b#c$d{e}f^g~h\\i", 100, 1, "acc", 2);
    expect_render(&r, LX_FMT_LATEX, NULL,
                  "% sweep s, task t, metric acc\n"
                  "\\begin{tabular}{lrr}\n"
                  "\\toprule\n"
                  "Method & 100 & 200 \\\\\n"
                  "\\midrule\n"
                  "logn\\_x(p=5\\%) & 0.5 $\\pm$ 0.1 & -- \\\\\n"
                  "none & -- & 0.5 [0, 1] (2) \\\\\n"
                  "a\\&b\\#c\\$d\\{e\\}f\\textasciicircum{}g\\textasciitilde{}h\\textbackslash{}i & 2 & -- \\\\\n"
                  "\\bottomrule\n"
                  "\\end{tabular}\n"
                  "% [lo, hi] (k): the 95 % interval of the mean over k seeds\n"
                  "\n");
    lx_rows_release(&r);
}

/* Stored strings that Markdown or LaTeX would read as markup: GFM's
** emphasis by underscores at a word's edge, strikethrough, autolinks (www.
** and ://), GitHub's and Jupyter's math between dollars ($x$, $$x$$, $`x`$);
** a label opening with [ or * after a LaTeX row's \\ (read as its optional
** argument or star), blanks before them too. beta_fast inside a word, and
** the labels lenx writes (method stacks, tasks, metrics), stay as written. */
Test(views, escapes_for_gfm_and_latex_row_starts)
{
    static const struct {
        const char *in, *md;
    } md[] = {
        {"_draft_", "\\_draft\\_"},
        {"__strong__ beta_fast", "\\_\\_strong\\_\\_ beta_fast"},
        {"~~gone~~", "\\~\\~gone\\~\\~"},
        {"https://evil.example/x", "https\\://evil.example/x"},
        {"www.evil.example and awww.x", "www\\.evil.example and awww.x"},
        {"[x](y)", "[x]\\(y)"},
        {"$x$ and $$y$$", "\\$x\\$ and \\$\\$y\\$\\$"},
        {"cost $5, $`k`$", "cost \\$5, \\$\\`k\\`\\$"},
        {"rope+pi(scale=2)", "rope+pi(scale=2)"},
        {"yarn(beta_fast=32,scale=4)+window(n=512)", "yarn(beta_fast=32,scale=4)+window(n=512)"},
        {"ppl(windows=2)", "ppl(windows=2)"},
        {"passkey-v1.2 acc@0.5 #3 !x", "passkey-v1.2 acc@0.5 #3 !x"},
    };
    for (size_t i = 0; i < sizeof md / sizeof *md; i++) {
        struct lx_buf b = {0};
        lx_esc_md(&b, md[i].in);
        cr_expect_str_eq(lx_buf_str(&b), md[i].md, "%s", md[i].in);
        lx_buf_free(&b);
    }
    struct lx_buf b = {0};
    lx_esc_latex(&b, "[2cm] x");
    cr_expect_str_eq(lx_buf_str(&b), "{}[2cm] x");
    lx_buf_reset(&b);
    lx_esc_latex(&b, "x [2cm]");
    cr_expect_str_eq(lx_buf_str(&b), "x [2cm]");
    /* \\ also takes a star (\\*: no page break), and both it and \midrule look
    ** for their * or [ past blanks (\@ifnextchar skips spaces; a control byte
    ** is written as one) */
    static const char *const row_start[][2] = {{"*x", "{}*x"}, {" [2cm] x", "{} [2cm] x"}, {"\n*x", "{} *x"},
                                               {"\t [1pt]", "{}  [1pt]"}, {"x*", "x*"}, {" x [1pt]", " x [1pt]"}};
    for (size_t i = 0; i < sizeof row_start / sizeof *row_start; i++) {
        lx_buf_reset(&b);
        lx_esc_latex(&b, row_start[i][0]);
        cr_expect_str_eq(lx_buf_str(&b), row_start[i][1], "latex row start %zu", i);
    }
    lx_buf_free(&b);
}

/* ---- csv --------------------------------------------------------------- */

#define CSV_HEADER "sweep,method,task,length,seed,metric,value,model_key,key\n"
#define OLD_HEADER "sweep,method,task,length,seed,metric,value\n"

static void csv_rows(struct lx_rows *r)
{
    add(r, "a,b", 100, 1, "ppl", 0.1);
    add(r, "say \"hi\"", 100, 1, "ppl", 512);
    add(r, "none", 1000, 2, "range_mass:10-100", NAN);
    add(r, "none", 1000, 2, "tiny", 1e-9);
    add(r, "none", 1000, 2, "sum", 0.1 + 0.2);
    add(r, "none", 1000, 2, "big", 1e20);
    add(r, "none", 1000, 2, "neg", -2.5);
    add(r, "none", 1000, 2, "up", INFINITY);
    add(r, "none", 1000, 2, "down", -INFINITY);
    add(r, "none", 1000, 2, "zero", 0);
    lx_rows_add(r, "s", "x", "gaussian(ranges=[[10,100],[100,1000]])", NULL, NULL, 10, 3, "ppl", 4.25,
                r->n + 1);
}

#define CSV_BODY                                                                \
    "s,\"a,b\",t,100,1,ppl,0.1,,\n"                                               \
    "s,\"say \"\"hi\"\"\",t,100,1,ppl,512,,\n"                                    \
    "s,none,t,1000,2,range_mass:10-100,nan,,\n"                                   \
    "s,none,t,1000,2,tiny,1e-09,,\n"                                              \
    "s,none,t,1000,2,sum,0.30000000000000004,,\n"                                 \
    "s,none,t,1000,2,big,1e+20,,\n"                                               \
    "s,none,t,1000,2,neg,-2.5,,\n"                                                \
    "s,none,t,1000,2,up,inf,,\n"                                                  \
    "s,none,t,1000,2,down,-inf,,\n"                                               \
    "s,none,t,1000,2,zero,0,,\n"                                                  \
    "s,x,\"gaussian(ranges=[[10,100],[100,1000]])\",10,3,ppl,4.25,,\n"

Test(views, csv_exact)
{
    struct lx_rows r = {0};
    csv_rows(&r);
    expect_render(&r, LX_FMT_CSV, NULL, CSV_HEADER CSV_BODY);
    expect_render(&r, LX_FMT_CSV, "range_mass,neg",
                  CSV_HEADER
                  "s,none,t,1000,2,range_mass:10-100,nan,,\n"
                  "s,none,t,1000,2,neg,-2.5,,\n");
    lx_rows_release(&r);
    /* No rows: the header alone. */
    expect_render(&r, LX_FMT_CSV, NULL, CSV_HEADER);
}

static int same_value(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

Test(views, csv_round_trip)
{
    struct lx_rows r = {0};
    csv_rows(&r);
    /* A quoted line break stays inside its field. */
    add(&r, "two\nlines", 5, 6, "ppl", 7);
    struct lx_buf out = {0};
    lx_render(&r, LX_FMT_CSV, NULL, &out);
    write_file(tmp_path, lx_buf_str(&out));
    lx_buf_free(&out);

    struct lx_rows back = {0};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_csv_read(tmp_path, &back, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(back.n, r.n);
    for (int i = 0; i < r.n; i++) {
        const struct lx_row *a = &r.rows[i], *b = &back.rows[i];
        cr_expect_str_eq(b->sweep, a->sweep, "row %d", i);
        cr_expect_str_eq(b->method, a->method, "row %d", i);
        cr_expect_str_eq(b->task, a->task, "row %d", i);
        cr_expect_str_eq(b->metric, a->metric, "row %d", i);
        cr_expect_eq(b->length, a->length, "row %d", i);
        cr_expect_eq(b->seed, a->seed, "row %d", i);
        cr_expect(same_value(a->value, b->value), "row %d: %.17g came back as %.17g", i, a->value, b->value);
        cr_expect_str_eq(b->key, "");
        cr_expect_str_eq(b->commit, "");
        if (i > 0)
            cr_expect_gt(b->run_id, back.rows[i - 1].run_id, "later lines are newer");
    }
    lx_rows_release(&back);
    lx_rows_release(&r);
}

/* Values just below a power of ten need every digit; lx_fmt_num picks the
** decimal count from floor(log10(v)), which rounds up to the next power there,
** and then trips its own round-trip assertion (abort). Enable once fixed. */
Test(views, csv_value_below_power_of_ten)
{
    struct lx_rows r = {0};
    add(&r, "m", 1, 1, "a", nextafter(1000.0, 0.0));
    add(&r, "m", 1, 1, "b", nextafter(1e-3, 0.0));
    expect_render(&r, LX_FMT_CSV, NULL,
                  CSV_HEADER
                  "s,m,t,1,1,a,999.9999999999999,,\n"
                  "s,m,t,1,1,b,0.0009999999999999998,,\n");
    lx_rows_release(&r);
}

Test(views, csv_read_accepts_crlf_and_blank_lines)
{
    write_file(tmp_path, "sweep,method,task,length,seed,metric,value\r\n"
                         "s,\"m,1\",t,100,2,x,1.5\r\n"
                         "\r\n"
                         "s,m,t,200,3,y,nan\r\n");
    struct lx_rows back = {0};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_csv_read(tmp_path, &back, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(back.n, 2);
    cr_expect_str_eq(back.rows[0].method, "m,1");
    cr_expect_eq(back.rows[0].length, 100);
    cr_expect_eq(back.rows[0].seed, 2);
    cr_expect_eq(back.rows[0].value, 1.5);
    cr_expect_str_eq(back.rows[1].metric, "y");
    cr_expect(isnan(back.rows[1].value));
    lx_rows_release(&back);
}

/* Reading `text` fails with LX_EINVAL at `path:line:` with `what` in the message. */
static void expect_csv_error(const char *text, int line, const char *what)
{
    write_file(tmp_path, text);
    struct lx_rows back = {0};
    struct lx_error err = {{0}};
    cr_expect_eq(lx_csv_read(tmp_path, &back, &err), LX_EINVAL, "accepted:\n%s", text);
    char where[96];
    snprintf(where, sizeof where, "%s:%d:", tmp_path, line);
    cr_expect(strncmp(err.msg, where, strlen(where)) == 0, "location: expected '%s', got: %s", where, err.msg);
    cr_expect(strstr(err.msg, what) != NULL, "message: expected '%s' in: %s", what, err.msg);
    lx_rows_release(&back);
}

Test(views, csv_read_errors)
{
    expect_csv_error("sweep,method,task,length,seed,metric,val\ns,m,t,1,1,x,1\n", 1,
                     "header must be exactly sweep,method,task,length,seed,metric,value");
    expect_csv_error("method,sweep,task,length,seed,metric,value\n", 1, "header");
    expect_csv_error("sweep,method,task,length,seed,metric\n", 1, "expected 9 fields, found 6");
    expect_csv_error(OLD_HEADER "s,m,t,1,1,x,1\ns,m,t,1,1,x\n", 3, "expected 7 fields, found 6");
    expect_csv_error(OLD_HEADER "s,m,t,1,1,x,1,9\n", 2, "expected 7 fields, found 8");
    expect_csv_error(OLD_HEADER "\ns,m,t,1,1,x\n", 3, "expected 7 fields, found 6");
    expect_csv_error(OLD_HEADER "s,\"m,t,1,1,x,1\n", 2, "unterminated quote");
    expect_csv_error(OLD_HEADER "s,m,t,1.5,1,x,1\n", 2, "length '1.5' is not an integer");
    expect_csv_error(OLD_HEADER "s,m,t,1,one,x,1\n", 2, "seed 'one' is not an integer");
    expect_csv_error(OLD_HEADER "s,m,t,1,1,x,abc\n", 2, "value 'abc' is not a number");
    expect_csv_error(OLD_HEADER "s,m,t,1,1,x,\n", 2, "value '' is not a number");
    /* the current header takes 9 fields a line */
    expect_csv_error(CSV_HEADER "s,m,t,1,1,x,1\n", 2, "expected 9 fields, found 7");
    expect_csv_error("sweep,method,task,length,seed,metric,value,model_key,kee\n", 1, "header");
    /* lines are the file's: a quoted field's line breaks count (the record was counted) */
    expect_csv_error(OLD_HEADER "s,\"m\n(two\nlines)\",t,1,1,x,1\ns,m,t,1,1,x\n", 5, "expected 7 fields, found 6");
    expect_csv_error(OLD_HEADER "s,\"m\r\nx\",t,1,1,x,1\r\ns,m,t,1.5,1,x,1\r\n", 4, "length '1.5'");
    /* a series export (`lenx table --series`, whose header docs/results.md#series gives) is named as one */
    expect_csv_error("sweep,method,task,length,seed,series,x,y,model_key,key\ns,m,t,1,1,n,1,2,k,k\n", 1,
                     "a series export (`lenx table --series`); compare reads a metric export");
}

/* Numbers a tidy CSV never holds are refused, naming the field and its text:
** a length or seed outside the sweep bounds of docs/config.md (converting
** 1e30 to a long is undefined), a value past a double's range (1e999 read as
** inf), a blank before a number; and text after a closing quote, which ended
** the record there. `lenx table --format csv` writes inf, -inf and nan. */
Test(views, csv_read_refuses_numbers_a_csv_never_holds)
{
    expect_csv_error(OLD_HEADER "s,m,t,1e30,1,x,1\n", 2, "length '1e30'");
    expect_csv_error(OLD_HEADER "s,m,t,-16,1,x,1\n", 2, "length '-16'");
    expect_csv_error(OLD_HEADER "s,m,t,0,1,x,1\n", 2, "length '0'");
    expect_csv_error(OLD_HEADER "s,m,t, 16,1,x,1\n", 2, "length ' 16'");
    expect_csv_error(OLD_HEADER "s,m,t,16,-1,x,1\n", 2, "seed '-1'");
    expect_csv_error(OLD_HEADER "s,m,t,16,1e13,x,1\n", 2, "seed '1e13'");
    expect_csv_error(OLD_HEADER "s,m,t,16,1,x,1e999\n", 2, "value '1e999'");
    expect_csv_error(OLD_HEADER "s,m,t,16,1,x,-1e999\n", 2, "value '-1e999'");
    expect_csv_error(OLD_HEADER "s,m,t,16,1,x, 1\n", 2, "value ' 1'");
    expect_csv_error(OLD_HEADER "s,\"m\"x,t,16,1,x,1\n", 2, "field 2: text after its closing quote");
    expect_csv_error(OLD_HEADER "s,m,t,16,1,x,\"1\" \n", 2, "field 7: text after its closing quote");
    /* the bounds themselves, and what the writer writes, are read */
    write_file(tmp_path, OLD_HEADER "s,m,t,1,0,x,inf\ns,m,t,1000000000000,1000000000000,x,-inf\n"
                         "s,m,t,16,1,x,4.9406564584124654e-324\n");
    struct lx_rows back = {0};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_csv_read(tmp_path, &back, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(back.n, 3);
    cr_expect_eq(back.rows[1].length, 1000000000000L);
    cr_expect_eq(back.rows[1].seed, 1000000000000L);
    cr_expect(isinf(back.rows[0].value) && back.rows[0].value > 0);
    cr_expect(isinf(back.rows[1].value) && back.rows[1].value < 0);
    cr_expect_eq(back.rows[2].value, 4.9406564584124654e-324, "the smallest subnormal is a value");
    lx_rows_release(&back);
}

/* A NUL byte is refused at its line: the text ended there and the rows after
** it were dropped silently, the file read as shorter than it is. */
Test(views, csv_read_refuses_a_nul_byte)
{
    static const char text[] = OLD_HEADER "s,m,t,1,1,x,1\ns,m,t,2,1,x,\0002\ns,m,t,3,1,x,3\n";
    FILE *f = fopen(tmp_path, "wb");
    cr_assert(f != NULL);
    fwrite(text, 1, sizeof text - 1, f);
    fclose(f);
    struct lx_rows back = {0};
    struct lx_error err = {{0}};
    cr_expect_eq(lx_csv_read(tmp_path, &back, &err), LX_EINVAL, "read %d rows", back.n);
    char where[96];
    snprintf(where, sizeof where, "%s:3: a NUL byte", tmp_path);
    cr_expect(strncmp(err.msg, where, strlen(where)) == 0, "expected '%s' in: %s", where, err.msg);
    lx_rows_release(&back);
}

Test(views, csv_read_missing_file)
{
    unlink(tmp_path);
    struct lx_rows back = {0};
    struct lx_error err = {{0}};
    cr_expect_eq(lx_csv_read(tmp_path, &back, &err), LX_EIO);
    cr_expect(strstr(err.msg, tmp_path) != NULL, "%s", err.msg);
    cr_expect_eq(back.n, 0);
}

/* ---- json -------------------------------------------------------------- */

Test(views, json_exact)
{
    struct lx_rows r = {0};
    add(&r, "none", 100, 1, "ppl", 1.5);
    add(&r, "q\"x", 1000, 2, "acc", NAN);
    expect_render(&r, LX_FMT_JSON, NULL,
                  "[\n"
                  "  {\"sweep\": \"s\", \"method\": \"none\", \"task\": \"t\", \"length\": 100, "
                  "\"seed\": 1, \"metric\": \"ppl\", \"value\": 1.5, \"model_key\": null, \"key\": null},\n"
                  "  {\"sweep\": \"s\", \"method\": \"q\\\"x\", \"task\": \"t\", \"length\": 1000, "
                  "\"seed\": 2, \"metric\": \"acc\", \"value\": null, \"model_key\": null, \"key\": null}\n"
                  "]\n");
    expect_render(&r, LX_FMT_JSON, "acc",
                  "[\n"
                  "  {\"sweep\": \"s\", \"method\": \"q\\\"x\", \"task\": \"t\", \"length\": 1000, "
                  "\"seed\": 2, \"metric\": \"acc\", \"value\": null, \"model_key\": null, \"key\": null}\n"
                  "]\n");
    expect_render(&r, LX_FMT_JSON, "nothing", "[]\n");
    lx_rows_release(&r);
    expect_render(&r, LX_FMT_JSON, NULL, "[]\n");
}

/* ---- filters and formats ----------------------------------------------- */

Test(views, metric_matches)
{
    cr_expect(lx_metric_matches(NULL, "anything"));
    cr_expect(lx_metric_matches(NULL, "range_mass:10-100"));
    cr_expect(lx_metric_matches("range_mass", "range_mass"));
    cr_expect(lx_metric_matches("range_mass", "range_mass:10-100"));
    cr_expect(!lx_metric_matches("range_mass", "range_mass_se"));
    cr_expect(!lx_metric_matches("range_mass", "range"));
    cr_expect(!lx_metric_matches("range", "range_mass"));
    cr_expect(!lx_metric_matches("range", "range_mass:10-100"));
    cr_expect(lx_metric_matches("range_mass:10-100", "range_mass:10-100"));
    cr_expect(!lx_metric_matches("range_mass:10-100", "range_mass"));
    cr_expect(!lx_metric_matches("range_mass:10-100", "range_mass:100-1000"));
    cr_expect(lx_metric_matches("ppl_se", "ppl_se"));
    cr_expect(!lx_metric_matches("ppl", "ppl_se"));
    /* Lists. */
    cr_expect(lx_metric_matches("ppl,range_mass", "ppl"));
    cr_expect(lx_metric_matches("ppl,range_mass", "range_mass"));
    cr_expect(lx_metric_matches("ppl,range_mass", "range_mass:1-2"));
    cr_expect(!lx_metric_matches("ppl,range_mass", "entropy"));
    cr_expect(!lx_metric_matches("ppl,range_mass", "pp"));
    cr_expect(!lx_metric_matches("ppl,range_mass", "ppl,range_mass"));
    cr_expect(lx_metric_matches("a,b,entropy", "entropy"));
    cr_expect(lx_metric_matches("ppl,", "ppl"));
}

Test(views, format_parse)
{
    cr_expect_eq(lx_format_parse("md"), LX_FMT_MD);
    cr_expect_eq(lx_format_parse("csv"), LX_FMT_CSV);
    cr_expect_eq(lx_format_parse("latex"), LX_FMT_LATEX);
    cr_expect_eq(lx_format_parse("json"), LX_FMT_JSON);
    cr_expect_eq(lx_format_parse("html"), -1);
    cr_expect_eq(lx_format_parse("MD"), -1);
    cr_expect_eq(lx_format_parse("md "), -1);
    cr_expect_eq(lx_format_parse(""), -1);
}

/* ---- compare ----------------------------------------------------------- */

static void cell(struct lx_rows *r, const char *sweep, long length, long seed, const char *metric, double v,
                 long run_id)
{
    lx_rows_add(r, sweep, "m", "t", NULL, NULL, length, seed, metric, v, run_id);
}

/* Compare; *n_moved counts moved values, *n_common compared values. */
static void run_compare(const struct lx_rows *base, const struct lx_rows *head, double atol, double rtol,
                        struct lx_buf *out, int *n_moved, int *n_common)
{
    struct lx_compare_opts o = {.rtol = rtol, .atol = atol};
    struct lx_compare_counts c = {-1, -1, -1, -1, -1, -1};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_compare(base, head, &o, out, &c, &err), LX_OK, "%s", err.msg);
    *n_moved = c.n_moved;
    *n_common = c.n_values;
}

Test(compare, identical_sets)
{
    struct lx_rows b = {0}, h = {0};
    cell(&b, "s", 100, 1, "ppl", 1.5, 1);
    cell(&b, "s", 100, 2, "ppl", NAN, 2);
    cell(&b, "s", 1000, 1, "ppl", -3, 3);
    cell(&b, "s", 1000, 1, "range_mass:10-100", 0.25, 4);
    /* Sweep names are not part of a cell's identity. */
    for (int i = 0; i < b.n; i++) {
        const struct lx_row *w = &b.rows[i];
        lx_rows_add(&h, "other", w->method, w->task, NULL, NULL, w->length, w->seed, w->metric, w->value,
                    100 + i);
    }
    struct lx_buf out = {0};
    int moved, common;
    run_compare(&b, &h, 1e-9, 1e-6, &out, &moved, &common);
    cr_expect_eq(moved, 0);
    cr_expect_eq(common, 4);
    cr_expect_str_eq(lx_buf_str(&out),
                     "4 values in 3 cells compared, 0 moved beyond atol 1e-09 + rtol 1e-06·|base|; "
                     "0 values only in base, 0 only in head\n");
    lx_buf_free(&out);
    lx_rows_release(&b);
    lx_rows_release(&h);
}

Test(compare, tolerance_boundary)
{
    /* atol 0.5, rtol 0.25: moved when |head - base| > 0.5 + 0.25·|base|.
    ** Every number is a short binary fraction, so the boundary is exact. */
    static const struct {
        long length, seed;
        double base, head;      /* tolerance; moved? */
    } cases[] = {
        {100, 1, 1.0, 1.75},    /* 0.75, diff 0.75: on the boundary, not moved */
        {100, 2, 1.0, 1.875},   /* 0.75, diff 0.875: moved */
        {200, 1, -2.0, -3.0},   /* 1.0, diff 1.0: not moved */
        {200, 2, -2.0, -3.25},  /* 1.0, diff 1.25: moved */
        {300, 1, 4.0, 4.0},     /* unchanged */
        {300, 2, 1.0, 1.25},    /* 0.75, diff 0.25: not moved */
        {400, 1, 0.0, -0.5},    /* atol alone 0.5, diff 0.5: not moved */
        {400, 2, 0.0, 0.625},   /* 0.5, diff 0.625: moved */
    };
    struct lx_rows b = {0}, h = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cell(&b, "s", cases[i].length, cases[i].seed, "x", cases[i].base, (long)i + 1);
        cell(&h, "s", cases[i].length, cases[i].seed, "x", cases[i].head, (long)i + 1);
    }
    struct lx_buf out = {0};
    int moved, common;
    run_compare(&b, &h, 0.5, 0.25, &out, &moved, &common);
    cr_expect_eq(moved, 3);
    cr_expect_eq(common, 8);
    cr_expect_str_eq(lx_buf_str(&out),
                     "| task | method | length | seed | metric | base | head | diff |\n"
                     "|---|---|---:|---:|---|---:|---:|---:|\n"
                     "| t | m | 100 | 2 | x | 1 | 1.875 | +0.875 |\n"
                     "| t | m | 200 | 2 | x | -2 | -3.25 | -1.25 |\n"
                     "| t | m | 400 | 2 | x | 0 | 0.625 | +0.625 |\n"
                     "\n"
                     "8 values in 8 cells compared, 3 moved beyond atol 0.5 + rtol 0.25·|base|; "
                     "0 values only in base, 0 only in head\n");
    lx_buf_free(&out);
    lx_rows_release(&b);
    lx_rows_release(&h);
}

/* compare's table of moved cells is Markdown too: a task, method or metric holding a bar or dollars (a
** name from a user's YAML or a merged store) is escaped as in `table --format md`, and the row keeps its
** eight cells. */
Test(compare, moved_table_escapes_names_as_markdown)
{
    struct lx_rows b = {0}, h = {0};
    lx_rows_add(&b, "s", "pi($s$)|x", "t|$u$", NULL, NULL, 100, 1, "acc_", 1, 1);
    lx_rows_add(&h, "s", "pi($s$)|x", "t|$u$", NULL, NULL, 100, 1, "acc_", 2, 1);
    struct lx_buf out = {0};
    int moved, common;
    run_compare(&b, &h, 0, 0, &out, &moved, &common);
    cr_expect_eq(moved, 1);
    cr_expect(strstr(lx_buf_str(&out), "\n| t\\|\\$u\\$ | pi(\\$s\\$)\\|x | 100 | 1 | acc\\_ | 1 | 2 | +1 |\n") != NULL,
              "%s", lx_buf_str(&out));
    lx_buf_free(&out);
    lx_rows_release(&b);
    lx_rows_release(&h);
}

Test(compare, nan_and_inf)
{
    struct lx_rows b = {0}, h = {0};
    cell(&b, "s", 100, 1, "x", NAN, 1);
    cell(&h, "s", 100, 1, "x", NAN, 1);        /* NaN vs NaN: not moved */
    cell(&b, "s", 100, 2, "x", NAN, 2);
    cell(&h, "s", 100, 2, "x", 1, 2);          /* NaN -> number: moved */
    cell(&b, "s", 100, 3, "x", 1, 3);
    cell(&h, "s", 100, 3, "x", NAN, 3);        /* number -> NaN: moved */
    cell(&b, "s", 100, 4, "x", INFINITY, 4);
    cell(&h, "s", 100, 4, "x", INFINITY, 4);   /* inf vs inf: not moved */
    cell(&b, "s", 100, 5, "x", INFINITY, 5);
    cell(&h, "s", 100, 5, "x", -INFINITY, 5);  /* inf -> -inf: moved */
    struct lx_buf out = {0};
    int moved, common;
    run_compare(&b, &h, 1e-9, 1e-6, &out, &moved, &common);
    cr_expect_eq(moved, 3);
    cr_expect_eq(common, 5);
    const char *s = lx_buf_str(&out);
    cr_expect(strstr(s, "| t | m | 100 | 2 | x | nan | 1 |") != NULL, "%s", s);
    cr_expect(strstr(s, "| t | m | 100 | 3 | x | 1 | nan |") != NULL, "%s", s);
    cr_expect(strstr(s, "| t | m | 100 | 5 | x | inf | -inf |") != NULL, "%s", s);
    cr_expect(strstr(s, "| 100 | 1 |") == NULL, "%s", s);
    cr_expect(strstr(s, "| 100 | 4 |") == NULL, "%s", s);
    cr_expect(strstr(s, "\n5 values in 5 cells compared, 3 moved") != NULL, "%s", s);
    lx_buf_free(&out);
    lx_rows_release(&b);
    lx_rows_release(&h);
}

Test(compare, one_sided_rows_counted_not_moved)
{
    struct lx_rows b = {0}, h = {0};
    cell(&b, "s", 100, 1, "x", 1, 1);          /* only in base */
    cell(&b, "s", 200, 1, "x", 2, 2);
    cell(&h, "s", 200, 1, "x", 2, 1);
    cell(&h, "s", 300, 1, "x", 1e9, 2);        /* only in head */
    cell(&h, "s", 200, 1, "y", 1e9, 3);        /* another metric: another cell */
    struct lx_buf out = {0};
    int moved, common;
    run_compare(&b, &h, 0, 0, &out, &moved, &common);
    cr_expect_eq(moved, 0);
    cr_expect_eq(common, 1);
    cr_expect_str_eq(lx_buf_str(&out),
                     "1 values in 1 cells compared, 0 moved beyond atol 0 + rtol 0·|base|; "
                     "1 values only in base, 2 only in head\n");
    lx_buf_free(&out);
    lx_rows_release(&b);
    lx_rows_release(&h);

    /* Nothing on either side. */
    run_compare(&b, &h, 0, 0, &out, &moved, &common);
    cr_expect_eq(moved, 0);
    cr_expect_eq(common, 0);
    cr_expect_str_eq(lx_buf_str(&out),
                     "0 values in 0 cells compared, 0 moved beyond atol 0 + rtol 0·|base|; "
                     "0 values only in base, 0 only in head\n");
    lx_buf_free(&out);
}

/* One cell stored in several sweeps: the same run key in each. */
static void keyed_cell(struct lx_rows *r, const char *sweep, double v, long run_id)
{
    lx_rows_add(r, sweep, "m", "t", "k1", NULL, 100, 1, "x", v, run_id);
}

Test(compare, duplicates_keep_newest_run)
{
    struct lx_rows b = {0}, h = {0};
    /* Added newest first, so position does not decide. */
    keyed_cell(&b, "new", 1.0, 9);
    keyed_cell(&b, "old", 5.0, 2);
    keyed_cell(&h, "new", 1.0, 10);
    keyed_cell(&h, "old", 9.0, 3);
    struct lx_buf out = {0};
    int moved, common;
    run_compare(&b, &h, 0, 0, &out, &moved, &common);
    cr_expect_eq(moved, 0);
    cr_expect_eq(common, 1);
    cr_expect_str_eq(lx_buf_str(&out),
                     "1 values in 1 cells compared, 0 moved beyond atol 0 + rtol 0·|base|; "
                     "0 values only in base, 0 only in head\n");
    lx_buf_free(&out);
    lx_rows_release(&h);

    /* The newest head differs from the newest base: moved, and it is the
    ** newest values that are printed. */
    keyed_cell(&h, "old", 1.0, 3);
    keyed_cell(&h, "new", 2.0, 10);
    run_compare(&b, &h, 0, 0, &out, &moved, &common);
    cr_expect_eq(moved, 1);
    cr_expect_eq(common, 1);
    cr_expect_str_eq(lx_buf_str(&out),
                     "| task | method | length | seed | metric | base | head | diff |\n"
                     "|---|---|---:|---:|---|---:|---:|---:|\n"
                     "| t | m | 100 | 1 | x | 1 | 2 | +1 |\n"
                     "\n"
                     "1 values in 1 cells compared, 1 moved beyond atol 0 + rtol 0·|base|; "
                     "0 values only in base, 0 only in head\n");
    lx_buf_free(&out);
    lx_rows_release(&b);
    lx_rows_release(&h);
}

/* A cell is (task, method, model key, length, seed) field by field: task
** "x|y" with method "z" is another cell than task "x" with method "y|z" (a
** store's strings may hold any byte). Both in one side are two cells, not two
** configurations of one; across sides they do not match. */
Test(compare, a_bar_in_a_name_is_part_of_the_name)
{
    struct lx_rows b = {0}, h = {0};
    lx_rows_add(&b, "s", "z", "x|y", "k1", NULL, 16, 1, "acc", 0.5, 1);
    lx_rows_add(&b, "s", "y|z", "x", "k2", NULL, 16, 1, "acc", 0.7, 2);
    lx_rows_add(&h, "s", "z", "x|y", "k1", NULL, 16, 1, "acc", 0.5, 1);
    lx_rows_add(&h, "s", "y|z", "x", "k2", NULL, 16, 1, "acc", 0.7, 2);
    struct lx_buf out = {0};
    int moved, common;
    run_compare(&b, &h, 0, 0, &out, &moved, &common);
    cr_expect_eq(common, 2, "%s", lx_buf_str(&out));
    cr_expect_eq(moved, 0, "%s", lx_buf_str(&out));
    lx_rows_release(&h);
    h = (struct lx_rows){0};
    lx_rows_add(&h, "s", "y|z", "x", "k2", NULL, 16, 1, "acc", 0.5, 1);
    lx_buf_reset(&out);
    lx_rows_release(&b);
    b = (struct lx_rows){0};
    lx_rows_add(&b, "s", "z", "x|y", "k1", NULL, 16, 1, "acc", 0.5, 1);
    run_compare(&b, &h, 0, 0, &out, &moved, &common);
    cr_expect_eq(common, 0, "two cells matched: %s", lx_buf_str(&out));
    cr_expect(strstr(lx_buf_str(&out), "1 values only in base, 1 only in head") != NULL, "%s", lx_buf_str(&out));
    lx_buf_free(&out);
    lx_rows_release(&b);
    lx_rows_release(&h);
}

/* Issue 12: one name, two configurations. Two rows with the same identity
** and different run keys (a changed default behind one canonical string), or
** two CSV lines without keys, are refused, naming both; never averaged or
** silently picked from. */
Test(compare, two_configurations_of_one_cell_are_refused)
{
    struct lx_rows b = {0}, h = {0};
    lx_rows_add(&b, "s", "m", "t", "k1", NULL, 100, 1, "x", 1.0, 1);
    lx_rows_add(&b, "s", "m", "t", "k2", NULL, 100, 1, "x", 2.0, 2);
    lx_rows_add(&h, "s", "m", "t", "k1", NULL, 100, 1, "x", 1.0, 1);
    struct lx_buf out = {0};
    struct lx_compare_opts o = {.base_name = "B.csv"};
    struct lx_compare_counts c;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_compare(&b, &h, &o, &out, &c, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "B.csv holds two configurations of one cell") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "run key k1 (1)") && strstr(err.msg, "run key k2 (2)"), "%s", err.msg);
    lx_rows_release(&b);
    /* CSV lines carry no key: named by line */
    lx_rows_add(&b, "s", "m", "t", NULL, NULL, 100, 1, "x", 1.0, 2);
    lx_rows_add(&b, "s", "m", "t", NULL, NULL, 100, 1, "x", 3.0, 7);
    cr_expect_eq(lx_compare(&h, &b, &o, &out, &c, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "head holds two configurations") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "line 2 (1)") && strstr(err.msg, "line 7 (3)"), "%s", err.msg);
    lx_buf_free(&out);
    lx_rows_release(&b);
    lx_rows_release(&h);
}

/* Model keys are part of a cell when both sides know them; a side that does
** not (an older CSV) is matched without them, and the summary says so. */
Test(compare, model_keys_match_cells_when_both_sides_know_them)
{
    struct lx_rows b = {0}, h = {0};
    lx_rows_add(&b, "s", "m @t", "t", "k1", NULL, 100, 1, "x", 1.0, 1);
    lx_rows_set_origin(&b, 0, "aaaaaaaaaaaaaaaa", NULL);
    lx_rows_add(&b, "s", "m @t", "t", "k2", NULL, 100, 1, "x", 5.0, 2);
    lx_rows_set_origin(&b, 1, "bbbbbbbbbbbbbbbb", NULL);
    lx_rows_add(&h, "s", "m @t", "t", "k2", NULL, 100, 1, "x", 6.0, 1);
    lx_rows_set_origin(&h, 0, "bbbbbbbbbbbbbbbb", NULL);
    struct lx_buf out = {0};
    int moved, common;
    run_compare(&b, &h, 0, 0, &out, &moved, &common);
    cr_expect_eq(common, 1);
    cr_expect_eq(moved, 1);
    cr_expect_str_eq(lx_buf_str(&out),
                     "| task | method | length | seed | metric | base | head | diff |\n"
                     "|---|---|---:|---:|---|---:|---:|---:|\n"
                     "| t | m @t [bbbbbbbb] | 100 | 1 | x | 5 | 6 | +1 |\n"
                     "\n"
                     "1 values in 1 cells compared, 1 moved beyond atol 0 + rtol 0·|base|; "
                     "1 values only in base, 0 only in head\n");
    lx_buf_free(&out);
    /* head unknown: matched without model keys, and base's two versions collide */
    lx_rows_set_origin(&h, 0, NULL, NULL);
    struct lx_compare_opts o = {0};
    struct lx_compare_counts c;
    struct lx_error err = {{0}};
    cr_expect_eq(lx_compare(&b, &h, &o, &out, &c, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "base holds two configurations") != NULL, "%s", err.msg);
    /* with one version in base it matches, and the summary says how */
    lx_rows_release(&b);
    lx_rows_add(&b, "s", "m @t", "t", "k2", NULL, 100, 1, "x", 6.0, 2);
    lx_rows_set_origin(&b, 0, "bbbbbbbbbbbbbbbb", NULL);
    run_compare(&b, &h, 0, 0, &out, &moved, &common);
    cr_expect_eq(common, 1);
    cr_expect(strstr(lx_buf_str(&out), "(model keys unknown in head, a CSV from an older lenx: cells matched "
                                       "without them)\n") != NULL, "%s", lx_buf_str(&out));
    lx_buf_free(&out);
    lx_rows_release(&b);
    lx_rows_release(&h);
}

/* ---- one name, several configurations ------------------------- */

/* Labels of one configuration resolved per length (scale=1 at 100, 64 at
** 1000) beside another configuration whose label at 1000 is the first's at
** 100: the first merges to one row, its tag after the merged label (it read
** "m(s=1) [config aaaaaaaa];64)"), the second keeps its own. */
Test(views, a_merged_label_keeps_its_tag_at_the_end)
{
    struct lx_rows r = {0};
    lx_rows_add(&r, "s", "m(s=1)", "t", "k1", NULL, 100, 1, "ppl", 2, 1);
    lx_rows_set_origin(&r, 0, "", "aaaaaaaaaaaaaaaa");
    lx_rows_add(&r, "s", "m(s=64)", "t", "k2", NULL, 1000, 1, "ppl", 3, 2);
    lx_rows_set_origin(&r, 1, "", "aaaaaaaaaaaaaaaa");
    lx_rows_add(&r, "s", "m(s=1)", "t", "k3", NULL, 1000, 1, "ppl", 4, 3);
    lx_rows_set_origin(&r, 2, "", "bbbbbbbbbbbbbbbb");
    int tagged;
    char **label = lx_row_labels(&r, &tagged);
    cr_expect(tagged);
    cr_expect_str_eq(label[0], "m(s=1;64) [config aaaaaaaa]");
    cr_expect_str_eq(label[1], "m(s=1;64) [config aaaaaaaa]");
    cr_expect_str_eq(label[2], "m(s=1) [config bbbbbbbb]");
    lx_row_labels_free(label, r.n);
    lx_rows_release(&r);
}

/* A row of method "rope @t" with a model key and a configuration hash. */
static void add_origin(struct lx_rows *r, long seed, double v, const char *model_key, const char *config)
{
    lx_rows_add(r, "s", "rope @t", "t", NULL, NULL, 32, seed, "ppl", v, r->n + 1);
    lx_rows_set_origin(r, r->n - 1, model_key, config);
}

Test(views, md_configurations_are_never_pooled)
{
    struct lx_rows r = {0};
    /* A model retrained under the same name: two configurations, one model
    ** key each. Shown apart, tagged with the model key prefix, not "n=2". */
    add_origin(&r, 1, 2, "aaaaaaaa11111111", "c1c1c1c1c1c1c1c1");
    add_origin(&r, 1, 4, "bbbbbbbb22222222", "c2c2c2c2c2c2c2c2");
    expect_render(&r, LX_FMT_MD, NULL,
                  "### s · t · ppl\n\n| method | 32 |\n|---|---:|\n"
                  "| rope @t [aaaaaaaa] | 2 |\n| rope @t [bbbbbbbb] | 4 |\n\n"
                  "[…]: one method name, cells of several configurations (a model retrained under the same name, "
                  "or changed settings): the model key prefix, or a configuration hash. `lenx rm --not-in CONFIG` "
                  "removes cells a config no longer plans.\n");
    lx_rows_release(&r);
    /* Seeds: one configuration, a model per seed. Pooled as seeds: mean 3,
    ** sd sqrt(((2-3)^2 + (4-3)^2) / 1) = sqrt(2); the t interval's half-width
    ** t(0.975; 1) sd / sqrt(2) = 12.706: [-9.706, 15.71]. */
    add_origin(&r, 1, 2, "aaaaaaaa11111111", "c1c1c1c1c1c1c1c1");
    add_origin(&r, 2, 4, "bbbbbbbb22222222", "c1c1c1c1c1c1c1c1");
    expect_render(&r, LX_FMT_MD, NULL, "### s · t · ppl\n\n| method | 32 |\n|---|---:|\n| rope @t | 3 [-9.706, 15.71] (n=2) |\n\n"
                  INTERVALS);
    /* A third configuration on model a's key (a changed default): the model
    ** keys no longer tell them apart, so every variant shows its config hash;
    ** the two seeds of c1 still pool. */
    add_origin(&r, 1, 8, "aaaaaaaa11111111", "c3c3c3c3c3c3c3c3");
    expect_render(&r, LX_FMT_MD, NULL,
                  "### s · t · ppl\n\n| method | 32 |\n|---|---:|\n"
                  "| rope @t [config c1c1c1c1] | 3 [-9.706, 15.71] (n=2) |\n| rope @t [config c3c3c3c3] | 8 |\n\n"
                  INTERVALS
                  "[…]: one method name, cells of several configurations (a model retrained under the same name, "
                  "or changed settings): the model key prefix, or a configuration hash. `lenx rm --not-in CONFIG` "
                  "removes cells a config no longer plans.\n");
    /* csv: every row with its model key and run key */
    struct lx_rows k = {0};
    lx_rows_add(&k, "s", "rope @t", "t", "0123456789abcdef", NULL, 32, 1, "ppl", 2, 1);
    lx_rows_set_origin(&k, 0, "aaaaaaaa11111111", "c1");
    expect_render(&k, LX_FMT_CSV, NULL, CSV_HEADER "s,rope @t,t,32,1,ppl,2,aaaaaaaa11111111,0123456789abcdef\n");
    expect_render(&k, LX_FMT_JSON, NULL,
                  "[\n  {\"sweep\": \"s\", \"method\": \"rope @t\", \"task\": \"t\", \"length\": 32, \"seed\": 1, "
                  "\"metric\": \"ppl\", \"value\": 2, \"model_key\": \"aaaaaaaa11111111\", \"key\": \"0123456789abcdef\"}\n]\n");
    lx_rows_release(&k);
    lx_rows_release(&r);
}
