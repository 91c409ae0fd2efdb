/*
** tests/test_passkey.c - the passkey retrieval task (tasks/passkey.c): exact
** lengths, the prompt layout byte for byte, depth placement, determinism of the
** key draws, the too-short error, the scorer and the training sampler.
**
** The expected layout is rebuilt here from the strings of Mohtashami & Jaggi
** (docs/tasks.md#passkey), not from the task's own tables.
*/
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/data/corpus.h"
#include "harness/engine/model/train.h"
#include "harness/core/hash.h"
#define FIXTURE_TASK "passkey"
#include "tests/retrieval_fixture.h"

#define DESC "There is an important info hidden inside a lot of irrelevant text. Find it and memorize them. " \
             "I will quiz you about the important information there."
#define QUESTION "What is the pass key? The pass key is"
#define STREAM "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "

/* Is s[0, n) the first n bytes of the filler stream? */
static int is_filler(const char *s, long n)
{
    long c = (long)strlen(STREAM);
    for (long i = 0; i < n; i++)
        if (s[i] != STREAM[i % c])
            return 0;
    return 1;
}

/* Check the whole layout; returns the prefix length (filler bytes before the
** info line) and the total filler bytes in *filler. */
static long layout(const struct lx_instance *in, int landmark, long *filler)
{
    char *s = text(in), info[256];
    const char *g = in->gold;
    cr_assert_eq((long)strlen(g), 5, "gold '%s'", g);
    for (int i = 0; i < 5; i++)
        cr_assert(g[i] >= '0' && g[i] <= '9', "gold '%s'", g);
    if (landmark)
        snprintf(info, sizeof info, "\nThe pass key is %s. Remember it. %s is the pass key.\n", g, g);
    else
        snprintf(info, sizeof info, "\nThe pass key is %s. Remember it.\n", g);
    const char *head = landmark ? DESC "\n" : "";
    cr_assert(strncmp(s, head, strlen(head)) == 0, "no description: %.40s", s);
    const char *pre = s + strlen(head), *at = strstr(pre, info);
    cr_assert_not_null(at, "info line not found in: %s", s);
    long n_pre = at - pre;
    cr_assert(is_filler(pre, n_pre), "prefix is not filler: %.*s", (int)n_pre, pre);
    const char *suf = at + strlen(info), *q = strstr(suf, "\n" QUESTION " ");
    cr_assert_not_null(q, "question not found after the info line");
    long n_suf = q - suf;
    cr_assert(is_filler(suf, n_suf), "suffix is not filler: %.*s", (int)n_suf, suf);
    const char *ans = q + strlen("\n" QUESTION);
    cr_assert_str_eq(ans + 1, g, "the text does not end with ' %s': '%s'", g, ans);
    cr_assert_eq(in->answer_off, 1 + (ans - s), "answer_off %ld", in->answer_off);
    cr_assert_eq(in->tok[in->answer_off], ' ');
    free(s);
    *filler = n_pre + n_suf;
    return n_pre;
}

Test(passkey, registered)
{
    struct lx_error err = {{0}};
    const struct lx_task *t = task();
    cr_assert_eq(lx_task_validate(t, &err), LX_OK, "%s", err.msg);
    cr_assert(t->generate && t->train_sample && t->score && t->check && t->split);
    cr_assert_str_eq(t->split(NULL), "test");
}

Test(passkey, exact_length_and_layout)
{
    static const long lm[] = {256, 300, 1000, 4096}, sh[] = {96, 128, 200};
    static const double depths[] = {0.0, 0.37, 0.5, 1.0};
    void *pl = params(""), *ps = params("template: short");
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < (t ? 3 : 4); i++)
            for (int d = 0; d < 4; d++) {
                struct lx_instance in;
                long L = t ? sh[i] : lm[i], F;
                gen(t ? ps : pl, 42, L, d, depths[d], &in);
                layout(&in, !t, &F);
                cr_assert_eq(in.depth, depths[d]);
                lx_instance_release(&in);
            }
    free(pl), free(ps);
}

Test(passkey, depth_places_the_key)
{
    void *p = params("");
    long prev = -1, F = 0, first_F = -1;
    for (int d = 0; d <= 10; d++) {
        struct lx_instance in;
        gen(p, 7, 1000, 3, d / 10.0, &in);
        long pre = layout(&in, 1, &F);
        if (first_F < 0)
            first_F = F;
        cr_assert_eq(F, first_F, "filler bytes change with depth");
        cr_assert(pre > prev, "depth %g: prefix %ld after %ld", d / 10.0, pre, prev);
        cr_assert(fabs((double)pre - d / 10.0 * (double)F) <= 22.0, "depth %g: prefix %ld of %ld", d / 10.0, pre, F);
        if (d > 0 && d < 10)
            cr_assert_eq(STREAM[(pre - 1) % (long)strlen(STREAM)], '.', "the prefix ends mid-sentence");
        prev = pre;
        lx_instance_release(&in);
    }
    cr_assert_eq(prev, F, "depth 1: the info line is not right before the question");
    free(p);
}

Test(passkey, deterministic_keys)
{
    void *p = params("");
    struct lx_instance a, b;
    gen(p, 1234, 500, 9, 0.25, &a);
    gen(p, 1234, 500, 9, 0.25, &b);
    cr_assert_eq(memcmp(a.tok, b.tok, (size_t)a.n * sizeof *a.tok), 0, "same arguments, different tokens");
    cr_assert_str_eq(a.gold, b.gold);
    lx_instance_release(&b);
    gen(p, 1234, 500, 9, 0.75, &b);
    cr_assert_str_eq(a.gold, b.gold, "a sample keeps its key across depths");
    lx_instance_release(&a), lx_instance_release(&b);

    long keys[50];
    int differ_key = 0, distinct = 0;
    for (int s = 0; s < 50; s++) {
        gen(p, 1234, 300, s, 0.5, &a);
        gen(p, 99, 300, s, 0.5, &b);
        keys[s] = atol(a.gold);
        cr_assert(keys[s] >= 10000 && keys[s] <= 99999, "key %ld", keys[s]);
        differ_key += strcmp(a.gold, b.gold) != 0;
        lx_instance_release(&a), lx_instance_release(&b);
    }
    for (int s = 0; s < 50; s++) {
        int seen = 0;
        for (int j = 0; j < s; j++)
            seen |= keys[j] == keys[s];
        distinct += !seen;
    }
    cr_expect_geq(distinct, 48, "only %d distinct keys over 50 samples", distinct);
    cr_expect_geq(differ_key, 48, "another data key changed only %d of 50 keys", differ_key);
    free(p);
}

Test(passkey, digits)
{
    void *p1 = params("digits: 1"), *p9 = params("digits: 9");
    for (int s = 0; s < 20; s++) {
        struct lx_instance a, b;
        gen(p1, 5, 400, s, 0.5, &a);
        gen(p9, 5, 400, s, 0.5, &b);
        cr_assert(strlen(a.gold) == 1 && a.gold[0] >= '1', "1 digit: '%s'", a.gold);
        cr_assert(strlen(b.gold) == 9 && b.gold[0] >= '1', "9 digits: '%s'", b.gold);
        cr_assert_eq(a.n - a.answer_off, 2);
        cr_assert_eq(b.n - b.answer_off, 10);
        lx_instance_release(&a), lx_instance_release(&b);
    }
    free(p1), free(p9);
}

Test(passkey, too_short)
{
    /* BOS + description \n \n info \n \n question + " " + 5 digits, no filler */
    long min_lm = 1 + (long)strlen(DESC "\n\nThe pass key is 12345. Remember it. 12345 is the pass key.\n\n" QUESTION " 12345");
    long min_sh = 1 + (long)strlen("\nThe pass key is 12345. Remember it.\n\n" QUESTION " 12345");
    void *pl = params(""), *ps = params("template: short");
    const struct lx_task *t = task();
    struct lx_error err = {{0}};
    struct lx_instance in;
    cr_assert_eq(t->check(pl, min_lm, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(t->check(ps, min_sh, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(t->generate(ps, 1, min_sh - 1, 0, 0.5, &in, &err), LX_EINVAL);
    cr_assert_eq(t->check(pl, min_lm - 1, &err), LX_EINVAL);
    cr_assert_eq(t->generate(pl, 1, min_lm - 1, 0, 0.5, &in, &err), LX_EINVAL);
    cr_assert_null(in.tok);
    char want[64];
    snprintf(want, sizeof want, "minimum %ld", min_lm);
    cr_assert(strstr(err.msg, "too short") && strstr(err.msg, "landmark") && strstr(err.msg, want), "%s", err.msg);
    long F;
    gen(pl, 1, min_lm, 0, 0.5, &in);
    layout(&in, 1, &F);
    cr_assert_eq(F, 0);
    lx_instance_release(&in);
    free(pl), free(ps);
}

Test(passkey, scorer)
{
    struct lx_instance in = {.gold = "48213"};
    int (*score)(const void *, const struct lx_instance *, const char *, long) = task()->score;
    cr_assert_eq(score(NULL, &in, LIT(" 48213")), 1);
    cr_assert_eq(score(NULL, &in, LIT("48213 is it")), 1);
    cr_assert_eq(score(NULL, &in, LIT(" is 48213.")), 1);
    cr_assert_eq(score(NULL, &in, LIT(" 48214")), 0);
    cr_assert_eq(score(NULL, &in, LIT(" 4821")), 0);
    cr_assert_eq(score(NULL, &in, LIT("the pass")), -1);
    cr_assert_eq(score(NULL, &in, LIT("")), -1);
}

Test(passkey, train_sample)
{
    void *p = params("template: short");
    const struct lx_task *t = task();
    struct lx_error err = {{0}};
    double seen[20];
    int distinct = 0;
    for (int s = 0; s < 20; s++) {
        struct lx_instance in, again;
        cr_assert_eq(t->train_sample(p, 77, 128, s, &in, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(in.n, 128);
        cr_assert(in.depth > 0.0 && in.depth < 1.0, "depth %g", in.depth);
        long F;
        layout(&in, 0, &F);
        cr_assert_eq(t->train_sample(p, 77, 128, s, &again, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(memcmp(in.tok, again.tok, 128 * sizeof *in.tok), 0, "train_sample is not pure");
        int dup = 0;
        for (int j = 0; j < s; j++)
            dup |= seen[j] == in.depth;
        distinct += !dup;
        seen[s] = in.depth;
        lx_instance_release(&in), lx_instance_release(&again);
    }
    cr_assert_eq(distinct, 20, "train depths repeat");
    free(p);
}

/* A training window of the mixture (harness/engine/model/train.c lx_mix_window):
** the instance fills the window's tail at a length drawn between the task's
** minimum (found here by a linear scan of check) and hi (T, or max_length
** when shorter), lo + ⌊v^p·(hi − lo + 1)⌋ for length_power p (1: uniform; 3:
** skewed short, v^3 taken here by pow); the head keeps the corpus window as
** unscored context. */
Test(passkey, mixture_window)
{
    enum { T = 200 };
    const struct lx_task *t = task();
    void *p = params("template: short");
    struct lx_mix mix = {.name = "passkey", .weight = 0.5, .params = p, .sample = t->train_sample, .check = t->check};
    struct lx_error err = {{0}};
    long min = 2;
    while (t->check(p, min, &err) != LX_OK)
        min++;
    static const double vs[] = {0.0, 0.3, 0.5, 0.999999};
    for (int k = 0; k < 16; k++) {
        /* uniform, skewed (p 3), then both up to max_length min + 20 (hi) instead of T */
        int tok[T], tgt[T], tok0[T], power = k % 8 < 4 ? 1 : 3;
        long hi = k < 8 ? T : min + 20;
        double v = vs[k % 4];
        mix.length_power = power;
        mix.max_length = k < 8 ? 0 : hi;
        for (int i = 0; i < T; i++)
            tok0[i] = tok[i] = 'a' + i % 26, tgt[i] = 'a' + (i + 1) % 26;
        cr_assert_eq(lx_mix_window(tok, tgt, T, &mix, 1, 0.25, v, 9, k, &err), LX_OK, "%s", err.msg);
        long len = min + (long)(pow(v, power) * (double)(hi - min + 1)), off = T - len;
        cr_assert(len <= hi, "v %g, p %d: an instance of %ld past %ld", v, power, len, hi);
        cr_assert_eq(tok[off], LX_TOK_BOS, "v %g, p %d: no instance at %ld", v, power, off);
        cr_assert_eq(memcmp(tok, tok0, sizeof(int) * (size_t)off), 0, "the corpus head changed");
        for (long i = 0; i < off; i++)
            cr_assert_eq(tgt[i], -1, "the corpus head is scored at %ld", i);
        struct lx_instance in;
        cr_assert_eq(t->train_sample(p, 9 ^ lx_hash64("passkey"), len, k, &in, &err), LX_OK, "%s", err.msg);
        cr_assert_eq(memcmp(tok + off, in.tok, sizeof(int) * (size_t)len), 0, "not the task's training sample");
        for (long i = 0; i + 1 < len; i++)
            cr_assert_eq(tgt[off + i], in.tok[i + 1]);
        cr_assert_eq(tgt[T - 1], -1);
        lx_instance_release(&in);
    }
    /* score: answer keeps the targets of the answer tokens only */
    mix.length_power = 0;   /* unset: uniform, up to T */
    mix.max_length = 0;
    mix.answer_only = 1;
    int tok2[T], tgt2[T];
    for (int i = 0; i < T; i++)
        tok2[i] = tgt2[i] = 'y';
    cr_assert_eq(lx_mix_window(tok2, tgt2, T, &mix, 1, 0.25, 0.3, 9, 1, &err), LX_OK, "%s", err.msg);
    long len = min + (long)(0.3 * (double)(T - min + 1)), off = T - len;
    struct lx_instance in;
    cr_assert_eq(t->train_sample(p, 9 ^ lx_hash64("passkey"), len, 1, &in, &err), LX_OK, "%s", err.msg);
    for (long i = 0; i < T; i++) {
        long at = i - off;      /* position in the instance: predicts instance token at + 1 */
        int want = at >= 0 && at + 1 < len && at + 1 >= in.answer_off ? in.tok[at + 1] : -1;
        cr_assert_eq(tgt2[i], want, "position %ld (instance %ld, answer at %ld)", i, at, in.answer_off);
    }
    lx_instance_release(&in);
    mix.answer_only = 0;

    /* a draw past the task's weight leaves the corpus window alone */
    int tok[T], tgt[T];
    for (int i = 0; i < T; i++)
        tok[i] = tgt[i] = 'x';
    cr_assert_eq(lx_mix_window(tok, tgt, T, &mix, 1, 0.75, 0.5, 9, 0, &err), LX_OK);
    for (int i = 0; i < T; i++)
        cr_assert(tok[i] == 'x' && tgt[i] == 'x');
    free(p);
}
