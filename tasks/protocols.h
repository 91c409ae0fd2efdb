/*
** tasks/protocols.h - protocol presets: for a retrieval task, how a peer
** benchmark's own code runs it (its scorer, its answer budget and stop rule,
** how it counts the length, the names of its fields), one row each by
** (task, name). `protocol: lenx`, today's behaviour, is every task's default
** and has no row (docs/tasks.md#protocol-presets).
**
** To add a preset: one row in the table in protocols.c.
*/
#ifndef LX_PROTOCOLS_H
#define LX_PROTOCOLS_H

#include "harness/core/lx.h"

struct lx_protocol {
    const char *task;           /* the task it is for */
    const char *name;           /* the name in `protocol:` */
    const char *follows;        /* the peer's file it follows, one line */
    const char *scorer;         /* the named scorer (tasks/scorers.h) */
    const char *gold_field;     /* the peer's name for the gold in its prediction files, or NULL */
    const char *output_field;   /* the peer's name for the model's output, or NULL */
};

extern const struct lx_protocol lx_protocols[];
extern const int lx_n_protocols;

/* The preset (task, name); NULL when there is none. */
const struct lx_protocol *lx_protocol_find(const char *task, const char *name);

#endif
