#!/usr/bin/env bash
# flashbed predictor train|eval (issue 13) on a synthetic ReLU OPT: a
# full-rank SVD start is an exact predictor (recall 1, the predicted sets
# the true ones, dense's tokens); the training's provenance lands in
# model.json; eval.json has its keys; same seed, same bits (1 and 2
# threads); Ctrl-C keeps the best epoch and writes it; bad input is refused
# with nothing written; --force replaces. Then stories260K (SwiGLU, with
# --act-threshold) when the shared data is there, checked loosely.
source "$(dirname "$0")/lib.sh"

check "model make opt-tiny" "$FLASHBED" model make --arch opt --shape opt-tiny --relu-density 0.15 --seed 3 --out "$WORK/hf"
check "convert" "$FLASHBED" convert "$WORK/hf" --out "$WORK/m"
cp -r "$WORK/m" "$WORK/clean" # a folder without a predictor, for the refusals

# A text of ordinary words (the synthetic tokenizer spells them out), fixed by the seed.
words=(the a cat dog sat on mat ran to park and saw big small red blue bird tree house girl boy mom dad happy day)
RANDOM=7
for i in $(seq 1200); do
    printf '%s ' "${words[RANDOM % ${#words[@]}]}"
    [ $((RANDOM % 10)) -eq 0 ] && printf '.\n'
done >"$WORK/text.txt"
TEXT="$WORK/text.txt"
M="$WORK/m"

# ---- an exact predictor: rank 64 = d_model, the SVD start, no training
check "train --init svd --epochs 0 at full rank" "$FLASHBED" predictor train --model "$M" --text "$TEXT" \
    --tokens 400 --rank 64 --init svd --epochs 0 --threads 1
check "predictor.safetensors written" test -f "$M/predictor.safetensors"
training() { json_get "$M/model.json" "d['predictor']['training']$1"; }
check "training provenance: the text's sha256" test "$(training "['text_sha256']")" = "$(sha256sum "$TEXT" | cut -d' ' -f1)"
check "training provenance: tokens, epochs, init, seed" \
    test "$(training "['tokens'], d['predictor']['training']['epochs'], d['predictor']['training']['init'], d['predictor']['training']['seed']")" = "400 0 svd 1"
check "training provenance: the SVD's iterations (the default)" test "$(training "['svd_iterations']")" = 6
check "training provenance: loss and recall per layer" test "$(training "['loss'].__len__(), d['predictor']['training']['recall'].__len__()")" = "2 2"
check "validation recall 1 at full rank" test "$(training "['recall'] == [1, 1]")" = True
check "ranks recorded" test "$(json_get "$M/model.json" 'd["predictor"]["ranks"]')" = "[64, 64]"

E="$WORK/eval"
check "eval" "$FLASHBED" predictor eval --model "$M" --text "$TEXT" --skip 400 --tokens 300 --out "$E" \
    --gen-tokens 8 --threads 1
check "eval.json, eval.md, fig9a.csv" test -f "$E/eval.json" -a -f "$E/eval.md" -a -f "$E/fig9a.csv"
check "eval.json: layers with their keys" test "$(json_get "$E/eval.json" 'all(set(("layer","true_density","predicted_density","recall","false_negative_rate","false_positive_rate")) <= set(l) for l in d["layers"]) and len(d["layers"])')" = 2
check "eval.json: top-level keys" test "$(json_get "$E/eval.json" 'all(k in d for k in ("perplexity_dense","perplexity_predictor","greedy_agreement","provenance"))')" = True
check "exact predictor: recall 1, no false positives" test "$(json_get "$E/eval.json" 'all(l["recall"] == 1 and l["false_positive_rate"] == 0 for l in d["layers"])')" = True
check "true density near the planted 15%" test "$(json_get "$E/eval.json" 'all(0.08 < l["true_density"] < 0.25 for l in d["layers"])')" = True
check "perplexity with the predictor = dense's" test "$(json_get "$E/eval.json" 'abs(d["perplexity_predictor"] / d["perplexity_dense"] - 1) < 1e-4')" = True
check "greedy agreement 1" test "$(json_get "$E/eval.json" 'd["greedy_agreement"] == 1')" = True
check "the text's tokens scored" test "$(json_get "$E/eval.json" 'd["tokens"]')" = 300

# ---- --force replaces; without it nothing changes
sum_m() { cat "$M/model.json" "$M/predictor.safetensors" | md5sum; }
before=$(sum_m)
expect_error "an existing predictor without --force" "already has a predictor" predictor train --model "$M" \
    --text "$TEXT" --tokens 400 --rank 8
check "nothing written" test "$(sum_m)" = "$before"
check "--force replaces (rank 8, trained, f16)" "$FLASHBED" predictor train --model "$M" --text "$TEXT" --tokens 400 \
    --rank 8 --epochs 2 --dtype f16 --svd-iterations 1 --threads 1 --force
check "the new ranks and dtype" test "$(json_get "$M/model.json" 'd["predictor"]["ranks"], d["predictor"]["dtype"]')" = "[8, 8] f16"
check "the new SVD iterations" test "$(training "['svd_iterations']")" = 1
check "eval runs on it, with --plot when gnuplot is here" bash -c "'$FLASHBED' predictor eval --model '$M' --text '$TEXT' \
    --skip 400 --tokens 100 --out '$WORK/eval8' --gen-tokens 0 --threads 1 $(command -v gnuplot >/dev/null && echo --plot) >/dev/null"
if command -v gnuplot >/dev/null; then
    check "fig9a.png drawn" test -s "$WORK/eval8/fig9a.png"
fi

# ---- --target-recall: per-layer thresholds, recorded, and used by eval and run
cp -r "$WORK/clean" "$WORK/tr"
check "train --target-recall 0.9" "$FLASHBED" predictor train --model "$WORK/tr" --text "$TEXT" --tokens 400 \
    --rank 8 --epochs 2 --target-recall 0.9 --threads 1
check "model.json: a threshold per layer and the target" \
    test "$(json_get "$WORK/tr/model.json" 'len(d["predictor"]["thresholds"]), d["predictor"]["target_recall"], "threshold" in d["predictor"]')" = "2 0.9 False"
check "validation recall at least the target in every layer" \
    test "$(json_get "$WORK/tr/model.json" 'all(r >= 0.9 for r in d["predictor"]["training"]["recall"])')" = True
check "eval says the thresholds are per layer" bash -c "'$FLASHBED' predictor eval --model '$WORK/tr' --text '$TEXT' \
    --skip 400 --tokens 60 --out '$WORK/evaltr' --gen-tokens 0 --threads 1 >/dev/null && grep -q 'per layer .* (recall 0.9 on held-out rows)' '$WORK/evaltr/eval.md'"
expect_error "--target-recall with --threshold" "--target-recall: chooses each layer's threshold" \
    predictor train --model "$WORK/clean" --text "$TEXT" --tokens 100 --rank 8 --target-recall 0.9 --threshold 0.3

# ---- determinism: the same seed gives the same bits, on 1 and 2 threads
for t in 1 2; do
    cp -r "$WORK/clean" "$WORK/det$t"
    FLASHBED_MIN_PARALLEL_WORK=0 "$FLASHBED" predictor train --model "$WORK/det$t" --text "$TEXT" --tokens 300 \
        --rank 16 --init random --epochs 3 --seed 9 --threads $t >/dev/null 2>&1
done
check "same seed, 1 and 2 threads: identical weights" cmp -s "$WORK/det1/predictor.safetensors" "$WORK/det2/predictor.safetensors"

# ---- Ctrl-C during training keeps the best epoch so far and writes it
cp -r "$WORK/clean" "$WORK/int"
# the interrupt must land in training: wait for epoch 0's line on stderr (the start, evaluated), then Ctrl-C
"$FLASHBED" predictor train --model "$WORK/int" --text "$TEXT" --tokens 300 --rank 8 \
    --epochs 100000 --threads 1 >/dev/null 2>"$WORK/int.log" &
pid=$!
for _ in $(seq 1 600); do
    grep -q "^epoch 0/" "$WORK/int.log" 2>/dev/null && break
    sleep 0.1
done
kill -INT $pid
wait $pid
check "interrupted: exit 130" test $? -eq 130
check "interrupted: the best epochs written" test "$(json_get "$WORK/int/model.json" 'd["predictor"]["training"]["interrupted"]')" = True

# ---- bad input: a clear error naming the option, nothing written
C="$WORK/clean"
expect_error "rank above min(d_model, d_ff)" "--rank: 65 is more than min(d_model 64, d_ff 256)" \
    predictor train --model "$C" --text "$TEXT" --tokens 100 --rank 65
expect_error "a text shorter than asked" "--tokens: .*text.txt has [0-9]* tokens" \
    predictor train --model "$C" --text "$TEXT" --tokens 1000000 --rank 8
expect_error "bad --rank-layers syntax" "--rank-layers: '0-:4'" \
    predictor train --model "$C" --text "$TEXT" --tokens 100 --rank 8 --rank-layers 0-:4
expect_error "--rank-layers past the last layer" "--rank-layers: '1-2:4': layer 2 is past" \
    predictor train --model "$C" --text "$TEXT" --tokens 100 --rank 8 --rank-layers 1-2:4
expect_error "--act-threshold on a ReLU FFN" "--act-threshold" \
    predictor train --model "$C" --text "$TEXT" --tokens 100 --rank 8 --act-threshold 0.1
expect_error "--tokens is required" "needs --model DIR, --text FILE and --tokens N" \
    predictor train --model "$C" --text "$TEXT"
EXPECT_RC=2 expect_error "--init must be svd or random" "init" \
    predictor train --model "$C" --text "$TEXT" --tokens 100 --init pca
expect_error "a missing text" "--text: .*nope.txt: cannot open" \
    predictor train --model "$C" --text "$WORK/nope.txt" --tokens 100 --rank 8
cp -r "$WORK/clean" "$WORK/noffn"
rm "$WORK/noffn/ffn.bin"
expect_error "a model folder without FFN weights" "ffn.bin" \
    predictor train --model "$WORK/noffn" --text "$TEXT" --tokens 100 --rank 8
expect_error "eval of a model without a predictor" "has no predictor" \
    predictor eval --model "$C" --text "$TEXT" --out "$WORK/eval-none"
check "nothing written into the clean folder" bash -c "! ls '$C' | grep -q predictor && ! grep -q '\"predictor\"' '$C/model.json'"
check "nor into the one without ffn.bin" bash -c "! ls '$WORK/noffn' | grep -q predictor"

# ---- stories260K: a real SwiGLU model, loosely
SRC="$FLASHBED_DATA/models/stories260K"
STORIES="$FLASHBED_DATA/corpus/tinystories_sample.txt"
if [ ! -f "$SRC/stories260K.bin" ] || [ ! -f "$STORIES" ]; then
    echo "skipped the stories260K part: not found under FLASHBED_DATA=$FLASHBED_DATA"
    finish
fi
S="$WORK/s260"
check "convert stories260K" "$FLASHBED" convert "$SRC/stories260K.bin" --tokenizer "$SRC/tok512.bin" --out "$S"
expect_error "GLU needs --act-threshold" "--act-threshold: .* is zero almost nowhere" \
    predictor train --model "$S" --text "$STORIES" --tokens 300 --rank 16
check "train on 300 tokens with --act-threshold" "$FLASHBED" predictor train --model "$S" --text "$STORIES" \
    --tokens 300 --act-threshold 0.1 --rank 16 --epochs 3 --threads 1
check "target glu_abs recorded with its threshold" test "$(json_get "$S/model.json" 'd["predictor"]["target"], round(d["predictor"]["act_threshold"], 6)')" = "glu_abs 0.1"
check "eval stories260K" "$FLASHBED" predictor eval --model "$S" --text "$STORIES" --skip 300 --tokens 200 \
    --out "$WORK/s-eval" --gen-tokens 4 --threads 1
check "dense perplexity sane, recall and densities in [0, 1]" test "$(json_get "$WORK/s-eval/eval.json" '2 < d["perplexity_dense"] < 12 and d["perplexity_predictor"] > 1 and all(0 <= l[k] <= 1 for l in d["layers"] for k in ("recall","true_density","predicted_density"))')" = True
finish
