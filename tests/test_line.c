/*
** tests/test_line.c - the line retrieval task (tasks/line.c): exact lengths,
** the record parsed back line by line, unique names and values, the queried
** line moved by depth, determinism, the `lines` and `digits` limits, the
** too-short error, both scorers and the training sampler.
**
** The expected strings are LongChat's (docs/tasks.md#line), written
** out here, not taken from the task's own tables.
*/
#include <criterion/criterion.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/data/corpus.h"
#define FIXTURE_TASK "line"
#include "tests/retrieval_fixture.h"

#define HEADER "Below is a record of lines I want you to remember. Each line begins with 'line <line index>' and " \
               "contains a '<REGISTER_CONTENT>' at the end of the line as a numerical value. For each line index, " \
               "memorize its corresponding <REGISTER_CONTENT>. At the end of the record, I will ask you to " \
               "retrieve the corresponding <REGISTER_CONTENT> of a certain line index. Now the record start:\n\n"
#define Q_LONGCHAT "\nNow the record is over. Tell me what is the <REGISTER_CONTENT> in line %s? I need the number."
#define Q_SHORT "\nTell me what is the <REGISTER_CONTENT> in line %s?"
#define ENDING "\nline %s: REGISTER_CONTENT is <"
#define NAME_MAX_LEN 11     /* the longest adjective and noun have 5 letters */
#define MAX_LINES 2000

/* An instance read back from its text. */
struct parsed {
    long n;                         /* records */
    char name[MAX_LINES][24];       /* (n,) their names */
    char value[MAX_LINES][12];      /* (n,) their values */
    long q;                         /* the queried record */
    long pad;                       /* spaces between the records and the question */
    char *records;                  /* malloc'd: the records' text */
};

/* Parse and check the whole layout: header, records of the form "line
** adj-noun: REGISTER_CONTENT is <digits>\n", spaces, question, ending, answer. */
static void layout(const struct lx_instance *in, int longchat, long digits, struct parsed *o)
{
    char *s = text(in), want[256];
    const char *c = s;
    if (longchat) {
        cr_assert(strncmp(c, HEADER, strlen(HEADER)) == 0, "no header: %.60s", c);
        c += strlen(HEADER);
    }
    const char *rec0 = c;
    for (o->n = 0; strncmp(c, "line ", 5) == 0; o->n++) {
        cr_assert_lt(o->n, MAX_LINES);
        c += 5;
        size_t a = 0, b;
        while (islower((unsigned char)c[a]))
            a++;
        cr_assert(a > 0 && c[a] == '-', "bad name at: %.30s", c);
        for (b = a + 1; islower((unsigned char)c[b]); b++)
            ;
        cr_assert(b > a + 1 && b < sizeof o->name[0], "bad name at: %.30s", c);
        memcpy(o->name[o->n], c, b);
        o->name[o->n][b] = '\0';
        c += b;
        const char *mid = ": REGISTER_CONTENT is <";
        cr_assert(strncmp(c, mid, strlen(mid)) == 0, "bad record at: %.40s", c);
        c += strlen(mid);
        cr_assert(c[0] >= '1' && c[0] <= '9', "value with a leading zero: %.20s", c);
        for (long i = 0; i < digits; i++)
            cr_assert(isdigit((unsigned char)c[i]), "value of fewer than %ld digits: %.20s", digits, c);
        memcpy(o->value[o->n], c, (size_t)digits);
        o->value[o->n][digits] = '\0';
        c += digits;
        cr_assert(c[0] == '>' && c[1] == '\n', "record does not end with '>\\n': %.20s", c);
        c += 2;
    }
    cr_assert_geq(o->n, 1, "no records");
    o->records = calloc(1, (size_t)(c - rec0) + 1);
    memcpy(o->records, rec0, (size_t)(c - rec0));
    for (o->pad = 0; *c == ' '; c++)
        o->pad++;
    /* the question names a record; the ending repeats it; the answer is its value */
    const char *in_line = strstr(c, " in line ");
    cr_assert_not_null(in_line, "no question: %.60s", c);
    char qname[24] = "";
    sscanf(in_line + 9, "%23[a-z-]", qname);
    snprintf(want, sizeof want, longchat ? Q_LONGCHAT : Q_SHORT, qname);
    cr_assert(strncmp(c, want, strlen(want)) == 0, "question '%.100s' is not '%s'", c, want);
    c += strlen(want);
    snprintf(want, sizeof want, ENDING, qname);
    cr_assert(strncmp(c, want, strlen(want)) == 0, "ending '%.60s' is not '%s'", c, want);
    c += strlen(want);
    cr_assert_eq(in->answer_off, 1 + (c - s), "answer_off %ld", in->answer_off);
    cr_assert_str_eq(c, in->gold, "the text does not end with the gold '%s': '%s'", in->gold, c);
    cr_assert_eq((long)strlen(in->gold), digits);
    o->q = -1;
    for (long i = 0; i < o->n; i++) {
        for (long j = 0; j < i; j++) {
            cr_assert_str_neq(o->name[i], o->name[j], "name '%s' repeats", o->name[i]);
            cr_assert_str_neq(o->value[i], o->value[j], "value '%s' repeats", o->value[i]);
        }
        if (strcmp(o->name[i], qname) == 0)
            o->q = i;
    }
    cr_assert_geq(o->q, 0, "the queried name '%s' is not in the record", qname);
    cr_assert_str_eq(in->gold, o->value[o->q], "gold is not the queried line's value");
    free(s);
}

/* A fresh parse result (large: heap). */
static struct parsed *parsed_new(void)
{
    return calloc(1, sizeof(struct parsed));
}

static void parsed_reset(struct parsed *o)
{
    free(o->records);
    memset(o, 0, sizeof *o);
}

Test(line, registered)
{
    struct lx_error err = {{0}};
    const struct lx_task *t = task();
    cr_assert_eq(lx_task_validate(t, &err), LX_OK, "%s", err.msg);
    cr_assert(t->generate && t->train_sample && t->score && t->check && t->split && t->trials);
    cr_assert_eq(t->mode, LX_MODE_CAUSAL);
    cr_assert_str_eq(t->split(NULL), "test");
    void *p = params("");
    long samples, depths;
    t->trials(p, &samples, &depths);
    cr_assert(samples == 20 && depths == 5);
    free(p);
}

Test(line, exact_length_and_layout)
{
    static const long lc[] = {600, 1000, 4096}, sh[] = {160, 256, 1000, 4096};
    static const double depths[] = {0.0, 0.37, 0.5, 1.0};
    void *pl = params(""), *ps = params("template: short");
    struct parsed *o = parsed_new();
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < (t ? 4 : 3); i++)
            for (int d = 0; d < 4; d++) {
                struct lx_instance in;
                long L = t ? sh[i] : lc[i];
                gen(t ? ps : pl, 42, L, d, depths[d], &in);
                layout(&in, !t, 5, o);
                /* as many lines as fit: the pad is shorter than the longest record (46 bytes) plus
                ** the room budgeted for a longer query name */
                long qlen = (long)strlen(o->name[o->q]);
                cr_assert_lt(o->pad, 46 + 2 * (NAME_MAX_LEN - qlen), "length %ld: pad %ld", L, o->pad);
                cr_assert_eq(in.depth, depths[d]);
                cr_assert_leq(in.n - in.answer_off, LX_MAX_ANSWER);
                parsed_reset(o);
                lx_instance_release(&in);
            }
    free(o), free(pl), free(ps);
}

Test(line, depth_moves_the_queried_line)
{
    void *p = params("");
    struct parsed *o = parsed_new();
    long n = -1, prev = -1;
    char *records = NULL;
    for (int d = 0; d <= 10; d++) {
        struct lx_instance in;
        gen(p, 7, 2000, 3, d / 10.0, &in);
        layout(&in, 1, 5, o);
        if (n < 0) {
            n = o->n;
            records = lx_xstrdup(o->records);
            cr_assert_geq(n, 20, "only %ld lines at 2000 tokens", n);
        }
        cr_assert_eq(o->n, n, "the line count changes with depth");
        cr_assert_str_eq(o->records, records, "the records change with depth");
        cr_assert_eq(o->q, (long)floor(d / 10.0 * (double)(n - 1) + 0.5), "depth %g: line %ld of %ld", d / 10.0,
                     o->q, n);
        cr_assert_gt(o->q, prev);
        prev = o->q;
        parsed_reset(o);
        lx_instance_release(&in);
    }
    cr_assert_eq(prev, n - 1, "depth 1 is not the last line");
    free(records), free(o), free(p);
}

Test(line, deterministic)
{
    void *p = params("");
    struct lx_instance a, b;
    gen(p, 1234, 1500, 9, 0.25, &a);
    gen(p, 1234, 1500, 9, 0.25, &b);
    cr_assert_eq(memcmp(a.tok, b.tok, (size_t)a.n * sizeof *a.tok), 0, "same arguments, different tokens");
    cr_assert_str_eq(a.gold, b.gold);
    lx_instance_release(&b);
    gen(p, 1234, 1500, 10, 0.25, &b);
    cr_assert_neq(memcmp(a.tok, b.tok, (size_t)a.n * sizeof *a.tok), 0, "another sample, the same tokens");
    lx_instance_release(&b);
    gen(p, 99, 1500, 9, 0.25, &b);
    cr_assert_neq(memcmp(a.tok, b.tok, (size_t)a.n * sizeof *a.tok), 0, "another key, the same tokens");
    lx_instance_release(&a), lx_instance_release(&b);
    free(p);
}

Test(line, lines_and_digits)
{
    void *p3 = params("lines: 3"), *p9 = params("{digits: 1, lines: 9}"), *p2 = params("{digits: 2, template: short}");
    struct parsed *o = parsed_new();
    struct lx_instance in;
    gen(p3, 5, 1000, 0, 0.5, &in);
    layout(&in, 1, 5, o);
    cr_assert_eq(o->n, 3);
    cr_assert_eq(o->q, 1);
    cr_assert_gt(o->pad, 300, "lines: 3 at 1000 tokens leaves a long pad, not %ld", o->pad);
    parsed_reset(o);
    lx_instance_release(&in);
    gen(p9, 5, 1000, 0, 1.0, &in);      /* every one-digit value once */
    layout(&in, 1, 1, o);
    cr_assert_eq(o->n, 9);
    cr_assert_eq(o->q, 8);
    parsed_reset(o);
    lx_instance_release(&in);
    gen(p2, 5, 2000, 1, 0.0, &in);
    layout(&in, 0, 2, o);
    cr_assert_eq(o->q, 0);
    cr_assert_eq(in.n - in.answer_off, 2);
    parsed_reset(o);
    lx_instance_release(&in);

    const struct lx_task *t = task();
    struct lx_error err = {{0}};
    void *p10 = params("{digits: 1, lines: 10}"), *pd1 = params("digits: 1");
    cr_assert_eq(t->check(p10, 1000, &err), LX_EINVAL);
    cr_assert(strstr(err.msg, "9 distinct values"), "%s", err.msg);
    cr_assert_eq(t->check(pd1, 5000, &err), LX_EINVAL, "9 one-digit values cannot fill 5000 tokens");
    cr_assert(strstr(err.msg, "lines: N"), "%s", err.msg);
    cr_assert_eq(t->generate(pd1, 1, 5000, 0, 0.5, &in, &err), LX_EINVAL);
    cr_assert_null(in.tok);
    free(o), free(p3), free(p9), free(p2), free(p10), free(pd1);
}

Test(line, too_short)
{
    /* BOS, header, one record, question, ending and answer, all with an 11-byte name and 5 digits */
    long rec = (long)strlen("line : REGISTER_CONTENT is <12345>\n") + NAME_MAX_LEN;
    long tail = (long)strlen(ENDING) - 2 + NAME_MAX_LEN + 5;
    long min_lc = 1 + (long)strlen(HEADER) + rec + (long)strlen(Q_LONGCHAT) - 2 + NAME_MAX_LEN + tail;
    long min_sh = 1 + rec + (long)strlen(Q_SHORT) - 2 + NAME_MAX_LEN + tail;
    void *pl = params(""), *ps = params("template: short"), *p4 = params("{template: short, lines: 4}");
    const struct lx_task *t = task();
    struct lx_error err = {{0}};
    struct lx_instance in;
    cr_assert_eq(t->check(pl, min_lc, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(t->check(ps, min_sh, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(t->check(p4, min_sh + 3 * rec, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(t->check(p4, min_sh + 3 * rec - 1, &err), LX_EINVAL);
    cr_assert(strstr(err.msg, "4 lines"), "%s", err.msg);
    cr_assert_eq(t->generate(ps, 1, min_sh - 1, 0, 0.5, &in, &err), LX_EINVAL);
    cr_assert_eq(t->check(pl, min_lc - 1, &err), LX_EINVAL);
    cr_assert_eq(t->generate(pl, 1, min_lc - 1, 0, 0.5, &in, &err), LX_EINVAL);
    cr_assert_null(in.tok);
    char want[64];
    snprintf(want, sizeof want, "minimum %ld", min_lc);
    cr_assert(strstr(err.msg, "too short") && strstr(err.msg, "longchat") && strstr(err.msg, want) &&
              strstr(err.msg, "hint"), "%s", err.msg);
    struct parsed *o = parsed_new();
    for (long s = 0; s < 10; s++) {
        gen(ps, 1, min_sh, s, 0.5, &in);
        layout(&in, 0, 5, o);
        cr_assert_eq(o->n, 1);
        parsed_reset(o);
        lx_instance_release(&in);
    }
    free(o), free(pl), free(ps), free(p4);
}

Test(line, scorer)
{
    void *pf = params(""), *pl = params("scorer: last");
    struct lx_instance in = {.gold = "48213"};
    int (*score)(const void *, const struct lx_instance *, const char *, long) = task()->score;
    cr_assert_eq(score(pf, &in, LIT("48213")), 1);
    cr_assert_eq(score(pf, &in, LIT("48213>")), 1);
    cr_assert_eq(score(pf, &in, LIT(" is <48213> ok")), 1);
    cr_assert_eq(score(pf, &in, LIT("48214")), 0);
    cr_assert_eq(score(pf, &in, LIT("4821>")), 0);
    cr_assert_eq(score(pf, &in, LIT("482135")), 0);
    cr_assert_eq(score(pf, &in, LIT("48213 or 7")), 1);
    cr_assert_eq(score(pf, &in, LIT("7 or 48213")), 0);
    cr_assert_eq(score(pf, &in, LIT("none>")), -1);
    cr_assert_eq(score(pf, &in, LIT("")), -1);
    cr_assert_eq(score(pl, &in, LIT("7 or 48213")), 1);
    cr_assert_eq(score(pl, &in, LIT("48213 or 7")), 0);
    cr_assert_eq(score(pl, &in, LIT("<48213>")), 1);
    cr_assert_eq(score(pl, &in, LIT("none>")), -1);
    cr_assert_eq(lx_answer_last_int(LIT("a1b22c333"), "333"), 1);
    cr_assert_eq(lx_answer_last_int(LIT("a1b22c333x"), "22"), 0);
    free(pf), free(pl);
}

Test(line, train_sample)
{
    void *p = params("template: short");
    const struct lx_task *t = task();
    struct lx_error err = {{0}};
    struct parsed *o = parsed_new();
    double seen[20];
    int distinct = 0;
    for (int s = 0; s < 20; s++) {
        struct lx_instance in, again;
        cr_assert_eq(t->train_sample(p, 77, 256, s, &in, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(in.n, 256);
        cr_assert(in.depth > 0.0 && in.depth < 1.0, "depth %g", in.depth);
        layout(&in, 0, 5, o);
        cr_assert_geq(o->n, 2, "only %ld lines at 256 tokens", o->n);
        parsed_reset(o);
        cr_assert_eq(t->train_sample(p, 77, 256, s, &again, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(memcmp(in.tok, again.tok, 256 * sizeof *in.tok), 0, "train_sample is not pure");
        int dup = 0;
        for (int j = 0; j < s; j++)
            dup |= seen[j] == in.depth;
        distinct += !dup;
        seen[s] = in.depth;
        lx_instance_release(&in), lx_instance_release(&again);
    }
    cr_assert_eq(distinct, 20, "train depths repeat");
    free(o), free(p);
}
