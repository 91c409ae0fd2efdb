/*
** tests/tok_open.h - a tokenizer file for a test, or the test skipped saying
** what is missing and how to get it (files `make tokenizers` fetches, or
** reference files made by a script, may be absent on a machine).
**
**   tok_root()                    the checkout ($LENX_ROOT, else ".")
**   tok_path(buf, n, fmt, ...)    "<checkout>/<fmt ...>" in buf; returns buf
**   tok_open_or_skip(path, how)   lx_tokenizer_open(path), or cr_skip_test
*/
#ifndef LX_TEST_TOK_OPEN_H
#define LX_TEST_TOK_OPEN_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "harness/engine/tokenizers/tokenizer.h"

static inline const char *tok_root(void)
{
    const char *r = getenv("LENX_ROOT");
    return r ? r : ".";
}

__attribute__((format(printf, 3, 4))) static inline char *tok_path(char *buf, size_t n, const char *fmt, ...)
{
    int k = snprintf(buf, n, "%s/", tok_root());
    va_list ap;
    va_start(ap, fmt);
    if (k > 0 && (size_t)k < n)
        vsnprintf(buf + k, n - (size_t)k, fmt, ap);
    va_end(ap);
    return buf;
}

static inline struct lx_tokenizer *tok_open_or_skip(const char *path, const char *how)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        cr_skip_test("%s is absent (%s)", path, how);
    struct lx_tokenizer *t = NULL;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_tokenizer_open(&t, path, &err), LX_OK, "%s", err.msg);
    return t;
}

#endif
