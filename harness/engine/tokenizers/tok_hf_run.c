/*
** harness/engine/tokenizers/tok_hf_run.c - encoding and decoding with a tokenizer.json's
** tables (tok_hf.h, docs/tokenizers.md#tokenizerjson), in the order of the
** Hugging Face tokenizers library:
**   1. added tokens are split out of the raw text (leftmost, then longest);
**   2. each stretch between them is normalized on its own (Prepend, Replace, NFC);
**   3. the pre-tokenizer steps cut it into pieces, each step cutting the
**      pieces of the one before;
**   4. each piece is one BPE word (bpe.c).
** A segment (LX_ENC_SEGMENT) skips the dummy prefix: a Prepend normalizer and
** ByteLevel's add_prefix_space. lx_hf_tok_piece reads the text of one id.
** Steps 2-3 run within the limits of tok_hf.h (docs/tokenizers.md#limits): a
** pattern that fails or a text grown past the cap stops the encoding with an
** error naming the step, never a text cut another way.
*/
#include <stdlib.h>
#include <string.h>

#include "harness/engine/tokenizers/tok_hf.h"
#include "harness/engine/tokenizers/unicode.h"

/* ---- 1. added tokens ---- */

/* The classes (LX_UC_*) of the character that starts at text[i] (*len its
** bytes) and of the one that ends at text[i] (starting at or after lo; *len
** its bytes); a byte that is no UTF-8 character has none. As the library's
** lstrip/rstrip (Unicode White_Space) and single_word (the `\w` of a regex)
** read a neighbour: a whole character, ASCII or not. */
static unsigned class_at(const char *text, size_t n, size_t i, size_t *len)
{
    int32_t cp;
    *len = (size_t)lx_unicode_next(text + i, n - i, &cp);
    return lx_unicode_class(cp);
}

static unsigned class_before(const char *text, size_t lo, size_t i, size_t *len)
{
    size_t k = i - 1;
    while (k > lo && i - k < 4 && ((unsigned char)text[k] & 0xC0) == 0x80)
        k--;
    size_t got;
    unsigned c = class_at(text, i, k, &got);
    if (k + got != i)   /* not one character ending at i: the last byte alone */
        return *len = 1, 0;
    *len = got;
    return c;
}

/* The added token matching at text[i] (the longest: those of text[i, i + 2),
** longest first, then those of text[i] alone), or NULL. */
static const struct hf_added *added_at(const struct hf_tok *hf, const char *text, size_t n, size_t i)
{
    unsigned char c = (unsigned char)text[i];
    const int keys[2] = {HF_PAIR(c, i + 1 < n ? (unsigned char)text[i + 1] : 256), HF_PAIR(c, 256)};
    for (int pass = 0; pass < (keys[0] == keys[1] ? 1 : 2) && hf->n_added; pass++)   /* at the end: one key */
        for (int k = hf->bucket[keys[pass]]; k < hf->bucket[keys[pass] + 1]; k++) {
            const struct hf_added *a = &hf->added[k];
            if (a->n > n - i || memcmp(text + i, a->s, a->n) != 0)
                continue;
            size_t len;
            if (a->single_word && ((i > 0 && (class_before(text, 0, i, &len) & LX_UC_WORD)) ||
                                   (i + a->n < n && (class_at(text, n, i + a->n, &len) & LX_UC_WORD))))
                continue;
            return a;
        }
    return NULL;
}

/* ---- 2-4. a stretch of text between added tokens ---- */

/* One encoding: where ids go, and what it has spent of the limits of tok_hf.h. */
struct enc {
    const struct lx_tokenizer *t;   /* the tokenizer (its path names it in messages) */
    const struct hf_tok *hf;            /* its tables */
    struct lx_ids *out;             /* where ids go */
    struct lx_bpe_work *work;       /* BPE scratch */
    int segment;                    /* LX_ENC_SEGMENT: no dummy prefix */
    size_t cap;                     /* bytes the normalized text, and the pieces, may reach (HF_GROWTH) */
    size_t n_norm;                  /* bytes of normalized text so far (every stretch) */
    size_t n_pieces;                /* bytes of pieces handed to BPE so far */
    size_t from;                    /* the stretch's first byte in the text, for messages */
    int grew;                       /* the last pre-tokenizer step that added a prefix space, or -1 */
    struct lx_error *err;           /* filled on failure */
};

/* What on_match needs of the step cutting s. */
struct piece_ctx {
    struct enc *e;              /* the encoding */
    int step;                   /* the pre-tokenizer step cutting */
    const char *s;              /* the text being cut */
    size_t base;                /* s's first byte in the stretch's normalized text */
    size_t done;                /* s[0, done) is already handed on */
    int inner;                  /* a later step failed (its message is complete) */
};

static int pieces(struct enc *e, int step, const char *s, size_t n, size_t base);

/* A match [start, end) of step c->step in c->s: the gap before it, then
** (unless REMOVED) the match, go on to the next step; MERGED_PREVIOUS hands
** the gap and the match on as one piece (a match with no gap before it, at
** the start or after another match, alone), as the tokenizers library does. */
static int on_match(size_t start, size_t end, void *arg)
{
    struct piece_ctx *c = arg;
    int rc = LX_OK;
    if (c->e->hf->split[c->step].behavior == HF_MERGED_PREVIOUS) {
        rc = pieces(c->e, c->step + 1, c->s + c->done, end - c->done, c->base + c->done);
        c->done = end;
        c->inner = rc < 0;
        return rc;
    }
    if (start > c->done)
        rc = pieces(c->e, c->step + 1, c->s + c->done, start - c->done, c->base + c->done);
    if (rc == LX_OK && c->e->hf->split[c->step].behavior == HF_ISOLATED)
        rc = pieces(c->e, c->step + 1, c->s + start, end - start, c->base + start);
    c->done = end;
    c->inner = rc < 0;
    return rc;
}

/* One piece for BPE, within the cap on pre-tokenized bytes. */
static int to_bpe(struct enc *e, const char *s, size_t n)
{
    e->n_pieces += n;
    if (e->n_pieces > e->cap)
        return lx_err(e->err, LX_EINVAL, "%s: %s: the pieces pass %zu bytes, %d times the text plus %d\n"
                      "  hint: lenx caps what pre-tokenizing may add (docs/tokenizers.md#limits)", e->t->path,
                      e->grew >= 0 ? e->hf->split[e->grew].where : "pre_tokenizer", e->cap, HF_GROWTH,
                      HF_GROWTH_SLACK);
    lx_bpe_word(&e->hf->bpe, -1, s, n, e->out, e->work);
    return LX_OK;
}

/* Cut s[0, n) (at base in the normalized stretch) with pre-tokenizer steps
** step.. and encode the pieces. */
static int pieces(struct enc *e, int step, const char *s, size_t n, size_t base)
{
    if (n == 0)
        return LX_OK;
    if (step == e->hf->n_split)
        return to_bpe(e, s, n);
    const struct hf_split *sp = &e->hf->split[step];
    char *copy = NULL;
    if (sp->prefix_space && !e->segment && s[0] != ' ') {
        copy = lx_xmalloc(n + 1);
        copy[0] = ' ';
        memcpy(copy + 1, s, n);
        s = copy;
        n++;
        base = base ? base - 1 : 0;   /* the space stands just before the piece */
        e->grew = step;
    }
    int rc;
    if (!sp->re) {
        rc = pieces(e, step + 1, s, n, base);
    } else {
        struct piece_ctx c = {e, step, s, base, 0, 0};
        rc = lx_regex_each(sp->re, s, n, e->from + base, on_match, &c, e->err);
        if (rc < 0 && !c.inner)   /* this step's pattern failed: say which step */
            lx_err_prefix(e->err, rc, "%s: %s: ", e->t->path, sp->where);
        if (rc == LX_OK && c.done < n)
            rc = pieces(e, step + 1, s + c.done, n - c.done, base + c.done);
    }
    free(copy);
    return rc;
}

/* The one check of a normalizer step's output: at most e->cap bytes of
** normalized text over the whole encoding. */
static int norm_cap(struct enc *e, const struct hf_norm *st, const struct lx_buf *to)
{
    if (e->n_norm + to->len <= e->cap)
        return LX_OK;
    return lx_err(e->err, LX_EINVAL, "%s: %s: the normalized text passes %zu bytes, %d times the text plus %d\n"
                  "  hint: lenx caps what normalizing may add (docs/tokenizers.md#limits)", e->t->path, st->where,
                  e->cap, HF_GROWTH, HF_GROWTH_SLACK);
}

/* Apply the normalizer steps to s[0, n); the result is in one of the two
** buffers, *norm. */
static int normalize(struct enc *e, const char *s, size_t n, struct lx_buf buf[2], const struct lx_buf **norm)
{
    int cur = 0, rc = LX_OK;
    lx_buf_reset(&buf[0]);
    lx_buf_putn(&buf[0], s, n);
    for (int k = 0; k < e->hf->n_norm && rc == LX_OK; k++) {
        const struct hf_norm *st = &e->hf->norm[k];
        const struct lx_buf *in = &buf[cur];
        struct lx_buf *to = &buf[!cur];
        lx_buf_reset(to);
        lx_buf_putn(to, "", 0);
        if (st->kind == HF_UNICODE) {
            lx_unicode_normalize(st->form, in->s, in->len, to);
        } else if (st->kind == HF_PREPEND) {
            if (in->len > 0 && !e->segment)
                lx_buf_putn(to, st->a, st->na);
            lx_buf_putn(to, in->s, in->len);
        } else {
            for (size_t i = 0; i < in->len && (rc = norm_cap(e, st, to)) == LX_OK;) {
                if (st->na > 0 && i + st->na <= in->len && memcmp(in->s + i, st->a, st->na) == 0) {
                    lx_buf_putn(to, st->b, st->nb);
                    i += st->na;
                } else {
                    lx_buf_putn(to, in->s + i++, 1);
                }
            }
        }
        if (rc == LX_OK)
            rc = norm_cap(e, st, to);
        cur = !cur;
    }
    e->n_norm += buf[cur].len;
    *norm = &buf[cur];
    return rc;
}

int lx_hf_tok_encode(const struct lx_tokenizer *t, const char *text, size_t n, unsigned flags, struct lx_ids *out,
              struct lx_error *err)
{
    const struct hf_tok *hf = t->impl;
    for (size_t i = 0; i < n;) {
        int len = lx_utf8_len((const unsigned char *)text + i, n - i);
        if (len == 0)
            return lx_err(err, LX_EINVAL, "the text is not UTF-8 at byte %zu (0x%02x)\n  hint: %s takes UTF-8 text",
                          i, (unsigned char)text[i], t->path);
        i += (size_t)len;
    }
    struct lx_buf buf[2] = {{0}};
    struct lx_bpe_work work = {0};
    struct enc e = {.t = t, .hf = hf, .out = out, .work = &work, .segment = (flags & LX_ENC_SEGMENT) != 0,
                    .cap = HF_GROWTH * n + HF_GROWTH_SLACK, .grew = -1, .err = err};
    size_t from = 0;   /* text[from, i) waits to be encoded */
    int rc = LX_OK;
    for (size_t i = 0; i <= n && rc == LX_OK; i++) {
        const struct hf_added *a = i < n && hf->n_added ? added_at(hf, text, n, i) : NULL;
        if (!a && i < n)
            continue;
        size_t end = i, next = a ? i + a->n : n;
        size_t len;
        if (a && a->lstrip)
            while (end > from && (class_before(text, from, end, &len) & LX_UC_SPACE))
                end -= len;
        if (a && a->rstrip)
            while (next < n && (class_at(text, n, next, &len) & LX_UC_SPACE))
                next += len;
        const struct lx_buf *norm;
        e.from = from;
        if ((rc = normalize(&e, text + from, end - from, buf, &norm)) == LX_OK)
            rc = pieces(&e, 0, norm->s, norm->len, 0);
        if (!a || rc < 0)
            break;
        lx_ids_push(out, a->id);
        from = next;
        i = next - 1;   /* the loop's i++ lands on next */
    }
    lx_bpe_work_free(&work);
    lx_buf_free(&buf[0]);
    lx_buf_free(&buf[1]);
    return rc;
}

/* ---- decoding ---- */

static void put_replaced(const struct hf_tok *hf, const char *s, size_t n, struct lx_buf *out)
{
    if (hf->n_repl == 0) {
        lx_buf_putn(out, s, n);
        return;
    }
    for (size_t i = 0; i < n;) {
        int k = 0;
        while (k < hf->n_repl && !(hf->repl[k].na > 0 && i + hf->repl[k].na <= n &&
                                   memcmp(s + i, hf->repl[k].a, hf->repl[k].na) == 0))
            k++;
        if (k < hf->n_repl) {
            lx_buf_putn(out, hf->repl[k].b, hf->repl[k].nb);
            i += hf->repl[k].na;
        } else {
            lx_buf_putn(out, s + i++, 1);
        }
    }
}

void lx_hf_tok_decode(const struct lx_tokenizer *t, const int32_t *ids, long n, struct lx_buf *out)
{
    const struct hf_tok *hf = t->impl;
    size_t start = out->len;
    for (long i = 0; i < n; i++) {
        const char *s;
        size_t len;
        if (hf->text[ids[i]]) {
            s = hf->text[ids[i]];
            len = strlen(s);
        } else {
            s = lx_bpe_str(&hf->bpe, ids[i], &len);
        }
        int b = hf->dec_bytes ? lx_tok_byte_token(s, len) : -1;
        if (b >= 0) {
            char c = (char)b;
            lx_buf_putn(out, &c, 1);
        } else {
            put_replaced(hf, s, len, out);
        }
    }
    /* Strip works on the fused text. */
    size_t k = 0;
    while ((int)k < hf->strip_start && start + k < out->len && out->s[start + k] == hf->strip_char)
        k++;
    if (k > 0) {
        memmove(out->s + start, out->s + start + k, out->len - start - k + 1);
        out->len -= k;
    }
    for (int j = 0; j < hf->strip_stop && out->len > start && out->s[out->len - 1] == hf->strip_char; j++)
        out->s[--out->len] = '\0';
}

/* ---- one id's text ---- */

void lx_hf_tok_pieces_build(struct hf_tok *hf)
{
    long V = hf->bpe.n_vocab;
    hf->piece = lx_xcalloc((size_t)V + 1, sizeof *hf->piece);
    hf->piece_len = lx_xcalloc((size_t)V + 1, sizeof *hf->piece_len);
    for (int k = 0; k < hf->n_added; k++)
        if (hf->added[k].special)
            hf->piece_len[hf->added[k].id] = (size_t)-1;   /* no text of its own */
    struct lx_buf b = {0};
    for (long id = 0; id < V; id++) {
        if (hf->piece_len[id] == (size_t)-1) {
            hf->piece_len[id] = 0;
            continue;
        }
        const char *s;
        size_t len;
        if (hf->text[id]) {
            s = hf->text[id];
            len = strlen(s);
        } else {
            s = lx_bpe_str(&hf->bpe, (int32_t)id, &len);
        }
        if (!s)
            continue;
        lx_buf_reset(&b);
        lx_buf_putn(&b, "", 0);
        int byte = hf->dec_bytes ? lx_tok_byte_token(s, len) : -1;
        if (byte >= 0)
            lx_buf_putn(&b, lx_tok_byte_table + byte, 1);
        else
            put_replaced(hf, s, len, &b);
        hf->piece[id] = lx_xmalloc(b.len + 1);
        memcpy(hf->piece[id], b.s, b.len + 1);
        hf->piece_len[id] = b.len;
    }
    lx_buf_free(&b);
}

const char *lx_hf_tok_piece(const struct lx_tokenizer *t, int32_t id, size_t *len)
{
    const struct hf_tok *hf = t->impl;
    *len = hf->piece_len[id];
    return hf->piece[id];
}
