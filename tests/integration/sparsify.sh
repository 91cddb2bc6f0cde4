#!/usr/bin/env bash
# flashbed sparsify calibrate and the sources that use it (issue 33) on a
# synthetic SwiGLU llama-tiny: sparsify.json's keys and provenance;
# perplexity and generate with --active gate-cal and teal report density
# and exact bytes per token; teal at sparsity 0 is dense; gate-cal with
# every threshold T is --active gate --threshold T; run takes gate-cal and
# refuses teal without ffn_t.bin; bad input refused, naming the option or file and key, with
# nothing written. calibrate --out FILE leaves the folder's file alone;
# --sparsify FILE on perplexity, generate and run (gate: the file's global
# threshold, as --threshold of it; --threshold wins), recorded in the JSON;
# perplexity --skip scores N fewer tokens, ms_per_token in its JSON.
source "$(dirname "$0")/lib.sh"

check "model make llama-tiny" "$FLASHBED" model make --arch llama --shape llama-tiny --seed 5 --out "$WORK/hf"
check "convert" "$FLASHBED" convert "$WORK/hf" --dtype f32 --out "$WORK/m"
check "model make llama-tiny (another seed)" "$FLASHBED" model make --arch llama --shape llama-tiny --seed 6 --out "$WORK/hf2"
check "convert it" "$FLASHBED" convert "$WORK/hf2" --dtype f32 --out "$WORK/m2"
check "model make opt-tiny (no GLU)" "$FLASHBED" model make --arch opt --shape opt-tiny --seed 3 --out "$WORK/ohf"
check "convert it" "$FLASHBED" convert "$WORK/ohf" --dtype f32 --out "$WORK/opt"

words=(the a cat dog sat on mat ran to park and saw big small red blue bird tree house girl boy mom dad happy day)
RANDOM=7
for i in $(seq 1200); do
    printf '%s ' "${words[RANDOM % ${#words[@]}]}"
    [ $((RANDOM % 10)) -eq 0 ] && printf '.\n'
done >"$WORK/text.txt"
head -c 200 "$WORK/text.txt" >"$WORK/short.txt"
TEXT="$WORK/text.txt"
M="$WORK/m"
S="$M/sparsify.json"
sj() { json_get "$S" "$1"; }

# ---- bad input: each refused, nothing written
expect_error "--sparsity 1" "sparsity" sparsify calibrate --model "$M" --text "$TEXT" --sparsity 1
expect_error "--sparsity -0.1" "sparsity" sparsify calibrate --model "$M" --text "$TEXT" --sparsity -0.1
expect_error "no --sparsity" "--sparsity S" sparsify calibrate --model "$M" --text "$TEXT"
expect_error "a text too short" "short.txt has .* tokens, the calibration needs 400" sparsify calibrate --model "$M" \
    --text "$WORK/short.txt" --sparsity 0.5 --tokens 400
expect_error "--kind gate without a GLU" "no gate projection" sparsify calibrate --model "$WORK/opt" --text "$TEXT" \
    --sparsity 0.5 --kind gate --tokens 100
expect_error "--kind both without a GLU" "no gate projection" sparsify calibrate --model "$WORK/opt" --text "$TEXT" \
    --sparsity 0.5 --tokens 100
check "nothing written" test ! -e "$S" -a ! -e "$WORK/opt/sparsify.json"
check "no temporary left" bash -c "! ls '$M' | grep -q tmp"
expect_error "gate-cal without sparsify.json" "flashbed sparsify calibrate" perplexity --model "$M" --text "$TEXT" \
    --tokens 50 --active gate-cal
expect_error "an unknown kind" "kind" sparsify calibrate --model "$M" --text "$TEXT" --sparsity 0.5 --kind down

# ---- calibrate: the file, its provenance
check "calibrate --sparsity 0.5" "$FLASHBED" sparsify calibrate --model "$M" --text "$TEXT" --sparsity 0.5 \
    --tokens 400 --threads 1
check "the target, kind, tokens" test "$(sj 'd["sparsity"], d["kind"], d["tokens"]')" = "0.5 both 400"
check "the text's name and sha256" test "$(sj 'd["text"], d["text_sha256"]')" = "$TEXT $(sha256sum "$TEXT" | cut -d' ' -f1)"
check "the model's identity" test "$(sj 'd["model"]["n_layers"], d["model"]["d_model"], d["model"]["d_ff"], d["model"]["dtype"], len(d["model"]["fingerprint_sha256"])')" = "2 64 172 f32 64"
check "per-layer thresholds" test "$(sj 'len(d["gate"]["thresholds"]), len(d["input"]["thresholds"]), len(d["input"]["intermediate_thresholds"])')" = "2 2 2"
check "provenance with parameters" test "$(sj 'd["provenance"]["parameters"]["sparsity"], "git_commit" in d["provenance"]')" = "0.5 True"
# A percentage as --dram-budget takes one (issue 47: "50%" was "not a number"): the same thresholds.
check "calibrate --sparsity 50%" "$FLASHBED" sparsify calibrate --model "$M" --text "$TEXT" --sparsity 50% \
    --tokens 400 --threads 1 --out "$WORK/pct.json"
check "50% is 0.5: the same thresholds" test "$(json_get "$WORK/pct.json" 'd["sparsity"], d["gate"]["thresholds"], d["input"]["thresholds"]')" = "$(sj 'd["sparsity"], d["gate"]["thresholds"], d["input"]["thresholds"]')"
expect_error "--sparsity abc%" "write 0.5 or 50%" sparsify calibrate --model "$M" --text "$TEXT" --sparsity abc% --out "$WORK/bad.json"
check "nothing written for it" test ! -e "$WORK/bad.json"
before=$(md5sum <"$S")
expect_error "an existing file without --force" "already has sparsify.json; --force" sparsify calibrate --model "$M" \
    --text "$TEXT" --sparsity 0.7 --tokens 400
check "nothing written" test "$(md5sum <"$S")" = "$before"

# ---- the sources: density and bytes in perplexity and generate
ppl() { "$FLASHBED" perplexity --model "$M" --text "$TEXT" --tokens 300 --threads 1 "$@"; }
check "perplexity dense" ppl --json "$WORK/dense.json"
check "perplexity gate-cal" ppl --active gate-cal --json "$WORK/cal.json"
check "perplexity teal" ppl --active teal --json "$WORK/teal.json"
pj() { json_get "$WORK/$1.json" "$2"; }
check "dense bytes: n_layers x d_ff x 3 x d_model x 4" test "$(pj dense 'd["ffn_bytes_per_token"]')" = $((2 * 172 * 3 * 64 * 4))
check "gate-cal: density near 0.5" test "$(pj cal '0.3 < d["density"] < 0.7')" = True
check "gate-cal: bytes = density x dense" test "$(pj cal 'abs(d["ffn_bytes_per_token"] / d["dense_ffn_bytes_per_token"] - d["density"]) < 1e-12')" = True
check "teal: input density near 0.5" test "$(pj teal '0.3 < d["input_density"] < 0.7 and 0.2 < d["density"] < 0.8')" = True
check "teal: bytes from kept columns and rows" test "$(pj teal 'abs(d["ffn_bytes_per_token"] / d["dense_ffn_bytes_per_token"] - (2 * d["input_density"] + d["density"]) / 3) < 1e-9')" = True
check "teal: the calibrated sparsity recorded" test "$(pj teal 'd["calibrated_sparsity"]')" = 0.5
check "generate teal" "$FLASHBED" generate --model "$M" --prompt "the cat" -n 8 --temperature 0 --active teal \
    --json "$WORK/gen.json" --threads 1
check "generate's summary: density, input density, bytes" test "$(json_get "$WORK/gen.json" 'all(k in d["summary"] for k in ("density", "input_density", "ffn_bytes_per_token"))')" = True
expect_error "--threshold with gate-cal" "leave out --threshold" perplexity --model "$M" --text "$TEXT" --tokens 50 \
    --active gate-cal --threshold 0.1

# ---- run: gate-cal as gate; teal needs ffn_t.bin (teal_flash.sh runs it)
expect_error "run --active teal" "flashbed model transpose" run --model "$M" --prompt "the cat" -n 4 \
    --active teal --out "$WORK/r0"
check "no run folder" test ! -e "$WORK/r0"
check "run --active gate-cal" "$FLASHBED" run --model "$M" --prompt "the cat" -n 6 --mode all --active gate-cal \
    --threads 1 --record "$WORK/r1.trace" --out "$WORK/r1"
check "its trace: the chosen sets, gate-cal and its file named" \
    sh -c '"$1" trace info "$2" | grep "chosen_by" | grep -q "gate-cal: .*sparsify.json"' _ "$FLASHBED" "$WORK/r1.trace"
check "run.json: the per-layer thresholds" test "$(json_get "$WORK/r1/run.json" 'd["summary"]["gate_thresholds"]')" = "$(sj 'd["gate"]["thresholds"]')"

# ---- gate-cal with every threshold T is the gate with T
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['gate']['thresholds']=[0.05,0.05]; json.dump(d,open(sys.argv[1],'w'))" "$S"
check "gate-cal at 0.05 = gate --threshold 0.05" test "$(ppl --active gate-cal | head -2 | cut -c1-60)" = \
    "$(ppl --active gate --threshold 0.05 | head -2 | cut -c1-60)"

# ---- sparsity 0: teal is dense, its bytes dense's
check "calibrate --sparsity 0 --force" "$FLASHBED" sparsify calibrate --model "$M" --text "$TEXT" --sparsity 0 \
    --tokens 400 --threads 1 --force
check "perplexity teal at 0" ppl --active teal --json "$WORK/teal0.json"
check "teal at 0: dense's perplexity" test "$(pj teal0 'abs(d["perplexity"] / '"$(pj dense 'd["perplexity"]')"' - 1) < 1e-6')" = True
check "teal at 0: dense's bytes" test "$(pj teal0 'd["ffn_bytes_per_token"] == d["dense_ffn_bytes_per_token"]')" = True

# ---- another model's thresholds; a file without the kind asked for
cp "$S" "$WORK/m2/"
expect_error "another model's sparsify.json" "sparsify.json: \"model\".\"fingerprint_sha256\"" perplexity \
    --model "$WORK/m2" --text "$TEXT" --tokens 50 --active teal
check "calibrate --kind input on a model without a GLU" "$FLASHBED" sparsify calibrate --model "$WORK/opt" \
    --text "$TEXT" --sparsity 0.5 --kind input --tokens 200 --threads 1
check "teal on it" "$FLASHBED" perplexity --model "$WORK/opt" --text "$TEXT" --tokens 100 --active teal --threads 1
expect_error "gate-cal without a GLU" "no gate projection" perplexity --model "$WORK/opt" --text "$TEXT" \
    --tokens 50 --active gate-cal
check "calibrate --kind input --force" "$FLASHBED" sparsify calibrate --model "$M" --text "$TEXT" --sparsity 0.5 \
    --kind input --tokens 400 --threads 1 --force
expect_error "gate-cal from an input-only file" "no \"gate\" thresholds" perplexity --model "$M" \
    --text "$TEXT" --tokens 50 --active gate-cal
check "calibrate --kind gate --force" "$FLASHBED" sparsify calibrate --model "$M" --text "$TEXT" --sparsity 0.5 \
    --kind gate --tokens 400 --threads 1 --force
expect_error "teal from a gate-only file" "no \"input\" thresholds" perplexity --model "$M" --text "$TEXT" \
    --tokens 50 --active teal

# ---- --out FILE: the folder's file untouched; --sparsify FILE; the gate's global threshold
before=$(md5sum <"$S")
T7="$WORK/t70.json"
check "calibrate --out (sparsity 0.7)" "$FLASHBED" sparsify calibrate --model "$M" --text "$TEXT" --sparsity 0.7 \
    --tokens 400 --threads 1 --out "$T7"
check "the folder's sparsify.json untouched" test "$(md5sum <"$S")" = "$before"
check "--out's file: target, kind, a global gate threshold" test "$(json_get "$T7" 'd["sparsity"], d["kind"], d["gate"]["global_threshold"] > 0')" = "0.7 both True"
expect_error "an existing --out without --force" "calibrate --out: .*t70.json already exists; --force" sparsify \
    calibrate --model "$M" --text "$TEXT" --sparsity 0.5 --tokens 400 --out "$T7"
check "nothing written" test "$(json_get "$T7" 'd["sparsity"]')" = 0.7
check "calibrate --out --force" "$FLASHBED" sparsify calibrate --model "$M" --text "$TEXT" --sparsity 0.7 \
    --tokens 400 --threads 1 --out "$T7" --force
G7=$(json_get "$T7" 'repr(d["gate"]["global_threshold"])')
check "gate --sparsify: the global threshold" ppl --active gate --sparsify "$T7" --json "$WORK/g7.json"
check "gate --sparsify = gate --threshold <global>" test "$(ppl --active gate --sparsify "$T7" | head -2 | cut -c1-60)" = \
    "$(ppl --active gate --threshold "$G7" | head -2 | cut -c1-60)"
check "gate --sparsify: density near 0.3" test "$(pj g7 '0.15 < d["density"] < 0.45')" = True
check "gate --sparsify: the file and its target recorded" test "$(pj g7 'd["sparsify_file"], d["calibrated_sparsity"], d["provenance"]["parameters"]["sparsify"]')" = "$T7 0.7 $T7"
check "gate --threshold wins over --sparsify" test "$(ppl --active gate --sparsify "$T7" --threshold 0.05 | head -2 | cut -c1-60)" = \
    "$(ppl --active gate --threshold 0.05 | head -2 | cut -c1-60)"
check "gate-cal --sparsify" ppl --active gate-cal --sparsify "$T7" --json "$WORK/c7.json"
check "gate-cal --sparsify: the file's target, not the folder's" test "$(pj c7 'd["calibrated_sparsity"], 0.15 < d["density"] < 0.45')" = "0.7 True"
check "teal --sparsify" ppl --active teal --sparsify "$T7" --json "$WORK/t7.json"
check "teal --sparsify: input density near 0.3" test "$(pj t7 '0.15 < d["input_density"] < 0.45')" = True
check "generate gate-cal --sparsify" "$FLASHBED" generate --model "$M" --prompt "the cat" -n 4 --temperature 0 \
    --active gate-cal --sparsify "$T7" --json "$WORK/gen7.json" --threads 1
check "generate's JSON: the file and its target" test "$(json_get "$WORK/gen7.json" 'd["sparsify_file"], d["calibrated_sparsity"]')" = "$T7 0.7"
check "run gate-cal --sparsify" "$FLASHBED" run --model "$M" --prompt "the cat" -n 4 --mode all --active gate-cal \
    --sparsify "$T7" --threads 1 --out "$WORK/r7"
check "run.json: the file's per-layer thresholds" test "$(json_get "$WORK/r7/run.json" 'd["summary"]["gate_thresholds"]')" = "$(json_get "$T7" 'd["gate"]["thresholds"]')"
expect_error "--sparsify with the dense FFN" "perplexity --sparsify .*reads no thresholds file" perplexity \
    --model "$M" --text "$TEXT" --tokens 50 --sparsify "$T7"
expect_error "--sparsify with the oracle" "perplexity --sparsify .*--active oracle reads no thresholds file" \
    perplexity --model "$M" --text "$TEXT" --tokens 50 --active oracle --sparsify "$T7"
expect_error "--sparsify: no such file" "--sparsify $WORK/none.json: $WORK/none.json: no such file" perplexity \
    --model "$M" --text "$TEXT" --tokens 50 --active gate-cal --sparsify "$WORK/none.json"
expect_error "--sparsify: another model's file" "t70.json: \"model\".\"fingerprint_sha256\"" perplexity \
    --model "$WORK/m2" --text "$TEXT" --tokens 50 --active gate --sparsify "$T7"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); del d['gate']['global_threshold']; json.dump(d,open(sys.argv[2],'w'))" "$T7" "$WORK/old.json"
expect_error "a file without the global threshold" "old.json: \"gate\".\"global_threshold\"" perplexity \
    --model "$M" --text "$TEXT" --tokens 50 --active gate --sparsify "$WORK/old.json"

# ---- perplexity --skip; ms_per_token
check "perplexity, the whole text" "$FLASHBED" perplexity --model "$M" --text "$TEXT" --threads 1 --json "$WORK/all.json"
check "perplexity --skip 100" "$FLASHBED" perplexity --model "$M" --text "$TEXT" --threads 1 --skip 100 \
    --json "$WORK/skip.json"
check "--skip 100 scores 100 fewer" test "$(pj skip 'd["tokens_scored"] + 100, d["tokens_skipped"]')" = "$(pj all 'd["tokens_scored"]') 100"
check "--skip: another perplexity" test "$(pj skip 'd["perplexity"]')" != "$(pj all 'd["perplexity"]')"
check "ms_per_token: positive" test "$(pj skip 'd["ms_per_token"] > 0')" = True
expect_error "--skip past the text" "perplexity --skip 100000: .*text.txt has no tokens left after the first 100000" \
    perplexity --model "$M" --text "$TEXT" --skip 100000
finish
