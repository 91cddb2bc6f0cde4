#!/usr/bin/env python3
"""Builds the transformers reference fixtures for tests/unit/test_hf_fixture.c.

Needs torch and transformers (and tokenizers for OPT's tokenizer cases), no
network: run it on a machine that has them (the GPU machine does), then
commit the small results (tens of KB each).

    python3 tools/make_hf_fixture.py [ARCH ...] [--out tests/data]

ARCH: opt, falcon, falcon-gelu, persimmon, phi, phi-gelu, llama-relu (all
when none is given). Writes tests/data/<ARCH>_fixture/:
  config.json, model.safetensors  a tiny random model of the architecture,
                                  built from its config by transformers and
                                  saved with save_pretrained (f32)
  tokenizer.json                  OPT only: a byte-level BPE trained here
  reference.json                  {"arch", "token_ids", "logits": [[vocab] per
                                   position], "tokenizer_cases", "versions"}

The test converts each folder with flashbed's importer and requires
max |logit - reference| <= 1e-4 at every position.
"""
import json
import os
import sys

import torch
import transformers

VOCAB = 512


def opt():
    from transformers import OPTConfig, OPTForCausalLM
    return OPTForCausalLM(OPTConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=3, ffn_dim=256, num_attention_heads=4,
        max_position_embeddings=128, word_embed_proj_dim=64, do_layer_norm_before=True,
        activation_function="relu", enable_bias=True, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
        pad_token_id=1, bos_token_id=2, eos_token_id=2, torch_dtype="float32"))


def falcon(activation="relu"):
    # Falcon-7B's layout: one LayerNorm feeding attention and MLP in
    # parallel, multi-query attention, no biases, rotary embeddings
    from transformers import FalconConfig, FalconForCausalLM
    return FalconForCausalLM(FalconConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, multi_query=True,
        parallel_attn=True, bias=False, alibi=False, new_decoder_architecture=False, ffn_hidden_size=256,
        activation=activation, max_position_embeddings=128, rope_theta=10000.0, hidden_dropout=0.0,
        attention_dropout=0.0, initializer_range=0.1, bos_token_id=1, eos_token_id=2))


def persimmon():
    from transformers import PersimmonConfig, PersimmonForCausalLM
    return PersimmonForCausalLM(PersimmonConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        hidden_act="relu2", max_position_embeddings=128, rope_theta=25000.0, qk_layernorm=True,
        partial_rotary_factor=0.5, hidden_dropout=0.0, attention_dropout=0.0, layer_norm_eps=1e-5,
        tie_word_embeddings=False, initializer_range=0.1, bos_token_id=1, eos_token_id=2))


def phi(act="relu"):
    # head_dim 20 and partial_rotary_factor 0.4 rotate 8 of each head's dims
    from transformers import PhiConfig, PhiForCausalLM
    return PhiForCausalLM(PhiConfig(
        vocab_size=VOCAB, hidden_size=80, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        hidden_act=act, partial_rotary_factor=0.4, qk_layernorm=False, resid_pdrop=0.0, embd_pdrop=0.0,
        attention_dropout=0.0, max_position_embeddings=128, rope_theta=10000.0, layer_norm_eps=1e-5,
        tie_word_embeddings=False, initializer_range=0.1, bos_token_id=1, eos_token_id=2))


def llama_relu():
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=172, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, hidden_act="relu", max_position_embeddings=128, rms_norm_eps=1e-5,
        rope_theta=10000.0, tie_word_embeddings=False, initializer_range=0.1, bos_token_id=1, eos_token_id=2))


BUILDERS = {"opt": opt, "falcon": falcon, "falcon-gelu": lambda: falcon("gelu"), "persimmon": persimmon,
            "phi": phi, "phi-gelu": lambda: phi("gelu_new"), "llama-relu": llama_relu}


def opt_tokenizer(out):
    """A byte-level BPE trained on a few sentences, and its ids for test strings."""
    try:
        from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
    except ImportError:
        print("tokenizers not installed: no tokenizer.json written", file=sys.stderr)
        return []
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    text = ["Once upon a time, there was a little girl named Lily.",
            "She loved to play outside in the park with her friends.",
            "The quick brown fox jumps over the lazy dog. 12345 caf\u00e9!"] * 20
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(text, trainer)
    tok.save(os.path.join(out, "tokenizer.json"))
    return [{"text": s, "ids": tok.encode(s).ids}
            for s in ["Once upon a time", " The lazy dog.", "caf\u00e9 12345", "Hello  world\n"]]


def build(arch, out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(1234)
    model = BUILDERS[arch]().eval()
    # random init leaves biases at 0 and norms at 1: perturb them so every
    # parameter the importer maps is exercised
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    model.save_pretrained(out, safe_serialization=True)
    token_ids = [2, 17, 300, 45, 99, 3, 511, 250, 8, 77, 150, 42]
    with torch.no_grad():
        logits = model(torch.tensor([token_ids])).logits[0]
    cases = opt_tokenizer(out) if arch == "opt" else []
    ref = {"arch": arch, "token_ids": token_ids, "logits": logits.tolist(), "tokenizer_cases": cases,
           "versions": {"torch": torch.__version__, "transformers": transformers.__version__}}
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f)
    print("wrote", out)


def main():
    args = sys.argv[1:]
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
    if "--out" in args:
        i = args.index("--out")
        root = args[i + 1]
        del args[i:i + 2]
    for a in args:
        if a not in BUILDERS:
            sys.exit(f"make_hf_fixture.py: unknown architecture '{a}' (one of: {', '.join(BUILDERS)})")
    for arch in args or list(BUILDERS):
        build(arch, os.path.join(root, arch + "_fixture"))


if __name__ == "__main__":
    main()
