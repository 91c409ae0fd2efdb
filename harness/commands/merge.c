/*
** harness/commands/merge.c - `lenx merge A.db B.db ... [--from LIST] --into
** OUT.db`: shard stores into one (docs/cluster.md). The merge itself is
** results/merge.c; this file parses the command, reads the list of stores
** --from names (how a Slurm job passes more stores than a command line holds)
** and prints what it did.
*/
#include "harness/cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "results/merge.h"
#include "results/store.h"

static const struct lx_opt merge_opts[] = {
    {"into", 1, "the store to merge into (created when absent; may be one of the inputs)"},
    {"from", 1, "a file naming more stores, one path a line ('-': standard input), merged after the arguments'"},
};

static const char merge_usage[] =
    "usage: lenx merge A.db B.db ... [--from LIST] --into OUT.db\n\n"
    "Merge stores (e.g. the shard databases of `lenx run --shard`) into OUT, in one\n"
    "transaction: cells with their metrics, series and outputs (new ids), and models.\n"
    "An ok row replaces a failed row of the same cell and commit; merging again\n"
    "changes nothing. The same cell at the same commit with other values in two\n"
    "stores is a conflict: each is reported, nothing is written, exit status 1.\n"
    "--from LIST names stores one a line (empty lines skipped), for more than a\n"
    "command line holds (docs/cluster.md#merging-shard-databases).";

/* --into a directory, an input missing or a directory: said of merge's own arguments (the store's message
** for these gives the hint of --db, which merge does not take). */
static int check_paths(const char *const *in, int n, const char *into, struct lx_error *err)
{
    struct stat sb;
    if (stat(into, &sb) == 0 && S_ISDIR(sb.st_mode))
        return lx_err(err, LX_EIO, "--into %s is a directory, not a store\n  hint: --into names the merged "
                      "store's file, e.g. --into %s/all.db", into, into);
    for (int i = 0; i < n; i++) {
        int there = stat(in[i], &sb) == 0;
        if (!there || S_ISDIR(sb.st_mode))
            return lx_err(err, LX_EIO, "%s: %s\n  hint: lenx merge reads store files, such as those "
                          "`lenx run --shard K/N` writes", in[i], there ? "is a directory, not a store"
                                                                        : "no such database");
    }
    return LX_OK;
}

/* The stores to merge: the arguments', then the lines of --from's file (list, "-" for stdin; empty lines
** skipped), split in place in *text. *in and *text are malloc'd (the caller frees them). */
static int inputs(const struct lx_args *a, const char *list, unsigned char **text, const char ***in, int *n,
                  struct lx_error *err)
{
    long len = 0, cap = a->n_pos + 1;
    int rc = list ? lx_read_file(strcmp(list, "-") == 0 ? "/dev/stdin" : list, text, &len, 0, err) : LX_OK;
    for (long i = 0; rc == LX_OK && i < len; i++)
        cap += (*text)[i] == '\n';
    if (rc == LX_OK && cap > INT_MAX)
        rc = lx_err(err, LX_EINVAL, "--from %s: more than %d lines\n  hint: merge the stores in parts", list, INT_MAX);
    *in = lx_xmalloc((size_t)(rc == LX_OK ? cap : 1) * sizeof **in);
    *n = 0;
    for (int i = 0; rc == LX_OK && i < a->n_pos; i++)
        (*in)[(*n)++] = a->pos[i];
    for (char *line = rc == LX_OK && list ? (char *)*text : NULL; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        if (*line)
            (*in)[(*n)++] = line;
        line = end ? end + 1 : NULL;
    }
    return rc;
}

int lx_cmd_merge(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, merge_opts, LX_N_OPTS(merge_opts), argc, argv, &help, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if (help)
        return lx_cli_usage(merge_usage, merge_opts, LX_N_OPTS(merge_opts)), 0;
    const char *into = lx_args_get(&a, merge_opts, LX_N_OPTS(merge_opts), "into");
    const char *list = lx_args_get(&a, merge_opts, LX_N_OPTS(merge_opts), "from");
    const char **in = NULL;
    unsigned char *text = NULL;
    int n = 0;
    rc = into ? inputs(&a, list, &text, &in, &n, &err) : LX_OK;
    if (rc == LX_OK && (!into || n == 0)) {
        fprintf(stderr, "lenx: error: merge needs %s\n  hint: lenx merge shard-0.db shard-1.db --into all.db\n",
                !into ? "--into OUT.db" : list ? "at least one store to merge (--from names none)"
                                               : "at least one store to merge");
        free(in), free(text);
        return 2;
    }
    struct lx_merge_counts c;
    struct lx_buf log = {0}, report = {0};
    if (rc == LX_OK && (rc = check_paths(in, n, into, &err)) == LX_OK)
        rc = lx_merge(in, n, into, &c, &log, &report, &err);
    fputs(lx_buf_str(&log), stderr);
    fputs(lx_buf_str(&report), stderr);
    lx_buf_free(&log);
    lx_buf_free(&report);
    free(in), free(text);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    fprintf(stderr, "lenx: merged %d stores into %s: %ld cells added, %ld replaced a failed row, %ld already "
            "there; %ld models added, %ld updated\n", n, into, c.runs_added, c.runs_replaced, c.runs_same,
            c.models_added, c.models_updated);
    return 0;
}
