/*
** harness/core/hashcache.h - SHA-256 digests remembered by file identity, so
** that a model file of gigabytes is hashed once, not at every load
** (docs/checkpoints.md#what-a-load-costs).
**
** An entry is one small file in the cache folder: $LENX_CACHE, else
** $XDG_CACHE_HOME/lenx, else $HOME/.cache/lenx (none: nothing is remembered),
** under hashes/, named by the SHA-256 of its key and holding the digest. A
** file's key is what it is to the kernel and what it was asked for: device,
** inode, size, modification and status-change times to the nanosecond, the
** real path and a kind ("file", "weights:llama2c", ...). Any write to the
** file moves its ctime, which no user can set back, so a changed file never
** meets its old entry. An entry is written whole (a temporary file renamed
** over it), so processes sharing the folder read either nothing or a whole
** digest; one that is not 64 hex digits is ignored and rewritten. A file
** whose times are less than LX_HASHCACHE_RACY seconds old has no key: its
** timestamps come from a coarse clock, and a rewrite in place in the same
** tick could keep them.
*/
#ifndef LX_HASHCACHE_H
#define LX_HASHCACHE_H

#include <stddef.h>

#define LX_HASHCACHE_RACY 2

/* The identity key of the file at path for a kind into key (n bytes); -1
** when it cannot be stat'ed, has no real path, or changed too recently. */
int lx_hashcache_file_key(const char *path, const char *kind, char *key, size_t n);

/* 1 and the 64-hex digest in out when key has an entry, 0 when not. */
int lx_hashcache_get(const char *key, char out[65]);

/* Remember digest for key (nothing happens when there is no cache folder or
** it cannot be written: the next load hashes again). */
void lx_hashcache_put(const char *key, const char digest[65]);

/* The SHA-256 of the file at path, which its caller found (and mapped) at n
** bytes: its entry of kind "file" when there is one, else read with pread
** in 8 MiB pieces (no page of it stays resident, and a file that shrank
** meanwhile is a short read, not a SIGBUS) and remembered. 0, or -1 when the
** file could not be read as n bytes: it changed under the caller. */
int lx_hashcache_file_sha256(const char *path, size_t n, char out[65]);

#endif
