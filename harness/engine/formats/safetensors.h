/*
** harness/engine/formats/safetensors.h - checkpoints in the safetensors format
** (https://github.com/huggingface/safetensors), so lenx weights open in
** PyTorch, numpy and the Hugging Face tools, and theirs open here.
**
** A file is: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON (the
** header), then the data buffer. The header is one object:
**
**   {"__metadata__": {"k": "v", ...},
**    "tensor.name": {"dtype": "F32", "shape": [a, b], "data_offsets": [begin, end]}, ...}
**
** with offsets relative to the start of the data buffer. lenx writes only F32
** (little-endian; the host must be little-endian too, asserted), pads the
** header with spaces so 8 + N is a multiple of 8, and reads any valid N.
** It reads F32, F16 and BF16 tensors (Hugging Face checkpoints are mostly
** half precision): lx_st_read converts to F32 as it reads, and a model used in
** place (hf_model.c) takes the file's read-only mapping (lx_st_take_map) and
** multiplies the tensors in their own type.
** Reading is strict: a malformed or surprising file is an error that names
** the file, what is wrong and where, never a guess.
*/
#ifndef LX_SAFETENSORS_H
#define LX_SAFETENSORS_H

#include <stddef.h>

#include "harness/core/half.h"
#include "harness/core/lx.h"

#define LX_ST_MAX_DIMS 4

struct lx_st_tensor {           /* one tensor to write */
    const char *name;
    int ndim;                   /* 0..LX_ST_MAX_DIMS */
    long shape[LX_ST_MAX_DIMS];
    const float *data;          /* prod(shape) floats */
};

/* Write atomically (path + ".tmp.<host>.<pid>", unique per writer, then rename) tensors in the given order
** and the metadata pairs meta[2i] = key, meta[2i+1] = value (n_meta pairs). If sha256_hex is not
** NULL, fill it (65 bytes) with the SHA-256 of the whole file's bytes. Errors name the path and errno text. */
int lx_st_write(const char *path, const struct lx_st_tensor *t, int n, const char *const *meta, int n_meta,
                char *sha256_hex, struct lx_error *err);

/* The same with tensor i's values given by rd[i].read(rd[i].ctx, at, k, out)
** while the file is written (t[i].data unused), k <= LX_ST_CHUNK at a time
** from value `at`: the caller holds no copy of them. */
#define LX_ST_CHUNK (1 << 16)
struct lx_st_reader {
    void (*read)(void *ctx, uint64_t at, size_t k, float *out);
    void *ctx;
};
int lx_st_write_read(const char *path, const struct lx_st_tensor *t, const struct lx_st_reader *rd, int n,
                     const char *const *meta, int n_meta, struct lx_error *err);

enum { LX_ST_F32, LX_ST_F16, LX_ST_BF16 };     /* the dtypes lenx reads */

/* LX_ST_* for a header's dtype string, -1 for one lenx does not read. */
int lx_st_dtype_of(const char *s);
const char *lx_st_dtype_name(int dtype);        /* "F32", "F16", "BF16" */
int lx_st_dtype_size(int dtype);                /* bytes per value */

/* The number type (harness/core/half.h, LX_DT_*) of an LX_ST_* dtype. */
int lx_st_dt(int dtype);
/* n values of dtype at src (little-endian) as floats; exact for all three (lx_half_to_f32). */
void lx_st_to_f32(float *out, const void *src, int dtype, size_t n);

struct lx_st_entry {            /* one tensor found in a file */
    char *name;                 /* its key in the header */
    int dtype;                  /* LX_ST_F32, LX_ST_F16 or LX_ST_BF16 */
    int ndim;                   /* 0..LX_ST_MAX_DIMS */
    long shape[LX_ST_MAX_DIMS]; /* (ndim,) sizes, the rest 0 */
    size_t begin, end;          /* byte range in the data buffer */
};

struct lx_st_file {
    const unsigned char *bytes; size_t n_bytes; /* the whole file, memory-mapped read-only */
    const unsigned char *data; size_t n_data; /* the data buffer inside bytes */
    struct lx_st_entry *entries; int n_entries; /* (n_entries,) sorted by data offset */
    char **meta; int n_meta;                /* meta[2i] key, meta[2i+1] value */
    char sha256[65];                        /* of the whole file */
    char *path;                             /* as given to lx_st_open, for messages */
    int fd;                                 /* the file open for reading tensors (lx_st_read) */
    int has_fd;                             /* 1 when fd is open */
};

/* Map and validate a file: header length sane (<= 100 MB and <= file size - 8), JSON well-formed,
** dtypes F32, F16 or BF16 (any other -> error naming tensor and dtype), shape non-negative ints,
** data_offsets within the buffer, end - begin == size(dtype) * prod(shape), no two tensors overlapping,
** __metadata__ values strings only. Every error says the path, what is wrong, and a hint.
** On error f is left zeroed, so lx_st_close(f) is harmless either way. */
int lx_st_open(struct lx_st_file *f, const char *path, struct lx_error *err);

/* A tensor's values as floats (converted into out, n floats), checked against the expected shape: error when
** missing ("no tensor 'x' in PATH; it has: a, b, ...") or when the shape differs (both shapes printed).
** shape is (ndim,); out holds prod(shape) floats. */
int lx_st_read(const struct lx_st_file *f, const char *name, int ndim, const long *shape, float *out,
               struct lx_error *err);

/* The entry of tensor name, checked against the expected shape as lx_st_read
** checks it; NULL and err when it is missing or shaped otherwise. */
const struct lx_st_entry *lx_st_entry_of(const struct lx_st_file *f, const char *name, int ndim, const long *shape,
                                         struct lx_error *err);
/* The whole file's read-only mapping, handed to the caller (munmap(p, *n)
** gives it back; lx_st_close leaves it mapped). Weights used in place point
** into it: f->data + entry->begin. */
void *lx_st_take_map(struct lx_st_file *f, size_t *n);

const char *lx_st_meta(const struct lx_st_file *f, const char *key);   /* NULL when absent */

/* Free everything lx_st_open allocated and zero f; safe on a zeroed struct. */
void lx_st_close(struct lx_st_file *f);

#endif
