/*
** harness/backends/httpd.h - an HTTP server for `lenx serve`, the only file that
** includes libmicrohttpd (Debian's libmicrohttpd12: a well-kept C server
** with thread-per-connection, connection limits and timeouts built in).
**
** Each connection has its own thread, which reads the request (a body over
** max_body bytes is a 413, read and dropped) and queues it; the caller's
** thread (lx_httpd_serve) answers queued requests one at a time with the
** handler, so the model is only ever used from one thread. A full queue is a
** 503 at once; a request not answered within request_timeout seconds is a
** 503 (answered later, its answer dropped). A request whose client closes
** its connection, or any once lx_httpd_serve's *stop is set (a 503 each), is
** abandoned the same way: the waiting connection looks five times a second
** (a client that half-closed its connection after its request looks closed).
** GET (and HEAD) /health is answered by the connection's thread at once,
** even while a long request runs. libmicrohttpd sends a HEAD request's
** answer without its body.
**
** Streaming: a handler that writes through its stream (lx_httpd_stream) gets
** a 200 text/event-stream answer, sent in chunks as it writes them (chunked
** transfer); the connection's thread waits for each. A put returns < 0 once
** the client has gone, the request's time is up or the server is stopping,
** and the handler should stop: its status and out are then unused (a stop
** sends an error event and "data: [DONE]" after what was written). A stream that runs past
** request_timeout ends with an error event ("data: {"error":...}") and
** "data: [DONE]".
**
** Memory: at most max_connections connections, each holding at most
** max_body bytes of body, its answer, and a thread stack of 256 KiB.
*/
#ifndef LX_HTTPD_H
#define LX_HTTPD_H

#include <signal.h>
#include <stddef.h>

#include "harness/core/lx.h"

struct lx_httpd_limits {
    long max_body;          /* bytes of a request body */
    int max_connections;    /* open at once; more are refused by the listening socket */
    int max_queue;          /* requests waiting for the model */
    int idle_timeout;       /* seconds a connection may stay silent (a client that stops reading or sending) */
    double request_timeout; /* seconds a request may wait and run before its client gets a 503 */
};

/* Where a streamed answer goes, in the order written: bytes of a
** text/event-stream. put returns < 0 when nobody reads any more. gone says
** 1 once the request's client was answered without the handler (a 503 at
** the time limit, a client that closed its connection, or a stream it
** left), or once the server is stopping (its answer is then a 503): a
** handler that is not streaming polls it to stop work whose answer nobody
** reads. */
struct lx_httpd_stream {
    int (*put)(void *arg, const char *data, size_t n);
    int (*gone)(void *arg);
    void *arg;
};

/* The answer to one request: status code, JSON body in out; or, for a
** request that asks for it, the answer written through st (NULL where
** nothing can stream). type is the request's Content-Type as sent, NULL
** when it declares none. */
typedef int (*lx_httpd_fn)(void *ctx, const char *method, const char *path, const char *type, const char *body,
                           size_t n, struct lx_buf *out, const struct lx_httpd_stream *st);

struct lx_httpd;

/* Listen on host:port (port 0: a free port, see lx_httpd_port). */
int lx_httpd_start(struct lx_httpd **out, const char *host, int port, const struct lx_httpd_limits *lim,
                   lx_httpd_fn fn, void *ctx, struct lx_error *err);
int lx_httpd_port(const struct lx_httpd *h);
/* Answer queued requests on this thread until *stop is set (a signal handler sets it). */
void lx_httpd_serve(struct lx_httpd *h, volatile sig_atomic_t *stop);
/* Close the listening socket and every connection (after up to 5 s for the
** answers being sent); free h. */
void lx_httpd_stop(struct lx_httpd *h);

#endif
