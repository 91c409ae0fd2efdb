/*
** tests/test_doc_examples.c - the worked examples of docs/tasks.md are what
** `lenx show task` makes: each example's prompt and answer, as the docs print
** them (the prompt with its answer appended), are in the file. Five had drifted
** from the generators (another key, other depths) without a test noticing.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/shell.h"

static void setup(void)
{
    shell_setup("docex");
    (void)exists, (void)sql_long, (void)write_file;
}

TestSuite(doc_examples, .init = setup, .fini = teardown, .timeout = 60);

/* The docs' block for `show task ARGS`: the prompt, then the answer. */
static void expect_in_docs(const char *docs, const char *args)
{
    static char out[1 << 16];
    cr_assert_eq(sh(out, sizeof out, "$L show task %s", args), 0, "%s", out);
    char *p = strstr(out, "--- prompt\n"), *a = p ? strstr(p, "\n--- answer\n") : NULL;
    cr_assert(p && a, "%s", out);
    *a = '\0';
    char *answer = a + strlen("\n--- answer\n");
    answer[strcspn(answer, "\n")] = '\0';
    static char block[1 << 16];
    snprintf(block, sizeof block, "```\n%s%s\n```", p + strlen("--- prompt\n"), answer);
    cr_expect(strstr(docs, block) != NULL, "docs/tasks.md lacks the example of `show task %s`:\n%s", args, block);
    char prose[256];    /* the paragraph before the block names the answer in backquotes */
    snprintf(prose, sizeof prose, "`\"%s\"`", answer);
    cr_expect(strstr(docs, prose) != NULL || (snprintf(prose, sizeof prose, "`%s`", answer), strstr(docs, prose)),
              "the prose's answer of `%s`: %s", args, answer);
}

Test(doc_examples, tasks_md_examples_are_what_show_task_makes)
{
    char path[600];
    snprintf(path, sizeof path, "%s/docs/tasks.md", getenv("LENX_ROOT"));
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    static char docs[1 << 20];
    size_t n = fread(docs, 1, sizeof docs - 1, f);
    docs[n] = '\0';
    fclose(f);
    expect_in_docs(docs, "passkey template=short --length 200");
    expect_in_docs(docs, "line template=short --length 256");
    expect_in_docs(docs, "topic template=short replies=1 --length 420");
    expect_in_docs(docs, "needle needles=3 --length 500");
    expect_in_docs(docs, "mdqa documents=3 --length 600");
}
