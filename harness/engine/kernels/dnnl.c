/*
** harness/engine/kernels/dnnl.c - the one file that touches oneDNN
** (dnnl.h). A matmul primitive per shape, kept in a small cache of our own
** (creating one costs tens of microseconds even when oneDNN's own cache
** holds it; a forward asks for the same few shapes over and over).
*/
#include "harness/engine/kernels/dnnl.h"

#include <dnnl.h>
#include <stdio.h>
#include <string.h>

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static char last_error[256];

#define CACHE 64
struct entry {
    long M, N, K, lda, ldb, ldc;
    int ta, tb;
    float beta;
    dnnl_primitive_t prim;
    unsigned long used;
};
static struct entry cache[CACHE];
static unsigned long clock_;

const char *lx_dnnl_error(void)
{
    return last_error;
}

static int fail(const char *what, dnnl_status_t s)
{
    snprintf(last_error, sizeof last_error, "oneDNN: %s failed (status %d)", what, (int)s);
    return -1;
}

static int start(void)
{
    dnnl_status_t s;
    if (engine)
        return 0;
    if ((s = dnnl_engine_create(&engine, dnnl_cpu, 0)) != dnnl_success)
        return engine = NULL, fail("dnnl_engine_create", s);
    if ((s = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags)) != dnnl_success)
        return fail("dnnl_stream_create", s);
    return 0;
}

/* The strides of a (rows, cols) operand held row-major with row stride ld,
** or transposed (held as (cols, rows)). */
static void strides(dnnl_dims_t s, long ld, int trans)
{
    s[0] = trans ? 1 : ld;
    s[1] = trans ? ld : 1;
}

/* The primitive descriptor of one shape (the caller destroys it). */
static int describe(dnnl_primitive_desc_t *pd, const struct entry *e)
{
    long M = e->M, N = e->N, K = e->K;
    float beta = e->beta;
    dnnl_memory_desc_t a, b, c;
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_dims_t da = {M, K}, sa, db = {K, N}, sb, dc = {M, N}, sc = {e->ldc, 1};
    strides(sa, e->lda, e->ta), strides(sb, e->ldb, e->tb);
    dnnl_status_t s = dnnl_memory_desc_init_by_strides(&a, 2, da, dnnl_bf16, sa);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_strides(&b, 2, db, dnnl_bf16, sb);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_strides(&c, 2, dc, dnnl_f32, sc);
    if (s == dnnl_success)
        s = dnnl_matmul_desc_init(&md, &a, &b, NULL, &c);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success && beta != 0.0f) {
        s = dnnl_post_ops_create(&po);
        if (s == dnnl_success)
            s = dnnl_post_ops_append_sum(po, beta);
        if (s == dnnl_success)
            s = dnnl_primitive_attr_set_post_ops(attr, po);
    }
    if (s == dnnl_success)
        s = dnnl_primitive_desc_create(pd, &md, attr, engine, NULL);
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return s == dnnl_success ? 0 : fail("creating a bf16 matmul", s);
}

static dnnl_primitive_t primitive(const struct entry *want)
{
    struct entry *old = &cache[0];
    for (int i = 0; i < CACHE; i++) {
        struct entry *e = &cache[i];
        if (e->prim && e->M == want->M && e->N == want->N && e->K == want->K && e->lda == want->lda &&
            e->ldb == want->ldb && e->ldc == want->ldc && e->ta == want->ta && e->tb == want->tb &&
            e->beta == want->beta) {
            e->used = ++clock_;
            return e->prim;
        }
        if (e->used < old->used)
            old = e;
    }
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p = NULL;
    if (describe(&pd, want) < 0)
        return NULL;
    dnnl_status_t s = dnnl_primitive_create(&p, pd);
    dnnl_primitive_desc_destroy(pd);
    if (s != dnnl_success)
        return fail("dnnl_primitive_create", s), NULL;
    if (old->prim)
        dnnl_primitive_destroy(old->prim);
    *old = *want;
    old->prim = p, old->used = ++clock_;
    return p;
}

/* A memory object over caller-owned data of 2-D dims and strides. */
static dnnl_status_t wrap(dnnl_memory_t *m, long r, long c, long ld, int trans, dnnl_data_type_t t, const void *p)
{
    dnnl_memory_desc_t d;
    dnnl_dims_t dims = {r, c}, st;
    strides(st, ld, trans);
    dnnl_status_t s = dnnl_memory_desc_init_by_strides(&d, 2, dims, t, st);
    return s == dnnl_success ? dnnl_memory_create(m, &d, engine, (void *)p) : s;
}

int lx_dnnl_gemm_bf16(float *C, long ldc, const uint16_t *A, long lda, int trans_a, const uint16_t *B, long ldb,
                      int trans_b, long M, long N, long K, float beta)
{
    if (start() < 0)
        return -1;
    struct entry want = {M, N, K, lda, ldb, ldc, !!trans_a, !!trans_b, beta, NULL, 0};
    dnnl_primitive_t p = primitive(&want);
    if (!p)
        return -1;
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL;
    dnnl_status_t s = wrap(&ma, M, K, lda, want.ta, dnnl_bf16, A);
    if (s == dnnl_success)
        s = wrap(&mb, K, N, ldb, want.tb, dnnl_bf16, B);
    if (s == dnnl_success)
        s = wrap(&mc, M, N, ldc, 0, dnnl_f32, C);
    if (s == dnnl_success) {
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
        s = dnnl_primitive_execute(p, stream, 3, args);
        if (s == dnnl_success)
            s = dnnl_stream_wait(stream);
    }
    if (ma)
        dnnl_memory_destroy(ma);
    if (mb)
        dnnl_memory_destroy(mb);
    if (mc)
        dnnl_memory_destroy(mc);
    return s == dnnl_success ? 0 : fail("a bf16 matmul", s);
}

void lx_dnnl_describe(char *out, size_t n)
{
    const dnnl_version_t *v = dnnl_version();
    const char *impl = "unavailable";
    dnnl_primitive_desc_t pd = NULL;
    struct entry e = {256, 256, 256, 256, 256, 256, 0, 1, 0.0f, NULL, 0};
    if (start() == 0 && describe(&pd, &e) == 0 &&
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success)
        impl = "unknown";
    snprintf(out, n, "%s onednn=%d.%d.%d", impl, v->major, v->minor, v->patch);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
}
