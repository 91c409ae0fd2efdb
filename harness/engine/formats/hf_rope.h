/*
** harness/engine/formats/hf_rope.h - a Hugging Face config's rope_theta, rope_scaling and
** sliding window as lenx's stacks, and a stack's rescaling as rope_scaling: the half of the
** Hugging Face format (hf_model.c) that is lenx's own subject. Includes core and format.h.
*/
#ifndef LX_HF_ROPE_H
#define LX_HF_ROPE_H

#include "harness/core/json.h"
#include "harness/engine/formats/format.h"

/* What of config.json the stacks need, read and checked by hf_model.c. */
struct hf_rope_facts {
    double theta;           /* rope_theta */
    long max_pos;           /* max_position_embeddings */
    long head_dim;          /* channels of a head */
    long rot_dims;          /* channels rope turns (head_dim x partial_rotary_factor): rot_dims / 2 pairs */
    long window;            /* the sliding window in use (Mistral, Phi-3), 0 = none */
    const struct lx_jv *root;   /* the object holding the text model's fields (Gemma 3's text_config), NULL = the
                                ** document's */
    int interleaved;        /* 1: rope turns pairs of neighbours (GPT-J's rotate_every_two), not halves */
};

/* The native stack's JSON into stack (rope half at rope_theta, then
** rope_scaling's method trained in: linear -> pi, yarn, llama3, longrope and
** su -> longrope), the evaluation stack into *eval (dynamic -> ntk mode
** dynamic, then the window; NULL when empty) and rope_scaling as the config
** says it into *raw. LX_EINVAL naming config.json's field. */
int lx_hf_stacks(const struct lx_json *doc, const struct hf_rope_facts *c, struct lx_buf *stack, char **eval,
                 char **raw, struct lx_error *err);

/* r's rescaling as the rope_scaling object lx_hf_stacks reads back (null for none); pairs: d_head / 2. */
void lx_hf_export_scaling(struct lx_buf *b, const struct lx_stack_rope *r, int pairs);

#endif
