/*
** harness/scaleout/slurm.h - the text of `lenx slurm`'s job scripts (docs/cluster.md#slurm):
** a job description in, four scripts out, nothing read or written. Every
** value is checked first for what Slurm and the shell can carry
** (lx_slurm_check); harness/commands/slurm.c fills the job from the command line and
** writes the files, tests/fuzz/fuzz_slurm.c feeds it random jobs.
*/
#ifndef LX_SLURM_H
#define LX_SLURM_H

#include "harness/core/lx.h"

#define LX_SLURM_N_FILES 4

/* The scripts' file names, in the order lx_slurm_scripts writes them:
** models.sbatch, cells.sbatch, merge.sbatch, submit.sh. */
extern const char *const lx_slurm_files[LX_SLURM_N_FILES];

/* One sweep on Slurm. Paths are absolute; strings are borrowed. */
struct lx_slurm_job {
    const char *sweep;          /* the sweep's name: letters, digits, '-', '_', '.' */
    const char *lenx;           /* the lenx binary the jobs run */
    const char *config;         /* the sweep file */
    const char *cwd;            /* where the jobs run (#SBATCH --chdir) */
    const char *db;             /* the merged store */
    const char *dir;            /* <db dir>/<sweep>: prefix of the shard stores and of <sweep>.slurm/ */
    const char *data;           /* LENX_DATA to export, or NULL */
    const char *partition;      /* #SBATCH --partition, or NULL */
    const char *time;           /* #SBATCH --time, or NULL */
    const char *mem;            /* #SBATCH --mem, or NULL */
    long shards;                /* tasks of the cell array, 1..LX_MAX_SHARDS */
    long cpus;                  /* --cpus-per-task and lenx's --threads, 1..LX_SLURM_MAX_CPUS */
    long model_shards;          /* tasks of the models array, 1..shards */
    long requeue_s;             /* the array tasks' SIGUSR1 this many seconds before their limit, then a
                                ** requeue (lenx slurm --requeue-before), 1..LX_SLURM_MAX_LEAD; 0: LX_SLURM_REQUEUE_S */
    long save_s;                /* seconds between saves of a training run's state (--save-every), 1..86400;
                                ** 0: LX_SLURM_SAVE_S */
};

#define LX_SLURM_MAX_CPUS 1024

/* The merge job passes its stores to `lenx merge` as arguments while they take at most this many bytes
** (a quarter of the 128 KiB Linux's smallest ARG_MAX allows, the rest left to the environment), else one
** path a line on its standard input (lenx merge --from -): any --shards then fits (docs/cluster.md#slurm). */
#define LX_SLURM_INLINE_ARGS 32768

/* Time limits (docs/cluster.md#time-limits): the array jobs ask Slurm for
** SIGUSR1 this many seconds before their limit (#SBATCH --signal=B:USR1@...),
** and their shell then requeues the task (#SBATCH --requeue); the rerun
** resumes, a model in training from the state it saves every
** LX_SLURM_SAVE_S seconds (lenx run --save-every), cells from the store. */
#define LX_SLURM_REQUEUE_S 180
#define LX_SLURM_SAVE_S 120
#define LX_SLURM_MAX_LEAD 65535     /* sbatch --signal's largest lead */
#define LX_SLURM_SIGNAL_EARLY 60    /* how much sooner Slurm may signal (sbatch(1), --signal): a --time up to
                                    ** the lead and this is refused */
#define LX_SLURM_MAX_SAVE 86400
/* A task requeues itself at most this many times (SLURM_RESTART_COUNT): a
** --time under the signal's lead would otherwise requeue it forever. */
#define LX_SLURM_MAX_REQUEUES 20

/* LX_OK when every value of j can be written into the scripts, else
** LX_EINVAL with err naming the option (or the path's source) and what is
** accepted. */
int lx_slurm_check(const struct lx_slurm_job *j, struct lx_error *err);

/* One option value alone ("partition", "time" or "mem"): as lx_slurm_check. */
int lx_slurm_check_option(const char *name, const char *value, struct lx_error *err);

/* A path from source (e.g. "--db") alone: no control character (as lx_slurm_check). */
int lx_slurm_check_path(const char *source, const char *path, struct lx_error *err);

/* The four scripts of j into out[] (appended), after lx_slurm_check. */
int lx_slurm_scripts(const struct lx_slurm_job *j, struct lx_buf out[LX_SLURM_N_FILES], struct lx_error *err);

#endif
