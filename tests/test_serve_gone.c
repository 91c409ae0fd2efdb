/*
** tests/test_serve_gone.c - `lenx serve` when nobody will read an answer
** (docs/servers.md, "Limits and memory"): a client that closes its connection
** before a long answer comes, and a server stopped by SIGTERM while a request
** runs and another waits. Neither may hold the model until --timeout. A
** client that half-closes its connection is taken for one that left.
*/
#pragma GCC diagnostic ignored "-Wunused-function"  /* tests/shell.h's helpers this suite does not call */
#include "tests/serve_fixture.h"

#include <sys/wait.h>

/* A request that would run for minutes on stories260K: 60,000 tokens, one by one. */
static const char long_req[] = "{\"prompt\":[1,403],\"max_tokens\":60000,\"ignore_eos\":true,\"temperature\":0}";

/* POST body to /v1/completions on a new connection; the connection, its answer unread. */
static int send_request(int port, const char *body)
{
    int fd = connect_to(port);
    char h[512];
    snprintf(h, sizeof h, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", strlen(body));
    send_all(fd, h, strlen(h));
    send_all(fd, body, strlen(body));
    return fd;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A server (--timeout 30) in a test folder of its own, running long_req for a client that does not read yet:
** that client's connection. */
static int start_running(struct server *s, const char *name)
{
    shell_setup(name);
    server_start(s, "--timeout 30");
    int running = send_request(s->port, long_req);
    usleep(500000);
    return running;
}

/* A client that asks for a long continuation and closes its connection
** before the answer: the model stops at its next token, as for a stream, and
** the next request is answered at once (it waited for the --timeout, 30 s
** here). A waiting request whose client closed is not begun either. */
Test(serve_gone, a_client_gone_before_its_answer_frees_the_model, .fini = teardown, .timeout = 200)
{
    struct server s;
    int running = start_running(&s, "serve-gone-client");
    int waiting = send_request(s.port, long_req);
    usleep(300000);
    close(running);
    close(waiting);
    usleep(300000);
    double t0 = now_s();
    char *b;
    cr_expect_eq(http(s.port, "POST", "/v1/completions", "{\"prompt\":[1,403],\"max_tokens\":2,\"temperature\":0}",
                      &b), 200, "%s", b);
    double took = now_s() - t0;
    cr_expect_lt(took, 10.0, "the next request waited %.1f s behind answers nobody reads", took);
    free(b);
    cr_expect_eq(server_stop(&s), 0);
}

/* SIGTERM while a long request runs and another waits: the server stops
** within seconds, not at --timeout (30 s here), and both clients are told,
** with a JSON 503 (a retry reaches a restarted server), not a dropped
** connection or a continuation cut short as if complete. */
Test(serve_gone, sigterm_stops_running_and_waiting_requests, .fini = teardown, .timeout = 200)
{
    struct server s;
    int running = start_running(&s, "serve-gone-sigterm");
    int waiting = send_request(s.port, "{\"prompt\":[1,403],\"max_tokens\":2,\"temperature\":0}");
    usleep(300000);
    double t0 = now_s();
    kill(s.pid, SIGTERM);
    int st = 0, exited = 0;
    while (!exited && now_s() - t0 < 60.0) {
        exited = waitpid(s.pid, &st, WNOHANG) == s.pid;
        usleep(50000);
    }
    double took = now_s() - t0;
    cr_expect_lt(took, 10.0, "the server took %.1f s to stop", took);
    if (!exited) {
        kill(s.pid, SIGKILL);
        waitpid(s.pid, &st, 0);
    }
    cr_expect(exited && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the server did not stop cleanly");
    const int fds[] = {running, waiting};
    for (int i = 0; i < 2; i++) {
        char *b;
        int status = read_answer(fds[i], &b, 5.0);
        cr_expect_eq(status, 503, "%s request: %d %s", i ? "waiting" : "running", status, b);
        cr_expect(strstr(b, "{\"error\":{") && strstr(b, "stopping"), "%s request: %s", i ? "waiting" : "running", b);
        free(b);
        close(fds[i]);
    }
}

/* The documented limit: a client that shuts its side for writing once its request is sent (nc -N) and waits
** to read looks, to the server, like one that closed its connection (the same FIN): a long request's
** connection is closed unanswered within about the first look (0.2 s), not answered, and the model is free
** for the next request at once. */
Test(serve_gone, a_half_closed_client_is_taken_for_gone, .fini = teardown, .timeout = 200)
{
    struct server s;
    shell_setup("serve-gone-halfclose");
    server_start(&s, "--timeout 30");
    double t0 = now_s();
    int fd = send_request(s.port, long_req);
    shutdown(fd, SHUT_WR);
    char *b;
    int status = read_answer(fd, &b, 20.0);
    double took = now_s() - t0;
    close(fd);
    cr_expect_eq(status, 0, "a half-closed client was answered %d: %s", status, b);
    cr_expect_str_eq(b, "");
    cr_expect_lt(took, 10.0, "the connection stayed open %.1f s", took);
    free(b);
    t0 = now_s();
    cr_expect_eq(http(s.port, "POST", "/v1/completions", "{\"prompt\":[1,403],\"max_tokens\":2,\"temperature\":0}",
                      &b), 200, "%s", b);
    took = now_s() - t0;
    cr_expect_lt(took, 10.0, "the next request waited %.1f s behind the abandoned one", took);
    free(b);
    cr_expect_eq(server_stop(&s), 0);
}
