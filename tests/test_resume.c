/*
** tests/test_resume.c - training that resumes (docs/config.md#resuming): a
** `lenx run` killed with SIGKILL at twenty moments along one training run,
** each time started again, ends with the weights of the run never killed, bit
** for bit (portable numerics); after every kill the store passes SQLite's
** integrity check and no checkpoint or state is half-written.
*/
#define _GNU_SOURCE     /* mkdtemp */
#include "tests/shell.h"

static const char config[] =
    "name: kill\nseed: 3\nnumerics: portable\nmodels:\n  m:\n"
    "    arch: {mode: causal, layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64, mlp: swiglu}\n"
    "    train: {length: 32, batch: 4, steps: 400, warmup: 10, eval_every: 50, eval_windows: 2}\n"
    "methods: [rope]\ntasks:\n  - ppl: {windows: 1}\nlengths: [32]\n";

/* Every file under models/ opens: a checkpoint or state as safetensors (lenx show model reads a
** checkpoint; a state is checked by the next run, which must not warn that it cannot use it). */
static void nothing_half_written(const char *db)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "sqlite3 %s 'PRAGMA integrity_check'", db), 0, "%s", out);
    cr_assert(strstr(out, "ok"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "for f in k/models/*.safetensors; do [ -e \"$f\" ] || continue; "
                    "case $f in *.state.safetensors) ;; *) $L show model $f >/dev/null || echo BAD $f;; esac; done"),
                 0, "%s", out);
    cr_assert(!strstr(out, "BAD"), "%s", out);
}

Test(resume, killed_training_ends_with_the_same_weights, .fini = teardown, .timeout = 300)
{
    shell_setup("resume");
    char out[8192], want[80], got[80];
    write_file("k.yaml", config);
    cr_assert_eq(sh(out, sizeof out, "mkdir -p ref k && $L run k.yaml --db ref/k.db --quiet --no-table"), 0, "%s",
                 out);
    sql_text(want, sizeof want, "ref/k.db", "SELECT weights_sha256 FROM models");
    /* twenty kills: every fifth while the run starts up, the others a few milliseconds (a fixed
    ** sequence over 0-40) after the run has written a state of its own - mid-step or mid-save - each
    ** followed by a restart that goes on from the saved state */
    int resumed = 0;
    for (int k = 0; k < 20; k++) {
        int ms = (k * 7) % 41;
        const char *wait = k % 5 == 0 ? "sleep 0.02"
                                      : "until [ -n \"$(find k/models -name '*.state.safetensors' -newer k/mark "
                                        "2>/dev/null)\" ] || ! kill -0 $p 2>/dev/null; do sleep 0.005; done";
        cr_assert_eq(sh(out, sizeof out, "touch k/mark; $L run k.yaml --db k/k.db --save-every 0 > k/log 2>&1 & "
                        "p=$!; %s; sleep 0.%03d; kill -9 $p 2>/dev/null; wait $p; cat k/log", wait, ms), 0, "%s",
                     out);
        resumed += strstr(out, "resuming model") != NULL;
        cr_assert(!strstr(out, "cannot be used") && !strstr(out, "1 ok"), "trial %d finished: %s", k, out);
        nothing_half_written("k/k.db");
    }
    cr_assert_eq(sh(out, sizeof out, "$L run k.yaml --db k/k.db --save-every 0 --no-table 2>&1"), 0, "%s", out);
    cr_assert(!strstr(out, "cannot be used"), "%s", out);
    sql_text(got, sizeof got, "k/k.db", "SELECT weights_sha256 FROM models");
    cr_expect_str_eq(got, want, "the resumed run's weights differ from the uninterrupted run's");
    cr_expect_geq(resumed, 14, "only %d of the 20 restarts resumed a saved state", resumed);
    cr_assert_eq(sh(out, sizeof out, "ls k/models"), 0);
    cr_expect(!strstr(out, ".tmp.") && !strstr(out, ".state."), "debris left: %s", out);
    (void)exists;
}

/* A models folder that cannot be written (here a file stands in its place) fails the cell before the model
** trains: it trained every step, then failed to save, and trained it again for the next cell. */
Test(resume, an_unwritable_models_folder_fails_before_training, .fini = teardown, .timeout = 60)
{
    shell_setup("resume");
    char out[8192], err[1024];
    write_file("u.yaml", "name: u\nmodels:\n  m: {arch: {layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64},"
               " train: {length: 32, batch: 4, steps: 30, warmup: 2}}\n"
               "methods: [rope, [rope, {pi: {finetune: 5}}]]\ntasks: [{ppl: {windows: 1}}]\nlengths: [32]\n");
    cr_assert_eq(sh(out, sizeof out, "mkdir u && touch u/models && $L run u.yaml --db u/u.db --no-table 2>&1"), 1,
                 "%s", out);
    cr_expect(strstr(out, "training model") == NULL && strstr(out, "0 models trained (0 steps)") != NULL, "%s", out);
    cr_expect_eq(sql_long("u/u.db", "SELECT count(*) FROM runs WHERE status = 'failed'"), 2);
    sql_text(err, sizeof err, "u/u.db", "SELECT error FROM runs LIMIT 1");
    cr_expect(strstr(err, "u/models: not a directory") != NULL, "%s", err);
}

/* A run killed after a model's checkpoint was saved and before its training state was removed left the
** state (three times the weights) for good: the next run took the checkpoint and never looked at it. The
** run that takes a checkpoint now removes its key's state. */
Test(resume, a_state_left_beside_its_checkpoint_is_removed, .fini = teardown, .timeout = 60)
{
    shell_setup("resume");
    char out[8192];
    write_file("s.yaml", "name: s\nmodels:\n  m: {arch: {layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64},"
               " train: {length: 32, batch: 4, steps: 10, warmup: 2}}\n"
               "methods: [rope]\ntasks: [{ppl: {windows: 1}}]\nlengths: [32]\n");
    cr_assert_eq(sh(out, sizeof out, "mkdir s && $L run s.yaml --db s/s.db --quiet --no-table && "
                    "$L rm --sweep s --db s/s.db --yes >/dev/null && cd s/models && for f in *.safetensors; do "
                    "cp $f ${f%%.safetensors}.state.safetensors; done && ls"), 0, "%s", out);
    cr_assert(strstr(out, ".state.safetensors"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db s/s.db --no-table 2>&1 && ls s/models"), 0, "%s", out);
    cr_expect(strstr(out, "0 models trained") && !strstr(out, ".state."), "%s", out);
}
