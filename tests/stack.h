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

#include <math.h>
#include <string.h>

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

/* A learned relative bias for stacks with t5bias or kerple compiled without
** a model: head h, value b holds 0.6 + 0.3·sin(1.3·h + 0.71·b + 0.2) − 0.05·b,
** every entry distinct enough that a wrong bucket or head changes a logit
** (KERPLE floors its p and a at 0.01). */
enum { TSTACK_REL_HEADS = 16, TSTACK_REL_BUCKETS = 64 };

static inline const float *tstack_rel_bias(int buckets)
{
    static float table[TSTACK_REL_HEADS * TSTACK_REL_BUCKETS];
    cr_assert_leq(buckets, TSTACK_REL_BUCKETS, "the test table has %d buckets", TSTACK_REL_BUCKETS);
    for (int h = 0; h < TSTACK_REL_HEADS; h++)
        for (int b = 0; b < buckets; b++)
            table[h * buckets + b] = (float)(0.6 + 0.3 * sin(1.3 * h + 0.71 * b + 0.2) - 0.05 * b);
    return table;
}

/* Learned sink logits w_h of a test layer (zerosink learned: true), apart per head, from −1.2 to 1.6. */
static inline const float *tstack_sinks(void)
{
    static float w[TSTACK_REL_HEADS];
    for (int h = 0; h < TSTACK_REL_HEADS; h++)
        w[h] = (float)(0.2 + 1.4 * sin(1.9 * h + 0.4));
    return w;
}

static inline int tstack_try(struct tstack *s, const char *yaml, const struct lx_facts *f, struct lx_error *err)
{
    memset(s, 0, sizeof *s);
    cr_assert_eq(lx_doc_load_text(&s->doc, yaml, "m.yaml", err), LX_OK, "%s", err->msg);
    int rc = lx_stack_parse(&s->st, s->doc.root, err);
    rc = rc < 0 ? rc : lx_stack_compile(&s->st, f, &s->spec, err);
    if (rc == LX_OK && s->spec.rel.method && !f->rel_bias) {
        cr_assert_leq(f->n_heads, TSTACK_REL_HEADS);
        s->spec.facts.rel_bias = tstack_rel_bias(s->spec.rel.values);
    }
    if (rc == LX_OK && s->spec.zsink.learn) {   /* as the engine sets a layer's (lx_model_layer_spec) */
        cr_assert_leq(f->n_heads, TSTACK_REL_HEADS);
        s->spec.zsink.learned = tstack_sinks();
    }
    return rc;
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

/* The stack yaml refused for facts f, with needle in the message. */
static inline void tstack_refused(const char *yaml, struct lx_facts f, const char *needle)
{
    struct tstack st;
    struct lx_error err = {""};
    cr_expect_lt(tstack_try(&st, yaml, &f, &err), 0, "%s compiled", yaml);
    cr_expect_not_null(strstr(err.msg, needle), "%s: '%s' lacks '%s'", yaml, err.msg, needle);
    tstack_free(&st);
}

#endif
