#!/usr/bin/env python3
"""tests/fuzz/make_seeds.py - the fuzz targets' seed corpora and dictionaries.

What it writes (all committed; rerun only after a new method, task or
parameter, or a change of the checkpoint format):

  tests/fuzz/corpus/config/       every configs/*.yaml and configs/repro/*.yaml,
                                  and the small sweeps in SMALL below (models
                                  with a mixture, a checkpoint, trained and
                                  fine-tuned stacks, seeds lists)
  tests/fuzz/config.dict          YAML tokens, then every top-level, model and
                                  mixture key, method and task name, and
                                  parameter name and enum value found in the
                                  schema tables (LX_P_* rows) of the sources
  tests/fuzz/corpus/safetensors/  tests/ref/safetensors_ref.safetensors and
                                  four tiny lenx checkpoints written here
                                  from docs/checkpoints.md (causal GELU,
                                  masked-LM SwiGLU, a learned logit scale,
                                  grouped-query with biases and a tied head; d_model
                                  8 and the byte vocabulary, 260, which the corpus
                                  tasks need), each under 20 KB
  tests/fuzz/safetensors.dict     JSON tokens, dtypes, header and metadata
                                  keys, tensor names

Standard library only:  python3 tests/fuzz/make_seeds.py
"""
import glob
import json
import os
import re
import shutil
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FUZZ = os.path.join(ROOT, "tests", "fuzz")

SMALL = {
    "mixture.yaml": """name: mix
models:
  m:
    arch: {mode: causal, layers: 1, d_model: 16, heads: 2, d_head: 8, d_mlp: 32}
    train: {length: 128, batch: 2, steps: 3, warmup: 1}
    mixture:
      - passkey: {template: short, weight: 0.5}
      - needle: {template: short, needles: 1, weight: 0.5, score: answer}
methods: [rope, [rope, {yarn: {scale: 4}}], [rope, {logn: {mode: ssmax, train: true}}]]
tasks: [{passkey: {template: short, samples: 2, depths: 2}}, {topic: {template: short, replies: 0}}]
lengths: [200, 400]
seeds: [1, 2]
""",
    "checkpoint.yaml": """name: ck
models:
  c: {checkpoint: tests/ref/model_ckpt_causal_rope.safetensors}
methods: [rope, [rope, {ntk: {scale: 2}}]]
tasks: [{ppl: {windows: 1}}, {attn: {windows: 1, ranges: [[1, 4], [4, 16]]}}]
lengths: [32]
""",
    "finetune.yaml": """name: ft
seed: 3
models:
  m:
    arch: {mode: mlm, layers: 1, d_model: 8, heads: 1, d_head: 8, d_mlp: 8, mlp: swiglu}
    train: {length: 16, batch: 1, steps: 2, warmup: 0, mask_prob: 0.2}
methods: [rope, [rope, {pi: {scale: 2, finetune: 5}}], [nope, {window: {size: 4}}]]
tasks: [{mlm: {windows: 1}}]
lengths: [16, 32]
""",
    "gaussian-anchors.yaml": """name: &n g
methods: &m [none, infoscale, {scaleinv: {tau: 10}}]
tasks:
  - gaussian: {samples: 10, ranges: [[1, 10]]}
lengths: [100, 1000]
""",
}

YAML_TOKENS = [":", ": ", "- ", "[", "]", "{", "}", ",", "&a ", "*a", "<<: ", "---", "...", "!!str ",
               "!!int ", "!!map ", "!!seq ", "? ", "|", ">", "'", "\"", "#", "\n", "\n  ", "null", "~",
               "true", "false", "yes", "0x10", "0o7", "1e300", "-1e300", ".inf", "-.inf", ".nan", "-1",
               "0", "1e6", "2147483648", "9223372036854775807", "4294967296", "1e-300", "%YAML 1.1",
               "\t"]
ST_TOKENS = ["{", "}", "[", "]", ":", ",", "\"", "\\u", "\\uD800", "\\uDC00", "\\u0000", "\\\\",
             "\"dtype\"", "\"shape\"", "\"data_offsets\"", "\"__metadata__\"", "\"F32\"", "\"F16\"",
             "\"BF16\"", "\"I64\"", "0", "-1", "4", "9223372036854775807", "18446744073709551616",
             "1.5", "1e3", "true", "null", "\"lenx_arch\"", "\"lenx_stack\"", "\"lenx_train_len\"",
             "\"lenx_train\"", "\"lenx_model_key\"", "\"format\"", "\"pt\"", "\"mode\"", "\"causal\"",
             "\"mlm\"", "\"layers\"", "\"d_model\"", "\"heads\"", "\"d_head\"", "\"d_mlp\"", "\"mlp\"",
             "\"swiglu\"", "\"gelu\"", "\"vocab\"", "\"norm_eps\"", "\"init_std\"", "\"logit_scale\"",
             "\"kv_heads\"", "\"qkv_bias\"", "\"tie_head\"", "\"layers.0.attn.wq.bias\"",
             "\"layers.0.attn.wk.bias\"", "\"layers.0.attn.wv.bias\"",
             "\"tok_emb.weight\"", "\"layers.0.attn_norm.weight\"", "\"layers.0.attn.wq.weight\"",
             "\"layers.0.attn.wk.weight\"", "\"layers.0.attn.wv.weight\"", "\"layers.0.attn.wo.weight\"",
             "\"layers.0.attn.logit_scale\"", "\"layers.0.mlp_norm.weight\"", "\"layers.0.mlp.w1.weight\"",
             "\"layers.0.mlp.w2.weight\"", "\"layers.0.mlp.w3.weight\"", "\"norm.weight\"",
             "\"lm_head.weight\"", "[{\\\"rope\\\":{}}]", "{\\\"mode\\\":\\\"causal\\\"}"]


def schema_words():
    """Parameter names and enum values of every LX_P_* row, method and task names."""
    words = set()
    for path in glob.glob(os.path.join(ROOT, "*", "*.c")) + glob.glob(os.path.join(ROOT, "harness", "*", "*.c")):
        text = open(path, encoding="utf-8").read()
        for m in re.finditer(r'LX_P_(\w+)\(\s*struct \w+,\s*(\w+),\s*"([^"]*)"(?:,\s*"([^"]*)")?', text):
            kind, name, default, options = m.groups()
            words.add(name)
            if kind == "ENUM" and options:
                words.update(options.split("|"))
    for d in ("methods/methods.def", "tasks/tasks.def"):
        words.update(re.findall(r"LX_\w+\((\w+)\)", open(os.path.join(ROOT, d)).read()))
    words.update(["name", "description", "seed", "seeds", "methods", "tasks", "lengths", "models", "arch",
                  "train", "checkpoint", "mixture", "weight", "score", "answer", "finetune",
                  "tests/ref/model_ckpt_causal_rope.safetensors", "tests/ref/safetensors_ref.safetensors"])
    return sorted(words)


def dict_line(tok):
    # libFuzzer's dictionary reads three escapes only: backslash, quote, and hex xNN
    esc = "".join("\\" + c if c in "\\\"" else c if " " <= c <= "~" else "\\x%02X" % ord(c) for c in tok)
    return f'"{esc}"\n'


def write_dict(path, title, tokens):
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# {os.path.relpath(path, ROOT)} - libFuzzer dictionary: {title}.\n")
        f.write("# Written by tests/fuzz/make_seeds.py; rerun it rather than editing by hand.\n")
        seen = set()
        for t in tokens:
            if t not in seen:
                seen.add(t)
                f.write(dict_line(t))


def tensors(arch):
    """(name, shape) in file order, as docs/checkpoints.md's table lists them."""
    V, C, H, D, F = arch["vocab"], arch["d_model"], arch["heads"], arch["d_head"], arch["d_mlp"]
    KV = arch.get("kv_heads") or H
    out = [("tok_emb.weight", [V, C])]
    for l in range(arch["layers"]):
        p = f"layers.{l}."
        out += [(p + "attn_norm.weight", [C]), (p + "attn.wq.weight", [H * D, C]),
                (p + "attn.wk.weight", [KV * D, C]), (p + "attn.wv.weight", [KV * D, C])]
        if arch.get("qkv_bias"):
            out += [(p + "attn.wq.bias", [H * D]), (p + "attn.wk.bias", [KV * D]), (p + "attn.wv.bias", [KV * D])]
        out.append((p + "attn.wo.weight", [C, H * D]))
        if arch.get("logit_scale"):
            out.append((p + "attn.logit_scale", [H]))
        out += [(p + "mlp_norm.weight", [C]), (p + "mlp.w1.weight", [F, C])]
        if arch["mlp"] == "swiglu":
            out.append((p + "mlp.w3.weight", [F, C]))
        out.append((p + "mlp.w2.weight", [C, F]))
    return out + [("norm.weight", [C])] + ([] if arch.get("tie_head") else [("lm_head.weight", [V, C])])


def checkpoint(path, arch, stack, train_len):
    header, data = {}, b""
    for i, (name, shape) in enumerate(tensors(arch)):
        count = 1
        for s in shape:
            count *= s
        values = [((i * 7 + k * 3) % 11 - 5) / 8.0 for k in range(count)]
        begin = len(data)
        data += struct.pack(f"<{count}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [begin, len(data)]}
    header["__metadata__"] = {"format": "pt", "lenx_version": "0.1.0",
                              "lenx_arch": json.dumps(arch, separators=(",", ":")),
                              "lenx_train": "{}", "lenx_stack": stack, "lenx_train_len": str(train_len),
                              "lenx_model_key": "fuzzseed"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main():
    cfg = os.path.join(FUZZ, "corpus", "config")
    st = os.path.join(FUZZ, "corpus", "safetensors")
    for d in (cfg, st):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    for p in sorted(glob.glob(os.path.join(ROOT, "configs", "*.yaml")) +
                    glob.glob(os.path.join(ROOT, "configs", "repro", "*.yaml"))):
        shutil.copy(p, os.path.join(cfg, os.path.basename(p)))
    for name, text in SMALL.items():
        with open(os.path.join(cfg, name), "w") as f:
            f.write(text)
    write_dict(os.path.join(FUZZ, "config.dict"), "YAML tokens, lenx keys, names and parameters",
               YAML_TOKENS + schema_words())

    shutil.copy(os.path.join(ROOT, "tests", "ref", "safetensors_ref.safetensors"), os.path.join(st, "ref.safetensors"))
    base = {"mode": "causal", "layers": 1, "d_model": 8, "heads": 1, "d_head": 4, "d_mlp": 8, "mlp": "gelu",
            "vocab": 260, "norm_eps": 1e-5, "init_std": 0.02}
    checkpoint(os.path.join(st, "causal.safetensors"), base, '[{"rope":{"base":10000,"layout":"half"}}]', 16)
    checkpoint(os.path.join(st, "mlm-swiglu.safetensors"), dict(base, mode="mlm", mlp="swiglu", heads=2),
               '[{"rope":{"base":500,"layout":"interleaved"}}]', 8)
    checkpoint(os.path.join(st, "ssmax.safetensors"), dict(base, logit_scale=True),
               '[{"nope":{}},{"logn":{"mode":"ssmax","s":0.4,"learn":true,"train":true}}]', 16)
    checkpoint(os.path.join(st, "gqa.safetensors"),
               dict(base, heads=4, kv_heads=2, d_head=2, qkv_bias=True, tie_head=True),
               '[{"rope":{"base":10000,"layout":"half"}}]', 16)
    write_dict(os.path.join(FUZZ, "safetensors.dict"), "JSON tokens, dtypes, header keys, lenx metadata",
               ST_TOKENS)
    for d in (cfg, st):
        print(f"{os.path.relpath(d, ROOT)}: {len(os.listdir(d))} files")


if __name__ == "__main__":
    main()
