/*
** harness/engine/tokenizer.c - the byte tokenizer and llama2.c's SentencePiece
** BPE (see tokenizer.h).
**
** SentencePiece BPE as llama2.c's run.c encodes (Kudo & Richardson 2018, arXiv
** 1808.06226): every UTF-8 character becomes its piece, or its bytes' fallback
** pieces "<0xNN>" when it has none; then the adjacent pair whose concatenation
** is a piece with the highest score merges, until no pair does. Pieces never
** hold a space after a non-space, so the text is encoded a word at a time (a
** word = a run of spaces, then non-spaces, a newline ending it): the same ids
** as one pass over the whole text, in time linear in its length.
*/
#include "harness/engine/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/hash.h"
#include "harness/engine/corpus.h"

/* ---- shared ----------------------------------------------------------------- */

static void push(int **out, long *cap, long *pos, int id)
{
    if (*pos >= *cap) {
        *cap = *cap < 64 ? 64 : 2 * *cap;
        *out = lx_xrealloc(*out, sizeof **out * (size_t)*cap);
    }
    (*out)[(*pos)++] = id;
}

long lx_tok_encode(const struct lx_tokenizer *t, const char *s, long n, int **ids)
{
    long cap = 0, pos = 0;
    *ids = NULL;
    t->encode(t, s, n, ids, &cap, &pos);
    return pos;
}

long lx_tok_decode_cap(const struct lx_tokenizer *t, long n)
{
    return n * t->max_piece + 1;
}

long lx_tok_decode(const struct lx_tokenizer *t, const int *ids, long n, char *out, int *stop)
{
    long k = 0, len;
    *stop = -1;
    for (long i = 0; i < n; i++) {
        const char *p = ids[i] >= 0 && ids[i] < t->n_vocab ? t->piece(t, ids[i], &len) : NULL;
        if (!p) {
            *stop = ids[i];
            break;
        }
        memcpy(out + k, p, (size_t)len);
        k += len;
    }
    out[k] = '\0';
    return k;
}

long lx_tok_bytes(const struct lx_tokenizer *t, int id)
{
    long len = 0;
    t->piece(t, id, &len);
    return len;
}

const char *lx_tok_special_name(const struct lx_tokenizer *t, int id)
{
    if (id < 0)
        return NULL;
    return id == t->bos ? "bos" : id == t->eos ? "eos" : id == t->pad ? "pad" : id == t->mask ? "mask" : "unknown";
}

/* ---- bytes ------------------------------------------------------------------ */

static void byte_encode(const struct lx_tokenizer *t, const char *s, long n, int **out, long *cap, long *pos)
{
    (void)t;
    for (long i = 0; i < n; i++)
        push(out, cap, pos, (unsigned char)s[i]);
}

/* Byte i is BYTES[i]: a constant table, safe from any thread. */
#define B4(i) (char)(i), (char)((i) + 1), (char)((i) + 2), (char)((i) + 3)
#define B16(i) B4(i), B4((i) + 4), B4((i) + 8), B4((i) + 12)
#define B64(i) B16(i), B16((i) + 16), B16((i) + 32), B16((i) + 48)
static const char BYTES[256] = {B64(0), B64(64), B64(128), B64(192)};

static const char *byte_piece(const struct lx_tokenizer *t, int id, long *len)
{
    (void)t;
    *len = id >= 0 && id < 256;
    return *len ? BYTES + id : NULL;
}

const struct lx_tokenizer lx_tokenizer_byte = {
    .name = "byte", .hash = "byte", .n_vocab = LX_VOCAB, .bos = LX_TOK_BOS, .eos = LX_TOK_EOS,
    .pad = LX_TOK_PAD, .mask = LX_TOK_MASK, .is_byte = 1, .max_piece = 1,
    .encode = byte_encode, .piece = byte_piece,
};

/* ---- SentencePiece (llama2.c tokenizer.bin) ----------------------------------- */

struct sp {
    char **piece;       /* (V,) NUL-terminated pieces, "<0xNN>" resolved to their byte */
    long *len;          /* (V,) bytes of each */
    float *score;       /* (V,) merge priority */
    int *sorted;        /* (V,) ids by piece as written in the file, for lookups */
    char **raw;         /* (V,) the pieces as written */
    int byte_id[256];   /* fallback id of each byte, −1 when absent */
    long n;             /* pieces read so far */
};

static const struct sp *sp_of(const struct lx_tokenizer *t)
{
    return t->impl;
}

static const char *sp_piece(const struct lx_tokenizer *t, int id, long *len)
{
    const struct sp *sp = sp_of(t);
    if (id == t->bos || id == t->eos || id == 0) {     /* <unk>, <s>, </s> */
        *len = 0;
        return NULL;
    }
    *len = sp->len[id];
    return sp->piece[id];
}

static const struct sp *sort_ctx;  /* qsort's comparator has no context: set by the loader, which runs once
                                    ** per tokenizer while the sweep is parsed, before any thread */
static int by_raw(const void *a, const void *b)
{
    return strcmp(sort_ctx->raw[*(const int *)a], sort_ctx->raw[*(const int *)b]);
}

/* The id of the piece s[0, n), −1 when there is none. */
static int sp_lookup(const struct sp *sp, long V, const char *s, long n)
{
    long lo = 0, hi = V - 1;
    while (lo <= hi) {
        long mid = (lo + hi) / 2;
        const char *p = sp->raw[sp->sorted[mid]];
        int c = strncmp(p, s, (size_t)n);
        if (c == 0 && p[n] != '\0')
            c = 1;
        if (c == 0)
            return sp->sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* One word: characters (or byte fallbacks), then the best-scoring merges. */
static void sp_word(const struct lx_tokenizer *t, const char *s, long n, int **out, long *cap, long *pos)
{
    const struct sp *sp = sp_of(t);
    long start = *pos;
    for (long i = 0; i < n;) {
        long k = 1;
        while (i + k < n && k < 4 && ((unsigned char)s[i + k] & 0xC0) == 0x80)
            k++;
        int id = sp_lookup(sp, t->n_vocab, s + i, k);
        for (long j = 0; id < 0 && j < k; j++)
            push(out, cap, pos, sp->byte_id[(unsigned char)s[i + j]] >= 0 ? sp->byte_id[(unsigned char)s[i + j]] : 0);
        if (id >= 0)
            push(out, cap, pos, id);
        i += k;
    }
    char buf[512];
    for (;;) {
        int *w = *out + start, best_id = -1;
        long m = *pos - start, best = -1;
        float best_score = -1e30f;
        for (long i = 0; i + 1 < m; i++) {
            const char *a = sp->raw[w[i]], *b = sp->raw[w[i + 1]];
            int len = snprintf(buf, sizeof buf, "%s%s", a, b);
            int id = len < (int)sizeof buf ? sp_lookup(sp, t->n_vocab, buf, len) : -1;
            if (id >= 0 && sp->score[id] > best_score) {
                best_score = sp->score[id];
                best_id = id;
                best = i;
            }
        }
        if (best < 0)
            break;
        w[best] = best_id;
        memmove(w + best + 1, w + best + 2, sizeof *w * (size_t)(m - best - 2));
        (*pos)--;
    }
}

static void sp_encode(const struct lx_tokenizer *t, const char *s, long n, int **out, long *cap, long *pos)
{
    for (long i = 0; i < n;) {
        long j = i;
        while (j < n && s[j] == ' ')
            j++;
        while (j < n && s[j] != ' ' && s[j] != '\n')
            j++;
        if (j < n && s[j] == '\n' && j == i)
            j++;
        sp_word(t, s + i, j - i, out, cap, pos);
        i = j;
    }
}

static void sp_release(struct sp *sp)
{
    for (long i = 0; sp && i < sp->n; i++) {
        free(sp->piece[i]);
        free(sp->raw[i]);
    }
    if (sp) {
        free(sp->piece);
        free(sp->raw);
        free(sp->len);
        free(sp->score);
        free(sp->sorted);
    }
    free(sp);
}

/* Parse the file's records into sp; returns the count or a negative code. */
static long sp_parse(struct sp *sp, const unsigned char *b, long n, const char *path, long *max_piece,
                     struct lx_error *err)
{
    long off = 4, V = 0, cap = 0;
    while (off < n) {
        float score;
        int len;
        if (off + 8 > n)
            return lx_err(err, LX_EIO, "%s: truncated record at byte %ld\n  hint: is it a llama2.c tokenizer.bin?",
                          path, off);
        memcpy(&score, b + off, 4);
        memcpy(&len, b + off + 4, 4);
        if (len < 0 || len > 256 || off + 8 + len > n)
            return lx_err(err, LX_EIO, "%s: piece %ld at byte %ld has length %d, past the file or over 256\n"
                          "  hint: is it a llama2.c tokenizer.bin?", path, V, off, len);
        if (V == cap) {
            cap = cap ? 2 * cap : 1024;
            sp->raw = lx_xrealloc(sp->raw, sizeof *sp->raw * (size_t)cap);
            sp->piece = lx_xrealloc(sp->piece, sizeof *sp->piece * (size_t)cap);
            sp->len = lx_xrealloc(sp->len, sizeof *sp->len * (size_t)cap);
            sp->score = lx_xrealloc(sp->score, sizeof *sp->score * (size_t)cap);
        }
        sp->raw[V] = lx_xcalloc((size_t)len + 1, 1);
        memcpy(sp->raw[V], b + off + 8, (size_t)len);
        sp->piece[V] = lx_xstrdup(sp->raw[V]);
        sp->len[V] = len;
        unsigned x;
        char tail;
        if (len == 6 && sscanf(sp->raw[V], "<0x%2X%c", &x, &tail) == 2 && tail == '>') {
            sp->piece[V][0] = (char)x;
            sp->len[V] = 1;
            sp->byte_id[x] = (int)V;
        }
        sp->score[V] = score;
        *max_piece = sp->len[V] > *max_piece ? sp->len[V] : *max_piece;
        off += 8 + len;
        sp->n = ++V;
    }
    return V;
}

int lx_tokenizer_load(struct lx_tokenizer **out, const char *path, struct lx_error *err)
{
    unsigned char *b;
    long n;
    struct lx_error sub;
    *out = NULL;
    if (lx_read_file(path, &b, &n, 1L << 30, &sub) < 0)
        return lx_err(err, LX_EIO, "tokenizer: %s", sub.msg);
    struct sp *sp = lx_xcalloc(1, sizeof *sp);
    memset(sp->byte_id, -1, sizeof sp->byte_id);
    long max_piece = 1, V = n >= 4 ? sp_parse(sp, b, n, path, &max_piece, err)
                                  : lx_err(err, LX_EIO, "%s: %ld bytes, too short for a llama2.c tokenizer.bin",
                                           path, n);
    if (V >= 0 && V < 3)
        V = lx_err(err, LX_EIO, "%s: %ld pieces; a SentencePiece vocabulary has <unk>, <s>, </s> first", path, V);
    char hash[65];
    struct lx_sha256 h;
    lx_sha256_init(&h);
    lx_sha256_update(&h, b, (size_t)n);
    lx_sha256_final_hex(&h, hash);
    free(b);
    if (V < 0) {
        sp_release(sp);
        return (int)V;
    }
    sp->sorted = lx_xmalloc(sizeof *sp->sorted * (size_t)V);
    for (long i = 0; i < V; i++)
        sp->sorted[i] = (int)i;
    sort_ctx = sp;
    qsort(sp->sorted, (size_t)V, sizeof *sp->sorted, by_raw);
    struct lx_tokenizer *t = lx_xmalloc(sizeof *t);
    *t = (struct lx_tokenizer){.name = "sentencepiece", .path = lx_xstrdup(path), .n_vocab = V, .bos = 1, .eos = 2,
                               .pad = -1, .mask = -1, .max_piece = max_piece, .encode = sp_encode,
                               .piece = sp_piece, .impl = sp};
    memcpy(t->hash, hash, sizeof hash);
    *out = t;
    return LX_OK;
}

void lx_tokenizer_free(struct lx_tokenizer *t)
{
    if (!t || t == &lx_tokenizer_byte)
        return;
    sp_release(t->impl);
    free(t->path);
    free(t);
}
