#!/usr/bin/env bash
# flashbed sparsify study (issue 33) on a synthetic SwiGLU llama-tiny with a
# trained predictor in its folder: every cell's perplexity JSON exists, the
# report's table has a row per cell, dense's bytes are the model's dense FFN
# bytes, teal at sparsity 0 is dense, the calibration text is scored past
# its calibration tokens, the model folder is only read, a second run skips
# every finished step, Ctrl-C keeps the finished ones; without a predictor
# the predictor is left out; bad input is refused before anything runs,
# naming the option, nothing written.
source "$(dirname "$0")/lib.sh"

check "model make llama-tiny" "$FLASHBED" model make --arch llama --shape llama-tiny --seed 5 --out "$WORK/hf"
check "convert" "$FLASHBED" convert "$WORK/hf" --dtype f32 --out "$WORK/m"
check "model make opt-tiny (no GLU)" "$FLASHBED" model make --arch opt --shape opt-tiny --seed 3 --out "$WORK/ohf"
check "convert it" "$FLASHBED" convert "$WORK/ohf" --dtype f32 --out "$WORK/opt"
words=(the a cat dog sat on mat ran to park and saw big small red blue bird tree house girl boy mom dad happy day)
RANDOM=7
for f in calib other; do
    for i in $(seq 900); do
        printf '%s ' "${words[RANDOM % ${#words[@]}]}"
        [ $((RANDOM % 10)) -eq 0 ] && printf '.\n'
    done >"$WORK/$f.txt"
done
cp -r "$WORK/m" "$WORK/mp"
check "a predictor in a copy" "$FLASHBED" predictor train --model "$WORK/mp" --text "$WORK/calib.txt" --tokens 300 \
    --rank 8 --epochs 2 --act-threshold 0.05 --threads 1
M="$WORK/mp"
S="$WORK/study"
ARGS=(sparsify study --model "$M" --text "$WORK/calib.txt,$WORK/other.txt" --calibration-text "$WORK/calib.txt"
      --calibration-tokens 300 --tokens 200 --sparsities 0,0.5 --predictor-thresholds 0.5 --out "$S")
study() { "$FLASHBED" "${ARGS[@]}" "$@"; }
sums() { find "$M" -type f | sort | xargs md5sum; }
before=$(sums)

# ---- bad input: refused before anything runs, nothing written
expect_error "no GLU" "sparsify study --model: .*no gate projection; the study needs a GLU FFN" sparsify study \
    --model "$WORK/opt" --text "$WORK/calib.txt" --calibration-text "$WORK/calib.txt" --out "$S"
expect_error "a sparsity of 1" "sparsify study --sparsities: '1' is not a number in \[0, 1)" "${ARGS[@]}" --sparsities 0.5,1
expect_error "a sparsity below 0" "sparsify study --sparsities: '-0.1'" "${ARGS[@]}" --sparsities -0.1
expect_error "a predictor threshold above 1" "sparsify study --predictor-thresholds: '1.5'" "${ARGS[@]}" \
    --predictor-thresholds 1.5
expect_error "a text missing" "sparsify study --text: $WORK/none.txt: no such file" sparsify study --model "$M" \
    --text "$WORK/none.txt" --calibration-text "$WORK/calib.txt" --out "$S"
expect_error "the calibration text missing" "sparsify study --calibration-text: $WORK/none.txt: no such file" \
    sparsify study --model "$M" --text "$WORK/other.txt" --calibration-text "$WORK/none.txt" --out "$S"
expect_error "too few calibration tokens" "sparsify study --calibration-tokens: .*calib.txt has [0-9]* tokens, 100000" \
    "${ARGS[@]}" --calibration-tokens 100000
mkdir -p "$WORK/mine" && echo keep >"$WORK/mine/notes.txt"
expect_error "--out a folder of the user's" "sparsify study --out: $WORK/mine is not empty and is not a study's" \
    sparsify study --model "$M" --text "$WORK/other.txt" --calibration-text "$WORK/calib.txt" --out "$WORK/mine"
check "its file kept" test "$(cat "$WORK/mine/notes.txt")" = keep
expect_error "predictor thresholds for a folder without a predictor" "sparsify study --predictor-thresholds: .*has no activation predictor" \
    sparsify study --model "$WORK/m" --text "$WORK/other.txt" --calibration-text "$WORK/calib.txt" \
    --predictor-thresholds 0.5 --out "$S"
check "nothing written" test ! -e "$S"

# ---- the study: every cell, the model folder only read
check "sparsify study" study
check "the model folder untouched" test "$(sums)" = "$before"
check "thresholds under --out" test -s "$S/sparsity/thresholds/s50.json" -a -s "$S/sparsity/thresholds/s00.json"
cells="dense gate-s00 gate-s50 gate-cal-s00 gate-cal-s50 teal-s00 teal-s50 predictor-p50"
for text in calib other; do
    for cell in $cells; do
        check "$text $cell: measured" test "$(json_get "$S/sparsity/$text/$cell.json" 'd["tokens_scored"], d["ms_per_token"] > 0')" = "200 True"
    done
done
cj() { json_get "$S/sparsity/$1.json" "$2"; }
check "dense's bytes: the model's dense FFN bytes (2 x 172 x 3 x 64 x 4)" test "$(cj calib/dense 'd["ffn_bytes_per_token"]')" = $((2 * 172 * 3 * 64 * 4))
for text in calib other; do
    check "$text: teal at 0 is dense's perplexity" test "$(cj $text/teal-s00 'abs(d["perplexity"] / '"$(cj $text/dense 'd["perplexity"]')"' - 1) < 1e-6')" = True
    check "$text: teal at 0 reads dense's bytes" test "$(cj $text/teal-s00 'd["ffn_bytes_per_token"] == d["dense_ffn_bytes_per_token"]')" = True
    check "$text: gate at 0.5 reads about half" test "$(cj $text/gate-s50 '0.3 < d["density"] < 0.7')" = True
done
check "the calibration text scored past its 300 tokens" test "$(cj calib/dense 'd["tokens_skipped"]')" = 300
check "the other text from its start" test "$(cj other/dense 'd["tokens_skipped"]')" = 0
check "gate: the global threshold of the file" test "$(cj other/gate-s50 'd["sparsify_file"].endswith("/sparsity/thresholds/s50.json"), d["calibrated_sparsity"]')" = "True 0.5"
R="$S/REPORT.md"
for text in calib other; do
    check "REPORT.md: the $text table" grep -q "^### .* on $text$" "$R"
    check "REPORT.md: $text's 8 rows" test "$(sed -n "/^### .* on $text\$/,/^!\[/p" "$R" | grep -c '^| [a-z-]* | [^s]')" = 8
    check "REPORT.md: dense's row, its MB" grep -q "^| dense | every neuron | 100.0% | — | 0.264 | 100.0% |" "$R"
done
check "REPORT.md: the predictor's rows" test "$(grep -c '^| predictor | P > 0.5 |' "$R")" = 2
if command -v gnuplot >/dev/null; then
    check "the plot" test -s "$S/sparsity/other-quality.png"
    check "REPORT.md shows it" grep -q "(sparsity/other-quality.png)" "$R"
fi

# ---- resume: the same command runs nothing again
stamps=$(ls -l --time-style=full-iso "$S/steps")
out=$(study 2>&1)
check "resume: every step done before" grep -q "0 steps run, 18 done before" <<<"$out"
check "resume: no marker rewritten" test "$(ls -l --time-style=full-iso "$S/steps")" = "$stamps"
expect_error "resume with other settings" "sparsify study: .*other" "${ARGS[@]}" --tokens 100

# ---- a folder without a predictor: the predictor left out
check "sparsify study, no predictor" "$FLASHBED" sparsify study --model "$WORK/m" --text "$WORK/other.txt" \
    --calibration-text "$WORK/calib.txt" --calibration-tokens 300 --tokens 100 --sparsities 0.5 --out "$WORK/s2"
check "no predictor cell" test "$(ls "$WORK/s2/sparsity/other")" = "$(printf '%s\n' dense.json gate-cal-s50.json gate-s50.json teal-s50.json)"
check "no predictor row" bash -c "! grep -q '^| predictor' '$WORK/s2/REPORT.md'"
check "the model folder has no sparsify.json" test ! -e "$WORK/m/sparsify.json"

# ---- Ctrl-C: the finished steps kept, the same command resumes
I="$WORK/interrupted"
"$FLASHBED" sparsify study --model "$WORK/m" --text "$WORK/other.txt,$WORK/calib.txt" --calibration-text "$WORK/calib.txt" \
    --calibration-tokens 300 --tokens 300 --sparsities 0,0.25,0.5,0.7 --out "$I" >"$WORK/int.log" 2>&1 &
pid=$!
for _ in $(seq 400); do [ "$(ls "$I/steps" 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.02; done
kill -INT $pid
wait $pid
rc=$?
check "interrupted: exit 130" test $rc = 130
kept=$(ls "$I/steps" | wc -l)
check "interrupted: some steps finished, kept, not all (30)" test "$kept" -ge 2 -a "$kept" -lt 30
check "interrupted: says so" grep -q "interrupted: .* steps finished this time, kept" "$WORK/int.log"
out=$("$FLASHBED" sparsify study --model "$WORK/m" --text "$WORK/other.txt,$WORK/calib.txt" \
    --calibration-text "$WORK/calib.txt" --calibration-tokens 300 --tokens 300 --sparsities 0,0.25,0.5,0.7 --out "$I" 2>&1)
check "resumed: the kept steps not run again" grep -q "$((30 - kept)) steps run, $kept done before" <<<"$out"
finish
