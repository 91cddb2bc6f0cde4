#!/usr/bin/env python3
"""Record which FFN neurons a PyTorch model activates, as a flashbed trace.

Forward hooks on each layer's FFN catch, for every token the model scores
or generates, the value of each FFN neuron: the input of the down
projection, act(up.x + b) in a plain FFN and act(gate.x) * (up.x) in a GLU.
A neuron is active by one of two rules, recorded in the trace's header:

  nonzero    value != 0: the ReLU family (ReLU, squared ReLU, FATReLU), which
             is exactly zero for most neurons;
  threshold  |value| > T: the others (SiLU, GELU), zero almost nowhere.

These are the rules of flashbed's own oracle (engine/compute/activation.h), so a
trace recorded here from a model equals `flashbed run --active oracle
--record` on the same weights and tokens. (A GLU neuron whose up.x is
exactly 0 while its gate fires is active to flashbed and not here; with
float arithmetic that does not happen in practice.)

Optionally a predictor's sets are recorded beside the true ones: a Python
file defining predict(layer, x), given the layer's FFN input x (a tensor of
[tokens, d_model], after the layer norm) and returning a [tokens, d_ff]
tensor whose non-zero entries are the neurons it predicts.

Where the FFN lives, per architecture of transformers' modelling code ('*'
stands for the layer number):

  opt        model.decoder.layers.*.fc1 -> fc2
  llama      model.layers.*.mlp.up_proj -> down_proj    (GLU)
  falcon     transformer.h.*.mlp.dense_h_to_4h -> dense_4h_to_h
  persimmon  model.layers.*.mlp.dense_h_to_4h -> dense_4h_to_h
  phi        model.layers.*.mlp.fc1 -> fc2
  phi3       model.layers.*.mlp.gate_up_proj -> down_proj   (GLU)
  bamboo     model.layers.*.mlp.up_proj -> down_proj    (dReLU: TurboSparse-Mistral,
             loaded as Mistral with BambooMLP's forward, see load_bamboo)

and any other model's with --down-module PATTERN (and --up-module PATTERN
for a predictor), e.g. --down-module 'model.layers.*.mlp.down_proj'.

Tokens: --tokens N of the text are scored in forward passes of at most
--context tokens (each pass a sequence of its own in the trace), then
--generate G tokens are generated greedily after them, each recorded as a
generated token. The trace's header holds the model's shape (layers,
d_model, d_ff, the weights' type, plain or GLU FFN), so flashbed replay,
trace info and predict --trace read it as they read their own.

Command line (local paths only; nothing is downloaded):
  flashbed_record.py --model DIR (--text FILE --tokens N | --token-ids FILE)
                     --out T.trace [options]          (--help lists them)

As a library (torch and transformers need only be importable when used):
  rec = FfnRecorder(model, find_ffn_layers(model, "opt"), Rule("nonzero"))
  with TraceWriter(path, rec.meta(source_json)) as w:
      record_sequence(model, rec, w, token_ids)
  rec.remove()

Errors: a bad option, file or model raises RecordError with a message
naming it; the command line prints it and exits with status 1 (2 for usage).
On Ctrl-C or SIGTERM the tokens recorded so far are kept as a complete,
shorter trace (fewer tokens than its header's "tokens" + "generate") and
the exit status is 130; nothing is written when no token was recorded.
"""

import argparse
import importlib.util
import json
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashbed_trace as ft  # noqa: E402  (beside this file)


class RecordError(Exception):
    pass


# architecture (config.json's model_type) -> up-projection pattern,
# down-projection pattern, GLU, config keys naming the activation (the
# first present wins) and the activation when none is.
ARCHS = {
    "opt": ("model.decoder.layers.*.fc1", "model.decoder.layers.*.fc2", False,
            ("activation_function",), "relu"),
    "llama": ("model.layers.*.mlp.up_proj", "model.layers.*.mlp.down_proj", True, ("hidden_act",), "silu"),
    "falcon": ("transformer.h.*.mlp.dense_h_to_4h", "transformer.h.*.mlp.dense_4h_to_h", False,
               ("activation", "hidden_act"), "gelu"),
    "persimmon": ("model.layers.*.mlp.dense_h_to_4h", "model.layers.*.mlp.dense_4h_to_h", False,
                  ("hidden_act",), "relu2"),
    "phi": ("model.layers.*.mlp.fc1", "model.layers.*.mlp.fc2", False, ("hidden_act",), "gelu_new"),
    "phi3": ("model.layers.*.mlp.gate_up_proj", "model.layers.*.mlp.down_proj", True, ("hidden_act",), "silu"),
    # TurboSparse-Mistral: relu on gate and up (dReLU), zero when either is
    "bamboo": ("model.layers.*.mlp.up_proj", "model.layers.*.mlp.down_proj", True, ("hidden_act",), "relu"),
}

# activations that are exactly zero for most inputs: the nonzero rule
SPARSE_ACTIVATIONS = {"relu", "relu2", "relu6", "fatrelu"}


def _torch():
    try:
        import torch
    except ImportError:
        raise RecordError("PyTorch is not installed (import torch failed): the recorder needs it") from None
    return torch


# ---- finding the FFN ----

class FfnLayers:
    """Each layer's down projection (its input: the neurons' values) and,
    when a predictor needs the FFN's input, its up projection."""

    def __init__(self, down, up, glu, down_pattern, up_pattern, activation):
        self.down, self.up, self.glu = down, up, glu
        self.down_pattern, self.up_pattern = down_pattern, up_pattern
        self.activation = activation


def match_layers(model, pattern):
    """The modules named by pattern ('*' stands for the layer number), in
    layer order; layers must be numbered 0..L-1."""
    if pattern.count("*") != 1:
        raise RecordError("module pattern %r: needs exactly one '*' standing for the layer number" % pattern)
    rx = re.compile("^" + re.escape(pattern).replace(r"\*", r"(\d+)") + "$")
    found = {}
    for name, mod in model.named_modules():
        m = rx.match(name)
        if m:
            found[int(m.group(1))] = mod
    if not found:
        raise RecordError("module pattern %r matches no module of the model (its modules look like %r)"
                          % (pattern, _example_names(model)))
    if sorted(found) != list(range(len(found))):
        raise RecordError("module pattern %r matches layers %s, not 0..%d" % (pattern, sorted(found), len(found) - 1))
    return [found[i] for i in range(len(found))]


def _example_names(model, n=4):
    names = [name for name, _ in model.named_modules() if name]
    return names[:n] + (["..."] if len(names) > n else [])


def _config(model):
    cfg = getattr(model, "config", None)
    return cfg.to_dict() if hasattr(cfg, "to_dict") else {}


def model_type(model):
    # load_bamboo's model is a Mistral one in Bamboo's clothes
    return getattr(model, "flashbed_model_type", None) or _config(model).get("model_type")


def config_activation(cfg, keys, default):
    for k in keys:
        v = cfg.get(k)
        if isinstance(v, str):
            return v
    return default


def find_ffn_layers(model, arch=None, down_pattern=None, up_pattern=None, glu=None):
    """The FFN of model: by arch (a key of ARCHS; default the config's
    model_type) or by the patterns given, which override the arch's."""
    arch = arch or model_type(model)
    known = ARCHS.get(arch)
    if known is None and down_pattern is None:
        raise RecordError("model type %r is not one the recorder knows (%s): name its FFN with --down-module"
                          % (arch, ", ".join(sorted(ARCHS))))
    cfg = _config(model)
    activation = (config_activation(cfg, known[3], known[4]) if known
                  else config_activation(cfg, ("hidden_act", "activation_function", "activation"), None))
    activation = getattr(model, "flashbed_activation", None) or activation  # load_sparse_llama's
    down_pattern = down_pattern or known[1]
    up_pattern = up_pattern or (known[0] if known else None)
    down = match_layers(model, down_pattern)
    up = match_layers(model, up_pattern) if up_pattern else None
    if up is not None and len(up) != len(down):
        raise RecordError("%r matches %d layers but %r matches %d" % (up_pattern, len(up), down_pattern, len(down)))
    glu = known[2] if glu is None and known else bool(glu)
    return FfnLayers(down, up, glu, down_pattern, up_pattern, activation)


def _linear_shape(mod, what):
    """(in_features, out_features) of a linear-like module."""
    w = getattr(mod, "weight", None)
    if w is None or w.dim() != 2:
        raise RecordError("%s is not a linear layer (no 2-D weight): name the FFN's down projection" % what)
    return w.shape[1], w.shape[0]


# ---- the rule for "active" ----

class Rule:
    """nonzero: value != 0; threshold: |value| > threshold."""

    def __init__(self, name, threshold=0.0):
        if name not in ("nonzero", "threshold"):
            raise RecordError("rule %r: nonzero or threshold" % name)
        if not threshold >= 0 or threshold == float("inf"):
            raise RecordError("threshold %r: a finite number >= 0" % threshold)
        self.name, self.threshold = name, float(threshold)

    @staticmethod
    def for_activation(activation, threshold=None):
        """nonzero for the ReLU family, else threshold (0 unless given)."""
        if activation is not None and activation.lower() in SPARSE_ACTIVATIONS:
            return Rule("nonzero")
        return Rule("threshold", threshold or 0.0)

    def active(self, values):
        """Bool mask of values ([..., d_ff]), on values' device."""
        if self.name == "nonzero":
            return values != 0
        return values.float().abs() > self.threshold

    def describe(self):
        d = {"rule": self.name}
        if self.name == "threshold":
            d["threshold"] = self.threshold
        return d


# ---- hooks ----

class FfnRecorder:
    """Hooks on every FFN layer. Each forward pass appends, per layer, the
    active mask of every position ([positions, d_ff] bools) and, with a
    predictor, its predicted mask; take() hands them over and clears."""

    def __init__(self, model, layers, rule, predictor=None, bytes_per_weight=None, weight_type=None):
        if predictor is not None and layers.up is None:
            raise RecordError("a predictor needs the FFN's input: name the up projection with --up-module")
        self.layers, self.rule, self.predictor = layers, rule, predictor
        self.d_ff, self.d_model = _linear_shape(layers.down[0], "%r layer 0" % layers.down_pattern)
        for l, mod in enumerate(layers.down):
            if _linear_shape(mod, "%r layer %d" % (layers.down_pattern, l)) != (self.d_ff, self.d_model):
                raise RecordError("%r layer %d has another shape than layer 0" % (layers.down_pattern, l))
        w = layers.down[0].weight
        # the weights' type as the trace header records it (a name of ft.WTYPES): given, or an
        # older caller's bytes per weight (4 f32, 2 f16), or the model's config dtype, else the
        # weights' own dtype; a dtype stays its type (bf16 is recorded as bf16, not as 2 bytes)
        if weight_type:
            self.weight_type, self._why = weight_type, None
        elif bytes_per_weight:
            self.weight_type = ft.dtype_of_bytes(bytes_per_weight)
            self._why = "%d bytes per weight name no weight type a trace records (4: f32, 2: f16)" % bytes_per_weight
        else:
            d = _config_dtype(model) or str(w.dtype)
            self.weight_type = torch_weight_type(d)
            self._why = ("the weights' dtype %s is no weight type a trace records (%s): give --weight-type"
                         % (d, ", ".join(ft.WTYPES)))
        self._active = [[] for _ in layers.down]
        self._predicted = [[] for _ in layers.down]
        self._handles = []
        for l, mod in enumerate(layers.down):
            self._handles.append(mod.register_forward_pre_hook(self._down_hook(l)))
        if predictor is not None:
            for l, mod in enumerate(layers.up):
                self._handles.append(mod.register_forward_pre_hook(self._up_hook(l)))

    def _down_hook(self, l):
        def hook(_mod, inputs):
            v = inputs[0].detach()
            if v.shape[-1] != self.d_ff:
                raise RecordError("layer %d: the down projection's input has %d values per position, not d_ff %d"
                                  % (l, v.shape[-1], self.d_ff))
            self._active[l].append(self.rule.active(v.reshape(-1, self.d_ff)))
        return hook

    def _up_hook(self, l):
        def hook(_mod, inputs):
            x = inputs[0].detach()
            x = x.reshape(-1, x.shape[-1])
            p = self.predictor(l, x)
            if tuple(p.shape) != (x.shape[0], self.d_ff):
                raise RecordError("predictor: layer %d returned shape %s for %d positions, not [%d, %d]"
                                  % (l, tuple(p.shape), x.shape[0], x.shape[0], self.d_ff))
            self._predicted[l].append(p != 0)
        return hook

    def meta(self, source):
        dtype = self.weight_type
        if dtype not in ft.WTYPES:
            raise RecordError(self._why or "the weight type %s is none a trace records" % dtype)
        return ft.TraceMeta(len(self.layers.down), self.d_model, self.d_ff, dtype,
                            ft.FFN_GLU if self.layers.glu else ft.FFN_RELU, self.predictor is not None,
                            json.dumps(source))

    def take(self):
        """Per layer, the [positions, d_ff] masks of the passes since the
        last take (concatenated), and the predicted ones (None without)."""
        torch = _torch()

        def cat(lists):
            out = []
            for l, parts in enumerate(lists):
                if not parts:
                    raise RecordError("layer %d's FFN did not run in the forward pass: is the pattern %r right?"
                                      % (l, self.layers.down_pattern))
                out.append(torch.cat(parts) if len(parts) > 1 else parts[0])
            return out
        act = cat(self._active)
        pred = cat(self._predicted) if self.predictor is not None else None
        self._active = [[] for _ in self.layers.down]
        self._predicted = [[] for _ in self.layers.down]
        return act, pred

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []


# torch's dtype names as the trace's weight types (ft.WTYPES, common/wtypes.def);
# a dtype without a row (float64) has none
TORCH_TYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def torch_weight_type(dtype):
    """The trace's weight type of a torch dtype or its name ("bfloat16",
    "torch.bfloat16"); None when the table has no row for it."""
    return TORCH_TYPES.get(str(dtype).replace("torch.", "")) if dtype is not None else None


def _config_dtype(model):
    """The model's config dtype's name, or None (after loading,
    transformers may have set it to the dtype loaded)."""
    cfg = _config(model)
    d = cfg.get("torch_dtype") or cfg.get("dtype")
    return str(d).replace("torch.", "") if d else None


def saved_weight_type(model_dir):
    """The weight type the folder's config.json says it was saved in; None
    when it names no dtype; RecordError when it names one the trace's types
    lack (float64)."""
    try:
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
    except (OSError, ValueError):
        return None
    d = cfg.get("torch_dtype") or cfg.get("dtype")
    if not d:
        return None
    t = torch_weight_type(d)
    if t is None:
        raise RecordError("%s: its dtype %s is no weight type a trace records (%s): give --weight-type"
                          % (os.path.join(model_dir, "config.json"), d, ", ".join(ft.WTYPES)))
    return t


def _index_lists(mask):
    """[positions, d_ff] bool mask -> per position the sorted indices: numpy
    uint32 arrays where torch hands numpy arrays (the writer passes them to
    the C library as they are), else lists of ints."""
    pos_idx = mask.nonzero().cpu()            # sorted by position, then neuron
    counts = mask.sum(dim=1).cpu().tolist()
    try:
        import numpy as np
        flat = pos_idx[:, 1].numpy().astype(np.uint32)
    except (ImportError, RuntimeError, TypeError):  # torch built without numpy
        flat = pos_idx[:, 1].tolist()
    out, at = [], 0
    for c in counts:
        out.append(flat[at:at + c])
        at += c
    return out


def write_positions(writer, active, predicted, flags, rows=None):
    """Appends positions (rows of the masks; default all) as tokens, with
    flags[i] for the i-th; returns how many were written."""
    n_layers = len(active)
    if rows is not None:
        active = [m[rows] for m in active]
        predicted = [m[rows] for m in predicted] if predicted is not None else None
    a = [_index_lists(m) for m in active]
    p = [_index_lists(m) for m in predicted] if predicted is not None else None
    for t, f in enumerate(flags):
        writer.begin_token(f)
        for l in range(n_layers):
            writer.layer(a[l][t], p[l][t] if p is not None else None)
    return len(flags)


# ---- driving the model ----

def _logits(out):
    return out.logits if hasattr(out, "logits") else (out[0] if isinstance(out, (tuple, list)) else out)


def _takes_cache(model):
    import inspect
    try:
        return "past_key_values" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def record_sequence(model, rec, writer, ids, generate=0, device="cpu", stop=None):
    """Scores ids as one sequence (its first token starts a sequence), then
    generates greedily `generate` tokens after them, each forwarded and
    recorded as generated. Returns (tokens written, generated ids).
    stop: a callable; when it returns true, stops after the current token."""
    torch = _torch()
    with torch.no_grad():
        x = torch.tensor([ids], dtype=torch.long, device=device)
        cache = _takes_cache(model)
        out = model(x, use_cache=True) if cache and generate else model(x)
        act, pred = rec.take()
        flags = [ft.TOKEN_SEQ_START] + [0] * (len(ids) - 1)
        n = write_positions(writer, act, pred, flags)
        past = getattr(out, "past_key_values", None) if cache else None
        logits, seq, made = _logits(out), list(ids), []
        for _ in range(generate):
            if stop is not None and stop():
                break
            nxt = int(logits[0, -1].argmax())
            seq.append(nxt)
            made.append(nxt)
            if past is not None:
                out = model(torch.tensor([[nxt]], device=device), past_key_values=past, use_cache=True)
                past = out.past_key_values
            else:  # no cache: the whole sequence again, the last position recorded
                out = model(torch.tensor([seq], dtype=torch.long, device=device))
            act, pred = rec.take()
            n += write_positions(writer, act, pred, [ft.TOKEN_GENERATED], rows=slice(-1, None))
            logits = _logits(out)
    return n, made


# ---- command line ----

def load_predictor(path):
    """predict(layer, x) from a Python file."""
    spec = importlib.util.spec_from_file_location("flashbed_user_predictor", path)
    if spec is None or not os.path.isfile(path):
        raise RecordError("--predictor %s: no such Python file" % path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # the user's code: report whatever it raised
        raise RecordError("--predictor %s: loading it failed: %s: %s" % (path, type(e).__name__, e)) from None
    fn = getattr(mod, "predict", None)
    if not callable(fn):
        raise RecordError("--predictor %s: defines no function predict(layer, x)" % path)
    return fn


def read_token_ids(path):
    try:
        with open(path) as f:
            words = f.read().replace(",", " ").split()
    except OSError as e:
        raise RecordError("--token-ids %s: %s" % (path, e.strerror)) from None
    try:
        ids = [int(w) for w in words]
    except ValueError:
        raise RecordError("--token-ids %s: not a list of integers" % path) from None
    if not ids or min(ids) < 0:
        raise RecordError("--token-ids %s: needs at least one token id, none negative" % path)
    return ids


def check_ids(model, ids, where):
    emb = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    vocab = getattr(emb, "num_embeddings", None)
    if vocab is not None and max(ids) >= vocab:
        raise RecordError("%s: token id %d is outside the model's vocabulary of %d" % (where, max(ids), vocab))


def write_ids(path, ids):
    """One token id per line, through a temporary renamed into place."""
    tmp = ft._tmp_name(path)
    try:
        with open(tmp, "w") as f:
            f.write("".join("%d\n" % i for i in ids))
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise RecordError("--ids-out %s: %s" % (path, e.strerror)) from None


def load_tokenizer(path):
    try:
        from transformers import AutoTokenizer, PreTrainedTokenizerFast
    except ImportError:
        raise RecordError("transformers is not installed: --text needs its tokenizer (or give --token-ids)") from None
    try:
        return AutoTokenizer.from_pretrained(path, local_files_only=True)
    except Exception as first:  # noqa: BLE001  a folder with tokenizer.json alone
        tj = os.path.join(path, "tokenizer.json")
        if os.path.isfile(tj):
            return PreTrainedTokenizerFast(tokenizer_file=tj)
        raise RecordError("cannot load a tokenizer from %s: %s" % (path, first)) from None


def text_token_ids(tokenizer_dir, text_path, n):
    try:
        with open(text_path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise RecordError("--text %s: %s" % (text_path, getattr(e, "strerror", None) or e)) from None
    ids = load_tokenizer(tokenizer_dir)(text)["input_ids"]
    if len(ids) < n:
        raise RecordError("--text %s holds %d tokens; --tokens asks for %d" % (text_path, len(ids), n))
    return ids[:n]


def load_bamboo(path, key, td):
    """A model_type "bamboo" folder (TurboSparse-Mistral; transformers has
    no Bamboo and its remote modeling_bamboo.py is not run): Mistral's
    model, whose layers and names Bamboo's are, with each MLP's forward
    BambooMLP's, down_proj(act_fn(gate_proj(x)) * act_fn(up_proj(x)))."""
    from transformers import MistralConfig, MistralForCausalLM
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)
    for k in ("model_type", "architectures", "auto_map"):
        cfg.pop(k, None)
    model = MistralForCausalLM.from_pretrained(path, config=MistralConfig(**cfg), local_files_only=True,
                                               **{key: td})
    for layer in model.model.layers:
        mlp = layer.mlp
        mlp.forward = (lambda m: lambda x: m.down_proj(m.act_fn(m.gate_proj(x)) * m.act_fn(m.up_proj(x))))(mlp)
    model.flashbed_model_type = "bamboo"
    return model


class FATReLU:
    """x where x > threshold, else 0 (ProSparse's FATReLU), as a module."""

    @staticmethod
    def make(threshold):
        torch = _torch()

        class _FATReLU(torch.nn.Module):
            def forward(self, x):
                return torch.where(x > threshold, x, torch.zeros_like(x))

        return _FATReLU()


def load_sparse_llama(path, key, td, cfg):
    """A Llama with hidden_act "fatrelu" (ProSparse's Llama 2, threshold in
    hidden_act_param; flashbed model make's, in flashbed_fatrelu_threshold),
    or any model_type "sparsellama" folder (ProSparse's published configs:
    SparseLlamaForCausalLM, whose remote modelling code is not run):
    transformers' Llama, with each act_fn FATReLU when hidden_act says so, as
    ProSparse's own modelling code builds it (transformers has no FATReLU)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    fatrelu = cfg.get("hidden_act") == "fatrelu"
    threshold = cfg.get("hidden_act_param", cfg.get("flashbed_fatrelu_threshold"))
    if fatrelu and (not isinstance(threshold, (int, float)) or threshold < 0):
        raise RecordError("--model %s: hidden_act fatrelu needs hidden_act_param, a number >= 0" % path)
    cfg = {k: v for k, v in cfg.items() if k not in ("model_type", "architectures", "auto_map")}
    if fatrelu:
        cfg["hidden_act"] = "relu"
    model = LlamaForCausalLM.from_pretrained(path, config=LlamaConfig(**cfg), local_files_only=True, **{key: td})
    if fatrelu:
        for layer in model.model.layers:
            layer.mlp.act_fn = FATReLU.make(float(threshold))
        model.flashbed_activation = "fatrelu"
    return model


def load_model(path, dtype, device):
    torch = _torch()
    try:
        from transformers import AutoModelForCausalLM
    except ImportError:
        raise RecordError("transformers is not installed: --model needs it") from None
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise RecordError("--model %s: no config.json there (a local Hugging Face folder is needed)" % path)
    td = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    # transformers 4.56 renamed torch_dtype to dtype
    key = "dtype" if _version_at_least(sys.modules["transformers"].__version__, (4, 56)) else "torch_dtype"
    try:
        with open(os.path.join(path, "config.json")) as f:
            cfg = json.load(f)
        if cfg.get("model_type") == "bamboo":
            model = load_bamboo(path, key, td)
        elif cfg.get("model_type") == "sparsellama" or (cfg.get("model_type") == "llama" and
                                                         cfg.get("hidden_act") == "fatrelu"):
            model = load_sparse_llama(path, key, td, cfg)
        else:
            model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, **{key: td})
    except Exception as e:  # noqa: BLE001  transformers' own errors name the problem
        raise RecordError("--model %s: transformers cannot load it: %s" % (path, e)) from None
    return model.to(device).eval()


def split_passes(ids, context, generate, max_pos):
    """ids in passes of at most context tokens; the last leaves room for
    the generated ones within the model's max_pos positions."""
    if generate >= max_pos:
        raise RecordError("--generate %d: the model has %d positions" % (generate, max_pos))
    passes = [ids[i:i + context] for i in range(0, len(ids), context)]
    if len(passes[-1]) + generate > max_pos:
        last, keep = passes.pop(), max_pos - generate
        passes += [last[:-keep], last[-keep:]]
    return passes


def _version_at_least(text, want):
    nums = []
    for part in text.split(".")[:len(want)]:
        m = re.match(r"\d+", part)
        nums.append(int(m.group()) if m else 0)
    return tuple(nums) >= want


def _parse(argv):
    p = argparse.ArgumentParser(
        prog="flashbed_record.py",
        description="Record which FFN neurons a Hugging Face causal LM activates, as a flashbed trace.")
    p.add_argument("--model", required=True, metavar="DIR", help="local Hugging Face model folder")
    p.add_argument("--text", metavar="FILE", help="text whose tokens are scored (UTF-8)")
    p.add_argument("--tokens", type=int, metavar="N", help="with --text: score its first N tokens")
    p.add_argument("--token-ids", metavar="FILE", help="score these token ids instead (integers, whitespace or commas)")
    p.add_argument("--tokenizer", metavar="DIR", help="tokenizer folder [default: --model]")
    p.add_argument("--context", type=int, default=0, metavar="C",
                   help="tokens per forward pass, each a sequence of its own [default: the model's max positions]")
    p.add_argument("--generate", type=int, default=0, metavar="G",
                   help="then generate G tokens greedily, each recorded [default: 0]")
    p.add_argument("--out", required=True, metavar="T.trace", help="trace to write")
    p.add_argument("--ids-out", metavar="FILE", help="also write the recorded tokens' ids, one per line")
    p.add_argument("--arch", choices=sorted(ARCHS), help="where the FFN is [default: config.json's model_type]")
    p.add_argument("--down-module", metavar="PATTERN", help="each layer's down projection, '*' the layer number")
    p.add_argument("--up-module", metavar="PATTERN", help="each layer's up projection (its input goes to --predictor)")
    p.add_argument("--glu", choices=("yes", "no"), help="the FFN has a gate [default: the arch's]")
    p.add_argument("--rule", choices=("auto", "nonzero", "threshold"), default="auto",
                   help="active: value != 0 or |value| > --threshold; auto: nonzero for the ReLU family [default: auto]")
    p.add_argument("--threshold", type=float, default=0.0, metavar="T",
                   help="the threshold rule's T, on the scale of the down projection's input [default: 0]")
    p.add_argument("--predictor", metavar="FILE.py", help="also record the sets of predict(layer, x) in this file")
    p.add_argument("--dtype", choices=("float32", "float16", "bfloat16"), default="float32",
                   help="compute in this dtype [default: float32]")
    p.add_argument("--weight-type", choices=tuple(ft.WTYPES), metavar="TYPE",
                   help="the weights' type the trace records: %s [default: as config.json says the weights were "
                        "saved]" % ", ".join(ft.WTYPES))
    p.add_argument("--bytes-per-weight", type=int, metavar="B",
                   help="the older spelling of --weight-type, by size: 4 f32, 2 f16")
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto [default: auto]")
    return p.parse_args(argv)


def _check_args(a):
    if (a.text is None) == (a.token_ids is None):
        raise RecordError("give either --text FILE with --tokens N, or --token-ids FILE")
    if a.text is not None and (a.tokens is None or a.tokens < 1):
        raise RecordError("--text needs --tokens N, N >= 1")
    if a.context < 0 or a.generate < 0:
        raise RecordError("--context and --generate: numbers >= 0")
    if a.weight_type and a.bytes_per_weight is not None:
        raise RecordError("--weight-type %s and --bytes-per-weight %d: give one, not both"
                          % (a.weight_type, a.bytes_per_weight))
    if a.bytes_per_weight is not None and a.bytes_per_weight not in (2, 4):
        raise RecordError("--bytes-per-weight %d: 4 (f32) or 2 (f16), the sizes a trace records as a type"
                          % a.bytes_per_weight)
    if os.path.isdir(a.out):
        raise RecordError("--out %s: is a folder; name the trace file" % a.out)
    if not os.path.isdir(os.path.dirname(os.path.abspath(a.out))):
        raise RecordError("--out %s: its folder does not exist" % a.out)


class _Interrupt:
    """Ctrl-C and SIGTERM set a flag; recording stops after the token."""

    def __init__(self):
        self.hit = False
        self._old = {s: signal.signal(s, self._on) for s in (signal.SIGINT, signal.SIGTERM)}

    def _on(self, *_):
        self.hit = True

    def restore(self):
        for s, h in self._old.items():
            signal.signal(s, h)


def _versions():
    out = {}
    for name in ("torch", "transformers"):
        mod = sys.modules.get(name)
        if mod is not None:
            out[name] = getattr(mod, "__version__", "?")
    return out


def _commit():
    """The flashbed checkout's commit, or None outside one."""
    import subprocess
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


class _Setup:
    """What the command line's options resolve to, before recording."""

    def __init__(self, a):
        torch = _torch()
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device
        self.ids = (read_token_ids(a.token_ids) if a.token_ids
                    else text_token_ids(a.tokenizer or a.model, a.text, a.tokens))
        self.model = load_model(a.model, a.dtype, self.device)
        check_ids(self.model, self.ids, a.token_ids or a.text)
        # flashbed's engine computes in float32 with float accumulation: no TF32
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        self.layers = find_ffn_layers(self.model, a.arch, a.down_module, a.up_module,
                                      None if a.glu is None else a.glu == "yes")
        self.rule = (Rule.for_activation(self.layers.activation, a.threshold) if a.rule == "auto"
                     else Rule(a.rule, a.threshold))
        max_pos = _config(self.model).get("max_position_embeddings") or len(self.ids) + a.generate + 1
        self.context = min(a.context or max_pos, max_pos)
        self.passes = split_passes(self.ids, self.context, a.generate, max_pos)
        given = a.weight_type or (None if a.bytes_per_weight else saved_weight_type(a.model))
        self.rec = FfnRecorder(self.model, self.layers, self.rule,
                               load_predictor(a.predictor) if a.predictor else None,
                               a.bytes_per_weight, given)

    def source(self, a, argv):
        """The trace header's description: every parameter, and where and
        when it was recorded."""
        import platform
        return {"recorded_by": "python/flashbed_record.py", "model": os.path.abspath(a.model),
                "model_type": model_type(self.model), "down_module": self.layers.down_pattern,
                "up_module": self.layers.up_pattern if a.predictor else None,
                "activation": self.layers.activation, **self.rule.describe(), "active_sets": "true activations",
                "predicted_sets": a.predictor, "dtype": a.dtype, "device": str(self.device),
                "text": a.text, "token_ids": a.token_ids, "tokens": len(self.ids), "context": self.context,
                "generate": a.generate, "command": " ".join([os.path.basename(sys.argv[0])] + list(argv)),
                "commit": _commit(), "machine": platform.node(),
                "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **_versions()}


def _record_passes(a, st, writer, stop):
    """Every pass, the last with the generated tokens; returns the number
    of tokens written and their ids."""
    written, recorded = 0, []
    for i, chunk in enumerate(st.passes):
        if stop.hit:
            break
        gen = a.generate if i == len(st.passes) - 1 else 0
        n, made = record_sequence(st.model, st.rec, writer, chunk, gen, st.device, stop=lambda: stop.hit)
        written += n
        recorded += chunk + made
        if sys.stderr.isatty():
            print("\rflashbed_record: %d tokens" % written, end="", file=sys.stderr, flush=True)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    return written, recorded


def run(argv):
    a = _parse(argv)
    _check_args(a)
    st = _Setup(a)
    stop = _Interrupt()
    t0 = time.time()
    try:
        w = ft.TraceWriter(a.out, st.rec.meta(st.source(a, argv)))
        try:
            written, recorded = _record_passes(a, st, w, stop)
            if stop.hit and written == 0:
                raise KeyboardInterrupt
            if a.ids_out:
                write_ids(a.ids_out, recorded)
            w.close()
        except BaseException:
            w.abort()
            raise
    finally:
        stop.restore()
        st.rec.remove()
    print("flashbed_record: wrote %s: %d tokens x %d layers (d_ff %d, rule %s) in %.1f s%s"
          % (a.out, written, len(st.layers.down), st.rec.d_ff, st.rule.name, time.time() - t0,
             "; interrupted: the tokens recorded so far" if stop.hit else ""), file=sys.stderr)
    return 130 if stop.hit else 0


def main(argv):
    try:
        return run(argv)
    except (RecordError, ft.TraceError) as e:
        print("flashbed_record: error: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("flashbed_record: interrupted before any token was recorded; nothing written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return ft.quiet_broken_pipe()


def cli():
    """The installed command (pip install ./python)."""
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
