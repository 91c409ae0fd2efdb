/*
** tests/test_mdqa.c - the synthesised lost-in-the-middle task (tasks/mdqa.c):
** exact lengths, the layout parsed back from the tokens (instruction, k
** documents in order, one fact each, the gold document at round(d·(k − 1)),
** passages of the held-out novel's text, question and answer), determinism and
** pairing of the draws, the too-short error, the normalised substring scorer,
** the distractors and the training sampler.
**
** The layout is parsed with lost-in-the-middle's strings and the fact template
** written out here (docs/tasks.md#mdqa), not with the task's
** tables.
*/
#define _GNU_SOURCE     /* memmem */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/data/corpus.h"
#define FIXTURE_TASK "mdqa"
#include "tests/retrieval_fixture.h"

#define INSTRUCTION "Write a high-quality answer for the given question using only the provided search results " \
                    "(some of which might be irrelevant).\n\n"
#define FACT "'s favourite colour is "
#define QUESTION "\n\nQuestion: What is "
#define LONGEST_NAME "Cornelius"        /* the longest of the task's names */
#define LONGEST_COLOUR "chartreuse"     /* and colours */

/* A split's text end to end (the first frac of it), newlines as spaces, and
** doubled so that a cyclic excerpt is a plain substring. */
static char *prose(const char *split, double frac, long *n)
{
    return prose_text(split, frac, n, 1);
}

#define MAXK 30

struct parsed {
    int k;                      /* documents */
    char name[MAXK][32];        /* each document's title */
    char colour[MAXK][32];      /* and the colour of its fact */
    long passage[MAXK];         /* passage bytes, the fact taken out */
    char asked[32];             /* the question's name */
    int gold;                   /* the document whose fact the question asks */
};

/* Parse an instance back and check every document against the book. */
static void parse(const struct lx_instance *in, int litm, const char *book, long n_book, struct parsed *r)
{
    char *s = text(in), head[64], fact[96];
    memset(r, 0, sizeof *r);
    r->gold = -1;
    const char *p = s;
    if (litm) {
        cr_assert(strncmp(p, INSTRUCTION, strlen(INSTRUCTION)) == 0, "no instruction: %.60s", p);
        p += strlen(INSTRUCTION);
    }
    char *q = strstr(p, QUESTION);
    cr_assert_not_null(q, "no question");
    *q = '\0';  /* p is now the documents, one a line */
    for (char *line = (char *)p; line; r->k++) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        cr_assert_lt(r->k, MAXK);
        int len = snprintf(head, sizeof head, "Document [%d](Title: ", r->k + 1);
        cr_assert(strncmp(line, head, (size_t)len) == 0, "document %d: '%.40s'", r->k + 1, line);
        char *name = line + len, *close = strstr(name, ") ");
        cr_assert(close && close - name < 32, "document %d: no title", r->k + 1);
        memcpy(r->name[r->k], name, (size_t)(close - name));
        char *body = close + 2;
        snprintf(fact, sizeof fact, "%s" FACT, r->name[r->k]);
        char *f = strstr(body, fact);
        cr_assert_not_null(f, "document %d has no fact about %s", r->k + 1, r->name[r->k]);
        cr_assert_null(strstr(f + strlen(fact), FACT), "document %d has two facts", r->k + 1);
        cr_assert_eq(strstr(body, FACT), f + strlen(r->name[r->k]), "document %d: a fact about another name",
                     r->k + 1);
        char *c = f + strlen(fact), *dot = strchr(c, '.');
        cr_assert(dot && dot - c < 32);
        memcpy(r->colour[r->k], c, (size_t)(dot - c));
        /* the passage: the body without the fact and its space (after it, or before it at the end) */
        long n_body = (long)strlen(body), at = f - body, n_fact = dot + 1 - f;
        char *pass = malloc((size_t)n_body + 1);
        memcpy(pass, body, (size_t)at);
        long n = at;
        if (at + n_fact < n_body) {
            cr_assert_eq(body[at + n_fact], ' ', "document %d: no space after the fact", r->k + 1);
            memcpy(pass + n, body + at + n_fact + 1, (size_t)(n_body - at - n_fact - 1));
            n += n_body - at - n_fact - 1;
        } else if (at > 0) {
            cr_assert_eq(pass[n - 1], ' ', "document %d: no space before the fact", r->k + 1);
            n--;
        }
        r->passage[r->k] = n;
        if (n > 0)
            cr_assert_not_null(memmem(book, (size_t)(2 * n_book), pass, (size_t)n),
                               "document %d's passage is not the novel's text: %.60s", r->k + 1, pass);
        free(pass);
        line = next;
    }
    /* the question and the answer */
    const char *qn = q + strlen(QUESTION);
    const char *apo = strstr(qn, "'s favourite colour?\nAnswer: ");
    cr_assert(apo && apo - qn < 32, "question: %s", qn);
    memcpy(r->asked, qn, (size_t)(apo - qn));
    const char *ans = apo + strlen("'s favourite colour?\nAnswer:");
    cr_assert_eq(*ans, ' ');
    cr_assert_str_eq(ans + 1, in->gold, "the text does not end with ' %s'", in->gold);
    cr_assert_eq(in->answer_off, 1 + (ans - s), "answer_off %ld", in->answer_off);
    for (int i = 0; i < r->k; i++) {
        for (int j = 0; j < i; j++) {
            cr_assert_str_neq(r->name[i], r->name[j], "name %s twice", r->name[i]);
            cr_assert_str_neq(r->colour[i], r->colour[j], "colour %s twice", r->colour[i]);
            cr_assert(!strstr(r->colour[i], r->colour[j]) && !strstr(r->colour[j], r->colour[i]),
                      "colours %s and %s: one inside the other", r->colour[i], r->colour[j]);
        }
        if (strcmp(r->name[i], r->asked) == 0) {
            cr_assert_eq(r->gold, -1, "two documents about %s", r->asked);
            r->gold = i;
        }
    }
    cr_assert_geq(r->gold, 0, "no document about %s", r->asked);
    cr_assert_str_eq(r->colour[r->gold], in->gold);
    /* the distractors: every other document's colour, at its position */
    cr_assert_eq(in->n_alt, r->k - 1);
    for (int i = 0; i < r->k; i++) {
        if (i == r->gold)
            continue;
        int found = 0;
        for (int j = 0; j < in->n_alt; j++)
            if (strcmp(in->alt[j], r->colour[i]) == 0) {
                found = 1;
                cr_assert_float_eq(in->alt_depth[j], (double)i / (double)(r->k - 1), 1e-12);
            }
        cr_assert(found, "colour %s is not a distractor", r->colour[i]);
    }
    free(s);
}

Test(mdqa, registered)
{
    struct lx_error err = {{0}};
    const struct lx_task *t = task();
    cr_assert_eq(lx_task_validate(t, &err), LX_OK, "%s", err.msg);
    cr_assert(t->generate && t->train_sample && t->score && t->check && t->split && t->trials);
    cr_assert_str_eq(t->split(NULL), "test");
    void *p = params("");
    long samples, depths;
    t->trials(p, &samples, &depths);
    cr_assert_eq(depths, 10, "10 depths: every position of the 10 documents");
    free(p);
}

Test(mdqa, exact_length_and_layout, .timeout = 60)
{
    static const struct {
        const char *yaml;
        int litm, k;
        long lengths[3];
    } cases[] = {
        {"", 1, 10, {1000, 1500, 4096}},
        {"{template: short, documents: 2}", 0, 2, {256, 300, 1000}},
        {"documents: 1", 1, 1, {300, 1000, 4096}},
        {"documents: 20", 1, 20, {2000, 4096, 4097}},
        {"{template: short, documents: 30}", 0, 30, {2500, 4096, 8000}},
    };
    static const double depths[] = {0.0, 0.3, 0.5, 1.0};
    long n_book;
    char *book = prose("test", 1.0, &n_book);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        void *p = params(cases[c].yaml);
        for (int l = 0; l < 3; l++)
            for (int d = 0; d < 4; d++) {
                struct lx_instance in;
                struct parsed r;
                long L = cases[c].lengths[l];
                gen(p, 42, L, d, depths[d], &in);
                parse(&in, cases[c].litm, book, n_book, &r);
                cr_assert_eq(r.k, cases[c].k, "%s: %d documents", cases[c].yaml, r.k);
                cr_assert_eq(r.gold, lround(depths[d] * (cases[c].k - 1)), "%s depth %g: gold at %d", cases[c].yaml,
                             depths[d], r.gold);
                cr_assert_eq(in.depth, depths[d]);
                long lo = r.passage[0], hi = r.passage[0];
                for (int i = 1; i < r.k; i++) {
                    lo = r.passage[i] < lo ? r.passage[i] : lo;
                    hi = r.passage[i] > hi ? r.passage[i] : hi;
                }
                cr_assert_leq(hi - lo, 1, "%s length %ld: passages of %ld to %ld bytes", cases[c].yaml, L, lo, hi);
                lx_instance_release(&in);
            }
        free(p);
    }
    free(book);
}

Test(mdqa, every_position_in_turn)
{
    void *p = params("");
    long n_book;
    char *book = prose("test", 1.0, &n_book);
    struct parsed first;
    for (int d = 0; d < 10; d++) {
        struct lx_instance in;
        struct parsed r;
        gen(p, 5, 2000, 3, d / 9.0, &in);
        parse(&in, 1, book, n_book, &r);
        cr_assert_eq(r.gold, d, "depth %d/9: gold at %d", d, r.gold);
        if (d == 0)
            first = r;
        cr_assert_str_eq(r.asked, first.asked, "the sample asks another name at depth %d/9", d);
        /* the distractors keep their order: the same sequence with the gold taken out */
        for (int i = 0, j = 1; i < r.k; i++) {
            if (i == r.gold)
                continue;
            cr_assert_str_eq(r.name[i], first.name[j], "depth %d/9: distractor order", d);
            cr_assert_str_eq(r.colour[i], first.colour[j]);
            j++;
        }
        lx_instance_release(&in);
    }
    free(book);
    free(p);
}

Test(mdqa, deterministic_draws)
{
    void *p = params("{template: short, documents: 3}");
    struct lx_instance a, b;
    gen(p, 1234, 600, 9, 0.25, &a);
    gen(p, 1234, 600, 9, 0.25, &b);
    cr_assert_eq(memcmp(a.tok, b.tok, (size_t)a.n * sizeof *a.tok), 0, "same arguments, different tokens");
    lx_instance_release(&a), lx_instance_release(&b);
    int other_sample = 0, other_key = 0;
    for (int s = 0; s < 20; s++) {
        struct lx_instance c;
        gen(p, 1234, 600, s, 0.5, &a);
        gen(p, 1234, 600, s + 1, 0.5, &b);
        gen(p, 99, 600, s, 0.5, &c);
        other_sample += memcmp(a.tok, b.tok, 600 * sizeof *a.tok) != 0;
        other_key += memcmp(a.tok, c.tok, 600 * sizeof *a.tok) != 0;
        lx_instance_release(&a), lx_instance_release(&b), lx_instance_release(&c);
    }
    cr_assert_eq(other_sample, 20);
    cr_assert_eq(other_key, 20);
    free(p);
}

Test(mdqa, too_short)
{
    /* BOS + instruction + k documents of the longest name and colour with no
    ** passage, k − 1 newlines, the question and the answer */
    char doc[160], q[160];
    long min10 = 1 + (long)strlen(INSTRUCTION) + 9;
    for (int i = 1; i <= 10; i++)
        min10 += snprintf(doc, sizeof doc, "Document [%d](Title: %s) %s" FACT "%s. ", i, LONGEST_NAME,
                          LONGEST_NAME, LONGEST_COLOUR);
    min10 += snprintf(q, sizeof q, QUESTION "%s's favourite colour?\nAnswer: %s", LONGEST_NAME, LONGEST_COLOUR);
    void *p = params(""), *ps = params("template: short");
    const struct lx_task *t = task();
    struct lx_error err = {{0}};
    struct lx_instance in;
    cr_assert_eq(t->check(p, min10, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(t->check(ps, min10 - (long)strlen(INSTRUCTION), &err), LX_OK, "%s", err.msg);
    cr_assert_eq(t->check(ps, min10 - (long)strlen(INSTRUCTION) - 1, &err), LX_EINVAL);
    cr_assert_eq(t->check(p, min10 - 1, &err), LX_EINVAL);
    char want[64];
    snprintf(want, sizeof want, "minimum %ld", min10);
    cr_assert(strstr(err.msg, "too short") && strstr(err.msg, "10 documents") && strstr(err.msg, want) &&
              strstr(err.msg, "fewer documents"), "%s", err.msg);
    cr_assert_eq(t->generate(p, 1, min10 - 1, 0, 0.5, &in, &err), LX_EINVAL);
    cr_assert_null(in.tok);
    for (int s = 0; s < 10; s++) {  /* at the minimum, every draw fits */
        gen(p, 1, min10, s, 0.5, &in);
        lx_instance_release(&in);
    }
    free(p), free(ps);
}

Test(mdqa, scorer)
{
    int (*score)(const void *, const struct lx_instance *, const char *, long) = task()->score;
    struct lx_instance in = {.gold = "amber"};
    cr_assert_eq(score(NULL, &in, LIT(" amber")), 1);
    cr_assert_eq(score(NULL, &in, LIT(" Amber!")), 1, "case and punctuation");
    cr_assert_eq(score(NULL, &in, LIT(" an amber one")), 1, "a substring of the output");
    cr_assert_eq(score(NULL, &in, LIT(" mauve")), 0);
    cr_assert_eq(score(NULL, &in, LIT(" am ber")), 0);
    cr_assert_eq(score(NULL, &in, LIT(" mauve\namber")), 0, "only the first line counts");
    cr_assert_eq(score(NULL, &in, LIT(" the.")), -1, "nothing left after normalisation");
    cr_assert_eq(score(NULL, &in, LIT("")), -1);
    struct lx_instance bath = {.gold = "bath"};
    cr_assert_eq(score(NULL, &bath, LIT("The Bath.")), 1, "lowercase, no articles, no punctuation");
    struct lx_instance the_bath = {.gold = "The Bath"};
    cr_assert_eq(score(NULL, &the_bath, LIT(" bath")), 1, "the gold is normalised too");
}

Test(mdqa, distractors)
{
    const struct lx_task *t = task();
    struct lx_instance in = {.gold = "amber", .alt = {"mauve", "teal"}, .n_alt = 2};
    cr_assert_eq(lx_answer_distractor(t, NULL, &in, LIT(" Teal.")), 1);
    cr_assert_eq(lx_answer_distractor(t, NULL, &in, LIT(" mauve")), 0);
    cr_assert_eq(lx_answer_distractor(t, NULL, &in, LIT(" amber")), -1, "the gold is no distractor");
    cr_assert_eq(lx_answer_distractor(t, NULL, &in, LIT(" ochre")), -1);
    /* a generated instance: its distractors are the other documents' colours */
    void *p = params("{template: short, documents: 4}");
    struct lx_instance g;
    gen(p, 3, 800, 0, 1.0, &g);
    char out[LX_MAX_ANSWER + 2];
    snprintf(out, sizeof out, " %s", g.alt[2]);
    cr_assert_eq(lx_answer_distractor(t, p, &g, out, (long)strlen(out)), 2);
    cr_assert_eq(t->score(p, &g, out, (long)strlen(out)), 0);
    lx_instance_release(&g);
    free(p);
}

Test(mdqa, train_sample)
{
    void *p = params("{template: short, documents: 2}");
    const struct lx_task *t = task();
    struct lx_error err = {{0}};
    long n_train;
    char *train = prose("train", 0.9, &n_train);
    int at[2] = {0, 0};
    for (int s = 0; s < 20; s++) {
        struct lx_instance in, again;
        struct parsed r;
        cr_assert_eq(t->train_sample(p, 77, 256, s, &in, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(in.n, 256);
        cr_assert(in.depth > 0.0 && in.depth < 1.0, "depth %g", in.depth);
        parse(&in, 0, train, n_train, &r);     /* the passages are training text */
        at[r.gold]++;
        cr_assert_eq(t->train_sample(p, 77, 256, s, &again, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(memcmp(in.tok, again.tok, 256 * sizeof *in.tok), 0, "train_sample is not pure");
        lx_instance_release(&in), lx_instance_release(&again);
    }
    cr_assert(at[0] > 0 && at[1] > 0, "the gold sat at one position only (%d, %d)", at[0], at[1]);
    void *p10 = params("");
    struct lx_instance none;
    cr_assert_eq(t->train_sample(p10, 77, 256, 0, &none, &err), LX_EINVAL, "10 documents fit no 256-token window");
    free(p10);
    free(train);
    free(p);
}
