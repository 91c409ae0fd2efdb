/*
** tests/test_train_state.c - a training run's resumable state
** (lx_train_snap_save/load, harness/engine/formats/checkpoint.c): read back
** bit for bit, and refused when its data were damaged after it was written
** (a changed byte loaded silently: a resumed run then diverged, or trained
** another model without a word).
*/
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/formats/formats.h"
#include "harness/engine/formats/safetensors.h"
#include "harness/engine/model/train.h"

#define N 300

static float w[N], m[N], v[N];

static struct lx_train_snap snap(void)
{
    for (int i = 0; i < N; i++)
        w[i] = 0.01f * (float)i - 1.0f, m[i] = 1e-3f * (float)(i % 7), v[i] = 1e-6f * (float)(i % 11 + 1);
    return (struct lx_train_snap){.step = 42, .n = N, .w = w, .m = m, .v = v, .run_loss = 3.25, .run_n = 5,
                                  .train_loss = 2.5, .val_loss = 2.75, .seconds = 1.5};
}

static void path_of(char *out, size_t n, const char *name)
{
    snprintf(out, n, "/tmp/lenx-state-%d-%s.safetensors", (int)getpid(), name);
}

Test(train_state, read_back_bit_for_bit_and_refused_when_damaged)
{
    char path[256];
    path_of(path, sizeof path, "s");
    struct lx_train_snap s = snap(), r;
    struct lx_error err = {{0}};
    cr_assert_eq(lx_train_snap_save(path, &s, "abcd", "fast", &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_train_snap_load(path, "abcd", N, "fast", &r, &err), LX_OK, "%s", err.msg);
    cr_expect(r.step == 42 && r.run_n == 5 && r.run_loss == 3.25 && r.seconds == 1.5);
    cr_expect(!memcmp(r.w, w, sizeof w) && !memcmp(r.m, m, sizeof m) && !memcmp(r.v, v, sizeof v));
    lx_train_snap_free(&r);
    /* one byte of adam_m changed: the header and metadata are intact */
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, -(long)(sizeof(float) * (N + N / 2)), SEEK_END), 0);
    int c = fgetc(f);
    cr_assert_eq(fseek(f, -1, SEEK_CUR), 0);
    fputc(c ^ 0x40, f);
    fclose(f);
    cr_expect_eq(lx_train_snap_load(path, "abcd", N, "fast", &r, &err), LX_EIO);
    cr_expect(strstr(err.msg, path) && strstr(err.msg, "the state's data do not match its embedded hash") &&
                  strstr(err.msg, "the state is damaged"), "%s", err.msg);
    cr_expect_null(r.w, "a refused state holds nothing");
    remove(path);
}

/* A state an older lenx saved (no lenx_state_sha256) still resumes. */
Test(train_state, a_state_without_its_hash_loads)
{
    char path[256];
    path_of(path, sizeof path, "old");
    struct lx_train_snap s = snap(), r;
    struct lx_st_tensor t[3] = {{"weights", 1, {N}, w}, {"adam_m", 1, {N}, m}, {"adam_v", 1, {N}, v}};
    const char *meta[] = {"lenx_state_of", "abcd", "lenx_numerics", "fast", "step", "42", "run_n", "5",
                          "run_loss", "3.25", "train_loss", "2.5", "val_loss", "2.75", "seconds", "1.5"};
    struct lx_error err = {{0}};
    (void)s;
    cr_assert_eq(lx_st_write(path, t, 3, meta, 8, NULL, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(lx_train_snap_load(path, "abcd", N, "fast", &r, &err), LX_OK, "%s", err.msg);
    cr_expect(r.step == 42 && !memcmp(r.v, v, sizeof v));
    lx_train_snap_free(&r);
    remove(path);
}

/* A state whose header was edited or damaged (its step 42 made 52, its run_n 5 made 7, the same lengths, the
** data intact) resumed silently: the run skipped or repeated steps and stored another model under the key.
** The metadata are hashed too (lenx_state_meta_sha256), and a changed value is refused, naming it. */
Test(train_state, a_state_whose_metadata_changed_is_refused)
{
    static const char *const edits[][2] = {{"\"step\":\"42\"", "\"step\":\"52\""},
                                           {"\"run_n\":\"5\"", "\"run_n\":\"7\""}};
    for (int e = 0; e < 2; e++) {
        char path[256];
        path_of(path, sizeof path, "meta");
        struct lx_train_snap s = snap(), r;
        struct lx_error err = {{0}};
        cr_assert_eq(lx_train_snap_save(path, &s, "abcd", "fast", &err), LX_OK, "%s", err.msg);
        FILE *f = fopen(path, "r+b");
        cr_assert_not_null(f);
        static char head[4096];
        size_t got = fread(head, 1, sizeof head - 1, f);
        head[got] = '\0';
        char *at = strstr(head + 8, edits[e][0]);   /* the JSON header follows its 8-byte length */
        cr_assert_not_null(at, "%s not in the header", edits[e][0]);
        cr_assert_eq(fseek(f, (long)(at - head), SEEK_SET), 0);
        fputs(edits[e][1], f);
        fclose(f);
        cr_expect_eq(lx_train_snap_load(path, "abcd", N, "fast", &r, &err), LX_EIO, "%s", edits[e][1]);
        cr_expect(strstr(err.msg, path) && strstr(err.msg, "the state's metadata do not match their embedded hash") &&
                      strstr(err.msg, "hint:"), "%s", err.msg);
        cr_expect_null(r.w, "a refused state holds nothing");
        remove(path);
    }
}

/* A state given where a model goes (lenx show model, score, a sweep's checkpoint:) is named for what it is: the
** error said it lacked 'lenx_arch' and hinted to add it "to a checkpoint made elsewhere". */
Test(train_state, a_state_loaded_as_a_model_is_named)
{
    char path[256];
    path_of(path, sizeof path, "m");
    struct lx_train_snap s = snap();
    struct lx_error err = {{0}};
    cr_assert_eq(lx_train_snap_save(path, &s, "abcd", "fast", &err), LX_OK, "%s", err.msg);
    struct lx_model model;
    struct lx_ckpt_info info = {0};
    cr_expect_eq(lx_model_load(&model, path, &info, &err), LX_EINVAL);
    cr_expect(strstr(err.msg, "the resumable state of a training of model abcd (step 42), not a model") &&
                  strstr(err.msg, "hint: the model's checkpoint is abcd.safetensors"), "%s", err.msg);
    lx_ckpt_info_release(&info);
    remove(path);
}
