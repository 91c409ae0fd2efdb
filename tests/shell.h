/*
** tests/shell.h - driving the lenx binary from a test: a temp dir per test,
** shell commands run in it with $L = lenx ($LENX_BIN), $R = the checkout
** ($LENX_ROOT) and $D = the dir, output captured; files and sqlite3 queries
** in the dir. Header-only (static functions) for the end-to-end suites.
*/
#ifndef LX_TEST_SHELL_H
#define LX_TEST_SHELL_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char dir[64];

/* A fresh temp dir named after the suite ("/tmp/lenx-cli-XXXXXX"). */
static void shell_setup(const char *name)
{
    snprintf(dir, sizeof dir, "/tmp/lenx-%s-XXXXXX", name);
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_not_null(getenv("LENX_BIN"), "LENX_BIN must name the lenx binary (make test sets it)");
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* Run a shell command in the temp dir; capture stdout+stderr into out (n bytes). */
static int sh(char *out, size_t n, const char *fmt, ...)
{
    char cmd[4096], full[4600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    const char *root = getenv("LENX_ROOT");
    snprintf(full, sizeof full, "L='%s'; R='%s'; D='%s'; cd \"$D\" && { %s ; } 2>&1", getenv("LENX_BIN"),
             root ? root : ".", dir, cmd);
    FILE *p = popen(full, "r");
    cr_assert_not_null(p);
    size_t len = 0;
    if (out && n)
        out[0] = '\0';
    char tmp[4096];
    size_t k;
    while ((k = fread(tmp, 1, sizeof tmp, p)) > 0)
        if (out && len + 1 < n) {
            size_t c = k < n - 1 - len ? k : n - 1 - len;
            memcpy(out + len, tmp, c);
            len += c;
            out[len] = '\0';
        }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void write_file(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static int exists(const char *name)
{
    char path[256];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &sb) == 0;
}

/* One value of a query, as sqlite3 prints it, without the newline. SQL goes
** inside double quotes: no '"', '$' or '`' in it. */
static void sql_text(char *out, size_t n, const char *db, const char *sql)
{
    cr_assert_eq(sh(out, n, "sqlite3 %s \"%s\"", db, sql), 0, "%s: %s", sql, out);
    out[strcspn(out, "\n")] = '\0';
}

static long sql_long(const char *db, const char *sql)
{
    char out[256];
    sql_text(out, sizeof out, db, sql);
    return atol(out);
}

#endif
