#!/usr/bin/env python3
"""tests/fuzz/make_seeds.py - the fuzz targets' seed corpora and dictionaries.

What it writes (all committed; rerun only after a new method, task or
parameter, or a change of the checkpoint format):

  tests/fuzz/corpus/config/       every configs/*.yaml and configs/repro/*.yaml
                                  (not those naming a checkpoint by ../: it
                                  would not be found from the corpus),
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
  tests/fuzz/corpus/tokenizer_bin/  llama2.c's tok512.bin (../shared/models/
                                  stories260K/), the same cut to its first 300
                                  tokens, and the smallest file that opens
                                  (<unk>, BOS, EOS, 256 byte tokens, a few
                                  merges), each under 8 KB
  tests/fuzz/corpus/tokenizer_json/ small tokenizer.json files of each family:
                                  tests/ref/stories260K-hf's (with its
                                  tokenizer_config.json after a NUL), tests/ref/
                                  tok_tiny.json, and Llama-2's and Qwen3's
                                  (make tokenizers) cut to their first tokens and
                                  the merges among them, each under 16 KB
  tests/fuzz/corpus/encode/       a selector byte (0 tok512.bin, 1 its
                                  tokenizer.json twin, 2 tok_tiny.json) and a text
  tests/fuzz/tokenizer_*.dict, encode.dict  the formats' fields and words
  tests/fuzz/corpus/slurm/        jobs of `lenx slurm` (tests/fuzz/entry.h's
                                  layout) that are written: plain, every
                                  option, paths with spaces, quotes and '%'
  tests/fuzz/slurm.dict           what shells and sbatch read apart, and
                                  Slurm's option syntax

Standard library only:  python3 tests/fuzz/make_seeds.py  (after `make
tokenizers`, and with ../shared/models/stories260K/ beside the checkout)
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
methods: [rope, [rope, {pi: {scale: 2, finetune: 5}}], [rope, {ntk: {finetune: {steps: 2, length: 32, batch: 1}}}],
          [{nope: {finetune: {steps: 2, length: 32}}}, {window: {size: 4}}]]
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
    for path in [p for d in ("harness", "methods", "tasks", "results")
                 for p in glob.glob(os.path.join(ROOT, d, "**", "*.c"), recursive=True)]:
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
                  "protocol", "data", "lenx", "litm", "landmark",  # LX_RETRIEVAL_PRESET_ROWS
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


TOK512 = os.path.join(ROOT, "..", "shared", "models", "stories260K", "tok512.bin")
HF_JSON = {"llama2": os.path.join(ROOT, "build", "tokenizers", "llama2", "models", "tokenizer.json"),
           "qwen3": os.path.join(ROOT, "build", "tokenizers", "qwen3", "models", "tokenizer.json")}

BIN_TOKENS = ["\x00\x00\x00\x00", "\x01\x00\x00\x00", "\x06\x00\x00\x00", "\xff\xff\xff\xff",
              "\x00\x00\x01\x00", "\x00\x00\x80\xbf", "\x00\x00\x80\x7f", "\x00\x00\xc0\x7f",
              "\x00\x00\x80\xff", "<unk>", "\n<s>\n", "\n</s>\n", "<0x", "<0x20>", "<0x41>", " ", " t", "\xe2\x96\x81"]
JSON_TOKENS = ["{", "}", "[", "]", ":", ",", "\"", "null", "true", "false", "0", "-1", "1e9", "2147483648",
               "9223372036854775807", "\\u0000", "\\u2581", "\\uD800", "\"model\"", "\"type\"", "\"BPE\"",
               "\"WordPiece\"", "\"vocab\"", "\"merges\"", "\"byte_fallback\"", "\"fuse_unk\"",
               "\"ignore_merges\"", "\"unk_token\"", "\"dropout\"", "\"continuing_subword_prefix\"",
               "\"end_of_word_suffix\"", "\"added_tokens\"", "\"id\"", "\"content\"", "\"special\"",
               "\"lstrip\"", "\"rstrip\"", "\"single_word\"", "\"normalized\"", "\"normalizer\"",
               "\"normalizers\"", "\"Sequence\"", "\"Prepend\"", "\"prepend\"", "\"Replace\"", "\"NFC\"",
               "\"NFD\"", "\"NFKC\"", "\"NFKD\"", "\"Lowercase\"", "\"pattern\"", "\"String\"", "\"Regex\"",
               "\"pre_tokenizer\"", "\"pretokenizers\"", "\"Split\"", "\"behavior\"", "\"Isolated\"",
               "\"Removed\"", "\"invert\"", "\"ByteLevel\"", "\"add_prefix_space\"", "\"use_regex\"",
               "\"Digits\"", "\"individual_digits\"", "\"Metaspace\"", "\"decoder\"", "\"decoders\"",
               "\"ByteFallback\"", "\"Fuse\"", "\"Strip\"", "\"start\"", "\"stop\"", "\"post_processor\"",
               "\"processors\"", "\"TemplateProcessing\"", "\"single\"", "\"pair\"", "\"SpecialToken\"",
               "\"special_tokens\"", "\"ids\"", "\"tokens\"", "\"bos_token\"", "\"eos_token\"",
               "\"<0x41>\"", "\"<s>\"", "\"<unk>\"", "\"\u0120\"", "\"\u2581\"", "\\p{L}", "\\p{N}", "\\s+",
               "(?!\\S)", "(?i:", "[^", "]+", "|", "{99999}", "(a+)+", "\\", "\x00"]
ENC_TOKENS = ["\xe2\x96\x81", "<s>", "</s>", "<unk>", "<|end|>", "[X]", " the", " a", "\n", "\t", "  ", "\x00",
              "\xc3\xa9", "e\xcc\x81", "\xf0\x9f\x8e\x89", "\xe2\x80\x8d", "\xed\xa0\x80", "\xc0\xaf", "\xff",
              "123", "'s", "Once upon a time"]


def tok_bin(path, tokens, max_len=None):
    """tokens: [(score, bytes)] in id order, as llama2.c's tokenizer.py writes them."""
    data = struct.pack("<i", max_len or max(len(t) for _, t in tokens))
    for score, t in tokens:
        data += struct.pack("<fi", score, len(t)) + t
    with open(path, "wb") as f:
        f.write(data)


def read_tok_bin(path):
    b = open(path, "rb").read()
    at, out = 4, []
    while at < len(b):
        score, n = struct.unpack("<fi", b[at:at + 8])
        out.append((score, b[at + 8:at + 8 + n]))
        at += 8 + n
    return out


def small_json(src, n_keep, n_added_base):
    """src's tokenizer.json cut to ids < n_keep and the merges among them; its
    added tokens renumbered from n_keep (their first n_added_base)."""
    d = json.load(open(src, encoding="utf-8"))
    m = d["model"]
    vocab = {t: i for t, i in m["vocab"].items() if i < n_keep}
    merges = []
    for mg in m["merges"]:
        a, b = mg if isinstance(mg, list) else mg.split(" ", 1)
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(mg)
    m["vocab"], m["merges"] = vocab, merges
    remap = {}
    added = [a for a in d["added_tokens"] if a["id"] < n_keep] + \
            [a for a in d["added_tokens"] if a["id"] >= n_keep][:n_added_base]
    for k, a in enumerate(x for x in added if x["id"] >= n_keep):
        remap[a["id"]] = n_keep + k
        a["id"] = n_keep + k
    d["added_tokens"] = added
    post = d.get("post_processor") or {}
    for tok in (post.get("special_tokens") or {}).values():
        tok["ids"] = [remap.get(i, i) for i in tok["ids"]]
    return json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode()


def tokenizer_seeds(tb, tj, enc):
    real = read_tok_bin(TOK512)
    shutil.copyfile(TOK512, os.path.join(tb, "tok512.bin"))
    tok_bin(os.path.join(tb, "tok512-300.bin"), real[:300], 7)
    base = [(0.0, b"<unk>"), (0.0, b"\n<s>\n"), (0.0, b"\n</s>\n")] + [(0.0, b"<0x%02X>" % i) for i in range(256)]
    tok_bin(os.path.join(tb, "smallest.bin"), base + [(-1.0, b" "), (-2.0, b"a"), (-3.0, b"ab"), (-4.0, b" a"),
                                                      (-5.0, b" ab"), (-6.0, b"b")])
    twin = os.path.join(ROOT, "tests", "ref", "stories260K-hf")
    with open(os.path.join(tj, "stories260K-hf.json"), "wb") as f:
        f.write(open(os.path.join(twin, "tokenizer.json"), "rb").read() + b"\0" +
                open(os.path.join(twin, "tokenizer_config.json"), "rb").read())
    shutil.copy(os.path.join(ROOT, "tests", "ref", "tok_tiny.json"), os.path.join(tj, "tok_tiny.json"))
    for name, keep, n_added in (("llama2", 400, 0), ("qwen3", 700, 4)):
        with open(os.path.join(tj, name + "-small.json"), "wb") as f:
            f.write(small_json(HF_JSON[name], keep, n_added))
    texts = [b"Once upon a time, there was a little girl named Lily.", b"a\0b\0\0c", b"\xff\xfe\xc3 \xed\xa0\x80",
             "caf\u00e9 e\u0301 \u4e16\u754c \U0001f389\u200d\U0001f466 12345".encode(), b"  \t\n\n  x  ",
             "\u2581a <s></s><unk> <|end|>[X] <0x41>".encode(), b"z" * 300]
    for i, text in enumerate(texts):
        for sel in range(3):
            with open(os.path.join(enc, f"text{i}-tok{sel}"), "wb") as f:
                f.write(bytes([sel]) + text)


SLURM_TOKENS = ["\n", "'", '"', "\\", "#", "#SBATCH ", "$(", "`", ";", " ", "%", "%%", "'\\''", "--wrap=",
                "--partition=", "hetjob", "packjob", ":", "-", ",", "UNLIMITED", "1-02:03:04", "4G", "/", "\t", "\r"]


def slurm_job(flags, shards, cpus5, models, *fields):
    """One input of fuzz_slurm: 4 bytes, then NUL-separated fields (entry.h)."""
    return bytes([flags, shards, cpus5, models]) + b"\0".join(f.encode() for f in fields)


def slurm_seeds(d):
    plain = ("quick", "usr/bin/lenx", "home/u/configs/quick.yaml", "home/u", "scratch/u/lenx.db", "scratch/u/quick")
    seeds = {
        "plain": slurm_job(0, 8, 1, 4, *plain),
        "every-option": slurm_job(15, 3, 1, 3, *plain, "/data", "debug,gpu_a-1.x", "1-02:03:04", "512M"),
        "odd-paths": slurm_job(15, 2, 2, 1, "s.1_x", "opt/a b/lenx", "it's/\"q\".yaml", "w #1/$(x)",
                               "d;`y`/x.db", "d 100%/s.1_x", "da'ta", "p", "UNLIMITED", "0"),
    }
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    write_dict(os.path.join(FUZZ, "slurm.dict"), "what the shell and sbatch read apart, Slurm option syntax",
               SLURM_TOKENS)


def main():
    cfg = os.path.join(FUZZ, "corpus", "config")
    st = os.path.join(FUZZ, "corpus", "safetensors")
    tb, tj, enc = (os.path.join(FUZZ, "corpus", d) for d in ("tokenizer_bin", "tokenizer_json", "encode"))
    for d in (cfg, st, tb, tj, enc):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    for p in sorted(glob.glob(os.path.join(ROOT, "configs", "*.yaml")) +
                    glob.glob(os.path.join(ROOT, "configs", "repro", "*.yaml"))):
        if "../" in open(p, encoding="utf-8").read():
            continue    # a checkpoint relative to configs/ (../shared/...): not found from the corpus
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
    tokenizer_seeds(tb, tj, enc)
    write_dict(os.path.join(FUZZ, "tokenizer_bin.dict"), "int32 lengths, float32 scores, llama2.c pieces",
               BIN_TOKENS)
    write_dict(os.path.join(FUZZ, "tokenizer_json.dict"), "JSON tokens, tokenizer.json fields and component types",
               JSON_TOKENS)
    write_dict(os.path.join(FUZZ, "encode.dict"), "words and characters the fixed tokenizers treat apart",
               ENC_TOKENS)
    sl = os.path.join(FUZZ, "corpus", "slurm")
    shutil.rmtree(sl, ignore_errors=True)
    os.makedirs(sl)
    slurm_seeds(sl)
    for d in (cfg, st, tb, tj, enc, sl):
        print(f"{os.path.relpath(d, ROOT)}: {len(os.listdir(d))} files")


if __name__ == "__main__":
    main()
