#!/usr/bin/env bash
# One exit-status convention for every command (cli/exit_codes.h): 0 done,
# 1 a failure (an input that cannot be used), 2 a usage error (the command
# line refused before anything runs), 130 interrupted by Ctrl-C. Each
# command and subcommand is given an option it does not have (2) and an
# input that does not exist or is no model (1); the ones that run long
# enough to be stopped on a test model (the sim backend slowed by
# --sim-delay-us, a long sweep, a large synthetic model) get SIGINT
# mid-run (130), and those that write one file or folder leave nothing
# half-written. Needs no shared data: the model is made here.
source "$(dirname "$0")/lib.sh"
MAKE_PRED=${FLASHBED_TEST_PREDICTOR:?the fb_test_predictor helper}

# rc_is STATUS WHAT COMMAND...: the command exits with STATUS.
rc_is() {
    local want=$1 what=$2
    shift 2
    checks=$((checks + 1))
    "$@" >/dev/null 2>"$WORK/last.err"
    local rc=$?
    [ $rc -eq "$want" ] || fail "$what: exit $rc, expected $want: $(head -c 300 "$WORK/last.err")"
}

# interrupted_is SECONDS WHAT COMMAND...: SIGINT after SECONDS; exit 130.
interrupted_is() {
    local after=$1 what=$2
    shift 2
    checks=$((checks + 1))
    "$@" >/dev/null 2>"$WORK/last.err" &
    local pid=$!
    sleep "$after"
    kill -INT $pid 2>/dev/null || { fail "$what: finished before the interrupt"; wait $pid; return; }
    wait $pid
    local rc=$?
    [ $rc -eq 130 ] || fail "$what: exit $rc after SIGINT, expected 130: $(tail -c 300 "$WORK/last.err")"
}

check "opt-tiny model" "$FLASHBED" model make --arch opt --shape opt-tiny --dtype f32 --seed 5 --out "$WORK/opt-hf"
check "convert it" "$FLASHBED" convert "$WORK/opt-hf" --out "$WORK/opt"
M="$WORK/opt"
check "a predictor for it" "$MAKE_PRED" "$M" exact
printf 'the cat sat on the mat and the dog ran to the park. %.0s' $(seq 40) >"$WORK/text.txt"
T="$WORK/text.txt"
check "a trace" "$FLASHBED" trace synth --shape opt-tiny --tokens 16 --out "$WORK/t.trace"
mkdir -p "$WORK/empty"
NOPE="$WORK/no/such"

# ---- usage errors: every command and subcommand, an option it lacks -> 2
for cmd in sweep calibrate predict "trace info" "trace synth" "trace export" replay convert generate perplexity run \
    "predictor train" "predictor eval" "sparsify calibrate" "sparsify study" "model make" "model verify" \
    "model transpose" reproduce; do
    rc_is 2 "$cmd --no-such-option" "$FLASHBED" $cmd --no-such-option
done
rc_is 2 "an unknown command" "$FLASHBED" no-such-command
rc_is 2 "no command" "$FLASHBED"
rc_is 2 "an unknown global option" "$FLASHBED" --no-such-option run
for cmd in trace predictor sparsify model; do
    rc_is 2 "$cmd: an unknown subcommand" "$FLASHBED" $cmd no-such-subcommand
    rc_is 2 "$cmd: no subcommand" "$FLASHBED" $cmd
done
rc_is 2 "a value that does not parse" "$FLASHBED" generate --model "$M" --prompt x -n many
rc_is 2 "a budget without its unit" "$FLASHBED" predict --dram-budget 25
rc_is 0 "--help" "$FLASHBED" run --help
rc_is 0 "--check-args on options that parse" "$FLASHBED" --check-args run --model "$M"

# ---- input errors: what the command reads does not exist or is no model -> 1
rc_is 1 "sweep: a file in a missing folder" "$FLASHBED" sweep --file "$NOPE/s.bin" --size 1m --chunks 4k --threads 1 \
    --runtime 0.05 --ramp 0 --out "$WORK/o-sweep"
rc_is 1 "calibrate: a missing sweep" "$FLASHBED" calibrate --quick --sweep "$NOPE.json" --out "$WORK/o-hw.json"
rc_is 1 "predict: no such profile" "$FLASHBED" predict --hw no-such-profile
rc_is 1 "predict: no such shape" "$FLASHBED" predict --model no-such-shape
rc_is 1 "trace info: no such trace" "$FLASHBED" trace info "$NOPE.trace"
rc_is 1 "trace synth: no such shape" "$FLASHBED" trace synth --shape no-such-shape --out "$WORK/o.trace"
rc_is 1 "trace export: no such trace" "$FLASHBED" trace export "$NOPE.trace" --out "$WORK/o-export"
rc_is 1 "replay: no such trace" "$FLASHBED" replay --trace "$NOPE.trace" --out "$WORK/o-replay"
rc_is 1 "convert: no such input" "$FLASHBED" convert "$NOPE" --out "$WORK/o-convert"
rc_is 1 "generate: not a model" "$FLASHBED" generate --model "$WORK/empty" --prompt x
rc_is 1 "perplexity: not a model" "$FLASHBED" perplexity --model "$WORK/empty" --text "$T"
rc_is 1 "run: not a model" "$FLASHBED" run --model "$WORK/empty" --prompt x --out "$WORK/o-run"
rc_is 1 "predictor train: not a model" "$FLASHBED" predictor train --model "$WORK/empty" --text "$T" --tokens 10
rc_is 1 "predictor eval: not a model" "$FLASHBED" predictor eval --model "$WORK/empty" --text "$T" --out "$WORK/o-eval"
rc_is 1 "sparsify calibrate: not a model" "$FLASHBED" sparsify calibrate --model "$WORK/empty" --text "$T" --sparsity 0.5
rc_is 1 "sparsify study: no such text" "$FLASHBED" sparsify study --model "$M" --text "$NOPE.txt" \
    --calibration-text "$T" --out "$WORK/o-study"
rc_is 1 "model make: no such shape" "$FLASHBED" model make --arch opt --shape no-such-shape --out "$WORK/o-make"
rc_is 1 "model make: --out exists" "$FLASHBED" model make --arch opt --shape opt-tiny --out "$WORK/empty"
rc_is 1 "model verify: not a model" "$FLASHBED" model verify "$WORK/empty"
rc_is 1 "model transpose: not a model" "$FLASHBED" model transpose "$WORK/empty"
rc_is 1 "reproduce --merge: no studies" "$FLASHBED" reproduce --merge --out "$WORK/empty"
check "no output left by the refusals" test -z "$(ls -d "$WORK"/o-* "$WORK"/o.trace 2>/dev/null)"

# ---- interruptions: SIGINT mid-run -> 130
SLOW=(--sim-delay-us 20000) # each command of the sim backend waits 20 ms: a token takes seconds
interrupted_is 1 "generate" "$FLASHBED" "${SLOW[@]}" generate --model "$M" --backend sim --prompt "the cat" -n 200 \
    --temperature 0 --threads 1
interrupted_is 1 "perplexity" "$FLASHBED" "${SLOW[@]}" perplexity --model "$M" --backend sim --text "$T" --threads 1
interrupted_is 1 "run" "$FLASHBED" "${SLOW[@]}" run --model "$M" --backend sim --prompt "the cat" -n 200 --ignore-eos \
    --threads 1 --out "$WORK/i-run" --quiet
interrupted_is 1 "predictor eval" "$FLASHBED" "${SLOW[@]}" predictor eval --model "$M" --backend sim --text "$T" \
    --tokens 200 --gen-tokens 50 --threads 1 --out "$WORK/i-eval"
interrupted_is 1 "sweep" "$FLASHBED" sweep --file "$WORK/s.bin" --size 16m --chunks 4k --threads 1 --runtime 30 --ramp 0 \
    --out "$WORK/i-sweep"
interrupted_is 2 "calibrate" "$FLASHBED" calibrate --quick --file "$WORK/c.bin" --size 64m --out "$WORK/i-hw.json"
check "calibrate: no profile" test ! -e "$WORK/i-hw.json"
interrupted_is 1 "trace synth" "$FLASHBED" trace synth --shape opt-1.3b --tokens 1000000 --out "$WORK/i.trace"
check "trace synth: no trace" test ! -e "$WORK/i.trace"
interrupted_is 1 "model make" "$FLASHBED" model make --arch opt --shape opt-1.3b --out "$WORK/i-make"
check "model make: no folder" test ! -e "$WORK/i-make"
interrupted_is 2 "reproduce" "$FLASHBED" reproduce --tiny --out "$WORK/i-repro"

finish
