/*
** tests/test_scorers.c - the named answer scorers (tasks/scorers.h) against
** their peers' own definitions: every (output, gold) pair of
** tests/ref/scorers_ref.jsonl, whose expected score and null flag
** tests/ref/scorers_ref.py computed by running each peer's rule in Python
** (leading newlines, several numbers, punctuation, case, Unicode digits and
** letters, the final sigma, articles, empty outputs and empty golds), at
** least 30 pairs a scorer; and the table's contract.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/json.h"
#include "tasks/scorers.h"

#define MAX_GOLDS 8

/* The gold value g as golds (an integer written in decimal). */
static void read_golds(const struct lx_json *doc, const struct lx_jv *g, struct lx_golds *out, const char **s,
                       size_t *len, char *num)
{
    struct lx_error err;
    out->s = s, out->len = len, out->n = 0;
    if (lx_json_type(g) == LX_JSON_INT) {
        int64_t v;
        cr_assert_eq(lx_json_int(doc, g, &v, &err), LX_OK, "%s", err.msg);
        snprintf(num, 32, "%lld", (long long)v);
        s[0] = num, len[0] = strlen(num), out->n = 1;
    } else if (lx_json_type(g) == LX_JSON_STRING) {
        cr_assert_eq(lx_json_str(doc, g, &s[0], &len[0], &err), LX_OK, "%s", err.msg);
        out->n = 1;
    } else
        for (long i = 0; i < lx_json_len(g) && i < MAX_GOLDS; i++, out->n++)
            cr_assert_eq(lx_json_str(doc, lx_json_at(g, i), &s[i], &len[i], &err), LX_OK, "%s", err.msg);
}

Test(scorers, peer_tables)
{
    char path[4096];
    const char *root = getenv("LENX_ROOT");
    snprintf(path, sizeof path, "%s/tests/ref/scorers_ref.jsonl", root ? root : ".");
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    int counts[32] = {0};
    char line[4096];
    long lineno = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        struct lx_json *doc = NULL;
        struct lx_error err;
        cr_assert_eq(lx_json_parse(&doc, line, strlen(line), path, &err), LX_OK, "%s", err.msg);
        const struct lx_jv *r = lx_json_root(doc);
        const char *name, *out;
        size_t n_out;
        double want, null_want;
        cr_assert_eq(lx_json_str(doc, lx_json_member(r, "scorer"), &name, NULL, &err), LX_OK);
        cr_assert_eq(lx_json_str(doc, lx_json_member(r, "output"), &out, &n_out, &err), LX_OK);
        cr_assert_eq(lx_json_num(doc, lx_json_member(r, "score"), &want, &err), LX_OK);
        cr_assert_eq(lx_json_num(doc, lx_json_member(r, "null"), &null_want, &err), LX_OK);
        const struct lx_scorer *s = lx_scorer_find(name);
        cr_assert_not_null(s, "line %ld: no scorer %s", lineno, name);
        struct lx_golds g;
        const char *gs[MAX_GOLDS];
        size_t gl[MAX_GOLDS];
        char num[32];
        read_golds(doc, lx_json_member(r, "gold"), &g, gs, gl, num);
        cr_assert_eq(lx_scorer_check_gold(s, &g, &err), LX_OK, "line %ld: %s", lineno, err.msg);
        int null = -1;
        double got = s->score(out, n_out, &g, &null);
        if (got != want || null != (int)null_want) {
            cr_log_error("line %ld: %s(%s) = %g null %d; the peer's rule gives %g null %g", lineno, name, line, got,
                         null, want, null_want);
            bad++;
        }
        counts[s - lx_scorers]++;
        lx_json_free(doc);
    }
    fclose(f);
    cr_expect_eq(bad, 0, "%ld of %ld pairs differ from the peers' rules", bad, lineno);
    for (int i = 0; i < lx_n_scorers; i++)
        cr_expect_geq(counts[i], 30, "scorer %s has %d pairs in the table, fewer than 30", lx_scorers[i].name,
                      counts[i]);
}

Test(scorers, table)
{
    cr_assert_leq(lx_n_scorers, 32);
    for (int i = 0; i < lx_n_scorers; i++) {
        cr_expect(lx_scorers[i].name && lx_scorers[i].follows && lx_scorers[i].score, "row %d incomplete", i);
        cr_expect_eq(lx_scorer_find(lx_scorers[i].name), &lx_scorers[i]);
        for (int j = 0; j < i; j++)
            cr_expect_neq(strcmp(lx_scorers[i].name, lx_scorers[j].name), 0, "%s twice", lx_scorers[i].name);
    }
    cr_expect_null(lx_scorer_find("first-int"));
    const char *names[] = {"first_int", "last_int", "token_exact", "substring", "ruler_all", "ruler_part",
                           "litm_subspan_em", "topic_contains"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        cr_expect_not_null(lx_scorer_find(names[i]), "%s is missing", names[i]);
}

Test(scorers, gold_checks)
{
    struct lx_error err;
    const char *s[2] = {"12a", "7"};
    size_t len[2] = {3, 1};
    struct lx_golds g = {.n = 1, .s = s, .len = len};
    cr_expect_eq(lx_scorer_check_gold(lx_scorer_find("last_int"), &g, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "integer") != NULL, "%s", err.msg);
    cr_expect_eq(lx_scorer_check_gold(lx_scorer_find("substring"), &g, &err), LX_OK);
    g.s = s + 1, g.len = len + 1;
    cr_expect_eq(lx_scorer_check_gold(lx_scorer_find("first_int"), &g, &err), LX_OK);
    g.n = 0;
    cr_expect_eq(lx_scorer_check_gold(lx_scorer_find("ruler_all"), &g, &err), LX_EINVAL);
}

/* acc_se of a preset: by hand. 0/1 scores give the binomial form bit for bit
** (what every stored acc_se was); RULER's shares of golds found, 0.1 on four
** of ten cases, give their own spread, sqrt((0.004 - 0.0016) / 10), where
** the binomial form said sqrt(0.04 * 0.96 / 10) = 0.062, 4x too wide. */
Test(scorers, standard_error_of_shares)
{
    cr_expect_eq(lx_scores_se(2.0, 2.0, 3.0), sqrt(2.0 / 3.0 * (1.0 - 2.0 / 3.0) / 3.0));
    cr_expect_eq(lx_scores_se(0.0, 0.0, 5.0), 0.0);
    cr_expect_eq(lx_scores_se(5.0, 5.0, 5.0), 0.0);
    double s[10] = {0.1, 0, 0, 0, 0, 0, 0.1, 0, 0.1, 0.1}, sum = 0, sumsq = 0, mean, var = 0;
    for (int i = 0; i < 10; i++)
        sum += s[i], sumsq += s[i] * s[i];
    mean = sum / 10;
    for (int i = 0; i < 10; i++)
        var += (s[i] - mean) * (s[i] - mean) / 10;
    cr_expect_float_eq(lx_scores_se(sum, sumsq, 10), sqrt(var / 10), 1e-15, "%.17g vs %.17g",
                       lx_scores_se(sum, sumsq, 10), sqrt(var / 10));
    cr_expect_float_eq(sqrt(var / 10), sqrt(0.0024 / 10), 1e-15);
}
