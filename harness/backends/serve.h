/*
** harness/backends/serve.h - the answers of `lenx serve`: one model under one
** compiled method stack behind an OpenAI-compatible API (docs/servers.md).
** lx_serve_handle turns one request (method, path, body) into a status and a
** JSON body; harness/backends/httpd.c carries them over HTTP. The handler
** runs on one thread at a time (the server's worker); requests are served
** in turn.
**
** Routes: POST /v1/completions (and /completions); GET /v1/models; POST
** /tokenize, /detokenize; GET /tokenizer_info; GET /health. HEAD on a GET
** route is answered as GET (the server sends no body). Anything else is a
** 404 (405 for a known path with another method), as JSON.
*/
#ifndef LX_SERVE_H
#define LX_SERVE_H

#include "harness/backends/httpd.h"
#include "harness/backends/openai.h"
#include "harness/engine/lm/lm.h"

struct lx_tokenizer;

struct lx_serve {
    struct lx_lm *lm;                   /* the model (lenx's engine) */
    const struct lx_tokenizer *tok;     /* its tokenizer (bytes when it has none) */
    const char *name;                   /* the model id clients name ("model" of requests and /v1/models) */
    struct lx_oai_limits lim;           /* vocabulary and the longest sequence the memory plan holds */
    long length;                        /* the length the stack was compiled for */
    const char *info;                   /* JSON object: what /v1/models says of the model under "lenx"
                                        ** (methods, model key, numerics, ...) */
    long created;                       /* when it started (seconds since 1970) */
    unsigned long n_served;             /* completions answered: their ids */
};

/* Status code of the answer, body in out (JSON, newline-terminated); a
** completion asked with "stream": true is written through st instead
** (server-sent events; a 400 when st is NULL) and its status is 200 once
** its first event has gone. type is the body's Content-Type (NULL: none
** declared); a POST route refuses one that is not JSON (lx_oai_body_type). */
int lx_serve_handle(struct lx_serve *sv, const char *method, const char *path, const char *type, const char *body,
                    size_t n, struct lx_buf *out, const struct lx_httpd_stream *st);

#endif
