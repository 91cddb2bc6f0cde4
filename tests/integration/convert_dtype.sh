#!/usr/bin/env bash
# convert keeps a Hugging Face checkpoint's dtype: f32, f16 and bf16
# checkpoints become models of the same dtype (model make keeps norms and
# biases in f32 beside its matrices, as released checkpoints often do:
# the matrices' dtype is chosen), --dtype overrides it, matrices of two
# dtypes become f32 (exact for both), and model.json's source says which
# and why. The bytes follow: an f16 model's neuron bundles are half an
# f32 one's.
source "$(dirname "$0")/lib.sh"

src() { json_get "$1/model.json" "d[\"source\"][\"$2\"]"; }

for dt in f32 f16 bf16; do
    check "$dt checkpoint made" "$FLASHBED" model make --arch llama --shape llama-tiny --dtype $dt --seed 3 --out "$WORK/hf-$dt"
    out=$("$FLASHBED" convert "$WORK/hf-$dt" --out "$WORK/m-$dt" 2>&1)
    check "$dt checkpoint converts" test -f "$WORK/m-$dt/model.json"
    check "$dt: model.json's dtype is the checkpoint's" test "$(json_get "$WORK/m-$dt/model.json" 'd["dtype"]')" = $dt
    check "$dt: source.dtype says so" test "$(src "$WORK/m-$dt" dtype)" = $dt
    check "$dt: chosen from the checkpoint" test "$(src "$WORK/m-$dt" dtype_from)" = "checkpoint (its matrices')"
    held="matrices $dt, vectors f32"
    check "$dt: what the checkpoint holds ($(src "$WORK/m-$dt" checkpoint_dtypes))" \
        test "$(src "$WORK/m-$dt" checkpoint_dtypes)" = "$held"
    check "$dt: convert reports it ($out)" grep -q "weights in $dt (the checkpoint's own; the checkpoint holds $held)" <<<"$out"
done
f32=$(json_get "$WORK/m-f32/model.json" 'int(d["ffn"]["bundle_bytes"])')
f16=$(json_get "$WORK/m-f16/model.json" 'int(d["ffn"]["bundle_bytes"])')
check "an f16 checkpoint's neuron bundles are half an f32 one's ($f16 of $f32 bytes)" test $((2 * f16)) -eq "$f32"

check "--dtype overrides" "$FLASHBED" convert "$WORK/hf-f16" --dtype f32 --out "$WORK/m-f16-as-f32"
check "--dtype: model.json's dtype" test "$(json_get "$WORK/m-f16-as-f32/model.json" 'd["dtype"]')" = f32
check "--dtype: chosen by the option" test "$(src "$WORK/m-f16-as-f32" dtype_from)" = "--dtype"
check "--dtype: bundles as large as an f32 checkpoint's" \
    test "$(json_get "$WORK/m-f16-as-f32/model.json" 'int(d["ffn"]["bundle_bytes"])')" -eq "$f32"

# one f16 matrix rewritten as f32: matrices of two dtypes
cp -r "$WORK/hf-f16" "$WORK/hf-mixed"
python3 - "$WORK/hf-mixed/model.safetensors" <<'PY'
import json, struct, sys
path = sys.argv[1]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head, data = json.loads(raw[8:8 + n]), raw[8 + n:]
name = "model.layers.0.self_attn.o_proj.weight"
out, parts, off = {}, [], 0
for k, e in sorted(((k, e) for k, e in head.items() if k != "__metadata__"), key=lambda kv: kv[1]["data_offsets"][0]):
    b = data[e["data_offsets"][0]:e["data_offsets"][1]]
    if k == name:
        vals = struct.unpack("<%de" % (len(b) // 2), b)
        b, e = struct.pack("<%df" % len(vals), *vals), dict(e, dtype="F32")
    out[k] = dict(e, data_offsets=[off, off + len(b)])
    parts.append(b)
    off += len(b)
h = json.dumps(out).encode()
h += b" " * (-len(h) % 8)
open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(parts))
PY
out=$("$FLASHBED" convert "$WORK/hf-mixed" --out "$WORK/m-mixed" 2>&1)
check "mixed matrices convert" test -f "$WORK/m-mixed/model.json"
check "mixed matrices: f32" test "$(json_get "$WORK/m-mixed/model.json" 'd["dtype"]')" = f32
check "mixed matrices: what the checkpoint holds ($(src "$WORK/m-mixed" checkpoint_dtypes))" \
    test "$(src "$WORK/m-mixed" checkpoint_dtypes)" = "matrices f32+f16, vectors f32"
check "mixed matrices: the same weights as the f16 checkpoint's, widened" \
    cmp -s "$WORK/m-mixed/dram.bin" "$WORK/m-f16-as-f32/dram.bin"

# llama2.c checkpoints are f32: kept so without --dtype
if [ -f "${FLASHBED_DATA:-}/models/stories260K/stories260K.bin" ]; then
    S="$FLASHBED_DATA/models/stories260K"
    check "llama2.c: converts" "$FLASHBED" convert "$S/stories260K.bin" --tokenizer "$S/tok512.bin" --out "$WORK/s260"
    check "llama2.c: f32" test "$(json_get "$WORK/s260/model.json" 'd["dtype"]')" = f32
fi
finish
