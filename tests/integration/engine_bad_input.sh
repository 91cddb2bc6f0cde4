#!/usr/bin/env bash
# Bad models and options: a clear error naming the file (and tensor), a
# non-zero exit, and no model folder left behind.
source "$(dirname "$0")/lib.sh"

need_stories260k
CK="$SRC/stories260K.bin"
TOK="$SRC/tok512.bin"
OUT="$WORK/out"

head -c 500000 "$CK" >"$WORK/truncated.bin"
expect_error "truncated checkpoint names the tensor" "truncated: tensor 'w1'" convert "$WORK/truncated.bin" --tokenizer "$TOK" --out "$OUT"
head -c 10 "$CK" >"$WORK/tiny.bin"
expect_error "file shorter than the header" "too short" convert "$WORK/tiny.bin" --tokenizer "$TOK" --out "$OUT"
python3 -c "import sys,struct; d=open(sys.argv[1],'rb').read(); open(sys.argv[2],'wb').write(struct.pack('<i',63)+d[4:])" "$CK" "$WORK/badhdr.bin"
expect_error "header that does not divide into heads" "not a llama2.c checkpoint" convert "$WORK/badhdr.bin" --tokenizer "$TOK" --out "$OUT"
cat "$CK" "$TOK" >"$WORK/long.bin"
expect_error "trailing bytes" "bytes after the last tensor" convert "$WORK/long.bin" --tokenizer "$TOK" --out "$OUT"
expect_error "missing tokenizer option" "needs --tokenizer" convert "$CK" --out "$OUT"
head -c 3000 "$TOK" >"$WORK/tok_short.bin"
expect_error "truncated tokenizer" "tok_short.bin: truncated" convert "$CK" --tokenizer "$WORK/tok_short.bin" --out "$OUT"
expect_error "unknown dtype" "unknown dtype 'f8'" convert "$CK" --tokenizer "$TOK" --out "$OUT" --dtype f8
expect_error "missing input" "does not exist" convert "$WORK/nope.bin" --tokenizer "$TOK" --out "$OUT"
check "no model folder after failures" test ! -e "$OUT"
check "no temporary folder left" bash -c "! ls '$WORK' | grep -q 'out.tmp'"

M="$WORK/m"
"$FLASHBED" convert "$CK" --tokenizer "$TOK" --out "$M" 2>/dev/null
expect_error "output exists" "already exists" convert "$CK" --tokenizer "$TOK" --out "$M"

# broken model folders
bad() { rm -rf "$WORK/bad"; cp -r "$M" "$WORK/bad"; }
bad; echo '{"format": "flashbed-model", "name": ' >"$WORK/bad/model.json"
expect_error "malformed model.json" "bad/model.json" generate --model "$WORK/bad" --prompt x
bad; rm "$WORK/bad/model.json"
expect_error "missing model.json" "$WORK/bad is not a flashbed model folder: no model.json; convert one with flashbed convert" generate --model "$WORK/bad" --prompt x
bad; python3 - "$WORK/bad/model.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["dram"]["tensors"] = [t for t in d["dram"]["tensors"] if t["name"] != "layers.2.attn.wk"]
json.dump(d, open(sys.argv[1], "w"))
PY
expect_error "missing tensor named" "tensor 'layers.2.attn.wk' is missing" generate --model "$WORK/bad" --prompt x
bad; python3 - "$WORK/bad/model.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for t in d["dram"]["tensors"]:
    if t["name"] == "final_norm.weight": t["offset"] = d["dram"]["bytes"]
json.dump(d, open(sys.argv[1], "w"))
PY
expect_error "offset past the file" "tensor 'final_norm.weight' has a bad offset" generate --model "$WORK/bad" --prompt x
bad; python3 - "$WORK/bad/model.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["dtype"] = "f8"
json.dump(d, open(sys.argv[1], "w"))
PY
expect_error "unknown dtype in model.json" "unknown \"dtype\"" generate --model "$WORK/bad" --prompt x
bad; python3 - "$WORK/bad/model.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["norm"] = "groupnorm"
json.dump(d, open(sys.argv[1], "w"))
PY
expect_error "unsupported architecture choice" "norm \"groupnorm\" is not supported" generate --model "$WORK/bad" --prompt x
bad; truncate -s 4096 "$WORK/bad/ffn.bin"
expect_error "truncated ffn.bin" "ffn.bin: is 4096 bytes" generate --model "$WORK/bad" --prompt x
expect_error "not a model folder" "$WORK/nope is not a flashbed model folder: No such file or directory; convert one with flashbed convert" generate --model "$WORK/nope" --prompt x
expect_error "prompt and prompt-file" "exactly one of" generate --model "$M" --prompt x --prompt-file /etc/hostname
expect_error "missing prompt file" "cannot read" generate --model "$M" --prompt-file "$WORK/none.txt"
EXPECT_RC=2 expect_error "bad top-p" "generate --top-p: 1.5 is out of range (0 to 1)" generate --model "$M" --prompt x --top-p 1.5
EXPECT_RC=2 expect_error "negative temperature" "generate --temperature: -1 is out of range" generate --model "$M" --prompt x --temperature -1
EXPECT_RC=2 expect_error "unknown backend" "unknown backend 'metal'" generate --model "$M" --prompt x --backend metal
expect_error "missing text" "cannot read" perplexity --model "$M" --text "$WORK/none.txt"
expect_error "a dense run over its budget" "run --mode dense: the model needs" run --model "$M" --mode dense \
    --dram-budget 4k --prompt x -n 1 --out "$WORK/dense-over"
check "no result folder after it" test ! -e "$WORK/dense-over"
finish
