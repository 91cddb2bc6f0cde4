#!/usr/bin/env bash
# run --active teal --record (issue 33) on synthetic models (llama-tiny in
# f32: SwiGLU; opt-tiny in bf16: ReLU without a gate): the trace holds, per
# token and layer, the input channels the run kept (channel sets) and the
# rows of down it kept (active sets, no predicted ones), its source naming
# teal and the sparsify file; replay --layout transposed of it with the
# run's policy, at the engine's strides (--row-stride aligned) and the
# run's cache budget, counts per token exactly the engine's bytes, reads,
# hits and needed rows of each stream and its rows inserted (predictor,
# window:K, lru and lfu, with and without budgets: lib_teal.sh). The
# refusals, each in one line. And docs/sparsity.md's recipe: sparsify calibrate,
# model transpose, run --active teal --record, replay --layout transposed,
# predict --layout transposed --trace (predict --compare of a teal run
# refused in one line, nothing written).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_teal.sh"

words=(the a cat dog sat on mat ran to park and saw big small red blue bird tree house girl boy mom dad happy day)
RANDOM=7
for i in $(seq 900); do printf '%s ' "${words[RANDOM % ${#words[@]}]}"; done >"$WORK/text.txt"
P="the cat sat on the mat and the dog"

# ---- docs/sparsity.md's recipe (Input sparsity on flash, step by step)
check "model make llama-tiny" "$FLASHBED" model make --arch llama --shape llama-tiny --seed 5 --out "$WORK/hf"
check "convert f32" "$FLASHBED" convert "$WORK/hf" --dtype f32 --out "$WORK/m"
M="$WORK/m"
check "sparsify calibrate" "$FLASHBED" sparsify calibrate --model "$M" --text "$WORK/text.txt" --sparsity 0.5 \
    --tokens 300 --threads 1
check "model transpose" "$FLASHBED" model transpose "$M"

# ---- the engine against the replay, per token and stream
for case in "pred predictor" "win3 window:3" "lru13 lru 1300K" "lru16 lru 1600K" "lru22 lru 2200K" \
    "win2 window:2 1600K" "lfu16 lfu 1600K"; do
    set -- $case
    teal_crosscheck "$M" "$1" "$2" "${3:-}" "$P" 20
done

# ---- what the trace holds
R="$WORK/lru16"
T="$WORK/lru16.trace"
info=$("$FLASHBED" trace info "$T" 2>&1)
check "trace info: channel sets, no predicted sets" bash -c 'grep -q "^  channel sets: yes" <<<"$1" && grep -q "^  predicted sets: no" <<<"$1"' _ "$info"
check "trace: a token per run row" test "$(grep -o "tokens: [0-9]*" <<<"$info")" = "tokens: $(json_get "$R/run.json" "len(d['tokens'])")"
src() { "$FLASHBED" trace info "$1" | sed -n 's/^  source: //p' | python3 -c "import json,sys; d=json.load(sys.stdin); print($2)"; }
check "source: chosen by teal and its file" test "$(src "$T" "d['active'], d['layout'], d['chosen_by'].startswith('teal: '), d['sparsify']")" = \
    "teal transposed True $M/sparsify.json"
check "source: the sets are what the run kept" test "$(src "$T" "'rows of down the run kept' in d['active_sets'] and 'input channels the run kept' in d['channel_sets']")" = True
cp "$M/sparsify.json" "$WORK/cal.json"
check "--sparsify FILE recorded" "$FLASHBED" run --model "$M" --active teal --sparsify "$WORK/cal.json" --policy lru \
    --dram-budget 1600K --prompt "$P" -n 4 --threads 1 --record "$WORK/cal.trace" --out "$WORK/cal" --quiet
check "source: that file" test "$(src "$WORK/cal.trace" "d['sparsify'], d['chosen_by'].endswith('($WORK/cal.json); nothing held beside the FFN')")" = "$WORK/cal.json True"
check "the same run records the same sets" test "$(md5sum <"$WORK/cal.trace")" = \
    "$("$FLASHBED" run --model "$M" --active teal --sparsify "$WORK/cal.json" --policy lru --dram-budget 1600K \
        --prompt "$P" -n 4 --threads 1 --record "$WORK/cal2.trace" --out "$WORK/cal2" --quiet 2>/dev/null; md5sum <"$WORK/cal2.trace")"

# ---- the strides matter: packed rows at the same bytes hold more and read fewer bytes
C=$(json_get "$R/run.json" "int(d['summary']['transposed']['cache_budget_bytes'])")
check "packed replay" "$FLASHBED" replay --trace "$T" --policy lru --layout transposed --dram-budget "${C}B" --use actual \
    --out "$WORK/packed" --quiet
check "packed: fewer bytes than the run read" test "$(json_get "$WORK/packed/replay.json" "d['results'][0]['bytes_total']")" -lt \
    "$(json_get "$R/run.json" "int(sum(t['bytes_read'] for t in d['tokens']))")"
check "aligned: the run's bytes" test "$(json_get "$R/replay/replay.json" "d['results'][0]['bytes_total']")" = \
    "$(json_get "$R/run.json" "int(sum(t['bytes_read'] for t in d['tokens']))")"
check "aligned: replay.json says the alignment" test "$(json_get "$R/replay/replay.json" "d['provenance']['parameters']['row_align']")" = 4096

# ---- refusals, each in one line, nothing written
expect_error "a neuron layout on the recorded trace" "only layout transposed reads" replay --trace "$T" --policy lru \
    --layout bundled --out "$WORK/bad1"
expect_error "--read-align past the rows' alignment" "a power of two dividing the row stride (4096 bytes)" replay --trace "$T" --policy lru \
    --layout transposed --row-stride aligned --read-align 8192 --out "$WORK/bad2"
expect_error "--read-align with packed rows" "packed: --read-align 0" replay --trace "$T" --policy lru \
    --layout transposed --read-align 512 --out "$WORK/bad3"
expect_error "--row-stride not a power of two" "a power of two from 2 bytes" replay --trace "$T" --policy lru \
    --layout transposed --row-stride 3000 --out "$WORK/bad4"
check "the refusals wrote nothing" bash -c "! ls '$WORK' | grep -q '^bad'"

# ---- predict from the recorded trace; --compare of the teal run refused
check "predict --layout transposed --trace" "$FLASHBED" predict --model llama-tiny --layout transposed --trace "$T" \
    --policy lru --predictor-rank none --out "$WORK/predict"
check "predict prices both streams from the trace" test "$(json_get "$WORK/predict/predict.json" "(lambda p: p['layout'] == 'transposed' and p['prediction']['bytes_per_token'] > 0 and 'replay of' in p['volume_source'])(d['predictions'][0])")" = True
expect_error "predict --compare of a teal run" "is a run of input sparsity (--active teal, layout transposed), which the cost model does not price" \
    predict --model llama-tiny --layout transposed --trace "$T" --policy lru --predictor-rank none \
    --compare "$R/run.json" --out "$WORK/bad-compare"
check "--compare refused before writing" test ! -e "$WORK/bad-compare"

# ---- a ReLU FFN without a gate (bf16): one bundle column per channel
check "model make opt-tiny" "$FLASHBED" model make --arch opt --shape opt-tiny --seed 3 --relu-density 0.3 --out "$WORK/ohf"
check "convert opt bf16" "$FLASHBED" convert "$WORK/ohf" --dtype bf16 --out "$WORK/o"
check "calibrate opt" "$FLASHBED" sparsify calibrate --model "$WORK/o" --text "$WORK/text.txt" --sparsity 0.5 \
    --tokens 300 --threads 1 --kind input
check "transpose opt" "$FLASHBED" model transpose "$WORK/o"
teal_crosscheck "$WORK/o" opt-win3 window:3 "" "$P" 16
teal_crosscheck "$WORK/o" opt-lru lru 90% "$P" 16

finish
