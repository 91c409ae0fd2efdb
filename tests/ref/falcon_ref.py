#!/usr/bin/env python3
"""Random-weight Falcon Hugging Face directories in bf16, and torch's logits and gradients on them.

    falcon_ref.py DIR                 writes DIR/{config.json, model.safetensors, ref.json}: Falcon-7B's block
    falcon_ref.py --new DIR           the same for Falcon-40B/180B's (new_decoder_architecture)
    falcon_ref.py --sequential DIR    the same for a multi-head block with biases and the sequential residual
    falcon_ref.py --rw DIR            the same block with Falcon-RW's ALiBi (alibi true) in place of rope

The configs are FalconConfig's (model_type falcon, as tiiuae/falcon-7b's config.json spells it), shrunk to
2 layers of width 48, 6 heads of 8, rope_theta 5000, vocabulary 96:
  * default (Falcon-7B): multi_query (one key/value head), parallel_attn with one LayerNorm
    (input_layernorm) feeding both branches, bias false, ffn_hidden_size absent (4 x the width), tied;
  * --new (Falcon-40B/180B): new_decoder_architecture, num_kv_heads 2, ln_attn and ln_mlp (
    num_ln_in_parallel_attn absent: 2), untied (an lm_head, unlike the real ones, so that the loader's
    untied path is seen);
  * --sequential: multi_query false and parallel_attn false (post_attention_layernorm), bias true,
    ffn_hidden_size 96;
  * --rw (Falcon-RW-1B/7B): that block with alibi true and no rope.
Weights are drawn from torch's generator seeded 0 and stored BF16, the norms' gains near 1, every
LayerNorm's shift (and with bias every product's bias) random.

ref.json holds, for a window of 32 token ids and one of 48, the per-token NLL of the next token and the
last position's logits, and ("grad") the gradient of the first window's mean NLL with respect to every
tensor (its norm, and its values at 24 indices spread over it). All from a forward written here in
float64 on the bf16 weights upcast, from transformers' modeling_falcon conventions: LayerNorm with its
shift; query_key_value's rows as (kv groups, heads per group + 2, head_dim): a group's query heads, then
its key and its value head (FalconAttention._split_heads; multi_query: one group; a multi-head model: a
group a head); rotate_half over the whole head at rope_theta; scores q.k / sqrt(head_dim), causal; with
alibi, no rotation and scores (q.k + slope_h * j) / sqrt(head_dim) for key j (FalconAttention adds
build_alibi_tensor's bias before the scaling; the slopes are BLOOM's, 2^(-8k/n) for n the power of two
at or below the heads, then the odd powers of 2^(-4/n) for the rest); dense;
the MLP dense_4h_to_h(gelu(dense_h_to_4h(h))), exact GELU; parallel: x + attn(n_a(x)) + mlp(n_m(x)) with
n_m = n_a under one LayerNorm, else x + attn, then + mlp of post_attention_layernorm; ln_f; the head
(word_embeddings when tied). It shares no code with lenx. tests/test_falcon.c compares lenx's forward,
decoding and backward with it. Needs Debian's python3-torch.
"""
import math
import sys

import torch

from bloom_ref import slopes     # build_alibi_tensor's, which Falcon-RW's ALiBi is
from gemma_ref import draw, rotate_half, write_tiny     # the same file format, the same windows and gradient picks

FALCON = dict(architectures=["FalconForCausalLM"], model_type="falcon", hidden_size=48, num_attention_heads=6,
              num_hidden_layers=2, multi_query=True, parallel_attn=True, new_decoder_architecture=False,
              bias=False, alibi=False, activation="gelu", layer_norm_epsilon=1e-5, rope_theta=5000.0,
              rope_scaling=None, max_position_embeddings=64, vocab_size=96, bos_token_id=11, eos_token_id=11,
              attention_dropout=0.0, hidden_dropout=0.0, apply_residual_connection_post_layernorm=False,
              initializer_range=0.02, use_cache=True, torch_dtype="bfloat16")
NEW = dict(FALCON, new_decoder_architecture=True, num_kv_heads=2, tie_word_embeddings=False)
SEQUENTIAL = dict(FALCON, multi_query=False, parallel_attn=False, bias=True, ffn_hidden_size=96)
RW = dict(SEQUENTIAL, alibi=True)
LENGTHS = (32, 48)


def groups(c):
    """FalconAttention's key/value heads: num_kv_heads with new_decoder_architecture, else 1 or the heads."""
    if c["new_decoder_architecture"]:
        return c["num_kv_heads"]
    return 1 if c["multi_query"] else c["num_attention_heads"]


def norms(c):
    """The LayerNorms of a layer: (the attention's, the MLP's or None when it reads the attention's)."""
    if c["new_decoder_architecture"]:
        return "ln_attn", "ln_mlp"
    return "input_layernorm", None if c["parallel_attn"] else "post_attention_layernorm"


def shapes(c):
    C, H, KV = c["hidden_size"], c["num_attention_heads"], groups(c)
    F, D, b = c.get("ffn_hidden_size", 4 * C), C // H, c["bias"]
    yield "transformer.word_embeddings.weight", (c["vocab_size"], C), 0.3
    for l in range(c["num_hidden_layers"]):
        p = f"transformer.h.{l}."
        for n in norms(c):
            if n:
                yield p + n + ".weight", (C,), None
                yield p + n + ".bias", (C,), 0.1
        for name, rows, cols in (("self_attention.query_key_value", (H + 2 * KV) * D, C),
                                 ("self_attention.dense", C, C), ("mlp.dense_h_to_4h", F, C),
                                 ("mlp.dense_4h_to_h", C, F)):
            yield p + name + ".weight", (rows, cols), cols ** -0.5
            if b:
                yield p + name + ".bias", (rows,), 0.1
    yield "transformer.ln_f.weight", (C,), None
    yield "transformer.ln_f.bias", (C,), 0.1
    if not c.get("tie_word_embeddings", True):
        yield "lm_head.weight", (c["vocab_size"], C), C ** -0.5


def forward(c, W, ids):
    """Logits (T, V) of one window from the float64 weights W."""
    H, C, eps, KV = c["num_attention_heads"], c["hidden_size"], c["layer_norm_epsilon"], groups(c)
    D, T = C // H, ids.shape[0]
    pos = torch.arange(T, dtype=torch.float64)
    inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    ang = pos[:, None] * inv[None, :]
    cos, sin = torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()
    causal = torch.where(pos[None, :] > pos[:, None], float("-inf"), 0.0)
    if c["alibi"]:
        cos, sin = torch.ones_like(cos), torch.zeros_like(sin)     # no rotation
        causal = causal + slopes(H)[:, None, None] * pos[None, None, :]
    n_attn, n_mlp = norms(c)

    def ln(x, p):
        return torch.nn.functional.layer_norm(x, (C,), weight=W[p + ".weight"], bias=W[p + ".bias"], eps=eps)

    def lin(x, p):
        y = x @ W[p + ".weight"].T
        return y + W[p + ".bias"] if p + ".bias" in W else y

    x = W["transformer.word_embeddings.weight"][ids]
    for l in range(c["num_hidden_layers"]):
        p = f"transformer.h.{l}."
        h_attn = ln(x, p + n_attn)
        qkv = lin(h_attn, p + "self_attention.query_key_value").view(T, KV, H // KV + 2, D)
        q = qkv[:, :, :-2].reshape(T, H, D).transpose(0, 1)
        k = qkv[:, :, -2].repeat_interleave(H // KV, dim=1).transpose(0, 1)   # head h reads group h // (H / KV)
        v = qkv[:, :, -1].repeat_interleave(H // KV, dim=1).transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if c["alibi"]:      # the bias joins the scores before the 1/sqrt(D)
            a = torch.softmax((q @ k.transpose(1, 2) + causal) / math.sqrt(D), dim=-1) @ v
        else:
            a = torch.softmax((q @ k.transpose(1, 2)) / math.sqrt(D) + causal, dim=-1) @ v
        a = lin(a.transpose(0, 1).reshape(T, C), p + "self_attention.dense")

        def mlp(h):
            return lin(torch.nn.functional.gelu(lin(h, p + "mlp.dense_h_to_4h")), p + "mlp.dense_4h_to_h")
        if c["new_decoder_architecture"] or c["parallel_attn"]:
            x = x + a + mlp(ln(x, p + n_mlp) if n_mlp else h_attn)
        else:
            x = x + a
            x = x + mlp(ln(x, p + n_mlp))
    head = W["lm_head.weight"] if "lm_head.weight" in W else W["transformer.word_embeddings.weight"]
    return ln(x, "transformer.ln_f") @ head.T


def main():
    args = sys.argv[1:]
    new, seq, rw = args[:1] == ["--new"], args[:1] == ["--sequential"], args[:1] == ["--rw"]
    if len(args) != 1 + (new or seq or rw):
        sys.exit(__doc__)
    config = NEW if new else SEQUENTIAL if seq else RW if rw else FALCON
    gen = torch.Generator().manual_seed(0)
    write_tiny(args[-1], config, draw(shapes(config), gen), gen, "falcon_ref.py", forward)


if __name__ == "__main__":
    main()
