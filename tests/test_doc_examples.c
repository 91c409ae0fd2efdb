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

/* README's count of configs/every-method.yaml's cells and models is what the plan makes (it said 208 and 50
** after the sweep had grown): cells as `--dry-run` heads its list, models as the distinct model keys it names,
** the bases fine-tunings start from included (the run trains each once). */
Test(doc_examples, readme_counts_every_method_yaml)
{
    char path[600];
    snprintf(path, sizeof path, "%s/README.md", getenv("LENX_ROOT"));
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    static char readme[1 << 20], out[1 << 16];
    readme[fread(readme, 1, sizeof readme - 1, f)] = '\0';
    fclose(f);
    const char *at = strstr(readme, "`configs/every-method.yaml` runs all of them");
    cr_assert_not_null(at, "README.md lost its every-method sentence");
    long cells = 0, models = 0;
    at = strchr(at, '(');
    cr_assert(at && sscanf(at, "(%ld cells and %ld models", &cells, &models) == 2, "%.80s", at);
    cr_assert_eq(sh(out, sizeof out, "$L run \"$R/configs/every-method.yaml\" --dry-run --db x.db | head -1 && "
                    "$L run \"$R/configs/every-method.yaml\" --dry-run --db x.db | grep -o '\\[[0-9a-f]*\\]' | "
                    "sort -u | wc -l"), 0, "%s", out);
    long planned = 0, keys = 0;
    cr_assert_eq(sscanf(out, "sweep every-method: %ld cells\n%ld", &planned, &keys), 2, "%s", out);
    cr_expect_eq(cells, planned, "README says %ld cells, the plan has %ld", cells, planned);
    cr_expect_eq(models, keys, "README says %ld models, the plan has %ld", models, keys);
}
