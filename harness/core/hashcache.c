/*
** harness/core/hashcache.c - digests remembered by file identity (hashcache.h).
*/
#define _XOPEN_SOURCE 700     /* realpath */
#include "harness/core/hashcache.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/core/hash.h"
#include "harness/core/lx.h"

/* The cache folder into dir (n bytes); 0 when there is none. */
static int cache_dir(char *dir, size_t n)
{
    const char *own = getenv("LENX_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int k = own && *own ? snprintf(dir, n, "%s", own)
            : xdg && *xdg ? snprintf(dir, n, "%s/lenx", xdg)
            : home && *home ? snprintf(dir, n, "%s/.cache/lenx", home) : -1;
    return k > 0 && (size_t)k < n;
}

/* The entry's path for key into path (n bytes); 0 when there is no folder. */
static int entry_path(const char *key, char *path, size_t n)
{
    char dir[PATH_MAX], name[65];
    if (!cache_dir(dir, sizeof dir))
        return 0;
    lx_sha256_hex(key, name);
    int k = snprintf(path, n, "%s/hashes/%.2s/%s", dir, name, name + 2);
    return k > 0 && (size_t)k < n;
}

int lx_hashcache_file_key(const char *path, const char *kind, char *key, size_t n)
{
    struct stat st;
    char real[PATH_MAX];
    if (stat(path, &st) != 0 || !realpath(path, real))
        return -1;
    /* A file changed within the last LX_HASHCACHE_RACY seconds is not
    ** remembered: its timestamps come from a coarse clock (a few ms), so a
    ** rewrite in place of the same size in the same tick would keep the key
    ** (git's "racily clean" files) */
    time_t now = time(NULL);
    if (st.st_mtim.tv_sec + LX_HASHCACHE_RACY > now || st.st_ctim.tv_sec + LX_HASHCACHE_RACY > now)
        return -1;
    int k = snprintf(key, n, "lenx-hashcache 1\n%s\n%llu %llu %lld %lld.%09ld %lld.%09ld\n%s", kind,
                     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, (long long)st.st_size,
                     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
                     st.st_ctim.tv_nsec, real);
    return k > 0 && (size_t)k < n ? 0 : -1;
}

static int is_digest(const char *s)
{
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

int lx_hashcache_get(const char *key, char out[65])
{
    char path[PATH_MAX + 80], buf[80];
    if (!entry_path(key, path, sizeof path))
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t got = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (got != 65 || buf[64] != '\n' || !is_digest(buf))
        return 0;
    memcpy(out, buf, 64);
    out[64] = '\0';
    return 1;
}

void lx_hashcache_put(const char *key, const char digest[65])
{
    char path[PATH_MAX + 80], tmp[PATH_MAX + 120];
    if (!is_digest(digest) || !entry_path(key, path, sizeof path))
        return;
    lx_make_parent_dir(path);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    int ok = fprintf(f, "%.64s\n", digest) == 65;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0)
        remove(tmp);
}

/* The bytes read and hashed at a time. */
#define HASH_PIECE ((size_t)8 << 20)

int lx_hashcache_file_sha256(const char *path, size_t n, char out[65])
{
    char key[8192];
    int keyed = lx_hashcache_file_key(path, "file", key, sizeof key) == 0;
    if (keyed && lx_hashcache_get(key, out))
        return 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    size_t piece = n < HASH_PIECE ? n + 1 : HASH_PIECE;    /* + 1: a file that grew reads past n */
    unsigned char *buf = lx_xmalloc(piece);
    struct lx_sha256_long *h = lx_sha256_long_new();
    size_t at = 0;
    for (size_t k; (k = lx_pread_all(fd, buf, piece, (long long)at)) > 0; at += k)
        lx_sha256_long_add(h, buf, k);
    close(fd);
    free(buf);
    lx_sha256_long_end(h, out);
    if (at != n)
        return -1;      /* the file is not the n bytes the caller mapped: it changed */
    if (keyed)
        lx_hashcache_put(key, out);
    return 0;
}
