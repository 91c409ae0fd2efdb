/*
** harness/sweep/models.h - the `models:` axis of a sweep: models lenx trains, and
** checkpoints users bring.
**
**   models:
**     small:                          # a name, referenced in tables and by `lenx score`
**       arch: {layers: 2, d_model: 128, heads: 4, d_head: 32, d_mlp: 512, mlp: gelu}
**       train: {length: 128, batch: 16, steps: 1000, lr: 3e-3}
**     theirs:
**       checkpoint: path/to/model.safetensors    # relative to the sweep file
**       tokenizer: path/to/tokenizer.bin         # optional: llama2.c's; default bytes
**     stories:
**       checkpoint: stories260K.bin              # a llama2.c model: tokenizer.bin or tok<V>.bin beside it is used
**     qwen:
**       hf: path/to/Qwen2-0.5B                   # a Hugging Face directory
**     subword:
**       arch: {layers: 2}                        # vocab: the tokenizer's
**       train: {length: 128}
**       tokenizer: tok512.bin                    # trained in its tokens
**     vllm:
**       server: {url: http://127.0.0.1:8000/v1, model: NAME, tokenizer: tok.json,
**                served: {yarn: {scale: 4}}, concurrency: 8}   # docs/servers.md
**     retriever:
**       arch: {mode: causal}
**       train: {length: 256, steps: 2000}
**       mixture: [{passkey: {template: short, weight: 0.5}}]   # half the windows
**
** A mixture makes a fraction `weight` of the training windows instances of a
** retrieval task (its train_sample hook) at the training length, so a small
** model learns the task there and is tested far beyond it; the rest is corpus
** text. The mixture is part of the model key. A checkpoint's mixture is what
** its fine-tunings train on (a key of the fine-tuned model only).
**
** A cell's model is trained from the base model plus the training-time part of
** its method stack (docs/config.md#models); that pair, the training corpus hash and the
** seed make the model key, and each key is trained once and cached as
** <db dir>/models/<key>.safetensors with a row in the store's `models` table.
** A checkpoint carries its own architecture and training-time stack; a
** `tokenizer` beside it says how its ids read as text, and its hash joins the
** model key (docs/config.md#models). A model lenx trains may name a
** `tokenizer` too: it is trained on the corpus and the mixture tasks in that
** tokenizer's tokens, its vocab is the tokenizer's, and the tokenizer's hash
** joins its model key.
*/
#ifndef LX_MODELS_H
#define LX_MODELS_H

#include "harness/core/config.h"
#include "harness/engine/model/model.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/engine/model/train.h"
#include "harness/engine/lm/server.h"

#define LX_MAX_MIX 4

struct lx_model_use {
    char *name;                     /* the key under models: */
    const struct lx_node *where;    /* for messages */
    struct lx_arch arch;            /* resolved (from the checkpoint when there is one) */
    struct lx_train_cfg train;      /* resolved; for a checkpoint only length is known */
    char *arch_json, *train_json;   /* canonical JSON of both */
    char *checkpoint;               /* path of a brought checkpoint, NULL when lenx trains */
    char *ckpt_stack;               /* its training-time stack (YAML flow list) */
    char *ckpt_eval;                /* its own evaluation-time stack (a config's dynamic NTK, sliding window, DCA:
                                    ** eval_stack in `lenx show model`), JSON; NULL without one */
    char ckpt_sha[65];              /* its SHA-256 */
    double ckpt_bytes;              /* its weights as held (lx_model_held_bytes: used in place, or fp32) */
    struct lx_mix mix[LX_MAX_MIX];  /* (n_mix,) the training mixture; params owned */
    int n_mix;
    char *mix_json;                 /* [{"name":..,"params":{..},"weight":w},..], or NULL without one */
    const struct lx_node *mix_where;    /* its YAML value, for messages; NULL without one */
    const struct lx_node *length_where; /* train: length's YAML value, for messages; NULL without one */
    char *tokenizer;                /* path of the model's tokenizer (named, or found beside a checkpoint);
                                    ** NULL: the byte tokenizer */
    const struct lx_node *tokenizer_where;  /* its YAML value, for messages; NULL without one */
    struct lx_tokenizer *tok;       /* loaded from `tokenizer`, owned; NULL: the byte tokenizer */
    /* server: a model behind an inference server (docs/servers.md); lm is NULL for every other model */
    struct lx_lm *lm;               /* the backend, opened (the server asked) when the sweep is read; owned */
    char *served_json;              /* the stack the server was started with, as declared (JSON) */
    char *served_canon;             /* ... and as shown ("[]" spelled "none") */
    const struct lx_node *served_where;
};

/* The tokenizer the model's tasks read text with: its own, or the byte one. */
const struct lx_tokenizer *lx_model_use_tokenizer(const struct lx_model_use *u);

/* Parse and resolve the models mapping. Checkpoints are opened to read their
** metadata; a path is relative to the sweep file's directory. */
int lx_models_parse(struct lx_model_use **out, int *n, const struct lx_node *map, struct lx_error *err);
void lx_models_release(struct lx_model_use *m, int n);

#endif
