#!/usr/bin/env python3
"""A random-weight MPT Hugging Face directory in bf16, and torch's logits and gradients on it.

    mpt_ref.py DIR      writes DIR/{config.json, model.safetensors, ref.json}

The config is MPT-7B's (model_type mpt, as mosaicml/mpt-7b's config.json spells it: attn_config with
alibi true, no_bias, norm_type low_precision_layernorm, learned_pos_emb true, which ALiBi overrides),
shrunk: 2 layers of width 48, 6 heads of 8 (not a power of two, so that MPT's order of the slopes is
what the test sees), expansion_ratio 4, alibi_bias_max 6 (not the default 8), vocabulary 96. Weights
are drawn from torch's generator seeded 0 and stored BF16, the norms' gains near 1, in the layout of
MPT's checkpoints (transformer.wte, transformer.blocks.N.{norm_1, attn.Wqkv, attn.out_proj, norm_2,
ffn.up_proj, ffn.down_proj}, transformer.norm_f; no lm_head: the head is wte).

ref.json holds, for a window of 32 token ids and one of 48, the per-token NLL of the next token and
the last position's logits; "pi": the 48-token window again with position interpolation on ALiBi at
scale 2 (Al-Khateeb et al. 2023: every slope halved); and ("grad") the gradient of the first window's
mean NLL with respect to every tensor (its norm, and its values at 24 indices spread over it). All
from a forward written here in float64 on the bf16 weights upcast, from MPT's conventions as
transformers' modeling_mpt has them: LayerNorm without a bias; q|k|v the rows of Wqkv in that order;
scores q.k / sqrt(head_dim) plus MPT's bias slope_h * (j - (T - 1)) on key j (gen_slopes: for n the
power of two at or above the heads, 2^(-k * alibi_bias_max / n) for k = 1..n, the even k first, then
the odd, the first `heads` of them); causal softmax; exact GELU (erf); the head tied to wte. It shares
no code with lenx. tests/test_mpt.c compares lenx's forward, decoding and backward with it. Needs
Debian's python3-torch.
"""
import math
import sys

import torch

from gemma_ref import draw, window, write_tiny     # the same file format, the same windows and gradient picks

MPT = dict(architectures=["MPTForCausalLM"], model_type="mpt", d_model=48, n_heads=6, n_layers=2,
           expansion_ratio=4, max_seq_len=64, vocab_size=96, layer_norm_epsilon=1e-5, no_bias=True,
           learned_pos_emb=True, logit_scale=None, norm_type="low_precision_layernorm", emb_pdrop=0,
           resid_pdrop=0, embedding_fraction=1.0, init_device="cpu", use_cache=False,
           attn_config={"alibi": True, "alibi_bias_max": 6, "attn_impl": "torch", "attn_pdrop": 0,
                        "attn_type": "multihead_attention", "attn_uses_sequence_id": False, "clip_qkv": None,
                        "prefix_lm": False, "qk_ln": False, "softmax_scale": None},
           torch_dtype="bfloat16")
LENGTHS = (32, 48)
PI_SCALE = 2.0


def shapes(c):
    C, F = c["d_model"], c["d_model"] * c["expansion_ratio"]
    yield "transformer.wte.weight", (c["vocab_size"], C), 0.3
    for l in range(c["n_layers"]):
        p = f"transformer.blocks.{l}."
        yield p + "norm_1.weight", (C,), None
        yield p + "attn.Wqkv.weight", (3 * C, C), C ** -0.5
        yield p + "attn.out_proj.weight", (C, C), C ** -0.5
        yield p + "norm_2.weight", (C,), None
        yield p + "ffn.up_proj.weight", (F, C), C ** -0.5
        yield p + "ffn.down_proj.weight", (C, F), F ** -0.5
    yield "transformer.norm_f.weight", (C,), None


def slopes(heads, bias_max):
    """MPT's gen_slopes, from its formula."""
    n = 2 ** math.ceil(math.log2(heads))
    s = [2.0 ** (-k * bias_max / n) for k in range(1, n + 1)]
    if n != heads:
        s = s[1::2] + s[::2]
    return torch.tensor(s[:heads], dtype=torch.float64)


def forward(c, W, ids, pi=1.0):
    """Logits (T, V) of one window from the float64 weights W; pi divides ALiBi's distances."""
    H, C, eps = c["n_heads"], c["d_model"], c["layer_norm_epsilon"]
    D, T = C // H, ids.shape[0]
    pos = torch.arange(T, dtype=torch.float64)
    m = slopes(H, c["attn_config"]["alibi_bias_max"])
    bias = m[:, None, None] * (pos[None, None, :] - (T - 1)) / pi      # (H, 1, T): key j's
    causal = torch.where(pos[None, :] > pos[:, None], float("-inf"), 0.0)

    def ln(x, g):
        return torch.nn.functional.layer_norm(x, (C,), weight=g, bias=None, eps=eps)

    x = W["transformer.wte.weight"][ids]
    for l in range(c["n_layers"]):
        p = f"transformer.blocks.{l}."
        q, k, v = (ln(x, W[p + "norm_1.weight"]) @ W[p + "attn.Wqkv.weight"].T).split(C, dim=-1)
        q, k, v = (t.view(T, H, D).transpose(0, 1) for t in (q, k, v))
        scores = (q @ k.transpose(1, 2)) / math.sqrt(D) + bias + causal
        a = torch.softmax(scores, dim=-1) @ v
        x = x + a.transpose(0, 1).reshape(T, C) @ W[p + "attn.out_proj.weight"].T
        h = torch.nn.functional.gelu(ln(x, W[p + "norm_2.weight"]) @ W[p + "ffn.up_proj.weight"].T)
        x = x + h @ W[p + "ffn.down_proj.weight"].T
    return ln(x, W["transformer.norm_f.weight"]) @ W["transformer.wte.weight"].T


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    gen = torch.Generator().manual_seed(0)
    pi = lambda ref: {"pi": dict(scale=PI_SCALE, **window(MPT, w, torch.tensor(ref["windows"][1]["ids"]), forward,
                                                         pi=PI_SCALE))}
    w = draw(shapes(MPT), gen)
    write_tiny(sys.argv[1], MPT, w, gen, "mpt_ref.py", forward, pi)


if __name__ == "__main__":
    main()
