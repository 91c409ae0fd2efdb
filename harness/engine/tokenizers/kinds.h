/*
** harness/engine/tokenizers/kinds.h - the table of tokenizer kinds built from
** kinds.def: what the dispatcher (tokenizer.c) iterates, so that it names no
** kind. Includes tok_common.h only.
*/
#ifndef LX_TOK_KINDS_H
#define LX_TOK_KINDS_H

#include "harness/engine/tokenizers/tok_common.h"

/* Every kind of kinds.def in its order, NULL-terminated. */
extern const struct lx_tok_kind *const lx_tok_kinds[];

/* The first kind whose accept() takes bytes[0, n), or NULL. */
const struct lx_tok_kind *lx_tok_kind_of(const unsigned char *bytes, long n);

#endif
