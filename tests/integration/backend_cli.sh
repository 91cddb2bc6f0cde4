#!/usr/bin/env bash
# --backend on every command that computes (issue 30): an unknown name is
# refused by the option parser, naming the option; a backend that cannot
# start here (cuda without a device or without a CUDA build) fails in one
# line naming the command and option, and writes nothing; calibrate
# measures an emulated device (sim, OpenCL on a CPU) and marks its profile
# emulated, with the device's copy, wait and matvec rates, and predict
# refuses such a profile in one line naming it unless --allow-emulated; a
# device fault fails calibrate and writes nothing; result files record the
# backend, its device and whether it is emulated; sim computes what cpu
# computes, bit for bit (tokens, perplexity, a predictor's evaluation), on
# a test model and on stories260K (each part skipped, saying so, when sim
# or the shared data is absent). Where an OpenCL device is (PoCL in CI),
# stories260K in f32 and f16 decodes on opencl to cpu's greedy tokens and
# scores WikiText-2 within a relative 1e-5 of cpu's perplexity.
source "$(dirname "$0")/lib.sh"
MAKE_PRED=${FLASHBED_TEST_PREDICTOR:?the fb_test_predictor helper}

check "opt-tiny model" "$FLASHBED" model make --arch opt --shape opt-tiny --dtype f32 --seed 5 --relu-density 0.15 --out "$WORK/opt-hf"
check "convert it" "$FLASHBED" convert "$WORK/opt-hf" --out "$WORK/opt"
M="$WORK/opt"
printf 'the cat sat on the mat and the dog ran to the park. %.0s' $(seq 12) > "$WORK/text.txt"
check "a predictor for it" "$MAKE_PRED" "$M" exact
GEN=(generate --model "$M" --prompt "the cat sat" -n 12 --temperature 0 --threads 1)
PPL=(perplexity --model "$M" --text "$WORK/text.txt" --tokens 120 --threads 1)
RUN=(run --model "$M" --prompt "the cat sat" -n 8 --ignore-eos --threads 1 --io-threads 2 --quiet)
EVAL=(predictor eval --model "$M" --text "$WORK/text.txt" --tokens 60 --gen-tokens 4 --threads 1)

# An unknown name: the parser's refusal names the option and lists the names.
for cmd in generate perplexity run "predictor eval" calibrate; do
    EXPECT_RC=2 expect_error "$cmd --backend nosuch" "$cmd --backend: unknown backend 'nosuch' (expected 'cpu', 'sim', 'opencl' or 'cuda')" \
        $cmd --backend nosuch
done

# Provenance on cpu: the backend, its device, not emulated.
prov_is() { # file, backend, emulated (Python's True/False)
    test "$(json_get "$1" '(d["provenance"]["backend"], d["provenance"]["device"] != "", d["provenance"]["emulated"])')" = "('$2', True, $3)"
}
check "generate on cpu" "$FLASHBED" "${GEN[@]}" --json "$WORK/gen-cpu.json"
check "perplexity on cpu" "$FLASHBED" "${PPL[@]}" --json "$WORK/ppl-cpu.json"
check "run on cpu" "$FLASHBED" "${RUN[@]}" --mode all --out "$WORK/run-cpu"
check "predictor eval on cpu" "$FLASHBED" "${EVAL[@]}" --out "$WORK/eval-cpu"
for f in gen-cpu.json ppl-cpu.json run-cpu/run.json eval-cpu/eval.json; do
    check "$f records backend cpu, its device, not emulated" prov_is "$WORK/$f" cpu False
done
check "the device is the host CPU" test "$(json_get "$WORK/gen-cpu.json" 'd["provenance"]["device"]')" = "host CPU"

# A backend that cannot start: one line, naming the command and option;
# nothing written. (Where it starts, a GPU machine with a CUDA build, this
# part has nothing to check.)
one_line_refusal() { # what, then the command; writes nothing asked of it
    local what=$1 err
    shift
    checks=$((checks + 1))
    err=$("$FLASHBED" "$@" 2>&1 >/dev/null)
    local rc=$?
    if [ $rc -eq 0 ] || [ $rc -gt 128 ]; then
        fail "$what: exit $rc, expected a failure"
    elif [ "$(wc -l <<<"$err")" -ne 1 ] || ! grep -q -- "^flashbed: error: $what: cuda backend: " <<<"$err"; then
        fail "$what: not one line naming it: $err"
    fi
}
if "$FLASHBED" "${GEN[@]}" -n 1 --backend cuda >/dev/null 2>&1; then
    echo "cuda starts here: its refusals are not checked"
else
    one_line_refusal "generate --backend cuda" "${GEN[@]}" --backend cuda --json "$WORK/no-gen.json"
    one_line_refusal "perplexity --backend cuda" "${PPL[@]}" --backend cuda --json "$WORK/no-ppl.json"
    one_line_refusal "run --backend cuda" "${RUN[@]}" --mode dense --backend cuda --out "$WORK/no/run"
    one_line_refusal "predictor eval --backend cuda" "${EVAL[@]}" --backend cuda --out "$WORK/no/eval"
    one_line_refusal "calibrate --backend cuda" calibrate --quick --backend cuda --out "$WORK/no/hw/box.json"
    check "nothing written" test ! -e "$WORK/no" -a ! -e "$WORK/no-gen.json" -a ! -e "$WORK/no-ppl.json"
fi

# sim: the same bits as cpu, recorded as emulated; calibrate measures it
# and marks the profile emulated.
if ! "$FLASHBED" "${GEN[@]}" -n 1 --backend sim >/dev/null 2>"$WORK/sim.err"; then
    echo "sim is absent in this build ($(cat "$WORK/sim.err")): its comparisons are skipped"
    expect_error "calibrate --backend sim, absent" "calibrate --backend sim: sim backend: " \
        calibrate --quick --backend sim --out "$WORK/no/hw/box.json"
    check "nothing written" test ! -e "$WORK/no"
    finish
fi
check "sweep for calibrate" "$FLASHBED" sweep --file "$WORK/d.bin" --size 4m --chunks 4k,16k,64k --threads 1,2 \
    --runtime 0.05 --ramp 0 --engine null --out "$WORK/sweep"
CAL=(calibrate --quick --sweep "$WORK/sweep/sweep.json")
# A device's profile: backend, emulated or not (Python's True/False), the
# copy sizes, every device rate positive, the matvec dtypes.
device_profile_is() { # file, backend, emulated
    test "$(json_get "$1" '(d["backend"], d["emulated"], d["provenance"]["emulated"], "emulated_note" in d,
        [t["bytes"] for t in d["device"]["transfers"]],
        all(t[k] > 0 for t in d["device"]["transfers"] for k in ("h2d_pinned_bw_bytes", "h2d_pageable_bw_bytes",
            "d2h_pinned_bw_bytes", "d2h_pageable_bw_bytes")),
        all(d["device"][k] > 0 for k in ("launch_s", "sync_s", "event_s")), d["device"]["name"] == d["provenance"]["device"],
        sorted(d["compute"]["dtypes"]), all(r["bw_bytes"] > 0 for r in d["compute"]["dtypes"].values()))')" = \
        "('$2', $3, $3, $3, [16384, 262144, 4194304, 67108864], True, True, True, ['bf16', 'f16', 'f32'], True)"
}
# predict on an emulated profile: refused in one line naming the file, and
# nothing written; priced with --allow-emulated.
predict_emulated() { # what, profile
    local err
    PRED=(predict --model opt-1.3b --hw "$2" --dtype f16)
    expect_error "$1: predict refuses it" "$2: a profile of an emulated device (.* backend on .*): .*--allow-emulated (predict, replay)" \
        "${PRED[@]}" --out "$WORK/no/pred"
    err=$("$FLASHBED" "${PRED[@]}" --out "$WORK/no/pred" 2>&1 >/dev/null)
    check "$1: the refusal is one line" test "$(wc -l <<<"$err")" = 1
    check "$1: predict --allow-emulated prices with it" "$FLASHBED" "${PRED[@]}" --allow-emulated --out "$WORK/pred-$1"
    check "$1: its compute rate priced" test "$(json_get "$WORK/pred-$1/predict.json" 'd["predictions"][0]["prediction"]["compute_ms"] > 0')" = True
    expect_error "$1: predict --paper refuses it" "a profile of an emulated device" predict --paper table2 --hw "$2" --out "$WORK/no/paper"
    expect_error "$1: replay refuses it" "replay --hw '$2': $2: a profile of an emulated device" \
        replay --trace "$WORK/run.trace" --policy window:3 --hw "$2" --quiet --out "$WORK/no/replay"
    check "$1: replay --allow-emulated prices with it" "$FLASHBED" replay --trace "$WORK/run.trace" --policy window:3 \
        --hw "$2" --allow-emulated --quiet --out "$WORK/replay-$1"
    check "$1: nothing written" test ! -e "$WORK/no"
}
check "a trace to replay" "$FLASHBED" "${RUN[@]}" --mode window --record "$WORK/run.trace" --out "$WORK/run-trace"
check "calibrate --backend sim" "$FLASHBED" "${CAL[@]}" --backend sim --out "$WORK/hw/sim.json"
check "the sim profile: emulated, noted, the device's rates" device_profile_is "$WORK/hw/sim.json" sim True
predict_emulated sim "$WORK/hw/sim.json"
expect_error "a device fault: calibrate fails with its reason" \
    "calibrate --backend sim: sim backend: command 5 .*: an injected failure" \
    --sim-fail-at 5 "${CAL[@]}" --backend sim --out "$WORK/no/hw/box.json"
check "nothing written" test ! -e "$WORK/no"
if ! probe=$("$FLASHBED" "${GEN[@]}" -n 1 --backend opencl 2>&1 >/dev/null); then
    echo "opencl does not start here ($probe): its calibration is skipped"
else
    check "calibrate --backend opencl" "$FLASHBED" "${CAL[@]}" --backend opencl --out "$WORK/hw/ocl.json"
    if [ "$(json_get "$WORK/hw/ocl.json" 'd["emulated"]')" = True ]; then
        check "the opencl profile (a CPU device): emulated, noted, the device's rates" \
            device_profile_is "$WORK/hw/ocl.json" opencl True
        predict_emulated opencl "$WORK/hw/ocl.json"
    else
        check "the opencl profile (a GPU): the device's rates" device_profile_is "$WORK/hw/ocl.json" opencl False
        check "predict prices with it" "$FLASHBED" predict --model opt-1.3b --hw "$WORK/hw/ocl.json" --dtype f16 \
            --out "$WORK/pred-ocl"
    fi
fi
check "generate on sim" "$FLASHBED" "${GEN[@]}" --backend sim --json "$WORK/gen-sim.json"
check "perplexity on sim" "$FLASHBED" "${PPL[@]}" --backend sim --json "$WORK/ppl-sim.json"
check "run on sim" "$FLASHBED" "${RUN[@]}" --mode all --backend sim --out "$WORK/run-sim"
check "predictor eval on sim" "$FLASHBED" "${EVAL[@]}" --backend sim --out "$WORK/eval-sim"
for f in gen-sim.json ppl-sim.json run-sim/run.json eval-sim/eval.json; do
    check "$f records backend sim, emulated" prov_is "$WORK/$f" sim True
done
tokens() { json_get "$1" '[t["id"] for t in d["tokens"]]'; }
check "generate: sim's tokens are cpu's" test "$(tokens "$WORK/gen-sim.json")" = "$(tokens "$WORK/gen-cpu.json")"
check "perplexity: sim's is cpu's" test "$(json_get "$WORK/ppl-sim.json" 'd["perplexity"]')" = "$(json_get "$WORK/ppl-cpu.json" 'd["perplexity"]')"
check "run: sim's tokens are cpu's" test "$(tokens "$WORK/run-sim/run.json")" = "$(tokens "$WORK/run-cpu/run.json")"
# run's FFN on a device (issue 31): the same reads; the uploads per token
# are the rows inserted (a row and its up bias each) and the row moves
# lists (8 bytes a move); a cpu run's files have no device keys.
per_token() { json_get "$1" "[int(t['$2']) for t in d['tokens']]"; }
check "run: sim's bytes read per token are cpu's" test "$(per_token "$WORK/run-sim/run.json" bytes_read)" = "$(per_token "$WORK/run-cpu/run.json" bytes_read)"
check "run: sim's uploads per token are the rows inserted and the moves lists" test "$(json_get "$WORK/run-sim/run.json" \
    "all(t['h2d_bytes'] == t['rows_inserted'] * (d['summary']['row_stride'] + 4) + 8 * t['row_moves'] for t in d['tokens']) and d['summary']['h2d_bytes'] > 0")" = True
check "run on cpu: no device keys" test "$(json_get "$WORK/run-cpu/run.json" "'h2d_bytes' in d['tokens'][0] or 'row_moves' in d['summary']")" = False
evals() { json_get "$1" '(d["perplexity_dense"], d["perplexity_predictor"], d["perplexity_oracle"], d["greedy"], d["layers"])'; }
check "predictor eval: sim's figures are cpu's" test "$(evals "$WORK/eval-sim/eval.json")" = "$(evals "$WORK/eval-cpu/eval.json")"

# A device fault (sim's injected failure of the Nth copy or launch): while
# the model is uploaded, and in the middle of the tokens; each command
# stops with one line naming it, and writes no result. (A fault in set-up
# is reported by the set-up's own wait, with no position: the engine waits
# for its uploads, the RoPE frequencies last, before the FFN's set-up.)
for n in 3 300; do
    FAIL=(--sim-fail-at "$n")
    expect_error "generate, fault $n" "generate: .*sim backend: command $n .*: an injected failure" \
        "${FAIL[@]}" "${GEN[@]}" --backend sim --json "$WORK/fault-gen.json"
    expect_error "perplexity, fault $n" "perplexity: .*sim backend: command $n .*: an injected failure" \
        "${FAIL[@]}" "${PPL[@]}" --backend sim --json "$WORK/fault-ppl.json"
    expect_error "run, fault $n" "run: \(position [0-9]*: \)\?sim backend: command $n .*: an injected failure" \
        "${FAIL[@]}" "${RUN[@]}" --mode all --backend sim --out "$WORK/fault-run"
    expect_error "predictor eval, fault $n" "predictor eval: .*sim backend: command $n .*: an injected failure" \
        "${FAIL[@]}" "${EVAL[@]}" --backend sim --out "$WORK/fault-eval"
    check "fault $n: nothing written" test ! -e "$WORK/fault-gen.json" -a ! -e "$WORK/fault-ppl.json" \
        -a ! -e "$WORK/fault-run" -a ! -e "$WORK/fault-eval"
done
check "a fault in the middle names the position" grep -q "generate: position [1-9][0-9]*: " \
    <<<"$("$FLASHBED" --sim-fail-at 300 "${GEN[@]}" --backend sim 2>&1 >/dev/null)"

if [ ! -f "$FLASHBED_DATA/models/stories260K/stories260K.bin" ]; then
    echo "stories260K not found under FLASHBED_DATA=$FLASHBED_DATA: its comparison is skipped"
    finish
fi
need_stories260k
check "convert stories260K" "$FLASHBED" convert "$SRC/stories260K.bin" --tokenizer "$SRC/tok512.bin" --out "$WORK/s260"
for b in cpu sim; do
    check "stories260K on $b" "$FLASHBED" generate --model "$WORK/s260" --prompt "Once upon a time" --temperature 0 -n 60 \
        --backend $b --json "$WORK/s260-$b.json"
done
check "stories260K: sim's tokens are cpu's" test "$(tokens "$WORK/s260-sim.json")" = "$(tokens "$WORK/s260-cpu.json")"

if ! probe=$("$FLASHBED" generate --model "$WORK/s260" --prompt "Once" -n 1 --backend opencl 2>&1 >/dev/null); then
    echo "opencl does not start here ($probe): its stories260K comparison is skipped"
    finish
fi
WIKI="$FLASHBED_DATA/corpus/wiki.test.raw"
check "stories260K in f16" "$FLASHBED" convert "$SRC/stories260K.bin" --tokenizer "$SRC/tok512.bin" --dtype f16 \
    --out "$WORK/s260-f16"
for dt in f32 f16; do
    model="$WORK/s260"
    [ $dt = f16 ] && model="$WORK/s260-f16"
    for b in cpu opencl; do
        check "stories260K $dt on $b" "$FLASHBED" generate --model "$model" --prompt "Once upon a time" \
            --temperature 0 -n 60 --backend $b --json "$WORK/g-$dt-$b.json"
        check "WikiText-2, stories260K $dt on $b" "$FLASHBED" perplexity --model "$model" --text "$WIKI" \
            --tokens 4000 --backend $b --json "$WORK/p-$dt-$b.json"
    done
    check "stories260K $dt: opencl's greedy tokens are cpu's" \
        test "$(tokens "$WORK/g-$dt-opencl.json")" = "$(tokens "$WORK/g-$dt-cpu.json")"
    rel=$(python3 -c "import json,sys; a,b=(json.load(open(f))['perplexity'] for f in sys.argv[1:]); print(abs(a-b)/b)" \
        "$WORK/p-$dt-opencl.json" "$WORK/p-$dt-cpu.json")
    echo "stories260K $dt WikiText-2 perplexity: opencl vs cpu, relative difference $rel"
    check "stories260K $dt: opencl's WikiText-2 perplexity within 1e-5 of cpu's" python3 -c "assert $rel <= 1e-5"
done
finish
