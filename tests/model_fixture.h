/*
** tests/model_fixture.h - what the model tests share: a method stack compiled
** into a spec, an architecture made and resolved the way a sweep makes it
** (with grouped-query heads, biases, a tied head), and the fixed windows the
** PyTorch reference also writes (tests/ref/model_ref.py).
*/
#ifndef LX_TEST_MODEL_FIXTURE_H
#define LX_TEST_MODEL_FIXTURE_H

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "harness/core/config.h"
#include "harness/engine/model/model.h"
#include "harness/core/rng.h"
#include "harness/sweep/grid.h"
#include "harness/sweep/plan.h"

/* x (n) drawn from N(0, scale²), stream `stream` of a fixed key. */
static inline void fill(float *x, long n, uint32_t stream, float scale)
{
    struct lx_rng r;
    lx_rng_init(&r, 9090, stream, LX_RNG_INIT);
    for (long i = 0; i < n; i++)
        x[i] = scale * (float)lx_rng_normal(&r);
}

/* max |x - y| over n values. */
static inline double max_diff(const float *x, const float *y, long n)
{
    double d = 0;
    for (long i = 0; i < n; i++)
        d = fmax(d, fabs((double)x[i] - y[i]));
    return d;
}

/* A method stack compiled into a spec; the spec points into the stack. */
struct compiled {
    struct lx_doc doc;      /* the parsed YAML text */
    struct lx_stack st;     /* the parsed stack */
    struct lx_spec spec;    /* what the kernels read */
};

static inline void compile(struct compiled *c, const char *yaml, int d_head, long train_len, int heads, long length)
{
    struct lx_error err = {""};
    struct lx_facts f = {.d_head = d_head, .train_len = train_len, .n_heads = heads, .length = length,
                         .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
    memset(c, 0, sizeof *c);
    cr_assert_eq(lx_doc_load_text(&c->doc, yaml, "stack", &err), LX_OK, "%s: %s", yaml, err.msg);
    cr_assert_eq(lx_stack_parse(&c->st, c->doc.root, &err), LX_OK, "%s: %s", yaml, err.msg);
    cr_assert_eq(lx_stack_compile(&c->st, &f, &c->spec, &err), LX_OK, "%s: %s", yaml, err.msg);
}

static inline void compiled_release(struct compiled *c)
{
    lx_stack_release(&c->st);
    lx_doc_release(&c->doc);
}

/* Grouped-query attention (kv key/value heads; 0 = heads), q/k/v biases and
** a tied head on top of an arch, resolved the way a sweep resolves it. */
static inline struct lx_arch with_gqa(struct lx_arch a, long kv, int bias, int tie)
{
    struct lx_error err = {""};
    a.kv_heads = kv;
    a.qkv_bias = bias;
    a.tie_head = tie;
    lx_params_finish(&lx_arch_schema, &a);
    cr_assert_eq(lx_arch_resolve(&a, &err), LX_OK, "%s", err.msg);
    return a;
}

static inline struct lx_arch arch_of(int mode, int mlp, long layers, long C, long H, long D, long F, long V, double std)
{
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    a.mode = mode;
    a.mlp = mlp;
    a.layers = layers;
    a.d_model = C;
    a.heads = H;
    a.d_head = D;
    a.d_mlp = F;
    a.vocab = V;
    a.init_std = std;
    lx_params_finish(&lx_arch_schema, &a);
    return a;
}

/* The fixed windows, also written by tests/ref/model_ref.py: byte stream
** s_b[i] = (37·(T·b + i) + 11) mod n_bytes. Causal: input [BOS, s_0..s_{T-2}],
** targets s_0..s_{T-1}. MLM: input s with MASK where (7i + 3b) mod 5 = 1,
** targets only there (−1 elsewhere). */
static inline void make_windows(int *tok, int *tgt, int B, int T, int causal, int n_bytes, int bos, int mask)
{
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++) {
            int s = (37 * (T * b + i) + 11) % n_bytes, prev = (37 * (T * b + i - 1) + 11) % n_bytes;
            long k = (long)b * T + i;
            if (causal) {
                tok[k] = i == 0 ? bos : prev;
                tgt[k] = s;
            } else {
                int masked = (7 * i + 3 * b) % 5 == 1;
                tok[k] = masked ? mask : s;
                tgt[k] = masked ? s : -1;
            }
        }
}

#endif
