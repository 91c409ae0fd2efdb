/*
** harness/scaleout/shard.h - which cells a shard of a sweep runs (docs/cluster.md).
**
** Shard k of n runs the cells whose run key, read as a 64-bit hexadecimal
** number (the key is the first 16 hex digits of a SHA-256), is k modulo n:
** stable across processes, machines and plan orders, and computable outside
** lenx (Python: int(key, 16) % n). Under `--models-only` the model key is
** sharded the same way.
*/
#ifndef LX_SHARD_H
#define LX_SHARD_H

#include "harness/core/lx.h"

#define LX_MAX_SHARDS 100000

struct lx_shard {
    long k, n;                  /* this shard, of n (0 <= k < n) */
};

/* "K/N" (0-based K < N <= LX_MAX_SHARDS); err names the text and a hint. */
int lx_shard_parse(const char *text, struct lx_shard *out, struct lx_error *err);

/* The shard of a Slurm array task: K = (SLURM_ARRAY_TASK_ID -
** SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP (MIN 0 and STEP 1 when
** unset), N = SLURM_ARRAY_TASK_COUNT. *found = 0 (and nothing else done)
** outside an array job; `note` gets what was read, for stderr. */
int lx_shard_from_env(struct lx_shard *out, int *found, struct lx_buf *note, struct lx_error *err);

/* The shard a run uses: the text of --shard when given (flag), else a Slurm
** array task's (note says so), else none (*use = 0). */
int lx_shard_choose(const char *flag, struct lx_shard *out, int *use, struct lx_buf *note, struct lx_error *err);

/* The shard (0..n-1) of a 16-hex-digit key. */
long lx_shard_of(const char *key, long n);

/* Does shard s hold key? (s NULL: every key.) */
int lx_shard_has(const struct lx_shard *s, const char *key);

#endif
