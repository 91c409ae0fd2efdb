/*
** harness/engine/lm/server.h - a language model behind an inference server
** that speaks OpenAI's completions API (vLLM, llama.cpp's llama-server,
** `lenx serve`), as a backend of lm.h (docs/servers.md).
**
** Prompts go as token ids made with the cell's tokenizer, so lengths stay
** exact in the model's tokens; where the server has /tokenize, a sample is
** checked against it when the backend opens, and a mismatch is refused.
** Opening also asks what the server can give: every server continues
** prompts (greedy at temperature 0, or seeded); prompt log-probabilities
** come from `echo` with `logprobs` where the server really echoes (a server
** that answers an echo request without the prompt's log-probs, as
** llama-server does, has none); attention statistics only from `lenx serve`
** (its lenx_attention_from field). Requests run `concurrency` at a time,
** each with a time-out, connection errors and 5xx answers tried again.
*/
#ifndef LX_SERVER_H
#define LX_SERVER_H

#include "harness/engine/lm/lm.h"

struct lx_tokenizer;

struct lx_server_cfg {
    const char *url;        /* the API's base, e.g. http://127.0.0.1:8000/v1 */
    const char *model;      /* the model id to ask for; NULL = the first /models lists */
    int concurrency;        /* requests in flight at once */
    double timeout;         /* seconds one request may take */
    int retries;            /* further tries after a connection error or a 5xx */
    const char *api_key;    /* sent as "Authorization: Bearer KEY" (never stored, never shown), or NULL */
};

/* Open a server backend into lm: ask the server who it is and what it can
** give, check the tokenizer tk (the cell's; NULL = bytes) against its
** /tokenize. name names it in messages ("server 'NAME' (URL)"). */
int lx_lm_server_open(struct lx_lm *lm, const struct lx_server_cfg *cfg, const struct lx_tokenizer *tk,
                      const char *name, struct lx_error *err);
void lx_lm_server_close(struct lx_lm *lm);

/* What the server says it is, as canonical JSON without what changes when it
** restarts (times, addresses): the model id and its metadata, lenx serve's
** description of its model and stack, llama-server's build and model path,
** vLLM's version. Part of the model key of every cell it answers. */
const char *lx_lm_server_identity(const struct lx_lm *lm);

/* The stack lenx serve says it runs, its canonical string with resolved
** values ("rope(layout=interleaved)+yarn(scale=2)"); NULL for another server,
** which does not say. */
const char *lx_lm_server_methods(const struct lx_lm *lm);

/* The numerics the server computes in, as a cell records it: lenx serve's
** ("fast", "portable", "bf16"), "server" for another server, which does not
** say. A sweep's own numerics do not reach a server's cells. */
const char *lx_lm_server_numerics(const struct lx_lm *lm);

#endif
