#!/usr/bin/env python3
"""python/flashbed_record.py's hooks on small hand-built torch models,
against the same model's activations computed step by step here.

  record_hooks.py OUTDIR   writes OUTDIR/relu.trace (plain ReLU FFN with a
                           predictor's sets) and OUTDIR/glu.trace (SiLU GLU,
                           threshold rule) for the shell test to hand to
                           flashbed; exits 1 naming the first failed check

The models have opt-tiny's and llama-tiny's shapes, so flashbed's
predict --trace --model opt-tiny accepts their traces.
"""
import os
import sys

import torch

import flashbed_record as fr
import flashbed_trace as ft

failures = 0


def check(what, ok):
    global failures
    print("%s: %s" % ("ok  " if ok else "FAIL", what))
    failures += not ok


class Ffn(torch.nn.Module):
    def __init__(self, d, f, glu):
        super().__init__()
        self.glu = glu
        self.up = torch.nn.Linear(d, f, bias=not glu)
        self.gate = torch.nn.Linear(d, f, bias=False) if glu else None
        self.down = torch.nn.Linear(f, d, bias=not glu)

    def values(self, x):
        """Each neuron's value: what the down projection is given."""
        if self.glu:
            return torch.nn.functional.silu(self.gate(x)) * self.up(x)
        return torch.relu(self.up(x))

    def forward(self, x):
        return self.down(self.values(x))


class Block(torch.nn.Module):
    def __init__(self, d, f, glu):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.mix = torch.nn.Linear(d, d)  # stands for attention: position-wise
        self.ffn = Ffn(d, f, glu)

    def mixed(self, x):
        """x with the running mean of mix(x) over the positions so far added."""
        return x + torch.cumsum(self.mix(x), dim=1) / torch.arange(1, x.shape[1] + 1).view(1, -1, 1)

    def forward(self, x):
        x = self.mixed(x)
        return x + self.ffn(self.norm(x))


class TinyLM(torch.nn.Module):
    """Embedding, blocks whose mixing is causal (a running mean), LM head."""

    def __init__(self, vocab, d, f, n_layers, glu, seed):
        super().__init__()
        torch.manual_seed(seed)
        self.embed = torch.nn.Embedding(vocab, d)
        self.blocks = torch.nn.ModuleList(Block(d, f, glu) for _ in range(n_layers))
        self.head = torch.nn.Linear(d, vocab, bias=False)
        if not glu:  # biases so that a share of the ReLU neurons fire, as in OPT
            for b in self.blocks:
                torch.nn.init.uniform_(b.ffn.up.bias, -0.3, 0.1)

    def forward(self, ids):
        x = self.embed(ids)
        for b in self.blocks:
            x = b(x)
        return self.head(x)

    def reference(self, ids):
        """Per layer the FFN's input and its neuron values at every
        position, and the logits, by the model's own modules step by step."""
        x, inputs, vals = self.embed(ids), [], []
        for b in self.blocks:  # on [1, positions, d] as forward's are: the same products
            x = b.mixed(x)
            inputs.append(b.norm(x))
            vals.append(b.ffn.values(inputs[-1]))
            x = x + b.ffn.down(vals[-1])
        return [h[0] for h in inputs], [v[0] for v in vals], self.head(x)


def sets_of(trace):
    with ft.TraceReader(trace) as r:
        toks = list(r)
        return r, toks


def record(model, path, rule, predictor=None, glu=False, ids=None, generate=0, stop=None):
    layers = fr.find_ffn_layers(model, down_pattern="blocks.*.ffn.down",
                                up_pattern="blocks.*.ffn.up" if predictor else None, glu=glu)
    rec = fr.FfnRecorder(model, layers, rule, predictor, bytes_per_weight=2)
    try:
        with ft.TraceWriter(path, rec.meta({"recorded_by": "record_hooks.py", **rule.describe()})) as w:
            return fr.record_sequence(model, rec, w, ids, generate, stop=stop)
    finally:
        rec.remove()


def main(out):
    torch.set_grad_enabled(False)
    ids = [1, 17, 300, 4, 999, 58, 58, 23, 700, 2, 11, 12, 13, 600, 5, 80, 90, 101, 7, 1000]

    # ---- ReLU, plain FFN, nonzero rule, a predictor, 5 generated tokens ----
    m = TinyLM(1024, 64, 256, 2, glu=False, seed=1)
    wp = [b.ffn.up.weight.clone() for b in m.blocks]
    calls = []

    def predictor(layer, x):
        calls.append((layer, tuple(x.shape)))
        return (x @ wp[layer].T) > 0.3

    path = os.path.join(out, "relu.trace")
    n, made = record(m, path, fr.Rule("nonzero"), predictor, ids=ids, generate=5)
    full = ids + made
    inputs, vals, logits = m.reference(torch.tensor([full]))
    greedy = [int(logits[0, t].argmax()) for t in range(len(ids) - 1, len(full) - 1)]
    check("relu: 25 tokens written", n == 25)
    check("relu: the generated tokens are the greedy ones", made == greedy)
    r, toks = sets_of(path)
    check("relu: header shape 2 layers, d_model 64, d_ff 256, plain FFN, predicted sets",
          (r.n_layers, r.d_model, r.d_ff, r.ffn_kind, r.has_predicted, r.bytes_per_weight)
          == (2, 64, 256, ft.FFN_RELU, True, 2))
    want_flags = [ft.TOKEN_SEQ_START] + [0] * 19 + [ft.TOKEN_GENERATED] * 5
    check("relu: token flags (sequence start, 19 prompt, 5 generated)", [t.flags for t in toks] == want_flags)
    same = all(toks[t].active[l] == (vals[l][t] > 0).nonzero().flatten().tolist()
               for t in range(25) for l in range(2))
    check("relu: every active set equals value > 0 computed step by step (25 tokens x 2 layers)", same)
    ref_pred = [(inputs[l] @ wp[l].T) > 0.3 for l in range(2)]  # the predictor on the FFN input
    same = all(toks[t].predicted[l] == ref_pred[l][t].nonzero().flatten().tolist()
               for t in range(25) for l in range(2))
    check("relu: every predicted set equals the predictor's on the FFN input", same)
    check("relu: the predictor ran per layer per pass (6 passes x 2 layers)", len(calls) == 12)
    density = sum(len(t.active[l]) for t in toks for l in range(2)) / (25 * 2 * 256)
    check("relu: a share of neurons fire (0.05 < density %.3f < 0.6)" % density, 0.05 < density < 0.6)

    # ---- GLU with SiLU, threshold rule ----
    g = TinyLM(512, 64, 172, 2, glu=True, seed=2)
    path = os.path.join(out, "glu.trace")
    gids = [i % 512 for i in ids[:12]]
    n, _ = record(g, path, fr.Rule("threshold", 0.02), glu=True, ids=gids)
    _, vals, _ = g.reference(torch.tensor([gids]))
    r, toks = sets_of(path)
    check("glu: header says GLU, 2 layers, d_ff 172, no predicted sets",
          (r.n_layers, r.d_ff, r.ffn_kind, r.has_predicted) == (2, 172, ft.FFN_GLU, False))
    same = all(toks[t].active[l] == (vals[l][t].abs() > 0.02).nonzero().flatten().tolist()
               for t in range(12) for l in range(2))
    check("glu: every active set equals |silu(gate) * up| > 0.02 (12 tokens x 2 layers)", n == 12 and same)
    check("glu: the threshold is in the header", '"threshold": 0.02' in r.source and '"rule": "threshold"' in r.source)
    nz = sum(len(t.active[l]) for t in toks for l in range(2))
    check("glu: the threshold drops some neurons but not all (%d of %d)" % (nz, 12 * 2 * 172), 0 < nz < 12 * 2 * 172)

    # ---- stopping: the tokens written so far form a whole trace ----
    path = os.path.join(out, "stopped.trace")
    count = [0]

    def stop():
        count[0] += 1
        return count[0] > 2
    n, made = record(m, path, fr.Rule("nonzero"), ids=ids, generate=5, stop=stop)
    r, toks = sets_of(path)
    check("stop after 2 generated: 22 tokens, read back whole", n == 22 and len(made) == 2 and len(toks) == 22)

    # ---- errors name what is wrong ----
    def raises(what, fn, pattern):
        try:
            fn()
        except fr.RecordError as e:
            check("%s (%s)" % (what, e), pattern in str(e))
            return
        check(what + ": no RecordError", False)
    raises("a pattern matching nothing names it",
           lambda: fr.find_ffn_layers(m, down_pattern="blocks.*.mlp.down"), "'blocks.*.mlp.down' matches no module")
    raises("a pattern without '*'", lambda: fr.find_ffn_layers(m, down_pattern="blocks.0.ffn.down"), "exactly one '*'")
    raises("an unknown architecture without a pattern", lambda: fr.find_ffn_layers(m, arch="gpt5"), "--down-module")
    raises("a module that is no linear layer",
           lambda: fr.FfnRecorder(m, fr.find_ffn_layers(m, down_pattern="blocks.*.ffn"), fr.Rule("nonzero")),
           "not a linear layer")
    raises("a predictor without the up projection",
           lambda: fr.FfnRecorder(m, fr.find_ffn_layers(m, down_pattern="blocks.*.ffn.down"), fr.Rule("nonzero"),
                                  predictor=lambda l, x: x),
           "--up-module")
    raises("a predictor returning the wrong shape",
           lambda: record(m, os.path.join(out, "bad.trace"), fr.Rule("nonzero"), lambda l, x: x, ids=ids),
           "returned shape")
    check("the failed recording left no file", not os.path.exists(os.path.join(out, "bad.trace")))
    raises("a negative threshold", lambda: fr.Rule("threshold", -1), "threshold")
    check("auto rule: relu2 is nonzero, gelu_new threshold",
          fr.Rule.for_activation("relu2").name == "nonzero" and fr.Rule.for_activation("gelu_new", 0.1).threshold == 0.1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
