#!/usr/bin/env python3
"""A random-weight GPT-NeoX (Pythia) Hugging Face directory in bf16, and torch's logits and gradients on it.

    neox_ref.py DIR                 writes DIR/{config.json, model.safetensors, ref.json}
    neox_ref.py --sequential DIR    the same block with use_parallel_residual false

The config is Pythia's (model_type gpt_neox, as EleutherAI/pythia-*'s config.json spells it: rotary_pct,
rotary_emb_base, use_parallel_residual true, hidden_act gelu, untied embed_out), shrunk: 2 layers of width
48, 4 heads of 12, rotary_pct 0.5 (rope turns the first 6 channels of a head, as Pythia's 0.25 turns 32 of
128), rotary_emb_base 5000, intermediate_size 96, vocabulary 96. Weights are drawn from torch's generator
seeded 0 and stored BF16, the norms' gains near 1, every bias (the norms' shifts too) random, in the
layout of GPT-NeoX's checkpoints: attention.query_key_value holds, head by head, that head's q, k and v
rows ((heads, 3, head_size) along its rows).

ref.json holds, for a window of 32 token ids and one of 48, the per-token NLL of the next token and
the last position's logits; and ("grad") the gradient of the first window's mean NLL with respect to
every tensor (its norm, and its values at 24 indices spread over it). All from a forward written here in
float64 on the bf16 weights upcast, from transformers' modeling_gpt_neox conventions: LayerNorm with
its shift; q, k, v split per head from query_key_value; rotate_half on the first rotary_ndims channels
of q and k (inv_freq over rotary_ndims), the rest passed through; scores q.k / sqrt(head_size), causal;
attention.dense with its bias; parallel: x + attn(ln1(x)) + mlp(ln2(x)), else x + attn, then + mlp of
its ln2; mlp dense_4h_to_h(gelu(dense_h_to_4h(h))), exact GELU; final_layer_norm; embed_out. It shares
no code with lenx. tests/test_neox.c compares lenx's forward, decoding and backward with it. Needs
Debian's python3-torch.
"""
import math
import sys

import torch

from gemma_ref import draw, rotate_half, write_tiny     # the same file format, the same windows and gradient picks

NEOX = dict(architectures=["GPTNeoXForCausalLM"], model_type="gpt_neox", hidden_size=48, num_attention_heads=4,
            num_hidden_layers=2, intermediate_size=96, hidden_act="gelu", rotary_pct=0.5, rotary_emb_base=5000,
            max_position_embeddings=64, layer_norm_eps=1e-5, use_parallel_residual=True, vocab_size=96,
            tie_word_embeddings=False, bos_token_id=0, eos_token_id=0, initializer_range=0.02,
            attention_dropout=0.0, hidden_dropout=0.0, use_cache=True, torch_dtype="bfloat16")
LENGTHS = (32, 48)


def shapes(c):
    C, F = c["hidden_size"], c["intermediate_size"]
    yield "gpt_neox.embed_in.weight", (c["vocab_size"], C), 0.3
    for l in range(c["num_hidden_layers"]):
        p = f"gpt_neox.layers.{l}."
        yield p + "input_layernorm.weight", (C,), None
        yield p + "input_layernorm.bias", (C,), 0.1
        yield p + "post_attention_layernorm.weight", (C,), None
        yield p + "post_attention_layernorm.bias", (C,), 0.1
        yield p + "attention.query_key_value.weight", (3 * C, C), C ** -0.5
        yield p + "attention.query_key_value.bias", (3 * C,), 0.1
        yield p + "attention.dense.weight", (C, C), C ** -0.5
        yield p + "attention.dense.bias", (C,), 0.1
        yield p + "mlp.dense_h_to_4h.weight", (F, C), C ** -0.5
        yield p + "mlp.dense_h_to_4h.bias", (F,), 0.1
        yield p + "mlp.dense_4h_to_h.weight", (C, F), F ** -0.5
        yield p + "mlp.dense_4h_to_h.bias", (C,), 0.1
    yield "gpt_neox.final_layer_norm.weight", (C,), None
    yield "gpt_neox.final_layer_norm.bias", (C,), 0.1
    yield "embed_out.weight", (c["vocab_size"], C), C ** -0.5


def parts(W, T, C, R, base, eps):
    """What a GPT-NeoX-shaped forward (this file's, phi_ref.py's) is made of, on the float64 weights W
    for a window of T tokens: rope(t) turning the first R channels of each head in halves at base
    (inv_freq over R), the causal mask, ln(x, p) a LayerNorm with its shift, lin(x, p) a product with
    its bias."""
    pos = torch.arange(T, dtype=torch.float64)
    inv = 1.0 / (base ** (torch.arange(0, R, 2, dtype=torch.float64) / R))
    ang = pos[:, None] * inv[None, :]
    cos, sin = torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()
    causal = torch.where(pos[None, :] > pos[:, None], float("-inf"), 0.0)

    def ln(x, p):
        return torch.nn.functional.layer_norm(x, (C,), weight=W[p + ".weight"], bias=W[p + ".bias"], eps=eps)

    def lin(x, p):
        return x @ W[p + ".weight"].T + W[p + ".bias"]

    def rope(t):
        r, rest = t[..., :R], t[..., R:]
        return torch.cat((r * cos + rotate_half(r) * sin, rest), -1)
    return rope, causal, ln, lin


def forward(c, W, ids):
    """Logits (T, V) of one window from the float64 weights W."""
    H, C, eps = c["num_attention_heads"], c["hidden_size"], c["layer_norm_eps"]
    D, T = C // H, ids.shape[0]
    rope, causal, ln, lin = parts(W, T, C, int(D * c["rotary_pct"]), c["rotary_emb_base"], eps)

    x = W["gpt_neox.embed_in.weight"][ids]
    for l in range(c["num_hidden_layers"]):
        p = f"gpt_neox.layers.{l}."
        qkv = lin(ln(x, p + "input_layernorm"), p + "attention.query_key_value").view(T, H, 3 * D).transpose(0, 1)
        q, k, v = rope(qkv[..., :D]), rope(qkv[..., D:2 * D]), qkv[..., 2 * D:]
        a = torch.softmax((q @ k.transpose(1, 2)) / math.sqrt(D) + causal, dim=-1) @ v
        a = lin(a.transpose(0, 1).reshape(T, C), p + "attention.dense")

        def mlp(h):
            return lin(torch.nn.functional.gelu(lin(h, p + "mlp.dense_h_to_4h")), p + "mlp.dense_4h_to_h")
        if c["use_parallel_residual"]:
            x = x + a + mlp(ln(x, p + "post_attention_layernorm"))
        else:
            x = x + a
            x = x + mlp(ln(x, p + "post_attention_layernorm"))
    return ln(x, "gpt_neox.final_layer_norm") @ W["embed_out.weight"].T


def main():
    args = sys.argv[1:]
    seq = args[:1] == ["--sequential"]
    if len(args) != 1 + seq:
        sys.exit(__doc__)
    config = dict(NEOX, use_parallel_residual=not seq)
    gen = torch.Generator().manual_seed(0)
    write_tiny(args[-1], config, draw(shapes(config), gen), gen, "neox_ref.py", forward)


if __name__ == "__main__":
    main()
