/*
** tests/test_peer_ruler_qa.c - RULER's QA tasks as mdqa presets
** (tasks/peer_ruler_qa.c: protocol ruler_qa_squad and ruler_qa_hotpotqa).
** Fixtures in the datasets' formats are written here (SQuAD 2.0: articles of
** paragraphs with questions, one unanswerable per article; HotpotQA: questions
** with four paragraphs each); each case is read back from `show --text` and
** checked against qa.py's rule: the file's answerable questions in order, the
** gold paragraph(s) among the documents, SQuAD's article-mates before any
** other paragraph, every paragraph repeated once the count passes them, the
** template, the fit; then grading with ruler_part, and the refusals.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/shell.h"

static char out[1 << 17];

static void setup(void)
{
    shell_setup("ruler-qa");
    (void)exists, (void)sql_long;
}

#define ARTICLES 4
#define PARAS 3

/* Paragraph p of article a, and its question (one a paragraph). */
static void squad_para(char *buf, size_t n, int a, int p)
{
    snprintf(buf, n, "Article %d paragraph %d: the river %c%d runs past the old mill of town %d.", a, p, 'A' + a, p,
             a * 10 + p);
}

static void write_squad(void)
{
    static char json[1 << 15];
    char ctx[128];
    size_t w = (size_t)snprintf(json, sizeof json, "{\"version\": \"v2.0\", \"data\": [");
    for (int a = 0; a < ARTICLES; a++) {
        w += (size_t)snprintf(json + w, sizeof json - w, "%s{\"title\": \"T%d\", \"paragraphs\": [", a ? ", " : "", a);
        for (int p = 0; p < PARAS; p++) {
            squad_para(ctx, sizeof ctx, a, p);
            w += (size_t)snprintf(json + w, sizeof json - w, "%s{\"context\": \"%s\", \"qas\": [%s{\"question\": "
                                  "\"What runs past mill %d?\", \"answers\": [{\"text\": \"river %c%d\"}, {\"text\": "
                                  "\"the river %c%d\"}], \"is_impossible\": false}]}", p ? ", " : "", ctx,
                                  p == 1 ? "{\"question\": \"Who is king?\", \"answers\": [], "
                                           "\"is_impossible\": true}, "
                                         : "", a * 10 + p, 'A' + a, p, 'A' + a, p);
        }
        w += (size_t)snprintf(json + w, sizeof json - w, "]}");
    }
    snprintf(json + w, sizeof json - w, "]}");
    write_file("squad.json", json);
}

/* The documents of a shown prompt: their texts (static), count; checks the
** template around them and returns the question. */
static int shown_docs(const char *text, char docs[][200], int max, char *question, size_t qn)
{
    static const char head[] = "Answer the question based on the given documents. Only give me the answer and do not "
                               "output any other words.\n\nThe following are given documents.\n\n",
                      mid[] = "\n\nAnswer the question based on the given documents. Only give me the answer and do "
                              "not output any other words.\n\nQuestion: ";
    cr_assert(strncmp(text, head, strlen(head)) == 0, "%.200s", text);
    const char *s = text + strlen(head), *end = strstr(s, mid);
    cr_assert_not_null(end, "%.200s", s);
    int n = 0;
    for (; s < end; n++) {
        char tag[32];
        snprintf(tag, sizeof tag, "Document %d:\n", n + 1);
        cr_assert(strncmp(s, tag, strlen(tag)) == 0 && n < max, "'%.40s' is not '%s'", s, tag);
        s += strlen(tag);
        const char *e = strstr(s, "\n\nDocument ");
        if (!e || e > end)
            e = end;
        snprintf(docs[n], 200, "%.*s", (int)(e - s), s);
        s = e == end ? end : e + 2;
    }
    const char *q = end + strlen(mid), *a = strstr(q, " Answer:");
    cr_assert(a && strcmp(a, " Answer:") == 0, "%s", q);
    snprintf(question, qn, "%.*s", (int)(a - q), q);
    return n;
}

/* Byte tokens at lengths from a few documents to more than all twelve: case
** k asks answerable question k in file order (the unanswerable ones skipped),
** its paragraph among the documents, its article's other two next (all of
** them once more than three fit), distinct documents until all twelve are in,
** then each repeated evenly; the prompt + 32 within L, no room for one more
** document; the shown gold its first answer. */
Test(peer_ruler_qa, squad_cases_are_the_peers_rule, .init = setup, .fini = teardown, .timeout = 120)
{
    static const long lengths[] = {520, 700, 1300, 3000};
    static char docs[200][200], text[1 << 16];
    write_squad();
    for (int li = 0; li < 4; li++)
        for (int k = 0; k < 12; k += 5) {
            long L = lengths[li];
            cr_assert_eq(sh(text, sizeof text, "$L show task mdqa samples=12 --protocol ruler_qa_squad --data "
                            "squad.json --length %ld --instance %d --text", L, k), 0, "%s", text);
            char q[128], want[128], gold[128];
            int n = shown_docs(text, docs, 200, q, sizeof q), a = k / PARAS, p = k % PARAS;
            int count[ARTICLES][PARAS] = {{0}};
            snprintf(want, sizeof want, "What runs past mill %d?", a * 10 + p);
            cr_expect_str_eq(q, want, "case %d asks the file's answerable question %d", k, k);
            for (int i = 0; i < n; i++) {
                int da, dp;
                cr_assert_eq(sscanf(docs[i], "Article %d paragraph %d", &da, &dp), 2, "'%s'", docs[i]);
                char para[128];
                squad_para(para, sizeof para, da, dp);
                cr_expect_str_eq(docs[i], para);
                count[da][dp]++;
            }
            cr_expect_geq(count[a][p], 1, "L %ld case %d: the gold paragraph is missing", L, k);
            int mates = 0, others = 0, most = 0, least = 1 << 20;
            for (int da = 0; da < ARTICLES; da++)
                for (int dp = 0; dp < PARAS; dp++) {
                    mates += da == a && dp != p && count[da][dp] > 0;
                    others += da != a && count[da][dp] > 0;
                    most = count[da][dp] > most ? count[da][dp] : most;
                    least = count[da][dp] < least ? count[da][dp] : least;
                }
            cr_expect(others == 0 || mates == PARAS - 1, "L %ld case %d: another article's paragraph before the "
                      "article's own (%d of %d)", L, k, mates, PARAS - 1);
            cr_expect(n < ARTICLES * PARAS ? most == 1 : most - least <= 1, "L %ld: %d documents, each %d to %d "
                      "times", L, n, least, most);
            long bytes = (long)strlen(text);
            cr_expect_leq(bytes + 32, L);
            cr_expect_lt(L - 32 - bytes, (long)strlen("\n\nDocument 100:\n") + 80, "L %ld case %d: room for another "
                         "document", L, k);
            cr_assert_eq(sh(out, sizeof out, "$L show task mdqa samples=12 --protocol ruler_qa_squad --data squad.json "
                            "--length %ld --instance %d", L, k), 0, "%s", out);
            snprintf(gold, sizeof gold, "gold \"river %c%d\"", 'A' + a, p);
            cr_expect(strstr(out, gold) != NULL, "%s", out);
        }
}

/* HotpotQA: each question's four paragraphs ("title\n" + its sentences
** joined) all among the documents, the other questions' after them (at 1,500
** bytes all twenty fit, and repeat). */
Test(peer_ruler_qa, hotpot_cases_are_the_peers_rule, .init = setup, .fini = teardown, .timeout = 60)
{
    static char json[1 << 14], docs[200][200], text[1 << 16];
    size_t w = (size_t)snprintf(json, sizeof json, "[");
    for (int d = 0; d < 5; d++) {
        w += (size_t)snprintf(json + w, sizeof json - w, "%s{\"question\": \"Which title holds %d?\", \"answer\": "
                              "\"Title %d-0\", \"context\": [", d ? ", " : "", d, d);
        for (int k = 0; k < 4; k++)
            w += (size_t)snprintf(json + w, sizeof json - w, "%s[\"Title %d-%d\", [\"One of %d-%d. \", \"Two.\"]]",
                                  k ? ", " : "", d, k, d, k);
        w += (size_t)snprintf(json + w, sizeof json - w, "]}");
    }
    snprintf(json + w, sizeof json - w, "]");
    write_file("hotpot.json", json);
    for (long L = 700; L <= 1500; L += 400)
        for (int c = 0; c < 5; c += 2) {
            cr_assert_eq(sh(text, sizeof text, "$L show task mdqa samples=5 --protocol ruler_qa_hotpotqa --data "
                            "hotpot.json --length %ld --instance %d --text", L, c), 0, "%s", text);
            char q[128], want[128];
            int n = shown_docs(text, docs, 200, q, sizeof q), own = 0;
            snprintf(want, sizeof want, "Which title holds %d?", c);
            cr_expect_str_eq(q, want);
            for (int i = 0; i < n; i++) {
                int d, k;
                cr_assert_eq(sscanf(docs[i], "Title %d-%d", &d, &k), 2, "'%s'", docs[i]);
                char para[128];
                snprintf(para, sizeof para, "Title %d-%d\nOne of %d-%d. Two.", d, k, d, k);
                cr_expect_str_eq(docs[i], para);
                own += d == c;
            }
            cr_expect(n < 20 ? own == 4 : own >= 4, "L %ld case %d: the question's own paragraphs (%d of %d "
                      "documents)", L, c, own, n);
            cr_expect_leq((long)strlen(text) + 32, L);
        }
}

/* ruler_part through lenx grade (RULER's outputs and pred): any answer counts. */
Test(peer_ruler_qa, grade_with_ruler_part, .init = setup, .fini = teardown)
{
    write_file("p.jsonl", "{\"outputs\": [\"river A1\", \"the river A1\"], \"pred\": \" River A1.\"}\n{\"outputs\": "
                          "[\"Paris\"], \"pred\": \"London\"}\n");
    cr_assert_eq(sh(out, sizeof out, "$L grade --task mdqa --protocol ruler_qa_squad --predictions p.jsonl"), 0, "%s",
                 out);
    cr_expect(strstr(out, "\"scores\": [1, 0]") && strstr(out, "\"mean\": 0.5"), "%s", out);
}

/* No data, a missing file (exit 3), not the dataset's shape, more cases than
** answerable questions, a length with no room: each names the file or the
** length, with a hint. */
Test(peer_ruler_qa, refusals, .init = setup, .fini = teardown, .timeout = 60)
{
    static const char show[] = "$L show task mdqa samples=3 --protocol ruler_qa_squad --instance 0 --text";
    write_squad();
    cr_expect_eq(sh(out, sizeof out, "%s --length 900", show), 2);
    cr_expect(strstr(out, "SQuAD") && strstr(out, "hint:"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s --length 900 --data nowhere.json", show), 3, "%s", out);
    cr_expect(strstr(out, "nowhere.json"), "%s", out);
    write_file("list.json", "[1, 2]");
    cr_expect_eq(sh(out, sizeof out, "%s --length 900 --data list.json", show), 2, "%s", out);
    cr_expect(strstr(out, "list.json") && strstr(out, "SQuAD"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task mdqa samples=20 --protocol ruler_qa_squad --data squad.json "
                    "--length 900 --instance 0"), 2, "%s", out);
    cr_expect(strstr(out, "12 answerable questions") && strstr(out, "hint: samples: at most 12"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s --length 200 --data squad.json", show), 2, "%s", out);
    cr_expect(strstr(out, "length 200") && strstr(out, "no room") && strstr(out, "hint:"), "%s", out);
}

/* On stories260K at 512 and 1,024: every prompt + 32 within L in its tokens,
** each output stored with the first answer and scored 1 exactly when one of
** the answers ("river A1" or "the river A1": the shorter is inside the
** longer) is inside it. */
Test(peer_ruler_qa, cells_on_stories260K, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!getenv("LENX_ROOT") || sh(out, sizeof out, "test -f $R/../shared/models/stories260K/stories260K.bin") != 0)
        cr_skip_test("stories260K is not beside the checkout");
    write_squad();
    write_file("q.yaml", "name: q\nseed: 1\nmodels:\n  s:\n    checkpoint: STORIES\nmethods:\n"
                         "  - [{rope: {layout: interleaved}}]\ntasks:\n"
                         "  - mdqa: {protocol: ruler_qa_squad, data: squad.json, samples: 4}\nlengths: [512, 1024]\n");
    cr_assert_eq(sh(out, sizeof out, "sed -i -e \"s|STORIES|$R/../shared/models/stories260K/stories260K.bin|\" q.yaml "
                    "&& $L run q.yaml --db q.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 q.db \"select count(*) from runs r join metrics m on m.run_id = r.id "
                    "where m.name = 'prompt_tokens_max' and m.value - 1 + 32 <= r.length and r.status = 'ok'\""), 0);
    cr_expect_eq(atol(out), 2, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 -separator '\t' q.db \"select gold, score, replace(text, char(10), ' ') "
                    "from outputs\""), 0);
    int rows = 0;
    for (char *p = out; *p; rows++) {
        char *nl = strchr(p, '\n'), *t1 = strchr(p, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        cr_assert(t1 && t2, "%s", p);
        if (nl)
            *nl = 0;
        *t1 = *t2 = 0;
        cr_expect(strncmp(p, "river ", 6) == 0, "the stored gold is the first answer: '%s'", p);
        for (char *c = p; *c; c++)
            *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
        char lower[4096];
        size_t n = 0;
        for (const char *c = t2 + 1; *c && n + 1 < sizeof lower; c++)
            lower[n++] = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
        lower[n] = 0;
        cr_expect_eq(atoi(t1 + 1), strstr(lower, p) != NULL, "'%s' in '%s'", p, t2 + 1);
        p = nl ? nl + 1 : p + strlen(p);
    }
    cr_expect_eq(rows, 8);
}

/* Files of the right shape but nothing to ask: a question without
** paragraphs, an empty answer (it would be inside every output), a file
** without paragraphs at all; each refused naming the file, never a signal. */
Test(peer_ruler_qa, empty_parts_are_refused, .init = setup, .fini = teardown, .timeout = 60)
{
    static const char *const cases[][3] = {
        {"ruler_qa_hotpotqa", "[{\"context\": [], \"question\": \"q\", \"answer\": \"a\"}]", "paragraph"},
        {"ruler_qa_hotpotqa", "[{\"context\": [[\"t\", [\"s.\"]]], \"question\": \"q\", \"answer\": \"\"}]", "empty"},
        {"ruler_qa_squad", "{\"data\": [{\"paragraphs\": [{\"context\": \"c\", \"qas\": [{\"question\": \"q\", "
                           "\"answers\": [{\"text\": \"\"}]}]}]}]}", "empty"},
        {"ruler_qa_squad", "{\"data\": [{\"paragraphs\": []}]}", "no answerable question"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_file("e.json", cases[i][1]);
        int rc = sh(out, sizeof out, "$L show task mdqa samples=1 --protocol %s --data e.json --length 900 "
                    "--instance 0", cases[i][0]);
        cr_expect_eq(rc, 2, "%s: %s", cases[i][1], out);
        cr_expect(strstr(out, "e.json") && strstr(out, cases[i][2]), "%s: %s", cases[i][1], out);
    }
}
