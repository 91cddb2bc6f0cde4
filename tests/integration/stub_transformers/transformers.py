"""A stand-in for transformers in python_record.sh, where the real one is
not installed: loads record_hooks.py's TinyLM from a folder's config.json
(vocab, d_model, d_ff, layers, glu, seed; "sleep" seconds per forward pass
to give a signal time to arrive) and a tokenizer that maps each byte of the
text to its value. Only what flashbed_record.py's command line calls."""
import json
import os
import time

from record_hooks import TinyLM

__version__ = "0.0-stub"


class _Config:
    def __init__(self, d):
        self._d = d

    def to_dict(self):
        return dict(self._d)


class _Model(TinyLM):
    def __init__(self, cfg):
        super().__init__(cfg["vocab"], cfg["d_model"], cfg["d_ff"], cfg["layers"], cfg["glu"], cfg["seed"])
        self.config = _Config(cfg)
        self.sleep = cfg.get("sleep", 0)

    def get_input_embeddings(self):
        return self.embed

    def forward(self, ids):
        time.sleep(self.sleep)
        return super().forward(ids)


class AutoModelForCausalLM:
    @staticmethod
    def from_pretrained(path, local_files_only=False, **kwargs):
        assert local_files_only
        with open(os.path.join(path, "config.json")) as f:
            return _Model(json.load(f)).to(kwargs.get("dtype") or kwargs.get("torch_dtype"))


class AutoTokenizer:
    @staticmethod
    def from_pretrained(path, local_files_only=False):
        assert local_files_only
        return lambda text: {"input_ids": list(text.encode())}


PreTrainedTokenizerFast = None
