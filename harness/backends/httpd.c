/*
** harness/backends/httpd.c - the HTTP server of `lenx serve` on libmicrohttpd
** (see httpd.h).
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/backends/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/core/dl.h"

/* libmicrohttpd, opened when a server starts (harness/core/dl.h): its functions, as microhttpd.h types them. */
#define LX_DL_PREFIX MHD_
#define MHD_FNS(X)                                                                                            \
    X(create_response_from_buffer) X(create_response_from_callback) X(add_response_header) X(queue_response)      \
    X(destroy_response) X(start_daemon) X(get_daemon_info) X(stop_daemon) X(get_connection_info)                \
    X(lookup_connection_value)
static LX_DL_TABLE(MHD_FNS) mhd;
static struct lx_dl libmhd = {.soname = "libmicrohttpd.so.12", .package = "libmicrohttpd12",
                              .use = "lenx serve's HTTP server (libmicrohttpd)"};
LX_DL_RESOLVE(resolve, mhd, MHD_FNS)

/* A request waiting for, or being answered by, the serving thread. Freed by
** whichever of its holders (connection, server, a streamed response) lets
** go of it last. A streamed answer is appended to out by the server and
** taken from out[sent, len) by the connection. */
struct job {
    struct lx_httpd *h;
    char method[16], *path;
    char *type;                 /* the request's Content-Type, NULL when it declares none */
    struct lx_buf body, out;
    size_t sent;
    struct timespec deadline;
    int status;
    int done, abandoned, streaming, refs;
    int taken;                  /* the model's thread took it from the queue */
    int stopped;                /* the handler was told to stop because the server is stopping: its answer may be
                                ** cut short, and is a 503 */
    struct job *next;
};

struct lx_httpd {
    struct MHD_Daemon *d;
    struct lx_httpd_limits lim;
    lx_httpd_fn fn;
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t queued, answered;
    struct job *head, *tail;
    int n_queued;               /* requests waiting for this thread (not those whose client had its 503) */
    int n_open;                 /* requests queued whose connection has not yet sent their answer */
    volatile sig_atomic_t *stop;    /* lx_httpd_serve's: set, the server is stopping (NULL before it runs) */
    int port;
};

/* A connection's request as it arrives. */
struct conn {
    struct lx_buf body;
    long bytes;
    int too_big;
    int queued;     /* counted in n_open */
};

static void job_unref(struct job *j)
{
    if (--j->refs == 0) {
        free(j->path);
        free(j->type);
        lx_buf_free(&j->body);
        lx_buf_free(&j->out);
        free(j);
    }
}

/* Is the server stopping (SIGINT or SIGTERM)? Under h->mu. */
static int stopping(const struct lx_httpd *h)
{
    return h->stop && *h->stop;
}

/* Has the client closed its connection? Its socket reads as at its end (or fails); bytes it sent after the
** request (a pipelined one) leave it open. A client that only shut its side for writing (shutdown(SHUT_WR),
** nc -N) reads the same and is taken for gone: only a write would tell them apart (docs/servers.md). */
static int client_closed(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    char b;
    ssize_t k = ci ? recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) : 1;
    return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static enum MHD_Result respond(struct MHD_Connection *c, int status, const struct lx_buf *b)
{
    struct MHD_Response *r = mhd.create_response_from_buffer(b->len, b->s ? b->s : (char *)"",
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    mhd.add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ok = mhd.queue_response(c, (unsigned)status, r);
    mhd.destroy_response(r);
    return ok;
}

static void error_json(struct lx_buf *b, int status, const char *type, const char *msg)
{
    lx_buf_puts(b, "{\"error\":{\"message\":");
    lx_buf_json_str(b, msg);
    lx_buf_printf(b, ",\"type\":\"%s\",\"param\":null,\"code\":%d}}", type, status);
}

static enum MHD_Result respond_error(struct MHD_Connection *c, int status, const char *type, const char *msg)
{
    struct lx_buf b = {0};
    error_json(&b, status, type, msg);
    lx_buf_puts(&b, "\n");
    enum MHD_Result ok = respond(c, status, &b);
    lx_buf_free(&b);
    return ok;
}

static void timeout_msg(char *msg, size_t n, double s, int streamed)
{
    snprintf(msg, n, streamed ? "the answer ran past %g s and was cut there\n  hint: a smaller max_tokens, or lenx "
             "serve --timeout" : "no answer within %g s\n  hint: a shorter prompt or budget, or lenx serve --timeout", s);
}

static const char stopping_msg[] = "the server is stopping (SIGINT or SIGTERM)\n  hint: retry the request once "
                                   "the server is back";

/* The handler's stream (lx_httpd_stream): appends to the job's answer. */
static int stream_put(void *arg, const char *data, size_t n)
{
    struct job *j = arg;
    pthread_mutex_lock(&j->h->mu);
    int gone = j->abandoned || (j->stopped |= stopping(j->h));
    if (!gone) {
        lx_buf_putn(&j->out, data, n);
        j->streaming = 1;
        pthread_cond_broadcast(&j->h->answered);
    }
    pthread_mutex_unlock(&j->h->mu);
    return gone ? -1 : 0;
}

/* The handler's poll (lx_httpd_stream): is the job's answer unread? */
static int job_gone(void *arg)
{
    struct job *j = arg;
    pthread_mutex_lock(&j->h->mu);
    int gone = j->abandoned || (j->stopped |= stopping(j->h));
    pthread_mutex_unlock(&j->h->mu);
    return gone;
}

/* libmicrohttpd asks for the next bytes of a streamed answer on the
** connection's own thread: wait for them, or for the end. Past the deadline
** the stream ends with an error event and [DONE] (OpenAI's end of stream),
** and the handler is told to stop. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct job *j = cls;
    struct lx_httpd *h = j->h;
    (void)pos;
    pthread_mutex_lock(&h->mu);
    while (j->sent == j->out.len && !j->done && !j->abandoned &&
           pthread_cond_timedwait(&h->answered, &h->mu, &j->deadline) != ETIMEDOUT)
        ;
    if (j->sent == j->out.len && !j->done && !j->abandoned) {
        char msg[160];
        timeout_msg(msg, sizeof msg, h->lim.request_timeout, 1);
        j->abandoned = 1;
        lx_buf_puts(&j->out, "data: ");
        error_json(&j->out, 503, "ServiceUnavailable", msg);
        lx_buf_puts(&j->out, "\n\ndata: [DONE]\n\n");
    }
    ssize_t n = MHD_CONTENT_READER_END_OF_STREAM;
    if (j->sent < j->out.len) {
        size_t k = j->out.len - j->sent < max ? j->out.len - j->sent : max;
        memcpy(buf, j->out.s + j->sent, k);
        j->sent += k;
        if (j->sent == j->out.len)
            lx_buf_reset(&j->out), j->sent = 0;
        n = (ssize_t)k;
    }
    pthread_mutex_unlock(&h->mu);
    return n;
}

/* The streamed response lets go of its job (sent, or its client gone). */
static void stream_free(void *cls)
{
    struct job *j = cls;
    struct lx_httpd *h = j->h;
    pthread_mutex_lock(&h->mu);
    j->abandoned = 1;
    job_unref(j);
    pthread_mutex_unlock(&h->mu);
}

static enum MHD_Result respond_stream(struct MHD_Connection *c, struct job *j)
{
    pthread_mutex_lock(&j->h->mu);
    j->refs++;      /* the response's, let go of in stream_free */
    pthread_mutex_unlock(&j->h->mu);
    struct MHD_Response *r = mhd.create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, j,
                                                               stream_free);
    if (!r) {
        stream_free(j);     /* nobody will read: the handler stops at its next put */
        return MHD_NO;
    }
    mhd.add_response_header(r, "Content-Type", "text/event-stream");
    mhd.add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result ok = mhd.queue_response(c, 200, r);
    mhd.destroy_response(r);
    return ok;
}

/* Queue the request: its job (held by the caller and the queue), or NULL when the queue is full. Under h->mu. */
static struct job *enqueue(struct lx_httpd *h, struct MHD_Connection *c, const char *method, const char *url,
                           struct conn *cn)
{
    if (h->n_queued >= h->lim.max_queue)
        return NULL;
    struct job *j = lx_xcalloc(1, sizeof *j);
    j->h = h;
    snprintf(j->method, sizeof j->method, "%s", method);
    j->path = lx_xstrdup(url);
    const char *type = mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    j->type = type ? lx_xstrdup(type) : NULL;
    j->body = cn->body;
    cn->body = (struct lx_buf){0};
    j->refs = 2;
    if (h->tail)
        h->tail->next = j;
    else
        h->head = j;
    h->tail = j;
    h->n_queued++;
    h->n_open += !cn->queued;
    cn->queued = 1;
    pthread_cond_signal(&h->queued);
    clock_gettime(CLOCK_REALTIME, &j->deadline);
    double t = (double)j->deadline.tv_sec + 1e-9 * (double)j->deadline.tv_nsec + h->lim.request_timeout;
    j->deadline.tv_sec = (time_t)t;
    j->deadline.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
    return j;
}

enum wait_end { ANSWERED, TIMED_OUT, CLIENT_GONE, STOPPING };

/* Wait for the job's answer, or the first bytes of a streamed one, until its deadline; five times a second
** look whether its client closed the connection (nobody would read the answer) or the server is stopping.
** Under h->mu; a job not answered is abandoned: its handler stops at its next token, or it is never begun. */
static enum wait_end await_answer(struct lx_httpd *h, struct MHD_Connection *c, struct job *j)
{
    enum wait_end end = ANSWERED;
    while (!j->done && !j->streaming && end == ANSWERED) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L)
            until.tv_sec++, until.tv_nsec -= 1000000000L;
        int last = until.tv_sec > j->deadline.tv_sec ||
                   (until.tv_sec == j->deadline.tv_sec && until.tv_nsec >= j->deadline.tv_nsec);
        if (pthread_cond_timedwait(&h->answered, &h->mu, last ? &j->deadline : &until) == ETIMEDOUT && last)
            end = j->done || j->streaming ? ANSWERED : TIMED_OUT;
        else if (!j->done && !j->streaming)
            end = stopping(h) ? STOPPING : client_closed(c) ? CLIENT_GONE : ANSWERED;
    }
    j->abandoned = end != ANSWERED;
    if (j->abandoned && !j->taken)
        h->n_queued--;  /* no longer waiting: a later request is not refused for it */
    return end;
}

/* Queue the request and wait for its answer, or the first bytes of a
** streamed one (or the time limit, the client's leaving, the server's stop). */
static enum MHD_Result through_queue(struct lx_httpd *h, struct MHD_Connection *c, const char *method,
                                     const char *url, struct conn *cn)
{
    pthread_mutex_lock(&h->mu);
    struct job *j = enqueue(h, c, method, url, cn);
    if (!j) {
        int n = h->n_queued;
        pthread_mutex_unlock(&h->mu);
        char msg[160];
        snprintf(msg, sizeof msg, "the server is busy: %d requests are waiting\n  hint: retry later, or send fewer "
                 "at once (lenx serve --max-queue)", n);
        return respond_error(c, 503, "ServiceUnavailable", msg);
    }
    enum wait_end end = await_answer(h, c, j);
    int streaming = j->streaming;
    enum MHD_Result ok = MHD_NO;    /* a client gone: its connection closed, unanswered */
    if (end == ANSWERED) {
        pthread_mutex_unlock(&h->mu);
        ok = streaming ? respond_stream(c, j) : respond(c, j->status, &j->out);
        pthread_mutex_lock(&h->mu);
    }
    job_unref(j);
    pthread_mutex_unlock(&h->mu);
    char msg[160];
    if (end == TIMED_OUT)
        timeout_msg(msg, sizeof msg, h->lim.request_timeout, 0);
    if (end == TIMED_OUT || end == STOPPING)
        ok = respond_error(c, 503, "ServiceUnavailable", end == STOPPING ? stopping_msg : msg);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    struct lx_httpd *h = cls;
    struct conn *cn = *con_cls;
    (void)version;
    if (!cn) {
        *con_cls = lx_xcalloc(1, sizeof(struct conn));
        return MHD_YES;
    }
    if (*upload_size) {     /* more of the body: kept up to max_body, then read and dropped */
        cn->bytes += (long)*upload_size;
        if (cn->bytes > h->lim.max_body) {
            cn->too_big = 1;
            lx_buf_free(&cn->body);
        } else {
            lx_buf_putn(&cn->body, upload, *upload_size);
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (cn->too_big) {
        char msg[160];
        snprintf(msg, sizeof msg, "the body has more than %ld bytes\n  hint: lenx serve --max-body", h->lim.max_body);
        return respond_error(c, 413, "RequestTooLarge", msg);
    }
    if (strcmp(url, "/health") == 0 && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)) {
        struct lx_buf b = {0};
        lx_buf_puts(&b, "{\"status\":\"ok\"}\n");
        enum MHD_Result ok = respond(c, 200, &b);
        lx_buf_free(&b);
        return ok;
    }
    return through_queue(h, c, method, url, cn);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why)
{
    struct lx_httpd *h = cls;
    (void)c, (void)why;
    struct conn *cn = *con_cls;
    if (cn && cn->queued) {     /* its answer sent (or its client gone): lx_httpd_stop no longer waits for it */
        pthread_mutex_lock(&h->mu);
        h->n_open--;
        pthread_cond_broadcast(&h->answered);
        pthread_mutex_unlock(&h->mu);
    }
    if (cn) {
        lx_buf_free(&cn->body);
        free(cn);
        *con_cls = NULL;
    }
}

int lx_httpd_start(struct lx_httpd **out, const char *host, int port, const struct lx_httpd_limits *lim,
                   lx_httpd_fn fn, void *ctx, struct lx_error *err)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return lx_err(err, LX_EINVAL, "--host '%s' is not an IPv4 address\n  hint: 127.0.0.1 (this machine only, the "
                      "default) or 0.0.0.0 (every interface)", host);
    int rc = lx_dl_load(&libmhd, resolve, err);
    if (rc < 0)
        return rc;
    struct lx_httpd *h = lx_xcalloc(1, sizeof *h);
    h->lim = *lim;
    h->fn = fn;
    h->ctx = ctx;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->queued, NULL);
    pthread_cond_init(&h->answered, NULL);
    h->d = mhd.start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL,
                            (uint16_t)port, NULL, NULL, on_request, h,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)lim->max_connections,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)lim->idle_timeout,
                            MHD_OPTION_THREAD_STACK_SIZE, (size_t)256 * 1024,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_END);
    if (!h->d) {
        int e = errno;
        pthread_mutex_destroy(&h->mu);
        pthread_cond_destroy(&h->queued);
        pthread_cond_destroy(&h->answered);
        free(h);
        return lx_err(err, LX_EIO, "cannot listen on %s:%d: %s\n  hint: is another server on that port? --port 0 "
                      "picks a free one", host, port, e ? strerror(e) : "libmicrohttpd refused");
    }
    const union MHD_DaemonInfo *info = mhd.get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : port;
    *out = h;
    return LX_OK;
}

int lx_httpd_port(const struct lx_httpd *h)
{
    return h->port;
}

/* The answer of a job whose handler was told the server is stopping: a 503, or a stream's error event. */
static void stopped_answer(struct job *j, struct lx_buf *answer)
{
    if (j->streaming) {
        lx_buf_puts(&j->out, "data: ");
        error_json(&j->out, 503, "ServiceUnavailable", stopping_msg);
        lx_buf_puts(&j->out, "\n\ndata: [DONE]\n\n");
        pthread_cond_broadcast(&j->h->answered);
        return;
    }
    lx_buf_reset(answer);
    error_json(answer, 503, "ServiceUnavailable", stopping_msg);
    lx_buf_puts(answer, "\n");
    j->status = 503;
}

void lx_httpd_serve(struct lx_httpd *h, volatile sig_atomic_t *stop)
{
    pthread_mutex_lock(&h->mu);
    h->stop = stop;
    while (!*stop) {
        if (!h->head) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 200 * 1000 * 1000;     /* look at *stop five times a second */
            if (until.tv_nsec >= 1000000000L)
                until.tv_sec++, until.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&h->queued, &h->mu, &until);
            continue;
        }
        struct job *j = h->head;
        h->head = j->next;
        if (!h->head)
            h->tail = NULL;
        j->taken = 1;
        if (j->abandoned) {     /* its client was answered 503 while it waited (and uncounted it) */
            job_unref(j);
            continue;
        }
        h->n_queued--;
        pthread_mutex_unlock(&h->mu);
        struct lx_buf answer = {0};
        struct lx_httpd_stream st = {stream_put, job_gone, j};
        int status = h->fn(h->ctx, j->method, j->path, j->type, j->body.s ? j->body.s : "", j->body.len, &answer,
                           &st);
        pthread_mutex_lock(&h->mu);
        j->status = status;
        if (j->stopped && !j->abandoned)
            stopped_answer(j, &answer);
        if (!j->streaming)
            lx_buf_free(&j->out), j->out = answer;
        else
            lx_buf_free(&answer);
        j->done = 1;
        pthread_cond_broadcast(&h->answered);
        job_unref(j);
    }
    pthread_mutex_unlock(&h->mu);
}

void lx_httpd_stop(struct lx_httpd *h)
{
    if (!h)
        return;
    struct timespec until;     /* up to 5 s for the answers being sent (a 503 each, once the server stops) */
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&h->mu);
    while (h->n_open > 0 && pthread_cond_timedwait(&h->answered, &h->mu, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&h->mu);
    mhd.stop_daemon(h->d);
    while (h->head) {   /* no connection is left to wait for these */
        struct job *j = h->head;
        h->head = j->next;
        j->refs = 1;
        job_unref(j);
    }
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->queued);
    pthread_cond_destroy(&h->answered);
    free(h);
}
