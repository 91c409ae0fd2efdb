/*
** harness/commands/score.h - `lenx score`: per-token NLL of a text under a checkpoint,
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

int lx_score(const struct lx_score_opts *o, struct lx_buf *json, struct lx_error *err);

#endif
