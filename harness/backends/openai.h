/*
** harness/backends/openai.h - the requests `lenx serve` reads, in the shape of
** OpenAI's legacy completions API and of the tokenizer endpoints vLLM and
** lm-evaluation-harness use (docs/servers.md): parsed and checked here, before
** any model sees them, so that a malformed request is a 4xx with a JSON
** message naming the field, never a crash. Pure functions of the body
** (tests/fuzz/fuzz_serve.c runs them on hostile bytes).
*/
#ifndef LX_OPENAI_H
#define LX_OPENAI_H

#include <stddef.h>
#include <stdint.h>

#include "harness/core/lx.h"

#define LX_OAI_MAX_PROMPTS 64       /* prompts in one request (a batch of lm-eval's) */
#define LX_OAI_MAX_STOP 4           /* stop strings, as OpenAI's API */
#define LX_OAI_MAX_STOP_LEN 256     /* bytes of one stop string */
#define LX_OAI_MAX_LOGPROBS 20      /* top alternatives per token (vLLM's default cap) */

/* What a request may hold, set by the server: the vocabulary its ids index
** and the longest sequence (prompt + max_tokens) its memory plan holds. */
struct lx_oai_limits {
    long vocab;
    long max_len;
};

/* A refused request: the HTTP status, the field at fault ("" for the body)
** and the message. */
struct lx_oai_err {
    int status;
    char param[64];
    char msg[512];
};

/* One prompt: text (borrowed from the parsed body) or ids (owned). */
struct lx_oai_prompt {
    const char *text;
    size_t len;
    int *ids;
    long n;
};

struct lx_oai_completion {
    struct lx_oai_prompt prompt[LX_OAI_MAX_PROMPTS];
    int n_prompts;
    long max_tokens;        /* default 16, as OpenAI */
    double temperature;     /* default 1, as OpenAI; 0 = greedy */
    long top_k;             /* 0 or -1 = all (vLLM's field) */
    uint64_t seed;          /* the draws' key: a JSON integer, its 64 bits (negative = two's complement) */
    int has_seed;
    const char *stop[LX_OAI_MAX_STOP];
    size_t stop_len[LX_OAI_MAX_STOP];
    int n_stop;
    int logprobs;           /* -1: none; k >= 0: each token's log-prob and the top k */
    int echo;               /* the prompt is returned (and scored) before the continuation */
    int token_ids;          /* return_tokens_as_token_ids (vLLM): tokens as "token_id:N" */
    int return_ids;         /* return_token_ids (vLLM): each choice's "token_ids" (the continuation's,
                            ** a special id that ended it included) and "prompt_token_ids" */
    long attn_from;         /* lenx_attention_from: sum attention entropy from this row on; -1 = not asked */
    int ignore_eos;         /* vLLM's: the model's end of text (any special id) does not end the continuation */
    int stream;             /* the answer as server-sent events, chunk by chunk (no logprobs, no attention) */
    int stream_usage;       /* stream_options.include_usage: a last chunk with the usage */
    const char *model;      /* as sent, or NULL */
    void *doc;              /* the parsed body (owns the strings above) */
};

/* Parse a POST /v1/completions body. LX_OK, or LX_EINVAL with e filled (400,
** or 413 for a prompt too long for lim). On success release with
** lx_oai_completion_release; on failure nothing is left to release. */
int lx_oai_completion_parse(struct lx_oai_completion *r, const char *body, size_t n,
                            const struct lx_oai_limits *lim, struct lx_oai_err *e);
void lx_oai_completion_release(struct lx_oai_completion *r);

/* POST /tokenize: {"prompt": text, "add_special_tokens": bool (default true)}
** (llama-server's "content" is read too). *text borrowed from *doc (release
** with lx_oai_doc_free). */
int lx_oai_tokenize_parse(void **doc, const char *body, size_t n, const char **text, size_t *len, int *special,
                          struct lx_oai_err *e);
/* POST /detokenize: {"tokens": [ids]}: *ids malloc'd (NULL when empty). */
int lx_oai_detokenize_parse(const char *body, size_t n, const struct lx_oai_limits *lim, int **ids, long *n_ids,
                            struct lx_oai_err *e);
void lx_oai_doc_free(void *doc);

/* A request body's Content-Type (NULL: none declared): LX_OK for JSON, else
** a 415 in e. JSON is application/json or application/...+json (parameters
** such as charset ignored, any case), as FastAPI under vLLM reads it; an
** undeclared type, and curl -d's application/x-www-form-urlencoded, are
** read as JSON too (docs/servers.md). */
int lx_oai_body_type(const char *type, struct lx_oai_err *e);

/* The JSON of an error: {"error":{"message","type","param","code"}}, the
** nested form OpenAI's and newer vLLM's clients read. */
void lx_oai_error_json(struct lx_buf *out, const struct lx_oai_err *e);
/* Fill e (returns LX_EINVAL). */
int lx_oai_fail(struct lx_oai_err *e, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
