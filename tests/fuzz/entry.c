/*
** tests/fuzz/entry.c - the fuzz targets' entry points (see entry.h).
*/
#define _POSIX_C_SOURCE 200809L
#include "tests/fuzz/entry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/checkpoint.h"
#include "harness/engine/safetensors.h"
#include "harness/plan.h"

int lx_fuzz_feed_config(const uint8_t *data, size_t n, struct lx_error *err)
{
    char *text = lx_xmalloc(n + 1);     /* YAML text is a C string: a NUL byte ends it */
    memcpy(text, data, n);
    text[n] = '\0';
    struct lx_grid g;
    struct lx_plan plan = {0};
    int rc = lx_grid_load_text(&g, text, "fuzz.yaml", err);
    if (rc == LX_OK) {
        rc = lx_plan_build(&plan, &g, err);
        lx_plan_release(&plan);
    }
    lx_grid_release(&g);    /* a failed load keeps what it parsed, as in main() */
    free(text);
    return rc;
}

/* ---- safetensors -------------------------------------------------------------- */

static char scratch[4096];  /* this process's scratch file, removed at exit */

static void scratch_remove(void)
{
    if (scratch[0])
        unlink(scratch);
}

/* data[0, n) as the contents of the scratch file (made on first use). */
static int scratch_write(const uint8_t *data, size_t n, struct lx_error *err)
{
    if (!scratch[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(scratch, sizeof scratch, "%s/lenx-fuzz-XXXXXX", dir && *dir ? dir : "/tmp");
        int fd = mkstemp(scratch);
        if (fd < 0) {
            scratch[0] = '\0';
            return lx_err(err, LX_EIO, "cannot make a scratch file in %s\n  hint: set TMPDIR", dir ? dir : "/tmp");
        }
        close(fd);
        atexit(scratch_remove);
    }
    FILE *fp = fopen(scratch, "wb");
    if (!fp)
        return lx_err(err, LX_EIO, "cannot write the scratch file %s", scratch);
    size_t put = n ? fwrite(data, 1, n, fp) : 0;
    int closed = fclose(fp);
    if (put != n || closed != 0)
        return lx_err(err, LX_EIO, "cannot write %zu bytes to the scratch file %s", n, scratch);
    return LX_OK;
}

/* Every tensor of an open file read back at its own shape, one name that is
** not there (the "did you mean" message), and the lenx metadata keys. */
static int read_everything(const struct lx_st_file *f, struct lx_error *err)
{
    int rc = LX_OK;
    for (int k = 0; k < f->n_entries && rc == LX_OK; k++) {
        const struct lx_st_entry *e = &f->entries[k];
        size_t n_val = (e->end - e->begin) / (size_t)lx_st_dtype_size(e->dtype);
        float *out = lx_xmalloc(4 * n_val + 1);    /* within twice the file's size */
        rc = lx_st_read(f, e->name, e->ndim, e->shape, out, err);
        free(out);
    }
    if (rc == LX_OK) {     /* (a file may hold that name, at that shape: then it reads) */
        struct lx_error miss = {{0}};
        long shape[1] = {1};
        float x;
        LX_ASSERT(lx_st_read(f, "lenx.fuzz.absent", 1, shape, &x, &miss) == LX_OK || miss.msg[0]);
    }
    static const char *const keys[] = {"lenx_arch", "lenx_stack", "lenx_train_len", "lenx_model_key"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        (void)lx_st_meta(f, keys[k]);
    return rc;
}

/* The loaded checkpoint as a sweep's model, its own training stack as the
** method, a task of its mode: models.c reads its header again and the plan
** checks the stack against it. */
static int plan_checkpoint(const char *stack, int mode, struct lx_error *err)
{
    struct lx_buf yaml = {0};
    lx_buf_printf(&yaml, "name: fuzz\nmodels: {c: {checkpoint: '%s'}}\nmethods: [%s]\ntasks: [%s]\n"
                  "lengths: [16]\n", scratch, stack, mode == LX_MODEL_MLM ? "mlm" : "ppl");
    int rc = lx_fuzz_feed_config((const uint8_t *)lx_buf_str(&yaml), yaml.len, err);
    lx_buf_free(&yaml);
    return rc;
}

int lx_fuzz_feed_safetensors(const uint8_t *data, size_t n, struct lx_error *err)
{
    int rc = scratch_write(data, n, err);
    if (rc < 0)
        return rc;
    struct lx_st_file f;
    rc = lx_st_open(&f, scratch, err);
    if (rc == LX_OK)
        rc = read_everything(&f, err);
    lx_st_close(&f);
    if (rc < 0)
        return rc;
    struct lx_model m;
    struct lx_ckpt_info info;
    rc = lx_model_load(&m, scratch, &info, err);
    if (rc < 0)
        return rc;
    int mode = m.arch.mode;
    lx_model_release(&m);
    rc = plan_checkpoint(info.stack, mode, err);
    lx_ckpt_info_release(&info);
    return rc;
}
