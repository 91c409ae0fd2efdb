/*
** tests/test_topic.c - the topic retrieval task (tasks/topic.c): exact
** lengths, the record parsed back turn by turn (openings, alternating replies
** and asks, closings), the number of topics by length or by parameter, the
** round-robin fill, determinism, the topic list against the scorer, the
** too-short error, the normalized-containment scorer and the training sampler.
**
** The expected strings are LongChat's (docs/tasks.md#topic), written
** out here, not taken from the task's own tables.
*/
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/data/corpus.h"
#define FIXTURE_TASK "topic"
#define FIXTURE_ONE_DEPTH
#include "tests/retrieval_fixture.h"

#define HEADER "Below is a record of our previous conversation on %ld different topics. You are the ASSISTANT, and " \
               "I am the USER. At the beginning of each topic, the USER will say 'I would like to discuss the " \
               "topic of <TOPIC>'. Memorize each <TOPIC>. At the end of the record, I will ask you to retrieve the " \
               "first topic. Now the record start. "
#define OPEN "USER: I would like to discuss the topic of "
#define CLOSE "USER: Great, this is the end of our discussion on %s, let's talk about the next topic."
#define Q_LONGCHAT " Now the record ends. What is the first topic we discussed? Only give me the topic name. " \
                   "Do not summarize yourself."
#define Q_SHORT " What is the first topic we discussed?"
#define ENDING "\n ASSISTANT: The first topic is"
#define UNIT_MAX 124    /* the longest ask and reply with their " \n USER: " and " \n ASSISTANT: " */
#define MAX_CONV 64

/* An instance read back from its text. */
struct parsed {
    long k;                         /* conversations */
    char topic[MAX_CONV][64];       /* (k,) their topics, in order */
    long replies[MAX_CONV];         /* (k,) ASSISTANT turns of each */
    long pad;                       /* spaces before the question */
};

enum { OPENED, REPLIED, ASKED, CLOSED };

/* One turn (without its " \n " separator) of conversation o->k - 1, or the
** opening of the next; *state is what the last turn was. */
static void turn(struct parsed *o, const char *t, int longchat, int *state)
{
    char want[256];
    if (strncmp(t, OPEN, strlen(OPEN)) == 0) {
        cr_assert(o->k == 0 || *state == (longchat ? CLOSED : OPENED) || (!longchat && *state == REPLIED),
                  "opening after state %d: %s", *state, t);
        size_t n = strlen(t) - strlen(OPEN);
        cr_assert(n >= 2 && n < sizeof o->topic[0] && t[strlen(t) - 1] == '.', "bad opening: %s", t);
        cr_assert_lt(o->k, MAX_CONV);
        memcpy(o->topic[o->k], t + strlen(OPEN), n - 1);
        o->topic[o->k][n - 1] = '\0';
        o->replies[o->k++] = 0;
        *state = OPENED;
        return;
    }
    cr_assert_gt(o->k, 0, "a turn before the first opening: %s", t);
    snprintf(want, sizeof want, CLOSE, o->topic[o->k - 1]);
    if (strncmp(t, "USER: Great", 11) == 0) {
        cr_assert(longchat, "a closing turn in the short template");
        cr_assert_str_eq(t, want);
        cr_assert(*state == OPENED || *state == REPLIED, "closing after state %d", *state);
        *state = CLOSED;
        return;
    }
    const char *body = NULL;
    if (strncmp(t, "ASSISTANT: ", 11) == 0) {
        cr_assert(*state == OPENED || *state == ASKED, "a reply after state %d: %s", *state, t);
        o->replies[o->k - 1]++;
        *state = REPLIED;
        body = t + 11;
    } else {
        cr_assert(strncmp(t, "USER: ", 6) == 0, "not a turn: %s", t);
        cr_assert_eq(*state, REPLIED, "an ask after state %d: %s", *state, t);
        *state = ASKED;
        body = t + 6;
    }
    cr_assert(strlen(body) > 4 && !strstr(body, "topic") && !strchr(body, '\n'), "bad filler turn: %s", t);
}

/* Parse and check the whole layout: header, conversations, pad, question,
** ending and answer. */
static void layout(const struct lx_instance *in, int longchat, struct parsed *o)
{
    char *s = text(in), want[1024];
    memset(o, 0, sizeof *o);
    long k = 0;
    for (const char *c = s; (c = strstr(c, OPEN)) != NULL; c++)
        k++;
    const char *c = s;
    if (longchat) {
        snprintf(want, sizeof want, HEADER, k);
        cr_assert(strncmp(c, want, strlen(want)) == 0, "header is not for %ld topics: %.80s", k, c);
        c += strlen(want);
    }
    snprintf(want, sizeof want, "%s%s %s", longchat ? Q_LONGCHAT : Q_SHORT, ENDING, in->gold);
    size_t n_s = strlen(s), n_tail = strlen(want);
    cr_assert(n_s > n_tail && strcmp(s + n_s - n_tail, want) == 0, "the text does not end with '%s'", want);
    cr_assert_eq(in->answer_off, 1 + (long)(n_s - strlen(in->gold) - 1), "answer_off %ld", in->answer_off);
    cr_assert_eq(in->tok[in->answer_off], ' ');
    char *end = s + n_s - n_tail;
    for (o->pad = 0; end > c && end[-1] == ' '; end--)
        o->pad++;
    *end = '\0';
    int state = CLOSED;
    for (char *t = (char *)c, *sep;; t = sep + 3) {
        sep = strstr(t, " \n ");
        if (sep)
            *sep = '\0';
        turn(o, t, longchat, &state);
        if (!sep)
            break;
    }
    cr_assert(longchat ? state == CLOSED : state != ASKED, "the record ends after state %d", state);
    cr_assert_eq(o->k, k);
    cr_assert_str_eq(o->topic[0], in->gold, "gold is not the first topic");
    for (long i = 0; i < o->k; i++)
        for (long j = 0; j < i; j++)
            cr_assert_str_neq(o->topic[i], o->topic[j], "topic '%s' repeats", o->topic[i]);
    free(s);
}

/* Replies are filled round-robin: non-increasing, at most one apart. */
static void check_fill(const struct parsed *o, long base)
{
    cr_assert_lt(o->pad, UNIT_MAX, "pad %ld: another reply would fit", o->pad);
    for (long i = 0; i < o->k; i++) {
        cr_assert_geq(o->replies[i], base, "conversation %ld has %ld replies", i, o->replies[i]);
        cr_assert_leq(o->replies[i], o->replies[0]);
        cr_assert_geq(o->replies[i], o->replies[0] - 1, "replies %ld and %ld", o->replies[0], o->replies[i]);
    }
}

/* Every topic: the record at 65536 tokens holds all of them. */
static long all_topics(char topics[][64])
{
    void *p = params("template: short");
    struct parsed *o = calloc(1, sizeof *o);
    struct lx_instance in;
    gen(p, 3, 65536, 0, &in);
    layout(&in, 0, o);
    for (long i = 0; i < o->k; i++)
        strcpy(topics[i], o->topic[i]);
    long k = o->k;
    lx_instance_release(&in);
    free(o), free(p);
    return k;
}

Test(topic, registered)
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
    cr_assert(samples == 50 && depths == 1);
    free(p);
}

Test(topic, exact_length_and_layout)
{
    static const struct { const char *yaml; int longchat; long base, len[4]; } cases[] = {
        {"", 1, 2, {900, 1000, 2000, 4096}},
        {"template: short", 0, 2, {400, 1000, 4096, 0}},
        {"{template: short, replies: 0}", 0, 0, {200, 256, 1000, 4096}},
        {"{template: longchat, replies: 0}", 1, 0, {700, 1000, 4096, 0}},
    };
    struct parsed *o = calloc(1, sizeof *o);
    for (int c = 0; c < 4; c++) {
        void *p = params(cases[c].yaml);
        for (int i = 0; i < 4 && cases[c].len[i]; i++)
            for (long s = 0; s < 4; s++) {
                struct lx_instance in;
                gen(p, 42, cases[c].len[i], s, &in);
                layout(&in, cases[c].longchat, o);
                check_fill(o, cases[c].base);
                cr_assert_eq(in.depth, 0.0);
                cr_assert_leq(in.n - in.answer_off, LX_MAX_ANSWER);
                lx_instance_release(&in);
            }
        free(p);
    }
    free(o);
}

Test(topic, topics_grow_with_length)
{
    static const long len[] = {1000, 4096, 16384, 65536};
    void *p = params("");
    struct parsed *o = calloc(1, sizeof *o);
    long prev = 0;
    for (int i = 0; i < 4; i++) {
        struct lx_instance in;
        gen(p, 11, len[i], 2, &in);
        layout(&in, 1, o);
        check_fill(o, 2);
        cr_assert_geq(o->k, prev, "length %ld: %ld topics after %ld", len[i], o->k, prev);
        prev = o->k;
        if (len[i] == 4096)
            cr_assert_geq(o->k, 5, "only %ld topics at 4096 tokens", o->k);
        lx_instance_release(&in);
    }
    cr_assert_eq(prev, 40, "every topic at 65536 tokens");
    cr_assert_gt(o->replies[39], 2, "the length is filled with replies past the last topic");
    free(o), free(p);
}

Test(topic, fixed_topics)
{
    static const long ks[] = {1, 3, 5};
    struct parsed *o = calloc(1, sizeof *o);
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 3; i++) {
            char yaml[96];
            snprintf(yaml, sizeof yaml, "{template: %s, topics: %ld}", t ? "short" : "longchat", ks[i]);
            void *p = params(yaml);
            struct lx_instance in;
            gen(p, 5, 4096, 1, &in);
            layout(&in, !t, o);
            cr_assert_eq(o->k, ks[i]);
            check_fill(o, 0);
            cr_assert_gt(o->replies[ks[i] - 1], 2, "the conversations fill the length");
            lx_instance_release(&in);
            free(p);
            /* replies sizes conversations only when their count is free: given here, it is refused */
            snprintf(yaml, sizeof yaml, "{template: %s, topics: %ld, replies: 7}", t ? "short" : "longchat", ks[i]);
            struct lx_doc doc;
            struct lx_error err = {{0}};
            cr_assert_eq(lx_doc_load_text(&doc, yaml, "p.yaml", &err), LX_OK, "%s", err.msg);
            p = params("");
            cr_expect_eq(lx_params_apply(&task()->schema, p, doc.root, "task 'topic'", &err), LX_EINVAL, "%s", yaml);
            cr_expect(strstr(err.msg, "'replies' applies only with topics=0") != NULL, "%s", err.msg);
            lx_doc_release(&doc);
            free(p);
        }
    free(o);
}

Test(topic, deterministic)
{
    void *p = params("");
    const struct lx_task *t = task();
    struct lx_error err = {{0}};
    struct lx_instance a, b;
    gen(p, 1234, 3000, 9, &a);
    cr_assert_eq(t->generate(p, 1234, 3000, 9, 1.0, &b, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(memcmp(a.tok, b.tok, (size_t)a.n * sizeof *a.tok), 0, "same sample, different tokens");
    cr_assert_str_eq(a.gold, b.gold);
    lx_instance_release(&b);
    gen(p, 1234, 3000, 10, &b);
    cr_assert_neq(memcmp(a.tok, b.tok, (size_t)a.n * sizeof *a.tok), 0, "another sample, the same tokens");
    lx_instance_release(&b);
    gen(p, 99, 3000, 9, &b);
    cr_assert_neq(memcmp(a.tok, b.tok, (size_t)a.n * sizeof *a.tok), 0, "another key, the same tokens");
    lx_instance_release(&a), lx_instance_release(&b);

    char first[50][64];
    int distinct = 0;
    for (int s = 0; s < 50; s++) {
        gen(p, 1234, 1000, s, &a);
        strcpy(first[s], a.gold);
        int seen = 0;
        for (int j = 0; j < s; j++)
            seen |= strcmp(first[j], first[s]) == 0;
        distinct += !seen;
        lx_instance_release(&a);
    }
    cr_expect_geq(distinct, 20, "only %d distinct first topics over 50 samples", distinct);
    free(p);
}

Test(topic, topic_list)
{
    char topics[MAX_CONV][64];
    long k = all_topics(topics);
    cr_assert_eq(k, 40);
    int (*score)(const void *, const struct lx_instance *, const char *, long) = task()->score;
    for (long i = 0; i < k; i++) {
        cr_assert_lt((long)strlen(topics[i]) + 1, LX_MAX_ANSWER);
        struct lx_instance in = {.n = 0};
        strcpy(in.gold, topics[i]);
        for (long j = 0; j < k; j++) {
            char out[80];
            snprintf(out, sizeof out, " %s", topics[j]);
            cr_assert_eq(score(NULL, &in, out, (long)strlen(out)), i == j, "'%s' scored against gold '%s'", out, topics[i]);
        }
    }
}

Test(topic, scorer)
{
    struct lx_instance in = {.gold = "the history of jazz"};
    int (*score)(const void *, const struct lx_instance *, const char *, long) = task()->score;
    cr_assert_eq(score(NULL, &in, LIT(" the history of jazz")), 1);
    cr_assert_eq(score(NULL, &in, LIT(" History of Jazz.")), 1);
    cr_assert_eq(score(NULL, &in, LIT("  A history of  jazz!")), 1);
    cr_assert_eq(score(NULL, &in, LIT("\n the history of jazz")), 1);
    cr_assert_eq(score(NULL, &in, LIT(" about the history of jazz music\nno")), 1);
    cr_assert_eq(score(NULL, &in, LIT(" the history of rock")), 0);
    cr_assert_eq(score(NULL, &in, LIT(" jazz")), 0);
    cr_assert_eq(score(NULL, &in, LIT(" the story\nthe history of jazz")), 0);
    cr_assert_eq(score(NULL, &in, LIT(" the")), -1);
    cr_assert_eq(score(NULL, &in, LIT(" ...!")), -1);
    cr_assert_eq(score(NULL, &in, LIT("")), -1);
    cr_assert_eq(lx_answer_contains(LIT("An apple, the pear"), "apple pear"), 1);
    cr_assert_eq(lx_answer_contains(LIT("Theatre!"), "the theatre"), 1);
    cr_assert_eq(lx_answer_contains(LIT("an apple"), "the pear"), 0);
}

Test(topic, too_short)
{
    char topics[MAX_CONV][64], one[512];
    long k = all_topics(topics), lt = 0;
    for (long i = 0; i < k; i++)
        lt = (long)strlen(topics[i]) > lt ? (long)strlen(topics[i]) : lt;
    /* one conversation of the longest topic and no replies */
    long tail = (long)strlen(ENDING) + 1 + lt, open = (long)strlen(OPEN) + lt + 1;
    long min_sh = 1 + open + (long)strlen(Q_SHORT) + tail;
    long min_lc = 1 + snprintf(one, sizeof one, HEADER, 1L) + open + 3 + (long)strlen(CLOSE) - 2 + lt +
                  (long)strlen(Q_LONGCHAT) + tail;
    void *ps = params("{template: short, replies: 0}"), *pl = params("replies: 0"), *pd = params("");
    const struct lx_task *t = task();
    struct lx_error err = {{0}};
    struct lx_instance in;
    cr_assert_eq(t->check(ps, min_sh, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(t->check(pl, min_lc, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(t->check(ps, min_sh - 1, &err), LX_EINVAL);
    cr_assert_eq(t->generate(pl, 1, min_lc - 1, 0, 0.5, &in, &err), LX_EINVAL);
    cr_assert_null(in.tok);
    char want[64];
    snprintf(want, sizeof want, "minimum %ld", min_lc);
    cr_assert(strstr(err.msg, "too short") && strstr(err.msg, "longchat") && strstr(err.msg, want) &&
              strstr(err.msg, "hint"), "%s", err.msg);
    cr_assert_eq(t->check(pd, min_lc, &err), LX_EINVAL, "two replies do not fit the bare minimum");
    cr_assert(strstr(err.msg, "fewer replies"), "%s", err.msg);
    struct parsed *o = calloc(1, sizeof *o);
    for (long s = 0; s < 10; s++) {
        gen(ps, 1, min_sh, s, &in);
        layout(&in, 0, o);
        cr_assert_eq(o->k, 1);
        lx_instance_release(&in);
        gen(pl, 1, min_lc, s, &in);
        layout(&in, 1, o);
        cr_assert_eq(o->k, 1);
        lx_instance_release(&in);
    }
    free(o), free(ps), free(pl), free(pd);
}

Test(topic, train_sample)
{
    void *p = params("{template: short, replies: 0}");
    const struct lx_task *t = task();
    struct lx_error err = {{0}};
    struct parsed *o = calloc(1, sizeof *o);
    char first[20][64];
    int distinct = 0;
    for (int s = 0; s < 20; s++) {
        struct lx_instance in, again;
        cr_assert_eq(t->train_sample(p, 77, 256, s, &in, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(in.n, 256);
        layout(&in, 0, o);
        cr_assert_geq(o->k, 2, "only %ld topics at 256 tokens", o->k);
        cr_assert_eq(t->train_sample(p, 77, 256, s, &again, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(memcmp(in.tok, again.tok, 256 * sizeof *in.tok), 0, "train_sample is not pure");
        strcpy(first[s], in.gold);
        int seen = 0;
        for (int j = 0; j < s; j++)
            seen |= strcmp(first[j], first[s]) == 0;
        distinct += !seen;
        lx_instance_release(&in), lx_instance_release(&again);
    }
    cr_assert_geq(distinct, 10, "only %d distinct first topics over 20 training samples", distinct);
    free(o), free(p);
}
