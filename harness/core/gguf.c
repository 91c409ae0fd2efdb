/*
** harness/core/gguf.c - reading the GGUF container (see gguf.h).
*/
#include "harness/core/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Elements per block and bytes per block of each tensor type lenx knows. */
static const struct {
    int type;
    const char *name;
    int block, bytes;
} ttypes[] = {
    {LX_GGML_F32, "F32", 1, 4},     {LX_GGML_F16, "F16", 1, 2},      {LX_GGML_BF16, "BF16", 1, 2},
    {LX_GGML_Q8_0, "Q8_0", 32, 34}, {LX_GGML_Q4_0, "Q4_0", 32, 18},  {LX_GGML_Q4_K, "Q4_K", 256, 144},
    {LX_GGML_Q5_K, "Q5_K", 256, 176}, {LX_GGML_Q6_K, "Q6_K", 256, 210}, {LX_GGML_Q4_1, "Q4_1", 32, 20},
    {LX_GGML_Q5_0, "Q5_0", 32, 22},   {LX_GGML_Q5_1, "Q5_1", 32, 24},   {LX_GGML_Q2_K, "Q2_K", 256, 84},
    {LX_GGML_Q3_K, "Q3_K", 256, 110}, {LX_GGML_IQ4_NL, "IQ4_NL", 32, 18}, {LX_GGML_IQ4_XS, "IQ4_XS", 256, 136},
    {LX_GGML_IQ2_XXS, "IQ2_XXS", 256, 66}, {LX_GGML_IQ2_XS, "IQ2_XS", 256, 74}, {LX_GGML_IQ2_S, "IQ2_S", 256, 82},
    {LX_GGML_IQ3_XXS, "IQ3_XXS", 256, 98}, {LX_GGML_IQ3_S, "IQ3_S", 256, 110}, {LX_GGML_IQ1_S, "IQ1_S", 256, 50},
    {LX_GGML_IQ1_M, "IQ1_M", 256, 56},     {LX_GGML_TQ1_0, "TQ1_0", 256, 54},  {LX_GGML_TQ2_0, "TQ2_0", 256, 66},
};

static int ttype_index(int type)
{
    for (int i = 0; i < (int)(sizeof ttypes / sizeof *ttypes); i++)
        if (ttypes[i].type == type)
            return i;
    return -1;
}

const char *lx_gguf_ttype_name(int type)
{
    int i = ttype_index(type);
    return i < 0 ? NULL : ttypes[i].name;
}

/* Bytes of one scalar of each value type (0: not a fixed-size scalar). */
static const int vsize[LX_GGUF_NVTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
static const char *const vnames[LX_GGUF_NVTYPES] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool",
                                                    "string", "array", "u64", "i64", "f64"};

/* A cursor over the file, and where it is for messages. */
struct rd {
    const unsigned char *base, *p, *end;
    const char *name;
    struct lx_error *err;
};

static int short_of(struct rd *r, const char *what, uint64_t need)
{
    return lx_err(r->err, LX_EINVAL, "%s: %s needs %llu bytes at offset %lld, and the file has %lld left\n"
                  "  hint: the file is truncated or not GGUF", r->name, what, (unsigned long long)need,
                  (long long)(r->p - r->base), (long long)(r->end - r->p));
}

static int take(struct rd *r, void *out, size_t n, const char *what)
{
    if ((size_t)(r->end - r->p) < n)
        return short_of(r, what, n);
    memcpy(out, r->p, n);
    r->p += n;
    return LX_OK;
}

/* A string: u64 length, its bytes (borrowed). */
static int take_str(struct rd *r, const char **s, uint64_t *len, const char *what)
{
    int rc = take(r, len, 8, what);
    if (rc == LX_OK && *len > (uint64_t)(r->end - r->p))
        rc = lx_err(r->err, LX_EINVAL, "%s: %s is a string of %llu bytes at offset %lld, longer than the %lld "
                    "bytes left in the file\n  hint: the file is damaged", r->name, what, (unsigned long long)*len,
                    (long long)(r->p - r->base), (long long)(r->end - r->p));
    if (rc == LX_OK) {
        *s = (const char *)r->p;
        r->p += *len;
    }
    return rc;
}

/* A value of type t for key (scalar into kv->v, string, or array). */
static int take_value(struct rd *r, struct lx_gguf_kv *kv, uint32_t t, const char *key)
{
    if (t >= LX_GGUF_NVTYPES)
        return lx_err(r->err, LX_EINVAL, "%s: metadata '%s' has value type %u, not one GGUF defines (0-12)\n"
                      "  hint: the file is damaged or of a newer GGUF", r->name, key, t);
    kv->type = (enum lx_gguf_vtype)t;
    if (t == LX_GGUF_STRING)
        return take_str(r, &kv->str, &kv->str_len, key);
    if (t != LX_GGUF_ARRAY) {
        unsigned char b[8] = {0};
        int rc = take(r, b, (size_t)vsize[t], key);
        if (rc < 0)
            return rc;
        uint64_t u = 0;
        memcpy(&u, b, (size_t)vsize[t]);
        int64_t i = t == LX_GGUF_I8 ? (int8_t)u : t == LX_GGUF_I16 ? (int16_t)u : t == LX_GGUF_I32 ? (int32_t)u
                  : (int64_t)u;
        float f32;
        double f64;
        memcpy(&f32, b, 4);
        memcpy(&f64, b, 8);
        kv->v.f = t == LX_GGUF_F32 ? (double)f32 : t == LX_GGUF_F64 ? f64 : 0.0;
        if (t != LX_GGUF_F32 && t != LX_GGUF_F64)
            kv->v.i = i;
        return LX_OK;
    }
    uint32_t et;
    int rc = take(r, &et, 4, key);
    if (rc == LX_OK)
        rc = take(r, &kv->arr_n, 8, key);
    if (rc < 0)
        return rc;
    if (et >= LX_GGUF_NVTYPES || et == LX_GGUF_ARRAY)
        return lx_err(r->err, LX_EINVAL, "%s: metadata '%s' is an array of %s\n  hint: lenx reads arrays of "
                      "scalars or strings (nested arrays are not used by llama.cpp)", r->name, key,
                      et == LX_GGUF_ARRAY ? "arrays" : "an unknown type");
    kv->arr_type = (enum lx_gguf_vtype)et;
    kv->arr = r->p;
    if (et != LX_GGUF_STRING) {
        if (kv->arr_n > (uint64_t)(r->end - r->p) / (uint64_t)vsize[et])
            return lx_err(r->err, LX_EINVAL, "%s: metadata '%s' claims %llu elements of %s, more than the file "
                          "holds\n  hint: the file is truncated or damaged", r->name, key,
                          (unsigned long long)kv->arr_n, vnames[et]);
        r->p += kv->arr_n * (uint64_t)vsize[et];
        return LX_OK;
    }
    if (kv->arr_n > (uint64_t)(r->end - r->p) / 8)
        return lx_err(r->err, LX_EINVAL, "%s: metadata '%s' claims %llu strings, more than the file holds\n"
                      "  hint: the file is truncated or damaged", r->name, key, (unsigned long long)kv->arr_n);
    for (uint64_t k = 0; k < kv->arr_n; k++) {
        const char *s;
        uint64_t len;
        if ((rc = take_str(r, &s, &len, key)) < 0)
            return rc;
    }
    return LX_OK;
}

/* Copy a string into g's store (offsets now, pointers once it stops growing). */
static size_t keep(struct lx_buf *store, const char *s, uint64_t n)
{
    size_t at = store->len;
    lx_buf_putn(store, s, (size_t)n);
    lx_buf_putn(store, "", 1);
    return at;
}

static int read_kvs(struct lx_gguf *g, struct rd *r, uint64_t n_kv, struct lx_buf *store, size_t *key_at)
{
    for (uint64_t k = 0; k < n_kv; k++) {
        const char *key = "";
        uint64_t len = 0;
        uint32_t t;
        char what[48];
        snprintf(what, sizeof what, "metadata key %llu", (unsigned long long)k);
        int rc = take_str(r, &key, &len, what);
        if (rc == LX_OK && (len == 0 || memchr(key, 0, (size_t)len)))
            rc = lx_err(r->err, LX_EINVAL, "%s: %s is empty or holds a NUL byte\n  hint: the file is damaged", r->name,
                        what);
        if (rc < 0)
            return rc;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(len < 127 ? len : 127), key);
        if (rc == LX_OK)
            rc = take(r, &t, 4, name);
        if (rc == LX_OK)
            rc = take_value(r, &g->kv[k], t, name);
        if (rc < 0)
            return rc;
        key_at[k] = keep(store, key, len);
        g->n_kv = (long)k + 1;
    }
    return LX_OK;
}

/* One tensor's table entry, checked: dimensions, type, its size. */
static int read_tensor(struct lx_gguf *g, struct rd *r, uint64_t k, struct lx_buf *store, size_t *name_at,
                       uint64_t *offset)
{
    struct lx_gguf_tensor *t = &g->t[k];
    const char *s = "";
    uint64_t len = 0;
    uint32_t nd, type;
    char what[48], name[160];
    snprintf(what, sizeof what, "tensor %llu's name", (unsigned long long)k);
    int rc = take_str(r, &s, &len, what);
    if (rc == LX_OK && (len == 0 || memchr(s, 0, (size_t)len)))
        rc = lx_err(r->err, LX_EINVAL, "%s: %s is empty or holds a NUL byte", r->name, what);
    if (rc < 0)
        return rc;
    snprintf(name, sizeof name, "tensor '%.*s'", (int)(len < 120 ? len : 120), s);
    if (rc == LX_OK)
        rc = take(r, &nd, 4, name);
    if (rc == LX_OK && (nd < 1 || nd > 4))
        rc = lx_err(r->err, LX_EINVAL, "%s: %s has %u dimensions; GGUF tensors have 1 to 4", r->name, name, nd);
    uint64_t n = 1;
    for (uint32_t d = 0; rc == LX_OK && d < nd; d++) {
        rc = take(r, &t->ne[d], 8, name);
        if (rc == LX_OK && (t->ne[d] < 1 || t->ne[d] > (1ULL << 40) || n > (1ULL << 50) / t->ne[d]))
            rc = lx_err(r->err, LX_EINVAL, "%s: %s dimension %u is %llu: the tensor would have more than 2^50 "
                        "elements, or none\n  hint: the file is damaged", r->name, name, d,
                        (unsigned long long)t->ne[d]);
        n *= rc == LX_OK ? t->ne[d] : 1;
    }
    if (rc == LX_OK)
        rc = take(r, &type, 4, name);
    int ti = rc == LX_OK ? ttype_index((int)type) : 0;
    if (rc == LX_OK && ti < 0)
        rc = lx_err(r->err, LX_EINVAL, "%s: %s has type %u, which lenx does not read\n  hint: lenx reads F32, "
                    "F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, "
                    "IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS, TQ1_0 and TQ2_0", r->name,
                    name, type);
    if (rc == LX_OK && t->ne[0] % (uint64_t)ttypes[ti].block)
        rc = lx_err(r->err, LX_EINVAL, "%s: %s has rows of %llu elements, not a whole number of %s blocks of %d",
                    r->name, name, (unsigned long long)t->ne[0], ttypes[ti].name, ttypes[ti].block);
    if (rc == LX_OK)
        rc = take(r, offset, 8, name);
    if (rc < 0)
        return rc;
    t->n_dims = (int)nd;
    for (uint32_t d = nd; d < 4; d++)
        t->ne[d] = 1;
    t->type = (int)type;
    t->n_elems = n;
    t->bytes = n / (uint64_t)ttypes[ti].block * (uint64_t)ttypes[ti].bytes;
    name_at[k] = keep(store, s, len);
    return LX_OK;
}

static int by_data(const void *a, const void *b)
{
    const struct lx_gguf_tensor *x = *(const struct lx_gguf_tensor *const *)a;
    const struct lx_gguf_tensor *y = *(const struct lx_gguf_tensor *const *)b;
    return x->data < y->data ? -1 : x->data > y->data;
}

/* No byte of two non-empty tensors' data shared (two tensors read from one
** place would load, and score, as another model). */
static int check_overlap(const struct lx_gguf *g, struct rd *r)
{
    const struct lx_gguf_tensor **v = lx_xmalloc((size_t)(g->n_t ? g->n_t : 1) * sizeof *v), *reach = NULL;
    for (long k = 0; k < g->n_t; k++)
        v[k] = &g->t[k];
    qsort(v, (size_t)g->n_t, sizeof *v, by_data);
    int rc = LX_OK;
    for (long k = 0; k < g->n_t && rc == LX_OK; k++) {
        if (!v[k]->bytes)
            continue;
        if (reach && v[k]->data < reach->data + reach->bytes)
            rc = lx_err(r->err, LX_EINVAL, "%s: tensors '%s' (bytes %zu..%zu of the file) and '%s' (from byte %zu) "
                        "overlap\n  hint: the file is damaged, or its tensor offsets are wrong", g->name, reach->name,
                        (size_t)(reach->data - g->bytes), (size_t)(reach->data - g->bytes) + (size_t)reach->bytes,
                        v[k]->name, (size_t)(v[k]->data - g->bytes));
        if (!reach || v[k]->data + v[k]->bytes > reach->data + reach->bytes)
            reach = v[k];
    }
    free(v);
    return rc;
}

/* Every tensor's data inside the file, aligned, none overlapping; names unique. */
static int place_tensors(struct lx_gguf *g, struct rd *r, const uint64_t *offset)
{
    uint64_t start = (uint64_t)(r->p - r->base);
    start = (start + g->alignment - 1) / g->alignment * g->alignment;
    for (long k = 0; k < g->n_t; k++) {
        struct lx_gguf_tensor *t = &g->t[k];
        if (offset[k] % g->alignment)
            return lx_err(r->err, LX_EINVAL, "%s: tensor '%s' is at data offset %llu, not a multiple of the "
                          "alignment %llu\n  hint: the file is damaged", g->name, t->name,
                          (unsigned long long)offset[k], (unsigned long long)g->alignment);
        if (start > g->size || offset[k] > g->size - start || t->bytes > g->size - start - offset[k])
            return lx_err(r->err, LX_EINVAL, "%s: tensor '%s' (%s, %llu bytes) at data offset %llu ends past the "
                          "end of the file (%zu bytes)\n  hint: the file is truncated, or its offsets are wrong",
                          g->name, t->name, lx_gguf_ttype_name(t->type), (unsigned long long)t->bytes,
                          (unsigned long long)offset[k], g->size);
        t->data = g->bytes + start + offset[k];
        for (long j = 0; j < k; j++)
            if (strcmp(g->t[j].name, t->name) == 0)
                return lx_err(r->err, LX_EINVAL, "%s: tensor '%s' is in the file twice", g->name, t->name);
    }
    return check_overlap(g, r);
}

int lx_gguf_file(const char *path)
{
    char b[4];
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return 0;
    size_t got = fread(b, 1, sizeof b, fp);
    fclose(fp);
    return got == 4 && memcmp(b, "GGUF", 4) == 0;
}

int lx_gguf_parse(struct lx_gguf *g, const unsigned char *bytes, size_t n, const char *name, struct lx_error *err)
{
    memset(g, 0, sizeof *g);
    g->name = name, g->bytes = bytes, g->size = n, g->alignment = 32;
    struct rd r = {.base = bytes, .p = bytes, .end = bytes + n, .name = name, .err = err};
    char magic[4];
    uint64_t n_t = 0, n_kv = 0;
    int rc = take(&r, magic, 4, "the magic");
    if (rc == LX_OK && memcmp(magic, "GGUF", 4) != 0)
        rc = lx_err(err, LX_EINVAL, "%s: not a GGUF file (it does not begin with \"GGUF\")", name);
    if (rc == LX_OK)
        rc = take(&r, &g->version, 4, "the version");
    if (rc == LX_OK && g->version != 2 && g->version != 3)
        rc = lx_err(err, LX_EINVAL, "%s: GGUF version %u; lenx reads versions 2 and 3 (little-endian)\n"
                    "  hint: a big-endian file, or a version-1 file: convert it again with llama.cpp", name,
                    g->version);
    if (rc == LX_OK)
        rc = take(&r, &n_t, 8, "the tensor count");
    if (rc == LX_OK)
        rc = take(&r, &n_kv, 8, "the metadata count");
    if (rc == LX_OK && (n_kv > (uint64_t)(r.end - r.p) / 13 || n_t > (uint64_t)(r.end - r.p) / 25))
        rc = lx_err(err, LX_EINVAL, "%s: %llu metadata keys and %llu tensors cannot fit in the %lld bytes left\n"
                    "  hint: the file is truncated or damaged", name, (unsigned long long)n_kv,
                    (unsigned long long)n_t, (long long)(r.end - r.p));
    if (rc < 0)
        return rc;
    struct lx_buf store = {0};
    size_t *key_at = lx_xcalloc((size_t)n_kv + 1, sizeof *key_at), *name_at = lx_xcalloc((size_t)n_t + 1, sizeof *name_at);
    uint64_t *offset = lx_xcalloc((size_t)n_t + 1, sizeof *offset);
    g->kv = lx_xcalloc((size_t)n_kv + 1, sizeof *g->kv);
    g->t = lx_xcalloc((size_t)n_t + 1, sizeof *g->t);
    rc = read_kvs(g, &r, n_kv, &store, key_at);
    for (uint64_t k = 0; rc == LX_OK && k < n_t; k++)
        if ((rc = read_tensor(g, &r, k, &store, name_at, &offset[k])) == LX_OK)
            g->n_t = (long)k + 1;
    g->strings = store.s;   /* pointers into it, now that it has stopped growing */
    for (long k = 0; k < g->n_kv; k++)
        g->kv[k].key = g->strings + key_at[k];
    for (long k = 0; rc == LX_OK && k < g->n_kv; k++)  /* which of two values is meant cannot be told */
        for (long j = 0; rc == LX_OK && j < k; j++)
            if (strcmp(g->kv[j].key, g->kv[k].key) == 0)
                rc = lx_err(err, LX_EINVAL, "%s: metadata key '%s' is in the file twice\n  hint: the file is damaged, "
                            "or was written by a tool that does not check its keys", name, g->kv[k].key);
    for (long k = 0; k < g->n_t; k++)
        g->t[k].name = g->strings + name_at[k];
    const struct lx_gguf_kv *al = rc == LX_OK ? lx_gguf_find(g, "general.alignment") : NULL;
    if (al && (al->type != LX_GGUF_U32 || al->v.u == 0 || (al->v.u & (al->v.u - 1)) || al->v.u > 65536))
        rc = lx_err(err, LX_EINVAL, "%s: general.alignment must be a u32 power of two up to 65536", name);
    if (al && rc == LX_OK)
        g->alignment = al->v.u;
    if (rc == LX_OK)
        rc = place_tensors(g, &r, offset);
    free(key_at), free(name_at), free(offset);
    if (rc < 0)
        lx_gguf_release(g);
    return rc;
}

void lx_gguf_release(struct lx_gguf *g)
{
    free(g->kv);
    free(g->t);
    free(g->strings);
    memset(g, 0, sizeof *g);
}

const struct lx_gguf_kv *lx_gguf_find(const struct lx_gguf *g, const char *key)
{
    for (long k = 0; k < g->n_kv; k++)
        if (strcmp(g->kv[k].key, key) == 0)
            return &g->kv[k];
    return NULL;
}

const struct lx_gguf_tensor *lx_gguf_tensor(const struct lx_gguf *g, const char *name)
{
    for (long k = 0; k < g->n_t; k++)
        if (strcmp(g->t[k].name, name) == 0)
            return &g->t[k];
    return NULL;
}

static int is_int(enum lx_gguf_vtype t)
{
    return t <= LX_GGUF_I32 || t == LX_GGUF_U64 || t == LX_GGUF_I64 || t == LX_GGUF_BOOL;
}

int lx_gguf_get_int(const struct lx_gguf *g, const char *key, int required, int64_t *out, struct lx_error *err)
{
    const struct lx_gguf_kv *kv = lx_gguf_find(g, key);
    if (!kv && !required)
        return LX_OK;
    if (!kv || !is_int(kv->type))
        return lx_err(err, LX_EINVAL, "%s: metadata '%s' %s\n  hint: the file is not a model llama.cpp's converters "
                      "wrote, or is damaged", g->name, key, kv ? "is not an integer" : "is missing");
    *out = kv->v.i;
    return LX_OK;
}

int lx_gguf_get_num(const struct lx_gguf *g, const char *key, int required, double *out, struct lx_error *err)
{
    const struct lx_gguf_kv *kv = lx_gguf_find(g, key);
    if (!kv && !required)
        return LX_OK;
    if (kv && (kv->type == LX_GGUF_F32 || kv->type == LX_GGUF_F64)) {
        *out = kv->v.f;
        return LX_OK;
    }
    int64_t i;
    int rc = lx_gguf_get_int(g, key, required, &i, err);
    if (rc == LX_OK)
        *out = (double)i;
    return rc;
}

void lx_gguf_get_str(const struct lx_gguf *g, const char *key, char *out, size_t n)
{
    const struct lx_gguf_kv *kv = lx_gguf_find(g, key);
    if (kv && kv->type == LX_GGUF_STRING)
        snprintf(out, n, "%.*s", (int)(kv->str_len < n ? kv->str_len : n - 1), kv->str);
    else if (n)
        out[0] = '\0';
}
