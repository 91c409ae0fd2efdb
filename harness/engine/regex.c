/*
** harness/engine/regex.c - the only file that includes <pcre2.h> (regex.h).
*/
#define PCRE2_CODE_UNIT_WIDTH 8
#include "harness/engine/regex.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>

struct lx_regex {
    pcre2_code *code;           /* compiled, with JIT code when the platform has it */
    pcre2_match_context *mc;    /* the limits of regex.h */
    char shown[204];            /* the pattern for messages, cut at 200 bytes */
};

static int compile(struct lx_regex **out, const char *pattern, size_t n, uint32_t options, struct lx_error *err)
{
    *out = NULL;
    int code;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, n, options | PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return lx_err(err, LX_EINVAL, "regular expression /%.*s/: at offset %zu: %s", (int)(n > 200 ? 200 : n),
                      pattern, (size_t)at, (const char *)msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);   /* interpreted when JIT is unavailable */
    struct lx_regex *r = lx_xmalloc(sizeof *r);
    r->code = re;
    r->mc = pcre2_match_context_create(NULL);
    LX_ASSERT(r->mc);
    pcre2_set_match_limit(r->mc, LX_REGEX_MATCH_LIMIT);
    pcre2_set_heap_limit(r->mc, LX_REGEX_HEAP_KIB);
    snprintf(r->shown, sizeof r->shown, "%.*s%s", (int)(n > 200 ? 200 : n), pattern, n > 200 ? "..." : "");
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
