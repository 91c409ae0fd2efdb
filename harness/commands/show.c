/*
** harness/commands/show.c - `lenx show method|task|sweep NAME | model PATH`: what a
** method computes (resolved parameters, derived tables), a task's parameters
** and one rendered instance, a stored sweep's YAML, what a model holds
** (show.h).
*/
#define _XOPEN_SOURCE 700   /* realpath; clock_gettime */
#include "harness/commands/show.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/backends/local.h"
#include "harness/cli.h"
#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/model/kvcache.h"
#include "harness/engine/model/positions.h"
#include "harness/engine/data/instance.h"
#include "harness/sweep/plan.h"
#include "tasks/retrieval.h"
#include "harness/sweep/registry.h"
#include "harness/commands/stored.h"

#define N_OPTS(t) ((int)(sizeof t / sizeof *t))


static const struct lx_opt show_opts[] = {
    {"length", 1, "show method: tables for N = 1..length, the sample row is query N-1 (default 16); show task: "
                  "render one instance of this length; show model: the window its memory plan scores (default its "
                  "training length)"},
    {"d-head", 1, "head dimension d (default 64)"},
    {"train-len", 1, "training length L (default 64)"},
    {"heads", 1, "attention heads H: per-head tables for ALiBi-like methods (default 1)"},
    {"mlm", 0, "show method: the facts of a masked LM (attention both ways): T5's encoder buckets"},
    {"on", 1, "show method: the position scheme a method that needs one is shown on (default rope; e.g. alibi "
              "for pi on ALiBi's distances); its parameters as on.k=v, e.g. alibi.max_bias=4"},
    {"db", 1, "result database for 'sweep' and model names (default " LX_DEFAULT_DB ")"},
    {"sample", 1, "task: which sample of the cell to render (default 0)"},
    {"depth", 1, "task: where the needle sits, 0 (start) ... 1 (end) (default 0.5)"},
    {"seed", 1, "task: the cell's seed, as in the sweep (default 1)"},
    {"protocol", 1, "task: a protocol preset (protocol=P): longchat or longchat_base for line and topic, litm, "
                    "ruler_qa_squad or ruler_qa_hotpotqa for mdqa, landmark, yarn or longlora for passkey, ruler, "
                    "ruler_niah_* (RULER's eight niah tasks), ruler_vt, ruler_fwe, ruler_cwe or kamradt for needle "
                    "(docs/tasks.md)"},
    {"data", 1, "task: the preset's peer test-case file (data=F)"},
    {"instance", 1, "task: which instance (test case) to render, as --sample"},
    {"text", 0, "task: print only the text fed to the tokenizer for that instance, byte for byte"},
    {"numerics", 1, "model: the numerics its memory plan is for, fast (default), portable or bf16 (bf16 holds fp32 "
                    "weights rounded to bf16)"},
    {"portable", 0, "model: as --numerics portable"},
};

static const char show_usage[] =
    "usage: lenx show method NAME [k=v ...] [options]\n"
    "       lenx show task NAME [k=v ...] [--length L [--sample I] [--depth D] [--seed S]]\n"
    "       lenx show task NAME --protocol P --data F [--instance K] [--text]\n"
    "       lenx show sweep NAME [--db FILE]\n"
    "       lenx show model PATH [--db FILE]   (lenx checkpoint, llama2.c .bin, Hugging Face directory)\n\n"
    "Print a method's resolved parameters and derived tables as JSON: row_scale for\n"
    "n = 1..N (per-row logit scales), a and m for t = 0..N-1 (per-distance affine\n"
    "maps, t = 0 is the query itself; a[h], m[h] per head when they differ),\n"
    "inv_freq (rotary frequencies), under xpos each pair's zeta and its decay of q.k\n"
    "at distance N-1, and for windows and position maps the keys the\n"
    "last query of a causal window of N sees with their effective distances.\n"
    "A method that needs rotary positions is shown on top of rope (\"stack\" says\n"
    "so; --on names another position scheme: --on alibi shows pi on ALiBi's\n"
    "distances). Model facts come from the flags. For a task, print its resolved\n"
    "parameters; with --length, one rendered instance of a retrieval task (the one\n"
    "a sweep's cell of that length and seed generates for that sample and depth):\n"
    "its prompt, answer and answer span, in byte tokens. Run with --help after NAME\n"
    "to list the parameters. For a stored\n"
    "sweep, print the YAML its cells were made from, newest first (one text per\n"
    "version of the file, with its cell count and newest commit).";

/* Apply k=v arguments to a schema'd params struct. */
/* Set one parameter from "k=v" (the value parsed as YAML). */
static int set_kv(const struct lx_schema *s, void *params, const char *what, const char *kv, struct lx_error *err)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return lx_err(err, LX_EINVAL, "argument '%s' is not k=v\n  hint: e.g. tau=10", kv);
    char key[64], name[160];
    snprintf(key, sizeof key, "%.*s", (int)(eq - kv < 63 ? eq - kv : 63), kv);
    snprintf(name, sizeof name, "argument '%s'", kv);
    struct lx_doc doc;
    int rc = lx_doc_load_text(&doc, eq + 1, name, err);
    if (rc == LX_OK && !doc.root)
        rc = lx_err(err, LX_EINVAL, "%s: empty value\n  hint: give the parameter a value, e.g. %s=2, or leave it "
                    "out for its default", name, key);
    if (rc == LX_OK)
        rc = lx_params_set(s, params, key, doc.root, what, err);
    lx_doc_release(&doc);
    return rc;
}

/* Refuse a parameter named twice (as a sweep file's map refuses it): `key`
** (its length n) against the keys of the arguments before it. */
static int kv_twice(const char *const *seen, int n_seen, const char *key, size_t n, const char *what,
                    struct lx_error *err)
{
    for (int j = 0; j < n_seen; j++)
        if (strlen(seen[j]) == n && strncmp(seen[j], key, n) == 0)
            return lx_err(err, LX_EINVAL, "%s: parameter '%.*s' is given twice\n  hint: keep one of them", what,
                          (int)n, key);
    return LX_OK;
}

static int apply_kv(const struct lx_schema *s, void *params, const char *what, int n, const char *const *kv,
                    struct lx_error *err)
{
    char seen[LX_MAX_POS + 2][64];
    const char *seen_p[LX_MAX_POS + 2];
    for (int i = 0; i < n; i++) {
        const char *eq = strchr(kv[i], '=');
        size_t len = eq ? (size_t)(eq - kv[i]) : 0;
        if (len && kv_twice(seen_p, i, kv[i], len, what, err) < 0)
            return LX_EINVAL;
        snprintf(seen[i], sizeof seen[i], "%.*s", (int)len, kv[i]);
        seen_p[i] = seen[i];
        int rc = set_kv(s, params, what, kv[i], err);
        if (rc < 0)
            return rc;
    }
    for (int i = 0; i < n; i++)
        if (lx_param_refuse_unmet(s, params, seen[i], what, NULL, err) < 0)
            return LX_EINVAL;
    lx_params_finish(s, params);
    return LX_OK;
}

static void json_table(struct lx_buf *out, const char *name, const double *v, long n, int *first)
{
    lx_buf_printf(out, "%s\n    ", *first ? "" : ",");
    lx_buf_json_str(out, name);
    lx_buf_puts(out, ": [");
    for (long i = 0; i < n; i++) {
        lx_buf_puts(out, i ? ", " : "");
        lx_buf_num(out, v[i]);
    }
    lx_buf_puts(out, "]");
    *first = 0;
}

/* A JSON list of n floats at 6 significant digits (learned values, to read). */
static void put_floats(struct lx_buf *out, const float *v, long n)
{
    lx_buf_puts(out, "[");
    for (long i = 0; i < n; i++)
        lx_buf_printf(out, "%s%.6g", i ? ", " : "", (double)v[i]);
    lx_buf_puts(out, "]");
}

/* The logit-op tables: row scales over n, distance maps over t (per head
** when the heads differ). */
static void show_ops(struct lx_buf *out, const struct lx_spec *spec, long length, int *first)
{
    double *x = lx_xcalloc((size_t)length, sizeof *x), *y = lx_xcalloc((size_t)length, sizeof *y);
    int of_kind[2] = {0, 0};    /* a stack's ops of each kind: two of one kind name their tables by method */
    for (int k = 0; k < spec->n_ops; k++)
        of_kind[spec->ops[k].kind == LX_OP_ROW_SCALE]++;
    for (int k = 0; k < spec->n_ops; k++) {
        const struct lx_logit_op *op = &spec->ops[k];
        char pre[64] = "";
        if (of_kind[op->kind == LX_OP_ROW_SCALE] > 1)
            snprintf(pre, sizeof pre, "%s.", op->method);
        if (op->kind == LX_OP_ROW_SCALE) {
            char rn[80];
            for (long n = 1; n <= length; n++)
                x[n - 1] = op->row_scale(op->params, &spec->facts, n);
            snprintf(rn, sizeof rn, "%srow_scale", pre);
            json_table(out, rn, x, length, first);
            continue;
        }
        if (op->method == spec->rel.method && !spec->facts.rel_bias) {     /* m is learned: T5's bucket per t */
            for (long t = 0; spec->rel.buckets && t < length; t++)
                x[t] = lx_relbias_bucket(&spec->rel, (double)t);
            if (spec->rel.buckets)
                json_table(out, "bucket", x, length, first);
            for (long t = 0; spec->rel.buckets && spec->rel.bidirectional && t < length; t++)
                x[t] = lx_relbias_bucket(&spec->rel, (double)-t);      /* the key t after the query */
            if (spec->rel.buckets && spec->rel.bidirectional)
                json_table(out, "bucket_after", x, length, first);
            lx_buf_printf(out, "%s\n    \"m\": \"learned by the model (lenx show model)\"", *first ? "" : ",");
            *first = 0;
            continue;
        }
        for (int h = 0; h < spec->facts.n_heads; h++) {
            char an[96], mn[96];
            snprintf(an, sizeof an, "%sa", pre), snprintf(mn, sizeof mn, "%sm", pre);
            if (spec->facts.n_heads > 1)
                snprintf(an, sizeof an, "%sa[%d]", pre, h), snprintf(mn, sizeof mn, "%sm[%d]", pre, h);
            for (long t = 0; t < length; t++)
                op->dist_affine(op->params, &spec->facts, h, lx_op_distance(op, (double)t), &x[t], &y[t]);
            json_table(out, an, x, length, first);
            json_table(out, mn, y, length, first);
        }
    }
    free(x);
    free(y);
}


/* A zero sink's logit and its share e^z / (e^z + n) of a row whose n logits
** are all 0, for n = 1 .. length. */
static void show_zsink(struct lx_buf *out, const struct lx_spec *spec, long length, int *first)
{
    double ez = exp(spec->zsink.logit), *share = lx_xcalloc((size_t)length, sizeof *share);
    for (long n = 1; n <= length; n++)
        share[n - 1] = ez / (ez + (double)n);
    lx_buf_printf(out, "%s\n    \"zero_sink_logit\": ", *first ? "" : ",");
    lx_buf_num(out, spec->zsink.logit);
    *first = 0;
    json_table(out, "zero_sink_share_of_flat_row", share, length, first);
    free(share);
}

/* Everything else the spec says: rotary table, geometry, visibility and
** effective distances of a sample row, PoSE, calibration. */
static void show_spec(struct lx_buf *out, const struct lx_spec *spec, long length, int *first)
{
    if (spec->rotary.n_pairs) {
        json_table(out, "inv_freq", spec->rotary.inv_freq, spec->rotary.n_pairs, first);
        lx_buf_printf(out, ",\n    \"layout\": \"%s\"", spec->rotary.layout == LX_ROPE_HALF ? "half" : "interleaved");
    }
    if (spec->rotary.decay_scale) {     /* xPos: ζ_k, and each pair's factor on q.k at the last query's first key */
        const struct lx_rotary *r = &spec->rotary;
        double zeta[LX_SPEC_MAX_PAIRS], far[LX_SPEC_MAX_PAIRS];
        for (int k = 0; k < r->n_pairs; k++) {
            zeta[k] = exp(r->log_zeta[k]);
            far[k] = exp(r->log_zeta[k] * (double)(length - 1) / r->decay_scale);
        }
        json_table(out, "zeta", zeta, r->n_pairs, first);
        json_table(out, "decay_at_last_key", far, r->n_pairs, first);
    }
    if (spec->cosine) {
        lx_buf_printf(out, "%s\n    \"cosine_scale\": ", *first ? "" : ",");
        lx_buf_num(out, spec->cos_scale);
        *first = 0;
    }
    if (spec->zsink.method)
        show_zsink(out, spec, length, first);
    if (spec->vis.method || spec->posmap.method) {
        long i = length - 1, n = 0;
        double *keys = lx_xcalloc((size_t)length, sizeof *keys), *delta = lx_xcalloc((size_t)length, sizeof *delta);
        for (long j = 0; j <= i; j++)
            if (lx_spec_visible(spec, i, j, length, 1)) {
                keys[n] = (double)j;
                delta[n++] = lx_spec_delta(spec, i, j);
            }
        lx_buf_printf(out, "%s\n    \"query\": %ld", *first ? "" : ",", i);
        *first = 0;
        json_table(out, "visible_keys", keys, n, first);
        json_table(out, "distance", delta, n, first);
        free(keys);
        free(delta);
    }
    if (spec->pose.method) {
        lx_buf_printf(out, "%s\n    \"training_positions\": {\"method\": \"%s\", \"chunks\": %d, \"target\": %ld}",
                      *first ? "" : ",", spec->pose.method, spec->pose.chunks, spec->pose.target);
        *first = 0;
        long n = spec->facts.length;
        if (spec->pose.random && n >= 1 && n <= spec->pose.target) {   /* the evaluation's draw at the length */
            int *p = lx_xmalloc(sizeof(int) * (size_t)n);
            double *v = lx_xmalloc(sizeof(double) * (size_t)n);
            lx_randpos_eval(p, n, spec->pose.target);
            for (long t = 0; t < n; t++)
                v[t] = p[t];
            json_table(out, "evaluation_positions", v, n, first);
            free(p), free(v);
        }
    }
    if (spec->calibrate) {
        lx_buf_printf(out, "%s\n    \"temperature\": \"calibrated per (model, length) by %s\"", *first ? "" : ",",
                      spec->calib_method);
        *first = 0;
    }
}

/* The facts of `show method`: the flags, or a small default model. */
static int show_facts(const struct lx_args *a, struct lx_facts *f, struct lx_error *err)
{
    static const char *const names[] = {"length", "d-head", "train-len", "heads"};
    static const long max[] = {10000000, 65536, 1000000000000L, 256};
    long v[] = {16, 64, 64, 1};
    const char *arg;
    for (int i = 0; i < 4; i++) {
        int rc = LX_OK;
        if ((arg = lx_args_get(a, show_opts, N_OPTS(show_opts), names[i])))
            rc = lx_args_long(arg, names[i], 1, max[i], &v[i], err);
        if (rc < 0)
            return rc;
    }
    *f = (struct lx_facts){.length = v[0], .d_head = (int)v[1], .train_len = v[2], .n_heads = (int)v[3],
                           .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
    f->bidirectional = lx_args_get(a, show_opts, N_OPTS(show_opts), "mlm") != NULL;
    return LX_OK;
}

/* One k=v argument of `show method M` on the stack [rope, M]: `k` sets M's
** parameter, `rope.k` (or `M.k`) that method's; a `rope.` key puts M on rope.
** seen[0..i) hold the earlier arguments' keys as "method.k"; this one's joins them. */
static int show_arg(struct lx_stack *st, const char *kv, int *on_rope, char (*seen)[80], int i,
                    struct lx_error *err)
{
    const char *eq = strchr(kv, '='), *dot = strchr(kv, '.');
    if (!eq || eq == kv)
        return lx_err(err, LX_EINVAL, "argument '%s' is not k=v\n  hint: e.g. tau=10", kv);
    int item = 1;
    if (dot && dot < eq) {
        size_t n = (size_t)(dot - kv);
        while (item >= 0 && !(strlen(st->items[item].method->name) == n &&
                              strncmp(st->items[item].method->name, kv, n) == 0))
            item--;
        if (item < 0)
            return lx_err(err, LX_EINVAL, "argument '%s': '%.*s' is not a method of the stack %s+%s\n"
                          "  hint: name the shown method's parameters plainly (e.g. scale=4) and those of the "
                          "one under it as %s.k=v (rope.base=500000)", kv, (int)n, kv, st->items[0].method->name,
                          st->items[1].method->name, st->items[0].method->name);
        *on_rope |= item == 0;
        kv = dot + 1;
    }
    const struct lx_method *m = st->items[item].method;
    char what[96];
    snprintf(what, sizeof what, "method '%s'", m->name);
    const char *seen_p[LX_MAX_POS];
    for (int j = 0; j < i; j++)
        seen_p[j] = seen[j];
    snprintf(seen[i], sizeof seen[i], "%s.%.*s", m->name, (int)(strchr(kv, '=') - kv), kv);
    int rc = kv_twice(seen_p, i, seen[i], strlen(seen[i]), "lenx show method", err);
    return rc < 0 ? rc : set_kv(&m->schema, st->items[item].params, what, kv, err);
}

/* "name(k=v,...)" of one method with its resolved values. */
static void resolved_canon(const struct lx_method_use *u, const void *resolved, struct lx_buf *out)
{
    struct lx_buf t = {0};
    lx_params_text_resolved(&u->method->schema, u->params, resolved, &t);
    lx_buf_puts(out, u->method->name);
    if (t.len)
        lx_buf_printf(out, "(%s)", lx_buf_str(&t));
    lx_buf_free(&t);
}

/* Compile M alone, or on rope when it needs rotary positions (or a rope.
** parameter was given); *on_rope says which. When both fail, M's complaint on
** rope is reported (alone it only said it needs rope), unless M set the
** position scheme itself: on rope the two would clash, and its complaint
** alone is the one. */
static int show_compile(const struct lx_stack *st, const struct lx_facts *f, struct lx_spec *spec, int *on_rope,
                        struct lx_error *err)
{
    struct lx_stack alone = {.n = 1, .items = {st->items[1]}};
    struct lx_error first_err = {{0}};
    int given = *on_rope;   /* a rope. parameter or --on: on rope from the start, err is that compile's */
    if (!given && lx_stack_compile(&alone, f, spec, &first_err) == LX_OK)
        return LX_OK;
    int own_scheme = !given && spec->positions && strcmp(spec->positions, st->items[1].method->name) == 0;
    *on_rope = st->items[1].method != st->items[0].method && !own_scheme;
    if (*on_rope && lx_stack_compile(st, f, spec, err) == LX_OK)
        return LX_OK;
    return given || *on_rope ? LX_EINVAL : lx_err(err, LX_EINVAL, "%s", first_err.msg);
}

static void show_print(const struct lx_stack *st, const struct lx_spec *spec, const struct lx_facts *f, int on_rope)
{
    const struct lx_method_use *u = &st->items[1];
    const void *resolved = spec->params[on_rope ? 1 : 0];
    struct lx_buf out = {0};
    lx_buf_puts(&out, "{\n  \"method\": ");
    lx_buf_json_str(&out, u->method->name);
    lx_buf_puts(&out, ",\n  \"canonical\": \"");
    resolved_canon(u, resolved, &out);
    if (on_rope) {
        lx_buf_puts(&out, "\",\n  \"stack\": \"");
        resolved_canon(&st->items[0], spec->params[0], &out);
        lx_buf_puts(&out, "+");
        resolved_canon(u, resolved, &out);
    }
    lx_buf_printf(&out, "\",\n  \"facts\": {\"d_head\": %d, \"train_len\": %ld, \"length\": %ld, \"heads\": %d%s},"
                  "\n  \"params\": ", f->d_head, f->train_len, f->length, f->n_heads,
                  f->bidirectional ? ", \"mlm\": true" : "");
    lx_params_json(&u->method->schema, resolved, &out);
    lx_buf_puts(&out, ",\n  \"tables\": {");
    int first = 1;
    show_ops(&out, spec, f->length, &first);
    show_spec(&out, spec, f->length, &first);
    lx_buf_puts(&out, first ? "}\n}\n" : "\n  }\n}\n");
    fputs(lx_buf_str(&out), stdout);
    lx_buf_free(&out);
}

/* `lenx show method M [k=v | rope.k=v ...] [--on P]`: M's resolved
** parameters and tables, alone or on top of rope (or of P's positions). */
static int show_method(const struct lx_method *m, const struct lx_args *a, struct lx_error *err)
{
    struct lx_facts f;
    int rc = show_facts(a, &f, err), on_rope = 0;
    struct lx_stack st = {.n = 2};
    const char *on = lx_args_get(a, show_opts, N_OPTS(show_opts), "on");
    const struct lx_method *base = lx_method_find(on ? on : "rope");
    if (rc == LX_OK && !base) {
        const char *near = lx_method_suggest(on);
        return lx_err(err, LX_EINVAL, "--on %s: no such method\n  hint: %s%s%s`lenx list methods` lists them; e.g. "
                      "--on alibi", on, LX_DID_YOU_MEAN(near));
    }
    if (rc == LX_OK && on && base == m)    /* rope itself, without --on, is shown alone */
        return lx_err(err, LX_EINVAL, "--on %s: the method shown itself\n  hint: --on names the position scheme "
                      "under it, e.g. lenx show method pi --on alibi", on);
    on_rope = on != NULL;   /* asked for: shown on it, not alone */
    st.items[0].method = base;
    st.items[1].method = m;
    for (int i = 0; i < 2; i++) {
        st.items[i].params = lx_xcalloc(1, st.items[i].method->schema.size);
        lx_params_defaults(&st.items[i].method->schema, st.items[i].params);
    }
    char seen[LX_MAX_POS][80];
    for (int i = 2; i < a->n_pos && rc == LX_OK; i++)
        rc = show_arg(&st, a->pos[i], &on_rope, seen, i - 2, err);
    for (int i = 2; i < a->n_pos && rc == LX_OK; i++) {     /* seen: "method.key" */
        const char *dot = strchr(seen[i - 2], '.');
        int item = strncmp(seen[i - 2], st.items[1].method->name, (size_t)(dot - seen[i - 2])) == 0 &&
                   strlen(st.items[1].method->name) == (size_t)(dot - seen[i - 2]);
        char what[96];
        snprintf(what, sizeof what, "method '%s'", st.items[item].method->name);
        rc = lx_param_refuse_unmet(&st.items[item].method->schema, st.items[item].params, dot + 1, what, NULL, err);
    }
    for (int i = 0; i < 2; i++)
        lx_params_finish(&st.items[i].method->schema, st.items[i].params);
    struct lx_spec spec;
    if (rc == LX_OK && (rc = show_compile(&st, &f, &spec, &on_rope, err)) == LX_OK)
        show_print(&st, &spec, &f, on_rope);
    lx_stack_release(&st);
    return rc;
}

/* Tokens as text: bytes as they are, special tokens by name ("<bos>"). The
** one place `show task` turns tokens into text: a --tokenizer flag would
** decode here. */
static void tokens_text(struct lx_buf *b, const int *tok, long n)
{
    for (long i = 0; i < n; i++) {
        const char *name = tok[i] < 256 ? NULL : lx_tok_special_name(&lx_byte_tokenizer, tok[i]);
        if (name)
            lx_buf_printf(b, "<%s>", name);
        else
            lx_buf_printf(b, "%c", tok[i] ? (char)tok[i] : ' ');
    }
}

/* The resolved options of `show task`: length, sample, depth, seed. */
static int instance_opts(const struct lx_args *a, long *v, double *depth, struct lx_error *err)
{
    static const char *const names[] = {"length", "sample", "seed", "instance"};
    static const long max[] = {LX_MAX_RETRIEVAL_LENGTH, 1000000000L, 1L << 62, 1000000000L};
    int rc = LX_OK;
    const char *arg, *sample = lx_args_get(a, show_opts, N_OPTS(show_opts), "sample");
    if (sample && lx_args_get(a, show_opts, N_OPTS(show_opts), "instance"))    /* the later one won */
        return lx_err(err, LX_EINVAL, "--instance and --sample both name the instance to render\n  hint: give "
                      "one of them");
    for (int i = 0; i < 4 && rc == LX_OK; i++)
        if ((arg = lx_args_get(a, show_opts, N_OPTS(show_opts), names[i])))
            rc = lx_args_long(arg, names[i], i == 0, max[i], &v[i == 3 ? 1 : i], err);
    if (rc == LX_OK && (arg = lx_args_get(a, show_opts, N_OPTS(show_opts), "depth")) &&
        (rc = lx_args_double(arg, "depth", depth, err)) == LX_OK && !(*depth >= 0 && *depth <= 1))
        rc = lx_err(err, LX_EINVAL, "--depth %s is outside [0, 1]\n  hint: 0 is the start of the context, "
                    "1 its end", arg);
    return rc;
}

/* The first token of the gold's first occurrence in the context (tokens 0 ..
** answer_off, byte tokens), or -1 when it does not occur there verbatim. */
static long gold_in_context(const struct lx_instance *in)
{
    long g = (long)strlen(in->gold);
    for (long i = 0; g > 0 && i + g <= in->answer_off; i++) {
        long k = 0;
        while (k < g && in->tok[i + k] == (unsigned char)in->gold[k])
            k++;
        if (k == g)
            return i;
    }
    return -1;
}

/* `lenx show task NAME [k=v ...] --length L`: one rendered instance, the one
** a sweep's cell of that task, length and seed generates for that sample. */
static int show_instance(const struct lx_task *t, const void *params, const struct lx_args *a, struct lx_error *err)
{
    long v[3] = {0, 0, 1};
    double depth = 0.5;
    int rc = instance_opts(a, v, &depth, err);
    if (rc == LX_OK && !t->generate)
        rc = lx_err(err, LX_EINVAL, "task '%s' has no instances to show: only retrieval tasks generate one\n"
                    "  hint: lenx show task needle --length 1021", t->name);
    int no_len = !lx_args_get(a, show_opts, N_OPTS(show_opts), "length");    /* errors say "length 0", not given */
    if (rc == LX_OK && t->check && (rc = t->check(params, v[0], err)) < 0 && no_len)
        rc = lx_err_prefix(err, rc, "no --length: ");
    struct lx_buf canon = {0}, json = {0}, out = {0};
    lx_task_strings(t, params, &canon, &json);
    struct lx_instance in = {0};
    if (rc == LX_OK && (rc = t->generate(params, lx_plan_data_key(lx_buf_str(&json), v[0], v[2]), v[0], v[1], depth,
                                         &in, err)) < 0 && no_len)     /* a preset's fit (yarn, ruler) */
        rc = lx_err_prefix(err, rc, "no --length: ");
    if (rc == LX_OK && lx_args_get(a, show_opts, N_OPTS(show_opts), "text")) {
        for (long i = 1; i < in.answer_off; i++)    /* the bytes after BOS, as the tokenizer reads them */
            lx_buf_putn(&out, (const char[]){(char)in.tok[i]}, 1);
        fwrite(out.s ? out.s : "", 1, out.len, stdout);
    } else if (rc == LX_OK) {
        lx_buf_puts(&out, "task:      ");
        lx_buf_puts(&out, lx_buf_str(&canon));
        lx_buf_printf(&out, "\nlength:    %ld tokens (byte tokens; seed %ld, sample %ld)\ndepth:     %g\n"
                      "answer:    tokens [%ld, %ld), gold \"%s\"\n", in.n, v[2], v[1], in.depth, in.answer_off,
                      in.n, in.golds ? in.golds : in.gold);
        long at = gold_in_context(&in);
        if (at >= 0)    /* how far back the model must look: what a position method changes */
            lx_buf_printf(&out, "context:   gold first at token %ld, %ld tokens before the answer\n", at,
                          in.answer_off - at);
        for (int i = 0; i < in.n_alt; i++)
            lx_buf_printf(&out, "%s\"%s\" at depth %g", i ? ", " : "others:    ", in.alt[i], in.alt_depth[i]);
        lx_buf_puts(&out, in.n_alt ? "\n--- prompt\n" : "--- prompt\n");
        tokens_text(&out, in.tok, in.answer_off);
        lx_buf_puts(&out, "\n--- answer\n");
        tokens_text(&out, in.tok + in.answer_off, in.n - in.answer_off);
        lx_buf_puts(&out, "\n");
        fwrite(out.s, 1, out.len, stdout);
    }
    lx_instance_release(&in);
    lx_buf_free(&canon);
    lx_buf_free(&json);
    lx_buf_free(&out);
    return rc;
}

/* The k=v arguments, then --protocol P and --data F as protocol=P and
** data="F" (F made absolute and quoted for YAML; the strings after the k=v
** ones are malloc'd). */
static int preset_kv(const struct lx_args *a, const char **kv)
{
    int n = 0;
    for (int i = 2; i < a->n_pos; i++)
        kv[n++] = a->pos[i];
    const char *p = lx_args_get(a, show_opts, N_OPTS(show_opts), "protocol"),
               *d = lx_args_get(a, show_opts, N_OPTS(show_opts), "data");
    if (p) {
        struct lx_buf b = {0};
        lx_buf_printf(&b, "protocol=%s", p);
        kv[n++] = lx_xstrdup(lx_buf_str(&b));
        lx_buf_free(&b);
    }
    if (d) {    /* absolute: a path row is read relative to the YAML text's name, here the argument */
        struct lx_buf b = {0};
        char abs[PATH_MAX];
        lx_buf_puts(&b, "data=");
        lx_buf_json_str(&b, realpath(d, abs) ? abs : d);    /* a JSON string is a YAML double-quoted scalar */
        kv[n++] = lx_xstrdup(lx_buf_str(&b));
        lx_buf_free(&b);
    }
    return n;
}

/* The first of --sample, --depth and --seed given, or NULL: options only a rendered instance reads. */
static const char *instance_only(const struct lx_args *a)
{
    static const char *const names[] = {"sample", "depth", "seed"};
    for (int i = 0; i < 3; i++)
        if (lx_args_get(a, show_opts, N_OPTS(show_opts), names[i]))
            return names[i];
    return NULL;
}

static int show_task(const struct lx_task *t, const struct lx_args *a, struct lx_error *err)
{
    const char *opt;
    void *params = lx_xcalloc(1, t->schema.size);
    lx_params_defaults(&t->schema, params);
    char what[96];
    snprintf(what, sizeof what, "task '%s'", t->name);
    const char *kv[LX_MAX_POS + 2];
    int n = preset_kv(a, kv);
    int rc = apply_kv(&t->schema, params, what, n, kv, err);
    for (int i = a->n_pos - 2; i < n; i++)
        free((char *)kv[i]);
    if (rc == LX_OK && (lx_args_get(a, show_opts, N_OPTS(show_opts), "length") ||
                        lx_args_get(a, show_opts, N_OPTS(show_opts), "instance") ||
                        lx_args_get(a, show_opts, N_OPTS(show_opts), "text") || n > a->n_pos - 2)) {
        rc = show_instance(t, params, a, err);
    } else if (rc == LX_OK && (opt = instance_only(a))) {   /* printed the parameters, the option unread */
        const char *v = lx_args_get(a, show_opts, N_OPTS(show_opts), opt);
        rc = lx_err(err, LX_EINVAL, "--%s is read only when an instance is rendered: give --length L\n  hint: "
                    "lenx show task %s --length L --%s %s", opt, t->name, opt, v);
    } else if (rc == LX_OK) {
        struct lx_buf out = {0};
        lx_buf_puts(&out, "{\n  \"task\": ");
        lx_buf_json_str(&out, t->name);
        lx_buf_puts(&out, ",\n  \"params\": ");
        lx_params_json(&t->schema, params, &out);
        lx_buf_puts(&out, "\n}\n");
        fputs(lx_buf_str(&out), stdout);
        lx_buf_free(&out);
    }
    free(params);
    return rc;
}

static void describe(const char *kind, const char *name, const char *summary, const struct lx_schema *s)
{
    struct lx_buf b = {0};
    lx_schema_describe(s, &b, "  ");
    printf("%s %s: %s\n\nparameters:\n%s", kind, name, summary, b.len ? lx_buf_str(&b) : "  (none)\n");
    lx_buf_free(&b);
}

/* ---- show model ---- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void key_str(struct lx_buf *out, const char *key, const char *v)
{
    lx_buf_printf(out, ",\n  \"%s\": ", key);
    lx_buf_json_str(out, v);
}

/* The memory plan of a model as lenx holds it (docs/checkpoints.md#what-a-load-costs):
** its weights as loaded (F32, held once), a KV cache's bytes per token, and
** what scoring one window of its training length takes in all (weights,
** activations, attention scratch on this run's threads), the numbers a run
** checks against the machine before it allocates. */
/* How many of the model's weight matrices (the embedding, each layer's q, k,
** v, output, MLP parts, the head unless tied) hold each type, into n: a GGUF
** mix such as Q4_K_M has Q4_K and Q6_K. Returns the one type if they share
** one, else -1. */
static int matrix_types(const struct lx_model *m, long n[LX_DT_N])
{
    n[m->v.memb.type]++;
    if (!m->arch.tie_head)
        n[m->v.mhead.type]++;
    for (long l = 0; l < m->arch.layers; l++) {
        const struct lx_layer_w *L = &m->v.layer[l];
        for (int k = 0; k < L->n_qkv; k++)
            n[L->mqkv[k].type]++;
        for (int k = 0; k < L->n_w13; k++)
            n[L->mw13[k].type]++;
        n[L->mo.type]++, n[L->mw2.type]++;
    }
    int one = -1;
    for (int t = 0; t < LX_DT_N; t++)
        if (n[t])
            one = one < 0 ? t : LX_DT_N;
    return one < LX_DT_N ? one : -1;
}

/* "matrices": the counts of matrix_types, in lenx's type order. */
static void put_matrix_types(struct lx_buf *out, const long n[LX_DT_N])
{
    lx_buf_puts(out, ", \"matrices\": {");
    for (int t = 0, first = 1; t < LX_DT_N; t++)
        if (n[t]) {
            lx_buf_printf(out, "%s\"%s\": %ld", first ? "" : ", ", lx_dtype_name(t), n[t]);
            first = 0;
        }
    lx_buf_puts(out, "}");
}

static void put_memory(struct lx_buf *out, const struct lx_model *m, long train_len)
{
    const struct lx_arch *a = &m->arch;
    const struct lx_layer_w *L = &m->v.layer[0];
    int bf16 = lx_numerics_get() == LX_NUMERICS_BF16, T = (int)(train_len > 0 ? train_len : 1);
    /* per token past the local layers' rings, which stop growing at their size (kvcache.h) */
    int t0 = (int)lx_kvcache_ring_rows(a) + 1;
    double weights = lx_model_held_bytes(m),
           kv = (lx_kvcache_bytes(a, NULL, 1, t0 + 1024, 0, 0) - lx_kvcache_bytes(a, NULL, 1, t0, 0, 0)) / 1024;
    double score = lx_eval_bytes(a, NULL, m->held ? weights : 0, bf16, 1, T, LX_RUN_LOSS);
    long n[LX_DT_N] = {0};
    int one = matrix_types(m, n);   /* an fp32 copy is F32 whatever the file holds */
    lx_buf_printf(out, ",\n  \"memory\": {\"weights_dtype\": \"%s\", \"weights_held\": \"%s\", "
                  "\"dtypes\": {\"embedding\": \"%s\", \"attention\": \"%s\", \"mlp\": \"%s\", \"head\": \"%s\", "
                  "\"norms\": \"F32\"}",
                  !m->held ? "F32" : one >= 0 ? lx_dtype_name(one) : "mixed",
                  L->mqkv[0].packed_rows ? "packed at load" : m->held ? "in place" : "fp32 copy",
                  lx_dtype_name(m->v.memb.type),
                  lx_dtype_name(L->mqkv[0].type), lx_dtype_name(L->mw13[0].type),
                  a->tie_head ? "tied" : lx_dtype_name(m->v.mhead.type));
    put_matrix_types(out, n);
    lx_buf_printf(out, ", \"weights_bytes\": %.0f, \"kv_cache_bytes_per_token\": %.0f, \"score_window\": %ld, "
                  "\"score_bytes\": %.0f}", weights, kv, train_len, score);
}

int lx_show_model(const char *model, const char *db, long window, struct lx_buf *out, struct lx_error *err)
{
    char *path = NULL;
    struct lx_model m;
    struct lx_ckpt_info info;
    int rc = lx_local_find(model, db, &path, err);
    double t0 = now();
    if (rc == LX_OK && (rc = lx_local_load(path, NULL, &m, &info, NULL, err)) == LX_OK) {
        double secs = now() - t0;
        lx_buf_puts(out, "{\n  \"path\": ");
        lx_buf_json_str(out, path);
        key_str(out, "format", info.format);
        key_str(out, "dtype", info.dtype);
        lx_buf_puts(out, ",\n  \"arch\": ");
        lx_params_json(&lx_arch_schema, &m.arch, out);
        lx_buf_printf(out, ",\n  \"kv_heads\": %ld,\n  \"tied_head\": %s,\n  \"parameters\": %zu,\n"
                      "  \"train_len\": %ld,\n  \"native_stack\": %s",
                      info.kv_heads ? info.kv_heads : lx_arch_kv(&m.arch), info.tied ? "true" : "false",
                      m.n_params, info.train_len, info.stack);
        lx_buf_printf(out, ",\n  \"eval_stack\": %s,\n  \"rope_scaling\": %s", info.eval_stack ? info.eval_stack : "[]",
                      info.scaling ? info.scaling : "null");
        long nv = lx_arch_rel_values(&m.arch);
        for (long h = 0; nv && h < m.arch.heads; h++) {    /* what a learned bias learnt, a row per head */
            lx_buf_puts(out, h ? ",\n    " : m.arch.kerple ? ",\n  \"kerple\": [\n    " : ",\n  \"rel_bias\": [\n    ");
            put_floats(out, m.v.rel_bias + h * nv, nv);
            lx_buf_puts(out, h + 1 < m.arch.heads ? "" : "\n  ]");
        }
        for (long l = 0; m.arch.sinks && l < m.arch.layers; l++) {     /* learned sinks' w, a row per layer */
            lx_buf_puts(out, l ? ",\n    " : ",\n  \"sinks\": [\n    ");
            put_floats(out, m.v.layer[l].sink, m.arch.heads);
            lx_buf_puts(out, l + 1 < m.arch.layers ? "" : "\n  ]");
        }
        key_str(out, "tokenizer", info.tokenizer ? info.tokenizer : m.arch.vocab == 260 ? "bytes" : NULL);
        key_str(out, "tokenizer_sha256", info.tokenizer_sha256[0] ? info.tokenizer_sha256 : NULL);
        key_str(out, "model_key", info.model_key[0] ? info.model_key : NULL);
        key_str(out, "numerics", info.numerics[0] ? info.numerics : NULL);     /* of its training; null: not lenx's */
        /* a fine-tuned model's base key, fine-tuning length, steps and tokens seen */
        lx_buf_printf(out, ",\n  \"lineage\": %s", info.lineage ? info.lineage : "null");
        key_str(out, "weights_sha256", info.weights_sha256);
        key_str(out, "sha256", info.sha256);
        put_memory(out, &m, window > 0 ? window : info.train_len);
        lx_buf_puts(out, ",\n  \"load_seconds\": ");
        lx_buf_num(out, secs);
        lx_buf_puts(out, "\n}\n");
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
    }
    free(path);
    return rc;
}

/* An option the subcommand does not read (show method --numerics) was ignored without a word: refused. */
static int foreign_option(const struct lx_args *a, struct lx_error *err)
{
    static const char *const takes[][9] = {
        {"method", "length", "d-head", "train-len", "heads", "mlm", "on"},
        {"task", "length", "sample", "depth", "seed", "protocol", "data", "instance", "text"},
        {"sweep", "db"},
        {"model", "db", "length", "numerics", "portable"},
    };
    for (size_t s = 0; s < sizeof takes / sizeof *takes; s++) {
        if (strcmp(a->pos[0], takes[s][0]) != 0)
            continue;
        for (size_t i = 0; i < N_OPTS(show_opts); i++) {
            int ok = 0;
            for (int k = 1; k < 9 && takes[s][k]; k++)
                ok |= strcmp(show_opts[i].name, takes[s][k]) == 0;
            if (!ok && lx_args_get(a, show_opts, N_OPTS(show_opts), show_opts[i].name))
                return lx_err(err, LX_EINVAL, "lenx show %s does not take --%s\n  hint: %s (lenx show --help)",
                              takes[s][0], show_opts[i].name, show_opts[i].help);
        }
    }
    return LX_OK;
}

int lx_cmd_show(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int help, rc;
    if ((rc = lx_args_parse(&a, show_opts, N_OPTS(show_opts), argc, argv, &help, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if (a.n_pos < 2 || (strcmp(a.pos[0], "method") && strcmp(a.pos[0], "task") && strcmp(a.pos[0], "sweep") &&
                        strcmp(a.pos[0], "model"))) {
        if (help)
            return lx_cli_usage(show_usage, show_opts, N_OPTS(show_opts)), 0;
        static const char *const subs[] = {"method", "task", "sweep", "model"};
        const char *near = a.n_pos ? lx_closest(a.pos[0], subs, 4) : NULL;     /* none for `show method` */
        near = near && strcmp(near, a.pos[0]) ? near : NULL;
        fprintf(stderr, "lenx: error: show takes 'method NAME', 'task NAME', 'sweep NAME' or 'model PATH'\n"
                "  hint: %s%s%slenx show method scaleinv tau=10 --length 8\n", LX_DID_YOU_MEAN(near));
        return 2;
    }
    if (a.n_pos > LX_MAX_POS)   /* the k=v tables below hold LX_MAX_POS */
        return fprintf(stderr, "lenx: error: too many arguments (%d; at most %d)\n  hint: give each parameter "
                       "once\n", a.n_pos, LX_MAX_POS), 2;
    if (a.n_pos > 2 && (strcmp(a.pos[0], "sweep") == 0 || strcmp(a.pos[0], "model") == 0)) {
        fprintf(stderr, "lenx: error: unexpected argument '%s'\n  hint: lenx show %s takes one %s\n", a.pos[2],
                a.pos[0], a.pos[0][0] == 's' ? "NAME" : "PATH");
        return 2;
    }
    if (!help && (rc = foreign_option(&a, &err)) < 0)
        return lx_cli_fail(&err, rc);
    if (strcmp(a.pos[0], "sweep") == 0) {
        if (help)
            return lx_cli_usage(show_usage, show_opts, N_OPTS(show_opts)), 0;
        rc = lx_stored_show_sweep(a.pos[1], lx_args_get(&a, show_opts, N_OPTS(show_opts), "db"), &err);
        return rc < 0 ? lx_cli_fail(&err, rc) : 0;
    }
    if (strcmp(a.pos[0], "model") == 0) {
        if (help)
            return lx_cli_usage(show_usage, show_opts, N_OPTS(show_opts)), 0;
        const char *db = lx_args_get(&a, show_opts, N_OPTS(show_opts), "db");
        const char *len = lx_args_get(&a, show_opts, N_OPTS(show_opts), "length");
        long window = 0;
        struct lx_buf out = {0};
        enum lx_numerics nm = LX_NUMERICS_FAST;
        int given;
        if ((len && (rc = lx_args_long(len, "length", 1, 1L << 24, &window, &err)) < 0) ||
            (rc = lx_args_numerics(&a, &nm, &given, &err)) < 0)
            return lx_cli_fail(&err, rc);
        lx_numerics_set(nm);
        rc = lx_show_model(a.pos[1], db ? db : LX_DEFAULT_DB, window, &out, &err);
        fputs(lx_buf_str(&out), stdout);
        lx_buf_free(&out);
        return rc < 0 ? lx_cli_fail(&err, rc) : 0;
    }
    if (strcmp(a.pos[0], "method") == 0) {
        const struct lx_method *m = lx_method_find(a.pos[1]);
        if (!m)
            return lx_cli_fail(&err, lx_unknown_name(&err, "method", a.pos[1]));
        if (help)
            return describe("method", m->name, m->summary, &m->schema), 0;
        rc = show_method(m, &a, &err);
    } else {
        const struct lx_task *t = lx_task_find(a.pos[1]);
        if (!t)
            return lx_cli_fail(&err, lx_unknown_name(&err, "task", a.pos[1]));
        if (help)
            return describe("task", t->name, t->summary, &t->schema), 0;
        rc = show_task(t, &a, &err);
    }
    return rc < 0 ? lx_cli_fail(&err, rc) : 0;
}

