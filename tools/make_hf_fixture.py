#!/usr/bin/env python3
"""Builds the transformers reference fixtures that tests/unit/test_hf_fixture.c
and tests/integration/hf_fixture_flash.sh check flashbed against.

Runs in the pinned reference environment (tools/make-reference-env.sh makes
it; this script refuses any other), on the CPU, with no network:

    .venv-ref/bin/python tools/make_hf_fixture.py [ARCH ...] [--out tests/data]

ARCH: opt, llama, llama-relu, falcon, falcon-gelu, persimmon, phi, phi-gelu,
phi3, drelu, prosparse, llama3, mistral, qwen2, qwen3, phi3_longrope (all when
none is given).

phi3_longrope: Phi-3's longrope rope_scaling (original context 8, a 12-id
prompt and 8 greedy ids: 20 positions crossing it). Which factor list
rotates a position depends on how the sequence is fed, so its logits come
from feeding every id, the prompt's too, one at a time through the KV
cache, as flashbed decodes (STEPWISE_NOTE; reference.json says so, with
how far a whole-sequence forward and the long factors ignored are from
them).

qwen3: transformers 4.46.3 (pinned) has no Qwen3 classes, and its Qwen2
attention hard-codes q/k/v biases and head_dim = hidden / heads, both of
which Qwen3 changed. The qwen3 reference is therefore transformers' Llama
classes (4.46.3's LlamaAttention takes an explicit head_dim and no biases,
and its decoder layer, MLP and RMSNorm are Qwen2's and Qwen3's) with
Qwen3's per-head RMSNorm over q and k ([head_dim], eps rms_norm_eps)
applied to each head of q_proj's and k_proj's output before RoPE, as
transformers' modeling_qwen3.py does (q_norm(q_proj(x).view(..., head_dim))),
through forward hooks on q_proj and k_proj; the norms are the attention's
own modules, so their weights save as self_attn.q_norm.weight and
self_attn.k_norm.weight, Qwen3's names, and config.json is rewritten as
a Qwen3 config (model_type "qwen3"). reference.json says so. Writes tests/data/<ARCH>_fixture/:
  config.json, model.safetensors  a tiny random model of the architecture,
                                  built from its config by transformers (its
                                  biases and norms perturbed so that each
                                  shows in the logits) and saved with
                                  save_pretrained (f32)
  tokenizer.json                  OPT only: a byte-level BPE trained here
  recorded.trace                  the ReLU family (opt, llama-relu, falcon,
                                  persimmon, phi): python/flashbed_record.py's
                                  activation trace of the same prompt and 8
                                  greedy tokens (rule: nonzero), which
                                  tests/integration/hf_fixture_flash.sh
                                  compares with `flashbed run --record`
  logits.f32                      transformers' logits at every position of
                                  prompt_ids + greedy_ids, little-endian f32,
                                  [position][vocab], from one forward pass
  reference.json                  see write_reference()

The greedy continuation comes from transformers' own KV cache, one token at
a time (past_key_values), and its logits must equal the full pass's within
1e-4. Prompts are drawn until every greedy step's winner leads the runner-up
by MIN_MARGIN, so that summation-order differences of ~1e-6 cannot change a
token; reference.json records the smallest lead.
"""
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference-env"))
import pins  # noqa: E402

pins.require("tools/make_hf_fixture.py")

import torch  # noqa: E402
import transformers  # noqa: E402

transformers.logging.set_verbosity_error()

VOCAB = 320
PROMPT = 64      # positions fed before generation: RoPE and the KV cache well past a few tokens
GENERATE = 8     # greedy tokens after them
MAX_POS = 128
MIN_MARGIN = 1e-3  # smallest lead of a greedy winner that a fixture accepts
SEED = 1234


def opt():
    from transformers import OPTConfig, OPTForCausalLM
    return OPTForCausalLM(OPTConfig(
        vocab_size=VOCAB, hidden_size=48, num_hidden_layers=2, ffn_dim=136, num_attention_heads=4,
        max_position_embeddings=MAX_POS, word_embed_proj_dim=48, do_layer_norm_before=True,
        activation_function="relu", enable_bias=True, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
        init_std=0.1, pad_token_id=1, bos_token_id=2, eos_token_id=2))


def llama(act="silu"):
    # grouped keys and values (2 of 4 heads); SwiGLU unless act says otherwise
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCAB, hidden_size=48, intermediate_size=136, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, hidden_act=act, max_position_embeddings=MAX_POS, rms_norm_eps=1e-5,
        rope_theta=10000.0, tie_word_embeddings=False, initializer_range=0.1, bos_token_id=1, eos_token_id=2))


def falcon(activation="relu"):
    # Falcon-7B's layout: one LayerNorm feeding attention and MLP in
    # parallel, multi-query attention, no biases, rotary embeddings
    from transformers import FalconConfig, FalconForCausalLM
    return FalconForCausalLM(FalconConfig(
        vocab_size=VOCAB, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, multi_query=True,
        parallel_attn=True, bias=False, alibi=False, new_decoder_architecture=False, ffn_hidden_size=136,
        activation=activation, max_position_embeddings=MAX_POS, rope_theta=10000.0, hidden_dropout=0.0,
        attention_dropout=0.0, initializer_range=0.1, bos_token_id=1, eos_token_id=2))


def persimmon():
    # head_dim 12, partial_rotary_factor 0.5: 6 of each head's dims rotate;
    # qk_layernorm over each head before RoPE
    from transformers import PersimmonConfig, PersimmonForCausalLM
    return PersimmonForCausalLM(PersimmonConfig(
        vocab_size=VOCAB, hidden_size=48, intermediate_size=136, num_hidden_layers=2, num_attention_heads=4,
        hidden_act="relu2", max_position_embeddings=MAX_POS, rope_theta=25000.0, qk_layernorm=True,
        partial_rotary_factor=0.5, hidden_dropout=0.0, attention_dropout=0.0, layer_norm_eps=1e-5,
        tie_word_embeddings=False, initializer_range=0.1, bos_token_id=1, eos_token_id=2))


def phi(act="relu"):
    # head_dim 20 and partial_rotary_factor 0.4 rotate 8 of each head's dims
    from transformers import PhiConfig, PhiForCausalLM
    return PhiForCausalLM(PhiConfig(
        vocab_size=VOCAB, hidden_size=40, intermediate_size=136, num_hidden_layers=2, num_attention_heads=2,
        hidden_act=act, partial_rotary_factor=0.4, qk_layernorm=False, resid_pdrop=0.0, embd_pdrop=0.0,
        attention_dropout=0.0, max_position_embeddings=MAX_POS, rope_theta=10000.0, layer_norm_eps=1e-5,
        tie_word_embeddings=False, initializer_range=0.1, bos_token_id=1, eos_token_id=2))


def phi3():
    # fused qkv_proj (grouped: 2 key/value heads of 4) and gate_up_proj;
    # sliding_window None: transformers 4.46.3 would mask keys that far back
    from transformers import Phi3Config, Phi3ForCausalLM
    return Phi3ForCausalLM(Phi3Config(
        vocab_size=VOCAB, hidden_size=48, intermediate_size=136, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, hidden_act="silu", max_position_embeddings=MAX_POS,
        original_max_position_embeddings=MAX_POS, rms_norm_eps=1e-5, rope_theta=10000.0, rope_scaling=None,
        sliding_window=None, resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0, tie_word_embeddings=False,
        initializer_range=0.1, bos_token_id=1, eos_token_id=2, pad_token_id=0))


# phi3_longrope: longrope's two factor lists (one per pair of head_dim 12)
# and an original context of 8, so that its 20 positions cross it at 8
LONGROPE_ORIGINAL = 8
LONGROPE_PROMPT = 12
LONGROPE_SHORT = [1.0, 1.05, 1.2, 1.4, 1.8, 2.3]
LONGROPE_LONG = [1.0, 1.9, 3.7, 7.5, 14.0, 29.0]


def phi3_longrope(long_factor=None):
    # Phi-3-mini-128k's rope_scaling (type longrope) at a tiny scale:
    # max_position_embeddings 128 over an original 8 gives cos and sin the
    # factor sqrt(1 + ln 16 / ln 8); long_factor may be replaced (the
    # short list: what the logits would be with the long factors ignored)
    from transformers import Phi3Config, Phi3ForCausalLM
    return Phi3ForCausalLM(Phi3Config(
        vocab_size=VOCAB, hidden_size=48, intermediate_size=136, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, hidden_act="silu", max_position_embeddings=MAX_POS,
        original_max_position_embeddings=LONGROPE_ORIGINAL, rms_norm_eps=1e-5, rope_theta=10000.0,
        rope_scaling={"type": "longrope", "short_factor": list(LONGROPE_SHORT),
                      "long_factor": list(long_factor or LONGROPE_LONG)},
        sliding_window=None, resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0, tie_word_embeddings=False,
        initializer_range=0.1, bos_token_id=1, eos_token_id=2, pad_token_id=0))


def drelu_forward(mlp):
    """BambooMLP's forward (TurboSparse-Mistral's published modeling_bamboo.py):
    act_fn on the gate and on up, dReLU."""
    return lambda x: mlp.down_proj(mlp.act_fn(mlp.gate_proj(x)) * mlp.act_fn(mlp.up_proj(x)))


def drelu():
    # TurboSparse-Mistral: transformers has no Bamboo, so Mistral's model
    # (the layers Bamboo's code took from it) with each MLP's forward
    # replaced by BambooMLP's; saved as model_type "bamboo" (CONFIG_AS).
    # sliding_window 4096 as TurboSparse-Mistral's: far past these positions
    from transformers import MistralConfig, MistralForCausalLM
    model = MistralForCausalLM(MistralConfig(
        vocab_size=VOCAB, hidden_size=48, intermediate_size=136, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, hidden_act="relu", max_position_embeddings=MAX_POS, rms_norm_eps=1e-5,
        rope_theta=10000.0, sliding_window=4096, attention_dropout=0.0, tie_word_embeddings=False,
        initializer_range=0.1, bos_token_id=1, eos_token_id=2))
    for layer in model.model.layers:
        layer.mlp.forward = drelu_forward(layer.mlp)
    return model


PROSPARSE_THRESHOLD = 0.01  # ProSparse-Llama-2-7B's


class FATReLU(torch.nn.Module):
    """x where x > threshold, else 0: ProSparse's FATReLU."""

    def __init__(self, threshold):
        super().__init__()
        self.threshold = threshold

    def forward(self, x):
        return torch.where(x > self.threshold, x, torch.zeros_like(x))


def prosparse():
    # ProSparse's Llama 2: Llama's MLP, act_fn(gate_proj(x)) * up_proj(x),
    # with act_fn FATReLU(hidden_act_param) as its published modelling code
    # builds it; transformers' Llama with each act_fn swapped, saved with
    # ProSparse's keys (CONFIG_AS)
    model = llama("relu")
    for layer in model.model.layers:
        layer.mlp.act_fn = FATReLU(PROSPARSE_THRESHOLD)
    return model


# config.json keys rewritten after save_pretrained, and what reference.json
# says of how the model was built
CONFIG_AS = {"drelu": {"model_type": "bamboo", "architectures": ["BambooForCausalLM"]},
             "prosparse": {"hidden_act": "fatrelu", "hidden_act_param": PROSPARSE_THRESHOLD,
                           "model_type": "sparsellama", "architectures": ["SparseLlamaForCausalLM"]}}
NOTES = {"drelu": "transformers' MistralForCausalLM with every layer's mlp.forward replaced by BambooMLP's "
                  "(TurboSparse-Mistral's published modeling_bamboo.py): down_proj(act_fn(gate_proj(x)) * "
                  "act_fn(up_proj(x))), act_fn relu; config.json saved as model_type bamboo",
         "prosparse": "transformers' LlamaForCausalLM with every layer's mlp.act_fn replaced by FATReLU(%g) "
                      "(x if x > threshold else 0), as ProSparse's published modelling code builds it; config.json "
                      "saved as ProSparse's published ones say: model_type sparsellama, hidden_act fatrelu and "
                      "hidden_act_param %g" % (PROSPARSE_THRESHOLD, PROSPARSE_THRESHOLD)}


def llama3():
    # Llama 3.x's RoPE scaling (rope_type "llama3", factor 8) with an
    # original context of 32 so that the fixture's 72 positions pass it:
    # head_dim 12 at theta 10000 has one high-frequency pair (wavelength
    # 6.3 < 32/4), one smoothed (29 between 8 and 32) and four divided by 8;
    # tied embeddings, grouped KV heads
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCAB, hidden_size=48, intermediate_size=136, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, hidden_act="silu", max_position_embeddings=MAX_POS, rms_norm_eps=1e-5,
        rope_theta=10000.0, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                          "high_freq_factor": 4.0, "original_max_position_embeddings": 32},
        tie_word_embeddings=True, initializer_range=0.1, bos_token_id=1, eos_token_id=2))


def mistral():
    # a sliding window of 24 positions, well inside the fixture's 72
    from transformers import MistralConfig, MistralForCausalLM
    return MistralForCausalLM(MistralConfig(
        vocab_size=VOCAB, hidden_size=48, intermediate_size=136, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, hidden_act="silu", max_position_embeddings=MAX_POS, rms_norm_eps=1e-5,
        rope_theta=10000.0, sliding_window=24, tie_word_embeddings=False, initializer_range=0.1,
        attention_dropout=0.0, bos_token_id=1, eos_token_id=2))


def qwen2():
    # q, k and v biases (no o or MLP biases), tied embeddings as Qwen2.5's
    # small models, no sliding window
    from transformers import Qwen2Config, Qwen2ForCausalLM
    return Qwen2ForCausalLM(Qwen2Config(
        vocab_size=VOCAB, hidden_size=48, intermediate_size=136, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, hidden_act="silu", max_position_embeddings=MAX_POS, rms_norm_eps=1e-5,
        rope_theta=10000.0, use_sliding_window=False, sliding_window=4096, max_window_layers=2,
        tie_word_embeddings=True, initializer_range=0.1, attention_dropout=0.0, bos_token_id=1, eos_token_id=2))


class HeadRMSNorm(torch.nn.Module):
    """Qwen3's q_norm / k_norm: an RMSNorm over each head_dim slice."""

    def __init__(self, head_dim, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(head_dim))
        self.eps = eps
        self.head_dim = head_dim

    def forward(self, x):
        shape = x.shape
        h = x.view(*shape[:-1], -1, self.head_dim).float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.weight * h).view(shape)


def qwen3():
    # head_dim 16 where hidden / heads is 12 (Qwen3 states head_dim), no
    # biases, the per-head q/k RMSNorm before RoPE (the docstring says how)
    from transformers import LlamaConfig, LlamaForCausalLM
    eps = 1e-6
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCAB, hidden_size=48, intermediate_size=136, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, hidden_act="silu", max_position_embeddings=MAX_POS,
        rms_norm_eps=eps, rope_theta=10000.0, attention_bias=False, tie_word_embeddings=False,
        initializer_range=0.1, bos_token_id=1, eos_token_id=2))
    for layer in model.model.layers:
        attn = layer.self_attn
        attn.q_norm = HeadRMSNorm(16, eps)
        attn.k_norm = HeadRMSNorm(16, eps)
        attn.q_proj.register_forward_hook(lambda mod, inp, out, n=attn.q_norm: n(out))
        attn.k_proj.register_forward_hook(lambda mod, inp, out, n=attn.k_norm: n(out))
    return model


def as_qwen3_config(out):
    """Rewrites the saved Llama config as Qwen3's keys (Qwen3-8B's set)."""
    path = os.path.join(out, "config.json")
    with open(path) as f:
        c = json.load(f)
    for k in ("mlp_bias", "pretraining_tp"):
        c.pop(k, None)
    c.update({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "use_sliding_window": False,
              "sliding_window": None, "max_window_layers": c["num_hidden_layers"]})
    with open(path, "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")


QWEN3_NOTE = ("transformers 4.46.3 has no Qwen3: its Llama classes (explicit head_dim, no biases) with Qwen3's "
              "per-head RMSNorm q_norm/k_norm applied to q_proj's and k_proj's output before RoPE, as "
              "modeling_qwen3.py; config.json rewritten as Qwen3's")


# the architectures whose FFN is ReLU-family: a neuron is active when it is
# not zero, which flashbed's oracle computes exactly (no threshold)
RECORDED = ("opt", "llama-relu", "falcon", "persimmon", "phi", "drelu", "prosparse")

BUILDERS = {"opt": opt, "llama": llama, "llama-relu": lambda: llama("relu"), "falcon": falcon,
            "falcon-gelu": lambda: falcon("gelu"), "persimmon": persimmon, "phi": phi,
            "phi-gelu": lambda: phi("gelu_new"), "phi3": phi3, "drelu": drelu, "prosparse": prosparse,
            "llama3": llama3, "mistral": mistral, "qwen2": qwen2, "qwen3": qwen3, "phi3_longrope": phi3_longrope}

# fixtures whose logits depend on how the sequence is fed: every position,
# prompt included, goes through transformers' KV cache one token at a time
# (the engine's way), with a prompt of this many ids
STEPWISE = {"phi3_longrope": LONGROPE_PROMPT}
STEPWISE_NOTE = (
    "logits.f32 comes from calling the model one token at a time with its KV cache (past_key_values), the prompt "
    "included, as flashbed decodes: transformers 4.46.3's Phi3LongRoPEScaledRotaryEmbedding takes long_factor "
    "when seq_len (the cached length + 1) > original_max_position_embeddings, so positions 0..%d rotate with "
    "short_factor and positions from %d with long_factor, keys cached under short_factor keeping it. A "
    "whole-sequence forward rotates every position with long_factor once the sequence is longer than %d "
    "(whole_sequence_forward_max_abs_diff), and transformers' generate() drops its cache when the length first "
    "passes %d to recompute it so; neither is the reference here."
    % (LONGROPE_ORIGINAL - 1, LONGROPE_ORIGINAL, LONGROPE_ORIGINAL, LONGROPE_ORIGINAL))


def opt_tokenizer(out):
    """A byte-level BPE trained on a few sentences, and its ids for test strings."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    text = ["Once upon a time, there was a little girl named Lily.",
            "She loved to play outside in the park with her friends.",
            "The quick brown fox jumps over the lazy dog. 12345 caf\u00e9!"] * 20
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(text, trainer)
    tok.save(os.path.join(out, "tokenizer.json"))
    return [{"text": s, "ids": tok.encode(s).ids}
            for s in ["Once upon a time", " The lazy dog.", "caf\u00e9 12345", "Hello  world\n"]]


def tiny_model(arch):
    """The architecture's random model, its biases and norms perturbed: random
    init leaves them at 0 and 1, where a wrong layout would not show."""
    torch.manual_seed(SEED)
    model = BUILDERS[arch]().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


def greedy(model, prompt):
    """GENERATE greedy ids after prompt through transformers' KV cache, the
    logits of each step, and each winner's lead over the runner-up."""
    with torch.no_grad():
        out = model(torch.tensor([prompt]), use_cache=True)
        ids, rows, leads = [], [], []
        for _ in range(GENERATE):
            row = out.logits[0, -1]
            top = torch.topk(row, 2).values
            nxt = int(torch.argmax(row))
            ids.append(nxt)
            rows.append(row)
            leads.append(float(top[0] - top[1]))
            out = model(torch.tensor([[nxt]]), past_key_values=out.past_key_values, use_cache=True)
    return ids, torch.stack(rows), leads


def stepwise(model, prompt):
    """Every prompt id, then GENERATE greedy ids, one token at a time through
    transformers' KV cache: (greedy ids, logits of every position, leads)."""
    ids, rows, leads, past = [], [], [], None
    with torch.no_grad():
        for tok in prompt + [None] * GENERATE:
            if tok is None:  # the greedy id after the last row, fed in turn
                top = torch.topk(rows[-1], 2).values
                leads.append(float(top[0] - top[1]))
                ids.append(int(torch.argmax(rows[-1])))
                tok = ids[-1]
            out = model(torch.tensor([[tok]]), past_key_values=past, use_cache=True)
            past = out.past_key_values
            rows.append(out.logits[0, -1])
    return ids, torch.stack(rows), leads


def stepwise_run(model, n_prompt):
    """reference_run for a STEPWISE fixture: the first prompt of n_prompt ids
    whose greedy steps all lead by MIN_MARGIN; the logits are the stepwise
    ones, and how far a whole-sequence forward is from them is recorded."""
    rng = random.Random(SEED)
    for _ in range(50):
        prompt = [rng.randrange(3, VOCAB) for _ in range(n_prompt)]
        ids, logits, leads = stepwise(model, prompt)
        if min(leads) < MIN_MARGIN:
            continue
        with torch.no_grad():
            full = model(torch.tensor([prompt + ids])).logits[0]
        return prompt, ids, logits, min(leads), float((full - logits).abs().max())
    sys.exit("make_hf_fixture.py: no prompt in 50 whose greedy steps all lead by %g" % MIN_MARGIN)


def long_factors_ignored(prompt, ids, logits):
    """(largest |delta logit| before the switch, after it) between the
    fixture's logits and the same model with long_factor = short_factor,
    fed the same ids stepwise: what ignoring the long factors would miss."""
    torch.manual_seed(SEED)
    model = phi3_longrope(LONGROPE_SHORT).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    seq, rows, past = prompt + ids, [], None
    with torch.no_grad():
        for tok in seq[:logits.shape[0]]:
            out = model(torch.tensor([[tok]]), past_key_values=past, use_cache=True)
            past = out.past_key_values
            rows.append(out.logits[0, -1])
    diff = (torch.stack(rows) - logits).abs().max(dim=1).values
    return float(diff[:LONGROPE_ORIGINAL].max()), float(diff[LONGROPE_ORIGINAL:].max())


def reference_run(model):
    """(prompt, greedy ids, logits of the whole sequence, smallest lead): the
    first prompt, drawn from the seeded generator, whose greedy steps all
    lead by MIN_MARGIN; the full pass must agree with the cached steps."""
    rng = random.Random(SEED)
    for _ in range(50):
        prompt = [rng.randrange(3, VOCAB) for _ in range(PROMPT)]
        ids, step_logits, leads = greedy(model, prompt)
        if min(leads) < MIN_MARGIN:
            continue
        with torch.no_grad():
            logits = model(torch.tensor([prompt + ids])).logits[0]
        drift = float((logits[PROMPT - 1:PROMPT - 1 + GENERATE] - step_logits).abs().max())
        if drift > 1e-4:
            sys.exit("make_hf_fixture.py: transformers' cached and full passes differ by %.3g" % drift)
        return prompt, ids, logits, min(leads)
    sys.exit("make_hf_fixture.py: no prompt in 50 whose greedy steps all lead by %g" % MIN_MARGIN)


def write_reference(out, arch, model, prompt, ids, logits, lead, cases, extra=None):
    """reference.json: what the tests read, and how it was made."""
    raw = logits.numpy().astype("<f4").tobytes()
    with open(os.path.join(out, "logits.f32"), "wb") as f:
        f.write(raw)
    ref = {
        "format": "flashbed-hf-fixture/1",
        "arch": arch,
        "model_type": "qwen3" if arch == "qwen3" else CONFIG_AS.get(arch, {}).get("model_type",
                                                                               model.config.model_type),
        "prompt_ids": prompt,
        "greedy_ids": ids,
        "logits": {"file": "logits.f32", "dtype": "f32le", "positions": len(prompt) + len(ids),
                   "vocab": int(logits.shape[1]), "sha256": hashlib.sha256(raw).hexdigest()},
        "smallest_greedy_lead": lead,
        "largest_abs_logit": float(logits.abs().max()),
        "tokenizer_cases": cases,
        "made_by": "tools/make_hf_fixture.py (transformers on the CPU, f32, seed %d)" % SEED,
        **({"model": NOTES[arch]} if arch in NOTES else {}),
        "versions": pins.versions(),
    }
    if arch == "qwen3":
        ref["reference_model"] = QWEN3_NOTE
    ref.update(extra or {})
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")


def record_trace(out, prompt):
    """recorded.trace: the recorder's sets for the prompt and its greedy
    continuation, through its command line as a user runs it."""
    with tempfile.NamedTemporaryFile("w", suffix=".ids", delete=False) as f:
        f.write("\n".join(map(str, prompt)) + "\n")
        ids = f.name
    try:
        subprocess.run([sys.executable, os.path.join(HERE, "..", "python", "flashbed_record.py"), "--model", out,
                        "--token-ids", ids, "--generate", str(GENERATE), "--device", "cpu",
                        "--out", os.path.join(out, "recorded.trace")], check=True)
    finally:
        os.remove(ids)


def build(arch, out):
    os.makedirs(out, exist_ok=True)
    model = tiny_model(arch)
    model.save_pretrained(out, safe_serialization=True)
    if arch in CONFIG_AS:
        path = os.path.join(out, "config.json")
        with open(path) as f:
            config = json.load(f)
        config.update(CONFIG_AS[arch])
        with open(path, "w") as f:
            json.dump(config, f, indent=2, sort_keys=True)
            f.write("\n")
    gen = os.path.join(out, "generation_config.json")  # not an input of flashbed's
    if os.path.exists(gen):
        os.remove(gen)
    if arch == "qwen3":
        as_qwen3_config(out)
    extra = None
    if arch in STEPWISE:
        prompt, ids, logits, lead, full_diff = stepwise_run(model, STEPWISE[arch])
        before, after = long_factors_ignored(prompt, ids, logits)
        extra = {"reference_run": STEPWISE_NOTE, "whole_sequence_forward_max_abs_diff": full_diff,
                 "long_factors_ignored_max_abs_diff": {"positions_before_%d" % LONGROPE_ORIGINAL: before,
                                                       "positions_from_%d" % LONGROPE_ORIGINAL: after}}
    else:
        prompt, ids, logits, lead = reference_run(model)
    cases = opt_tokenizer(out) if arch == "opt" else []
    write_reference(out, arch, model, prompt, ids, logits, lead, cases, extra)
    if arch in RECORDED:
        record_trace(out, prompt)
    print("wrote %s: %d positions, greedy %s, smallest lead %.3g, largest |logit| %.3g"
          % (out, len(prompt) + len(ids), ids, lead, float(logits.abs().max())))


def main():
    args = sys.argv[1:]
    root = os.path.normpath(os.path.join(HERE, "..", "tests", "data"))
    if "--out" in args:
        i = args.index("--out")
        if i + 1 >= len(args):
            sys.exit("make_hf_fixture.py: --out needs a folder")
        root = args[i + 1]
        del args[i:i + 2]
    for a in args:
        if a not in BUILDERS:
            sys.exit("make_hf_fixture.py: unknown architecture '%s' (one of: %s)" % (a, ", ".join(BUILDERS)))
    torch.set_num_threads(1)  # one summation order, whatever the machine
    for arch in args or list(BUILDERS):
        build(arch, os.path.join(root, arch + "_fixture"))


if __name__ == "__main__":
    main()
