/*
** harness/backends/serve.c - the answers of `lenx serve` (see serve.h): the
** OpenAI completions API, the tokenizer endpoints, /v1/models and /health,
** on lenx's engine through the language-model interface (harness/engine/lm).
*/
#include "harness/backends/serve.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/engine/tokenizers/tokenizer.h"

static int answer_error(struct lx_buf *out, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int answer_error(struct lx_buf *out, int status, const char *param, const char *fmt, ...)
{
    struct lx_oai_err e = {.status = status};
    snprintf(e.param, sizeof e.param, "%s", param);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    lx_buf_reset(out);
    lx_oai_error_json(out, &e);
    return status;
}

static int refused(struct lx_buf *out, const struct lx_oai_err *e)
{
    lx_buf_reset(out);
    lx_oai_error_json(out, e);
    return e->status;
}

/* ---- tokens as text ---------------------------------------------------------- */

/* The text a special id stands for in token lists: the names SentencePiece
** models use, which /tokenize reads back as the id. */
static const char *special_text(const struct lx_tokenizer *tk, int id)
{
    return id == tk->bos ? "<s>" : id == tk->eos ? "</s>" : id == tk->pad ? "<pad>" : "<unk>";
}

/* The bytes of id inside a text (nothing for a special id). */
static const char *piece(const struct lx_tokenizer *tk, int id, size_t *len)
{
    const char *p = lx_tok_piece(tk, id, len);
    if (!p)
        *len = 0;
    return p ? p : "";
}

/* ids[0, n) as text: their pieces, specials left out. */
static void put_pieces(struct lx_buf *b, const struct lx_tokenizer *tk, const int *ids, long n)
{
    for (long i = 0; i < n; i++) {
        size_t len;
        const char *p = piece(tk, ids[i], &len);
        lx_buf_putn(b, p, len);
    }
}

/* The bytes of ids[0, n)'s text. */
static size_t pieces_len(const struct lx_tokenizer *tk, const int *ids, long n)
{
    size_t all = 0, len;
    for (long i = 0; i < n; i++)
        piece(tk, ids[i], &len), all += len;
    return all;
}

/* The spaces at the start of a text t[0, n) that the tokenizer's decoder
** drops (SentencePiece's dummy prefix: " Once" reads "Once", as Hugging Face
** decodes it and vLLM returns it). */
static size_t dummy_prefix(const struct lx_tokenizer *tk, const char *t, size_t n)
{
    size_t k = 0;
    while (k < n && (int)k < tk->strip_lead && t[k] == ' ')
        k++;
    return k;
}

/* dummy_prefix of the text of ids[0, n), read from its first pieces only. */
static size_t pieces_dummy_prefix(const struct lx_tokenizer *tk, const int *ids, long n)
{
    size_t k = 0, len;
    for (long i = 0; i < n && (int)k < tk->strip_lead; i++) {
        const char *p = piece(tk, ids[i], &len);
        for (size_t j = 0; j < len; j++, k++)
            if ((int)k >= tk->strip_lead || p[j] != ' ')
                return k;
    }
    return k;
}

/* A token as the JSON string clients read: its piece, a special's name,
** "bytes:\\xNN..." for a piece that is not UTF-8 text, or "token_id:N"
** (vLLM's return_tokens_as_token_ids). */
static void put_token(struct lx_buf *b, const struct lx_tokenizer *tk, int id, int as_id)
{
    size_t len;
    const char *p = lx_tok_piece(tk, id, &len);
    int text = p != NULL;   /* a piece that is not UTF-8 text, or holds a NUL, is spelled as its bytes */
    for (size_t i = 0; text && i < len;) {
        int k = lx_utf8_len((const unsigned char *)p + i, len - i < 4 ? len - i : 4);
        text = k > 0 && p[i] != '\0';
        i += k > 0 ? (size_t)k : 1;
    }
    if (as_id) {
        lx_buf_printf(b, "\"token_id:%d\"", id);
    } else if (text) {
        lx_buf_json_strn(b, p, len);
    } else if (p) {     /* vLLM's spelling: "bytes:\\xe2\\x80" */
        lx_buf_puts(b, "\"bytes:");
        for (size_t i = 0; i < len; i++)
            lx_buf_printf(b, "\\\\x%02x", (unsigned char)p[i]);
        lx_buf_puts(b, "\"");
    } else {
        lx_buf_json_str(b, special_text(tk, id));
    }
}

/* ---- completions ------------------------------------------------------------- */

/* One choice's tokens: the prompt, then what was generated and kept. */
struct choice {
    int *seq;           /* (n_prompt + n_gen) */
    long n_prompt, n_gen;
    int stop_id;        /* the special id that ended the continuation, or -1 */
    const char *finish; /* "length" or "stop" */
    size_t text_len;    /* bytes of the continuation's text: its tokens' pieces, cut before a stop string */
    struct lx_lm_score sc;  /* when scored: the whole sequence */
    int scored;
};

/* Where the earliest stop string begins in text[0, n), else n. */
static size_t first_stop(const struct lx_oai_completion *r, const char *text, size_t n)
{
    size_t cut = n;
    for (int i = 0; i < r->n_stop; i++)
        for (size_t at = 0; at + r->stop_len[i] <= cut; at++)
            if (memcmp(text + at, r->stop[i], r->stop_len[i]) == 0) {
                cut = at;
                break;
            }
    return cut;
}

static long stop_cut(const void *r, const char *text, long n)
{
    return (long)first_stop(r, text, (size_t)n);
}

/* The n_out tokens after the prompt (seq[n_prompt, ...)) kept up to the
** first special id or stop string, and the text: up to the stop string (the
** token it begins in stays, the text is cut inside it). */
static void keep_continuation(struct lx_serve *sv, const struct lx_oai_completion *r, struct choice *c, long n_out)
{
    const int *g = c->seq + c->n_prompt;
    long keep = 0;
    size_t len;
    while (keep < n_out && (r->ignore_eos || lx_tok_piece(sv->tok, g[keep], &len)))
        keep++;
    c->stop_id = keep < n_out ? g[keep] : -1;
    if (keep < n_out)
        c->finish = "stop";     /* the model's end of text (or another special id) */
    struct lx_buf text = {0};
    put_pieces(&text, sv->tok, g, keep);
    size_t cut = first_stop(r, text.s, text.len);
    c->text_len = cut;
    if (cut < text.len) {   /* tokens that begin before the stop string stay */
        size_t off = 0;
        long k = 0;
        while (k < keep && off < cut)
            piece(sv->tok, g[k], &len), off += len, k++;
        keep = k;
        c->finish = "stop";
        c->stop_id = -1;
    }
    lx_buf_free(&text);
    c->n_gen = keep;
}

static struct lx_lm_sampling sampling_of(const struct lx_oai_completion *r)
{
    return (struct lx_lm_sampling){.temperature = r->temperature, .top_k = r->top_k > 0 ? r->top_k : 0,
                                   .seed = r->seed};
}

/* Has the request's answer been given up (lx_httpd_stream's gone; never without one)? */
static int request_gone(const struct lx_httpd_stream *st)
{
    return st && st->gone && st->gone(st->arg);
}

/* A sink that ends a generation once nobody reads its answer (the request
** was answered 503 at its time limit), around the one that cuts at stops. */
struct watched {
    struct lx_gen_sink sink;
    const struct lx_gen_sink *inner;
    const struct lx_httpd_stream *st;
};

static int watched_token(void *arg, long k, int id)
{
    struct watched *w = arg;
    return request_gone(w->st) || w->inner->token(w->inner->arg, k, id);
}

/* Generate for prompt ids (seq[0, n_prompt)), cut at the first special id
** or stop string. The engine stops where keep_continuation cuts, not at
** max_tokens: where sink says (a stream's), else where lx_lm_stop does, or
** once watch says its request is gone (watch NULL, or without a gone: never). */
static int generate(struct lx_serve *sv, const struct lx_oai_completion *r, const struct lx_lm_sampling *s,
                    const struct lx_gen_sink *sink, const struct lx_httpd_stream *watch, struct choice *c,
                    struct lx_error *err)
{
    c->finish = "length";
    if (r->max_tokens == 0)
        return LX_OK;
    long n_out = 0;
    struct lx_lm_stop stop;
    lx_lm_stop_init(&stop, sv->tok, stop_cut, r);
    stop.past_specials = r->ignore_eos;
    struct watched w = {{watched_token, NULL, stop.sink.pilot}, &stop.sink, watch};
    w.sink.arg = &w;
    const struct lx_gen_sink *use = sink ? sink : watch ? &w.sink : &stop.sink;
    int rc = lx_lm_generate(sv->lm, c->seq, c->n_prompt, r->max_tokens, s, use, c->seq + c->n_prompt, &n_out, err);
    lx_lm_stop_free(&stop);
    if (rc == LX_OK)
        keep_continuation(sv, r, c, n_out);
    return rc;
}

/* The continuation's text (cut at a stop string), after the prompt's when
** echoed. */
static void choice_text(struct lx_buf *t, struct lx_serve *sv, const struct lx_oai_completion *r,
                        const struct choice *c)
{
    if (r->echo)
        put_pieces(t, sv->tok, c->seq, c->n_prompt);
    size_t start = t->len;
    put_pieces(t, sv->tok, c->seq + c->n_prompt, c->n_gen);
    if (t->len > start + c->text_len)
        t->len = start + c->text_len, t->s[t->len] = '\0';
    /* the text's start: the echoed prompt's, or the continuation's after a prompt without text (BOS) */
    size_t drop = r->echo || !pieces_len(sv->tok, c->seq, c->n_prompt) ? dummy_prefix(sv->tok, t->s, t->len) : 0;
    if (drop) {
        memmove(t->s, t->s + drop, t->len - drop + 1);
        t->len -= drop;
    }
}

static void put_text(struct lx_buf *b, struct lx_serve *sv, const struct lx_oai_completion *r, const struct choice *c)
{
    struct lx_buf t = {0};
    choice_text(&t, sv, r, c);
    lx_buf_json_strn(b, t.s ? t.s : "", t.len);
    lx_buf_free(&t);
}

/* logprobs: {tokens, token_logprobs, top_logprobs, text_offset} of the
** echoed prompt (its first token has null: nothing predicts it) and the
** continuation. text_offset counts bytes of the choice's text, from 0 at
** its first token: the continuation's own without echo, as vLLM's
** (docs/servers.md). */
static void put_logprobs(struct lx_buf *b, struct lx_serve *sv, const struct lx_oai_completion *r,
                         const struct choice *c)
{
    long j0 = r->echo ? 0 : c->n_prompt, n = c->n_prompt + c->n_gen, k = c->sc.top_k;
    size_t len, off = 0, drop = 0;  /* in the text as choice_text decodes it: without its dummy prefix */
    if (r->echo || !pieces_len(sv->tok, c->seq, c->n_prompt))
        drop = pieces_dummy_prefix(sv->tok, c->seq + j0, n - j0);
    lx_buf_puts(b, "{\"tokens\":[");
    for (long j = j0; j < n; j++) {
        lx_buf_puts(b, j > j0 ? "," : "");
        put_token(b, sv->tok, c->seq[j], r->token_ids);
    }
    lx_buf_puts(b, "],\"token_logprobs\":[");
    for (long j = j0; j < n; j++) {
        lx_buf_puts(b, j > j0 ? "," : "");
        if (j == 0)
            lx_buf_puts(b, "null");
        else
            lx_buf_num(b, -(double)c->sc.loss[j - 1]);
    }
    lx_buf_puts(b, "],\"top_logprobs\":[");
    for (long j = j0; j < n; j++) {
        lx_buf_puts(b, j > j0 ? "," : "");
        if (j == 0) {
            lx_buf_puts(b, "null");
            continue;
        }
        /* the token itself first, then the top k others; a JSON object has one of each key, and two
        ** ids may read the same (pieces not UTF-8 are U+FFFD): the first stays */
        struct lx_buf keys[LX_OAI_MAX_LOGPROBS + 1] = {{0}};
        int n_keys = 0;
        lx_buf_puts(b, "{");
        for (long q = -1; q < k && q < r->logprobs; q++) {
            int id = q < 0 ? c->seq[j] : c->sc.top_id[(j - 1) * k + q];
            put_token(&keys[n_keys], sv->tok, id, r->token_ids);
            int seen = 0;
            for (int i = 0; i < n_keys && !seen; i++)
                seen = strcmp(keys[i].s, keys[n_keys].s) == 0;
            if (seen) {
                lx_buf_free(&keys[n_keys]);
                continue;
            }
            lx_buf_printf(b, "%s%s:", n_keys ? "," : "", keys[n_keys].s);
            lx_buf_num(b, q < 0 ? -(double)c->sc.loss[j - 1] : (double)c->sc.top_lp[(j - 1) * k + q]);
            n_keys++;
        }
        for (int i = 0; i < n_keys; i++)
            lx_buf_free(&keys[i]);
        lx_buf_puts(b, "}");
    }
    lx_buf_puts(b, "],\"text_offset\":[");
    for (long j = j0; j < n; j++) {
        lx_buf_printf(b, "%s%zu", j > j0 ? "," : "", off > drop ? off - drop : 0);
        piece(sv->tok, c->seq[j], &len), off += len;
    }
    lx_buf_puts(b, "]}");
}

/* Prompt i's ids into c->seq (room for max_tokens after them). */
static int prompt_ids(struct lx_serve *sv, const struct lx_oai_completion *r, int i, struct choice *c,
                      struct lx_oai_err *e)
{
    const struct lx_oai_prompt *p = &r->prompt[i];
    int *ids = p->ids;
    long n = p->n;
    struct lx_error err;
    if (!ids && (n = lx_tok_prompt(sv->tok, p->text, p->len, &ids, &err)) < 0)
        return lx_oai_fail(e, 400, "prompt", "prompt %d cannot be tokenized: %s", i, err.msg);
    if (n + r->max_tokens > sv->lim.max_len) {
        if (ids != p->ids)
            free(ids);
        return lx_oai_fail(e, 400, "prompt", "prompt %d has %ld tokens and max_tokens is %ld: together more than the "
                           "%ld tokens this server holds", i, n, r->max_tokens, sv->lim.max_len);
    }
    c->seq = lx_xmalloc(sizeof(int) * (size_t)(n + r->max_tokens + 1));
    memcpy(c->seq, ids, sizeof(int) * (size_t)n);
    if (ids != p->ids)
        free(ids);
    c->n_prompt = n;
    return LX_OK;
}

/* Score the choice's whole sequence: its log-probs, the top alternatives,
** the attention entropy asked for. With draw (before any generation: the
** sequence is the prompt) the engine also draws the one token after it from
** the same pass (lm.h), which then joins the continuation. */
static int score(struct lx_serve *sv, const struct lx_oai_completion *r, struct choice *c,
                 const struct lx_lm_sampling *draw, struct lx_oai_err *e, struct lx_error *err)
{
    long n = c->n_prompt + c->n_gen;
    int k = r->logprobs > 0 ? r->logprobs : 0;
    if (r->attn_from >= 0 && r->attn_from >= n - 1)
        return lx_oai_fail(e, 400, "lenx_attention_from", "lenx_attention_from is %ld; the sequence has %ld tokens, "
                           "so its rows end at %ld", r->attn_from, n, n - 2);
    c->sc = (struct lx_lm_score){.tok = c->seq, .n = n, .attn_row0 = r->attn_from, .top_k = k, .draw = draw,
                                 .loss = lx_xcalloc((size_t)n, sizeof(float)),
                                 .top_id = lx_xcalloc((size_t)(n * k + 1), sizeof(int)),
                                 .top_lp = lx_xcalloc((size_t)(n * k + 1), sizeof(float))};
    c->scored = 1;
    if (n < 2)
        return LX_OK;
    int rc = sv->lm->ops->score(sv->lm, &c->sc, 1, err);
    if (rc < 0)
        return lx_oai_fail(e, 500, "", "scoring failed: %s", err->msg);
    if (draw) {
        c->finish = "length";
        c->seq[c->n_prompt] = c->sc.drawn;
        keep_continuation(sv, r, c, 1);
    }
    return LX_OK;
}

/* lm-eval's log-likelihood request: the prompt echoed with log-probabilities
** and one token after it, which the pass that scores the prompt draws from
** its last row on lenx's engine (lm.h's draw): one pass where generating and
** then scoring took two, with the same token and numbers in portable
** numerics (tests/test_serve.c). */
static int one_pass(const struct lx_serve *sv, const struct lx_oai_completion *r, const struct choice *c)
{
    return (sv->lm->caps & LX_LM_ENGINE) && r->max_tokens == 1 && r->logprobs >= 0 && r->attn_from < 0 &&
           c->n_prompt >= 2;
}

/* How the choice ended: finish_reason, stop_reason (vLLM's: the special id
** that stopped it), and with return_token_ids its prompt's and its own ids. */
static void put_ending(struct lx_buf *b, const struct lx_oai_completion *r, const struct choice *c)
{
    lx_buf_printf(b, ",\"finish_reason\":\"%s\",\"stop_reason\":", c->finish);
    if (c->stop_id >= 0)
        lx_buf_printf(b, "%d", c->stop_id);
    else
        lx_buf_puts(b, "null");
    if (!r->return_ids)
        return;
    lx_buf_puts(b, ",\"prompt_token_ids\":[");
    for (long j = 0; j < c->n_prompt; j++)
        lx_buf_printf(b, "%s%d", j ? "," : "", c->seq[j]);
    lx_buf_puts(b, "],\"token_ids\":[");
    for (long j = 0; j < c->n_gen; j++)
        lx_buf_printf(b, "%s%d", j ? "," : "", c->seq[c->n_prompt + j]);
    if (c->stop_id >= 0)
        lx_buf_printf(b, "%s%d", c->n_gen ? "," : "", c->stop_id);
    lx_buf_puts(b, "]");
}

static void choice_release(struct choice *c)
{
    free(c->seq);
    if (c->scored)
        free(c->sc.loss), free(c->sc.top_id), free(c->sc.top_lp);
    memset(c, 0, sizeof *c);
}

/* An answer's start, up to the opening of its choices; created is when the
** answer was made, as OpenAI's (the model's entry gives the server's start). */
static void put_head(struct lx_buf *b, const struct lx_serve *sv, unsigned long id)
{
    lx_buf_printf(b, "{\"id\":\"cmpl-lenx-%lu\",\"object\":\"text_completion\",\"created\":%ld,\"model\":", id,
                  (long)time(NULL));
    lx_buf_json_str(b, sv->name);
    lx_buf_puts(b, ",\"choices\":[");
}

static void put_usage(struct lx_buf *b, long prompt, long gen)
{
    lx_buf_printf(b, "\"usage\":{\"prompt_tokens\":%ld,\"completion_tokens\":%ld,\"total_tokens\":%ld}}", prompt, gen,
                  prompt + gen);
}

/* ---- streamed completions ---------------------------------------------------- */

/* A streamed answer: server-sent events, "data: " and a chunk of the
** answer's JSON each, "data: [DONE]" last (OpenAI's stream). A choice's
** text goes out as its tokens are chosen, less what it cannot send yet. */
struct stream {
    struct lx_gen_sink sink;
    struct lx_serve *sv;
    const struct lx_oai_completion *r;
    const struct lx_httpd_stream *st;
    struct lx_buf head;     /* every chunk's start, up to the choices */
    int index;              /* the choice being sent */
    struct lx_buf text;     /* its continuation so far */
    size_t sent;            /* bytes of text sent (or dropped: a dummy prefix) */
    int lead;               /* spaces still to drop from the start of the text (a dummy prefix) */
    int gone;               /* the client is not reading any more */
};

static void stream_event(struct stream *s, const struct lx_buf *ev)
{
    if (!s->gone && s->st->put(s->st->arg, ev->s, ev->len) < 0)
        s->gone = 1;
}

/* One chunk of choice s->index: text t[0, n) (JSON-escaped), and how it ended
** when it has (c; NULL while it goes on). */
static void stream_chunk(struct stream *s, const char *t, size_t n, const struct choice *c)
{
    struct lx_buf ev = {0};
    lx_buf_printf(&ev, "data: %s{\"index\":%d,\"text\":", s->head.s, s->index);
    lx_buf_json_strn(&ev, t ? t : "", n);
    lx_buf_puts(&ev, ",\"logprobs\":null");
    if (c)
        put_ending(&ev, s->r, c);
    else
        lx_buf_puts(&ev, ",\"finish_reason\":null");
    lx_buf_puts(&ev, "}]}\n\n");
    stream_event(s, &ev);
    lx_buf_free(&ev);
}

/* The continuation's text up to byte upto, what of it is not sent yet. */
static void stream_text(struct stream *s, size_t upto)
{
    if (upto > s->sent) {
        stream_chunk(s, s->text.s + s->sent, upto - s->sent, NULL);
        s->sent = upto;
    }
}

/* How much of t[0, n) can go out before the text ends: not a stop string's
** possible beginning at its end (it would be cut), nor a character whose
** bytes have not all come (it would be sent as U+FFFD). */
static size_t sendable(const struct lx_oai_completion *r, const char *t, size_t n)
{
    size_t hold = 0;
    for (int i = 0; i < r->n_stop; i++)
        for (size_t k = r->stop_len[i] - 1 < n ? r->stop_len[i] - 1 : n; k > hold; k--)
            if (memcmp(t + n - k, r->stop[i], k) == 0) {
                hold = k;
                break;
            }
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char b = (unsigned char)t[n - k];
        if ((b & 0xc0) == 0x80)
            continue;   /* a continuation byte: its lead is further back */
        size_t need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
        if (need > k && k > hold)
            hold = k;
        break;
    }
    return n - hold;
}

/* The sink of a streamed choice: sends what it can of each token's text,
** and ends the continuation where lx_lm_stop would (keep_continuation's cut). */
static int stream_token(void *arg, long k, int id)
{
    struct stream *s = arg;
    size_t len;
    const char *p = lx_tok_piece(s->sv->tok, id, &len);
    (void)k;
    if (!p)
        return !s->r->ignore_eos;
    lx_buf_putn(&s->text, p, len);
    for (; s->lead > 0 && s->sent < s->text.len && s->text.s[s->sent] == ' '; s->lead--)
        s->sent++;
    s->lead = s->sent < s->text.len ? 0 : s->lead;
    size_t cut = first_stop(s->r, s->text.s, s->text.len);
    stream_text(s, cut < s->text.len ? cut : sendable(s->r, s->text.s, s->text.len));
    return cut < s->text.len || s->gone;
}

/* Choice s->index streamed: the echoed prompt, the continuation as it comes,
** the rest of its text once it is cut as an unstreamed one's, and how it
** ended. */
static int stream_choice(struct stream *s, const struct lx_lm_sampling *smp, struct choice *c, struct lx_error *err)
{
    struct lx_buf t = {0};
    put_pieces(&t, s->sv->tok, c->seq, c->n_prompt);
    size_t drop = dummy_prefix(s->sv->tok, t.s, t.len);
    if (s->r->echo)
        stream_chunk(s, t.s ? t.s + drop : "", t.len - drop, NULL);
    s->lead = t.len ? 0 : s->sv->tok->strip_lead;   /* a prompt without text: the continuation starts it */
    lx_buf_free(&t);
    lx_buf_reset(&s->text);
    s->sent = 0;
    s->sink = (struct lx_gen_sink){.token = stream_token, .arg = s};
    int rc = generate(s->sv, s->r, smp, &s->sink, NULL, c, err);
    if (rc < 0 || s->gone)
        return rc;
    lx_buf_reset(&s->text);
    put_pieces(&s->text, s->sv->tok, c->seq + c->n_prompt, c->n_gen);
    stream_text(s, c->text_len < s->text.len ? c->text_len : s->text.len);
    stream_chunk(s, NULL, 0, c);
    return LX_OK;
}

/* A request with "stream": true. Every prompt is read before the first byte
** goes out, so that a bad one is still a plain 400; a failure after that is
** an error event. */
static int streamed(struct lx_serve *sv, const struct lx_oai_completion *r, struct lx_buf *out,
                    const struct lx_httpd_stream *st)
{
    struct lx_oai_err e = {0};
    if (!st)
        return answer_error(out, 400, "stream", "this server cannot stream\n  hint: send \"stream\": false");
    struct choice *cs = lx_xcalloc((size_t)r->n_prompts, sizeof *cs);
    int rc = LX_OK;
    for (int i = 0; i < r->n_prompts && rc == LX_OK; i++)
        cs[i].stop_id = -1, rc = prompt_ids(sv, r, i, &cs[i], &e);
    struct stream s = {.sv = sv, .r = r, .st = st};
    struct lx_lm_sampling smp = sampling_of(r);
    struct lx_error err;
    long used_prompt = 0, used_gen = 0;
    if (rc == LX_OK)
        put_head(&s.head, sv, ++sv->n_served);
    for (int i = 0; i < r->n_prompts && rc == LX_OK && !s.gone; i++) {
        s.index = i;
        rc = stream_choice(&s, &smp, &cs[i], &err);
        used_prompt += cs[i].n_prompt, used_gen += cs[i].n_gen;
    }
    struct lx_buf ev = {0};
    if (rc == LX_OK && r->stream_usage) {
        lx_buf_printf(&ev, "data: %s],", s.head.s);
        put_usage(&ev, used_prompt, used_gen);
        lx_buf_puts(&ev, "\n\n");
    }
    if (s.head.s && rc < 0) {   /* the stream has begun: its error as an event */
        lx_oai_fail(&e, 500, "", "generation failed: %s", err.msg);
        lx_buf_puts(&ev, "data: ");
        lx_oai_error_json(&ev, &e);
        lx_buf_puts(&ev, "\n");
    }
    if (s.head.s) {
        lx_buf_puts(&ev, "data: [DONE]\n\n");
        stream_event(&s, &ev);
    }
    lx_buf_free(&ev);
    for (int i = 0; i < r->n_prompts; i++)
        choice_release(&cs[i]);
    free(cs);
    lx_buf_free(&s.text);
    int begun = s.head.s != NULL;
    lx_buf_free(&s.head);
    return begun ? 200 : refused(out, &e);
}


static int completions(struct lx_serve *sv, const char *body, size_t n, struct lx_buf *out,
                       const struct lx_httpd_stream *st)
{
    struct lx_oai_completion r;
    struct lx_oai_err e = {0};
    struct lx_error err;
    if (lx_oai_completion_parse(&r, body, n, &sv->lim, &e) < 0)
        return refused(out, &e);
    if (r.model && strcmp(r.model, sv->name) != 0) {
        lx_oai_fail(&e, 404, "model", "model '%s' is not served here; this server serves '%s'\n  hint: name it, or "
                    "leave 'model' out (GET /v1/models lists it)", r.model, sv->name);
        lx_oai_completion_release(&r);
        return refused(out, &e);
    }
    if (r.stream) {
        int status = streamed(sv, &r, out, st);
        lx_oai_completion_release(&r);
        return status;
    }
    struct lx_buf choices = {0};
    long used_prompt = 0, used_gen = 0;
    int rc = LX_OK;
    struct lx_lm_sampling s = sampling_of(&r);
    for (int i = 0; i < r.n_prompts && rc == LX_OK && !request_gone(st); i++) {
        struct choice c = {.stop_id = -1};
        rc = prompt_ids(sv, &r, i, &c, &e);
        if (rc == LX_OK && one_pass(sv, &r, &c))
            rc = score(sv, &r, &c, &s, &e, &err);
        else {
            if (rc == LX_OK && generate(sv, &r, &s, NULL, st, &c, &err) < 0)
                rc = lx_oai_fail(&e, 500, "", "generation failed: %s", err.msg);
            if (rc == LX_OK && (r.logprobs >= 0 || r.attn_from >= 0))
                rc = score(sv, &r, &c, NULL, &e, &err);
        }
        if (rc == LX_OK) {
            lx_buf_printf(&choices, "%s{\"index\":%d,\"text\":", i ? "," : "", i);
            put_text(&choices, sv, &r, &c);
            put_ending(&choices, &r, &c);
            lx_buf_puts(&choices, ",\"logprobs\":");
            if (r.logprobs >= 0)
                put_logprobs(&choices, sv, &r, &c);
            else
                lx_buf_puts(&choices, "null");
            if (r.attn_from >= 0) {     /* lenx's own: the attention entropy of the rows asked for */
                lx_buf_puts(&choices, ",\"lenx\":{\"attention_entropy\":");
                lx_buf_num(&choices, c.sc.attn_entropy);
                lx_buf_puts(&choices, ",\"attention_rows\":");
                lx_buf_num(&choices, c.sc.attn_rows);
                lx_buf_puts(&choices, "}");
            }
            lx_buf_puts(&choices, "}");
            used_prompt += c.n_prompt;
            used_gen += c.n_gen;
        }
        choice_release(&c);
    }
    lx_oai_completion_release(&r);
    if (rc < 0) {
        lx_buf_free(&choices);
        return refused(out, &e);
    }
    lx_buf_reset(out);
    put_head(out, sv, ++sv->n_served);
    lx_buf_printf(out, "%s],", choices.s ? choices.s : "");
    put_usage(out, used_prompt, used_gen);
    lx_buf_puts(out, "\n");
    lx_buf_free(&choices);
    return 200;
}

/* ---- the tokenizer ----------------------------------------------------------- */

static int tokenize(struct lx_serve *sv, const char *body, size_t n, struct lx_buf *out)
{
    void *doc;
    const char *text;
    size_t len;
    int special;
    struct lx_oai_err e = {0};
    struct lx_error err;
    if (lx_oai_tokenize_parse(&doc, body, n, &text, &len, &special, &e) < 0)
        return refused(out, &e);
    int *ids = NULL;
    long k = -1;
    /* a special token's own text (what /tokenizer_info names) reads as its id */
    const int specials[] = {sv->tok->bos, sv->tok->eos};
    for (int i = 0; i < 2 && k < 0; i++)
        if (specials[i] >= 0 && len == strlen(special_text(sv->tok, specials[i])) &&
            memcmp(text, special_text(sv->tok, specials[i]), len) == 0) {
            ids = lx_xmalloc(2 * sizeof(int));
            k = 0;
            if (special && sv->tok->bos >= 0 && specials[i] != sv->tok->bos)
                ids[k++] = sv->tok->bos;
            ids[k++] = specials[i];
        }
    if (k < 0 && (k = lx_tok_prompt(sv->tok, text, len, &ids, &err)) > 0 && !special)
        memmove(ids, ids + 1, sizeof(int) * (size_t)--k);   /* read as a prompt (a SentencePiece dummy prefix
                                                            ** included), as vLLM and llama-server do, BOS dropped */
    lx_oai_doc_free(doc);
    if (k < 0)
        return answer_error(out, 400, "prompt", "the text cannot be tokenized: %s", err.msg);
    lx_buf_reset(out);
    lx_buf_puts(out, "{\"tokens\":[");
    for (long i = 0; i < k; i++)
        lx_buf_printf(out, "%s%d", i ? "," : "", ids[i]);
    lx_buf_printf(out, "],\"count\":%ld,\"max_model_len\":%ld}\n", k, sv->lim.max_len);
    free(ids);
    return 200;
}

static int detokenize(struct lx_serve *sv, const char *body, size_t n, struct lx_buf *out)
{
    int *ids;
    long k;
    struct lx_oai_err e = {0};
    if (lx_oai_detokenize_parse(body, n, &sv->lim, &ids, &k, &e) < 0)
        return refused(out, &e);
    struct lx_buf t = {0};
    put_pieces(&t, sv->tok, ids, k);
    size_t drop = dummy_prefix(sv->tok, t.s, t.len);   /* as a completion's text starts, and /tokenize reads it */
    lx_buf_reset(out);
    lx_buf_puts(out, "{\"prompt\":");
    lx_buf_json_strn(out, t.s ? t.s + drop : "", t.len - drop);
    lx_buf_puts(out, "}\n");
    lx_buf_free(&t);
    free(ids);
    return 200;
}

static int tokenizer_info(struct lx_serve *sv, struct lx_buf *out)
{
    const struct lx_tokenizer *tk = sv->tok;
    lx_buf_reset(out);
    lx_buf_puts(out, "{\"eos_token\":");
    lx_buf_json_str(out, tk->eos >= 0 ? special_text(tk, tk->eos) : NULL);
    lx_buf_puts(out, ",\"bos_token\":");
    lx_buf_json_str(out, tk->bos >= 0 ? special_text(tk, tk->bos) : NULL);
    lx_buf_printf(out, ",\"tokenizer_class\":\"lenx-%s\",\"vocab_size\":%ld,\"model_max_length\":%ld}\n",
                  tk->ops->kind, tk->n_vocab, sv->lim.max_len);
    return 200;
}

static int models(struct lx_serve *sv, struct lx_buf *out)
{
    lx_buf_reset(out);
    lx_buf_puts(out, "{\"object\":\"list\",\"data\":[{\"id\":");
    lx_buf_json_str(out, sv->name);
    lx_buf_printf(out, ",\"object\":\"model\",\"created\":%ld,\"owned_by\":\"lenx\",\"max_model_len\":%ld,\"lenx\":%s}]}\n",
                  sv->created, sv->lim.max_len, sv->info ? sv->info : "{}");
    return 200;
}

/* ---- routes ------------------------------------------------------------------ */

int lx_serve_handle(struct lx_serve *sv, const char *method, const char *path, const char *type, const char *body,
                    size_t n, struct lx_buf *out, const struct lx_httpd_stream *st)
{
    static const struct {
        const char *path, *method;
    } routes[] = {
        {"/v1/completions", "POST"}, {"/completions", "POST"}, {"/v1/models", "GET"}, {"/tokenize", "POST"},
        {"/detokenize", "POST"}, {"/tokenizer_info", "GET"}, {"/health", "GET"},
    };
    int r = -1;
    for (int i = 0; i < (int)(sizeof routes / sizeof *routes) && r < 0; i++)
        if (strcmp(path, routes[i].path) == 0)
            r = i;
    if (r < 0)
        return answer_error(out, 404, "", "no such endpoint: %.200s\n  hint: POST /v1/completions, GET /v1/models, "
                            "POST /tokenize, POST /detokenize, GET /tokenizer_info, GET /health", path);
    int get = strcmp(routes[r].method, "GET") == 0;
    if (get && strcmp(method, "HEAD") == 0)
        method = "GET";     /* GET's answer, sent without its body (RFC 9110 9.3.2) */
    if (strcmp(method, routes[r].method) != 0)
        return answer_error(out, 405, "", "%s takes %s, not %.20s\n  hint: send it as %s%s", routes[r].path,
                            get ? "GET or HEAD" : routes[r].method, method, routes[r].method,
                            get ? "" : ", with a JSON body (docs/servers.md)");
    struct lx_oai_err e = {0};
    if (!get && lx_oai_body_type(type, &e) < 0)
        return refused(out, &e);
    switch (r) {
    case 0:
    case 1:
        return completions(sv, body, n, out, st);
    case 2:
        return models(sv, out);
    case 3:
        return tokenize(sv, body, n, out);
    case 4:
        return detokenize(sv, body, n, out);
    case 5:
        return tokenizer_info(sv, out);
    default:
        lx_buf_reset(out);
        lx_buf_puts(out, "{\"status\":\"ok\"}\n");
        return 200;
    }
}
