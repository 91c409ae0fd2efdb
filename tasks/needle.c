/*
** tasks/needle.c - needle in a haystack: "The special magic {city} number
** is: {number}." hidden in held-out prose, asked for at the end.
**
** Sources (format and deviations in docs/tasks.md#needle): Kamradt's needle in a haystack
** (gkamradt/LLMTest_NeedleInAHaystack, 2023: real prose as the haystack, the
** needle spliced in at a sentence end near depth·length, a depth × length
** grid); Arize's variant (Arize-ai/LLMTest_NeedleInAHaystack, 2024: the
** needle "The special magic {city} number is: {number}", 7-digit numbers, a
** city per instance); RULER (Hsieh et al. 2024, arXiv 2404.06654: several
** needles of one form with one asked for, an answer prefix, the generation
** budget inside the length); and the 3-needle retrieval of Anson, Wang &
** Aitchison, "Scale-invariant attention", 2025 (arXiv 2505.17083, Table 2),
** whose strings are not public: `needles: 3` is built from these sources.
**
** An instance is exactly `length` byte tokens:
**
**   [BOS] haystack with the needles in it, question, answer
**
**   needle     "The special magic {city} number is: {number}."
**   question   "\nWhat is the special magic {city} number? The special magic {city} number is"
**              (template short: the answer prefix alone, "\nThe special magic {city} number is",
**              for small models trained at short lengths)
**   answer     " {number}" (answer_off is its space; gold is the 7 digits)
**
** Haystack: H bytes of the held-out novel (Persuasion, split "test") from the
** first sentence start at or after an offset drawn per sample, read
** cyclically (Kamradt repeats his essays the same way); H = length − 1 − the
** bytes of the needles (one space each), question and answer, so only the
** haystack's last sentence is cut. A needle goes in at the split nearest
** depth·H among 0, H and the haystack's sentence starts (lx_prose_nearest),
** followed by a space ("… end. The special magic Oslo number is: 1234567.
** Next …"); at H (H > 0) after the haystack, preceded by the space. Depth 0
** puts the asked needle first, depth 1 right before the question.
**
** needles: 3: three distinct cities and numbers; the first is
** asked for and placed by the grid's depth, the other two at independent
** uniform depths (RULER-style). Their numbers are the instance's
** distractors (alt, their depths alt_depth): a wrong output equal to one of
** them counts in distractor_rate. Needles at one split keep their order, the
** asked one first.
**
** Every draw is Philox keyed on the cell's key with the sample as the counter:
** haystack, cities, numbers and the other needles' depths depend on (key,
** sample) only, so the depths of a sample are paired and every method sees the
** same instances.
**
** Deviations, all deliberate: Austen instead of Paul Graham's essays; byte
** tokens and an exact length with the answer inside it, no 200-token buffer
** (Kamradt); the needle is a sentence of its own with a full stop, not wrapped
** in newlines (Arize); the split is the nearest sentence start either way
** (Kamradt walks back to a '.'); no system prompt but completion style with an
** answer prefix, for base models (as RULER); scored by the first
** run of digits instead of an LLM judge (Kamradt) or rails (Arize);
** cities from a fixed list of 50 without repeats (Arize's list has repeats).
** A training window (train_sample) reads its haystack from the first 90% of
** the training novels instead of Persuasion: no held-out text is trained on,
** and the trainer's validation tail (its last 5%) stays unseen.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/retrieval.h"
#include "harness/core/rng.h"
#include "tasks/task.h"

#define MAX_NEEDLES 3
#define DIGITS 7            /* numbers in [10^6, 10^7 − 1] */
#define TRAIN_FRAC 0.9      /* training windows read the first 90% of the training novels */

enum { TPL_FULL, TPL_SHORT };

struct needle_params {
    int template;       /* TPL_FULL or TPL_SHORT */
    long needles;       /* needles in the haystack; the first is asked for */
    long samples;       /* trials per depth */
    long depths;        /* evenly spaced depths of the asked needle; 1 = the single depth 0.5 */
    struct lx_preset_params preset;   /* protocol and data (tasks/retrieval.h) */
};

static const struct lx_param needle_rows[] = {
    LX_P_ENUM(struct needle_params, template, "full", "full|short", 0,
              "full: question and answer prefix (docs/tasks.md#needle); short: the answer prefix alone, for small "
              "models at short lengths"),
    LX_P_INT(struct needle_params, needles, "1", 1, MAX_NEEDLES, 0,
             "needles hidden, one asked for (3: the scale-invariant paper's variant; the others sit at "
             "uniform depths as distractors)"),
    LX_P_INT(struct needle_params, samples, "20", 1, 1e6, LX_PF_TEST_ONLY, "trials per depth"),
    LX_P_INT(struct needle_params, depths, "11", 0, 1001, LX_PF_TEST_ONLY,
             "evenly spaced depths of the asked needle 0, 1/(k-1), ..., 1 (11: every 10%; 1 = the single "
             "depth 0.5; 0 = a uniform random depth per sample)"),
    LX_RETRIEVAL_PRESET_ROWS(struct needle_params, "lenx|ruler|kamradt|ruler_niah_single_2|ruler_niah_single_3|"
                            "ruler_niah_multikey_1|ruler_niah_multikey_2|ruler_niah_multikey_3|ruler_niah_multivalue|"
                            "ruler_niah_multiquery|ruler_vt|ruler_fwe|ruler_cwe"),
};

/* Rows no preset reads (RULER's presets make `samples` cases, kamradt its peer's 35; tasks/retrieval.h). */
static const struct lx_param_rule needle_refusals[] = {
    {"template", "protocol=lenx"}, {"needles", "protocol=lenx"}, {"samples", "protocol!=kamradt"},
    {"depths", "protocol=lenx"}, {NULL, NULL},
};

/* Fifty cities, each once, none inside another's name. */
static const char *const CITIES[] = {
    "Tokyo",   "Delhi",     "Shanghai", "Cairo",   "Mumbai",   "Beijing", "Dhaka",     "Osaka",      "Karachi",
    "Istanbul", "Lagos",    "Manila",   "Moscow",  "Jakarta",  "Lima",    "Bangkok",   "Seoul",      "Nagoya",
    "Madrid",  "Toronto",   "Chicago",  "Sydney",  "Melbourne", "Singapore", "Berlin", "Rome",       "Paris",
    "Vienna",  "Prague",    "Warsaw",   "Budapest", "Athens",  "Kyoto",   "Dublin",    "Oslo",       "Stockholm",
    "Helsinki", "Copenhagen", "Amsterdam", "Brussels", "Zurich", "Nairobi", "Santiago", "Bogota",   "Havana",
    "Montreal", "Denver",   "Seattle",  "Boston",  "Atlanta",
};
#define N_CITIES ((int)(sizeof CITIES / sizeof *CITIES))

static const char NEEDLE[] = "The special magic %s number is: %ld.";
/* The question; printf gets the city twice, the short one reads only the first. */
static const char *const QUESTION[] = {
    [TPL_FULL] = "\nWhat is the special magic %s number? The special magic %s number is",
    [TPL_SHORT] = "\nThe special magic %s number is",
};
static const char *const TPL_NAME[] = {[TPL_FULL] = "full", [TPL_SHORT] = "short"};

/* What a sample fixes, whatever its depth. */
struct draw {
    int city[MAX_NEEDLES];      /* (needles,) distinct indices into CITIES; [0] is asked for */
    long number[MAX_NEEDLES];   /* (needles,) distinct */
    double depth[MAX_NEEDLES];  /* (needles,) uniform; the caller sets [0] from the grid */
    double start;               /* where the haystack starts, a fraction of the prose */
};

static void draw(const struct needle_params *p, uint64_t key, long sample, struct draw *d)
{
    struct lx_rng r;
    lx_rng_init(&r, key ^ (uint64_t)((unsigned long)sample >> 32), (uint32_t)sample, LX_RNG_DATA);
    d->start = lx_rng_uniform(&r);
    for (int j = 0; j < p->needles; j++) {
        for (int again = 1; again;) {   /* without replacement: redraw what an earlier needle has */
            d->city[j] = (int)(lx_rng_uniform(&r) * N_CITIES);
            d->number[j] = 1000000 + (long)(lx_rng_uniform(&r) * 9000000.0);
            again = 0;
            for (int i = 0; i < j; i++)
                again |= d->city[i] == d->city[j] || d->number[i] == d->number[j];
        }
        d->depth[j] = lx_rng_uniform(&r);
    }
}

/* Bytes besides BOS and the haystack, for these cities (the asked one first). */
static long fixed_bytes(const struct needle_params *p, const char *const *city)
{
    long n = snprintf(NULL, 0, QUESTION[p->template], city[0], city[0]) + 1 + DIGITS;
    for (long j = 0; j < p->needles; j++)
        n += snprintf(NULL, 0, NEEDLE, city[j], 1000000L) + 1;
    return n;
}

/* The shortest length that fits any draw: every city as long as the longest. */
static long min_length(const struct needle_params *p)
{
    const char *worst[MAX_NEEDLES] = {CITIES[0], CITIES[0], CITIES[0]};
    for (int i = 1; i < N_CITIES; i++)
        if (strlen(CITIES[i]) > strlen(worst[0]))
            worst[0] = worst[1] = worst[2] = CITIES[i];
    return 1 + fixed_bytes(p, worst);
}

static int needle_check(const void *params, long length, struct lx_error *err)
{
    if (lx_retrieval_check_length("needle", length, err) < 0)
        return LX_EINVAL;
    const struct needle_params *p = params;
    long min = min_length(p);
    if (length < min)
        return lx_err(err, LX_EINVAL,
                      "needle: length %ld is too short for %ld needle%s with template '%s' (minimum %ld)\n"
                      "  hint: use a length of at least %ld%s%s",
                      length, p->needles, p->needles > 1 ? "s" : "", TPL_NAME[p->template], min, min,
                      p->needles > 1 ? ", or fewer needles" : "", p->template == TPL_FULL ? ", or template: short" : "");
    return LX_OK;
}

/* Haystack, needles, question and answer into tok (length tokens). */
static void layout(const struct needle_params *p, const struct draw *d, const char *hay, long H, int *tok,
                   struct lx_instance *out)
{
    char needle[MAX_NEEDLES][64], q[128];
    long n_needle[MAX_NEEDLES], at[MAX_NEEDLES];
    int order[MAX_NEEDLES];
    for (int j = 0; j < p->needles; j++) {
        n_needle[j] = snprintf(needle[j], sizeof needle[j], NEEDLE, CITIES[d->city[j]], d->number[j]);
        at[j] = lx_prose_nearest(hay, H, d->depth[j]);
        int k = j;      /* insertion sort by split; ties keep needle order */
        for (; k > 0 && at[order[k - 1]] > at[j]; k--)
            order[k] = order[k - 1];
        order[k] = j;
    }
    long pos = 0, h = 0;
    tok[pos++] = LX_TOK_BOS;
    for (int k = 0; k < p->needles; k++) {
        int j = order[k], end = at[j] == H && H > 0;   /* after the haystack: the space goes first */
        pos = lx_put_bytes(tok, pos, hay + h, at[j] - h);
        h = at[j];
        pos = end ? lx_put_bytes(tok, pos, " ", 1) : pos;
        pos = lx_put_bytes(tok, pos, needle[j], n_needle[j]);
        pos = end ? pos : lx_put_bytes(tok, pos, " ", 1);
    }
    pos = lx_put_bytes(tok, pos, hay + h, H - h);
    const char *city = CITIES[d->city[0]];
    pos = lx_put_bytes(tok, pos, q, snprintf(q, sizeof q, QUESTION[p->template], city, city));
    out->answer_off = pos;
    snprintf(out->gold, sizeof out->gold, "%ld", d->number[0]);
    pos = lx_put_bytes(tok, pos, " ", 1);
    pos = lx_put_bytes(tok, pos, out->gold, DIGITS);
    out->n = pos;
    for (int j = 1; j < p->needles; j++) {
        snprintf(out->alt[j - 1], sizeof out->alt[j - 1], "%ld", d->number[j]);
        out->alt_depth[j - 1] = d->depth[j];
    }
    out->n_alt = (int)p->needles - 1;
}

/* The instance of (key, length, sample, depth), its haystack read from split. */
static int needle_make(const void *params, const struct lx_retrieval_at *at, struct lx_instance *out,
                       struct lx_error *err)
{
    const struct needle_params *p = params;
    struct lx_prose prose;
    int rc = lx_prose_open(&prose, at->split, at->frac, err);
    if (rc < 0)
        return rc;
    struct draw d;
    draw(p, at->key, at->sample, &d);
    d.depth[0] = at->depth;
    const char *city[MAX_NEEDLES];
    for (int j = 0; j < p->needles; j++)
        city[j] = CITIES[d.city[j]];
    long H = at->length - 1 - fixed_bytes(p, city);
    char *hay = malloc((size_t)H + 1);
    if (!hay)
        return lx_err(err, LX_ENOMEM, "needle: no memory for an instance of %ld tokens", at->length);
    lx_prose_copy(&prose, lx_prose_sentence(&prose, (long)(d.start * (double)prose.n)), H, hay);
    layout(p, &d, hay, H, out->tok, out);
    free(hay);
    LX_ASSERT(out->n == at->length);
    return LX_OK;
}

/* Scored by first_int; a training window reads the training novels, its depth
** uniform. */
static const struct lx_retrieval needle_r = {
    .name = "needle",
    .preset_at = offsetof(struct needle_params, preset),
    .protocols = (const char *const[]){"lenx", "ruler", "kamradt", "ruler_niah_single_2", "ruler_niah_single_3",
                                       "ruler_niah_multikey_1", "ruler_niah_multikey_2", "ruler_niah_multikey_3",
                                       "ruler_niah_multivalue", "ruler_niah_multiquery", "ruler_vt", "ruler_fwe",
                                       "ruler_cwe"},
    .samples_at = offsetof(struct needle_params, samples),
    .depths_at = offsetof(struct needle_params, depths),
    .check = needle_check,
    .make = needle_make,
    .scorer = lx_answer_first_int,
    .train_salt = 0x6e6565646c656470ULL,
    .train_frac = TRAIN_FRAC,
};
LX_RETRIEVAL_HOOKS(needle, needle_r)

const struct lx_task lx_task_needle = {
    .name = "needle",
    .summary = "needle in a haystack: 'special magic {city} number' in held-out prose, 1 or 3 needles, "
               "exact length (Kamradt 2023; Arize 2024; RULER, arXiv 2404.06654; Anson et al., arXiv 2505.17083)",
    .schema = LX_SCHEMA_REFUSING(needle_rows, struct needle_params, NULL, needle_refusals),
    .headline = "acc,distractor_rate,answer_logprob",
    LX_RETRIEVAL_OPS(needle),
};
