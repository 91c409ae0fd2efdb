/*
** harness/core/mapguard.h - weights used in place from a mapped file, guarded
** (docs/checkpoints.md#weights-used-in-place).
**
** A file that shrinks under its mapping turns a read of the lost pages into
** SIGBUS. Every tensor a model reads in place is registered here with its file
** and name; lenx's SIGBUS handler finds the address among them and exits with
** an error naming both (exit status 3, nothing stored for the cell in flight:
** the store writes a cell in one transaction), instead of dying by the signal.
** A file rewritten in place (same size) cannot fault; lx_mapguard_check
** compares each file's identity (size, mtime, inode) with the one at load, and
** the callers run it before they store or print a result computed from it.
*/
#ifndef LX_MAPGUARD_H
#define LX_MAPGUARD_H

#include <stddef.h>

#include "harness/core/lx.h"

/* Guard bytes [p, p + n) of file path as tensor `tensor` (both copied). The
** first call installs the handler. */
void lx_mapguard_add(const void *p, size_t n, const char *path, const char *tensor);
/* Forget every range inside [p, p + n) (a mapping given back). */
void lx_mapguard_remove(const void *p, size_t n);
/* LX_OK when every guarded file is as it was when first guarded, else LX_EIO
** naming the file and what changed. */
int lx_mapguard_check(struct lx_error *err);

#endif
