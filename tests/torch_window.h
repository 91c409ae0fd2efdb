/*
** tests/torch_window.h - one window of a ref.json written by a torch reference script
** (tests/ref/phi3_ref.py, gemma_ref.py: {"windows": [{"ids", "nll", "last_logits"}]}) through a
** model and its stack, against the script's float64 logits. Header-only.
*/
#ifndef LX_TORCH_WINDOW_H
#define LX_TORCH_WINDOW_H

#include <criterion/criterion.h>
#include <math.h>

#include "harness/core/json.h"
#include "harness/engine/model/model.h"
#include "tests/stack.h"

/* The ids of window w of doc into tok (at most 64) and their next-token targets into tgt (the last
** −1); returns the window's length. */
static inline int torch_window_ids(const struct lx_json *doc, int w, int tok[64], int tgt[64])
{
    const struct lx_jv *ids = lx_json_member(lx_json_at(lx_json_member(lx_json_root(doc), "windows"), w), "ids");
    int T = (int)lx_json_len(ids);
    struct lx_error err = {{0}};
    cr_assert(T >= 1 && T <= 64);
    for (int t = 0; t < T; t++) {
        int64_t v;
        cr_assert_eq(lx_json_int(doc, lx_json_at(ids, t), &v, &err), LX_OK);
        tok[t] = (int)v;
    }
    for (int t = 0; t < T; t++)
        tgt[t] = t + 1 < T ? tok[t + 1] : -1;
    return T;
}

/* Window w of doc through m with stack (facts of training length 128 and
** evaluation length `length`): the largest |ΔNLL| over its tokens into
** *dnll, the largest |Δlogit| over its last row into *dlogit. */
static inline void torch_window(const struct lx_model *m, const char *stack, const struct lx_json *doc, int w,
                                long length, double *dnll, double *dlogit)
{
    const struct lx_jv *win = lx_json_at(lx_json_member(lx_json_root(doc), "windows"), w);
    const struct lx_jv *nll = lx_json_member(win, "nll"), *last = lx_json_member(win, "last_logits");
    int tok[64], tgt[64], T = torch_window_ids(doc, w, tok, tgt), Vp = (int)m->arch.vocab;
    struct lx_error err = {{0}};
    cr_assert(lx_json_len(last) == Vp);
    struct tstack s;
    struct lx_facts f = tfacts((int)m->arch.d_head, 128, (int)m->arch.heads, length);
    tstack_make(&s, stack, &f);
    struct lx_acts a;
    cr_assert_eq(lx_acts_alloc(&a, &m->arch, 1, T, 0, &err), LX_OK, "%s", err.msg);
    lx_model_forward(m, &s.spec, tok, tgt, &a);
    *dnll = *dlogit = 0;
    for (int t = 0; t < T - 1; t++) {
        double r;
        cr_assert_eq(lx_json_num(doc, lx_json_at(nll, t), &r, &err), LX_OK);
        *dnll = fmax(*dnll, fabs(a.loss[t] - r));
    }
    for (int v = 0; v < Vp; v++) {
        double r;
        cr_assert_eq(lx_json_num(doc, lx_json_at(last, v), &r, &err), LX_OK);
        *dlogit = fmax(*dlogit, fabs(a.logits[(long)(T - 1) * Vp + v] - r));
    }
    lx_acts_release(&a);
    tstack_free(&s);
}

#endif
