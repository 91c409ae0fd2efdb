#!/usr/bin/env python3
"""Random-weight bf16 Hugging Face Llama directories, and torch's logits on them.

    hf_bf16_ref.py tiny DIR          the test model: DIR/{config.json, model.safetensors, ref.json}
    hf_bf16_ref.py 1b DIR TOKENIZER  Llama-3.2-1B's shape for `make bench BENCH=bf16` (2.5 GB; no ref.json),
                                     with TOKENIZER (a Llama-3 tokenizer.json) copied beside it and a
                                     tokenizer_config.json naming its BOS and EOS
    hf_bf16_ref.py 8b DIR TOKENIZER  Llama-3.1-8B's shape the same way (16.1 GB, untied head, in four
                                     shards named by model.safetensors.index.json, as the Hub has it)

The shapes are transformers' LlamaConfig fields: tied embeddings, grouped-query
attention, rope_theta 500,000 with `llama3` rope scaling. Weights are drawn
from torch's generator seeded 0 in fp32 and rounded to bf16 (round to nearest
even: torch's .to(torch.bfloat16)), written in a safetensors file by hand (the
format: an 8-byte little-endian header length, a JSON header, the data).

ref.json (tiny only) holds, for two windows of 64 token ids drawn from the
same generator, the per-token NLL of the next token and the last position's
logits, from two forwards written here from transformers' modeling_llama
conventions (rotate_half, repeat_kv, RMSNorm in fp32, the llama3 inverse
frequencies), sharing no code with lenx:

  fp32: the bf16 weights upcast exactly to fp32, every operation in fp32;
  bf16: the model as transformers runs torch_dtype=bfloat16 on a CPU: every
        activation a bf16 tensor (products and sums rounded to bf16), RMSNorm
        and softmax computed in fp32 and cast back.

tests/test_half.c compares lenx against both. Needs Debian's python3-torch.
"""
import json
import math
import os
import shutil
import struct
import sys

import torch

SHAPES = {
    "tiny": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=8,
                 num_key_value_heads=2, vocab_size=512, max_position_embeddings=256,
                 rope_scaling={"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
    "1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072,
               rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                             "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
    "8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072, tie_word_embeddings=False,
               rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                             "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
}
SHARDS = {"8b": 4}      # the Hub's Llama-3.1-8B: model-0000k-of-00004.safetensors


def config_of(shape):
    c = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_act="silu", rms_norm_eps=1e-5,
             rope_theta=500000.0, tie_word_embeddings=True, attention_bias=False, mlp_bias=False,
             bos_token_id=1, eos_token_id=2, torch_dtype="bfloat16")
    c.update(SHAPES[shape])
    if shape != "tiny":     # Llama-3's <|begin_of_text|> and <|end_of_text|>
        c.update(bos_token_id=128000, eos_token_id=128001)
    c["head_dim"] = c["hidden_size"] // c["num_attention_heads"]
    return c


def shapes_of(c):
    """(name, shape, std) in the order written and drawn, std 1/sqrt(fan_in) (embedding 0.1: logits of
    about one unit); std None is a norm, 1 ± 0.1."""
    H, D, KV, C, F = c["num_attention_heads"], c["head_dim"], c["num_key_value_heads"], c["hidden_size"], \
        c["intermediate_size"]
    yield "model.embed_tokens.weight", (c["vocab_size"], C), 0.1
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        yield p + "input_layernorm.weight", (C,), None
        yield p + "self_attn.q_proj.weight", (H * D, C), C ** -0.5
        yield p + "self_attn.k_proj.weight", (KV * D, C), C ** -0.5
        yield p + "self_attn.v_proj.weight", (KV * D, C), C ** -0.5
        yield p + "self_attn.o_proj.weight", (C, H * D), (H * D) ** -0.5
        yield p + "post_attention_layernorm.weight", (C,), None
        yield p + "mlp.gate_proj.weight", (F, C), C ** -0.5
        yield p + "mlp.up_proj.weight", (F, C), C ** -0.5
        yield p + "mlp.down_proj.weight", (C, F), F ** -0.5
    yield "model.norm.weight", (C,), None
    if not c["tie_word_embeddings"]:
        yield "lm_head.weight", (c["vocab_size"], C), C ** -0.5


def tensors_of(c, gen):
    """(name, bf16 tensor) in the order written."""
    for name, shape, std in shapes_of(c):
        if std is None:
            yield name, (1 + 0.1 * torch.randn(*shape, generator=gen)).to(torch.bfloat16)
        else:
            yield name, (torch.randn(*shape, generator=gen) * std).to(torch.bfloat16)


def write_safetensors(out, c, gen, shards=1):
    """The header needs every size first: from the shapes, before anything is drawn. With shards > 1,
    the tensors in order over that many files of about equal size and the index naming them."""
    sizes = [(name, shape, math.prod(shape) * 2) for name, shape, _ in shapes_of(c)]
    total = sum(n for _, _, n in sizes)
    files, at = [], 0
    for name, shape, n in sizes:
        k = min(at * shards // total, shards - 1)
        if len(files) <= k:
            files.append([])
        files[-1].append((name, shape, n))
        at += n
    names = ["model.safetensors"] if shards == 1 else \
        [f"model-{k + 1:05d}-of-{len(files):05d}.safetensors" for k in range(len(files))]
    weights, draw = {}, tensors_of(c, gen)
    for fname, part in zip(names, files):
        header, off = {}, 0
        for name, shape, n in part:
            header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + n]}
            off += n
        header["__metadata__"] = {"format": "pt"}
        h = json.dumps(header).encode()
        h += b" " * (-(8 + len(h)) % 8)
        path = os.path.join(out, fname)
        with open(path + ".tmp", "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h)
            for name, _, _ in part:
                got, t = next(draw)
                assert got == name
                f.write(t.view(torch.int16).numpy().tobytes())
                if c["vocab_size"] < 10000:
                    weights[name] = t
        os.replace(path + ".tmp", path)
    if shards > 1:
        index = {"metadata": {"total_size": total},
                 "weight_map": {name: fname for fname, part in zip(names, files) for name, _, _ in part}}
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=2)
            f.write("\n")
    return weights


def inv_freq(c):
    D, base, rs = c["head_dim"], c["rope_theta"], c["rope_scaling"]
    inv = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    factor, low, high, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], \
        rs["original_max_position_embeddings"]
    out = []
    for f in inv.tolist():
        wavelen = 2 * math.pi / f
        if wavelen < old / high:
            out.append(f)
        elif wavelen > old / low:
            out.append(f / factor)
        else:
            s = (old / wavelen - low) / (high - low)
            out.append((1 - s) * f / factor + s * f)
    return torch.tensor(out, dtype=torch.float64)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(c, w, ids, dt):
    """Logits (T, V) of one window: dt float32 (upcast weights) or bfloat16 (transformers' bf16 run)."""
    H, D, KV, eps = c["num_attention_heads"], c["head_dim"], c["num_key_value_heads"], c["rms_norm_eps"]
    T = ids.shape[0]
    W = {k: v.to(dt) for k, v in w.items()}

    def rms(x, g):
        x32 = x.to(torch.float32)
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
        return g * x32.to(dt)

    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq(c)[None, :]
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos().to(torch.float32).to(dt), emb.sin().to(torch.float32).to(dt)
    x = W["model.embed_tokens.weight"][ids]
    mask = torch.full((T, T), float("-inf")).triu(1)
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms(x, W[p + "input_layernorm.weight"])
        q = (h @ W[p + "self_attn.q_proj.weight"].T).view(T, H, D).transpose(0, 1)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).view(T, KV, D).transpose(0, 1)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).view(T, KV, D).transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(H // KV, dim=0), v.repeat_interleave(H // KV, dim=0)
        s = (q @ k.transpose(1, 2)) / math.sqrt(D) + mask.to(dt)
        a = torch.softmax(s, dim=-1, dtype=torch.float32).to(dt) @ v
        x = x + a.transpose(0, 1).reshape(T, H * D) @ W[p + "self_attn.o_proj.weight"].T
        h = rms(x, W[p + "post_attention_layernorm.weight"])
        g = torch.nn.functional.silu(h @ W[p + "mlp.gate_proj.weight"].T) * (h @ W[p + "mlp.up_proj.weight"].T)
        x = x + g @ W[p + "mlp.down_proj.weight"].T
    x = rms(x, W["model.norm.weight"])
    return (x @ W["model.embed_tokens.weight"].T).to(torch.float32)


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in SHAPES or (sys.argv[1] != "tiny" and len(sys.argv) < 4):
        sys.exit(__doc__)
    shape, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    c = config_of(shape)
    gen = torch.Generator().manual_seed(0)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
        f.write("\n")
    w = write_safetensors(out, c, gen, SHARDS.get(shape, 1))
    if shape != "tiny":
        shutil.copy(sys.argv[3], os.path.join(out, "tokenizer.json"))
        with open(os.path.join(out, "tokenizer_config.json"), "w") as f:   # Llama-3's, as transformers reads it
            json.dump({"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "add_bos_token": True}, f)
            f.write("\n")
        return
    torch.set_num_threads(1)
    windows = [torch.randint(0, c["vocab_size"], (64,), generator=gen) for _ in range(2)]
    ref = {"ids": [x.tolist() for x in windows]}
    for name, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        nll, last = [], []
        for ids in windows:
            logits = forward(c, w, ids, dt)
            lp = torch.log_softmax(logits.double(), dim=-1)
            nll.append([-lp[t, ids[t + 1]].item() for t in range(len(ids) - 1)])
            last.append(logits[-1].tolist())
        ref[name] = {"nll": nll, "last_logits": last}
    with open(os.path.join(out, "ref.json"), "w") as f:
        json.dump(ref, f)
        f.write("\n")


if __name__ == "__main__":
    main()
