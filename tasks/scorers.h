/*
** tasks/scorers.h - the named answer scorers: each the scoring rule of one
** peer benchmark's own code, as a small pure function of (output, golds), and
** one table of them by name (docs/tasks.md#scorers).
**
**   first_int        landmark attention's passkey test: the first run of
**                    digits, as an integer, equals the gold integer
**   last_int         LongChat's lines test: the last run of digits as an
**                    integer (-1 when there is none) equals the gold integer
**   token_exact      LongLoRA's passkey test: the output begins with the gold
**                    (the budget is the gold's own length; on text, a prefix)
**   substring        the gold, lower-cased, inside the output, lower-cased
**   ruler_all        RULER: postprocess_pred, then string_match_all (the
**                    fraction of golds found, case-insensitively)
**   ruler_part       RULER: postprocess_pred, then string_match_part (1 when
**                    any gold is found)
**   litm_subspan_em  lost in the middle: the output up to its first newline,
**                    stripped, then best_subspan_em over every gold (SQuAD
**                    normalisation: lower-case, no punctuation, no a/an/the,
**                    white space collapsed)
**   topic_contains   LongChat's topics test (judged there by a language model;
**                    this stands in): the first gold's SQuAD form inside the
**                    whole output's
**
** Text is read as the peers' Python reads it: UTF-8 code points, str.lower()
** (Unicode, with the final-sigma rule and the two-letter lowercase of U+0130),
** `\d` = any Unicode decimal digit and int() of those, str.split()/strip() on
** Unicode white space, `\b` of the regex module (harness/engine/tokenizers/
** unicode.h has the classes). A byte that is not UTF-8 is a character of its
** own, of no class. A 0 byte is an ordinary character.
**
** To add a scorer: write its function in scorers.c and add one row to the
** table there.
*/
#ifndef LX_SCORERS_H
#define LX_SCORERS_H

#include <stddef.h>

#include "harness/core/lx.h"

/* The golds of one instance. */
struct lx_golds {
    long n;                 /* golds, >= 1 */
    const char *const *s;   /* (n) each gold's bytes */
    const size_t *len;      /* (n) each gold's length */
};

/* What a scorer's gold must be. */
enum lx_gold_kind {
    LX_GOLD_INT,            /* one integer: a JSON number, or a string of an ASCII
                            ** integer ("-1", "0042"), compared as integers */
    LX_GOLD_TEXT,           /* one or more strings */
    LX_GOLD_ALL,            /* strings, every one asked for (ruler_all: the fraction found) */
};

struct lx_scorer {
    const char *name;       /* the name in `scorer:` and `lenx grade --scorer` */
    const char *follows;    /* the peer's file whose rule it is, one line */
    enum lx_gold_kind gold; /* what its gold is */
    /* The score of output[0, n) against g, in [0, 1] (1/0 but for ruler_all);
    ** *null = 1 when the output holds nothing the rule can read (no integer,
    ** nothing but white space), else 0. Pure: no state, no I/O. */
    double (*score)(const char *output, size_t n, const struct lx_golds *g, int *null);
};

/* The table, and the scorer named name (NULL when none is). */
extern const struct lx_scorer lx_scorers[];
extern const int lx_n_scorers;
const struct lx_scorer *lx_scorer_find(const char *name);

/* LX_OK when g suits s (an integer scorer: one gold, an ASCII integer);
** else LX_EINVAL with what is wrong. */
int lx_scorer_check_gold(const struct lx_scorer *s, const struct lx_golds *g, struct lx_error *err);

/* The standard error of the mean of n scores in [0, 1] from their sum and
** sum of squares: sqrt((mean(s^2) - mean^2) / n), written so that 0/1 scores
** give the binomial sqrt(acc (1 - acc) / n) bit for bit, and fractions (the
** share of golds found) their own spread. */
double lx_scores_se(double sum, double sumsq, double n);

#endif
