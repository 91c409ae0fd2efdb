/*
** harness/core/version.h - what build this is: version, git commit and dirty flag
** (taken when the binary was built, so rows carry the code that made them).
*/
#ifndef LX_VERSION_H
#define LX_VERSION_H

const char *lx_build_commit(void);  /* full hash, or "unknown" outside git */
int lx_build_dirty(void);           /* 1 when built with uncommitted changes */

#endif
