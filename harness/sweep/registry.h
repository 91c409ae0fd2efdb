/*
** harness/sweep/registry.h - the method and task registries, built from
** methods/methods.def and tasks/tasks.def.
*/
#ifndef LX_REGISTRY_H
#define LX_REGISTRY_H

#include "methods/method.h"
#include "tasks/task.h"

int lx_method_count(void);
const struct lx_method *lx_method_at(int i);
const struct lx_method *lx_method_find(const char *name);

int lx_task_count(void);
const struct lx_task *lx_task_at(int i);
const struct lx_task *lx_task_find(const char *name);

/* The closest registered name, for "did you mean" (NULL when none is close). */
const char *lx_method_suggest(const char *name);
const char *lx_task_suggest(const char *name);

/* "unknown method 'x'" (kind "method" or "task") with a "did you mean" hint,
** into err; returns LX_EINVAL. Callers add the location. */
int lx_unknown_name(struct lx_error *err, const char *kind, const char *name);

/* Check the contracts of one plugin: name, required hooks, schema. */
int lx_method_validate(const struct lx_method *m, struct lx_error *err);
int lx_task_validate(const struct lx_task *t, struct lx_error *err);

/* Validate every plugin and the uniqueness of names: run at start-up. */
int lx_registry_check(struct lx_error *err);

#endif
