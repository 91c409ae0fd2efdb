/*
** harness/engine/kernels/share.h - the items of a loop shared by a team's
** threads, each thread's own contiguous part first, then what is left of the
** others' parts taken from their ends.
**
** schedule(static) gives each thread n / threads items and the loop ends when
** the slowest ends: on a machine where one core is busier or slower a while
** (another process, a noisy neighbour's memory traffic), the others wait. An
** lx_share splits the items as schedule(static) does, into one part per
** thread; a thread takes chunks of its own part from its start, so its reads
** stay one stream, and a thread done with its own takes chunks from the end
** of the part with the most left. Each item is taken once. Which thread takes
** an item changes with timing; an item's work does not (each output of a
** product is one thread's sum), so no value depends on it.
**
** Usage: lx_share_init before the parallel region, then in it
**     long i0, i1;
**     while (lx_share_next(&sh, omp_get_thread_num(), &i0, &i1))
**         for (long i = i0; i < i1; i++) ...
** A team smaller than planned leaves parts no thread owns; the others take
** them as they take any part's rest.
*/
#ifndef LX_SHARE_H
#define LX_SHARE_H

#include <stdatomic.h>
#include <stdint.h>

#define LX_SHARE_PARTS 64   /* threads past this many own no part and only take from others' */

struct lx_share {
    struct {
        _Alignas(64) _Atomic uint64_t lohi;     /* a part's next and end chunk: lo | hi << 32 */
    } part[LX_SHARE_PARTS];
    long n, chunk;
    int parts;
};

/* Items [0, n) in chunks of chunk items (the last may be shorter), parted
** among threads (at most LX_SHARE_PARTS parts). */
void lx_share_init(struct lx_share *s, long n, long chunk, int threads);
/* The next chunk for thread th as [*i0, *i1): from its own part, else from
** the end of the part with the most chunks left; 0 when none is left. */
int lx_share_next(struct lx_share *s, int th, long *i0, long *i1);
/* Chunk size for items of item_bytes each that keeps a chunk near bytes (at least 1). */
long lx_share_chunk(long item_bytes, long bytes);

#endif
