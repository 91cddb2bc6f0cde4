#!/usr/bin/env bash
# Two builds of flashbed side by side (issue 45's "speed does not move"):
# the measures of tools/bench-engine.sh and tools/bench-dense.sh that a
# refactor can move — dense decode, naive's and all's compute, the engine's
# read throughput, replay's neuron-events per second — each run by BEFORE
# and by AFTER in one round, the order swapped every round (ABBA), medians
# of ROUNDS. Prints a Markdown table: before, after, after / before, and each
# side's min–max over the rounds (a ratio inside both spreads is noise).
#
#   tools/bench-before-after.sh BEFORE AFTER [ROUNDS] [OUT]
#       e.g. tools/bench-before-after.sh /tmp/before/flashbed build/flashbed 5
#
# Models and traces are made by BEFORE (results/bench-models/SHAPE, synthetic
# f16; traces in OUT), so both read the same files. Environment: SHAPE
# (opt-1.3b), THREADS (2), IO_THREADS (32), GEN (8), BUDGET (50%: all's),
# REPLAY_SHAPE (opt-6.7b). A timing benchmark, not a test: a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/bench-lib.sh
[ $# -ge 2 ] || { sed -n '2,17p' "$0" >&2; exit 2; }
BEFORE=$1 AFTER=$2
bench_settings before-after "${3:-}" "${4:-}"
for fb in "$BEFORE" "$AFTER"; do [ -x "$fb" ] || { echo "not an executable: $fb" >&2; exit 2; }; done
MODEL=$(bench_model "$BEFORE" "$SHAPE")
REPLAY_SHAPE=${REPLAY_SHAPE:-opt-6.7b}
mkdir -p "$OUT"
bench_prompt "$OUT/prompt.txt" 40
TRACE=$OUT/$SHAPE.trace REPLAY_TRACE=$OUT/replay-$REPLAY_SHAPE.trace
[ -f "$TRACE" ] || "$BEFORE" trace synth --shape "$SHAPE" --tokens 64 --seed 1 --out "$TRACE" >/dev/null
[ -f "$REPLAY_TRACE" ] ||
    "$BEFORE" trace synth --shape "$REPLAY_SHAPE" --tokens 256 --seed 1 --out "$REPLAY_TRACE" >/dev/null
RUN=(--model "$MODEL" --prompt-file "$OUT/prompt.txt" --prompt-tokens 4 -n "$GEN" --ignore-eos --threads "$THREADS"
     --io-threads "$IO_THREADS" --active "trace:$TRACE" --cold 2 --quiet)

# one side's measures in OUT/SIDE-ROUND*
measure() {
    local fb=$1 at=$OUT/$2-$3
    "$fb" generate --model "$MODEL" --prompt-file "$OUT/prompt.txt" --prompt-tokens 4 -n "$GEN" --temperature 0 \
        --threads "$THREADS" --json "$at-dense.json" >/dev/null 2>"$at-dense.log"
    "$fb" run "${RUN[@]}" --mode naive --out "$at-naive" >"$at-naive.log" 2>&1
    "$fb" run "${RUN[@]}" --mode all --window 5 --dram-budget "$BUDGET" --read-ahead off --out "$at-all" \
        >"$at-all.log" 2>&1
    "$fb" replay --trace "$REPLAY_TRACE" --policy naive,predictor,window:5,lru,belady --layout split,bundled \
        --dram-budget 25% --quiet --out "$at-replay" >"$at-replay.log" 2>&1
}

for r in $(seq 1 "$ROUNDS"); do
    echo "round $r of $ROUNDS" >&2
    if [ $((r % 2)) -eq 1 ]; then measure "$BEFORE" before "$r"; measure "$AFTER" after "$r"
    else measure "$AFTER" after "$r"; measure "$BEFORE" before "$r"; fi
done

python3 - "$OUT" "$ROUNDS" "$BEFORE" "$AFTER" "$SHAPE" "$REPLAY_SHAPE" <<'PY'
import json, statistics as st, sys
out, rounds, before, after, shape, replay_shape = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
load = lambda p: json.load(open(p))
def side(name, r):
    at = f"{out}/{name}-{r}"
    naive, full = load(f"{at}-naive/run.json")["summary"], load(f"{at}-all/run.json")["summary"]
    row = {"dense decode, ms per token": 1e3 / load(f"{at}-dense.json")["summary"]["generation_tokens_per_second"],
           "run naive's compute, ms per token": naive["compute_ms"],
           "run all's compute, ms per token": full["compute_ms"],
           "run naive's read throughput, GB/s": naive["read_throughput_bytes"] / 1e9}
    for x in load(f"{at}-replay/replay.json")["results"]:
        row[f"replay {x['policy']} {x['layout']}, M events/s"] = x["events_per_second"] / 1e6
    return row
sides = {n: [side(n, r) for r in range(1, rounds + 1)] for n in ("before", "after")}
lines = [f"{shape} (replay: {replay_shape}, 256 tokens); medians of {rounds} rounds, the order swapped each round.",
         f"before: {before}; after: {after}.", "",
         "| measure | before | after | after / before | before min–max | after min–max |",
         "|---|---:|---:|---:|---:|---:|"]
for k in sides["before"][0]:
    b, a = ([x[k] for x in sides[n]] for n in ("before", "after"))
    lines.append(f"| {k} | {st.median(b):.3g} | {st.median(a):.3g} | {st.median(a) / st.median(b):.3f} | "
                 f"{min(b):.3g}–{max(b):.3g} | {min(a):.3g}–{max(a):.3g} |")
open(f"{out}/bench.md", "w").write("\n".join(lines) + "\n")
json.dump(sides, open(f"{out}/bench.json", "w"), indent=1)
print("\n".join(lines))
PY
