/*
** harness/engine/kernels/qdot8.c - activations rounded as llama.cpp rounds
** them, and integer dots of 8-bit activations with quantized weights (qdot8.h).
**
** The rounding (scalar, so any CPU gives the same q and scales):
** * Q8_0, per 32 values: amax = max |x|, the scale amax / 127 held as f16,
**   q = x · (127 / amax) rounded to the nearest integer, ties to even.
** * Q8_K, per 256 values: m = the value of largest magnitude (the first if
**   several), s = −127 / m, q = x · s to the nearest (ties to even, at most
**   127), the scale 1 / s in fp32.
** * A block holding a NaN or an infinity gets a NaN scale and q = 0, so the
**   product is NaN as the unrounded one would be (llama.cpp does not ask).
**
** The dots (AVX-512 VNNI): a weight row is read 256 values at a time as
** unsigned bytes u (the stored integers, signed ones moved up by a constant
** z: Q8_0's q + 128, Q4_0's nibble, …) with, per 16 values, a scale a and an
** offset b such that the weight is a·u + b (Q4_K: a = d·sc, b = −dmin·m;
** Q4_0: a = d, b = −8d). vpdpbusd sums u·q four at a time into int32 lanes
** (exact); per row the lanes are widened to fp32, times x's block scale and
** a, and Σ b·(scale·Σq) per 16 values is added: two roundings per 4
** products instead of one per product, so the sum is not the fp32 path's on
** the rounded x; tests/test_acts.c derives the bound that holds both. On
** AVX2 the same dots run in 8 lanes with the same bits (qdot8l.c); the IQ1-IQ3
** codebook types have only those, on either CPU.
*/
#include "harness/engine/kernels/qdot8.h"

#include <math.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/lx.h"
#include "harness/core/qlanes.h"

#define QD8_TARGET "avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma"
#define QD8 __attribute__((target(QD8_TARGET), always_inline)) static inline

int lx_act_format(int wtype)
{
    switch (wtype) {
    case LX_DT_F32: return LX_ACT_FP32;
    case LX_DT_F16: return LX_ACT_F16;
    case LX_DT_BF16: return LX_ACT_BF16;
    default: return lx_qdot8_int_scales(wtype) ? LX_ACT_Q8_K : LX_ACT_Q8_0;
    }
}

/* Does the block of n values at x hold a NaN or an infinity? */
static int nonfinite(const float *x, int n)
{
    for (int l = 0; l < n; l++)
        if (!isfinite(x[l]))
            return 1;
    return 0;
}

static void q8_0_block(int8_t *q, float *d, const float *x)
{
    float amax = 0.0f;
    if (nonfinite(x, 32)) {
        memset(q, 0, 32), *d = NAN;
        return;
    }
    for (int l = 0; l < 32; l++)
        amax = fabsf(x[l]) > amax ? fabsf(x[l]) : amax;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    *d = lx_f16_to_f32(lx_f32_to_f16(amax / 127.0f));
    for (int l = 0; l < 32; l++)
        q[l] = (int8_t)rintf(x[l] * id);    /* |x · id| ≤ 127 (rounded up by at most half an ulp) */
}

static void q8_k_block(int8_t *q, float *d, const float *x)
{
    float amax = 0.0f, m = 0.0f;
    if (nonfinite(x, 256)) {
        memset(q, 0, 256), *d = NAN;
        return;
    }
    for (int l = 0; l < 256; l++)
        if (fabsf(x[l]) > amax)
            amax = fabsf(x[l]), m = x[l];
    if (amax == 0.0f) {
        memset(q, 0, 256), *d = 0.0f;
        return;
    }
    const float s = -127.0f / m;
    for (int l = 0; l < 256; l++) {
        float v = rintf(s * x[l]);
        q[l] = (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
    }
    *d = 1.0f / s;
}

void lx_act_q8(int8_t *q, float *d, const float *x, long C, int fmt)
{
    const long bs = fmt == LX_ACT_Q8_K ? 256 : 32;
    LX_ASSERT((fmt == LX_ACT_Q8_0 || fmt == LX_ACT_Q8_K) && C % bs == 0);
    for (long j = 0; j < C / bs; j++)
        (bs == 256 ? q8_k_block : q8_0_block)(q + j * bs, d + j, x + j * bs);
}

void lx_act_round(float *out, long ldo, const float *x, long ldx, long T, long C, int fmt)
{
    int8_t q[256];
    for (long t = 0; t < T; t++) {
        const float *xt = x + t * ldx;
        float *o = out + t * ldo;
        if (fmt == LX_ACT_Q8_0 || fmt == LX_ACT_Q8_K) {
            const long bs = fmt == LX_ACT_Q8_K ? 256 : 32;
            for (long c = 0; c < C; c += bs) {
                float d;
                lx_act_q8(q, &d, xt + c, bs, fmt);
                for (long l = 0; l < bs; l++)
                    o[c + l] = d * (float)q[l];
            }
        } else {
            memmove(o, xt, sizeof(float) * (size_t)C);
            lx_round_half_n(o, fmt == LX_ACT_F16 ? LX_DT_F16 : fmt == LX_ACT_BF16 ? LX_DT_BF16 : LX_DT_F32, (size_t)C);
        }
    }
}

void lx_qdot8_prep(int8_t *q, float *xl, float *xg, int32_t *q4, const float *x, long ldx, long T, long C, int type)
{
    const int fmt = lx_act_format(type);
    const long bs = fmt == LX_ACT_Q8_K ? 256 : 32;
    float d[256];   /* C / 32 scales at most 256 per call */
    for (long t = 0; t < T; t++) {
        int8_t *qt = q + t * C;
        for (long c0 = 0; c0 < C; c0 += 256 * bs) {
            const long n = C - c0 < 256 * bs ? C - c0 : 256 * bs;
            lx_act_q8(qt + c0, d, x + t * ldx + c0, n, fmt);
            for (long c = c0; c < c0 + n; c += 16) {
                const float dc = d[(c - c0) / bs];
                int s = 0;
                for (int l = 0; l < 16; l++)
                    s += qt[c + l];
                for (int l = 0; l < 4; l++) {
                    xl[t * (C / 4) + c / 4 + l] = dc;
                    q4[t * (C / 4) + c / 4 + l] = qt[c + 4 * l] + qt[c + 4 * l + 1] + qt[c + 4 * l + 2] + qt[c + 4 * l + 3];
                }
                xg[t * (C / 16) + c / 16] = dc * (float)s;
            }
        }
    }
}

/* ---- the weights as bytes u and, per 16 values, a and b (w = a·u + b) ---- */

#define F4 0x0004000400040004LL     /* a 16-bit shift of 4 in each word of a 64-bit element */

/* A chunk of 256 weights: u[r] values 64r … 64r + 63 as bytes; ae[r] lane l
** the a of the 4 values 64r + 4l …; bv lane g the b of values 16g …. The
** K-quants and IQ4_XS (lx_qdot8_int_scales) give a as d·sc, sc an integer: ie[r]
** lane l the sc of the 4 values 64r + 4l …, and d, instead of ae. */
struct chunk {
    __m512i u[4], ie[4];
    __m512 ae[4], bv;
    float d;
};


/* 16 int32 lanes: lane l = base + l / div. */
QD8 __m512i lanes_of(int base, int div)
{
    return _mm512_add_epi32(_mm512_set1_epi32(base),
                            _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                              div == 8 ? 3 : div == 4 ? 2 : 1));
}

/* The 16 lanes per 4 values of each register from a scale per 32 values (v's
** low 8 lanes, per = 32) or per 16 (per = 16): floats to ae, integers to ie. */
QD8 void expand(struct chunk *k, __m512i v, int per, int ints)
{
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
        const __m512i e = _mm512_permutexvar_epi32(per == 32 ? lanes_of(2 * r, 8) : lanes_of(4 * r, 4), v);
        if (ints)
            k->ie[r] = e;
        else
            k->ae[r] = _mm512_castsi512_ps(e);
    }
}

/* Eight 32-value blocks (lx_ql_w32's kinds) of the given bytes: register r
** holds blocks 2r and 2r + 1, each as its 16 low nibbles then its 16 high
** ones (their values in order); z moves signed values up to bytes. */
QD8 void chunk_w32(struct chunk *k, const unsigned char *p, int kind)
{
    static const float zs[] = {128.0f, 8.0f, 128.0f, 0.0f, 16.0f, 0.0f};   /* by kind (qlanes.h's order) */
    const size_t bytes = lx_ql_w32_bytes(kind);
    const int min = kind == LX_QL_Q4_1 || kind == LX_QL_Q5_1, five = kind == LX_QL_Q5_0 || kind == LX_QL_Q5_1;
    const size_t at = 2 + 2 * (size_t)min + 4 * (size_t)five;      /* the quants' first byte in a block */
    const __m512i low = _mm512_set1_epi8(0x0f),
                  nib_shift = _mm512_setr_epi64(0, 0, F4, F4, 0, 0, F4, F4);     /* 16-bit shifts: 0, 4, 0, 4 */
    uint16_t dh[8], mh[8];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
        const unsigned char *b0 = p + 2 * r * bytes, *b1 = b0 + bytes;
        memcpy(&dh[2 * r], b0, 2), memcpy(&dh[2 * r + 1], b1, 2);
        memcpy(&mh[2 * r], b0 + 2, 2), memcpy(&mh[2 * r + 1], b1 + 2, 2);
        if (kind == LX_QL_Q8_0) {
            __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(b0 + 2))),
                                           _mm256_loadu_si256((const __m256i *)(b1 + 2)), 1);
            k->u[r] = _mm512_xor_si512(v, _mm512_set1_epi8((char)0x80));
            continue;
        }
        __m256i two = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(b0 + at))),
                                              _mm_loadu_si128((const __m128i *)(b1 + at)), 1);
        __m512i v = _mm512_shuffle_i64x2(_mm512_castsi256_si512(two), _mm512_castsi256_si512(two), 0x50);
        v = _mm512_and_si512(_mm512_srlv_epi16(v, nib_shift), low);
        if (kind == LX_QL_IQ4_NL) {
            const __m512i levels = _mm512_broadcast_i32x4(_mm_add_epi8(
                _mm_loadu_si128((const __m128i *)lx_ql_iq4_levels), _mm_set1_epi8((char)0x80)));
            v = _mm512_shuffle_epi8(levels, v);
        }
        if (five) {
            uint32_t h0, h1;
            memcpy(&h0, b0 + 2 + 2 * min, 4), memcpy(&h1, b1 + 2 + 2 * min, 4);
            v = _mm512_or_si512(v, _mm512_maskz_set1_epi8((__mmask64)h0 | (__mmask64)h1 << 32, 16));
        }
        k->u[r] = v;
    }
    const __m512 d = _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dh)));
    expand(k, _mm512_castps_si512(d), 32, 0);
    const __m512 dg = _mm512_permutexvar_ps(lanes_of(0, 2), d);
    k->bv = min ? _mm512_permutexvar_ps(lanes_of(0, 2),
                                        _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)mh))))
                : _mm512_mul_ps(_mm512_set1_ps(-zs[kind]), dg);
}

/* Q4_K / Q5_K: register r holds sub-blocks 2r (the low nibbles of the 32
** bytes of pair r) and 2r + 1 (their high nibbles); Q5_K's fifth bits are
** bits 2r and 2r + 1 of the 32 high-bit bytes. */
QD8 void chunk_q45(struct chunk *k, const unsigned char *p, int five)
{
    const unsigned char *q = p + (five ? 48 : 16);
    const __m512i low = _mm512_set1_epi8(0x0f), one = _mm512_set1_epi8(1),
                  halves = _mm512_setr_epi64(0, 0, 0, 0, F4, F4, F4, F4);     /* 16-bit shifts: 0, 4 */
    uint64_t sc, mn;
    lx_ql_k_scales_u8(p + 4, &sc, &mn);
    const __m256 dm = _mm256_mul_ps(_mm256_set1_ps(lx_ql_f16(p + 2)), lx_ql_u8x8_ps(mn));
    const __m512i hb = five ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(p + 16))) : low;
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
        __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(q + 32 * r)));
        v = _mm512_and_si512(_mm512_srlv_epi16(v, halves), low);
        if (five) {
            const __m512i bit = _mm512_add_epi64(_mm512_set1_epi64(0x0002000200020002LL * r),
                                                 _mm512_setr_epi64(0, 0, 0, 0, 0x0001000100010001LL,
                                                                   0x0001000100010001LL, 0x0001000100010001LL,
                                                                   0x0001000100010001LL));
            v = _mm512_or_si512(v, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, bit), one), 4));
        }
        k->u[r] = v;
    }
    k->d = lx_ql_f16(p);
    expand(k, _mm512_cvtepu8_epi32(_mm_cvtsi64_si128((long long)sc)), 32, 1);
    k->bv = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_permutexvar_ps(lanes_of(0, 2), _mm512_castps256_ps512(dm)));
}

/* Q6_K: register r holds half r / 2's values 64m … 64m + 63 (m = r % 2):
** the 64 low-bit bytes of the half, low nibbles for m = 0, high for m = 1,
** with bits 4m, 4m + 1 (first 32 values) and 4m + 2, 4m + 3 (last 32) of
** the half's 32 high-bit bytes above them. */
QD8 void chunk_q6(struct chunk *k, const unsigned char *p)
{
    const __m512i low = _mm512_set1_epi8(0x0f), three = _mm512_set1_epi8(3);
#pragma GCC unroll 2
    for (int hh = 0; hh < 2; hh++) {
        const __m512i ql = _mm512_loadu_si512(p + 64 * hh),
                      qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(p + 128 + 32 * hh)));
#pragma GCC unroll 2
        for (int m = 0; m < 2; m++) {
            const long long s0 = 0x0001000100010001LL * (4 * m), s1 = 0x0001000100010001LL * (4 * m + 2);
            __m512i v = _mm512_and_si512(m ? _mm512_srli_epi16(ql, 4) : ql, low);
            __m512i h = _mm512_and_si512(_mm512_srlv_epi16(qh, _mm512_setr_epi64(s0, s0, s0, s0, s1, s1, s1, s1)),
                                         three);
            k->u[2 * hh + m] = _mm512_or_si512(v, _mm512_slli_epi16(h, 4));
        }
    }
    const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p + 192)));
    k->d = lx_ql_f16(p + 208);
    expand(k, sc, 16, 1);
    k->bv = _mm512_mul_ps(_mm512_set1_ps(-32.0f), _mm512_mul_ps(_mm512_set1_ps(k->d), _mm512_cvtepi32_ps(sc)));
}

/* Q2_K / Q3_K: register r holds values 128h + 32s + l (h = r / 2, s = 2(r % 2)
** in the first 32 bytes, s + 1 in the last 32; l < 32): bits 2s, 2s + 1 of the
** quants' bytes 32h + l and, for Q3_K, bit 4h + s of high-mask byte l (set:
** u = q + 4, the weight a·(u − 4)). */
QD8 void chunk_q23(struct chunk *k, const unsigned char *p, int three)
{
    const unsigned char *q = p + (three ? 32 : 16);
    const __m512i hm = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p)), one = _mm512_set1_epi16(0x0101);
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
        const int h = r / 2, s = 2 * (r % 2);
        const long long lo = 0x0001000100010001LL * (2 * s), hi = 0x0001000100010001LL * (2 * s + 2);
        __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(q + 32 * h)));
        v = _mm512_and_si512(_mm512_srlv_epi16(v, _mm512_setr_epi64(lo, lo, lo, lo, hi, hi, hi, hi)),
                             _mm512_set1_epi8(3));
        if (three) {
            const long long b0 = 0x0001000100010001LL * (4 * h + s), b1 = 0x0001000100010001LL * (4 * h + s + 1);
            __m512i b = _mm512_and_si512(_mm512_srlv_epi16(hm, _mm512_setr_epi64(b0, b0, b0, b0, b1, b1, b1, b1)), one);
            v = _mm512_or_si512(v, _mm512_slli_epi16(b, 2));
        }
        k->u[r] = v;
    }
    const __m128i sb = _mm_loadu_si128((const __m128i *)p), nibble = _mm_set1_epi8(0x0f);
    const __m512i sc = three ? _mm512_cvtepi8_epi32(lx_ql_q3_scales_i8(p))
                             : _mm512_cvtepu8_epi32(_mm_and_si128(sb, nibble));
    k->d = lx_ql_f16(p + (three ? 108 : 80));
    expand(k, sc, 16, 1);
    k->bv = three ? _mm512_mul_ps(_mm512_set1_ps(-4.0f), _mm512_mul_ps(_mm512_set1_ps(k->d), _mm512_cvtepi32_ps(sc)))
                  : _mm512_mul_ps(_mm512_set1_ps(-lx_ql_f16(p + 82)),
                                  lx_ql_u8_ps(_mm_and_si128(_mm_srli_epi16(sb, 4), nibble)));
}

/* IQ4_XS: register r holds sub-blocks 2r and 2r + 1 laid out as two IQ4_NL
** blocks (chunk_w32), each with its scale d·(sc − 32). */
QD8 void chunk_iq4xs(struct chunk *k, const unsigned char *p)
{
    const __m512i low = _mm512_set1_epi8(0x0f), nib_shift = _mm512_setr_epi64(0, 0, F4, F4, 0, 0, F4, F4),
                  levels = _mm512_broadcast_i32x4(_mm_add_epi8(_mm_loadu_si128((const __m128i *)lx_ql_iq4_levels),
                                                               _mm_set1_epi8((char)0x80)));
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
        const __m256i two = _mm256_loadu_si256((const __m256i *)(p + 8 + 32 * r));
        __m512i v = _mm512_shuffle_i64x2(_mm512_castsi256_si512(two), _mm512_castsi256_si512(two), 0x50);
        k->u[r] = _mm512_shuffle_epi8(levels, _mm512_and_si512(_mm512_srlv_epi16(v, nib_shift), low));
    }
    uint32_t lo;
    uint16_t hi;
    memcpy(&lo, p + 4, 4), memcpy(&hi, p + 2, 2);     /* lx_ql_iq4xs_scale's nibbles and high bits, 8 lanes at once */
    const __m256i j = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                  sc = _mm256_or_si256(
                      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)lo), _mm256_slli_epi32(j, 2)),
                                       _mm256_set1_epi32(0x0f)),
                      _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(hi), _mm256_slli_epi32(j, 1)),
                                                         _mm256_set1_epi32(3)), 4));
    const __m256i sc32 = _mm256_sub_epi32(sc, _mm256_set1_epi32(32));
    k->d = lx_ql_f16(p);
    const __m512 a8 = _mm512_castps256_ps512(_mm256_mul_ps(_mm256_set1_ps(k->d), _mm256_cvtepi32_ps(sc32)));
    expand(k, _mm512_castsi256_si512(sc32), 32, 1);
    k->bv = _mm512_mul_ps(_mm512_set1_ps(-128.0f), _mm512_permutexvar_ps(lanes_of(0, 2), a8));
}

QD8 void chunk_of(struct chunk *k, const unsigned char *w, int type)
{
    switch (type) {
    case LX_DT_Q4_K: chunk_q45(k, w, 0); break;
    case LX_DT_Q5_K: chunk_q45(k, w, 1); break;
    case LX_DT_Q6_K: chunk_q6(k, w); break;
    case LX_DT_Q2_K: chunk_q23(k, w, 0); break;
    case LX_DT_Q3_K: chunk_q23(k, w, 1); break;
    case LX_DT_IQ4_XS: chunk_iq4xs(k, w); break;
    case LX_DT_Q8_0: chunk_w32(k, w, LX_QL_Q8_0); break;
    case LX_DT_Q4_0: chunk_w32(k, w, LX_QL_Q4_0); break;
    case LX_DT_IQ4_NL: chunk_w32(k, w, LX_QL_IQ4_NL); break;
    case LX_DT_Q4_1: chunk_w32(k, w, LX_QL_Q4_1); break;
    case LX_DT_Q5_0: chunk_w32(k, w, LX_QL_Q5_0); break;
    default: chunk_w32(k, w, LX_QL_Q5_1); break;
    }
}

/* ---- the dots -------------------------------------------------------------- */

/* n (a constant in each instance) prepared rows · one weight row of type (a
** constant too); per row two chains (registers 0, 2 and 1, 3 with the offsets). */
QD8 void dot8_n(float *out, const int8_t *q, const float *xl, const float *xg, const int n, const unsigned char *w,
                const int type, long C)
{
    const size_t chunk_bytes = lx_dtype_block_bytes(type) * (256 / lx_dtype_block(type));
    __m512 s0[4], s1[4];
#pragma GCC unroll 4
    for (int t = 0; t < n; t++)
        s0[t] = s1[t] = _mm512_setzero_ps();
    for (long k = 0; k < C; k += 256, w += chunk_bytes) {
        struct chunk ch;
        chunk_of(&ch, w, type);
#pragma GCC unroll 4
        for (int t = 0; t < n; t++) {
            const int8_t *qt = q + t * C + k;
            const float *lt = xl + t * (C / 4) + k / 4;
            if (lx_qdot8_int_scales(type)) {     /* Σ sc·Σ u·q exact in int32, one conversion, times d and x's scale */
                __m512i acc = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int r = 0; r < 4; r++)
                    acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ch.u[r],
                                                                                       _mm512_loadu_si512(qt + 64 * r)),
                                                                   ch.ie[r]));
                s0[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), _mm512_set1_ps(ch.d * lt[0]), s0[t]);
                s1[t] = _mm512_fmadd_ps(ch.bv, _mm512_loadu_ps(xg + t * (C / 16) + k / 16), s1[t]);
                continue;
            }
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                __m512i i = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ch.u[r], _mm512_loadu_si512(qt + 64 * r));
                __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(i), _mm512_loadu_ps(lt + 16 * r));
                if (r & 1)
                    s1[t] = _mm512_fmadd_ps(v, ch.ae[r], s1[t]);
                else
                    s0[t] = _mm512_fmadd_ps(v, ch.ae[r], s0[t]);
            }
            s1[t] = _mm512_fmadd_ps(ch.bv, _mm512_loadu_ps(xg + t * (C / 16) + k / 16), s1[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < n; t++)
        out[t] = _mm512_reduce_add_ps(_mm512_add_ps(s0[t], s1[t]));
}

/* n rows (a constant) for each type, so that the chunk's unpacking is the type's alone. */
QD8 void dot8_rows(float *out, const int8_t *q, const float *xl, const float *xg, const int n, const void *w,
                   int type, long C)
{
    switch (type) {
#define QD8_CASE(T) case T: dot8_n(out, q, xl, xg, n, w, T, C); break;
    QD8_CASE(LX_DT_Q4_K) QD8_CASE(LX_DT_Q5_K) QD8_CASE(LX_DT_Q6_K) QD8_CASE(LX_DT_Q2_K) QD8_CASE(LX_DT_Q3_K)
    QD8_CASE(LX_DT_IQ4_XS) QD8_CASE(LX_DT_Q8_0) QD8_CASE(LX_DT_Q4_0) QD8_CASE(LX_DT_IQ4_NL) QD8_CASE(LX_DT_Q4_1)
    QD8_CASE(LX_DT_Q5_0)
#undef QD8_CASE
    default: dot8_n(out, q, xl, xg, n, w, LX_DT_Q5_1, C); break;
    }
}

/* ---- which dots ------------------------------------------------------------ */

int lx_qdot8_lanes(int type, long C, int max)
{
    static int cpu = -1;    /* 16: AVX-512 with VNNI; 8: AVX2 and FMA (F16C: every AVX2 CPU) */
    if (cpu < 0)
        cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
                      __builtin_cpu_supports("fma")
                  ? 16
              : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 8
                                                                               : 0;
    if (type < LX_DT_Q8_0 || type > LX_DT_IQ1_M || C <= 0 || C % 256 != 0)
        return 0;
    if (cpu == 16 && max >= 16 && type < LX_DT_LANES_N)    /* the codebook types: 8 lanes on either CPU */
        return 16;
    return cpu >= 8 && max >= 8 ? 8 : 0;
}

__attribute__((target(QD8_TARGET))) static void qdot8_16(float *out, const int8_t *q, const float *xl,
                                                         const float *xg, int n, const void *w, int type, long C)
{
    for (int t = 0; t < n; t += 4) {
        const int m = n - t < 4 ? n - t : 4;
        const int8_t *qt = q + t * C;
        const float *lt = xl + t * (C / 4), *gt = xg + t * (C / 16);
        switch (m) {    /* m a constant in each: the sums stay in registers */
        case 1: dot8_rows(out + t, qt, lt, gt, 1, w, type, C); break;
        case 2: dot8_rows(out + t, qt, lt, gt, 2, w, type, C); break;
        case 3: dot8_rows(out + t, qt, lt, gt, 3, w, type, C); break;
        default: dot8_rows(out + t, qt, lt, gt, 4, w, type, C); break;
        }
    }
}

void lx_qdot8(float *out, const int8_t *q, const float *xl, const float *xg, const int32_t *q4, int n, const void *w,
              int type, long C, int lanes)
{
    LX_ASSERT(n >= 1 && lanes > 0 && lx_qdot8_lanes(type, C, lanes) == lanes);
    if (lanes == 16) {
        qdot8_16(out, q, xl, xg, n, w, type, C);
        return;
    }
    for (int t = 0; t < n; t += 2)      /* two rows a pass: eight accumulators */
        lx_qdot8_rows8(out + t, q + t * C, xl + t * (C / 4), xg + t * (C / 16), q4 + t * (C / 4), n - t < 2 ? 1 : 2, w,
                       type, C);
}
