/*
** harness/engine/tokenizers/tok_hf.c - reading a Hugging Face tokenizer.json with a BPE
** model into the tables of tok_hf.h (docs/tokenizers.md#tokenizerjson).
**
** Two kinds come out of it:
**   sentencepiece  "byte_fallback": true, the normalizer Prepend "▁" + Replace
**                  " " -> "▁", the decoder Replace "▁" -> " ", ByteFallback, Fuse,
**                  Strip (Llama-2, Mistral, TinyLlama);
**   bytelevel      a ByteLevel pre-tokenizer or decoder: tokens are strings over
**                  GPT-2's byte-to-unicode alphabet, which lenx maps back to raw
**                  bytes once, here, so that encoding works on bytes (GPT-2,
**                  SmolLM, Qwen2/3, Llama-3).
** Anything else the file asks for (a WordPiece or Unigram model, a Metaspace
** pre-tokenizer, a Lowercase normalizer) is refused naming the field.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/json.h"
#include "harness/engine/tokenizers/tok_hf.h"

/* An optional member: the default when absent or null, else of type t. */
static int opt(const struct lx_json *doc, const struct lx_jv *obj, const char *key, enum lx_json_type t,
               const struct lx_jv **out, struct lx_error *err)
{
    *out = lx_json_member(obj, key);
    if (!*out || lx_json_type(*out) == LX_JSON_NULL) {
        *out = NULL;
        return LX_OK;
    }
    return lx_json_need(doc, obj, key, t, out, err);
}

static int opt_bool(const struct lx_json *doc, const struct lx_jv *obj, const char *key, int dflt, int *out,
                    struct lx_error *err)
{
    const struct lx_jv *v;
    int rc = opt(doc, obj, key, LX_JSON_BOOL, &v, err);
    *out = dflt;
    return rc == LX_OK && v ? lx_json_bool(doc, v, out, err) : rc;
}

/* The type of a component ({"type": "..."}) into *type. */
static int type_of(const struct lx_json *doc, const struct lx_jv *obj, const char **type, struct lx_error *err)
{
    const struct lx_jv *v;
    int rc = lx_json_need(doc, obj, "type", LX_JSON_STRING, &v, err);
    return rc < 0 ? rc : lx_json_str(doc, v, type, NULL, err);
}

static int unsupported(struct lx_error *err, const struct lx_json *doc, const struct lx_jv *obj, const char *what,
                       const char *type)
{
    return lx_json_member_err(err, doc, obj, "type", "unsupported %s type \"%s\"\n  hint: lenx reads %s",
                              what, type, "docs/tokenizers.md lists the supported components");
}

/* A {"String": s} or {"Regex": r} pattern. */
static int pattern(const struct lx_json *doc, const struct lx_jv *obj, const char **s, size_t *n, int *regex,
                   struct lx_error *err)
{
    const struct lx_jv *p, *v;
    int rc = lx_json_need(doc, obj, "pattern", LX_JSON_OBJECT, &p, err);
    if (rc < 0)
        return rc;
    *regex = lx_json_member(p, "Regex") != NULL;
    rc = lx_json_need(doc, p, *regex ? "Regex" : "String", LX_JSON_STRING, &v, err);
    return rc < 0 ? rc : lx_json_str(doc, v, s, n, err);
}

/* A Replace's string pattern a and its content b (normalizer or decoder). */
static int replace_args(const struct lx_json *doc, const struct lx_jv *obj, const char **a, size_t *na, const char **b,
                        size_t *nb, struct lx_error *err)
{
    const struct lx_jv *v;
    int regex, rc;
    if ((rc = pattern(doc, obj, a, na, &regex, err)) < 0 ||
        (rc = lx_json_need(doc, obj, "content", LX_JSON_STRING, &v, err)) < 0 ||
        (rc = lx_json_str(doc, v, b, nb, err)) < 0)
        return rc;
    if (regex)
        return lx_json_member_err(err, doc, obj, "pattern", "unsupported: a Replace by regex");
    return LX_OK;
}

/* ---- the model ---- */

/* A token string as the model holds it (raw bytes for byte-level) into buf. */
static int model_token(const struct hf_tok *hf, const struct lx_json *doc, const struct lx_jv *where, const char *s,
                       size_t n, char *buf, size_t *m, struct lx_error *err)
{
    if (!hf->bytelevel) {
        memcpy(buf, s, n);
        *m = n;
        return LX_OK;
    }
    long k = lx_tok_from_alphabet(s, n, buf);
    if (k < 0)
        return lx_json_err(err, doc, where, "token \"%.*s\" has a character outside the byte-level alphabet",
                           (int)(n > 40 ? 40 : n), s);
    *m = (size_t)k;
    return LX_OK;
}

static int read_vocab(struct hf_tok *hf, const struct lx_json *doc, const struct lx_jv *vocab, struct lx_error *err)
{
    char *buf = NULL;
    size_t cap = 0;
    int rc = LX_OK;
    for (void *it = lx_json_iter(vocab); it && rc == LX_OK; it = lx_json_iter_next(vocab, it)) {
        size_t n, m = 0;
        const char *key = lx_json_iter_key(it, &n);
        int64_t id;
        rc = lx_json_int(doc, lx_json_iter_value(it), &id, err);
        if (rc == LX_OK && (id < 0 || id >= hf->bpe.n_vocab))
            rc = lx_json_err(err, doc, lx_json_iter_value(it), "id %lld outside 0..%ld", (long long)id,
                             hf->bpe.n_vocab - 1);
        if (rc == LX_OK && hf->bpe.len[id] > 0)
            rc = lx_json_err(err, doc, lx_json_iter_value(it), "id %lld given twice", (long long)id);
        if (n + 1 > cap)
            buf = lx_xrealloc(buf, cap = 2 * n + 64);
        if (rc == LX_OK)
            rc = model_token(hf, doc, lx_json_iter_value(it), key, n, buf, &m, err);
        if (rc == LX_OK)
            lx_bpe_set(&hf->bpe, (int32_t)id, buf, m);
    }
    free(buf);
    if (rc == LX_OK)
        lx_bpe_index(&hf->bpe);
    return rc;
}

/* The id of a merge's part (converted as the vocabulary was), or -1. */
static int32_t part_id(const struct hf_tok *hf, const char *s, size_t n, char *buf)
{
    long m = (long)n;
    if (hf->bytelevel)
        m = lx_tok_from_alphabet(s, n, buf);
    else
        memcpy(buf, s, n);
    return m < 0 ? -1 : lx_bpe_find(&hf->bpe, buf, (size_t)m);
}

int lx_hf_tok_merge(struct hf_tok *hf, const char *a, size_t na, const char *b, size_t nb, double prio, int last)
{
    char *buf = lx_xmalloc(na + nb + 1);
    int32_t l = part_id(hf, a, na, buf), r = l >= 0 ? part_id(hf, b, nb, buf) : -1, id = -1;
    if (r >= 0) {
        size_t ln, rn;
        const char *ls = lx_bpe_str(&hf->bpe, l, &ln), *rs = lx_bpe_str(&hf->bpe, r, &rn);
        memcpy(buf, ls, ln);
        memcpy(buf + ln, rs, rn);
        id = lx_bpe_find(&hf->bpe, buf, ln + rn);
    }
    free(buf);
    if (id < 0)
        return l < 0 ? HF_MISS_LEFT : r < 0 ? HF_MISS_RIGHT : HF_MISS_MERGED;
    lx_bpe_add_pair(&hf->bpe, l, r, prio, id, last);
    return LX_OK;
}

/* One merge: "a b" or ["a", "b"]; rank k. */
static int read_merge(struct hf_tok *hf, const struct lx_json *doc, const struct lx_jv *m, long k, struct lx_error *err)
{
    const char *a, *b;
    size_t na, nb;
    if (lx_json_type(m) == LX_JSON_ARRAY && lx_json_len(m) == 2) {
        if (lx_json_str(doc, lx_json_at(m, 0), &a, &na, err) < 0 || lx_json_str(doc, lx_json_at(m, 1), &b, &nb, err) < 0)
            return LX_EINVAL;
    } else {
        size_t n;
        if (lx_json_str(doc, m, &a, &n, err) < 0)
            return lx_json_err(err, doc, m, "expected \"left right\" or [left, right]");
        const char *sp = memchr(a, ' ', n);
        if (!sp)
            return lx_json_err(err, doc, m, "expected two tokens separated by a space");
        na = (size_t)(sp - a), b = sp + 1, nb = n - na - 1;
    }
    int miss = lx_hf_tok_merge(hf, a, na, b, nb, (double)k, 1);
    if (miss == HF_MISS_MERGED)
        return lx_json_err(err, doc, m, "the merged token is not in model.vocab");
    if (miss != LX_OK) {
        const char *part = miss == HF_MISS_LEFT ? a : b;
        size_t n = miss == HF_MISS_LEFT ? na : nb;
        return lx_json_err(err, doc, m, "\"%.*s\" is not in model.vocab", (int)(n > 40 ? 40 : n), part);
    }
    return LX_OK;
}

static int read_model(struct hf_tok *hf, const struct lx_json *doc, const struct lx_jv *obj, struct lx_error *err)
{
    const char *type, *s;
    const struct lx_jv *vocab, *merges, *v;
    int rc = type_of(doc, obj, &type, err);
    if (rc < 0)
        return rc;
    if (strcmp(type, "BPE") != 0)
        return lx_json_member_err(err, doc, obj, "type", "unsupported model type \"%s\"\n  hint: lenx "
                                  "reads BPE models (SentencePiece-style with byte fallback, or byte-level)", type);
    static const char *const affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        size_t n = 0;
        if ((rc = opt(doc, obj, affixes[i], LX_JSON_STRING, &v, err)) < 0 || (v && lx_json_str(doc, v, &s, &n, err) < 0))
            return LX_EINVAL;
        if (n > 0)
            return lx_json_err(err, doc, v, "unsupported: lenx reads BPE models without subword affixes");
    }
    double dropout = 0;
    if ((rc = opt(doc, obj, "dropout", LX_JSON_REAL, &v, err)) < 0 || (v && lx_json_num(doc, v, &dropout, err) < 0))
        return LX_EINVAL;
    if (dropout != 0)
        return lx_json_err(err, doc, v, "unsupported: BPE dropout makes encoding random");
    int fallback;
    if ((rc = opt_bool(doc, obj, "byte_fallback", 0, &fallback, err)) < 0 ||
        (rc = opt_bool(doc, obj, "fuse_unk", 0, &hf->bpe.fuse_unk, err)) < 0 ||
        (rc = opt_bool(doc, obj, "ignore_merges", 0, &hf->bpe.ignore_merges, err)) < 0 ||
        (rc = lx_json_need(doc, obj, "vocab", LX_JSON_OBJECT, &vocab, err)) < 0 ||
        (rc = lx_json_need(doc, obj, "merges", LX_JSON_ARRAY, &merges, err)) < 0 ||
        (rc = read_vocab(hf, doc, vocab, err)) < 0)
        return rc;
    if (hf->bpe.n_vocab == 0)
        return lx_json_err(err, doc, vocab, "no token (nor any in added_tokens)\n"
                           "  hint: a tokenizer.json's model.vocab maps each token to its id");
    for (long k = 0; k < lx_json_len(merges); k++)
        if ((rc = read_merge(hf, doc, lx_json_at(merges, k), k, err)) < 0)
            return rc;
    for (int b = 0; b < 256 && fallback; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        hf->bpe.byte_id[b] = lx_bpe_find(&hf->bpe, name, 6);
    }
    if ((rc = opt(doc, obj, "unk_token", LX_JSON_STRING, &v, err)) < 0 || (v && lx_json_str(doc, v, &s, NULL, err) < 0))
        return LX_EINVAL;
    if (v && (hf->bpe.unk = lx_bpe_find(&hf->bpe, s, strlen(s))) < 0)
        return lx_json_err(err, doc, v, "\"%s\" is not in model.vocab", s);
    hf->bpe.by_bytes = hf->bytelevel;
    return LX_OK;
}

/* ---- added tokens ---- */

static int pair_of(const struct hf_added *a)
{
    return HF_PAIR((unsigned char)a->s[0], a->n > 1 ? (unsigned char)a->s[1] : 256);
}

/* By their first two bytes (a position tries only the tokens that start as
** its text does), then longest first (the longest that matches wins), then
** by id. */
static int added_cmp(const void *x, const void *y)
{
    const struct hf_added *a = x, *b = y;
    int pa = pair_of(a), pb = pair_of(b);
    if (pa != pb)
        return pa < pb ? -1 : 1;
    return a->n != b->n ? (a->n < b->n ? 1 : -1) : (a->id > b->id) - (a->id < b->id);
}

static int read_added(struct hf_tok *hf, const struct lx_json *doc, const struct lx_jv *list, struct lx_error *err)
{
    long n = lx_json_len(list);
    hf->added = lx_xcalloc((size_t)(n > 0 ? n : 1), sizeof *hf->added);
    for (long i = 0; i < n; i++) {
        const struct lx_jv *obj = lx_json_at(list, i), *v;
        struct hf_added *a = &hf->added[hf->n_added];
        int64_t id;
        const char *s;
        int rc;
        if ((rc = lx_json_need(doc, obj, "id", LX_JSON_INT, &v, err)) < 0 || (rc = lx_json_int(doc, v, &id, err)) < 0 ||
            (rc = lx_json_need(doc, obj, "content", LX_JSON_STRING, &v, err)) < 0 ||
            (rc = lx_json_str(doc, v, &s, &a->n, err)) < 0 ||
            (rc = opt_bool(doc, obj, "special", 0, &a->special, err)) < 0 ||
            (rc = opt_bool(doc, obj, "lstrip", 0, &a->lstrip, err)) < 0 ||
            (rc = opt_bool(doc, obj, "rstrip", 0, &a->rstrip, err)) < 0 ||
            (rc = opt_bool(doc, obj, "single_word", 0, &a->single_word, err)) < 0)
            return rc;
        if (id < 0 || id >= hf->bpe.n_vocab || a->n == 0)
            return lx_json_err(err, doc, obj, "id %lld outside 0..%ld, or empty content", (long long)id,
                               hf->bpe.n_vocab - 1);
        a->id = (int32_t)id;
        a->s = lx_xmalloc(a->n + 1);
        memcpy(a->s, s, a->n + 1);
        free(hf->text[id]);
        hf->text[id] = lx_xstrdup(a->s);
        hf->n_added++;
    }
    qsort(hf->added, (size_t)hf->n_added, sizeof *hf->added, added_cmp);
    hf->bucket = lx_xmalloc((HF_PAIRS + 1) * sizeof *hf->bucket);
    for (int p = 0, k = 0; p <= HF_PAIRS; p++) {     /* bucket[p]: the first token whose key is p or more */
        while (k < hf->n_added && pair_of(&hf->added[k]) < p)
            k++;
        hf->bucket[p] = k;
    }
    return LX_OK;
}

/* ---- normalizer, pre-tokenizer, decoder ---- */

/* One component that is not a Sequence: its type is read already. */
typedef int (*component_fn)(struct lx_tokenizer *t, struct hf_tok *hf, const struct lx_json *doc, const struct lx_jv *obj,
                            const char *type, struct lx_error *err);

/* A component (null = none), or a {"type": "Sequence", list: [...]} of them in order. */
static int each_component(struct lx_tokenizer *t, struct hf_tok *hf, const struct lx_json *doc, const struct lx_jv *obj,
                          const char *list, component_fn one, struct lx_error *err)
{
    const char *type;
    const struct lx_jv *v;
    int rc;
    if (!obj || lx_json_type(obj) == LX_JSON_NULL)
        return LX_OK;
    if ((rc = type_of(doc, obj, &type, err)) < 0)
        return rc;
    if (strcmp(type, "Sequence") != 0)
        return one(t, hf, doc, obj, type, err);
    if ((rc = lx_json_need(doc, obj, list, LX_JSON_ARRAY, &v, err)) < 0)
        return rc;
    for (long i = 0; i < lx_json_len(v) && rc == LX_OK; i++)
        rc = each_component(t, hf, doc, lx_json_at(v, i), list, one, err);
    return rc;
}

/* "<path> (<type>)" of a step, for the messages of encoding, malloc'd. */
static char *where_of(const struct lx_json *doc, const struct lx_jv *obj, const char *type)
{
    char path[256], out[320];
    lx_json_path(doc, obj, path, sizeof path);
    snprintf(out, sizeof out, "%s (%s)", path, type);
    return lx_xstrdup(out);
}

/* LX_OK while a step list has room for one more step (HF_MAX_STEPS). */
static int room_for_step(const struct lx_json *doc, const struct lx_jv *obj, int n, const char *what,
                         struct lx_error *err)
{
    if (n < HF_MAX_STEPS)
        return LX_OK;
    return lx_json_err(err, doc, obj, "more than %d %s steps\n  hint: the families lenx reads have at most 4",
                       HF_MAX_STEPS, what);
}

static int normalizer_one(struct lx_tokenizer *t, struct hf_tok *hf, const struct lx_json *doc, const struct lx_jv *obj,
                          const char *type, struct lx_error *err)
{
    const char *a, *b = NULL;
    size_t na, nb = 0;
    int rc;
    const struct lx_jv *v;
    static const char *const forms[] = {[LX_NFC] = "NFC", [LX_NFD] = "NFD", [LX_NFKC] = "NFKC", [LX_NFKD] = "NFKD"};
    struct hf_norm st = {0};
    if ((rc = room_for_step(doc, obj, hf->n_norm, "normalizer", err)) < 0)
        return rc;
    if (strcmp(type, "Prepend") == 0) {
        if ((rc = lx_json_need(doc, obj, "prepend", LX_JSON_STRING, &v, err)) < 0 ||
            (rc = lx_json_str(doc, v, &a, &na, err)) < 0)
            return rc;
        st.kind = HF_PREPEND;
    } else if (strcmp(type, "Replace") == 0) {
        if ((rc = replace_args(doc, obj, &a, &na, &b, &nb, err)) < 0)
            return rc;
        st.kind = HF_REPLACE;
    } else {
        int f = 0;
        while (f < 4 && strcmp(type, forms[f]) != 0)
            f++;
        if (f == 4)
            return unsupported(err, doc, obj, "normalizer", type);
        st.kind = HF_UNICODE, st.form = (enum lx_unicode_form)f, a = "", na = 0;
    }
    st.a = lx_xmalloc(na + 1), memcpy(st.a, a, na), st.na = na;
    st.b = lx_xmalloc(nb + 1), memcpy(st.b, b ? b : "", nb), st.nb = nb;
    st.where = where_of(doc, obj, type);
    hf->norm = lx_xrealloc(hf->norm, (size_t)(hf->n_norm + 1) * sizeof *hf->norm);
    hf->norm[hf->n_norm++] = st;
    return LX_OK;
}

/* Keep a step's regular expression as written (to_gguf names it). */
static void split_source(struct hf_split *sp, const char *s, size_t n)
{
    sp->pattern = lx_xmalloc(n + 1);
    memcpy(sp->pattern, s, n);
    sp->pattern[n] = '\0';
    sp->n_pattern = n;
}

static int read_split(struct hf_tok *hf, const struct lx_json *doc, const struct lx_jv *obj, struct hf_split *sp,
                      struct lx_error *err)
{
    const char *s, *behavior;
    size_t n;
    int regex, invert, rc;
    const struct lx_jv *v;
    if ((rc = pattern(doc, obj, &s, &n, &regex, err)) < 0 || (rc = opt_bool(doc, obj, "invert", 0, &invert, err)) < 0 ||
        (rc = lx_json_need(doc, obj, "behavior", LX_JSON_STRING, &v, err)) < 0 ||
        (rc = lx_json_str(doc, v, &behavior, NULL, err)) < 0)
        return rc;
    if (invert)
        return lx_json_member_err(err, doc, obj, "invert", "unsupported: an inverted Split");
    if (strcmp(behavior, "Isolated") != 0 && strcmp(behavior, "Removed") != 0 &&
        strcmp(behavior, "MergedWithPrevious") != 0)
        return lx_json_err(err, doc, v, "unsupported Split behavior \"%s\" (lenx: Isolated, Removed, "
                           "MergedWithPrevious)", behavior);
    sp->behavior = behavior[0] == 'I' ? HF_ISOLATED : behavior[0] == 'R' ? HF_REMOVED : HF_MERGED_PREVIOUS;
    struct lx_error e2 = {{0}};
    rc = regex ? lx_regex_compile(&sp->re, s, n, &e2) : lx_regex_literal(&sp->re, s, n, &e2);
    if (rc == LX_OK && regex)
        split_source(sp, s, n);
    return rc < 0 ? lx_json_member_err(err, doc, obj, "pattern", "%s", e2.msg) : LX_OK;
}

static int pretok_one(struct lx_tokenizer *t, struct hf_tok *hf, const struct lx_json *doc, const struct lx_jv *obj,
                      const char *type, struct lx_error *err)
{
    int rc;
    struct hf_split sp = {0};
    if ((rc = room_for_step(doc, obj, hf->n_split, "pre_tokenizer", err)) < 0)
        return rc;
    if (strcmp(type, "Split") == 0) {
        rc = read_split(hf, doc, obj, &sp, err);
    } else if (strcmp(type, "ByteLevel") == 0) {
        int use_regex;
        if ((rc = opt_bool(doc, obj, "add_prefix_space", 0, &sp.prefix_space, err)) < 0 ||
            (rc = opt_bool(doc, obj, "use_regex", 1, &use_regex, err)) < 0)
            return rc;
        size_t n = strlen(lx_tok_gpt2_pattern);
        if (use_regex && (rc = lx_regex_compile(&sp.re, lx_tok_gpt2_pattern, n, err)) == LX_OK)
            split_source(&sp, lx_tok_gpt2_pattern, n);
    } else if (strcmp(type, "Digits") == 0) {
        int each;
        if ((rc = opt_bool(doc, obj, "individual_digits", 0, &each, err)) < 0)
            return rc;
        const char *digits = each ? "\\p{N}" : "\\p{N}+";
        if ((rc = lx_regex_compile(&sp.re, digits, strlen(digits), err)) == LX_OK)
            split_source(&sp, digits, strlen(digits));
    } else {
        return unsupported(err, doc, obj, "pre_tokenizer", type);
    }
    if (rc < 0)
        return rc;
    sp.where = where_of(doc, obj, type);
    hf->split = lx_xrealloc(hf->split, (size_t)(hf->n_split + 1) * sizeof *hf->split);
    hf->split[hf->n_split++] = sp;
    return LX_OK;
}

static int decoder_one(struct lx_tokenizer *t, struct hf_tok *hf, const struct lx_json *doc, const struct lx_jv *obj,
                       const char *type, struct lx_error *err)
{
    const char *a, *b;
    size_t na, nb;
    int rc;
    const struct lx_jv *v;
    int64_t start = 0, stop = 0;
    if (strcmp(type, "ByteLevel") == 0 || strcmp(type, "Fuse") == 0)
        return LX_OK;   /* byte-level tokens are raw bytes already; decoding always fuses */
    if (strcmp(type, "ByteFallback") == 0) {
        hf->dec_bytes = 1;
    } else if (strcmp(type, "Replace") == 0) {
        if ((rc = replace_args(doc, obj, &a, &na, &b, &nb, err)) < 0)
            return rc;
        hf->repl = lx_xrealloc(hf->repl, (size_t)(hf->n_repl + 1) * sizeof *hf->repl);
        struct hf_replace *r = &hf->repl[hf->n_repl++];
        r->a = lx_xmalloc(na + 1), memcpy(r->a, a, na), r->na = na;
        r->b = lx_xmalloc(nb + 1), memcpy(r->b, b, nb), r->nb = nb;
    } else if (strcmp(type, "Strip") == 0) {
        if ((rc = lx_json_need(doc, obj, "content", LX_JSON_STRING, &v, err)) < 0 ||
            (rc = lx_json_str(doc, v, &a, &na, err)) < 0 ||
            (rc = lx_json_need(doc, obj, "start", LX_JSON_INT, &v, err)) < 0 ||
            (rc = lx_json_int(doc, v, &start, err)) < 0 ||
            (rc = lx_json_need(doc, obj, "stop", LX_JSON_INT, &v, err)) < 0 ||
            (rc = lx_json_int(doc, v, &stop, err)) < 0)
            return rc;
        if (na != 1 || start < 0 || stop < 0 || start > 64 || stop > 64)
            return lx_json_err(err, doc, obj, "unsupported Strip: content must be one byte, start/stop 0..64");
        hf->strip_char = a[0], hf->strip_start = (int)start, hf->strip_stop = (int)stop;
    } else {
        return unsupported(err, doc, obj, "decoder", type);
    }
    return LX_OK;
}

/* ---- BOS and EOS ---- */

/* The id of a special token named in TemplateProcessing's special_tokens
** (inside the vocabulary of n_vocab ids). */
static int template_id(const struct lx_json *doc, const struct lx_jv *post, const struct lx_jv *item, long n_vocab,
                       int32_t *id, struct lx_error *err)
{
    const struct lx_jv *obj = lx_json_member(item, "SpecialToken"), *v, *ids;
    const char *name;
    int64_t x;
    int rc;
    if ((rc = lx_json_need(doc, obj, "id", LX_JSON_STRING, &v, err)) < 0 ||
        (rc = lx_json_str(doc, v, &name, NULL, err)) < 0)
        return rc;
    obj = lx_json_member(post, "special_tokens");
    if ((rc = lx_json_need(doc, obj, name, LX_JSON_OBJECT, &v, err)) < 0)
        return rc;
    obj = v;
    if ((rc = lx_json_need(doc, obj, "ids", LX_JSON_ARRAY, &ids, err)) < 0)
        return rc;
    if (lx_json_len(ids) != 1)
        return lx_json_err(err, doc, ids, "unsupported: a special token of %ld ids", lx_json_len(ids));
    if ((rc = lx_json_int(doc, lx_json_at(ids, 0), &x, err)) < 0)
        return rc;
    if (x < 0 || x >= n_vocab)   /* it becomes BOS/EOS, put before or after every text */
        return lx_json_err(err, doc, lx_json_at(ids, 0), "id %lld outside 0..%ld", (long long)x, n_vocab - 1);
    *id = (int32_t)x;
    return LX_OK;
}

/* post_processor: TemplateProcessing's single template [special, $A, special]
** gives BOS and EOS and says they are added; ByteLevel adds nothing. */
static int post_one(struct lx_tokenizer *t, struct hf_tok *hf, const struct lx_json *doc, const struct lx_jv *obj,
                    const char *type, struct lx_error *err)
{
    const struct lx_jv *v;
    int rc;
    if (strcmp(type, "ByteLevel") == 0)
        return LX_OK;
    if (strcmp(type, "TemplateProcessing") != 0)
        return unsupported(err, doc, obj, "post_processor", type);
    if ((rc = lx_json_need(doc, obj, "single", LX_JSON_ARRAY, &v, err)) < 0)
        return rc;
    long n = lx_json_len(v);
    if (n > 0 && lx_json_member(lx_json_at(v, 0), "SpecialToken")) {
        if ((rc = template_id(doc, obj, lx_json_at(v, 0), hf->bpe.n_vocab, &t->bos, err)) < 0)
            return rc;
        t->add_bos = 1;
    }
    if (n > 1 && lx_json_member(lx_json_at(v, n - 1), "SpecialToken")) {
        if ((rc = template_id(doc, obj, lx_json_at(v, n - 1), hf->bpe.n_vocab, &t->eos, err)) < 0)
            return rc;
        t->add_eos = 1;
    }
    return LX_OK;
}

/* The id of an added token by content, or -1. */
static int32_t added_id(const struct hf_tok *hf, const char *s)
{
    for (int k = 0; k < hf->n_added; k++)
        if (strcmp(hf->added[k].s, s) == 0)
            return hf->added[k].id;
    return -1;
}

/* BOS/EOS the template did not give, from tokenizer_config.json beside the
** file (its bos_token / eos_token: a string or {"content": ...}), if any. */
static int read_config(struct lx_tokenizer *t, const struct hf_tok *hf, struct lx_error *err)
{
    char path[4096];
    const char *slash = strrchr(t->path, '/');
    int dir = slash ? (int)(slash - t->path) + 1 : 0;
    snprintf(path, sizeof path, "%.*stokenizer_config.json", dir, t->path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return LX_OK;
    fclose(f);
    struct lx_json *doc;
    int rc = lx_json_load(&doc, path, 1L << 24, err);
    if (rc < 0)
        return rc;
    static const char *const keys[] = {"bos_token", "eos_token"};
    int32_t *ids[] = {&t->bos, &t->eos};
    for (int i = 0; i < 2 && rc == LX_OK; i++) {
        const struct lx_jv *v = lx_json_member(lx_json_root(doc), keys[i]);
        if (v && lx_json_type(v) == LX_JSON_OBJECT)
            v = lx_json_member(v, "content");
        const char *s;
        if (*ids[i] >= 0 || !v || lx_json_type(v) != LX_JSON_STRING || lx_json_str(doc, v, &s, NULL, err) < 0)
            continue;
        if ((*ids[i] = added_id(hf, s)) < 0 && (*ids[i] = lx_bpe_find(&hf->bpe, s, strlen(s))) < 0)
            rc = lx_json_err(err, doc, v, "\"%s\" is not a token of %s", s, t->path);
    }
    lx_json_free(doc);
    return rc;
}

/* ---- the whole file ---- */

static void hf_free(void *impl)
{
    struct hf_tok *hf = impl;
    if (!hf)
        return;
    for (int i = 0; i < hf->n_added; i++)
        free(hf->added[i].s);
    for (int i = 0; i < hf->n_norm; i++)
        free(hf->norm[i].a), free(hf->norm[i].b), free(hf->norm[i].where);
    for (int i = 0; i < hf->n_split; i++)
        lx_regex_free(hf->split[i].re), free(hf->split[i].where), free(hf->split[i].pattern);
    for (int i = 0; i < hf->n_repl; i++)
        free(hf->repl[i].a), free(hf->repl[i].b);
    for (long i = 0; hf->text && i < hf->bpe.n_vocab; i++)
        free(hf->text[i]);
    for (long i = 0; hf->piece && i < hf->bpe.n_vocab; i++)
        free(hf->piece[i]);
    free(hf->piece), free(hf->piece_len);
    free(hf->added), free(hf->bucket), free(hf->norm), free(hf->split), free(hf->repl), free(hf->text);
    lx_bpe_release(&hf->bpe);
    free(hf);
}

static const struct lx_tok_ops sentencepiece_ops = {
    .kind = "sentencepiece",
    .encode = lx_hf_tok_encode,
    .decode = lx_hf_tok_decode,
    .piece = lx_hf_tok_piece,
    .free = hf_free,
    .to_gguf = lx_hf_tok_to_gguf,
};

static const struct lx_tok_ops bytelevel_ops = {
    .kind = "bytelevel",
    .encode = lx_hf_tok_encode,
    .decode = lx_hf_tok_decode,
    .piece = lx_hf_tok_piece,
    .free = hf_free,
    .to_gguf = lx_hf_tok_to_gguf,
};

/* Whether a component or any in its Sequence has type ByteLevel. */
static int has_bytelevel(const struct lx_jv *obj)
{
    const struct lx_jv *type = lx_json_member(obj, "type");
    const char *s;
    if (type && lx_json_str(NULL, type, &s, NULL, NULL) == LX_OK && strcmp(s, "ByteLevel") == 0)
        return 1;
    static const char *const lists[] = {"pretokenizers", "decoders"};
    for (int k = 0; k < 2; k++) {
        const struct lx_jv *list = lx_json_member(obj, lists[k]);
        for (long i = 0; i < lx_json_len(list); i++)
            if (has_bytelevel(lx_json_at(list, i)))
                return 1;
    }
    return 0;
}

/* Id v (when it is an integer) into vocab_size's *n: one past the largest. */
static int size_by(const struct lx_json *doc, const struct lx_jv *v, long count, long *n, struct lx_error *err)
{
    int64_t id;
    if (lx_json_int(NULL, v, &id, NULL) < 0 || id < *n)
        return LX_OK;   /* not an integer (refused by read_vocab / read_added), or not the largest */
    if (id >= 2 * count + 1024)
        return lx_json_err(err, doc, v, "id %lld is far past the %ld tokens of model.vocab and added_tokens\n"
                           "  hint: ids run from 0 with few gaps", (long long)id, count);
    *n = (long)id + 1;
    return LX_OK;
}

/* One past the largest id in model.vocab and added_tokens into *n. The
** tables are sized by it, so an id far past the count of tokens (more than
** twice it, plus 1024) is refused: one id of 10^9 in a small file would ask
** for gigabytes. */
static int vocab_size(const struct lx_json *doc, const struct lx_jv *vocab, const struct lx_jv *added, long *n,
                      struct lx_error *err)
{
    long count = (lx_json_type(vocab) == LX_JSON_OBJECT ? lx_json_len(vocab) : 0) + (added ? lx_json_len(added) : 0);
    int rc = LX_OK;
    *n = 0;
    for (void *it = lx_json_iter(vocab); it && rc == LX_OK; it = lx_json_iter_next(vocab, it))
        rc = size_by(doc, lx_json_iter_value(it), count, n, err);
    for (long i = 0; i < lx_json_len(added) && rc == LX_OK; i++)
        rc = size_by(doc, lx_json_member(lx_json_at(added, i), "id"), count, n, err);
    return rc;
}

static int read_all(struct lx_tokenizer *t, struct hf_tok *hf, const struct lx_json *doc, int config,
                    struct lx_error *err)
{
    const struct lx_jv *obj = lx_json_root(doc), *model, *added;
    int rc;
    if ((rc = lx_json_need(doc, obj, "model", LX_JSON_OBJECT, &model, err)) < 0 ||
        (rc = opt(doc, obj, "added_tokens", LX_JSON_ARRAY, &added, err)) < 0)
        return rc;
    hf->bytelevel = has_bytelevel(lx_json_member(obj, "pre_tokenizer")) || has_bytelevel(lx_json_member(obj, "decoder"));
    long n_vocab;
    if ((rc = vocab_size(doc, lx_json_member(model, "vocab"), added, &n_vocab, err)) < 0)
        return rc;
    lx_bpe_init(&hf->bpe, n_vocab);
    hf->text = lx_xcalloc((size_t)hf->bpe.n_vocab + 1, sizeof *hf->text);
    if ((rc = read_model(hf, doc, model, err)) < 0 || (rc = read_added(hf, doc, added, err)) < 0 ||
        (rc = each_component(t, hf, doc, lx_json_member(obj, "normalizer"), "normalizers", normalizer_one, err)) < 0 ||
        (rc = each_component(t, hf, doc, lx_json_member(obj, "pre_tokenizer"), "pretokenizers", pretok_one, err)) < 0 ||
        (rc = each_component(t, hf, doc, lx_json_member(obj, "decoder"), "decoders", decoder_one, err)) < 0 ||
        (rc = each_component(t, hf, doc, lx_json_member(obj, "post_processor"), "processors", post_one, err)) < 0)
        return rc;
    return config ? read_config(t, hf, err) : LX_OK;
}

int lx_hf_tok_open_json(struct lx_tokenizer *t, const char *text, size_t n, int config, struct lx_error *err)
{
    struct lx_json *doc;
    int rc = lx_json_parse(&doc, text, n, t->path, err);
    if (rc < 0)
        return rc;
    struct hf_tok *hf = lx_xcalloc(1, sizeof *hf);
    rc = read_all(t, hf, doc, config, err);
    lx_json_free(doc);
    if (rc < 0) {
        hf_free(hf);
        return rc;
    }
    lx_hf_tok_pieces_build(hf);
    t->ops = hf->bytelevel ? &bytelevel_ops : &sentencepiece_ops;
    t->impl = hf;
    t->strip_lead = hf->strip_char == ' ' ? hf->strip_start : 0;
    t->n_vocab = hf->bpe.n_vocab;
    return LX_OK;
}

static int tok_hf_open(struct lx_tokenizer *t, const unsigned char *bytes, long n, struct lx_error *err)
{
    return lx_hf_tok_open_json(t, (const char *)bytes, (size_t)n, 1, err);
}

/* A JSON file starts with '{' (after white space); a llama2.c file with a small int32. */
static int tok_hf_accept(const unsigned char *bytes, long n)
{
    long i = 0;
    while (i < n && (bytes[i] == ' ' || bytes[i] == '\n' || bytes[i] == '\r' || bytes[i] == '\t'))
        i++;
    return i < n && bytes[i] == '{';
}

const struct lx_tok_kind lx_tok_kind_hf = {
    .name = "hf",
    .file = "tokenizer.json",
    .sidecar = "tokenizer_config.json",
    .accept = tok_hf_accept,
    .open = tok_hf_open,
};
