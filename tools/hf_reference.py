#!/usr/bin/env python3
"""Logits of a tiny Hugging Face model folder, computed the way transformers'
modelling code computes them, in double precision, with the Python 3 standard
library only (no torch, no numpy): an independent reference for flashbed's
importer and forward pass.

  hf_reference.py DIR ID [ID ...]

DIR holds config.json and model.safetensors (or shards listed in
model.safetensors.index.json; F32, F16 or BF16). The ids are fed as one
sequence from position 0; for every position one line of vocab_size logits
(%.9g, space-separated) goes to stdout.

Written from transformers' modeling_llama.py, modeling_opt.py,
modeling_falcon.py, modeling_persimmon.py, modeling_phi.py,
modeling_phi3.py, modeling_mistral.py, modeling_qwen2.py, modeling_qwen3.py and
modeling_rope_utils.py (and their configuration_*.py defaults), not from
flashbed's code:

  llama      RMSNorm; q/k/v/o_proj; RoPE on whole heads (rotate_half); grouped
             key/value heads; act(gate_proj) * up_proj, down_proj; hidden_act
             silu or relu, or "fatrelu" with its threshold in ProSparse's
             "hidden_act_param" or flashbed's "flashbed_fatrelu_threshold"
             (transformers has no FATReLU)
  mistral    Llama with sliding_window: position p attends to p - W + 1 .. p
  qwen2      Llama with q/k/v_proj biases; use_sliding_window true is refused
  qwen3      Llama with head_dim from the config and q_norm/k_norm, an RMSNorm
             over each head of q and k before RoPE; no biases
  opt        pre-LayerNorm; learned positions offset by 2; biases everywhere;
             fc1, relu, fc2; LM head tied to the embedding unless said otherwise
  falcon     Falcon-7B decoder: one input_layernorm feeding attention and MLP in
             parallel; fused query_key_value split as _split_heads does it
             (multi_query: all query heads, then k, then v; else
             [head][q, k, v]); RoPE on whole heads; dense_h_to_4h,
             config["activation"] (gelu when absent), dense_4h_to_h; LM head
             tied unless tie_word_embeddings is false
  persimmon  sequential LayerNorm blocks; fused query_key_value with bias viewed
             [head][q, k, v][head_dim]; q_layernorm/k_layernorm over each head
             (qk_layernorm) before RoPE; RoPE on the first
             int(head_dim * partial_rotary_factor) dims; relu2; untied head
  phi        parallel block on input_layernorm; q/k/v_proj and dense with
             biases; partial RoPE as Persimmon; fc1, hidden_act, fc2;
             final_layernorm; lm_head with a bias
  phi3       llama's block (modeling_phi3.py) with qkv_proj fused as q rows,
             then k, then v, and gate_up_proj as gate rows, then up rows
  bamboo     TurboSparse-Mistral (BambooForCausalLM, its own modeling_bamboo.py):
             llama's block and names, the FFN dReLU: act(gate_proj) *
             act(up_proj), act being hidden_act (relu)

RoPE, as transformers' default rope: rot = int(head_dim * partial_rotary_factor),
inv_freq[i] = theta^(-2i/rot) for i < rot/2, and within the rotated dims
x[i] pairs with x[i + rot/2] (rotate_half); dims from rot on pass unchanged.
rope_scaling (Llama family): "linear" divides every inv_freq by factor;
"llama3" keeps those whose wavelength 2 pi / f is under
original_max_position_embeddings / high_freq_factor, divides by factor those
over original / low_freq_factor, and between them mixes f / factor and f by
s = (original / wavelength - low_freq_factor) / (high_freq_factor -
low_freq_factor): (1 - s) f / factor + s f.
Phi-3's "longrope" (modeling_phi3.py, Phi3LongRoPEScaledRotaryEmbedding):
inv_freq[i] = 1 / (ext[i] theta^(2i/rot)), ext being long_factor at
positions p with p + 1 > original_max_position_embeddings (4096 when
absent) and short_factor below, as transformers picks them decoding one
token at a time with its cache (every position here is so); cos and sin
times sqrt(1 + ln(s) / ln(original)), s = max_position_embeddings /
original, when s > 1.
"""
import json
import math
import os
import struct
import sys


# ---- safetensors ----

def _decode(dtype, raw):
    n = len(raw)
    if dtype == "F32":
        return list(struct.unpack("<%df" % (n // 4), raw))
    if dtype == "F16":
        return list(struct.unpack("<%de" % (n // 2), raw))
    if dtype == "BF16":  # the high half of an f32
        halves = struct.unpack("<%dH" % (n // 2), raw)
        return list(struct.unpack("<%df" % len(halves), struct.pack("<%dI" % len(halves), *[h << 16 for h in halves])))
    raise SystemExit("unsupported tensor dtype %s" % dtype)


def _read_file(path, tensors):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack_from("<Q", data, 0)[0]
    header = json.loads(data[8:8 + n])
    start = 8 + n
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        tensors[name] = (info["shape"], _decode(info["dtype"], data[start + a:start + b]))


def read_tensors(folder):
    """name -> (shape, flat list of floats)."""
    tensors = {}
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
        for name in files:
            _read_file(os.path.join(folder, name), tensors)
    else:
        _read_file(os.path.join(folder, "model.safetensors"), tensors)
    return tensors


class Weights:
    def __init__(self, tensors):
        self.t = tensors

    def matrix(self, name):
        """rows as lists (out x in, y = W x)."""
        shape, v = self.t[name]
        rows, cols = shape
        return [v[r * cols:(r + 1) * cols] for r in range(rows)]

    def vector(self, name):
        return self.t[name][1]

    def has(self, name):
        return name in self.t


# ---- the operations ----

def linear(w, x, b=None):
    out = [math.fsum(wi * xi for wi, xi in zip(row, x)) for row in w]
    return [o + bi for o, bi in zip(out, b)] if b is not None else out


def add(*vs):
    return [math.fsum(t) for t in zip(*vs)]


def layer_norm(x, w, b, eps):
    n = len(x)
    mean = math.fsum(x) / n
    var = math.fsum((v - mean) ** 2 for v in x) / n  # biased, as torch's
    inv = 1.0 / math.sqrt(var + eps)
    return [(v - mean) * inv * wi + bi for v, wi, bi in zip(x, w, b)]


def rms_norm(x, w, eps):
    inv = 1.0 / math.sqrt(math.fsum(v * v for v in x) / len(x) + eps)
    return [v * inv * wi for v, wi in zip(x, w)]


def activation(name, threshold=0.0):
    table = {
        "relu": lambda v: v if v > 0 else 0.0,
        "relu2": lambda v: v * v if v > 0 else 0.0,
        "gelu": lambda v: 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))),
        "gelu_new": lambda v: 0.5 * v * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3))),
        "silu": lambda v: v / (1.0 + math.exp(-v)),
        "fatrelu": lambda v: v if v > threshold else 0.0,
    }
    table["gelu_pytorch_tanh"] = table["gelu_new"]
    if name not in table:
        raise SystemExit("activation %r is not in this reference" % name)
    return table[name]


def inv_freqs(cfg, rot, theta):
    """RoPE's per-pair frequencies, rope_scaling applied (the docstring)."""
    base = [theta ** (-2.0 * i / rot) for i in range(rot // 2)]
    sc = cfg.get("rope_scaling") or {}
    kind = sc.get("rope_type", sc.get("type", "default"))
    if kind == "default":
        return base
    if kind == "linear":
        return [f / sc["factor"] for f in base]
    if kind != "llama3":
        raise SystemExit("rope_scaling %r is not in this reference" % kind)
    factor, low, high = sc["factor"], sc["low_freq_factor"], sc["high_freq_factor"]
    orig = sc["original_max_position_embeddings"]
    out = []
    for f in base:
        wavelength = 2 * math.pi / f
        if wavelength < orig / high:
            out.append(f)
        elif wavelength > orig / low:
            out.append(f / factor)
        else:
            s = (orig / wavelength - low) / (high - low)
            out.append((1 - s) * f / factor + s * f)
    return out


def longrope(cfg, rot, theta, pos):
    """Phi-3's longrope (the docstring): (frequencies, factor on cos and sin)
    for position pos."""
    sc, orig = cfg["rope_scaling"], cfg.get("original_max_position_embeddings", 4096)
    ext = sc["long_factor"] if pos + 1 > orig else sc["short_factor"]
    scale = cfg["max_position_embeddings"] / orig
    factor = math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1 else 1.0
    return [1.0 / (ext[i] * theta ** (2.0 * i / rot)) for i in range(rot // 2)], factor


def rope(head, pos, freqs, factor=1.0):
    """rotate_half RoPE on the first 2 len(freqs) dims of one head, cos and
    sin times factor."""
    half = len(freqs)
    out = list(head)
    for i in range(half):
        angle = pos * freqs[i]
        c, s = factor * math.cos(angle), factor * math.sin(angle)
        a, b = head[i], head[i + half]
        out[i] = a * c - b * s
        out[i + half] = b * c + a * s
    return out


def attend(qs, keys, values, n_heads, n_kv, hd, window=None):
    """One position's attention over the cached keys and values (all
    earlier positions and this one, or the last `window` of them): per
    head softmax(q.k / sqrt(hd)) v."""
    if window:
        keys, values = keys[-window:], values[-window:]
    out = []
    group = n_heads // n_kv
    for h in range(n_heads):
        g = h // group
        q = qs[h]
        scores = [math.fsum(a * b for a, b in zip(q, k[g])) / math.sqrt(hd) for k in keys]
        top = max(scores)
        e = [math.exp(s - top) for s in scores]
        z = math.fsum(e)
        out.extend(math.fsum(e[t] / z * values[t][g][j] for t in range(len(values))) for j in range(hd))
    return out


def heads(v, n, hd):
    return [v[i * hd:(i + 1) * hd] for i in range(n)]


# ---- the architectures ----

class Model:
    """What every architecture shares: sizes, RoPE, the attention cache."""

    def __init__(self, cfg, w):
        self.cfg, self.w = cfg, w
        self.d = cfg["hidden_size"]
        self.n_heads = cfg["num_attention_heads"]
        self.hd = cfg.get("head_dim") or self.d // self.n_heads
        self.n_kv = cfg.get("num_key_value_heads") or self.n_heads
        self.rot = int(self.hd * cfg.get("partial_rotary_factor", 1.0))
        self.theta = cfg.get("rope_theta", 10000.0)
        self.freqs = self.unscaled_or_scaled_freqs()
        self.window = None  # attention over every cached position
        self.eps = 1e-5  # LayerNorm's; architectures with their own key set it
        self.cache = {}

    def self_attention(self, l, q, k, v, pos, qk_norm=None):
        """q, k, v: flat projections; qk_norm(l, head, which) before RoPE."""
        qs, ks, vs = heads(q, self.n_heads, self.hd), heads(k, self.n_kv, self.hd), heads(v, self.n_kv, self.hd)
        if qk_norm:
            qs = [qk_norm(l, h, "q") for h in qs]
            ks = [qk_norm(l, h, "k") for h in ks]
        if self.rot:
            freqs, factor = self.rope_at(pos)
            qs = [rope(h, pos, freqs, factor) for h in qs]
            ks = [rope(h, pos, freqs, factor) for h in ks]
        keys, values = self.cache.setdefault(l, ([], []))
        keys.append(ks)
        values.append(vs)
        return attend(qs, keys, values, self.n_heads, self.n_kv, self.hd, self.window)

    def unscaled_or_scaled_freqs(self):
        """The frequencies of every position, rope_scaling applied."""
        return inv_freqs(self.cfg, self.rot, self.theta)

    def rope_at(self, pos):
        """The frequencies and cos/sin factor that rotate position pos."""
        return self.freqs, 1.0

    def ln(self, name, x):
        """LayerNorm with weight and bias, HF tensor prefix name."""
        return layer_norm(x, self.w.vector(name + ".weight"), self.w.vector(name + ".bias"), self.eps)

    def lin(self, name, x):
        """Linear with bias, HF tensor prefix name."""
        return linear(self.w.matrix(name + ".weight"), x, self.w.vector(name + ".bias"))

    def logits(self, ids):
        rows = []
        for pos, tok in enumerate(ids):
            x = self.embed(tok, pos)
            for l in range(self.cfg["num_hidden_layers"]):
                x = self.layer(l, x, pos)
            rows.append(self.head(x))
        return rows


class Llama(Model):
    def __init__(self, cfg, w):
        super().__init__(cfg, w)
        self.act = activation(cfg.get("hidden_act", "silu"),
                              cfg.get("hidden_act_param", cfg.get("flashbed_fatrelu_threshold", 0.0)))
        self.eps = cfg.get("rms_norm_eps", 1e-6)

    def embed(self, tok, pos):
        return self.w.matrix("model.embed_tokens.weight")[tok]

    def proj(self, p, x):
        """A q/k/v projection, with its bias where the layer has one (Qwen2)."""
        b = self.w.vector(p + ".bias") if self.w.has(p + ".bias") else None
        return linear(self.w.matrix(p + ".weight"), x, b)

    def qk_norm(self, l, head, which):
        """Qwen3's q_norm / k_norm: RMSNorm over one head."""
        return rms_norm(head, self.w.vector("model.layers.%d.self_attn.%s_norm.weight" % (l, which)), self.eps)

    def qkv(self, p, n):
        return (self.proj(p + "self_attn.q_proj", n), self.proj(p + "self_attn.k_proj", n),
                self.proj(p + "self_attn.v_proj", n))

    def gate_up(self, p, n):
        return linear(self.w.matrix(p + "mlp.gate_proj.weight"), n), linear(self.w.matrix(p + "mlp.up_proj.weight"), n)

    def glu(self, gate, up):
        return [self.act(g) * u for g, u in zip(gate, up)]

    def layer(self, l, x, pos):
        w, p = self.w, "model.layers.%d." % l
        n = rms_norm(x, w.vector(p + "input_layernorm.weight"), self.eps)
        qk = self.qk_norm if w.has(p + "self_attn.q_norm.weight") else None
        a = self.self_attention(l, *self.qkv(p, n), pos, qk)
        h = add(x, linear(w.matrix(p + "self_attn.o_proj.weight"), a))
        n = rms_norm(h, w.vector(p + "post_attention_layernorm.weight"), self.eps)
        f = linear(w.matrix(p + "mlp.down_proj.weight"), self.glu(*self.gate_up(p, n)))
        return add(h, f)

    def head(self, x):
        n = rms_norm(x, self.w.vector("model.norm.weight"), self.eps)
        tied = self.cfg.get("tie_word_embeddings", False)
        return linear(self.w.matrix("model.embed_tokens.weight" if tied else "lm_head.weight"), n)


class Phi3(Llama):
    """Llama's block with Phi3Attention's fused qkv_proj (q rows, then k,
    then v) and Phi3MLP's gate_up_proj (chunk(2): gate, then up)."""

    def __init__(self, cfg, w):
        super().__init__(cfg, w)
        self.eps = cfg.get("rms_norm_eps", 1e-5)
        self.window = cfg.get("sliding_window")  # Mistral's: p attends to p - W + 1 .. p

    def unscaled_or_scaled_freqs(self):
        """Unscaled: longrope's frequencies depend on the position (rope_at)."""
        return inv_freqs({}, self.rot, self.theta)

    def rope_at(self, pos):
        if self.cfg.get("rope_scaling"):
            return longrope(self.cfg, self.rot, self.theta, pos)
        return self.freqs, 1.0

    def qkv(self, p, n):
        fused = linear(self.w.matrix(p + "self_attn.qkv_proj.weight"), n)
        q, kv = self.n_heads * self.hd, self.n_kv * self.hd
        return fused[:q], fused[q:q + kv], fused[q + kv:]

    def gate_up(self, p, n):
        fused = linear(self.w.matrix(p + "mlp.gate_up_proj.weight"), n)
        half = len(fused) // 2
        return fused[:half], fused[half:]


class Mistral(Llama):
    def __init__(self, cfg, w):
        super().__init__(cfg, w)
        self.window = cfg.get("sliding_window")


class Qwen(Llama):
    def __init__(self, cfg, w):
        super().__init__(cfg, w)
        if cfg.get("use_sliding_window"):
            raise SystemExit("use_sliding_window: true is not in this reference")


class Bamboo(Mistral):
    """TurboSparse-Mistral (model_type "bamboo"): Mistral's layers under
    Llama's names with BambooMLP's dReLU, down(act(gate x) * act(up x))
    (its published modeling_bamboo.py; act is hidden_act, relu)."""

    def glu(self, gate, up):
        return [self.act(g) * self.act(u) for g, u in zip(gate, up)]


class OPT(Model):
    def __init__(self, cfg, w):
        super().__init__(cfg, w)
        self.rot = 0  # learned positions

    def embed(self, tok, pos):
        e = self.w.matrix("model.decoder.embed_tokens.weight")[tok]
        return add(e, self.w.matrix("model.decoder.embed_positions.weight")[pos + 2])

    def layer(self, l, x, pos):
        p = "model.decoder.layers.%d." % l
        n = self.ln(p + "self_attn_layer_norm", x)
        a = self.self_attention(l, self.lin(p + "self_attn.q_proj", n), self.lin(p + "self_attn.k_proj", n),
                                self.lin(p + "self_attn.v_proj", n), pos)
        h = add(x, self.lin(p + "self_attn.out_proj", a))
        n = self.ln(p + "final_layer_norm", h)
        relu = activation("relu")
        return add(h, self.lin(p + "fc2", [relu(v) for v in self.lin(p + "fc1", n)]))

    def head(self, x):
        n = self.ln("model.decoder.final_layer_norm", x)
        tied = self.cfg.get("tie_word_embeddings", True)
        return linear(self.w.matrix("model.decoder.embed_tokens.weight" if tied else "lm_head.weight"), n)


class Falcon(Model):
    def __init__(self, cfg, w):
        cfg = dict(cfg)
        for old, new in (("n_embed", "hidden_size"), ("n_head", "num_attention_heads"), ("n_layer", "num_hidden_layers")):
            if old in cfg and new not in cfg:
                cfg[new] = cfg[old]
        for key in ("alibi", "new_decoder_architecture", "bias"):
            if cfg.get(key, False):
                raise SystemExit("falcon %s: true is not in this reference" % key)
        if not cfg.get("parallel_attn", True):
            raise SystemExit("falcon parallel_attn: false is not in this reference")
        super().__init__(cfg, w)
        self.multi_query = cfg.get("multi_query", True)
        self.n_kv = 1 if self.multi_query else cfg.get("num_kv_heads", self.n_heads)
        self.eps = cfg.get("layer_norm_epsilon", 1e-5)
        self.act = activation(cfg.get("activation", "gelu"))

    def embed(self, tok, pos):
        return self.w.matrix("transformer.word_embeddings.weight")[tok]

    def split(self, fused):
        """_split_heads: multi-query is (n_heads + 2) heads, the last two k
        and v; otherwise (n_heads, 3, head_dim)."""
        hd, nh = self.hd, self.n_heads
        if self.multi_query:
            return fused[:nh * hd], fused[nh * hd:(nh + 1) * hd], fused[(nh + 1) * hd:]
        q, k, v = [], [], []
        for h in range(nh):
            base = h * 3 * hd
            q += fused[base:base + hd]
            k += fused[base + hd:base + 2 * hd]
            v += fused[base + 2 * hd:base + 3 * hd]
        return q, k, v

    def layer(self, l, x, pos):
        w, p = self.w, "transformer.h.%d." % l
        n = layer_norm(x, w.vector(p + "input_layernorm.weight"), w.vector(p + "input_layernorm.bias"), self.eps)
        q, k, v = self.split(linear(w.matrix(p + "self_attention.query_key_value.weight"), n))
        a = linear(w.matrix(p + "self_attention.dense.weight"), self.self_attention(l, q, k, v, pos))
        hidden = [self.act(u) for u in linear(w.matrix(p + "mlp.dense_h_to_4h.weight"), n)]
        return add(x, a, linear(w.matrix(p + "mlp.dense_4h_to_h.weight"), hidden))

    def head(self, x):
        n = layer_norm(x, self.w.vector("transformer.ln_f.weight"), self.w.vector("transformer.ln_f.bias"), self.eps)
        tied = self.cfg.get("tie_word_embeddings", True)
        return linear(self.w.matrix("transformer.word_embeddings.weight" if tied else "lm_head.weight"), n)


class Persimmon(Model):
    def __init__(self, cfg, w):
        cfg = dict(cfg)
        cfg.setdefault("partial_rotary_factor", 0.5)
        cfg.setdefault("rope_theta", 25000.0)
        super().__init__(cfg, w)
        self.n_kv = self.n_heads
        self.eps = cfg.get("layer_norm_eps", 1e-5)
        self.act = activation(cfg.get("hidden_act", "relu2"))
        self.qk = cfg.get("qk_layernorm", True)

    def embed(self, tok, pos):
        return self.w.matrix("model.embed_tokens.weight")[tok]

    def qk_norm(self, l, head, which):
        return self.ln("model.layers.%d.self_attn.%s_layernorm" % (l, which), head)

    def layer(self, l, x, pos):
        p, hd = "model.layers.%d." % l, self.hd
        n = self.ln(p + "input_layernorm", x)
        fused = self.lin(p + "self_attn.query_key_value", n)  # viewed (n_heads, 3, head_dim)
        q, k, v = [], [], []
        for h in range(self.n_heads):
            base = h * 3 * hd
            q += fused[base:base + hd]
            k += fused[base + hd:base + 2 * hd]
            v += fused[base + 2 * hd:base + 3 * hd]
        a = self.self_attention(l, q, k, v, pos, self.qk_norm if self.qk else None)
        h = add(x, self.lin(p + "self_attn.dense", a))
        n = self.ln(p + "post_attention_layernorm", h)
        return add(h, self.lin(p + "mlp.dense_4h_to_h", [self.act(u) for u in self.lin(p + "mlp.dense_h_to_4h", n)]))

    def head(self, x):
        n = self.ln("model.final_layernorm", x)
        tied = self.cfg.get("tie_word_embeddings", False)
        return linear(self.w.matrix("model.embed_tokens.weight" if tied else "lm_head.weight"), n)


class Phi(Model):
    def __init__(self, cfg, w):
        cfg = dict(cfg)
        cfg.setdefault("partial_rotary_factor", 0.5)
        if cfg.get("qk_layernorm", False):
            raise SystemExit("phi qk_layernorm: true is not in this reference")
        super().__init__(cfg, w)
        self.eps = cfg.get("layer_norm_eps", 1e-5)
        self.act = activation(cfg.get("hidden_act", "gelu_new"))

    def embed(self, tok, pos):
        return self.w.matrix("model.embed_tokens.weight")[tok]

    def layer(self, l, x, pos):
        p = "model.layers.%d." % l
        n = self.ln(p + "input_layernorm", x)
        a = self.self_attention(l, self.lin(p + "self_attn.q_proj", n), self.lin(p + "self_attn.k_proj", n),
                                self.lin(p + "self_attn.v_proj", n), pos)
        f = self.lin(p + "mlp.fc2", [self.act(u) for u in self.lin(p + "mlp.fc1", n)])
        return add(x, self.lin(p + "self_attn.dense", a), f)

    def head(self, x):
        n = self.ln("model.final_layernorm", x)
        tied = self.cfg.get("tie_word_embeddings", False)
        weight = "model.embed_tokens.weight" if tied else "lm_head.weight"
        return linear(self.w.matrix(weight), n, self.w.vector("lm_head.bias"))


ARCHS = {"llama": Llama, "opt": OPT, "falcon": Falcon, "persimmon": Persimmon, "phi": Phi, "mistral": Mistral,
         "qwen2": Qwen, "qwen3": Qwen, "phi3": Phi3, "bamboo": Bamboo,
         "sparsellama": Llama}  # ProSparse's published model_type: Llama with FATReLU


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    folder, ids = argv[1], [int(a) for a in argv[2:]]
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") not in ARCHS:
        raise SystemExit("model_type %r is not in this reference (%s)" % (cfg.get("model_type"), ", ".join(ARCHS)))
    if cfg.get("rope_scaling") and cfg["model_type"] not in ("llama", "mistral", "qwen2", "qwen3", "phi3"):
        raise SystemExit("rope_scaling is not in this reference for %s" % cfg["model_type"])
    model = ARCHS[cfg["model_type"]](cfg, Weights(read_tensors(folder)))
    for row in model.logits(ids):
        print(" ".join("%.9g" % v for v in row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
