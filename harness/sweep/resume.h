/*
** harness/sweep/resume.h - what `lenx run` does so that a killed training run
** goes on where it stopped (docs/config.md#training-that-resumes): the state
** file of a model key, its save (lx_train's callback) and its load.
*/
#ifndef LX_RESUME_H
#define LX_RESUME_H

#include "harness/engine/model/train.h"

/* What lx_resume_save writes: the state file, the model key and the numerics. */
struct lx_resume_ctx {
    const char *path, *key, *numerics;
};

/* lx_train's save (ctx a struct lx_resume_ctx): a state that cannot be
** written is a warning on stderr, not the end of the run. */
int lx_resume_save(void *ctx, const struct lx_train_snap *s, struct lx_error *err);

/* Remove the temporary files a killed writer of path left (path.tmp.*): the
** caller holds the claim on the model, so no live process writes them. */
void lx_resume_clear_debris(const char *path);

/* The state at path of model key (m's size, trained in numerics, cfg's
** steps) into *from: 1, or 0 when there is none or it cannot be used (said
** on stderr; the run starts from step 0). */
int lx_resume_from(const char *path, const char *key, const struct lx_model *m, const struct lx_train_cfg *cfg,
                   const char *numerics, struct lx_train_snap *from);

#endif
