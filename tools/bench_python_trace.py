#!/usr/bin/env python3
"""Python's trace reading and writing against the C library's, on one
trace, side by side (tools/bench-python-trace.sh runs it). Each round runs
every case once, in turn, as its own process (start-up included, as a user
meets it); the table gives each case's median and its speed as a share of
the C case it compares with:

  read   C: fb_trace_copy --read T (the reader alone; flashbed trace info T,
         which adds its statistics, beside it)
         Python: flashbed_trace.py info T, and every token read in the
         list and numpy forms
  copy   C: fb_trace_copy T OUT (read + write)   Python: flashbed_trace.py copy T OUT

Python cases run with libflashbed_trace (FLASHBED_TRACE_LIB), on the pure-Python
path (FLASHBED_TRACE_LIB=none), and with --before, on an older revision's
module (its own pure-Python code). Slow cases are timed on a shorter
trace (--slow-tokens) and scaled per token-layer. Times are CPU seconds
(user + system) of each process, start-up included: wall time on a shared
machine measures the other work too."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

READ_FORM = """import sys, time
sys.path.insert(0, sys.argv[1])
import flashbed_trace as f
for _ in f.read_tokens(sys.argv[2], sets=sys.argv[3]):
    pass
"""


def timed(cmd, env):
    """The CPU seconds (user + system) the command took: on a machine
    shared with other work, wall time measures the others too."""
    before = os.times()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def cases(a, work, big, small, tokens):
    """(name, kind, trace, command, env, token-layers) of every case."""
    env = dict(os.environ)
    lib = dict(env, FLASHBED_TRACE_LIB=a.lib)
    pure = dict(env, FLASHBED_TRACE_LIB="none")
    py = a.python
    mod = os.path.join(a.src, "python")
    tl_big, tl_small = tokens[big], tokens[small]
    out = os.path.join(work, "out.trace")
    c = [
        ("C read", "read", big, [a.copy, "--read", big], env, tl_big),
        ("C trace info", "read", big, [a.flashbed, "trace", "info", big, "--out", os.path.join(work, "info")], env, tl_big),
        ("Py info (lib)", "read", big, [py, os.path.join(mod, "flashbed_trace.py"), "info", big], lib, tl_big),
        ("Py read list (lib)", "read", big, [py, "-c", READ_FORM, mod, big, "list"], lib, tl_big),
        ("Py read numpy (lib)", "read", big, [py, "-c", READ_FORM, mod, big, "numpy"], lib, tl_big),
        ("Py read list (pure)", "read", small, [py, "-c", READ_FORM, mod, small, "list"], pure, tl_small),
        ("C copy", "copy", big, [a.copy, big, out], env, tl_big),
        ("Py copy (lib)", "copy", big, [py, os.path.join(mod, "flashbed_trace.py"), "copy", big, out], lib, tl_big),
        ("Py copy (pure)", "copy", small, [py, os.path.join(mod, "flashbed_trace.py"), "copy", small, out], pure, tl_small),
    ]
    if a.before_dir:
        c += [("Py read list (before)", "read", small, [py, "-c", READ_FORM, a.before_dir, small, "list"], pure, tl_small),
              ("Py copy (before)", "copy", small, [py, os.path.join(a.before_dir, "flashbed_trace.py"), "copy", small, out],
               pure, tl_small)]
    return c


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--flashbed", required=True)
    p.add_argument("--copy", required=True, help="fb_trace_copy (build/tests/fb_trace_copy)")
    p.add_argument("--lib", required=True, help="libflashbed_trace.so")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--src", default=".")
    p.add_argument("--shape", default="llama-2-7b")
    p.add_argument("--tokens", type=int, default=200)
    p.add_argument("--slow-tokens", type=int, default=10)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--before-dir", help="a folder holding an older flashbed_trace.py")
    p.add_argument("--json", help="write the medians here too")
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="bench-python-trace.")
    try:
        big, small = os.path.join(work, "big.trace"), os.path.join(work, "small.trace")
        tokens = {}
        for path, n in ((big, a.tokens), (small, a.slow_tokens)):
            subprocess.run([a.flashbed, "trace", "synth", "--shape", a.shape, "--tokens", str(n), "--out", path],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            layers = json.load(open(os.path.join(a.src, "configs/models/%s.json" % a.shape)))["n_layers"]
            tokens[path] = n * layers
        cs = cases(a, work, big, small, tokens)
        times = {c[0]: [] for c in cs}
        for _ in range(a.rounds):
            for name, _kind, _t, cmd, env, _tl in cs:
                shutil.rmtree(os.path.join(work, "info"), ignore_errors=True)
                times[name].append(timed(cmd, env))
        rate = {c[0]: c[5] / statistics.median(times[c[0]]) for c in cs}
        base = {"read": rate["C read"], "copy": rate["C copy"]}
        print("%s, %d tokens (%d token-layers; slow cases %d tokens), %d rounds, medians; python %s"
              % (a.shape, a.tokens, tokens[big], a.slow_tokens, a.rounds, a.python))
        print("| case | median CPU s | token-layers per CPU s | share of C |")
        print("|---|---:|---:|---:|")
        for name, kind, _t, _c, _e, _tl in cs:
            print("| %s | %.3f | %.0f | %.1f%% |" % (name, statistics.median(times[name]), rate[name],
                                                   100 * rate[name] / base[kind]))
        # writing alone: a copy's time less its reading's (the same start-up in both)
        med = {n: statistics.median(v) for n, v in times.items()}
        w_c = tokens[big] / max(med["C copy"] - med["C read"], 1e-9)
        w_py = tokens[big] / max(med["Py copy (lib)"] - med["Py read numpy (lib)"], 1e-9)
        print("| C write (C copy less C read) | %.3f | %.0f | 100.0%% |" % (med["C copy"] - med["C read"], w_c))
        print("| Py write (lib) (Py copy less Py read numpy) | %.3f | %.0f | %.1f%% |"
              % (med["Py copy (lib)"] - med["Py read numpy (lib)"], w_py, 100 * w_py / w_c))
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"shape": a.shape, "tokens": a.tokens, "rounds": a.rounds, "times": times,
                           "token_layers_per_s": rate}, f, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
