/*
** tests/test_serve.c - `lenx serve` and the server backend (docs/servers.md):
** the request parser on good and hostile bodies; a sweep through lenx serve
** storing the same bits as in-process; malformed, huge, long, concurrent
** and stalled clients; a server that dies mid-sweep; a real third-party
** client (the OpenAI SDK for Node, tests/node/openai_sdk.mjs); the HTTP
** server's queue under a handler the test holds.
*/
#include "tests/serve_fixture.h"

#include <pthread.h>

#include "harness/backends/httpd.h"
#include "harness/backends/openai.h"
#include "harness/core/json.h"

/* ---- the parser ---------------------------------------------------------------- */

static int parse(const char *body, struct lx_oai_completion *r, struct lx_oai_err *e)
{
    struct lx_oai_limits lim = {.vocab = 512, .max_len = 1000};
    memset(e, 0, sizeof *e);
    return lx_oai_completion_parse(r, body, strlen(body), &lim, e);
}

Test(serve_parse, prompt_shapes)
{
    struct lx_oai_completion r;
    struct lx_oai_err e;
    cr_assert_eq(parse("{\"prompt\":\"hi\"}", &r, &e), LX_OK, "%s", e.msg);
    cr_expect_eq(r.n_prompts, 1);
    cr_expect_eq(r.prompt[0].len, 2);
    cr_expect_eq(r.max_tokens, 16);     /* OpenAI's defaults */
    cr_expect_eq(r.temperature, 1.0);
    cr_expect_eq(r.logprobs, -1);
    lx_oai_completion_release(&r);
    /* lm-eval's local-completions: a list of one list of ids, echo, logprobs, max_tokens 1, a seed */
    cr_assert_eq(parse("{\"model\":\"m\",\"prompt\":[[1,2,3]],\"echo\":true,\"logprobs\":1,\"max_tokens\":1,"
                       "\"temperature\":0,\"seed\":1234}", &r, &e), LX_OK, "%s", e.msg);
    cr_expect_eq(r.n_prompts, 1);
    cr_expect_eq(r.prompt[0].n, 3);
    cr_expect_eq(r.prompt[0].ids[2], 3);
    cr_expect(r.echo && r.logprobs == 1 && r.max_tokens == 1 && r.temperature == 0.0 && r.seed == 1234);
    lx_oai_completion_release(&r);
    cr_assert_eq(parse("{\"prompt\":[5,6],\"seed\":-1,\"stop\":[\"\\n\",\"Q:\"]}", &r, &e), LX_OK, "%s", e.msg);
    cr_expect_eq(r.seed, UINT64_MAX);   /* a negative seed: its 64 bits */
    cr_expect_eq(r.n_stop, 2);
    lx_oai_completion_release(&r);
    cr_assert_eq(parse("{\"prompt\":[\"a\",\"b\",\"c\"]}", &r, &e), LX_OK, "%s", e.msg);
    cr_expect_eq(r.n_prompts, 3);
    lx_oai_completion_release(&r);
    /* an ignored field holding an integer past int64: the others are still integers */
    cr_assert_eq(parse("{\"prompt\":[1,403,5],\"max_tokens\":5,\"user\":99999999999999999999}", &r, &e), LX_OK,
                 "%s", e.msg);
    cr_expect(r.prompt[0].n == 3 && r.prompt[0].ids[1] == 403 && r.max_tokens == 5);
    lx_oai_completion_release(&r);
}

/* POST /tokenize: "prompt", or llama-server's "content" when prompt is absent or null */
Test(serve_parse, tokenize_reads_prompt_or_content)
{
    static const struct {
        const char *body, *text;
    } ok[] = {
        {"{\"prompt\":\"hi\"}", "hi"},
        {"{\"content\":\"ho\"}", "ho"},
        {"{\"prompt\":null,\"content\":\"ha\"}", "ha"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        void *doc;
        const char *text;
        size_t len;
        int special;
        struct lx_oai_err e = {0};
        cr_assert_eq(lx_oai_tokenize_parse(&doc, ok[i].body, strlen(ok[i].body), &text, &len, &special, &e), LX_OK,
                     "%s: %s", ok[i].body, e.msg);
        cr_expect(len == 2 && memcmp(text, ok[i].text, 2) == 0 && special == 1, "%s", ok[i].body);
        lx_oai_doc_free(doc);
    }
}

/* POST /tokenize's refusals name the field the body holds (llama-server's "content" when it sent that), in
** param and in the message alike, and say when the text is missing. */
Test(serve_parse, tokenize_refusals_name_the_field)
{
    static const struct {
        const char *body, *param, *says;
    } bad[] = {
        {"{}", "prompt", "'prompt' is required"},
        {"{\"prompt\":5}", "prompt", "'prompt' must be a string"},
        {"{\"content\":5}", "content", "'content' must be a string"},
        {"{\"prompt\":null,\"content\":[]}", "content", "'content' must be a string"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        void *doc;
        const char *text;
        size_t len;
        int special;
        struct lx_oai_err e = {0};
        cr_expect_eq(lx_oai_tokenize_parse(&doc, bad[i].body, strlen(bad[i].body), &text, &len, &special, &e),
                     LX_EINVAL, "%s was accepted", bad[i].body);
        cr_expect_str_eq(e.param, bad[i].param, "%s: param '%s'", bad[i].body, e.param);
        cr_expect(strstr(e.msg, bad[i].says), "%s: '%s' does not say '%s'", bad[i].body, e.msg, bad[i].says);
    }
}

Test(serve_parse, refusals_name_the_field)
{
    static const struct {
        const char *body, *param, *says;
        int status;
    } bad[] = {
        {"{\"prompt\":[1,2", "", "not JSON", 400},
        {"[1,2,3]", "", "JSON object", 400},
        {"{}", "prompt", "required", 400},
        {"{\"prompt\":[]}", "prompt", "empty list", 400},
        {"{\"prompt\":[1,512]}", "prompt", "[0, 512)", 400},
        {"{\"prompt\":[1,-3]}", "prompt", "[0, 512)", 400},
        {"{\"prompt\":[1,2.5]}", "prompt", "a number", 400},
        {"{\"prompt\":[[1],\"x\"]}", "prompt", "prompt[1]", 400},
        {"{\"prompt\":\"x\",\"max_tokens\":-5}", "max_tokens", "-5", 400},
        {"{\"prompt\":\"x\",\"max_tokens\":\"8\"}", "max_tokens", "integer", 400},
        {"{\"prompt\":[1,2],\"max_tokens\":999}", "max_tokens", "more than the 1000", 400},
        {"{\"prompt\":\"x\",\"temperature\":-1}", "temperature", "[0, 100]", 400},
        {"{\"prompt\":\"x\",\"logprobs\":21}", "logprobs", "[0, 20]", 400},
        {"{\"prompt\":\"x\",\"n\":2}", "n", "[1, 1]", 400},
        {"{\"prompt\":\"x\",\"stream\":true,\"logprobs\":1}", "logprobs", "not streamed", 400},
        {"{\"prompt\":\"x\",\"stream\":true,\"lenx_attention_from\":1}", "lenx_attention_from", "not streamed", 400},
        {"{\"prompt\":\"x\",\"stream\":1}", "stream", "true or false", 400},
        {"{\"prompt\":\"x\",\"stream_options\":{\"include_usage\":true}}", "stream_options", "only read", 400},
        {"{\"prompt\":\"x\",\"stream\":true,\"stream_options\":[]}", "stream_options", "an object", 400},
        {"{\"prompt\":\"x\",\"stream\":true,\"stream_options\":{\"include_usage\":2}}", "include_usage",
         "true or false", 400},
        {"{\"prompt\":\"x\",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "stop", "at most 4", 400},
        {"{\"prompt\":\"x\",\"stop\":\"\"}", "stop", "1 to 256", 400},
        {"{\"prompt\":\"x\",\"echo\":1}", "echo", "true or false", 400},
        {"{\"prompt\":\"x\",\"model\":\"m\\u0000evil\"}", "model", "NUL", 400},
        /* an integer past int64 is the field's own fault, not its neighbours' */
        {"{\"prompt\":[1,2],\"max_tokens\":5,\"seed\":18446744073709551616}", "seed",
         "'seed' is 1.8446744073709552e+19; it must be in [", 400},
        /* read as 1e20 (past int64): an integer out of range, not "must be an integer, not a number" */
        {"{\"prompt\":[1,2],\"max_tokens\":99999999999999999999}", "max_tokens",
         "'max_tokens' is 1e+20; it must be in [0, 1000]", 400},
        {"{\"prompt\":[1,2],\"max_tokens\":2.5}", "max_tokens", "must be an integer, not a number", 400},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct lx_oai_completion r;
        struct lx_oai_err e;
        cr_expect_eq(parse(bad[i].body, &r, &e), LX_EINVAL, "%s was accepted", bad[i].body);
        cr_expect_eq(e.status, bad[i].status, "%s: status %d", bad[i].body, e.status);
        cr_expect_str_eq(e.param, bad[i].param, "%s: param '%s'", bad[i].body, e.param);
        cr_expect(strstr(e.msg, bad[i].says), "%s: '%s' does not say '%s'", bad[i].body, e.msg, bad[i].says);
    }
    /* 65 prompts: more than a request may hold */
    char body[1024] = "{\"prompt\":[";
    for (int i = 0; i < 65; i++)
        strcat(body, i ? ",\"a\"" : "\"a\"");
    strcat(body, "]}");
    struct lx_oai_completion r;
    struct lx_oai_err e;
    cr_expect_eq(parse(body, &r, &e), LX_EINVAL);
    cr_expect(strstr(e.msg, "at most 64"), "%s", e.msg);
}

/* ---- a sweep through lenx serve --------------------------------------------------- */

/* The sweep of the acceptance check: ppl (through echo), passkey, needle,
** line and two peer presets (landmark's passkey, YaRN's truncated ppl) on stories260K at length
** 256, in portable numerics; MODEL is replaced by a checkpoint or a server. */
static const char sweep[] =
    "name: srv\nseed: 1\nnumerics: portable\nmodels:\n  s:\n    MODEL\n"
    "methods:\n  - [{rope: {layout: interleaved}}]\n"
    "tasks:\n  - ppl: {corpus: stories, windows: 2}\n  - passkey: {samples: 3}\n  - needle: {samples: 2}\n"
    "  - line: {samples: 2, template: short}\n  - passkey: {protocol: landmark}\n"
    "  - ppl: {corpus: stories, protocol: yarn_truncate, chunks: 2}\n"
    "lengths: [256]\n";

/* Every metric, series point and output of two stores, as text with every
** bit of each number (%!.17g), by task, length and seed: "same" three times. */
static const char compare[] =
    "m=\"SELECT r.task, r.length, r.seed, m.name, printf('%!.17g', m.value) FROM metrics m JOIN runs r ON "
    "r.id = m.run_id ORDER BY 1,2,3,4\"; "
    "o=\"SELECT r.task, r.length, o.sample, printf('%!.17g', o.depth), o.gold, hex(o.text), o.score, "
    "printf('%!.17g', o.logprob), o.stop FROM outputs o JOIN runs r ON r.id = o.run_id ORDER BY 1,2,3\"; "
    "s=\"SELECT r.task, r.length, s.series, printf('%!.17g', s.x), printf('%!.17g', s.y) FROM series s JOIN runs r "
    "ON r.id = s.run_id ORDER BY 1,2,3,4,5\"; "
    "for q in \"$m\" \"$o\" \"$s\"; do sqlite3 A.db \"$q\" > a.txt; sqlite3 B.db \"$q\" > b.txt; "
    "test -s a.txt && diff a.txt b.txt && echo same; done";

static void write_sweeps(int port, const char *server_extra)
{
    char local[2048], server[2048], model[700];
    snprintf(model, sizeof model, "checkpoint: %s/../shared/models/stories260K/stories260K.bin",
             getenv("LENX_ROOT"));
    const char *at = strstr(sweep, "MODEL");
    snprintf(local, sizeof local, "%.*s%s%s", (int)(at - sweep), sweep, model, at + 5);
    snprintf(model, sizeof model, "server: {url: \"http://127.0.0.1:%d/v1\", tokenizer: "
             "%s/../shared/models/stories260K/tok512.bin, served: [{rope: {layout: interleaved}}]%s}", port,
             getenv("LENX_ROOT"), server_extra);
    snprintf(server, sizeof server, "%.*s%s%s", (int)(at - sweep), sweep, model, at + 5);
    write_file("local.yaml", local);
    write_file("server.yaml", server);
}

Test(serve_sweep, stores_what_the_engine_stores, .fini = teardown)
{
    shell_setup("serve");
    struct server s;
    server_start(&s, "");
    write_sweeps(s.port, "");
    char out[8192];
    cr_assert_eq(sh(out, sizeof out, "$L run local.yaml --db A.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L run server.yaml --db B.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s", compare), 0, "%s", out);
    cr_expect_str_eq(out, "same\nsame\nsame\n");
    cr_expect_eq(sql_long("B.db", "SELECT count(*) FROM runs WHERE status = 'ok'"), 6);
    /* the server's identity is the model's config in the store: what it serves and with what */
    char cfg[4096];
    sql_text(cfg, sizeof cfg, "B.db", "SELECT config FROM models");
    cr_expect(strstr(cfg, "\\\"methods\\\":\\\"rope(layout=interleaved)\\\"") || strstr(cfg, "\"methods\":\"rope(layout=interleaved)\""),
              "%s", cfg);
    cr_expect(strstr(cfg, "a6942a27539975cffc70f3c296248789e3f903cc22f708676a5b5971d61bc36e"), "%s", cfg);
    /* a stack the server was not started with is refused at plan time */
    cr_assert_eq(sh(out, sizeof out, "sed 's/- \\[{rope: {layout: interleaved}}\\]/- [{rope: {layout: "
                    "interleaved}}, yarn]/' server.yaml > yarn.yaml && $L run yarn.yaml --db C.db"), 2, "%s", out);
    cr_expect(strstr(out, "would need lenx's engine") && strstr(out, "served: rope(layout=interleaved)"), "%s", out);
    /* so is a task that needs the engine itself */
    cr_assert_eq(sh(out, sizeof out, "sed 's/  - ppl: {corpus: stories, windows: 2}/  - attn: {}/' server.yaml > "
                    "attn.yaml && $L run attn.yaml --db C.db"), 2, "%s", out);
    cr_expect(strstr(out, "task 'attn' on model 's' needs lenx's engine"), "%s", out);
    /* a server computes in its own numerics (portable here, in its identity): a fast sweep plans the same
    ** cells (the sweep's numerics entered their keys) and records the server's numerics, not its own */
    cr_assert_eq(sh(out, sizeof out, "sed 's/^numerics: portable$/numerics: fast/' server.yaml > fast.yaml && "
                    "grep -c '^numerics: fast$' fast.yaml && $L run server.yaml --db K.db --dry-run 2>/dev/null | "
                    "cut -c1-18 | sort > k1 && $L run fast.yaml --db K.db --dry-run 2>/dev/null | cut -c1-18 | sort "
                    "> k2 && cmp k1 k2 && $L run fast.yaml --db E.db --quiet --no-table"), 0, "%s", out);
    cr_expect_eq(sql_long("E.db", "SELECT count(*) FROM runs WHERE numerics = 'portable'"), 6,
                 "the server's numerics, whatever the sweep says");
    /* a served: naming methods lenx serve says it does not run was stored under that stack: refused at it */
    cr_assert_eq(sh(out, sizeof out, "sed 's/served: \\[{rope: {layout: interleaved}}\\]/served: [{rope: {layout: "
                    "interleaved}}, {yarn: {scale: 4}}]/' server.yaml > lie.yaml && grep -c yarn lie.yaml && "
                    "$L run lie.yaml --db C.db"), 2, "%s", out);
    cr_expect(strstr(out, "served: is rope(layout=interleaved)+yarn(scale=4), and the server (lenx serve) runs "
                          "rope(layout=interleaved): its cells would be stored under a stack it does not run") &&
              strstr(out, "hint: "), "%s", out);
    cr_expect_eq(server_stop(&s), 0);
}

/* The server dies (--crash-after: exits at once, unanswered, as a killed
** process) in the middle of the sweep: the cells it did not answer are stored
** as failed with the cause, none half-written; a rerun against a restarted
** server completes them, with the same bits as in-process. */
Test(serve_sweep, server_dies_mid_sweep, .fini = teardown)
{
    shell_setup("serve-kill");
    struct server s;
    server_start(&s, "--crash-after 5");
    write_sweeps(s.port, ", retries: 1, timeout: 20");
    char out[8192];
    cr_assert_eq(sh(out, sizeof out, "$L run local.yaml --db A.db --quiet --no-table"), 0, "%s", out);
    int rc = sh(out, sizeof out, "$L run server.yaml --db B.db --no-table");
    cr_expect_neq(rc, 0, "a sweep with failed cells exits non-zero: %s", out);
    cr_assert(exists("B.db"));
    int st;
    cr_assert_eq(waitpid(s.pid, &st, 0), s.pid);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 70, "the server died by --crash-after");
    long failed = sql_long("B.db", "SELECT count(*) FROM runs WHERE status = 'failed'"),
         ok = sql_long("B.db", "SELECT count(*) FROM runs WHERE status = 'ok'");
    cr_expect(failed >= 3 && ok + failed == 6, "%ld ok, %ld failed", ok, failed);
    cr_expect_eq(sql_long("B.db", "SELECT count(*) FROM runs WHERE status = 'failed' AND error NOT LIKE "
                                  "'%server ''s''%no answer%'"), 0, "every failure names the server and the cause");
    cr_expect_eq(sql_long("B.db", "SELECT count(*) FROM metrics m JOIN runs r ON r.id = m.run_id "
                                  "WHERE r.status = 'failed'"), 0, "a failed cell stores no metric");
    cr_expect_eq(sql_long("B.db", "SELECT count(*) FROM outputs o JOIN runs r ON r.id = o.run_id "
                                  "WHERE r.status = 'failed'"), 0, "... and no output");
    /* restarted (on another port: the address is not part of the model key) */
    server_start(&s, "");
    write_sweeps(s.port, "");
    cr_assert_eq(sh(out, sizeof out, "$L run server.yaml --db B.db --no-table"), 0, "%s", out);
    cr_expect(strstr(out, "already stored"), "%s", out);
    cr_expect_eq(sql_long("B.db", "SELECT count(DISTINCT key) FROM runs WHERE status = 'ok'"), 6);
    cr_expect_eq(sh(out, sizeof out, "%s", compare), 0, "%s", out);
    cr_expect_str_eq(out, "same\nsame\nsame\n");
    cr_expect_eq(server_stop(&s), 0);
}

/* ---- hostile clients ----------------------------------------------------------- */

static void expect_error(int status, const char *body, int want, const char *says)
{
    cr_expect_eq(status, want, "status %d, not %d: %s", status, want, body);
    cr_expect(strstr(body, "{\"error\":{\"message\":") == body, "not a JSON error: %s", body);
    cr_expect(strstr(body, says), "'%s' does not say '%s'", body, says);
}

/* One request whose answer must be the error `want`, its message saying `says`. */
static void expect_refusal(int port, const char *method, const char *path, const char *req, int want,
                           const char *says)
{
    char *body;
    int status = http(port, method, path, req, &body);
    expect_error(status, body, want, says);
    free(body);
}


/* The server's peak resident memory (VmHWM), kB. */
static long peak_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

Test(serve_hostile, malformed_huge_and_long, .fini = teardown)
{
    shell_setup("serve-hostile");
    struct server s;
    server_start(&s, "--max-body 1048576");
    char *b;
    expect_refusal(s.port, "POST", "/v1/completions", "{\"prompt\": [1, 2", 400, "not JSON");
    expect_refusal(s.port, "POST", "/v1/completions", "\xff\xfe{}", 400, "not JSON");
    expect_refusal(s.port, "GET", "/v1/completions", NULL, 405, "takes POST, not GET\\n  hint: send it as POST");
    expect_refusal(s.port, "GET", "/nowhere", NULL, 404, "no such endpoint");
    expect_refusal(s.port, "POST", "/v1/completions", "{\"prompt\":[1,2],\"max_tokens\":-1}", 400, "max_tokens");
    expect_refusal(s.port, "POST", "/v1/completions", "{\"prompt\":[1,2],\"logprobs\":-2}", 400, "logprobs");
    expect_refusal(s.port, "POST", "/v1/completions", "{\"prompt\":[1,99999]}", 400, "[0, 512)");
    expect_refusal(s.port, "POST", "/v1/completions", "{\"prompt\":\"x\",\"model\":\"other\"}", 404, "not served here");
    /* 5 MiB of body: read, dropped, 413 */
    size_t big = 5u << 20;
    char *huge = malloc(big + 32);
    strcpy(huge, "{\"prompt\":\"");
    memset(huge + 11, 'a', big);
    strcpy(huge + 11 + big, "\"}");
    expect_refusal(s.port, "POST", "/v1/completions", huge, 413, "more than 1048576 bytes");
    free(huge);
    /* 10,000 ids: a long prompt, answered */
    struct lx_buf p = {0};
    lx_buf_puts(&p, "{\"prompt\":[1");
    for (int i = 1; i < 10000; i++)
        lx_buf_printf(&p, ",%d", 300 + i % 200);
    lx_buf_puts(&p, "],\"max_tokens\":2,\"temperature\":0}");
    int st1 = http(s.port, "POST", "/v1/completions", p.s, &b);
    cr_expect_eq(st1, 200, "%s", b);
    cr_expect(strstr(b, "\"prompt_tokens\":10000"), "%s", b);
    free(b);
    lx_buf_free(&p);
    /* bytes that are not HTTP, and a body shorter than its Content-Length, then silence */
    int fd = connect_to(s.port);
    send_all(fd, "\x16\x03\x01 garbage\r\n\r\n", 16);
    read_answer(fd, &b, 5.0);     /* whatever it says: it must not fall over */
    free(b);
    close(fd);
    fd = connect_to(s.port);
    const char *cut = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"pro";
    send_all(fd, cut, strlen(cut));
    close(fd);
    int st2 = http(s.port, "GET", "/health", NULL, &b);
    cr_expect_eq(st2, 200, "%s", b);
    free(b);
    cr_expect_eq(server_stop(&s), 0, "the server stops cleanly after all that");
}

/* 200 clients at once: every one answered, 200 or a 503 (the queue holds
** 64), as JSON; the server alive after. */
Test(serve_hostile, two_hundred_connections, .fini = teardown)
{
    shell_setup("serve-conn");
    struct server s;
    server_start(&s, "");
    enum { N = 200 };
    int fds[N];
    const char *body = "{\"prompt\":[1,403,407,261],\"max_tokens\":8,\"temperature\":0}";
    char req[512];
    snprintf(req, sizeof req, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: "
             "%zu\r\n\r\n%s", strlen(body), body);
    for (int i = 0; i < N; i++)
        fds[i] = connect_to(s.port);
    for (int i = 0; i < N; i++)
        send_all(fds[i], req, strlen(req));
    int ok = 0, busy = 0;
    char *first = NULL;
    for (int i = 0; i < N; i++) {
        char *b;
        int st = read_answer(fds[i], &b, 60.0);
        close(fds[i]);
        ok += st == 200;
        busy += st == 503;
        if (st == 200 && !first)
            first = strdup(b);
        cr_expect(st == 200 || (st == 503 && strstr(b, "busy")), "client %d: %d %s", i, st, b);
        if (st == 200 && first)     /* from the model on: id and created (the answer's time) differ */
            cr_expect_str_eq(strstr(b, "\"model\""), strstr(first, "\"model\""), "the same greedy answer");
        free(b);
    }
    free(first);
    cr_expect_eq(ok + busy, N);
    cr_expect_geq(ok, 64, "%d answered", ok);
    char *b;
    int st3 = http(s.port, "GET", "/health", NULL, &b);
    cr_expect_eq(st3, 200);
    free(b);
    cr_expect_eq(server_stop(&s), 0);
}

/* A client that asks for a large answer and never reads it holds one
** connection, not the server: others are answered meanwhile, and memory
** stays within the stated bound (docs/servers.md: the model and its passes,
** plus per connection its body and its answer). */
Test(serve_hostile, client_that_stops_reading, .fini = teardown)
{
    shell_setup("serve-stall");
    struct server s;
    server_start(&s, "");
    struct lx_buf p = {0};
    lx_buf_puts(&p, "{\"prompt\":[1");
    for (int i = 1; i < 6000; i++)
        lx_buf_printf(&p, ",%d", 300 + i % 200);
    lx_buf_puts(&p, "],\"max_tokens\":0,\"echo\":true,\"logprobs\":20}");   /* about 3 MB of answer */
    char head[256];
    snprintf(head, sizeof head, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", p.len);
    int stalled[3];
    for (int k = 0; k < 3; k++) {
        stalled[k] = connect_to(s.port);
        int small = 4096;   /* a tiny receive window: the answer cannot drain */
        setsockopt(stalled[k], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        send_all(stalled[k], head, strlen(head));
        send_all(stalled[k], p.s, p.len);
    }
    lx_buf_free(&p);
    sleep(2);
    for (int i = 0; i < 5; i++) {
        char *b;
        int st4 = http(s.port, "POST", "/v1/completions", "{\"prompt\":[1,403],\"max_tokens\":4,"
                          "\"temperature\":0}", &b);
        cr_expect_eq(st4, 200, "%s", b);
        free(b);
    }
    long kb = peak_kb(s.pid);
    cr_expect(kb > 0 && kb < 512 * 1024, "peak resident memory %ld kB", kb);
    for (int k = 0; k < 3; k++)
        close(stalled[k]);
    cr_expect_eq(server_stop(&s), 0);
}

/* ---- lm-eval's log-likelihood request ---------------------------------------------- */

/* From "key": to the next field key (exclusive) of an answer, into out. */
static void field_text(const char *body, const char *key, const char *next, char *out, size_t n)
{
    const char *a = strstr(body, key), *b = a ? strstr(a, next) : NULL;
    cr_assert(a && b, "no %s ... %s in %s", key, next, body);
    snprintf(out, n, "%.*s", (int)(b - a), a);
}

/* The request lm-eval's local-completions sends for a log-likelihood (the
** prompt echoed with log-probabilities and max_tokens 1) is answered from the
** one pass that scores the prompt and draws the token after it (serve.c
** one_pass). Its text, tokens, log-probabilities and top log-probabilities
** are those of the prompt with that token appended and scored alone
** (max_tokens 0, the two-pass path), byte for byte in portable numerics:
** greedy, and sampled with a seed. */
Test(serve_sweep, loglikelihood_request_in_one_pass, .fini = teardown)
{
    shell_setup("serve-ll");
    struct server s;
    server_start(&s, "");
    const char *prompt = "1,403,407,261,157,349,263,278,299,30,109,310,373";
    const char *how[] = {"\"temperature\":0", "\"temperature\":0.9,\"seed\":5"};
    for (int i = 0; i < 2; i++) {
        char body[1024], *a, *b;
        snprintf(body, sizeof body, "{\"prompt\":[%s],\"echo\":true,\"logprobs\":3,\"max_tokens\":1,%s,"
                 "\"return_token_ids\":true}", prompt, how[i]);
        cr_assert_eq(http(s.port, "POST", "/v1/completions", body, &a), 200, "%s", a);
        char ids[256];
        field_text(a, "\"token_ids\":[", "]", ids, sizeof ids);
        int g = atoi(ids + strlen("\"token_ids\":["));
        cr_assert(strstr(a, "\"finish_reason\":\"length\""), "one ordinary token drawn: %s", a);
        snprintf(body, sizeof body, "{\"prompt\":[%s,%d],\"echo\":true,\"logprobs\":3,\"max_tokens\":0}", prompt,
                 g);
        cr_assert_eq(http(s.port, "POST", "/v1/completions", body, &b), 200, "%s", b);
        char fa[16384], fb[16384];
        field_text(a, "\"text\":", ",\"finish_reason\"", fa, sizeof fa);
        field_text(b, "\"text\":", ",\"finish_reason\"", fb, sizeof fb);
        cr_expect_str_eq(fa, fb, "%s: the text", how[i]);
        field_text(a, "\"logprobs\":{", "\"usage\"", fa, sizeof fa);
        field_text(b, "\"logprobs\":{", "\"usage\"", fb, sizeof fb);
        cr_expect_str_eq(fa, fb, "%s: the log-probabilities", how[i]);
        free(a);
        free(b);
    }
    cr_expect_eq(server_stop(&s), 0);
}

/* ---- a real third-party client --------------------------------------------------- */

Test(serve_client, openai_sdk_for_node, .fini = teardown)
{
    shell_setup("serve-sdk");
    struct server s;
    server_start(&s, "--name stories260K");
    write_file("text.txt", "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
               "park with her friends. One day, she saw a big red ball.");
    char out[8192];
    cr_assert_eq(sh(out, sizeof out, "$L score --model $R/../shared/models/stories260K/stories260K.bin --text "
                    "text.txt --portable --length 256 > score.json"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "node $R/tests/node/openai_sdk.cjs %d stories260K score.json $R/build/node",
                    s.port), 0, "%s", out);
    cr_expect(strstr(out, "all checks hold"), "%s", out);
    cr_expect_eq(server_stop(&s), 0);
}

/* ---- stop strings and streaming ---------------------------------------------------- */

/* Choice `index`'s text and finish_reason in an answer (or a stream event),
** appended to text (finish: NULL while the choice goes on); 0 when the JSON
** holds no such choice. */
static int choice_text(const char *json, size_t n, int index, struct lx_buf *text, char *finish, size_t fn)
{
    struct lx_json *doc;
    struct lx_error err;
    cr_assert_eq(lx_json_parse(&doc, json, n, "answer", &err), LX_OK, "%s: %.*s", err.msg, (int)n, json);
    const struct lx_jv *cs = lx_json_member(lx_json_root(doc), "choices");
    int found = 0;
    for (long i = 0; i < lx_json_len(cs); i++) {
        const struct lx_jv *c = lx_json_at(cs, i);
        int64_t k;
        const char *s;
        size_t len;
        cr_assert_eq(lx_json_int(doc, lx_json_member(c, "index"), &k, &err), LX_OK);
        if (k != index)
            continue;
        found = 1;
        cr_assert_eq(lx_json_str(doc, lx_json_member(c, "text"), &s, &len, &err), LX_OK);
        lx_buf_putn(text, s, len);
        const struct lx_jv *f = lx_json_member(c, "finish_reason");
        if (finish && lx_json_type(f) == LX_JSON_STRING && lx_json_str(doc, f, &s, &len, &err) == LX_OK)
            snprintf(finish, fn, "%.*s", (int)len, s);
    }
    lx_json_free(doc);
    return found;
}

/* A stop string that begins inside a token the continuation keeps (here
** after a word's leading space, which SentencePiece's pieces carry) is cut
** from the text with all that follows: the text is the unstopped text up
** to the stop string. */
Test(serve_stream, stop_string_inside_a_token, .fini = teardown)
{
    shell_setup("serve-stop");
    struct server s;
    server_start(&s, "");
    char *a, *b, req[512], fin[16] = "";
    const char *base = "\"prompt\":\"Once upon a time\",\"max_tokens\":40,\"temperature\":0";
    snprintf(req, sizeof req, "{%s}", base);
    cr_assert_eq(http(s.port, "POST", "/v1/completions", req, &a), 200, "%s", a);
    struct lx_buf full = {0}, cut = {0};
    choice_text(a, strlen(a), 0, &full, NULL, 0);
    const char *sp = full.len > 12 ? strchr(full.s + 12, ' ') : NULL;
    cr_assert(sp && strlen(sp) > 8, "a word after the twelfth byte: '%s'", full.s);
    size_t k = (size_t)(sp + 1 - full.s);   /* the word's first letter: inside its token */
    char stop[8];
    snprintf(stop, sizeof stop, "%.7s", full.s + k);
    snprintf(req, sizeof req, "{%s,\"stop\":[\"%s\"]}", base, stop);
    cr_assert_eq(http(s.port, "POST", "/v1/completions", req, &b), 200, "%s", b);
    choice_text(b, strlen(b), 0, &cut, fin, sizeof fin);
    cr_expect_eq(cut.len, k, "stop '%s': '%s' where '%.*s' was due", stop, cut.s ? cut.s : "", (int)k, full.s);
    cr_expect(cut.len == k && memcmp(cut.s, full.s, k) == 0, "stop '%s': '%s'", stop, cut.s ? cut.s : "");
    cr_expect_str_eq(fin, "stop");
    free(a);
    free(b);
    lx_buf_free(&full);
    lx_buf_free(&cut);
    cr_expect_eq(server_stop(&s), 0);
}

/* The text starts without SentencePiece's dummy prefix, as the tokenizer's
** decoder reads it (llama2.c's run.c prints it so, vLLM returns it so): an
** echoed prompt reads as it was sent, and a continuation of an empty prompt is
** llama2.c's own greedy text (expected/greedy_empty_200.txt). The tokens keep
** their pieces (" Once"), and text_offset counts in the text. */
Test(serve_stream, text_starts_without_the_dummy_prefix, .fini = teardown)
{
    shell_setup("serve-prefix");
    struct server s;
    server_start(&s, "");
    char *a, *b, path[512];
    struct lx_buf echo = {0}, cont = {0};
    cr_assert_eq(http(s.port, "POST", "/v1/completions", "{\"prompt\":\"Once upon a time\",\"max_tokens\":0,"
                      "\"echo\":true,\"logprobs\":0}", &a), 200, "%s", a);
    choice_text(a, strlen(a), 0, &echo, NULL, 0);
    cr_expect_str_eq(lx_buf_str(&echo), "Once upon a time");
    cr_expect(strstr(a, "\"tokens\":[\"<s>\",\" Once\",\" upon\",\" a\",\" time\"]"), "%s", a);
    cr_expect(strstr(a, "\"text_offset\":[0,0,4,9,11]"), "%s", a);
    cr_assert_eq(http(s.port, "POST", "/v1/completions", "{\"prompt\":\"\",\"max_tokens\":30,\"temperature\":0}",
                      &b), 200, "%s", b);
    choice_text(b, strlen(b), 0, &cont, NULL, 0);
    snprintf(path, sizeof path, "%s/../shared/models/stories260K/expected/greedy_empty_200.txt", getenv("LENX_ROOT"));
    FILE *f = fopen(path, "rb");
    cr_assert(f != NULL, "%s", path);
    char want[4096] = "";
    size_t n = fread(want, 1, sizeof want - 1, f);
    fclose(f);
    cr_assert(cont.len > 20 && cont.len <= n, "'%s'", lx_buf_str(&cont));
    cr_expect(memcmp(cont.s, want, cont.len) == 0, "'%s' is not the start of llama2.c's '%.80s'", cont.s, want);
    free(a);
    free(b);
    lx_buf_free(&echo);
    lx_buf_free(&cont);
    cr_expect_eq(server_stop(&s), 0);
}

/* A chunked body (Transfer-Encoding: chunked) as its bytes, in place. */
static void dechunk(char *b)
{
    char *in = b, *out = b;
    for (;;) {
        char *end;
        long n = strtol(in, &end, 16);
        cr_assert(end != in && n >= 0 && strncmp(end, "\r\n", 2) == 0, "a malformed chunk at '%.20s'", in);
        in = end + 2;
        if (n == 0)
            break;
        memmove(out, in, (size_t)n);
        out += n, in += n;
        cr_assert(strncmp(in, "\r\n", 2) == 0, "a chunk not ended by CRLF");
        in += 2;
    }
    *out = '\0';
}

/* What a stream said: each choice's text and ending, its events. */
struct events {
    struct lx_buf text[2];
    char finish[2][16], ending[2][512], usage[128];
    int n_text, done;
};

/* The events of a streamed answer: "data: JSON" each ended by a blank line,
** "data: [DONE]" last. */
static void read_events(const char *b, struct events *ev)
{
    memset(ev, 0, sizeof *ev);
    for (const char *p = b; *p;) {
        const char *q = strstr(p, "\n\n");
        cr_assert(q && strncmp(p, "data: ", 6) == 0 && !ev->done, "a malformed event: '%.80s'", p);
        p += 6;
        ev->done = q - p == 6 && strncmp(p, "[DONE]", 6) == 0;
        char chunk[8192];
        snprintf(chunk, sizeof chunk, "%.*s", (int)(q - p), p);
        if (!ev->done && strstr(chunk, "\"usage\""))
            field_text(chunk, "\"usage\"", "}", ev->usage, sizeof ev->usage);
        for (int i = 0; i < 2 && !ev->done; i++) {
            size_t before = ev->text[i].len;
            char fin[16] = "";
            if (choice_text(chunk, strlen(chunk), i, &ev->text[i], fin, sizeof fin) && fin[0]) {
                cr_expect_eq(ev->finish[i][0], 0, "choice %d ends twice", i);
                snprintf(ev->finish[i], sizeof ev->finish[i], "%s", fin);
                field_text(chunk, "\"finish_reason\"", "}]}", ev->ending[i], sizeof ev->ending[i]);
            }
            ev->n_text += ev->text[i].len > before;
        }
        p = q + 2;
    }
    cr_expect(ev->done, "the stream does not end with [DONE]");
}

/* A streamed completion says what the same request unstreamed says: each
** choice's text (the concatenation of its chunks, cut before a stop string
** that begins inside a token), finish_reason, stop_reason and token ids, and
** the usage; over HTTP/1.1's chunked transfer, in several events, with
** text/event-stream. Greedy and sampled (a seed), echo, two prompts, a budget
** of 0, an empty prompt. */
Test(serve_stream, stream_says_what_the_answer_says, .fini = teardown)
{
    shell_setup("serve-stream");
    struct server s;
    server_start(&s, "");
    char *full, req[1024];
    cr_assert_eq(http(s.port, "POST", "/v1/completions", "{\"prompt\":\"Once upon a time\",\"max_tokens\":40,"
                      "\"temperature\":0}", &full), 200, "%s", full);
    struct lx_buf t = {0};
    choice_text(full, strlen(full), 0, &t, NULL, 0);
    const char *sp = t.len > 12 ? strchr(t.s + 12, ' ') : NULL;
    cr_assert(sp && strlen(sp) > 6, "a word after the twelfth byte: '%s'", t.s);
    const char *next = strchr(sp + 1, ' ');
    cr_assert(next && next[1], "two words after the twelfth byte: '%s'", t.s);
    char first[160];    /* a word and the next word's first letter: begins inside a token, ends in another */
    snprintf(first, sizeof first, "{\"prompt\":\"Once upon a time\",\"max_tokens\":40,\"temperature\":0,"
             "\"stop\":[\"zq\",\"%.*s\"]", (int)(next + 2 - (sp + 1)), sp + 1);
    const char *reqs[] = {
        first + 1,
        "\"prompt\":[[1,403,407],[1,349,263,278]],\"max_tokens\":60,\"temperature\":0.9,\"top_k\":20,\"seed\":7,"
        "\"echo\":true,\"return_token_ids\":true",
        "\"prompt\":\"One day\",\"max_tokens\":0,\"echo\":true",
        "\"prompt\":\"\",\"max_tokens\":30,\"temperature\":0",    /* the text starts without a dummy prefix */
    };
    for (int r = 0; r < 4; r++) {
        char *a, *b, *head;
        snprintf(req, sizeof req, "{%s}", reqs[r]);
        cr_assert_eq(http(s.port, "POST", "/v1/completions", req, &a), 200, "%s", a);
        snprintf(req + strlen(req) - 1, sizeof req - strlen(req) + 1,
                 ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
        int fd = connect_to(s.port);
        char h[512];
        snprintf(h, sizeof h, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                 "Content-Length: %zu\r\n\r\n", strlen(req));
        send_all(fd, h, strlen(h));
        send_all(fd, req, strlen(req));
        cr_assert_eq(read_answer_head(fd, &head, &b, 120.0), 200, "%s %s", head, b);
        close(fd);
        cr_expect(strstr(head, "Content-Type: text/event-stream"), "%s", head);
        cr_assert(strstr(head, "Transfer-Encoding: chunked"), "%s", head);
        dechunk(b);
        struct events ev;
        read_events(b, &ev);
        int n_choices = r == 1 ? 2 : 1;
        for (int i = 0; i < n_choices; i++) {
            struct lx_buf want = {0};
            char fin[16] = "", ending[512], *at = strstr(a, i ? "\"index\":1" : "\"index\":0");
            choice_text(a, strlen(a), i, &want, fin, sizeof fin);
            cr_expect_str_eq(lx_buf_str(&ev.text[i]), lx_buf_str(&want), "request %d, choice %d", r, i);
            cr_expect_str_eq(ev.finish[i], fin, "request %d, choice %d", r, i);
            field_text(at, "\"finish_reason\"", ",\"logprobs\"", ending, sizeof ending);
            cr_expect_str_eq(ev.ending[i], ending, "request %d, choice %d", r, i);
            lx_buf_free(&want);
            lx_buf_free(&ev.text[i]);
        }
        char usage[128];
        field_text(a, "\"usage\"", "}", usage, sizeof usage);
        cr_expect_str_eq(ev.usage, usage, "request %d", r);
        cr_expect(r == 2 || ev.n_text >= 3, "request %d: its text in %d events", r, ev.n_text);
        if (r == 0)
            cr_expect(strstr(b, "\"finish_reason\":\"stop\""), "the greedy text's own stop string: %s", b);
        free(a), free(b), free(head);
    }
    free(full);
    lx_buf_free(&t);
    cr_expect_eq(server_stop(&s), 0);
}

/* A client that goes away mid-stream: the server answers the next request
** and stops cleanly. */
Test(serve_stream, client_gone_mid_stream, .fini = teardown)
{
    shell_setup("serve-stream-gone");
    struct server s;
    server_start(&s, "");
    for (int k = 0; k < 3; k++) {
        const char *req = "{\"prompt\":[1,403],\"max_tokens\":250,\"temperature\":1,\"seed\":3,\"stream\":true}";
        int fd = connect_to(s.port);
        char h[512], buf[256];
        snprintf(h, sizeof h, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", strlen(req));
        send_all(fd, h, strlen(h));
        send_all(fd, req, strlen(req));
        struct pollfd p = {.fd = fd, .events = POLLIN};
        cr_expect(poll(&p, 1, 60000) == 1 && recv(fd, buf, sizeof buf, 0) > 0, "no first bytes");
        close(fd);
    }
    char *b;
    cr_expect_eq(http(s.port, "POST", "/v1/completions", "{\"prompt\":[1,403],\"max_tokens\":4,\"temperature\":0}",
                      &b), 200, "%s", b);
    free(b);
    cr_expect_eq(server_stop(&s), 0);
}

/* /tokenize and /detokenize are each other's inverse on text: the SentencePiece dummy prefix /tokenize
** adds is not in /detokenize's text (it answered " Once upon"), with BOS or without, as a completion's
** text starts. */
Test(serve_hostile, tokenize_and_detokenize_round_trip, .fini = teardown)
{
    shell_setup("serve-detok");
    struct server s;
    server_start(&s, "");
    char *b, req[256];
    cr_assert_eq(http(s.port, "POST", "/tokenize", "{\"prompt\":\"Once upon\",\"add_special_tokens\":false}", &b),
                 200, "%s", b);
    const char *t = strstr(b, "\"tokens\":[");
    cr_assert_not_null(t, "%s", b);
    char ids[128];
    snprintf(ids, sizeof ids, "%.*s", (int)strcspn(t + 10, "]"), t + 10);
    free(b);
    const char *with[] = {"", "1,"};
    for (int i = 0; i < 2; i++) {
        snprintf(req, sizeof req, "{\"tokens\":[%s%s]}", with[i], ids);
        cr_expect_eq(http(s.port, "POST", "/detokenize", req, &b), 200, "%s", b);
        cr_expect(strstr(b, "{\"prompt\":\"Once upon\"}") != NULL, "%s: %s", req, b);
        free(b);
    }
    cr_expect_eq(server_stop(&s), 0);
    /* ids past --max-len: the refusal is of the ids, not of "prompt and max_tokens together" (no prompt here) */
    server_start(&s, "--max-len 4");
    cr_expect_eq(http(s.port, "POST", "/detokenize", "{\"tokens\":[1,2,3,4,5]}", &b), 400, "%s", b);
    cr_expect(strstr(b, "tokens has 5 ids; this server holds at most 4\\n") != NULL, "%s", b);
    cr_expect(strstr(b, "max_tokens") == NULL, "%s", b);
    free(b);
    cr_expect_eq(server_stop(&s), 0);
}

/* A request answered 503 at its time limit stops generating at its next token: the one after it is
** answered (it waited behind 20,000 tokens nobody would read, about 35 s, and timed out too). And an
** answer's created is its own time (it was the server's start, as OpenAI's is not). */
Test(serve_hostile, a_request_past_its_time_stops_generating, .fini = teardown)
{
    shell_setup("serve-abandoned");
    struct server s;
    server_start(&s, "--timeout 1");
    char *b;
    cr_expect_eq(http(s.port, "POST", "/v1/completions", "{\"prompt\":[1,403],\"max_tokens\":20000,"
                      "\"ignore_eos\":true,\"temperature\":0}", &b), 503, "%s", b);
    cr_expect(strstr(b, "no answer within 1 s") != NULL, "%s", b);
    free(b);
    for (int i = 0; i < 2; i++) {
        long t = (long)time(NULL);     /* a second after the server started, at least: created is the answer's time */
        cr_expect_eq(http(s.port, "POST", "/v1/completions", "{\"prompt\":[1,403],\"max_tokens\":1,\"temperature\":0}",
                          &b), 200, "request %d: %s", i, b);
        const char *c = strstr(b, "\"created\":");
        cr_expect(c && atol(c + 10) >= t, "created %s, asked at %ld", c ? c + 10 : "(none)", t);
        free(b);
    }
    cr_expect_eq(server_stop(&s), 0);
}

/* ignore_eos (vLLM's field): the continuation goes on past the model's end of text to max_tokens, and
** its first tokens are those of the same request without it, the special id that ended that one next
** (the same seed, the same draws); streamed, the same. */
Test(serve_stream, ignore_eos_goes_past_the_end_of_text, .fini = teardown)
{
    shell_setup("serve-eos");
    struct server s;
    server_start(&s, "");
    char req[512], *a = NULL, ids[4096], all[4096];
    int seed = 0;
    for (int k = 1; k <= 40 && !seed; k++) {    /* a sampled continuation the model ends itself */
        snprintf(req, sizeof req, "{\"prompt\":[1,403],\"max_tokens\":200,\"temperature\":1.5,\"seed\":%d,"
                 "\"return_token_ids\":true}", k);
        free(a);
        cr_assert_eq(http(s.port, "POST", "/v1/completions", req, &a), 200, "%s", a);
        if (strstr(a, "\"finish_reason\":\"stop\",\"stop_reason\":"))
            seed = k;
    }
    cr_assert(seed, "no seed of 40 ends before 200 tokens: %s", a);
    field_text(a, "\"token_ids\":[", "]", ids, sizeof ids);
    int stop_id = atoi(strstr(a, "\"stop_reason\":") + 14);
    snprintf(req, sizeof req, "{\"prompt\":[1,403],\"max_tokens\":200,\"temperature\":1.5,\"seed\":%d,"
             "\"return_token_ids\":true,\"ignore_eos\":true}", seed);
    char *b, *c;
    cr_assert_eq(http(s.port, "POST", "/v1/completions", req, &b), 200, "%s", b);
    cr_expect(strstr(b, "\"finish_reason\":\"length\",\"stop_reason\":null") &&
              strstr(b, "\"completion_tokens\":200,"), "%s", b);
    field_text(b, "\"token_ids\":[", "]", all, sizeof all);
    char last[16];      /* return_token_ids lists the id that ended it last */
    snprintf(last, sizeof last, ",%d", stop_id);
    cr_expect(strlen(ids) > strlen(last) && strcmp(ids + strlen(ids) - strlen(last), last) == 0, "%s", ids);
    cr_expect(strncmp(all, ids, strlen(ids)) == 0 && all[strlen(ids)] == ',',
              "seed %d: the tokens up to the end of text (id %d), then more:\n%s\n%s", seed, stop_id, ids, all);
    struct lx_buf t1 = {0}, t2 = {0};
    choice_text(b, strlen(b), 0, &t1, NULL, 0);
    snprintf(req + strlen(req) - 1, sizeof req - strlen(req) + 1, ",\"stream\":true}");
    cr_assert_eq(http(s.port, "POST", "/v1/completions", req, &c), 200, "%s", c);
    dechunk(c);
    struct events ev;
    read_events(c, &ev);
    cr_expect_str_eq(lx_buf_str(&ev.text[0]), lx_buf_str(&t1), "streamed with ignore_eos");
    cr_expect_str_eq(ev.finish[0], "length");
    lx_buf_free(&ev.text[0]), lx_buf_free(&ev.text[1]), lx_buf_free(&t1), lx_buf_free(&t2);
    free(a), free(b), free(c);
    cr_expect_eq(server_stop(&s), 0);
}

/* ---- the HTTP server's queue (harness/backends/httpd.c) under a handler the test holds ---- */

/* The handler's gate: a request to /block waits at it until it opens. */
struct gate {
    pthread_mutex_t mu;     /* guards started, open */
    pthread_cond_t cv;      /* either changed */
    int started, open;      /* a /block request is in the handler; the gate is open */
};

static int handler(void *ctx, const char *method, const char *path, const char *type, const char *body, size_t n,
                   struct lx_buf *out, const struct lx_httpd_stream *st)
{
    struct gate *g = ctx;
    (void)method, (void)type, (void)body, (void)n, (void)st;
    if (strcmp(path, "/block") == 0) {
        pthread_mutex_lock(&g->mu);
        g->started = 1;
        pthread_cond_broadcast(&g->cv);
        while (!g->open)
            pthread_cond_wait(&g->cv, &g->mu);
        pthread_mutex_unlock(&g->mu);
    }
    lx_buf_puts(out, "{\"ok\":true}");
    return 200;
}

struct served {
    struct lx_httpd *h;             /* the server */
    volatile sig_atomic_t stop;     /* set to end lx_httpd_serve */
};

static void *serve_main(void *arg)
{
    struct served *s = arg;
    lx_httpd_serve(s->h, &s->stop);
    return NULL;
}

struct call {
    int port;           /* the server's */
    int status;         /* the answer's */
    char *body;         /* the answer (owned) */
};

static void *block_main(void *arg)
{
    struct call *c = arg;
    c->status = http(c->port, "POST", "/block", "{}", &c->body);
    return NULL;
}

/* A queue of one place and half a second a request, the model's thread held
** by /block: a request that waited and timed out gives its place back at
** once (it was still counted until the thread reached it, so the next
** request was refused as busy while nothing waited). */
Test(httpd, a_request_that_timed_out_leaves_the_queue)
{
    struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    struct lx_httpd_limits lim = {.max_body = 1 << 20, .max_connections = 16, .max_queue = 1, .idle_timeout = 30,
                                  .request_timeout = 0.5};
    struct served s = {0};
    struct lx_error err = {{0}};
    cr_assert_eq(lx_httpd_start(&s.h, "127.0.0.1", 0, &lim, handler, &g, &err), LX_OK, "%s", err.msg);
    pthread_t server, blocker;
    cr_assert_eq(pthread_create(&server, NULL, serve_main, &s), 0);
    struct call a = {.port = lx_httpd_port(s.h)};
    cr_assert_eq(pthread_create(&blocker, NULL, block_main, &a), 0);
    pthread_mutex_lock(&g.mu);
    while (!g.started)
        pthread_cond_wait(&g.cv, &g.mu);
    pthread_mutex_unlock(&g.mu);
    char *b;
    for (int i = 0; i < 3; i++) {   /* each waits in the one place and times out; none is refused as busy */
        cr_expect_eq(http(a.port, "POST", "/quick", "{}", &b), 503, "request %d", i);
        cr_expect(strstr(b, "no answer within 0.5 s") != NULL, "request %d: %s", i, b);
        free(b);
    }
    pthread_mutex_lock(&g.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    pthread_join(blocker, NULL);
    free(a.body);
    cr_expect_eq(http(a.port, "POST", "/quick", "{}", &b), 200, "%s", b);   /* the thread is free again */
    free(b);
    s.stop = 1;
    pthread_join(server, NULL);
    lx_httpd_stop(s.h);
}

/* The address line names the stack as served, resolved at --length (what /v1/models says), not as
** written: YaRN's automatic scale read "yarn(scale=0)" there. */
Test(serve_hostile, the_banner_names_the_resolved_stack, .fini = teardown)
{
    shell_setup("serve-banner");
    struct server s;
    server_start(&s, "--method yarn");
    char *b, log[4096] = "", path[256];
    cr_assert_eq(http(s.port, "GET", "/v1/models", NULL, &b), 200, "%s", b);
    cr_expect_eq(server_stop(&s), 0);
    const char *m = strstr(b, "\"methods\":\"");
    cr_assert_not_null(m, "%s", b);
    char want[256];
    snprintf(want, sizeof want, "methods %.*s, length 256", (int)strcspn(m + 11, "\""), m + 11);
    snprintf(path, sizeof path, "%s/serve.log", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    log[fread(log, 1, sizeof log - 1, f)] = '\0';
    fclose(f);
    cr_expect(strstr(want, "yarn(") && !strstr(want, "scale=0"), "%s", want);
    cr_expect(strstr(log, want) != NULL, "the banner does not say '%s':\n%s", want, log);
    free(b);
}
