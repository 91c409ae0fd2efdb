/*
** harness/engine/tokenizers/kinds.c - the registry of tokenizer kinds: one
** entry per line of kinds.def (the only place their symbols are named).
*/
#include "harness/engine/tokenizers/kinds.h"

#define LX_TOK_KIND(name) extern const struct lx_tok_kind lx_tok_kind_##name;
#include "harness/engine/tokenizers/kinds.def"
#undef LX_TOK_KIND

const struct lx_tok_kind *const lx_tok_kinds[] = {
#define LX_TOK_KIND(name) &lx_tok_kind_##name,
#include "harness/engine/tokenizers/kinds.def"
#undef LX_TOK_KIND
    NULL,
};

const struct lx_tok_kind *lx_tok_kind_of(const unsigned char *bytes, long n)
{
    for (int i = 0; lx_tok_kinds[i]; i++)
        if (lx_tok_kinds[i]->accept(bytes, n))
            return lx_tok_kinds[i];
    return NULL;
}
