/*
** tests/test_needle.c - the needle-in-a-haystack task (tasks/needle.c): exact
** lengths, the layout parsed back from the tokens (needles, question, answer,
** the haystack being the held-out novel's own text), depth placement at
** sentence starts, determinism and pairing of the draws, the too-short error,
** the scorer, the distractors of three needles (by hand and through the cell
** runner on a tiny random model) and the training sampler.
**
** The layout is parsed with the strings of docs/tasks.md#needle written out here, not
** with the task's tables; a sentence start is re-derived here from its
** definition in tasks/retrieval.h.
*/
#define _GNU_SOURCE     /* memmem */
#include <criterion/criterion.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/data/corpus.h"
#include "harness/engine/model/model.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/core/result.h"
#include "tests/stack.h"
#define FIXTURE_TASK "needle"
#include "tests/retrieval_fixture.h"

#define MAGIC "The special magic "
#define IS " number is: "
#define Q_FULL "\nWhat is the special magic %s number? The special magic %s number is"
#define Q_SHORT "\nThe special magic %s number is"
#define LONGEST "Copenhagen"    /* the longest city of the task's list */

/* A sentence starts at s[i]: after a newline, or after ". ", "! ", "? " with
** an optional closing quote before the space; not at white space or a
** lowercase letter. */
static int starts(const char *s, long i)
{
    if (i < 1 || isspace((unsigned char)s[i]) || islower((unsigned char)s[i]))
        return 0;
    if (s[i - 1] == '\n')
        return 1;
    if (s[i - 1] != ' ' || i < 2)
        return 0;
    long e = i >= 3 && (s[i - 2] == '"' || s[i - 2] == '\'') ? i - 3 : i - 2;
    return strchr(".!?", s[e]) != NULL && s[e] != '\0';
}

/* A split's text, doubled so that a cyclic excerpt is a plain substring;
** train: the first 90% of the training novels end to end. */
static char *prose(const char *split, double frac, long *n)
{
    return prose_text(split, frac, n, 0);
}

struct parsed {
    int n;                  /* needles found */
    char city[3][32];       /* in text order */
    char number[3][8];
    long pos[3];            /* where each starts in the text (after BOS) */
    long split[3];          /* where each went into the haystack */
    char asked[32];         /* the question's city */
    char *hay;              /* the text without needles and question (malloc'd) */
    long H;
};

/* Parse an instance back: [haystack with needles] question " " gold. */
static void parse(const struct lx_instance *in, int full, struct parsed *r)
{
    char *s = text(in), q[160];
    memset(r, 0, sizeof *r);
    const char *qs = NULL;
    for (const char *p = s; (p = strstr(p, full ? "\nWhat is the special magic " : "\n" MAGIC)); p++)
        qs = p;     /* the last one is the question */
    cr_assert_not_null(qs, "no question in: %s", s);
    const char *c0 = qs + strlen(full ? "\nWhat is the special magic " : "\n" MAGIC), *c1 = strstr(c0, " number");
    cr_assert(c1 && c1 - c0 < 32);
    memcpy(r->asked, c0, (size_t)(c1 - c0));
    snprintf(q, sizeof q, full ? Q_FULL : Q_SHORT, r->asked, r->asked);
    cr_assert(strncmp(qs, q, strlen(q)) == 0, "question '%s' is not '%s'", qs, q);
    cr_assert_str_eq(qs + strlen(q) + 1, in->gold, "the text does not end with ' %s'", in->gold);
    cr_assert_eq(qs[strlen(q)], ' ');
    cr_assert_eq(in->answer_off, 1 + (qs - s) + (long)strlen(q), "answer_off %ld", in->answer_off);
    long n = qs - s;
    r->hay = malloc((size_t)n + 1);
    for (long i = 0; i < n;) {
        if (strncmp(s + i, MAGIC, strlen(MAGIC)) != 0) {
            r->hay[r->H++] = s[i++];
            continue;
        }
        cr_assert_lt(r->n, 3, "more than three needles");
        const char *c = s + i + strlen(MAGIC), *e = strstr(c, IS);
        cr_assert(e && e - c < 32, "a needle without ' number is: '");
        memcpy(r->city[r->n], c, (size_t)(e - c));
        const char *d = e + strlen(IS);
        for (int k = 0; k < 7; k++)
            cr_assert(isdigit((unsigned char)d[k]), "needle number '%.8s'", d);
        cr_assert_eq(d[7], '.', "needle number '%.8s' is not 7 digits and a full stop", d);
        memcpy(r->number[r->n], d, 7);
        r->pos[r->n] = i;
        i = d + 8 - s;
        if (i < n && s[i] == ' ') {     /* a needle and the space after it */
            i++;
        } else {                        /* after the haystack's end: the space before it */
            cr_assert(r->H > 0 && r->hay[r->H - 1] == ' ', "a needle without its space");
            r->H--;
        }
        r->split[r->n++] = r->H;
    }
    for (int j = 0; j < r->n; j++)  /* needles after the end, each after its own space */
        r->split[j] = r->split[j] > r->H ? r->H : r->split[j];
    r->hay[r->H] = '\0';
    cr_assert_null(strstr(r->hay, "special magic"), "a needle left in the haystack");
    free(s);
}

/* The parsed needle the question asks about. */
static int asked(const struct parsed *r)
{
    for (int j = 0; j < r->n; j++)
        if (strcmp(r->city[j], r->asked) == 0)
            return j;
    cr_assert_fail("no needle for the asked city %s", r->asked);
    return -1;
}

/* Everything the layout promises, for an instance of `needles` needles. */
static void check_layout(const struct lx_instance *in, int full, long needles, const char *book, long n_book,
                         struct parsed *r)
{
    parse(in, full, r);
    cr_assert_eq(r->n, needles, "%d needles, not %ld", r->n, needles);
    for (int j = 0; j < r->n; j++)
        for (int i = 0; i < j; i++) {
            cr_assert_str_neq(r->city[i], r->city[j], "city %s twice", r->city[j]);
            cr_assert_str_neq(r->number[i], r->number[j], "number %s twice", r->number[j]);
        }
    int a = asked(r);
    cr_assert_str_eq(r->number[a], in->gold, "gold is not the asked needle's number");
    cr_assert_eq(in->n_alt, needles - 1);
    for (int j = 0, k = 0; j < r->n; j++) {     /* the distractors are the other needles' numbers */
        if (j == a)
            continue;
        int found = 0;
        for (int i = 0; i < in->n_alt; i++)
            found |= strcmp(in->alt[i], r->number[j]) == 0;
        cr_assert(found, "needle %s is not a distractor", r->number[j]);
        cr_assert(in->alt_depth[k] >= 0.0 && in->alt_depth[k] <= 1.0);
        k++;
    }
    if (r->H > 0)
        cr_assert_not_null(memmem(book, (size_t)(2 * n_book), r->hay, (size_t)r->H),
                           "the haystack is not the novel's text: %.80s", r->hay);
    if (r->H >= 200) {
        const char *at = memmem(book, (size_t)(2 * n_book), r->hay, (size_t)r->H);
        long o = at - book;
        cr_assert(o == 0 || starts(book, o), "the haystack starts mid-sentence: %.60s", r->hay);
    }
}

/* Is split p of hay the candidate nearest x·H (0, H and sentence starts)? */
static void check_nearest(const struct parsed *r, long p, double x)
{
    double t = x * (double)r->H;
    cr_assert(p == 0 || p == r->H || starts(r->hay, p), "split %ld is not a sentence start", p);
    for (long i = 0; i <= r->H; i++)
        if (i == 0 || i == r->H || starts(r->hay, i))
            cr_assert(fabs((double)i - t) >= fabs((double)p - t), "split %ld is nearer %g than %ld", i, t, p);
}

Test(needle, registered)
{
    struct lx_error err = {{0}};
    const struct lx_task *t = task();
    cr_assert_eq(lx_task_validate(t, &err), LX_OK, "%s", err.msg);
    cr_assert(t->generate && t->train_sample && t->score && t->check && t->split && t->trials);
    cr_assert_str_eq(t->split(NULL), "test");
    void *p = params("");
    long samples, depths;
    t->trials(p, &samples, &depths);
    cr_assert_eq(depths, 11, "the default grid is 0, 10, ..., 100%%");
    cr_assert_eq(samples, 20);
    free(p);
}

Test(needle, exact_length_and_layout, .timeout = 60)
{
    static const long full_len[] = {256, 300, 1000, 4096}, short_len[] = {128, 256, 1000};
    static const double depths[] = {0.0, 0.37, 0.5, 1.0};
    static const char *yaml[] = {"", "needles: 3", "template: short", "{template: short, needles: 3}"};
    long n_book;
    char *book = prose("test", 1.0, &n_book);
    for (int y = 0; y < 4; y++) {
        void *p = params(yaml[y]);
        int full = y < 2;
        long needles = y % 2 ? 3 : 1;
        for (int i = 0; i < (full ? 4 : 3); i++) {
            long L = full ? full_len[i] : short_len[i];
            if (needles == 3 && L < 240)
                continue;   /* three needles need 240 tokens (full) or 195 (short) */
            for (int d = 0; d < 4; d++) {
                struct lx_instance in;
                struct parsed r;
                gen(p, 42, L, d, depths[d], &in);
                check_layout(&in, full, needles, book, n_book, &r);
                cr_assert_eq(in.depth, depths[d]);
                check_nearest(&r, r.split[asked(&r)], depths[d]);
                free(r.hay);
                lx_instance_release(&in);
            }
        }
        free(p);
    }
    free(book);
}

Test(needle, depth_moves_the_asked_needle, .timeout = 60)
{
    void *p = params("needles: 3");
    long n_book, prev_pos = -1, prev_split = -1;
    char *book = prose("test", 1.0, &n_book), *hay0 = NULL;
    struct lx_instance in0;
    gen(p, 9, 4096, 5, 0.0, &in0);
    for (int d = 0; d <= 10; d++) {
        struct lx_instance in;
        struct parsed r;
        gen(p, 9, 4096, 5, d / 10.0, &in);
        check_layout(&in, 1, 3, book, n_book, &r);
        int a = asked(&r);
        long split = r.split[a];
        check_nearest(&r, split, d / 10.0);
        cr_assert(split >= prev_split && r.pos[a] >= prev_pos, "depth %g: the needle moved back", d / 10.0);
        cr_assert(fabs((double)split - d / 10.0 * (double)r.H) < 400.0, "depth %g: split %ld of %ld", d / 10.0,
                  split, r.H);
        if (d == 0)
            cr_assert_eq(r.pos[a], 0, "depth 0: the asked needle is not first");
        if (d == 10)
            cr_assert_eq(split, r.H, "depth 1: the asked needle is not last");
        /* the sample's haystack and distractors stay put */
        if (!hay0)
            hay0 = strdup(r.hay);
        cr_assert_str_eq(r.hay, hay0, "depth %g: another haystack", d / 10.0);
        cr_assert_eq(memcmp(in.alt, in0.alt, sizeof in.alt), 0);
        cr_assert_eq(memcmp(in.alt_depth, in0.alt_depth, sizeof in.alt_depth), 0);
        cr_assert_str_eq(in.gold, in0.gold);
        prev_split = split;
        prev_pos = r.pos[a];
        free(r.hay);
        lx_instance_release(&in);
    }
    cr_assert_gt(prev_split, 3000, "the needle did not travel");
    lx_instance_release(&in0);
    free(hay0);
    free(book);
    free(p);
}

Test(needle, deterministic_draws)
{
    void *p = params("needles: 3");
    struct lx_instance a, b;
    gen(p, 1234, 600, 9, 0.25, &a);
    gen(p, 1234, 600, 9, 0.25, &b);
    cr_assert_eq(memcmp(a.tok, b.tok, (size_t)a.n * sizeof *a.tok), 0, "same arguments, different tokens");
    cr_assert_eq(memcmp(a.alt, b.alt, sizeof a.alt), 0);
    lx_instance_release(&a), lx_instance_release(&b);
    char gold[50][LX_MAX_ANSWER + 1];
    int distinct = 0, other_key = 0;
    for (int s = 0; s < 50; s++) {
        gen(p, 1234, 400, s, 0.5, &a);
        gen(p, 99, 400, s, 0.5, &b);
        long v = atol(a.gold);
        cr_assert(strlen(a.gold) == 7 && v >= 1000000 && v <= 9999999, "number %s", a.gold);
        snprintf(gold[s], sizeof gold[s], "%.*s", (int)sizeof gold[s] - 1, a.gold);
        other_key += strcmp(a.gold, b.gold) != 0;
        int seen = 0;
        for (int j = 0; j < s; j++)
            seen |= strcmp(gold[j], gold[s]) == 0;
        distinct += !seen;
        lx_instance_release(&a), lx_instance_release(&b);
    }
    cr_expect_geq(distinct, 49, "only %d distinct numbers over 50 samples", distinct);
    cr_expect_geq(other_key, 49, "another data key changed only %d of 50 numbers", other_key);
    free(p);
}

Test(needle, too_short)
{
    /* BOS + needles (each with its space) + question + " " + 7 digits, no haystack, longest city */
    char one[128], q[192];
    snprintf(one, sizeof one, MAGIC "%s" IS "1234567. ", LONGEST);
    snprintf(q, sizeof q, Q_FULL " 1234567", LONGEST, LONGEST);
    long min1 = 1 + (long)strlen(one) + (long)strlen(q), min3 = min1 + 2 * (long)strlen(one);
    snprintf(q, sizeof q, Q_SHORT " 1234567", LONGEST);
    long min_short = 1 + (long)strlen(one) + (long)strlen(q);
    void *p1 = params(""), *p3 = params("needles: 3"), *ps = params("template: short");
    const struct lx_task *t = task();
    struct lx_error err = {{0}};
    struct lx_instance in;
    cr_assert_eq(t->check(p1, min1, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(t->check(p3, min3, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(t->check(ps, min_short, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(t->check(ps, min_short - 1, &err), LX_EINVAL);
    cr_assert_eq(t->check(p1, min1 - 1, &err), LX_EINVAL);
    cr_assert_eq(t->check(p3, min3 - 1, &err), LX_EINVAL);
    char want[64];
    snprintf(want, sizeof want, "minimum %ld", min3);
    cr_assert(strstr(err.msg, "too short") && strstr(err.msg, want) && strstr(err.msg, "hint:"), "%s", err.msg);
    cr_assert_eq(t->generate(p1, 1, min1 - 1, 0, 0.5, &in, &err), LX_EINVAL);
    cr_assert_null(in.tok);
    for (int s = 0; s < 10; s++) {  /* at the minimum, every draw fits (shorter cities leave a haystack) */
        gen(p3, 1, min3, s, 0.5, &in);
        lx_instance_release(&in);
    }
    free(p1), free(p3), free(ps);
}

Test(needle, scorer)
{
    struct lx_instance in = {.gold = "4821306"};
    int (*score)(const void *, const struct lx_instance *, const char *, long) = task()->score;
    cr_assert_eq(score(NULL, &in, LIT(" 4821306")), 1);
    cr_assert_eq(score(NULL, &in, LIT(" 4821306.")), 1);
    cr_assert_eq(score(NULL, &in, LIT(" is 4821306 and")), 1);
    cr_assert_eq(score(NULL, &in, LIT(" 4821307")), 0);
    cr_assert_eq(score(NULL, &in, LIT(" 48213060")), 0, "eight digits");
    cr_assert_eq(score(NULL, &in, LIT(" 482130")), 0, "six digits");
    cr_assert_eq(score(NULL, &in, LIT(" 1234567 4821306")), 0, "the first number counts");
    cr_assert_eq(score(NULL, &in, LIT(" the special")), -1);
    cr_assert_eq(score(NULL, &in, LIT("")), -1);
}

Test(needle, distractors_by_hand)
{
    const struct lx_task *t = task();
    struct lx_instance in = {.gold = "4821306", .alt = {"1111111", "2222222"}, .n_alt = 2};
    cr_assert_eq(lx_answer_distractor(t, NULL, &in, LIT(" 2222222")), 1);
    cr_assert_eq(lx_answer_distractor(t, NULL, &in, LIT(" 1111111.")), 0);
    cr_assert_eq(lx_answer_distractor(t, NULL, &in, LIT(" 4821306")), -1, "the gold is no distractor");
    cr_assert_eq(lx_answer_distractor(t, NULL, &in, LIT(" 3333333")), -1);
    cr_assert_eq(lx_answer_distractor(t, NULL, &in, LIT(" magic")), -1);
    in.n_alt = 0;
    cr_assert_eq(lx_answer_distractor(t, NULL, &in, LIT(" 2222222")), -1, "no distractors, no hit");
}

/* A tiny random causal model (1 layer, width 16, seed 3) and [rope] compiled for it at length 256. */
static void tiny_rope_model(struct lx_model *m, struct tstack *st)
{
    struct lx_arch ar;
    lx_params_defaults(&lx_arch_schema, &ar);
    ar.layers = 1, ar.d_model = 16, ar.heads = 2, ar.d_head = 8, ar.d_mlp = 32;
    lx_params_finish(&lx_arch_schema, &ar);
    lx_model_init(m, &ar, 3);
    struct lx_facts f = tfacts(8, 64, 2, 256);
    tstack_make(st, "[rope]", &f);
}

/* The cell runner on a tiny random model: distractor_rate with three needles
** (in [0, 1 − acc]), none with one; the rest as for every retrieval task. */
Test(needle, runner_reports_distractors, .timeout = 60)
{
    struct lx_model m;
    struct tstack st;
    tiny_rope_model(&m, &st);
    for (int three = 0; three < 2; three++) {
        void *p = params(three ? "{template: short, needles: 3, samples: 3, depths: 2}"
                               : "{template: short, samples: 3, depths: 2}");
        struct lx_task_ctx ctx = {.params = p, .spec = &st.spec, .length = 256, .seed = 1, .data_key = 77,
                                  .model = &m, .train_len = 64, .task = task()};
        struct lx_result res = {0};
        struct lx_error err = {{0}};
        cr_assert_eq(lx_retrieval_run(&ctx, &res, &err), LX_OK, "%s", err.msg);
        const struct lx_metric *dr = lx_result_find(&res, "distractor_rate"), *acc = lx_result_find(&res, "acc");
        cr_assert_not_null(acc);
        cr_assert_eq(res.n_outputs, 6);
        if (three) {
            cr_assert_not_null(dr, "three needles: no distractor_rate");
            cr_assert(dr->value >= 0.0 && dr->value <= 1.0 - acc->value + 1e-12, "distractor_rate %g", dr->value);
        } else {
            cr_assert_null(dr, "one needle: distractor_rate %g", dr ? dr->value : 0.0);
        }
        lx_result_release(&res);
        free(p);
    }
    tstack_free(&st);
    lx_model_release(&m);
}

/* A cell past the chunk's tokens is made, answered and scored a chunk at a time (retrieval.c): the same
** metrics, depth points and outputs, bit for bit in portable numerics, as the cell made whole. 36
** instances of 256 tokens (the engine's batch 32): chunks of 32 and 4, the first ending inside the third
** depth; the chunk sizes worked by hand. */
Test(needle, chunks_give_the_cell_made_whole, .timeout = 120)
{
    cr_expect_eq(lx_retrieval_chunk(100, 4096), 100);
    cr_expect_eq(lx_retrieval_chunk(11000, 1L << 20), 16, "2^24 / 2^20 instances of batch 1");
    cr_expect_eq(lx_retrieval_chunk(5000, 4096), 4096, "2^24 / 4096 = 4096, a multiple of the batch 2");
    cr_expect_eq(lx_retrieval_chunk(3, 1L << 20), 3);
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    struct lx_model m;
    struct tstack st;
    tiny_rope_model(&m, &st);
    void *p = params("{template: short, needles: 3, samples: 12, depths: 3}");
    struct lx_task_ctx ctx = {.params = p, .spec = &st.spec, .length = 256, .seed = 1, .data_key = 77,
                              .model = &m, .train_len = 64, .task = task()};
    struct lx_result res[2] = {{0}};
    for (int k = 0; k < 2; k++) {
        struct lx_error err = {{0}};
        lx_retrieval_set_chunk_tokens(k ? 1 : 0);
        cr_assert_eq(lx_retrieval_chunk(36, 256), k ? 32 : 36);
        cr_assert_eq(lx_retrieval_run(&ctx, &res[k], &err), LX_OK, "%s", err.msg);
    }
    lx_retrieval_set_chunk_tokens(0);
    cr_assert_eq(res[1].n_metrics, res[0].n_metrics);
    for (int i = 0; i < res[0].n_metrics; i++) {
        cr_expect_str_eq(res[1].metrics[i].name, res[0].metrics[i].name);
        cr_expect(memcmp(&res[1].metrics[i].value, &res[0].metrics[i].value, sizeof(double)) == 0, "%s: %.17g %.17g",
                  res[0].metrics[i].name, res[1].metrics[i].value, res[0].metrics[i].value);
    }
    cr_assert_eq(res[0].n_points, 9, "three series at three depths");
    cr_assert_eq(res[1].n_points, res[0].n_points);
    for (int i = 0; i < res[0].n_points; i++)
        cr_expect(strcmp(res[1].points[i].series, res[0].points[i].series) == 0 &&
                  res[1].points[i].x == res[0].points[i].x && res[1].points[i].y == res[0].points[i].y, "point %d", i);
    cr_assert_eq(res[0].n_outputs, 36);
    cr_assert_eq(res[1].n_outputs, 36);
    for (int i = 0; i < 36; i++) {
        const struct lx_output *a = &res[0].outputs[i], *b = &res[1].outputs[i];
        cr_expect(b->sample == a->sample && b->depth == a->depth && b->score == a->score && b->logprob == a->logprob
                  && b->n_text == a->n_text && memcmp(b->text, a->text, (size_t)a->n_text) == 0
                  && strcmp(b->gold, a->gold) == 0, "output %d", i);
    }
    for (int k = 0; k < 2; k++)
        lx_result_release(&res[k]);
    free(p);
    tstack_free(&st);
    lx_model_release(&m);
}

Test(needle, train_sample)
{
    void *p = params("{template: short, needles: 3}");
    const struct lx_task *t = task();
    struct lx_error err = {{0}};
    long n_train;
    char *train = prose("train", 0.9, &n_train);
    double seen[20];
    int distinct = 0;
    for (int s = 0; s < 20; s++) {
        struct lx_instance in, again;
        struct parsed r;
        cr_assert_eq(t->train_sample(p, 77, 256, s, &in, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(in.n, 256);
        cr_assert(in.depth > 0.0 && in.depth < 1.0, "depth %g", in.depth);
        check_layout(&in, 0, 3, train, n_train, &r);   /* the haystack is training text */
        free(r.hay);
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
    free(train);
    free(p);
}
