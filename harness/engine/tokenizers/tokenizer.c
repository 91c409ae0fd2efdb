/*
** harness/engine/tokenizer.c - the tokenizer interface (tokenizer.h): opening a
** file as the right kind, BOS/EOS, id checks, the byte tokenizer of lenx's
** own models (docs/tokenizers.md), and the helpers the tasks use: segments
** encoded as given, text read back one id at a time (docs/tasks.md#tokenizers).
*/
#include "harness/engine/tokenizers/tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/core/hash.h"
#include "harness/engine/data/corpus.h"

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

int lx_tok_byte_token(const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
        return -1;
    const char *h = strchr(hex, s[3]), *l = strchr(hex, s[4]);
    return h && l && s[3] && s[4] ? (int)((h - hex) * 16 + (l - hex)) : -1;
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

static int bytes_encode(const struct lx_tokenizer *t, const char *text, size_t n, unsigned flags,
                        struct lx_ids *out, struct lx_error *err)
{
    (void)t, (void)flags, (void)err;
    for (size_t i = 0; i < n; i++)
        lx_ids_push(out, (unsigned char)text[i]);
    return LX_OK;
}

/* Bytes come back as they were; the specials have no text. */
static void bytes_decode(const struct lx_tokenizer *t, const int32_t *ids, long n, struct lx_buf *out)
{
    (void)t;
    for (long i = 0; i < n; i++)
        if (ids[i] < 256)
            lx_buf_putn(out, lx_tok_byte_table + ids[i], 1);
}

/* Byte i is lx_tok_byte_table[i]: a constant table, safe from any thread. */
#define B4(i) (char)(i), (char)((i) + 1), (char)((i) + 2), (char)((i) + 3)
#define B16(i) B4(i), B4((i) + 4), B4((i) + 8), B4((i) + 12)
#define B64(i) B16(i), B16((i) + 16), B16((i) + 32), B16((i) + 48)
const char lx_tok_byte_table[256] = {B64(0), B64(64), B64(128), B64(192)};

static const char *bytes_piece(const struct lx_tokenizer *t, int32_t id, size_t *len)
{
    (void)t;
    *len = id >= 0 && id < 256;
    return *len ? lx_tok_byte_table + id : NULL;
}

static const struct lx_tok_ops bytes_ops = {
    .kind = "bytes",
    .encode = bytes_encode,
    .decode = bytes_decode,
    .piece = bytes_piece,
    .free = NULL,
};

/* The hash is the SHA-256 of "lenx bytes tokenizer: ids 0-255 are bytes; 256
** BOS, 257 EOS, 258 PAD, 259 MASK" (a test recomputes it). */
const struct lx_tokenizer lx_tokenizer_byte = {
    .ops = &bytes_ops, .path = "", .n_vocab = LX_VOCAB, .bos = LX_TOK_BOS, .eos = LX_TOK_EOS,
    .pad = LX_TOK_PAD, .mask = LX_TOK_MASK, .is_byte = 1, .max_piece = 1,
    .hash = "0f5bf15fc77364522e97f0ed04a65192dbb86494f80a765412257758b352e2b7",
};

struct lx_tokenizer *lx_tokenizer_bytes(void)
{
    struct lx_tokenizer *t = lx_xmalloc(sizeof *t);
    *t = lx_tokenizer_byte;
    t->path = lx_xstrdup("");
    return t;
}

/* ---- opening a file ---- */

char *lx_tokenizer_in_dir(const char *dir)
{
    static const char *const names[] = {"tokenizer.json", "tokenizer.bin"};
    struct stat sb;
    struct lx_buf p = {0};
    for (int i = 0; i < 2; i++) {
        lx_buf_reset(&p);
        lx_buf_printf(&p, "%s/%s", dir, names[i]);
        if (stat(lx_buf_str(&p), &sb) == 0 && S_ISREG(sb.st_mode)) {
            char *out = lx_xstrdup(lx_buf_str(&p));
            lx_buf_free(&p);
            return out;
        }
    }
    lx_buf_free(&p);
    return NULL;
}

/* PATH, or the tokenizer file inside PATH when it is a directory, into out (n bytes). */
static int resolve_path(const char *path, char *out, size_t n, struct lx_error *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return lx_err(err, LX_EIO, "%s: no such file or directory\n  hint: a tokenizer is a tokenizer.json, "
                      "a llama2.c tokenizer.bin or a directory holding tokenizer.json", path);
    char *in = S_ISDIR(sb.st_mode) ? lx_tokenizer_in_dir(path) : NULL;
    if (S_ISDIR(sb.st_mode) && !in)
        return lx_err(err, LX_EIO, "%s: a directory without tokenizer.json\n  hint: name the tokenizer file", path);
    int too_long = (size_t)snprintf(out, n, "%s", in ? in : path) >= n;
    free(in);
    return too_long ? lx_err(err, LX_EINVAL, "%s: path too long", path) : LX_OK;
}

/* A JSON file starts with '{' (after white space); a llama2.c file with a small int32. */
static int is_json(const unsigned char *bytes, long n)
{
    long i = 0;
    while (i < n && (bytes[i] == ' ' || bytes[i] == '\n' || bytes[i] == '\r' || bytes[i] == '\t'))
        i++;
    return i < n && bytes[i] == '{';
}

/* tokenizer_config.json beside a tokenizer.json (its BOS/EOS when the
** template gives none) into dir, when there is one. */
static int copy_config(const char *file, const char *dir, struct lx_error *err)
{
    const char *slash = strrchr(file, '/');
    struct lx_buf p = {0};
    lx_buf_printf(&p, "%.*stokenizer_config.json", slash ? (int)(slash - file + 1) : 0, file);
    unsigned char *b = NULL;
    long n = 0;
    struct lx_error sub;
    int rc = LX_OK;
    if (lx_read_file(lx_buf_str(&p), &b, &n, LX_TOK_MAX_BYTES, &sub) == LX_OK) {
        lx_buf_reset(&p);
        lx_buf_printf(&p, "%s/tokenizer_config.json", dir);
        rc = lx_write_file(lx_buf_str(&p), b, (size_t)n, err);
    }
    free(b);
    lx_buf_free(&p);
    return rc;
}

int lx_tokenizer_copy(const char *file, const char *sha256, const char *dir, struct lx_error *err)
{
    unsigned char *b = NULL;
    long n = 0;
    int rc = lx_read_file(file, &b, &n, LX_TOK_MAX_BYTES, err);
    char hash[65];
    if (rc == LX_OK) {
        struct lx_sha256 s;
        lx_sha256_init(&s);
        lx_sha256_update(&s, b, (size_t)n);
        lx_sha256_final_hex(&s, hash);
        if (strcmp(hash, sha256) != 0)
            rc = lx_err(err, LX_EIO, "%s: the tokenizer changed since it was read (sha256 %.16s..., now %.16s...)\n"
                        "  hint: run again with the file left as it is", file, sha256, hash);
    }
    if (rc == LX_OK && mkdir(dir, 0777) != 0 && errno != EEXIST)
        rc = lx_err(err, LX_EIO, "%s: cannot create the directory: %s", dir, strerror(errno));
    int json = rc == LX_OK && is_json(b, n);
    struct lx_buf p = {0};
    lx_buf_printf(&p, "%s/%s", dir, json ? "tokenizer.json" : "tokenizer.bin");
    if (rc == LX_OK)
        rc = lx_write_file(lx_buf_str(&p), b, (size_t)n, err);
    if (rc == LX_OK && json)
        rc = copy_config(file, dir, err);
    lx_buf_free(&p);
    free(b);
    return rc;
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
    t->bos = t->eos = t->pad = t->mask = -1;
    rc = is_json(bytes, n) ? lx_tok_hf_open(t, bytes, n, err) : lx_tok_llama2c_open(t, bytes, n, err);
    if (rc == LX_OK) {
        struct lx_sha256 s;
        lx_sha256_init(&s);
        lx_sha256_update(&s, bytes, (size_t)n);
        lx_sha256_final_hex(&s, t->hash);
        size_t len;
        for (int32_t id = 0; id < t->n_vocab; id++)
            if (t->ops->piece(t, id, &len) && (long)len > t->max_piece)
                t->max_piece = (long)len;
        *out = t;
    } else {
        lx_tokenizer_free(t);
    }
    free(bytes);
    return rc;
}

void lx_tokenizer_free(struct lx_tokenizer *t)
{
    if (!t || t == &lx_tokenizer_byte)
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
    int rc = t->ops->encode(t, text, n, flags, out, err);
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

/* ---- what the tasks use ---- */

long lx_tok_encode(const struct lx_tokenizer *t, const char *s, long n, int32_t **ids, struct lx_error *err)
{
    struct lx_ids v = {0};
    int rc = lx_tokenizer_encode(t, s, (size_t)n, LX_ENC_SEGMENT, &v, err);
    if (rc < 0) {
        lx_ids_free(&v);
        *ids = NULL;
        return rc;
    }
    *ids = v.id;
    return v.n;
}

int lx_tok_check_begin(const struct lx_tokenizer *t, struct lx_error *err)
{
    if (lx_tok_begin(t) >= 0)
        return LX_OK;
    return lx_err(err, LX_EINVAL, "%s has neither BOS nor EOS, and every window a model reads begins with one\n"
                  "  hint: put the tokenizer_config.json naming its bos_token or eos_token beside it",
                  t->path[0] ? t->path : "the tokenizer");
}

const char *lx_tok_piece(const struct lx_tokenizer *t, int32_t id, size_t *len)
{
    *len = 0;
    const char *p = id >= 0 && id < t->n_vocab ? t->ops->piece(t, id, len) : NULL;
    if (!p)
        *len = 0;
    return p;
}

long lx_tok_decode_cap(const struct lx_tokenizer *t, long n)
{
    return n * t->max_piece + 1;
}

long lx_tok_decode(const struct lx_tokenizer *t, const int32_t *ids, long n, char *out, int *stop)
{
    long k = 0;
    *stop = -1;
    for (long i = 0; i < n; i++) {
        size_t len;
        const char *p = lx_tok_piece(t, ids[i], &len);
        if (!p) {
            *stop = ids[i];
            break;
        }
        memcpy(out + k, p, len);
        k += (long)len;
    }
    out[k] = '\0';
    return k;
}

long lx_tok_bytes(const struct lx_tokenizer *t, int32_t id)
{
    size_t len;
    lx_tok_piece(t, id, &len);
    return (long)len;
}

const char *lx_tok_special_name(const struct lx_tokenizer *t, int id)
{
    if (id < 0)
        return NULL;
    return id == t->bos ? "bos" : id == t->eos ? "eos" : id == t->pad ? "pad" : id == t->mask ? "mask" : "unknown";
}
