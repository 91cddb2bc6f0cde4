#!/usr/bin/env bash
# Issue 34's cost of checking the reads on the teal path (run --active teal,
# input sparsity read from ffn_t.bin): --verify on against off on SHAPE
# (synthetic f16 weights with checksums, transposed, TEAL thresholds
# calibrated for SPARSITY on a synthetic text), policy lru at BUDGET, the
# two settings alternating (on first in odd rounds, off first in even
# ones), medians of ROUNDS. Prints ms per token on and off, the ratio of
# those medians and the rounds' own ratios (tools/bench_verify_table.py),
# the run's verify_ms_per_token and its share of the token, the rows
# checked per token.
#
#   tools/bench-verify-teal.sh [ROUNDS] [OUT]      e.g. SHAPE=opt-125m tools/bench-verify-teal.sh 7
#
# Makes results/bench-models/SHAPE (tools/bench-lib.sh: bench_model) and
# adds sparsify.json and ffn_t.bin to it when missing, unless MODEL names a
# folder that has them. Environment as tools/bench-verify.sh (SHAPE
# opt-1.3b, THREADS 2, IO_THREADS 32, GEN 8, BUDGET 50%), and SPARSITY
# (0.5). A timing benchmark, not a test: run it on a quiet machine. Run
# again with the same OUT, it runs only what is missing there.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/bench-lib.sh
bench_settings verify-teal "${1:-}" "${2:-}"
SPARSITY=${SPARSITY:-0.5}
MODEL=${MODEL:-$(bench_model "$FB" "$SHAPE")}
mkdir -p "$OUT"
bench_prompt "$OUT/prompt.txt" 200
[ -f "$MODEL/sparsify.json" ] || "$FB" sparsify calibrate --model "$MODEL" --text "$OUT/prompt.txt" \
    --sparsity "$SPARSITY" --kind input --tokens 256 --threads "$THREADS" >"$OUT/calibrate.log" 2>&1
[ -f "$MODEL/ffn_t.bin" ] || "$FB" model transpose "$MODEL" >"$OUT/transpose.log" 2>&1
grep -q '"ffn_t.crc32c"' "$MODEL/model.json" ||
    { echo "$MODEL's ffn_t.bin has no checksums: flashbed model transpose $MODEL --force" >&2; exit 2; }
RUN=(--model "$MODEL" --prompt-file "$OUT/prompt.txt" --prompt-tokens 4 -n "$GEN" --ignore-eos --threads "$THREADS"
     --io-threads "$IO_THREADS" --active teal --policy lru --dram-budget "$BUDGET" --cold 2 --quiet)
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r of $ROUNDS" >&2
    order="on off"
    [ $((r % 2)) -eq 0 ] && order="off on"
    for v in $order; do
        [ -f "$OUT/teal-$v-$r/run.json" ] && continue
        "$FB" run "${RUN[@]}" --verify "$v" --out "$OUT/teal-$v-$r" >"$OUT/teal-$v-$r.log" 2>&1
    done
done

python3 - "$OUT" "$ROUNDS" "$MODEL" <<'EOF'
import json, sys
sys.path.insert(0, "tools")
from bench_verify_table import HEADER_CELLS, on_off_cell, rounds_cell, summarize
out, rounds, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = lambda p: json.load(open(p))
rows = []
for r in range(1, rounds + 1):
    on, off = (load(f"{out}/teal-{v}-{r}/run.json") for v in ("on", "off"))
    assert on["summary"]["verify"]["rows_verified"] > 0 and off["summary"]["verify"]["rows_verified"] == 0
    rows.append({"on_ms": on["summary"]["total_ms"], "off_ms": off["summary"]["total_ms"],
                 "verify_ms": on["summary"]["verify"]["verify_ms_per_token"],
                 "rows_verified_per_token": on["summary"]["verify"]["rows_verified"] / len(on["tokens"])})
m = summarize(rows)
m["verify_pct_of_token"] = 100 * m["verify_ms"] / m["on_ms"]
json.dump({"rounds": rounds, "model": model, "median": m, "each": rows}, open(f"{out}/bench.json", "w"), indent=1)
text = (f"Medians of {rounds} rounds, run --active teal --verify on and off alternating ({model}).\n\n"
        f"| ms/token on | ms/token off | {HEADER_CELLS} | verify ms/token (share of on) | rows checked a token |\n"
        "|---:|---:|---:|---:|---:|---:|\n"
        f"| {m['on_ms']:.2f} | {m['off_ms']:.2f} | {on_off_cell(m)} | {rounds_cell(m)} | "
        f"{m['verify_ms']:.3f} ({m['verify_pct_of_token']:.2f}%) | {m['rows_verified_per_token']:.0f} |\n"
        "\nms/token: run.json's steady state; verify ms/token and rows: over all the run's tokens, cold ones "
        "included.\n")
open(f"{out}/bench.md", "w").write(text)
print(text, end="")
EOF
