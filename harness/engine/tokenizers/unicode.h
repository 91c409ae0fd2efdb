/*
** harness/engine/tokenizers/unicode.h - Unicode normalization forms for tokenizer.json
** normalizers (NFC for Qwen2/3; NFD, NFKC, NFKD for others), and the facts
** about one code point that the answer scorers need to read text as Python's
** str methods and regular expressions read it (tasks/scorers.c).
**
** harness/engine/tokenizers/unicode.c is the only file that includes <utf8proc.h>
** (Debian's libutf8proc, the Julia project's library: Unicode 15 tables,
** maintained with every Unicode release).
*/
#ifndef LX_UNICODE_H
#define LX_UNICODE_H

#include <stddef.h>
#include <stdint.h>

#include "harness/core/lx.h"

enum lx_unicode_form { LX_NFC, LX_NFD, LX_NFKC, LX_NFKD };

/* Append the normalization form of valid UTF-8 s[0, n) (NUL allowed) to out. */
void lx_unicode_normalize(enum lx_unicode_form form, const char *s, size_t n, struct lx_buf *out);

/* The code point at s[0, n) (n >= 1) into *cp; returns the bytes it takes.
** A byte that starts no valid UTF-8 sequence is one code point of its own,
** *cp = -1 - byte (never a character of any class below). */
long lx_unicode_next(const char *s, size_t n, int32_t *cp);

/* Classes of a code point (bits), as Python 3 defines them. */
enum {
    LX_UC_SPACE = 1,        /* str.isspace(): Zs, or bidirectional class WS, B or S */
    LX_UC_DIGIT = 2,        /* general category Nd: `\d` of Python's re on str */
    LX_UC_WORD = 4,         /* `\w` of the regex module: letters, marks, Nd, Nl, Pc, ZWNJ, ZWJ */
    LX_UC_CASED = 8,        /* Lu, Ll, Lt (Unicode's Cased, less Other_Lowercase/Uppercase) */
    LX_UC_CASE_IGNORABLE = 16,  /* Mn, Me, Cf, Lm, Sk, or word-break MidLetter, MidNumLet, Single_Quote */
};
unsigned lx_unicode_class(int32_t cp);
/* The value 0-9 of an Nd code point, -1 for any other. */
int lx_unicode_digit(int32_t cp);
/* The simple lowercase mapping of cp (cp itself when it has none; negative
** cp unchanged). */
int32_t lx_unicode_lower(int32_t cp);

#endif
