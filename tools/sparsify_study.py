#!/usr/bin/env python3
"""Quality against bytes for the training-free FFN sparsity sources (issue 33).

For a converted flashbed model: dense, then per target sparsity S the gate
with calibrated per-layer thresholds (gate-cal), input sparsity (teal), and
the gate with one global threshold chosen (by bisection on the first
--match-tokens tokens of the first text) to reach gate-cal's density there.
Perplexity, FFN density and FFN weight bytes per token come from
`flashbed perplexity --json`; the thresholds from `flashbed sparsify
calibrate --force` (this rewrites the model's sparsify.json).

    tools/sparsify_study.py --flashbed build/flashbed --model M --calib CAL.txt \
        --text name=FILE [--text name=FILE ...] [--sparsity 0.25,0.5,0.7,0.9]

Prints a Markdown table on stdout; --json FILE writes the rows too.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr))
    return r


def perplexity(a, text, tokens, *extra):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        run([a.flashbed, "perplexity", "--model", a.model, "--text", text, "--tokens", str(tokens),
             "--threads", str(a.threads), "--json", path, *extra])
        with open(path) as f:
            return json.load(f)
    finally:
        os.unlink(path)


def match_gate(a, text, density):
    """The global gate threshold whose density on text is closest to density."""
    lo, hi = 0.0, 4.0
    best = (2.0, None)
    for _ in range(a.bisect_steps):
        t = (lo + hi) / 2
        d = perplexity(a, text, a.match_tokens, "--active", "gate", "--threshold", "%.9g" % t)["density"]
        if abs(d - density) < best[0]:
            best = (abs(d - density), t)
        if d > density:
            lo = t
        else:
            hi = t
    return best[1]


def row(source, s, name, j, extra=""):
    return {"source": source, "sparsity": s, "text": name, "perplexity": j["perplexity"],
            "density": j.get("density", 1.0), "input_density": j.get("input_density"),
            "bytes_per_token": j["ffn_bytes_per_token"], "dense_bytes_per_token": j["dense_ffn_bytes_per_token"],
            "setting": extra}


def study(a, texts):
    rows = [row("dense", 0, n, perplexity(a, f, a.tokens)) for n, f in texts]
    for s in a.sparsity:
        run([a.flashbed, "sparsify", "calibrate", "--model", a.model, "--text", a.calib, "--sparsity", str(s),
             "--tokens", str(a.calib_tokens), "--threads", str(a.threads), "--force"])
        match = perplexity(a, texts[0][1], a.match_tokens, "--active", "gate-cal")["density"]
        t = match_gate(a, texts[0][1], match)
        for n, f in texts:
            rows.append(row("gate", s, n, perplexity(a, f, a.tokens, "--active", "gate", "--threshold", "%.9g" % t),
                            "threshold %.4g" % t))
            rows.append(row("gate-cal", s, n, perplexity(a, f, a.tokens, "--active", "gate-cal")))
            rows.append(row("teal", s, n, perplexity(a, f, a.tokens, "--active", "teal")))
        print("sparsity %g done" % s, file=sys.stderr)
    return rows


def table(rows):
    out = ["| source | target sparsity | text | perplexity | FFN density | input density | FFN bytes/token "
           "| of dense | setting |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ind = "%.3f" % r["input_density"] if r["input_density"] is not None else "-"
        out.append("| %s | %s | %s | %.4f | %.3f | %s | %.0f | %.1f%% | %s |" % (
            r["source"], r["sparsity"] if r["source"] != "dense" else "-", r["text"], r["perplexity"], r["density"],
            ind, r["bytes_per_token"], 100 * r["bytes_per_token"] / r["dense_bytes_per_token"], r["setting"]))
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--flashbed", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--calib", required=True, help="calibration text")
    p.add_argument("--calib-tokens", type=int, default=8192)
    p.add_argument("--text", action="append", required=True, help="name=FILE, scored (the first matches the gate)")
    p.add_argument("--tokens", type=int, default=20000, help="tokens scored per text")
    p.add_argument("--match-tokens", type=int, default=4000)
    p.add_argument("--bisect-steps", type=int, default=14)
    p.add_argument("--sparsity", default="0.25,0.5,0.7,0.9")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json")
    a = p.parse_args()
    a.sparsity = [float(x) for x in a.sparsity.split(",")]
    texts = [t.split("=", 1) for t in a.text]
    rows = study(a, texts)
    print(table(rows))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
