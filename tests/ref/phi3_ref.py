#!/usr/bin/env python3
"""A random-weight Phi-3 Hugging Face directory with LongRoPE scaling, and torch's logits on it.

    phi3_ref.py DIR             writes DIR/{config.json, model.safetensors, ref.json}
    phi3_ref.py --partial DIR   the same in Phi-4-mini's form: partial_rotary_factor 0.75 (rope turns the
                                first 12 of each head's 16 channels, rotate_half within them, the lists
                                one factor per those 6 pairs) and tied embeddings (no lm_head)

The config is transformers' Phi3Config in Phi-3-mini-128k's form, shrunk: q|k|v fused in
self_attn.qkv_proj and gate|up in mlp.gate_up_proj, grouped-query heads (4 query heads of 8 on 2
key/value heads), original_max_position_embeddings 32 under max_position_embeddings 128 (s = 4),
rope_scaling {type: longrope} with a short and a long factor list, and sliding_window 262144 (more
than the model's positions, as Phi-3-mini-128k's). Weights are drawn from torch's generator seeded 0
and stored F32 (the format written by hand: an 8-byte little-endian header length, a JSON header,
the data).

ref.json holds, for one window of 32 token ids (the short factors: 32 is not past L) and one of 48
(the long factors), the per-token NLL of the next token and the last position's logits, from a
forward written here in float64 from transformers' modeling_phi3 conventions (qkv split by rows,
gate_up chunked in two with the gate first, rotate_half, repeat_kv, cos and sin times the attention
factor sqrt(1 + ln s / ln L), the inverse frequencies 1 / (factor_k * base^(2k/d)) with the long
list past L), sharing no code with lenx. tests/test_hf_families.c compares lenx against it. Needs
Debian's python3-torch.
"""
import json
import math
import os
import struct
import sys

import torch

CONFIG = dict(architectures=["Phi3ForCausalLM"], model_type="phi3", hidden_size=32, intermediate_size=48,
              num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=96,
              max_position_embeddings=128, original_max_position_embeddings=32, rope_theta=10000.0,
              rope_scaling={"type": "longrope", "long_factor": [1.0, 1.5, 3.0, 6.0],
                            "short_factor": [1.0, 1.1, 1.2, 1.5]},
              sliding_window=262144, rms_norm_eps=1e-5, hidden_act="silu", attention_bias=False,
              tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0,
              resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0, torch_dtype="float32")
LENGTHS = (32, 48)
PARTIAL = dict(CONFIG, hidden_size=64, partial_rotary_factor=0.75, tie_word_embeddings=True,
               rope_scaling={"type": "longrope", "long_factor": [1.0, 1.25, 1.5, 3.0, 6.0, 12.0],
                             "short_factor": [1.0, 1.0, 1.1, 1.2, 1.5, 2.0]})


def shapes(c):
    H, KV, C, F = c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size"], c["intermediate_size"]
    D = C // H
    yield "model.embed_tokens.weight", (c["vocab_size"], C), 0.3
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        yield p + "input_layernorm.weight", (C,), None
        yield p + "self_attn.qkv_proj.weight", ((H + 2 * KV) * D, C), C ** -0.5
        yield p + "self_attn.o_proj.weight", (C, H * D), (H * D) ** -0.5
        yield p + "post_attention_layernorm.weight", (C,), None
        yield p + "mlp.gate_up_proj.weight", (2 * F, C), C ** -0.5
        yield p + "mlp.down_proj.weight", (C, F), F ** -0.5
    yield "model.norm.weight", (C,), None
    if not c["tie_word_embeddings"]:
        yield "lm_head.weight", (c["vocab_size"], C), C ** -0.5


def weights(c, gen):
    w = {}
    for name, shape, std in shapes(c):
        w[name] = 1 + 0.1 * torch.randn(*shape, generator=gen) if std is None else torch.randn(*shape, generator=gen) * std
    return w


def write_safetensors(path, w):
    header, off = {}, 0
    for name, t in w.items():
        n = t.numel() * 4
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + n]}
        off += n
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header).encode()
    h += b" " * (-(8 + len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for t in w.values():
            f.write(t.contiguous().numpy().astype("<f4").tobytes())


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(c, w, ids):
    """Logits (T, V) of one window in float64."""
    H, KV, C, F, eps = c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size"], \
        c["intermediate_size"], c["rms_norm_eps"]
    D, T, L = C // H, ids.shape[0], c["original_max_position_embeddings"]
    R = int(D * c.get("partial_rotary_factor", 1.0))    # transformers: the first R channels turn
    W = {k: v.double() for k, v in w.items()}
    s = c["max_position_embeddings"] / L
    att = math.sqrt(1 + math.log(s) / math.log(L)) if s > 1 else 1.0
    ext = torch.tensor(c["rope_scaling"]["long_factor" if T > L else "short_factor"], dtype=torch.float64)
    inv = 1.0 / (ext * c["rope_theta"] ** (torch.arange(0, R, 2, dtype=torch.float64) / R))
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos() * att, emb.sin() * att

    def rms(x, g):
        return g * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    x = W["model.embed_tokens.weight"][ids]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms(x, W[p + "input_layernorm.weight"])
        qkv = h @ W[p + "self_attn.qkv_proj.weight"].T
        q = qkv[:, :H * D].view(T, H, D).transpose(0, 1)
        k = qkv[:, H * D:(H + KV) * D].view(T, KV, D).transpose(0, 1)
        v = qkv[:, (H + KV) * D:].view(T, KV, D).transpose(0, 1)
        q = torch.cat((q[..., :R] * cos + rotate_half(q[..., :R]) * sin, q[..., R:]), dim=-1)
        k = torch.cat((k[..., :R] * cos + rotate_half(k[..., :R]) * sin, k[..., R:]), dim=-1)
        k, v = k.repeat_interleave(H // KV, dim=0), v.repeat_interleave(H // KV, dim=0)
        a = torch.softmax((q @ k.transpose(1, 2)) / math.sqrt(D) + mask, dim=-1) @ v
        x = x + a.transpose(0, 1).reshape(T, H * D) @ W[p + "self_attn.o_proj.weight"].T
        h = rms(x, W[p + "post_attention_layernorm.weight"])
        gate, up = (h @ W[p + "mlp.gate_up_proj.weight"].T).chunk(2, dim=-1)
        x = x + (up * torch.nn.functional.silu(gate)) @ W[p + "mlp.down_proj.weight"].T
    head = W["model.embed_tokens.weight"] if c["tie_word_embeddings"] else W["lm_head.weight"]
    return rms(x, W["model.norm.weight"]) @ head.T


def main():
    args = sys.argv[1:]
    partial = args[:1] == ["--partial"]
    if len(args) != 1 + partial:
        sys.exit(__doc__)
    out, config = args[-1], PARTIAL if partial else CONFIG
    os.makedirs(out, exist_ok=True)
    gen = torch.Generator().manual_seed(0)
    w = weights(config, gen)
    write_safetensors(os.path.join(out, "model.safetensors"), w)
    with open(os.path.join(out, "config.json"), "w") as f:    # a key a line, lists on theirs
        f.write("{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in config.items()) + "\n}\n")
    ref = {"what": "tests/ref/phi3_ref.py: float64 forward of the directory's weights", "torch": torch.__version__,
           "windows": []}
    for T in LENGTHS:
        ids = torch.randint(3, config["vocab_size"], (T,), generator=gen)
        lg = forward(config, w, ids)
        nll = torch.nn.functional.cross_entropy(lg[:-1], ids[1:], reduction="none")
        ref["windows"].append({"ids": ids.tolist(), "nll": nll.tolist(), "last_logits": lg[-1].tolist()})
        print(f"T {T}: mean NLL {nll.mean().item():.9f}")
    with open(os.path.join(out, "ref.json"), "w") as f:
        json.dump(ref, f)
        f.write("\n")


if __name__ == "__main__":
    main()
