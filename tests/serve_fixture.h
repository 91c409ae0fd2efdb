/*
** tests/serve_fixture.h - `lenx serve` started by a test on a free loopback
** port, and raw HTTP/1.1 requests to it over a socket (what a hostile client
** sends, byte for byte). Header-only, for tests/test_serve.c.
*/
#ifndef LX_TEST_SERVE_FIXTURE_H
#define LX_TEST_SERVE_FIXTURE_H

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "tests/shell.h"

struct server {
    pid_t pid;
    int port;
};

/* lenx serve on stories260K (portable numerics, the stack compiled at
** length 256) plus extra arguments (space-separated, may be ""); its port
** from --port-file. */
static void server_start(struct server *s, const char *extra)
{
    char port_file[128], model[512], cmd[2048];
    snprintf(port_file, sizeof port_file, "%s/port-%d", dir, (int)time(NULL) ^ rand());
    snprintf(model, sizeof model, "%s/../shared/models/stories260K/stories260K.bin", getenv("LENX_ROOT"));
    snprintf(cmd, sizeof cmd, "exec '%s' serve --model '%s' --port 0 --port-file '%s' --portable --length 256 %s "
             ">/dev/null 2>>'%s/serve.log'", getenv("LENX_BIN"), model, port_file, extra, dir);
    s->pid = fork();
    cr_assert_geq(s->pid, 0);
    if (s->pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 600; i++) {     /* up to 60 s for the model to load */
        FILE *f = fopen(port_file, "r");
        if (f && fscanf(f, "%d", &s->port) == 1) {
            fclose(f);
            return;
        }
        if (f)
            fclose(f);
        int st;
        cr_assert_eq(waitpid(s->pid, &st, WNOHANG), 0, "lenx serve exited before listening (see %s/serve.log)", dir);
        usleep(100000);
    }
    cr_assert_fail("lenx serve did not write its port");
}

/* SIGTERM, and the exit status (0: it stopped cleanly). */
static int server_stop(struct server *s)
{
    int st = 0;
    kill(s->pid, SIGTERM);
    waitpid(s->pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect to port %d", port);
    return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0)
            return;     /* the server closed: the answer says why */
        p += k, n -= (size_t)k;
    }
}

/* Read an answer until the server closes (Connection: close), at most
** timeout_s; its status, its head (status line and headers) into *head
** when head is not NULL, body into *body (malloc'd). */
static int read_answer_head(int fd, char **head, char **body, double timeout_s)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (poll(&p, 1, (int)(timeout_s * 1000)) > 0) {
        if (len + 4096 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t k = recv(fd, buf + len, cap - len - 1, 0);
        if (k <= 0)
            break;
        len += (size_t)k;
    }
    buf[len] = '\0';
    int status = 0;
    sscanf(buf, "HTTP/1.%*d %d", &status);
    char *b = strstr(buf, "\r\n\r\n");
    *body = strdup(b ? b + 4 : "");
    if (head)
        *head = strndup(buf, b ? (size_t)(b - buf) : len);
    free(buf);
    return status;
}

static int read_answer(int fd, char **body, double timeout_s)
{
    return read_answer_head(fd, NULL, body, timeout_s);
}

/* One request: method, path, body (NULL: none); the status, the body. */
static int http(int port, const char *method, const char *path, const char *body, char **out)
{
    int fd = connect_to(port);
    char head[512];
    size_t n = body ? strlen(body) : 0;
    snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", method, path, n);
    send_all(fd, head, strlen(head));
    if (body)
        send_all(fd, body, n);
    int status = read_answer(fd, out, 120.0);
    close(fd);
    return status;
}

#endif
