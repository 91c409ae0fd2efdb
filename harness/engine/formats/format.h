/*
** harness/engine/formats/format.h - what every model format and the dispatcher
** share, below both: the facts a load reports (struct lx_ckpt_info), the
** descriptor a format registers with (struct lx_model_format, one line in
** formats.def), and helpers for the loaders. Includes core and the model's
** public header.
*/
#ifndef LX_FORMAT_H
#define LX_FORMAT_H

#include "harness/engine/model/model.h"

/* The most blocks a model file may hold (the largest open models have 126;
** a model lenx trains holds at most 64, arch.c). */
#define LX_FMT_MAX_LAYERS 1024

struct lx_ckpt_info {
    char format[16];        /* the format's name (formats.def): "lenx", "llama2c", "hf" */
    char dtype[16];         /* of the weights on disk: "F32", "F16", "BF16" or "mixed" */
    char *model_key;        /* "" for checkpoints lenx did not train */
    char *stack;            /* training-time stack, YAML flow list ("[]" when none); for a model
                            ** made elsewhere its native position scheme (docs/checkpoints.md#native-stacks) */
    char *eval_stack;       /* evaluation-time part of a native scheme (HF rope_scaling dynamic), or NULL */
    char *scaling;          /* HF: rope_scaling as the config writes it (JSON), or NULL */
    char *tokenizer;        /* a tokenizer file found beside the model, or NULL; on save, the file of the
                            ** tokenizer the model was trained on (copied beside it), NULL for bytes */
    char tokenizer_sha256[65];  /* the hash of the tokenizer a lenx model was trained on
                                ** (lenx_tokenizer_sha256); "" for bytes and other formats */
    long kv_heads;          /* key/value heads on disk (= heads unless grouped-query) */
    int tied;               /* the file ties the output head to the embedding */
    char *train_json;       /* training config, JSON ("{}" when unknown) */
    long train_len;         /* training length */
    int begin_text;         /* trained on windows without a start token (a lenx checkpoint's begin: text) */
    char sha256[65];        /* of the file */
    char weights_sha256[65];/* of the weights as F32 in lenx's tensor order: for a lenx file its data
                            ** buffer, embedded as lenx_weights_sha256 */
    int embedded_hash;      /* on load: the file carried lenx_weights_sha256 (older ones do not) */
    int threads;            /* OpenMP threads of the training run, lenx_threads (0 = unknown) */
    char numerics[16];      /* the arithmetic of the training run: "portable" is written as lenx_numerics, "fast"
                            ** (the default) is not; on load "fast" for a lenx file without it, "" for other formats */
    char *lineage;          /* a fine-tuned lenx model's lenx_lineage, JSON {"base":KEY,"length":L,
                            ** "steps":N,"tokens":T}; NULL for every other model */
};

/* A model format: one `const struct lx_model_format lx_model_format_<name>` in its own
** file, one line LX_FORMAT(<name>) in formats.def. lx_model_load tries the
** formats in the .def's order and reads the path with the first whose sniff
** takes it. */
struct lx_model_format {
    const char *name;       /* "lenx", "llama2c", "hf": info->format and the symbol's suffix */
    const char *summary;    /* one line for docs and errors */
    const char *key;        /* the key naming such a path under a model in a sweep file ("hf"), or
                            ** NULL when `checkpoint:` names it */
    int dir;                /* 1: the path is a directory (a sweep's key checks it) */
    /* 1 when path looks like this format (cheap: a stat or a few bytes) */
    int (*sniff)(const char *path);
    /* Read path into m (allocated here) and info (NULL: not wanted; zeroed
    ** by the caller); on failure nothing is left allocated and err names the
    ** file and what is wrong with it. */
    int (*load)(struct lx_model *m, const char *path, struct lx_ckpt_info *info, struct lx_error *err);
};

/* For loaders that use one file's mapping (bytes, n) in place: m holds
** arch a with its tensors where held->t says, and takes the mapping. */
struct lx_held;
void lx_model_hold_map(struct lx_model *m, const struct lx_arch *a, struct lx_held *held, const unsigned char *bytes,
                       size_t n);

/* For loaders of other formats: info's format and dtype set, the strings lenx
** checkpoints carry made empty ("" key, "{}" training, no stack yet). */
void lx_ckpt_info_native(struct lx_ckpt_info *info, const char *format, const char *dtype);
void lx_ckpt_info_release(struct lx_ckpt_info *info);
/* SHA-256 of m's weights as F32 in tensor order (= a lenx file's data buffer). */
void lx_model_weights_hash(const struct lx_model *m, char out[65]);

/* lx_model_weights_hash of m loaded by format from files whose content hash
** is content: remembered under that content hash (the engine's weights are
** a function of the file's bytes), computed on a miss. */
void lx_model_weights_hash_of(const struct lx_model *m, const char *format, const char *content, char out[65]);

/* The tokenizer a loaded model reads text with: the file `path` (a
** --tokenizer or `tokenizer:` given, else the one found beside the model;
** NULL: *out = NULL, the byte tokenizer). A model that records the tokenizer
** it was trained on (info->tokenizer_sha256) refuses one with another hash,
** and refuses bytes when its copy is not beside it. Errors name the file. */
struct lx_tokenizer;
int lx_ckpt_tokenizer(const struct lx_ckpt_info *info, const char *path, struct lx_tokenizer **out,
                      struct lx_error *err);

/* The one check of a model against the tokenizer it reads text with (tk;
** NULL = the byte tokenizer), shared by score, generate, export and the
** plan's checkpoint entries: without a tokenizer the vocabulary must be the
** byte tokenizer's (else ids 260 and up would be read as bytes, or printed as
** nothing), the tokenizer's ids must fit the vocabulary (it may be padded past
** them), and a window needs a first token (BOS, else EOS). who names the model
** in the message ("model 'v'", a path); how is the hint's way of naming a
** tokenizer ("--tokenizer PATH"). *at_tokenizer (may be NULL) is set when the
** tokenizer, not the model, is at fault. */
int lx_ckpt_check_tokenizer(long vocab, const struct lx_tokenizer *tk, const char *who, const char *how,
                            int *at_tokenizer, struct lx_error *err);

/* ---- for exporters ---- */

/* The positions of a model's training stack that another format can hold:
** exactly [rope] (any base and layout), or, when the format can say so,
** rope followed by a trained-in rescaling with a fixed scale (pi: "linear";
** yarn: "yarn"; llama3: "llama3"). */
struct lx_stack_rope {
    double base;
    int interleaved;        /* rope layout interleaved (else half) */
    char scaling[9];        /* "", "linear", "yarn", "llama3" or "longrope" */
    double factor;          /* the rescaling's s */
    long original;          /* yarn's, llama3's and longrope's L */
    double beta_fast, beta_slow, attn_factor;
    int truncate;           /* yarn's floor/ceil of the ramp */
    double low, high;       /* llama3's low_freq_factor and high_freq_factor */
    struct lx_floats lng, shrt;     /* longrope's long_factor and short_factor ([]: all 1) */
    long dims;              /* rope's channels turned (partial rotary); 0 = the whole head */
    double attention;       /* longrope's attention factor, resolved (the automatic one made concrete) */
};

enum { LX_ROPE_SCALED = 1, LX_ROPE_LONGROPE = 2 };     /* lx_stack_rope_of's `scaled` */

/* The longrope method trained in, as the native stack's item after rope
** (",{\"longrope\":{...}}") appended to b: s, L, both lists (the loaders
** have checked them, one factor per rotary pair), the attention factor when
** above 0 (else the method's own). */
void lx_stack_put_longrope(struct lx_buf *b, double s, long L, const struct lx_floats *lng,
                           const struct lx_floats *shrt, double attention);

/* What an exporter to `target` (transformers' Llama, llama.cpp's llama) refuses of an architecture:
** a learned relative bias, a masked LM, learned logit scales, a GELU MLP (Gemma's block, GeGLU's,
** is lx_export_gemma_kind's to check). LX_EINVAL naming the part. */
int lx_export_arch_check(const struct lx_arch *a, const char *target, struct lx_error *err);
/* Which Gemma a's block is (both exporters write it as that model): 0 no Gemma block (no
** lx_arch_gemma_part), 3 Gemma 3
** (post-norms and q/k norms), 2 Gemma 2 (post-norms, every other layer local at the global rope's
** base), 1 Gemma (neither); each with GeGLU, the embedding scale, rope half over the whole head and
** no biases. LX_EINVAL naming what none of them has (err may be NULL). */
int lx_export_gemma_kind(const struct lx_arch *a, const struct lx_stack_rope *rope, struct lx_error *err);

/* Gemma's local layers from one flag a layer (global[l] != 0: layer l is global), as a config's
** layer_types or a GGUF file's sliding_window_pattern array gives them: k, the first global layer's
** index + 1, with *bad the first layer where "global exactly when (l + 1) % k == 0" fails (-1: none);
** 0 when no layer is global. */
long lx_local_pattern(const unsigned char *global, long n, long *bad);

/* stack (YAML flow list) as a struct lx_stack_rope; `scaled` (LX_ROPE_*)
** allows pi, yarn and llama3 after rope, and longrope too. Anything else is
** LX_EINVAL naming target (the format, "transformers' Llama") and what it
** can hold. */
int lx_stack_rope_of(const char *stack, int scaled, const char *target, struct lx_stack_rope *r,
                     struct lx_error *err);

/* Llama 3.1's factor for the rotary pair of wavelength λ = 2π/θ (the
** frequency becomes θ/factor): 1 below L/high, s above L/low, and on the ramp
** between 1/((1 − sm)/s + sm), sm = (L/λ − low)/(high − low) — as methods/llama3.c
** applies it and as llama.cpp's rope_freqs.weight holds it (docs/methods.md#llama3). */
double lx_llama3_factor(double s, double L, double low, double high, double wavelength);

/* One tensor of a model read a chunk at a time while a writer writes it
** (lenx export: no fp32 copy of the model; a held bf16 model of 8B
** parameters exports in the memory of its mapping). */
struct lx_tensor_reader {
    const struct lx_model *m;
    const struct lx_tensor_info *t;
    int i, to_half;         /* q/k rows of each head in the other rotary layout: 1 interleaved pairs
                            ** (2k, 2k+1) to halves (k, k + D/2), transformers' convert_llama_weights_to_hf
                            ** permute; 0 the inverse, llama.cpp's converter's permute; -1 as they are */
    long cols, D;
    float add;              /* added to every value read (Gemma's gains are stored as w of 1 + w: -1) */
    float *rows;            /* (chunk / cols + 2) rows; the caller frees it */
};
/* Phi-3's fused matrices: lenx's wq, wk, wv are rows [0, H·D), [H·D, (H + KV)·D), [(H + KV)·D,
** (H + 2KV)·D) of one q|k|v tensor, w1 and w3 rows [0, F) and [F, 2F) of one gate|up tensor (the
** gate first). For such a tensor of lenx's (name, "layers.L.attn.wq.weight"): 1 with its layer,
** which fused tensor (0 q|k|v, 1 gate|up), the part's first row and the fused tensor's rows; 0 for
** any other tensor. */
int lx_fused_part(const struct lx_arch *a, const char *name, long *layer, int *which, long *row0, long *rows);
/* 1 for the tensors whose rows follow the rotary layout head by head: the q and k
** projections, their biases and qk_norm's gains ("layers.L.attn.wq.weight", ...). */
int lx_tensor_is_qk(const char *name);
/* r for tensor i of m (t its entry of lx_arch_tensors), read at most chunk values at a time. */
void lx_tensor_reader_init(struct lx_tensor_reader *r, const struct lx_model *m, const struct lx_tensor_info *t,
                           int i, int to_half, long chunk);
/* k values of the tensor from value `at` (row-major) into out: a writer's read callback, ctx a reader. */
void lx_tensor_read(void *ctx, uint64_t at, size_t k, float *out);

/* A fused tensor (Phi-3's q|k|v or gate|up, lx_fused_part) read from lenx's parts in order. */
struct lx_fused_reader {
    struct lx_tensor_reader *part[3];
    int n;
};
/* For tensor i of ti (n tensors, rd their readers): 1 when it begins a fused tensor (fr its parts'
** readers; *layer and *which as lx_fused_part, *rows the fused tensor's rows), 0 when it is a later
** part of one, -1 when it is no part of one. */
int lx_fused_reader_of(const struct lx_arch *a, const struct lx_tensor_info *ti, int n, struct lx_tensor_reader *rd,
                       int i, struct lx_fused_reader *fr, long *layer, int *which, long *rows);
/* lx_tensor_read over a fused tensor: ctx a struct lx_fused_reader. */
void lx_fused_read(void *ctx, uint64_t at, size_t k, float *out);


#endif
