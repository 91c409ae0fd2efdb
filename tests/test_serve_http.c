/*
** tests/test_serve_http.c - `lenx serve` as an HTTP server (docs/servers.md,
** "lenx serve"): HEAD on every GET route, the Content-Type of a JSON body,
** text_offset of a continuation's log-probabilities.
*/
#pragma GCC diagnostic ignored "-Wunused-function"  /* tests/shell.h's helpers this suite does not call */
#include "tests/serve_fixture.h"

#include "harness/core/json.h"

/* Send a whole request as written; the answer's status, head and body (both malloc'd). */
static int raw(int port, const char *req, char **head, char **body)
{
    int fd = connect_to(port);
    send_all(fd, req, strlen(req));
    int status = read_answer_head(fd, head, body, 60.0);
    close(fd);
    return status;
}

/* The value of header `name` in an answer's head ("" when absent), case-insensitively. */
static void header(const char *head, const char *name, char *out, size_t n)
{
    out[0] = '\0';
    for (const char *l = strstr(head, "\r\n"); l; l = strstr(l + 2, "\r\n"))
        if (strncasecmp(l + 2, name, strlen(name)) == 0 && l[2 + strlen(name)] == ':') {
            const char *v = l + 3 + strlen(name);
            v += strspn(v, " ");
            snprintf(out, n, "%.*s", (int)strcspn(v, "\r"), v);
            return;
        }
}

/* A request of `method` on `path` with Connection: close and, unless NULL, Content-Type `type`. */
static int request(int port, const char *method, const char *path, const char *type, const char *body,
                   char **head, char **out)
{
    char req[2048], ct[256] = "";
    if (type)
        snprintf(ct, sizeof ct, "Content-Type: %s\r\n", type);
    snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%sContent-Length: %zu\r\n"
             "\r\n%s", method, path, ct, body ? strlen(body) : 0, body ? body : "");
    return raw(port, req, head, out);
}

/* ---- HEAD ------------------------------------------------------------------------ */

/* RFC 9110 9.3.2: HEAD is GET without the body: the same status and headers (Content-Type, Content-Length of
** the body GET gets) on every GET route. A route that takes POST refuses HEAD as it refuses GET, and a 405 on
** a GET route names HEAD beside GET. */
Test(serve_http, head_answers_as_get_without_the_body, .fini = teardown, .timeout = 120)
{
    shell_setup("serve-head");
    struct server s;
    server_start(&s, "");
    const char *gets[] = {"/health", "/v1/models", "/tokenizer_info"};
    for (int i = 0; i < 3; i++) {
        char *gh, *gb, *hh, *hb, gt[128], ht[128], hl[32];
        int gs = request(s.port, "GET", gets[i], NULL, NULL, &gh, &gb);
        int hs = request(s.port, "HEAD", gets[i], NULL, NULL, &hh, &hb);
        cr_expect_eq(gs, 200, "GET %s: %d %s", gets[i], gs, gb);
        cr_expect_eq(hs, gs, "HEAD %s: %d, GET %d: %s", gets[i], hs, gs, hh);
        header(gh, "Content-Type", gt, sizeof gt);
        header(hh, "Content-Type", ht, sizeof ht);
        cr_expect_str_eq(ht, gt, "HEAD %s: Content-Type '%s', GET's '%s'", gets[i], ht, gt);
        header(hh, "Content-Length", hl, sizeof hl);
        cr_expect_eq(atol(hl), (long)strlen(gb), "HEAD %s: Content-Length '%s', GET's body %zu bytes", gets[i], hl,
                     strlen(gb));
        cr_expect_str_eq(hb, "", "HEAD %s has a body: '%s'", gets[i], hb);
        free(gh), free(gb), free(hh), free(hb);
    }
    char *h, *b;
    cr_expect_eq(request(s.port, "HEAD", "/v1/completions", NULL, NULL, &h, &b), 405, "%s", h);
    free(h), free(b);
    cr_expect_eq(request(s.port, "GET", "/v1/completions", NULL, NULL, &h, &b), 405, "%s", h);
    free(h), free(b);
    cr_expect_eq(request(s.port, "POST", "/v1/models", "application/json", "{}", &h, &b), 405, "%s", h);
    cr_expect(strstr(b, "takes GET or HEAD, not POST"), "%s", b);
    free(h), free(b);
    cr_expect_eq(server_stop(&s), 0);
}

/* ---- Content-Type ------------------------------------------------------------------ */

static const char small[] = "{\"prompt\":[1,403],\"max_tokens\":1,\"temperature\":0}";

/* A body declared as something other than JSON is refused with 415 and a hint, on every route that reads a
** body. Accepted: no type, application/json with parameters and in any case, a +json type (as FastAPI, under
** vLLM, reads them), and curl -d's form type, whose bytes are read as JSON. The route and method are checked
** first: an unknown path is a 404 and a GET route a 405 whatever the type. */
Test(serve_http, a_body_declared_not_json_is_refused, .fini = teardown, .timeout = 120)
{
    shell_setup("serve-type");
    struct server s;
    server_start(&s, "");
    const char *refused[] = {"text/plain", "multipart/form-data; boundary=x", "application/jsonl", "text/json",
                             "application/xml"};
    const char *routes[] = {"/v1/completions", "/completions", "/tokenize", "/detokenize"};
    const char *bodies[] = {small, small, "{\"prompt\":\"Once\"}", "{\"tokens\":[403]}"};
    char *h, *b;
    for (int i = 0; i < 5; i++)
        for (int r = 0; r < 4; r++) {
            int st = request(s.port, "POST", routes[r], refused[i], bodies[r], &h, &b);
            cr_expect_eq(st, 415, "%s as %s: %d %s", routes[r], refused[i], st, b);
            cr_expect(strstr(b, "{\"error\":{\"message\":") == b, "%s", b);
            cr_expect(strstr(b, "not JSON") && strstr(b, "hint: ") && strstr(b, "Content-Type: application/json"),
                      "%s as %s: %s", routes[r], refused[i], b);
            cr_expect(strstr(b, "\"code\":415"), "%s", b);
            free(h), free(b);
        }
    const char *taken[] = {NULL, "application/json", "application/json; charset=utf-8",
                           "Application/JSON;charset=UTF-8", "application/vnd.api+json",
                           "application/x-www-form-urlencoded", " application/json "};
    for (int i = 0; i < 7; i++) {
        int st = request(s.port, "POST", "/v1/completions", taken[i], small, &h, &b);
        cr_expect_eq(st, 200, "as %s: %d %s", taken[i] ? taken[i] : "(none)", st, b);
        free(h), free(b);
    }
    cr_expect_eq(request(s.port, "POST", "/nowhere", "text/plain", small, &h, &b), 404, "%s", b);
    free(h), free(b);
    cr_expect_eq(request(s.port, "POST", "/v1/models", "text/plain", "x", &h, &b), 405, "%s", b);
    free(h), free(b);
    cr_expect_eq(request(s.port, "GET", "/v1/models", "text/plain", NULL, &h, &b), 200, "%s", b);
    free(h), free(b);
    cr_expect_eq(server_stop(&s), 0);
}

/* ---- text_offset ------------------------------------------------------------------- */

/* The choice's text and its logprobs' tokens (as ids: token_id:N, else text) and text_offset. */
struct lp {
    char text[1024];
    char tokens[64][64];
    long offset[64];
    long n;
};

static void read_lp(const char *answer, struct lp *lp)
{
    struct lx_json *doc;
    struct lx_error err;
    cr_assert_eq(lx_json_parse(&doc, answer, strlen(answer), "answer", &err), LX_OK, "%s: %s", err.msg, answer);
    const struct lx_jv *c = lx_json_at(lx_json_member(lx_json_root(doc), "choices"), 0);
    const struct lx_jv *l = lx_json_member(c, "logprobs"), *t = lx_json_member(l, "tokens");
    const struct lx_jv *o = lx_json_member(l, "text_offset");
    const char *s;
    size_t len;
    cr_assert_eq(lx_json_str(doc, lx_json_member(c, "text"), &s, &len, &err), LX_OK, "%s", answer);
    snprintf(lp->text, sizeof lp->text, "%.*s", (int)len, s);
    lp->n = lx_json_len(t);
    cr_assert(lp->n > 0 && lp->n <= 64 && lx_json_len(o) == lp->n, "%s", answer);
    for (long i = 0; i < lp->n; i++) {
        int64_t k;
        cr_assert_eq(lx_json_str(doc, lx_json_at(t, i), &s, &len, &err), LX_OK, "%s", answer);
        snprintf(lp->tokens[i], sizeof lp->tokens[i], "%.*s", (int)len, s);
        cr_assert_eq(lx_json_int(doc, lx_json_at(o, i), &k, &err), LX_OK, "%s", answer);
        lp->offset[i] = (long)k;
    }
    lx_json_free(doc);
}

/* Without echo, text_offset counts in the continuation's own text, from 0 at its first token, as vLLM's
** (serving_completion.py: initial_text_offset 0 for an answer not streamed): each token starts where the
** tokens before it end, and the tokens spell the text. With echo the offsets count from the prompt's start
** (16 bytes, "Once upon a time", where the continuation begins). */
Test(serve_http, text_offset_counts_in_the_continuation, .fini = teardown, .timeout = 120)
{
    shell_setup("serve-offset");
    struct server s;
    server_start(&s, "");
    const char *base = "\"prompt\":\"Once upon a time\",\"max_tokens\":8,\"temperature\":0,\"logprobs\":1";
    char req[512], *a, *b;
    snprintf(req, sizeof req, "{%s}", base);
    cr_assert_eq(http(s.port, "POST", "/v1/completions", req, &a), 200, "%s", a);
    struct lp lp, le;
    read_lp(a, &lp);
    cr_expect_eq(lp.n, 8, "%s", a);
    long at = 0;
    char spelled[1024] = "";
    for (long i = 0; i < lp.n; i++) {
        cr_expect_eq(lp.offset[i], at, "token %ld ('%s') at %ld, not %ld: %s", i, lp.tokens[i], lp.offset[i], at, a);
        at += (long)strlen(lp.tokens[i]);
        strncat(spelled, lp.tokens[i], sizeof spelled - strlen(spelled) - 1);
    }
    cr_expect_str_eq(spelled, lp.text, "%s", a);
    snprintf(req, sizeof req, "{%s,\"echo\":true}", base);
    cr_assert_eq(http(s.port, "POST", "/v1/completions", req, &b), 200, "%s", b);
    read_lp(b, &le);
    cr_expect_eq(le.n, 5 + 8, "<s> Once upon a time and 8 more: %s", b);
    cr_expect_str_eq(le.text + 16, lp.text, "%s", b);
    at = 16;
    for (long i = 5; i < le.n; i++) {
        cr_expect_eq(le.offset[i], at, "echoed token %ld ('%s') at %ld, not %ld: %s", i, le.tokens[i], le.offset[i],
                     at, b);
        at += (long)strlen(le.tokens[i]);
    }
    free(a), free(b);
    /* an empty prompt: the text drops the first token's leading space (SentencePiece's dummy prefix), and the
    ** offsets count in that text */
    cr_assert_eq(http(s.port, "POST", "/v1/completions", "{\"prompt\":\"\",\"max_tokens\":6,\"temperature\":0,"
                      "\"logprobs\":0}", &a), 200, "%s", a);
    read_lp(a, &lp);
    cr_assert(lp.n == 6 && lp.tokens[0][0] == ' ', "%s", a);
    cr_expect_eq(lp.offset[0], 0, "%s", a);
    at = (long)strlen(lp.tokens[0]) - 1;
    for (long i = 1; i < lp.n; at += (long)strlen(lp.tokens[i++]))
        cr_expect_eq(lp.offset[i], at, "token %ld ('%s') at %ld, not %ld: %s", i, lp.tokens[i], lp.offset[i], at, a);
    cr_expect_eq(strncmp(lp.text, lp.tokens[0] + 1, strlen(lp.tokens[0]) - 1), 0, "%s", a);
    free(a);
    cr_expect_eq(server_stop(&s), 0);
}
