/*
** harness/sweep/resume.c - a training run's resumable state on disk, for
** lx_train's save and resume (resume.h; docs/config.md#training-that-resumes).
*/
#include "harness/sweep/resume.h"

#include <glob.h>
#include <stdio.h>
#include <sys/stat.h>

#include "harness/engine/formats/checkpoint.h"

/* lx_train's save: a state that cannot be written is a warning, not the end of the run. */
int lx_resume_save(void *ctx, const struct lx_train_snap *s, struct lx_error *err)
{
    const struct lx_resume_ctx *c = ctx;
    struct lx_error why;
    (void)err;
    if (lx_train_snap_save(c->path, s, c->key, c->numerics, &why) < 0)
        fprintf(stderr, "lenx: warning: cannot save the training state of [%s] at step %ld: %s\n", c->key, s->step,
                why.msg);
    return LX_OK;
}

/* Temporary files a killed writer of path left (path.tmp.<host>.<pid>,
** lx_write_atomic's): the caller holds the claim on the model, so no live
** process is writing them. */
void lx_resume_clear_debris(const char *path)
{
    struct lx_buf pat = {0};
    glob_t g;
    lx_buf_printf(&pat, "%s.tmp.*", path);
    if (glob(lx_buf_str(&pat), GLOB_NOSORT, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            remove(g.gl_pathv[i]);
        globfree(&g);
    }
    lx_buf_free(&pat);
}

/* The saved state of a run that was stopped, into *from (1 returned), or 0:
** none, or one that cannot be used (said on stderr; the run starts over). */
int lx_resume_from(const char *path, const char *key, const struct lx_model *m, const struct lx_train_cfg *cfg,
                   const char *numerics, struct lx_train_snap *from)
{
    struct stat sb;
    struct lx_error why;
    if (stat(path, &sb) != 0)
        return 0;
    int rc = lx_train_snap_load(path, key, m->n_params, numerics, from, &why);
    if (rc == LX_OK && (from->step < 0 || from->step > cfg->steps || from->run_n < 0))
        rc = lx_err(&why, LX_EIO, "%s: step %ld of a run of %ld steps", path, from->step, cfg->steps);
    if (rc == LX_OK)
        return 1;
    lx_train_snap_free(from);
    fprintf(stderr, "lenx: warning: the training state %s cannot be used, training from step 0: %s\n", path, why.msg);
    return 0;
}

