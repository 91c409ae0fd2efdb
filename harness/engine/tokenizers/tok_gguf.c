/*
** harness/engine/tokenizers/tok_gguf.c - the tokenizer inside a llama.cpp GGUF
** file (docs/tokenizers.md#gguf), read so that it encodes as llama.cpp's
** llama-tokenize does on the same file:
**
**   "gpt2"   byte-level BPE: tokenizer.ggml.tokens over GPT-2's byte alphabet,
**            tokenizer.ggml.merges in rank order, the pre-tokenizer named by
**            tokenizer.ggml.pre (gguf_vocab.c's table: llama.cpp's own
**            regular expressions for that name);
**   "llama"  SentencePiece: tokens with U+2581 for a space, merged by
**            tokenizer.ggml.scores (every cut of a token into two tokens, best
**            score first), byte fallback, a dummy prefix when
**            tokenizer.ggml.add_space_prefix (the default) says so.
**
** The file's arrays become a tokenizer.json in memory, opened by the hf kind
** (tok_hf.c: its added tokens, pre-tokenizer and BPE), and the merges are
** added to it after (by rank, or by score). Control, unknown and user-defined
** tokens (token_type 3, 2, 4) are added tokens, matched in text as
** llama-tokenize matches them (it parses special tokens by default). A
** token's text is UTF-8 without NUL and held by one id; an empty one is
** "[EMPTY_<id>]", as llama.cpp names it. A file lenx wrote for its own byte
** models (lenx.tokenizer = "bytes") is the byte tokenizer.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/tokenizers/gguf_vocab.h"
#include "harness/engine/tokenizers/tok_hf.h"
#include "harness/engine/tokenizers/tokenizer.h"

/* What the reader takes from the file. */
struct gg {
    struct lx_gguf g;           /* the parsed file */
    const char *path;           /* for messages */
    int gpt2;                   /* tokenizer.ggml.model: 1 "gpt2", 0 "llama" */
    const struct lx_gguf_pre *pre;  /* gpt2: the pre-tokenizer */
    long n;                     /* tokens */
    const char **s;             /* (n,) each token's text (in the file, or an "[EMPTY_<id>]" in own) */
    size_t *len;                /* (n,) */
    char **own;                 /* (n,) the names given to empty tokens, else NULL */
    int32_t *type;              /* (n,) enum lx_gguf_toktype (NORMAL when the file has none) */
    float *score;               /* (n,) llama: the scores (0 when the file has none) */
};

static void gg_release(struct gg *f)
{
    for (long i = 0; f->own && i < f->n; i++)
        free(f->own[i]);
    free(f->s), free(f->len), free(f->own), free(f->type), free(f->score);
    lx_gguf_release(&f->g);
}

static int accept_gguf(const unsigned char *bytes, long n)
{
    return n >= 4 && memcmp(bytes, "GGUF", 4) == 0;
}

/* A string array's elements walk from the first (next_str moves on by one). */
static const unsigned char *next_str(const unsigned char *p, const char **s, uint64_t *len)
{
    memcpy(len, p, 8);
    *s = (const char *)p + 8;
    return p + 8 + *len;
}

/* The array under key (NULL when absent and !required) with elements of type t and, when n >= 0, n of them. */
static int array_of(const struct gg *f, const char *key, enum lx_gguf_vtype t, long n, int required,
                    const struct lx_gguf_kv **out, struct lx_error *err)
{
    static const char *const names[] = {[LX_GGUF_STRING] = "strings", [LX_GGUF_I32] = "int32",
                                        [LX_GGUF_F32] = "float32"};
    const struct lx_gguf_kv *kv = *out = lx_gguf_find(&f->g, key);
    if (!kv && !required)
        return LX_OK;
    if (!kv || kv->type != LX_GGUF_ARRAY || kv->arr_type != t)
        return lx_err(err, LX_EINVAL, "%s: %s %s; lenx reads it as an array of %s\n  hint: the file is not one "
                      "llama.cpp's converters wrote, or is damaged", f->path, key, kv ? "is of another type" :
                      "is missing", names[t]);
    if (n >= 0 && kv->arr_n != (uint64_t)n)
        return lx_err(err, LX_EINVAL, "%s: %s has %llu entries for the %ld of tokenizer.ggml.tokens\n  hint: one "
                      "per token", f->path, key, (unsigned long long)kv->arr_n, n);
    return LX_OK;
}

/* tokenizer.ggml.tokens, token_type and (llama) scores into f. */
static int read_tokens(struct gg *f, struct lx_error *err)
{
    const struct lx_gguf_kv *toks, *types = NULL, *scores = NULL;
    int rc = array_of(f, "tokenizer.ggml.tokens", LX_GGUF_STRING, -1, 1, &toks, err);
    if (rc == LX_OK && (toks->arr_n == 0 || toks->arr_n > (1u << 24)))
        rc = lx_err(err, LX_EINVAL, "%s: tokenizer.ggml.tokens has %llu tokens, not 1 .. 2^24", f->path,
                    (unsigned long long)toks->arr_n);
    f->n = rc == LX_OK ? (long)toks->arr_n : 0;
    if (rc == LX_OK && (rc = array_of(f, "tokenizer.ggml.token_type", LX_GGUF_I32, f->n, 0, &types, err)) == LX_OK &&
        !f->gpt2)
        rc = array_of(f, "tokenizer.ggml.scores", LX_GGUF_F32, f->n, 0, &scores, err);
    if (rc < 0)
        return rc;
    f->s = lx_xcalloc((size_t)f->n, sizeof *f->s);
    f->len = lx_xcalloc((size_t)f->n, sizeof *f->len);
    f->own = lx_xcalloc((size_t)f->n, sizeof *f->own);
    f->type = lx_xcalloc((size_t)f->n, sizeof *f->type);
    f->score = lx_xcalloc((size_t)f->n, sizeof *f->score);
    const unsigned char *p = toks->arr;
    for (long i = 0; i < f->n && rc == LX_OK; i++) {
        uint64_t len;
        p = next_str(p, &f->s[i], &len);
        f->len[i] = (size_t)len;
        f->type[i] = LX_TT_NORMAL;
        if (types)
            memcpy(&f->type[i], types->arr + 4 * i, 4);
        if (!f->gpt2 && scores)
            memcpy(&f->score[i], scores->arr + 4 * i, 4);
        long bad = lx_gguf_text_bad(f->s[i], f->len[i]);
        if (len == 0) {     /* llama.cpp's name for it */
            char name[32];
            f->len[i] = (size_t)snprintf(name, sizeof name, "[EMPTY_%ld]", i);
            f->s[i] = f->own[i] = lx_xstrdup(name);
        } else if (bad >= 0) {
            rc = lx_err(err, LX_EINVAL, "%s: tokenizer.ggml.tokens[%ld] is not UTF-8 (or holds a NUL) at byte %ld\n"
                        "  hint: llama.cpp reads each token's text as UTF-8", f->path, i, bad);
        }
        if (rc == LX_OK && (f->type[i] < LX_TT_NORMAL || f->type[i] > LX_TT_BYTE))
            rc = lx_err(err, LX_EINVAL, "%s: tokenizer.ggml.token_type[%ld] is %d, not a type 1..6 (normal, unknown, "
                        "control, user-defined, unused, byte)", f->path, i, (int)f->type[i]);
    }
    return rc;
}

/* Texts llama.cpp's loader (src/llama-vocab.cpp, llama_vocab::impl::load)
** makes control tokens of whatever their type ("control-looking token ... was
** not control-type"): end-of-generation markers always, fill-in-the-middle
** markers when the file names no such token (key); gpt-oss's four it makes
** user-defined. Either way llama-tokenize then matches them in text, so a
** vocabulary whose ordinary token is "</s>" (Qwen2's, Qwen3's) has it split
** out of text: lenx reads the file so too. */
static const struct {
    const char *key, *key2;     /* the ids that, when the file has one, stop the search */
    int type;                   /* what the token becomes */
    const char *text[24];       /* NULL-terminated */
} looks_special[] = {
    {NULL, NULL, LX_TT_CONTROL, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
     "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
     "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
     "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>", "[e~[", NULL}},
    {"fim_pre_token_id", "prefix_token_id", LX_TT_CONTROL, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
     "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>",
     "<|prefix|>", NULL}},
    {"fim_suf_token_id", "suffix_token_id", LX_TT_CONTROL, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
     "<\xef\xbd\x9c" "fim\xe2\x96\x81" "hole\xef\xbd\x9c>", "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>",
     "<|suffix|>", NULL}},
    {"fim_mid_token_id", "middle_token_id", LX_TT_CONTROL, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
     "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>",
     "<|middle|>", NULL}},
    {"fim_pad_token_id", NULL, LX_TT_CONTROL, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL}},
    {"fim_rep_token_id", NULL, LX_TT_CONTROL, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>",
     NULL}},
    {"fim_sep_token_id", NULL, LX_TT_CONTROL, {"<|file_sep|>", NULL}},
    {NULL, NULL, LX_TT_USER, {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL}},
};

/* Whether the file names a token under tokenizer.ggml.<key>. */
static int has_id(const struct gg *f, const char *key)
{
    char full[64];
    int64_t v = -1;
    snprintf(full, sizeof full, "tokenizer.ggml.%s", key ? key : "");
    return key && lx_gguf_get_int(&f->g, full, 0, &v, NULL) == LX_OK && v >= 0 && v < f->n;
}

/* Apply looks_special to the types of f's tokens that are not matched in text already. */
static void control_looking(struct gg *f)
{
    enum { N_ROWS = sizeof looks_special / sizeof *looks_special };
    int on[N_ROWS];
    for (int r = 0; r < N_ROWS; r++)
        on[r] = !has_id(f, looks_special[r].key) && !has_id(f, looks_special[r].key2);
    for (long i = 0; i < f->n; i++) {
        if (f->type[i] == LX_TT_CONTROL || f->type[i] == LX_TT_USER || f->type[i] == LX_TT_UNKNOWN)
            continue;
        for (int r = 0; r < N_ROWS; r++)
            for (int k = 0; on[r] && looks_special[r].text[k]; k++)
                if (strlen(looks_special[r].text[k]) == f->len[i] &&
                    memcmp(looks_special[r].text[k], f->s[i], f->len[i]) == 0)
                    f->type[i] = looks_special[r].type;
    }
}

/* Each text held by one id (llama.cpp stops on a vocabulary that is not);
** gpt2's model tokens over the byte alphabet. */
static int check_tokens(const struct gg *f, struct lx_error *err)
{
    long first, twice = lx_gguf_twice(f->n, f->s, f->len, &first);
    if (twice >= 0)
        return lx_err(err, LX_EINVAL, "%s: tokenizer.ggml.tokens[%ld] and [%ld] are both \"%.40s\"\n  hint: "
                      "llama.cpp maps each text back to one id", f->path, first, twice, f->s[twice]);
    int rc = LX_OK;
    char *buf = NULL;
    for (long i = 0; i < f->n && rc == LX_OK; i++) {
        int model = f->type[i] == LX_TT_NORMAL || f->type[i] == LX_TT_UNUSED || f->type[i] == LX_TT_BYTE;
        buf = f->gpt2 && model ? lx_xrealloc(buf, f->len[i] + 1) : buf;
        if (rc == LX_OK && f->gpt2 && model && lx_tok_from_alphabet(f->s[i], f->len[i], buf) < 0)
            rc = lx_err(err, LX_EINVAL, "%s: tokenizer.ggml.tokens[%ld] \"%.40s\" (type %d) is not over GPT-2's byte "
                        "alphabet, as a 'gpt2' vocabulary's tokens are\n  hint: added tokens are type 3 or 4",
                        f->path, i, f->s[i], (int)f->type[i]);
    }
    free(buf);
    return rc;
}

/* ---- the tokenizer.json ---- */

static int is_added(int type)
{
    return type == LX_TT_CONTROL || type == LX_TT_UNKNOWN || type == LX_TT_USER;
}

/* model.vocab: every token (its added ones too, as in Llama-2's file), but for
** gpt2 those whose text is not over the byte alphabet: llama.cpp looks merged
** pieces up among all tokens, so a control token a merge makes (Qwen3's
** "</s>", control-looking) is what the merge gives. */
static void json_vocab(const struct gg *f, struct lx_buf *j)
{
    lx_buf_puts(j, "\"vocab\": {");
    int first = 1;
    char *buf = NULL;
    for (long i = 0; i < f->n; i++) {
        buf = f->gpt2 ? lx_xrealloc(buf, f->len[i] + 1) : NULL;
        if (f->gpt2 && lx_tok_from_alphabet(f->s[i], f->len[i], buf) < 0)
            continue;
        lx_buf_puts(j, first ? "" : ", ");
        lx_buf_json_strn(j, f->s[i], f->len[i]);
        lx_buf_printf(j, ": %ld", i);
        first = 0;
    }
    free(buf);
    lx_buf_puts(j, "}, \"merges\": []}");
}

static void json_added(const struct gg *f, struct lx_buf *j)
{
    lx_buf_puts(j, "\"added_tokens\": [");
    int first = 1;
    for (long i = 0; i < f->n; i++) {
        if (!is_added(f->type[i]))
            continue;
        lx_buf_printf(j, "%s{\"id\": %ld, \"content\": ", first ? "" : ", ", i);
        lx_buf_json_strn(j, f->s[i], f->len[i]);
        lx_buf_printf(j, ", \"special\": %s}", f->type[i] == LX_TT_USER ? "false" : "true");
        first = 0;
    }
    lx_buf_puts(j, "], ");
}

/* gpt2: llama.cpp's expressions for the pre-tokenizer, then the byte alphabet. */
static void json_gpt2(const struct gg *f, struct lx_buf *j)
{
    lx_buf_puts(j, "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [");
    for (int k = 0; k < LX_GGUF_PRE_MAX && f->pre->re[k]; k++) {
        lx_buf_puts(j, "{\"type\": \"Split\", \"behavior\": \"Isolated\", \"pattern\": {\"Regex\": ");
        lx_buf_json_str(j, f->pre->re[k]);
        lx_buf_puts(j, "}}, ");
    }
    lx_buf_printf(j, "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}, \"decoder\": "
                  "{\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"BPE\", \"ignore_merges\": %s, ",
                  f->pre->ignore_merges ? "true" : "false");
}

/* llama: SentencePiece's normalizer and decoder as Llama-2's tokenizer.json has them. */
static void json_llama(const struct gg *f, int prefix, int64_t unk, struct lx_buf *j)
{
    lx_buf_printf(j, "\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [%s{\"type\": \"Replace\", "
                  "\"pattern\": {\"String\": \" \"}, \"content\": \"\\u2581\"}]}, "
                  "\"decoder\": {\"type\": \"Sequence\", "
                  "\"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"\\u2581\"}, \"content\": \" \"}, "
                  "{\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}%s]}, \"model\": {\"type\": \"BPE\", "
                  "\"byte_fallback\": true, \"fuse_unk\": true, ",
                  prefix ? "{\"type\": \"Prepend\", \"prepend\": \"\\u2581\"}, " : "",
                  prefix ? ", {\"type\": \"Strip\", \"content\": \" \", \"start\": 1, \"stop\": 0}" : "");
    if (unk >= 0 && unk < f->n) {
        lx_buf_puts(j, "\"unk_token\": ");
        lx_buf_json_strn(j, f->s[unk], f->len[unk]);
        lx_buf_puts(j, ", ");
    }
}

/* ---- the merges ---- */

/* gpt2: tokenizer.ggml.merges, "left right" by rank; each a merge of two tokens into a token. */
static int add_merges(const struct gg *f, struct hf_tok *hf, struct lx_error *err)
{
    const struct lx_gguf_kv *merges;
    int rc = array_of(f, "tokenizer.ggml.merges", LX_GGUF_STRING, -1, 1, &merges, err);
    const unsigned char *p = merges ? merges->arr : NULL;
    for (uint64_t k = 0; rc == LX_OK && k < merges->arr_n; k++) {
        const char *s;
        uint64_t n;
        p = next_str(p, &s, &n);
        const char *sp = n > 1 ? memchr(s + 1, ' ', n - 1) : NULL;   /* llama.cpp: the first space after byte 0 */
        int miss = sp ? lx_hf_tok_merge(hf, s, (size_t)(sp - s), sp + 1, (size_t)(n - (size_t)(sp - s) - 1),
                                        (double)k, 0) : -1;
        if (miss == LX_OK)
            continue;
        const char *why = miss < 0 ? "no space separates two tokens"
                          : miss == HF_MISS_LEFT ? "its left part is not in tokenizer.ggml.tokens"
                          : miss == HF_MISS_RIGHT ? "its right part is not in tokenizer.ggml.tokens"
                                                  : "the two together are not in tokenizer.ggml.tokens";
        rc = lx_err(err, LX_EINVAL, "%s: tokenizer.ggml.merges[%llu] \"%.*s\": %s\n  hint: each merge is two "
                    "tokens separated by a space, whose concatenation is a token too", f->path,
                    (unsigned long long)k, (int)(n > 60 ? 60 : n), s, why);
    }
    return rc;
}

/* ---- special ids ---- */

/* An id key, when the file has it inside the vocabulary (llama.cpp keeps its default for one outside). */
static int special_id(const struct gg *f, const char *key, int32_t *id, struct lx_error *err)
{
    int64_t v = -1;
    int rc = lx_gguf_get_int(&f->g, key, 0, &v, err);
    if (rc == LX_OK && v >= 0 && v < f->n)
        *id = (int32_t)v;
    return rc;
}

/* A boolean key into *out, when the file has it. */
static int flag(const struct gg *f, const char *key, int *out, struct lx_error *err)
{
    const struct lx_gguf_kv *kv = lx_gguf_find(&f->g, key);
    if (kv && kv->type != LX_GGUF_BOOL)
        return lx_err(err, LX_EINVAL, "%s: %s is not a boolean", f->path, key);
    if (kv)
        *out = kv->v.u != 0;
    return LX_OK;
}

/* BOS, EOS, padding, mask and what is added, with llama.cpp's defaults:
** SentencePiece BOS 1, EOS 2, adds BOS; gpt2 adds BOS for llama-bpe only. */
static int specials(const struct gg *f, struct lx_tokenizer *t, struct lx_error *err)
{
    t->bos = f->gpt2 || f->n < 3 ? -1 : 1;
    t->eos = f->gpt2 || f->n < 3 ? -1 : 2;
    t->add_bos = f->gpt2 ? f->pre->add_bos : 1;
    t->add_eos = 0;
    int rc;
    if ((rc = special_id(f, "tokenizer.ggml.bos_token_id", &t->bos, err)) < 0 ||
        (rc = special_id(f, "tokenizer.ggml.eos_token_id", &t->eos, err)) < 0 ||
        (rc = special_id(f, "tokenizer.ggml.padding_token_id", &t->pad, err)) < 0 ||
        (rc = special_id(f, "tokenizer.ggml.mask_token_id", &t->mask, err)) < 0 ||
        (rc = flag(f, "tokenizer.ggml.add_bos_token", &t->add_bos, err)) < 0 ||
        (rc = flag(f, "tokenizer.ggml.add_eos_token", &t->add_eos, err)) < 0)
        return rc;
    if ((t->add_bos && t->bos < 0) || (t->add_eos && t->eos < 0))
        return lx_err(err, LX_EINVAL, "%s: tokenizer.ggml.add_%s_token is true, but tokenizer.ggml.%s_token_id names "
                      "no token\n  hint: the file is damaged", f->path, t->add_bos && t->bos < 0 ? "bos" : "eos",
                      t->add_bos && t->bos < 0 ? "bos" : "eos");
    return LX_OK;
}

/* ---- the whole file ---- */

/* lenx.tokenizer = "bytes": what lx_tokenizer_to_gguf writes for lenx's byte
** models (tokenizer.c); read as the byte tokenizer itself, when the tokens
** are those it writes, adding BOS as the file says (as llama.cpp does). */
static int open_bytes(struct gg *f, struct lx_tokenizer *t, struct lx_error *err)
{
    int rc = read_tokens(f, err);
    struct lx_buf b = {0};
    for (int c = 0; c < 256 && rc == LX_OK; c++) {
        lx_buf_reset(&b);
        lx_tok_to_alphabet(lx_tok_byte_table + c, 1, &b);
        if (f->n != LX_VOCAB || f->len[c] != b.len || memcmp(f->s[c], b.s, b.len) != 0)
            rc = lx_err(err, LX_EINVAL, "%s: lenx.tokenizer is 'bytes', but tokenizer.ggml.tokens is not lenx's byte "
                        "vocabulary (%ld tokens; token %d)\n  hint: lenx writes it with lx_tokenizer_to_gguf",
                        f->path, f->n, c);
    }
    lx_buf_free(&b);
    if (rc < 0)
        return rc;
    char *path = t->path;
    *t = lx_byte_tokenizer;
    t->path = path;
    return flag(f, "tokenizer.ggml.add_bos_token", &t->add_bos, err);   /* lenx writes true */
}

/* The tokenizer.json of f, opened into t, with f's merges. */
static int open_json(struct gg *f, struct lx_tokenizer *t, struct lx_error *err)
{
    int prefix = 1, rc;
    int64_t unk = 0;
    if (!f->gpt2 && ((rc = flag(f, "tokenizer.ggml.add_space_prefix", &prefix, err)) < 0 ||
                     (rc = lx_gguf_get_int(&f->g, "tokenizer.ggml.unknown_token_id", 0, &unk, err)) < 0))
        return rc;
    struct lx_buf j = {0};
    lx_buf_puts(&j, "{");
    json_added(f, &j);
    if (f->gpt2)
        json_gpt2(f, &j);
    else
        json_llama(f, prefix, unk, &j);
    json_vocab(f, &j);
    lx_buf_puts(&j, "}");
    rc = lx_hf_tok_open_json(t, j.s, j.len, 0, err);
    lx_buf_free(&j);
    if (rc < 0)
        return lx_err_prefix(err, rc, "(the tokenizer.json lenx makes of its tokenizer.ggml keys) ");
    struct hf_tok *hf = t->impl;
    if (f->gpt2)
        return add_merges(f, hf, err);
    lx_bpe_add_score_merges(&hf->bpe, f->score);
    return LX_OK;
}

static int open_gguf(struct lx_tokenizer *t, const unsigned char *bytes, long n, struct lx_error *err)
{
    struct gg f = {.path = t->path};
    int rc = lx_gguf_parse(&f.g, bytes, (size_t)n, t->path, err);
    if (rc < 0)
        return rc;
    char model[32], pre[64], lenx[32];
    lx_gguf_get_str(&f.g, "tokenizer.ggml.model", model, sizeof model);
    lx_gguf_get_str(&f.g, "tokenizer.ggml.pre", pre, sizeof pre);
    lx_gguf_get_str(&f.g, "lenx.tokenizer", lenx, sizeof lenx);
    f.gpt2 = strcmp(model, "gpt2") == 0;
    f.pre = lx_gguf_pre_named(pre[0] ? pre : "default");   /* llama.cpp: none is "default" */
    if (strcmp(lenx, "bytes") == 0)
        rc = open_bytes(&f, t, err);
    else if (lenx[0])
        rc = lx_err(err, LX_EINVAL, "%s: lenx.tokenizer is '%s'; lenx writes 'bytes' only", t->path, lenx);
    else if (!f.gpt2 && strcmp(model, "llama") != 0)
        rc = lx_err(err, LX_EINVAL, "%s: tokenizer.ggml.model is '%s'; lenx reads 'gpt2' (byte-level BPE) and "
                    "'llama' (SentencePiece)\n  hint: give the model's tokenizer.json with --tokenizer", t->path,
                    model[0] ? model : "(none)");
    else if (f.gpt2 && !f.pre)
        rc = lx_err(err, LX_EINVAL, "%s: tokenizer.ggml.pre is '%s', a pre-tokenizer lenx does not know\n  hint: "
                    "lenx reads %s (docs/tokenizers.md#gguf); else give the model's tokenizer.json with --tokenizer",
                    t->path, pre, lx_gguf_pre_names());
    else if ((rc = read_tokens(&f, err)) == LX_OK && (rc = check_tokens(&f, err)) == LX_OK &&
             (control_looking(&f), rc = open_json(&f, t, err)) == LX_OK)
        rc = specials(&f, t, err);
    gg_release(&f);
    return rc;
}

const struct lx_tok_kind lx_tok_kind_gguf = {
    .name = "gguf",
    .file = "tokenizer.gguf",
    .sidecar = NULL,
    .accept = accept_gguf,
    .open = open_gguf,
};
