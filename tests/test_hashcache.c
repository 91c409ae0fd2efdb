/*
** tests/test_hashcache.c - SHA-256 through libcrypto against the plain
** reference, digests remembered by file identity (harness/core/hashcache.h),
** and a model load that uses them (docs/checkpoints.md#what-a-load-costs).
*/
#define _DEFAULT_SOURCE     /* mkdtemp, setenv */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/core/hash.h"
#include "harness/core/hashcache.h"
#include "harness/core/lx.h"
#include "harness/engine/formats/checkpoint.h"

static char dir[64], cache[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/lenx-hashcache-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cache, sizeof cache, "%s/cache", dir);
    setenv("LENX_CACHE", cache, 1);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* Deterministic bytes: a 64-bit LCG, the top byte of each step. */
static void fill(unsigned char *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (unsigned char)(seed >> 56);
    }
}

static void write_bytes(const char *path, const unsigned char *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

Test(hashcache, libcrypto_equals_the_reference_at_every_size)
{
    /* FIPS 180-4's "abc" and the empty string, then sizes around the switch
    ** to libcrypto and around the 64-byte block */
    char out[65], ref[65];
    lx_sha256_hex_bytes("abc", 3, out);
    cr_expect_str_eq(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    lx_sha256_hex_bytes("", 0, out);
    cr_expect_str_eq(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    static const size_t sizes[] = {1, 55, 56, 63, 64, 65, LX_SHA256_LONG - 1, LX_SHA256_LONG, LX_SHA256_LONG + 1,
                                   (1u << 20) + 3};
    unsigned char *buf = malloc((1u << 20) + 3);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        fill(buf, sizes[i], i + 1);
        lx_sha256_hex_bytes(buf, sizes[i], out);
        lx_sha256_ref_hex_bytes(buf, sizes[i], ref);
        cr_expect_str_eq(out, ref, "%zu bytes", sizes[i]);
        /* in uneven pieces through the long interface: the same digest */
        struct lx_sha256_long *h = lx_sha256_long_new();
        for (size_t at = 0; at < sizes[i];) {
            size_t k = sizes[i] - at < 1000 + at % 7 ? sizes[i] - at : 1000 + at % 7;
            lx_sha256_long_add(h, buf + at, k);
            at += k;
        }
        lx_sha256_long_end(h, out);
        cr_expect_str_eq(out, ref, "%zu bytes in pieces", sizes[i]);
    }
    free(buf);
}

Test(hashcache, a_recently_changed_file_has_no_key, .init = setup, .fini = teardown)
{
    char path[128], key[8192];
    snprintf(path, sizeof path, "%s/new.bin", dir);
    unsigned char b[100];
    fill(b, sizeof b, 7);
    write_bytes(path, b, sizeof b);
    cr_expect_eq(lx_hashcache_file_key(path, "file", key, sizeof key), -1);
    cr_expect_eq(lx_hashcache_file_key("/nonexistent/x", "file", key, sizeof key), -1);
}

/* One file, old enough to be remembered: hashed, remembered, and found again
** by its identity; a damaged entry is ignored; a changed file is hashed anew. */
Test(hashcache, a_file_is_hashed_once_and_remembered_by_identity, .init = setup, .fini = teardown, .timeout = 30)
{
    char path[128], key[8192], out[65], ref[65], got[65];
    snprintf(path, sizeof path, "%s/model.bin", dir);
    size_t n = (3u << 20) + 11;
    unsigned char *b = malloc(n);
    fill(b, n, 3);
    write_bytes(path, b, n);
    lx_sha256_ref_hex_bytes(b, n, ref);
    sleep(LX_HASHCACHE_RACY + 1);
    cr_assert_eq(lx_hashcache_file_key(path, "file", key, sizeof key), 0);
    cr_expect_eq(lx_hashcache_get(key, got), 0, "no entry before the first hash");
    cr_assert_eq(lx_hashcache_file_sha256(path, n, out), 0);
    cr_expect_str_eq(out, ref);
    cr_assert_eq(lx_hashcache_get(key, got), 1, "remembered");
    cr_expect_str_eq(got, ref);
    /* the entry is what a second call reads: a planted digest comes back */
    static const char planted[] = "00000000000000000000000000000000000000000000000000000000000000ff";
    lx_hashcache_put(key, planted);
    cr_assert_eq(lx_hashcache_file_sha256(path, n, out), 0);
    cr_expect_str_eq(out, planted, "the second call hashes nothing");
    /* another kind of the same file is another entry */
    char other[8192];
    cr_assert_eq(lx_hashcache_file_key(path, "lenx-data", other, sizeof other), 0);
    cr_expect_eq(lx_hashcache_get(other, got), 0);
    /* a damaged entry (not 64 hex digits and a newline) is no entry */
    char cmd[8400], name[65];
    lx_sha256_hex(key, name);
    snprintf(cmd, sizeof cmd, "printf 'xyz' > %s/hashes/%.2s/%s", cache, name, name + 2);
    cr_assert_eq(system(cmd), 0);
    cr_expect_eq(lx_hashcache_get(key, got), 0);
    /* the file rewritten in place, same size, other bytes: its ctime moved,
    ** so its key is another (and, being new, none at all for a while) */
    b[5] ^= 1;
    write_bytes(path, b, n);
    char key2[8192];
    cr_expect_eq(lx_hashcache_file_key(path, "file", key2, sizeof key2), -1, "a fresh file has no key");
    cr_assert_eq(lx_hashcache_file_sha256(path, n, out), 0);
    lx_sha256_ref_hex_bytes(b, n, ref);
    cr_expect_str_eq(out, ref, "the changed file is hashed anew");
    /* a file that is not the size its caller mapped (it shrank meanwhile): -1 */
    cr_expect_eq(lx_hashcache_file_sha256(path, n + 1, out), -1);
    sleep(LX_HASHCACHE_RACY + 1);
    cr_assert_eq(lx_hashcache_file_key(path, "file", key2, sizeof key2), 0);
    cr_expect_str_neq(key, key2, "the identity moved with the rewrite");
    free(b);
}

/* stories260K loaded with and without a cache: the same file and weights
** hashes, and the second cached load reads them from the entries. */
Test(hashcache, a_model_loads_with_the_same_hashes_from_the_cache, .init = setup, .fini = teardown, .timeout = 30)
{
    char path[512];
    snprintf(path, sizeof path, "%s/../shared/models/stories260K/stories260K.bin",
             getenv("LENX_ROOT") ? getenv("LENX_ROOT") : ".");
    struct stat sb;
    if (stat(path, &sb) != 0)
        cr_skip_test("%s is absent (the shared stories260K test data)", path);
    struct lx_model m;
    struct lx_ckpt_info a = {0}, b = {0}, c = {0};
    struct lx_error err;
    unsetenv("LENX_CACHE");
    char *home = getenv("HOME") ? lx_xstrdup(getenv("HOME")) : NULL, *xdg = getenv("XDG_CACHE_HOME") ?
                 lx_xstrdup(getenv("XDG_CACHE_HOME")) : NULL;
    unsetenv("HOME");
    unsetenv("XDG_CACHE_HOME");
    cr_assert_eq(lx_model_load(&m, path, &a, &err), LX_OK, "%s", err.msg);     /* no cache folder at all */
    lx_model_release(&m);
    setenv("LENX_CACHE", cache, 1);
    cr_assert_eq(lx_model_load(&m, path, &b, &err), LX_OK, "%s", err.msg);     /* fills the cache */
    lx_model_release(&m);
    cr_assert_eq(lx_model_load(&m, path, &c, &err), LX_OK, "%s", err.msg);     /* reads it */
    lx_model_release(&m);
    cr_expect_str_eq(b.sha256, a.sha256);
    cr_expect_str_eq(c.sha256, a.sha256);
    cr_expect_str_eq(b.weights_sha256, a.weights_sha256);
    cr_expect_str_eq(c.weights_sha256, a.weights_sha256);
    char key[8192], got[65];
    cr_assert_eq(lx_hashcache_file_key(path, "file", key, sizeof key), 0);
    cr_expect_eq(lx_hashcache_get(key, got), 1);
    cr_expect_str_eq(got, a.sha256);
    lx_ckpt_info_release(&a);
    lx_ckpt_info_release(&b);
    lx_ckpt_info_release(&c);
    if (home)
        setenv("HOME", home, 1);
    if (xdg)
        setenv("XDG_CACHE_HOME", xdg, 1);
    free(home);
    free(xdg);
}

Test(hashcache, a_big_block_is_zeroed_and_freed)
{
    size_t n = LX_BIG_BYTES + 4096;
    unsigned char *p = lx_big_calloc(n);
    cr_assert_not_null(p);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i += 4093)
        nonzero += p[i] != 0;
    cr_expect_eq(nonzero, 0);
    p[n - 1] = 1;
    lx_big_free(p, n);
    float *s = lx_big_calloc(100 * sizeof(float));     /* a small block: from the heap, zeroed all the same */
    cr_assert_not_null(s);
    for (int i = 0; i < 100; i++)
        cr_expect_eq(s[i], 0.0f);
    lx_big_free(s, 100 * sizeof(float));
    lx_big_free(NULL, n);
}
