/*
** harness/engine/tokenizers/unicode.c - the only file that includes <utf8proc.h> (unicode.h).
*/
#include "harness/engine/tokenizers/unicode.h"

#include <stdlib.h>
#include <utf8proc.h>

#include "harness/engine/tokenizers/tok_common.h"

void lx_unicode_normalize(enum lx_unicode_form form, const char *s, size_t n, struct lx_buf *out)
{
    static const int options[] = {
        [LX_NFC] = UTF8PROC_STABLE | UTF8PROC_COMPOSE,
        [LX_NFD] = UTF8PROC_STABLE | UTF8PROC_DECOMPOSE,
        [LX_NFKC] = UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT,
        [LX_NFKD] = UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT,
    };
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
                                      (utf8proc_option_t)options[form]);
    /* The tokenizer checked the UTF-8 first; only memory can fail here. */
    LX_ASSERT(m >= 0);
    lx_buf_putn(out, (const char *)dst, (size_t)m);
    free(dst);
}

long lx_unicode_next(const char *s, size_t n, int32_t *cp)
{
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s, n > 4 ? 4 : (utf8proc_ssize_t)n, &c);
    if (k <= 0) {
        *cp = -1 - (int32_t)(unsigned char)s[0];
        return 1;
    }
    *cp = c;
    return (long)k;
}

/* Word-break MidLetter, MidNumLet and Single_Quote: case-ignorable whatever their category. */
static int mid_letter(int32_t c)
{
    static const int32_t mid[] = {0x27, 0x2E, 0x3A, 0xB7, 0x387, 0x55F, 0x5F4, 0x2018, 0x2019, 0x2024, 0x2027,
                                  0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};
    for (size_t i = 0; i < sizeof mid / sizeof *mid; i++)
        if (mid[i] == c)
            return 1;
    return 0;
}

unsigned lx_unicode_class(int32_t cp)
{
    if (cp < 0 || !utf8proc_codepoint_valid(cp))
        return 0;
    const utf8proc_property_t *p = utf8proc_get_property(cp);
    utf8proc_category_t g = (utf8proc_category_t)p->category;
    unsigned k = 0;
    if (g == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_WS || p->bidi_class == UTF8PROC_BIDI_CLASS_B ||
        p->bidi_class == UTF8PROC_BIDI_CLASS_S)
        k |= LX_UC_SPACE;
    if (g == UTF8PROC_CATEGORY_ND)
        k |= LX_UC_DIGIT;
    if ((g >= UTF8PROC_CATEGORY_LU && g <= UTF8PROC_CATEGORY_ME) || g == UTF8PROC_CATEGORY_ND ||
        g == UTF8PROC_CATEGORY_NL || g == UTF8PROC_CATEGORY_PC || cp == 0x200C || cp == 0x200D)
        k |= LX_UC_WORD;
    if (g == UTF8PROC_CATEGORY_LU || g == UTF8PROC_CATEGORY_LL || g == UTF8PROC_CATEGORY_LT)
        k |= LX_UC_CASED;
    if (g == UTF8PROC_CATEGORY_MN || g == UTF8PROC_CATEGORY_ME || g == UTF8PROC_CATEGORY_CF ||
        g == UTF8PROC_CATEGORY_LM || g == UTF8PROC_CATEGORY_SK || mid_letter(cp))
        k |= LX_UC_CASE_IGNORABLE;
    return k;
}

/* Nd digits come in runs of whole sets, each set 0 … 9 in order: the value is
** the distance from the run's start, mod 10. */
int lx_unicode_digit(int32_t cp)
{
    if (!(lx_unicode_class(cp) & LX_UC_DIGIT))
        return -1;
    int32_t start = cp;
    while (start > 0 && (lx_unicode_class(start - 1) & LX_UC_DIGIT))
        start--;
    return (int)((cp - start) % 10);
}

int32_t lx_unicode_lower(int32_t cp)
{
    return cp < 0 || !utf8proc_codepoint_valid(cp) ? cp : utf8proc_tolower(cp);
}
