/*
** harness/engine/tokenizers/gguf_vocab.c - the tokenizer.ggml.* keys (gguf_vocab.h,
** docs/tokenizers.md#gguf): the gpt2 pre-tokenizers lenx names, and putting a
** vocabulary into a GGUF file being written.
*/
#include "harness/engine/tokenizers/gguf_vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/tokenizers/bpe.h"

/* ---- pre-tokenizers ---- */

/* GPT-2's pattern as llama.cpp runs it: without the last "|\s+", whose
** matches (one white-space character before a non-space one) are left
** between matches, which makes them pieces all the same. */
#define GPT2_RE "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
/* Llama-3's and Qwen2's contractions: the tokenizer.json's case-insensitive
** group, and llama.cpp's spelling of it with ASCII classes. */
#define CONTR_JSON "(?i:'s|'t|'re|'ve|'m|'ll|'d)"
#define CONTR_CPP "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
/* The rest of both, which differ in the digits a piece takes: Llama-3 up to three, Qwen2 one. */
#define TAIL(digits) \
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" digits "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define LLAMA3_TAIL TAIL("\\p{N}{1,3}")
#define QWEN2_TAIL TAIL("\\p{N}")

/* llama.cpp's src/llama-vocab.cpp (llm_tokenizer_bpe, and the names its
** loader maps to each LLAMA_VOCAB_PRE_TYPE). */
const struct lx_gguf_pre lx_gguf_pres[] = {
    {.name = "llama-bpe", .alias = {"llama3", "llama-v3", NULL}, .json = CONTR_JSON LLAMA3_TAIL,
     .re = {CONTR_CPP LLAMA3_TAIL, NULL}, .ignore_merges = 1, .add_bos = 1},
    {.name = "qwen2", .alias = {NULL}, .json = CONTR_JSON QWEN2_TAIL, .re = {CONTR_CPP QWEN2_TAIL, NULL}},
    {.name = "gpt-2", .alias = {NULL}, .json = GPT2_RE "|\\s+", .re = {GPT2_RE, NULL}},
    /* llama.cpp's default (no tokenizer.json has it): four steps, not GPT-2's one */
    {.name = "default", .alias = {NULL}, .json = NULL,
     .re = {"[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2_RE, "\\p{N}+", "[0-9][0-9][0-9]"}},
};
const int lx_gguf_n_pres = (int)(sizeof lx_gguf_pres / sizeof *lx_gguf_pres);

const struct lx_gguf_pre *lx_gguf_pre_named(const char *name)
{
    for (int i = 0; i < lx_gguf_n_pres; i++) {
        const struct lx_gguf_pre *p = &lx_gguf_pres[i];
        int hit = strcmp(p->name, name) == 0;
        for (int a = 0; !hit && p->alias[a]; a++)
            hit = strcmp(p->alias[a], name) == 0;
        if (hit)
            return p;
    }
    return NULL;
}

static int same(const char *a, const char *s, size_t n)
{
    return a && strlen(a) == n && memcmp(a, s, n) == 0;
}

const struct lx_gguf_pre *lx_gguf_pre_of(int n, const char *const *re, const size_t *re_len)
{
    for (int i = 0; i < lx_gguf_n_pres; i++) {
        const struct lx_gguf_pre *p = &lx_gguf_pres[i];
        int k = 0;
        while (k < n && k < LX_GGUF_PRE_MAX && same(p->re[k], re[k], re_len[k]))
            k++;
        if ((k == n && (n == LX_GGUF_PRE_MAX || !p->re[n])) || (n == 1 && same(p->json, re[0], re_len[0])))
            return p;
    }
    return NULL;
}

const char *lx_gguf_pre_names(void)
{
    return "llama-bpe (or llama3, llama-v3), qwen2, gpt-2, default";
}

/* ---- a vocabulary to write ---- */

void lx_gguf_vocab_init(struct lx_gguf_vocab *v, const char *model, long n)
{
    memset(v, 0, sizeof *v);
    v->model = model;
    v->n = n;
    v->tok = lx_xcalloc((size_t)n + 1, sizeof *v->tok);
    v->len = lx_xcalloc((size_t)n + 1, sizeof *v->len);
    v->type = lx_xcalloc((size_t)n + 1, sizeof *v->type);
    v->bos = v->eos = v->unk = v->pad = v->mask = -1;
    v->add_space_prefix = -1;
}

void lx_gguf_vocab_release(struct lx_gguf_vocab *v)
{
    for (long i = 0; v->tok && i < v->n; i++)
        free(v->tok[i]);
    for (long i = 0; v->merge && i < v->n_merges; i++)
        free(v->merge[i]);
    free(v->tok), free(v->len), free(v->type), free(v->score), free(v->merge);
    memset(v, 0, sizeof *v);
}

void lx_gguf_vocab_set(struct lx_gguf_vocab *v, long id, const char *s, size_t n, int type)
{
    LX_ASSERT(id >= 0 && id < v->n);
    free(v->tok[id]);
    v->tok[id] = lx_xmalloc(n + 1);
    memcpy(v->tok[id], s, n);
    v->tok[id][n] = '\0';
    v->len[id] = n;
    v->type[id] = type;
}

void lx_gguf_vocab_pad(struct lx_gguf_vocab *v, const unsigned char *set)
{
    for (long id = 0; id < v->n; id++)
        if (!set[id]) {
            char name[32];
            int k = snprintf(name, sizeof name, "[PAD%ld]", id);
            lx_gguf_vocab_set(v, id, name, (size_t)k, LX_TT_UNUSED);
        }
}

long lx_gguf_text_bad(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        int k = s[i] ? lx_utf8_len((const unsigned char *)s + i, n - i) : 0;
        if (k == 0)
            return (long)i;
        i += (size_t)k;
    }
    return -1;
}

long lx_gguf_twice(long n, const char *const *s, const size_t *len, long *first)
{
    struct lx_bpe set;
    lx_bpe_init(&set, n);
    for (long i = 0; i < n; i++)
        lx_bpe_set(&set, (int32_t)i, s[i], len[i]);
    lx_bpe_index(&set);
    long twice = -1;
    for (long i = 0; i < n && twice < 0; i++)
        if ((*first = lx_bpe_find(&set, s[i], len[i])) != i)
            twice = i;
    lx_bpe_release(&set);
    return twice;
}

/* Every text non-empty UTF-8, held once; the special ids inside. */
static int check(const struct lx_gguf_vocab *v, const char *what, struct lx_error *err)
{
    const char *hint = "\n  hint: llama.cpp reads each token's text as UTF-8 and maps it back to one id";
    for (long id = 0; id < v->n; id++) {
        long bad = lx_gguf_text_bad(v->tok[id], v->len[id]);
        if (v->len[id] == 0)
            return lx_err(err, LX_EINVAL, "%s: token %ld is empty, which a GGUF vocabulary cannot hold%s", what, id,
                          hint);
        if (bad >= 0)
            return lx_err(err, LX_EINVAL, "%s: token %ld is not UTF-8 (or holds a NUL) at byte %ld, which a GGUF "
                          "vocabulary cannot hold%s", what, id, bad, hint);
    }
    long first, twice = lx_gguf_twice(v->n, (const char *const *)v->tok, v->len, &first);
    int rc = LX_OK;
    if (twice >= 0)
        rc = lx_err(err, LX_EINVAL, "%s: tokens %ld and %ld are both \"%.40s\" in the GGUF vocabulary%s", what, first,
                    twice, v->tok[twice], hint);
    const int32_t ids[] = {v->bos, v->eos, v->unk, v->pad, v->mask};
    for (int i = 0; i < 5 && rc == LX_OK; i++)
        if (ids[i] >= v->n)
            rc = lx_err(err, LX_EINVAL, "%s: special id %ld is outside the %ld tokens", what, (long)ids[i], v->n);
    return rc;
}

int lx_gguf_vocab_put(const struct lx_gguf_vocab *v, struct lx_gguf_out *o, const char *what, struct lx_error *err)
{
    int rc = check(v, what, err);
    if (rc < 0)
        return rc;
    int gpt2 = strcmp(v->model, "gpt2") == 0;
    lx_gguf_put_str(o, "tokenizer.ggml.model", v->model);
    if (gpt2)
        lx_gguf_put_str(o, "tokenizer.ggml.pre", v->pre);
    lx_gguf_put_strs(o, "tokenizer.ggml.tokens", (uint64_t)v->n, (const char *const *)v->tok, v->len);
    if (v->score)
        lx_gguf_put_arr(o, "tokenizer.ggml.scores", LX_GGUF_F32, (uint64_t)v->n, v->score);
    lx_gguf_put_arr(o, "tokenizer.ggml.token_type", LX_GGUF_I32, (uint64_t)v->n, v->type);
    if (gpt2)
        lx_gguf_put_strs(o, "tokenizer.ggml.merges", (uint64_t)v->n_merges, (const char *const *)v->merge, NULL);
    static const char *const keys[] = {"bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id",
                                       "mask_token_id"};
    const int32_t ids[] = {v->bos, v->eos, v->unk, v->pad, v->mask};
    for (int i = 0; i < 5; i++) {
        char key[64];
        snprintf(key, sizeof key, "tokenizer.ggml.%s", keys[i]);
        if (ids[i] >= 0)
            lx_gguf_put_u32(o, key, (uint32_t)ids[i]);
    }
    lx_gguf_put_bool(o, "tokenizer.ggml.add_bos_token", v->add_bos);
    lx_gguf_put_bool(o, "tokenizer.ggml.add_eos_token", v->add_eos);
    if (v->add_space_prefix >= 0)
        lx_gguf_put_bool(o, "tokenizer.ggml.add_space_prefix", v->add_space_prefix);
    return LX_OK;
}
