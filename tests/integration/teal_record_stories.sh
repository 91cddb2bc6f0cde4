#!/usr/bin/env bash
# run --active teal --record on stories260K (a trained model: skipped, exit
# 77, without the shared data): replay --layout transposed of the recorded
# trace at the run's strides and cache budget counts per token exactly
# what the engine read, stream by stream (lib_teal.sh), under predictor,
# window:K and lru at two budgets.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_teal.sh"

need_stories260k
S="$WORK/stories"
check "convert stories260K" "$FLASHBED" convert "$SRC/stories260K.bin" --tokenizer "$SRC/tok512.bin" --out "$S"
check "calibrate stories260K" "$FLASHBED" sparsify calibrate --model "$S" \
    --text "$FLASHBED_DATA/corpus/tinystories_sample.txt" --sparsity 0.5 --tokens 1000 --threads 1
check "transpose stories260K" "$FLASHBED" model transpose "$S"
for case in "pred predictor" "win3 window:3" "win2 window:2 2500K" "lru25 lru 2500K" "lru40 lru 4M"; do
    set -- $case
    teal_crosscheck "$S" "$1" "$2" "${3:-}" "Once upon a time" 40
done
check "the trace names stories260K's sparsify.json" bash -c '"$1" trace info "$2" | grep -q "\"sparsify\":\"$3/sparsify.json\""' \
    _ "$FLASHBED" "$WORK/lru25.trace" "$S"

finish
