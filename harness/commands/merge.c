/*
** harness/commands/merge.c - `lenx merge A.db B.db ... --into OUT.db`: shard
** stores into one (docs/cluster.md). The merge itself is results/merge.c;
** this file parses the command and prints what it did.
*/
#include "harness/cli.h"

#include <stdio.h>
#include <sys/stat.h>

#include "results/merge.h"
#include "results/store.h"

static const struct lx_opt merge_opts[] = {
    {"into", 1, "the store to merge into (created when absent; may be one of the inputs)"},
};

static const char merge_usage[] =
    "usage: lenx merge A.db B.db ... --into OUT.db\n\n"
    "Merge stores (e.g. the shard databases of `lenx run --shard`) into OUT, in one\n"
    "transaction: cells with their metrics, series and outputs (new ids), and models.\n"
    "An ok row replaces a failed row of the same cell and commit; merging again\n"
    "changes nothing. The same cell at the same commit with other values in two\n"
    "stores is a conflict: each is reported, nothing is written, exit status 1.";

/* --into a directory, an input missing or a directory: said of merge's own arguments (the store's message
** for these gives the hint of --db, which merge does not take). */
static int check_paths(const struct lx_args *a, const char *into, struct lx_error *err)
{
    struct stat sb;
    if (stat(into, &sb) == 0 && S_ISDIR(sb.st_mode))
        return lx_err(err, LX_EIO, "--into %s is a directory, not a store\n  hint: --into names the merged "
                      "store's file, e.g. --into %s/all.db", into, into);
    for (int i = 0; i < a->n_pos; i++) {
        int there = stat(a->pos[i], &sb) == 0;
        if (!there || S_ISDIR(sb.st_mode))
            return lx_err(err, LX_EIO, "%s: %s\n  hint: lenx merge reads store files, such as those "
                          "`lenx run --shard K/N` writes", a->pos[i],
                          there ? "is a directory, not a store" : "no such database");
    }
    return LX_OK;
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
    if (!into || a.n_pos == 0) {
        fprintf(stderr, "lenx: error: merge needs %s\n  hint: lenx merge shard-0.db shard-1.db --into all.db\n",
                into ? "at least one store to merge" : "--into OUT.db");
        return 2;
    }
    if ((rc = check_paths(&a, into, &err)) < 0)
        return lx_cli_fail(&err, rc);
    struct lx_merge_counts c;
    struct lx_buf log = {0}, report = {0};
    rc = lx_merge(a.pos, a.n_pos, into, &c, &log, &report, &err);
    fputs(lx_buf_str(&log), stderr);
    fputs(lx_buf_str(&report), stderr);
    lx_buf_free(&log);
    lx_buf_free(&report);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    fprintf(stderr, "lenx: merged %d stores into %s: %ld cells added, %ld replaced a failed row, %ld already "
            "there; %ld models added, %ld updated\n", a.n_pos, into, c.runs_added, c.runs_replaced, c.runs_same,
            c.models_added, c.models_updated);
    return 0;
}
