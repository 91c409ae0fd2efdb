/*
** tests/test_sizes.c - the size limits (docs/development.md#size-limits):
** scripts/check_sizes.sh passes on the checkout, and fails on a tree holding
** an 81-line function, an over-long file or an over-long task plugin, naming
** each.
*/
#define _POSIX_C_SOURCE 200809L  /* popen, mkdtemp */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* The checkout: LENX_ROOT (make test sets it), else the build's source dir. */
static const char *root(void)
{
    const char *r = getenv("LENX_ROOT");
    return r && r[0] ? r : LX_SOURCE_DIR;
}

/* Run the script on dir; its exit status, its output into out. */
static int check(const char *dir, char *out, size_t cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "bash '%s/scripts/check_sizes.sh' '%s' 2>&1", root(), dir);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* dir/path with n lines: a function of body_lines lines in between. */
static void write_c(const char *dir, const char *path, int body_lines, int pad_lines)
{
    char f[4096];
    snprintf(f, sizeof f, "%s/%s", dir, path);
    FILE *o = fopen(f, "w");
    cr_assert_not_null(o, "%s", f);
    fprintf(o, "/* a test file */\nstatic int long_one(int x,\n                    int y)\n{\n");
    for (int i = 0; i < body_lines; i++)
        fprintf(o, "    x += y; /* { not a brace */ (void)\"}\";\n");
    fprintf(o, "    return x;\n}\n");
    for (int i = 0; i < pad_lines; i++)
        fprintf(o, "\n");
    fclose(o);
}

Test(sizes, checkout_within_limits)
{
    char out[8192];
    int rc = check(root(), out, sizeof out);
    cr_assert_eq(rc, 0, "scripts/check_sizes.sh fails on the checkout:\n%s", out);
}

Test(sizes, catches_each_limit)
{
    char dir[] = "/tmp/lenx-sizes-XXXXXX", out[8192], cmd[4200];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/harness/engine/model' '%s/tasks' && printf 'LX_TASK(big)\\n' > "
             "'%s/tasks/tasks.def'", dir, dir, dir);
    cr_assert_eq(system(cmd), 0);
    write_c(dir, "harness/ok.c", 75, 0);        /* 2 + 1 + 75 + 2 = 80 lines: allowed */
    cr_assert_eq(check(dir, out, sizeof out), 0, "an 80-line function was refused:\n%s", out);
    write_c(dir, "harness/fn.c", 76, 0);        /* 81 lines */
    write_c(dir, "harness/file.c", 10, 1000);
    write_c(dir, "tasks/big.c", 10, 300);
    write_c(dir, "harness/engine/model/big.c", 10, 790);   /* 806 lines: over the engine's 800 */
    write_c(dir, "harness/engine/model/ok.c", 10, 784);    /* 800 lines: allowed */
    cr_assert_eq(check(dir, out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "harness/fn.c:2: function long_one is 81 lines"), "%s", out);
    cr_assert(strstr(out, "harness/file.c: 1016 lines"), "%s", out);
    cr_assert(strstr(out, "tasks/big.c: 316 lines"), "%s", out);
    cr_assert(strstr(out, "harness/engine/model/big.c: 806 lines (an engine file has at most 800)"), "%s", out);
    cr_assert_null(strstr(out, "harness/engine/model/ok.c"), "%s", out);
    cr_assert_null(strstr(out, "harness/ok.c"), "%s", out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
