/*
** harness/engine/tokenizers/regex.h - Unicode regular expressions for tokenizer.json
** pre-tokenizers (the `Split` pattern of each model family, GPT-2's ByteLevel
** pattern), so lenx runs the file's own pattern instead of hand-coding one
** per family (docs/tokenizers.md#tokenizerjson).
**
** harness/engine/tokenizers/regex.c is the only file that includes <pcre2.h> (Debian's
** libpcre2: Perl-compatible patterns with \p{L}, \p{N}, look-ahead and
** case-insensitive groups, compiled to machine code by its JIT). Patterns are
** UTF-8 and matched with Unicode classes (\s, \d, \w by Unicode properties).
*/
#ifndef LX_REGEX_H
#define LX_REGEX_H

#include <stddef.h>

#include "harness/core/lx.h"

struct lx_regex;

/* Compile pattern[0, n); errors name the offset and pcre2's message. */
int lx_regex_compile(struct lx_regex **out, const char *pattern, size_t n, struct lx_error *err);

/* A literal string to match as is (a `Split` pattern given as {"String": ...}). */
int lx_regex_literal(struct lx_regex **out, const char *s, size_t n, struct lx_error *err);

void lx_regex_free(struct lx_regex *re);    /* accepts NULL */

/* Calls each(start, end, ctx) for consecutive non-empty matches in s[0, n) from
** left to right (an empty match advances one character). s must be valid UTF-8. */
void lx_regex_each(const struct lx_regex *re, const char *s, size_t n,
                   void (*each)(size_t start, size_t end, void *ctx), void *ctx);

#endif
