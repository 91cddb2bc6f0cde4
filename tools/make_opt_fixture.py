#!/usr/bin/env python3
"""Builds the OPT reference fixture for tests/unit/test_opt_fixture.c.

Needs torch and transformers (and tokenizers), no network: run it on a
machine that has them, then commit the small result.

    python3 tools/make_opt_fixture.py [tests/data/opt_fixture]

Writes into the folder:
  config.json, model.safetensors  a tiny random OPT (OPTForCausalLM, f32) saved
                                  with save_pretrained(safe_serialization=True)
  tokenizer.json                  a byte-level BPE (GPT-2 style) trained here on a
                                  few sentences, saved by the tokenizers library
  reference.json                  {"token_ids": [...], "logits": [[vocab] per position],
                                   "tokenizer_cases": [{"text", "ids"}], "versions": {...}}

The test converts the folder with flashbed's importer and requires
max |logit - reference| <= 1e-4 at every position.
"""
import json
import os
import sys

import torch
import transformers
from transformers import OPTConfig, OPTForCausalLM


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                                                               "opt_fixture")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(1234)
    vocab = 512
    config = OPTConfig(vocab_size=vocab, hidden_size=64, num_hidden_layers=3, ffn_dim=256, num_attention_heads=4,
                       max_position_embeddings=128, word_embed_proj_dim=64, do_layer_norm_before=True,
                       activation_function="relu", enable_bias=True, dropout=0.0, attention_dropout=0.0,
                       activation_dropout=0.0, pad_token_id=1, bos_token_id=2, eos_token_id=2,
                       torch_dtype="float32")
    model = OPTForCausalLM(config).eval()
    # random init gives tiny biases and unit norms; perturb them so every
    # parameter the importer maps is exercised
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "layer_norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    model.save_pretrained(out, safe_serialization=True)

    token_ids = [2, 17, 300, 45, 99, 3, 511, 250, 8, 77, 150, 42]
    with torch.no_grad():
        logits = model(torch.tensor([token_ids])).logits[0]

    cases = []
    try:
        from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        text = ["Once upon a time, there was a little girl named Lily.",
                "She loved to play outside in the park with her friends.",
                "The quick brown fox jumps over the lazy dog. 12345 caf\u00e9!"] * 20
        trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(text, trainer)
        tok.save(os.path.join(out, "tokenizer.json"))
        for s in ["Once upon a time", " The lazy dog.", "caf\u00e9 12345", "Hello  world\n"]:
            cases.append({"text": s, "ids": tok.encode(s).ids})
    except ImportError:
        print("tokenizers not installed: no tokenizer.json written", file=sys.stderr)

    ref = {"token_ids": token_ids, "logits": logits.tolist(), "tokenizer_cases": cases,
           "versions": {"torch": torch.__version__, "transformers": transformers.__version__}}
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f)
    print("wrote", out)


if __name__ == "__main__":
    main()
