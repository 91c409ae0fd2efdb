/*
** harness/core/config.c - libyaml behind one seam: YAML text in, struct lx_node tree
** out. Everything after this file sees only lx_node. Anchors and aliases are
** resolved by libyaml's document loader and copied here under a node budget
** (an alias bomb is refused); tags are ignored; mapping keys must be scalars;
** a file holds one document.
*/
#include "harness/core/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static struct lx_node *node_new(struct lx_doc *doc, enum lx_node_kind kind, const yaml_mark_t *mark)
{
    struct lx_node *n = lx_xcalloc(1, sizeof *n);
    n->kind = kind;
    n->file = doc->file;
    n->line = (int)mark->line + 1;
    n->col = (int)mark->column + 1;
    if (doc->n_all == doc->cap_all) {
        doc->cap_all = doc->cap_all ? 2 * doc->cap_all : 64;
        doc->all = lx_xrealloc(doc->all, (size_t)doc->cap_all * sizeof *doc->all);
    }
    doc->all[doc->n_all++] = n;
    return n;
}

/* Aliases may add at most this many nodes beyond those written in the file:
** a YAML alias bomb ("billion laughs": a: &a [x, x], b: &b [*a, *a], ...)
** expands exponentially, and a sweep never needs more (docs/config.md). */
#define LX_ALIAS_NODE_BUDGET 100000L

/* A sweep file holds at most this many values as written (docs/config.md):
** 10000 lengths and 10000 seeds fit many times over; millions of entries
** would take gigabytes to load. */
#define LX_MAX_DOC_NODES 200000L

/* State of one conversion: the budget of nodes left, which libyaml nodes
** were already converted once (a second visit comes through an alias), the
** last such node, and the error of the first problem found. */
struct convert_ctx {
    struct lx_doc *doc;         /* the document being filled */
    yaml_document_t *y;         /* libyaml's document */
    long budget;                /* nodes that may still be created */
    unsigned char *seen;        /* (n_yaml_nodes,) 1 once converted */
    yaml_node_t *alias;         /* the outermost alias being expanded (a node reached again) */
    struct lx_error *err;       /* filled on the first failure */
};

/* The anchor name written at a node's start ("&a [..." -> "a"), for messages. */
static void anchor_name(const struct lx_doc *doc, const yaml_mark_t *m, char *out, size_t n)
{
    const char *p = doc->text && m->index < strlen(doc->text) ? doc->text + m->index : "";
    size_t len = 0;
    if (*p == '&')
        for (p++; p[len] && !strchr(" \t\r\n,[]{}", p[len]); len++) {}
    snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), p);
}

static int budget_exceeded(struct convert_ctx *cx, yaml_node_t *yn)
{
    const yaml_node_t *at = cx->alias ? cx->alias : yn;
    char name[64];
    anchor_name(cx->doc, &at->start_mark, name, sizeof name);
    return lx_err(cx->err, LX_EINVAL, "%s:%d:%d: aliases of the anchor '%s' expand the document past %ld "
                  "nodes beyond those written (a YAML alias bomb?)\n"
                  "  hint: write the values out, or use fewer nested aliases", cx->doc->file,
                  (int)at->start_mark.line + 1, (int)at->start_mark.column + 1, name[0] ? name : "?",
                  LX_ALIAS_NODE_BUDGET);
}

static struct lx_node *convert(struct convert_ctx *cx, yaml_node_t *yn, int depth, int in_alias);

/* A mapping key must be a scalar: every reader of a key compares its text. */
static int check_key(struct convert_ctx *cx, yaml_node_t *key)
{
    if (key->type == YAML_SCALAR_NODE)
        return LX_OK;
    return lx_err(cx->err, LX_EINVAL, "%s:%d:%d: a mapping key must be a plain word or a string, got %s\n"
                  "  hint: write the key as a name, e.g. 'small: {arch: {}}' rather than '[small]: ...'",
                  cx->doc->file, (int)key->start_mark.line + 1, (int)key->start_mark.column + 1,
                  key->type == YAML_SEQUENCE_NODE ? "a list" : "a mapping");
}

static struct lx_node *convert_seq(struct convert_ctx *cx, yaml_node_t *yn, int depth, int in_alias)
{
    struct lx_node *n = node_new(cx->doc, LX_NODE_SEQ, &yn->start_mark);
    int count = (int)(yn->data.sequence.items.top - yn->data.sequence.items.start);
    n->items = lx_xcalloc((size_t)count, sizeof *n->items);
    for (int i = 0; i < count; i++) {
        yaml_node_t *c = yaml_document_get_node(cx->y, yn->data.sequence.items.start[i]);
        if (!(n->items[i] = convert(cx, c, depth + 1, in_alias)))
            return NULL;
        n->n_items = i + 1;
    }
    return n;
}

static struct lx_node *convert_map(struct convert_ctx *cx, yaml_node_t *yn, int depth, int in_alias)
{
    struct lx_node *n = node_new(cx->doc, LX_NODE_MAP, &yn->start_mark);
    int count = (int)(yn->data.mapping.pairs.top - yn->data.mapping.pairs.start);
    n->items = lx_xcalloc(2 * (size_t)count, sizeof *n->items);
    for (int i = 0; i < count; i++) {
        yaml_node_pair_t *p = &yn->data.mapping.pairs.start[i];
        yaml_node_t *key = yaml_document_get_node(cx->y, p->key);
        if (check_key(cx, key) < 0 ||
            !(n->items[2 * i] = convert(cx, key, depth + 1, in_alias)) ||
            !(n->items[2 * i + 1] = convert(cx, yaml_document_get_node(cx->y, p->value), depth + 1, in_alias)))
            return NULL;
        n->n_items = i + 1;
    }
    return n;
}

/* Copy libyaml's node into our tree. Aliases point at nodes converted before:
** each visit copies again, counted against the budget; depth guards against
** alias cycles. NULL with cx->err filled on failure. */
static struct lx_node *convert(struct convert_ctx *cx, yaml_node_t *yn, int depth, int in_alias)
{
    LX_ASSERT(yn != NULL);
    if (depth > 64) {
        lx_err(cx->err, LX_EINVAL, "%s:%d:%d: YAML nesting deeper than 64 levels (an alias cycle?)\n"
               "  hint: flatten the structure", cx->doc->file, (int)yn->start_mark.line + 1,
               (int)yn->start_mark.column + 1);
        return NULL;
    }
    size_t id = (size_t)(yn - cx->y->nodes.start);
    if (cx->seen[id] && !in_alias) {
        cx->alias = yn;
        in_alias = 1;
    }
    cx->seen[id] = 1;
    if (--cx->budget < 0) {
        budget_exceeded(cx, yn);
        return NULL;
    }
    switch (yn->type) {
    case YAML_SCALAR_NODE: {
        struct lx_node *n = node_new(cx->doc, LX_NODE_SCALAR, &yn->start_mark);
        n->text = lx_xstrdup((const char *)yn->data.scalar.value);
        n->quoted = yn->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                    yn->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        return n;
    }
    case YAML_SEQUENCE_NODE:
        return convert_seq(cx, yn, depth, in_alias);
    case YAML_MAPPING_NODE:
        return convert_map(cx, yn, depth, in_alias);
    default:
        lx_err(cx->err, LX_EINVAL, "%s: an empty YAML node", cx->doc->file);
        return NULL;
    }
}

/* Line and column (from 1; the column in bytes) of the byte at offset. */
static void position_of(const char *text, size_t offset, int *line, int *col)
{
    *line = 1, *col = 1;
    for (size_t i = 0; i < offset && text[i]; i++)
        text[i] == '\n' ? (++*line, *col = 1) : ++*col;
}

static int syntax_error(const struct lx_doc *doc, const yaml_parser_t *parser, struct lx_error *err)
{
    const yaml_mark_t *m = parser->problem_mark.line || parser->problem_mark.column
                               ? &parser->problem_mark : &parser->context_mark;
    int line = (int)m->line + 1, col = (int)m->column + 1;
    int end_line, end_col;      /* past the text's end (a --method value has no last line break): at its end */
    position_of(doc->text, strlen(doc->text), &end_line, &end_col);
    if (parser->error == YAML_READER_ERROR)     /* bad bytes: libyaml gives their offset, not a mark */
        position_of(doc->text, parser->problem_offset, &line, &col);
    else if (line > end_line || (line == end_line && col > end_col))
        line = end_line, col = end_col;
    return lx_err(err, LX_EINVAL, "%s:%d:%d: YAML syntax error: %s%s%s\n"
                  "  hint: %s", doc->file, line, col, parser->problem ? parser->problem : "unknown problem",
                  parser->context ? " " : "", parser->context ? parser->context : "",
                  parser->error == YAML_READER_ERROR ? "a sweep file is UTF-8 text without control characters"
                                                     : "check indentation, colons and brackets near that position");
}

/* A sweep file is one document: a second one (after '---') would be ignored. */
static int check_single(const struct lx_doc *doc, yaml_parser_t *parser, struct lx_error *err)
{
    yaml_document_t y;
    if (!yaml_parser_load(parser, &y))
        return syntax_error(doc, parser, err);
    int rc = LX_OK;
    if (yaml_document_get_root_node(&y))
        rc = lx_err(err, LX_EINVAL, "%s:%d:%d: a second YAML document; a sweep file holds one\n"
                    "  hint: put each sweep in its own file, or remove the '---' line",
                    doc->file, (int)y.start_mark.line + 1, (int)y.start_mark.column + 1);
    yaml_document_delete(&y);
    return rc;
}

static int load(struct lx_doc *doc, yaml_parser_t *parser, struct lx_error *err)
{
    yaml_document_t y;
    if (!yaml_parser_load(parser, &y))
        return syntax_error(doc, parser, err);
    int rc = LX_OK;
    yaml_node_t *root = yaml_document_get_root_node(&y);
    if (root) {
        long written = (long)(y.nodes.top - y.nodes.start);
        struct convert_ctx cx = {.doc = doc, .y = &y, .budget = written + LX_ALIAS_NODE_BUDGET,
                                 .seen = lx_xcalloc((size_t)written, 1), .err = err};
        doc->root = convert(&cx, root, 0, 0);
        rc = doc->root ? LX_OK : LX_EINVAL;
        free(cx.seen);
    }
    yaml_document_delete(&y);
    if (rc == LX_OK && root)
        rc = check_single(doc, parser, err);
    return rc;
}

static void doc_start(struct lx_doc *doc, const char *name)
{
    memset(doc, 0, sizeof *doc);
    doc->file = lx_xstrdup(name);
}

/* Config files are small; a bigger one is not a sweep (and would keep its
** whole text in every run row). */
#define MAX_CONFIG_BYTES (16L << 20)

int lx_doc_load_file(struct lx_doc *doc, const char *path, struct lx_error *err)
{
    unsigned char *bytes;
    long n;
    int rc = lx_read_file(path, &bytes, &n, MAX_CONFIG_BYTES, err);
    const char *nul = rc < 0 ? NULL : memchr(bytes, 0, (size_t)n);
    if (rc < 0 || nul) {    /* the text ends at a NUL: what follows would go unread */
        doc_start(doc, path);
        if (nul) {
            int line, col;
            position_of((const char *)bytes, (size_t)(nul - (const char *)bytes), &line, &col);
            rc = lx_err(err, LX_EINVAL, "%s:%d:%d: a NUL byte; a sweep file is text\n  hint: is this a "
                        "binary file, or was it saved in UTF-16?", path, line, col);
            free(bytes);
        }
        return rc;
    }
    rc = lx_doc_load_text(doc, (const char *)bytes, path, err);
    free(bytes);
    return rc;
}

/* Count the values written in the text (scalars, lists, mappings, aliases)
** with libyaml's event parser, which holds one event at a time, and refuse a
** text with more than LX_MAX_DOC_NODES before the loader builds them all. */
static int count_nodes(const struct lx_doc *doc, const char *text, struct lx_error *err)
{
    yaml_parser_t parser;
    LX_ASSERT(yaml_parser_initialize(&parser));
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
    long n = 0;
    int rc = LX_OK;
    for (int done = 0; !done && rc == LX_OK;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = syntax_error(doc, &parser, err);
            break;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        n += ev.type == YAML_SCALAR_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
             ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_ALIAS_EVENT;
        if (n > LX_MAX_DOC_NODES)
            rc = lx_err(err, LX_EINVAL, "%s:%d:%d: the file holds more than %ld values; a sweep file holds "
                        "at most that many\n  hint: split the sweep into several files (they can share a "
                        "database)", doc->file, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
                        LX_MAX_DOC_NODES);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return rc;
}

int lx_doc_load_text(struct lx_doc *doc, const char *text, const char *name, struct lx_error *err)
{
    doc_start(doc, name);
    doc->text = lx_xstrdup(text);
    int rc = count_nodes(doc, text, err);
    if (rc < 0)
        return rc;
    yaml_parser_t parser;
    LX_ASSERT(yaml_parser_initialize(&parser));
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
    rc = load(doc, &parser, err);
    yaml_parser_delete(&parser);
    return rc;
}

void lx_doc_release(struct lx_doc *doc)
{
    if (!doc)
        return;
    for (int i = 0; i < doc->n_all; i++) {
        free(doc->all[i]->text);
        free(doc->all[i]->items);
        free(doc->all[i]);
    }
    free(doc->all);
    free(doc->file);
    free(doc->text);
    memset(doc, 0, sizeof *doc);
}

const struct lx_node *lx_map_key(const struct lx_node *map, int i) { return map->items[2 * i]; }
const struct lx_node *lx_map_value(const struct lx_node *map, int i) { return map->items[2 * i + 1]; }

static int map_skips(const struct lx_node *v, const struct lx_node *const *skip, int n_skip)
{
    for (int j = 0; j < n_skip; j++)
        if (skip[j] == v)     /* v is a map value, never NULL */
            return 1;
    return 0;
}

const struct lx_node *lx_map_except(const struct lx_node *map, const struct lx_node *const *skip, int n_skip,
                                    struct lx_node *rest, struct lx_node **items, int cap)
{
    int any = 0;
    for (int j = 0; j < n_skip; j++)
        any |= skip[j] != NULL;
    if (!map || !any)
        return map;
    if (map->n_items > cap)
        return NULL;
    *rest = *map;
    rest->items = items;
    rest->n_items = 0;
    for (int i = 0; i < map->n_items; i++)
        if (!map_skips(lx_map_value(map, i), skip, n_skip)) {
            items[2 * rest->n_items] = map->items[2 * i];
            items[2 * rest->n_items + 1] = map->items[2 * i + 1];
            rest->n_items++;
        }
    return rest;
}

const struct lx_node *lx_map_get(const struct lx_node *map, const char *key)
{
    if (!map || map->kind != LX_NODE_MAP)
        return NULL;
    for (int i = 0; i < map->n_items; i++) {
        const struct lx_node *k = lx_map_key(map, i);
        if (k->kind == LX_NODE_SCALAR && strcmp(k->text, key) == 0)
            return lx_map_value(map, i);
    }
    return NULL;
}

int lx_map_unique(const struct lx_node *map, const char *what, struct lx_error *err)
{
    for (int i = 0; map && map->kind == LX_NODE_MAP && i < map->n_items; i++) {
        const struct lx_node *k = lx_map_key(map, i);
        for (int j = 0; j < i && k->kind == LX_NODE_SCALAR; j++)
            if (lx_map_key(map, j)->kind == LX_NODE_SCALAR && strcmp(lx_map_key(map, j)->text, k->text) == 0)
                return lx_node_err(err, k, "%skey '%s' is given twice\n  hint: keep one of them", what, k->text);
    }
    return LX_OK;
}

void lx_node_where(const struct lx_node *node, char *out, size_t n)
{
    snprintf(out, n, "%s:%d:%d", node->file, node->line, node->col);
}

int lx_node_err(struct lx_error *err, const struct lx_node *node, const char *fmt, ...)
{
    if (err) {
        /* formatted apart first, so that an argument may be err->msg itself */
        char where[512], msg[LX_ERR_MAX];
        lx_node_where(node, where, sizeof where);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        lx_err(err, LX_EINVAL, "%s: %s", where, msg);
    }
    return LX_EINVAL;
}

const char *lx_node_kind_name(enum lx_node_kind kind)
{
    switch (kind) {
    case LX_NODE_SCALAR: return "a scalar";
    case LX_NODE_SEQ: return "a list";
    case LX_NODE_MAP: return "a mapping";
    }
    return "?";
}
