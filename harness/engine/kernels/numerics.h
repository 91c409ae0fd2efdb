/*
** harness/engine/kernels/numerics.h - the process's settings the kernels and
** the model read: which arithmetic a run uses, and the attention path of
** training passes (below).
**
** fast: OpenBLAS as the machine picks it (its kernels, blockings and thread
** split decide the last bits). portable: every product and every sum in a
** fixed order, so a result is the same bits on any x86-64 machine with AVX2,
** for any thread count and any OPENBLAS_CORETYPE. bf16: every weight product
** and both products of the tiled attention take bf16 operands and sum in
** fp32 (oneDNN for the weights, kernels/dnnl.h); norms, softmax statistics,
** the residual stream and the logits stay fp32. Set once per process,
** before the first pass (a run resolves it from the sweep or the command
** line); the kernels read it.
*/
#ifndef LX_NUMERICS_H
#define LX_NUMERICS_H

enum lx_numerics { LX_NUMERICS_FAST = 0, LX_NUMERICS_PORTABLE = 1, LX_NUMERICS_BF16 = 2 };
#define LX_NUMERICS_N 3

void lx_numerics_set(enum lx_numerics n);
enum lx_numerics lx_numerics_get(void);

/* "fast", "portable" or "bf16". */
const char *lx_numerics_name(enum lx_numerics n);

/* 0 and *out on "fast", "portable" or "bf16", -1 on anything else. */
int lx_numerics_parse(const char *s, enum lx_numerics *out);

/* ---- the KV cache's number type ---- */

/* `kv_cache:` (--kv-cache, any numerics) the number type the decoding tasks'
** KV cache keeps keys and values in, as harness/core/half.h's types:
** LX_DT_F32 (0, the default) as computed; LX_DT_BF16 or LX_DT_F16 half the
** bytes, rounded to nearest even when stored and widened as decoding reads
** them (f16, llama.cpp's default cache type, keeps 3 more mantissa bits than
** bf16 but only |x| <= 65504: a larger value is a run error, decoding.h). Set
** once per process, before a cache is allocated. */
void lx_kv_set(int dt);
int lx_kv_get(void);
/* "fp32", "bf16" or "f16". */
const char *lx_kv_name(int dt);
/* 0 and *dt on "fp32", "bf16" or "f16", -1 on anything else. */
int lx_kv_parse(const char *s, int *dt);

/* ---- the activations of weight products ---- */

/* `activations: llamacpp` (--activations llamacpp; fast or portable
** numerics): before each product with a weight matrix, x is rounded as
** llama.cpp's CPU backend rounds it (kernels/qdot8.h: 8-bit blocks for
** quantized weights, f16 or bf16 for half weights, fp32 weights untouched),
** so a GGUF file's numbers come near llama.cpp's own; fp32 (0, the default)
** multiplies x as computed. Set once per process, before the first pass. */
void lx_acts_llamacpp_set(int on);
int lx_acts_llamacpp_get(void);
/* 0 and *on on "fp32" or "llamacpp", -1 on anything else. */
int lx_acts_parse(const char *s, int *on);
/* The half type (LX_DT_BF16 or LX_DT_F16) an evaluation pass's attention
** rounds its operands to as llama.cpp's attention over its KV cache does
** (q, k and v, and the normalised probabilities before P·V): the cache's
** type under activations: llamacpp, else 0 (fp32 operands). */
int lx_attn_half(void);
/* The error message of the mode with numerics n (llamacpp with bf16, which rounds x itself), or NULL. */
const char *lx_acts_conflict(enum lx_numerics n, int llamacpp);

/* ---- the attention path of training passes ---- */

/* Which attention training runs (docs/PERFORMANCE.md, "Tiled attention"):
** tiled, the default (the forward keeps each row's log-sum-exp, the backward
** recomputes probabilities tile by tile: O(T·d) memory), or materialised
** (every head's T × T probabilities saved for the backward: the reference,
** forced by LENX_TRAIN_ATTENTION=materialised, which the command line reads
** once at start-up). Set once per process, before the first pass; tests and
** the benchmark set it to compare the two. */
enum lx_train_attn { LX_TRAIN_TILED = 0, LX_TRAIN_MATERIALISED = 1 };
void lx_train_attn_set(enum lx_train_attn m);
enum lx_train_attn lx_train_attn_get(void);
/* 0 and *out on "tiled" or "materialised" (or "materialized"), -1 on anything else. */
int lx_train_attn_parse(const char *s, enum lx_train_attn *out);

#endif
