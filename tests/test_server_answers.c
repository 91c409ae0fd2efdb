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

enum mode {
    GOOD, DROP_FIRST, EXTRA_FIRST, MINUS_INF, POSITIVE, OOV, BAD_ID, PROBE_400, ERROR_200, KEYED,
    BOS_SHIFT,      /* vLLM-like: a start token prepended to the echo, the generated entry dropped */
    TOKENS_LONGER,  /* logprobs.tokens one longer than token_logprobs */
    INT_TOKENS,     /* logprobs.tokens as plain ids: read as ids */
    TEXT_TOKENS,    /* logprobs.tokens as text: not ids, lengths checked only */
    ERROR_CHOICES,  /* a good answer with an error object beside its choices */
    NO_CONTENT,     /* a continuation without token_ids, logprobs or text */
    EMPTY_IDS,      /* a continuation with token_ids [] and some text */
    STOP_OOV,       /* stopped at a stop_reason id outside the vocabulary */
    STOP_NEG,       /* ... at a negative stop_reason */
    ATTN_GOOD,      /* lenx serve's attention statistics: entropy 2 over 4 rows */
    ATTN_NEG,       /* a negative entropy */
    ATTN_ROWS0,     /* 0 rows */
    HANG,           /* no answer to the cells' requests */
    NOT_JSON,       /* an HTML page with HTTP 200 */
    PROBE_SHIFT,    /* BOS_SHIFT on every echo, the 4-token probe's too */
    LP_SHIFT,       /* token_logprobs as BOS_SHIFT's, its tokens and top_logprobs as sent */
    IDS_MORE,       /* 300 ids, more than any max_tokens asked */
};

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

/* The ids in "prompt":[...] into ids (at most max); their count. */
static long prompt_ids(const char *body, long *ids, long max)
{
    const char *p = strstr(body, "\"prompt\":[");
    long n = 0;
    for (p = p ? p + 10 : "]"; *p && *p != ']' && n < max; n++) {
        char *end;
        ids[n] = strtol(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* The tokens of an echo as the request asks (token_id:N, else text) or as
** the mode spells them; the prompt's, from position `from` (BOS_SHIFT: 1
** first), then gen generated ones. */
static size_t put_tokens(char *out, size_t cap, const char *body, const long *ids, long n, long gen, enum mode m)
{
    int as_id = strstr(body, "\"return_tokens_as_token_ids\":true") != NULL;
    size_t k = 0;
    long n_tok = n + gen + (m == TOKENS_LONGER) - (m == BOS_SHIFT);
    for (long i = 0; i < n_tok; i++) {
        long id = m == BOS_SHIFT ? (i ? ids[i - 1] : 1) : i < n ? ids[i] : 300;
        k += (size_t)(m == TEXT_TOKENS || !as_id ? snprintf(out + k, cap - k, "%s\"x\"", i ? "," : "")
                      : m == INT_TOKENS ? snprintf(out + k, cap - k, "%s%ld", i ? "," : "", id)
                      : snprintf(out + k, cap - k, "%s\"token_id:%ld\"", i ? "," : "", id));
    }
    return k;
}

/* The echo's top_logprobs (with tokens as ids): null first, then each
** position's own token at -0.5 (vLLM and lenx serve put it first). */
static size_t put_top(char *out, size_t cap, const char *body, const long *ids, long n, long gen)
{
    size_t k = (size_t)snprintf(out, cap, ",\"top_logprobs\":[null");
    for (long i = 1; i < n + gen && strstr(body, "\"return_tokens_as_token_ids\":true"); i++)
        k += (size_t)snprintf(out + k, cap - k, ",{\"token_id:%ld\":-0.5}", i < n ? ids[i] : 300);
    return k + (size_t)snprintf(out + k, cap - k, "]");
}

/* A continuation as the mode spells it, or NULL for the usual one. */
static const char *odd_continuation(enum mode m)
{
    switch (m) {
    case NO_CONTENT: return "{\"choices\":[{\"index\":0,\"finish_reason\":\"length\"}]}";
    case EMPTY_IDS: return "{\"choices\":[{\"index\":0,\"text\":\"hello\",\"token_ids\":[],"
                           "\"finish_reason\":\"length\"}]}";
    case STOP_OOV: return "{\"choices\":[{\"index\":0,\"text\":\"\",\"token_ids\":[300],\"finish_reason\":\"stop\","
                          "\"stop_reason\":100000}]}";
    case STOP_NEG: return "{\"choices\":[{\"index\":0,\"text\":\"\",\"token_ids\":[300],\"finish_reason\":\"stop\","
                          "\"stop_reason\":-7}]}";
    case IDS_MORE: {
        static char many[4096];
        size_t k = (size_t)snprintf(many, sizeof many, "{\"choices\":[{\"index\":0,\"text\":\"\",\"token_ids\":[300");
        for (int i = 1; i < 300; i++)
            k += (size_t)snprintf(many + k, sizeof many - k, ",300");
        snprintf(many + k, sizeof many - k, "],\"finish_reason\":\"length\"}]}");
        return many;
    }
    default: return NULL;
    }
}

/* The echo's token_logprobs: null first, every other -0.5, or wrong as the mode says. */
static size_t put_logprobs(char *out, size_t cap, long n_lp, int echo, enum mode m)
{
    size_t k = 0;
    for (long i = 0; i < n_lp + (m == EXTRA_FIRST && echo) - (m == BOS_SHIFT && echo); i++) {
        const char *v = i == 0 && echo && m != DROP_FIRST ? "null" : i == 2 && m == MINUS_INF ? "-9999.0"
                        : i == 2 && m == POSITIVE ? "5.0" : i == 1 && (m == BOS_SHIFT || m == LP_SHIFT) ? "-5.0"
                        : "-0.5";
        if (!(i == 0 && m == DROP_FIRST && echo))
            k += (size_t)snprintf(out + k, cap - k, "%s%s", k == 0 ? "" : ",", v);
    }
    return k;
}

/* The answer to one request: /models lists "fake" (with lenx serve's member
** in the ATTN modes); a completion with echo has the prompt's
** log-probabilities (null first) and the generated ones', its tokens as
** asked, and the generated ids as vLLM spells them (token_id:N). */
static void answer(int fd, const char *req, const char *body, enum mode m)
{
    int echo = strstr(body, "\"echo\":true") != NULL, attn = m == ATTN_GOOD || m == ATTN_NEG || m == ATTN_ROWS0;
    if (m == KEYED && !strcasestr(req, "\r\nAuthorization: Bearer sk-test-123\r\n"))
        return reply(fd, 401, "{\"error\":{\"message\":\"no valid API key\"}}");
    if (strncmp(req, "GET ", 4) == 0 && strstr(req, "/models"))
        return reply(fd, 200, attn ? "{\"data\":[{\"id\":\"fake\",\"object\":\"model\",\"lenx\":{}}]}"
                                   : "{\"object\":\"list\",\"data\":[{\"id\":\"fake\",\"object\":\"model\"}]}");
    if (!strstr(req, "/completions"))
        return reply(fd, 404, "{\"error\":{\"message\":\"no such route\"}}");
    if (m == PROBE_400 && echo)
        return reply(fd, 400, "{\"error\":{\"message\":\"Only no echo is supported\","
                     "\"type\":\"invalid_request_error\"}}");
    if (m == ERROR_200)
        return reply(fd, 200, "{\"error\":{\"message\":\"the engine is asleep\"}}");
    static long ids[1 << 16];
    long n = prompt_ids(body, ids, 1 << 16), gen = body_long(body, "\"max_tokens\":", 16);
    if (m == PROBE_SHIFT)
        m = BOS_SHIFT;
    else if (n <= 4 && m != PROBE_400)
        m = attn ? ATTN_GOOD : GOOD;    /* lenx's 4-token probe of what the server gives: the cells' go wrong */
    if (m == BOS_SHIFT && echo && n > 4) {    /* the window's token 1, which the shifted echo misplaces */
        char path[128];
        snprintf(path, sizeof path, "%s/p1", dir);
        FILE *f = fopen(path, "a");
        if (f)
            fprintf(f, "%ld\n", ids[1]), fclose(f);
    }
    if (m == HANG) {
        sleep(3);
        return;
    }
    if (m == NOT_JSON)
        return reply(fd, 200, "<html><body>502 Bad Gateway</body></html>");
    if (!echo && odd_continuation(m))
        return reply(fd, 200, odd_continuation(m));
    static char out[1 << 20];
    size_t k = (size_t)snprintf(out, sizeof out, "{\"choices\":[{\"index\":0,\"text\":\"\","
                                "\"finish_reason\":\"length\",\"logprobs\":{\"tokens\":[");
    if (echo)
        k += put_tokens(out + k, sizeof out - k, body, ids, n, gen, m);
    for (long i = 0; i < gen && !echo; i++)
        k += (size_t)snprintf(out + k, sizeof out - k, "%s\"token_id:%s\"", i ? "," : "",
                              m == OOV ? "5000" : m == BAD_ID ? "abc" : "300");
    k += (size_t)snprintf(out + k, sizeof out - k, "],\"token_logprobs\":[");
    k += put_logprobs(out + k, sizeof out - k, echo ? n + gen : gen, echo, m);
    k += (size_t)snprintf(out + k, sizeof out - k, "]");
    if (echo && (m == GOOD || m == LP_SHIFT))
        k += put_top(out + k, sizeof out - k, body, ids, n, gen);
    k += (size_t)snprintf(out + k, sizeof out - k, "}");
    if (attn && echo)
        k += (size_t)snprintf(out + k, sizeof out - k, ",\"lenx\":{\"attention_entropy\":%s,\"attention_rows\":%s}",
                              m == ATTN_NEG ? "-5.0" : "2.0", m == ATTN_ROWS0 ? "0" : "4");
    snprintf(out + k, sizeof out - k, "}]%s}", m == ERROR_CHOICES ? ",\"error\":{\"message\":\"KV cache evicted\"}"
                                                                  : "");
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

/* A sweep of `tasks` on the fake (stories260K's tokenizer) at length 256, with
** the server entry's keys (retries, timeout, concurrency). */
static void write_sweep_keys(const struct fake *f, const char *tasks, const char *keys)
{
    char y[2048];
    snprintf(y, sizeof y, "name: fake\nseed: 1\nmodels:\n  s: {server: {url: \"http://127.0.0.1:%d/v1\", tokenizer: "
             "%s/../shared/models/stories260K/tok512.bin, %s}}\n"
             "methods: [none]\ntasks:\n%slengths: [256]\n", f->port, getenv("LENX_ROOT"), keys, tasks);
    write_file("s.yaml", y);
}

/* ... with no retries. */
static void write_sweep(const struct fake *f, const char *tasks)
{
    write_sweep_keys(f, tasks, "retries: 0, timeout: 30, concurrency: 1");
}

static const char both[] = "  - ppl: {corpus: stories, windows: 1}\n  - passkey: {samples: 1}\n";

/* The status and error (on one line) of the cell of `task`. */
static void cell(const char *task, char *status, size_t ns, char *error, size_t ne)
{
    char q[256];
    snprintf(q, sizeof q, "SELECT status FROM runs WHERE task LIKE '%s%%'", task);
    sql_text(status, ns, "r.db", q);
    snprintf(q, sizeof q, "SELECT replace(coalesce(error, ''), char(10), ' ') FROM runs WHERE task LIKE '%s%%'", task);
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
    cr_expect(strstr(er, "the answer is an error (HTTP 200): the engine is asleep"), "%s", er);
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
    cr_expect(strstr(out, "hint: ") && strstr(out, "api_key_env"), "a 401 hints at the key: %s", out);
    /* a password holding '@': the authority ends at its last '@' */
    snprintf(y, sizeof y, "name: fake\nseed: 1\nmodels:\n  s: {server: {url: \"http://someone:pw@secret-7@127.0.0.1:%d"
             "/v1\", tokenizer: %s/../shared/models/stories260K/tok512.bin, retries: 0, timeout: 30, api_key_env: "
             "LENX_TEST_KEY}}\nmethods: [none]\ntasks:\n  - passkey: {samples: 1}\nlengths: [256]\n", f.port,
             getenv("LENX_ROOT"));
    write_file("a.yaml", y);
    sh(out, sizeof out, "LENX_TEST_KEY=sk-wrong $L run a.yaml --db a.db --quiet --no-table");
    cr_expect(!strstr(out, "secret-7") && !strstr(out, "someone"), "the password is shown: %s", out);
    /* no variable set */
    cr_expect_eq(sh(out, sizeof out, "env -u LENX_TEST_KEY $L run s.yaml --db n.db --quiet"), 2, "%s", out);
    cr_expect(strstr(out, "api_key_env names no variable set in this environment") != NULL, "%s", out);
    cr_expect(strstr(out, "s.yaml:4:") != NULL, "%s", out);
    fake_stop(&f);
}


/* The ids the fake saw at position 1 of the echoed windows (BOS_SHIFT). */
static int says_p1(const char *er)
{
    char path[128], want[128];
    long p1;
    snprintf(path, sizeof path, "%s/p1", dir);
    FILE *f = fopen(path, "r");
    int found = 0;
    while (f && !found && fscanf(f, "%ld", &p1) == 1) {
        snprintf(want, sizeof want, "position 1 is id %ld in the window, id 1 in the echo", p1);
        found = strstr(er, want) != NULL;
    }
    if (f)
        fclose(f);
    return found;
}

/* A vLLM-like echo with a start token prepended and the generated entry
** dropped has the right length and null first: its tokens show the shift,
** and both cells fail naming the server, the position and both ids. A
** list of tokens longer than the log-probabilities fails too. */
Test(server_answers, an_echo_of_other_tokens_fails_the_cell, .fini = teardown, .timeout = 240)
{
    shell_setup("fake-shift");
    char st[2][16], er[2][1024];
    cr_expect_neq(run_on(BOS_SHIFT, st, er), 0);
    for (int c = 0; c < 2; c++) {
        cr_expect_str_eq(st[c], "failed", "cell %d: %s", c, er[c]);
        cr_expect(says_p1(er[c]), "cell %d: %s", c, er[c]);
        cr_expect(strstr(er[c], "server 's' (http://127.0.0.1:") && strstr(er[c], "hint: "), "cell %d: %s", c, er[c]);
    }
    cr_expect_eq(sql_long("r.db", "SELECT count(*) FROM metrics"), 0, "a failed cell stores no metric");
    cr_expect_neq(run_on(TOKENS_LONGER, st, er), 0);
    cr_expect_str_eq(st[0], "failed", "%s", er[0]);
    cr_expect(strstr(er[0], "lists 259 tokens and 258 log-probabilities"), "%s", er[0]);
    cr_expect_str_eq(st[1], "failed", "%s", er[1]);
    cr_expect(strstr(er[1], " log-probabilities"), "%s", er[1]);
    /* the log-probabilities shifted while the tokens and top_logprobs are as sent: they disagree */
    cr_expect_neq(run_on(LP_SHIFT, st, er), 0);
    for (int c = 0; c < 2; c++) {
        cr_expect_str_eq(st[c], "failed", "cell %d: %s", c, er[c]);
        cr_expect(strstr(er[c], "has log-probability -5 in token_logprobs and -0.5 in top_logprobs"), "cell %d: %s",
                  c, er[c]);
    }
    /* the probe when the sweep is read shows it: the server is refused for every task, at its line */
    struct fake f;
    char out[8192];
    fake_start(&f, PROBE_SHIFT);
    write_sweep(&f, "  - passkey: {samples: 1}\n");
    cr_expect_eq(sh(out, sizeof out, "rm -f r.db; $L run s.yaml --db r.db --quiet --no-table"), 2, "%s", out);
    fake_stop(&f);
    cr_expect(strstr(out, "s.yaml:4:") && strstr(out, "the echo does not score the window as sent: position 1 is id "),
              "%s", out);
}

/* Tokens given as plain ids are checked and read; tokens as text cannot be
** checked, so the lengths are (as documented): both score as sent. */
Test(server_answers, echo_tokens_as_ids_or_text, .fini = teardown, .timeout = 240)
{
    shell_setup("fake-toks");
    static const enum mode modes[] = {INT_TOKENS, TEXT_TOKENS};
    for (int i = 0; i < 2; i++) {
        char st[2][16], er[2][1024];
        cr_expect_eq(run_on(modes[i], st, er), 0, "mode %d", i);
        cr_expect_str_eq(st[0], "ok", "mode %d: %s", i, er[0]);
        cr_expect_str_eq(st[1], "ok", "mode %d: %s", i, er[1]);
        cr_expect_eq(sql_long("r.db", "SELECT count(*) FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.task "
                                      "LIKE 'ppl%' AND m.name = 'nll' AND m.value = 0.5"), 1, "mode %d", i);
    }
}

/* An error object beside good choices (HTTP 200) fails both cells with the
** server's message; nothing is stored. */
Test(server_answers, an_error_beside_choices_fails_the_cell, .fini = teardown, .timeout = 120)
{
    shell_setup("fake-errc");
    char st[2][16], er[2][1024];
    cr_expect_neq(run_on(ERROR_CHOICES, st, er), 0);
    for (int c = 0; c < 2; c++) {
        cr_expect_str_eq(st[c], "failed", "cell %d: %s", c, er[c]);
        cr_expect(strstr(er[c], "the answer is an error (HTTP 200): KV cache evicted"), "cell %d: %s", c, er[c]);
    }
    cr_expect_eq(sql_long("r.db", "SELECT count(*) FROM metrics"), 0);
}

/* A continuation with no ids and no text, ids [] beside some text, or a
** stop_reason that is no id of the vocabulary: the passkey cell fails (it
** was stored as an empty answer, or with the id as given). */
Test(server_answers, an_empty_or_odd_continuation_fails_the_cell, .fini = teardown, .timeout = 240)
{
    shell_setup("fake-empty");
    static const struct { enum mode m; const char *says; } cases[] = {
        {NO_CONTENT, "a continuation has neither token ids nor text"},
        {EMPTY_IDS, "a continuation has no token ids but the text \"hello\""},
        {STOP_OOV, "the stop_reason of a continuation, 100000, is not an id of the vocabulary of 512"},
        {STOP_NEG, "the stop_reason of a continuation, -7, is not an id of the vocabulary of 512"},
        {IDS_MORE, "a continuation has 300 token ids, more than the "},     /* they were cut without a word */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char st[2][16], er[2][1024];
        cr_expect_neq(run_on(cases[i].m, st, er), 0, "case %zu", i);
        cr_expect_str_eq(st[0], "ok", "case %zu: %s", i, er[0]);
        cr_expect_str_eq(st[1], "failed", "case %zu", i);
        cr_expect(strstr(er[1], cases[i].says) && strstr(er[1], "hint: "), "case %zu: %s", i, er[1]);
        cr_expect_eq(sql_long("r.db", "SELECT count(*) FROM outputs o JOIN runs r ON r.id = o.run_id "
                                      "WHERE r.status = 'failed'"), 0, "a failed cell stores no output");
    }
}

/* lenx serve's attention statistics: entropy 2 over 4 rows is stored as
** 0.5; a negative entropy or no rows fail the passkey cell. */
Test(server_answers, attention_statistics_are_checked, .fini = teardown, .timeout = 240)
{
    shell_setup("fake-attn");
    char st[2][16], er[2][1024];
    cr_expect_eq(run_on(ATTN_GOOD, st, er), 0);
    cr_expect_str_eq(st[1], "ok", "%s", er[1]);
    cr_expect_eq(sql_long("r.db", "SELECT count(*) FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.task "
                                  "LIKE 'passkey%' AND m.name = 'answer_entropy' AND m.value = 0.5"), 1);
    static const struct { enum mode m; const char *says; } cases[] = {
        {ATTN_NEG, "lenx.attention_entropy -5 over 4 rows"},
        {ATTN_ROWS0, "lenx.attention_entropy 2 over 0 rows"},
    };
    for (size_t i = 0; i < 2; i++) {
        cr_expect_neq(run_on(cases[i].m, st, er), 0, "case %zu", i);
        cr_expect_str_eq(st[0], "ok", "case %zu: %s", i, er[0]);
        cr_expect_str_eq(st[1], "failed", "case %zu", i);
        cr_expect(strstr(er[1], cases[i].says) && strstr(er[1], "hint: "), "case %zu: %s", i, er[1]);
        cr_expect_eq(sql_long("r.db", "SELECT count(*) FROM metrics m JOIN runs r ON r.id = m.run_id "
                                      "WHERE r.status = 'failed'"), 0, "case %zu", i);
    }
}

/* A server that takes requests and never answers: the request is not tried
** again (retries are for connection errors and 5xx), and the hint is the
** timeout, not whether the server runs. */
Test(server_answers, a_timeout_is_not_retried, .fini = teardown, .timeout = 120)
{
    shell_setup("fake-hang");
    struct fake f;
    char out[8192], st[16], er[1024];
    fake_start(&f, HANG);
    write_sweep_keys(&f, "  - ppl: {corpus: stories, windows: 1}\n", "retries: 2, timeout: 1, concurrency: 1");
    cr_expect_neq(sh(out, sizeof out, "$L run s.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    fake_stop(&f);
    cell("ppl", st, sizeof st, er, sizeof er);
    cr_expect_str_eq(st, "failed");
    cr_expect(strstr(er, "no answer within the timeout of 1 s (tried once"), "%s", er);
    cr_expect(strstr(er, "hint: the server is slow or stuck: raise timeout:"), "%s", er);
    cr_expect(!strstr(er, "is the server running"), "%s", er);
}

/* Not JSON with HTTP 200: the message shows the start of the body and a
** hint for a server, not for a file. */
Test(server_answers, an_answer_that_is_not_json, .fini = teardown, .timeout = 120)
{
    shell_setup("fake-html");
    char st[2][16], er[2][1024];
    cr_expect_neq(run_on(NOT_JSON, st, er), 0);
    cr_expect_str_eq(st[0], "failed");
    cr_expect(strstr(er[0], "the answer is not JSON") && strstr(er[0], "<html><body>502 Bad Gateway"), "%s", er[0]);
    cr_expect(!strstr(er[0], "is this a JSON file") && strstr(er[0], "hint: "), "%s", er[0]);
}

/* concurrency and retries are whole numbers and timeout a decimal number,
** refused at their file:line:column. */
Test(server_answers, server_numbers_are_checked, .fini = teardown, .timeout = 120)
{
    shell_setup("fake-nums");
    struct fake f;
    char out[8192];
    fake_start(&f, GOOD);
    static const struct { const char *keys, *says; } cases[] = {
        {"concurrency: 1.5", "model 's' server: 'concurrency' must be a whole number in [1, 256]"},
        {"retries: 2.5", "model 's' server: 'retries' must be a whole number in [0, 20]"},
        {"timeout: 0x10", "model 's' server: 'timeout' must be a number in [1, 86400]"},
    };
    for (int i = 0; i < 3; i++) {
        write_sweep_keys(&f, "  - passkey: {samples: 1}\n", cases[i].keys);
        cr_expect_eq(sh(out, sizeof out, "rm -f r.db; $L run s.yaml --db r.db --quiet --no-table"), 2, "case %d: %s",
                     i, out);
        cr_expect(strstr(out, cases[i].says) && strstr(out, "s.yaml:4:"), "case %d: %s", i, out);
    }
    fake_stop(&f);
}
