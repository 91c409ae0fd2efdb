/*
** harness/core/config.h - YAML documents as a small tree that remembers where every
** value came from, so any later check can report file:line:column.
**
** harness/core/config.c is the only file that includes <yaml.h>.
*/
#ifndef LX_CONFIG_H
#define LX_CONFIG_H

#include "harness/core/lx.h"

enum lx_node_kind {
    LX_NODE_SCALAR,
    LX_NODE_SEQ,
    LX_NODE_MAP,
};

struct lx_node {
    enum lx_node_kind kind;     /* scalar, sequence or mapping */
    const char *file;           /* the document's name, for messages */
    int line, col;              /* 1-based position of the node's first character */
    char *text;                 /* SCALAR: the value as written, unquoted */
    int quoted;                 /* SCALAR: 1 when written in quotes (always a string) */
    struct lx_node **items;     /* SEQ: (n_items,) entries; MAP: (2*n_items,) key, value, ... */
    int n_items;                /* SEQ: entries; MAP: pairs */
};

struct lx_doc {
    struct lx_node *root;       /* NULL for an empty document */
    char *file;                 /* owned copy of the name */
    char *text;                 /* owned copy of the YAML text (stored with every run) */
    struct lx_node **all;       /* (n_all,) every node, for freeing */
    int n_all, cap_all;
};

/* Parse a file or a string; on failure err holds file:line:column and what the
** YAML parser expected. */
int lx_doc_load_file(struct lx_doc *doc, const char *path, struct lx_error *err);
int lx_doc_load_text(struct lx_doc *doc, const char *text, const char *name, struct lx_error *err);
void lx_doc_release(struct lx_doc *doc);

/* Mapping helpers. */
const struct lx_node *lx_map_key(const struct lx_node *map, int i);
const struct lx_node *lx_map_value(const struct lx_node *map, int i);
const struct lx_node *lx_map_get(const struct lx_node *map, const char *key);
/* LX_OK when no scalar key of map is given twice, else an error at the
** second: "<what>key 'k' is given twice" (what: "" or "model 't': "). */
int lx_map_unique(const struct lx_node *map, const char *what, struct lx_error *err);

/* A view of `map` without the pairs whose values are among skip[0 .. n_skip)
** (entries may be NULL): rest borrows map's nodes and uses items (2·cap
** slots) as its pair array. Returns map itself when none is present, NULL
** when map has more than cap pairs. For keys that belong to the stack rather
** than the plugin (`train:`, `finetune:`, a mixture's `weight:`). */
const struct lx_node *lx_map_except(const struct lx_node *map, const struct lx_node *const *skip, int n_skip,
                                    struct lx_node *rest, struct lx_node **items, int cap);

/* "file:line:col" of a node into out (size n). */
void lx_node_where(const struct lx_node *node, char *out, size_t n);

/* Fill err with "file:line:col: <message>" and return LX_EINVAL. */
int lx_node_err(struct lx_error *err, const struct lx_node *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

const char *lx_node_kind_name(enum lx_node_kind kind);

#endif
