/*
** tasks/scorers.c - the named answer scorers and their table (scorers.h).
**
** Each scorer follows one line or two of its peer's Python; the helpers below
** are those Python str methods on code points (struct text): lower(),
** strip(), split()/join, `in`, and the regular expressions `\d+` and
** `\b(a|an|the)\b`. tests/test_scorers.c checks every scorer on a table of
** (output, gold) pairs whose expected scores the peers' own definitions give
** (tests/ref/scorers_ref.py).
*/
#include "tasks/scorers.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/tokenizers/unicode.h"

/* ---- text as code points ---------------------------------------------------- */

struct text {
    int32_t *c;     /* (cap) code points; a byte that is not UTF-8 is -1 - byte */
    long n;
};

static void text_of(struct text *t, const char *s, size_t n)
{
    t->c = lx_xmalloc(sizeof(int32_t) * (2 * n + 1));     /* room for lower()'s growth */
    t->n = 0;
    for (size_t i = 0; i < n;)
        i += (size_t)lx_unicode_next(s + i, n - i, &t->c[t->n++]);
}

static int has(int32_t c, unsigned cls)
{
    return (lx_unicode_class(c) & cls) != 0;
}

/* Is the capital sigma at i final (Unicode's Final_Sigma, as str.lower() tests it)? */
static int final_sigma(const int32_t *c, long n, long i)
{
    long j = i - 1;
    while (j >= 0 && has(c[j], LX_UC_CASE_IGNORABLE))
        j--;
    if (j < 0 || !has(c[j], LX_UC_CASED))
        return 0;
    j = i + 1;
    while (j < n && has(c[j], LX_UC_CASE_IGNORABLE))
        j++;
    return j == n || !has(c[j], LX_UC_CASED);
}

/* str.lower(): the simple mappings, U+0130 to "i" + U+0307, final sigma. */
static void text_lower(struct text *t)
{
    int32_t *out = lx_xmalloc(sizeof(int32_t) * (2 * (size_t)t->n + 1));
    long k = 0;
    for (long i = 0; i < t->n; i++) {
        int32_t c = t->c[i];
        if (c == 0x130) {
            out[k++] = 'i';
            out[k++] = 0x307;
        } else if (c == 0x3A3)
            out[k++] = final_sigma(t->c, t->n, i) ? 0x3C2 : 0x3C3;
        else
            out[k++] = lx_unicode_lower(c);
    }
    free(t->c);
    t->c = out;
    t->n = k;
}

/* str.strip(). */
static void text_strip(struct text *t)
{
    long a = 0, b = t->n;
    while (a < b && has(t->c[a], LX_UC_SPACE))
        a++;
    while (b > a && has(t->c[b - 1], LX_UC_SPACE))
        b--;
    memmove(t->c, t->c + a, sizeof(int32_t) * (size_t)(b - a));
    t->n = b - a;
}

/* " ".join(s.split()). */
static void text_squeeze(struct text *t)
{
    long k = 0;
    for (long i = 0; i < t->n;) {
        if (has(t->c[i], LX_UC_SPACE)) {
            while (i < t->n && has(t->c[i], LX_UC_SPACE))
                i++;
            if (k > 0 && i < t->n)
                t->c[k++] = ' ';
        } else
            t->c[k++] = t->c[i++];
    }
    t->n = k;
}

/* Does needle occur in hay (Python's `in`; the empty string is in every string)? */
static int text_in(const struct text *needle, const struct text *hay)
{
    for (long i = 0; i + needle->n <= hay->n; i++)
        if (memcmp(hay->c + i, needle->c, sizeof(int32_t) * (size_t)needle->n) == 0)
            return 1;
    return 0;
}

/* SQuAD's normalize_answer: lower(), ASCII punctuation removed (Python's
** string.punctuation), each whole word a, an or the (a maximal run of `\w`)
** replaced by a space, then white space collapsed. */
static void text_squad(struct text *t)
{
    static const char punct[] = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
    text_lower(t);
    long k = 0;
    for (long i = 0; i < t->n; i++)
        if (!(t->c[i] > 0 && t->c[i] < 128 && strchr(punct, (int)t->c[i])))
            t->c[k++] = t->c[i];
    t->n = k;
    for (long i = 0; i < t->n;) {
        if (!has(t->c[i], LX_UC_WORD)) {
            i++;
            continue;
        }
        long j = i;
        while (j < t->n && has(t->c[j], LX_UC_WORD))
            j++;
        int32_t *w = t->c + i;
        long len = j - i;
        int article = (len == 1 && w[0] == 'a') || (len == 2 && w[0] == 'a' && w[1] == 'n') ||
                      (len == 3 && w[0] == 't' && w[1] == 'h' && w[2] == 'e');
        if (article) {      /* one space for the word: shift the rest left */
            w[0] = ' ';
            memmove(w + 1, t->c + j, sizeof(int32_t) * (size_t)(t->n - j));
            t->n -= len - 1;
            j = i + 1;
        }
        i = j;
    }
    text_squeeze(t);
}

/* ---- integers --------------------------------------------------------------- */

/* The maximal runs of `\d` in t: the first (last = 0) or the last; its start
** and length in *at, *len; 0 when there is none. */
static int digit_run(const struct text *t, int last, long *at, long *len)
{
    int found = 0;
    for (long i = 0; i < t->n;) {
        if (lx_unicode_digit(t->c[i]) < 0) {
            i++;
            continue;
        }
        long j = i;
        while (j < t->n && lx_unicode_digit(t->c[j]) >= 0)
            j++;
        *at = i, *len = j - i, found = 1;
        if (!last)
            break;
        i = j;
    }
    return found;
}

/* The ASCII integer gold (an optional '-', digits) without its sign and
** leading zeros: its first significant digit into *at; returns 1 when it is
** negative and not zero. */
static int gold_magnitude(const char *gold, size_t glen, size_t *at)
{
    size_t b = glen > 0 && gold[0] == '-';
    while (b + 1 < glen && gold[b] == '0')
        b++;
    *at = b;
    return gold[0] == '-' && !(glen - b == 1 && gold[b] == '0');
}

/* Is int(digits) == the gold integer? */
static int int_equals(const int32_t *d, long n, const char *gold, size_t glen)
{
    size_t b;
    if (gold_magnitude(gold, glen, &b))     /* a run of digits is never negative */
        return 0;
    long a = 0;
    while (a < n - 1 && lx_unicode_digit(d[a]) == 0)
        a++;
    if ((size_t)(n - a) != glen - b)
        return 0;
    for (long i = a; i < n; i++)
        if (lx_unicode_digit(d[i]) != gold[b + (size_t)(i - a)] - '0')
            return 0;
    return 1;
}

/* The first or last run of digits as an integer, against the gold integer. */
static double int_score(const char *output, size_t n, const struct lx_golds *g, int last, int *null)
{
    struct text t;
    text_of(&t, output, n);
    long at = 0, len = 0;
    *null = !digit_run(&t, last, &at, &len);
    int ok = !*null && int_equals(t.c + at, len, g->s[0], g->len[0]);
    size_t b;
    if (*null && last)      /* LongChat's parse of no integer is -1, compared like any other */
        ok = gold_magnitude(g->s[0], g->len[0], &b) && g->len[0] - b == 1 && g->s[0][b] == '1';
    free(t.c);
    return ok;
}

/* landmark-attention llama/run_test.py: int(re.search(r'\d+', response).group()) == pass_key */
static double score_first_int(const char *output, size_t n, const struct lx_golds *g, int *null)
{
    return int_score(output, n, g, 0, null);
}

/* LongChat longeval/utils.py: int(re.findall("\d+", output)[-1]), -1 if none, == expected_number */
static double score_last_int(const char *output, size_t n, const struct lx_golds *g, int *null)
{
    return int_score(output, n, g, 1, null);
}

/* ---- text ------------------------------------------------------------------- */

/* LongLoRA passkey_retrivial.py: the generated tokens (as many as the gold's)
** equal the gold's, tokenizer(answer).input_ids[:, 1:], which begin with
** SentencePiece's dummy prefix; on text (a stored output decodes it as a
** space), the output begins with the gold, one leading space aside. */
static double score_token_exact(const char *output, size_t n, const struct lx_golds *g, int *null)
{
    *null = n == 0;
    size_t sp = n > 0 && output[0] == ' ';
    return n - sp >= g->len[0] && memcmp(output + sp, g->s[0], g->len[0]) == 0;
}

/* Found: how many golds, prepared by prep, are in the output prepared by prep. */
static long golds_in(const struct text *out, const struct lx_golds *g, long n_golds, void (*prep)(struct text *))
{
    long found = 0;
    for (long i = 0; i < n_golds; i++) {
        struct text t;
        text_of(&t, g->s[i], g->len[i]);
        prep(&t);
        found += text_in(&t, out);
        free(t.c);
    }
    return found;
}

/* How many of the first n_golds golds, each prepared by prep_gold, are in the
** output read by cut (optional), then prep; *null when the read output is
** nothing but white space. */
static long golds_found(const char *output, size_t n, const struct lx_golds *g, long n_golds,
                        void (*cut)(struct text *), void (*prep)(struct text *), void (*prep_gold)(struct text *),
                        int *null)
{
    struct text t;
    text_of(&t, output, n);
    if (cut)
        cut(&t);
    prep(&t);
    long i = 0;
    while (i < t.n && has(t.c[i], LX_UC_SPACE))
        i++;
    *null = i == t.n;
    long found = golds_in(&t, g, n_golds, prep_gold);
    free(t.c);
    return found;
}

/* a case-insensitive `gold in output` for any gold */
static double score_substring(const char *output, size_t n, const struct lx_golds *g, int *null)
{
    return golds_found(output, n, g, g->n, NULL, text_lower, text_lower, null) > 0;
}

/* RULER scripts/eval/evaluate.py postprocess_pred: strip, [\x00-\x1f] to "\n", strip;
** then string_match_*'s pred.lower() */
static void ruler_post(struct text *t)
{
    text_strip(t);
    for (long i = 0; i < t->n; i++)
        if (t->c[i] >= 0 && t->c[i] < 0x20)
            t->c[i] = '\n';
    text_strip(t);
    text_lower(t);
}

/* RULER scripts/eval/synthetic/constants.py string_match_all, one sample: the fraction of golds found */
static double score_ruler_all(const char *output, size_t n, const struct lx_golds *g, int *null)
{
    return (double)golds_found(output, n, g, g->n, NULL, ruler_post, text_lower, null) / (double)g->n;
}

/* string_match_part, one sample: 1 when any gold is found */
static double score_ruler_part(const char *output, size_t n, const struct lx_golds *g, int *null)
{
    return golds_found(output, n, g, g->n, NULL, ruler_post, text_lower, null) > 0;
}

/* lost-in-the-middle scripts/evaluate_qa_responses.py: model_answer.split("\n")[0].strip() */
static void first_line(struct text *t)
{
    for (long i = 0; i < t->n; i++)
        if (t->c[i] == '\n') {
            t->n = i;
            break;
        }
    text_strip(t);
}

/* src/lost_in_the_middle/metrics.py best_subspan_em: any normalized gold in the normalized output */
static double score_litm_subspan_em(const char *output, size_t n, const struct lx_golds *g, int *null)
{
    return golds_found(output, n, g, g->n, first_line, text_squad, text_squad, null) > 0;
}

/* LongChat topics: the first topic (the gold; LongChat's `topics` lists the
** others after it) in SQuAD form inside the whole output's */
static double score_topic_contains(const char *output, size_t n, const struct lx_golds *g, int *null)
{
    return golds_found(output, n, g, 1, NULL, text_squad, text_squad, null) > 0;
}

/* ---- the table ---------------------------------------------------------------- */

const struct lx_scorer lx_scorers[] = {
    {"first_int", "landmark-attention llama/run_test.py: first \\d+ as int == pass key", LX_GOLD_INT,
     score_first_int},
    {"last_int", "LongChat longeval/utils.py: last \\d+ as int (-1 if none) == expected_number", LX_GOLD_INT,
     score_last_int},
    {"token_exact", "LongLoRA passkey_retrivial.py: the answer's tokens exactly (text: a prefix)", LX_GOLD_TEXT,
     score_token_exact},
    {"substring", "the gold inside the output, both lower-cased", LX_GOLD_TEXT, score_substring},
    {"ruler_all", "RULER scripts/eval: postprocess_pred, string_match_all per sample", LX_GOLD_ALL,
     score_ruler_all},
    {"ruler_part", "RULER scripts/eval: postprocess_pred, string_match_part per sample", LX_GOLD_TEXT,
     score_ruler_part},
    {"litm_subspan_em", "lost-in-the-middle: first line, stripped, best_subspan_em over every gold", LX_GOLD_TEXT,
     score_litm_subspan_em},
    {"topic_contains", "LongChat topics (an LLM judge there): the first topic's SQuAD form in the output's",
     LX_GOLD_TEXT, score_topic_contains},
};

const int lx_n_scorers = (int)(sizeof lx_scorers / sizeof *lx_scorers);

const struct lx_scorer *lx_scorer_find(const char *name)
{
    for (int i = 0; i < lx_n_scorers; i++)
        if (strcmp(lx_scorers[i].name, name) == 0)
            return &lx_scorers[i];
    return NULL;
}

int lx_scorer_check_gold(const struct lx_scorer *s, const struct lx_golds *g, struct lx_error *err)
{
    if (g->n < 1)
        return lx_err(err, LX_EINVAL, "scorer %s needs a gold, got an empty list", s->name);
    if (s->gold != LX_GOLD_INT)
        return LX_OK;
    const char *d = g->s[0];
    size_t n = g->len[0], neg = n > 0 && d[0] == '-';
    int ok = g->n == 1 && n > neg && n < 64 && strspn(d + neg, "0123456789") == n - neg;
    if (!ok)
        return lx_err(err, LX_EINVAL, "scorer %s needs one integer gold (a number, or a string of ASCII digits)",
                      s->name);
    return LX_OK;
}

double lx_scores_se(double sum, double sumsq, double n)
{
    double acc = sum / n;
    return sqrt(fmax(0.0, acc * (1.0 - acc) - (sum - sumsq) / n) / n);
}
