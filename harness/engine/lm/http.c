/*
** harness/engine/lm/http.c - HTTP requests on libcurl's multi interface (see http.h).
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/lm/http.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/core/dl.h"

/* libcurl, opened at the first request (harness/core/dl.h): its functions, as curl.h types them. */
#define LX_DL_PREFIX curl_
#define CURL_FNS(X)                                                                                     \
    X(global_init) X(easy_init) X(easy_setopt) X(easy_getinfo) X(easy_cleanup) X(easy_strerror)       \
    X(multi_init) X(multi_add_handle) X(multi_remove_handle) X(multi_perform) X(multi_poll)           \
    X(multi_info_read) X(multi_cleanup) X(slist_append) X(slist_free_all)
static LX_DL_TABLE(CURL_FNS) cu;
static struct lx_dl libcurl = {.soname = "libcurl.so.4", .package = "libcurl4",
                               .use = "the HTTP client of a server backend (libcurl)"};
LX_DL_RESOLVE(resolve_fns, cu, CURL_FNS)

static int resolve(struct lx_dl *lib, struct lx_error *err)
{
    int rc = resolve_fns(lib, err);
    if (rc == LX_OK)
        cu.global_init(CURL_GLOBAL_DEFAULT);
    return rc;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One request on its way. */
struct xfer {
    struct lx_http_req *r;
    CURL *h;
    const struct lx_http_opts *o;
    int too_long;
    double not_before;  /* a retry waits until then */
};

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t k = size * n;
    if ((long)(x->r->resp.len + k) > x->o->max_resp) {
        x->too_long = 1;
        return 0;       /* stops the transfer */
    }
    lx_buf_putn(&x->r->resp, p, k);
    return k;
}

static CURL *make_handle(struct xfer *x, struct curl_slist *hdr)
{
    CURL *h = cu.easy_init();
    if (!h)
        return NULL;
    cu.easy_setopt(h, CURLOPT_URL, x->r->url);
    cu.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    cu.easy_setopt(h, CURLOPT_WRITEDATA, x);
    cu.easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(x->o->timeout * 1000.0));
    cu.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(x->o->timeout < 10.0 ? x->o->timeout * 1000.0 : 10000.0));
    cu.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    cu.easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    cu.easy_setopt(h, CURLOPT_PRIVATE, x);
    if (x->r->body) {
        cu.easy_setopt(h, CURLOPT_POSTFIELDS, x->r->body);
        cu.easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->r->body_len);
    }
    return h;
}

/* A transfer that ended: its status, body or error; 0 when it is to be
** tried again (queued in retry after its pause), 1 when it is done. */
static int finished(CURLM *m, CURLMsg *msg, struct xfer *x, long *retry, long *n_retry)
{
    struct xfer *y;
    cu.easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&y);
    CURLcode res = msg->data.result;
    long status = 0;
    cu.easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
    long sent = 0;      /* the request's bytes sent: 0 for a connect timeout, a connection error */
    cu.easy_getinfo(msg->easy_handle, CURLINFO_REQUEST_SIZE, &sent);
    y->r->timed_out = res == CURLE_OPERATION_TIMEDOUT && sent > 0;
    cu.multi_remove_handle(m, msg->easy_handle);
    cu.easy_cleanup(msg->easy_handle);
    y->h = NULL;
    int failed = res != CURLE_OK || status >= 500;
    if (y->too_long)
        snprintf(y->r->error, sizeof y->r->error, "the answer has more than %ld bytes", y->o->max_resp);
    else if (res != CURLE_OK)
        snprintf(y->r->error, sizeof y->r->error, "%s", cu.easy_strerror(res));
    else
        y->r->error[0] = '\0';
    y->r->status = res == CURLE_OK && !y->too_long ? status : 0;
    if (failed && !y->too_long && !y->r->timed_out && y->r->tries <= y->o->retries) {
        lx_buf_free(&y->r->resp);
        y->not_before = now() + 0.5 * (double)(1L << (y->r->tries - 1 < 6 ? y->r->tries - 1 : 6));
        retry[(*n_retry)++] = y - x;
        return 0;
    }
    return 1;
}

int lx_http_run(struct lx_http_req *reqs, long n, const struct lx_http_opts *o, struct lx_error *err)
{
    int rc = lx_dl_load(&libcurl, resolve, err);
    if (rc < 0)
        return rc;
    CURLM *m = cu.multi_init();
    struct curl_slist *hdr = cu.slist_append(NULL, "Content-Type: application/json");
    if (hdr && o->auth) {
        struct curl_slist *more = cu.slist_append(hdr, o->auth);
        hdr = more ? more : (cu.slist_free_all(hdr), NULL);
    }
    if (!m || !hdr) {
        if (m)
            cu.multi_cleanup(m);
        cu.slist_free_all(hdr);
        return lx_err(err, LX_ENOMEM, "libcurl cannot start");
    }
    struct xfer *x = lx_xcalloc((size_t)n + 1, sizeof *x);
    long next = 0, running = 0, done = 0;
    long *retry = lx_xcalloc((size_t)n + 1, sizeof *retry), n_retry = 0;   /* waiting to be tried again */
    for (long i = 0; i < n; i++) {
        x[i] = (struct xfer){.r = &reqs[i], .o = o};
        reqs[i].status = 0, reqs[i].error[0] = '\0', reqs[i].tries = 0, reqs[i].timed_out = 0;
        reqs[i].resp = (struct lx_buf){0};
    }
    while (done < n) {
        double t = now();
        for (long k = 0; k < n_retry && running < o->concurrency;) {    /* retries whose pause is over */
            struct xfer *y = &x[retry[k]];
            if (y->not_before > t) {
                k++;
                continue;
            }
            retry[k] = retry[--n_retry];
            if ((y->h = make_handle(y, hdr)))
                cu.multi_add_handle(m, y->h), running++, y->r->tries++;
            else
                done++;     /* its last answer (or error) stands */
        }
        while (next < n && running < o->concurrency) {
            struct xfer *y = &x[next++];
            if ((y->h = make_handle(y, hdr))) {
                cu.multi_add_handle(m, y->h), running++, y->r->tries++;
            } else {
                snprintf(y->r->error, sizeof y->r->error, "libcurl cannot make a request");
                done++;
            }
        }
        int still;
        cu.multi_perform(m, &still);
        CURLMsg *msg;
        int left;
        while ((msg = cu.multi_info_read(m, &left)))
            if (msg->msg == CURLMSG_DONE) {
                running--;
                if (finished(m, msg, x, retry, &n_retry))
                    done++;
            }
        if (done < n)
            cu.multi_poll(m, NULL, 0, running ? 100 : 50, NULL);
    }
    free(retry);
    free(x);
    cu.slist_free_all(hdr);
    cu.multi_cleanup(m);
    return LX_OK;
}
