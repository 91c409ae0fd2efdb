/*
** harness/engine/formats/gguf_impl.h - what the GGUF reader (gguf_model.c) and
** writer (gguf_export.c) share: llama.cpp's architectures lenx knows and the
** tensor names. Internal to the formats room.
*/
#ifndef LX_GGUF_IMPL_H
#define LX_GGUF_IMPL_H

#include <stddef.h>

/* An architecture lenx reads and writes: what it adds to llama's, and its rotary layout. */
struct lx_gguf_family {
    const char *name;
    int qkv_bias, qk_norm, half;
    int fused;      /* q|k|v in one attn_qkv, gate|up in one ffn_up; LongRoPE's factors as tensors */
    int gemma;      /* 1 gemma, 2 gemma2, 3 gemma3: Gemma's block (gguf_model.c's gemma_arch) */
    int neox;       /* 1 gptneox, 2 bloom, 3 mpt, 4 falcon, 5 phi2: LayerNorms, q|k|v in one attn_qkv or three (read
                    ** only) */
};

#define LX_GGUF_N_FAMILIES 12
/* llama, qwen2, qwen3, phi3, gemma, gemma2, gemma3, gptneox, bloom, mpt, falcon, phi2. */
extern const struct lx_gguf_family lx_gguf_families[LX_GGUF_N_FAMILIES];

/* lenx's name of a tensor ("layers.3.attn.wq.weight") -> llama.cpp's ("blk.3.attn_q.weight") into out. */
void lx_gguf_tensor_name(const char *lenx, char *out, size_t n);

#endif
