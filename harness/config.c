/*
** harness/config.c - libyaml behind one seam: YAML text in, struct lx_node tree
** out. Everything after this file sees only lx_node. Anchors and aliases are
** resolved by libyaml's document loader; tags are ignored.
*/
#include "harness/config.h"

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

/* Copy libyaml's node i into our tree; depth guards against alias cycles. */
static struct lx_node *convert(struct lx_doc *doc, yaml_document_t *y, yaml_node_t *yn, int depth)
{
    LX_ASSERT(yn != NULL);
    if (depth > 64)
        return NULL;
    struct lx_node *n;
    switch (yn->type) {
    case YAML_SCALAR_NODE:
        n = node_new(doc, LX_NODE_SCALAR, &yn->start_mark);
        n->text = lx_xstrdup((const char *)yn->data.scalar.value);
        n->quoted = yn->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                    yn->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        return n;
    case YAML_SEQUENCE_NODE: {
        n = node_new(doc, LX_NODE_SEQ, &yn->start_mark);
        int count = (int)(yn->data.sequence.items.top - yn->data.sequence.items.start);
        n->items = lx_xcalloc((size_t)count, sizeof *n->items);
        for (int i = 0; i < count; i++) {
            yaml_node_t *c = yaml_document_get_node(y, yn->data.sequence.items.start[i]);
            if (!(n->items[i] = convert(doc, y, c, depth + 1)))
                return NULL;
        }
        n->n_items = count;
        return n;
    }
    case YAML_MAPPING_NODE: {
        n = node_new(doc, LX_NODE_MAP, &yn->start_mark);
        int count = (int)(yn->data.mapping.pairs.top - yn->data.mapping.pairs.start);
        n->items = lx_xcalloc(2 * (size_t)count, sizeof *n->items);
        for (int i = 0; i < count; i++) {
            yaml_node_pair_t *p = &yn->data.mapping.pairs.start[i];
            n->items[2 * i] = convert(doc, y, yaml_document_get_node(y, p->key), depth + 1);
            n->items[2 * i + 1] = convert(doc, y, yaml_document_get_node(y, p->value), depth + 1);
            if (!n->items[2 * i] || !n->items[2 * i + 1])
                return NULL;
        }
        n->n_items = count;
        return n;
    }
    default:
        return NULL;
    }
}

static int load(struct lx_doc *doc, yaml_parser_t *parser, struct lx_error *err)
{
    yaml_document_t y;
    if (!yaml_parser_load(parser, &y)) {
        const yaml_mark_t *m = parser->problem_mark.line || parser->problem_mark.column
                                   ? &parser->problem_mark : &parser->context_mark;
        return lx_err(err, LX_EINVAL, "%s:%d:%d: YAML syntax error: %s%s%s\n"
                      "  hint: check indentation, colons and brackets near that position",
                      doc->file, (int)m->line + 1, (int)m->column + 1,
                      parser->problem ? parser->problem : "unknown problem",
                      parser->context ? " " : "", parser->context ? parser->context : "");
    }
    int rc = LX_OK;
    yaml_node_t *root = yaml_document_get_root_node(&y);
    if (root) {
        doc->root = convert(doc, &y, root, 0);
        if (!doc->root)
            rc = lx_err(err, LX_EINVAL, "%s: YAML nesting deeper than 64 levels (an alias cycle?)",
                        doc->file);
    }
    yaml_document_delete(&y);
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
    if (rc < 0) {
        doc_start(doc, path);
        return rc;
    }
    rc = lx_doc_load_text(doc, (const char *)bytes, path, err);
    free(bytes);
    return rc;
}

int lx_doc_load_text(struct lx_doc *doc, const char *text, const char *name, struct lx_error *err)
{
    doc_start(doc, name);
    doc->text = lx_xstrdup(text);
    yaml_parser_t parser;
    LX_ASSERT(yaml_parser_initialize(&parser));
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
    int rc = load(doc, &parser, err);
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

const struct lx_node *lx_map_except(const struct lx_node *map, const struct lx_node *a, const struct lx_node *b,
                                    struct lx_node *rest, struct lx_node **items, int cap)
{
    if (!map || (!a && !b))
        return map;
    if (map->n_items > cap)
        return NULL;
    *rest = *map;
    rest->items = items;
    rest->n_items = 0;
    for (int i = 0; i < map->n_items; i++)
        if (lx_map_value(map, i) != a && lx_map_value(map, i) != b) {
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

void lx_node_where(const struct lx_node *node, char *out, size_t n)
{
    snprintf(out, n, "%s:%d:%d", node->file, node->line, node->col);
}

int lx_node_err(struct lx_error *err, const struct lx_node *node, const char *fmt, ...)
{
    if (err) {
        char where[512];
        lx_node_where(node, where, sizeof where);
        int k = snprintf(err->msg, sizeof err->msg, "%s: ", where);
        if (k < 0 || (size_t)k >= sizeof err->msg)
            k = 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg + k, sizeof err->msg - (size_t)k, fmt, ap);
        va_end(ap);
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
