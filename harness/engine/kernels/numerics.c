/*
** harness/engine/kernels/numerics.c - the process's numerics mode (numerics.h).
*/
#include "harness/engine/kernels/numerics.h"

#include <string.h>

static enum lx_numerics mode = LX_NUMERICS_FAST;

void lx_numerics_set(enum lx_numerics n)
{
    mode = n;
}

enum lx_numerics lx_numerics_get(void)
{
    return mode;
}

const char *lx_numerics_name(enum lx_numerics n)
{
    return n == LX_NUMERICS_PORTABLE ? "portable" : "fast";
}

int lx_numerics_parse(const char *s, enum lx_numerics *out)
{
    if (s && !strcmp(s, "fast"))
        *out = LX_NUMERICS_FAST;
    else if (s && !strcmp(s, "portable"))
        *out = LX_NUMERICS_PORTABLE;
    else
        return -1;
    return 0;
}
