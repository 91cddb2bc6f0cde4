#!/usr/bin/env bash
# Issue 34's cost of checking the reads: run --verify on against off on
# SHAPE (opt-1.3b, synthetic f16 weights with checksums), --mode all
# (window 5, half the model as the budget, a synthetic trace choosing the
# neurons) and --mode naive, the two settings alternating (on first in odd
# rounds, off first in even ones), medians of ROUNDS (>= 5). For each mode:
# median ms per token on and off, their ratio, the run's verify_ms_per_token,
# and the cost model's verification term beside it (predict --compare on
# the round's verify-on run: the checked bundles' bytes / the CRC-32C rate,
# on a profile calibrate writes here from a null-engine sweep: its CRC rate
# measured, its flash points not the disk's). The goal: under 3% of all's
# token time.
#
#   tools/bench-verify.sh [ROUNDS] [OUT]       e.g. tools/bench-verify.sh 5
#
# Makes results/bench-models/SHAPE when missing or without checksums
# (tools/bench-lib.sh: bench_model), unless MODEL names a model folder.
# Environment: MODEL, SHAPE (opt-1.3b), THREADS (2: compute), IO_THREADS
# (32), GEN (8 tokens a run), BUDGET (50%: all's). A timing benchmark, not
# a test: run it on a quiet machine. Run again with the same OUT, it runs
# only what is missing there and summarises.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/bench-lib.sh
bench_settings verify "${1:-}" "${2:-}"
MODEL=${MODEL:-$(bench_model "$FB" "$SHAPE")}
grep -q '"checksums"' "$MODEL/model.json" ||
    { echo "$MODEL has no checksums (written before flashbed recorded them): --verify would check nothing" >&2; exit 2; }
mkdir -p "$OUT"
bench_prompt "$OUT/prompt.txt" 40
TRACE=$OUT/$SHAPE.trace
[ -f "$TRACE" ] || "$FB" trace synth --shape "$SHAPE" --tokens 64 --seed 1 --out "$TRACE" >/dev/null
# a profile for the prediction: calibrate's CRC-32C rate (and DRAM, compute), flash from a null sweep
if [ ! -f "$OUT/hw.json" ]; then
    "$FB" sweep --file "$OUT/null.bin" --size 4m --chunks 4k,16k,64k --threads 1,2 --runtime 0.05 --ramp 0 \
        --engine null --out "$OUT/null-sweep" >/dev/null 2>&1
    "$FB" calibrate --sweep "$OUT/null-sweep/sweep.json" --quick --name bench-verify --out "$OUT/hw.json" \
        >"$OUT/calibrate.log" 2>&1
fi
RUN=(--model "$MODEL" --prompt-file "$OUT/prompt.txt" --prompt-tokens 4 -n "$GEN" --ignore-eos --threads "$THREADS"
     --io-threads "$IO_THREADS" --active "trace:$TRACE" --cold 2 --quiet)
declare -A ARGS=([naive]="--mode naive" [all]="--mode all --window 5 --dram-budget $BUDGET")
declare -A PRICE=([naive]="--policy naive" [all]="--policy window:5 --trace $TRACE") # naive needs no trace

for r in $(seq 1 "$ROUNDS"); do
    echo "round $r of $ROUNDS" >&2
    order="on off"
    [ $((r % 2)) -eq 0 ] && order="off on"
    for mode in all naive; do
        for v in $order; do
            [ -f "$OUT/$mode-$v-$r/run.json" ] && continue # a rerun with the same OUT summarises what is there
            # shellcheck disable=SC2086
            "$FB" run "${RUN[@]}" ${ARGS[$mode]} --verify "$v" --out "$OUT/$mode-$v-$r" >"$OUT/$mode-$v-$r.log" 2>&1
        done
        [ -f "$OUT/predict-$mode-$r/predict.json" ] && continue
        # shellcheck disable=SC2086
        "$FB" predict --model "$SHAPE" --hw "$OUT/hw.json" --dtype f16 ${PRICE[$mode]} --layout bundled --context $((4 + GEN)) --io-threads "$IO_THREADS" --predictor-rank none \
            --compare "$OUT/$mode-on-$r/run.json" --out "$OUT/predict-$mode-$r" >/dev/null 2>"$OUT/predict-$mode-$r.log"
    done
done

python3 - "$OUT" "$ROUNDS" "$MODEL" <<'EOF'
import json, sys
sys.path.insert(0, "tools")
from bench_verify_table import HEADER_CELLS, on_off_cell, rounds_cell, summarize
out, rounds, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = lambda p: json.load(open(p))
bundle = load(f"{model}/model.json")["ffn"]["bundle_bytes"]
crc_bw = load(f"{out}/hw.json")["dram"]["crc32c_bw_bytes"]
summary, table = {"rounds": rounds, "crc32c_bw_bytes": crc_bw, "bundle_bytes": bundle}, []
for mode in ("all", "naive"):
    rows = []
    for r in range(1, rounds + 1):
        on, off = (load(f"{out}/{mode}-{v}-{r}/run.json") for v in ("on", "off"))
        pred = load(f"{out}/predict-{mode}-{r}/predict.json")["prediction"]["verify"]
        assert on["summary"]["verify"]["rows_verified"] > 0 and off["summary"]["verify"]["rows_verified"] == 0
        rows.append({"on_ms": on["summary"]["total_ms"], "off_ms": off["summary"]["total_ms"],
                     "verify_ms": on["summary"]["verify"]["verify_ms_per_token"],
                     "mem_on_minus_off_ms": on["summary"]["mem_ms"] - off["summary"]["mem_ms"],
                     "rows_verified": on["summary"]["verify"]["rows_verified"],
                     "run_tokens": len(on["tokens"]),
                     "predicted_verify_ms": pred["ms"], "predicted_mb": pred["bytes_per_token"] / 1e6})
    m = summarize(rows)
    m["measured_mb"] = m["rows_verified"] / m["run_tokens"] * bundle / 1e6
    m["verify_pct_of_token"] = 100 * m["verify_ms"] / m["on_ms"]
    summary[mode] = {"median": m, "rounds": rows}
    table.append(f"| {mode} | {m['on_ms']:.1f} | {m['off_ms']:.1f} | {on_off_cell(m)} | {rounds_cell(m)} | "
                 f"{m['verify_ms']:.2f} ({m['verify_pct_of_token']:.1f}%) | {m['mem_on_minus_off_ms']:.2f} | "
                 f"{m['predicted_verify_ms']:.2f} | "
                 f"{m['measured_mb']:.1f} / {m['predicted_mb']:.1f} |")
json.dump(summary, open(f"{out}/bench.json", "w"), indent=1)
with open(f"{out}/bench.md", "w") as f:
    f.write(f"Medians of {rounds} rounds, --verify on and off alternating ({model}); CRC-32C at "
            f"{crc_bw / 1e9:.2f} GB/s as calibrate measured it here.\n\n"
            f"| mode | ms/token on | ms/token off | {HEADER_CELLS} | verify ms/token (share of on) | mem ms on - off | "
            "cost model's verify ms | MB checked a token, run / model |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    f.write("\n".join(table) + "\n")
    f.write("\nms/token: run.json's steady state (cold tokens excluded); verify ms/token and MB checked: over all the "
            "run's tokens, cold ones included (run.json's verify.verify_ms_per_token, rows_verified); mem ms on - off: "
            "the steady state's difference; the cost model's: the steady state's replayed volumes (all) or every "
            "FFN row (naive), at the CRC rate above.\n")
    f.write(f"\nGoal: verification under 3% of all's token time: "
            f"{'met' if summary['all']['median']['verify_pct_of_token'] < 3 else 'not met'} "
            f"({summary['all']['median']['verify_pct_of_token']:.2f}% by verify_ms; on / off of the medians "
            f"{100 * (summary['all']['median']['ratio'] - 1):+.1f}%).\n")
print(open(f"{out}/bench.md").read(), end="")
EOF
