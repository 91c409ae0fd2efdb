/*
** harness/engine/kernels/tiled_impl.h - what the tiled forward's files share
** (tiled.c, tiled_far.c, tiled_stats.c); not for other callers: attention.h is the interface.
*/
#ifndef LX_TILED_IMPL_H
#define LX_TILED_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "harness/engine/kernels/attention.h"

/* What one call shares between its threads. */
struct tiled {
    const struct lx_spec *spec;
    const float *q, *k, *v;     /* (T, ld) views: query head h at h·D, its key/value head at (h / G)·D */
    float *o;                   /* (T, ldo) */
    int ld, ldo, T, H, KV, D, causal, n_tab;
    long L;                     /* a head's distance tables' length, lx_spec_tab_len(spec, T) */
    int G;                      /* query heads per key/value head, H / KV */
    int far;                    /* 1: far pairs take their scores from the rotated rows */
    int avx2;                   /* 1: the CPU has AVX2 and FMA (the softmax loops' clone) */
    int avx512;                 /* 1: fast numerics on an AVX-512 CPU: the sixteen-lane exp sums */
    int fma8;                   /* 1: fast numerics on AVX2 without AVX-512: the eight-lane FMA exp sums */
    int bf16;                   /* 1: numerics bf16, P rounded to bf16 before P·V (q, k, v come rounded) */
    const struct lx_tile_ws *ws;
    const float *mult;          /* (H,) or NULL */
    const struct lx_tile_stats *st;     /* row statistics to sum, or NULL */
    long st_row1;               /* their rows end here (st->row1, or T) */
    int bq;                     /* queries per block (ws->bq, or fewer: see lx_attn_tiled_forward) */
    long su, nsu;               /* rows of a statistics unit, units per head */
    const float *kp;            /* ws->kpack when the tiles' products run on it, else NULL */
    size_t kp_head;             /* its floats per key/value head */
    /* numerics bf16 on an AVX512-BF16 CPU: both products on the bf16 kernel
    ** (lx_gemm_rows_bf16), keys and values packed in bf16 in ws->kpack */
    int bf16k;
    int pfused;                 /* 1: with bf16k, on AVX512-BF16: tile_row writes P in bf16 as it takes e^x */
    const uint16_t *kb, *vb;    /* the keys' and the values' panels (kp is NULL then) */
    size_t kvb_head;            /* bf16 values of each per key/value head */
    long vb_ps;                 /* the values' panel stride */
    void (*bf16prod)(float *, int, const uint16_t *, long, long, const uint16_t *, long, int, int, int, float, float);
};

/* The far-key rows of a position map, once per call, into x->ws->rot (tiled_far.c). */
void lx_tiled_far_rows(const struct tiled *x);

/* S (nr, nc; stride ws->bk) = c · the far queries of rows i0.. of head h times the far keys j0.. of a
** triangle (part 0 lower, 1 upper). */
void lx_tiled_far_product(const struct tiled *x, float *S, int part, int h, float c, long i0, long j0, int nr,
                          int nc);

/* ---- row statistics (tiled_stats.c; attention.h, "Row statistics from the tiles") ---- */

/* One query row's sums, in e = exp(l − m) of its running max m. */
struct rowacc {
    double u;                                       /* Σ e (l − m) */
    double first;                                   /* e of key 0 */
    double sum, sum2;                               /* Σ l, Σ l² over the visible keys */
    double bucket[LX_DIAG_BUCKETS];                 /* Σ e per distance bucket */
    double mass[LX_MAX_RANGES], um[LX_MAX_RANGES];  /* Σ e, Σ e (l − m) per distance range */
};

/* A row's sums when its running max moves (α = e^dm), its sum Σ e before the move l. */
void lx_tile_acc_rescale(struct rowacc *A, const struct lx_tile_stats *st, double al, double dm, double l);
/* Add tile columns [c0, c1) of row i (key j0 + c at column c): lg the logits, e = exp(lg − m). */
void lx_tile_acc_add(struct rowacc *A, const struct lx_tile_stats *st, const float *lg, const float *e, float m,
                     long i, long j0, long c0, long c1);
/* Row i's statistics from its sums into d, Z = Σ e over all its n visible keys (and a zero sink, whose
** probability is ps). */
void lx_tile_acc_finish(struct lx_diag *d, const struct rowacc *A, const struct lx_tile_stats *st, double Z, long n,
                        long i, double ps);

#endif
