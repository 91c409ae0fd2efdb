/*
** tasks/peer.c - peers' test-case files (peer.h).
*/
#define _POSIX_C_SOURCE 200809L
#include "tasks/peer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add_gold(struct lx_peer_case *c, const char *s, size_t n)
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

/* row's string member key as the prompt. */
static int read_prompt(const struct lx_json *doc, const struct lx_jv *row, const char *key, struct lx_peer_case *out,
                       struct lx_error *err)
{
    const struct lx_jv *v;
    const char *s;
    size_t n;
    int rc = lx_json_need(doc, row, key, LX_JSON_STRING, &v, err);
    if (rc == LX_OK && (rc = lx_json_str(doc, v, &s, &n, err)) == LX_OK)
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
        add_gold(out, num, strlen(num));
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
            add_gold(out, s, n);
    }
    if (rc == LX_OK && out->n_golds == 0)
        rc = lx_json_member_err(err, doc, row, "topics", "an empty list: the first topic is the gold");
    return rc;
}

static int load_line(lx_peer_reader read, const char *text, size_t n, struct lx_peer_case *c, struct lx_error *err)
{
    struct lx_json *doc = NULL;
    int rc = lx_json_parse(&doc, text, n, "line", err);
    if (rc == LX_OK && lx_json_type(lx_json_root(doc)) != LX_JSON_OBJECT)
        rc = lx_err(err, LX_EINVAL, "not a JSON object");
    memset(c, 0, sizeof *c);
    c->peer_length = -1;
    if (rc == LX_OK)
        rc = read(doc, lx_json_root(doc), c, err);
    lx_json_free(doc);
    return rc;
}

int lx_peer_load(lx_peer_reader read, const char *path, struct lx_peer_set *out, struct lx_error *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f)
        return lx_err(err, LX_EIO, "cannot read the peer data %s: %s\n  hint: `data:` names a peer's test-case "
                      "file (docs/tasks.md#protocol-presets)", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t k;
    int rc = LX_OK;
    for (long lineno = 1; rc == LX_OK && (k = getline(&line, &cap, f)) >= 0; lineno++) {
        if (k == 0 || (k == 1 && line[0] == '\n'))      /* a blank last line */
            continue;
        out->cases = lx_xrealloc(out->cases, sizeof *out->cases * (size_t)(out->n + 1));
        rc = load_line(read, line, (size_t)k, &out->cases[out->n], err);
        out->n++;
        if (rc < 0)
            lx_err_prefix(err, rc, "%s:%ld: ", path, lineno);
    }
    if (rc == LX_OK && ferror(f))
        rc = lx_err(err, LX_EIO, "%s: read failed: %s", path, strerror(errno));
    if (rc == LX_OK && out->n == 0)
        rc = lx_err(err, LX_EINVAL, "%s: no test cases", path);
    free(line);
    fclose(f);
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
