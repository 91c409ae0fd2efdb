/*
** harness/sweep/plan.c - cells, run keys and plan-time checks.
**
** The run key hashes the canonical JSON of the task (name + resolved params),
** the method stack (names + resolved params), the length, the seed and, for
** model tasks, the model key and the content hash of the evaluation corpus.
** The model key hashes the architecture, the training config, the
** training-time part of the stack, the training corpus hash and the seed (or,
** for a brought checkpoint, the file's hash and its tokenizer's). A model's
** tokenizer other than bytes enters both keys, whether the model was brought
** or trained on it. Portable numerics (`numerics: portable`) enter the run
** key and a trained model's key as "numerics":"portable"; the fast default
** enters neither, so keys made before the mode existed stay as they were.
** The code version is stored with
** every row but is not part of either key, so two commits produce cells that
** `lenx compare` can match.
*/
#include "harness/sweep/plan.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/data/corpus.h"
#include "harness/engine/model/decoding.h"
#include "harness/engine/model/model.h"
#include "harness/engine/model/train.h"
#include "harness/core/hash.h"

static const char *cap_name(unsigned cap)
{
    switch (cap) {
    case LX_CAP_LOGITS: return "attention logits";
    case LX_CAP_ROTARY: return "rotary positions";
    case LX_CAP_MODEL: return "a trained model";
    }
    return "?";
}

int lx_stack_fits_task(const struct lx_stack *st, const struct lx_task_use *t,
                       const struct lx_facts *f, struct lx_error *err)
{
    for (int i = 0; i < st->n; i++) {
        const struct lx_method *m = st->items[i].method;
        unsigned missing = m->needs & ~f->caps;
        if (!missing)
            continue;
        unsigned cap = missing & (~missing + 1u);   /* lowest missing capability */
        return lx_node_err(err, st->items[i].where, "method '%s' cannot apply to task '%s': "
                           "the method needs %s, which the task does not offer\n"
                           "  hint: drop one of them from this sweep or give them separate sweeps",
                           m->name, t->task->name, cap_name(cap));
    }
    return LX_OK;
}

/* The finish hooks, in stack order, once every method applied (struct lx_method). */
static int stack_finish(const struct lx_stack *st, const struct lx_facts *f, struct lx_spec *spec,
                        struct lx_error *err)
{
    for (int i = 0; i < st->n; i++) {
        const struct lx_method_use *u = &st->items[i];
        if (!u->method->finish)
            continue;
        struct lx_error sub;
        struct lx_facts fm = *f;
        fm.ft_len = u->ft.steps ? f->ft_len : 0;
        int rc = u->method->finish(spec->params[i], &fm, spec, &sub);
        if (rc < 0)
            return u->where ? lx_node_err(err, u->where, "%s", sub.msg) : lx_err(err, rc, "%s", sub.msg);
    }
    return LX_OK;
}

int lx_stack_compile(const struct lx_stack *st, const struct lx_facts *f, struct lx_spec *spec,
                     struct lx_error *err)
{
    lx_spec_init(spec, f);
    LX_ASSERT(st->n <= LX_SPEC_MAX_METHODS);
    for (int i = 0; i < st->n; i++) {
        const struct lx_method_use *u = &st->items[i];
        void *p = spec->params[i];      /* the spec's copy, resolved for f */
        LX_ASSERT(u->method->schema.size <= sizeof spec->params[i]);
        memcpy(p, u->params, u->method->schema.size);
        spec->n_methods = i + 1;
        struct lx_error sub;
        struct lx_facts fm = *f;    /* only a method fine-tuned in sees the fine-tuning length */
        fm.ft_len = u->ft.steps ? f->ft_len : 0;
        int rc = u->method->resolve ? u->method->resolve(p, &fm, &sub) : LX_OK;
        if (rc == LX_OK && u->method->check)
            rc = u->method->check(p, &fm, &sub);
        if (rc == LX_OK)
            rc = u->method->apply(p, &fm, spec, &sub);
        if (rc < 0)
            return u->where ? lx_node_err(err, u->where, "%s", sub.msg) : lx_err(err, rc, "%s", sub.msg);
    }
    return stack_finish(st, f, spec, err);
}

/* Compile the training-time methods, with or without those fine-tuned in. */
static int compile_part(const struct lx_stack *st, const struct lx_facts *f, struct lx_spec *spec, int with_finetune,
                        struct lx_error *err)
{
    struct lx_stack part = {.where = st->where};
    for (int i = 0; i < st->n; i++)
        if (with_finetune ? lx_method_use_trains(&st->items[i]) : lx_method_use_in_base(&st->items[i]))
            part.items[part.n++] = st->items[i];     /* shallow: params stay owned by st */
    struct lx_facts ft = *f;
    ft.training = 1;
    return lx_stack_compile(&part, &ft, spec, err);
}

int lx_stack_compile_train(const struct lx_stack *st, const struct lx_facts *f, struct lx_spec *spec,
                           struct lx_error *err)
{
    return compile_part(st, f, spec, 1, err);
}

int lx_stack_compile_base(const struct lx_stack *st, const struct lx_facts *f, struct lx_spec *spec,
                          struct lx_error *err)
{
    return compile_part(st, f, spec, 0, err);
}

void lx_model_facts(const struct lx_model_use *m, unsigned caps, long length, struct lx_facts *f)
{
    memset(f, 0, sizeof *f);
    f->d_head = (int)m->arch.d_head;
    f->train_len = m->train.length;
    f->n_heads = (int)m->arch.heads;
    f->length = length;
    f->caps = caps;
    f->bidirectional = m->arch.mode != LX_MODEL_CAUSAL;
}

void lx_model_stack_facts(const struct lx_model_use *m, const struct lx_stack *st, unsigned caps, long length,
                          struct lx_facts *f)
{
    lx_model_facts(m, caps, length, f);
    f->ft_len = lx_stack_ft_length(st, m->train.length);
}

int lx_task_fits_model(const struct lx_task *t, const struct lx_model_use *m)
{
    return (t->mode == LX_MODE_CAUSAL && m->arch.mode == LX_MODEL_CAUSAL) ||
           (t->mode == LX_MODE_MLM && m->arch.mode == LX_MODEL_MLM);
}

/* A model key: 16 hex digits of SHA-256 over its JSON (returned, owned). */
static char *key_of(struct lx_buf *b, char key[17])
{
    lx_sha256_key(lx_buf_str(b), key);
    return lx_xstrdup(lx_buf_str(b));
}

/* Portable numerics as a key's last field; nothing for the fast default, so
** fast keys are those of every lenx before the mode. A run key (run) also
** takes the KV cache's type and llama.cpp's activations, which evaluation
** reads and training does not (its weights are fp32, it keeps no cache):
** a model key with them trained a second model, seeded apart. */
static void numerics_key(struct lx_buf *b, const struct lx_grid *g, int run)
{
    if (g->numerics != LX_NUMERICS_FAST)
        lx_buf_printf(b, ",\"numerics\":\"%s\"", lx_numerics_name(g->numerics));
    if (!run && lx_train_attn_get() == LX_TRAIN_MATERIALISED)     /* LENX_TRAIN_ATTENTION: other sums, weights */
        lx_buf_puts(b, ",\"train_attention\":\"materialised\"");
    if (!run)
        return;
    if (g->kv)
        lx_buf_printf(b, ",\"kv_cache\":\"%s\"", lx_kv_name(g->kv));
    if (g->acts_llamacpp)
        lx_buf_puts(b, ",\"activations\":\"llamacpp\"");
}

/* The model key of (model, training part of the stack, seed); with methods
** fine-tuned in, also the key of the base model they start from. */
static int model_key(struct lx_cell *c, const struct lx_grid *g, struct lx_error *err)
{
    const struct lx_model_use *m = &g->models[c->model];
    const struct lx_stack *st = &g->stacks[c->stack];
    struct lx_buf b = {0}, part = {0};
    struct lx_finetune ft;
    lx_stack_ft_resolve(st, &m->train, &ft);
    const struct lx_corpus *train;
    int rc = lx_corpus_get(&train, "train", err);
    if (rc < 0)
        return rc;
    if (m->lm) {    /* a server: what it says it is, the tokenizer prompts are made with, what it runs */
        lx_buf_printf(&b, "{\"server\":%s,\"served\":%s", lx_lm_server_identity(m->lm), m->served_json);
        if (m->tok)
            lx_buf_printf(&b, ",\"tokenizer\":\"%s\"", m->tok->hash);
        lx_buf_puts(&b, "}");
        c->model_json = key_of(&b, c->model_key);
        lx_buf_free(&b);
        return LX_OK;
    }
    if (m->checkpoint) {
        lx_buf_printf(&b, "{\"checkpoint\":\"%s\"", m->ckpt_sha);
        if (m->tok)     /* only with one: byte-level keys stay as they were */
            lx_buf_printf(&b, ",\"tokenizer\":\"%s\"", m->tok->hash);
        lx_buf_puts(&b, "}");
        if (ft.steps && lx_plan_ckpt_finetunes(st, m)) {
            /* fine-tuned from the checkpoint: its key, then what was trained on it */
            c->base_json = key_of(&b, c->base_key);
            lx_stack_train_part(st, &ft, &m->train, &part);
            b.s[--b.len] = '\0';
            lx_buf_printf(&b, ",\"finetune\":{\"stack\":%s,\"data\":\"%s\",\"seed\":%ld", lx_buf_str(&part),
                          train->hash, c->seed);
            if (m->mix_json)    /* only when there is one: older keys stay as they were */
                lx_buf_printf(&b, ",\"mixture\":%s", m->mix_json);
            numerics_key(&b, g, 0);     /* the arithmetic it was trained in, as a trained model's key */
            lx_buf_puts(&b, "}}");
        }
        c->model_json = key_of(&b, c->model_key);
        lx_buf_free(&b);
        lx_buf_free(&part);
        return LX_OK;
    }
    for (int base = 0; base <= (ft.steps > 0); base++) {
        lx_buf_reset(&b);
        lx_buf_reset(&part);
        if (base)
            lx_stack_base_part(st, &part);
        else
            lx_stack_train_part(st, &ft, &m->train, &part);
        lx_buf_printf(&b, "{\"arch\":%s,\"train\":%s,\"stack\":%s,\"data\":\"%s\",\"seed\":%ld",
                      m->arch_json, m->train_json, lx_buf_str(&part), train->hash, c->seed);
        if (m->mix_json)    /* only when there is one: older keys stay as they were */
            lx_buf_printf(&b, ",\"mixture\":%s", m->mix_json);
        if (m->tok)         /* trained on a tokenizer: byte-level keys stay as they were */
            lx_buf_printf(&b, ",\"tokenizer\":\"%s\"", m->tok->hash);
        numerics_key(&b, g, 0);
        lx_buf_puts(&b, "}");
        if (base)
            c->base_json = key_of(&b, c->base_key);
        else
            c->model_json = key_of(&b, c->model_key);
    }
    lx_buf_free(&b);
    lx_buf_free(&part);
    return LX_OK;
}

uint64_t lx_plan_data_key(const char *task_json, long length, long seed)
{
    struct lx_buf b = {0};
    lx_buf_printf(&b, "{\"task\":%s,\"length\":%ld,\"seed\":%ld}", task_json, length, seed);
    uint64_t key = lx_hash64(lx_buf_str(&b));
    lx_buf_free(&b);
    return key;
}

static int cell_keys(struct lx_cell *c, const struct lx_grid *g, struct lx_error *err)
{
    const struct lx_task_use *t = &g->tasks[c->task];
    struct lx_buf b = {0}, model = {0};
    const struct lx_corpus *data = NULL;
    if (c->model >= 0) {
        const char *split = t->task->split(t->params);
        int rc = model_key(c, g, err);
        if (rc == LX_OK && (rc = lx_corpus_get(&data, split, err)) < 0 && strncmp(split, "file:", 5) == 0)
            lx_err_prefix(err, rc, "%s:%d:%d: task '%s': ", t->where->file, t->where->line, t->where->col,
                          t->task->name);     /* a `data:` file: at the task that names it */
        if (rc < 0)
            return rc;
        lx_buf_printf(&model, "\"%s\",\"data\":\"%s\"", c->model_key, data->hash);
        if (g->models[c->model].tok)    /* the text is read in its tokens; bytes enter no key */
            lx_buf_printf(&model, ",\"tokenizer\":\"%s\"", g->models[c->model].tok->hash);
    }
    c->data_key = lx_plan_data_key(t->json, c->length, c->seed);
    lx_buf_printf(&b, "{\"task\":%s,\"methods\":%s,\"length\":%ld,\"seed\":%ld,\"model\":%s",
                  t->json, g->stacks[c->stack].json, c->length, c->seed, model.len ? lx_buf_str(&model) : "null");
    int server = c->model >= 0 && g->models[c->model].lm;  /* it computes in its own numerics, in its identity */
    if (!server)
        numerics_key(&b, g, 1);
    if (!server && g->acts_llamacpp && g->kv)  /* an evaluation's attention rounds to the cache's type */
        lx_buf_printf(&b, ",\"attention\":\"%s\"", lx_kv_name(g->kv)); /* (lx_attn_half); training's does not */
    lx_buf_puts(&b, "}");
    lx_sha256_key(lx_buf_str(&b), c->key);
    c->key_json = lx_xstrdup(lx_buf_str(&b));
    lx_buf_free(&b);
    lx_buf_free(&model);
    return LX_OK;
}

/* One method use's parameters resolved for f, as JSON (unresolved when its
** resolve hook refuses: the compile reports that). */
static void resolved_json(const struct lx_method_use *u, const struct lx_facts *f, struct lx_buf *out)
{
    double p[LX_SPEC_PARAM_WORDS];
    struct lx_error sub;
    LX_ASSERT(u->method->schema.size <= sizeof p);
    memcpy(p, u->params, u->method->schema.size);
    if (u->method->resolve && u->method->resolve(p, f, &sub) < 0)
        memcpy(p, u->params, u->method->schema.size);
    lx_params_json(&u->method->schema, p, out);
}

/* Does the checkpoint's training stack (as written: any JSON or YAML
** spelling, key order or number form) hold the training-time methods of st
** (base: only those of its base model), in order, with the same train keys,
** fine-tuning steps and length (base: none) and equal resolved values?
** When not, why (NULL: not asked) gets the first difference, for messages. */
static int same_train_stack(const struct lx_stack *st, const char *ckpt, const struct lx_facts *f, int base,
                            struct lx_buf *why)
{
    struct lx_doc doc;
    struct lx_stack cs = {0};
    struct lx_error sub;
    struct lx_buf ja = {0}, jb = {0}, no = {0};
    why = why ? why : &no;
    int n = 0, same = lx_doc_load_text(&doc, ckpt, "checkpoint lenx_stack", &sub) == LX_OK;
    int empty = same && (!doc.root || (doc.root->kind == LX_NODE_SEQ && doc.root->n_items == 0));
    if (same && !empty)
        same = lx_stack_parse(&cs, doc.root, &sub) == LX_OK;
    struct lx_facts ft = *f;
    ft.training = 1;
    ft.length = f->train_len;
    ft.ft_len = 0;
    for (int i = 0; same && i < st->n; i++) {
        const struct lx_method_use *a = &st->items[i], *b = &cs.items[n];
        if (base ? !lx_method_use_in_base(a) : !lx_method_use_trains(a))
            continue;
        long la = a->ft.length ? a->ft.length : f->train_len, lb = b->ft.length ? b->ft.length : f->train_len;
        const char *name = a->method->name;
        if (n++ >= cs.n || a->method != b->method)
            same = 0, lx_buf_printf(why, "the stack's training-time method '%s' is not in it", name);
        else if (a->train != b->train ||
                 (base ? b->ft.steps != 0
                       : a->ft.steps != b->ft.steps || a->ft.add != b->ft.add || (a->ft.steps && la != lb)))
            same = 0, lx_buf_printf(why, "the stack's '%s' is trained or fine-tuned otherwise than the checkpoint's",
                                    name);
        if (same) {
            lx_buf_reset(&ja), lx_buf_reset(&jb);
            resolved_json(a, &ft, &ja);
            resolved_json(b, &ft, &jb);
            if (strcmp(lx_buf_str(&ja), lx_buf_str(&jb)) != 0)
                same = 0, lx_buf_printf(why, "the stack's '%s' is %s, the checkpoint's %s", name, lx_buf_str(&ja),
                                        lx_buf_str(&jb));
        }
    }
    if (same && n < cs.n) {
        const char *name = cs.items[n].method->name;
        int evals = 0;      /* the stack has it, as an evaluation-time method */
        for (int i = 0; i < st->n; i++)
            evals |= st->items[i].method == cs.items[n].method;
        same = 0, lx_buf_printf(why, "its training-time method '%s' is not in the stack%s", name,
                                evals ? " (the stack's '" : "");
        if (evals)
            lx_buf_printf(why, "%s' is evaluation-time)", name);
    }
    lx_buf_free(&ja), lx_buf_free(&jb), lx_buf_free(&no);
    lx_stack_release(&cs);
    lx_doc_release(&doc);
    return same;
}

int lx_plan_ckpt_finetunes(const struct lx_stack *st, const struct lx_model_use *m)
{
    struct lx_facts f;
    lx_model_facts(m, ~0u, m->train.length, &f);
    return m->checkpoint && lx_stack_finetune(st) && !same_train_stack(st, m->ckpt_stack, &f, 0, NULL);
}

/* The model's tokenizer against its vocabulary and the task (docs/config.md,
** models): a checkpoint or a model with a tokenizer passes the check every
** command loading a model makes (lx_ckpt_check_tokenizer: a vocabulary not
** the byte tokenizer's needs its tokenizer, else its ids would be read as
** bytes -- the silent nonsense of a 512-token model scoring 1e11 on the byte
** corpus; a tokenizer's ids fit the vocabulary; windows need a first token),
** a model lenx trains on bytes needs their 260 ids, and mlm needs a mask
** token. */
static int check_tokenizer(const struct lx_grid *g, int t, int m, struct lx_error *err)
{
    const struct lx_model_use *mu = &g->models[m];
    const struct lx_task_use *tu = &g->tasks[t];
    const struct lx_tokenizer *tk = lx_model_use_tokenizer(mu);
    if (!mu->tok && !mu->checkpoint && mu->arch.vocab < LX_VOCAB)
        return lx_node_err(err, mu->where, "model '%s' has a vocabulary of %ld; the corpus tasks need %d "
                           "(256 bytes + BOS, EOS, PAD, MASK)\n  hint: leave vocab out (%d is the default), or give "
                           "the model a tokenizer: whose vocabulary it is", mu->name, mu->arch.vocab, LX_VOCAB,
                           LX_VOCAB);
    char who[128];
    int at_tok;
    struct lx_error sub;
    snprintf(who, sizeof who, "model '%s'", mu->name);
    if ((mu->checkpoint || mu->tok) &&
        lx_ckpt_check_tokenizer(mu->arch.vocab, mu->tok, who, "tokenizer: PATH", &at_tok, &sub) < 0)
        return lx_node_err(err, at_tok && mu->tokenizer_where ? mu->tokenizer_where : mu->where, "%s", sub.msg);
    if (tu->task->mode == LX_MODE_MLM && tk->mask < 0)
        return lx_node_err(err, tu->where, "task 'mlm' needs a mask token, and model '%s''s %s tokenizer (%s) has "
                           "none\n  hint: mlm runs on models with a [MASK] token, such as lenx's byte-level ones",
                           mu->name, tk->ops->kind, mu->tokenizer);
    return LX_OK;
}

/* Model-only checks: a position scheme, the checkpoint's training stack
** (compared by resolved value, not by spelling). */
static int check_model_stack(const struct lx_grid *g, int s, int t, int m, const struct lx_spec *spec,
                             struct lx_error *err)
{
    const struct lx_stack *st = &g->stacks[s];
    const struct lx_model_use *mu = &g->models[m];
    if (!spec->positions)
        return lx_node_err(err, st->where, "the stack '%s' sets no position scheme, which task '%s' on "
                           "model '%s' needs\n  hint: add rope or nope to the stack, e.g. - [rope, logn]", st->canon,
                           g->tasks[t].task->name, mu->name);
    int rc = check_tokenizer(g, t, m, err);
    if (rc < 0)
        return rc;
    if (!mu->checkpoint)
        return LX_OK;
    int ft = lx_plan_ckpt_finetunes(st, mu);
    struct lx_buf why = {0};
    if (!same_train_stack(st, mu->ckpt_stack, &spec->facts, ft, &why))
        rc = lx_node_err(err, st->where, "the stack '%s' %s differently from checkpoint model '%s', which was "
                         "trained with %s: %s\n  hint: a stack on a checkpoint must contain exactly its training-time "
                         "methods (`native` stands for them), plus any evaluation-time ones and methods fine-tuned in",
                         st->canon, ft ? "starts fine-tuning from a model trained" : "trains", mu->name,
                         mu->ckpt_stack, lx_buf_str(&why));
    lx_buf_free(&why);
    return rc;
}

/* Memory (docs/config.md, "Memory"): training a model (its batch and length), fine-tuning it (the stack's
** finetune batch and length) and evaluating it at this length (lx_eval_windows's batch of up to 8192
** tokens) must fit in the memory the machine has now, on this thread count.
** The T x T probabilities count only when the cell reads whole probability
** rows (LX_RUN_PROBS: a task with needs_probs); every other evaluation, row
** statistics and t5align's calibration included, runs tiled, in O(T·d). A
** task that decodes greedy answers adds a KV cache of its batch
** (LX_RUN_KVCACHE); one that reads its answers' logits only (the retrieval
** tasks) or none (attn) holds those (LX_RUN_ANSWER), and one that reads
** losses only (ppl) holds one block of logits (LX_RUN_LOSS). */
static int check_memory(const struct lx_grid *g, int s, int m, int l, const struct lx_spec *spec, unsigned uses,
                        double *mem, struct lx_error *err)
{
    const struct lx_model_use *mu = &g->models[m];
    const struct lx_node *where = g->stacks[s].where;
    struct lx_finetune ftv, *ft = &ftv;     /* fine-tuning trains too, at its batch and length */
    lx_stack_ft_resolve(&g->stacks[s], &mu->train, ft);
    long T = g->lengths[l], B = 8192 / T > 1 ? 8192 / T : 1;
    double avail = lx_mem_available(), need;
    char nb[32], wb[32], ab[32];
    lx_fmt_bytes(ab, avail);
    if (!mu->checkpoint &&
        (need = lx_run_bytes(&mu->arch, (int)mu->train.batch, (int)mu->train.length, 1, 0)) > avail)
        return lx_node_err(err, mu->where, "model '%s' needs %s to train (weights %s with gradients and AdamW "
                           "moments, activations for batch %ld x length %ld on %d thread(s)); %s of memory are "
                           "available\n  hint: use a smaller arch (layers, d_model, d_mlp, heads, vocab), a "
                           "smaller train batch or length, or fewer --threads", mu->name, lx_fmt_bytes(nb, need),
                           lx_fmt_bytes(wb, lx_model_bytes(&mu->arch, 1)), mu->train.batch, mu->train.length,
                           omp_get_max_threads(), ab);
    if (ft->steps && (need = lx_run_bytes(&mu->arch, (int)ft->batch, (int)ft->length, 1, 0)) > avail)
        return lx_node_err(err, where, "model '%s' needs %s to fine-tune (weights %s with gradients and AdamW "
                           "moments, activations for batch %ld x length %ld on %d thread(s)); %s of memory are "
                           "available\n  hint: a smaller finetune batch or length, or fewer --threads", mu->name,
                           lx_fmt_bytes(nb, need), lx_fmt_bytes(wb, lx_model_bytes(&mu->arch, 1)), ft->batch,
                           ft->length, omp_get_max_threads(), ab);
    int bf16 = g->numerics == LX_NUMERICS_BF16;
    double held = mu->checkpoint ? mu->ckpt_bytes : 0, weights = lx_eval_weight_bytes(&mu->arch, held, bf16);
    need = *mem = lx_eval_bytes(&mu->arch, spec, held, bf16, (int)B, (int)T, uses);
    if (need > avail)
        return lx_node_err(err, g->length_where[l], "model '%s' needs %s to evaluate length %ld (weights %s, "
                           "activations for %ld x %ld tokens on %d thread(s)); %s of memory are available\n"
                           "  hint: use a shorter length, fewer --threads or a smaller arch", mu->name,
                           lx_fmt_bytes(nb, need), T, lx_fmt_bytes(wb, weights), B, T, omp_get_max_threads(), ab);
    return LX_OK;
}

/* Windows of T tokens fit the training corpus in the model's tokens (lx_train_fits: encoded once, then
** cached for the run), or an error at where: what the run would fail on after training the rest. A corpus
** the tokenizer cannot encode is left to the cells, which record why (docs/config.md). */
static int check_corpus_fit(const struct lx_model_use *mu, long T, const struct lx_node *where, const char *what,
                            struct lx_error *err)
{
    const struct lx_corpus_tokens *text;
    struct lx_error sub;
    if (lx_corpus_tokens(&text, "train", lx_model_use_tokenizer(mu), &sub) == LX_OK &&
        lx_train_fits(text, T, &sub) < 0)
        return lx_node_err(err, where, "%s: %s", what, sub.msg);
    return LX_OK;
}

/* A fine-tuning's windows fit the corpus; its mixture: the base model's tasks make their instances at
** the fine-tuning length, which must hold one (a length below the base's may not). */
static int check_ft_mixture(const struct lx_grid *g, int s, int m, struct lx_error *err)
{
    const struct lx_model_use *mu = &g->models[m];
    struct lx_finetune ft;
    lx_stack_ft_resolve(&g->stacks[s], &mu->train, &ft);
    char what[512];
    snprintf(what, sizeof what, "the stack '%s' fine-tunes model '%s'", g->stacks[s].canon, mu->name);
    int rc = ft.steps ? check_corpus_fit(mu, ft.length, g->stacks[s].where, what, err) : LX_OK;
    if (rc < 0)
        return rc;
    for (int i = 0; ft.steps && i < mu->n_mix; i++) {
        struct lx_error sub;
        if (mu->mix[i].check && mu->mix[i].check(mu->mix[i].params, ft.length, &sub) < 0)
            return lx_node_err(err, g->stacks[s].where, "the stack '%s' fine-tunes model '%s' at length %ld, too "
                               "short for its mixture task '%s': %s", g->stacks[s].canon, mu->name, ft.length,
                               mu->mix[i].name, sub.msg);
    }
    return LX_OK;
}

/* A model lenx trains: its training windows fit the corpus. */
static int check_trained_fit(const struct lx_grid *g, int m, struct lx_error *err)
{
    const struct lx_model_use *mu = &g->models[m];
    if (mu->checkpoint || mu->lm)
        return LX_OK;
    char what[300];
    snprintf(what, sizeof what, "model '%s'", mu->name);
    return check_corpus_fit(mu, mu->train.length, mu->length_where ? mu->length_where : mu->where, what, err);
}

/* A checkpoint's mixture is what fine-tuning it trains on: some stack of the
** grid must fine-tune it, or the mixture would be read and never used. */
static int check_ckpt_mixture(const struct lx_grid *g, int m, struct lx_error *err)
{
    const struct lx_model_use *mu = &g->models[m];
    if (!mu->checkpoint || !mu->n_mix)
        return LX_OK;
    for (int s = 0; s < g->n_stacks; s++)
        if (lx_plan_ckpt_finetunes(&g->stacks[s], mu))
            return LX_OK;
    return lx_node_err(err, mu->mix_where, "model '%s': a checkpoint's mixture is what fine-tuning it trains on, "
                       "and no method stack fine-tunes it\n  hint: add finetune: to a stack, e.g. [{rope: "
                       "{finetune: {steps: 300, lr: 5e-4}}}], or drop the mixture", mu->name);
}

/* A server model's cell: the task asks only what the server gives, and the
** stack is the one it was started with (served:), which lenx cannot change. */
static int check_server(const struct lx_grid *g, int s, int t, int m, struct lx_buf *canon, struct lx_buf *json,
                        struct lx_error *err)
{
    const struct lx_model_use *mu = &g->models[m];
    const struct lx_task_use *tu = &g->tasks[t];
    const struct lx_stack *st = &g->stacks[s];
    struct lx_error sub;
    char who[160];
    snprintf(who, sizeof who, "task '%s' on model '%s'", tu->task->name, mu->name);
    if (lx_lm_require(mu->lm, tu->task->lm_needs ? tu->task->lm_needs : LX_LM_ENGINE, who, &sub) < 0)
        return lx_node_err(err, tu->where, "%s", sub.msg);
    if (strcmp(st->json, mu->served_json) != 0)
        return lx_node_err(err, st->where, "the stack '%s' would need lenx's engine: model '%s' is a server, which "
                           "runs what it was started with (served: %s)\n  hint: start the server with the method "
                           "and declare it (server: {served: ...}), or give the server a sweep whose methods are "
                           "[%s]", st->canon, mu->name, mu->served_canon, mu->served_canon);
    lx_buf_reset(canon);
    lx_buf_reset(json);
    lx_buf_puts(canon, st->canon);
    lx_buf_puts(json, st->json);
    return check_tokenizer(g, t, m, err);
}

/* What a stack's window and far-key map do on one model over the grid's
** lengths: whether any of its cells masks a key or remaps a distance. */
struct reach {
    const char *vis, *map;      /* the methods that set them, or NULL */
    long window, sinks, from;   /* as compiled (constant over the lengths: their automatic values come from
                                ** the model's training length); from: the first row with far keys */
    int chunked;                /* a chunked map: far by chunks, not by distance */
    long train_len, longest;
    int vis_acts, map_acts;
    char *canon;                /* the stack resolved at the longest length (owned) */
};

static void note_reach(struct reach *r, const struct lx_spec *spec, const char *canon, long train_len, long T)
{
    if (T >= r->longest) {
        free(r->canon);
        r->canon = lx_xstrdup(canon);
    }
    if (spec->vis.method && spec->vis.window > 0) {
        r->vis = spec->vis.method, r->window = spec->vis.window, r->sinks = spec->vis.sinks;
        r->vis_acts |= spec->vis.window + spec->vis.sinks < T;   /* the last query sees [T − W, T) and [0, S) */
    }
    if (spec->posmap.method) {
        const struct lx_posmap *pm = &spec->posmap;     /* selfextend with G = 1 maps each distance to itself */
        int same = pm->scale == 1 && pm->shift == 0 && pm->group <= 1 && isinf(pm->cap);
        r->map = pm->method, r->from = lx_posmap_first_far(pm), r->chunked = pm->period > 0;
        r->map_acts |= r->from < T && !same;      /* the last row is T − 1 */
    }
    r->train_len = train_len;
    r->longest = T > r->longest ? T : r->longest;
}

/* b's text as a note of the plan (lx_plan_warn prints it); b is freed. */
static void add_note(struct lx_plan *plan, struct lx_buf *b)
{
    plan->notes = lx_xrealloc(plan->notes, sizeof *plan->notes * (size_t)(plan->n_notes + 1));
    plan->notes[plan->n_notes++] = lx_xstrdup(lx_buf_str(b));
    lx_buf_free(b);
}

/* A note for a stack whose window or far-key map changes nothing at any
** length of the grid on model m: on a checkpoint trained at 131,072 tokens
** an automatic window is that long, and a grid at 2k-32k runs full attention
** under the method's name. */
static void reach_note(struct lx_plan *plan, const struct lx_grid *g, int s, int m, const struct reach *r)
{
    int vis = r->vis && !r->vis_acts, map = r->map && !r->map_acts;
    if (!vis && !map)
        return;
    char at[300];
    struct lx_buf b = {0};
    lx_node_where(g->stacks[s].where, at, sizeof at);
    lx_buf_printf(&b, "%s: on model '%s' the stack '%s' changes nothing at the grid's lengths (at most %ld):", at,
                  g->models[m].name, r->canon, r->longest);
    if (vis)
        lx_buf_printf(&b, " %s's window of %ld keys%s sees every key", r->vis, r->window,
                      r->sinks ? " and its sinks" : "");
    int same = map && r->from < r->longest;    /* distances that long exist, and the map keeps them */
    if (map && same)
        lx_buf_printf(&b, "%s %s keeps every distance as it is (its group is 1)", vis ? ";" : "", r->map);
    else if (map && r->chunked)
        lx_buf_printf(&b, "%s %s remaps keys only from the query at position %ld on, and none is that far",
                      vis ? ";" : "", r->map, r->from);
    else if (map)
        lx_buf_printf(&b, "%s %s remaps distances of %ld and more, and none is that long", vis ? ";" : "", r->map,
                      r->from);
    const char *who = vis ? r->vis : r->map;
    if (!vis && same)
        lx_buf_printf(&b, "\n  hint: its automatic group is 1 up to the model's training length, %ld here: "
                      "lengths past it, or a group above 1 (docs/methods.md#%s)", r->train_len, who);
    else
        lx_buf_printf(&b, "\n  hint: give %s a %s shorter than the lengths (docs/methods.md#%s); its automatic "
                      "one comes from the model's training length, %ld here", who, !vis && r->chunked ? "chunk" : "window",
                      who, r->train_len);
    add_note(plan, &b);
}

/* A note for a stack on a checkpoint whose own evaluation-time methods (its
** eval_stack: a config's dynamic NTK, sliding window, DCA) it leaves out:
** `native` is the training stack alone, and `lenx score` runs the eval stack by
** default, so a cell named after the bare stack would run another model than
** the config describes without a word. */
static void eval_note(struct lx_plan *plan, const struct lx_grid *g, int s, int m)
{
    const struct lx_model_use *mu = &g->models[m];
    const struct lx_stack *st = &g->stacks[s];
    struct lx_doc d = {0};
    struct lx_stack ev = {0};
    struct lx_error sub;
    if (!mu->ckpt_eval)
        return;
    int missing = 0, ok = lx_doc_load_text(&d, mu->ckpt_eval, "eval_stack", &sub) == LX_OK &&
                             lx_stack_parse(&ev, d.root, &sub) == LX_OK;     /* checked when the model was read */
    for (int i = 0; ok && i < ev.n; i++) {
        int has = 0;
        for (int j = 0; j < st->n; j++)
            has |= st->items[j].method == ev.items[i].method;
        missing |= !has;
    }
    if (missing) {
        char at[300];
        struct lx_buf b = {0};
        lx_node_where(st->where, at, sizeof at);
        size_t n = strlen(mu->ckpt_eval);
        lx_buf_printf(&b, "%s: on model '%s' the stack '%s' leaves out the model's own evaluation-time methods %s "
                      "(eval_stack in lenx show model; lenx score runs them): its cells run without them\n  hint: "
                      "to run them: [native, %.*s]", at, mu->name, st->canon, mu->ckpt_eval, (int)(n - 2),
                      mu->ckpt_eval + 1);
        add_note(plan, &b);
    }
    lx_stack_release(&ev);
    lx_doc_release(&d);
}

/* A stack on a task without a model (gaussian) has nothing to train into:
** train: true, finetune: or learn: true there would be ignored, so refused. */
static int untrained_only(const struct lx_stack *st, const struct lx_spec *spec, const char *task,
                          struct lx_error *err)
{
    for (int i = 0; i < st->n; i++) {
        const struct lx_method_use *u = &st->items[i];
        if (u->train || u->ft.steps)
            return lx_node_err(err, u->where, "method '%s' is %s, and task '%s' runs on no model\n  hint: drop "
                               "that from the stack for %s, or run the stack on a model task", u->method->name,
                               u->train ? "trained in (train: true)" : "fine-tuned in (finetune:)", task, task);
    }
    if (spec->learn_scale)
        return lx_node_err(err, st->where, "the stack '%s' learns its logit scale (learn: true), and task '%s' runs "
                           "on no model\n  hint: drop learn: true for %s, or run the stack on a model task", st->canon,
                           task, task);
    return LX_OK;
}

/* Plan-time checks of one (stack, task, model, length): everything a cell
** could fail on before it runs, reported at the YAML position that caused it.
** The stack is resolved here, once: *canon and *json get its resolved strings. */
static int check_combo(const struct lx_grid *g, int s, int t, int m, int l, struct lx_buf *canon,
                       struct lx_buf *json, double *mem, struct reach *reach, struct lx_error *err)
{
    const struct lx_task_use *tu = &g->tasks[t];
    struct lx_facts f;
    if (m >= 0)
        lx_model_stack_facts(&g->models[m], &g->stacks[s], tu->task->caps, g->lengths[l], &f);
    else
        tu->task->facts(tu->params, g->lengths[l], &f);
    struct lx_error sub;
    if (tu->task->check && tu->task->check(tu->params, g->lengths[l], &sub) < 0)
        return lx_node_err(err, g->length_where[l], "%s", sub.msg);
    if (m >= 0 && g->models[m].lm)
        return check_server(g, s, t, m, canon, json, err);
    int rc = lx_stack_fits_task(&g->stacks[s], tu, &f, err);
    if (rc < 0)
        return rc;
    struct lx_spec spec;
    if ((rc = lx_stack_compile(&g->stacks[s], &f, &spec, err)) < 0)
        return rc;
    lx_buf_reset(canon);
    lx_buf_reset(json);
    lx_stack_resolved(&g->stacks[s], &spec, canon, json);
    if (m < 0)
        return untrained_only(&g->stacks[s], &spec, tu->task->name, err);
    note_reach(reach, &spec, lx_buf_str(canon), f.train_len, g->lengths[l]);
    unsigned uses = (tu->task->needs_probs ? LX_RUN_PROBS : 0) | (tu->task->losses_only ? LX_RUN_LOSS : 0) |
                    (tu->task->answers_only ? LX_RUN_ANSWER : 0) |
                    (tu->task->decodes ? LX_RUN_KVCACHE | (lx_decode_far(&spec) ? LX_RUN_KVFAR : 0) |
                                             (lx_decode_dist_kept(&spec) ? LX_RUN_KVDIST : 0) : 0) |
                    lx_run_uses(&spec);
    if ((rc = check_memory(g, s, m, l, &spec, uses, mem, err)) < 0)
        return rc;
    if ((rc = check_model_stack(g, s, t, m, &spec, err)) < 0 || (rc = check_ft_mixture(g, s, m, err)) < 0)
        return rc;
    /* what training gives the model must be what evaluation reads */
    struct lx_spec tspec, bspec;
    int learn = spec.learn_scale;
    f.length = f.train_len;
    if ((rc = lx_stack_compile_base(&g->stacks[s], &f, &bspec, err)) < 0)
        return rc;
    f.length = f.ft_len ? f.ft_len : f.train_len;     /* fine-tuning runs at its own length */
    if ((rc = lx_stack_compile_train(&g->stacks[s], &f, &tspec, err)) < 0)
        return rc;
    if (learn && !tspec.learn_scale)
        return lx_node_err(err, g->stacks[s].where, "the stack '%s' learns the logit scale (logn learn: true) "
                           "but does not train it in\n  hint: add train: true to that logn", g->stacks[s].canon);
    if (tspec.learn_scale != bspec.learn_scale && !g->models[m].checkpoint)
        return lx_node_err(err, g->stacks[s].where, "the stack '%s' fine-tunes a learned logit scale into a "
                           "model that has none\n  hint: use train: true for logn learn: true", g->stacks[s].canon);
    return LX_OK;
}

/* The models a task runs on: every model of its mode; -1 alone for logit tasks. */
static int task_models(const struct lx_grid *g, int t, int *out, int *n, struct lx_error *err)
{
    const struct lx_task *task = g->tasks[t].task;
    *n = 0;
    if (task->mode == LX_MODE_LOGITS) {
        out[(*n)++] = -1;
        return LX_OK;
    }
    const char *want = task->mode == LX_MODE_CAUSAL ? "causal" : "mlm";
    if (!g->n_models)
        return lx_node_err(err, g->tasks[t].where, "task '%s' needs a trained model and the sweep has no "
                           "'models'\n  hint: add e.g. models: {small: {arch: {mode: %s}, train: "
                           "{length: 128}}}", task->name, want);
    for (int m = 0; m < g->n_models; m++)
        if (lx_task_fits_model(task, &g->models[m]))
            out[(*n)++] = m;
    if (!*n)
        return lx_node_err(err, g->tasks[t].where, "task '%s' needs a model in %s mode and the sweep has none\n"
                           "  hint: add a model with arch: {mode: %s}", task->name, want, want);
    return LX_OK;
}

/* The cell count of a grid, in 64 bits (the product of five axes overflows
** int), checked against LX_MAX_CELLS before anything is allocated. */
static int count_cells(const struct lx_grid *g, int n_models, int *n, struct lx_error *err)
{
    int64_t total = (int64_t)g->n_tasks * g->n_stacks * n_models * g->n_lengths * g->n_seeds;
    if (total > LX_MAX_CELLS)
        return lx_err(err, LX_EINVAL, "%s: the sweep has %lld cells (%d tasks x %d method stacks x %d models x "
                      "%d lengths x %d seeds); at most %d are allowed\n"
                      "  hint: split the sweep into several files, e.g. one per task or per group of "
                      "lengths (they can share a database)", g->file, (long long)total, g->n_tasks,
                      g->n_stacks, n_models, g->n_lengths, g->n_seeds, LX_MAX_CELLS);
    *n = (int)total;
    return LX_OK;
}

/* Can the numbers of task t's cells on model m under stack s change with the seed? A model lenx trains, or
** a checkpoint the stack fine-tunes, is trained per seed; a task's instances are drawn from it unless the
** task draws none (unseeded: fixed windows). */
static int seed_matters(const struct lx_grid *g, int s, int t, int m)
{
    if (!g->tasks[t].task->unseeded || m < 0)
        return 1;
    const struct lx_model_use *mu = &g->models[m];
    return !mu->lm && (!mu->checkpoint || lx_plan_ckpt_finetunes(&g->stacks[s], mu));
}

/* A note, once a (task, model), that its cells run under the first seed alone. */
static void note_one_seed(struct lx_plan *plan, const struct lx_grid *g, int t, int m, unsigned char *said)
{
    int nm = g->n_models > 0 ? g->n_models : 1, i = t * nm + (m < 0 ? 0 : m);
    if (g->n_seeds < 2 || said[i])
        return;
    said[i] = 1;
    char at[300];
    struct lx_buf b = {0};
    lx_node_where(g->tasks[t].where, at, sizeof at);
    lx_buf_printf(&b, "%s: task '%s' on model '%s' draws nothing from the seed (fixed windows, on a model the sweep "
                  "does not train): each of its cells %sruns once, under seed %ld, not once for each of the %d seeds"
                  "\n  hint: seeds vary the model lenx trains or fine-tunes and the instances a task draws; a second "
                  "seed here would store the same numbers again", at, g->tasks[t].canon, g->models[m].name,
                  g->models[m].checkpoint ? "that no stack fine-tunes " : "", g->seeds[0], g->n_seeds);
    add_note(plan, &b);
}

static int by_key(const void *a, const void *b)
{
    const struct lx_cell *x = *(const struct lx_cell *const *)a, *y = *(const struct lx_cell *const *)b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->model - y->model;
}

/* A note for each two model names whose cells are one cell (one model given
** twice, by a YAML alias or two spellings of one checkpoint): each cell runs
** and is stored once, so the second name's rows would vanish unsaid. */
static void note_same_models(struct lx_plan *plan, const struct lx_grid *g)
{
    const struct lx_cell **v = lx_xmalloc((size_t)(plan->n_cells ? plan->n_cells : 1) * sizeof *v);
    int nm = g->n_models;
    unsigned char *said = lx_xcalloc((size_t)(nm * nm + 1), 1);
    for (int i = 0; i < plan->n_cells; i++)
        v[i] = &plan->cells[i];
    qsort(v, (size_t)plan->n_cells, sizeof *v, by_key);
    for (int i = 1; i < plan->n_cells; i++) {
        int a = v[i - 1]->model, b = v[i]->model;
        if (strcmp(v[i - 1]->key, v[i]->key) != 0 || a == b || a < 0 || said[a * nm + b])
            continue;
        said[a * nm + b] = 1;
        char at[300];
        struct lx_buf t = {0};
        lx_node_where(g->models[b].where, at, sizeof at);
        lx_buf_printf(&t, "%s: models '%s' and '%s' are one model (key %s): each of their cells runs and is stored "
                      "once, under the name that runs it first\n  hint: list the model once; to train it again, add a "
                      "seed under seeds:", at, g->models[a].name, g->models[b].name, v[i]->model_key);
        add_note(plan, &t);
    }
    free(said);
    free(v);
}

int lx_plan_build(struct lx_plan *plan, const struct lx_grid *g, struct lx_error *err)
{
    memset(plan, 0, sizeof *plan);
    plan->grid = g;
    lx_numerics_set(g->numerics);   /* each cell's memory is laid out for the sweep's numerics, */
    lx_kv_set(g->kv);               /* KV cache and attention path */
    lx_acts_llamacpp_set(g->acts_llamacpp);
    int n_models = g->n_models > 0 ? g->n_models : 1, n = 0;
    int rc0 = count_cells(g, n_models, &n, err);
    if (rc0 < 0)
        return rc0;
    plan->cells = lx_xcalloc((size_t)n, sizeof *plan->cells);
    int *models = lx_xcalloc((size_t)n_models, sizeof *models), nm, rc = LX_OK;
    struct reach *reach = lx_xcalloc((size_t)(g->n_stacks * n_models), sizeof *reach);   /* (stack, model) */
    struct lx_buf canon = {0}, json = {0};
    unsigned char *one_seed = lx_xcalloc((size_t)(g->n_tasks * n_models), 1);   /* (task, model) noted */
    for (int t = 0; t < g->n_tasks && rc == LX_OK; t++) {
        if ((rc = task_models(g, t, models, &nm, err)) < 0)
            break;
        for (int s = 0; s < g->n_stacks && rc == LX_OK; s++)
            for (int mi = 0; mi < nm && rc == LX_OK; mi++)
                for (int l = 0; l < g->n_lengths && rc == LX_OK; l++) {
                    double mem = 0.0;
                    struct reach *r = &reach[s * n_models + (models[mi] < 0 ? 0 : models[mi])];
                    if ((rc = check_combo(g, s, t, models[mi], l, &canon, &json, &mem, r, err)) < 0)
                        break;
                    int n_seeds = seed_matters(g, s, t, models[mi]) ? g->n_seeds : 1;
                    if (n_seeds < g->n_seeds)
                        note_one_seed(plan, g, t, models[mi], one_seed);
                    for (int k = 0; k < n_seeds && rc == LX_OK; k++) {
                        struct lx_cell *c = &plan->cells[plan->n_cells++];
                        c->stack = s;
                        c->task = t;
                        c->model = models[mi];
                        c->length = g->lengths[l];
                        c->seed = g->seeds[k];
                        c->mem = mem;
                        c->method = lx_xstrdup(lx_buf_str(&canon));
                        c->method_json = lx_xstrdup(lx_buf_str(&json));
                        rc = cell_keys(c, g, err);
                    }
                }
    }
    for (int s = 0; rc == LX_OK && s < g->n_stacks; s++)
        for (int m = 0; m < g->n_models; m++)
            reach_note(plan, g, s, m, &reach[s * n_models + m]), eval_note(plan, g, s, m);
    for (int m = 0; rc == LX_OK && m < g->n_models; m++)
        rc = check_ckpt_mixture(g, m, err);
    for (int m = 0; rc == LX_OK && m < g->n_models; m++)
        rc = check_trained_fit(g, m, err);
    if (rc == LX_OK)
        note_same_models(plan, g);
    for (int i = 0; i < g->n_stacks * n_models; i++)
        free(reach[i].canon);
    free(reach);
    free(one_seed);
    free(models);
    lx_buf_free(&canon);
    lx_buf_free(&json);
    if (rc < 0)
        lx_plan_release(plan);
    return rc;
}

void lx_plan_warn(const struct lx_plan *plan)
{
    for (int i = 0; i < plan->n_notes; i++)
        fprintf(stderr, "lenx: warning: %s\n", plan->notes[i]);
}

const char *lx_cell_root_model(const struct lx_cell *c)
{
    return c->base_key[0] ? c->base_key : c->model_key;
}

void lx_plan_release(struct lx_plan *plan)
{
    if (!plan)
        return;
    for (int i = 0; i < plan->n_cells; i++) {
        free(plan->cells[i].key_json);
        free(plan->cells[i].model_json);
        free(plan->cells[i].base_json);
        free(plan->cells[i].method);
        free(plan->cells[i].method_json);
    }
    free(plan->cells);
    for (int i = 0; i < plan->n_notes; i++)
        free(plan->notes[i]);
    free(plan->notes);
    memset(plan, 0, sizeof *plan);
}
