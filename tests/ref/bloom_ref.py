#!/usr/bin/env python3
"""A random-weight BLOOM Hugging Face directory in bf16, and torch's logits and gradients on it.

    bloom_ref.py DIR                writes DIR/{config.json, model.safetensors, ref.json}
    bloom_ref.py --prefixed DIR     the same weights named as BloomForCausalLM saves them, each under
                                    "transformer."; no ref.json (DIR's logits are the first's)

The config is BLOOM's (model_type bloom, as bigscience/bloom-560m's config.json spells it: n_layer,
n_head, hidden_size, layer_norm_epsilon, apply_residual_connection_post_layernorm false), shrunk: 2
layers of width 48, 6 heads of 8 (not a power of two, so that BLOOM's order of the ALiBi slopes is what
the test sees), vocabulary 96. Weights are drawn from torch's generator seeded 0 and stored BF16, the
norms' gains near 1, every bias random, named as bloom-560m's checkpoint names them (no
"transformer." prefix: word_embeddings, word_embeddings_layernorm, h.N.{input_layernorm,
self_attention.query_key_value, self_attention.dense, post_attention_layernorm, mlp.dense_h_to_4h,
mlp.dense_4h_to_h}, ln_f; the head is word_embeddings): query_key_value holds, head by head, that
head's q, k and v rows.

ref.json holds, for a window of 32 token ids and one of 48, the per-token NLL of the next token and
the last position's logits; and ("grad") the gradient of the first window's mean NLL with respect to
every tensor (its norm, and its values at 24 indices spread over it). All from a forward written here in
float64 on the bf16 weights upcast, from transformers' modeling_bloom conventions: the embedding rows
through word_embeddings_layernorm; LayerNorms with their shifts; q, k, v split per head from
query_key_value; scores q.k / sqrt(head_dim) plus BLOOM's ALiBi, slope_h * j on key j (build_alibi_tensor:
for n the power of two at or below the heads, base 2^(-8/n) to the powers 1..n, then 2^(-8/(2n)) to the
odd powers 1, 3, ... for the rest), causal; dense with its bias; then the MLP dense_4h_to_h(gelu(
dense_h_to_4h(h))) with BLOOM's tanh GELU (0.79788456); ln_f; the tied head. It shares no code with lenx.
tests/test_bloom.c compares lenx's forward, decoding and backward with it. Needs Debian's python3-torch.
"""
import math
import os
import sys

import torch

from gemma_ref import draw, write_config, write_safetensors, write_tiny     # the same file format, windows, picks

BLOOM = dict(architectures=["BloomForCausalLM"], model_type="bloom", hidden_size=48, n_layer=2, n_head=6,
             vocab_size=96, layer_norm_epsilon=1e-5, apply_residual_connection_post_layernorm=False,
             attention_dropout=0.0, hidden_dropout=0.0, bos_token_id=1, eos_token_id=2, pad_token_id=3,
             initializer_range=0.02, pretraining_tp=1, slow_but_exact=False, use_cache=True,
             torch_dtype="bfloat16")
LENGTHS = (32, 48)


def shapes(c):
    C = c["hidden_size"]
    yield "word_embeddings.weight", (c["vocab_size"], C), 0.3
    yield "word_embeddings_layernorm.weight", (C,), None
    yield "word_embeddings_layernorm.bias", (C,), 0.1
    for l in range(c["n_layer"]):
        p = f"h.{l}."
        for n in ("input_layernorm", "post_attention_layernorm"):
            yield p + n + ".weight", (C,), None
            yield p + n + ".bias", (C,), 0.1
        for n, rows, cols in (("self_attention.query_key_value", 3 * C, C), ("self_attention.dense", C, C),
                              ("mlp.dense_h_to_4h", 4 * C, C), ("mlp.dense_4h_to_h", C, 4 * C)):
            yield p + n + ".weight", (rows, cols), cols ** -0.5
            yield p + n + ".bias", (rows,), 0.1
    yield "ln_f.weight", (C,), None
    yield "ln_f.bias", (C,), 0.1


def slopes(heads):
    """build_alibi_tensor's slopes, from its formula."""
    n = 2 ** math.floor(math.log2(heads))
    s = [2.0 ** (-8.0 * k / n) for k in range(1, n + 1)]
    s += [2.0 ** (-8.0 * k / (2 * n)) for k in range(1, 2 * (heads - n), 2)]
    return torch.tensor(s, dtype=torch.float64)


def gelu(x):
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


def forward(c, W, ids):
    """Logits (T, V) of one window from the float64 weights W."""
    H, C, eps = c["n_head"], c["hidden_size"], c["layer_norm_epsilon"]
    D, T = C // H, ids.shape[0]
    pos = torch.arange(T, dtype=torch.float64)
    alibi = slopes(H)[:, None, None] * pos[None, None, :]
    causal = torch.where(pos[None, :] > pos[:, None], float("-inf"), 0.0)

    def ln(x, p):
        return torch.nn.functional.layer_norm(x, (C,), weight=W[p + ".weight"], bias=W[p + ".bias"], eps=eps)

    def lin(x, p):
        return x @ W[p + ".weight"].T + W[p + ".bias"]

    x = ln(W["word_embeddings.weight"][ids], "word_embeddings_layernorm")
    for l in range(c["n_layer"]):
        p = f"h.{l}."
        qkv = lin(ln(x, p + "input_layernorm"), p + "self_attention.query_key_value").view(T, H, 3 * D)
        q, k, v = (qkv[..., i * D:(i + 1) * D].transpose(0, 1) for i in range(3))
        a = torch.softmax((q @ k.transpose(1, 2)) / math.sqrt(D) + alibi + causal, dim=-1) @ v
        x = x + lin(a.transpose(0, 1).reshape(T, C), p + "self_attention.dense")
        x = x + lin(gelu(lin(ln(x, p + "post_attention_layernorm"), p + "mlp.dense_h_to_4h")), p + "mlp.dense_4h_to_h")
    return ln(x, "ln_f") @ W["word_embeddings.weight"].T


def main():
    args = sys.argv[1:]
    prefixed = args[:1] == ["--prefixed"]
    if len(args) != 1 + prefixed:
        sys.exit(__doc__)
    out = args[-1]
    gen = torch.Generator().manual_seed(0)
    w = draw(shapes(BLOOM), gen)
    if not prefixed:
        return write_tiny(out, BLOOM, w, gen, "bloom_ref.py", forward)
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"), {"transformer." + k: v for k, v in w.items()})
    write_config(os.path.join(out, "config.json"), BLOOM)


if __name__ == "__main__":
    main()
