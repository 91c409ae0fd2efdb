/*
** harness/score.h - `lenx score`: per-token NLL of a text under a checkpoint,
** with an optional evaluation-time method stack, as JSON. Lets anyone check a
** checkpoint from outside lenx (e.g. against tests/ref/lenx_torch.py).
**
** The text is encoded in the model's tokenizer (bytes for lenx models; the
** file --tokenizer names, else the one found beside the model: a llama2.c
** tokenizer.bin, a Hugging Face directory's tokenizer.json) and cut into
** consecutive windows of `length` tokens (the last one may be shorter); each
** window is scored like a `ppl` window: input [BOS, s0 .. s_{L−2}], every
** token s0 .. s_{L−1} scored (BOS is EOS for a tokenizer without one).
*/
#ifndef LX_SCORE_H
#define LX_SCORE_H

#include "harness/core/lx.h"

struct lx_score_opts {
    const char *model;      /* model path (lenx, llama2.c .bin, HF directory), model name or key prefix */
    const char *db;         /* store to look names and keys up in */
    const char *text;       /* file to score */
    const char *method;     /* YAML: an evaluation-time stack to add ("logn", "[logn, infoscale]") or NULL */
    long length;            /* window length; 0 = the model's training length */
    const char *tokenizer;  /* tokenizer file or directory; NULL = the one beside the model, else bytes */
};

/* A model path as given (any format lx_model_load reads), else a name or key
** prefix in the store's models table: the checkpoint <db dir>/models/<key>.safetensors
** (where `lenx run --db` keeps it, whatever directory it ran in), else the path
** recorded. *path is malloc'd. */
int lx_find_model(const char *model, const char *db, char **path, struct lx_error *err);

/* What every command that reads text with a model does after finding it
** (lx_find_model): the model loaded into m and info, its own stacks checked
** (lx_stack_check_native), and, when tk is not NULL, its tokenizer opened into *tk
** (given: --tokenizer, else the one found beside the model; NULL = bytes) and
** checked against the vocabulary (lx_ckpt_check_tokenizer). On an error
** nothing is left to release. */
struct lx_ckpt_info;
struct lx_model;
struct lx_tokenizer;
int lx_score_load(const char *path, const char *given, struct lx_model *m, struct lx_ckpt_info *info,
                  struct lx_tokenizer **tk, struct lx_error *err);

/* The checkpoint's stack ckpt_stack (YAML flow list) followed by the
** evaluation-time methods of method (YAML, may be NULL), parsed into st
** (d1, d2 hold the parsed YAML, released by the caller); a training-time
** method in `method` is refused, naming it. Shared with `lenx generate`. */
struct lx_stack;
struct lx_doc;
int lx_score_stack(struct lx_stack *st, const char *ckpt_stack, const char *method, struct lx_doc *d1,
                   struct lx_doc *d2, struct lx_error *err);

int lx_score(const struct lx_score_opts *o, struct lx_buf *json, struct lx_error *err);

#endif
