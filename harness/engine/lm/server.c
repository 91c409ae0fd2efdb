/*
** harness/engine/lm/server.c - the server backend (see server.h): requests
** composed and answers read here, HTTP in http.c, JSON through core/json.c.
*/
#include "harness/engine/lm/server.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/json.h"
#include "harness/engine/lm/http.h"
#include "harness/engine/tokenizers/tokenizer.h"

struct server {
    char *base;         /* ".../v1" */
    char *shown;        /* base without user:password@, for messages and the store */
    char *auth;         /* the Authorization header line, or NULL */
    char *root;         /* base without a trailing /v1: where /tokenize lives */
    char *model;        /* the model id asked for */
    char *identity;
    int is_lenx;        /* `lenx serve`: max_tokens 0 for scoring, token ids without logprobs */
    char *methods;      /* lenx serve's stack as it runs it ("rope(layout=interleaved)+yarn(scale=2)"), or NULL */
    char *numerics;     /* lenx serve's numerics ("fast", "portable", "bf16"), or NULL */
    const struct lx_tokenizer *tk;
    struct lx_http_opts http;
};

/* Text a sample of the tokenizer is checked on: words, digits, punctuation. */
static const char sample[] = "Once upon a time, 12 foxes jumped over 3456 lazy dogs: \"quick!\" they said.";

/* The message of an error answer: error.message, message, or error (a string). */
static void answer_message(const struct lx_buf *b, char *out, size_t n)
{
    struct lx_json *doc;
    struct lx_error err;
    snprintf(out, n, "%.200s", b->s ? b->s : "(no body)");
    if (!b->s || lx_json_parse(&doc, b->s, b->len, "answer", &err) < 0)
        return;
    const struct lx_jv *r = lx_json_root(doc), *e = lx_json_member(r, "error"), *m = lx_json_member(e, "message");
    const char *s = NULL;
    if (!m)
        m = lx_json_member(r, "message");
    if (!m && lx_json_type(e) == LX_JSON_STRING)
        m = e;
    if (m && lx_json_str(doc, m, &s, NULL, &err) == LX_OK)
        snprintf(out, n, "%.300s", s);
    lx_json_free(doc);
}

/* A hint for an answer of HTTP status st. */
static const char *status_hint(long st)
{
    return st == 401 || st == 403 ? "the server wants an API key, or another one: name the variable that holds it "
                                    "(server: {api_key_env: NAME}) and check its value"
           : st == 404 ? "is url the API's base (http://HOST:PORT/v1), and model an id its /v1/models lists?"
           : st == 429 ? "the server limits the rate of requests: lower concurrency, then rerun"
           : st >= 500 ? "the server failed (tried again retries times); a rerun completes the cells that failed"
                       : "the server refused the request; its message says why";
}

/* Why request r, `what` ("scoring window 2 of 8"), has no answer of HTTP
** 200, into err as code: the status and the server's message (with a hint
** that fits the status), a timeout (with the timeout's hint), or the
** connection error (with conn_hint). */
static int request_failed(const struct lx_lm *lm, const struct lx_http_req *r, const char *what, int code,
                          const char *conn_hint, struct lx_error *err)
{
    const struct server *s = lm->impl;
    char msg[400];
    if (r->status) {
        answer_message(&r->resp, msg, sizeof msg);
        return lx_err(err, code, "%s: %s: HTTP %ld: %s\n  hint: %s", lm->what, what, r->status, msg,
                      status_hint(r->status));
    }
    if (r->timed_out) {
        if (r->tries > 1)
            snprintf(msg, sizeof msg, "on try %d", r->tries);
        return lx_err(err, code, "%s: %s: no answer within the timeout of %g s (%s: a request the server took is "
                      "not tried again)\n  hint: the server is slow or stuck: raise timeout: (the seconds a request "
                      "may take), or lower concurrency; a rerun completes the cells that failed", lm->what, what,
                      s->http.timeout, r->tries > 1 ? msg : "tried once");
    }
    return lx_err(err, code, "%s: %s: no answer after %d tr%s: %s\n  hint: %s", lm->what, what, r->tries,
                  r->tries == 1 ? "y" : "ies", r->error, conn_hint);
}

/* Send reqs; LX_ERUN naming the first that failed. */
static int send_all(const struct lx_lm *lm, struct lx_http_req *reqs, long n, const char *what, struct lx_error *err)
{
    const struct server *s = lm->impl;
    int rc = lx_http_run(reqs, n, &s->http, err);
    for (long i = 0; i < n && rc == LX_OK; i++) {
        char w[160];
        snprintf(w, sizeof w, "%s %ld of %ld", what, i + 1, n);
        if (reqs[i].status != 200)
            rc = request_failed(lm, &reqs[i], w, LX_ERUN, "is the server running? A rerun completes the cells that "
                                "failed", err);
    }
    return rc;
}

/* An answer that is not JSON: the parser's message without its hint, and
** the start of the body. */
static int not_json(const struct lx_lm *lm, const char *what, const struct lx_buf *b, const struct lx_error *sub,
                    int code, struct lx_error *err)
{
    char head[121];
    size_t k = 0;
    for (; b->s && k < b->len && k < sizeof head - 1; k++)
        head[k] = (unsigned char)b->s[k] < 32 ? ' ' : b->s[k];
    head[k] = '\0';
    return lx_err(err, code, "%s: %s is not JSON (%.*s): it begins \"%s\"%s\n  hint: is url the API's base "
                  "(http://HOST:PORT/v1), answered by the server itself, not by a proxy or a login page?", lm->what,
                  what, (int)strcspn(sub->msg, "\n"), sub->msg, head, b->s && b->len > k ? "..." : "");
}

static void release_all(struct lx_http_req *reqs, long n)
{
    for (long i = 0; i < n; i++) {
        lx_buf_free(&reqs[i].resp);
        free((char *)reqs[i].body);
    }
    free(reqs);
}

/* The first choice of a completion answer, parsed into *doc. An answer
** holding an error (even beside choices) fails with the server's message. */
static int first_choice(const struct lx_lm *lm, const struct lx_http_req *r, struct lx_json **doc,
                        const struct lx_jv **choice, struct lx_error *err)
{
    struct lx_error sub;
    if (lx_json_parse(doc, r->resp.s ? r->resp.s : "", r->resp.len, "answer", &sub) < 0)
        return not_json(lm, "the answer", &r->resp, &sub, LX_ERUN, err);
    *choice = lx_json_at(lx_json_member(lx_json_root(*doc), "choices"), 0);
    int is_error = lx_json_type(lx_json_member(lx_json_root(*doc), "error")) != LX_JSON_NULL;
    if (is_error || lx_json_type(*choice) != LX_JSON_OBJECT) {
        char msg[400] = "";
        if (is_error)
            answer_message(&r->resp, msg, sizeof msg);
        lx_json_free(*doc);
        return is_error ? lx_err(err, LX_ERUN, "%s: the answer is an error (HTTP 200): %s\n  hint: the server failed "
                                 "this request; a rerun completes the cells that failed", lm->what, msg)
                        : lx_err(err, LX_ERUN, "%s: the answer has no choices[0]\n  hint: is the server's answer an "
                                 "OpenAI completion?", lm->what);
    }
    return LX_OK;
}

static void put_ids(struct lx_buf *b, const int *ids, long n)
{
    lx_buf_puts(b, "[");
    for (long i = 0; i < n; i++)
        lx_buf_printf(b, "%s%d", i ? "," : "", ids[i]);
    lx_buf_puts(b, "]");
}

/* The common head of a completion request. */
static void request_head(struct lx_buf *b, const struct server *s, const int *ids, long n)
{
    lx_buf_puts(b, "{\"model\":");
    lx_buf_json_str(b, s->model);
    lx_buf_puts(b, ",\"prompt\":");
    put_ids(b, ids, n);
    lx_buf_puts(b, ",\"cache_prompt\":false,\"stream\":false");     /* llama-server reuses its cache unless told */
}

static char *url_of(const char *base, const char *path)
{
    size_t n = strlen(base) + strlen(path) + 1;
    char *u = lx_xmalloc(n);
    snprintf(u, n, "%s%s", base, path);
    return u;
}

/* A token id as servers spell one: an integer, or vLLM's "token_id:N"
** (return_tokens_as_token_ids); 0 for anything else. */
static int as_id(const struct lx_json *doc, const struct lx_jv *v, int64_t *k)
{
    struct lx_error sub;
    const char *t;
    char *end = NULL;
    if (lx_json_type(v) == LX_JSON_INT)
        return lx_json_int(doc, v, k, &sub) == LX_OK;
    if (lx_json_str(doc, v, &t, NULL, &sub) < 0 || strncmp(t, "token_id:", 9) != 0)
        return 0;
    *k = strtoll(t + 9, &end, 10);
    return end != t + 9 && !*end;
}

/* Whether a list of tokens whose first is v spells them as ids (an integer,
** or a string "token_id:..."), not as text. */
static int ids_list(const struct lx_json *doc, const struct lx_jv *v)
{
    struct lx_error sub;
    const char *t;
    return lx_json_type(v) == LX_JSON_INT ||
           (lx_json_str(doc, v, &t, NULL, &sub) == LX_OK && strncmp(t, "token_id:", 9) == 0);
}

/* An id of the vocabulary of n_vocab (as_id), into *id (-1 when not an id). */
static int one_id(const struct lx_json *doc, const struct lx_jv *v, long n_vocab, int *id)
{
    int64_t k = -1;
    if (!as_id(doc, v, &k))
        k = -1;
    *id = k >= INT32_MIN && k <= INT32_MAX ? (int)k : -1;
    return k >= 0 && k < n_vocab;
}

/* ---- scoring: echo with logprobs ------------------------------------------------ */

/* What a scoring request asks: the prompt echoed with its log-probabilities,
** its tokens as ids (vLLM's option; lenx serve's too) so they can be checked. */
static const char echo_keys[] = "\"echo\":true,\"logprobs\":1,\"return_tokens_as_token_ids\":true";

/* The echo's logprobs.tokens against the window's ids, where the server
** spells them as ids (vLLM's "token_id:N", asked for, or integers): one per
** log-probability, the window's n ids first, in order. A server that spells
** them as text, or gives none, is taken on trust beyond the lengths. */
static int echo_tokens(const struct lx_lm *lm, const struct lx_json *doc, const struct lx_jv *toks, long n_lp,
                       const int *ids, long n, struct lx_error *err)
{
    int64_t k;
    if (lx_json_type(toks) != LX_JSON_ARRAY || lx_json_len(toks) == 0 || !ids_list(doc, lx_json_at(toks, 0)))
        return LX_OK;
    if (lx_json_len(toks) != n_lp)
        return lx_err(err, LX_ERUN, "%s: the echo of a window of %ld tokens lists %ld tokens and %ld log-probabilities"
                      "\n  hint: the server's logprobs are not one per token; use a server that echoes prompts as "
                      "sent (vLLM, lenx serve)", lm->what, n, lx_json_len(toks), n_lp);
    for (long t = 0; t < n; t++) {
        const char *what = "an entry that is not a token id";
        char num[32];
        if (as_id(doc, lx_json_at(toks, t), &k)) {
            if (k == ids[t])
                continue;
            snprintf(num, sizeof num, "id %lld", (long long)k), what = num;
        }
        return lx_err(err, LX_ERUN, "%s: the echo does not score the window as sent: position %ld is id %d in the "
                      "window, %s in the echo\n  hint: the server changed the prompt (added a start token, or read it "
                      "as text again): its log-probabilities would score the wrong tokens; serve the model so that "
                      "token-id prompts are taken as they are", lm->what, t, ids[t], what);
    }
    return LX_OK;
}

/* The echo's top_logprobs against its token_logprobs: where position t's
** entry holds the window's own token (keyed "token_id:N", as vLLM and lenx
** serve put it first), both give it the same log-probability. A list of
** log-probabilities shifted against the tokens (and top_logprobs) shows
** here; entries keyed by text are taken on trust. */
static int echo_top(const struct lx_lm *lm, const struct lx_json *doc, const struct lx_jv *lp, const int *ids, long n,
                    struct lx_error *err)
{
    const struct lx_jv *top = lx_json_member(lp, "top_logprobs"), *tl = lx_json_member(lp, "token_logprobs");
    for (long t = 1; t < n && lx_json_len(top) == lx_json_len(tl); t++) {
        char key[32];
        double a, b;
        struct lx_error sub;
        snprintf(key, sizeof key, "token_id:%d", ids[t]);
        const struct lx_jv *v = lx_json_member(lx_json_at(top, t), key);
        if (!v || lx_json_num(doc, v, &b, &sub) < 0 || lx_json_num(doc, lx_json_at(tl, t), &a, &sub) < 0 ||
            fabs(a - b) <= 1e-4 * (1.0 + fabs(a)))
            continue;
        return lx_err(err, LX_ERUN, "%s: the echo does not score the window as sent: position %ld (id %d) has "
                      "log-probability %g in token_logprobs and %g in top_logprobs\n  hint: the server's "
                      "log-probabilities are shifted against its tokens; they would score the wrong tokens",
                      lm->what, t, ids[t], a, b);
    }
    return LX_OK;
}

/* The losses of tokens 1 .. n-1 of window ids from the echo in choice c
** (loss[t - 1] = -logprob of token t): its token_logprobs are the window's
** n entries, null first (nothing predicts token 0), then at most `gen`
** generated ones; each a log-probability (<= 0, beyond rounding). vLLM
** writes -inf as -9999. Its tokens, where they are ids, are the window's. */
static int echo_logprobs(const struct lx_lm *lm, const struct lx_json *doc, const struct lx_jv *c, const int *ids,
                         long n, long gen, float *loss, struct lx_error *err)
{
    const struct lx_jv *lp = lx_json_member(lx_json_member(c, "logprobs"), "token_logprobs");
    long len = lx_json_len(lp);
    if (lx_json_type(lp) != LX_JSON_ARRAY)
        return lx_err(err, LX_ERUN, "%s: the answer has no logprobs.token_logprobs (%s)\n  hint: the server does not "
                      "echo prompts with log-probabilities", lm->what, lx_json_type_name(lx_json_type(lp)));
    if (len < n || len > n + gen)
        return lx_err(err, LX_ERUN, "%s: the echo of a window of %ld tokens has %ld log-probabilities, not %ld%s\n"
                      "  hint: the server does not echo the prompt's tokens one for one", lm->what, n, len, n,
                      gen ? " and the one generated" : "");
    if (lx_json_type(lx_json_at(lp, 0)) != LX_JSON_NULL)
        return lx_err(err, LX_ERUN, "%s: the echo's first log-probability is a number, not null (nothing predicts a "
                      "window's first token)\n  hint: the list does not start at the window's first token", lm->what);
    int rc = echo_tokens(lm, doc, lx_json_member(lx_json_member(c, "logprobs"), "tokens"), len, ids, n, err);
    for (long t = 1; t < n && rc == LX_OK; t++) {
        double v;
        struct lx_error sub;
        if (lx_json_num(doc, lx_json_at(lp, t), &v, &sub) < 0)
            return lx_err(err, LX_ERUN, "%s: token %ld of an echoed window has no log-probability", lm->what, t);
        if (v <= -9999.0 || v > 1e-3)
            return lx_err(err, LX_ERUN, "%s: token %ld of an echoed window has log-probability %g%s", lm->what, t, v,
                          v > 0 ? ", above 0" : " (vLLM's -inf): the model gives it probability 0");
        loss[t - 1] = (float)-v;
    }
    return rc == LX_OK ? echo_top(lm, doc, lx_json_member(c, "logprobs"), ids, n, err) : rc;
}

/* lenx serve's attention statistics of a window of n tokens: rows a whole
** number >= 1, and their entropy summed, each row's in [0, log(n + 1)]
** (at most n keys, and a sink's). */
static int attn_stats(const struct lx_lm *lm, const struct lx_json *doc, const struct lx_jv *c, long n,
                      struct lx_lm_score *w, struct lx_error *err)
{
    const struct lx_jv *x = lx_json_member(c, "lenx");
    struct lx_error sub;
    double e, rows;
    if (lx_json_num(doc, lx_json_member(x, "attention_entropy"), &e, &sub) < 0 ||
        lx_json_num(doc, lx_json_member(x, "attention_rows"), &rows, &sub) < 0)
        return lx_err(err, LX_ERUN, "%s: the answer has no lenx.attention_entropy and attention_rows (numbers)\n"
                      "  hint: the server answered lenx_attention_from before; was it restarted as another server?",
                      lm->what);
    if (!(rows >= 1.0 && rows == floor(rows) && isfinite(rows) && e >= -1e-3 && e <= rows * (log((double)n + 1.0)
                                                                                             + 1e-3)))
        return lx_err(err, LX_ERUN, "%s: lenx.attention_entropy %g over %g rows is not an entropy (rows are a whole "
                      "number >= 1; each row's entropy is in [0, log %ld])\n  hint: the server's statistics are "
                      "broken; compare with lenx score on the same model", lm->what, e, rows, n + 1);
    w->attn_entropy = e, w->attn_rows = rows;
    return LX_OK;
}

static int server_score(struct lx_lm *lm, struct lx_lm_score *w, long n, struct lx_error *err)
{
    struct server *s = lm->impl;
    struct lx_http_req *reqs = lx_xcalloc((size_t)n + 1, sizeof *reqs);
    char *url = url_of(s->base, "/completions");
    for (long i = 0; i < n; i++) {
        struct lx_buf b = {0};
        request_head(&b, s, w[i].tok, w[i].n);
        lx_buf_printf(&b, ",\"max_tokens\":%d,\"temperature\":0,%s", s->is_lenx ? 0 : 1, echo_keys);
        if (w[i].attn_row0 >= 0 && (lm->caps & LX_LM_ATTN))
            lx_buf_printf(&b, ",\"lenx_attention_from\":%ld", w[i].attn_row0);
        lx_buf_puts(&b, "}");
        reqs[i] = (struct lx_http_req){.url = url, .body = b.s, .body_len = b.len};
    }
    int rc = send_all(lm, reqs, n, "scoring window", err);
    for (long i = 0; i < n && rc == LX_OK; i++) {
        struct lx_json *doc;
        const struct lx_jv *c;
        if ((rc = first_choice(lm, &reqs[i], &doc, &c, err)) < 0)
            break;
        rc = echo_logprobs(lm, doc, c, w[i].tok, w[i].n, s->is_lenx ? 0 : 1, w[i].loss, err);
        w[i].loss[w[i].n - 1] = 0.0f;
        w[i].attn_entropy = w[i].attn_rows = 0.0;
        if (rc == LX_OK && w[i].attn_row0 >= 0 && (lm->caps & LX_LM_ATTN))
            rc = attn_stats(lm, doc, c, w[i].n, &w[i], err);
        lx_json_free(doc);
    }
    release_all(reqs, n);
    free(url);
    return rc;
}

/* ---- continuations ------------------------------------------------------------- */

/* The generated ids of a choice: token_ids (vLLM's return_token_ids, lenx
** serve), logprobs.tokens as ids (vLLM's "token_id:N"), logprobs.content[].id
** (llama-server), else (-1) the text read back by the tokenizer. -2 for an
** entry that is not an id of the vocabulary, at out[*bad]; -3 for more than
** max of them (*bad: how many). */
static long choice_ids(const struct lx_json *doc, const struct lx_jv *c, long n_vocab, int *out, long max, long *bad)
{
    const struct lx_jv *ids = lx_json_member(c, "token_ids"), *lp = lx_json_member(c, "logprobs");
    const struct lx_jv *toks = lx_json_member(lp, "tokens"), *content = lx_json_member(lp, "content");
    const struct lx_jv *list = lx_json_type(ids) == LX_JSON_ARRAY ? ids : lx_json_type(toks) == LX_JSON_ARRAY ? toks
                               : lx_json_type(content) == LX_JSON_ARRAY ? content : NULL;
    if (!list || (list == toks && lx_json_len(toks) && !ids_list(doc, lx_json_at(toks, 0))))
        return -1;      /* none, or logprobs.tokens spelled as text: read the text back */
    long n = 0;
    if (lx_json_len(list) > max)    /* more than asked for: the server did not generate what was asked */
        return *bad = (long)lx_json_len(list), -3;
    for (long i = 0; i < lx_json_len(list) && n < max; i++) {
        const struct lx_jv *v = lx_json_at(list, i);
        if (!one_id(doc, list == content ? lx_json_member(v, "id") : v, n_vocab, &out[n++]))
            return *bad = n - 1, -2;
    }
    return n;
}

/* The ids of continuation g from choice c (choice_ids, else its text read
** back), with the id the model stopped at put back where the server left
** it out. An answer without ids or text, or with ids [] beside some text,
** or a stop_reason that is no id, fails. */
static int read_continuation(const struct lx_lm *lm, const struct lx_json *doc, const struct lx_jv *c,
                             struct lx_lm_gen *g, struct lx_error *err)
{
    const struct server *s = lm->impl;
    const char *t = NULL, *fin = NULL, *hint = "\n  hint: does the server run the model of this tokenizer?";
    size_t len = 0;
    struct lx_error sub;
    int have_text = lx_json_str(doc, lx_json_member(c, "text"), &t, &len, &sub) == LX_OK;
    long bad = 0, k = choice_ids(doc, c, s->tk->n_vocab, g->out, g->max_tokens, &bad);
    if (k == -2)
        return lx_err(err, LX_ERUN, "%s: token %ld of a continuation is not an id of the vocabulary of %ld (%d)%s",
                      lm->what, bad, s->tk->n_vocab, g->out[bad], hint);
    if (k == -3)
        return lx_err(err, LX_ERUN, "%s: a continuation has %ld token ids, more than the %ld it was asked for\n  hint: "
                      "does the server honour max_tokens?", lm->what, bad, g->max_tokens);
    if (k == 0 && have_text && len > 0)
        return lx_err(err, LX_ERUN, "%s: a continuation has no token ids but the text \"%.60s\"\n  hint: the server's "
                      "ids and text disagree; its answer cannot be read", lm->what, t);
    if (k < 0 && !have_text)
        return lx_err(err, LX_ERUN, "%s: a continuation has neither token ids nor text\n  hint: is the server's "
                      "answer an OpenAI completion (choices[0].text)?", lm->what);
    if (k < 0) {    /* text only: read back by the tokenizer */
        int32_t *ids = NULL;
        if ((k = lx_tok_encode(s->tk, t, (long)len, &ids, &sub)) < 0)
            return lx_err(err, LX_ERUN, "%s: the text of a continuation cannot be read back by the tokenizer: %s",
                          lm->what, sub.msg);
        k = k < g->max_tokens ? k : g->max_tokens;
        memcpy(g->out, ids, sizeof(int) * (size_t)k);
        free(ids);
    }
    lx_json_str(doc, lx_json_member(c, "finish_reason"), &fin, NULL, &sub);
    if (fin && strcmp(fin, "stop") == 0 && k < g->max_tokens && (k == 0 || lx_tok_piece(s->tk, g->out[k - 1], &len))) {
        /* the model's end of text, left out of the answer: the special id it stopped at */
        const struct lx_jv *why = lx_json_member(c, "stop_reason");
        int id = s->tk->eos >= 0 ? s->tk->eos : s->tk->bos;
        int64_t v = 0;
        if (lx_json_type(why) == LX_JSON_INT && !one_id(doc, why, s->tk->n_vocab, &id))
            return lx_err(err, LX_ERUN, "%s: the stop_reason of a continuation, %lld, is not an id of the vocabulary "
                          "of %ld%s", lm->what, lx_json_int(doc, why, &v, &sub) == LX_OK ? (long long)v : -1LL,
                          s->tk->n_vocab, hint);
        g->out[k++] = id;
    }
    g->n_out = k;
    return LX_OK;
}

static int server_generate(struct lx_lm *lm, struct lx_lm_gen *g, long n, struct lx_error *err)
{
    struct server *s = lm->impl;
    struct lx_http_req *reqs = lx_xcalloc((size_t)n + 1, sizeof *reqs);
    char *url = url_of(s->base, "/completions");
    for (long i = 0; i < n; i++) {
        struct lx_buf b = {0};
        request_head(&b, s, g[i].prompt, g[i].n_prompt);
        lx_buf_printf(&b, ",\"max_tokens\":%ld,\"temperature\":", g[i].max_tokens);
        lx_buf_num(&b, g[i].smp.temperature);
        lx_buf_printf(&b, ",\"seed\":%lld,\"return_token_ids\":true", (long long)g[i].smp.seed);
        if (g[i].smp.top_k > 0)
            lx_buf_printf(&b, ",\"top_k\":%ld", g[i].smp.top_k);
        if (!s->is_lenx)    /* ids through the log-probs for servers without return_token_ids */
            lx_buf_puts(&b, ",\"logprobs\":1,\"return_tokens_as_token_ids\":true");
        lx_buf_puts(&b, "}");
        reqs[i] = (struct lx_http_req){.url = url, .body = b.s, .body_len = b.len};
    }
    int rc = send_all(lm, reqs, n, "continuation", err);
    for (long i = 0; i < n && rc == LX_OK; i++) {
        struct lx_json *doc;
        const struct lx_jv *c;
        if ((rc = first_choice(lm, &reqs[i], &doc, &c, err)) < 0)
            break;
        rc = read_continuation(lm, doc, c, &g[i], err);
        lx_json_free(doc);
    }
    release_all(reqs, n);
    free(url);
    return rc;
}

static const struct lx_lm_ops server_ops = {.score = server_score, .generate = server_generate};

/* ---- opening: who the server is, what it can give -------------------------------- */

/* GET or POST one request (no retries beyond the configured ones). */
static int one(struct lx_lm *lm, const char *url, const char *body, struct lx_http_req *r, struct lx_error *err)
{
    struct server *s = lm->impl;
    *r = (struct lx_http_req){.url = url, .body = body, .body_len = body ? strlen(body) : 0};
    return lx_http_run(r, 1, &s->http, err);
}

/* The model id and its metadata from GET /models into the identity. */
static int ask_models(struct lx_lm *lm, const struct lx_server_cfg *cfg, struct lx_buf *id, struct lx_error *err)
{
    struct server *s = lm->impl;
    char *url = url_of(s->base, "/models");
    struct lx_http_req r;
    int rc = one(lm, url, NULL, &r, err);
    free(url);
    if (rc == LX_OK && r.status != 200) {
        char what[300];
        snprintf(what, sizeof what, "GET %s/models", s->shown);
        rc = request_failed(lm, &r, what, LX_EINVAL, "start the server first, and give url as its API's base "
                            "(http://HOST:PORT/v1)", err);
    }
    struct lx_json *doc = NULL;
    struct lx_error sub;
    const struct lx_jv *data = NULL, *m = NULL;
    if (rc == LX_OK && lx_json_parse(&doc, r.resp.s ? r.resp.s : "", r.resp.len, "models", &sub) < 0)
        rc = not_json(lm, "GET /models", &r.resp, &sub, LX_EINVAL, err);
    if (rc == LX_OK)
        data = lx_json_member(lx_json_root(doc), "data");
    struct lx_buf ids = {0};
    for (long i = 0; rc == LX_OK && i < lx_json_len(data) && !m; i++) {
        const char *mid;
        if (lx_json_str(doc, lx_json_member(lx_json_at(data, i), "id"), &mid, NULL, &sub) < 0)
            continue;
        lx_buf_printf(&ids, "%s'%s'", ids.len ? ", " : "", mid);
        if (!cfg->model || strcmp(mid, cfg->model) == 0)
            m = lx_json_at(data, i), s->model = lx_xstrdup(mid);
    }
    if (rc == LX_OK && !m)
        rc = lx_err(err, LX_EINVAL, "%s serves %s, not '%s'\n  hint: model: one of those", lm->what,
                    ids.len ? ids.s : "no model", cfg->model ? cfg->model : "");
    if (rc == LX_OK) {  /* what it says of the model, less what changes when it restarts */
        lx_buf_puts(id, "{\"id\":");
        lx_buf_json_str(id, s->model);
        static const char *keys[] = {"owned_by", "root", "lenx"};    /* not max_model_len: it follows free memory */
        for (int k = 0; k < 3; k++) {
            const struct lx_jv *v = lx_json_member(m, keys[k]);
            const char *str;
            double x;
            if (!v)
                continue;
            lx_buf_printf(id, ",\"%s\":", keys[k]);
            if (lx_json_str(doc, v, &str, NULL, &sub) == LX_OK)
                lx_buf_json_str(id, str);
            else if (lx_json_num(doc, v, &x, &sub) == LX_OK)
                lx_buf_num(id, x);
            else    /* lenx serve's object: kept as the server wrote it, less its path */
                lx_json_canon(doc, v, "model_path", id);
        }
        lx_buf_puts(id, "}");
        s->is_lenx = lx_json_member(m, "lenx") != NULL;
        const char *ms;
        if (lx_json_str(doc, lx_json_member(lx_json_member(m, "lenx"), "methods"), &ms, NULL, &sub) == LX_OK)
            s->methods = lx_xstrdup(ms);
        if (lx_json_str(doc, lx_json_member(lx_json_member(m, "lenx"), "numerics"), &ms, NULL, &sub) == LX_OK)
            s->numerics = lx_xstrdup(ms);
        int64_t tl;     /* lenx serve says what the model was trained at; other servers do not */
        if (lx_json_int(doc, lx_json_member(lx_json_member(m, "lenx"), "train_len"), &tl, &sub) == LX_OK)
            lm->train_len = (long)tl;
    }
    lx_buf_free(&ids);
    lx_json_free(doc);
    lx_buf_free(&r.resp);
    return rc;
}

/* llama-server's GET /props (build, model file) and vLLM's GET /version join
** the identity where the server has them. */
static void ask_build(struct lx_lm *lm, struct lx_buf *id)
{
    struct server *s = lm->impl;
    static const char *paths[] = {"/props", "/version"};
    for (int p = 0; p < 2; p++) {
        char *url = url_of(s->root, paths[p]);
        struct lx_http_req r;
        struct lx_error sub;
        struct lx_json *doc;
        if (one(lm, url, NULL, &r, &sub) == LX_OK && r.status == 200 &&
            lx_json_parse(&doc, r.resp.s ? r.resp.s : "", r.resp.len, "props", &sub) == LX_OK) {
            const struct lx_jv *root = lx_json_root(doc);
            static const char *keys[] = {"build_info", "model_path", "version"};
            for (int k = 0; k < 3; k++) {
                const char *v;
                if (lx_json_str(doc, lx_json_member(root, keys[k]), &v, NULL, &sub) == LX_OK) {
                    lx_buf_printf(id, ",\"%s\":", keys[k]);
                    lx_buf_json_str(id, v);
                }
            }
            lx_json_free(doc);
        }
        lx_buf_free(&r.resp);
        free(url);
    }
}

/* The sample's ids under our tokenizer against the server's /tokenize
** (vLLM's "prompt", llama-server's "content"); a server without one is
** taken on trust (said in the identity). */
static int check_tokenizer(struct lx_lm *lm, struct lx_buf *id, struct lx_error *err)
{
    struct server *s = lm->impl;
    int *ours = NULL;
    long n = lx_tok_prompt(s->tk, sample, strlen(sample), &ours, err);
    if (n < 0)
        return (int)n;
    int has_bos = s->tk->bos >= 0 && n > 0 && ours[0] == s->tk->bos;
    struct lx_buf body = {0};
    lx_buf_puts(&body, "{\"prompt\":");
    lx_buf_json_str(&body, sample);
    lx_buf_puts(&body, ",\"content\":");
    lx_buf_json_str(&body, sample);
    lx_buf_puts(&body, ",\"add_special_tokens\":false,\"add_special\":false}");
    char *url = url_of(s->root, "/tokenize");
    struct lx_http_req r;
    struct lx_json *doc = NULL;
    struct lx_error sub;
    int rc = one(lm, url, body.s, &r, err), checked = 0;
    if (rc == LX_OK && r.status == 200 && lx_json_parse(&doc, r.resp.s, r.resp.len, "tokenize", &sub) == LX_OK) {
        const struct lx_jv *t = lx_json_member(lx_json_root(doc), "tokens");
        long k = lx_json_len(t), same = k == n - has_bos;
        for (long i = 0; i < k && same; i++) {
            int64_t v;
            same = lx_json_int(doc, lx_json_at(t, i), &v, &sub) == LX_OK && v == ours[i + has_bos];
        }
        checked = 1;
        if (!same) {
            struct lx_buf mine = {0};
            put_ids(&mine, ours + has_bos, n - has_bos);
            rc = lx_err(err, LX_EINVAL, "%s: its /tokenize reads the sample \"%s\" as %.300s, the tokenizer %s as "
                        "%.300s: prompts made here would not be the model's tokens\n  hint: name the model's own "
                        "tokenizer (tokenizer: PATH)", lm->what, sample, r.resp.s, s->tk->path[0] ? s->tk->path
                        : "(bytes)", mine.s);
            lx_buf_free(&mine);
        }
    }
    lx_buf_printf(id, ",\"tokenizer_checked\":%s", checked ? "true" : "false");
    lx_json_free(doc);
    lx_buf_free(&r.resp);
    lx_buf_free(&body);
    free(url);
    free(ours);
    return rc;
}

/* One echo request on a short prompt: does the server return the prompt's
** log-probabilities (and lenx serve's attention statistics)? */
static int ask_caps(struct lx_lm *lm, struct lx_error *err)
{
    struct server *s = lm->impl;
    int *ids = NULL;
    long n = lx_tok_prompt(s->tk, "Once upon a time", 16, &ids, err);
    if (n < 0)
        return (int)n;
    if (n > 4)
        n = 4;
    struct lx_buf b = {0};
    request_head(&b, s, ids, n);
    lx_buf_printf(&b, ",\"max_tokens\":1,\"temperature\":0,%s", echo_keys);
    if (s->is_lenx)
        lx_buf_puts(&b, ",\"lenx_attention_from\":0");
    lx_buf_puts(&b, "}");
    char *url = url_of(s->base, "/completions");
    struct lx_http_req r;
    int rc = one(lm, url, b.s, &r, err);
    lm->caps = 0;
    if (rc == LX_OK && r.status == 400) {  /* older llama-server: "Only no echo is supported"; ask without echo */
        lx_buf_free(&r.resp);
        lx_buf_reset(&b);
        request_head(&b, s, ids, n);
        lx_buf_puts(&b, ",\"max_tokens\":1,\"temperature\":0}");
        if ((rc = one(lm, url, b.s, &r, err)) == LX_OK && r.status == 200)
            lm->caps = LX_LM_GENERATE;
    }
    if (rc == LX_OK && r.status == 200 && !lm->caps) {
        struct lx_json *doc;
        const struct lx_jv *c;
        struct lx_error sub;
        lm->caps = LX_LM_GENERATE;
        if (first_choice(lm, &r, &doc, &c, &sub) == LX_OK) {
            float loss[4];
            const struct lx_jv *lp = lx_json_member(c, "logprobs"), *tl = lx_json_member(lp, "token_logprobs");
            if (lx_json_type(tl) == LX_JSON_ARRAY)  /* a server that changes prompts is refused, for every task */
                rc = echo_tokens(lm, doc, lx_json_member(lp, "tokens"), lx_json_len(tl), ids, n, err);
            if (rc == LX_OK && echo_logprobs(lm, doc, c, ids, n, 1, loss, &sub) == LX_OK)
                lm->caps |= LX_LM_LOGPROBS;
            if (lx_json_member(lx_json_member(c, "lenx"), "attention_entropy"))
                lm->caps |= LX_LM_ATTN;
            lx_json_free(doc);
        }
    } else if (rc == LX_OK && r.status != 200) {
        char what[80];
        snprintf(what, sizeof what, "a completion of a %ld-token prompt", n);
        rc = request_failed(lm, &r, what, LX_EINVAL, "is the server running?", err);
    }
    lx_buf_free(&r.resp);
    lx_buf_free(&b);
    free(url);
    free(ids);
    return rc;
}

int lx_lm_server_open(struct lx_lm *lm, const struct lx_server_cfg *cfg, const struct lx_tokenizer *tk,
                      const char *name, struct lx_error *err)
{
    memset(lm, 0, sizeof *lm);
    struct server *s = lx_xcalloc(1, sizeof *s);
    size_t n = strlen(cfg->url);
    while (n > 0 && cfg->url[n - 1] == '/')
        n--;
    s->base = lx_xmalloc(n + 1);
    memcpy(s->base, cfg->url, n);
    s->base[n] = '\0';
    s->root = lx_xstrdup(s->base);
    if (n >= 3 && strcmp(s->root + n - 3, "/v1") == 0)
        s->root[n - 3] = '\0';
    s->shown = lx_xstrdup(s->base);     /* a password in the URL (http://user:pw@host/v1) stays out of sight */
    char *host = strstr(s->shown, "://"), *at = NULL;
    for (char *p = host ? host + 3 : s->shown; host && *p && !strchr("/?#", *p); p++)   /* the authority's last '@' */
        at = *p == '@' ? p : at;
    if (at)
        memmove(host + 3, at + 1, strlen(at + 1) + 1);
    if (cfg->api_key) {
        struct lx_buf a = {0};
        lx_buf_printf(&a, "Authorization: Bearer %s", cfg->api_key);
        s->auth = lx_xstrdup(lx_buf_str(&a));
        lx_buf_free(&a);
    }
    s->tk = lx_tok_or_byte(tk);
    s->http = (struct lx_http_opts){.concurrency = cfg->concurrency, .timeout = cfg->timeout,
                                    .retries = cfg->retries, .max_resp = 256L << 20, .auth = s->auth};
    lm->ops = &server_ops;
    lm->impl = s;
    snprintf(lm->what, sizeof lm->what, "server '%s' (%s)", name, s->shown);
    struct lx_buf id = {0};
    lx_buf_puts(&id, "{\"model\":");
    int rc = ask_models(lm, cfg, &id, err);
    if (rc == LX_OK) {
        ask_build(lm, &id);
        rc = check_tokenizer(lm, &id, err);
    }
    if (rc == LX_OK)
        rc = ask_caps(lm, err);
    lx_buf_puts(&id, "}");
    s->identity = lx_xstrdup(lx_buf_str(&id));
    lx_buf_free(&id);
    if (rc < 0)
        lx_lm_server_close(lm);
    return rc;
}

void lx_lm_server_close(struct lx_lm *lm)
{
    struct server *s = lm->impl;
    if (s) {
        free(s->base), free(s->shown), free(s->auth), free(s->root), free(s->model), free(s->identity);
        free(s->methods), free(s->numerics);
        free(s);
    }
    memset(lm, 0, sizeof *lm);
}

const char *lx_lm_server_identity(const struct lx_lm *lm)
{
    const struct server *s = lm->impl;
    return s ? s->identity : "";
}

const char *lx_lm_server_methods(const struct lx_lm *lm)
{
    const struct server *s = lm->impl;
    return s ? s->methods : NULL;
}

const char *lx_lm_server_numerics(const struct lx_lm *lm)
{
    const struct server *s = lm->impl;
    return s && s->numerics ? s->numerics : "server";
}
