#!/usr/bin/env python3
"""The cross-check between python/flashbed_record.py and flashbed's engine:
the sets a PyTorch model's hooks record equal `flashbed run --active oracle
--record` on the same weights and tokens.

  recorder_check.py compare A.trace B.trace [--json OUT]
      per token and layer, whether the active (and predicted, where both
      have them) sets are equal; prints the counts and the first
      differences; exit 0 when every set is equal, 1 otherwise
  recorder_check.py random-opt OUT --like DIR [--layers L --d-model D --d-ff F --seed S]
      (needs torch and transformers) a random-weight OPT built from a config
      by transformers, saved as safetensors in OUT, with DIR's tokenizer.json
      and its vocabulary size so flashbed tokenizes prompts for it as for DIR
  recorder_check.py ids RUN_DIR OUT
      the prompt's token ids of a flashbed run (RUN_DIR/tokens.csv), one per
      line (the recorder's --token-ids), and on stdout how many generated
      tokens the engine forwarded after them (the recorder's --generate)

tools/recorder_check.sh runs the whole check.
"""
import csv
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import flashbed_trace as ft  # noqa: E402


def compare(a_path, b_path):
    """Counts of equal and differing sets, and the first differences."""
    out = {"a": a_path, "b": b_path, "tokens": 0, "layers": 0, "sets_compared": 0, "sets_equal": 0,
           "neurons_a": 0, "neurons_b": 0, "flags_differ": 0, "differences": [], "problems": []}
    with ft.TraceReader(a_path) as a, ft.TraceReader(b_path) as b:
        for k in ("n_layers", "d_model", "d_ff", "ffn_kind"):
            if getattr(a, k) != getattr(b, k):
                out["problems"].append("header %s: %r against %r" % (k, getattr(a, k), getattr(b, k)))
        if out["problems"]:
            return out
        if a.n_tokens != b.n_tokens:
            out["problems"].append("tokens: %d against %d (the shorter is compared)" % (a.n_tokens, b.n_tokens))
        out["layers"] = a.n_layers
        both_pred = a.has_predicted and b.has_predicted
        for x, y in zip(a, b):
            out["tokens"] += 1
            out["flags_differ"] += x.flags != y.flags
            for l in range(a.n_layers):
                pairs = [("active", x.active[l], y.active[l])]
                if both_pred:
                    pairs.append(("predicted", x.predicted[l], y.predicted[l]))
                for what, sa, sb in pairs:
                    out["sets_compared"] += 1
                    out["neurons_a"] += len(sa)
                    out["neurons_b"] += len(sb)
                    if sa == sb:
                        out["sets_equal"] += 1
                    elif len(out["differences"]) < 10:
                        only_a, only_b = sorted(set(sa) - set(sb)), sorted(set(sb) - set(sa))
                        out["differences"].append({"token": x.index, "layer": l, "sets": what,
                                                   "only_a": only_a[:8], "only_b": only_b[:8],
                                                   "n_only_a": len(only_a), "n_only_b": len(only_b)})
    return out


def _compare_main(args):
    if len(args) not in (2, 4) or (len(args) == 4 and args[2] != "--json"):
        return _usage()
    try:
        r = compare(args[0], args[1])
    except ft.TraceError as e:
        print("recorder_check: error: %s" % e, file=sys.stderr)
        return 1
    if len(args) == 4:
        with open(args[3], "w") as f:
            json.dump(r, f, indent=1)
    print("%s against %s: %d tokens x %d layers, %d sets compared, %d equal; %d and %d neurons; "
          "token flags differ on %d" % (r["a"], r["b"], r["tokens"], r["layers"], r["sets_compared"],
                                        r["sets_equal"], r["neurons_a"], r["neurons_b"], r["flags_differ"]))
    for p in r["problems"]:
        print("  problem: %s" % p)
    for d in r["differences"]:
        print("  token %(token)d layer %(layer)d %(sets)s: %(n_only_a)d only in a %(only_a)s, "
              "%(n_only_b)d only in b %(only_b)s" % d)
    ok = not r["problems"] and r["sets_equal"] == r["sets_compared"] and not r["flags_differ"] and r["tokens"]
    return 0 if ok else 1


def _random_opt_main(args):
    import argparse
    p = argparse.ArgumentParser(prog="recorder_check.py random-opt")
    p.add_argument("out")
    p.add_argument("--like", required=True, help="a model make folder: its tokenizer.json and vocabulary")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--d-ff", type=int, default=1024)
    p.add_argument("--seed", type=int, default=7)
    a = p.parse_args(args)
    import torch
    from transformers import OPTConfig, OPTForCausalLM
    like = json.load(open(os.path.join(a.like, "config.json")))
    cfg = OPTConfig(vocab_size=like["vocab_size"], hidden_size=a.d_model, ffn_dim=a.d_ff,
                    num_hidden_layers=a.layers, num_attention_heads=max(1, a.d_model // 64),
                    max_position_embeddings=512, word_embed_proj_dim=a.d_model, do_layer_norm_before=True,
                    activation_function="relu", enable_bias=True, bos_token_id=like.get("bos_token_id", 1),
                    eos_token_id=like.get("eos_token_id", 2), pad_token_id=like.get("pad_token_id", 0))
    torch.manual_seed(a.seed)
    model = OPTForCausalLM(cfg).eval()
    with torch.no_grad():  # OPT's init gives zero biases: half of the neurons fire; shift them as trained OPTs are
        for layer in model.model.decoder.layers:
            layer.fc1.bias.uniform_(-0.5, 0.0)
    model.save_pretrained(a.out)  # safetensors, transformers' default
    shutil.copy(os.path.join(a.like, "tokenizer.json"), os.path.join(a.out, "tokenizer.json"))
    print("recorder_check: wrote %s (random OPT: %d layers, d_model %d, d_ff %d, vocabulary %d, seed %d)"
          % (a.out, a.layers, a.d_model, a.d_ff, cfg.vocab_size, a.seed), file=sys.stderr)
    return 0


def _ids_main(args):
    if len(args) != 2:
        return _usage()
    with open(os.path.join(args[0], "tokens.csv")) as f:
        rows = list(csv.DictReader(f))
    prompt = [r["id"] for r in rows if r["phase"] == "prompt"]
    with open(args[1], "w") as f:
        f.write("".join(i + "\n" for i in prompt))
    print(len(rows) - len(prompt))
    return 0


def _usage():
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


def main(argv):
    cmds = {"compare": _compare_main, "random-opt": _random_opt_main, "ids": _ids_main}
    if not argv or argv[0] not in cmds:
        return _usage()
    return cmds[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
