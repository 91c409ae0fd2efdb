/*
** harness/engine/tokenizers/regex.c - the only file that includes <pcre2.h> (regex.h).
*/
#define PCRE2_CODE_UNIT_WIDTH 8
#include "harness/engine/tokenizers/regex.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lx_regex {
    pcre2_code *code;           /* compiled, with JIT code when the platform has it */
    pcre2_match_context *mc;    /* the limits of regex.h */
    char shown[204];            /* the pattern for messages (show) */
};

/* pattern[0, n) for messages: its first 160 bytes, control bytes as \xHH
** (a pattern may hold a NUL or a newline), "..." when cut. */
static void show(char out[204], const char *pattern, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 5 < 200; i++) {
        unsigned char c = (unsigned char)pattern[i];
        if (c < 0x20 || c == 0x7f)
            k += (size_t)snprintf(out + k, 204 - k, "\\x%02x", c);
        else
            out[k++] = (char)c;
        if (i + 1 < n && k >= 160) {
            while (i + 1 < n && ((unsigned char)pattern[i + 1] & 0xc0) == 0x80 && k + 1 < 200)
                out[k++] = pattern[++i];   /* finish the character */
            if (i + 1 < n) {
                memcpy(out + k, "...", 3);
                k += 3;
            }
            break;
        }
    }
    out[k] = '\0';
}

static int compile(struct lx_regex **out, const char *pattern, size_t n, uint32_t options, struct lx_error *err)
{
    *out = NULL;
    int code;
    PCRE2_SIZE at;
    /* PCRE2_LITERAL refuses PCRE2_UCP (its classes mean nothing to a literal) */
    uint32_t unicode = options & PCRE2_LITERAL ? PCRE2_UTF : PCRE2_UTF | PCRE2_UCP;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, n, options | unicode, &code, &at, NULL);
    char shown[204];
    show(shown, pattern, n);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return lx_err(err, LX_EINVAL, "regular expression /%s/: at offset %zu: %s", shown, (size_t)at,
                      (const char *)msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);   /* interpreted when JIT is unavailable */
    struct lx_regex *r = lx_xmalloc(sizeof *r);
    r->code = re;
    r->mc = pcre2_match_context_create(NULL);
    LX_ASSERT(r->mc);
    pcre2_set_match_limit(r->mc, LX_REGEX_MATCH_LIMIT);
    pcre2_set_heap_limit(r->mc, LX_REGEX_HEAP_KIB);
    memcpy(r->shown, shown, sizeof shown);
    *out = r;
    return LX_OK;
}

int lx_regex_compile(struct lx_regex **out, const char *pattern, size_t n, struct lx_error *err)
{
    return compile(out, pattern, n, 0, err);
}

int lx_regex_literal(struct lx_regex **out, const char *s, size_t n, struct lx_error *err)
{
    return compile(out, s, n, PCRE2_LITERAL, err);
}

void lx_regex_free(struct lx_regex *re)
{
    if (!re)
        return;
    pcre2_code_free(re->code);
    pcre2_match_context_free(re->mc);
    free(re);
}

/* One match from at; the first call of a text checks its UTF-8 (once, all of
** it), later ones skip the check. JIT code runs on a small machine stack: a
** match that outgrows it is run again by the interpreter, on the heap, under
** the same limits, rather than refused. */
static int match_at(const struct lx_regex *re, const char *s, size_t n, size_t at, pcre2_match_data *md)
{
    uint32_t check = at == 0 ? 0 : PCRE2_NO_UTF_CHECK;
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, at, check, md, re->mc);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
        rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, at, check | PCRE2_NO_JIT, md, re->mc);
    return rc;
}

int lx_regex_each(const struct lx_regex *re, const char *s, size_t n, size_t base,
                  int (*each)(size_t start, size_t end, void *ctx), void *ctx, struct lx_error *err)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re->code, NULL);
    LX_ASSERT(md);
    size_t at = 0;
    int rc = LX_OK;
    while (at < n && rc == LX_OK) {
        int m = match_at(re, s, n, at, md);
        if (m == PCRE2_ERROR_NOMATCH)
            break;
        if (m < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(m, msg, sizeof msg);
            rc = lx_err(err, LX_EINVAL, "regular expression /%s/ failed matching from byte %zu: %s (pcre2 error %d)\n"
                        "  hint: lenx refuses a text it cannot cut as the pattern says rather than cut it another way "
                        "(docs/tokenizers.md#limits)", re->shown, base + at, (const char *)msg, m);
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[1] > ov[0]) {
            rc = each(ov[0], ov[1], ctx);
            at = ov[1];
        } else {
            at = ov[0] + 1;
            while (at < n && ((unsigned char)s[at] & 0xc0) == 0x80)
                at++;
        }
    }
    pcre2_match_data_free(md);
    return rc;
}
