/*
** tests/test_fuzz_regress.c - every input the fuzz targets ever crashed on,
** replayed through the same entry points (tests/fuzz/entry.h): each must end
** in LX_OK or a negative code with a message, never a signal, an assertion or
** a hang. The inputs live in tests/fuzz/regress/<target>/ (one file each,
** committed with the fix); the seed corpora tests/fuzz/corpus/<target>/ are
** replayed too, and some of their inputs must get through the whole path
** (planned, or loaded as a model), so the entry points are known to reach it.
**
** Each input runs in a child process of its own (from the checkout,
** $LENX_ROOT, so relative checkpoint paths resolve as for the fuzzer), under
** a 30 s alarm, so that a crash names the file that caused it.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fuzz/entry.h"

typedef int (*feed_fn)(const uint8_t *data, size_t n, struct lx_error *err);

enum { FEED_OK = 0, FEED_ERROR = 1, FEED_BAD = 2, FEED_SECONDS = 30 };

/* In a child: the file through feed; exits FEED_OK, FEED_ERROR (negative code
** with a message) or FEED_BAD (anything else). */
static void feed_child(const char *root, const char *path, feed_fn feed)
{
    alarm(FEED_SECONDS);
    struct lx_error err = {{0}};
    unsigned char *bytes = NULL;
    long n = 0;
    if (chdir(root) != 0 || lx_read_file(path, &bytes, &n, 0, &err) < 0)
        _exit(FEED_BAD);
    int rc = feed(bytes, (size_t)n, &err);
    free(bytes);
    if (rc < 0 && !err.msg[0])
        fprintf(stderr, "%s: error %d without a message\n", path, rc);
    exit(rc == LX_OK ? FEED_OK : rc < 0 && err.msg[0] ? FEED_ERROR : FEED_BAD);
}

/* Every file of root/dir through feed; returns how many came through LX_OK. */
static int replay_dir(const char *root, const char *dir, feed_fn feed, int *n_files)
{
    char folder[4096], path[4096 + 256];
    snprintf(folder, sizeof folder, "%s/%s", root, dir);
    DIR *d = opendir(folder);
    cr_assert_not_null(d, "cannot open %s", folder);
    int ok = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
        fflush(NULL);
        pid_t pid = fork();
        cr_assert_geq(pid, 0, "fork failed");
        if (pid == 0)
            feed_child(root, path, feed);
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_expect(!WIFSIGNALED(st), "%s: killed by signal %d (%s)%s", path, WTERMSIG(st), strsignal(WTERMSIG(st)),
                  WTERMSIG(st) == SIGALRM ? ": it ran past the alarm" : "");
        cr_expect(!WIFEXITED(st) || WEXITSTATUS(st) == FEED_OK || WEXITSTATUS(st) == FEED_ERROR,
                  "%s: exit %d, not a clean LX_OK or error return", path, WEXITSTATUS(st));
        ok += WIFEXITED(st) && WEXITSTATUS(st) == FEED_OK;
        (*n_files)++;
    }
    closedir(d);
    return ok;
}

static const char *root_dir(void)
{
    const char *root = getenv("LENX_ROOT");
    cr_assert_not_null(root, "LENX_ROOT must name the checkout (make test sets it)");
    return root;
}

/* Every input of tests/fuzz/regress/<name>/, then the seeds of
** tests/fuzz/corpus/<name>/; returns how many seeds came through LX_OK and
** sets *n_seeds to how many there are. The children's TMPDIR is a fresh
** directory, which must be empty when they have exited: a target's scratch
** files are removed at its exit, as the fuzzer's runs need. */
static int replay_target(const char *name, feed_fn feed, int *n_seeds)
{
    char dir[256], tmp[] = "/tmp/lenx-fuzzreg-XXXXXX";
    int n_regress = 0;
    cr_assert_not_null(mkdtemp(tmp), "cannot make a scratch directory in /tmp");
    setenv("TMPDIR", tmp, 1);
    snprintf(dir, sizeof dir, "tests/fuzz/regress/%s", name);
    replay_dir(root_dir(), dir, feed, &n_regress);
    snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", name);
    *n_seeds = 0;
    int ok = replay_dir(root_dir(), dir, feed, n_seeds);
    cr_expect_gt(*n_seeds, 0, "no seeds in %s", dir);
    DIR *d = opendir(tmp);
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        cr_expect(e->d_name[0] == '.', "%s: the target left %s/%s behind", name, tmp, e->d_name);
    closedir(d);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    cr_expect_eq(system(cmd), 0);
    return ok;
}

/* replay_target, and every seed must come through LX_OK. */
static void expect_every_seed(const char *name, feed_fn feed)
{
    int n_seeds;
    int ok = replay_target(name, feed, &n_seeds);
    cr_expect_eq(ok, n_seeds, "%s: %d of %d seeds came through (planned, opened, encoded)", name, ok, n_seeds);
}

Test(fuzz_regress, config, .timeout = 300) { expect_every_seed("config", lx_fuzz_feed_config); }

Test(fuzz_regress, safetensors, .timeout = 300)
{
    int n_seeds;
    int loaded = replay_target("safetensors", lx_fuzz_feed_safetensors, &n_seeds);
    /* the three tiny lenx checkpoints load; ref.safetensors has no lenx metadata */
    cr_expect_eq(loaded, n_seeds - 1, "%d of %d seeds loaded as models", loaded, n_seeds);
}

/* The tokenizer seeds all open and keep every promise of entry.c. */
Test(fuzz_regress, tokenizer_bin, .timeout = 300) { expect_every_seed("tokenizer_bin", lx_fuzz_feed_tokenizer_bin); }
Test(fuzz_regress, report, .timeout = 300) { expect_every_seed("report", lx_fuzz_feed_report); }
Test(fuzz_regress, serve, .timeout = 300) { expect_every_seed("serve", lx_fuzz_feed_serve); }
/* The GGUF seeds: tiny.gguf and tiny-quant.gguf (tests/ref/gguf/tiny_gguf.py; the second one block of
** every quantized type, whose lanes must give the scalar loops' bits) parse; the head of a real file
** does not. */
Test(fuzz_regress, gguf, .timeout = 300)
{
    int n_seeds;
    int parsed = replay_target("gguf", lx_fuzz_feed_gguf, &n_seeds);
    cr_expect_eq(parsed, n_seeds - 1, "%d of %d seeds parsed", parsed, n_seeds);
}
Test(fuzz_regress, tokenizer_json, .timeout = 300) { expect_every_seed("tokenizer_json", lx_fuzz_feed_tokenizer_json); }
Test(fuzz_regress, encode, .timeout = 300) { expect_every_seed("encode", lx_fuzz_feed_encode); }
Test(fuzz_regress, ruler, .timeout = 300) { expect_every_seed("ruler", lx_fuzz_feed_ruler); }

/* The hf_config seeds are the tiny Phi-3 directory's config with each rope_scaling lenx maps and
** sliding windows: every one loads and its stacks compile. */
Test(fuzz_regress, hf_config, .timeout = 300) { expect_every_seed("hf_config", lx_fuzz_feed_hf_config); }

/* The slurm seeds are jobs whose scripts are written and keep entry.c's promises. */
Test(fuzz_regress, slurm, .timeout = 300) { expect_every_seed("slurm", lx_fuzz_feed_slurm); }
