#!/usr/bin/env python3
"""An independent PyTorch implementation of the lenx transformer.

What it is: the model of docs/checkpoints.md written from that page alone, in
the usual PyTorch idioms (nn.Linear, nn.Embedding, Hugging Face's rotate_half
for the `half` rope layout, Meta LLaMA's complex multiply for `interleaved`,
F.gelu(approximate="tanh"), F.silu, F.cross_entropy) and sharing no code with
the C engine (harness/engine/model/model.c). tests/ref/model_ref.py runs it in
float64 to make the reference logits, losses and gradients that
tests/test_model.c compares lenx against. It also serves anyone who wants to
run a lenx checkpoint in PyTorch:

    import sys; sys.path.insert(0, "tests/ref")
    from lenx_torch import load_lenx
    model, meta = load_lenx("model.safetensors")
    logits = model(tokens)              # LongTensor (B, T) -> (B, T, vocab)

Needs only torch and numpy (Debian's python3-torch and python3-numpy); the
safetensors package is not used: read_safetensors and write_safetensors below
implement the format (8-byte little-endian header length, JSON header, data).

Supported: modes causal and mlm; MLP gelu, gelu_erf (F.gelu's exact form) and swiglu; norms rms and
layer (nn.LayerNorm, shifted with bias or norm_bias), a bias on every product (bias) or the MLP's (mlp_bias),
the parallel residual
(parallel, with one norm a block under shared_norm); grouped-query attention
(kv_heads; each key/value head repeated for its heads / kv_heads query heads,
as transformers' repeat_kv does), q/k/v biases (qkv_bias), Qwen3's per-head q/k RMSNorm (qk_norm) and a tied output
head (tie_head: logits from tok_emb; head_bias: plus lm_head.bias); positions rope (half or
interleaved), nope or none; logit ops logn in modes su, ssmax and qwen. Any
other method in a checkpoint's stack raises NotImplementedError instead of
running a different model.
"""

import json
import math
import os
import re
import struct
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

BOS, EOS, PAD, MASK, VOCAB = 256, 257, 258, 259, 260

# ---- safetensors --------------------------------------------------------------

_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
           "I8": "<i1", "U8": "<u1", "BOOL": "?"}


def read_safetensors(path):
    """(OrderedDict name -> torch.Tensor in header order, metadata dict of strings)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: {len(raw)} bytes, too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError(f"{path}: header length {n} runs past the end of the file")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = memoryview(raw)[8 + n:]
    meta = header.pop("__metadata__", {}) or {}
    out = OrderedDict()
    for name, e in header.items():
        dt = _DTYPES.get(e["dtype"])
        if dt is None:
            raise ValueError(f"{path}: tensor {name!r} has dtype {e['dtype']}, not supported here")
        shape = [int(s) for s in e["shape"]]
        begin, end = e["data_offsets"]
        count = int(np.prod(shape)) if shape else 1
        if not 0 <= begin <= end <= len(data) or end - begin != count * np.dtype(dt).itemsize:
            raise ValueError(f"{path}: tensor {name!r}: data_offsets {begin, end} do not fit shape {shape}")
        arr = np.frombuffer(data, dtype=dt, count=count, offset=begin).reshape(shape).copy()
        out[name] = torch.from_numpy(arr)
    return out, meta


def write_safetensors(path, tensors, meta=None):
    """Write tensors (name -> tensor or array, in this order) as F32 with string metadata."""
    header, blobs, off = OrderedDict(), [], 0
    if meta:
        header["__metadata__"] = {str(k): str(v) for k, v in meta.items()}
    for name, t in tensors.items():
        if isinstance(t, torch.Tensor):
            t = t.detach().cpu().numpy()
        a = np.ascontiguousarray(np.asarray(t, dtype="<f4"))
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-(8 + len(h)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


# ---- the method stack -----------------------------------------------------------

def parse_stack(text):
    """lenx_stack -> [(method name, params dict)]. lenx writes JSON; a simple
    YAML flow list such as [{rope: {layout: half}}, nope] is accepted too."""
    text = text.strip() or "[]"
    try:
        v = json.loads(text)
    except json.JSONDecodeError:
        def quote(m):
            word = m.group(0)
            try:
                json.loads(word)
                return word
            except json.JSONDecodeError:
                return json.dumps(word)
        v = json.loads(re.sub(r"[A-Za-z0-9_.+\-]+", quote, text))
    if not isinstance(v, list):
        v = [v]
    out = []
    for e in v:
        if isinstance(e, str):
            out.append((e, {}))
        elif isinstance(e, dict) and len(e) == 1:
            (name, params), = e.items()
            out.append((name, dict(params or {})))
        else:
            raise ValueError(f"lenx_stack entry {e!r} is neither a name nor {{name: params}}")
    return out


class Rotary:
    """RoPE: pair k of a head vector at position p turns by p * base^(-2k/D)."""

    def __init__(self, d_head, base=10000.0, layout="half"):
        if d_head % 2:
            raise ValueError(f"rope needs an even head dimension, got {d_head}")
        if layout not in ("half", "interleaved"):
            raise ValueError(f"rope layout {layout!r}: expected half or interleaved")
        self.d, self.layout = d_head, layout
        self.inv_freq = 1.0 / (float(base) ** (torch.arange(0, d_head, 2, dtype=torch.float64) / d_head))

    def __call__(self, x):
        """x (B, H, T, D): position p = 0..T-1 along T."""
        T = x.shape[-2]
        ang = torch.outer(torch.arange(T, dtype=torch.float64), self.inv_freq)     # (T, D/2)
        if self.layout == "half":
            # Hugging Face: x*cos + rotate_half(x)*sin with cos, sin repeated over both halves
            cos = torch.cat([ang.cos(), ang.cos()], dim=-1).to(x.dtype)
            sin = torch.cat([ang.sin(), ang.sin()], dim=-1).to(x.dtype)
            x1, x2 = x[..., : self.d // 2], x[..., self.d // 2:]
            return x * cos + torch.cat([-x2, x1], dim=-1) * sin
        # Meta LLaMA: channels (2k, 2k+1) as one complex number, times e^(i p theta_k)
        xc = torch.view_as_complex(x.contiguous().reshape(*x.shape[:-1], self.d // 2, 2))
        rot = torch.polar(torch.ones_like(ang), ang).to(xc.dtype)
        return torch.view_as_real(xc * rot).reshape(x.shape)


def _row_scale(params, train_len):
    """The logn factor r(n) for a query that sees n keys."""
    mode = params.get("mode", "su")
    if mode == "su":
        base = float(params.get("base", 512))
        return lambda n: torch.log(n) / math.log(base)
    if mode == "ssmax":
        s = float(params.get("s", 0.4))
        return lambda n: s * torch.log(n)
    if mode == "qwen":
        return lambda n: torch.clamp(torch.log(n) / math.log(train_len), min=1.0)
    raise NotImplementedError(f"logn mode {mode!r}")


# ---- the model ----------------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, d_model, heads, kv_heads, d_head, bias, qk_norm=False, eps=1e-5, all_bias=False):
        super().__init__()
        if heads % kv_heads:
            raise ValueError(f"kv_heads {kv_heads} does not divide heads {heads}")
        self.h, self.kv, self.d = heads, kv_heads, d_head
        self.wq = nn.Linear(d_model, heads * d_head, bias=bias)
        self.wk = nn.Linear(d_model, kv_heads * d_head, bias=bias)
        self.wv = nn.Linear(d_model, kv_heads * d_head, bias=bias)
        self.wo = nn.Linear(heads * d_head, d_model, bias=all_bias)
        if qk_norm:     # Qwen3: an RMSNorm of each q and k head (gains of d_head) before the rotation
            self.q_norm, self.k_norm = RMSNorm(d_head, eps), RMSNorm(d_head, eps)
        self.qk_norm = qk_norm

    def forward(self, x, rotary, scales, causal):
        B, T, _ = x.shape
        # rows of wq/wk/wv are head-major: view (B, T, heads, D), then heads first
        q = self.wq(x).view(B, T, self.h, self.d).transpose(1, 2)
        k, v = (w(x).view(B, T, self.kv, self.d).transpose(1, 2) for w in (self.wk, self.wv))
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        if rotary is not None:
            q, k = rotary(q), rotary(k)
        # grouped-query attention: key/value head j serves query heads j*G .. j*G + G-1
        k, v = (t.repeat_interleave(self.h // self.kv, dim=1) for t in (k, v))
        logits = q @ k.transpose(-2, -1) / math.sqrt(self.d)                         # (B, H, T, T)
        i = torch.arange(T)
        n = (i + 1 if causal else torch.full((T,), T)).to(x.dtype).view(T, 1)      # keys row i sees
        for r in scales:
            logits = logits * r(n)
        if causal:
            logits = logits.masked_fill(i.view(1, T) > i.view(T, 1), float("-inf"))
        o = torch.softmax(logits, dim=-1) @ v                                        # (B, H, T, D)
        return self.wo(o.transpose(1, 2).reshape(B, T, self.h * self.d))


class MLP(nn.Module):
    def __init__(self, d_model, d_mlp, kind, bias=False):
        super().__init__()
        self.kind = kind
        self.w1 = nn.Linear(d_model, d_mlp, bias=bias)
        if kind == "swiglu":
            self.w3 = nn.Linear(d_model, d_mlp, bias=bias)
        self.w2 = nn.Linear(d_mlp, d_model, bias=bias)

    def forward(self, x):
        if self.kind == "swiglu":
            return self.w2(F.silu(self.w1(x)) * self.w3(x))
        return self.w2(F.gelu(self.w1(x), approximate="none" if self.kind == "gelu_erf" else "tanh"))


def make_norm(a):
    """The blocks' and the final norm: RMSNorm, or LayerNorm (its shift only with bias or norm_bias)."""
    if a["norm"] == "layer":
        return nn.LayerNorm(a["d_model"], eps=a["norm_eps"], bias=bool(a["bias"] or a["norm_bias"])) \
            if "bias" in nn.LayerNorm.__init__.__code__.co_varnames else _layer_norm(a)
    return RMSNorm(a["d_model"], a["norm_eps"])


def _layer_norm(a):
    """nn.LayerNorm for a torch without its bias argument (Debian's 1.13): the shift dropped by hand."""
    ln = nn.LayerNorm(a["d_model"], eps=a["norm_eps"])
    if not (a["bias"] or a["norm_bias"]):
        del ln.bias
        ln.register_parameter("bias", None)
    return ln


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.attn_norm = make_norm(a)
        self.attn = Attention(a["d_model"], a["heads"], a["kv_heads"] or a["heads"], a["d_head"],
                              bool(a["qkv_bias"] or a["bias"]), bool(a["qk_norm"]), a["norm_eps"], bool(a["bias"]))
        self.mlp_norm = None if a["shared_norm"] else make_norm(a)     # Falcon-7B: the attention's
        self.mlp = MLP(a["d_model"], a["d_mlp"], a["mlp"], bool(a["bias"] or a["mlp_bias"]))
        self.parallel = bool(a["parallel"])

    def forward(self, x, rotary, scales, causal):
        if self.parallel:   # GPT-NeoX, Falcon: both branches read the block's input
            n = self.attn_norm(x)
            return x + self.attn(n, rotary, scales, causal) + self.mlp(self.mlp_norm(x) if self.mlp_norm else n)
        x = x + self.attn(self.attn_norm(x), rotary, scales, causal)
        return x + self.mlp(self.mlp_norm(x))


ARCH_DEFAULTS = {"mode": "causal", "layers": 2, "d_model": 128, "heads": 4, "d_head": 32, "d_mlp": 512,
                 "mlp": "gelu", "vocab": 260, "norm_eps": 1e-5, "kv_heads": 0, "qkv_bias": False,
                 "qk_norm": False, "tie_head": False, "norm": "rms", "bias": False, "parallel": False,
                 "norm_bias": False, "shared_norm": False, "head_bias": False, "mlp_bias": False}


class LenxModel(nn.Module):
    """arch: the lenx_arch mapping; stack: [(name, params)]; train_len: lenx_train_len."""

    def __init__(self, arch, stack=(), train_len=None):
        super().__init__()
        a = dict(ARCH_DEFAULTS, **arch)
        if a["mode"] not in ("causal", "mlm") or a["mlp"] not in ("gelu", "gelu_erf", "swiglu") or \
                a["norm"] not in ("rms", "layer"):
            raise ValueError(f"unknown mode {a['mode']!r}, mlp {a['mlp']!r} or norm {a['norm']!r}")
        unknown = set(a) - set(ARCH_DEFAULTS) - {"init_std"}
        if unknown:     # a part of lenx's block this file does not run (Gemma's, T5's bias, ...)
            raise NotImplementedError(f"arch {sorted(unknown)} is not implemented in lenx_torch")
        self.arch, self.stack, self.causal = a, list(stack), a["mode"] == "causal"
        self.rotary, self.scales, positions = None, [], None
        for name, p in self.stack:
            p = {k: v for k, v in p.items() if k != "train"}     # the stack's flag, not a parameter
            if name in ("rope", "nope"):
                if positions:
                    raise ValueError(f"methods {positions!r} and {name!r} both set the positions")
                positions = name
                if name == "rope":
                    self.rotary = Rotary(a["d_head"], p.get("base", 10000), p.get("layout", "half"))
            elif name == "logn":
                self.scales.append(_row_scale(p, train_len))
            elif name != "none":
                raise NotImplementedError(f"method {name!r} in the stack is not implemented in lenx_torch")
        self.tok_emb = nn.Embedding(a["vocab"], a["d_model"])
        self.layers = nn.ModuleList(Block(a) for _ in range(a["layers"]))
        self.norm = make_norm(a)
        self.tied = bool(a["tie_head"])
        if not self.tied:
            self.lm_head = nn.Linear(a["d_model"], a["vocab"], bias=bool(a["head_bias"]))
        elif a["head_bias"]:    # lm_head.bias alone: the tied head's bias
            self.lm_head = nn.Module()
            self.lm_head.bias = nn.Parameter(torch.zeros(a["vocab"]))

    def forward(self, tokens):
        """tokens (B, T) ints -> logits (B, T, vocab)."""
        x = self.tok_emb(tokens)
        for layer in self.layers:
            x = layer(x, self.rotary, self.scales, self.causal)
        x = self.norm(x)
        # tied: the embedding matrix is also the output matrix (autograd sums both uses)
        if not self.tied:
            return self.lm_head(x)
        return x @ self.tok_emb.weight.t() + (self.lm_head.bias if self.arch["head_bias"] else 0)

    def loss(self, tokens, targets):
        """Mean cross-entropy over scored positions (targets < 0 are not scored)."""
        logits = self(tokens)
        t = targets.clone()
        t[t < 0] = -100
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), t.reshape(-1), ignore_index=-100)


def load_lenx(path, dtype=torch.float32):
    """A lenx checkpoint -> (LenxModel configured from its metadata, metadata dict of strings)."""
    tensors, meta = read_safetensors(path)
    for key in ("lenx_arch", "lenx_stack", "lenx_train_len"):
        if key not in meta:
            raise ValueError(f"{path}: no {key!r} in the safetensors __metadata__ (docs/checkpoints.md)")
    model = LenxModel(json.loads(meta["lenx_arch"]), parse_stack(meta["lenx_stack"]),
                      int(meta["lenx_train_len"]))
    model.load_state_dict({k: v.float() for k, v in tensors.items()}, strict=True)
    return model.to(dtype), meta
