#!/usr/bin/env python3
"""A random-weight Phi (Phi-2) Hugging Face directory in bf16, and torch's logits and gradients on it.

    phi_ref.py DIR      writes DIR/{config.json, model.safetensors, ref.json}

The config is Phi-2's (model_type phi, as microsoft/phi-2's config.json spells it: hidden_act gelu_new,
partial_rotary_factor, qk_layernorm false, untied), shrunk: 2 layers of width 48, 4 heads of 12,
partial_rotary_factor 0.5 (rope turns the first 6 channels of a head, as Phi-2's 0.4 turns 32 of 80),
rope_theta 5000, intermediate_size 192 (4 x the width, as Phi-2's, and as llama.cpp's converter writes
it), vocabulary 96. Weights are drawn from torch's generator seeded 0 and stored BF16, the norms'
gains near 1, every bias (the norms' shifts and lm_head's too) random, in the layout of Phi's
checkpoints (model.layers.N.{input_layernorm, self_attn.{q,k,v}_proj, self_attn.dense, mlp.fc1,
mlp.fc2}, model.final_layernorm, lm_head with its bias).

ref.json holds, for a window of 32 token ids and one of 48, the per-token NLL of the next token and
the last position's logits; and ("grad") the gradient of the first window's mean NLL with respect to
every tensor (its norm, and its values at 24 indices spread over it). All from a forward written here in
float64 on the bf16 weights upcast, from transformers' modeling_phi conventions: one LayerNorm a layer
with its shift, its rows read by both the attention and the MLP (x + attn(h) + mlp(h)); q, k, v with
their biases; rotate_half on the first rotary_ndims channels of q and k (inv_freq over rotary_ndims),
the rest passed through; scores q.k / sqrt(head_dim), causal; dense with its bias; the MLP
fc2(gelu_new(fc1(h))), GELU's tanh form; final_layernorm; lm_head with its bias. It shares no code
with lenx. tests/test_phi.c compares lenx's forward, decoding and backward with it. Needs Debian's
python3-torch.
"""
import math
import sys

import torch

from gemma_ref import draw, write_tiny     # the same file format, the same windows and gradient picks
from neox_ref import parts     # rope over part of each head, the mask, LayerNorm and products with biases

PHI = dict(architectures=["PhiForCausalLM"], model_type="phi", hidden_size=48, num_attention_heads=4,
           num_hidden_layers=2, intermediate_size=192, hidden_act="gelu_new", partial_rotary_factor=0.5,
           rope_theta=5000.0, rope_scaling=None, max_position_embeddings=64, layer_norm_eps=1e-5,
           qk_layernorm=False, tie_word_embeddings=False, vocab_size=96, bos_token_id=1, eos_token_id=2,
           attention_dropout=0.0, embd_pdrop=0.0, resid_pdrop=0.0, initializer_range=0.02, use_cache=True,
           torch_dtype="bfloat16")
LENGTHS = (32, 48)


def shapes(c):
    C, F, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    yield "model.embed_tokens.weight", (V, C), 0.3
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        yield p + "input_layernorm.weight", (C,), None
        yield p + "input_layernorm.bias", (C,), 0.1
        for name, rows, cols in (("self_attn.q_proj", C, C), ("self_attn.k_proj", C, C),
                                 ("self_attn.v_proj", C, C), ("self_attn.dense", C, C),
                                 ("mlp.fc1", F, C), ("mlp.fc2", C, F)):
            yield p + name + ".weight", (rows, cols), cols ** -0.5
            yield p + name + ".bias", (rows,), 0.1
    yield "model.final_layernorm.weight", (C,), None
    yield "model.final_layernorm.bias", (C,), 0.1
    yield "lm_head.weight", (V, C), C ** -0.5
    yield "lm_head.bias", (V,), 0.3


def forward(c, W, ids):
    """Logits (T, V) of one window from the float64 weights W."""
    H, C, eps = c["num_attention_heads"], c["hidden_size"], c["layer_norm_eps"]
    D, T = C // H, ids.shape[0]
    rope, causal, ln, lin = parts(W, T, C, int(D * c["partial_rotary_factor"]), c["rope_theta"], eps)

    x = W["model.embed_tokens.weight"][ids]
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = ln(x, p + "input_layernorm")
        q, k, v = (lin(h, p + "self_attn." + n).view(T, H, D).transpose(0, 1) for n in ("q_proj", "k_proj", "v_proj"))
        a = torch.softmax((rope(q) @ rope(k).transpose(1, 2)) / math.sqrt(D) + causal, dim=-1) @ v
        a = lin(a.transpose(0, 1).reshape(T, C), p + "self_attn.dense")
        m = lin(torch.nn.functional.gelu(lin(h, p + "mlp.fc1"), approximate="tanh"), p + "mlp.fc2")
        x = x + a + m
    return lin(ln(x, "model.final_layernorm"), "lm_head")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    gen = torch.Generator().manual_seed(0)
    write_tiny(sys.argv[1], PHI, draw(shapes(PHI), gen), gen, "phi_ref.py", forward)


if __name__ == "__main__":
    main()
