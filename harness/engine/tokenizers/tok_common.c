/*
** harness/engine/tokenizers/tok_common.c - the helpers every tokenizer kind
** and the dispatcher share (tok_common.h): the id list, byte-fallback pieces,
** UTF-8 lengths, the byte table.
*/
#include "harness/engine/tokenizers/tok_common.h"

#include <stdlib.h>
#include <string.h>

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
