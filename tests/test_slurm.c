/*
** tests/test_slurm.c - `lenx slurm` under hostile values (docs/cluster.md#slurm).
**
** Every option value and every path that reaches the job scripts is given
** each hostile string below: a newline, a space with an sbatch option after
** it, quotes, $( ), backticks, ';', '#', a leading '-'; each string would
** run `touch pwned` if it escaped. lenx is run without a shell (argv as
** given), from a sandbox: a copy of the binary, the config, the store's
** folder, the current folder put in folders named after the hostile string.
** Either lenx exits 2 naming the option (or the path's source), or:
**   - sbatch's view (tests/slurm_check.h): every header line is a comment or
**     an #SBATCH line with exactly one option, and the options carry the
**     values given (--partition=V, --chdir=the current folder, ...);
**   - `bash -n` accepts each script;
**   - the scripts run: each .sbatch under bash with the lenx binary replaced
**     by a stand-in that logs its arguments, submit.sh under sh with a
**     stand-in sbatch; no file named "pwned" appears anywhere in the sandbox,
**     and the stand-in got the config, the store and LENX_DATA byte for byte.
** Paths without control characters must be accepted (quoted, not refused).
*/
#define _XOPEN_SOURCE 700   /* nftw */
#define _DEFAULT_SOURCE     /* realpath, setenv */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/core/lx.h"
#include "tests/slurm_check.h"

static char box[64];            /* the sandbox: /tmp/lenx-slurm-XXXXXX */
static char master[128];        /* box/lenx: a copy of $LENX_BIN, moved where a case needs it */

static const char *const hostile[] = {
    "p\ntouch pwned",           "p --wrap=touch pwned", "p'; touch pwned; '", "p\"; touch pwned; \"",
    "$(touch pwned)",           "`touch pwned`",        "p;touch pwned",      "p#;touch pwned",
    "-p;touch pwned",           "--wrap=touch pwned",
};
#define N_HOSTILE (sizeof hostile / sizeof *hostile)

/* Where a hostile string goes: an option's value, or a path. */
enum where { W_OPTION, W_DB_DIR, W_DB_NAME, W_CONFIG, W_CWD, W_DATA, W_BIN };

/* Run argv (no shell) in cwd, LENX_DATA set to data (unset when NULL), extra
** PATH folder prepended when not NULL; stdout+stderr into out. Exit status. */
static int run(const char *cwd, char *const argv[], const char *data, const char *path, char *out, size_t n)
{
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(fd[1], 1), dup2(fd[1], 2), close(fd[0]), close(fd[1]);
        if (chdir(cwd) != 0)
            _exit(126);
        data ? setenv("LENX_DATA", data, 1) : unsetenv("LENX_DATA");
        if (path) {
            char p[8192];
            snprintf(p, sizeof p, "%s:%s", path, getenv("PATH"));
            setenv("PATH", p, 1);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t k;
    char tmp[4096];
    while ((k = read(fd[0], tmp, sizeof tmp)) > 0)
        for (ssize_t i = 0; i < k && len + 1 < n; i++)
            out[len++] = tmp[i];
    out[len] = '\0';
    close(fd[0]);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void file_put(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
    chmod(path, mode);
}

static char *file_get(const char *path)
{
    unsigned char *bytes = NULL;
    long n = 0;
    struct lx_error err;
    cr_assert_eq(lx_read_file(path, &bytes, &n, 0, &err), LX_OK, "%s", err.msg);
    char *s = lx_xmalloc((size_t)n + 1);
    memcpy(s, bytes, (size_t)n);
    s[n] = '\0';
    free(bytes);
    return s;
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
    char *s = file_get(from);
    file_put(to, s, mode);
    free(s);
}

static int found_pwned;
static int look(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag;
    if (strcmp(path + ftw->base, "pwned") == 0)
        found_pwned = 1, unlink(path);     /* so that the next case starts clean */
    return 0;
}

static void setup(void)
{
    snprintf(box, sizeof box, "/tmp/lenx-slurm-XXXXXX");
    cr_assert_not_null(mkdtemp(box));
    cr_assert_not_null(getenv("LENX_BIN"), "LENX_BIN must name the lenx binary (make test sets it)");
    cr_assert_not_null(getenv("LENX_ROOT"), "LENX_ROOT must name the checkout (make test sets it)");
    snprintf(master, sizeof master, "%s/lenx", box);
    unsigned char *bytes;
    long n;
    struct lx_error err;
    cr_assert_eq(lx_read_file(getenv("LENX_BIN"), &bytes, &n, 0, &err), LX_OK, "%s", err.msg);
    FILE *f = fopen(master, "wb");
    cr_assert(f && fwrite(bytes, 1, (size_t)n, f) == (size_t)n && fclose(f) == 0);
    free(bytes);
    chmod(master, 0755);
    char sbatch[192];
    snprintf(sbatch, sizeof sbatch, "%s/fakebin", box);
    mkdir(sbatch, 0755);
    strcat(sbatch, "/sbatch");
    file_put(sbatch, "#!/bin/sh\necho \"7;cluster\"\n", 0755);
}

static void teardown(void)
{
    char *rm[] = {"/bin/rm", "-rf", box, NULL}, out[256];
    cr_expect_eq(run("/", rm, NULL, NULL, out, sizeof out), 0, "%s", out);
}

/* The options of a script's header, "\n"-joined (each_option's context). */
static void each_option(void *ctx, const char *option)
{
    strcat(strcat((char *)ctx, option), "\n");
}

/* What the case must have written, checked in the scripts and their runs. */
struct expect {
    char option[SB_ARG];    /* an "#SBATCH" option that must be there ("--partition=V"), or "" */
    int arrays_only;        /* the option is the array jobs' alone (models, cells), not the merge's */
    char call[PATH_MAX];    /* a line the stand-in lenx must have logged, or "" */
};

/* The scripts in folder (<db dir>/shard.slurm) under sbatch's parser, bash -n and a run. */
static void check_scripts(const char *folder, const char *cwd, const char *bin, const struct expect *e,
                          const char *what)
{
    static const char *const jobs[] = {"models.sbatch", "cells.sbatch", "merge.sbatch"};
    char path[2 * PATH_MAX], calls[256], out[8192], why[SB_ARG + 256];
    snprintf(calls, sizeof calls, "%s/calls", box);
    unlink(calls);
    char stub[1024];
    snprintf(stub, sizeof stub, "#!/bin/sh\nfor a in \"$@\"; do printf '%%s\\n' \"$a\"; done >> '%s'\n"
             "printf 'LENX_DATA=%%s\\n' \"${LENX_DATA-}\" >> '%s'\n", calls, calls);
    file_put(bin, stub, 0755);     /* the stand-in for lenx: logs its arguments */
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s", folder, jobs[k]);
        char *text = file_get(path);
        static char options[1 << 16];
        options[0] = '\0';
        cr_expect_eq(sb_header(text, each_option, options, why, sizeof why), 0, "%s: %s: %s", what, jobs[k], why);
        if (e->option[0] && !(e->arrays_only && k == 2)) {
            char line[SB_ARG + 2];
            snprintf(line, sizeof line, "%s\n", e->option);
            cr_expect(strstr(options, line) != NULL, "%s: %s: no #SBATCH %s; sbatch reads:\n%s", what, jobs[k],
                      e->option, options);
        }
        free(text);
        char *syntax[] = {"/bin/bash", "-n", path, NULL};
        cr_expect_eq(run(cwd, syntax, NULL, NULL, out, sizeof out), 0, "%s: bash -n %s: %s", what, jobs[k], out);
        char *job[] = {"/usr/bin/env", "SLURM_ARRAY_TASK_ID=0", "/bin/bash", path, NULL};
        cr_expect_eq(run(cwd, job, NULL, NULL, out, sizeof out), 0, "%s: bash %s: %s", what, jobs[k], out);
    }
    snprintf(path, sizeof path, "%s/submit.sh", folder);
    char fakebin[128], *submit[] = {"/bin/sh", path, NULL};
    snprintf(fakebin, sizeof fakebin, "%s/fakebin", box);
    cr_expect_eq(run(cwd, submit, NULL, fakebin, out, sizeof out), 0, "%s: submit.sh: %s", what, out);
    cr_expect(strstr(out, "JOBS 7 7 7\n") != NULL, "%s: submit.sh printed: %s", what, out);
    unlink(bin);
    found_pwned = 0;
    cr_assert_eq(nftw(box, look, 16, FTW_PHYS), 0);
    cr_expect(!found_pwned, "%s: the planted command ran (a file 'pwned' appeared)", what);
    char *log = file_get(calls);
    char line[PATH_MAX + 2];
    snprintf(line, sizeof line, "\n%s\n", e->call);
    cr_expect(strstr(log, "\nrun\n") && strstr(log, "\nmerge\n") && strstr(log, "\ntable\n"),
              "%s: the stand-in lenx was not run by every job: %s", what, log);
    cr_expect(!e->call[0] || strstr(log, line), "%s: the stand-in lenx never got [%s]; it got:\n%s", what, e->call,
              log);
    free(log);
}

/* The name an error must give for a value put at w (option opt). */
static const char *source_name(enum where w, const char *opt)
{
    static char flag[64];
    snprintf(flag, sizeof flag, "--%s", opt ? opt : "");
    const char *names[] = {flag, "--db", "--db", "config", "current folder", "LENX_DATA", "lenx binary"};
    return names[w];
}

/* One case: value v at w (opt: the option's name for W_OPTION); returns lenx's exit status. */
static int one_case(int id, enum where w, const char *opt, const char *v)
{
    char what[256], casedir[128], hostile_dir[PATH_MAX / 2], bin[PATH_MAX], config[PATH_MAX], cwd[PATH_MAX];
    char db[PATH_MAX], out[16384], data[PATH_MAX / 2];
    snprintf(what, sizeof what, "%s%s [%s]", source_name(w, opt), w == W_OPTION ? " value" : "", v);
    snprintf(casedir, sizeof casedir, "%s/c%d", box, id);
    cr_assert_eq(mkdir(casedir, 0755), 0);
    snprintf(hostile_dir, sizeof hostile_dir, "%s/%s", casedir, v);
    if (w != W_OPTION && w != W_DATA && w != W_DB_NAME)
        cr_assert_eq(mkdir(hostile_dir, 0755), 0, "%s", what);
    snprintf(bin, sizeof bin, "%s/%s/lenx", casedir, w == W_BIN ? v : "bin");
    if (w != W_BIN) {
        snprintf(cwd, sizeof cwd, "%s/bin", casedir);
        cr_assert_eq(mkdir(cwd, 0755), 0);
    }
    snprintf(config, sizeof config, "%s/tests/shard.yaml", getenv("LENX_ROOT"));
    if (w == W_CONFIG) {
        char to[PATH_MAX / 2 + 16];
        snprintf(to, sizeof to, "%s/g.yaml", hostile_dir);
        copy_file(config, to, 0644);
        snprintf(config, sizeof config, "%s", to);
    }
    snprintf(cwd, sizeof cwd, "%s", w == W_CWD ? hostile_dir : casedir);
    snprintf(db, sizeof db, "%s", w == W_DB_DIR ? hostile_dir : casedir);
    strcat(db, w == W_DB_NAME ? "/" : "/out/x.db");
    if (w == W_DB_NAME)
        strcat(strcat(db, v), ".db");
    snprintf(data, sizeof data, "%s/data", getenv("LENX_ROOT"));
    if (w == W_DATA) {      /* the data directory under a hostile name */
        cr_assert_eq(symlink(data, hostile_dir), 0, "%s", what);
        snprintf(data, sizeof data, "%s", hostile_dir);
    }
    char *argv[16] = {bin, "slurm", config, "--shards", "2", "--db", db}, flag[64];
    int argc = 7;
    if (w == W_OPTION && strcmp(opt, "shards") == 0)
        argv[4] = (char *)v;
    else if (w == W_OPTION) {
        snprintf(flag, sizeof flag, "--%s", opt);
        argv[argc++] = flag;
        argv[argc++] = (char *)v;
    }
    argv[argc] = NULL;
    cr_assert_eq(rename(master, bin), 0, "%s", what);
    int rc = run(cwd, argv, data, NULL, out, sizeof out);
    cr_assert_eq(rename(bin, master), 0);
    if (rc == 2) {
        cr_expect(strstr(out, source_name(w, opt)) != NULL, "%s: refused without naming %s: %s", what,
                  source_name(w, opt), out);
        return rc;
    }
    cr_expect_eq(rc, 0, "%s: exit %d: %s", what, rc, out);
    if (rc != 0)
        return rc;
    struct expect e = {{0}, 0, {0}};
    char real[PATH_MAX], folder[PATH_MAX + 64];
    const char *slash = strrchr(db, '/');
    snprintf(folder, sizeof folder, "%.*s", (int)(slash - db), db);
    cr_assert_not_null(realpath(folder, real), "%s: %s", what, folder);
    if (w == W_OPTION && strcmp(opt, "requeue-before") == 0)
        snprintf(e.option, sizeof e.option, "--signal=B:USR1@%s", v), e.arrays_only = 1;
    else if (w == W_OPTION && strcmp(opt, "save-every") == 0)
        snprintf(e.call, sizeof e.call, "--save-every\n%s", v);     /* the models job's lenx run, a line an argument */
    else if (w == W_OPTION && strcmp(opt, "shards") != 0)
        snprintf(e.option, sizeof e.option, "--%s=%s", strcmp(opt, "cpus") == 0 ? "cpus-per-task" : opt, v);
    if (w == W_CWD && realpath(cwd, folder))
        snprintf(e.option, sizeof e.option, "--chdir=%s", folder);
    if (w == W_DB_DIR || w == W_DB_NAME)
        snprintf(e.call, sizeof e.call, "%s%s", real, slash);
    if (w == W_CONFIG)
        cr_assert_not_null(realpath(config, e.call));
    if (w == W_DATA)
        snprintf(e.call, sizeof e.call, "LENX_DATA=%s", data);
    snprintf(folder, sizeof folder, "%s/shard.slurm", real);
    check_scripts(folder, cwd, bin, &e, what);
    return rc;
}

static const char *const options[] = {"partition", "time", "mem", "cpus", "shards", "requeue-before", "save-every"};

Test(slurm, hostile_option_values_are_refused_naming_the_option_or_cannot_escape, .init = setup,
     .fini = teardown, .timeout = 300)
{
    int id = 0;
    for (size_t o = 0; o < sizeof options / sizeof *options; o++)
        for (size_t h = 0; h < N_HOSTILE; h++)
            one_case(id++, W_OPTION, options[o], hostile[h]);
}

Test(slurm, hostile_paths_are_quoted_or_refused_when_they_hold_a_control_character, .init = setup,
     .fini = teardown, .timeout = 300)
{
    int id = 0;
    for (enum where w = W_DB_DIR; w <= W_BIN; w++)
        for (size_t h = 0; h < N_HOSTILE; h++) {
            int rc = one_case(id++, w, NULL, hostile[h]);
            if (!strpbrk(hostile[h], "\n"))
                cr_expect_eq(rc, 0, "%s [%s]: a path without a control character must be quoted, not refused",
                             source_name(w, NULL), hostile[h]);
        }
}

Test(slurm, valid_values_reach_sbatch_as_given, .init = setup, .fini = teardown, .timeout = 60)
{
    static const char *const good[][2] = {
        {"partition", "debug,gpu_a-1.x"}, {"time", "1-02:03:04"}, {"time", "90"}, {"time", "12:30"},
        {"time", "3-12"}, {"time", "UNLIMITED"}, {"mem", "512M"}, {"mem", "4g"}, {"mem", "1024"}, {"cpus", "2"},
        {"requeue-before", "45"}, {"requeue-before", "65535"}, {"save-every", "7"}, {"save-every", "86400"},
    };
    for (size_t k = 0; k < sizeof good / sizeof *good; k++)
        cr_expect_eq(one_case((int)k, W_OPTION, good[k][0], good[k][1]), 0, "--%s %s", good[k][0], good[k][1]);
}

/* Integers outside what Slurm's --signal takes (0..65535 s, and a lead of 0 would never requeue) or
** past a day between saves: refused, naming the option. */
Test(slurm, signal_lead_and_save_interval_out_of_bounds_are_refused, .init = setup, .fini = teardown,
     .timeout = 60)
{
    static const char *const bad[][2] = {
        {"requeue-before", "0"}, {"requeue-before", "65536"}, {"requeue-before", "-30"},
        {"save-every", "0"},     {"save-every", "86401"},     {"save-every", "2.5"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        cr_expect_eq(one_case((int)k, W_OPTION, bad[k][0], bad[k][1]), 2, "--%s %s", bad[k][0], bad[k][1]);
}

/* A --time that ends inside the requeue signal's lead and the minute Slurm may add to it would
** requeue every task as it starts: refused, naming --time and the lead, before anything is
** written; a limit past them, or none, is taken (the real-Slurm test runs --time 2 with
** --requeue-before 30). Limits in seconds: 4 = 240, 4:01 = 241, 2:30 = 150, 0 = none. */
Test(slurm, a_time_limit_inside_the_signal_lead_is_refused, .init = setup, .fini = teardown, .timeout = 60)
{
    static const struct {
        const char *time, *lead;
        int rc;
    } cases[] = {
        {"4", NULL, 2},   {"4:01", NULL, 0}, {"2:30", NULL, 2}, {"2", "30", 0},    {"1:30", "30", 2},
        {"0", NULL, 0},   {"UNLIMITED", NULL, 0}, {"0-0:4", NULL, 2}, {"0-0:5", NULL, 0}, {"2", "61", 2},
    };
    char config[PATH_MAX], db[PATH_MAX], out[16384], folder[PATH_MAX], data[PATH_MAX];
    snprintf(config, sizeof config, "%s/tests/shard.yaml", getenv("LENX_ROOT"));
    snprintf(data, sizeof data, "%s/data", getenv("LENX_ROOT"));
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        snprintf(db, sizeof db, "%s/t%zu/x.db", box, k);
        char *argv[16] = {master, "slurm", config, "--shards", "2", "--db", db, "--time", (char *)cases[k].time};
        int argc = 9;
        if (cases[k].lead)
            argv[argc++] = "--requeue-before", argv[argc++] = (char *)cases[k].lead;
        argv[argc] = NULL;
        int rc = run(box, argv, data, NULL, out, sizeof out);
        cr_expect_eq(rc, cases[k].rc, "--time %s --requeue-before %s: exit %d: %s", cases[k].time,
                     cases[k].lead ? cases[k].lead : "(180)", rc, out);
        snprintf(folder, sizeof folder, "%s/t%zu/shard.slurm/models.sbatch", box, k);
        cr_expect_eq(access(folder, F_OK) == 0, rc == 0, "--time %s: scripts %s", cases[k].time,
                     rc == 0 ? "missing" : "written though refused");
        if (rc == 2)
            cr_expect(strstr(out, "--time") && strstr(out, "--requeue-before"), "the refusal names neither option: %s",
                      out);
    }
}

/* --db naming a folder is refused on the login node (the merge job, after the whole cluster run, said
** "is a directory") with exit status 3, as every other command refuses such a store, and a refused command leaves no folder behind (--db's were made before the
** config was read). */
Test(slurm, a_folder_as_db_is_refused_and_a_refusal_makes_no_folder, .init = setup, .fini = teardown, .timeout = 60)
{
    char config[PATH_MAX], db[PATH_MAX], out[16384], data[PATH_MAX], bad[PATH_MAX], folder[PATH_MAX];
    snprintf(config, sizeof config, "%s/tests/shard.yaml", getenv("LENX_ROOT"));
    snprintf(data, sizeof data, "%s/data", getenv("LENX_ROOT"));
    snprintf(db, sizeof db, "%s/stores", box);
    cr_assert_eq(mkdir(db, 0755), 0);
    char *argv[] = {master, "slurm", config, "--shards", "2", "--db", db, NULL};
    cr_expect_eq(run(box, argv, data, NULL, out, sizeof out), 3, "%s", out);
    cr_expect(strstr(out, "is a directory, not a store") && strstr(out, "--db names the merged store's file"), "%s",
              out);
    snprintf(bad, sizeof bad, "%s/bad.yaml", box);
    FILE *f = fopen(bad, "w");
    cr_assert_not_null(f);
    fputs("name: bad\nmethods: [nosuch]\ntasks: [gaussian]\nlengths: [10]\n", f);
    fclose(f);
    snprintf(db, sizeof db, "%s/made/by/slurm/x.db", box);
    snprintf(folder, sizeof folder, "%s/made", box);
    char *argv2[] = {master, "slurm", bad, "--shards", "2", "--db", db, NULL};
    cr_expect_eq(run(box, argv2, data, NULL, out, sizeof out), 2, "%s", out);
    cr_expect(access(folder, F_OK) != 0, "a refused lenx slurm made %s", folder);
    /* a store in a folder still to make: made when the scripts are written */
    snprintf(db, sizeof db, "%s/new/folder/x.db", box);
    char *argv3[] = {master, "slurm", config, "--shards", "2", "--db", db, NULL};
    cr_expect_eq(run(box, argv3, data, NULL, out, sizeof out), 0, "%s", out);
    snprintf(folder, sizeof folder, "%s/new/folder/shard.slurm/merge.sbatch", box);
    cr_expect(access(folder, F_OK) == 0, "%s", out);
}

/* The USR1 trap when `scontrol requeue` fails: the task goes on (under set -e the failure ended the
** batch shell at once, lenx still running, and cancelled the jobs after it) and says why. */
Test(slurm, a_requeue_that_fails_leaves_the_task_running, .init = setup, .fini = teardown, .timeout = 60)
{
    char config[PATH_MAX], db[PATH_MAX], out[16384], data[PATH_MAX], cmd[PATH_MAX + 600];
    snprintf(config, sizeof config, "%s/tests/shard.yaml", getenv("LENX_ROOT"));
    snprintf(data, sizeof data, "%s/data", getenv("LENX_ROOT"));
    snprintf(db, sizeof db, "%s/x.db", box);
    char *argv[] = {master, "slurm", config, "--shards", "2", "--db", db, NULL};
    cr_assert_eq(run(box, argv, data, NULL, out, sizeof out), 0, "%s", out);
    snprintf(cmd, sizeof cmd, "cd '%s' && SLURM_ARRAY_JOB_ID=5 SLURM_ARRAY_TASK_ID=0 bash -c \"set -euo pipefail; "
             "scontrol() { return 1; }; $(grep '^trap ' shard.slurm/models.sbatch); kill -USR1 \\$\\$; sleep 0.2; "
             "echo alive\" 2>&1", box);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    cr_expect_eq(pclose(p), 0, "%s", out);
    cr_expect(strstr(out, "lenx: scontrol requeue failed; the task runs on to its time limit\nalive"), "%s", out);
}

/* `lenx slurm --shards N` takes N up to 100000, and its merge job passed every models and shard store to
** `lenx merge` as arguments: past Linux's exec limit (getconf ARG_MAX, 2 MiB with the usual 8 MiB stack;
** here some 5 MB of paths, and sbatch refuses a script past 4 MB) exec fails with E2BIG and the sweep's last
** job never merges. The merge job is run under bash against a stand-in lenx that writes the stores it was
** given (arguments, or the lines of --from's file) into a file: all 100004, in order, from a small script. */
Test(slurm, the_merge_job_of_100000_shards_passes_every_store_to_lenx_merge, .init = setup, .fini = teardown,
     .timeout = 120)
{
    char config[PATH_MAX], db[PATH_MAX], out[16384], data[PATH_MAX], path[PATH_MAX], real[PATH_MAX];
    snprintf(config, sizeof config, "%s/tests/shard.yaml", getenv("LENX_ROOT"));
    snprintf(data, sizeof data, "%s/data", getenv("LENX_ROOT"));
    snprintf(db, sizeof db, "%s/big/x.db", box);
    char *argv[] = {master, "slurm", config, "--shards", "100000", "--db", db, NULL};
    cr_assert_eq(run(box, argv, data, NULL, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "4 models to train first, in 4 tasks"), "%s", out);
    cr_assert_not_null(realpath(box, real));
    snprintf(path, sizeof path, "%s/big/shard.slurm/merge.sbatch", box);
    char *text = file_get(path);
    cr_expect_lt(strlen(text), 65536, "merge.sbatch is %zu bytes", strlen(text));
    free(text);
    char stores[96], script[1024], keep[160];     /* box is 64 bytes */
    snprintf(stores, sizeof stores, "%s/stores", box);
    snprintf(script, sizeof script, "#!/bin/sh\n[ \"$1\" = merge ] || exit 0\nshift\n: > '%s'\n"
             "while [ $# -gt 0 ]; do\n  case $1 in\n    --into) shift ;;\n"
             "    --from) shift; if [ \"$1\" = - ]; then cat; else cat \"$1\"; fi >> '%s' ;;\n"
             "    *) printf '%%s\\n' \"$1\" >> '%s' ;;\n  esac\n  shift\ndone\n", stores, stores, stores);
    snprintf(keep, sizeof keep, "%s.real", master);
    cr_assert_eq(rename(master, keep), 0);
    file_put(master, script, 0755);     /* the scripts run the binary that wrote them: the stand-in now */
    char *job[] = {"/bin/bash", path, NULL};
    int rc = run(box, job, NULL, NULL, out, sizeof out);
    cr_assert_eq(rename(keep, master), 0);
    cr_expect_eq(rc, 0, "the merge job failed: %s", out);
    struct lx_buf want = {0};
    for (int k = 0; k < 4; k++)
        lx_buf_printf(&want, "%s/big/shard.models-%d.db\n", real, k);
    for (int k = 0; k < 100000; k++)
        lx_buf_printf(&want, "%s/big/shard.shard-%d.db\n", real, k);
    char *got = access(stores, F_OK) == 0 ? file_get(stores) : lx_xstrdup("");
    cr_expect(strcmp(got, lx_buf_str(&want)) == 0, "the stand-in lenx merge got %zu bytes of stores, not the %zu "
              "of models-0..3 and shard-0..99999 (start: %.200s)", strlen(got), strlen(lx_buf_str(&want)), got);
    free(got);
    lx_buf_free(&want);
}
