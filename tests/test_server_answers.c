/*
** tests/test_server_answers.c - what a sweep does with a server's bad answers.
** A fake OpenAI-compatible server (a forked process on a socket bound here,
** one connection at a time) answers each completion as its mode says: every
** log-probability -0.5 and every generated id 300 when it behaves, or one
** thing wrong. A wrong answer fails its cell, naming what was wrong; it is
** never stored as a number (docs/servers.md).
*/
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/shell.h"

enum mode { GOOD, DROP_FIRST, EXTRA_FIRST, MINUS_INF, POSITIVE, OOV, BAD_ID, PROBE_400, ERROR_200, KEYED };

struct fake {
    pid_t pid;
    int port;
};

static void reply(int fd, int status, const char *body)
{
    char head[256];
    snprintf(head, sizeof head, "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
             "Connection: close\r\n\r\n", status, strlen(body));
    if (write(fd, head, strlen(head)) < 0 || write(fd, body, strlen(body)) < 0)
        _exit(3);
}

/* The number after "key": in a JSON body, else dflt. */
static long body_long(const char *body, const char *key, long dflt)
{
    const char *p = strstr(body, key);
    return p ? strtol(p + strlen(key), NULL, 10) : dflt;
}

/* The ids in "prompt":[...]. */
static long prompt_len(const char *body)
{
    const char *p = strstr(body, "\"prompt\":[");
    long n = 1;
    for (p = p ? p + 10 : ""; *p && *p != ']'; p++)
        n += *p == ',';
    return n;
}

/* The answer to one request: /models lists "fake"; a completion with echo
** has the prompt's log-probabilities (null first) and the generated ones',
** and the generated ids as vLLM spells them (token_id:N). */
static void answer(int fd, const char *req, const char *body, enum mode m)
{
    int echo = strstr(body, "\"echo\":true") != NULL;
    if (m == KEYED && !strcasestr(req, "\r\nAuthorization: Bearer sk-test-123\r\n"))
        return reply(fd, 401, "{\"error\":{\"message\":\"no valid API key\"}}");
    if (strncmp(req, "GET ", 4) == 0 && strstr(req, "/models"))
        return reply(fd, 200, "{\"object\":\"list\",\"data\":[{\"id\":\"fake\",\"object\":\"model\"}]}");
    if (!strstr(req, "/completions"))
        return reply(fd, 404, "{\"error\":{\"message\":\"no such route\"}}");
    if (m == PROBE_400 && echo)
        return reply(fd, 400, "{\"error\":{\"message\":\"Only no echo is supported\","
                     "\"type\":\"invalid_request_error\"}}");
    if (m == ERROR_200)
        return reply(fd, 200, "{\"error\":{\"message\":\"the engine is asleep\"}}");
    long n = prompt_len(body), gen = body_long(body, "\"max_tokens\":", 16);
    if (n <= 4 && m != PROBE_400)
        m = GOOD;   /* lenx's 4-token probe of what the server gives: the cells' requests go wrong */
    static char out[1 << 20];
    size_t k = (size_t)snprintf(out, sizeof out, "{\"choices\":[{\"index\":0,\"text\":\"\","
                                "\"finish_reason\":\"length\",\"logprobs\":{\"tokens\":[");
    for (long i = 0; i < gen; i++)
        k += (size_t)snprintf(out + k, sizeof out - k, "%s\"token_id:%s\"", i ? "," : "",
                              m == OOV ? "5000" : m == BAD_ID ? "abc" : "300");
    k += (size_t)snprintf(out + k, sizeof out - k, "],\"token_logprobs\":[");
    long n_lp = echo ? n + gen : gen;
    for (long i = 0; i < n_lp + (m == EXTRA_FIRST && echo); i++) {
        const char *v = i == 0 && echo && m != DROP_FIRST ? "null" : i == 2 && m == MINUS_INF ? "-9999.0"
                        : i == 2 && m == POSITIVE ? "5.0" : "-0.5";
        if (!(i == 0 && m == DROP_FIRST && echo))
            k += (size_t)snprintf(out + k, sizeof out - k, "%s%s", out[k - 1] == '[' ? "" : ",", v);
    }
    snprintf(out + k, sizeof out - k, "]}}]}");
    reply(fd, 200, out);
}

/* Read one request (headers, then Content-Length bytes of body) and answer it. */
static void serve_one(int fd, enum mode m)
{
    static char buf[1 << 20];
    size_t got = 0;
    char *end = NULL;
    while (!end && got < sizeof buf - 1) {
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r <= 0)
            return;
        got += (size_t)r, buf[got] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    if (!end)
        return;
    long len = 0;
    for (char *p = buf; p < end; p++)
        if (strncasecmp(p, "\r\nContent-Length:", 17) == 0)
            len = strtol(p + 17, NULL, 10);
    if (strcasestr(buf, "\r\nExpect: 100-continue") && write(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
        return;
    size_t want = (size_t)(end + 4 - buf) + (size_t)len;
    while (got < want && got < sizeof buf - 1) {
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r <= 0)
            return;
        got += (size_t)r, buf[got] = '\0';
    }
    end[2] = '\0';      /* the headers, then the body */
    answer(fd, buf, end + 4, m);
}

static void fake_start(struct fake *f, enum mode m)
{
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    cr_assert_geq(s, 0);
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof a;
    cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(s, 16), 0);
    cr_assert_eq(getsockname(s, (struct sockaddr *)&a, &n), 0);
    f->port = ntohs(a.sin_port);
    f->pid = fork();
    cr_assert_geq(f->pid, 0);
    if (f->pid == 0) {
        for (;;) {
            int c = accept(s, NULL, NULL);
            if (c < 0)
                _exit(0);
            serve_one(c, m);
            close(c);
        }
    }
    close(s);
}

static void fake_stop(struct fake *f)
{
    kill(f->pid, SIGKILL);
    waitpid(f->pid, NULL, 0);
}

/* A sweep of `tasks` on the fake (stories260K's tokenizer, no retries) at length 256. */
static void write_sweep(const struct fake *f, const char *tasks)
{
    char y[2048];
    snprintf(y, sizeof y, "name: fake\nseed: 1\nmodels:\n  s: {server: {url: \"http://127.0.0.1:%d/v1\", tokenizer: "
             "%s/../shared/models/stories260K/tok512.bin, retries: 0, timeout: 30, concurrency: 1}}\n"
             "methods: [none]\ntasks:\n%slengths: [256]\n", f->port, getenv("LENX_ROOT"), tasks);
    write_file("s.yaml", y);
}

static const char both[] = "  - ppl: {corpus: stories, windows: 1}\n  - passkey: {samples: 1}\n";

/* The status and error of the cell of `task`. */
static void cell(const char *task, char *status, size_t ns, char *error, size_t ne)
{
    char q[256];
    snprintf(q, sizeof q, "SELECT status FROM runs WHERE task LIKE '%s%%'", task);
    sql_text(status, ns, "r.db", q);
    snprintf(q, sizeof q, "SELECT coalesce(error, '') FROM runs WHERE task LIKE '%s%%'", task);
    sql_text(error, ne, "r.db", q);
}

/* Run the sweep on a fake in mode m; the ppl and passkey cells' status and error. */
static int run_on(enum mode m, char st[2][16], char er[2][1024])
{
    struct fake f;
    fake_start(&f, m);
    write_sweep(&f, both);
    char out[8192];
    int rc = sh(out, sizeof out, "rm -f r.db; $L run s.yaml --db r.db --quiet --no-table");
    fake_stop(&f);
    cr_expect(exists("r.db"), "mode %d: %s", (int)m, out);
    cell("ppl", st[0], 16, er[0], 1024);
    cell("passkey", st[1], 16, er[1], 1024);
    return rc;
}

/* A server that behaves: both cells ok, and the ppl is exactly what it said. */
Test(server_answers, a_good_answer_is_read_as_sent, .fini = teardown, .timeout = 120)
{
    shell_setup("fake-good");
    char st[2][16], er[2][1024];
    cr_expect_eq(run_on(GOOD, st, er), 0);
    cr_expect_str_eq(st[0], "ok", "%s", er[0]);
    cr_expect_str_eq(st[1], "ok", "%s", er[1]);
    cr_expect_eq(sql_long("r.db", "SELECT count(*) FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.task "
                                  "LIKE 'ppl%' AND ((m.name = 'nll' AND m.value = 0.5) OR (m.name = 'n_tokens' AND "
                                  "m.value = 256))"), 2, "every log-probability was -0.5, of 256 tokens");
}

/* Log-probabilities shifted, one too many, -inf written as -9999, above 0:
** the ppl cell fails naming it, the passkey cell is ok. */
Test(server_answers, bad_log_probabilities_fail_the_cell, .fini = teardown, .timeout = 240)
{
    shell_setup("fake-lp");
    static const struct { enum mode m; const char *says; } cases[] = {
        {DROP_FIRST, "the echo's first log-probability is a number, not null"},
        {EXTRA_FIRST, "log-probabilities, not 25"},    /* 256 tokens (ppl), 257 (passkey) */
        {MINUS_INF, "token 2 of an echoed window has log-probability -9999 (vLLM's -inf)"},
        {POSITIVE, "token 2 of an echoed window has log-probability 5, above 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char st[2][16], er[2][1024];
        cr_expect_neq(run_on(cases[i].m, st, er), 0, "case %zu", i);
        cr_expect_str_eq(st[0], "failed", "case %zu", i);
        cr_expect(strstr(er[0], cases[i].says) != NULL, "case %zu: %s", i, er[0]);
        cr_expect_str_eq(st[1], "failed", "case %zu: %s", i, er[1]);   /* its answer_logprob reads the echo */
        cr_expect(strstr(er[1], cases[i].says) != NULL, "case %zu: %s", i, er[1]);
        cr_expect_eq(sql_long("r.db", "SELECT count(*) FROM metrics m JOIN runs r ON r.id = m.run_id "
                                      "WHERE r.status = 'failed'"), 0, "a failed cell stores no metric");
    }
}

/* Generated ids outside the vocabulary or not ids at all fail the passkey
** cell (they were read as ids 5000 and 0, and stored as an answer). */
Test(server_answers, bad_generated_ids_fail_the_cell, .fini = teardown, .timeout = 240)
{
    shell_setup("fake-ids");
    static const struct { enum mode m; const char *says; } cases[] = {
        {OOV, "token 0 of a continuation is not an id of the vocabulary of 512 (5000)"},
        {BAD_ID, "token 0 of a continuation is not an id of the vocabulary of 512"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char st[2][16], er[2][1024];
        cr_expect_neq(run_on(cases[i].m, st, er), 0, "case %zu", i);
        cr_expect_str_eq(st[0], "ok", "case %zu: %s", i, er[0]);
        cr_expect_str_eq(st[1], "failed", "case %zu", i);
        cr_expect(strstr(er[1], cases[i].says) != NULL, "case %zu: %s", i, er[1]);
        cr_expect_eq(sql_long("r.db", "SELECT count(*) FROM outputs o JOIN runs r ON r.id = o.run_id "
                                      "WHERE r.status = 'failed'"), 0, "a failed cell stores no output");
    }
}

/* An older llama-server answers an echo with 400: generation still works
** (passkey runs), ppl is refused at plan time; an error object sent with
** HTTP 200 is named in the failed cell. */
Test(server_answers, echo_refused_and_error_with_200, .fini = teardown, .timeout = 120)
{
    shell_setup("fake-400");
    struct fake f;
    char out[8192], st[16], er[1024];
    fake_start(&f, PROBE_400);
    write_sweep(&f, "  - passkey: {samples: 1}\n");
    cr_expect_eq(sh(out, sizeof out, "$L run s.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cell("passkey", st, sizeof st, er, sizeof er);
    cr_expect_str_eq(st, "ok", "%s", er);
    write_sweep(&f, both);
    cr_expect_eq(sh(out, sizeof out, "$L run s.yaml --db r.db --quiet --no-table"), 2, "%s", out);
    cr_expect(strstr(out, "task 'ppl' on model 's' needs prompt log-probabilities"), "%s", out);
    fake_stop(&f);
    fake_start(&f, ERROR_200);
    write_sweep(&f, "  - passkey: {samples: 1}\n");
    cr_expect_neq(sh(out, sizeof out, "rm -f r.db; $L run s.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    fake_stop(&f);
    cr_expect(exists("r.db"));
    cell("passkey", st, sizeof st, er, sizeof er);
    cr_expect_str_eq(st, "failed");
    cr_expect(strstr(er, "the answer has no choices[0]: the engine is asleep"), "%s", er);
}

/* A server that wants an API key: api_key_env names the variable it is read
** from, and it goes as a Bearer header; neither the key nor a password in
** the URL reaches the store or a message. A variable that is not set is
** refused at the file's line. */
Test(server_answers, api_key_from_the_environment, .fini = teardown, .timeout = 120)
{
    shell_setup("fake-key");
    struct fake f;
    char out[8192], y[2048];
    fake_start(&f, KEYED);
    snprintf(y, sizeof y, "name: fake\nseed: 1\nmodels:\n  s: {server: {url: "
             "\"http://someone:pw-secret-9@127.0.0.1:%d/v1\", tokenizer: %s/../shared/models/stories260K/tok512.bin,"
             " retries: 0, timeout: 30, api_key_env: LENX_TEST_KEY}}\nmethods: [none]\ntasks:\n"
             "  - passkey: {samples: 1}\nlengths: [256]\n", f.port, getenv("LENX_ROOT"));
    write_file("s.yaml", y);
    cr_expect_eq(sh(out, sizeof out, "LENX_TEST_KEY=sk-test-123 $L run s.yaml --db r.db --quiet --no-table"), 0,
                 "%s", out);
    cr_expect_eq(sql_long("r.db", "SELECT count(*) FROM runs WHERE status = 'ok'"), 1);
    /* the key nowhere; the password (in the sweep file, stored as written) not in what names the server */
    cr_expect_eq(sh(out, sizeof out, "sqlite3 r.db .dump | grep -c sk-test-123"), 1, "the key is stored: %s", out);
    cr_expect_eq(sh(out, sizeof out, "sqlite3 -line r.db 'SELECT blas, error FROM runs; SELECT path FROM models' | "
                    "grep -e pw-secret-9 -e someone"), 1, "the password is in what names the server: %s", out);
    cr_expect_eq(sql_long("r.db", "SELECT count(*) FROM models WHERE path LIKE '%127.0.0.1%'"), 1);
    cr_expect_eq(sh(out, sizeof out, "sqlite3 r.db .dump | grep -c '127.0.0.1:%d/v1'", f.port), 0,
                 "the store names the server: %s", out);
    /* a wrong key: the server's 401 is named, the key is not */
    cr_expect_eq(sh(out, sizeof out, "LENX_TEST_KEY=sk-wrong $L run s.yaml --db w.db --quiet --no-table"), 2, "%s",
                 out);
    cr_expect(strstr(out, "HTTP 401: no valid API key") != NULL && !strstr(out, "sk-wrong") &&
              !strstr(out, "pw-secret-9"), "%s", out);
    /* no variable set */
    cr_expect_eq(sh(out, sizeof out, "env -u LENX_TEST_KEY $L run s.yaml --db n.db --quiet"), 2, "%s", out);
    cr_expect(strstr(out, "api_key_env names no variable set in this environment") != NULL, "%s", out);
    cr_expect(strstr(out, "s.yaml:4:") != NULL, "%s", out);
    fake_stop(&f);
}

