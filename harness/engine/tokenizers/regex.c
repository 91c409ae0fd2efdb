/*
** harness/engine/tokenizers/regex.c - the only file that includes <pcre2.h> (regex.h).
*/
#define PCRE2_CODE_UNIT_WIDTH 8
#include "harness/engine/tokenizers/regex.h"

#include <pcre2.h>
#include <stdlib.h>

struct lx_regex {
    pcre2_code *code;   /* compiled, with JIT code when the platform has it */
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
    *out = lx_xmalloc(sizeof **out);
    (*out)->code = re;
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
    free(re);
}

void lx_regex_each(const struct lx_regex *re, const char *s, size_t n,
                   void (*each)(size_t start, size_t end, void *ctx), void *ctx)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re->code, NULL);
    LX_ASSERT(md);
    size_t at = 0;
    while (at < n) {
        /* The caller checked the UTF-8 once; do not check it again per match. */
        int rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, at, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc < 0)
            break;   /* PCRE2_ERROR_NOMATCH, or a resource limit: the rest is one gap */
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[1] > ov[0]) {
            each(ov[0], ov[1], ctx);
            at = ov[1];
        } else {
            at = ov[0] + 1;
            while (at < n && ((unsigned char)s[at] & 0xc0) == 0x80)
                at++;
        }
    }
    pcre2_match_data_free(md);
}
