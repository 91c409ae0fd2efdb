/*
** tasks/peer_ruler_qa.c - RULER's two QA tasks (Hsieh et al. 2024, arXiv
** 2404.06654; scripts/data/synthetic/qa.py, synthetic.yaml's qa_1 and qa_2)
** as mdqa presets (peer.h, docs/tasks.md#mdqa-ruler_qa_squad-and-ruler_qa_hotpotqa):
** a question of the dataset's dev file, in file order, its gold paragraphs
** among as many others as fit, "Document i:\n{paragraph}" joined by blank
** lines, in qa.py's template and answer prefix; golds its answers
** (string_match_part). SQuAD's distractors are first the other paragraphs of
** the question's article, then any; HotpotQA's question brings its own ten.
*/
#include "tasks/peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/rng.h"

#define QA_BUDGET 32        /* constants.py: qa's tokens_to_generate */

/* One question: its text, answers and paragraph indices. */
struct qa_item {
    const char *q;
    size_t nq;
    const struct lx_jv *answers;    /* SQuAD: [{"text": ...}], HotpotQA: the "answer" string */
    long gold[16], n_gold;          /* curr_docs */
    const struct lx_jv *paras;      /* SQuAD: its article's paragraphs; NULL for HotpotQA */
    long *more, n_more;             /* SQuAD: the article's other paragraphs (more_context), a case's */
};

/* A dataset as qa.py reads it: the paragraphs (sorted(set(...))) and the
** answerable questions in file order; read once a process (lx_peer_memo). */
struct qa_set {
    struct lx_json *doc;
    const char **para;      /* (n_para,) into doc, or into own */
    size_t *para_len;
    long n_para;
    struct lx_buf own;      /* HotpotQA's paragraphs, "title\n" + sentences joined: NUL-separated */
    struct qa_item *item;   /* (n_item,) the answerable questions */
    long n_item;
};

struct qa_span {
    const char *s;
    size_t n;
};

static int span_cmp(const void *a, const void *b)
{
    const struct qa_span *x = a, *y = b;
    int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* Sorts and dedupes the paragraphs; returns their count. */
static long qa_unique(struct qa_set *s, struct qa_span *sp, long n)
{
    if (n)
        qsort(sp, (size_t)n, sizeof *sp, span_cmp);
    long u = 0;
    for (long i = 0; i < n; i++)
        if (u == 0 || span_cmp(&sp[i], &sp[u - 1]) != 0)
            sp[u++] = sp[i];
    s->para = lx_xmalloc(sizeof *s->para * (size_t)(u + 1));
    s->para_len = lx_xmalloc(sizeof *s->para_len * (size_t)(u + 1));
    for (long i = 0; i < u; i++)
        s->para[i] = sp[i].s, s->para_len[i] = sp[i].n;
    return s->n_para = u;
}

/* The index of paragraph (p, n) among the sorted ones. */
static long qa_find(const struct qa_set *s, const char *p, size_t n)
{
    struct qa_span key = {p, n};
    long lo = 0, hi = s->n_para - 1;
    while (lo <= hi) {
        long mid = (lo + hi) / 2;
        int c = span_cmp(&key, &(struct qa_span){s->para[mid], s->para_len[mid]});
        if (c == 0)
            return mid;
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return -1;
}

/* The set's next question, zeroed. */
static struct qa_item *qa_add(struct qa_set *s)
{
    s->item = lx_xrealloc(s->item, sizeof *s->item * (size_t)(s->n_item + 1));
    memset(&s->item[s->n_item], 0, sizeof *s->item);
    return &s->item[s->n_item++];
}

/* SQuAD (v2's dev file: {"data": [{"paragraphs": [{"context", "qas": [{"question",
** "answers": [{"text"}], "is_impossible"}]}]}]}). Pass 0 gathers the
** paragraphs; pass 1 the answerable questions (is_impossible false; absent,
** as in v1.1, counts as false), each with its paragraph and article. */
static int squad_article(struct qa_set *s, const struct lx_jv *art, int pass, struct qa_span **sp, long *n,
                         struct lx_error *err)
{
    const struct lx_jv *paras, *v;
    int rc = lx_json_need(s->doc, art, "paragraphs", LX_JSON_ARRAY, &paras, err);
    for (long p = 0; rc == LX_OK && p < lx_json_len(paras); p++) {
        const struct lx_jv *para = lx_json_at(paras, p), *qas, *ctx;
        const char *c;
        size_t nc;
        if ((rc = lx_json_need(s->doc, para, "context", LX_JSON_STRING, &ctx, err)) < 0 ||
            (rc = lx_json_str(s->doc, ctx, &c, &nc, err)) < 0 ||
            (rc = lx_json_need(s->doc, para, "qas", LX_JSON_ARRAY, &qas, err)) < 0)
            break;
        if (pass == 0) {
            *sp = lx_xrealloc(*sp, sizeof **sp * (size_t)(*n + 1));
            (*sp)[(*n)++] = (struct qa_span){c, nc};
            continue;
        }
        for (long q = 0; rc == LX_OK && q < lx_json_len(qas); q++) {
            const struct lx_jv *qa = lx_json_at(qas, q);
            int impossible = 0;
            if ((v = lx_json_member(qa, "is_impossible")) && (rc = lx_json_bool(s->doc, v, &impossible, err)) < 0)
                break;
            if (impossible)
                continue;
            struct qa_item *it = qa_add(s);
            if ((rc = lx_json_need(s->doc, qa, "question", LX_JSON_STRING, &v, err)) < 0 ||
                (rc = lx_json_str(s->doc, v, &it->q, &it->nq, err)) < 0 ||
                (rc = lx_json_need(s->doc, qa, "answers", LX_JSON_ARRAY, &it->answers, err)) < 0)
                break;
            it->gold[0] = qa_find(s, c, nc), it->n_gold = 1;
            it->paras = paras;
        }
    }
    return rc;
}

static int qa_squad(struct qa_set *s, struct lx_error *err)
{
    const struct lx_jv *data = NULL, *root = lx_json_root(s->doc);
    int rc = lx_json_type(root) == LX_JSON_OBJECT
                 ? lx_json_need(s->doc, root, "data", LX_JSON_ARRAY, &data, err)
                 : lx_json_err(err, s->doc, root, "not a JSON object (SQuAD's {\"data\": [...]})");
    long n = 0;
    struct qa_span *sp = NULL;
    for (int pass = 0; pass < 2 && rc == LX_OK; pass++) {
        for (long a = 0; rc == LX_OK && a < lx_json_len(data); a++)
            rc = squad_article(s, lx_json_at(data, a), pass, &sp, &n, err);
        if (pass == 0)
            qa_unique(s, sp, n);
    }
    free(sp);
    return rc;
}

/* HotpotQA paragraph p ([title, [sentences]]) as "title\n" + "".join(sentences) into b. */
static int hotpot_para(const struct lx_json *doc, const struct lx_jv *tp, struct lx_buf *b, struct lx_error *err)
{
    const struct lx_jv *sents = lx_json_at(tp, 1);
    const char *t;
    size_t nt;
    if (lx_json_type(tp) != LX_JSON_ARRAY || lx_json_len(tp) != 2 || lx_json_type(sents) != LX_JSON_ARRAY)
        return lx_json_err(err, doc, tp, "a context entry must be [title, [sentences]]");
    int rc = lx_json_str(doc, lx_json_at(tp, 0), &t, &nt, err);
    if (rc == LX_OK) {
        lx_buf_putn(b, t, nt);
        lx_buf_putn(b, "\n", 1);
    }
    for (long k = 0; rc == LX_OK && k < lx_json_len(sents); k++)
        if ((rc = lx_json_str(doc, lx_json_at(sents, k), &t, &nt, err)) == LX_OK)
            lx_buf_putn(b, t, nt);
    return rc;
}

/* HotpotQA question d's text, answer and its own paragraphs (curr_docs, no more_context). */
static int hotpot_item(struct qa_set *s, const struct lx_jv *d, struct lx_buf *one, struct lx_error *err)
{
    const struct lx_jv *v, *ctx = lx_json_member(d, "context");
    struct qa_item *it = qa_add(s);
    int rc;
    if ((rc = lx_json_need(s->doc, d, "question", LX_JSON_STRING, &v, err)) < 0 ||
        (rc = lx_json_str(s->doc, v, &it->q, &it->nq, err)) < 0 ||
        (rc = lx_json_need(s->doc, d, "answer", LX_JSON_STRING, &it->answers, err)) < 0)
        return rc;
    for (long p = 0; rc == LX_OK && p < lx_json_len(ctx) && it->n_gold < 16; p++) {
        lx_buf_reset(one);
        if ((rc = hotpot_para(s->doc, lx_json_at(ctx, p), one, err)) == LX_OK)
            it->gold[it->n_gold++] = qa_find(s, one->s, one->len);
    }
    return rc;
}

/* HotpotQA (its dev file: [{"question", "answer", "context": [[title,
** [sentences]]]}]): every paragraph, then every question. */
static int qa_hotpot(struct qa_set *s, struct lx_error *err)
{
    const struct lx_jv *root = lx_json_root(s->doc), *ctx;
    int rc = lx_json_type(root) == LX_JSON_ARRAY
                 ? LX_OK
                 : lx_json_err(err, s->doc, root, "not a JSON array (HotpotQA's [...])");
    long n = 0, (*off)[2] = NULL;
    for (long d = 0; rc == LX_OK && d < lx_json_len(root); d++) {
        if ((rc = lx_json_need(s->doc, lx_json_at(root, d), "context", LX_JSON_ARRAY, &ctx, err)) < 0)
            break;
        for (long p = 0; rc == LX_OK && p < lx_json_len(ctx); p++) {
            size_t at = s->own.len;
            if ((rc = hotpot_para(s->doc, lx_json_at(ctx, p), &s->own, err)) == LX_OK) {
                off = lx_xrealloc(off, sizeof *off * (size_t)(n + 1));
                off[n][0] = (long)at, off[n++][1] = (long)(s->own.len - at);
                lx_buf_putn(&s->own, "", 1);
            }
        }
    }
    struct qa_span *sp = lx_xmalloc(sizeof *sp * (size_t)(n + 1));
    for (long i = 0; i < n; i++)
        sp[i] = (struct qa_span){s->own.s + off[i][0], (size_t)off[i][1]};
    qa_unique(s, sp, n);
    free(sp), free(off);
    struct lx_buf one = {0};
    for (long d = 0; rc == LX_OK && d < lx_json_len(root); d++)
        rc = hotpot_item(s, lx_json_at(root, d), &one, err);
    lx_buf_free(&one);
    return rc;
}

/* A case: the question, its paragraphs' order, the document list's scratch. */
struct qa_case {
    const struct qa_set *s;
    const struct qa_item *it;
    long *more;             /* the article's other paragraphs in the case's order (random.sample(curr_more)) */
    long *add, n_add;       /* every other paragraph in the case's order (random.sample(addition_docs)) */
    long *pick;             /* scratch: the documents of a prompt */
    uint64_t cell;
};

/* The prompt with n documents: the gold ones, then (SQuAD) the article's
** others, then any others, as qa.py's generate_input_output picks them;
** every paragraph, repeated, once n reaches their count. Shuffled by a
** permutation of the cell and n (qa.py's seeded shuffle is one for the run). */
static void qa_build(void *ctx, long n, struct lx_buf *b)
{
    struct qa_case *c = ctx;
    const struct qa_item *it = c->it;
    long k = 0;
    c->pick = lx_xrealloc(c->pick, sizeof *c->pick * (size_t)(n + 1));
    if (n < c->s->n_para) {
        for (long i = 0; i < it->n_gold && k < n; i++)
            c->pick[k++] = it->gold[i];
        int all_more = n - it->n_gold > it->n_more;
        for (long i = 0; i < it->n_more && k < n; i++)
            c->pick[k++] = all_more ? it->more[i] : c->more[i];
        for (long i = 0; i < c->n_add && k < n; i++)
            c->pick[k++] = c->add[i];
    } else {
        for (; k < n; k++)      /* (DOCS * repeats)[:n] */
            c->pick[k] = k % c->s->n_para;
    }
    struct lx_rng r;
    lx_rng_init(&r, c->cell ^ 0x71615f7368756666ULL, (uint32_t)k, LX_RNG_DATA);
    lx_peer_shuffle(&r, c->pick, k);
    lx_buf_reset(b);
    lx_buf_puts(b, "Answer the question based on the given documents. Only give me the answer and do not output any "
                "other words.\n\nThe following are given documents.\n\n");
    for (long i = 0; i < k; i++) {
        lx_buf_printf(b, "%sDocument %ld:\n", i ? "\n\n" : "", i + 1);
        lx_buf_putn(b, c->s->para[c->pick[i]], c->s->para_len[c->pick[i]]);
    }
    lx_buf_puts(b, "\n\nAnswer the question based on the given documents. Only give me the answer and do not output "
                "any other words.\n\nQuestion: ");
    lx_buf_putn(b, it->q, it->nq);
    lx_buf_puts(b, " Answer:");
}

/* The question's answers as golds: SQuAD's answers' texts, HotpotQA's answer. */
static int qa_golds(const struct qa_set *s, const struct qa_item *it, struct lx_peer_case *out, struct lx_error *err)
{
    const char *t;
    size_t n;
    int rc = LX_OK;
    const struct lx_jv *v = it->answers;
    for (long i = 0; rc == LX_OK && i < (lx_json_type(it->answers) == LX_JSON_ARRAY ? lx_json_len(it->answers) : 1);
         i++) {
        if (lx_json_type(it->answers) == LX_JSON_ARRAY)
            rc = lx_json_need(s->doc, lx_json_at(it->answers, i), "text", LX_JSON_STRING, &v, err);
        if (rc == LX_OK && (rc = lx_json_str(s->doc, v, &t, &n, err)) == LX_OK && n == 0)
            rc = lx_json_err(err, s->doc, v, "an empty answer (it would be inside every output)");
        if (rc == LX_OK)
            lx_peer_add_gold(out, t, n);
    }
    if (rc == LX_OK && out->n_golds == 0)
        rc = lx_json_err(err, s->doc, it->answers, "the question has no answer");
    return rc;
}

/* The case's orders: the article's other paragraphs, and every paragraph
** neither gold nor among those. */
static void qa_orders(struct qa_case *c, uint64_t key, long sample)
{
    const struct qa_item *it = c->it;
    struct lx_rng r;
    lx_rng_init(&r, key ^ 0x71615f646f637321ULL, (uint32_t)sample, LX_RNG_DATA);
    c->more = lx_xmalloc(sizeof *c->more * (size_t)(it->n_more + 1));
    memcpy(c->more, it->more ? it->more : c->more, sizeof *c->more * (size_t)it->n_more);
    lx_peer_shuffle(&r, c->more, it->n_more);
    unsigned char *taken = lx_xcalloc((size_t)c->s->n_para + 1, 1);
    for (long i = 0; i < it->n_gold; i++)
        taken[it->gold[i]] = 1;
    for (long i = 0; i < it->n_more; i++)
        taken[it->more[i]] = 1;
    c->add = lx_xmalloc(sizeof *c->add * (size_t)(c->s->n_para + 1));
    for (long i = 0; i < c->s->n_para; i++)
        if (!taken[i])
            c->add[c->n_add++] = i;
    lx_peer_shuffle(&r, c->add, c->n_add);
    free(taken);
}

static void qa_free(void *v)
{
    struct qa_set *s = v;
    lx_json_free(s->doc);
    free(s->para), free(s->para_len), free(s->item);
    lx_buf_free(&s->own);
    free(s);
}

static int qa_load(int squad, const char *path, void **out, struct lx_error *err)
{
    struct qa_set *s = lx_xcalloc(1, sizeof *s);
    int rc = lx_json_load(&s->doc, path, 0, err);
    if (rc == LX_OK)
        rc = squad ? qa_squad(s, err) : qa_hotpot(s, err);
    if (rc == LX_OK && s->n_item == 0)
        rc = lx_err(err, LX_EINVAL, "%s holds no answerable question\n  hint: data: names %s", path,
                    squad ? "SQuAD 2.0's dev-v2.0.json (RULER's squad.json)"
                          : "HotpotQA's hotpot_dev_distractor_v1.json (RULER's hotpotqa.json)");
    if (rc < 0)
        qa_free(s);
    else
        *out = s;
    return rc;
}

static int qa_load_squad(const char *path, void **out, struct lx_error *err)
{
    return qa_load(1, path, out, err);
}

static int qa_load_hotpot(const char *path, void **out, struct lx_error *err)
{
    return qa_load(0, path, out, err);
}

static int qa_set_of(int squad, const char *path, const struct qa_set **s, struct lx_error *err)
{
    const void *v = NULL;
    int rc = lx_peer_memo(path, squad ? qa_load_squad : qa_load_hotpot, qa_free, &v, err);
    *s = v;
    return rc;
}

/* Question sample of s into it, with (SQuAD) its article's other paragraphs (more_context). */
static int qa_item_of(int squad, const char *data, const struct qa_set *s, long sample, struct qa_item *it,
                      struct lx_error *err)
{
    if (sample >= s->n_item)
        return lx_err(err, LX_EINVAL, "%s holds %ld answerable questions, read in file order; there is no case %ld\n"
                      "  hint: samples: at most %ld", data, s->n_item, sample, s->n_item);
    *it = s->item[sample];
    for (long i = 0; i < it->n_gold; i++)
        if (it->gold[i] < 0)
            return lx_err(err, LX_EINVAL, "%s: question %ld's paragraph is not among the file's", data, sample);
    if (it->n_gold == 0)
        return lx_err(err, LX_EINVAL, "%s: question %ld has no paragraph (its context is empty)\n  hint: data: names "
                      "%s", data, sample, squad ? "SQuAD's dev file" : "HotpotQA's dev file in the distractor setting");
    it->more = lx_xmalloc(sizeof *it->more * (size_t)(lx_json_len(it->paras) + 1));
    for (long o = 0; o < lx_json_len(it->paras); o++) {     /* read at load: each is a string */
        const char *oc;
        size_t on;
        long idx;
        if (lx_json_str(s->doc, lx_json_member(lx_json_at(it->paras, o), "context"), &oc, &on, err) == LX_OK &&
            (idx = qa_find(s, oc, on)) != it->gold[0])
            it->more[it->n_more++] = idx;
    }
    return LX_OK;
}

static int qa_make(int squad, const char *data, long length, uint64_t key, long sample, const struct lx_tokenizer *tk,
                   struct lx_peer_case *out, struct lx_error *err)
{
    const struct qa_set *s = NULL;
    struct qa_item it = {0};
    long n = 0;
    int rc = qa_set_of(squad, data, &s, err);
    if (rc == LX_OK)
        rc = qa_item_of(squad, data, s, sample, &it, err);
    if (rc == LX_OK)
        rc = qa_golds(s, &it, out, err);
    struct qa_case c = {.s = s, .it = &it, .cell = key};
    if (rc == LX_OK) {
        qa_orders(&c, key, sample);
        rc = lx_peer_fit_units(qa_build, &c, it.n_gold, length, length, QA_BUDGET, tk, &n, err);
    }
    if (rc == LX_OK && n < it.n_gold)
        rc = lx_err(err, LX_EINVAL, "ruler qa: length %ld leaves no room for question %ld's %ld gold paragraph%s, the "
                    "template and the %d tokens to generate\n  hint: use a longer length", length, sample, it.n_gold,
                    it.n_gold > 1 ? "s" : "", QA_BUDGET);
    if (rc == LX_OK)
        qa_build(&c, n, &out->prompt);
    free(c.more), free(c.add), free(c.pick), free(it.more);
    return rc;
}

LX_PEER_MAKER(lx_peer_ruler_qa_squad)
{
    return qa_make(1, data, length, key, sample, tk, out, err);
}

LX_PEER_MAKER(lx_peer_ruler_qa_hotpotqa)
{
    return qa_make(0, data, length, key, sample, tk, out, err);
}

/* The data checks before a run: the file reads as the dataset, with a
** question (and is kept for the run's cases). */
int lx_peer_ruler_squad(const char *path, struct lx_error *err)
{
    const struct qa_set *s;
    return qa_set_of(1, path, &s, err);
}

int lx_peer_ruler_hotpotqa(const char *path, struct lx_error *err)
{
    const struct qa_set *s;
    return qa_set_of(0, path, &s, err);
}
