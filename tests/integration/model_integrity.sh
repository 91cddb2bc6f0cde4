#!/usr/bin/env bash
# A model folder's checksums (issue 34): convert writes them (ffn.crc32c,
# each DRAM tensor's crc32c, model.json naming the algorithm); `model
# verify` finds every damaged place by file, tensor or layer and neuron,
# and byte offset; loading refuses a damaged dram.bin, a damaged ffn.bin
# read into memory, and a damaged checksums file; a folder written before
# checksums still loads, reported as unchecked.
. "$(dirname "$0")/lib.sh"

"$FLASHBED" model make --arch llama --shape llama-tiny --dtype f16 --out "$WORK/hf" >/dev/null 2>&1
check "convert" "$FLASHBED" convert "$WORK/hf" --out "$WORK/m" >/dev/null 2>&1
M=$WORK/m
check "ffn.crc32c: 4 bytes per bundle" test "$(stat -c %s "$M/ffn.crc32c")" -eq \
    "$(json_get "$M/model.json" 'd["n_layers"] * d["d_ff"] * 4')"
check "model.json names the algorithm" test "$(json_get "$M/model.json" 'd["ffn"]["checksums"]["algorithm"]')" = crc32c
check "every DRAM tensor has its crc32c" test "$(json_get "$M/model.json" \
    'all("crc32c" in t for t in d["dram"]["tensors"])')" = True
out=$("$FLASHBED" model verify "$M")
check "verify: intact, exit 0" test $? -eq 0
check "verify: says what it checked" grep -q "intact: 14 tensors and 344 FFN bundles checked against their CRC-32C" <<<"$out"

stride=$(json_get "$M/model.json" 'd["ffn"]["bundle_stride"]')
damage() { # folder, file, byte offset, bytes (printf format)
    printf "$4" | dd of="$1/$2" bs=1 seek="$3" conv=notrunc status=none
}

# 0xff over eight bytes of layer 1's neuron 5 (f16: NaN), and a flipped bit in a tensor
cp -r "$M" "$WORK/d"
off=$(((172 + 5) * stride + 20))
damage "$WORK/d" ffn.bin $off '\xff\xff\xff\xff\xff\xff\xff\xff'
wq=$(json_get "$M/model.json" '[t["offset"] for t in d["dram"]["tensors"] if t["name"] == "layers.1.attn.wk"][0]')
damage "$WORK/d" dram.bin $((wq + 7)) '\x55'
out=$("$FLASHBED" model verify "$WORK/d")
check "verify damaged: exit 1" test $? -eq 1
check "verify: the bundle by layer, neuron, offset" grep -q \
    "damaged: ffn.bin: layer 1 neuron 5 (byte offset $(((172 + 5) * stride))): checksum mismatch" <<<"$out"
check "verify: its NaNs with the first's byte" grep -q \
    "layer 1 neuron 5 (byte offset $(((172 + 5) * stride))): 4 values NaN or infinite (the first at byte $off)" <<<"$out"
check "verify: the tensor by name and bytes" grep -q "damaged: dram.bin: tensor 'layers.1.attn.wk' (bytes $wq to" <<<"$out"
check "verify: the summary counts" grep -q "DAMAGED: .*(2 checksum mismatches, 1 with NaN or infinite values)" <<<"$out"
expect_error "generate refuses a damaged dram.bin" "dram.bin: tensor 'layers.1.attn.wk' (bytes $wq to" \
    generate --model "$WORK/d" --prompt hi -n 2
cp "$M/dram.bin" "$WORK/d/dram.bin"
expect_error "generate refuses a damaged ffn.bin read into memory" \
    "ffn.bin: layer 1 neuron 5 (byte offset $(((172 + 5) * stride)), " generate --model "$WORK/d" --prompt hi -n 2

# damage that keeps every value finite is seen by its checksum alone
cp -r "$M" "$WORK/z"
damage "$WORK/z" ffn.bin $((9 * stride + 2)) '\x00\x00'
out=$("$FLASHBED" model verify "$WORK/z")
check "verify: a zeroed weight (finite) found by its checksum" grep -q "layer 0 neuron 9 (byte offset $((9 * stride))): checksum mismatch" <<<"$out"

# the checksums file itself damaged, or missing
cp -r "$M" "$WORK/c"
damage "$WORK/c" ffn.crc32c 12 '\x01'
expect_error "a damaged ffn.crc32c is refused" "ffn.crc32c: its CRC-32C differs from model.json" \
    generate --model "$WORK/c" --prompt hi -n 2
rm "$WORK/c/ffn.crc32c"
expect_error "a missing ffn.crc32c is refused" "ffn.crc32c: cannot open" generate --model "$WORK/c" --prompt hi -n 2

# a folder from before checksums: loads, verified for finite values only
cp -r "$M" "$WORK/old"
rm "$WORK/old/ffn.crc32c"
python3 - "$WORK/old/model.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["ffn"]["checksums"]
del d["dram"]["checksums"]
for t in d["dram"]["tensors"]:
    del t["crc32c"]
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
check "an unchecked folder still generates" "$FLASHBED" generate --model "$WORK/old" --prompt hi -n 2 >/dev/null
out=$("$FLASHBED" model verify "$WORK/old")
check "verify unchecked: exit 0" test $? -eq 0
check "verify unchecked: says so" grep -q "has no checksums" <<<"$out"
check "verify unchecked: finite values only" grep -q "checked for finite values$" <<<"$out"
damage "$WORK/old" ffn.bin $((3 * stride)) '\xff\xff'
out=$("$FLASHBED" model verify "$WORK/old")
check "verify unchecked: NaN found, exit 1" test $? -eq 1
check "verify unchecked: NaN found by place" grep -q "damaged: ffn.bin: layer 0 neuron 3 (byte offset $((3 * stride))): 1 value NaN" <<<"$out"


# --- the engine checks every bundle it reads from flash ---------------------
R=$WORK/runs
summary() { json_get "$1/run.json" "d['summary']$2"; }
check "run all, intact: exit 0" "$FLASHBED" run --model "$M" --prompt "the cat" -n 4 --mode all --active oracle \
    --out "$R/ok" >/dev/null 2>&1
check "run all: every bundle read is checked" test "$(summary "$R/ok" "['verify']['rows_verified']")" -gt 0
check "run all: rows verified = rows inserted" test "$(summary "$R/ok" "['verify']['rows_verified']")" = \
    "$(json_get "$R/ok/run.json" "int(sum(t['rows_inserted'] for t in d['tokens']))")"
check "run all: says it was checked" test "$(summary "$R/ok" "['verify']['reads']")" = "checked against ffn.crc32c"
check "run.md says so" grep -q "reads: checked against ffn.crc32c" "$R/ok/run.md"
cp -r "$M" "$WORK/f"
damage "$WORK/f" ffn.bin $((7 * stride + 3)) '\x11'
# the oracle's rows are read from ffn.bin at set-up, each bundle checked as
# it is loaded (issue 47): the damaged one is refused before a token runs
EXPECT_RC=1 expect_error "run all oracle, damaged: its rows refused at set-up" \
    "ffn.bin: layer 0 neuron 7 (byte offset $((7 * stride)), " \
    run --model "$WORK/f" --prompt "the cat" -n 4 --mode all --active oracle --out "$R/badup"
check "run all oracle, damaged: no results" test ! -e "$R/badup"
# the reads' own checks, under a source that holds no rows: the oracle's
# sets recorded on the intact model, replayed on the damaged one
check "record the oracle's sets on the intact model" "$FLASHBED" run --model "$M" --prompt "the cat" -n 4 --mode all \
    --active oracle --record "$WORK/sets.trace" --out "$R/rec" >/dev/null 2>&1
EXPECT_RC=1 expect_error "run all, damaged: stops naming layer, neuron and offset" \
    "ffn.bin: layer 0 neuron 7 (byte offset $((7 * stride)), " \
    run --model "$WORK/f" --prompt "the cat" -n 4 --mode all --active "trace:$WORK/sets.trace" --out "$R/bad"
check "run all, damaged: results kept, status failed" test "$(summary "$R/bad" "['status']")" = failed
check "run all, damaged: read again once before stopping" test "$(summary "$R/bad" "['verify']['verify_retries']")" = 1
check "run --verify off, damaged: runs to the end" "$FLASHBED" run --model "$WORK/f" --prompt "the cat" -n 4 \
    --mode all --active oracle --verify off --out "$R/off" >/dev/null 2>&1
check "run --verify off: says not checked" test "$(summary "$R/off" "['verify']['reads']")" = "not checked (--verify off)"
check "run --verify off: nothing checked" test "$(summary "$R/off" "['verify']['rows_verified']")" = 0
check "run split" "$FLASHBED" run --model "$M" --prompt "the cat" -n 2 --mode predictor --active oracle \
    --out "$R/split" >/dev/null 2>&1
check "run split: every row read is checked once its vectors have landed" test \
    "$(summary "$R/split" "['verify']['rows_verified']")" = "$(json_get "$R/split/run.json" "int(sum(t['rows_inserted'] for t in d['tokens']))")"
check "run split: some rows read" test "$(summary "$R/split" "['verify']['rows_verified']")" -gt 0
EXPECT_RC=1 expect_error "run split, damaged (a byte of its up vector): stops naming layer, neuron and offset" \
    "ffn.bin: layer 0 neuron 7 (byte offset $((7 * stride)), " \
    run --model "$WORK/f" --prompt "the cat" -n 4 --mode predictor --active "trace:$WORK/sets.trace" --out "$R/splitbad"
check "run split, damaged: read again once, failed" test "$(summary "$R/splitbad" "['verify']['verify_retries']") $(summary "$R/splitbad" "['status']")" = "1 failed"
check "run, a folder without checksums: says so" "$FLASHBED" run --model "$WORK/old" --prompt "the cat" -n 2 \
    --mode all --active oracle --out "$R/old" >/dev/null 2>&1 || true
check "run, unchecked model: reads not checked" test "$(summary "$R/old" "['verify']['reads']")" = \
    "not checked (the model has no checksums)"
cp -r "$M" "$WORK/g"
damage "$WORK/g" dram.bin $((wq + 7)) '\x55'
check "run --verify off loads a damaged dram.bin" "$FLASHBED" run --model "$WORK/g" --prompt "the cat" -n 2 \
    --mode all --active oracle --verify off --out "$R/offdram" >/dev/null 2>&1

expect_error "verify: not a model folder" "is not a flashbed model folder" model verify "$WORK/nothing"
EXPECT_RC=2 expect_error "verify: needs DIR" "needs the model folder DIR" model verify
finish
