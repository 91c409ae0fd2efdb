/*
** harness/engine/kernels/share.c - a loop's items shared by a team, own part
** first, then the others' rests from their ends (share.h).
**
** A part is one 64-bit word, its next chunk in the low half and its end in the
** high half, so that the owner's take from the front and another thread's
** take from the back are each one compare-and-swap and can never both take
** the same chunk.
*/
#include "harness/engine/kernels/share.h"

#include "harness/core/lx.h"

static inline uint64_t pack(uint64_t lo, uint64_t hi)
{
    return lo | hi << 32;
}

void lx_share_init(struct lx_share *s, long n, long chunk, int threads)
{
    LX_ASSERT(n >= 0 && chunk >= 1 && threads >= 1);
    long nc = (n + chunk - 1) / chunk;
    LX_ASSERT(nc < (1L << 32));
    int parts = threads < LX_SHARE_PARTS ? threads : LX_SHARE_PARTS;
    s->n = n, s->chunk = chunk, s->parts = parts;
    for (int p = 0; p < parts; p++)     /* schedule(static)'s split, in chunks */
        atomic_store_explicit(&s->part[p].lohi, pack((uint64_t)(nc * p / parts), (uint64_t)(nc * (p + 1) / parts)),
                              memory_order_relaxed);
}

static void chunk_range(const struct lx_share *s, uint64_t c, long *i0, long *i1)
{
    *i0 = (long)c * s->chunk;
    *i1 = *i0 + s->chunk < s->n ? *i0 + s->chunk : s->n;
}

int lx_share_next(struct lx_share *s, int th, long *i0, long *i1)
{
    if (th < s->parts) {     /* the front of its own part */
        _Atomic uint64_t *w = &s->part[th].lohi;
        uint64_t v = atomic_load_explicit(w, memory_order_relaxed);
        while ((uint32_t)v < (uint32_t)(v >> 32))
            if (atomic_compare_exchange_weak_explicit(w, &v, v + 1, memory_order_relaxed, memory_order_relaxed)) {
                chunk_range(s, (uint32_t)v, i0, i1);
                return 1;
            }
    }
    for (;;) {      /* the back of the part with the most left */
        int best = -1;
        uint64_t bv = 0, most = 0;
        for (int p = 0; p < s->parts; p++) {
            uint64_t v = atomic_load_explicit(&s->part[p].lohi, memory_order_relaxed);
            uint64_t lo = (uint32_t)v, hi = v >> 32;
            if (hi > lo && hi - lo > most)
                best = p, bv = v, most = hi - lo;
        }
        if (best < 0)
            return 0;
        uint64_t lo = (uint32_t)bv, hi = bv >> 32;
        if (atomic_compare_exchange_strong_explicit(&s->part[best].lohi, &bv, pack(lo, hi - 1), memory_order_relaxed,
                                                    memory_order_relaxed)) {
            chunk_range(s, hi - 1, i0, i1);
            return 1;
        }
    }
}

long lx_share_chunk(long item_bytes, long bytes)
{
    long c = item_bytes > 0 ? bytes / item_bytes : bytes;
    return c > 1 ? c : 1;
}
