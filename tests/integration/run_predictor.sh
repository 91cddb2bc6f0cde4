#!/usr/bin/env bash
# Activation predictors in the CLI (issue 13): run --active predictor with
# predictors fb_test_predictor writes into the model folder (exact: built
# from the up rows, recall 1 and nothing extra; every: threshold 0; weak:
# rank 1 random), --check, --record, the budget, perplexity and generate
# with the predictor's sparsity, predict --compare; the gate on a GLU
# model; and the refusals.
source "$(dirname "$0")/lib.sh"
MAKE_PRED=${FLASHBED_TEST_PREDICTOR:?the fb_test_predictor helper}

check "opt-tiny model" "$FLASHBED" model make --arch opt --shape opt-tiny --dtype f32 --seed 5 --relu-density 0.15 --out "$WORK/opt-hf"
check "convert it" "$FLASHBED" convert "$WORK/opt-hf" --out "$WORK/opt"
M="$WORK/opt"
P="the cat sat on the mat and the dog"
RUN=(run --model "$M" --prompt "$P" -n 16 --ignore-eos --threads 1 --io-threads 2 --quiet)
ids() { json_get "$1/run.json" "[t['id'] for t in d['tokens']]"; }
sum_() { json_get "$1/run.json" "d['summary']['$2']"; }

# Refusals before a predictor exists.
expect_error "no predictor: says how to make one" "flashbed predictor train --model" "${RUN[@]}" --active predictor --out "$WORK/bad1"
expect_error "the gate on a ReLU model" "GLU FFNs only" "${RUN[@]}" --active gate --out "$WORK/bad2"
printf 'the cat sat on the mat and the dog ran to the park. %.0s' $(seq 12) > "$WORK/text.txt"
expect_error "perplexity: no predictor" "has no activation predictor" perplexity --model "$M" --text "$WORK/text.txt" --active predictor
check "no output for refused runs" test ! -e "$WORK/bad1" -a ! -e "$WORK/bad2"

# The exact predictor: dense's tokens, the oracle's sets, nothing missed.
check "exact predictor" "$MAKE_PRED" "$M" exact
check "dense" "$FLASHBED" "${RUN[@]}" --mode dense --out "$WORK/dense"
check "oracle" "$FLASHBED" "${RUN[@]}" --mode predictor --out "$WORK/oracle"
check "predictor --check" "$FLASHBED" "${RUN[@]}" --mode predictor --active predictor --check --out "$WORK/exact"
check "exact: dense's tokens" test "$(ids "$WORK/exact")" = "$(ids "$WORK/dense")"
check "exact: the oracle's sets" test "$(json_get "$WORK/exact/run.json" "[t['needed'] for t in d['tokens']]")" = \
    "$(json_get "$WORK/oracle/run.json" "[t['needed'] for t in d['tokens']]")"
check "exact: missed 0 on every token" test "$(json_get "$WORK/exact/run.json" "all(t['missed'] == 0 and t['extra'] == 0 and t['active'] == t['needed'] > 0 for t in d['tokens'])")" = True
check "exact: recall 1" test "$(sum_ "$WORK/exact" recall)" = 1
check "predictor_ms inside compute" test "$(json_get "$WORK/exact/run.json" "all(t['predictor_ms'] > 0 and t['check_ms'] > 0 and abs(t['attention_ms'] - (t['compute_ms'] - t['ffn_ms'] - t['predictor_ms'] - t['check_ms'])) < 1e-9 for t in d['tokens'])")" = True
check "the predictor's bytes in engine_dram_bytes" test "$(json_get "$WORK/exact/run.json" "d['summary']['engine_dram_bytes'] - d['summary']['predictor_dram_bytes']")" = \
    "$(sum_ "$WORK/oracle" engine_dram_bytes)"
check "the check's up rows apart" test "$(sum_ "$WORK/exact" oracle_dram_bytes)" = "$(sum_ "$WORK/oracle" oracle_dram_bytes)"
check "run.md names the predictor" grep -q "^- predictor: .* MB held in DRAM" "$WORK/exact/run.md"
check "window + bundles (mode all): dense's tokens" "$FLASHBED" "${RUN[@]}" --mode all --active predictor --check --out "$WORK/exact-all"
check "mode all: same tokens, nothing missed" test "$(ids "$WORK/exact-all")/$(sum_ "$WORK/exact-all" missed_all_tokens)" = "$(ids "$WORK/dense")/0"
check "without --check: no up rows" "$FLASHBED" "${RUN[@]}" --mode predictor --active predictor --out "$WORK/nocheck"
check "without --check: nothing counted, no oracle rows" test "$(json_get "$WORK/nocheck/run.json" "(d['summary']['check'], d['summary']['oracle_dram_bytes'], d['summary']['active'])")" = "(False, 0, 0)"
check "threshold 0: every neuron" "$FLASHBED" "${RUN[@]}" --mode predictor --active predictor --threshold 0 --out "$WORK/every"
check "threshold 0: density 1" test "$(json_get "$WORK/every/run.json" "d['summary']['density'] == 1")" = True
check "threshold 0: dense's tokens" test "$(ids "$WORK/every")" = "$(ids "$WORK/dense")"

# --record: the predicted sets beside the true ones; the run replays it.
check "record with --check" "$FLASHBED" "${RUN[@]}" --mode predictor --active predictor --check --record "$WORK/rec.trace" --out "$WORK/rec"
check "the trace has predicted sets" "$FLASHBED" trace info "$WORK/rec.trace" --out "$WORK/rec-info"
check "predicted sets flagged" grep -q "predicted sets: yes" <("$FLASHBED" trace info "$WORK/rec.trace")
check "replayed through the trace's predicted sets" "$FLASHBED" "${RUN[@]}" --mode predictor --active "trace:$WORK/rec.trace" --use predicted --out "$WORK/replayed"
check "the same reads per token" test "$(json_get "$WORK/replayed/run.json" "[t['bytes_read'] for t in d['tokens']]")" = \
    "$(json_get "$WORK/rec/run.json" "[t['bytes_read'] for t in d['tokens']]")"

# The budget counts the predictor: one that fits without it is refused with it.
FIXED=$(json_get "$WORK/nocheck/run.json" "int(d['summary']['engine_dram_bytes'] - d['summary']['predictor_dram_bytes'] - (d['provenance']['policy']['staging_rows'] + d['provenance']['policy']['bounce_rows']) * 4096)")
PB=$(sum_ "$WORK/nocheck" predictor_dram_bytes | cut -d. -f1)
B=$((FIXED + PB - 1))
check "the budget holds the run without a predictor" "$FLASHBED" "${RUN[@]}" --mode predictor --dram-budget ${B}B --out "$WORK/budget-oracle"
expect_error "and not with one" "and the predictor (" "${RUN[@]}" --mode predictor --active predictor --dram-budget ${B}B --out "$WORK/bad3"

# A weak predictor misses active neurons, and costs perplexity.
PPL=(perplexity --model "$M" --text "$WORK/text.txt" --threads 1)
ppl() { json_get "$1" "d['perplexity']"; }
check "perplexity dense" "$FLASHBED" "${PPL[@]}" --json "$WORK/ppl-dense.json"
check "perplexity, exact predictor" "$FLASHBED" "${PPL[@]}" --active predictor --json "$WORK/ppl-exact.json"
check "perplexity, oracle" "$FLASHBED" "${PPL[@]}" --active oracle --json "$WORK/ppl-oracle.json"
check "exact = dense up to float rounding" test "$(python3 -c "print(abs($(ppl "$WORK/ppl-exact.json") / $(ppl "$WORK/ppl-dense.json") - 1) < 1e-4)")" = True
check "exact = the oracle, bit for bit" test "$(ppl "$WORK/ppl-exact.json")" = "$(ppl "$WORK/ppl-oracle.json")"
check "its density" test "$(json_get "$WORK/ppl-exact.json" "0.05 < d['density'] < 0.4")" = True
check "threshold 0: dense, bit for bit" "$FLASHBED" "${PPL[@]}" --active predictor --threshold 0 --json "$WORK/ppl-every.json"
check "threshold 0: the same perplexity" test "$(ppl "$WORK/ppl-every.json")/$(json_get "$WORK/ppl-every.json" "d['density'] == 1")" = "$(ppl "$WORK/ppl-dense.json")/True"
check "generate --active predictor: dense's text" test "$("$FLASHBED" generate --model "$M" --prompt "$P" -n 12 --temperature 0 --threads 1 --active predictor 2>/dev/null)" = \
    "$("$FLASHBED" generate --model "$M" --prompt "$P" -n 12 --temperature 0 --threads 1 2>/dev/null)"
check "generate reports the density" grep -q "FFN density" <("$FLASHBED" generate --model "$M" --prompt "$P" -n 4 --threads 1 --active predictor 2>&1 >/dev/null)
check "weak predictor" "$MAKE_PRED" "$M" weak 3
check "weak --check" "$FLASHBED" "${RUN[@]}" --mode predictor --active predictor --check --out "$WORK/weak"
check "weak: misses" test "$(json_get "$WORK/weak/run.json" "d['summary']['missed'] > 0 and d['summary']['recall'] < 0.9")" = True
check "perplexity, weak predictor" "$FLASHBED" "${PPL[@]}" --active predictor --json "$WORK/ppl-weak.json"
check "weak: worse than dense" test "$(python3 -c "print($(ppl "$WORK/ppl-weak.json") > 1.05 * $(ppl "$WORK/ppl-dense.json"))")" = True

# The cost model prices the predictor beside the measured run.
check "predict --compare" "$FLASHBED" predict --model opt-tiny --policy predictor --layout split --predictor-rank 64 --compare "$WORK/exact/run.json" --out "$WORK/cmp"
check "compare: predictor_ms beside the predicted" test "$(json_get "$WORK/cmp/compare.json" "[c['component'] for c in d['components']][-2:]")" = "['predictor_ms', 'predictor_dram_bytes']"
check "predict.md says where the predictor comes from" grep -q "^- predictor: rank 64 on each of 2 layers" "$WORK/cmp/predict.md"

# Refusals.
expect_error "--check with the oracle" "the oracle's choice is them" "${RUN[@]}" --check --out "$WORK/bad4"
expect_error "a predictor under naive" "nothing is chosen" "${RUN[@]}" --mode naive --active predictor --out "$WORK/bad5"
expect_error "a probability above 1" "a probability, 0 to 1" "${RUN[@]}" --active predictor --threshold 2 --out "$WORK/bad6"
EXPECT_RC=2 expect_error "perplexity: unknown source" "unknown active 'magic'" perplexity --model "$M" --text "$WORK/text.txt" --active magic
for d in bad3 bad4 bad5 bad6; do
    check "no output for $d" test ! -e "$WORK/$d"
done

# The gate on a GLU model (stories260K, SwiGLU), when the shared data is here.
D=${FLASHBED_DATA:-}/models/stories260K
if [ -f "$D/stories260K.bin" ]; then
    check "stories260K" "$FLASHBED" convert "$D/stories260K.bin" --tokenizer "$D/tok512.bin" --out "$WORK/s260"
    S=(--model "$WORK/s260" --prompt "Once upon a time" -n 12 --ignore-eos --threads 1 --io-threads 2 --quiet)
    check "gate --check" "$FLASHBED" run "${S[@]}" --active gate --threshold 0.05 --act-threshold 0.01 --check --out "$WORK/gate"
    check "gate: its rows count as the predictor's" test "$(json_get "$WORK/gate/run.json" "d['summary']['predictor_dram_bytes'] > 0 and d['summary']['predictor_madds_per_token'] > 0 and 0 < d['summary']['density'] < 1")" = True
    check "perplexity --active gate" "$FLASHBED" perplexity --model "$WORK/s260" --text "$FLASHBED_DATA/corpus/tinystories_sample.txt" --tokens 200 --threads 1 --active gate --threshold 0.05 --json "$WORK/ppl-gate.json"
    check "gate: a density below 1" test "$(json_get "$WORK/ppl-gate.json" "0 < d['density'] < 1")" = True
else
    echo "note: $D absent: the gate's GLU checks skipped"
fi
finish
