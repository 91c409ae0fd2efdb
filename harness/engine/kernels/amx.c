/*
** harness/engine/kernels/amx.c - the tiled attention's bf16 tile products
** (gemm.h, lx_gemm_rows_bf16) on AMX's tile registers, where the CPU has
** AMX-BF16 and the kernel lets the process use them.
**
** The operands are already in the layout the tiles read. A tile of A is 16
** rows of 32 bf16 values, 64 bytes each, at any row stride: row-major A
** (apair 2) is loaded where it lies. A tile of B is 16 pairs of 16 columns,
** pair p's row the 16 words (b[2p][c], b[2p+1][c]): exactly one column
** panel's 16 pairs as gemm.h lays them out, loaded at a row stride of 64
** bytes. TDPBF16PS adds to each of 16 × 16 fp32 sums the products of one
** row's pairs with one column's pairs, pair by pair in order, so a sum is a
** chain over the pairs k = (2p, 2p + 1) as on the AVX512-BF16 kernel.
**
** The kernel holds C's 32 × 32 block in four tiles (0-3: rows 0-15 and 16-31
** by panels q and q + 1), two tiles of A's rows (4, 5) and two of B's panels
** (6, 7), and runs K in slices of 32 values: 2 tile loads of A, 2 of B and 4
** products per slice. The sums start at 0 and are stored to a buffer; then
** alpha·sum + beta·C as the other kernels (this file is compiled with
** -ffp-contract=off, Makefile). What does not lie in tile layout is copied
** into zero-padded buffers once per call: a last row block of fewer than 32
** rows, A given in transposed pairs (apair ≠ 2), and K's last slice when K is
** not a multiple of 32 (A's values and B's pairs past K read as 0, the
** upper half of an odd K's last pair too). A zero pair adds +0 to a sum; it
** can change a sum of −0 into +0, nothing else.
**
** The same code runs on emulated tiles (struct emu) on any CPU: the tile
** loads, stores and products of the instructions' definitions, each step of
** a product one fused multiply-add rounded to nearest with bf16 subnormals
** read as 0 and subnormal sums flushed, odd value first (as lx_gemm_rows_bf16
** defines its chains). The tests check on every CPU that the emulation gives
** the plain kernel's bits, so every layout, padding and edge of the AMX path
** is checked everywhere; on a CPU with AMX they check the hardware against
** the plain kernel within the bound of two orders of K rounded sums
** (docs/numerics.md): the hardware's rounding inside a pair is its own.
**
** The instructions are written as inline assembly here, not through GCC's
** <amx*intrin.h>: its tile loads in GCC 12 do not tell the compiler that they
** read memory, so the copies into the buffers could be moved past them.
*/
#define _GNU_SOURCE
#include "harness/engine/kernels/gemm.h"

#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness/core/half.h"

#define TR 16           /* rows of a tile; also A's rows per tile and B's pairs per tile */
#define TV 32           /* bf16 values of a row of A's tile: one slice of K */
#define PANEL (TV * LX_GEMM_NR)     /* bf16 values of one slice of a column panel */

/* ---- the instructions ----------------------------------------------------- */

#define AMX_LOAD(t, p, s)                                                                                    \
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"((const void *)(p)), "r"((long)(s)) : "memory")
#define AMX_STORE(t, p, s)                                                                                   \
    __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"((void *)(p)), "r"((long)(s)) : "memory")
#define AMX_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::)
/* tmm c += tmm a · tmm b (AT&T order: b, a, c) */
#define AMX_DP(c, a, b) __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

/* Palette 1, tiles 0-7 each 16 rows of 64 bytes. */
struct tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};
static const struct tilecfg CFG __attribute__((aligned(64))) = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {TR, TR, TR, TR, TR, TR, TR, TR},
};

/* ---- emulated tiles ------------------------------------------------------- */

struct emu {
    uint8_t reg[8][TR][64];
};

static void emu_load(struct emu *e, int t, const void *p, long stride)
{
    for (int r = 0; r < TR; r++)
        memcpy(e->reg[t][r], (const char *)p + r * stride, 64);
}

static void emu_store(const struct emu *e, int t, void *p, long stride)
{
    for (int r = 0; r < TR; r++)
        memcpy((char *)p + r * stride, e->reg[t][r], 64);
}

/* TDPBF16PS: for each row m, pair k and column n, sum(m, n) += odd product,
** then += even product (lx_gemm_bf16_step). */
static void emu_dp(struct emu *e, int c, int a, int b)
{
    for (int m = 0; m < TR; m++)
        for (int k = 0; k < TR; k++) {
            uint32_t aw, bw;
            memcpy(&aw, e->reg[a][m] + 4 * k, 4);
            for (int n = 0; n < TR; n++) {
                float s;
                memcpy(&bw, e->reg[b][k] + 4 * n, 4);
                memcpy(&s, e->reg[c][m] + 4 * n, 4);
                s = lx_gemm_bf16_step(s, aw, bw);
                memcpy(e->reg[c][m] + 4 * n, &s, 4);
            }
        }
}

/* One op on a hardware tile or an emulated one (emu is a constant in each
** instance of block, so the other branch is gone). */
#define T_LOAD(t, p, s)                                                                                      \
    do {                                                                                                     \
        if (emu)                                                                                             \
            emu_load(e, t, p, s);                                                                            \
        else                                                                                                 \
            AMX_LOAD(t, p, s);                                                                               \
    } while (0)
#define T_STORE(t, p, s)                                                                                     \
    do {                                                                                                     \
        if (emu)                                                                                             \
            emu_store(e, t, p, s);                                                                           \
        else                                                                                                 \
            AMX_STORE(t, p, s);                                                                              \
    } while (0)
#define T_ZERO(t)                                                                                            \
    do {                                                                                                     \
        if (emu)                                                                                             \
            memset(e->reg[t], 0, sizeof e->reg[t]);                                                              \
        else                                                                                                 \
            AMX_ZERO(t);                                                                                     \
    } while (0)
#define T_DP(c, a, b)                                                                                        \
    do {                                                                                                     \
        if (emu)                                                                                             \
            emu_dp(e, c, a, b);                                                                              \
        else                                                                                                 \
            AMX_DP(c, a, b);                                                                                 \
    } while (0)

/* ---- the kernel ----------------------------------------------------------- */

/* One call's operands as the blocks read them. */
struct call {
    float *C;
    long ldc;
    const uint16_t *A, *B;
    long lda, apair, pstride;
    int M, N, K;
    float alpha, beta;
    int slices, tail;           /* K's slices of TV values; 1: the last one is partial */
    int panels;                 /* column panels of NR */
    uint16_t *abuf;             /* a row block of A in tile layout: 2·TR rows of slices·TV values */
    uint16_t *tails;            /* with tail: each panel's last slice, zero-padded (PANEL values each) */
};

/* C's block of 2·TR rows from A's rows at a (row stride as, in bf16 values)
** by panels b0 and b1 (b1 = b0 when the block has one panel) over every
** slice: the four sums tiles into acc (2·TR rows of 2·NR floats). */
__attribute__((always_inline)) static inline void block(int emu, struct emu *e, const struct call *x,
                                                        const uint16_t *a, long as, const uint16_t *b0,
                                                        const uint16_t *b1, const uint16_t *t0, const uint16_t *t1,
                                                        float *acc)
{
    T_ZERO(0);
    T_ZERO(1);
    T_ZERO(2);
    T_ZERO(3);
    for (int s = 0; s < x->slices; s++) {
        int last = x->tail && s == x->slices - 1;
        T_LOAD(4, a + (long)s * TV, 2 * as);
        T_LOAD(5, a + (long)s * TV + TR * as, 2 * as);
        T_LOAD(6, last ? t0 : b0 + (long)s * PANEL, 4 * LX_GEMM_NR);
        T_LOAD(7, last ? t1 : b1 + (long)s * PANEL, 4 * LX_GEMM_NR);
        T_DP(0, 4, 6);
        T_DP(1, 4, 7);
        T_DP(2, 5, 6);
        T_DP(3, 5, 7);
    }
    long w = 2 * LX_GEMM_NR;    /* acc's row, in floats */
    T_STORE(0, acc, 4 * w);
    T_STORE(1, acc + LX_GEMM_NR, 4 * w);
    T_STORE(2, acc + TR * w, 4 * w);
    T_STORE(3, acc + TR * w + LX_GEMM_NR, 4 * w);
}

/* C (mr × nr at C) = alpha · acc + beta · C (acc's rows 2·NR apart), each
** step rounded, as the other kernels' epilogues. */
static void out_plain(float *C, long ldc, const float *acc, int mr, int nr, float alpha, float beta)
{
    for (int r = 0; r < mr; r++)
        for (int c = 0; c < nr; c++) {
            float v = alpha * acc[r * 2 * LX_GEMM_NR + c], *dst = C + r * ldc + c;
            *dst = beta != 0.0f ? v + beta * *dst : v;
        }
}

__attribute__((target("avx512f"))) static void out_512(float *C, long ldc, const float *acc, int mr, float alpha,
                                                       float beta)
{
    __m512 al = _mm512_set1_ps(alpha), be = _mm512_set1_ps(beta);
    for (int r = 0; r < mr; r++) {
        __m512 v = _mm512_mul_ps(al, _mm512_loadu_ps(acc + r * 2 * LX_GEMM_NR));
        if (beta != 0.0f)
            v = _mm512_add_ps(v, _mm512_mul_ps(be, _mm512_loadu_ps(C + r * ldc)));
        _mm512_storeu_ps(C + r * ldc, v);
    }
}

/* Rows [i0, i0 + mr) of A into x->abuf in tile layout: 2·TR rows of
** slices·TV values, zeros past K and past row mr. */
static void pack_rows(const struct call *x, int i0, int mr)
{
    long w = (long)x->slices * TV;
    memset(x->abuf, 0, sizeof(uint16_t) * 2 * TR * (size_t)w);
    for (int r = 0; r < mr; r++) {
        const uint16_t *row = x->A + (long)(i0 + r) * x->lda;
        uint16_t *d = x->abuf + r * w;
        for (int p = 0; 2 * p < x->K; p++) {
            memcpy(d + 2 * p, row + p * x->apair, sizeof(uint16_t) * (2 * p + 1 < x->K ? 2 : 1));
        }
    }
}

/* Each panel's last slice into x->tails: the pairs there are, the upper half
** of an odd K's last pair 0, zeros past them. */
static void pack_tails(const struct call *x)
{
    int p0 = (x->slices - 1) * TR, np = (x->K + 1) / 2 - p0;
    for (int q = 0; q < x->panels; q++) {
        uint16_t *d = x->tails + (size_t)q * PANEL;
        memset(d, 0, sizeof(uint16_t) * PANEL);
        memcpy(d, x->B + q * x->pstride + (long)p0 * 2 * LX_GEMM_NR, sizeof(uint16_t) * 2 * LX_GEMM_NR * (size_t)np);
        if (x->K % 2)
            for (int c = 0; c < LX_GEMM_NR; c++)
                d[(np - 1) * 2 * LX_GEMM_NR + 2 * c + 1] = 0;
    }
}

__attribute__((always_inline)) static inline void run(int emu, const struct call *x)
{
    struct emu tiles, *e = &tiles;
    float acc[2 * TR * 2 * LX_GEMM_NR] __attribute__((aligned(64)));
    int wide = !emu;        /* probe: AMX here comes with AVX-512 */
    if (!emu)
        __asm__ volatile("ldtilecfg %0" ::"m"(CFG) : "memory");
    for (int i0 = 0; i0 < x->M; i0 += 2 * TR) {
        int mr = x->M - i0 < 2 * TR ? x->M - i0 : 2 * TR;
        const uint16_t *a = x->A + (long)i0 * x->lda;
        long as = x->lda;
        if (x->apair != 2 || x->tail || mr < 2 * TR) {
            pack_rows(x, i0, mr);
            a = x->abuf, as = (long)x->slices * TV;
        }
        for (int q = 0; q < x->panels; q += 2) {
            int two = q + 1 < x->panels;
            const uint16_t *b0 = x->B + q * x->pstride, *t0 = x->tails + (size_t)q * PANEL;
            block(emu, e, x, a, as, b0, two ? b0 + x->pstride : b0, t0, two ? t0 + PANEL : t0, acc);
            for (int h = 0; h < 2; h++)         /* rows 0-15, 16-31 */
                for (int g = 0; g <= two; g++) {     /* panels q, q + 1 */
                    int rows = mr - h * TR < TR ? mr - h * TR : TR, cols = x->N - (q + g) * LX_GEMM_NR;
                    float *C = x->C + (long)(i0 + h * TR) * x->ldc + (q + g) * LX_GEMM_NR;
                    const float *src = acc + h * TR * 2 * LX_GEMM_NR + g * LX_GEMM_NR;
                    if (rows <= 0)
                        continue;
                    if (wide && cols >= LX_GEMM_NR)
                        out_512(C, x->ldc, src, rows, x->alpha, x->beta);
                    else
                        out_plain(C, x->ldc, src, rows, cols < LX_GEMM_NR ? cols : LX_GEMM_NR, x->alpha, x->beta);
                }
        }
    }
    if (!emu)
        __asm__ volatile("tilerelease" ::: "memory");
}

static void run_amx(const struct call *x)
{
    run(0, x);
}

static void run_emu(const struct call *x)
{
    run(1, x);
}

/* ---- whether the CPU and the kernel let us ---------------------------------- */

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

enum { AMX_UNPROBED = -1, AMX_ON, AMX_OFF, AMX_ABSENT, AMX_DENIED, AMX_WRONG };

_Static_assert(sizeof(struct tilecfg) == 64 && offsetof(struct tilecfg, colsb) == 16 &&
                   offsetof(struct tilecfg, rows) == 48,
               "the tile configuration's layout is the instruction's");

/* The hardware against the emulation on products whose sums are exact
** (small integers): the same bits in any order of rounding, so a difference
** is a layout or an instruction gone wrong, never rounding. Two shapes: one
** loaded in place, one through every copy (rows short of a block, A in
** transposed pairs, a partial slice, an odd K, a lone last panel). */
static int self_check(void)
{
    enum { M = 32, N = 48, K = 64 };
    static uint16_t A[M * K], At[(K / 2) * 2 * M], B[3 * (K / 2) * 2 * LX_GEMM_NR];
    static float hw[M * N], em[M * N];
    for (int i = 0; i < M * K; i++)
        A[i] = lx_f32_to_bf16((float)((i * 7 + i / K * 3) % 9 - 4));
    for (int i = 0; i < 3 * (K / 2) * 2 * LX_GEMM_NR; i++)
        B[i] = lx_f32_to_bf16((float)((i * 5 + i / 37) % 7 - 3));
    for (int p = 0; p < K / 2; p++)     /* A's pairs transposed: word (r, p) at 2r + p·2M */
        for (int r = 0; r < M; r++)
            memcpy(At + (long)p * 2 * M + 2 * r, A + (long)r * K + 2 * p, 4);
    static const int shapes[2][5] = {{M, N, K, 2, 0}, {M - 11, N - 19, K - 23, 2 * M, 1}};
    for (int t = 0; t < 2; t++) {
        const int *z = shapes[t];
        struct call x = {.C = hw, .ldc = N, .A = z[4] ? At : A, .B = B, .lda = z[4] ? 2 : K, .apair = z[3],
                         .pstride = (K / 2) * 2 * LX_GEMM_NR, .M = z[0], .N = z[1], .K = z[2], .alpha = 1.0f,
                         .slices = (z[2] + TV - 1) / TV, .tail = z[2] % TV != 0,
                         .panels = (z[1] + LX_GEMM_NR - 1) / LX_GEMM_NR};
        static uint16_t buf[3 * PANEL + 2 * TR * 2 * TV];
        x.tails = buf, x.abuf = buf + 3 * PANEL;
        if (x.tail)
            pack_tails(&x);
        memset(hw, 0, sizeof hw), memset(em, 0, sizeof em);
        run_amx(&x);
        x.C = em;
        run_emu(&x);
        if (memcmp(hw, em, sizeof hw))
            return 0;
    }
    return 1;
}

static int probe(void)
{
    const char *env = getenv("LENX_AMX");
    if (env && !strcmp(env, "0"))
        return AMX_OFF;     /* the user's word: the AVX512-BF16 kernel */
    unsigned a, b, c, d;
    __builtin_cpu_init();
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 22)) ||
        !__builtin_cpu_supports("avx512f"))
        return AMX_ABSENT;  /* AMX-TILE, AMX-BF16 (and the AVX-512 of every CPU that has them) */
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))
        return AMX_DENIED;  /* no OSXSAVE */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    /* the OS saves XTILECFG and XTILEDATA, and Linux hands the tile data out
    ** only on request (5.16 and later) */
    if ((lo & (3u << 17)) != (3u << 17) || syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
        return AMX_DENIED;
    if (!self_check()) {
        fprintf(stderr, "lenx: AMX's tile products disagree with their emulation on exact sums; the bf16 tiles run "
                        "on the AVX512-BF16 kernel instead\n  hint: please report this CPU (lenx-tests "
                        "--filter 'gemm_bf16/*' shows the difference)\n");
        return AMX_WRONG;
    }
    return AMX_ON;
}

static int amx_state = AMX_UNPROBED;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;
static atomic_int amx_off, amx_emulated;

static void probe_once(void)
{
    amx_state = probe();
}

/* Probed once per process (the first products often come from every thread
** of an OpenMP loop at once; the self-check's buffers are static). */
static int state(void)
{
    pthread_once(&amx_once, probe_once);
    return amx_state;
}

int lx_gemm_amx_native(void)
{
    return state() == AMX_ON && !atomic_load(&amx_off);
}

const char *lx_gemm_amx_status(void)
{
    static const char *say[] = {"on", "off (LENX_AMX=0)", "not on this CPU", "not granted by the OS",
                                "off: failed its self-check"};
    int s = state();
    return s == AMX_ON && atomic_load(&amx_off) ? "off (turned off)" : say[s];
}

void lx_gemm_amx_disable(int off)
{
    atomic_store(&amx_off, off);
}

void lx_gemm_amx_emulate(int on)
{
    atomic_store(&amx_emulated, on);
}

int lx_gemm_amx_emulated(void)
{
    return atomic_load(&amx_emulated);
}

int lx_gemm_rows_bf16_amx(float *C, int ldc, const uint16_t *A, long lda, long apair, const uint16_t *B,
                          long pstride, int M, int N, int K, float alpha, float beta, int emulate)
{
    if (!emulate && !lx_gemm_amx_native())
        return -1;
    if (M <= 0 || N <= 0)
        return 0;
    struct call x = {.C = C, .ldc = ldc, .A = A, .B = B, .lda = lda, .apair = apair, .pstride = pstride,
                     .M = M, .N = N, .K = K, .alpha = alpha, .beta = beta,
                     .slices = K > 0 ? (K + TV - 1) / TV : 0, .tail = K % TV != 0,
                     .panels = (N + LX_GEMM_NR - 1) / LX_GEMM_NR};
    size_t nt = x.tail ? (size_t)x.panels * PANEL : 0, na = 2 * TR * (size_t)x.slices * TV;
    uint16_t *buf = malloc(sizeof(uint16_t) * (nt + na));
    if (!buf)
        return -1;
    x.tails = buf, x.abuf = buf + nt;
    if (x.tail)
        pack_tails(&x);
    if (emulate)
        run_emu(&x);
    else
        run_amx(&x);
    free(buf);
    return 0;
}
