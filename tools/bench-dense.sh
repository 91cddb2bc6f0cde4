#!/usr/bin/env bash
# The dense engine's benchmark (issue 5): decode on a synthetic Llama of about
# 1.1B parameters (llama-1.1b: d_model 2048, d_ff 5632, 22 layers, 32 heads,
# 4 KV heads, vocab 32000), f32 and f16 runs alternating so both see the same
# machine, each reporting its weight bandwidth against a read loop over the
# same weights on the same threads (generate --bandwidth).
#
#   tools/bench-dense.sh [RUNS] [OUT]      e.g. tools/bench-dense.sh 8
#
# Makes results/bench-models/llama-1.1b-{llama2c,f32,f16} when missing (the
# llama2.c checkpoint, 4.4 GB, is what other engines can run). Environment:
# THREADS (2), GEN (64 tokens per run), SHAPE (llama-1.1b).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-8}
OUT=${2:-results/bench-dense-$(date -u +%Y%m%dT%H%M%SZ)}
FB=build/flashbed
THREADS=${THREADS:-2}
GEN=${GEN:-64}
SHAPE=${SHAPE:-llama-1.1b}
BASE=results/bench-models/$SHAPE
[ -x "$FB" ] || { echo "build flashbed first (tools/run-default.sh or cmake)" >&2; exit 2; }
mkdir -p "$OUT" results/bench-models
if [ ! -f "$BASE-llama2c/model.bin" ]; then
    "$FB" model make --arch llama --shape "$SHAPE" --format llama2c --dtype f32 --seed 1 --out "$BASE-llama2c"
fi
for dt in f32 f16; do
    [ -f "$BASE-$dt/model.json" ] ||
        "$FB" convert "$BASE-llama2c/model.bin" --tokenizer "$BASE-llama2c/tokenizer.bin" --dtype "$dt" --out "$BASE-$dt"
done
for r in $(seq 1 "$RUNS"); do
    for dt in f32 f16; do
        "$FB" generate --model "$BASE-$dt" --prompt "Once upon a time" -n "$GEN" --temperature 0 \
            --threads "$THREADS" --bandwidth --json "$OUT/$dt-$r.json" >/dev/null 2>"$OUT/$dt-$r.log"
        grep -E "^weight bandwidth" "$OUT/$dt-$r.log" | sed "s/^/$dt run $r: /" >&2
    done
done

python3 - "$OUT" "$RUNS" <<'EOF'
import json, statistics as st, sys
out, runs = sys.argv[1], int(sys.argv[2])
rows, summary = {}, {}
for dt in ("f32", "f16"):
    s = [json.load(open(f"{out}/{dt}-{r}.json"))["summary"] for r in range(1, runs + 1)]
    rows[dt] = s
    summary[dt] = {
        "tokens_per_second_median": st.median(x["generation_tokens_per_second"] for x in s),
        "bandwidth_fraction_median": st.median(x["bandwidth_fraction"] for x in s),
        "bandwidth_fraction_min": min(x["bandwidth_fraction"] for x in s),
        "bandwidth_fraction_per_step_median": st.median(x["bandwidth_fraction_median_per_step"] for x in s),
        "dram_read_bandwidth_median": st.median(x["dram_read_bandwidth_bytes_per_second"] for x in s),
        "weight_bytes_per_token": s[0]["weight_bytes_per_token"],
    }
# Runs alternate, so run r of f16 and of f32 saw nearly the same machine;
# the pairs' ratios are steadier than a ratio of two medians.
pairs = [b["generation_tokens_per_second"] / a["generation_tokens_per_second"] for a, b in zip(rows["f32"], rows["f16"])]
summary["f16_over_f32_median_of_pairs"] = st.median(pairs)
summary["f16_over_f32_of_medians"] = summary["f16"]["tokens_per_second_median"] / summary["f32"]["tokens_per_second_median"]
summary["runs"] = runs
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
with open(f"{out}/summary.md", "w") as f:
    f.write("| dtype | MB/token | tokens/s (median) | DRAM read GB/s (median) | of DRAM bw (median) | (worst run) | per-step ratio (median) |\n")
    f.write("|---|---|---|---|---|---|---|\n")
    for dt in ("f32", "f16"):
        x = summary[dt]
        f.write(f"| {dt} | {x['weight_bytes_per_token'] / 1e6:.0f} | {x['tokens_per_second_median']:.2f} | "
                f"{x['dram_read_bandwidth_median'] / 1e9:.1f} | {100 * x['bandwidth_fraction_median']:.1f}% | "
                f"{100 * x['bandwidth_fraction_min']:.1f}% | {100 * x['bandwidth_fraction_per_step_median']:.1f}% |\n")
    f.write(f"\nf16 / f32 tokens/s: {summary['f16_over_f32_median_of_pairs']:.2f}x (median of {runs} alternating pairs), "
            f"{summary['f16_over_f32_of_medians']:.2f}x (ratio of medians)\n")
print(open(f"{out}/summary.md").read(), end="")
EOF
