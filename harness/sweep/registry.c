/*
** harness/sweep/registry.c - plugin tables generated from the .def lists.
**
** Each .def is included twice: once to declare the extern symbols, once to
** list their addresses, so a declaration and its table entry cannot drift.
*/
#include "harness/sweep/registry.h"

#include <string.h>

#define LX_METHOD(n) extern const struct lx_method lx_method_##n;
#include "methods/methods.def"
#undef LX_METHOD
#define LX_TASK(n) extern const struct lx_task lx_task_##n;
#include "tasks/tasks.def"
#undef LX_TASK

static const struct lx_method *const methods[] = {
#define LX_METHOD(n) &lx_method_##n,
#include "methods/methods.def"
#undef LX_METHOD
};

static const struct lx_task *const tasks[] = {
#define LX_TASK(n) &lx_task_##n,
#include "tasks/tasks.def"
#undef LX_TASK
};

#define N_METHODS ((int)(sizeof methods / sizeof *methods))
#define N_TASKS ((int)(sizeof tasks / sizeof *tasks))

int lx_method_count(void) { return N_METHODS; }
const struct lx_method *lx_method_at(int i) { return i >= 0 && i < N_METHODS ? methods[i] : NULL; }
int lx_task_count(void) { return N_TASKS; }
const struct lx_task *lx_task_at(int i) { return i >= 0 && i < N_TASKS ? tasks[i] : NULL; }

const struct lx_method *lx_method_find(const char *name)
{
    for (int i = 0; i < N_METHODS; i++)
        if (strcmp(methods[i]->name, name) == 0)
            return methods[i];
    return NULL;
}

const struct lx_task *lx_task_find(const char *name)
{
    for (int i = 0; i < N_TASKS; i++)
        if (strcmp(tasks[i]->name, name) == 0)
            return tasks[i];
    return NULL;
}

const char *lx_method_suggest(const char *name)
{
    const char *names[N_METHODS];
    for (int i = 0; i < N_METHODS; i++)
        names[i] = methods[i]->name;
    return lx_closest(name, names, N_METHODS);
}

const char *lx_task_suggest(const char *name)
{
    const char *names[N_TASKS];
    for (int i = 0; i < N_TASKS; i++)
        names[i] = tasks[i]->name;
    return lx_closest(name, names, N_TASKS);
}

int lx_unknown_name(struct lx_error *err, const char *kind, const char *name)
{
    const char *near = strcmp(kind, "method") == 0 ? lx_method_suggest(name) : lx_task_suggest(name);
    return lx_err(err, LX_EINVAL, "unknown %s '%s'\n  hint: %s%s%s`lenx list %ss` shows them all", kind, name,
                  LX_DID_YOU_MEAN(near), kind);
}

int lx_method_validate(const struct lx_method *m, struct lx_error *err)
{
    if (!m->name || !m->name[0] || !m->summary || !m->summary[0])
        return lx_err(err, LX_EINVAL, "a method lacks a name or summary");
    if (!m->apply)
        return lx_err(err, LX_EINVAL, "method '%s': the 'apply' hook is required", m->name);
    if (!(m->kind & (LX_KIND_INFERENCE | LX_KIND_TRAINING)))
        return lx_err(err, LX_EINVAL, "method '%s': kind must be inference, training or both", m->name);
    struct lx_error sub;
    if (lx_schema_check(&m->schema, &sub) < 0)
        return lx_err(err, LX_EINVAL, "method '%s': bad parameter schema: %s", m->name, sub.msg);
    return LX_OK;
}

int lx_task_validate(const struct lx_task *t, struct lx_error *err)
{
    if (!t->name || !t->name[0] || !t->summary || !t->summary[0])
        return lx_err(err, LX_EINVAL, "a task lacks a name or summary");
    if (t->mode == LX_MODE_LOGITS && !t->facts)
        return lx_err(err, LX_EINVAL, "task '%s': logit tasks need the 'facts' hook", t->name);
    if (!t->run)
        return lx_err(err, LX_EINVAL, "task '%s': the 'run' hook is required", t->name);
    if (t->mode != LX_MODE_LOGITS && !t->split)
        return lx_err(err, LX_EINVAL, "task '%s': model tasks need the 'split' hook", t->name);
    if (!(t->caps & LX_CAP_LOGITS))
        return lx_err(err, LX_EINVAL, "task '%s': every task offers logits", t->name);
    struct lx_error sub;
    if (lx_schema_check(&t->schema, &sub) < 0)
        return lx_err(err, LX_EINVAL, "task '%s': bad parameter schema: %s", t->name, sub.msg);
    return LX_OK;
}

int lx_registry_check(struct lx_error *err)
{
    for (int i = 0; i < N_METHODS; i++) {
        int rc = lx_method_validate(methods[i], err);
        if (rc < 0)
            return rc;
        for (int j = 0; j < i; j++)
            if (strcmp(methods[i]->name, methods[j]->name) == 0)
                return lx_err(err, LX_EINVAL, "method name '%s' is registered twice", methods[i]->name);
    }
    for (int i = 0; i < N_TASKS; i++) {
        int rc = lx_task_validate(tasks[i], err);
        if (rc < 0)
            return rc;
        for (int j = 0; j < i; j++)
            if (strcmp(tasks[i]->name, tasks[j]->name) == 0)
                return lx_err(err, LX_EINVAL, "task name '%s' is registered twice", tasks[i]->name);
    }
    return LX_OK;
}
