/*
** tests/fuzz/promise.h - PROMISE, the fuzz entry points' assertion
** (entry.c, entry_writers.c).
*/
#ifndef LX_FUZZ_PROMISE_H
#define LX_FUZZ_PROMISE_H

#include <stdio.h>

#include "harness/core/lx.h"

/* A promise that must hold: on failure, say which and on what, then abort as
** LX_ASSERT does (libFuzzer reports it as a crash). */
#define PROMISE(cond, ...)                                                      \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "fuzz: " __VA_ARGS__);                              \
            fputc('\n', stderr);                                                \
            lx_assert_fail(#cond, __FILE__, __LINE__);                          \
        }                                                                       \
    } while (0)

#endif
