/*
** harness/engine/model/kvcache.c - a KV cache sized for a model's
** architecture: its buffers laid out once, for both the plan (bytes) and the
** allocation (see kvcache.h).
*/
#include "harness/engine/model/kvcache.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/numerics.h"
#include "harness/engine/model/positions.h"

long lx_kvcache_ring_rows(const struct lx_arch *a)
{
    return a->local_every ? a->local_window + LX_KVCACHE_REWIND : 0;
}

long lx_kvcache_layer_rows(const struct lx_arch *a, const struct lx_spec *spec, long l, long T, long *keep)
{
    long sinks = 0, cap = T;
    if (lx_arch_local(a, l)) {
        cap = lx_kvcache_ring_rows(a);
    } else if (spec && (spec->vis.block || spec->vis.window)) {     /* bca's two blocks, or the window */
        sinks = spec->vis.sinks;
        cap = sinks + (spec->vis.block ? 2 * spec->vis.block : spec->vis.window) + LX_KVCACHE_REWIND;
    }
    if (keep)
        *keep = cap < T ? sinks : 0;
    return cap < T ? cap : T;
}

/* Every buffer of a cache with its element count (in double: hostile sizes
** overflow long); `alloc` allocates them. Returns the bytes in all, or -1
** when an allocation failed. */
static double cache_layout(struct lx_kvcache *c, const struct lx_arch *a, const struct lx_spec *spec, int n_slots,
                           int T, int far, int dist, int alloc)
{
    double slot_rows = 0.0;
    int ring = 0;
    for (long l = 0; l < a->layers; l++) {
        long cap = lx_kvcache_layer_rows(a, spec, l, T, NULL);
        slot_rows += (double)cap;
        ring |= cap < T;
    }
    double KD = (double)lx_arch_kv(a) * a->d_head, rows = (double)n_slots * slot_rows, C = a->d_model,
           F = a->d_mlp, F2 = lx_arch_gated(a) ? 2 * F : F;
    int half = lx_kv_get();
    double scr = omp_get_max_threads();     /* the attention's threads, each with its scratch (decoding.c) */
    struct { void **p; double n; size_t el; } b[] = {
        {(void **)&c->k, half ? 0 : rows * KD, 4},
        {(void **)&c->v, half ? 0 : rows * KD, 4},
        {(void **)&c->kh, half ? rows * KD : 0, 2},
        {(void **)&c->vh, half ? rows * KD : 0, 2},
        {(void **)&c->wide, half || ring ? scr * 3.0 * T * a->d_head : 0, 4},
        {(void **)&c->cap, (double)a->layers, sizeof(long)},
        {(void **)&c->off, (double)a->layers, sizeof(long)},
        {(void **)&c->keep, (double)a->layers, sizeof(long)},
        {(void **)&c->kfar, far ? rows * KD : 0, 4},
        {(void **)&c->len, n_slots, sizeof(long)},
        {(void **)&c->top, n_slots, sizeof(long)},
        {(void **)&c->n_far, (double)n_slots * a->layers, sizeof(long)},
        {(void **)&c->x, C, 4},
        {(void **)&c->xn, C, 4},
        {(void **)&c->qkv, (double)lx_arch_qkv(a), 4},
        {(void **)&c->ao, (double)a->heads * a->d_head, 4},
        {(void **)&c->xm, C, 4},
        {(void **)&c->h, F2, 4},
        {(void **)&c->act, F, 4},
        {(void **)&c->rstd, 1, 4},
        {(void **)&c->cs, (a->local_every ? 3.0 : 2.0) * a->d_head, 8},  /* queries', (xpos) keys', local layers' rotary rows */
        {(void **)&c->s, scr * (double)(a->heads / lx_arch_kv(a)) * T, 4},     /* a key/value head's G rows */
        {(void **)&c->tab, scr * 2.0 * T, 8},
        {(void **)&c->dtab, dist ? 2.0 * a->heads * T : 0, 8},  /* kept distance tables */
    };
    double total = 0.0;
    for (size_t i = 0; i < sizeof b / sizeof *b; i++) {
        total += b[i].n * (double)b[i].el;
        if (alloc && b[i].n > 0 && !(*b[i].p = calloc((size_t)b[i].n, b[i].el)))
            return -1.0;
    }
    if (alloc) {
        c->n_slots = n_slots;
        c->half = half;
        c->n_scr = (int)scr;
        c->L = (int)a->layers, c->T = T, c->KV = (int)lx_arch_kv(a), c->D = (int)a->d_head;
        for (long l = 0; l < a->layers; l++) {
            c->cap[l] = lx_kvcache_layer_rows(a, spec, l, T, &c->keep[l]);
            c->off[l] = c->slot_rows;
            c->slot_rows += c->cap[l];
        }
    }
    return total;
}

double lx_kvcache_bytes(const struct lx_arch *a, const struct lx_spec *spec, int n_slots, int T, int far, int dist)
{
    struct lx_kvcache c = {0};
    return cache_layout(&c, a, spec, n_slots, T, far, dist, 0);
}

int lx_kvcache_alloc(struct lx_kvcache *c, const struct lx_arch *a, const struct lx_spec *spec, int n_slots, int T,
                     struct lx_error *err)
{
    memset(c, 0, sizeof *c);
    int far = lx_decode_far(spec), dist = lx_decode_dist_kept(spec);
    double need = lx_kvcache_bytes(a, spec, n_slots, T, far, dist), avail = lx_mem_available();
    if (n_slots >= 1 && T >= 1 && need <= avail && cache_layout(c, a, spec, n_slots, T, far, dist, 1) >= 0.0)
        return LX_OK;
    lx_kvcache_release(c);
    char nb[32], ab[32];
    return lx_err(err, LX_ENOMEM, "a KV cache for %d window(s) of %d tokens (%ld layers, %ld key/value heads of "
                  "%ld) needs %s; %s of memory are available\n  hint: use a shorter length or a smaller arch",
                  n_slots, T, a->layers, lx_arch_kv(a), a->d_head, lx_fmt_bytes(nb, need), lx_fmt_bytes(ab, avail));
}

int lx_kvcache_position(struct lx_kvcache *c, const struct lx_spec *spec, long pos)
{
    if (!spec->pose.random)
        return (int)pos;
    if (!c->pos_ids) {
        c->pos_ids = lx_xmalloc(sizeof(int) * (size_t)c->T);
        lx_randpos_eval(c->pos_ids, c->T, spec->pose.target);
    }
    return c->pos_ids[pos];
}

void lx_kvcache_release(struct lx_kvcache *c)
{
    if (!c)
        return;
    free(c->pos_ids);
    void *p[] = {c->k, c->v, c->kh, c->vh, c->wide, c->cap, c->off, c->keep, c->kfar, c->len, c->top, c->n_far,
                 c->x, c->xn, c->qkv, c->ao, c->xm, c->h, c->act, c->rstd, c->cs, c->s, c->tab, c->dtab};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        free(p[i]);
    memset(c, 0, sizeof *c);
}

int lx_kvcache_check_range(const struct lx_kvcache *c, struct lx_error *err)
{
    if (!c->over_layer)
        return LX_OK;
    return lx_err(err, LX_ERUN, "kv_cache f16: a key or value of layer %d at position %ld is past f16's range "
                  "(|x| > 65504) and became infinite in the cache\n  hint: use kv_cache bf16 (fp32's range in the "
                  "same bytes) or fp32", c->over_layer - 1, c->over_pos);
}

/* Row 0 of (slot, layer) in one of the cache's (n_slots, L, T, KV·D) buffers. */
