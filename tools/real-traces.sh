#!/usr/bin/env bash
# Real traces against synthetic ones (issue 48, "How far do synthetic traces
# mislead?"): each real GGUF model's true activations recorded over real
# text, a synthetic twin of each trace (its densities alone: trace synth
# --like) and a fitted twin (its reuse too: --like --fit), all three
# replayed under the same policies and budgets, and each twin's error
# against the real trace in one table. A study, not a test; the figures
# depend on the text, the threshold and the tokens, all recorded.
#
#   tools/real-traces.sh [OUT]
#
# Environment:
#   MODELS   GGUF files, space-separated (default: SmolLM2-135M Q4_1 from
#            ../shared/data, Gemma 3 270M Q4_K_M from .models); one missing
#            is reported as skipped
#   TEXTS    text files (default: WikiText-2 test and the TinyStories sample
#            from ../shared/data/corpus)
#   PROMPT   prompt tokens per trace (default 128); GEN tokens generated (64)
#   POLICIES, BUDGETS  replay's (default window:5,lru,lfu,belady; 10%,25%,50%,75%)
#   FB       the flashbed binary (default build/flashbed)
# The threshold of each model is its probe run's suggestion (the median
# |act(gate)·up| of its first tokens: about half the neurons active).
# Writes OUT/compare.md (the table, with provenance), OUT/compare.csv,
# OUT/<model>-<text>.trace and each replay's folder.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/real-traces-$(date -u +%Y%m%dT%H%M%SZ)}
FB=${FB:-build/flashbed}
D=../shared/data
MODELS=${MODELS:-$D/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf .models/gemma3-270m/gemma-3-270m-q4_k_m.gguf}
TEXTS=${TEXTS:-$D/corpus/wiki.test.raw $D/corpus/tinystories_sample.txt}
PROMPT=${PROMPT:-128}
GEN=${GEN:-64}
POLICIES=${POLICIES:-window:5,lru,lfu,belady}
BUDGETS=${BUDGETS:-10%,25%,50%,75%}
[ -x "$FB" ] || { echo "real-traces: $FB is missing: build first" >&2; exit 1; }
[ -e "$OUT" ] && { echo "real-traces: $OUT exists: choose another OUT" >&2; exit 1; }
mkdir -p "$OUT/models"
log() { echo "real-traces: $*" >&2; }

replay() { # trace, folder
    "$FB" replay --trace "$1" --policy "$POLICIES" --layout bundled --dram-budget "$BUDGETS" --row-stride aligned \
        --use actual --quiet --out "$2" > /dev/null
}

suggested_threshold() { # model folder, text
    "$FB" run --model "$1" --mode all --prompt-file "$2" --prompt-tokens 32 -n 2 --ignore-eos --quiet \
        --out "$OUT/probe" > /dev/null 2>&1
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["threshold_suggestion"]["threshold"])' \
        "$OUT/probe/run.json"
    rm -rf "$OUT/probe"
}

study() { # gguf, text
    local name text m t
    name=$(basename "$1" .gguf)
    text=$(basename "$2" | sed 's/\..*//')
    m="$OUT/models/$name"
    [ -d "$m" ] || "$FB" convert "$1" --out "$m" > /dev/null
    t=$(suggested_threshold "$m" "$2")
    log "$name on $text: recording at --threshold $t"
    "$FB" run --model "$m" --mode all --prompt-file "$2" --prompt-tokens "$PROMPT" -n "$GEN" --ignore-eos --quiet \
        --threshold "$t" --record "$OUT/$name-$text.trace" --out "$OUT/rec-$name-$text" > /dev/null
    "$FB" trace info "$OUT/$name-$text.trace" --out "$OUT/info-$name-$text" > "$OUT/info-$name-$text.txt"
    "$FB" trace synth --shape "$m/model.json" --like "$OUT/$name-$text.trace" --out "$OUT/$name-$text.twin.trace" 2> /dev/null
    log "$name on $text: fitting a twin's reuse"
    "$FB" trace synth --shape "$m/model.json" --like "$OUT/$name-$text.trace" --fit \
        --out "$OUT/$name-$text.fit.trace" 2> "$OUT/fit-$name-$text.txt"
    for kind in "" .twin .fit; do
        replay "$OUT/$name-$text$kind.trace" "$OUT/replay-$name-$text$kind"
    done
    echo "$name $text $t" >> "$OUT/studies.txt"
}

for model in $MODELS; do
    if [ ! -f "$model" ]; then
        log "skipped $model: not found (tools/fetch-models.sh fetches the real models)"
        continue
    fi
    for text in $TEXTS; do
        study "$model" "$text"
    done
done
[ -s "$OUT/studies.txt" ] || { log "no model found: nothing measured"; exit 1; }
python3 tools/real_traces_table.py "$OUT" "$0 $*" > "$OUT/compare.md"
log "wrote $OUT/compare.md"
