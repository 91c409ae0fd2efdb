/*
** harness/core/version.c - build provenance. The Makefile writes build/gen/lx_build.h
** (LX_GIT_COMMIT, LX_GIT_DIRTY) and rewrites it only when they change.
*/
#include "harness/core/version.h"

#include "lx_build.h"

const char *lx_build_commit(void) { return LX_GIT_COMMIT; }
int lx_build_dirty(void) { return LX_GIT_DIRTY; }
