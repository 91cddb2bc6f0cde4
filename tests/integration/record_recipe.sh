#!/usr/bin/env bash
# The recipe "Recording a trace of your own model with flashbed run
# --record" (docs: record-recipe, issue 35) run as it stands on stories260K
# (a SwiGLU Llama: skipped, exit 77, without the shared data):
#   - at --threshold 0 every neuron is active: run.md says so and suggests
#     a threshold from the run's own values; at that threshold the trace
#     recorded is sparse, trace info and replay read it
#   - the suggestion is the median of the values sampled, exactly: beside a
#     threshold-0 trace (the dense computation), --check at that threshold
#     counts values - ceil(values / 2) truly active neurons
#   - Ctrl-C during run --record keeps the trace of the tokens measured,
#     whole, and says so; exit 130
#   - --prompt-tokens N keeps N tokens + BOS; the context refusals of run
#     and generate count it so, and the value they give runs.
source "$(dirname "$0")/lib.sh"

need_stories260k
D=$FLASHBED_DATA
M=$WORK/s260
R=$WORK/results
cd "$WORK" || exit 1
json() { json_get "$@"; }

# ---- the recipe, command for command
check "convert" "$FLASHBED" convert $D/models/stories260K/stories260K.bin --tokenizer $D/models/stories260K/tok512.bin --out $M
"$FLASHBED" run --model $M --mode all --prompt-file $D/corpus/tinystories_sample.txt --prompt-tokens 64 -n 64 \
    --quiet --out $R/rec-probe 2>"$WORK/probe.err"
check "probe run exits 0" test $? -eq 0
T=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["threshold_suggestion"]["threshold"])' \
    $R/rec-probe/run.json)
check "probe: every neuron active (run.json)" test "$(json $R/rec-probe/run.json 'd["summary"]["density"]')" = 1
check "probe: run.md says every neuron is active, and why" \
    grep -q "every neuron is active\*\* at --threshold 0: a swiglu FFN has no exact zeros" $R/rec-probe/run.md
check "probe: run.md suggests the threshold run.json holds" \
    grep -q "suggested: --threshold $(python3 -c "print('%.4g' % $T)"), the median |act(gate)·up| of 110080 values" \
    $R/rec-probe/run.md
check "probe: stderr shows it too" grep -q "suggested: --threshold" "$WORK/probe.err"
check "the suggestion: every value of 128 tokens x 5 layers x 172 neurons" \
    test "$(json $R/rec-probe/run.json 'd["summary"]["threshold_suggestion"]["values"]')" = $((128 * 5 * 172))
check "the suggestion is a positive threshold" python3 -c "import sys; sys.exit(not float('$T') > 0)"
"$FLASHBED" run --model $M --mode all --prompt-file $D/corpus/tinystories_sample.txt --prompt-tokens 64 -n 64 \
    --quiet --threshold $T --record s260.trace --out $R/rec 2>"$WORK/rec.err"
check "recording run exits 0" test $? -eq 0
check "recorded at the threshold: between a third and two thirds of the neurons" \
    python3 -c "import json; d = json.load(open('$R/rec/run.json'))['summary']['density']; exit(not 0.33 < d < 0.67)"
check "run.md says nothing of every neuron now" bash -c "! grep -q 'every neuron is active' $R/rec/run.md"
"$FLASHBED" trace info s260.trace >"$WORK/info.txt"
check "trace info reads it" test $? -eq 0
check "trace info: 64 prompt tokens + BOS, 63 generated" grep -q "tokens: 128 (65 prompt, 63 generated)" "$WORK/info.txt"
check "trace info: the threshold in its source" grep -q "\"threshold\": $(python3 -c "print('%g' % $T)")," "$WORK/info.txt"
"$FLASHBED" replay --trace s260.trace --policy window:5,lru --dram-budget 80%,90% >"$WORK/replay.txt" 2>&1
check "replay exits 0" test $? -eq 0
replay_dir=$(sed -n 's/^flashbed: results in //p' "$WORK/replay.txt")
check "replay: every row feasible at 80% and 90%" test \
    "$(json "$WORK/$replay_dir/replay.json" '[r["feasible"] for r in d["results"]]')" = "[True, True, True, True, True, True, True, True]"

# ---- the suggestion, exactly: threshold 0 recorded (every neuron: the
# dense computation), then --check at T beside that trace on the same tokens
"$FLASHBED" run --model $M --mode all --prompt-file $D/corpus/tinystories_sample.txt --prompt-tokens 64 -n 64 \
    --quiet --record all.trace --out $R/all 2>"$WORK/all.err"
check "threshold 0 with --record: run.md says the trace holds every neuron" \
    grep -q "the recorded trace holds every neuron of every token" $R/all/run.md
check "the same suggestion as the probe's" test "$(json $R/all/run.json 'd["summary"]["threshold_suggestion"]["threshold"]')" = "$T"
"$FLASHBED" run --model $M --mode all --prompt-file $D/corpus/tinystories_sample.txt --prompt-tokens 64 -n 64 \
    --quiet --active trace:all.trace --check --threshold $T --out $R/check 2>/dev/null
check "check run exits 0" test $? -eq 0
check "the same tokens as the probe" test "$(json $R/check/run.json '[t["id"] for t in d["tokens"]]')" = \
    "$(json $R/rec-probe/run.json '[t["id"] for t in d["tokens"]]')"
check "exactly values - ceil(values/2) above the suggested threshold" \
    test "$(json $R/check/run.json 'sum(t["active"] for t in d["tokens"])')" = $((110080 - 55040))

# ---- Ctrl-C during run --record: reads slowed (2 ms each) so that it lands mid-run
"$FLASHBED" run --model $M --mode all --prompt "Once upon a time" -n 400 --ignore-eos --threshold $T \
    --io-engine fault --fault delay:1:2ms --record int.trace --out $R/int >"$WORK/int.out" 2>"$WORK/int.err" &
pid=$!
for _ in $(seq 1 600); do # the prompt echoed and a few generated words
    [ "$(wc -c <"$WORK/int.out")" -gt 40 ] && break
    sleep 0.1
done
kill -INT $pid
wait $pid
check "Ctrl-C: exit 130" test $? -eq 130
n=$(json $R/int/run.json 'len(d["tokens"])')
check "Ctrl-C: run.json says interrupted" test "$(json $R/int/run.json 'd["summary"]["status"]')" = interrupted
check "Ctrl-C: stopped before the end" test "$n" -lt 404
check "Ctrl-C: stderr says the trace holds the tokens measured" \
    grep -q "run --record: interrupted: int.trace holds the trace of the $n tokens measured" "$WORK/int.err"
check "Ctrl-C: trace info reads the trace, every CRC checked" bash -c "'$FLASHBED' trace info int.trace >'$WORK/int.info'"
check "Ctrl-C: the trace has the run's tokens" grep -q "tokens: $n (5 prompt, $((n - 5)) generated)" "$WORK/int.info"
check "Ctrl-C: replay reads it" bash -c "'$FLASHBED' replay --trace int.trace --policy lru --dram-budget 90% --out '$WORK/int-replay' >/dev/null 2>&1"
check "Ctrl-C: no temporary left" bash -c "! ls '$WORK' | grep -q '\.tmp'"

# ---- --prompt-tokens counts the prompt without BOS, and the refusals say so
expect_error "run: the refusal counts as --prompt-tokens does" \
    "the prompt's 65 positions + 500 generated tokens pass the model's context of 512: the prompt is 64 tokens + BOS; --prompt-tokens 11 (BOS not counted) at most fits" \
    run --model $M --mode all --prompt-file $D/corpus/tinystories_sample.txt --prompt-tokens 64 -n 500 --quiet --out $R/no
check "run: nothing written" test ! -e $R/no
check "run: the --prompt-tokens it gives runs" "$FLASHBED" run --model $M --mode all \
    --prompt-file $D/corpus/tinystories_sample.txt --prompt-tokens 11 -n 500 --ignore-eos --quiet --out $R/fits
check "run: 11 tokens + BOS" test "$(json $R/fits/run.json 'd["summary"]["prompt_tokens"]')" = 12
expect_error "generate: the refusal counts as --prompt-tokens does" \
    "context of 512: the prompt is [0-9]* tokens + BOS; --prompt-tokens 511 (BOS not counted) at most fits" \
    generate --model $M --prompt-file $D/corpus/tinystories_sample.txt -n 4
"$FLASHBED" generate --model $M --prompt-file $D/corpus/tinystories_sample.txt --prompt-tokens 511 -n 1 \
    --json "$WORK/gen.json" >/dev/null 2>&1
check "generate: the --prompt-tokens it gives runs" test $? -eq 0
check "generate: 511 tokens + BOS" test "$(json "$WORK/gen.json" 'len(d["prompt_token_ids"])')" = 512
printf '1 %.0s' $(seq 1 600) >"$WORK/ids.txt"
expect_error "--prompt-ids: no BOS to leave out" \
    "the prompt is 600 ids (--prompt-ids: no BOS added); --prompt-tokens 512 at most fits" \
    generate --model $M --prompt-ids "$WORK/ids.txt" -n 4

finish
