/*
** tasks/peer_memo.c - a peer's data file read once a process (peer.h,
** lx_peer_memo): a protocol preset makes each case of a cell from the same
** file (RULER's QA sets, its essays, a word list, Kamradt's haystack), and
** HotpotQA's 46 MB dev file takes a second and more to parse; reading it for
** each of a cell's 500 cases, in every cell of a sweep, took longer than the
** model's answers. The file's identity (stat's device, inode, size,
** modification and change times; a directory's own and each entry's, by
** name) decides whether what was read still holds: a file edited or replaced
** in place is read again. A file whose times are less than
** LX_HASHCACHE_RACY seconds old when it is read is read again at each call,
** as the hash cache does (harness/core/hashcache.h): a rewrite of the same
** size within the clock's tick would keep its times.
*/
#define _XOPEN_SOURCE 700       /* lstat, st_mtim */
#include "tasks/peer.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "harness/core/hashcache.h"

#define MEMO_SLOTS 8

struct memo {
    lx_peer_memo_load load;
    void (*release)(void *);
    char *path;
    struct lx_buf id;       /* identity bytes; empty: never matches (could not be read) */
    void *value;
    unsigned long used;     /* the tick of the last call that returned it */
};

static struct memo memo[MEMO_SLOTS];
static unsigned long memo_tick;

/* st into id; -1 when its times are racy (see above). */
static int put_stat(struct lx_buf *id, const struct stat *st)
{
    const long long v[] = {(long long)st->st_dev, (long long)st->st_ino, (long long)st->st_size,
                           (long long)st->st_mtim.tv_sec, (long long)st->st_mtim.tv_nsec,
                           (long long)st->st_ctim.tv_sec, (long long)st->st_ctim.tv_nsec, (long long)st->st_mode};
    lx_buf_putn(id, (const char *)v, sizeof v);
    time_t now = time(NULL);
    return st->st_mtim.tv_sec + LX_HASHCACHE_RACY > now || st->st_ctim.tv_sec + LX_HASHCACHE_RACY > now ? -1 : 0;
}

/* A directory's entries by name, each name and its stat (not followed: a
** link's own, then its target's). */
static int dir_identity(const char *dir, struct lx_buf *id)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **names = NULL;
    long n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        names = lx_xrealloc(names, sizeof *names * (size_t)(n + 1));
        names[n++] = lx_xstrdup(e->d_name);
    }
    closedir(d);
    if (n > 0)
        qsort(names, (size_t)n, sizeof *names, lx_cmp_str);
    int rc = 0;
    struct lx_buf path = {0};
    for (long i = 0; i < n; i++) {
        struct stat st;
        lx_buf_reset(&path);
        lx_buf_printf(&path, "%s/%s", dir, names[i]);
        lx_buf_putn(id, names[i], strlen(names[i]) + 1);
        if (lstat(lx_buf_str(&path), &st) != 0 || put_stat(id, &st) < 0 ||
            (S_ISLNK(st.st_mode) && stat(lx_buf_str(&path), &st) == 0 && put_stat(id, &st) < 0))
            rc = -1;
        free(names[i]);
    }
    free(names);
    lx_buf_free(&path);
    return rc;
}

/* path's identity into id (reset first); -1 when it cannot be read or is
** racy (id empty). */
static int identity(const char *path, struct lx_buf *id)
{
    struct stat st;
    lx_buf_reset(id);
    int rc = stat(path, &st) == 0 && put_stat(id, &st) == 0 ? 0 : -1;
    if (rc == 0 && S_ISDIR(st.st_mode))
        rc = dir_identity(path, id);
    if (rc < 0)
        lx_buf_reset(id);
    return rc;
}

static void slot_clear(struct memo *m)
{
    if (m->value && m->release)
        m->release(m->value);
    free(m->path);
    lx_buf_free(&m->id);
    memset(m, 0, sizeof *m);
}

int lx_peer_memo(const char *path, lx_peer_memo_load load, void (*release)(void *), const void **out,
                 struct lx_error *err)
{
    struct lx_buf id = {0};
    identity(path, &id);    /* before the load: a change during it is seen at the next call */
    struct memo *m = NULL, *oldest = &memo[0];
    for (int i = 0; i < MEMO_SLOTS; i++) {
        struct memo *s = &memo[i];
        if (s->load == load && s->path && strcmp(s->path, path) == 0)
            m = s;
        if (!s->load || (oldest->load && s->used < oldest->used))
            oldest = s;
    }
    if (m && id.len > 0 && m->id.len == id.len && memcmp(m->id.s, id.s, id.len) == 0) {
        lx_buf_free(&id);
        m->used = ++memo_tick;
        *out = m->value;
        return LX_OK;
    }
    m = m ? m : oldest;
    slot_clear(m);
    void *value = NULL;
    int rc = load(path, &value, err);
    if (rc < 0) {
        lx_buf_free(&id);
        return rc;
    }
    *m = (struct memo){load, release, lx_xstrdup(path), id, value, ++memo_tick};
    *out = value;
    return LX_OK;
}

void lx_peer_memo_clear(void)
{
    for (int i = 0; i < MEMO_SLOTS; i++)
        slot_clear(&memo[i]);
}
