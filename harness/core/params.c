/*
** harness/core/params.c - parse, check, default and print parameters from a schema.
*/
#include "harness/core/params.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *type_name(enum lx_ptype t)
{
    switch (t) {
    case LX_PT_INT: return "integer";
    case LX_PT_FLOAT: return "number";
    case LX_PT_BOOL: return "boolean";
    case LX_PT_ENUM: return "choice";
    case LX_PT_RANGES: return "list of [start, end) pairs";
    case LX_PT_FLOATS: return "list of numbers";
    case LX_PT_PATH: return "file path";
    }
    return "?";
}

/* Copy choice number idx of "a|b|c" into out; returns 0 when idx is past the end. */
static int choice_at(const char *choices, int idx, char *out, size_t n)
{
    const char *p = choices;
    for (int i = 0; i < idx; i++) {
        p = strchr(p, '|');
        if (!p)
            return 0;
        p++;
    }
    size_t len = strcspn(p, "|");
    if (len >= n)
        len = n - 1;
    memcpy(out, p, len);
    out[len] = '\0';
    return 1;
}

/* 1 and *out for a number; 0 for text that is not one (nan and inf
** included); -1 for one past a double's range. strtod's ERANGE is also set on
** underflow (1e-320, a subnormal; 1e-400, 0): the nearest double is the value. */
static int parse_number(const struct lx_node *v, double *out)
{
    if (v->kind != LX_NODE_SCALAR || v->quoted || !v->text[0])
        return 0;
    char *end;
    errno = 0;
    double d = strtod(v->text, &end);
    if (*end || isnan(d) || (isinf(d) && errno != ERANGE))
        return 0;
    if (isinf(d))
        return -1;
    *out = d;
    return 1;
}

static int too_large(const struct lx_param *p, const struct lx_node *v, const char *what, struct lx_error *err)
{
    return lx_node_err(err, v, "%s: '%s' = %s is too large for a double\n  hint: %s", what, p->name, v->text, p->help);
}

static int check_bounds(const struct lx_param *p, const struct lx_node *v, double d,
                        const char *what, struct lx_error *err)
{
    int low_bad = (p->flags & LX_PF_MIN_OPEN) ? !(d > p->min) : !(d >= p->min);
    if (low_bad || ((p->flags & LX_PF_MAX_OPEN) ? !(d < p->max) : d > p->max)) {
        char lo[32], hi[32];
        lx_fmt_num(lo, p->min);
        lx_fmt_num(hi, p->max);
        return lx_node_err(err, v, "%s: '%s' = %s is out of bounds %s%s, %s%s\n  hint: %s",
                           what, p->name, v->text ? v->text : "?", (p->flags & LX_PF_MIN_OPEN) ? "(" : "[", lo, hi,
                           (p->flags & LX_PF_MAX_OPEN) ? ")" : "]", p->help);
    }
    return LX_OK;
}

static int parse_long(const struct lx_param *p, const struct lx_node *v, long *out,
                      const char *what, struct lx_error *err)
{
    double d;
    int got_num = parse_number(v, &d);
    if (got_num < 0)
        return too_large(p, v, what, err);
    if (!got_num || d != floor(d) || fabs(d) > 9.0e15) {
        const char *got = v->kind == LX_NODE_SCALAR ? v->text : lx_node_kind_name(v->kind);
        return lx_node_err(err, v, "%s: '%s' must be an integer, got %s%s%s\n  hint: %s",
                           what, p->name, v->quoted ? "the string \"" : "'", got,
                           v->quoted ? "\"" : "'", p->help);
    }
    int rc = check_bounds(p, v, d, what, err);
    if (rc == LX_OK)
        *out = (long)d;
    return rc;
}

static int parse_ranges(const struct lx_param *p, const struct lx_node *v, struct lx_ranges *r,
                        const char *what, struct lx_error *err)
{
    if (v->kind != LX_NODE_SEQ)
        return lx_node_err(err, v, "%s: '%s' must be a list of [start, end) pairs, got %s\n"
                           "  hint: e.g. %s: [[10, 100], [100, 1000]]",
                           what, p->name, lx_node_kind_name(v->kind), p->name);
    if (v->n_items > LX_MAX_RANGES)
        return lx_node_err(err, v, "%s: '%s' has %d pairs; at most %d are allowed",
                           what, p->name, v->n_items, LX_MAX_RANGES);
    struct lx_ranges tmp = {0};
    for (int i = 0; i < v->n_items; i++) {
        const struct lx_node *pair = v->items[i];
        if (pair->kind != LX_NODE_SEQ || pair->n_items != 2)
            return lx_node_err(err, pair, "%s: '%s' entry %d must be a pair [start, end]",
                               what, p->name, i + 1);
        int rc;
        if ((rc = parse_long(p, pair->items[0], &tmp.lo[i], what, err)) < 0 ||
            (rc = parse_long(p, pair->items[1], &tmp.hi[i], what, err)) < 0)
            return rc;
        if (tmp.hi[i] <= tmp.lo[i])
            return lx_node_err(err, pair, "%s: '%s' entry [%ld, %ld] is empty: end must exceed start",
                               what, p->name, tmp.lo[i], tmp.hi[i]);
        for (int j = 0; j < i; j++)     /* each range names its metrics: one given twice would store them twice */
            if (tmp.lo[j] == tmp.lo[i] && tmp.hi[j] == tmp.hi[i])
                return lx_node_err(err, pair, "%s: '%s' lists [%ld, %ld] twice (entries %d and %d)\n"
                                   "  hint: give each range once", what, p->name, tmp.lo[i], tmp.hi[i], j + 1, i + 1);
    }
    tmp.n = v->n_items;
    *r = tmp;
    return LX_OK;
}

static int parse_float(const struct lx_param *p, const struct lx_node *v, double *out, const char *what,
                       struct lx_error *err)
{
    double d;
    int got_num = parse_number(v, &d);
    if (got_num < 0)
        return too_large(p, v, what, err);
    if (!got_num) {
        const char *got = v->kind == LX_NODE_SCALAR ? v->text : lx_node_kind_name(v->kind);
        return lx_node_err(err, v, "%s: '%s' must be a number, got %s%s%s\n  hint: %s",
                           what, p->name, v->quoted ? "the string \"" : "'", got,
                           v->quoted ? "\"" : "'", p->help);
    }
    int rc = check_bounds(p, v, d, what, err);
    if (rc == LX_OK)
        *out = d;
    return rc;
}

static int parse_floats(const struct lx_param *p, const struct lx_node *v, struct lx_floats *r, const char *what,
                        struct lx_error *err)
{
    if (v->kind != LX_NODE_SEQ)
        return lx_node_err(err, v, "%s: '%s' must be a list of numbers, got %s\n  hint: e.g. %s: [1.0, 1.5, 2.0]",
                           what, p->name, lx_node_kind_name(v->kind), p->name);
    if (v->n_items > LX_MAX_FLOATS)
        return lx_node_err(err, v, "%s: '%s' has %d numbers; at most %d are allowed", what, p->name, v->n_items,
                           LX_MAX_FLOATS);
    for (int i = 0; i < v->n_items; i++) {
        int rc = parse_float(p, v->items[i], &r->v[i], what, err);
        if (rc < 0)
            return rc;
    }
    r->n = v->n_items;
    return LX_OK;
}

/* A path as written, or relative to the directory of the YAML file that
** names it (as a model's checkpoint is); "" stays "" (unset). */
static int parse_path(const struct lx_param *p, const struct lx_node *v, char *field, const char *what,
                      struct lx_error *err)
{
    if (v->kind != LX_NODE_SCALAR)
        return lx_node_err(err, v, "%s: '%s' must be a file path, got %s\n  hint: %s", what, p->name,
                           lx_node_kind_name(v->kind), p->help);
    const char *slash = v->file ? strrchr(v->file, '/') : NULL;
    int dir = v->text[0] && v->text[0] != '/' && slash;
    int n = snprintf(field, LX_PATH_CAP, "%.*s%s%s", dir ? (int)(slash - v->file) : 0, dir ? v->file : "",
                     dir ? "/" : "", v->text);
    if (n >= LX_PATH_CAP)
        return lx_node_err(err, v, "%s: '%s' is a path of %d bytes; at most %d are allowed", what, p->name, n,
                           LX_PATH_CAP - 1);
    return LX_OK;
}

/* `auto` for a row flagged LX_PF_AUTO: stored as 0, resolved per cell. */
static int is_auto(const struct lx_param *p, const struct lx_node *v)
{
    return (p->flags & LX_PF_AUTO) && v->kind == LX_NODE_SCALAR && !v->quoted && strcmp(v->text, "auto") == 0;
}

static int param_parse(const struct lx_param *p, void *dst, const struct lx_node *v,
                       const char *what, struct lx_error *err)
{
    char *field = (char *)dst + p->offset;
    if (is_auto(p, v) && p->type == LX_PT_INT)
        return *(long *)field = 0, LX_OK;
    if (is_auto(p, v) && p->type == LX_PT_FLOAT)
        return *(double *)field = 0, LX_OK;
    switch (p->type) {
    case LX_PT_INT:
        return parse_long(p, v, (long *)field, what, err);
    case LX_PT_FLOAT:
        return parse_float(p, v, (double *)field, what, err);
    case LX_PT_BOOL: {
        static const char *yes[] = {"true", "True", "TRUE", "yes", "Yes", "on", "On"};
        static const char *no[] = {"false", "False", "FALSE", "no", "No", "off", "Off"};
        if (v->kind == LX_NODE_SCALAR && !v->quoted) {
            for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
                if (strcmp(v->text, yes[i]) == 0)
                    return *(int *)field = 1, LX_OK;
                if (strcmp(v->text, no[i]) == 0)
                    return *(int *)field = 0, LX_OK;
            }
        }
        return lx_node_err(err, v, "%s: '%s' must be true or false, got '%s'",
                           what, p->name, v->kind == LX_NODE_SCALAR ? v->text : lx_node_kind_name(v->kind));
    }
    case LX_PT_ENUM: {
        char c[64];
        const char *names[32];
        char store[32][64];
        int n = 0;
        for (; n < 32 && choice_at(p->choices, n, c, sizeof c); n++) {
            memcpy(store[n], c, sizeof c);
            names[n] = store[n];
            if (v->kind == LX_NODE_SCALAR && strcmp(v->text, c) == 0)
                return *(int *)field = n, LX_OK;
        }
        const char *near = v->kind == LX_NODE_SCALAR ? lx_closest(v->text, names, n) : NULL;
        return lx_node_err(err, v, "%s: '%s' must be one of %s, got '%s'%s%s%s",
                           what, p->name, p->choices,
                           v->kind == LX_NODE_SCALAR ? v->text : lx_node_kind_name(v->kind),
                           near ? "\n  hint: did you mean '" : "", near ? near : "", near ? "'?" : "");
    }
    case LX_PT_RANGES:
        return parse_ranges(p, v, (struct lx_ranges *)field, what, err);
    case LX_PT_FLOATS:
        return parse_floats(p, v, (struct lx_floats *)field, what, err);
    case LX_PT_PATH:
        return parse_path(p, v, field, what, err);
    }
    LX_ASSERT(0);
    return LX_EINVAL;
}

static int apply_default(const struct lx_param *p, void *dst, struct lx_error *err)
{
    struct lx_doc doc;
    char name[128];
    snprintf(name, sizeof name, "<default of %s>", p->name);
    int rc = lx_doc_load_text(&doc, p->def, name, err);
    if (rc == LX_OK && !doc.root)
        rc = lx_err(err, LX_EINVAL, "%s: empty default", p->name);
    if (rc == LX_OK)
        rc = param_parse(p, dst, doc.root, "schema", err);
    lx_doc_release(&doc);
    return rc;
}

const struct lx_param *lx_param_find(const struct lx_schema *s, const char *name)
{
    for (int i = 0; i < s->n_rows; i++)
        if (strcmp(s->rows[i].name, name) == 0)
            return &s->rows[i];
    return NULL;
}

/* One term of a rule, "name=value" or "name!=value", split into its parts;
** returns the length of the term (up to '&' or the end), 0 when malformed. */
static size_t rule_term(const char *t, char *name, char *value, int *negate)
{
    size_t len = strcspn(t, "&"), eq = strcspn(t, "=");
    if (eq >= len || eq == 0 || eq > 63 || len - eq - 1 > 63 || len - eq - 1 == 0)
        return 0;
    *negate = t[eq - 1] == '!';
    size_t n = eq - (size_t)*negate;
    memcpy(name, t, n);
    name[n] = '\0';
    memcpy(value, t + eq + 1, len - eq - 1);
    value[len - eq - 1] = '\0';
    return len;
}

/* Does every term of `when` hold for src? (The rule is checked by lx_schema_check.) */
static int rule_holds(const struct lx_schema *s, const void *src, const char *when)
{
    char name[64], value[64];
    int negate, holds = 1;
    for (const char *t = when; holds && *t;) {
        size_t len = rule_term(t, name, value, &negate);
        const struct lx_param *p = lx_param_find(s, name);
        LX_ASSERT(len > 0 && p);
        struct lx_buf v = {0};
        lx_param_value_text(p, src, &v);
        holds = (strcmp(lx_buf_str(&v), value) == 0) != negate;
        lx_buf_free(&v);
        t += len + (t[len] == '&');
    }
    return holds;
}

/* Does `when` hold a term over row `name` itself (a row left out at its default: {"qkv_bias", "qkv_bias=true"})? */
static int rule_names(const char *when, const char *name)
{
    char term[64], value[64];
    int negate, self = 0;
    for (const char *t = when; !self && *t;) {
        size_t len = rule_term(t, term, value, &negate);
        self = strcmp(term, name) == 0;
        t += len + (t[len] == '&');
    }
    return self;
}

static const char *unmet(const struct lx_schema *s, const struct lx_param_rule *rules, const void *src,
                         const char *name, int moot)
{
    for (const struct lx_param_rule *r = rules; r && r->row; r++)
        if (strcmp(r->row, name) == 0 && !rule_holds(s, src, r->when) && !(moot && rule_names(r->when, name)))
            return r->when;
    return NULL;
}

const char *lx_param_unmet(const struct lx_schema *s, const void *src, const char *name)
{
    const char *when = unmet(s, s->rules, src, name, 1);
    return when ? when : unmet(s, s->refusals, src, name, 0);
}

int lx_param_active(const struct lx_schema *s, const void *src, const char *name)
{
    const struct lx_param *p = lx_param_find(s, name);
    if (p && p->type == LX_PT_PATH && ((const char *)src + p->offset)[0] == '\0')
        return 0;
    return unmet(s, s->rules, src, name, 0) == NULL;
}

/* A rule names existing rows, and each value is one its row can take,
** written as the row prints it. */
static int check_rule(const struct lx_schema *s, const struct lx_param_rule *r, void *tmp, struct lx_error *err)
{
    if (!lx_param_find(s, r->row))
        return lx_err(err, LX_EINVAL, "rule for '%s': no row of that name", r->row);
    char name[64], value[64];
    int negate, rc = LX_OK;
    for (const char *t = r->when; rc == LX_OK && *t;) {
        size_t len = rule_term(t, name, value, &negate);
        const struct lx_param *p = len ? lx_param_find(s, name) : NULL;
        if (!p)
            return lx_err(err, LX_EINVAL, "rule for '%s': '%s' is not a term 'row=value' over a known row",
                          r->row, r->when);
        struct lx_param q = *p;
        q.def = value;
        struct lx_buf v = {0};
        if ((rc = apply_default(&q, tmp, err)) == LX_OK) {
            lx_param_value_text(p, tmp, &v);
            if (strcmp(lx_buf_str(&v), value) != 0)
                rc = lx_err(err, LX_EINVAL, "rule for '%s': write '%s' as '%s'", r->row, value, lx_buf_str(&v));
        }
        lx_buf_free(&v);
        t += len + (t[len] == '&');
    }
    return rc;
}

int lx_schema_check(const struct lx_schema *s, struct lx_error *err)
{
    void *tmp = lx_xcalloc(1, s->size);
    int rc = LX_OK;
    for (int i = 0; i < s->n_rows && rc == LX_OK; i++) {
        const struct lx_param *p = &s->rows[i];
        if (!p->name || !p->def || !p->help || !p->help[0])
            rc = lx_err(err, LX_EINVAL, "row %d: name, default and help are required", i);
        else if (p->offset >= s->size)
            rc = lx_err(err, LX_EINVAL, "'%s': offset outside the params struct", p->name);
        else if (p->type == LX_PT_ENUM && !p->choices)
            rc = lx_err(err, LX_EINVAL, "'%s': enum without choices", p->name);
        else
            rc = apply_default(p, tmp, err);
        for (int j = 0; j < i && rc == LX_OK; j++)
            if (strcmp(s->rows[j].name, p->name) == 0)
                rc = lx_err(err, LX_EINVAL, "'%s': duplicate parameter name", p->name);
    }
    for (const struct lx_param_rule *r = s->rules; r && r->row && rc == LX_OK; r++)
        rc = check_rule(s, r, tmp, err);
    for (const struct lx_param_rule *r = s->refusals; r && r->row && rc == LX_OK; r++)
        rc = check_rule(s, r, tmp, err);
    free(tmp);
    return rc;
}

void lx_params_defaults(const struct lx_schema *s, void *dst)
{
    memset(dst, 0, s->size);
    for (int i = 0; i < s->n_rows; i++) {
        struct lx_error err;
        int rc = apply_default(&s->rows[i], dst, &err);
        LX_ASSERT(rc == LX_OK);   /* the contract test checks every default */
    }
}


static int unknown_key(const struct lx_schema *s, const struct lx_node *where, const char *key,
                       const char *what, struct lx_error *err)
{
    const char *names[64] = {0};
    int n = 0;
    struct lx_buf known = {0};
    for (int i = 0; i < s->n_rows && n < 64; i++) {
        names[n++] = s->rows[i].name;
        lx_buf_printf(&known, "%s%s", i ? ", " : "", s->rows[i].name);
    }
    const char *near = lx_closest(key, names, n);
    int rc = lx_node_err(err, where, "%s: unknown parameter '%s'\n  hint: %s%s%s%s%s",
                         what, key, LX_DID_YOU_MEAN(near), n ? "known parameters: " : "it takes no parameters",
                         lx_buf_str(&known));
    lx_buf_free(&known);
    return rc;
}

int lx_params_set(const struct lx_schema *s, void *dst, const char *key,
                  const struct lx_node *value, const char *what, struct lx_error *err)
{
    const struct lx_param *p = lx_param_find(s, key);
    if (!p)
        return unknown_key(s, value, key, what, err);
    return param_parse(p, dst, value, what, err);
}

int lx_params_apply(const struct lx_schema *s, void *dst, const struct lx_node *map,
                    const char *what, struct lx_error *err)
{
    if (!map)
        return LX_OK;
    if (map->kind == LX_NODE_SCALAR && map->text[0] == '\0')
        return LX_OK;   /* "name:" with nothing after it */
    if (map->kind != LX_NODE_MAP)
        return lx_node_err(err, map, "%s: parameters must be a mapping, got %s\n"
                           "  hint: write them as {key: value, ...}", what, lx_node_kind_name(map->kind));
    for (int i = 0; i < map->n_items; i++) {
        const struct lx_node *k = lx_map_key(map, i);
        if (k->kind != LX_NODE_SCALAR)
            return lx_node_err(err, k, "%s: parameter names must be plain words", what);
        for (int j = 0; j < i; j++)
            if (strcmp(lx_map_key(map, j)->text, k->text) == 0)
                return lx_node_err(err, k, "%s: parameter '%s' is given twice", what, k->text);
        const struct lx_param *p = lx_param_find(s, k->text);
        if (!p)
            return unknown_key(s, k, k->text, what, err);
        int rc = param_parse(p, dst, lx_map_value(map, i), what, err);
        if (rc < 0)
            return rc;
    }
    int rc = LX_OK;     /* a given row that does not matter would be dropped silently */
    for (int i = 0; i < map->n_items && rc == LX_OK; i++)
        rc = lx_param_refuse_unmet(s, dst, lx_map_key(map, i)->text, what, lx_map_key(map, i), err);
    return rc;
}

int lx_param_refuse_unmet(const struct lx_schema *s, const void *src, const char *name, const char *what,
                          const struct lx_node *at, struct lx_error *err)
{
    const char *when = lx_param_unmet(s, src, name);
    if (!when)
        return LX_OK;
    struct lx_buf hint = {0};
    char term[64], value[64];
    int negate;
    for (const char *t = when; *t;) {   /* "set a=b and c to another value than d" */
        size_t len = rule_term(t, term, value, &negate);
        lx_buf_printf(&hint, "%s%s%s%s", hint.len ? " and " : "set ", term, negate ? " to another value than " : "=",
                      value);
        t += len + (t[len] == '&');
    }
    const char *fmt = "%s: '%s' applies only with %s\n  hint: drop it, or %s";
    int rc = at ? lx_node_err(err, at, fmt, what, name, when, lx_buf_str(&hint))
                : lx_err(err, LX_EINVAL, fmt, what, name, when, lx_buf_str(&hint));
    lx_buf_free(&hint);
    return rc;
}

static int row_active(const struct lx_schema *s, const void *src, int i)
{
    return lx_param_active(s, src, s->rows[i].name);
}

void lx_params_finish(const struct lx_schema *s, void *dst)
{
    for (int i = 0; i < s->n_rows; i++) {
        if (row_active(s, dst, i))
            continue;
        struct lx_error err;
        LX_ASSERT(apply_default(&s->rows[i], dst, &err) == LX_OK);
    }
}

void lx_param_value_text(const struct lx_param *p, const void *src, struct lx_buf *out)
{
    const char *field = (const char *)src + p->offset;
    switch (p->type) {
    case LX_PT_INT:
        lx_buf_printf(out, "%ld", *(const long *)field);
        return;
    case LX_PT_FLOAT:
        lx_buf_num(out, *(const double *)field);
        return;
    case LX_PT_BOOL:
        lx_buf_puts(out, *(const int *)field ? "true" : "false");
        return;
    case LX_PT_ENUM: {
        char c[64];
        LX_ASSERT(choice_at(p->choices, *(const int *)field, c, sizeof c));
        lx_buf_puts(out, c);
        return;
    }
    case LX_PT_PATH:
        lx_buf_puts(out, field);
        return;
    case LX_PT_RANGES: {
        const struct lx_ranges *r = (const struct lx_ranges *)field;
        lx_buf_puts(out, "[");
        for (int i = 0; i < r->n; i++)
            lx_buf_printf(out, "%s[%ld,%ld]", i ? "," : "", r->lo[i], r->hi[i]);
        lx_buf_puts(out, "]");
        return;
    }
    case LX_PT_FLOATS: {
        const struct lx_floats *r = (const struct lx_floats *)field;
        lx_buf_puts(out, "[");
        for (int i = 0; i < r->n; i++) {
            lx_buf_puts(out, i ? "," : "");
            lx_buf_num(out, r->v[i]);
        }
        lx_buf_puts(out, "]");
        return;
    }
    }
}

/* Does row p of src hold its default? */
static int at_default(const struct lx_param *p, const void *src)
{
    struct lx_error err;
    char *def = lx_xcalloc(1, p->offset + (p->type == LX_PT_PATH ? LX_PATH_CAP : p->type == LX_PT_FLOATS
                                            ? sizeof(struct lx_floats) : sizeof(struct lx_ranges)));
    LX_ASSERT(apply_default(p, def, &err) == LX_OK);
    struct lx_buf a = {0}, b = {0};
    lx_param_value_text(p, src, &a);
    lx_param_value_text(p, def, &b);
    int same = strcmp(lx_buf_str(&a), lx_buf_str(&b)) == 0;
    lx_buf_free(&a);
    lx_buf_free(&b);
    free(def);
    return same;
}

void lx_params_json(const struct lx_schema *s, const void *src, struct lx_buf *out)
{
    lx_buf_puts(out, "{");
    int first = 1;
    for (int i = 0; i < s->n_rows; i++) {
        const struct lx_param *p = &s->rows[i];
        if (!row_active(s, src, i) || ((p->flags & LX_PF_UNKEYED_DEFAULT) && at_default(p, src)))
            continue;
        lx_buf_puts(out, first ? "" : ",");
        first = 0;
        lx_buf_json_str(out, p->name);
        lx_buf_puts(out, ":");
        if (p->type == LX_PT_ENUM || p->type == LX_PT_PATH) {
            struct lx_buf v = {0};
            lx_param_value_text(p, src, &v);
            lx_buf_json_str(out, lx_buf_str(&v));
            lx_buf_free(&v);
        } else {
            lx_param_value_text(p, src, out);
        }
    }
    lx_buf_puts(out, "}");
}

void lx_params_json_training(const struct lx_schema *s, const void *src, struct lx_buf *out)
{
    void *at = lx_xcalloc(1, s->size);
    memcpy(at, src, s->size);
    for (int i = 0; i < s->n_rows; i++)
        if (s->rows[i].flags & LX_PF_TEST_ONLY) {
            int rc = apply_default(&s->rows[i], at, NULL);
            LX_ASSERT(rc == LX_OK);   /* the contract test checks every default */
        }
    lx_params_json(s, at, out);
    free(at);
}

void lx_params_text_resolved(const struct lx_schema *s, const void *given, const void *resolved,
                             struct lx_buf *out)
{
    void *def = lx_xcalloc(1, s->size);
    lx_params_defaults(s, def);
    int first = 1;
    for (int i = 0; i < s->n_rows; i++) {
        const struct lx_param *p = &s->rows[i];
        if (!row_active(s, given, i))
            continue;
        struct lx_buf a = {0}, b = {0};
        lx_param_value_text(p, given, &a);
        lx_param_value_text(p, def, &b);
        if ((p->flags & LX_PF_SHOW) || strcmp(lx_buf_str(&a), lx_buf_str(&b)) != 0) {
            lx_buf_reset(&a);
            lx_param_value_text(p, resolved, &a);
            lx_buf_printf(out, "%s%s=%s", first ? "" : ",", p->name, lx_buf_str(&a));
            first = 0;
        }
        lx_buf_free(&a);
        lx_buf_free(&b);
    }
    free(def);
}

void lx_params_text(const struct lx_schema *s, const void *src, struct lx_buf *out)
{
    lx_params_text_resolved(s, src, src, out);
}

void lx_schema_describe(const struct lx_schema *s, struct lx_buf *out, const char *indent)
{
    int width = 10;   /* names in one column, as wide as the longest */
    for (int i = 0; i < s->n_rows; i++)
        if ((int)strlen(s->rows[i].name) > width)
            width = (int)strlen(s->rows[i].name);
    for (int i = 0; i < s->n_rows; i++) {
        const struct lx_param *p = &s->rows[i];
        lx_buf_printf(out, "%s%-*s %s, default %s%s", indent, width, p->name,
                      p->type == LX_PT_ENUM ? p->choices : type_name(p->type), p->def,
                      (p->flags & LX_PF_AUTO) ? " (auto: resolved per cell from the facts; write 0 or auto)" :
                      (p->flags & LX_PF_TEST_ONLY) ? " (test cases only: a training mixture ignores it)" : "");
        if (p->type == LX_PT_INT || p->type == LX_PT_FLOAT || p->type == LX_PT_RANGES || p->type == LX_PT_FLOATS) {
            char lo[32], hi[32];
            lx_fmt_num(lo, p->min);
            lx_fmt_num(hi, p->max);
            lx_buf_printf(out, ", in %s%s, %s%s", (p->flags & LX_PF_MIN_OPEN) ? "(" : "[", lo, hi,
                          (p->flags & LX_PF_MAX_OPEN) ? ")" : "]");
        }
        lx_buf_printf(out, "\n%s    %s\n", indent, p->help);
    }
}
