/*
** harness/engine/tokenizer.c - the tokenizer interface (tokenizer.h): opening a
** file as the right kind, BOS/EOS, id checks, and the byte tokenizer of lenx's
** own models (docs/tokenizers.md).
*/
#include "harness/engine/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/core/hash.h"
#include "harness/engine/corpus.h"

/* A tokenizer file larger than this is not one (Qwen3's is 11 MB). */
#define LX_TOK_MAX_BYTES (256L << 20)

void lx_ids_push(struct lx_ids *v, int32_t id)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 256;
        v->id = lx_xrealloc(v->id, (size_t)v->cap * sizeof *v->id);
    }
    v->id[v->n++] = id;
}

void lx_ids_free(struct lx_ids *v)
{
    free(v->id);
    memset(v, 0, sizeof *v);
}

void lx_buf_putn(struct lx_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = 2 * (b->len + n + 1);
        b->s = lx_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

int lx_utf8_len(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned c = s[0];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || (size_t)len > n)
        return 0;
    for (int i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    /* overlong forms, surrogates, past U+10FFFF */
    if ((len == 2 && c < 0xc2) || (len == 3 && c == 0xe0 && s[1] < 0xa0) || (len == 3 && c == 0xed && s[1] >= 0xa0) ||
        (len == 4 && c == 0xf0 && s[1] < 0x90) || (len == 4 && (c > 0xf4 || (c == 0xf4 && s[1] >= 0x90))))
        return 0;
    return len;
}

/* ---- bytes: lenx's own tokenizer (ids in corpus.h) ---- */

static int bytes_encode(const struct lx_tokenizer *t, const char *text, size_t n, struct lx_ids *out,
                        struct lx_error *err)
{
    for (size_t i = 0; i < n; i++)
        lx_ids_push(out, (unsigned char)text[i]);
    return LX_OK;
}

/* Bytes come back as they were; the specials have no text. */
static void bytes_decode(const struct lx_tokenizer *t, const int32_t *ids, long n, struct lx_buf *out)
{
    for (long i = 0; i < n; i++)
        if (ids[i] < 256) {
            char c = (char)ids[i];
            lx_buf_putn(out, &c, 1);
        }
}

static const struct lx_tok_ops bytes_ops = {
    .kind = "bytes",
    .encode = bytes_encode,
    .decode = bytes_decode,
    .free = NULL,
};

struct lx_tokenizer *lx_tokenizer_bytes(void)
{
    struct lx_tokenizer *t = lx_xcalloc(1, sizeof *t);
    t->ops = &bytes_ops;
    t->path = lx_xstrdup("");
    t->n_vocab = LX_VOCAB;
    t->bos = LX_TOK_BOS;
    t->eos = LX_TOK_EOS;
    lx_sha256_hex("lenx bytes tokenizer: ids 0-255 are bytes; 256 BOS, 257 EOS, 258 PAD, 259 MASK", t->hash);
    return t;
}

/* ---- opening a file ---- */

/* PATH, or PATH/tokenizer.json when PATH is a directory, into out (n bytes). */
static int resolve_path(const char *path, char *out, size_t n, struct lx_error *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return lx_err(err, LX_EIO, "%s: no such file or directory\n  hint: --tokenizer takes a tokenizer.json, "
                      "a llama2.c tokenizer.bin or a directory holding tokenizer.json", path);
    if ((size_t)snprintf(out, n, S_ISDIR(sb.st_mode) ? "%s/tokenizer.json" : "%s", path) >= n)
        return lx_err(err, LX_EINVAL, "%s: path too long", path);
    if (S_ISDIR(sb.st_mode) && stat(out, &sb) != 0)
        return lx_err(err, LX_EIO, "%s: a directory without tokenizer.json\n  hint: name the tokenizer file", path);
    return LX_OK;
}

int lx_tokenizer_open(struct lx_tokenizer **out, const char *path, struct lx_error *err)
{
    *out = NULL;
    char file[4096];
    int rc = resolve_path(path, file, sizeof file, err);
    unsigned char *bytes = NULL;
    long n = 0;
    if (rc == LX_OK)
        rc = lx_read_file(file, &bytes, &n, LX_TOK_MAX_BYTES, err);
    if (rc < 0)
        return rc;
    struct lx_tokenizer *t = lx_xcalloc(1, sizeof *t);
    t->path = lx_xstrdup(file);
    t->bos = t->eos = -1;
    long i = 0;
    while (i < n && (bytes[i] == ' ' || bytes[i] == '\n' || bytes[i] == '\r' || bytes[i] == '\t'))
        i++;
    /* JSON starts with '{'; a llama2.c file starts with a small int32. */
    rc = i < n && bytes[i] == '{' ? lx_tok_hf_open(t, bytes, n, err) : lx_tok_llama2c_open(t, bytes, n, err);
    if (rc == LX_OK) {
        struct lx_sha256 s;
        lx_sha256_init(&s);
        lx_sha256_update(&s, bytes, (size_t)n);
        lx_sha256_final_hex(&s, t->hash);
        *out = t;
    } else {
        lx_tokenizer_free(t);
    }
    free(bytes);
    return rc;
}

void lx_tokenizer_free(struct lx_tokenizer *t)
{
    if (!t)
        return;
    if (t->ops && t->ops->free)
        t->ops->free(t->impl);
    free(t->path);
    free(t);
}

/* ---- encode, decode ---- */

int lx_tokenizer_encode(const struct lx_tokenizer *t, const char *text, size_t n, unsigned flags,
                        struct lx_ids *out, struct lx_error *err)
{
    int bos = (flags & LX_ENC_BOS) || ((flags & LX_ENC_SPECIALS) && t->add_bos);
    int eos = (flags & LX_ENC_EOS) || ((flags & LX_ENC_SPECIALS) && t->add_eos);
    if (bos && t->bos >= 0)
        lx_ids_push(out, t->bos);
    int rc = t->ops->encode(t, text, n, out, err);
    if (rc == LX_OK && eos && t->eos >= 0)
        lx_ids_push(out, t->eos);
    return rc;
}

int lx_tokenizer_decode(const struct lx_tokenizer *t, const int32_t *ids, long n, struct lx_buf *out,
                        struct lx_error *err)
{
    for (long i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= t->n_vocab)
            return lx_err(err, LX_EINVAL, "id %ld (at index %ld) is outside %s's vocabulary of %ld",
                          (long)ids[i], i, t->path[0] ? t->path : "the byte tokenizer", t->n_vocab);
    t->ops->decode(t, ids, n, out);
    return LX_OK;
}
