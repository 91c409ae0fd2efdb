/*
** harness/engine/model/kvcache.h - a KV cache (kernels/decode.h) sized for a
** model's architecture: the bytes it takes (the plan) and its allocation,
** from one layout. Includes the kernel and the architecture, not the model.
*/
#ifndef LX_KVCACHE_H
#define LX_KVCACHE_H

#include "harness/engine/data/instance.h"
#include "harness/engine/kernels/decode.h"
#include "harness/engine/model/arch.h"

/* Rows a cache may be rewound by: a decode from position p after a pass that
** cached rows up to T (the answer reader's teacher-forced pass, rewound to the
** answer's first miss) starts at p >= T − LX_MAX_ANSWER. */
#define LX_KVCACHE_REWIND LX_MAX_ANSWER

/* The rows of a local layer's ring (local_window + LX_KVCACHE_REWIND), or 0
** for a model without local layers. */
long lx_kvcache_ring_rows(const struct lx_arch *a);

/* Rows layer l of a cache for T tokens keeps under spec (NULL: as if it read
** every key): T, or where that is fewer, *keep sinks and a ring of the keys
** a row reads besides them plus LX_KVCACHE_REWIND: a local layer
** (lx_arch_local) its last local_window keys, no sinks; any other layer
** under a window (window, streaming, lminfinite: W keys) or bca's blocks (2B)
** the spec's sinks and that span. keep may be NULL. */
long lx_kvcache_layer_rows(const struct lx_arch *a, const struct lx_spec *spec, long l, long T, long *keep);

/* Bytes lx_kvcache_alloc takes for n_slots windows of T rows under spec (far:
** kfar too; dist: the kept distance tables, lx_decode_dist_kept). */
double lx_kvcache_bytes(const struct lx_arch *a, const struct lx_spec *spec, int n_slots, int T, int far, int dist);

/* Allocate a cache for n_slots windows of up to T rows of model arch a under
** spec; LX_ENOMEM (with sizes) when it does not fit. Release accepts NULL. */
int lx_kvcache_alloc(struct lx_kvcache *c, const struct lx_arch *a, const struct lx_spec *spec, int n_slots, int T,
                     struct lx_error *err);
void lx_kvcache_release(struct lx_kvcache *c);

/* LX_ERUN naming the layer and position of the first value an f16 cache
** (kv_cache: f16) stored past f16's range as infinity; LX_OK otherwise. */
int lx_kvcache_check_range(const struct lx_kvcache *c, struct lx_error *err);

/* The position of row pos: pos, or under randpos at evaluation entry pos of
** the draw for the cache's T rows (drawn on first use), which is the draw
** the pass that filled the rows used when it was T tokens long. */
int lx_kvcache_position(struct lx_kvcache *c, const struct lx_spec *spec, long pos);

#endif
