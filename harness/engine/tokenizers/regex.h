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

/* pcre2's limits, set on every match so that they do not depend on how the
** library was built: match steps (backtracking) and heap for the
** interpreter's frames (KiB). A match that reaches one is an error, never "no
** match": the rest of the text as one piece would be a different, silent
** segmentation (docs/tokenizers.md#limits). */
#define LX_REGEX_MATCH_LIMIT 10000000
#define LX_REGEX_HEAP_KIB 20000

/* Calls each(start, end, ctx) for consecutive non-empty matches in s[0, n) from
** left to right (an empty match advances one character); a negative return
** from each stops and is returned. Any pcre2 failure other than "no match" (a
** limit above, s not UTF-8) is LX_EINVAL naming the pattern and the byte
** offset base + where the match began (base: s's place in the caller's text). */
int lx_regex_each(const struct lx_regex *re, const char *s, size_t n, size_t base,
                  int (*each)(size_t start, size_t end, void *ctx), void *ctx, struct lx_error *err);

#endif
