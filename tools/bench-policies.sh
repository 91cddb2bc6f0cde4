#!/usr/bin/env bash
# Every caching policy run for real beside the offline replay (issue 12's
# closing figures): one synthetic model of a real shape, a calibrated
# synthetic trace choosing the neurons, one DRAM budget, each policy run by
# the engine and then replayed at the run's ffn_cache_bytes, so the run's
# bytes per token sit beside what replay counts for the same tokens.
#
#   tools/bench-policies.sh SHAPE [OUT]     e.g. tools/bench-policies.sh opt-1.3b
#
# Runs alternate between the policies, ROUNDS times (the machine's disk and
# memory bandwidth drift: each policy's ms/token is the median of its
# rounds, each round measured beside the others). Makes
# results/bench-models/SHAPE (f16) when missing. Environment: POLICIES
# ("window:auto lru lfu hot belady"), LAYOUT (bundled), BUDGET (50%),
# PROMPT_TOKENS (16), GEN (32), ROUNDS (3), IO_THREADS (32), THREADS (0: all CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."
SHAPE=${1:?usage: tools/bench-policies.sh SHAPE [OUT]}
OUT=${2:-results/bench-policies-$SHAPE-$(date -u +%Y%m%dT%H%M%SZ)}
FB=${FB:-build/flashbed} # FB: another binary (a copy, so a rebuild cannot change it mid-run)
POLICIES=${POLICIES:-window:auto lru lfu hot belady}
LAYOUT=${LAYOUT:-bundled}
BUDGET=${BUDGET:-50%}
PROMPT_TOKENS=${PROMPT_TOKENS:-16}
GEN=${GEN:-32}
ROUNDS=${ROUNDS:-3}
IO_THREADS=${IO_THREADS:-32}
THREADS=${THREADS:-0}
source tools/bench-lib.sh
MODEL=$(bench_model "$FB" "$SHAPE")
mkdir -p "$OUT"
TRACE=$OUT/$SHAPE.trace
"$FB" trace synth --shape "$SHAPE" --tokens 256 --seed 3 --out "$TRACE"
bench_prompt "$OUT/prompt.txt" 100

name() { echo "${1//:/-}"; }
for round in $(seq 1 "$ROUNDS"); do
    for policy in $POLICIES; do
        "$FB" run --model "$MODEL" --policy "$policy" --layout "$LAYOUT" --active "trace:$TRACE" \
            --dram-budget "$BUDGET" --io-threads "$IO_THREADS" --threads "$THREADS" \
            --prompt-file "$OUT/prompt.txt" --prompt-tokens "$PROMPT_TOKENS" -n "$GEN" --ignore-eos --quiet \
            --out "$OUT/$(name "$policy")-r$round" 2>/dev/null
    done
done
# Replay each policy (as the run resolved it) at the run's cache bytes.
for policy in $POLICIES; do
    r1="$OUT/$(name "$policy")-r1/run.json"
    resolved=$(python3 -c "import json; print(json.load(open('$r1'))['summary']['policy'])")
    bytes=$(python3 -c "import json; print(int(json.load(open('$r1'))['summary']['ffn_cache_bytes']))")
    "$FB" replay --trace "$TRACE" --policy "$resolved" --layout "$LAYOUT" --dram-budget "${bytes}B" \
        --out "$OUT/$(name "$policy")-replay" --quiet
done

python3 - "$OUT" "$ROUNDS" "$BUDGET" $POLICIES <<'EOF'
import json, statistics, sys
out, rounds, budget, policies = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
name = lambda p: p.replace(":", "-")
rows, table = [], []
for p in policies:
    runs = [json.load(open(f"{out}/{name(p)}-r{r}/run.json")) for r in range(1, rounds + 1)]
    s = runs[0]["summary"]
    cold = int(s["cold_tokens_excluded"])
    toks = runs[0]["tokens"]
    rep = json.load(open(f"{out}/{name(p)}-replay/replay.json"))["results"][0]["per_token"]["bytes"]
    steady = range(cold, len(toks))
    run_bytes = statistics.mean(toks[i]["bytes_read"] for i in steady)
    rep_bytes = statistics.mean(rep[i] for i in steady)
    exact = all(int(toks[i]["bytes_read"]) == int(rep[i]) for i in range(len(toks)))
    ms = [r["summary"]["total_ms"] for r in runs]
    io = [r["summary"]["io_ms"] for r in runs]
    row = {"policy": p, "ran_as": s["policy"], "ffn_cache_bytes": s["ffn_cache_bytes"],
           "capacity_rows_per_layer": s["capacity_rows_per_layer"], "ms_per_token_median": statistics.median(ms),
           "ms_per_token_rounds": ms, "io_ms_median": statistics.median(io),
           "run_bytes_per_token": run_bytes, "replay_bytes_per_token": rep_bytes, "equal_token_by_token": exact,
           "tokens": len(toks), "steady_tokens": len(steady)}
    rows.append(row)
    table.append(f"| {p} | {s['policy']} | {s['capacity_rows_per_layer']:.0f} | {row['ms_per_token_median']:.0f} "
                 f"({', '.join(f'{x:.0f}' for x in ms)}) | {row['io_ms_median']:.0f} | {run_bytes / 1e6:.2f} | "
                 f"{rep_bytes / 1e6:.2f} | {'yes' if exact else 'NO'} |")
prov = runs[0]["provenance"]
md = [f"# Policies run beside replay: {prov['model']} ({prov['dtype']}), DRAM budget {budget}, layout bundled\n",
      f"- neurons: {prov['active']}",
      f"- {rows[0]['tokens']} tokens per run ({rows[0]['steady_tokens']} steady after the cold ones); {rounds} rounds, "
      "policies alternating; ms/token is the median of the rounds (each round in brackets)",
      f"- page cache bypassed: {prov['page_cache_bypassed']}; commit {prov['git_commit']}\n",
      "| policy | ran as | cache rows / layer | ms/token (rounds) | I/O ms | run MB/token | replay MB/token | equal per token |",
      "|---|---|---:|---:|---:|---:|---:|---|"] + table
open(f"{out}/policies.md", "w").write("\n".join(md) + "\n")
json.dump({"budget": budget, "rounds": rounds, "rows": rows}, open(f"{out}/policies.json", "w"), indent=1)
print("\n".join(md))
EOF
