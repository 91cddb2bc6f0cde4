#!/usr/bin/env bash
# The recorder cross-check (issue 19): python/flashbed_record.py's sets,
# recorded by PyTorch with transformers, against `flashbed run --active
# oracle --record` on the same weights and tokens, for two models:
#   synth   flashbed's own synthetic OPT (model make's Hugging Face folder,
#           loaded by transformers)
#   random  a random-weight OPT built from a config by transformers, which
#           flashbed converts
# Stages (all runs them in turn; each can be rerun alone):
#   prepare DIR   (flashbed) make synth, run it, save its prompt's token ids
#   record DIR    (torch + transformers) build random; record both with the
#                 recorder on the prompt's ids (+ the run's generated count)
#   finish DIR    (flashbed) convert random, run it; compare both pairs
#   all DIR       the three in turn
# record needs the pinned reference environment, on the CPU:
#   tools/make-reference-env.sh && tools/recorder_check.sh all DIR
# Environment: FLASHBED (default build/flashbed), PYTHON (default
# .venv-ref/bin/python, else python3), SHAPE (default opt-tiny),
# RECORD_DEVICE (the recorder's --device, default cpu).
# The comparison's results: DIR/compare-synth.json, DIR/compare-random.json.
# The transformers fixtures' recorded traces (tools/make_hf_fixture.py) are
# the committed, smaller form of the same check, which
# tests/integration/hf_fixture_flash.sh runs without transformers.
set -euo pipefail
cd "$(dirname "$0")/.."
FLASHBED=${FLASHBED:-build/flashbed}
if [ -z "${PYTHON:-}" ]; then
    PYTHON=python3
    [ -x .venv-ref/bin/python ] && PYTHON=.venv-ref/bin/python
fi
SHAPE=${SHAPE:-opt-tiny}
PROMPT="Once upon a time there was a little robot who loved to read books about the sea"
GENERATE=8

usage() { echo "usage: tools/recorder_check.sh prepare|record|finish|all DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage

# The engine's run of model folder $2 into $1/run-$3 with its trace.
flashbed_run() { # dir, flashbed model folder, name
    "$FLASHBED" run --model "$2" --mode all --active oracle --prompt "$PROMPT" -n $GENERATE --ignore-eos \
        --record "$1/flashbed-$3.trace" --out "$1/run-$3" --quiet > /dev/null
}

prepare() {
    local d=$1
    mkdir -p "$d"
    "$FLASHBED" model make --arch opt --shape "$SHAPE" --relu-density 0.2 --seed 11 --out "$d/hf-synth" > /dev/null
    "$FLASHBED" convert "$d/hf-synth" --out "$d/fb-synth" > /dev/null
    flashbed_run "$d" "$d/fb-synth" synth
    "$PYTHON" tools/recorder_check.py ids "$d/run-synth" "$d/prompt-ids.txt" > "$d/generated-count.txt"
    echo "recorder_check: prepared $d: $(wc -l < "$d/prompt-ids.txt") prompt tokens," \
         "$(cat "$d/generated-count.txt") generated forwarded" >&2
}

record() {
    local d=$1 g
    g=$(cat "$d/generated-count.txt")
    "$PYTHON" tools/reference-env/pins.py ||
        { echo "recorder_check: record needs the pinned reference environment (tools/make-reference-env.sh)" >&2; return 1; }
    "$PYTHON" tools/recorder_check.py random-opt "$d/hf-random" --like "$d/hf-synth"
    for m in synth random; do
        "$PYTHON" python/flashbed_record.py --model "$d/hf-$m" --token-ids "$d/prompt-ids.txt" --generate "$g" \
            --device "${RECORD_DEVICE:-cpu}" --out "$d/torch-$m.trace" --ids-out "$d/torch-$m.ids"
    done
}

finish() {
    local d=$1 rc=0 m
    "$FLASHBED" convert "$d/hf-random" --out "$d/fb-random" > /dev/null
    flashbed_run "$d" "$d/fb-random" random
    for m in synth random; do
        "$PYTHON" tools/recorder_check.py compare "$d/torch-$m.trace" "$d/flashbed-$m.trace" \
            --json "$d/compare-$m.json" || rc=1
    done
    return $rc
}

case $1 in
    prepare) prepare "$2" ;;
    record) record "$2" ;;
    finish) finish "$2" ;;
    all) prepare "$2" && record "$2" && finish "$2" ;;
    *) usage ;;
esac
