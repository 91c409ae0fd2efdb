/*
** tests/ruler_fixture.h - what the RULER preset suites share
** (test_peer_ruler.c, test_peer_ruler_synth.c): the temp dir, the essay
** fixture, an instance's gold and depth as `show` prints them, a sweep on
** stories260K and the check that each stored output is scored by ruler_all.
** Header-only (static functions), as tests/shell.h; an includer defines
** _GNU_SOURCE (strcasestr) before any header.
*/
#ifndef LX_TEST_RULER_FIXTURE_H
#define LX_TEST_RULER_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/shell.h"

static void write_essays(const char *sub);
static void shown_case(const char *protocol, const char *data, long L, int k, char *gold, size_t n, double *depth);
static void run_stories(const char *tasks, const char *lengths);
static int expect_outputs_scored(int *multi);

static char out[1 << 17];

static void setup(void)
{
    shell_setup("ruler");
    (void)exists, (void)sql_long, (void)write_essays, (void)shown_case, (void)run_stories,
        (void)expect_outputs_scored;
    cr_assert_not_null(getenv("LENX_ROOT"), "LENX_ROOT must name the checkout (make test sets it)");
}

/* Pride and Prejudice, chapter 1 (public domain), in three files: a leading
** newline, a blank line, tabs, CR LF, double spaces, a no-break space
** (U+00A0), quotes around '?', '!' -- and no abbreviation, number or
** initial, so that a sentence ends exactly at a word ending in '.', '?' or
** '!' (closing quotes after it). */
static const char *const essay_files[][2] = {
    {"01_a.txt", "\nIt is a truth universally acknowledged, that a single man in possession of a good fortune, must "
                 "be in want of a wife.  However little known the feelings or views of such a man may be on his first "
                 "entering a neighbourhood, this truth is so well fixed in the minds of the surrounding families, "
                 "that he is considered the rightful property of some one or other of their daughters.\n\n"},
    {"02_b.txt", "\"My dear,\" said his lady to him one day, \"have you heard that Netherfield Park is let at "
                 "last?\"\tHe replied that he had not.\n\"Do you not want to know who has taken it?\" cried his wife "
                 "impatiently.\r\n\"You want to tell me, and I have no objection to hearing it.\"\nThis was "
                 "invitation enough.\n"},
    {"03_c.txt", "What is his name?\xc2\xa0" "Bingley!  Is he married or single?\nOh! Single, my dear, to be sure! A "
                 "single man of large fortune; four or five thousand a year. What a fine thing for our girls!\n"},
};
#define N_FILES 3

static void write_essays(const char *sub)
{
    char path[256];
    cr_assert_eq(sh(out, sizeof out, "mkdir -p %s", sub), 0);
    for (int i = 0; i < N_FILES; i++) {
        snprintf(path, sizeof path, "%s/%s", sub, essay_files[i][0]);
        write_file(path, essay_files[i][1]);
    }
}

/* show's gold and depth of instance k. */
static void shown_case(const char *protocol, const char *data, long L, int k, char *gold, size_t n, double *depth)
{
    cr_assert_eq(sh(out, sizeof out, "$L show task needle --protocol %s --data %s --length %ld --instance %d",
                    protocol, data, L, k), 0, "%s", out);
    const char *g = strstr(out, "gold \""), *d = strstr(out, "depth:");
    cr_assert(g && d, "%s", out);
    g += strlen("gold \"");
    snprintf(gold, n, "%.*s", (int)strcspn(g, "\""), g);
    *depth = strtod(d + strlen("depth:"), NULL);
}

/* Runs the tasks (YAML list items) on stories260K at lengths into r.db, the
** fixture essays in ess/. */
static void run_stories(const char *tasks, const char *lengths)
{
    static char yaml[2048];
    write_essays("ess");
    snprintf(yaml, sizeof yaml, "name: r\nseed: 1\nmodels:\n  s:\n    checkpoint: STORIES\nmethods:\n"
             "  - [{rope: {layout: interleaved}}]\ntasks:\n%slengths: [%s]\n", tasks, lengths);
    write_file("s.yaml", yaml);
    cr_assert_eq(sh(out, sizeof out, "sed -i -e \"s|STORIES|$R/../shared/models/stories260K/stories260K.bin|\" s.yaml "
                    "&& $L run s.yaml --db r.db --quiet --no-table"), 0, "%s", out);
}

/* Every stored output of r.db: its score 1 exactly when each of its golds
** (joined by ", ") is inside its text, case folded (ruler_all). Returns the
** outputs; *multi counts those with several golds. */
static int expect_outputs_scored(int *multi)
{
    cr_assert_eq(sh(out, sizeof out, "sqlite3 -separator '\t' r.db \"select gold, score, replace(text, char(10), ' ') "
                    "from outputs\""), 0);
    int rows = 0;
    *multi = 0;
    for (char *p = out; *p; rows++) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        char *t1 = strchr(p, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        cr_assert(t1 && t2, "%s", p);
        *t1 = *t2 = 0;
        int golds = 0, found = 0;
        for (char *g = strtok(p, ","); g; g = strtok(NULL, ",")) {
            g += *g == ' ';
            golds++, found += strcasestr(t2 + 1, g) != NULL;
        }
        *multi += golds > 1;
        cr_expect(golds == 1 || golds == 3 || golds == 4 || golds == 5 || golds == 10, "%d golds", golds);
        cr_expect_eq(atoi(t1 + 1), found == golds, "%d of %d golds in '%s'", found, golds, t2 + 1);
        p = nl ? nl + 1 : p + strlen(p);
    }
    return rows;
}

#endif
