/*
** tests/stack.h - a method stack written as YAML, parsed and compiled for a
** set of facts: the fixture every method test starts from.
**
**   struct tstack s;
**   tstack_make(&s, "[rope, {yarn: {scale: 4}}]", &(struct lx_facts){.d_head = 64, ...});
**   ... s.spec ...
**   tstack_free(&s);
**
** tstack_try() returns the compile error instead of failing the test.
*/
#ifndef LX_TEST_STACK_H
#define LX_TEST_STACK_H

#include <criterion/criterion.h>

#include "harness/sweep/grid.h"
#include "harness/sweep/plan.h"

struct tstack {
    struct lx_doc doc;
    struct lx_stack st;
    struct lx_spec spec;
};

/* Facts for a model with every capability. */
static inline struct lx_facts tfacts(int d_head, long train_len, int n_heads, long length)
{
    struct lx_facts f = {.d_head = d_head, .train_len = train_len, .n_heads = n_heads, .length = length,
                         .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
    return f;
}

static inline int tstack_try(struct tstack *s, const char *yaml, const struct lx_facts *f, struct lx_error *err)
{
    memset(s, 0, sizeof *s);
    cr_assert_eq(lx_doc_load_text(&s->doc, yaml, "m.yaml", err), LX_OK, "%s", err->msg);
    int rc = lx_stack_parse(&s->st, s->doc.root, err);
    return rc < 0 ? rc : lx_stack_compile(&s->st, f, &s->spec, err);
}

static inline void tstack_make(struct tstack *s, const char *yaml, const struct lx_facts *f)
{
    struct lx_error err = {{0}};
    cr_assert_eq(tstack_try(s, yaml, f, &err), LX_OK, "%s: %s", yaml, err.msg);
}

static inline void tstack_free(struct tstack *s)
{
    lx_stack_release(&s->st);
    lx_doc_release(&s->doc);
}

#endif
