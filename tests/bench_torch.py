#!/usr/bin/env python3
"""tests/bench_torch.py - the PyTorch side of `make bench`'s model benchmark.

What it is: the lenx transformer (harness/engine/model/model.h) written the usual
PyTorch way - nn.Embedding, nn.Linear without bias (q|k|v in one Linear, as
nanoGPT does and as lenx stores W_q|W_k|W_v), RMSNorm, rotary positions in the
half-split layout with cos/sin tables built once, causal softmax attention by
matmul and a precomputed mask (torch 1.13 has no scaled_dot_product_attention),
GELU (tanh), cross-entropy, torch.optim.AdamW and clip_grad_norm_ - and a timer
around one training step or one forward pass. tests/bench_model.c starts this
once per configuration with --serve and alternates with lenx in short rounds:
it writes "run <seconds>", reads "step <seconds>" lines up to "done". Without
--serve it times on its own and ends with "tok/s <float> steps <int> ...".

    bench_torch.py --mode train|eval --batch B --length T --threads N
                   [--seconds S] [--warmup W] [--min-steps K] [--steps] [--serve]

Before timing it checks which BLAS torch really loaded (from /proc/self/maps):
the comparison is only fair against Debian's OpenMP build of OpenBLAS, the one
lenx links, so with any other BLAS it prints "skip <reason>" instead of a
number. Lines starting with "info" describe the run (threads, library, core).
"""

import argparse
import ctypes
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ARCH = dict(layers=4, d_model=256, heads=4, d_head=64, d_mlp=1024, vocab=256, norm_eps=1e-5, init_std=0.02)


# ---- the model -------------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        C, H, D = a["d_model"], a["heads"], a["d_head"]
        self.h, self.d = H, D
        self.attn_norm = RMSNorm(C, a["norm_eps"])
        self.wqkv = nn.Linear(C, 3 * H * D, bias=False)
        self.wo = nn.Linear(H * D, C, bias=False)
        self.mlp_norm = RMSNorm(C, a["norm_eps"])
        self.w1 = nn.Linear(C, a["d_mlp"], bias=False)
        self.w2 = nn.Linear(a["d_mlp"], C, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, C = x.shape
        q, k, v = self.wqkv(self.attn_norm(x)).view(B, T, 3, self.h, self.d).permute(2, 0, 3, 1, 4)
        q = q * cos + rotate_half(q) * sin                                   # (B, H, T, D)
        k = k * cos + rotate_half(k) * sin
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d))          # (B, H, T, T)
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, self.h * self.d)
        x = x + self.wo(y)
        return x + self.w2(F.gelu(self.w1(self.mlp_norm(x)), approximate="tanh"))


class Model(nn.Module):
    def __init__(self, a, max_len):
        super().__init__()
        self.tok_emb = nn.Embedding(a["vocab"], a["d_model"])
        self.layers = nn.ModuleList(Block(a) for _ in range(a["layers"]))
        self.norm = RMSNorm(a["d_model"], a["norm_eps"])
        self.lm_head = nn.Linear(a["d_model"], a["vocab"], bias=False)
        D = a["d_head"]
        inv_freq = 10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)   # theta_k = b^(-2k/D)
        ang = torch.outer(torch.arange(max_len, dtype=torch.float64), inv_freq)
        self.register_buffer("cos", torch.cat((ang.cos(), ang.cos()), -1).float(), persistent=False)
        self.register_buffer("sin", torch.cat((ang.sin(), ang.sin()), -1).float(), persistent=False)
        self.register_buffer("mask", torch.ones(max_len, max_len, dtype=torch.bool).triu(1), persistent=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:                    # as lx_model_init: N(0, std), wo and w2 / sqrt(2 layers)
                out_proj = name.endswith("wo.weight") or name.endswith("w2.weight")
                nn.init.normal_(p, 0.0, a["init_std"] / (math.sqrt(2 * a["layers"]) if out_proj else 1.0))

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        cos, sin, mask = self.cos[:T], self.sin[:T], self.mask[:T, :T]
        x = self.tok_emb(tokens)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


# ---- what runs underneath ------------------------------------------------------------

def loaded_blas():
    """Paths of the BLAS libraries mapped into this process."""
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "/" in line}
    return sorted(p for p in paths if "blas" in os.path.basename(p))


def openblas_facts(paths):
    """(library path, corename, parallel mode, threads) of the OpenBLAS torch calls, or None."""
    for p in paths:
        try:
            lib = ctypes.CDLL(p)            # already loaded: the same handle, the same state
            lib.openblas_get_corename.restype = ctypes.c_char_p
        except (OSError, AttributeError):
            continue
        par = {0: "sequential", 1: "pthreads", 2: "openmp"}.get(lib.openblas_get_parallel(), "?")
        return p, lib.openblas_get_corename().decode(), par, lib.openblas_get_num_threads()
    return None


# ---- timing ---------------------------------------------------------------------------

def run(args):
    torch.manual_seed(1)
    torch.set_num_threads(args.threads)
    B, T, V = args.batch, args.length, ARCH["vocab"]
    model = Model(ARCH, T)
    train = args.mode == "train"
    stream = torch.randint(0, V, (4, B, T + 1))         # four batches of random bytes, reused in turn
    batches = [(s[:, :-1].contiguous(), s[:, 1:].contiguous()) for s in stream]
    if train:
        model.train()
        decay = [p for p in model.parameters() if p.dim() == 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                 {"params": no_decay, "weight_decay": 0.0}],
                                lr=3e-4, betas=(0.9, 0.99), eps=1e-8)

        def step(tok, tgt):
            opt.zero_grad(set_to_none=True)
            loss = model(tok, tgt)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return loss.item()
    else:
        model.eval()

        def step(tok, tgt):
            with torch.inference_mode():
                return model(tok, tgt).item()

    step(*batches[0])                                   # first call: BLAS and allocator set-up
    facts = openblas_facts(loaded_blas())
    print(f"info torch {torch.__version__}; torch threads {torch.get_num_threads()}; "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    print(f"info BLAS libraries mapped: {', '.join(loaded_blas()) or 'none'}")
    if facts is None:
        print("skip torch has no OpenBLAS loaded (lenx links the OpenMP OpenBLAS; not comparable)")
        return
    path, core, par, nthr = facts
    print(f"info openblas {path}: core {core}, threading {par}, threads {nthr}")
    if par != "openmp" or "openblas-openmp" not in path:
        print(f"skip torch loaded {path} ({par}); lenx uses the OpenMP OpenBLAS\n"
              "  hint: update-alternatives --config libblas.so.3-x86_64-linux-gnu")
        return
    for i in range(1, args.warmup):
        step(*batches[i % 4])
    counter = [0]

    def timed(seconds, min_steps, verbose):
        """Steps until `seconds` passed and min_steps ran; their times."""
        times, t_start = [], time.perf_counter()
        while len(times) < min_steps or time.perf_counter() - t_start < seconds:
            t0 = time.perf_counter()
            step(*batches[counter[0] % 4])
            times.append(time.perf_counter() - t0)
            counter[0] += 1
            if verbose:
                print(f"step {times[-1]:.6f}", flush=True)
        return times

    if args.serve:
        # Driven by tests/bench_model.c: "run <seconds>" times steps (at least
        # one) and answers "step <s>" lines and "done"; "quit" or EOF ends.
        print("ready", flush=True)
        for line in sys.stdin:
            cmd = line.split()
            if not cmd or cmd[0] == "quit":
                break
            if cmd[0] == "run":
                timed(float(cmd[1]), 1, True)
                print("done", flush=True)
        return
    times = timed(args.seconds, args.min_steps, args.steps)
    med = statistics.median(times)
    print(f"tok/s {B * T / med:.1f} steps {len(times)} median_s {med:.5f} min_s {min(times):.5f} "
          f"max_s {max(times):.5f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("train", "eval"), required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--length", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=6.0, help="time at least this long (after warm-up)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first (at least 1)")
    ap.add_argument("--min-steps", type=int, default=3, help="time at least this many steps")
    ap.add_argument("--steps", action="store_true", help="print every timed step's seconds")
    ap.add_argument("--serve", action="store_true",
                    help="after warm-up print 'ready', then obey 'run <seconds>' / 'quit' lines on stdin")
    run(ap.parse_args())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
