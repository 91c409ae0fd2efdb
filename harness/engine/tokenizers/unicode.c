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
