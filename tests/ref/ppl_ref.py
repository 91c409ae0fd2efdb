#!/usr/bin/python3
"""Reference perplexities of the ppl protocols (tasks/ppl.c, docs/tasks.md#ppl-protocols).

What it is: stories260K (llama2.c's legacy checkpoint, ../shared/models/stories260K)
run in float64 by the independent PyTorch model tests/ref/lenx_torch.py, over
windows this script lays out itself from each peer's own evaluation code:

  llamacpp       llama.cpp examples/perplexity/perplexity.cpp, perplexity():
                 tokens = [BOS] + text; n_chunk = len // n_ctx; chunk i is
                 tokens[i*n_ctx, (i+1)*n_ctx) with its first token replaced by
                 BOS; the logits at first = n_ctx//2 .. n_ctx-2 score the next
                 token; nll and nll2 summed over tokens; the error printed is
                 sqrt((nll2/count - (nll/count)^2) / (count - 1))
  llamacpp-nobos the same for a vocabulary whose add_bos is false (llama.cpp
                 adds BOS only when llama_vocab_get_add_bos says so): no BOS
                 before the text, none written over a chunk's first token;
                 lenx runs it on stories260K's Hugging Face directory with
                 the BOS taken out of its tokenizer.json's template
  hf_stride      transformers docs/source/en/perplexity.md: no BOS; windows
                 [begin, min(begin + max_length, seq_len)) for begin = 0,
                 stride, ...; labels before the last trg_len = end - prev_end
                 set to -100; the model's shifted mean loss times
                 num_loss_tokens = valid labels - 1; avg_nll = sum / count
  yarn_truncate  jquesnelle/yarn eval/perplexity.py, compute_perplexity with
                 truncate=True: each document's first max_length - 1 tokens
                 after BOS, the BOS label masked, the documents' mean losses
                 averaged
  longlora       dvlab-research/LongLoRA eval.py, evaluate() at batch size 1:
                 starts range(0, len - seq_len, 256) with the last popped,
                 labels = inputs (positions 1 .. seq_len-1 scored), the mean
                 of the windows' losses

The token ids are lenx's: `lenx tokenize --no-specials` of each text (the
tokenizer is checked against llama2.c's encoder elsewhere, tests/test_anytok.c);
the windows, the BOS handling and the forward are this script's own. Writes
tests/ref/ppl_ref.csv, which tests/test_ppl.c (suite ppl_ref) runs lenx
against; the test suite itself never needs Python.

Run from the checkout, with lenx built: /usr/bin/python3 tests/ref/ppl_ref.py
"""
import json
import math
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from lenx_torch import LenxModel  # noqa: E402
from llama2c_to_hf import read_llama2c  # noqa: E402

MODEL = os.path.join(ROOT, "..", "shared", "models", "stories260K")
BOS = 1     # llama2.c's <s>
DOC = "configs/heldout/stories260K/doc_0.txt"   # a text file, as `data:`

# (protocol, length, stride, source): source is a file (`data:`) or "stories"
# (the held-out stories corpus, its documents in manifest order)
CASES = [
    ("llamacpp", 128, 0, DOC),
    ("llamacpp", 512, 0, DOC),
    ("llamacpp-nobos", 128, 0, DOC),
    ("hf_stride", 256, 96, DOC),
    ("yarn_truncate", 512, 0, "stories"),
    ("yarn_truncate", 1024, 0, "../shared/models/stories260K/expected/story.txt"),   # 873 tokens: shorter than L-1
    ("longlora", 384, 0, DOC),
]


def load_model():
    cfg, t = read_llama2c(os.path.join(MODEL, "stories260K.bin"))
    arch = {"mode": "causal", "layers": cfg["layers"], "d_model": cfg["dim"], "heads": cfg["heads"],
            "d_head": cfg["dim"] // cfg["heads"], "d_mlp": cfg["hidden"], "mlp": "swiglu",
            "vocab": cfg["vocab"], "norm_eps": 1e-5, "kv_heads": cfg["kv_heads"], "tie_head": cfg["tied"]}
    model = LenxModel(arch, [("rope", {"layout": "interleaved"})])
    sd = {"tok_emb.weight": t["emb"], "norm.weight": t["rms_final"]}
    names = {"attn_norm": "rms_att", "attn.wq": "wq", "attn.wk": "wk", "attn.wv": "wv", "attn.wo": "wo",
             "mlp_norm": "rms_ffn", "mlp.w1": "w1", "mlp.w2": "w2", "mlp.w3": "w3"}
    for i in range(cfg["layers"]):
        for ours, theirs in names.items():
            sd[f"layers.{i}.{ours}.weight"] = t[theirs][i]
    if not cfg["tied"]:
        sd["lm_head.weight"] = t["wcls"]
    model.load_state_dict({k: torch.tensor(v.copy(), dtype=torch.float64) for k, v in sd.items()}, strict=True)
    return model.to(torch.float64).eval()


def tokenize(path):
    out = subprocess.run([os.path.join(ROOT, "lenx"), "tokenize", "--tokenizer", os.path.join(MODEL, "tok512.bin"),
                          "--no-specials", "--text", os.path.join(ROOT, path)], check=True, capture_output=True)
    return json.loads(out.stdout)


def documents(source):
    if source != "stories":
        return [tokenize(source)]
    with open(os.path.join(ROOT, "configs/heldout/manifest.tsv")) as f:
        rows = [line.split("\t") for line in f.read().splitlines()[1:]]
    return [tokenize(os.path.join("configs/heldout", r[1])) for r in rows if r[0] == "stories"]


def log_probs(model, inp):
    """log p(. | inp[..j]) for every position j: (len(inp), vocab) float64."""
    with torch.no_grad():
        return F.log_softmax(model(torch.tensor([inp]))[0], dim=-1)


def hf_loss(model, inp, labels):
    """A transformers causal LM's loss: the mean over shifted labels that are not -100."""
    with torch.no_grad():
        logits = model(torch.tensor([inp]))[0]
    return F.cross_entropy(logits[:-1], torch.tensor(labels[1:]), ignore_index=-100).item()


def llamacpp(model, toks, n_ctx, add_bos=True):
    tokens = [BOS] + toks if add_bos else list(toks)
    first, nll, nll2, count = n_ctx // 2, 0.0, 0.0, 0
    assert len(tokens) >= 2 * n_ctx
    for i in range(len(tokens) // n_ctx):
        start = i * n_ctx
        head = [BOS] if add_bos else tokens[start:start + 1]
        lp = log_probs(model, head + tokens[start + 1:start + n_ctx])
        for j in range(first, n_ctx - 1):   # logits j score the original tokens[start + j + 1]
            x = -lp[j, tokens[start + j + 1]].item()
            nll, nll2, count = nll + x, nll2 + x * x, count + 1
    avg, var = nll / count, nll2 / count - (nll / count) ** 2
    return avg, math.sqrt(var / (count - 1)), count, len(tokens) // n_ctx


def hf_stride(model, toks, max_length, stride):
    seq_len, nll_sum, n_tokens, prev_end, n_win, scored = len(toks), 0.0, 0, 0, 0, 0
    for begin in range(0, seq_len, stride):
        end = min(begin + max_length, seq_len)
        trg_len = end - prev_end
        inp = toks[begin:end]
        labels = [-100] * (len(inp) - trg_len) + inp[len(inp) - trg_len:] if trg_len < len(inp) else list(inp)
        valid = sum(1 for x in labels if x != -100)
        num_loss_tokens = valid - 1
        nll_sum += hf_loss(model, inp, labels) * num_loss_tokens
        n_tokens += num_loss_tokens
        scored += sum(1 for x in labels[1:] if x != -100)
        n_win += 1
        prev_end = end
        if end == seq_len:
            break
    return nll_sum / n_tokens, float("nan"), scored, n_win


def yarn_truncate(model, docs, max_length):
    nlls, scored = [], 0
    for d in docs:
        enc = d[:max_length - 1]
        inp = [BOS] + enc
        labels = [-100] + enc       # trg_len = len(enc): only BOS is masked
        nlls.append(hf_loss(model, inp, labels))
        scored += len(enc)
    return sum(nlls) / len(nlls), float("nan"), scored, len(docs)


def longlora(model, toks, seq_len):
    all_ix = list(range(0, len(toks) - seq_len, 256))
    all_ix.pop()
    losses = [hf_loss(model, toks[i:i + seq_len], toks[i:i + seq_len]) for i in all_ix]
    return sum(losses) / len(losses), float("nan"), len(all_ix) * (seq_len - 1), len(all_ix)


def main():
    model = load_model()
    rows = ["protocol,length,stride,source,nll,nll_se,n_tokens,n_windows"]
    for protocol, length, stride, source in CASES:
        docs = documents(source)
        flat = [t for d in docs for t in d]
        if protocol.startswith("llamacpp"):
            r = llamacpp(model, flat, length, add_bos=protocol == "llamacpp")
        elif protocol == "hf_stride":
            r = hf_stride(model, flat, length, stride)
        elif protocol == "yarn_truncate":
            r = yarn_truncate(model, docs, length)
        else:
            r = longlora(model, flat, length)
        nll, se, n, nw = r
        rows.append(f"{protocol},{length},{stride},{source},{nll!r},{se!r},{n},{nw}")
        print(rows[-1], f"(text of {len(flat)} tokens)", flush=True)
    with open(os.path.join(HERE, "ppl_ref.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
