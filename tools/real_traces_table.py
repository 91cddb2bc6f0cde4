#!/usr/bin/env python3
"""The table of tools/real-traces.sh: for each recorded trace, its replay
beside its two synthetic twins' (densities alone; densities and fitted
reuse), and each twin's error in bytes read per token and modelled ms per
token against the real trace's. Prints Markdown on stdout and writes
OUT/compare.csv.

    python3 tools/real_traces_table.py OUT "COMMAND"
"""
import csv
import json
import os
import platform
import re
import subprocess
import sys
from datetime import datetime, timezone


def results(folder):
    d = json.load(open(os.path.join(folder, "replay.json")))
    return {(r["dram_budget"], r["policy"]): r for r in d["results"]}


def err(real, twin):
    return (twin / real - 1) * 100 if real else float("nan")


def fit_line(path):
    m = re.search(r"--zipf ([\d.]+) --recur ([\d.]+) --recur-decay ([\d.]+); .* now ([\d.]+) from it .*, ([\d.]+) with",
                  open(path).read())
    return m.groups() if m else None


def provenance(command):
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    return (f"- command: `{command}`\n- commit: {commit}, date: {datetime.now(timezone.utc).isoformat(timespec='seconds')}\n"
            f"- machine: {platform.node()} ({os.cpu_count()} CPUs, {cpu})\n"
            "- real: the model's true activations over real text (flashbed run --record, oracle, the probe's "
            "suggested threshold); twin: trace synth --like (the real trace's densities per layer, the "
            "generator's reuse); fitted: --like --fit (its reuse fitted too). Replays: --layout bundled "
            "--row-stride aligned --use actual, priced by the default profile.\n")


def main():
    out, command = sys.argv[1], sys.argv[2]
    rows = []
    print("# Real traces against synthetic twins\n")
    print(provenance(command))
    for line in open(os.path.join(out, "studies.txt")):
        name, text, threshold = line.split()
        base = os.path.join(out, f"replay-{name}-{text}")
        real, twin, fit = results(base), results(base + ".twin"), results(base + ".fit")
        f = fit_line(os.path.join(out, f"fit-{name}-{text}.txt"))
        print(f"## {name} on {text} (threshold {float(threshold):.4g})\n")
        if f:
            print(f"Fitted twin: --zipf {f[0]} --recur {f[1]} --recur-decay {f[2]} (reuse error {f[4]} → {f[3]}).\n")
        print("| budget | policy | hit ratio real | twin | fitted | MB/token real | twin error | fitted error "
              "| ms/token real | twin error | fitted error |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for key, r in real.items():
            t, g = twin[key], fit[key]
            row = [name, text, key[0], key[1], r["hit_ratio"], t["hit_ratio"], g["hit_ratio"],
                   r["bytes_per_token"] / 1e6, err(r["bytes_per_token"], t["bytes_per_token"]),
                   err(r["bytes_per_token"], g["bytes_per_token"]), r["total_ms"],
                   err(r["total_ms"], t["total_ms"]), err(r["total_ms"], g["total_ms"])]
            rows.append(row)
            print("| %s | %s | %.3f | %.3f | %.3f | %.2f | %+.1f%% | %+.1f%% | %.2f | %+.1f%% | %+.1f%% |" % tuple(row[2:]))
        print()
    with open(os.path.join(out, "compare.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "text", "budget", "policy", "hit_ratio_real", "hit_ratio_twin", "hit_ratio_fitted",
                    "mb_per_token_real", "mb_error_twin_pct", "mb_error_fitted_pct", "ms_per_token_real",
                    "ms_error_twin_pct", "ms_error_fitted_pct"])
        w.writerows(rows)
    worst = lambda i: max(abs(r[i]) for r in rows)
    print(f"Largest error in bytes per token: twin {worst(8):.1f}%, fitted twin {worst(9):.1f}% "
          f"(over {len(rows)} rows).")


if __name__ == "__main__":
    main()
