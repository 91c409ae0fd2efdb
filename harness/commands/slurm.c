/*
** harness/commands/slurm.c - `lenx slurm`: a sweep on a Slurm cluster
** (docs/cluster.md). The job scripts' text is harness/scaleout/slurm.c, the
** merge its last job runs `lenx merge` (commands/merge.c); this file parses
** the command, fills the job from the command line and the config, and
** writes the files.
**
** `lenx slurm CONFIG --shards N` writes, in <db dir>/<sweep>.slurm/:
**   models.sbatch  an array of M <= N tasks, task K running `lenx run
**                  --models-only` of model shard K: every model trained once,
**                  into <db dir>/models (the cache the cell shards then read)
**   cells.sbatch   an array of N tasks (--array=0-(N-1)), each `lenx run
**                  --no-train` of its shard into <db dir>/<sweep>.shard-K.db
**   merge.sbatch   `lenx merge` of the models and shard stores into --db
**   submit.sh      submits the three, each afterok the one before
*/
#define _DEFAULT_SOURCE     /* realpath */
#include "harness/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/sweep/plan.h"
#include "harness/scaleout/shard.h"
#include "harness/scaleout/slurm.h"
#include "results/store.h"

static const struct lx_opt slurm_opts[] = {
    {"shards", 1, "array tasks N (required): each runs the cells of one shard"},
    {"db", 1, "the merged store (default " LX_DEFAULT_DB "); shard stores and models go beside it"},
    {"partition", 1, "#SBATCH --partition: names of [A-Za-z0-9_.-], comma-separated"},
    {"time", 1, "#SBATCH --time of each job: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S or UNLIMITED"},
    {"cpus", 1, "#SBATCH --cpus-per-task, and lenx's --threads (1..1024, default 1)"},
    {"mem", 1, "#SBATCH --mem: megabytes, or with K, M, G or T (e.g. 4G)"},
    {"requeue-before", 1, "seconds before its --time limit an array task is signalled and requeues itself "
                          "(default 180)"},
    {"save-every", 1, "seconds between saves of a model's training state, which a requeued task resumes "
                      "from (default 120)"},
};

static const char slurm_usage[] =
    "usage: lenx slurm CONFIG.yaml --shards N [options]\n\n"
    "Write a Slurm job for the sweep into <db dir>/<sweep>.slurm/: models.sbatch (trains\n"
    "each model once), cells.sbatch (an array of N tasks, task K running shard K into\n"
    "<db dir>/<sweep>.shard-K.db), merge.sbatch (merges them into --db) and submit.sh,\n"
    "which submits the three with afterok dependencies. Prints how to submit.";

/* Where the job runs and what it runs, all absolute: the storage behind job's paths. */
struct slurm_job {
    struct lx_slurm_job job;    /* what the scripts are written from (its strings point here or to argv/the grid) */
    char lenx[PATH_MAX];        /* this lenx binary */
    char config[PATH_MAX];      /* the sweep file */
    char cwd[PATH_MAX];         /* where the jobs run (#SBATCH --chdir) */
    char db[PATH_MAX + 256];    /* the merged store */
    char dir[PATH_MAX + 256];   /* <db dir>/<sweep>: the prefix of the shard stores and of <sweep>.slurm/ */
};

/* An absolute path for the store --db names, a file that may not exist yet,
** nor its folder (made only when the scripts are written, once everything is
** checked: a refused command leaves nothing behind). A folder is refused. */
static int absolute(const char *path, const char *cwd, char *out, size_t n, struct lx_error *err)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return lx_err(err, LX_EIO, "--db %s is a directory, not a store\n  hint: --db names the merged store's "
                      "file, e.g. --db %s/lenx.db", path, path);
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    else
        snprintf(dir, sizeof dir, ".");
    char real[PATH_MAX];
    if (realpath(dir, real))
        snprintf(out, n, "%s/%s", real, slash ? slash + 1 : path);
    else if (errno == ENOENT)   /* a folder still to make: the path as given, from where the jobs run */
        snprintf(out, n, "%s%s%s", path[0] == '/' ? "" : cwd, path[0] == '/' ? "" : "/", path);
    else
        return lx_err(err, LX_EIO, "%s: cannot resolve its folder %s: %s\n  hint: pass --db with a folder you may "
                      "write", path, dir, strerror(errno));
    return LX_OK;
}

static int write_text(const char *path, const char *text, int exec, struct lx_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        return lx_err(err, LX_EIO, "%s: cannot write it\n  hint: pass --db with a folder you may write", path);
    chmod(path, exec ? 0755 : 0644);
    return LX_OK;
}

/* The models a sweep trains from scratch: distinct root keys (a fine-tuned
** model counts with its base), brought checkpoints aside. */
static long count_roots(const struct lx_plan *plan)
{
    long n = 0;
    for (int i = 0; i < plan->n_cells; i++) {
        const struct lx_cell *c = &plan->cells[i];
        int seen = c->model < 0 || plan->grid->models[c->model].checkpoint != NULL;
        for (int k = 0; k < i && !seen; k++)
            seen = plan->cells[k].model >= 0 && strcmp(lx_cell_root_model(&plan->cells[k]), lx_cell_root_model(c)) == 0;
        n += !seen;
    }
    return n;
}

/* The option values alone, before anything is made: --shards, --cpus, and
** what lx_slurm_check holds --partition, --time, --mem and --db's path to. */
static int slurm_options(const struct lx_args *a, struct lx_slurm_job *job, const char **db, struct lx_error *err)
{
    const struct lx_opt *o = slurm_opts;
    int n = LX_N_OPTS(slurm_opts);
    const char *shards = lx_args_get(a, o, n, "shards"), *cpus = lx_args_get(a, o, n, "cpus");
    const char *lead = lx_args_get(a, o, n, "requeue-before"), *save = lx_args_get(a, o, n, "save-every");
    *db = lx_args_get(a, o, n, "db");
    job->partition = lx_args_get(a, o, n, "partition");
    job->time = lx_args_get(a, o, n, "time");
    job->mem = lx_args_get(a, o, n, "mem");
    job->data = getenv("LENX_DATA");
    job->cpus = 1;
    if (!shards)
        return lx_err(err, LX_EINVAL, "slurm needs --shards N\n  hint: lenx slurm %s --shards 8", a->pos[0]);
    int rc = lx_args_long(shards, "shards", 1, LX_MAX_SHARDS, &job->shards, err);
    if (rc == LX_OK && cpus)
        rc = lx_args_long(cpus, "cpus", 1, LX_SLURM_MAX_CPUS, &job->cpus, err);
    if (rc == LX_OK && lead)
        rc = lx_args_long(lead, "requeue-before", 1, LX_SLURM_MAX_LEAD, &job->requeue_s, err);
    if (rc == LX_OK && save)
        rc = lx_args_long(save, "save-every", 1, LX_SLURM_MAX_SAVE, &job->save_s, err);
    const char *opt[] = {"partition", job->partition, "time", job->time, "mem", job->mem};
    for (int i = 0; i < 6 && rc == LX_OK; i += 2)
        if (opt[i + 1])
            rc = lx_slurm_check_option(opt[i], opt[i + 1], err);
    if (rc == LX_OK && *db)
        rc = lx_slurm_check_path("--db", *db, err);
    return rc;
}

/* Fill j from the options and the config (planned, so a bad one fails here). */
static int slurm_job(const struct lx_args *a, struct slurm_job *j, struct lx_grid *g, struct lx_error *err)
{
    struct lx_slurm_job *job = &j->job;
    const char *db;
    int rc = slurm_options(a, job, &db, err);
    if (rc == LX_OK && !realpath(a->pos[0], j->config))     /* a file error, as lenx run's (exit 3) */
        rc = lx_err(err, LX_EIO, "%s: cannot open the file: %s\n  hint: check the path", a->pos[0], strerror(errno));
    ssize_t len = rc == LX_OK ? readlink("/proc/self/exe", j->lenx, sizeof j->lenx - 1) : 0;
    if (rc == LX_OK && (len <= 0 || !getcwd(j->cwd, sizeof j->cwd)))
        rc = lx_err(err, LX_EIO, "cannot find the lenx binary or the current folder");
    j->lenx[len > 0 ? len : 0] = '\0';
    if (rc == LX_OK)
        rc = absolute(db ? db : LX_DEFAULT_DB, j->cwd, j->db, sizeof j->db, err);
    struct lx_plan plan = {0};
    long n_roots = 0;
    if (rc == LX_OK && (rc = lx_grid_load(g, a->pos[0], err)) == LX_OK)
        rc = lx_plan_build(&plan, g, err);
    if (rc == LX_OK) {
        const char *slash = strrchr(j->db, '/');
        snprintf(j->dir, sizeof j->dir, "%.*s/%s", (int)(slash - j->db), j->db, g->name);
        n_roots = count_roots(&plan);
        *job = (struct lx_slurm_job){.sweep = g->name, .lenx = j->lenx, .config = j->config, .cwd = j->cwd,
                                     .db = j->db, .dir = j->dir, .data = job->data, .partition = job->partition,
                                     .time = job->time, .mem = job->mem, .shards = job->shards, .cpus = job->cpus,
                                     .requeue_s = job->requeue_s, .save_s = job->save_s,
                                     .model_shards = n_roots < 1 ? 1 : n_roots < job->shards ? n_roots : job->shards};
        rc = lx_slurm_check(job, err);
    }
    if (rc == LX_OK) {
        lx_plan_warn(&plan);
        fprintf(stderr, "lenx: sweep '%s': %d cells in %ld shards; %ld models to train first, in %ld tasks\n",
                g->name, plan.n_cells, job->shards, n_roots, job->model_shards);
        if (job->shards > plan.n_cells)
            fprintf(stderr, "lenx: note: more shards than cells: some array tasks will have nothing to run\n");
    }
    lx_plan_release(&plan);
    return rc;
}

int lx_cmd_slurm(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, slurm_opts, LX_N_OPTS(slurm_opts), argc, argv, &help, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if (help)
        return lx_cli_usage(slurm_usage, slurm_opts, LX_N_OPTS(slurm_opts)), 0;
    if (a.n_pos != 1) {
        fprintf(stderr, "lenx: error: slurm takes one CONFIG file\n  hint: lenx slurm configs/quick.yaml "
                "--shards 8\n");
        return 2;
    }
    struct slurm_job j = {0};
    struct lx_grid g = {0};
    rc = slurm_job(&a, &j, &g, &err);
    struct lx_buf text[LX_SLURM_N_FILES] = {{0}}, path = {0};
    if (rc == LX_OK)
        rc = lx_slurm_scripts(&j.job, text, &err);
    for (int i = 0; i < LX_SLURM_N_FILES && rc == LX_OK; i++) {
        lx_buf_reset(&path);
        lx_buf_printf(&path, "%s.slurm/logs/x", j.dir);
        lx_make_parent_dir(lx_buf_str(&path));
        lx_buf_reset(&path);
        lx_buf_printf(&path, "%s.slurm/%s", j.dir, lx_slurm_files[i]);
        rc = write_text(lx_buf_str(&path), lx_buf_str(&text[i]), i == LX_SLURM_N_FILES - 1, &err);
    }
    if (rc == LX_OK)
        printf("wrote %s.slurm/models.sbatch (--array=0-%ld), cells.sbatch (--array=0-%ld), merge.sbatch and "
               "submit.sh\nsubmit with:\n  sh %s.slurm/submit.sh\n", j.dir, j.job.model_shards - 1,
               j.job.shards - 1, j.dir);
    for (int i = 0; i < LX_SLURM_N_FILES; i++)
        lx_buf_free(&text[i]);
    lx_buf_free(&path);
    lx_grid_release(&g);
    return rc < 0 ? lx_cli_fail(&err, rc) : 0;
}
