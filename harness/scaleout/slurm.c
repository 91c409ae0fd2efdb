/*
** harness/scaleout/slurm.c - the text of `lenx slurm`'s job scripts (harness/scaleout/slurm.h,
** docs/cluster.md#slurm).
**
** Values reach the scripts in two places, each with its own reader:
**   - "#SBATCH --opt=VALUE" lines, read by sbatch, which splits a line into
**     arguments at whitespace, honours '...' and "..." quotes and backslash
**     escapes, ends the line at an unquoted '#', and starts a new job
**     component on a line holding "hetjob" or "packjob". A value made only of
**     [A-Za-z0-9_./%=:,+@-] is written as is; any other in double quotes
**     with \ " ' # escaped by a backslash (older sbatch knows only "..."
**     and reads '#' even inside it: the escapes work in both). To bash the
**     line is a comment as long as the value holds no newline.
**   - the command lines, read by the shell: every path and name in single
**     quotes ('\'' for a quote), never inside double quotes.
** So no value may hold a control character (a newline would end the comment
** and start a command); option values are held to what Slurm accepts there,
** names and paths to what the two readers carry safely. Anything else is
** refused with the option named (lx_slurm_check).
*/
#include "harness/scaleout/slurm.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "harness/scaleout/shard.h"

const char *const lx_slurm_files[LX_SLURM_N_FILES] = {"models.sbatch", "cells.sbatch", "merge.sbatch", "submit.sh"};

/* ---------------------------------------------------------------- checks */

/* s for a message: control bytes and '\' as \xNN, cut at 60 bytes. */
static const char *shown(const char *s, char out[300])
{
    size_t k = 0;
    for (size_t i = 0; s[i] && k < 240; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i == 60) {
            k += (size_t)snprintf(out + k, 300 - k, "...");
            break;
        }
        k += (size_t)(c < 0x20 || c == 0x7f || c == '\\' ? snprintf(out + k, 300 - k, "\\x%02x", c)
                                                          : snprintf(out + k, 300 - k, "%c", c));
    }
    out[k] = '\0';
    return out;
}

static int is_name_char(int c)
{
    return isalnum(c) || c == '_' || c == '-' || c == '.';
}

/* Whether s holds a word sbatch reads as a job separator on an #SBATCH line. */
static int has_component_word(const char *s)
{
    for (; *s; s++)
        if (strncasecmp(s, "hetjob", 6) == 0 || strncasecmp(s, "packjob", 7) == 0)
            return 1;
    return 0;
}

static int refuse(struct lx_error *err, const char *name, const char *value, const char *accepted, const char *hint)
{
    char buf[300];
    return lx_err(err, LX_EINVAL, "--%s '%s': %s\n  hint: %s", name, shown(value, buf), accepted, hint);
}

/* Partition names, comma-separated: [A-Za-z0-9_.-], the first not '-' or '.'. */
static int partition_ok(const char *v)
{
    if (strlen(v) > 255 || has_component_word(v))
        return 0;
    for (const char *p = v;; p++) {
        if (!isalnum((unsigned char)*p) && *p != '_')
            return 0;
        while (is_name_char((unsigned char)*p))
            p++;
        if (*p != ',')
            return *p == '\0';
    }
}

/* 1 to max digits at *p, moved past them. */
static int digits(const char **p, int max)
{
    int n = 0;
    while (isdigit((unsigned char)**p) && n <= max)
        (*p)++, n++;
    return n >= 1 && n <= max;
}

/* Slurm's time formats in seconds: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S; 0 for UNLIMITED, INFINITE or 0
** (no limit, as Slurm reads them), -1 for anything else. */
static long long time_seconds(const char *v)
{
    if (strcasecmp(v, "UNLIMITED") == 0 || strcasecmp(v, "INFINITE") == 0)
        return 0;
    static const long long per[2][3][3] = {{{60}, {60, 1}, {3600, 60, 1}}, {{3600}, {3600, 60}, {3600, 60, 1}}};
    const char *p = v, *at = v;
    long long days = 0, g[3];
    int n = 0, with_days = strchr(v, '-') != NULL;
    if (with_days && (!digits(&p, 6) || *p++ != '-'))
        return -1;
    if (with_days)
        days = strtoll(v, NULL, 10);
    for (;;) {
        at = p;
        if (!digits(&p, 9))
            return -1;
        g[n++] = strtoll(at, NULL, 10);
        if (*p == '\0')
            break;
        if (*p++ != ':' || n == 3)
            return -1;
    }
    long long s = days * 86400;
    for (int i = 0; i < n; i++)
        s += g[i] * per[with_days][n - 1][i];
    return s;
}

/* A size in megabytes, or with one of the suffixes K, M, G, T (either case). */
static int mem_ok(const char *v)
{
    const char *p = v;
    return digits(&p, 15) && (*p == '\0' || (strchr("KMGTkmgt", *p) && p[1] == '\0'));
}

int lx_slurm_check_option(const char *name, const char *value, struct lx_error *err)
{
    if (strcmp(name, "partition") == 0 && !partition_ok(value))
        return refuse(err, name, value, "a Slurm partition name is letters, digits, '_', '-' and '.' (not first), "
                      "several separated by commas; at most 255 bytes", "--partition debug");
    if (strcmp(name, "time") == 0 && time_seconds(value) < 0)
        return refuse(err, name, value, "Slurm takes minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S or UNLIMITED",
                      "--time 2:00:00 (two hours) or --time 1-12 (a day and a half)");
    if (strcmp(name, "mem") == 0 && !mem_ok(value))
        return refuse(err, name, value, "Slurm takes a whole number of megabytes, or one with the suffix K, M, G "
                      "or T", "--mem 8G");
    return LX_OK;
}

int lx_slurm_check_path(const char *source, const char *path, struct lx_error *err)
{
    char buf[300];
    for (size_t i = 0; path[i]; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c < 0x20 || c == 0x7f)
            return lx_err(err, LX_EINVAL, "%s: the path '%s' holds the control character 0x%02x at byte %zu\n  "
                          "hint: a job script cannot carry it safely; use a folder and file names without one",
                          source, shown(path, buf), c, i);
    }
    return LX_OK;
}

/* A path of the job: absolute, no control character; on an #SBATCH line
** (header) also no "hetjob"/"packjob", and in --output's pattern (pattern)
** no backslash, which would turn the pattern's %x, %A... off. */
static int job_path(const char *source, const char *path, int header, int pattern, struct lx_error *err)
{
    char buf[300];
    int rc = lx_slurm_check_path(source, path, err);
    if (rc == LX_OK && path[0] != '/')
        rc = lx_err(err, LX_EINVAL, "%s: the path '%s' is not absolute", source, shown(path, buf));
    if (rc == LX_OK && header && has_component_word(path))
        rc = lx_err(err, LX_EINVAL, "%s: the path '%s' holds 'hetjob' or 'packjob', which sbatch reads as a new "
                    "job on an #SBATCH line\n  hint: rename the folder", source, shown(path, buf));
    if (rc == LX_OK && pattern && strchr(path, '\\'))
        rc = lx_err(err, LX_EINVAL, "%s: the path '%s' holds a backslash, which turns off Slurm's %%x, %%A and %%a "
                    "in the log file names\n  hint: use a folder without one", source, shown(path, buf));
    return rc;
}

int lx_slurm_check(const struct lx_slurm_job *j, struct lx_error *err)
{
    char buf[300];
    int rc = LX_OK;
    for (const char *p = j->sweep; *p && rc == LX_OK; p++)
        if (!is_name_char((unsigned char)*p))
            rc = lx_err(err, LX_EINVAL, "sweep name '%s' has the character 0x%02x\n  hint: use letters, digits, "
                        "'-', '_' and '.'", shown(j->sweep, buf), (unsigned char)*p);
    if (rc == LX_OK && (!j->sweep[0] || has_component_word(j->sweep)))
        rc = lx_err(err, LX_EINVAL, "sweep name '%s' cannot name a Slurm job (empty, or holding 'hetjob' or "
                    "'packjob')\n  hint: rename the sweep", j->sweep);
    if (rc == LX_OK)
        rc = job_path("the lenx binary", j->lenx, 0, 0, err);
    if (rc == LX_OK)
        rc = job_path("the config", j->config, 0, 0, err);
    if (rc == LX_OK)
        rc = job_path("the current folder", j->cwd, 1, 0, err);
    if (rc == LX_OK)
        rc = job_path("--db", j->db, 0, 0, err);
    if (rc == LX_OK)
        rc = job_path("--db", j->dir, 1, 1, err);
    if (rc == LX_OK && j->data)
        rc = lx_slurm_check_path("LENX_DATA (or --data)", j->data, err);
    const char *opt[] = {"partition", j->partition, "time", j->time, "mem", j->mem};
    for (int i = 0; i < 6 && rc == LX_OK; i += 2)
        if (opt[i + 1])
            rc = lx_slurm_check_option(opt[i], opt[i + 1], err);
    if (rc == LX_OK && (j->shards < 1 || j->shards > LX_MAX_SHARDS || j->cpus < 1 || j->cpus > LX_SLURM_MAX_CPUS ||
                        j->model_shards < 1 || j->model_shards > j->shards))
        rc = lx_err(err, LX_EINVAL, "--shards %ld, --cpus %ld, %ld model tasks: out of bounds (shards 1..%d, cpus "
                    "1..%d, model tasks 1..shards)", j->shards, j->cpus, j->model_shards, LX_MAX_SHARDS,
                    LX_SLURM_MAX_CPUS);
    if (rc == LX_OK && (j->requeue_s < 0 || j->requeue_s > LX_SLURM_MAX_LEAD || j->save_s < 0 ||
                        j->save_s > LX_SLURM_MAX_SAVE))
        rc = lx_err(err, LX_EINVAL, "--requeue-before %ld, --save-every %ld: out of bounds (1..%d and 1..%d "
                    "seconds)", j->requeue_s, j->save_s, LX_SLURM_MAX_LEAD, LX_SLURM_MAX_SAVE);
    /* Slurm may send the signal up to a minute before the lead asked for: a limit inside that
    ** would requeue every task as it starts, until SLURM_RESTART_COUNT runs out */
    long long limit = rc == LX_OK && j->time ? time_seconds(j->time) : 0;
    long lead = j->requeue_s ? j->requeue_s : LX_SLURM_REQUEUE_S;
    if (limit > 0 && limit <= lead + LX_SLURM_SIGNAL_EARLY)
        rc = lx_err(err, LX_EINVAL, "--time %s (%lld s) ends before the requeue signal can leave a task any time: "
                    "the array tasks ask for SIGUSR1 %ld s before their limit and Slurm may send it %d s sooner, "
                    "so every task would be requeued as it starts\n  hint: a --time above %ld s, or a shorter "
                    "--requeue-before (e.g. --requeue-before 30)", j->time, limit, lead, LX_SLURM_SIGNAL_EARLY,
                    lead + LX_SLURM_SIGNAL_EARLY);
    return rc;
}

/* --------------------------------------------------------------- writing */

/* s in single quotes for the shell ('\'' for a quote). */
static void put_shell(struct lx_buf *b, const char *s)
{
    lx_buf_puts(b, "'");
    for (; *s; s++)
        lx_buf_puts(b, *s == '\'' ? "'\\''" : (char[2]){*s, 0});
    lx_buf_puts(b, "'");
}

/* "#SBATCH --opt=value\n", value as sbatch reads it back (see the top). */
static void put_sbatch(struct lx_buf *b, const char *opt, const char *value)
{
    int plain = value[0] != '\0';
    for (const char *p = value; *p; p++)
        plain &= isalnum((unsigned char)*p) || strchr("_./%=:,+@-", *p) != NULL;
    lx_buf_printf(b, "#SBATCH --%s=%s", opt, plain ? value : "\"");
    for (const char *p = value; !plain && *p; p++)
        lx_buf_puts(b, strchr("\\\"'#", *p) ? (char[3]){'\\', *p, 0} : (char[2]){*p, 0});
    lx_buf_puts(b, plain ? "\n" : "\"\n");
}

/* The #SBATCH header of one job and the shell's first lines. */
static void header(struct lx_buf *b, const struct lx_slurm_job *j, const char *what, const char *name,
                   const char *log, long array)
{
    lx_buf_printf(b, "#!/bin/bash\n# %s of sweep '%s' (%s); written by `lenx slurm`, see docs/cluster.md\n", what,
                  j->sweep, j->config);
    struct lx_buf v = {0};
    lx_buf_printf(&v, "lenx-%s-%s", j->sweep, name);
    put_sbatch(b, "job-name", lx_buf_str(&v));
    lx_buf_reset(&v);
    for (const char *p = j->dir; *p; p++)       /* a literal '%' of a file name pattern is "%%" */
        lx_buf_puts(&v, *p == '%' ? "%%" : (char[2]){*p, 0});
    lx_buf_printf(&v, ".slurm/logs/%s", log);
    put_sbatch(b, "output", lx_buf_str(&v));
    lx_buf_free(&v);
    put_sbatch(b, "chdir", j->cwd);
    lx_buf_printf(b, "#SBATCH --cpus-per-task=%ld\n#SBATCH --kill-on-invalid-dep=yes\n", j->cpus);
    const char *opt[] = {"partition", j->partition, "time", j->time, "mem", j->mem};
    for (int i = 0; i < 6; i += 2)
        if (opt[i + 1])
            put_sbatch(b, opt[i], opt[i + 1]);
    if (array)      /* before the first command: sbatch reads no #SBATCH line after it */
        lx_buf_printf(b, "#SBATCH --array=0-%ld\n#SBATCH --requeue\n#SBATCH --signal=B:USR1@%ld\n", array - 1,
                      j->requeue_s ? j->requeue_s : LX_SLURM_REQUEUE_S);
    lx_buf_puts(b, "set -euo pipefail\n");
    if (array)      /* near the time limit: back in the queue; the rerun resumes (docs/cluster.md#time-limits) */
        lx_buf_printf(b, "trap '[ \"${SLURM_RESTART_COUNT:-0}\" -lt %d ] && { scontrol requeue "
                      "\"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\" || echo \"lenx: scontrol requeue failed; "
                      "the task runs on to its time limit\" >&2; }' USR1\n", LX_SLURM_MAX_REQUEUES);
    if (j->data) {
        lx_buf_puts(b, "export LENX_DATA=");
        put_shell(b, j->data);
        lx_buf_puts(b, "\n");
    }
}

/* Bytes of `lenx merge`'s arguments (each with its NUL, as exec counts them) given the stores inline. */
static long merge_arg_bytes(const struct lx_slurm_job *j)
{
    long dir = (long)strlen(j->dir), n = (long)strlen(j->lenx) + 1 + 6 + 7 + (long)strlen(j->db) + 1;
    char num[32];
    for (long k = 0; k < j->model_shards || k < j->shards; k++) {
        long digits = snprintf(num, sizeof num, "%ld", k);
        n += k < j->model_shards ? dir + 12 + digits : 0;   /* <dir>.models-K.db and its NUL */
        n += k < j->shards ? dir + 11 + digits : 0;         /* <dir>.shard-K.db and its NUL */
    }
    return n;
}

/* The merge job's `lenx merge` of the models stores, then the shard stores, into --db: as arguments while
** they take at most LX_SLURM_INLINE_ARGS bytes, else one path a line into --from - (docs/cluster.md#slurm):
** past Linux's exec limits (ARG_MAX, 2 MiB with an 8 MiB stack, or 128 KiB at least, shared with the
** environment) `lenx merge` would never start, and sbatch refuses a script past 4 MB by default. */
static void merge_command(struct lx_buf *b, const struct lx_slurm_job *j, const char *L, const char *D,
                          const char *O)
{
    if (merge_arg_bytes(j) <= LX_SLURM_INLINE_ARGS) {
        lx_buf_printf(b, "%s merge", L);
        for (long k = 0; k < j->model_shards; k++)
            lx_buf_printf(b, " %s.models-%ld.db", D, k);
        for (long k = 0; k < j->shards; k++)
            lx_buf_printf(b, " %s.shard-%ld.db", D, k);
        lx_buf_printf(b, " --into %s\n", O);
        return;
    }
    lx_buf_printf(b, "# %ld stores: more than a command line holds, so their paths go to lenx merge one a line\n"
                  "{ for ((k = 0; k < %ld; k++)); do printf '%%s\\n' %s.models-\"$k\".db; done\n"
                  "  for ((k = 0; k < %ld; k++)); do printf '%%s\\n' %s.shard-\"$k\".db; done; } |\n"
                  "    %s merge --from - --into %s\n", j->model_shards + j->shards, j->model_shards, D, j->shards, D,
                  L, O);
}

/* The array jobs run lenx in the background and wait for it, so that the shell takes Slurm's USR1
** (its trap requeues the task) while lenx runs; a wait the signal cut short waits again, and the
** job's status is lenx's. */
#define WAIT "pid=$!\nwhile :; do wait \"$pid\" && exit 0 || rc=$?; kill -0 \"$pid\" 2>/dev/null || exit \"$rc\"; done\n"

int lx_slurm_scripts(const struct lx_slurm_job *j, struct lx_buf out[LX_SLURM_N_FILES], struct lx_error *err)
{
    int rc = lx_slurm_check(j, err);
    if (rc < 0)
        return rc;
    struct lx_buf q[5] = {{0}};
    const char *v[5] = {j->lenx, j->config, j->dir, j->db, j->sweep};
    for (int k = 0; k < 5; k++)
        put_shell(&q[k], v[k]);
    const char *L = lx_buf_str(&q[0]), *C = lx_buf_str(&q[1]), *D = lx_buf_str(&q[2]), *O = lx_buf_str(&q[3]),
               *S = lx_buf_str(&q[4]);
    header(&out[0], j, "the models stage: array task K trains model shard K (from SLURM_ARRAY_TASK_ID)", "models",
           "%x-%A_%a.out", j->model_shards);
    lx_buf_printf(&out[0], "%s run %s --models-only --db %s.models-\"$SLURM_ARRAY_TASK_ID\".db --threads %ld "
                  "--save-every %ld &\n%s", L, C, D, j->cpus, j->save_s ? j->save_s : LX_SLURM_SAVE_S, WAIT);
    header(&out[1], j, "the cells: array task K runs shard K (from SLURM_ARRAY_TASK_ID)", "cells", "%x-%A_%a.out",
           j->shards);
    lx_buf_printf(&out[1], "%s run %s --db %s.shard-\"$SLURM_ARRAY_TASK_ID\".db --no-train --no-table --threads %ld "
                  "&\n%s", L, C, D, j->cpus, WAIT);
    header(&out[2], j, "the merge of the shard stores", "merge", "%x-%j.out", 0);
    merge_command(&out[2], j, L, D, O);
    lx_buf_printf(&out[2], "%s table --db %s --sweep %s\n", L, O, S);
    lx_buf_printf(&out[3], "#!/bin/sh\n# Submit sweep '%s': the models array, then the array of %ld shards after "
                  "it, then the merge\n# after the array (afterok: a failed job cancels the ones after it). sbatch "
                  "--parsable prints JOBID[;CLUSTER].\nset -eu\nsweep=%s\ndb=%s\ncd \"$(dirname \"$0\")\"\n"
                  "models=$(sbatch --parsable models.sbatch); models=${models%%%%;*}\n"
                  "cells=$(sbatch --parsable --dependency=afterok:$models cells.sbatch); cells=${cells%%%%;*}\n"
                  "merge=$(sbatch --parsable --dependency=afterok:$cells merge.sbatch); merge=${merge%%%%;*}\n"
                  "echo \"lenx: submitted sweep '$sweep': models array $models (%ld tasks), cell array $cells (%ld "
                  "tasks), merge job $merge\"\necho \"lenx: follow them with: squeue -j $models,$cells,$merge; the "
                  "result: $db\"\necho \"JOBS $models $cells $merge\"\n", j->sweep, j->shards, S, O, j->model_shards,
                  j->shards);
    for (int k = 0; k < 5; k++)
        lx_buf_free(&q[k]);
    return LX_OK;
}
