/*
** methods/method.h - the contract every attention/position method implements.
**
** To add a method: write methods/<name>.c defining exactly one exported symbol,
** `const struct lx_method lx_method_<name>`, then add LX_METHOD(<name>) to
** methods/methods.def. Nothing else changes: the Makefile finds the file, the
** registry and its contract test pick it up, the schema drives YAML and `show`.
**
** A method edits the attention spec (harness/core/spec.h); it never runs attention
** and never allocates (docs/development.md#style).
*/
#ifndef LX_METHOD_H
#define LX_METHOD_H

#include "harness/core/params.h"
#include "harness/core/spec.h"

/* When a method acts. A method may be both (logn: inference by default,
** trained in with `train: true`). */
enum {
    LX_KIND_INFERENCE = 1 << 0,   /* applied to an already-trained model */
    LX_KIND_TRAINING = 1 << 1,    /* changes what the model must be trained with */
};

struct lx_method {
    const char *name;           /* YAML name == file name == symbol suffix */
    const char *summary;        /* one line, citing the paper */
    struct lx_schema schema;    /* its parameters */
    unsigned kind;              /* LX_KIND_* */
    unsigned needs;             /* LX_CAP_* the task/model must offer */

    /* (optional) replace automatic values (rows flagged LX_PF_AUTO, stored as 0)
    ** by the concrete ones for these facts, in the spec's copy of the params;
    ** refuse when the facts give none (trained in, where no evaluation length
    ** exists). Runs once per compile, before check and apply, which then see
    ** only concrete values; the stored and shown stack carries them
    ** (docs/methods.md#parameters). */
    int (*resolve)(void *params, const struct lx_facts *f, struct lx_error *err);
    /* (optional) cross-field and fact checks, after the params are resolved */
    int (*check)(const void *params, const struct lx_facts *f, struct lx_error *err);
    /* (required) edit the spec; params outlive the spec */
    int (*apply)(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                 struct lx_error *err);
    /* (optional) once every method of the stack has applied, in stack order: settings and refusals
    ** that depend on what methods after it set (xpos centres its decay on the training positions pose
    ** and randpos feed, wherever they stand) */
    int (*finish)(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                  struct lx_error *err);
};

#endif
