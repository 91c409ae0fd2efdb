/*
** tests/loaders_fixture.h - what the loader suites share (tests/test_loaders.c,
** tests/test_hf_families.c): a scratch folder per test, paths into the
** checkout, loading or expecting a named refusal, and copies of the BF16
** stories260K directory with another config.json. Header-only.
*/
#ifndef LX_LOADERS_FIXTURE_H
#define LX_LOADERS_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/formats/checkpoint.h"

static char dir[64];    /* this test's scratch folder */

static inline void setup(void)
{
    strcpy(dir, "/tmp/lenx-ld-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static inline void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static inline void in_repo(char out[512], const char *rel)
{
    const char *root = getenv("LENX_ROOT");
    snprintf(out, 512, "%s/%s", root ? root : ".", rel);
}

static inline void load(struct lx_model *m, struct lx_ckpt_info *info, const char *path)
{
    struct lx_error err = {{0}};
    cr_assert_eq(lx_model_load(m, path, info, &err), LX_OK, "%s", err.msg);
}

static inline void put_file(const char *name, const void *data, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    cr_assert_not_null(fp);
    cr_assert_eq(fwrite(data, 1, n, fp), n);
    fclose(fp);
}

static inline void expect_error(const char *path, const char *part1, const char *part2)
{
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_error err = {{0}};
    cr_assert_lt(lx_model_load(&m, path, &info, &err), 0, "%s loaded", path);
    cr_expect(strstr(err.msg, part1) != NULL, "expected '%s' in: %s", part1, err.msg);
    cr_expect(strstr(err.msg, part2) != NULL, "expected '%s' in: %s", part2, err.msg);
}

/* A copy of the BF16 directory with config.json replaced (text NULL: kept). */
static inline void hf_copy(const char *config)
{
    char src[512], cmd[1200];
    in_repo(src, "tests/ref/stories260K-hf");
    snprintf(cmd, sizeof cmd, "mkdir -p %s/hf && cp %s/* %s/hf/", dir, src, dir);
    cr_assert_eq(system(cmd), 0);
    if (config)
        put_file("hf/config.json", config, strlen(config));
}

/* Each config.json in the BF16 directory, and what its error names. */
static inline void hf_cases(const char *const (*cases)[3], int n)
{
    char path[600];
    snprintf(path, sizeof path, "%s/hf", dir);
    for (int i = 0; i < n; i++) {
        hf_copy(cases[i][0]);
        expect_error(path, cases[i][1], cases[i][2]);
    }
}

#endif
