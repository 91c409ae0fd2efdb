#!/usr/bin/env python3
"""Random-weight Gemma 3 (text) and Gemma Hugging Face directories in bf16, and torch's logits on them.

    gemma_ref.py DIR            writes DIR/{config.json, model.safetensors, ref.json}: Gemma 3
    gemma_ref.py --gemma1 DIR   the same for Gemma (1): no post-norms, q/k norms or local layers
    gemma_ref.py --gemma2 DIR   the same for Gemma 2: four layers alternating local and global (the local
                                ones at rope_theta too), no q/k norms, its soft-caps set low (attention
                                logits c tanh(x / c) with c = 1.5, output logits with c = 3) so that
                                they shape every logit
    gemma_ref.py --multimodal DIR
                                the Gemma 3 model's weights as a gemma3 (multimodal) directory holds its text
                                model: config.json's text_config (leaving out the fields whose
                                Gemma3TextConfig defaults are the tiny model's), the tensors under
                                language_model.model., beside a vision tensor; no ref.json (DIR's logits are
                                the Gemma 3 directory's)

The config is transformers' Gemma3TextConfig in Gemma-3-1B's form, shrunk: 6 layers, of which every
third is global (layer_types: two sliding_attention, then full_attention), the local ones over a
sliding window of 8 keys at rope_local_base_freq 10000, the global ones at rope_theta 1e6 with
rope_scaling linear factor 4 (as the 4B-27B models' factor 8); grouped-query heads (4 query heads on 2
key/value heads) of head_dim 16 on a width of 32 (not width / heads), query_pre_attn_scalar 12 (not
head_dim), q/k RMSNorms, four RMSNorms a layer, tied embeddings. Weights are drawn from torch's
generator seeded 0 and stored BF16, as Gemma's checkpoints are (the format written by hand: an 8-byte
little-endian header length, a JSON header, the data).

ref.json holds, for a window of 32 token ids and one of 48, the per-token NLL of the next token and
the last position's logits, and ("grad") the gradient of the first window's mean NLL with respect to
every tensor (its norm, and its values at 24 indices spread over it; Gemma's gains as stored, w of
1 + w), from a forward written here in float64 on the bf16 weights upcast, from
transformers' modeling_gemma3 conventions (embeddings times sqrt(hidden_size); RMSNorm x / rms(x) times
(1 + w); q_norm and k_norm per head before rotate_half; a local layer's key j visible to query i when
i - j < sliding_window; scores times query_pre_attn_scalar^-0.5; post_attention_layernorm on the
attention output and pre/post_feedforward_layernorm around the MLP; gelu_pytorch_tanh(gate) * up),
sharing no code with lenx. tests/test_gemma.c compares lenx's forward and backward with it. Needs Debian's
python3-torch.
"""
import json
import math
import os
import struct
import sys

import torch

GEMMA3 = dict(architectures=["Gemma3ForCausalLM"], model_type="gemma3_text", hidden_size=32, intermediate_size=48,
              num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=96,
              max_position_embeddings=128, rope_theta=1000000.0, rope_local_base_freq=10000.0,
              rope_scaling={"factor": 4.0, "rope_type": "linear"}, sliding_window=8, sliding_window_pattern=3,
              layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2,
              query_pre_attn_scalar=12, rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh",
              final_logit_softcapping=None, attn_logit_softcapping=None, attention_bias=False,
              bos_token_id=2, eos_token_id=1, pad_token_id=0, torch_dtype="bfloat16")
GEMMA1 = dict(architectures=["GemmaForCausalLM"], model_type="gemma", hidden_size=32, intermediate_size=48,
              num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=16, vocab_size=96,
              max_position_embeddings=128, rope_theta=10000.0, rms_norm_eps=1e-6, hidden_act="gelu",
              hidden_activation="gelu_pytorch_tanh", attention_bias=False, bos_token_id=2, eos_token_id=1,
              pad_token_id=0, torch_dtype="bfloat16")
GEMMA2 = dict(architectures=["Gemma2ForCausalLM"], model_type="gemma2", hidden_size=32, intermediate_size=48,
              num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=96,
              max_position_embeddings=128, rope_theta=10000.0, sliding_window=8, query_pre_attn_scalar=12,
              attn_logit_softcapping=1.5, final_logit_softcapping=3.0, rms_norm_eps=1e-6,
              hidden_activation="gelu_pytorch_tanh", attention_bias=False, bos_token_id=2, eos_token_id=1,
              pad_token_id=0, torch_dtype="bfloat16")
LENGTHS = (32, 48)
GRAD_PICKS = 24     # gradient values kept per tensor (ref.json's "grad")


def shapes(c):
    H, KV, C, F, D = c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size"], \
        c["intermediate_size"], c["head_dim"]
    g3, g2 = c["model_type"] == "gemma3_text", c["model_type"] == "gemma2"
    yield "model.embed_tokens.weight", (c["vocab_size"], C), 0.3
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        yield p + "input_layernorm.weight", (C,), None
        yield p + "self_attn.q_proj.weight", (H * D, C), C ** -0.5
        yield p + "self_attn.k_proj.weight", (KV * D, C), C ** -0.5
        yield p + "self_attn.v_proj.weight", (KV * D, C), C ** -0.5
        if g3:
            yield p + "self_attn.q_norm.weight", (D,), None
            yield p + "self_attn.k_norm.weight", (D,), None
        yield p + "self_attn.o_proj.weight", (C, H * D), (H * D) ** -0.5
        yield p + "post_attention_layernorm.weight", (C,), None
        if g3 or g2:
            yield p + "pre_feedforward_layernorm.weight", (C,), None
            yield p + "post_feedforward_layernorm.weight", (C,), None
        yield p + "mlp.gate_proj.weight", (F, C), C ** -0.5
        yield p + "mlp.up_proj.weight", (F, C), C ** -0.5
        yield p + "mlp.down_proj.weight", (C, F), F ** -0.5
    yield "model.norm.weight", (C,), None


def weights(c, gen):
    """bf16 tensors; a norm's w near 0, as Gemma's gains are 1 + w."""
    w = {}
    for name, shape, std in shapes(c):
        t = 0.1 * torch.randn(*shape, generator=gen) if std is None else torch.randn(*shape, generator=gen) * std
        w[name] = t.to(torch.bfloat16)
    return w


def draw(shapes, gen):
    """bf16 tensors of (name, shape, std) from gen: N(0, std), or a gain near 1 where std is None (the other
    families' reference scripts: mpt_ref.py, ...)."""
    return {name: (1 + 0.1 * torch.randn(*shape, generator=gen) if std is None
                   else torch.randn(*shape, generator=gen) * std).to(torch.bfloat16)
            for name, shape, std in shapes}


def write_safetensors(path, w):
    header, off = {}, 0
    for name, t in w.items():
        n = t.numel() * 2
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [off, off + n]}
        off += n
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header).encode()
    h += b" " * (-(8 + len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for t in w.values():
            f.write(t.contiguous().view(torch.int16).numpy().astype("<i2").tobytes())


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def forward(c, W, ids):
    """Logits (T, V) of one window from the float64 weights W."""
    H, KV, C, D, eps = c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size"], c["head_dim"], \
        c["rms_norm_eps"]
    T, g3, g2 = ids.shape[0], c["model_type"] == "gemma3_text", c["model_type"] == "gemma2"
    pos = torch.arange(T, dtype=torch.float64)

    def table(base, factor):
        inv = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.float64) / D)) / factor
        ang = pos[:, None] * inv[None, :]
        emb = torch.cat((ang, ang), dim=-1)
        return emb.cos(), emb.sin()

    scaling = c.get("rope_scaling") or {"factor": 1.0}
    glob = table(c["rope_theta"], scaling["factor"])
    loc = table(c["rope_theta"] if g2 else c.get("rope_local_base_freq", 1.0), 1.0)

    def cap(x, c):
        return c * torch.tanh(x / c) if c else x

    def rms(x, g):
        return (1 + g) * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    i, j = pos[:, None], pos[None, :]
    causal = torch.where(j > i, float("-inf"), 0.0)
    window = torch.where((j > i) | (i - j >= c.get("sliding_window", 1 << 30)), float("-inf"), 0.0)
    x = W["model.embed_tokens.weight"][ids] * math.sqrt(C)
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        local = (g3 and c["layer_types"][l] == "sliding_attention") or (g2 and l % 2 == 0)
        cos, sin = loc if local else glob
        h = rms(x, W[p + "input_layernorm.weight"])
        q = (h @ W[p + "self_attn.q_proj.weight"].T).view(T, H, D).transpose(0, 1)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).view(T, KV, D).transpose(0, 1)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).view(T, KV, D).transpose(0, 1)
        if g3:
            q, k = rms(q, W[p + "self_attn.q_norm.weight"]), rms(k, W[p + "self_attn.k_norm.weight"])
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(H // KV, dim=0), v.repeat_interleave(H // KV, dim=0)
        scale = c["query_pre_attn_scalar"] ** -0.5 if g3 or g2 else D ** -0.5
        scores = cap((q @ k.transpose(1, 2)) * scale, c.get("attn_logit_softcapping"))
        a = torch.softmax(scores + (window if local else causal), dim=-1) @ v
        o = a.transpose(0, 1).reshape(T, H * D) @ W[p + "self_attn.o_proj.weight"].T
        if g3 or g2:
            x = x + rms(o, W[p + "post_attention_layernorm.weight"])
            h = rms(x, W[p + "pre_feedforward_layernorm.weight"])
        else:
            x = x + o
            h = rms(x, W[p + "post_attention_layernorm.weight"])
        m = (gelu_tanh(h @ W[p + "mlp.gate_proj.weight"].T) * (h @ W[p + "mlp.up_proj.weight"].T)) \
            @ W[p + "mlp.down_proj.weight"].T
        x = x + (rms(m, W[p + "post_feedforward_layernorm.weight"]) if g3 or g2 else m)
    return cap(rms(x, W["model.norm.weight"]) @ W["model.embed_tokens.weight"].T, c.get("final_logit_softcapping"))


def grads(config, w, ids, fwd=None):
    """d(mean NLL of the window)/d(each weight) by autograd on the upcast weights: per tensor its norm and
    the values at GRAD_PICKS flat indices spread over it (index k * n // GRAD_PICKS + k % 7); fwd(config,
    W, ids), the logits, is this file's forward unless given (mpt_ref.py passes its own)."""
    W = {k: v.double().requires_grad_() for k, v in w.items()}
    lg = (fwd or forward)(config, W, ids)
    torch.nn.functional.cross_entropy(lg[:-1], ids[1:]).backward()
    out = {}
    for name, t in W.items():
        g, n = t.grad.flatten(), t.numel()
        idx = sorted({(k * n // GRAD_PICKS + k % 7) % n for k in range(GRAD_PICKS)})
        out[name] = {"norm": g.norm().item(), "idx": idx, "val": [g[i].item() for i in idx]}
    return out


def write_config(path, config):
    with open(path, "w") as f:    # a key a line, lists on theirs
        f.write("{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in config.items()) + "\n}\n")


def multimodal(out, w):
    defaults = ("rope_theta", "rope_local_base_freq", "rms_norm_eps", "hidden_activation", "final_logit_softcapping",
                "attn_logit_softcapping", "attention_bias", "architectures", "torch_dtype", "layer_types")
    text = {k: v for k, v in GEMMA3.items() if k not in defaults}
    mm = {k: v for k, v in w.items()}
    mm = {"language_model." + k: v for k, v in mm.items()}
    mm["vision_tower.vision_model.embeddings.patch_embedding.weight"] = torch.zeros(4, 3, 2, 2, dtype=torch.bfloat16)
    write_safetensors(os.path.join(out, "model.safetensors"), mm)
    write_config(os.path.join(out, "config.json"), dict(architectures=["Gemma3ForConditionalGeneration"],
                                                        model_type="gemma3", text_config=text,
                                                        vision_config={"model_type": "siglip_vision_model"},
                                                        mm_tokens_per_image=256, torch_dtype="bfloat16"))


def window(config, w, ids, fwd, **kw):
    """One window's record: its ids, the NLL of each next token and the last position's logits, from fwd
    (config, W, ids, **kw) on the weights w upcast to float64."""
    lg = fwd(config, {k: v.double() for k, v in w.items()}, ids, **kw)
    nll = torch.nn.functional.cross_entropy(lg[:-1], ids[1:], reduction="none")
    return {"ids": ids.tolist(), "nll": nll.tolist(), "last_logits": lg[-1].tolist()}


def write_tiny(out, config, w, gen, script, fwd, extra=None):
    """DIR/{model.safetensors, config.json, ref.json} of the weights w: ref.json holds a window of random
    ids (from gen) of each of LENGTHS through fwd, then extra(ref)'s keys when given, then ("grad") the
    first window's gradient. The reference scripts of the other families (mpt_ref.py, ...) write theirs
    by it too."""
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"), w)
    write_config(os.path.join(out, "config.json"), config)
    ref = {"what": f"tests/ref/{script}: float64 forward of the directory's bf16 weights upcast",
           "torch": torch.__version__, "windows": []}
    for T in LENGTHS:
        ids = torch.randint(3, config["vocab_size"], (T,), generator=gen)
        ref["windows"].append(window(config, w, ids, fwd))
        print(f"T {T}: mean NLL {sum(ref['windows'][-1]['nll']) / (T - 1):.9f}")
    ref.update(extra(ref) if extra else {})
    ref["grad"] = grads(config, w, torch.tensor(ref["windows"][0]["ids"]), fwd)
    with open(os.path.join(out, "ref.json"), "w") as f:
        json.dump(ref, f)
        f.write("\n")


def main():
    args = sys.argv[1:]
    g1, g2, mm = args[:1] == ["--gemma1"], args[:1] == ["--gemma2"], args[:1] == ["--multimodal"]
    if len(args) != 1 + (g1 or g2 or mm):
        sys.exit(__doc__)
    out, config = args[-1], GEMMA1 if g1 else GEMMA2 if g2 else GEMMA3
    gen = torch.Generator().manual_seed(0)
    w = weights(config, gen)
    if mm:
        os.makedirs(out, exist_ok=True)
        return multimodal(out, w)
    write_tiny(out, config, w, gen, "gemma_ref.py", forward)


if __name__ == "__main__":
    main()
