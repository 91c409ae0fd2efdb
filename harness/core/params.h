/*
** harness/core/params.h - parameter schemas: one row per tunable.
**
** A row says name, type, where the value lives in the plugin's params struct
** (offsetof), default, bounds and help. The one table drives YAML parsing and
** bounds checks, `lenx show`, `--help`, the canonical method string and the
** stored JSON (docs/development.md#style). Plugins declare rows with the LX_P_* macros.
**
** To add a type: extend enum lx_ptype, then param_parse(), param_to_json()
** and param_to_text() in params.c.
*/
#ifndef LX_PARAMS_H
#define LX_PARAMS_H

#include <stddef.h>

#include "harness/core/config.h"
#include "harness/core/lx.h"

enum lx_ptype {
    LX_PT_INT,      /* long */
    LX_PT_FLOAT,    /* double */
    LX_PT_BOOL,     /* int, 0 or 1 */
    LX_PT_ENUM,     /* int, index into the '|'-separated choices */
    LX_PT_RANGES,   /* struct lx_ranges: a list of [lo, hi) integer pairs */
    LX_PT_FLOATS,   /* struct lx_floats: a list of numbers, each within the row's bounds */
    LX_PT_PATH,     /* char[LX_PATH_CAP]: a file path, resolved against the YAML file's directory;
                    ** empty = unset, and an unset path row is inactive (stored nowhere) */
};

#define LX_PATH_CAP 1024    /* bytes of a LX_PT_PATH field, the final NUL included */

enum {
    LX_PF_MIN_OPEN = 1 << 0,    /* the lower bound is exclusive */
    LX_PF_SHOW = 1 << 1,        /* always named in the canonical string, even at its default */
    LX_PF_AUTO = 1 << 2,        /* 0 = automatic, from the facts: YAML may write `auto`; the
                                ** method's resolve hook replaces it per cell */
    LX_PF_UNKEYED_DEFAULT = 1 << 3, /* left out of the stored, hashed JSON while at its default: a
                                    ** row added after cells were stored keeps their run keys */
    LX_PF_MAX_OPEN = 1 << 4,    /* the upper bound is exclusive */
    LX_PF_TEST_ONLY = 1 << 5,   /* read by a task's test cases alone (how many, at which depths, how graded),
                                ** never by the training instances a mixture draws: a mixture's key
                                ** writes it at its default (lx_params_json_training) */
};

#define LX_MAX_RANGES 16

struct lx_ranges {
    int n;                          /* pairs used */
    long lo[LX_MAX_RANGES];         /* (n,) inclusive starts */
    long hi[LX_MAX_RANGES];         /* (n,) exclusive ends, hi > lo */
};

#define LX_MAX_FLOATS 128   /* numbers of a LX_PT_FLOATS row: one per rotary pair of a head of 256 */

struct lx_floats {
    int n;                          /* numbers used */
    double v[LX_MAX_FLOATS];        /* (n,) */
};

struct lx_param {
    const char *name;       /* YAML key */
    enum lx_ptype type;     /* value type */
    size_t offset;          /* offsetof() into the params struct */
    const char *def;        /* default, as YAML text ("512", "su", "[[10,100]]") */
    double min, max;        /* inclusive bounds for INT and FLOAT (see LX_PF_MIN_OPEN) */
    const char *choices;    /* ENUM only: "su|qwen|ssmax" */
    unsigned flags;         /* LX_PF_* */
    const char *help;       /* one line for `lenx show` and docs */
};

/* Row constructors; S is the params struct type. */
#define LX_P_INT(S, f, def, lo, hi, fl, help) \
    { #f, LX_PT_INT, offsetof(S, f), def, lo, hi, NULL, fl, help }
#define LX_P_FLOAT(S, f, def, lo, hi, fl, help) \
    { #f, LX_PT_FLOAT, offsetof(S, f), def, lo, hi, NULL, fl, help }
#define LX_P_BOOL(S, f, def, fl, help) \
    { #f, LX_PT_BOOL, offsetof(S, f), def, 0, 1, NULL, fl, help }
#define LX_P_ENUM(S, f, def, choices, fl, help) \
    { #f, LX_PT_ENUM, offsetof(S, f), def, 0, 0, choices, fl, help }
#define LX_P_RANGES(S, f, def, lo, hi, fl, help) \
    { #f, LX_PT_RANGES, offsetof(S, f), def, lo, hi, NULL, fl, help }
#define LX_P_FLOATS(S, f, def, lo, hi, fl, help) \
    { #f, LX_PT_FLOATS, offsetof(S, f), def, lo, hi, NULL, fl, help }
#define LX_P_PATH(S, f, fl, help) \
    { #f, LX_PT_PATH, offsetof(S, f), "\"\"", 0, 0, NULL, fl, help }

/* When a row matters: row `row` is active only while `when` holds, e.g.
** {"base", "mode=su"} or {"windows", "tokens=0"}. `when` is one or more terms
** "name=value" or "name!=value" joined by '&', each value written as
** lx_param_value_text prints it ("true", "0", "static"). Rows are named, never
** numbered, so reordering rows changes nothing; lx_schema_check fails on a
** name that is not a row or a value its row cannot take. Rows that do not
** matter are reset to their defaults and left out of keys and strings. */
struct lx_param_rule {
    const char *row;        /* the row that may be inactive */
    const char *when;       /* "name=value[&name!=value...]" */
};

/* A schema: its rows and the optional rules saying when a row matters. */
struct lx_schema {
    const struct lx_param *rows;            /* (n_rows,) */
    int n_rows;
    size_t size;                            /* sizeof the params struct */
    const struct lx_param_rule *rules;      /* ended by {NULL, NULL}; NULL = every row active */
    const struct lx_param_rule *refusals;   /* rules, as above, that only refuse a row given while their
                                            ** condition fails: the row stays in keys and strings (always
                                            ** at its default there), so cells stored before the refusal
                                            ** came keep their run keys; NULL = none */
};

/* A schema from a static row array, its struct type and the optional rules
** (and refusals). */
#define LX_SCHEMA(rows, S, rules) \
    { rows, (int)(sizeof rows / sizeof *rows), sizeof(S), rules, NULL }
#define LX_SCHEMA_REFUSING(rows, S, rules, refusals) \
    { rows, (int)(sizeof rows / sizeof *rows), sizeof(S), rules, refusals }
#define LX_SCHEMA_NONE { NULL, 0, 0, NULL, NULL }

/* The row named `name`, or NULL. Code that reads a row by name checks it once
** in the registry contract (lx_schema_check covers the rules). */
const struct lx_param *lx_param_find(const struct lx_schema *s, const char *name);

/* The condition over other rows of a rule or refusal of row `name` that the
** values in src do not meet ("mode=static"), or NULL: a row the user gives
** under it would be dropped, or (a refusal) not read. (A rule over the row
** itself, "qkv_bias=true", only leaves its default out of the key: writing the
** default is fine.) */
const char *lx_param_unmet(const struct lx_schema *s, const void *src, const char *name);
/* LX_OK, or (lx_param_unmet gives a condition) the error that row `name`,
** given by `what`, applies only under it, with a hint how to meet it; at
** the YAML key `at` when not NULL (file:line:column). */
int lx_param_refuse_unmet(const struct lx_schema *s, const void *src, const char *name, const char *what,
                          const struct lx_node *at, struct lx_error *err);
/* Does the row named `name` matter under the values in src (its rules; an
** empty LX_PT_PATH row never does)? */
int lx_param_active(const struct lx_schema *s, const void *src, const char *name);

/* Check a schema's own consistency (defaults parse and lie in bounds, names
** unique, offsets inside the struct). Used by the registry contract test. */
int lx_schema_check(const struct lx_schema *s, struct lx_error *err);

/* Fill dst (s->size bytes) with every default. */
void lx_params_defaults(const struct lx_schema *s, void *dst);

/* Apply a YAML mapping of overrides; `what` names the owner in messages
** ("method 'logn'"). A NULL map applies nothing. Errors carry file:line:col. */
int lx_params_apply(const struct lx_schema *s, void *dst, const struct lx_node *map,
                    const char *what, struct lx_error *err);

/* Set one row from a node (used by `lenx show k=v`). */
int lx_params_set(const struct lx_schema *s, void *dst, const char *key,
                  const struct lx_node *value, const char *what, struct lx_error *err);

/* Reset inactive rows to defaults: call once after all overrides (resolve once). */
void lx_params_finish(const struct lx_schema *s, void *dst);

/* {"k": v, ...} over active rows in schema order: the stored, hashed form. */
void lx_params_json(const struct lx_schema *s, const void *src, struct lx_buf *out);

/* lx_params_json with every LX_PF_TEST_ONLY row at its default: the parameters
** as the training instances of a mixture read them, for its model key. */
void lx_params_json_training(const struct lx_schema *s, const void *src, struct lx_buf *out);

/* "k=v,k=v" over active rows that differ from their default or carry
** LX_PF_SHOW; "" when none. Used for the canonical method/task string. */
void lx_params_text(const struct lx_schema *s, const void *src, struct lx_buf *out);

/* The same rows as lx_params_text(given) names, with their values from
** `resolved` (given with its automatic values made concrete): "scale=4". */
void lx_params_text_resolved(const struct lx_schema *s, const void *given, const void *resolved,
                             struct lx_buf *out);

/* Value of one row as text ("0.4", "ssmax", "[[10,100]]"). */
void lx_param_value_text(const struct lx_param *p, const void *src, struct lx_buf *out);

/* Describe the rows for help output: "name (type, default D, in [a, b]): help". */
void lx_schema_describe(const struct lx_schema *s, struct lx_buf *out, const char *indent);

#endif
