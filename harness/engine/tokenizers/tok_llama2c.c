/*
** harness/engine/tokenizers/tok_llama2c.c - llama2.c's tokenizer.bin: SentencePiece-style
** BPE with byte fallback, merged by score (docs/tokenizers.md#llama2c).
**
** The file (written by llama2.c's tokenizer.py) is
**   int32 max_token_length, then per token: float32 score, int32 length, bytes
** little-endian, tokens in id order to the end of the file. Ids 0, 1, 2 are
** <unk>, BOS and EOS; 3 .. 258 are the byte tokens <0x00> .. <0xFF>.
**
** Encoding follows llama2.c's run.c: a non-empty text gets a leading space
** (the "dummy prefix"), each UTF-8 character (a byte and up to three
** continuation bytes) becomes its token or, when the vocabulary lacks it, one
** byte token per byte (id = byte + 3); then the adjacent pair whose
** concatenation is a token of the highest score merges, leftmost first, until
** none does. Decoding drops BOS/EOS, turns byte tokens back into bytes and
** removes the dummy prefix (the " " token or, in a vocabulary without one,
** the byte token <0x20>), so decode(encode(s)) == s for any bytes s: text
** is looked up and merged among the pieces from id 259 on only, never into
** <unk>, BOS, EOS or a byte token (whose pieces a vocabulary may spell). A
** segment (LX_ENC_SEGMENT) gets no dummy prefix, and its pieces (the piece
** op) keep every space, so segments encoded apart concatenate exactly.
*/
#include <stdlib.h>
#include <string.h>

#include "harness/engine/tokenizers/bpe.h"
#include "harness/engine/tokenizers/gguf_vocab.h"

enum { L2C_UNK = 0, L2C_BOS = 1, L2C_EOS = 2, L2C_BYTE0 = 3 };

struct l2c {
    struct lx_bpe bpe;      /* the pieces and their merges */
    float *score;           /* (n_vocab,) the file's scores (what to_gguf writes) */
};

static const struct lx_bpe *bpe_of(const struct lx_tokenizer *t)
{
    return &((const struct l2c *)t->impl)->bpe;
}

static int l2c_encode(const struct lx_tokenizer *t, const char *text, size_t n, unsigned flags,
                      struct lx_ids *out, struct lx_error *err)
{
    (void)err;
    const struct lx_bpe *b = bpe_of(t);
    if (n == 0)
        return LX_OK;
    struct lx_bpe_work work = {0};
    int32_t space = lx_bpe_find(b, " ", 1);
    lx_bpe_word(b, flags & LX_ENC_SEGMENT ? -1 : space >= 0 ? space : b->byte_id[' '], text, n, out, &work);
    lx_bpe_work_free(&work);
    return LX_OK;
}

static void l2c_decode(const struct lx_tokenizer *t, const int32_t *ids, long n, struct lx_buf *out)
{
    const struct lx_bpe *b = bpe_of(t);
    /* without a " " token the dummy prefix is the byte token of a space (l2c_encode) */
    int32_t byte_space = lx_bpe_find(b, " ", 1) < 0 ? L2C_BYTE0 + ' ' : -1;
    int first = 1;   /* the next piece starts a text: its leading space is the dummy prefix */
    for (long i = 0; i < n; i++) {
        if (ids[i] == L2C_BOS || ids[i] == L2C_EOS || (first && ids[i] == byte_space)) {
            first = ids[i] != byte_space;
            continue;
        }
        size_t len;
        const char *s = lx_bpe_str(b, ids[i], &len);
        if (ids[i] >= L2C_BYTE0 && ids[i] < L2C_BYTE0 + 256) {
            char c = (char)(ids[i] - L2C_BYTE0);
            lx_buf_putn(out, &c, 1);
        } else {
            if (first && len > 0 && s[0] == ' ')
                s++, len--;
            lx_buf_putn(out, s, len);
        }
        first = 0;
    }
}

static const char *l2c_piece(const struct lx_tokenizer *t, int32_t id, size_t *len)
{
    if (id == L2C_UNK || id == L2C_BOS || id == L2C_EOS)
        return NULL;
    if (id >= L2C_BYTE0 && id < L2C_BYTE0 + 256) {
        *len = 1;
        return lx_tok_byte_table + (id - L2C_BYTE0);
    }
    return lx_bpe_str(bpe_of(t), id, len);
}

static void l2c_free(void *impl)
{
    struct l2c *l = impl;
    if (!l)
        return;
    lx_bpe_release(&l->bpe);
    free(l->score);
    free(l);
}

/* The GGUF 'llama' vocabulary it is (docs/tokenizers.md#gguf): each piece
** with U+2581 for a space, its score, and ids 0-2 named <unk>, <s>, </s> as
** llama.cpp's convert-llama2c-to-ggml names them (the file's are "\n<s>\n"). */
static int l2c_to_gguf(const struct lx_tokenizer *t, struct lx_gguf_out *o, struct lx_error *err)
{
    const struct l2c *l = t->impl;
    static const char *const names[] = {"<unk>", "<s>", "</s>"};
    static const int types[] = {LX_TT_UNKNOWN, LX_TT_CONTROL, LX_TT_CONTROL};
    struct lx_gguf_vocab v;
    lx_gguf_vocab_init(&v, "llama", t->n_vocab);
    v.score = lx_xmalloc((size_t)t->n_vocab * sizeof *v.score);
    memcpy(v.score, l->score, (size_t)t->n_vocab * sizeof *v.score);
    struct lx_buf piece = {0};
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (id < L2C_BYTE0) {
            lx_gguf_vocab_set(&v, id, names[id], strlen(names[id]), types[id]);
            continue;
        }
        size_t len;
        const char *s = lx_bpe_str(&l->bpe, id, &len);
        lx_buf_reset(&piece);
        for (size_t i = 0; i < len; i++)
            lx_buf_putn(&piece, s[i] == ' ' ? "\xe2\x96\x81" : s + i, s[i] == ' ' ? 3 : 1);
        lx_gguf_vocab_set(&v, id, lx_buf_str(&piece), piece.len, id < L2C_BYTE0 + 256 ? LX_TT_BYTE : LX_TT_NORMAL);
    }
    lx_buf_free(&piece);
    v.unk = L2C_UNK, v.bos = L2C_BOS, v.eos = L2C_EOS;
    v.add_bos = 1, v.add_eos = 0, v.add_space_prefix = 1;
    int rc = lx_gguf_vocab_put(&v, o, t->path, err);
    lx_gguf_vocab_release(&v);
    return rc;
}

static const struct lx_tok_ops llama2c_ops = {
    .kind = "sentencepiece",
    .encode = l2c_encode,
    .decode = l2c_decode,
    .piece = l2c_piece,
    .free = l2c_free,
    .to_gguf = l2c_to_gguf,
};

static int32_t read_i32(const unsigned char *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* What a file read as a llama2.c tokenizer.bin (any file that is no other kind) and found malformed is,
** and the hint every such error carries: the file is often not a tokenizer at all (a model, a text). */
#define NOT_L2C "not a tokenizer.json (no '{') nor a llama2.c tokenizer.bin"
#define L2C_HINT "\n  hint: a tokenizer is a tokenizer.json, a llama2.c tokenizer.bin or a GGUF file; is this one " \
                 "empty, cut short, or another kind of file?"

/* Count the tokens, checking that the records tile the file exactly. */
static long count_tokens(const unsigned char *bytes, long n, const char *path, struct lx_error *err)
{
    if (n < 4)
        return lx_err(err, LX_EINVAL, "%s: " NOT_L2C ": %ld bytes" L2C_HINT, path, n);
    int32_t max_len = read_i32(bytes);
    if (max_len <= 0 || max_len > 65536)
        return lx_err(err, LX_EINVAL, "%s: " NOT_L2C ": max_token_length %d is not in 1..65536" L2C_HINT, path,
                      max_len);
    long k = 0;
    for (long at = 4; at < n; k++) {
        if (n - at < 8)
            return lx_err(err, LX_EINVAL, "%s: " NOT_L2C ": token %ld: record cut short at byte %ld" L2C_HINT, path,
                          k, at);
        int32_t len = read_i32(bytes + at + 4);
        if (len < 0 || len > max_len || len > n - at - 8)
            return lx_err(err, LX_EINVAL, "%s: " NOT_L2C ": token %ld (byte %ld): length %d outside 0..%d or past "
                          "the end" L2C_HINT, path, k, at, len, max_len);
        at += 8 + len;
    }
    if (k < L2C_BYTE0 + 256)
        return lx_err(err, LX_EINVAL, "%s: %ld tokens, fewer than the 259 of <unk>, BOS, EOS and the byte tokens"
                      L2C_HINT, path, k);
    return k;
}

/* Ids 3 .. 258 must be the byte tokens <0x00> .. <0xFF> in order: decoding
** turns them into bytes by id, so another piece there would encode text that
** comes back as a different byte. */
static int check_byte_tokens(const struct lx_bpe *b, const char *path, struct lx_error *err)
{
    for (int c = 0; c < 256; c++) {
        size_t len;
        const char *s = lx_bpe_str(b, L2C_BYTE0 + c, &len);
        if (lx_tok_byte_token(s, len) != c)
            return lx_err(err, LX_EINVAL, "%s: token %d is \"%.*s\", not the byte token <0x%02X>\n  hint: ids "
                          "3..258 of a llama2.c tokenizer.bin are the byte tokens <0x00>..<0xFF> in order", path,
                          L2C_BYTE0 + c, (int)(len < 16 ? len : 16), s, c);
    }
    return LX_OK;
}

static int tok_llama2c_open(struct lx_tokenizer *t, const unsigned char *bytes, long n, struct lx_error *err)
{
    long k = count_tokens(bytes, n, t->path, err);
    if (k < 0)
        return (int)k;
    struct l2c *l = lx_xcalloc(1, sizeof *l);
    struct lx_bpe *b = &l->bpe;
    lx_bpe_init(b, k);
    float *score = lx_xmalloc((size_t)k * sizeof *score);
    for (long i = 0, at = 4; i < k; i++) {
        uint32_t u = (uint32_t)read_i32(bytes + at);
        memcpy(&score[i], &u, sizeof u);
        int32_t len = read_i32(bytes + at + 4);
        lx_bpe_set(b, (int32_t)i, (const char *)bytes + at + 8, (size_t)len);
        at += 8 + len;
    }
    int rc = check_byte_tokens(b, t->path, err);
    l->score = score;
    if (rc < 0) {
        l2c_free(l);
        return rc;
    }
    b->first_text = L2C_BYTE0 + 256;
    lx_bpe_index(b);
    for (int c = 0; c < 256; c++)
        b->byte_id[c] = L2C_BYTE0 + c;
    lx_bpe_add_score_merges(b, score);
    t->ops = &llama2c_ops;
    t->impl = l;
    t->n_vocab = k;
    t->bos = L2C_BOS;
    t->eos = L2C_EOS;
    t->add_bos = 1;
    t->strip_lead = 1;  /* l2c_decode drops the dummy prefix */
    return LX_OK;
}

/* The fallback kind: any bytes no other kind accepted are read as a
** tokenizer.bin, whose reader names what is wrong with them. */
static int tok_llama2c_accept(const unsigned char *bytes, long n)
{
    return 1;
}

const struct lx_tok_kind lx_tok_kind_llama2c = {
    .name = "llama2c",
    .file = "tokenizer.bin",
    .sidecar = NULL,
    .accept = tok_llama2c_accept,
    .open = tok_llama2c_open,
};
