/*
** harness/engine/formats/checkpoint.c - lenx's own checkpoints: save and load
** (checkpoint.h), registered as the format `lenx`; and the tokenizer a loaded
** model reads text with.
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/engine/formats/checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/config.h"
#include "harness/engine/formats/safetensors.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/core/hash.h"
#include "harness/core/hashcache.h"
#include "harness/core/json.h"
#include "harness/core/version.h"

/* The copy of a checkpoint's tokenizer: <path without .safetensors>.tokenizer
** into out; *name = its last component (what lenx_tokenizer records). */
static void tokenizer_dir(const char *path, char *out, size_t n, char **name)
{
    size_t len = strlen(path);
    int ext = len >= 12 && strcmp(path + len - 12, ".safetensors") == 0;
    snprintf(out, n, "%.*s.tokenizer", (int)(ext ? len - 12 : len), path);
    char *slash = strrchr(out, '/');
    *name = slash ? slash + 1 : out;
}

int lx_model_save(const struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err)
{
    int n = lx_arch_tensors(&m->arch, NULL);
    struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
    struct lx_st_tensor *st = lx_xcalloc((size_t)n, sizeof *st);
    lx_arch_tensors(&m->arch, ti);
    float *w32 = lx_model_f32(m);
    for (int i = 0; i < n; i++) {
        st[i].name = ti[i].name;
        st[i].ndim = ti[i].ndim;
        st[i].shape[0] = ti[i].shape[0];
        st[i].shape[1] = ti[i].shape[1];
        st[i].data = w32 + ti[i].offset;
    }
    struct lx_buf arch = {0};
    lx_params_json(&lx_arch_schema, &m->arch, &arch);
    char len[32], threads[32];
    snprintf(len, sizeof len, "%ld", info->train_len);
    snprintf(threads, sizeof threads, "%d", info->threads);
    /* the data buffer is the tensors back to back, in this order */
    struct lx_sha256 h;
    lx_sha256_init(&h);
    for (int i = 0; i < n; i++) {
        long count = ti[i].shape[0] * (ti[i].ndim > 1 ? ti[i].shape[1] : 1);
        lx_sha256_update(&h, st[i].data, sizeof(float) * (size_t)count);
    }
    lx_sha256_final_hex(&h, info->weights_sha256);
    char tok_dir[4096], *tok_name = tok_dir;
    tokenizer_dir(path, tok_dir, sizeof tok_dir, &tok_name);
    int with_tok = info->tokenizer && info->tokenizer_sha256[0];
    const char *meta[2 * 13] = {
        "format", "pt",
        "lenx_version", LX_VERSION,
        "lenx_arch", lx_buf_str(&arch),
        "lenx_train", info->train_json ? info->train_json : "{}",
        "lenx_stack", info->stack ? info->stack : "[]",
        "lenx_train_len", len,
        "lenx_model_key", info->model_key ? info->model_key : "",
        "lenx_weights_sha256", info->weights_sha256,
        "lenx_threads", threads,
    };
    int n_meta = 9;
    const char *extra[] = {     /* each only when it applies: files without it stay as they were */
        with_tok ? "lenx_tokenizer_sha256" : NULL, info->tokenizer_sha256,
        with_tok ? "lenx_tokenizer" : NULL, tok_name,
        info->numerics[0] && strcmp(info->numerics, "fast") != 0 ? "lenx_numerics" : NULL, info->numerics,
        info->lineage ? "lenx_lineage" : NULL, info->lineage,   /* a fine-tuned model's */
    };
    for (int i = 0; i < (int)(sizeof extra / sizeof *extra); i += 2)
        if (extra[i]) {
            meta[2 * n_meta] = extra[i];
            meta[2 * n_meta + 1] = extra[i + 1];
            n_meta++;
        }
    int rc = with_tok ? lx_tokenizer_copy(info->tokenizer, info->tokenizer_sha256, tok_dir, err) : LX_OK;
    if (rc == LX_OK)
        rc = lx_st_write(path, st, n, meta, n_meta, info->sha256, err);
    lx_buf_free(&arch);
    lx_model_f32_free(m, w32);
    free(st);
    free(ti);
    return rc;
}

static int need_meta(const struct lx_st_file *f, const char *key, const char **out, struct lx_error *err)
{
    const char *of = lx_st_meta(f, "lenx_state_of"), *step = lx_st_meta(f, "step");
    if (!(*out = lx_st_meta(f, key)) && of)     /* lx_train_snap_save's file, given where a model goes */
        return lx_err(err, LX_EINVAL, "%s: the resumable state of a training of model %s (step %s), not a model\n"
                      "  hint: the model's checkpoint is %s.safetensors in the same folder, written when its "
                      "training ends (rerun the sweep that trains it to finish it)", f->path, of, step ? step : "?",
                      of);
    if (!*out)
        return lx_err(err, LX_EINVAL, "%s: no '%s' in the safetensors __metadata__\n"
                      "  hint: lenx checkpoints carry lenx_arch, lenx_stack and lenx_train_len "
                      "(docs/checkpoints.md); add them to a checkpoint made elsewhere", f->path, key);
    return LX_OK;
}

/* The sha256 of the data buffer into out, checked against the embedded
** lenx_weights_sha256 when the file has one (older checkpoints do not). */
static int check_weights(const struct lx_st_file *f, char out[65], struct lx_error *err)
{
    char key[8192];     /* remembered by the file's identity, as the file's own hash */
    int keyed = lx_hashcache_file_key(f->path, "lenx-data", key, sizeof key) == 0;
    if (!(keyed && lx_hashcache_get(key, out))) {
        lx_sha256_hex_bytes(f->data, f->n_data, out);
        if (keyed)
            lx_hashcache_put(key, out);
    }
    const char *want = lx_st_meta(f, "lenx_weights_sha256");
    if (want && strcmp(want, out) != 0)
        return lx_err(err, LX_EIO, "%s: the weights do not match the checkpoint's embedded hash "
                      "(lenx_weights_sha256 %.16s..., the data hashes to %.16s...): the file is damaged\n"
                      "  hint: delete it and rerun the sweep to retrain it, or restore it from a copy",
                      f->path, want, out);
    return LX_OK;
}

/* The weights of the architecture a checkpoint's header declares, checked
** against the machine's memory first: a 2 KB header can declare 343 GB. */
static int alloc_declared(struct lx_model *m, const struct lx_arch *a, const char *path, struct lx_error *err)
{
    struct lx_error sub;
    if (lx_model_alloc(m, a, &sub) == LX_OK)
        return LX_OK;
    return lx_err(err, LX_EINVAL, "%s: lenx_arch declares a model this machine cannot hold: %s", path, sub.msg);
}


/* info->begin_text from the stored training config (lenx_train, JSON; its
** begin is left out at bos): a file whose config does not parse, or names
** another begin, is refused. */
static int train_begin(const char *path, struct lx_ckpt_info *info, struct lx_error *err)
{
    struct lx_json *doc;
    char name[LX_PATH_CAP + 32];
    snprintf(name, sizeof name, "%s: lenx_train", path);
    int rc = lx_json_parse(&doc, info->train_json, strlen(info->train_json), name, err);
    if (rc < 0)
        return rc;
    const char *b = "bos";
    const struct lx_jv *v = lx_json_member(lx_json_root(doc), "begin");
    if (v && (rc = lx_json_str(doc, v, &b, NULL, err)) == LX_OK && strcmp(b, "bos") && strcmp(b, "text"))
        rc = lx_err(err, LX_EINVAL, "%s: begin is '%s', not bos or text\n  hint: the file was not written by "
                    "this lenx; retrain it", name, b);
    info->begin_text = rc == LX_OK && strcmp(b, "text") == 0;
    lx_json_free(doc);
    return rc;
}

/* The tokenizer a lenx model was trained on (lenx_tokenizer_sha256), and its
** copy beside the file (lenx_tokenizer names it) when it is there. */
static int recorded_tokenizer(const struct lx_st_file *f, const char *path, struct lx_ckpt_info *info,
                              struct lx_error *err)
{
    const char *sha = lx_st_meta(f, "lenx_tokenizer_sha256"), *name = lx_st_meta(f, "lenx_tokenizer");
    if (!sha)
        return LX_OK;
    if (strlen(sha) != 64 || !name || !*name || strchr(name, '/'))
        return lx_err(err, LX_EINVAL, "%s: lenx_tokenizer_sha256 must be 64 hex digits and lenx_tokenizer the "
                      "name of the tokenizer's copy beside the file", path);
    memcpy(info->tokenizer_sha256, sha, 65);
    const char *slash = strrchr(path, '/');
    struct lx_buf dir = {0};
    lx_buf_printf(&dir, "%.*s%s", slash ? (int)(slash - path + 1) : 0, path, name);
    info->tokenizer = lx_tokenizer_in_dir(lx_buf_str(&dir));
    lx_buf_free(&dir);
    return LX_OK;
}

/* lenx_train_len's text len into *out: an integer in [1, 2^30]. */
static int train_len_of(const char *len, const char *path, long *out, struct lx_error *err)
{
    char *end;
    errno = 0;
    *out = strtol(len, &end, 10);
    if (*end || errno || *out < 1 || *out > (1L << 30))
        return lx_err(err, LX_EINVAL, "%s: lenx_train_len '%s' is not an integer in [1, 2^30] (the bound of an HF "
                      "config's max_position_embeddings)\n  hint: the file's metadata was edited; lenx writes the "
                      "length it trained at", path, len);
    return LX_OK;
}

/* lenx writes its arch's tensors, and only those: another (a layer past
** lenx_arch's count, lm_head beside a tied head) means the file is not the
** model its metadata says. */
static int only_arch_tensors(const struct lx_st_file *f, const struct lx_arch *a, const struct lx_tensor_info *ti,
                             int n, const char *path, struct lx_error *err)
{
    for (int k = 0; k < f->n_entries; k++) {
        int i = 0;
        while (i < n && strcmp(ti[i].name, f->entries[k].name) != 0)
            i++;
        if (i == n)
            return lx_err(err, LX_EINVAL, "%s: tensor '%s' is not one of the model lenx_arch describes (%ld layers%s)"
                          "\n  hint: the file's metadata was edited, or another program added the tensor", path,
                          f->entries[k].name, (long)a->layers, a->tie_head ? ", the head tied to the embedding" : "");
    }
    return LX_OK;
}

static int load_lenx(struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err)
{
    memset(m, 0, sizeof *m);
    if (info)
        memset(info, 0, sizeof *info);
    struct lx_st_file f = {0};
    int rc = lx_st_open(&f, path, err);
    const char *arch_json = NULL, *stack = NULL, *len = NULL;
    if (rc == LX_OK)
        rc = need_meta(&f, "lenx_arch", &arch_json, err);
    if (rc == LX_OK)
        rc = need_meta(&f, "lenx_stack", &stack, err);
    if (rc == LX_OK)
        rc = need_meta(&f, "lenx_train_len", &len, err);
    struct lx_arch a;
    lx_params_defaults(&lx_arch_schema, &a);
    if (rc == LX_OK) {
        struct lx_doc doc = {0};
        char what[4200];
        snprintf(what, sizeof what, "%s: lenx_arch", path);
        rc = lx_doc_load_text(&doc, arch_json, what, err);
        if (rc == LX_OK)
            rc = lx_params_apply(&lx_arch_schema, &a, doc.root, "the architecture", err);
        lx_doc_release(&doc);
    }
    if (rc == LX_OK) {
        lx_params_finish(&lx_arch_schema, &a);
        struct lx_error sub;
        if (lx_arch_resolve(&a, &sub) < 0)
            rc = lx_err(err, LX_EINVAL, "%s: lenx_arch: %s", path, sub.msg);
    }
    if (rc == LX_OK)
        rc = alloc_declared(m, &a, path, err);
    if (rc == LX_OK) {
        int n = lx_arch_tensors(&a, NULL);
        struct lx_tensor_info *ti = lx_xcalloc((size_t)n, sizeof *ti);
        lx_arch_tensors(&a, ti);
        for (int i = 0; i < n && rc == LX_OK; i++)
            rc = lx_st_read(&f, ti[i].name, ti[i].ndim, ti[i].shape, m->w + ti[i].offset, err);
        if (rc == LX_OK)
            rc = only_arch_tensors(&f, &a, ti, n, path, err);
        free(ti);
    }
    char weights[65];
    if (rc == LX_OK)
        rc = check_weights(&f, weights, err);
    if (rc == LX_OK && info) {
        const char *key = lx_st_meta(&f, "lenx_model_key"), *tj = lx_st_meta(&f, "lenx_train");
        const char *thr = lx_st_meta(&f, "lenx_threads");
        lx_ckpt_info_native(info, "lenx", "F32");
        memcpy(info->weights_sha256, weights, sizeof weights);
        info->embedded_hash = lx_st_meta(&f, "lenx_weights_sha256") != NULL;
        info->threads = thr ? atoi(thr) : 0;
        const char *num = lx_st_meta(&f, "lenx_numerics");
        snprintf(info->numerics, sizeof info->numerics, "%s", num ? num : "fast");
        free(info->model_key);
        free(info->train_json);
        info->model_key = lx_xstrdup(key ? key : "");
        info->stack = lx_xstrdup(stack);
        info->train_json = lx_xstrdup(tj ? tj : "{}");
        rc = train_begin(path, info, err);
        const char *lineage = lx_st_meta(&f, "lenx_lineage");
        info->lineage = lineage ? lx_xstrdup(lineage) : NULL;
        if (rc == LX_OK)
            rc = train_len_of(len, path, &info->train_len, err);
        memcpy(info->sha256, f.sha256, sizeof info->sha256);
        if (rc == LX_OK)
            rc = recorded_tokenizer(&f, path, info, err);
    }
    lx_st_close(&f);
    if (rc < 0) {
        if (info)
            lx_ckpt_info_release(info);
        lx_model_release(m);
    }
    return rc;
}

/* Any file the other formats do not take is read as a lenx checkpoint (a
** damaged one gets the safetensors reader's message). */
static int lenx_sniff(const char *path)
{
    return 1;
}

const struct lx_model_format lx_model_format_lenx = {
    .name = "lenx",
    .summary = "lenx's own checkpoint: F32 safetensors with lenx_* metadata (docs/checkpoints.md)",
    .key = NULL,
    .dir = 0,
    .sniff = lenx_sniff,
    .load = load_lenx,
};

/* ---- a training run's resumable state ---------------------------------------- */

/* The state's metadata this lenx writes (keys and values, in this order). */
#define SNAP_META 8

/* SHA-256 (hex, 65 bytes) of the metadata values kv[0..2·SNAP_META) as "key=value\n" lines, in order: an
** edited or damaged header (a step, a loss) is refused as damaged data are (lenx_state_meta_sha256). */
static void snap_meta_sha(const char *const *kv, char sha[65])
{
    struct lx_sha256 h;
    lx_sha256_init(&h);
    for (int k = 0; k < 2 * SNAP_META; k += 2) {
        lx_sha256_update(&h, kv[k], strlen(kv[k]));
        lx_sha256_update(&h, "=", 1);
        lx_sha256_update(&h, kv[k + 1], strlen(kv[k + 1]));
        lx_sha256_update(&h, "\n", 1);
    }
    lx_sha256_final_hex(&h, sha);
}

int lx_train_snap_save(const char *path, const struct lx_train_snap *s, const char *model_key, const char *numerics,
                       struct lx_error *err)
{
    char step[32], run_n[32], nums[4][40];
    snprintf(step, sizeof step, "%ld", s->step);
    snprintf(run_n, sizeof run_n, "%ld", s->run_n);
    const double v[4] = {s->run_loss, s->train_loss, s->val_loss, s->seconds};
    for (int k = 0; k < 4; k++)
        snprintf(nums[k], sizeof nums[k], "%a", v[k]);     /* exact: the sums go on bit for bit */
    struct lx_st_tensor t[3] = {{"weights", 1, {(long)s->n}, s->w}, {"adam_m", 1, {(long)s->n}, s->m},
                                {"adam_v", 1, {(long)s->n}, s->v}};
    char sha[65];       /* of the data buffer, the three tensors back to back: a damaged state is not resumed */
    struct lx_sha256 h;
    lx_sha256_init(&h);
    for (int k = 0; k < 3; k++)
        lx_sha256_update(&h, t[k].data, sizeof(float) * s->n);
    lx_sha256_final_hex(&h, sha);
    char msha[65];
    const char *meta[] = {"lenx_state_of", model_key, "lenx_numerics", numerics, "step", step, "run_n", run_n,
                          "run_loss", nums[0], "train_loss", nums[1], "val_loss", nums[2], "seconds", nums[3],
                          "lenx_state_sha256", sha, "lenx_state_meta_sha256", msha};
    snap_meta_sha(meta, msha);
    return lx_st_write(path, t, 3, meta, (int)(sizeof meta / sizeof *meta / 2), NULL, err);
}

/* A number of the state's metadata: LX_EIO naming the key when absent or not a number. */
static int snap_num(const struct lx_st_file *f, const char *key, double *out, struct lx_error *err)
{
    const char *v = lx_st_meta(f, key);
    char *end = NULL;
    *out = v ? strtod(v, &end) : 0;
    if (!v || end == v || *end)
        return lx_err(err, LX_EIO, "%s: metadata '%s' is %s\n  hint: the state is damaged; delete it to train "
                      "from step 0", f->path, key, v ? "not a number" : "missing");
    return LX_OK;
}

/* The header's metadata against their hash (snap_meta_sha). */
static int snap_meta_check(const struct lx_st_file *f, const char *want, struct lx_error *err)
{
    static const char *const keys[SNAP_META] = {"lenx_state_of", "lenx_numerics", "step", "run_n", "run_loss",
                                                "train_loss", "val_loss", "seconds"};
    const char *kv[2 * SNAP_META];
    for (int k = 0; k < SNAP_META; k++) {
        kv[2 * k] = keys[k];
        kv[2 * k + 1] = lx_st_meta(f, keys[k]) ? lx_st_meta(f, keys[k]) : "";
    }
    char got[65];
    snap_meta_sha(kv, got);
    if (strcmp(want, got) == 0)
        return LX_OK;
    return lx_err(err, LX_EIO, "the state's metadata do not match their embedded hash (lenx_state_meta_sha256 "
                  "%.16s..., step %s, run_n %s hash to %.16s...): the state is damaged or was edited\n  hint: delete "
                  "it to train from step 0 (the next run does so itself)", want, kv[5], kv[7], got);
}

int lx_train_snap_load(const char *path, const char *model_key, size_t n, const char *numerics,
                       struct lx_train_snap *s, struct lx_error *err)
{
    struct lx_st_file f;
    memset(s, 0, sizeof *s);
    int rc = lx_st_open(&f, path, err);
    if (rc < 0)
        return rc;
    const char *of = lx_st_meta(&f, "lenx_state_of"), *num = lx_st_meta(&f, "lenx_numerics");
    if (!of || strcmp(of, model_key) != 0 || !num || strcmp(num, numerics) != 0)
        rc = lx_err(err, LX_EIO, "%s: the state of model '%s' in numerics %s, not of '%s' in %s\n  hint: delete it "
                    "to train from step 0", path, of ? of : "?", num ? num : "?", model_key, numerics);
    const char *want = lx_st_meta(&f, "lenx_state_sha256");  /* absent in a state an older lenx saved */
    char got[65];
    if (rc == LX_OK && want && (lx_sha256_hex_bytes(f.data, f.n_data, got), strcmp(want, got) != 0))
        rc = lx_err(err, LX_EIO, "%s: the state's data do not match its embedded hash (lenx_state_sha256 %.16s..., "
                    "the data hash to %.16s...): the state is damaged\n  hint: delete it to train from step 0 (the "
                    "next run does so itself)", path, want, got);
    const char *mwant = lx_st_meta(&f, "lenx_state_meta_sha256");  /* absent before 2026-12-07 */
    if (rc == LX_OK && mwant && (rc = snap_meta_check(&f, mwant, err)) < 0)
        lx_err_prefix(err, rc, "%s: ", path);
    double d[6];
    const char *keys[] = {"step", "run_n", "run_loss", "train_loss", "val_loss", "seconds"};
    for (int k = 0; k < 6 && rc == LX_OK; k++)
        rc = snap_num(&f, keys[k], &d[k], err);
    s->n = n, s->step = (long)d[0], s->run_n = (long)d[1], s->run_loss = d[2], s->train_loss = d[3];
    s->val_loss = d[4], s->seconds = d[5];
    long shape[1] = {(long)n};
    float **dst[3] = {&s->w, &s->m, &s->v};
    const char *names[3] = {"weights", "adam_m", "adam_v"};
    for (int k = 0; k < 3 && rc == LX_OK; k++) {
        *dst[k] = lx_xmalloc(sizeof(float) * n);
        rc = lx_st_read(&f, names[k], 1, shape, *dst[k], err);
    }
    lx_st_close(&f);
    if (rc < 0)
        lx_train_snap_free(s);
    return rc;
}

void lx_train_snap_free(struct lx_train_snap *s)
{
    free(s->w);
    free(s->m);
    free(s->v);
    s->w = s->m = s->v = NULL;
}
