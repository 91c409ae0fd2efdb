/*
** harness/backends/openai.c - parsing and checking the requests of `lenx serve`
** (see openai.h). JSON through harness/core/json.c (jansson).
*/
#include "harness/backends/openai.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "harness/core/json.h"

int lx_oai_fail(struct lx_oai_err *e, int status, const char *param, const char *fmt, ...)
{
    e->status = status;
    snprintf(e->param, sizeof e->param, "%s", param);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return LX_EINVAL;
}

void lx_oai_error_json(struct lx_buf *out, const struct lx_oai_err *e)
{
    const char *type = e->status == 404 ? "NotFoundError" : e->status == 405 ? "MethodNotAllowed"
                     : e->status == 413 ? "RequestTooLarge" : e->status == 415 ? "UnsupportedMediaType"
                     : e->status == 503 ? "ServiceUnavailable"
                     : e->status >= 500 ? "InternalServerError" : "BadRequestError";
    lx_buf_puts(out, "{\"error\":{\"message\":");
    lx_buf_json_str(out, e->msg);
    lx_buf_puts(out, ",\"type\":");
    lx_buf_json_str(out, type);
    lx_buf_puts(out, ",\"param\":");
    lx_buf_json_str(out, e->param[0] ? e->param : NULL);
    lx_buf_printf(out, ",\"code\":%d}}\n", e->status);
}

int lx_oai_body_type(const char *type, struct lx_oai_err *e)
{
    if (!type)
        return LX_OK;
    type += strspn(type, " \t");
    size_t n = strcspn(type, "; \t");     /* the media type, before its parameters */
    static const char json[] = "application/json", form[] = "application/x-www-form-urlencoded", app[] = "application/";
    int ok = n == 0 || (n == strlen(json) && strncasecmp(type, json, n) == 0) ||
             (n == strlen(form) && strncasecmp(type, form, n) == 0) ||
             (n > strlen(app) + 5 && strncasecmp(type, app, strlen(app)) == 0 &&
              strncasecmp(type + n - 5, "+json", 5) == 0);
    if (ok)
        return LX_OK;
    return lx_oai_fail(e, 415, "", "the body is declared %.*s, not JSON\n  hint: send JSON with Content-Type: "
                       "application/json (curl: -H 'Content-Type: application/json')", (int)(n < 100 ? n : 100), type);
}

void lx_oai_doc_free(void *doc)
{
    lx_json_free(doc);
}

/* The body as a JSON object: *doc and its root. */
static int parse_object(struct lx_json **doc, const struct lx_jv **root, const char *body, size_t n,
                        struct lx_oai_err *e)
{
    struct lx_error err;
    if (lx_json_parse(doc, body, n, "request", &err) < 0) {
        char *hint = strstr(err.msg, "\n  hint:");     /* the parser's hint is about files */
        if (hint)
            *hint = '\0';
        return lx_oai_fail(e, 400, "", "the body is not JSON: %s\n  hint: send one JSON object, UTF-8, with "
                           "Content-Type: application/json", err.msg);
    }
    *root = lx_json_root(*doc);
    enum lx_json_type t = lx_json_type(*root);
    if (t != LX_JSON_OBJECT) {
        lx_json_free(*doc);
        *doc = NULL;
        return lx_oai_fail(e, 400, "", "the body must be a JSON object, not %s", lx_json_type_name(t));
    }
    return LX_OK;
}

/* A member that is absent or null: 1. */
static int absent(const struct lx_jv *v)
{
    return !v || lx_json_type(v) == LX_JSON_NULL;
}

/* An integer member in [lo, hi] into *out (left as is when absent or null). */
static int get_int(const struct lx_json *doc, const struct lx_jv *obj, const char *key, int64_t lo, int64_t hi,
                   int64_t *out, struct lx_oai_err *e)
{
    const struct lx_jv *v = lx_json_member(obj, key);
    if (absent(v))
        return LX_OK;
    int64_t x;
    struct lx_error err;
    double d = 0;
    /* a whole number past 2^53 (99999999999999999999 read as a double) is an integer out of range */
    if (lx_json_type(v) == LX_JSON_REAL && lx_json_num(doc, v, &d, &err) == LX_OK && d == floor(d) &&
        (d < (double)lo || d > (double)hi || fabs(d) >= 0x1p63))
        return lx_oai_fail(e, 400, key, "'%s' is %.17g; it must be in [%lld, %lld]", key, d, (long long)lo,
                           (long long)hi);
    if (lx_json_type(v) != LX_JSON_INT || lx_json_int(doc, v, &x, &err) < 0)
        return lx_oai_fail(e, 400, key, "'%s' must be an integer, not %s", key, lx_json_type_name(lx_json_type(v)));
    if (x < lo || x > hi)
        return lx_oai_fail(e, 400, key, "'%s' is %lld; it must be in [%lld, %lld]", key, (long long)x, (long long)lo,
                           (long long)hi);
    *out = x;
    return LX_OK;
}

static int get_bool(const struct lx_jv *obj, const char *key, int *out, struct lx_oai_err *e)
{
    const struct lx_jv *v = lx_json_member(obj, key);
    if (absent(v))
        return LX_OK;
    if (lx_json_type(v) != LX_JSON_BOOL)
        return lx_oai_fail(e, 400, key, "'%s' must be true or false, not %s", key, lx_json_type_name(lx_json_type(v)));
    struct lx_error err;
    return lx_json_bool(NULL, v, out, &err) < 0 ? lx_oai_fail(e, 400, key, "'%s' must be a boolean", key) : LX_OK;
}

/* A list of token ids (an array of integers in [0, vocab)) into a new array. */
static int get_ids(const struct lx_json *doc, const struct lx_jv *arr, const struct lx_oai_limits *lim,
                   const char *what, int **ids, long *n, struct lx_oai_err *e)
{
    long len = lx_json_len(arr);
    *ids = NULL;
    *n = 0;
    if (len > lim->max_len && !strncmp(what, "prompt", 6))
        return lx_oai_fail(e, 400, what, "%s has %ld tokens; this server holds at most %ld (prompt and max_tokens "
                           "together)", what, len, lim->max_len);
    if (len > lim->max_len)     /* /detokenize's ids: no prompt, no max_tokens */
        return lx_oai_fail(e, 400, what, "%s has %ld ids; this server holds at most %ld\n  hint: send at most that "
                           "many at once (lenx serve --max-len)", what, len, lim->max_len);
    int *out = lx_xmalloc(sizeof(int) * (size_t)(len > 0 ? len : 1));
    for (long i = 0; i < len; i++) {
        const struct lx_jv *v = lx_json_at(arr, i);
        int64_t x = -1;
        struct lx_error err;
        if (lx_json_type(v) != LX_JSON_INT || lx_json_int(doc, v, &x, &err) < 0 || x < 0 || x >= lim->vocab) {
            free(out);
            return lx_oai_fail(e, 400, what, "%s[%ld] must be a token id in [0, %ld), not %s", what, i, lim->vocab,
                               lx_json_type(v) == LX_JSON_INT ? "one outside the vocabulary"
                                                              : lx_json_type_name(lx_json_type(v)));
        }
        out[i] = (int)x;
    }
    *ids = out;
    *n = len;
    return LX_OK;
}

/* prompt: a string, a list of strings, a list of ids, or a list of lists of ids. */
static int get_prompts(struct lx_oai_completion *r, const struct lx_json *doc, const struct lx_jv *root,
                       const struct lx_oai_limits *lim, struct lx_oai_err *e)
{
    const struct lx_jv *p = lx_json_member(root, "prompt");
    struct lx_error err;
    if (absent(p))
        return lx_oai_fail(e, 400, "prompt", "'prompt' is required: a string, a list of token ids, or a list of "
                           "either");
    if (lx_json_type(p) == LX_JSON_STRING) {
        r->n_prompts = 1;
        return lx_json_str(doc, p, &r->prompt[0].text, &r->prompt[0].len, &err) < 0
                   ? lx_oai_fail(e, 400, "prompt", "'prompt' is not a string") : LX_OK;
    }
    long n = lx_json_len(p);
    if (lx_json_type(p) != LX_JSON_ARRAY || n < 1)
        return lx_oai_fail(e, 400, "prompt", "'prompt' must be a string or a non-empty list, not %s",
                           lx_json_type(p) == LX_JSON_ARRAY ? "an empty list" : lx_json_type_name(lx_json_type(p)));
    enum lx_json_type t0 = lx_json_type(lx_json_at(p, 0));
    if (t0 == LX_JSON_INT) {
        r->n_prompts = 1;
        return get_ids(doc, p, lim, "prompt", &r->prompt[0].ids, &r->prompt[0].n, e);
    }
    if (n > LX_OAI_MAX_PROMPTS)
        return lx_oai_fail(e, 400, "prompt", "'prompt' holds %ld prompts; a request may hold at most %d\n"
                           "  hint: send them in several requests", n, LX_OAI_MAX_PROMPTS);
    for (long i = 0; i < n; i++) {
        const struct lx_jv *v = lx_json_at(p, i);
        struct lx_oai_prompt *q = &r->prompt[i];
        char what[48];
        snprintf(what, sizeof what, "prompt[%ld]", i);
        r->n_prompts = (int)i + 1;
        if (lx_json_type(v) == LX_JSON_STRING && t0 == LX_JSON_STRING) {
            if (lx_json_str(doc, v, &q->text, &q->len, &err) < 0)
                return lx_oai_fail(e, 400, "prompt", "%s is not a string", what);
        } else if (lx_json_type(v) == LX_JSON_ARRAY && t0 == LX_JSON_ARRAY && lx_json_len(v) > 0) {
            if (get_ids(doc, v, lim, what, &q->ids, &q->n, e) < 0)
                return LX_EINVAL;
        } else {
            return lx_oai_fail(e, 400, "prompt", "%s must be %s like prompt[0], not %s", what,
                               t0 == LX_JSON_STRING ? "a string" : "a non-empty list of token ids",
                               lx_json_type_name(lx_json_type(v)));
        }
    }
    return LX_OK;
}

static int get_stop(struct lx_oai_completion *r, const struct lx_json *doc, const struct lx_jv *root,
                    struct lx_oai_err *e)
{
    const struct lx_jv *s = lx_json_member(root, "stop");
    struct lx_error err;
    if (absent(s))
        return LX_OK;
    int one = lx_json_type(s) == LX_JSON_STRING;
    long n = one ? 1 : lx_json_len(s);
    if (!one && (lx_json_type(s) != LX_JSON_ARRAY || n > LX_OAI_MAX_STOP))
        return lx_oai_fail(e, 400, "stop", "'stop' must be a string or a list of at most %d strings", LX_OAI_MAX_STOP);
    for (long i = 0; i < n; i++) {
        const struct lx_jv *v = one ? s : lx_json_at(s, i);
        if (lx_json_type(v) != LX_JSON_STRING || lx_json_str(doc, v, &r->stop[i], &r->stop_len[i], &err) < 0)
            return lx_oai_fail(e, 400, "stop", "'stop' must hold strings, not %s", lx_json_type_name(lx_json_type(v)));
        if (r->stop_len[i] < 1 || r->stop_len[i] > LX_OAI_MAX_STOP_LEN)
            return lx_oai_fail(e, 400, "stop", "a stop string must have 1 to %d bytes, not %zu", LX_OAI_MAX_STOP_LEN,
                               r->stop_len[i]);
        r->n_stop = (int)i + 1;
    }
    return LX_OK;
}

/* Fields a request may not set otherwise: each a clear refusal. */
static int refuse_unsupported(const struct lx_json *doc, const struct lx_jv *root, struct lx_oai_err *e)
{
    int64_t n = 1, best_of = 1;
    if (get_int(doc, root, "n", 1, 1, &n, e) < 0 || get_int(doc, root, "best_of", 1, 1, &best_of, e) < 0)
        return LX_EINVAL;
    return LX_OK;
}

/* stream and stream_options; what a stream cannot carry is refused. */
static int get_stream(struct lx_oai_completion *r, const struct lx_jv *root, struct lx_oai_err *e)
{
    const struct lx_jv *o = lx_json_member(root, "stream_options");
    if (get_bool(root, "stream", &r->stream, e) < 0)
        return LX_EINVAL;
    if (!absent(o) && lx_json_type(o) != LX_JSON_OBJECT)
        return lx_oai_fail(e, 400, "stream_options", "'stream_options' must be an object, not %s",
                           lx_json_type_name(lx_json_type(o)));
    if (!absent(o) && get_bool(o, "include_usage", &r->stream_usage, e) < 0)
        return LX_EINVAL;
    if (!r->stream && !absent(o))
        return lx_oai_fail(e, 400, "stream_options", "'stream_options' is only read with \"stream\": true");
    if (r->stream && r->logprobs >= 0)
        return lx_oai_fail(e, 400, "logprobs", "log-probabilities are not streamed\n  hint: send \"stream\": false "
                           "to have them");
    if (r->stream && r->attn_from >= 0)
        return lx_oai_fail(e, 400, "lenx_attention_from", "the attention entropy is not streamed\n  hint: send "
                           "\"stream\": false to have it");
    return LX_OK;
}

int lx_oai_completion_parse(struct lx_oai_completion *r, const char *body, size_t n,
                            const struct lx_oai_limits *lim, struct lx_oai_err *e)
{
    memset(r, 0, sizeof *r);
    r->max_tokens = 16;
    r->temperature = 1.0;
    r->logprobs = -1;
    r->attn_from = -1;
    struct lx_json *doc;
    const struct lx_jv *root;
    if (parse_object(&doc, &root, body, n, e) < 0)
        return LX_EINVAL;
    r->doc = doc;
    struct lx_error err;
    int64_t max_tokens = r->max_tokens, top_k = 0, seed = 0, logprobs = -1, attn = -1;
    int rc = refuse_unsupported(doc, root, e);
    if (rc == LX_OK)
        rc = get_prompts(r, doc, root, lim, e);
    if (rc == LX_OK)
        rc = get_int(doc, root, "max_tokens", 0, lim->max_len, &max_tokens, e);
    if (rc == LX_OK)
        rc = get_int(doc, root, "top_k", -1, INT32_MAX, &top_k, e);
    if (rc == LX_OK)
        rc = get_int(doc, root, "seed", INT64_MIN, INT64_MAX, &seed, e);
    if (rc == LX_OK)
        rc = get_int(doc, root, "lenx_attention_from", 0, lim->max_len, &attn, e);
    const struct lx_jv *lp = lx_json_member(root, "logprobs"), *t = lx_json_member(root, "temperature"),
                       *m = lx_json_member(root, "model");
    if (rc == LX_OK && !absent(lp))
        rc = get_int(doc, root, "logprobs", 0, LX_OAI_MAX_LOGPROBS, &logprobs, e);
    if (rc == LX_OK && !absent(t) &&
        (lx_json_num(doc, t, &r->temperature, &err) < 0 || !(r->temperature >= 0.0 && r->temperature <= 100.0)))
        rc = lx_oai_fail(e, 400, "temperature", "'temperature' must be a number in [0, 100]");
    size_t model_len = 0;   /* a NUL inside would hide the rest from the name check */
    if (rc == LX_OK && !absent(m) && (lx_json_type(m) != LX_JSON_STRING ||
                                      lx_json_str(doc, m, &r->model, &model_len, &err) < 0 ||
                                      strlen(r->model) != model_len))
        rc = lx_oai_fail(e, 400, "model", "'model' must be a string (without a NUL character)");
    if (rc == LX_OK)
        rc = get_bool(root, "echo", &r->echo, e);
    if (rc == LX_OK)
        rc = get_bool(root, "return_tokens_as_token_ids", &r->token_ids, e);
    if (rc == LX_OK)
        rc = get_bool(root, "return_token_ids", &r->return_ids, e);
    if (rc == LX_OK)
        rc = get_bool(root, "ignore_eos", &r->ignore_eos, e);
    if (rc == LX_OK)
        rc = get_stop(r, doc, root, e);
    r->max_tokens = (long)max_tokens;
    r->top_k = (long)top_k;
    r->seed = (uint64_t)seed;
    r->has_seed = lx_json_member(root, "seed") != NULL;
    r->logprobs = (int)logprobs;
    r->attn_from = (long)attn;
    if (rc == LX_OK)
        rc = get_stream(r, root, e);
    for (int i = 0; rc == LX_OK && i < r->n_prompts; i++)
        if (r->prompt[i].ids && r->prompt[i].n + r->max_tokens > lim->max_len)
            rc = lx_oai_fail(e, 400, "max_tokens", "prompt %d has %ld tokens and max_tokens is %ld: together more "
                             "than the %ld tokens this server holds", i, r->prompt[i].n, r->max_tokens, lim->max_len);
    if (rc < 0)
        lx_oai_completion_release(r);
    return rc;
}

void lx_oai_completion_release(struct lx_oai_completion *r)
{
    for (int i = 0; i < r->n_prompts; i++)
        free(r->prompt[i].ids);
    lx_json_free(r->doc);
    memset(r, 0, sizeof *r);
}

int lx_oai_tokenize_parse(void **doc_out, const char *body, size_t n, const char **text, size_t *len, int *special,
                          struct lx_oai_err *e)
{
    struct lx_json *doc;
    const struct lx_jv *root;
    struct lx_error err;
    *doc_out = NULL;
    if (parse_object(&doc, &root, body, n, e) < 0)
        return LX_EINVAL;
    const struct lx_jv *p = lx_json_member(root, "prompt");
    const char *key = "prompt";
    if (absent(p) && !absent(lx_json_member(root, "content")))     /* llama-server's spelling */
        p = lx_json_member(root, key = "content");
    *special = 1;
    int rc = get_bool(root, lx_json_member(root, "add_special") ? "add_special" : "add_special_tokens", special, e);
    if (rc == LX_OK && (lx_json_type(p) != LX_JSON_STRING || lx_json_str(doc, p, text, len, &err) < 0))
        rc = lx_oai_fail(e, 400, key, "'%s' %s\n  hint: {\"prompt\": \"text\", \"add_special_tokens\": false}", key,
                         absent(p) ? "is required: the text to tokenize" : "must be a string");
    if (rc < 0) {
        lx_json_free(doc);
        return rc;
    }
    *doc_out = doc;
    return LX_OK;
}

int lx_oai_detokenize_parse(const char *body, size_t n, const struct lx_oai_limits *lim, int **ids, long *n_ids,
                            struct lx_oai_err *e)
{
    struct lx_json *doc;
    const struct lx_jv *root;
    *ids = NULL;
    *n_ids = 0;
    if (parse_object(&doc, &root, body, n, e) < 0)
        return LX_EINVAL;
    const struct lx_jv *t = lx_json_member(root, "tokens");
    int rc = lx_json_type(t) == LX_JSON_ARRAY ? get_ids(doc, t, lim, "tokens", ids, n_ids, e)
                                              : lx_oai_fail(e, 400, "tokens", "'tokens' must be a list of token ids");
    lx_json_free(doc);
    return rc;
}
