/*
** harness/engine/kernels/numerics.h - which arithmetic a run uses.
**
** fast: OpenBLAS as the machine picks it (its kernels, blockings and thread
** split decide the last bits). portable: every product and every sum in a
** fixed order, so a result is the same bits on any x86-64 machine with AVX2,
** for any thread count and any OPENBLAS_CORETYPE. Set once per process,
** before the first pass (a run resolves it from the sweep or the command
** line); the kernels read it.
*/
#ifndef LX_NUMERICS_H
#define LX_NUMERICS_H

enum lx_numerics { LX_NUMERICS_FAST = 0, LX_NUMERICS_PORTABLE = 1 };

void lx_numerics_set(enum lx_numerics n);
enum lx_numerics lx_numerics_get(void);

/* "fast" or "portable". */
const char *lx_numerics_name(enum lx_numerics n);

/* 0 and *out on "fast" or "portable", -1 on anything else. */
int lx_numerics_parse(const char *s, enum lx_numerics *out);

#endif
