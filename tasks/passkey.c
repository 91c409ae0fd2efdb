/*
** tasks/passkey.c - passkey retrieval: find a number hidden in filler text.
**
** Mohtashami & Jaggi, "Landmark Attention: Random-Access Infinite Context
** Length for Transformers", 2023 (arXiv 2305.16300); the prompt strings are
** theirs, verbatim (epfml/landmark-attention llama/run_test.py; format and
** deviations in docs/tasks.md#passkey). An instance is exactly
** `length` byte tokens, [BOS] + prompt + answer, parts joined with "\n":
**
**   template landmark   description \n prefix \n info \n suffix \n question
**   template short      prefix \n info \n suffix \n question
**
** then the answer " {k}" (answer_off is its space; gold is the digits). The
** short template drops the description and shortens the info line to "The pass
** key is {k}. Remember it.", for small models trained at short lengths.
**
** Exact length, the answer included (as RULER counts the generation budget in
** the length): a byte is a token, so the filler budget
** is F = length − 1 (BOS) − the fixed bytes − the answer bytes, and the filler
** is F bytes of the sentence stream "The grass is green. The sky is blue. …"
** (sentences joined by single spaces). Depth: the prefix is the first p bytes
** of the stream and the suffix the first F − p bytes (both from the start, as
** in landmark), p the split nearest to depth·F among 0, F and the ends of
** whole sentences, so a prefix ends on a full stop, not a space, and only the
** last sentence of the filler is trimmed. Depth 0 puts the info line right
** after the description, depth 1 right before the question.
**
** Key: uniform in [10^(d−1), 10^d − 1], d = `digits` (5: 10000–99999), where
** landmark draws 1–50000; fixed-width keys remove key-length variance
** (a deviation, docs/tasks.md#passkey). Drawn by Philox keyed on the cell's key with
** the sample index as counter: the key depends on (key, sample) only, not on
** the depth, and every method sees the same instances.
**
** Scored by the first integer of the greedy output against the key (landmark's
** rule); the generic runner (tasks/retrieval.c) adds the teacher-forced
** log-probability of the key.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/retrieval.h"
#include "harness/core/rng.h"
#include "tasks/task.h"

enum { TPL_LANDMARK, TPL_SHORT };

struct passkey_params {
    int template;       /* TPL_LANDMARK or TPL_SHORT */
    long digits;        /* digits of the key */
    long samples;       /* trials per depth */
    long depths;        /* evenly spaced depths in [0, 1]; 1 = the single depth 0.5 */
    struct lx_preset_params preset;   /* protocol and data (tasks/retrieval.h) */
};

static const struct lx_param passkey_rows[] = {
    LX_P_ENUM(struct passkey_params, template, "landmark", "landmark|short", 0,
              "landmark: Mohtashami & Jaggi's prompt verbatim; short: no task description, a shorter info line"),
    LX_P_INT(struct passkey_params, digits, "5", 1, 9, 0, "digits of the key: uniform in [10^(d-1), 10^d - 1]"),
    LX_P_INT(struct passkey_params, samples, "20", 1, 1e6, LX_PF_TEST_ONLY, "trials per depth"),
    LX_P_INT(struct passkey_params, depths, "5", 0, 1001, LX_PF_TEST_ONLY,
             "evenly spaced key depths 0, 1/(k-1), ..., 1 (1 = the single depth 0.5; "
             "0 = a uniform random depth per sample)"),
    LX_RETRIEVAL_PRESET_ROWS(struct passkey_params, "lenx|landmark|yarn|longlora"),
};

/* Rows no preset reads (its presets make their peers' own number of cases; tasks/retrieval.h). */
static const struct lx_param_rule passkey_refusals[] = {
    {"template", "protocol=lenx"}, {"digits", "protocol=lenx"}, {"samples", "protocol=lenx"},
    {"depths", "protocol=lenx"}, {NULL, NULL},
};

static const char DESC[] = "There is an important info hidden inside a lot of irrelevant text. "
                           "Find it and memorize them. I will quiz you about the important information there.";
static const char QUESTION[] = "What is the pass key? The pass key is";
/* The info line; printf gets the key twice, the short one reads only the first. */
static const char *const INFO[] = {
    [TPL_LANDMARK] = "The pass key is %ld. Remember it. %ld is the pass key.",
    [TPL_SHORT] = "The pass key is %ld. Remember it.",
};
static const char *const TPL_NAME[] = {[TPL_LANDMARK] = "landmark", [TPL_SHORT] = "short"};
/* One cycle of the filler stream: five sentences, each followed by a space. */
static const char CYCLE[] = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. ";
#define N_CYCLE ((long)sizeof CYCLE - 1)
#define INFO_MAX 128

static long ten_to(long d)
{
    long v = 1;
    while (d-- > 0)
        v *= 10;
    return v;
}

/* Bytes every instance has besides BOS and filler: the template's text, the
** newlines and the answer " {k}" (every key has exactly `digits` digits). */
static long fixed_bytes(const struct passkey_params *p)
{
    long k = ten_to(p->digits - 1);
    long info = snprintf(NULL, 0, INFO[p->template], k, k);
    long desc = p->template == TPL_LANDMARK ? (long)sizeof DESC - 1 + 1 : 0;
    return desc + 3 + info + (long)sizeof QUESTION - 1 + 1 + p->digits;
}

static int passkey_check(const void *params, long length, struct lx_error *err)
{
    if (lx_retrieval_check_length("passkey", length, err) < 0)
        return LX_EINVAL;
    const struct passkey_params *p = params;
    long min = 1 + fixed_bytes(p);
    if (length < min)
        return lx_err(err, LX_EINVAL,
                      "passkey: length %ld is too short for template '%s' with %ld-digit keys (minimum %ld)\n"
                      "  hint: use a length of at least %ld%s",
                      length, TPL_NAME[p->template], p->digits, min, min,
                      p->template == TPL_LANDMARK ? ", or template: short" : "");
    return LX_OK;
}

/* The prefix length: the candidate nearest to depth·F among 0, F and every
** sentence end (the byte after a full stop) inside the first F bytes. */
static long split_at(long F, double depth)
{
    double target = depth * (double)F;
    long best = 0;
    for (long i = 1; i <= F; i++)
        if ((i == F || CYCLE[(i - 1) % N_CYCLE] == '.') && fabs((double)i - target) < fabs((double)best - target))
            best = i;
    return best;
}

static long put_filler(int *tok, long pos, long n)
{
    for (long i = 0; i < n; i++)
        tok[pos + i] = (unsigned char)CYCLE[i % N_CYCLE];
    return pos + n;
}

/* The key of sample `sample`: Philox keyed on the cell's key, the sample as
** the counter (its high bits folded into the key). */
static long draw_key(const struct passkey_params *p, uint64_t key, long sample)
{
    struct lx_rng r;
    lx_rng_init(&r, key ^ (uint64_t)((unsigned long)sample >> 32), (uint32_t)sample, LX_RNG_DATA);
    long lo = ten_to(p->digits - 1), hi = ten_to(p->digits) - 1;
    return lo + (long)(lx_rng_uniform(&r) * (double)(hi - lo + 1));
}

static int passkey_make(const void *params, const struct lx_retrieval_at *at, struct lx_instance *out,
                        struct lx_error *err)
{
    const struct passkey_params *p = params;
    long k = draw_key(p, at->key, at->sample);
    char info[INFO_MAX];
    long n_info = snprintf(info, sizeof info, INFO[p->template], k, k);
    long F = at->length - 1 - fixed_bytes(p), prefix = split_at(F, at->depth);
    int *tok = out->tok;
    long pos = 0;
    tok[pos++] = LX_TOK_BOS;
    if (p->template == TPL_LANDMARK) {
        pos = lx_put_bytes(tok, pos, DESC, (long)sizeof DESC - 1);
        tok[pos++] = '\n';
    }
    pos = put_filler(tok, pos, prefix);
    tok[pos++] = '\n';
    pos = lx_put_bytes(tok, pos, info, n_info);
    tok[pos++] = '\n';
    pos = put_filler(tok, pos, F - prefix);
    tok[pos++] = '\n';
    pos = lx_put_bytes(tok, pos, QUESTION, (long)sizeof QUESTION - 1);
    out->answer_off = pos;
    snprintf(out->gold, sizeof out->gold, "%ld", k);
    tok[pos++] = ' ';
    pos = lx_put_bytes(tok, pos, out->gold, p->digits);
    LX_ASSERT(pos == at->length);
    return LX_OK;
}

/* Scored by the first integer (landmark's rule); a training window draws its
** depth uniformly. */
static const struct lx_retrieval passkey_r = {
    .name = "passkey",
    .preset_at = offsetof(struct passkey_params, preset), .protocols = (const char *const[]){"lenx", "landmark", "yarn", "longlora"},
    .samples_at = offsetof(struct passkey_params, samples),
    .depths_at = offsetof(struct passkey_params, depths),
    .check = passkey_check,
    .make = passkey_make,
    .scorer = lx_answer_first_int,
    .train_salt = 0x7061737364657074ULL,
};
LX_RETRIEVAL_HOOKS(passkey, passkey_r)

const struct lx_task lx_task_passkey = {
    .name = "passkey",
    .summary = "passkey retrieval in filler text at controlled depths, exact length "
               "(Mohtashami & Jaggi 2023, arXiv 2305.16300)",
    .schema = LX_SCHEMA_REFUSING(passkey_rows, struct passkey_params, NULL, passkey_refusals),
    .headline = "acc,answer_logprob",
    LX_RETRIEVAL_OPS(passkey),
};
