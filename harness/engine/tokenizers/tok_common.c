/*
** harness/engine/tokenizers/tok_common.c - the helpers every tokenizer kind
** and the dispatcher share (tok_common.h): the id list, byte-fallback pieces,
** UTF-8 lengths, the byte table, GPT-2's byte alphabet.
*/
#include "harness/engine/tokenizers/tok_common.h"

#include <stdlib.h>
#include <string.h>

void lx_ids_reserve(struct lx_ids *v, long more)
{
    if (v->n + more <= v->cap)
        return;
    long cap = v->cap ? 2 * v->cap : 256;
    v->cap = cap < v->n + more ? v->n + more : cap;
    v->id = lx_xrealloc(v->id, (size_t)v->cap * sizeof *v->id);
}

void lx_ids_push(struct lx_ids *v, int32_t id)
{
    if (v->n == v->cap)
        lx_ids_reserve(v, 1);
    v->id[v->n++] = id;
}

void lx_ids_free(struct lx_ids *v)
{
    free(v->id);
    memset(v, 0, sizeof *v);
}

int lx_tok_byte_token(const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
        return -1;
    const char *h = strchr(hex, s[3]), *l = strchr(hex, s[4]);
    return h && l && s[3] && s[4] ? (int)((h - hex) * 16 + (l - hex)) : -1;
}

/* Byte i is lx_tok_byte_table[i]: a constant table, safe from any thread. */
#define B4(i) (char)(i), (char)((i) + 1), (char)((i) + 2), (char)((i) + 3)
#define B16(i) B4(i), B4((i) + 4), B4((i) + 8), B4((i) + 12)
#define B64(i) B16(i), B16((i) + 16), B16((i) + 32), B16((i) + 48)
const char lx_tok_byte_table[256] = {B64(0), B64(64), B64(128), B64(192)};

/* ---- GPT-2's pre-tokenizer and byte alphabet ---- */

const char lx_tok_gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* The 68 bytes that are not printable are 0..32, 127..160 and 173; the k-th
** of them is written U+0100 + k. */
static int byte_to_cp(int b)
{
    return b <= 32 ? 256 + b : b >= 127 && b <= 160 ? 256 + 33 + (b - 127) : b == 173 ? 256 + 67 : b;
}

/* The byte code point cp stands for, or -1. */
static int cp_to_byte(int cp)
{
    if (cp < 256)
        return byte_to_cp(cp) == cp ? cp : -1;
    int k = cp - 256;
    return k < 33 ? k : k < 67 ? 127 + (k - 33) : k == 67 ? 173 : -1;
}

void lx_tok_to_alphabet(const char *s, size_t n, struct lx_buf *out)
{
    for (size_t i = 0; i < n; i++) {
        int cp = byte_to_cp((unsigned char)s[i]);
        char u[2] = {(char)(0xc0 | cp >> 6), (char)(0x80 | (cp & 0x3f))};
        if (cp < 0x80)
            u[0] = (char)cp;
        lx_buf_putn(out, u, cp < 0x80 ? 1 : 2);
    }
}

long lx_tok_from_alphabet(const char *s, size_t n, char *out)
{
    long k = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char *u = (const unsigned char *)s + i;
        int cp = -1, len = 1;
        if (u[0] < 0x80)
            cp = u[0];
        else if ((u[0] & 0xe0) == 0xc0 && i + 1 < n && (u[1] & 0xc0) == 0x80)
            cp = (u[0] & 0x1f) << 6 | (u[1] & 0x3f), len = 2;
        int b = cp >= 0 ? cp_to_byte(cp) : -1;
        if (b < 0)
            return -1;
        out[k++] = (char)b;
        i += (size_t)len;
    }
    return k;
}
