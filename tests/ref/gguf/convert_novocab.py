# llama.cpp's convert_hf_to_gguf.py, run on a Hugging Face directory without its vocabulary step:
# Debian packages no `transformers`, which the converter imports for AutoConfig (it falls back to
# reading config.json itself when AutoConfig fails, as it does here) and for tokenizers. The weights,
# their names, the q/k permutation and the hyper-parameters are written by llama.cpp's own code.
# Usage: python3 convert_novocab.py LLAMA_CPP_SRC HF_DIR --outfile F.gguf --outtype f32
import runpy, sys, types
src = sys.argv.pop(1)
sys.path[:0] = [src, src + "/gguf-py"]
fake = types.ModuleType("transformers")
class AutoConfig:
    @staticmethod
    def from_pretrained(*a, **k):
        raise RuntimeError("no transformers here: read config.json")
fake.AutoConfig = AutoConfig
sys.modules["transformers"] = fake
import torch     # Debian's torch 1.13 predates the float8 and wide unsigned types the converter names
for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "uint16", "uint32", "uint64"):
    if not hasattr(torch, name):
        setattr(torch, name, type(name, (), {})())
import conversion.base as base


def novocab(cls):   # every vocabulary builder a model class's set_vocab may call, its own included
    for name in list(vars(cls)):
        if name.startswith("_set_vocab") or name == "set_vocab":
            setattr(cls, name, lambda self, *a, **k: None)


def walk(cls):
    novocab(cls)
    for sub in cls.__subclasses__():
        walk(sub)


for name in dir(base.TextModel):
    if name.startswith("_set_vocab") or name == "set_vocab":
        setattr(base.TextModel, name, lambda self, *a, **k: None)
walk(base.TextModel)
# the model classes imported from here on (Phi-3's defines its own set_vocab)
base.TextModel.__init_subclass__ = classmethod(lambda cls, **k: novocab(cls))
sys.argv[0] = src + "/convert_hf_to_gguf.py"
runpy.run_path(sys.argv[0], run_name="__main__")
