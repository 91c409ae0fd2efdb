/*
** harness/engine/tokenizers/tok_hf_gguf.c - a tokenizer.json tokenizer as the
** tokenizer.ggml.* keys of a GGUF file (the to_gguf op of tok_hf.c's kinds;
** docs/tokenizers.md#gguf), such that llama.cpp encodes as lenx does:
**
**   bytelevel      "gpt2": tokens in GPT-2's byte alphabet, the merges in
**                  rank order, tokenizer.ggml.pre named from the Split
**                  pattern (gguf_vocab.c's table);
**   sentencepiece  "llama": tokens with U+2581, and scores whose order (best
**                  first) is the merges' ranks: llama.cpp merges any cut of a
**                  token into two tokens, by the token's score, so the
**                  merges must be every such cut, each token's together.
**
** What a GGUF file cannot say is refused naming it: a normalizer other than
** NFC (byte-level) or SentencePiece's own, a pre-tokenizer llama.cpp has no
** name for, added tokens that strip white space, a prefix space.
*/
#include <stdlib.h>
#include <string.h>

#include "harness/engine/tokenizers/gguf_vocab.h"
#include "harness/engine/tokenizers/tok_hf.h"

/* A merge in priority order. */
struct merge {
    double prio;
    int32_t left, right, id;
};

static int merge_cmp(const void *x, const void *y)
{
    const struct merge *a = x, *b = y;
    if (a->prio != b->prio)
        return a->prio < b->prio ? -1 : 1;
    return a->id != b->id ? (a->id > b->id) - (a->id < b->id) : (a->left > b->left) - (a->left < b->left);
}

/* Every merge, lowest priority first (*n of them, malloc'd). */
static struct merge *merges_sorted(const struct lx_bpe *b, long *n)
{
    struct merge *m = lx_xmalloc(((size_t)b->n_pairs + 1) * sizeof *m);
    long k = 0;
    for (uint64_t i = 0; b->pair && i <= b->pair_mask; i++)
        if (b->pair[i].key) {
            uint64_t key = b->pair[i].key - 1;
            m[k++] = (struct merge){b->pair[i].prio, (int32_t)(key >> 32), (int32_t)(key & 0xffffffffu), b->pair[i].id};
        }
    qsort(m, (size_t)k, sizeof *m, merge_cmp);
    *n = k;
    return m;
}

/* Added tokens as they are (special: control; else user-defined), model
** tokens through the byte alphabet (byte-level) or as they are, ids that
** none holds as [PAD<id>]; refused: added tokens that strip or match whole
** words, which a GGUF file cannot say. */
static int put_tokens(const struct lx_tokenizer *t, const struct hf_tok *hf, struct lx_gguf_vocab *v,
                      struct lx_error *err)
{
    unsigned char *set = lx_xcalloc((size_t)v->n + 1, 1);
    struct lx_buf b = {0};
    int rc = LX_OK;
    for (int k = 0; k < hf->n_added && rc == LX_OK; k++) {
        const struct hf_added *a = &hf->added[k];
        if (a->lstrip || a->rstrip || a->single_word)
            rc = lx_err(err, LX_EINVAL, "%s: added token \"%s\" (id %ld) has %s, which a GGUF vocabulary cannot say\n"
                        "  hint: llama.cpp matches added tokens in text as they are", t->path, a->s, (long)a->id,
                        a->lstrip ? "lstrip" : a->rstrip ? "rstrip" : "single_word");
        lx_gguf_vocab_set(v, a->id, a->s, a->n,
                          a->id == hf->bpe.unk ? LX_TT_UNKNOWN : a->special ? LX_TT_CONTROL : LX_TT_USER);
        set[a->id] = 1;
    }
    for (int32_t id = 0; id < v->n && rc == LX_OK; id++) {
        size_t len;
        const char *s = lx_bpe_str(&hf->bpe, id, &len);
        if (set[id] || len == 0)
            continue;
        int type = id == hf->bpe.unk ? LX_TT_UNKNOWN : LX_TT_NORMAL;
        if (hf->dec_bytes && lx_tok_byte_token(s, len) >= 0 && hf->bpe.byte_id[lx_tok_byte_token(s, len)] == id)
            type = LX_TT_BYTE;
        lx_buf_reset(&b);
        if (hf->bytelevel)
            lx_tok_to_alphabet(s, len, &b);
        else
            lx_buf_putn(&b, s, len);
        lx_gguf_vocab_set(v, id, lx_buf_str(&b), b.len, type);
        set[id] = 1;
    }
    lx_gguf_vocab_pad(v, set);
    lx_buf_free(&b);
    free(set);
    return rc;
}

/* ---- byte-level: "gpt2" ---- */

/* The pre-tokenizer's name from its Split patterns, or an error naming them. */
static int name_pre(const struct lx_tokenizer *t, const struct hf_tok *hf, const struct lx_gguf_pre **pre,
                    struct lx_error *err)
{
    const char *re[LX_GGUF_PRE_MAX + 1];
    size_t len[LX_GGUF_PRE_MAX + 1];
    int n = 0;
    for (int i = 0; i < hf->n_split; i++) {
        const struct hf_split *sp = &hf->split[i];
        if (sp->prefix_space)
            return lx_err(err, LX_EINVAL, "%s: %s adds a prefix space, which a GGUF vocabulary cannot say", t->path,
                          sp->where);
        if (!sp->re)
            continue;
        if (!sp->pattern || sp->behavior != HF_ISOLATED || n == LX_GGUF_PRE_MAX)
            return lx_err(err, LX_EINVAL, "%s: %s is not a Split by a regular expression keeping its matches, so "
                          "no GGUF pre-tokenizer (%s)", t->path, sp->where, lx_gguf_pre_names());
        re[n] = sp->pattern, len[n++] = sp->n_pattern;
    }
    *pre = lx_gguf_pre_of(n, re, len);
    if (!*pre)
        return lx_err(err, LX_EINVAL, "%s: the pre-tokenizer pattern \"%.*s\"%s is none that lenx can name in a GGUF "
                      "file\n  hint: lenx writes tokenizer.ggml.pre %s, each for its own patterns (docs/tokenizers.md"
                      "#gguf)", t->path, n ? (int)(len[0] > 200 ? 200 : len[0]) : 6, n ? re[0] : "(none)",
                      n > 1 ? " (and what follows it)" : "", lx_gguf_pre_names());
    if ((*pre)->ignore_merges != hf->bpe.ignore_merges)
        return lx_err(err, LX_EINVAL, "%s: its pattern is %s's, but its model %s ignore_merges, which llama.cpp %s for "
                      "%s", t->path, (*pre)->name, hf->bpe.ignore_merges ? "sets" : "does not set",
                      (*pre)->ignore_merges ? "sets" : "does not set", (*pre)->name);
    return LX_OK;
}

static int bytelevel_vocab(const struct lx_tokenizer *t, const struct hf_tok *hf, struct lx_gguf_vocab *v,
                           struct lx_error *err)
{
    const struct lx_gguf_pre *pre = NULL;
    int k = 0;
    while (k < hf->n_norm && hf->norm[k].kind == HF_UNICODE && hf->norm[k].form == LX_NFC)
        k++;
    if (k < hf->n_norm)
        return lx_err(err, LX_EINVAL, "%s: %s cannot be said in a GGUF vocabulary (a byte-level one: only NFC, "
                      "which llama.cpp leaves out)", t->path, hf->norm[k].where);
    int rc = name_pre(t, hf, &pre, err);
    if (rc < 0)
        return rc;
    v->pre = pre->name;
    long n;
    struct merge *m = merges_sorted(&hf->bpe, &n);
    v->merge = lx_xcalloc((size_t)n + 1, sizeof *v->merge);
    struct lx_buf b = {0};
    for (k = 0; k < n; k++) {
        size_t ln, rn;
        const char *l = lx_bpe_str(&hf->bpe, m[k].left, &ln), *r = lx_bpe_str(&hf->bpe, m[k].right, &rn);
        lx_buf_reset(&b);
        lx_tok_to_alphabet(l, ln, &b);
        lx_buf_putn(&b, " ", 1);
        lx_tok_to_alphabet(r, rn, &b);
        v->merge[k] = lx_xstrdup(lx_buf_str(&b));
    }
    v->n_merges = n;
    lx_buf_free(&b);
    free(m);
    return put_tokens(t, hf, v, err);
}

/* ---- SentencePiece-style: "llama" ---- */

/* Normalizer steps [Prepend "▁"], Replace " " -> "▁", no pre-tokenizer, byte
** fallback for every byte: what llama.cpp's SentencePiece does. */
static int spm_shape(const struct lx_tokenizer *t, const struct hf_tok *hf, int *prefix, struct lx_error *err)
{
    static const char meta[] = "\xe2\x96\x81";
    const struct hf_norm *st = hf->norm;
    *prefix = hf->n_norm == 2 && st[0].kind == HF_PREPEND && st[0].na == 3 && memcmp(st[0].a, meta, 3) == 0;
    const struct hf_norm *r = hf->n_norm ? &st[hf->n_norm - 1] : NULL;
    if (hf->n_norm != 1 + *prefix || r->kind != HF_REPLACE || r->na != 1 || r->a[0] != ' ' || r->nb != 3 ||
        memcmp(r->b, meta, 3) != 0)
        return lx_err(err, LX_EINVAL, "%s: its normalizer is not SentencePiece's ([Prepend \"\xe2\x96\x81\"], Replace "
                      "\" \" -> \"\xe2\x96\x81\"), which is all a GGUF 'llama' vocabulary says", t->path);
    if (hf->n_split > 0)
        return lx_err(err, LX_EINVAL, "%s: %s: a GGUF 'llama' vocabulary has no pre-tokenizer", t->path,
                      hf->split[0].where);
    for (int c = 0; c < 256; c++)
        if (hf->bpe.byte_id[c] < 0)
            return lx_err(err, LX_EINVAL, "%s: no byte token <0x%02X> (or no byte_fallback), and llama.cpp's "
                          "SentencePiece falls back to the byte tokens of characters it lacks", t->path, c);
    return LX_OK;
}

/* llama.cpp merges every cut of a token into two tokens, all of a token's at
** its score: every cut must be a merge into it, and each token's merges must
** be consecutive in rank. Scores: minus the first rank, so the best first. */
static int spm_scores(const struct lx_tokenizer *t, const struct hf_tok *hf, struct lx_gguf_vocab *v,
                      struct lx_error *err)
{
    const struct lx_bpe *b = &hf->bpe;
    long n, bad = -1;
    struct merge *m = merges_sorted(b, &n);
    unsigned char *done = lx_xcalloc((size_t)v->n + 1, 1);
    v->score = lx_xmalloc((size_t)v->n * sizeof *v->score);
    float last = n ? (float)-m[n - 1].prio - 1 : 0;   /* below every merge: tokens no merge makes */
    for (long id = 0; id < v->n; id++)
        v->score[id] = last;
    for (long k = 0; k < n && bad < 0; k++) {
        if (done[m[k].id] && m[k - 1].id != m[k].id)
            bad = k;
        done[m[k].id] = 1;
        if (k == 0 || m[k - 1].id != m[k].id)
            v->score[m[k].id] = (float)-m[k].prio;
    }
    int32_t *left = lx_xmalloc(256 * sizeof *left), *right = lx_xmalloc(256 * sizeof *right);
    long cut_id = -1;
    for (int32_t id = 0; id < b->n_vocab && bad < 0 && cut_id < 0; id++) {
        size_t len;
        const char *s = lx_bpe_str(b, id, &len);
        if (len > 256)
            left = lx_xrealloc(left, len * sizeof *left), right = lx_xrealloc(right, len * sizeof *right);
        long cuts = len && lx_bpe_find(b, s, len) == id ? lx_bpe_splits(b, s, len, left, right) : 0;
        for (long c = 0; c < cuts && cut_id < 0; c++) {
            const struct lx_bpe_pair *p = lx_bpe_pair_find(b, left[c], right[c]);
            if (!p || p->id != id)
                cut_id = id;
        }
    }
    free(left), free(right), free(done);
    int rc = LX_OK;
    const char *hint = "\n  hint: a GGUF 'llama' vocabulary merges by token score (docs/tokenizers.md#gguf)";
    if (bad >= 0)
        rc = lx_err(err, LX_EINVAL, "%s: the merges into token %ld are not consecutive (rank %.0f)%s", t->path,
                    (long)m[bad].id, m[bad].prio, hint);
    else if (cut_id >= 0)
        rc = lx_err(err, LX_EINVAL, "%s: token %ld is two tokens without a merge into it%s", t->path, cut_id, hint);
    free(m);
    return rc;
}

static int spm_vocab(const struct lx_tokenizer *t, const struct hf_tok *hf, struct lx_gguf_vocab *v,
                     struct lx_error *err)
{
    int prefix, rc;
    if ((rc = spm_shape(t, hf, &prefix, err)) < 0 || (rc = spm_scores(t, hf, v, err)) < 0)
        return rc;
    v->add_space_prefix = prefix;
    v->unk = hf->bpe.unk;
    return put_tokens(t, hf, v, err);
}

int lx_hf_tok_to_gguf(const struct lx_tokenizer *t, struct lx_gguf_out *o, struct lx_error *err)
{
    const struct hf_tok *hf = t->impl;
    struct lx_gguf_vocab v;
    lx_gguf_vocab_init(&v, hf->bytelevel ? "gpt2" : "llama", t->n_vocab);
    int rc = hf->bytelevel ? bytelevel_vocab(t, hf, &v, err) : spm_vocab(t, hf, &v, err);
    v.bos = t->bos, v.eos = t->eos, v.pad = t->pad, v.mask = t->mask;
    v.add_bos = t->add_bos, v.add_eos = t->add_eos;
    if (rc == LX_OK)
        rc = lx_gguf_vocab_put(&v, o, t->path, err);
    lx_gguf_vocab_release(&v);
    return rc;
}
