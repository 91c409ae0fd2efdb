/*
** harness/engine/tokenizers/unicode.h - Unicode normalization forms for tokenizer.json
** normalizers (NFC for Qwen2/3; NFD, NFKC, NFKD for others).
**
** harness/engine/tokenizers/unicode.c is the only file that includes <utf8proc.h>
** (Debian's libutf8proc, the Julia project's library: Unicode 15 tables,
** maintained with every Unicode release).
*/
#ifndef LX_UNICODE_H
#define LX_UNICODE_H

#include <stddef.h>

#include "harness/core/lx.h"

enum lx_unicode_form { LX_NFC, LX_NFD, LX_NFKC, LX_NFKD };

/* Append the normalization form of valid UTF-8 s[0, n) (NUL allowed) to out. */
void lx_unicode_normalize(enum lx_unicode_form form, const char *s, size_t n, struct lx_buf *out);

#endif
