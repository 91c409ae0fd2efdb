#!/usr/bin/env python3
"""Reference logits, losses and gradients of the lenx transformer.

What it is: for each committed checkpoint tests/ref/model_ckpt_<case>.safetensors
(written by lenx itself: tests/test_model.c, `model_ref/write` with
LENX_WRITE_REF=1), load it with the independent PyTorch implementation
tests/ref/lenx_torch.py (configured from the checkpoint's own metadata), run
fixed windows in float64, and write tests/ref/model_ref_<case>.safetensors:

  tokens, targets      (B, T) the windows, as floats (targets -1 = not scored)
  logits               (B, T, vocab)
  loss                 [1] mean cross-entropy over scored targets
  grad.<tensor name>   d loss / d weight, one per checkpoint tensor

all stored F32. tests/test_model.c (suite model_ref) compares lenx's forward
and backward against these. Run through tests/ref/model_ref.sh, which first
writes the checkpoints; the test suite itself never needs Python.

Windows (the same formula is in tests/test_model.c, make_windows): B = 2,
T = 16 (causal_long: B = 1, T = 300, past the tiles of lenx's tiled training
attention), byte stream s_b[i] = (37*(T*b + i) + 11) % 256.
  causal: input [BOS, s_0 .. s_{T-2}], targets s_0 .. s_{T-1}
  mlm:    input s with MASK where (7i + 3b) % 5 == 1, targets only there
"""

import os
import sys
from collections import OrderedDict

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lenx_torch import BOS, MASK, load_lenx, write_safetensors  # noqa: E402

CASES = [("causal_rope", "causal", 2, 16), ("mlm_logn", "mlm", 2, 16), ("causal_ssmax", "causal", 2, 16),
         ("causal_gqa", "causal", 2, 16), ("causal_long", "causal", 1, 300),
         ("causal_qknorm", "causal", 2, 16)]


def windows(causal, B, T):
    tok = torch.zeros(B, T, dtype=torch.long)
    tgt = torch.full((B, T), -1, dtype=torch.long)
    for b in range(B):
        s = [(37 * (T * b + i) + 11) % 256 for i in range(T)]
        for i in range(T):
            if causal:
                tok[b, i] = BOS if i == 0 else s[i - 1]
                tgt[b, i] = s[i]
            elif (7 * i + 3 * b) % 5 == 1:
                tok[b, i], tgt[b, i] = MASK, s[i]
            else:
                tok[b, i] = s[i]
    return tok, tgt


def main(only):
    """Write every case's reference, or only the cases named in `only`."""
    here = os.path.dirname(os.path.abspath(__file__))
    unknown = set(only) - {c[0] for c in CASES}
    if unknown:
        sys.exit(f"model_ref.py: no case {', '.join(sorted(unknown))}; cases: {', '.join(c[0] for c in CASES)}")
    for case, mode, B, T in CASES:
        if only and case not in only:
            continue
        ckpt = os.path.join(here, f"model_ckpt_{case}.safetensors")
        model, meta = load_lenx(ckpt, dtype=torch.float64)
        assert model.arch["mode"] == mode, (case, model.arch["mode"])
        tok, tgt = windows(model.causal, B, T)
        logits = model(tok)
        loss = model.loss(tok, tgt)
        loss.backward()
        out = OrderedDict(tokens=tok.double(), targets=tgt.double(), logits=logits.detach(),
                          loss=loss.detach().reshape(1))
        for name, p in model.named_parameters():
            out["grad." + name] = p.grad
        path = os.path.join(here, f"model_ref_{case}.safetensors")
        write_safetensors(path, out, {
            "what": "tests/ref/model_ref.py: lenx_torch float64 logits, loss, gradients",
            "checkpoint": os.path.basename(ckpt),
            "lenx_stack": meta["lenx_stack"],
            "torch": torch.__version__,
        })
        gmax = max(p.grad.abs().max().item() for p in model.parameters())
        print(f"{case}: loss {loss.item():.7f}, max |logit| {logits.abs().max().item():.4f}, "
              f"max |grad| {gmax:.4g} -> {os.path.relpath(path)}")


if __name__ == "__main__":
    main(sys.argv[1:])
