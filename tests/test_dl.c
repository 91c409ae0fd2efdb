/*
** tests/test_dl.c - libraries opened at their first use (harness/core/dl.h):
** one attempt per library however often it is asked for, its functions
** callable, and a library or function that is not there an error naming
** what needs it and what to install, the same error on every later call.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "harness/core/dl.h"

/* A table as the owners of libraries make one: libc's str* functions. */
#define LX_DL_PREFIX str
#define STR_FNS(X) X(len) X(cmp)
static LX_DL_TABLE(STR_FNS) str_;
LX_DL_RESOLVE(resolve_str, str_, STR_FNS)

static int n_resolve;
static double (*cos_)(double);

static int resolve_cos(struct lx_dl *lib, struct lx_error *err)
{
    n_resolve++;
    return (cos_ = (double (*)(double))lx_dl_sym(lib, "cos", err)) ? LX_OK : LX_EIO;
}

static int resolve_missing(struct lx_dl *lib, struct lx_error *err)
{
    n_resolve++;
    return lx_dl_sym(lib, "lx_no_such_function", err) ? LX_OK : LX_EIO;
}

Test(dl, a_library_is_opened_once_and_its_functions_run)
{
    struct lx_dl m = {.soname = "libm.so.6", .package = "libc6", .use = "the test"};
    struct lx_error err = {{0}};
    n_resolve = 0;
    cr_assert_eq(lx_dl_load(&m, resolve_cos, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_dl_load(&m, resolve_cos, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(n_resolve, 1, "resolved %d times", n_resolve);
    cr_expect_eq(cos_(0.0), 1.0);
    cr_expect_eq(cos_(1.0), cos(1.0), "the function resolved is libm's own");
}

Test(dl, a_table_resolves_each_function_by_its_prefixed_name)
{
    struct lx_dl c = {.soname = "libc.so.6", .package = "libc6", .use = "the test"};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_dl_load(&c, resolve_str, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(str_.len("seven"), 5);
    cr_expect_lt(str_.cmp("a", "b"), 0);
}

Test(dl, a_missing_library_names_what_needs_it_and_the_package)
{
    struct lx_dl lib = {.soname = "liblx-none.so.7", .package = "liblx-none7", .use = "numerics quux"};
    struct lx_error err = {{0}}, again = {{0}};
    n_resolve = 0;
    cr_assert_eq(lx_dl_load(&lib, resolve_cos, &err), LX_EIO);
    cr_expect(strstr(err.msg, "numerics quux needs liblx-none.so.7, which cannot be loaded") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "hint: apt-get install liblx-none7") != NULL, "%s", err.msg);
    cr_expect_eq(n_resolve, 0);
    cr_assert_eq(lx_dl_load(&lib, resolve_cos, &again), LX_EIO);
    cr_expect_str_eq(again.msg, err.msg);
    cr_expect_eq(lx_dl_load(&lib, resolve_cos, NULL), LX_EIO, "a caller may pass no error");
}

Test(dl, a_missing_function_is_named_with_its_library)
{
    struct lx_dl m = {.soname = "libm.so.6", .package = "libc6", .use = "the test"};
    struct lx_error err = {{0}}, again = {{0}};
    n_resolve = 0;
    cr_assert_eq(lx_dl_load(&m, resolve_missing, &err), LX_EIO);
    cr_expect(strstr(err.msg, "the test needs lx_no_such_function from libm.so.6, which does not have it") != NULL,
              "%s", err.msg);
    cr_expect(strstr(err.msg, "apt-get install --only-upgrade libc6") != NULL, "%s", err.msg);
    cr_assert_eq(lx_dl_load(&m, resolve_missing, &again), LX_EIO);
    cr_expect_str_eq(again.msg, err.msg);
    cr_expect_eq(n_resolve, 1);
}
