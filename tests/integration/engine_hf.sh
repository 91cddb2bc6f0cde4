#!/usr/bin/env bash
# Hugging Face import. make_hf_models.py (standard library only) writes
# (1) stories260K as an HF Llama folder: two safetensors shards + index,
# q/k rows in HF's rotate-half order, tokenizer.json -- greedy output after
# conversion must still equal llama2.c's token for token; (2) a tiny random
# OPT in f16 whose greedy continuation and logits it computed itself in
# double precision (logits compared by test_hf_fixture). Then bad folders: each a clear error, no model folder left.
source "$(dirname "$0")/lib.sh"

need_stories260k
MAKE="$FLASHBED_SOURCE/tests/integration/make_hf_models.py"
python3 "$MAKE" llama "$SRC/stories260K.bin" "$SRC/tok512.bin" "$WORK/hf-llama"
python3 "$MAKE" opt "$WORK/hf-opt"

check "convert HF llama (sharded)" "$FLASHBED" convert "$WORK/hf-llama" --out "$WORK/llama"
"$FLASHBED" generate --model "$WORK/llama" --prompt "Once upon a time" --temperature 0 -n 252 \
    --json "$WORK/llama.json" >/dev/null 2>&1
expected=$(grep -v '^#' "$FLASHBED_SOURCE/tests/data/stories260K_greedy_ids.txt")
got=$(json_get "$WORK/llama.json" '" ".join(str(i) for i in d["prompt_token_ids"] + [t["id"] for t in d["tokens"]])')
check "HF llama greedy ids (tokenizer.json, RoPE reorder) equal llama2.c's" test "$got" = "$expected"

check "convert HF opt (f16 safetensors, byte-level BPE)" "$FLASHBED" convert "$WORK/hf-opt" --out "$WORK/opt"
check "opt keeps its byte-level tokenizer.json" \
    test "$(json_get "$WORK/opt/model.json" 'd["tokenizer"]["kind"]')" = byte-level-bpe
"$FLASHBED" generate --model "$WORK/opt" --prompt "ab" --temperature 0 -n 10 --json "$WORK/opt.json" >/dev/null 2>&1
got=$(json_get "$WORK/opt.json" '" ".join(str(i) for i in d["prompt_token_ids"] + [t["id"] for t in d["tokens"]])')
check "HF opt greedy ids equal the double-precision reference" test "$got" = "$(cat "$WORK/hf-opt/expected_ids.txt")"
OPT_TEST="$(dirname "$FLASHBED")/tests/test_hf_fixture"
if [ -x "$OPT_TEST" ]; then
    check "HF opt logits within 1e-4 of the reference at every position" \
        env FLASHBED_HF_FIXTURE="$WORK/hf-opt" "$OPT_TEST"
fi
check "opt model.json records learned positions with offset 2" \
    test "$(json_get "$WORK/opt/model.json" 'd["position"] + str(d["position_offset"])')" = learned2

OUT="$WORK/out"
bad() { rm -rf "$WORK/bad"; cp -r "$WORK/hf-$1" "$WORK/bad"; }
bad opt; rm "$WORK/bad/config.json"
expect_error "missing config.json" "config.json: cannot read" convert "$WORK/bad" --out "$OUT" 
bad opt; echo '{"model_type": "opt", "hidden_size": ' >"$WORK/bad/config.json"
expect_error "malformed config.json" "config.json: not a JSON object" convert "$WORK/bad" --out "$OUT" 
bad opt; sed -i 's/"model_type": "opt"/"model_type": "mamba"/' "$WORK/bad/config.json"
expect_error "unknown architecture" "model_type \"mamba\" is not supported" convert "$WORK/bad" --out "$OUT" 
bad opt; sed -i 's/"ffn_dim": 40/"ffn_dim": 41/' "$WORK/bad/config.json"
expect_error "config and tensor shapes disagree" "fc1.bias' does not have the shape \[41\]" convert "$WORK/bad" --out "$OUT" 
bad opt; python3 - "$WORK/bad/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]; d = open(p, "rb").read(); n = struct.unpack("<Q", d[:8])[0]
h = json.loads(d[8:8 + n]); h["model.decoder.layers.1.fc2.bias"]["data_offsets"][1] += 2
b = json.dumps(h).encode()
open(p, "wb").write(struct.pack("<Q", len(b)) + b + d[8 + n:])
PY
expect_error "header lies about a size" "fc2.bias' spans 34 bytes but its shape and dtype need 32" convert "$WORK/bad" --out "$OUT" 
bad opt; python3 - "$WORK/bad/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]; d = open(p, "rb").read(); n = struct.unpack("<Q", d[:8])[0]
h = json.loads(d[8:8 + n]); h["model.decoder.layers.0.fc1.bias"]["data_offsets"] = [10**7, 10**7 + 80]
b = json.dumps(h).encode()
open(p, "wb").write(struct.pack("<Q", len(b)) + b + d[8 + n:])
PY
expect_error "header offset past the file" "fc1.bias' ends at byte .* past the end of the file" convert "$WORK/bad" --out "$OUT" 
bad opt; python3 - "$WORK/bad/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]; d = open(p, "rb").read(); n = struct.unpack("<Q", d[:8])[0]
h = json.loads(d[8:8 + n]); h["model.decoder.layers.1.fc1.weight"]["dtype"] = "F8_E4M3"
b = json.dumps(h).encode()
open(p, "wb").write(struct.pack("<Q", len(b)) + b + d[8 + n:])
PY
expect_error "unknown tensor dtype" "fc1.weight' has unsupported dtype F8_E4M3" convert "$WORK/bad" --out "$OUT" 
bad opt; truncate -s 9000 "$WORK/bad/model.safetensors"
expect_error "truncated safetensors" "past the end of the file" convert "$WORK/bad" --out "$OUT" 
bad llama; python3 - "$WORK/bad/model.safetensors.index.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); del d["weight_map"]["model.layers.4.mlp.up_proj.weight"]
json.dump(d, open(sys.argv[1], "w"))
PY
python3 - "$WORK/bad/model-00002-of-00002.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]; d = open(p, "rb").read(); n = struct.unpack("<Q", d[:8])[0]
h = json.loads(d[8:8 + n]); h["model.layers.4.mlp.upproj.weight"] = h.pop("model.layers.4.mlp.up_proj.weight")
b = json.dumps(h).encode()
open(p, "wb").write(struct.pack("<Q", len(b)) + b + d[8 + n:])
PY
expect_error "missing tensor named" "tensor 'model.layers.4.mlp.up_proj.weight' is missing" convert "$WORK/bad" --out "$OUT"
bad llama; rm "$WORK/bad/model-00002-of-00002.safetensors"
expect_error "missing shard" "model-00002-of-00002.safetensors: cannot open" convert "$WORK/bad" --out "$OUT"
bad llama; sed -i 's/"type": "BPE"/"type": "WordPiece"/' "$WORK/bad/tokenizer.json"
expect_error "not a BPE tokenizer" "tokenizer.json: not a BPE tokenizer" convert "$WORK/bad" --out "$OUT"
bad opt; python3 - "$WORK/bad/tokenizer.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["model"]["vocab"]["zz"] = 999
json.dump(d, open(sys.argv[1], "w"))
PY
expect_error "tokenizer id outside the model's vocabulary" "vocab entry 'zz' has an id outside" convert "$WORK/bad" --out "$OUT"
check "no model folder after failures" test ! -e "$OUT"
check "no temporary folder left" bash -c "! ls '$WORK' | grep -q 'out.tmp'"
finish
