/*
** harness/engine/formats/llama2c.c - llama2.c's legacy `.bin` checkpoints loaded into
** the one struct lx_model (docs/checkpoints.md#llama2c-bin).
**
** The file (Karpathy's llama2.c, run.c's read_checkpoint) is a header of seven
** little-endian int32
**
**     dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
**
** (a negative vocab_size: an untied classifier follows the weights), then
** float32 tensors, each stacked over the layers:
**
**     token_embedding (V, dim)      rms_att (L, dim)           wq (L, dim, dim)
**     wk (L, kv_dim, dim)           wv (L, kv_dim, dim)        wo (L, dim, dim)
**     rms_ffn (L, dim)              w1 (L, hidden, dim)        w2 (L, dim, hidden)
**     w3 (L, hidden, dim)           rms_final (dim)
**     freq_cis_real, freq_cis_imag (seq_len, head_size/2)  -- skipped: lenx builds its own table
**     wcls (V, dim)                 -- only when vocab_size < 0
**
** with kv_dim = n_kv_heads·head_size. The model is Llama 2's: RMSNorm with
** eps 1e-5, SwiGLU (w1 the gate, w3 the linear branch), RoPE base 10000 on
** interleaved pairs (x[2k], x[2k+1]), causal. Its native stack is therefore
** [{rope: {base: 10000, layout: interleaved}}] and its training length seq_len.
**
** Grouped-query attention and the tied head are the engine's own: kv_heads
** (key/value head g serves query heads g·(H/KV) … (g+1)·(H/KV)−1, as in
** run.c) and tie_head. Each layer's slice of a stacked tensor is one
** contiguous run of floats, so the weights are used in place from the file's
** read-only mapping (docs/checkpoints.md#weights-used-in-place): no copy.
*/
#include "harness/engine/formats/llama2c.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/hash.h"
#include "harness/core/hashcache.h"
#include "harness/core/mapguard.h"

#define HEADER_BYTES 28

/* The seven header fields, as the file has them. */
struct l2c_header {
    int32_t dim, hidden, layers, heads, kv_heads, vocab, seq_len;
};

static const char *const field_names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads",
                                           "vocab_size", "seq_len"};

/* Header field k must lie in [lo, hi]. */
static int field_in(const char *path, int k, long v, long lo, long hi, struct lx_error *err)
{
    if (v >= lo && v <= hi)
        return LX_OK;
    return lx_err(err, LX_EINVAL, "%s: llama2.c header field %s is %ld, outside [%ld, %ld]\n"
                  "  hint: the file is damaged, or not a llama2.c legacy .bin (lenx reads the 7-int32 header "
                  "of run.c)", path, field_names[k], v, lo, hi);
}

/* Sizes the engine can hold and the file can describe; the architecture. */
static int check_header(const char *path, const struct l2c_header *h, struct lx_arch *a, struct lx_error *err)
{
    long v = h->vocab < 0 ? -(long)h->vocab : h->vocab;
    int rc = field_in(path, 0, h->dim, 8, 8192, err);
    if (rc == LX_OK)
        rc = field_in(path, 1, h->hidden, 8, 65536, err);
    if (rc == LX_OK)
        rc = field_in(path, 2, h->layers, 1, LX_FMT_MAX_LAYERS, err);
    if (rc == LX_OK)
        rc = field_in(path, 3, h->heads, 1, 256, err);
    if (rc == LX_OK)
        rc = field_in(path, 4, h->kv_heads, 1, h->heads, err);
    if (rc == LX_OK)
        rc = field_in(path, 5, v, 2, 1000000, err);
    if (rc == LX_OK)
        rc = field_in(path, 6, h->seq_len, 1, 1L << 24, err);
    if (rc == LX_OK && (h->dim % h->heads || (h->dim / h->heads) % 2 || h->heads % h->kv_heads))
        rc = lx_err(err, LX_EINVAL, "%s: llama2.c header: dim %d over n_heads %d must be an even head size, "
                    "and n_heads a multiple of n_kv_heads %d\n  hint: the file is damaged", path, h->dim,
                    h->heads, h->kv_heads);
    if (rc < 0)
        return rc;
    lx_params_defaults(&lx_arch_schema, a);
    a->mode = LX_MODEL_CAUSAL;
    a->layers = h->layers;
    a->d_model = h->dim;
    a->heads = h->heads;
    a->d_head = h->dim / h->heads;
    a->d_mlp = h->hidden;
    a->mlp = LX_MLP_SWIGLU;
    a->vocab = v;
    a->norm_eps = 1e-5;
    a->kv_heads = h->kv_heads == h->heads ? 0 : h->kv_heads;
    a->tie_head = h->vocab > 0;
    lx_params_finish(&lx_arch_schema, a);
    return LX_OK;
}

/* Floats the file holds after the header (sizes are bounded: no overflow). */
static uint64_t file_floats(const struct l2c_header *h, const struct lx_arch *a)
{
    uint64_t L = (uint64_t)a->layers, C = (uint64_t)a->d_model, F = (uint64_t)a->d_mlp, V = (uint64_t)a->vocab;
    uint64_t KV = (uint64_t)h->kv_heads * (uint64_t)a->d_head;
    uint64_t n = V * C + L * (C + C * C + 2 * KV * C + C * C + C + 3 * F * C) + C;
    n += (uint64_t)h->seq_len * (uint64_t)a->d_head;    /* freq_cis real + imag, (seq_len, head/2) each */
    return n + (h->vocab < 0 ? V * C : 0);
}

/* The index of tensor `what` of layer l (l < 0: a model tensor) in the tensor list. */
static int index_of(const struct lx_tensor_info *ti, int n, long l, const char *what)
{
    char name[64];
    if (l >= 0)
        snprintf(name, sizeof name, "layers.%ld.%s", l, what);
    else
        snprintf(name, sizeof name, "%s", what);
    for (int i = 0; i < n; i++)
        if (strcmp(ti[i].name, name) == 0)
            return i;
    LX_ASSERT(0);   /* not reached: the architecture has every tensor the file has */
    return -1;
}

/* Where the file's tensors are, in its order, for lx_model_hold. */
struct l2c_at {
    const unsigned char *p;     /* the next float in the mapping */
    struct lx_held *h;
    const struct lx_tensor_info *ti;
    int n;
    const char *path;
};

/* The next `floats` floats are tensor `what` of layer l (or of each layer in turn, layers > 0). */
static void at(struct l2c_at *c, long layers, const char *what, size_t floats)
{
    for (long l = layers ? 0 : -1; l < (layers ? layers : 0); l++) {
        int i = index_of(c->ti, c->n, l, what);
        c->h->t[i] = (struct lx_wmat){c->p, LX_DT_F32, 0, NULL, 0};
        lx_mapguard_add(c->p, sizeof(float) * floats, c->path, c->ti[i].name);
        c->p += sizeof(float) * floats;
    }
}

/* The weights in llama2.c's order (see the top comment), used in place: the
** file's mapping (bytes, n) becomes m's, each tensor where the file has it
** (floats at byte 28 on: aligned). A file that shrinks later is the mapping
** guard's error (harness/core/mapguard.h), not a SIGBUS. */
static void hold_weights(struct lx_model *m, const struct lx_arch *a, const struct l2c_header *h, const char *path,
                         const unsigned char *bytes, size_t n)
{
    int nt = lx_arch_tensors(a, NULL);
    struct lx_tensor_info *ti = lx_xcalloc((size_t)nt, sizeof *ti);
    struct lx_held *held = lx_xcalloc(1, sizeof *held);
    lx_arch_tensors(a, ti);
    held->t = lx_xcalloc((size_t)nt, sizeof *held->t);
    size_t L = (size_t)a->layers, C = (size_t)a->d_model, F = (size_t)a->d_mlp;
    size_t KD = (size_t)h->kv_heads * (size_t)a->d_head, V = (size_t)a->vocab;
    struct l2c_at c = {.p = bytes + HEADER_BYTES, .h = held, .ti = ti, .n = nt, .path = path};
    at(&c, 0, "tok_emb.weight", V * C);
    at(&c, (long)L, "attn_norm.weight", C);     /* rms_att */
    at(&c, (long)L, "attn.wq.weight", C * C);
    at(&c, (long)L, "attn.wk.weight", KD * C);
    at(&c, (long)L, "attn.wv.weight", KD * C);
    at(&c, (long)L, "attn.wo.weight", C * C);
    at(&c, (long)L, "mlp_norm.weight", C);      /* rms_ffn */
    at(&c, (long)L, "mlp.w1.weight", F * C);
    at(&c, (long)L, "mlp.w2.weight", C * F);
    at(&c, (long)L, "mlp.w3.weight", F * C);
    at(&c, 0, "norm.weight", C);                /* rms_final */
    c.p += sizeof(float) * (size_t)h->seq_len * (size_t)a->d_head;   /* freq_cis_real, freq_cis_imag */
    if (h->vocab < 0)
        at(&c, 0, "lm_head.weight", V * C);
    lx_model_hold_map(m, a, held, bytes, n);
    free(ti);
}

/* llama2.c keeps the vocabulary apart: tok<V>.bin as for stories260K, else
** tokenizer.bin, beside the model. tok<V>.bin first: llama2.c's own folder
** holds its 32,000-token tokenizer.bin beside stories260K.bin and tok512.bin. */
static char *find_tokenizer(const char *path, long vocab)
{
    const char *slash = strrchr(path, '/');
    int n = slash ? (int)(slash - path) + 1 : 0;
    char name[32];
    snprintf(name, sizeof name, "tok%ld.bin", vocab);
    const char *names[2] = {name, "tokenizer.bin"};
    for (int k = 0; k < 2; k++) {
        struct lx_buf b = {0};
        lx_buf_printf(&b, "%.*s%s", n, path, names[k]);
        FILE *fp = fopen(lx_buf_str(&b), "rb");
        char *found = fp ? lx_xstrdup(lx_buf_str(&b)) : NULL;
        if (fp)
            fclose(fp);
        lx_buf_free(&b);
        if (found)
            return found;
    }
    return NULL;
}

int lx_llama2c_load(struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err)
{
    const unsigned char *bytes;
    size_t n;
    struct l2c_header h;
    struct lx_arch a;
    memset(m, 0, sizeof *m);
    int rc = lx_map_file(path, &bytes, &n, err);
    if (rc < 0)
        return rc;
    if (n < HEADER_BYTES)
        rc = lx_err(err, LX_EINVAL, "%s: %zu bytes, shorter than llama2.c's 28-byte header (7 int32)\n"
                    "  hint: the file is truncated", path, n);
    if (rc == LX_OK) {
        memcpy(&h, bytes, sizeof h);
        rc = check_header(path, &h, &a, err);
    }
    uint64_t want = rc == LX_OK ? HEADER_BYTES + 4 * file_floats(&h, &a) : 0;
    if (rc == LX_OK && n != want)
        rc = lx_err(err, LX_EINVAL, "%s: the file is %zu bytes, but its llama2.c header (dim %d, hidden_dim %d, "
                    "n_layers %d, n_heads %d, n_kv_heads %d, vocab_size %d, seq_len %d) says %llu\n"
                    "  hint: the file is %s", path, n, h.dim, h.hidden, h.layers, h.heads, h.kv_heads, h.vocab,
                    h.seq_len, (unsigned long long)want, n < want ? "truncated" : "damaged, or not a legacy .bin");
    if (rc == LX_OK) {
        hold_weights(m, &a, &h, path, bytes, n);
        bytes = NULL;   /* m's now */
    }
    if (rc == LX_OK && info) {
        lx_ckpt_info_native(info, "llama2c", "F32");
        char stack[128];
        snprintf(stack, sizeof stack, "[{\"rope\":{\"base\":10000,\"layout\":\"interleaved\"}}]");
        info->stack = lx_xstrdup(stack);
        info->train_len = h.seq_len;
        info->kv_heads = h.kv_heads;
        info->tied = h.vocab > 0;
        info->tokenizer = find_tokenizer(path, a.vocab);
        if (lx_hashcache_file_sha256(path, n, info->sha256) < 0)
            rc = lx_err(err, LX_EIO, "%s: the file changed while it was loaded (it is no longer %zu bytes)\n"
                        "  hint: load it again once nothing writes it", path, n);
        lx_model_weights_hash_of(m, "llama2c", info->sha256, info->weights_sha256);
    }
    lx_unmap_file(bytes, n);
    if (rc < 0)
        lx_model_release(m);
    return rc;
}

/* 1 when path starts like a llama2.c header: at least 9 bytes, not '{' at
** byte 8 (where a safetensors header's JSON begins), and not named
** .safetensors (a damaged checkpoint gets the safetensors reader's message). */
static int looks_llama2c(const char *path)
{
    unsigned char b[9];
    size_t n = strlen(path);
    if (n >= 12 && strcmp(path + n - 12, ".safetensors") == 0)
        return 0;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return 0;
    size_t got = fread(b, 1, sizeof b, fp);
    fclose(fp);
    return got == sizeof b && b[8] != '{';
}

const struct lx_model_format lx_model_format_llama2c = {
    .name = "llama2c",
    .summary = "a llama2.c checkpoint (.bin): a 7-int header, then F32 weights",
    .key = NULL,
    .dir = 0,
    .sniff = looks_llama2c,
    .load = lx_llama2c_load,
};
