#!/usr/bin/env bash
# The flash-resident engine's ablation (issue 6's benchmark): one synthetic
# model of a real shape, a calibrated synthetic trace driving which neurons
# are read, every mode under one DRAM budget, and flashbed sweep on the same
# FFN file at the engine's read size and thread count, in the same run.
#
#   tools/bench-run.sh SHAPE [OUT]      e.g. tools/bench-run.sh opt-6.7b
#
# Makes results/bench-models/SHAPE (f16, flashbed model make + convert) when
# missing. Environment: PROMPT_TOKENS (128), GEN (64), BASELINE_TOKENS (6:
# naive and hybrid read whole layers every token, so they run fewer tokens;
# their cost per token does not depend on the cache), BUDGET (50%),
# IO_THREADS (32), THREADS (compute threads, 0: all CPUs), MODES.
set -euo pipefail
cd "$(dirname "$0")/.."
SHAPE=${1:?usage: tools/bench-run.sh SHAPE [OUT]}
OUT=${2:-results/bench-run-$SHAPE-$(date -u +%Y%m%dT%H%M%SZ)}
FB=build/flashbed
PROMPT_TOKENS=${PROMPT_TOKENS:-128}
GEN=${GEN:-64}
BASELINE_TOKENS=${BASELINE_TOKENS:-6}
BUDGET=${BUDGET:-50%}
IO_THREADS=${IO_THREADS:-32}
THREADS=${THREADS:-0}
MODES=${MODES:-naive hybrid predictor window all}
source tools/bench-lib.sh
MODEL=$(bench_model "$FB" "$SHAPE")
mkdir -p "$OUT"
TRACE=$OUT/$SHAPE.trace
"$FB" trace synth --shape "$SHAPE" --tokens 256 --seed 1 --out "$TRACE"
bench_prompt "$OUT/prompt.txt" 400

common=(--model "$MODEL" --active "trace:$TRACE" --dram-budget "$BUDGET" --io-threads "$IO_THREADS"
        --threads "$THREADS" --prompt-file "$OUT/prompt.txt" --ignore-eos --quiet)
for mode in $MODES; do
    if [ "$mode" = naive ] || [ "$mode" = hybrid ]; then
        "$FB" run "${common[@]}" --mode "$mode" --prompt-tokens "$BASELINE_TOKENS" -n "$BASELINE_TOKENS" --cold 1 --out "$OUT/$mode"
    else
        "$FB" run "${common[@]}" --mode "$mode" --prompt-tokens "$PROMPT_TOKENS" -n "$GEN" --out "$OUT/$mode"
    fi
done
# The disk at the engine's read size and thread count, beside the runs.
stride=$(python3 -c "import json; print(json.load(open('$MODEL/model.json'))['ffn']['bundle_stride'])")
"$FB" sweep --file "$MODEL/ffn.bin" --size "$(stat -c %s "$MODEL/ffn.bin")" --chunks "$stride" \
    --threads "$IO_THREADS" --runtime 3 --out "$OUT/sweep" --compare-fio

python3 - "$OUT" "$BUDGET" $MODES <<'EOF'
import json, sys
out, budget, modes = sys.argv[1], sys.argv[2], sys.argv[3:]
sweep = json.load(open(f"{out}/sweep/sweep.json"))["points"][0]
rows = []
for m in modes:
    d = json.load(open(f"{out}/{m}/run.json"))
    s = d["summary"]
    rows.append((m, s, d["provenance"]))
base = next((s for m, s, _ in rows if m == "naive"), None)
lines = [f"# flashbed run ablation: {rows[0][2]['model']} ({rows[0][2]['dtype']}), DRAM budget {budget}", "",
         f"sweep at {sweep['chunk_bytes']} B x {sweep['threads']} threads: {sweep['bw_bytes']/1e9:.3f} GB/s"
         + (f" (fio {sweep['fio_bw_bytes']/1e9:.3f} GB/s)" if 'fio_bw_bytes' in sweep else ""), "",
         "| mode | tokens | I/O ms | mem ms | compute ms | total ms | MB read | reads | read GB/s | vs sweep | speed-up vs naive | peak RSS GB | budget GB |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for m, s, p in rows:
    thr = s["read_throughput_bytes"]
    lines.append(f"| {m} | {s['tokens']} | {s['io_ms']:.1f} | {s['mem_ms']:.1f} | {s['compute_ms']:.1f} | {s['total_ms']:.1f} | "
                 f"{s['bytes_read']/1e6:.1f} | {s['reads']:.0f} | {thr/1e9:.3f} | {thr/sweep['bw_bytes']:.2f} | "
                 f"{(base['total_ms']/s['total_ms']) if base else float('nan'):.2f} | {s['peak_rss_bytes']/1e9:.2f} | {p['dram_budget_bytes']/1e9:.2f} |")
text = "\n".join(lines) + "\n"
open(f"{out}/ablation.md", "w").write(text)
print(text)
EOF
