/*
** harness/core/gz.h - a whole file, gunzipped when it is gzip (a peer's
** `.jsonl.gz`), as it is otherwise.
**
** harness/core/gz.c is the only file that includes <zlib.h> (Debian's
** zlib1g: gzread reads a gzip stream and passes any other file through).
*/
#ifndef LX_GZ_H
#define LX_GZ_H

#include "harness/core/lx.h"

/* The file's bytes (decompressed if gzip) into out; at most max_bytes of them
** (0 = no limit). LX_EIO naming the file when it cannot be read, is a
** directory, or is a damaged gzip stream; LX_EINVAL past max_bytes. */
int lx_gz_read(const char *path, struct lx_buf *out, long max_bytes, struct lx_error *err);

#endif
