/*
** harness/engine/tokenizers/bytes.c - the byte tokenizer of lenx's own models
** (tokenizer.h, docs/tokenizers.md): ids 0..255 are the bytes of the text,
** 256..259 BOS, EOS, PAD and MASK (tok_common.h). It opens from no file, so it
** is no kind of kinds.def; a GGUF file it wrote reads back as it (tok_gguf.c).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/gguf.h"
#include "harness/engine/tokenizers/gguf_vocab.h"
#include "harness/engine/tokenizers/tokenizer.h"

static int bytes_encode(const struct lx_tokenizer *t, const char *text, size_t n, unsigned flags,
                        struct lx_ids *out, struct lx_error *err)
{
    (void)t, (void)flags, (void)err;
    lx_ids_reserve(out, (long)n);
    int32_t *id = out->id + out->n;
    for (size_t i = 0; i < n; i++)
        id[i] = (unsigned char)text[i];
    out->n += (long)n;
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

static const char *bytes_piece(const struct lx_tokenizer *t, int32_t id, size_t *len)
{
    (void)t;
    *len = id >= 0 && id < 256;
    return *len ? lx_tok_byte_table + id : NULL;
}

/* A GGUF 'gpt2' vocabulary that llama.cpp encodes as this one (docs/tokenizers.md#gguf):
** ids 0..255 the single bytes over GPT-2's byte alphabet and no merge, so
** that any UTF-8 text is its bytes; BOS, EOS, PAD and MASK control tokens
** (llama-tokenize matches those in text) whose texts begin with U+FDD0, a
** noncharacter, which no text meant for interchange holds; and
** lenx.tokenizer = "bytes", by which tok_gguf.c reads the file back as this. */
static int bytes_to_gguf(const struct lx_tokenizer *t, struct lx_gguf_out *o, struct lx_error *err)
{
    static const char *const specials[] = {"\xef\xb7\x90<bos>", "\xef\xb7\x90<eos>", "\xef\xb7\x90<pad>",
                                           "\xef\xb7\x90<mask>"};
    struct lx_gguf_vocab v;
    lx_gguf_vocab_init(&v, "gpt2", LX_VOCAB);
    struct lx_buf b = {0};
    for (int c = 0; c < 256; c++) {
        lx_buf_reset(&b);
        lx_tok_to_alphabet(lx_tok_byte_table + c, 1, &b);
        lx_gguf_vocab_set(&v, c, b.s, b.len, LX_TT_NORMAL);
    }
    lx_buf_free(&b);
    for (int k = 0; k < 4; k++)
        lx_gguf_vocab_set(&v, 256 + k, specials[k], strlen(specials[k]), LX_TT_CONTROL);
    v.pre = "gpt-2";
    v.bos = LX_TOK_BOS, v.eos = LX_TOK_EOS, v.pad = LX_TOK_PAD, v.mask = LX_TOK_MASK;
    v.add_bos = 1;
    int rc = lx_gguf_vocab_put(&v, o, "the byte tokenizer", err);
    lx_gguf_vocab_release(&v);
    if (rc == LX_OK)
        lx_gguf_put_str(o, "lenx.tokenizer", "bytes");
    return rc;
}

static const struct lx_tok_ops bytes_ops = {
    .kind = "bytes",
    .encode = bytes_encode,
    .decode = bytes_decode,
    .piece = bytes_piece,
    .free = NULL,
    .to_gguf = bytes_to_gguf,
};

/* The hash is the SHA-256 of "lenx bytes tokenizer: ids 0-255 are bytes; 256
** BOS, 257 EOS, 258 PAD, 259 MASK" (a test recomputes it). */
const struct lx_tokenizer lx_byte_tokenizer = {
    .ops = &bytes_ops, .path = "", .n_vocab = LX_VOCAB, .bos = LX_TOK_BOS, .eos = LX_TOK_EOS,
    .pad = LX_TOK_PAD, .mask = LX_TOK_MASK, .is_byte = 1, .max_piece = 1,
    .hash = "0f5bf15fc77364522e97f0ed04a65192dbb86494f80a765412257758b352e2b7",
};

struct lx_tokenizer *lx_tokenizer_bytes_new(void)
{
    struct lx_tokenizer *t = lx_xmalloc(sizeof *t);
    *t = lx_byte_tokenizer;
    t->path = lx_xstrdup("");
    return t;
}
