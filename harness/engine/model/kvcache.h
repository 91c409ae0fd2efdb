/*
** harness/engine/model/kvcache.h - a KV cache (kernels/decode.h) sized for a
** model's architecture: the bytes it takes (the plan) and its allocation,
** from one layout. Includes the kernel and the architecture, not the model.
*/
#ifndef LX_KVCACHE_H
#define LX_KVCACHE_H

#include "harness/engine/kernels/decode.h"
#include "harness/engine/model/arch.h"

/* Bytes lx_kvcache_alloc takes for n_slots windows of T rows (far: kfar too). */
double lx_kvcache_bytes(const struct lx_arch *a, int n_slots, int T, int far);

/* Allocate a cache for n_slots windows of up to T rows of model arch a under
** spec; LX_ENOMEM (with sizes) when it does not fit. Release accepts NULL. */
int lx_kvcache_alloc(struct lx_kvcache *c, const struct lx_arch *a, const struct lx_spec *spec, int n_slots, int T,
                     struct lx_error *err);
void lx_kvcache_release(struct lx_kvcache *c);

#endif
