/*
** tests/test_cli_usage.c - the lenx binary used wrongly, as a new researcher
** does: stray arguments, options a mode does not read, short spellings, names
** mistyped. Each is refused with exit 2 and a message that names what was
** wrong, never run with the argument ignored. (tests/test_cli.c holds the
** sweeps, views and stores end to end.)
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/shell.h"

static void setup(void)
{
    shell_setup("cliu");
    (void)sql_long;
}

TestSuite(cli_usage, .init = setup, .fini = teardown, .timeout = 60);

#define S260 "$R/../shared/models/stories260K"

/* `lenx report -o` was matched by hand as the first two positionals: a missing value, -o beside --output
** and a stray argument after -o FILE were each reported as "unexpected argument '-o'". */
Test(cli_usage, report_reads_o_as_output)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L report --db none.db -o"), 2, "%s", out);
    cr_expect(strstr(out, "'--output' needs a value") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L report --db none.db -o a.html --output b.html"), 2, "%s", out);
    cr_expect(strstr(out, "'--output' is given twice ('a.html', then 'b.html')") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L report --db none.db -o a.html extra"), 2, "%s", out);
    cr_expect(strstr(out, "unexpected argument 'extra'") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L report --db none.db --sweep -o"), 2, "%s", out);  /* a value, not -o */
    cr_expect(strstr(out, "report needs an output file") != NULL, "%s", out);
    cr_expect(!exists("a.html") && !exists("b.html"));
}
