/*
** harness/backends/local.c - the local engine as the commands reach it: a
** model found by path or stored name, loaded with its tokenizer, its stacks
** checked (local.h).
*/
#include "harness/backends/local.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/core/config.h"
#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/model/model.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/sweep/plan.h"
#include "harness/sweep/run.h"
#include "harness/sweep/uses.h"
#include "results/store.h"

/* A name no stored model has or keys to (the store's lookup said "no model", without naming the ones there):
** the names there, the closest first. Several matches keep the lookup's error, which lists them. */
static int name_stored_models(struct lx_store *s, const char *model, const char *db, struct lx_error *err)
{
    struct lx_model_info *m;
    struct lx_error sub;
    int n, hit = 0;
    if (lx_store_models(s, &m, &n, &sub) < 0)
        return LX_EINVAL;
    const char **names = lx_xcalloc((size_t)n + 1, sizeof *names);
    struct lx_buf list = {0};
    int k = 0;
    for (int i = 0; i < n; i++) {
        hit |= strcmp(m[i].name, model) == 0 || strncmp(m[i].key, model, strlen(model)) == 0;
        int seen = 0;
        for (int j = 0; j < k; j++)
            seen |= strcmp(names[j], m[i].name) == 0;
        if (!seen) {
            lx_buf_printf(&list, "%s%s", k ? ", " : "", m[i].name);
            names[k++] = m[i].name;
        }
    }
    const char *near = lx_closest(model, names, k);
    if (!hit)
        lx_err(err, LX_EINVAL, "no file '%s' and no model of that name or key in %s\n  hint: %s%s%spass a checkpoint "
               "path, or one of the store's models: %s", model, db, LX_DID_YOU_MEAN(near),
               k ? lx_buf_str(&list) : "(none: it has trained none)");
    lx_buf_free(&list);
    free(names);
    lx_model_infos_free(m, n);
    return LX_EINVAL;
}

int lx_local_find(const char *model, const char *db, char **path, struct lx_error *err)
{
    struct stat sb;
    if (stat(model, &sb) == 0) {
        *path = lx_xstrdup(model);
        return LX_OK;
    }
    struct lx_store *s;
    struct lx_error sub;
    int rc = lx_store_open(&s, db, 1, &sub);
    if (rc < 0)
        return lx_err(err, LX_EINVAL, "no file '%s', and no store to look it up as a model name in: %s",
                      model, sub.msg);
    char *key = NULL, dir[4096];
    rc = lx_store_model_find(s, model, path, &key, err);
    if (rc == LX_EINVAL)
        rc = name_stored_models(s, model, db, err);
    lx_store_close(s);
    if (rc < 0)
        return rc;
    struct lx_buf cached = {0};
    lx_run_models_dir(db, dir, sizeof dir);
    lx_buf_printf(&cached, "%s/%s.safetensors", dir, key);
    if (stat(lx_buf_str(&cached), &sb) == 0) {
        free(*path);
        *path = lx_xstrdup(lx_buf_str(&cached));
    }
    lx_buf_free(&cached);
    free(key);
    return LX_OK;
}

int lx_local_check_finite(const struct lx_model *m, const struct lx_ckpt_info *info, const char *path,
                          struct lx_error *err)
{
    struct lx_error sub;
    if (lx_model_check_finite(m, info->weights_sha256, &sub) == LX_OK)
        return LX_OK;
    return lx_err(err, LX_ERUN, "model %s: %s", path, sub.msg);
}

int lx_local_load(const char *path, const char *given, struct lx_model *m, struct lx_ckpt_info *info,
                  struct lx_tokenizer **tk, struct lx_error *err)
{
    int rc = lx_model_load(m, path, info, err);
    if (rc < 0)
        return rc;
    rc = lx_stack_check_native(path, info, &m->arch, err);
    if (rc == LX_OK && tk) {
        struct lx_error sub;
        if (lx_ckpt_tokenizer(info, given ? given : info->tokenizer, tk, &sub) < 0)     /* input: exit 2 */
            rc = lx_err(err, LX_EINVAL, "%s%s", given ? "--tokenizer: " : "", sub.msg);
    }
    if (rc == LX_OK && tk)
        rc = lx_ckpt_check_tokenizer(m->arch.vocab, *tk, path, "--tokenizer PATH", NULL, err);
    if (rc < 0) {
        if (tk) {
            lx_tokenizer_free(*tk);
            *tk = NULL;
        }
        lx_ckpt_info_release(info);
        lx_model_release(m);
    }
    return rc;
}

/* A method of --method that the checkpoint's stack holds already: lx_stack_parse's "appears twice in one stack"
** was said of a --method that names it once. Named as the model's, with what --method is for. */
static int already_held(const struct lx_node *native, const struct lx_node *method, struct lx_error *err)
{
    struct lx_stack a = {0}, b = {0};
    struct lx_error sub;
    int rc = LX_OK;
    if (native && method && lx_stack_parse(&a, native, &sub) == LX_OK && lx_stack_parse(&b, method, &sub) == LX_OK)
        for (int i = 0; i < b.n && rc == LX_OK; i++)
            for (int j = 0; j < a.n && rc == LX_OK; j++)
                if (b.items[i].method == a.items[j].method)
                    rc = lx_node_err(err, b.items[i].where, "method '%s' is in the model's own stack already (%s)\n"
                                     "  hint: --method adds evaluation-time methods to it: leave '%s' out",
                                     a.items[j].method->name, a.canon, a.items[j].method->name);
    lx_stack_release(&a);
    lx_stack_release(&b);
    return rc;
}

int lx_local_stack(struct lx_stack *st, const char *ckpt_stack, const char *method, struct lx_doc *d1,
                       struct lx_doc *d2, struct lx_error *err)
{
    int rc = lx_doc_load_text(d1, ckpt_stack, "checkpoint lenx_stack", err);
    if (rc == LX_OK && method)
        rc = lx_doc_load_text(d2, method, "--method", err);
    if (rc < 0)
        return rc;
    struct lx_node *items[2 * LX_MAX_STACK];
    struct lx_node all = {.kind = LX_NODE_SEQ, .file = "--method", .line = 1, .col = 1, .items = items};
    const struct lx_node *parts[2] = {d1->root, method ? d2->root : NULL};
    for (int p = 0; p < 2; p++) {
        const struct lx_node *n = parts[p];
        if (!n)
            continue;
        int k = n->kind == LX_NODE_SEQ ? n->n_items : 1;
        for (int i = 0; i < k && all.n_items < 2 * LX_MAX_STACK; i++)
            items[all.n_items++] = n->kind == LX_NODE_SEQ ? n->items[i] : (struct lx_node *)n;
    }
    if (all.n_items == 0)
        return lx_err(err, LX_EINVAL, "the checkpoint has no training-time methods and no --method was given\n"
                      "  hint: --method nope (or the method it was trained with)");
    if ((rc = already_held(d1->root, method ? d2->root : NULL, err)) < 0 || (rc = lx_stack_parse(st, &all, err)) < 0)
        return rc;
    for (int i = 0; i < st->n; i++) {
        const struct lx_method_use *u = &st->items[i];
        if (i < (d1->root && d1->root->kind == LX_NODE_SEQ ? d1->root->n_items : 0) || !lx_method_use_trains(u))
            continue;
        if (u->train || u->ft.steps)    /* the method runs at evaluation too; what it asks for cannot happen here */
            return lx_err(err, LX_EINVAL, "--method: '%s' asks to be %s, which scoring a checkpoint does not do\n"
                          "  hint: drop '%s' to apply %s at evaluation, or train or fine-tune it in a sweep "
                          "(docs/config.md#fine-tuning)", u->method->name, u->train ? "trained in (train: true)"
                          : "fine-tuned in (finetune:)", u->train ? "train" : "finetune", u->method->name);
        return lx_err(err, LX_EINVAL, "--method: '%s' is a training-time method; the checkpoint was "
                      "trained with %s\n  hint: --method adds evaluation-time methods only (logn, "
                      "infoscale, ...)", u->method->name, ckpt_stack);
    }
    return LX_OK;
}

/* A model with a NaN or Inf weight scores nothing (LX_ERUN, the tensor named). */

int lx_local_compile(const struct lx_stack *st, const struct lx_model *m, const struct lx_ckpt_info *info,
                     long length, struct lx_spec *spec, struct lx_error *err)
{
    struct lx_facts f = {.d_head = (int)m->arch.d_head, .train_len = info->train_len, .n_heads = (int)m->arch.heads,
                         .length = length, .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
    f.ft_len = lx_stack_ft_length(st, info->train_len);     /* a fine-tuned model's auto scales */
    f.bidirectional = m->arch.mode != LX_MODEL_CAUSAL;
    int rc = lx_stack_compile(st, &f, spec, err);
    if (rc == LX_OK)
        rc = lx_model_spec_check(m, spec, err);
    if (rc == LX_OK && spec->calibrate)     /* it would run at tau = 1, silently */
        rc = lx_err(err, LX_EINVAL, "method '%s' calibrates its temperature on the model at each length before "
                    "a sweep's cell runs, and score, generate and serve run a stack as it compiles\n  hint: run it "
                    "in a sweep (lenx run), which stores the calibrated tau beside each cell", spec->calib_method);
    spec->facts.rel_bias = m->v.rel_bias;   /* the model's own: lx_model_spec needs no copy per call */
    if (rc == LX_OK && !spec->positions)
        rc = lx_err(err, LX_EINVAL, "the stack '%s' sets no position scheme\n  hint: --method nope", st->canon);
    return rc;
}
