#!/usr/bin/python3
"""Convert a llama2.c legacy .bin checkpoint into a Hugging Face Llama directory.

    tests/ref/llama2c_to_hf.py MODEL.bin OUTDIR [--dtype BF16|F16|F32] [--shards N]
                               [--tokenizer TOK.bin]

Writes OUTDIR/config.json (transformers' LlamaConfig fields) and the weights as
safetensors under transformers' Llama names, either model.safetensors or N
shards named by model.safetensors.index.json, and the llama2.c tokenizer
(--tokenizer, default tok<V>.bin or tokenizer.bin beside MODEL.bin) as
tokenizer.json and tokenizer_config.json in the Llama-2 family's layout.
Written with numpy only, from the llama2.c file layout (run.c's
read_checkpoint and its tokenizer reader) and the transformers conventions:

* q_proj and k_proj rows are permuted from llama2.c's interleaved rotary pairs
  (x[2k], x[2k+1]) to Hugging Face's half-split pairs (x[k], x[k+D/2]), the
  permutation transformers' convert_llama_weights_to_hf.py applies
  (w.view(heads, D//2, 2, C).transpose(1, 2).reshape(heads*D, C)).
* BF16 is the F32 value rounded to nearest even in its top 16 bits; F16 is
  numpy's IEEE half.
* tie_word_embeddings follows the sign of llama2.c's vocab_size.
* tokenizer.json is a BPE model with byte_fallback and fuse_unk, as Llama-2's:
  the vocabulary is llama2.c's pieces in id order with "\u2581" for a space
  and ids 0, 1, 2 named <unk>, <s>, </s> (llama2.c stores "\n<s>\n" and
  "\n</s>\n"); the merges are derived from the vocabulary as transformers'
  SentencePiece converter does (SentencePieceExtractor): every split of a
  piece into two pieces that are both in the vocabulary, ordered by the
  merged piece's score (highest first; ties by id), then by the parts' ids.
  Ranking merges by the merged piece's score is what llama2.c's encoder does
  (it merges the adjacent pair whose concatenation scores highest), so the
  two encode alike. Normalizer Prepend "\u2581" + Replace " " -> "\u2581"
  (run.c's dummy prefix), no pre-tokenizer, a TemplateProcessing that puts
  <s> first, and the decoder Replace, ByteFallback, Fuse, Strip(1, 0).

lenx's tests load the committed output tests/ref/stories260K-hf/ (made with
the defaults: BF16, one file) and compare it with the .bin and tok512.bin.
"""
import argparse
import json
import os
import struct

import numpy as np


def read_llama2c(path):
    with open(path, "rb") as f:
        raw = f.read()
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = struct.unpack("<7i", raw[:28])
    tied = vocab > 0
    vocab = abs(vocab)
    hd = dim // heads
    w = np.frombuffer(raw, dtype="<f4", offset=28)
    at = 0

    def take(*shape):
        nonlocal at
        n = int(np.prod(shape))
        t = w[at:at + n].reshape(shape)
        at += n
        return t

    t = {"emb": take(vocab, dim), "rms_att": take(layers, dim), "wq": take(layers, dim, dim),
         "wk": take(layers, kv_heads * hd, dim), "wv": take(layers, kv_heads * hd, dim),
         "wo": take(layers, dim, dim), "rms_ffn": take(layers, dim), "w1": take(layers, hidden, dim),
         "w2": take(layers, dim, hidden), "w3": take(layers, hidden, dim), "rms_final": take(dim)}
    take(seq_len, hd)       # freq_cis_real and freq_cis_imag, (seq_len, hd/2) each
    t["wcls"] = t["emb"] if tied else take(vocab, dim)
    assert at == w.size, (at, w.size)
    cfg = dict(dim=dim, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads, vocab=vocab,
               seq_len=seq_len, tied=tied)
    return cfg, t


def permute(w, n_heads):
    """Interleaved rotary rows -> half-split rows, per head (transformers' permute)."""
    rows, cols = w.shape
    return w.reshape(n_heads, rows // n_heads // 2, 2, cols).transpose(0, 2, 1, 3).reshape(rows, cols)


def hf_tensors(cfg, t):
    out = {"model.embed_tokens.weight": t["emb"]}
    for l in range(cfg["layers"]):
        p = f"model.layers.{l}."
        out[p + "input_layernorm.weight"] = t["rms_att"][l]
        out[p + "self_attn.q_proj.weight"] = permute(t["wq"][l], cfg["heads"])
        out[p + "self_attn.k_proj.weight"] = permute(t["wk"][l], cfg["kv_heads"])
        out[p + "self_attn.v_proj.weight"] = t["wv"][l]
        out[p + "self_attn.o_proj.weight"] = t["wo"][l]
        out[p + "post_attention_layernorm.weight"] = t["rms_ffn"][l]
        out[p + "mlp.gate_proj.weight"] = t["w1"][l]
        out[p + "mlp.up_proj.weight"] = t["w3"][l]
        out[p + "mlp.down_proj.weight"] = t["w2"][l]
    out["model.norm.weight"] = t["rms_final"]
    if not cfg["tied"]:
        out["lm_head.weight"] = t["wcls"]
    return out


def encode(a, dtype):
    a = np.ascontiguousarray(a, dtype="<f4")
    if dtype == "F32":
        return a.tobytes()
    if dtype == "F16":
        return a.astype("<f2").tobytes()
    bits = a.view("<u4").astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16      # round to nearest even
    return rounded.astype("<u2").tobytes()


def write_safetensors(path, tensors, dtype):
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors.items():
        b = encode(a, dtype)
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-(8 + len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def config_json(cfg):
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": cfg["dim"], "intermediate_size": cfg["hidden"],
        "num_hidden_layers": cfg["layers"], "num_attention_heads": cfg["heads"],
        "num_key_value_heads": cfg["kv_heads"], "vocab_size": cfg["vocab"],
        "max_position_embeddings": cfg["seq_len"], "hidden_act": "silu", "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "rope_scaling": None, "attention_bias": False, "mlp_bias": False,
        "tie_word_embeddings": cfg["tied"], "bos_token_id": 1, "eos_token_id": 2,
        "torch_dtype": "bfloat16",
    }


def read_llama2c_tokenizer(path):
    """[(piece bytes, score)] in id order: int32 max_token_length, then per
    token float32 score, int32 length, bytes."""
    with open(path, "rb") as f:
        raw = f.read()
    at, toks = 4, []
    while at < len(raw):
        score, n = struct.unpack("<fi", raw[at:at + 8])
        toks.append((raw[at + 8:at + 8 + n], score))
        at += 8 + n
    return toks


SPECIALS = ["<unk>", "<s>", "</s>"]


def sp_vocab(toks):
    """{piece: id} and [score] in SentencePiece's spelling ("\u2581" for a space)."""
    vocab = {}
    for i, (b, _) in enumerate(toks):
        piece = SPECIALS[i] if i < 3 else b.decode("utf-8").replace(" ", "\u2581")
        assert piece not in vocab, f"piece {piece!r} (id {i}) twice"
        vocab[piece] = i
    return vocab, [s for _, s in toks]


def sp_merges(vocab, scores):
    """transformers' SentencePieceExtractor.extract with the pieces' scores."""
    merges = []
    for piece, i in vocab.items():
        local = [(piece[:k], piece[k:]) for k in range(1, len(piece))]
        local = [(l, r) for l, r in local if l in vocab and r in vocab]
        local.sort(key=lambda lr: (vocab[lr[0]], vocab[lr[1]]))
        merges += [(l, r, scores[i]) for l, r in local]
    merges.sort(key=lambda m: m[2], reverse=True)       # stable: ties keep id order
    return [f"{l} {r}" for l, r, _ in merges]


def added(i):
    return {"id": i, "content": SPECIALS[i], "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def tokenizer_json(toks):
    vocab, scores = sp_vocab(toks)
    bos = {"SpecialToken": {"id": "<s>", "type_id": 0}}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(i) for i in range(3)],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True,
                  "vocab": vocab, "merges": sp_merges(vocab, scores)},
    }


def tokenizer_config(seq_len):
    return {
        "add_bos_token": True, "add_eos_token": False,
        "added_tokens_decoder": {str(i): {k: v for k, v in added(i).items() if k != "id"} for i in range(3)},
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": None,
        "clean_up_tokenization_spaces": False, "legacy": True, "model_max_length": seq_len,
        "tokenizer_class": "LlamaTokenizer",
    }


def write_tokenizer(path, outdir, cfg):
    toks = read_llama2c_tokenizer(path)
    assert len(toks) == cfg["vocab"], f"{path}: {len(toks)} tokens, the model has {cfg['vocab']}"
    for name, obj in (("tokenizer.json", tokenizer_json(toks)), ("tokenizer_config.json", tokenizer_config(cfg["seq_len"]))):
        with open(os.path.join(outdir, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, ensure_ascii=False)
            f.write("\n")


def find_tokenizer(model, vocab):
    d = os.path.dirname(os.path.abspath(model))
    for name in (f"tok{vocab}.bin", "tokenizer.bin"):
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("outdir")
    ap.add_argument("--dtype", default="BF16", choices=["BF16", "F16", "F32"])
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--tokenizer", help="llama2.c tokenizer (default: tok<V>.bin or tokenizer.bin beside MODEL)")
    a = ap.parse_args()
    cfg, t = read_llama2c(a.model)
    tensors = hf_tensors(cfg, t)
    os.makedirs(a.outdir, exist_ok=True)
    tok = a.tokenizer or find_tokenizer(a.model, cfg["vocab"])
    if tok:
        write_tokenizer(tok, a.outdir, cfg)
    else:
        print(f"llama2c_to_hf: no tok{cfg['vocab']}.bin or tokenizer.bin beside {a.model}: no tokenizer.json")
    c = config_json(cfg)
    c["torch_dtype"] = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}[a.dtype]
    with open(os.path.join(a.outdir, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
        f.write("\n")
    if a.shards == 1:
        write_safetensors(os.path.join(a.outdir, "model.safetensors"), tensors, a.dtype)
        return
    names = list(tensors)
    per = -(-len(names) // a.shards)
    weight_map = {}
    for s in range(a.shards):
        file = f"model-{s + 1:05d}-of-{a.shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[s * per:(s + 1) * per]}
        write_safetensors(os.path.join(a.outdir, file), part, a.dtype)
        weight_map.update({n: file for n in part})
    with open(os.path.join(a.outdir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
