/*
** tests/test_peer_memo.c - a peer's data file read once a process
** (tasks/peer_memo.c, lx_peer_memo): a loader that counts its calls and
** returns the file's bytes shows when the memo reads again — never while
** the file is unchanged, always after it is rewritten in place, replaced by
** a rename, or (a directory) gains or changes an entry, and at every call
** while its times are younger than LX_HASHCACHE_RACY seconds; errors are not
** kept, the least recently asked of nine is released first, and every value
** is released exactly once.
*/
#define _XOPEN_SOURCE 700
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/core/hashcache.h"
#include "tasks/peer.h"

static char tmp[64];
static int loads, releases;

static void setup(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/lenx-memo-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
    loads = releases = 0;
}

static void fini(void)
{
    lx_peer_memo_clear();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    cr_expect_eq(system(cmd), 0);
}

static const char *at(const char *name)
{
    static char p[4][128];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", tmp, name);
    return p[k];
}

static void put(const char *name, const char *text)
{
    FILE *f = fopen(at(name), "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

/* The loader: the file's bytes (a directory: "dir"); "bad" files fail. */
static int load(const char *path, void **out, struct lx_error *err)
{
    loads++;
    struct stat st;
    if (stat(path, &st) != 0)
        return lx_err(err, LX_EIO, "%s: missing", path);
    if (S_ISDIR(st.st_mode)) {
        *out = lx_xstrdup("dir");
        return LX_OK;
    }
    unsigned char *b = NULL;
    long n = 0;
    int rc = lx_read_file(path, &b, &n, 0, err);
    if (rc == LX_OK && n >= 3 && memcmp(b, "bad", 3) == 0)
        rc = lx_err(err, LX_EINVAL, "%s: bad", path);
    if (rc < 0) {
        free(b);
        return rc;
    }
    char *s = lx_xmalloc((size_t)n + 1);
    memcpy(s, b, (size_t)n);
    s[n] = 0;
    free(b);
    *out = s;
    return LX_OK;
}

/* A second loader: the same bytes, kept apart from load's. */
static int load_other(const char *path, void **out, struct lx_error *err)
{
    return load(path, out, err);
}

static void release(void *v)
{
    releases++;
    free(v);
}

static const char *get(const char *name, lx_peer_memo_load fn)
{
    struct lx_error err = {0};
    const void *v = NULL;
    int rc = lx_peer_memo(at(name), fn, release, &v, &err);
    cr_assert_eq(rc, LX_OK, "%s: %s", name, err.msg);
    return v;
}

/* Past the racy window of every file written so far. */
static void age(void)
{
    sleep(LX_HASHCACHE_RACY + 1);
}

Test(peer_memo, read_once_while_unchanged_again_when_changed, .init = setup, .fini = fini, .timeout = 60)
{
    put("a.txt", "alpha");
    put("b.txt", "bravo");
    age();
    const char *a = get("a.txt", load);
    cr_assert_str_eq(a, "alpha");
    cr_assert_eq(get("a.txt", load), a, "a second call returns the value kept");
    cr_assert_eq(loads, 1);
    cr_assert_str_eq(get("a.txt", load_other), "alpha");
    cr_assert_eq(loads, 2, "another loader of the same path reads for itself");
    get("b.txt", load);
    cr_assert_eq(get("a.txt", load), a);
    cr_assert_eq(loads, 3);

    put("a.txt", "ALPHA");      /* in place, the same size, the same inode */
    cr_assert_str_eq(get("a.txt", load), "ALPHA");
    cr_assert_eq(loads, 4);
    get("a.txt", load);     /* its times are racy now: read at each call */
    cr_assert_eq(loads, 5);
    cr_assert_eq(releases, 2, "each value replaced is released");

    put("new.txt", "ALPHA");
    age();
    get("a.txt", load);
    cr_assert_eq(loads, 6);
    get("a.txt", load);
    cr_assert_eq(loads, 6, "no longer racy: kept");
    cr_assert_eq(rename(at("new.txt"), at("a.txt")), 0);   /* replaced: another inode, the same bytes */
    get("a.txt", load);
    cr_assert_eq(loads, 7);
}

Test(peer_memo, a_directory_is_read_again_when_an_entry_changes, .init = setup, .fini = fini, .timeout = 60)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "mkdir %s/hay && printf one > %s/hay/1.txt && printf two > %s/hay/2.txt", tmp, tmp, tmp);
    cr_assert_eq(system(cmd), 0);
    age();
    get("hay", load);
    get("hay", load);
    cr_assert_eq(loads, 1);
    put("hay/2.txt", "TWO");     /* the directory's own times do not change */
    get("hay", load);
    cr_assert_eq(loads, 2);
    age();
    get("hay", load);
    get("hay", load);
    cr_assert_eq(loads, 3);
    put("hay/3.txt", "three");
    get("hay", load);
    cr_assert_eq(loads, 4);
}

Test(peer_memo, errors_are_not_kept_and_the_oldest_goes_first, .init = setup, .fini = fini, .timeout = 60)
{
    char name[16];
    put("bad.txt", "bad");
    for (int i = 0; i < 9; i++) {
        snprintf(name, sizeof name, "%d.txt", i);
        put(name, name);
    }
    age();
    struct lx_error err = {0};
    const void *v = NULL;
    for (int k = 1; k <= 2; k++) {
        cr_assert_eq(lx_peer_memo(at("bad.txt"), load, release, &v, &err), LX_EINVAL);
        cr_assert(strstr(err.msg, "bad.txt: bad"), "%s", err.msg);
        cr_assert_eq(loads, k, "a failed read is tried again");
    }
    cr_assert_eq(lx_peer_memo(at("none.txt"), load, release, &v, &err), LX_EIO);
    loads = 0;
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "%d.txt", i);
        get(name, load);
    }
    get("0.txt", load);     /* 0 is now the newest, 1 the oldest */
    cr_assert_eq(loads, 8);
    get("8.txt", load);     /* a ninth: 1 is released */
    cr_assert_eq(releases, 1);
    get("0.txt", load);
    cr_assert_eq(loads, 9, "0 was asked recently: kept");
    get("1.txt", load);
    cr_assert_eq(loads, 10, "1 was the oldest: read again");
    lx_peer_memo_clear();
    cr_assert_eq(releases, loads, "every value read is released once");
}
