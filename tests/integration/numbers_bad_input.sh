#!/usr/bin/env bash
# Numbers from files and options (issue 15): offsets that wrap past 2^64,
# negative, fractional, huge or non-finite JSON numbers, odd head
# dimensions, NaN weights and logits, infinite profile rates, thread counts
# past the limit, loops whose step is zero. Each case: a non-zero exit
# within the time limit, an error naming the file or option and what is
# wrong, no sanitizer report, and no output left behind.
source "$(dirname "$0")/lib.sh"

CONFIGS="$FLASHBED_SOURCE/configs"

# expect_error with a time limit (a loop that never ends fails it) and no
# sanitizer report on stderr (the ASan/UBSan build runs this too).
refused() {
    local what=$1 pattern=$2
    shift 2
    checks=$((checks + 1))
    local out rc
    out=$(timeout 120 "$FLASHBED" "$@" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -eq 0 ]; then
        fail "$what: exit 0, expected an error"
    elif [ $rc -eq 124 ]; then
        fail "$what: still running after 120 s"
    elif [ $rc -gt 128 ]; then
        fail "$what: crashed with signal $((rc - 128))"
    elif grep -q 'runtime error\|Sanitizer' <<<"$out"; then
        fail "$what: sanitizer report: $out"
    elif ! grep -q -- "$pattern" <<<"$out"; then
        fail "$what: error did not mention '$pattern': $out"
    elif ! grep -q 'error' <<<"$out"; then
        fail "$what: no error line: $out"
    fi
}

# A command that must succeed with no sanitizer report.
works() {
    local what=$1
    shift
    checks=$((checks + 1))
    local out
    if ! out=$(timeout 120 "$FLASHBED" "$@" 2>&1 >/dev/null); then
        fail "$what: failed: $out"
    elif grep -q 'runtime error\|Sanitizer' <<<"$out"; then
        fail "$what: sanitizer report: $out"
    fi
}

nothing_left() { # what, output path: neither it nor a temporary of it remain
    check "$1: no $(basename "$2") left" test ! -e "$2"
    check "$1: no $(basename "$2").tmp.* left" bash -c "! ls '$(dirname "$2")' | grep -q '^$(basename "$2")\.tmp'"
}

# edit FILE PYTHON: d is the file's JSON, changed in place by the code
edit() {
    python3 - "$1" "$2" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
exec(sys.argv[2])
json.dump(d, open(p, "w"))
PY
}

# st_edit FILE PYTHON: h is a safetensors header, rewritten with the data kept
st_edit() {
    python3 - "$1" "$2" <<'PY'
import json, struct, sys
p = sys.argv[1]
b = open(p, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
exec(sys.argv[2])
hb = json.dumps(h).encode()
hb += b" " * (-len(hb) % 8)
open(p, "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
}

# f32 values written into a binary file: poke FILE OFFSET COUNT VALUE
poke() {
    python3 - "$@" <<'PY'
import struct, sys
p, off, count, value = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
with open(p, "r+b") as f:
    f.seek(off)
    f.write(struct.pack("<f", value) * count)
PY
}

# Small synthetic models: a Llama (RoPE, GLU) as an HF folder and llama2.c
# checkpoint, both converted.
"$FLASHBED" model make --arch llama --shape llama-tiny --dtype f32 --out "$WORK/hf" 2>/dev/null
"$FLASHBED" model make --arch llama --shape llama-tiny --format llama2c --dtype f32 --out "$WORK/l2c" 2>/dev/null
check "convert the tiny Llama" "$FLASHBED" convert "$WORK/hf" --out "$WORK/m"
M="$WORK/m"
OUT="$WORK/out"
TEXT="$WORK/text.txt"
echo "the cat sat on the mat and then the dog ran after it across the yard" >"$TEXT"

copy() { rm -rf "$WORK/bad"; cp -r "$M" "$WORK/bad"; }

# --- model.json: tensor offsets, shapes, numbers -------------------------
copy; edit "$WORK/bad/model.json" 'd["dram"]["tensors"][0]["offset"] = 2**64 - 2048'
refused "tensor offset near 2^64 (the bounds check wrapped)" "model.json: tensor 'tok_embedding' \"offset\" must be a whole number" \
    generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["dram"]["tensors"][0]["offset"] = d["dram"]["bytes"] - 4'
refused "tensor running past dram.bin" "tensor 'tok_embedding' has a bad offset" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["dram"]["tensors"][0]["offset"] = -4096'
refused "negative tensor offset" "\"offset\" must be a whole number.*not -4096" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["dram"]["tensors"][1]["bytes"] = 0.5'
refused "fractional tensor size" "\"bytes\" must be a whole number" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["dram"]["tensors"][0]["shape"][0] = 512.5'
refused "fractional tensor dimension" "tensor 'tok_embedding' shape\[0\] must be a whole number from 512 to 512, not 512.5" \
    generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["dram"]["bytes"] = 2**64'
refused "dram bytes past 2^64" "\"bytes\" must be a whole number" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["d_model"] = -64'
refused "negative d_model" "model.json: \"d_model\" must be a whole number from 1 to .*not -64" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["d_ff"] = 172.5'
refused "fractional d_ff" "\"d_ff\" must be a whole number.*not 172.5" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["n_layers"] = 1e300'
refused "n_layers 1e300" "\"n_layers\" must be a whole number.*not 1e+300" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["vocab_size"] = 2**64 - 1'
refused "vocab_size 2^64 - 1" "\"vocab_size\" must be a whole number" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["norm_eps"] = 1'; sed -i 's/"norm_eps": 1,/"norm_eps": 1e999,/' "$WORK/bad/model.json"
refused "infinite norm_eps" "\"norm_eps\" must be a finite number.*not inf" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["rope_theta"] = -10000'
refused "negative rope_theta" "\"rope_theta\" must be a finite number" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["d_model"] = 66; d["n_heads"] = 6; d["n_kv_heads"] = 6'
refused "odd head dimension with RoPE" "\"d_model\" 66 / \"n_heads\" 6 gives head_dim 11: RoPE needs an even head_dim" \
    generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["n_heads"] = 7; d["n_kv_heads"] = 7'
refused "n_heads not dividing d_model" "\"n_heads\" 7 does not divide \"d_model\" 64" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["n_kv_heads"] = 3'
refused "n_kv_heads not dividing n_heads" "\"n_kv_heads\" 3 does not divide \"n_heads\" 8" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["rope_fraction"] = 0'
refused "RoPE rotating nothing" "\"rope_fraction\" must be above 0" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["tokenizer"]["eos_id"] = 512'
refused "eos_id outside the vocabulary" "\"eos_id\" must be a whole number from 0 to 511, not 512" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["tokenizer"]["stop_ids"] = [1.5]'
refused "fractional stop id" "\"stop_ids\" entry must be a whole number" generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["tokenizer"]["file"] = ""'
refused "empty tokenizer file name (found by fuzz_model_json)" "tokenizer \"file\" must be a file name inside the model folder" \
    generate --model "$WORK/bad" --prompt x -n 2
copy; edit "$WORK/bad/model.json" 'd["ffn"]["bundle_stride"] = 0'
refused "zero bundle stride" "\"bundle_stride\" must be a whole number from 1" generate --model "$WORK/bad" --prompt x -n 2

# --- safetensors headers and HF config.json at convert -------------------
hf_copy() { rm -rf "$WORK/badhf"; cp -r "$WORK/hf" "$WORK/badhf"; }
FIRST='k = sorted(x for x in h if x != "__metadata__")[0]'
hf_copy; st_edit "$WORK/badhf/model.safetensors" "$FIRST"'; o = h[k]["data_offsets"]; L = o[1] - o[0]; h[k]["data_offsets"] = [2**64 - 1024, 2**64 - 1024 + L]'
refused "data_offsets near 2^64 (convert crashed)" "model.safetensors: tensor '.*' data_offsets\[0\] must be a whole number" \
    convert "$WORK/badhf" --out "$OUT"
nothing_left "data_offsets near 2^64" "$OUT"
hf_copy; st_edit "$WORK/badhf/model.safetensors" "$FIRST"'; o = h[k]["data_offsets"]; h[k]["data_offsets"] = [2**63, 2**63 + o[1] - o[0]]'
refused "data_offsets past the file, sum below 2^64" "past the end of the file" convert "$WORK/badhf" --out "$OUT"
nothing_left "data_offsets past the file" "$OUT"
hf_copy; st_edit "$WORK/badhf/model.safetensors" "$FIRST"'; h[k]["shape"] = [2**40, 2**40]'
refused "shape whose element count overflows" "has a shape whose element count overflows" convert "$WORK/badhf" --out "$OUT"
hf_copy; st_edit "$WORK/badhf/model.safetensors" "$FIRST"'; h[k]["shape"] = [-1, 64]'
refused "negative dimension" "shape must be a whole number.*not -1" convert "$WORK/badhf" --out "$OUT"
hf_copy; st_edit "$WORK/badhf/model.safetensors" "$FIRST"'; h[k]["data_offsets"][0] = 0.5'
refused "fractional data offset" "data_offsets\[0\] must be a whole number.*not 0.5" convert "$WORK/badhf" --out "$OUT"
nothing_left "bad safetensors headers" "$OUT"
# a NaN weight in the up projection of layer 0
hf_copy; python3 - "$WORK/badhf/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
o = h["model.layers.0.mlp.up_proj.weight"]["data_offsets"][0]
b[8 + n + o + 40:8 + n + o + 44] = struct.pack("<f", float("nan"))
open(p, "wb").write(b)
PY
refused "NaN weight at convert" "tensor 'model.layers.0.mlp.up_proj.weight' holds a non-finite value (nan) at element 10" \
    convert "$WORK/badhf" --out "$OUT"
nothing_left "NaN weight" "$OUT"
hf_copy; edit "$WORK/badhf/config.json" 'd["hidden_size"] = -64'
refused "negative hidden_size" "config.json: \"hidden_size\" must be a whole number.*not -64" convert "$WORK/badhf" --out "$OUT"
hf_copy; edit "$WORK/badhf/config.json" 'd["intermediate_size"] = 1e300'
refused "intermediate_size 1e300" "\"intermediate_size\" must be a whole number" convert "$WORK/badhf" --out "$OUT"
hf_copy; edit "$WORK/badhf/config.json" 'd["num_hidden_layers"] = 100000'
refused "100000 layers" "config.json: \"n_layers\" must be from 1 to 4096, not 100000" convert "$WORK/badhf" --out "$OUT"
hf_copy; edit "$WORK/badhf/config.json" 'd["num_attention_heads"] = 6; d["num_key_value_heads"] = 6; d["hidden_size"] = 66'
refused "odd head dimension in config.json" "head_dim 11: RoPE needs an even head_dim" convert "$WORK/badhf" --out "$OUT"
hf_copy; edit "$WORK/badhf/config.json" 'd["rms_norm_eps"] = 1'; sed -i 's/"rms_norm_eps": 1\b/"rms_norm_eps": 1e999/' "$WORK/badhf/config.json"
refused "infinite rms_norm_eps" "config.json: \"norm_eps\" must be a finite non-negative number, not inf" convert "$WORK/badhf" --out "$OUT"
hf_copy; edit "$WORK/badhf/config.json" 'd["bos_token_id"] = 1e300'
refused "bos_token_id 1e300" "\"bos_token_id\" must be a whole number from 0 to 511" convert "$WORK/badhf" --out "$OUT"
hf_copy; edit "$WORK/badhf/tokenizer.json" 'd["model"]["vocab"]["zz"] = 2.5'
refused "fractional tokenizer id" "vocab entry 'zz' has an id outside 0..511 or not a whole number" convert "$WORK/badhf" --out "$OUT"
nothing_left "bad config.json and tokenizer.json" "$OUT"

# --- llama2.c checkpoints --------------------------------------------------
CK="$WORK/l2c/model.bin"
cp "$CK" "$WORK/nan.bin"
poke "$WORK/nan.bin" $((28 + 512 * 64 * 4 + 2 * 64 * 4 + 4 * 8)) 1 nan # layer 0 of wq, after the embeddings and rms_att
refused "NaN weight in a llama2.c checkpoint" "nan.bin: tensor 'wq' of layer 0 holds a non-finite value (nan)" \
    convert "$WORK/nan.bin" --tokenizer "$WORK/l2c/tokenizer.bin" --out "$OUT"
cp "$CK" "$WORK/inf.bin"
# rms_final's last element, before freq_cis (256 positions x head_dim 8, never read: not checked)
poke "$WORK/inf.bin" $(( $(stat -c %s "$CK") - 256 * 8 * 4 - 4 )) 1 inf
refused "infinite weight in a llama2.c checkpoint" "inf.bin: tensor 'rms_final_weight' holds a non-finite value (inf) at element 63" \
    convert "$WORK/inf.bin" --tokenizer "$WORK/l2c/tokenizer.bin" --out "$OUT"
cp "$WORK/l2c/tokenizer.bin" "$WORK/tokscore.bin"
poke "$WORK/tokscore.bin" 4 1 nan # token 0's score
refused "NaN score in tokenizer.bin" "tokscore.bin: token 0 has a non-finite score" \
    convert "$CK" --tokenizer "$WORK/tokscore.bin" --out "$OUT"
nothing_left "bad llama2.c inputs" "$OUT"

# --- non-finite logits: a model whose weights are NaN ---------------------
# The folder's checksums refuse it at load (tests/integration/model_integrity.sh);
# without them (a folder written before checksums) the forward pass's own
# guards must still stop it: unchecked() removes them.
unchecked() {
    rm -f "$1/ffn.crc32c"
    python3 - "$1/model.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["ffn"].pop("checksums", None)
d["dram"].pop("checksums", None)
for t in d["dram"]["tensors"]:
    t.pop("crc32c", None)
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
}
rm -rf "$WORK/nanm"; cp -r "$M" "$WORK/nanm"
poke "$WORK/nanm/dram.bin" 0 $((512 * 64)) nan # the (tied) token embeddings
refused "NaN weights refused by their checksum" "dram.bin: tensor 'tok_embedding' (bytes 0 to 131072) does not match" \
    generate --model "$WORK/nanm" --prompt "the cat" -n 4
unchecked "$WORK/nanm"
refused "NaN logits when sampling" "the logits for generated token 1 (position .*) are not finite" \
    generate --model "$WORK/nanm" --prompt "the cat" -n 4 --temperature 0.8 --top-p 0.9
refused "NaN logits when greedy" "are not finite" generate --model "$WORK/nanm" --prompt "the cat" -n 4 --temperature 0
refused "NaN logits in run" "are not finite" run --model "$WORK/nanm" --prompt "the cat" -n 4 --mode dense --out "$WORK/run-nan"
check "run with NaN logits: no results" test ! -e "$WORK/run-nan/run.json"
refused "NaN logits in perplexity" "perplexity: the logits for text token 0 are not finite" \
    perplexity --model "$WORK/nanm" --text "$TEXT" --json "$WORK/ppl-nan.json"
check "perplexity with NaN logits: no JSON" test ! -e "$WORK/ppl-nan.json"
# all-zero weights: every logit equal, so a nucleus below 1/vocab keeps no
# token by the cutoff (the sampler read before its buffer)
rm -rf "$WORK/flat"; cp -r "$M" "$WORK/flat"
poke "$WORK/flat/dram.bin" 0 $((512 * 64)) 0
unchecked "$WORK/flat"
works "top-p below 1/vocab over a flat distribution" generate --model "$WORK/flat" --prompt "the cat" -n 4 --temperature 1 --top-p 0.0001

# --- loops whose step can be zero ----------------------------------------
refused "perplexity --context 1 (never ended)" "perplexity --context: a window of 1 position leaves no token to score" \
    perplexity --model "$M" --text "$TEXT" --context 1
copy; edit "$WORK/bad/model.json" 'd["max_positions"] = 1'
refused "perplexity on a model of one position" "leaves no token to score" perplexity --model "$WORK/bad" --text "$TEXT"
works "perplexity --context 2 scores one token per window" perplexity --model "$M" --text "$TEXT" --context 2
refused "predictor train --context 1 (the message said 0)" "predictor train: a context of 1 position leaves no room" \
    predictor train --model "$M" --text "$TEXT" --tokens 10 --rank 4 --epochs 0 --act-threshold 0.01 --context 1
check "predictor train refused: no predictor written" test ! -e "$M/predictor.safetensors"

refused "model make --relu-density -1 (the default's sentinel, taken silently)" "needs 0 < D < 1, not -1" \
    model make --arch opt --shape opt-tiny --relu-density -1 --out "$WORK/mk-neg"
check "model make refused: no folder" test ! -e "$WORK/mk-neg"

# --- a folder given as a text file ------------------------------------------
refused "perplexity --text FOLDER" "$WORK: cannot read: Is a directory" perplexity --model "$M" --text "$WORK"
refused "predictor train --text FOLDER" "predictor train --text: $WORK: cannot read: Is a directory" \
    predictor train --model "$M" --text "$WORK" --tokens 10 --rank 4 --epochs 0 --act-threshold 0.01

# --- hardware profiles -----------------------------------------------------
hw() { # name, python over d (m1max-cpu.json)
    cp "$CONFIGS/hw/m1max-cpu.json" "$WORK/$1.json"
    edit "$WORK/$1.json" "$2"
}
PRED=(predict --model opt-6.7b --dtype f32 --policy naive)
hw inf-rate 'd["flash"]["points"][0]["bw_bytes"] = 1'; sed -i 's/"bw_bytes": 1\b/"bw_bytes": 1e999/' "$WORK/inf-rate.json"
refused "profile rate of inf GB/s" "inf-rate.json: \"flash.points\[0\].bw_bytes\" must be a finite number.*not inf" \
    "${PRED[@]}" --hw "$WORK/inf-rate.json" --out "$WORK/p1"
hw neg-rate 'd["flash"]["sequential_bw"] = -6.1e9'
refused "negative sequential rate" "\"flash.sequential_bw\" must be a finite number" "${PRED[@]}" --hw "$WORK/neg-rate.json" --out "$WORK/p2"
hw zero-bw 'd["flash"]["points"][1]["bw_bytes"] = 0'
refused "zero point rate" "\"flash.points\[1\].bw_bytes\" must be positive" "${PRED[@]}" --hw "$WORK/zero-bw.json" --out "$WORK/p3"
hw neg-io 'd["io_threads"] = -3'
refused "negative io_threads" "\"io_threads\" must be a whole number from 1 to 1024, not -3" "${PRED[@]}" --hw "$WORK/neg-io.json" --out "$WORK/p4"
hw huge-io 'd["io_threads"] = 1e12'
refused "io_threads past the thread limit" "\"io_threads\" must be a whole number from 1 to 1024" "${PRED[@]}" --hw "$WORK/huge-io.json" --out "$WORK/p5"
hw many-threads 'd["flash"]["points"][0]["threads"] = 5000'
refused "point threads past the limit" "\"flash.points\[0\].threads\" must be at most 1024" "${PRED[@]}" --hw "$WORK/many-threads.json" --out "$WORK/p6"
hw fraction 'd["dram"]["derive_from"]["fraction"] = 2'
refused "a share of the FFN above 1" "\"dram.derive_from.fraction\" is a share of the FFN: at most 1" "${PRED[@]}" --hw "$WORK/fraction.json" --out "$WORK/p7"
hw no-threads 'del d["flash"]["points"][0]["threads"]'
refused "point without threads" "\"flash.points\[0\].threads\" must be a finite number.*missing" "${PRED[@]}" --hw "$WORK/no-threads.json" --out "$WORK/p8"
for p in p1 p2 p3 p4 p5 p6 p7 p8; do
    check "no prediction left by a bad profile ($p)" test ! -e "$WORK/$p"
done

# --- the paper's densities: unreadable is an error, not "no density" ------
cp -r "$CONFIGS" "$WORK/configs"
printf '{"models": ' >"$WORK/configs/paper/densities.json"
refused "predict with a broken densities.json" "configs/paper/densities.json (missing or not JSON)" \
    --configs "$WORK/configs" "${PRED[@]}" --out "$WORK/p9"
refused "predict --paper with a broken densities.json" "configs/paper/densities.json (missing or not JSON)" \
    --configs "$WORK/configs" predict --paper table3 --out "$WORK/p10"
echo '{"model": {}}' >"$WORK/configs/paper/densities.json"
refused "densities.json without its models" "densities.json: no \"models\" object" \
    --configs "$WORK/configs" "${PRED[@]}" --out "$WORK/p11"
for p in p9 p10 p11; do
    check "no prediction left by a broken densities.json ($p)" test ! -e "$WORK/$p"
done

# --- sweep results given to calibrate --sweep ------------------------------
sweep() { # name, python over d (six valid points)
    python3 - "$WORK/$1.json" "$2" <<'PY'
import json, sys
d = {"page_cache_bypassed": True, "points": [
    {"chunk_bytes": c, "threads": t, "bw_bytes": 1e8 * t * c / 4096}
    for c in (4096, 65536) for t in (1, 4, 16)]}
exec(sys.argv[2])
json.dump(d, open(sys.argv[1], "w"))
PY
}
sweep neg-threads 'd["points"][0]["threads"] = -4'
refused "negative thread count in a sweep" "neg-threads.json: points\[0\].threads must be a whole number from 1 to 1024, not -4" \
    calibrate --sweep "$WORK/neg-threads.json" --out "$WORK/hw1.json"
sweep half-thread 'd["points"][2]["threads"] = 2.5'
refused "fractional thread count in a sweep" "points\[2\].threads must be a whole number.*not 2.5" \
    calibrate --sweep "$WORK/half-thread.json" --out "$WORK/hw2.json"
sweep inf-bw 'd["points"][3]["bw_bytes"] = 1'
sed -i 's/"bw_bytes": 1}/"bw_bytes": 1e999}/' "$WORK/inf-bw.json"
refused "infinite rate in a sweep" "points\[3\].bw_bytes must be a finite number.*not inf" \
    calibrate --sweep "$WORK/inf-bw.json" --out "$WORK/hw3.json"
sweep huge-chunk 'd["points"][1]["chunk_bytes"] = 1e300'
refused "chunk of 1e300 bytes" "points\[1\].chunk_bytes must be a whole number.*not 1e+300" \
    calibrate --sweep "$WORK/huge-chunk.json" --out "$WORK/hw4.json"
for p in hw1 hw2 hw3 hw4; do
    nothing_left "bad sweep ($p)" "$WORK/$p.json"
done

# --- counts from options ---------------------------------------------------
EXPECT_RC=2
refused "generate --threads past the limit" "generate --threads: 100000 is out of range" \
    generate --model "$M" --prompt x --threads 100000
refused "run --io-threads past the limit" "run --io-threads: 5000 is out of range" \
    run --model "$M" --prompt x --io-threads 5000 --out "$WORK/r1"
refused "sweep --threads past the limit" "sweep --threads" sweep --file "$WORK/scratch" --threads 1,99999
refused "calibrate --threads past the limit" "calibrate --threads: 2000 is out of range" calibrate --threads 2000 --out "$WORK/hw5.json"
refused "generate -n past any context (would wrap an int)" "generate --n: 4294967297 is out of range" \
    generate --model "$M" --prompt x -n 4294967297
refused "perplexity --context past any context" "perplexity --context: 4294967296 is out of range" \
    perplexity --model "$M" --text "$TEXT" --context 4294967296
refused "sweep --runtime 1e300 s (nanoseconds overflowed)" "sweep --runtime: 1e+300 is out of range" \
    sweep --file "$WORK/scratch" --runtime 1e300
refused "sweep --ramp 1e300 s" "sweep --ramp: 1e+300 is out of range" sweep --file "$WORK/scratch" --ramp 1e300
unset EXPECT_RC
refused "window:K past 2^64" "window:99999999999999999999999" predict --model opt-6.7b --hw m1max-cpu \
    --policy window:99999999999999999999999 --out "$WORK/p9"
check "no scratch file from refused sweeps" test ! -e "$WORK/scratch"
check "no outputs from refused counts" test ! -e "$WORK/r1" -a ! -e "$WORK/hw5.json" -a ! -e "$WORK/p9"

finish
