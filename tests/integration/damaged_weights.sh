#!/usr/bin/env bash
# No damaged byte of the FFN reaches a result unchecked (issue 47): with
# ffn.bin overwritten by 0xff (NaN in f16), every mode and neuron source of
# `run` is refused naming the file, the layer, the neuron and the offset:
# the oracle's and the gate's rows read from ffn.bin at start, hot's warm-up,
# a sparsify file's fingerprint, a trace replayed, the dense FFN loaded,
# model transpose's source. Before, `run --mode all --active oracle` printed
# garbage and exited 0 ("0.00% density, 0 bytes read, checked (0 bundles)").
# With --verify off the run stops instead: the oracle finds no neuron active in any layer
# (NaN pre-activations are never active), or non-finite logits naming the
# layer whose FFN output turned; no results written either way.
. "$(dirname "$0")/lib.sh"

check "model make opt-tiny" "$FLASHBED" model make --arch opt --shape opt-tiny --relu-density 0.1 --out "$WORK/ohf"
check "convert it (f16)" "$FLASHBED" convert "$WORK/ohf" --dtype f16 --out "$WORK/opt"
check "model make llama-tiny" "$FLASHBED" model make --arch llama --shape llama-tiny --seed 5 --out "$WORK/lhf"
check "convert it (f16)" "$FLASHBED" convert "$WORK/lhf" --dtype f16 --out "$WORK/llama"
nan_ffn() { # a copy of model $1 as $2 whose ffn.bin is 0xff throughout
    cp -r "$1" "$2"
    python3 -c "import os, sys; p = sys.argv[1]; open(p, 'r+b').write(b'\xff' * os.path.getsize(p))" "$2/ffn.bin"
}
nan_ffn "$WORK/opt" "$WORK/ob"
nan_ffn "$WORK/llama" "$WORK/lb"
FIRST="ffn.bin: layer 0 neuron 0 (byte offset 0, "
nothing_written() { test ! -e "$1"; }
R=$WORK/runs
mkdir -p "$R"

# the reproduction: refused at set-up, where the oracle's rows are read
EXPECT_RC=1 expect_error "run all oracle: refused naming file, layer, neuron, offset" "$FIRST" \
    run --model "$WORK/ob" --mode all --active oracle --prompt "Once upon a time" -n 8 --out "$R/repro"
check "run all oracle: no results" nothing_written "$R/repro"
for mode in naive hybrid predictor window all dense; do
    EXPECT_RC=1 expect_error "run --mode $mode: refused" "$FIRST" \
        run --model "$WORK/ob" --mode "$mode" --prompt "Once upon" -n 4 --quiet --out "$R/m-$mode"
done
EXPECT_RC=1 expect_error "hot's warm-up: refused" "$FIRST" \
    run --model "$WORK/ob" --policy hot --dram-budget 60% --prompt "Once upon" -n 4 --quiet --out "$R/hot"
check "hot: no results" nothing_written "$R/hot"

# a trace recorded on the intact model, replayed on the damaged one: the reads are checked
check "record a trace on the intact model" "$FLASHBED" run --model "$WORK/opt" --mode all --prompt "Once upon" -n 4 \
    --quiet --record "$WORK/opt.trace" --out "$R/rec"
EXPECT_RC=1 expect_error "--active trace: its reads refused" "ffn.bin: layer 0 neuron " \
    run --model "$WORK/ob" --active "trace:$WORK/opt.trace" --prompt "Once upon" -n 4 --quiet --out "$R/trace"
EXPECT_RC=1 expect_error "--check's oracle beside a trace: its rows refused" "$FIRST" \
    run --model "$WORK/ob" --active "trace:$WORK/opt.trace" --check --prompt "Once upon" -n 4 --quiet --out "$R/check"
check "--check: no results" nothing_written "$R/check"

# one bundle's up vector damaged: the oracle's rows name exactly it
cp -r "$WORK/opt" "$WORK/one"
stride=$(json_get "$WORK/opt/model.json" 'd["ffn"]["bundle_stride"]')
off=$(((256 + 5) * stride))
printf '\xff\xff\xff\xff' | dd of="$WORK/one/ffn.bin" bs=1 seek=$((off + 6)) conv=notrunc status=none
EXPECT_RC=1 expect_error "one damaged up vector: layer 1 neuron 5 named" \
    "ffn.bin: layer 1 neuron 5 (byte offset $off, 256 bytes) does not match its checksum in ffn.crc32c" \
    run --model "$WORK/one" --mode all --active oracle --prompt "Once upon" -n 4 --quiet --out "$R/one"

# the GLU's sources: the gate's rows, a sparsify file's fingerprint, the sparsity and predictor set-ups
EXPECT_RC=1 expect_error "--active gate: its rows refused" "$FIRST" \
    run --model "$WORK/lb" --active gate --prompt "Once upon" -n 4 --quiet --out "$R/gate"
words=(the a cat dog sat on mat ran to park and saw big small red blue bird tree house)
RANDOM=7
for i in $(seq 1500); do printf '%s ' "${words[RANDOM % ${#words[@]}]}"; done >"$WORK/text.txt"
check "sparsify calibrate on the intact model" "$FLASHBED" sparsify calibrate --model "$WORK/llama" \
    --text "$WORK/text.txt" --sparsity 0.5
cp "$WORK/llama/sparsify.json" "$WORK/lb/"
EXPECT_RC=1 expect_error "--active gate-cal: the fingerprint's bundles refused" "$FIRST" \
    run --model "$WORK/lb" --active gate-cal --prompt "Once upon" -n 4 --quiet --out "$R/gatecal"
EXPECT_RC=1 expect_error "sparsify calibrate: refused" "$FIRST" \
    sparsify calibrate --model "$WORK/lb" --text "$WORK/text.txt" --sparsity 0.5 --out "$WORK/lb.sparsify.json"
EXPECT_RC=1 expect_error "predictor train: refused" "$FIRST" \
    predictor train --model "$WORK/lb" --text "$WORK/text.txt" --tokens 10
EXPECT_RC=1 expect_error "model transpose: its source refused" "$FIRST" model transpose "$WORK/lb"
check "model transpose: no ffn_t.bin" nothing_written "$WORK/lb/ffn_t.bin"
out=$("$FLASHBED" model verify "$WORK/lb" 2>&1)
check "model verify: exit 1" test $? -eq 1
check "model verify: the first bundle" grep -q "damaged: ffn.bin: layer 0 neuron 0 (byte offset 0): checksum mismatch" <<<"$out"

# --verify off: nothing checked as loaded, so the run's own stops catch it
for mode in predictor window all; do
    EXPECT_RC=1 expect_error "--verify off, --mode $mode: no neuron needed in any layer stops it" \
        "position 0 (token id 1): no layer (0 to 1) needed any neuron" \
        run --model "$WORK/ob" --mode "$mode" --verify off --prompt "Once upon" -n 4 --quiet --out "$R/off-$mode"
    check "--verify off, --mode $mode: no results" nothing_written "$R/off-$mode"
done
EXPECT_RC=1 expect_error "--verify off, hot: the warm-up stops" "warm-up token 0: position 0 (token id 1): no layer" \
    run --model "$WORK/ob" --policy hot --dram-budget 60% --verify off --prompt "Once upon" -n 4 --quiet --out "$R/off-hot"
# SwiGLU keeps the NaN (ReLU would drop it): naive reads every row, and the logits turn
EXPECT_RC=1 expect_error "--verify off, SwiGLU naive: non-finite logits name the layer" \
    "position 0 (token id 1): the logits are not finite (NaN or infinity); layer 0's FFN output is the first" \
    run --model "$WORK/lb" --mode naive --verify off --prompt "Once upon" -n 4 --quiet --out "$R/off-naive"
check "--verify off, non-finite: no results" nothing_written "$R/off-naive"

# the intact models still run to the end
check "intact opt: run all" "$FLASHBED" run --model "$WORK/opt" --mode all --prompt "Once upon" -n 4 --quiet \
    --out "$R/ok"
check "intact llama: run gate" "$FLASHBED" run --model "$WORK/llama" --active gate --prompt "Once upon" -n 4 --quiet \
    --out "$R/okgate"
finish
