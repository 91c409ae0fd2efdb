/*
** tests/test_grade.c - `lenx grade` through the binary: every scorer's peer
** table (tests/ref/scorers_ref.jsonl, the peers' own rules run in Python)
** graded line by line, the mean and null rate, a preset's peer field names,
** and malformed input (exit 2 naming the line).
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness/core/json.h"
#include "tests/shell.h"
#include "tasks/scorers.h"

static char out[1 << 16];

static void setup(void)
{
    shell_setup("grade");
    (void)sql_long;     /* shell.h's; this suite reads no store */
    (void)exists;
}

/* grade's stdout as a document; fails the test when it does not parse. */
static struct lx_json *grade_json(const char *text)
{
    struct lx_json *doc = NULL;
    struct lx_error err;
    cr_assert_eq(lx_json_parse(&doc, text, strlen(text), "grade output", &err), LX_OK, "%s\n%s", err.msg, text);
    return doc;
}

static double num(const struct lx_json *doc, const char *key)
{
    double x = NAN;
    struct lx_error err;
    cr_assert_eq(lx_json_num(doc, lx_json_member(lx_json_root(doc), key), &x, &err), LX_OK, "%s", err.msg);
    return x;
}

/* The summary fields of grade's output. */
static void expect_summary(const struct lx_json *doc, double mean, double null_rate, long n, const char *what)
{
    cr_expect_eq(num(doc, "n"), (double)n, "%s", what);
    cr_expect_float_eq(num(doc, "mean"), mean, 1e-15, "%s", what);
    cr_expect_float_eq(num(doc, "null_rate"), null_rate, 1e-15, "%s", what);
}

Test(grade, every_scorer_gives_its_peers_table, .init = setup, .fini = teardown)
{
    for (int i = 0; i < lx_n_scorers; i++) {
        const char *name = lx_scorers[i].name;
        cr_assert_eq(sh(NULL, 0, "grep -F '\"scorer\": \"%s\"' \"$R/tests/ref/scorers_ref.jsonl\" > p.jsonl", name), 0);
        cr_assert_eq(sh(out, sizeof out, "$L grade --scorer %s --predictions p.jsonl", name), 0, "%s", out);
        struct lx_json *doc = grade_json(out);
        const struct lx_jv *scores = lx_json_member(lx_json_root(doc), "scores");
        /* the expected column, from the same rows */
        char want[1 << 16];
        cr_assert_eq(sh(want, sizeof want, "sed 's/.*\"score\": \\([0-9.e-]*\\), \"null\": \\([01]\\)}$/\\1 \\2/' p.jsonl"), 0);
        long n = 0, nulls = 0;
        double sum = 0.0;
        for (char *p = want; *p; n++) {
            char *end;
            double w = strtod(p, &end), got = NAN;
            long null = strtol(end, &p, 10);
            struct lx_error err;
            cr_assert_eq(lx_json_num(doc, lx_json_at(scores, n), &got, &err), LX_OK, "%s row %ld", name, n);
            cr_expect_eq(got, w, "%s row %ld: grade gives %g, the peer's rule %g", name, n, got, w);
            sum += w, nulls += null;
            while (*p == '\n')
                p++;
        }
        cr_expect_geq(n, 30, "%s: %ld rows", name, n);
        cr_expect_eq(lx_json_len(scores), n);
        expect_summary(doc, sum / (double)n, (double)nulls / (double)n, n, name);
        lx_json_free(doc);
    }
}

Test(grade, fractions_mean_and_null_rate, .init = setup, .fini = teardown)
{
    write_file("p.jsonl", "{\"gold\": [\"alpha\", \"beta\", \"gamma\"], \"output\": \"ALPHA and beta\"}\n"
                          "{\"gold\": [\"x\"], \"output\": \"the x\"}\n"
                          "{\"gold\": \"y\", \"output\": \" \\n\\t\"}\n");
    cr_assert_eq(sh(out, sizeof out, "$L grade --scorer ruler_all --predictions p.jsonl"), 0, "%s", out);
    /* 2 of 3 golds, then 1, then nothing to read: mean (2/3 + 1 + 0) / 3 = 5/9 */
    cr_expect(strstr(out, "\"scores\": [0.6666666666666666, 1, 0]") != NULL, "%s", out);
    struct lx_json *doc = grade_json(out);
    expect_summary(doc, 5.0 / 9.0, 1.0 / 3.0, 3, "ruler_all");
    lx_json_free(doc);
}

Test(grade, presets_read_their_peers_field_names, .init = setup, .fini = teardown)
{
    write_file("litm.jsonl", "{\"question\": \"q\", \"answers\": [\"Wilhelm Conrad R\\u00f6ntgen\", \"R\\u00f6ntgen\"], "
                             "\"model_answer\": \" The physicist R\\u00d6NTGEN.\\nWilhelm Conrad R\\u00f6ntgen\"}\n"
                             "{\"answers\": [\"Paris\"], \"model_answer\": \"\\nParis\"}\n");
    cr_assert_eq(sh(out, sizeof out, "$L grade --task mdqa --protocol litm --predictions litm.jsonl"), 0, "%s", out);
    cr_expect(strstr(out, "\"scores\": [1, 0]") != NULL, "%s", out);
    cr_expect(strstr(out, "\"null_rate\": 0.5") != NULL, "the second answer's first line is empty: %s", out);
    write_file("ruler.jsonl", "{\"outputs\": [\"7381\", \"1140\"], \"pred\": \"The numbers are 7381 and 9.\"}\n");
    cr_assert_eq(sh(out, sizeof out, "$L grade --task needle --protocol ruler --predictions ruler.jsonl"), 0, "%s", out);
    cr_expect(strstr(out, "\"scores\": [0.5]") != NULL, "%s", out);
    write_file("lines.jsonl", "{\"expected_number\": 25140, \"output\": \"Line 17 has 25140\"}\n");
    cr_assert_eq(sh(out, sizeof out, "$L grade --task line --protocol longchat --predictions lines.jsonl"), 0, "%s", out);
    cr_expect(strstr(out, "\"scores\": [1]") != NULL, "%s", out);
}

Test(grade, malformed_lines_exit_2_naming_the_line, .init = setup, .fini = teardown)
{
    static const struct {
        const char *line3, *what;
    } bad[] = {
        {"{\"gold\": 1}", "no \"output\""},
        {"{\"gold\": 1, \"output\": 3}", "not a string"},
        {"{\"gold\": [\"a\"], \"output\": \"x\"}", "integer"},
        {"{\"gold\": 1, \"output\": \"x\"", "not JSON at column 25: '}' expected near end of file"},
        {"[1, 2]", "not an object"},
        {"", "not JSON: the line is empty"},
        {"{\"gold\": 1, \"output\": \"x\", \"gold\": 2}\r", "not JSON at column 33: duplicate object key"},
        {"{\"gold\": 1.5, \"output\": \"x\"}", "expected an integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"gold\": 1, \"output\": \"1\"}\n{\"gold\": 2, \"output\": \"2\"}\n%s\n", bad[i].line3);
        write_file("p.jsonl", text);
        int rc = sh(out, sizeof out, "$L grade --scorer first_int --predictions p.jsonl");
        cr_expect_eq(rc, 2, "%s: exit %d\n%s", bad[i].line3, rc, out);
        cr_expect(strstr(out, "p.jsonl:3: ") != NULL, "%s: %s", bad[i].line3, out);
        cr_expect(strstr(out, bad[i].what) != NULL, "%s: expected '%s' in %s", bad[i].line3, bad[i].what, out);
        cr_expect(strstr(out, "\"scores\"") == NULL, "nothing is printed on stdout: %s", out);
        /* one what, where and hint: no parser's message nested in parentheses with its own place and hint */
        cr_expect(strstr(out, "\n  hint: ") && !strstr(out, "(line:") && !strstr(out, "hint: is this a JSON file?)"),
                  "%s: %s", bad[i].line3, out);
    }
    write_file("empty.jsonl", "");
    cr_expect_eq(sh(out, sizeof out, "$L grade --scorer substring --predictions empty.jsonl"), 2, "%s", out);
    cr_expect(strstr(out, "no predictions") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L grade --scorer frist_int --predictions empty.jsonl"), 2, "%s", out);
    cr_expect(strstr(out, "did you mean 'first_int'") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L grade --scorer last_int --task line --protocol longchat "
                                     "--predictions empty.jsonl"), 2, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L grade --task line --protocol litm --predictions empty.jsonl"), 2, "%s", out);
    cr_expect(strstr(out, "mdqa/litm") != NULL, "the hint lists the presets: %s", out);
    cr_expect_eq(sh(out, sizeof out, "$L grade --scorer last_int --predictions missing.jsonl"), 3, "%s", out);
}
