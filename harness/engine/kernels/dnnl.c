/*
** harness/engine/kernels/dnnl.c - the one file that touches oneDNN
** (dnnl.h). A matmul primitive per shape, kept in a small cache of our own
** (creating one costs tens of microseconds even when oneDNN's own cache
** holds it; a forward asks for the same few shapes over and over).
*/
#include "harness/engine/kernels/dnnl.h"

#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/dl.h"
#include "harness/core/half.h"
#include "harness/core/lx.h"
#include "harness/engine/kernels/blas.h"

/* oneDNN, opened at its first use (start; harness/core/dl.h): its functions, as dnnl.h types them. */
#define LX_DL_PREFIX dnnl_
#define DNNL_FNS(X)                                                                                             \
    X(engine_create) X(stream_create) X(stream_wait) X(matmul_desc_init) X(memory_create) X(memory_destroy)   \
    X(memory_desc_get_size) X(memory_desc_init_by_strides) X(memory_desc_init_by_tag)                       \
    X(memory_desc_init_submemory) X(post_ops_create) X(post_ops_append_sum) X(post_ops_destroy)             \
    X(primitive_attr_create) X(primitive_attr_destroy) X(primitive_attr_set_post_ops) X(primitive_create)   \
    X(primitive_desc_create) X(primitive_desc_destroy) X(primitive_desc_query) X(primitive_desc_query_md)   \
    X(primitive_destroy) X(primitive_execute) X(reorder_primitive_desc_create) X(version)
static LX_DL_TABLE(DNNL_FNS) dn;
static struct lx_dl libdnnl = {.soname = "libdnnl.so.2", .package = "libdnnl2",
                               .use = "numerics bf16 (oneDNN's matrix products)"};
LX_DL_RESOLVE(resolve, dn, DNNL_FNS)

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static char last_error[LX_ERR_MAX];
static dnnl_status_t last_status;   /* of the last matmul descriptor asked for */
static int emulate;                 /* oneDNN has no bf16 matmul for this CPU: products emulated (emulated) */
static int force_emulate;           /* tests: lx_dnnl_emulate */

#define CACHE 64
struct entry {
    long M, N, K, lda, ldb, ldc;
    int ta, tb;
    float beta;
    int packed;             /* B is a weight in oneDNN's layout (lx_dnnl_pack_rows), not strided */
    dnnl_primitive_t prim;
    int refused;            /* packed: oneDNN offers only its reference loops for it */
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

static int describe(dnnl_primitive_desc_t *pd, const struct entry *e);

/* Does oneDNN have a bf16 matmul for this CPU? oneDNN 2.6 has none without AVX-512 (an AVX2-only
** CPU such as AMD's Zen 2: dnnl_unimplemented), where the products are emulated. */
static int bf16_unimplemented(void)
{
    dnnl_primitive_desc_t pd;
    struct entry e = {.M = 16, .N = 16, .K = 16, .lda = 16, .ldb = 16, .ldc = 16, .tb = 1};
    if (describe(&pd, &e) == 0) {
        dn.primitive_desc_destroy(pd);
        return 0;
    }
    last_error[0] = 0;
    return last_status == dnnl_unimplemented;
}

static int start(void)
{
    dnnl_status_t s;
    struct lx_error err;
    if (engine)
        return 0;
    if (lx_dl_load(&libdnnl, resolve, &err) < 0) {
        snprintf(last_error, sizeof last_error, "%s", err.msg);
        return -1;
    }
    if ((s = dn.engine_create(&engine, dnnl_cpu, 0)) != dnnl_success)
        return engine = NULL, fail("dnnl_engine_create", s);
    if ((s = dn.stream_create(&stream, engine, dnnl_stream_default_flags)) != dnnl_success)
        return fail("dnnl_stream_create", s);
    emulate = bf16_unimplemented();
    return 0;
}

/* The strides of a (rows, cols) operand held row-major with row stride ld,
** or transposed (held as (cols, rows)). */
static void strides(dnnl_dims_t s, long ld, int trans)
{
    s[0] = trans ? 1 : ld;
    s[1] = trans ? ld : 1;
}

/* ---- the layout of packed weights -------------------------------------------- */

/* Rows of activations the layout is asked for: wprod.c's products take x 512 rows at a time. */
#define PACK_M 512
#define LAYOUTS 64
struct layout {
    long N, K;
    dnnl_memory_desc_t md;      /* of B (K, N) = Wᵀ as the matmul wants it */
    long nblk;                  /* N's extent in its inner blocks: rows of W a chunk must be made of */
    int ok;
    int amx;                    /* the implementation multiplies on AMX's tiles */
};
static struct layout layouts[LAYOUTS];
static int n_layouts;
static int refuse_packed;
static int pack_policy = -1;    /* lx_dnnl_pack_policy: -1 the implementation decides */

static dnnl_status_t plain_desc(dnnl_memory_desc_t *d, long r, long c, long ld, int trans, dnnl_data_type_t t)
{
    dnnl_dims_t dims = {r, c}, st;
    strides(st, ld, trans);
    return dn.memory_desc_init_by_strides(d, 2, dims, t, st);
}

/* The weights' layout oneDNN picks for (N, K) with format_tag_any: usable
** when it is a blocked layout and the implementation is not the reference. */
static void ask_layout(struct layout *l)
{
    dnnl_memory_desc_t a, b, c;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_dims_t db = {l->K, l->N};
    const char *impl = "ref";
    l->ok = 0;
    if (plain_desc(&a, PACK_M, l->K, l->K, 0, dnnl_bf16) != dnnl_success ||
        dn.memory_desc_init_by_tag(&b, 2, db, dnnl_bf16, dnnl_format_tag_any) != dnnl_success ||
        plain_desc(&c, PACK_M, l->N, l->N, 0, dnnl_f32) != dnnl_success ||
        dn.matmul_desc_init(&md, &a, &b, NULL, &c) != dnnl_success ||
        dn.primitive_desc_create(&pd, &md, NULL, engine, NULL) != dnnl_success)
        return;
    l->md = *dn.primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dn.primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    l->nblk = 1;
    for (int i = 0; i < l->md.format_desc.blocking.inner_nblks; i++)
        if (l->md.format_desc.blocking.inner_idxs[i] == 1)
            l->nblk *= l->md.format_desc.blocking.inner_blks[i];
    l->ok = l->md.format_kind == dnnl_blocked && strncmp(impl, "ref", 3) != 0;
    l->amx = strstr(impl, "amx") != NULL;
    dn.primitive_desc_destroy(pd);
}

/* The layout of (N, K), asked once and kept (the last LAYOUTS shapes; a
** model has a handful). A copy: rows are read from inside parallel loops. */
static struct layout layout_of(long N, long K)
{
    struct layout got;
#pragma omp critical(lx_dnnl_layouts)
    {
        static unsigned next;
        int i = 0;
        while (i < n_layouts && (layouts[i].N != N || layouts[i].K != K))
            i++;
        if (i == n_layouts) {
            i = n_layouts < LAYOUTS ? n_layouts++ : (int)(next++ % LAYOUTS);
            layouts[i].N = N, layouts[i].K = K;
            if (start() < 0)
                layouts[i].ok = 0;
            else
                ask_layout(&layouts[i]);
        }
        got = layouts[i];
    }
    return got;
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
    dnnl_status_t s = dn.memory_desc_init_by_strides(&a, 2, da, dnnl_bf16, sa);
    if (s == dnnl_success && e->packed)
        b = layout_of(N, K).md;
    else if (s == dnnl_success)
        s = dn.memory_desc_init_by_strides(&b, 2, db, dnnl_bf16, sb);
    if (s == dnnl_success)
        s = dn.memory_desc_init_by_strides(&c, 2, dc, dnnl_f32, sc);
    if (s == dnnl_success)
        s = dn.matmul_desc_init(&md, &a, &b, NULL, &c);
    if (s == dnnl_success)
        s = dn.primitive_attr_create(&attr);
    if (s == dnnl_success && beta != 0.0f) {
        s = dn.post_ops_create(&po);
        if (s == dnnl_success)
            s = dn.post_ops_append_sum(po, beta);
        if (s == dnnl_success)
            s = dn.primitive_attr_set_post_ops(attr, po);
    }
    if (s == dnnl_success)
        s = dn.primitive_desc_create(pd, &md, attr, engine, NULL);
    if (po)
        dn.post_ops_destroy(po);
    if (attr)
        dn.primitive_attr_destroy(attr);
    last_status = s;
    return s == dnnl_success ? 0 : fail("creating a bf16 matmul", s);
}

/* The primitive of a shape, from the cache or made; NULL when oneDNN fails
** (lx_dnnl_error says why) or, for packed weights, when it would run its
** reference loops (*refused set; nothing in last_error). */
static dnnl_primitive_t primitive(const struct entry *want, int *refused)
{
    struct entry *old = &cache[0];
    *refused = 0;
    for (int i = 0; i < CACHE; i++) {
        struct entry *e = &cache[i];
        if ((e->prim || e->refused) && e->M == want->M && e->N == want->N && e->K == want->K &&
            e->lda == want->lda && e->ldb == want->ldb && e->ldc == want->ldc && e->ta == want->ta &&
            e->tb == want->tb && e->beta == want->beta && e->packed == want->packed) {
            e->used = ++clock_;
            *refused = e->refused;
            return e->prim;
        }
        if (e->used < old->used)
            old = e;
    }
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p = NULL;
    const char *impl = "";
    if (describe(&pd, want) < 0)
        return NULL;
    dn.primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    *refused = want->packed && (refuse_packed || strncmp(impl, "ref", 3) == 0);
    dnnl_status_t s = *refused ? dnnl_success : dn.primitive_create(&p, pd);
    dn.primitive_desc_destroy(pd);
    if (s != dnnl_success)
        return fail("dnnl_primitive_create", s), NULL;
    if (old->prim)
        dn.primitive_destroy(old->prim);
    *old = *want;
    old->prim = p, old->refused = *refused, old->used = ++clock_;
    return p;
}

/* A memory object over caller-owned data of 2-D dims and strides. */
static dnnl_status_t wrap(dnnl_memory_t *m, long r, long c, long ld, int trans, dnnl_data_type_t t, const void *p)
{
    dnnl_memory_desc_t d;
    dnnl_status_t s = plain_desc(&d, r, c, ld, trans, t);
    return s == dnnl_success ? dn.memory_create(m, &d, engine, (void *)p) : s;
}

/* dst (layout to) = src (layout from), one reorder primitive made for it. */
static int reorder(void *dst, const dnnl_memory_desc_t *to, const void *src, const dnnl_memory_desc_t *from)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t p = NULL;
    dnnl_memory_t mf = NULL, mt = NULL;
    dnnl_status_t s = dn.reorder_primitive_desc_create(&pd, from, engine, to, engine, NULL);
    if (s == dnnl_success)
        s = dn.primitive_create(&p, pd);
    if (s == dnnl_success)
        s = dn.memory_create(&mf, from, engine, (void *)src);
    if (s == dnnl_success)
        s = dn.memory_create(&mt, to, engine, dst);
    if (s == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, mf}, {DNNL_ARG_TO, mt}};
        s = dn.primitive_execute(p, stream, 2, args);
        if (s == dnnl_success)
            s = dn.stream_wait(stream);
    }
    if (mf)
        dn.memory_destroy(mf);
    if (mt)
        dn.memory_destroy(mt);
    if (p)
        dn.primitive_destroy(p);
    if (pd)
        dn.primitive_desc_destroy(pd);
    return s == dnnl_success ? 0 : fail("a reorder of packed weights", s);
}

void lx_dnnl_pack_policy(int policy)
{
    pack_policy = policy;
}

/* Whether weights are packed where a layout exists: LENX_PACK=0/1, else not on AMX, where oneDNN
** 2.6.3 multiplies its own layout slower than row-major weights it copies inside each call (0.6×
** at 512 rows of Llama-3.2-1B's shapes, docs/numerics.md#packed-weights). */
static int packing_pays(const struct layout *l)
{
    const char *env = getenv("LENX_PACK");
    if (pack_policy >= 0)
        return pack_policy;
    if (env && (!strcmp(env, "0") || !strcmp(env, "1")))
        return *env == '1';
    return !l->amx;
}

size_t lx_dnnl_packed_bytes(long N, long K)
{
    const struct layout L = layout_of(N, K), *l = &L;
    return l->ok && packing_pays(l) ? dn.memory_desc_get_size(&l->md) : 0;
}

long lx_dnnl_pack_block(long N, long K)
{
    const struct layout L = layout_of(N, K), *l = &L;
    return l->ok ? l->nblk : 0;
}

/* Rows n0 .. n0 + n of the packed W as a submemory of its layout (*sub) and
** as n plain rows of K (*plain); 0, or oneDNN's status. */
static dnnl_status_t row_block(dnnl_memory_desc_t *sub, dnnl_memory_desc_t *plain, const struct layout *l, long n0,
                               long n, long N, long K)
{
    dnnl_dims_t dims = {K, n}, offs = {0, n0};
    LX_ASSERT(l->ok && n0 % l->nblk == 0 && (n % l->nblk == 0 || n0 + n == N));
    dnnl_status_t s = plain_desc(plain, K, n, K, 1, dnnl_bf16);     /* n rows of K: (K, n) transposed */
    if (s == dnnl_success)
        s = n == N ? (*sub = l->md, dnnl_success) : dn.memory_desc_init_submemory(sub, &l->md, dims, offs);
    return s;
}

int lx_dnnl_pack_rows(void *Wp, const uint16_t *rows, long n0, long n, long N, long K)
{
    const struct layout L = layout_of(N, K);
    dnnl_memory_desc_t from, to;
    dnnl_status_t s = row_block(&to, &from, &L, n0, n, N, K);
    return s == dnnl_success ? reorder(Wp, &to, rows, &from) : fail("a sub-block of packed weights", s);
}

int lx_dnnl_unpack_rows(uint16_t *rows, const void *Wp, long n0, long n, long N, long K)
{
    const struct layout L = layout_of(N, K);
    dnnl_memory_desc_t from, to;
    dnnl_status_t s = row_block(&from, &to, &L, n0, n, N, K);
    return s == dnnl_success ? reorder(rows, &to, Wp, &from) : fail("reading rows of packed weights", s);
}

int lx_dnnl_pack_b(void *Bp, const uint16_t *B, long ldb, int trans_b, long N, long K)
{
    const struct layout L = layout_of(N, K), *l = &L;
    dnnl_memory_desc_t from;
    LX_ASSERT(l->ok);
    dnnl_status_t s = plain_desc(&from, K, N, ldb, trans_b, dnnl_bf16);
    return s == dnnl_success ? reorder(Bp, &l->md, B, &from) : fail("packing weights", s);
}

int lx_dnnl_unpack(uint16_t *W, const void *Wp, long N, long K)
{
    return lx_dnnl_unpack_rows(W, Wp, 0, N, N, K);
}

void lx_dnnl_packed_row(float *out, const void *Wp, long r, long N, long K)
{
    const struct layout L = layout_of(N, K), *l = &L;
    const dnnl_blocking_desc_t *b = &l->md.format_desc.blocking;
    const uint16_t *w = (const uint16_t *)Wp + l->md.offset0;
    long blk[2] = {1, 1};
    LX_ASSERT(l->ok && r >= 0 && r < N);
    for (int i = 0; i < b->inner_nblks; i++)
        blk[b->inner_idxs[i]] *= b->inner_blks[i];
    for (long k = 0; k < K; k++) {
        /* outer blocks by the strides; inside, the blocks nest in the order
        ** listed, the last innermost (BA16a64b2a: k = 2·i16 + i2, n = i64) */
        long rem[2] = {k % blk[0], r % blk[1]}, off = (k / blk[0]) * b->strides[0] + (r / blk[1]) * b->strides[1];
        long step = 1;
        for (int i = b->inner_nblks - 1; i >= 0; i--) {
            int d = b->inner_idxs[i];
            off += rem[d] % b->inner_blks[i] * step;
            rem[d] /= b->inner_blks[i];
            step *= b->inner_blks[i];
        }
        out[k] = lx_bf16_to_f32(w[off]);
    }
}

void lx_dnnl_refuse_packed(int on)
{
    refuse_packed = on;
    for (int i = 0; i < CACHE; i++)
        if (cache[i].packed) {
            if (cache[i].prim)
                dn.primitive_destroy(cache[i].prim);
            memset(&cache[i], 0, sizeof cache[i]);
        }
}

static int run(dnnl_primitive_t p, const struct entry *e, float *C, const uint16_t *A, const void *B);

/* rows × cols bf16 values held with row stride ld into *buf (grown to fit), widened exactly. */
static float *widen(float **buf, size_t *cap, const uint16_t *src, long rows, long cols, long ld)
{
    if ((size_t)(rows * cols) > *cap) {
        free(*buf);
        *cap = (size_t)(rows * cols);
        *buf = lx_xmalloc(*cap * sizeof **buf);
    }
    float *out = *buf;
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
    for (long r = 0; r < rows; r++)
        lx_half_to_f32(out + r * cols, src + r * ld, LX_DT_BF16, (size_t)cols);
    return out;
}

static float *emu_a, *emu_b;            /* the emulation's widened A and block of B */
static size_t emu_ca, emu_cb;           /* their capacities, in floats */

/* The product on a CPU where oneDNN has none: A widened to fp32 (exactly), then B a block of
** LX_DNNL_EMU_BLOCK columns at a time, each block one sgemm (blas.h) into its columns of C. Each
** product of two bf16 values is exact in fp32 and the sums are fp32, as oneDNN's: the same
** arithmetic, in OpenBLAS's order of the sums. A weight (B transposed, N × K) is never widened
** whole: a 128,256-row head would be 1 GB of fp32 for each call. */
static int emulated(float *C, long ldc, const uint16_t *A, long lda, int ta, const uint16_t *B, long ldb, int tb,
                    long M, long N, long K, float beta)
{
    const float *wa = widen(&emu_a, &emu_ca, A, ta ? K : M, ta ? M : K, lda);
    for (long n0 = 0; n0 < N; n0 += LX_DNNL_EMU_BLOCK) {
        long n = N - n0 < LX_DNNL_EMU_BLOCK ? N - n0 : LX_DNNL_EMU_BLOCK;
        const float *wb = tb ? widen(&emu_b, &emu_cb, B + n0 * ldb, n, K, ldb)     /* rows n0 .. of N × K */
                             : widen(&emu_b, &emu_cb, B + n0, K, n, ldb);           /* columns n0 .. of K × N */
        lx_gemm(C + n0, (int)ldc, wa, (int)(ta ? M : K), wb, (int)(tb ? K : n), (int)M, (int)n, (int)K, ta, tb, 1.0f,
                beta);
    }
    return 0;
}

size_t lx_dnnl_emulated_bytes(void)
{
    return (emu_ca + emu_cb) * sizeof(float);
}

int lx_dnnl_gemm_bf16(float *C, long ldc, const uint16_t *A, long lda, int trans_a, const uint16_t *B, long ldb,
                      int trans_b, long M, long N, long K, float beta)
{
    int refused;
    if (start() < 0)
        return -1;
    if (emulate || force_emulate)
        return emulated(C, ldc, A, lda, trans_a, B, ldb, trans_b, M, N, K, beta);
    struct entry want = {.M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = ldc, .ta = !!trans_a,
                         .tb = !!trans_b, .beta = beta};
    dnnl_primitive_t p = primitive(&want, &refused);
    return p ? run(p, &want, C, A, B) : -1;
}

/* The product through the weights unpacked for this call (oneDNN would run its reference loops on
** the packed layout at this shape): the row-major product's bits, C strided or not. */
static int unpacked(float *C, long ldc, const uint16_t *A, long lda, const void *Wp, long M, long N, long K,
                    float beta)
{
    static uint16_t *plain;
    static size_t cap;
    if ((size_t)(N * K) > cap) {
        free(plain);
        cap = (size_t)(N * K);
        plain = lx_xmalloc(cap * sizeof *plain);
    }
    return lx_dnnl_unpack(plain, Wp, N, K) < 0 ? -1 : lx_dnnl_gemm_bf16(C, ldc, A, lda, 0, plain, K, 1, M, N, K, beta);
}

int lx_dnnl_gemm_bf16_packed(float *C, long ldc, const uint16_t *A, long lda, const void *Wp, long M, long N, long K,
                             float beta)
{
    static float *dense;
    static size_t dcap;
    int refused;
    if (start() < 0)
        return -1;
    /* oneDNN 2.6 multiplies packed weights only into a dense C (a strided one gets its reference
    ** loops): asked of the dense shape, whatever ldc */
    struct entry want = {.M = M, .N = N, .K = K, .lda = lda, .ldc = N, .tb = 1, .beta = ldc != N ? 0.0f : beta,
                         .packed = 1};
    dnnl_primitive_t p = primitive(&want, &refused);
    if (!p)
        return refused ? unpacked(C, ldc, A, lda, Wp, M, N, K, beta) : -1;
    if (ldc == N)
        return run(p, &want, C, A, Wp);
    /* a dense product, then C's rows */
    if ((size_t)(M * N) > dcap) {
        free(dense);
        dcap = (size_t)(M * N);
        dense = lx_xmalloc(dcap * sizeof *dense);
    }
    if (run(p, &want, dense, A, Wp) < 0)
        return -1;
#pragma omp parallel for schedule(static) if (M * N > 65536)
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++)
            C[i * ldc + j] = beta == 0.0f ? dense[i * N + j] : dense[i * N + j] + beta * C[i * ldc + j];
    return 0;
}

/* Execute p, made for the shape e, on the operands. */
static int run(dnnl_primitive_t p, const struct entry *e, float *C, const uint16_t *A, const void *B)
{
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL;
    dnnl_status_t s = wrap(&ma, e->M, e->K, e->lda, e->ta, dnnl_bf16, A);
    struct layout l = e->packed ? layout_of(e->N, e->K) : (struct layout){0};
    if (s == dnnl_success && e->packed)
        s = dn.memory_create(&mb, &l.md, engine, (void *)B);
    else if (s == dnnl_success)
        s = wrap(&mb, e->K, e->N, e->ldb, e->tb, dnnl_bf16, B);
    if (s == dnnl_success)
        s = wrap(&mc, e->M, e->N, e->ldc, 0, dnnl_f32, C);
    if (s == dnnl_success) {
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
        s = dn.primitive_execute(p, stream, 3, args);
        if (s == dnnl_success)
            s = dn.stream_wait(stream);
    }
    if (ma)
        dn.memory_destroy(ma);
    if (mb)
        dn.memory_destroy(mb);
    if (mc)
        dn.memory_destroy(mc);
    return s == dnnl_success ? 0 : fail("a bf16 matmul", s);
}

void lx_dnnl_emulate(int on)
{
    force_emulate = on;
}

void lx_dnnl_describe(char *out, size_t n)
{
    const char *impl = "unavailable";
    dnnl_primitive_desc_t pd = NULL;
    struct entry e = {.M = 256, .N = 256, .K = 256, .lda = 256, .ldb = 256, .ldc = 256, .tb = 1};
    if (start() < 0 && !dn.version) {
        snprintf(out, n, "unavailable: %s", last_error);
        return;
    }
    const dnnl_version_t *v = dn.version();
    if (emulate)
        impl = "emulated:sgemm";     /* no bf16 matmul for this CPU in oneDNN: see emulated */
    else if (engine && describe(&pd, &e) == 0 &&
        dn.primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success)
        impl = "unknown";
    snprintf(out, n, "%s onednn=%d.%d.%d", impl, v->major, v->minor, v->patch);
    if (pd)
        dn.primitive_desc_destroy(pd);
}
