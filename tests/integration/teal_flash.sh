#!/usr/bin/env bash
# Input sparsity on flash (issue 33): flashbed model transpose writes
# ffn_t.bin and its record; run --active teal reads it through two caches
# and gives the DRAM path's tokens and logits (fb_test_teal: every
# position's logits within 1e-5 of the largest |logit|, relative) on
# synthetic SwiGLU (f32, f16) and ReLU (bf16) models and stories260K when
# the shared data has it; each stream's bytes and reads per token equal
# what two fresh caches decide for the DRAM path's sets, and with a policy
# that keeps nothing they are the kept channels x the channel stride plus
# the kept rows x the down stride; run.json names the layout and the
# streams; the refusals, each in one line, with nothing left behind.
source "$(dirname "$0")/lib.sh"
TEAL=${FLASHBED_TEST_TEAL:?fb_test_teal}

words=(the a cat dog sat on mat ran to park and saw big small red blue bird tree house girl boy mom dad happy day)
RANDOM=7
for i in $(seq 900); do printf '%s ' "${words[RANDOM % ${#words[@]}]}"; done >"$WORK/text.txt"
P="the cat sat on the mat and the dog"

check "model make llama-tiny" "$FLASHBED" model make --arch llama --shape llama-tiny --seed 5 --out "$WORK/hf"
check "model make opt-tiny" "$FLASHBED" model make --arch opt --shape opt-tiny --seed 3 --relu-density 0.3 --out "$WORK/ohf"
for dt in f32 f16; do
    check "convert $dt" "$FLASHBED" convert "$WORK/hf" --dtype $dt --out "$WORK/m-$dt"
done
check "convert opt bf16" "$FLASHBED" convert "$WORK/ohf" --dtype bf16 --out "$WORK/o-bf16"
M="$WORK/m-f32"

# ---- refusals before ffn_t.bin and sparsify.json exist: nothing written
expect_error "teal without sparsify.json" "flashbed sparsify calibrate" run --model "$M" --active teal --prompt "$P" \
    -n 4 --out "$WORK/r-no-cal"
for m in "$M" "$WORK/m-f16" "$WORK/o-bf16"; do
    kind=both; [ "$m" = "$WORK/o-bf16" ] && kind=input
    check "calibrate $m" "$FLASHBED" sparsify calibrate --model "$m" --text "$WORK/text.txt" --sparsity 0.5 \
        --tokens 300 --threads 1 --kind $kind
done
expect_error "teal without ffn_t.bin" "flashbed model transpose $M" run --model "$M" --active teal --prompt "$P" \
    -n 4 --out "$WORK/r-no-t"
expect_error "transpose: not a model" "model.json" model transpose "$WORK"
expect_error "transpose: no folder" "flashbed model transpose DIR" model transpose
before=$(md5sum <"$M/model.json")
cp "$M/ffn.bin" "$WORK/ffn.bin.keep"
truncate -s 4096 "$M/ffn.bin"
expect_error "transpose: a short ffn.bin" "ffn.bin" model transpose "$M"
mv "$WORK/ffn.bin.keep" "$M/ffn.bin"
cp "$M/ffn.bin" "$WORK/ffn.bin.keep"
printf '\x7f' | dd of="$M/ffn.bin" bs=1 seek=$((4096 * 3 + 5)) conv=notrunc status=none
expect_error "transpose: a damaged bundle" "layer 0 neuron 3" model transpose "$M"
mv "$WORK/ffn.bin.keep" "$M/ffn.bin"
check "nothing written by the refusals" test ! -e "$M/ffn_t.bin" -a ! -e "$WORK/r-no-cal" -a ! -e "$WORK/r-no-t"
check "model.json untouched" test "$(md5sum <"$M/model.json")" = "$before"
check "no temporary left" bash -c "! ls '$M' | grep -q tmp"

# ---- model transpose: the file and its record
for m in "$M" "$WORK/m-f16" "$WORK/o-bf16"; do
    check "transpose $m" "$FLASHBED" model transpose "$m"
done
rec() { json_get "$M/model.json" "d['ffn_transposed']$1"; }
check "the record: file, dtype, strides, size" test "$(rec "['file']") $(rec "['dtype']") $(rec "['chan_stride']") $(rec "['down_stride']") $(rec "['bytes']")" = \
    "ffn_t.bin f32 4096 4096 $(stat -c %s "$M/ffn_t.bin")"
check "the record: derived from ffn.bin, provenance" test "$(rec "['derived_from']['file']") $(rec "['provenance']['git_commit'] != ''")" = "ffn.bin True"
check "the model still opens" "$FLASHBED" generate --model "$M" --prompt "$P" -n 2
before=$(md5sum <"$M/ffn_t.bin")
expect_error "transpose again without --force" "--force" model transpose "$M"
check "transpose --force" "$FLASHBED" model transpose "$M" --force
check "the same file again" test "$(md5sum <"$M/ffn_t.bin")" = "$before"

# ---- the same tokens and logits as the DRAM path; exact counts per stream
IDS="1 5 9 13 17 21"
for m in "$M" "$WORK/m-f16" "$WORK/o-bf16"; do
    for case in "predictor 0" "window:3 0" "lru 150" "lfu 150" "window:2 150"; do
        set -- $case
        checks=$((checks + 1))
        if ! out=$("$TEAL" "$m" "$1" "$2" 12 $IDS 2>&1); then
            fail "$(basename "$m") $1 budget $2%: $out"
        fi
    done
done
out=$("$TEAL" "$M" predictor 0 12 $IDS 2>&1)
check "predictor: the unkept counts checked" grep -q "unkept counts: exact" <<<"$out"

# ---- run --active teal from the command line: generate's tokens, run.json
check "run --active teal" "$FLASHBED" run --model "$M" --active teal --mode predictor --prompt "$P" -n 16 --ignore-eos \
    --threads 1 --io-threads 4 --out "$WORK/run" --quiet
R="$WORK/run/run.json"
check "run.json: layout transposed" test "$(json_get "$R" "d['summary']['layout'], d['provenance']['policy']['layout']")" = "transposed transposed"
check "run.json: the streams add up" test "$(json_get "$R" "all(t['bytes_read'] == t['chan_bytes'] + t['down_bytes'] and t['reads'] == t['chan_reads'] + t['down_reads'] for t in d['tokens'])")" = True
check "run.json: predictor reads every kept channel" test "$(json_get "$R" "all(t['chan_reads'] == t['kept_channels'] for t in d['tokens'])")" = True
check "run.md names the streams" grep -q "streams (ffn_t.bin)" "$WORK/run/run.md"
check "tokens.csv has the streams" grep -q "chan_bytes,chan_reads,down_bytes,down_reads,kept_channels" "$WORK/run/tokens.csv"
ids() { json_get "$1/run.json" "[t['id'] for t in d['tokens']]"; }
check "run --mode all (window) --dram-budget: same tokens" "$FLASHBED" run --model "$M" --active teal --window 3 \
    --dram-budget 90% --prompt "$P" -n 16 --ignore-eos --threads 2 --out "$WORK/run-all" --quiet
check "same tokens under both policies" test "$(ids "$WORK/run-all")" = "$(ids "$WORK/run")"
check "a budget holds the caches" test "$(json_get "$WORK/run-all/run.json" "d['summary']['transposed']['chan_capacity_rows_per_layer'] > 0")" = True

# ---- refusals, each in one line, nothing left behind
expect_error "teal with another layout" "--layout transposed" run --model "$M" --active teal --layout bundled --prompt "$P" -n 4 --out "$WORK/x1"
expect_error "transposed without teal" "--active teal" run --model "$M" --layout transposed --prompt "$P" -n 4 --out "$WORK/x2"
expect_error "teal with naive" "reads every row" run --model "$M" --active teal --mode naive --prompt "$P" -n 4 --out "$WORK/x3"
expect_error "teal with hot" "sets known beforehand" run --model "$M" --active teal --policy hot --dram-budget 90% --prompt "$P" -n 4 --out "$WORK/x4"
expect_error "teal with window:auto" "give --window K" run --model "$M" --active teal --policy window:auto --dram-budget 90% --prompt "$P" -n 4 --out "$WORK/x5"
expect_error "teal on sim" "cpu backend only" run --model "$M" --active teal --backend sim --prompt "$P" -n 4 --out "$WORK/x6"
expect_error "teal with --check" "--check" run --model "$M" --active teal --check --prompt "$P" -n 4 --out "$WORK/x7"
expect_error "teal, a budget too small" "DRAM budget" run --model "$M" --active teal --dram-budget 10% --prompt "$P" -n 4 --out "$WORK/x9"
check "nothing left behind" bash -c "! ls '$WORK' | grep -q '^x'"

# ---- stories260K, when the shared data has it
SRC="$FLASHBED_DATA/models/stories260K"
if [ -f "$SRC/stories260K.bin" ] && [ -f "$SRC/tok512.bin" ]; then
    S="$WORK/stories"
    check "convert stories260K" "$FLASHBED" convert "$SRC/stories260K.bin" --tokenizer "$SRC/tok512.bin" --out "$S"
    check "calibrate stories260K" "$FLASHBED" sparsify calibrate --model "$S" --text "$FLASHBED_DATA/corpus/tinystories_sample.txt" \
        --sparsity 0.5 --tokens 1000 --threads 1
    check "transpose stories260K" "$FLASHBED" model transpose "$S"
    for case in "predictor 0" "window:3 0" "lru 90"; do
        set -- $case
        checks=$((checks + 1))
        if ! out=$("$TEAL" "$S" "$1" "$2" 24 1 403 407 261 102 2>&1); then
            fail "stories260K $1 budget $2%: $out"
        fi
    done
    # greedy both (generate's default temperature is 1), each to its own end of text
    out_g=$("$FLASHBED" generate --model "$S" --active teal --temperature 0 --prompt "Once upon a time" -n 40 2>/dev/null)
    out_r=$("$FLASHBED" run --model "$S" --active teal --window 3 --prompt "Once upon a time" -n 40 --threads 1 \
        --out "$WORK/srun" 2>/dev/null)
    check "stories260K: generate --active teal writes text" test -n "$out_g"
    check "stories260K: run's text is generate's" test "$out_g" = "$out_r"
else
    echo "stories260K not found under FLASHBED_DATA=${FLASHBED_DATA:-}: its part skipped"
fi

finish
