/*
** harness/commands/tokenize.h - `lenx tokenize`: a text's token ids under a tokenizer
** file, as a JSON list, or (--decode) a JSON id list's text
** (docs/tokenizers.md#lenx-tokenize).
*/
#ifndef LX_TOKENIZE_H
#define LX_TOKENIZE_H

#include "harness/core/lx.h"

struct lx_tokenize_opts {
    const char *tokenizer;  /* tokenizer.bin, tokenizer.json or a directory holding one */
    const char *text;       /* input file; NULL = stdin */
    int decode;             /* input is a JSON id list; print its text */
    int no_specials;        /* do not add the BOS/EOS the format's post-processing adds */
    int info;               /* print the tokenizer's kind, sizes, BOS/EOS and hash instead */
    int stats;              /* time the encode; one line on stderr */
};

/* The output (ids as JSON, or text) into out. */
int lx_tokenize(const struct lx_tokenize_opts *o, struct lx_buf *out, struct lx_error *err);

#endif
