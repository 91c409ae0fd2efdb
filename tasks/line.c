/*
** tasks/line.c - line retrieval: the value of one named line among many.
**
** LongChat's fine-grained "LRT" test (Li, Shao, Xie et al., "How Long Can
** Open-Source LLMs Truly Promise on Context Length?", lmsys blog, 2023-06-29;
** DachengLi1/LongChat longeval/utils.py; docs/tasks.md#line). The
** record and question strings are theirs, verbatim. An instance is exactly
** `length` byte tokens, [BOS] + prompt + answer:
**
**   template longchat   header  records  pad  question  ending  answer
**   template short              records  pad  question  ending  answer
**
**   record     "line {name}: REGISTER_CONTENT is <{value}>\n"   (n of them)
**   question   "\nNow the record is over. Tell me what is the <REGISTER_CONTENT>
**              in line {name}? I need the number."   (short: only the middle
**              sentence, "\nTell me what is the <REGISTER_CONTENT> in line {name}?")
**   ending     "\nline {name}: REGISTER_CONTENT is <"
**   answer     "{value}": the digits only, no closing ">" (answer_off is the
**              first digit; gold is the digits)
**
** Exact length: the query name is budgeted at the longest name, and the record
** takes as many lines as fit in the rest (`lines: 0`) or exactly `lines`; the
** pad is the bytes left over, spaces between the last record and the question:
** fewer than one record plus twice the spread of name lengths when the count is
** free, whatever the length leaves when `lines` fixes it. The line count
** depends on (key, sample, length) only, not on the depth.
**
** Deviations from LongChat, all deliberate: names are adjective-noun pairs
** from two fixed lists of 40 words here (LongChat draws them from the
** `wonderwords` package), drawn without replacement, so names are unique;
** values are unique and have exactly `digits` digits (LongChat: randint(1,
** 50000), repeats allowed); the queried line is placed by depth, the line
** nearest to depth·(n − 1) (LongChat: uniform); the line count is chosen by
** length, not given; the base-model ending is the record's own prefix
** (completion style, as LongChat uses for its base model, whose storywriter
** ending is "Line <{idx}>: <REGISTER_CONTENT> is"). Every draw is Philox keyed on the
** cell's key with the sample as counter: names and values depend on (key,
** sample) only, so every depth and every method sees the same records.
**
** Scored by the first integer of the greedy output (`scorer: first`, the
** completion-style rule); LongChat reads the last integer, `scorer: last`.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/retrieval.h"
#include "harness/core/rng.h"
#include "tasks/task.h"

enum { TPL_LONGCHAT, TPL_SHORT };
enum { SCORE_FIRST, SCORE_LAST };

struct line_params {
    int template;       /* TPL_LONGCHAT or TPL_SHORT */
    long digits;        /* digits of every value */
    long lines;         /* lines in the record; 0 = as many as fit */
    int scorer;         /* SCORE_FIRST or SCORE_LAST */
    long samples;       /* trials per depth */
    long depths;        /* evenly spaced depths in [0, 1]; 1 = the single depth 0.5 */
    struct lx_preset_params preset;   /* protocol and data (tasks/retrieval.h) */
};

static const struct lx_param line_rows[] = {
    LX_P_ENUM(struct line_params, template, "longchat", "longchat|short", 0,
              "longchat: LongChat's header and question verbatim; short: no header, a one-sentence question"),
    LX_P_INT(struct line_params, digits, "5", 1, 9, 0, "digits of every value: distinct, in [10^(d-1), 10^d - 1]"),
    LX_P_INT(struct line_params, lines, "0", 0, 1600, 0,
             "lines in the record: 0 = as many as fit the length, else exactly that many (the rest is padding)"),
    LX_P_ENUM(struct line_params, scorer, "first", "first|last", LX_PF_TEST_ONLY,
              "the integer of the output compared to the value: first (completion style) or last (LongChat)"),
    LX_P_INT(struct line_params, samples, "20", 1, 1e6, LX_PF_TEST_ONLY, "trials per depth"),
    LX_P_INT(struct line_params, depths, "5", 0, 1001, LX_PF_TEST_ONLY,
             "evenly spaced depths of the queried line 0, 1/(k-1), ..., 1 (1 = the single depth 0.5; "
             "0 = a uniform random depth per sample)"),
    LX_RETRIEVAL_PRESET_ROWS(struct line_params, "lenx|longchat|longchat_base"),
};

/* Rows no preset reads (its presets read their peers' test-case files; tasks/retrieval.h). */
static const struct lx_param_rule line_refusals[] = {
    {"template", "protocol=lenx"}, {"digits", "protocol=lenx"}, {"lines", "protocol=lenx"},
    {"scorer", "protocol=lenx"}, {"samples", "protocol=lenx"}, {"depths", "protocol=lenx"}, {NULL, NULL},
};

static const char HEADER[] =
    "Below is a record of lines I want you to remember. Each line begins with 'line <line index>' and contains a "
    "'<REGISTER_CONTENT>' at the end of the line as a numerical value. For each line index, memorize its "
    "corresponding <REGISTER_CONTENT>. At the end of the record, I will ask you to retrieve the corresponding "
    "<REGISTER_CONTENT> of a certain line index. Now the record start:\n\n";
static const char RECORD[] = "line %s: REGISTER_CONTENT is <%ld>\n";
static const char *const QUESTION[] = {
    [TPL_LONGCHAT] = "\nNow the record is over. Tell me what is the <REGISTER_CONTENT> in line %s? I need the number.",
    [TPL_SHORT] = "\nTell me what is the <REGISTER_CONTENT> in line %s?",
};
static const char ENDING[] = "\nline %s: REGISTER_CONTENT is <";
static const char *const TPL_NAME[] = {[TPL_LONGCHAT] = "longchat", [TPL_SHORT] = "short"};

/* Line names are ADJ[i]-NOUN[j]: 1,600 distinct pairs. */
static const char *const ADJ[] = {
    "able", "bold", "brave", "brisk", "calm", "cold", "cool", "damp", "dark", "dear", "deep", "dry", "dull", "eager",
    "early", "fair", "fast", "fine", "firm", "glad", "grand", "green", "happy", "keen", "kind", "late", "lazy", "loud",
    "mild", "neat", "odd", "pale", "plain", "proud", "quick", "quiet", "rare", "shy", "tidy", "wild",
};
static const char *const NOUN[] = {
    "ant", "bear", "bee", "bird", "boat", "cake", "cat", "cloud", "crow", "deer", "dog", "door", "duck", "fish",
    "fox", "frog", "goat", "hawk", "hill", "horse", "kite", "lake", "lamp", "lion", "moon", "moth", "mouse", "owl",
    "pear", "pig", "pond", "rose", "seal", "ship", "star", "swan", "tiger", "tree", "whale", "wolf",
};
#define N_ADJ ((int)(sizeof ADJ / sizeof *ADJ))
#define N_NOUN ((int)(sizeof NOUN / sizeof *NOUN))
#define N_NAMES (N_ADJ * N_NOUN)
#define NAME_CAP 32     /* bytes of the longest name + NUL, with room to spare */
#define TEXT_CAP 192    /* bytes of the longest question, ending or record + NUL */

static long ten_to(long d)
{
    long v = 1;
    while (d-- > 0)
        v *= 10;
    return v;
}

static long name_text(int idx, char *buf)
{
    return snprintf(buf, NAME_CAP, "%s-%s", ADJ[idx / N_NOUN], NOUN[idx % N_NOUN]);
}

/* The shortest and longest name. */
static void name_bounds(long *lo, long *hi)
{
    long a_lo = 99, a_hi = 0, n_lo = 99, n_hi = 0;
    for (int i = 0; i < N_ADJ; i++) {
        long n = (long)strlen(ADJ[i]);
        a_lo = n < a_lo ? n : a_lo;
        a_hi = n > a_hi ? n : a_hi;
    }
    for (int i = 0; i < N_NOUN; i++) {
        long n = (long)strlen(NOUN[i]);
        n_lo = n < n_lo ? n : n_lo;
        n_hi = n > n_hi ? n : n_hi;
    }
    *lo = a_lo + 1 + n_lo;
    *hi = a_hi + 1 + n_hi;
}

/* Bytes of one record line with a name of n_name bytes. */
static long line_len(const struct line_params *p, long n_name)
{
    return (long)sizeof RECORD - 1 - 5 + n_name + p->digits;   /* "%s" and "%ld" are 5 bytes of format */
}

/* Bytes besides BOS, the records and the pad: header, question, ending and
** answer, for a query name of n_name bytes. */
static long fixed_bytes(const struct line_params *p, long n_name)
{
    long header = p->template == TPL_LONGCHAT ? (long)sizeof HEADER - 1 : 0;
    return header + (long)strlen(QUESTION[p->template]) - 2 + n_name + (long)sizeof ENDING - 1 - 2 + n_name +
           p->digits;
}

/* Lines a record can hold at most: distinct names and distinct values. */
static long line_cap(const struct line_params *p)
{
    long values = 9 * ten_to(p->digits - 1);
    return values < N_NAMES ? values : N_NAMES;
}

static int line_check(const void *params, long length, struct lx_error *err)
{
    if (lx_retrieval_check_length("line", length, err) < 0)
        return LX_EINVAL;
    const struct line_params *p = params;
    long lo, hi, cap = line_cap(p);
    name_bounds(&lo, &hi);
    long room = length - 1 - fixed_bytes(p, hi), need = (p->lines ? p->lines : 1) * line_len(p, hi);
    if (p->lines > cap)
        return lx_err(err, LX_EINVAL, "line: lines %ld is more than the %ld distinct values of %ld digits\n"
                      "  hint: use more digits or fewer lines", p->lines, cap, p->digits);
    if (room < need)
        return lx_err(err, LX_EINVAL,
                      "line: length %ld is too short for template '%s' with %ld line%s of %ld-digit values "
                      "(minimum %ld)\n  hint: use a length of at least %ld%s",
                      length, TPL_NAME[p->template], p->lines ? p->lines : 1, p->lines > 1 ? "s" : "", p->digits,
                      length - room + need, length - room + need,
                      p->lines > 1 ? ", or fewer lines" : p->template == TPL_LONGCHAT ? ", or template: short" : "");
    if (!p->lines && room >= cap * line_len(p, lo))
        return lx_err(err, LX_EINVAL, "line: length %ld could hold more than the %ld distinct lines of %ld-digit "
                      "values\n  hint: set lines: N (the rest of the length is padded with spaces) or use more "
                      "digits", length, cap, p->digits);
    return LX_OK;
}

/* The record's names: a partial Fisher-Yates shuffle of the name pairs (Philox
** on the cell's key, the sample as counter), taken while their lines fit in
** `room` bytes, or exactly p->lines of them. names[0, n) are the names. */
static long draw_names(const struct line_params *p, uint64_t key, long sample, long room, int names[N_NAMES])
{
    struct lx_rng r;
    lx_rng_init(&r, key ^ (uint64_t)((unsigned long)sample >> 32), (uint32_t)sample, LX_RNG_DATA);
    for (int i = 0; i < N_NAMES; i++)
        names[i] = i;
    char buf[NAME_CAP];
    long n = 0, used = 0, want = p->lines ? p->lines : line_cap(p);
    for (; n < want; n++) {
        long j = n + (long)(lx_rng_uniform(&r) * (double)(N_NAMES - n));
        int t = names[n];
        names[n] = names[j];
        names[j] = t;
        used += line_len(p, name_text(names[n], buf));
        if (!p->lines && used > room)
            break;
    }
    return n;
}

/* n distinct values of p->digits digits, from their own Philox stream. */
static void draw_values(const struct line_params *p, uint64_t key, long sample, long n, long *vals)
{
    struct lx_rng r;
    lx_rng_init(&r, key ^ 0x76616c7565730000ULL ^ (uint64_t)((unsigned long)sample >> 32), (uint32_t)sample,
                LX_RNG_DATA);
    long lo = ten_to(p->digits - 1), span = 9 * lo;
    for (long i = 0; i < n; i++) {
        int dup = 1;
        while (dup) {
            vals[i] = lo + (long)(lx_rng_uniform(&r) * (double)span);
            dup = 0;
            for (long j = 0; j < i && !dup; j++)
                dup = vals[j] == vals[i];
        }
    }
}

static int line_make(const void *params, const struct lx_retrieval_at *at, struct lx_instance *out,
                     struct lx_error *err)
{
    const struct line_params *p = params;
    long lo, hi;
    name_bounds(&lo, &hi);
    int names[N_NAMES];
    long vals[N_NAMES];
    long n = draw_names(p, at->key, at->sample, at->length - 1 - fixed_bytes(p, hi), names);
    draw_values(p, at->key, at->sample, n, vals);
    long q = (long)floor(at->depth * (double)(n - 1) + 0.5);
    char name[NAME_CAP], text[TEXT_CAP];
    long used = 0;
    for (long i = 0; i < n; i++)
        used += line_len(p, name_text(names[i], name));
    long pad = at->length - 1 - fixed_bytes(p, name_text(names[q], name)) - used;
    LX_ASSERT(pad >= 0);
    int *tok = out->tok;
    long pos = 0;
    tok[pos++] = LX_TOK_BOS;
    if (p->template == TPL_LONGCHAT)
        pos = lx_put_bytes(tok, pos, HEADER, (long)sizeof HEADER - 1);
    for (long i = 0; i < n; i++) {
        name_text(names[i], name);
        pos = lx_put_bytes(tok, pos, text, snprintf(text, sizeof text, RECORD, name, vals[i]));
    }
    for (long i = 0; i < pad; i++)
        tok[pos++] = ' ';
    name_text(names[q], name);
    pos = lx_put_bytes(tok, pos, text, snprintf(text, sizeof text, QUESTION[p->template], name));
    pos = lx_put_bytes(tok, pos, text, snprintf(text, sizeof text, ENDING, name));
    out->answer_off = pos;
    snprintf(out->gold, sizeof out->gold, "%ld", vals[q]);
    pos = lx_put_bytes(tok, pos, out->gold, p->digits);
    LX_ASSERT(pos == at->length);
    return LX_OK;
}

static int line_score_by(const void *params, const struct lx_instance *in, const char *output, long n)
{
    const struct line_params *p = params;
    return p->scorer == SCORE_LAST ? lx_answer_last_int(output, n, in->gold) : lx_answer_first_int(output, n, in->gold);
}

/* A training window draws its depth uniformly. */
static const struct lx_retrieval line_r = {
    .name = "line",
    .preset_at = offsetof(struct line_params, preset),
    .protocols = (const char *const[]){"lenx", "longchat", "longchat_base"},
    .samples_at = offsetof(struct line_params, samples),
    .depths_at = offsetof(struct line_params, depths),
    .check = line_check,
    .make = line_make,
    .score = line_score_by,
    .train_salt = 0x6c696e6564657074ULL,
};
LX_RETRIEVAL_HOOKS(line, line_r)

const struct lx_task lx_task_line = {
    .name = "line",
    .summary = "line retrieval: the value of a named line among many, exact length "
               "(LongChat LRT, Li et al. 2023, lmsys blog)",
    .schema = LX_SCHEMA_REFUSING(line_rows, struct line_params, NULL, line_refusals),
    .headline = "acc,answer_logprob",
    LX_RETRIEVAL_OPS(line),
};
