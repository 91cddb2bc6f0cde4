#!/usr/bin/env bash
# Issue 14's figures for one architecture's shape (synthetic weights, f16):
#  1. greedy generation (the dense engine, generate --temperature 0) against
#     run --mode all --active oracle at the budget: the same tokens;
#  2. dense decode tokens/s against the DRAM read bandwidth measured in the
#     same run (generate --bandwidth: a read loop over the weights on the
#     same threads after each step);
#  3. run --mode naive and --mode all, trace-driven (trace synth with the
#     shape's own statistics), at the paper's budget (50%; Phi-2 and
#     Persimmon 65%) and
#     window (App. C: k = 4, window:5 here, which counts the current token;
#     the FATReLU Llama's k = 2, window:3), the two alternating for ROUNDS
#     rounds, medians;
#  4. flashbed predict for each mode's configuration (the policy, layout,
#     budget, reader threads and trace the run used), on a hardware profile
#     calibrated in this run on the model's own ffn.bin, beside the median
#     run (--compare).
#
#   tools/bench-arch.sh SHAPE [OUT]     e.g. tools/bench-arch.sh falcon-7b
#
# Makes results/bench-models/SHAPE when missing (tools/bench-lib.sh). The
# 7-8B shapes are 5.6 GB (phi-2) to 18.8 GB (persimmon-8b) in f16, and the
# dense decode holds the whole model in DRAM. Environment: BUDGET, WINDOW,
# ROUNDS (3), PROMPT_TOKENS (32), GEN (32), BASELINE_TOKENS (4: naive reads
# every weight every token), IO_THREADS (32), THREADS (0: all CPUs),
# CHECK_TOKENS (8), DENSE_TOKENS (16), PARTS ("check flash": check is 1 and
# 2, flash is 3 and 4; a tiny shape's budget cannot hold naive's staging
# area, so tiny shapes take PARTS=check).
set -euo pipefail
cd "$(dirname "$0")/.."
SHAPE=${1:?usage: tools/bench-arch.sh SHAPE [OUT]}
OUT=${2:-results/bench-arch-$SHAPE-$(date -u +%Y%m%dT%H%M%SZ)}
FB=build/flashbed
source tools/bench-lib.sh
ARCH=$(bench_shape_key "$SHAPE" arch)
# Persimmon's embeddings, untied output and attention are 49% of the model:
# at 50% naive has no room to stage a layer, and the paper caps its FFN
# cache at 25% of the FFN (App. C.3), which with the staging area is 65%.
case $ARCH in phi|persimmon) PAPER_BUDGET=65% ;; *) PAPER_BUDGET=50% ;; esac
BUDGET=${BUDGET:-$PAPER_BUDGET}
[ "$ARCH" = llama ] && PAPER_WINDOW=3 || PAPER_WINDOW=5
WINDOW=${WINDOW:-$PAPER_WINDOW}
ROUNDS=${ROUNDS:-3}
PROMPT_TOKENS=${PROMPT_TOKENS:-32}
GEN=${GEN:-32}
BASELINE_TOKENS=${BASELINE_TOKENS:-4}
IO_THREADS=${IO_THREADS:-32}
THREADS=${THREADS:-0}
CHECK_TOKENS=${CHECK_TOKENS:-8}
DENSE_TOKENS=${DENSE_TOKENS:-16}
PARTS=${PARTS:-check flash}
CHECK_PROMPT="the quick brown fox"
MODEL=$(bench_model "$FB" "$SHAPE")
mkdir -p "$OUT"
TRACE=$OUT/$SHAPE.trace
"$FB" trace synth --shape "$SHAPE" --tokens 256 --seed 1 --out "$TRACE"
bench_prompt "$OUT/prompt.txt" 400

# 1 and 2: the dense engine's greedy tokens and decode speed in one run,
# then the flash engine with the oracle on the same prompt.
check_parts() {
    "$FB" generate --model "$MODEL" --prompt "$CHECK_PROMPT" -n "$DENSE_TOKENS" --temperature 0 \
        --threads "$THREADS" --bandwidth --json "$OUT/dense.json" >/dev/null 2>"$OUT/dense.log"
    "$FB" run --model "$MODEL" --mode all --window "$WINDOW" --active oracle --dram-budget "$BUDGET" \
        --io-threads "$IO_THREADS" \
        --threads "$THREADS" --prompt "$CHECK_PROMPT" -n "$CHECK_TOKENS" --ignore-eos --quiet \
        --out "$OUT/oracle-all" >"$OUT/oracle-all.log"
}

# 3: the flash engine, trace-driven, naive and all alternating.
flash_runs() {
    local common=(--model "$MODEL" --active "trace:$TRACE" --dram-budget "$BUDGET" --io-threads "$IO_THREADS"
                  --threads "$THREADS" --prompt-file "$OUT/prompt.txt" --ignore-eos --quiet)
    for r in $(seq 1 "$ROUNDS"); do
        "$FB" run "${common[@]}" --mode naive --prompt-tokens "$BASELINE_TOKENS" -n "$BASELINE_TOKENS" --cold 1 \
            --out "$OUT/naive-$r" >"$OUT/naive-$r.log"
        "$FB" run "${common[@]}" --mode all --window "$WINDOW" --prompt-tokens "$PROMPT_TOKENS" -n "$GEN" \
            --out "$OUT/all-$r" >"$OUT/all-$r.log"
    done
}

median_round() { # mode: the round whose total ms/token is the median
    python3 - "$OUT" "$1" "$ROUNDS" <<'EOF'
import json, sys
out, mode, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = sorted((json.load(open(f"{out}/{mode}-{r}/run.json"))["summary"]["total_ms"], r) for r in range(1, rounds + 1))
print(t[(len(t) - 1) // 2][1])
EOF
}
summary_key() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['summary'][sys.argv[2]])" "$1" "$2"; }

# 4: the cost model for each mode's configuration (policy, layout, budget,
# reader threads, the trace), on a profile of this disk and CPU, beside the
# median run.
flash_predictions() {
    "$FB" calibrate --quick --file "$MODEL/ffn.bin" --size "$(stat -c %s "$MODEL/ffn.bin")" --threads "$THREADS" \
        --name bench-arch --out "$OUT/hw.json" 2>"$OUT/calibrate.log"
    local mode run context volumes
    for mode in naive all; do
        run=$OUT/$mode-$(median_round "$mode")/run.json
        if [ "$mode" = naive ]; then # every byte every token: no trace, and the layout is moot
            context=$((BASELINE_TOKENS * 3 / 2)) volumes=()
        else
            context=$((PROMPT_TOKENS + GEN / 2)) volumes=(--trace "$TRACE" --layout "$(summary_key "$run" layout)")
        fi
        "$FB" predict --model "$SHAPE" --hw "$OUT/hw.json" --dtype f16 --policy "$(summary_key "$run" policy)" \
            --dram-budget "$BUDGET" --io-threads "$IO_THREADS" --predictor-rank none --context "$context" \
            "${volumes[@]}" --compare "$run" --out "$OUT/predict-$mode" >/dev/null
    done
}

case " $PARTS " in *" check "*) check_parts ;; esac
case " $PARTS " in *" flash "*) flash_runs; flash_predictions ;; esac

python3 - "$OUT" "$SHAPE" "$BUDGET" "$ROUNDS" <<'EOF'
import json, os, statistics as st, sys
out, shape, budget, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
summary = {"shape": shape, "weights": "synthetic (flashbed model make, seed 1), f16", "budget": budget}
lines = [f"# {shape}: synthetic weights (f16), DRAM budget {budget}", ""]
if os.path.exists(f"{out}/oracle-all/run.json"):
    dense = json.load(open(f"{out}/dense.json"))
    oracle = json.load(open(f"{out}/oracle-all/run.json"))
    greedy = [t["id"] for t in dense["tokens"]]
    flash = [t["id"] for t in oracle["tokens"] if t["phase"] == "generated"]
    n = min(len(greedy), len(flash))
    same = n > 0 and greedy[:n] == flash[:n]
    ds = dense["summary"]
    summary.update(greedy_equals_oracle_all=same, greedy_tokens_compared=n, greedy_ids=greedy, oracle_all_ids=flash,
                   oracle_all_density=oracle["summary"]["density"], dense=ds)
    lines.append(f"greedy generation vs run --mode all --active oracle, {n} tokens: {'the same' if same else 'DIFFERENT'}"
                 f" (oracle density {100 * oracle['summary']['density']:.1f}%)")
    bw = ds.get("dram_read_bandwidth_bytes_per_second")
    lines.append(f"dense decode (f16): {ds['generation_tokens_per_second']:.3f} tokens/s, "
                 f"{ds['weight_bytes_per_token'] / 1e9:.2f} GB of weights per token"
                 + (f" = {100 * ds['bandwidth_fraction']:.1f}% of the DRAM read bandwidth measured beside it "
                    f"({bw / 1e9:.2f} GB/s)" if bw else ""))
if os.path.exists(f"{out}/predict-all/compare.json"):
    runs = {m: [json.load(open(f"{out}/{m}-{r}/run.json"))["summary"] for r in range(1, rounds + 1)]
            for m in ("naive", "all")}
    keys = ("total_ms", "io_ms", "mem_ms", "compute_ms", "bytes_read")
    med = {m: {k: st.median(s[k] for s in runs[m]) for k in keys} for m in runs}
    # Rounds alternate, so round r's naive and all saw nearly the same machine.
    pairs = [a["total_ms"] / b["total_ms"] for a, b in zip(runs["naive"], runs["all"])]
    pred = {m: json.load(open(f"{out}/predict-{m}/compare.json")) for m in runs}
    summary.update(rounds=rounds, median=med, naive_over_all_median_of_pairs=st.median(pairs),
                   ran_as={m: f"{runs[m][0]['policy']} + {runs[m][0]['layout']}" for m in runs}, compare=pred)
    lines += ["", "trace-driven (trace synth with the shape's statistics):", "",
              f"| mode | ran as | ms/token (median of {rounds}) | I/O | mem | compute | MB read | predicted ms | I/O | mem | compute |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for m in runs:
        p = {c["component"]: c["predicted_ms"] for c in pred[m]["components"]}
        x = med[m]
        lines.append(f"| {m} | {summary['ran_as'][m]} | {x['total_ms']:.1f} | {x['io_ms']:.1f} | {x['mem_ms']:.1f} | "
                     f"{x['compute_ms']:.1f} | {x['bytes_read'] / 1e6:.1f} | {p['total_ms']:.1f} | {p['io_ms']:.1f} | "
                     f"{p['mem_ms']:.1f} | {p['compute_ms']:.1f} |")
    lines += ["", f"naive / all: {st.median(pairs):.2f}x (median of {rounds} alternating pairs)"]
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
