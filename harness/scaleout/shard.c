/*
** harness/scaleout/shard.c - shards of a sweep: `--shard K/N` and Slurm array tasks
** (see shard.h, docs/cluster.md#sharding).
*/
#include "harness/scaleout/shard.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A whole decimal number in [lo, hi], or -1 (the caller names it). */
static long whole(const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = s && *s ? strtol(s, &end, 10) : -1;
    return s && *s && !*end && !errno && v >= lo && v <= hi ? v : -1;
}

int lx_shard_parse(const char *text, struct lx_shard *out, struct lx_error *err)
{
    const char *slash = strchr(text, '/');
    char k[32] = "";
    if (slash && slash - text < (long)sizeof k)
        snprintf(k, sizeof k, "%.*s", (int)(slash - text), text);
    long n = slash ? whole(slash + 1, 1, LX_MAX_SHARDS) : -1, kk = whole(k, 0, LX_MAX_SHARDS);
    if (n < 0 || kk < 0)
        return lx_err(err, LX_EINVAL, "--shard '%s' is not K/N with whole numbers 0 <= K < N <= %d\n"
                      "  hint: --shard 0/3, --shard 1/3 and --shard 2/3 run a sweep in three parts",
                      text, LX_MAX_SHARDS);
    if (kk >= n)
        return lx_err(err, LX_EINVAL, "--shard %ld/%ld: the shard index counts from 0, so it must be below %ld\n"
                      "  hint: the shards of %ld are 0/%ld ... %ld/%ld", kk, n, n, n, n, n - 1, n);
    out->k = kk;
    out->n = n;
    return LX_OK;
}

int lx_shard_from_env(struct lx_shard *out, int *found, struct lx_buf *note, struct lx_error *err)
{
    const char *id = getenv("SLURM_ARRAY_TASK_ID"), *count = getenv("SLURM_ARRAY_TASK_COUNT");
    const char *min = getenv("SLURM_ARRAY_TASK_MIN"), *step = getenv("SLURM_ARRAY_TASK_STEP");
    *found = id != NULL;
    if (!id)
        return LX_OK;
    long i = whole(id, 0, INT32_MAX), n = whole(count, 1, LX_MAX_SHARDS);
    long lo = min ? whole(min, 0, INT32_MAX) : 0, st = step ? whole(step, 1, INT32_MAX) : 1;
    if (i < 0 || n < 0 || lo < 0 || st < 0)
        return lx_err(err, LX_EINVAL, "a Slurm array task with SLURM_ARRAY_TASK_ID=%s, SLURM_ARRAY_TASK_COUNT=%s, "
                      "SLURM_ARRAY_TASK_MIN=%s, SLURM_ARRAY_TASK_STEP=%s: these are not whole numbers (COUNT "
                      "at most %d)\n  hint: pass --shard K/N yourself", id, count ? count : "(unset)",
                      min ? min : "(unset)", step ? step : "(unset)", LX_MAX_SHARDS);
    long k = (i - lo) / st;
    if (i < lo || (i - lo) % st || k >= n)
        return lx_err(err, LX_EINVAL, "Slurm array task %ld (MIN %ld, STEP %ld, COUNT %ld) is not one of %ld evenly "
                      "spaced tasks\n  hint: submit the array as --array=0-%ld (lenx slurm writes it so), or pass "
                      "--shard K/N", i, lo, st, n, n, n - 1);
    out->k = k;
    out->n = n;
    lx_buf_printf(note, "shard %ld/%ld from the Slurm array task (SLURM_ARRAY_TASK_ID=%ld, "
                  "SLURM_ARRAY_TASK_COUNT=%ld, MIN %ld, STEP %ld)", k, n, i, n, lo, st);
    return LX_OK;
}

int lx_shard_choose(const char *flag, struct lx_shard *out, int *use, struct lx_buf *note, struct lx_error *err)
{
    *use = flag != NULL;
    return flag ? lx_shard_parse(flag, out, err) : lx_shard_from_env(out, use, note, err);
}

long lx_shard_of(const char *key, long n)
{
    uint64_t v = 0;
    for (int i = 0; i < 16 && key[i]; i++) {
        char c = key[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        LX_ASSERT(d >= 0);      /* keys are hex */
        v = v << 4 | (uint64_t)d;
    }
    return (long)(v % (uint64_t)n);
}

int lx_shard_has(const struct lx_shard *s, const char *key)
{
    return !s || lx_shard_of(key, s->n) == s->k;
}
