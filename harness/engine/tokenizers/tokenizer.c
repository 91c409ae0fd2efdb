/*
** harness/engine/tokenizers/tokenizer.c - the tokenizer interface (tokenizer.h): opening a
** file as the right kind, BOS/EOS, id checks, GGUF keys (docs/tokenizers.md),
** and the helpers the tasks use: segments
** encoded as given, text read back one id at a time (docs/tasks.md#tokenizers).
*/
#include "harness/engine/tokenizers/tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/core/gguf.h"
#include "harness/core/hash.h"
#include "harness/core/hashcache.h"
#include "harness/engine/tokenizers/kinds.h"

/* A tokenizer file larger than this is not one (Qwen3's is 11 MB). */
#define LX_TOK_MAX_BYTES (256L << 20)

/* ---- opening a file ---- */

char *lx_tokenizer_in_dir(const char *dir)
{
    struct stat sb;
    struct lx_buf p = {0};
    for (int i = 0; lx_tok_kinds[i]; i++) {
        lx_buf_reset(&p);
        lx_buf_printf(&p, "%s/%s", dir, lx_tok_kinds[i]->file);
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

/* The kind's sidecar file beside `file` (a tokenizer.json's
** tokenizer_config.json: its BOS/EOS when the template gives none) into dir,
** when there is one. */
static int copy_sidecar(const char *file, const char *sidecar, const char *dir, struct lx_error *err)
{
    const char *slash = strrchr(file, '/');
    struct lx_buf p = {0};
    lx_buf_printf(&p, "%.*s%s", slash ? (int)(slash - file + 1) : 0, file, sidecar);
    unsigned char *b = NULL;
    long n = 0;
    struct lx_error sub;
    int rc = LX_OK;
    if (lx_read_file(lx_buf_str(&p), &b, &n, LX_TOK_MAX_BYTES, &sub) == LX_OK) {
        lx_buf_reset(&p);
        lx_buf_printf(&p, "%s/%s", dir, sidecar);
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
        lx_sha256_hex_bytes(b, (size_t)n, hash);
        if (strcmp(hash, sha256) != 0)
            rc = lx_err(err, LX_EIO, "%s: the tokenizer changed since it was read (sha256 %.16s..., now %.16s...)\n"
                        "  hint: run again with the file left as it is", file, sha256, hash);
    }
    if (rc == LX_OK && mkdir(dir, 0777) != 0 && errno != EEXIST)
        rc = lx_err(err, LX_EIO, "%s: cannot create the directory: %s", dir, strerror(errno));
    const struct lx_tok_kind *kind = rc == LX_OK ? lx_tok_kind_of(b, n) : NULL;
    if (rc == LX_OK && !kind)
        rc = lx_err(err, LX_EINVAL, "%s: not a tokenizer file of any kind lenx reads", file);
    struct lx_buf p = {0};
    if (rc == LX_OK) {
        lx_buf_printf(&p, "%s/%s", dir, kind->file);
        rc = lx_write_file(lx_buf_str(&p), b, (size_t)n, err);
    }
    if (rc == LX_OK && kind->sidecar)
        rc = copy_sidecar(file, kind->sidecar, dir, err);
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
    const unsigned char *mapped = NULL;
    size_t n_mapped = 0;
    long n = 0;
    int gguf = rc == LX_OK && lx_gguf_file(file);
    if (rc == LX_OK && gguf) {  /* a model file (GBs): mapped, not read; its tokenizer is a small part of it */
        rc = lx_map_file(file, &mapped, &n_mapped, err);
        bytes = (unsigned char *)mapped, n = (long)n_mapped;
    } else if (rc == LX_OK) {
        rc = lx_read_file(file, &bytes, &n, LX_TOK_MAX_BYTES, err);
    }
    if (rc < 0)
        return rc;
    struct lx_tokenizer *t = lx_xcalloc(1, sizeof *t);
    t->path = lx_xstrdup(file);
    t->bos = t->eos = t->pad = t->mask = -1;
    const struct lx_tok_kind *kind = lx_tok_kind_of(bytes, n);
    rc = kind ? kind->open(t, bytes, n, err)
              : lx_err(err, LX_EINVAL, "%s: not a tokenizer file of any kind lenx reads\n  hint: a tokenizer is a "
                       "tokenizer.json or a llama2.c tokenizer.bin", file);
    if (rc == LX_OK && gguf && lx_hashcache_file_sha256(file, n_mapped, t->hash) < 0)
        rc = lx_err(err, LX_EIO, "%s: the file changed while its tokenizer was read", file);
    else if (rc == LX_OK && !gguf)
        lx_sha256_hex_bytes(bytes, (size_t)n, t->hash);
    if (rc == LX_OK) {
        size_t len;
        for (int32_t id = 0; id < t->n_vocab; id++)
            if (t->ops->piece(t, id, &len) && (long)len > t->max_piece)
                t->max_piece = (long)len;
        *out = t;
    } else {
        lx_tokenizer_free(t);
    }
    if (gguf)
        lx_unmap_file(mapped, n_mapped);
    else
        free(bytes);
    return rc;
}

void lx_tokenizer_free(struct lx_tokenizer *t)
{
    if (!t || t == &lx_byte_tokenizer)
        return;
    if (t->ops && t->ops->free)
        t->ops->free(t->impl);
    free(t->path);
    free(t);
}

/* ---- GGUF ---- */

int lx_tokenizer_to_gguf(const struct lx_tokenizer *t, struct lx_gguf_out *o, struct lx_error *err)
{
    t = lx_tok_or_byte(t);
    if (!t->ops->to_gguf)
        return lx_err(err, LX_EINVAL, "%s: a %s tokenizer cannot be written into a GGUF file", t->path, t->ops->kind);
    return t->ops->to_gguf(t, o, err);
}

int lx_tokenizer_write_gguf(const struct lx_tokenizer *t, const char *path, struct lx_error *err)
{
    struct lx_gguf_out o;
    lx_gguf_out_init(&o);
    lx_gguf_put_str(&o, "general.architecture", "llama");
    lx_gguf_put_str(&o, "general.name", "lenx vocabulary");
    static const char *const keys[] = {"block_count", "context_length", "embedding_length", "feed_forward_length",
                                       "attention.head_count"};
    for (int i = 0; i < 5; i++) {
        char key[64];
        snprintf(key, sizeof key, "llama.%s", keys[i]);
        lx_gguf_put_u32(&o, key, 1);
    }
    lx_gguf_put_f32(&o, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    int rc = lx_tokenizer_to_gguf(t, &o, err);
    if (rc == LX_OK)
        rc = lx_gguf_out_write(&o, path, err);
    lx_gguf_out_free(&o);
    return rc;
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

long lx_tok_prompt(const struct lx_tokenizer *t, const char *text, size_t n, int **ids, struct lx_error *err)
{
    struct lx_ids v = {0};
    lx_ids_push(&v, lx_tok_begin(t));
    int rc = n ? lx_tokenizer_encode(t, text, n, 0, &v, err) : LX_OK;
    long k = v.n;
    *ids = lx_xmalloc(sizeof(int) * (size_t)k);
    for (long i = 0; i < k; i++)
        (*ids)[i] = v.id[i];
    lx_ids_free(&v);
    if (rc < 0) {
        free(*ids);
        *ids = NULL;
        return rc;
    }
    return k;
}
