/*
** harness/engine/tokenizers/tok_gguf.c - the tokenizer inside a llama.cpp GGUF
** file (docs/tokenizers.md#gguf): `tokenizer.ggml.model` "llama", a
** SentencePiece vocabulary with scores, read as the llama2.c tokenizer.bin
** it is the same thing as.
**
** The file's arrays tokenizer.ggml.tokens (pieces with U+2581 for a space)
** and tokenizer.ggml.scores become a tokenizer.bin in memory (each piece with
** its spaces back, its score), opened by the llama2c kind: ids 0, 1, 2 must
** be <unk>, BOS and EOS (tokenizer.ggml.bos/eos_token_id say so) and 3 .. 258
** the byte tokens, as in every Llama SentencePiece vocabulary. Other
** tokenizer models ("gpt2" byte-level BPE) are refused by name.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/gguf.h"
#include "harness/engine/tokenizers/tok_common.h"

extern const struct lx_tok_kind lx_tok_kind_llama2c;

static int accept_gguf(const unsigned char *bytes, long n)
{
    return n >= 4 && memcmp(bytes, "GGUF", 4) == 0;
}

/* A string array's element i (walked from the first: arrays are read once, in order). */
static const unsigned char *next_str(const unsigned char *p, const char **s, uint64_t *len)
{
    memcpy(len, p, 8);
    *s = (const char *)p + 8;
    return p + 8 + *len;
}

static void put_i32(struct lx_buf *b, int32_t v)
{
    lx_buf_putn(b, (const char *)&v, 4);
}

static int open_gguf(struct lx_tokenizer *t, const unsigned char *bytes, long n, struct lx_error *err)
{
    struct lx_gguf g;
    int rc = lx_gguf_parse(&g, bytes, (size_t)n, t->path, err);
    if (rc < 0)
        return rc;
    char model[32];
    lx_gguf_get_str(&g, "tokenizer.ggml.model", model, sizeof model);
    const struct lx_gguf_kv *toks = lx_gguf_find(&g, "tokenizer.ggml.tokens"),
                            *scores = lx_gguf_find(&g, "tokenizer.ggml.scores");
    int64_t bos = 1, eos = 2;
    if (strcmp(model, "llama") != 0)
        rc = lx_err(err, LX_EINVAL, "%s: tokenizer.ggml.model is '%s'; lenx reads GGUF's SentencePiece ('llama') "
                    "tokenizers so far\n  hint: give the model's tokenizer.json with --tokenizer", t->path,
                    model[0] ? model : "(none)");
    if (rc == LX_OK && (!toks || toks->type != LX_GGUF_ARRAY || toks->arr_type != LX_GGUF_STRING || !scores ||
                        scores->type != LX_GGUF_ARRAY || scores->arr_type != LX_GGUF_F32 ||
                        scores->arr_n != toks->arr_n || toks->arr_n > 1000000))
        rc = lx_err(err, LX_EINVAL, "%s: tokenizer.ggml.tokens (strings) and tokenizer.ggml.scores (f32) must be "
                    "arrays of one length", t->path);
    if (rc == LX_OK)
        rc = lx_gguf_get_int(&g, "tokenizer.ggml.bos_token_id", 0, &bos, err);
    if (rc == LX_OK)
        rc = lx_gguf_get_int(&g, "tokenizer.ggml.eos_token_id", 0, &eos, err);
    if (rc == LX_OK && (bos != 1 || eos != 2))
        rc = lx_err(err, LX_EINVAL, "%s: BOS is id %lld and EOS id %lld; a SentencePiece vocabulary lenx reads has "
                    "<unk>, BOS, EOS as ids 0, 1, 2", t->path, (long long)bos, (long long)eos);
    struct lx_buf bin = {0};    /* the tokenizer.bin: max_token_length, then (score, length, bytes) per token */
    int32_t longest = 1;
    put_i32(&bin, 0);
    const unsigned char *p = rc == LX_OK ? toks->arr : NULL;
    for (uint64_t i = 0; rc == LX_OK && i < toks->arr_n; i++) {
        const char *s;
        uint64_t len;
        p = next_str(p, &s, &len);
        struct lx_buf piece = {0};
        for (uint64_t k = 0; k < len; k++) {    /* U+2581 (e2 96 81) is SentencePiece's space */
            if (k + 2 < len && (unsigned char)s[k] == 0xe2 && (unsigned char)s[k + 1] == 0x96 &&
                (unsigned char)s[k + 2] == 0x81)
                lx_buf_putn(&piece, " ", 1), k += 2;
            else
                lx_buf_putn(&piece, s + k, 1);
        }
        float sc;
        memcpy(&sc, scores->arr + 4 * i, 4);
        lx_buf_putn(&bin, (const char *)&sc, 4);
        put_i32(&bin, (int32_t)piece.len);
        lx_buf_putn(&bin, piece.s ? piece.s : "", piece.len);
        longest = (int32_t)piece.len > longest ? (int32_t)piece.len : longest;
        lx_buf_free(&piece);
    }
    lx_gguf_release(&g);
    if (rc == LX_OK) {
        memcpy(bin.s, &longest, 4);
        rc = lx_tok_kind_llama2c.open(t, (const unsigned char *)bin.s, (long)bin.len, err);
    }
    lx_buf_free(&bin);
    return rc;
}

const struct lx_tok_kind lx_tok_kind_gguf = {
    .name = "gguf",
    .file = "tokenizer.gguf",
    .sidecar = NULL,
    .accept = accept_gguf,
    .open = open_gguf,
};
