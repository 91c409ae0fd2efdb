/*
** tasks/mdqa.c - multi-document question answering, "lost in the middle",
** synthesised: k documents of held-out prose, each carrying one made-up fact,
** and a question only the gold document answers.
**
** Liu, Lin, Hewitt, Paranjape, Bevilacqua, Petroni & Liang, "Lost in the
** Middle: How Language Models Use Long Contexts", 2023 (arXiv 2307.03172;
** nelson-liu/lost-in-the-middle; docs/tasks.md#mdqa). Their prompt,
** document format and scorer are kept; NaturalQuestions with Contriever
** distractors cannot be shipped and is far beyond tiny models, so documents
** and question are synthesised (a corpus-internal analogue).
** An instance is exactly `length` byte tokens, [BOS] + prompt + answer:
**
**   template litm    instruction "\n\n" documents "\n\nQuestion: " q "\nAnswer:"
**   template short   documents "\n\nQuestion: " q "\nAnswer:"
**
**   instruction  "Write a high-quality answer for the given question using only the provided
**                search results (some of which might be irrelevant)."   (LiTM, verbatim)
**   document i   "Document [{i}](Title: {name}) {passage}", i = 1 … k, joined by "\n"
**   passage      a corpus excerpt with the document's fact spliced in at a sentence start
**   fact         "{name}'s favourite colour is {colour}."
**   q            "What is {name}'s favourite colour?"   (the gold document's name)
**   answer       " {colour}"   (answer_off is its space; gold is the colour)
**
** Every document holds one fact, about its own name (its title): k distinct
** names and k distinct colours, drawn without replacement from two fixed lists
** of 32 (names found nowhere in the Austen corpora; no colour inside another),
** so the answer is unique in the instance, and the other documents' colours
** are its distractors (alt, counted in distractor_rate).
**
** Gold position: depth d puts the gold document at 0-based position
** round(d·(k − 1)); the other k − 1 keep their order around it (LiTM keeps the
** distractors in retrieval order and inserts the gold). `depths` = k (10 and
** 10 by default) asks every position once per sample.
**
** Exact length: the passages share the B bytes the rest leaves, B = length − 1
** − (instruction, document heads, facts with one space each, newlines,
** question, answer); the passage at position i has ⌊B/k⌋ bytes, one more for
** i < B mod k. A passage is that many bytes of the held-out novel (Persuasion,
** split "test") from the first sentence start at or after an offset drawn per
** document, read cyclically, its newlines turned into spaces so that a
** document is one line. Its fact goes in at the split nearest u·P (u drawn per
** document) among 0, P and the passage's sentence starts, followed by a space
** (at P > 0: after the passage, preceded by the space). Names, colours,
** offsets and u depend on (key, sample) only (Philox, the sample as counter):
** the depths of a sample are the same documents with the gold moved.
**
** Scorer: LiTM's best_subspan_em with one gold (lx_answer_contains).
**
** Deviations: synthetic facts in Austen prose instead of NaturalQuestions;
** titles are the facts' names; passages are sized by the length, not ~100
** words; the gold position is a depth grid, not 0, 4, 9, …; byte tokens, the
** answer counted in the length. Training windows (train_sample) read the first
** 90% of the training novels, so no held-out text is trained on and the
** trainer's validation tail (its last 5%) stays unseen.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/retrieval.h"
#include "harness/core/rng.h"
#include "tasks/task.h"

#define MAX_DOCS 30
#define TRAIN_FRAC 0.9      /* training windows read the first 90% of the training novels */

enum { TPL_LITM, TPL_SHORT };

struct mdqa_params {
    int template;       /* TPL_LITM or TPL_SHORT */
    long documents;     /* k */
    long samples;       /* trials per depth */
    long depths;        /* evenly spaced gold depths in [0, 1]; 1 = the single depth 0.5 */
    struct lx_preset_params preset;   /* protocol and data (tasks/retrieval.h) */
};

static const struct lx_param mdqa_rows[] = {
    LX_P_ENUM(struct mdqa_params, template, "litm", "litm|short", 0,
              "litm: lost-in-the-middle's instruction verbatim; short: documents and question only"),
    LX_P_INT(struct mdqa_params, documents, "10", 1, MAX_DOCS, 0, "documents, one of them gold"),
    LX_P_INT(struct mdqa_params, samples, "20", 1, 1e6, LX_PF_TEST_ONLY, "trials per depth"),
    LX_P_INT(struct mdqa_params, depths, "10", 0, 1001, LX_PF_TEST_ONLY,
             "gold at position round(d*(documents-1)) for d = 0, 1/(k-1), ..., 1 (k = documents: every "
             "position; 1 = the single depth 0.5; 0 = a uniform random depth per sample)"),
    LX_RETRIEVAL_PRESET_ROWS(struct mdqa_params, "lenx|litm|ruler_qa_squad|ruler_qa_hotpotqa"),
};

/* Rows no preset reads (litm reads its file; RULER's make `samples` cases; tasks/retrieval.h). */
static const struct lx_param_rule mdqa_refusals[] = {
    {"template", "protocol=lenx"}, {"documents", "protocol=lenx"}, {"samples", "protocol!=litm"},
    {"depths", "protocol=lenx"}, {NULL, NULL},
};

static const char *const NAMES[] = {
    "Imogen",  "Rosalind", "Tobias",   "Ambrose", "Cecily",   "Horatio", "Perdita",  "Leopold",
    "Octavia", "Silas",    "Beatrix",  "Cornelius", "Dorothea", "Ephraim", "Gideon", "Ignatius",
    "Juniper", "Lavinia",  "Mortimer", "Nerissa", "Oswin",    "Rowena",  "Tabitha",  "Ulric",
    "Wilfred", "Xavier",   "Zenobia",  "Barnaby", "Cosmo",    "Jago",    "Ottilie",  "Theodora",
};
static const char *const COLOURS[] = {
    "amber",  "azure",    "beige",   "bronze", "coral",  "crimson", "cyan",    "emerald",
    "indigo", "ivory",    "khaki",   "lavender", "lilac", "magenta", "maroon", "mauve",
    "ochre",  "olive",    "pink",    "purple", "scarlet", "teal",   "turquoise", "violet",
    "yellow", "chartreuse", "fuchsia", "cobalt", "cerise", "russet", "sepia",  "vermilion",
};
#define N_NAMES ((int)(sizeof NAMES / sizeof *NAMES))
#define N_COLOURS ((int)(sizeof COLOURS / sizeof *COLOURS))
_Static_assert(sizeof NAMES / sizeof *NAMES >= MAX_DOCS && sizeof COLOURS / sizeof *COLOURS >= MAX_DOCS,
               "every document needs a name and a colour of its own");
_Static_assert(MAX_DOCS - 1 <= LX_MAX_ALT, "the other documents' colours are the distractors");

static const char INSTRUCTION[] = "Write a high-quality answer for the given question using only the provided "
                                  "search results (some of which might be irrelevant).\n\n";
static const char HEAD[] = "Document [%ld](Title: %s) ";
static const char FACT[] = "%s's favourite colour is %s.";
static const char QUESTION[] = "\n\nQuestion: What is %s's favourite colour?\nAnswer:";
static const char *const TPL_NAME[] = {[TPL_LITM] = "litm", [TPL_SHORT] = "short"};

/* What a sample fixes, whatever its depth; entity 0 is asked about. */
struct draw {
    int name[MAX_DOCS];         /* (documents,) distinct indices into NAMES */
    int colour[MAX_DOCS];       /* (documents,) distinct indices into COLOURS */
    double start[MAX_DOCS];     /* (documents,) where each passage starts, a fraction of the prose */
    double at[MAX_DOCS];        /* (documents,) where each fact goes in its passage, 0 … 1 */
};

static void draw(const struct mdqa_params *p, uint64_t key, long sample, struct draw *d)
{
    struct lx_rng r;
    lx_rng_init(&r, key ^ (uint64_t)((unsigned long)sample >> 32), (uint32_t)sample, LX_RNG_DATA);
    lx_draw_distinct(&r, N_NAMES, p->documents, d->name);
    lx_draw_distinct(&r, N_COLOURS, p->documents, d->colour);
    for (int e = 0; e < p->documents; e++) {
        d->start[e] = lx_rng_uniform(&r);
        d->at[e] = lx_rng_uniform(&r);
    }
}

/* Bytes besides BOS and the passages, for these names and colours. */
static long fixed_bytes(const struct mdqa_params *p, const int *name, const int *colour)
{
    long n = (p->template == TPL_LITM ? (long)sizeof INSTRUCTION - 1 : 0) + (p->documents - 1);
    n += snprintf(NULL, 0, QUESTION, NAMES[name[0]]) + 1 + (long)strlen(COLOURS[colour[0]]);
    for (long e = 0; e < p->documents; e++)     /* heads in any order: positions 1 … k */
        n += snprintf(NULL, 0, HEAD, e + 1, NAMES[name[e]]) +
             snprintf(NULL, 0, FACT, NAMES[name[e]], COLOURS[colour[e]]) + 1;
    return n;
}

/* The shortest length that fits any draw: every name and colour as long as the longest. */
static long min_length(const struct mdqa_params *p)
{
    int name[MAX_DOCS] = {0}, colour[MAX_DOCS] = {0};
    for (int i = 1; i < N_NAMES; i++)
        name[0] = strlen(NAMES[i]) > strlen(NAMES[name[0]]) ? i : name[0];
    for (int i = 1; i < N_COLOURS; i++)
        colour[0] = strlen(COLOURS[i]) > strlen(COLOURS[colour[0]]) ? i : colour[0];
    for (int e = 1; e < MAX_DOCS; e++)
        name[e] = name[0], colour[e] = colour[0];
    return 1 + fixed_bytes(p, name, colour);
}

static int mdqa_check(const void *params, long length, struct lx_error *err)
{
    if (lx_retrieval_check_length("mdqa", length, err) < 0)
        return LX_EINVAL;
    const struct mdqa_params *p = params;
    long min = min_length(p);
    if (length < min)
        return lx_err(err, LX_EINVAL,
                      "mdqa: length %ld is too short for %ld documents with template '%s' (minimum %ld)\n"
                      "  hint: use a length of at least %ld, or fewer documents%s",
                      length, p->documents, TPL_NAME[p->template], min, min,
                      p->template == TPL_LITM ? ", or template: short" : "");
    return LX_OK;
}

/* Document `slot` (0-based) about entity e, its passage P bytes: into tok
** from pos; buf holds P + 1 bytes. Returns the new position. */
static long document(const struct draw *d, const struct lx_prose *prose, long slot, int e, long P, char *buf,
                     int *tok, long pos)
{
    char s[96];
    const char *name = NAMES[d->name[e]];
    pos = lx_put_bytes(tok, pos, s, snprintf(s, sizeof s, HEAD, slot + 1, name));
    lx_prose_copy(prose, lx_prose_sentence(prose, (long)(d->start[e] * (double)prose->n)), P, buf);
    long at = lx_prose_nearest(buf, P, d->at[e]);
    for (long i = 0; i < P; i++)    /* one document, one line */
        buf[i] = buf[i] == '\n' ? ' ' : buf[i];
    int end = at == P && P > 0;     /* after the passage: the space goes first */
    pos = lx_put_bytes(tok, pos, buf, at);
    pos = end ? lx_put_bytes(tok, pos, " ", 1) : pos;
    pos = lx_put_bytes(tok, pos, s, snprintf(s, sizeof s, FACT, name, COLOURS[d->colour[e]]));
    pos = end ? pos : lx_put_bytes(tok, pos, " ", 1);
    return lx_put_bytes(tok, pos, buf + at, P - at);
}

/* The instance of (key, length, sample, depth), its passages read from split. */
static int mdqa_make(const void *params, const struct lx_retrieval_at *at, struct lx_instance *out,
                     struct lx_error *err)
{
    const struct mdqa_params *p = params;
    struct lx_prose prose;
    int rc = lx_prose_open(&prose, at->split, at->frac, err);
    if (rc < 0)
        return rc;
    struct draw d;
    draw(p, at->key, at->sample, &d);
    long k = p->documents, gold = lround(at->depth * (double)(k - 1));
    long B = at->length - 1 - fixed_bytes(p, d.name, d.colour);
    int *tok = out->tok;
    char *buf = malloc((size_t)(B / k + 2)), q[128];
    if (!buf)
        return lx_err(err, LX_ENOMEM, "mdqa: no memory for an instance of %ld tokens", at->length);
    long pos = 0;
    tok[pos++] = LX_TOK_BOS;
    if (p->template == TPL_LITM)
        pos = lx_put_bytes(tok, pos, INSTRUCTION, (long)sizeof INSTRUCTION - 1);
    for (long s = 0; s < k; s++) {  /* position s holds entity 0 (gold) at s == gold, else the next distractor */
        int e = (int)(s < gold ? s + 1 : s == gold ? 0 : s);
        pos = s > 0 ? lx_put_bytes(tok, pos, "\n", 1) : pos;
        pos = document(&d, &prose, s, e, B / k + (s < B % k), buf, tok, pos);
    }
    free(buf);
    pos = lx_put_bytes(tok, pos, q, snprintf(q, sizeof q, QUESTION, NAMES[d.name[0]]));
    out->answer_off = pos;
    snprintf(out->gold, sizeof out->gold, "%s", COLOURS[d.colour[0]]);
    pos = lx_put_bytes(tok, pos, " ", 1);
    pos = lx_put_bytes(tok, pos, out->gold, (long)strlen(out->gold));
    LX_ASSERT(pos == at->length);
    for (int e = 1; e < k; e++) {
        long slot = e - 1 < gold ? e - 1 : e;
        snprintf(out->alt[e - 1], sizeof out->alt[e - 1], "%s", COLOURS[d.colour[e]]);
        out->alt_depth[e - 1] = (double)slot / (double)(k - 1);
    }
    out->n_alt = (int)k - 1;
    return LX_OK;
}

/* Scored by contains; a training window reads the training novels, its depth
** uniform. */
static const struct lx_retrieval mdqa_r = {
    .name = "mdqa",
    .preset_at = offsetof(struct mdqa_params, preset),
    .protocols = (const char *const[]){"lenx", "litm", "ruler_qa_squad", "ruler_qa_hotpotqa"},
    .samples_at = offsetof(struct mdqa_params, samples),
    .depths_at = offsetof(struct mdqa_params, depths),
    .check = mdqa_check,
    .make = mdqa_make,
    .scorer = lx_answer_contains,
    .train_salt = 0x6d64716164657074ULL,
    .train_frac = TRAIN_FRAC,
};
LX_RETRIEVAL_HOOKS(mdqa, mdqa_r)

const struct lx_task lx_task_mdqa = {
    .name = "mdqa",
    .summary = "multi-document QA, lost in the middle: k documents of held-out prose with synthetic facts, "
               "gold position by depth, exact length (Liu et al. 2023, arXiv 2307.03172)",
    .schema = LX_SCHEMA_REFUSING(mdqa_rows, struct mdqa_params, NULL, mdqa_refusals),
    .headline = "acc,distractor_rate,answer_logprob",
    LX_RETRIEVAL_OPS(mdqa),
};
