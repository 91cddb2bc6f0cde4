#!/usr/bin/env bash
# flashbed model make: synthetic models of the test shapes go through
# convert and generate like real ones; the llama2.c output runs the same in
# an HF copy; a shaped up spectrum is recorded and converts, the default
# stays byte-identical; bad options are refused with nothing left behind.
source "$(dirname "$0")/lib.sh"

check "opt-tiny f16 HF folder" "$FLASHBED" model make --arch opt --shape opt-tiny --dtype f16 --seed 3 --relu-density 0.2 --out "$WORK/opt"
check "it has config.json, safetensors and tokenizer.json" test -f "$WORK/opt/config.json" -a -f "$WORK/opt/model.safetensors" -a -f "$WORK/opt/tokenizer.json"
check "convert it" "$FLASHBED" convert "$WORK/opt" --out "$WORK/opt-m"
check "FFN file is bundles of 4096 bytes (2 x 64 f16 each)" test "$(stat -c %s "$WORK/opt-m/ffn.bin")" -eq $((2 * 256 * 4096))
check "generate runs" "$FLASHBED" generate --model "$WORK/opt-m" --prompt "the cat" -n 16 --temperature 0.7 --json "$WORK/opt.json"
check "16 tokens" test "$(json_get "$WORK/opt.json" 'd["summary"]["generated_tokens"]')" = 16
# --bandwidth: one read pass over the resident weights after each timed step
# (the first generated token's step is the prompt's, not timed as decode)
check "generate --bandwidth" "$FLASHBED" generate --model "$WORK/opt-m" --prompt "the cat" -n 9 --temperature 0 --threads 2 --bandwidth --json "$WORK/bw.json"
check "8 read passes for 9 tokens" test "$(json_get "$WORK/bw.json" 'd["summary"]["dram_read_passes"]')" = 8
check "fractions are positive and finite" test "$(json_get "$WORK/bw.json" 'all(0 < d["summary"][k] < float("inf") for k in ("bandwidth_fraction", "bandwidth_fraction_median_per_step"))')" = True
check "ceiling no faster than its best pass" test "$(json_get "$WORK/bw.json" 'd["summary"]["dram_read_bandwidth_bytes_per_second"] <= d["summary"]["dram_read_bandwidth_best_pass_bytes_per_second"] * (1 + 1e-9)')" = True

check "llama-tiny as llama2.c" "$FLASHBED" model make --arch llama --shape llama-tiny --format llama2c --dtype f32 --out "$WORK/l2c"
check "llama-tiny as HF, same seed" "$FLASHBED" model make --arch llama --shape llama-tiny --dtype f32 --out "$WORK/lhf"
check "convert llama2.c" "$FLASHBED" convert "$WORK/l2c/model.bin" --tokenizer "$WORK/l2c/tokenizer.bin" --out "$WORK/l2c-m"
check "convert HF" "$FLASHBED" convert "$WORK/lhf" --out "$WORK/lhf-m"
for m in l2c lhf; do
    "$FLASHBED" generate --model "$WORK/$m-m" --prompt "abc de fgh" -n 12 --temperature 0 --json "$WORK/$m.json" >"$WORK/$m.txt" 2>/dev/null
done
check "both synthetic tokenizers encode alike" test "$(json_get "$WORK/l2c.json" 'd["prompt_token_ids"]')" = "$(json_get "$WORK/lhf.json" 'd["prompt_token_ids"]')"
# vocabulary 512 reaches two-letter pieces: " a" "bc" " d" "e" " f" "gh"
check "merged as the synthetic vocabulary says" test "$(json_get "$WORK/lhf.json" 'd["prompt_token_ids"]')" = "[1, 286, 340, 289, 264, 291, 475]"
check "llama2.c synthetic generates" test -s "$WORK/l2c.txt"

# --up-spectrum: a power-law up projection converts and runs like any model,
# and says so in config.json and, through convert, in model.json
check "opt-tiny with --up-spectrum power:1.0" "$FLASHBED" model make --arch opt --shape opt-tiny --seed 3 --relu-density 0.2 --up-spectrum power:1.0 --out "$WORK/pow"
check "config.json records it" test "$(json_get "$WORK/pow/config.json" 'd["flashbed_up_spectrum"]')" = "power:1"
check "convert it" "$FLASHBED" convert "$WORK/pow" --out "$WORK/pow-m"
check "model.json's source carries it" test "$(json_get "$WORK/pow-m/model.json" 'd["source"]["flashbed_up_spectrum"]')" = "power:1"
check "generate runs" "$FLASHBED" generate --model "$WORK/pow-m" --prompt "the cat" -n 8 --temperature 0 --json "$WORK/pow.json"
check "8 tokens" test "$(json_get "$WORK/pow.json" 'd["summary"]["generated_tokens"]')" = 8
check "llama-tiny lowrank (gate and up)" "$FLASHBED" model make --arch llama --shape llama-tiny --dtype bf16 --up-spectrum lowrank:8:0.1 --out "$WORK/lr"
check "convert it" "$FLASHBED" convert "$WORK/lr" --out "$WORK/lr-m"
# the default is the flat generator, byte for byte: explicit flat equals
# it, no key is added, and a pinned model keeps the bytes it had before the
# option existed (f32 without a density: no libm in its values; update the
# hashes only when the flat generator is meant to change)
check "explicit flat" "$FLASHBED" model make --arch opt --shape opt-tiny --seed 3 --relu-density 0.2 --up-spectrum flat --out "$WORK/flat"
for f in config.json model.safetensors tokenizer.json; do
    check "flat $f equals the default's" cmp -s "$WORK/opt/$f" "$WORK/flat/$f"
done
check "no spectrum key for flat" test "$(json_get "$WORK/flat/config.json" '"flashbed_up_spectrum" in d')" = False
check "pinned flat model" "$FLASHBED" model make --arch opt --shape opt-tiny --dtype f32 --seed 5 --out "$WORK/pin"
check "its safetensors as before" test "$(sha256sum <"$WORK/pin/model.safetensors" | cut -d' ' -f1)" = 94d8f165e8924bccbd8185b26789e661ccc728c50df9cb8d97d042343a1d584d
check "its config.json as before" test "$(sha256sum <"$WORK/pin/config.json" | cut -d' ' -f1)" = bd88483337b5eb982f9985a2dec68b1d4b1d098075700c1c484f94f2a452c104

OUT="$WORK/out"
expect_error "negative power" "up-spectrum: 'power:-1': ALPHA must lie between 0 and 16" model make --arch opt --shape opt-tiny --up-spectrum power:-1 --out "$OUT"
expect_error "rank 0" "up-spectrum: 'lowrank:0:0.1': R must be at least 1" model make --arch opt --shape opt-tiny --up-spectrum lowrank:0:0.1 --out "$OUT"
expect_error "unknown spectrum" "up-spectrum: 'foo': expected flat, power:ALPHA or lowrank:R:NOISE" model make --arch opt --shape opt-tiny --up-spectrum foo --out "$OUT"
expect_error "noise above 1" "up-spectrum: 'lowrank:4:2': NOISE" model make --arch opt --shape opt-tiny --up-spectrum lowrank:4:2 --out "$OUT"
expect_error "rank beyond d_model" "up-spectrum: shape opt-tiny: rank 65 exceeds" model make --arch opt --shape opt-tiny --up-spectrum lowrank:65:0 --out "$OUT"
expect_error "llama2c cannot record it" "up-spectrum: needs --format hf" model make --arch llama --shape llama-tiny --format llama2c --dtype f32 --up-spectrum power:1 --out "$OUT"
expect_error "relu density on a SwiGLU shape" "relu-density" model make --arch llama --shape llama-tiny --relu-density 0.1 --out "$OUT"
expect_error "density out of range" "0 < D < 1" model make --arch opt --shape opt-tiny --relu-density 1.5 --out "$OUT"
expect_error "arch does not match the shape" "is a opt model, not llama" model make --arch llama --shape opt-tiny --out "$OUT"
expect_error "unknown shape" "neither a model folder nor a shape flashbed knows (.*opt-1.3b" model make --arch opt --shape opt-99b --out "$OUT"
expect_error "unknown format" "unknown format 'gguf'" model make --arch opt --shape opt-tiny --format gguf --out "$OUT"
expect_error "llama2c is f32" "llama2c checkpoints are f32" model make --arch llama --shape llama-tiny --format llama2c --dtype f16 --out "$OUT"
expect_error "llama2c is Llama only" "Llama shapes only" model make --arch opt --shape opt-tiny --format llama2c --dtype f32 --out "$OUT"
sed 's/"arch": "opt"/"arch": "mpt"/; s/"name": "opt-tiny"/"name": "mpt-tiny"/' "$FLASHBED_SOURCE/configs/models/opt-tiny.json" >"$WORK/mpt-tiny.json"
expect_error "unsupported architecture shape" "cannot be written as a Hugging Face mpt folder" model make --arch mpt --shape "$WORK/mpt-tiny.json" --out "$OUT"
expect_error "relu density without FFN biases (Falcon)" "has no FFN biases to set" model make --arch falcon --shape falcon-tiny --relu-density 0.1 --out "$OUT"
expect_error "relu density on a FATReLU Llama (no biases)" "relu-density: shape llama-relu-tiny" model make --arch llama --shape llama-relu-tiny --relu-density 0.1 --out "$OUT"
expect_error "llama2c cannot say FATReLU" "SwiGLU Llama shapes only" model make --arch llama --shape llama-relu-tiny --format llama2c --dtype f32 --out "$OUT"
expect_error "llama2c cannot say Llama 3.1's rope_scaling" "its header has no rope_scaling" model make --arch llama \
    --shape llama3-tiny --format llama2c --dtype f32 --out "$OUT"
expect_error "a shape of another architecture" "shape qwen3-tiny is a qwen3 model, not llama" model make --arch llama \
    --shape qwen3-tiny --out "$OUT"
expect_error "out exists" "already exists" model make --arch opt --shape opt-tiny --out "$WORK/opt"
check "nothing left behind" bash -c "! ls '$WORK' | grep -q 'out'"
finish
