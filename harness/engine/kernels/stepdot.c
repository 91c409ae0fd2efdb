/*
** harness/engine/kernels/stepdot.c - a decoding step's two products with the
** cached rows of one key/value head (see stepdot.h): in sixteen AVX-512 lanes,
** in eight AVX2 lanes, and the row-at-a-time reference.
**
** The cache keeps a key/value head's rows together (decode.h,
** lx_kvcache_head_at), so a head's history is one stream from memory, which
** the CPU's own prefetchers follow: at 4,096 tokens of the 1B shape a step
** reads 64 MB of an f16 cache. The kernels read each row once for all M query
** rows (up to four at a time) and keep their sums in registers: a key's four
** rows' sums reduced together and four keys' together (a few shuffles leave
** sixteen scores in one register, not a horizontal sum per key and row), the
** values' M × 64 sums over a block of rows, each row widened once.
*/
#include "harness/engine/kernels/stepdot.h"

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/qlanes.h"

static int step_lanes = -1;     /* lx_step_lanes: -1 the CPU's choice, 0 the reference, 8 AVX2 */

void lx_step_lanes(int lanes)
{
    step_lanes = lanes;
}

static size_t elt(int type)
{
    return type == LX_DT_F32 ? sizeof(float) : sizeof(uint16_t);
}

/* Row j of a cache of type at stride ld, d values in. */
static const void *row(const void *x, int type, int ld, long j, int d)
{
    return (const char *)x + ((size_t)j * (size_t)ld + (size_t)d) * elt(type);
}

/* ---- the reference: a row widened at a time ------------------------------------- */

static void widen(float *w, const void *x, int type, int D)
{
    if (type == LX_DT_F32)
        memcpy(w, x, sizeof(float) * (size_t)D);
    else
        lx_half_to_f32(w, x, type, (size_t)D);
}

static void scores_ref(float *s, long lds, const float *q, int M, const void *k, int type, int ld, long j0, long j1,
                       int D, float c)
{
    float w[LX_STEP_MAX_D];
    for (long j = j0; j < j1; j++) {
        widen(w, row(k, type, ld, j, 0), type, D);
        for (int m = 0; m < M; m++) {
            float a = 0.0f;
            for (int d = 0; d < D; d++)
                a += q[(long)m * D + d] * w[d];
            s[m * lds + j] = c * a;
        }
    }
}

static void values_ref(float *o, const float *p, long lds, int M, const void *v, int type, int ld, long j0, long j1,
                       int D)
{
    float w[LX_STEP_MAX_D];
    for (long j = j0; j < j1; j++) {
        widen(w, row(v, type, ld, j, 0), type, D);
        for (int m = 0; m < M; m++)
            for (int d = 0; d < D; d++)
                o[(long)m * D + d] += p[m * lds + j] * w[d];
    }
}

#define BLOCK 64    /* value rows a block: 8 KB of f16 at D = 64, in L1 for every query row's pass */

/* F(n) with n (1 … 4) a constant, so that each count of rows gets its own unrolled kernel. */
#define UPTO4(n, F)                                                                                                    \
    do {                                                                                                               \
        switch (n) {                                                                                                   \
        case 1: F(1); break;                                                                                           \
        case 2: F(2); break;                                                                                           \
        case 3: F(3); break;                                                                                           \
        default: F(4); break;                                                                                          \
        }                                                                                                              \
    } while (0)

/* ---- sixteen lanes (AVX-512) ----------------------------------------------------- */

#define L16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c"), always_inline)) static inline

L16 __m512 wide16(const void *x, const int type)
{
    return type == LX_DT_F32 ? _mm512_loadu_ps(x) : lx_ql_half16(x, type == LX_DT_BF16);
}

/* One key's sums for four query rows, a[m] sixteen partial sums each, in one register: its 128-bit lane m
** holds row m's four partial sums (halves added pairwise, then quarters). */
L16 __m512 rows4(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
    const __m512 x = _mm512_add_ps(_mm512_shuffle_f32x4(a0, a1, 0x44), _mm512_shuffle_f32x4(a0, a1, 0xee)),
                 y = _mm512_add_ps(_mm512_shuffle_f32x4(a2, a3, 0x44), _mm512_shuffle_f32x4(a2, a3, 0xee));
    return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x88), _mm512_shuffle_f32x4(x, y, 0xdd));
}

/* Four keys' rows4 to their sums: lane m of the result holds row m's scores of the four keys, in order. */
L16 __m512 keys4(__m512 r0, __m512 r1, __m512 r2, __m512 r3)
{
    const __m512 c0 = _mm512_add_ps(_mm512_shuffle_ps(r0, r1, 0x44), _mm512_shuffle_ps(r0, r1, 0xee)),
                 c1 = _mm512_add_ps(_mm512_shuffle_ps(r2, r3, 0x44), _mm512_shuffle_ps(r2, r3, 0xee));
    return _mm512_add_ps(_mm512_shuffle_ps(c0, c1, 0x88), _mm512_shuffle_ps(c0, c1, 0xdd));
}

/* rows4 of key j for M (a constant, at most 4; the others' sums 0) rows of q (loaded once: qv[m·nd + d]),
** nd (a constant where it can be) columns of sixteen. */
L16 __m512 key_rows(const __m512 *qv, const void *k, int ld, long j, const int nd, const int type, const int M)
{
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
#pragma GCC unroll 8
    for (int d = 0; d < nd; d++) {
        const __m512 kv = wide16(row(k, type, ld, j, 16 * d), type);
#pragma GCC unroll 4
        for (int m = 0; m < M; m++)
            a[m] = _mm512_fmadd_ps(qv[m * nd + d], kv, a[m]);
    }
    return rows4(a[0], a[1], a[2], a[3]);
}

/* s[m·lds + j] = c · q_m · k_j for M (a constant, at most 4) rows and keys [j0, j1), four at a time, each
** key's rows reduced together (rows4) and four keys' together (keys4): no horizontal sum a key. nd ≤ 16. */
L16 void scores16_m(float *s, long lds, const float *q, const void *k, int ld, long j0, long j1, const int nd,
                    float c, const int type, const int M)
{
    const __m512 cv = _mm512_set1_ps(c);
    __m512 qv[4 * 16];     /* in registers where they fit (D = 64) */
#pragma GCC unroll 4
    for (int m = 0; m < M; m++)
#pragma GCC unroll 8
        for (int d = 0; d < nd; d++)
            qv[m * nd + d] = _mm512_loadu_ps(q + (long)m * nd * 16 + 16 * d);
    for (long j = j0; j < j1; j += 4) {
        const long n = j1 - j < 4 ? j1 - j : 4;
        __m512 r[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
            r[i] = i < n ? key_rows(qv, k, ld, j + i, nd, type, M) : _mm512_setzero_ps();
        const __m512 z = _mm512_mul_ps(cv, keys4(r[0], r[1], r[2], r[3]));
        if (n == 4) {
            _mm_storeu_ps(s + j, _mm512_castps512_ps128(z));
            if (M > 1)
                _mm_storeu_ps(s + lds + j, _mm512_extractf32x4_ps(z, 1));
            if (M > 2)
                _mm_storeu_ps(s + 2 * lds + j, _mm512_extractf32x4_ps(z, 2));
            if (M > 3)
                _mm_storeu_ps(s + 3 * lds + j, _mm512_extractf32x4_ps(z, 3));
        } else {    /* the last one to three keys */
            float out[16];
            _mm512_storeu_ps(out, z);
            for (int m = 0; m < M; m++)
                memcpy(s + m * lds + j, out + 4 * m, sizeof(float) * (size_t)n);
        }
    }
}

/* scores16_m with the columns' count a constant where D is 64 or 128. */
L16 void scores16_d(float *s, long lds, const float *q, const void *k, int ld, long j0, long j1, int D, float c,
                    const int type, const int M)
{
    switch (D) {
    case 64: scores16_m(s, lds, q, k, ld, j0, j1, 4, c, type, M); break;
    case 128: scores16_m(s, lds, q, k, ld, j0, j1, 8, c, type, M); break;
    default: scores16_m(s, lds, q, k, ld, j0, j1, D / 16, c, type, M); break;
    }
}

L16 void scores16_t(float *s, long lds, const float *q, int M, const void *k, int ld, long j0, long j1, int D,
                    float c, const int type)
{
    for (int m0 = 0; m0 < M; m0 += 4) {
        const float *qm = q + (long)m0 * D;
        float *sm = s + m0 * lds;
#define S16(m) scores16_d(sm, lds, qm, k, ld, j0, j1, D, c, type, m)
        UPTO4(M - m0 < 4 ? M - m0 : 4, S16);
#undef S16
    }
}

/* o_m[d0 … d0 + 16·nc) += Σ_j p_m[j] · v_j over rows [b0, b1) for M (a constant, at most 4) rows and
** nc (a constant, at most 4) columns of sixteen: each row widened once for the M rows. */
L16 void values16_mc(float *o, const float *p, long lds, const void *v, int ld, long b0, long b1, int D, int d0,
                     const int type, const int M, const int nc)
{
    __m512 a[4][4];
#pragma GCC unroll 4
    for (int m = 0; m < M; m++)
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++)
            a[m][c] = _mm512_setzero_ps();
    for (long j = b0; j < b1; j++) {
        __m512 w[4];
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++)
            w[c] = wide16(row(v, type, ld, j, d0 + 16 * c), type);
#pragma GCC unroll 4
        for (int m = 0; m < M; m++) {
            const __m512 pj = _mm512_set1_ps(p[m * lds + j]);
#pragma GCC unroll 4
            for (int c = 0; c < nc; c++)
                a[m][c] = _mm512_fmadd_ps(pj, w[c], a[m][c]);
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < M; m++)
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++) {
            float *om = o + (long)m * D + d0 + 16 * c;
            _mm512_storeu_ps(om, _mm512_add_ps(_mm512_loadu_ps(om), a[m][c]));
        }
}

L16 void values16_m(float *o, const float *p, long lds, const void *v, int ld, long b0, long b1, int D,
                    const int type, const int M)
{
    int d0 = 0;
    for (; d0 + 64 <= D; d0 += 64)
        values16_mc(o, p, lds, v, ld, b0, b1, D, d0, type, M, 4);
#define V16C(nc) values16_mc(o, p, lds, v, ld, b0, b1, D, d0, type, M, nc)
    if (D > d0)     /* the last one to three columns of sixteen */
        UPTO4((D - d0) / 16, V16C);
#undef V16C
}

L16 void values16_t(float *o, const float *p, long lds, int M, const void *v, int ld, long j0, long j1, int D,
                    const int type)
{
    for (long b0 = j0; b0 < j1; b0 += BLOCK) {
        const long b1 = j1 - b0 < BLOCK ? j1 : b0 + BLOCK;
        for (int m0 = 0; m0 < M; m0 += 4) {
            float *om = o + (long)m0 * D;
            const float *pm = p + m0 * lds;
#define V16(m) values16_m(om, pm, lds, v, ld, b0, b1, D, type, m)
            UPTO4(M - m0 < 4 ? M - m0 : 4, V16);
#undef V16
        }
    }
}

#define TYPED(f, type, ...)                                                                                           \
    do {                                                                                                               \
        if ((type) == LX_DT_F32)                                                                                       \
            f(__VA_ARGS__, LX_DT_F32);                                                                                 \
        else if ((type) == LX_DT_F16)                                                                                  \
            f(__VA_ARGS__, LX_DT_F16);                                                                                 \
        else                                                                                                           \
            f(__VA_ARGS__, LX_DT_BF16);                                                                                \
    } while (0)

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c"))) static void
scores16(float *s, long lds, const float *q, int M, const void *k, int type, int ld, long j0, long j1, int D, float c)
{
    TYPED(scores16_t, type, s, lds, q, M, k, ld, j0, j1, D, c);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c"))) static void
values16(float *o, const float *p, long lds, int M, const void *v, int type, int ld, long j0, long j1, int D)
{
    TYPED(values16_t, type, o, p, lds, M, v, ld, j0, j1, D);
}

/* ---- eight lanes (AVX2) ---------------------------------------------------------- */

#define L8 __attribute__((target("avx2,fma,f16c"), always_inline)) static inline

L8 __m256 wide8(const void *x, const int type)
{
    return type == LX_DT_F32 ? _mm256_loadu_ps(x) : lx_ql_half8(x, type == LX_DT_BF16);
}

/* One key's sums for four query rows, a[m] eight partial sums each: row m's sum in element m. */
L8 __m128 rows4_8(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));   /* each half's four sums */
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* rows4_8 of key j for M (a constant, at most 4; the others' sums 0) rows and nd columns of eight. */
L8 __m128 key_rows8(const float *q, const void *k, int ld, long j, const int nd, const int type, const int M)
{
    __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int d = 0; d < nd; d++) {
        const __m256 kv = wide8(row(k, type, ld, j, 8 * d), type);
#pragma GCC unroll 4
        for (int m = 0; m < M; m++)
            a[m] = _mm256_fmadd_ps(_mm256_loadu_ps(q + (long)m * nd * 8 + 8 * d), kv, a[m]);
    }
    return rows4_8(a[0], a[1], a[2], a[3]);
}

/* s[m·lds + j] = c · q_m · k_j for M (a constant, at most 4) rows and keys [j0, j1), four at a time: each
** key's rows reduced together (rows4_8), then four keys' turned to each row's four scores. */
L8 void scores8_m(float *s, long lds, const float *q, const void *k, int ld, long j0, long j1, const int nd,
                  float c, const int type, const int M)
{
    const __m128 cv = _mm_set1_ps(c);
    for (long j = j0; j < j1; j += 4) {
        const long n = j1 - j < 4 ? j1 - j : 4;
        __m128 r[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
            r[i] = i < n ? _mm_mul_ps(cv, key_rows8(q, k, ld, j + i, nd, type, M)) : _mm_setzero_ps();
        _MM_TRANSPOSE4_PS(r[0], r[1], r[2], r[3]);      /* r[m]: row m's scores of the four keys */
#pragma GCC unroll 4
        for (int m = 0; m < M; m++)
            if (n == 4) {
                _mm_storeu_ps(s + m * lds + j, r[m]);
            } else {
                float out[4];
                _mm_storeu_ps(out, r[m]);
                memcpy(s + m * lds + j, out, sizeof(float) * (size_t)n);
            }
    }
}

/* scores8_m with the columns' count a constant where D is 64 or 128. */
L8 void scores8_d(float *s, long lds, const float *q, const void *k, int ld, long j0, long j1, int D, float c,
                  const int type, const int M)
{
    switch (D) {
    case 64: scores8_m(s, lds, q, k, ld, j0, j1, 8, c, type, M); break;
    case 128: scores8_m(s, lds, q, k, ld, j0, j1, 16, c, type, M); break;
    default: scores8_m(s, lds, q, k, ld, j0, j1, D / 8, c, type, M); break;
    }
}

L8 void scores8_t(float *s, long lds, const float *q, int M, const void *k, int ld, long j0, long j1, int D,
                  float c, const int type)
{
    for (int m0 = 0; m0 < M; m0 += 4) {
        const float *qm = q + (long)m0 * D;
        float *sm = s + m0 * lds;
#define S8(m) scores8_d(sm, lds, qm, k, ld, j0, j1, D, c, type, m)
        UPTO4(M - m0 < 4 ? M - m0 : 4, S8);
#undef S8
    }
}

/* o_m[d0 … d0 + 8·nc) += Σ_j p_m[j] · v_j over rows [b0, b1), M (at most 2) rows, nc (at most 4) columns
** of eight: 8 sums and 4 widened rows in the 16 registers AVX2 has. */
L8 void values8_mc(float *o, const float *p, long lds, const void *v, int ld, long b0, long b1, int D, int d0,
                   const int type, const int M, const int nc)
{
    __m256 a[2][4];
#pragma GCC unroll 2
    for (int m = 0; m < M; m++)
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++)
            a[m][c] = _mm256_setzero_ps();
    for (long j = b0; j < b1; j++) {
        __m256 w[4];
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++)
            w[c] = wide8(row(v, type, ld, j, d0 + 8 * c), type);
#pragma GCC unroll 2
        for (int m = 0; m < M; m++) {
            const __m256 pj = _mm256_set1_ps(p[m * lds + j]);
#pragma GCC unroll 4
            for (int c = 0; c < nc; c++)
                a[m][c] = _mm256_fmadd_ps(pj, w[c], a[m][c]);
        }
    }
#pragma GCC unroll 2
    for (int m = 0; m < M; m++)
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++) {
            float *om = o + (long)m * D + d0 + 8 * c;
            _mm256_storeu_ps(om, _mm256_add_ps(_mm256_loadu_ps(om), a[m][c]));
        }
}

L8 void values8_m(float *o, const float *p, long lds, const void *v, int ld, long b0, long b1, int D,
                  const int type, const int M)
{
    int d0 = 0;
    for (; d0 + 32 <= D; d0 += 32)
        values8_mc(o, p, lds, v, ld, b0, b1, D, d0, type, M, 4);
#define V8C(nc) values8_mc(o, p, lds, v, ld, b0, b1, D, d0, type, M, nc)
    if (D > d0)     /* the last one to three columns of eight */
        UPTO4((D - d0) / 8, V8C);
#undef V8C
}

L8 void values8_t(float *o, const float *p, long lds, int M, const void *v, int ld, long j0, long j1, int D,
                  const int type)
{
    for (long b0 = j0; b0 < j1; b0 += BLOCK) {
        const long b1 = j1 - b0 < BLOCK ? j1 : b0 + BLOCK;
        for (int m0 = 0; m0 < M; m0 += 2) {
            float *om = o + (long)m0 * D;
            const float *pm = p + m0 * lds;
            if (M - m0 == 1)
                values8_m(om, pm, lds, v, ld, b0, b1, D, type, 1);
            else
                values8_m(om, pm, lds, v, ld, b0, b1, D, type, 2);
        }
    }
}

__attribute__((target("avx2,fma,f16c"))) static void scores8(float *s, long lds, const float *q, int M, const void *k,
                                                          int type, int ld, long j0, long j1, int D, float c)
{
    TYPED(scores8_t, type, s, lds, q, M, k, ld, j0, j1, D, c);
}

__attribute__((target("avx2,fma,f16c"))) static void values8(float *o, const float *p, long lds, int M, const void *v,
                                                          int type, int ld, long j0, long j1, int D)
{
    TYPED(values8_t, type, o, p, lds, M, v, ld, j0, j1, D);
}

/* ---- the choice ------------------------------------------------------------------ */

int lx_step_width(int D)
{
    static int cpu = -1;
    if (cpu < 0) {
        __builtin_cpu_init();
        /* F16C: every AVX2 CPU has it (clang cannot ask) */
        int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        cpu = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")
                  ? 16
                  : avx2 ? 8 : 0;
    }
    int w = step_lanes < 0 ? cpu : step_lanes < cpu ? step_lanes : cpu;
    if (D > 256)    /* scores16_m keeps the query rows in at most 64 registers' worth */
        return 0;
    if (w == 16 && D % 16 == 0)
        return 16;
    return w >= 8 && D % 8 == 0 ? 8 : 0;
}

void lx_step_scores(float *s, long lds, const float *q, int M, const void *k, int type, int ld, long j0, long j1,
                    int D, float c)
{
    if (j1 <= j0)
        return;
    switch (lx_step_width(D)) {
    case 16: scores16(s, lds, q, M, k, type, ld, j0, j1, D, c); break;
    case 8: scores8(s, lds, q, M, k, type, ld, j0, j1, D, c); break;
    default: scores_ref(s, lds, q, M, k, type, ld, j0, j1, D, c); break;
    }
}

void lx_step_values(float *o, const float *p, long lds, int M, const void *v, int type, int ld, long j0, long j1,
                    int D)
{
    if (j1 <= j0)
        return;
    switch (lx_step_width(D)) {
    case 16: values16(o, p, lds, M, v, type, ld, j0, j1, D); break;
    case 8: values8(o, p, lds, M, v, type, ld, j0, j1, D); break;
    default: values_ref(o, p, lds, M, v, type, ld, j0, j1, D); break;
    }
}
