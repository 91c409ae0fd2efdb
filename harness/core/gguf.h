/*
** harness/core/gguf.h - the GGUF container (llama.cpp's model files):
** its header, metadata and tensor table, read from a mapped file and checked
** before anything is used (docs/checkpoints.md#gguf).
**
** The file, little-endian, versions 2 and 3:
**
**     magic "GGUF", u32 version, u64 n_tensors, u64 n_kv,
**     n_kv x (string key, u32 type, value),
**     n_tensors x (string name, u32 n_dims, n_dims x u64 ne, u32 type, u64 offset),
**     padding to general.alignment (32 unless set), then the tensor data;
**
** a string is a u64 length and its bytes; a value is a scalar of its type,
** a string, or an array (u32 element type, u64 count, the elements). Every
** length, count and offset is checked against the bytes that are there, and
** every size product against overflow; an error names the file and the field
** (the key, or the tensor and what about it is wrong).
*/
#ifndef LX_GGUF_H
#define LX_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "harness/core/lx.h"

enum lx_gguf_vtype {
    LX_GGUF_U8, LX_GGUF_I8, LX_GGUF_U16, LX_GGUF_I16, LX_GGUF_U32, LX_GGUF_I32, LX_GGUF_F32, LX_GGUF_BOOL,
    LX_GGUF_STRING, LX_GGUF_ARRAY, LX_GGUF_U64, LX_GGUF_I64, LX_GGUF_F64, LX_GGUF_NVTYPES
};

/* Tensor types lenx knows the layout of (ggml's numbering). */
enum lx_gguf_ttype {
    LX_GGML_F32 = 0, LX_GGML_F16 = 1, LX_GGML_Q4_0 = 2, LX_GGML_Q4_1 = 3, LX_GGML_Q5_0 = 6, LX_GGML_Q5_1 = 7,
    LX_GGML_Q8_0 = 8, LX_GGML_Q2_K = 10, LX_GGML_Q3_K = 11, LX_GGML_Q4_K = 12, LX_GGML_Q5_K = 13, LX_GGML_Q6_K = 14,
    LX_GGML_IQ2_XXS = 16, LX_GGML_IQ2_XS = 17, LX_GGML_IQ3_XXS = 18, LX_GGML_IQ1_S = 19, LX_GGML_IQ4_NL = 20,
    LX_GGML_IQ3_S = 21, LX_GGML_IQ2_S = 22, LX_GGML_IQ4_XS = 23, LX_GGML_IQ1_M = 29, LX_GGML_BF16 = 30, LX_GGML_TQ1_0 = 34,
    LX_GGML_TQ2_0 = 35,
};

struct lx_gguf_kv {
    const char *key;            /* NUL-terminated copy */
    enum lx_gguf_vtype type;
    union {
        uint64_t u;
        int64_t i;
        double f;
    } v;                        /* a scalar (bool as u) */
    const char *str;            /* a string: its bytes in the mapping (not NUL-terminated) */
    uint64_t str_len;
    enum lx_gguf_vtype arr_type;    /* an array: its elements' type, count and first byte */
    uint64_t arr_n;
    const unsigned char *arr;
};

struct lx_gguf_tensor {
    const char *name;           /* NUL-terminated copy */
    int n_dims;
    uint64_t ne[4];             /* ne[0] varies fastest: a (rows, cols) matrix has ne = {cols, rows} */
    int type;                   /* enum lx_gguf_ttype */
    uint64_t n_elems, bytes;
    const unsigned char *data;  /* in the mapping */
};

struct lx_gguf {
    const char *name;           /* the file, for messages */
    const unsigned char *bytes; /* the whole file */
    size_t size;
    uint32_t version;
    struct lx_gguf_kv *kv;
    long n_kv;
    struct lx_gguf_tensor *t;
    long n_t;
    uint64_t alignment;
    char *strings;              /* the keys' and names' NUL-terminated copies */
};

/* Parse n bytes (kept by the caller while g is used); name is for messages. */
/* 1 when the file at path begins with GGUF's magic (a cheap sniff, no parse). */
int lx_gguf_file(const char *path);
int lx_gguf_parse(struct lx_gguf *g, const unsigned char *bytes, size_t n, const char *name, struct lx_error *err);
void lx_gguf_release(struct lx_gguf *g);
/* The tensor types' names ("F32", "Q4_K"), NULL for a type lenx does not know. */
const char *lx_gguf_ttype_name(int type);

const struct lx_gguf_kv *lx_gguf_find(const struct lx_gguf *g, const char *key);
const struct lx_gguf_tensor *lx_gguf_tensor(const struct lx_gguf *g, const char *name);
/* A key's value as an integer (any integer type) or a number (also floats);
** LX_EINVAL naming the file and key when absent (required) or of another kind.
** *out is left as is when the key is absent and not required. */
int lx_gguf_get_int(const struct lx_gguf *g, const char *key, int required, int64_t *out, struct lx_error *err);
int lx_gguf_get_num(const struct lx_gguf *g, const char *key, int required, double *out, struct lx_error *err);
/* A string key into out (n bytes, NUL-terminated, cut); "" when absent. */
void lx_gguf_get_str(const struct lx_gguf *g, const char *key, char *out, size_t n);

/* ---- writing ----------------------------------------------------------- */

/* A GGUF v3 file being put together: metadata in the order given, then
** tensors, each converted from floats to its type as the file is written
** (the floats must stay valid until lx_gguf_out_write). Alignment 32. */
struct lx_gguf_out {
    struct lx_buf kv, ti;       /* the metadata and tensor-table bytes so far */
    uint64_t n_kv, n_t, data_bytes;
    struct lx_gguf_src {
        const float *src;       /* values, ne[0] fastest; NULL: read gives them */
        uint64_t n;
        int dtype;              /* enum lx_dtype to write them as */
        void (*read)(void *ctx, uint64_t at, size_t k, float *out);
        void *ctx;
    } *src;                     /* (n_t,) */
};

void lx_gguf_out_init(struct lx_gguf_out *o);
void lx_gguf_out_free(struct lx_gguf_out *o);
void lx_gguf_put_str(struct lx_gguf_out *o, const char *key, const char *s);
void lx_gguf_put_u32(struct lx_gguf_out *o, const char *key, uint32_t v);
void lx_gguf_put_i32(struct lx_gguf_out *o, const char *key, int32_t v);
void lx_gguf_put_f32(struct lx_gguf_out *o, const char *key, float v);
void lx_gguf_put_bool(struct lx_gguf_out *o, const char *key, int v);
/* An array of n scalars of type t (not STRING or ARRAY), packed at v. */
void lx_gguf_put_arr(struct lx_gguf_out *o, const char *key, enum lx_gguf_vtype t, uint64_t n, const void *v);
/* An array of n strings: s[i] of len[i] bytes (len NULL: NUL-terminated). */
void lx_gguf_put_strs(struct lx_gguf_out *o, const char *key, uint64_t n, const char *const *s, const size_t *len);
/* A tensor of n_dims (1 or 2) sizes ne (ne[0] varies fastest) from the floats
** at src, written as dtype (enum lx_dtype: F32, F16, BF16, Q8_0; ne[0] a whole
** number of its blocks). */
void lx_gguf_put_tensor(struct lx_gguf_out *o, const char *name, int n_dims, const uint64_t *ne, const float *src,
                        int dtype);
/* The same with the values given by read(ctx, at, k, out) while the file is
** written, k <= LX_GGUF_CHUNK at a time from value `at`: no copy of the
** tensor is held (ctx must stay valid until lx_gguf_out_write). */
#define LX_GGUF_CHUNK (1 << 16)     /* values converted at a time: a whole number of every type's blocks */
void lx_gguf_put_tensor_fn(struct lx_gguf_out *o, const char *name, int n_dims, const uint64_t *ne,
                           void (*read)(void *ctx, uint64_t at, size_t k, float *out), void *ctx, int dtype);
/* The file, written to a temporary beside path and renamed over it (never
** half a file at path); errors name path and what failed. */
int lx_gguf_out_write(const struct lx_gguf_out *o, const char *path, struct lx_error *err);

#endif
