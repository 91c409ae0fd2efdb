/*
** tests/model_stacks.h - every method of methods/methods.def that runs on a
** model, alone and in the papers' combinations, with windows of 2 to 6 keys,
** sinks and far keys: the stacks the attention paths are compared on
** (tests/test_tiled.c, tests/test_decode.c). Rows of 4 to 37 keys reach
** every window, sink and far-key edge. rel_err() is the error they are
** compared by: normwise relative, max |got − ref| / max |ref|.
** (tests/test_tiled_bwd.c takes the ones training can run: windows, but no sinks,
** far keys or calibration.)
*/
#ifndef LX_TEST_MODEL_STACKS_H
#define LX_TEST_MODEL_STACKS_H

#include <math.h>

static inline double rel_err(const float *a, const float *ref, long n)
{
    double num = 0.0, den = 0.0;
    for (long i = 0; i < n; i++) {
        num = fmax(num, fabs((double)a[i] - ref[i]));
        den = fmax(den, fabs((double)ref[i]));
    }
    return num / (den > 0.0 ? den : 1.0);
}

/* q (H heads) and k (KV heads) of every fused qkv row ((H + 2·KV)·D floats)
** to unit length, as the model hands them to attention under CosScale. */
static inline void unit_qk_rows(float *qkv, int T, int H, int KV, int D)
{
    long ld = (long)(H + 2 * KV) * D;
    for (long r = 0; r < (long)T * (H + KV); r++) {
        float *x = qkv + (r / (H + KV)) * ld + (r % (H + KV)) * D;
        double nn = 0.0;
        for (int d = 0; d < D; d++)
            nn += (double)x[d] * x[d];
        for (int d = 0; d < D; d++)
            x[d] = (float)(x[d] / sqrt(nn));
    }
}

static const char *const stacks[] = {
    "none",
    "nope",
    "rope",
    "{rope: {layout: interleaved}}",
    "alibi",
    "[rope, {pi: {scale: 4}}]",
    "[rope, {ntk: {scale: 4}}]",
    "[rope, {ntk: {mode: dynamic}}]",
    "[rope, {yarn: {scale: 4}}]",
    "[rope, {giraffe: {power: 0.5, truncate: 8}}]",   /* pairs at ρ and at 0 */
    "[rope, prope]",
    "[rope, {prope: {mode: modded}}, scaleinv]",
    "[rope, infoscale]",
    "[rope, {logn: {mode: su}}]",
    "[rope, {logn: {mode: ssmax}}]",
    "[rope, {logn: {mode: ssmax, learn: true}}]",
    "[rope, {scaleinv: {tau: 2}}]",
    "[rope, {cosscale: {s: 8}}]",
    "[rope, {cosscale: {s: 8}}, {scaleinv: {tau: 2}}, {rerope: {window: 4}}]",
    "[rope, {rerope: {window: 3}}]",
    "[rope, {rerope: {window: 3, leak: 2}}]",
    "[{rope: {layout: interleaved}}, {rerope: {window: 5, leak: 3}}, infoscale]",
    "[rope, {selfextend: {group: 3, window: 4}}]",
    "[{rope: {layout: interleaved}}, {selfextend: {group: 2, window: 5}}, {logn: {mode: su}}]",
    "[rope, {string: {offset: 4, local: 2}}]",
    "[{rope: {layout: interleaved}}, {string: {offset: 6, local: 1, attn_factor: 1}}, {logn: {mode: su}}]",
    "[rope, {string: {offset: 3, local: 3}}, {window: {size: 5}}]",  /* W = S: the map moves nothing */
    "[rope, {dca: {chunk: 6, local: 2}}]",
    "[{rope: {layout: interleaved}}, {dca: {chunk: 9, local: 4}}, infoscale]",
    "[rope, {dca: {chunk: 5, local: 3}}, {scaleinv: {tau: 2}}]",   /* a distance op at |δ| */
    "[rope, {streaming: {sinks: 2, recent: 3}}]",
    "[rope, {streaming: {sinks: 5, recent: 1}}]",
    "[alibi, {streaming: {sinks: 2, recent: 4}}]",
    "[rope, {lminfinite: {n_global: 2, local: 3, limit: 3}}]",
    "[rope, {yarn: {scale: 4}}, {lminfinite: {n_global: 1, local: 6}}]",
    "[rope, {window: {size: 2}}]",
    "[rope, {window: {size: 6}}, {logn: {mode: su}}]",
    "[alibi, {window: {size: 5}}, infoscale]",
    "[alibi, {scaleinv: {tau: 2}}, infoscale, {streaming: {sinks: 2, recent: 4}}]",    /* two distance ops */
    "[rope, {window: {size: 5}}, t5align]",
    "[rope, {t5align: {mode: entropy}}]",
    "[rope, pose]",
    "{t5bias: {buckets: 8, max_distance: 12}}",     /* exact 0-3, log 4-7, the last from 12 on */
    "[infoscale, {t5bias: {buckets: 6, max_distance: 9}}]",
    "[{t5bias: {buckets: 10, max_distance: 20}}, {window: {size: 5}}]",
    "[{t5bias: {buckets: 8, max_distance: 10}}, {streaming: {sinks: 2, recent: 4}}]",
    "kerple",
    "[{logn: {mode: su}}, kerple]",
    "[kerple, {window: {size: 4}}]",
    "{kerple: {kernel: power}}",
    "sandwich",
    "[{logn: {mode: su}}, {sandwich: {dim: 8}}]",
    "[sandwich, {streaming: {sinks: 2, recent: 3}}]",
    "[alibi, {pi: {scale: 2.5}}, {window: {size: 5}}]",     /* ALiBi's distances compressed */
    "[sandwich, {pi: {scale: 3}}]",
    "[infoscale, {kerple: {kernel: power}}, {window: {size: 3}}]",
    "[rope, {xpos: {scale_base: 8}}]",
    "[{rope: {layout: interleaved}}, {xpos: {scale_base: 4, gamma: 1}}, {window: {size: 4}}, infoscale]",
    "[rope, {xpos: {scale_base: 8}}, {bca: {block: 3}}]",   /* blocks of 3: rows see 3 to 5 keys */
    "[alibi, {bca: {block: 4}}, infoscale]",
    "[{logn: {mode: su}}, sandwich, {bca: {block: 5}}]",
    "[rope, zerosink]",
    "[alibi, {zerosink: {logit: 3}}, {window: {size: 3}}, infoscale]",     /* the sink often the row's max */
    "[rope, {zerosink: {logit: -2}}, {streaming: {sinks: 2, recent: 3}}]",
    "[rope, {zerosink: {logit: 1}}, {rerope: {window: 3}}]",
    "[rope, {zerosink: {learned: true}}]",      /* a sink logit per head (tests/stack.h: tstack_sinks) */
    "[alibi, {zerosink: {logit: 1, learned: true}}, {window: {size: 3}}]",
};

#define N_STACKS (sizeof stacks / sizeof *stacks)

#endif
