#!/usr/bin/env python3
"""A random-weight GPT-J Hugging Face directory in bf16, and torch's logits and gradients on it.

    gptj_ref.py DIR      writes DIR/{config.json, model.safetensors, ref.json}

The config is GPT-J-6B's (model_type gptj, as EleutherAI/gpt-j-6b's config.json spells it: n_embd,
n_head, n_layer, n_positions, rotary_dim, n_inner null, activation_function gelu_new, untied), shrunk:
2 layers of width 48, 4 heads of 12, rotary_dim 8 (rope turns the first 8 channels of a head in
neighbouring pairs, as GPT-J-6B's 64 of 256), vocabulary 96. Weights are drawn from torch's generator
seeded 0 and stored BF16, the norms' gains near 1, every bias random, in the layout of GPT-J's
checkpoints (transformer.wte, transformer.h.N.{ln_1, attn.{q,k,v,out}_proj (no biases), mlp.fc_in,
mlp.fc_out}, transformer.ln_f, lm_head with its bias).

ref.json holds, for a window of 32 token ids and one of 48, the per-token NLL of the next token and
the last position's logits; and ("grad") the gradient of the first window's mean NLL with respect to
every tensor (its norm, and its values at 24 indices spread over it). All from a forward written here in
float64 on the bf16 weights upcast, from transformers' modeling_gptj conventions: ln_1 (a LayerNorm with
its shift) read by both the attention and the MLP (x + attn(h) + mlp(h)); q, k, v without biases; on the
first rotary_dim channels of q and k rotate_every_two with sin and cos repeat_interleaved (pairs of
neighbouring channels, inv_freq 10000^(-2i/rotary_dim)), the rest passed through; scores q.k /
sqrt(head_dim), causal; out_proj; the MLP fc_out(gelu_new(fc_in(h))) with biases; ln_f; lm_head with its
bias. It shares no code with lenx. tests/test_gptj.c compares lenx's forward, decoding and backward with
it. Needs Debian's python3-torch.
"""
import math
import sys

import torch

from gemma_ref import draw, write_tiny     # the same file format, the same windows and gradient picks

GPTJ = dict(architectures=["GPTJForCausalLM"], model_type="gptj", n_embd=48, n_head=4, n_layer=2, n_positions=64,
            rotary_dim=8, n_inner=None, activation_function="gelu_new", layer_norm_epsilon=1e-5,
            tie_word_embeddings=False, vocab_size=96, bos_token_id=1, eos_token_id=2, attn_pdrop=0.0,
            embd_pdrop=0.0, resid_pdrop=0.0, initializer_range=0.02, use_cache=True, torch_dtype="bfloat16")
LENGTHS = (32, 48)


def shapes(c):
    C, V = c["n_embd"], c["vocab_size"]
    F = c["n_inner"] or 4 * C
    yield "transformer.wte.weight", (V, C), 0.3
    for l in range(c["n_layer"]):
        p = f"transformer.h.{l}."
        yield p + "ln_1.weight", (C,), None
        yield p + "ln_1.bias", (C,), 0.1
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            yield p + "attn." + name + ".weight", (C, C), C ** -0.5
        yield p + "mlp.fc_in.weight", (F, C), C ** -0.5
        yield p + "mlp.fc_in.bias", (F,), 0.1
        yield p + "mlp.fc_out.weight", (C, F), F ** -0.5
        yield p + "mlp.fc_out.bias", (C,), 0.1
    yield "transformer.ln_f.weight", (C,), None
    yield "transformer.ln_f.bias", (C,), 0.1
    yield "lm_head.weight", (V, C), C ** -0.5
    yield "lm_head.bias", (V,), 0.3


def rotate_every_two(x):
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


def forward(c, W, ids):
    """Logits (T, V) of one window from the float64 weights W."""
    H, C, eps, R = c["n_head"], c["n_embd"], c["layer_norm_epsilon"], c["rotary_dim"]
    D, T = C // H, ids.shape[0]
    pos = torch.arange(T, dtype=torch.float64)
    inv = 1.0 / (10000 ** (torch.arange(0, R, 2, dtype=torch.float64) / R))
    ang = pos[:, None] * inv[None, :]
    sin, cos = ang.sin().repeat_interleave(2, dim=-1), ang.cos().repeat_interleave(2, dim=-1)
    causal = torch.where(pos[None, :] > pos[:, None], float("-inf"), 0.0)

    def ln(x, p):
        return torch.nn.functional.layer_norm(x, (C,), weight=W[p + ".weight"], bias=W[p + ".bias"], eps=eps)

    def lin(x, p):
        y = x @ W[p + ".weight"].T
        return y + W[p + ".bias"] if p + ".bias" in W else y

    def rope(t):
        r, rest = t[..., :R], t[..., R:]
        return torch.cat((r * cos + rotate_every_two(r) * sin, rest), -1)

    x = W["transformer.wte.weight"][ids]
    for l in range(c["n_layer"]):
        p = f"transformer.h.{l}."
        h = ln(x, p + "ln_1")
        q, k, v = (lin(h, p + "attn." + n).view(T, H, D).transpose(0, 1) for n in ("q_proj", "k_proj", "v_proj"))
        a = torch.softmax((rope(q) @ rope(k).transpose(1, 2)) / math.sqrt(D) + causal, dim=-1) @ v
        a = lin(a.transpose(0, 1).reshape(T, C), p + "attn.out_proj")
        m = lin(torch.nn.functional.gelu(lin(h, p + "mlp.fc_in"), approximate="tanh"), p + "mlp.fc_out")
        x = x + a + m
    return lin(ln(x, "transformer.ln_f"), "lm_head")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    gen = torch.Generator().manual_seed(0)
    write_tiny(sys.argv[1], GPTJ, draw(shapes(GPTJ), gen), gen, "gptj_ref.py", forward)


if __name__ == "__main__":
    main()
