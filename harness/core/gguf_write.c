/*
** harness/core/gguf_write.c - writing the GGUF container (see gguf.h): the
** metadata and tensor table are built in memory, the tensors converted to
** their type one block of rows at a time while the file is written.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/core/gguf.h"
#include "harness/core/half.h"

#define ALIGN 32

void lx_gguf_out_init(struct lx_gguf_out *o)
{
    memset(o, 0, sizeof *o);
}

void lx_gguf_out_free(struct lx_gguf_out *o)
{
    lx_buf_free(&o->kv);
    lx_buf_free(&o->ti);
    free(o->src);
    memset(o, 0, sizeof *o);
}

static void put_raw(struct lx_buf *b, const void *v, size_t n)
{
    lx_buf_putn(b, (const char *)v, n);
}

static void put_string(struct lx_buf *b, const char *s, size_t n)
{
    uint64_t len = n;
    put_raw(b, &len, 8);
    put_raw(b, s, n);
}

/* A key and its value type. */
static void head(struct lx_gguf_out *o, const char *key, enum lx_gguf_vtype t)
{
    uint32_t tt = t;
    put_string(&o->kv, key, strlen(key));
    put_raw(&o->kv, &tt, 4);
    o->n_kv++;
}

void lx_gguf_put_str(struct lx_gguf_out *o, const char *key, const char *s)
{
    head(o, key, LX_GGUF_STRING);
    put_string(&o->kv, s, strlen(s));
}

void lx_gguf_put_u32(struct lx_gguf_out *o, const char *key, uint32_t v)
{
    head(o, key, LX_GGUF_U32);
    put_raw(&o->kv, &v, 4);
}

void lx_gguf_put_i32(struct lx_gguf_out *o, const char *key, int32_t v)
{
    head(o, key, LX_GGUF_I32);
    put_raw(&o->kv, &v, 4);
}

void lx_gguf_put_f32(struct lx_gguf_out *o, const char *key, float v)
{
    head(o, key, LX_GGUF_F32);
    put_raw(&o->kv, &v, 4);
}

void lx_gguf_put_bool(struct lx_gguf_out *o, const char *key, int v)
{
    unsigned char b = v != 0;
    head(o, key, LX_GGUF_BOOL);
    put_raw(&o->kv, &b, 1);
}

static const unsigned char scalar_bytes[LX_GGUF_NVTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

void lx_gguf_put_arr(struct lx_gguf_out *o, const char *key, enum lx_gguf_vtype t, uint64_t n, const void *v)
{
    LX_ASSERT(t < LX_GGUF_NVTYPES && scalar_bytes[t] > 0);
    uint32_t et = t;
    head(o, key, LX_GGUF_ARRAY);
    put_raw(&o->kv, &et, 4);
    put_raw(&o->kv, &n, 8);
    put_raw(&o->kv, v, (size_t)n * scalar_bytes[t]);
}

void lx_gguf_put_strs(struct lx_gguf_out *o, const char *key, uint64_t n, const char *const *s, const size_t *len)
{
    uint32_t et = LX_GGUF_STRING;
    head(o, key, LX_GGUF_ARRAY);
    put_raw(&o->kv, &et, 4);
    put_raw(&o->kv, &n, 8);
    for (uint64_t i = 0; i < n; i++)
        put_string(&o->kv, s[i], len ? len[i] : strlen(s[i]));
}

static int ggml_type(int dtype)
{
    return dtype == LX_DT_F32 ? LX_GGML_F32 : dtype == LX_DT_F16 ? LX_GGML_F16 : dtype == LX_DT_BF16 ? LX_GGML_BF16
                                                                                                     : LX_GGML_Q8_0;
}

void lx_gguf_put_tensor(struct lx_gguf_out *o, const char *name, int n_dims, const uint64_t *ne, const float *src,
                        int dtype)
{
    lx_gguf_put_tensor_fn(o, name, n_dims, ne, NULL, NULL, dtype);
    o->src[o->n_t - 1].src = src;
}

void lx_gguf_put_tensor_fn(struct lx_gguf_out *o, const char *name, int n_dims, const uint64_t *ne,
                           void (*read)(void *ctx, uint64_t at, size_t k, float *out), void *ctx, int dtype)
{
    LX_ASSERT(n_dims >= 1 && n_dims <= 2 && ne[0] % lx_dtype_block(dtype) == 0);
    LX_ASSERT(dtype == LX_DT_F32 || dtype == LX_DT_F16 || dtype == LX_DT_BF16 || dtype == LX_DT_Q8_0);
    uint64_t n = ne[0] * (n_dims == 2 ? ne[1] : 1);
    uint32_t nd = (uint32_t)n_dims, t = (uint32_t)ggml_type(dtype);
    put_string(&o->ti, name, strlen(name));
    put_raw(&o->ti, &nd, 4);
    put_raw(&o->ti, ne, 8 * (size_t)n_dims);
    put_raw(&o->ti, &t, 4);
    put_raw(&o->ti, &o->data_bytes, 8);
    o->src = lx_xrealloc(o->src, sizeof *o->src * (size_t)(o->n_t + 1));
    o->src[o->n_t++] = (struct lx_gguf_src){NULL, n, dtype, read, ctx};
    o->data_bytes += (lx_dtype_bytes(dtype, (size_t)n) + ALIGN - 1) / ALIGN * ALIGN;
}

static int put_zeros(FILE *fp, size_t n)
{
    static const char zero[ALIGN];
    return n == 0 || fwrite(zero, 1, n, fp) == n;
}

/* Everything after the header: the tensors' bytes, each padded to ALIGN. */
static int put_data(FILE *fp, const struct lx_gguf_out *o)
{
    enum { CHUNK = LX_GGUF_CHUNK };
    unsigned char *buf = lx_xmalloc(4 * CHUNK);
    float *vals = lx_xmalloc(sizeof(float) * CHUNK);    /* a read tensor's values */
    int ok = 1;
    for (uint64_t i = 0; i < o->n_t && ok; i++) {
        const struct lx_gguf_src *s = &o->src[i];
        for (uint64_t at = 0; at < s->n && ok; at += CHUNK) {
            size_t k = (size_t)(s->n - at < CHUNK ? s->n - at : CHUNK);
            if (s->read)
                s->read(s->ctx, at, k, vals);
            lx_f32_to_type(buf, s->read ? vals : s->src + at, s->dtype, k);
            ok = fwrite(buf, 1, lx_dtype_bytes(s->dtype, k), fp) == lx_dtype_bytes(s->dtype, k);
        }
        size_t bytes = lx_dtype_bytes(s->dtype, (size_t)s->n);
        ok = ok && put_zeros(fp, (ALIGN - bytes % ALIGN) % ALIGN);
    }
    free(vals);
    free(buf);
    return ok;
}

/* The whole file, for lx_write_atomic. */
static int put_file(FILE *fp, void *ctx)
{
    const struct lx_gguf_out *o = ctx;
    uint32_t version = 3;
    uint64_t head_bytes = 4 + 4 + 8 + 8 + o->kv.len + o->ti.len;
    return fwrite("GGUF", 1, 4, fp) == 4 && fwrite(&version, 4, 1, fp) == 1 && fwrite(&o->n_t, 8, 1, fp) == 1 &&
           fwrite(&o->n_kv, 8, 1, fp) == 1 && fwrite(o->kv.s ? o->kv.s : "", 1, o->kv.len, fp) == o->kv.len &&
           fwrite(o->ti.s ? o->ti.s : "", 1, o->ti.len, fp) == o->ti.len &&
           put_zeros(fp, (size_t)((ALIGN - head_bytes % ALIGN) % ALIGN)) && put_data(fp, o);
}

int lx_gguf_out_write(const struct lx_gguf_out *o, const char *path, struct lx_error *err)
{
    return lx_write_atomic(path, put_file, (void *)o, err);
}
