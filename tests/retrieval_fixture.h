/*
** tests/retrieval_fixture.h - the set-up every retrieval task's test shares
** (tests/test_passkey.c, test_line.c, test_topic.c, test_mdqa.c,
** test_needle.c): the task from the registry, its params with YAML overrides,
** an instance that must generate, and an instance's text.
**
** Define FIXTURE_TASK (the task's name, a string literal) before including;
** define FIXTURE_ONE_DEPTH too for a task without depths (topic), whose gen()
** then takes no depth (instances are generated at depth 0.5, which it ignores).
*/
#ifndef LX_RETRIEVAL_FIXTURE_H
#define LX_RETRIEVAL_FIXTURE_H

#include <criterion/criterion.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/config.h"
#include "harness/core/params.h"
#include "harness/sweep/registry.h"
#include "tasks/retrieval.h"
#include "tasks/task.h"

#ifndef FIXTURE_TASK
#error "define FIXTURE_TASK before including tests/retrieval_fixture.h"
#endif

#define LIT(s) s, (long)(sizeof s - 1)     /* a string literal and its length */

static inline const struct lx_task *task(void)
{
    const struct lx_task *t = lx_task_find(FIXTURE_TASK);
    cr_assert_not_null(t, FIXTURE_TASK " is not registered");
    return t;
}

/* The task's params with YAML overrides ("" = defaults); malloc'd. */
static inline void *params(const char *yaml)
{
    const struct lx_task *t = task();
    void *p = calloc(1, t->schema.size);
    lx_params_defaults(&t->schema, p);
    if (yaml[0]) {
        struct lx_error err = {{0}};
        struct lx_doc doc;
        cr_assert_eq(lx_doc_load_text(&doc, yaml, "p.yaml", &err), LX_OK, "%s", err.msg);
        cr_assert_eq(lx_params_apply(&t->schema, p, doc.root, "task '" FIXTURE_TASK "'", &err), LX_OK, "%s",
                     err.msg);
        lx_doc_release(&doc);
    }
    lx_params_finish(&t->schema, p);
    return p;
}

/* An instance that must generate, of exactly `length` tokens. */
static inline void gen_at(const void *p, uint64_t key, long length, long sample, double depth,
                          struct lx_instance *in)
{
    struct lx_error err = {{0}};
    int rc = task()->generate(p, key, length, sample, depth, in, &err);
    cr_assert_eq(rc, LX_OK, "length %ld sample %ld depth %g: %s", length, sample, depth, err.msg);
    cr_assert_eq(in->n, length);
}

#ifdef FIXTURE_ONE_DEPTH
static inline void gen(const void *p, uint64_t key, long length, long sample, struct lx_instance *in)
{
    gen_at(p, key, length, sample, 0.5, in);
}
#else
static inline void gen(const void *p, uint64_t key, long length, long sample, double depth, struct lx_instance *in)
{
    gen_at(p, key, length, sample, depth, in);
}
#endif

/* The instance's text after BOS (every other token is a byte); malloc'd. */
static inline char *text(const struct lx_instance *in)
{
    cr_assert_eq(in->tok[0], LX_TOK_BOS);
    char *s = malloc((size_t)in->n);
    for (long i = 1; i < in->n; i++) {
        cr_assert(in->tok[i] >= 1 && in->tok[i] < 256, "token %ld is %d", i, in->tok[i]);
        s[i - 1] = (char)in->tok[i];
    }
    s[in->n - 1] = '\0';
    return s;
}

/* The first frac of a corpus split's bytes, documents end to end, then the
** same again (2n bytes, so a window may wrap); newlines as spaces when
** `flatten`. *n = the bytes in use; malloc'd. */
static inline char *prose_text(const char *split, double frac, long *n, int flatten)
{
    const struct lx_corpus *c;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_corpus_get(&c, split, &err), LX_OK, "%s", err.msg);
    *n = (long)(frac * (double)c->n_bytes);
    char *s = malloc((size_t)(2 * *n));
    long k = 0;
    for (int d = 0; d < c->n_docs && k < *n; d++)
        for (long i = 0; i < c->docs[d].n && k < *n; i++)
            s[k++] = flatten && c->docs[d].bytes[i] == '\n' ? ' ' : (char)c->docs[d].bytes[i];
    memcpy(s + *n, s, (size_t)*n);
    return s;
}

#endif
