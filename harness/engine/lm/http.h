/*
** harness/engine/lm/http.h - HTTP requests for the server backend, the only
** file that includes libcurl (Debian's libcurl: a well-kept client with
** connection reuse, time-outs and many transfers at once on one thread).
**
** lx_http_run sends a batch of requests, at most `concurrency` in flight, each
** with a time-out; a connection error or a 5xx answer is tried again up to
** `retries` more times, after 0.5 s, 1 s, 2 s ... A request that timed out
** once connected is not: the server took it and is slow or stuck, and
** trying again would hold its caller (retries + 1) x timeout. Every request
** ends with a status (0 when it never got an answer) and a body, or an
** error message.
*/
#ifndef LX_HTTP_H
#define LX_HTTP_H

#include <stddef.h>

#include "harness/core/lx.h"

struct lx_http_req {
    const char *url;        /* in */
    const char *body;       /* in: a JSON body to POST, or NULL for GET */
    size_t body_len;
    long status;            /* out: the HTTP status; 0 = no answer (error says why) */
    struct lx_buf resp;     /* out: the answer's body (release with lx_buf_free) */
    char error[256];        /* out: why there was no answer, or "" */
    int tries;              /* out: attempts made */
    int timed_out;          /* out: no answer within the timeout once connected (not tried again) */
};

struct lx_http_opts {
    int concurrency;        /* requests in flight at once (>= 1) */
    double timeout;         /* seconds for one attempt, connection to last byte */
    int retries;            /* further attempts after a connection error (a connect timeout too) or a 5xx */
    long max_resp;          /* bytes an answer may have (a longer one is an error) */
    const char *auth;       /* an Authorization header line ("Authorization: Bearer KEY"), or NULL */
};

/* Send n requests; LX_OK unless libcurl cannot be loaded (LX_EIO, saying
** what to install) or cannot start (LX_ENOMEM). */
int lx_http_run(struct lx_http_req *reqs, long n, const struct lx_http_opts *o, struct lx_error *err);

#endif
